/* candidates.c - voluntary disruption blockers (candidates.h). */
#include "candidates.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_drain.h"
#include "tlr_labels.h"
#include "tlr_time.h"

static void add(ds_blockers *b, Tailor__V1__BlockerKind kind, const char *ok, const char *ns,
                const char *name, int64_t until, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static void add(ds_blockers *b, Tailor__V1__BlockerKind kind, const char *ok, const char *ns,
                const char *name, int64_t until, const char *fmt, ...)
{
    if (b->n < sizeof(b->v) / sizeof(b->v[0])) {
        ds_blocker *x = &b->v[b->n];
        memset(x, 0, sizeof(*x));
        x->kind = kind;
        snprintf(x->obj_kind, sizeof(x->obj_kind), "%s", ok ? ok : "");
        snprintf(x->obj_ns, sizeof(x->obj_ns), "%s", ns ? ns : "");
        snprintf(x->obj_name, sizeof(x->obj_name), "%s", name ? name : "");
        x->until_ms = until;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->message, sizeof(x->message), fmt, ap);
        va_end(ap);
    }
    b->n++;
}

int64_t ds_consolidate_after(const Tailor__V1__NodePool *np, bool *never)
{
    const Tailor__V1__Disruption *d = np ? np->disruption : NULL;
    *never = d && d->consolidate_after_never;
    return d ? d->consolidate_after_ms : 0;
}

double ds_pod_eviction_cost(const Tailor__V1__Pod *p)
{
    double c = 1.0;
    const char *dc = tlr_drain_pod_annotation(p, "controller.kubernetes.io/pod-deletion-cost");
    if (dc)
        c += strtod(dc, NULL) / (double)(1 << 27);
    c += (double)p->priority / (double)(1 << 25);
    return c < -10 ? -10 : c > 10 ? 10 : c;
}

double ds_node_disruption_cost(const ds_vnode *x)
{
    double s = 0;
    for (size_t i = 0; i < x->node->n_pods; i++)
        if (ds_pod_moves(x->node->pods[i]))
            s += ds_pod_eviction_cost(x->node->pods[i]);
    return s;
}

double ds_savings_ratio(const ds_vnode *x)
{
    double s = 0;
    for (size_t i = 0; i < x->node->n_pods; i++)
        if (ds_pod_moves(x->node->pods[i])) {
            double c = ds_pod_eviction_cost(x->node->pods[i]);
            s += c > 0 ? c : 0;
        }
    return x->price / (1.0 + s);
}

bool ds_candidate_check(const ds_view *v, const ds_vnode *x, ds_cand_use use, ds_blockers *out)
{
    memset(out, 0, sizeof(*out));
    const Tailor__V1__Node *n = x->node;
    if (!n->managed || !x->pool) {
        add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_NOT_MANAGED, "Node", "", n->name, 0,
            n->managed ? "node %s names NodePool %s, which does not exist"
                       : "node %s is not managed by tailor (no karpenter.sh/nodepool label)",
            n->name, n->nodepool);
        return false;
    }
    if (!x->initialized)
        add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_NOT_INITIALIZED, "Node", "", n->name, 0,
            "node %s is not Initialized yet", n->name);
    if (x->disrupting)
        add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_ALREADY_DISRUPTING, "Node", "", n->name, 0,
            "node %s is already being disrupted (tainted %s or deleting)", n->name,
            TLR_TAINT_DISRUPTED);
    if (x->do_not_disrupt)
        add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_DO_NOT_DISRUPT, "Node", "", n->name, 0,
            "node %s has karpenter.sh/do-not-disrupt=true", n->name);
    bool graceful = use == DS_USE_DRIFT && x->claim && x->claim->termination_grace_period_ms > 0;
    for (size_t i = 0; i < n->n_pods; i++) {
        const Tailor__V1__Pod *p = n->pods[i];
        if (!ds_pod_moves(p) || p->deletion_unix_ms)
            continue;
        int64_t until = 0;
        if (!graceful && tlr_drain_pod_do_not_disrupt(p, v->now_ms, &until))
            add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_DO_NOT_DISRUPT, "Pod", p->namespace_,
                p->name, until, "pod %s/%s has karpenter.sh/do-not-disrupt=%s", p->namespace_,
                p->name, tlr_drain_pod_annotation(p, TLR_ANNOTATION_DO_NOT_DISRUPT));
        if (p->n_pdb_names > 1) {
            add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_UNEVICTABLE_POD, "Pod", p->namespace_,
                p->name, 0, "pod %s/%s is selected by %zu PodDisruptionBudgets; the Eviction API "
                "refuses such pods", p->namespace_, p->name, p->n_pdb_names);
            continue;
        }
        for (size_t k = 0; !graceful && k < p->n_pdb_names; k++) {
            const Tailor__V1__PodDisruptionBudget *b = ds_view_pdb(v, p->pdb_names[k]);
            if (b && b->disruptions_allowed <= 0)
                add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_PDB, "PodDisruptionBudget",
                    b->namespace_, b->name, 0,
                    "PodDisruptionBudget %s/%s allows no disruption now (pod %s/%s; healthy %d, "
                    "desired %d)", b->namespace_, b->name, p->namespace_, p->name,
                    b->current_healthy, b->desired_healthy);
        }
    }
    if (x->price <= 0)
        add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_MISSING_PRICE, "Node", "", n->name, 0,
            "no price for %s in %s", n->instance_type, n->zone);
    if (use == DS_USE_CONSOLIDATION) {
        bool never;
        int64_t after = ds_consolidate_after(x->pool, &never);
        if (never)
            add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_CONSOLIDATION_DISABLED, "NodePool", "",
                x->pool->name, 0, "NodePool %s has consolidateAfter: Never", x->pool->name);
        else if (v->now_ms < x->last_pod_event_ms + after) {
            char d[32];
            tlr_duration_format(after, d, sizeof(d));
            add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_CONSOLIDATE_AFTER, "NodePool", "",
                x->pool->name, x->last_pod_event_ms + after,
                "node %s changed recently: NodePool %s waits consolidateAfter %s", n->name,
                x->pool->name, d);
        }
        const Tailor__V1__Disruption *dd = x->pool->disruption;
        if (x->moving && dd &&
            dd->consolidation_policy == TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY)
            add(out, TAILOR__V1__BLOCKER_KIND__BLOCKER_KIND_CONSOLIDATION_POLICY, "NodePool", "",
                x->pool->name, 0, "NodePool %s consolidates only empty nodes (WhenEmpty); node %s "
                "has %zu pods", x->pool->name, n->name, x->moving);
    }
    return out->n == 0;
}
