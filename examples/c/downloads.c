/*
 * downloads.c — several files downloading at once, told through libuniflow.
 *
 *   downloads [DEFINITIONS.json]
 *
 * examples/definitions/downloads.json declares Download keyed: each file is an
 * instance, named by the file. What this program shows:
 *
 * - An interceptor starts the real work. When an `initialize Download[<file>]` is
 *   about to apply, it starts a worker thread for that file (a side effect where
 *   Redux would put middleware), and it vetoes files that must not be fetched.
 * - Worker threads report progress with uf_dispatch from their own threads; the
 *   dispatcher applies one action at a time.
 * - Each instance has a stall timer (`after` on Running, re-armed by every
 *   progress report). One worker hangs without a word: a second later the timer,
 *   fired on the library's own thread, fails that download.
 * - A model binding completes a download at 100%, and Downloads counts what
 *   started, completed and failed, through bindings on every instance.
 * - Everything printed is printed on the main thread: a deferred subscriber and a
 *   deferred watch (the overall progress, delivered only when it changes) wait
 *   for uf_loop_run, called from a poll() loop on uf_loop_fd.
 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uniflow.h"

#ifndef UNIFLOW_EXAMPLE_DEFINITIONS
#define UNIFLOW_EXAMPLE_DEFINITIONS "examples/definitions"
#endif

enum { MAX_FILES = 8, STEPS = 10 };

static const char *const files[] = {"report_pdf", "photos_zip", "setup_exe", "backup_iso"};
static const size_t file_count = sizeof files / sizeof files[0];
static const char *const hangs = "backup_iso"; /* its worker never reports */

static uf_dispatcher *dispatcher;
static pthread_t workers[MAX_FILES];
static size_t worker_count;
static int finished; /* set by the watch, on the main thread */

static void check(int status, const char *what) {
    if (status < 0) {
        fprintf(stderr, "downloads: %s: %s: %s\n", what, uf_status_name(status), uf_last_error());
        exit(1);
    }
}

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---- A worker: the real transfer, reporting progress as it goes ---- */

static void *transfer(void *arg) {
    const char *file = arg;
    uf_action start = UF_ACTION_INIT;
    start.kind = UF_ACTION_TRANSITION;
    start.feature = "Download";
    start.key = file;
    start.from = "Queued";
    start.into = "Running";
    check(uf_dispatch(dispatcher, &start), "start");
    if (strcmp(file, hangs) == 0) return NULL; /* the connection hangs: the stall timer will see it */
    for (int step = 1; step <= STEPS; step++) {
        pause_ms(2);
        char payload[32];
        snprintf(payload, sizeof payload, "{\"progress\": %d}", step * 100 / STEPS);
        uf_action report = UF_ACTION_INIT;
        report.kind = UF_ACTION_ACTUALIZE;
        report.feature = "Download";
        report.key = file;
        report.into = "Running";
        report.payload_json = payload;
        check(uf_dispatch(dispatcher, &report), "report progress");
    }
    return NULL;
}

/* ---- The interceptor: starts transfers, refuses executables ---- */

static int start_transfers(uf_intercepted *a, void *payload) {
    (void)payload;
    if (uf_intercepted_kind(a) != UF_ACTION_INITIALIZE) return 0;
    const char *file = uf_intercepted_key(a);
    size_t length = strlen(file);
    if (length > 4 && strcmp(file + length - 4, "_exe") == 0) {
        uf_intercepted_set_reason(a, "executables are not downloaded");
        return 1; /* veto: the instance is never created */
    }
    if (worker_count == MAX_FILES) {
        uf_intercepted_set_reason(a, "too many downloads");
        return 1;
    }
    /* The key stays valid while the interceptor runs: the worker gets our copy. */
    for (size_t i = 0; i < file_count; i++) {
        if (strcmp(files[i], file) == 0) {
            if (pthread_create(&workers[worker_count], NULL, transfer, (void *)files[i]) != 0) return -1;
            worker_count++;
            return 0;
        }
    }
    return -1; /* not a file of ours: fail the action */
}

/* ---- What the main thread prints ---- */

static int print_change(const uf_mutation *m, void *payload) {
    (void)payload;
    const char *key = uf_mutation_key(m);
    if (key == NULL) return UF_KEEP; /* Downloads: the watch shows it */
    const char *state = uf_mutation_new_state(m);
    const char *timer = strstr(uf_mutation_json(m), "\"timer\":");
    if (uf_mutation_kind_of(m) == UF_MUTATION_ACTUALIZATION) return UF_KEEP; /* progress: too many lines */
    printf("%-11s %s%s%s\n", key, state ? state : "(gone)",
           uf_mutation_new_payload_json(m) && strcmp(uf_mutation_new_payload_json(m), "{}") != 0 ? " " : "",
           uf_mutation_new_payload_json(m) && strcmp(uf_mutation_new_payload_json(m), "{}") != 0
               ? uf_mutation_new_payload_json(m) : "");
    if (timer) printf("%-11s (by its stall timer, on the library's timer thread)\n", key);
    return UF_KEEP;
}

static int show_overall(const uf_watch_event *w, void *payload) {
    (void)payload;
    const char *value = uf_watch_value_json(w);
    printf("overall: %s\n", value);
    /* "N of N finished" once every started download completed or failed. */
    int done = 0, all = 0;
    if (sscanf(value, "\"%d of %d finished", &done, &all) == 2 && all > 0 && done == all) finished = 1;
    return UF_KEEP;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : UNIFLOW_EXAMPLE_DEFINITIONS "/downloads.json";
    check(uf_dispatcher_new(&dispatcher, NULL), "uf_dispatcher_new");
    check(uf_register_file(dispatcher, path), path);
    check(uf_submit(dispatcher, "{\"kind\": \"initialize\", \"feature\": \"Downloads\", \"into\": \"Counting\"}"),
          "initialize Downloads");

    check(uf_intercept(dispatcher, "Download", start_transfers, NULL, NULL, NULL), "uf_intercept");
    check(uf_subscribe_deferred(dispatcher, "AnyMutationOf<Download>", print_change, NULL, NULL, NULL),
          "uf_subscribe_deferred");
    check(uf_watch_deferred(dispatcher,
                            "{\"cat\": [{\"+\": [{\"var\": \"model.Downloads.payload.completed\"},"
                            "                    {\"var\": \"model.Downloads.payload.failed\"}]},"
                            "           \" of \", {\"var\": \"model.Downloads.payload.started\"}, \" finished (\","
                            "           {\"var\": \"model.Downloads.payload.failed\"}, \" failed)\"]}",
                            show_overall, NULL, NULL, NULL),
          "uf_watch_deferred");

    for (size_t i = 0; i < file_count; i++) {
        uf_action queue = UF_ACTION_INIT;
        queue.kind = UF_ACTION_INITIALIZE;
        queue.feature = "Download";
        queue.key = files[i];
        queue.into = "Queued";
        int status = uf_dispatch(dispatcher, &queue);
        if (status == UF_REJECTED) printf("%-11s refused: %s\n", files[i], uf_last_error());
        else check(status, "queue a download");
    }

    /* The host's loop: everything above is printed from here. */
    int fd = -1;
    check(uf_loop_fd(dispatcher, &fd), "uf_loop_fd");
    for (int rounds = 0; !finished && rounds < 10000; rounds++) {
        int timeout = -1;
        check(uf_loop_timeout(dispatcher, &timeout), "uf_loop_timeout");
        /* Thread timers wake the fd when what they do needs delivering: no limit needed,
         * but a bounded wait keeps a mistake from hanging the example. */
        if (timeout < 0 || timeout > 100) timeout = 100;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, timeout);
        check(uf_loop_run(dispatcher, NULL), "uf_loop_run");
    }
    for (size_t i = 0; i < worker_count; i++) pthread_join(workers[i], NULL);

    char *model = NULL;
    check(uf_feature_get(dispatcher, "Download", &model), "uf_feature_get");
    printf("model: %s\n", model);
    uf_free(model);
    uf_dispatcher_free(dispatcher);
    if (!finished) {
        fprintf(stderr, "downloads: the downloads did not finish\n");
        return 1;
    }
    return 0;
}
