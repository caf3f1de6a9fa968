/* protect.h - single-replica protection: a workload with one Ready pod
 * never reaches zero Ready pods because of tailor (what the ASG
 * migration taught).
 *
 * It is the drain's guard (tlr_drain_ops.guard), asked before every
 * eviction.  A pod is protected when it is Ready and its workload (its
 * controller owner; a ReplicaSet is followed to its Deployment) has at
 * most one Ready replica.  Then:
 *
 *   - a Deployment whose rolling update may surge (strategy RollingUpdate
 *     with maxSurge > 0, the default 25% included), once its new pod has
 *     a home (below), gets a rolling restart
 *     -- spec.template.metadata.annotations kubectl.kubernetes.io/
 *     restartedAt, as `kubectl rollout restart` does, and the annotation
 *     tailor.sh/restarted-for=drain/<pod uid> so a later pass (or a
 *     restarted disruptor) does not restart it again.  The new pod cannot
 *     land on the tainted node, so the room is made first (as below):
 *     otherwise, with a replacement for the old pod already launching, the
 *     new pod would go pending and the launcher buy a second node for it.
 *     Without a snapshot the restart goes ahead.  The old pod is
 *     held until the workload has two Ready pods (or the Deployment
 *     controller removes it itself, as the rollout completes);
 *   - any other workload (StatefulSet, maxSurge 0, Recreate, a bare
 *     ReplicaSet) cannot run its new pod before the old one goes; its new
 *     home is made to exist first: a Simulate without the node says whether
 *     the node's pods fit elsewhere; when they need a new node, that node
 *     is launched (a NodeClaim named after the drained node, so asking again
 *     is idempotent) unless some NodeClaim is already launching (then that
 *     one is waited for), and the pod is held until the simulation finds
 *     room on Initialized capacity.  Then it is evicted; its workload is without a
 *     Ready pod only for its own start-up time, which no autoscaler can
 *     avoid for a workload that forbids surge (docs/disruptor.md).
 *
 * Held pods are reported as drain blockers ("pod ns/name waits: ...").
 * The node's terminationGracePeriod still bounds the wait: past the
 * deadline the drain deletes without asking the guard.
 */
#ifndef DS_PROTECT_H
#define DS_PROTECT_H

#include "ds_ops.h"
#include "tlr_log.h"
#include "tlr_metrics.h"
#include "tlr_time.h"
#include "view.h"

typedef struct ds_protect_opts {
    const tlr_clock *clock;                 /* borrowed */
    ds_kube_ops kube;
    ds_watcher_ops watcher;                 /* snapshots for make-room; .snapshot may be NULL */
    ds_solver_ops solver;
    ds_launcher_ops launcher;
    /* the pods of a node in full form (tlr_drain_ops.list_pods), so the
     * simulation sees their constraints; may be NULL */
    int (*full_pods)(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n);
    void *full_pods_arg;
    const Tailor__V1__Catalog *catalog;     /* borrowed; NULL: no make-room */
    tlr_logger *log;                        /* borrowed; may be NULL */
    tlr_metrics *metrics;                   /* borrowed; may be NULL */
} ds_protect_opts;

typedef struct ds_protect ds_protect;

void ds_protect_create(const ds_protect_opts *o, ds_protect **out);   /* owned */
void ds_protect_free(ds_protect *p);                                  /* NULL fine */
/* As ds_ctl_set_catalog; the cached view (built on the old one) is dropped. */
void ds_protect_set_catalog(ds_protect *p, const Tailor__V1__Catalog *cat);

/* tlr_drain_ops.guard: arg is the ds_protect.  TLR_OK lets the eviction
 * go; TLR_E_BUSY holds it (why says for what). */
int ds_protect_guard(void *arg, const Tailor__V1__Pod *pod, char *why, size_t len);

/* The name of the make-room NodeClaim for a drained node (buf >= 64). */
void ds_protect_room_name(const char *pool, const char *node, char *buf, size_t len);

#endif
