/*
 * bench.h — what the C scenarios of libuniflow's benchmark harness share.
 *
 * bench.c holds the infrastructure declared here (errors, the text buffer, the
 * counting callbacks, the runners every topic uses) and main(): it runs the
 * action scenarios of every topic interleaved, or one of the topics' modes.
 * The scenarios live in files by topic: scenarios_core.c (the first rounds' C
 * hot path, JSON path, threads and memory), scenarios_time.c,
 * scenarios_instances.c, scenarios_watch.c, scenarios_events.c,
 * scenarios_partitions.c and scenarios_charts.c.
 *
 * Include it first: it defines _GNU_SOURCE before any system header.
 */
#ifndef UNIFLOW_BENCH_H
#define UNIFLOW_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>

#include "uniflow.h"
#include "baseline.h"

/* ------------------------------------------------------------------ errors */

/* Prints "bench_c: <message>" on stderr and exits with status 1. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Dies unless status == expected, naming both and uf_last_error(). */
void check_status(int status, int expected, const char *what);

/* CLOCK_MONOTONIC in nanoseconds. */
double now_ns(void);

/* ------------------------------------------------------------ text buffer */

/* A growable text buffer for building definitions and actions. */
typedef struct text {
    char *p;
    size_t len, cap;
} text;

void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void text_clear(text *t);
void text_free(text *t);

/* -------------------------------------------------------------- callbacks */

/* The counting C subscriber of every scenario: ++*(uint64_t *)payload. */
int count_mutation(const uf_mutation *m, void *payload);

/* The C baselines' callback: the same work as count_mutation. */
int count_c(int feature, int old_state, int new_state, void *payload);

/* ------------------------------------------------------- dispatcher helpers */

/* uf_dispatcher_new with these options (NULL: the defaults). */
uf_dispatcher *new_dispatcher(const char *options_json);
void subscribe_counter(uf_dispatcher *d, const char *when, uint64_t *counter);
/* uf_submit that must return UF_OK. */
void submit(uf_dispatcher *d, const char *json);
/* Appends {"feature": name, "states": {"A": {}, "B": {}}}. */
void add_toggle_definition(text *t, const char *name);
/* Registers `count` two-state features <prefix>0.., in chunks of 500. */
void register_fillers(uf_dispatcher *d, const char *prefix, long count);
/* act[0] moves `feature` from a into b, act[1] back (set act[i].key for an
 * instance). */
void make_toggle(uf_action act[2], const char *feature, const char *a, const char *b);

/* --------------------------------------------------------------- scenarios */

typedef struct scenario scenario;
struct scenario {
    const char *name;
    const char *what;
    void (*setup)(scenario *);
    void (*run)(scenario *, long n);
    /* Optional: more checks after the run (die on failure). */
    void (*check)(scenario *);
    /* Optional: called before each run of n actions (the warm-up, each
     * calibration batch, each repetition), outside the time measured: makes what
     * the run consumes (uf_record_apply_one's records). Under callgrind the
     * scenario's line in driver.py counts the runner alone (--toggle-collect). */
    void (*prepare)(scenario *, long n);
    /* filled by setup */
    uf_dispatcher *d;
    uf_action act[2];
    const char *json[2];
    c_machine machine;
    uint64_t notified;  /* bumped by the counting subscriber / callback */
    uint64_t applied;   /* actions that returned UF_OK */
    uint64_t stray;     /* bumped by callbacks that must never run during the run
                           (subscriptions and watches on other features or keys) */
    uint64_t extra;     /* a second counter, read by the scenario's check */
    int phase;          /* which of the two actions goes next */
    long iters;
    int enabled;        /* a setup that cannot run its row (the library or its
                           header lacks the feature) prints {"skipped"} (skip_scenario)
                           and sets it to 0: the row is "not run" */
    int is_parse_only;  /* a jansson baseline: nothing is applied or notified */
};

/* The action scenarios share one process, which must stay single-threaded: once
 * a second thread exists, glibc makes every pthread mutex lock atomic, which
 * changes c_locked and the library's own lock, so every row. A dispatcher with
 * timers must therefore use "timers": "host" (or a manual clock); bench.c checks
 * it after the setups and after the run. */

#define SCENARIO(n, w, s, r) {.name = n, .what = w, .setup = s, .run = r}
#define SCENARIO_CHECKED(n, w, s, r, c) {.name = n, .what = w, .setup = s, .run = r, .check = c}
#define SCENARIO_PREPARED(n, w, s, p, r, c) {.name = n, .what = w, .setup = s, .prepare = p, .run = r, .check = c}

/* Called by a setup whose row cannot run here: prints {"skipped": name,
 * "reason": why} (a note under the table) and disables the scenario. */
void skip_scenario(scenario *s, const char *why);

/* Runners shared by the topics. Each checks every status (UF_OK or die) and
 * adds what it applied to s->applied. */
void run_dispatch_toggle(scenario *s, long n);  /* uf_dispatch act[phase], phase ^= 1 */
void run_dispatch_same(scenario *s, long n);    /* uf_dispatch act[0] */
void run_submit_toggle(scenario *s, long n);    /* uf_submit json[phase] */
void run_jansson(scenario *s, long n);          /* json_loads + json_decref of json[phase] */

/* Sets s->act to make_toggle(feature, a, b) and resets the counters that setup
 * bumped. */
void set_toggle(scenario *s, const char *feature, const char *a, const char *b);

/* What the topics share with scenarios_core.c, so that a new row and the row it
 * is compared with are set up the same way: */
/* FileDownloading (five states, declared transitions). */
extern const char *const realistic_definition;
/* Its toggle as JSON: InProgress -> Suspended, and back. */
extern const char *const toggle_json[2];
/* Makes s->d (with these options, NULL: the defaults) with FileDownloading
 * registered, a counting subscriber, and the feature in InProgress: the setup of
 * uf_realistic and uf_submit_toggle. */
void setup_realistic_dispatcher(scenario *s, const char *options_json);
/* The 5-field payload of Transfer.InProgress. */
extern const char *const transfer_payload;
/* uf_dispatch_actualize's setup: Transfer in InProgress, act[0] an actualize with
 * transfer_payload as payload_json. */
void setup_dispatch_actualize(scenario *s);
/* Transfer: Idle, and InProgress with the 5 fields of transfer_payload. */
extern const char *const transfer_definition;
/* Submits Transfer's initialization into InProgress with transfer_payload. */
void initialize_transfer(uf_dispatcher *d);
/* uf_submit_actualize's text: an actualize of Transfer in InProgress with
 * transfer_payload. */
extern const char *const actualize_json;

/* ------------------------------------------------------------------- modes */

/* What `bench_c MODE [N] [--reps R] [--time-ms T]` passes to a mode. */
typedef struct mode_args {
    long count;         /* N, or the mode's default when 0 */
    int reps;
    double ms;
} mode_args;

typedef struct bench_mode {
    const char *name;
    const char *what;
    int (*run)(const mode_args *);
} bench_mode;

/* ------------------------------------------------------ memory and output */

/* A line of /proc/self/status in kB ("VmHWM", "VmRSS"). */
long status_kb(const char *key);

/* {"memory": what, "count", "kb_before", "kb_after", "bytes_each"}: the growth
 * per item minus `subtract_each` bytes (the item's own text, when the target is
 * "beyond" it; 0 otherwise). The driver makes it the row mem_<what>. */
void print_memory(const char *what, long kb_before, long kb_after, long count, double subtract_each);

/* {"scenario": name, "rep": rep, "ns": ns, "iters": iters}: one sample of a row
 * measured in ns per item. */
void print_sample(const char *name, int rep, double ns, long iters);

/* {"metric": name, "value": value, "unit": unit}: one sample of a row measured
 * in another unit (ms, %). */
void print_metric(const char *name, double value, const char *unit);

/* ------------------------------------------------------------ the topics */

/* Each topic file defines its scenarios (run interleaved with every other
 * topic's) and its modes, as a pointer and a count:
 *   static scenario scenarios[] = {...};
 *   scenario *const time_scenarios = scenarios;
 *   const int time_scenario_count = COUNT_OF(scenarios);
 * (no modes: a NULL pointer and 0). */
#define TOPIC(prefix)                                                           \
    extern scenario *const prefix##_scenarios;                                  \
    extern const int prefix##_scenario_count;                                   \
    extern const bench_mode *const prefix##_modes;                              \
    extern const int prefix##_mode_count;

TOPIC(core)
TOPIC(time)
TOPIC(instances)
TOPIC(watch)
TOPIC(events)
TOPIC(partitions)
TOPIC(charts)

#undef TOPIC

#define COUNT_OF(array) ((int)(sizeof(array) / sizeof((array)[0])))

#endif
