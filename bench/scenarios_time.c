/*
 * scenarios_time.c — timers and the host's loop (issue 13's speed and memory
 * targets, bench/README.md's group 6).
 *
 *   uf_submit_after_cancel   uf_submit_after + uf_timer_cancel of the toggle text
 *                            uf_submit_toggle submits (target: 1.5x that row)
 *   uf_untimed_toggle        a toggle between two states, neither with a timer
 *   uf_timed_toggle          the same where B has an `after` timer: every other
 *                            transition arms it, the others disarm it (1.3x)
 *   uf_timed_toggle_loop     uf_timed_toggle with the loop's descriptor made: each
 *                            change of the soonest deadline sets its kernel timer
 *                            again, a system call per action (no target)
 *   c_clock_read             one clock_gettime(CLOCK_MONOTONIC): what arming a
 *                            timer of under 4 s must read (no target)
 *   c_clock_read_coarse      one clock_gettime(CLOCK_MONOTONIC_COARSE): what arming
 *                            a longer one reads, uf_timed_toggle's hour among them,
 *                            so that row pays half of it per action (no target)
 *   uf_deferred_1000         uf_short's toggle delivered to a uf_subscribe_deferred
 *                            subscriber by uf_loop_run every 1,000 mutations, per
 *                            mutation (2x uf_short, the direct delivery)
 *   mode mem-timers N        peak RSS per armed anonymous API timer, minus the
 *                            action's text (256 bytes)
 *   mode mem-timers-named N  the same with an id per timer, minus text and id
 *   mode timers-fire N       firing N/10 and N due timers in one uf_clock_advance:
 *                            per timer (linear: 1.5x at most) and in total (1 s)
 *
 * The speed rows use "timers": "host" on the monotonic clock, with timers an hour
 * away that never fall due during a run. Not the default timer thread: the
 * action scenarios share one process that must stay single-threaded (bench.h).
 * Arming and disarming cost the same either way as long as nothing falls due:
 * the thread is woken only for a deadline sooner than the one it waits for,
 * and no loop descriptor exists to update (uf_deferred_1000 makes one, as a
 * host with a loop would).
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Far enough that nothing armed during a run falls due: an hour. */
enum { FAR_MS = 3600000 };

/* --------------------------------------------------- arming and cancelling */

static const char *host_timers = "{\"timers\":\"host\"}";

static void setup_submit_after_cancel(scenario *s) {
    setup_realistic_dispatcher(s, host_timers);
    s->json[0] = toggle_json[0];
    s->json[1] = toggle_json[1];
}

/* Arms the toggle text under one id and cancels it: nothing is ever applied. */
static void run_submit_after_cancel(scenario *s, long n) {
    for (long i = 0; i < n; ++i) {
        int status = uf_submit_after(s->d, s->json[s->phase], FAR_MS, "bench", 0);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "uf_submit_after");
        status = uf_timer_cancel(s->d, "bench");
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "uf_timer_cancel");
        s->phase ^= 1;
    }
    s->extra += (uint64_t)n;
}

static void expect_timers(scenario *s, const char *expected) {
    char *timers = NULL;
    check_status(uf_timers_get(s->d, &timers), UF_OK, "uf_timers_get");
    if (strcmp(timers, expected) != 0) die("%s: timers %s, expected %s", s->name, timers, expected);
    uf_free(timers);
}

static void check_submit_after_cancel(scenario *s) {
    expect_timers(s, "[]");
    if (s->notified != 0) die("%s: a cancelled timer fired", s->name);
}

/* ------------------------------------------------------------ the clock */

/* What a deadline costs to know: the clock read that arming a timer cannot do
 * without (its deadline counts from now). The sum keeps the calls. */
static void read_clock(scenario *s, long n, clockid_t clock) {
    uint64_t sum = 0;
    for (long i = 0; i < n; ++i) {
        struct timespec now;
        clock_gettime(clock, &now);
        sum += (uint64_t)now.tv_nsec;
    }
    s->extra += sum & 1;
}

/* A delay under 4 s counts from the precise clock, a longer one from the coarse
 * clock (a thousand of its ticks or more). */
static void run_clock_read(scenario *s, long n) { read_clock(s, n, CLOCK_MONOTONIC); }
static void run_clock_read_coarse(scenario *s, long n) { read_clock(s, n, CLOCK_MONOTONIC_COARSE); }

static void setup_clock_read(scenario *s) { (void)s; }

/* ----------------------------------------------------------- state timers */

static const char *timed_definition =
    "{\"feature\":\"Timed\",\"states\":{\"A\":{},\"B\":{\"after\":[{\"ms\":3600000,"
    "\"scenario\":\"Back to A after an hour\","
    "\"submit\":[{\"kind\":\"transition\",\"feature\":\"Timed\",\"from\":\"B\",\"into\":\"A\"}]}]}}}";
static const char *untimed_definition = "{\"feature\":\"Timed\",\"states\":{\"A\":{},\"B\":{}}}";

static void setup_timed_with(scenario *s, const char *definition) {
    s->d = new_dispatcher(host_timers);
    check_status(uf_register(s->d, definition), UF_OK, "register Timed");
    subscribe_counter(s->d, "AnyMutationOf<Timed>", &s->notified);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"Timed\",\"into\":\"A\"}");
    set_toggle(s, "Timed", "A", "B");
}

static void setup_untimed_toggle(scenario *s) { setup_timed_with(s, untimed_definition); }
static void setup_timed_toggle(scenario *s) { setup_timed_with(s, timed_definition); }

/* A host with a loop: the same, with the loop's descriptor made. */
static void setup_timed_toggle_loop(scenario *s) {
    setup_timed_with(s, timed_definition);
    int fd = -1;
    check_status(uf_loop_fd(s->d, &fd), UF_OK, "uf_loop_fd");
}

/* Without the timer nothing is ever armed; with it, in A nothing is armed, in B
 * exactly B's timer. */
static void check_untimed_toggle(scenario *s) { expect_timers(s, "[]"); }

static void check_timed_toggle(scenario *s) {
    char *timers = NULL;
    check_status(uf_timers_get(s->d, &timers), UF_OK, "uf_timers_get");
    int armed = strstr(timers, "\"Timed.B.after[0]\"") != NULL;
    if (armed != s->phase || (!armed && strcmp(timers, "[]") != 0))
        die("%s: in %s, timers %s", s->name, s->phase ? "B" : "A", timers);
    uf_free(timers);
}

/* -------------------------------------------------------- deferred delivery */

enum { DEFERRED_BATCH = 1000 };

/* uf_short's feature and toggle, its subscriber deferred; a host with a loop
 * ("timers": "host", the loop's descriptor made). */
static void setup_deferred(scenario *s) {
    s->d = new_dispatcher(host_timers);
    check_status(uf_register(s->d, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}}}"), UF_OK, "register T");
    check_status(uf_subscribe_deferred(s->d, "AnyMutationOf<T>", count_mutation, &s->notified, NULL, NULL), UF_OK,
                 "uf_subscribe_deferred");
    int fd = -1;
    check_status(uf_loop_fd(s->d, &fd), UF_OK, "uf_loop_fd");
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    check_status(uf_loop_run(s->d, NULL), UF_OK, "uf_loop_run");
    set_toggle(s, "T", "A", "B");
}

/* Toggles in batches of 1,000, each delivered by one uf_loop_run. */
static void run_deferred(scenario *s, long n) {
    for (long left = n; left > 0;) {
        long k = left < DEFERRED_BATCH ? left : DEFERRED_BATCH;
        for (long i = 0; i < k; ++i) {
            int status = uf_dispatch(s->d, &s->act[s->phase]);
            if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, s->name);
            s->phase ^= 1;
        }
        uint64_t done = 0;
        int status = uf_loop_run(s->d, &done);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "uf_loop_run");
        if (__builtin_expect(done != (uint64_t)k, 0)) die("%s: uf_loop_run delivered %llu of %ld", s->name,
                                                          (unsigned long long)done, k);
        left -= k;
    }
    s->applied += (uint64_t)n;
}

static void check_deferred(scenario *s) {
    int timeout = 0;
    check_status(uf_loop_timeout(s->d, &timeout), UF_OK, "uf_loop_timeout");
    if (timeout != -1) die("%s: uf_loop_timeout %d after the last uf_loop_run, expected -1", s->name, timeout);
}

static scenario scenarios[] = {
    SCENARIO_CHECKED("uf_submit_after_cancel", "uf_submit_after + uf_timer_cancel of uf_submit_toggle's text",
                     setup_submit_after_cancel, run_submit_after_cancel, check_submit_after_cancel),
    SCENARIO("c_clock_read", "clock_gettime(CLOCK_MONOTONIC), what arming a timer under 4 s reads",
             setup_clock_read, run_clock_read),
    SCENARIO("c_clock_read_coarse", "clock_gettime(CLOCK_MONOTONIC_COARSE), what arming a longer one reads",
             setup_clock_read, run_clock_read_coarse),
    SCENARIO_CHECKED("uf_untimed_toggle", "uf_dispatch toggle Timed: A<->B, no timer", setup_untimed_toggle,
                     run_dispatch_toggle, check_untimed_toggle),
    SCENARIO_CHECKED("uf_timed_toggle", "the same, B has an after timer (armed, disarmed)", setup_timed_toggle,
                     run_dispatch_toggle, check_timed_toggle),
    SCENARIO_CHECKED("uf_timed_toggle_loop", "the same, the loop's descriptor made", setup_timed_toggle_loop,
                     run_dispatch_toggle, check_timed_toggle),
    SCENARIO_CHECKED("uf_deferred_1000", "uf_short's toggle, deferred subscriber, uf_loop_run every 1,000",
                     setup_deferred, run_deferred, check_deferred),
};
scenario *const time_scenarios = scenarios;
const int time_scenario_count = COUNT_OF(scenarios);

/* ------------------------------------------------------------ memory */

static const char *timer_action = "{\"kind\":\"transition\",\"feature\":\"T\",\"from\":\"A\",\"into\":\"B\"}";

enum { ID_STRIDE = 32 };

/* Peak RSS growth for `count` armed API timers (manual clock: none fires), each
 * the same JSON action, anonymous or with an id of its own; the text (and the
 * id) each timer was given is subtracted. */
static int run_memory_timers(long count, int named) {
    uf_dispatcher *d = new_dispatcher("{\"clock\":\"manual\"}");
    check_status(uf_register(d, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}}}"), UF_OK, "register T");
    submit(d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    /* Warm up what is allocated once: the store, the id table. */
    check_status(uf_submit_after(d, timer_action, FAR_MS, "warm", 0), UF_OK, "warm-up timer");
    check_status(uf_timer_cancel(d, "warm"), UF_OK, "warm-up cancel");
    char *ids = NULL;
    double id_bytes = 0;
    if (named) {
        ids = malloc((size_t)count * ID_STRIDE);
        if (!ids) die("out of memory");
        for (long i = 0; i < count; ++i) {
            snprintf(ids + i * ID_STRIDE, ID_STRIDE, "timer-%ld", i);
            id_bytes += (double)strlen(ids + i * ID_STRIDE);
        }
    }
    long h0 = status_kb("VmHWM");
    for (long i = 0; i < count; ++i) {
        int status = uf_submit_after(d, timer_action, FAR_MS + (uint64_t)i, named ? ids + i * ID_STRIDE : NULL, 0);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "uf_submit_after");
    }
    long h1 = status_kb("VmHWM");
    char *timers = NULL;
    check_status(uf_timers_get(d, &timers), UF_OK, "uf_timers_get");
    long listed = 0;
    for (const char *p = timers; (p = strstr(p, "\"due_in_ms\"")); ++p) ++listed;
    if (listed != count) die("mem-timers: %ld timers listed, %ld armed", listed, count);
    uf_free(timers);
    print_memory(named ? "api_timer_named" : "api_timer", h0, h1, count,
                 (double)strlen(timer_action) + id_bytes / (double)count);
    uf_dispatcher_free(d);
    free(ids);
    return 0;
}

static int mode_mem_timers(const mode_args *a) { return run_memory_timers(a->count ? a->count : 100000, 0); }
static int mode_mem_timers_named(const mode_args *a) { return run_memory_timers(a->count ? a->count : 100000, 1); }

/* -------------------------------------------------------- firing many timers */

/* Arms `count` API timers due at 1..count ms in a scattered order (timer i at
 * 1 + (i * 7919) % count), each toggling T (odd deadlines into B, even ones back
 * into A), then fires them all with one uf_clock_advance. Returns the advance's
 * nanoseconds. */
static double fire_timers(long count) {
    if (count % 7919 == 0) die("timers-fire: the count must not be a multiple of 7919");
    uf_dispatcher *d = new_dispatcher("{\"clock\":\"manual\"}");
    check_status(uf_register(d, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}}}"), UF_OK, "register T");
    uint64_t notified = 0;
    subscribe_counter(d, "AnyMutationOf<T>", &notified);
    submit(d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    static const char *forward = "{\"kind\":\"transition\",\"feature\":\"T\",\"from\":\"A\",\"into\":\"B\"}";
    static const char *back = "{\"kind\":\"transition\",\"feature\":\"T\",\"from\":\"B\",\"into\":\"A\"}";
    for (long i = 0; i < count; ++i) {
        long due = 1 + (long)(((unsigned long long)i * 7919ULL) % (unsigned long long)count);
        check_status(uf_submit_after(d, due % 2 ? forward : back, (uint64_t)due, NULL, 0), UF_OK, "uf_submit_after");
    }
    notified = 0;
    double t0 = now_ns();
    check_status(uf_clock_advance(d, (uint64_t)count), UF_OK, "uf_clock_advance");
    double ns = now_ns() - t0;
    if (notified != (uint64_t)count) die("timers-fire: %ld timers fired, %llu mutations", count,
                                         (unsigned long long)notified);
    char *timers = NULL, *state = NULL;
    check_status(uf_timers_get(d, &timers), UF_OK, "uf_timers_get");
    if (strcmp(timers, "[]") != 0) die("timers-fire: still armed after the advance: %.200s", timers);
    check_status(uf_feature_get(d, "T", &state), UF_OK, "uf_feature_get");
    const char *expected = count % 2 ? "{\"state\":\"B\",\"payload\":{}}" : "{\"state\":\"A\",\"payload\":{}}";
    if (strcmp(state, expected) != 0) die("timers-fire: T is %s, expected %s", state, expected);
    uf_free(timers);
    uf_free(state);
    uf_dispatcher_free(d);
    return ns;
}

static int mode_timers_fire(const mode_args *a) {
    long large = a->count ? a->count : 100000, small = large / 10;
    char small_name[64], large_name[64], total_name[64];
    snprintf(small_name, sizeof small_name, "timers_fire_%ld", small);
    snprintf(large_name, sizeof large_name, "timers_fire_%ld", large);
    snprintf(total_name, sizeof total_name, "timers_fire_%ld_total", large);
    fire_timers(small); /* warm-up */
    for (int rep = 0; rep < a->reps; ++rep) {
        print_sample(small_name, rep, fire_timers(small) / (double)small, small);
        double ns = fire_timers(large);
        print_sample(large_name, rep, ns / (double)large, large);
        print_metric(total_name, ns / 1e6, "ms");
    }
    printf("{\"check\":\"timers-fire\",\"fired\":%ld,\"ok\":true}\n", (long)a->reps * (small + large));
    return 0;
}

static const bench_mode modes[] = {
    {"mem-timers", "N: peak RSS per armed anonymous API timer, beyond its action's text (default 100,000)",
     mode_mem_timers},
    {"mem-timers-named", "N: the same, each timer with its own id, beyond text and id", mode_mem_timers_named},
    {"timers-fire", "N: one uf_clock_advance firing N/10 and N due timers (default 100,000), --reps times",
     mode_timers_fire},
};
const bench_mode *const time_modes = modes;
const int time_mode_count = COUNT_OF(modes);
