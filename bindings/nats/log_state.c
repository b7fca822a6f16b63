/* log_state.c — what the node knows of each partition's subject in the stream:
 * the stream sequence of recent versions (the compare-and-swap needs the
 * sequence of the version before the one being written), how far it applied,
 * and the global partition's after[p] (how far the purge may go). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

int64_t ufn_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint32_t ufn_fnv1a32(const char *bytes, size_t len) {
    uint32_t hash = 0x811c9dc5u;
    for (size_t i = 0; i < len; i++) {
        hash ^= (unsigned char)bytes[i];
        hash *= 0x01000193u;
    }
    return hash;
}

void ufn_record_subject(const uf_nats_node *n, uint32_t p, char *buf, size_t size) {
    snprintf(buf, size, "uf.%s.p.%u", n->opt.model, p);
}

void ufn_snapshot_subject(const uf_nats_node *n, uint32_t p, char *buf, size_t size) {
    snprintf(buf, size, "uf.%s.s.%u", n->opt.model, p);
}

/* A pair read from the log is a fact about the log (compare-and-swap keeps one
 * record per version), so it is kept whether or not it has been applied yet.
 * A slot that holds a newer version keeps it: the apply thread reads an owner's
 * own records back behind its writes (more than UFN_RING versions behind when
 * the owner writes fast), and the pair the next write needs is the newest. */
void ufn_note_seq(uf_nats_node *n, uint32_t p, uint64_t version, uint64_t seq) {
    if (version == 0) return;
    ufn_partition *part = &n->parts[p];
    if (part->ring[version % UFN_RING].version > version) return;
    part->ring[version % UFN_RING].version = version;
    part->ring[version % UFN_RING].seq = seq;
}

bool ufn_seq_of(const uf_nats_node *n, uint32_t p, uint64_t version, uint64_t *seq) {
    const ufn_partition *part = &n->parts[p];
    if (part->ring[version % UFN_RING].version != version || version == 0) return false;
    *seq = part->ring[version % UFN_RING].seq;
    return true;
}

void ufn_note_applied(uf_nats_node *n, uint32_t p, uint64_t seq) {
    if (seq > n->parts[p].applied_seq) n->parts[p].applied_seq = seq;
}

bool ufn_parse_msg_id(const char *id, uint32_t *p, uint64_t *version) {
    if (!id) return false;
    const char *colon = strchr(id, ':');
    if (!colon) return false;
    char *end = NULL;
    unsigned long long part = strtoull(colon + 1, &end, 10);
    if (end == colon + 1 || *end != ':') return false;
    const char *v = end + 1;
    unsigned long long ver = strtoull(v, &end, 10);
    if (end == v || *end != ':') return false;
    *p = (uint32_t)part;
    *version = ver;
    return true;
}

void ufn_note_after(uf_nats_node *n, const char *text) {
    json_t *root = json_loads(text, 0, NULL);
    json_t *after = json_object_get(root, "after");
    if (json_is_object(after)) {
        const char *key;
        json_t *value;
        pthread_mutex_lock(&n->mu);
        json_object_foreach(after, key, value) {
            char *end = NULL;
            unsigned long q = strtoul(key, &end, 10);
            if (*key && !*end && q < n->global && json_is_integer(value)) {
                n->parts[q].after = (uint64_t)json_integer_value(value);
                n->parts[q].after_known = true;
            }
        }
        pthread_mutex_unlock(&n->mu);
    }
    json_decref(root);
}
