/*
 * scenarios_instances.c — keyed instances (issue 14's speed and memory targets,
 * bench/README.md's group 7). K is a keyed feature with two auto states A and B;
 * keys are k0, k1, ...
 *
 *   uf_instance_1            uf_dispatch toggle of K[k50000], the only live instance
 *   uf_instance_100000       the same with 100,000 live instances (1.3x uf_short,
 *                            the same toggle on a single feature)
 *   uf_instance_subs_0       toggle of K[k0] among 10,001 live instances, its
 *                            subscriber on AnyMutationOf<K[k0]>
 *   uf_instance_subs_10000   the same plus one AnyMutationOf<K[kj]> subscription
 *                            on each other instance (1.5x uf_instance_subs_0);
 *                            none of them may be called for k0
 *   mode mem-instances N     peak RSS per live instance with an empty payload,
 *                            beyond its key (256 bytes; default 1,000,000)
 *   mode instances-churn N   initialize N instances then deinitialize them all:
 *                            time per instance, and RSS after, against before
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *keyed_definition =
    "{\"feature\":\"K\",\"instances\":\"keyed\",\"states\":{\"A\":{},\"B\":{}}}";

/* Initializes K[k<first>] .. K[k<first + count - 1>] into A. */
static void initialize_instances(uf_dispatcher *d, long first, long count) {
    uf_action act = UF_ACTION_INIT;
    act.kind = UF_ACTION_INITIALIZE;
    act.feature = "K";
    act.into = "A";
    char key[32];
    act.key = key;
    for (long i = first; i < first + count; ++i) {
        snprintf(key, sizeof key, "k%ld", i);
        int status = uf_dispatch(d, &act);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "initialize K[k...]");
    }
}

static void set_instance_toggle(scenario *s, const char *key) {
    set_toggle(s, "K", "A", "B");
    s->act[0].key = s->act[1].key = key;
}

/* ------------------------------------------------- a dispatch among many */

/* K with `live` live instances, k0.. (just k50000 when live is 1), the toggled one
 * k50000; a counting subscriber on AnyMutationOf<K>. */
static void setup_instance_among(scenario *s, long live) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, keyed_definition), UF_OK, "register K");
    subscribe_counter(s->d, "AnyMutationOf<K>", &s->notified);
    if (live == 1) initialize_instances(s->d, 50000, 1);
    else initialize_instances(s->d, 0, live);
    if (s->notified != (uint64_t)live) die("%s: %llu initializations seen of %ld", s->name,
                                           (unsigned long long)s->notified, live);
    set_instance_toggle(s, "k50000");
}

static void setup_instance_1(scenario *s) { setup_instance_among(s, 1); }
static void setup_instance_100000(scenario *s) { setup_instance_among(s, 100000); }

/* -------------------------------------------- per-instance subscriptions */

enum { SUBS_LIVE = 10001 };

/* K with instances k0..k10000, a counting subscriber on AnyMutationOf<K[k0]>, and
 * with `others` one AnyMutationOf<K[kj]> for each j in 1..10000, subscribed
 * before the instances are made: each must see exactly its own initialization. */
static void setup_instance_subs(scenario *s, int others) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, keyed_definition), UF_OK, "register K");
    subscribe_counter(s->d, "AnyMutationOf<K[k0]>", &s->notified);
    for (long j = 1; others && j < SUBS_LIVE; ++j) {
        char when[64];
        snprintf(when, sizeof when, "AnyMutationOf<K[k%ld]>", j);
        check_status(uf_subscribe(s->d, when, count_mutation, &s->stray, NULL, NULL), UF_OK, when);
    }
    initialize_instances(s->d, 0, SUBS_LIVE);
    if (s->notified != 1) die("%s: K[k0]'s subscriber saw %llu initializations, expected 1", s->name,
                              (unsigned long long)s->notified);
    uint64_t expected = others ? SUBS_LIVE - 1 : 0;
    if (s->stray != expected)
        die("%s: the per-instance subscribers saw %llu initializations, expected %llu (one each)", s->name,
            (unsigned long long)s->stray, (unsigned long long)expected);
    set_instance_toggle(s, "k0");
}

static void setup_instance_subs_0(scenario *s) { setup_instance_subs(s, 0); }
static void setup_instance_subs_10000(scenario *s) { setup_instance_subs(s, 1); }

static scenario scenarios[] = {
    SCENARIO("uf_instance_1", "uf_dispatch toggle K[k50000], keyed, 1 live instance", setup_instance_1,
             run_dispatch_toggle),
    SCENARIO("uf_instance_100000", "the same with 100,000 live instances", setup_instance_100000,
             run_dispatch_toggle),
    SCENARIO("uf_instance_subs_0", "toggle K[k0] of 10,001 live, subscriber on AnyMutationOf<K[k0]>",
             setup_instance_subs_0, run_dispatch_toggle),
    SCENARIO("uf_instance_subs_10000", "the same + AnyMutationOf<K[kj]> on the 10,000 others",
             setup_instance_subs_10000, run_dispatch_toggle),
};
scenario *const instances_scenarios = scenarios;
const int instances_scenario_count = COUNT_OF(scenarios);

/* ---------------------------------------------------------------- memory */

enum { KEY_STRIDE = 24 };

/* Peak RSS growth for `count` live instances with an empty payload, minus their
 * keys' bytes. */
static int run_memory_instances(long count) {
    uf_dispatcher *d = new_dispatcher(NULL);
    check_status(uf_register(d, keyed_definition), UF_OK, "register K");
    uint64_t notified = 0;
    subscribe_counter(d, "AnyMutationOf<K>", &notified);
    /* Warm up what is allocated once (the table's first blocks). */
    initialize_instances(d, count, 100);
    char *keys = malloc((size_t)count * KEY_STRIDE);
    if (!keys) die("out of memory");
    double key_bytes = 0;
    for (long i = 0; i < count; ++i) {
        snprintf(keys + i * KEY_STRIDE, KEY_STRIDE, "k%ld", i);
        key_bytes += (double)strlen(keys + i * KEY_STRIDE);
    }
    uf_action act = UF_ACTION_INIT;
    act.kind = UF_ACTION_INITIALIZE;
    act.feature = "K";
    act.into = "A";
    long h0 = status_kb("VmHWM");
    for (long i = 0; i < count; ++i) {
        act.key = keys + i * KEY_STRIDE;
        int status = uf_dispatch(d, &act);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "initialize K[k...]");
    }
    long h1 = status_kb("VmHWM");
    if (notified != (uint64_t)count + 100) die("mem-instances: %llu initializations seen, expected %ld",
                                              (unsigned long long)notified, count + 100);
    char *one = NULL;
    check_status(uf_instance_get(d, "K", keys + (count / 2) * KEY_STRIDE, &one), UF_OK, "uf_instance_get");
    if (!one || strcmp(one, "{\"state\":\"A\",\"payload\":{}}") != 0) die("mem-instances: instance is %s", one);
    uf_free(one);
    print_memory("instance", h0, h1, count, key_bytes / (double)count);
    uf_dispatcher_free(d);
    free(keys);
    return 0;
}

static int mode_mem_instances(const mode_args *a) { return run_memory_instances(a->count ? a->count : 1000000); }

/* ------------------------------------------------------ coming and going */

/* Initializes `count` instances, then deinitializes them all in the same order,
 * keys made on the fly (no buffer of them inflates the RSS measured). Prints the
 * time per instance (both actions) and the RSS after against the RSS before. */
static int run_churn(long count) {
    uf_dispatcher *d = new_dispatcher(NULL);
    check_status(uf_register(d, keyed_definition), UF_OK, "register K");
    uint64_t notified = 0;
    subscribe_counter(d, "AnyMutationOf<K>", &notified);
    uf_action init = UF_ACTION_INIT, deinit = UF_ACTION_INIT;
    init.kind = UF_ACTION_INITIALIZE;
    init.feature = "K";
    init.into = "A";
    deinit.kind = UF_ACTION_DEINITIALIZE;
    deinit.feature = "K";
    char key[32];
    init.key = deinit.key = key;
    /* Warm up: a small table comes and goes. */
    for (int pass = 0; pass < 2; ++pass)
        for (long i = 0; i < 1000; ++i) {
            snprintf(key, sizeof key, "k%ld", i);
            check_status(uf_dispatch(d, pass ? &deinit : &init), UF_OK, "warm-up");
        }
    notified = 0;
    long rss0 = status_kb("VmRSS");
    double t0 = now_ns();
    for (long i = 0; i < count; ++i) {
        snprintf(key, sizeof key, "k%ld", i);
        int status = uf_dispatch(d, &init);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "initialize K[k...]");
    }
    double t1 = now_ns();
    long rss_full = status_kb("VmRSS");
    for (long i = 0; i < count; ++i) {
        snprintf(key, sizeof key, "k%ld", i);
        int status = uf_dispatch(d, &deinit);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, "deinitialize K[k...]");
    }
    double t2 = now_ns();
    long rss1 = status_kb("VmRSS");
    if (notified != 2 * (uint64_t)count) die("instances-churn: %llu mutations seen, expected %ld",
                                             (unsigned long long)notified, 2 * count);
    char *model = NULL;
    check_status(uf_state_get(d, &model), UF_OK, "uf_state_get");
    if (strcmp(model, "{}") != 0) die("instances-churn: the model is %.200s after deinitializing all", model);
    uf_free(model);
    char name[64];
    snprintf(name, sizeof name, "instances_churn_%ld", count);
    print_sample(name, 0, (t2 - t0) / (double)count, count);
    snprintf(name, sizeof name, "instances_churn_%ld_init", count);
    print_sample(name, 0, (t1 - t0) / (double)count, count);
    snprintf(name, sizeof name, "instances_churn_%ld_deinit", count);
    print_sample(name, 0, (t2 - t1) / (double)count, count);
    snprintf(name, sizeof name, "instances_churn_%ld_rss", count);
    print_metric(name, 100.0 * (double)(rss1 - rss0) / (double)rss0, "%");
    printf("{\"check\":\"instances-churn %ld\",\"kb_before\":%ld,\"kb_full\":%ld,\"kb_after\":%ld,\"ok\":true}\n", count,
           rss0, rss_full, rss1);
    uf_dispatcher_free(d);
    return 0;
}

static int mode_churn(const mode_args *a) { return run_churn(a->count ? a->count : 1000000); }

static const bench_mode modes[] = {
    {"mem-instances", "N: peak RSS per live instance beyond its key (default 1,000,000)", mode_mem_instances},
    {"instances-churn", "N: initialize N instances, deinitialize them: ns per instance, RSS after vs before",
     mode_churn},
};
const bench_mode *const instances_modes = modes;
const int instances_mode_count = COUNT_OF(modes);
