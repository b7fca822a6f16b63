/*
 * fuzz_common.h — what every libuniflow fuzz target shares.
 *
 * A fuzz target finds two kinds of bugs: those the sanitizers see (a crash, an
 * invalid access, a leak) and those only the contract sees. For the second kind the
 * targets check invariants of the header after every call and abort() when one
 * breaks (FUZZ_ASSERT), which libFuzzer records as a crash with the input that
 * caused it:
 *   - every returned status is one of the header's codes;
 *   - a failing call leaves a non-empty message in uf_last_error();
 *   - every `char *` result is valid JSON (parsed with jansson, which the library
 *     links anyway).
 *
 * Everything is `static inline` so a target that uses part of it compiles without
 * warnings.
 */
#ifndef UNIFLOW_FUZZ_COMMON_H
#define UNIFLOW_FUZZ_COMMON_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniflow.h"

#define FUZZ_ASSERT(cond, ...)                                                      \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "\nINVARIANT BROKEN at %s:%d: %s\n    ", __FILE__,     \
                    __LINE__, #cond);                                               \
            fprintf(stderr, __VA_ARGS__);                                           \
            fprintf(stderr, "\n    last status %d (%s), last error \"%s\"\n",     \
                    uf_last_status(), uf_status_name(uf_last_status()),             \
                    uf_last_error());                                               \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* The input as a NUL-terminated string (libFuzzer's data is not terminated). An
 * input with an embedded NUL is simply cut there: the C API takes C strings. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size) {
    char *s = (char *)malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A status any int-returning function (but uf_version_number) may return. */
static inline int fuzz_status_known(int status) { return status >= UF_EIO && status <= UF_QUEUED; }

/* ...and on a partitioned dispatcher also UF_ENOTOWNER to UF_EGAP (UF_EBUSY, -12,
 * between them, is uf_dispatch_try's alone). */
static inline int fuzz_status_known_partitioned(int status) {
    return fuzz_status_known(status) || (status >= UF_EGAP && status <= UF_ENOTOWNER);
}

/* Checks that a failure left uf_last_status() equal to it and a message. */
static inline void fuzz_check_failure(const char *what, int status) {
    if (status < 0) {
        FUZZ_ASSERT(uf_last_status() == status, "%s returned %s but uf_last_status() is %d",
                    what, uf_status_name(status), uf_last_status());
        const char *message = uf_last_error();
        FUZZ_ASSERT(message && *message, "%s failed (%s) without a message", what,
                    uf_status_name(status));
    }
}

/* The same for a call on a partitioned dispatcher. */
static inline void fuzz_check_status_partitioned(const char *what, int status) {
    FUZZ_ASSERT(fuzz_status_known_partitioned(status), "%s returned unknown status %d", what, status);
    fuzz_check_failure(what, status);
}

/* Checks the status of a call and, for a failure, the message it left. */
static inline void fuzz_check_status(const char *what, int status) {
    FUZZ_ASSERT(fuzz_status_known(status), "%s returned unknown status %d", what, status);
    if (status < 0) {
        FUZZ_ASSERT(uf_last_status() == status, "%s returned %s but uf_last_status() is %d",
                    what, uf_status_name(status), uf_last_status());
        const char *message = uf_last_error();
        FUZZ_ASSERT(message && *message, "%s failed (%s) without a message", what,
                    uf_status_name(status));
    }
}

/* text must be valid JSON (any value); returns the parsed value (caller decrefs). */
static inline json_t *fuzz_parse_json(const char *what, const char *text) {
    FUZZ_ASSERT(text != NULL, "%s gave NULL", what);
    json_error_t error;
    json_t *value = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);
    FUZZ_ASSERT(value != NULL, "%s gave invalid JSON (%s at %d:%d): %.200s", what, error.text,
                error.line, error.column, text);
    return value;
}

/* uf_state_get, checked, as text (caller frees with uf_free). */
static inline char *fuzz_state(uf_dispatcher *d) {
    char *out = NULL;
    int status = uf_state_get(d, &out);
    fuzz_check_status("uf_state_get", status);
    FUZZ_ASSERT(status == UF_OK, "uf_state_get failed: %s", uf_last_error());
    json_t *model = fuzz_parse_json("uf_state_get", out);
    FUZZ_ASSERT(json_is_object(model), "uf_state_get is not an object: %s", out);
    json_decref(model);
    return out;
}

static inline uf_dispatcher *fuzz_new_dispatcher(const char *options) {
    uf_dispatcher *d = NULL;
    int status = uf_dispatcher_new(&d, options);
    FUZZ_ASSERT(status == UF_OK && d, "uf_dispatcher_new(%s) failed", options ? options : "NULL");
    return d;
}

/* ---- Handlers that model bindings may name with {"call": ...} ------------------ */

/* "approve": holds, and passes {"ok":true} on as the next clause's `given`. */
static inline int fuzz_handler_approve(uf_binding_call *call, void *payload) {
    (void)payload;
    json_decref(fuzz_parse_json("uf_binding_call_mutation_json", uf_binding_call_mutation_json(call)));
    json_decref(fuzz_parse_json("uf_binding_call_given_json", uf_binding_call_given_json(call)));
    int status = uf_binding_call_set_output(call, "{\"ok\":true}");
    FUZZ_ASSERT(status == UF_OK || status == UF_EMISUSE, "set_output gave %d", status);
    return 1;
}

/* "deny": stops the binding. */
static inline int fuzz_handler_deny(uf_binding_call *call, void *payload) {
    (void)call;
    (void)payload;
    return 0;
}

/* "fail": fails the binding (reported, UF_ECALLBACK). */
static inline int fuzz_handler_fail(uf_binding_call *call, void *payload) {
    (void)call;
    (void)payload;
    return -1;
}

static inline void fuzz_register_handlers(uf_dispatcher *d) {
    FUZZ_ASSERT(uf_register_handler(d, "approve", fuzz_handler_approve, NULL, NULL) == UF_OK, "handler");
    FUZZ_ASSERT(uf_register_handler(d, "deny", fuzz_handler_deny, NULL, NULL) == UF_OK, "handler");
    FUZZ_ASSERT(uf_register_handler(d, "fail", fuzz_handler_fail, NULL, NULL) == UF_OK, "handler");
}

/* ---- The fixed definitions of the uf_submit, uf_subscribe and restore targets --- */

/* The four example features plus three that reach the rest of the core: every
 * field type with optional and default fields, model bindings with JsonLogic
 * rules, `$` templates, handler calls and a trigger that submits, and a binding
 * cycle that only the cascade limit stops. */
static const char fuzz_definitions[] =
    "{\"features\": ["
    "{\"feature\": \"FileDownloading\","
    " \"states\": {\"Starting\": {}, \"InProgress\": {\"fields\": {\"progress\": \"number\"}},"
    "  \"Completed\": {}, \"Failed\": {\"fields\": {\"reason\": \"string\","
    "   \"code\": {\"type\": \"integer\", \"optional\": true},"
    "   \"retries\": {\"type\": \"integer\", \"default\": 0}}}},"
    " \"initial\": [\"Starting\"],"
    " \"transitions\": {\"Starting\": [\"InProgress\", \"Failed\"],"
    "  \"InProgress\": [\"InProgress\", \"Completed\", \"Failed\"]},"
    " \"bindings\": [{\"scenario\": \"finish at 100\","
    "  \"when\": \"ActualizationIn<FileDownloading.InProgress>\","
    "  \"given\": [{\"if\": {\">=\": [{\"var\": \"mutation.new.payload.progress\"}, 100]}}],"
    "  \"then\": {\"submit\": [{\"kind\": \"transition\", \"feature\": \"FileDownloading\","
    "   \"from\": \"InProgress\", \"into\": \"Completed\"}]}}]},"
    "{\"feature\": \"Login\","
    " \"states\": {\"LoggedOut\": {}, \"LoggingIn\": {\"fields\": {\"username\": \"string\"}},"
    "  \"LoggedIn\": {\"fields\": {\"sessionToken\": \"string\"}},"
    "  \"Failed\": {\"fields\": {\"reason\": \"string\"}}},"
    " \"initial\": [\"LoggedOut\"],"
    " \"transitions\": {\"LoggedOut\": [\"LoggingIn\"], \"LoggingIn\": [\"LoggedIn\", \"Failed\"],"
    "  \"LoggedIn\": [\"LoggedOut\"], \"Failed\": [\"LoggingIn\", \"LoggedOut\"]}},"
    "{\"feature\": \"Main\", \"states\": {\"Main\": {\"fields\": {\"val\": \"integer\"}}},"
    " \"initial\": [\"Main\"], \"transitions\": {\"Main\": []}},"
    "{\"feature\": \"Stats\","
    " \"states\": {\"Counting\": {\"fields\": {\"completed\": {\"type\": \"integer\", \"default\": 0},"
    "   \"note\": {\"type\": \"string\", \"optional\": true}, \"flag\": {\"type\": \"boolean\", \"optional\": true},"
    "   \"obj\": {\"type\": \"object\", \"optional\": true}, \"arr\": {\"type\": \"array\", \"optional\": true},"
    "   \"any\": {\"type\": \"any\", \"optional\": true}, \"ratio\": {\"type\": \"number\", \"optional\": true}}}},"
    " \"bindings\": [{\"when\": \"TransitionInto<FileDownloading.Completed>\","
    "  \"given\": [{\"call\": \"approve\"}, {\"map\": {\"var\": \"given.ok\"}}],"
    "  \"then\": {\"submit\": [{\"kind\": \"actualize\", \"feature\": \"Stats\", \"in\": \"Counting\","
    "   \"payload\": {\"completed\": {\"$\": {\"+\": [{\"var\": \"model.Stats.payload.completed\"}, 1]}}}}]}},"
    "  {\"when\": \"AnyMutationOf<Login>\", \"given\": [{\"call\": \"deny\"}], \"then\": {\"call\": \"fail\"}},"
    "  {\"when\": \"DeinitializationFrom<Login.LoggedIn>\", \"then\": {\"call\": \"fail\"}}]},"
    "{\"feature\": \"Ping\", \"states\": {\"A\": {}, \"B\": {}},"
    " \"bindings\": [{\"scenario\": \"flip\", \"when\": \"AnyUpdateOf<Ping>\","
    "  \"then\": {\"submit\": [{\"kind\": \"transition\", \"feature\": \"Ping\", \"into\":"
    "   {\"$\": {\"if\": [{\"==\": [{\"var\": \"mutation.new.state\"}, \"A\"]}, \"B\", \"A\"]}}}]}}]},"
    "{\"feature\": \"Search\","
    " \"states\": {\"Ready\": {}, \"InProgress\": {\"fields\": {\"query\": \"string\", \"progress\": \"integer\"}},"
    "  \"Failed\": {\"fields\": {\"reason\": \"string\"}}},"
    " \"initial\": [\"Ready\"],"
    " \"transitions\": {\"Ready\": [\"InProgress\"], \"InProgress\": [\"Ready\", \"Failed\"],"
    "  \"Failed\": [\"Ready\", \"InProgress\"]}},"
    "{\"feature\": \"Gate\", \"states\": {\"Open\": {}, \"Closed\": {}},"
    " \"bindings\": [{\"when\": \"InitializationInto<Gate.Open>\","
    "  \"then\": {\"submit\": [{\"kind\": \"trigger\", \"feature\": \"Search\", \"initialized\": false,"
    "   \"submit\": [{\"kind\": \"initialize\", \"feature\": \"Search\", \"into\": \"Ready\"}]}]}}]}"
    "]}";

/* A dispatcher with the handlers and the fixed definitions registered. */
static inline uf_dispatcher *fuzz_fixed_dispatcher(const char *options) {
    uf_dispatcher *d = fuzz_new_dispatcher(options);
    fuzz_register_handlers(d);
    int status = uf_register(d, fuzz_definitions);
    FUZZ_ASSERT(status == UF_OK, "the fixed definitions do not register: %s", uf_last_error());
    return d;
}

#endif /* UNIFLOW_FUZZ_COMMON_H */
