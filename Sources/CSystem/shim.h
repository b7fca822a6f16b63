#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
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

// The calling thread's identity, as a dispatcher records its owner: never 0, and
// distinct for every live thread. Every dispatch reads it, so where the compiler
// has it this is the thread pointer itself, one register read (on x86-64 glibc the
// same value pthread_self returns), instead of a call to pthread_self through the
// PLT. All of the owner's reads and writes go through here, so the two forms are
// never compared with each other.
static inline __attribute__((always_inline)) uintptr_t uniflow_thread_id(void) {
#if defined(__has_builtin) && (defined(__x86_64__) || defined(__aarch64__))
#if __has_builtin(__builtin_thread_pointer)
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
#else
    return (uintptr_t)pthread_self();
#endif
}

// A dispatcher's lock: one word, 0 when free, 1 when held, 2 when held and a
// thread may be sleeping on it (the classic three-state futex lock). It is
// written here rather than taken from pthread because a dispatch takes and
// releases it on every call: these are a few instructions where
// pthread_mutex_lock and _unlock cost about fifty (bench/README.md).

// Takes the free lock without an atomic operation: only for a process that has
// only ever had one thread, where nothing else can hold or want it.
static inline __attribute__((always_inline)) void uniflow_lock_take_alone(uint32_t *word) {
    __atomic_store_n(word, 1, __ATOMIC_RELAXED);
}

// Takes the lock if it is free; false (having done nothing) otherwise.
static inline __attribute__((always_inline)) _Bool uniflow_lock_try(uint32_t *word) {
    uint32_t expected = 0;
    return __atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

// Whether the lock looks free, read without taking it (a spinning waiter's test
// before it tries the lock: trying writes the word's cache line).
static inline __attribute__((always_inline)) _Bool uniflow_lock_looks_free(uint32_t *word) {
    return __atomic_load_n(word, __ATOMIC_RELAXED) == 0;
}

// Sleeps until the lock is free, then takes it. Marking the word 2 first tells
// the holder that someone may sleep, so that its release wakes one.
static inline void uniflow_lock_take_sleeping(uint32_t *word) {
    while (__atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE) != 0)
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

// Wakes up to `count` threads sleeping on `word` (the lock's sleepers, or the
// timer thread's wake-up count).
static inline void uniflow_futex_wake(uint32_t *word, int count) {
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

// Releases the lock, and wakes a sleeper if one may be waiting. In a process
// that has only ever had one thread, nobody can be: a plain store does.
static inline __attribute__((always_inline)) void uniflow_lock_release(uint32_t *word) {
    if (uniflow_single_threaded()) {
        __atomic_store_n(word, 0, __ATOMIC_RELEASE);
    } else if (__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) == 2) {
        uniflow_futex_wake(word, 1);
    }
}

// Sleeps while `*word` is `expected`, until `deadline` (CLOCK_MONOTONIC; NULL:
// no deadline), a wake-up, or a signal. The kernel compares the word as it
// queues the sleeper, so a wake-up that changed it before cannot be missed.
static inline void uniflow_futex_wait(uint32_t *word, uint32_t expected, const struct timespec *deadline) {
    // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time; FUTEX_WAIT a relative one.
    syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, deadline, NULL, FUTEX_BITSET_MATCH_ANY);
}

// The count a sleeper compares against, read before it lets go of the lock.
static inline uint32_t uniflow_atomic_load(uint32_t *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

// Adds one to a wake-up count.
static inline void uniflow_atomic_increment(uint32_t *word) {
    __atomic_fetch_add(word, 1, __ATOMIC_RELEASE);
}

// A clock's reading in nanoseconds. In C, so that a Swift function that arms a
// timer keeps no address-taken local (which costs it a stack-protector check).
static inline uint64_t uniflow_clock_nanoseconds(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
