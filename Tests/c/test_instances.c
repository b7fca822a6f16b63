/*
 * test_instances.c — keyed instances from C (docs/instances.md): keys through
 * uf_action and JSON, every bad key with its status and message, reading one
 * instance or all, mutations and filters naming instances, bindings and vias per
 * instance, and restores that change nothing when an instance is malformed.
 */
#include <stddef.h>

#include "check.h"

static const char *const downloads =
    "{\"features\": ["
    " {\"feature\": \"Download\", \"instances\": \"keyed\","
    "  \"states\": {\"Running\": {\"fields\": {\"progress\": {\"type\": \"number\", \"default\": 0}}},"
    "             \"Completed\": {}},"
    "  \"initial\": [\"Running\"], \"transitions\": {\"Running\": [\"Completed\"]},"
    "  \"bindings\": [{\"when\": \"ActualizationIn<Download.Running>\","
    "                 \"given\": [{\"if\": {\">=\": [{\"var\": \"mutation.new.payload.progress\"}, 100]}}],"
    "                 \"then\": {\"submit\": [{\"kind\": \"transition\", \"feature\": \"Download\", \"into\": \"Completed\"}]}}]},"
    " {\"feature\": \"Lamp\", \"states\": {\"On\": {}}}"
    "]}";

static uf_action keyed(uf_action_kind kind, const char *into, const char *key) {
    uf_action a = UF_ACTION_INIT;
    a.kind = kind;
    a.feature = "Download";
    a.into = into;
    a.key = key;
    return a;
}

static void instances_live_side_by_side(void) {
    check_list mutations = {0}, only_b = {0};
    uf_dispatcher *d = check_dispatcher(NULL, downloads);
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, &mutations, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "AnyMutationOf<Download[b]>", check_record_mutation, &only_b, NULL, NULL), UF_OK);

    char *json = NULL;
    CHECK_STATUS(uf_feature_get(d, "Download", &json), UF_OK);
    CHECK(json == NULL); /* no instance lives */

    uf_action a = keyed(UF_ACTION_INITIALIZE, "Running", "b");
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    a.key = "a";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Download\",\"key\":\"a\",\"in\":\"Running\","
                              "\"payload\":{\"progress\":100}}"), UF_OK);
    /* The binding completed `a` only: a template without a key acts on its instance. */
    CHECK_STATE(d, "{\"Download\":{\"b\":{\"state\":\"Running\",\"payload\":{\"progress\":0}},"
                   "\"a\":{\"state\":\"Completed\",\"payload\":{}}}}");
    CHECK_STATUS(uf_feature_get(d, "Download", &json), UF_OK);
    CHECK_STR(json, "{\"b\":{\"state\":\"Running\",\"payload\":{\"progress\":0}},"
                    "\"a\":{\"state\":\"Completed\",\"payload\":{}}}");
    uf_free(json);
    CHECK_STATUS(uf_instance_get(d, "Download", "a", &json), UF_OK);
    CHECK_STR(json, "{\"state\":\"Completed\",\"payload\":{}}");
    uf_free(json);
    json = (char *)"untouched";
    CHECK_STATUS(uf_instance_get(d, "Download", "zzz", &json), UF_OK);
    CHECK(json == NULL);
    CHECK_ERROR(uf_instance_get(d, "Lamp", "a", &json), UF_ESCHEMA, "Lamp is a single feature: it has no instances");
    CHECK_ERROR(uf_instance_get(d, "Nope", "a", &json), UF_ENOTFOUND, "unknown feature 'Nope'");

    /* Every mutation carries its key; the filter saw b's only. */
    CHECK(check_list_count(&mutations, "\"key\":\"a\"") == 3);
    CHECK(check_list_count(&mutations, "\"key\":\"b\"") == 1);
    CHECK_LIST(&only_b,
               "{\"seq\":1,\"kind\":\"initialization\",\"feature\":\"Download\",\"key\":\"b\",\"old\":null,"
               "\"new\":{\"state\":\"Running\",\"payload\":{\"progress\":0}},"
               "\"action\":{\"kind\":\"initialize\",\"feature\":\"Download\",\"key\":\"b\",\"into\":\"Running\"}}");

    /* Deinitializing the last instance removes the feature from the model. */
    a = keyed(UF_ACTION_DEINITIALIZE, NULL, "a");
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    a.key = "b";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_STATE(d, "{}");
    uf_dispatcher_free(d);
    check_list_clear(&mutations);
    check_list_clear(&only_b);
}

static void bad_keys_are_refused_before_anything_happens(void) {
    uf_dispatcher *d = check_dispatcher(NULL, downloads);
    static const struct {
        const char *key;
        const char *problem;
    } cases[] = {
        {"", "a key must not be empty"},
        {"a.b", "'a.b' contains '.'"},
        {"a b", "'a b' contains a blank"},
        {"a[", "'a[' contains '['"},
        {"a]", "'a]' contains ']'"},
        {"a<", "'a<' contains '<'"},
        {"a>", "'a>' contains '>'"},
        {"a,", "'a,' contains ','"},
        /* Beyond ASCII: a C1 control (NEL, shown escaped), Unicode's blanks. */
        {"a\xc2\x85" "z", "'a\\u0085z' contains a control character"},
        {"a\xc2\xa0" "z", "'a\xc2\xa0" "z' contains a blank"},
        {"a\xe3\x80\x80" "z", "'a\xe3\x80\x80" "z' contains a blank"},
        {"a\xe2\x80\xa8" "z", "'a\xe2\x80\xa8" "z' contains a blank"},
    };
    char expected[512], json[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uf_action a = keyed(UF_ACTION_INITIALIZE, "Running", cases[i].key);
        snprintf(expected, sizeof expected, "uf_action.key: %s", cases[i].problem);
        CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, expected);
        snprintf(json, sizeof json, "{\"kind\":\"initialize\",\"feature\":\"Download\",\"into\":\"Running\",\"key\":\"%s\"}",
                 cases[i].key);
        snprintf(expected, sizeof expected, "action.key: %s", cases[i].problem);
        CHECK_ERROR(uf_submit(d, json), UF_ESCHEMA, expected);
    }
    char tab[] = "a\tb";
    uf_action a = keyed(UF_ACTION_INITIALIZE, "Running", tab);
    CHECK_STATUS(uf_dispatch(d, &a), UF_EINVAL);
    char long_key[300];
    memset(long_key, 'k', 257);
    long_key[257] = '\0';
    a.key = long_key;
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "uf_action.key: a key is at most 256 bytes, got 257");
    long_key[256] = '\0'; /* 256 bytes: allowed */
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    /* Letters beyond ASCII are fine (a, e acute, CJK, an emoji). */
    a.key = "caf\xc3\xa9_\xe6\x96\x87\xf0\x9f\x93\x84";
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);

    a.key = NULL;
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "Download is keyed: an action on it needs a key");
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Download\",\"into\":\"Running\"}"), UF_ESCHEMA,
                "Download is keyed: an action on it needs a key");
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\",\"key\":\"k\"}"), UF_ESCHEMA,
                "Lamp is a single feature: an action on it takes no key");
    CHECK_ERROR(uf_subscribe(d, "AnyMutationOf<Lamp[k]>", check_record_mutation, NULL, NULL, NULL), UF_ESCHEMA,
                "filter 'AnyMutationOf<Lamp[k]>': Lamp is a single feature: it has no instances to name with [key]");
    /* Nothing but the 256-byte key's instance came to life. */
    char *state = NULL;
    CHECK_STATUS(uf_state_get(d, &state), UF_OK);
    CHECK(state != NULL && strstr(state, "\"Lamp\"") == NULL && strstr(state, "\"a\"") == NULL);
    uf_free(state);
    uf_dispatcher_free(d);
}

static void live_and_dead_keys_are_rejections(void) {
    uf_dispatcher *d = check_dispatcher(NULL, downloads);
    uf_action a = keyed(UF_ACTION_INITIALIZE, "Running", "z");
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_ERROR(uf_dispatch(d, &a), UF_REJECTED, "Download[z] is already initialized (in state Running)");
    a = keyed(UF_ACTION_TRANSITION, "Completed", "q");
    CHECK_ERROR(uf_dispatch(d, &a), UF_REJECTED, "Download[q] is not initialized");
    uf_dispatcher_free(d);
}

static int via_sees_the_key(uf_context *ctx, void *payload) {
    check_list_add((check_list *)payload, uf_context_key(ctx));
    return uf_context_become(ctx, "{\"progress\": 7}");
}

static void a_via_reads_its_instance(void) {
    check_list keys = {0};
    uf_dispatcher *d = check_dispatcher(NULL, downloads);
    uf_action a = keyed(UF_ACTION_INITIALIZE, "Running", "v1");
    a.via = via_sees_the_key;
    a.via_payload = &keys;
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK_LIST(&keys, "v1");
    CHECK_FEATURE(d, "Download", "{\"v1\":{\"state\":\"Running\",\"payload\":{\"progress\":7}}}");
    uf_dispatcher_free(d);
    check_list_clear(&keys);
}

static void a_malformed_instance_restores_nothing(void) {
    uf_dispatcher *d = check_dispatcher(NULL, downloads);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Download\",\"key\":\"a\",\"into\":\"Running\"}"),
                 UF_OK);
    static const char *const bad[] = {
        "{\"Download\": {\"state\": \"Running\", \"payload\": {}}}",
        "{\"Download\": {\"a\": \"Running\"}}",
        "{\"Download\": {\"a.b\": {\"state\": \"Running\", \"payload\": {}}}}",
        "{\"Download\": {\"b\": {\"state\": \"Running\", \"payload\": {\"progress\": \"x\"}}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int status = uf_state_restore(d, bad[i]);
        CHECK(status == UF_ESCHEMA);
        CHECK(uf_last_error()[0] != '\0');
    }
    CHECK_STATE(d, "{\"Download\":{\"a\":{\"state\":\"Running\",\"payload\":{\"progress\":0}}}}");
    CHECK_STATUS(uf_state_restore(d, "{\"Download\": {\"x\": {\"state\": \"Completed\", \"payload\": {}},"
                                     " \"y\": {\"state\": \"Running\", \"payload\": {\"progress\": 5}}}}"), UF_OK);
    CHECK_STATE(d, "{\"Download\":{\"x\":{\"state\":\"Completed\",\"payload\":{}},"
                   "\"y\":{\"state\":\"Running\",\"payload\":{\"progress\":5}}}}");
    uf_dispatcher_free(d);
}

static void a_graph_marks_a_keyed_feature(void) {
    uf_dispatcher *d = check_dispatcher(NULL, downloads);
    char *dot = NULL;
    CHECK_STATUS(uf_graph_dot(d, "Download", &dot), UF_OK);
    CHECK_CONTAINS(dot, "label=\"Download [key]\"");
    uf_free(dot);
    uf_dispatcher_free(d);
}

int main(void) {
    instances_live_side_by_side();
    bad_keys_are_refused_before_anything_happens();
    live_and_dead_keys_are_rejections();
    a_via_reads_its_instance();
    a_malformed_instance_restores_nothing();
    a_graph_marks_a_keyed_feature();
    return check_summary();
}
