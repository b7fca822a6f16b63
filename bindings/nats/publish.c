/* publish.c — the record sink: every record the dispatcher writes is published
 * to uf.<model>.p.<p>, fenced by JetStream's compare-and-swap.
 *
 *   Nats-Msg-Id   <incarnation>:<p>:<version>:<fnv1a32 of the bytes>: the
 *                 idempotency key. A retry after a timeout sends the same bytes
 *                 under the same id, and the server answers "duplicate" with the
 *                 first one's sequence instead of storing it twice.
 *   Nats-Expected-Last-Subject-Sequence   the stream sequence of the version
 *                 before this one (ExpectNoMessage for version 1: libnats 3.4
 *                 sends no header at all for a zero sequence). The server refuses
 *                 a record that does not follow the subject's last one with error
 *                 10071, "wrong last sequence": UF_ECONFLICT.
 *
 * The sink runs on the dispatcher's processing thread with the dispatcher held,
 * so one record is in flight per dispatcher (uniflow_nats.h, docs). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

/* While start probes: the first record tells the node's name and incarnation,
 * which the core writes into every record but has no getter for. The probe's
 * claim is refused, which changes nothing. */
static int probe(uf_nats_node *n, const char *text) {
    json_t *root = json_loads(text, 0, NULL);
    const char *node = json_string_value(json_object_get(root, "node"));
    const char *incarnation = json_string_value(json_object_get(root, "incarnation"));
    if (node && strlen(node) <= UFN_NAME_MAX) snprintf(n->name, sizeof n->name, "%s", node);
    if (incarnation) snprintf(n->incarnation, sizeof n->incarnation, "%s", incarnation);
    json_decref(root);
    return UF_ECONFLICT;
}

static void block(uf_nats_node *n, uint32_t p) {
    pthread_mutex_lock(&n->mu);
    n->parts[p].blocked = true;
    n->parts[p].blocked_read = false;
    n->parts[p].blocked_next_read_ms = 0;
    ufn_wake_lease(n);  /* it reads the server's last record of p */
    pthread_mutex_unlock(&n->mu);
}

static void sleep_ms(int64_t ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int ufn_record_sink(const uf_record *r, void *payload) {
    uf_nats_node *n = payload;
    const char *text = uf_record_json(r);
    uint32_t p = 0;
    uint64_t v = 0;
    if (!text || uf_record_partition(r, &p) != UF_OK || uf_record_version(r, &v) != UF_OK) {
        ufn_set_sink_detail("the adapter could not read the record");
        return UF_ECONFLICT;
    }
    if (n->probing) return probe(n, text);
    if (!n->js) {
        ufn_set_sink_detail("the NATS node is not started: nothing can be written yet");
        return UF_EUNAVAILABLE;
    }
    if (p > n->global) {
        ufn_set_sink_detail("partition %u is out of range", p);
        return UF_ECONFLICT;
    }
    int64_t now = ufn_now_ms();
    uint64_t expected = 0;
    pthread_mutex_lock(&n->mu);
    bool blocked = n->parts[p].blocked;
    bool fresh = (n->writing_ownership && n->ownership_p == p) || ufn_lease_fresh(n, p, now);
    bool known = v == 1 || ufn_seq_of(n, p, v - 1, &expected);
    bool sending = !blocked && fresh && known;
    if (sending) {
        n->publishing = true;
        n->publishing_p = p;
        n->publishing_v = v;
        n->last_write_ms = now;
    }
    pthread_mutex_unlock(&n->mu);
    if (blocked) {
        ufn_set_sink_detail("partition %u waits for the outcome of an earlier publish: nothing is written "
                            "to it until the server's last record of it is read and applied", p);
        return UF_EUNAVAILABLE;
    }
    if (!fresh) {
        ufn_set_sink_detail("this node's lease on partition %u was not renewed within two thirds of %lld ms: "
                            "another node may own it now", p, (long long)n->opt.lease_ms);
        return UF_ECONFLICT;
    }
    if (!known) {
        /* The node applied version v-1 without seeing its sequence: it cannot
         * fence this record, so it does not send it. Reading the log fixes it. */
        ufn_set_sink_detail("the stream sequence of version %llu of partition %u is not known here yet",
                            (unsigned long long)(v - 1), p);
        return UF_ECONFLICT;
    }

    int status = UF_EUNAVAILABLE;
    size_t len = strlen(text);
    char subject[UFN_NAME_MAX + 32], id[96];
    ufn_record_subject(n, p, subject, sizeof subject);
    snprintf(id, sizeof id, "%s:%u:%llu:%08x", n->incarnation, p, (unsigned long long)v, ufn_fnv1a32(text, len));
    natsMsg *msg = NULL;
    if (natsMsg_Create(&msg, subject, NULL, text, (int)len) != NATS_OK) {
        ufn_set_sink_detail("out of memory");
        status = UF_EUNAVAILABLE;
        goto done;
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id;
    if (v == 1) po.ExpectNoMessage = true;
    else po.ExpectLastSubjectSeq = expected;

    int64_t deadline = now + n->opt.timeout_ms;
    int attempt = 0;
    natsStatus s = NATS_OK;
    jsErrCode ec = 0;
    for (;;) {
        attempt++;
        int64_t left = deadline - ufn_now_ms();
        if (left <= 0) break;
        /* Several tries fit in the timeout: one lost answer does not use it up. */
        int64_t wait = n->opt.timeout_ms / 3;
        po.MaxWait = wait < 50 ? (left < 50 ? left : 50) : (wait < left ? wait : left);
        jsPubAck *ack = NULL;
        ec = 0;
        s = js_PublishMsg(&ack, n->js, msg, &po, &ec);
        if (s == NATS_OK && ack) {
            if (ack->Duplicate && attempt == 1) {
                /* The server already had this id, and not from a retry of this
                 * call: whether it is this very record cannot be known here. */
                jsPubAck_Destroy(ack);
                ufn_set_sink_detail("the server already had a message with the id %s", id);
                status = UF_EUNAVAILABLE;
                block(n, p);
                goto done;
            }
            pthread_mutex_lock(&n->mu);
            ufn_note_seq(n, p, v, ack->Sequence);
            ufn_note_applied(n, p, ack->Sequence);
            if (++n->parts[p].records_since_snapshot == (uint64_t)n->opt.snapshot_every) ufn_wake_lease(n);
            n->publishing = false;
            if (n->outcome_waiters > 0) pthread_cond_broadcast(&n->changed);
            pthread_mutex_unlock(&n->mu);
            jsPubAck_Destroy(ack);
            if (p == n->global) ufn_note_after(n, text);
            status = UF_OK;
            goto done;
        }
        jsPubAck_Destroy(ack);
        if (ec == JSStreamWrongLastSequenceErr) {
            ufn_set_sink_detail("the server refused version %llu of partition %u: wrong last sequence "
                                "(expected %llu, error 10071)", (unsigned long long)v, p,
                                (unsigned long long)expected);
            status = UF_ECONFLICT;
            goto done;
        }
        if (ec != 0) {
            /* The server answered with another refusal: nothing was stored, but
             * the node reads the log before writing p again all the same. */
            ufn_set_sink_detail("the server refused the record: %s (error %d)", ufn_nats_text(s), (int)ec);
            block(n, p);
            status = UF_EUNAVAILABLE;
            goto done;
        }
        /* A timeout, no responders (JetStream restarting), or no connection:
         * retry the same bytes under the same id. */
        if (s == NATS_NO_RESPONDERS || s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED) {
            left = deadline - ufn_now_ms();
            sleep_ms(left < 50 ? (left > 0 ? left : 0) : 50);
        }
    }
    ufn_set_sink_detail("no answer from the server within %lld ms (%d tries; last: %s)",
                        (long long)n->opt.timeout_ms, attempt - 1, natsStatus_GetText(s));
    block(n, p);
done:
    natsMsg_Destroy(msg);
    if (status != UF_OK) {
        pthread_mutex_lock(&n->mu);
        n->publishing = false;
        if (n->outcome_waiters > 0) pthread_cond_broadcast(&n->changed);
        pthread_mutex_unlock(&n->mu);
    }
    return status;
}

void ufn_resolve_blocked(uf_nats_node *n, uint32_t p) {
    int64_t now = ufn_now_ms();
    pthread_mutex_lock(&n->mu);
    ufn_partition *part = &n->parts[p];
    bool read = part->blocked && !part->blocked_read && now >= part->blocked_next_read_ms;
    if (read) part->blocked_next_read_ms = now + n->opt.timeout_ms;
    pthread_mutex_unlock(&n->mu);
    if (read) {
        /* js_GetLastMsg asks the stream's leader (not a direct get, which a
         * replica may answer from behind). */
        char subject[UFN_NAME_MAX + 32];
        ufn_record_subject(n, p, subject, sizeof subject);
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = n->opt.timeout_ms;
        natsMsg *m = NULL;
        jsErrCode ec = 0;
        natsStatus s = js_GetLastMsg(&m, n->js, n->stream, subject, &jo, &ec);
        if (s == NATS_OK || s == NATS_NOT_FOUND) {
            uint64_t seq = s == NATS_OK ? natsMsg_GetSequence(m) : 0;
            pthread_mutex_lock(&n->mu);
            part->blocked_until_seq = seq;
            part->blocked_read = true;
            pthread_mutex_unlock(&n->mu);
        }
        natsMsg_Destroy(m);
    }
    pthread_mutex_lock(&n->mu);
    if (part->blocked && part->blocked_read && part->applied_seq >= part->blocked_until_seq) {
        part->blocked = false;
        part->blocked_read = false;
        pthread_cond_broadcast(&n->changed);
    }
    pthread_mutex_unlock(&n->mu);
}
