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

int ufn_subscribe_records(uf_nats_node *n) {
    char subject[UFN_NAME_MAX + 16];
    snprintf(subject, sizeof subject, "uf.%s.p.>", n->opt.model);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = n->stream;
    so.Ordered = true;
    jsErrCode ec = 0;
    natsStatus s = js_SubscribeSync(&n->records, n->js, subject, NULL, &so, &ec);
    if (s != NATS_OK)
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot subscribe to %s: %s", subject, ufn_nats_text(s));
    return UF_OK;
}

static uint32_t partition_of_subject(const char *subject) {
    const char *dot = strrchr(subject, '.');
    return dot ? (uint32_t)strtoul(dot + 1, NULL, 10) : UINT32_MAX;
}

static void apply_one(uf_nats_node *n, natsMsg *m) {
    jsMsgMetaData *meta = NULL;
    uint64_t seq = 0, consumer_seq = 0;
    if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
        seq = meta->Sequence.Stream;
        consumer_seq = meta->Sequence.Consumer;
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
        n->applied_consumer_seq = consumer_seq;
        pthread_cond_broadcast(&n->changed);
        pthread_mutex_unlock(&n->mu);
        return;
    }
    pthread_mutex_lock(&n->mu);
    ufn_note_seq(n, p, version, seq);
    pthread_mutex_unlock(&n->mu);
    const char *text = natsMsg_GetData(m);
    int rc = uf_record_apply(n->d, text);
    if (rc == UF_EGAP && ufn_load_snapshot(n, p) == UF_OK) rc = uf_record_apply(n->d, text);
    if (rc == UF_OK && p == n->global) ufn_note_after(n, text);
    pthread_mutex_lock(&n->mu);
    if (rc == UF_OK) {
        ufn_note_applied(n, p, seq);
    } else {
        n->apply_errors++;
        snprintf(n->last_apply_error, sizeof n->last_apply_error, "stream sequence %llu (partition %u): %s: %s",
                 (unsigned long long)seq, p, uf_status_name(rc), uf_last_error());
    }
    if (seq > n->applied_through) n->applied_through = seq;
    n->applied_consumer_seq = consumer_seq;
    pthread_cond_broadcast(&n->changed);
    pthread_mutex_unlock(&n->mu);
}

void *ufn_apply_main(void *arg) {
    uf_nats_node *n = arg;
    for (;;) {
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, n->records, 100);
        if (n->stopping) {
            natsMsg_Destroy(m);
            break;
        }
        if (s == NATS_OK) {
            apply_one(n, m);
            natsMsg_Destroy(m);
        } else if (s != NATS_TIMEOUT) {
            /* Slow consumer, a reset of the ordered consumer: libnats recreates
             * it from the last sequence delivered; wait a moment. */
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
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

int ufn_wait_applied(uf_nats_node *n, int64_t deadline, bool blocked_too) {
    uint64_t target = 0, pending = 0, delivered = 0;
    bool asked = false;
    for (;;) {
        int64_t left = deadline - ufn_now_ms();
        if (left <= 0) break;
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = left;
        jsConsumerInfo *ci = NULL;
        jsErrCode ec = 0;
        natsStatus s = natsSubscription_GetConsumerInfo(&ci, n->records, &jo, &ec);
        if (s != NATS_OK) {
            /* The ordered consumer may be between two incarnations: ask again. */
            pthread_mutex_lock(&n->mu);
            wait_changed(n, ufn_now_ms() + 20 < deadline ? ufn_now_ms() + 20 : deadline);
            pthread_mutex_unlock(&n->mu);
            continue;
        }
        /* Delivered.Stream may name a message the filter skipped (a snapshot):
         * the consumer's own count of deliveries says as much, and is reached. */
        target = ci->Delivered.Stream;
        delivered = ci->Delivered.Consumer;
        pending = ci->NumPending;
        asked = true;
        jsConsumerInfo_Destroy(ci);
        pthread_mutex_lock(&n->mu);
        if (pending == 0) {
            /* Everything the stream had is delivered: wait until it is applied. */
            while (n->applied_through < target && n->applied_consumer_seq < delivered &&
                   ufn_now_ms() < deadline && !n->stopping)
                wait_changed(n, deadline);
            bool done = n->applied_through >= target || n->applied_consumer_seq >= delivered;
            if (done && blocked_too) {
                for (;;) {
                    bool blocked = false;
                    for (uint32_t p = 0; p <= n->global; p++) blocked |= n->parts[p].blocked;
                    if (!blocked || ufn_now_ms() >= deadline || n->stopping) { done = !blocked; break; }
                    wait_changed(n, deadline);
                }
            }
            pthread_mutex_unlock(&n->mu);
            if (done) return UF_OK;
            break;
        }
        wait_changed(n, ufn_now_ms() + 10 < deadline ? ufn_now_ms() + 10 : deadline);
        pthread_mutex_unlock(&n->mu);
    }
    if (!asked)
        return ufn_fail(UF_EUNAVAILABLE, "the server did not answer for the node's consumer in time (applied up to "
                        "stream sequence %llu)", (unsigned long long)n->applied_through);
    return ufn_fail(UF_EUNAVAILABLE, "the node did not apply what the stream holds in time (applied up to stream "
                    "sequence %llu; the consumer had delivered up to %llu, %llu more pending)",
                    (unsigned long long)n->applied_through, (unsigned long long)target, (unsigned long long)pending);
}

uint64_t ufn_lag(uf_nats_node *n) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = n->opt.timeout_ms;
    jsConsumerInfo *ci = NULL;
    jsErrCode ec = 0;
    uint64_t lag = 0;
    if (natsSubscription_GetConsumerInfo(&ci, n->records, &jo, &ec) == NATS_OK) {
        lag = ci->NumPending;
        pthread_mutex_lock(&n->mu);
        if (ci->Delivered.Consumer > n->applied_consumer_seq) {
            int msgs = 0, bytes = 0;
            natsSubscription_GetPending(n->records, &msgs, &bytes);
            lag += (uint64_t)msgs;
        }
        pthread_mutex_unlock(&n->mu);
        jsConsumerInfo_Destroy(ci);
    }
    return lag;
}
