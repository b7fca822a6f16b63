/*
 * test_seed.c — the scenarios of the original Swift UniFlow library, driven from C.
 *
 * Given a model, when an action is submitted, then this mutation and this state:
 * every mutation's JSON and the whole GlobalModel are compared exactly
 * (formats in docs/processing.md and docs/journal.md).
 * The definitions are written out here rather than read from examples/definitions,
 * so that bindings added to the examples later cannot change these scenarios.
 */
#include "check.h"

static const char *const file_downloading =
    "{\"feature\": \"FileDownloading\","
    " \"states\": {\"Starting\": {}, \"InProgress\": {\"fields\": {\"progress\": \"number\"}},"
    "            \"Completed\": {},"
    "            \"Failed\": {\"fields\": {\"reason\": \"string\","
    "                                   \"code\": {\"type\": \"integer\", \"optional\": true},"
    "                                   \"retries\": {\"type\": \"integer\", \"default\": 0}}}},"
    " \"initial\": [\"Starting\"],"
    " \"transitions\": {\"Starting\": [\"InProgress\", \"Failed\"],"
    "                 \"InProgress\": [\"InProgress\", \"Completed\", \"Failed\"]}}";

static const char *const arithmetic =
    "{\"feature\": \"Main\", \"states\": {\"Main\": {\"fields\": {\"val\": \"integer\"}}},"
    " \"initial\": [\"Main\"]}";

static const char *const search =
    "{\"feature\": \"Search\","
    " \"states\": {\"Ready\": {},"
    "            \"InProgress\": {\"fields\": {\"query\": \"string\", \"progress\": \"integer\"}},"
    "            \"Failed\": {\"fields\": {\"reason\": \"string\"}}},"
    " \"initial\": [\"Ready\"],"
    " \"transitions\": {\"Ready\": [\"InProgress\"], \"InProgress\": [\"Ready\", \"Failed\"],"
    "                 \"Failed\": [\"Ready\", \"InProgress\"]}}";

/* The accessors agree with the kind: no old state on an initialization, no new
 * one on a deinitialization, and the texts match the mutation's JSON. */
static int check_accessors(const uf_mutation *m, void *payload) {
    int *checked = (int *)payload;
    uf_mutation_kind kind = uf_mutation_kind_of(m);
    const char *json = uf_mutation_json(m);
    CHECK_STR(uf_mutation_feature(m), "FileDownloading");
    CHECK(uf_mutation_subscription_id(m) != 0);
    CHECK((uf_mutation_old_state(m) == NULL) == (kind == UF_MUTATION_INITIALIZATION));
    CHECK((uf_mutation_old_payload_json(m) == NULL) == (kind == UF_MUTATION_INITIALIZATION));
    CHECK((uf_mutation_new_state(m) == NULL) == (kind == UF_MUTATION_DEINITIALIZATION));
    CHECK((uf_mutation_new_payload_json(m) == NULL) == (kind == UF_MUTATION_DEINITIALIZATION));
    if (uf_mutation_new_state(m)) {
        char expected[256];
        snprintf(expected, sizeof expected, "\"new\":{\"state\":\"%s\",\"payload\":%s}",
                 uf_mutation_new_state(m), uf_mutation_new_payload_json(m));
        CHECK_CONTAINS(json, expected);
    }
    if (uf_mutation_old_state(m)) {
        char expected[256];
        snprintf(expected, sizeof expected, "\"old\":{\"state\":\"%s\",\"payload\":%s}",
                 uf_mutation_old_state(m), uf_mutation_old_payload_json(m));
        CHECK_CONTAINS(json, expected);
    }
    char seq[32];
    snprintf(seq, sizeof seq, "{\"seq\":%llu,", (unsigned long long)uf_mutation_seq(m));
    CHECK_PREFIX(json, seq);
    /* The same text every time it is asked for during the call. */
    CHECK(uf_mutation_json(m) == json);
    ++*checked;
    return UF_KEEP;
}

/* ---- FileDownloading: Starting -> InProgress -> actualized -> Completed -> gone ---- */

static void file_downloading_runs_from_start_to_finish(void) {
    uf_dispatcher *d = check_dispatcher(NULL, file_downloading);
    check_list mutations = {0};
    CHECK_STATUS(uf_subscribe(d, "AnyMutationOf<FileDownloading>", check_record_mutation, &mutations, NULL, NULL), UF_OK);
    int accessors_checked = 0;
    CHECK_STATUS(uf_subscribe(d, NULL, check_accessors, &accessors_checked, NULL, NULL), UF_OK);

    CHECK_FEATURE(d, "FileDownloading", NULL);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"FileDownloading\",\"into\":\"Starting\"}"), UF_OK);
    CHECK_STATE(d, "{\"FileDownloading\":{\"state\":\"Starting\",\"payload\":{}}}");

    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"Starting\","
                              "\"into\":\"InProgress\",\"payload\":{\"progress\":10}}"), UF_OK);
    CHECK_STATE(d, "{\"FileDownloading\":{\"state\":\"InProgress\",\"payload\":{\"progress\":10}}}");

    /* The struct form of the same kind of action: actualize In<InProgress> with a payload. */
    uf_action progress = UF_ACTION_INIT;
    progress.kind = UF_ACTION_ACTUALIZE;
    progress.feature = "FileDownloading";
    progress.into = "InProgress";
    progress.payload_json = "{\"progress\":55.5}";
    progress.id = "chunk-2";
    CHECK_STATUS(uf_dispatch(d, &progress), UF_OK);
    CHECK_FEATURE(d, "FileDownloading", "{\"state\":\"InProgress\",\"payload\":{\"progress\":55.5}}");

    CHECK_STATUS(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"FileDownloading\",\"in\":\"InProgress\","
                              "\"payload\":{\"progress\":100}}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"InProgress\","
                              "\"into\":\"Completed\",\"scope\":\"downloader.c\",\"context\":\"finish\"}"), UF_OK);
    CHECK_STATE(d, "{\"FileDownloading\":{\"state\":\"Completed\",\"payload\":{}}}");

    /* Completed is a dead end: no transition is declared out of it. */
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"Completed\",\"into\":\"Starting\"}"),
                UF_REJECTED, "FileDownloading cannot transition from Completed into Starting: not a declared transition");

    CHECK_STATUS(uf_submit(d, "{\"kind\":\"deinitialize\",\"feature\":\"FileDownloading\",\"from\":\"Completed\"}"), UF_OK);
    CHECK_STATE(d, "{}");
    CHECK_FEATURE(d, "FileDownloading", NULL);
    CHECK(accessors_checked == 6);

    CHECK_LIST(&mutations,
        "{\"seq\":1,\"kind\":\"initialization\",\"feature\":\"FileDownloading\",\"old\":null,"
        "\"new\":{\"state\":\"Starting\",\"payload\":{}},"
        "\"action\":{\"kind\":\"initialize\",\"feature\":\"FileDownloading\",\"into\":\"Starting\"}}",
        "{\"seq\":2,\"kind\":\"transition\",\"feature\":\"FileDownloading\","
        "\"old\":{\"state\":\"Starting\",\"payload\":{}},\"new\":{\"state\":\"InProgress\",\"payload\":{\"progress\":10}},"
        "\"action\":{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"Starting\",\"into\":\"InProgress\"}}",
        "{\"seq\":3,\"kind\":\"actualization\",\"feature\":\"FileDownloading\","
        "\"old\":{\"state\":\"InProgress\",\"payload\":{\"progress\":10}},\"new\":{\"state\":\"InProgress\",\"payload\":{\"progress\":55.5}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"FileDownloading\",\"in\":\"InProgress\",\"id\":\"chunk-2\"}}",
        "{\"seq\":4,\"kind\":\"actualization\",\"feature\":\"FileDownloading\","
        "\"old\":{\"state\":\"InProgress\",\"payload\":{\"progress\":55.5}},\"new\":{\"state\":\"InProgress\",\"payload\":{\"progress\":100}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"FileDownloading\",\"in\":\"InProgress\"}}",
        "{\"seq\":5,\"kind\":\"transition\",\"feature\":\"FileDownloading\","
        "\"old\":{\"state\":\"InProgress\",\"payload\":{\"progress\":100}},\"new\":{\"state\":\"Completed\",\"payload\":{}},"
        "\"action\":{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"InProgress\",\"into\":\"Completed\","
        "\"scope\":\"downloader.c\",\"context\":\"finish\"}}",
        "{\"seq\":6,\"kind\":\"deinitialization\",\"feature\":\"FileDownloading\","
        "\"old\":{\"state\":\"Completed\",\"payload\":{}},\"new\":null,"
        "\"action\":{\"kind\":\"deinitialize\",\"feature\":\"FileDownloading\",\"from\":\"Completed\"}}");
    check_list_clear(&mutations);
    uf_dispatcher_free(d);
}

/* A failure keeps its reason, fills in the default and leaves the optional out. */
static void file_downloading_fails_with_defaults_filled_in(void) {
    uf_dispatcher *d = check_dispatcher(NULL, file_downloading);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"FileDownloading\",\"into\":\"Starting\"}"), UF_OK);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"into\":\"Failed\"}"),
                UF_ESCHEMA, "FileDownloading.Failed.reason: required field missing");
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"into\":\"Failed\","
                              "\"payload\":{\"reason\":\"disk full\"}}"), UF_OK);
    CHECK_STATE(d, "{\"FileDownloading\":{\"state\":\"Failed\",\"payload\":{\"reason\":\"disk full\",\"retries\":0}}}");
    uf_dispatcher_free(d);
}

/* ---- The arithmetic feature: begin -> setExplicit(10) -> incFive ---- */

/* Reads {"val": N} from the payload the via sees. */
static long long current_val(uf_context *ctx) {
    const char *payload = uf_context_payload_json(ctx);
    long long val = -1;
    if (!CHECK(payload != NULL && sscanf(payload, "{\"val\":%lld}", &val) == 1)) return -1;
    return val;
}

static int inc_five_calls;

/* incFive: actualize In<Main> via { val + 5 }. */
static int inc_five(uf_context *ctx, void *payload) {
    (void)payload;
    ++inc_five_calls;
    CHECK_STR(uf_context_feature(ctx), "Main");
    CHECK_STR(uf_context_state(ctx), "Main");
    CHECK_STR(uf_context_payload_json(ctx), "{\"val\":10}");
    char next[64];
    snprintf(next, sizeof next, "{\"val\":%lld}", current_val(ctx) + 5);
    return uf_context_become(ctx, next);
}

/* begin: initialize Into<Main> via { val: 0 }, and queue setExplicit(10) then incFive. */
static int begin(uf_context *ctx, void *payload) {
    int *freed = (int *)payload;
    CHECK_STR(uf_context_feature(ctx), "Main");
    CHECK(uf_context_state(ctx) == NULL);
    CHECK(uf_context_payload_json(ctx) == NULL);
    CHECK(*freed == 0);
    CHECK_STATUS(uf_context_become(ctx, "{\"val\":0}"), UF_OK);

    uf_dispatcher *d = uf_context_dispatcher(ctx);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\","
                              "\"payload\":{\"val\":10},\"context\":\"setExplicit\"}"), UF_QUEUED);
    uf_action inc = UF_ACTION_INIT;
    inc.kind = UF_ACTION_ACTUALIZE;
    inc.feature = "Main";
    inc.into = "Main";
    inc.context = "incFive";
    inc.via = inc_five;
    CHECK_STATUS(uf_dispatch(d, &inc), UF_QUEUED);
    /* Nothing queued has run yet: the via still sees the state before `begin`. */
    CHECK(inc_five_calls == 0);
    return 0;
}

static void arithmetic_via_queues_in_order(void) {
    uf_dispatcher *d = check_dispatcher(NULL, arithmetic);
    check_list mutations = {0};
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, &mutations, NULL, NULL), UF_OK);
    int freed = 0;
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"context\":\"begin\"}",
                               begin, &freed, check_count_free), UF_OK);
    CHECK(freed == 1);
    CHECK(inc_five_calls == 1);
    CHECK_STATE(d, "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":15}}}");
    CHECK_LIST(&mutations,
        "{\"seq\":1,\"kind\":\"initialization\",\"feature\":\"Main\",\"old\":null,"
        "\"new\":{\"state\":\"Main\",\"payload\":{\"val\":0}},"
        "\"action\":{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"context\":\"begin\"}}",
        "{\"seq\":2,\"kind\":\"actualization\",\"feature\":\"Main\","
        "\"old\":{\"state\":\"Main\",\"payload\":{\"val\":0}},\"new\":{\"state\":\"Main\",\"payload\":{\"val\":10}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"context\":\"setExplicit\"}}",
        "{\"seq\":3,\"kind\":\"actualization\",\"feature\":\"Main\","
        "\"old\":{\"state\":\"Main\",\"payload\":{\"val\":10}},\"new\":{\"state\":\"Main\",\"payload\":{\"val\":15}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"context\":\"incFive\"}}");
    check_list_clear(&mutations);
    uf_dispatcher_free(d);
}

/* setExplicit(value): actualize In<Main> via { value }, declining when it would
 * change nothing. */
static int set_explicit(uf_context *ctx, void *payload) {
    long long value = *(const long long *)payload;
    if (current_val(ctx) == value) return 1;
    char next[64];
    snprintf(next, sizeof next, "{\"val\":%lld}", value);
    return uf_context_become(ctx, next);
}

static void set_explicit_to_the_current_value_is_rejected(void) {
    uf_dispatcher *d = check_dispatcher(NULL, arithmetic);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"payload\":{\"val\":15}}"), UF_OK);
    check_list mutations = {0};
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, &mutations, NULL, NULL), UF_OK);

    long long fifteen = 15, twenty = 20;
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_ACTUALIZE;
    a.feature = "Main";
    a.into = "Main";
    a.context = "setExplicit";
    a.via = set_explicit;
    a.via_payload = &fifteen;
    CHECK_ERROR(uf_dispatch(d, &a), UF_REJECTED, "Main: the via callback declined the action");
    CHECK_STATE(d, "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":15}}}");
    CHECK(mutations.count == 0);

    a.via_payload = &twenty;
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_STATE(d, "{\"Main\":{\"state\":\"Main\",\"payload\":{\"val\":20}}}");
    CHECK_LIST(&mutations,
        "{\"seq\":2,\"kind\":\"actualization\",\"feature\":\"Main\","
        "\"old\":{\"state\":\"Main\",\"payload\":{\"val\":15}},\"new\":{\"state\":\"Main\",\"payload\":{\"val\":20}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"context\":\"setExplicit\"}}");
    check_list_clear(&mutations);
    uf_dispatcher_free(d);
}

/* Counts what happened to a via's payload. */
typedef struct via_probe {
    int calls, freed;
} via_probe;

static int probe_via(uf_context *ctx, void *payload) {
    (void)ctx;
    ++((via_probe *)payload)->calls;
    return 0;
}

static void probe_free(void *payload) {
    ++((via_probe *)payload)->freed;
}

static void actions_on_an_uninitialized_feature_are_rejected_naming_it(void) {
    uf_dispatcher *d = check_dispatcher(NULL, arithmetic);
    check_list mutations = {0};
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, &mutations, NULL, NULL), UF_OK);

    CHECK_ERROR(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":1}}"),
                UF_REJECTED, "Main is not initialized (expected state Main)");
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"deinitialize\",\"feature\":\"Main\"}"), UF_REJECTED, "Main is not initialized");
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Main\",\"into\":\"Main\",\"same\":true,\"payload\":{\"val\":1}}"),
                UF_REJECTED, "Main is not initialized");
    CHECK_ERROR_PREFIX(uf_submit(d, "{\"kind\":\"trigger\",\"feature\":\"Main\"}"), UF_REJECTED, "Main is not initialized");

    /* A via never runs when the precondition fails; its payload is still released. */
    via_probe probe = {0, 0};
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_ACTUALIZE;
    a.feature = "Main";
    a.into = "Main";
    a.via = probe_via;
    a.via_payload = &probe;
    a.via_payload_free = probe_free;
    CHECK_ERROR(uf_dispatch(d, &a), UF_REJECTED, "Main is not initialized (expected state Main)");
    CHECK(probe.calls == 0 && probe.freed == 1);
    CHECK_STATE(d, "{}");
    CHECK(mutations.count == 0);
    check_list_clear(&mutations);
    uf_dispatcher_free(d);
}

/* ---- Search: setup -> begin -> simulate (10, 30, 70) -> fail -> cleanup ---- */

static void search_progresses_then_fails(void) {
    uf_dispatcher *d = check_dispatcher(NULL, search);
    check_list updates = {0};
    CHECK_STATUS(uf_subscribe(d, "AnyUpdateOf<Search>", check_record_mutation, &updates, NULL, NULL), UF_OK);

    /* setup */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Search\",\"into\":\"Ready\",\"context\":\"setup\"}"), UF_OK);
    CHECK_STATE(d, "{\"Search\":{\"state\":\"Ready\",\"payload\":{}}}");
    /* begin */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Search\",\"from\":\"Ready\",\"into\":\"InProgress\","
                              "\"payload\":{\"query\":\"uniflow\",\"progress\":0},\"context\":\"begin\"}"), UF_OK);
    /* simulate */
    static const int steps[] = {10, 30, 70};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; ++i) {
        char action[256];
        snprintf(action, sizeof action,
                 "{\"kind\":\"actualize\",\"feature\":\"Search\",\"in\":\"InProgress\","
                 "\"payload\":{\"query\":\"uniflow\",\"progress\":%d},\"context\":\"simulate\"}", steps[i]);
        CHECK_STATUS(uf_submit(d, action), UF_OK);
    }
    CHECK_FEATURE(d, "Search", "{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":70}}");
    /* A search that is running cannot begin again. */
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Search\",\"from\":\"Ready\",\"into\":\"InProgress\","
                             "\"payload\":{\"query\":\"again\",\"progress\":0}}"),
                UF_REJECTED, "Search is in state InProgress, not Ready");
    /* fail */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Search\",\"into\":\"Failed\","
                              "\"payload\":{\"reason\":\"timeout\"},\"context\":\"fail\"}"), UF_OK);
    CHECK_STATE(d, "{\"Search\":{\"state\":\"Failed\",\"payload\":{\"reason\":\"timeout\"}}}");
    /* cleanup */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"deinitialize\",\"feature\":\"Search\",\"from\":\"Failed\",\"context\":\"cleanup\"}"), UF_OK);
    CHECK_STATE(d, "{}");
    CHECK_FEATURE(d, "Search", NULL);

    /* AnyUpdateOf: the transitions and actualizations, not the init or deinit. */
    CHECK_LIST(&updates,
        "{\"seq\":2,\"kind\":\"transition\",\"feature\":\"Search\",\"old\":{\"state\":\"Ready\",\"payload\":{}},"
        "\"new\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":0}},"
        "\"action\":{\"kind\":\"transition\",\"feature\":\"Search\",\"from\":\"Ready\",\"into\":\"InProgress\",\"context\":\"begin\"}}",
        "{\"seq\":3,\"kind\":\"actualization\",\"feature\":\"Search\","
        "\"old\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":0}},"
        "\"new\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":10}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"Search\",\"in\":\"InProgress\",\"context\":\"simulate\"}}",
        "{\"seq\":4,\"kind\":\"actualization\",\"feature\":\"Search\","
        "\"old\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":10}},"
        "\"new\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":30}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"Search\",\"in\":\"InProgress\",\"context\":\"simulate\"}}",
        "{\"seq\":5,\"kind\":\"actualization\",\"feature\":\"Search\","
        "\"old\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":30}},"
        "\"new\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":70}},"
        "\"action\":{\"kind\":\"actualize\",\"feature\":\"Search\",\"in\":\"InProgress\",\"context\":\"simulate\"}}",
        "{\"seq\":6,\"kind\":\"transition\",\"feature\":\"Search\","
        "\"old\":{\"state\":\"InProgress\",\"payload\":{\"query\":\"uniflow\",\"progress\":70}},"
        "\"new\":{\"state\":\"Failed\",\"payload\":{\"reason\":\"timeout\"}},"
        "\"action\":{\"kind\":\"transition\",\"feature\":\"Search\",\"into\":\"Failed\",\"same\":false,\"context\":\"fail\"}}");
    check_list_clear(&updates);
    uf_dispatcher_free(d);
}

int main(void) {
    file_downloading_runs_from_start_to_finish();
    file_downloading_fails_with_defaults_filled_in();
    arithmetic_via_queues_in_order();
    set_explicit_to_the_current_value_is_rejected();
    actions_on_an_uninitialized_feature_are_rejected_naming_it();
    search_progresses_then_fails();
    return check_summary();
}
