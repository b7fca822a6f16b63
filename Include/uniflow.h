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
 *     doubles are UF_EJSON (so is an object key holding \u0000, which the JSON
 *     engine cannot read); input nested deeper than 256 levels is UF_ESCHEMA.
 *     So that every model and snapshot the library writes reads back, a field's
 *     value nests at most 251 levels and a timer's action 253 (UF_ESCHEMA;
 *     docs/definitions.md).
 *   - Callbacks take their user `payload` last. A `payload_free` (may be NULL) is
 *     called exactly once, when the library no longer needs `payload`.
 *   - NULL where a value is required (a dispatcher, a text, a callback, an out
 *     pointer) is UF_EINVAL, with a message "function: parameter is NULL"; a
 *     payload given with a callback that is refused is released at once (its
 *     payload_free runs). Only uf_dispatcher_free() and uf_free() accept NULL, as
 *     a no-op. Accessors that cannot return a status (uf_context_*, uf_mutation_*,
 *     uf_binding_call_*_json, uf_watch_*, uf_intercepted_*) return NULL or 0 for
 *     a NULL handle.
 *   - Values come back through out-parameters, never through the status.
 *   - Options are one JSON object per constructor (uf_dispatcher_new); an unknown
 *     option or a bad value is UF_EINVAL. Behaviour that differs per call is a
 *     flags argument (UF_TIMER_KEEP).
 *   - Out of memory: every block the library allocates itself is checked; a call
 *     that cannot allocate fails with UF_ENOMEM and changes nothing (a registration
 *     installs nothing, an action applies nothing). Memory the Swift runtime
 *     allocates for the core's own values cannot be checked: running out of it
 *     ends the process, as in any Swift program.
 *   - Documentation beyond this header: docs/ in the source tree (definitions.md,
 *     actions.md, filters.md, bindings.md, processing.md, time.md, instances.md,
 *     watches-and-interceptors.md, events.md, statecharts.md, journal.md, scale-out.md,
 *     c-guide.md).
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
 *
 *   Timers: by default ("timers": "thread") a thread of the library, started when
 *   the first timer is armed, fires them, so callbacks then run on that thread,
 *   under the same rules. This is the one place the library runs user code on a
 *   thread the host did not make: it exists so that timeouts work in a host
 *   without an event loop. Hosts with a loop should use "timers": "host" and
 *   uf_loop_fd()/uf_loop_timeout()/uf_loop_run(): then nothing runs by itself.
 *
 *   Fork: in a child process, a dispatcher made before the fork may only be freed
 *   (its memory is released; no thread is joined, and payload_free callbacks run
 *   only if no thread was inside the dispatcher at the fork); every other call on
 *   it is UF_EMISUSE.
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

/* The one place the version is written: the library, CMake and the Python
 * package read it from here. */
#define UNIFLOW_VERSION "0.2.0"
/* major*1000000 + minor*1000 + patch */
#define UNIFLOW_VERSION_NUMBER 2000

/* The library's version as text (UNIFLOW_VERSION of the build, "0.2.0"); static,
 * never NULL. */
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
/* Partitioned dispatchers (scale-out across processes, docs/scale-out.md): */
#define UF_ENOTOWNER    -13  /* the action's partition is owned by another node, or by none */
#define UF_ECONFLICT    -14  /* the log refused a record: another got there first */
#define UF_EUNAVAILABLE -15  /* the log did not answer; the outcome is unknown until it is read */
#define UF_EGAP         -16  /* a record came before the ones it follows */

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
 *                     (a batch counts each of its actions but always applies
 *                     whole; what it queues past the limit is dropped)
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
 *   "timers":         "thread" (default) | "host" — who fires timers: the library's
 *                     own thread, or the host's loop through uf_loop_run()
 *   "clock":          "monotonic" (default) | "manual" — CLOCK_MONOTONIC, or a
 *                     clock that moves only with uf_clock_advance() (tests). On
 *                     the monotonic clock a delay of 4 s or more (a thousand
 *                     ticks of CLOCK_MONOTONIC_COARSE) counts from that cheaper
 *                     clock and may be off by about a tick (docs/time.md)
 *   "deferred_limit": integer >= 1 (default 100000) — deliveries that may wait for
 *                     uf_loop_run(); past it the oldest is dropped and reported
 *   "partitions":     integer 1-1024, together with
 *   "node":           a name ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes) — a
 *                     partitioned dispatcher, one node of a model shared across
 *                     processes (see "Partitions" below, docs/scale-out.md); one
 *                     without the other is UF_EINVAL
 * An unknown option or a bad value is UF_EINVAL; malformed JSON is UF_EJSON (and
 * text nested deeper than 256 levels UF_ESCHEMA, as everywhere).
 * out must not be NULL; *out is set to NULL on failure. */
int uf_dispatcher_new(uf_dispatcher **out, const char *options_json);

/* Frees the dispatcher, its model, and every registration (calling each
 * payload_free). It first stops the timer thread, waiting for a firing under way:
 * nothing fires after. NULL: no-op. Called from inside one of the dispatcher's own
 * callbacks (timer-caused ones included) it does nothing and sets the thread's
 * last status to UF_EMISUSE: free it after the outer call returns. Must not race
 * with other calls on d. Remove uf_loop_fd()'s descriptor from your loop first. */
void uf_dispatcher_free(uf_dispatcher *d);

/* ------------------------------------------------------------------------------
 * Features, actions, state
 * ------------------------------------------------------------------------------ */

/* Registers feature definitions: one definition object, an array of them, or
 * {"features": [...]}. All are validated together and registered all or nothing.
 * UF_ESCHEMA names the offending element ("features[1].states.X.fields.y: ..."),
 * UF_EEXISTS a name already registered, UF_ENOTFOUND a model binding that names
 * an unknown feature or state in its filter, an unregistered handler
 * ("features[0].bindings[2].then.call: unknown handler 'notify'"), or a state
 * timer's literal action that names an unknown feature or state. */
int uf_register(uf_dispatcher *d, const char *definitions_json);

/* uf_register with the content of a file; UF_EIO if it cannot be read. */
int uf_register_file(uf_dispatcher *d, const char *path);

/* Submits one action as JSON. The forms, with their preconditions:
 *
 *    1 {"kind":"initialize","feature":"F","into":"S"}               F absent, S initial
 *    2   the same + "payload":{...} (or a via callback)               F absent, S initial
 *    3 {"kind":"actualize","feature":"F","in":"S","payload":{...}}  F is in S
 *    4 {"kind":"transition","feature":"F","from":"A","into":"B"}    F is in A, A->B declared
 *    5   the same + "payload":{...} (or a via callback)
 *    6 {"kind":"transition","feature":"F","into":"S","same":false}  F initialized; not in S
 *                                                                   unless "same" is true
 *    7   the same + "payload":{...} (or a via callback)
 *    8 {"kind":"deinitialize","feature":"F"}                        F initialized
 *    9 {"kind":"deinitialize","feature":"F","from":"S"}             F is in S
 *   10 {"kind":"trigger","feature":"F","initialized":false}         F absent
 *   11 {"kind":"trigger","feature":"F","initialized":true}          F initialized
 *   12 {"kind":"trigger","feature":"F","in":"S"}                    F is in S
 *   and {"kind":"send","feature":"F","event":"E","payload":{...}}   F initialized and the
 *       definition's `on` has a target for E (see docs/events.md)
 *
 * Every action may carry "scope", "context" and "id" (strings, echoed in mutations
 * and reports), and, on a keyed feature, must carry "key" (the instance). A
 * trigger may carry "submit": [actions], queued if the trigger is processed.
 * Checks run in this order, the first failure deciding the status: JSON
 * (UF_EJSON), shape (UF_ESCHEMA: unknown keys, wrong types, keys that do not fit
 * the kind, a missing or unexpected key), names (UF_ENOTFOUND), the given payload
 * against its state's fields (UF_ESCHEMA), then, when processed, the precondition
 * (UF_REJECTED), interceptors, the via callback, the payload the via gave.
 * Returns UF_OK when applied (or, for a trigger, processed), UF_QUEUED inside a
 * callback, UF_REJECTED when the precondition does not hold, or an input error. */
int uf_submit(uf_dispatcher *d, const char *action_json);

/* The GlobalModel as JSON: {"Feature": {"state": "S", "payload": {...}}, ...},
 * initialized features only, in registration order. A keyed feature is an object
 * of its live instances in creation order ({"Download": {"a_pdf": {"state": ..,
 * "payload": ..}, ...}}), absent while none lives. *out_json is freed with
 * uf_free. */
int uf_state_get(uf_dispatcher *d, char **out_json);

/* One feature as {"state": "S", "payload": {...}} (a keyed feature: the object of
 * its instances); *out_json is NULL (and the status UF_OK) when the feature is
 * registered but not initialized (no instance lives); UF_ENOTFOUND when it is not
 * registered. *out_json is freed with uf_free. */
int uf_feature_get(uf_dispatcher *d, const char *feature, char **out_json);

/* One instance of a keyed feature as {"state": "S", "payload": {...}}; *out_json
 * is NULL (and the status UF_OK) when that instance does not live. UF_ENOTFOUND
 * for an unknown feature; UF_ESCHEMA for a single feature or a key that breaks
 * the key rules. *out_json is freed with uf_free. */
int uf_instance_get(uf_dispatcher *d, const char *feature, const char *key, char **out_json);

/* Whether a state is active in a feature's instance: *out_active becomes 1 or 0.
 * `path` names the state by its ancestry (`Active.Playing`), or by a bare name
 * that is unique in the feature; on a statechart feature any level counts (a
 * compound or parallel state is active with its children), on a flat feature
 * it is whether the feature is in that state. `key` names the instance of a
 * keyed feature and is NULL for a single one. A feature or instance that is
 * absent has nothing active (0, UF_OK). UF_ENOTFOUND for an unknown feature or
 * state; UF_ESCHEMA for a bare name that several states carry (the message
 * lists them); UF_EINVAL for a NULL argument, a key on a single feature or none
 * on a keyed one. Any thread; from inside a callback it sees the model as the
 * callback does. */
int uf_state_active(uf_dispatcher *d, const char *feature, const char *key, const char *path, int *out_active);

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
    UF_ACTION_TRIGGER = 5,
    UF_ACTION_SEND = 6
} uf_action_kind;

typedef struct uf_action {
    unsigned int size;          /* sizeof(uf_action): lets the struct grow */
    uf_action_kind kind;
    const char *feature;
    const char *from;           /* transition/deinitialize "from", trigger "in"; NULL: none */
    const char *into;           /* initialize/transition "into", actualize "in" */
    const char *payload_json;   /* NULL: automatically (or via); a send's event payload */
    int same;                   /* transition into: allow the same state */
    int uninitialized;          /* trigger without "in": 0 = initialized, 1 = absent */
    const char *scope, *context, *id;
    uf_via_fn via;              /* NULL: none */
    void *via_payload;
    void (*via_payload_free)(void *);
    /* Added in 0.2.0 (a caller built against 0.1.0 passes the smaller size, and
     * these read as NULL): */
    const char *key;            /* the instance of a keyed feature; NULL for a single one */
    const char *event;          /* a send's event name; NULL for the other kinds */
} uf_action;

#define UF_ACTION_INIT { sizeof(uf_action), (uf_action_kind)0, NULL, NULL, NULL, NULL, \
                         0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/* Submits the action described by the struct, with the same semantics as
 * uf_submit. Everything needed is copied before it returns. `size` may be that of
 * the first released struct (it ends after via_payload_free), of this one, or
 * anything between that ends on a field; fields beyond size read as zero. Any
 * other size is UF_EINVAL; so is an unknown kind or a field that does not fit the
 * kind (a `from` on an actualize, `same` together with `from`, a key on a single
 * feature or none on a keyed one, a key that breaks the key rules, an event on
 * anything but a send, a via on a send). With a via, via_payload_free runs
 * exactly once, whatever the outcome; with via NULL, via_payload and
 * via_payload_free are not used. */
int uf_dispatch(uf_dispatcher *d, const uf_action *action);

/* uf_dispatch that never waits for another thread: when another thread holds d
 * (processing an action, reading its state, or the timer thread between two
 * firings), it returns UF_EBUSY at once, having done nothing
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
/* The instance's key (a keyed feature); NULL for a single feature. Valid during
 * the callback. */
const char *uf_context_key(const uf_context *ctx);
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
 * On a keyed feature, F[key] in place of F names one instance (which need not live
 * yet), e.g. TransitionInto<Download[a_pdf].Completed>; F alone matches all of them.
 * A filter that does not parse (the empty string included: only NULL means
 * AnyMutation), a TransitionBetween across two features or two keys, or [key] on
 * a single feature is UF_ESCHEMA; an unknown feature or state is UF_ENOTFOUND.
 * *out_id (out_id may be NULL) receives an id that is never 0 and never reused.
 * payload_free runs exactly once: when the subscription ends, when the dispatcher
 * is freed, or at once if uf_subscribe fails; never while fn runs.
 * A subscription added during a notification (by the mutation's bindings, their
 * handlers and reports included) is first called for the next mutation; one
 * removed is not called again. */
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
/* {"seq":..,"kind":..,"feature":..,"key":..,"old":..,"new":..,"action":{..}}
 * ("key" only for an instance of a keyed feature). */
const char *uf_mutation_json(const uf_mutation *m);
/* Counts applied mutations of the dispatcher from 1. */
uint64_t uf_mutation_seq(const uf_mutation *m);
/* 1 for a mutation installed from a record (uf_record_apply: written by another
 * node, or this node's own record read back from the log), 0 for one this
 * dispatcher processed. */
int uf_mutation_foreign(const uf_mutation *m);
/* The instance's key; NULL for a single feature. */
const char *uf_mutation_key(const uf_mutation *m);
/* A deferred delivery (uf_subscribe_deferred): how many deliveries to this
 * subscription were dropped just before this one (deferred_limit); 0 otherwise.
 * When it is not 0, resynchronize (read the state) instead of trusting the
 * sequence of mutations. */
uint64_t uf_mutation_dropped(const uf_mutation *m);

/* ------------------------------------------------------------------------------
 * Reporting
 * ------------------------------------------------------------------------------ */

/* Receives a report as JSON:
 *   {"event": "processed"|"rejected"|"dropped"|"binding_processed"|
 *             "binding_rejected"|"binding_skipped"|"timer_fired"|"timer_rejected",
 *    "action": {"kind":..,"feature":..,"key":.., state keys, "event":..,
 *               "scope","context","id","timer":..},
 *    "status": "UF_REJECTED", "reason": "...", "binding": "...",
 *    "timer": "id" or null, "subscription": id, "seq": n, "watch": id}
 * (keys that do not apply are absent). A timer's reports carry "timer" (null for
 * an anonymous API timer); a dropped deferred delivery "subscription" and "seq";
 * a watch's rule error is a binding_rejected with "watch". report_json is valid
 * during the call. */
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

/* ------------------------------------------------------------------------------
 * Services: what a statechart's states `invoke` (docs/statecharts.md)
 * ------------------------------------------------------------------------------ */

typedef struct uf_invocation uf_invocation;    /* valid during the call */

/* A service's start or stop. `start` runs after the action whose macrostep entered
 * an invoking state (and after its mutations were announced), for each such state
 * still active; `stop` runs the same way for each one left before its service
 * finished. Both run on the processing thread and may submit (queued), read, and
 * settle the invocation (uf_service_done/_error), from inside `start` too. A
 * `start` that returns < 0 settles it as an error; what `stop` returns is
 * ignored. Keep side effects that cannot be repeated here, not in `call` effects. */
typedef int (*uf_service_fn)(const uf_invocation *inv, void *payload);

/* Registers a service under a unique name (UF_EEXISTS otherwise; UF_EINVAL for a
 * name outside [A-Za-z_][A-Za-z0-9_]*). `stop` may be NULL. Definitions whose
 * `invoke` names a service are checked when they are registered (UF_ENOTFOUND):
 * register services first. payload_free runs when the dispatcher is freed, or
 * at once if registration fails. Any thread. */
int uf_register_service(uf_dispatcher *d, const char *name, uf_service_fn start,
                        uf_service_fn stop, void *payload, void (*payload_free)(void *));

/* The invocation's feature, instance key (NULL for a single feature), id (the
 * invoke's `id`, or "<index>.<path of the state>"), input as JSON ("null" when
 * the invoke has none) and serial (unique per dispatcher, never reused). The
 * strings are valid while start or stop runs. */
const char *uf_invocation_feature(const uf_invocation *inv);
const char *uf_invocation_key(const uf_invocation *inv);
const char *uf_invocation_id(const uf_invocation *inv);
const char *uf_invocation_input_json(const uf_invocation *inv);
uint64_t    uf_invocation_serial(const uf_invocation *inv);

/* Settles an invocation: sends its instance `xstate.done.actor.<id>` with payload
 * {"output": output_json} (NULL: null), or `xstate.error.actor.<id>` with
 * {"error": error_json}, which the invoke's onDone / onError take; an error no
 * transition takes makes the instance failed. Processed at once when the
 * dispatcher is idle, queued from inside its callbacks (UF_QUEUED). A serial that
 * is not running (settled, stopped, never started) is UF_OK and reported as
 * `dropped`. UF_EJSON for JSON that does not parse. On a journaling dispatcher
 * the invocation's end is written first: UF_EIO when it cannot be, and the
 * invocation runs on. Any thread, any time. */
int uf_service_done(uf_dispatcher *d, uint64_t serial, const char *output_json);
int uf_service_error(uf_dispatcher *d, uint64_t serial, const char *error_json);

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
 * the committed model (a feature the batch began or ended has active bindings
 * where one action after another would); what they queue runs after that. Actions carry JSON
 * payloads only (no via callbacks). UF_EMISUSE inside a callback. */
int uf_submit_batch(uf_dispatcher *d, const char *actions_json_array);

/* Replaces the model with one in uf_state_get's format (same definitions),
 * validated first: an unknown feature or state, a payload that does not fit, or a
 * malformed instance changes nothing. Restored features' model bindings become
 * active and their state timers are armed afresh, for their full delay; no
 * mutations are sent, no interceptor is called. Statechart services that ran
 * are stopped, and those the model lists as an instance's "invocations" start
 * (new serials, the listed input); an invoking state whose service is not
 * listed runs nothing. Journaled when the dispatcher journals. UF_EMISUSE
 * inside a callback. */
int uf_state_restore(uf_dispatcher *d, const char *model_json);

/* Installs the mutations of a journal written by a dispatcher with the same
 * definitions (option "journal"), the way uf_state_restore does: no via
 * callbacks, no bindings, no notifications. The model ends as the journaling
 * dispatcher's did: each dispatcher that opened the journal is a session that
 * started from an empty model, so replay starts over where a session begins
 * (replay first, then go on journaling, to continue a model across runs; a
 * dispatcher replaying the file it journals to stops where its own session
 * begins). It ends with the timers the journaling dispatcher had armed: API
 * timers keep their deadline; state timers are derived from the mutations' "at"
 * times, by their on_restore. A torn last line (no newline: the writer crashed) is skipped
 * and reported as a `dropped` report without an action; any other bad line, or a
 * journal of other definitions, fails the call (UF_ESCHEMA/UF_EJSON naming the
 * line, UF_ENOTFOUND for a name the definitions do not have) and changes nothing.
 * UF_EIO if it cannot be read; UF_EMISUSE inside a callback. */
int uf_replay_file(uf_dispatcher *d, const char *journal_path);

/* The model and the armed timers:
 *   {"clock": "monotonic"|"manual", "model": {..as uf_state_get..},
 *    "timers": [{"id": .., "kind": "state"|"api", "due_at": ms since the Unix
 *                epoch (the manual reading on a manual clock), "remaining_ms": ..,
 *                "ms": .., "on_restore": "fire"|"resume"|"restart",
 *                "action": {..} (API timers)}, ...]}
 * *out_json is freed with uf_free. */
int uf_snapshot_get(uf_dispatcher *d, char **out_json);

/* Installs a snapshot's model as uf_state_restore does (no mutations, no
 * interceptors) and arms its timers again, replacing every armed timer, each by
 * its on_restore: "fire" keeps the wall-clock deadline (one that passed while the
 * host was down fires at the next chance), "resume" keeps the remaining time,
 * "restart" arms the full delay. API timers always "fire". A snapshot of the other
 * clock kind uses remaining_ms for "fire". A timer due at restore never fires
 * inside this call. Invalid input (a timer naming no state timer of the model
 * included) changes nothing. UF_EMISUSE inside a callback. */
int uf_snapshot_restore(uf_dispatcher *d, const char *snapshot_json);

/* ------------------------------------------------------------------------------
 * Time: the clock and timers (docs/time.md)
 * ------------------------------------------------------------------------------ */

/* Flag for uf_submit_after/uf_dispatch_after: if the id is armed, keep that timer
 * (throttle). Without it, arming an armed id replaces it (debounce). */
#define UF_TIMER_KEEP 1

/* Submits the action (as uf_submit would) after delay_ms, measured on the
 * dispatcher's clock from now (from the firing timer's deadline inside a timer's
 * cascade: chains do not drift). The action is checked at once up to the payload
 * given in its JSON, as uf_submit checks it (those errors are returned and nothing
 * is armed), and it may nest at most 253 levels (a snapshot writes it three levels
 * down; UF_ESCHEMA); its precondition is checked when it falls due. timer_id (NULL:
 * anonymous, cannot be cancelled) is 1 to 256 bytes and must not contain ".after["
 * (UF_EINVAL): a state timer's ids look like that. A delay of 0 is due at once but
 * never fires inside the call that arms it; a delay over 2^53 ms (as for a state
 * timer's "ms") and unknown flags are UF_EINVAL. With "timers": "thread", a timer
 * thread that cannot be started is UF_ENOMEM and arms nothing (a snapshot restore or
 * a replay that would arm timers fails the same way). Any thread; inside a callback
 * too (it is armed at once). */
int uf_submit_after(uf_dispatcher *d, const char *action_json, uint64_t delay_ms,
                    const char *timer_id, unsigned flags);

/* uf_submit_after for a uf_action (copied; a via is UF_EINVAL). */
int uf_dispatch_after(uf_dispatcher *d, const uf_action *action, uint64_t delay_ms,
                      const char *timer_id, unsigned flags);

/* Disarms an API timer: once this returns UF_OK it never fires, even if it was
 * already due. UF_ENOTFOUND if no timer with that id is armed; UF_EMISUSE for a
 * state timer's id (leave the state instead). One exception: an interceptor's
 * cancel (or arming) during a batch belongs to the batch, and a batch that rolls
 * back puts every timer back as it was. */
int uf_timer_cancel(uf_dispatcher *d, const char *timer_id);

/* The armed timers, soonest first: [{"id": "save", "due_in_ms": 420, "ms": 500},
 * ...] (anonymous API timers have "id": null; state timers are listed with their
 * ids, "Feature.State.after[i]" or "Feature[key].State.after[i]"). *out_json is
 * freed with uf_free. */
int uf_timers_get(uf_dispatcher *d, char **out_json);

/* "clock": "manual" only: moves the clock forward by ms (0 allowed), firing on the
 * calling thread, in deadline order (arm order at one deadline), every timer due by
 * then, timers already due included; the clock reads each timer's deadline while
 * it fires. The clock never passes 2^53 ms: an ms that would take it there is
 * UF_EINVAL, and nothing fires. UF_EMISUSE on a monotonic dispatcher, or inside
 * a callback. */
int uf_clock_advance(uf_dispatcher *d, uint64_t ms);

/* The dispatcher's clock: milliseconds since it was made (monotonic), or the
 * manual reading. */
int uf_clock_now(uf_dispatcher *d, uint64_t *out_ms);

/* ------------------------------------------------------------------------------
 * The host's event loop (docs/time.md)
 * ------------------------------------------------------------------------------ */

/* uf_subscribe whose deliveries wait for the host: each matching mutation is kept
 * when it is applied and delivered by uf_loop_run(), on the thread that calls it,
 * in mutation order (subscription order within one mutation). The accessors give
 * the mutation as applied. UF_STOP and uf_unsubscribe work as usual and drop the
 * subscription's waiting deliveries. At most "deferred_limit" deliveries wait:
 * past it the oldest is dropped and reported (a `dropped` report with status
 * UF_ENOMEM, "subscription" and "seq"), and uf_mutation_dropped() on the next
 * delivery to that subscription says how many. */
int uf_subscribe_deferred(uf_dispatcher *d, const char *when, uf_subscriber_fn fn,
                          void *payload, void (*payload_free)(void *), uint64_t *out_id);

/* A file descriptor for the host's loop (poll, epoll, GLib, libuv, asyncio's
 * add_reader): readable while uf_loop_run() has work (deliveries or deferred
 * watch values waiting, a host timer due), level-triggered. Made at the first
 * call, O_CLOEXEC, owned and closed by uf_dispatcher_free(): remove it from your
 * loop before freeing; never close it yourself. UF_EIO if it cannot be made. */
int uf_loop_fd(uf_dispatcher *d, int *out_fd);

/* What to pass to poll(): 0 when work is due, else the milliseconds until the
 * next host timer (rounded up, so that a wait that long finds it due; clamped to
 * INT_MAX), or -1 when nothing is armed or waiting. With "timers": "thread" or a
 * manual clock only deliveries count. */
int uf_loop_timeout(uf_dispatcher *d, int *out_ms);

/* Does the loop's work: fires the host timers due now (each an outer call), then
 * makes the deliveries waiting when it started plus those its timers caused, then
 * the deferred watches' values. What those callbacks submit is processed before it
 * returns; the deliveries that causes wait for the next call (the descriptor stays
 * readable). *out_done (out_done may be NULL) = timers fired + deliveries made.
 * A call like any other: from another thread while one runs it waits; inside a
 * callback it is UF_EMISUSE. */
int uf_loop_run(uf_dispatcher *d, uint64_t *out_done);

/* ------------------------------------------------------------------------------
 * Watches (docs/watches-and-interceptors.md)
 * ------------------------------------------------------------------------------ */

typedef struct uf_watch_event uf_watch_event;

/* Called with a watch's new value. Returns UF_STOP to end the watch, anything
 * else (UF_KEEP) to keep it. May submit (queued), subscribe and read. */
typedef int (*uf_watch_fn)(const uf_watch_event *w, void *payload);

/* Follows a value selected from the model and calls fn only when it changes
 * (numbers by value, objects whatever their key order). select_json is a JsonLogic
 * rule over {"model": <the GlobalModel>} (not JSON: UF_EJSON; a malformed rule:
 * UF_ESCHEMA). fn is called once before uf_watch returns, with the current value;
 * after that the rule is evaluated once each outer call has finished (its whole
 * cascade; a batch once, after it commits; a restore and a replay too), over the
 * final model, and only when a feature its literal "model.F" paths name changed
 * (a computed path: any change). A rule error makes the value null and is reported
 * (binding_rejected with "watch"). Ids share the subscriptions' space:
 * uf_unsubscribe ends a watch. payload_free as for uf_subscribe. */
int uf_watch(uf_dispatcher *d, const char *select_json, uf_watch_fn fn, void *payload,
             void (*payload_free)(void *), uint64_t *out_id);

/* uf_watch delivered by uf_loop_run() (its first call too), coalesced: at most
 * one value per watch waits, the latest; one equal to the last delivered is not
 * delivered. */
int uf_watch_deferred(uf_dispatcher *d, const char *select_json, uf_watch_fn fn, void *payload,
                      void (*payload_free)(void *), uint64_t *out_id);

/* The new value as JSON. Valid until fn returns. */
const char *uf_watch_value_json(const uf_watch_event *w);
/* The value delivered before, as JSON; NULL on the first call. Valid until fn returns. */
const char *uf_watch_previous_json(const uf_watch_event *w);
uint64_t uf_watch_id(const uf_watch_event *w);
uf_dispatcher *uf_watch_dispatcher(const uf_watch_event *w);

/* ------------------------------------------------------------------------------
 * Interceptors (docs/watches-and-interceptors.md)
 * ------------------------------------------------------------------------------ */

typedef struct uf_intercepted uf_intercepted;

/* Sees each action about to be applied: after its input checks and its
 * precondition held (for a send, once its target is chosen), before its via;
 * wherever it came from (outside, the queue, bindings, trigger submits, timers).
 * Returns 0 to go on, > 0 to veto (the action is rejected, UF_REJECTED, with the
 * reason "intercepted by <id>" or the one uf_intercepted_set_reason gave; nothing
 * changes), < 0 to fail it (UF_ECALLBACK). May submit (queued), subscribe and
 * read. Inside a batch a veto fails the whole batch, and what interceptors queued
 * is dropped with it. Restores, replays and journals are never intercepted. */
typedef int (*uf_interceptor_fn)(uf_intercepted *a, void *payload);

/* Adds an interceptor for one feature's actions (feature NULL: every feature's),
 * called in registration order. An unknown feature is UF_ENOTFOUND. To end it,
 * call uf_unsubscribe(d, id) (from inside it: uf_intercepted_dispatcher(a),
 * uf_intercepted_id(a)). payload_free as for uf_subscribe. */
int uf_intercept(uf_dispatcher *d, const char *feature, uf_interceptor_fn fn, void *payload,
                 void (*payload_free)(void *), uint64_t *out_id);

/* Accessors; strings are valid until the interceptor returns. */
uf_action_kind uf_intercepted_kind(const uf_intercepted *a);
const char *uf_intercepted_feature(const uf_intercepted *a);
/* The instance's key; NULL for a single feature. */
const char *uf_intercepted_key(const uf_intercepted *a);
/* The state entered or actualized (a send: its chosen target); for a
 * deinitialization or a trigger, the state it acts in; NULL when absent. */
const char *uf_intercepted_state(const uf_intercepted *a);
/* The action as JSON in the form uf_submit takes, made on first request: a
 * "payload" only when the action carried one (as it will apply, defaults filled
 * in; a send: its event's payload), a send shows the target its definition chose
 * as "into", and an action a timer
 * submitted carries "timer" (its id, or null), as mutations' "action" does:
 * drop that key to submit the text again. */
const char *uf_intercepted_json(const uf_intercepted *a);
/* This interceptor's id. */
uint64_t uf_intercepted_id(const uf_intercepted *a);
uf_dispatcher *uf_intercepted_dispatcher(const uf_intercepted *a);
/* The reason a veto (a return > 0) reports instead of "intercepted by <id>".
 * UF_EINVAL for NULL. */
int uf_intercepted_set_reason(uf_intercepted *a, const char *reason);

/* ------------------------------------------------------------------------------
 * Events (docs/events.md)
 * ------------------------------------------------------------------------------ */

/* Sends an event: {"kind":"send","feature":feature,"key":key,"event":event,
 * "payload":payload_json} (key NULL for a single feature; payload_json NULL: {}).
 * The definition's `on` chooses the target: no target is UF_REJECTED naming the
 * state and the event. As uf_dispatch otherwise. */
int uf_send(uf_dispatcher *d, const char *feature, const char *key, const char *event,
            const char *payload_json);

/* ------------------------------------------------------------------------------
 * Partitions (docs/scale-out.md)
 *
 * A dispatcher made with the options "partitions": N and "node": NAME is one node
 * of a model that several processes share. Each instance of a keyed feature lives
 * in partition fnv1a32(key) mod N (FNV-1a, 32 bits, over the key's bytes); every
 * single feature lives in the global partition, numbered N. Only the owner of a
 * partition changes it: an action whose instance lives in a partition this node
 * does not own is UF_ENOTOWNER, checked after the action's input checks and before
 * its precondition, reported as "rejected", and changes nothing; its message names
 * the partition and its owner. The actions one outer call processes (its cascade,
 * a batch) stay in the partition of its first action: a queued action of another
 * partition is UF_ENOTOWNER for that action alone; a batch that mixes partitions
 * is UF_ENOTOWNER, naming the index of the first action of another partition. A
 * partitioned dispatcher starts owning nothing. Reads answer from this node's copy
 * of every partition. On a dispatcher that is not partitioned these functions are
 * UF_EMISUSE.
 * ------------------------------------------------------------------------------ */

/* Where a feature's instance lives: *p = its partition (key NULL for a single
 * feature: the global partition, N). UF_ENOTFOUND for an unknown feature;
 * UF_EINVAL for a missing key on a keyed feature, a key on a single feature, or a
 * key that breaks the key rules (docs/instances.md). */
int uf_partition_of(uf_dispatcher *d, const char *feature, const char *key, uint32_t *p);

/* Records. Everything one outer call changes (an action and its cascade, a batch,
 * a timer firing, arming or cancelling an API timer, a claim, a release) is one
 * record of one partition, a JSON object
 * written in one piece:
 *   {"uniflow_record": 1, "fingerprint": "<16 hex digits, as the journal's>",
 *    "partitions": N, "partition": p, "version": v, "prev": "<fnv1a32 of the
 *    previous record's bytes, 8 hex digits>" | null, "node": NAME,
 *    "incarnation": "<16 hex digits>", "at": ms, "lines": [...],
 *    "after": {...} (records of the global partition only)}
 * "lines" are the journal's lines (docs/journal.md), each mutation line with the
 * action object of its reports, and the timer lines of what the call's timers did
 * (followers keep a partition's timers from them; only the owner fires them, and a
 * firing whose record is refused is undone and tried again a second later); a
 * claim record has "claim": NAME and a release
 * record "release": NAME instead. "version" counts a partition's records from 1.
 * Each partitioned dispatcher draws a random incarnation when it is made: a node
 * restarted under the same name is another owner. */
typedef struct uf_record uf_record;
/* Returns UF_OK when the log has the record, UF_ECONFLICT when the log refused it
 * because another record got there first, UF_EUNAVAILABLE when the log did not
 * answer (any other value fails the call with UF_ECALLBACK). */
typedef int (*uf_record_fn)(const uf_record *r, void *payload);

/* Installs the record sink: called once per record, on the processing thread,
 * before anything of the outer call is visible. On anything but UF_OK the whole
 * outer call is rolled back (the model, its timers and the partition's version
 * are as before, one "rejected" report carries the status, and the call returns
 * it). Model bindings and interceptors run while the call is processed;
 * subscribers, watches and the reporter see its mutations after the record is
 * accepted, in order; actions they queue run as further outer calls, one record
 * each, before the call returns. Via callbacks, interceptors and handlers that
 * ran are not undone: side effects belong after the commit. Without a sink every
 * record is accepted at once. fn NULL removes the sink; a replaced sink's
 * payload_free runs at once (so does this one's when the call fails), and the
 * last one's when the dispatcher is freed. */
int uf_record_sink(uf_dispatcher *d, uf_record_fn fn, void *payload, void (*payload_free)(void *));
/* The record's JSON text, its partition and its version; valid during the sink's
 * call. NULL / UF_EINVAL for a NULL record or out pointer. */
const char *uf_record_json(const uf_record *r);
int uf_record_partition(const uf_record *r, uint32_t *p);
int uf_record_version(const uf_record *r, uint64_t *v);

/* Applies a record of this model read from the log: a record with a version at or
 * below the partition's is already applied (UF_OK, nothing changes: duplicates
 * are harmless); one above version+1 is UF_EGAP and changes nothing; one whose
 * "prev" is not the hash of the last record applied is UF_ECONFLICT (the log's
 * history diverged) and changes nothing; another fingerprint or another number
 * of partitions is UF_ESCHEMA; a malformed record is UF_EJSON or UF_ESCHEMA,
 * naming what is wrong, and changes nothing. A claim record makes its node and
 * incarnation the partition's owner (ending this node's ownership when it is
 * another's); a release leaves it without one. The lines are installed the way a
 * replay installs a journal's (no via, no interceptors, no preconditions, no model
 * bindings; timer lines arm and drop this node's copies of the writer's timers),
 * then subscribers and watches are told of each mutation
 * (uf_mutation_foreign() is 1 for them), with the JSON the writer's subscribers
 * saw but for "seq". UF_EMISUSE inside a callback of the dispatcher. */
int uf_record_apply(uf_dispatcher *d, const char *record_json);

/* A snapshot of partition p: {"uniflow_record": 1, "fingerprint", "partitions",
 * "partition": p, "version": v, "prev": <the hash of the last record it includes>,
 * "snapshot": {"model": <the partition's features or instances, as uf_state_get
 * writes them>, "timers": [{"kind": "state", "id", "due_at"} | {"kind": "api",
 * "serial", "id", "ms", "due_at", "action"}, ...]}, "owner": {"node",
 * "incarnation"} | null, "after" (the global partition)}. uf_record_apply of a
 * snapshot whose version is above the partition's replaces the partition with it:
 * no mutation is notified, the partition's timers become the snapshot's, each due
 * at its wall-clock "due_at" (a snapshot without "timers" arms its state timers
 * afresh), and uf_partitions_get shows the new version; one at or below it changes
 * nothing. Logs use snapshots to start new
 * nodes quickly and to drop old records. *json is freed with uf_free. */
int uf_partition_snapshot(uf_dispatcher *d, uint32_t p, char **json);

/* Makes this node the owner of partition p (0 to N, N the global partition;
 * another number is UF_EINVAL) by writing a claim record through the sink: a
 * claim the sink refuses (UF_ECONFLICT: the log moved on; apply what is new, then
 * claim again) changes nothing. Claiming a partition this node owns writes a new
 * claim. UF_EMISUSE inside a callback of the dispatcher. */
int uf_partition_claim(uf_dispatcher *d, uint32_t p);

/* Stops owning partition p by writing a release record: it has no owner then.
 * UF_ENOTOWNER when this node does not own it; UF_EINVAL for a number that is no
 * partition; UF_EMISUSE inside a callback of the dispatcher. */
int uf_partition_release(uf_dispatcher *d, uint32_t p);

/* The partitions as JSON: [{"p": 0, "version": 12, "owner": "a" | null,
 * "mine": true}, ...], the global partition last. *json is freed with uf_free. */
int uf_partitions_get(uf_dispatcher *d, char **json);

/* ------------------------------------------------------------------------------
 * Graphs
 * ------------------------------------------------------------------------------ */

/* Draws registered features as Graphviz DOT: states as nodes (initial states
 * marked), declared transitions as edges, model bindings as dashed edges labelled
 * with their scenario, from the mutation they wait for to the feature they act
 * on; event targets as edges labelled "on E [spec]" (drawn instead of the
 * declared transitions they take; a feature's own `on` starts at a dot tied to
 * its cluster's border); state timers as dotted edges labelled "after 30 s" (the
 * delay in the largest of h, min, s and ms that holds it whole: "after 250 ms",
 * "after 90 s", "after 5 min") to the state each action they submit enters, else
 * to the border of the feature it acts on. A keyed feature's label is marked
 * [key]. feature NULL: all features. UF_ENOTFOUND for an unknown feature.
 * *out_dot is freed with uf_free. */
int uf_graph_dot(uf_dispatcher *d, const char *feature, char **out_dot);

#ifdef __cplusplus
}
#endif

#endif /* UNIFLOW_H */
