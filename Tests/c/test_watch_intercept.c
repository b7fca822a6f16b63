/*
 * test_watch_intercept.c — watches and interceptors from C
 * (docs/watches-and-interceptors.md): a watch's first value and its changes only,
 * deferred and coalesced values, ending a watch; an interceptor's view of the
 * action, its three answers, a veto inside a batch, restores that are not
 * intercepted, bad arguments, and payload_free exactly once.
 */
#include <stddef.h>

#include "check.h"

static const char *const definitions =
    "{\"features\": ["
    " {\"feature\": \"Download\", \"instances\": \"keyed\","
    "  \"states\": {\"Running\": {\"fields\": {\"progress\": {\"type\": \"number\", \"default\": 0}},"
    "                           \"on\": {\"finish\": \"Done\"}},"
    "             \"Done\": {}}},"
    " {\"feature\": \"Lamp\", \"states\": {\"Off\": {}, \"On\": {}}}"
    "]}";

static int count_frees;
static void free_counted(void *payload) {
    (void)payload;
    ++count_frees;
}

/* Records "value <- previous" for every call. */
static int record_watch(const uf_watch_event *w, void *payload) {
    char line[512];
    const char *previous = uf_watch_previous_json(w);
    snprintf(line, sizeof line, "%s <- %s", uf_watch_value_json(w), previous ? previous : "(first)");
    check_list_add((check_list *)payload, line);
    return UF_KEEP;
}

static int stop_at_on(const uf_watch_event *w, void *payload) {
    check_list_add((check_list *)payload, uf_watch_value_json(w));
    return strcmp(uf_watch_value_json(w), "\"On\"") == 0 ? UF_STOP : UF_KEEP;
}

static void a_watch_sees_the_current_value_then_changes(void) {
    check_list values = {0};
    count_frees = 0;
    uf_dispatcher *d = check_dispatcher(NULL, definitions);
    uint64_t id = 0;
    CHECK_STATUS(uf_watch(d, "{\"var\": \"model.Download.a.payload.progress\"}", record_watch, &values,
                          free_counted, &id), UF_OK);
    CHECK(id != 0);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Download\",\"key\":\"a\",\"into\":\"Running\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Download\",\"key\":\"a\",\"in\":\"Running\","
                              "\"payload\":{\"progress\":0.0}}"), UF_OK); /* 0.0 equals 0: no call */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"actualize\",\"feature\":\"Download\",\"key\":\"a\",\"in\":\"Running\","
                              "\"payload\":{\"progress\":50}}"), UF_OK);
    /* A batch is watched once, after it commits. */
    CHECK_STATUS(uf_submit_batch(d, "[{\"kind\":\"actualize\",\"feature\":\"Download\",\"key\":\"a\",\"in\":\"Running\","
                                    "\"payload\":{\"progress\":60}},"
                                    "{\"kind\":\"actualize\",\"feature\":\"Download\",\"key\":\"a\",\"in\":\"Running\","
                                    "\"payload\":{\"progress\":70}}]"), UF_OK);
    /* Another feature's change does not evaluate it. */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK);
    CHECK_LIST(&values, "null <- (first)", "0 <- null", "50 <- 0", "70 <- 50");
    /* Watch ids are subscription ids. */
    CHECK_STATUS(uf_unsubscribe(d, id), UF_OK);
    CHECK(count_frees == 1);
    char expected[64];
    snprintf(expected, sizeof expected, "no subscription with id %llu", (unsigned long long)id);
    CHECK_ERROR(uf_unsubscribe(d, id), UF_ENOTFOUND, expected);
    uf_dispatcher_free(d);
    CHECK(count_frees == 1);
    check_list_clear(&values);
}

static void a_watch_ends_itself_and_payload_free_runs_once(void) {
    check_list values = {0};
    count_frees = 0;
    uf_dispatcher *d = check_dispatcher(NULL, definitions);
    CHECK_STATUS(uf_watch(d, "{\"var\": \"model.Lamp.state\"}", stop_at_on, &values, free_counted, NULL), UF_OK);
    uint64_t other = 0;
    CHECK_STATUS(uf_watch(d, "{\"var\": \"model.Lamp.state\"}", record_watch, &values, free_counted, &other), UF_OK);
    CHECK_STATUS(uf_unsubscribe(d, other), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"Off\"}"), UF_OK);
    CHECK_LIST(&values, "null", "null <- (first)", "\"On\"");
    CHECK(count_frees == 2); /* the one unsubscribed, the one that stopped */
    uf_dispatcher_free(d);
    CHECK(count_frees == 2);
    check_list_clear(&values);
}

static void deferred_values_wait_for_the_loop_and_coalesce(void) {
    check_list values = {0};
    count_frees = 0;
    uf_dispatcher *d = check_dispatcher("{\"timers\": \"host\"}", definitions);
    CHECK_STATUS(uf_watch_deferred(d, "{\"var\": \"model.Lamp.state\"}", record_watch, &values, free_counted, NULL),
                 UF_OK);
    CHECK_LIST(&values, NULL); /* even the first value waits */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"Off\"}"), UF_OK);
    uint64_t done = 0;
    CHECK_STATUS(uf_loop_run(d, &done), UF_OK);
    CHECK(done == 1);
    CHECK_LIST(&values, "\"Off\" <- (first)");
    /* Back to the value last delivered: nothing to deliver. */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_loop_run(d, &done), UF_OK);
    CHECK(done == 0);
    uf_dispatcher_free(d);
    CHECK(count_frees == 1);
    check_list_clear(&values);
}

static void bad_watches_are_refused(void) {
    uf_dispatcher *d = check_dispatcher(NULL, definitions);
    CHECK_STATUS(uf_watch(d, "{\"var\": ", record_watch, NULL, NULL, NULL), UF_EJSON);
    CHECK_ERROR_PREFIX(uf_watch(d, "{\"no_such_operator\": []}", record_watch, NULL, NULL, NULL), UF_ESCHEMA, "");
    CHECK_CONTAINS(uf_last_error(), "no_such_operator");
    CHECK_STATUS(uf_watch(d, "{\"var\": \"model.Lamp\"}", NULL, NULL, NULL, NULL), UF_EINVAL);
    CHECK_STATUS(uf_watch(d, NULL, record_watch, NULL, NULL, NULL), UF_EINVAL);
    CHECK_STATUS(uf_watch(NULL, "{\"var\": \"model.Lamp\"}", record_watch, NULL, NULL, NULL), UF_EINVAL);
    uf_dispatcher_free(d);
}

/* ---- interceptors ---------------------------------------------------------- */

typedef struct interception {
    check_list seen;
    int answer;          /* what to return */
    const char *reason;  /* set before a veto, when not NULL */
    int end_itself;
} interception;

static int intercept(uf_intercepted *a, void *payload) {
    interception *it = payload;
    char line[600];
    const char *key = uf_intercepted_key(a);
    const char *state = uf_intercepted_state(a);
    snprintf(line, sizeof line, "%d %s[%s] %s %s", (int)uf_intercepted_kind(a), uf_intercepted_feature(a),
             key ? key : "", state ? state : "-", uf_intercepted_json(a));
    check_list_add(&it->seen, line);
    if (it->reason) uf_intercepted_set_reason(a, it->reason);
    if (it->end_itself) uf_unsubscribe(uf_intercepted_dispatcher(a), uf_intercepted_id(a));
    return it->answer;
}

static void an_interceptor_sees_each_action_before_it_applies(void) {
    interception it = {0};
    uf_dispatcher *d = check_dispatcher(NULL, definitions);
    CHECK_STATUS(uf_intercept(d, "Download", intercept, &it, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Download\",\"key\":\"a\",\"into\":\"Running\"}"), UF_OK);
    CHECK_STATUS(uf_send(d, "Download", "a", "finish", NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK); /* not seen */
    CHECK_LIST(&it.seen,
               /* No payload carried: none shown, though the state's default will be stored. */
               "1 Download[a] Running {\"kind\":\"initialize\",\"feature\":\"Download\",\"key\":\"a\",\"into\":\"Running\"}",
               "6 Download[a] Done {\"kind\":\"send\",\"feature\":\"Download\",\"key\":\"a\",\"event\":\"finish\",\"into\":\"Done\"}");
    /* Restores install what happened: not intercepted. */
    CHECK_STATUS(uf_state_restore(d, "{\"Lamp\":{\"state\":\"Off\",\"payload\":{}}}"), UF_OK);
    CHECK(check_list_count(&it.seen, "") == 2);
    uf_dispatcher_free(d);
    check_list_clear(&it.seen);
}

/* What a timer submits shows the timer, as a mutation's "action" does. */
static void a_timers_action_names_its_timer(void) {
    interception it = {0};
    uf_dispatcher *d = check_dispatcher("{\"clock\": \"manual\"}", definitions);
    CHECK_STATUS(uf_intercept(d, "Lamp", intercept, &it, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_submit_after(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}", 10, "t1", 0),
                 UF_OK);
    CHECK_STATUS(uf_clock_advance(d, 10), UF_OK);
    CHECK_LIST(&it.seen, "1 Lamp[] On {\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\",\"timer\":\"t1\"}");
    CHECK_STATE(d, "{\"Lamp\":{\"state\":\"On\",\"payload\":{}}}");
    uf_dispatcher_free(d);
    check_list_clear(&it.seen);
}

static void vetoes_and_failures(void) {
    interception it = {0};
    uf_dispatcher *d = check_dispatcher(NULL, definitions);
    uint64_t id = 0;
    CHECK_STATUS(uf_intercept(d, NULL, intercept, &it, NULL, &id), UF_OK);
    char expected[64];
    it.answer = 1;
    snprintf(expected, sizeof expected, "intercepted by %llu", (unsigned long long)id);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_REJECTED, expected);
    it.reason = "the lamp stays off";
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_REJECTED,
                "the lamp stays off");
    it.reason = NULL;
    it.answer = -3;
    snprintf(expected, sizeof expected, "Lamp: interceptor %llu failed (returned -3)", (unsigned long long)id);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_ECALLBACK, expected);
    CHECK_STATE(d, "{}");

    /* In a batch, a veto of one action fails them all. */
    it.answer = 0;
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK);
    it.answer = 1;
    CHECK_STATUS(uf_submit_batch(d, "[{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"Off\"},"
                                    "{\"kind\":\"initialize\",\"feature\":\"Download\",\"key\":\"b\",\"into\":\"Running\"}]"),
                 UF_REJECTED);
    CHECK_STATE(d, "{\"Lamp\":{\"state\":\"On\",\"payload\":{}}}");

    /* Ended from inside: called for this action, not for the next. */
    it.answer = 0;
    it.end_itself = 1;
    check_list_clear(&it.seen);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK);
    CHECK(check_list_count(&it.seen, "") == 1);
    CHECK_ERROR_PREFIX(uf_unsubscribe(d, id), UF_ENOTFOUND, "");
    uf_dispatcher_free(d);
    check_list_clear(&it.seen);
}

static void bad_interceptors_are_refused_and_payload_free_runs_once(void) {
    count_frees = 0;
    uf_dispatcher *d = check_dispatcher(NULL, definitions);
    CHECK_ERROR(uf_intercept(d, "Nope", intercept, NULL, free_counted, NULL), UF_ENOTFOUND, "unknown feature 'Nope'");
    CHECK(count_frees == 1); /* a refused registration releases its payload at once */
    CHECK_STATUS(uf_intercept(d, NULL, NULL, NULL, NULL, NULL), UF_EINVAL);
    CHECK_STATUS(uf_intercepted_set_reason(NULL, "x"), UF_EINVAL);
    CHECK(uf_intercepted_feature(NULL) == NULL);
    CHECK(uf_watch_value_json(NULL) == NULL);
    interception it = {0};
    CHECK_STATUS(uf_intercept(d, "Lamp", intercept, &it, free_counted, NULL), UF_OK);
    uf_dispatcher_free(d);
    CHECK(count_frees == 2);
    check_list_clear(&it.seen);
}

/* ---- Interceptors ended by a payload_free, while a loop walks their list ---- */

static uf_dispatcher *ending_d;
static uint64_t ending_ids[4];
static int ending_calls[4], ending_frees[4];
static int ending_self;

static int count_and_maybe_end(uf_intercepted *a, void *payload) {
    int n = (int)(intptr_t)payload;
    ++ending_calls[n];
    if (n == 0 && ending_self) uf_unsubscribe(uf_intercepted_dispatcher(a), uf_intercepted_id(a));
    return UF_OK;
}

/* A's payload_free ends B: inside the interceptor loop (A ended itself, and is
 * released once it returned), or inside uf_dispatcher_free's release of every one. */
static void free_and_end_b(void *payload) {
    int n = (int)(intptr_t)payload;
    ++ending_frees[n];
    if (n == 0) CHECK_STATUS(uf_unsubscribe(ending_d, ending_ids[1]), UF_OK);
}

static void interceptors_ended_under_a_walk_of_their_list_skip_none(void) {
    for (int run = 0; run < 2; ++run) {
        ending_self = run == 0;
        memset(ending_calls, 0, sizeof ending_calls);
        memset(ending_frees, 0, sizeof ending_frees);
        ending_d = check_dispatcher(NULL, "{\"feature\":\"Lamp\",\"states\":{\"Off\":{},\"On\":{}}}");
        for (int i = 0; i < 4; ++i) {
            CHECK_STATUS(uf_intercept(ending_d, NULL, count_and_maybe_end, (void *)(intptr_t)i, free_and_end_b,
                                      &ending_ids[i]), UF_OK);
        }
        if (ending_self) {
            CHECK_STATUS(uf_submit(ending_d, "{\"kind\":\"initialize\",\"feature\":\"Lamp\",\"into\":\"Off\"}"), UF_OK);
            /* B ended before its turn; C and D, alive, are called in order. */
            CHECK(ending_calls[0] == 1 && ending_calls[1] == 0 && ending_calls[2] == 1 && ending_calls[3] == 1);
            CHECK_STATUS(uf_submit(ending_d, "{\"kind\":\"transition\",\"feature\":\"Lamp\",\"into\":\"On\"}"), UF_OK);
            CHECK(ending_calls[0] == 1 && ending_calls[1] == 0 && ending_calls[2] == 2 && ending_calls[3] == 2);
        }
        uf_dispatcher_free(ending_d);
        CHECK(ending_frees[0] == 1 && ending_frees[1] == 1 && ending_frees[2] == 1 && ending_frees[3] == 1);
    }
}

/* A watch's payload_free that ends another watch: when it is unsubscribed, and
 * when uf_dispatcher_free releases every watch. */
static uint64_t watch_ids[2];
static int watch_frees[2];

static int ignore_value(const uf_watch_event *w, void *payload) {
    (void)w;
    (void)payload;
    return UF_KEEP;
}

static void free_and_end_the_other(void *payload) {
    int n = (int)(intptr_t)payload;
    ++watch_frees[n];
    if (n == 0) CHECK_STATUS(uf_unsubscribe(ending_d, watch_ids[1]), UF_OK);
}

static void watches_ended_by_a_payload_free_are_released_once(void) {
    for (int run = 0; run < 2; ++run) {
        memset(watch_frees, 0, sizeof watch_frees);
        ending_d = check_dispatcher(NULL, "{\"feature\":\"Lamp\",\"states\":{\"Off\":{},\"On\":{}}}");
        for (int i = 0; i < 2; ++i) {
            CHECK_STATUS(uf_watch(ending_d, "{\"var\":\"model.Lamp\"}", ignore_value, (void *)(intptr_t)i,
                                  free_and_end_the_other, &watch_ids[i]), UF_OK);
        }
        if (run == 0) {
            CHECK_STATUS(uf_unsubscribe(ending_d, watch_ids[0]), UF_OK);
            CHECK(watch_frees[0] == 1 && watch_frees[1] == 1);
        }
        uf_dispatcher_free(ending_d);
        CHECK(watch_frees[0] == 1 && watch_frees[1] == 1);
    }
}

int main(void) {
    a_watch_sees_the_current_value_then_changes();
    a_watch_ends_itself_and_payload_free_runs_once();
    deferred_values_wait_for_the_loop_and_coalesce();
    bad_watches_are_refused();
    an_interceptor_sees_each_action_before_it_applies();
    a_timers_action_names_its_timer();
    vetoes_and_failures();
    bad_interceptors_are_refused_and_payload_free_runs_once();
    interceptors_ended_under_a_walk_of_their_list_skip_none();
    watches_ended_by_a_payload_free_are_released_once();
    return check_summary();
}
