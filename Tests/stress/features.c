/*
 * features.c — this round's features under threads: keyed instances, state and API
 * timers on the library's timer thread, events, watches (direct and deferred),
 * interceptors and deferred subscribers, all at once against one dispatcher, for a
 * bounded time.
 *
 * Worker threads pick at random: initialize, send, actualize, finish or
 * deinitialize an instance of the keyed feature Job (64 keys, so that they
 * collide); arm, re-arm (debounce or throttle) and cancel API timers that
 * actualize Gauge a few milliseconds later; add and end watches and interceptors;
 * read. Every Job instance that waits in Idle for 2 ms expires through its state
 * timer. A loop thread runs uf_loop_run on uf_loop_fd for the deferred ones.
 *
 * At the end, once no timer is armed, it checks:
 *   1. no action an interceptor vetoed became a mutation (one interceptor lives
 *      all along and vetoes initializing any key that ends in 7);
 *   2. a watch is never called with the value it got last, and the last value of
 *      a watch that lived all along is its selector over the final model;
 *   3. the final model is what the mutations a direct subscriber saw imply,
 *      instance by instance;
 *   4. every payload_free ran exactly once, no callback ran after its
 *      payload_free, and none ran after uf_dispatcher_free;
 *   5. the run did something: timers fired, vetoes happened, watches were called,
 *      instances were made.
 *
 * Environment: UNIFLOW_STRESS_SECONDS (default 3), UNIFLOW_STRESS_THREADS (6),
 * UNIFLOW_STRESS_SEED (default: the time; printed).
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

enum { MAX_THREADS = 32, KEYS = 64, MAX_TRACKED = 1 << 20 };

static uf_dispatcher *d;
static atomic_int problems;
static atomic_int dispatcher_freed;
static double deadline;

static void problem(const char *what, const char *detail) {
    if (atomic_fetch_add(&problems, 1) < 20)
        fprintf(stderr, "features: PROBLEM: %s %s\n", what, detail ? detail : "");
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
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
    "{\"feature\":\"Gauge\",\"states\":{\"On\":{\"fields\":{\"v\":{\"type\":\"integer\",\"default\":0}}}}}"
    "]}";

/* ---- payloads that must see exactly one payload_free, and no call after it ---- */

typedef struct tracked {
    atomic_int freed;
    atomic_int calls;
    char last[128]; /* watches: the value last delivered ("" before the first) */
} tracked;

static tracked *all_tracked[MAX_TRACKED];
static atomic_int tracked_count;

static tracked *new_tracked(void) {
    int i = atomic_fetch_add(&tracked_count, 1);
    if (i >= MAX_TRACKED) {
        fprintf(stderr, "features: too many payloads: run shorter\n");
        abort();
    }
    tracked *t = calloc(1, sizeof *t);
    if (!t) abort();
    all_tracked[i] = t;
    return t;
}

static void release_tracked(void *p) {
    tracked *t = p;
    if (atomic_fetch_add(&t->freed, 1) != 0) problem("payload_free ran twice", NULL);
}

static void called(tracked *t, const char *what) {
    if (atomic_load(&t->freed)) problem(what, "ran after its payload_free");
    if (atomic_load(&dispatcher_freed)) problem(what, "ran after uf_dispatcher_free");
    atomic_fetch_add(&t->calls, 1);
}

/* ---- what the direct subscriber saw (one callback at a time: plain memory) ---- */

static struct {
    char state[KEYS + 1][16]; /* [KEYS]: Gauge */
    char payload[KEYS + 1][96];
    int present[KEYS + 1];
    unsigned long mutations, timer_mutations, vetoed_applied;
} shadow;

static atomic_ulong vetoes, watch_calls, instances_made, deferred_seen;

static int key_index(const char *key) { return key ? atoi(key + 1) : KEYS; }

static int record(const uf_mutation *m, void *payload) {
    (void)payload;
    if (atomic_load(&dispatcher_freed)) problem("the subscriber", "ran after uf_dispatcher_free");
    const char *key = uf_mutation_key(m);
    int i = key_index(key);
    if (i < 0 || i > KEYS) {
        problem("a mutation with an unknown key:", key);
        return UF_KEEP;
    }
    const char *state = uf_mutation_new_state(m);
    if (key && uf_mutation_kind_of(m) == UF_MUTATION_INITIALIZATION) {
        atomic_fetch_add(&instances_made, 1);
        if (key[strlen(key) - 1] == '7') {
            ++shadow.vetoed_applied;
            problem("a vetoed initialization was applied:", key);
        }
    }
    if (strstr(uf_mutation_json(m), "\"timer\":")) ++shadow.timer_mutations;
    shadow.present[i] = state != NULL;
    snprintf(shadow.state[i], sizeof shadow.state[i], "%s", state ? state : "");
    const char *p = uf_mutation_new_payload_json(m);
    snprintf(shadow.payload[i], sizeof shadow.payload[i], "%s", p ? p : "{}");
    ++shadow.mutations;
    return UF_KEEP;
}

/* ---- interceptors ---- */

static int veto_sevens(uf_intercepted *a, void *payload) {
    called(payload, "the vetoing interceptor");
    const char *key = uf_intercepted_key(a);
    if (uf_intercepted_kind(a) == UF_ACTION_INITIALIZE && key && key[strlen(key) - 1] == '7') {
        atomic_fetch_add(&vetoes, 1);
        return 1;
    }
    return 0;
}

static int pass_through(uf_intercepted *a, void *payload) {
    called(payload, "an interceptor");
    (void)uf_intercepted_state(a);
    return 0;
}

/* ---- watches ---- */

static int watch_value(const uf_watch_event *w, void *payload) {
    tracked *t = payload;
    called(t, "a watch");
    const char *value = uf_watch_value_json(w);
    if (t->last[0] && strcmp(t->last, value) == 0) problem("a watch got the value it had:", value);
    snprintf(t->last, sizeof t->last, "%s", value);
    atomic_fetch_add(&watch_calls, 1);
    return UF_KEEP;
}

static int deferred_mutation(const uf_mutation *m, void *payload) {
    called(payload, "a deferred subscriber");
    (void)uf_mutation_dropped(m);
    atomic_fetch_add(&deferred_seen, 1);
    return UF_KEEP;
}

static const char *const selectors[] = {
    "{\"var\":\"model.Gauge.payload.v\"}",
    "{\"var\":\"model.Job.k3.state\"}",
    "{\"if\":[{\"var\":\"model.Job.k5\"},\"some\",\"none\"]}",
};

/* ---- the threads ---- */

static void *loop_thread(void *arg) {
    (void)arg;
    int fd = -1;
    if (uf_loop_fd(d, &fd) != UF_OK) {
        problem("uf_loop_fd failed:", uf_last_error());
        return NULL;
    }
    while (now() < deadline + 0.5) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, 5);
        int status = uf_loop_run(d, NULL);
        if (status != UF_OK) problem("uf_loop_run failed:", uf_last_error());
    }
    return NULL;
}

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg;
    char key[8], json[256];
    uint64_t mine[8] = {0};
    while (now() < deadline) {
        uint64_t r = next_random(&rng);
        snprintf(key, sizeof key, "k%d", (int)((r >> 8) % KEYS));
        int op = (int)(r % 100), status;
        uf_action a = UF_ACTION_INIT;
        a.feature = "Job";
        a.key = key;
        if (op < 20) {
            a.kind = UF_ACTION_INITIALIZE;
            a.into = "Idle";
            status = uf_dispatch(d, &a);
        } else if (op < 35) {
            status = uf_send(d, "Job", key, (r >> 20) % 3 == 0 ? "finish" : (r >> 20) % 3 == 1 ? "rest" : "go", NULL);
        } else if (op < 45) {
            a.kind = UF_ACTION_ACTUALIZE;
            a.into = "Busy";
            snprintf(json, sizeof json, "{\"n\": %d}", (int)((r >> 24) % 1000));
            a.payload_json = json;
            status = uf_dispatch(d, &a);
        } else if (op < 52) {
            a.kind = UF_ACTION_DEINITIALIZE;
            status = uf_dispatch(d, &a);
        } else if (op < 70) {
            char id[16];
            snprintf(id, sizeof id, "g%d", (int)((r >> 16) % 8));
            snprintf(json, sizeof json,
                     "{\"kind\":\"actualize\",\"feature\":\"Gauge\",\"in\":\"On\",\"payload\":{\"v\":%d}}",
                     (int)((r >> 24) % 50));
            status = uf_submit_after(d, json, (r >> 40) % 4, (r >> 44) % 4 ? id : NULL,
                                     (r >> 46) % 2 ? UF_TIMER_KEEP : 0);
            if (status != UF_OK) problem("uf_submit_after failed:", uf_last_error());
            if ((r >> 48) % 4 == 0) {
                int cancelled = uf_timer_cancel(d, id);
                if (cancelled != UF_OK && cancelled != UF_ENOTFOUND) problem("uf_timer_cancel failed:", uf_last_error());
            }
            continue;
        } else if (op < 78) {
            uint64_t *slot = &mine[(r >> 12) % 8];
            if (*slot) {
                int gone = uf_unsubscribe(d, *slot);
                if (gone != UF_OK && gone != UF_ENOTFOUND) problem("uf_unsubscribe failed:", uf_last_error());
                *slot = 0;
            } else {
                tracked *t = new_tracked();
                int kind = (int)((r >> 20) % 4);
                if (kind == 0) {
                    status = uf_intercept(d, (r >> 22) & 1 ? "Job" : NULL, pass_through, t, release_tracked, slot);
                } else if (kind == 1) {
                    status = uf_subscribe_deferred(d, "AnyMutationOf<Job>", deferred_mutation, t, release_tracked, slot);
                } else {
                    const char *selector = selectors[(r >> 24) % 3];
                    status = kind == 2 ? uf_watch(d, selector, watch_value, t, release_tracked, slot)
                                       : uf_watch_deferred(d, selector, watch_value, t, release_tracked, slot);
                }
                if (status != UF_OK) problem("adding a callback failed:", uf_last_error());
            }
            continue;
        } else {
            char *out = NULL;
            status = (r >> 8) & 1 ? uf_instance_get(d, "Job", key, &out) : uf_timers_get(d, &out);
            if (status != UF_OK) problem("a read failed:", uf_last_error());
            uf_free(out);
            continue;
        }
        if (status != UF_OK && status != UF_REJECTED) problem("an action failed:", uf_last_error());
    }
    return NULL;
}

static double env_number(const char *name, double fallback, double low, double high) {
    const char *env = getenv(name);
    if (!env || !*env) return fallback;
    char *end;
    double value = strtod(env, &end);
    if (*end || !(value >= low && value <= high)) {
        fprintf(stderr, "features: %s=%s: expected a number from %g to %g\n", name, env, low, high);
        exit(2);
    }
    return value;
}

/* The model's JSON for one place, as the shadow says it should be. */
static void check_place(const char *feature, const char *key, int i) {
    char *json = NULL;
    int status = key ? uf_instance_get(d, feature, key, &json) : uf_feature_get(d, feature, &json);
    if (status != UF_OK) {
        problem("reading the final model failed:", uf_last_error());
        return;
    }
    char expected[200];
    snprintf(expected, sizeof expected, "{\"state\":\"%s\",\"payload\":%s}", shadow.state[i], shadow.payload[i]);
    if (shadow.present[i] ? (!json || strcmp(json, expected) != 0) : json != NULL) {
        char detail[400];
        snprintf(detail, sizeof detail, "%s[%s] is %s, the mutations imply %s", feature, key ? key : "",
                 json ? json : "absent", shadow.present[i] ? expected : "absent");
        problem("model differs:", detail);
    }
    uf_free(json);
}

int main(void) {
    double seconds = env_number("UNIFLOW_STRESS_SECONDS", 3.0, 0.001, 1e7);
    int threads = (int)env_number("UNIFLOW_STRESS_THREADS", 6, 1, MAX_THREADS);
    const char *env = getenv("UNIFLOW_STRESS_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("features: %d threads, %.1f s, seed %llu (UNIFLOW_STRESS_SEED)\n", threads, seconds,
           (unsigned long long)seed);

    if (uf_dispatcher_new(&d, NULL) != UF_OK || uf_register(d, definitions) != UF_OK ||
        uf_subscribe(d, NULL, record, NULL, NULL, NULL) != UF_OK ||
        uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Gauge\",\"into\":\"On\"}") != UF_OK) {
        fprintf(stderr, "features: setup failed: %s\n", uf_last_error());
        return 1;
    }
    tracked *vetoer = new_tracked(), *gauge_watch = new_tracked();
    if (uf_intercept(d, "Job", veto_sevens, vetoer, release_tracked, NULL) != UF_OK ||
        uf_watch(d, selectors[0], watch_value, gauge_watch, release_tracked, NULL) != UF_OK) {
        fprintf(stderr, "features: setup failed: %s\n", uf_last_error());
        return 1;
    }

    deadline = now() + seconds;
    pthread_t ids[MAX_THREADS + 1];
    for (int i = 0; i < threads; ++i) {
        uint64_t thread_seed = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull + 1;
        if (pthread_create(&ids[i], NULL, worker, (void *)(uintptr_t)thread_seed) != 0) abort();
    }
    if (pthread_create(&ids[threads], NULL, loop_thread, NULL) != 0) abort();
    for (int i = 0; i <= threads; ++i) pthread_join(ids[i], NULL);

    /* Quiet: the state timers (2 ms) and API timers (< 4 ms) run out. */
    char *timers = NULL;
    for (int tries = 0; tries < 400; ++tries) {
        uf_free(timers);
        timers = NULL;
        if (uf_timers_get(d, &timers) != UF_OK) break;
        if (strcmp(timers, "[]") == 0) break;
        struct timespec pause = {0, 5000000};
        nanosleep(&pause, NULL);
    }
    if (!timers || strcmp(timers, "[]") != 0) problem("timers still armed at the end:", timers);
    uf_free(timers);

    /* 3. The model is what the mutations imply. */
    char key[8];
    for (int i = 0; i < KEYS; ++i) {
        snprintf(key, sizeof key, "k%d", i);
        check_place("Job", key, i);
    }
    check_place("Gauge", NULL, KEYS);
    /* 2. The watch that lived all along ends on the final value. */
    char *gauge = NULL;
    if (uf_feature_get(d, "Gauge", &gauge) == UF_OK && gauge) {
        const char *v = strstr(gauge, "\"v\":");
        char expected[32];
        snprintf(expected, sizeof expected, "%d", v ? atoi(v + 4) : -1);
        if (strcmp(gauge_watch->last, expected) != 0) problem("the Gauge watch's last value is", gauge_watch->last);
    }
    uf_free(gauge);

    uf_dispatcher_free(d);
    atomic_store(&dispatcher_freed, 1);

    /* 4. Every payload_free exactly once. */
    int count = atomic_load(&tracked_count), never = 0;
    for (int i = 0; i < count; ++i) {
        if (atomic_load(&all_tracked[i]->freed) != 1) ++never;
        free(all_tracked[i]);
    }
    if (never) problem("payload_free did not run exactly once for some payloads", NULL);

    printf("features: %lu mutations (%lu by timers), %lu instances made, %lu vetoes, %lu watch calls, "
           "%lu deferred deliveries, %d callbacks added\n",
           shadow.mutations, shadow.timer_mutations, atomic_load(&instances_made), atomic_load(&vetoes),
           atomic_load(&watch_calls), atomic_load(&deferred_seen), count);
    /* 5. A run that tested nothing must not pass. */
    if (shadow.timer_mutations == 0 || atomic_load(&vetoes) == 0 || atomic_load(&watch_calls) == 0 ||
        atomic_load(&instances_made) == 0)
        problem("the run did almost nothing:", "no timer fired, no veto, no watch call or no instance");
    int n = atomic_load(&problems);
    printf("features: %s\n", n ? "FAILED" : "passed");
    return n ? 1 : 0;
}
