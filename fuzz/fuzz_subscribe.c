/*
 * fuzz_subscribe.c — uf_subscribe's filter expressions (docs/filters.md).
 *
 * The input is a filter. The target subscribes with it on a dispatcher holding
 * the fixed definitions, runs a fixed script that makes every kind of mutation
 * of every feature, and compares what the subscriber received with a reference
 * matcher written here from the table of docs/filters.md (a differential test): a filter the
 * reference parses must subscribe, one it does not must be UF_ESCHEMA or
 * UF_ENOTFOUND, and the subscriber must see exactly the mutations the reference
 * matches. A deferred subscription with the same filter must receive, from
 * uf_loop_run, exactly what the direct one received: the same mutations, and the
 * same JSON text for each (the action's texts included: the script's are jansson's,
 * freed once each submit returns). Then: uf_unsubscribe works once and is
 * UF_ENOTFOUND after, and each subscription's payload_free ran exactly once.
 *
 * One dispatcher serves every input (registration is the slow part and the
 * script leaves the model empty again), so seq keeps growing across inputs; that
 * changes nothing a filter can see.
 */
#include "fuzz_common.h"

/* ---- the reference filter parser --------------------------------------------------- */

typedef enum arg { ARG_NONE, ARG_FEATURE, ARG_STATE, ARG_TWO_STATES } arg;

static const struct form {
    const char *name;
    arg argument;
} forms[] = {
    {"AnyMutation", ARG_NONE},          {"AnyMutationOf", ARG_FEATURE},
    {"AnyUpdateOf", ARG_FEATURE},       {"AnySettingOf", ARG_FEATURE},
    {"SettingInto", ARG_STATE},         {"Initialization", ARG_FEATURE},
    {"Actualization", ARG_FEATURE},     {"Transition", ARG_FEATURE},
    {"Deinitialization", ARG_FEATURE},  {"InitializationInto", ARG_STATE},
    {"ActualizationIn", ARG_STATE},     {"TransitionInto", ARG_STATE},
    {"TransitionFrom", ARG_STATE},      {"TransitionBetween", ARG_TWO_STATES},
    {"DeinitializationFrom", ARG_STATE},
};

typedef struct filter {
    const char *form;
    char feature[300], state[300], second_feature[300], second_state[300];
    int keyed; /* a reference names an instance: F[key] */
} filter;

static const char *blanks(const char *p) {
    while (*p == ' ' || *p == '\t') ++p;
    return p;
}

/* [A-Za-z_][A-Za-z0-9_]*, at most 256 bytes; copies it to out (NULL: no name). */
static const char *name(const char *p, char *out) {
    const char *start = p;
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_')) return NULL;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_') ++p;
    if (p - start > 256) return NULL;
    memcpy(out, start, (size_t)(p - start));
    out[p - start] = '\0';
    return blanks(p);
}

/* After a feature's name: an optional `[key]` (blanks after `[` and before `]`;
 * the key ends at `]` or a blank). Returns where the reference goes on, NULL when
 * the key is malformed; *unsure is set when the key holds bytes that are not
 * ASCII (the library reads the key as UTF-8, repairing what is invalid, which
 * changes its length: that decision is the library's). */
static const char *instance_key(const char *p, filter *f, int *unsure) {
    if (*p != '[') return p;
    f->keyed = 1;
    p = blanks(p + 1);
    const char *start = p;
    while (*p && *p != ']' && *p != ' ' && *p != '\t') {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x80) *unsure = 1;
        if (c < 0x20 || c == 0x7F || c == '.' || c == '[' || c == '<' || c == '>' || c == ',') return NULL;
        ++p;
    }
    if (p == start || p - start > 256) return NULL;
    p = blanks(p);
    if (*p != ']') return NULL;
    return blanks(p + 1);
}

/* 1 when the text is a well-formed filter (names not checked against the
 * registry), 0 when it is UF_ESCHEMA, 2 when only the library can tell (see
 * instance_key). */
static int reference_parse(const char *text, filter *f) {
    int unsure = 0;
    memset(f, 0, sizeof *f);
    char form_name[300];
    const char *p = name(blanks(text), form_name);
    if (!p) return 0;
    const struct form *form = NULL;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; ++i)
        if (strcmp(forms[i].name, form_name) == 0) form = &forms[i];
    if (!form) return 0;
    f->form = form->name;
    if (form->argument == ARG_NONE) return *p == '\0';
    if (*p != '<') return 0;
    p = name(blanks(p + 1), f->feature);
    if (!p) return 0;
    p = instance_key(p, f, &unsure);
    if (!p) return unsure ? 2 : 0;
    if (form->argument != ARG_FEATURE) {
        if (*p != '.') return 0;
        p = name(blanks(p + 1), f->state);
        if (!p) return 0;
    }
    if (form->argument == ARG_TWO_STATES) {
        if (*p != ',') return 0;
        p = name(blanks(p + 1), f->second_feature);
        if (!p) return 0;
        int first_keyed = f->keyed;
        f->keyed = 0;
        p = instance_key(p, f, &unsure);
        if (!p) return unsure ? 2 : 0;
        /* Both ends name the same instance, or neither names one: only the
         * library compares the keys, so any key here is its decision. */
        if (first_keyed || f->keyed) unsure = 1;
        f->keyed |= first_keyed;
        if (*p != '.') return 0;
        p = name(blanks(p + 1), f->second_state);
        if (!p) return 0;
        if (strcmp(f->feature, f->second_feature) != 0) return 0; /* across two features */
    }
    if (*p != '>') return 0;
    if (*blanks(p + 1) != '\0') return 0;
    return unsure ? 2 : 1;
}

/* ---- the fixed script ------------------------------------------------------------ */

static const char *const script[] = {
    "{\"kind\":\"initialize\",\"feature\":\"FileDownloading\",\"into\":\"Starting\"}",
    "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"into\":\"InProgress\",\"payload\":{\"progress\":10}}",
    "{\"kind\":\"actualize\",\"feature\":\"FileDownloading\",\"in\":\"InProgress\",\"payload\":{\"progress\":50}}",
    "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"into\":\"InProgress\",\"same\":true,\"payload\":{\"progress\":60}}",
    "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"into\":\"Failed\",\"payload\":{\"reason\":\"r\"}}",
    "{\"kind\":\"deinitialize\",\"feature\":\"FileDownloading\"}",
    "{\"kind\":\"initialize\",\"feature\":\"Login\",\"into\":\"LoggedOut\"}",
    "{\"kind\":\"transition\",\"feature\":\"Login\",\"into\":\"LoggingIn\",\"payload\":{\"username\":\"u\"}}",
    "{\"kind\":\"transition\",\"feature\":\"Login\",\"into\":\"LoggedIn\",\"payload\":{\"sessionToken\":\"t\"}}",
    "{\"kind\":\"transition\",\"feature\":\"Login\",\"into\":\"LoggedOut\",\"context\":\"timed out\"}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Login\",\"from\":\"LoggedOut\"}",
    "{\"kind\":\"initialize\",\"feature\":\"Main\",\"into\":\"Main\",\"payload\":{\"val\":1}}",
    "{\"kind\":\"actualize\",\"feature\":\"Main\",\"in\":\"Main\",\"payload\":{\"val\":2}}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Main\"}",
    "{\"kind\":\"initialize\",\"feature\":\"Search\",\"into\":\"Ready\"}",
    "{\"kind\":\"transition\",\"feature\":\"Search\",\"from\":\"Ready\",\"into\":\"InProgress\",\"payload\":{\"query\":\"q\",\"progress\":1}}",
    "{\"kind\":\"transition\",\"feature\":\"Search\",\"into\":\"Failed\",\"payload\":{\"reason\":\"r\"}}",
    "{\"kind\":\"transition\",\"feature\":\"Search\",\"into\":\"Ready\"}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Search\",\"from\":\"Ready\"}",
    "{\"kind\":\"initialize\",\"feature\":\"Stats\",\"into\":\"Counting\"}",
    "{\"kind\":\"actualize\",\"feature\":\"Stats\",\"in\":\"Counting\",\"payload\":{\"completed\":3}}",
    "{\"kind\":\"transition\",\"feature\":\"Stats\",\"into\":\"Counting\",\"same\":true}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Stats\"}",
    "{\"kind\":\"initialize\",\"feature\":\"Ping\",\"into\":\"B\",\"scope\":\"s\",\"id\":\"ping-1\"}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Ping\"}",
    /* Payload-free transitions of a feature without bindings on them: uf_dispatch's hot path. */
    "{\"kind\":\"initialize\",\"feature\":\"Gate\",\"into\":\"Closed\"}",
    "{\"kind\":\"transition\",\"feature\":\"Gate\",\"into\":\"Closed\",\"same\":true}",
    "{\"kind\":\"transition\",\"feature\":\"Gate\",\"into\":\"Open\",\"context\":\"c\",\"id\":\"g\"}",
    "{\"kind\":\"transition\",\"feature\":\"Gate\",\"from\":\"Open\",\"into\":\"Closed\"}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Gate\"}",
};

enum { MAX_SEEN = 64, MAX_JSON = 512 };

typedef struct seen_mutation {
    uf_mutation_kind kind;
    char feature[32], old_state[32], new_state[32];
} seen_mutation;

typedef struct log {
    seen_mutation all[MAX_SEEN]; /* from an AnyMutation subscriber registered first */
    int count;
    uint64_t matched_seq[MAX_SEEN]; /* what the fuzzed subscriber received */
    char matched_json[MAX_SEEN][MAX_JSON];
    int matched;
    uint64_t deferred_seq[MAX_SEEN]; /* what the deferred one received, in uf_loop_run */
    char deferred_json[MAX_SEEN][MAX_JSON];
    int deferred;
    uint64_t first_seq;
    long live_payloads;
} log_t;

static log_t log_;

static void copy(char *out, const char *text) {
    snprintf(out, 32, "%s", text ? text : "");
}

static int record_all(const uf_mutation *m, void *payload) {
    (void)payload;
    if (log_.count == 0) log_.first_seq = uf_mutation_seq(m);
    FUZZ_ASSERT(log_.count < MAX_SEEN, "too many mutations");
    seen_mutation *s = &log_.all[log_.count++];
    s->kind = uf_mutation_kind_of(m);
    copy(s->feature, uf_mutation_feature(m));
    copy(s->old_state, uf_mutation_old_state(m));
    copy(s->new_state, uf_mutation_new_state(m));
    return UF_KEEP;
}

/* Keeps a delivery's seq and JSON text in one of the two lists. */
static void keep(uint64_t *seqs, char (*jsons)[MAX_JSON], int *count, const uf_mutation *m) {
    FUZZ_ASSERT(*count < MAX_SEEN, "too many mutations");
    const char *json = uf_mutation_json(m);
    FUZZ_ASSERT(json && strlen(json) < MAX_JSON, "a mutation's JSON is missing or longer than %d bytes", MAX_JSON);
    strcpy(jsons[*count], json);
    seqs[(*count)++] = uf_mutation_seq(m);
}

static int record_matched(const uf_mutation *m, void *payload) {
    FUZZ_ASSERT(payload == &log_, "the subscriber got another payload");
    keep(log_.matched_seq, log_.matched_json, &log_.matched, m);
    return UF_KEEP;
}

static int record_deferred(const uf_mutation *m, void *payload) {
    FUZZ_ASSERT(payload == &log_, "the deferred subscriber got another payload");
    keep(log_.deferred_seq, log_.deferred_json, &log_.deferred, m);
    return UF_KEEP;
}

static void release(void *payload) {
    FUZZ_ASSERT(payload == &log_, "payload_free got another payload");
    --log_.live_payloads;
}

static int reference_match(const filter *f, const seen_mutation *m) {
    const char *form = f->form;
    if (strcmp(form, "AnyMutation") == 0) return 1;
    if (strcmp(m->feature, f->feature) != 0) return 0;
    int init = m->kind == UF_MUTATION_INITIALIZATION, act = m->kind == UF_MUTATION_ACTUALIZATION,
        tr = m->kind == UF_MUTATION_TRANSITION, deinit = m->kind == UF_MUTATION_DEINITIALIZATION;
    if (strcmp(form, "AnyMutationOf") == 0) return 1;
    if (strcmp(form, "AnyUpdateOf") == 0) return act || tr;
    if (strcmp(form, "AnySettingOf") == 0) return init || act || tr;
    if (strcmp(form, "SettingInto") == 0) return !deinit && strcmp(m->new_state, f->state) == 0;
    if (strcmp(form, "Initialization") == 0) return init;
    if (strcmp(form, "Actualization") == 0) return act;
    if (strcmp(form, "Transition") == 0) return tr;
    if (strcmp(form, "Deinitialization") == 0) return deinit;
    if (strcmp(form, "InitializationInto") == 0) return init && strcmp(m->new_state, f->state) == 0;
    if (strcmp(form, "ActualizationIn") == 0) return act && strcmp(m->new_state, f->state) == 0;
    if (strcmp(form, "TransitionInto") == 0) return tr && strcmp(m->new_state, f->state) == 0;
    if (strcmp(form, "TransitionFrom") == 0) return tr && strcmp(m->old_state, f->state) == 0;
    if (strcmp(form, "TransitionBetween") == 0)
        return tr && strcmp(m->old_state, f->state) == 0 && strcmp(m->new_state, f->second_state) == 0;
    if (strcmp(form, "DeinitializationFrom") == 0) return deinit && strcmp(m->old_state, f->state) == 0;
    abort();
}

static uf_dispatcher *dispatcher;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dispatcher) {
        dispatcher = fuzz_fixed_dispatcher(NULL);
        FUZZ_ASSERT(uf_subscribe(dispatcher, NULL, record_all, NULL, NULL, NULL) == UF_OK, "uf_subscribe");
    }
    char *text = fuzz_cstring(data, size);
    memset(&log_, 0, sizeof log_);

    filter reference;
    int parses = reference_parse(text, &reference);
    uint64_t id = 0;
    log_.live_payloads = 1;
    int status = uf_subscribe(dispatcher, text, record_matched, &log_, release, &id);
    fuzz_check_status("uf_subscribe", status);
    if (parses == 2) {
        /* It names an instance, and the fixed definitions have no keyed feature. */
        FUZZ_ASSERT(status == UF_ENOTFOUND || status == UF_ESCHEMA, "the filter '%s' gave %s", text,
                    uf_status_name(status));
    } else if (!parses) {
        FUZZ_ASSERT(status == UF_ESCHEMA, "the filter '%s' is not well formed but uf_subscribe gave %s",
                    text, uf_status_name(status));
    } else if (reference.keyed) {
        /* The fixed definitions have no keyed feature: an instance of an unknown
         * feature is not found, of a single feature a schema error. */
        FUZZ_ASSERT(status == UF_ENOTFOUND || status == UF_ESCHEMA,
                    "the filter '%s' names an instance but uf_subscribe gave %s", text, uf_status_name(status));
    } else {
        FUZZ_ASSERT(status == UF_OK || status == UF_ENOTFOUND,
                    "the filter '%s' is well formed but uf_subscribe gave %s", text, uf_status_name(status));
    }
    if (status != UF_OK) {
        FUZZ_ASSERT(log_.live_payloads == 0, "payload_free did not run at once for a refused subscription");
        FUZZ_ASSERT(id == 0, "a refused subscription set an id");
        free(text);
        return 0;
    }
    FUZZ_ASSERT(id != 0, "subscription id 0");
    uint64_t deferred_id = 0;
    ++log_.live_payloads;
    status = uf_subscribe_deferred(dispatcher, text, record_deferred, &log_, release, &deferred_id);
    FUZZ_ASSERT(status == UF_OK, "the filter '%s' subscribed, but not deferred: %s", text, uf_status_name(status));

    for (size_t i = 0; i < sizeof script / sizeof script[0]; ++i) {
        int applied = uf_submit(dispatcher, script[i]);
        FUZZ_ASSERT(applied == UF_OK, "the fixed script failed at %zu: %s", i, uf_last_error());
    }
    char *state = fuzz_state(dispatcher);
    FUZZ_ASSERT(strcmp(state, "{}") == 0, "the fixed script left %s", state);
    uf_free(state);

    int expected = 0;
    for (int i = 0; i < log_.count; ++i) {
        if (!reference_match(&reference, &log_.all[i])) continue;
        uint64_t seq = log_.first_seq + (uint64_t)i;
        FUZZ_ASSERT(expected < log_.matched && log_.matched_seq[expected] == seq,
                    "filter '%s' should match mutation %d (%s %d %s->%s)", text, i, log_.all[i].feature,
                    (int)log_.all[i].kind, log_.all[i].old_state, log_.all[i].new_state);
        ++expected;
    }
    FUZZ_ASSERT(expected == log_.matched, "filter '%s' matched %d mutations, the reference %d", text,
                log_.matched, expected);

    FUZZ_ASSERT(log_.deferred == 0, "filter '%s': a deferred delivery was made before uf_loop_run", text);
    uint64_t done = 0;
    FUZZ_ASSERT(uf_loop_run(dispatcher, &done) == UF_OK, "uf_loop_run: %s", uf_last_error());
    FUZZ_ASSERT(done == (uint64_t)log_.matched && log_.deferred == log_.matched,
                "filter '%s': %d direct deliveries, %d deferred (uf_loop_run said %llu)", text, log_.matched,
                log_.deferred, (unsigned long long)done);
    for (int i = 0; i < log_.matched; ++i) {
        FUZZ_ASSERT(log_.deferred_seq[i] == log_.matched_seq[i] && strcmp(log_.deferred_json[i], log_.matched_json[i]) == 0,
                    "filter '%s', delivery %d: direct %s, deferred %s", text, i, log_.matched_json[i], log_.deferred_json[i]);
    }

    FUZZ_ASSERT(uf_unsubscribe(dispatcher, deferred_id) == UF_OK, "uf_unsubscribe of the deferred subscription");
    FUZZ_ASSERT(uf_unsubscribe(dispatcher, id) == UF_OK, "uf_unsubscribe");
    FUZZ_ASSERT(log_.live_payloads == 0, "payload_free did not run on uf_unsubscribe");
    int again = uf_unsubscribe(dispatcher, id);
    fuzz_check_status("uf_unsubscribe", again);
    FUZZ_ASSERT(again == UF_ENOTFOUND, "a second uf_unsubscribe gave %s", uf_status_name(again));
    free(text);
    return 0;
}
