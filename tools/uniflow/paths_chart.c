/*
 * paths_chart.c — `uniflow paths` through a statechart's hierarchy.
 *
 * A statechart's behaviour (entry sets, history, `always`, internal events,
 * delayed sends) is too much to copy from the library, so the search runs the
 * library: a node is what a dispatcher holds after a path (the model, with
 * configurations, history, payloads and running invocations, and the armed
 * timers as their remaining time), and its edges are what `uniflow run` can do
 * next: send each event the chart names, advance the manual clock to the next
 * timer, settle a running service (done or failed, with null), or take a
 * declared `transitions` entry. Before each try the node's
 * path runs again on an empty model (see restore_node). The search is breadth-first,
 * so the first path to reach a state is as short as any; of two as short, an
 * unguarded one wins. A state counts as reached when a mutation entered it or
 * left it active: a state that `always` leaves at once is passed through, and
 * its path is the one that passes through it.
 *
 * Host code: the tool registers a stub for every handler and service the
 * definitions name. Stubs of handlers answer "no" (a guard fails, an effect
 * assigns nothing, a binding's `given` does not hold), as `uniflow run`'s
 * placeholders do for statecharts; a step that asked a handler is tried again
 * with every handler answering "yes", and when that ends elsewhere, it is a
 * second, *guarded* step (it relies on the host's answer). Services run until
 * a step settles them ({"service_done": ID, ...}, as `uniflow run` reads it:
 * run_services.c) or their state is left.
 */
#define _POSIX_C_SOURCE 200809L

#include "paths_chart.h"
#include "paths.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uniflow.h"

/* ------------------------------------------------------------------------------
 * Which definitions are statecharts (the library's own test, in C)
 * ------------------------------------------------------------------------------ */

static int has_any_key(json_t *object, const char *const *keys) {
    for (; *keys; keys++) {
        if (json_object_get(object, *keys) != NULL) return 1;
    }
    return 0;
}

static int is_reserved_event(const char *name) { return strncmp(name, "xstate.", 7) == 0; }

static int chart_target(json_t *target) {
    if (json_is_string(target)) return strchr(json_string_value(target), '.') != NULL;
    if (!json_is_object(target)) return 0;
    if (json_object_get(target, "actions") || json_object_get(target, "reenter")) return 1;
    if (json_is_object(json_object_get(target, "call"))) return 1;
    json_t *into = json_object_get(target, "into");
    if (json_is_array(into)) return 1;
    return json_is_string(into) && strchr(json_string_value(into), '.') != NULL;
}

/* Whether an `on` object uses targets or event names only statecharts have. */
static int chart_on(json_t *on) {
    const char *event;
    json_t *targets;
    json_object_foreach(on, event, targets) {
        if (is_reserved_event(event)) return 1;
        if (json_is_array(targets)) {
            size_t i;
            json_t *target;
            json_array_foreach(targets, i, target) if (chart_target(target)) return 1;
        } else if (chart_target(targets)) {
            return 1;
        }
    }
    return 0;
}

int is_statechart(json_t *definition) {
    static const char *const feature_keys[] = {"entry", "exit", "always", "invoke", "after", "type", "fields", NULL};
    static const char *const state_keys[] = {"states", "initial", "type", "history", "default", "entry",
                                             "exit", "always", "onDone", "invoke", "output", NULL};
    if (has_any_key(definition, feature_keys) || chart_on(json_object_get(definition, "on"))) return 1;
    const char *name;
    json_t *state;
    json_object_foreach(json_object_get(definition, "states"), name, state) {
        if (!json_is_object(state)) continue;
        if (has_any_key(state, state_keys) || chart_on(json_object_get(state, "on"))) return 1;
        size_t i;
        json_t *timer;
        json_array_foreach(json_object_get(state, "after"), i, timer) {
            if (json_object_get(timer, "send")) return 1; /* a timer that sends an event */
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------
 * The chart as the search sees it: its states' paths, events and fields
 * ------------------------------------------------------------------------------ */

typedef struct chart {
    const char *feature;
    int keyed;
    char **paths;   /* every state but history pseudo-states, in document order */
    int count;
    int capacity;
    json_t *events; /* event name -> true, in document order */
    json_t *fields; /* field name -> declaration, the first one met */
    json_t *transitions;
} chart;

static void *grow(void *items, int *capacity, size_t size) {
    *capacity = *capacity ? 2 * *capacity : 64;
    void *grown = realloc(items, size * (size_t)*capacity);
    if (grown == NULL) {
        fputs("uniflow paths: out of memory\n", stderr);
        exit(1);
    }
    return grown;
}

static void collect_fields(chart *c, json_t *fields) {
    const char *name;
    json_t *declaration;
    json_object_foreach(fields, name, declaration) {
        if (json_object_get(c->fields, name) == NULL) json_object_set(c->fields, name, declaration);
    }
}

static void collect_events(chart *c, json_t *on) {
    const char *event;
    json_t *value;
    json_object_foreach(on, event, value) {
        if (!is_reserved_event(event)) json_object_set_new(c->events, event, json_true());
    }
}

static void collect_states(chart *c, json_t *states, const char *prefix) {
    const char *name;
    json_t *state;
    json_object_foreach(states, name, state) {
        size_t length = strlen(prefix) + strlen(name) + 2;
        char *path = malloc(length);
        if (path == NULL) return;
        snprintf(path, length, "%s%s%s", prefix, *prefix ? "." : "", name);
        const char *type = json_string_value(json_object_get(state, "type"));
        if (type != NULL && strcmp(type, "history") == 0) {
            free(path);
            continue;
        }
        if (c->count == c->capacity) c->paths = grow(c->paths, &c->capacity, sizeof(char *));
        c->paths[c->count++] = path;
        collect_fields(c, json_object_get(state, "fields"));
        collect_events(c, json_object_get(state, "on"));
        collect_states(c, json_object_get(state, "states"), path);
    }
}

static int state_index(const chart *c, const char *path, size_t length) {
    for (int i = 0; i < c->count; i++) {
        if (strlen(c->paths[i]) == length && strncmp(c->paths[i], path, length) == 0) return i;
    }
    return -1;
}

/* ------------------------------------------------------------------------------
 * Host stubs
 * ------------------------------------------------------------------------------ */

/* A service invocation the stubs see running. */
typedef struct invocation {
    uint64_t serial;
    char *id;
    char *feature;
    char *key; /* NULL for a single feature */
} invocation;

typedef struct host {
    int answer; /* what every handler answers: 0 or 1 */
    int asked;  /* how many times a handler was asked since the last reset */
    invocation *running;
    int running_count;
    int running_capacity;
} host;

static int stub_handler(uf_binding_call *call, void *payload) {
    (void)call;
    host *h = payload;
    h->asked++;
    return h->answer;
}

static void forget_invocation(host *h, int i) {
    free(h->running[i].id);
    free(h->running[i].feature);
    free(h->running[i].key);
    h->running[i] = h->running[--h->running_count];
}

/* A service runs until a step settles it or its state is left. */
static int stub_start(const uf_invocation *inv, void *payload) {
    host *h = payload;
    if (h->running_count == h->running_capacity) h->running = grow(h->running, &h->running_capacity, sizeof(invocation));
    const char *key = uf_invocation_key(inv);
    h->running[h->running_count++] = (invocation){uf_invocation_serial(inv), strdup(uf_invocation_id(inv)),
                                                  strdup(uf_invocation_feature(inv)), key ? strdup(key) : NULL};
    return 0;
}

static int stub_stop(const uf_invocation *inv, void *payload) {
    host *h = payload;
    for (int i = 0; i < h->running_count; i++) {
        if (h->running[i].serial == uf_invocation_serial(inv)) {
            forget_invocation(h, i);
            break;
        }
    }
    return 0;
}

/* Settles the newest running invocation a step line names ({"service_done":
 * ID, "feature": F, "key": K} or "service_error"), as `uniflow run` does. */
static int settle(uf_dispatcher *d, host *h, const char *line) {
    json_t *value = json_loads(line, 0, NULL);
    int done = json_object_get(value, "service_done") != NULL;
    const char *id = json_string_value(json_object_get(value, done ? "service_done" : "service_error"));
    const char *feature = json_string_value(json_object_get(value, "feature"));
    const char *key = json_string_value(json_object_get(value, "key"));
    int status = UF_ENOTFOUND;
    for (int i = h->running_count; id != NULL && feature != NULL && i-- > 0;) {
        const invocation *r = &h->running[i];
        if (strcmp(r->id, id) != 0 || strcmp(r->feature, feature) != 0) continue;
        if ((r->key == NULL) != (key == NULL) || (key != NULL && strcmp(r->key, key) != 0)) continue;
        uint64_t serial = r->serial;
        forget_invocation(h, i);
        status = done ? uf_service_done(d, serial, NULL) : uf_service_error(d, serial, NULL);
        break;
    }
    json_decref(value);
    return status;
}

/* Registers a stub under every handler (`call`) and service (`src`) name. */
static void add_stubs(uf_dispatcher *d, host *h, json_t *value) {
    if (json_is_object(value)) {
        const char *key;
        json_t *member;
        json_object_foreach(value, key, member) {
            if (strcmp(key, "call") == 0 && json_is_string(member)) {
                (void)uf_register_handler(d, json_string_value(member), stub_handler, h, NULL);
            } else if (strcmp(key, "src") == 0 && json_is_string(member)) {
                (void)uf_register_service(d, json_string_value(member), stub_start, stub_stop, h, NULL);
            } else {
                add_stubs(d, h, member);
            }
        }
    } else if (json_is_array(value)) {
        size_t i;
        json_t *item;
        json_array_foreach(value, i, item) add_stubs(d, h, item);
    }
}

/* ------------------------------------------------------------------------------
 * The search
 * ------------------------------------------------------------------------------ */

/* A node: what the dispatcher held after a path, and the step that got there. */
typedef struct node {
    char *key;   /* the snapshot without its clock readings (JSON) */
    int parent;  /* -1: the empty model */
    char *step;  /* the action line that made it from its parent */
    int answer;  /* what handlers answered during the step */
    int guarded; /* the path relies on a handler's answer */
    int depth;
} node;

/* The first way found to a state: a node's path, then a step from it (which
 * may end in a node already known: a state `always` leaves is passed through). */
typedef struct reach {
    int from;    /* the node the step starts from; -1: the empty model */
    char *step;  /* NULL: not reached */
    int guarded; /* the path, this step included, relies on a handler's answer */
    int depth;   /* steps, this one included */
} reach;

typedef struct search {
    const chart *c;
    uf_dispatcher *d;
    host h;
    node *nodes;
    int count;
    int capacity;
    int *table; /* open addressing over node keys: index + 1, 0 empty */
    size_t table_size;
    reach *reached;      /* per state */
    unsigned char *seen; /* per state: reached by the step being tried */
    int limit;           /* CHART_PATHS_LIMIT, or less (see configuration_limit) */
    int full;            /* a configuration was left out: the limit was reached */
} search;

static uint64_t hash_text(const char *text) {
    uint64_t h = 1469598103934665603ULL;
    for (; *text; text++) h = (h ^ (unsigned char)*text) * 1099511628211ULL;
    return h;
}

static int find_node(const search *s, const char *key, size_t *slot) {
    size_t i = (size_t)hash_text(key) & (s->table_size - 1);
    while (s->table[i] != 0) {
        if (strcmp(s->nodes[s->table[i] - 1].key, key) == 0) {
            *slot = i;
            return s->table[i] - 1;
        }
        i = (i + 1) & (s->table_size - 1);
    }
    *slot = i;
    return -1;
}

/* Marks the states a mutation of the chart's feature entered or left active. */
static int note_mutation(const uf_mutation *m, void *payload) {
    search *s = payload;
    json_t *mutation = json_loads(uf_mutation_json(m), 0, NULL);
    const char *feature = json_string_value(json_object_get(mutation, "feature"));
    if (feature != NULL && strcmp(feature, s->c->feature) == 0) {
        size_t i;
        json_t *path;
        json_array_foreach(json_object_get(mutation, "entered"), i, path) {
            int state = json_is_string(path) ? state_index(s->c, json_string_value(path), strlen(json_string_value(path))) : -1;
            if (state >= 0) s->seen[state] = 1;
        }
        /* Every level of each active atomic state ("A.B,C.D": A, A.B, C, C.D). */
        const char *configuration = json_string_value(json_object_get(json_object_get(mutation, "new"), "state"));
        for (const char *at = configuration; at != NULL && *at;) {
            const char *end = strchr(at, ',');
            size_t length = end ? (size_t)(end - at) : strlen(at);
            for (size_t k = 1; k <= length; k++) {
                if (k == length || at[k] == '.') {
                    int state = state_index(s->c, at, k);
                    if (state >= 0) s->seen[state] = 1;
                }
            }
            at = end ? end + 1 : NULL;
        }
    }
    json_decref(mutation);
    return UF_KEEP;
}

/* The dispatcher's snapshot without clock readings: equal keys, equal futures. */
static char *current_key(uf_dispatcher *d) {
    char *text = NULL;
    if (uf_snapshot_get(d, &text) != UF_OK) return NULL;
    json_t *snapshot = json_loads(text, 0, NULL);
    uf_free(text);
    size_t i;
    json_t *timer;
    json_array_foreach(json_object_get(snapshot, "timers"), i, timer) json_object_del(timer, "due_at");
    json_object_del(snapshot, "clock");
    char *key = json_dumps(snapshot, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(snapshot);
    return key;
}

/* Runs a line a path holds: an action, {"advance_ms": N} or a service's result. */
static int run_line(uf_dispatcher *d, host *h, const char *line) {
    static const char advance[] = "{\"advance_ms\":", service[] = "{\"service_";
    if (strncmp(line, advance, sizeof advance - 1) == 0) return uf_clock_advance(d, strtoull(line + sizeof advance - 1, NULL, 10));
    if (strncmp(line, service, sizeof service - 1) == 0) return settle(d, h, line);
    return uf_submit(d, line);
}

/* Puts the dispatcher back into a node (-1: the empty model) by running its
 * path again on an empty model, each step with the answer its handlers gave.
 * Restoring the node's snapshot would be quicker, but restoring a model that
 * holds statechart instances reads past the end of the library's state table
 * (uf_state_restore and uf_snapshot_restore both): a path run anew is what
 * `uniflow run` does anyway. */
static int restore_node(search *s, int index) {
    int status = uf_snapshot_restore(s->d, "{\"clock\": \"manual\", \"model\": {}, \"timers\": []}");
    if (status == UF_OK && index >= 0) {
        int depth = s->nodes[index].depth, n = 0;
        int *chain = malloc(sizeof(int) * (size_t)depth);
        if (chain == NULL) return UF_ENOMEM;
        for (int at = index; at >= 0 && n < depth; at = s->nodes[at].parent) chain[n++] = at;
        while (status >= 0 && n > 0) {
            const node *step = &s->nodes[chain[--n]];
            s->h.answer = step->answer;
            status = run_line(s->d, &s->h, step->step);
        }
        free(chain);
        if (status > 0) status = UF_OK;
    }
    memset(s->seen, 0, (size_t)s->c->count);
    s->h.asked = 0;
    return status;
}

/* Runs one action line (an action, or {"advance_ms": N}) on the dispatcher. A
 * payload field the state entered requires is added at its zero value and the
 * action tried again (the message names it: "F.S.field: required field missing");
 * `action` then holds what succeeded. */
static int run_step(search *s, int from, json_t *action) {
    json_t *ms = json_object_get(action, "advance_ms");
    if (ms != NULL) return uf_clock_advance(s->d, (uint64_t)json_integer_value(ms));
    if (json_object_get(action, "kind") == NULL) {
        char *text = json_dumps(action, JSON_COMPACT | JSON_PRESERVE_ORDER);
        int status = text ? run_line(s->d, &s->h, text) : UF_ENOMEM;
        free(text);
        return status;
    }
    for (int tries = 0;; tries++) {
        char *text = json_dumps(action, JSON_COMPACT | JSON_PRESERVE_ORDER);
        int status = text ? uf_submit(s->d, text) : UF_ENOMEM;
        free(text);
        if (status != UF_ESCHEMA || tries == 64) return status;
        static const char missing[] = ": required field missing";
        const char *message = uf_last_error();
        size_t length = strlen(message);
        if (length < sizeof missing || strcmp(message + length - (sizeof missing - 1), missing) != 0) return status;
        const char *end = message + length - (sizeof missing - 1), *start = end;
        while (start > message && start[-1] != '.') start--;
        char field[257];
        if ((size_t)(end - start) >= sizeof field) return status;
        memcpy(field, start, (size_t)(end - start));
        field[end - start] = '\0';
        json_t *declaration = json_object_get(s->c->fields, field);
        const char *kind = json_string_value(json_object_get(action, "kind"));
        /* A send's payload is the event's, never the instance's: nothing to add. */
        if (declaration == NULL || kind == NULL || strcmp(kind, "send") == 0) return status;
        json_t *payload = json_object_get(action, "payload");
        if (payload == NULL) {
            payload = json_object();
            json_object_set_new(action, "payload", payload);
        }
        if (json_object_get(payload, field) != NULL) return status;
        json_object_set_new(payload, field, paths_zero_value(declaration));
        int answer = s->h.answer;
        if (restore_node(s, from) != UF_OK) return status;
        s->h.answer = answer;
    }
}

/* Notes the states a step from `from` reached, and adds the node the
 * dispatcher holds after it. */
static void add_node(search *s, int from, json_t *action, int answer) {
    char *key = current_key(s->d);
    if (key == NULL) return;
    int guarded = answer || (from >= 0 && s->nodes[from].guarded);
    int depth = from >= 0 ? s->nodes[from].depth + 1 : 1;
    for (int state = 0; state < s->c->count; state++) {
        reach *r = &s->reached[state];
        if (!s->seen[state] || (r->step != NULL && !(r->depth == depth && r->guarded && !guarded))) continue;
        free(r->step);
        *r = (reach){from, json_dumps(action, JSON_COMPACT | JSON_PRESERVE_ORDER), guarded, depth};
    }
    size_t slot;
    int index = find_node(s, key, &slot);
    if (index >= 0) {
        node *n = &s->nodes[index];
        /* As short, and without a guard: the better way there. */
        if (n->depth == depth && n->guarded && !guarded && from != index) {
            free(n->step);
            n->step = json_dumps(action, JSON_COMPACT | JSON_PRESERVE_ORDER);
            n->parent = from;
            n->answer = 0;
            n->guarded = 0;
        }
        free(key);
    } else if (s->count < s->limit) {
        if (s->count == s->capacity) s->nodes = grow(s->nodes, &s->capacity, sizeof(node));
        index = s->count++;
        s->nodes[index] = (node){key, from, json_dumps(action, JSON_COMPACT | JSON_PRESERVE_ORDER), answer, guarded, depth};
        s->table[slot] = index + 1;
    } else {
        free(key);
        s->full = 1;
    }
}

/* Tries one step from `from`: with handlers answering "no", then, when one was
 * asked, "yes" (a second, guarded step when it ends elsewhere). */
static void try_step(search *s, int from, json_t *action) {
    char *first = NULL;
    for (int answer = 0; answer < 2; answer++) {
        if (restore_node(s, from) != UF_OK) break;
        s->h.answer = answer;
        int status = run_step(s, from, action);
        int asked = s->h.asked;
        if (status == UF_OK) {
            char *key = current_key(s->d);
            if (answer == 0 || first == NULL || key == NULL || strcmp(first, key) != 0) add_node(s, from, action, answer);
            if (answer == 0) first = key;
            else free(key);
        }
        if (!asked) break;
    }
    free(first);
    s->h.answer = 0;
}

static json_t *new_action(const chart *c, const char *kind) {
    json_t *action = json_object();
    json_object_set_new(action, "kind", json_string(kind));
    json_object_set_new(action, "feature", json_string(c->feature));
    if (c->keyed) json_object_set_new(action, "key", json_string("k"));
    return action;
}

/* Whether `state` is `ancestor` or below it. */
static int within(const char *state, const char *ancestor) {
    size_t n = strlen(ancestor);
    return strncmp(state, ancestor, n) == 0 && (state[n] == '\0' || state[n] == '.');
}

/* Whether `state` is listed by a declared transitions entry, or an ancestor is. */
static int listed(json_t *list, const char *state) {
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (json_is_string(item) && within(state, json_string_value(item))) return 1;
    }
    return 0;
}

/* The timers armed now: the soonest one's remaining time, -1 if none. */
static json_int_t next_timer(const node *n) {
    json_t *snapshot = json_loads(n->key, 0, NULL);
    json_int_t soonest = -1;
    size_t i;
    json_t *timer;
    json_array_foreach(json_object_get(snapshot, "timers"), i, timer) {
        json_int_t remaining = json_integer_value(json_object_get(timer, "remaining_ms"));
        if (soonest < 0 || remaining < soonest) soonest = remaining;
    }
    json_decref(snapshot);
    return soonest;
}

static void expand(search *s, int index) {
    const chart *c = s->c;
    const char *event;
    json_t *value;
    json_object_foreach(c->events, event, value) {
        json_t *action = new_action(c, "send");
        json_object_set_new(action, "event", json_string(event));
        try_step(s, index, action);
        json_decref(action);
    }
    /* What runs once the node is restored: each result is a step. */
    if (restore_node(s, index) == UF_OK && s->h.running_count > 0) {
        int count = 0;
        json_t *settles = json_array();
        for (int i = 0; i < s->h.running_count; i++) {
            const invocation *r = &s->h.running[i];
            if (strcmp(r->feature, c->feature) != 0) continue;
            for (int done = 1; done >= 0; done--) {
                json_t *line = json_object();
                json_object_set_new(line, done ? "service_done" : "service_error", json_string(r->id));
                json_object_set_new(line, "feature", json_string(c->feature));
                if (r->key != NULL) json_object_set_new(line, "key", json_string(r->key));
                json_array_append_new(settles, line);
                count++;
            }
        }
        for (int i = 0; i < count; i++) try_step(s, index, json_array_get(settles, (size_t)i));
        json_decref(settles);
    }
    json_int_t soonest = next_timer(&s->nodes[index]);
    if (soonest >= 0) {
        json_t *advance = json_object();
        json_object_set_new(advance, "advance_ms", json_integer(soonest));
        try_step(s, index, advance);
        json_decref(advance);
    }
    const char *from;
    json_t *list;
    json_object_foreach(c->transitions, from, list) {
        for (int into = 0; into < c->count; into++) {
            if (!listed(list, c->paths[into])) continue;
            json_t *action = new_action(c, "transition");
            json_object_set_new(action, "from", json_string(from));
            json_object_set_new(action, "into", json_string(c->paths[into]));
            try_step(s, index, action);
            json_decref(action);
        }
    }
}

static void print_path(const search *s, int state, FILE *out) {
    const reach *r = &s->reached[state];
    fprintf(out, "{\"path\": \"%s.%s\", \"guarded\": %s}\n", s->c->feature, s->c->paths[state],
            r->guarded ? "true" : "false");
    const char **steps = malloc(sizeof(char *) * (size_t)r->depth);
    if (steps == NULL) return;
    int n = 0;
    steps[n++] = r->step;
    for (int at = r->from; at >= 0 && n < r->depth; at = s->nodes[at].parent) steps[n++] = s->nodes[at].step;
    while (n > 0) fprintf(out, "%s\n", steps[--n]);
    free(steps);
}

static int search_chart(search *s, json_t *definition, FILE *out, FILE *err) {
    const chart *c = s->c;
    /* Initializations: into each state `initial` lists (every state without one). */
    json_t *initial = json_object_get(definition, "initial");
    for (int state = 0; state < c->count; state++) {
        int is_initial = initial == NULL;
        size_t k;
        json_t *item;
        json_array_foreach(initial, k, item) {
            if (json_is_string(item) && strcmp(json_string_value(item), c->paths[state]) == 0) is_initial = 1;
        }
        if (!is_initial) continue;
        json_t *action = new_action(c, "initialize");
        json_object_set_new(action, "into", json_string(c->paths[state]));
        try_step(s, -1, action);
        json_decref(action);
    }
    for (int index = 0; index < s->count && !s->full; index++) expand(s, index);
    if (s->full) {
        fprintf(err, "uniflow paths: %s: stopped after %d configurations; states not reached by then may be reachable\n",
                c->feature, s->limit);
    }
    int unreachable = 0;
    for (int state = 0; state < c->count; state++) {
        if (s->reached[state].step == NULL) {
            fprintf(err, "uniflow paths: %s.%s: unreachable\n", c->feature, c->paths[state]);
            unreachable = 1;
        } else {
            print_path(s, state, out);
        }
    }
    return unreachable;
}

/* The most configurations to look at: CHART_PATHS_LIMIT, or fewer when the
 * environment variable UNIFLOW_PATHS_LIMIT says so (tests reach the limit
 * with it in a moment; it never raises the limit). */
static int configuration_limit(void) {
    const char *text = getenv("UNIFLOW_PATHS_LIMIT");
    long limit = text ? strtol(text, NULL, 10) : 0;
    return limit > 0 && limit < CHART_PATHS_LIMIT ? (int)limit : CHART_PATHS_LIMIT;
}

int chart_paths(json_t *definition, json_t *features, FILE *out, FILE *err) {
    chart c = {0};
    c.feature = json_string_value(json_object_get(definition, "feature"));
    const char *instances = json_string_value(json_object_get(definition, "instances"));
    c.keyed = instances != NULL && strcmp(instances, "keyed") == 0;
    c.events = json_object();
    c.fields = json_object();
    c.transitions = json_object_get(definition, "transitions");
    collect_fields(&c, json_object_get(definition, "fields"));
    collect_events(&c, json_object_get(definition, "on"));
    collect_states(&c, json_object_get(definition, "states"), "");

    search s = {0};
    s.c = &c;
    s.limit = configuration_limit();
    s.table_size = 1u << 18; /* over twice the limit: probes stay short */
    s.table = calloc(s.table_size, sizeof(int));
    s.reached = calloc((size_t)c.count + 1, sizeof(reach));
    s.seen = calloc((size_t)c.count + 1, 1);
    int status = 1;
    char *text = json_dumps(features, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (c.feature == NULL || s.table == NULL || s.reached == NULL || s.seen == NULL || text == NULL) {
        fputs("uniflow paths: out of memory or a malformed definition\n", err);
    } else if (uf_dispatcher_new(&s.d, "{\"clock\": \"manual\"}") != UF_OK) {
        fprintf(err, "uniflow paths: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
    } else {
        add_stubs(s.d, &s.h, features);
        if (uf_register(s.d, text) != UF_OK || uf_subscribe(s.d, NULL, note_mutation, &s, NULL, NULL) != UF_OK) {
            fprintf(err, "uniflow paths: %s: %s\n", uf_status_name(uf_last_status()), uf_last_error());
        } else {
            status = search_chart(&s, definition, out, err);
        }
    }
    uf_dispatcher_free(s.d);
    free(text);
    for (int i = 0; i < s.count; i++) {
        free(s.nodes[i].key);
        free(s.nodes[i].step);
    }
    free(s.nodes);
    free(s.table);
    for (int i = 0; s.reached != NULL && i < c.count; i++) free(s.reached[i].step);
    free(s.reached);
    free(s.seen);
    for (int i = 0; i < c.count; i++) free(c.paths[i]);
    free(c.paths);
    while (s.h.running_count > 0) forget_invocation(&s.h, 0);
    free(s.h.running);
    json_decref(c.events);
    json_decref(c.fields);
    return status;
}
