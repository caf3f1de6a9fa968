/* methods.h - the disruption methods, each a pure decision over one view
 * (its own file, as Karpenter orders them):
 *
 *   expiration.c     NodeClaims older than expireAfter: deleted, forcefully
 *                    (no budget, no candidate filter; terminationGracePeriod
 *                    bounds the drain)
 *   interruption.c   EC2 interruption events from SQS (its own timer)
 *   emptiness.c      nodes without pods to move, within the Empty budget
 *   drift.c          NodePool / EC2NodeClass hash, requirements or AMI
 *                    changed: replaced within the Drifted budget
 *   consolidation.c  multi-node (binary search over the candidate prefix,
 *                    delete or replace N by one cheaper node) then
 *                    single-node, within the Underutilized budget
 *
 * The voluntary methods run in that order and the first that decides
 * something wins the pass (controller.c validates and executes it).
 */
#ifndef DS_METHODS_H
#define DS_METHODS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "cmd.h"
#include "sim.h"
#include "tlr_log.h"
#include "view.h"

typedef struct ds_mctx {
    const ds_view *v;               /* borrowed */
    ds_budgets *b;                  /* borrowed; methods take from it */
    ds_sim *sim;                    /* borrowed */
    double min_savings;             /* replacement: share of the cost it must save */
    /* Consolidation may replace spot nodes by a spot node (Karpenter's
     * SpotToSpotConsolidation gate, off by default there too); a single
     * spot node then only with DS_SPOT_MIN_TYPES cheaper types, and the
     * replacement keeps the DS_SPOT_MIN_TYPES cheapest. */
    bool spot_to_spot;
    int max_candidates;             /* multi-node prefix; 0 = 100 */
    int64_t time_budget_ms;         /* single-node probing stops after this; 0 = 5000 */
    unsigned *seq;                  /* command id sequence */
    tlr_logger *log;                /* may be NULL */
    /* Out, from ds_consolidation_decide: wall time of its multi-node and
     * single-node searches (-1 = not run), whether the single-node one
     * stopped at time_budget_ms (Karpenter's consolidation timeouts), and
     * how many candidates it proved not worth a Simulate. */
    int64_t multi_ms, single_ms;
    bool single_timed_out;
    int single_screened;            /* candidates passed over without a Simulate (screen.h) */
} ds_mctx;

/* ---- expiration.c ---- */
/* Is x's claim past its expireAfter at now?  *expired_at (may be NULL). */
bool ds_expired(const ds_vnode *x, int64_t now_ms, int64_t *expired_at);
/* One forceful command holding every expired node (NULL when none). */
ds_cmd *ds_expiration_decide(ds_mctx *m);

/* ---- emptiness.c ---- */
ds_cmd *ds_emptiness_decide(ds_mctx *m);

/* ---- drift.c ---- */
typedef enum ds_drift_kind {
    DS_DRIFT_NONE = 0,
    DS_DRIFT_NODEPOOL,        /* karpenter.sh/nodepool-hash differs */
    DS_DRIFT_NODECLASS,       /* karpenter.k8s.aws/ec2nodeclass-hash differs */
    DS_DRIFT_REQUIREMENTS,    /* a node label the NodePool's requirements no longer allow */
    DS_DRIFT_AMI,             /* the claim's image is not in its node class's status.amis */
} ds_drift_kind;
/* Has x drifted, and how (why, len bytes, says what differs). */
ds_drift_kind ds_drifted(const ds_mctx *m, const ds_vnode *x, char *why, size_t len);
ds_cmd *ds_drift_decide(ds_mctx *m);
/* Replace exactly these drifted nodes: a command with the replacements
 * their pods need, or NULL with why saying why not (validation, which
 * plans again with the pods' full form). */
ds_cmd *ds_drift_evaluate(ds_mctx *m, ds_vnode *const *set, size_t n, char *why, size_t len);

/* ---- consolidation.c ---- */
#define DS_SPOT_MIN_TYPES 15
ds_cmd *ds_consolidation_decide(ds_mctx *m);
/* Evaluate removing exactly these nodes (replacement allowed): a command
 * when it is worth it (deleted, or replaced by one node cheaper by at
 * least min_savings that is not of a candidate's type), else NULL with
 * why saying which rule refused it.  Used by the methods, validation and
 * Explain. */
ds_cmd *ds_consolidation_evaluate(ds_mctx *m, ds_vnode *const *set, size_t n, char *why, size_t len);
/* The candidates consolidation would try, best first (savings ratio),
 * budget applied; *out owned (free()). */
size_t ds_consolidation_candidates(ds_mctx *m, ds_vnode ***out);

#endif
