/* gc.h - garbage collection decisions, purely.
 *
 * Two kinds of leak, as Karpenter's garbagecollection controller:
 *   - an instance tagged for the cluster with a karpenter.sh/nodeclaim
 *     tag naming no NodeClaim (the launcher died between CreateFleet and
 *     recording it, or the claim was deleted while the call was in
 *     flight) -> terminate, once it is older than LC_GC_GRACE_MS so a
 *     launch in progress is never raced;
 *   - a launched NodeClaim whose instance is gone (terminated out of
 *     band) -> delete the claim, once launched longer than the grace,
 *     since DescribeInstances is eventually consistent.
 */
#ifndef LC_GC_H
#define LC_GC_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define LC_GC_GRACE_MS (30 * 1000)

typedef struct lc_gc_plan {
    char **terminate;     /* instance ids; owned strings */
    size_t nterminate;
    char **delete_claims; /* claim names; owned strings */
    size_t ndelete;
} lc_gc_plan;

/* inst: live instances tagged for the cluster (borrowed); claims: every
 * NodeClaim in Kubernetes (borrowed).  *out filled (lc_gc_plan_clear). */
void lc_gc_decide(const tlr_ec2_instances *inst, const lc_kclaims *claims, int64_t now_ms,
                  lc_gc_plan *out);
void lc_gc_plan_clear(lc_gc_plan *p);

#endif
