/* claimconds.c - Drifted and Consolidatable on NodeClaims (claimconds.h). */
#include "claimconds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"

const char *ds_drift_reason(ds_drift_kind k)
{
    switch (k) {
    case DS_DRIFT_NODEPOOL: return "NodePoolDrifted";
    case DS_DRIFT_NODECLASS: return "NodeClassDrift";
    case DS_DRIFT_REQUIREMENTS: return "RequirementsDrifted";
    case DS_DRIFT_AMI: return "AMIDrift";
    default: return "";
    }
}

static const Tailor__V1__Condition *cond_of(const Tailor__V1__NodeClaim *c, const char *type)
{
    return c->status ? tlr_ks_condition(c->status->conditions, c->status->n_conditions, type)
                     : NULL;
}

static bool cond_true(const Tailor__V1__NodeClaim *c, const char *type)
{
    const Tailor__V1__Condition *k = cond_of(c, type);
    return k && k->status == TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE;
}

/* Queue setting (reason non-NULL) or removing type on claim c, unless the
 * claim already shows exactly that. */
static void want(ds_cond_writes *out, const Tailor__V1__NodeClaim *c, const char *type,
                 const char *reason, const char *message)
{
    const Tailor__V1__Condition *k = cond_of(c, type);
    if (!reason && !k)
        return;
    if (reason && k && k->status == TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE &&
        !strcmp(k->reason, reason) && !strcmp(k->message, message))
        return;
    TLR_GROW(out->v, out->cap, out->n + 1);
    ds_cond_write *w = &out->v[out->n++];
    memset(w, 0, sizeof(*w));
    snprintf(w->claim, sizeof(w->claim), "%s", c->name);
    w->type = type;
    w->set = reason != NULL;
    if (reason) {
        snprintf(w->reason, sizeof(w->reason), "%s", reason);
        snprintf(w->message, sizeof(w->message), "%s", message);
    }
}

void ds_claimconds_plan(const ds_mctx *m, ds_cond_writes *out)
{
    memset(out, 0, sizeof(*out));
    const ds_view *v = m->v;
    for (size_t i = 0; i < v->nnodes; i++) {
        const ds_vnode *x = &v->nodes[i];
        const Tailor__V1__NodeClaim *c = x->claim;
        if (!c || !x->pool || c->deletion_unix_ms)
            continue;
        /* Drifted */
        const char *drift = NULL;
        if (cond_true(c, "Launched")) {
            char why[256];
            ds_drift_kind k = ds_drifted(m, x, why, sizeof(why));
            if (k != DS_DRIFT_NONE)
                drift = ds_drift_reason(k);
        }
        want(out, c, "Drifted", drift, drift ? drift : "");
        /* Consolidatable */
        bool never = true;
        int64_t after = ds_consolidate_after(x->pool, &never);
        bool ok = !never && x->initialized && v->now_ms >= x->last_pod_event_ms + after;
        want(out, c, "Consolidatable", ok ? "Consolidatable" : NULL, "");
    }
}

int ds_claimconds_apply(const ds_cond_writes *w, const ds_kube_ops *kube)
{
    int ok = 0;
    for (size_t i = 0; kube->condition && i < w->n; i++) {
        const ds_cond_write *x = &w->v[i];
        if (kube->condition(kube->arg, x->claim, x->type, x->set ? "True" : NULL,
                            x->reason, x->message) == TLR_OK)
            ok++;
    }
    return ok;
}
