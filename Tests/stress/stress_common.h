/*
 * stress_common.h — what the stress programs share: the clock, short pauses,
 * per-thread random numbers, numbers read from the environment, and a run that
 * goes on until every kind of event it checks has happened (counting work, not
 * seconds, so that a busy machine cannot fail it). A program defines STRESS_NAME
 * (its name, for messages) before including it.
 */
#ifndef STRESS_COMMON_H
#define STRESS_COMMON_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef STRESS_NAME
#error "define STRESS_NAME before including stress_common.h"
#endif

/* Seconds on the monotonic clock. */
static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* xorshift, one state per thread. */
static inline uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A number from `low` to `high` from the environment, or `fallback` when unset;
 * anything else ends the program (a typo must not run a campaign nobody asked for). */
static inline double env_number(const char *name, double fallback, double low, double high) {
    const char *env = getenv(name);
    if (!env || !*env) return fallback;
    char *end;
    double value = strtod(env, &end);
    if (*end || !(value >= low && value <= high)) {
        fprintf(stderr, STRESS_NAME ": %s=%s: expected a number from %g to %g\n", name, env, low, high);
        exit(2);
    }
    return value;
}

/* A kind of event a run must see, and what to say when it never happened. */
struct coverage {
    atomic_ulong *count;
    const char *missing;
};

/* The first kind of `n` that has not happened yet, or NULL. */
static inline const char *first_missing(const struct coverage *kinds, int n) {
    for (int i = 0; i < n; ++i)
        if (atomic_load(kinds[i].count) == 0) return kinds[i].missing;
    return NULL;
}

/* The run: `seconds` at least, then on until `missing()` says every kind of event
 * has happened, but not past `cap`. Returns the seconds it ran; *waited_for is
 * the last kind still missing once `seconds` were over (NULL: none). */
static inline double run_until_covered(double started, double seconds, double cap,
                                       const char *(*missing)(void), const char **waited_for) {
    *waited_for = NULL;
    for (;;) {
        double ran = now() - started;
        const char *still = missing();
        if (ran >= seconds && still) *waited_for = still;
        if ((ran >= seconds && !still) || ran >= cap) return ran;
        pause_ms(5);
    }
}

#endif
