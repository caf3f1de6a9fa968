/* tlr_cstate.h - cluster states by reference: both ends of
 * ClusterState.by_ref (proto/tailor/v1/cluster.proto, docs/contracts.md
 * "Cluster state by reference").
 *
 * The Nodes (with their bound pods) and NodeClaims of a cluster grow with
 * the cluster; a batch of 50 pending pods in a 100,000-pod cluster should
 * not carry them.  A store keeps the last few states it has seen, each
 * named by (watcher epoch, generation) and holding those two kinds sorted
 * by name, so a message can name a state, or describe it as a delta from
 * one the receiver holds, instead of carrying it.
 *
 * States share what did not change: an entry (one Node or NodeClaim
 * message) is reference-counted, and a state built from a delta that
 * changed 50 of 5,000 nodes has 50 new entries and 4,950 of its base's.
 * Between two held states an entry is therefore unchanged exactly when it
 * is the same pointer, which is how tlr_cstate_delta() finds a delta
 * without comparing messages.
 *
 * Receiving end (the solver; the launcher for the watcher's batches):
 * tlr_cstate_resolve(); a delta may name several bases it applies to
 * (also_applies_to), and the first one held is used.  Sending end (the launcher to the solvers):
 * tlr_cstate_delta().  A store is thread-safe.  A view pins its state, so
 * eviction never frees entries a solve is still reading; free every view
 * before its store.
 */
#ifndef TLR_CSTATE_H
#define TLR_CSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/cluster.pb-c.h"

typedef struct tlr_cstate tlr_cstate;
typedef struct tlr_cstate_view tlr_cstate_view;

/* max_states: states kept (least recently used go first); 0 = 4.  *out is
 * new and owned: tlr_cstate_free(). */
void tlr_cstate_create(size_t max_states, tlr_cstate **out);
void tlr_cstate_free(tlr_cstate *c);        /* NULL is fine; views first */

/* Resolve cs, a ClusterState as received with by_ref set, into a view of
 * the whole state: the referenced Nodes, and the referenced NodeClaims
 * with cs->nodeclaims replacing (by name) or adding to them.
 *
 * When the store holds (cs->watcher_epoch_unix_ms, cs->generation) it is
 * used and by_ref's delta, if any, ignored.  Otherwise the delta is
 * applied to its base (base_generation 0: to the empty state) and the
 * result stored.  The delta's messages are MOVED into the store: cs->by_ref
 * is left with empty node and nodeclaim lists (cs stays freeable with
 * free_unpacked; it must have been unpacked with malloc-compatible
 * allocation, as every tailor decoder does).
 *
 * TLR_OK: *out is new and owned (tlr_cstate_view_free()); it borrows
 * cs->nodeclaims and cs's other fields, so free it before cs.
 * TLR_E_NOTFOUND: neither the state nor the delta's base is held.
 * TLR_E_INVAL: no by_ref, generation 0, a base not older than the state,
 * a nameless or duplicated object, a name both changed and removed.
 * err (len bytes) says why on failure. */
int tlr_cstate_resolve(tlr_cstate *c, Tailor__V1__ClusterState *cs, tlr_cstate_view **out,
                       char *err, size_t len);

/* The whole state: a shallow copy of the resolved ClusterState with nodes
 * and nodeclaims filled (sorted by name) and by_ref NULL.  Borrowed from
 * v; valid until tlr_cstate_view_free(v). */
const Tailor__V1__ClusterState *tlr_cstate_view_state(const tlr_cstate_view *v);
void tlr_cstate_view_free(tlr_cstate_view *v);   /* NULL is fine */

/* The generations of epoch held, newest first: up to max written to out;
 * returns how many are held. */
size_t tlr_cstate_held(tlr_cstate *c, int64_t epoch, uint64_t *out, size_t max);

/* Fill ref (initialised by the caller) so that it takes a receiver from
 * any of the states (v's epoch, bases[i]) to v's state: has_delta,
 * base_generation (the first base held), also_applies_to (the others) and
 * the Nodes and NodeClaims that differ from any of them.  Bases that are
 * 0, not older than v's state or no longer held are left out; with none
 * left the delta is from the empty state (base_generation 0): the whole
 * state.
 * The messages are borrowed from v's state; the arrays and removed names
 * are owned by ref: tlr_cstate_ref_clear() them, before freeing v.  Only
 * v's own referenced NodeClaims are listed, not the claims cs->nodeclaims
 * added when it was resolved. */
void tlr_cstate_delta(tlr_cstate *c, const tlr_cstate_view *v, const uint64_t *bases,
                      size_t nbases, Tailor__V1__ClusterRef *ref);
void tlr_cstate_ref_clear(Tailor__V1__ClusterRef *ref);

/* v's state as a ClusterState to send by reference: a shallow copy of the
 * resolved one with nodes empty, nodeclaims = claims (borrowed; the
 * sender's own, replacing or adding by name), by_ref = ref (borrowed). */
void tlr_cstate_by_ref(const tlr_cstate_view *v, Tailor__V1__NodeClaim **claims, size_t nclaims,
                       Tailor__V1__ClusterRef *ref, Tailor__V1__ClusterState *out);

#endif
