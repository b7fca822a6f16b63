/*
 * test_misuse.c — what a careless or unlucky host does, and what it gets back.
 *
 * NULL for every pointer argument (a status and a message naming the function
 * and the argument, never a crash), unknown and stale subscription ids,
 * uf_dispatcher_free from inside the dispatcher's own callbacks, subscribers that
 * end subscriptions while being notified, and the rule that every payload_free
 * runs exactly once (uniflow.h "Conventions"; docs/processing.md, "payload_free").
 */
#include "check.h"

static const char *const toggle = "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}}";
static const char *const progress =
    "{\"feature\":\"Progress\",\"states\":{\"Idle\":{},\"Running\":{\"fields\":{\"percent\":\"integer\"}}}}";

static int keep(const uf_mutation *m, void *payload) {
    (void)m;
    (void)payload;
    return UF_KEEP;
}

static int go_on(uf_context *ctx, void *payload) {
    (void)ctx;
    (void)payload;
    return 0;
}

static void ignore_report(const char *report, void *payload) {
    (void)report;
    (void)payload;
}

static int handle(uf_binding_call *call, void *payload) {
    (void)call;
    (void)payload;
    return 1;
}

/* ---- NULL arguments ---- */

/* Inside a via: the uf_context_* functions with NULL. */
static int null_context_arguments(uf_context *ctx, void *payload) {
    (void)payload;
    CHECK(uf_context_feature(NULL) == NULL);
    CHECK(uf_context_state(NULL) == NULL);
    CHECK(uf_context_payload_json(NULL) == NULL);
    CHECK(uf_context_dispatcher(NULL) == NULL);
    CHECK_ERROR(uf_context_become(NULL, "{}"), UF_EINVAL, "uf_context_become: ctx is NULL");
    CHECK_ERROR(uf_context_become(ctx, NULL), UF_EINVAL, "uf_context_become: payload_json is NULL");
    return 0;
}

static int null_mutation_arguments(const uf_mutation *m, void *payload) {
    (void)m;
    (void)payload;
    CHECK(uf_mutation_dispatcher(NULL) == NULL);
    CHECK(uf_mutation_subscription_id(NULL) == 0);
    CHECK(uf_mutation_kind_of(NULL) == (uf_mutation_kind)0);
    CHECK(uf_mutation_feature(NULL) == NULL);
    CHECK(uf_mutation_old_state(NULL) == NULL);
    CHECK(uf_mutation_new_state(NULL) == NULL);
    CHECK(uf_mutation_old_payload_json(NULL) == NULL);
    CHECK(uf_mutation_new_payload_json(NULL) == NULL);
    CHECK(uf_mutation_json(NULL) == NULL);
    CHECK(uf_mutation_seq(NULL) == 0);
    return UF_STOP;
}

static void every_null_argument_is_refused(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    char *out = (char *)"untouched";
    int freed = 0;

    CHECK_ERROR(uf_dispatcher_new(NULL, NULL), UF_EINVAL, "uf_dispatcher_new: out is NULL");
    uf_dispatcher_free(NULL); /* no-op */
    uf_free(NULL);            /* no-op */

    CHECK_ERROR(uf_register(NULL, toggle), UF_EINVAL, "uf_register: dispatcher is NULL");
    CHECK_ERROR(uf_register(d, NULL), UF_EINVAL, "uf_register: definitions_json is NULL");
    CHECK_ERROR(uf_register_file(NULL, "x.json"), UF_EINVAL, "uf_register_file: dispatcher is NULL");
    CHECK_ERROR(uf_register_file(d, NULL), UF_EINVAL, "uf_register_file: path is NULL");

    CHECK_ERROR(uf_submit(NULL, "{}"), UF_EINVAL, "uf_submit: dispatcher is NULL");
    CHECK_ERROR(uf_submit(d, NULL), UF_EINVAL, "uf_submit: action_json is NULL");

    CHECK_ERROR(uf_state_get(NULL, &out), UF_EINVAL, "uf_state_get: dispatcher is NULL");
    CHECK_ERROR(uf_state_get(d, NULL), UF_EINVAL, "uf_state_get: out_json is NULL");
    CHECK_ERROR(uf_feature_get(NULL, "Toggle", &out), UF_EINVAL, "uf_feature_get: dispatcher is NULL");
    CHECK_ERROR(uf_feature_get(d, NULL, &out), UF_EINVAL, "uf_feature_get: feature is NULL");
    CHECK_ERROR(uf_feature_get(d, "Toggle", NULL), UF_EINVAL, "uf_feature_get: out_json is NULL");
    CHECK_ERROR(uf_definitions_get(NULL, &out), UF_EINVAL, "uf_definitions_get: dispatcher is NULL");
    CHECK_ERROR(uf_definitions_get(d, NULL), UF_EINVAL, "uf_definitions_get: out_json is NULL");
    CHECK_ERROR(uf_graph_dot(NULL, NULL, &out), UF_EINVAL, "uf_graph_dot: dispatcher is NULL");
    CHECK_ERROR(uf_graph_dot(d, NULL, NULL), UF_EINVAL, "uf_graph_dot: out_dot is NULL");
    CHECK_ERROR(uf_graph_dot(d, "Toggle", NULL), UF_EINVAL, "uf_graph_dot: out_dot is NULL");

    CHECK_ERROR(uf_submit_batch(NULL, "[]"), UF_EINVAL, "uf_submit_batch: dispatcher is NULL");
    CHECK_ERROR(uf_submit_batch(d, NULL), UF_EINVAL, "uf_submit_batch: actions_json_array is NULL");
    CHECK_ERROR(uf_state_restore(NULL, "{}"), UF_EINVAL, "uf_state_restore: dispatcher is NULL");
    CHECK_ERROR(uf_state_restore(d, NULL), UF_EINVAL, "uf_state_restore: model_json is NULL");
    CHECK_ERROR(uf_replay_file(NULL, "x.jsonl"), UF_EINVAL, "uf_replay_file: dispatcher is NULL");
    CHECK_ERROR(uf_replay_file(d, NULL), UF_EINVAL, "uf_replay_file: journal_path is NULL");

    /* uf_dispatch: the struct, the dispatcher, and the struct's required strings.
     * The via payload is released whatever the outcome. */
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_INITIALIZE;
    a.feature = "Toggle";
    a.into = "On";
    a.via = go_on;
    a.via_payload = &freed;
    a.via_payload_free = check_count_free;
    CHECK_ERROR(uf_dispatch(d, NULL), UF_EINVAL, "uf_dispatch: action is NULL");
    CHECK_ERROR(uf_dispatch(NULL, &a), UF_EINVAL, "uf_dispatch: dispatcher is NULL");
    CHECK(freed == 1);
    a.feature = NULL;
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "uf_action.feature is NULL");
    CHECK(freed == 2);
    a.feature = "Toggle";
    a.into = NULL;
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "uf_action: 'into' is required on an initialize action");
    CHECK(freed == 3);
    a.kind = UF_ACTION_TRANSITION;
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "uf_action: 'into' is required on a transition action");
    CHECK(freed == 4);

    a.kind = UF_ACTION_INITIALIZE;
    a.into = "On";
    CHECK_ERROR(uf_dispatch_try(d, NULL), UF_EINVAL, "uf_dispatch_try: action is NULL");
    CHECK_ERROR(uf_dispatch_try(NULL, &a), UF_EINVAL, "uf_dispatch_try: dispatcher is NULL");
    CHECK(freed == 5);
    a.feature = NULL;
    CHECK_ERROR(uf_dispatch_try(d, &a), UF_EINVAL, "uf_action.feature is NULL");
    CHECK(freed == 6);
    a.feature = "Toggle";

    freed = 0;
    CHECK_ERROR(uf_submit_via(NULL, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}", go_on, &freed, check_count_free),
                UF_EINVAL, "uf_submit_via: dispatcher is NULL");
    CHECK_ERROR(uf_submit_via(d, NULL, go_on, &freed, check_count_free), UF_EINVAL, "uf_submit_via: action_json is NULL");
    CHECK_ERROR(uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}", NULL, &freed, check_count_free),
                UF_EINVAL, "uf_submit_via: via is NULL");
    CHECK(freed == 3);
    /* NULL payload and payload_free are allowed. */
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}", null_context_arguments, NULL, NULL), UF_OK);

    freed = 0;
    CHECK_ERROR(uf_subscribe(NULL, NULL, keep, &freed, check_count_free, NULL), UF_EINVAL, "uf_subscribe: dispatcher is NULL");
    CHECK_ERROR(uf_subscribe(d, NULL, NULL, &freed, check_count_free, NULL), UF_EINVAL, "uf_subscribe: fn is NULL");
    CHECK(freed == 2);
    /* when, payload, payload_free and out_id may all be NULL. */
    CHECK_STATUS(uf_subscribe(d, NULL, null_mutation_arguments, NULL, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK_ERROR(uf_unsubscribe(NULL, 1), UF_EINVAL, "uf_unsubscribe: dispatcher is NULL");

    freed = 0;
    CHECK_ERROR(uf_set_reporter(NULL, ignore_report, &freed, check_count_free), UF_EINVAL, "uf_set_reporter: dispatcher is NULL");
    CHECK(freed == 1);

    freed = 0;
    CHECK_ERROR(uf_register_handler(NULL, "h", handle, &freed, check_count_free), UF_EINVAL, "uf_register_handler: dispatcher is NULL");
    CHECK_ERROR(uf_register_handler(d, NULL, handle, &freed, check_count_free), UF_EINVAL, "uf_register_handler: name is NULL");
    CHECK_ERROR(uf_register_handler(d, "h", NULL, &freed, check_count_free), UF_EINVAL, "uf_register_handler: fn is NULL");
    CHECK(freed == 3);

    CHECK(uf_binding_call_mutation_json(NULL) == NULL);
    CHECK(uf_binding_call_given_json(NULL) == NULL);
    CHECK(uf_binding_call_dispatcher(NULL) == NULL);
    CHECK_ERROR(uf_binding_call_set_output(NULL, "1"), UF_EINVAL, "uf_binding_call_set_output: call is NULL");

    CHECK_ERROR(uf_logic_apply(NULL, "{}", &out), UF_EINVAL, "uf_logic_apply: rule_json is NULL");
    CHECK_ERROR(uf_logic_apply("{\"var\":\"a\"}", "{}", NULL), UF_EINVAL, "uf_logic_apply: out_json is NULL");
    /* data_json NULL means null. */
    out = NULL;
    CHECK_STATUS(uf_logic_apply("{\"var\":\"a\"}", NULL, &out), UF_OK);
    CHECK_STR(out, "null");
    uf_free(out);

    /* Nothing above changed the model, and out was never written on failure... */
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    uf_dispatcher_free(d);

    /* ...except uf_dispatcher_new, which clears *out on failure. */
    uf_dispatcher *nd = (uf_dispatcher *)&freed;
    CHECK_STATUS(uf_dispatcher_new(&nd, "{\"colour\":true}"), UF_EINVAL);
    CHECK(nd == NULL);

    /* Static texts never fail. */
    CHECK_STR(uf_status_name(UF_EMISUSE), "UF_EMISUSE");
    CHECK_STR(uf_status_name(12345), "UF_UNKNOWN");
    CHECK(uf_strerror(-12345) != NULL && uf_strerror(-12345)[0] != '\0');
}

/* Inside a model binding's handler: the uf_binding_call_* functions with NULL
 * and bad arguments, and uf_dispatcher_free. */
static int handler_calls;

static int probe_handler(uf_binding_call *call, void *payload) {
    uf_dispatcher *d = (uf_dispatcher *)payload;
    ++handler_calls;
    CHECK(uf_binding_call_dispatcher(call) == d);
    CHECK_PREFIX(uf_binding_call_mutation_json(call), "{\"seq\":1,\"kind\":\"initialization\",\"feature\":\"Toggle\"");
    CHECK_ERROR(uf_binding_call_set_output(call, NULL), UF_EINVAL, "uf_binding_call_set_output: json is NULL");
    uf_dispatcher_free(d);
    CHECK_STATUS(uf_last_status(), UF_EMISUSE);
    if (handler_calls == 1) {
        /* given */
        CHECK_STR(uf_binding_call_given_json(call), "null");
        CHECK_ERROR_PREFIX(uf_binding_call_set_output(call, "{"), UF_EJSON, "line 1, column");
        CHECK_STATUS(uf_binding_call_set_output(call, "{\"ok\":true}"), UF_OK);
        return 1;
    }
    /* then */
    CHECK_STR(uf_binding_call_given_json(call), "{\"ok\":true}");
    CHECK_ERROR(uf_binding_call_set_output(call, "1"), UF_EMISUSE, "uf_binding_call_set_output is only allowed in a given clause");
    return 0;
}

static void handlers_get_null_and_misuse_refused(void) {
    uf_dispatcher *d = check_dispatcher(NULL, NULL);
    CHECK_STATUS(uf_register_handler(d, "probe", probe_handler, d, NULL), UF_OK);
    CHECK_STATUS(uf_register(d, "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}},"
                                "\"bindings\":[{\"when\":\"Initialization<Toggle>\",\"given\":[{\"call\":\"probe\"}],"
                                "\"then\":{\"call\":\"probe\"}}]}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK(handler_calls == 2);
    /* A binding naming a handler that is not registered. */
    CHECK_ERROR_PREFIX(uf_register(d, "{\"feature\":\"Other\",\"states\":{\"A\":{}},"
                                      "\"bindings\":[{\"when\":\"AnyMutation\",\"then\":{\"call\":\"nobody\"}}]}"),
                       UF_ENOTFOUND, "features[0].bindings[0]");
    uf_dispatcher_free(d);
}

/* ---- Subscription ids ---- */

static void unknown_and_used_subscription_ids_are_not_found(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_ERROR(uf_unsubscribe(d, 0), UF_ENOTFOUND, "no subscription with id 0");
    CHECK_ERROR(uf_unsubscribe(d, 4242), UF_ENOTFOUND, "no subscription with id 4242");
    CHECK_ERROR(uf_unsubscribe(d, UINT64_MAX), UF_ENOTFOUND, "no subscription with id 18446744073709551615");

    int freed = 0;
    uint64_t id = 0, next = 0;
    CHECK_STATUS(uf_subscribe(d, NULL, keep, &freed, check_count_free, &id), UF_OK);
    CHECK(id != 0);
    CHECK_STATUS(uf_unsubscribe(d, id), UF_OK);
    CHECK(freed == 1);
    CHECK_ERROR(uf_unsubscribe(d, id), UF_ENOTFOUND, "no subscription with id 1");
    CHECK(freed == 1);
    /* The next id is new even though the old one is gone. */
    CHECK_STATUS(uf_subscribe(d, NULL, keep, NULL, NULL, &next), UF_OK);
    CHECK(next != 0 && next != id);
    /* An id of another dispatcher means nothing here. */
    uf_dispatcher *other = check_dispatcher(NULL, toggle);
    uint64_t foreign = 0;
    for (int i = 0; i < 5; ++i) CHECK_STATUS(uf_subscribe(other, NULL, keep, NULL, NULL, &foreign), UF_OK);
    char message[64];
    snprintf(message, sizeof message, "no subscription with id %llu", (unsigned long long)foreign);
    CHECK_ERROR(uf_unsubscribe(d, foreign), UF_ENOTFOUND, message);
    uf_dispatcher_free(other);
    uf_dispatcher_free(d);
}

/* ---- uf_dispatcher_free from inside the dispatcher's callbacks ---- */

static int free_attempts;

static void try_to_free(uf_dispatcher *d) {
    ++free_attempts;
    uf_dispatcher_free(d);
    CHECK_STATUS(uf_last_status(), UF_EMISUSE);
    CHECK_STR(uf_last_error(), "uf_dispatcher_free called from inside one of the dispatcher's callbacks; "
                               "free it after the outer call returns");
}

static int free_in_subscriber(const uf_mutation *m, void *payload) {
    (void)payload;
    try_to_free(uf_mutation_dispatcher(m));
    return UF_KEEP;
}

static int free_in_via(uf_context *ctx, void *payload) {
    (void)payload;
    try_to_free(uf_context_dispatcher(ctx));
    return 0;
}

static void free_in_reporter(const char *report, void *payload) {
    (void)report;
    try_to_free((uf_dispatcher *)payload);
}

/* A via payload_free runs on the processing thread too. */
static void free_in_payload_free(void *payload) {
    try_to_free((uf_dispatcher *)payload);
}

static void freeing_the_dispatcher_inside_its_callbacks_is_misuse(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_subscribe(d, NULL, free_in_subscriber, NULL, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_set_reporter(d, free_in_reporter, d, NULL), UF_OK);
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}",
                               free_in_via, d, free_in_payload_free), UF_OK);
    CHECK(free_attempts == 4);
    /* Still alive and well. */
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"On\",\"payload\":{}}}");
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK(free_attempts == 6);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    /* Outside its callbacks the free goes through. */
    uf_dispatcher_free(d);
}

/* ---- Subscribers that end subscriptions while being notified ---- */

typedef struct subscriber_probe {
    const char *name;
    uint64_t id;
    uint64_t other; /* the id to unsubscribe as well, or 0 */
    int calls, freed;
    check_list *log;
} subscriber_probe;

static int unsubscribing_subscriber(const uf_mutation *m, void *payload) {
    subscriber_probe *p = (subscriber_probe *)payload;
    ++p->calls;
    check_list_add(p->log, p->name);
    CHECK(uf_mutation_subscription_id(m) == p->id);
    uf_dispatcher *d = uf_mutation_dispatcher(m);
    if (p->other) {
        CHECK_STATUS(uf_unsubscribe(d, uf_mutation_subscription_id(m)), UF_OK);
        CHECK_STATUS(uf_unsubscribe(d, p->other), UF_OK);
        /* Ended twice is not found, even before the notification is over. */
        CHECK_STATUS(uf_unsubscribe(d, p->other), UF_ENOTFOUND);
        /* Never released while running. */
        CHECK(p->freed == 0);
    }
    return UF_KEEP;
}

static void probe_freed(void *payload) {
    ++((subscriber_probe *)payload)->freed;
}

static void a_subscriber_that_unsubscribes_itself_and_another(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    check_list log = {0};
    subscriber_probe first = {"first", 0, 0, 0, 0, &log};
    subscriber_probe second = {"second", 0, 0, 0, 0, &log};
    subscriber_probe third = {"third", 0, 0, 0, 0, &log};
    CHECK_STATUS(uf_subscribe(d, NULL, unsubscribing_subscriber, &first, probe_freed, &first.id), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "AnyMutationOf<Toggle>", unsubscribing_subscriber, &second, probe_freed, &second.id), UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, unsubscribing_subscriber, &third, probe_freed, &third.id), UF_OK);
    first.other = second.id; /* first ends itself and second, which comes next */

    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK(first.freed == 1 && second.freed == 1 && third.freed == 0);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_OK);
    CHECK_LIST(&log, "first", "third", "third");
    CHECK_ERROR(uf_unsubscribe(d, first.id), UF_ENOTFOUND, "no subscription with id 1");
    uf_dispatcher_free(d);
    CHECK(first.freed == 1 && second.freed == 1 && third.freed == 1);
    check_list_clear(&log);
}

/* ---- payload_free exactly once: subscriptions ---- */

typedef struct stop_probe {
    int calls, freed;
} stop_probe;

static int stop_after_one(const uf_mutation *m, void *payload) {
    (void)m;
    stop_probe *p = (stop_probe *)payload;
    ++p->calls;
    CHECK(p->freed == 0);
    return UF_STOP;
}

static void stop_freed(void *payload) {
    ++((stop_probe *)payload)->freed;
}

/* Subscribes a new subscription from inside a callback; freed with the dispatcher. */
static int subscribe_more(const uf_mutation *m, void *payload) {
    CHECK_STATUS(uf_subscribe(uf_mutation_dispatcher(m), NULL, keep, payload, check_count_free, NULL), UF_OK);
    return UF_STOP;
}

static void subscriptions_release_their_payload_once(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);

    /* Ended by UF_STOP: released when the callback has returned. */
    stop_probe stop = {0, 0};
    uint64_t stop_id = 0;
    CHECK_STATUS(uf_subscribe(d, "AnyMutationOf<Toggle>", stop_after_one, &stop, stop_freed, &stop_id), UF_OK);
    /* Ended by uf_unsubscribe. */
    int unsubscribed = 0;
    uint64_t id = 0;
    CHECK_STATUS(uf_subscribe(d, "Transition<Toggle>", keep, &unsubscribed, check_count_free, &id), UF_OK);
    /* Ended by the dispatcher's free. */
    int at_free = 0;
    for (int i = 0; i < 3; ++i) CHECK_STATUS(uf_subscribe(d, NULL, keep, &at_free, check_count_free, NULL), UF_OK);
    /* Made inside a callback, ended by the dispatcher's free. */
    int made_inside = 0;
    CHECK_STATUS(uf_subscribe(d, NULL, subscribe_more, &made_inside, NULL, NULL), UF_OK);
    /* Refused at once: every way uf_subscribe can fail. */
    int refused = 0;
    CHECK_ERROR(uf_subscribe(d, "", keep, &refused, check_count_free, NULL), UF_ESCHEMA, "cannot parse filter '': empty filter");
    CHECK_ERROR(uf_subscribe(d, "Sometimes<Toggle>", keep, &refused, check_count_free, NULL), UF_ESCHEMA, "cannot parse filter 'Sometimes<Toggle>': unknown filter 'Sometimes'");
    CHECK_ERROR(uf_subscribe(d, "AnyMutationOf<Nope>", keep, &refused, check_count_free, NULL), UF_ENOTFOUND,
                "filter 'AnyMutationOf<Nope>': unknown feature 'Nope'");
    CHECK_ERROR(uf_subscribe(d, "TransitionInto<Toggle.Nope>", keep, &refused, check_count_free, NULL), UF_ENOTFOUND,
                "filter 'TransitionInto<Toggle.Nope>': unknown state 'Nope' of feature Toggle");
    CHECK(refused == 4);

    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK(stop.calls == 1 && stop.freed == 1);
    CHECK_ERROR(uf_unsubscribe(d, stop_id), UF_ENOTFOUND, "no subscription with id 1");
    CHECK(made_inside == 0);
    CHECK_STATUS(uf_unsubscribe(d, id), UF_OK);
    CHECK(unsubscribed == 1);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_OK);
    CHECK(stop.calls == 1 && stop.freed == 1 && unsubscribed == 1 && at_free == 0);

    uf_dispatcher_free(d);
    CHECK(at_free == 3);
    CHECK(made_inside == 1);
    CHECK(stop.freed == 1 && unsubscribed == 1 && refused == 4);
}

/* ---- payload_free exactly once: via callbacks ---- */

typedef struct via_probe {
    int calls, freed;
    int result;              /* what the via returns */
    const char *become;      /* what it becomes first, or NULL */
} via_probe;

static int probe_via(uf_context *ctx, void *payload) {
    via_probe *p = (via_probe *)payload;
    ++p->calls;
    CHECK(p->freed == 0);
    if (p->become) uf_context_become(ctx, p->become);
    return p->result;
}

static void probe_free(void *payload) {
    ++((via_probe *)payload)->freed;
}

/* Queues actions with vias from inside a subscriber. */
static via_probe queued_applied = {0, 0, 0, "{\"percent\":5}"};
static via_probe queued_rejected = {0, 0, 0, NULL};
static via_probe queued_declined = {0, 0, 1, NULL};
static via_probe queued_refused = {0, 0, 0, NULL};

static int queue_vias(const uf_mutation *m, void *payload) {
    (void)payload;
    uf_dispatcher *d = uf_mutation_dispatcher(m);
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"transition\",\"feature\":\"Progress\",\"from\":\"Idle\",\"into\":\"Running\"}",
                               probe_via, &queued_applied, probe_free), UF_QUEUED);
    /* Rejected when its turn comes: Progress is Running by then. */
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"transition\",\"feature\":\"Progress\",\"from\":\"Idle\",\"into\":\"Running\"}",
                               probe_via, &queued_rejected, probe_free), UF_QUEUED);
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"actualize\",\"feature\":\"Progress\",\"in\":\"Running\"}",
                               probe_via, &queued_declined, probe_free), UF_QUEUED);
    /* Refused at once, even inside a callback. */
    CHECK_ERROR(uf_submit_via(d, "{\"kind\":\"actualize\",\"feature\":\"Progress\",\"in\":\"Nope\"}",
                              probe_via, &queued_refused, probe_free),
                UF_ENOTFOUND, "unknown state 'Nope' of feature Progress");
    CHECK(queued_refused.freed == 1);
    CHECK(queued_applied.freed == 0 && queued_rejected.freed == 0 && queued_declined.freed == 0);
    return UF_STOP;
}

static void via_payloads_are_released_once_whatever_happens(void) {
    uf_dispatcher *d = check_dispatcher(NULL, progress);
    const char *init = "{\"kind\":\"initialize\",\"feature\":\"Progress\",\"into\":\"Idle\"}";
    const char *start = "{\"kind\":\"transition\",\"feature\":\"Progress\",\"into\":\"Running\"}";

    /* Rejected by the precondition: the via never runs. */
    via_probe rejected = {0, 0, 0, NULL};
    CHECK_ERROR(uf_submit_via(d, start, probe_via, &rejected, probe_free), UF_REJECTED, "Progress is not initialized");
    CHECK(rejected.calls == 0 && rejected.freed == 1);

    /* Applied. */
    via_probe applied = {0, 0, 0, NULL};
    CHECK_STATUS(uf_submit_via(d, init, probe_via, &applied, probe_free), UF_OK);
    CHECK(applied.calls == 1 && applied.freed == 1);

    /* Declined, failed, forgot to become, became badly. */
    via_probe declined = {0, 0, 7, "{\"percent\":1}"};
    CHECK_ERROR(uf_submit_via(d, start, probe_via, &declined, probe_free), UF_REJECTED, "Progress: the via callback declined the action");
    via_probe failed = {0, 0, -2, NULL};
    CHECK_ERROR(uf_submit_via(d, start, probe_via, &failed, probe_free), UF_ECALLBACK, "Progress: the via callback failed (returned -2)");
    via_probe forgot = {0, 0, 0, NULL};
    CHECK_ERROR(uf_submit_via(d, start, probe_via, &forgot, probe_free), UF_REJECTED,
                "Progress.Running has required fields and the via callback did not become a payload");
    via_probe badly = {0, 0, 0, "{\"percent\":\"half\"}"};
    CHECK_ERROR(uf_submit_via(d, start, probe_via, &badly, probe_free), UF_ESCHEMA,
                "Progress.Running.percent: expected integer, got string");
    CHECK(declined.calls == 1 && declined.freed == 1);
    CHECK(failed.calls == 1 && failed.freed == 1);
    CHECK(forgot.calls == 1 && forgot.freed == 1);
    CHECK(badly.calls == 1 && badly.freed == 1);
    CHECK_FEATURE(d, "Progress", "{\"state\":\"Idle\",\"payload\":{}}");

    /* Refused at once: bad JSON, bad shape, unknown names, a payload with a via. */
    via_probe refused = {0, 0, 0, NULL};
    CHECK_ERROR_PREFIX(uf_submit_via(d, "{\"kind\":", probe_via, &refused, probe_free), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(uf_submit_via(d, "{\"kind\":\"initialize\"}", probe_via, &refused, probe_free), UF_ESCHEMA, "");
    CHECK_ERROR(uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Nope\",\"into\":\"Idle\"}", probe_via, &refused, probe_free),
                UF_ENOTFOUND, "unknown feature 'Nope'");
    CHECK_ERROR(uf_submit_via(d, "{\"kind\":\"transition\",\"feature\":\"Progress\",\"into\":\"Running\",\"payload\":{\"percent\":1}}",
                              probe_via, &refused, probe_free),
                UF_EINVAL, "action has both a JSON payload and a via callback");
    CHECK(refused.calls == 0 && refused.freed == 4);

    /* The struct form: refused for a field that does not fit, applied, rejected. */
    via_probe by_struct = {0, 0, 0, "{\"percent\":1}"};
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_ACTUALIZE;
    a.feature = "Progress";
    a.into = "Idle";
    a.from = "Idle";
    a.via = probe_via;
    a.via_payload = &by_struct;
    a.via_payload_free = probe_free;
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "uf_action: 'from' is not allowed on an actualize action");
    CHECK(by_struct.calls == 0 && by_struct.freed == 1);
    a.from = NULL;
    a.payload_json = "{}";
    CHECK_ERROR(uf_dispatch(d, &a), UF_EINVAL, "action has both a JSON payload and a via callback");
    CHECK(by_struct.calls == 0 && by_struct.freed == 2);
    via_probe by_struct_applied = {0, 0, 0, "{\"percent\":1}"};
    a.payload_json = NULL;
    a.kind = UF_ACTION_TRANSITION;
    a.into = "Running";
    a.via_payload = &by_struct_applied;
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    CHECK(by_struct_applied.calls == 1 && by_struct_applied.freed == 1);

    /* Queued inside a callback: applied, rejected and declined later, refused at once. */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"deinitialize\",\"feature\":\"Progress\"}"), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "Initialization<Progress>", queue_vias, NULL, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, init), UF_OK);
    CHECK(queued_applied.calls == 1 && queued_applied.freed == 1);
    CHECK(queued_rejected.calls == 0 && queued_rejected.freed == 1);
    CHECK(queued_declined.calls == 1 && queued_declined.freed == 1);
    CHECK(queued_refused.calls == 0 && queued_refused.freed == 1);
    CHECK_FEATURE(d, "Progress", "{\"state\":\"Running\",\"payload\":{\"percent\":5}}");

    uf_dispatcher_free(d);
}

/* Dropped by the cascade limit: a subscriber that keeps queueing vias. */
static int dropped_queued, dropped_freed;

static void count_dropped_free(void *payload) {
    (void)payload;
    ++dropped_freed;
}

static int loop_with_vias(const uf_mutation *m, void *payload) {
    (void)payload;
    int status = uf_submit_via(uf_mutation_dispatcher(m), "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"same\":true}",
                               go_on, NULL, count_dropped_free);
    if (status == UF_QUEUED) ++dropped_queued;
    return UF_KEEP;
}

static void dropped_vias_are_released_too(void) {
    uf_dispatcher *d = check_dispatcher("{\"max_cascade\":5}", toggle);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "Transition<Toggle>", loop_with_vias, NULL, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"same\":true}",
                               go_on, NULL, count_dropped_free), UF_OK);
    /* 5 processed (the outer one included), each queued one more: 1 + 5 vias. */
    CHECK(dropped_queued == 5);
    CHECK(dropped_freed == 1 + dropped_queued);
    uf_dispatcher_free(d);
    CHECK(dropped_freed == 1 + dropped_queued);
}

/* A via payload_free runs on the processing thread: what it submits is queued. */
static int submitted_from_free = 99;

static void submit_from_payload_free(void *payload) {
    submitted_from_free = uf_submit((uf_dispatcher *)payload, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
}

static void a_payload_free_may_submit(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}",
                               go_on, d, submit_from_payload_free), UF_OK);
    CHECK_STATUS(submitted_from_free, UF_QUEUED);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    uf_dispatcher_free(d);
}

/* ---- payload_free exactly once: reporters and handlers ---- */

typedef struct reporter_probe {
    int reports, freed;
    uf_dispatcher *d;
    struct reporter_probe *replacement; /* installed from inside the reporter */
} reporter_probe;

static void probe_report(const char *report, void *payload) {
    (void)report;
    reporter_probe *p = (reporter_probe *)payload;
    ++p->reports;
    CHECK(p->freed == 0);
}

static void reporter_freed(void *payload) {
    ++((reporter_probe *)payload)->freed;
}

/* Replaces itself: it is not released while it runs. */
static void replace_from_inside(const char *report, void *payload) {
    (void)report;
    reporter_probe *p = (reporter_probe *)payload;
    ++p->reports;
    if (p->replacement) {
        CHECK_STATUS(uf_set_reporter(p->d, probe_report, p->replacement, reporter_freed), UF_OK);
        CHECK(p->freed == 0);
        p->replacement = NULL;
    }
}

/* A payload_free that frees the dispatcher it was given. */
static void free_dispatcher_payload(void *payload) {
    uf_dispatcher_free((uf_dispatcher *)payload);
}

static void reporters_release_their_payload_once(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    reporter_probe first = {0, 0, d, NULL}, second = {0, 0, d, NULL}, third = {0, 0, d, NULL};
    reporter_probe fourth = {0, 0, d, NULL}, last = {0, 0, d, NULL};

    /* Replaced: the old one goes at once. */
    CHECK_STATUS(uf_set_reporter(d, probe_report, &first, reporter_freed), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_set_reporter(d, probe_report, &second, reporter_freed), UF_OK);
    CHECK(first.reports == 1 && first.freed == 1 && second.freed == 0);

    /* Reset to the built-in one: the old one goes at once; a payload given with a
     * NULL fn is not kept, so it goes at once too. */
    int given_with_null = 0;
    CHECK_STATUS(uf_set_reporter(d, NULL, &given_with_null, check_count_free), UF_OK);
    CHECK(second.freed == 1 && given_with_null == 1);
    CHECK_STATUS(uf_set_reporter(d, NULL, NULL, NULL), UF_OK);
    /* That payload_free may even free the dispatcher: the call is done with it
     * by then (valgrind and ASan run this file). */
    uf_dispatcher *doomed = check_dispatcher(NULL, NULL);
    CHECK_STATUS(uf_set_reporter(doomed, NULL, doomed, free_dispatcher_payload), UF_OK);

    /* Replaced from inside itself: released after it returns. */
    third.replacement = &fourth;
    CHECK_STATUS(uf_set_reporter(d, replace_from_inside, &third, reporter_freed), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_OK);
    CHECK(third.reports == 1 && third.freed == 1);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK(third.reports == 1 && fourth.reports == 1 && fourth.freed == 0);

    /* Freed with the dispatcher. */
    CHECK_STATUS(uf_set_reporter(d, probe_report, &last, reporter_freed), UF_OK);
    CHECK(fourth.freed == 1);
    uf_dispatcher_free(d);
    CHECK(last.freed == 1);
    CHECK(first.freed == 1 && second.freed == 1 && third.freed == 1 && fourth.freed == 1);
}

static void handlers_release_their_payload_once(void) {
    uf_dispatcher *d = check_dispatcher(NULL, NULL);
    int kept = 0, duplicate = 0;
    CHECK_STATUS(uf_register_handler(d, "check_credentials", handle, &kept, check_count_free), UF_OK);
    CHECK_ERROR(uf_register_handler(d, "check_credentials", handle, &duplicate, check_count_free), UF_EEXISTS,
                "a handler named 'check_credentials' is already registered");
    CHECK(kept == 0 && duplicate == 1);
    uf_dispatcher_free(d);
    CHECK(kept == 1 && duplicate == 1);
}

/* ---- Callbacks that run while the dispatcher is being freed ---- */

/* A subscription's payload_free that tries to submit during the free. */
static int late_submit_status = 99;

static void submit_while_freed(void *payload) {
    late_submit_status = uf_submit((uf_dispatcher *)payload, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
}

static void submits_during_the_free_are_refused(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, keep, d, submit_while_freed, NULL), UF_OK);
    uf_dispatcher_free(d);
    CHECK_STATUS(late_submit_status, UF_EMISUSE);
    CHECK_STR(uf_last_error(), "the dispatcher is being freed");
}

/* Callbacks run by uf_dispatcher_free that try to register something: refused
 * (nothing registered then could ever be released) and their payload_free runs
 * at once, so that it still runs exactly once. */
static int late_freed[4];
static int late_status[4] = {99, 99, 99, 99};
static char late_error[4][128];

static void count_late(void *payload) {
    ++*(int *)payload;
}

static void subscribe_while_freed(void *payload) {
    late_status[0] = uf_subscribe((uf_dispatcher *)payload, NULL, keep, &late_freed[0], count_late, NULL);
    snprintf(late_error[0], sizeof late_error[0], "%s", uf_last_error());
}

static void set_reporter_while_freed(void *payload) {
    late_status[1] = uf_set_reporter((uf_dispatcher *)payload, ignore_report, &late_freed[1], count_late);
    snprintf(late_error[1], sizeof late_error[1], "%s", uf_last_error());
}

static void register_handler_while_freed(void *payload) {
    late_status[2] = uf_register_handler((uf_dispatcher *)payload, "zz_late", handle, &late_freed[2], count_late);
    snprintf(late_error[2], sizeof late_error[2], "%s", uf_last_error());
}

static void register_while_freed(void *payload) {
    late_status[3] = uf_register((uf_dispatcher *)payload, "{\"feature\":\"Late\",\"states\":{\"S\":{}}}");
    snprintf(late_error[3], sizeof late_error[3], "%s", uf_last_error());
    ++late_freed[3];
}

static void registrations_during_the_free_are_refused_and_released(void) {
    uf_dispatcher *d = check_dispatcher(NULL, NULL);
    CHECK_STATUS(uf_subscribe(d, NULL, keep, d, subscribe_while_freed, NULL), UF_OK);
    CHECK_STATUS(uf_set_reporter(d, ignore_report, d, set_reporter_while_freed), UF_OK);
    CHECK_STATUS(uf_register_handler(d, "a_first", handle, d, register_handler_while_freed), UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, keep, d, register_while_freed, NULL), UF_OK);
    uf_dispatcher_free(d);
    static const char *const messages[4] = {
        "uf_subscribe: the dispatcher is being freed",
        "uf_set_reporter: the dispatcher is being freed",
        "uf_register_handler: the dispatcher is being freed",
        "uf_register: the dispatcher is being freed",
    };
    for (int i = 0; i < 4; ++i) {
        CHECK_STATUS(late_status[i], UF_EMISUSE);
        CHECK_STR(late_error[i], messages[i]);
        CHECK(late_freed[i] == 1);
    }
}

int main(void) {
    every_null_argument_is_refused();
    handlers_get_null_and_misuse_refused();
    unknown_and_used_subscription_ids_are_not_found();
    freeing_the_dispatcher_inside_its_callbacks_is_misuse();
    a_subscriber_that_unsubscribes_itself_and_another();
    subscriptions_release_their_payload_once();
    via_payloads_are_released_once_whatever_happens();
    dropped_vias_are_released_too();
    a_payload_free_may_submit();
    reporters_release_their_payload_once();
    handlers_release_their_payload_once();
    submits_during_the_free_are_refused();
    registrations_during_the_free_are_refused_and_released();
    return check_summary();
}
