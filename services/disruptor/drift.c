/* drift.c - nodes that no longer match what made them (methods.h).
 *
 * A node has drifted when (Karpenter core + AWS provider):
 *   - its NodeClaim's karpenter.sh/nodepool-hash differs from its
 *     NodePool's (the pool's template changed: labels, taints,
 *     nodeClassRef, expireAfter, ...; hash.h keeps the hashes);
 *   - its NodeClaim's karpenter.k8s.aws/ec2nodeclass-hash differs from its
 *     EC2NodeClass's (role, user data, block devices, tags, ...);
 *   - one of its labels is no longer allowed by the NodePool's
 *     requirements (say the pool dropped an instance category); only
 *     requirements on labels the node carries are judged;
 *   - the image it runs (its NodeClaim's status.imageID, which the
 *     launcher writes with the providerID of every claim it launches or
 *     adopts) is not one of its EC2NodeClass's status.amis, as the
 *     launcher last resolved and published them (every
 *     --nodeclass-refresh, at once on a spec change) -- a new AMI
 *     published for an alias, an amiSelectorTerms change.  The AMI logic
 *     lives in the launcher alone, as in Karpenter; the disruptor makes no
 *     AWS call for it.  A class with no status.amis (not resolved yet,
 *     AMIsReady False) or a claim without an imageID is not judged on its
 *     image: no false drift.
 * Only hashes written with tailor's hash version are compared; a pool or
 * class whose hash is not ours yet gets ours and its claims are re-stamped
 * instead of drifting (Karpenter's hash-version migration).
 *
 * Drifted nodes are replaced within each pool's Drifted budget, all at
 * once when the simulation places their pods on the other nodes plus new
 * ones (any number: drift is not about cost), else one at a time.  A
 * NodeClaim with a terminationGracePeriod drifts even with blocking PDBs
 * or do-not-disrupt pods: the grace period bounds its drain.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "hash.h"
#include "methods.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubesem.h"

#define DRIFTED TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_DRIFTED

static const char *label(const Tailor__V1__Node *n, const char *key)
{
    for (size_t i = 0; i < n->n_labels; i++)
        if (!strcmp(n->labels[i]->key, key))
            return n->labels[i]->value;
    return NULL;
}

static bool req_allows(const Tailor__V1__NodeSelectorRequirement *r, const char *val)
{
    bool in = false;
    for (size_t i = 0; i < r->n_values && !in; i++)
        in = !strcmp(r->values[i], val);
    long long v = atoll(val), b = r->n_values ? atoll(r->values[0]) : 0;
    switch (r->operator_) {
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN:
        return in;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN:
        return !in;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS:
        return true;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST:
        return false;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT:
        return v > b;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT:
        return v < b;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE:
        return v >= b;
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE:
        return v <= b;
    default:
        return true;
    }
}

/* The launcher says the class's AMIs are not resolved (it then publishes
 * none; a status.amis left beside AMIsReady False is not trusted either). */
static bool amis_not_ready(const Tailor__V1__NodeClass *nc)
{
    const Tailor__V1__Condition *k = tlr_ks_condition(nc->conditions, nc->n_conditions, "AMIsReady");
    return k && k->status == TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE;
}

ds_drift_kind ds_drifted(const ds_mctx *m, const ds_vnode *x, char *why, size_t len)
{
    const Tailor__V1__NodeClaim *c = x->claim;
    const Tailor__V1__NodePool *p = x->pool;
    if (!c || !p)
        return DS_DRIFT_NONE;
    if (!strcmp(p->hash_version, DS_HASH_VERSION) && p->hash[0] && c->nodepool_hash[0] &&
        strcmp(p->hash, c->nodepool_hash)) {
        snprintf(why, len, "NodePool %s changed (hash %s, node made from %s)", p->name, p->hash,
                 c->nodepool_hash);
        return DS_DRIFT_NODEPOOL;
    }
    const char *cname = c->node_class[0] ? c->node_class
                        : p->node_class_ref ? p->node_class_ref->name : "";
    const Tailor__V1__NodeClass *nc = ds_view_class(m->v, cname);
    if (nc && !strcmp(nc->hash_version, DS_HASH_VERSION) && nc->hash[0] && c->node_class_hash[0] &&
        strcmp(nc->hash, c->node_class_hash)) {
        snprintf(why, len, "EC2NodeClass %s changed (hash %s, node made from %s)", nc->name,
                 nc->hash, c->node_class_hash);
        return DS_DRIFT_NODECLASS;
    }
    for (size_t i = 0; i < p->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = p->requirements[i];
        const char *v = label(x->node, r->key);
        if (v && !req_allows(r, v)) {
            snprintf(why, len, "NodePool %s no longer allows %s=%s", p->name, r->key, v);
            return DS_DRIFT_REQUIREMENTS;
        }
    }
    const char *img = c->status && c->status->image_id[0] ? c->status->image_id : NULL;
    if (img && nc && nc->n_amis && !amis_not_ready(nc)) {
        bool ok = false;
        for (size_t i = 0; i < nc->n_amis && !ok; i++)
            ok = !strcmp(nc->amis[i]->id, img);
        if (!ok) {
            snprintf(why, len, "node runs image %s; EC2NodeClass %s now resolves to %s%s", img,
                     nc->name, nc->amis[0]->id, nc->n_amis > 1 ? " (and others)" : "");
            return DS_DRIFT_AMI;
        }
    }
    return DS_DRIFT_NONE;
}

static int by_age(const void *a, const void *b)
{
    const ds_vnode *x = *(ds_vnode *const *)a, *y = *(ds_vnode *const *)b;
    if (x->node->creation_unix_ms != y->node->creation_unix_ms)
        return x->node->creation_unix_ms < y->node->creation_unix_ms ? -1 : 1;
    return strcmp(x->node->name, y->node->name);
}

/* One command for set[0..n), replacements for whatever does not fit;
 * NULL (why, when given, says why) when they cannot be replaced yet. */
static ds_cmd *drift_cmd(ds_mctx *m, ds_vnode *const *set, size_t n, const char *first_why,
                         char *why, size_t len)
{
    const char **names = tlr_calloc(n + 1, sizeof(*names));
    size_t moving = 0;
    for (size_t i = 0; i < n; i++) {
        names[i] = set[i]->node->name;
        moving += set[i]->moving;
    }
    ds_sim_result r = { 0 };
    int rc = moving ? ds_sim_run(m->sim, names, n, true, (int)n, &r) : 0;
    free(names);
    if (moving && (rc || !r.feasible)) {
        if (m->log)
            TLR_INFO(m->log, "drifted nodes cannot be replaced yet", TLR_I("nodes", (int64_t)n),
                     TLR_S("why", r.why));
        if (why)
            snprintf(why, len, "the drifted nodes cannot be replaced: %s",
                     rc ? tlr_strerror(rc) : (const char *)r.why);
        ds_sim_result_clear(m->sim, &r);
        return NULL;
    }
    ds_cmd *c = ds_cmd_new(TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_DRIFT, DRIFTED,
                           m->v->now_ms, (*m->seq)++);
    for (size_t i = 0; i < n; i++)
        ds_cmd_add(c, set[i]);
    ds_cmd_set_replacements(c, r.resp, r.after);
    snprintf(c->why, sizeof(c->why), "%zu drifted node%s, %zu replacement%s: %s%s", n,
             n == 1 ? "" : "s", c->nrepl, c->nrepl == 1 ? "" : "s", first_why,
             n > 1 ? ", ..." : "");
    ds_sim_result_clear(m->sim, &r);
    return c;
}

ds_cmd *ds_drift_decide(ds_mctx *m)
{
    const ds_view *v = m->v;
    ds_vnode **d = tlr_calloc(v->nnodes + 1, sizeof(*d));
    size_t n = 0;
    char why[512], first[512] = "";
    for (size_t i = 0; i < v->nnodes; i++) {
        ds_vnode *x = &v->nodes[i];
        ds_blockers bl;
        if (!ds_candidate_check(v, x, DS_USE_DRIFT, &bl))
            continue;
        if (ds_drifted(m, x, why, sizeof(why)) != DS_DRIFT_NONE) {
            if (!n)
                snprintf(first, sizeof(first), "%s", why);
            d[n++] = x;
        }
    }
    qsort(d, n, sizeof(*d), by_age);
    /* within each pool's Drifted budget, oldest first */
    size_t k = 0;
    size_t max = m->max_candidates > 0 ? (size_t)m->max_candidates : 100;
    for (size_t i = 0; i < n && k < max; i++) {
        const char *pool = d[i]->node->nodepool;
        int taken = 0;
        for (size_t j = 0; j < k; j++)
            taken += !strcmp(d[j]->node->nodepool, pool);
        if (taken < ds_budgets_left(m->b, pool, DRIFTED))
            d[k++] = d[i];
    }
    ds_cmd *c = NULL;
    if (k)
        c = drift_cmd(m, d, k, first, NULL, 0);
    if (!c && k > 1)
        c = drift_cmd(m, d, 1, first, NULL, 0);
    if (c)
        for (size_t i = 0; i < c->n; i++)
            ds_budgets_take(m->b, c->c[i].pool, 1);
    free(d);
    return c;
}

ds_cmd *ds_drift_evaluate(ds_mctx *m, ds_vnode *const *set, size_t n, char *why, size_t len)
{
    return drift_cmd(m, set, n, "", why, len);
}
