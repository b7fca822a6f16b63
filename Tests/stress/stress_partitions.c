/*
 * stress_partitions.c — partitioned dispatchers under threads: a writer node whose
 * record sink writes to an in-memory log, and a follower node that applies the
 * log's records from another thread, for at least a given time and until each
 * kind of event it checks has happened (d.).
 *
 * The writer ("w", 4 partitions, "timers": "thread") owns every partition. Worker
 * threads pick at random: initialize, transition, actualize or deinitialize an
 * instance of the keyed feature Job (32 keys, so that they collide), act on the
 * single feature Counter (the global partition; entering Busy actualizes it
 * through a model binding, a cascade in the same record, and Busy fires a 1 ms
 * state timer, a record made on the timer thread), claim a partition it owns
 * again, release a partition and claim it back (actions on it meanwhile are
 * UF_ENOTOWNER), or read (the model, the partitions). The log keeps each
 * partition's records in a mutex-protected array and refuses a random few with
 * UF_ECONFLICT or UF_EUNAVAILABLE (the call fails with that status and changes
 * nothing); it accepts a record only when its version follows the partition's
 * last (a single writer never breaks that).
 *
 * The follower ("r", the same definitions and options) owns nothing. Its thread
 * applies each partition's new records in order (each UF_OK), and now and then an
 * old one again (a duplicate: UF_OK) or one past the next (UF_EGAP: nothing
 * changes). A reader thread reads the follower's model and partitions meanwhile.
 * Each node has a subscriber: the writer's sees only its own mutations, the
 * follower's only foreign ones (uf_mutation_foreign).
 *
 * The model binding is on the single feature: a keyed feature's binding that
 * inherits the key (TransitionInto<Job.Done> then deinitialize Job) reads freed
 * memory in the core's staged policy (its record's action names a garbage key);
 * move it back to Job once that is fixed.
 *
 * Once the run is over and the writer's timers have run out, the follower applies
 * the rest of the log, and:
 *   a. the follower's model equals the writer's: each instance (uf_instance_get,
 *      uf_feature_get), and uf_state_get but for the order of the instances (the
 *      order they were made in, which differs when the follower applied the
 *      partitions in another interleaving);
 *   b. every partition's version, on both nodes, equals the log's record count;
 *      the writer owns every partition ("mine"), the follower none, and it names
 *      "w" as their owner;
 *   c. the follower was told of as many mutations as the writer's subscriber saw,
 *      all foreign, the writer's none; every payload_free ran exactly once;
 *   d. the run did something: records of every partition, refusals of both kinds
 *      (and the calls failed with them), a record by the state timer, a claim
 *      again, a release and an action refused with UF_ENOTOWNER, records applied,
 *      duplicates and gaps applied. The run goes on past the time asked for until
 *      each has happened, up to a cap (10 times the time asked for, plus 120 s),
 *      then fails naming what never happened.
 *
 * Environment: UNIFLOW_STRESS_SECONDS (the least length of the run, default 3),
 * UNIFLOW_STRESS_THREADS (writer threads, default 4; 1 to 64), UNIFLOW_STRESS_SEED
 * (default: the time; printed). A bad value is an error (exit 2).
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

#define STRESS_NAME "stress_partitions"
#include "stress_common.h"

enum { MAX_THREADS = 64, PARTITIONS = 4, ALL = PARTITIONS + 1, KEYS = 32 };

static uf_dispatcher *writer, *follower;
static atomic_int problems;
static atomic_int stopping;        /* the run is over: the writer threads return */
static atomic_int follower_stopping; /* the follower thread returns (after the writers) */
static uint64_t seed;

static void problem(const char *what, const char *detail) {
    if (atomic_fetch_add(&problems, 1) < 30)
        fprintf(stderr, "stress_partitions: PROBLEM: %s %s\n", what, detail ? detail : "");
}

static const char definitions[] =
    "{\"features\": ["
    "{\"feature\":\"Job\",\"instances\":\"keyed\","
    " \"states\":{\"Queued\":{},\"Running\":{\"fields\":{\"n\":{\"type\":\"integer\",\"default\":0}}},\"Done\":{}},"
    " \"initial\":[\"Queued\"],"
    " \"transitions\":{\"Queued\":[\"Running\"],\"Running\":[\"Running\",\"Done\",\"Queued\"],\"Done\":[]}},"
    "{\"feature\":\"Counter\",\"states\":{\"Idle\":{\"fields\":{\"v\":{\"type\":\"integer\",\"default\":0}}},"
    " \"Busy\":{\"fields\":{\"n\":{\"type\":\"integer\",\"default\":0}},"
    "   \"after\":[{\"ms\":1,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Counter\",\"from\":\"Busy\",\"into\":\"Idle\"}]}]}},"
    " \"bindings\":[{\"when\":\"TransitionInto<Counter.Busy>\","
    "              \"then\":{\"submit\":[{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Busy\",\"payload\":{\"n\":1}}]}}]}"
    "]}";

/* ---- the log ---------------------------------------------------------------------- */

static struct {
    pthread_mutex_t lock;
    char **records;
    size_t count, capacity;
} log_of[ALL];

static atomic_ulong sink_calls, same_text;

/* d. Each kind of event a run must have seen. */
static atomic_ulong partition_records[ALL], refused_conflict, refused_unavailable, failed_conflict,
    failed_unavailable, timer_records, claims_again, releases, not_owner, applied, duplicates, gaps, reads;

static int sink(const uf_record *r, void *payload) {
    if (payload != &log_of) problem("the sink's payload is not the one given", NULL);
    uint32_t p = ALL;
    uint64_t v = 0;
    const char *text = uf_record_json(r);
    if (uf_record_partition(r, &p) != UF_OK || uf_record_version(r, &v) != UF_OK || !text || p >= ALL) {
        problem("a record's accessors failed:", uf_last_error());
        return UF_ECONFLICT;
    }
    /* A random few are refused, the same way for a given seed and call. */
    uint64_t call = atomic_fetch_add(&sink_calls, 1) + 1, mix = seed ^ (call * 0x9E3779B97F4A7C15ull);
    uint64_t pick = next_random(&mix) % 100;
    if (pick < 3) {
        atomic_fetch_add(&refused_conflict, 1);
        return UF_ECONFLICT;
    }
    if (pick < 5) {
        atomic_fetch_add(&refused_unavailable, 1);
        return UF_EUNAVAILABLE;
    }
    pthread_mutex_lock(&log_of[p].lock);
    int status = UF_OK;
    if (v != log_of[p].count + 1) {
        char detail[96];
        snprintf(detail, sizeof detail, "partition %u: version %llu after %zu records", p, (unsigned long long)v,
                 log_of[p].count);
        problem("the single writer's record does not follow the log's last:", detail);
        status = UF_ECONFLICT;
    } else {
        if (log_of[p].count == log_of[p].capacity) {
            log_of[p].capacity = log_of[p].capacity ? 2 * log_of[p].capacity : 64;
            log_of[p].records = realloc(log_of[p].records, log_of[p].capacity * sizeof *log_of[p].records);
            if (!log_of[p].records) abort();
        }
        char *copy = strdup(text);
        if (!copy) abort();
        log_of[p].records[log_of[p].count++] = copy;
        atomic_fetch_add(&partition_records[p], 1);
        if (strstr(text, "\"timer\":\"Counter.Busy.after[0]\"")) atomic_fetch_add(&timer_records, 1);
    }
    pthread_mutex_unlock(&log_of[p].lock);
    return status;
}

/* The log's record i of partition p (NULL past its end): the text stays put. */
static const char *log_record(uint32_t p, size_t i, size_t *count) {
    pthread_mutex_lock(&log_of[p].lock);
    const char *text = i < log_of[p].count ? log_of[p].records[i] : NULL;
    if (count) *count = log_of[p].count;
    pthread_mutex_unlock(&log_of[p].lock);
    return text;
}

/* ---- subscribers and payloads ------------------------------------------------------ */

typedef struct observer {
    const char *name;
    int want_foreign;
    unsigned long mutations; /* touched in callbacks only (one at a time per dispatcher) */
    atomic_int freed;
} observer;

static observer writer_seen = {"the writer's subscriber", 0, 0, 0};
static observer follower_seen = {"the follower's subscriber", 1, 0, 0};
static atomic_int sink_freed;

static int on_mutation(const uf_mutation *m, void *payload) {
    observer *o = payload;
    if (atomic_load(&o->freed)) problem(o->name, "ran after its payload_free");
    if (uf_mutation_foreign(m) != o->want_foreign) problem(o->name, o->want_foreign ? "saw a mutation that is not foreign:" : "saw a foreign mutation:");
    ++o->mutations;
    return UF_KEEP;
}

static void free_observer(void *payload) {
    observer *o = payload;
    if (atomic_fetch_add(&o->freed, 1) != 0) problem(o->name, "payload_free ran twice");
}

static void free_sink(void *payload) {
    if (payload != &log_of) problem("the sink's payload_free got another payload", NULL);
    if (atomic_fetch_add(&sink_freed, 1) != 0) problem("the sink's payload_free ran twice", NULL);
}

/* ---- the writer's threads ------------------------------------------------------------ */

/* Held while a thread claims a partition again, or releases one and claims it
 * back: an action between a release and its claim back must be UF_ENOTOWNER. */
static pthread_mutex_t ownership = PTHREAD_MUTEX_INITIALIZER;

static int refused(int status) { return status == UF_ECONFLICT || status == UF_EUNAVAILABLE; }

static void count_refusal(int status) {
    if (status == UF_ECONFLICT) atomic_fetch_add(&failed_conflict, 1);
    if (status == UF_EUNAVAILABLE) atomic_fetch_add(&failed_unavailable, 1);
}

static void *writer_thread(void *arg) {
    uint64_t r = (uint64_t)(uintptr_t)arg;
    char action[256];
    while (!atomic_load(&stopping)) {
        next_random(&r);
        int op = (int)(r % 100), key = (int)((r >> 8) % KEYS), status;
        if (op < 70) {
            static const char *const forms[] = {
                "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"k%d\",\"into\":\"Queued\"}",
                "{\"kind\":\"transition\",\"feature\":\"Job\",\"key\":\"k%d\",\"into\":\"Running\",\"payload\":{\"n\":%d}}",
                "{\"kind\":\"actualize\",\"feature\":\"Job\",\"key\":\"k%d\",\"in\":\"Running\",\"payload\":{\"n\":%d}}",
                "{\"kind\":\"transition\",\"feature\":\"Job\",\"key\":\"k%d\",\"from\":\"Running\",\"into\":\"Done\"}",
                "{\"kind\":\"transition\",\"feature\":\"Job\",\"key\":\"k%d\",\"from\":\"Running\",\"into\":\"Queued\"}",
                "{\"kind\":\"deinitialize\",\"feature\":\"Job\",\"key\":\"k%d\"}",
            };
            snprintf(action, sizeof action, forms[(r >> 16) % 6], key, (int)((r >> 24) % 1000));
        } else if (op < 85) {
            static const char *const forms[] = {
                "{\"kind\":\"initialize\",\"feature\":\"Counter\",\"into\":\"Idle\"}",
                "{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Idle\",\"payload\":{\"v\":%d}}",
                "{\"kind\":\"transition\",\"feature\":\"Counter\",\"from\":\"Idle\",\"into\":\"Busy\"}",
                "{\"kind\":\"deinitialize\",\"feature\":\"Counter\"}",
            };
            snprintf(action, sizeof action, forms[(r >> 16) % 4], (int)((r >> 24) % 1000));
        } else if (op < 88) {
            /* Claim a partition it owns again: a new claim record. */
            uint32_t p = (uint32_t)((r >> 16) % ALL);
            pthread_mutex_lock(&ownership);
            status = uf_partition_claim(writer, p);
            if (status == UF_OK) atomic_fetch_add(&claims_again, 1);
            else if (refused(status)) count_refusal(status);
            else problem("claiming a partition again failed:", uf_last_error());
            pthread_mutex_unlock(&ownership);
            continue;
        } else if (op < 90) {
            /* Release a partition, try an action on it, claim it back. */
            uint32_t p = (uint32_t)((r >> 16) % ALL);
            pthread_mutex_lock(&ownership);
            status = uf_partition_release(writer, p);
            if (status == UF_OK) {
                atomic_fetch_add(&releases, 1);
                /* An instance of partition p: Counter for the global one, else a key that lands there. */
                const char *feature = p == PARTITIONS ? "Counter" : "Job";
                int k = 0;
                if (p < PARTITIONS) {
                    for (k = 0; k < 1000; ++k) {
                        char name[16];
                        uint32_t at = ALL;
                        snprintf(name, sizeof name, "k%d", k);
                        if (uf_partition_of(writer, "Job", name, &at) != UF_OK) problem("uf_partition_of failed:", uf_last_error());
                        if (at == p) break;
                    }
                }
                if (p == PARTITIONS) snprintf(action, sizeof action, "{\"kind\":\"trigger\",\"feature\":\"%s\"}", feature);
                else snprintf(action, sizeof action, "{\"kind\":\"trigger\",\"feature\":\"%s\",\"key\":\"k%d\"}", feature, k);
                status = uf_submit(writer, action);
                if (status == UF_ENOTOWNER) atomic_fetch_add(&not_owner, 1);
                else problem("an action on a released partition was not UF_ENOTOWNER:", uf_last_error());
            } else if (refused(status)) {
                count_refusal(status);
            } else {
                problem("uf_partition_release failed:", uf_last_error());
            }
            /* Claim it back until the log takes the claim (a refusal changes nothing). */
            for (int tries = 0; tries < 1000; ++tries) {
                status = uf_partition_claim(writer, p);
                if (status == UF_OK) break;
                if (refused(status)) count_refusal(status);
                else problem("claiming a partition back failed:", uf_last_error());
            }
            if (status != UF_OK) problem("a partition could not be claimed back", NULL);
            pthread_mutex_unlock(&ownership);
            continue;
        } else {
            char *out = NULL;
            status = (r >> 16) % 2 ? uf_state_get(writer, &out) : uf_partitions_get(writer, &out);
            if (status != UF_OK) problem("a read of the writer failed:", uf_last_error());
            uf_free(out);
            atomic_fetch_add(&reads, 1);
            continue;
        }
        status = uf_submit(writer, action);
        if (refused(status)) {
            count_refusal(status);
        } else if (status == UF_ENOTOWNER) {
            /* Another thread released the partition for a moment. */
        } else if (status != UF_OK && status != UF_REJECTED) {
            char detail[400];
            snprintf(detail, sizeof detail, "%s: %s (%s)", action, uf_status_name(status), uf_last_error());
            problem("an action failed:", detail);
        }
    }
    return NULL;
}

/* ---- the follower ----------------------------------------------------------------------- */

static size_t applied_of[ALL]; /* the follower thread's (and, after it, main's) */

/* Applies what the log has that the follower has not: returns how many. */
static size_t catch_up(uint64_t *r) {
    size_t done = 0;
    for (uint32_t p = 0; p < ALL; ++p) {
        size_t count;
        const char *text;
        while ((text = log_record(p, applied_of[p], &count)) != NULL) {
            int status = uf_record_apply(follower, text);
            if (status != UF_OK) {
                char detail[160];
                snprintf(detail, sizeof detail, "partition %u, record %zu: %s (%s)", p, applied_of[p] + 1,
                         uf_status_name(status), uf_last_error());
                problem("the follower refused the log's next record:", detail);
                return done;
            }
            ++applied_of[p];
            ++done;
            atomic_fetch_add(&applied, 1);
            if (!r) continue;
            next_random(r);
            if (*r % 8 == 0) {
                /* An old record again: a duplicate, UF_OK, nothing changes. */
                const char *old = log_record(p, (size_t)((*r >> 8) % applied_of[p]), NULL);
                if (uf_record_apply(follower, old) != UF_OK) problem("a duplicate was not UF_OK:", uf_last_error());
                else atomic_fetch_add(&duplicates, 1);
            } else if (*r % 8 == 1) {
                /* One past the next, if the log has it: UF_EGAP. */
                const char *later = log_record(p, applied_of[p] + 1, NULL);
                if (later) {
                    int status = uf_record_apply(follower, later);
                    if (status == UF_EGAP) atomic_fetch_add(&gaps, 1);
                    else problem("a record past the next was not UF_EGAP:", uf_status_name(status));
                }
            }
        }
    }
    return done;
}

static void *follower_thread(void *arg) {
    uint64_t r = (uint64_t)(uintptr_t)arg;
    while (!atomic_load(&follower_stopping))
        if (catch_up(&r) == 0) pause_ms(1);
    return NULL;
}

static void *reader_thread(void *arg) {
    (void)arg;
    while (!atomic_load(&follower_stopping)) {
        char *out = NULL;
        if (uf_state_get(follower, &out) != UF_OK) problem("a read of the follower failed:", uf_last_error());
        uf_free(out);
        out = NULL;
        if (uf_partitions_get(follower, &out) != UF_OK) problem("a read of the follower failed:", uf_last_error());
        uf_free(out);
        atomic_fetch_add(&reads, 1);
        pause_ms(1);
    }
    return NULL;
}

/* ---- coverage ------------------------------------------------------------------------------ */

static const struct coverage coverage[] = {
    {&partition_records[0], "no record of partition 0"},
    {&partition_records[1], "no record of partition 1"},
    {&partition_records[2], "no record of partition 2"},
    {&partition_records[3], "no record of partition 3"},
    {&partition_records[PARTITIONS], "no record of the global partition"},
    {&refused_conflict, "the log refused no record with UF_ECONFLICT"},
    {&refused_unavailable, "the log refused no record with UF_EUNAVAILABLE"},
    {&failed_conflict, "no call failed with UF_ECONFLICT"},
    {&failed_unavailable, "no call failed with UF_EUNAVAILABLE"},
    {&timer_records, "no record of a state timer firing"},
    {&claims_again, "no partition was claimed again"},
    {&releases, "no partition was released"},
    {&not_owner, "no action was refused with UF_ENOTOWNER"},
    {&applied, "the follower applied no record"},
    {&duplicates, "the follower applied no duplicate"},
    {&gaps, "the follower applied no record past the next (UF_EGAP)"},
};
enum { COVERAGE = sizeof coverage / sizeof coverage[0] };

/* The first kind of event that has not happened yet, or NULL. */
static const char *missing_event(void) { return first_missing(coverage, COVERAGE); }

/* b. A node's partitions: versions equal the log's counts; ownership as expected. */
static void check_partitions(uf_dispatcher *d, const char *who, int mine) {
    char *text = NULL;
    if (uf_partitions_get(d, &text) != UF_OK) {
        problem("uf_partitions_get failed:", uf_last_error());
        return;
    }
    for (uint32_t p = 0; p < ALL; ++p) {
        size_t count;
        log_record(p, 0, &count);
        char expected[96];
        snprintf(expected, sizeof expected, "{\"p\":%u,\"version\":%zu,\"owner\":\"w\",\"mine\":%s}", p, count,
                 mine ? "true" : "false");
        if (!strstr(text, expected)) {
            char detail[1024];
            snprintf(detail, sizeof detail, "%s: %s lacks %s", who, text, expected);
            problem("the partitions differ from the log:", detail);
        }
    }
    uf_free(text);
}

int main(void) {
    double seconds = env_number("UNIFLOW_STRESS_SECONDS", 3.0, 0.001, 1e7);
    int threads = (int)env_number("UNIFLOW_STRESS_THREADS", 4, 1, MAX_THREADS);
    const char *env = getenv("UNIFLOW_STRESS_SEED");
    seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    double cap = seconds * 10 + 120;
    printf("stress_partitions: %d writer threads, a follower and a reader, %g s and until every kind of event has "
           "happened (at most %.0f s), seed %llu (UNIFLOW_STRESS_SEED)\n",
           threads, seconds, cap, (unsigned long long)seed);

    for (int p = 0; p < ALL; ++p) pthread_mutex_init(&log_of[p].lock, NULL);
    const char *options = "{\"partitions\": 4, \"node\": \"w\", \"timers\": \"thread\"}";
    if (uf_dispatcher_new(&writer, options) != UF_OK || uf_register(writer, definitions) != UF_OK ||
        uf_record_sink(writer, sink, &log_of, free_sink) != UF_OK ||
        uf_subscribe(writer, NULL, on_mutation, &writer_seen, free_observer, NULL) != UF_OK ||
        uf_dispatcher_new(&follower, "{\"partitions\": 4, \"node\": \"r\", \"timers\": \"thread\"}") != UF_OK ||
        uf_register(follower, definitions) != UF_OK ||
        uf_subscribe(follower, NULL, on_mutation, &follower_seen, free_observer, NULL) != UF_OK) {
        fprintf(stderr, "stress_partitions: setup failed: %s\n", uf_last_error());
        return 1;
    }
    /* The writer owns every partition (a refused claim changes nothing: again). */
    for (uint32_t p = 0; p < ALL; ++p) {
        int status = UF_ECONFLICT;
        for (int tries = 0; tries < 100 && status != UF_OK; ++tries) {
            status = uf_partition_claim(writer, p);
            if (status != UF_OK && !refused(status)) break;
        }
        if (status != UF_OK) {
            fprintf(stderr, "stress_partitions: setup failed: claiming partition %u: %s\n", p, uf_last_error());
            return 1;
        }
    }

    double started = now();
    pthread_t writers[MAX_THREADS], follower_id, reader_id;
    for (int i = 0; i < threads; ++i) {
        uint64_t thread_seed = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull + 1;
        if (pthread_create(&writers[i], NULL, writer_thread, (void *)(uintptr_t)thread_seed) != 0) {
            fprintf(stderr, "stress_partitions: pthread_create failed\n");
            return 1;
        }
    }
    if (pthread_create(&follower_id, NULL, follower_thread, (void *)(uintptr_t)(seed * 31 + 7)) != 0 ||
        pthread_create(&reader_id, NULL, reader_thread, NULL) != 0) {
        fprintf(stderr, "stress_partitions: pthread_create failed\n");
        return 1;
    }
    const char *waited_for; /* the last kind still missing once `seconds` were over */
    double ran = run_until_covered(started, seconds, cap, missing_event, &waited_for);
    atomic_store(&stopping, 1);
    for (int i = 0; i < threads; ++i) pthread_join(writers[i], NULL);
    /* The state timer (1 ms) runs out: it writes its record too. */
    char *timers = NULL;
    for (int tries = 0; tries < 1000; ++tries) {
        uf_free(timers);
        timers = NULL;
        if (uf_timers_get(writer, &timers) != UF_OK || strcmp(timers, "[]") == 0) break;
        pause_ms(5);
    }
    if (!timers || strcmp(timers, "[]") != 0) problem("timers still armed at the end:", timers);
    uf_free(timers);
    atomic_store(&follower_stopping, 1);
    pthread_join(follower_id, NULL);
    pthread_join(reader_id, NULL);
    catch_up(NULL);
    const char *missing = missing_event();
    printf("stress_partitions: ran %.2f s (%g s asked for%s%s)\n", ran, seconds,
           missing ? "; stopped at the cap, still missing: "
                   : waited_for ? "; went on until every kind of event had happened, the last missing: " : "",
           missing ? missing : waited_for ? waited_for : "");

    /* a. The same model: instance by instance (uf_instance_get, uf_feature_get),
     * and uf_state_get as a whole but for the order of the instances. That order
     * is the order they were made in, which differs between the nodes when the
     * follower applied the partitions in another interleaving (nothing is
     * promised across partitions), so equal texts are not asked for. */
    for (int k = 0; k <= KEYS; ++k) {
        char key[16], *w = NULL, *f = NULL;
        snprintf(key, sizeof key, "k%d", k);
        int ws = k < KEYS ? uf_instance_get(writer, "Job", key, &w) : uf_feature_get(writer, "Counter", &w);
        int fs = k < KEYS ? uf_instance_get(follower, "Job", key, &f) : uf_feature_get(follower, "Counter", &f);
        if (ws != UF_OK || fs != UF_OK) {
            problem("uf_instance_get/uf_feature_get failed:", uf_last_error());
        } else if ((w == NULL) != (f == NULL) || (w && strcmp(w, f) != 0)) {
            char detail[400];
            snprintf(detail, sizeof detail, "%s is %s on the writer, %s on the follower", k < KEYS ? key : "Counter",
                     w ? w : "absent", f ? f : "absent");
            problem("the follower's model differs from the writer's:", detail);
        }
        uf_free(w);
        uf_free(f);
    }
    char *w = NULL, *f = NULL;
    if (uf_state_get(writer, &w) != UF_OK || uf_state_get(follower, &f) != UF_OK) {
        problem("uf_state_get failed:", uf_last_error());
    } else if (strlen(w) != strlen(f)) {
        problem("the writer's model:", w);
        problem("is not the follower's in another order:", f);
    } else if (strcmp(w, f) == 0) {
        atomic_fetch_add(&same_text, 1);
    }
    uf_free(w);
    uf_free(f);
    /* b. Versions are the log's counts. */
    check_partitions(writer, "the writer", 1);
    check_partitions(follower, "the follower", 0);
    /* c. Both heard of the same mutations. */
    if (writer_seen.mutations != follower_seen.mutations) {
        char detail[96];
        snprintf(detail, sizeof detail, "the writer's subscriber saw %lu, the follower's %lu", writer_seen.mutations,
                 follower_seen.mutations);
        problem("the nodes heard of different numbers of mutations:", detail);
    }
    uf_dispatcher_free(writer);
    uf_dispatcher_free(follower);
    if (atomic_load(&sink_freed) != 1 || atomic_load(&writer_seen.freed) != 1 || atomic_load(&follower_seen.freed) != 1)
        problem("a payload_free did not run exactly once", NULL);

    size_t records = 0;
    for (int p = 0; p < ALL; ++p) records += log_of[p].count;
    printf("stress_partitions: %zu records in the log (%lu, %lu, %lu, %lu, global %lu), %lu sink calls, refused "
           "%lu UF_ECONFLICT and %lu UF_EUNAVAILABLE; %lu state-timer records; %lu claims again, %lu releases, "
           "%lu UF_ENOTOWNER\n",
           records, atomic_load(&partition_records[0]), atomic_load(&partition_records[1]),
           atomic_load(&partition_records[2]), atomic_load(&partition_records[3]),
           atomic_load(&partition_records[PARTITIONS]), atomic_load(&sink_calls), atomic_load(&refused_conflict),
           atomic_load(&refused_unavailable), atomic_load(&timer_records), atomic_load(&claims_again),
           atomic_load(&releases), atomic_load(&not_owner));
    printf("stress_partitions: the follower applied %lu records, %lu duplicates and %lu gaps; %lu mutations on each "
           "node; %lu reads; the final models are equal%s\n",
           atomic_load(&applied), atomic_load(&duplicates), atomic_load(&gaps), writer_seen.mutations,
           atomic_load(&reads), atomic_load(&same_text) ? " texts" : " instance by instance (the texts list them in another order)");
    for (int i = 0; i < COVERAGE; ++i)
        if (atomic_load(coverage[i].count) == 0) {
            char detail[160];
            snprintf(detail, sizeof detail, "%s within the cap of %.0f s (UNIFLOW_STRESS_SECONDS x 10 + 120)",
                     coverage[i].missing, cap);
            problem("the run did almost nothing:", detail);
        }
    for (int p = 0; p < ALL; ++p) {
        for (size_t i = 0; i < log_of[p].count; ++i) free(log_of[p].records[i]);
        free(log_of[p].records);
        pthread_mutex_destroy(&log_of[p].lock);
    }
    int n = atomic_load(&problems);
    printf("stress_partitions: %s\n", n ? "FAILED" : "passed");
    return n ? 1 : 0;
}
