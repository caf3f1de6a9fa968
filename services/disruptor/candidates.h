/* candidates.h - may this node be disrupted voluntarily, and if not, why
 * not.  One function answers for every method and for Explain, so what
 * `tailorctl explain node` says is exactly what the methods obey.
 *
 * Blockers (Karpenter's GetCandidates, plus what Explain reports):
 *   NOT_MANAGED           no karpenter.sh/nodepool label or no such NodePool
 *   NOT_INITIALIZED       its NodeClaim is not Initialized (pods do not land yet)
 *   ALREADY_DISRUPTING    tainted karpenter.sh/disrupted or being deleted
 *   DO_NOT_DISRUPT        karpenter.sh/do-not-disrupt on the node, or active
 *                         on one of its pods (object names which)
 *   PDB                   a PodDisruptionBudget selecting one of its pods
 *                         allows no disruption now (object names which PDB)
 *   UNEVICTABLE_POD       a pod selected by more than one PDB (the Eviction
 *                         API refuses those)
 *   MISSING_PRICE         no price for its type, zone and capacity type
 *   consolidation only:
 *   CONSOLIDATION_DISABLED  consolidateAfter: Never
 *   CONSOLIDATE_AFTER     its pods changed less than consolidateAfter ago
 *                         (until_unix_ms says when that passes)
 *   CONSOLIDATION_POLICY  WhenEmpty and the node has pods to move
 * Budgets are per pool and per decision: budget.h.  With `graceful` (drift
 * of a NodeClaim with a terminationGracePeriod, Karpenter's "eventual"
 * disruption) PDB and pod do-not-disrupt blockers do not count: the
 * grace period bounds the drain.
 */
#ifndef DS_CANDIDATES_H
#define DS_CANDIDATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/disruptor.pb-c.h"
#include "view.h"

typedef struct ds_blocker {
    Tailor__V1__BlockerKind kind;
    char obj_kind[32];        /* "Node", "Pod", "PodDisruptionBudget", "NodePool" */
    char obj_ns[64];
    char obj_name[256];
    char message[512];
    int64_t until_ms;         /* when it may clear; 0 unknown */
} ds_blocker;

typedef struct ds_blockers {
    ds_blocker v[16];         /* the first 16 found; n counts all */
    size_t n;
} ds_blockers;

typedef enum ds_cand_use {
    DS_USE_CONSOLIDATION = 0,  /* emptiness, multi- and single-node consolidation */
    DS_USE_DRIFT,              /* drift (graceful when the claim has a TGP) */
} ds_cand_use;

/* Every blocker of x for use; *out filled.  Returns true when none. */
bool ds_candidate_check(const ds_view *v, const ds_vnode *x, ds_cand_use use, ds_blockers *out);

/* Karpenter's eviction cost of one pod:
 * clamp(1 + deletion-cost / 2^27 + priority / 2^25, -10, 10). */
double ds_pod_eviction_cost(const Tailor__V1__Pod *p);
/* Sum over the node's moving pods (the DisruptionCandidate field). */
double ds_node_disruption_cost(const ds_vnode *x);
/* price / (1 + sum of max(0, cost)) -- candidates are tried by this,
 * highest first. */
double ds_savings_ratio(const ds_vnode *x);

/* The pool's consolidateAfter (ms) and whether it is Never. */
int64_t ds_consolidate_after(const Tailor__V1__NodePool *np, bool *never);

#endif
