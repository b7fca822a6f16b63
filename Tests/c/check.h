/*
 * check.h — the C tests' assertion helpers.
 *
 * A failed check prints file:line, what was expected and what came, plus the
 * thread's last status and message, and counts the failure; the test goes on so
 * that one run shows every broken expectation. A test's main() ends with
 * `return check_summary();`.
 *
 * Everything here is `static inline` so that a test that uses only part of it
 * still compiles cleanly with -Wall -Wextra -Werror.
 */
#ifndef UNIFLOW_TESTS_CHECK_H
#define UNIFLOW_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniflow.h"

/* Failures so far (one counter per test program; tests that check from several
 * threads count under a lock of their own). */
static int check_failures_;
static int check_count_;

/* Prints a text, cut to a readable length (inputs in these tests reach megabytes). */
static inline void check_print_(const char *label, const char *text) {
    enum { SHOWN = 400 };
    if (!text) {
        fprintf(stderr, "%s(NULL)\n", label);
    } else if (strlen(text) <= SHOWN) {
        fprintf(stderr, "%s%s\n", label, text);
    } else {
        fprintf(stderr, "%s%.*s... (%zu bytes in all)\n", label, SHOWN, text, strlen(text));
    }
}

static inline void check_fail_(const char *file, int line, const char *what) {
    ++check_failures_;
    fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    fprintf(stderr, "    last status %s, ", uf_status_name(uf_last_status()));
    check_print_("last error ", uf_last_error());
}

/* CHECK(cond): cond must hold. */
#define CHECK(cond) check_true_(__FILE__, __LINE__, (cond) != 0, #cond)
static inline int check_true_(const char *file, int line, int ok, const char *text) {
    ++check_count_;
    if (!ok) check_fail_(file, line, text);
    return ok;
}

/* CHECK_STATUS(call, expected): the status a call returned. */
#define CHECK_STATUS(call, expected) check_status_(__FILE__, __LINE__, (call), (expected), #call)
static inline int check_status_(const char *file, int line, int got, int expected, const char *text) {
    ++check_count_;
    if (got == expected) return 1;
    char what[1024];
    snprintf(what, sizeof what, "%s returned %s (%d), expected %s (%d)", text,
             uf_status_name(got), got, uf_status_name(expected), expected);
    check_fail_(file, line, what);
    return 0;
}

/* CHECK_STR(got, expected): equal strings; NULL equals only NULL. */
#define CHECK_STR(got, expected) check_str_(__FILE__, __LINE__, (got), (expected), #got)
static inline int check_str_(const char *file, int line, const char *got, const char *expected,
                             const char *text) {
    ++check_count_;
    if (got == expected || (got && expected && strcmp(got, expected) == 0)) return 1;
    ++check_failures_;
    fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, text);
    check_print_("    got      ", got);
    check_print_("    expected ", expected);
    return 0;
}

/* CHECK_PREFIX / CHECK_CONTAINS: got starts with / contains the text. */
#define CHECK_PREFIX(got, prefix) check_part_(__FILE__, __LINE__, (got), (prefix), 1, #got)
#define CHECK_CONTAINS(got, part) check_part_(__FILE__, __LINE__, (got), (part), 0, #got)
static inline int check_part_(const char *file, int line, const char *got, const char *part,
                              int prefix, const char *text) {
    ++check_count_;
    int ok = got != NULL && (prefix ? strncmp(got, part, strlen(part)) == 0 : strstr(got, part) != NULL);
    if (ok) return 1;
    ++check_failures_;
    fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, text);
    check_print_("    got      ", got);
    fprintf(stderr, "    expected %s \"%s\"\n", prefix ? "a text starting with" : "a text containing", part);
    return 0;
}

/* CHECK_ERROR(call, status, message): the call fails with that status, and the
 * thread's last status and last error say so (the message exactly). */
#define CHECK_ERROR(call, status, message)                                  \
    do {                                                                    \
        if (CHECK_STATUS((call), (status))) {                               \
            CHECK_STATUS(uf_last_status(), (status));                       \
            CHECK_STR(uf_last_error(), (message));                          \
        }                                                                   \
    } while (0)

/* CHECK_ERROR_PREFIX(call, status, prefix): as CHECK_ERROR, message by prefix. */
#define CHECK_ERROR_PREFIX(call, status, prefix)                            \
    do {                                                                    \
        if (CHECK_STATUS((call), (status))) {                               \
            CHECK_STATUS(uf_last_status(), (status));                       \
            CHECK_PREFIX(uf_last_error(), (prefix));                        \
        }                                                                   \
    } while (0)

/* REQUIRE(cond): as CHECK, but the test cannot go on without it. */
#define REQUIRE(cond)                                                       \
    do {                                                                    \
        if (!CHECK(cond)) {                                                 \
            fprintf(stderr, "    cannot go on\n");                          \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

/* The dispatcher's GlobalModel as JSON, in a buffer the caller frees with uf_free.
 * NULL (and a failed check) when uf_state_get fails. */
static inline char *check_state_(uf_dispatcher *d) {
    char *json = NULL;
    if (uf_state_get(d, &json) != UF_OK) {
        check_fail_(__FILE__, __LINE__, "uf_state_get failed");
        return NULL;
    }
    return json;
}

/* CHECK_STATE(d, expected): the whole GlobalModel, exactly. */
#define CHECK_STATE(d, expected)                                            \
    do {                                                                    \
        char *state_json_ = check_state_(d);                                \
        check_str_(__FILE__, __LINE__, state_json_, (expected), "state of " #d); \
        uf_free(state_json_);                                               \
    } while (0)

/* CHECK_FEATURE(d, feature, expected): one feature (expected NULL: absent). */
#define CHECK_FEATURE(d, feature, expected)                                 \
    do {                                                                    \
        char *feature_json_ = NULL;                                         \
        CHECK_STATUS(uf_feature_get((d), (feature), &feature_json_), UF_OK); \
        check_str_(__FILE__, __LINE__, feature_json_, (expected), "feature " #feature); \
        uf_free(feature_json_);                                             \
    } while (0)

/* A dispatcher with the given options and definitions; the test stops if either
 * fails. */
static inline uf_dispatcher *check_dispatcher(const char *options, const char *definitions) {
    uf_dispatcher *d = NULL;
    if (uf_dispatcher_new(&d, options) != UF_OK || d == NULL) {
        fprintf(stderr, "uf_dispatcher_new: %s\n", uf_last_error());
        exit(1);
    }
    if (definitions && uf_register(d, definitions) != UF_OK) {
        fprintf(stderr, "uf_register: %s\n", uf_last_error());
        exit(1);
    }
    return d;
}

/* ---- A list of strings: mutations or reports as a callback saw them ---- */

typedef struct check_list {
    char **items;
    size_t count, capacity;
} check_list;

static inline void check_list_add(check_list *list, const char *text) {
    if (list->count == list->capacity) {
        list->capacity = list->capacity ? list->capacity * 2 : 16;
        list->items = (char **)realloc(list->items, list->capacity * sizeof *list->items);
        if (!list->items) abort();
    }
    size_t length = strlen(text) + 1;
    char *copy = (char *)malloc(length);
    if (!copy) abort();
    memcpy(copy, text, length);
    list->items[list->count++] = copy;
}

static inline void check_list_clear(check_list *list) {
    for (size_t i = 0; i < list->count; ++i) free(list->items[i]);
    free(list->items);
    list->items = NULL;
    list->count = list->capacity = 0;
}

/* How many items contain the text. */
static inline size_t check_list_count(const check_list *list, const char *part) {
    size_t n = 0;
    for (size_t i = 0; i < list->count; ++i) n += strstr(list->items[i], part) != NULL;
    return n;
}

/* CHECK_LIST(list, ...): exactly these items, in this order (NULL-terminated). */
#define CHECK_LIST(list, ...) check_list_(__FILE__, __LINE__, (list), #list, __VA_ARGS__, (const char *)NULL)
static inline int check_list_(const char *file, int line, const check_list *list, const char *text, ...) {
    va_list args;
    va_start(args, text);
    size_t i = 0;
    int ok = 1;
    for (const char *expected = va_arg(args, const char *); expected; expected = va_arg(args, const char *), ++i) {
        char what[64];
        snprintf(what, sizeof what, "%s[%zu]", text, i);
        ok &= check_str_(file, line, i < list->count ? list->items[i] : NULL, expected, what);
    }
    va_end(args);
    ++check_count_;
    if (list->count != i) {
        ++check_failures_;
        fprintf(stderr, "%s:%d: FAILED: %s has %zu items, expected %zu\n", file, line, text, list->count, i);
        for (size_t j = i; j < list->count; ++j) check_print_("    extra: ", list->items[j]);
        ok = 0;
    }
    return ok;
}

/* The subscriber and reporter that fill a check_list. */
static inline int check_record_mutation(const uf_mutation *m, void *payload) {
    check_list_add((check_list *)payload, uf_mutation_json(m));
    return UF_KEEP;
}

static inline void check_record_report(const char *report_json, void *payload) {
    check_list_add((check_list *)payload, report_json);
}

/* A payload_free that counts its calls in the int the payload points to. */
static inline void check_count_free(void *payload) {
    ++*(int *)payload;
}

/* The end of a test program: a summary line and the exit status. */
static inline int check_summary(void) {
    if (check_failures_) {
        fprintf(stderr, "%d of %d checks FAILED\n", check_failures_, check_count_);
        return 1;
    }
    printf("all %d checks passed\n", check_count_);
    return 0;
}

#endif /* UNIFLOW_TESTS_CHECK_H */
