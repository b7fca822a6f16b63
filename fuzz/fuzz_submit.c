/*
 * fuzz_submit.c — uf_submit, uf_dispatch, uf_submit_via, uf_submit_batch and
 * uf_state_restore against the fixed definitions of fuzz_common.h.
 *
 * An input is a script, one command per line:
 *   B<json>              uf_submit_batch(json)
 *   R<json>              uf_state_restore(json)
 *   V<mode><json>[\t<p>] uf_submit_via(json) with a via callback that, by mode,
 *                        '0' calls uf_context_become(p) and goes on, '1' declines,
 *                        '-' fails, 's' also submits <json> again from inside
 *                        (queued), 'f' tries uf_dispatcher_free (must be refused)
 *   D<k>|<feature>|<from>|<into>|<payload>|<flags>|<id>
 *                        uf_dispatch of a uf_action built from the fields (k is
 *                        the kind's digit; an empty field is NULL; flags: 's' same,
 *                        'u' uninitialized, 'v' a via that goes on, 'z' a size
 *                        one byte short)
 *   S<filter>[\t<json>]  uf_subscribe(filter); the subscriber submits <json> from
 *                        inside each time it runs, and stops after 3 calls
 *   U<n>                 uf_unsubscribe of the n-th subscription (or of an id that
 *                        never existed)
 *   anything else        uf_submit(line)
 *
 * Invariants (beyond sanitizers): known statuses with messages; UF_QUEUED never
 * outside a callback; the model equals what the mutations that subscribers saw
 * imply (a shadow model kept by an AnyMutation subscriber), with seq counting
 * from 1 without gaps and every mutation's `old` equal to the shadow's; every
 * via/subscription payload_free runs exactly once (counted, and the payloads are
 * heap blocks so ASan/LSan see a double or missing free); every report is a JSON
 * object with an event; the model survives uf_state_get -> uf_state_restore on a
 * fresh dispatcher byte for byte.
 */
#include "fuzz_common.h"

/* ---- the shadow model -------------------------------------------------------- */

typedef struct shadow {
    json_t *model; /* {"F": {"state":..,"payload":..}} as mutations imply */
    uint64_t seq;  /* last seq seen */
} shadow;

static shadow sh;
static int in_callback; /* > 0 while a callback of ours runs */
static long outstanding_vias, outstanding_subscriptions;
static int submits_from_callbacks;

static int shadow_mutation(const uf_mutation *m, void *payload) {
    (void)payload;
    ++in_callback;
    uint64_t seq = uf_mutation_seq(m);
    FUZZ_ASSERT(seq == sh.seq + 1, "seq %llu after %llu", (unsigned long long)seq,
                (unsigned long long)sh.seq);
    sh.seq = seq;
    const char *feature = uf_mutation_feature(m);
    json_t *mutation = fuzz_parse_json("uf_mutation_json", uf_mutation_json(m));
    json_t *old_value = json_object_get(mutation, "old");
    json_t *new_value = json_object_get(mutation, "new");
    json_t *known = json_object_get(sh.model, feature);
    uf_mutation_kind kind = uf_mutation_kind_of(m);
    FUZZ_ASSERT(kind >= UF_MUTATION_INITIALIZATION && kind <= UF_MUTATION_DEINITIALIZATION,
                "mutation kind %d", (int)kind);
    FUZZ_ASSERT((kind == UF_MUTATION_INITIALIZATION) == json_is_null(old_value),
                "old must be null exactly on initialization: %s", uf_mutation_json(m));
    FUZZ_ASSERT((kind == UF_MUTATION_DEINITIALIZATION) == json_is_null(new_value),
                "new must be null exactly on deinitialization: %s", uf_mutation_json(m));
    FUZZ_ASSERT((uf_mutation_old_state(m) == NULL) == (kind == UF_MUTATION_INITIALIZATION),
                "uf_mutation_old_state");
    FUZZ_ASSERT((uf_mutation_new_payload_json(m) == NULL) == (kind == UF_MUTATION_DEINITIALIZATION),
                "uf_mutation_new_payload_json");
    if (known)
        FUZZ_ASSERT(json_equal(known, old_value), "mutation's old differs from the model before it: %s",
                    uf_mutation_json(m));
    else
        FUZZ_ASSERT(json_is_null(old_value), "mutation of an absent feature has an old: %s",
                    uf_mutation_json(m));
    if (json_is_null(new_value)) json_object_del(sh.model, feature);
    else json_object_set(sh.model, feature, new_value);
    json_decref(mutation);
    --in_callback;
    return UF_KEEP;
}

static void shadow_reset(uf_dispatcher *d) {
    char *state = fuzz_state(d);
    json_decref(sh.model);
    sh.model = fuzz_parse_json("uf_state_get", state);
    uf_free(state);
}

static void shadow_compare(uf_dispatcher *d, const char *after) {
    char *state = fuzz_state(d);
    json_t *model = fuzz_parse_json("uf_state_get", state);
    FUZZ_ASSERT(json_equal(model, sh.model), "after %.200s the model is\n%s\nbut the mutations imply\n%s",
                after, state, json_dumps(sh.model, JSON_COMPACT));
    json_decref(model);
    uf_free(state);
}

/* ---- reporter -------------------------------------------------------------------- */

static unsigned long reports;

static void reporter(const char *report, void *payload) {
    ++in_callback;
    ++reports;
    json_t *value = fuzz_parse_json("report", report);
    FUZZ_ASSERT(json_is_string(json_object_get(value, "event")), "report without event: %s", report);
    json_decref(value);
    /* Freeing the dispatcher inside its own callback is refused (now and then:
     * it is cheap, but the report path is hot). */
    if (reports % 64 == 1) {
        uf_dispatcher_free((uf_dispatcher *)payload);
        FUZZ_ASSERT(uf_last_status() == UF_EMISUSE, "uf_dispatcher_free inside the reporter was not refused");
    }
    --in_callback;
}

/* ---- via callbacks --------------------------------------------------------------- */

typedef struct via_payload {
    char mode;
    char *become; /* may be NULL */
    char *resubmit;
    long *counter;
} via_payload;

static void via_payload_free(void *p) {
    via_payload *v = (via_payload *)p;
    --*v->counter;
    free(v->become);
    free(v->resubmit);
    free(v);
}

static int fuzz_via(uf_context *ctx, void *p) {
    via_payload *v = (via_payload *)p;
    ++in_callback;
    uf_dispatcher *d = uf_context_dispatcher(ctx);
    FUZZ_ASSERT(d != NULL, "uf_context_dispatcher");
    FUZZ_ASSERT(uf_context_feature(ctx) != NULL, "uf_context_feature");
    const char *state = uf_context_state(ctx), *payload = uf_context_payload_json(ctx);
    FUZZ_ASSERT((state == NULL) == (payload == NULL), "state %s, payload %s", state ? state : "NULL",
                payload ? payload : "NULL");
    if (payload) json_decref(fuzz_parse_json("uf_context_payload_json", payload));
    int result = 0;
    if (v->become) fuzz_check_status("uf_context_become", uf_context_become(ctx, v->become));
    switch (v->mode) {
    case '1': result = 1; break;
    case '-': result = -1; break;
    case 's':
        if (v->resubmit && submits_from_callbacks < 50) {
            ++submits_from_callbacks;
            int status = uf_submit(d, v->resubmit);
            fuzz_check_status("uf_submit in via", status);
            FUZZ_ASSERT(status != UF_OK && status != UF_REJECTED,
                        "a submit inside a callback returned %s", uf_status_name(status));
        }
        break;
    case 'f':
        uf_dispatcher_free(d);
        FUZZ_ASSERT(uf_last_status() == UF_EMISUSE, "uf_dispatcher_free inside a via was not refused");
        break;
    default: break;
    }
    --in_callback;
    return result;
}

static via_payload *new_via_payload(char mode, const char *become, const char *resubmit) {
    via_payload *v = (via_payload *)calloc(1, sizeof *v);
    if (!v) abort();
    v->mode = mode;
    v->become = become ? strdup(become) : NULL;
    v->resubmit = resubmit ? strdup(resubmit) : NULL;
    v->counter = &outstanding_vias;
    ++outstanding_vias;
    return v;
}

/* ---- subscribers that act -------------------------------------------------------- */

typedef struct sub_payload {
    char *submit; /* may be NULL */
    int calls;
    long *counter;
} sub_payload;

static void sub_payload_free(void *p) {
    sub_payload *s = (sub_payload *)p;
    --*s->counter;
    free(s->submit);
    free(s);
}

static int acting_subscriber(const uf_mutation *m, void *p) {
    sub_payload *s = (sub_payload *)p;
    ++in_callback;
    uf_dispatcher *d = uf_mutation_dispatcher(m);
    FUZZ_ASSERT(uf_mutation_subscription_id(m) != 0, "subscription id 0");
    if (s->submit && submits_from_callbacks < 50) {
        ++submits_from_callbacks;
        int status = uf_submit(d, s->submit);
        fuzz_check_status("uf_submit in subscriber", status);
        FUZZ_ASSERT(status != UF_OK && status != UF_REJECTED,
                    "a submit inside a callback returned %s", uf_status_name(status));
    }
    uf_free(fuzz_state(d));
    --in_callback;
    return ++s->calls >= 3 ? UF_STOP : UF_KEEP;
}

/* ---- the script ------------------------------------------------------------------ */

enum { MAX_SUBSCRIPTIONS = 16 };

static char *field(char **cursor) {
    /* Splits at '|'; returns NULL for an empty field. */
    char *start = *cursor;
    if (!start) return NULL;
    char *bar = strchr(start, '|');
    if (bar) {
        *bar = '\0';
        *cursor = bar + 1;
    } else {
        *cursor = NULL;
    }
    return *start ? start : NULL;
}

static int run_dispatch(uf_dispatcher *d, char *line) {
    char *cursor = line;
    char *kind = field(&cursor);
    uf_action action = UF_ACTION_INIT;
    action.kind = (uf_action_kind)(kind ? atoi(kind) : 0);
    action.feature = field(&cursor);
    action.from = field(&cursor);
    action.into = field(&cursor);
    action.payload_json = field(&cursor);
    char *flags = field(&cursor);
    action.id = field(&cursor);
    if (flags) {
        action.same = strchr(flags, 's') != NULL;
        action.uninitialized = strchr(flags, 'u') != NULL;
        if (strchr(flags, 'z')) action.size -= 1;
        if (strchr(flags, 'v')) {
            action.via = fuzz_via;
            action.via_payload = new_via_payload('0', NULL, NULL);
            action.via_payload_free = via_payload_free;
        }
    }
    action.scope = "fuzz_submit.c";
    action.context = "run_dispatch";
    long vias_before = outstanding_vias;
    int status = uf_dispatch(d, &action);
    fuzz_check_status("uf_dispatch", status);
    if (action.size != sizeof action) {
        /* With a size it does not know the library reads nothing, so it cannot
         * call via_payload_free either: the caller keeps the payload. */
        FUZZ_ASSERT(status == UF_EINVAL, "uf_dispatch with size %u gave %s", action.size,
                    uf_status_name(status));
        if (action.via && outstanding_vias == vias_before) via_payload_free(action.via_payload);
    }
    return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *script = fuzz_cstring(data, size);
    /* A small cascade limit keeps the Ping cycle (and any cycle the fuzzer builds
     * from subscribers) cheap; the limit's code runs the same at 40 as at 100,000. */
    uf_dispatcher *d = fuzz_fixed_dispatcher("{\"max_cascade\": 40, \"report_skipped\": true}");
    FUZZ_ASSERT(uf_set_reporter(d, reporter, d, NULL) == UF_OK, "uf_set_reporter");
    sh.seq = 0;
    reports = 0;
    json_decref(sh.model);
    sh.model = json_object();
    FUZZ_ASSERT(uf_subscribe(d, NULL, shadow_mutation, NULL, NULL, NULL) == UF_OK, "uf_subscribe");
    outstanding_vias = outstanding_subscriptions = 0;
    uint64_t ids[MAX_SUBSCRIPTIONS] = {0};
    int subscriptions = 0;

    int lines = 0;
    for (char *line = script, *next; line && lines < 64; line = next, ++lines) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        submits_from_callbacks = 0;
        int status;
        switch (line[0]) {
        case 'B':
            status = uf_submit_batch(d, line + 1);
            fuzz_check_status("uf_submit_batch", status);
            break;
        case 'R': {
            char *before = fuzz_state(d);
            status = uf_state_restore(d, line + 1);
            fuzz_check_status("uf_state_restore", status);
            char *after = fuzz_state(d);
            if (status != UF_OK)
                FUZZ_ASSERT(strcmp(before, after) == 0, "a failed restore changed the model:\n%s\n%s",
                            before, after);
            uf_free(before);
            uf_free(after);
            if (status == UF_OK) shadow_reset(d);
            break;
        }
        case 'V': {
            char mode = line[1];
            char *json = line[1] ? line + 2 : line + 1;
            char *tab = strchr(json, '\t');
            if (tab) *tab++ = '\0';
            via_payload *v = new_via_payload(mode, tab, json);
            status = uf_submit_via(d, json, fuzz_via, v, via_payload_free);
            fuzz_check_status("uf_submit_via", status);
            break;
        }
        case 'D':
            status = run_dispatch(d, line + 1);
            break;
        case 'S': {
            char *filter = line + 1;
            char *tab = strchr(filter, '\t');
            if (tab) *tab++ = '\0';
            sub_payload *s = (sub_payload *)calloc(1, sizeof *s);
            if (!s) abort();
            s->submit = tab ? strdup(tab) : NULL;
            s->counter = &outstanding_subscriptions;
            ++outstanding_subscriptions;
            uint64_t id = 0;
            status = uf_subscribe(d, filter, acting_subscriber, s, sub_payload_free, &id);
            fuzz_check_status("uf_subscribe", status);
            if (status == UF_OK) {
                FUZZ_ASSERT(id != 0, "subscription id 0");
                for (int i = 0; i < subscriptions; ++i) FUZZ_ASSERT(ids[i] != id, "id reused");
                if (subscriptions < MAX_SUBSCRIPTIONS) ids[subscriptions++] = id;
            }
            break;
        }
        case 'U': {
            int n = atoi(line + 1);
            uint64_t id = (n >= 0 && n < subscriptions) ? ids[n] : (uint64_t)n + 1000000u;
            status = uf_unsubscribe(d, id);
            fuzz_check_status("uf_unsubscribe", status);
            break;
        }
        default:
            status = uf_submit(d, line);
            fuzz_check_status("uf_submit", status);
            break;
        }
        FUZZ_ASSERT(status != UF_QUEUED, "UF_QUEUED outside a callback (line %d)", lines);
        /* Every via payload is released once its action finished, and the outer
         * call returns only after the cascade. */
        FUZZ_ASSERT(outstanding_vias == 0, "%ld via payload_free calls missing after: %.200s",
                    outstanding_vias, line);
        shadow_compare(d, line);
    }

    /* Snapshot round trip, into one dispatcher kept for it (a restore replaces the
     * whole model, so what the previous input left there does not matter). */
    static uf_dispatcher *copy;
    if (!copy) copy = fuzz_fixed_dispatcher(NULL);
    char *state = fuzz_state(d);
    int restored = uf_state_restore(copy, state);
    FUZZ_ASSERT(restored == UF_OK, "uf_state_get output does not restore (%s): %s", uf_last_error(), state);
    char *copied = fuzz_state(copy);
    FUZZ_ASSERT(strcmp(state, copied) == 0, "restore is not exact:\n%s\n%s", state, copied);
    uf_free(copied);
    uf_free(state);

    uf_dispatcher_free(d);
    FUZZ_ASSERT(outstanding_subscriptions == 0,
                "%ld subscription payload_free calls missing (too many if negative)",
                outstanding_subscriptions);
    free(script);
    return 0;
}
