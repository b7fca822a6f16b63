/*
 * source_line.c — see source_line.h.
 */
#include "source_line.h"

#include <stdlib.h>
#include <string.h>

typedef struct scanner {
    const char *at;
} scanner;

static void skip_blanks(scanner *s) {
    while (*s->at == ' ' || *s->at == '\t' || *s->at == '\n' || *s->at == '\r') s->at++;
}

/* Skips a string (s->at on its opening quote); 0 if it is not one. */
static int skip_string(scanner *s) {
    if (*s->at != '"') return 0;
    for (s->at++; *s->at && *s->at != '"'; s->at++) {
        if (*s->at == '\\' && s->at[1]) s->at++;
    }
    if (*s->at != '"') return 0;
    s->at++;
    return 1;
}

/* Skips any value; 0 on a surprise. Nesting is bounded by the library's limit
 * (256 levels), which the text has passed. */
static int skip_value(scanner *s) {
    skip_blanks(s);
    char open = *s->at;
    if (open == '"') return skip_string(s);
    if (open != '{' && open != '[') {
        while (*s->at && strchr(",]} \t\r\n", *s->at) == NULL) s->at++;
        return 1;
    }
    char close = open == '{' ? '}' : ']';
    s->at++;
    skip_blanks(s);
    if (*s->at == close) {
        s->at++;
        return 1;
    }
    for (;;) {
        if (open == '{') {
            skip_blanks(s);
            if (!skip_string(s)) return 0;
            skip_blanks(s);
            if (*s->at++ != ':') return 0;
        }
        if (!skip_value(s)) return 0;
        skip_blanks(s);
        if (*s->at == ',') {
            s->at++;
            continue;
        }
        if (*s->at != close) return 0;
        s->at++;
        return 1;
    }
}

/* Moves to the value of member `key` (length n) of the object at s->at. */
static int enter_member(scanner *s, const char *key, size_t n) {
    skip_blanks(s);
    if (*s->at != '{') return 0;
    s->at++;
    for (;;) {
        skip_blanks(s);
        const char *name = s->at + 1;
        if (!skip_string(s)) return 0;
        size_t length = (size_t)(s->at - 1 - name);
        skip_blanks(s);
        if (*s->at++ != ':') return 0;
        skip_blanks(s);
        if (length == n && memcmp(name, key, n) == 0) return 1;
        if (!skip_value(s)) return 0;
        skip_blanks(s);
        if (*s->at++ != ',') return 0;
    }
}

/* Moves to element `index` of the array at s->at. */
static int enter_element(scanner *s, unsigned long index) {
    skip_blanks(s);
    if (*s->at != '[') return 0;
    s->at++;
    for (unsigned long i = 0; i < index; i++) {
        if (!skip_value(s)) return 0;
        skip_blanks(s);
        if (*s->at++ != ',') return 0;
    }
    skip_blanks(s);
    return *s->at != ']';
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
    scanner s = {text};
    skip_blanks(&s);
    if (*s.at == '{') {
        scanner probe = s;
        if (enter_member(&probe, "features", 8) && (skip_blanks(&probe), *probe.at == '[')) {
            s = probe;
        } else if (feature != 0) {
            return 0;
        }
    }
    if (*s.at == '[' && !enter_element(&s, feature)) return 0;
    skip_blanks(&s);
    const char *found = s.at;

    /* The rest: ".key" and "[n]" parts, up to the message's ": ". */
    const char *stop = strstr(path, ": ");
    if (stop == NULL) stop = path + strlen(path);
    while (path < stop) {
        if (*path == '.') {
            const char *key = ++path;
            while (path < stop && *path != '.' && *path != '[') path++;
            if (!enter_member(&s, key, (size_t)(path - key))) break;
        } else if (*path == '[') {
            unsigned long index = strtoul(path + 1, &end, 10);
            if (end == path + 1 || *end != ']' || end > stop) break;
            path = end + 1;
            if (!enter_element(&s, index)) break;
        } else {
            break;
        }
        skip_blanks(&s);
        found = s.at;
    }
    unsigned long line = 1;
    for (const char *c = text; c < found; c++) line += *c == '\n';
    return line;
}
