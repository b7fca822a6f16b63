/*
 * paths.c — `uniflow paths`: for every state, one shortest way to reach it.
 *
 * A feature is a graph whose nodes are its states. An `initialize` enters an
 * initial state; from a state, a `send` follows the event targets of its `on`
 * (then of the feature's `on`), a `transition` follows `transitions` (a feature
 * without `transitions` has none of these steps), and a state timer whose
 * template names a state of its own feature is a step too: `{"advance_ms": ms}`,
 * which `uniflow run --clock manual` turns into the timer firing. The search is
 * breadth-first, so each path is as short as any; among paths of the same length
 * one without a guard is preferred, then the one with the most sends (a flow is
 * written for its events).
 *
 * A path is *guarded* when a step relies on something the search does not
 * follow: a target with `if` or `call`, a target after a guarded one for the
 * same event (taken only when that guard fails), a timer that may not end where
 * its step says (see add_timers), or a step after which a model binding may move
 * the feature on (its filter matches the step's mutation, and it submits to the
 * feature or calls a handler). An unguarded path, run from an empty model, ends
 * in its state.
 *
 * Payloads are made from defaults, else zero values: every field of the state
 * entered that is not optional gets its default or 0, "", false, [] or {} by its
 * type (null for `any`). A send carries them as its event's payload, which the
 * target takes field by field; a target with a payload template gets none.
 * Instances of a keyed feature use the key "k".
 *
 * Statechart features are searched by paths_chart.c, through their hierarchy.
 */
#include "paths.h"

#include "paths_chart.h"

#include <stdlib.h>
#include <string.h>

/* A step: the action that enters `into` from `from` (-1: from nothing). */
typedef struct step {
    int from;
    int into;
    int guarded;
    json_t *action; /* owned */
} step;

/* The best path found so far to a state, among its unguarded paths or among its
 * guarded ones (a guarded path's best prefix may be a guarded one with more
 * sends): its length, its sends, the step that ends it and which of the two
 * the path before that step is. */
typedef struct best {
    int length; /* 0: not reached */
    int sends;  /* how many of its steps are sends */
    const step *last;
    int before_guarded;
} best;

typedef struct graph {
    const char *feature;
    int keyed;
    json_t *states;       /* name -> declaration */
    const char **names;   /* in declaration order */
    int count;
    step *steps;
    int step_count;
    int step_capacity;
} graph;

static int state_index(const graph *g, const char *name) {
    for (int i = 0; i < g->count; i++) {
        if (strcmp(g->names[i], name) == 0) return i;
    }
    return -1;
}

json_t *paths_zero_value(json_t *declaration) {
    const char *type = json_is_string(declaration) ? json_string_value(declaration)
                                                   : json_string_value(json_object_get(declaration, "type"));
    if (type == NULL) return json_null();
    if (strcmp(type, "number") == 0 || strcmp(type, "integer") == 0) return json_integer(0);
    if (strcmp(type, "string") == 0) return json_string("");
    if (strcmp(type, "boolean") == 0) return json_false();
    if (strcmp(type, "array") == 0) return json_array();
    if (strcmp(type, "object") == 0) return json_object();
    return json_null();
}

/* A state's fields at their defaults or zero values; NULL when there are none. */
static json_t *required_payload(const graph *g, int state) {
    json_t *fields = json_object_get(json_object_get(g->states, g->names[state]), "fields");
    json_t *payload = json_object();
    const char *name;
    json_t *declaration;
    json_object_foreach(fields, name, declaration) {
        json_t *fallback = json_is_object(declaration) ? json_object_get(declaration, "default") : NULL;
        if (fallback) {
            json_object_set(payload, name, fallback);
        } else if (!(json_is_object(declaration) && json_is_true(json_object_get(declaration, "optional")))) {
            json_object_set_new(payload, name, paths_zero_value(declaration));
        }
    }
    if (json_object_size(payload) == 0) {
        json_decref(payload);
        return NULL;
    }
    return payload;
}

static json_t *new_action(const graph *g, const char *kind) {
    json_t *action = json_object();
    json_object_set_new(action, "kind", json_string(kind));
    json_object_set_new(action, "feature", json_string(g->feature));
    if (g->keyed) json_object_set_new(action, "key", json_string("k"));
    return action;
}

static void add_step(graph *g, int from, int into, int guarded, json_t *action) {
    if (g->step_count == g->step_capacity) {
        g->step_capacity = g->step_capacity ? 2 * g->step_capacity : 32;
        step *grown = realloc(g->steps, sizeof(step) * (size_t)g->step_capacity);
        if (grown == NULL) {
            fputs("uniflow paths: out of memory\n", stderr);
            exit(1);
        }
        g->steps = grown;
    }
    g->steps[g->step_count++] = (step){from, into, guarded, action};
}

/* Without `transitions`, every pair is allowed. */
static int allowed(json_t *transitions, const char *from, const char *into) {
    if (transitions == NULL) return 1;
    json_t *list = json_object_get(transitions, from);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (json_is_string(item) && strcmp(json_string_value(item), into) == 0) return 1;
    }
    return 0;
}

/* Adds the sends of `event` from state `from`: its targets in `own` (the state's
 * list) then in `shared` (the feature's), in the order the library tries them. */
static void add_event(graph *g, json_t *transitions, int from, const char *event, json_t *own, json_t *shared) {
    int earlier_guard = 0;
    json_t *lists[2] = {json_object_get(own, event), json_object_get(shared, event)};
    for (int l = 0; l < 2; l++) {
        json_t *targets = lists[l];
        if (targets == NULL) continue;
        size_t count = json_is_array(targets) ? json_array_size(targets) : 1;
        for (size_t t = 0; t < count; t++) {
            json_t *target = json_is_array(targets) ? json_array_get(targets, t) : targets;
            const char *into_name = json_is_string(target) ? json_string_value(target)
                                                           : json_string_value(json_object_get(target, "into"));
            if (into_name == NULL) continue;
            int into = state_index(g, into_name);
            if (into < 0) continue;
            int actualizes = json_is_object(target) && json_is_true(json_object_get(target, "actualize")) && into == from;
            /* A feature-level target that `transitions` does not allow is passed over. */
            if (l == 1 && !actualizes && !allowed(transitions, g->names[from], into_name)) continue;
            int guarded = json_is_object(target) && (json_object_get(target, "if") || json_object_get(target, "call"));
            if (!actualizes && into != from) {
                json_t *action = new_action(g, "send");
                json_object_set_new(action, "event", json_string(event));
                if (!(json_is_object(target) && json_object_get(target, "payload"))) {
                    json_t *payload = required_payload(g, into);
                    if (payload) json_object_set_new(action, "payload", payload);
                }
                add_step(g, from, into, earlier_guard || guarded, action);
            }
            if (!guarded) return; /* taken whenever reached: nothing after it is */
            earlier_guard = 1;
        }
    }
}

static void add_sends(graph *g, json_t *transitions, int from, json_t *shared) {
    json_t *own = json_object_get(json_object_get(g->states, g->names[from]), "on");
    const char *event;
    json_t *value;
    json_object_foreach(own, event, value) add_event(g, transitions, from, event, own, shared);
    json_object_foreach(shared, event, value) {
        if (json_object_get(own, event) == NULL) add_event(g, transitions, from, event, own, shared);
    }
}

static void add_transitions(graph *g, json_t *transitions, int from) {
    if (transitions == NULL) return; /* only `on` targets and timers then */
    for (int into = 0; into < g->count; into++) {
        if (into == from || !allowed(transitions, g->names[from], g->names[into])) continue;
        json_t *action = new_action(g, "transition");
        json_object_set_new(action, "from", json_string(g->names[from]));
        json_object_set_new(action, "into", json_string(g->names[into]));
        json_t *payload = required_payload(g, into);
        if (payload) json_object_set_new(action, "payload", payload);
        add_step(g, from, into, 0, action);
    }
}

/* Whether a rule or template holds a computed part ({"$": ...}). */
static int computed(json_t *value) {
    if (json_is_object(value)) {
        if (json_object_get(value, "$")) return 1;
        const char *key;
        json_t *member;
        json_object_foreach(value, key, member) if (computed(member)) return 1;
    } else if (json_is_array(value)) {
        size_t i;
        json_t *item;
        json_array_foreach(value, i, item) if (computed(item)) return 1;
    }
    return 0;
}

/* Whether timer `i` of a state's `after` fires before timer `j` once both are
 * armed: sooner, or as soon and declared first (they are armed in that order). */
static int fires_before(json_t *timers, size_t i, size_t j) {
    double a = json_number_value(json_object_get(json_array_get(timers, i), "ms"));
    double b = json_number_value(json_object_get(json_array_get(timers, j), "ms"));
    return a < b || (a == b && i < j);
}

/* Whether a state has a timer of 0 ms: entered by a timer step, it fires at the
 * same instant, within the same advance. */
static int has_instant_timer(const graph *g, int state) {
    size_t i;
    json_t *timer;
    json_array_foreach(json_object_get(json_object_get(g->states, g->names[state]), "after"), i, timer) {
        if (json_number_value(json_object_get(timer, "ms")) == 0) return 1;
    }
    return 0;
}

/* The state timers of `from` whose template names states of this feature:
 * firing one is an {"advance_ms": ms} step into each state its actions name
 * (the feature passes through them in turn). The step is guarded when something
 * the search does not follow may decide otherwise: a computed template, more
 * than one action on the feature (a later one moves it on, or an earlier one
 * fails), a timer of the state that fires before it, or a 0 ms timer of the
 * state entered (it fires within the same advance). */
static void add_timers(graph *g, int from) {
    json_t *timers = json_object_get(json_object_get(g->states, g->names[from]), "after");
    size_t i;
    json_t *timer;
    json_array_foreach(timers, i, timer) {
        json_t *submit = json_object_get(timer, "submit");
        int targets[256], count = 0, actions = 0;
        size_t k;
        json_t *action;
        json_array_foreach(submit, k, action) {
            const char *feature = json_string_value(json_object_get(action, "feature"));
            const char *into_name = json_string_value(json_object_get(action, "into"));
            if (feature == NULL || strcmp(feature, g->feature) != 0 || into_name == NULL) continue;
            int state = state_index(g, into_name);
            if (state < 0) continue;
            actions++;
            if (state != from && count < (int)(sizeof targets / sizeof targets[0])) targets[count++] = state;
        }
        int guarded = computed(submit) || actions > 1;
        for (size_t j = 0; j < json_array_size(timers); j++) {
            if (j != i && fires_before(timers, j, i)) guarded = 1;
        }
        for (int t = 0; t < count; t++) {
            json_t *advance = json_object();
            json_object_set(advance, "advance_ms", json_object_get(timer, "ms"));
            add_step(g, from, targets[t], guarded || has_instant_timer(g, targets[t]), advance);
        }
    }
}

/* A filter (docs/filters.md) taken apart: its form and up to four names
 * (feature, state; a TransitionBetween's second feature and state). */
typedef struct filter {
    char form[32];
    char names[4][257];
    int count;
} filter;

static const char *skip_blanks(const char *at) {
    while (*at == ' ' || *at == '\t') at++;
    return at;
}

/* Copies the name at `at` into `name`; returns what follows, NULL if none. */
static const char *read_name(const char *at, char *name, size_t size) {
    size_t n = 0;
    while ((*at >= 'A' && *at <= 'Z') || (*at >= 'a' && *at <= 'z') || *at == '_' || (n > 0 && *at >= '0' && *at <= '9')) {
        if (n + 1 >= size) return NULL;
        name[n++] = *at++;
    }
    name[n] = '\0';
    return n > 0 ? at : NULL;
}

/* Parses `text` into `f`; 0 if it does not parse (the library, which registered
 * it, would have refused it: a caller then assumes the worst). */
static int parse_filter(const char *text, filter *f) {
    f->count = 0;
    const char *at = read_name(skip_blanks(text), f->form, sizeof f->form);
    if (at == NULL) return 0;
    at = skip_blanks(at);
    if (*at == '<') {
        at = skip_blanks(at + 1);
        for (;;) {
            if (f->count == 4 || (at = read_name(at, f->names[f->count], sizeof f->names[0])) == NULL) return 0;
            f->count++;
            at = skip_blanks(at);
            if (*at == '.' || *at == ',') {
                at = skip_blanks(at + 1);
                continue;
            }
            break;
        }
        if (*at != '>') return 0;
        at = skip_blanks(at + 1);
    }
    return *at == '\0';
}

/* Whether the filter `when` matches a step's mutation of `feature`: an
 * initialization into `into` (`from` NULL) or a transition from `from` into
 * `into`. A filter that does not parse matches. */
static int filter_matches(const char *when, const char *feature, const char *from, const char *into) {
    filter f;
    if (!parse_filter(when, &f)) return 1;
    const char *form = f.form;
    int initializes = from == NULL;
    if (strcmp(form, "AnyMutation") == 0) return f.count == 0;
    if (f.count == 0 || strcmp(f.names[0], feature) != 0) return 0;
    const char *state = f.count > 1 ? f.names[1] : "";
    if (strcmp(form, "AnyMutationOf") == 0 || strcmp(form, "AnySettingOf") == 0) return 1;
    if (strcmp(form, "AnyUpdateOf") == 0 || strcmp(form, "Transition") == 0) return !initializes;
    if (strcmp(form, "Initialization") == 0) return initializes;
    if (strcmp(form, "SettingInto") == 0) return strcmp(state, into) == 0;
    if (strcmp(form, "InitializationInto") == 0) return initializes && strcmp(state, into) == 0;
    if (strcmp(form, "TransitionInto") == 0) return !initializes && strcmp(state, into) == 0;
    if (strcmp(form, "TransitionFrom") == 0) return !initializes && strcmp(state, from) == 0;
    if (strcmp(form, "TransitionBetween") == 0) {
        return !initializes && f.count == 4 && strcmp(state, from) == 0 && strcmp(f.names[3], into) == 0;
    }
    return 0; /* actualizations and deinitializations: a path makes none */
}

/* Whether a model binding may move the feature on as soon as a step enters
 * `into` (from `from`, NULL for an initialization): its `when` matches that
 * mutation, and it submits to the feature something other than an actualization,
 * or calls a handler, in `given` or `then` (which may submit anything). With a `given` it may or may
 * not; without, it does: either way the path no longer surely ends there. */
static int left_by_binding(json_t *features, const char *feature, const char *from, const char *into) {
    size_t f;
    json_t *definition;
    json_array_foreach(features, f, definition) {
        size_t b;
        json_t *binding;
        json_array_foreach(json_object_get(definition, "bindings"), b, binding) {
            const char *when = json_string_value(json_object_get(binding, "when"));
            if (when == NULL || !filter_matches(when, feature, from, into)) continue;
            json_t *then = json_object_get(binding, "then");
            if (json_object_get(then, "call") != NULL) return 1;
            size_t g;
            json_t *clause;
            json_array_foreach(json_object_get(binding, "given"), g, clause) {
                if (json_object_get(clause, "call") != NULL) return 1; /* a handler may submit too */
            }
            size_t k;
            json_t *action;
            json_array_foreach(json_object_get(then, "submit"), k, action) {
                const char *target = json_string_value(json_object_get(action, "feature"));
                const char *kind = json_string_value(json_object_get(action, "kind"));
                if (kind != NULL && strcmp(kind, "actualize") == 0) continue; /* stays in the state */
                if (target == NULL || strcmp(target, feature) == 0) return 1;
            }
        }
    }
    return 0;
}

/* Whether a path of `length` with `sends` sends beats what `b` holds (of the
 * same guardedness). */
static int better(const best *b, int length, int sends) {
    if (b->length == 0 || length < b->length) return 1;
    return length == b->length && sends > b->sends;
}

/* found[0] holds the unguarded paths, found[1] the guarded ones. */
static void print_path(const graph *g, best *const found[2], int state, FILE *out) {
    /* Shortest, then unguarded, then most sends. */
    const best *unguarded = &found[0][state], *guarded_one = &found[1][state];
    int kind = unguarded->length == 0 || (guarded_one->length != 0 && guarded_one->length < unguarded->length);
    int length = found[kind][state].length;
    /* The steps, last first, then printed in order. */
    const step **chain = malloc(sizeof(step *) * (size_t)length);
    if (chain == NULL) return;
    int n = 0;
    for (int s = state, k = kind; s >= 0 && n < length;) {
        const best *b = &found[k][s];
        chain[n++] = b->last;
        k = b->before_guarded;
        s = b->last->from;
    }
    fprintf(out, "{\"path\": \"%s.%s\", \"guarded\": %s}\n", g->feature, g->names[state],
            kind ? "true" : "false");
    for (int i = n - 1; i >= 0; i--) {
        char *text = json_dumps(chain[i]->action, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (text) fprintf(out, "%s\n", text);
        free(text);
    }
    free(chain);
}

static int feature_paths(json_t *definition, json_t *features, FILE *out, FILE *err) {
    graph g = {0};
    g.feature = json_string_value(json_object_get(definition, "feature"));
    g.keyed = json_is_string(json_object_get(definition, "instances"))
              && strcmp(json_string_value(json_object_get(definition, "instances")), "keyed") == 0;
    g.states = json_object_get(definition, "states");
    g.count = (int)json_object_size(g.states);
    g.names = calloc((size_t)g.count + 1, sizeof(char *));
    best *found[2] = {calloc((size_t)g.count + 1, sizeof(best)), calloc((size_t)g.count + 1, sizeof(best))};
    if (g.feature == NULL || g.names == NULL || found[0] == NULL || found[1] == NULL) {
        free(g.names);
        free(found[0]);
        free(found[1]);
        fputs("uniflow paths: out of memory or a malformed definition\n", err);
        return 1;
    }
    const char *name;
    json_t *value;
    int i = 0;
    json_object_foreach(g.states, name, value) g.names[i++] = name;

    json_t *transitions = json_object_get(definition, "transitions");
    json_t *initial = json_object_get(definition, "initial");
    json_t *shared = json_object_get(definition, "on");
    for (int s = 0; s < g.count; s++) {
        int is_initial = initial == NULL;
        size_t k;
        json_t *item;
        json_array_foreach(initial, k, item) {
            if (json_is_string(item) && strcmp(json_string_value(item), g.names[s]) == 0) is_initial = 1;
        }
        if (is_initial) {
            json_t *action = new_action(&g, "initialize");
            json_object_set_new(action, "into", json_string(g.names[s]));
            json_t *payload = required_payload(&g, s);
            if (payload) json_object_set_new(action, "payload", payload);
            add_step(&g, -1, s, 0, action);
        }
    }
    for (int s = 0; s < g.count; s++) {
        add_sends(&g, transitions, s, shared);
        add_transitions(&g, transitions, s);
        add_timers(&g, s);
    }
    for (int e = 0; e < g.step_count; e++) {
        const step *s = &g.steps[e];
        if (left_by_binding(features, g.feature, s->from < 0 ? NULL : g.names[s->from], g.names[s->into])) {
            g.steps[e].guarded = 1;
        }
    }

    /* Relaxed until nothing improves: at most one round per state and kind. */
    for (int changed = 1, round = 0; changed && round <= 2 * g.count + 1; round++) {
        changed = 0;
        for (int e = 0; e < g.step_count; e++) {
            const step *s = &g.steps[e];
            const char *kind = json_string_value(json_object_get(s->action, "kind"));
            int is_send = kind != NULL && strcmp(kind, "send") == 0;
            for (int before = 0; before < 2; before++) {
                int length = 1, sends = is_send;
                if (s->from >= 0) {
                    const best *prefix = &found[before][s->from];
                    if (prefix->length == 0) continue;
                    length = prefix->length + 1;
                    sends += prefix->sends;
                } else if (before) {
                    break; /* an initialization has no path before it */
                }
                best *b = &found[before || s->guarded][s->into];
                if (better(b, length, sends)) {
                    *b = (best){length, sends, s, before};
                    changed = 1;
                }
            }
        }
    }

    int unreachable = 0;
    for (int s = 0; s < g.count; s++) {
        if (found[0][s].length == 0 && found[1][s].length == 0) {
            fprintf(err, "uniflow paths: %s.%s: unreachable\n", g.feature, g.names[s]);
            unreachable = 1;
        } else {
            print_path(&g, found, s, out);
        }
    }
    for (int e = 0; e < g.step_count; e++) json_decref(g.steps[e].action);
    free(g.steps);
    free(g.names);
    free(found[0]);
    free(found[1]);
    return unreachable;
}

int print_paths(json_t *definitions, const char *feature, FILE *out, FILE *err) {
    json_t *features = json_object_get(definitions, "features");
    int status = 0, seen = 0;
    size_t i;
    json_t *definition;
    json_array_foreach(features, i, definition) {
        const char *name = json_string_value(json_object_get(definition, "feature"));
        if (feature != NULL && (name == NULL || strcmp(name, feature) != 0)) continue;
        seen = 1;
        int unreachable = is_statechart(definition) ? chart_paths(definition, features, out, err)
                                                    : feature_paths(definition, features, out, err);
        if (unreachable) status = 1;
    }
    if (feature != NULL && !seen) {
        fprintf(err, "uniflow paths: UF_ENOTFOUND: unknown feature '%s'\n", feature);
        return 1;
    }
    return status;
}
