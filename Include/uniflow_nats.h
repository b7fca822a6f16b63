/*
 * uniflow_nats.h — libuniflow_nats: one partitioned model shared by several
 * processes through NATS JetStream (docs/scale-out.md, "The NATS JetStream
 * adapter").
 *
 * A *node* joins a partitioned dispatcher (uf_dispatcher_new with "partitions"
 * and "node", uniflow.h "Partitions") to a JetStream server: it installs the
 * dispatcher's record sink, publishes every record the dispatcher writes, applies
 * every record the other nodes write, holds leases on the partitions it owns, and
 * routes actions to their owners. The core knows nothing of NATS; this library
 * only moves records, and relies on JetStream for everything that must hold across
 * processes:
 *
 *   the stream UF_<model>         (file storage) over the subjects
 *       uf.<model>.p.<p>           the records of partition p, in version order;
 *                                  header Nats-Msg-Id:
 *                                  <incarnation>:<p>:<version>:<fnv1a32 of the bytes>
 *       uf.<model>.s.<p>           snapshots of partition p (header Uf-Record-Seq:
 *                                  the stream sequence of the last record included,
 *                                  Uf-Version: its version; big ones in chunks,
 *                                  headers Uf-Chunk: i/n and Uf-First: <sequence of
 *                                  chunk 1>; Uf-Prev-Complete: the last chunk of the
 *                                  complete snapshot before, for a reader that finds
 *                                  a half-written one)
 *   the KV bucket UF_<model>_owners  one key per partition (p<number>, the global
 *                                  partition included), TTL lease_ms: the lease
 *   the subject ufrpc.<model>.<node> requests to run an action at its owner
 *                                  (not captured by any stream)
 *
 * The fence is JetStream's compare-and-swap: every record is published with the
 * expected last sequence of its subject (the stream sequence of the partition's
 * last record this node applied; "no message at all" before the first), so that a
 * record that does not follow the log's last one is refused, whoever sent it.
 * A lease only says who should write; the sequence decides who can.
 *
 * Conventions (as in uniflow.h)
 *   - Every int function returns UF_OK or a negative status of uniflow.h.
 *   - A failing uf_nats_* call sets this thread's uf_nats_last_status() and
 *     uf_nats_last_error(); when the failure came from the core, the message is the
 *     core's (uf_last_error()), often with what the server said after it. The
 *     core's own uf_last_error() is not changed by this library (it cannot be).
 *   - Strings returned as `char *` are freed with uf_free() (uniflow.h).
 *   - Options are one JSON object; an unknown option or a bad value is UF_EINVAL.
 *
 * Threads
 *   A started node runs two threads of its own: the *apply* thread, which applies
 *   the records the stream delivers (an ordered push consumer; subscribers and
 *   watches of records written elsewhere are called on it), and the *lease*
 *   thread, which renews and wins leases, claims partitions, resolves partitions
 *   whose last publish had no answer, and publishes snapshots. Requests from other
 *   nodes run on libnats' thread for that subscription. Every function here may be
 *   called from any thread. Inside a callback of the dispatcher, uf_nats_submit
 *   of an action this node owns queues it as uf_submit does; uf_nats_sync there
 *   cannot finish (the apply thread waits for the dispatcher the callback holds)
 *   and ends with UF_EUNAVAILABLE after its timeout; uf_nats_node_free must not
 *   be called there.
 *
 * What a caller sees (statuses of uniflow.h):
 *   UF_ENOTOWNER     the action's partition has no owner that answered in time,
 *                    or this node's lease on it is stale (renewed more than two
 *                    thirds of lease_ms ago)
 *   UF_ECONFLICT     the server refused a record: another record of the partition
 *                    got there first (JetStream error 10071, "wrong last
 *                    sequence"). The node then applies what is new; call again.
 *   UF_EUNAVAILABLE  the server did not answer within timeout_ms: the outcome is
 *                    unknown. That partition takes no more records until the
 *                    node has read the subject's last sequence from the server
 *                    and applied everything up to it; until then its actions
 *                    return UF_EUNAVAILABLE at once. A request routed to another
 *                    node that got no answer in time is UF_EUNAVAILABLE too, and
 *                    is never sent again (the action may have run).
 */
#ifndef UNIFLOW_NATS_H
#define UNIFLOW_NATS_H

#include "uniflow.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uf_nats_node uf_nats_node;

/* Makes a node for the partitioned dispatcher d (not yet connected: see
 * uf_nats_node_start). options_json (NULL: all defaults) is an object of:
 *   "url"             server URL, default "nats://127.0.0.1:4222" (a comma
 *                     separated list of URLs is passed to libnats as is)
 *   "model"           the model's name ([A-Za-z_][A-Za-z0-9_]*, at most 64
 *                     bytes), required: every node of one model uses the same
 *   "owns"            "any" (default: claim every partition whose lease nobody
 *                     holds), "none" (a follower that only applies records), or an
 *                     array of partition numbers and/or "global" (partition N)
 *   "max_owned"       at most this many partitions held at once (>= 0; default
 *                     unlimited)
 *   "lease_ms"        the lease's TTL, default 3000 (>= 300); renewed every third
 *   "timeout_ms"      how long a publish, a request or a read may take before its
 *                     outcome counts as unknown, default 2000 (>= 50)
 *   "replicas"        the stream's and bucket's replicas when this node creates
 *                     them, default 1 (1-5). Above 1, the server must be 2.10.19
 *                     or later: older servers do not keep the compare-and-swap of
 *                     a replicated stream safe, and start refuses them (UF_EINVAL)
 *   "snapshot_every"  the owner publishes a snapshot of a partition after this
 *                     many records of it (default 1000; 0: never), then purges the
 *                     records the snapshot and the global bindings no longer need
 * d must be partitioned (UF_EMISUSE otherwise) and must outlive the node; the
 * node installs d's record sink (replacing any other). The core has no getter
 * for a dispatcher's node name and incarnation, which the lease and the
 * request subject need: uf_nats_node_new learns them from a claim of partition
 * 0 that its own sink refuses (a refused claim changes nothing). An "owns"
 * number above N is UF_EINVAL. *n is NULL on failure. */
int uf_nats_node_new(uf_nats_node **n, uf_dispatcher *d, const char *options_json);

/* Connects, creates the stream and the bucket when missing (an existing stream
 * is used as it is), subscribes to the node's request subject, catches up (each
 * partition's last complete snapshot, then the records after it, until nothing is
 * pending), starts the two threads, and returns; the lease thread then claims
 * what "owns" allows. UF_EUNAVAILABLE when the server cannot be reached or
 * JetStream does not answer within timeout_ms (the message says which);
 * UF_EINVAL for replicas > 1 on a server older than 2.10.19; UF_EMISUSE when
 * already started. On failure the node may be started again or freed. */
int uf_nats_node_start(uf_nats_node *n);

/* Runs one action (the JSON of uf_submit) where it may run: here when this node
 * owns the action's partition and its lease is fresh, else by a request to the
 * owner this node knows, which runs it (its precondition checked there) and
 * answers its status and message. An owner that answers UF_ENOTOWNER (it lost
 * the partition) is asked again once this node knows a newer owner, within
 * timeout_ms; a partition with no owner is UF_ENOTOWNER after timeout_ms; a
 * request without answer within timeout_ms is UF_EUNAVAILABLE and is not sent
 * again. Statuses as uf_submit, plus those above. An action whose partition
 * cannot be known (bad JSON, unknown feature) runs locally, so that the core
 * reports what is wrong. */
int uf_nats_submit(uf_nats_node *n, const char *action_json);

/* Waits until this node has applied every record the stream held when it was
 * called: the last record of any partition, as the stream's leader tells it
 * (timeout_ms > 0: at most that long, <= 0: the node's timeout_ms; then
 * UF_EUNAVAILABLE). A partition blocked by an unknown outcome is waited for
 * too. A record that another node writes later because of these (the global
 * partition's bindings run at its owner) may still be on its way: sync again
 * to converge. UF_EMISUSE when not started. */
int uf_nats_sync(uf_nats_node *n, int timeout_ms);

/* The node as JSON: {"node": NAME, "model": M, "connected": bool, "owned": [p,
 * ...] (leased, claimed and fresh), "partitions": <uf_partitions_get>, "blocked":
 * [p, ...] (waiting for an unknown outcome), "lag": <records in the stream not
 * applied here yet, as the consumer counts them; 0 when caught up>,
 * "apply_errors": <records the apply thread could not apply>, "last_apply_error":
 * "<its status and message>" | null}. Records that cannot be applied (a message
 * on a record subject that is no record of this model, a history that diverged)
 * are only reported here: no caller waits for them. *json is freed with uf_free. */
int uf_nats_node_status(uf_nats_node *n, char **json);

/* Stops the node: releases every partition it owns (a release record each, its
 * lease deleted by compare-and-swap so that another node may claim at once),
 * stops its threads and subscriptions, removes the record sink, disconnects and
 * frees. The dispatcher is left as it is (owning nothing). NULL: no-op. Must not
 * be called from a callback of the dispatcher. */
void uf_nats_node_free(uf_nats_node *n);

/* The status of the last failing uf_nats_* call on this thread; 0 before any. */
int uf_nats_last_status(void);

/* The message of the last failing uf_nats_* call on this thread, never NULL (""
 * before any failure). Valid until the next failing uf_nats_* call on this
 * thread. */
const char *uf_nats_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIFLOW_NATS_H */
