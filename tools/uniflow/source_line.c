/*
 * source_line.c — see source_line.h.
 */
#include "source_line.h"

#include <stdlib.h>
#include <string.h>

/* The unread rest of the text: at..end. */
typedef struct cursor {
    const unsigned char *at, *end;
} cursor;

static void skip_blanks(cursor *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r')) c->at++;
}

/* Skips the string at c->at (on its opening quote); 0 if it is not one. */
static int skip_string(cursor *c) {
    if (c->at >= c->end || *c->at != '"') return 0;
    for (c->at++; c->at < c->end && *c->at != '"'; c->at++) {
        if (*c->at == '\\' && c->end - c->at > 1) c->at++;
    }
    if (c->at >= c->end) return 0;
    c->at++;
    return 1;
}

/* Skips any value, without recursion (the text is known to be JSON: counting the
 * brackets outside strings is enough); 0 on a surprise. */
static int skip_value(cursor *c) {
    skip_blanks(c);
    if (c->at >= c->end) return 0;
    if (*c->at == '"') return skip_string(c);
    if (*c->at != '{' && *c->at != '[') {
        while (c->at < c->end && strchr(",]} \t\r\n", *c->at) == NULL) c->at++;
        return 1;
    }
    size_t depth = 0;
    while (c->at < c->end) {
        unsigned char ch = *c->at;
        if (ch == '"') {
            if (!skip_string(c)) return 0;
            continue;
        }
        if (ch == '{' || ch == '[') {
            depth++;
        } else if ((ch == '}' || ch == ']') && --depth == 0) {
            c->at++;
            return 1;
        }
        c->at++;
    }
    return 0;
}

static int hex_value(const unsigned char *p, const unsigned char *end, unsigned *out) {
    if (end - p < 4) return 0;
    unsigned value = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        unsigned digit = h >= '0' && h <= '9' ? (unsigned)(h - '0')
                       : h >= 'a' && h <= 'f' ? (unsigned)(h - 'a' + 10)
                       : h >= 'A' && h <= 'F' ? (unsigned)(h - 'A' + 10) : 16u;
        if (digit == 16u) return 0;
        value = value * 16 + digit;
    }
    *out = value;
    return 1;
}

/* Reads the string at c->at and compares it, decoded, with key[0..n): 1 equal,
 * 0 not, -1 malformed. */
static int string_equals(cursor *c, const char *key, size_t n) {
    const unsigned char *k = (const unsigned char *)key, *k_end = k + n;
    int equal = 1;
    if (c->at >= c->end || *c->at != '"') return -1;
    c->at++;
    while (c->at < c->end && *c->at != '"') {
        unsigned char bytes[4];
        size_t count = 1;
        if (*c->at != '\\') {
            bytes[0] = *c->at++;
        } else {
            if (++c->at >= c->end) return -1;
            unsigned char e = *c->at++;
            switch (e) {
            case 'b': bytes[0] = '\b'; break;
            case 'f': bytes[0] = '\f'; break;
            case 'n': bytes[0] = '\n'; break;
            case 'r': bytes[0] = '\r'; break;
            case 't': bytes[0] = '\t'; break;
            case 'u': {
                unsigned code, low;
                if (!hex_value(c->at, c->end, &code)) return -1;
                c->at += 4;
                if (code >= 0xd800 && code <= 0xdbff && c->end - c->at >= 6 && c->at[0] == '\\' &&
                    c->at[1] == 'u' && hex_value(c->at + 2, c->end, &low) && low >= 0xdc00 && low <= 0xdfff) {
                    code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                    c->at += 6;
                }
                if (code < 0x80) {
                    bytes[0] = (unsigned char)code;
                } else if (code < 0x800) {
                    bytes[0] = (unsigned char)(0xc0 | (code >> 6));
                    bytes[1] = (unsigned char)(0x80 | (code & 0x3f));
                    count = 2;
                } else if (code < 0x10000) {
                    bytes[0] = (unsigned char)(0xe0 | (code >> 12));
                    bytes[1] = (unsigned char)(0x80 | ((code >> 6) & 0x3f));
                    bytes[2] = (unsigned char)(0x80 | (code & 0x3f));
                    count = 3;
                } else {
                    bytes[0] = (unsigned char)(0xf0 | (code >> 18));
                    bytes[1] = (unsigned char)(0x80 | ((code >> 12) & 0x3f));
                    bytes[2] = (unsigned char)(0x80 | ((code >> 6) & 0x3f));
                    bytes[3] = (unsigned char)(0x80 | (code & 0x3f));
                    count = 4;
                }
                break;
            }
            default: bytes[0] = e; break; /* \" \\ \/ */
            }
        }
        for (size_t i = 0; i < count; i++) {
            if (equal && k < k_end && *k == bytes[i]) k++;
            else equal = 0;
        }
    }
    if (c->at >= c->end) return -1;
    c->at++;
    return equal && k == k_end;
}

/* Moves to the value of member key[0..n) of the object at c->at. */
static int enter_member(cursor *c, const char *key, size_t n) {
    skip_blanks(c);
    if (c->at >= c->end || *c->at != '{') return 0;
    c->at++;
    for (;;) {
        skip_blanks(c);
        int found = string_equals(c, key, n);
        if (found < 0) return 0;
        skip_blanks(c);
        if (c->at >= c->end || *c->at++ != ':') return 0;
        skip_blanks(c);
        if (found) return 1;
        if (!skip_value(c)) return 0;
        skip_blanks(c);
        if (c->at >= c->end || *c->at++ != ',') return 0;
    }
}

/* Moves to element `index` of the array at c->at. */
static int enter_element(cursor *c, size_t index) {
    skip_blanks(c);
    if (c->at >= c->end || *c->at != '[') return 0;
    c->at++;
    for (size_t i = 0; i < index; i++) {
        if (!skip_value(c)) return 0;
        skip_blanks(c);
        if (c->at >= c->end || *c->at++ != ',') return 0;
    }
    skip_blanks(c);
    return c->at < c->end && *c->at != ']';
}

/* The line of the byte `at` of `text`. */
static unsigned long line_at(const char *text, const unsigned char *at) {
    unsigned long line = 1;
    for (const unsigned char *p = (const unsigned char *)text; p < at; p++) line += *p == '\n';
    return line;
}

unsigned long line_of_steps(const char *text, size_t length, const source_step *steps, size_t count) {
    cursor c = {(const unsigned char *)text, (const unsigned char *)text + length};
    skip_blanks(&c);
    const unsigned char *found = c.at;
    for (size_t i = 0; i < count; i++) {
        int entered = steps[i].key != NULL ? enter_member(&c, steps[i].key, strlen(steps[i].key))
                                           : enter_element(&c, steps[i].index);
        if (!entered) break;
        skip_blanks(&c);
        found = c.at;
    }
    return line_at(text, found);
}

unsigned long line_of_path(const char *text, const char *message) {
    static const char prefix[] = "features[";
    if (strncmp(message, prefix, sizeof prefix - 1) != 0) return 0;
    const char *path = message + sizeof prefix - 1;
    char *end;
    unsigned long feature = strtoul(path, &end, 10);
    if (end == path || *end != ']') return 0;
    path = end + 1;

    /* features[i]: element i of the array, or of {"features": [...]}; a single
     * definition object is features[0]. */
    cursor c = {(const unsigned char *)text, (const unsigned char *)text + strlen(text)};
    skip_blanks(&c);
    if (c.at < c.end && *c.at == '{') {
        cursor probe = c;
        if (enter_member(&probe, "features", 8) && (skip_blanks(&probe), probe.at < probe.end && *probe.at == '[')) {
            c = probe;
        } else if (feature != 0) {
            return 0;
        }
    }
    if (c.at < c.end && *c.at == '[' && !enter_element(&c, feature)) return 0;
    skip_blanks(&c);
    const unsigned char *found = c.at;

    /* The rest: ".key" and "[n]" parts, up to the message's ": ". */
    const char *stop = strstr(path, ": ");
    if (stop == NULL) stop = path + strlen(path);
    while (path < stop) {
        if (*path == '.') {
            const char *key = ++path;
            while (path < stop && *path != '.' && *path != '[') path++;
            if (!enter_member(&c, key, (size_t)(path - key))) break;
        } else if (*path == '[') {
            unsigned long index = strtoul(path + 1, &end, 10);
            if (end == path + 1 || *end != ']' || end > stop) break;
            path = end + 1;
            if (!enter_element(&c, index)) break;
        } else {
            break;
        }
        skip_blanks(&c);
        found = c.at;
    }
    return line_at(text, found);
}
