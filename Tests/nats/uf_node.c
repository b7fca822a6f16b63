/* uf_node — one uniflow node on NATS JetStream, driven line by line from stdin:
 * the program the adapter's tests (Tests/nats/run, and the Python tests) start
 * as separate processes.
 *
 *   uf_node --defs FILE [--defs FILE]... --partitions N --node NAME
 *           [--options NATS_OPTIONS_JSON] [--dispatcher DISPATCHER_OPTIONS_JSON]
 *           [--no-start]
 *
 * --options is the object of uf_nats_node_new (url, model, owns, ...);
 * --dispatcher replaces the dispatcher's options (default {"partitions": N,
 * "node": NAME}). Unless --no-start, the node starts at once and the program
 * prints "ready NAME". Then each command line gets exactly one answer line:
 * "OK [text]" or "ERR UF_STATUS message".
 *
 *   start                        uf_nats_node_start
 *   submit ACTION_JSON           uf_nats_submit (routed): OK UF_OK | OK UF_QUEUED | ERR ...
 *   local ACTION_JSON            uf_submit on the dispatcher itself (no routing)
 *   sync [MS]                    uf_nats_sync
 *   state                        OK <uf_state_get>
 *   status                       OK <uf_nats_node_status>
 *   partitions                   OK <uf_partitions_get>
 *   claim P | release P          uf_partition_claim / uf_partition_release
 *   last SUBJECT                 OK SEQ PAYLOAD of the stream's last message on
 *                                SUBJECT (OK 0 when none): a reader independent
 *                                of the adapter (its own libnats connection)
 *   publish SUBJECT EXPECTED ID PAYLOAD
 *                                publishes PAYLOAD as is, expecting the subject's
 *                                last sequence EXPECTED ("-": no check, "0": no
 *                                message), with Nats-Msg-Id ID ("-": none):
 *                                OK SEQ | ERR <jetstream error code> text
 *   count SUBJECT                OK <messages of the stream on SUBJECT>
 *   history SUBJECT              OK [[seq, partition, version, node, "claim"|"release"|null,
 *                                ["Feature[key]:State", ...]], ...]: every record the
 *                                stream holds on SUBJECT (which may be a wildcard),
 *                                in stream order, with the state each mutation line
 *                                set (null for a deinitialization; timer lines left
 *                                out)
 *   repeat N ACTION_JSON         uf_nats_submit of ACTION_JSON N times in a tight
 *                                loop (no pause between writes for the apply
 *                                thread): OK N | ERR ... of the first failure,
 *                                with its index
 *   quit                         uf_nats_node_free, then exit 0 (so does EOF)
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniflow.h"
#include "uniflow_nats.h"

static uf_dispatcher *d;
static uf_nats_node *node;
static natsConnection *raw;
static jsCtx *raw_js;
static char url[1024] = "nats://127.0.0.1:4222", stream[128];

static void err(int status, const char *message) {
    printf("ERR %s %s\n", uf_status_name(status), message);
}

static void answer_nats(int rc) {
    if (rc < 0) err(rc, uf_nats_last_error());
    else printf("OK %s\n", uf_status_name(rc));
}

static void answer_core(int rc) {
    if (rc < 0) err(rc, uf_last_error());
    else printf("OK %s\n", uf_status_name(rc));
}

static void answer_text(int rc, char *text, int from_nats) {
    if (rc < 0) err(rc, from_nats ? uf_nats_last_error() : uf_last_error());
    else printf("OK %s\n", text ? text : "null");
    uf_free(text);
}

/* The test's own connection, for reading and writing the stream directly. */
static int ensure_raw(void) {
    if (raw_js) return 1;
    if (natsConnection_ConnectTo(&raw, url) != NATS_OK || natsConnection_JetStream(&raw_js, raw, NULL) != NATS_OK) {
        printf("ERR UF_EUNAVAILABLE cannot connect to %s\n", url);
        return 0;
    }
    return 1;
}

static void cmd_last(const char *subject) {
    if (!ensure_raw()) return;
    natsMsg *m = NULL;
    jsErrCode ec = 0;
    natsStatus s = js_GetLastMsg(&m, raw_js, stream, subject, NULL, &ec);
    if (s == NATS_NOT_FOUND) printf("OK 0\n");
    else if (s != NATS_OK) printf("ERR UF_EUNAVAILABLE %s\n", natsStatus_GetText(s));
    else printf("OK %llu %.*s\n", (unsigned long long)natsMsg_GetSequence(m), natsMsg_GetDataLength(m), natsMsg_GetData(m));
    natsMsg_Destroy(m);
}

static void cmd_count(const char *subject) {
    if (!ensure_raw()) return;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Stream.Info.SubjectsFilter = subject;
    jsStreamInfo *si = NULL;
    jsErrCode ec = 0;
    if (js_GetStreamInfo(&si, raw_js, stream, &jo, &ec) != NATS_OK) {
        printf("ERR UF_EUNAVAILABLE cannot read the stream %s\n", stream);
        return;
    }
    uint64_t total = 0;
    if (si->State.Subjects)
        for (int i = 0; i < si->State.Subjects->Count; i++) total += si->State.Subjects->List[i].Msgs;
    printf("OK %llu\n", (unsigned long long)total);
    jsStreamInfo_Destroy(si);
}

static void cmd_publish(char *args) {
    char *subject = strtok(args, " "), *expected = strtok(NULL, " "), *id = strtok(NULL, " ");
    char *payload = strtok(NULL, "");
    if (!subject || !expected || !id || !payload) { printf("ERR UF_EINVAL publish SUBJECT EXPECTED ID PAYLOAD\n"); return; }
    if (!ensure_raw()) return;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    if (strcmp(expected, "0") == 0) po.ExpectNoMessage = true;
    else if (strcmp(expected, "-") != 0) po.ExpectLastSubjectSeq = strtoull(expected, NULL, 10);
    if (strcmp(id, "-") != 0) po.MsgId = id;
    jsPubAck *ack = NULL;
    jsErrCode ec = 0;
    natsStatus s = js_Publish(&ack, raw_js, subject, payload, (int)strlen(payload), &po, &ec);
    if (s == NATS_OK) printf("OK %llu\n", (unsigned long long)ack->Sequence);
    else printf("ERR %d %s\n", (int)ec, natsStatus_GetText(s));
    jsPubAck_Destroy(ack);
}

static void cmd_history(const char *subject) {
    if (!ensure_raw()) return;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    natsSubscription *sub = NULL;
    jsErrCode ec = 0;
    if (js_SubscribeSync(&sub, raw_js, subject, NULL, &so, &ec) != NATS_OK) {
        printf("ERR UF_EUNAVAILABLE cannot read %s\n", subject);
        return;
    }
    json_t *list = json_array();
    for (;;) {
        natsMsg *m = NULL;
        jsMsgMetaData *meta = NULL;
        if (natsSubscription_NextMsg(&m, sub, 500) != NATS_OK) break;
        natsMsg_GetMetaData(&meta, m);
        json_t *record = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, NULL);
        const char *kind = json_object_get(record, "claim") ? "claim" : json_object_get(record, "release") ? "release" : NULL;
        json_t *changes = json_array();
        size_t i;
        json_t *line;
        json_array_foreach(json_object_get(record, "lines"), i, line) {
            const char *feature = json_string_value(json_object_get(line, "feature"));
            const char *key = json_string_value(json_object_get(line, "key"));
            json_t *state = json_object_get(line, "state");
            if (!feature || !state) continue;
            char change[512];
            snprintf(change, sizeof change, "%s%s%s%s:%s", feature, key ? "[" : "", key ? key : "", key ? "]" : "",
                     json_is_string(state) ? json_string_value(state) : "null");
            json_array_append_new(changes, json_string(change));
        }
        json_array_append_new(list, json_pack("[I, O, O, O, s?, o]", (json_int_t)(meta ? meta->Sequence.Stream : 0),
                                              json_object_get(record, "partition") ? json_object_get(record, "partition") : json_null(),
                                              json_object_get(record, "version") ? json_object_get(record, "version") : json_null(),
                                              json_object_get(record, "node") ? json_object_get(record, "node") : json_null(),
                                              kind, changes));
        uint64_t pending = meta ? meta->NumPending : 0;
        json_decref(record);
        jsMsgMetaData_Destroy(meta);
        natsMsg_Destroy(m);
        if (pending == 0) break;
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    char *text = json_dumps(list, JSON_COMPACT);
    printf("OK %s\n", text);
    free(text);
    json_decref(list);
}

static void extract_url_and_model(const char *options) {
    /* Enough of a reader for the test's own connection: "url" and "model". */
    const char *u = options ? strstr(options, "\"url\"") : NULL, *m = options ? strstr(options, "\"model\"") : NULL;
    if (u && (u = strchr(u + 5, '"'))) sscanf(u + 1, "%1023[^\"]", url);
    char model[100] = "";
    if (m && (m = strchr(m + 7, '"'))) sscanf(m + 1, "%99[^\"]", model);
    snprintf(stream, sizeof stream, "UF_%s", model);
}

/* repeat N ACTION_JSON */
static void cmd_repeat(char *args) {
    char *action = NULL;
    long count = strtol(args, &action, 10);
    while (action && *action == ' ') action++;
    for (long i = 0; i < count; i++) {
        int rc = uf_nats_submit(node, action);
        if (rc < 0) {
            printf("ERR %s write %ld of %ld: %s\n", uf_status_name(rc), i, count, uf_nats_last_error());
            return;
        }
    }
    printf("OK %ld\n", count);
}

int main(int argc, char **argv) {
    const char *defs[16], *node_name = NULL, *options = NULL, *dispatcher_options = NULL;
    int ndefs = 0, partitions = 0, start = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--defs") == 0 && i + 1 < argc && ndefs < 16) defs[ndefs++] = argv[++i];
        else if (strcmp(argv[i], "--partitions") == 0 && i + 1 < argc) partitions = atoi(argv[++i]);
        else if (strcmp(argv[i], "--node") == 0 && i + 1 < argc) node_name = argv[++i];
        else if (strcmp(argv[i], "--options") == 0 && i + 1 < argc) options = argv[++i];
        else if (strcmp(argv[i], "--dispatcher") == 0 && i + 1 < argc) dispatcher_options = argv[++i];
        else if (strcmp(argv[i], "--no-start") == 0) start = 0;
        else {
            fprintf(stderr, "usage: uf_node --defs FILE... --partitions N --node NAME [--options JSON] "
                            "[--dispatcher JSON] [--no-start]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    char dopts[512];
    if (!dispatcher_options) {
        snprintf(dopts, sizeof dopts, "{\"partitions\": %d, \"node\": \"%s\"}", partitions, node_name ? node_name : "");
        dispatcher_options = dopts;
    }
    extract_url_and_model(options);
    int rc = uf_dispatcher_new(&d, dispatcher_options);
    for (int i = 0; rc == UF_OK && i < ndefs; i++) rc = uf_register_file(d, defs[i]);
    if (rc != UF_OK) {
        fprintf(stderr, "uf_node: %s: %s\n", uf_status_name(rc), uf_last_error());
        return 1;
    }
    rc = uf_nats_node_new(&node, d, options);
    if (rc == UF_OK && start) rc = uf_nats_node_start(node);
    if (rc != UF_OK) {
        fprintf(stderr, "uf_node: %s: %s\n", uf_status_name(rc), uf_nats_last_error());
        printf("ERR %s %s\n", uf_status_name(rc), uf_nats_last_error());
        uf_nats_node_free(node);
        uf_dispatcher_free(d);
        return 1;
    }
    if (start) printf("ready %s\n", node_name ? node_name : "");

    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        char *args = strchr(line, ' ');
        if (args) *args++ = '\0';
        else args = line + len;
        char *text = NULL;
        if (strcmp(line, "quit") == 0) break;
        else if (strcmp(line, "start") == 0) answer_nats(uf_nats_node_start(node));
        else if (strcmp(line, "submit") == 0) answer_nats(uf_nats_submit(node, args));
        else if (strcmp(line, "local") == 0) answer_core(uf_submit(d, args));
        else if (strcmp(line, "sync") == 0) answer_nats(uf_nats_sync(node, *args ? atoi(args) : 0));
        else if (strcmp(line, "state") == 0) { rc = uf_state_get(d, &text); answer_text(rc, text, 0); }
        else if (strcmp(line, "status") == 0) { rc = uf_nats_node_status(node, &text); answer_text(rc, text, 1); }
        else if (strcmp(line, "partitions") == 0) { rc = uf_partitions_get(d, &text); answer_text(rc, text, 0); }
        else if (strcmp(line, "claim") == 0) answer_core(uf_partition_claim(d, (uint32_t)atoi(args)));
        else if (strcmp(line, "release") == 0) answer_core(uf_partition_release(d, (uint32_t)atoi(args)));
        else if (strcmp(line, "last") == 0) cmd_last(args);
        else if (strcmp(line, "count") == 0) cmd_count(args);
        else if (strcmp(line, "history") == 0) cmd_history(args);
        else if (strcmp(line, "publish") == 0) cmd_publish(args);
        else if (strcmp(line, "repeat") == 0) cmd_repeat(args);
        else printf("ERR UF_EINVAL unknown command '%s'\n", line);
    }
    free(line);
    uf_nats_node_free(node);
    uf_dispatcher_free(d);
    if (raw) {
        jsCtx_Destroy(raw_js);
        natsConnection_Destroy(raw);
    }
    printf("OK bye\n");
    return 0;
}
