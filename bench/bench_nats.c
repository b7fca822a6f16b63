/*
 * bench_nats.c — libuniflow_nats against a real nats-server (bench/README.md,
 * group 12). bench/run builds it when libnats and libuniflow_nats are there;
 * driver.py starts `nats-server -js` on a free loopback port with a temporary
 * store and runs
 *
 *   bench_nats --url URL [--reps R] [--time-ms T] [--records N] [--only a,b]
 *
 * which prints one JSON line per repetition (as bench_c does):
 *
 *   nats_raw_publish      js_PublishMsg of a node's record bytes, with the
 *                         headers the node sends (Nats-Msg-Id, the expected
 *                         last subject sequence), one after the other on one
 *                         subject of a stream of its own (ns per record)
 *   nats_raw_publish_following  the same on another subject, while an ordered
 *                         push consumer of it runs in the process, as every
 *                         node has (the server sends each record back; the
 *                         consumer's thread reads its metadata)
 *   nats_node_submit      uf_nats_submit of an actualize of one keyed instance
 *                         (one mutation, one record) on a node owning every
 *                         partition (ns per action)
 *   nats_threads_1        uf_nats_submit from one thread on one partition
 *   nats_threads_4        four threads, each on a partition of its own (wall ns
 *                         per action)
 *   nats_failover_ms      a writer process (this program, mode "writer") owning
 *                         every partition and writing, SIGKILLed: the time until
 *                         the surviving node's first accepted write (lease 1 s)
 *   nats_catchup_N_ms     a node joining after N records (default 100,000) of
 *                         1,000 instances: uf_nats_node_new + start + a sync,
 *                         with snapshots every 1,000 records of a partition
 *
 *   bench_nats writer URL MODEL   (the failover's writer: owns everything,
 *                                 prints "ready", then writes until killed)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <nats/nats.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uniflow.h"
#include "uniflow_nats.h"

extern char **environ;

#define PARTITIONS 4
#define DEFINITION                                                                                         \
    "{\"feature\":\"K\",\"instances\":\"keyed\",\"states\":{\"S\":{\"fields\":{\"n\":{\"type\":\"integer\",\"default\":0}}}},"     \
    "\"initial\":[\"S\"],\"transitions\":{\"S\":[\"S\"]}}"

/* The catch-up's model adds an aggregate, as examples/definitions/downloads.json
 * has: the global partition's bindings run over every record of the others, and
 * its records carry after[p] on, which lets the owner purge what its snapshots
 * cover (with no binding of a single feature, after[p] stays at the global
 * partition's claim and nothing is purged: bench/README.md). */
#define DEFINITION_WITH_TOTAL                                                                              \
    "[" DEFINITION ",{\"feature\":\"Total\",\"states\":{\"Counting\":{\"fields\":{\"started\":"            \
    "{\"type\":\"integer\",\"default\":0}}}},\"initial\":[\"Counting\"],\"transitions\":{\"Counting\":[]},"    \
    "\"bindings\":[{\"when\":\"InitializationInto<K.S>\",\"then\":{\"submit\":[{\"kind\":\"actualize\","        \
    "\"feature\":\"Total\",\"in\":\"Counting\",\"payload\":{\"started\":{\"$\":{\"+\":[{\"var\":"             \
    "\"model.Total.payload.started\"},1]}}}}]}}]}]"

static const char *url;
static int reps = 5;
static double time_ms = 300;
static long records = 100000;
static const char *only;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_nats: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool wanted(const char *prefix) {
    if (!only) return true;
    const char *p = only;
    size_t n = strlen(prefix);
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= n && strncmp(p, prefix, n) == 0) return true;
        if (!end) break;
        p = end + 1;
    }
    return false;
}

/* --- a node ----------------------------------------------------------------------- */

typedef struct {
    uf_dispatcher *d;
    uf_nats_node *n;
} node;

static node node_new_with(const char *definitions, const char *name, const char *model, const char *extra) {
    node x = {0};
    char options[512];
    snprintf(options, sizeof options, "{\"partitions\":%d,\"node\":\"%s\"}", PARTITIONS, name);
    if (uf_dispatcher_new(&x.d, options) != UF_OK) die("uf_dispatcher_new: %s", uf_last_error());
    if (uf_register(x.d, definitions) != UF_OK) die("uf_register: %s", uf_last_error());
    snprintf(options, sizeof options, "{\"url\":\"%s\",\"model\":\"%s\"%s%s}", url, model, extra ? "," : "",
             extra ? extra : "");
    if (uf_nats_node_new(&x.n, x.d, options) != UF_OK) die("uf_nats_node_new: %s", uf_nats_last_error());
    if (uf_nats_node_start(x.n) != UF_OK) die("uf_nats_node_start: %s", uf_nats_last_error());
    return x;
}

static node node_new(const char *name, const char *model, const char *extra) {
    return node_new_with(DEFINITION, name, model, extra);
}

static void node_free(node *x) {
    uf_nats_node_free(x->n);
    uf_dispatcher_free(x->d);
    x->n = NULL;
    x->d = NULL;
}

/* The node's "owned" array has `count` entries. */
static bool owns(node *x, size_t count) {
    char *status = NULL;
    if (uf_nats_node_status(x->n, &status) != UF_OK) die("status: %s", uf_nats_last_error());
    json_t *j = json_loads(status, 0, NULL);
    uf_free(status);
    bool ok = j && json_array_size(json_object_get(j, "owned")) == count;
    json_decref(j);
    return ok;
}

static void wait_owning(node *x, size_t count) {
    for (int i = 0; i < 3000 && !owns(x, count); ++i) sleep_ms(10);
    if (!owns(x, count)) die("the node did not come to own %zu partitions in 30 s", count);
}

/* The first key k<i> (i >= *from) in partition p. */
static void key_in(uf_dispatcher *d, uint32_t p, char *key, size_t size) {
    for (int i = 0;; ++i) {
        snprintf(key, size, "k%d", i);
        uint32_t q;
        if (uf_partition_of(d, "K", key, &q) != UF_OK) die("uf_partition_of: %s", uf_last_error());
        if (q == p) return;
    }
}

static int submit_n(uf_nats_node *n, const char *key, long value) {
    char action[256];
    snprintf(action, sizeof action,
             "{\"kind\":\"actualize\",\"feature\":\"K\",\"key\":\"%s\",\"in\":\"S\",\"payload\":{\"n\":%ld}}", key,
             value);
    return uf_nats_submit(n, action);
}

static void initialize(uf_nats_node *n, const char *key) {
    char action[256];
    snprintf(action, sizeof action, "{\"kind\":\"initialize\",\"feature\":\"K\",\"key\":\"%s\",\"into\":\"S\"}", key);
    int rc = uf_nats_submit(n, action);
    if (rc != UF_OK) die("initialize %s: %s", key, uf_nats_last_error());
}

static void emit(const char *name, int rep, double ns, long iters) {
    printf("{\"scenario\":\"%s\",\"rep\":%d,\"ns\":%.3f,\"iters\":%ld}\n", name, rep, ns, iters);
    fflush(stdout);
}

static void metric(const char *name, double value, const char *unit) {
    printf("{\"metric\":\"%s\",\"value\":%.3f,\"unit\":\"%s\"}\n", name, value, unit);
    fflush(stdout);
}

/* --- nats_raw_publish vs nats_node_submit -------------------------------------------- */

static char captured[4096];
static int capture(const uf_record *r, void *payload) {
    (void)payload;
    snprintf(captured, sizeof captured, "%s", uf_record_json(r));
    return UF_OK;
}

static uint32_t fnv1a32(const char *s, size_t n) {
    uint32_t h = 0x811C9DC5u;
    for (size_t i = 0; i < n; ++i) h = (h ^ (unsigned char)s[i]) * 0x01000193u;
    return h;
}

/* The record a node writes for submit_n(key, 1): what the raw publish sends. */
static void capture_record(const char *key) {
    uf_dispatcher *d;
    char options[128];
    snprintf(options, sizeof options, "{\"partitions\":%d,\"node\":\"a\"}", PARTITIONS);
    if (uf_dispatcher_new(&d, options) != UF_OK || uf_register(d, DEFINITION) != UF_OK) die("capture dispatcher");
    uf_record_sink(d, capture, NULL, NULL);
    uint32_t p;
    uf_partition_of(d, "K", key, &p);
    uf_partition_claim(d, p);
    char action[256];
    snprintf(action, sizeof action, "{\"kind\":\"initialize\",\"feature\":\"K\",\"key\":\"%s\",\"into\":\"S\"}", key);
    uf_submit(d, action);
    snprintf(action, sizeof action,
             "{\"kind\":\"actualize\",\"feature\":\"K\",\"key\":\"%s\",\"in\":\"S\",\"payload\":{\"n\":1}}", key);
    if (uf_submit(d, action) != UF_OK) die("capture: %s", uf_last_error());
    uf_dispatcher_free(d);
}

typedef struct {
    natsConnection *nc;
    jsCtx *js;
    const char *subject;
    unsigned partition; /* in the message ids: a duplicate id would be deduplicated */
    natsSubscription *follower;
    uint64_t last;
    uint64_t version;
} raw_log;

/* What a node's apply thread does at least with each record it is sent: read its
 * metadata (here on libnats' delivery thread). */
static void raw_echo(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure) {
    (void)nc, (void)sub, (void)closure;
    jsMsgMetaData *meta = NULL;
    if (natsMsg_GetMetaData(&meta, m) == NATS_OK) jsMsgMetaData_Destroy(meta);
    natsMsg_Destroy(m);
}

/* A connection publishing to `subject` of the stream RAW (made by the first);
 * `follow`: with an ordered push consumer of the subject, as a node has. */
static void raw_open(raw_log *r, const char *subject, unsigned partition, bool follow) {
    memset(r, 0, sizeof *r);
    r->subject = subject;
    r->partition = partition;
    if (natsConnection_ConnectTo(&r->nc, url) != NATS_OK) die("raw connect to %s", url);
    if (natsConnection_JetStream(&r->js, r->nc, NULL) != NATS_OK) die("raw JetStream");
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    const char *subjects[] = {"raw.p.>"};
    cfg.Name = "RAW";
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage; /* as the adapter's stream */
    jsStreamInfo *si = NULL;
    jsErrCode ec = 0;
    natsStatus st = js_AddStream(&si, r->js, &cfg, NULL, &ec);
    if (st != NATS_OK && ec != JSStreamNameExistErr) die("raw stream: error %d", (int)ec);
    jsStreamInfo_Destroy(si);
    if (follow) {
        jsSubOptions so;
        jsSubOptions_Init(&so);
        so.Stream = "RAW";
        so.Ordered = true;
        if (js_Subscribe(&r->follower, r->js, subject, raw_echo, NULL, NULL, &so, &ec) != NATS_OK)
            die("raw follower: error %d", (int)ec);
    }
}

/* One record as the adapter publishes it (publish.c): same bytes, a message id of
 * the same form, the expected last subject sequence, a synchronous acknowledgement. */
static void raw_publish(raw_log *r) {
    size_t len = strlen(captured);
    char id[96];
    r->version++;
    snprintf(id, sizeof id, "%s:%u:%llu:%08x", "0123456789abcdef", r->partition, (unsigned long long)r->version,
             fnv1a32(captured, len));
    natsMsg *msg = NULL;
    if (natsMsg_Create(&msg, r->subject, NULL, captured, (int)len) != NATS_OK) die("natsMsg_Create");
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id;
    if (r->last == 0) po.ExpectNoMessage = true;
    else po.ExpectLastSubjectSeq = r->last;
    po.MaxWait = 2000 / 3;
    jsPubAck *ack = NULL;
    jsErrCode ec = 0;
    if (js_PublishMsg(&ack, r->js, msg, &po, &ec) != NATS_OK || !ack) die("raw publish on %s: error %d", r->subject, (int)ec);
    if (ack->Duplicate) die("raw publish on %s: the server took it for a duplicate", r->subject);
    r->last = ack->Sequence;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(msg);
}

static void raw_close(raw_log *r) {
    if (r->follower) {
        natsSubscription_Unsubscribe(r->follower);
        natsSubscription_Destroy(r->follower);
    }
    jsCtx_Destroy(r->js);
    natsConnection_Destroy(r->nc);
}

static void bench_publish(void) {
    node a = node_new("a", "bench_publish", NULL);
    wait_owning(&a, PARTITIONS + 1);
    char key[32];
    key_in(a.d, 0, key, sizeof key);
    initialize(a.n, key);
    capture_record(key);
    raw_log raw, following;
    raw_open(&raw, "raw.p.0", 0, false);
    raw_open(&following, "raw.p.1", 1, true);
    long value = 0;
    for (int i = 0; i < 200; ++i) { /* warm-up, all three */
        raw_publish(&raw);
        raw_publish(&following);
        if (submit_n(a.n, key, ++value) != UF_OK) die("submit: %s", uf_nats_last_error());
    }
    for (int rep = 0; rep < reps; ++rep) {
        for (int follow = 0; follow <= 1; ++follow) {
            long n = 0;
            double start = now_ns(), end = start + time_ms * 1e6, t;
            while ((t = now_ns()) < end) {
                raw_publish(follow ? &following : &raw);
                ++n;
            }
            emit(follow ? "nats_raw_publish_following" : "nats_raw_publish", rep, (t - start) / (double)n, n);
        }
        long n = 0;
        double start = now_ns(), end = start + time_ms * 1e6, t;
        while ((t = now_ns()) < end) {
            int rc = submit_n(a.n, key, ++value);
            if (rc != UF_OK) die("submit: %s", uf_nats_last_error());
            ++n;
        }
        emit("nats_node_submit", rep, (t - start) / (double)n, n);
    }
    printf("{\"check\":\"nats_node_submit\",\"record_bytes\":%zu,\"ok\":true}\n", strlen(captured));
    raw_close(&raw);
    raw_close(&following);
    node_free(&a);
}

/* --- nats_threads_1 / nats_threads_4 ------------------------------------------------- */

typedef struct {
    uf_nats_node *n;
    char key[32];
    double end;
    long count;
    long value;
} writer_arg;

static void *writer_thread(void *p) {
    writer_arg *w = p;
    while (now_ns() < w->end) {
        if (submit_n(w->n, w->key, ++w->value) != UF_OK) die("submit: %s", uf_nats_last_error());
        w->count++;
    }
    return NULL;
}

static void bench_threads(void) {
    node a = node_new("a", "bench_threads", NULL);
    wait_owning(&a, PARTITIONS + 1);
    writer_arg w[4];
    memset(w, 0, sizeof w);
    for (uint32_t p = 0; p < 4; ++p) {
        w[p].n = a.n;
        key_in(a.d, p, w[p].key, sizeof w[p].key);
        initialize(a.n, w[p].key);
    }
    for (int rep = 0; rep < reps; ++rep) {
        for (int threads = 1; threads <= 4; threads += 3) {
            pthread_t t[4];
            double start = now_ns();
            for (int i = 0; i < threads; ++i) {
                w[i].end = start + time_ms * 1e6;
                w[i].count = 0;
                pthread_create(&t[i], NULL, writer_thread, &w[i]);
            }
            long total = 0;
            for (int i = 0; i < threads; ++i) {
                pthread_join(t[i], NULL);
                total += w[i].count;
            }
            double took = now_ns() - start;
            emit(threads == 1 ? "nats_threads_1" : "nats_threads_4", rep, took / (double)total, total);
        }
    }
    node_free(&a);
}

/* --- nats_failover_ms ------------------------------------------------------------------ */

#define FAILOVER_LEASE_MS 1000
#define FAILOVER_OPTIONS "\"lease_ms\":1000,\"timeout_ms\":200"

static int writer_main(const char *model) __attribute__((noreturn));
static int writer_main(const char *model) {
    node w = node_new("w", model, FAILOVER_OPTIONS);
    wait_owning(&w, PARTITIONS + 1);
    char key[32];
    key_in(w.d, 0, key, sizeof key);
    initialize(w.n, key);
    printf("ready\n");
    fflush(stdout);
    for (long v = 1;; ++v) submit_n(w.n, key, v); /* until SIGKILL */
}

static void bench_failover(const char *self) {
    for (int rep = 0; rep < reps; ++rep) {
        char model[64];
        snprintf(model, sizeof model, "bench_failover_%d_%d", (int)getpid(), rep);
        int out[2];
        if (pipe(out) != 0) die("pipe");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_addclose(&fa, out[0]);
        char *argv[] = {(char *)self, "writer", (char *)url, model, NULL};
        pid_t child;
        if (posix_spawn(&child, self, &fa, NULL, argv, environ) != 0) die("spawn the writer");
        posix_spawn_file_actions_destroy(&fa);
        close(out[1]);
        char line[32] = "";
        FILE *f = fdopen(out[0], "r");
        if (!fgets(line, sizeof line, f) || strncmp(line, "ready", 5) != 0) die("the writer did not start");
        node s = node_new("s", model, FAILOVER_OPTIONS);
        char key[32];
        key_in(s.d, 0, key, sizeof key);
        sleep_ms(300); /* the writer writes on; the survivor follows */
        kill(child, SIGKILL);
        double killed = now_ns();
        waitpid(child, NULL, 0);
        fclose(f);
        long tries = 0;
        for (;; ++tries) {
            int rc = submit_n(s.n, key, -1);
            if (rc == UF_OK) break;
            if (rc != UF_ENOTOWNER && rc != UF_EUNAVAILABLE && rc != UF_ECONFLICT)
                die("survivor: %s", uf_nats_last_error());
            if (now_ns() - killed > 30e9) die("no accepted write 30 s after the SIGKILL");
            sleep_ms(5);
        }
        metric("nats_failover_ms", (now_ns() - killed) / 1e6, "ms");
        node_free(&s);
    }
}

/* --- nats_catchup ------------------------------------------------------------------------ */

static void bench_catchup(void) {
    char name[64];
    snprintf(name, sizeof name, "nats_catchup_%ld_ms", records);
    /* snapshot_every: the default 1000 */
    node a = node_new_with(DEFINITION_WITH_TOTAL, "a", "bench_catchup", NULL);
    wait_owning(&a, PARTITIONS + 1);
    if (uf_nats_submit(a.n, "{\"kind\":\"initialize\",\"feature\":\"Total\",\"into\":\"Counting\"}") != UF_OK)
        die("initialize Total: %s", uf_nats_last_error());
    enum { KEYS = 1000 };
    char key[32];
    for (int k = 0; k < KEYS && k < records; ++k) {
        snprintf(key, sizeof key, "c%d", k);
        initialize(a.n, key);
    }
    double start = now_ns();
    for (long i = KEYS; i < records; ++i) {
        snprintf(key, sizeof key, "c%ld", i % KEYS);
        int rc = submit_n(a.n, key, i);
        if (rc != UF_OK) die("catch-up writer: %s", uf_nats_last_error());
    }
    fprintf(stderr, "bench_nats: %ld records written in %.1f s\n", records, (now_ns() - start) / 1e9);
    sleep_ms(1500); /* the last snapshots go out */
    char *expected = NULL;
    uf_state_get(a.d, &expected);
    int joins = reps < 3 ? reps : 3;
    for (int rep = 0; rep < joins; ++rep) {
        char joiner[16];
        snprintf(joiner, sizeof joiner, "j%d", rep);
        double t0 = now_ns();
        node j = node_new_with(DEFINITION_WITH_TOTAL, joiner, "bench_catchup", "\"owns\":\"none\"");
        if (uf_nats_sync(j.n, 30000) != UF_OK) die("sync: %s", uf_nats_last_error());
        double took = (now_ns() - t0) / 1e6;
        char *state = NULL;
        uf_state_get(j.d, &state);
        /* The same model: equal as JSON (the order of instances differs: a snapshot
         * restores a partition's instances together). */
        json_t *mine = json_loads(state, 0, NULL), *theirs = json_loads(expected, 0, NULL);
        bool same = mine && theirs && json_equal(mine, theirs);
        json_decref(mine);
        json_decref(theirs);
        if (!same) {
            size_t at = 0;
            while (state[at] && state[at] == expected[at]) at++;
            char *status = NULL;
            uf_nats_node_status(j.n, &status);
            die("the joining node's model differs from the writer's at byte %zu: ...%.120s... vs ...%.120s...\n%s",
                at, state + (at > 40 ? at - 40 : 0), expected + (at > 40 ? at - 40 : 0), status);
        }
        uf_free(state);
        metric(name, took, "ms");
        node_free(&j);
    }
    printf("{\"check\":\"%s\",\"records\":%ld,\"same_model\":true,\"ok\":true}\n", name, records);
    uf_free(expected);
    node_free(&a);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "writer") == 0) {
        url = argv[2];
        return writer_main(argv[3]);
    }
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) url = argv[++i];
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--time-ms") == 0 && i + 1 < argc) time_ms = atof(argv[++i]);
        else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc) records = atol(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else die("unknown argument %s", argv[i]);
    }
    if (!url) die("--url is required");
    if (reps < 1) reps = 1;
    if (wanted("nats_raw_publish") || wanted("nats_node_submit")) bench_publish();
    if (wanted("nats_threads_")) bench_threads();
    if (wanted("nats_failover")) bench_failover(argv[0]);
    if (wanted("nats_catchup")) bench_catchup();
    return 0;
}
