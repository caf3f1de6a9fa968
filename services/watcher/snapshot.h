/* snapshot.h - copies of the cache as the messages the watcher sends.
 *
 * A snapshot is a ClusterState (nodes with their bound pods, NodeClaims,
 * NodePools, NodeClasses, PDBs, DaemonSets) plus, when asked, the pending
 * pods, wrapped as a PendingBatch (the "pending" topic) or a
 * SnapshotResponse (REP).  Bound pods are attached to their node and
 * summed into the node's `requested` (terminal pods excluded); every pod
 * gets pdb_names, the PDBs in its namespace whose selector matches its
 * labels.  A pod whose node is not cached (yet) is left out.
 *
 * Bound pods are attached in WIRE form: the cache's packed bytes ride as
 * unknown fields of the Node carrying Node.pods' tag, which protobuf-c
 * packs verbatim, so a receiver unpacks them as ordinary Node.pods while
 * the sender never holds 100k unpacked pods.  In-process, Node.pods is
 * therefore empty: pack and unpack the message to read the pods.
 *
 * By reference (ClusterState.by_ref, proto/tailor/v1/cluster.proto): the
 * Nodes and NodeClaims are left out of cs->nodes/nodeclaims and sent as a
 * ClusterRef delta from a base generation of this watcher epoch: the Nodes
 * whose content (the Node, its pods, requested, pdb_names) may have
 * changed since and the NodeClaims that did, whole and sorted by name,
 * and the names removed since and not held now.  Base 0 (no base, or one
 * whose changes the cache no longer knows - cache.h) carries everything.
 * When nothing changed since the base the delta would be empty, and a
 * receiver refuses a delta whose base is its own state, so has_delta is
 * false instead: "you hold this state".  Everything else (generation,
 * epoch, synced, taken, NodePools, NodeClasses, PDBs, DaemonSets) stays
 * inline.
 *
 * Memory: everything built lives in the snapshot's arena; messages that
 * are cached whole (nodeclaims, nodepools, pending pods' nested parts)
 * are BORROWED from the cache.  So a snapshot is valid only until the
 * cache next changes - build it, send it, free it, on the loop thread.
 */
#ifndef WATCHER_SNAPSHOT_H
#define WATCHER_SNAPSHOT_H

#include <stdint.h>

#include "batcher.h"
#include "cache.h"
#include "tailor/v1/watcher.pb-c.h"

typedef struct watcher_snapshot watcher_snapshot;

/* The answer to req (borrowed).  now_ms: Unix ms put in taken_unix_ms.
 * With req->by_reference, nodes and NodeClaims go by reference (req->kinds
 * is then ignored: everything): a delta from req->delta_base_generation
 * when it is non-zero, of this epoch (req->watcher_epoch_unix_ms) and
 * still computable, else the whole state (base 0).  Without it they are
 * inline, as always.  *out is new and owned: watcher_snapshot_free(); see
 * the validity rule above. */
void watcher_snapshot_for_request(const watcher_cache *c, const Tailor__V1__SnapshotRequest *req,
                                  int64_t now_ms, watcher_snapshot **out);

/* A PendingBatch over window w (borrowed): every pending pod and the
 * cluster state by reference, as a delta from base_generation (of this
 * epoch; 0, or one no longer computable: the whole state);
 * batch_id "<epoch>-<sequence>". */
void watcher_snapshot_for_batch(const watcher_cache *c, const watcher_batch_window *w,
                                uint64_t sequence, uint64_t base_generation, int64_t now_ms,
                                watcher_snapshot **out);

/* Borrowed from s: the SnapshotResponse (for_request) or the PendingBatch
 * (for_batch); NULL for the other kind of snapshot. */
Tailor__V1__SnapshotResponse *watcher_snapshot_response(watcher_snapshot *s);
Tailor__V1__PendingBatch *watcher_snapshot_batch(watcher_snapshot *s);

void watcher_snapshot_free(watcher_snapshot *s);    /* NULL is fine */

#endif
