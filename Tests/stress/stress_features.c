/*
 * stress_features.c — this round's features under threads, for at least a given
 * time and until each kind of event it checks has happened (f.), against one
 * dispatcher with "timers": "thread": keyed instances, state timers,
 * API timers (uf_submit_after and uf_dispatch_after, named and anonymous, re-armed
 * with and without UF_TIMER_KEEP, cancelled, due in 0 to 5 ms so that they fire
 * during the run), events, watches (direct and deferred), interceptors (one that
 * vetoes by a fixed rule, some that only look, some that submit), deferred
 * subscriptions, and uf_unsubscribe of all of them.
 *
 * Worker threads pick at random: initialize, send to, actualize, transition or
 * deinitialize an instance of the keyed feature Job (64 keys, so that they
 * collide; an instance that waits in Idle for 2 ms expires through its state
 * timer); arm the single feature Latch (its state timer trips it 3 ms later) or
 * disarm it; arm, re-arm and cancel API timers acting on Gauge and on Job
 * instances; add and end watches, deferred subscriptions and interceptors; read
 * (instances, the model, timers, the clock, a snapshot). A loop thread polls
 * uf_loop_fd and runs uf_loop_run, which delivers the deferred subscriptions and
 * watches.
 *
 * The vetoing interceptor lives all along and vetoes every action on a Job key
 * ending in 7 and every Gauge actualization to a value ending in 7, wherever the
 * action comes from (workers, timers, other interceptors' submits). Once the run
 * is over and no timer is armed, it checks:
 *   a. every payload_free ran exactly once, never while its callback ran, and no
 *      callback ran after its payload_free;
 *   b. the final model (uf_state_get, whole, and uf_instance_get per key) is the
 *      one the mutations seen by a direct AnyMutation subscriber imply, instances
 *      in creation order; seq counts from 1 without a gap;
 *   c. no mutation breaks the veto rule, a vetoed initialization fails with the
 *      reason the interceptor gave, and each veto is reported once;
 *   d. a watch is never called with the value it was called with last, its
 *      "previous" is that value, and the last value of every watch still alive is
 *      its selector evaluated on the final model (uf_logic_apply over
 *      {"model": <uf_state_get>}), deferred watches once uf_loop_run has run;
 *      deferred deliveries come in seq order, only inside uf_loop_run, and fit
 *      their filter;
 *   e. no callback runs after uf_dispatcher_free (a flag set when it returns,
 *      checked by every callback, and a pause for a late timer);
 *   f. the run did something: timers fired, state timers fired, vetoes happened,
 *      watches were called on a change, Job instances were made, interceptors
 *      submitted, deferred deliveries were made. The run goes on past the time
 *      asked for until each of these has happened at least once: some need a rare
 *      conjunction (a submitting interceptor alive while a key ending in 3 or 5 is
 *      initialized) that a slow run (valgrind runs one thread at a time; a loaded
 *      machine) may not reach in its seconds. At a cap (10 times the time asked
 *      for, plus 120 s) it stops and fails, naming what never happened.
 *
 * State the callbacks touch (the shadow model, a watch's last value) is plain
 * memory on purpose: the header promises one callback at a time per dispatcher,
 * so a race ThreadSanitizer finds there is a bug in the library.
 *
 * Environment: UNIFLOW_STRESS_SECONDS (the least length of the run, default 3;
 * it goes on past it until f. is met, up to the cap), UNIFLOW_STRESS_THREADS (6;
 * 1 to 64), UNIFLOW_STRESS_SEED (default: the time; printed). A bad value is an
 * error (exit 2).
 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uniflow.h"

#define STRESS_NAME "stress_features"
#include "stress_common.h"

enum { MAX_THREADS = 64, KEYS = 64, GAUGE = KEYS, LATCH = KEYS + 1, PLACES = KEYS + 2, SLOTS = 8 };
enum { MAX_TRACKED = 1 << 20, VALUE_MAX = 256 };

static uf_dispatcher *d;
static atomic_int problems;
static atomic_int dispatcher_freed;
static atomic_int stopping; /* set once the run is over: the threads return */
static _Thread_local int in_loop_run; /* this thread is inside uf_loop_run */

static void problem(const char *what, const char *detail) {
    if (atomic_fetch_add(&problems, 1) < 30)
        fprintf(stderr, "stress_features: PROBLEM: %s %s\n", what, detail ? detail : "");
}

static const char definitions[] =
    "{\"features\": ["
    "{\"feature\":\"Job\",\"instances\":\"keyed\","
    " \"states\":{\"Idle\":{\"on\":{\"go\":\"Busy\"},"
    "                     \"after\":[{\"ms\":2,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Job\",\"into\":\"Expired\"}]}]},"
    "           \"Busy\":{\"fields\":{\"n\":{\"type\":\"integer\",\"default\":0}},\"on\":{\"finish\":\"Done\",\"rest\":\"Idle\"}},"
    "           \"Expired\":{},\"Done\":{}},"
    " \"initial\":[\"Idle\"],"
    " \"transitions\":{\"Idle\":[\"Busy\",\"Expired\"],\"Busy\":[\"Busy\",\"Done\",\"Idle\"],\"Expired\":[],\"Done\":[]}},"
    "{\"feature\":\"Gauge\",\"states\":{\"On\":{\"fields\":{\"v\":{\"type\":\"integer\",\"default\":0}}}}},"
    "{\"feature\":\"Latch\","
    " \"states\":{\"Open\":{},"
    "           \"Armed\":{\"after\":[{\"ms\":3,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Latch\",\"from\":\"Armed\",\"into\":\"Tripped\"}]}]},"
    "           \"Tripped\":{}},"
    " \"initial\":[\"Open\"],"
    " \"transitions\":{\"Open\":[\"Armed\"],\"Armed\":[\"Tripped\",\"Open\"],\"Tripped\":[\"Armed\",\"Open\"]}}"
    "]}";

/* ---- the veto rule: fixed, so that every mutation can be checked against it ---- */

static const char veto_reason[] = "vetoed: key ends in 7";

static int ends_in_7(const char *s) { return s && *s && s[strlen(s) - 1] == '7'; }

/* The "v" of a Gauge payload or action JSON; -1 when there is none. */
static long gauge_value(const char *json) {
    const char *v = json ? strstr(json, "\"v\":") : NULL;
    if (!v) return -1;
    v += 4;
    while (*v == ' ') ++v;
    return strtol(v, NULL, 10);
}

/* ---- payloads that must see exactly one payload_free, and no call after it ---- */

enum kind { K_WATCH, K_DEFERRED_WATCH, K_DEFERRED_SUB, K_LOOK, K_SUBMITTING, K_VETO, K_REPORTER, K_RECORDER };

typedef struct tracked {
    atomic_int freed;  /* payload_free calls */
    atomic_int inside; /* callbacks of it running now */
    atomic_int live;   /* registered and not ended (by uf_unsubscribe or UF_STOP) */
    atomic_int called; /* called at least once (read outside callbacks) */
    enum kind kind;
    int variant;    /* a watch's selector, a deferred subscription's filter */
    int stop_after; /* return UF_STOP on this call (0: never) */
    /* Touched only inside callbacks (one at a time) and at the end: */
    long calls;
    uint64_t last_seq;
    char last[VALUE_MAX]; /* a watch's value delivered last */
} tracked;

static tracked *all_tracked[MAX_TRACKED];
static atomic_int tracked_count;

static tracked *new_tracked(enum kind kind, int variant) {
    int i = atomic_fetch_add(&tracked_count, 1);
    if (i >= MAX_TRACKED) {
        atomic_fetch_sub(&tracked_count, 1);
        return NULL; /* a very long run: add no more callbacks */
    }
    tracked *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->kind = kind;
    t->variant = variant;
    atomic_store(&t->live, 1);
    all_tracked[i] = t;
    return t;
}

static void release_tracked(void *p) {
    tracked *t = p;
    if (atomic_fetch_add(&t->freed, 1) != 0) problem("payload_free ran twice", NULL);
    if (atomic_load(&t->inside)) problem("payload_free ran while its callback ran", NULL);
    if (atomic_load(&dispatcher_freed)) problem("payload_free ran after uf_dispatcher_free", NULL);
    atomic_store(&t->live, 0);
}

static void enter(tracked *t, const char *what) {
    if (atomic_load(&t->freed)) problem(what, "ran after its payload_free");
    if (atomic_load(&dispatcher_freed)) problem(what, "ran after uf_dispatcher_free");
    if (atomic_fetch_add(&t->inside, 1) != 0) problem(what, "ran twice at once");
    atomic_store(&t->called, 1);
    ++t->calls;
}

static void leave(tracked *t) { atomic_fetch_sub(&t->inside, 1); }

/* ---- counters ---- */

static atomic_ulong vetoes, watch_calls, deferred_deliveries, deferred_dropped, interceptor_submits, looks,
    timer_fired_reports, timer_rejections, veto_reports, api_timers_armed, api_timers_cancelled, callbacks_added,
    callbacks_removed, reads, vetoed_initializations;
/* What the shadow counts too, for the main thread to read during the run. These
 * and watch_changes are updated relaxed: they order nothing, so they cannot hide
 * from ThreadSanitizer a race between two callbacks. */
static atomic_ulong timer_mutations, state_timer_mutations, job_creations;
/* Watch calls after the first (which uf_watch makes at once, or the first delivery):
 * a watch saw its value change. */
static atomic_ulong watch_changes;

/* f. Each kind of event a run must have seen, and what to say when it did not. */
static const struct coverage coverage[] = {
    {&timer_mutations, "no timer fired (no mutation by a timer)"},
    {&state_timer_mutations, "no state timer fired (no mutation by a state timer)"},
    {&timer_fired_reports, "no timer fired (no timer_fired report)"},
    {&vetoes, "no veto"},
    {&watch_changes, "no watch call (after a watch's first)"},
    {&job_creations, "no instance made (of the keyed Job)"},
    {&interceptor_submits, "no interceptor submitted"},
    {&deferred_deliveries, "no deferred delivery"},
};
enum { COVERAGE = sizeof coverage / sizeof coverage[0] };

/* The first kind of event that has not happened yet, or NULL. */
static const char *missing_event(void) { return first_missing(coverage, COVERAGE); }

/* ---- the shadow model: what the direct AnyMutation subscriber saw ---- */

static struct {
    char state[PLACES][16];
    char payload[PLACES][96];
    int present[PLACES];
    unsigned long created[PLACES]; /* creation order of a live instance */
    unsigned long creations, mutations, by_timers, by_state_timers;
    uint64_t seq;
} shadow;

static int place_of(const char *feature, const char *key) {
    if (strcmp(feature, "Gauge") == 0) return key ? -1 : GAUGE;
    if (strcmp(feature, "Latch") == 0) return key ? -1 : LATCH;
    if (strcmp(feature, "Job") != 0 || !key || key[0] != 'k') return -1;
    char *end;
    long i = strtol(key + 1, &end, 10);
    return *end || i < 0 || i >= KEYS ? -1 : (int)i;
}

static int record(const uf_mutation *m, void *payload) {
    tracked *t = payload;
    enter(t, "the recording subscriber");
    const char *feature = uf_mutation_feature(m), *key = uf_mutation_key(m), *json = uf_mutation_json(m);
    int i = place_of(feature, key);
    uint64_t seq = uf_mutation_seq(m);
    if (seq != shadow.seq + 1) {
        char detail[64];
        snprintf(detail, sizeof detail, "%llu after %llu", (unsigned long long)seq, (unsigned long long)shadow.seq);
        problem("seq has a gap or goes back:", detail);
    }
    shadow.seq = seq;
    if (i < 0) {
        problem("a mutation of an unknown place:", json);
        leave(t);
        return UF_KEEP;
    }
    /* c. Nothing the vetoing interceptor refuses may become a mutation. */
    const char *state = uf_mutation_new_state(m), *p = uf_mutation_new_payload_json(m);
    if (i < KEYS && ends_in_7(key)) problem("a vetoed action was applied (its key ends in 7):", json);
    if (i == GAUGE && gauge_value(p) % 10 == 7) problem("a vetoed action was applied (v ends in 7):", json);
    if (uf_mutation_kind_of(m) == UF_MUTATION_INITIALIZATION) {
        if (i < KEYS && shadow.present[i]) problem("an instance was initialized twice:", json);
        shadow.created[i] = ++shadow.creations;
        if (i < KEYS) atomic_fetch_add_explicit(&job_creations, 1, memory_order_relaxed);
    }
    if (strstr(json, "\"timer\":")) {
        ++shadow.by_timers;
        atomic_fetch_add_explicit(&timer_mutations, 1, memory_order_relaxed);
        if (strstr(json, ".after[")) {
            ++shadow.by_state_timers;
            atomic_fetch_add_explicit(&state_timer_mutations, 1, memory_order_relaxed);
        }
    }
    shadow.present[i] = state != NULL;
    snprintf(shadow.state[i], sizeof shadow.state[i], "%s", state ? state : "");
    snprintf(shadow.payload[i], sizeof shadow.payload[i], "%s", p ? p : "{}");
    if (p && strlen(p) >= sizeof shadow.payload[i]) problem("a payload longer than the shadow holds:", p);
    ++shadow.mutations;
    leave(t);
    return UF_KEEP;
}

/* ---- the reporter ---- */

static void report(const char *json, void *payload) {
    tracked *t = payload;
    enter(t, "the reporter");
    if (strstr(json, "\"event\":\"timer_fired\"")) {
        atomic_fetch_add(&timer_fired_reports, 1);
    } else if (strstr(json, "\"event\":\"rejected\"")) {
        if (strstr(json, "\"timer\":")) atomic_fetch_add(&timer_rejections, 1);
        if (strstr(json, "\"reason\":\"vetoed: key ends in 7\"") || strstr(json, "\"reason\":\"intercepted by "))
            atomic_fetch_add(&veto_reports, 1);
    } else if (strstr(json, "\"event\":\"binding_rejected\"")) {
        problem("a watch's rule failed:", json);
    }
    leave(t);
}

/* ---- interceptors ---- */

static int veto(uf_intercepted *a, void *payload) {
    tracked *t = payload;
    enter(t, "the vetoing interceptor");
    const char *feature = uf_intercepted_feature(a), *key = uf_intercepted_key(a);
    int vetoed = 0;
    if (!feature || !uf_intercepted_json(a) || uf_intercepted_dispatcher(a) != d) {
        problem("an interceptor's accessors answered NULL or another dispatcher", NULL);
    } else if (strcmp(feature, "Job") == 0) {
        if (!key) problem("an action on Job without its key:", uf_intercepted_json(a));
        if (ends_in_7(key)) {
            if (uf_intercepted_set_reason(a, veto_reason) != UF_OK) problem("uf_intercepted_set_reason failed:", uf_last_error());
            vetoed = 1;
        }
    } else if (strcmp(feature, "Gauge") == 0 && uf_intercepted_kind(a) == UF_ACTION_ACTUALIZE) {
        if (key) problem("an action on Gauge with a key:", uf_intercepted_json(a));
        vetoed = gauge_value(uf_intercepted_json(a)) % 10 == 7; /* reason: "intercepted by <id>" */
    }
    if (vetoed) atomic_fetch_add(&vetoes, 1);
    leave(t);
    return vetoed;
}

/* Only looks (feature NULL or "Job"), and checks what it sees. */
static int look(uf_intercepted *a, void *payload) {
    tracked *t = payload;
    enter(t, "an interceptor");
    const char *feature = uf_intercepted_feature(a);
    if (!feature || !uf_intercepted_json(a)) problem("an interceptor's accessors answered NULL", NULL);
    else if (t->variant && strcmp(feature, "Job") != 0) problem("a Job interceptor saw an action on", feature);
    else if (strcmp(feature, "Job") == 0 && ends_in_7(uf_intercepted_key(a)))
        problem("an interceptor after the vetoing one saw a vetoed action:", uf_intercepted_json(a));
    atomic_fetch_add(&looks, 1);
    leave(t);
    return 0;
}

/* On Job: the initialization of a key ending in 3 submits a Gauge actualization
 * (queued), one ending in 5 arms a timer for one. */
static int submitting(uf_intercepted *a, void *payload) {
    tracked *t = payload;
    enter(t, "a submitting interceptor");
    const char *key = uf_intercepted_key(a);
    if (uf_intercepted_kind(a) == UF_ACTION_INITIALIZE && key) {
        char json[160];
        snprintf(json, sizeof json, "{\"kind\":\"actualize\",\"feature\":\"Gauge\",\"in\":\"On\",\"payload\":{\"v\":%d}}",
                 atoi(key + 1));
        char last = key[strlen(key) - 1];
        if (last == '3') {
            int status = uf_submit(d, json);
            if (status != UF_QUEUED) problem("a submit inside an interceptor did not queue:", uf_last_error());
            atomic_fetch_add(&interceptor_submits, 1);
        } else if (last == '5') {
            int status = uf_submit_after(d, json, (uint64_t)(t->calls % 3), "from-interceptor", 0);
            if (status != UF_OK) problem("uf_submit_after inside an interceptor failed:", uf_last_error());
            atomic_fetch_add(&interceptor_submits, 1);
        }
    }
    leave(t);
    return 0;
}

/* ---- watches ---- */

static const char *const selectors[] = {
    "{\"var\":\"model.Gauge.payload.v\"}",
    "{\"var\":\"model.Job.k3.state\"}",
    "{\"if\":[{\"var\":\"model.Job.k5\"},\"some\",\"none\"]}",
    "{\"var\":\"model.Latch\"}",
    /* a computed path: evaluated after any change */
    "{\"var\":{\"cat\":[\"model.Job.k\",{\"var\":\"model.Gauge.payload.v\"},\".state\"]}}",
    "{\"missing\":[\"model.Job.k1\",\"model.Job.k2\",\"model.Job.k7\"]}",
};
enum { SELECTORS = sizeof selectors / sizeof selectors[0] };

static int on_watch(const uf_watch_event *w, void *payload) {
    tracked *t = payload;
    enter(t, "a watch");
    const char *value = uf_watch_value_json(w), *previous = uf_watch_previous_json(w);
    if (t->kind == K_DEFERRED_WATCH && !in_loop_run) problem("a deferred watch was called outside uf_loop_run", NULL);
    if (!value) {
        problem("a watch's value is NULL", NULL);
    } else if (t->calls == 1) {
        if (previous) problem("a watch's first call has a previous value:", previous);
    } else {
        if (!previous || strcmp(previous, t->last) != 0) problem("a watch's previous value is not its last one:", previous);
        if (strcmp(value, t->last) == 0) problem("a watch got the value it had:", value);
        atomic_fetch_add_explicit(&watch_changes, 1, memory_order_relaxed);
    }
    if (value && strlen(value) >= VALUE_MAX) problem("a watch value longer than the test holds:", value);
    snprintf(t->last, sizeof t->last, "%s", value ? value : "");
    atomic_fetch_add(&watch_calls, 1);
    int stop = t->stop_after && t->calls == t->stop_after;
    if (stop) atomic_store(&t->live, 0);
    leave(t);
    return stop ? UF_STOP : UF_KEEP;
}

/* ---- deferred subscriptions ---- */

static const char *const deferred_filters[] = {NULL, "AnyMutationOf<Job>", "TransitionInto<Job.Expired>",
                                               "AnyMutationOf<Job[k3]>", "AnyMutationOf<Gauge>"};
enum { FILTERS = sizeof deferred_filters / sizeof deferred_filters[0] };

static int fits_filter(int filter, const uf_mutation *m) {
    const char *feature = uf_mutation_feature(m), *key = uf_mutation_key(m), *state = uf_mutation_new_state(m);
    switch (filter) {
    case 0: return 1;
    case 1: return strcmp(feature, "Job") == 0;
    case 2: return strcmp(feature, "Job") == 0 && uf_mutation_kind_of(m) == UF_MUTATION_TRANSITION && state &&
                   strcmp(state, "Expired") == 0;
    case 3: return strcmp(feature, "Job") == 0 && key && strcmp(key, "k3") == 0;
    default: return strcmp(feature, "Gauge") == 0;
    }
}

static int on_deferred(const uf_mutation *m, void *payload) {
    tracked *t = payload;
    enter(t, "a deferred subscriber");
    if (!in_loop_run) problem("a deferred delivery outside uf_loop_run", NULL);
    uint64_t seq = uf_mutation_seq(m), dropped = uf_mutation_dropped(m);
    if (seq <= t->last_seq) problem("deferred deliveries out of seq order:", uf_mutation_json(m));
    if (!fits_filter(t->variant, m)) problem("a deferred delivery that does not fit its filter:", uf_mutation_json(m));
    if (uf_mutation_subscription_id(m) == 0) problem("a deferred delivery without its subscription id", NULL);
    t->last_seq = seq;
    atomic_fetch_add(&deferred_deliveries, 1);
    atomic_fetch_add(&deferred_dropped, dropped);
    int stop = t->stop_after && t->calls == t->stop_after;
    if (stop) atomic_store(&t->live, 0);
    leave(t);
    return stop ? UF_STOP : UF_KEEP;
}

/* ---- the threads ---- */

static void loop_run(void) {
    in_loop_run = 1;
    int status = uf_loop_run(d, NULL);
    in_loop_run = 0;
    if (status != UF_OK) problem("uf_loop_run failed:", uf_last_error());
}

static void *loop_thread(void *arg) {
    (void)arg;
    int fd = -1;
    if (uf_loop_fd(d, &fd) != UF_OK) {
        problem("uf_loop_fd failed:", uf_last_error());
        return NULL;
    }
    while (!atomic_load(&stopping)) {
        int timeout = -1;
        if (uf_loop_timeout(d, &timeout) != UF_OK) problem("uf_loop_timeout failed:", uf_last_error());
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, timeout < 0 || timeout > 5 ? 5 : timeout);
        loop_run();
    }
    return NULL;
}

/* Adds a callback of a random kind into an empty slot, or ends the slot's one. */
static void churn(uint64_t r, uint64_t *id, tracked **slot) {
    if (*id) {
        int status = uf_unsubscribe(d, *id);
        if (status == UF_OK) {
            atomic_store(&(*slot)->live, 0);
            atomic_fetch_add(&callbacks_removed, 1);
        } else if (status != UF_ENOTFOUND || atomic_load(&(*slot)->live)) {
            /* UF_ENOTFOUND only for a callback that stopped itself */
            problem("uf_unsubscribe failed:", uf_last_error());
        }
        *id = 0;
        *slot = NULL;
        return;
    }
    enum kind kind = (enum kind)((r >> 20) % 5);
    int variant = (int)((r >> 24) % (kind == K_DEFERRED_SUB ? FILTERS : SELECTORS));
    if (kind == K_LOOK) variant = (int)((r >> 24) & 1);
    tracked *t = new_tracked(kind, variant);
    if (!t) return;
    t->stop_after = (r >> 28) % 3 == 0 ? (int)((r >> 32) % 6) + 1 : 0;
    int status;
    switch (kind) {
    case K_WATCH: status = uf_watch(d, selectors[variant], on_watch, t, release_tracked, id); break;
    case K_DEFERRED_WATCH: status = uf_watch_deferred(d, selectors[variant], on_watch, t, release_tracked, id); break;
    case K_DEFERRED_SUB:
        status = uf_subscribe_deferred(d, deferred_filters[variant], on_deferred, t, release_tracked, id);
        break;
    case K_LOOK: status = uf_intercept(d, variant ? "Job" : NULL, look, t, release_tracked, id); break;
    default: status = uf_intercept(d, "Job", submitting, t, release_tracked, id); break;
    }
    if (status != UF_OK) {
        problem("adding a callback failed:", uf_last_error());
        *id = 0;
        return;
    }
    if (*id == 0) problem("a callback's id is 0", NULL);
    /* A direct watch was called once, with the current value, before uf_watch returned. */
    if (kind == K_WATCH && !atomic_load(&t->called)) problem("uf_watch returned before calling the watch", NULL);
    *slot = t;
    atomic_fetch_add(&callbacks_added, 1);
}

static void expect_action(int status, const char *what) {
    if (status != UF_OK && status != UF_REJECTED) problem(what, uf_last_error());
}

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg;
    char key[8], json[256], id[16];
    uint64_t ids[SLOTS] = {0};
    tracked *slots[SLOTS] = {0};
    static const char *const events[] = {"go", "finish", "rest", "nothing"};
    while (!atomic_load(&stopping)) {
        uint64_t r = next_random(&rng);
        int k = (int)((r >> 8) % KEYS);
        snprintf(key, sizeof key, "k%d", k);
        int op = (int)(r % 100), status;
        uf_action a = UF_ACTION_INIT;
        a.feature = "Job";
        a.key = key;
        if (op < 15) {
            a.kind = UF_ACTION_INITIALIZE;
            a.into = "Idle";
            status = uf_dispatch(d, &a);
            if (ends_in_7(key)) {
                /* c. Never applied, and refused with the interceptor's reason. */
                if (status != UF_REJECTED || strcmp(uf_last_error(), veto_reason) != 0)
                    problem("a vetoed initialization did not fail with the veto's reason:", uf_last_error());
                atomic_fetch_add(&vetoed_initializations, 1);
            } else {
                expect_action(status, "an initialization failed:");
            }
        } else if (op < 25) {
            status = uf_send(d, "Job", key, events[(r >> 20) % 4], NULL);
            expect_action(status, "a send failed:");
        } else if (op < 29) {
            snprintf(json, sizeof json, "{\"kind\":\"actualize\",\"feature\":\"Job\",\"key\":\"%s\",\"in\":\"Busy\","
                     "\"payload\":{\"n\":%d}}", key, (int)((r >> 24) % 1000));
            expect_action(uf_submit(d, json), "an actualization failed:");
        } else if (op < 32) {
            /* A transition without an event: from Busy (declared), or from anywhere. */
            a.kind = UF_ACTION_TRANSITION;
            a.from = (r >> 20) & 1 ? "Busy" : NULL;
            a.into = (r >> 21) & 1 ? "Done" : "Idle";
            expect_action(uf_dispatch(d, &a), "a transition failed:");
        } else if (op < 37) {
            a.kind = UF_ACTION_DEINITIALIZE;
            expect_action(uf_dispatch(d, &a), "a deinitialization failed:");
        } else if (op < 41) {
            snprintf(json, sizeof json, "{\"kind\":\"transition\",\"feature\":\"Latch\",\"into\":\"%s\"}",
                     (r >> 20) % 3 ? "Armed" : "Open");
            expect_action(uf_submit(d, json), "a Latch transition failed:");
        } else if (op < 53) {
            /* Gauge, a few ms later: named (re-armed: debounce, or kept: throttle) or anonymous. */
            snprintf(id, sizeof id, "g%d", (int)((r >> 16) % 8));
            snprintf(json, sizeof json,
                     "{\"kind\":\"actualize\",\"feature\":\"Gauge\",\"in\":\"On\",\"payload\":{\"v\":%d}}",
                     (int)((r >> 24) % 50));
            status = uf_submit_after(d, json, (r >> 40) % 6, (r >> 44) % 4 ? id : NULL,
                                     (r >> 46) % 2 ? UF_TIMER_KEEP : 0);
            if (status != UF_OK) problem("uf_submit_after failed:", uf_last_error());
            atomic_fetch_add(&api_timers_armed, 1);
            if ((r >> 48) % 4 == 0) {
                status = uf_timer_cancel(d, id);
                if (status == UF_OK) atomic_fetch_add(&api_timers_cancelled, 1);
                else if (status != UF_ENOTFOUND) problem("uf_timer_cancel failed:", uf_last_error());
            }
        } else if (op < 61) {
            /* A Job instance, a few ms later, through the struct. */
            snprintf(id, sizeof id, "j%d", (int)((r >> 16) % 8));
            if ((r >> 50) % 3 == 0) {
                a.kind = UF_ACTION_INITIALIZE;
                a.into = "Idle";
            } else {
                a.kind = UF_ACTION_SEND;
                a.event = events[(r >> 20) % 3];
            }
            status = uf_dispatch_after(d, &a, (r >> 40) % 6, (r >> 44) % 4 ? id : NULL,
                                       (r >> 46) % 2 ? UF_TIMER_KEEP : 0);
            if (status != UF_OK) problem("uf_dispatch_after failed:", uf_last_error());
            atomic_fetch_add(&api_timers_armed, 1);
            if ((r >> 48) % 4 == 0) {
                status = uf_timer_cancel(d, id);
                if (status == UF_OK) atomic_fetch_add(&api_timers_cancelled, 1);
                else if (status != UF_ENOTFOUND) problem("uf_timer_cancel failed:", uf_last_error());
            }
        } else if (op < 70) {
            int s = (int)((r >> 12) % SLOTS);
            churn(r, &ids[s], &slots[s]);
        } else {
            char *out = NULL;
            uint64_t ms;
            int timeout;
            switch ((r >> 12) % 8) {
            case 0: case 1: case 2: status = uf_instance_get(d, "Job", key, &out); break;
            case 3: status = uf_timers_get(d, &out); break;
            case 4: status = uf_state_get(d, &out); break;
            case 5: status = uf_clock_now(d, &ms); break;
            case 6: status = uf_loop_timeout(d, &timeout); break;
            default: status = (r >> 16) % 16 == 0 ? uf_snapshot_get(d, &out) : uf_feature_get(d, "Gauge", &out); break;
            }
            if (status != UF_OK) problem("a read failed:", uf_last_error());
            uf_free(out);
            atomic_fetch_add(&reads, 1);
        }
    }
    return NULL;
}

/* b. The model as the shadow says it should be, in uf_state_get's format. */
static void expected_model(char *out, size_t size) {
    size_t n = 0;
    int order[KEYS], count = 0;
    for (int i = 0; i < KEYS; ++i)
        if (shadow.present[i]) order[count++] = i;
    for (int i = 1; i < count; ++i) /* creation order */
        for (int j = i; j > 0 && shadow.created[order[j]] < shadow.created[order[j - 1]]; --j) {
            int swap = order[j];
            order[j] = order[j - 1];
            order[j - 1] = swap;
        }
    n += (size_t)snprintf(out + n, size - n, "{");
    if (count) {
        n += (size_t)snprintf(out + n, size - n, "\"Job\":{");
        for (int c = 0; c < count; ++c)
            n += (size_t)snprintf(out + n, size - n, "%s\"k%d\":{\"state\":\"%s\",\"payload\":%s}", c ? "," : "",
                                  order[c], shadow.state[order[c]], shadow.payload[order[c]]);
        n += (size_t)snprintf(out + n, size - n, "}");
    }
    static const char *const singles[] = {"Gauge", "Latch"};
    for (int s = 0; s < 2; ++s) {
        int i = KEYS + s;
        if (shadow.present[i])
            n += (size_t)snprintf(out + n, size - n, "%s\"%s\":{\"state\":\"%s\",\"payload\":%s}", n > 1 ? "," : "",
                                  singles[s], shadow.state[i], shadow.payload[i]);
    }
    snprintf(out + n, size - n, "}");
}

static void check_instance(int i) {
    char key[8], *json = NULL, expected[160];
    snprintf(key, sizeof key, "k%d", i);
    if (uf_instance_get(d, "Job", key, &json) != UF_OK) {
        problem("uf_instance_get failed:", uf_last_error());
        return;
    }
    snprintf(expected, sizeof expected, "{\"state\":\"%s\",\"payload\":%s}", shadow.state[i], shadow.payload[i]);
    if (shadow.present[i] ? (!json || strcmp(json, expected) != 0) : json != NULL) {
        char detail[400];
        snprintf(detail, sizeof detail, "Job[%s] is %s, the mutations imply %s", key, json ? json : "absent",
                 shadow.present[i] ? expected : "absent");
        problem("model differs:", detail);
    }
    uf_free(json);
}

int main(void) {
    double seconds = env_number("UNIFLOW_STRESS_SECONDS", 3.0, 0.001, 1e7);
    int threads = (int)env_number("UNIFLOW_STRESS_THREADS", 6, 1, MAX_THREADS);
    const char *env = getenv("UNIFLOW_STRESS_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    /* f.: past `seconds`, the run goes on until every kind of event has happened,
     * up to this cap. */
    double cap = seconds * 10 + 120;
    printf("stress_features: %d threads, %g s and until every kind of event has happened (at most %.0f s), "
           "seed %llu (UNIFLOW_STRESS_SEED)\n",
           threads, seconds, cap, (unsigned long long)seed);

    /* What lives all along: the recorder, the reporter, the vetoing interceptor,
     * a direct and a deferred watch per selector. */
    tracked *recorder = new_tracked(K_RECORDER, 0), *reporter = new_tracked(K_REPORTER, 0),
            *vetoer = new_tracked(K_VETO, 0);
    if (uf_dispatcher_new(&d, "{\"timers\": \"thread\"}") != UF_OK || uf_register(d, definitions) != UF_OK ||
        uf_set_reporter(d, report, reporter, release_tracked) != UF_OK ||
        uf_subscribe(d, NULL, record, recorder, release_tracked, NULL) != UF_OK ||
        uf_intercept(d, NULL, veto, vetoer, release_tracked, NULL) != UF_OK ||
        uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Gauge\",\"into\":\"On\"}") != UF_OK ||
        uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Latch\",\"into\":\"Open\"}") != UF_OK) {
        fprintf(stderr, "stress_features: setup failed: %s\n", uf_last_error());
        return 1;
    }
    for (int s = 0; s < SELECTORS; ++s) {
        tracked *direct = new_tracked(K_WATCH, s), *deferred = new_tracked(K_DEFERRED_WATCH, s);
        if (uf_watch(d, selectors[s], on_watch, direct, release_tracked, NULL) != UF_OK ||
            uf_watch_deferred(d, selectors[s], on_watch, deferred, release_tracked, NULL) != UF_OK) {
            fprintf(stderr, "stress_features: setup failed: %s\n", uf_last_error());
            return 1;
        }
    }
    /* And a deferred subscription to every mutation: the workers' own come and go,
     * and on a slow run (valgrind) none of them may live long enough to be delivered. */
    tracked *every = new_tracked(K_DEFERRED_SUB, 0);
    if (uf_subscribe_deferred(d, deferred_filters[0], on_deferred, every, release_tracked, NULL) != UF_OK) {
        fprintf(stderr, "stress_features: setup failed: %s\n", uf_last_error());
        return 1;
    }

    double started = now();
    pthread_t ids[MAX_THREADS + 1];
    for (int i = 0; i < threads; ++i) {
        uint64_t thread_seed = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull + 1;
        if (pthread_create(&ids[i], NULL, worker, (void *)(uintptr_t)thread_seed) != 0) {
            fprintf(stderr, "stress_features: pthread_create failed\n");
            return 1;
        }
    }
    if (pthread_create(&ids[threads], NULL, loop_thread, NULL) != 0) {
        fprintf(stderr, "stress_features: pthread_create failed\n");
        return 1;
    }
    /* The run: `seconds` at least, then on until every kind of event has happened
     * (f.), but not past the cap. */
    const char *waited_for; /* the last kind still missing once `seconds` were over */
    double ran = run_until_covered(started, seconds, cap, missing_event, &waited_for);
    atomic_store(&stopping, 1);
    for (int i = 0; i <= threads; ++i) pthread_join(ids[i], NULL);
    const char *missing = missing_event();
    printf("stress_features: ran %.2f s (%g s asked for%s%s)\n", ran, seconds,
           missing ? "; stopped at the cap, still missing: "
                   : waited_for ? "; went on until every kind of event had happened, the last missing: " : "",
           missing ? missing : waited_for ? waited_for : "");

    /* Quiet: the state timers (2 and 3 ms) and the API timers (< 6 ms) run out.
     * Chains end: a submitting interceptor arms a timer only for a Job
     * initialization, and that timer actualizes Gauge, which arms nothing. */
    char *timers = NULL;
    for (int tries = 0; tries < 1000; ++tries) {
        uf_free(timers);
        timers = NULL;
        if (uf_timers_get(d, &timers) != UF_OK || strcmp(timers, "[]") == 0) break;
        pause_ms(5);
    }
    if (!timers || strcmp(timers, "[]") != 0) problem("timers still armed at the end:", timers);
    uf_free(timers);
    /* Then the deferred deliveries and watch values still waiting. */
    for (int tries = 0, timeout = 0; tries < 100; ++tries) {
        if (uf_loop_timeout(d, &timeout) != UF_OK) problem("uf_loop_timeout failed:", uf_last_error());
        if (timeout == -1) break;
        loop_run();
    }

    /* b. The model is what the mutations imply: whole, then instance by instance. */
    char *model = NULL;
    static char expected[PLACES * 160];
    if (uf_state_get(d, &model) != UF_OK) {
        problem("uf_state_get failed:", uf_last_error());
    } else {
        expected_model(expected, sizeof expected);
        if (strcmp(model, expected) != 0) {
            problem("the final model:", model);
            problem("differs from what the mutations imply:", expected);
        }
    }
    for (int i = 0; i < KEYS; ++i) check_instance(i);

    /* d. Every watch still alive ends on its selector over the final model. */
    char *selected[SELECTORS] = {0};
    if (model) {
        size_t size = strlen(model) + 16;
        char *data = malloc(size);
        if (!data) abort();
        snprintf(data, size, "{\"model\":%s}", model);
        for (int s = 0; s < SELECTORS; ++s)
            if (uf_logic_apply(selectors[s], data, &selected[s]) != UF_OK) problem("uf_logic_apply failed:", uf_last_error());
        free(data);
    }
    int count = atomic_load(&tracked_count), watches_checked = 0;
    for (int i = 0; i < count; ++i) {
        tracked *t = all_tracked[i];
        if ((t->kind != K_WATCH && t->kind != K_DEFERRED_WATCH) || !atomic_load(&t->live) || !selected[t->variant]) continue;
        /* A deferred watch that never reached uf_loop_run has no value yet. */
        if (t->calls == 0 && t->kind == K_DEFERRED_WATCH) problem("a deferred watch was never delivered", selectors[t->variant]);
        ++watches_checked;
        if (strcmp(t->last, selected[t->variant]) != 0) {
            char detail[700];
            snprintf(detail, sizeof detail, "%s watch of %s ended on %s, the final model gives %s",
                     t->kind == K_WATCH ? "a direct" : "a deferred", selectors[t->variant], t->last, selected[t->variant]);
            problem("a watch's last value is not the final one:", detail);
        }
    }
    for (int s = 0; s < SELECTORS; ++s) uf_free(selected[s]);
    uf_free(model);

    /* e. Nothing runs after uf_dispatcher_free: every callback checks the flag;
     * a timer thread left running would fire within the pause. */
    uf_dispatcher_free(d);
    atomic_store(&dispatcher_freed, 1);
    pause_ms(20);

    /* a. Every payload_free exactly once. */
    long calls = 0;
    int not_once = 0;
    for (int i = 0; i < count; ++i) {
        if (atomic_load(&all_tracked[i]->freed) != 1) ++not_once;
        calls += all_tracked[i]->calls;
    }
    if (not_once) {
        char detail[64];
        snprintf(detail, sizeof detail, "%d of %d", not_once, count);
        problem("payload_free did not run exactly once:", detail);
    }

    printf("stress_features: %lu mutations (seq %llu), %lu by timers (%lu by state timers); %lu timer_fired reports, "
           "%lu timers' actions rejected; %lu API timers armed, %lu cancelled\n",
           shadow.mutations, (unsigned long long)shadow.seq, shadow.by_timers, shadow.by_state_timers,
           atomic_load(&timer_fired_reports), atomic_load(&timer_rejections), atomic_load(&api_timers_armed),
           atomic_load(&api_timers_cancelled));
    printf("stress_features: %lu instances made, %lu vetoes (%lu vetoed initializations checked), %lu interceptor "
           "calls, %lu interceptor submits; %lu watch calls (%d watches checked at the end), %lu deferred "
           "deliveries (%lu dropped); %lu reads\n",
           shadow.creations, atomic_load(&vetoes), atomic_load(&vetoed_initializations), atomic_load(&looks),
           atomic_load(&interceptor_submits), atomic_load(&watch_calls), watches_checked,
           atomic_load(&deferred_deliveries), atomic_load(&deferred_dropped), atomic_load(&reads));
    printf("stress_features: %d tracked payloads (%ld callback calls; %lu callbacks added, %lu ended by "
           "uf_unsubscribe), every payload_free %s\n",
           count, calls, atomic_load(&callbacks_added), atomic_load(&callbacks_removed),
           not_once ? "NOT exactly once" : "exactly once");

    /* c. Each veto is reported once, as a rejection with the veto's reason. */
    if (atomic_load(&veto_reports) != atomic_load(&vetoes)) {
        char detail[80];
        snprintf(detail, sizeof detail, "%lu vetoes, %lu rejected reports", atomic_load(&vetoes), atomic_load(&veto_reports));
        problem("vetoes and their reports differ:", detail);
    }
    /* f. A run that tested nothing must not pass: one that reached the cap says
     * what never happened. */
    for (int i = 0; i < COVERAGE; ++i)
        if (atomic_load(coverage[i].count) == 0) {
            char detail[160];
            snprintf(detail, sizeof detail, "%s within the cap of %.0f s (UNIFLOW_STRESS_SECONDS x 10 + 120)",
                     coverage[i].missing, cap);
            problem("the run did almost nothing:", detail);
        }
    if (watches_checked == 0) problem("the run did almost nothing:", "no watch checked at the end");

    for (int i = 0; i < count; ++i) free(all_tracked[i]);
    int n = atomic_load(&problems);
    printf("stress_features: %s\n", n ? "FAILED" : "passed");
    return n ? 1 : 0;
}
