/* route.c — uf_nats_submit runs an action at the owner of its partition: here,
 * or through a NATS request to ufrpc.<model>.<owner>, whose handler (also here)
 * runs it and answers {"status": S, "message": M}. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

/* The partition of an action, when it can be told; false lets the core judge. */
static bool action_partition(uf_nats_node *n, const char *action, uint32_t *p) {
    char name[UFN_HEADER_MAX], key_text[UFN_HEADER_MAX];
    bool has_key;
    if (ufn_action_header(action, name, sizeof name, key_text, sizeof key_text, &has_key))
        return uf_partition_of(n->d, name, has_key ? key_text : NULL, p) == UF_OK;
    json_t *root = json_loads(action, 0, NULL);
    const char *feature = json_string_value(json_object_get(root, "feature"));
    json_t *key = json_object_get(root, "key");
    bool ok = feature && (!key || json_is_string(key)) &&
              uf_partition_of(n->d, feature, key ? json_string_value(key) : NULL, p) == UF_OK;
    json_decref(root);
    return ok;
}

/* The owner of p as this node knows it (from the log's claims), and whether
 * it is this node. */
static bool known_owner(uf_nats_node *n, uint32_t p, char *owner, size_t size) {
    char *text = NULL;
    owner[0] = '\0';
    if (uf_partitions_get(n->d, &text) != UF_OK) return false;
    json_t *list = json_loads(text, 0, NULL);
    uf_free(text);
    const char *name = json_string_value(json_object_get(json_array_get(list, p), "owner"));
    if (name) snprintf(owner, size, "%s", name);
    json_decref(list);
    return name != NULL;
}

static bool mine_now(uf_nats_node *n, uint32_t p) {
    pthread_mutex_lock(&n->mu);
    bool mine = n->parts[p].claimed && ufn_lease_fresh(n, p, ufn_now_ms());
    pthread_mutex_unlock(&n->mu);
    return mine;
}

static int run_local(uf_nats_node *n, const char *action) {
    ufn_take_sink_detail();
    int rc = uf_submit(n->d, action);
    if (rc < 0) return ufn_fail_core_detail(rc, ufn_take_sink_detail());
    return rc;
}

static void pause_ms(int ms) {
    struct timespec ts = {0, (long)ms * 1000000};
    nanosleep(&ts, NULL);
}

int uf_nats_submit(uf_nats_node *n, const char *action) {
    if (!n) return ufn_fail(UF_EINVAL, "uf_nats_submit: n is NULL");
    if (!action) return ufn_fail(UF_EINVAL, "uf_nats_submit: action_json is NULL");
    uint32_t p;
    if (!n->started || !action_partition(n, action, &p)) return run_local(n, action);
    int64_t deadline = ufn_now_ms() + n->opt.timeout_ms;
    char owner[UFN_NAME_MAX + 1], refused_by[UFN_NAME_MAX + 1] = "", why[512] = "";
    for (;;) {
        if (mine_now(n, p)) return run_local(n, action);
        bool has_owner = known_owner(n, p, owner, sizeof owner);
        bool ask = has_owner && strcmp(owner, n->name) != 0 && strcmp(owner, refused_by) != 0;
        if (ask) {
            char subject[3 * UFN_NAME_MAX];
            snprintf(subject, sizeof subject, "ufrpc.%s.%s", n->opt.model, owner);
            int64_t left = deadline - ufn_now_ms();
            natsMsg *reply = NULL;
            natsStatus s = natsConnection_Request(&reply, n->nc, subject, action, (int)strlen(action),
                                                  left > 1 ? left : 1);
            if (s == NATS_TIMEOUT) {
                return ufn_fail(UF_EUNAVAILABLE, "uf_nats_submit: node '%s', owner of partition %u, did not answer "
                                "within %lld ms; the action may have run there (it is not sent again)",
                                owner, p, (long long)n->opt.timeout_ms);
            }
            if (s == NATS_OK) {
                json_t *root = json_loads(natsMsg_GetData(reply), 0, NULL);
                json_t *status = json_object_get(root, "status");
                const char *message = json_string_value(json_object_get(root, "message"));
                int rc = json_is_integer(status) ? (int)json_integer_value(status) : UF_EUNAVAILABLE;
                if (rc == UF_ENOTOWNER) {
                    /* It lost the partition: ask again once a newer claim is
                     * applied here. */
                    snprintf(refused_by, sizeof refused_by, "%s", owner);
                    snprintf(why, sizeof why, "%s", message ? message : "");
                } else if (rc < 0) {
                    rc = ufn_fail(rc, "%s", message ? message : "uf_nats_submit: the owner's answer is malformed");
                }
                json_decref(root);
                natsMsg_Destroy(reply);
                if (rc != UF_ENOTOWNER) return rc;
            } else {
                /* No responders: nobody listens there (the owner is gone); the
                 * request was not delivered, so asking a newer owner is safe. */
                snprintf(refused_by, sizeof refused_by, "%s", owner);
                snprintf(why, sizeof why, "node '%s' does not answer requests (%s)", owner, natsStatus_GetText(s));
            }
        }
        if (ufn_now_ms() >= deadline) break;
        pause_ms(10);
    }
    if (*why) return ufn_fail(UF_ENOTOWNER, "uf_nats_submit: partition %u has no owner that runs it within %lld ms: %s",
                              p, (long long)n->opt.timeout_ms, why);
    if (*owner && strcmp(owner, n->name) == 0)
        return ufn_fail(UF_ENOTOWNER, "uf_nats_submit: this node's lease on partition %u is stale (not renewed "
                        "within two thirds of %lld ms)", p, (long long)n->opt.lease_ms);
    return ufn_fail(UF_ENOTOWNER, "uf_nats_submit: partition %u has no owner (waited %lld ms)", p,
                    (long long)n->opt.timeout_ms);
}

/* A request from another node: run it if this node owns the partition now. */
static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure) {
    (void)sub;
    uf_nats_node *n = closure;
    const char *action = natsMsg_GetData(m);
    uint32_t p = 0;
    int rc;
    const char *message = "";
    char buf[1200];
    if (action_partition(n, action, &p) && !mine_now(n, p)) {
        rc = UF_ENOTOWNER;
        snprintf(buf, sizeof buf, "node '%s' does not own partition %u (any more)", n->name, p);
        message = buf;
    } else {
        rc = run_local(n, action);
        if (rc < 0) message = uf_nats_last_error();
    }
    json_t *answer = json_pack("{s:i, s:s}", "status", rc, "message", message);
    char *text = json_dumps(answer, JSON_COMPACT);
    if (text && natsMsg_GetReply(m)) natsConnection_PublishString(nc, natsMsg_GetReply(m), text);
    free(text);
    json_decref(answer);
    natsMsg_Destroy(m);
}

int ufn_subscribe_requests(uf_nats_node *n) {
    natsStatus s = natsConnection_Subscribe(&n->rpc, n->nc, n->rpc_subject, on_request, n);
    if (s != NATS_OK)
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot subscribe to %s: %s", n->rpc_subject, ufn_nats_text(s));
    return UF_OK;
}
