/* lease.c — leases in the KV bucket UF_<model>_owners: one key per partition
 * (p<number>), holding {"node", "incarnation"} of the node that should write it.
 *
 *   win      kvStore_Create: succeeds only while nobody holds the key (the bucket's
 *            TTL removes a key that was not renewed within lease_ms)
 *   renew    every third of the lease, a publish to the key's subject expecting
 *            the revision this node wrote last (compare-and-swap); done with
 *            js_PublishMsg rather than kvStore_Update, which does not pass the
 *            server's error code back, so that "someone else holds it" (10071)
 *            can be told from "no answer"
 *   fresh    a lease counts as this node's while its last successful renewal
 *            was sent less than two thirds of the lease ago: the key outlives it
 *            by a third, so two nodes never both count one partition as theirs
 *            (clocks of one machine; across machines, as far as their rates agree)
 *   claim    a partition whose key this node created is claimed in the core
 *            (uf_partition_claim): the claim record is what fences the old owner
 *   release  at uf_nats_node_free: a release record, then the key deleted by
 *            compare-and-swap on its revision, so that another node claims at once
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

bool ufn_lease_fresh(const uf_nats_node *n, uint32_t p, int64_t now) {
    const ufn_partition *part = &n->parts[p];
    return part->leased && now - part->renewed_ms < n->opt.lease_ms * 2 / 3;
}

static void key_subject(const uf_nats_node *n, uint32_t p, char *buf, size_t size) {
    snprintf(buf, size, "$KV.%s.p%u", n->bucket, p);
}

static void lease_value(const uf_nats_node *n, char *buf, size_t size) {
    snprintf(buf, size, "{\"node\":\"%s\",\"incarnation\":\"%s\"}", n->name, n->incarnation);
}

/* A publish to the key's subject expecting revision rev; op NULL: a value. */
static natsStatus put_expecting(uf_nats_node *n, uint32_t p, uint64_t rev, const char *op,
                                uint64_t *new_rev, jsErrCode *ec) {
    char subject[UFN_NAME_MAX * 2 + 32], value[UFN_NAME_MAX + 64];
    key_subject(n, p, subject, sizeof subject);
    lease_value(n, value, sizeof value);
    natsMsg *msg = NULL;
    natsStatus s = natsMsg_Create(&msg, subject, NULL, op ? NULL : value, op ? 0 : (int)strlen(value));
    if (s == NATS_OK && op) s = natsMsgHeader_Set(msg, "KV-Operation", op);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.ExpectLastSubjectSeq = rev;
    po.MaxWait = n->opt.lease_ms / 3 < n->opt.timeout_ms ? n->opt.lease_ms / 3 : n->opt.timeout_ms;
    jsPubAck *ack = NULL;
    if (s == NATS_OK) s = js_PublishMsg(&ack, n->js, msg, &po, ec);
    if (s == NATS_OK && new_rev) *new_rev = ack->Sequence;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(msg);
    return s;
}

static void renew(uf_nats_node *n, uint32_t p, int64_t sent) {
    pthread_mutex_lock(&n->mu);
    uint64_t rev = n->parts[p].lease_rev;
    pthread_mutex_unlock(&n->mu);
    uint64_t new_rev = 0;
    jsErrCode ec = 0;
    natsStatus s = put_expecting(n, p, rev, NULL, &new_rev, &ec);
    pthread_mutex_lock(&n->mu);
    if (s == NATS_OK) {
        n->parts[p].lease_rev = new_rev;
        n->parts[p].renewed_ms = sent;
    } else if (ec == JSStreamWrongLastSequenceErr) {
        /* The key expired or another node holds it now: lost. */
        n->parts[p].leased = false;
        n->parts[p].claimed = false;
    }
    /* Otherwise no answer: the lease goes stale by itself. */
    pthread_mutex_unlock(&n->mu);
}

static bool try_win(uf_nats_node *n, uint32_t p, int64_t sent) {
    char key[32], value[UFN_NAME_MAX + 64];
    snprintf(key, sizeof key, "p%u", p);
    lease_value(n, value, sizeof value);
    uint64_t rev = 0;
    if (kvStore_CreateString(&rev, n->kv, key, value) != NATS_OK) return false;
    pthread_mutex_lock(&n->mu);
    n->parts[p].leased = true;
    n->parts[p].claimed = false;
    n->parts[p].lease_rev = rev;
    n->parts[p].renewed_ms = sent;
    pthread_mutex_unlock(&n->mu);
    return true;
}

/* Which partitions the core says are this node's (mine[p]). */
static bool core_mine(uf_nats_node *n, bool *mine) {
    char *text = NULL;
    if (uf_partitions_get(n->d, &text) != UF_OK) return false;
    json_t *list = json_loads(text, 0, NULL);
    uf_free(text);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (i <= n->global) mine[i] = json_is_true(json_object_get(item, "mine"));
    }
    json_decref(list);
    return list != NULL;
}

static void claim(uf_nats_node *n, uint32_t p) {
    pthread_mutex_lock(&n->mu);
    n->writing_ownership = true;
    n->ownership_p = p;
    pthread_mutex_unlock(&n->mu);
    int rc = uf_partition_claim(n->d, p);
    pthread_mutex_lock(&n->mu);
    n->writing_ownership = false;
    /* UF_ECONFLICT: the log moved on; the apply thread applies what is new and
     * the next tick claims again, keeping the lease meanwhile. */
    if (rc == UF_OK) n->parts[p].claimed = true;
    pthread_mutex_unlock(&n->mu);
}

void ufn_leases_tick(uf_nats_node *n) {
    static const int64_t never = INT64_MIN / 2;
    int64_t now = ufn_now_ms(), third = n->opt.lease_ms / 3;
    /* Renewals first, touching nothing of the dispatcher: a call that holds it
     * (a publish waiting for its answer) must not make a lease go stale. */
    for (uint32_t p = 0; p <= n->global; p++) {
        pthread_mutex_lock(&n->mu);
        bool due = n->parts[p].leased && now - n->parts[p].renewed_ms >= third;
        if (!n->parts[p].leased) n->parts[p].renewed_ms = never;
        pthread_mutex_unlock(&n->mu);
        if (due) renew(n, p, now);
    }
    bool *mine = calloc(n->global + 1, sizeof *mine);
    if (!mine) return;
    bool known = core_mine(n, mine);
    int held = 0;
    for (uint32_t p = 0; p <= n->global; p++) {
        pthread_mutex_lock(&n->mu);
        ufn_partition *part = &n->parts[p];
        /* Another node's claim was applied: the core no longer counts p as ours. */
        if (known && part->leased && part->claimed && !mine[p]) {
            part->leased = false;
            part->claimed = false;
        }
        bool to_claim = part->leased && !part->claimed && !part->blocked;
        pthread_mutex_unlock(&n->mu);
        if (to_claim) claim(n, p);
        pthread_mutex_lock(&n->mu);
        held += n->parts[p].leased;
        pthread_mutex_unlock(&n->mu);
    }
    for (uint32_t p = 0; p <= n->global && !n->stopping; p++) {
        if (!ufn_options_wants(&n->opt, p, n->global)) continue;
        if (n->opt.max_owned >= 0 && held >= n->opt.max_owned) break;
        pthread_mutex_lock(&n->mu);
        bool leased = n->parts[p].leased;
        pthread_mutex_unlock(&n->mu);
        if (leased) continue;
        if (try_win(n, p, ufn_now_ms())) {
            held++;
            claim(n, p);
        }
    }
    free(mine);
}

void ufn_leases_release_all(uf_nats_node *n) {
    bool *mine = calloc(n->global + 1, sizeof *mine);
    if (!mine) return;
    core_mine(n, mine);
    /* With the server away, each release would wait out the timeout: after the
     * first one that gets no answer, the rest are left to the leases' TTL. */
    bool reachable = true;
    for (uint32_t p = 0; p <= n->global && reachable; p++) {
        pthread_mutex_lock(&n->mu);
        bool leased = n->parts[p].leased, blocked = n->parts[p].blocked;
        uint64_t rev = n->parts[p].lease_rev;
        n->writing_ownership = true;
        n->ownership_p = p;
        pthread_mutex_unlock(&n->mu);
        /* (A blocked partition refuses at once: that says nothing of the server.) */
        if (mine[p] && uf_partition_release(n->d, p) == UF_EUNAVAILABLE && !blocked) reachable = false;
        pthread_mutex_lock(&n->mu);
        n->writing_ownership = false;
        n->parts[p].leased = false;
        n->parts[p].claimed = false;
        pthread_mutex_unlock(&n->mu);
        if (leased && reachable) {
            jsErrCode ec = 0;
            natsStatus s = put_expecting(n, p, rev, "DEL", NULL, &ec);
            if (s != NATS_OK && ec == 0) reachable = false;
        }
    }
    free(mine);
}
