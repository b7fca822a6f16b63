/*
 * misuse.c — what a careless, unlucky or hostile host does to libuniflow.
 *
 * Every case must get a status and, when the status is an error, a message, and
 * the process must survive: NULL for each pointer argument of every function; a
 * subscription id used after uf_unsubscribe; uf_dispatcher_free from inside a
 * subscriber, a via callback, a handler, the reporter and a payload_free; a
 * subscriber that submits a million actions (the cascade limit); definitions of
 * 10 MB; JSON nested 100,000 levels; invalid UTF-8 in names and payloads; integers
 * beyond 2^63. The last three go through every entry that takes JSON: text
 * arguments, callbacks' outputs (uf_context_become, uf_binding_call_set_output)
 * and files (uf_register_file, uf_replay_file).
 *
 * This round's functions (timers, the clock, the loop, snapshots, instances,
 * watches, interceptors, events) are held to their exact status and message:
 * NULL for each argument, bad timer ids (a state timer's shape included), bad keys
 * through every entry that takes one (JSON actions, batches, timers, restores,
 * snapshots, filters, definitions' templates, uf_action, uf_send,
 * uf_instance_get), the calls a callback must not make (advance the clock, run
 * the loop, free the dispatcher, batch, restore) inside a watch, an interceptor,
 * a timer's cascade, a deferred delivery and on the library's timer thread, and
 * selectors 100,000 deep, 4 MB long or of 200,000 operands.
 *
 * Each case prints one line: `ok   case: STATUS "message"`. A case that gets a
 * status outside the ones the contract allows, an error without a message, or
 * takes longer than UNIFLOW_MISUSE_CASE_SECONDS (default 20; input of 10 MB must
 * not hang a host) fails the program: a watchdog ends the process at the limit,
 * so that a hang is a failure naming the case, not a stuck CI job. The 10 MB
 * groups each run in a child process with a watchdog of its own, so that a slow
 * or crashing one is one failure and the groups after it still run. The last
 * line is "misuse: N cases, M failed".
 *
 * The 10 MB cases have a tighter limit, UNIFLOW_MISUSE_LARGE_SECONDS (default a
 * quarter of the case limit: 5 s, 15 s under Tests/sanitize/run's 60) of
 * processor time used by the calling thread (not wall-clock time, which other
 * work on the machine stretches), and going over it fails the case: each does linear (or n log n) work, about a second in a
 * release build on 2 shared cores, while one quadratic step on their 250,000
 * names or fields takes minutes (a payload check once took 147 s, registering
 * 10 MB of features 112 s).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uniflow.h"

static int failures, cases;

/* ---- the watchdog --------------------------------------------------------------- */

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static char watched[160];
static double watched_since, case_limit;
/* Over this, a case fails (the watchdog still ends a hang); 0: no such limit. */
static double soft_limit;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The processor time this thread has used: what the soft limit of the 10 MB
 * cases measures, so that a machine busy with other work (which stretches the
 * wall clock, not this) cannot fail them. The watchdog still uses the wall
 * clock: a hang uses no processor time. */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static double cpu_since;

static pthread_cond_t watch_wake = PTHREAD_COND_INITIALIZER;
static int watch_stop;
static pthread_t watcher;

static void *watchdog(void *arg) {
    (void)arg;
    pthread_mutex_lock(&watch_lock);
    while (!watch_stop) {
        struct timespec wake;
        clock_gettime(CLOCK_REALTIME, &wake);
        wake.tv_sec += 1;
        pthread_cond_timedwait(&watch_wake, &watch_lock, &wake);
        if (!watch_stop && now() - watched_since > case_limit) {
            fprintf(stderr, "misuse: FAILED: '%s' is still running after %.0f s (UNIFLOW_MISUSE_CASE_SECONDS)\n",
                    watched, case_limit);
            fflush(NULL);
            _exit(3);
        }
    }
    pthread_mutex_unlock(&watch_lock);
    return NULL;
}

static void start_watchdog(void) {
    watch_stop = 0;
    if (pthread_create(&watcher, NULL, watchdog, NULL) != 0) {
        fprintf(stderr, "misuse: cannot start the watchdog\n");
        exit(2);
    }
}

/* Stops the watchdog and waits until its thread is gone (before fork(): a
 * thread the child does not have confuses LeakSanitizer there). */
static void stop_watchdog(void) {
    pthread_mutex_lock(&watch_lock);
    watch_stop = 1;
    pthread_cond_signal(&watch_wake);
    pthread_mutex_unlock(&watch_lock);
    pthread_join(watcher, NULL);
}

/* Names the case that runs next (otherwise the watchdog names the case after
 * the last one that finished). Every case is timed from the end of the one
 * before, or from begin(). */
static void begin(const char *name) {
    pthread_mutex_lock(&watch_lock);
    snprintf(watched, sizeof watched, "%s", name);
    watched_since = now();
    pthread_mutex_unlock(&watch_lock);
    cpu_since = cpu_now();
}

/* ---- checking a case ------------------------------------------------------------ */

/* The status must be one of the allowed ones (a list ending with 99); an error
 * must leave a message and uf_last_status equal to it. */
/* Ends a case: returns how long it took (wall clock) and, in *cpu, the
 * processor time it used; starts timing the next one. */
static double finished(const char *name, double *cpu) {
    pthread_mutex_lock(&watch_lock);
    double t = now(), took = t - watched_since;
    snprintf(watched, sizeof watched, "the case after '%.100s'", name);
    watched_since = t;
    pthread_mutex_unlock(&watch_lock);
    double c = cpu_now();
    if (cpu) *cpu = c - cpu_since;
    cpu_since = c;
    return took;
}

static void expect(const char *name, int status, ...) {
    ++cases;
    double cpu = 0;
    double took = finished(name, &cpu);

    va_list allowed;
    va_start(allowed, status);
    int ok = 0;
    char list[200] = "";
    for (int a = va_arg(allowed, int); a != 99; a = va_arg(allowed, int)) {
        if (a == status) ok = 1;
        strncat(list, uf_status_name(a), sizeof list - strlen(list) - 2);
        strncat(list, " ", sizeof list - strlen(list) - 1);
    }
    va_end(allowed);
    const char *message = status < 0 ? uf_last_error() : "";
    const char *why = NULL;
    if (!ok) why = "unexpected status";
    else if (status < 0 && (!message || !*message)) why = "an error without a message";
    else if (status < 0 && uf_last_status() != status) why = "uf_last_status() differs from the returned status";
    int too_slow = why == NULL && soft_limit > 0 && cpu > soft_limit;
    if (too_slow) why = "slower than UNIFLOW_MISUSE_LARGE_SECONDS allows: is a step quadratic in the input's size?";
    printf("%s %-62s %-12s \"%.110s\"%s", why ? "FAIL" : "ok  ", name, uf_status_name(status), message,
           took >= 0.5 ? "" : "\n");
    if (took >= 0.5) printf(" (%.1f s)\n", took);
    if (why) {
        if (too_slow) printf("     ^ %s (%.1f s of processor time, limit %.1f s)\n", why, cpu, soft_limit);
        else printf("     ^ %s; allowed: %s\n", why, list);
        ++failures;
    }
}

#define END 99

static void check(const char *name, int ok, const char *detail) {
    ++cases;
    finished(name, NULL);
    printf("%s %-62s %s\n", ok ? "ok  " : "FAIL", name, detail ? detail : "");
    if (!ok) ++failures;
}

/* ---- fixtures ---------------------------------------------------------------------- */

static const char toggle[] =
    "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}}";
static const char holder[] =
    "{\"feature\":\"Holder\",\"states\":{\"Empty\":{},\"Holding\":{\"fields\":{\"data\":\"any\",\"n\":{\"type\":\"integer\",\"optional\":true},"
    "\"x\":{\"type\":\"number\",\"optional\":true},\"s\":{\"type\":\"string\",\"optional\":true}}}}}";
static const char init_off[] = "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}";
static const char to_on[] = "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}";
static const char to_off[] = "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}";

static uf_dispatcher *fresh(const char *options) {
    uf_dispatcher *d = NULL;
    if (uf_dispatcher_new(&d, options) != UF_OK || uf_register(d, toggle) != UF_OK || uf_register(d, holder) != UF_OK) {
        fprintf(stderr, "misuse: setup failed: %s\n", uf_last_error());
        exit(2);
    }
    return d;
}

static int freed_count;
static void count_free(void *p) {
    (void)p;
    ++freed_count;
}

static int keep(const uf_mutation *m, void *p) {
    (void)m;
    (void)p;
    return UF_KEEP;
}

static int go_on(uf_context *ctx, void *p) {
    (void)ctx;
    (void)p;
    return 0;
}

static int handler_holds(uf_binding_call *call, void *p) {
    (void)call;
    (void)p;
    return 1;
}

static void quiet_reporter(const char *report, void *p) {
    (void)report;
    (void)p;
}

/* Text of `count` copies of `piece` between `head` and `tail` (caller frees). */
static char *repeat(const char *head, const char *piece, size_t count, const char *tail) {
    size_t hl = strlen(head), pl = strlen(piece), tl = strlen(tail);
    char *s = (char *)malloc(hl + pl * count + tl + 1);
    if (!s) abort();
    memcpy(s, head, hl);
    for (size_t i = 0; i < count; ++i) memcpy(s + hl + i * pl, piece, pl);
    memcpy(s + hl + pl * count, tail, tl + 1);
    return s;
}

/* JSON nested `depth` levels: opening text `open` repeated, then `close` repeated. */
static char *nested(const char *head, const char *open, const char *close, size_t depth, const char *tail) {
    size_t hl = strlen(head), ol = strlen(open), cl = strlen(close), tl = strlen(tail);
    char *s = (char *)malloc(hl + (ol + cl) * depth + tl + 1), *p = s;
    if (!s) abort();
    memcpy(p, head, hl);
    p += hl;
    for (size_t i = 0; i < depth; ++i, p += ol) memcpy(p, open, ol);
    for (size_t i = 0; i < depth; ++i, p += cl) memcpy(p, close, cl);
    memcpy(p, tail, tl + 1);
    return s;
}

/* ---- 1. NULL for every pointer argument ------------------------------------------ */

static int null_context_checks(uf_context *ctx, void *p) {
    (void)p;
    check("uf_context_feature(NULL) is NULL", uf_context_feature(NULL) == NULL, NULL);
    check("uf_context_state(NULL) is NULL", uf_context_state(NULL) == NULL, NULL);
    check("uf_context_payload_json(NULL) is NULL", uf_context_payload_json(NULL) == NULL, NULL);
    check("uf_context_dispatcher(NULL) is NULL", uf_context_dispatcher(NULL) == NULL, NULL);
    expect("uf_context_become(NULL, json)", uf_context_become(NULL, "{}"), UF_EINVAL, END);
    expect("uf_context_become(ctx, NULL)", uf_context_become(ctx, NULL), UF_EINVAL, END);
    return 0;
}

static int null_mutation_checks(const uf_mutation *m, void *p) {
    (void)m;
    (void)p;
    check("uf_mutation_*(NULL) are NULL or 0",
          uf_mutation_dispatcher(NULL) == NULL && uf_mutation_subscription_id(NULL) == 0 &&
              uf_mutation_kind_of(NULL) == 0 && uf_mutation_feature(NULL) == NULL &&
              uf_mutation_old_state(NULL) == NULL && uf_mutation_new_state(NULL) == NULL &&
              uf_mutation_old_payload_json(NULL) == NULL && uf_mutation_new_payload_json(NULL) == NULL &&
              uf_mutation_json(NULL) == NULL && uf_mutation_seq(NULL) == 0,
          NULL);
    return UF_STOP;
}

static int null_binding_call_checks(uf_binding_call *call, void *p) {
    (void)p;
    check("uf_binding_call_*(NULL) are NULL",
          uf_binding_call_mutation_json(NULL) == NULL && uf_binding_call_given_json(NULL) == NULL &&
              uf_binding_call_dispatcher(NULL) == NULL,
          NULL);
    expect("uf_binding_call_set_output(NULL, json)", uf_binding_call_set_output(NULL, "1"), UF_EINVAL, END);
    expect("uf_binding_call_set_output(call, NULL)", uf_binding_call_set_output(call, NULL), UF_EINVAL, END);
    return 1;
}

static void null_arguments(void) {
    uf_dispatcher *d = fresh(NULL);
    char *out = NULL;
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_INITIALIZE;
    a.feature = "Toggle";
    a.into = "Off";

    expect("uf_dispatcher_new(NULL, NULL)", uf_dispatcher_new(NULL, NULL), UF_EINVAL, END);
    uf_dispatcher_free(NULL);
    uf_free(NULL);
    check("uf_dispatcher_free(NULL), uf_free(NULL) are no-ops", 1, NULL);
    check("uf_status_name(12345) is UF_UNKNOWN", strcmp(uf_status_name(12345), "UF_UNKNOWN") == 0, NULL);
    check("uf_strerror(12345) is a sentence", uf_strerror(12345) && *uf_strerror(12345), NULL);
    check("uf_last_error() is never NULL", uf_last_error() != NULL, NULL);

    expect("uf_register(NULL, json)", uf_register(NULL, toggle), UF_EINVAL, END);
    expect("uf_register(d, NULL)", uf_register(d, NULL), UF_EINVAL, END);
    expect("uf_register_file(NULL, path)", uf_register_file(NULL, "x.json"), UF_EINVAL, END);
    expect("uf_register_file(d, NULL)", uf_register_file(d, NULL), UF_EINVAL, END);
    expect("uf_submit(NULL, json)", uf_submit(NULL, init_off), UF_EINVAL, END);
    expect("uf_submit(d, NULL)", uf_submit(d, NULL), UF_EINVAL, END);
    expect("uf_state_get(NULL, &out)", uf_state_get(NULL, &out), UF_EINVAL, END);
    expect("uf_state_get(d, NULL)", uf_state_get(d, NULL), UF_EINVAL, END);
    expect("uf_feature_get(NULL, name, &out)", uf_feature_get(NULL, "Toggle", &out), UF_EINVAL, END);
    expect("uf_feature_get(d, NULL, &out)", uf_feature_get(d, NULL, &out), UF_EINVAL, END);
    expect("uf_feature_get(d, name, NULL)", uf_feature_get(d, "Toggle", NULL), UF_EINVAL, END);
    expect("uf_definitions_get(NULL, &out)", uf_definitions_get(NULL, &out), UF_EINVAL, END);
    expect("uf_definitions_get(d, NULL)", uf_definitions_get(d, NULL), UF_EINVAL, END);

    expect("uf_dispatch(NULL, &action)", uf_dispatch(NULL, &a), UF_EINVAL, END);
    expect("uf_dispatch(d, NULL)", uf_dispatch(d, NULL), UF_EINVAL, END);
    expect("uf_dispatch_try(NULL, &action)", uf_dispatch_try(NULL, &a), UF_EINVAL, END);
    expect("uf_dispatch_try(d, NULL)", uf_dispatch_try(d, NULL), UF_EINVAL, END);
    freed_count = 0;
    a.via = go_on;
    a.via_payload_free = count_free;
    expect("uf_dispatch_try(NULL, action with a via)", uf_dispatch_try(NULL, &a), UF_EINVAL, END);
    check("  ... its via_payload_free ran once", freed_count == 1, NULL);
    a.via = NULL;
    a.via_payload_free = NULL;
    a.feature = NULL;
    expect("uf_dispatch with action.feature NULL", uf_dispatch(d, &a), UF_EINVAL, END);
    expect("uf_dispatch_try with action.feature NULL", uf_dispatch_try(d, &a), UF_EINVAL, END);
    a.feature = "Toggle";
    a.into = NULL;
    expect("uf_dispatch initialize with action.into NULL", uf_dispatch(d, &a), UF_EINVAL, UF_ESCHEMA, END);
    a.into = "Off";

    freed_count = 0;
    expect("uf_submit_via(NULL, ...)", uf_submit_via(NULL, init_off, go_on, NULL, count_free), UF_EINVAL, END);
    expect("uf_submit_via(d, NULL, ...)", uf_submit_via(d, NULL, go_on, NULL, count_free), UF_EINVAL, END);
    expect("uf_submit_via(d, json, NULL via, ...)", uf_submit_via(d, init_off, NULL, NULL, count_free), UF_EINVAL, END);
    check("  ... each refused uf_submit_via ran payload_free once", freed_count == 3, NULL);
    expect("uf_submit_via(d, json, via, NULL, NULL)", uf_submit_via(d, init_off, null_context_checks, NULL, NULL),
           UF_OK, END);

    freed_count = 0;
    expect("uf_subscribe(NULL, ...)", uf_subscribe(NULL, NULL, keep, NULL, count_free, NULL), UF_EINVAL, END);
    expect("uf_subscribe(d, when, NULL fn, ...)", uf_subscribe(d, NULL, NULL, NULL, count_free, NULL), UF_EINVAL, END);
    check("  ... each refused uf_subscribe ran payload_free once", freed_count == 2, NULL);
    expect("uf_subscribe(d, NULL, fn, NULL, NULL, NULL)", uf_subscribe(d, NULL, null_mutation_checks, NULL, NULL, NULL),
           UF_OK, END);
    expect("uf_unsubscribe(NULL, id)", uf_unsubscribe(NULL, 1), UF_EINVAL, END);

    freed_count = 0;
    expect("uf_set_reporter(NULL, ...)", uf_set_reporter(NULL, quiet_reporter, NULL, count_free), UF_EINVAL, END);
    check("  ... the refused reporter's payload_free ran once", freed_count == 1, NULL);
    expect("uf_set_reporter(d, NULL, NULL, NULL) (built-in)", uf_set_reporter(d, NULL, NULL, NULL), UF_OK, END);

    freed_count = 0;
    expect("uf_register_handler(NULL, ...)", uf_register_handler(NULL, "h", handler_holds, NULL, count_free), UF_EINVAL, END);
    expect("uf_register_handler(d, NULL name, ...)", uf_register_handler(d, NULL, handler_holds, NULL, count_free), UF_EINVAL, END);
    expect("uf_register_handler(d, name, NULL fn, ...)", uf_register_handler(d, "h", NULL, NULL, count_free), UF_EINVAL, END);
    check("  ... each refused handler's payload_free ran once", freed_count == 3, NULL);
    expect("uf_register_handler(d, \"nulls\", fn, NULL, NULL)", uf_register_handler(d, "nulls", null_binding_call_checks, NULL, NULL),
           UF_OK, END);
    expect("uf_register binding that calls it",
           uf_register(d, "{\"feature\":\"Probe\",\"states\":{\"P\":{}},\"bindings\":[{\"when\":\"Initialization<Probe>\","
                          "\"given\":[{\"call\":\"nulls\"}],\"then\":{\"submit\":[]}}]}"),
           UF_OK, END);
    expect("  ... and runs it", uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Probe\",\"into\":\"P\"}"), UF_OK, END);

    expect("uf_logic_apply(NULL, data, &out)", uf_logic_apply(NULL, "1", &out), UF_EINVAL, END);
    expect("uf_logic_apply(rule, data, NULL)", uf_logic_apply("1", "1", NULL), UF_EINVAL, END);
    expect("uf_logic_apply(rule, NULL, &out)", uf_logic_apply("{\"var\":\"a\"}", NULL, &out), UF_OK, END);
    uf_free(out);
    expect("uf_submit_batch(NULL, json)", uf_submit_batch(NULL, "[]"), UF_EINVAL, END);
    expect("uf_submit_batch(d, NULL)", uf_submit_batch(d, NULL), UF_EINVAL, END);
    expect("uf_state_restore(NULL, json)", uf_state_restore(NULL, "{}"), UF_EINVAL, END);
    expect("uf_state_restore(d, NULL)", uf_state_restore(d, NULL), UF_EINVAL, END);
    expect("uf_replay_file(NULL, path)", uf_replay_file(NULL, "x.jsonl"), UF_EINVAL, END);
    expect("uf_replay_file(d, NULL)", uf_replay_file(d, NULL), UF_EINVAL, END);
    expect("uf_graph_dot(NULL, NULL, &out)", uf_graph_dot(NULL, NULL, &out), UF_EINVAL, END);
    expect("uf_graph_dot(d, NULL, NULL)", uf_graph_dot(d, NULL, NULL), UF_EINVAL, END);
    expect("uf_graph_dot(d, NULL, &out) (all features)", uf_graph_dot(d, NULL, &out), UF_OK, END);
    uf_free(out);
    expect("a submit after all that still works", uf_submit(d, to_on), UF_OK, END);
    uf_dispatcher_free(d);
}

/* ---- 2. Stale subscription ids ------------------------------------------------------ */

static int stop_at_once(const uf_mutation *m, void *p) {
    (void)m;
    (void)p;
    return UF_STOP;
}

static void stale_ids(void) {
    uf_dispatcher *d = fresh(NULL);
    uint64_t id = 0;
    freed_count = 0;
    expect("uf_subscribe", uf_subscribe(d, "AnyMutationOf<Toggle>", keep, NULL, count_free, &id), UF_OK, END);
    expect("uf_unsubscribe(id)", uf_unsubscribe(d, id), UF_OK, END);
    expect("uf_unsubscribe(id) again", uf_unsubscribe(d, id), UF_ENOTFOUND, END);
    expect("uf_unsubscribe(0)", uf_unsubscribe(d, 0), UF_ENOTFOUND, END);
    expect("uf_unsubscribe(UINT64_MAX)", uf_unsubscribe(d, UINT64_MAX), UF_ENOTFOUND, END);
    check("  ... payload_free ran once", freed_count == 1, NULL);
    uint64_t next = 0;
    expect("a new subscription", uf_subscribe(d, NULL, keep, NULL, NULL, &next), UF_OK, END);
    check("  ... never reuses the ended id", next != id && next != 0, NULL);
    uint64_t stopped = 0;
    freed_count = 0;
    expect("uf_subscribe (a subscriber that returns UF_STOP)", uf_subscribe(d, NULL, stop_at_once, NULL, count_free, &stopped),
           UF_OK, END);
    expect("  ... a mutation ends it", uf_submit(d, init_off), UF_OK, END);
    expect("uf_unsubscribe(id) of the stopped subscription", uf_unsubscribe(d, stopped), UF_ENOTFOUND, END);
    check("  ... its payload_free ran once", freed_count == 1, NULL);
    uf_dispatcher *other = fresh(NULL);
    expect("an id of another dispatcher", uf_unsubscribe(other, next + 1000), UF_ENOTFOUND, END);
    uf_dispatcher_free(other);
    uf_dispatcher_free(d);
}

/* ---- 3. uf_dispatcher_free from inside every kind of callback --------------------- */

static int refused_frees, tried_frees;

static void free_from_inside(uf_dispatcher *d) {
    ++tried_frees;
    uf_dispatcher_free(d);
    if (uf_last_status() == UF_EMISUSE && *uf_last_error()) ++refused_frees;
}

static int free_in_subscriber(const uf_mutation *m, void *p) {
    (void)p;
    free_from_inside(uf_mutation_dispatcher(m));
    return UF_KEEP;
}

static int free_in_via(uf_context *ctx, void *p) {
    (void)p;
    free_from_inside(uf_context_dispatcher(ctx));
    return 0;
}

static int free_in_handler(uf_binding_call *call, void *p) {
    (void)p;
    free_from_inside(uf_binding_call_dispatcher(call));
    return 1;
}

static void free_in_reporter(const char *report, void *p) {
    (void)report;
    free_from_inside((uf_dispatcher *)p);
}

static uf_dispatcher *payload_free_target;
static void free_in_payload_free(void *p) {
    (void)p;
    free_from_inside(payload_free_target);
}

static void free_inside_callbacks(void) {
    uf_dispatcher *d = fresh(NULL);
    refused_frees = tried_frees = 0;
    expect("uf_subscribe (a subscriber that frees)", uf_subscribe(d, NULL, free_in_subscriber, NULL, NULL, NULL), UF_OK, END);
    expect("  ... a mutation runs it", uf_submit(d, init_off), UF_OK, END);
    expect("uf_submit_via (a via that frees)", uf_submit_via(d, to_on, free_in_via, NULL, NULL), UF_OK, END);
    expect("uf_register_handler (a handler that frees)", uf_register_handler(d, "frees", free_in_handler, NULL, NULL), UF_OK, END);
    expect("uf_register (a binding that calls it in given and then)",
           uf_register(d, "{\"feature\":\"B\",\"states\":{\"X\":{}},\"bindings\":[{\"when\":\"Initialization<B>\","
                          "\"given\":[{\"call\":\"frees\"}],\"then\":{\"call\":\"frees\"}}]}"),
           UF_OK, END);
    expect("  ... an initialization runs it", uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"B\",\"into\":\"X\"}"), UF_OK, END);
    expect("uf_set_reporter (a reporter that frees)", uf_set_reporter(d, free_in_reporter, d, NULL), UF_OK, END);
    expect("  ... a report runs it", uf_submit(d, to_off), UF_OK, END);
    expect("uf_set_reporter(d, NULL, ...) from outside", uf_set_reporter(d, NULL, NULL, NULL), UF_OK, END);
    uint64_t id = 0;
    payload_free_target = d;
    expect("uf_subscribe (a payload_free that frees)", uf_subscribe(d, NULL, keep, NULL, free_in_payload_free, &id), UF_OK, END);
    expect("  ... uf_unsubscribe runs it", uf_unsubscribe(d, id), UF_OK, END);
    char detail[96];
    snprintf(detail, sizeof detail, "%d of %d refused with UF_EMISUSE and a message", refused_frees, tried_frees);
    check("every uf_dispatcher_free from inside was refused", tried_frees >= 6 && refused_frees == tried_frees, detail);
    expect("the dispatcher still works", uf_submit(d, to_on), UF_OK, END);
    uf_dispatcher_free(d); /* the subscriber that frees is still there: it is not called here */
    check("freeing it from outside afterwards works", 1, NULL);
}

/* ---- 4. A subscriber that submits a million actions ---------------------------------- */

static long million_statuses[3]; /* queued, loop, other */
static unsigned long million_dropped, million_processed;

static int submit_a_million(const uf_mutation *m, void *p) {
    (void)p;
    uf_dispatcher *d = uf_mutation_dispatcher(m);
    static int running;
    if (running) return UF_KEEP; /* only the first notification floods */
    running = 1;
    for (int i = 0; i < 1000000; ++i) {
        int status = uf_submit(d, (i & 1) ? to_off : to_on);
        ++million_statuses[status == UF_QUEUED ? 0 : status == UF_ELOOP ? 1 : 2];
    }
    return UF_STOP;
}

static void count_million_reports(const char *report, void *p) {
    (void)p;
    if (strncmp(report, "{\"event\":\"dropped\"", 18) == 0) ++million_dropped;
    if (strncmp(report, "{\"event\":\"processed\"", 20) == 0) ++million_processed;
}

static void a_million_submits(void) {
    uf_dispatcher *d = fresh(NULL);
    expect("uf_set_reporter (counting)", uf_set_reporter(d, count_million_reports, NULL, NULL), UF_OK, END);
    expect("uf_subscribe (submits 1,000,000 actions)", uf_subscribe(d, "Initialization<Toggle>", submit_a_million, NULL, NULL, NULL),
           UF_OK, END);
    begin("the outer submit returns its own status");
    expect("the outer submit returns its own status", uf_submit(d, init_off), UF_OK, END);
    char detail[200];
    snprintf(detail, sizeof detail, "%ld queued, %ld refused UF_ELOOP, %ld other; %lu processed, %lu dropped",
             million_statuses[0], million_statuses[1], million_statuses[2], million_processed, million_dropped);
    check("the cascade limit (100,000) stopped it", million_statuses[2] == 0 && million_processed <= 100000 &&
                                                      million_processed + million_dropped ==
                                                          (unsigned long)million_statuses[0] + 1,
          detail);
    expect("the dispatcher still works", uf_submit(d, to_on), UF_OK, UF_REJECTED, END);
    uf_dispatcher_free(d);
}

/* ---- 5. Deep JSON -------------------------------------------------------------------- */

static char *deep_payload;
static int become_deep(uf_context *ctx, void *p) {
    int *status = (int *)p;
    *status = uf_context_become(ctx, deep_payload);
    return 0;
}

static int set_output_deep(uf_binding_call *call, void *p) {
    int *status = (int *)p;
    *status = uf_binding_call_set_output(call, deep_payload);
    return 1;
}

static void deep_json(void) {
    const size_t depth = 100000;
    uf_dispatcher *d = fresh(NULL);
    char *arrays = nested("", "[", "]", depth, "");
    char *objects = nested("", "{\"a\":", "}", depth, "");
    deep_payload = nested("{\"data\":", "[", "]", depth, "}");
    char *action = nested("{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":", "[", "]",
                          depth, "}}");
    char *definition = nested("{\"feature\":\"Deep\",\"states\":{\"A\":{\"description\":", "[", "]", depth, "}}}");
    char *model = nested("{\"Holder\":{\"state\":\"Holding\",\"payload\":{\"data\":", "[", "]", depth, "}}}");
    char *trigger = nested("", "{\"kind\":\"trigger\",\"feature\":\"Toggle\",\"initialized\":false,\"submit\":[", "]}",
                           depth / 100, "");
    char *rule = nested("", "{\"!\":[", "]}", depth, "");

    expect("uf_register: 100,000 nested arrays", uf_register(d, arrays), UF_ESCHEMA, UF_EJSON, END);
    expect("uf_register: 100,000 nested objects", uf_register(d, objects), UF_ESCHEMA, UF_EJSON, END);
    expect("uf_register: a definition with a deep description", uf_register(d, definition), UF_ESCHEMA, UF_EJSON, END);
    expect("uf_submit: 100,000 nested arrays", uf_submit(d, arrays), UF_ESCHEMA, UF_EJSON, END);
    expect("uf_submit: a deep payload", uf_submit(d, action), UF_ESCHEMA, UF_EJSON, END);
    expect("uf_submit: triggers nested 1,000 deep by submit", uf_submit(d, trigger), UF_ESCHEMA, UF_EJSON, END);
    int become_status = 99;
    expect("uf_submit_via: a via that becomes a deep payload",
           uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\"}", become_deep,
                         &become_status, NULL),
           UF_ESCHEMA, UF_REJECTED, END);
    check("  ... uf_context_become refused it", become_status == UF_ESCHEMA || become_status == UF_EJSON,
          uf_status_name(become_status));
    int output_status = 99;
    expect("uf_register_handler (set_output of deep JSON)", uf_register_handler(d, "deep", set_output_deep, &output_status, NULL),
           UF_OK, END);
    expect("uf_register (a binding that calls it)",
           uf_register(d, "{\"feature\":\"C\",\"states\":{\"X\":{}},\"bindings\":[{\"when\":\"Initialization<C>\","
                          "\"given\":[{\"call\":\"deep\"}],\"then\":{\"submit\":[]}}]}"),
           UF_OK, END);
    expect("  ... an initialization runs it", uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"C\",\"into\":\"X\"}"), UF_OK, END);
    check("  ... uf_binding_call_set_output refused it", output_status == UF_ESCHEMA || output_status == UF_EJSON,
          uf_status_name(output_status));
    expect("uf_submit_batch: 100,000 nested arrays", uf_submit_batch(d, arrays), UF_ESCHEMA, UF_EJSON, END);
    expect("uf_state_restore: a deep payload", uf_state_restore(d, model), UF_ESCHEMA, UF_EJSON, END);
    char *out = NULL;
    expect("uf_logic_apply: a rule 100,000 deep", uf_logic_apply(rule, NULL, &out), UF_ESCHEMA, UF_EJSON, END);
    expect("uf_logic_apply: data 100,000 deep", uf_logic_apply("{\"var\":\"a\"}", objects, &out), UF_ESCHEMA, UF_EJSON, END);
    uf_dispatcher *nd = NULL;
    char *options = nested("{\"reporting\":", "[", "]", depth, "}");
    expect("uf_dispatcher_new: deep options", uf_dispatcher_new(&nd, options), UF_ESCHEMA, UF_EJSON, UF_EINVAL, END);
    check("  ... and *out is NULL", nd == NULL, NULL);
    expect("the dispatcher still works", uf_submit(d, init_off), UF_OK, END);
    free(arrays), free(objects), free(deep_payload), free(action), free(definition), free(model), free(trigger);
    free(rule), free(options);
    uf_dispatcher_free(d);
}

/* ---- 6. Invalid UTF-8 ---------------------------------------------------------------- */

static void invalid_utf8(void) {
    uf_dispatcher *d = fresh(NULL);
    expect("uf_register: a feature name with \\xff",
           uf_register(d, "{\"feature\":\"Bad\xff\",\"states\":{\"A\":{}}}"), UF_EJSON, END);
    expect("uf_register: a state name with an overlong encoding",
           uf_register(d, "{\"feature\":\"Bad\",\"states\":{\"A\xc0\xaf\":{}}}"), UF_EJSON, END);
    expect("uf_register: a lone surrogate (\\xed\\xa0\\x80) in a description",
           uf_register(d, "{\"feature\":\"Bad\",\"description\":\"\xed\xa0\x80\",\"states\":{\"A\":{}}}"), UF_EJSON, END);
    expect("uf_submit: a feature name with a truncated sequence",
           uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\xe2\x82\",\"into\":\"Off\"}"), UF_EJSON, END);
    expect("uf_submit: a payload string with \\xfe",
           uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":\"\xfe\"}}"),
           UF_EJSON, END);
    expect("uf_submit: valid non-ASCII in a payload is fine",
           uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":\"h\xc3\xa9 \xf0\x9f\x98\x80\"}}"),
           UF_OK, END);
    char *out = NULL;
    expect("uf_feature_get: a name with \\xff", uf_feature_get(d, "Toggle\xff", &out), UF_ENOTFOUND, UF_EINVAL, END);
    expect("uf_subscribe: a filter with \\xff", uf_subscribe(d, "AnyMutationOf<Toggle\xff>", keep, NULL, NULL, NULL),
           UF_ESCHEMA, UF_ENOTFOUND, END);
    int status = uf_register_handler(d, "h\xff", handler_holds, NULL, NULL);
    expect("uf_register_handler: a name with \\xff", status, UF_OK, UF_EINVAL, UF_ESCHEMA, END);
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_INITIALIZE;
    a.feature = "Toggle\x80";
    a.into = "Off";
    expect("uf_dispatch: a feature with \\x80", uf_dispatch(d, &a), UF_ENOTFOUND, UF_EINVAL, END);
    a.feature = "Toggle";
    a.into = "O\xc3";
    expect("uf_dispatch: a state with a truncated sequence", uf_dispatch(d, &a), UF_ENOTFOUND, UF_EINVAL, END);
    a.feature = "Holder";
    a.into = "Holding";
    a.payload_json = "{\"data\":\"\xff\"}";
    expect("uf_dispatch: a payload with \\xff", uf_dispatch(d, &a), UF_EJSON, END);
    expect("uf_state_restore: a state name with \\xff", uf_state_restore(d, "{\"Toggle\":{\"state\":\"On\xff\",\"payload\":{}}}"),
           UF_EJSON, END);
    expect("uf_logic_apply: data with \\xff", uf_logic_apply("{\"var\":\"a\"}", "{\"a\":\"\xff\"}", &out), UF_EJSON, END);
    expect("uf_logic_apply: a var path with \\xff", uf_logic_apply("{\"var\":\"a\xff\"}", "{}", &out), UF_EJSON, END);
    uf_dispatcher *nd = NULL;
    expect("uf_dispatcher_new: options with \\xff", uf_dispatcher_new(&nd, "{\"reporting\":\"n\xffne\"}"), UF_EJSON, END);
    expect("uf_register_file: a path with \\xff", uf_register_file(d, "/nonexistent/\xff.json"), UF_EIO, END);
    uf_dispatcher_free(d);
}

/* ---- 7. Integers beyond 2^63 and numbers beyond the doubles --------------------------- */

static void big_numbers(void) {
    uf_dispatcher *d = fresh(NULL);
    static const char *const numbers[] = {
        "9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "123456789012345678901234567890", "1e400", "-1e400",
    };
    char json[300];
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; ++i) {
        char name[120];
        snprintf(json, sizeof json,
                 "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":%s}}", numbers[i]);
        snprintf(name, sizeof name, "uf_submit: an any field = %s", numbers[i]);
        expect(name, uf_submit(d, json), UF_EJSON, END);
        snprintf(json, sizeof json,
                 "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":0,\"n\":%s}}", numbers[i]);
        snprintf(name, sizeof name, "uf_submit: an integer field = %s", numbers[i]);
        expect(name, uf_submit(d, json), UF_EJSON, END);
        snprintf(json, sizeof json, "{\"max_cascade\":%s}", numbers[i]);
        uf_dispatcher *nd = NULL;
        snprintf(name, sizeof name, "uf_dispatcher_new: max_cascade = %s", numbers[i]);
        expect(name, uf_dispatcher_new(&nd, json), UF_EJSON, END);
        snprintf(json, sizeof json, "{\"+\":[%s,1]}", numbers[i]);
        char *out = NULL;
        snprintf(name, sizeof name, "uf_logic_apply: %s + 1", numbers[i]);
        expect(name, uf_logic_apply(json, NULL, &out), UF_EJSON, END);
        snprintf(json, sizeof json,
                 "{\"feature\":\"N%zu\",\"states\":{\"A\":{\"fields\":{\"n\":{\"type\":\"integer\",\"default\":%s}}}}}", i, numbers[i]);
        snprintf(name, sizeof name, "uf_register: an integer default = %s", numbers[i]);
        expect(name, uf_register(d, json), UF_EJSON, END);
    }
    expect("uf_submit: an integer field = 2^53 + 1 (beyond integers)",
           uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":0,\"n\":9007199254740993}}"),
           UF_ESCHEMA, END);
    expect("uf_submit: an integer field = 2^53 (the largest)",
           uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":0,\"n\":9007199254740992}}"),
           UF_OK, END);
    expect("uf_submit: a number field = 9223372036854775807 (fits 64 bits)",
           uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Holder\",\"in\":\"Holding\",\"payload\":{\"data\":0,\"x\":9223372036854775807}}"),
           UF_OK, END);
    uf_dispatcher *nd = NULL;
    expect("uf_dispatcher_new: max_cascade = 0", uf_dispatcher_new(&nd, "{\"max_cascade\":0}"), UF_EINVAL, END);
    expect("uf_dispatcher_new: max_cascade = 2^63 - 1",
           uf_dispatcher_new(&nd, "{\"max_cascade\":9223372036854775807}"), UF_OK, UF_EINVAL, END);
    uf_dispatcher_free(nd);
    uf_dispatcher_free(d);
}

/* ---- 8. Big integers and bad UTF-8 through the other JSON inputs ---------------------- */

static const char *callback_output; /* what the via and the handler below try to set */
static int callback_status;

static int become_output(uf_context *ctx, void *p) {
    (void)p;
    callback_status = uf_context_become(ctx, callback_output);
    return 0;
}

static int set_output(uf_binding_call *call, void *p) {
    (void)p;
    callback_status = uf_binding_call_set_output(call, callback_output);
    return 1;
}

static void bad_values_everywhere(void) {
    static const struct {
        const char *what, *value;
    } bad[] = {
        {"2^63", "9223372036854775808"},
        {"-2^63 - 1", "-9223372036854775809"},
        {"invalid UTF-8 (\\xff)", "\"\xff\""},
        {"a lone surrogate", "\"\xed\xa0\x80\""},
    };
    uf_dispatcher *d = fresh(NULL);
    expect("uf_register_handler (sets a bad output)", uf_register_handler(d, "bad", set_output, NULL, NULL), UF_OK, END);
    expect("uf_register (a binding that calls it)",
           uf_register(d, "{\"feature\":\"Out\",\"states\":{\"X\":{}},\"bindings\":[{\"when\":\"Initialization<Out>\","
                          "\"given\":[{\"call\":\"bad\"}],\"then\":{\"submit\":[]}}]}"),
           UF_OK, END);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char name[120], json[300];
        snprintf(json, sizeof json, "{\"data\":%s}", bad[i].value);
        uf_action a = UF_ACTION_INIT;
        a.kind = UF_ACTION_INITIALIZE;
        a.feature = "Holder";
        a.into = "Holding";
        a.payload_json = json;
        snprintf(name, sizeof name, "uf_dispatch: payload_json with %s", bad[i].what);
        expect(name, uf_dispatch(d, &a), UF_EJSON, END);

        callback_output = json;
        callback_status = 99;
        snprintf(name, sizeof name, "uf_submit_via: a via that becomes %s", bad[i].what);
        expect(name, uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\"}", become_output,
                                   NULL, NULL),
               UF_ESCHEMA, UF_EJSON, END);
        snprintf(name, sizeof name, "  ... uf_context_become refused %s", bad[i].what);
        check(name, callback_status == UF_EJSON, uf_status_name(callback_status));

        callback_output = bad[i].value;
        callback_status = 99;
        snprintf(name, sizeof name, "uf_binding_call_set_output: %s (run by a binding)", bad[i].what);
        expect(name, uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Out\",\"into\":\"X\"}"), UF_OK, END);
        expect("  ... and Out deinitializes", uf_submit(d, "{\"kind\":\"deinitialize\",\"feature\":\"Out\"}"), UF_OK, END);
        snprintf(name, sizeof name, "  ... uf_binding_call_set_output refused %s", bad[i].what);
        check(name, callback_status == UF_EJSON, uf_status_name(callback_status));

        snprintf(json, sizeof json, "[{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":%s}}]",
                 bad[i].value);
        snprintf(name, sizeof name, "uf_submit_batch: a payload with %s", bad[i].what);
        expect(name, uf_submit_batch(d, json), UF_EJSON, END);

        snprintf(json, sizeof json, "{\"Holder\":{\"state\":\"Holding\",\"payload\":{\"data\":%s}}}", bad[i].value);
        snprintf(name, sizeof name, "uf_state_restore: a payload with %s", bad[i].what);
        expect(name, uf_state_restore(d, json), UF_EJSON, END);
    }
    char *out = NULL;
    expect("the model is untouched", uf_feature_get(d, "Holder", &out), UF_OK, END);
    check("  ... Holder is still absent", out == NULL, out);
    uf_free(out);
    uf_dispatcher_free(d);
}

/* ---- 9. The same through files: uf_register_file, uf_replay_file ------------------- */

static char temp_dir[256];

static const char *temp_path(const char *name) {
    static char path[sizeof temp_dir + 64];
    snprintf(path, sizeof path, "%s/%s", temp_dir, name);
    return path;
}

/* Writes head + body + tail to the file `name` in temp_dir; returns its path. */
static const char *write_file(const char *name, const char *head, const char *body, const char *tail) {
    const char *path = temp_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || fputs(head, f) < 0 || fputs(body, f) < 0 || fputs(tail, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "misuse: cannot write %s\n", path);
        exit(2);
    }
    return path;
}

static char *read_model(uf_dispatcher *d) {
    char *out = NULL;
    if (uf_state_get(d, &out) != UF_OK) return NULL;
    return out;
}

static void files(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(temp_dir, sizeof temp_dir, "%s/uniflow-misuse-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(temp_dir)) {
        fprintf(stderr, "misuse: cannot create %s\n", temp_dir);
        exit(2);
    }
    const size_t depth = 100000;
    uf_dispatcher *d = fresh(NULL);
    char *deep = nested("", "[", "]", depth, "");
    const char *path;
    char *name;

    path = write_file("deep.json", "", deep, "");
    expect("uf_register_file: 100,000 nested arrays", uf_register_file(d, path), UF_ESCHEMA, UF_EJSON, END);
    path = write_file("utf8.json", "{\"feature\":\"Bad\xff\",\"states\":{\"A\":{}}}", "", "");
    expect("uf_register_file: a feature name with \\xff", uf_register_file(d, path), UF_EJSON, END);
    path = write_file("int.json", "{\"feature\":\"N\",\"states\":{\"A\":{\"fields\":{\"n\":{\"type\":\"integer\",\"default\":",
                      "18446744073709551616", "}}}}}");
    expect("uf_register_file: an integer default = 2^64", uf_register_file(d, path), UF_EJSON, END);
    char *big = repeat("", "x", 10u << 20, "");
    path = write_file("big.json", "{\"feature\":\"BigFile\",\"description\":\"", big, "\",\"states\":{\"A\":{}}}");
    free(big);
    begin(name = "uf_register_file: a 10 MB definition file");
    expect(name, uf_register_file(d, path), UF_OK, END);

    /* A journal of the same definitions, then copies of it with one bad line more:
     * each replay fails and changes nothing. */
    char options[400];
    snprintf(options, sizeof options, "{\"journal\":\"%s\"}", temp_path("journal.jsonl"));
    uf_dispatcher *writer = fresh(options);
    expect("a journaling dispatcher writes a mutation", uf_submit(writer, init_off), UF_OK, END);
    uf_dispatcher_free(writer);
    char journal[4096] = "";
    FILE *f = fopen(temp_path("journal.jsonl"), "rb");
    size_t length = f ? fread(journal, 1, sizeof journal - 1, f) : 0;
    if (f) fclose(f);
    journal[length] = 0;
    check("  ... the journal has a header and a line", length > 0 && strstr(journal, "\"seq\":1") != NULL, NULL);
    uf_dispatcher *replayer = fresh(NULL);
    expect("uf_replay_file: the journal itself", uf_replay_file(replayer, temp_path("journal.jsonl")), UF_OK, END);
    uf_dispatcher_free(replayer);

    static const char line_head[] = "{\"seq\":2,\"feature\":\"Holder\",\"kind\":\"initialization\",\"state\":\"Holding\",\"payload\":{\"data\":";
    static const struct {
        const char *what, *value;
    } bad[] = {
        {"a payload 100,000 deep", NULL},
        {"a payload of 2^63", "9223372036854775808"},
        {"a payload with \\xff", "\"\xff\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char *body = bad[i].value ? NULL : nested("", "[", "]", depth, "");
        path = write_file("bad.jsonl", journal, line_head, "");
        f = fopen(path, "ab");
        if (!f) exit(2);
        fputs(body ? body : bad[i].value, f);
        fputs("}}\n", f);
        fclose(f);
        free(body);
        replayer = fresh(NULL);
        char *before = read_model(replayer);
        char label[120];
        snprintf(label, sizeof label, "uf_replay_file: a line with %s", bad[i].what);
        expect(label, uf_replay_file(replayer, path), UF_ESCHEMA, UF_EJSON, END);
        char *after = read_model(replayer);
        check("  ... and the model is unchanged", before && after && strcmp(before, after) == 0, after);
        uf_free(before);
        uf_free(after);
        uf_dispatcher_free(replayer);
    }

    const char *names[] = {"deep.json", "utf8.json", "int.json", "big.json", "journal.jsonl", "bad.jsonl"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) remove(temp_path(names[i]));
    rmdir(temp_dir);
    free(deep);
    uf_dispatcher_free(d);
}

/* ---- 10. Definitions (and payloads) of 10 MB ------------------------------------------ */

/* Each group below runs in a child process of its own (isolated()), with its own
 * watchdog: a group that hangs or crashes is one failure, and the groups after it
 * still run, so one slow input cannot hide another. */

static const size_t mb10 = 10u << 20;

/* One feature whose description is 10 MB. */
static void big_description(void) {
    uf_dispatcher *d = fresh(NULL);
    char *name, *big = repeat("{\"feature\":\"Big\",\"description\":\"", "x", mb10, "\",\"states\":{\"A\":{}}}");
    begin(name = "uf_register: one feature with a 10 MB description");
    expect(name, uf_register(d, big), UF_OK, END);
    free(big);
    uf_dispatcher_free(d);
}

/* A 10 MB payload string, the model that holds it, and its restore. */
static void big_payload(void) {
    uf_dispatcher *d = fresh(NULL);
    char *name, *big = repeat("{\"kind\":\"initialize\",\"feature\":\"Holder\",\"into\":\"Holding\",\"payload\":{\"data\":\"", "y",
                              mb10, "\"}}");
    begin(name = "uf_submit: a 10 MB payload");
    expect(name, uf_submit(d, big), UF_OK, END);
    free(big);
    char *out = NULL;
    begin(name = "uf_state_get: the 10 MB model");
    expect(name, uf_state_get(d, &out), UF_OK, END);
    begin(name = "uf_state_restore: the 10 MB model");
    expect(name, uf_state_restore(d, out), UF_OK, END);
    uf_free(out);
    uf_dispatcher_free(d);
}

/* 10 MB of garbage (the parser gives up at once), and 10 MB of valid JSON of the
 * wrong shape (one array of 5 million zeros). */
static void big_wrong(void) {
    uf_dispatcher *d = fresh(NULL);
    char *name, *big = repeat("{\"features\":[", "@", mb10, "]}");
    begin(name = "uf_register: 10 MB that is not JSON");
    expect(name, uf_register(d, big), UF_EJSON, END);
    free(big);
    big = repeat("[", "0,", mb10 / 2, "0]");
    begin(name = "uf_register: a 10 MB array of numbers");
    expect(name, uf_register(d, big), UF_ESCHEMA, END);
    free(big);
    uf_dispatcher_free(d);
}

/* A feature with 10 MB of fields (about 260,000), and a payload that sets them. */
static void big_fields(void) {
    uf_dispatcher *d = fresh(NULL);
    char *name;
    size_t count = mb10 / 40;
    size_t cap = count * 48 + 200, len = 0;
    char *s = (char *)malloc(cap);
    if (!s) abort();
    len += (size_t)sprintf(s + len, "{\"feature\":\"Wide\",\"states\":{\"W\":{\"fields\":{");
    for (size_t i = 0; i < count; ++i)
        len += (size_t)sprintf(s + len, "%s\"f%zu\":{\"type\":\"integer\",\"optional\":true}", i ? "," : "", i);
    sprintf(s + len, "}}}}");
    begin(name = "uf_register: 10 MB of fields in one state");
    expect(name, uf_register(d, s), UF_OK, END);
    len = (size_t)sprintf(s, "{\"kind\":\"initialize\",\"feature\":\"Wide\",\"into\":\"W\",\"payload\":{");
    for (size_t i = 0; i < count; ++i) len += (size_t)sprintf(s + len, "%s\"f%zu\":%zu", i ? "," : "", count - 1 - i, i);
    sprintf(s + len, "}}");
    begin(name = "uf_submit: a payload setting all of them");
    expect(name, uf_submit(d, s), UF_OK, END);
    free(s);
    uf_dispatcher_free(d);
}

/* 10 MB of states in one feature, each with a transition (about 250,000). */
static void big_states(void) {
    uf_dispatcher *d = fresh(NULL);
    char *name;
    size_t count = mb10 / 42;
    size_t cap = count * 64 + 200, len = 0;
    char *s = (char *)malloc(cap);
    if (!s) abort();
    len += (size_t)sprintf(s + len, "{\"feature\":\"Tall\",\"states\":{");
    for (size_t i = 0; i < count; ++i) len += (size_t)sprintf(s + len, "%s\"S%zu\":{}", i ? "," : "", i);
    len += (size_t)sprintf(s + len, "},\"transitions\":{");
    for (size_t i = 0; i < count; ++i) len += (size_t)sprintf(s + len, "%s\"S%zu\":[\"S%zu\"]", i ? "," : "", i, (i + 1) % count);
    sprintf(s + len, "}}");
    begin(name = "uf_register: 10 MB of states and transitions");
    expect(name, uf_register(d, s), UF_OK, END);
    free(s);
    uf_dispatcher_free(d);
}

/* 10 MB of small features in one call (about 260,000). */
static void big_features(void) {
    uf_dispatcher *d = fresh(NULL);
    char *name;
    size_t count = mb10 / 40;
    size_t cap = count * 48 + 64, len = 0;
    char *s = (char *)malloc(cap);
    if (!s) abort();
    s[len++] = '[';
    for (size_t i = 0; i < count; ++i)
        len += (size_t)sprintf(s + len, "%s{\"feature\":\"F%zu\",\"states\":{\"A\":{}}}", i ? "," : "", i);
    sprintf(s + len, "]");
    begin(name = "uf_register: 10 MB of features in one call");
    expect(name, uf_register(d, s), UF_OK, END);
    free(s);
    uf_dispatcher_free(d);
}

/* Runs `group` in a child process with a watchdog of its own; adds its cases and
 * failures to this process's. A child that hangs (its watchdog ends it, naming
 * the case), crashes or ends without its counts is one failed case. This
 * process's watchdog is stopped across fork(), so that the child starts as the
 * only thread with no lock held, and LeakSanitizer (the child ends with exit(),
 * not _exit(), so that it checks the child too) sees no thread that is not there.
 * Meanwhile this process bounds the whole group itself. */
static void isolated(const char *group, void (*run)(void)) {
    int counts[2];
    if (pipe(counts) != 0) {
        perror("misuse: pipe");
        exit(2);
    }
    fflush(NULL);
    stop_watchdog();
    pid_t pid = fork();
    if (pid < 0) {
        perror("misuse: fork");
        exit(2);
    }
    if (pid == 0) {
        close(counts[0]);
        cases = failures = 0;
        begin(group);
        start_watchdog();
        run();
        stop_watchdog();
        char text[64];
        int n = snprintf(text, sizeof text, "%d %d", cases, failures);
        if (write(counts[1], text, (size_t)n) != n) _exit(2);
        fflush(NULL);
        exit(0);
    }
    close(counts[1]);
    /* The child's watchdog bounds each of its cases; this bound, for the group,
     * only catches a child stuck outside any case. */
    double started = now(), limit = case_limit * 8 + 30;
    int status = 0, killed = 0;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) {
            perror("misuse: waitpid");
            exit(2);
        }
        if (!killed && now() - started > limit) {
            kill(pid, SIGKILL);
            killed = 1;
        }
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    char text[64] = "";
    ssize_t got = read(counts[0], text, sizeof text - 1);
    close(counts[0]);
    int child_cases = 0, child_failures = 0;
    int complete = got > 0 && (text[got] = 0, sscanf(text, "%d %d", &child_cases, &child_failures) == 2);
    cases += child_cases;
    failures += child_failures;
    if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char detail[160];
        if (killed)
            snprintf(detail, sizeof detail, "the child process was still running after %.0f s: killed", limit);
        else if (WIFSIGNALED(status))
            snprintf(detail, sizeof detail, "the child process died of signal %d", WTERMSIG(status));
        else
            snprintf(detail, sizeof detail, "the child process exited with %d%s", WEXITSTATUS(status),
                     WEXITSTATUS(status) == 3 ? " (its watchdog: a case over the time limit, named above)" : "");
        ++cases;
        ++failures;
        printf("FAIL %-62s %s\n", group, detail);
    }
    begin("the case after a 10 MB group");
    start_watchdog();
}

static void ten_megabytes(double limit) {
    soft_limit = limit; /* the children inherit it */
    isolated("10 MB: a description", big_description);
    isolated("10 MB: a payload, its model, its restore", big_payload);
    isolated("10 MB: not JSON, and the wrong shape", big_wrong);
    isolated("10 MB: fields, and a payload setting them", big_fields);
    isolated("10 MB: states and transitions", big_states);
    isolated("10 MB: features in one call", big_features);
    soft_limit = 0;
}

/* A number of seconds >= `low` from the environment, `fallback` when unset; anything
 * else ends the program (a typo must not run with a limit nobody asked for). */
static double env_seconds(const char *name, double fallback, double low) {
    const char *env = getenv(name);
    if (!env || !*env) return fallback;
    char *end;
    double value = strtod(env, &end);
    if (*end || !(value >= low)) {
        fprintf(stderr, "misuse: %s=%s: expected a number of seconds >= %g\n", name, env, low);
        exit(2);
    }
    return value;
}


/* ---- this round: time, the loop, instances, watches, interceptors, events -------- */
/*
 * Every case here checks the exact status and the exact message (uf_last_error(),
 * or what a callback read from it), since these are what a host shows its users.
 */

/* The status must be `want` and, for an error, `got` (the message the call left)
 * exactly `message`, with uf_last_status() agreeing when `got` is the thread's. */
static void verdict(const char *name, int status, const char *got, int last_status, int want, const char *message) {
    ++cases;
    double took = finished(name, NULL);
    const char *why = NULL;
    if (status != want) why = "unexpected status";
    else if (status < 0 && strcmp(got, message) != 0) why = "unexpected message";
    else if (status < 0 && last_status != status) why = "uf_last_status() differs from the returned status";
    printf("%s %-62s %-12s \"%.110s\"", why ? "FAIL" : "ok  ", name, uf_status_name(status), status < 0 ? got : "");
    if (took >= 0.5) printf(" (%.1f s)", took);
    printf("\n");
    if (why) {
        printf("     ^ %s; expected %s \"%s\"\n", why, uf_status_name(want), want < 0 ? message : "");
        ++failures;
    }
}

static void exactly(const char *name, int status, int want, const char *message) {
    verdict(name, status, uf_last_error(), uf_last_status(), want, message);
}

static const char jobs[] =
    "{\"feature\":\"Job\",\"instances\":\"keyed\",\"states\":{"
    "\"Idle\":{\"on\":{\"go\":\"Busy\"},"
    "         \"after\":[{\"ms\":50,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Job\",\"into\":\"Busy\"}]}]},"
    "\"Busy\":{}}}";
static const char blink[] =
    "{\"feature\":\"Blink\",\"states\":{\"On\":{\"after\":[{\"ms\":50,\"submit\":[{\"kind\":\"deinitialize\",\"feature\":\"Blink\"}]}]}}}";

/* A dispatcher with Toggle, Holder, Job (keyed, a state timer in Idle) and Blink (a state timer). */
static uf_dispatcher *fresh_round(const char *options) {
    uf_dispatcher *d = fresh(options);
    if (uf_register(d, jobs) != UF_OK || uf_register(d, blink) != UF_OK) {
        fprintf(stderr, "misuse: setup failed: %s\n", uf_last_error());
        exit(2);
    }
    return d;
}

static int watch_keep(const uf_watch_event *w, void *p) {
    (void)w;
    (void)p;
    return UF_KEEP;
}

static int intercept_pass(uf_intercepted *a, void *p) {
    (void)a;
    (void)p;
    return 0;
}

static int reason_status = 99;
static char reason_message[300];
static int set_null_reason(uf_intercepted *a, void *p) {
    (void)p;
    reason_status = uf_intercepted_set_reason(a, NULL);
    snprintf(reason_message, sizeof reason_message, "%s", uf_last_error());
    return 0;
}

static void round_null_arguments(void) {
    uf_dispatcher *d = fresh_round("{\"clock\": \"manual\", \"timers\": \"host\"}");
    char *out = NULL;
    int fd = 0, ms = 0;
    uint64_t u = 0;
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_INITIALIZE;
    a.feature = "Toggle";
    a.into = "Off";

    exactly("uf_submit_after(NULL, ...)", uf_submit_after(NULL, init_off, 1, NULL, 0), UF_EINVAL,
            "uf_submit_after: dispatcher is NULL");
    exactly("uf_submit_after(d, NULL, ...)", uf_submit_after(d, NULL, 1, NULL, 0), UF_EINVAL,
            "uf_submit_after: action_json is NULL");
    exactly("uf_submit_after with unknown flags", uf_submit_after(d, init_off, 1, "t", 0x80), UF_EINVAL,
            "uf_submit_after: unknown flags 128");
    exactly("uf_dispatch_after(NULL, &a, ...)", uf_dispatch_after(NULL, &a, 1, NULL, 0), UF_EINVAL,
            "uf_dispatch_after: dispatcher is NULL");
    exactly("uf_dispatch_after(d, NULL, ...)", uf_dispatch_after(d, NULL, 1, NULL, 0), UF_EINVAL,
            "uf_dispatch_after: action is NULL");
    exactly("uf_dispatch_after with unknown flags", uf_dispatch_after(d, &a, 1, "t", 2), UF_EINVAL,
            "uf_dispatch_after: unknown flags 2");
    freed_count = 0;
    a.via = go_on;
    a.via_payload_free = count_free;
    exactly("uf_dispatch_after with a via", uf_dispatch_after(d, &a, 1, NULL, 0), UF_EINVAL,
            "uf_dispatch_after: a timer's action cannot have a via callback");
    check("  ... its via_payload_free ran once", freed_count == 1, NULL);
    a.via = NULL;
    a.via_payload_free = NULL;
    exactly("uf_timer_cancel(NULL, id)", uf_timer_cancel(NULL, "t"), UF_EINVAL, "uf_timer_cancel: dispatcher is NULL");
    exactly("uf_timer_cancel(d, NULL)", uf_timer_cancel(d, NULL), UF_EINVAL, "uf_timer_cancel: timer_id is NULL");
    exactly("uf_timers_get(NULL, &out)", uf_timers_get(NULL, &out), UF_EINVAL, "uf_timers_get: dispatcher is NULL");
    exactly("uf_timers_get(d, NULL)", uf_timers_get(d, NULL), UF_EINVAL, "uf_timers_get: out_json is NULL");
    exactly("uf_clock_advance(NULL, 1)", uf_clock_advance(NULL, 1), UF_EINVAL, "uf_clock_advance: dispatcher is NULL");
    exactly("uf_clock_now(NULL, &ms)", uf_clock_now(NULL, &u), UF_EINVAL, "uf_clock_now: dispatcher is NULL");
    exactly("uf_clock_now(d, NULL)", uf_clock_now(d, NULL), UF_EINVAL, "uf_clock_now: out_ms is NULL");
    exactly("uf_loop_fd(NULL, &fd)", uf_loop_fd(NULL, &fd), UF_EINVAL, "uf_loop_fd: dispatcher is NULL");
    exactly("uf_loop_fd(d, NULL)", uf_loop_fd(d, NULL), UF_EINVAL, "uf_loop_fd: out_fd is NULL");
    exactly("uf_loop_timeout(NULL, &ms)", uf_loop_timeout(NULL, &ms), UF_EINVAL, "uf_loop_timeout: dispatcher is NULL");
    exactly("uf_loop_timeout(d, NULL)", uf_loop_timeout(d, NULL), UF_EINVAL, "uf_loop_timeout: out_ms is NULL");
    exactly("uf_loop_run(NULL, &done)", uf_loop_run(NULL, &u), UF_EINVAL, "uf_loop_run: dispatcher is NULL");
    exactly("uf_loop_run(d, NULL) (out_done may be NULL)", uf_loop_run(d, NULL), UF_OK, NULL);
    exactly("uf_snapshot_get(NULL, &out)", uf_snapshot_get(NULL, &out), UF_EINVAL, "uf_snapshot_get: dispatcher is NULL");
    exactly("uf_snapshot_get(d, NULL)", uf_snapshot_get(d, NULL), UF_EINVAL, "uf_snapshot_get: out_json is NULL");
    exactly("uf_snapshot_restore(NULL, json)", uf_snapshot_restore(NULL, "{}"), UF_EINVAL,
            "uf_snapshot_restore: dispatcher is NULL");
    exactly("uf_snapshot_restore(d, NULL)", uf_snapshot_restore(d, NULL), UF_EINVAL,
            "uf_snapshot_restore: snapshot_json is NULL");
    exactly("uf_snapshot_restore(d, not JSON)", uf_snapshot_restore(d, "{"), UF_EJSON, "line 1, column 1: string or '}' expected near end of file");
    exactly("uf_snapshot_restore(d, a timer of no state timer)",
            uf_snapshot_restore(d, "{\"clock\":\"manual\",\"model\":{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}},"
                                   "\"timers\":[{\"id\":\"Toggle.Off.after[0]\",\"kind\":\"state\",\"due_at\":5,"
                                   "\"remaining_ms\":5,\"ms\":5,\"on_restore\":\"fire\"}]}"),
            UF_ESCHEMA, "snapshot.timers[0].id: 'Toggle.Off.after[0]' names no state timer of the model");

    freed_count = 0;
    exactly("uf_subscribe_deferred(NULL, ...)", uf_subscribe_deferred(NULL, NULL, keep, NULL, count_free, NULL), UF_EINVAL,
            "uf_subscribe_deferred: dispatcher is NULL");
    exactly("uf_subscribe_deferred(d, when, NULL fn, ...)", uf_subscribe_deferred(d, NULL, NULL, NULL, count_free, NULL),
            UF_EINVAL, "uf_subscribe_deferred: fn is NULL");
    exactly("uf_subscribe_deferred(d, \"\", ...)", uf_subscribe_deferred(d, "", keep, NULL, count_free, NULL), UF_ESCHEMA,
            "cannot parse filter '': empty filter");
    exactly("uf_subscribe_deferred(d, unknown feature, ...)",
            uf_subscribe_deferred(d, "AnyMutationOf<Nope>", keep, NULL, count_free, NULL), UF_ENOTFOUND,
            "filter 'AnyMutationOf<Nope>': unknown feature 'Nope'");
    check("  ... each refused deferred subscription ran payload_free once", freed_count == 4, NULL);

    static const char *const select = "{\"var\":\"model.Toggle.state\"}";
    freed_count = 0;
    exactly("uf_watch(NULL, ...)", uf_watch(NULL, select, watch_keep, NULL, count_free, NULL), UF_EINVAL,
            "uf_watch: dispatcher is NULL");
    exactly("uf_watch(d, NULL select, ...)", uf_watch(d, NULL, watch_keep, NULL, count_free, NULL), UF_EINVAL,
            "uf_watch: select_json is NULL");
    exactly("uf_watch(d, select, NULL fn, ...)", uf_watch(d, select, NULL, NULL, count_free, NULL), UF_EINVAL,
            "uf_watch: fn is NULL");
    exactly("uf_watch(d, not JSON, ...)", uf_watch(d, "{\"var\":", watch_keep, NULL, count_free, NULL), UF_EJSON,
            "line 1, column 7: unexpected token near end of file");
    exactly("uf_watch(d, an unknown operator, ...)", uf_watch(d, "{\"nope\":[1]}", watch_keep, NULL, count_free, NULL),
            UF_ESCHEMA, "select_json: unknown operator 'nope'");
    exactly("uf_watch_deferred(NULL, ...)", uf_watch_deferred(NULL, select, watch_keep, NULL, count_free, NULL), UF_EINVAL,
            "uf_watch_deferred: dispatcher is NULL");
    exactly("uf_watch_deferred(d, NULL select, ...)", uf_watch_deferred(d, NULL, watch_keep, NULL, count_free, NULL),
            UF_EINVAL, "uf_watch_deferred: select_json is NULL");
    exactly("uf_watch_deferred(d, select, NULL fn, ...)", uf_watch_deferred(d, select, NULL, NULL, count_free, NULL),
            UF_EINVAL, "uf_watch_deferred: fn is NULL");
    exactly("uf_watch_deferred(d, not JSON, ...)", uf_watch_deferred(d, "[", watch_keep, NULL, count_free, NULL), UF_EJSON,
            "line 1, column 1: ']' expected near end of file");
    exactly("uf_watch_deferred(d, '==' with 1 argument, ...)",
            uf_watch_deferred(d, "{\"==\":[1]}", watch_keep, NULL, count_free, NULL), UF_ESCHEMA,
            "select_json: operator '==' takes 2 arguments, got 1");
    check("  ... each refused watch ran payload_free once", freed_count == 10, NULL);

    freed_count = 0;
    exactly("uf_intercept(NULL, ...)", uf_intercept(NULL, NULL, intercept_pass, NULL, count_free, NULL), UF_EINVAL,
            "uf_intercept: dispatcher is NULL");
    exactly("uf_intercept(d, feature, NULL fn, ...)", uf_intercept(d, NULL, NULL, NULL, count_free, NULL), UF_EINVAL,
            "uf_intercept: fn is NULL");
    exactly("uf_intercept(d, unknown feature, ...)", uf_intercept(d, "Nope", intercept_pass, NULL, count_free, NULL),
            UF_ENOTFOUND, "unknown feature 'Nope'");
    check("  ... each refused interceptor ran payload_free once", freed_count == 3, NULL);

    exactly("uf_instance_get(NULL, ...)", uf_instance_get(NULL, "Job", "k", &out), UF_EINVAL,
            "uf_instance_get: dispatcher is NULL");
    exactly("uf_instance_get(d, NULL feature, ...)", uf_instance_get(d, NULL, "k", &out), UF_EINVAL,
            "uf_instance_get: feature is NULL");
    exactly("uf_instance_get(d, feature, NULL key, ...)", uf_instance_get(d, "Job", NULL, &out), UF_EINVAL,
            "uf_instance_get: key is NULL");
    exactly("uf_instance_get(d, feature, key, NULL)", uf_instance_get(d, "Job", "k", NULL), UF_EINVAL,
            "uf_instance_get: out_json is NULL");
    exactly("uf_instance_get of a single feature", uf_instance_get(d, "Toggle", "k", &out), UF_ESCHEMA,
            "Toggle is a single feature: it has no instances");
    exactly("uf_instance_get of an unknown feature", uf_instance_get(d, "Nope", "k", &out), UF_ENOTFOUND, "unknown feature 'Nope'");
    out = (char *)"untouched";
    exactly("uf_instance_get of an instance that does not live", uf_instance_get(d, "Job", "k", &out), UF_OK, NULL);
    check("  ... gives NULL", out == NULL, out);

    exactly("uf_send(NULL, ...)", uf_send(NULL, "Job", "k", "go", NULL), UF_EINVAL, "uf_send: dispatcher is NULL");
    exactly("uf_send(d, NULL feature, ...)", uf_send(d, NULL, "k", "go", NULL), UF_EINVAL, "uf_send: feature is NULL");
    exactly("uf_send(d, feature, key, NULL event, ...)", uf_send(d, "Job", "k", NULL, NULL), UF_EINVAL,
            "uf_send: event is NULL");
    exactly("uf_send without a key to a keyed feature", uf_send(d, "Job", NULL, "go", NULL), UF_EINVAL,
            "Job is keyed: an action on it needs a key");
    exactly("uf_send with a key to a single feature", uf_send(d, "Toggle", "k", "go", NULL), UF_EINVAL,
            "Toggle is a single feature: an action on it takes no key");
    exactly("uf_send with a payload that is not JSON", uf_send(d, "Job", "k", "go", "{"), UF_EJSON,
            "line 1, column 1: string or '}' expected near end of file");
    exactly("uf_send with a payload that is not an object", uf_send(d, "Job", "k", "go", "[]"), UF_ESCHEMA,
            "uf_action.payload_json must be an object, got array");
    exactly("uf_send to an unknown feature", uf_send(d, "Nope", "k", "go", NULL), UF_ENOTFOUND, "unknown feature 'Nope'");
    exactly("uf_send to an instance that does not live", uf_send(d, "Job", "k", "go", NULL), UF_REJECTED,
            "Job[k] is not initialized");
    exactly("  ... (it lives)", uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"k\",\"into\":\"Idle\"}"),
            UF_OK, NULL);
    exactly("uf_send of an event its state does not take", uf_send(d, "Job", "k", "stop", NULL), UF_REJECTED,
            "Job[k] in state Idle has no transition for event 'stop'");

    check("accessors of this round answer NULL or 0 for NULL",
          uf_mutation_key(NULL) == NULL && uf_mutation_dropped(NULL) == 0 && uf_watch_value_json(NULL) == NULL &&
              uf_watch_previous_json(NULL) == NULL && uf_watch_id(NULL) == 0 && uf_watch_dispatcher(NULL) == NULL &&
              uf_intercepted_kind(NULL) == 0 && uf_intercepted_feature(NULL) == NULL &&
              uf_intercepted_key(NULL) == NULL && uf_intercepted_state(NULL) == NULL &&
              uf_intercepted_json(NULL) == NULL && uf_intercepted_id(NULL) == 0 &&
              uf_intercepted_dispatcher(NULL) == NULL && uf_context_key(NULL) == NULL,
          NULL);
    exactly("uf_intercepted_set_reason(NULL, reason)", uf_intercepted_set_reason(NULL, "r"), UF_EINVAL,
            "uf_intercepted_set_reason: a is NULL");
    uint64_t id = 0;
    uf_intercept(d, NULL, set_null_reason, NULL, NULL, &id);
    uf_submit(d, init_off);
    verdict("uf_intercepted_set_reason(a, NULL) in an interceptor", reason_status, reason_message, reason_status,
            UF_EINVAL, "uf_intercepted_set_reason: reason is NULL");
    uf_unsubscribe(d, id);
    uf_dispatcher_free(d);
}

/* Timer ids: 1 to 256 bytes, never shaped like a state timer's. */
static void round_timer_ids(void) {
    uf_dispatcher *d = fresh_round("{\"clock\": \"manual\"}");
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_INITIALIZE;
    a.feature = "Toggle";
    a.into = "Off";
    char id[300];
    memset(id, 't', 257);
    id[257] = '\0';
    exactly("uf_submit_after with a 257-byte id", uf_submit_after(d, init_off, 1, id, 0), UF_EINVAL,
            "uf_submit_after: a timer id is 1 to 256 bytes, got 257");
    exactly("uf_dispatch_after with a 257-byte id", uf_dispatch_after(d, &a, 1, id, 0), UF_EINVAL,
            "uf_dispatch_after: a timer id is 1 to 256 bytes, got 257");
    id[256] = '\0';
    exactly("uf_submit_after with a 256-byte id", uf_submit_after(d, init_off, 1, id, 0), UF_OK, NULL);
    exactly("  ... uf_timer_cancel of it", uf_timer_cancel(d, id), UF_OK, NULL);
    exactly("uf_submit_after with an empty id", uf_submit_after(d, init_off, 1, "", 0), UF_EINVAL,
            "uf_submit_after: a timer id is 1 to 256 bytes, got 0");
    exactly("uf_timer_cancel with an empty id", uf_timer_cancel(d, ""), UF_ENOTFOUND, "no armed timer with id ''");

    /* The state timers of Blink and of Job[k] are armed: ids of their shape. */
    if (uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Blink\",\"into\":\"On\"}") != UF_OK ||
        uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"k\",\"into\":\"Idle\"}") != UF_OK) {
        fprintf(stderr, "misuse: setup failed: %s\n", uf_last_error());
        exit(2);
    }
    static const char *const shaped[] = {"Blink.On.after[0]", "Job[k].Idle.after[0]", "Toggle.Off.after[0]", "x.after[y"};
    for (size_t i = 0; i < sizeof shaped / sizeof shaped[0]; ++i) {
        char name[160], message[200];
        snprintf(name, sizeof name, "uf_submit_after with the id \"%s\"", shaped[i]);
        snprintf(message, sizeof message, "uf_submit_after: '%s' is shaped like a state timer's id (it contains '.after[')",
                 shaped[i]);
        exactly(name, uf_submit_after(d, init_off, 1, shaped[i], 0), UF_EINVAL, message);
        snprintf(name, sizeof name, "uf_dispatch_after with the id \"%s\"", shaped[i]);
        snprintf(message, sizeof message, "uf_dispatch_after: '%s' is shaped like a state timer's id (it contains '.after[')",
                 shaped[i]);
        exactly(name, uf_dispatch_after(d, &a, 1, shaped[i], UF_TIMER_KEEP), UF_EINVAL, message);
    }
    exactly("uf_timer_cancel of an armed state timer", uf_timer_cancel(d, "Blink.On.after[0]"), UF_EMISUSE,
            "uf_timer_cancel: 'Blink.On.after[0]' is a state timer: it is disarmed when its state is left");
    exactly("uf_timer_cancel of an armed instance's state timer", uf_timer_cancel(d, "Job[k].Idle.after[0]"), UF_EMISUSE,
            "uf_timer_cancel: 'Job[k].Idle.after[0]' is a state timer: it is disarmed when its state is left");
    exactly("uf_timer_cancel of a state timer's id not armed", uf_timer_cancel(d, "Toggle.Off.after[0]"), UF_EMISUSE,
            "uf_timer_cancel: 'Toggle.Off.after[0]' is a state timer: it is disarmed when its state is left");
    exactly("uf_timer_cancel of an id never armed", uf_timer_cancel(d, "never"), UF_ENOTFOUND, "no armed timer with id 'never'");
    char *timers = NULL;
    uf_timers_get(d, &timers);
    check("  ... the state timers are still armed",
          timers && strstr(timers, "\"Blink.On.after[0]\"") && strstr(timers, "\"Job[k].Idle.after[0]\""), timers);
    uf_free(timers);
    uf_dispatcher_free(d);
}

/* Bad keys through every entry that takes one. */
static char rejected_report[2048]; /* the last binding_rejected report */
static void keep_rejected(const char *report, void *p) {
    (void)p;
    if (strstr(report, "\"event\":\"binding_rejected\"")) snprintf(rejected_report, sizeof rejected_report, "%s", report);
}

/* Whether a report's "status" and "reason" are these (read with JsonLogic, so
 * that escapes in the JSON do not matter). */
static int report_says(const char *report, const char *status, const char *reason) {
    char rule[1200], *out = NULL;
    size_t n = (size_t)snprintf(rule, sizeof rule, "{\"and\":[{\"==\":[{\"var\":\"status\"},\"%s\"]},{\"==\":[{\"var\":\"reason\"},\"", status);
    for (const char *c = reason; *c && n < sizeof rule - 16; ++c) {
        if (*c == '"' || *c == '\\') rule[n++] = '\\';
        rule[n++] = *c;
    }
    snprintf(rule + n, sizeof rule - n, "\"]}]}");
    int holds = report[0] && uf_logic_apply(rule, report, &out) == UF_OK && strcmp(out, "true") == 0;
    uf_free(out);
    return holds;
}

static void round_bad_keys(void) {
    uf_dispatcher *d = fresh_round("{\"clock\": \"manual\"}");
    uf_set_reporter(d, keep_rejected, NULL, NULL);
    char long_key[300];
    memset(long_key, 'k', 257);
    long_key[257] = '\0';
    /* The key as JSON text, as C text, and why the key rules refuse it. */
    static const struct {
        const char *json, *raw, *reason;
    } bad[] = {
        {"", "", "a key must not be empty"},
        {"a.b", "a.b", "'a.b' contains '.'"},
        {"a b", "a b", "'a b' contains a blank"},
        {"a[", "a[", "'a[' contains '['"},
        {"a]", "a]", "'a]' contains ']'"},
        {"a<", "a<", "'a<' contains '<'"},
        {"a>", "a>", "'a>' contains '>'"},
        {"a,", "a,", "'a,' contains ','"},
        {"a\\u0001", "a\x01", "'a\\u0001' contains a control character"},
        {"a\\t", "a\t", "'a\\u0009' contains a control character"},
        {"a\\u007f", "a\x7f", "'a\\u007f' contains a control character"},
        {NULL, NULL, "a key is at most 256 bytes, got 257"}, /* long_key */
    };
    char json[800], name[200], message[900];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *key = bad[i].json ? bad[i].json : long_key, *raw = bad[i].raw ? bad[i].raw : long_key;
        const char *reason = bad[i].reason, *shown = bad[i].json ? bad[i].json : "257 bytes";
#define KEY_CASE(entry, call, status, ...)                                                                             \
    do {                                                                                                               \
        snprintf(name, sizeof name, "key \"%s\": %s", shown, entry);                                                   \
        snprintf(message, sizeof message, __VA_ARGS__);                                                                \
        exactly(name, call, status, message);                                                                          \
    } while (0)
        snprintf(json, sizeof json, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"%s\",\"into\":\"Idle\"}", key);
        KEY_CASE("uf_submit", uf_submit(d, json), UF_ESCHEMA, "action.key: %s", reason);
        KEY_CASE("uf_submit_after", uf_submit_after(d, json, 1, NULL, 0), UF_ESCHEMA, "action.key: %s", reason);
        char batch[900];
        snprintf(batch, sizeof batch, "[%s]", json);
        KEY_CASE("uf_submit_batch", uf_submit_batch(d, batch), UF_ESCHEMA, "batch[0]: action.key: %s", reason);
        snprintf(json, sizeof json, "{\"Job\":{\"%s\":{\"state\":\"Idle\",\"payload\":{}}}}", key);
        KEY_CASE("uf_state_restore", uf_state_restore(d, json), UF_ESCHEMA, "Job: key: %s", reason);
        snprintf(json, sizeof json,
                 "{\"clock\":\"manual\",\"model\":{\"Job\":{\"%s\":{\"state\":\"Busy\",\"payload\":{}}}},\"timers\":[]}", key);
        KEY_CASE("uf_snapshot_restore", uf_snapshot_restore(d, json), UF_ESCHEMA, "snapshot.model: Job: key: %s", reason);
        /* In a filter a blank ends the key ("Job[a ]" is Job[a]): the blank and the
         * tab are not keys there, and ']' ends it. */
        char filter[400];
        snprintf(filter, sizeof filter, "AnyMutationOf<Job[%s]>", raw);
        if (strcmp(raw, "a b") == 0 || strcmp(raw, "a]") == 0) {
            const char *detail = raw[1] == ' ' ? "expected ']' at column 21, found 'b'" : "expected '>' at column 21, found ']'";
            KEY_CASE("a filter in uf_subscribe", uf_subscribe(d, filter, keep, NULL, NULL, NULL), UF_ESCHEMA,
                     "cannot parse filter '%s': %s", filter, detail);
            KEY_CASE("a filter in uf_subscribe_deferred", uf_subscribe_deferred(d, filter, keep, NULL, NULL, NULL),
                     UF_ESCHEMA, "cannot parse filter '%s': %s", filter, detail);
        } else if (strcmp(raw, "a\t") != 0) {
            KEY_CASE("a filter in uf_subscribe", uf_subscribe(d, filter, keep, NULL, NULL, NULL), UF_ESCHEMA,
                     "cannot parse filter '%s': key: %s", filter, reason);
            KEY_CASE("a filter in uf_subscribe_deferred", uf_subscribe_deferred(d, filter, keep, NULL, NULL, NULL),
                     UF_ESCHEMA, "cannot parse filter '%s': key: %s", filter, reason);
        }
        snprintf(json, sizeof json,
                 "{\"feature\":\"T%zu\",\"states\":{\"S\":{}},\"bindings\":[{\"when\":\"AnyMutationOf<T%zu>\","
                 "\"then\":{\"submit\":[{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"%s\",\"into\":\"Idle\"}]}}]}",
                 i, i, key);
        /* A binding's template is an action only once its rules ran: it is checked
         * when the binding runs, which reports it (docs/bindings.md). */
        KEY_CASE("a binding's template: registers", uf_register(d, json), UF_OK, "%s", "");
        snprintf(json, sizeof json, "{\"kind\":\"initialize\",\"feature\":\"T%zu\",\"into\":\"S\"}", i);
        rejected_report[0] = '\0';
        KEY_CASE("  ... runs (the mutation stays)", uf_submit(d, json), UF_OK, "%s", "");
        snprintf(message, sizeof message, "then.submit[0]: action.key: %s", reason);
        snprintf(name, sizeof name, "  ... and is reported as binding_rejected with the key's reason");
        check(name, report_says(rejected_report, "UF_ESCHEMA", message), rejected_report);
        snprintf(json, sizeof json,
                 "{\"feature\":\"U%zu\",\"states\":{\"S\":{\"after\":[{\"ms\":1,\"submit\":[{\"kind\":\"initialize\","
                 "\"feature\":\"Job\",\"key\":\"%s\",\"into\":\"Idle\"}]}]}}}",
                 i, key);
        KEY_CASE("a state timer's template", uf_register(d, json), UF_ESCHEMA,
                 "features[0].states.S.after[0].submit[0]: action.key: %s", reason);
        uf_action a = UF_ACTION_INIT;
        a.kind = UF_ACTION_INITIALIZE;
        a.feature = "Job";
        a.into = "Idle";
        a.key = raw;
        KEY_CASE("uf_dispatch", uf_dispatch(d, &a), UF_EINVAL, "uf_action.key: %s", reason);
        KEY_CASE("uf_dispatch_after", uf_dispatch_after(d, &a, 1, NULL, 0), UF_EINVAL, "uf_action.key: %s", reason);
        KEY_CASE("uf_send", uf_send(d, "Job", raw, "go", NULL), UF_EINVAL, "uf_action.key: %s", reason);
        char *out = NULL;
        KEY_CASE("uf_instance_get", uf_instance_get(d, "Job", raw, &out), UF_ESCHEMA, "key: %s", reason);
#undef KEY_CASE
    }
    long_key[256] = '\0';
    snprintf(json, sizeof json, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"%s\",\"into\":\"Idle\"}", long_key);
    exactly("a 256-byte key is a key", uf_submit(d, json), UF_OK, NULL);
    exactly("a key in a filter naming a single feature", uf_subscribe(d, "AnyMutationOf<Toggle[k]>", keep, NULL, NULL, NULL),
            UF_ESCHEMA, "filter 'AnyMutationOf<Toggle[k]>': Toggle is a single feature: it has no instances to name with [key]");
    exactly("a TransitionBetween across two keys",
            uf_subscribe(d, "TransitionBetween<Job[a].Idle, Job[b].Busy>", keep, NULL, NULL, NULL), UF_ESCHEMA,
            "filter 'TransitionBetween<Job[a].Idle, Job[b].Busy>': TransitionBetween must name one instance");
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_INITIALIZE;
    a.feature = "Job";
    a.into = "Idle";
    exactly("no key for a keyed feature through uf_action", uf_dispatch(d, &a), UF_EINVAL,
            "Job is keyed: an action on it needs a key");
    exactly("no key for a keyed feature through JSON",
            uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"into\":\"Idle\"}"), UF_ESCHEMA,
            "Job is keyed: an action on it needs a key");
    a.feature = "Toggle";
    a.into = "Off";
    a.key = "k";
    exactly("a key for a single feature through uf_action", uf_dispatch(d, &a), UF_EINVAL,
            "Toggle is a single feature: an action on it takes no key");
    exactly("a key for a single feature through JSON",
            uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"key\":\"k\",\"into\":\"Off\"}"), UF_ESCHEMA,
            "Toggle is a single feature: an action on it takes no key");
    exactly("a key that is not a string",
            uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":7,\"into\":\"Idle\"}"), UF_ESCHEMA,
            "action.key: expected string, got number");
    char *state = NULL;
    uf_state_get(d, &state);
    char expected[1200];
    size_t n = (size_t)snprintf(expected, sizeof expected, "{\"Job\":{\"%s\":{\"state\":\"Idle\",\"payload\":{}}}", long_key);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) /* the features of the bindings above */
        n += (size_t)snprintf(expected + n, sizeof expected - n, ",\"T%zu\":{\"state\":\"S\",\"payload\":{}}", i);
    snprintf(expected + n, sizeof expected - n, "}");
    check("bad keys changed nothing", state && strcmp(state, expected) == 0, state);
    uf_free(state);
    uf_dispatcher_free(d);
}

/* Calls a callback must not make: each of them inside a watch, an interceptor, a
 * subscriber in a timer's cascade and a deferred delivery. */
enum { IN_ADVANCE, IN_LOOP_RUN, IN_FREE, IN_BATCH, IN_RESTORE, IN_SNAPSHOT_RESTORE, IN_OPS };
static const char *const inside_names[] = {"uf_clock_advance", "uf_loop_run", "uf_dispatcher_free", "uf_submit_batch",
                                           "uf_state_restore", "uf_snapshot_restore"};
static const char *const inside_messages[] = {
    "uf_clock_advance is not allowed inside a callback of the same dispatcher",
    "uf_loop_run is not allowed inside a callback of the same dispatcher",
    "uf_dispatcher_free called from inside one of the dispatcher's callbacks; free it after the outer call returns",
    "uf_submit_batch is not allowed inside a callback of the same dispatcher",
    "uf_state_restore is not allowed inside a callback of the same dispatcher",
    "uf_snapshot_restore is not allowed inside a callback of the same dispatcher"};
static int inside_op, inside_calls, inside_status, inside_last_status;
static char inside_message[300];

static void inside_call(uf_dispatcher *d) {
    if (inside_calls++) return;
    switch (inside_op) {
    case IN_ADVANCE: inside_status = uf_clock_advance(d, 1); break;
    case IN_LOOP_RUN: inside_status = uf_loop_run(d, NULL); break;
    case IN_FREE:
        uf_submit(NULL, init_off); /* so that a stale UF_EMISUSE cannot pass for the free's */
        uf_dispatcher_free(d);
        inside_status = uf_last_status();
        break;
    case IN_BATCH: inside_status = uf_submit_batch(d, "[]"); break;
    case IN_RESTORE: inside_status = uf_state_restore(d, "{}"); break;
    default: inside_status = uf_snapshot_restore(d, "{\"clock\":\"manual\",\"model\":{},\"timers\":[]}"); break;
    }
    inside_last_status = uf_last_status();
    snprintf(inside_message, sizeof inside_message, "%s", inside_status < 0 ? uf_last_error() : "");
}

static int watch_inside(const uf_watch_event *w, void *p) {
    (void)p;
    inside_call(uf_watch_dispatcher(w));
    return UF_KEEP;
}

static int intercept_inside(uf_intercepted *a, void *p) {
    (void)p;
    inside_call(uf_intercepted_dispatcher(a));
    return 0;
}

static int subscriber_inside(const uf_mutation *m, void *p) {
    (void)p;
    inside_call(uf_mutation_dispatcher(m));
    return UF_KEEP;
}

static void round_inside_callbacks(void) {
    static const char *const contexts[] = {"a watch", "an interceptor", "a timer's cascade", "a deferred delivery"};
    for (int op = 0; op < IN_OPS; ++op) {
        for (int c = 0; c < 4; ++c) {
            uf_dispatcher *d = fresh_round("{\"clock\": \"manual\", \"timers\": \"host\"}");
            inside_op = op;
            inside_calls = 0;
            inside_status = 99;
            int status = UF_OK;
            switch (c) {
            case 0:
                inside_calls = 1; /* not its first call, inside uf_watch: the one after a change */
                uf_watch(d, "{\"var\":\"model.Toggle.state\"}", watch_inside, NULL, NULL, NULL);
                inside_calls = 0;
                status = uf_submit(d, init_off);
                break;
            case 1:
                uf_intercept(d, "Toggle", intercept_inside, NULL, NULL, NULL);
                status = uf_submit(d, init_off);
                break;
            case 2:
                uf_subscribe(d, "AnyMutationOf<Toggle>", subscriber_inside, NULL, NULL, NULL);
                uf_submit_after(d, init_off, 1, "t", 0);
                status = uf_clock_advance(d, 1);
                break;
            default:
                uf_subscribe_deferred(d, "AnyMutationOf<Toggle>", subscriber_inside, NULL, NULL, NULL);
                uf_submit(d, init_off);
                status = uf_loop_run(d, NULL);
                break;
            }
            char name[160];
            snprintf(name, sizeof name, "%s inside %s", inside_names[op], contexts[c]);
            if (inside_calls != 1) {
                check(name, 0, "the callback was not called once");
            } else {
                verdict(name, inside_status, inside_message, inside_last_status, UF_EMISUSE, inside_messages[op]);
            }
            char *state = NULL;
            uf_state_get(d, &state);
            snprintf(name, sizeof name, "  ... the outer call succeeded and the model is whole");
            check(name, status == UF_OK && state && strcmp(state, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}") == 0,
                  state);
            uf_free(state);
            uf_dispatcher_free(d);
        }
    }
    uf_dispatcher *d = fresh_round(NULL);
    exactly("uf_clock_advance on a monotonic clock", uf_clock_advance(d, 1), UF_EMISUSE,
            "uf_clock_advance needs a dispatcher made with \"clock\": \"manual\"");
    uf_dispatcher_free(d);
}

/* The library's timer thread: a callback there may not free the dispatcher either. */
static atomic_int thread_done;
static int thread_free_status;
static char thread_free_message[300];
static int free_on_timer_thread(const uf_mutation *m, void *p) {
    (void)p;
    uf_dispatcher *d = uf_mutation_dispatcher(m);
    if (atomic_load(&thread_done)) return UF_KEEP;
    inside_status = uf_loop_run(d, NULL);
    inside_last_status = uf_last_status();
    snprintf(inside_message, sizeof inside_message, "%s", uf_last_error());
    uf_submit(NULL, init_off); /* so that a stale UF_EMISUSE cannot pass for the free's */
    uf_dispatcher_free(d);
    thread_free_status = uf_last_status();
    snprintf(thread_free_message, sizeof thread_free_message, "%s", uf_last_error());
    atomic_store(&thread_done, 1);
    return UF_KEEP;
}

static void round_timer_thread(void) {
    uf_dispatcher *d = fresh_round("{\"timers\": \"thread\"}");
    uf_subscribe(d, "AnyMutationOf<Toggle>", free_on_timer_thread, NULL, NULL, NULL);
    atomic_store(&thread_done, 0);
    inside_status = 99;
    uf_submit_after(d, init_off, 1, NULL, 0);
    for (int i = 0; i < 5000 && !atomic_load(&thread_done); ++i) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    check("a timer fired on the library's thread within 5 s", atomic_load(&thread_done), NULL);
    verdict("uf_loop_run inside a callback on the timer thread", inside_status, inside_message, inside_last_status,
            UF_EMISUSE, inside_messages[IN_LOOP_RUN]);
    verdict("uf_dispatcher_free inside a callback on the timer thread", thread_free_status, thread_free_message,
            thread_free_status, UF_EMISUSE, inside_messages[IN_FREE]);
    exactly("  ... the dispatcher still works", uf_submit(d, to_on), UF_OK, NULL);
    uf_dispatcher_free(d);
}

/* {"!":{"!":...true...}}: a valid rule `depth` operators deep (caller frees). */
static char *operators_deep(size_t depth) {
    char *s = malloc(6 * depth + 5), *p = s;
    if (!s) abort();
    for (size_t i = 0; i < depth; ++i, p += 5) memcpy(p, "{\"!\":", 5);
    memcpy(p, "true", 4);
    p += 4;
    memset(p, '}', depth);
    p[depth] = '\0';
    return s;
}

/* Huge and deeply nested selectors fail cleanly, or work. */
static void round_selectors(void) {
    static const char too_deep[] = "input is nested deeper than 256 levels";
    uf_dispatcher *d = fresh_round(NULL);
    uint64_t id = 0;
    size_t depth = 100000;
    char *deep = nested("", "[", "]", depth, "");
    exactly("uf_watch with a selector 100,000 deep", uf_watch(d, deep, watch_keep, NULL, NULL, NULL), UF_ESCHEMA, too_deep);
    exactly("uf_watch_deferred with a selector 100,000 deep", uf_watch_deferred(d, deep, watch_keep, NULL, NULL, NULL),
            UF_ESCHEMA, too_deep);
    free(deep);
    deep = operators_deep(depth);
    exactly("uf_watch with a rule 100,000 operators deep", uf_watch(d, deep, watch_keep, NULL, NULL, NULL), UF_ESCHEMA,
            too_deep);
    free(deep);
    deep = operators_deep(257);
    exactly("uf_watch with a rule 257 levels deep", uf_watch(d, deep, watch_keep, NULL, NULL, NULL), UF_ESCHEMA, too_deep);
    free(deep);
    deep = operators_deep(100);
    exactly("uf_watch with a rule 100 operators deep", uf_watch(d, deep, watch_keep, NULL, NULL, &id), UF_OK, NULL);
    exactly("  ... uf_unsubscribe ends it", uf_unsubscribe(d, id), UF_OK, NULL);
    free(deep);
    size_t big = 4u << 20;
    char *huge = repeat("\"", "x", big, "\"");
    exactly("uf_watch with a 4 MB string selector", uf_watch(d, huge, watch_keep, NULL, NULL, &id), UF_OK, NULL);
    exactly("  ... uf_unsubscribe ends it", uf_unsubscribe(d, id), UF_OK, NULL);
    free(huge);
    huge = repeat("{\"or\":[", "{\"var\":\"model.Toggle.state\"},", 200000, "false]}");
    exactly("uf_watch with a rule of 200,000 operands", uf_watch(d, huge, watch_keep, NULL, NULL, &id), UF_OK, NULL);
    exactly("  ... a change re-evaluates it", uf_submit(d, init_off), UF_OK, NULL);
    exactly("  ... uf_unsubscribe ends it", uf_unsubscribe(d, id), UF_OK, NULL);
    free(huge);
    uf_dispatcher_free(d);
}

static void this_round(void) {
    round_null_arguments();
    round_timer_ids();
    round_bad_keys();
    round_inside_callbacks();
    round_timer_thread();
    round_selectors();
}

int main(void) {
    case_limit = env_seconds("UNIFLOW_MISUSE_CASE_SECONDS", 20, 1);
    double large_limit = env_seconds("UNIFLOW_MISUSE_LARGE_SECONDS", case_limit / 4, 0.1);
    begin("the first case");
    start_watchdog();
    setvbuf(stdout, NULL, _IOLBF, 0);

    null_arguments();
    stale_ids();
    free_inside_callbacks();
    invalid_utf8();
    big_numbers();
    bad_values_everywhere();
    files();
    deep_json();
    a_million_submits();
    this_round();
    ten_megabytes(large_limit); /* each group in a child process: a hang there is one failure */

    stop_watchdog();
    printf("misuse: %d cases, %d failed\n", cases, failures);
    return failures ? 1 : 0;
}
