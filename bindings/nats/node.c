/* node.c — a node's life: uf_nats_node_new (options, the sink, the probe for the
 * node's name), uf_nats_node_start (connect, stream and bucket, catch-up, the two
 * threads), uf_nats_node_status, uf_nats_sync, uf_nats_node_free, and the lease
 * thread's loop. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

/* The sink left behind by uf_nats_node_free: a dispatcher whose node is gone has
 * no log, so it may not write (install another node's sink to go on). */
static int refuse_without_node(const uf_record *r, void *payload) {
    (void)r;
    (void)payload;
    return UF_EUNAVAILABLE;
}

int uf_nats_node_new(uf_nats_node **out, uf_dispatcher *d, const char *options_json) {
    if (!out) return ufn_fail(UF_EINVAL, "uf_nats_node_new: n is NULL");
    *out = NULL;
    if (!d) return ufn_fail(UF_EINVAL, "uf_nats_node_new: d is NULL");
    char *text = NULL;
    int rc = uf_partitions_get(d, &text);
    if (rc != UF_OK) {
        if (rc == UF_EMISUSE)
            return ufn_fail(UF_EMISUSE, "uf_nats_node_new: the dispatcher is not partitioned (make it with the "
                            "options \"partitions\" and \"node\")");
        return ufn_fail_core(rc);
    }
    json_t *list = json_loads(text, 0, NULL);
    uf_free(text);
    size_t count = json_array_size(list);
    json_decref(list);
    if (count < 2) return ufn_fail(UF_EINVAL, "uf_nats_node_new: cannot read the dispatcher's partitions");

    uf_nats_node *n = calloc(1, sizeof *n);
    if (!n) return ufn_fail(UF_ENOMEM, "uf_nats_node_new: out of memory");
    rc = ufn_options_parse(&n->opt, options_json);
    if (rc != UF_OK) { free(n); return rc; }
    n->d = d;
    n->global = (uint32_t)(count - 1);
    n->parts = calloc(count, sizeof *n->parts);
    if (!n->parts) { ufn_options_free(&n->opt); free(n); return ufn_fail(UF_ENOMEM, "uf_nats_node_new: out of memory"); }
    for (int i = 0; n->opt.owns == UFN_OWNS_LIST && i < n->opt.owns_count; i++) {
        if (n->opt.owns_list[i] > (int64_t)n->global) {
            rc = ufn_fail(UF_EINVAL, "uf_nats_node_new: owns[%d] is %lld, but the dispatcher has partitions 0 to %u "
                          "(the global one is %u, or \"global\")", i, (long long)n->opt.owns_list[i], n->global, n->global);
            free(n->parts);
            ufn_options_free(&n->opt);
            free(n);
            return rc;
        }
    }
    pthread_mutex_init(&n->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_cond_init(&n->changed, &attr);
    pthread_cond_init(&n->lease_wake, &attr);
    pthread_condattr_destroy(&attr);
    snprintf(n->stream, sizeof n->stream, "UF_%s", n->opt.model);
    snprintf(n->bucket, sizeof n->bucket, "UF_%s_owners", n->opt.model);

    /* The core writes the node's name and incarnation into every record but has
     * no getter for them: a claim refused by the sink tells them and changes
     * nothing. */
    n->probing = true;
    rc = uf_record_sink(d, ufn_record_sink, n, NULL);
    if (rc == UF_OK) {
        uf_partition_claim(d, 0);
        n->sink_installed = true;
    }
    n->probing = false;
    if (rc != UF_OK || !n->name[0] || !n->incarnation[0]) {
        if (rc == UF_OK) rc = ufn_fail(UF_EINVAL, "uf_nats_node_new: cannot learn the dispatcher's node name");
        else rc = ufn_fail_core(rc);
        uf_nats_node_free(n);
        return rc;
    }
    snprintf(n->rpc_subject, sizeof n->rpc_subject, "ufrpc.%s.%s", n->opt.model, n->name);
    *out = n;
    return UF_OK;
}

static void *lease_main(void *arg) {
    uf_nats_node *n = arg;
    int64_t tick = n->opt.lease_ms / 6 < 100 ? n->opt.lease_ms / 6 : 100;
    while (!n->stopping) {
        ufn_leases_tick(n);
        for (uint32_t p = 0; p <= n->global; p++) {
            pthread_mutex_lock(&n->mu);
            bool blocked = n->parts[p].blocked;
            pthread_mutex_unlock(&n->mu);
            if (blocked) ufn_resolve_blocked(n, p);
        }
        ufn_snapshots_tick(n);
        pthread_mutex_lock(&n->mu);
        if (!n->stopping) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += tick * 1000000;
            if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
            pthread_cond_timedwait(&n->lease_wake, &n->mu, &ts);
        }
        pthread_mutex_unlock(&n->mu);
    }
    return NULL;
}

void ufn_wake_lease(uf_nats_node *n) {
    pthread_cond_signal(&n->lease_wake);
}

/* Undoes a start that failed halfway, so that it may be tried again. */
static void disconnect(uf_nats_node *n) {
    if (n->apply_running) {
        /* It polls every 100 ms and owns the consumer until it returns. */
        n->stopping = true;
        pthread_join(n->apply_thread, NULL);
        n->apply_running = false;
    }
    if (n->rpc) {
        natsSubscription_Drain(n->rpc);
        natsSubscription_WaitForDrainCompletion(n->rpc, n->opt.timeout_ms);
        natsSubscription_Destroy(n->rpc);
        n->rpc = NULL;
    }
    if (n->records) {
        natsSubscription_Unsubscribe(n->records);
        natsSubscription_Destroy(n->records);
        n->records = NULL;
    }
    kvStore_Destroy(n->kv);
    n->kv = NULL;
    jsCtx_Destroy(n->js);
    n->js = NULL;
    if (n->nc) {
        natsConnection_Close(n->nc);
        natsConnection_Destroy(n->nc);
        n->nc = NULL;
    }
}

int uf_nats_node_start(uf_nats_node *n) {
    if (!n) return ufn_fail(UF_EINVAL, "uf_nats_node_start: n is NULL");
    if (n->started) return ufn_fail(UF_EMISUSE, "uf_nats_node_start: the node is already started");
    n->stopping = false;
    int rc = ufn_connect(n);
    if (rc == UF_OK) rc = ufn_check_server_version(n);
    if (rc == UF_OK) rc = ufn_ensure_stream(n);
    if (rc == UF_OK) rc = ufn_ensure_bucket(n);
    if (rc == UF_OK) rc = ufn_subscribe_requests(n);
    if (rc == UF_OK) rc = ufn_load_snapshots(n);
    if (rc == UF_OK) rc = ufn_subscribe_records(n);
    if (rc == UF_OK) {
        if (pthread_create(&n->apply_thread, NULL, ufn_apply_main, n) != 0)
            rc = ufn_fail(UF_ENOMEM, "uf_nats_node_start: cannot start the apply thread");
        else n->apply_running = true;
    }
    /* Catch up: as long as the node keeps applying, a long history is no
     * failure; timeout_ms without progress is. */
    uint64_t before = 0;
    while (rc == UF_OK) {
        rc = ufn_wait_applied(n, ufn_now_ms() + n->opt.timeout_ms, false);
        if (rc == UF_OK) break;
        pthread_mutex_lock(&n->mu);
        bool moved = n->applied_through > before;
        before = n->applied_through;
        pthread_mutex_unlock(&n->mu);
        if (moved) rc = UF_OK;
        else {
            char why[800];
            snprintf(why, sizeof why, "%s", uf_nats_last_error());
            rc = ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: catching up made no progress within %lld ms: %s",
                          (long long)n->opt.timeout_ms, why);
        }
    }
    if (rc == UF_OK) {
        if (pthread_create(&n->lease_thread, NULL, lease_main, n) != 0)
            rc = ufn_fail(UF_ENOMEM, "uf_nats_node_start: cannot start the lease thread");
        else n->lease_running = true;
    }
    if (rc != UF_OK) {
        int status = uf_nats_last_status();
        char message[1024];
        snprintf(message, sizeof message, "%s", uf_nats_last_error());
        disconnect(n);
        n->stopping = false;
        return ufn_fail(status ? status : rc, "%s", message);
    }
    n->started = true;
    return UF_OK;
}

int uf_nats_sync(uf_nats_node *n, int timeout_ms) {
    if (!n) return ufn_fail(UF_EINVAL, "uf_nats_sync: n is NULL");
    if (!n->started) return ufn_fail(UF_EMISUSE, "uf_nats_sync: the node is not started");
    int64_t wait = timeout_ms > 0 ? timeout_ms : n->opt.timeout_ms;
    int rc = ufn_wait_applied(n, ufn_now_ms() + wait, true);
    if (rc != UF_OK) {
        char why[800];
        snprintf(why, sizeof why, "%s", uf_nats_last_error());
        return ufn_fail(rc, "uf_nats_sync: %s (waited %lld ms)", why, (long long)wait);
    }
    return UF_OK;
}

int uf_nats_node_status(uf_nats_node *n, char **out) {
    if (!out) return ufn_fail(UF_EINVAL, "uf_nats_node_status: json is NULL");
    *out = NULL;
    if (!n) return ufn_fail(UF_EINVAL, "uf_nats_node_status: n is NULL");
    char *text = NULL;
    int rc = uf_partitions_get(n->d, &text);
    if (rc != UF_OK) return ufn_fail_core(rc);
    json_t *partitions = json_loads(text, 0, NULL);
    uf_free(text);
    json_t *owned = json_array(), *blocked = json_array();
    int64_t now = ufn_now_ms();
    pthread_mutex_lock(&n->mu);
    for (uint32_t p = 0; p <= n->global; p++) {
        bool mine = json_is_true(json_object_get(json_array_get(partitions, p), "mine"));
        if (mine && n->parts[p].claimed && ufn_lease_fresh(n, p, now)) json_array_append_new(owned, json_integer(p));
        if (n->parts[p].blocked) json_array_append_new(blocked, json_integer(p));
    }
    uint64_t errors = n->apply_errors;
    json_t *last_error = errors ? json_string(n->last_apply_error) : json_null();
    pthread_mutex_unlock(&n->mu);
    bool connected = n->nc && natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED;
    json_t *root = json_pack("{s:s, s:s, s:b, s:o, s:o, s:o, s:I, s:I, s:o}",
                             "node", n->name, "model", n->opt.model, "connected", connected,
                             "owned", owned, "partitions", partitions ? partitions : json_null(),
                             "blocked", blocked,
                             "lag", (json_int_t)(n->started ? ufn_lag(n) : 0),
                             "apply_errors", (json_int_t)errors, "last_apply_error", last_error);
    char *dumped = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!dumped) return ufn_fail(UF_ENOMEM, "uf_nats_node_status: out of memory");
    /* The caller frees with uf_free (the core's free): hand over a block the
     * C allocator made, which is what uf_free releases. */
    *out = dumped;
    return UF_OK;
}

void uf_nats_node_free(uf_nats_node *n) {
    if (!n) return;
    if (n->started) {
        pthread_mutex_lock(&n->mu);
        n->stopping = true;
        pthread_cond_broadcast(&n->changed);
        ufn_wake_lease(n);
        pthread_mutex_unlock(&n->mu);
        if (n->lease_running) pthread_join(n->lease_thread, NULL);
        n->lease_running = false;
        ufn_leases_release_all(n);
    }
    n->stopping = true;
    if (n->sink_installed) uf_record_sink(n->d, refuse_without_node, NULL, NULL);
    disconnect(n);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->changed);
    pthread_cond_destroy(&n->lease_wake);
    free(n->parts);
    ufn_options_free(&n->opt);
    free(n);
}
