/*
 * uniflow_json.h — libuniflow for C programs that already hold jansson values.
 *
 * A thin layer over uniflow.h (libuniflow_json.so, pkg-config module
 * `uniflow_json`, CMake target uniflow::uniflow_json): each function turns its
 * json_t arguments into the JSON text or the uf_action that the core takes, calls
 * the core, and turns JSON text results back into json_t. It adds no semantics:
 * statuses, uf_last_status() and uf_last_error() are the core's, and everything in
 * uniflow.h about threads and callbacks holds here too.
 *
 * References, as in jansson's own documentation:
 *   - every `json_t *` argument is borrowed: the function neither steals nor keeps
 *     a reference, so the caller's reference count is unchanged after the call;
 *   - every `json_t *` result is a new reference: the caller owns it and releases
 *     it with json_decref().
 *
 * A json_t argument is serialized once (json_dumps, compact) before the core sees
 * it. If that fails (out of memory, a cycle inside the value, or a string that is
 * not UTF-8) the function returns UF_ENOMEM without calling the core, and
 * uf_last_status() and uf_last_error() are not updated. Strings made with
 * jansson's *_nocheck functions must hold valid UTF-8: jansson 2.14 writes an
 * object key that is not as broken text without failing, and the core then reads
 * other JSON than the caller holds (or refuses it as UF_EJSON).
 */
#ifndef UNIFLOW_JSON_H
#define UNIFLOW_JSON_H

#include <stdint.h>

#include <jansson.h>

#include "uniflow.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A subscriber that receives each mutation (as uf_mutation_json() in uniflow.h
 * writes it: {"seq", "kind", "feature", "key" (instances), "old", "new",
 * "action"}) as a jansson object.
 * `mutation` is borrowed: valid until the subscriber returns; json_incref() it to
 * keep it longer. Returns UF_STOP to end the subscription, anything else
 * (UF_KEEP) to keep it. Runs on the thread that processes the action and may
 * submit (queued), subscribe, unsubscribe and read state, as uf_subscriber_fn. */
typedef int (*uf_json_subscriber_fn)(json_t *mutation, void *payload);

/* uf_register() with the definitions as a json_t: one definition object, an array
 * of them, or {"features": [...]}. `definitions` is borrowed. NULL is passed on to
 * the core as NULL (UF_EINVAL); a value of the wrong kind is the core's
 * UF_ESCHEMA. Any thread. */
int uf_json_register(uf_dispatcher *d, json_t *definitions);

/* uf_submit() with the action as a json_t ({"kind": "initialize", "feature": ...}).
 * `action` is borrowed. Returns the core's status (UF_OK, UF_QUEUED inside a
 * callback, UF_REJECTED, or an input error; NULL is UF_EINVAL). Any thread. */
int uf_json_submit(uf_dispatcher *d, json_t *action);

/* The GlobalModel ({"Feature": {"state": "S", "payload": {...}}, ...}) as a new
 * reference, or NULL on failure (uf_last_status()/uf_last_error() say why, unless
 * the text could not be parsed for lack of memory). Release it with json_decref().
 * Any thread. */
json_t *uf_json_state(uf_dispatcher *d);

/* uf_subscribe() with a subscriber that receives the mutation as a borrowed
 * json_t (parsed from uf_mutation_json() for each call). `when` is a filter
 * expression (NULL: AnyMutation). payload_free (may be NULL) runs exactly once:
 * when the subscription ends, when the dispatcher is freed, or at once if the
 * subscription fails (UF_ENOMEM included: the wrapper's own allocation failing
 * leaves uf_last_status() and uf_last_error() as they were). *out_id (out_id may be NULL) receives
 * the subscription's id, for uf_unsubscribe(). If a mutation cannot be converted
 * (out of memory) that one notification is skipped. Any thread. */
int uf_json_subscribe(uf_dispatcher *d, const char *when, uf_json_subscriber_fn fn,
                      void *payload, void (*payload_free)(void *), uint64_t *out_id);

/* Initializes `feature` into the state `into` with `payload` (borrowed; NULL:
 * automatically, allowed only into a state whose fields are all optional or
 * defaulted). Fills a uf_action and calls uf_dispatch(); returns its status. */
int uf_json_initialize(uf_dispatcher *d, const char *feature, const char *into,
                       json_t *payload);

/* Actualizes `feature`, which must be in state `in`, with `payload` (borrowed;
 * it replaces the whole previous payload). Returns uf_dispatch()'s status. */
int uf_json_actualize(uf_dispatcher *d, const char *feature, const char *in,
                      json_t *payload);

/* Transitions `feature` from `from` (NULL: from whatever state it is in, but not
 * into the state it is already in) into `into`, with `payload` (borrowed; NULL:
 * automatically). Returns uf_dispatch()'s status. */
int uf_json_transition(uf_dispatcher *d, const char *feature, const char *from,
                       const char *into, json_t *payload);

/* Deinitializes `feature`, which must be in state `from` (NULL: in any state).
 * Returns uf_dispatch()'s status. */
int uf_json_deinitialize(uf_dispatcher *d, const char *feature, const char *from);

/* ---- Keyed instances (docs/instances.md) ----
 * The same four actions on the instance `key` of a keyed feature; the functions
 * above are these with key NULL (a single feature). A key on a single feature, or
 * none on a keyed one, is the core's UF_EINVAL. */
int uf_json_initialize_instance(uf_dispatcher *d, const char *feature, const char *key,
                                const char *into, json_t *payload);
int uf_json_actualize_instance(uf_dispatcher *d, const char *feature, const char *key,
                               const char *in, json_t *payload);
int uf_json_transition_instance(uf_dispatcher *d, const char *feature, const char *key,
                                const char *from, const char *into, json_t *payload);
int uf_json_deinitialize_instance(uf_dispatcher *d, const char *feature, const char *key,
                                  const char *from);

/* uf_send() with the event's payload as a json_t (borrowed; NULL: none). `key` is
 * NULL for a single feature. Returns the core's status. */
int uf_json_send(uf_dispatcher *d, const char *feature, const char *key, const char *event,
                 json_t *payload);

/* One instance as {"state": "S", "payload": {...}} in *out (a new reference), or
 * NULL in *out when that instance does not live. Returns the core's status
 * (UF_ENOTFOUND for an unknown feature, UF_ESCHEMA for a single feature or a bad
 * key; UF_ENOMEM if the text cannot be parsed for lack of memory). A status,
 * rather than NULL alone, because "no such instance" is an answer, not a failure. */
int uf_json_instance(uf_dispatcher *d, const char *feature, const char *key, json_t **out);

#ifdef __cplusplus
}
#endif

#endif /* UNIFLOW_JSON_H */
