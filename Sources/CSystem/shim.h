#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <malloc.h>
#include <pthread.h>
#include <features.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
#include <sys/single_threaded.h>
#endif

// A pause in a spin-wait loop (Dispatcher.enter): it tells the core that the loop
// only waits, which saves power and lets a sibling hardware thread run.
static inline void uniflow_spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

// Whether the process has only ever had one thread (glibc 2.32 and later; false
// where that is not known): then no other thread can hold a dispatcher's mutex.
static inline _Bool uniflow_single_threaded(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    return __libc_single_threaded != 0;
#else
    return 0;
#endif
}

// Whether a mutex looks unlocked, read without taking it (a spinning waiter's test
// before it tries the lock).
static inline _Bool uniflow_mutex_looks_free(pthread_mutex_t *m) {
#if defined(__GLIBC__)
    return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0;
#else
    (void)m;
    return 1;
#endif
}
