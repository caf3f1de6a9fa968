/* expiration.c - expireAfter (methods.h).
 *
 * Karpenter v1: a NodeClaim older than its expireAfter (copied from the
 * NodePool's template when it was made; 720h by default, Never turns it
 * off) is deleted -- forcefully: no budget, no do-not-disrupt or PDB
 * filter, no replacement launched first.  Its pods go pending and are
 * provisioned for like any others; the drain still honours PDBs,
 * do-not-disrupt and single-replica protection until the NodeClaim's
 * terminationGracePeriod runs out.
 */
#include <stdio.h>
#include <string.h>

#include "methods.h"
#include "tlr_time.h"

bool ds_expired(const ds_vnode *x, int64_t now_ms, int64_t *expired_at)
{
    const Tailor__V1__NodeClaim *c = x->claim;
    if (!c || c->deletion_unix_ms || !c->creation_unix_ms)
        return false;
    int64_t after = c->expire_after_ms;
    bool never = c->expire_never;
    if (!after && !never && x->pool) {   /* a claim written without it: the pool's */
        after = x->pool->expire_after_ms;
        never = x->pool->expire_never;
    }
    if (never || after <= 0)
        return false;
    if (expired_at)
        *expired_at = c->creation_unix_ms + after;
    return now_ms >= c->creation_unix_ms + after;
}

ds_cmd *ds_expiration_decide(ds_mctx *m)
{
    ds_cmd *cmd = NULL;
    for (size_t i = 0; i < m->v->nnodes; i++) {
        const ds_vnode *x = &m->v->nodes[i];
        if (x->disrupting || !ds_expired(x, m->v->now_ms, NULL))
            continue;
        if (!cmd)
            cmd = ds_cmd_new(TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_EXPIRATION,
                             TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_UNSPECIFIED,
                             m->v->now_ms, (*m->seq)++);
        ds_cmd_add(cmd, x);
    }
    if (cmd) {
        snprintf(cmd->why, sizeof(cmd->why), "%zu node%s older than expireAfter", cmd->n,
                 cmd->n == 1 ? "" : "s");
    }
    return cmd;
}
