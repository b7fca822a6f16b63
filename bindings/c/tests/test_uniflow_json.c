/*
 * test_uniflow_json.c — the tests of uniflow_json.h, one group per function.
 *
 *   test_uniflow_json GROUP...   runs the named groups ("all": every group)
 *
 * Each group states a model, acts through the wrapper and checks the status, the
 * whole resulting GlobalModel (compared as JSON) and the reference counts of the
 * json_t values it handed over: every argument is borrowed, so a count must be
 * the same after the call as before. A custom jansson allocator counts blocks, so
 * a leaked or mismatched free of the serialized text shows up too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniflow_json.h"

/* ---- Checks --------------------------------------------------------------------- */

static int failures;

static void fail_at(const char *file, int line, const char *what) {
    ++failures;
    fprintf(stderr, "%s:%d: FAILED: %s\n    last status %s, last error \"%s\"\n", file,
            line, what, uf_status_name(uf_last_status()), uf_last_error());
}

#define CHECK(cond) \
    do { if (!(cond)) fail_at(__FILE__, __LINE__, #cond); } while (0)

#define CHECK_STATUS(call, expected) \
    check_status(__FILE__, __LINE__, (call), (expected), #call)
static void check_status(const char *file, int line, int got, int expected, const char *text) {
    char what[512];
    if (got == expected) return;
    snprintf(what, sizeof what, "%s returned %s (%d), expected %s (%d)", text,
             uf_status_name(got), got, uf_status_name(expected), expected);
    fail_at(file, line, what);
}

/* The reference count a borrowed argument must still have after the call. */
#define CHECK_REFCOUNT(value, expected) \
    check_refcount(__FILE__, __LINE__, (value), (expected), #value)
static void check_refcount(const char *file, int line, const json_t *value, size_t expected,
                           const char *text) {
    char what[256];
    if (value->refcount == expected) return;
    snprintf(what, sizeof what, "refcount of %s is %zu, expected %zu", text,
             (size_t)value->refcount, expected);
    fail_at(file, line, what);
}

/* The dispatcher's whole GlobalModel must equal `expected` (JSON text). */
#define CHECK_MODEL(d, expected) check_model(__FILE__, __LINE__, (d), (expected))
static void check_model(const char *file, int line, uf_dispatcher *d, const char *expected) {
    json_t *want = json_loads(expected, 0, NULL);
    json_t *got = uf_json_state(d);
    if (want == NULL) {
        fail_at(file, line, "the expected model in the test is not JSON");
    } else if (got == NULL) {
        fail_at(file, line, "uf_json_state returned NULL");
    } else if (!json_equal(want, got)) {
        char what[1024];
        char *text = json_dumps(got, JSON_COMPACT);
        snprintf(what, sizeof what, "model is %s, expected %s", text ? text : "?", expected);
        free(text);
        fail_at(file, line, what);
    }
    json_decref(want);
    json_decref(got);
}

/* Parses JSON text the test wrote; aborts on a typo in the test itself. */
static json_t *parse(const char *text) {
    json_error_t error;
    json_t *value = json_loads(text, 0, &error);
    if (value == NULL) {
        fprintf(stderr, "bad JSON in the test: %s: %s\n", error.text, text);
        exit(2);
    }
    return value;
}

/* ---- Counting allocator: every block jansson allocates is freed by jansson's free */

static long live_blocks;

static void *counting_malloc(size_t size) {
    ++live_blocks;
    return malloc(size);
}

static void counting_free(void *p) {
    if (p != NULL) --live_blocks;
    free(p);
}

/* ---- The model the tests use ---------------------------------------------------- */

static const char *const download_definition =
    "{\"feature\": \"Download\","
    " \"states\": {\"Idle\": {},"
    "              \"Running\": {\"fields\": {\"progress\": \"number\"}},"
    "              \"Done\": {},"
    "              \"Failed\": {\"fields\": {\"reason\": \"string\","
    "                                      \"retries\": {\"type\": \"integer\", \"default\": 0}}}},"
    " \"initial\": [\"Idle\", \"Running\"],"
    " \"transitions\": {\"Idle\": [\"Running\", \"Failed\"],"
    "                   \"Running\": [\"Running\", \"Done\", \"Failed\"]}}";

static uf_dispatcher *new_dispatcher(void) {
    uf_dispatcher *d = NULL;
    if (uf_dispatcher_new(&d, NULL) != UF_OK) {
        fprintf(stderr, "uf_dispatcher_new failed: %s\n", uf_last_error());
        exit(2);
    }
    return d;
}

/* A dispatcher with Download registered and not initialized. */
static uf_dispatcher *new_download_dispatcher(void) {
    uf_dispatcher *d = new_dispatcher();
    json_t *definition = parse(download_definition);
    CHECK_STATUS(uf_json_register(d, definition), UF_OK);
    json_decref(definition);
    return d;
}

/* ---- uf_json_register ----------------------------------------------------------- */

static void test_register(void) {
    uf_dispatcher *d = new_dispatcher();
    json_t *definition = parse(download_definition);
    json_t *list, *wrapped, *bad, *number;

    /* Given one definition object, when it is registered, then it is registered
     * as given and the caller's reference is untouched. */
    CHECK_STATUS(uf_json_register(d, definition), UF_OK);
    CHECK_REFCOUNT(definition, 1);
    CHECK_MODEL(d, "{}");
    {
        char *text = NULL;
        json_t *all;
        CHECK_STATUS(uf_definitions_get(d, &text), UF_OK);
        all = json_loads(text, 0, NULL);
        CHECK(all != NULL && json_array_size(json_object_get(all, "features")) == 1);
        CHECK(json_equal(json_object_get(json_array_get(json_object_get(all, "features"), 0),
                                         "feature"), json_object_get(definition, "feature")));
        json_decref(all);
        uf_free(text);
    }

    /* The same name again: UF_EEXISTS from the core. */
    CHECK_STATUS(uf_json_register(d, definition), UF_EEXISTS);
    CHECK_REFCOUNT(definition, 1);

    /* An array and the {"features": [...]} form. */
    list = json_pack("[{s:s, s:{s:{}}}, {s:s, s:{s:{}}}]", "feature", "A", "states", "On",
                     "feature", "B", "states", "On");
    CHECK_STATUS(uf_json_register(d, list), UF_OK);
    CHECK_REFCOUNT(list, 1);
    wrapped = json_pack("{s:[{s:s, s:{s:{}}}]}", "features", "feature", "C", "states", "On");
    CHECK_STATUS(uf_json_register(d, wrapped), UF_OK);
    CHECK_REFCOUNT(wrapped, 1);

    /* An invalid definition: UF_ESCHEMA naming its path; nothing registered. */
    bad = parse("{\"feature\": \"E\", \"states\": {\"S\": {\"fields\": {\"x\": \"nubmer\"}}}}");
    CHECK_STATUS(uf_json_register(d, bad), UF_ESCHEMA);
    CHECK(strncmp(uf_last_error(), "features[0]", 11) == 0);
    CHECK_REFCOUNT(bad, 1);
    CHECK_STATUS(uf_json_initialize(d, "E", "S", NULL), UF_ENOTFOUND);

    /* Valid JSON of the wrong kind reaches the core, which says UF_ESCHEMA. */
    number = json_integer(3);
    CHECK_STATUS(uf_json_register(d, number), UF_ESCHEMA);
    CHECK_REFCOUNT(number, 1);

    /* NULL arguments are the core's UF_EINVAL. */
    CHECK_STATUS(uf_json_register(d, NULL), UF_EINVAL);
    CHECK_STATUS(uf_json_register(NULL, definition), UF_EINVAL);
    CHECK_REFCOUNT(definition, 1);

    json_decref(definition);
    json_decref(list);
    json_decref(wrapped);
    json_decref(bad);
    json_decref(number);
    uf_dispatcher_free(d);
}

/* ---- uf_json_submit ------------------------------------------------------------- */

static void test_submit(void) {
    uf_dispatcher *d = new_download_dispatcher();
    json_t *init = parse("{\"kind\": \"initialize\", \"feature\": \"Download\", \"into\": \"Idle\"}");
    json_t *start = parse("{\"kind\": \"transition\", \"feature\": \"Download\", \"from\": \"Idle\","
                          " \"into\": \"Running\", \"payload\": {\"progress\": 10}}");
    json_t *payload = json_object_get(start, "payload");
    json_t *wrong = parse("[1, 2]");
    json_t *unknown = parse("{\"kind\": \"initialize\", \"feature\": \"Nope\", \"into\": \"Idle\"}");

    /* Given Download absent, when it is initialized into Idle, then it is in Idle. */
    CHECK_STATUS(uf_json_submit(d, init), UF_OK);
    CHECK_REFCOUNT(init, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Idle\", \"payload\": {}}}");

    /* When it is initialized again, then it is rejected and nothing changes. */
    CHECK_STATUS(uf_json_submit(d, init), UF_REJECTED);
    CHECK_REFCOUNT(init, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Idle\", \"payload\": {}}}");

    /* A transition with a payload inside the action (a nested, borrowed value). */
    CHECK_STATUS(uf_json_submit(d, start), UF_OK);
    CHECK_REFCOUNT(start, 1);
    CHECK_REFCOUNT(payload, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 10}}}");

    /* Wrong kind, unknown feature, NULL: the core's statuses, model unchanged. */
    CHECK_STATUS(uf_json_submit(d, wrong), UF_ESCHEMA);
    CHECK_REFCOUNT(wrong, 1);
    CHECK_STATUS(uf_json_submit(d, unknown), UF_ENOTFOUND);
    CHECK_REFCOUNT(unknown, 1);
    CHECK_STATUS(uf_json_submit(d, NULL), UF_EINVAL);
    CHECK_STATUS(uf_json_submit(NULL, init), UF_EINVAL);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 10}}}");

    json_decref(init);
    json_decref(start);
    json_decref(wrong);
    json_decref(unknown);
    uf_dispatcher_free(d);
}

/* ---- uf_json_state -------------------------------------------------------------- */

static void test_state(void) {
    uf_dispatcher *d = new_download_dispatcher();
    json_t *state, *expected;

    /* Given nothing initialized, the model is an empty object, a new reference. */
    state = uf_json_state(d);
    CHECK(state != NULL && json_is_object(state) && json_object_size(state) == 0);
    if (state != NULL) CHECK_REFCOUNT(state, 1);
    json_decref(state);

    /* Given Download failed with a default filled in, the model shows it. */
    CHECK_STATUS(uf_json_initialize(d, "Download", "Idle", NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Download\",\"from\":\"Idle\","
                              "\"into\":\"Failed\",\"payload\":{\"reason\":\"disk full\"}}"), UF_OK);
    state = uf_json_state(d);
    expected = parse("{\"Download\": {\"state\": \"Failed\","
                     " \"payload\": {\"reason\": \"disk full\", \"retries\": 0}}}");
    CHECK(state != NULL && json_equal(state, expected));
    if (state != NULL) CHECK_REFCOUNT(state, 1);
    /* Each call gives a fresh value, independent of the last one. */
    {
        json_t *again = uf_json_state(d);
        CHECK(again != NULL && again != state && json_equal(again, expected));
        json_decref(again);
    }
    json_decref(state);
    json_decref(expected);

    /* NULL dispatcher: NULL, and the core's UF_EINVAL. */
    CHECK(uf_json_state(NULL) == NULL);
    CHECK(uf_last_status() == UF_EINVAL);
    uf_dispatcher_free(d);
}

/* ---- uf_json_subscribe ---------------------------------------------------------- */

/* What a test subscriber saw. */
typedef struct seen {
    int calls;
    int frees;
    int stop_after;          /* return UF_STOP on this call (0: never) */
    size_t refcount_inside;  /* the mutation's count while the subscriber runs */
    json_t *kept;            /* a mutation the subscriber kept with json_incref */
    char kinds[256];         /* "kind:feature:new state" of each call, ';'-separated */
    int submit_status;       /* what a submit from inside returned */
    uf_dispatcher *d;        /* set to submit from inside the subscriber */
} seen;

static int record_mutation(json_t *mutation, void *payload) {
    seen *s = payload;
    json_t *new_state = json_object_get(mutation, "new");
    char entry[96];
    ++s->calls;
    s->refcount_inside = mutation->refcount;
    snprintf(entry, sizeof entry, "%s%s:%s:%s", s->kinds[0] ? ";" : "",
             json_string_value(json_object_get(mutation, "kind")),
             json_string_value(json_object_get(mutation, "feature")),
             json_is_object(new_state) ? json_string_value(json_object_get(new_state, "state"))
                                       : "null");
    strncat(s->kinds, entry, sizeof s->kinds - strlen(s->kinds) - 1);
    if (s->kept == NULL) s->kept = json_incref(mutation);
    if (s->d != NULL && s->calls == 1) {
        json_t *payload_json = json_pack("{s:i}", "progress", 50);
        s->submit_status = uf_json_actualize(s->d, "Download", "Running", payload_json);
        json_decref(payload_json);
    }
    return s->stop_after != 0 && s->calls == s->stop_after ? UF_STOP : UF_KEEP;
}

static void count_free(void *payload) {
    ++((seen *)payload)->frees;
}

static void test_subscribe(void) {
    uf_dispatcher *d = new_download_dispatcher();
    seen all = {0}, init_only = {0}, stopper = {0}, quiet = {0}, bad = {0}, unknown = {0};
    seen nofn = {0};
    uint64_t id_all = 0, id_init = 0, id_stop = 0;

    /* Given three subscriptions (AnyMutation via NULL, a filter, one that stops). */
    CHECK_STATUS(uf_json_subscribe(d, NULL, record_mutation, &all, count_free, &id_all), UF_OK);
    CHECK_STATUS(uf_json_subscribe(d, "InitializationInto<Download.Running>", record_mutation,
                                   &init_only, count_free, &id_init), UF_OK);
    stopper.stop_after = 1;
    CHECK_STATUS(uf_json_subscribe(d, "AnyMutationOf<Download>", record_mutation, &stopper,
                                   count_free, &id_stop), UF_OK);
    CHECK(id_all != 0 && id_init != 0 && id_stop != 0);
    CHECK(id_all != id_init && id_init != id_stop && id_all != id_stop);
    /* out_id may be NULL (this one stays until the dispatcher is freed). */
    CHECK_STATUS(uf_json_subscribe(d, "Deinitialization<Download>", record_mutation, &quiet,
                                   count_free, NULL), UF_OK);

    /* When Download is initialized into Running with a payload, then each
     * subscriber gets the mutation as a borrowed object (count 1 while it runs:
     * only the wrapper holds it) with the documented fields. */
    {
        json_t *payload = json_pack("{s:i}", "progress", 10);
        all.d = d; /* the first call submits an actualization from inside */
        CHECK_STATUS(uf_json_initialize(d, "Download", "Running", payload), UF_OK);
        CHECK_REFCOUNT(payload, 1);
        json_decref(payload);
    }
    CHECK(all.submit_status == UF_QUEUED);
    CHECK(strcmp(all.kinds, "initialization:Download:Running;actualization:Download:Running") == 0);
    CHECK(all.refcount_inside == 1); /* borrowed: only the wrapper holds it */
    CHECK(strcmp(init_only.kinds, "initialization:Download:Running") == 0);
    CHECK(stopper.calls == 1);       /* returned UF_STOP on its first call */
    CHECK(stopper.frees == 1);       /* ...which ended it */
    CHECK_STATUS(uf_unsubscribe(d, id_stop), UF_ENOTFOUND);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 50}}}");

    /* A mutation kept with json_incref stays a complete, valid object. */
    CHECK(all.kept != NULL && all.kept->refcount == 1);
    if (all.kept != NULL) {
        CHECK(json_integer_value(json_object_get(all.kept, "seq")) == 1);
        CHECK(strcmp(json_string_value(json_object_get(all.kept, "kind")), "initialization") == 0);
        CHECK(json_is_null(json_object_get(all.kept, "old")));
        CHECK(json_integer_value(json_object_get(
                  json_object_get(json_object_get(all.kept, "new"), "payload"), "progress")) == 10);
        CHECK(json_is_object(json_object_get(all.kept, "action")));
    }
    json_decref(all.kept);
    json_decref(init_only.kept);
    json_decref(stopper.kept);

    /* Unsubscribing runs payload_free once; later mutations do not reach it. */
    CHECK_STATUS(uf_unsubscribe(d, id_init), UF_OK);
    CHECK(init_only.frees == 1);

    /* A filter that does not parse or names an unknown feature, and a NULL fn:
     * the core's status, payload_free run at once, exactly once. */
    CHECK_STATUS(uf_json_subscribe(d, "Nonsense<", record_mutation, &bad, count_free, NULL),
                 UF_ESCHEMA);
    CHECK(bad.frees == 1);
    CHECK_STATUS(uf_json_subscribe(d, "AnyMutationOf<Nope>", record_mutation, &unknown,
                                   count_free, NULL), UF_ENOTFOUND);
    CHECK(unknown.frees == 1);
    CHECK_STATUS(uf_json_subscribe(d, NULL, NULL, &nofn, count_free, NULL), UF_EINVAL);
    CHECK(nofn.frees == 1);
    CHECK_STATUS(uf_json_subscribe(NULL, NULL, record_mutation, &nofn, count_free, NULL),
                 UF_EINVAL);
    CHECK(nofn.frees == 2);
    /* payload_free may be NULL. */
    {
        seen plain = {0};
        CHECK_STATUS(uf_json_subscribe(d, "Nonsense<", record_mutation, &plain, NULL, NULL),
                     UF_ESCHEMA);
    }

    /* When the dispatcher is freed, the remaining subscription's payload_free runs
     * once, and the callbacks are not called again. */
    {
        int calls = all.calls;
        uf_dispatcher_free(d);
        CHECK(all.frees == 1);
        CHECK(all.calls == calls);
    }
    CHECK(quiet.frees == 1 && quiet.calls == 0);
    CHECK(init_only.frees == 1 && stopper.frees == 1);
}

/* ---- the action helpers --------------------------------------------------------- */

static void test_initialize(void) {
    uf_dispatcher *d = new_download_dispatcher();
    json_t *payload = json_pack("{s:f}", "progress", 2.5);
    json_t *bad_payload = json_pack("{s:s}", "progress", "ten");
    json_t *array = json_pack("[i]", 1);

    /* Into a state with required fields without a payload: UF_ESCHEMA. */
    CHECK_STATUS(uf_json_initialize(d, "Download", "Running", NULL), UF_ESCHEMA);
    /* A payload that breaks the field's type, or is not an object: UF_ESCHEMA. */
    CHECK_STATUS(uf_json_initialize(d, "Download", "Running", bad_payload), UF_ESCHEMA);
    CHECK_REFCOUNT(bad_payload, 1);
    CHECK_STATUS(uf_json_initialize(d, "Download", "Running", array), UF_ESCHEMA);
    CHECK_REFCOUNT(array, 1);
    /* Not an initial state: rejected. Unknown names: UF_ENOTFOUND. NULLs: UF_EINVAL. */
    CHECK_STATUS(uf_json_initialize(d, "Download", "Done", NULL), UF_REJECTED);
    CHECK_STATUS(uf_json_initialize(d, "Nope", "Idle", NULL), UF_ENOTFOUND);
    CHECK_STATUS(uf_json_initialize(d, "Download", "Nope", NULL), UF_ENOTFOUND);
    CHECK_STATUS(uf_json_initialize(d, NULL, "Idle", NULL), UF_EINVAL);
    CHECK_STATUS(uf_json_initialize(NULL, "Download", "Idle", NULL), UF_EINVAL);
    CHECK_MODEL(d, "{}");

    /* Given Download absent, when initialized into Running with a payload, then
     * it holds that payload and the caller's reference is untouched. */
    CHECK_STATUS(uf_json_initialize(d, "Download", "Running", payload), UF_OK);
    CHECK_REFCOUNT(payload, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 2.5}}}");
    /* Initialized already: rejected, nothing changes. */
    CHECK_STATUS(uf_json_initialize(d, "Download", "Idle", NULL), UF_REJECTED);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 2.5}}}");

    json_decref(payload);
    json_decref(bad_payload);
    json_decref(array);
    uf_dispatcher_free(d);
}

static void test_actualize(void) {
    uf_dispatcher *d = new_download_dispatcher();
    json_t *ten = json_pack("{s:i}", "progress", 10);
    json_t *eighty = json_pack("{s:i}", "progress", 80);
    json_t *extra = json_pack("{s:i, s:b}", "progress", 90, "paused", 1);

    /* Absent: rejected. */
    CHECK_STATUS(uf_json_actualize(d, "Download", "Running", ten), UF_REJECTED);
    CHECK_REFCOUNT(ten, 1);
    CHECK_STATUS(uf_json_initialize(d, "Download", "Running", ten), UF_OK);

    /* Given Download in Running, when actualized, then the payload is replaced. */
    CHECK_STATUS(uf_json_actualize(d, "Download", "Running", eighty), UF_OK);
    CHECK_REFCOUNT(eighty, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 80}}}");

    /* In another state: rejected. Unknown field: UF_ESCHEMA. No payload for a state
     * with required fields: UF_ESCHEMA. Nothing changes. */
    CHECK_STATUS(uf_json_actualize(d, "Download", "Idle", NULL), UF_REJECTED);
    CHECK_STATUS(uf_json_actualize(d, "Download", "Running", extra), UF_ESCHEMA);
    CHECK_REFCOUNT(extra, 1);
    CHECK_STATUS(uf_json_actualize(d, "Download", "Running", NULL), UF_ESCHEMA);
    CHECK_STATUS(uf_json_actualize(d, "Download", NULL, ten), UF_EINVAL);
    CHECK_REFCOUNT(ten, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 80}}}");

    json_decref(ten);
    json_decref(eighty);
    json_decref(extra);
    uf_dispatcher_free(d);
}

static void test_transition(void) {
    uf_dispatcher *d = new_download_dispatcher();
    json_t *progress = json_pack("{s:i}", "progress", 1);
    json_t *failure = json_pack("{s:s, s:i}", "reason", "timeout", "retries", 3);

    CHECK_STATUS(uf_json_initialize(d, "Download", "Idle", NULL), UF_OK);

    /* From the wrong state: rejected. Not a declared transition: rejected. */
    CHECK_STATUS(uf_json_transition(d, "Download", "Running", "Done", NULL), UF_REJECTED);
    CHECK_STATUS(uf_json_transition(d, "Download", "Idle", "Done", NULL), UF_REJECTED);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Idle\", \"payload\": {}}}");

    /* Given Idle, when transitioned from Idle into Running with a payload, then
     * Running holds it. */
    CHECK_STATUS(uf_json_transition(d, "Download", "Idle", "Running", progress), UF_OK);
    CHECK_REFCOUNT(progress, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 1}}}");

    /* from NULL: "transition into", which refuses the state it is already in
     * (same is 0) and accepts another one. */
    CHECK_STATUS(uf_json_transition(d, "Download", NULL, "Running", progress), UF_REJECTED);
    CHECK_REFCOUNT(progress, 1);
    CHECK_STATUS(uf_json_transition(d, "Download", NULL, "Failed", failure), UF_OK);
    CHECK_REFCOUNT(failure, 1);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Failed\","
                   " \"payload\": {\"reason\": \"timeout\", \"retries\": 3}}}");

    CHECK_STATUS(uf_json_transition(d, "Download", NULL, NULL, NULL), UF_EINVAL);
    CHECK_STATUS(uf_json_transition(NULL, "Download", NULL, "Idle", NULL), UF_EINVAL);

    json_decref(progress);
    json_decref(failure);
    uf_dispatcher_free(d);
}

static void test_deinitialize(void) {
    uf_dispatcher *d = new_download_dispatcher();

    /* Absent: rejected. */
    CHECK_STATUS(uf_json_deinitialize(d, "Download", NULL), UF_REJECTED);
    CHECK_STATUS(uf_json_initialize(d, "Download", "Idle", NULL), UF_OK);

    /* From the wrong state: rejected, nothing changes. */
    CHECK_STATUS(uf_json_deinitialize(d, "Download", "Running"), UF_REJECTED);
    CHECK_MODEL(d, "{\"Download\": {\"state\": \"Idle\", \"payload\": {}}}");

    /* From the state it is in: gone. */
    CHECK_STATUS(uf_json_deinitialize(d, "Download", "Idle"), UF_OK);
    CHECK_MODEL(d, "{}");

    /* from NULL: from any state. */
    CHECK_STATUS(uf_json_initialize(d, "Download", "Idle", NULL), UF_OK);
    CHECK_STATUS(uf_json_deinitialize(d, "Download", NULL), UF_OK);
    CHECK_MODEL(d, "{}");

    CHECK_STATUS(uf_json_deinitialize(d, "Nope", NULL), UF_ENOTFOUND);
    CHECK_STATUS(uf_json_deinitialize(d, NULL, NULL), UF_EINVAL);
    CHECK_STATUS(uf_json_deinitialize(NULL, "Download", NULL), UF_EINVAL);
    uf_dispatcher_free(d);
}

/* ---- Keyed instances and events --------------------------------------------------- */

static const char *const jobs_definition =
    "{\"feature\": \"Job\", \"instances\": \"keyed\","
    " \"states\": {\"Queued\": {\"on\": {\"run\": \"Running\"}},"
    "            \"Running\": {\"fields\": {\"step\": \"integer\"}}, \"Done\": {}},"
    " \"transitions\": {\"Queued\": [\"Running\"], \"Running\": [\"Running\", \"Done\"]}}";

static void test_instances(void) {
    uf_dispatcher *d = new_dispatcher();
    json_t *definition = parse(jobs_definition);
    CHECK_STATUS(uf_json_register(d, definition), UF_OK);
    json_decref(definition);

    CHECK_STATUS(uf_json_initialize_instance(d, "Job", "a", "Queued", NULL), UF_OK);
    CHECK_STATUS(uf_json_initialize_instance(d, "Job", "b", "Queued", NULL), UF_OK);
    json_t *payload = parse("{\"step\": 1}");
    CHECK_STATUS(uf_json_send(d, "Job", "a", "run", payload), UF_OK);
    CHECK_REFCOUNT(payload, 1);
    json_decref(payload);
    payload = parse("{\"step\": 2}");
    CHECK_STATUS(uf_json_actualize_instance(d, "Job", "a", "Running", payload), UF_OK);
    CHECK_STATUS(uf_json_transition_instance(d, "Job", "b", "Queued", "Running", payload), UF_OK);
    CHECK_REFCOUNT(payload, 1);
    json_decref(payload);
    CHECK_STATUS(uf_json_transition_instance(d, "Job", "a", NULL, "Done", NULL), UF_OK);

    json_t *instance = NULL;
    CHECK_STATUS(uf_json_instance(d, "Job", "a", &instance), UF_OK);
    json_t *want = parse("{\"state\": \"Done\", \"payload\": {}}");
    CHECK(instance != NULL && json_equal(instance, want));
    json_decref(instance);
    json_decref(want);
    /* An instance that does not live: NULL, and the call itself succeeded. */
    instance = parse("{}");
    json_t *kept = instance;
    CHECK_STATUS(uf_json_instance(d, "Job", "zzz", &instance), UF_OK);
    CHECK(instance == NULL);
    json_decref(kept);
    CHECK_STATUS(uf_json_instance(d, "Nope", "a", &instance), UF_ENOTFOUND);
    CHECK(instance == NULL);
    CHECK_STATUS(uf_json_instance(d, "Job", "a", NULL), UF_EINVAL);

    /* A key is checked as the core checks it; a keyed feature needs one. */
    CHECK_STATUS(uf_json_initialize_instance(d, "Job", "a.b", "Queued", NULL), UF_EINVAL);
    CHECK_STATUS(uf_json_initialize(d, "Job", "Queued", NULL), UF_EINVAL);
    CHECK_STATUS(uf_json_send(d, "Job", "b", "run", NULL), UF_REJECTED); /* Running takes no "run" */

    CHECK_STATUS(uf_json_deinitialize_instance(d, "Job", "a", "Done"), UF_OK);
    CHECK_MODEL(d, "{\"Job\": {\"b\": {\"state\": \"Running\", \"payload\": {\"step\": 2}}}}");
    uf_dispatcher_free(d);
}

/* ---- Strings holding "\u0000": the core keeps them, and so does the wrapper ---- */

static void test_nul(void) {
    uf_dispatcher *d = new_dispatcher();
    seen all = {0};
    CHECK_STATUS(uf_register(d, "{\"feature\":\"Note\",\"instances\":\"keyed\","
                                "\"states\":{\"Kept\":{\"fields\":{\"text\":\"string\"}}}}"), UF_OK);
    CHECK_STATUS(uf_json_subscribe(d, NULL, record_mutation, &all, NULL, NULL), UF_OK);

    /* When a payload string holds a NUL, then the subscriber still gets the
     * mutation, and the model and the instance read back with the string whole. */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Note\",\"key\":\"n\","
                              "\"into\":\"Kept\",\"payload\":{\"text\":\"a\\u0000b\"}}"), UF_OK);
    CHECK(all.calls == 1);
    CHECK(strcmp(all.kinds, "initialization:Note:Kept") == 0);
    if (all.kept != NULL) {
        json_t *text = json_object_get(json_object_get(json_object_get(all.kept, "new"), "payload"), "text");
        CHECK(json_string_length(text) == 3 && memcmp(json_string_value(text), "a\0b", 3) == 0);
        json_decref(all.kept);
    }
    json_t *instance = NULL;
    CHECK_STATUS(uf_json_instance(d, "Note", "n", &instance), UF_OK);
    json_t *want = json_loads("{\"state\":\"Kept\",\"payload\":{\"text\":\"a\\u0000b\"}}", JSON_ALLOW_NUL, NULL);
    CHECK(instance != NULL && want != NULL && json_equal(instance, want));
    json_decref(instance);
    json_t *state = uf_json_state(d);
    CHECK(state != NULL && json_equal(json_object_get(json_object_get(state, "Note"), "n"), want));
    json_decref(state);
    json_decref(want);
    uf_dispatcher_free(d);
}

/* ---- Allocation: every text the wrapper serializes is freed, with jansson's free */

static void test_allocator(void) {
    uf_dispatcher *d;
    json_t *payload, *action, *state;
    seen sub = {0};
    long before;

    json_set_alloc_funcs(counting_malloc, counting_free);
    d = new_download_dispatcher();
    payload = json_pack("{s:i}", "progress", 5);
    action = json_pack("{s:s, s:s, s:s, s:s}", "kind", "transition", "feature", "Download",
                       "from", "Running", "into", "Done");
    before = live_blocks;

    CHECK_STATUS(uf_json_subscribe(d, NULL, record_mutation, &sub, count_free, NULL), UF_OK);
    CHECK_STATUS(uf_json_initialize(d, "Download", "Running", payload), UF_OK);
    CHECK_STATUS(uf_json_actualize(d, "Download", "Running", payload), UF_OK);
    CHECK_STATUS(uf_json_actualize(d, "Download", "Running", action), UF_ESCHEMA);
    CHECK_STATUS(uf_json_submit(d, action), UF_OK);
    CHECK_STATUS(uf_json_deinitialize(d, "Download", "Done"), UF_OK);
    json_decref(sub.kept);
    sub.kept = NULL;
    state = uf_json_state(d);
    json_decref(state);
    CHECK(sub.calls == 4);
    /* Only what the test itself still holds is live. */
    CHECK(live_blocks == before);

    json_decref(payload);
    json_decref(action);
    uf_dispatcher_free(d);
    CHECK(sub.frees == 1);
    json_set_alloc_funcs(malloc, free);
}

/* ---- Values json_dumps refuses: UF_ENOMEM, and the core is never called ---------- */

/* The thread's last status and error must be exactly these. */
#define CHECK_LAST_ERROR(status, message) \
    check_last_error(__FILE__, __LINE__, (status), (message))
static void check_last_error(const char *file, int line, int status, const char *message) {
    char what[512];
    if (uf_last_status() == status && strcmp(uf_last_error(), message) == 0) return;
    snprintf(what, sizeof what, "last error is %s \"%s\", expected %s \"%s\"",
             uf_status_name(uf_last_status()), uf_last_error(), uf_status_name(status), message);
    fail_at(file, line, what);
}

/* A call that must fail with UF_ENOMEM before reaching the core: the last error
 * a core call left just before it is still the last error after it. */
#define CHECK_NOT_DUMPED(d, call)                                               \
    do {                                                                        \
        CHECK_STATUS(uf_json_deinitialize((d), "Nope", NULL), UF_ENOTFOUND);    \
        CHECK_LAST_ERROR(UF_ENOTFOUND, "unknown feature 'Nope'");               \
        CHECK_STATUS((call), UF_ENOMEM);                                        \
        CHECK_LAST_ERROR(UF_ENOTFOUND, "unknown feature 'Nope'");               \
    } while (0)

/* A value json_dumps cannot write: `which` 0 is an array inside an array that
 * holds the first one again (a cycle: break it with json_array_clear before the
 * last json_decref), 1 a string that is not UTF-8 (json_stringn_nocheck). */
static json_t *undumpable(int which) {
    json_t *outer, *inner;
    if (which == 1) return json_stringn_nocheck("\xff\xfe", 2);
    outer = json_array();
    inner = json_array();
    json_array_append_new(outer, inner);
    json_array_append(inner, outer);
    return outer;
}

static void test_undumpable(void) {
    static const char *const what[] = {"a cycle", "a string that is not UTF-8"};
    const char *const model =
        "{\"Download\": {\"state\": \"Running\", \"payload\": {\"progress\": 10}},"
        " \"Job\": {\"a\": {\"state\": \"Queued\", \"payload\": {}}}}";
    int which;

    for (which = 0; which < 2; ++which) {
        uf_dispatcher *d = new_download_dispatcher();
        json_t *jobs = parse(jobs_definition);
        json_t *bad = undumpable(which);
        json_t *payload = json_pack("{s:O}", "progress", bad);
        json_t *action = json_pack("{s:s, s:s, s:s, s:O}", "kind", "actualize",
                                   "feature", "Download", "in", "Running", "payload", payload);
        json_t *definition = json_pack("{s:s, s:{s:{s:{s:{s:s, s:O}}}}}", "feature", "Extra",
                                       "states", "S", "fields", "v", "type", "any", "default", bad);
        char *definitions_before = NULL, *definitions_after = NULL;
        seen mutations = {0};
        long before;
        int failed_before = failures;

        CHECK_STATUS(uf_json_register(d, jobs), UF_OK);
        json_decref(jobs);
        CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Download\","
                                  "\"into\":\"Running\",\"payload\":{\"progress\":10}}"), UF_OK);
        CHECK_STATUS(uf_json_initialize_instance(d, "Job", "a", "Queued", NULL), UF_OK);
        CHECK_STATUS(uf_definitions_get(d, &definitions_before), UF_OK);
        CHECK_STATUS(uf_json_subscribe(d, NULL, record_mutation, &mutations, NULL, NULL), UF_OK);

        /* Given a model and an error the core reported last, when each function that
         * serializes a json_t is given one that cannot be, then it is UF_ENOMEM, the
         * last error is the core's as before, and nothing changes. */
        json_set_alloc_funcs(counting_malloc, counting_free);
        before = live_blocks;
        CHECK_NOT_DUMPED(d, uf_json_register(d, definition));
        CHECK_NOT_DUMPED(d, uf_json_submit(d, action));
        CHECK_NOT_DUMPED(d, uf_json_initialize(d, "Download", "Running", payload));
        CHECK_NOT_DUMPED(d, uf_json_actualize(d, "Download", "Running", payload));
        CHECK_NOT_DUMPED(d, uf_json_transition(d, "Download", "Running", "Running", payload));
        CHECK_NOT_DUMPED(d, uf_json_initialize_instance(d, "Job", "b", "Queued", payload));
        CHECK_NOT_DUMPED(d, uf_json_actualize_instance(d, "Job", "a", "Queued", payload));
        CHECK_NOT_DUMPED(d, uf_json_transition_instance(d, "Job", "a", "Queued", "Running", payload));
        CHECK_NOT_DUMPED(d, uf_json_send(d, "Job", "a", "run", payload));
        CHECK_NOT_DUMPED(d, uf_json_send(d, "Download", NULL, "go", payload));
        /* A failed json_dumps keeps no memory. */
        CHECK(live_blocks == before);
        json_set_alloc_funcs(malloc, free);

        CHECK_REFCOUNT(payload, 2); /* the test's own, and the action's */
        CHECK_REFCOUNT(action, 1);
        CHECK_REFCOUNT(definition, 1);
        CHECK(mutations.calls == 0);
        CHECK_MODEL(d, model);
        CHECK_STATUS(uf_definitions_get(d, &definitions_after), UF_OK);
        CHECK(definitions_before != NULL && definitions_after != NULL &&
              strcmp(definitions_before, definitions_after) == 0);

        uf_free(definitions_before);
        uf_free(definitions_after);
        json_decref(action);
        json_decref(definition);
        json_decref(payload);
        if (which == 0) json_array_clear(bad);
        json_decref(bad);
        uf_dispatcher_free(d);
        if (failures != failed_before) fprintf(stderr, "    (the value held %s)\n", what[which]);
    }
}

/* ---- main ----------------------------------------------------------------------- */

static const struct {
    const char *name;
    void (*run)(void);
} groups[] = {
    {"register", test_register},       {"submit", test_submit},
    {"state", test_state},             {"subscribe", test_subscribe},
    {"initialize", test_initialize},   {"actualize", test_actualize},
    {"transition", test_transition},   {"deinitialize", test_deinitialize},
    {"allocator", test_allocator},     {"instances", test_instances},
    {"nul", test_nul},                 {"undumpable", test_undumpable},
};

int main(int argc, char **argv) {
    size_t i;
    int a, ran = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s all|GROUP...\n", argv[0]);
        return 2;
    }
    for (a = 1; a < argc; ++a) {
        int found = 0;
        for (i = 0; i < sizeof groups / sizeof groups[0]; ++i) {
            if (strcmp(argv[a], "all") == 0 || strcmp(argv[a], groups[i].name) == 0) {
                int before = failures;
                groups[i].run();
                printf("%-12s %s\n", groups[i].name, failures == before ? "ok" : "FAILED");
                found = 1;
                ++ran;
            }
        }
        if (!found) {
            fprintf(stderr, "unknown group: %s\n", argv[a]);
            return 2;
        }
    }
    printf("%d group(s), %d failed check(s)\n", ran, failures);
    return failures == 0 ? 0 : 1;
}
