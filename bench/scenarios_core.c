/*
 * scenarios_core.c — the first rounds' scenarios (bench/README.md's groups 1-5):
 * the C hot path against hand-written C machines, the JSON path against jansson,
 * a binding's cascade, batches, threads, and memory per feature and subscription.
 * What each measures is unchanged since those rounds: their history in the
 * README compares like with like.
 */
#include "bench.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- action scenarios */

/* --- the hand-written C baselines --- */
static void run_c_locked(scenario *s, long n) {
    for (long i = 0; i < n; ++i) {
        if (__builtin_expect(c_machine_transition_locked(&s->machine, 0, s->phase, s->phase ^ 1) != 0, 0))
            die("%s: rejected", s->name);
        s->phase ^= 1;
    }
    s->applied += (uint64_t)n;
}

static void run_c_bare(scenario *s, long n) {
    for (long i = 0; i < n; ++i) {
        if (__builtin_expect(c_machine_transition_bare(&s->machine, 0, s->phase, s->phase ^ 1) != 0, 0))
            die("%s: rejected", s->name);
        s->phase ^= 1;
    }
    s->applied += (uint64_t)n;
}

static void setup_c_locked(scenario *s) { c_machine_init(&s->machine, count_c, &s->notified); }
static void setup_c_bare(scenario *s) { c_machine_init(&s->machine, count_c, &s->notified); }

/* Feature "T" with states A/B (plus `fillers` other features), one counting
 * subscriber on T, and `other_subs` subscriptions spread over the other features. */
static void setup_short_with(scenario *s, long fillers, long other_subs) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}}}"), UF_OK, "register T");
    if (fillers > 0) register_fillers(s->d, "Other", fillers);
    subscribe_counter(s->d, "AnyMutationOf<T>", &s->notified);
    for (long i = 0; i < other_subs; ++i) {
        char when[96];
        snprintf(when, sizeof when, "AnyMutationOf<Other%ld>", i % fillers);
        /* Their counter must stay 0: they never match a mutation of T. */
        check_status(uf_subscribe(s->d, when, count_mutation, &s->stray, NULL, NULL), UF_OK, when);
    }
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    s->notified = 0;
    set_toggle(s, "T", "A", "B");
}

static void setup_short(scenario *s) { setup_short_with(s, 0, 0); }
static void setup_other_subs_1(scenario *s) { setup_short_with(s, 10, 1); }
static void setup_other_subs_1000(scenario *s) { setup_short_with(s, 10, 1000); }
static void setup_features_10(scenario *s) { setup_short_with(s, 9, 0); }
static void setup_features_100000(scenario *s) { setup_short_with(s, 99999, 0); }

/* uf_short where model bindings exist but none watches this mutation: 1,000 on
 * other features (a Watcher feature's), or one on T watching another kind.
 * Both stay on the hot path: bindings are indexed by feature and kind. */
static void setup_bindings_elsewhere(scenario *s) {
    setup_short_with(s, 10, 0);
    text t = {0};
    text_add(&t, "{\"feature\":\"Watcher\",\"states\":{\"On\":{}},\"bindings\":[");
    for (int i = 0; i < 1000; ++i)
        text_add(&t, "%s{\"when\":\"AnyMutationOf<Other%d>\",\"given\":[{\"if\":{\"==\":[1,2]}}],"
                     "\"then\":{\"submit\":[]}}", i ? "," : "", i % 10);
    text_add(&t, "]}");
    check_status(uf_register(s->d, t.p), UF_OK, "register Watcher");
    text_free(&t);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"Watcher\",\"into\":\"On\"}");
}

/* T with a binding of its own on `kind_filter`, whose rule never holds. */
static void setup_binding_on_t(scenario *s, const char *filter) {
    s->d = new_dispatcher(NULL);
    text t = {0};
    text_add(&t, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}},\"bindings\":[{\"when\":\"%s\","
                 "\"given\":[{\"if\":{\"==\":[{\"var\":\"mutation.new.state\"},\"C\"]}}],\"then\":{\"submit\":[]}}]}",
             filter);
    check_status(uf_register(s->d, t.p), UF_OK, "register T with a binding");
    text_free(&t);
    subscribe_counter(s->d, "AnyMutationOf<T>", &s->notified);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    s->notified = 0;
    set_toggle(s, "T", "A", "B");
}

static void setup_binding_other_kind(scenario *s) { setup_binding_on_t(s, "Deinitialization<T>"); }
static void setup_binding_rule(scenario *s) { setup_binding_on_t(s, "Transition<T>"); }

const char *const realistic_definition =
    "{\"feature\":\"FileDownloading\",\"description\":\"Downloads one file\","
    "\"states\":{\"Starting\":{},\"InProgress\":{},\"Suspended\":{},\"Completed\":{},\"Failed\":{}},"
    "\"initial\":[\"Starting\"],"
    "\"transitions\":{\"Starting\":[\"InProgress\",\"Failed\"],"
    "\"InProgress\":[\"Suspended\",\"Completed\",\"Failed\"],"
    "\"Suspended\":[\"InProgress\",\"Failed\"]}}";

void setup_realistic_dispatcher(scenario *s, const char *options_json) {
    s->d = new_dispatcher(options_json);
    check_status(uf_register(s->d, realistic_definition), UF_OK, "register FileDownloading");
    subscribe_counter(s->d, "AnyMutationOf<FileDownloading>", &s->notified);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"FileDownloading\",\"into\":\"Starting\"}");
    submit(s->d, "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"Starting\",\"into\":\"InProgress\"}");
    s->notified = 0;
}

const char *const toggle_json[2] = {
    "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"InProgress\",\"into\":\"Suspended\"}",
    "{\"kind\":\"transition\",\"feature\":\"FileDownloading\",\"from\":\"Suspended\",\"into\":\"InProgress\"}",
};

static void setup_realistic(scenario *s) {
    setup_realistic_dispatcher(s, NULL);
    set_toggle(s, "FileDownloading", "InProgress", "Suspended");
}

static void setup_submit_toggle(scenario *s) {
    setup_realistic_dispatcher(s, NULL);
    s->json[0] = toggle_json[0];
    s->json[1] = toggle_json[1];
}

static void setup_jansson_toggle(scenario *s) {
    s->json[0] = toggle_json[0];
    s->json[1] = toggle_json[1];
    s->is_parse_only = 1;
}

const char *const transfer_payload =
    "{\"progress\":42.5,\"bytes\":1048576,\"total\":4194304,"
    "\"url\":\"https://example.com/files/archive.tar.gz\",\"paused\":false}";
const char *const actualize_json =
    "{\"kind\":\"actualize\",\"feature\":\"Transfer\",\"in\":\"InProgress\",\"payload\":"
    "{\"progress\":42.5,\"bytes\":1048576,\"total\":4194304,"
    "\"url\":\"https://example.com/files/archive.tar.gz\",\"paused\":false}}";

const char *const transfer_definition =
    "{\"feature\":\"Transfer\",\"states\":{\"Idle\":{},\"InProgress\":{\"fields\":{"
    "\"progress\":\"number\",\"bytes\":\"integer\",\"total\":\"integer\","
    "\"url\":\"string\",\"paused\":\"boolean\"}}}}";

void initialize_transfer(uf_dispatcher *d) {
    text t = {0};
    text_add(&t, "{\"kind\":\"initialize\",\"feature\":\"Transfer\",\"into\":\"InProgress\",\"payload\":%s}", transfer_payload);
    submit(d, t.p);
    text_free(&t);
}

static void setup_transfer_dispatcher(scenario *s) {
    s->d = new_dispatcher(NULL);
    check_status(uf_register(s->d, transfer_definition), UF_OK, "register Transfer");
    subscribe_counter(s->d, "AnyMutationOf<Transfer>", &s->notified);
    initialize_transfer(s->d);
    s->notified = 0;
}

static void setup_submit_actualize(scenario *s) {
    setup_transfer_dispatcher(s);
    s->json[0] = s->json[1] = actualize_json;
}

void setup_dispatch_actualize(scenario *s) {
    setup_transfer_dispatcher(s);
    uf_action act = UF_ACTION_INIT;
    act.kind = UF_ACTION_ACTUALIZE;
    act.feature = "Transfer";
    act.into = "InProgress";
    act.payload_json = transfer_payload;
    s->act[0] = s->act[1] = act;
}

static void setup_jansson_actualize(scenario *s) {
    s->json[0] = s->json[1] = actualize_json;
    s->is_parse_only = 1;
}

/* --- a binding's cascade vs a C subscriber doing the same work --- */

/* Counter counts; Mirror copies its count. The same rule either way: when the
 * count is actualized and is above 0, actualize Mirror with it. */
static const char *cascade_definitions =
    "[{\"feature\":\"Mirror\",\"states\":{\"Seen\":{\"fields\":{\"n\":\"number\"}}}},"
    " {\"feature\":\"Counter\",\"states\":{\"Counting\":{\"fields\":{\"n\":\"number\"}}}%s}]";
static const char *cascade_binding =
    ",\"bindings\":[{\"when\":\"ActualizationIn<Counter.Counting>\","
    "\"given\":[{\"if\":{\">\":[{\"var\":\"mutation.new.payload.n\"},0]}}],"
    "\"then\":{\"submit\":[{\"kind\":\"actualize\",\"feature\":\"Mirror\",\"in\":\"Seen\","
    "\"payload\":{\"n\":{\"$\":{\"var\":\"mutation.new.payload.n\"}}}}]}}]";

/* The C subscriber: reads the new payload, tests the count, dispatches the copy. */
static int mirror_count(const uf_mutation *m, void *payload) {
    (void)payload;
    json_error_t error;
    json_t *p = json_loads(uf_mutation_new_payload_json(m), 0, &error);
    json_t *n = p ? json_object_get(p, "n") : NULL;
    if (n && json_number_value(n) > 0) {
        char text[64];
        snprintf(text, sizeof text, "{\"n\":%.17g}", json_number_value(n));
        uf_action act = UF_ACTION_INIT;
        act.kind = UF_ACTION_ACTUALIZE;
        act.feature = "Mirror";
        act.into = "Seen";
        act.payload_json = text;
        int status = uf_dispatch(uf_mutation_dispatcher(m), &act);
        if (status != UF_QUEUED) die("mirror_count: %s: %s", uf_status_name(status), uf_last_error());
    }
    json_decref(p);
    return UF_KEEP;
}

static void setup_cascade(scenario *s, int with_binding) {
    s->d = new_dispatcher(NULL);
    text t = {0};
    text_add(&t, cascade_definitions, with_binding ? cascade_binding : "");
    check_status(uf_register(s->d, t.p), UF_OK, "register Counter and Mirror");
    text_free(&t);
    if (!with_binding) check_status(uf_subscribe(s->d, "ActualizationIn<Counter.Counting>", mirror_count, NULL, NULL, NULL),
                                    UF_OK, "subscribe the mirror");
    subscribe_counter(s->d, "AnyMutationOf<Mirror>", &s->notified);
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"Mirror\",\"into\":\"Seen\",\"payload\":{\"n\":0}}");
    submit(s->d, "{\"kind\":\"initialize\",\"feature\":\"Counter\",\"into\":\"Counting\",\"payload\":{\"n\":0}}");
    s->notified = 0;
    for (int i = 0; i < 2; ++i) {
        uf_action act = UF_ACTION_INIT;
        act.kind = UF_ACTION_ACTUALIZE;
        act.feature = "Counter";
        act.into = "Counting";
        act.payload_json = i == 0 ? "{\"n\":1}" : "{\"n\":2}";
        s->act[i] = act;
    }
}

static void setup_binding_cascade(scenario *s) { setup_cascade(s, 1); }
static void setup_subscriber_cascade(scenario *s) { setup_cascade(s, 0); }

/* --- a batch of 10 JSON actions vs 10 uf_submit calls --- */

/* Ten toggles B0..B9 in A, one subscriber counting every mutation. */
static void setup_batch_dispatcher(scenario *s) {
    s->d = new_dispatcher(NULL);
    register_fillers(s->d, "B", 10);
    subscribe_counter(s->d, NULL, &s->notified);
    for (int i = 0; i < 10; ++i) {
        char init[96];
        snprintf(init, sizeof init, "{\"kind\":\"initialize\",\"feature\":\"B%d\",\"into\":\"A\"}", i);
        submit(s->d, init);
    }
    s->notified = 0;
}

/* Ten transitions into B, then ten back into A: the same 20 actions either way. */
static void run_batch(scenario *s, long n) {
    static char forward[1024], back[1024];
    if (!forward[0]) {
        text a = {0}, b = {0};
        text_add(&a, "[");
        text_add(&b, "[");
        for (int i = 0; i < 10; ++i) {
            text_add(&a, "%s{\"kind\":\"transition\",\"feature\":\"B%d\",\"from\":\"A\",\"into\":\"B\"}", i ? "," : "", i);
            text_add(&b, "%s{\"kind\":\"transition\",\"feature\":\"B%d\",\"from\":\"B\",\"into\":\"A\"}", i ? "," : "", i);
        }
        text_add(&a, "]");
        text_add(&b, "]");
        snprintf(forward, sizeof forward, "%s", a.p);
        snprintf(back, sizeof back, "%s", b.p);
        text_free(&a);
        text_free(&b);
    }
    for (long i = 0; i < n; ++i) {
        int status = uf_submit_batch(s->d, s->phase ? back : forward);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, s->name);
        s->phase ^= 1;
    }
    s->applied += (uint64_t)n * 10;
}

static void run_submits(scenario *s, long n) {
    static char forward[10][128], back[10][128];
    if (!forward[0][0]) {
        for (int i = 0; i < 10; ++i) {
            snprintf(forward[i], sizeof forward[i], "{\"kind\":\"transition\",\"feature\":\"B%d\",\"from\":\"A\",\"into\":\"B\"}", i);
            snprintf(back[i], sizeof back[i], "{\"kind\":\"transition\",\"feature\":\"B%d\",\"from\":\"B\",\"into\":\"A\"}", i);
        }
    }
    for (long i = 0; i < n; ++i) {
        for (int j = 0; j < 10; ++j) {
            int status = uf_submit(s->d, s->phase ? back[j] : forward[j]);
            if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, s->name);
        }
        s->phase ^= 1;
    }
    s->applied += (uint64_t)n * 10;
}

static scenario scenarios[] = {
    SCENARIO("c_bare", "hand-written C toggle + callback, no lock (floor)", setup_c_bare, run_c_bare),
    SCENARIO("c_locked", "hand-written C toggle + callback behind a pthread mutex", setup_c_locked, run_c_locked),
    SCENARIO("uf_short", "uf_dispatch toggle T: A<->B, 1 feature, 1 C subscriber", setup_short, run_dispatch_toggle),
    SCENARIO("uf_realistic", "uf_dispatch toggle FileDownloading: InProgress<->Suspended (declared transitions)",
     setup_realistic, run_dispatch_toggle),
    SCENARIO("uf_other_subs_1", "uf_short + 10 other features, 1 subscription on another feature",
     setup_other_subs_1, run_dispatch_toggle),
    SCENARIO("uf_other_subs_1000", "uf_short + 10 other features, 1,000 subscriptions on other features",
     setup_other_subs_1000, run_dispatch_toggle),
    SCENARIO("uf_features_10", "uf_short with 10 registered features", setup_features_10, run_dispatch_toggle),
    SCENARIO("uf_features_100000", "uf_short with 100,000 registered features", setup_features_100000, run_dispatch_toggle),
    SCENARIO("uf_bindings_elsewhere", "uf_short + 1,000 model bindings watching 10 other features",
     setup_bindings_elsewhere, run_dispatch_toggle),
    SCENARIO("uf_binding_other_kind", "uf_short, T has a binding on Deinitialization<T> (never matches)",
     setup_binding_other_kind, run_dispatch_toggle),
    SCENARIO("uf_binding_rule", "uf_short, T has a binding on Transition<T> whose rule is false (evaluated)",
     setup_binding_rule, run_dispatch_toggle),
    SCENARIO("jansson_toggle", "json_loads + json_decref of the toggle action text", setup_jansson_toggle, run_jansson),
    SCENARIO("uf_submit_toggle", "uf_submit of the toggle action text (FileDownloading)", setup_submit_toggle, run_submit_toggle),
    SCENARIO("jansson_actualize", "json_loads + json_decref of the 5-field actualize text", setup_jansson_actualize, run_jansson),
    SCENARIO("uf_submit_actualize", "uf_submit of an actualize with a 5-field payload", setup_submit_actualize, run_submit_toggle),
    SCENARIO("uf_dispatch_actualize", "uf_dispatch actualize, payload_json with the same 5 fields",
     setup_dispatch_actualize, run_dispatch_same),
    SCENARIO("uf_binding_cascade", "uf_dispatch actualize Counter; a binding (if rule) actualizes Mirror (templated)",
     setup_binding_cascade, run_dispatch_toggle),
    SCENARIO("c_subscriber_cascade", "the same, done by a C subscriber: reads the payload, tests it, uf_dispatch",
     setup_subscriber_cascade, run_dispatch_toggle),
    SCENARIO("uf_batch_10", "uf_submit_batch of 10 JSON transitions (per batch)", setup_batch_dispatcher, run_batch),
    SCENARIO("uf_submits_10", "10 uf_submit calls of the same transitions", setup_batch_dispatcher, run_submits),
};
scenario *const core_scenarios = scenarios;
const int core_scenario_count = COUNT_OF(scenarios);

/* ------------------------------------------------------------------- threads */

enum { THREADS = 4 };

typedef struct worker {
    pthread_t thread;
    pthread_barrier_t *start;
    uf_dispatcher *d;         /* NULL: the C baseline */
    c_machine *machine;
    int feature_index;
    uf_action act[2];
    long n;
    long ok, other;
    double started, finished;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    if (w->start) pthread_barrier_wait(w->start);
    w->started = now_ns();
    int phase = 0;
    for (long i = 0; i < w->n; ++i) {
        int status = w->d ? uf_dispatch(w->d, &w->act[phase])
                          : c_machine_transition_locked(w->machine, w->feature_index, phase, phase ^ 1);
        if (status == 0) ++w->ok;
        else ++w->other;
        phase ^= 1;
    }
    w->finished = now_ns();
    return NULL;
}


/* Runs `threads` workers of `per_thread` actions each (one feature per worker) and
 * returns the wall time per action of all of them together: from the first
 * worker's start to the last one's end (the main thread may be descheduled while
 * they run, so it does not hold the stopwatch). */
static double run_threads(int threads, long per_thread, uf_dispatcher *d, c_machine *machine,
                          long *ok, long *other) {
    static const char *features[THREADS] = {"W0", "W1", "W2", "W3"};
    worker w[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; ++t) {
        memset(&w[t], 0, sizeof w[t]);
        w[t].start = &start;
        w[t].d = d;
        w[t].machine = machine;
        w[t].feature_index = t;
        w[t].n = per_thread;
        make_toggle(w[t].act, features[t], "A", "B");
        if (pthread_create(&w[t].thread, NULL, work, &w[t]) != 0) die("pthread_create failed");
    }
    pthread_barrier_wait(&start);
    for (int t = 0; t < threads; ++t) pthread_join(w[t].thread, NULL);
    pthread_barrier_destroy(&start);
    double first = w[0].started, last = w[0].finished;
    for (int t = 0; t < threads; ++t) {
        *ok += w[t].ok;
        *other += w[t].other;
        if (w[t].started < first) first = w[t].started;
        if (w[t].finished > last) last = w[t].finished;
    }
    return (last - first) / (double)(threads * per_thread);
}

static int run_thread_scenarios(int reps, double ms) {
    uf_dispatcher *d = new_dispatcher(NULL);
    check_status(uf_register(d, "[{\"feature\":\"W0\",\"states\":{\"A\":{},\"B\":{}}},"
                                "{\"feature\":\"W1\",\"states\":{\"A\":{},\"B\":{}}},"
                                "{\"feature\":\"W2\",\"states\":{\"A\":{},\"B\":{}}},"
                                "{\"feature\":\"W3\",\"states\":{\"A\":{},\"B\":{}}}]"), UF_OK, "register W*");
    uint64_t notified = 0, c_notified = 0;
    subscribe_counter(d, NULL, &notified);
    for (int t = 0; t < THREADS; ++t) {
        char json[96];
        snprintf(json, sizeof json, "{\"kind\":\"initialize\",\"feature\":\"W%d\",\"into\":\"A\"}", t);
        submit(d, json);
    }
    notified = 0;
    c_machine machine;
    c_machine_init(&machine, count_c, &c_notified);

    /* Calibrated on one thread; the count is even per thread so every toggle ends in A. */
    long ok = 0, other = 0, c_ok = 0, c_other = 0;
    double per = run_threads(1, 100000, d, NULL, &ok, &other);
    long total = (long)(ms * 1e6 / per) / (2 * THREADS) * (2 * THREADS);
    if (total < 8 * THREADS) total = 8 * THREADS;
    double c_per = run_threads(1, 1000000, NULL, &machine, &c_ok, &c_other);
    long c_total = (long)(ms * 1e6 / c_per) / (2 * THREADS) * (2 * THREADS);
    if (c_total < 8 * THREADS) c_total = 8 * THREADS;
    for (int rep = 0; rep < reps; ++rep) {
        print_sample("threads_uf_1", rep, run_threads(1, total, d, NULL, &ok, &other), total);
        print_sample("threads_uf_4", rep, run_threads(THREADS, total / THREADS, d, NULL, &ok, &other), total);
        print_sample("threads_c_locked_1", rep, run_threads(1, c_total, NULL, &machine, &c_ok, &c_other), c_total);
        print_sample("threads_c_locked_4", rep, run_threads(THREADS, c_total / THREADS, NULL, &machine, &c_ok, &c_other),
                     c_total);
    }
    long submitted = 100000 + (long)reps * 2 * total;
    if (other != 0 || ok != submitted || notified != (uint64_t)ok)
        die("threads: %ld submitted, %ld applied, %ld other statuses, %llu notified", submitted, ok, other,
            (unsigned long long)notified);
    if (c_other != 0 || c_notified != (uint64_t)c_ok) die("threads: the C baseline lost actions");
    char *state = NULL;
    check_status(uf_state_get(d, &state), UF_OK, "uf_state_get");
    if (!strstr(state, "\"W3\":{\"state\":\"A\"")) die("threads: unexpected final model %s", state);
    uf_free(state);
    printf("{\"check\":\"threads\",\"submitted\":%ld,\"applied\":%ld,\"notified\":%llu,\"ok\":true}\n", submitted, ok,
           (unsigned long long)notified);
    uf_dispatcher_free(d);
    c_machine_destroy(&machine);
    return 0;
}

/* -------------------------------------------------------------------- memory */

/* Peak RSS growth for `count` registered features, then for initializing them. */
static int run_memory_features(long count) {
    uf_dispatcher *d = new_dispatcher(NULL);
    /* Warm up whatever the runtime and the dispatcher allocate once. */
    register_fillers(d, "Warm", 100);
    submit(d, "{\"kind\":\"initialize\",\"feature\":\"Warm0\",\"into\":\"A\"}");
    char *names = malloc((size_t)count * 24);
    if (!names) die("out of memory");
    for (long i = 0; i < count; ++i) snprintf(names + i * 24, 24, "F%ld", i);
    long h0 = status_kb("VmHWM");
    register_fillers(d, "F", count);
    long h1 = status_kb("VmHWM");
    uf_action act = UF_ACTION_INIT;
    act.kind = UF_ACTION_INITIALIZE;
    act.into = "A";
    for (long i = 0; i < count; ++i) {
        act.feature = names + i * 24;
        check_status(uf_dispatch(d, &act), UF_OK, "initialize F*");
    }
    long h2 = status_kb("VmHWM");
    print_memory("feature_registered", h0, h1, count, 0);
    print_memory("feature_initialized", h1, h2, count, 0);
    print_memory("feature_total", h0, h2, count, 0);
    uf_dispatcher_free(d);
    free(names);
    return 0;
}

/* Peak RSS growth for `count` subscriptions on one feature; one mutation then
 * reaches every one of them. */
static int run_memory_subscriptions(long count) {
    uf_dispatcher *d = new_dispatcher(NULL);
    check_status(uf_register(d, "{\"feature\":\"T\",\"states\":{\"A\":{},\"B\":{}}}"), UF_OK, "register T");
    uint64_t notified = 0, id = 0;
    check_status(uf_subscribe(d, "AnyMutationOf<T>", count_mutation, &notified, NULL, &id), UF_OK, "warm-up subscribe");
    check_status(uf_unsubscribe(d, id), UF_OK, "warm-up unsubscribe");
    long h0 = status_kb("VmHWM");
    for (long i = 0; i < count; ++i) subscribe_counter(d, "AnyMutationOf<T>", &notified);
    long h1 = status_kb("VmHWM");
    submit(d, "{\"kind\":\"initialize\",\"feature\":\"T\",\"into\":\"A\"}");
    if (notified != (uint64_t)count) die("mem-subs: %llu of %ld subscribers notified", (unsigned long long)notified, count);
    print_memory("subscription", h0, h1, count, 0);
    uf_dispatcher_free(d);
    return 0;
}

/* --------------------------------------------------------------------- modes */

static int mode_threads(const mode_args *a) { return run_thread_scenarios(a->reps, a->ms); }
static int mode_mem_features(const mode_args *a) { return run_memory_features(a->count ? a->count : 100000); }
static int mode_mem_subs(const mode_args *a) { return run_memory_subscriptions(a->count ? a->count : 100000); }

static const bench_mode modes[] = {
    {"threads", "1 thread vs 4 on one dispatcher, and the locked C baseline", mode_threads},
    {"mem-features", "N: peak RSS per registered and initialized feature (default 100,000)", mode_mem_features},
    {"mem-subs", "N: peak RSS per subscription (default 100,000)", mode_mem_subs},
};
const bench_mode *const core_modes = modes;
const int core_mode_count = COUNT_OF(modes);
