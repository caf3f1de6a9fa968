/* budget.c - disruption budgets (budget.h). */
#include "budget.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

const char *ds_reason_name(Tailor__V1__DisruptionReason r)
{
    switch (r) {
    case TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_UNDERUTILIZED:
        return "Underutilized";
    case TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_EMPTY:
        return "Empty";
    case TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_DRIFTED:
        return "Drifted";
    default:
        return "";
    }
}

/* "10%" of total rounded up, or "5"; -1 when it does not parse. */
static int32_t scaled(const char *s, int total)
{
    if (!s || !*s)
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0)
        return -1;
    if (*end == '%' && !end[1])
        return (int32_t)((v * total + 99) / 100);
    if (*end)
        return -1;
    return (int32_t)v;
}

static bool applies(const Tailor__V1__Budget *b, Tailor__V1__DisruptionReason r)
{
    if (!b->n_reasons)
        return true;
    for (size_t i = 0; i < b->n_reasons; i++)
        if (b->reasons[i] == r)
            return true;
    return false;
}

int32_t ds_budget_allowed(const Tailor__V1__NodePool *np, int total,
                          Tailor__V1__DisruptionReason reason, int64_t now_ms, char *why, size_t len)
{
    int32_t allowed = INT32_MAX;
    if (why && len)
        why[0] = '\0';
    const Tailor__V1__Disruption *d = np->disruption;
    for (size_t i = 0; d && i < d->n_budgets; i++) {
        const Tailor__V1__Budget *b = d->budgets[i];
        int32_t val;
        bool active = true;
        char err[200] = "";
        if (b->schedule[0]) {
            ds_cron c;
            if (ds_cron_parse(b->schedule, &c, err, sizeof(err)) != TLR_OK)
                active = false, val = 0;   /* fail closed */
            else
                active = ds_cron_active(&c, b->duration_ms, now_ms);
        }
        if (err[0]) {
            val = 0;
        } else if (!active) {
            val = INT32_MAX;
        } else if ((val = scaled(b->nodes, total)) < 0) {
            snprintf(err, sizeof(err), "nodes \"%s\" is neither a count nor a percentage", b->nodes);
            val = 0;
        }
        /* An invalid budget closes every reason, as Karpenter's error does. */
        if (!applies(b, reason) && !err[0])
            continue;
        if (val < allowed) {
            allowed = val;
            if (why && len) {
                if (err[0])
                    snprintf(why, len, "budget %zu of NodePool %s: %s", i, np->name, err);
                else
                    snprintf(why, len, "budget %zu of NodePool %s (nodes: %s%s%s)", i, np->name, b->nodes,
                             b->schedule[0] ? ", schedule " : "", b->schedule);
            }
        }
    }
    return allowed;
}

void ds_budgets_compute(const ds_view *v, ds_budgets *out)
{
    memset(out, 0, sizeof(*out));
    size_t np = v->cs ? v->cs->n_nodepools : 0;
    out->v = tlr_calloc(np + 1, sizeof(*out->v));
    for (size_t i = 0; i < np; i++) {
        const Tailor__V1__NodePool *p = v->cs->nodepools[i];
        ds_pool_budget *b = &out->v[out->n++];
        b->pool = p->name;
        for (size_t k = 0; k < v->nnodes; k++) {
            const ds_vnode *x = &v->nodes[k];
            if (!x->node->managed || !x->initialized || strcmp(x->node->nodepool, p->name))
                continue;
            b->total++;
            if (!x->node->ready || x->disrupting)
                b->disrupting++;
        }
        for (int r = 1; r < DS_NREASONS; r++)
            b->allowed[r] = ds_budget_allowed(p, b->total, (Tailor__V1__DisruptionReason)r, v->now_ms,
                                              b->why[r], sizeof(b->why[r]));
    }
}

void ds_budgets_clear(ds_budgets *b)
{
    if (!b)
        return;
    free(b->v);
    memset(b, 0, sizeof(*b));
}

const ds_pool_budget *ds_budgets_pool(const ds_budgets *b, const char *pool)
{
    for (size_t i = 0; pool && i < b->n; i++)
        if (!strcmp(b->v[i].pool, pool))
            return &b->v[i];
    return NULL;
}

int ds_budgets_left(const ds_budgets *b, const char *pool, Tailor__V1__DisruptionReason reason)
{
    const ds_pool_budget *p = ds_budgets_pool(b, pool);
    if (!p || reason <= 0 || reason >= DS_NREASONS)
        return 0;
    int64_t left = (int64_t)p->allowed[reason] - p->disrupting - p->taken;
    return left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

void ds_budgets_take(ds_budgets *b, const char *pool, int n)
{
    for (size_t i = 0; pool && i < b->n; i++)
        if (!strcmp(b->v[i].pool, pool))
            b->v[i].taken += n;
}
