/*
 * test_time.c — time on the real clock (docs/time.md): the library's timer
 * thread (and its wake-up by a sooner timer), freeing a dispatcher while it
 * fires, a poll() loop on uf_loop_fd with host timers, a forked child,
 * timers when the journal cannot be written, a timer thread that cannot start,
 * and a loop descriptor that cannot be made.
 *
 * Every wait has a generous limit (5 s) and ends as soon as what it waits for
 * happens; the only fixed sleeps are a callback that holds the timer thread for
 * 100 ms, a 150 ms check that nothing fires after uf_dispatcher_free, and 30 ms
 * for the timer thread to fall asleep before a sooner timer is armed.
 */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const char *const toggle = "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}}";
static const char *const init_off = "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}";
static const char *const to_on = "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}";
static const char *const to_off = "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}";

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* The threads of this process (/proc/self/task). */
static int thread_count(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -1;
    int n = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) n += entry->d_name[0] != '.';
    closedir(dir);
    return n;
}

/* ---- What callbacks on the timer thread saw, read by main under a lock ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct {
    int calls;          /* subscriber calls */
    int entered, left;  /* the slow subscriber's progress */
    int freed;          /* payload_free calls */
    int freed_after_left;
    int off_main_thread;
    int free_status;    /* what uf_dispatcher_free inside a callback left */
    char free_error[256];
    long long fired_at;
} seen;
static pthread_t main_thread;

static void reset_seen(void) {
    pthread_mutex_lock(&lock);
    memset(&seen, 0, sizeof seen);
    pthread_mutex_unlock(&lock);
}

/* Waits until *field reaches at least `value`, for at most 5 s. */
static int wait_for(const int *field, int value) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&lock);
    while (*field < value) {
        if (pthread_cond_timedwait(&changed, &lock, &until) == ETIMEDOUT) break;
    }
    int reached = *field >= value;
    pthread_mutex_unlock(&lock);
    return reached;
}

static int read_seen(const int *field) {
    pthread_mutex_lock(&lock);
    int value = *field;
    pthread_mutex_unlock(&lock);
    return value;
}

static int note_call(const uf_mutation *m, void *payload) {
    (void)m;
    (void)payload;
    pthread_mutex_lock(&lock);
    ++seen.calls;
    seen.off_main_thread = !pthread_equal(pthread_self(), main_thread);
    seen.fired_at = now_ms();
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return UF_KEEP;
}

static void note_free(void *payload) {
    (void)payload;
    pthread_mutex_lock(&lock);
    ++seen.freed;
    seen.freed_after_left = seen.left;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

/* ---- 1. The timer thread fires a short timer ---- */

static void the_timer_thread_fires_a_short_timer(void) {
    reset_seen();
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    int threads = thread_count();
    CHECK_STATUS(uf_submit(d, init_off), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "TransitionInto<Toggle.On>", note_call, NULL, note_free, NULL), UF_OK);
    /* No timer yet, no thread. */
    CHECK(thread_count() == threads);
    long long armed = now_ms();
    CHECK_STATUS(uf_submit_after(d, to_on, 50, "soon", 0), UF_OK);
    /* The first timer armed starts the thread (a sanitizer may start one of its
     * own at the first pthread_create: at least one more). */
    int with_timer_thread = thread_count();
    CHECK(with_timer_thread >= threads + 1);
    CHECK(wait_for(&seen.calls, 1));
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}");
    CHECK(read_seen(&seen.off_main_thread));
    pthread_mutex_lock(&lock);
    long long waited = seen.fired_at - armed;
    pthread_mutex_unlock(&lock);
    /* Not early (the clock counts whole ms, so 49 at worst), not absurdly late. */
    CHECK(waited >= 49 && waited < 5000);
    char *timers = NULL;
    CHECK_STATUS(uf_timers_get(d, &timers), UF_OK);
    CHECK_STR(timers, "[]");
    uf_free(timers);
    uf_dispatcher_free(d);
    CHECK(read_seen(&seen.freed) == 1);
    /* The thread is gone with the dispatcher (joined; the kernel may list it a
     * moment longer). */
    long long start = now_ms();
    while (thread_count() != with_timer_thread - 1 && now_ms() - start < 5000) sleep_ms(1);
    CHECK(thread_count() == with_timer_thread - 1);
}

/* ---- 1b. A sooner timer wakes the sleeping timer thread ---- */

static void a_sooner_timer_wakes_the_sleeping_timer_thread(void) {
    reset_seen();
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_submit(d, init_off), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "TransitionInto<Toggle.On>", note_call, NULL, note_free, NULL), UF_OK);
    /* The thread starts, and sleeps until this one: an hour away. */
    CHECK_STATUS(uf_submit_after(d, to_on, 3600 * 1000, "hour", 0), UF_OK);
    sleep_ms(30);
    /* Armed while it sleeps: unless the arming wakes it, this one waits an hour too. */
    long long armed = now_ms();
    CHECK_STATUS(uf_submit_after(d, to_on, 20, "soon", 0), UF_OK);
    CHECK(wait_for(&seen.calls, 1));
    long long waited = now_ms() - armed;
    CHECK(waited >= 19 && waited < 5000);
    char *timers = NULL;
    CHECK_STATUS(uf_timers_get(d, &timers), UF_OK);
    CHECK(strstr(timers, "\"hour\"") != NULL && strstr(timers, "\"soon\"") == NULL);
    uf_free(timers);
    uf_dispatcher_free(d);
    CHECK(read_seen(&seen.freed) == 1);
}

/* ---- 2. Freeing while the timer thread fires ---- */

static int slow_subscriber(const uf_mutation *m, void *payload) {
    (void)payload;
    pthread_mutex_lock(&lock);
    ++seen.calls;
    int first = seen.calls == 1;
    seen.entered = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    if (first) {
        /* Hold the thread while main frees; arm more on the way: a zero-delay
         * chain (due at once) and a later timer. */
        uf_submit_after(uf_mutation_dispatcher(m), to_off, 0, "chain", 0);
        uf_submit_after(uf_mutation_dispatcher(m), to_on, 20, "later", 0);
        sleep_ms(100);
    }
    pthread_mutex_lock(&lock);
    seen.left = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return UF_KEEP;
}

static void freeing_while_the_timer_thread_fires_waits_for_it(void) {
    reset_seen();
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_submit(d, init_off), UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, slow_subscriber, NULL, note_free, NULL), UF_OK);
    CHECK_STATUS(uf_submit_after(d, to_on, 10, NULL, 0), UF_OK);
    CHECK(wait_for(&seen.entered, 1));
    uf_dispatcher_free(d);
    /* free waited for the firing under way, and fired nothing more: neither the
     * zero-delay timer it armed nor the one that fell due while it slept. */
    pthread_mutex_lock(&lock);
    int calls = seen.calls, left = seen.left, freed = seen.freed, after = seen.freed_after_left;
    pthread_mutex_unlock(&lock);
    CHECK(left == 1);
    CHECK(calls == 1);
    CHECK(freed == 1);
    CHECK(after == 1);
    /* Nothing fires after free returned. */
    sleep_ms(150);
    CHECK(read_seen(&seen.calls) == 1);
    CHECK(read_seen(&seen.freed) == 1);
}

/* ---- 3. Freeing from inside a timer-caused callback ---- */

static int free_inside(const uf_mutation *m, void *payload) {
    (void)payload;
    uf_dispatcher_free(uf_mutation_dispatcher(m));
    pthread_mutex_lock(&lock);
    seen.free_status = uf_last_status();
    snprintf(seen.free_error, sizeof seen.free_error, "%s", uf_last_error());
    ++seen.calls;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return UF_KEEP;
}

static void freeing_inside_a_timer_caused_callback_is_misuse(void) {
    reset_seen();
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_submit(d, init_off), UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, free_inside, NULL, note_free, NULL), UF_OK);
    CHECK_STATUS(uf_submit_after(d, to_on, 5, NULL, 0), UF_OK);
    CHECK(wait_for(&seen.calls, 1));
    pthread_mutex_lock(&lock);
    CHECK_STATUS(seen.free_status, UF_EMISUSE);
    CHECK_STR(seen.free_error, "uf_dispatcher_free called from inside one of the dispatcher's callbacks; free it after the outer call returns");
    pthread_mutex_unlock(&lock);
    /* The dispatcher lives on. */
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}");
    CHECK(read_seen(&seen.freed) == 0);
    uf_dispatcher_free(d);
    CHECK(read_seen(&seen.freed) == 1);
}

/* ---- 4. A poll() loop ---- */

static int readable(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static int record_state(const uf_mutation *m, void *payload) {
    check_list_add((check_list *)payload, uf_mutation_new_state(m));
    return UF_KEEP;
}

static void *submit_later(void *arg) {
    sleep_ms(30);
    uf_submit((uf_dispatcher *)arg, to_on);
    return NULL;
}

/* The host's loop: wait as uf_loop_timeout says (at most 5 s in all), run the
 * loop's work, until `until` holds. Returns how many times poll woke. */
static int run_poll_loop(uf_dispatcher *d, int fd, int (*until)(uf_dispatcher *), long long *woke_at) {
    long long start = now_ms();
    int wakes = 0;
    while (!until(d) && now_ms() - start < 5000) {
        int timeout = -2;
        CHECK_STATUS(uf_loop_timeout(d, &timeout), UF_OK);
        if (timeout < 0 || timeout > 5000) timeout = 5000;
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, timeout);
        if (n > 0) ++wakes;
        if (woke_at) *woke_at = now_ms();
        CHECK_STATUS(uf_loop_run(d, NULL), UF_OK);
    }
    return wakes;
}

static int is_on(uf_dispatcher *d) {
    char *json = NULL;
    uf_feature_get(d, "Toggle", &json);
    int on = json && strstr(json, "\"On\"") != NULL;
    uf_free(json);
    return on;
}

static check_list *loop_seen;
static int delivered_twice(uf_dispatcher *d) {
    (void)d;
    return loop_seen->count >= 2;
}

static void a_poll_loop_wakes_for_deliveries_and_host_timers(void) {
    uf_dispatcher *d = check_dispatcher("{\"timers\":\"host\"}", toggle);
    check_list deliveries = {0};
    loop_seen = &deliveries;
    int threads = thread_count();
    int fd = -1;
    CHECK_STATUS(uf_loop_fd(d, &fd), UF_OK);
    REQUIRE(fd >= 0);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    CHECK_STATUS(uf_subscribe_deferred(d, NULL, record_state, &deliveries, NULL, NULL), UF_OK);
    CHECK(!readable(fd));

    /* A delivery: readable, and it stays readable until uf_loop_run did the work. */
    CHECK_STATUS(uf_submit(d, init_off), UF_OK);
    CHECK(readable(fd));
    CHECK(readable(fd));
    CHECK(deliveries.count == 0);
    uint64_t done = 0;
    CHECK_STATUS(uf_loop_run(d, &done), UF_OK);
    CHECK(done == 1);
    CHECK(!readable(fd));
    CHECK_LIST(&deliveries, "Off");

    /* Another thread submits while the loop sleeps in poll: it wakes. */
    pthread_t submitter;
    REQUIRE(pthread_create(&submitter, NULL, submit_later, d) == 0);
    CHECK(run_poll_loop(d, fd, delivered_twice, NULL) >= 1);
    pthread_join(submitter, NULL);
    CHECK_LIST(&deliveries, "Off", "On");

    /* A host timer: poll sleeps as uf_loop_timeout says, then it is due. */
    long long armed = now_ms(), woke = 0;
    CHECK_STATUS(uf_submit_after(d, to_off, 60, "host", 0), UF_OK);
    int timeout = -2;
    CHECK_STATUS(uf_loop_timeout(d, &timeout), UF_OK);
    CHECK(timeout >= 30 && timeout <= 60);
    CHECK(!readable(fd));
    struct pollfd p = {fd, POLLIN, 0};
    CHECK(poll(&p, 1, 5000) == 1);
    woke = now_ms();
    /* Woken by the timer, not before it was due: the timeout was rounded up. */
    CHECK(woke - armed >= 59);
    CHECK_STATUS(uf_loop_timeout(d, &timeout), UF_OK);
    CHECK(timeout == 0);
    /* Nothing fired by itself. */
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}");
    CHECK_STATUS(uf_loop_run(d, &done), UF_OK);
    CHECK(done == 2); /* the timer, and the delivery it caused */
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    CHECK_LIST(&deliveries, "Off", "On", "Off");
    CHECK(!readable(fd));
    CHECK_STATUS(uf_loop_timeout(d, &timeout), UF_OK);
    CHECK(timeout == -1);

    /* A loop that only sleeps as told fires a timer on time. */
    CHECK_STATUS(uf_submit_after(d, to_on, 40, NULL, 0), UF_OK);
    armed = now_ms();
    run_poll_loop(d, fd, is_on, &woke);
    CHECK(is_on(d));
    CHECK(woke - armed >= 39 && woke - armed < 5000);

    /* Host timers never start a thread. */
    CHECK(thread_count() == threads);
    check_list_clear(&deliveries);
    uf_dispatcher_free(d);
}

/* ---- 5. A forked child ---- */

static void count_release(void *payload) { ++*(int *)payload; }
static int ignore_value(const uf_watch_event *w, void *payload) { (void)w; (void)payload; return UF_KEEP; }
static int let_through(uf_intercepted *a, void *payload) { (void)a; (void)payload; return UF_OK; }
static int answer_true(uf_binding_call *call, void *payload) { (void)call; (void)payload; return 1; }
static void ignore_report(const char *report_json, void *payload) { (void)report_json; (void)payload; }
static int let_via_pass(uf_context *ctx, void *payload) { (void)ctx; (void)payload; return UF_OK; }

/* In the child: every call but uf_dispatcher_free is UF_EMISUSE. Returns the
 * number of calls that were not (the child's exit status). */
static int child_checks(uf_dispatcher *d) {
    int bad = 0;
    char *json = NULL;
    uint64_t ms = 0, id = 0;
    int fd = -1, timeout = 0;
#define MISUSE(call, name)                                                                      \
    do {                                                                                        \
        int status_ = (call);                                                                   \
        if (status_ != UF_EMISUSE || strcmp(uf_last_error(), name ": this dispatcher was made " \
                                            "before fork(); in the child it may only be freed")) { \
            fprintf(stderr, "child: %s gave %s: %s\n", name, uf_status_name(status_), uf_last_error()); \
            ++bad;                                                                              \
        }                                                                                       \
    } while (0)
    MISUSE(uf_submit(d, to_on), "uf_submit");
    MISUSE(uf_state_get(d, &json), "uf_state_get");
    MISUSE(uf_submit_after(d, to_on, 0, "x", 0), "uf_submit_after");
    MISUSE(uf_timer_cancel(d, "parent"), "uf_timer_cancel");
    MISUSE(uf_timers_get(d, &json), "uf_timers_get");
    MISUSE(uf_clock_now(d, &ms), "uf_clock_now");
    MISUSE(uf_loop_fd(d, &fd), "uf_loop_fd");
    MISUSE(uf_loop_timeout(d, &timeout), "uf_loop_timeout");
    MISUSE(uf_loop_run(d, NULL), "uf_loop_run");
    MISUSE(uf_snapshot_get(d, &json), "uf_snapshot_get");
    MISUSE(uf_subscribe_deferred(d, NULL, note_call, NULL, NULL, &id), "uf_subscribe_deferred");
    /* A registration refused here still releases its payload, at once. */
    int released = 0;
    MISUSE(uf_subscribe(d, NULL, note_call, &released, count_release, &id), "uf_subscribe");
    MISUSE(uf_subscribe_deferred(d, NULL, note_call, &released, count_release, &id), "uf_subscribe_deferred");
    MISUSE(uf_watch(d, "{\"var\":\"model\"}", ignore_value, &released, count_release, &id), "uf_watch");
    MISUSE(uf_watch_deferred(d, "{\"var\":\"model\"}", ignore_value, &released, count_release, &id),
           "uf_watch_deferred");
    MISUSE(uf_intercept(d, NULL, let_through, &released, count_release, &id), "uf_intercept");
    MISUSE(uf_register_handler(d, "h", answer_true, &released, count_release), "uf_register_handler");
    MISUSE(uf_set_reporter(d, ignore_report, &released, count_release), "uf_set_reporter");
    MISUSE(uf_submit_via(d, to_on, let_via_pass, &released, count_release), "uf_submit_via");
    if (released != 8) {
        fprintf(stderr, "child: 8 refused registrations released %d payloads\n", released);
        ++bad;
    }
#undef MISUSE
    /* Freeing works: no thread to join here, and the subscription's payload_free
     * runs (no thread was inside the dispatcher at the fork). */
    uf_dispatcher_free(d);
    if (seen.freed != 1) {
        fprintf(stderr, "child: payload_free ran %d times\n", seen.freed);
        ++bad;
    }
    return bad;
}

static void a_forked_child_may_only_free_the_parents_dispatcher(void) {
    reset_seen();
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_submit(d, init_off), UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, note_call, NULL, note_free, NULL), UF_OK);
    /* A live timer thread: it has fired once and waits for the next timer, an
     * hour away. That one is armed first: arming it after the firing would wake
     * the thread, which could then hold the dispatcher at the fork (the child
     * would then, rightly, release memory only). */
    CHECK_STATUS(uf_submit_after(d, to_off, 3600000, "parent", 0), UF_OK);
    CHECK_STATUS(uf_submit_after(d, to_on, 1, NULL, 0), UF_OK);
    CHECK(wait_for(&seen.calls, 1));
    /* The thread holds the dispatcher until it waits again: a call that takes the
     * dispatcher returns only then, and nothing wakes the thread after it. */
    char *armed = NULL;
    CHECK_STATUS(uf_timers_get(d, &armed), UF_OK);
    CHECK(armed != NULL && strstr(armed, "\"parent\"") != NULL);
    uf_free(armed);
    int result[2];
    REQUIRE(pipe(result) == 0);
    fflush(NULL);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        alarm(10); /* a hang (a join of the parent's thread) ends the child */
        int bad = child_checks(d);
        if (write(result[1], &bad, sizeof bad) != (ssize_t)sizeof bad) _exit(3);
        /* The child's copy still holds what the parent's timer thread owns, which
         * no thread here will ever release: end by exec, without exit processing,
         * so that valgrind and LeakSanitizer do not count that as the child's leak. */
        execl("/bin/true", "true", (char *)NULL);
        _exit(4);
    }
    close(result[1]);
    int bad = -1, status = 0;
    CHECK(read(result[0], &bad, sizeof bad) == (ssize_t)sizeof bad);
    close(result[0]);
    CHECK(bad == 0);
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* The parent's dispatcher and its thread go on. */
    CHECK_STATUS(uf_timer_cancel(d, "parent"), UF_OK);
    CHECK_STATUS(uf_submit_after(d, to_off, 1, NULL, 0), UF_OK);
    CHECK(wait_for(&seen.calls, 2));
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    uf_dispatcher_free(d);
    CHECK(read_seen(&seen.freed) == 1);
}

/* ---- 6. Timers when the journal cannot be written ---- */

static const char *const download =
    "{\"feature\":\"Download\",\"states\":{\"Idle\":{},\"Running\":{"
    "\"after\":[{\"ms\":100,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Download\",\"into\":\"Idle\"}]}]}}}";

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void limit_growth(const char *path, long room) {
    struct rlimit limit;
    limit.rlim_cur = room < 0 ? RLIM_INFINITY : (rlim_t)(file_size(path) + room);
    limit.rlim_max = RLIM_INFINITY;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &limit) == 0);
}

static void check_timers(uf_dispatcher *d, const char *expected, int line) {
    char *json = NULL;
    CHECK_STATUS(uf_timers_get(d, &json), UF_OK);
    if (!check_str_(__FILE__, line, json, expected, "uf_timers_get")) fprintf(stderr, "    (line %d)\n", line);
    uf_free(json);
}

static void a_full_disk_changes_no_timer(void) {
    char path[] = "/tmp/uniflow-time-journal-XXXXXX";
    int file = mkstemp(path);
    REQUIRE(file >= 0);
    close(file);
    char options[256], message[512];
    snprintf(options, sizeof options, "{\"clock\":\"manual\",\"journal\":\"%s\"}", path);
    snprintf(message, sizeof message, "cannot write journal '%s': File too large", path);
    uf_dispatcher *d = check_dispatcher(options, download);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Download\",\"into\":\"Running\"}"), UF_OK);
    CHECK_STATUS(uf_submit_after(d, "{\"kind\":\"deinitialize\",\"feature\":\"Download\"}", 100, "save", 0), UF_OK);
    CHECK_STATUS(uf_clock_advance(d, 30), UF_OK);
    const char *armed = "[{\"id\":\"Download.Running.after[0]\",\"due_in_ms\":70,\"ms\":100},{\"id\":\"save\",\"due_in_ms\":70,\"ms\":100}]";
    check_timers(d, armed, __LINE__);

    limit_growth(path, 0);
    CHECK_ERROR(uf_submit_after(d, "{\"kind\":\"deinitialize\",\"feature\":\"Download\"}", 5, "save", 0), UF_EIO, message);
    CHECK_ERROR(uf_submit_after(d, "{\"kind\":\"deinitialize\",\"feature\":\"Download\"}", 5, "other", 0), UF_EIO, message);
    CHECK_ERROR(uf_timer_cancel(d, "save"), UF_EIO, message);
    CHECK_ERROR(uf_state_restore(d, "{\"Download\":{\"state\":\"Running\",\"payload\":{}}}"), UF_EIO, message);
    CHECK_ERROR(uf_snapshot_restore(d, "{\"clock\":\"manual\",\"model\":{},\"timers\":[]}"), UF_EIO, message);
    check_timers(d, armed, __LINE__);
    CHECK_STATE(d, "{\"Download\":{\"state\":\"Running\",\"payload\":{}}}");
    limit_growth(path, -1);

    /* Writing works again: the journal replays to the same model and timers. */
    CHECK_STATUS(uf_clock_advance(d, 70), UF_OK);
    /* Both fired at 100: the state timer (armed first) went Idle, then "save" ended it. */
    CHECK_STATE(d, "{}");
    check_timers(d, "[]", __LINE__);
    uf_dispatcher *r = check_dispatcher("{\"clock\":\"manual\"}", download);
    CHECK_STATUS(uf_clock_advance(r, 100), UF_OK);
    CHECK_STATUS(uf_replay_file(r, path), UF_OK);
    CHECK_STATE(r, "{}");
    check_timers(r, "[]", __LINE__);
    uf_dispatcher_free(r);
    uf_dispatcher_free(d);
    unlink(path);
}

/* A timer nobody could fire is not armed: uf_submit_after (or a snapshot restore)
 * says why. A child
 * process allowed no more processes (or threads) than it has tries it; root is
 * not held to that limit, so a root child becomes nobody first. ThreadSanitizer
 * needs threads of its own in the child, so its build leaves this out. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNIFLOW_UNDER_TSAN 1
#endif
#endif
#ifndef UNIFLOW_UNDER_TSAN
/* Keeps a timer_rejected report's text. */
static void keep_timer_rejected(const char *report_json, void *payload) {
    if (strstr(report_json, "\"timer_rejected\"") != NULL) snprintf(payload, 512, "%s", report_json);
}
#endif

static void a_timer_thread_that_cannot_start_arms_no_timer(void) {
#ifndef UNIFLOW_UNDER_TSAN
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        struct rlimit one = {1, 1};
        if ((getuid() == 0 && setuid(65534) != 0) || setrlimit(RLIMIT_NPROC, &one) != 0) _exit(2);
        uf_dispatcher *d = NULL;
        if (uf_dispatcher_new(&d, NULL) != UF_OK || uf_register(d, toggle) != UF_OK) _exit(3);
        int status = uf_submit_after(d, init_off, 10, "t", 0);
        int said = strncmp(uf_last_error(), "cannot start the timer thread: ", 31) == 0;
        /* A snapshot that would arm a timer is refused the same way, changing nothing. */
        char snapshot[512];
        snprintf(snapshot, sizeof snapshot,
                 "{\"clock\":\"monotonic\",\"model\":{\"Toggle\":{\"state\":\"On\",\"payload\":{}}},"
                 "\"timers\":[{\"id\":\"r\",\"kind\":\"api\",\"due_at\":%lld,\"remaining_ms\":60000,\"ms\":60000,"
                 "\"on_restore\":\"fire\",\"action\":%s}]}",
                 (long long)time(NULL) * 1000 + 60000, init_off);
        int restored = uf_snapshot_restore(d, snapshot);
        int said_again = strncmp(uf_last_error(), "cannot start the timer thread: ", 31) == 0;
        char *timers = NULL, *model = NULL;
        int none = uf_timers_get(d, &timers) == UF_OK && strcmp(timers, "[]") == 0;
        int unchanged = uf_state_get(d, &model) == UF_OK && strcmp(model, "{}") == 0;
        uf_free(timers);
        uf_free(model);
        /* A state timer an action arms is armed, and reported by its id. */
        char rejected[512] = "";
        int reporting = uf_set_reporter(d, keep_timer_rejected, rejected, NULL) == UF_OK
                        && uf_register(d, "{\"feature\":\"Oven\",\"states\":{\"Hot\":{\"after\":[{\"ms\":60000,"
                                          "\"submit\":[{\"kind\":\"deinitialize\",\"feature\":\"Oven\"}]}]}}}") == UF_OK
                        && uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Oven\",\"into\":\"Hot\"}") == UF_OK;
        int named = strstr(rejected, "\"status\":\"UF_ENOMEM\"") != NULL
                    && strstr(rejected, "\"timer\":\"Oven.Hot.after[0]\"") != NULL;
        uf_dispatcher_free(d);
        _exit(status == UF_ENOMEM && said && restored == UF_ENOMEM && said_again && none && unchanged
              && reporting && named ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#endif
}

/* ---- 7. A loop descriptor that cannot be made ---- */

/* uf_loop_fd's first call makes an eventfd, a timerfd and an epoll instance; when
 * one cannot be made it is UF_EIO naming it, and the descriptors it did make are
 * closed again. A child process whose descriptors are all taken (its
 * RLIMIT_NOFILE lowered to 64 and every free number below that filled) tries it
 * with no descriptor, then one and two descriptors free, then three. It checks
 * with check.h as the parent does and exits 0 when no check of its own failed. */
static void loop_fd_without_free_descriptors(void) {
    enum { LIMIT = 64 };
    int failures = check_failures_;
    uf_dispatcher *d = check_dispatcher("{\"timers\":\"host\"}", toggle);
    struct rlimit limit;
    REQUIRE(getrlimit(RLIMIT_NOFILE, &limit) == 0);
    if (limit.rlim_cur > LIMIT) limit.rlim_cur = LIMIT;
    REQUIRE(setrlimit(RLIMIT_NOFILE, &limit) == 0);
    int taken[LIMIT], count = 0, fd;
    while (count < LIMIT && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) taken[count++] = fd;
    REQUIRE(errno == EMFILE && count >= 3);

    static const char *const messages[] = {
        "uf_loop_fd: eventfd: Too many open files",
        "uf_loop_fd: timerfd_create: Too many open files",
        "uf_loop_fd: epoll_create1: Too many open files",
    };
    for (int room = 0; room < 3; ++room) {
        for (int i = 0; i < room; ++i) close(taken[--count]);
        int loop_fd = -1;
        CHECK_ERROR(uf_loop_fd(d, &loop_fd), UF_EIO, messages[room]);
        /* What it made is closed: the same room is free again, and no more. */
        int reopened = 0;
        while ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
            taken[count++] = fd;
            ++reopened;
        }
        CHECK(reopened == room);
    }
    /* Room for all three: made now, by the same call. */
    for (int i = 0; i < 3; ++i) close(taken[--count]);
    int loop_fd = -1;
    CHECK_STATUS(uf_loop_fd(d, &loop_fd), UF_OK);
    CHECK(loop_fd >= 0 && loop_fd < LIMIT);
    uf_dispatcher_free(d);
    while (count > 0) close(taken[--count]);
    fflush(NULL);
    _exit(check_failures_ != failures);
}

static void a_loop_descriptor_that_cannot_be_made_is_an_io_error(void) {
    fflush(NULL);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) loop_fd_without_free_descriptors();
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    main_thread = pthread_self();
    /* Writing past RLIMIT_FSIZE raises SIGXFSZ; the write then fails with EFBIG. */
    signal(SIGXFSZ, SIG_IGN);
    the_timer_thread_fires_a_short_timer();
    a_sooner_timer_wakes_the_sleeping_timer_thread();
    freeing_while_the_timer_thread_fires_waits_for_it();
    freeing_inside_a_timer_caused_callback_is_misuse();
    a_poll_loop_wakes_for_deliveries_and_host_timers();
    a_forked_child_may_only_free_the_parents_dispatcher();
    a_full_disk_changes_no_timer();
    a_timer_thread_that_cannot_start_arms_no_timer();
    a_loop_descriptor_that_cannot_be_made_is_an_io_error();
    return check_summary();
}
