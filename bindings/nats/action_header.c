/* action_header.c — an action's top-level "feature" and "key", read without
 * building its JSON tree.
 *
 * uf_nats_submit routes every action by those two strings. Parsing the whole
 * action with jansson for them cost as much again as the core's own parse of
 * it, on the path of every write. This reader skips the other members (the
 * payload, however nested) without allocating, and says "not sure" for
 * anything it does not read exactly as jansson would: an escape in a name or
 * in one of the two values, nesting deeper than it recurses, text that is not
 * JSON. The caller then parses the action properly. Routing is a hint: the
 * owner's core checks ownership again, so a wrong guess costs a refusal, never
 * a write in the wrong partition. */
#include <string.h>

#include "node.h"

#define MAX_DEPTH 32

static const char *skip_space(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    return s;
}

/* s is just after a string's opening quote: the closing quote, or NULL for a
 * string that does not end. *escaped tells whether it holds an escape. */
static const char *string_end(const char *s, bool *escaped) {
    *escaped = false;
    for (;;) {
        unsigned char c = (unsigned char)*s;
        if (c == '"') return s;
        if (c < 0x20) return NULL; /* the end of the text, or a raw control byte */
        if (c == '\\') {
            *escaped = true;
            if (s[1] == '\0') return NULL;
            s += 2;
        } else {
            s++;
        }
    }
}

/* One value from s: just past its end, or NULL when it cannot be skipped. */
static const char *skip_value(const char *s, int depth) {
    bool escaped;
    s = skip_space(s);
    if (*s == '"') {
        const char *end = string_end(s + 1, &escaped);
        return end ? end + 1 : NULL;
    }
    if (*s == '{' || *s == '[') {
        if (depth >= MAX_DEPTH) return NULL;
        char close = *s == '{' ? '}' : ']';
        s = skip_space(s + 1);
        if (*s == close) return s + 1;
        for (;;) {
            if (close == '}') {
                if (*s != '"' || !(s = string_end(s + 1, &escaped))) return NULL;
                s = skip_space(s + 1);
                if (*s != ':') return NULL;
                s++;
            }
            if (!(s = skip_value(s, depth + 1))) return NULL;
            s = skip_space(s);
            if (*s == close) return s + 1;
            if (*s != ',') return NULL;
            s = skip_space(s + 1);
        }
    }
    /* A number or a literal: its characters up to the next delimiter (whether
     * they form a valid one is the core's to say). */
    const char *start = s;
    while (*s && !strchr(",}] \t\r\n", *s)) s++;
    return s > start ? s : NULL;
}

/* Copies the string value at s (its opening quote) into out; false when it is
 * no string, holds an escape or does not fit. */
static bool copy_string(const char *s, const char **after, char *out, size_t size) {
    bool escaped;
    if (*s != '"') return false;
    const char *end = string_end(s + 1, &escaped);
    if (!end || escaped || (size_t)(end - s - 1) >= size) return false;
    memcpy(out, s + 1, (size_t)(end - s - 1));
    out[end - s - 1] = '\0';
    *after = end + 1;
    return true;
}

bool ufn_action_header(const char *action, char *feature, size_t feature_size, char *key, size_t key_size,
                       bool *has_key) {
    bool has_feature = false, escaped;
    *has_key = false;
    const char *s = skip_space(action);
    if (*s != '{') return false;
    s = skip_space(s + 1);
    if (*s == '}') return false;
    for (;;) {
        if (*s != '"') return false;
        const char *name = s + 1, *end = string_end(name, &escaped);
        if (!end || escaped) return false;
        size_t length = (size_t)(end - name);
        s = skip_space(end + 1);
        if (*s != ':') return false;
        s = skip_space(s + 1);
        /* A repeated member: the last one counts, as in jansson. */
        if (length == 7 && memcmp(name, "feature", 7) == 0) {
            if (!copy_string(s, &s, feature, feature_size)) return false;
            has_feature = true;
        } else if (length == 3 && memcmp(name, "key", 3) == 0) {
            if (!copy_string(s, &s, key, key_size)) return false;
            *has_key = true;
        } else if (!(s = skip_value(s, 1))) {
            return false;
        }
        s = skip_space(s);
        if (*s == '}') return has_feature && *skip_space(s + 1) == '\0';
        if (*s != ',') return false;
        s = skip_space(s + 1);
    }
}
