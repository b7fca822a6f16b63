/*
 * test_reporting.c — the reporter (docs/processing.md, "Reports").
 *
 * A custom reporter gets processed, rejected and dropped reports as exact JSON;
 * a cycle of subscribers is stopped by max_cascade without hanging the host;
 * uf_set_reporter(d, NULL, NULL, NULL) goes back to the built-in reporter, whose
 * "short" and "verbose" lines are read back from stderr (fd 2 redirected to a
 * file).
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <unistd.h>

#include "check.h"

static const char *const toggle = "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}},\"initial\":[\"Off\"]}";

/* ---- Capturing what the built-in reporter writes to fd 2 ---- */

typedef struct capture {
    int saved_fd;
    char path[64];
} capture;

static void capture_start(capture *c) {
    strcpy(c->path, "/tmp/uniflow_test_stderr_XXXXXX");
    int fd = mkstemp(c->path);
    REQUIRE(fd >= 0);
    fflush(stderr);
    c->saved_fd = dup(2);
    REQUIRE(c->saved_fd >= 0 && dup2(fd, 2) == 2);
    close(fd);
}

/* Restores fd 2 and returns what was written meanwhile (free it). */
static char *capture_end(capture *c) {
    fflush(stderr);
    dup2(c->saved_fd, 2);
    close(c->saved_fd);
    FILE *f = fopen(c->path, "rb");
    REQUIRE(f != NULL);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = (char *)malloc((size_t)size + 1);
    REQUIRE(text != NULL);
    size_t got = fread(text, 1, (size_t)size, f);
    text[got] = '\0';
    fclose(f);
    unlink(c->path);
    return text;
}

/* ---- A custom reporter ---- */

static int count_seen_by_subscriber = -1;

static int look_at_reports(const uf_mutation *m, void *payload) {
    (void)m;
    count_seen_by_subscriber = (int)((check_list *)payload)->count;
    return UF_KEEP;
}

static void a_custom_reporter_receives_processed_and_rejected(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    check_list reports = {0};
    CHECK_STATUS(uf_set_reporter(d, check_record_report, &reports, NULL), UF_OK);
    CHECK_STATUS(uf_subscribe(d, NULL, look_at_reports, &reports, NULL, NULL), UF_OK);

    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\",\"scope\":\"test_reporting.c\",\"context\":\"setUp\"}"), UF_OK);
    /* The report comes after the subscribers. */
    CHECK(count_seen_by_subscriber == 0);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\",\"id\":\"again\"}"),
                UF_REJECTED, "Toggle is already initialized (in state Off)");
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"from\":\"Off\",\"into\":\"On\",\"id\":\"t-1\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"trigger\",\"feature\":\"Toggle\",\"in\":\"On\",\"context\":\"poke\"}"), UF_OK);
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"trigger\",\"feature\":\"Toggle\",\"initialized\":false}"),
                UF_REJECTED, "Toggle is initialized (in state On), not absent");
    /* Input errors are the caller's to see, not the reporter's. */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\""), UF_EJSON);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Nope\"}"), UF_ENOTFOUND);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"deinitialize\",\"feature\":\"Toggle\",\"from\":\"On\"}"), UF_OK);

    CHECK_LIST(&reports,
        "{\"event\":\"processed\",\"action\":{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\","
        "\"scope\":\"test_reporting.c\",\"context\":\"setUp\"}}",
        "{\"event\":\"rejected\",\"action\":{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\",\"id\":\"again\"},"
        "\"status\":\"UF_REJECTED\",\"reason\":\"Toggle is already initialized (in state Off)\"}",
        "{\"event\":\"processed\",\"action\":{\"kind\":\"transition\",\"feature\":\"Toggle\",\"from\":\"Off\",\"into\":\"On\",\"id\":\"t-1\"}}",
        "{\"event\":\"processed\",\"action\":{\"kind\":\"trigger\",\"feature\":\"Toggle\",\"in\":\"On\",\"context\":\"poke\"}}",
        "{\"event\":\"rejected\",\"action\":{\"kind\":\"trigger\",\"feature\":\"Toggle\",\"initialized\":false},"
        "\"status\":\"UF_REJECTED\",\"reason\":\"Toggle is initialized (in state On), not absent\"}",
        "{\"event\":\"processed\",\"action\":{\"kind\":\"deinitialize\",\"feature\":\"Toggle\",\"from\":\"On\"}}");
    check_list_clear(&reports);
    uf_dispatcher_free(d);
}

/* ---- Queued failures go to the reporter, not to the last error ---- */

static int queue_a_bad_one(const uf_mutation *m, void *payload) {
    (void)payload;
    CHECK_STATUS(uf_submit(uf_mutation_dispatcher(m), "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\",\"id\":\"queued\"}"),
                 UF_QUEUED);
    return UF_STOP;
}

static void queued_rejections_are_reported_not_returned(void) {
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    check_list reports = {0};
    CHECK_STATUS(uf_set_reporter(d, check_record_report, &reports, NULL), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "Initialization<Toggle>", queue_a_bad_one, NULL, NULL, NULL), UF_OK);
    CHECK_STATUS(uf_submit(NULL, "{}"), UF_EINVAL);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    /* The outer call succeeded; the last error is still the earlier one. */
    CHECK_STATUS(uf_last_status(), UF_EINVAL);
    CHECK_STR(uf_last_error(), "uf_submit: dispatcher is NULL");
    CHECK_LIST(&reports,
        "{\"event\":\"processed\",\"action\":{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}}",
        "{\"event\":\"rejected\",\"action\":{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\",\"id\":\"queued\"},"
        "\"status\":\"UF_REJECTED\",\"reason\":\"Toggle is already initialized (in state Off)\"}");
    check_list_clear(&reports);
    uf_dispatcher_free(d);
}

/* ---- The cascade limit ---- */

static unsigned long cycle_applied;

/* Every transition queues the next one: a cycle without end. */
static int flip_again(const uf_mutation *m, void *payload) {
    (void)payload;
    ++cycle_applied;
    const char *next = strcmp(uf_mutation_new_state(m), "On") == 0
        ? "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\",\"id\":\"cycle\"}"
        : "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"id\":\"cycle\"}";
    uf_submit(uf_mutation_dispatcher(m), next);
    return UF_KEEP;
}

typedef struct dropping_reporter {
    check_list reports;
    int submit_while_dropping;
    char refusal[160];
} dropping_reporter;

static uf_dispatcher *cycle_dispatcher;

/* Records every report; on the first "dropped" one, tries to submit more. */
static void submit_on_drop(const char *report, void *payload) {
    dropping_reporter *r = (dropping_reporter *)payload;
    check_list_add(&r->reports, report);
    if (strncmp(report, "{\"event\":\"dropped\"", 18) == 0 && r->submit_while_dropping == 0) {
        r->submit_while_dropping = uf_submit(cycle_dispatcher, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"same\":true}");
        snprintf(r->refusal, sizeof r->refusal, "%s", uf_last_error());
    }
}

static void a_cycle_is_stopped_by_max_cascade(void) {
    uf_dispatcher *d = cycle_dispatcher = check_dispatcher("{\"max_cascade\":10}", toggle);
    dropping_reporter r;
    memset(&r, 0, sizeof r);
    CHECK_STATUS(uf_set_reporter(d, submit_on_drop, &r, NULL), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "Transition<Toggle>", flip_again, NULL, NULL, NULL), UF_OK);
    check_list_clear(&r.reports);

    /* The outer call returns its own action's status. */
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"id\":\"outer\"}"), UF_OK);
    CHECK(cycle_applied == 10);
    CHECK(r.reports.count == 11);
    CHECK(check_list_count(&r.reports, "\"event\":\"processed\"") == 10);
    CHECK_STR(r.reports.count ? r.reports.items[r.reports.count - 1] : NULL,
              "{\"event\":\"dropped\",\"action\":{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"same\":false,\"id\":\"cycle\"},"
              "\"status\":\"UF_ELOOP\",\"reason\":\"cascade limit of 10 actions reached; action dropped\"}");
    /* While dropping, new submits are refused. */
    CHECK_STATUS(r.submit_while_dropping, UF_ELOOP);
    CHECK_STR(r.refusal, "the cascade limit (10) was reached; action refused");
    /* Ten applied from Off: the last one entered Off again, and the one that
     * would have entered On was dropped. */
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");

    /* The next outer call starts a fresh count. */
    cycle_applied = 0;
    check_list_clear(&r.reports);
    r.submit_while_dropping = 0;
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_OK);
    CHECK(cycle_applied == 10);
    CHECK(check_list_count(&r.reports, "\"event\":\"dropped\"") == 1);
    check_list_clear(&r.reports);
    uf_dispatcher_free(d);
}

static void the_default_limit_stops_a_cycle_too(void) {
    /* No reporter at all: the limit still holds and the host gets control back. */
    uf_dispatcher *d = check_dispatcher(NULL, toggle);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_subscribe(d, "Transition<Toggle>", flip_again, NULL, NULL, NULL), UF_OK);
    cycle_applied = 0;
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}"), UF_OK);
    CHECK(cycle_applied == 100000);
    uf_dispatcher_free(d);
}

/* ---- The built-in reporter ---- */

static void the_built_in_reporter_prints_short_lines(void) {
    uf_dispatcher *d = check_dispatcher("{\"reporting\":\"short\"}", toggle);
    capture c;
    capture_start(&c);
    uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
    uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\",\"scope\":\"test_reporting.c\",\"context\":\"again\"}");
    uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"context\":\"flip\"}");
    uf_submit(d, "{\"kind\":\"bogus\"}"); /* an input error: not reported */
    char *text = capture_end(&c);
    CHECK_STR(text,
        "[uniflow] processed Toggle.initialize\n"
        "[uniflow] rejected again@test_reporting.c: UF_REJECTED: Toggle is already initialized (in state Off)\n"
        "[uniflow] processed flip@\n");
    free(text);

    /* A custom reporter silences the built-in one... */
    check_list reports = {0};
    CHECK_STATUS(uf_set_reporter(d, check_record_report, &reports, NULL), UF_OK);
    capture_start(&c);
    uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
    text = capture_end(&c);
    CHECK_STR(text, "");
    CHECK(reports.count == 1);
    free(text);

    /* ...and uf_set_reporter(d, NULL, NULL, NULL) brings it back. */
    CHECK_STATUS(uf_set_reporter(d, NULL, NULL, NULL), UF_OK);
    capture_start(&c);
    uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\",\"id\":\"back\"}");
    uf_submit(d, "{\"kind\":\"deinitialize\",\"feature\":\"Toggle\",\"from\":\"Off\"}");
    text = capture_end(&c);
    CHECK_STR(text,
        "[uniflow] processed Toggle.transition\n"
        "[uniflow] rejected Toggle.deinitialize: UF_REJECTED: Toggle is in state On, not Off\n");
    CHECK(reports.count == 1);
    free(text);
    check_list_clear(&reports);
    uf_dispatcher_free(d);
}

static void the_built_in_reporter_prints_mutations_when_verbose(void) {
    uf_dispatcher *d = check_dispatcher("{\"reporting\":\"verbose\"}", toggle);
    capture c;
    capture_start(&c);
    uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
    uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"from\":\"On\",\"into\":\"Off\"}");
    char *text = capture_end(&c);
    CHECK_STR(text,
        "[uniflow] processed Toggle.initialize\n"
        "[uniflow]   {\"seq\":1,\"kind\":\"initialization\",\"feature\":\"Toggle\",\"old\":null,"
        "\"new\":{\"state\":\"Off\",\"payload\":{}},\"action\":{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}}\n"
        "[uniflow] rejected Toggle.transition: UF_REJECTED: Toggle is in state Off, not On\n");
    free(text);
    uf_dispatcher_free(d);
}

static void the_built_in_reporter_is_silent_by_default(void) {
    const char *options[] = {NULL, "{}", "{\"reporting\":\"none\"}"};
    for (int i = 0; i < 3; ++i) {
        uf_dispatcher *d = check_dispatcher(options[i], toggle);
        capture c;
        capture_start(&c);
        uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
        uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
        char *text = capture_end(&c);
        CHECK_STR(text, "");
        free(text);
        uf_dispatcher_free(d);
    }
    uf_dispatcher *d = NULL;
    CHECK_ERROR(uf_dispatcher_new(&d, "{\"reporting\":\"loud\"}"), UF_EINVAL,
                "option 'reporting' must be \"none\", \"short\" or \"verbose\", got \"loud\"");
    CHECK(d == NULL);
}

/* Issue 3: with reporting "verbose" the built-in reporter prints each binding as a
 * given-when-then sentence, `[scenario] WHEN <filter>, GIVEN <spec or rule>,
 * THEN <spec or action>.` — skipped bindings included (docs/bindings.md). */
static void the_built_in_reporter_prints_bindings_in_bdd_form_when_verbose(void) {
    static const char *const definition =
        "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}},\"initial\":[\"Off\"],"
        "\"bindings\":["
        "{\"scenario\":\"Switch on at once\",\"when\":\"InitializationInto<Toggle.Off>\","
        " \"given\":[{\"spec\":\"always\",\"if\":true}],"
        " \"then\":{\"spec\":\"switch it on\",\"submit\":[{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"On\"}]}},"
        "{\"scenario\":\"Never off again\",\"when\":\"TransitionInto<Toggle.Off>\","
        " \"given\":[{\"if\":{\"==\":[1,2]}}],"
        " \"then\":{\"submit\":[{\"kind\":\"deinitialize\",\"feature\":\"Toggle\"}]}},"
        "{\"when\":\"TransitionInto<Toggle.On>\",\"then\":{\"submit\":[]}}]}";
    uf_dispatcher *d = check_dispatcher("{\"reporting\":\"verbose\"}", definition);
    capture c;
    capture_start(&c);
    uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
    uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\"}");
    char *text = capture_end(&c);
    /* Spec texts where given, else the rule and the action; no scenario, no brackets. */
    CHECK_PREFIX(text, "[uniflow] binding_processed Toggle.initialize [Switch on at once] WHEN InitializationInto<Toggle.Off>, GIVEN always, THEN switch it on.\n");
    CHECK_CONTAINS(text, "\n[uniflow] binding_processed Toggle.transition WHEN TransitionInto<Toggle.On>, THEN nothing.\n");
    CHECK_CONTAINS(text, "\n[uniflow] binding_skipped Toggle.transition [Never off again] WHEN TransitionInto<Toggle.Off>, GIVEN {\"==\":[1,2]}, THEN deinitialize Toggle.\n");
    CHECK(strstr(text, "[[") == NULL);
    CHECK(strstr(text, "[]") == NULL);
    /* The first ran (binding_processed), the second was stopped by its rule. */
    CHECK(strstr(text, "binding_processed") != NULL);
    CHECK(strstr(text, "binding_skipped") != NULL);
    if (strstr(text, "[Switch on at once] WHEN") == NULL) fprintf(stderr, "verbose output was:\n%s", text);
    free(text);
    CHECK_STATE(d, "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}}}");
    uf_dispatcher_free(d);
}

int main(void) {
    /* A cycle that the limit failed to stop must not hang the test run. */
    alarm(120);
    a_custom_reporter_receives_processed_and_rejected();
    queued_rejections_are_reported_not_returned();
    a_cycle_is_stopped_by_max_cascade();
    the_default_limit_stops_a_cycle_too();
    the_built_in_reporter_prints_short_lines();
    the_built_in_reporter_prints_mutations_when_verbose();
    the_built_in_reporter_prints_bindings_in_bdd_form_when_verbose();
    the_built_in_reporter_is_silent_by_default();
    return check_summary();
}
