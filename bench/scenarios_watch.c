/*
 * scenarios_watch.c — watches and interceptors (issue 15's speed targets,
 * bench/README.md's group 8). The base is uf_short's toggle of T with ten other
 * features Other0..Other9 registered and initialized:
 *
 *   uf_others_10                  the base, nothing watches or intercepts
 *   uf_watches_other_1000         + 1,000 watches, each reading one other feature
 *                                 ({"var": "model.Other<i % 10>.state"}): 1.1x
 *   uf_watch_unchanged            + one watch on T whose value never changes
 *                                 ({"var": "model.T.payload"}: {} in A and in B;
 *                                 T changes on every action): 2x
 *   uf_watch_state                + one watch on T's state ({"var": "model.T.state"}),
 *                                 which changes with every action; its callback
 *                                 reads each new value as a host binding does (the
 *                                 C side of py_uniflow_watch; no target)
 *   uf_interceptor_other          + one interceptor on Other0: 1.1x
 *   uf_interceptor_pass           + one C interceptor on T that lets every action
 *                                 through without reading it: 1.5x
 *   uf_watch_unchanged_actualize  uf_dispatch_actualize (Transfer's 5-field
 *                                 actualize) + a watch on the one field it never
 *                                 changes ({"var": "model.Transfer.payload.url"}):
 *                                 2x uf_dispatch_actualize
 *
 * Every watch and interceptor counts its calls: the unchanged watches are called
 * once when made and never during the run; the state watch and the pass-through
 * interceptor once per action.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

static int count_watch(const uf_watch_event *w, void *payload) {
    (void)w;
    ++*(uint64_t *)payload;
    return UF_KEEP;
}

/* Reads the new value, a state's name in quotes, as a host that passes it on would. */
static int read_watch(const uf_watch_event *w, void *payload) {
    const char *value = uf_watch_value_json(w);
    if (value == NULL || value[0] != '"') die("uf_watch_state: the value read is %s", value ? value : "NULL");
    ++*(uint64_t *)payload;
    return UF_KEEP;
}

static int count_intercepted(uf_intercepted *a, void *payload) {
    (void)a;
    ++*(uint64_t *)payload;
    return 0;
}

static void watch(scenario *s, const char *select_json) {
    check_status(uf_watch(s->d, select_json, count_watch, &s->stray, NULL, NULL), UF_OK, select_json);
}

/* T in A and Other0..Other9 in A; a counting subscriber on AnyMutationOf<T>. */
static void setup_others_base(scenario *s) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}}}"), UF_OK, "register T");
    register_fillers(s->d, "Other", 10);
    subscribe_counter(s->d, "AnyMutationOf<T>", &s->notified);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    for (int i = 0; i < 10; ++i) {
        char json[96];
        snprintf(json, sizeof json, "{\"kind\":\"initialize\",\"feature\":\"Other%d\",\"into\":\"A\"}", i);
        submit(s->d, json);
    }
}

static void setup_others_10(scenario *s) {
    setup_others_base(s);
    set_toggle(s, "T", "A", "B");
}

static void setup_watches_other_1000(scenario *s) {
    setup_others_base(s);
    for (int i = 0; i < 1000; ++i) {
        char select[96];
        snprintf(select, sizeof select, "{\"var\":\"model.Other%d.state\"}", i % 10);
        watch(s, select);
    }
    if (s->stray != 1000) die("%s: %llu first calls for 1,000 watches", s->name, (unsigned long long)s->stray);
    set_toggle(s, "T", "A", "B");
}

static void setup_watch_unchanged(scenario *s) {
    setup_others_base(s);
    watch(s, "{\"var\":\"model.T.payload\"}");
    if (s->stray != 1) die("%s: the watch's first call was not made", s->name);
    set_toggle(s, "T", "A", "B");
}

static void setup_watch_state(scenario *s) {
    setup_others_base(s);
    check_status(uf_watch(s->d, "{\"var\":\"model.T.state\"}", read_watch, &s->extra, NULL, NULL), UF_OK, "uf_watch");
    if (s->extra != 1) die("%s: the watch's first call was not made", s->name);
    set_toggle(s, "T", "A", "B");  /* counts from 0 again */
}

static void check_watch_state(scenario *s) {
    if (s->extra != s->applied)
        die("%s: the watch saw %llu of %llu changes", s->name, (unsigned long long)s->extra,
            (unsigned long long)s->applied);
}

static void setup_interceptor_other(scenario *s) {
    setup_others_base(s);
    check_status(uf_intercept(s->d, "Other0", count_intercepted, &s->stray, NULL, NULL), UF_OK, "uf_intercept Other0");
    set_toggle(s, "T", "A", "B");
}

static void setup_interceptor_pass(scenario *s) {
    setup_others_base(s);
    check_status(uf_intercept(s->d, "T", count_intercepted, &s->extra, NULL, NULL), UF_OK, "uf_intercept T");
    set_toggle(s, "T", "A", "B");
}

static void check_interceptor_pass(scenario *s) {
    if (s->extra != s->applied)
        die("%s: the interceptor saw %llu of %llu actions", s->name, (unsigned long long)s->extra,
            (unsigned long long)s->applied);
}

static void setup_watch_unchanged_actualize(scenario *s) {
    setup_dispatch_actualize(s);
    watch(s, "{\"var\":\"model.Transfer.payload.url\"}");
    if (s->stray != 1) die("%s: the watch's first call was not made", s->name);
    s->stray = 0;
}

static scenario scenarios[] = {
    SCENARIO("uf_others_10", "uf_short's toggle + 10 other features initialized", setup_others_10, run_dispatch_toggle),
    SCENARIO("uf_watches_other_1000", "uf_others_10 + 1,000 watches reading the other features",
             setup_watches_other_1000, run_dispatch_toggle),
    SCENARIO("uf_watch_unchanged", "uf_others_10 + a watch on model.T.payload (never changes)", setup_watch_unchanged,
             run_dispatch_toggle),
    SCENARIO_CHECKED("uf_watch_state", "uf_others_10 + a watch on model.T.state reading each new value",
                     setup_watch_state, run_dispatch_toggle, check_watch_state),
    SCENARIO("uf_interceptor_other", "uf_others_10 + an interceptor on Other0", setup_interceptor_other,
             run_dispatch_toggle),
    SCENARIO_CHECKED("uf_interceptor_pass", "uf_others_10 + a C interceptor on T returning 0",
                     setup_interceptor_pass, run_dispatch_toggle, check_interceptor_pass),
    SCENARIO("uf_watch_unchanged_actualize", "uf_dispatch_actualize + a watch on model.Transfer.payload.url",
             setup_watch_unchanged_actualize, run_dispatch_same),
};
scenario *const watch_scenarios = scenarios;
const int watch_scenario_count = COUNT_OF(scenarios);
const bench_mode *const watch_modes = NULL;
const int watch_mode_count = 0;
