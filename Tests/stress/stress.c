/*
 * stress.c — 8 threads against one dispatcher, at random, for at least a given
 * time and until it has done each kind of thing it must (below).
 *
 * Each thread loops until the run is over and picks at random: uf_dispatch and
 * uf_dispatch_try (UF_EBUSY when another thread is processing) of prepared
 * structs, uf_submit of JSON, uf_submit_via and uf_dispatch_try with a via that
 * becomes a payload, declines or fails, uf_subscribe (subscribers that submit, stop
 * themselves or end other subscriptions), uf_unsubscribe (ids of its own, of other
 * threads, stale ones), reads, and input that must be refused.
 *
 * At the end it checks the three promises:
 *   1. every submitted action is applied, rejected or reported: the reporter's
 *      processed + rejected + dropped reports equal the actions the library
 *      accepted (outer calls that returned UF_OK, UF_REJECTED or UF_ECALLBACK,
 *      submits inside callbacks that returned UF_QUEUED, and what triggers' submit
 *      lists and processed bindings queued), and processed reports of non-trigger
 *      actions equal the mutations subscribers saw;
 *   2. the final model equals what the applied mutations imply (a shadow model
 *      kept by an AnyMutation subscriber, byte for byte against uf_feature_get),
 *      and seq counts from 1 without a gap;
 *   3. no callback runs after its payload_free, and every payload_free runs exactly
 *      once (payloads are never freed during the run, only marked, so a late call
 *      is seen rather than being a use after free; they are freed at the end).
 *
 * Environment: UNIFLOW_STRESS_SECONDS (the least length of the run, default 3; a
 * positive number), UNIFLOW_STRESS_THREADS (8; 1 to 64), UNIFLOW_STRESS_SEED
 * (default: the time; printed, so a failing run can be repeated, as far as thread
 * scheduling allows). A bad value is an error (exit 2), not a silent default.
 *
 * A stress test must never pass having tested nothing: the run goes on past
 * UNIFLOW_STRESS_SECONDS until it has seen a mutation, a rejection, a
 * subscription, a tracked payload and a call of a tracked callback, so that a
 * slow run (sanitizers, a loaded machine) checks as much as a fast one. At a cap
 * (10 times UNIFLOW_STRESS_SECONDS, plus 120 s) it stops and fails, naming what
 * never happened.
 *
 * Every tracked payload is kept until the end (about 40 bytes each, some 40,000
 * a second on 8 threads): a run of 10 minutes holds about 1 GB. A long campaign is
 * better many runs (Tests/stress/run's UNIFLOW_STRESS_REPEAT) than one long one.
 *
 * State the callbacks touch (shadow model, report counters) is plain memory on
 * purpose: the header promises that a dispatcher runs one callback at a time, so
 * under ThreadSanitizer any race on it is a bug in the library.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uniflow.h"

#define STRESS_NAME "stress"
#include "stress_common.h"

enum { MAX_THREADS = 64, FEATURES = 4 };

static uf_dispatcher *d;
static atomic_int problems;

static void problem(const char *what, const char *detail) {
    if (atomic_fetch_add(&problems, 1) < 20) fprintf(stderr, "stress: PROBLEM: %s %s\n", what, detail ? detail : "");
}

static const char definitions[] =
    "{\"features\": ["
    "{\"feature\":\"Toggle\",\"states\":{\"Off\":{},\"On\":{}}},"
    "{\"feature\":\"Counter\",\"states\":{\"Counting\":{\"fields\":{\"n\":\"integer\",\"by\":{\"type\":\"string\",\"default\":\"\"}}}}},"
    "{\"feature\":\"Stage\",\"states\":{\"A\":{},\"B\":{},\"C\":{\"fields\":{\"note\":{\"type\":\"string\",\"optional\":true}}}},"
    " \"initial\":[\"A\"],\"transitions\":{\"A\":[\"B\"],\"B\":[\"C\"],\"C\":[\"A\",\"C\"]}},"
    "{\"feature\":\"Mirror\",\"states\":{\"Seen\":{\"fields\":{\"count\":{\"type\":\"integer\",\"default\":0}}}},"
    " \"bindings\":[{\"scenario\":\"count toggles\",\"when\":\"TransitionInto<Toggle.On>\","
    "   \"then\":{\"submit\":[{\"kind\":\"actualize\",\"feature\":\"Mirror\",\"in\":\"Seen\",\"payload\":"
    "     {\"count\":{\"$\":{\"+\":[{\"var\":\"model.Mirror.payload.count\"},1]}}}}]}}]}"
    "]}";

static const char *const feature_names[FEATURES] = {"Toggle", "Counter", "Stage", "Mirror"};

/* ---- payloads that must not be used after payload_free --------------------------- */

typedef struct tracked {
    unsigned magic;
    atomic_int freed;  /* payload_free calls */
    atomic_int calls;  /* callback calls */
    int submits;       /* for subscribers: submit from inside? */
    int stop_after;    /* for subscribers: UF_STOP after this many calls (0: never) */
    int unsubscribe_other;
} tracked;

#define TRACKED_MAGIC 0x57AC4EDu

/* Every payload handed to the library, kept to the end: a table of chunks that
 * are allocated when first needed (lock-free, so that the test adds no lock
 * between the threads that could hide a race from ThreadSanitizer), large enough
 * for any run (CHUNKS * CHUNK = 2^28 payloads). */
enum { CHUNK = 1 << 16, CHUNKS = 1 << 12 };
static _Atomic(tracked **) payload_chunks[CHUNKS];
static atomic_int payload_count;

static tracked **payload_slot(int i) {
    _Atomic(tracked **) *chunk = &payload_chunks[i / CHUNK];
    tracked **slots = atomic_load(chunk);
    if (!slots) {
        tracked **fresh = (tracked **)calloc(CHUNK, sizeof *fresh);
        if (!fresh) abort();
        tracked **expected = NULL;
        if (atomic_compare_exchange_strong(chunk, &expected, fresh)) slots = fresh;
        else free(fresh), slots = expected;
    }
    return &slots[i % CHUNK];
}

/* A zeroed block of `size` bytes that starts with a tracked. */
static tracked *new_tracked(size_t size) {
    tracked *t = (tracked *)calloc(1, size);
    if (!t) abort();
    t->magic = TRACKED_MAGIC;
    int i = atomic_fetch_add(&payload_count, 1);
    if (i >= CHUNK * CHUNKS) {
        fprintf(stderr, "stress: more than %d payloads: run shorter (UNIFLOW_STRESS_SECONDS)\n", CHUNK * CHUNKS);
        abort();
    }
    *payload_slot(i) = t;
    return t;
}

static void release_tracked(void *p) {
    tracked *t = (tracked *)p;
    if (t->magic != TRACKED_MAGIC) problem("payload_free with a foreign payload", NULL);
    if (atomic_fetch_add(&t->freed, 1) != 0) problem("payload_free ran twice", NULL);
}

/* Calls of all tracked callbacks, read during the run. Its updates (and those of
 * mutations_seen and rejections_seen) are relaxed: they order nothing, so they
 * cannot hide from ThreadSanitizer a race between two callbacks. */
static atomic_ulong tracked_calls;

static void called(tracked *t, const char *what) {
    if (t->magic != TRACKED_MAGIC) problem(what, "got a foreign payload");
    if (atomic_load(&t->freed)) problem(what, "ran after its payload_free");
    atomic_fetch_add(&t->calls, 1);
    atomic_fetch_add_explicit(&tracked_calls, 1, memory_order_relaxed);
}

/* ---- what the callbacks see (one callback at a time: plain memory) -------------- */

static struct {
    char state[FEATURES][32];
    char payload[FEATURES][256];
    int present[FEATURES];
    uint64_t seq;
    unsigned long mutations;
    unsigned long processed, processed_triggers, rejected, dropped, binding_reports, other_reports;
    unsigned long library_queued; /* actions the library queued itself (see reporter) */
} seen;

/* What `seen` counts too, for the main thread to read during the run (relaxed). */
static atomic_ulong mutations_seen, rejections_seen;

static int feature_index(const char *name) {
    for (int i = 0; i < FEATURES; ++i)
        if (strcmp(name, feature_names[i]) == 0) return i;
    return -1;
}

static int shadow(const uf_mutation *m, void *payload) {
    (void)payload;
    uint64_t seq = uf_mutation_seq(m);
    if (seq != seen.seq + 1) problem("seq skipped", uf_mutation_json(m));
    seen.seq = seq;
    ++seen.mutations;
    atomic_fetch_add_explicit(&mutations_seen, 1, memory_order_relaxed);
    int f = feature_index(uf_mutation_feature(m));
    if (f < 0) {
        problem("mutation of an unknown feature", uf_mutation_json(m));
        return UF_KEEP;
    }
    const char *old_state = uf_mutation_old_state(m);
    if ((old_state != NULL) != (seen.present[f] != 0) ||
        (old_state && strcmp(old_state, seen.state[f]) != 0) ||
        (old_state && strcmp(uf_mutation_old_payload_json(m), seen.payload[f]) != 0))
        problem("a mutation's old differs from the model before it", uf_mutation_json(m));
    const char *new_state = uf_mutation_new_state(m);
    seen.present[f] = new_state != NULL;
    if (new_state) {
        snprintf(seen.state[f], sizeof seen.state[f], "%s", new_state);
        snprintf(seen.payload[f], sizeof seen.payload[f], "%s", uf_mutation_new_payload_json(m));
    }
    return UF_KEEP;
}

static void reporter(const char *report, void *payload) {
    (void)payload;
    if (strncmp(report, "{\"event\":\"processed\"", 20) == 0) {
        ++seen.processed;
        if (strstr(report, "\"kind\":\"trigger\"")) {
            ++seen.processed_triggers;
            /* The only trigger with a `submit` list: it queues one action. */
            if (strstr(report, "\"feature\":\"Counter\"")) ++seen.library_queued;
        }
    } else if (strncmp(report, "{\"event\":\"rejected\"", 19) == 0) {
        ++seen.rejected;
        atomic_fetch_add_explicit(&rejections_seen, 1, memory_order_relaxed);
    } else if (strncmp(report, "{\"event\":\"dropped\"", 18) == 0) {
        ++seen.dropped;
    } else if (strncmp(report, "{\"event\":\"binding_", 18) == 0) {
        ++seen.binding_reports;
        /* Mirror's one binding queues one action each time it is processed. */
        if (strncmp(report, "{\"event\":\"binding_processed\"", 28) == 0) ++seen.library_queued;
    } else {
        ++seen.other_reports;
        problem("unexpected report", report);
    }
}

/* ---- what the threads count -------------------------------------------------------- */

static atomic_ulong accepted;        /* outer calls that went through processing */
static atomic_ulong queued;          /* UF_QUEUED inside callbacks */
static atomic_ulong refused;         /* input errors returned at once (not reported) */
static atomic_ulong busy;            /* uf_dispatch_try's UF_EBUSY: nothing done, not reported */
static atomic_ulong subscribed, unsubscribed, unsubscribe_misses, reads;
static atomic_int stopping; /* set once the run is over: the threads return */

/* What a run must have seen before it may stop (atomics: read during the run). */
enum { KINDS = 5 };
static const char *const kind_missing[KINDS] = {"no mutation", "no rejection", "no subscription",
                                                "no tracked payload", "no call of a tracked callback"};

static unsigned long happened(int kind) {
    switch (kind) {
    case 0: return atomic_load(&mutations_seen);
    case 1: return atomic_load(&rejections_seen);
    case 2: return atomic_load(&subscribed);
    case 3: return (unsigned long)atomic_load(&payload_count);
    default: return atomic_load(&tracked_calls);
    }
}

/* The first kind of event that has not happened yet, or NULL. */
static const char *missing_event(void) {
    for (int kind = 0; kind < KINDS; ++kind)
        if (happened(kind) == 0) return kind_missing[kind];
    return NULL;
}

/* A submit from inside a callback, on the processing thread. */
static _Thread_local int budget; /* submits left for callbacks of the current outer call */

static void submit_inside(uf_dispatcher *dispatcher, const char *json) {
    if (budget <= 0) return;
    --budget;
    int status = uf_submit(dispatcher, json);
    if (status == UF_QUEUED) atomic_fetch_add(&queued, 1);
    else if (status != UF_ELOOP) problem("a submit inside a callback gave", uf_status_name(status));
}

/* Subscription ids any thread may end (some already ended: UF_ENOTFOUND). */
enum { ID_POOL = 256 };
static _Atomic uint64_t id_pool[ID_POOL];

static int subscriber(const uf_mutation *m, void *payload) {
    tracked *t = (tracked *)payload;
    called(t, "subscriber");
    uf_dispatcher *dispatcher = uf_mutation_dispatcher(m);
    if (t->submits)
        submit_inside(dispatcher, "{\"kind\":\"transition\",\"feature\":\"Toggle\",\"into\":\"Off\",\"id\":\"inside\"}");
    if (t->unsubscribe_other) {
        uint64_t other = atomic_load(&id_pool[(atomic_load(&t->calls) * 7u) % ID_POOL]);
        if (other) {
            int status = uf_unsubscribe(dispatcher, other);
            if (status == UF_OK) atomic_fetch_add(&unsubscribed, 1);
            else if (status == UF_ENOTFOUND) atomic_fetch_add(&unsubscribe_misses, 1);
            else problem("uf_unsubscribe inside a subscriber gave", uf_status_name(status));
        }
    }
    return t->stop_after && atomic_load(&t->calls) >= t->stop_after ? UF_STOP : UF_KEEP;
}

typedef struct via_order {
    tracked base;
    int mode; /* 0 become n+1, 1 decline, 2 fail, 3 become nothing */
} via_order;

static int via(uf_context *ctx, void *payload) {
    via_order *v = (via_order *)payload;
    called(&v->base, "via");
    const char *current = uf_context_payload_json(ctx);
    long long n = 0;
    if (current) sscanf(current, "{\"n\":%lld", &n);
    char json[96];
    switch (v->mode) {
    case 0:
        snprintf(json, sizeof json, "{\"n\":%lld,\"by\":\"via\"}", n + 1);
        if (uf_context_become(ctx, json) != UF_OK) problem("uf_context_become", uf_last_error());
        submit_inside(uf_context_dispatcher(ctx), "{\"kind\":\"trigger\",\"feature\":\"Stage\"}");
        return 0;
    case 1: return 1;
    case 2: return -1;
    default: return 0;
    }
}

/* An outer uf_dispatch_try: UF_EBUSY did nothing (not an action at all). */
static void count_try(int status, const char *what);

/* ---- the worker ---------------------------------------------------------------------- */

static const char *const filters[] = {
    NULL, "AnyMutationOf<Toggle>", "TransitionInto<Toggle.On>", "ActualizationIn<Counter.Counting>",
    "AnySettingOf<Stage>", "Deinitialization<Counter>", "TransitionBetween<Stage.B, Stage.C>",
    "AnyMutationOf<Mirror>",
};

/* An outer call's status: what it says about the action. */
static void count_outer(int status, const char *what) {
    switch (status) {
    case UF_OK: case UF_REJECTED: case UF_ECALLBACK:
        atomic_fetch_add(&accepted, 1);
        break;
    case UF_QUEUED:
        problem("UF_QUEUED outside a callback from", what);
        break;
    case UF_EBUSY:
        problem("UF_EBUSY from a call that waits:", what);
        break;
    default:
        atomic_fetch_add(&refused, 1);
        break;
    }
}

static void count_try(int status, const char *what) {
    if (status == UF_EBUSY) atomic_fetch_add(&busy, 1);
    else count_outer(status, what);
}

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg;
    uf_action toggle = UF_ACTION_INIT, stage = UF_ACTION_INIT, deinit = UF_ACTION_INIT;
    toggle.kind = UF_ACTION_TRANSITION;
    toggle.feature = "Toggle";
    stage.kind = UF_ACTION_TRANSITION;
    stage.feature = "Stage";
    deinit.kind = UF_ACTION_DEINITIALIZE;
    static const char *const stages[] = {"A", "B", "C"};
    static const char *const toggles[] = {"Off", "On"};
    char json[256];
    uint64_t mine[32] = {0};

    while (!atomic_load(&stopping)) {
        for (int burst = 0; burst < 64; ++burst) {
            budget = 8;
            uint64_t r = next_random(&rng);
            int op = (int)(r % 100);
            int status;
            if (op < 25) {
                toggle.into = toggles[(r >> 8) & 1];
                toggle.same = (r >> 9) & 1;
                if ((r >> 10) & 1) {
                    status = uf_dispatch_try(d, &toggle);
                    count_try(status, "uf_dispatch_try Toggle");
                } else {
                    status = uf_dispatch(d, &toggle);
                    count_outer(status, "uf_dispatch Toggle");
                }
            } else if (op < 35) {
                stage.from = (r >> 8) & 1 ? stages[(r >> 10) % 3] : NULL;
                stage.into = stages[(r >> 12) % 3];
                status = uf_dispatch(d, &stage);
                count_outer(status, "uf_dispatch Stage");
            } else if (op < 45) {
                static const char *const forms[] = {
                    "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"%s\"}",
                    "{\"kind\":\"initialize\",\"feature\":\"Stage\",\"into\":\"A\",\"id\":\"%s\"}",
                    "{\"kind\":\"initialize\",\"feature\":\"Mirror\",\"into\":\"Seen\",\"scope\":\"%s\"}",
                    "{\"kind\":\"initialize\",\"feature\":\"Counter\",\"into\":\"Counting\",\"payload\":{\"n\":0,\"by\":\"%s\"}}",
                    ("{\"kind\":\"trigger\",\"feature\":\"Counter\",\"initialized\":false,\"context\":\"%s\",\"submit\":"
                     "[{\"kind\":\"initialize\",\"feature\":\"Counter\",\"into\":\"Counting\",\"payload\":{\"n\":100}}]}"),
                    "{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Counting\",\"payload\":{\"n\":-1,\"by\":\"%s\"}}",
                };
                snprintf(json, sizeof json, forms[(r >> 8) % 6], toggles[(r >> 16) & 1]);
                status = uf_submit(d, json);
                count_outer(status, json);
            } else if (op < 52) {
                deinit.feature = feature_names[(r >> 8) % FEATURES];
                status = uf_dispatch(d, &deinit);
                count_outer(status, "uf_dispatch deinitialize");
            } else if (op < 62) {
                via_order *order = (via_order *)new_tracked(sizeof(via_order));
                order->mode = (int)((r >> 8) % 4);
                if ((r >> 10) % 3 == 0) {
                    /* A via through the struct, which uf_dispatch_try may refuse as
                     * busy: via_payload_free must run once all the same. */
                    uf_action act = UF_ACTION_INIT;
                    act.kind = UF_ACTION_ACTUALIZE;
                    act.feature = "Counter";
                    act.into = "Counting";
                    act.via = via;
                    act.via_payload = order;
                    act.via_payload_free = release_tracked;
                    status = uf_dispatch_try(d, &act);
                    count_try(status, "uf_dispatch_try with a via");
                } else {
                    status = uf_submit_via(d, "{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Counting\"}",
                                           via, order, release_tracked);
                    count_outer(status, "uf_submit_via");
                }
            } else if (op < 75) {
                tracked *t = new_tracked(sizeof(tracked));
                t->submits = (r >> 8) % 4 == 0;
                t->stop_after = (r >> 10) % 3 == 0 ? (int)((r >> 12) % 5) + 1 : 0;
                t->unsubscribe_other = (r >> 16) % 8 == 0;
                uint64_t id = 0;
                status = uf_subscribe(d, filters[(r >> 20) % 8], subscriber, t, release_tracked, &id);
                if (status != UF_OK) {
                    problem("uf_subscribe gave", uf_status_name(status));
                } else {
                    atomic_fetch_add(&subscribed, 1);
                    atomic_store(&id_pool[(r >> 24) % ID_POOL], id);
                    uint64_t *slot = &mine[(r >> 32) % 32];
                    if (*slot) {
                        int gone = uf_unsubscribe(d, *slot);
                        if (gone == UF_OK) atomic_fetch_add(&unsubscribed, 1);
                        else if (gone == UF_ENOTFOUND) atomic_fetch_add(&unsubscribe_misses, 1);
                        else problem("uf_unsubscribe gave", uf_status_name(gone));
                    }
                    *slot = id;
                }
            } else if (op < 85) {
                uint64_t id = atomic_load(&id_pool[(r >> 8) % ID_POOL]);
                if (!id) continue;
                status = uf_unsubscribe(d, id);
                if (status == UF_OK) atomic_fetch_add(&unsubscribed, 1);
                else if (status == UF_ENOTFOUND) atomic_fetch_add(&unsubscribe_misses, 1);
                else problem("uf_unsubscribe gave", uf_status_name(status));
            } else if (op < 95) {
                char *out = NULL;
                status = (r >> 8) & 1 ? uf_state_get(d, &out) : uf_feature_get(d, feature_names[(r >> 9) % FEATURES], &out);
                if (status != UF_OK) problem("a read gave", uf_status_name(status));
                uf_free(out);
                atomic_fetch_add(&reads, 1);
            } else {
                static const char *const bad[] = {
                    "{\"kind\":", "{\"kind\":\"initialize\",\"feature\":\"Nope\",\"into\":\"A\"}",
                    "{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Counting\",\"payload\":{\"n\":\"x\"}}",
                    "{\"kind\":\"initialize\",\"feature\":\"Toggle\",\"into\":\"On\",\"from\":\"Off\"}",
                };
                status = uf_submit(d, bad[(r >> 8) % 4]);
                if (status >= UF_REJECTED) problem("bad input was accepted:", bad[(r >> 8) % 4]);
                count_outer(status, "bad input");
            }
        }
    }
    return NULL;
}

int main(void) {
    double seconds = env_number("UNIFLOW_STRESS_SECONDS", 3.0, 0.001, 1e7);
    int threads = (int)env_number("UNIFLOW_STRESS_THREADS", 8, 1, MAX_THREADS);
    const char *env = getenv("UNIFLOW_STRESS_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    /* Past `seconds`, the run goes on until it has seen every kind of event, up to
     * this cap. */
    double cap = seconds * 10 + 120;
    printf("stress: %d threads, %g s and until every kind of event has happened (at most %.0f s), seed %llu "
           "(UNIFLOW_STRESS_SEED)\n",
           threads, seconds, cap, (unsigned long long)seed);

    if (uf_dispatcher_new(&d, NULL) != UF_OK || uf_register(d, definitions) != UF_OK) {
        fprintf(stderr, "stress: setup failed: %s\n", uf_last_error());
        return 1;
    }
    if (uf_set_reporter(d, reporter, NULL, NULL) != UF_OK || uf_subscribe(d, NULL, shadow, NULL, NULL, NULL) != UF_OK) {
        fprintf(stderr, "stress: setup failed: %s\n", uf_last_error());
        return 1;
    }

    double started = now();
    pthread_t ids[MAX_THREADS];
    for (int i = 0; i < threads; ++i) {
        uint64_t thread_seed = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull + 1;
        if (pthread_create(&ids[i], NULL, worker, (void *)(uintptr_t)thread_seed) != 0) {
            fprintf(stderr, "stress: pthread_create failed\n");
            return 1;
        }
    }
    const char *waited_for; /* the last kind still missing once `seconds` were over */
    double ran = run_until_covered(started, seconds, cap, missing_event, &waited_for);
    atomic_store(&stopping, 1);
    for (int i = 0; i < threads; ++i) pthread_join(ids[i], NULL);
    const char *missing = missing_event();
    printf("stress: ran %.2f s (%g s asked for%s%s)\n", ran, seconds,
           missing ? "; stopped at the cap, still missing: "
                   : waited_for ? "; went on until every kind of event had happened, the last missing: " : "",
           missing ? missing : waited_for ? waited_for : "");

    /* 1. Every action is accounted for. */
    unsigned long reported = seen.processed + seen.rejected + seen.dropped;
    unsigned long submitted = atomic_load(&accepted) + atomic_load(&queued) + seen.library_queued;
    printf("stress: %lu actions accepted at once + %lu queued in callbacks + %lu queued by triggers and "
           "bindings = %lu; reports: %lu processed (%lu triggers), %lu rejected, %lu dropped, %lu binding "
           "reports; %lu refused at once, %lu busy (uf_dispatch_try)\n",
           atomic_load(&accepted), atomic_load(&queued), seen.library_queued, submitted, seen.processed,
           seen.processed_triggers, seen.rejected, seen.dropped, seen.binding_reports, atomic_load(&refused),
           atomic_load(&busy));
    if (reported != submitted) problem("reports differ from the actions accepted", NULL);
    if (seen.processed - seen.processed_triggers != seen.mutations) {
        char detail[128];
        snprintf(detail, sizeof detail, "%lu processed non-trigger actions, %lu mutations",
                 seen.processed - seen.processed_triggers, seen.mutations);
        problem("mutations differ from processed actions:", detail);
    }

    /* 2. The model is what the mutations imply. */
    for (int f = 0; f < FEATURES; ++f) {
        char *json = NULL;
        if (uf_feature_get(d, feature_names[f], &json) != UF_OK) {
            problem("uf_feature_get failed", uf_last_error());
            continue;
        }
        char expected[400];
        snprintf(expected, sizeof expected, "{\"state\":\"%s\",\"payload\":%s}", seen.state[f], seen.payload[f]);
        if (seen.present[f] ? (!json || strcmp(json, expected) != 0) : json != NULL) {
            char detail[900];
            snprintf(detail, sizeof detail, "%s is %s, the mutations imply %s", feature_names[f],
                     json ? json : "absent", seen.present[f] ? expected : "absent");
            problem("model differs:", detail);
        }
        uf_free(json);
    }
    printf("stress: %lu mutations, seq %llu; %lu subscribed, %lu unsubscribed (%lu stale ids refused), %lu reads\n",
           seen.mutations, (unsigned long long)seen.seq, atomic_load(&subscribed), atomic_load(&unsubscribed),
           atomic_load(&unsubscribe_misses), atomic_load(&reads));

    /* 3. Every payload_free exactly once, none before its last call. */
    uf_dispatcher_free(d);
    int count = atomic_load(&payload_count);
    long never_freed = 0, calls = 0;
    for (int i = 0; i < count; ++i) {
        tracked *t = *payload_slot(i);
        if (atomic_load(&t->freed) != 1) ++never_freed;
        calls += atomic_load(&t->calls);
        free(t);
    }
    for (int c = 0; c < CHUNKS; ++c) free(atomic_load(&payload_chunks[c]));
    if (never_freed) {
        char detail[64];
        snprintf(detail, sizeof detail, "%ld of %d", never_freed, count);
        problem("payload_free did not run exactly once for", detail);
    }
    printf("stress: %d tracked payloads (%ld callback calls), every payload_free %s\n", count, calls,
           never_freed ? "NOT once" : "once");

    /* A run that tested nothing must not pass: one that reached the cap says what
     * never happened. */
    for (int kind = 0; kind < KINDS; ++kind)
        if (happened(kind) == 0) {
            char detail[160];
            snprintf(detail, sizeof detail, "%s within the cap of %.0f s (UNIFLOW_STRESS_SECONDS x 10 + 120)",
                     kind_missing[kind], cap);
            problem("the run did almost nothing:", detail);
        }

    int n = atomic_load(&problems);
    printf("stress: %s\n", n ? "FAILED" : "passed");
    return n ? 1 : 0;
}
