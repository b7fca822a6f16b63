/* baseline.c — see baseline.h. */
#include "baseline.h"

#include <string.h>

void c_machine_init(c_machine *m, c_machine_cb cb, void *payload) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    m->cb = cb;
    m->payload = payload;
}

void c_machine_destroy(c_machine *m) { pthread_mutex_destroy(&m->lock); }

__attribute__((noinline))
int c_machine_transition_locked(c_machine *m, int feature, int from, int into) {
    pthread_mutex_lock(&m->lock);
    if (m->state[feature] != from) {
        pthread_mutex_unlock(&m->lock);
        return -1;
    }
    m->state[feature] = into;
    m->cb(feature, from, into, m->payload);
    pthread_mutex_unlock(&m->lock);
    return 0;
}

__attribute__((noinline))
int c_machine_transition_bare(c_machine *m, int feature, int from, int into) {
    if (m->state[feature] != from) return -1;
    m->state[feature] = into;
    m->cb(feature, from, into, m->payload);
    return 0;
}
