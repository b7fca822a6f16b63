/*
 * scenarios_charts.c — statecharts (bench/README.md's group 13). Each row sends
 * the event "go" through uf_dispatch to a statechart feature, with one counting
 * subscriber, and is compared with the flat toggle (uf_short: the same
 * dispatcher, subscriber and one mutation per action):
 *
 *   uf_chart_flat_beside      uf_short's toggle of the flat T while a statechart
 *                             feature is registered and initialized next to it:
 *                             flat features must not pay for charts (1.1x)
 *   uf_chart_nested_3         Deep: Outer.Middle.Inner.{A,B}, "go" moves A<->B
 *                             three levels down (the innermost state declares
 *                             it): at most 2x the flat toggle
 *   uf_chart_parallel_2       Split: two parallel regions, "go" moves each
 *                             region (A<->B and C<->D) in one microstep: at most
 *                             3x the flat toggle
 *
 * The chart rows check, after the run, that the configuration is the one the
 * number of actions says.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

static const char *nested_definition =
    "{\"feature\":\"Deep\",\"initial\":[\"Outer\"],\"states\":{"
    "\"Outer\":{\"initial\":\"Middle\",\"states\":{"
    "\"Middle\":{\"initial\":\"Inner\",\"states\":{"
    "\"Inner\":{\"initial\":\"A\",\"states\":{"
    "\"A\":{\"on\":{\"go\":\"B\"}},\"B\":{\"on\":{\"go\":\"A\"}}}}}}}}}}";

static const char *parallel_definition =
    "{\"feature\":\"Split\",\"type\":\"parallel\",\"states\":{"
    "\"Left\":{\"initial\":\"A\",\"states\":{\"A\":{\"on\":{\"go\":\"B\"}},\"B\":{\"on\":{\"go\":\"A\"}}}},"
    "\"Right\":{\"initial\":\"C\",\"states\":{\"C\":{\"on\":{\"go\":\"D\"}},\"D\":{\"on\":{\"go\":\"C\"}}}}}}";

/* Registers a chart, subscribes the counter, initializes it (into `into`, with
 * its defaults below) and makes both
 * phases a send of "go". */
static void setup_chart(scenario *s, const char *feature, const char *definition, const char *into) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, definition), UF_OK, feature);
    char when[64];
    snprintf(when, sizeof when, "AnyMutationOf<%s>", feature);
    subscribe_counter(s->d, when, &s->notified);
    char init[96];
    snprintf(init, sizeof init, "{\"kind\":\"initialize\",\"feature\":\"%s\",\"into\":\"%s\"}", feature, into);
    submit(s->d, init);
    s->notified = 0;
    uf_action act = UF_ACTION_INIT;
    act.kind = UF_ACTION_SEND;
    act.feature = feature;
    act.event = "go";
    s->act[0] = s->act[1] = act;
    s->phase = 0;
}

static void setup_nested(scenario *s) { setup_chart(s, "Deep", nested_definition, "Outer"); }
static void setup_parallel(scenario *s) { setup_chart(s, "Split", parallel_definition, "Left"); }

/* uf_short's setup, with Deep registered and initialized first. */
static void setup_flat_beside(scenario *s) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, nested_definition), UF_OK, "register Deep");
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"Deep\",\"into\":\"Outer\"}");
    check_status(uf_register(s->d, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}}}"), UF_OK, "register T");
    subscribe_counter(s->d, "AnyMutationOf<T>", &s->notified);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    s->notified = 0;
    set_toggle(s, "T", "A", "B");
}

static void check_state(scenario *s, const char *feature, const char *expected) {
    char *json = NULL;
    check_status(uf_feature_get(s->d, feature, &json), UF_OK, "uf_feature_get");
    char want[128];
    snprintf(want, sizeof want, "{\"state\":\"%s\",\"payload\":{}}", expected);
    if (!json || strcmp(json, want) != 0) die("%s: %s is %s, expected %s", s->name, feature, json, want);
    uf_free(json);
}

static void check_nested(scenario *s) {
    check_state(s, "Deep", s->phase ? "Outer.Middle.Inner.B" : "Outer.Middle.Inner.A");
}

static void check_parallel(scenario *s) { check_state(s, "Split", s->phase ? "Left.B,Right.D" : "Left.A,Right.C"); }

static scenario scenarios[] = {
    SCENARIO("uf_chart_flat_beside", "uf_short with a statechart feature registered next to T", setup_flat_beside,
             run_dispatch_toggle),
    SCENARIO_CHECKED("uf_chart_nested_3", "uf_dispatch send go: A<->B three levels down", setup_nested,
                     run_dispatch_toggle, check_nested),
    SCENARIO_CHECKED("uf_chart_parallel_2", "uf_dispatch send go: A<->B and C<->D in two regions",
                     setup_parallel, run_dispatch_toggle, check_parallel),
};
scenario *const charts_scenarios = scenarios;
const int charts_scenario_count = COUNT_OF(scenarios);
const bench_mode *const charts_modes = NULL;
const int charts_mode_count = 0;
