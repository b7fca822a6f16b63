/* apply.c — the apply thread: an ordered push consumer of uf.<model>.p.>
 * (ordered consumers are push-only in libnats 3.4) delivers every partition's
 * records in stream order, and each is handed to uf_record_apply. Records this
 * node wrote come back too and are duplicates (UF_OK, nothing changes).
 *
 * The consumer starts at the stream's first message: what the owners' purges
 * left is what a node needs (the records from each partition's last snapshot
 * on, and those the global partition's bindings have not run over yet, which
 * the core keeps even when a snapshot already covers them). Records below a
 * partition's snapshot are duplicates. A record that comes after a gap
 * (UF_EGAP: purged while this node read) makes the node load the partition's
 * snapshot again and retry it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

/* An ordered consumer of every record subject, from stream sequence `from`
 * (0: from the first message the stream holds). */
static int subscribe_from(uf_nats_node *n, uint64_t from) {
    char subject[UFN_NAME_MAX + 16];
    snprintf(subject, sizeof subject, "uf.%s.p.>", n->opt.model);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = n->stream;
    so.Ordered = true;
    if (from > 0) {
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = from;
    }
    jsErrCode ec = 0;
    natsStatus s = js_SubscribeSync(&n->records, n->js, subject, NULL, &so, &ec);
    if (s != NATS_OK)
        return ufn_fail(UF_EUNAVAILABLE, "cannot subscribe to %s: %s", subject, ufn_nats_text(s));
    return UF_OK;
}

int ufn_subscribe_records(uf_nats_node *n) {
    return subscribe_from(n, 0);
}

static void wait_changed(uf_nats_node *n, int64_t until_ms);

static uint32_t partition_of_subject(const char *subject) {
    const char *dot = strrchr(subject, '.');
    return dot ? (uint32_t)strtoul(dot + 1, NULL, 10) : UINT32_MAX;
}

/* Applies a record read from the log (unless `applied`: the dispatcher has it)
 * and notes how far the apply thread got. */
static void finish_one(uf_nats_node *n, natsMsg *m, uint32_t p, uint64_t seq, uint64_t consumer_pending, bool applied) {
    const char *text = natsMsg_GetData(m);
    int rc = UF_OK;
    if (!applied) {
        rc = uf_record_apply(n->d, text);
        if (rc == UF_EGAP && ufn_load_snapshot(n, p) == UF_OK) rc = uf_record_apply(n->d, text);
        if (rc == UF_OK && p == n->global) ufn_note_after(n, text);
    }
    pthread_mutex_lock(&n->mu);
    if (rc == UF_OK) {
        ufn_note_applied(n, p, seq);
        /* A blocked partition is unblocked once it is applied this far: the
         * lease thread checks. */
        if (n->parts[p].blocked) ufn_wake_lease(n);
    } else {
        n->apply_errors++;
        snprintf(n->last_apply_error, sizeof n->last_apply_error, "stream sequence %llu (partition %u): %s: %s",
                 (unsigned long long)seq, p, uf_status_name(rc), uf_last_error());
    }
    if (seq > n->applied_through) n->applied_through = seq;
    n->consumer_pending = consumer_pending;
    pthread_cond_broadcast(&n->changed);
    pthread_mutex_unlock(&n->mu);
}

/* Handles one message of the log; returns true when it keeps it (`parked`). */
static bool apply_one(uf_nats_node *n, natsMsg *m) {
    jsMsgMetaData *meta = NULL;
    uint64_t seq = 0, consumer_pending = 0;
    if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
        seq = meta->Sequence.Stream;
        consumer_pending = meta->NumPending;
    }
    jsMsgMetaData_Destroy(meta);
    const char *id = NULL;
    uint32_t p = partition_of_subject(natsMsg_GetSubject(m)), idp = 0;
    uint64_t version = 0;
    if (natsMsgHeader_Get(m, "Nats-Msg-Id", &id) == NATS_OK && ufn_parse_msg_id(id, &idp, &version) && idp != p)
        version = 0;
    if (p > n->global) {
        /* A record of another partitioning of this model: not ours to apply. */
        pthread_mutex_lock(&n->mu);
        if (seq > n->applied_through) n->applied_through = seq;
        n->consumer_pending = consumer_pending;
        pthread_cond_broadcast(&n->changed);
        pthread_mutex_unlock(&n->mu);
        return false;
    }
    pthread_mutex_lock(&n->mu);
    ufn_note_seq(n, p, version, seq);
    /* This node's own records, acknowledged, are in the dispatcher already:
     * applying them would only wait for the dispatcher (busy with the next
     * write) to say "duplicate". */
    bool applied = seq != 0 && seq <= n->parts[p].applied_seq;
    bool in_flight = !applied && seq != 0 && n->publishing && n->publishing_p == p && n->publishing_v == version;
    pthread_mutex_unlock(&n->mu);
    if (in_flight) {
        n->parked.m = m;
        n->parked.p = p;
        n->parked.seq = seq;
        n->parked.version = version;
        n->parked.pending = consumer_pending;
        n->parked.until_ms = ufn_now_ms() + n->opt.timeout_ms + 100;
        return true;
    }
    finish_one(n, m, p, seq, consumer_pending, applied);
    return false;
}

/* Whether the parked echo's publish goes on. Call with mu held. */
static bool parked_in_flight(const uf_nats_node *n) {
    return n->publishing && n->publishing_p == n->parked.p && n->publishing_v == n->parked.version && !n->stopping &&
           ufn_now_ms() < n->parked.until_ms;
}

/* The parked echo, once the sink's outcome is known. With `wait` (a message
 * waits behind it, which must not be applied first) it waits for the outcome,
 * which comes within the sink's timeout; without, it keeps the echo while the
 * publish goes on. */
static void finish_parked(uf_nats_node *n, bool wait) {
    pthread_mutex_lock(&n->mu);
    if (wait) {
        n->outcome_waiters++;
        while (parked_in_flight(n)) wait_changed(n, n->parked.until_ms);
        n->outcome_waiters--;
    }
    bool keep = parked_in_flight(n);
    bool applied = n->parked.seq <= n->parts[n->parked.p].applied_seq;
    pthread_mutex_unlock(&n->mu);
    if (keep) return;
    natsMsg *m = n->parked.m;
    n->parked.m = NULL;
    if (!n->stopping) finish_one(n, m, n->parked.p, n->parked.seq, n->parked.pending, applied);
    natsMsg_Destroy(m);
}

/* While this node writes, the log sends each of its records straight back,
 * and the apply thread woke for every echo: a thread switch on two busy cores
 * on the path of every write, for a record it only has to skip. Within
 * UFN_APPLY_WRITING_MS of the node's last write it reads what has come every
 * UFN_APPLY_POLL_MS instead (the records of other writers wait that much
 * longer); otherwise it waits for the next record as before. Side by side,
 * a writing node's records per second rose by about a tenth (bench/README). */
#define UFN_APPLY_POLL_MS 1
#define UFN_APPLY_WRITING_MS 20

static bool polling(uf_nats_node *n) {
    int queued = 0;
    if (natsSubscription_GetPending(n->records, &queued, NULL) != NATS_OK || queued > 0) return false;
    pthread_mutex_lock(&n->mu);
    bool writing = ufn_now_ms() - n->last_write_ms < UFN_APPLY_WRITING_MS;
    pthread_mutex_unlock(&n->mu);
    return writing;
}

void *ufn_apply_main(void *arg) {
    uf_nats_node *n = arg;
    while (!n->stopping) {
        pthread_mutex_lock(&n->mu);
        bool again = n->resubscribe;
        n->resubscribe = false;
        uint64_t from = n->applied_through + 1;
        pthread_mutex_unlock(&n->mu);
        if (again || !n->records) {
            /* After a reconnection the server may have lost the consumer (a
             * restart): start a new one after the last record handled rather
             * than wait for libnats to notice missing heartbeats. */
            if (n->parked.m) finish_parked(n, true);
            if (n->records) {
                natsSubscription_Unsubscribe(n->records);
                natsSubscription_Destroy(n->records);
                n->records = NULL;
            }
            if (subscribe_from(n, from) != UF_OK) {
                struct timespec ts = {0, 100 * 1000000};
                nanosleep(&ts, NULL);
                continue;
            }
        }
        if (polling(n)) {
            struct timespec ts = {0, UFN_APPLY_POLL_MS * 1000000};
            nanosleep(&ts, NULL);
            if (n->parked.m) finish_parked(n, false);
            continue;
        }
        natsMsg *m = NULL;
        /* A parked echo is settled soon after it came, and before what follows it. */
        natsStatus s = natsSubscription_NextMsg(&m, n->records, n->parked.m ? 5 : 100);
        if (n->parked.m) finish_parked(n, s == NATS_OK);
        if (s == NATS_OK && !n->stopping && apply_one(n, m)) m = NULL;
        natsMsg_Destroy(m);
        if (s != NATS_OK && s != NATS_TIMEOUT) {
            /* A slow consumer, or the ordered consumer being reset: libnats
             * recreates it from the last sequence delivered; wait a moment. */
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    if (n->parked.m) {
        natsMsg_Destroy(n->parked.m);
        n->parked.m = NULL;
    }
    return NULL;
}

static void wait_changed(uf_nats_node *n, int64_t until_ms) {
    int64_t left = until_ms - ufn_now_ms();
    if (left <= 0) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&n->changed, &n->mu, &ts);
}

/* The stream sequence of the last record any partition has (0: none), from the
 * stream's leader. */
static int last_record_seq(uf_nats_node *n, int64_t wait_ms, uint64_t *seq) {
    char subject[UFN_NAME_MAX + 16];
    snprintf(subject, sizeof subject, "uf.%s.p.>", n->opt.model);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = wait_ms > 1 ? wait_ms : 1;
    natsMsg *m = NULL;
    jsErrCode ec = 0;
    natsStatus s = js_GetLastMsg(&m, n->js, n->stream, subject, &jo, &ec);
    *seq = s == NATS_OK ? natsMsg_GetSequence(m) : 0;
    natsMsg_Destroy(m);
    return s == NATS_OK || s == NATS_NOT_FOUND ? UF_OK : UF_EUNAVAILABLE;
}

int ufn_wait_applied(uf_nats_node *n, int64_t deadline, bool blocked_too) {
    uint64_t target = 0;
    bool asked = false;
    while (!asked && ufn_now_ms() < deadline) {
        if (last_record_seq(n, deadline - ufn_now_ms(), &target) == UF_OK) asked = true;
        else {
            pthread_mutex_lock(&n->mu);
            wait_changed(n, ufn_now_ms() + 20 < deadline ? ufn_now_ms() + 20 : deadline);
            pthread_mutex_unlock(&n->mu);
        }
    }
    if (!asked)
        return ufn_fail(UF_EUNAVAILABLE, "the server did not tell the stream's last record in time (applied up to "
                        "stream sequence %llu)", (unsigned long long)n->applied_through);
    pthread_mutex_lock(&n->mu);
    while (n->applied_through < target && ufn_now_ms() < deadline && !n->stopping) wait_changed(n, deadline);
    bool done = n->applied_through >= target;
    bool blocked = false;
    while (done && blocked_too) {
        blocked = false;
        for (uint32_t p = 0; p <= n->global; p++) blocked |= n->parts[p].blocked;
        if (!blocked || ufn_now_ms() >= deadline || n->stopping) break;
        wait_changed(n, deadline);
    }
    uint64_t applied = n->applied_through;
    pthread_mutex_unlock(&n->mu);
    if (!done)
        return ufn_fail(UF_EUNAVAILABLE, "the node did not apply what the stream holds in time (applied up to stream "
                        "sequence %llu of %llu)", (unsigned long long)applied, (unsigned long long)target);
    if (blocked)
        return ufn_fail(UF_EUNAVAILABLE, "a partition still waits for the outcome of a publish the server did not answer");
    return UF_OK;
}

uint64_t ufn_lag(uf_nats_node *n) {
    uint64_t last = 0;
    if (last_record_seq(n, n->opt.timeout_ms, &last) != UF_OK) return 0;
    pthread_mutex_lock(&n->mu);
    uint64_t lag = n->applied_through >= last ? 0 : (n->consumer_pending > 0 ? n->consumer_pending : 1);
    pthread_mutex_unlock(&n->mu);
    return lag;
}
