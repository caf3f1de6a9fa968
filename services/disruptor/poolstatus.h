/* poolstatus.h - NodePool status, as Karpenter's nodepool counter,
 * readiness and validation controllers keep it:
 *
 *   status.resources  the summed capacity (cpu, memory, pods,
 *                     ephemeral-storage, extended resources) and count
 *                     ("nodes") of the pool's nodes that are not being
 *                     deleted: a registered Node counts with its capacity
 *                     (zero fields filled from its NodeClaim's while it is
 *                     not initialized), a NodeClaim without its Node yet
 *                     with the claim's capacity;
 *   status.nodes      that count;
 *   conditions        ValidationSucceeded (the pool reached the disruptor
 *                     through the watcher, which refuses invalid pools),
 *                     NodeClassReady (the EC2NodeClass's Ready condition;
 *                     False NodeClassNotFound without one), and Ready (True
 *                     when both are, else False UnhealthyDependents).
 *                     Other condition types on the pool are kept;
 *                     lastTransitionTime moves only when a status changes.
 *
 * A pool is written only when its status differs from what the snapshot
 * holds, through the status subresource with the resourceVersion it was
 * read at (a concurrent writer makes the write fail; the next pass
 * retries).  `kubectl get nodepools` then shows NODES and READY as with
 * Karpenter.
 */
#ifndef DS_POOLSTATUS_H
#define DS_POOLSTATUS_H

#include <stddef.h>

#include "ds_ops.h"
#include "view.h"

typedef struct ds_pool_write {
    char *name;
    char *resource_version;   /* "" when unknown */
    char *status;             /* the status object, JSON */
} ds_pool_write;

typedef struct ds_pool_writes {
    ds_pool_write *v;
    size_t n, cap;
} ds_pool_writes;

/* The writes the view calls for (out cleared first; owned:
 * ds_pool_writes_clear). */
void ds_poolstatus_plan(const ds_view *v, ds_pool_writes *out);
void ds_pool_writes_clear(ds_pool_writes *w);
/* Apply through kube->status; the number written. */
int ds_poolstatus_apply(const ds_pool_writes *w, const ds_kube_ops *kube);

#endif
