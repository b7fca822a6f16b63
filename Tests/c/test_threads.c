/*
 * test_threads.c — many threads, one dispatcher (docs/processing.md, "Threads").
 *
 * Four threads submit 100,000 actions each through uf_dispatch with prepared
 * structs (UNIFLOW_THREAD_ACTIONS: another number; Tests/valgrind/run, under
 * which the threads take turns, uses fewer). Every action must be accounted for (applied + rejected == submitted,
 * no other status), every applied action must reach the subscriber and the
 * reporter exactly once, seq must count without gaps, and the model must agree
 * with the number of applied mutations. Readers and subscription churn run
 * alongside.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "check.h"

#include <stdlib.h>

enum { THREADS = 4 };
static long actions_per_thread = 100000;

static uf_dispatcher *d;

/* Failures seen on the worker threads, checked by main after join (check.h's
 * counters are not thread-safe). */
static pthread_mutex_t problems_lock = PTHREAD_MUTEX_INITIALIZER;
static int problems;

static void problem(const char *what, const char *detail) {
    pthread_mutex_lock(&problems_lock);
    if (++problems <= 10) fprintf(stderr, "thread problem: %s: %s\n", what, detail ? detail : "");
    pthread_mutex_unlock(&problems_lock);
}

/* ---- 1. A toggle: each thread flips it On or Off; some flips are rejected ---- */

typedef struct toggle_stats {
    unsigned long ok, rejected, other;
} toggle_stats;

/* Written only by the processing thread, which holds the dispatcher: callbacks
 * never run concurrently, so plain counters suffice. */
static struct {
    unsigned long mutations, processed_reports, rejected_reports, other_reports;
    uint64_t last_seq;
    int on; /* the state the subscriber expects after the last mutation */
} observed;

static int count_toggle(const uf_mutation *m, void *payload) {
    (void)payload;
    ++observed.mutations;
    if (uf_mutation_seq(m) != observed.last_seq + 1) problem("seq skipped", uf_mutation_json(m));
    observed.last_seq = uf_mutation_seq(m);
    if (uf_mutation_kind_of(m) == UF_MUTATION_TRANSITION) {
        const char *old_state = uf_mutation_old_state(m), *new_state = uf_mutation_new_state(m);
        if (strcmp(old_state, observed.on ? "On" : "Off") != 0) problem("old state disagrees", uf_mutation_json(m));
        if (strcmp(old_state, new_state) == 0) problem("a transition into the same state", uf_mutation_json(m));
        observed.on = strcmp(new_state, "On") == 0;
    }
    return UF_KEEP;
}

static void count_reports(const char *report, void *payload) {
    (void)payload;
    if (strncmp(report, "{\"event\":\"processed\"", 20) == 0) ++observed.processed_reports;
    else if (strncmp(report, "{\"event\":\"rejected\"", 19) == 0) ++observed.rejected_reports;
    else ++observed.other_reports;
}

static void *flip_toggle(void *arg) {
    toggle_stats *stats = (toggle_stats *)arg;
    uf_action on = UF_ACTION_INIT, off = UF_ACTION_INIT;
    on.kind = off.kind = UF_ACTION_TRANSITION;
    on.feature = off.feature = "Toggle";
    on.into = "On";
    off.into = "Off";
    for (long i = 0; i < actions_per_thread; ++i) {
        int status = uf_dispatch(d, (i & 1) ? &off : &on);
        if (status == UF_OK) ++stats->ok;
        else if (status == UF_REJECTED) ++stats->rejected;
        else {
            ++stats->other;
            problem(uf_status_name(status), uf_last_error());
        }
    }
    return NULL;
}

static void four_threads_flipping_a_toggle_lose_nothing(void) {
    d = check_dispatcher(NULL, "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}},\"initial\":[\"Off\"]}");
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    observed.last_seq = 1;
    CHECK_STATUS(uf_subscribe(d, "Transition<Toggle>", count_toggle, NULL, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_set_reporter(d, count_reports, NULL, NULL), UF_OK);

    pthread_t threads[THREADS];
    toggle_stats stats[THREADS];
    memset(stats, 0, sizeof stats);
    for (int t = 0; t < THREADS; ++t) REQUIRE(pthread_create(&threads[t], NULL, flip_toggle, &stats[t]) == 0);
    unsigned long ok = 0, rejected = 0, other = 0;
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(threads[t], NULL);
        ok += stats[t].ok;
        rejected += stats[t].rejected;
        other += stats[t].other;
    }
    printf("toggle: %lu applied, %lu rejected\n", ok, rejected);
    CHECK(ok + rejected == (unsigned long)THREADS * (unsigned long)actions_per_thread);
    CHECK(other == 0);
    CHECK(ok > 0);
    CHECK(observed.mutations == ok);
    CHECK(observed.processed_reports == ok);
    CHECK(observed.rejected_reports == rejected);
    CHECK(observed.other_reports == 0);
    CHECK(observed.last_seq == ok + 1);
    /* Starting Off, every applied transition flips the toggle. */
    CHECK_STATE(d, (ok % 2) ? "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}"
                            : "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    CHECK(observed.on == (int)(ok % 2));
    uf_dispatcher_free(d);
}

/* ---- 2. A counter incremented by a via: nothing is rejected, nothing lost ---- */

static unsigned long counter_mutations;
static long long counter_last;

static int increment(uf_context *ctx, void *payload) {
    (void)payload;
    long long n = -1;
    const char *current = uf_context_payload_json(ctx);
    if (!current || sscanf(current, "{\"n\":%lld}", &n) != 1) {
        problem("unreadable payload", current);
        return -1;
    }
    char next[48];
    snprintf(next, sizeof next, "{\"n\":%lld}", n + 1);
    return uf_context_become(ctx, next);
}

static int check_increment(const uf_mutation *m, void *payload) {
    (void)payload;
    long long old_n = -1, new_n = -1;
    sscanf(uf_mutation_old_payload_json(m), "{\"n\":%lld}", &old_n);
    sscanf(uf_mutation_new_payload_json(m), "{\"n\":%lld}", &new_n);
    if (old_n != counter_last || new_n != old_n + 1) problem("not an increment", uf_mutation_json(m));
    counter_last = new_n;
    ++counter_mutations;
    return UF_KEEP;
}

static void *increment_counter(void *arg) {
    unsigned long *applied = (unsigned long *)arg;
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_ACTUALIZE;
    a.feature = "Counter";
    a.into = "Counting";
    a.via = increment;
    for (long i = 0; i < actions_per_thread; ++i) {
        int status = uf_dispatch(d, &a);
        if (status == UF_OK) ++*applied;
        else problem(uf_status_name(status), uf_last_error());
    }
    return NULL;
}

/* Set by main when the writers are done; read by the reader and churn threads.
 * The GCC/clang atomic builtins work in C99 mode (no <stdatomic.h> needed). */
static int writers_done;

/* Reads the counter while it is being written: it never goes back. */
static void *read_counter(void *arg) {
    unsigned long *reads = (unsigned long *)arg;
    long long last = -1;
    while (!__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE)) {
        char *json = NULL;
        long long n = -1;
        if (uf_feature_get(d, "Counter", &json) != UF_OK || !json ||
            sscanf(json, "{\"state\":\"Counting\",\"payload\":{\"n\":%lld}}", &n) != 1) {
            problem("unreadable feature", json);
        } else if (n < last) {
            problem("the counter went back", json);
        }
        last = n;
        uf_free(json);
        ++*reads;
    }
    return NULL;
}

static int ignore(const uf_mutation *m, void *payload) {
    (void)m;
    (void)payload;
    return UF_KEEP;
}

/* Subscribes and unsubscribes while the writers run: every payload_free once. */
static void *churn_subscriptions(void *arg) {
    int *freed = (int *)arg;
    int made = 0;
    while (!__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE)) {
        uint64_t id = 0;
        if (uf_subscribe(d, "ActualizationIn<Counter.Counting>", ignore, freed, check_count_free, &id) != UF_OK) {
            problem("uf_subscribe", uf_last_error());
            continue;
        }
        ++made;
        if (uf_unsubscribe(d, id) != UF_OK) problem("uf_unsubscribe", uf_last_error());
    }
    /* freed is written by uf_unsubscribe on this thread only. */
    if (*freed != made) problem("payload_free count differs from subscriptions made", NULL);
    return NULL;
}

static void four_threads_incrementing_a_counter_lose_nothing(void) {
    d = check_dispatcher(NULL, "{\"feature\":\"Counter\",\"states\":{\"Counting\":{\"fields\":{\"n\":\"integer\"}}}}");
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Counter\",\"into\":\"Counting\",\"payload\":{\"n\":0}}"), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "Actualization<Counter>", check_increment, NULL, NULL, NULL), UF_OK);

    pthread_t writers[THREADS], reader, churner;
    unsigned long applied[THREADS] = {0}, reads = 0;
    int churn_freed = 0;
    __atomic_store_n(&writers_done, 0, __ATOMIC_RELEASE);
    for (int t = 0; t < THREADS; ++t) REQUIRE(pthread_create(&writers[t], NULL, increment_counter, &applied[t]) == 0);
    REQUIRE(pthread_create(&reader, NULL, read_counter, &reads) == 0);
    REQUIRE(pthread_create(&churner, NULL, churn_subscriptions, &churn_freed) == 0);
    unsigned long total = 0;
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(writers[t], NULL);
        total += applied[t];
    }
    __atomic_store_n(&writers_done, 1, __ATOMIC_RELEASE);
    pthread_join(reader, NULL);
    pthread_join(churner, NULL);
    printf("counter: %lu applied, %lu reads, %d subscriptions churned\n", total, reads, churn_freed);

    CHECK(total == (unsigned long)THREADS * (unsigned long)actions_per_thread);
    CHECK(counter_mutations == total);
    CHECK(counter_last == (long long)total);
    char expected[128];
    snprintf(expected, sizeof expected, "{\"Counter\":{\"state\":\"Counting\",\"payload\":{\"n\":%lu}}}", total);
    CHECK_STATE(d, expected);
    uf_dispatcher_free(d);
}

/* ---- 3. The thread-local last error stays on its own thread ---- */

static void *fail_on_another_thread(void *arg) {
    (void)arg;
    if (uf_last_status() != 0 || strcmp(uf_last_error(), "") != 0) problem("a new thread starts with an error", uf_last_error());
    uf_submit(NULL, "{}");
    if (uf_last_status() != UF_EINVAL) problem("the failure was not recorded", uf_last_error());
    return NULL;
}

static void last_errors_are_per_thread(void) {
    CHECK_ERROR(uf_submit(NULL, "[]"), UF_EINVAL, "uf_submit: dispatcher is NULL");
    uf_dispatcher *local = check_dispatcher(NULL, NULL);
    CHECK_STATUS(uf_submit(local, "{"), UF_EJSON);
    const char *before = uf_last_error();
    char saved[256];
    snprintf(saved, sizeof saved, "%s", before);
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, fail_on_another_thread, NULL) == 0);
    pthread_join(thread, NULL);
    CHECK_STATUS(uf_last_status(), UF_EJSON);
    CHECK_STR(uf_last_error(), saved);
    uf_dispatcher_free(local);
}

/* ---- uf_dispatch_try never waits for another thread ----
 * A holder thread parks inside a subscriber (so it is processing); meanwhile this
 * thread's uf_dispatch_try answers UF_EBUSY at once, does nothing, releases its
 * via payload and leaves the last error alone; once the holder is done it works. */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int parked, released;

static int park(const uf_mutation *m, void *payload) {
    (void)payload;
    if (strcmp(uf_mutation_new_state(m), "On") != 0) return UF_KEEP;
    pthread_mutex_lock(&park_lock);
    parked = 1;
    pthread_cond_broadcast(&park_cond);
    while (!released) pthread_cond_wait(&park_cond, &park_lock);
    pthread_mutex_unlock(&park_lock);
    /* On the processing thread, uf_dispatch_try queues like uf_dispatch. */
    uf_action off = UF_ACTION_INIT;
    off.kind = UF_ACTION_TRANSITION;
    off.feature = "Busy";
    off.into = "Off";
    if (uf_dispatch_try(uf_mutation_dispatcher(m), &off) != UF_QUEUED) problem("uf_dispatch_try inside a callback", "not UF_QUEUED");
    return UF_KEEP;
}

static void *hold(void *arg) {
    int status = uf_submit((uf_dispatcher *)arg, "{\"kind\":\"transition\",\"feature\":\"Busy\",\"into\":\"On\"}");
    if (status != UF_OK) problem("holder", uf_status_name(status));
    return NULL;
}

static int never_runs(uf_context *ctx, void *payload) {
    (void)ctx;
    (void)payload;
    problem("uf_dispatch_try", "ran a via while busy");
    return 0;
}

static void dispatch_try_does_not_wait(void) {
    uf_dispatcher *busy = check_dispatcher(NULL, "{\"feature\":\"Busy\",\"states\":{\"Off\":{},\"On\":{}}}");
    CHECK_STATUS(uf_submit(busy, "{\"kind\":\"initialize\",\"feature\":\"Busy\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_subscribe(busy, NULL, park, NULL, NULL, NULL), UF_OK);
    pthread_t holder;
    REQUIRE(pthread_create(&holder, NULL, hold, busy) == 0);
    pthread_mutex_lock(&park_lock);
    while (!parked) pthread_cond_wait(&park_cond, &park_lock);
    pthread_mutex_unlock(&park_lock);

    uf_submit(NULL, "{}"); /* a last error to compare with */
    int freed = 0;
    uf_action on = UF_ACTION_INIT;
    on.kind = UF_ACTION_TRANSITION;
    on.feature = "Busy";
    on.into = "On";
    on.same = 1;
    CHECK_STATUS(uf_dispatch_try(busy, &on), UF_EBUSY);
    on.via = never_runs;
    on.via_payload = &freed;
    on.via_payload_free = check_count_free;
    CHECK_STATUS(uf_dispatch_try(busy, &on), UF_EBUSY);
    CHECK(freed == 1);
    CHECK_STR(uf_last_error(), "uf_submit: dispatcher is NULL");
    CHECK_STR(uf_status_name(UF_EBUSY), "UF_EBUSY");
    CHECK_STR(uf_strerror(UF_EBUSY), "the dispatcher is processing on another thread; nothing was done");

    pthread_mutex_lock(&park_lock);
    released = 1;
    pthread_cond_broadcast(&park_cond);
    pthread_mutex_unlock(&park_lock);
    REQUIRE(pthread_join(holder, NULL) == 0);
    /* The holder's cascade ran its queued action: Off again. Now idle, it works. */
    CHECK_STATE(busy, "{\"Busy\":{\"state\":\"Off\",\"payload\":{}}}");
    on.via = NULL;
    on.via_payload_free = NULL;
    on.same = 0;
    released = 0;
    CHECK_STATUS(uf_unsubscribe(busy, 1), UF_OK);
    CHECK_STATUS(uf_dispatch_try(busy, &on), UF_OK);
    CHECK_STATE(busy, "{\"Busy\":{\"state\":\"On\",\"payload\":{}}}");
    uf_dispatcher_free(busy);
}

int main(void) {
    const char *actions = getenv("UNIFLOW_THREAD_ACTIONS");
    if (actions != NULL) {
        char *end = NULL;
        actions_per_thread = strtol(actions, &end, 10);
        REQUIRE(end != actions && *end == '\0' && actions_per_thread > 0);
    }
    dispatch_try_does_not_wait();
    four_threads_flipping_a_toggle_lose_nothing();
    four_threads_incrementing_a_counter_lose_nothing();
    last_errors_are_per_thread();
    CHECK(problems == 0);
    return check_summary();
}
