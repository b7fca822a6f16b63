/*
 * test_input.c — hostile input: every bad text gets its status and a specific
 * message, never a crash, and leaves the model as it was (docs/definitions.md
 * "JSON input, everywhere", docs/actions.md, uf_dispatch in uniflow.h).
 *
 * Malformed JSON with line and column, input nested 100,000 levels deep, a
 * definition of several megabytes, invalid UTF-8 in names and payloads, numbers
 * beyond 64 bits and 2^53, and uf_dispatch with a wrong struct size.
 */
#include <stddef.h>

#include "check.h"

static const char *const definitions =
    "[{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}},"
    " {\"feature\":\"Store\",\"states\":{\"Empty\":{},"
    "   \"Holding\":{\"fields\":{\"data\":{\"type\":\"any\",\"optional\":true},"
    "                            \"text\":{\"type\":\"string\",\"optional\":true},"
    "                            \"n\":{\"type\":\"integer\",\"optional\":true},"
    "                            \"x\":{\"type\":\"number\",\"optional\":true}}}}}]";

static const char *const before = "{\"Toggle\":{\"state\":\"Off\",\"payload\":{}},\"Store\":{\"state\":\"Empty\",\"payload\":{}}}";

static uf_dispatcher *started(void) {
    uf_dispatcher *d = check_dispatcher(NULL, definitions);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"Off\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Store\",\"into\":\"Empty\"}"), UF_OK);
    return d;
}

/* prefix, then `open` count times, then `close` count times, then tail (free it). */
static char *nest(const char *prefix, const char *open, const char *close, size_t count, const char *tail) {
    size_t lp = strlen(prefix), lo = strlen(open), lc = strlen(close), lt = strlen(tail);
    char *text = (char *)malloc(lp + count * (lo + lc) + lt + 1);
    REQUIRE(text != NULL);
    char *p = text;
    memcpy(p, prefix, lp);
    p += lp;
    for (size_t i = 0; i < count; ++i, p += lo) memcpy(p, open, lo);
    for (size_t i = 0; i < count; ++i, p += lc) memcpy(p, close, lc);
    memcpy(p, tail, lt + 1);
    return text;
}

/* Puts a payload into Store.Holding with a transition. */
static int hold(uf_dispatcher *d, const char *payload) {
    static const char *const head = "{\"kind\":\"transition\",\"feature\":\"Store\",\"into\":\"Holding\",\"same\":true,\"payload\":";
    size_t length = strlen(head) + strlen(payload) + 2;
    char *action = (char *)malloc(length);
    REQUIRE(action != NULL);
    snprintf(action, length, "%s%s}", head, payload);
    int status = uf_submit(d, action);
    free(action);
    return status;
}

static int keep(const uf_mutation *m, void *payload) {
    (void)m;
    (void)payload;
    return UF_KEEP;
}

/* ---- Malformed JSON ---- */

static void malformed_json_names_line_and_column(void) {
    uf_dispatcher *d = started();
    CHECK_ERROR(uf_submit(d, "{\"kind\": \"initialize\",\n  \"feature\" \"x\"}"), UF_EJSON,
                "line 2, column 15: ':' expected near '\"x\"'");
    CHECK_ERROR(uf_submit(d, ""), UF_EJSON, "line 1, column 0: empty text is not JSON");
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",}"), UF_EJSON, "line 1, column 22: string or '}' expected near '}'");
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\"} trailing"), UF_EJSON, "line 1, column 30: end of file expected near 'trailing'");
    CHECK_ERROR(uf_submit(d, "{\"kind\":\"initialize\",\"kind\":\"transition\"}"), UF_EJSON,
                "line 1, column 27: duplicate object key near '\"kind\"'");
    CHECK_ERROR(uf_register(d, "[{\"feature\":\"A\",\n\n   \"states\": {\"X\": {]}}]"), UF_EJSON,
                "line 3, column 21: string or '}' expected near ']'");
    CHECK_ERROR(uf_register(d, "   "), UF_EJSON, "line 1, column 3: unexpected token near end of file");

    /* A large document whose error is far down: the line count is exact. */
    size_t lines = 100000;
    char *big = (char *)malloc(lines * 4 + 64);
    REQUIRE(big != NULL);
    char *p = big;
    *p++ = '[';
    for (size_t i = 0; i < lines; ++i) { memcpy(p, "{},\n", 4); p += 4; }
    strcpy(p, "  {]");
    CHECK_ERROR(uf_register(d, big), UF_EJSON, "line 100001, column 4: string or '}' expected near ']'");
    free(big);

    /* Options and become parse strictly too. */
    uf_dispatcher *nd = NULL;
    CHECK_ERROR_PREFIX(uf_dispatcher_new(&nd, "{\"reporting\":"), UF_EJSON, "line 1, column 13:");
    CHECK(nd == NULL);
    CHECK_STATE(d, before);
    uf_dispatcher_free(d);
}

/* ---- Nesting ---- */

static int become_deep(uf_context *ctx, void *payload) {
    int *status = (int *)payload;
    char *deep = nest("{\"data\":", "[", "]", 100000, "}");
    *status = uf_context_become(ctx, deep);
    free(deep);
    return 0;
}

static void deep_nesting_is_refused_without_crashing(void) {
    uf_dispatcher *d = started();
    check_list mutations = {0};
    CHECK_STATUS(uf_subscribe(d, NULL, check_record_mutation, &mutations, NULL, NULL), UF_OK);

    /* 100,000 levels: the parser gives up (UF_EJSON) or the depth check refuses
     * (UF_ESCHEMA); either way a message, and no stack overflow. */
    char *arrays = nest("", "[", "]", 100000, "");
    char *objects = nest("", "{\"a\":", "}", 100000, "");
    const char *texts[] = {arrays, objects};
    for (int i = 0; i < 2; ++i) {
        int status = uf_submit(d, texts[i]);
        CHECK(status == UF_EJSON || status == UF_ESCHEMA);
        CHECK(uf_last_error()[0] != '\0');
        status = uf_register(d, texts[i]);
        CHECK(status == UF_EJSON || status == UF_ESCHEMA);
        char *out = NULL;
        status = uf_logic_apply(texts[i], texts[i], &out);
        CHECK(status == UF_EJSON || status == UF_ESCHEMA);
        CHECK(out == NULL);
        uf_dispatcher *nd = NULL;
        CHECK(uf_dispatcher_new(&nd, texts[i]) < 0 && nd == NULL);
    }
    char *deep_payload = nest("{\"data\":", "[", "]", 100000, "}");
    int status = hold(d, deep_payload);
    CHECK(status == UF_EJSON || status == UF_ESCHEMA);
    free(deep_payload);

    /* A via's become: refused, and the action with it. */
    int become_status = 0;
    CHECK_STATUS(uf_submit_via(d, "{\"kind\":\"transition\",\"feature\":\"Store\",\"into\":\"Holding\"}", become_deep, &become_status, NULL),
                 UF_ESCHEMA);
    CHECK(become_status == UF_EJSON || become_status == UF_ESCHEMA);

    /* The input's limit: the action is level 1, its payload 2, so 255 arrays
     * reach level 257. A field's value may nest 251 levels (a snapshot writes it
     * five levels further down), so 252 arrays are refused too, naming the field. */
    char *past_input_limit = nest("{\"data\":", "[", "]", 255, "}");
    char *past_value_limit = nest("{\"data\":", "[", "]", 252, "}");
    char *at_limit = nest("{\"data\":", "[", "]", 251, "}");
    CHECK_ERROR(hold(d, past_input_limit), UF_ESCHEMA, "input is nested deeper than 256 levels");
    CHECK_ERROR(hold(d, past_value_limit), UF_ESCHEMA, "Store.Holding.data: the value is nested deeper than 251 levels");
    CHECK_STATUS(hold(d, at_limit), UF_OK);
    char *feature = NULL;
    CHECK_STATUS(uf_feature_get(d, "Store", &feature), UF_OK);
    char *expected = nest("{\"state\":\"Holding\",\"payload\":{\"data\":", "[", "]", 251, "}}");
    CHECK_STR(feature, expected);
    uf_free(feature);
    free(expected);
    /* What the model holds at the limit, its snapshot restores. */
    char *snapshot = NULL, *again = NULL;
    CHECK_STATUS(uf_snapshot_get(d, &snapshot), UF_OK);
    uf_dispatcher *copy = check_dispatcher(NULL, definitions);
    CHECK_STATUS(uf_snapshot_restore(copy, snapshot), UF_OK);
    CHECK_STATUS(uf_snapshot_get(copy, &again), UF_OK);
    CHECK_STR(again, snapshot);
    uf_free(snapshot);
    uf_free(again);
    uf_dispatcher_free(copy);
    free(at_limit);
    free(past_value_limit);
    free(past_input_limit);

    /* A deep definition: the path is not reached, the depth is. */
    char *deep_definition = nest("{\"feature\":\"Deep\",\"states\":{\"A\":{\"description\":", "[", "]", 300, "}}}");
    CHECK_ERROR(uf_register(d, deep_definition), UF_ESCHEMA, "input is nested deeper than 256 levels");
    free(deep_definition);

    /* A filter is not JSON, but a long one must not hurt either. */
    char *long_filter = nest("", "AnyMutationOf<", ">", 50000, "");
    int freed = 0;
    CHECK_STATUS(uf_subscribe(d, long_filter, keep, &freed, check_count_free, NULL), UF_ESCHEMA);
    CHECK(freed == 1);
    free(long_filter);

    free(arrays);
    free(objects);
    CHECK(mutations.count == 1); /* only the one at the limit */
    check_list_clear(&mutations);
    uf_dispatcher_free(d);
}

/* ---- Size ---- */

static void a_definition_of_several_megabytes_registers(void) {
    uf_dispatcher *d = check_dispatcher(NULL, NULL);
    enum { FEATURES = 20000 };
    size_t capacity = (size_t)FEATURES * 400 + 64, used = 0;
    char *text = (char *)malloc(capacity);
    REQUIRE(text != NULL);
    used += (size_t)snprintf(text + used, capacity - used, "{\"features\":[");
    for (int i = 0; i < FEATURES; ++i) {
        used += (size_t)snprintf(text + used, capacity - used,
            "%s{\"feature\":\"Feature_%05d\",\"description\":\"generated feature number %d of a large definition\","
            "\"states\":{\"Idle\":{},\"Busy\":{\"fields\":{\"job\":\"string\",\"attempt\":{\"type\":\"integer\",\"default\":1}}},"
            "\"Done\":{\"fields\":{\"result\":{\"type\":\"any\",\"optional\":true}}}},"
            "\"initial\":[\"Idle\"],\"transitions\":{\"Idle\":[\"Busy\"],\"Busy\":[\"Done\",\"Idle\"]}}",
            i ? "," : "", i, i);
    }
    used += (size_t)snprintf(text + used, capacity - used, "]}");
    CHECK(used > 4 * 1000 * 1000);
    CHECK_STATUS(uf_register(d, text), UF_OK);

    char *back = NULL;
    CHECK_STATUS(uf_definitions_get(d, &back), UF_OK);
    CHECK(back && strlen(back) > 4 * 1000 * 1000);
    CHECK_PREFIX(back, "{\"features\":[{\"feature\":\"Feature_00000\",");
    uf_free(back);

    CHECK_STATUS(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Feature_19999\",\"into\":\"Idle\"}"), UF_OK);
    CHECK_STATUS(uf_submit(d, "{\"kind\":\"transition\",\"feature\":\"Feature_19999\",\"into\":\"Busy\",\"payload\":{\"job\":\"x\"}}"), UF_OK);
    CHECK_STATE(d, "{\"Feature_19999\":{\"state\":\"Busy\",\"payload\":{\"job\":\"x\",\"attempt\":1}}}");

    /* The same text again: every name is taken, nothing new registers. */
    CHECK_ERROR(uf_register(d, text), UF_EEXISTS, "features[0]: feature 'Feature_00000' is already registered");
    free(text);

    /* A payload of several megabytes goes in and comes back byte for byte. */
    size_t big = 5 * 1000 * 1000;
    char *payload = (char *)malloc(big + 64);
    REQUIRE(payload != NULL);
    strcpy(payload, "{\"result\":\"");
    size_t at = strlen(payload);
    for (size_t i = 0; i < big; ++i) payload[at + i] = (char)('a' + i % 26);
    strcpy(payload + at + big, "\"}");
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_TRANSITION;
    a.feature = "Feature_19999";
    a.from = "Busy";
    a.into = "Done";
    a.payload_json = payload;
    CHECK_STATUS(uf_dispatch(d, &a), UF_OK);
    char *feature = NULL;
    CHECK_STATUS(uf_feature_get(d, "Feature_19999", &feature), UF_OK);
    CHECK(feature && strlen(feature) == strlen(payload) + strlen("{\"state\":\"Done\",\"payload\":}"));
    CHECK(feature && strstr(feature, payload) != NULL);
    uf_free(feature);
    free(payload);
    uf_dispatcher_free(d);
}

/* ---- UTF-8 ---- */

static void invalid_utf8_is_not_json(void) {
    uf_dispatcher *d = started();
    /* In a name, in a payload, in a definition: not JSON at all. */
    CHECK_ERROR_PREFIX(uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Tog\xffgle\",\"into\":\"On\"}"), UF_EJSON, "line 1, column");
    static const char *const bad_strings[] = {
        "\xff",             /* never valid */
        "\xc0\xaf",         /* overlong '/' */
        "\xed\xa0\x80",     /* an encoded surrogate */
        "\xe2\x82",         /* truncated */
        "\xf4\x90\x80\x80", /* beyond U+10FFFF */
        "\x80",             /* a lone continuation byte */
    };
    for (size_t i = 0; i < sizeof bad_strings / sizeof *bad_strings; ++i) {
        char payload[64];
        snprintf(payload, sizeof payload, "{\"text\":\"a%sb\"}", bad_strings[i]);
        CHECK_ERROR_PREFIX(hold(d, payload), UF_EJSON, "line 1, column");
    }
    CHECK_ERROR_PREFIX(uf_register(d, "{\"feature\":\"Caf\xc3\",\"states\":{\"A\":{}}}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"text\":\"\\ud800\"}"), UF_EJSON, "line 1, column");

    /* Where the text is not JSON (names given as C strings), it is simply unknown. */
    char *out = NULL;
    CHECK_STATUS(uf_feature_get(d, "Tog\xffgle", &out), UF_ENOTFOUND);
    CHECK(out == NULL);
    uf_action a = UF_ACTION_INIT;
    a.kind = UF_ACTION_TRANSITION;
    a.feature = "Toggle";
    a.into = "O\xff";
    CHECK_STATUS(uf_dispatch(d, &a), UF_ENOTFOUND);
    int status = uf_subscribe(d, "AnyMutationOf<Tog\xffgle>", check_record_mutation, NULL, NULL, NULL);
    CHECK(status == UF_ESCHEMA || status == UF_ENOTFOUND);
    CHECK(uf_last_error()[0] != '\0');

    /* Names are ASCII identifiers: valid UTF-8 beyond that is a schema error. */
    CHECK_ERROR_PREFIX(uf_register(d, "{\"feature\":\"Caf\xc3\xa9\",\"states\":{\"A\":{}}}"), UF_ESCHEMA, "features[0]");
    CHECK_ERROR_PREFIX(uf_register(d, "{\"feature\":\"Cafe\",\"states\":{\"\xc3\x89tat\":{}}}"), UF_ESCHEMA, "features[0].states");

    /* Valid UTF-8 and escapes in payloads come back intact. */
    CHECK_STATUS(hold(d, "{\"text\":\"h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80 \\u00e9\\ud83d\\ude00 \\\"q\\\" \\n\"}"), UF_OK);
    CHECK_FEATURE(d, "Store", "{\"state\":\"Holding\",\"payload\":{\"text\":\"h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80 "
                              "\xc3\xa9\xf0\x9f\x98\x80 \\\"q\\\" \\n\"}}");

    /* A NUL escaped inside a string is data, not the end of the text. */
    CHECK_STATUS(hold(d, "{\"text\":\"a\\u0000b\"}"), UF_OK);
    CHECK_FEATURE(d, "Store", "{\"state\":\"Holding\",\"payload\":{\"text\":\"a\\u0000b\"}}");
    /* ...but not in a key (jansson cannot read those): refused where the text is. */
    CHECK_ERROR(hold(d, "{\"text\\u0000junk\":\"x\"}"), UF_EJSON,
                "line 1, column 95: NUL byte in object key not supported near '\"text\\u0000junk\"'");
    uf_dispatcher_free(d);
}

/* ---- Numbers ---- */

static void numbers_beyond_their_range_are_refused(void) {
    uf_dispatcher *d = started();
    /* Integer literals outside 64 bits are not JSON we accept. */
    CHECK_ERROR_PREFIX(hold(d, "{\"n\":9223372036854775808}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"n\":-9223372036854775809}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"x\":18446744073709551616}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"x\":99999999999999999999999999999}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"x\":1e400}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"x\":-1e400}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"x\":NaN}"), UF_EJSON, "line 1, column");
    CHECK_ERROR_PREFIX(hold(d, "{\"x\":Infinity}"), UF_EJSON, "line 1, column");
    CHECK_STATE(d, before);

    /* Inside 64 bits but beyond 2^53: JSON, but not an `integer` field's value. */
    CHECK_ERROR(hold(d, "{\"n\":9223372036854775807}"), UF_ESCHEMA, "Store.Holding.n: integer 9223372036854775807 is out of range (magnitude at most 2^53)");
    CHECK_ERROR(hold(d, "{\"n\":9007199254740993}"), UF_ESCHEMA, "Store.Holding.n: integer 9007199254740993 is out of range (magnitude at most 2^53)");
    CHECK_ERROR(hold(d, "{\"n\":1.5}"), UF_ESCHEMA, "Store.Holding.n: expected integer, got number");
    CHECK_ERROR_PREFIX(hold(d, "{\"n\":\"1\"}"), UF_ESCHEMA, "Store.Holding.n: expected integer, got string");
    CHECK_STATE(d, before);

    /* The edges that fit. */
    CHECK_STATUS(hold(d, "{\"n\":9007199254740992}"), UF_OK);
    CHECK_FEATURE(d, "Store", "{\"state\":\"Holding\",\"payload\":{\"n\":9007199254740992}}");
    CHECK_STATUS(hold(d, "{\"n\":-9007199254740992}"), UF_OK);
    CHECK_FEATURE(d, "Store", "{\"state\":\"Holding\",\"payload\":{\"n\":-9007199254740992}}");
    /* An integral number written with a fraction or exponent is an integer, and
     * is written without one. */
    CHECK_STATUS(hold(d, "{\"n\":2.0}"), UF_OK);
    CHECK_FEATURE(d, "Store", "{\"state\":\"Holding\",\"payload\":{\"n\":2}}");
    CHECK_STATUS(hold(d, "{\"n\":1e3}"), UF_OK);
    CHECK_FEATURE(d, "Store", "{\"state\":\"Holding\",\"payload\":{\"n\":1000}}");
    /* A `number` takes any finite JSON number, the 64-bit edges included. */
    CHECK_STATUS(hold(d, "{\"x\":9223372036854775807}"), UF_OK);
    CHECK_STATUS(hold(d, "{\"x\":-9223372036854775808}"), UF_OK);
    CHECK_STATUS(hold(d, "{\"x\":1.7976931348623157e308}"), UF_OK);
    CHECK_STATUS(hold(d, "{\"data\":[9223372036854775807,-9223372036854775808]}"), UF_OK);
    CHECK_FEATURE(d, "Store", "{\"state\":\"Holding\",\"payload\":{\"data\":[9223372036854775807,-9223372036854775808]}}");

    /* The options too. */
    uf_dispatcher *nd = NULL;
    CHECK_ERROR_PREFIX(uf_dispatcher_new(&nd, "{\"max_cascade\":9223372036854775808}"), UF_EJSON, "line 1, column");
    CHECK_ERROR(uf_dispatcher_new(&nd, "{\"max_cascade\":-1}"), UF_EINVAL, "option 'max_cascade' must be an integer >= 1, got -1");
    CHECK_ERROR(uf_dispatcher_new(&nd, "{\"max_cascade\":2.5}"), UF_EINVAL, "option 'max_cascade' must be an integer >= 1, got 2.5");
    CHECK_STATUS(uf_dispatcher_new(&nd, "{\"max_cascade\":9223372036854775807}"), UF_OK);
    uf_dispatcher_free(nd);
    /* An integer however it is written, as payloads take one. */
    CHECK_STATUS(uf_dispatcher_new(&nd, "{\"max_cascade\":5.0,\"deferred_limit\":1e3}"), UF_OK);
    uf_dispatcher_free(nd);
    CHECK_ERROR(uf_dispatcher_new(&nd, "{\"deferred_limit\":0.0}"), UF_EINVAL, "option 'deferred_limit' must be an integer >= 1, got 0.0");
    /* A journal path with \u0000 would open the file named by what comes before it. */
    CHECK_ERROR(uf_dispatcher_new(&nd, "{\"journal\":\"uniflow-nul.jsonl\\u0000.other\"}"), UF_EINVAL,
                "option 'journal': the path contains \\u0000, which no file name can hold");
    uf_dispatcher_free(d);
}

/* ---- uf_dispatch and its struct ---- */

static int via_runs;

static int count_via(uf_context *ctx, void *payload) {
    (void)ctx;
    (void)payload;
    ++via_runs;
    return 0;
}

static void a_wrong_struct_size_is_invalid(void) {
    uf_dispatcher *d = started();
    /* Room for a struct larger than this header's, as a newer caller would pass. */
    struct {
        uf_action action;
        char newer_fields[64];
    } larger;
    memset(&larger, 0, sizeof larger);
    uf_action *a = &larger.action;
    a->kind = UF_ACTION_TRANSITION;
    a->feature = "Toggle";
    a->into = "On";
    int freed = 0;

    char expected[128];
    const unsigned sizes[] = {0, 4, (unsigned)offsetof(uf_action, via), (unsigned)sizeof(uf_action) - 1,
                              (unsigned)sizeof(uf_action) + 8, (unsigned)sizeof larger, 0xffffffffu};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
        a->size = sizes[i];
        snprintf(expected, sizeof expected, "uf_dispatch: action->size is %u, expected %u (sizeof(uf_action))",
                 sizes[i], (unsigned)sizeof(uf_action));
        CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, expected);
    }

    /* The via is released whatever the outcome: refused for a smaller size (its
     * fields lie beyond `size`, so they read as zero: nothing to release), and
     * refused for a larger one, whose via fields are where this header puts them:
     * released once, never run. */
    a->via = count_via;
    a->via_payload = &freed;
    a->via_payload_free = check_count_free;
    a->size = (unsigned)offsetof(uf_action, via);
    CHECK_STATUS(uf_dispatch(d, a), UF_EINVAL);
    CHECK(via_runs == 0);
    CHECK(freed == 0);
    a->size = (unsigned)sizeof larger;
    CHECK_STATUS(uf_dispatch(d, a), UF_EINVAL);
    CHECK(via_runs == 0);
    CHECK(freed == 1);
    /* So is one of a size between versions that holds the via fields (they end
     * where `key`, the second version's first field, begins). */
    a->size = (unsigned)offsetof(uf_action, key) + 4;
    CHECK_STATUS(uf_dispatch(d, a), UF_EINVAL);
    CHECK(via_runs == 0);
    CHECK(freed == 2);

    /* Unknown kinds and fields that do not fit the kind. */
    a->size = sizeof(uf_action);
    a->via = NULL;
    a->via_payload_free = NULL;
    a->kind = (uf_action_kind)0;
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action.kind 0 is not a uf_action_kind");
    a->kind = (uf_action_kind)7; /* the first kind after UF_ACTION_SEND */
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action.kind 7 is not a uf_action_kind");
    a->kind = UF_ACTION_TRANSITION;
    a->uninitialized = 1;
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'uninitialized' is not allowed on a transition action");
    a->uninitialized = 0;
    a->kind = UF_ACTION_DEINITIALIZE;
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'into' is not allowed on a deinitialize action");
    a->into = NULL;
    a->same = 1;
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'same' is not allowed on a deinitialize action");
    a->same = 0;
    a->payload_json = "{}";
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'payload_json' is not allowed on a deinitialize action");
    a->payload_json = NULL;
    a->kind = UF_ACTION_TRIGGER;
    a->into = "On";
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'into' is not allowed on a trigger action");
    a->into = NULL;
    a->same = 1;
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'same' is not allowed on a trigger action");
    a->same = 0;
    a->payload_json = "{}";
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'payload_json' is not allowed on a trigger action");
    a->payload_json = NULL;
    a->from = "Off";
    a->uninitialized = 1;
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: a trigger has 'from' (in) or 'uninitialized', not both");
    a->uninitialized = 0;
    a->kind = UF_ACTION_INITIALIZE;
    a->into = "On";
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'from' is not allowed on an initialize action");
    a->from = NULL;
    a->same = 1;
    CHECK_ERROR(uf_dispatch(d, a), UF_EINVAL, "uf_action: 'same' is not allowed on an initialize action");
    a->same = 0;
    /* A bad payload_json is a JSON or schema error, like the text form. */
    a->kind = UF_ACTION_TRANSITION;
    a->feature = "Store";
    a->into = "Holding";
    a->payload_json = "{\"n\":";
    CHECK_ERROR_PREFIX(uf_dispatch(d, a), UF_EJSON, "line 1, column");
    a->payload_json = "[1]";
    CHECK_ERROR(uf_dispatch(d, a), UF_ESCHEMA, "uf_action.payload_json must be an object, got array");
    a->payload_json = "{\"n\":\"x\"}";
    CHECK_ERROR(uf_dispatch(d, a), UF_ESCHEMA, "Store.Holding.n: expected integer, got string");
    CHECK_STATE(d, before);
    uf_dispatcher_free(d);
}

/* ---- NUL inside names ----
 * JSON allows "\u0000" in a string. A name with it is no registered name, even
 * though its C string would end at the NUL and spell one. */
static void a_nul_in_a_name_is_not_the_end_of_the_name(void) {
    static const char *const actions[] = {
        "{\"kind\":\"transition\",\"feature\":\"Toggle\\u0000junk\",\"from\":\"Off\",\"into\":\"On\"}",
        "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"from\":\"Off\",\"into\":\"On\\u0000xyz\"}",
    };
    static const char *const messages[] = {
        "unknown feature 'Toggle\\u0000junk'",
        "unknown state 'On\\u0000xyz' of feature Toggle",
    };
    for (int i = 0; i < 2; ++i) {
        uf_dispatcher *d = started();
        CHECK_ERROR(uf_submit(d, actions[i]), UF_ENOTFOUND, messages[i]);
        CHECK_STATE(d, before);
        uf_dispatcher_free(d);
    }
}

int main(void) {
    malformed_json_names_line_and_column();
    deep_nesting_is_refused_without_crashing();
    a_definition_of_several_megabytes_registers();
    invalid_utf8_is_not_json();
    numbers_beyond_their_range_are_refused();
    a_wrong_struct_size_is_invalid();
    a_nul_in_a_name_is_not_the_end_of_the_name();
    return check_summary();
}
