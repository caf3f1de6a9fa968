/* gc.h - garbage collection decisions, purely.
 *
 * Two kinds of leak, as Karpenter's garbagecollection controller:
 *   - an instance of ours (tagged karpenter.sh/nodepool for the cluster)
 *     that no NodeClaim owns -- none has its providerID, none is named by
 *     its karpenter.sh/nodeclaim tag, and the launcher's own registry does
 *     not know it (the launcher died between CreateFleet and recording
 *     it, or the claim was deleted while the call was in flight) ->
 *     terminate, once it is older than LC_GC_GRACE_MS so a launch in
 *     progress is never raced.  Instances of the cluster without the
 *     nodepool tag (other node groups) are never touched;
 *   - a launched NodeClaim whose instance is gone (terminated out of
 *     band) -> delete the claim, once launched longer than the grace,
 *     since DescribeInstances is eventually consistent.
 */
#ifndef LC_GC_H
#define LC_GC_H

#include <stddef.h>
#include <stdint.h>

#include "lc_ops.h"

#define LC_GC_GRACE_MS (30 * 1000)

typedef struct lc_gc_plan {
    char **terminate;     /* instance ids; owned strings */
    size_t nterminate;
    char **delete_claims; /* claim names; owned strings */
    size_t ndelete;
} lc_gc_plan;

/* inst: live instances tagged for the cluster (borrowed); claims: every
 * NodeClaim in Kubernetes (borrowed); known: instance ids the launcher's
 * registry holds (borrowed, may be NULL).  *out filled (lc_gc_plan_clear). */
void lc_gc_decide(const tlr_ec2_instances *inst, const tlr_kclaims *claims,
                  const char *const *known, size_t nknown, int64_t now_ms, lc_gc_plan *out);
void lc_gc_plan_clear(lc_gc_plan *p);

#endif
