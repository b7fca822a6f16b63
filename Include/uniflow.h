/*
 * uniflow.h — the public C API of libuniflow.
 *
 * libuniflow is a predictable state container: one Dispatcher owns a GlobalModel
 * made of features (finite state machines declared in JSON); the model changes only
 * through actions whose preconditions hold, and every change (a mutation) is sent to
 * the subscribers and the reporter.
 *
 * This header is the whole API: a function that is not declared here is not API,
 * and the shared library exports exactly these functions.
 *
 * Conventions
 *   - Every function returning int returns a status (UF_OK, UF_QUEUED or a negative
 *     error), except uf_version_number().
 *   - On failure a function sets the calling thread's last status and message
 *     (uf_last_status(), uf_last_error()). Successful calls never change them.
 *   - Strings returned as `char *` are owned by the caller and freed with uf_free().
 *     Strings returned as `const char *` are borrowed; each function says how long
 *     they stay valid.
 *   - Every text argument is NUL-terminated UTF-8. JSON text is parsed strictly:
 *     duplicate keys, integers outside 64 bits and numbers outside the finite
 *     doubles are UF_EJSON; input nested deeper than 256 levels is UF_ESCHEMA.
 *   - Callbacks take their user `payload` last. A `payload_free` (may be NULL) is
 *     called exactly once, when the library no longer needs `payload`.
 *   - NULL where a value is required (a dispatcher, a text, a callback, an out
 *     pointer) is UF_EINVAL, with a message naming the argument; only
 *     uf_dispatcher_free() and uf_free() accept NULL, as a no-op. Accessors that
 *     cannot return a status (uf_context_*, uf_mutation_*, uf_binding_call_*_json)
 *     return NULL or 0 for a NULL handle.
 *
 * Threads
 *   Every function may be called from any thread. A dispatcher processes one action
 *   at a time: a call from another thread waits until the dispatcher is idle (no
 *   fairness is promised). On the thread that is processing — that is, inside any
 *   callback of the dispatcher, payload_free included — submits are checked at once
 *   and then queued (UF_QUEUED) to run after the current action, before the outer
 *   call returns; reads, subscribe, unsubscribe and register act immediately.
 *   A callback must not wait for another thread that uses the same dispatcher, and
 *   two dispatchers whose callbacks submit to each other from two threads can
 *   deadlock.
 */
#ifndef UNIFLOW_H
#define UNIFLOW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------------ */

#define UNIFLOW_VERSION "0.1.0"
/* major*1000000 + minor*1000 + patch */
#define UNIFLOW_VERSION_NUMBER 1000

/* The library's version as text ("0.1.0"); static, never NULL. */
const char *uf_version(void);
/* The library's version as a number (UNIFLOW_VERSION_NUMBER of the build). */
int uf_version_number(void);

/* ------------------------------------------------------------------------------
 * Status codes and errors
 * ------------------------------------------------------------------------------ */

#define UF_OK         0   /* done */
#define UF_QUEUED     1   /* accepted inside a callback; processed after the current action */
#define UF_REJECTED  -1   /* precondition not met, or a via callback declined; nothing changed */
#define UF_EINVAL    -2   /* bad argument: NULL where a value is required, unknown option */
#define UF_EJSON     -3   /* text is not valid JSON; the message gives line and column */
#define UF_ESCHEMA   -4   /* valid JSON of the wrong shape (definition, action, payload, filter) */
#define UF_ENOTFOUND -5   /* unknown feature, state, handler or subscription */
#define UF_EEXISTS   -6   /* a feature or handler with that name is already registered */
#define UF_ECALLBACK -7   /* a user callback reported failure */
#define UF_ELOOP     -8   /* the cascade limit was reached */
#define UF_EMISUSE   -9   /* call not allowed here (e.g. freeing a dispatcher inside its callback) */
#define UF_ENOMEM   -10   /* out of memory */
#define UF_EIO      -11   /* a file could not be read (or the journal written) */
#define UF_EBUSY    -12   /* uf_dispatch_try only: another thread is processing; nothing done */

/* The status of the last failed call on this thread; 0 before any failure.
 * A failing void function (a refused uf_dispatcher_free) sets it too. */
int uf_last_status(void);

/* The message of the last failed call on this thread, never NULL ("" before any
 * failure), e.g. "FileDownloading is in state InProgress, not Starting".
 * Only a failing call replaces it; failures of queued actions inside a cascade go
 * to the reporter instead. Valid until the next failing call on this thread. */
const char *uf_last_error(void);

/* The code's name ("UF_REJECTED"); static. An unknown code gives "UF_UNKNOWN". */
const char *uf_status_name(int status);

/* A static sentence describing the code. */
const char *uf_strerror(int status);

/* Frees a string (or any block) the library returned as `char *`. NULL: no-op. */
void uf_free(void *p);

/* ------------------------------------------------------------------------------
 * Dispatcher
 * ------------------------------------------------------------------------------ */

typedef struct uf_dispatcher uf_dispatcher;

/* Creates a dispatcher with an empty model.
 * options_json (NULL: defaults) is an object with any of:
 *   "reporting":      "none" (default) | "short" | "verbose" — the built-in reporter
 *                     prints to stderr
 *   "max_cascade":    integer >= 1 (default 100000) — actions processed within one
 *                     outer call, the outer action and rejected ones included
 *   "report_skipped": boolean (default false) — send binding_skipped reports to a
 *                     custom reporter
 *   "journal":        path — append every registration (a header line with the
 *                     definitions' fingerprint) and every applied mutation to this
 *                     JSON-lines file, one flushed line each (a batch is one line);
 *                     an existing journal is appended to (a torn last line is cut
 *                     off first). UF_EIO if it cannot be opened. Lines are written
 *                     before what they describe is applied: an action, batch,
 *                     restore or registration whose line cannot be written (a
 *                     full disk) fails with UF_EIO and changes nothing.
 *   "journal_sync":   boolean (default false) — also fsync after every line
 * An unknown option or a bad value is UF_EINVAL; malformed JSON is UF_EJSON.
 * out must not be NULL; *out is set to NULL on failure. */
int uf_dispatcher_new(uf_dispatcher **out, const char *options_json);

/* Frees the dispatcher, its model, and every subscription (calling each
 * payload_free). NULL: no-op. Called from inside one of the dispatcher's own
 * callbacks it does nothing and sets the thread's last status to UF_EMISUSE:
 * free it after the outer call returns. Must not race with other calls on d. */
void uf_dispatcher_free(uf_dispatcher *d);

/* ------------------------------------------------------------------------------
 * Features, actions, state
 * ------------------------------------------------------------------------------ */

/* Registers feature definitions: one definition object, an array of them, or
 * {"features": [...]}. All are validated together and registered all or nothing.
 * UF_ESCHEMA names the offending element ("features[1].states.X.fields.y: ..."),
 * UF_EEXISTS a name already registered, UF_ENOTFOUND a model binding that names
 * an unknown feature or state in its filter, or an unregistered handler
 * ("features[0].bindings[2].then.call: unknown handler 'notify'"). */
int uf_register(uf_dispatcher *d, const char *definitions_json);

/* uf_register with the content of a file; UF_EIO if it cannot be read. */
int uf_register_file(uf_dispatcher *d, const char *path);

/* Submits one action as JSON (see the README for the twelve forms).
 * Returns UF_OK when applied (or, for a trigger, processed), UF_QUEUED inside a
 * callback, UF_REJECTED when the precondition does not hold, or an input error. */
int uf_submit(uf_dispatcher *d, const char *action_json);

/* The GlobalModel as JSON: {"Feature": {"state": "S", "payload": {...}}, ...},
 * initialized features only, in registration order. *out_json is freed with
 * uf_free. */
int uf_state_get(uf_dispatcher *d, char **out_json);

/* One feature as {"state": "S", "payload": {...}}; *out_json is NULL (and the
 * status UF_OK) when the feature is registered but not initialized; UF_ENOTFOUND
 * when it is not registered. *out_json is freed with uf_free. */
int uf_feature_get(uf_dispatcher *d, const char *feature, char **out_json);

/* {"features": [...]}: every definition as registered, in registration order.
 * *out_json is freed with uf_free. */
int uf_definitions_get(uf_dispatcher *d, char **out_json);

/* ------------------------------------------------------------------------------
 * Via callbacks
 * ------------------------------------------------------------------------------ */

typedef struct uf_context uf_context;

/* Runs after the action's precondition held and before its mutation is built; sees
 * the state before the action. Returns 0 to go on, > 0 to decline (UF_REJECTED),
 * < 0 to fail (UF_ECALLBACK). To enter or actualize a state with required fields it
 * must call uf_context_become() successfully. It may submit (queued) and read. */
typedef int (*uf_via_fn)(uf_context *ctx, void *payload);

/* ------------------------------------------------------------------------------
 * Actions without JSON text (the hot path)
 * ------------------------------------------------------------------------------ */

typedef enum uf_action_kind {
    UF_ACTION_INITIALIZE = 1,
    UF_ACTION_ACTUALIZE = 2,
    UF_ACTION_TRANSITION = 3,
    UF_ACTION_DEINITIALIZE = 4,
    UF_ACTION_TRIGGER = 5
} uf_action_kind;

typedef struct uf_action {
    unsigned int size;          /* sizeof(uf_action): lets the struct grow */
    uf_action_kind kind;
    const char *feature;
    const char *from;           /* transition/deinitialize "from", trigger "in"; NULL: none */
    const char *into;           /* initialize/transition "into", actualize "in" */
    const char *payload_json;   /* NULL: automatically (or via) */
    int same;                   /* transition into: allow the same state */
    int uninitialized;          /* trigger without "in": 0 = initialized, 1 = absent */
    const char *scope, *context, *id;
    uf_via_fn via;              /* NULL: none */
    void *via_payload;
    void (*via_payload_free)(void *);
} uf_action;

#define UF_ACTION_INIT { sizeof(uf_action), (uf_action_kind)0, NULL, NULL, NULL, NULL, \
                         0, 0, NULL, NULL, NULL, NULL, NULL, NULL }

/* Submits the action described by the struct, with the same semantics as
 * uf_submit. Everything needed is copied before it returns. A size smaller than
 * the first released struct or larger than this library's is UF_EINVAL (fields
 * beyond size read as zero); so is an unknown kind or a field that does not fit the
 * kind (a `from` on an actualize, `same` together with `from`).
 * via_payload_free runs exactly once, whatever the outcome. */
int uf_dispatch(uf_dispatcher *d, const uf_action *action);

/* uf_dispatch that never waits for another thread: when another thread is
 * processing an action of d, it returns UF_EBUSY at once, having done nothing
 * (via_payload_free still runs once; the thread's last error is not touched, as
 * this is no failure: call again, or call uf_dispatch to wait). Everything else is
 * uf_dispatch: on the processing thread it queues, when d is idle it processes.
 * For hosts that hold a lock of their own which the dispatcher's callbacks may
 * need (Python's GIL): they may keep it through this call, since the call never
 * waits for a thread that could be waiting for that lock. */
int uf_dispatch_try(uf_dispatcher *d, const uf_action *action);

/* uf_submit with a via callback. A "payload" in the JSON together with a callback
 * is UF_EINVAL. payload_free (may be NULL) runs exactly once when the action is
 * finished: applied, rejected, dropped or refused at once. */
int uf_submit_via(uf_dispatcher *d, const char *action_json, uf_via_fn via,
                  void *payload, void (*payload_free)(void *));

/* The action's feature name. Valid during the callback. */
const char *uf_context_feature(const uf_context *ctx);
/* The feature's current state; NULL when the feature is absent. Valid during the
 * callback. */
const char *uf_context_state(const uf_context *ctx);
/* The feature's current payload as JSON; NULL when absent. Valid during the
 * callback. */
const char *uf_context_payload_json(const uf_context *ctx);
/* The dispatcher running the callback. */
uf_dispatcher *uf_context_dispatcher(const uf_context *ctx);
/* Sets the payload of the state being entered or actualized. Checked at once:
 * UF_ESCHEMA if it does not fit the state (the action then fails with
 * UF_ESCHEMA unless a later become succeeds); UF_EMISUSE on a trigger or a
 * deinitialization. */
int uf_context_become(uf_context *ctx, const char *payload_json);

/* ------------------------------------------------------------------------------
 * Subscriptions (observer bindings)
 * ------------------------------------------------------------------------------ */

typedef struct uf_mutation uf_mutation;

#define UF_KEEP 0
#define UF_STOP 1   /* returned by a subscriber: unsubscribe me */

/* Called for each matching mutation, after the model bindings. Returns UF_STOP to
 * end the subscription, anything else to keep it. May submit (queued), subscribe,
 * unsubscribe (itself included) and read state. */
typedef int (*uf_subscriber_fn)(const uf_mutation *m, void *payload);

/* Subscribes fn to the mutations matched by the filter `when` (NULL: AnyMutation):
 *   AnyMutation, AnyMutationOf<F>, AnyUpdateOf<F>, AnySettingOf<F>,
 *   SettingInto<F.S>, Initialization<F>, Actualization<F>, Transition<F>,
 *   Deinitialization<F>, InitializationInto<F.S>, ActualizationIn<F.S>,
 *   TransitionInto<F.S>, TransitionFrom<F.S>, TransitionBetween<F.A, F.B>,
 *   DeinitializationFrom<F.S>.
 * A filter that does not parse (the empty string included: only NULL means
 * AnyMutation) or a TransitionBetween across two features is UF_ESCHEMA; an
 * unknown feature or state is UF_ENOTFOUND. *out_id (out_id may be NULL) receives an id that is never 0 and
 * never reused. payload_free runs exactly once: when the subscription ends, when
 * the dispatcher is freed, or at once if uf_subscribe fails; never while fn runs.
 * A subscription added during a notification is first called for the next
 * mutation; one removed is not called again. */
int uf_subscribe(uf_dispatcher *d, const char *when, uf_subscriber_fn fn, void *payload,
                 void (*payload_free)(void *), uint64_t *out_id);

/* Ends a subscription; UF_ENOTFOUND for an unknown or already ended id. */
int uf_unsubscribe(uf_dispatcher *d, uint64_t id);

typedef enum uf_mutation_kind {
    UF_MUTATION_INITIALIZATION = 1,
    UF_MUTATION_ACTUALIZATION = 2,
    UF_MUTATION_TRANSITION = 3,
    UF_MUTATION_DEINITIALIZATION = 4
} uf_mutation_kind;

/* Accessors for the mutation a subscriber receives. Strings are valid until the
 * subscriber returns. */
uf_dispatcher *uf_mutation_dispatcher(const uf_mutation *m);
/* The id of the subscription being called. */
uint64_t uf_mutation_subscription_id(const uf_mutation *m);
uf_mutation_kind uf_mutation_kind_of(const uf_mutation *m);
const char *uf_mutation_feature(const uf_mutation *m);
const char *uf_mutation_old_state(const uf_mutation *m);        /* NULL on initialization */
const char *uf_mutation_new_state(const uf_mutation *m);        /* NULL on deinitialization */
const char *uf_mutation_old_payload_json(const uf_mutation *m); /* NULL on initialization */
const char *uf_mutation_new_payload_json(const uf_mutation *m); /* NULL on deinitialization */
/* {"seq":..,"kind":..,"feature":..,"old":..,"new":..,"action":{..}} */
const char *uf_mutation_json(const uf_mutation *m);
/* Counts applied mutations of the dispatcher from 1. */
uint64_t uf_mutation_seq(const uf_mutation *m);

/* ------------------------------------------------------------------------------
 * Reporting
 * ------------------------------------------------------------------------------ */

/* Receives a report as JSON:
 *   {"event": "processed"|"rejected"|"dropped"|"binding_processed"|
 *             "binding_rejected"|"binding_skipped",
 *    "action": {"kind":..,"feature":.., state keys, "scope","context","id"},
 *    "status": "UF_REJECTED", "reason": "...", "binding": "..."}
 * (keys that do not apply are absent). report_json is valid during the call. */
typedef void (*uf_report_fn)(const char *report_json, void *payload);

/* Replaces the reporter; fn NULL goes back to the built-in reporter (which prints
 * according to the "reporting" option; a payload given with a NULL fn is not kept:
 * its payload_free runs at once). The replaced reporter's payload_free runs at
 * once (after it returns, when replaced from inside itself). */
int uf_set_reporter(uf_dispatcher *d, uf_report_fn fn, void *payload,
                    void (*payload_free)(void *));

/* ------------------------------------------------------------------------------
 * Handlers for model bindings, and JsonLogic
 * ------------------------------------------------------------------------------ */

typedef struct uf_binding_call uf_binding_call;

/* A host function that model bindings name with {"call": "name"}.
 * In a `given` clause it returns 1 (holds), 0 (stops the binding: skipped) or a
 * negative value (fails the binding: binding_rejected, UF_ECALLBACK); it may call
 * uf_binding_call_set_output first to make that JSON the next clause's `given`.
 * In `then` it returns 0 or more to succeed, a negative value to fail. It runs on
 * the processing thread and may submit (queued) and read. */
typedef int (*uf_handler_fn)(uf_binding_call *call, void *payload);

/* Registers a handler under a unique name (UF_EEXISTS otherwise). Bindings are
 * checked against the handlers when their feature is registered: register
 * handlers first. payload_free runs when the dispatcher is freed, or at once if
 * registration fails. */
int uf_register_handler(uf_dispatcher *d, const char *name, uf_handler_fn fn,
                        void *payload, void (*payload_free)(void *));

/* The mutation that triggered the binding (as uf_mutation_json). Valid while the
 * handler runs. */
const char *uf_binding_call_mutation_json(const uf_binding_call *call);
/* The current `given` value as JSON; "null" if none. Valid while the handler runs. */
const char *uf_binding_call_given_json(const uf_binding_call *call);
/* Makes json the next clause's `given`. UF_EJSON if it does not parse; UF_EMISUSE
 * in a `then` clause. */
int uf_binding_call_set_output(uf_binding_call *call, const char *json);
/* The dispatcher running the binding. */
uf_dispatcher *uf_binding_call_dispatcher(const uf_binding_call *call);

/* Evaluates a JsonLogic rule (every operation of the specification except `log`,
 * with json-logic-js 2.0.5's results, JavaScript coercions included) over
 * data_json (NULL means null). *out_json receives the result as JSON, freed with
 * uf_free. A JavaScript `undefined` result is null.
 *
 * The rule is checked first, as a model binding's rules are at registration, and
 * refused with UF_ESCHEMA (the message names the operator and its place, e.g.
 * "operator '==' takes 2 arguments, got 1 at and[1]") when a one-key object
 * anywhere in it, evaluated or not:
 *   - names an unknown operator, `log`, or a dotted name ("a.b");
 *   - gives an operator a number of arguments it cannot use: `==` `===` `!=`
 *     `!==` `>` `>=` `/` `%` `in` `map` `filter` `all` `none` `some` and
 *     `missing_some` take 2; `!` and `!!` 1; `<` `<=` `substr` `reduce` 2 or 3;
 *     `-` 1 or 2; `var` at most 2; `or` `and` `*` `min` `max` at least 1
 *     (json-logic-js would fill missing arguments with undefined);
 *   - gives `map` `filter` `reduce` `all` `none` `some` a list, or `missing_some`
 *     keys, that is a literal other than an array.
 * At run time, a non-finite result (a division by zero) and what json-logic-js
 * throws on are UF_ESCHEMA too. Strings are UTF-8: a `substr` or index that
 * splits a surrogate pair gives U+FFFD where JavaScript keeps a lone surrogate.
 * Any thread; no dispatcher needed. */
int uf_logic_apply(const char *rule_json, const char *data_json, char **out_json);

/* ------------------------------------------------------------------------------
 * Transactions, snapshots, journals
 * ------------------------------------------------------------------------------ */

/* Applies a JSON array of actions in order, all or nothing. The first that fails
 * rolls the model back; the call returns its status, uf_last_error() names its
 * index ("batch[2]: ..."), one `rejected` report is sent and nobody else is
 * notified. On success bindings and subscribers see each mutation in order, with
 * the committed model; what they queue runs after that. Actions carry JSON
 * payloads only (no via callbacks). UF_EMISUSE inside a callback. */
int uf_submit_batch(uf_dispatcher *d, const char *actions_json_array);

/* Replaces the model with one in uf_state_get's format (same definitions),
 * validated first: an unknown feature or state, or a payload that does not fit,
 * changes nothing. Restored features' model bindings become active; no mutations
 * are sent. Journaled when the dispatcher journals. UF_EMISUSE inside a callback. */
int uf_state_restore(uf_dispatcher *d, const char *model_json);

/* Installs the mutations of a journal written by a dispatcher with the same
 * definitions (option "journal"), the way uf_state_restore does: no via
 * callbacks, no bindings, no notifications. The model ends as the journaling
 * dispatcher's did: each dispatcher that opened the journal is a session that
 * started from an empty model, so replay starts over where a session begins
 * (replay first, then go on journaling, to continue a model across runs; a
 * dispatcher replaying the file it journals to stops where its own session
 * begins). A torn last line (no newline: the writer crashed) is skipped
 * and reported as a `dropped` report without an action; any other bad line, or a
 * journal of other definitions, fails the call (UF_ESCHEMA/UF_EJSON naming the
 * line) and changes nothing. UF_EIO if it cannot be read; UF_EMISUSE inside a
 * callback. */
int uf_replay_file(uf_dispatcher *d, const char *journal_path);

/* ------------------------------------------------------------------------------
 * Graphs
 * ------------------------------------------------------------------------------ */

/* Draws registered features as Graphviz DOT: states as nodes (initial states
 * marked), declared transitions as edges, model bindings as dashed edges labelled
 * with their scenario, from the mutation they wait for to the feature they act
 * on. feature NULL: all features. UF_ENOTFOUND for an unknown feature.
 * *out_dot is freed with uf_free. */
int uf_graph_dot(uf_dispatcher *d, const char *feature, char **out_dot);

#ifdef __cplusplus
}
#endif

#endif /* UNIFLOW_H */
