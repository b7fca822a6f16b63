/* error.c — the thread's last status and message of uf_nats_* calls.
 *
 * The core keeps its own thread-local message (uf_last_error) and offers no way
 * to set it from outside, so this library keeps one beside it, in the same style:
 * set only by failing calls, one per thread. Failures that come from the core
 * copy the core's message, so that uf_nats_last_error() is always the one to
 * read after a uf_nats_* call failed. */
#include <stdio.h>
#include <string.h>

#include "node.h"

static _Thread_local int last_status;
static _Thread_local char last_message[1024];

int uf_nats_last_status(void) { return last_status; }

const char *uf_nats_last_error(void) { return last_message; }

int ufn_fail(int status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, args);
    va_end(args);
    last_status = status;
    return status;
}

int ufn_fail_core(int status) {
    return ufn_fail(status, "%s", uf_last_error());
}

int ufn_fail_core_detail(int status, const char *detail) {
    if (!detail || !*detail) return ufn_fail_core(status);
    return ufn_fail(status, "%s (%s)", uf_last_error(), detail);
}

const char *ufn_nats_text(natsStatus s) {
    const char *text = nats_GetLastError(NULL);
    return text && *text ? text : natsStatus_GetText(s);
}

/* What the sink saw when it refused a record (the server's answer, a stale
 * lease, a blocked partition): the core's message for a refusal is generic, so
 * uf_nats_submit adds this to it. Per thread: the sink runs on the thread that
 * processes the call. */
static _Thread_local char sink_detail[512];

void ufn_set_sink_detail(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(sink_detail, sizeof sink_detail, fmt, args);
    va_end(args);
}

const char *ufn_take_sink_detail(void) {
    static _Thread_local char taken[512];
    memcpy(taken, sink_detail, sizeof taken);
    sink_detail[0] = '\0';
    return taken;
}
