/*
 * import_xstate.c — converts an XState v5 machine config (JSON) into a libuniflow
 * feature definition (import_xstate.h; what converts to what: docs/cli.md).
 *
 * The rule is "no silent approximation": every key of the machine is either
 * converted into something that behaves the same under libuniflow's events and
 * state timers, or skipped with a note because it changes nothing at run time
 * (TypeScript's types, XState v4's flags for actions: skipped_key), or the whole
 * machine is refused with the path of the first element that cannot be. The machine is read in document order, so "first" means the
 * first such element in the file (a few prerequisites — the input is an object
 * with states, the feature has a name — are checked before the walk).
 *
 * Shape of the work: parse with jansson (duplicate keys refused, as the library
 * refuses them); a pre-pass indexes the state keys (a target may name a state
 * declared after it); the walk converts states, events, delays and context into
 * jansson values, keeping what it needs for `transitions`; the definition is then
 * assembled in a fixed key order and written by a small serializer of our own
 * (jansson's writes 0.1 as 0.10000000000000001, and cannot keep short arrays on
 * one line). jansson keeps no positions: the line of a refused element is found
 * again in the text by the CLI's one JSON position scanner (source_line.c), along
 * the path the walk keeps.
 */
#include "import_xstate.h"
#include "import_xstate_chart.h"
#include "source_line.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libuniflow's limits (docs/definitions.md): names, delays, nesting. */
#define NAME_MAX_BYTES 256
#define DELAY_MAX_MS (UINT64_C(1) << 53)
/* A context value sits at level 5 of the definition (definition, states, the state,
 * fields, the field) and a definition may nest 256 levels: 251 are left for it. */
#define CONTEXT_MAX_DEPTH 251
/* The deepest path the walk makes is states.S.on.E[i].guard.params (7). */
#define PATH_MAX_DEPTH 12
/* The state index of a transition declared on the machine itself. */
#define ROOT SIZE_MAX

/* ------------------------------------------------------------------------------
 * A growing byte buffer; `failed` once an allocation failed (the bytes are then
 * incomplete and the caller reports "out of memory").
 * ------------------------------------------------------------------------------ */

typedef struct buffer {
    char *data;
    size_t length, capacity;
    int failed;
} buffer;

static void put_bytes(buffer *b, const char *bytes, size_t n) {
    if (b->failed) return;
    if (n >= b->capacity - b->length || b->data == NULL) {
        size_t capacity = b->capacity ? b->capacity : 256;
        while (capacity - b->length <= n) {
            if (capacity > SIZE_MAX / 2) {
                b->failed = 1;
                return;
            }
            capacity *= 2;
        }
        char *bigger = realloc(b->data, capacity);
        if (bigger == NULL) {
            b->failed = 1;
            return;
        }
        b->data = bigger;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, bytes, n);
    b->length += n;
    b->data[b->length] = '\0';
}

static void put_text(buffer *b, const char *text) { put_bytes(b, text, strlen(text)); }

static void put_char(buffer *b, char c) { put_bytes(b, &c, 1); }

/* A JSON string literal (quotes included). jansson has checked that the text is
 * UTF-8; only what JSON requires is escaped, so names and descriptions stay
 * readable. */
static void put_json_string(buffer *b, const char *text, size_t length) {
    put_char(b, '"');
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        const char *escape = NULL;
        switch (c) {
        case '"': escape = "\\\""; break;
        case '\\': escape = "\\\\"; break;
        case '\b': escape = "\\b"; break;
        case '\f': escape = "\\f"; break;
        case '\n': escape = "\\n"; break;
        case '\r': escape = "\\r"; break;
        case '\t': escape = "\\t"; break;
        default: break;
        }
        if (escape != NULL) {
            put_text(b, escape);
        } else if (c < 0x20) {
            char code[8];
            snprintf(code, sizeof code, "\\u%04x", c);
            put_text(b, code);
        } else {
            put_char(b, (char)c);
        }
    }
    put_char(b, '"');
}

/* A name inside a message: 'name', with quotes, backslashes and control bytes
 * escaped so that a message always stays on one line. */
static void put_quoted(buffer *b, const char *text) {
    put_char(b, '\'');
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '\'' || *c == '\\') {
            put_char(b, '\\');
            put_char(b, (char)*c);
        } else if (*c < 0x20 || *c == 0x7f) {
            char code[8];
            snprintf(code, sizeof code, "\\u%04x", *c);
            put_text(b, code);
        } else {
            put_char(b, (char)*c);
        }
    }
    put_char(b, '\'');
}

/* ------------------------------------------------------------------------------
 * Names: [A-Za-z_][A-Za-z0-9_]*, at most 256 bytes
 * ------------------------------------------------------------------------------ */

static int is_name_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The bytes of the character starting at p: a well-formed UTF-8 sequence counts as
 * one character (jansson has checked the machine's strings; a file name may hold
 * anything, and every other byte counts alone). */
static size_t character_length(const unsigned char *p) {
    size_t n = *p >= 0xf0 && *p <= 0xf4 ? 4 : *p >= 0xe0 && *p <= 0xef ? 3 : *p >= 0xc2 && *p <= 0xdf ? 2 : 1;
    for (size_t i = 1; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf) return 1;
    }
    return n;
}

enum { NAME_OK = 0, NAME_EMPTY = -1, NAME_TOO_LONG = -2 };

/* Converts text[0..length) into a name in out (NAME_MAX_BYTES + 1 bytes): every
 * character outside [A-Za-z0-9_] becomes '_' and a leading digit gets a '_'
 * before it, so that "traffic-light" is "traffic_light" and "1st" is "_1st". */
static int convert_name(const char *text, size_t length, char *out) {
    const unsigned char *p = (const unsigned char *)text, *end = p + length;
    size_t n = 0;
    if (p == end) return NAME_EMPTY;
    if (*p >= '0' && *p <= '9') out[n++] = '_';
    while (p < end) {
        char c;
        if (is_name_byte(*p)) {
            c = (char)*p++;
        } else {
            c = '_';
            size_t skip = character_length(p);
            p += skip <= (size_t)(end - p) ? skip : 1;
        }
        if (n >= NAME_MAX_BYTES) return NAME_TOO_LONG;
        out[n++] = c;
    }
    out[n] = '\0';
    return NAME_OK;
}

static char *copy_text(const char *text) {
    size_t n = strlen(text) + 1;
    char *copy = malloc(n);
    if (copy != NULL) memcpy(copy, text, n);
    return copy;
}

/* ------------------------------------------------------------------------------
 * The importer: what the walk has read so far
 * ------------------------------------------------------------------------------ */

typedef struct state_info {
    const char *key;     /* the XState key (owned by the machine) */
    char *name;          /* its libuniflow name */
    json_t *description; /* borrowed, or NULL */
    json_t *on;          /* the converted `on`, or NULL */
    json_t *after;       /* the converted timers, or NULL */
    int final;
    size_t *pairs;       /* targets of the transitions it declares */
    size_t pair_count, pair_capacity;
} state_info;

typedef struct importer {
    const char *text;
    size_t length;
    json_t *machine;
    source_step path[PATH_MAX_DEPTH]; /* the lines come from source_line.c */
    int depth;
    char *error;
    unsigned long line;
    int out_of_memory;
    uniflow_import_note *notes; /* what was skipped, in document order */
    size_t note_count, note_capacity;

    char *feature;
    json_t *description;  /* borrowed, or NULL */
    state_info *states;
    size_t state_count;
    int has_initial;
    size_t initial;
    json_t *state_index;  /* XState key -> index */
    json_t *state_owners; /* name -> XState key: two keys that convert alike are refused */
    json_t *event_owners; /* the same for event names (one namespace per feature) */
    json_t *field_owners; /* the same for context keys */
    json_t *fields;       /* the fields every state declares (from `context`) */
    int has_fields;       /* known before the walk: timers carry the payload then */
    json_t *on;           /* the machine's own `on`, converted, or NULL */
    size_t *root_targets; /* where the machine's own `on` leads */
    size_t root_count, root_capacity;
} importer;

static void push_key(importer *im, const char *key) {
    if (im->depth < PATH_MAX_DEPTH) im->path[im->depth] = (source_step){key, 0};
    im->depth++;
}

static void push_index(importer *im, size_t index) {
    if (im->depth < PATH_MAX_DEPTH) im->path[im->depth] = (source_step){NULL, index};
    im->depth++;
}

static void pop(importer *im) { im->depth--; }

/* A key prints as .key when it is made of [A-Za-z0-9_] (delays such as 1000
 * included), else as ["key"], so that a path stays unambiguous whatever the keys. */
static void put_path(buffer *b, const importer *im) {
    int depth = im->depth < PATH_MAX_DEPTH ? im->depth : PATH_MAX_DEPTH;
    for (int i = 0; i < depth; i++) {
        const source_step *s = &im->path[i];
        if (s->key == NULL) {
            char index[32];
            snprintf(index, sizeof index, "[%zu]", s->index);
            put_text(b, index);
            continue;
        }
        int plain = s->key[0] != '\0';
        for (const unsigned char *c = (const unsigned char *)s->key; *c && plain; c++) plain = is_name_byte(*c);
        if (plain) {
            if (i > 0) put_char(b, '.');
            put_text(b, s->key);
        } else {
            put_char(b, '[');
            put_json_string(b, s->key, strlen(s->key));
            put_char(b, ']');
        }
    }
}

/* Refuses the machine at the current path: "PATH: message". The message is a
 * format of its own, to keep names safe: %s inserts text as it is (literals), %q a
 * quoted name (put_quoted), %z a size_t. Only the first refusal counts. Returns -1,
 * which every reader passes up. */
static int refuse(importer *im, const char *format, ...) {
    if (im->error != NULL || im->out_of_memory) return -1;
    buffer b = {0};
    put_path(&b, im);
    if (im->depth > 0) put_text(&b, ": ");
    va_list args;
    va_start(args, format);
    for (const char *f = format; *f; f++) {
        if (*f != '%' || f[1] == '\0') {
            put_char(&b, *f);
            continue;
        }
        f++;
        if (*f == 's') {
            put_text(&b, va_arg(args, const char *));
        } else if (*f == 'q') {
            put_quoted(&b, va_arg(args, const char *));
        } else if (*f == 'z') {
            char number[32];
            snprintf(number, sizeof number, "%zu", va_arg(args, size_t));
            put_text(&b, number);
        } else {
            put_char(&b, *f);
        }
    }
    va_end(args);
    if (b.failed) {
        free(b.data);
        im->out_of_memory = 1;
        return -1;
    }
    im->error = b.data;
    size_t steps = (size_t)(im->depth < PATH_MAX_DEPTH ? im->depth : PATH_MAX_DEPTH);
    im->line = im->depth > 0 ? line_of_steps(im->text, im->length, im->path, steps) : 0;
    return -1;
}

/* Notes that the element at the current path was skipped: "PATH: skipped: why",
 * with its line (import_xstate.h). */
static void note_skipped(importer *im, const char *why) {
    if (im->out_of_memory) return;
    if (im->note_count == im->note_capacity) {
        size_t bigger = im->note_capacity ? im->note_capacity * 2 : 4;
        uniflow_import_note *grown = bigger < SIZE_MAX / sizeof *grown ? realloc(im->notes, bigger * sizeof *grown) : NULL;
        if (grown == NULL) {
            im->out_of_memory = 1;
            return;
        }
        im->notes = grown;
        im->note_capacity = bigger;
    }
    buffer b = {0};
    put_path(&b, im);
    put_text(&b, ": skipped: ");
    put_text(&b, why);
    if (b.failed) {
        free(b.data);
        im->out_of_memory = 1;
        return;
    }
    size_t steps = (size_t)(im->depth < PATH_MAX_DEPTH ? im->depth : PATH_MAX_DEPTH);
    im->notes[im->note_count].message = b.data;
    im->notes[im->note_count].line = line_of_steps(im->text, im->length, im->path, steps);
    im->note_count++;
}

static const char *kind_of(const json_t *value) {
    switch (json_typeof(value)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Sets object[key] = value (a new reference, or NULL when making it failed). */
static void set(importer *im, json_t *object, const char *key, json_t *value) {
    if (value == NULL || json_object_set_new(object, key, value) != 0) im->out_of_memory = 1;
}

static void append(importer *im, json_t *array, json_t *value) {
    if (value == NULL || json_array_append_new(array, value) != 0) im->out_of_memory = 1;
}

static void add_index(importer *im, size_t **items, size_t *count, size_t *capacity, size_t value) {
    if (*count == *capacity) {
        size_t bigger = *capacity ? *capacity * 2 : 4;
        size_t *grown = bigger < SIZE_MAX / sizeof **items ? realloc(*items, bigger * sizeof **items) : NULL;
        if (grown == NULL) {
            im->out_of_memory = 1;
            return;
        }
        *items = grown;
        *capacity = bigger;
    }
    (*items)[(*count)++] = value;
}

/* Converts `original` into a name (out: NAME_MAX_BYTES + 1 bytes) of the kind
 * `what` ("state", "event", "context key"); `owners` maps the names given so far
 * to their originals, and two originals that convert alike are refused. The same
 * original twice (an event several states take) is one name. */
static int claim_name(importer *im, json_t *owners, const char *what, const char *original, char *out) {
    int converted = convert_name(original, strlen(original), out);
    if (converted == NAME_EMPTY) return refuse(im, "an empty %s name cannot be converted into a name", what);
    if (converted == NAME_TOO_LONG) return refuse(im, "the %s name %q is longer than 256 bytes", what, original);
    json_t *owner = json_object_get(owners, out);
    if (owner != NULL) {
        if (strcmp(json_string_value(owner), original) == 0) return 0;
        return refuse(im, "the %s names %q and %q both become %q", what, json_string_value(owner), original, out);
    }
    set(im, owners, out, json_string_nocheck(original));
    return im->out_of_memory ? -1 : 0;
}

/* Keys that XState knows and this converter refuses wherever they appear, with
 * the reason; NULL for any other key. */
static const char *refused_key(const char *key) {
    static const char *const reasons[][2] = {
        {"states", "nested states are not supported"},
        {"initial", "nested states are not supported"},
        {"invoke", "invoked actors are not supported"},
        {"entry", "entry actions are not supported"},
        {"exit", "exit actions are not supported"},
        {"always", "eventless transitions (always) are not supported"},
        {"onDone", "done transitions (onDone) are not supported"},
        {"output", "output is not supported"},
        {"history", "history states are not supported"},
        {"tags", "tags are not supported"},
        {"meta", "meta is not supported"},
        {"actions", "actions are not supported"},
    };
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        if (strcmp(reasons[i][0], key) == 0) return reasons[i][1];
    }
    return NULL;
}

/* Keys of the machine that change nothing at run time, skipped with a note, and
 * why; NULL for any other key. TypeScript reads the first three, and XState v4's
 * two flags order and feed actions, which are refused wherever they appear. */
static const char *skipped_key(const char *key) {
    static const char *const reasons[][2] = {
        {"types", "TypeScript's types for the machine; nothing at run time"},
        {"tsTypes", "TypeScript's types for the machine (XState v4 typegen); nothing at run time"},
        {"schema", "TypeScript's types for the machine (XState v4); nothing at run time"},
        {"predictableActionArguments", "an XState v4 flag for the arguments of actions, which do not convert; nothing at run time"},
        {"preserveActionOrder", "an XState v4 flag for the order of actions, which do not convert; nothing at run time"},
    };
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        if (strcmp(reasons[i][0], key) == 0) return reasons[i][1];
    }
    return NULL;
}

/* ------------------------------------------------------------------------------
 * Transitions: `on` and `after` values
 * ------------------------------------------------------------------------------ */

typedef struct transition {
    size_t into;         /* the state it enters */
    int actualize;       /* stays in `from` without re-entering it */
    const char *call;    /* the named guard, or NULL */
    json_t *description; /* borrowed, or NULL */
} transition;

/* A target's text read as XState v5 reads it (its toStatePath): a path of state
 * keys, where an unescaped '.' steps into a child state and a backslash takes the
 * next character as it is ("foo\\.bar" in JSON, foo\.bar decoded, is the one
 * state "foo.bar"; "foo.bar" is the child bar of foo). */
typedef struct target_path {
    char *first;     /* the first key, unescaped */
    size_t parts;    /* how many keys: more than one names a child state */
    int empty_part;  /* a key is empty ("a.", "a..b", "") */
    int dangling;    /* the text ends in a backslash that escapes nothing */
} target_path;

static int read_target_path(importer *im, const char *text, target_path *out) {
    memset(out, 0, sizeof *out);
    out->first = malloc(strlen(text) + 1);
    if (out->first == NULL) {
        im->out_of_memory = 1;
        return -1;
    }
    size_t length = 0, part_length = 0;
    out->parts = 1;
    for (const char *c = text; *c; c++) {
        char byte = *c;
        if (byte == '\\') {
            if (c[1] == '\0') {
                out->dangling = 1;
                break;
            }
            byte = *++c;
        } else if (byte == '.') {
            if (part_length == 0) out->empty_part = 1;
            out->parts++;
            part_length = 0;
            continue;
        }
        if (out->parts == 1) out->first[length++] = byte;
        part_length++;
    }
    if (part_length == 0 && !out->dangling) out->empty_part = 1;
    out->first[length] = '\0';
    return 0;
}

/* `key` with XState's escapes: a backslash before each '.' and '\'. */
static char *escaped_key(const char *key) {
    buffer b = {0};
    put_text(&b, "");
    for (const char *c = key; *c; c++) {
        if (*c == '.' || *c == '\\') put_char(&b, '\\');
        put_char(&b, *c);
    }
    if (b.failed) {
        free(b.data);
        return NULL;
    }
    return b.data;
}

/* Resolves the target text of a transition declared by `from` (ROOT: the machine). */
static int resolve_target(importer *im, const char *text, size_t from, size_t *into) {
    if (text[0] == '#') return refuse(im, "targets by id (%q) are not supported", text);
    const char *path = text;
    if (text[0] == '.') {
        /* On the machine ".S" is its child S, a state (XState v5 requires that form
         * there); in a state it is a child of that state. */
        if (from != ROOT) return refuse(im, "a target in a child state (%q) is not supported (nested states are not)", text);
        path = text + 1;
    }
    target_path target;
    if (read_target_path(im, path, &target) != 0) return -1;
    int status = 0;
    if (target.dangling) {
        status = refuse(im, "the target %q ends in a backslash that escapes nothing", text);
    } else if (target.parts > 1 && target.empty_part) {
        status = refuse(im, "the target %q has an empty state name in its path", text);
    } else if (target.parts > 1) {
        /* foo.bar is the child bar of foo. When the machine has a state whose key
         * is the text as written, say how XState names that state. */
        json_t *literal = json_object_get(im->state_index, path);
        char *escaped = literal != NULL ? escaped_key(path) : NULL;
        if (literal != NULL && escaped == NULL) {
            im->out_of_memory = 1;
            status = -1;
        } else if (literal != NULL) {
            status = refuse(im, "a target in a child state (%q) is not supported (nested states are not); "
                                "to name the state %q, escape its dots: %q",
                            text, path, escaped);
        } else {
            status = refuse(im, "a target in a child state (%q) is not supported (nested states are not)", text);
        }
        free(escaped);
    } else if (target.first[0] == '#') {
        /* "\#a": XState looks a key that starts with '#' up as an id. */
        status = refuse(im, "targets by id (%q) are not supported", text);
    } else {
        json_t *index = json_object_get(im->state_index, target.first);
        if (index == NULL) status = refuse(im, "unknown state %q", text);
        else *into = (size_t)json_integer_value(index);
    }
    free(target.first);
    return status;
}

/* XState's built-in guards (and, or, not, stateIn) are written {"type": "xstate.and",
 * ...}; a guard named "xstate.…" as a string is no host's guard either. */
static int is_builtin_guard(const char *name) { return strncmp(name, "xstate.", 7) == 0; }

static int read_guard(importer *im, json_t *guard, const char **call) {
    if (json_is_string(guard)) {
        if (json_string_length(guard) == 0) return refuse(im, "an empty guard name");
        if (is_builtin_guard(json_string_value(guard))) {
            return refuse(im, "XState's built-in guard %q is not supported", json_string_value(guard));
        }
        *call = json_string_value(guard);
        return 0;
    }
    if (!json_is_object(guard)) return refuse(im, "expected a guard name or {\"type\": name}, got %s", kind_of(guard));
    const char *key;
    json_t *value;
    json_object_foreach(guard, key, value) {
        push_key(im, key);
        if (strcmp(key, "type") == 0) {
            if (!json_is_string(value) || json_string_length(value) == 0) {
                return refuse(im, "expected a guard name, got %s", json_is_string(value) ? "an empty string" : kind_of(value));
            }
            if (is_builtin_guard(json_string_value(value))) {
                return refuse(im, "XState's built-in guard %q is not supported", json_string_value(value));
            }
            *call = json_string_value(value);
        } else if (strcmp(key, "params") == 0) {
            return refuse(im, "guards with parameters are not supported");
        } else {
            return refuse(im, "unknown key: a guard object converts only when it is {\"type\": name}");
        }
        pop(im);
    }
    if (*call == NULL) return refuse(im, "a guard object without a type");
    return 0;
}

/* Reads one XState transition: a target string or a {target, guard, reenter,
 * description} object, declared by `from` (ROOT: the machine) in `on`, or in
 * `after` when `delayed` (where guards are refused: a state timer has no guard). */
static int read_transition(importer *im, json_t *value, size_t from, int delayed, transition *out) {
    memset(out, 0, sizeof *out);
    const char *target = NULL;
    int has_target = 0, reenter = 0;
    if (json_is_string(value)) {
        target = json_string_value(value);
        has_target = 1;
    } else if (json_is_object(value)) {
        const char *key;
        json_t *member;
        json_object_foreach(value, key, member) {
            push_key(im, key);
            if (strcmp(key, "target") == 0) {
                json_t *single = member;
                if (json_is_array(member)) {
                    if (json_array_size(member) != 1) {
                        return refuse(im, json_array_size(member) == 0 ? "an empty list of targets"
                                          : "several targets are not supported (they need parallel states)");
                    }
                    single = json_array_get(member, 0);
                    push_index(im, 0);
                }
                if (!json_is_string(single)) return refuse(im, "expected a state name, got %s", kind_of(single));
                if (single != member) pop(im);
                target = json_string_value(single);
                has_target = 1;
            } else if (strcmp(key, "guard") == 0) {
                if (delayed) return refuse(im, "guarded delayed transitions are not supported");
                if (read_guard(im, member, &out->call) != 0) return -1;
            } else if (strcmp(key, "reenter") == 0) {
                if (!json_is_boolean(member)) return refuse(im, "expected true or false, got %s", kind_of(member));
                reenter = json_is_true(member);
            } else if (strcmp(key, "description") == 0) {
                if (!json_is_string(member)) return refuse(im, "expected a string, got %s", kind_of(member));
                out->description = member;
            } else if (strcmp(key, "actions") == 0) {
                return refuse(im, "actions are not supported");
            } else {
                return refuse(im, "unknown key: a transition converts only target, guard, reenter and description");
            }
            pop(im);
        }
    } else {
        return refuse(im, "expected a state name or a transition object, got %s", kind_of(value));
    }

    if (!has_target) {
        /* XState takes it without leaving the state: an actualization of the
         * declaring state. The machine itself has no one state to stay in. */
        if (from == ROOT) return refuse(im, "a transition without a target is not supported on the machine");
        out->into = from;
        out->actualize = 1;
        return 0;
    }
    if (json_is_object(value)) push_key(im, "target");
    int resolved = resolve_target(im, target, from, &out->into);
    if (json_is_object(value)) pop(im);
    if (resolved != 0) return -1;
    /* XState v5 does not re-enter a state that targets itself unless `reenter`
     * says so; libuniflow's transition into the current state does (timers
     * restart), its actualization does not. */
    out->actualize = from != ROOT && out->into == from && !reenter;
    return 0;
}

/* A converted `on` target: the state's name, or an object when it has more. */
static json_t *target_json(importer *im, const transition *t) {
    const char *name = im->states[t->into].name;
    if (t->call == NULL && t->description == NULL && !t->actualize) return json_string(name);
    json_t *object = json_object();
    if (object == NULL) return NULL;
    set(im, object, "into", json_string(name));
    if (t->call != NULL) set(im, object, "call", json_string_nocheck(t->call));
    if (t->description != NULL) set(im, object, "spec", json_incref(t->description));
    if (t->actualize) set(im, object, "actualize", json_true());
    return object;
}

static void note_pair(importer *im, size_t from, const transition *t) {
    if (t->actualize) return; /* an actualization is never restricted by `transitions` */
    if (from == ROOT) {
        add_index(im, &im->root_targets, &im->root_count, &im->root_capacity, t->into);
    } else {
        state_info *s = &im->states[from];
        add_index(im, &s->pairs, &s->pair_count, &s->pair_capacity, t->into);
    }
}

/* An `on` object, declared by `from` (ROOT: the machine). */
static int read_events(importer *im, json_t *on, size_t from, json_t **out) {
    if (!json_is_object(on)) return refuse(im, "expected an object of events, got %s", kind_of(on));
    json_t *events = json_object();
    if (events == NULL) {
        im->out_of_memory = 1;
        return -1;
    }
    *out = events;
    const char *event;
    json_t *value;
    json_object_foreach(on, event, value) {
        push_key(im, event);
        if (event[0] == '\0') return refuse(im, "an empty event name is not an event (XState writes eventless transitions as always)");
        if (strchr(event, '*') != NULL) return refuse(im, "wildcard events (%q) are not supported", event);
        if (strncmp(event, "xstate.", 7) == 0) return refuse(im, "XState's own events (%q) are not supported", event);
        char name[NAME_MAX_BYTES + 1];
        if (claim_name(im, im->event_owners, "event", event, name) != 0) return -1;
        transition t;
        if (json_is_array(value)) {
            if (json_array_size(value) == 0) return refuse(im, "an empty list of transitions");
            json_t *targets = json_array();
            set(im, events, name, targets);
            if (im->out_of_memory) return -1;
            size_t i;
            json_t *item;
            json_array_foreach(value, i, item) {
                push_index(im, i);
                if (read_transition(im, item, from, 0, &t) != 0) return -1;
                append(im, targets, target_json(im, &t));
                note_pair(im, from, &t);
                pop(im);
            }
        } else {
            if (read_transition(im, value, from, 0, &t) != 0) return -1;
            set(im, events, name, target_json(im, &t));
            note_pair(im, from, &t);
        }
        if (im->out_of_memory) return -1;
        pop(im);
    }
    return 0;
}

/* The payload a state timer's action carries: the feature's current payload, so
 * that the context survives the delayed transition as it does in XState (an
 * action without a payload would reset every field to its default). */
static json_t *current_payload(importer *im) {
    buffer var = {0};
    put_text(&var, "model.");
    put_text(&var, im->feature);
    put_text(&var, ".payload");
    json_t *payload = var.failed ? NULL : json_pack("{s:{s:s}}", "$", "var", var.data);
    free(var.data);
    if (payload == NULL) im->out_of_memory = 1;
    return payload;
}

/* A delay key: a whole number of milliseconds written in decimal digits. */
static int read_delay(importer *im, const char *key, uint64_t *ms) {
    if (key[0] == '\0') return refuse(im, "an empty delay");
    uint64_t value = 0;
    for (const char *c = key; *c; c++) {
        if (*c < '0' || *c > '9') {
            char *end;
            (void)strtod(key, &end);
            if (*end == '\0' && !(key[0] == '0' && (key[1] == 'x' || key[1] == 'X'))) {
                return refuse(im, "a delay must be a whole number of milliseconds, not %q", key);
            }
            return refuse(im, "named delays (%q) are not supported: write the delay in milliseconds", key);
        }
        value = value * 10 + (uint64_t)(*c - '0');
        if (value > DELAY_MAX_MS) return refuse(im, "a delay of more than 2^53 ms is not supported");
    }
    *ms = value;
    return 0;
}

/* An `after` object of state `from`: each delay becomes a state timer whose action
 * leaves `from` (so it can only act while the feature is still there). */
static int read_delays(importer *im, json_t *after, size_t from) {
    if (!json_is_object(after)) return refuse(im, "expected an object of delays, got %s", kind_of(after));
    state_info *s = &im->states[from];
    json_t *timers = json_array();
    json_t *seen = json_object(); /* "ms" -> the delay key that gave it */
    s->after = timers;
    if (timers == NULL || seen == NULL) {
        json_decref(seen);
        im->out_of_memory = 1;
        return -1;
    }
    int status = 0;
    const char *key;
    json_t *value;
    json_object_foreach(after, key, value) {
        push_key(im, key);
        uint64_t ms = 0;
        if ((status = read_delay(im, key, &ms)) != 0) break;
        char number[32];
        snprintf(number, sizeof number, "%llu", (unsigned long long)ms);
        json_t *twin = json_object_get(seen, number);
        if (twin != NULL) {
            status = refuse(im, "%q and %q are the same delay", json_string_value(twin), key);
            break;
        }
        set(im, seen, number, json_string_nocheck(key));

        transition t;
        if (json_is_array(value)) {
            /* XState's list of guarded delayed transitions: no guard converts, so
             * the first one is always taken and the rest could never be. */
            if (json_array_size(value) == 0) {
                status = refuse(im, "an empty list of transitions");
                break;
            }
            push_index(im, 0);
            status = read_transition(im, json_array_get(value, 0), from, 1, &t);
            pop(im);
            if (status == 0 && json_array_size(value) > 1) {
                push_index(im, 1);
                status = refuse(im, "unreachable: the delayed transition before it has no guard");
            }
            if (status != 0) break;
        } else if ((status = read_transition(im, value, from, 1, &t)) != 0) {
            break;
        }
        note_pair(im, from, &t);

        /* Built inside out: a value is only used while its owner holds it. */
        json_t *action = json_object();
        json_t *submit = json_array();
        json_t *timer = json_object();
        if (action == NULL || submit == NULL || timer == NULL) {
            json_decref(action);
            json_decref(submit);
            json_decref(timer);
            im->out_of_memory = 1;
            break;
        }
        if (t.actualize) {
            set(im, action, "kind", json_string("actualize"));
            set(im, action, "feature", json_string(im->feature));
            set(im, action, "in", json_string(s->name));
            set(im, action, "payload", im->has_fields ? current_payload(im) : json_object());
        } else {
            set(im, action, "kind", json_string("transition"));
            set(im, action, "feature", json_string(im->feature));
            set(im, action, "from", json_string(s->name));
            set(im, action, "into", json_string(im->states[t.into].name));
            if (im->has_fields) set(im, action, "payload", current_payload(im));
        }
        append(im, submit, action);
        set(im, timer, "ms", json_integer((json_int_t)ms));
        if (t.description != NULL) set(im, timer, "scenario", json_incref(t.description));
        set(im, timer, "submit", submit);
        append(im, timers, timer);
        if (im->out_of_memory) break;
        pop(im);
    }
    json_decref(seen);
    return status != 0 || im->out_of_memory ? -1 : 0;
}

/* ------------------------------------------------------------------------------
 * States, context, the machine
 * ------------------------------------------------------------------------------ */

static int read_state(importer *im, size_t index, json_t *value) {
    state_info *s = &im->states[index];
    if (!json_is_object(value)) return refuse(im, "expected a state object, got %s", kind_of(value));
    const char *first_transitions = NULL; /* "on" or "after", whichever came first */
    const char *member_key;
    json_t *member;
    json_object_foreach(value, member_key, member) {
        push_key(im, member_key);
        const char *reason = refused_key(member_key);
        if (strcmp(member_key, "description") == 0) {
            if (!json_is_string(member)) return refuse(im, "expected a string, got %s", kind_of(member));
            s->description = member;
        } else if (strcmp(member_key, "on") == 0) {
            if (read_events(im, member, index, &s->on) != 0) return -1;
            if (first_transitions == NULL) first_transitions = "on";
        } else if (strcmp(member_key, "after") == 0) {
            if (read_delays(im, member, index) != 0) return -1;
            if (first_transitions == NULL) first_transitions = "after";
        } else if (strcmp(member_key, "type") == 0) {
            const char *type = json_string_value(member);
            if (type == NULL) return refuse(im, "expected a state type, got %s", kind_of(member));
            if (strcmp(type, "final") == 0) s->final = 1;
            else if (strcmp(type, "parallel") == 0) return refuse(im, "parallel states are not supported");
            else if (strcmp(type, "compound") == 0) return refuse(im, "nested states are not supported");
            else if (strcmp(type, "history") == 0) return refuse(im, "history states are not supported");
            else if (strcmp(type, "atomic") != 0) return refuse(im, "unknown state type %q", type);
        } else if (strcmp(member_key, "id") == 0) {
            return refuse(im, "state ids are not supported (nor are the '#id' targets they serve)");
        } else if (strcmp(member_key, "target") == 0) {
            return refuse(im, "history states are not supported");
        } else if (strcmp(member_key, "initial") == 0 && json_object_get(value, "states") != NULL) {
            /* Name the nested states themselves, not their initial one. */
            pop(im);
            push_key(im, "states");
            return refuse(im, "%s", reason);
        } else if (reason != NULL) {
            return refuse(im, "%s", reason);
        } else {
            return refuse(im, "unknown key: a state converts only description, type, on and after");
        }
        pop(im);
    }
    if (s->final && first_transitions != NULL) {
        push_key(im, first_transitions);
        return refuse(im, "a final state has no outgoing transitions");
    }
    return 0;
}

/* The levels of a JSON value, up to `limit` + 1 (a scalar is 0, [] is 1). */
static size_t depth_of(json_t *value, size_t limit) {
    size_t deepest = 0;
    if (limit == 0) return json_is_object(value) || json_is_array(value) ? 1 : 0;
    if (json_is_object(value)) {
        const char *key;
        json_t *member;
        json_object_foreach(value, key, member) {
            size_t d = depth_of(member, limit - 1);
            if (d > deepest) deepest = d;
            if (deepest >= limit) break;
        }
        return deepest + 1;
    }
    if (json_is_array(value)) {
        size_t i;
        json_t *item;
        json_array_foreach(value, i, item) {
            size_t d = depth_of(item, limit - 1);
            if (d > deepest) deepest = d;
            if (deepest >= limit) break;
        }
        return deepest + 1;
    }
    return 0;
}

/* `context`: each key a field of type any whose default is its initial value. */
static int read_context(importer *im, json_t *context) {
    if (!json_is_object(context)) return refuse(im, "expected an object, got %s", kind_of(context));
    const char *key;
    json_t *value;
    json_object_foreach(context, key, value) {
        push_key(im, key);
        char name[NAME_MAX_BYTES + 1];
        if (claim_name(im, im->field_owners, "context key", key, name) != 0) return -1;
        if (depth_of(value, CONTEXT_MAX_DEPTH) > CONTEXT_MAX_DEPTH) {
            return refuse(im, "a value nested deeper than a definition may hold (%z levels here)", (size_t)CONTEXT_MAX_DEPTH);
        }
        set(im, im->fields, name, json_pack("{s:s,s:O}", "type", "any", "default", value));
        if (im->out_of_memory) return -1;
        pop(im);
    }
    return 0;
}

static int read_machine(importer *im) {
    const char *key;
    json_t *value;
    json_object_foreach(im->machine, key, value) {
        push_key(im, key);
        const char *reason = refused_key(key);
        const char *skipped = skipped_key(key);
        if (skipped != NULL) {
            note_skipped(im, skipped);
            if (im->out_of_memory) return -1;
        } else if (strcmp(key, "id") == 0) {
            if (!json_is_string(value)) return refuse(im, "expected a string, got %s", kind_of(value));
        } else if (strcmp(key, "description") == 0) {
            if (!json_is_string(value)) return refuse(im, "expected a string, got %s", kind_of(value));
            im->description = value;
        } else if (strcmp(key, "initial") == 0) {
            if (!json_is_string(value)) return refuse(im, "expected a state name, got %s", kind_of(value));
            json_t *index = json_object_get(im->state_index, json_string_value(value));
            if (index == NULL) return refuse(im, "unknown state %q", json_string_value(value));
            im->initial = (size_t)json_integer_value(index);
            im->has_initial = 1;
        } else if (strcmp(key, "states") == 0) {
            const char *state;
            json_t *definition;
            size_t i = 0;
            json_object_foreach(value, state, definition) {
                push_key(im, state);
                if (read_state(im, i++, definition) != 0) return -1;
                pop(im);
            }
        } else if (strcmp(key, "on") == 0) {
            if (read_events(im, value, ROOT, &im->on) != 0) return -1;
        } else if (strcmp(key, "context") == 0) {
            if (read_context(im, value) != 0) return -1;
        } else if (strcmp(key, "type") == 0) {
            const char *type = json_string_value(value);
            if (type == NULL) return refuse(im, "expected a state type, got %s", kind_of(value));
            if (strcmp(type, "parallel") == 0) return refuse(im, "parallel states are not supported");
            if (strcmp(type, "compound") != 0) return refuse(im, "a machine with states is compound, not %q", type);
        } else if (strcmp(key, "after") == 0) {
            return refuse(im, "delayed transitions of the machine itself are not supported (only a state's)");
        } else if (reason != NULL) {
            return refuse(im, "%s", reason);
        } else {
            return refuse(im, "unknown key: a machine converts only id, description, context, initial, states and on");
        }
        pop(im);
    }
    if (!im->has_initial) {
        /* The path of the missing key, as every other refusal has one; its line is
         * where the machine that lacks it starts (the walk finds no `initial`). */
        push_key(im, "initial");
        return refuse(im, "missing key: the machine needs an initial state");
    }
    return 0;
}

/* The feature's name: `feature`, else the machine's id, else the file's base name
 * without ".json", each converted as every other name is. */
static int choose_feature_name(importer *im, const char *feature, const char *file_name) {
    char name[NAME_MAX_BYTES + 1];
    if (feature != NULL) {
        int converted = convert_name(feature, strlen(feature), name);
        if (converted == NAME_EMPTY) return refuse(im, "--feature: an empty name gives no feature name");
        if (converted == NAME_TOO_LONG) return refuse(im, "--feature: %q is longer than 256 bytes", feature);
        im->feature = copy_text(name);
    } else if (json_is_string(json_object_get(im->machine, "id"))) {
        json_t *id = json_object_get(im->machine, "id");
        push_key(im, "id");
        int converted = convert_name(json_string_value(id), json_string_length(id), name);
        if (converted == NAME_EMPTY) return refuse(im, "an empty id gives no feature name (use --feature)");
        if (converted == NAME_TOO_LONG) return refuse(im, "the id %q is longer than 256 bytes", json_string_value(id));
        pop(im);
        im->feature = copy_text(name);
    } else {
        const char *base = file_name ? strrchr(file_name, '/') : NULL;
        base = base ? base + 1 : file_name;
        size_t length = base ? strlen(base) : 0;
        if (length >= 5 && strcmp(base + length - 5, ".json") == 0) length -= 5;
        if (base == NULL || convert_name(base, length, name) != NAME_OK) {
            return refuse(im, "the machine has no id and no file name gives the feature a name (use --feature)");
        }
        im->feature = copy_text(name);
    }
    if (im->feature == NULL) im->out_of_memory = 1;
    return im->out_of_memory ? -1 : 0;
}

/* ------------------------------------------------------------------------------
 * The definition
 * ------------------------------------------------------------------------------ */

static int compare_indices(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* transitions: for each state, in declaration order, the states its own `on` and
 * `after` lead to, and those the machine's `on` leads to unless it is final (a
 * final state takes no event: XState's machine is done there). */
static json_t *transitions_json(importer *im) {
    json_t *transitions = json_object();
    if (transitions == NULL) return NULL;
    for (size_t i = 0; i < im->state_count && !im->out_of_memory; i++) {
        state_info *s = &im->states[i];
        if (!s->final) {
            for (size_t j = 0; j < im->root_count; j++) {
                add_index(im, &s->pairs, &s->pair_count, &s->pair_capacity, im->root_targets[j]);
            }
        }
        if (s->pair_count > 1) qsort(s->pairs, s->pair_count, sizeof *s->pairs, compare_indices);
        json_t *into = json_array();
        set(im, transitions, s->name, into);
        for (size_t j = 0; j < s->pair_count && !im->out_of_memory; j++) {
            if (j == 0 || s->pairs[j] != s->pairs[j - 1]) append(im, into, json_string(im->states[s->pairs[j]].name));
        }
    }
    return transitions;
}

static json_t *definition_json(importer *im) {
    json_t *definition = json_object();
    json_t *states = json_object();
    if (definition == NULL || states == NULL) {
        json_decref(definition);
        json_decref(states);
        return NULL;
    }
    set(im, definition, "feature", json_string(im->feature));
    if (im->description != NULL) set(im, definition, "description", json_incref(im->description));
    set(im, definition, "states", states);
    for (size_t i = 0; i < im->state_count; i++) {
        state_info *s = &im->states[i];
        json_t *state = json_object();
        set(im, states, s->name, state);
        if (im->out_of_memory) break;
        if (s->description != NULL) set(im, state, "description", json_incref(s->description));
        if (im->has_fields) set(im, state, "fields", json_incref(im->fields));
        if (s->on != NULL && json_object_size(s->on) > 0) set(im, state, "on", json_incref(s->on));
        if (s->after != NULL && json_array_size(s->after) > 0) set(im, state, "after", json_incref(s->after));
    }
    set(im, definition, "initial", json_pack("[s]", im->states[im->initial].name));
    set(im, definition, "transitions", transitions_json(im));
    if (im->on != NULL && json_object_size(im->on) > 0) set(im, definition, "on", json_incref(im->on));
    return definition;
}

/* The shortest "%.*g" that reads back as the same double; ".0" marks a number that
 * was not an integer in the input (jansson's reals), as jansson itself writes it. */
static void put_real(buffer *b, double value) {
    char text[40];
    if (value > -1e15 && value < 1e15 && (double)(long long)value == value) {
        /* %g would write 100.0 as 1e+02. */
        snprintf(text, sizeof text, "%.1f", value);
        put_text(b, text);
        return;
    }
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*g", precision, value);
        if (strtod(text, NULL) == value) break;
    }
    put_text(b, text);
    if (strpbrk(text, ".eE") == NULL) put_text(b, ".0");
}

static int is_scalar(const json_t *value) { return !json_is_object(value) && !json_is_array(value); }

/* Two-space indented JSON: one member per line; an array of scalars on one line.
 * Recursion is bounded: the definition's own levels plus a context value's, which
 * read_context has limited. */
static void put_json(buffer *b, json_t *value, size_t indent) {
    switch (json_typeof(value)) {
    case JSON_OBJECT: {
        if (json_object_size(value) == 0) {
            put_text(b, "{}");
            return;
        }
        put_char(b, '{');
        const char *key;
        json_t *member;
        size_t n = 0;
        json_object_foreach(value, key, member) {
            put_text(b, n++ ? ",\n" : "\n");
            for (size_t i = 0; i < indent + 2; i++) put_char(b, ' ');
            put_json_string(b, key, strlen(key));
            put_text(b, ": ");
            put_json(b, member, indent + 2);
        }
        put_char(b, '\n');
        for (size_t i = 0; i < indent; i++) put_char(b, ' ');
        put_char(b, '}');
        return;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *item;
        int flat = 1;
        json_array_foreach(value, i, item) flat = flat && is_scalar(item);
        if (json_array_size(value) == 0) {
            put_text(b, "[]");
            return;
        }
        put_char(b, '[');
        json_array_foreach(value, i, item) {
            if (flat) {
                if (i > 0) put_text(b, ", ");
            } else {
                put_text(b, i > 0 ? ",\n" : "\n");
                for (size_t j = 0; j < indent + 2; j++) put_char(b, ' ');
            }
            put_json(b, item, indent + 2);
        }
        if (!flat) {
            put_char(b, '\n');
            for (size_t j = 0; j < indent; j++) put_char(b, ' ');
        }
        put_char(b, ']');
        return;
    }
    case JSON_STRING:
        put_json_string(b, json_string_value(value), json_string_length(value));
        return;
    case JSON_INTEGER: {
        char text[32];
        snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
        put_text(b, text);
        return;
    }
    case JSON_REAL:
        put_real(b, json_real_value(value));
        return;
    case JSON_TRUE: put_text(b, "true"); return;
    case JSON_FALSE: put_text(b, "false"); return;
    default: put_text(b, "null"); return;
    }
}

/* ------------------------------------------------------------------------------
 * The entry point
 * ------------------------------------------------------------------------------ */

void uniflow_import_free_notes(uniflow_import_note *notes, size_t count) {
    for (size_t i = 0; i < count; i++) free(notes[i].message);
    free(notes);
}

static void release(importer *im) {
    for (size_t i = 0; i < im->state_count; i++) {
        free(im->states[i].name);
        free(im->states[i].pairs);
        json_decref(im->states[i].on);
        json_decref(im->states[i].after);
    }
    free(im->states);
    free(im->root_targets);
    free(im->feature);
    json_decref(im->on);
    json_decref(im->fields);
    json_decref(im->state_index);
    json_decref(im->state_owners);
    json_decref(im->event_owners);
    json_decref(im->field_owners);
    json_decref(im->machine);
}

static int convert(importer *im, const char *feature, const char *file_name, char **definition_text) {
    json_error_t error;
    /* Duplicate keys are refused, as libuniflow refuses them: which of the two
     * XState would keep is up to the JavaScript that read it. */
    im->machine = json_loadb(im->text, im->length, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &error);
    if (im->machine == NULL) {
        buffer b = {0};
        char where[64];
        snprintf(where, sizeof where, "line %d, column %d: ", error.line, error.column);
        put_text(&b, where);
        /* jansson quotes the text near the error: keep the message on one line. */
        for (const unsigned char *c = (const unsigned char *)error.text; *c; c++) {
            if (*c < 0x20 || *c == 0x7f) {
                char code[8];
                snprintf(code, sizeof code, "\\u%04x", *c);
                put_text(&b, code);
            } else {
                put_char(&b, (char)*c);
            }
        }
        if (b.failed) {
            free(b.data);
            im->out_of_memory = 1;
            return -1;
        }
        im->error = b.data;
        return -1;
    }
    if (!json_is_object(im->machine)) {
        return refuse(im, "expected a JSON object (an XState machine config), got %s", kind_of(im->machine));
    }
    json_t *states = json_object_get(im->machine, "states");
    if (states == NULL) {
        /* Named by its path, with the line where the machine starts, as 'initial' is. */
        push_key(im, "states");
        return refuse(im, "missing key: uniflow import converts machines with states");
    }
    push_key(im, "states");
    if (!json_is_object(states)) return refuse(im, "expected an object of states, got %s", kind_of(states));
    if (json_object_size(states) == 0) return refuse(im, "a machine needs at least one state");
    pop(im);

    im->state_index = json_object();
    im->state_owners = json_object();
    im->event_owners = json_object();
    im->field_owners = json_object();
    im->fields = json_object();
    im->state_count = json_object_size(states);
    im->states = calloc(im->state_count, sizeof *im->states);
    if (im->state_index == NULL || im->state_owners == NULL || im->event_owners == NULL ||
        im->field_owners == NULL || im->fields == NULL || im->states == NULL) {
        if (im->states == NULL) im->state_count = 0;
        im->out_of_memory = 1;
        return -1;
    }
    /* State names first: every target needs them, wherever the state is declared. */
    const char *key;
    json_t *value;
    size_t i = 0;
    push_key(im, "states");
    json_object_foreach(states, key, value) {
        char name[NAME_MAX_BYTES + 1];
        push_key(im, key);
        if (claim_name(im, im->state_owners, "state", key, name) != 0) return -1;
        pop(im);
        im->states[i].key = key;
        im->states[i].name = copy_text(name);
        if (im->states[i].name == NULL) im->out_of_memory = 1;
        set(im, im->state_index, key, json_integer((json_int_t)i));
        if (im->out_of_memory) return -1;
        i++;
    }
    pop(im);
    if (choose_feature_name(im, feature, file_name) != 0) return -1;
    /* A timer's action carries the payload when there are fields, and the walk
     * may meet `after` before `context` (which it refuses if it is not valid). */
    json_t *context = json_object_get(im->machine, "context");
    im->has_fields = json_is_object(context) && json_object_size(context) > 0;
    if (read_machine(im) != 0) return -1;

    json_t *definition = definition_json(im);
    if (definition == NULL || im->out_of_memory) {
        json_decref(definition);
        im->out_of_memory = 1;
        return -1;
    }
    buffer b = {0};
    put_json(&b, definition, 0);
    put_char(&b, '\n');
    json_decref(definition);
    if (b.failed) {
        free(b.data);
        im->out_of_memory = 1;
        return -1;
    }
    *definition_text = b.data;
    return 0;
}

/* Whether this converter refused the machine for something a statechart has
 * (import_xstate_chart.c converts those); its other refusals stand as they are. */
static int is_statechart_refusal(const char *error) {
    static const char *const reasons[] = {
        "nested states are not supported", "entry actions are not supported", "exit actions are not supported",
        "eventless transitions (always) are not supported", "done transitions (onDone) are not supported",
        "output is not supported", "history states are not supported", "tags are not supported",
        "meta is not supported", "actions are not supported", "parallel states are not supported",
        "a target in a child state", "targets by id", "state ids are not supported",
        "several targets are not supported", "guards with parameters are not supported", "built-in guard",
        "a transition without a target is not supported", "XState's own events",
        "delayed transitions of the machine itself are not supported", "guarded delayed transitions are not supported",
        "invoked actors are not supported",
    };
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        if (strstr(error, reasons[i]) != NULL) return 1;
    }
    return 0;
}

int uniflow_import_xstate(const char *text, size_t length, const char *feature,
                          const char *file_name, char **out_definition, char **out_error,
                          unsigned long *out_line, uniflow_import_note **out_notes,
                          size_t *out_note_count) {
    importer im;
    memset(&im, 0, sizeof im);
    im.text = text != NULL ? text : "";
    im.length = text != NULL ? length : 0;
    char *definition = NULL;
    int status = convert(&im, feature, file_name, &definition) == 0 ? UNIFLOW_IMPORT_OK : UNIFLOW_IMPORT_REFUSED;
    /* What this flat converter refuses as "not supported" is a statechart's: the
     * statechart converter (import_xstate_chart.c) takes the machine then, and
     * its refusal, if any, is the one reported. Flat machines never get there. */
    if (status != UNIFLOW_IMPORT_OK && im.error != NULL && is_statechart_refusal(im.error)) {
        char *chart = NULL, *chart_error = NULL;
        if (uniflow_import_xstate_chart(im.text, im.length, feature, file_name, &chart, &chart_error) == UNIFLOW_IMPORT_CHART_OK) {
            status = UNIFLOW_IMPORT_OK;
            definition = chart;
            free(im.error);
            im.error = NULL;
            im.line = 0;
        } else {
            free(im.error);
            im.error = chart_error;
            im.line = 0;
        }
    }
    if (status != UNIFLOW_IMPORT_OK && im.error == NULL) {
        /* Only an allocation fails without a message (and NULL stays if even this one does). */
        im.error = copy_text("out of memory");
        im.line = 0;
    }
    /* On success nothing was refused: im.error is NULL and im.line 0. The notes
     * go with a definition only: a refused machine has nothing skipped. */
    if (status != UNIFLOW_IMPORT_OK) {
        uniflow_import_free_notes(im.notes, im.note_count);
        im.notes = NULL;
        im.note_count = 0;
    }
    if (out_definition != NULL) *out_definition = definition;
    else free(definition);
    if (out_error != NULL) *out_error = im.error;
    else free(im.error);
    if (out_line != NULL) *out_line = im.line;
    if (out_notes != NULL) *out_notes = im.notes;
    else uniflow_import_free_notes(im.notes, im.note_count);
    if (out_note_count != NULL) *out_note_count = im.note_count;
    release(&im);
    return status;
}
