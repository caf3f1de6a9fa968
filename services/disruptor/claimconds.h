/* claimconds.h - the NodeClaim conditions Karpenter's nodeclaim disruption
 * controllers keep, so `kubectl get nodeclaims -o yaml` and tools reading
 * them see the same thing:
 *
 *   Drifted         True, reason and message the drift reason
 *                   (NodePoolDrifted, NodeClassDrift, RequirementsDrifted,
 *                   AMIDrift), on a launched claim that has drifted;
 *                   removed when it no longer has (or is not launched).
 *   Consolidatable  True on an initialized claim whose NodePool
 *                   consolidates (consolidateAfter not Never) once its node
 *                   had no pod added or removed for consolidateAfter;
 *                   removed otherwise.
 *
 * DisruptionReason (True, reason Underutilized / Empty / Drifted) is set by
 * the controller on a decision's candidates when it carries it out, and
 * removed when the decision fails and is undone.
 *
 * Only differences from what the snapshot holds are written, each through
 * ds_kube_ops.condition (a read-modify-write of status.conditions).
 */
#ifndef DS_CLAIMCONDS_H
#define DS_CLAIMCONDS_H

#include <stddef.h>

#include "methods.h"
#include "ds_ops.h"

typedef struct ds_cond_write {
    char claim[256];
    const char *type;     /* static */
    bool set;             /* false: remove the condition */
    char reason[64];
    char message[256];
} ds_cond_write;

typedef struct ds_cond_writes {
    ds_cond_write *v;
    size_t n, cap;
} ds_cond_writes;

/* The writes the view calls for (out cleared first; free(out->v)). */
void ds_claimconds_plan(const ds_mctx *m, ds_cond_writes *out);
/* Apply through kube->condition; the number written. */
int ds_claimconds_apply(const ds_cond_writes *w, const ds_kube_ops *kube);
/* Karpenter's drift reason for a drift kind ("" for none). */
const char *ds_drift_reason(ds_drift_kind k);

#endif
