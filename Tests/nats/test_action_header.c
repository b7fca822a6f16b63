/* test_action_header.c — the adapter's reader of an action's "feature" and
 * "key" (bindings/nats/action_header.c): what it reads, when it declines, and,
 * over many mangled actions, that whatever it is sure of is what jansson reads
 * from the same text. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

static int failures;

#define CHECK(cond, ...)                                    \
    do {                                                    \
        if (!(cond)) {                                      \
            failures++;                                     \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                   \
            fputc('\n', stderr);                            \
        }                                                   \
    } while (0)

static void reads(const char *action, const char *feature, const char *key) {
    char f[UFN_HEADER_MAX], k[UFN_HEADER_MAX];
    bool has_key;
    bool sure = ufn_action_header(action, f, sizeof f, k, sizeof k, &has_key);
    CHECK(sure, "%s: not read", action);
    if (!sure) return;
    CHECK(strcmp(f, feature) == 0, "%s: feature '%s', expected '%s'", action, f, feature);
    CHECK(has_key == (key != NULL), "%s: has_key %d", action, has_key);
    if (key && has_key) CHECK(strcmp(k, key) == 0, "%s: key '%s', expected '%s'", action, k, key);
}

static void declines(const char *action) {
    char f[UFN_HEADER_MAX], k[UFN_HEADER_MAX];
    bool has_key;
    CHECK(!ufn_action_header(action, f, sizeof f, k, sizeof k, &has_key), "%s: read, expected a decline", action);
}

static void cases(void) {
    reads("{\"kind\":\"actualize\",\"feature\":\"K\",\"key\":\"k1\",\"in\":\"S\",\"payload\":{\"n\":1}}", "K", "k1");
    reads("{\"feature\":\"Downloads\",\"kind\":\"initialize\",\"into\":\"Counting\"}", "Downloads", NULL);
    reads(" \n{ \"payload\" : { \"a\" : [1, 2.5e3, -0, true, false, null, \"x\\\"}\", {\"b\": []}] } ,"
          "\t\"key\" : \"k\" , \"feature\" : \"F\" }\n",
          "F", "k");
    reads("{\"feature\":\"A\",\"feature\":\"B\"}", "B", NULL); /* the last wins, as in jansson */
    reads("{\"feature\":\"F\",\"key\":\"caf\xc3\xa9\"}", "F", "caf\xc3\xa9");
    reads("{\"feature\":\"F\",\"payload\":{\"s\":\"\\u00e9\\\\\"}}", "F", NULL);

    declines("");
    declines("[]");
    declines("{}");
    declines("{\"kind\":\"initialize\"}");                /* no feature */
    declines("{\"feature\":1}");                          /* not a string */
    declines("{\"feature\":\"F\",\"key\":null}");
    declines("{\"feature\":\"F\",\"key\":7}");
    declines("{\"feature\":\"F\\u0041\"}");               /* an escape in the value */
    declines("{\"fe\\u0061ture\":\"F\"}");                /* ...or in a name */
    declines("{\"feature\":\"F\"");                       /* unterminated */
    declines("{\"feature\":\"F\"} x");                    /* text after it */
    declines("{\"feature\":\"F\",}");
    declines("{\"feature\" \"F\"}");
    declines("{\"feature\":\"F\",\"payload\":{\"a\":}}");
    declines("{\"feature\":\"F\",\"payload\":\"unterminated}");
    declines("{\"feature\":\"F\",\"payload\":\"a\nb\"}"); /* a raw control byte */

    /* Too long for the buffer: declined, not cut. */
    char big[2 * UFN_HEADER_MAX];
    snprintf(big, sizeof big, "{\"feature\":\"F\",\"key\":\"%0*d\"}", UFN_HEADER_MAX, 0);
    declines(big);

    /* Deep payloads: within the depth it recurses, read; beyond, declined
     * (jansson judges those). */
    char deep[256] = "{\"feature\":\"F\",\"payload\":";
    for (int i = 0; i < 20; i++) strcat(deep, "[");
    for (int i = 0; i < 20; i++) strcat(deep, "]");
    strcat(deep, "}");
    reads(deep, "F", NULL);
    char deeper[512] = "{\"feature\":\"F\",\"payload\":";
    for (int i = 0; i < 100; i++) strcat(deeper, "[");
    for (int i = 0; i < 100; i++) strcat(deeper, "]");
    strcat(deeper, "}");
    declines(deeper);
}

/* Differential: mangled actions (bytes replaced, dropped or repeated); whenever
 * the reader is sure and jansson parses the text, both read the same. */
static unsigned long long state = 0x9E3779B97F4A7C15ull;

static unsigned next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (unsigned)(state >> 32);
}

static void agrees(const char *text) {
    char f[UFN_HEADER_MAX], k[UFN_HEADER_MAX];
    bool has_key;
    if (!ufn_action_header(text, f, sizeof f, k, sizeof k, &has_key)) return;
    json_t *root = json_loads(text, 0, NULL);
    if (!root) return; /* the core refuses it wherever it runs */
    const char *feature = json_string_value(json_object_get(root, "feature"));
    json_t *key = json_object_get(root, "key");
    CHECK(feature && strcmp(feature, f) == 0, "%s: feature '%s', jansson '%s'", text, f, feature ? feature : "(none)");
    CHECK(has_key == (key != NULL), "%s: has_key %d, jansson %d", text, has_key, key != NULL);
    if (has_key && key) CHECK(json_is_string(key) && strcmp(json_string_value(key), k) == 0, "%s: key differs", text);
    json_decref(root);
}

static void differential(void) {
    static const char *const seeds[] = {
        "{\"kind\":\"actualize\",\"feature\":\"K\",\"key\":\"k1\",\"in\":\"S\",\"payload\":{\"n\":1}}",
        "{\"kind\":\"send\",\"feature\":\"Door\",\"key\":\"front\",\"event\":\"OPEN\",\"payload\":{\"by\":[\"a\",{\"b\":null}]}}",
        "{\"feature\":\"Downloads\",\"kind\":\"initialize\",\"into\":\"Counting\",\"payload\":{\"s\":\"\\\"q\\\"\"}}",
    };
    static const char alphabet[] = "{}[]\",:\\ \tfeaturkyn0123-.e+E";
    int sure = 0;
    for (int round = 0; round < 200000; round++) {
        const char *seed = seeds[round % 3];
        char text[512];
        size_t length = strlen(seed);
        memcpy(text, seed, length + 1);
        int edits = 1 + (int)(next() % 3);
        for (int e = 0; e < edits && length > 2; e++) {
            size_t at = next() % length;
            switch (next() % 3) {
            case 0: text[at] = alphabet[next() % (sizeof alphabet - 1)]; break;
            case 1: memmove(text + at, text + at + 1, length - at); length--; break;
            default:
                if (length + 2 < sizeof text) {
                    memmove(text + at + 1, text + at, length - at + 1);
                    length++;
                }
            }
        }
        char f[UFN_HEADER_MAX], k[UFN_HEADER_MAX];
        bool has_key;
        if (ufn_action_header(text, f, sizeof f, k, sizeof k, &has_key)) sure++;
        agrees(text);
    }
    CHECK(sure > 1000, "the reader was sure of only %d mangled actions: the differential tests little", sure);
}

int main(void) {
    cases();
    differential();
    if (failures) {
        fprintf(stderr, "test_action_header: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_action_header: ok\n");
    return 0;
}
