/* snapshot.c — snapshots of partitions on uf.<model>.s.<p>.
 *
 * A snapshot message carries uf_partition_snapshot's JSON, with headers
 *   Uf-Record-Seq      the stream sequence of the last record it includes
 *   Uf-Version         that record's version (so that a reader needs no parse)
 *   Uf-Chunk: i/n      its slice, when the JSON is larger than one message may be
 *   Uf-First           the sequence of chunk 1 (on chunks 2..n)
 *   Uf-Prev-Complete   the sequence of the last chunk of the snapshot before it
 *                      that was complete (0: none), so that a reader whose last
 *                      message is a partial snapshot (its writer died midway)
 *                      finds the one to use
 * Every message is published expecting the subject's previous message: a stale
 * owner's snapshot is refused, and two snapshots never interleave.
 *
 * After a complete snapshot at version V, the owner purges the partition's
 * records below the one at version min(V, the global partition's after[p]) —
 * never the subject's last record, on which the next compare-and-swap depends —
 * and the snapshots before this one. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

static uint64_t header_u64(natsMsg *m, const char *name) {
    const char *value = NULL;
    if (natsMsgHeader_Get(m, name, &value) != NATS_OK || !value) return 0;
    return strtoull(value, NULL, 10);
}

/* "i/n" of a chunk; a message without Uf-Chunk is 1/1. */
static void chunk_of(natsMsg *m, unsigned *i, unsigned *count) {
    const char *value = NULL;
    *i = *count = 1;
    if (natsMsgHeader_Get(m, "Uf-Chunk", &value) == NATS_OK && value) sscanf(value, "%u/%u", i, count);
}

static natsStatus get_last(uf_nats_node *n, const char *subject, natsMsg **m) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = n->opt.timeout_ms;
    jsErrCode ec = 0;
    return js_GetLastMsg(m, n->js, n->stream, subject, &jo, &ec);
}

/* Reads the chunks of one snapshot whose last chunk is `last`: an ordered
 * consumer of the subject from chunk 1's sequence. *text is malloc'ed. */
static int read_chunks(uf_nats_node *n, const char *subject, natsMsg *last, char **text) {
    unsigned i, count;
    chunk_of(last, &i, &count);
    int len = natsMsg_GetDataLength(last);
    if (count == 1) {
        *text = malloc((size_t)len + 1);
        if (!*text) return UF_ENOMEM;
        memcpy(*text, natsMsg_GetData(last), (size_t)len);
        (*text)[len] = '\0';
        return UF_OK;
    }
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = n->stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = header_u64(last, "Uf-First");
    natsSubscription *sub = NULL;
    jsErrCode ec = 0;
    if (so.Config.OptStartSeq == 0 || js_SubscribeSync(&sub, n->js, subject, NULL, &so, &ec) != NATS_OK)
        return UF_EUNAVAILABLE;
    size_t used = 0, cap = 0;
    char *buf = NULL;
    int rc = UF_OK;
    for (unsigned want = 1; want <= count && rc == UF_OK; want++) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, n->opt.timeout_ms) != NATS_OK) { rc = UF_EUNAVAILABLE; break; }
        unsigned ci, cn;
        chunk_of(m, &ci, &cn);
        size_t add = (size_t)natsMsg_GetDataLength(m);
        if (ci != want || cn != count) rc = UF_ESCHEMA;
        else if (used + add + 1 > cap) {
            cap = (used + add + 1) * 2;
            char *grown = realloc(buf, cap);
            if (!grown) rc = UF_ENOMEM;
            else buf = grown;
        }
        if (rc == UF_OK) {
            memcpy(buf + used, natsMsg_GetData(m), add);
            used += add;
            buf[used] = '\0';
        }
        natsMsg_Destroy(m);
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    if (rc != UF_OK) { free(buf); return rc; }
    *text = buf;
    return UF_OK;
}

int ufn_load_snapshot(uf_nats_node *n, uint32_t p) {
    char subject[UFN_NAME_MAX + 32];
    ufn_snapshot_subject(n, p, subject, sizeof subject);
    natsMsg *last = NULL;
    natsStatus s = get_last(n, subject, &last);
    if (s == NATS_NOT_FOUND) return UF_OK;
    if (s != NATS_OK)
        return ufn_fail(UF_EUNAVAILABLE, "cannot read the last snapshot of partition %u: %s", p, ufn_nats_text(s));
    uint64_t last_seq = natsMsg_GetSequence(last);
    unsigned i, count;
    chunk_of(last, &i, &count);
    uint64_t complete_end = last_seq;
    if (i != count) {
        /* A partial snapshot (its writer died midway): use the complete one
         * before it, if any. */
        complete_end = header_u64(last, "Uf-Prev-Complete");
        natsMsg_Destroy(last);
        last = NULL;
        if (complete_end) {
            jsErrCode ec = 0;
            s = js_GetMsg(&last, n->js, n->stream, complete_end, NULL, &ec);
            if (s != NATS_OK) last = NULL;
        }
    }
    pthread_mutex_lock(&n->mu);
    n->parts[p].snap_last_seq = last_seq;
    n->parts[p].snap_complete_end = last ? complete_end : 0;
    pthread_mutex_unlock(&n->mu);
    if (!last) return UF_OK;
    char *text = NULL;
    int rc = read_chunks(n, subject, last, &text);
    uint64_t record_seq = header_u64(last, "Uf-Record-Seq"), version = header_u64(last, "Uf-Version");
    natsMsg_Destroy(last);
    if (rc != UF_OK)
        return ufn_fail(rc, "cannot read the snapshot of partition %u (%s)", p, uf_status_name(rc));
    rc = uf_record_apply(n->d, text);
    free(text);
    if (rc != UF_OK) return ufn_fail_core_detail(rc, "applying the snapshot of partition");
    pthread_mutex_lock(&n->mu);
    ufn_note_seq(n, p, version, record_seq);
    ufn_note_applied(n, p, record_seq);
    pthread_mutex_unlock(&n->mu);
    return UF_OK;
}

int ufn_load_snapshots(uf_nats_node *n) {
    for (uint32_t p = 0; p <= n->global; p++) {
        int rc = ufn_load_snapshot(n, p);
        if (rc != UF_OK) return rc;
    }
    return UF_OK;
}

static int publish_chunk(uf_nats_node *n, const char *subject, const char *data, size_t len,
                         unsigned i, unsigned count, uint64_t first, uint64_t record_seq,
                         uint64_t version, uint64_t prev_complete, uint64_t expected, uint64_t *seq) {
    natsMsg *msg = NULL;
    char value[64];
    natsStatus s = natsMsg_Create(&msg, subject, NULL, data, (int)len);
    snprintf(value, sizeof value, "%llu", (unsigned long long)record_seq);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Uf-Record-Seq", value);
    snprintf(value, sizeof value, "%llu", (unsigned long long)version);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Uf-Version", value);
    snprintf(value, sizeof value, "%llu", (unsigned long long)prev_complete);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Uf-Prev-Complete", value);
    if (count > 1) {
        snprintf(value, sizeof value, "%u/%u", i, count);
        if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Uf-Chunk", value);
        snprintf(value, sizeof value, "%llu", (unsigned long long)first);
        if (s == NATS_OK && i > 1) s = natsMsgHeader_Set(msg, "Uf-First", value);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    if (expected) po.ExpectLastSubjectSeq = expected;
    else po.ExpectNoMessage = true;
    po.MaxWait = n->opt.timeout_ms;
    jsPubAck *ack = NULL;
    jsErrCode ec = 0;
    if (s == NATS_OK) s = js_PublishMsg(&ack, n->js, msg, &po, &ec);
    if (s == NATS_OK) *seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(msg);
    return s == NATS_OK ? UF_OK : (ec == JSStreamWrongLastSequenceErr ? UF_ECONFLICT : UF_EUNAVAILABLE);
}

static void purge_below(uf_nats_node *n, const char *subject, uint64_t seq) {
    /* Nothing lies below sequence 1, and the server reads a purge "below 1" of
     * a subject as "all of it" (as it reads 0): that would take the subject's
     * last record, on which every later compare-and-swap depends. */
    if (seq <= 1) return;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = n->opt.timeout_ms;
    jo.Stream.Purge.Subject = subject;
    jo.Stream.Purge.Sequence = seq;
    jsErrCode ec = 0;
    js_PurgeStream(n->js, n->stream, &jo, &ec);
}

static void snapshot_one(uf_nats_node *n, uint32_t p) {
    char *text = NULL;
    if (uf_partition_snapshot(n->d, p, &text) != UF_OK) return;
    json_t *root = json_loads(text, 0, NULL);
    uint64_t version = (uint64_t)json_integer_value(json_object_get(root, "version"));
    json_decref(root);
    char subject[UFN_NAME_MAX + 32];
    ufn_snapshot_subject(n, p, subject, sizeof subject);
    pthread_mutex_lock(&n->mu);
    ufn_partition *part = &n->parts[p];
    uint64_t record_seq = 0, floor_seq = 0;
    bool known = ufn_seq_of(n, p, version, &record_seq);
    uint64_t floor = version;
    if (p != n->global && part->after_known && part->after < floor) floor = part->after;
    if (floor == version) floor_seq = record_seq;
    else if (floor == 0 || !ufn_seq_of(n, p, floor, &floor_seq)) floor_seq = 0;
    uint64_t expected = part->snap_last_seq, prev_complete = part->snap_complete_end;
    pthread_mutex_unlock(&n->mu);
    if (!known || version == 0) { uf_free(text); return; }   /* moved on meanwhile: next tick */

    size_t len = strlen(text);
    /* Headers and protocol take a little of the server's maximum payload. */
    size_t room = (size_t)natsConnection_GetMaxPayload(n->nc);
    room = room > 16384 ? room - 8192 : room / 2;
    unsigned count = (unsigned)((len + room - 1) / room);
    if (count == 0) count = 1;
    uint64_t first = 0, seq = 0;
    int rc = UF_OK;
    for (unsigned i = 1; i <= count && rc == UF_OK; i++) {
        size_t at = (size_t)(i - 1) * room, size = len - at < room ? len - at : room;
        rc = publish_chunk(n, subject, text + at, size, i, count, first, record_seq, version,
                           prev_complete, expected, &seq);
        if (rc == UF_OK) {
            if (i == 1) first = seq;
            expected = seq;
        }
    }
    uf_free(text);
    pthread_mutex_lock(&n->mu);
    if (rc == UF_OK) {
        part->snap_last_seq = seq;
        part->snap_complete_end = seq;
        part->records_since_snapshot = 0;
    } else if (rc == UF_ECONFLICT || expected != part->snap_last_seq) {
        /* Another snapshot came first, or a chunk landed: read the subject's last
         * message again before the next try. */
        part->snap_last_seq = UINT64_MAX;
    }
    pthread_mutex_unlock(&n->mu);
    if (rc != UF_OK) return;
    char records[UFN_NAME_MAX + 32];
    ufn_record_subject(n, p, records, sizeof records);
    if (floor_seq) purge_below(n, records, floor_seq);
    purge_below(n, subject, first);
}

void ufn_snapshots_tick(uf_nats_node *n) {
    if (n->opt.snapshot_every <= 0) return;
    int64_t now = ufn_now_ms();
    for (uint32_t p = 0; p <= n->global && !n->stopping; p++) {
        pthread_mutex_lock(&n->mu);
        ufn_partition *part = &n->parts[p];
        bool due = part->claimed && ufn_lease_fresh(n, p, now) && !part->blocked &&
                   part->records_since_snapshot >= (uint64_t)n->opt.snapshot_every;
        bool reread = due && part->snap_last_seq == UINT64_MAX;
        pthread_mutex_unlock(&n->mu);
        if (reread) {
            char subject[UFN_NAME_MAX + 32];
            ufn_snapshot_subject(n, p, subject, sizeof subject);
            natsMsg *m = NULL;
            natsStatus s = get_last(n, subject, &m);
            if (s != NATS_OK && s != NATS_NOT_FOUND) continue;
            pthread_mutex_lock(&n->mu);
            part->snap_last_seq = s == NATS_OK ? natsMsg_GetSequence(m) : 0;
            pthread_mutex_unlock(&n->mu);
            natsMsg_Destroy(m);
        }
        if (due) snapshot_one(n, p);
    }
}
