/* server.c — the connection, the server's version, and the two JetStream
 * objects every node of a model shares: the stream UF_<model> and the KV bucket
 * UF_<model>_owners. Either is created by the first node that finds it missing;
 * an existing one is used as it is. */
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "node.h"

/* libnats' thread, after a reconnection: the apply thread makes a new consumer. */
static void reconnected(natsConnection *nc, void *closure) {
    (void)nc;
    uf_nats_node *n = closure;
    pthread_mutex_lock(&n->mu);
    n->resubscribe = true;
    pthread_mutex_unlock(&n->mu);
}

int ufn_connect(uf_nats_node *n) {
    natsOptions *opts = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, n->opt.url);
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, n->opt.timeout_ms);
    /* A node outlives server restarts: reconnect for ever, quickly. What was
     * published while away is settled by the compare-and-swap (publish.c). */
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 100);
    if (s == NATS_OK) s = natsOptions_SetName(opts, n->name);
    if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, reconnected, n);
    if (s != NATS_OK) {
        natsOptions_Destroy(opts);
        return ufn_fail(UF_ENOMEM, "uf_nats_node_start: cannot set the connection's options: %s", ufn_nats_text(s));
    }
    s = natsConnection_Connect(&n->nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK)
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot connect to %s: %s", n->opt.url, ufn_nats_text(s));
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = n->opt.timeout_ms;
    s = natsConnection_JetStream(&n->js, n->nc, &jo);
    if (s != NATS_OK)
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: no JetStream context: %s", ufn_nats_text(s));
    return UF_OK;
}

/* libnats 3.4 does not tell the server's version, which the server announces
 * in the INFO line it sends first on every connection: read it there. */
static int read_server_version(const char *url, int64_t timeout_ms, char *version, size_t size) {
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    const char *at = strchr(host, '@');   /* user:password@host */
    if (at) host = at + 1;
    char hostbuf[256];
    snprintf(hostbuf, sizeof hostbuf, "%s", host);
    char *slash = strchr(hostbuf, '/');
    if (slash) *slash = '\0';
    char *colon = strrchr(hostbuf, ':');
    const char *port = "4222";
    if (colon) { *colon = '\0'; port = colon + 1; }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(hostbuf, port, &hints, &res) != 0) return -1;
    int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    int ok = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0;
    freeaddrinfo(res);
    char line[4096];
    size_t used = 0;
    int64_t deadline = ufn_now_ms() + timeout_ms;
    while (ok && used < sizeof line - 1 && !memchr(line, '\n', used)) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int64_t left = deadline - ufn_now_ms();
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) { ok = 0; break; }
        ssize_t got = read(fd, line + used, sizeof line - 1 - used);
        if (got <= 0) { ok = 0; break; }
        used += (size_t)got;
    }
    if (fd >= 0) close(fd);
    if (!ok || used < 5 || strncmp(line, "INFO ", 5) != 0) return -1;
    line[used] = '\0';
    json_t *info = json_loads(line + 5, JSON_DISABLE_EOF_CHECK, NULL);
    const char *v = json_string_value(json_object_get(info, "version"));
    int rc = v ? 0 : -1;
    if (v) snprintf(version, size, "%s", v);
    json_decref(info);
    return rc;
}

int ufn_check_server_version(uf_nats_node *n) {
    if (n->opt.replicas <= 1) return UF_OK;
    char url[512] = "", version[64] = "";
    if (natsConnection_GetConnectedUrl(n->nc, url, sizeof url) != NATS_OK || !*url)
        snprintf(url, sizeof url, "%s", n->opt.url);
    if (read_server_version(url, n->opt.timeout_ms, version, sizeof version) != 0)
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot read the version of the server at %s, "
                        "which replicas > 1 needs (2.10.19 or later)", url);
    int major = 0, minor = 0, patch = 0;
    sscanf(version, "%d.%d.%d", &major, &minor, &patch);
    long number = major * 1000000L + minor * 1000L + patch;
    if (number < 2010019L)
        return ufn_fail(UF_EINVAL, "uf_nats_node_start: \"replicas\": %lld needs nats-server 2.10.19 or later; the server "
                        "at %s is %s, on which the compare-and-swap of a replicated stream is not safe "
                        "(two writers could both pass the expected-last-sequence check)",
                        (long long)n->opt.replicas, url, version);
    return UF_OK;
}

int ufn_ensure_stream(uf_nats_node *n) {
    jsStreamInfo *si = NULL;
    jsErrCode ec = 0;
    natsStatus s = js_GetStreamInfo(&si, n->js, n->stream, NULL, &ec);
    if (s == NATS_OK) {
        jsStreamInfo_Destroy(si);
        return UF_OK;
    }
    if (s != NATS_NOT_FOUND)
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot read the stream %s (is the server started with -js?): %s",
                        n->stream, ufn_nats_text(s));
    char records[UFN_NAME_MAX + 16], snapshots[UFN_NAME_MAX + 16];
    snprintf(records, sizeof records, "uf.%s.p.>", n->opt.model);
    snprintf(snapshots, sizeof snapshots, "uf.%s.s.>", n->opt.model);
    const char *subjects[] = {records, snapshots};
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = n->stream;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 2;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = n->opt.replicas;
    s = js_AddStream(&si, n->js, &cfg, NULL, &ec);
    jsStreamInfo_Destroy(si);
    si = NULL;
    if (s == NATS_OK) return UF_OK;
    /* Another node may have created it in between. The server reports that
     * race as "name in use" (10058) or, when both creations are in flight at
     * once, as "subjects overlap" (10065); either way the stream now exists. */
    jsErrCode add_ec = ec;
    natsStatus add_s = s;
    if (js_GetStreamInfo(&si, n->js, n->stream, NULL, &ec) == NATS_OK) {
        jsStreamInfo_Destroy(si);
        return UF_OK;
    }
    return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot create the stream %s: %s (error %d)",
                    n->stream, ufn_nats_text(add_s), (int)add_ec);
}

int ufn_ensure_bucket(uf_nats_node *n) {
    natsStatus s = js_KeyValue(&n->kv, n->js, n->bucket);
    if (s == NATS_OK) return UF_OK;
    if (s != NATS_NOT_FOUND)
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot read the bucket %s: %s", n->bucket, ufn_nats_text(s));
    kvConfig cfg;
    kvConfig_Init(&cfg);
    cfg.Bucket = n->bucket;
    cfg.History = 1;
    /* The lease: a key not renewed within lease_ms disappears (the bucket's
     * TTL, in nanoseconds; one TTL for every key on 2.9). */
    cfg.TTL = n->opt.lease_ms * 1000000;
    cfg.StorageType = js_FileStorage;
    cfg.Replicas = (int)n->opt.replicas;
    s = js_CreateKeyValue(&n->kv, n->js, &cfg);
    if (s != NATS_OK) {
        /* Another node may have created it in between. */
        if (js_KeyValue(&n->kv, n->js, n->bucket) == NATS_OK) return UF_OK;
        return ufn_fail(UF_EUNAVAILABLE, "uf_nats_node_start: cannot create the bucket %s: %s", n->bucket, ufn_nats_text(s));
    }
    return UF_OK;
}
