/*
 * bench.c — the C side of libuniflow's benchmark harness (run it through bench/run).
 *
 *   bench_c [--reps N] [--time-ms T] [--iters N] [--warmup N] [--only a,b,...]
 *           [--placement BYTES]
 *       The action scenarios of every topic, each set up once, then run N
 *       repetitions interleaved round-robin so that every scenario sees the same
 *       machine conditions. --iters fixes the actions per measurement (callgrind
 *       mode: two runs that differ only in --iters give the cost per action);
 *       otherwise each scenario is calibrated to take about T ms per repetition.
 *       --placement allocates BYTES before anything else, which moves every
 *       later allocation within its page (see main).
 *   bench_c MODE [N] [--reps N] [--time-ms T]
 *       A scenario that needs a process of its own (threads, memory, timers
 *       firing, instances coming and going); `bench_c --list` names them.
 *   bench_c --list
 *
 * Output: one JSON object per line on stdout ({"scenario":..,"rep":..,"ns":..},
 * {"metric":..,"value":..}, {"memory":..}, {"check":..}); diagnostics on stderr.
 * Any unexpected status, or a subscriber count that disagrees with the applied
 * actions, aborts with exit status 1: a benchmark that silently measures failures
 * measures nothing.
 *
 * The scenarios themselves live in scenarios_*.c, one file per topic (bench.h).
 */
#include "bench.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ errors */

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_c: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

void check_status(int status, int expected, const char *what) {
    if (status != expected)
        die("%s: %s (expected %s): %s", what, uf_status_name(status), uf_status_name(expected), uf_last_error());
}

double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ text buffer */

void text_add(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->len;
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) die("vsnprintf failed");
        if (t->p && (size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        if (!t->p) die("out of memory");
    }
}

void text_clear(text *t) {
    t->len = 0;
    if (t->p) t->p[0] = 0;
}

void text_free(text *t) {
    free(t->p);
    t->p = NULL;
    t->len = t->cap = 0;
}

/* -------------------------------------------------------------- callbacks */

int count_mutation(const uf_mutation *m, void *payload) {
    (void)m;
    ++*(uint64_t *)payload;
    return UF_KEEP;
}

int count_c(int feature, int old_state, int new_state, void *payload) {
    (void)feature, (void)old_state, (void)new_state;
    ++*(uint64_t *)payload;
    return 0;
}

/* ------------------------------------------------------- dispatcher helpers */

uf_dispatcher *new_dispatcher(const char *options_json) {
    uf_dispatcher *d = NULL;
    check_status(uf_dispatcher_new(&d, options_json), UF_OK, "uf_dispatcher_new");
    return d;
}

void subscribe_counter(uf_dispatcher *d, const char *when, uint64_t *counter) {
    check_status(uf_subscribe(d, when, count_mutation, counter, NULL, NULL), UF_OK, "uf_subscribe");
}

void submit(uf_dispatcher *d, const char *json) {
    check_status(uf_submit(d, json), UF_OK, json);
}

void add_toggle_definition(text *t, const char *name) {
    text_add(t, "{\"feature\":\"%s\",\"states\":{\"A\":{},\"B\":{}}}", name);
}

void register_fillers(uf_dispatcher *d, const char *prefix, long count) {
    text t = {0};
    for (long start = 0; start < count; start += 500) {
        text_clear(&t);
        text_add(&t, "[");
        for (long i = start; i < count && i < start + 500; ++i) {
            if (i > start) text_add(&t, ",");
            char name[64];
            snprintf(name, sizeof name, "%s%ld", prefix, i);
            add_toggle_definition(&t, name);
        }
        text_add(&t, "]");
        check_status(uf_register(d, t.p), UF_OK, "uf_register fillers");
    }
    text_free(&t);
}

void make_toggle(uf_action act2[2], const char *feature, const char *a, const char *b) {
    for (int i = 0; i < 2; ++i) {
        uf_action act = UF_ACTION_INIT;
        act.kind = UF_ACTION_TRANSITION;
        act.feature = feature;
        act.from = i == 0 ? a : b;
        act.into = i == 0 ? b : a;
        act2[i] = act;
    }
}

void set_toggle(scenario *s, const char *feature, const char *a, const char *b) {
    make_toggle(s->act, feature, a, b);
    s->notified = 0;
    s->stray = 0;
    s->extra = 0;
}

/* ---------------------------------------------------------------- runners */

void run_dispatch_toggle(scenario *s, long n) {
    for (long i = 0; i < n; ++i) {
        int status = uf_dispatch(s->d, &s->act[s->phase]);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, s->name);
        s->phase ^= 1;
    }
    s->applied += (uint64_t)n;
}

void run_dispatch_same(scenario *s, long n) {
    for (long i = 0; i < n; ++i) {
        int status = uf_dispatch(s->d, &s->act[0]);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, s->name);
    }
    s->applied += (uint64_t)n;
}

void run_submit_toggle(scenario *s, long n) {
    for (long i = 0; i < n; ++i) {
        int status = uf_submit(s->d, s->json[s->phase]);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, s->name);
        s->phase ^= 1;
    }
    s->applied += (uint64_t)n;
}

void run_jansson(scenario *s, long n) {
    for (long i = 0; i < n; ++i) {
        json_error_t error;
        json_t *j = json_loads(s->json[s->phase], JSON_REJECT_DUPLICATES, &error);
        if (__builtin_expect(!j, 0)) die("%s: json_loads: %s", s->name, error.text);
        json_decref(j);
        s->phase ^= 1;
    }
}

/* ------------------------------------------------------ memory and output */

long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) die("cannot open /proc/self/status: %s", strerror(errno));
    char line[256];
    long kb = -1;
    size_t len = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, len) == 0 && line[len] == ':') kb = strtol(line + len + 1, NULL, 10);
    fclose(f);
    if (kb < 0) die("no %s in /proc/self/status", key);
    return kb;
}

void print_memory(const char *what, long kb_before, long kb_after, long count, double subtract_each) {
    double gross = (double)(kb_after - kb_before) * 1024.0 / (double)count;
    printf("{\"memory\":\"%s\",\"count\":%ld,\"kb_before\":%ld,\"kb_after\":%ld,\"gross_bytes_each\":%.1f,"
           "\"subtracted_each\":%.1f,\"bytes_each\":%.1f}\n",
           what, count, kb_before, kb_after, gross, subtract_each, gross - subtract_each);
}

void print_sample(const char *name, int rep, double ns, long iters) {
    printf("{\"scenario\":\"%s\",\"rep\":%d,\"ns\":%.3f,\"iters\":%ld}\n", name, rep, ns, iters);
    fflush(stdout);
}

void print_metric(const char *name, double value, const char *unit) {
    printf("{\"metric\":\"%s\",\"value\":%.3f,\"unit\":\"%s\"}\n", name, value, unit);
    fflush(stdout);
}

/* ------------------------------------------------------ action scenarios */

typedef struct topic {
    const char *name;
    scenario *scenarios;
    int scenario_count;
    const bench_mode *modes;
    int mode_count;
} topic;

#define TOPIC_ENTRY(prefix) \
    {#prefix, prefix##_scenarios, prefix##_scenario_count, prefix##_modes, prefix##_mode_count}

static topic topics[7];

static void init_topics(void) {
    topic all[] = {TOPIC_ENTRY(core), TOPIC_ENTRY(time), TOPIC_ENTRY(instances), TOPIC_ENTRY(watch),
                   TOPIC_ENTRY(events), TOPIC_ENTRY(partitions), TOPIC_ENTRY(charts)};
    _Static_assert(sizeof all == sizeof topics, "topics");
    memcpy(topics, all, sizeof all);
}

#define FOR_EACH_SCENARIO(s)                                                              \
    for (int t_ = 0; t_ < COUNT_OF(topics); ++t_)                                         \
        for (scenario *s = topics[t_].scenarios; s < topics[t_].scenarios + topics[t_].scenario_count; ++s)

static void check_scenario(scenario *s) {
    if (s->is_parse_only) return;
    if (s->notified != s->applied)
        die("%s: %llu actions applied but the subscriber saw %llu", s->name,
            (unsigned long long)s->applied, (unsigned long long)s->notified);
    if (s->stray != 0)
        die("%s: %llu callbacks ran that must not (on other features or keys)", s->name, (unsigned long long)s->stray);
    if (s->check) s->check(s);
    printf("{\"check\":\"%s\",\"applied\":%llu,\"notified\":%llu,\"ok\":true}\n", s->name,
           (unsigned long long)s->applied, (unsigned long long)s->notified);
}

void skip_scenario(scenario *s, const char *why) {
    printf("{\"skipped\":\"%s\",\"reason\":\"", s->name);
    for (const char *c = why; *c; ++c) {
        if (*c == '"' || *c == '\\') putchar('\\');
        if ((unsigned char)*c >= 0x20) putchar(*c);
    }
    printf("\"}\n");
    fprintf(stderr, "bench_c: %s skipped: %s\n", s->name, why);
    s->enabled = 0;
}

/* What a scenario with a prepare step needs before a run of n (not timed). */
static void prepare(scenario *s, long n) {
    if (s->prepare) s->prepare(s, n);
}

/* Runs the scenario until a batch takes `ms`, and returns the batch size for it. */
static long calibrate(scenario *s, double ms) {
    long n = 1000;
    for (;;) {
        prepare(s, n);
        double t0 = now_ns();
        s->run(s, n);
        double elapsed = now_ns() - t0;
        if (elapsed >= 10e6 || n >= (1L << 30)) {
            double per = elapsed / (double)n;
            long want = (long)(ms * 1e6 / per);
            return want < 1000 ? 1000 : want;
        }
        n *= 4;
    }
}

/* See bench.h: a second thread would change every row measured after it. */
static void check_single_thread(const char *after) {
    long threads = status_kb("Threads");
    if (threads != 1) die("%ld threads after %s: the action scenarios must not start one (bench.h)", threads, after);
}

static int in_list(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == 0)) return 1;
        p = strchr(p, ',');
        if (p) ++p;
    }
    return 0;
}

static int run_actions(int reps, double ms, long fixed_iters, long warmup, const char *only) {
    FOR_EACH_SCENARIO(s) {
        s->enabled = only ? in_list(only, s->name) : 1;
        if (!s->enabled) continue;
        double t0 = now_ns();
        s->setup(s);
        if (!s->enabled) continue;
        fprintf(stderr, "bench_c: set up %s in %.0f ms\n", s->name, (now_ns() - t0) / 1e6);
        prepare(s, warmup);
        s->run(s, warmup);
        s->iters = fixed_iters > 0 ? fixed_iters : calibrate(s, ms);
        check_single_thread(s->name);
    }
    for (int rep = 0; rep < reps; ++rep) {
        FOR_EACH_SCENARIO(s) {
            if (!s->enabled) continue;
            prepare(s, s->iters);
            double t0 = now_ns();
            s->run(s, s->iters);
            print_sample(s->name, rep, (now_ns() - t0) / (double)s->iters, s->iters);
        }
    }
    FOR_EACH_SCENARIO(s) {
        if (s->enabled) check_scenario(s);
    }
    check_single_thread("the run");
    return 0;
}

/* ---------------------------------------------------------------------- main */

int main(int argc, char **argv) {
    init_topics();
    int reps = 7;
    double ms = 100;
    long iters = 0, warmup = 20000, count = 0, placement = 0;
    const char *only = NULL, *mode = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(a, "--time-ms") == 0 && i + 1 < argc) ms = atof(argv[++i]);
        else if (strcmp(a, "--iters") == 0 && i + 1 < argc) iters = atol(argv[++i]);
        else if (strcmp(a, "--warmup") == 0 && i + 1 < argc) warmup = atol(argv[++i]);
        else if (strcmp(a, "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(a, "--placement") == 0 && i + 1 < argc) placement = atol(argv[++i]);
        else if (strcmp(a, "--list") == 0) {
            FOR_EACH_SCENARIO(s) printf("%-28s %s\n", s->name, s->what);
            for (int t = 0; t < COUNT_OF(topics); ++t)
                for (int m = 0; m < topics[t].mode_count; ++m)
                    printf("mode %-23s %s\n", topics[t].modes[m].name, topics[t].modes[m].what);
            return 0;
        } else if (a[0] != '-' && !mode) mode = a;
        else if (a[0] != '-') count = atol(a);
        else die("unknown argument %s", a);
    }
    if (reps < 1 || ms <= 0 || count < 0 || placement < 0 || placement > 65536) die("bad arguments");
    /* Where the dispatchers' memory lands within a page moves the shortest rows
     * by a tenth (uf_short: 14.6 to 16.7 ns for the same library, measured with
     * allocations of 0 to 3 KiB made first), and ASLR moves the heap by whole
     * pages only. The driver gives each process another offset, so that no
     * single placement decides a row. Kept for the process's life. */
    void *volatile shifted = placement > 0 ? malloc((size_t)placement) : NULL;
    (void)shifted;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!mode || strcmp(mode, "actions") == 0) return run_actions(reps, ms, iters, warmup, only);
    mode_args args = {.count = count, .reps = reps, .ms = ms};
    for (int t = 0; t < COUNT_OF(topics); ++t)
        for (int m = 0; m < topics[t].mode_count; ++m)
            if (strcmp(topics[t].modes[m].name, mode) == 0) return topics[t].modes[m].run(&args);
    die("unknown mode %s (bench_c --list names them)", mode);
}
