/*
 * scenarios_partitions.c — partitioned dispatchers (docs/scale-out.md,
 * bench/README.md's group 11). Both rows do uf_submit_actualize's action (an
 * actualize of the single feature Transfer with a 5-field payload, submitted as
 * JSON: the general path, which every action of a partitioned dispatcher takes),
 * so both are compared with that row:
 *
 *   uf_partitioned_submit  uf_submit of that text on a node ({"partitions": 16,
 *                          "node": "a"}) that has claimed every partition, its
 *                          record sink accepting each record at once after reading
 *                          its text: at most 2x uf_submit_actualize
 *   uf_record_apply_one    a follower (node "b") applying, in order, the records
 *                          of that actualize a writer node made: one mutation per
 *                          record, at most 1.5x the same mutation made locally
 *                          (uf_submit_actualize)
 *
 * Transfer is a single feature, so its records are the global partition's (16).
 * A record can be applied once (a record at or below the partition's version is
 * a duplicate, and changes nothing), so the follower's records are made before
 * each run by the writer (the scenario's prepare step, not timed) and applied in
 * order by the run; the follower's counting subscriber must see one mutation
 * per record, which a duplicate would not give.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARTITIONS 16
#define WRITER_OPTIONS "{\"partitions\":16,\"node\":\"a\"}"
#define FOLLOWER_OPTIONS "{\"partitions\":16,\"node\":\"b\"}"

#ifdef UF_ENOTOWNER /* the header has the partitions */

/* A node, or NULL with the row skipped when the library does not know the options. */
static uf_dispatcher *new_node(scenario *s, const char *options) {
    uf_dispatcher *d = NULL;
    int status = uf_dispatcher_new(&d, options);
    if (status == UF_EINVAL) {
        char why[512];
        snprintf(why, sizeof why, "this library has no partitioned dispatchers (uf_dispatcher_new: %s)", uf_last_error());
        skip_scenario(s, why);
        return NULL;
    }
    check_status(status, UF_OK, "uf_dispatcher_new (partitioned)");
    return d;
}

static void register_transfer(uf_dispatcher *d) {
    check_status(uf_register(d, transfer_definition), UF_OK, "register Transfer");
}

/* Every partition, the global one (PARTITIONS) included: one claim record each. */
static void claim_all(uf_dispatcher *d) {
    for (uint32_t p = 0; p <= PARTITIONS; ++p) check_status(uf_partition_claim(d, p), UF_OK, "uf_partition_claim");
}

/* --- uf_partitioned_submit --- */

/* What the accepting sink saw. */
static struct {
    uint64_t records, bytes;
} accepted;

/* A log that accepts at once: the sink reads the text, as one that sends it
 * anywhere must, and says UF_OK. */
static int accept_record(const uf_record *r, void *payload) {
    (void)payload;
    accepted.bytes += strlen(uf_record_json(r));
    ++accepted.records;
    return UF_OK;
}

static void setup_partitioned_submit(scenario *s) {
    s->d = new_node(s, WRITER_OPTIONS);
    if (!s->d) return;
    register_transfer(s->d);
    subscribe_counter(s->d, "AnyMutationOf<Transfer>", &s->notified);
    check_status(uf_record_sink(s->d, accept_record, NULL, NULL), UF_OK, "uf_record_sink");
    claim_all(s->d);
    initialize_transfer(s->d);
    s->notified = 0;
    accepted.records = accepted.bytes = 0;
    s->json[0] = s->json[1] = actualize_json;
}

/* One record per action, each read. */
static void check_partitioned_submit(scenario *s) {
    if (accepted.records != s->applied)
        die("%s: %llu actions applied but the sink saw %llu records", s->name, (unsigned long long)s->applied,
            (unsigned long long)accepted.records);
    if (accepted.bytes < accepted.records * 100) die("%s: the sink read %llu bytes", s->name, (unsigned long long)accepted.bytes);
}

/* --- uf_record_apply_one --- */

/* The writer's records, in the order its sink was given them; `next` is the
 * first the follower has not applied. */
static struct {
    char **texts;
    long count, cap, next;
} records;
static uf_dispatcher *writer;

/* The writer's sink: a log that keeps every record. */
static int store_record(const uf_record *r, void *payload) {
    (void)payload;
    if (records.count == records.cap) {
        records.cap = records.cap ? records.cap * 2 : 1024;
        records.texts = realloc(records.texts, (size_t)records.cap * sizeof *records.texts);
        if (!records.texts) die("out of memory");
    }
    char *copy = strdup(uf_record_json(r));
    if (!copy) die("out of memory");
    records.texts[records.count++] = copy;
    return UF_OK;
}

/* Forgets the records the follower applied; every record made must have been. */
static void drop_applied(const char *name) {
    if (records.next != records.count)
        die("%s: %ld records made, %ld applied", name, records.count, records.next);
    for (long i = 0; i < records.count; ++i) free(records.texts[i]);
    records.count = records.next = 0;
}

static void apply_all(scenario *s) {
    for (; records.next < records.count; ++records.next)
        check_status(uf_record_apply(s->d, records.texts[records.next]), UF_OK, "uf_record_apply");
}

/* The writer claims every partition and initializes Transfer; the follower
 * applies those records (claims and the initialization) before the run. */
static void setup_record_apply(scenario *s) {
    writer = new_node(s, WRITER_OPTIONS);
    if (!writer) return;
    register_transfer(writer);
    check_status(uf_record_sink(writer, store_record, NULL, NULL), UF_OK, "uf_record_sink");
    claim_all(writer);
    initialize_transfer(writer);
    s->d = new_node(s, FOLLOWER_OPTIONS);
    register_transfer(s->d);
    subscribe_counter(s->d, "AnyMutationOf<Transfer>", &s->notified);
    apply_all(s);
    drop_applied(s->name);
    s->notified = 0;
}

/* Not timed: the writer makes the n records the run applies. */
static void prepare_records(scenario *s, long n) {
    drop_applied(s->name);
    for (long i = 0; i < n; ++i) submit(writer, actualize_json);
    if (records.count != n) die("%s: %ld actions made %ld records", s->name, n, records.count);
}

static void run_record_apply(scenario *s, long n) {
    char **texts = records.texts + records.next;
    for (long i = 0; i < n; ++i) {
        int status = uf_record_apply(s->d, texts[i]);
        if (__builtin_expect(status != UF_OK, 0)) check_status(status, UF_OK, s->name);
    }
    records.next += n;
    s->applied += (uint64_t)n;
}

/* The global partition's version of a node (from uf_partitions_get). */
static long global_version(uf_dispatcher *d) {
    char *json = NULL;
    check_status(uf_partitions_get(d, &json), UF_OK, "uf_partitions_get");
    char key[32];
    snprintf(key, sizeof key, "{\"p\":%d,\"version\":", PARTITIONS);
    const char *at = json ? strstr(json, key) : NULL;
    if (!at) die("uf_partitions_get: no %s in %s", key, json ? json : "(null)");
    long version = strtol(at + strlen(key), NULL, 10);
    uf_free(json);
    return version;
}

/* The follower has applied every record the writer made. */
static void check_record_apply(scenario *s) {
    drop_applied(s->name);
    long mine = global_version(s->d), theirs = global_version(writer);
    if (mine != theirs) die("%s: the follower is at version %ld, the writer at %ld", s->name, mine, theirs);
}

#else /* a header without partitions: the rows are not run */

static void skip_no_header(scenario *s) { skip_scenario(s, "the header has no partitioned dispatchers (uf_record_sink)"); }
#define setup_partitioned_submit skip_no_header
#define setup_record_apply skip_no_header
#define check_partitioned_submit NULL
#define check_record_apply NULL
#define prepare_records NULL
#define run_record_apply run_submit_toggle

#endif

static scenario scenarios[] = {
    SCENARIO_CHECKED("uf_partitioned_submit",
                     "uf_submit_actualize's text on a node owning all 16+1 partitions, sink accepting at once",
                     setup_partitioned_submit, run_submit_toggle, check_partitioned_submit),
    SCENARIO_PREPARED("uf_record_apply_one", "a follower's uf_record_apply of a record of that actualize (in order)",
                      setup_record_apply, prepare_records, run_record_apply, check_record_apply),
};
scenario *const partitions_scenarios = scenarios;
const int partitions_scenario_count = COUNT_OF(scenarios);
const bench_mode *const partitions_modes = NULL;
const int partitions_mode_count = 0;
