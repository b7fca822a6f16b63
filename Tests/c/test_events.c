/*
 * test_events.c — events from C (docs/events.md): uf_send, UF_ACTION_SEND through
 * uf_dispatch and uf_dispatch_try, a caller built against the 0.1.0 uf_action
 * (which ended after via_payload_free, so `key` and `event` read as NULL), guard
 * handlers, keyed instances and timers on a manual clock.
 */
#include <stddef.h>

#include "check.h"

static const char *const transfer =
    "{\"feature\": \"Transfer\","
    " \"states\": {\"Amount\": {\"fields\": {\"amount\": {\"type\": \"number\", \"optional\": true}},"
    "                        \"on\": {\"next\": [{\"into\": \"InvalidAmount\", \"spec\": \"below 100\","
    "                                            \"if\": {\"<\": [{\"var\": \"event.payload.amount\"}, 100]}},"
    "                                           {\"into\": \"Tariffs\"}]}},"
    "            \"InvalidAmount\": {\"on\": {\"retry\": \"Amount\"}},"
    "            \"Tariffs\": {\"fields\": {\"amount\": \"number\"},"
    "                        \"on\": {\"back\": \"Amount\", \"pick\": {\"into\": \"Done\", \"call\": \"approve\"}}},"
    "            \"Done\": {}},"
    " \"initial\": [\"Amount\"],"
    " \"transitions\": {\"Amount\": [\"InvalidAmount\", \"Tariffs\"], \"InvalidAmount\": [\"Amount\"],"
    "                 \"Tariffs\": [\"Amount\", \"Done\"], \"Done\": []},"
    " \"on\": {\"cancel\": \"Amount\"}}";

static const char *const toggle =
    "{\"feature\": \"Toggle\", \"states\": {\"Off\": {\"on\": {\"flip\": \"On\"}}, \"On\": {\"on\": {\"flip\": \"Off\"}}},"
    " \"initial\": [\"Off\"]}";

static const char *const jobs =
    "{\"feature\": \"Job\", \"instances\": \"keyed\","
    " \"states\": {\"Queued\": {\"on\": {\"run\": \"Running\"}}, \"Running\": {\"on\": {\"finish\": \"Done\"}},"
    "            \"Done\": {}},"
    " \"initial\": [\"Queued\"]}";

/* The guard handler: takes the target when the event's payload says "yes";
 * records the data it was given. */
static int approve(uf_binding_call *call, void *payload) {
    check_list_add((check_list *)payload, uf_binding_call_given_json(call));
    return strstr(uf_binding_call_given_json(call), "\"yes\"") != NULL;
}

static uf_dispatcher *transfer_dispatcher(check_list *given, check_list *mutations, check_list *reports) {
    uf_dispatcher *d = check_dispatcher(NULL, NULL);
    CHECK_STATUS(uf_register_handler(d, "approve", approve, given, NULL), UF_OK);
    REQUIRE(uf_register(d, transfer) == UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, mutations, NULL, NULL), UF_OK);
    if (reports) CHECK_STATUS(uf_set_reporter(d, check_record_report, reports, NULL), UF_OK);
    return d;
}

static void uf_send_lets_the_definition_choose(void) {
    check_list given = {0}, mutations = {0}, reports = {0};
    uf_dispatcher *d = transfer_dispatcher(&given, &mutations, &reports);

    CHECK_ERROR(uf_send(d, "Transfer", NULL, "next", NULL), UF_REJECTED, "Transfer is not initialized");
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Transfer\",\"into\":\"Amount\"}"), UF_OK);
    /* The guard reads the event's payload. */
    CHECK_STATUS(uf_send(d, "Transfer", NULL, "next", "{\"amount\": 50}"), UF_OK);
    CHECK_FEATURE(d, "Transfer", "{\"state\":\"InvalidAmount\",\"payload\":{}}");
    CHECK_STATUS(uf_send(d, "Transfer", NULL, "retry", NULL), UF_OK);
    /* The amount is carried from the event's payload into Tariffs. */
    CHECK_STATUS(uf_send(d, "Transfer", NULL, "next", "{\"amount\": 150, \"note\": \"dropped\"}"), UF_OK);
    CHECK_FEATURE(d, "Transfer", "{\"state\":\"Tariffs\",\"payload\":{\"amount\":150}}");
    /* A handler guard: 0 passes the target over... */
    CHECK_ERROR(uf_send(d, "Transfer", NULL, "pick", "{\"answer\": \"no\"}"), UF_REJECTED,
                "Transfer in state Tariffs has no transition for event 'pick'");
    /* ...1 takes it. */
    CHECK_STATUS(uf_send(d, "Transfer", NULL, "pick", "{\"answer\": \"yes\"}"), UF_OK);
    CHECK_LIST(&given,
               "{\"model\":{\"Transfer\":{\"state\":\"Tariffs\",\"payload\":{\"amount\":150}}},"
               "\"event\":{\"name\":\"pick\",\"payload\":{\"answer\":\"no\"}},"
               "\"feature\":{\"state\":\"Tariffs\",\"payload\":{\"amount\":150}}}",
               "{\"model\":{\"Transfer\":{\"state\":\"Tariffs\",\"payload\":{\"amount\":150}}},"
               "\"event\":{\"name\":\"pick\",\"payload\":{\"answer\":\"yes\"}},"
               "\"feature\":{\"state\":\"Tariffs\",\"payload\":{\"amount\":150}}}");
    /* Done declares no transition: the feature's `cancel` is passed over there. */
    CHECK_ERROR(uf_send(d, "Transfer", NULL, "cancel", NULL), UF_REJECTED,
                "Transfer in state Done has no transition for event 'cancel'");
    CHECK_STATE(d, "{\"Transfer\":{\"state\":\"Done\",\"payload\":{}}}");
    CHECK_LIST(&mutations,
               "{\"seq\":1,\"kind\":\"initialization\",\"feature\":\"Transfer\",\"old\":null,"
               "\"new\":{\"state\":\"Amount\",\"payload\":{}},\"action\":{\"kind\":\"initialize\",\"feature\":\"Transfer\",\"into\":\"Amount\"}}",
               "{\"seq\":2,\"kind\":\"transition\",\"feature\":\"Transfer\",\"old\":{\"state\":\"Amount\",\"payload\":{}},"
               "\"new\":{\"state\":\"InvalidAmount\",\"payload\":{}},\"action\":{\"kind\":\"send\",\"feature\":\"Transfer\",\"event\":\"next\",\"into\":\"InvalidAmount\"}}",
               "{\"seq\":3,\"kind\":\"transition\",\"feature\":\"Transfer\",\"old\":{\"state\":\"InvalidAmount\",\"payload\":{}},"
               "\"new\":{\"state\":\"Amount\",\"payload\":{}},\"action\":{\"kind\":\"send\",\"feature\":\"Transfer\",\"event\":\"retry\",\"into\":\"Amount\"}}",
               "{\"seq\":4,\"kind\":\"transition\",\"feature\":\"Transfer\",\"old\":{\"state\":\"Amount\",\"payload\":{}},"
               "\"new\":{\"state\":\"Tariffs\",\"payload\":{\"amount\":150}},\"action\":{\"kind\":\"send\",\"feature\":\"Transfer\",\"event\":\"next\",\"into\":\"Tariffs\"}}",
               "{\"seq\":5,\"kind\":\"transition\",\"feature\":\"Transfer\",\"old\":{\"state\":\"Tariffs\",\"payload\":{\"amount\":150}},"
               "\"new\":{\"state\":\"Done\",\"payload\":{}},\"action\":{\"kind\":\"send\",\"feature\":\"Transfer\",\"event\":\"pick\",\"into\":\"Done\"}}");
    CHECK(reports.count == 8);
    CHECK_STR(reports.items[0], "{\"event\":\"rejected\",\"action\":{\"kind\":\"send\",\"feature\":\"Transfer\",\"event\":\"next\"},"
                                "\"status\":\"UF_REJECTED\",\"reason\":\"Transfer is not initialized\"}");
    CHECK_STR(reports.items[7], "{\"event\":\"rejected\",\"action\":{\"kind\":\"send\",\"feature\":\"Transfer\",\"event\":\"cancel\"},"
                                "\"status\":\"UF_REJECTED\",\"reason\":\"Transfer in state Done has no transition for event 'cancel'\"}");
    uf_dispatcher_free(d);
    check_list_clear(&given);
    check_list_clear(&mutations);
    check_list_clear(&reports);
}

static void a_payload_that_does_not_fit_changes_nothing(void) {
    check_list given = {0}, mutations = {0};
    uf_dispatcher *d = transfer_dispatcher(&given, &mutations, NULL);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Transfer\",\"into\":\"Amount\"}"), UF_OK);
    CHECK_ERROR(uf_send(d, "Transfer", NULL, "next", "{\"amount\": \"lots\"}"), UF_ESCHEMA,
                "Transfer.Tariffs.amount: expected number, got string");
    CHECK_ERROR(uf_send(d, "Transfer", NULL, "next", "[1]"), UF_ESCHEMA,
                "uf_action.payload_json must be an object, got array");
    CHECK_ERROR(uf_send(d, "Transfer", NULL, "next", "{\"amount\": }"), UF_EJSON,
                "line 1, column 12: unexpected token near '}'");
    CHECK_STATE(d, "{\"Transfer\":{\"state\":\"Amount\",\"payload\":{}}}");
    CHECK(mutations.count == 1);
    uf_dispatcher_free(d);
    check_list_clear(&given);
    check_list_clear(&mutations);
}

static void uf_send_checks_its_arguments(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_ERROR(uf_send(NULL, "Toggle", NULL, "flip", NULL), UF_EINVAL, "uf_send: dispatcher is NULL");
    CHECK_ERROR(uf_send(d, NULL, NULL, "flip", NULL), UF_EINVAL, "uf_send: feature is NULL");
    CHECK_ERROR(uf_send(d, "Toggle", NULL, NULL, NULL), UF_EINVAL, "uf_send: event is NULL");
    CHECK_ERROR(uf_send(d, "Toggle", NULL, "flip-flop", NULL), UF_EINVAL,
                "uf_action.event: 'flip-flop' is not a valid event name");
    CHECK_ERROR(uf_send(d, "Toggle", "k", "flip", NULL), UF_EINVAL,
                "Toggle is a single feature: an action on it takes no key");
    CHECK_ERROR(uf_send(d, "Nope", NULL, "flip", NULL), UF_ENOTFOUND, "unknown feature 'Nope'");
    CHECK_STATE(d, "{}");
    uf_dispatcher_free(d);
}

/* ---- The struct form ---- */

static int via_called;
static int never_called_via(uf_context *ctx, void *payload) {
    (void)ctx;
    (void)payload;
    ++via_called;
    return 0;
}

static void ufaction_send_goes_through_uf_dispatch(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    check_list mutations = {0};
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, &mutations, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);

    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_SEND;
    a.feature = "Toggle";
    a.event = "flip";
    a.context = "button";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_STATUS(uf_dispatch_try(d, &a), UF_OK);
    a.payload_json = "{\"why\": \"a payload takes the general path\"}";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}");
    CHECK_STR(mutations.items[3],
              "{\"seq\":4,\"kind\":\"transition\",\"feature\":\"Toggle\",\"old\":{\"state\":\"Off\",\"payload\":{}},"
              "\"new\":{\"state\":\"On\",\"payload\":{}},\"action\":{\"kind\":\"send\",\"feature\":\"Toggle\",\"event\":\"flip\","
              "\"into\":\"On\",\"context\":\"button\"}}");

    /* Fields that do not fit a send. */
    uf_action bad = a;
    bad.payload_json = NULL;
    bad.event = NULL;
    CHECK_ERROR(uf_dispatch(d, &bad), UF_EINVAL, "uf_action: 'event' is required on a send action");
    bad.event = "";
    CHECK_ERROR(uf_dispatch(d, &bad), UF_EINVAL, "uf_action.event: '' is not a valid event name");
    bad.event = "flip";
    bad.into = "Off";
    CHECK_ERROR(uf_dispatch(d, &bad), UF_EINVAL, "uf_action: 'into' is not allowed on a send action");
    bad.into = NULL;
    bad.from = "On";
    CHECK_ERROR(uf_dispatch(d, &bad), UF_EINVAL, "uf_action: 'from' is not allowed on a send action");
    bad.from = NULL;
    bad.kind = UF_ACTION_TRANSITION;
    bad.into = "Off";
    CHECK_ERROR(uf_dispatch(d, &bad), UF_EINVAL, "uf_action: 'event' is not allowed on a transition action");

    /* A via on a send: refused, released exactly once, never called. */
    int freed = 0;
    uf_action via = a;
    via.payload_json = NULL;
    via.via = never_called_via;
    via.via_payload = &freed;
    via.via_payload_free = check_count_free;
    CHECK_ERROR(uf_dispatch(d, &via), UF_EINVAL, "uf_action: a via callback is not allowed on a send action");
    CHECK(freed == 1);
    CHECK_ERROR(uf_submit_via(d, "{\"kind\":\"send\",\"feature\":\"Toggle\",\"event\":\"flip\"}", never_called_via, &freed,
                              check_count_free),
                UF_EINVAL, "a send takes no via callback: its target and payload come from the definition");
    CHECK(freed == 2);
    CHECK(via_called == 0);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}");
    uf_dispatcher_free(d);
    check_list_clear(&mutations);
}

/* The uf_action of 0.1.0 ended after via_payload_free; 0.2.0 appended `key`,
 * then `event`. A caller passes the size it was built with. */
static void an_older_struct_reads_key_and_event_as_null(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    REQUIRE(uf_register(d, jobs) == UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"j1\",\"into\":\"Queued\"}"), UF_OK);

    /* The 0.1.0 size: whatever lies beyond it is not read. */
    uf_action a = UF_ACTION_INIT;
    a.size = (unsigned)offsetof(uf_action, key);
    a.kind = UF_ACTION_SEND;
    a.feature = "Toggle";
    a.key = "beyond the struct";
    a.event = "flip";
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "uf_action: 'event' is required on a send action");
    CHECK_ERROR(uf_dispatch_try(d, &a), UF_EINVAL, "uf_action: 'event' is required on a send action");
    a.kind = UF_ACTION_TRANSITION;
    a.into = "On";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);  /* the key beyond the size is not seen */
    /* A keyed feature needs the key the old struct cannot carry. */
    a.feature = "Job";
    a.into = "Running";
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "Job is keyed: an action on it needs a key");

    /* The size that ends after `key`: the key is read, the event is not. */
    a.size = (unsigned)offsetof(uf_action, event);
    a.kind = UF_ACTION_SEND;
    a.into = NULL;
    a.key = "j1";
    a.event = "run";
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "uf_action: 'event' is required on a send action");
    a.kind = UF_ACTION_TRANSITION;
    a.into = "Running";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);

    /* The whole struct. */
    a.size = sizeof(uf_action);
    a.kind = UF_ACTION_SEND;
    a.into = NULL;
    a.event = "finish";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}},\"Job\":{\"j1\":{\"state\":\"Done\",\"payload\":{}}}}");

    /* A size that ends inside a field is no version of the struct. */
    a.size = (unsigned)offsetof(uf_action, key) + 1;
    char expected[128];
    snprintf(expected, sizeof expected, "uf_dispatch: action->size is %u, expected %zu (sizeof(uf_action))", a.size,
             sizeof(uf_action));
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, expected);
    uf_dispatcher_free(d);
}

/* ---- Keyed instances and timers ---- */

static void sends_act_per_instance(void) {
    uf_dispatcher *d = check_dispatcher(NULL, jobs);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"a\",\"into\":\"Queued\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"b\",\"into\":\"Queued\"}"), UF_OK);
    CHECK_ERROR(uf_send(d, "Job", NULL, "run", NULL), UF_EINVAL, "Job is keyed: an action on it needs a key");
    CHECK_ERROR(uf_send(d, "Job", "a b", "run", NULL), UF_EINVAL, "uf_action.key: 'a b' contains a blank");
    CHECK_STATUS(uf_send(d, "Job", "a", "run", NULL), UF_OK);
    CHECK_ERROR(uf_send(d, "Job", "b", "finish", NULL), UF_REJECTED,
                "Job[b] in state Queued has no transition for event 'finish'");
    CHECK_ERROR(uf_send(d, "Job", "c", "run", NULL), UF_REJECTED, "Job[c] is not initialized");
    CHECK_STATE(d, "{\"Job\":{\"a\":{\"state\":\"Running\",\"payload\":{}},\"b\":{\"state\":\"Queued\",\"payload\":{}}}}");
    uf_dispatcher_free(d);
}

static void timers_send_events(void) {
    uf_dispatcher *d = check_dispatcher("{\"clock\": \"manual\"}", toggle);
    check_list reports = {0};
    CHECK_STATUS(uf_set_reporter(d, check_record_report, &reports, NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_SEND;
    a.feature = "Toggle";
    a.event = "flip";
    CHECK_STATUS(uf_dispatch_after(d, &a, 250, "flip-later", 0), UF_OK);
    CHECK_STATUS(uf_submit_after(d, "{\"kind\":\"send\",\"feature\":\"Toggle\",\"event\":\"flip\"}", 500, NULL, 0), UF_OK);
    CHECK_STATUS(uf_clock_advance(d, 249), UF_OK);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    CHECK_STATUS(uf_clock_advance(d, 1), UF_OK);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}");
    CHECK_STATUS(uf_clock_advance(d, 250), UF_OK);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    CHECK(check_list_count(&reports, "\"event\":\"processed\",\"action\":{\"kind\":\"send\",\"feature\":\"Toggle\",\"event\":\"flip\",\"into\":\"On\",\"timer\":\"flip-later\"}") == 1);
    CHECK(check_list_count(&reports, "\"event\":\"processed\",\"action\":{\"kind\":\"send\",\"feature\":\"Toggle\",\"event\":\"flip\",\"into\":\"Off\",\"timer\":null}") == 1);
    /* A malformed send is refused when it is armed. */
    a.event = "flip flop";
    CHECK_ERROR(uf_dispatch_after(d, &a, 10, NULL, 0), UF_EINVAL, "uf_action.event: 'flip flop' is not a valid event name");
    uf_dispatcher_free(d);
    check_list_clear(&reports);
}

int main(void) {
    uf_send_lets_the_definition_choose();
    a_payload_that_does_not_fit_changes_nothing();
    uf_send_checks_its_arguments();
    ufaction_send_goes_through_uf_dispatch();
    an_older_struct_reads_key_and_event_as_null();
    sends_act_per_instance();
    timers_send_events();
    return check_summary();
}
