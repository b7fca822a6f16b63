/*
 * baseline.h — the hand-written C state machines libuniflow is measured against.
 *
 * Compiled in their own translation unit (baseline.c) so that the compiler cannot
 * inline the machine into the benchmark loop or devirtualize the callback: the
 * benchmark pays a real call, a state check, a store and an indirect call, which
 * is the least work a library doing the same job could do.
 */
#ifndef UNIFLOW_BENCH_BASELINE_H
#define UNIFLOW_BENCH_BASELINE_H

#include <pthread.h>

enum { C_MACHINE_FEATURES = 8 };

/* Called after every applied transition, like a uf_subscriber_fn. */
typedef int (*c_machine_cb)(int feature, int old_state, int new_state, void *payload);

typedef struct c_machine {
    pthread_mutex_t lock;       /* used by c_machine_transition_locked only */
    int state[C_MACHINE_FEATURES];
    c_machine_cb cb;
    void *payload;
} c_machine;

void c_machine_init(c_machine *m, c_machine_cb cb, void *payload);
void c_machine_destroy(c_machine *m);

/* Moves `feature` from `from` into `into` if it is in `from` and calls the
 * callback; returns 0, or -1 (rejected) when it is in another state. The locked
 * variant holds a pthread mutex around the check, the store and the callback (a
 * thread-safe machine); the bare one does not (the floor). */
int c_machine_transition_locked(c_machine *m, int feature, int from, int into);
int c_machine_transition_bare(c_machine *m, int feature, int from, int into);

#endif
