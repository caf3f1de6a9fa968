/* emptiness.c - empty nodes (methods.h).
 *
 * A node whose pods are all DaemonSet (or terminal) pods costs money and
 * holds nothing: it is deleted without a replacement, once its pods have
 * not changed for consolidateAfter, under both consolidation policies,
 * as many at once as the pools' Empty budgets allow (Karpenter deletes
 * empty nodes in parallel).  Nothing needs a simulation: no pod moves.
 */
#include <stdio.h>
#include <string.h>

#include "candidates.h"
#include "methods.h"

#define EMPTY TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_EMPTY

ds_cmd *ds_emptiness_decide(ds_mctx *m)
{
    ds_cmd *cmd = NULL;
    for (size_t i = 0; i < m->v->nnodes; i++) {
        const ds_vnode *x = &m->v->nodes[i];
        ds_blockers bl;
        if (x->moving || !ds_candidate_check(m->v, x, DS_USE_CONSOLIDATION, &bl))
            continue;
        if (ds_budgets_left(m->b, x->node->nodepool, EMPTY) < 1)
            continue;
        if (!cmd)
            cmd = ds_cmd_new(TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EMPTINESS, EMPTY,
                             m->v->now_ms, (*m->seq)++);
        ds_cmd_add(cmd, x);
        ds_budgets_take(m->b, x->node->nodepool, 1);
    }
    if (cmd) {
        cmd->after = 0;
        cmd->savings = cmd->before;
        snprintf(cmd->why, sizeof(cmd->why), "%zu empty node%s (no pods to move)", cmd->n,
                 cmd->n == 1 ? "" : "s");
    }
    return cmd;
}
