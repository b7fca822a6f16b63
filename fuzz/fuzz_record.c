/*
 * fuzz_record.c — uf_record_apply with arbitrary records.
 *
 * The input is a flags byte, then records separated by '\n' (a writer's record
 * is one line: its JSON has no raw newline), applied in order to a partitioned
 * dispatcher (4 partitions, node "f", the manual clock) that holds the
 * definitions below: a keyed feature, and a single one with a state timer and a
 * model binding (a record of two lines). The model binding is on the single
 * feature: a keyed one's that inherits the key (TransitionInto<Job.Done> then
 * deinitialize Job) reads freed memory in the core's staged policy (its record's
 * action names a garbage key); add it here once that is fixed. Its record sink accepts everything and keeps the text
 * of each partition's last record, so this node's own records chain like the
 * applied ones. The flags:
 *   bit 0  chain: before each record is applied, its "prev" value (null or a hash)
 *          is replaced by the hash of the last record of its "partition" on this
 *          node, so that mutated records get past the chain check (a fuzzer cannot
 *          compute FNV-1a); without it the record is applied as it is
 *   bit 1  claim first: this node claims partition (flags >> 4) % 5 before the
 *          records (a record of another node's claim then ends its ownership)
 *   bit 2  write after: then this node claims every partition and submits fixed
 *          actions; each record its sink gets applies again as a duplicate
 *          (UF_OK, nothing changes) and its mutations are not foreign
 * The seeds (fuzz/corpus/record, fuzz/make_corpus.py) are records that a writer
 * node "w" of the same definitions wrote through its sink.
 *
 * Invariants after every uf_record_apply:
 *   - the status is UF_OK, UF_EJSON, UF_ESCHEMA, UF_EGAP or UF_ECONFLICT (or
 *     UF_ENOTFOUND for an unknown feature or state), and a failure leaves
 *     uf_last_status() equal to it and a message;
 *   - a failed apply changes neither uf_state_get nor uf_partitions_get and tells
 *     subscribers nothing;
 *   - uf_partitions_get is N + 1 entries {"p","version","owner","mine"} in order,
 *     "mine" only with owner "f"; no version ever decreases; an applied record
 *     moves one partition's version by 1, and a duplicate (no version moved)
 *     changes nothing and tells subscribers nothing;
 *   - every mutation an applied record tells of is foreign (uf_mutation_foreign);
 *   - a replica: a second node "g" that applies, in order, every record that moved
 *     a version on "f" (this node's own included) accepts each one (UF_OK) and ends
 *     with the same model and the same versions.
 */
#include "fuzz_common.h"

enum { PARTITIONS = 4, ALL = PARTITIONS + 1, MAX_RECORDS = 256 };

static const char definitions[] =
    "{\"features\": ["
    " {\"feature\":\"Job\",\"instances\":\"keyed\","
    "  \"states\":{\"Queued\":{},\"Running\":{\"fields\":{\"progress\":\"number\",\"note\":{\"type\":\"string\",\"optional\":true}}},"
    "            \"Done\":{}},"
    "  \"initial\":[\"Queued\"],"
    "  \"transitions\":{\"Queued\":[\"Running\"],\"Running\":[\"Running\",\"Done\",\"Queued\"],\"Done\":[]}},"
    " {\"feature\":\"Counter\",\"states\":{\"Idle\":{},\"Busy\":{\"fields\":{\"n\":{\"type\":\"integer\",\"default\":0}},"
    "  \"after\":[{\"ms\":10,\"submit\":[{\"kind\":\"transition\",\"feature\":\"Counter\",\"into\":\"Idle\"}]}]}},"
    "  \"bindings\":[{\"when\":\"TransitionInto<Counter.Busy>\","
    "              \"then\":{\"submit\":[{\"kind\":\"actualize\",\"feature\":\"Counter\",\"in\":\"Busy\",\"payload\":{\"n\":100}}]}}]}"
    "]}";

static const char *const afterwards[] = {
    "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"a\",\"into\":\"Queued\"}",
    "{\"kind\":\"transition\",\"feature\":\"Job\",\"key\":\"a\",\"into\":\"Running\",\"payload\":{\"progress\":1}}",
    "{\"kind\":\"initialize\",\"feature\":\"Job\",\"key\":\"b\",\"into\":\"Queued\"}",
    "{\"kind\":\"transition\",\"feature\":\"Job\",\"key\":\"b\",\"into\":\"Running\",\"payload\":{\"progress\":2}}",
    "{\"kind\":\"transition\",\"feature\":\"Job\",\"key\":\"b\",\"into\":\"Done\"}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Job\",\"key\":\"b\"}",
    "{\"kind\":\"initialize\",\"feature\":\"Counter\",\"into\":\"Idle\"}",
    "{\"kind\":\"transition\",\"feature\":\"Counter\",\"into\":\"Busy\",\"payload\":{\"n\":3}}",
    "{\"kind\":\"deinitialize\",\"feature\":\"Job\",\"key\":\"c\"}",
};

/* ---- what a node's record sink and subscriber keep ------------------------------ */

typedef struct node {
    uf_dispatcher *d;
    char *last[ALL];      /* the text of each partition's last record (own or applied) */
    char *written[MAX_RECORDS]; /* the records the sink accepted, while `writing` */
    int written_count;
    int writing;
    int mutations;        /* mutations subscribers were told of */
    int foreign;          /* ...of which foreign */
} node;

static uint32_t fnv1a32(const char *text) {
    uint32_t hash = 0x811c9dc5u;
    for (const unsigned char *p = (const unsigned char *)text; *p; ++p) {
        hash ^= *p;
        hash *= 0x01000193u;
    }
    return hash;
}

static char *copy(const char *text) {
    size_t n = strlen(text);
    char *s = (char *)malloc(n + 1);
    if (!s) abort();
    memcpy(s, text, n + 1);
    return s;
}

static void keep_last(node *n, uint32_t p, const char *text) {
    FUZZ_ASSERT(p < ALL, "a record of partition %u", p);
    free(n->last[p]);
    n->last[p] = copy(text);
}

static int sink(const uf_record *r, void *payload) {
    node *n = (node *)payload;
    const char *text = uf_record_json(r);
    uint32_t p = 0;
    uint64_t v = 0;
    FUZZ_ASSERT(uf_record_partition(r, &p) == UF_OK && uf_record_version(r, &v) == UF_OK && v >= 1,
                "the record's partition and version");
    json_t *record = fuzz_parse_json("uf_record_json", text);
    FUZZ_ASSERT(json_integer_value(json_object_get(record, "partition")) == (json_int_t)p &&
                    json_integer_value(json_object_get(record, "version")) == (json_int_t)v,
                "the record's JSON and its accessors differ: %u, %llu, %s", p, (unsigned long long)v, text);
    json_decref(record);
    FUZZ_ASSERT(strchr(text, '\n') == NULL, "a record with a raw newline: %s", text);
    keep_last(n, p, text);
    if (n->writing && n->written_count < MAX_RECORDS) n->written[n->written_count++] = copy(text);
    return UF_OK;
}

static int subscriber(const uf_mutation *m, void *payload) {
    node *n = (node *)payload;
    json_decref(fuzz_parse_json("uf_mutation_json", uf_mutation_json(m)));
    int foreign = uf_mutation_foreign(m);
    FUZZ_ASSERT(foreign == 0 || foreign == 1, "uf_mutation_foreign gave %d", foreign);
    ++n->mutations;
    n->foreign += foreign;
    return UF_KEEP;
}

static void make_node(node *n, const char *name) {
    memset(n, 0, sizeof *n);
    char options[96];
    snprintf(options, sizeof options, "{\"partitions\":%d,\"node\":\"%s\",\"clock\":\"manual\"}", PARTITIONS, name);
    n->d = fuzz_new_dispatcher(options);
    FUZZ_ASSERT(uf_register(n->d, definitions) == UF_OK, "the definitions: %s", uf_last_error());
    FUZZ_ASSERT(uf_record_sink(n->d, sink, n, NULL) == UF_OK, "uf_record_sink: %s", uf_last_error());
    FUZZ_ASSERT(uf_subscribe(n->d, NULL, subscriber, n, NULL, NULL) == UF_OK, "uf_subscribe: %s", uf_last_error());
}

static void free_node(node *n) {
    uf_dispatcher_free(n->d);
    for (int p = 0; p < ALL; ++p) free(n->last[p]);
    for (int i = 0; i < n->written_count; ++i) free(n->written[i]);
}

/* ---- uf_partitions_get, checked -------------------------------------------------- */

static char *partitions_text(node *n, const char *name, long long versions[ALL]) {
    char *text = NULL;
    int status = uf_partitions_get(n->d, &text);
    fuzz_check_status_partitioned("uf_partitions_get", status);
    FUZZ_ASSERT(status == UF_OK, "uf_partitions_get failed");
    json_t *list = fuzz_parse_json("uf_partitions_get", text);
    FUZZ_ASSERT(json_is_array(list) && json_array_size(list) == ALL, "uf_partitions_get: %s", text);
    for (size_t p = 0; p < ALL; ++p) {
        json_t *entry = json_array_get(list, p);
        json_t *owner = json_object_get(entry, "owner"), *mine = json_object_get(entry, "mine"),
               *version = json_object_get(entry, "version");
        FUZZ_ASSERT(json_integer_value(json_object_get(entry, "p")) == (json_int_t)p && json_is_integer(version) &&
                        json_integer_value(version) >= 0 && (json_is_null(owner) || json_is_string(owner)) &&
                        json_is_boolean(mine),
                    "uf_partitions_get entry %zu: %s", p, text);
        FUZZ_ASSERT(!json_is_true(mine) || (json_is_string(owner) && strcmp(json_string_value(owner), name) == 0),
                    "partition %zu is mine but its owner is not '%s': %s", p, name, text);
        versions[p] = json_integer_value(version);
    }
    json_decref(list);
    return text;
}

/* ---- bit 0: the record's "prev" chained to the last record of its partition ---- */

/* A copy of text with the value after "prev": replaced by the hash of the last
 * record of the partition after "partition":, or text itself when it has neither. */
static char *chained(node *n, const char *text) {
    const char *at = strstr(text, "\"partition\":");
    const char *prev = strstr(text, "\"prev\":");
    if (!at || !prev) return copy(text);
    char *end;
    long p = strtol(at + strlen("\"partition\":"), &end, 10);
    if (p < 0 || p >= ALL) return copy(text);
    const char *value = prev + strlen("\"prev\":");
    const char *after;
    if (strncmp(value, "null", 4) == 0) {
        after = value + 4;
    } else if (*value == '"') {
        after = strchr(value + 1, '"');
        if (!after) return copy(text);
        ++after;
    } else {
        return copy(text);
    }
    char hash[16];
    if (n->last[p]) snprintf(hash, sizeof hash, "\"%08x\"", fnv1a32(n->last[p]));
    else snprintf(hash, sizeof hash, "null");
    size_t head = (size_t)(value - text), tail = strlen(after);
    char *out = (char *)malloc(head + strlen(hash) + tail + 1);
    if (!out) abort();
    memcpy(out, text, head);
    memcpy(out + head, hash, strlen(hash));
    memcpy(out + head + strlen(hash), after, tail + 1);
    return out;
}

/* ---- one apply, checked ------------------------------------------------------------ */

/* Applies text on f; returns the partition whose version it moved, or -1, and
 * the status in *out. */
static int apply_checked(node *f, const char *text, int *out) {
    long long before[ALL], after[ALL];
    char *model_before = fuzz_state(f->d);
    char *partitions_before = partitions_text(f, "f", before);
    int mutations_before = f->mutations, foreign_before = f->foreign;

    int status = uf_record_apply(f->d, text);
    *out = status;
    fuzz_check_status_partitioned("uf_record_apply", status);
    /* UF_ENOTFOUND too, for a line naming an unknown feature or state (as
     * uf_replay_file answers), although the header says a malformed record is
     * UF_EJSON or UF_ESCHEMA. */
    FUZZ_ASSERT(status == UF_OK || status == UF_EJSON || status == UF_ESCHEMA || status == UF_EGAP ||
                    status == UF_ECONFLICT || (status == UF_ENOTFOUND && strstr(uf_last_error(), "unknown ")),
                "uf_record_apply returned %s", uf_status_name(status));

    char *model_after = fuzz_state(f->d);
    char *partitions_after = partitions_text(f, "f", after);
    int told = f->mutations - mutations_before;
    FUZZ_ASSERT(f->foreign - foreign_before == told, "%d of %d mutations of an applied record are not foreign",
                told - (f->foreign - foreign_before), told);
    int moved = -1;
    for (int p = 0; p < ALL; ++p) {
        FUZZ_ASSERT(after[p] >= before[p], "partition %d went back from version %lld to %lld", p, before[p], after[p]);
        if (after[p] != before[p]) {
            FUZZ_ASSERT(moved < 0, "one record moved partitions %d and %d", moved, p);
            FUZZ_ASSERT(after[p] == before[p] + 1, "partition %d went from version %lld to %lld", p, before[p], after[p]);
            moved = p;
        }
    }
    if (status != UF_OK) {
        FUZZ_ASSERT(strcmp(model_before, model_after) == 0, "a failed apply (%s) changed the model to %s",
                    uf_status_name(status), model_after);
        FUZZ_ASSERT(strcmp(partitions_before, partitions_after) == 0, "a failed apply (%s) changed the partitions to %s",
                    uf_status_name(status), partitions_after);
        FUZZ_ASSERT(told == 0, "a failed apply (%s) told subscribers of %d mutations", uf_status_name(status), told);
    } else if (moved < 0) {
        FUZZ_ASSERT(strcmp(model_before, model_after) == 0, "a duplicate record changed the model to %s", model_after);
        FUZZ_ASSERT(strcmp(partitions_before, partitions_after) == 0, "a duplicate record changed the partitions to %s",
                    partitions_after);
        FUZZ_ASSERT(told == 0, "a duplicate record told subscribers of %d mutations", told);
    } else {
        keep_last(f, (uint32_t)moved, text);
    }
    uf_free(model_before);
    uf_free(model_after);
    uf_free(partitions_before);
    uf_free(partitions_after);
    return moved;
}

/* ---- the input ------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    unsigned flags = data[0];
    char *input = fuzz_cstring(data + 1, size - 1);

    node f, g;
    make_node(&f, "f");
    make_node(&g, "g");
    /* Every record that moved a version on f, in order: g applies them all. */
    char *history[MAX_RECORDS];
    int history_count = 0;

    if (flags & 2) {
        f.writing = 1;
        int status = uf_partition_claim(f.d, (flags >> 4) % ALL);
        fuzz_check_status_partitioned("uf_partition_claim", status);
        FUZZ_ASSERT(status == UF_OK, "a claim with a sink that accepts everything failed");
        f.writing = 0;
    }
    /* The claim's record is history too. */
    for (int i = 0; i < f.written_count && history_count < MAX_RECORDS; ++i) history[history_count++] = copy(f.written[i]);

    int records = 0;
    for (char *line = input, *next; line && records < MAX_RECORDS; line = next, ++records) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *text = flags & 1 ? chained(&f, line) : copy(line);
        int status;
        if (apply_checked(&f, text, &status) >= 0 && history_count < MAX_RECORDS) history[history_count++] = copy(text);
        free(text);
    }

    if (flags & 4) {
        int first = f.written_count;
        f.writing = 1;
        for (uint32_t p = 0; p < ALL; ++p) {
            int status = uf_partition_claim(f.d, p);
            fuzz_check_status_partitioned("uf_partition_claim", status);
            FUZZ_ASSERT(status == UF_OK, "a claim with a sink that accepts everything failed");
        }
        for (size_t i = 0; i < sizeof afterwards / sizeof afterwards[0]; ++i) {
            int foreign_before = f.foreign;
            int status = uf_submit(f.d, afterwards[i]);
            fuzz_check_status_partitioned("uf_submit", status);
            FUZZ_ASSERT(status != UF_ENOTOWNER, "an action of a partition this node claimed: %s", uf_last_error());
            FUZZ_ASSERT(f.foreign == foreign_before, "a mutation this node made is foreign");
        }
        f.writing = 0;
        /* Its own records, read back from the log: duplicates. */
        for (int i = first; i < f.written_count; ++i) {
            int status;
            FUZZ_ASSERT(apply_checked(&f, f.written[i], &status) < 0 && status == UF_OK,
                        "an own record applied again is not a duplicate (%s)", uf_status_name(status));
            if (history_count < MAX_RECORDS) history[history_count++] = copy(f.written[i]);
        }
    }

    /* The replica. */
    if (history_count < MAX_RECORDS) {
        for (int i = 0; i < history_count; ++i) {
            int status = uf_record_apply(g.d, history[i]);
            fuzz_check_status_partitioned("uf_record_apply", status);
            FUZZ_ASSERT(status == UF_OK, "a record node f applied (history[%d]) is refused by node g: %s\n    %.500s", i,
                        uf_last_error(), history[i]);
        }
        long long fv[ALL], gv[ALL];
        char *fp = partitions_text(&f, "f", fv), *gp = partitions_text(&g, "g", gv);
        for (int p = 0; p < ALL; ++p)
            FUZZ_ASSERT(fv[p] == gv[p], "partition %d: version %lld on f, %lld on its replica", p, fv[p], gv[p]);
        char *fm = fuzz_state(f.d), *gm = fuzz_state(g.d);
        FUZZ_ASSERT(strcmp(fm, gm) == 0, "the replica's model differs:\n    f: %s\n    g: %s", fm, gm);
        FUZZ_ASSERT(g.foreign == g.mutations, "a mutation the replica applied is not foreign");
        uf_free(fp);
        uf_free(gp);
        uf_free(fm);
        uf_free(gm);
    }

    for (int i = 0; i < history_count; ++i) free(history[i]);
    free_node(&f);
    free_node(&g);
    free(input);
    return 0;
}
