/*
 * import_xstate_chart.c — converts an XState v5 machine that the flat converter
 * (import_xstate.c) refuses into a statechart feature (docs/statecharts.md):
 * nested and parallel states, history and final states, `entry`/`exit`,
 * transition `actions`, `always`, `onDone`, `reenter`, multiple targets,
 * `#id` and `.child` targets, guards with `params`, and the machine's own
 * `entry`/`exit`/`always`/`on`.
 *
 * Named actions become `call` effects and named guards `call` guards: the host
 * supplies both by name, as XState's `setup({actions, guards})` does. What
 * needs code or a service (`after`, `invoke`, inline functions, wildcards) is
 * refused with the dotted path of the first such element: no silent
 * approximation, as in the flat converter.
 *
 * Shape: jansson reads the machine; a pre-pass gives every state its path and
 * records `id`s (a target may name a state declared after it); the walk builds
 * the definition as jansson values in a fixed key order, written with two-space
 * indentation.
 */
#include "import_xstate_chart.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STATES 4096

typedef struct chart_state {
    char *xstate_path;   /* "a.b" with the machine's keys ("" for the root) */
    char *path;          /* "a.b" with converted names ("" for the root) */
    json_t *config;      /* borrowed */
    int parent;
} chart_state;

typedef struct chart_importer {
    json_t *machine;
    const char *machine_id;
    chart_state states[MAX_STATES + 1];
    int count;
    json_t *ids;         /* id -> state index */
    /* Converted event name -> the machine's: events are the feature's, so two
     * that convert to one name would become one event. */
    json_t *events;
    char *error;
    int failed;
} chart_importer;

/* strdup and strndup are POSIX, not C99. */
static char *copy_n(const char *text, size_t n) {
    char *copy = malloc(n + 1);
    if (copy == NULL) return NULL;
    memcpy(copy, text, n);
    copy[n] = '\0';
    return copy;
}

static char *copy_text(const char *text) { return copy_n(text, strlen(text)); }

static int refuse(chart_importer *im, const char *path, const char *format, ...) {
    if (im->failed) return -1;
    im->failed = 1;
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    size_t n = strlen(path) + strlen(message) + 3;
    char *raw = malloc(n);
    if (raw == NULL) return -1;
    snprintf(raw, n, "%s%s%s", path, path[0] ? ": " : "", message);
    /* One line whatever the machine's keys hold: control bytes become \u00XX. */
    im->error = malloc(strlen(raw) * 6 + 1);
    if (im->error != NULL) {
        char *out = im->error;
        for (const unsigned char *c = (const unsigned char *)raw; *c; c++) {
            if (*c < 0x20) out += sprintf(out, "\\u%04x", *c);
            else *out++ = (char)*c;
        }
        *out = '\0';
    }
    free(raw);
    return -1;
}

/* A named action or guard converts only as {type, params}: any other key
 * (XState's inline options) needs code. 0 when refused. */
static int only_type_and_params(chart_importer *im, const char *where, json_t *object, const char *what) {
    const char *key;
    json_t *value;
    json_object_foreach(object, key, value) {
        if (strcmp(key, "type") != 0 && strcmp(key, "params") != 0) {
            refuse(im, where, "%s with key '%s' needs code", what, key);
            return 0;
        }
    }
    return 1;
}

/* A name as libuniflow's name pattern wants it: every other character becomes
 * `_`, and a leading digit gets a `_` before it (as the flat converter does). */
static char *convert_name(const char *name) {
    size_t n = strlen(name);
    char *out = malloc(n + 2);
    if (out == NULL) return NULL;
    size_t j = 0;
    if (n == 0 || (name[0] >= '0' && name[0] <= '9')) out[j++] = '_';
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out[j++] = ok ? c : '_';
    }
    out[j] = '\0';
    return out;
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *out = malloc(n);
    if (out == NULL) return NULL;
    if (a[0] == '\0') snprintf(out, n, "%s", b);
    else snprintf(out, n, "%s.%s", a, b);
    return out;
}

/* ---- the pre-pass: every state's path, and ids ---------------------------- */

static int index_states(chart_importer *im, json_t *config, int parent, const char *xpath, const char *path,
                        const char *where) {
    if (im->count >= MAX_STATES + 1) return refuse(im, where, "more than %d states", MAX_STATES);
    int self = im->count++;
    im->states[self].xstate_path = copy_text(xpath);
    im->states[self].path = copy_text(path);
    im->states[self].config = config;
    im->states[self].parent = parent;
    json_t *id = json_object_get(config, "id");
    if (json_is_string(id) && self > 0) json_object_set_new(im->ids, json_string_value(id), json_integer(self));
    json_t *states = json_object_get(config, "states");
    if (states == NULL) return 0;
    if (!json_is_object(states)) return refuse(im, where, "states: expected an object");
    const char *key;
    json_t *child;
    json_object_foreach(states, key, child) {
        if (!json_is_object(child)) return refuse(im, where, "states.%s: expected an object", key);
        char *name = convert_name(key);
        char *child_xpath = join(xpath, key);
        char *child_path = join(path, name);
        size_t wn = strlen(where) + strlen(key) + 16;
        char *child_where = malloc(wn);
        snprintf(child_where, wn, "%s%sstates.%s", where, where[0] ? "." : "", key);
        int status = index_states(im, child, self, child_xpath, child_path, child_where);
        free(name);
        free(child_xpath);
        free(child_path);
        free(child_where);
        if (status < 0) return -1;
    }
    return 0;
}

static int child_named(chart_importer *im, int parent, const char *key) {
    for (int i = parent + 1; i < im->count; i++) {
        if (im->states[i].parent != parent) continue;
        const char *xp = im->states[i].xstate_path;
        const char *last = strrchr(xp, '.');
        if (strcmp(last ? last + 1 : xp, key) == 0) return i;
    }
    return -1;
}

/* Follows a dotted path of keys down from `node`; -1 when a key is missing. */
static int descend(chart_importer *im, int node, const char *path) {
    char *copy = copy_text(path);
    int current = node;
    for (char *part = strtok(copy, "."); part != NULL && current >= 0; part = strtok(NULL, ".")) {
        current = child_named(im, current, part);
    }
    free(copy);
    return current;
}

/* XState's target resolution: `#id.rest`, `.child.path` (below the source),
 * else a sibling path (from the source's parent; from the root for the machine's own). */
static int resolve_target(chart_importer *im, int source, const char *target) {
    if (target[0] == '#') {
        const char *rest = target + 1;
        const char *dot = strchr(rest, '.');
        size_t n = dot ? (size_t)(dot - rest) : strlen(rest);
        char *id = copy_n(rest, n);
        int node = -1;
        if (strcmp(id, im->machine_id) == 0) node = 0;
        json_t *known = json_object_get(im->ids, id);
        if (known != NULL) node = (int)json_integer_value(known);
        free(id);
        if (node < 0) return -1;
        return dot ? descend(im, node, dot + 1) : node;
    }
    if (target[0] == '.') return descend(im, source, target + 1);
    int from = source == 0 ? 0 : im->states[source].parent;
    return descend(im, from, target);
}

/* ---- the walk ------------------------------------------------------------- */

/* Whether `a` is `b` or one of its ancestors. */
static int is_ancestor_or_self(chart_importer *im, int a, int b) {
    for (int n = b; n >= 0; n = im->states[n].parent) {
        if (n == a) return 1;
    }
    return 0;
}

/* Two targets of one transition can be entered together only from different
 * regions of a parallel state (their innermost common ancestor). */
static int can_enter_together(chart_importer *im, int a, int b) {
    if (is_ancestor_or_self(im, a, b) || is_ancestor_or_self(im, b, a)) return 0;
    int p = im->states[a].parent;
    while (p >= 0 && !is_ancestor_or_self(im, p, b)) p = im->states[p].parent;
    if (p < 0) return 0;
    json_t *type = json_object_get(im->states[p].config, "type");
    return json_is_string(type) && strcmp(json_string_value(type), "parallel") == 0;
}

static json_t *convert_name_value(const char *name) {
    char *converted = convert_name(name);
    json_t *value = json_string(converted);
    free(converted);
    return value;
}

/* One of the events the library sends, which an `on` may name as it is: a
 * reserved prefix with something after it (the prefix alone names nothing the
 * library sends, so it is converted as any other name). */
static int is_reserved_event(const char *name) {
    static const char *const prefixes[] = {"xstate.done.state.", "xstate.done.actor.", "xstate.error.actor.", "xstate.after.", NULL};
    for (int i = 0; prefixes[i] != NULL; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], n) == 0 && name[n] != '\0') return 1;
    }
    return 0;
}

/* A named action (a string or {type, params}) as a `call` effect. */
static json_t *convert_action(chart_importer *im, json_t *action, const char *where) {
    const char *name = NULL;
    json_t *params = NULL;
    if (json_is_string(action)) {
        name = json_string_value(action);
    } else if (json_is_object(action) && json_is_string(json_object_get(action, "type"))) {
        name = json_string_value(json_object_get(action, "type"));
        params = json_object_get(action, "params");
        if (!only_type_and_params(im, where, action, "an action")) return NULL;
    } else {
        refuse(im, where, "an inline action needs code (name it)");
        return NULL;
    }
    if (strncmp(name, "xstate.", 7) == 0) {
        refuse(im, where, "the built-in action '%s' is not converted", name);
        return NULL;
    }
    json_t *effect = json_object();
    json_object_set_new(effect, "call", convert_name_value(name));
    if (params != NULL) json_object_set(effect, "params", params);
    return effect;
}

static json_t *convert_actions(chart_importer *im, json_t *actions, const char *where) {
    json_t *list = json_array();
    if (json_is_array(actions)) {
        size_t i;
        json_t *item;
        json_array_foreach(actions, i, item) {
            char at[512];
            snprintf(at, sizeof at, "%s[%zu]", where, i);
            json_t *effect = convert_action(im, item, at);
            if (effect == NULL) { json_decref(list); return NULL; }
            json_array_append_new(list, effect);
        }
    } else {
        json_t *effect = convert_action(im, actions, where);
        if (effect == NULL) { json_decref(list); return NULL; }
        json_array_append_new(list, effect);
    }
    return list;
}

static json_t *convert_guard(chart_importer *im, json_t *guard, const char *where) {
    if (json_is_string(guard)) {
        if (strncmp(json_string_value(guard), "xstate.", 7) == 0) {
            refuse(im, where, "the built-in guard '%s' is not converted", json_string_value(guard));
            return NULL;
        }
        return convert_name_value(json_string_value(guard));
    }
    if (json_is_object(guard) && json_is_string(json_object_get(guard, "type"))) {
        const char *type = json_string_value(json_object_get(guard, "type"));
        json_t *params = json_object_get(guard, "params");
        if (strncmp(type, "xstate.", 7) == 0) {
            refuse(im, where, "the built-in guard '%s' is not converted", type);
            return NULL;
        }
        if (!only_type_and_params(im, where, guard, "a guard")) return NULL;
        if (params == NULL) return convert_name_value(type);
        json_t *call = json_object();
        json_object_set_new(call, "call", convert_name_value(type));
        json_object_set(call, "params", params);
        return call;
    }
    refuse(im, where, "an inline guard needs code (name it)");
    return NULL;
}

/* One target: a string or {target, guard, actions, reenter, description}. */
static json_t *convert_transition(chart_importer *im, int source, json_t *config, const char *where) {
    json_t *out = json_object();
    json_t *target = NULL;
    json_t *guard = NULL, *actions = NULL, *reenter = NULL;
    if (json_is_string(config)) {
        target = config;
    } else if (json_is_object(config)) {
        const char *key;
        json_t *value;
        json_object_foreach(config, key, value) {
            if (strcmp(key, "target") == 0) target = value;
            else if (strcmp(key, "guard") == 0 || strcmp(key, "cond") == 0) guard = value;
            else if (strcmp(key, "actions") == 0) actions = value;
            else if (strcmp(key, "reenter") == 0) reenter = value;
            else if (strcmp(key, "description") == 0 || strcmp(key, "meta") == 0) continue;
            else {
                refuse(im, where, "unknown key '%s' in a transition", key);
                json_decref(out);
                return NULL;
            }
        }
    } else {
        refuse(im, where, "an inline transition needs code");
        json_decref(out);
        return NULL;
    }
    if (target != NULL && !json_is_null(target)) {
        json_t *into = json_array();
        json_t *list = target;
        int single = json_is_string(target);
        if (single) {
            list = json_array();
            json_array_append(list, target);
        }
        size_t i;
        json_t *item;
        json_array_foreach(list, i, item) {
            int node = json_is_string(item) ? resolve_target(im, source, json_string_value(item)) : -1;
            if (node == 0) {
                /* The machine itself: its regions (a parallel machine) or its
                 * initial state, entered again with their defaults, which is
                 * what XState enters for it. */
                json_t *type = json_object_get(im->machine, "type");
                int parallel = json_is_string(type) && strcmp(json_string_value(type), "parallel") == 0;
                json_t *initial = json_object_get(im->machine, "initial");
                for (int c = 1; c < im->count; c++) {
                    if (im->states[c].parent != 0) continue;
                    const char *xp = im->states[c].xstate_path;
                    if (parallel || (json_is_string(initial) && strcmp(xp, json_string_value(initial)) == 0)
                        || (!json_is_string(initial) && json_array_size(into) == 0)) {
                        json_array_append_new(into, json_string(im->states[c].path));
                    }
                }
                if (source != 0) reenter = json_true();
                continue;
            }
            if (node < 0) {
                refuse(im, where, "target %s: no such state", json_is_string(item) ? json_string_value(item) : "?");
                json_decref(into);
                if (single) json_decref(list);
                json_decref(out);
                return NULL;
            }
            for (size_t j = 0; j < i; j++) {
                int other = resolve_target(im, source, json_string_value(json_array_get(list, j)));
                if (other > 0 && !can_enter_together(im, other, node)) {
                    refuse(im, where, "targets %s and %s cannot be entered together (not in two regions of a parallel state)",
                           json_string_value(json_array_get(list, j)), json_string_value(item));
                    json_decref(into);
                    if (single) json_decref(list);
                    json_decref(out);
                    return NULL;
                }
            }
            json_array_append_new(into, json_string(im->states[node].path));
        }
        if (single) json_decref(list);
        if (json_array_size(into) == 1) {
            json_object_set(out, "into", json_array_get(into, 0));
            json_decref(into);
        } else if (json_array_size(into) > 1) {
            json_object_set_new(out, "into", into);
        } else {
            json_decref(into);
        }
    }
    if (guard != NULL) {
        char at[512];
        snprintf(at, sizeof at, "%s.guard", where);
        json_t *call = convert_guard(im, guard, at);
        if (call == NULL) { json_decref(out); return NULL; }
        json_object_set_new(out, "call", call);
    }
    if (actions != NULL) {
        char at[512];
        snprintf(at, sizeof at, "%s.actions", where);
        json_t *list = convert_actions(im, actions, at);
        if (list == NULL) { json_decref(out); return NULL; }
        json_object_set_new(out, "actions", list);
    }
    if (json_is_true(reenter) && json_object_get(out, "into") != NULL) json_object_set_new(out, "reenter", json_true());
    /* A targetless transition (a guard that takes the event, and nothing more)
     * says it is one: without `into` or `actions` the library would read the
     * target as a flat feature's that forgot its `into`. */
    if (json_object_get(out, "into") == NULL && json_object_get(out, "actions") == NULL)
        json_object_set_new(out, "actions", json_array());
    return out;
}

static json_t *convert_transitions(chart_importer *im, int source, json_t *config, const char *where) {
    json_t *list = json_array();
    if (json_is_array(config)) {
        size_t i;
        json_t *item;
        json_array_foreach(config, i, item) {
            char at[512];
            snprintf(at, sizeof at, "%s[%zu]", where, i);
            json_t *t = convert_transition(im, source, item, at);
            if (t == NULL) { json_decref(list); return NULL; }
            json_array_append_new(list, t);
        }
    } else {
        json_t *t = convert_transition(im, source, config, where);
        if (t == NULL) { json_decref(list); return NULL; }
        json_array_append_new(list, t);
    }
    if (json_array_size(list) == 0) {
        /* XState: an empty list takes nothing; a guarded targetless stand-in would differ. */
        json_decref(list);
        refuse(im, where, "an empty list of transitions");
        return NULL;
    }
    return list;
}

static int convert_node(chart_importer *im, int self, json_t *out, const char *where);

/* A delay key: a whole number of milliseconds up to 2^53 written in decimal; -1 otherwise. */
static long long delay_of(const char *key) {
    if (key[0] == '\0' || strlen(key) > 16) return -1;
    long long value = 0;
    for (const char *c = key; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        value = value * 10 + (*c - '0');
    }
    return value <= (1LL << 53) ? value : -1;
}

static int compare_delays(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* XState's `invoke`: a named service (`src`), its `id`, a literal `input`, and
 * `onDone`/`onError` transitions. An inline actor, a machine, or a callback
 * needs code: refused. */
static int convert_invoke(chart_importer *im, int self, json_t *invoke, json_t *out, const char *where) {
    char at[1024];
    snprintf(at, sizeof at, "%s%sinvoke", where, where[0] ? "." : "");
    json_t *list = json_is_array(invoke) ? invoke : NULL;
    size_t count = list ? json_array_size(list) : 1;
    json_t *converted = json_array();
    for (size_t i = 0; i < count; i++) {
        json_t *item = list ? json_array_get(list, i) : invoke;
        char iat[1100];
        if (list) snprintf(iat, sizeof iat, "%s[%zu]", at, i);
        else snprintf(iat, sizeof iat, "%s", at);
        if (!json_is_object(item)) { json_decref(converted); return refuse(im, iat, "expected an object"); }
        json_t *src = json_object_get(item, "src");
        if (!json_is_string(src)) { json_decref(converted); return refuse(im, iat, "src: an inline actor needs code (name it)"); }
        json_t *entry = json_object();
        json_object_set_new(entry, "src", convert_name_value(json_string_value(src)));
        const char *key;
        json_t *value;
        json_object_foreach(item, key, value) {
            char kat[1200];
            snprintf(kat, sizeof kat, "%s.%s", iat, key);
            if (strcmp(key, "src") == 0 || strcmp(key, "systemId") == 0) continue;
            if (strcmp(key, "id") == 0) {
                if (!json_is_string(value) || json_string_length(value) == 0) { json_decref(entry); json_decref(converted); return refuse(im, kat, "expected a non-empty string"); }
                json_object_set(entry, "id", value);
            } else if (strcmp(key, "input") == 0) {
                json_object_set(entry, "input", value);
            } else if (strcmp(key, "onDone") == 0 || strcmp(key, "onError") == 0) {
                json_t *transitions = convert_transitions(im, self, value, kat);
                if (transitions == NULL) { json_decref(entry); json_decref(converted); return -1; }
                json_object_set_new(entry, key, json_array_size(transitions) == 1 ? json_incref(json_array_get(transitions, 0)) : json_incref(transitions));
                json_decref(transitions);
            } else {
                json_decref(entry);
                json_decref(converted);
                return refuse(im, kat, "not converted");
            }
        }
        json_array_append_new(converted, entry);
    }
    json_object_set_new(out, "invoke", json_array_size(converted) == 1 ? json_incref(json_array_get(converted, 0)) : json_incref(converted));
    json_decref(converted);
    return 0;
}

/* XState's `after`: each delay becomes a timer of the state that sends
 * `xstate.after.<ms>.<path>`, and its transitions are `on` that event, as
 * XState itself rewrites them. Delays in ascending order (JavaScript's order of
 * integer keys), which is the order XState schedules them in. */
static int convert_after(chart_importer *im, int self, json_t *after, json_t *out, const char *where) {
    char at[1024];
    snprintf(at, sizeof at, "%s%safter", where, where[0] ? "." : "");
    if (!json_is_object(after)) return refuse(im, at, "expected an object of delays");
    size_t count = json_object_size(after);
    long long *delays = calloc(count + 1, sizeof *delays);
    if (delays == NULL) return refuse(im, at, "out of memory");
    size_t n = 0;
    const char *key;
    json_t *value;
    json_object_foreach(after, key, value) {
        long long delay = delay_of(key);
        if (delay < 0) {
            free(delays);
            return refuse(im, at, "the delay '%s' is not a whole number of milliseconds (named delays need code)", key);
        }
        delays[n++] = delay;
    }
    qsort(delays, n, sizeof *delays, compare_delays);
    json_t *timers = json_array();
    json_t *on = json_object_get(out, "on");
    if (on == NULL) {
        on = json_object();
        json_object_set_new(out, "on", on);
    }
    for (size_t i = 0; i < n; i++) {
        char delay_key[32];
        snprintf(delay_key, sizeof delay_key, "%lld", delays[i]);
        json_t *config = json_object_get(after, delay_key);
        if (config == NULL) {
            /* Written another way ("0100"): refused rather than guessed. */
            json_decref(timers);
            free(delays);
            return refuse(im, at, "the delay of %s ms is not written in its shortest form", delay_key);
        }
        const char *path = im->states[self].path;
        size_t en = strlen(path) + 64;
        char *event = malloc(en);
        snprintf(event, en, "xstate.after.%s.%s", delay_key, path);
        json_t *timer = json_object();
        json_object_set_new(timer, "ms", json_integer(delays[i]));
        json_object_set_new(timer, "send", json_string(event));
        json_array_append_new(timers, timer);
        char tat[1100];
        snprintf(tat, sizeof tat, "%s.%s", at, delay_key);
        json_t *list = convert_transitions(im, self, config, tat);
        if (list == NULL) {
            free(event);
            json_decref(timers);
            free(delays);
            return -1;
        }
        json_object_set_new(on, event, json_array_size(list) == 1 ? json_incref(json_array_get(list, 0)) : json_incref(list));
        json_decref(list);
        free(event);
    }
    free(delays);
    json_object_set_new(out, "after", timers);
    return 0;
}

static int convert_children(chart_importer *im, int self, json_t *out, const char *where) {
    json_t *states = json_object();
    for (int i = self + 1; i < im->count; i++) {
        if (im->states[i].parent != self) continue;
        const char *path = im->states[i].path;
        const char *last = strrchr(path, '.');
        const char *name = last ? last + 1 : path;
        if (json_object_get(states, name) != NULL) {
            json_decref(states);
            return refuse(im, where, "two states become '%s'", name);
        }
        json_t *child = json_object();
        char at[1024];
        snprintf(at, sizeof at, "%s%sstates.%s", where, where[0] ? "." : "",
                 strrchr(im->states[i].xstate_path, '.') ? strrchr(im->states[i].xstate_path, '.') + 1 : im->states[i].xstate_path);
        if (convert_node(im, i, child, at) < 0) {
            json_decref(child);
            json_decref(states);
            return -1;
        }
        json_object_set_new(states, name, child);
    }
    json_object_set_new(out, "states", states);
    return 0;
}

/* Keys of a state (or, for self == 0, of the machine) in a fixed order. */
static int convert_node(chart_importer *im, int self, json_t *out, const char *where) {
    json_t *config = im->states[self].config;
    static const char *const known[] = {"after", "invoke", "id", "initial", "type", "history", "target", "states", "on", "always",
                                        "entry", "exit", "onDone", "output", "description", "tags", "meta",
                                        "context", "version", "predictableActionArguments", "preserveActionOrder",
                                        "types", "tsTypes", "schema", NULL};
    const char *key;
    json_t *value;
    json_object_foreach(config, key, value) {
        int ok = 0;
        for (int i = 0; known[i] != NULL; i++) if (strcmp(known[i], key) == 0) ok = 1;
        if (!ok) {
            char at[1024];
            snprintf(at, sizeof at, "%s%s%s", where, where[0] ? "." : "", key);
            return refuse(im, at, "not converted");
        }
    }
    if (self > 0 && json_object_get(config, "context") != NULL) return refuse(im, where, "context on a state");
    json_t *type = json_object_get(config, "type");
    const char *kind = json_is_string(type) ? json_string_value(type) : NULL;
    /* XState v5: a state with `history` and no type is a history state. */
    if (kind == NULL && self > 0 && json_object_get(config, "history") != NULL) kind = "history";
    if (kind != NULL && strcmp(kind, "atomic") != 0 && strcmp(kind, "compound") != 0) {
        if (strcmp(kind, "parallel") == 0 || strcmp(kind, "final") == 0 || strcmp(kind, "history") == 0) {
            if (self == 0 && strcmp(kind, "parallel") != 0) return refuse(im, where, "type: a machine is not %s", kind);
            json_object_set_new(out, "type", json_string(kind));
        } else {
            return refuse(im, where, "type: unknown type '%s'", kind);
        }
    }
    json_t *description = json_object_get(config, "description");
    if (json_is_string(description)) json_object_set(out, "description", description);
    if (kind != NULL && strcmp(kind, "history") == 0) {
        /* A history state is a pseudo-state: it is never active, so what it
         * declares beyond its default would be dropped, and a transition into
         * one of its children would name a state the output does not have. */
        static const char *const inert[] = {"states", "on", "always", "after", "invoke", "entry", "exit", "onDone", "initial", NULL};
        for (int i = 0; inert[i] != NULL; i++) {
            if (json_object_get(config, inert[i]) == NULL) continue;
            char at[1024];
            snprintf(at, sizeof at, "%s.%s", where, inert[i]);
            if (i == 0) return refuse(im, at, "a history state has no child states");
            return refuse(im, at, "a history state has no '%s'", inert[i]);
        }
        json_t *history = json_object_get(config, "history");
        if (json_is_string(history) && strcmp(json_string_value(history), "deep") == 0) json_object_set_new(out, "history", json_string("deep"));
        json_t *target = json_object_get(config, "target");
        if (target != NULL) {
            char at[512];
            snprintf(at, sizeof at, "%s.target", where);
            json_t *t = convert_transition(im, self, target, at);
            if (t == NULL) return -1;
            json_t *into = json_object_get(t, "into");
            if (into != NULL) json_object_set(out, "default", into);
            json_decref(t);
        }
        return 0;
    }
    json_t *initial = json_object_get(config, "initial");
    json_t *states = json_object_get(config, "states");
    if (self > 0 && states != NULL && json_object_size(states) > 0 && (kind == NULL || strcmp(kind, "parallel") != 0)) {
        const char *first = NULL;
        /* XState takes the first child when `initial` is left out. */
        if (json_is_string(initial)) first = json_string_value(initial);
        else if (initial == NULL) { void *iter = json_object_iter(states); first = json_object_iter_key(iter); }
        else if (json_is_object(initial) && json_is_string(json_object_get(initial, "target")) && json_object_size(initial) == 1)
            first = json_string_value(json_object_get(initial, "target"));
        else return refuse(im, where, "initial: expected a child's name");
        int child = child_named(im, self, first);
        if (child < 0) return refuse(im, where, "initial: no child state '%s'", first);
        const char *path = im->states[child].path;
        const char *last = strrchr(path, '.');
        json_object_set_new(out, "initial", json_string(last ? last + 1 : path));
    }
    if (self > 0 && states != NULL && json_object_size(states) > 0) {
        if (convert_children(im, self, out, where) < 0) return -1;
    }
    json_t *on = json_object_get(config, "on");
    if (on != NULL) {
        if (!json_is_object(on)) return refuse(im, where, "on: expected an object");
        json_t *events = json_object();
        json_object_foreach(on, key, value) {
            char at[512];
            snprintf(at, sizeof at, "%s%son.%s", where, where[0] ? "." : "", key);
            if (strchr(key, '*') != NULL) { json_decref(events); return refuse(im, at, "wildcard events are not converted"); }
            json_t *list = convert_transitions(im, self, value, at);
            if (list == NULL) { json_decref(events); return -1; }
            char *name = is_reserved_event(key) ? copy_text(key) : convert_name(key);
            const char *owner = json_string_value(json_object_get(im->events, name));
            if (owner != NULL && strcmp(owner, key) != 0) {
                refuse(im, at, "the events '%s' and '%s' both become '%s'", owner, key, name);
                free(name);
                json_decref(list);
                json_decref(events);
                return -1;
            }
            json_object_set_new(im->events, name, json_string(key));
            json_object_set_new(events, name, json_array_size(list) == 1 ? json_incref(json_array_get(list, 0)) : json_incref(list));
            json_decref(list);
            free(name);
        }
        json_object_set_new(out, "on", events);
    }
    json_t *after = json_object_get(config, "after");
    if (after != NULL && convert_after(im, self, after, out, where) < 0) return -1;
    json_t *invoke = json_object_get(config, "invoke");
    if (invoke != NULL && convert_invoke(im, self, invoke, out, where) < 0) return -1;
    static const char *const lists[] = {"always", "onDone", NULL};
    for (int k = 0; lists[k] != NULL; k++) {
        json_t *v = json_object_get(config, lists[k]);
        if (v == NULL) continue;
        char at[512];
        snprintf(at, sizeof at, "%s%s%s", where, where[0] ? "." : "", lists[k]);
        if (self == 0 && k == 1) return refuse(im, at, "the machine's onDone is not converted");
        json_t *list = convert_transitions(im, self, v, at);
        if (list == NULL) return -1;
        json_object_set_new(out, lists[k], json_array_size(list) == 1 ? json_incref(json_array_get(list, 0)) : json_incref(list));
        json_decref(list);
    }
    static const char *const effects[] = {"entry", "exit", NULL};
    for (int k = 0; effects[k] != NULL; k++) {
        json_t *v = json_object_get(config, effects[k]);
        if (v == NULL) continue;
        char at[512];
        snprintf(at, sizeof at, "%s%s%s", where, where[0] ? "." : "", effects[k]);
        json_t *list = convert_actions(im, v, at);
        if (list == NULL) return -1;
        json_object_set_new(out, effects[k], list);
    }
    json_t *output = json_object_get(config, "output");
    if (output != NULL && kind != NULL && strcmp(kind, "final") == 0) json_object_set(out, "output", output);
    return 0;
}

/* libuniflow's names (of the feature, states, events, fields, handlers and
 * services) are at most 256 bytes: the converted definition is checked once,
 * whole, before it is printed. */
static int check_name_lengths(chart_importer *im, json_t *value, const char *parent) {
    const char *key;
    json_t *item;
    size_t i;
    if (json_is_array(value)) {
        json_array_foreach(value, i, item) if (check_name_lengths(im, item, parent) < 0) return -1;
        return 0;
    }
    if (!json_is_object(value)) return 0;
    int named_keys = strcmp(parent, "states") == 0 || strcmp(parent, "on") == 0 || strcmp(parent, "fields") == 0;
    json_object_foreach(value, key, item) {
        if (named_keys && strlen(key) > 256 && strncmp(key, "xstate.", 7) != 0) {
            return refuse(im, parent, "the name '%.40s...' is longer than 256 bytes", key);
        }
        if ((strcmp(key, "call") == 0 || strcmp(key, "src") == 0 || strcmp(key, "feature") == 0 || strcmp(key, "send") == 0)
            && json_is_string(item) && json_string_length(item) > 256 && strncmp(json_string_value(item), "xstate.", 7) != 0) {
            return refuse(im, key, "the name '%.40s...' is longer than 256 bytes", json_string_value(item));
        }
        if (check_name_lengths(im, item, key) < 0) return -1;
    }
    return 0;
}

int uniflow_import_xstate_chart(const char *text, size_t length, const char *feature, const char *file_name,
                                char **out_definition, char **out_error) {
    chart_importer *im = calloc(1, sizeof *im);
    if (im == NULL) return UNIFLOW_IMPORT_CHART_REFUSED;
    *out_definition = NULL;
    *out_error = NULL;
    json_error_t parse_error;
    im->machine = json_loadb(text, length, JSON_REJECT_DUPLICATES, &parse_error);
    im->ids = json_object();
    im->events = json_object();
    int status = UNIFLOW_IMPORT_CHART_REFUSED;
    json_t *definition = NULL;
    if (!json_is_object(im->machine) || !json_is_object(json_object_get(im->machine, "states"))) {
        refuse(im, "machine", "expected an object with states");
        goto done;
    }
    json_t *id = json_object_get(im->machine, "id");
    im->machine_id = json_is_string(id) ? json_string_value(id) : "(machine)";
    if (index_states(im, im->machine, -1, "", "", "") < 0) goto done;
    char *name = NULL;
    if (feature != NULL) name = convert_name(feature);
    else if (json_is_string(id)) name = convert_name(json_string_value(id));
    else if (file_name != NULL) {
        const char *base = strrchr(file_name, '/');
        base = base ? base + 1 : file_name;
        char *copy = copy_text(base);
        size_t n = strlen(copy);
        if (n > 5 && strcmp(copy + n - 5, ".json") == 0) copy[n - 5] = '\0';
        name = convert_name(copy);
        free(copy);
    } else name = copy_text("machine");

    definition = json_object();
    json_object_set_new(definition, "feature", json_string(name));
    free(name);
    json_t *type = json_object_get(im->machine, "type");
    if (json_is_string(type) && strcmp(json_string_value(type), "parallel") == 0) json_object_set_new(definition, "type", json_string("parallel"));
    json_t *context = json_object_get(im->machine, "context");
    if (context != NULL) {
        if (!json_is_object(context)) { refuse(im, "context", "context computed by a function needs code"); goto done; }
        json_t *fields = json_object(), *owners = json_object();
        const char *key;
        json_t *value;
        json_object_foreach(context, key, value) {
            json_t *field = json_object();
            json_object_set_new(field, "type", json_string("any"));
            json_object_set(field, "default", value);
            char *converted = convert_name(key);
            const char *owner = json_string_value(json_object_get(owners, converted));
            if (owner != NULL) {
                char at[512];
                snprintf(at, sizeof at, "context.%s", key);
                refuse(im, at, "the context key names '%s' and '%s' both become '%s'", owner, key, converted);
                free(converted);
                json_decref(field);
                json_decref(fields);
                json_decref(owners);
                goto done;
            }
            json_object_set_new(owners, converted, json_string(key));
            json_object_set_new(fields, converted, field);
            free(converted);
        }
        json_object_set_new(definition, "fields", fields);
        json_decref(owners);
    }
    json_t *body = json_object();
    if (convert_node(im, 0, body, "") < 0) { json_decref(body); goto done; }
    if (convert_children(im, 0, definition, "") < 0) { json_decref(body); goto done; }
    /* The machine's own keys after its states. */
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value) {
        if (strcmp(key, "type") == 0) continue;
        json_object_set(definition, key, value);
    }
    json_decref(body);
    json_t *initial = json_object_get(im->machine, "initial");
    if (!json_is_string(type) || strcmp(json_string_value(type), "parallel") != 0) {
        const char *first = NULL;
        if (json_is_string(initial)) first = json_string_value(initial);
        else { void *iter = json_object_iter(json_object_get(im->machine, "states")); first = json_object_iter_key(iter); }
        int child = child_named(im, 0, first);
        if (child < 0) { refuse(im, "initial", "no state '%s'", first); goto done; }
        json_t *list = json_array();
        json_array_append_new(list, json_string(im->states[child].path));
        json_object_set_new(definition, "initial", list);
    } else {
        /* A parallel machine starts in every region: `initialize` may name any. */
        json_t *list = json_array();
        for (int c = 1; c < im->count; c++) {
            if (im->states[c].parent == 0) json_array_append_new(list, json_string(im->states[c].path));
        }
        json_object_set_new(definition, "initial", list);
    }
    if (check_name_lengths(im, definition, "") < 0) goto done;
    char *dumped = json_dumps(definition, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (dumped == NULL) { refuse(im, "machine", "out of memory"); goto done; }
    size_t n = strlen(dumped);
    *out_definition = malloc(n + 2);
    if (*out_definition != NULL) {
        memcpy(*out_definition, dumped, n);
        (*out_definition)[n] = '\n';
        (*out_definition)[n + 1] = '\0';
        status = UNIFLOW_IMPORT_CHART_OK;
    }
    free(dumped);
done:
    if (status != UNIFLOW_IMPORT_CHART_OK) *out_error = im->error ? im->error : copy_text("out of memory");
    else free(im->error);
    json_decref(definition);
    json_decref(im->machine);
    json_decref(im->ids);
    json_decref(im->events);
    for (int i = 0; i < im->count; i++) {
        free(im->states[i].xstate_path);
        free(im->states[i].path);
    }
    free(im);
    return status;
}
