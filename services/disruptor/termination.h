/* termination.h - the termination controller: how a NodeClaim (or a
 * managed Node) that is being deleted goes away without breaking
 * anything, as Karpenter's node and NodeClaim termination controllers do.
 *
 * The karpenter.sh/termination finalizer is put on every NodeClaim and
 * every managed Node (karpenter.sh/nodepool label) that lacks it, so no
 * deletion -- ours, the launcher's, or `kubectl delete` -- skips the drain.
 * For a NodeClaim being deleted that carries it:
 *
 *   1. the drain deadline: deletionTimestamp + spec.terminationGracePeriod
 *      is written once to the karpenter.sh/nodeclaim-termination-timestamp
 *      annotation (so a restarted disruptor keeps the same deadline);
 *   2. its Node is tainted karpenter.sh/disrupted:NoSchedule;
 *   3. the Node is drained (common/drain: tiers, PDBs through the Eviction
 *      API with per-pod backoff, do-not-disrupt, forced deletes past the
 *      deadline); while something blocks, a Warning Event FailedDraining
 *      on the NodeClaim and on the Node says exactly what (which pod,
 *      which PDB), at most once per event_every_ms while unchanged;
 *   4. once nothing is left for min_drain_ms (pods the scheduler bound
 *      just before the taint landed are caught), the launcher is asked to
 *      Terminate the instance;
 *   5. the Node's finalizer is removed and the Node deleted, then the
 *      NodeClaim's finalizer is removed.
 * A Node being deleted whose NodeClaim is not gets its NodeClaim deleted
 * (the flow above then runs); a managed Node being deleted without any
 * NodeClaim is drained, its instance terminated by id, and released.
 *
 * Level-triggered: every pass lists NodeClaims and Nodes again and redoes
 * whichever step is not done; each step is idempotent and every piece of
 * state that matters (finalizers, taint, deadline, pods) lives in
 * Kubernetes, so a disruptor killed mid-drain finishes the drain after a
 * restart.  Only the per-pod eviction backoff and event de-duplication are
 * kept in memory.
 *
 * A node annotated karpenter.sh/do-not-disrupt is never chosen by a
 * voluntary method (candidates.h); when someone deletes it anyway it is
 * drained like any other (Karpenter: the annotation blocks voluntary
 * disruption, not deletion), and a Normal Event says the annotation was
 * overridden.
 */
#ifndef DS_TERMINATION_H
#define DS_TERMINATION_H

#include <stdbool.h>
#include <stdint.h>

#include "ds_ops.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tlr_log.h"
#include "tlr_metrics.h"
#include "tlr_time.h"

/* ---- decide ------------------------------------------------------------ */

typedef enum ds_term_action {
    DS_TA_FINALIZE_CLAIM = 1,   /* add the finalizer to claim */
    DS_TA_FINALIZE_NODE,        /* add the finalizer to node */
    DS_TA_DELETE_CLAIM,         /* node is being deleted, its claim is not */
    DS_TA_TERMINATE,            /* claim being deleted: steps 1-5 (node may be -1) */
    DS_TA_ORPHAN,               /* node being deleted, no claim: drain, terminate by id */
} ds_term_action;

typedef struct ds_term_item {
    ds_term_action action;
    int claim;                  /* index into claims, or -1 */
    int node;                   /* index into nodes, or -1 */
} ds_term_item;

typedef struct ds_term_plan {
    ds_term_item *v;            /* owned */
    size_t n;
} ds_term_plan;

/* The node of claim c: same providerID, else the node named by
 * status.nodeName.  -1 when none. */
int ds_term_node_of(const tlr_kclaim *c, const tlr_knodes *nodes);
/* The claim of node n (the reverse match), -1 when none. */
int ds_term_claim_of(const tlr_knode *n, const tlr_kclaims *claims);
/* The drain deadline of c: the annotation, else deletion + TGP, else 0. */
int64_t ds_term_deadline(const tlr_kclaim *c);
/* What to do this pass.  manage_finalizers false: only terminate (a
 * follower replica, or a read-only test). */
void ds_term_decide(const tlr_kclaims *claims, const tlr_knodes *nodes, bool manage_finalizers,
                    ds_term_plan *out);
void ds_term_plan_clear(ds_term_plan *p);

/* ---- act --------------------------------------------------------------- */

typedef struct ds_term_opts {
    const tlr_clock *clock;          /* borrowed */
    ds_kube_ops kube;
    ds_launcher_ops launcher;
    tlr_drain_ops drain;             /* guard included (single-replica protection) */
    tlr_logger *log;                 /* borrowed; may be NULL */
    tlr_metrics *metrics;            /* borrowed; may be NULL */
    int64_t min_drain_ms;            /* 0 = none */
    int64_t event_every_ms;          /* 0 = 60000 */
    bool manage_finalizers;
    /* Publish a DisruptionEvent on "disruption"; may be NULL.  ev borrowed. */
    void (*publish)(void *arg, const Tailor__V1__DisruptionEvent *ev);
    void *publish_arg;
} ds_term_opts;

typedef struct ds_term ds_term;

void ds_term_create(const ds_term_opts *o, ds_term **out);   /* owned */
void ds_term_free(ds_term *t);                                /* NULL fine */

typedef struct ds_term_stats {
    int finalized;        /* finalizers added */
    int terminating;      /* claims/nodes in termination this pass */
    int blocked;          /* of which the drain is blocked */
    int terminated;       /* released this pass */
    int evicted;          /* evictions accepted this pass */
} ds_term_stats;

/* One pass.  Errors listing claims or nodes are logged and returned (the
 * pass did nothing); everything else is per object and retried. */
int ds_term_pass(ds_term *t, ds_term_stats *st);

/* Is the claim (by name) in termination and what blocks it ("" none);
 * for explain.  buf len bytes; false when not terminating. */
bool ds_term_status(const ds_term *t, const char *claim, char *buf, size_t len);

#endif
