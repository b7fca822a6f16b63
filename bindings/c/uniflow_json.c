/*
 * uniflow_json.c — the jansson wrapper of uniflow_json.h.
 *
 * Each function converts, calls the core and converts back; nothing else. No
 * function keeps or steals a reference to a json_t it is given (the tests in
 * bindings/c/tests check the reference counts).
 */
#include "uniflow_json.h"

#include <stdlib.h>

/* Serializes a borrowed value once, compactly. JSON_ENCODE_ANY lets a value of the
 * wrong kind (a number where an object belongs) reach the core, which names the
 * error (UF_ESCHEMA) like it does for text. NULL stays NULL. */
static int dump_json(json_t *value, char **out) {
    *out = NULL;
    if (value == NULL) return UF_OK;
    *out = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    return *out != NULL ? UF_OK : UF_ENOMEM;
}

/* json_dumps allocates with jansson's allocator, which the program may have
 * replaced (json_set_alloc_funcs): release with the matching free. */
static void free_json_text(char *text) {
    json_malloc_t malloc_fn;
    json_free_t free_fn;
    if (text == NULL) return;
    json_get_alloc_funcs(&malloc_fn, &free_fn);
    free_fn(text);
}

/* Parses JSON text the core wrote. It is valid JSON, but strings in payloads may
 * hold "\u0000", which jansson refuses without JSON_ALLOW_NUL: with it, the only
 * failure left is memory. */
static json_t *load_core_json(const char *text) {
    return json_loads(text, JSON_ALLOW_NUL, NULL);
}

int uf_json_register(uf_dispatcher *d, json_t *definitions) {
    char *text;
    int status = dump_json(definitions, &text);
    if (status != UF_OK) return status;
    status = uf_register(d, text);
    free_json_text(text);
    return status;
}

int uf_json_submit(uf_dispatcher *d, json_t *action) {
    char *text;
    int status = dump_json(action, &text);
    if (status != UF_OK) return status;
    status = uf_submit(d, text);
    free_json_text(text);
    return status;
}

json_t *uf_json_state(uf_dispatcher *d) {
    char *text = NULL;
    json_t *state;
    if (uf_state_get(d, &text) != UF_OK) return NULL;
    state = load_core_json(text);
    uf_free(text);
    return state;
}

/* ---- Subscriptions -------------------------------------------------------------- */

/* What a uf_json_subscribe() subscription carries into the core's callback. */
typedef struct json_subscription {
    uf_json_subscriber_fn fn;
    void *payload;
    void (*payload_free)(void *);
} json_subscription;

static int json_subscription_call(const uf_mutation *m, void *payload) {
    json_subscription *sub = payload;
    json_t *mutation = load_core_json(uf_mutation_json(m));
    int result;
    if (mutation == NULL) return UF_KEEP; /* out of memory: this notification is skipped */
    result = sub->fn(mutation, sub->payload);
    json_decref(mutation);
    return result;
}

/* The core calls this exactly once (subscription ended, dispatcher freed, or
 * uf_subscribe failed), so the user's payload_free also runs exactly once. */
static void json_subscription_free(void *payload) {
    json_subscription *sub = payload;
    if (sub->payload_free != NULL) sub->payload_free(sub->payload);
    free(sub);
}

int uf_json_subscribe(uf_dispatcher *d, const char *when, uf_json_subscriber_fn fn,
                      void *payload, void (*payload_free)(void *), uint64_t *out_id) {
    json_subscription *sub;
    if (fn == NULL) {
        /* Let the core refuse it (UF_EINVAL with its message); it also runs
         * payload_free at once. */
        return uf_subscribe(d, when, NULL, payload, payload_free, out_id);
    }
    sub = malloc(sizeof *sub);
    if (sub == NULL) {
        if (payload_free != NULL) payload_free(payload);
        return UF_ENOMEM;
    }
    sub->fn = fn;
    sub->payload = payload;
    sub->payload_free = payload_free;
    return uf_subscribe(d, when, json_subscription_call, sub, json_subscription_free, out_id);
}

/* ---- Actions without JSON text -------------------------------------------------- */

/* Dispatches `action` with `payload` (borrowed, may be NULL) as its payload_json. */
static int dispatch_with_payload(uf_dispatcher *d, uf_action *action, json_t *payload) {
    char *text;
    int status = dump_json(payload, &text);
    if (status != UF_OK) return status;
    action->payload_json = text;
    status = uf_dispatch(d, action);
    free_json_text(text);
    return status;
}

int uf_json_initialize_instance(uf_dispatcher *d, const char *feature, const char *key,
                                const char *into, json_t *payload) {
    uf_action action = UF_ACTION_INIT;
    action.kind = UF_ACTION_INITIALIZE;
    action.feature = feature;
    action.key = key;
    action.into = into;
    return dispatch_with_payload(d, &action, payload);
}

int uf_json_actualize_instance(uf_dispatcher *d, const char *feature, const char *key,
                               const char *in, json_t *payload) {
    uf_action action = UF_ACTION_INIT;
    action.kind = UF_ACTION_ACTUALIZE;
    action.feature = feature;
    action.key = key;
    action.into = in;
    return dispatch_with_payload(d, &action, payload);
}

int uf_json_transition_instance(uf_dispatcher *d, const char *feature, const char *key,
                                const char *from, const char *into, json_t *payload) {
    uf_action action = UF_ACTION_INIT;
    action.kind = UF_ACTION_TRANSITION;
    action.feature = feature;
    action.key = key;
    action.from = from;
    action.into = into;
    return dispatch_with_payload(d, &action, payload);
}

int uf_json_deinitialize_instance(uf_dispatcher *d, const char *feature, const char *key,
                                  const char *from) {
    uf_action action = UF_ACTION_INIT;
    action.kind = UF_ACTION_DEINITIALIZE;
    action.feature = feature;
    action.key = key;
    action.from = from;
    return uf_dispatch(d, &action);
}

int uf_json_initialize(uf_dispatcher *d, const char *feature, const char *into,
                       json_t *payload) {
    return uf_json_initialize_instance(d, feature, NULL, into, payload);
}

int uf_json_actualize(uf_dispatcher *d, const char *feature, const char *in,
                      json_t *payload) {
    return uf_json_actualize_instance(d, feature, NULL, in, payload);
}

int uf_json_transition(uf_dispatcher *d, const char *feature, const char *from,
                       const char *into, json_t *payload) {
    return uf_json_transition_instance(d, feature, NULL, from, into, payload);
}

int uf_json_deinitialize(uf_dispatcher *d, const char *feature, const char *from) {
    return uf_json_deinitialize_instance(d, feature, NULL, from);
}

int uf_json_send(uf_dispatcher *d, const char *feature, const char *key, const char *event,
                 json_t *payload) {
    char *text;
    int status = dump_json(payload, &text);
    if (status != UF_OK) return status;
    status = uf_send(d, feature, key, event, text);
    free_json_text(text);
    return status;
}

int uf_json_instance(uf_dispatcher *d, const char *feature, const char *key, json_t **out) {
    char *text = NULL;
    int status;
    if (out == NULL) return uf_instance_get(d, feature, key, NULL); /* the core's UF_EINVAL */
    *out = NULL;
    status = uf_instance_get(d, feature, key, &text);
    if (status != UF_OK || text == NULL) return status;
    *out = load_core_json(text);
    uf_free(text);
    return *out != NULL ? UF_OK : UF_ENOMEM;
}
