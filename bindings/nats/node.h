/* node.h — what the files of libuniflow_nats share (not installed).
 *
 *   error.c      the thread's last status and message (uf_nats_last_*)
 *   options.c    the options object of uf_nats_node_new
 *   server.c     connecting, the server's version, the stream and the bucket
 *   log_state.c  what the node knows of each partition's subject in the stream
 *   publish.c    the record sink: compare-and-swap publish, retries, blocking
 *   lease.c      leases in the KV bucket: win, renew, lose, release
 *   snapshot.c   reading snapshots at catch-up, publishing them, purging
 *   apply.c      the ordered consumer and the apply thread; uf_nats_sync
 *   route.c      uf_nats_submit and the request subject's handler
 *   node.c       new, start, status, free, and the lease thread
 */
#ifndef UNIFLOW_NATS_NODE_H
#define UNIFLOW_NATS_NODE_H

#include <nats/nats.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "uniflow_nats.h"

#define UFN_NAME_MAX 64
/* How many (version, sequence) pairs of a partition's recent records are kept:
 * a record is published expecting the sequence of the version before it, which
 * is almost always the last or the one before. */
#define UFN_RING 64

/* --- error.c ---------------------------------------------------------------- */

/* Sets this thread's last status and message; returns status. */
int ufn_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The core's last failure (uf_last_status/uf_last_error) as this library's;
 * returns status. */
int ufn_fail_core(int status);
/* ufn_fail_core with text appended to the core's message. */
int ufn_fail_core_detail(int status, const char *detail);
/* What libnats said last on this thread (nats_GetLastError), for messages. */
const char *ufn_nats_text(natsStatus s);
/* The sink's reason for its last refusal on this thread; taking it clears it. */
void ufn_set_sink_detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *ufn_take_sink_detail(void);

/* --- options.c -------------------------------------------------------------- */

typedef enum { UFN_OWNS_ANY, UFN_OWNS_NONE, UFN_OWNS_LIST } ufn_owns_mode;

typedef struct ufn_options {
    char *url;
    char model[UFN_NAME_MAX + 1];
    ufn_owns_mode owns;
    /* With UFN_OWNS_LIST: the partitions named (numbers, -1 for "global"). */
    int64_t *owns_list;
    int owns_count;
    int64_t max_owned;          /* -1: unlimited */
    int64_t lease_ms;
    int64_t timeout_ms;
    int64_t replicas;
    int64_t snapshot_every;
} ufn_options;

int ufn_options_parse(ufn_options *o, const char *json);
void ufn_options_free(ufn_options *o);
/* Whether the options let this node claim p (of partitions+1, global = N). */
bool ufn_options_wants(const ufn_options *o, uint32_t p, uint32_t global);

/* --- log_state.c: one partition as the node knows it -------------------------- */

typedef struct ufn_partition {
    /* Recent records of the subject: version -> stream sequence, facts read from
     * the log (or from an acknowledgement), whether applied yet or not. */
    struct { uint64_t version, seq; } ring[UFN_RING];
    uint64_t applied_seq;         /* the highest sequence of p applied here */
    /* The lease (lease.c). */
    bool leased;                  /* this node created or renewed the key */
    uint64_t lease_rev;
    int64_t renewed_ms;           /* when the last successful renewal was SENT */
    bool claimed;                 /* claim record accepted since the lease was won */
    /* An unknown outcome (publish.c): nothing is published to p until the
     * server's last sequence of p is known and applied. */
    bool blocked;
    uint64_t blocked_until_seq;   /* known last sequence to reach; 0: not read yet */
    bool blocked_read;            /* blocked_until_seq has been read */
    int64_t blocked_next_read_ms;
    /* Snapshots (snapshot.c). */
    uint64_t snap_last_seq;       /* the snapshot subject's last message; 0: none */
    uint64_t snap_complete_end;   /* its last complete snapshot's last chunk */
    uint64_t records_since_snapshot;
    /* The global partition's committed after[p] (p < N); after_known false
     * while no global record named p. */
    uint64_t after;
    bool after_known;
} ufn_partition;

/* --- the node ------------------------------------------------------------------ */

struct uf_nats_node {
    uf_dispatcher *d;
    ufn_options opt;
    uint32_t global;              /* N: the number of partitions, and the global one */
    char name[UFN_NAME_MAX + 1];
    char incarnation[17];
    char stream[UFN_NAME_MAX + 8];
    char bucket[UFN_NAME_MAX + 16];
    char rpc_subject[2 * UFN_NAME_MAX + 16];

    natsConnection *nc;
    jsCtx *js;
    kvStore *kv;
    natsSubscription *records;    /* ordered consumer of uf.<model>.p.> (the apply thread's) */
    natsSubscription *rpc;

    pthread_mutex_t mu;           /* guards parts, applied_through, flags below */
    pthread_cond_t changed;       /* applied_through moved, or a flag changed */
    /* The lease thread's own: stopping, a partition blocked, a snapshot due.
     * Not `changed`, which moves with every record: waking the lease thread
     * for each one made it read the dispatcher's partitions (waiting for the
     * dispatcher, held by the next write) on every write. */
    pthread_cond_t lease_wake;
    ufn_partition *parts;         /* global + 1 */
    uint64_t applied_through;     /* the last stream sequence the apply thread handled */
    uint64_t consumer_pending;    /* what the consumer said was left after it */
    bool resubscribe;             /* set on reconnection: the apply thread makes a new consumer */
    bool started, sink_installed;
    /* Read by the threads without mu: a C11 atomic. */
    _Atomic bool stopping;
    bool apply_running, lease_running;
    pthread_t apply_thread, lease_thread;
    /* Set by the lease thread around the claims and releases it writes: such
     * records pass the sink's lease check (the key was just won, or is let go). */
    bool writing_ownership;
    uint32_t ownership_p;
    /* The record the sink is publishing (one at a time: the sink runs with the
     * dispatcher held). Its echo usually reaches the apply thread before its
     * acknowledgement reaches the sink; the apply thread then keeps it aside
     * (`parked`) until the outcome is known, rather than queue for the
     * dispatcher to hear "duplicate". */
    bool publishing;
    uint32_t publishing_p;
    uint64_t publishing_v;
    /* When the sink last sent a record: while this node writes, the apply
     * thread reads the log every UFN_APPLY_POLL_MS instead of waking for each
     * echo of its own records (apply.c). */
    int64_t last_write_ms;
    /* That echo, kept by the apply thread (and touched by it alone) until the
     * sink's outcome is known: dropped when the record was accepted, applied
     * when the publish failed but the server had stored it. */
    struct {
        natsMsg *m;
        uint32_t p;
        uint64_t seq, version, pending;
        int64_t until_ms;         /* the outcome comes before: the sink's timeout */
    } parked;
    /* Threads waiting on `changed` for that outcome: the sink wakes them only
     * when there are some (a wake-up is a system call on every write). */
    int outcome_waiters;
    /* While start probes the dispatcher for its node name and incarnation. */
    bool probing;
    /* Records the apply thread could not apply (status JSON). */
    uint64_t apply_errors;
    char last_apply_error[768];
};

/* Milliseconds of a monotonic clock. */
int64_t ufn_now_ms(void);
/* Wakes the lease thread before its tick. Call with mu held. */
void ufn_wake_lease(uf_nats_node *n);
/* Whether p's lease counts as this node's: won, claimed and renewed within two
 * thirds of the lease. Call with mu held. */
bool ufn_lease_fresh(const uf_nats_node *n, uint32_t p, int64_t now);

/* log_state.c (mu held by the caller) */
void ufn_note_seq(uf_nats_node *n, uint32_t p, uint64_t version, uint64_t seq);
bool ufn_seq_of(const uf_nats_node *n, uint32_t p, uint64_t version, uint64_t *seq);
void ufn_note_applied(uf_nats_node *n, uint32_t p, uint64_t seq);
/* Parses "<incarnation>:<p>:<version>:<hash>" (a Nats-Msg-Id). */
bool ufn_parse_msg_id(const char *id, uint32_t *p, uint64_t *version);
/* The global record's "after" object into parts[q].after (mu NOT held: parses
 * first, then takes mu). */
void ufn_note_after(uf_nats_node *n, const char *global_record_json);
/* The subject of partition p's records / snapshots. */
void ufn_record_subject(const uf_nats_node *n, uint32_t p, char *buf, size_t size);
void ufn_snapshot_subject(const uf_nats_node *n, uint32_t p, char *buf, size_t size);
uint32_t ufn_fnv1a32(const char *bytes, size_t len);

/* server.c */
int ufn_connect(uf_nats_node *n);
int ufn_check_server_version(uf_nats_node *n);
int ufn_ensure_stream(uf_nats_node *n);
int ufn_ensure_bucket(uf_nats_node *n);

/* publish.c */
int ufn_record_sink(const uf_record *r, void *payload);
/* Reads p's last sequence from the server and unblocks p once applied up to it
 * (lease thread). */
void ufn_resolve_blocked(uf_nats_node *n, uint32_t p);

/* lease.c (lease thread) */
void ufn_leases_tick(uf_nats_node *n);
void ufn_leases_release_all(uf_nats_node *n);

/* snapshot.c */
int ufn_load_snapshots(uf_nats_node *n);
int ufn_load_snapshot(uf_nats_node *n, uint32_t p);
void ufn_snapshots_tick(uf_nats_node *n);

/* apply.c */
int ufn_subscribe_records(uf_nats_node *n);
void *ufn_apply_main(void *arg);
/* Waits until everything the consumer had pending when called is applied. */
int ufn_wait_applied(uf_nats_node *n, int64_t deadline_ms, bool quiet);
uint64_t ufn_lag(uf_nats_node *n);

/* route.c */
int ufn_subscribe_requests(uf_nats_node *n);

/* action_header.c: the action's top-level "feature" and "key" strings (key
 * only when *has_key), read without parsing the rest; false when it cannot be
 * sure of them, and the caller parses the action itself. */
#define UFN_HEADER_MAX 512
bool ufn_action_header(const char *action, char *feature, size_t feature_size, char *key, size_t key_size,
                       bool *has_key);

#endif
