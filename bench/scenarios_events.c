/*
 * scenarios_events.c — events and the send action (issue 16's speed targets,
 * bench/README.md's group 9). Flow has states A, B and C; the event "go" moves
 * it from A into B and from B into A.
 *
 *   uf_send_transition  uf_dispatch transition Flow: A<->B (the guarded
 *                       definition; its `on` plays no part in a transition)
 *   uf_send_guarded     uf_dispatch of {"kind": "send", "event": "go"}: each state
 *                       has two guarded targets, the first (into C, if the event
 *                       says cancel) not taken, the second taken: 3x the transition
 *   uf_send_unguarded   the same send where "go" has one plain target: 1.3x
 *
 * Both sends go through uf_dispatch with UF_ACTION_SEND and no event payload,
 * like the transition they are compared with.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

#define GUARDED_TARGETS(other)                                                         \
    "{\"go\":[{\"into\":\"C\",\"spec\":\"cancelled\",\"if\":{\"var\":\"event.payload.cancel\"}}," \
    "{\"into\":\"" other "\",\"if\":{\"!\":{\"var\":\"event.payload.cancel\"}}}]}"

static const char *guarded_definition =
    "{\"feature\":\"Flow\",\"states\":{\"A\":{\"on\":" GUARDED_TARGETS("B") "},"
    "\"B\":{\"on\":" GUARDED_TARGETS("A") "},\"C\":{}}}";
static const char *unguarded_definition =
    "{\"feature\":\"Flow\",\"states\":{\"A\":{\"on\":{\"go\":\"B\"}},\"B\":{\"on\":{\"go\":\"A\"}},\"C\":{}}}";

static void setup_flow(scenario *s, const char *definition) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, definition), UF_OK, "register Flow");
    subscribe_counter(s->d, "AnyMutationOf<Flow>", &s->notified);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"Flow\",\"into\":\"A\"}");
    set_toggle(s, "Flow", "A", "B");
}

static void setup_send_transition(scenario *s) { setup_flow(s, guarded_definition); }

/* Both phases send the same event; the phase follows the state it leads to. */
static void set_send(scenario *s) {
    uf_action act = UF_ACTION_INIT;
    act.kind = UF_ACTION_SEND;
    act.feature = "Flow";
    act.event = "go";
    s->act[0] = s->act[1] = act;
}

static void setup_send_guarded(scenario *s) {
    setup_flow(s, guarded_definition);
    set_send(s);
}

static void setup_send_unguarded(scenario *s) {
    setup_flow(s, unguarded_definition);
    set_send(s);
}

/* Flow is in B after an odd number of actions, else in A. */
static void check_flow(scenario *s) {
    char *json = NULL;
    check_status(uf_feature_get(s->d, "Flow", &json), UF_OK, "uf_feature_get");
    const char *expected = s->phase ? "{\"state\":\"B\",\"payload\":{}}" : "{\"state\":\"A\",\"payload\":{}}";
    if (!json || strcmp(json, expected) != 0) die("%s: Flow is %s, expected %s", s->name, json, expected);
    uf_free(json);
}

static scenario scenarios[] = {
    SCENARIO_CHECKED("uf_send_transition", "uf_dispatch transition Flow: A<->B", setup_send_transition,
                     run_dispatch_toggle, check_flow),
    SCENARIO_CHECKED("uf_send_guarded", "uf_dispatch send go: 2 guarded targets, the second taken",
                     setup_send_guarded, run_dispatch_toggle, check_flow),
    SCENARIO_CHECKED("uf_send_unguarded", "uf_dispatch send go: 1 target, no guard", setup_send_unguarded,
                     run_dispatch_toggle, check_flow),
};
scenario *const events_scenarios = scenarios;
const int events_scenario_count = COUNT_OF(scenarios);
const bench_mode *const events_modes = NULL;
const int events_mode_count = 0;
