/* cache.h - the watcher's compact cache of the cluster.
 *
 * One table per kind the autoscaler reads (Pods, Nodes, NodeClaims,
 * NodePools, EC2NodeClasses, PodDisruptionBudgets, DaemonSets), keyed by
 * "namespace/name" (or "name" for cluster-scoped kinds), fed the
 * informers' events on the loop thread.  Objects are converted once, on
 * arrival, to tailor.v1 messages (common/kubeobj); the JSON is not kept.
 *
 * Pods dominate memory (100k pods, a few hundred nodes), so a pod bound
 * to a node is kept as the packed bytes of its compact form (pod.proto):
 * a few hundred bytes instead of a tree of small mallocs, stored with its
 * varint length in front so a snapshot can send it as is.  Unbound pods
 * are few and are kept in full form, as messages, because pending pods
 * go to the solver whole.  Whether a pod is pending (pending.h) is decided
 * when it arrives and tracked here, so the pending set is always at hand.
 *
 * Relists: between RELIST_START and RELIST_DONE of a kind every object
 * that still exists is seen once more; RELIST_DONE drops those that were
 * not (deleted while nobody watched) and marks the kind synced.
 *
 * Every applied change bumps the generation; the epoch (the watcher's
 * start time) and the generation together name one exact state.
 *
 * What changed since a generation (ClusterState.by_ref deltas, see
 * snapshot.h): Nodes and NodeClaims go by reference, so the cache tracks
 * for them what a delta from generation G must carry.
 *   - A Node's content in a snapshot is the Node, its bound pods and what
 *     is summed or derived from them.  A table indexed by the FNV-1a hash
 *     of a node name keeps the generation that last "touched" that name:
 *     the Node itself changing, or a pod bound to it (before or after the
 *     change) being added, changed or removed.  Each bound pod keeps the
 *     hash of its node's name, so this costs no unpacking.  Hash
 *     collisions only make a delta larger, never wrong.
 *   - Each entry keeps the generation of its last change.  An update
 *     whose converted form is byte-for-byte the one held (a relist
 *     re-sending everything) is not a change for this purpose.
 *   - Removed Nodes and NodeClaims leave a tombstone (kind, name,
 *     generation) in a bounded list; when it overflows the oldest goes and
 *     the "delta horizon" rises past it: no delta from before it.
 *   - PDBs change pods' pdb_names on any node: a PDB change makes every
 *     earlier generation unusable as a base (the delta must be whole).
 */
#ifndef WATCHER_CACHE_H
#define WATCHER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tailor/v1/watcher.pb-c.h"
#include "tlr_kube.h"
#include "tlr_log.h"

/* The kinds cached, as numbered by tailor.v1.ClusterKind. */
#define WATCHER_KIND_FIRST TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD
#define WATCHER_KIND_LAST TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_DAEMONSET
#define WATCHER_NKINDS (WATCHER_KIND_LAST + 1)

/* "pods", "nodes", "nodeclaims", "nodepools", "ec2nodeclasses",
 * "poddisruptionbudgets", "daemonsets"; "?" for anything else. */
const char *watcher_kind_name(Tailor__V1__ClusterKind kind);
/* The API resource watched for kind (zero-filled for anything else). */
tlr_kube_res watcher_kind_res(Tailor__V1__ClusterKind kind);

typedef struct watcher_cache watcher_cache;

typedef struct watcher_cache_opts {
    tlr_logger *log;           /* borrowed; NULL: bad objects are not logged */
    int64_t epoch_ms;          /* the watcher's start, Unix ms */
    /* borrowed; outlives the cache.  NULL: warnings and bad objects are
     * only logged; else they are said through it (report.h). */
    struct watcher_report *report;
    /* Removed Nodes and NodeClaims remembered for deltas (0: 16384). */
    size_t max_tombstones;
} watcher_cache_opts;

/* o is borrowed.  *out is new and owned: watcher_cache_free() it. */
void watcher_cache_create(const watcher_cache_opts *o, watcher_cache **out);
void watcher_cache_free(watcher_cache *c);          /* NULL is fine */

/* Apply one informer event for kind.  obj is borrowed (NULL for RELIST_*).
 * When the cache changed, chg (caller's storage) is filled for the
 * "cluster" topic - its strings are borrowed from obj, valid as long as
 * obj - and chg->type is not UNSPECIFIED (RELIST_DONE fills one
 * RESYNCED change; a caller that announces changes may skip the ones
 * between RELIST_START and RELIST_DONE and send only that).  *became_pending is
 * set when a pod entered the pending set.  TLR_E_PARSE (logged, naming the
 * object; the cache keeps the previous version) when obj does not
 * convert; TLR_E_INVAL for a kind not cached. */
int  watcher_cache_apply(watcher_cache *c, Tailor__V1__ClusterKind kind,
                         tlr_kube_event_type type, json_object *obj,
                         Tailor__V1__ClusterChange *chg, bool *became_pending);

/* Objects of kind held; pods in the pending set. */
size_t watcher_cache_count(const watcher_cache *c, Tailor__V1__ClusterKind kind);
size_t watcher_cache_pending(const watcher_cache *c);
uint64_t watcher_cache_generation(const watcher_cache *c);
int64_t watcher_cache_epoch(const watcher_cache *c);

/* True once kind's first RELIST_DONE was applied. */
bool watcher_cache_synced(const watcher_cache *c, Tailor__V1__ClusterKind kind);
/* True when every kind is synced; otherwise writes the kinds that are not
 * ("pods, nodes") to buf (len bytes, NUL-terminated; buf may be NULL). */
bool watcher_cache_all_synced(const watcher_cache *c, char *buf, size_t len);

/* One cached object, borrowed for the visit. */
typedef struct watcher_cache_item {
    const char *key;                /* "namespace/name" or "name" */
    const ProtobufCMessage *msg;    /* the message; NULL for a bound pod */
    const uint8_t *packed;          /* bound pod: its compact form, packed */
    size_t packed_len;
    /* The same bytes preceded by their length as a varint: a
     * length-delimited field's payload, ready to go on the wire. */
    const uint8_t *framed;
    size_t framed_len;
    bool pending;
    uint64_t changed;               /* generation of its last change */
    /* Node: watcher_cache_name_hash() of its name; bound pod: of its
     * node's name; 0 otherwise. */
    uint32_t node_hash;
} watcher_cache_item;

typedef void (*watcher_cache_visit_fn)(void *arg, const watcher_cache_item *it);

/* Call fn for every object of kind, in no particular order.  The cache
 * must not be changed from fn. */
void watcher_cache_visit(const watcher_cache *c, Tailor__V1__ClusterKind kind,
                         watcher_cache_visit_fn fn, void *arg);

/* Is key held for kind? */
bool watcher_cache_has(const watcher_cache *c, Tailor__V1__ClusterKind kind, const char *key);

/* ---- what changed since a generation (deltas) ---- */

/* The hash watcher_cache_item.node_hash holds (FNV-1a). */
uint32_t watcher_cache_name_hash(const char *name);

/* The last generation that changed the content of a Node whose name
 * hashes to node_hash (the Node, or a pod bound to it): an upper bound,
 * shared with the names that collide with it; 0 = never. */
uint64_t watcher_cache_node_touched(const watcher_cache *c, uint32_t node_hash);
/* Whether Node name's content may have changed after generation since. */
bool watcher_cache_node_changed_since(const watcher_cache *c, const char *name, uint64_t since);

/* Whether a delta from generation since (of this epoch) to now can be
 * computed: since is not 0, not after now, not before the delta horizon
 * (tombstones dropped) and not before the last change that altered every
 * Node's content (a PDB). */
bool watcher_cache_delta_computable(const watcher_cache *c, uint64_t since);

/* Call fn for every Node and NodeClaim removed after generation since
 * (oldest first; a name removed, re-added and removed again comes more
 * than once; it may be held again now).  name is borrowed for the call.
 * Only meaningful when watcher_cache_delta_computable(c, since). */
typedef void (*watcher_cache_removed_fn)(void *arg, Tailor__V1__ClusterKind kind, const char *name,
                                         uint64_t generation);
void watcher_cache_visit_removed(const watcher_cache *c, uint64_t since,
                                 watcher_cache_removed_fn fn, void *arg);

#endif
