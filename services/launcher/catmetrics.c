/* catmetrics.c - the AWS provider's instance type metrics (see
 * catmetrics.h).
 *
 * One update collects (type, capacity type, zone) rows from every pool,
 * sorts them by the families' label order and merges duplicates (two
 * pools allowing one offering: available if either catalog offers it, as
 * Karpenter ORs availability over its NodePools), then sets the series
 * between a mark and a sweep.  A pool's requirements are checked with the
 * plan checker's semantics on the labels a node bought through that
 * offering would carry (tlr_ks_labels_for_offering), lax on keys those
 * labels do not define, as the solver treats new capacity.
 */
#include "catmetrics.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_kubesem.h"

struct lc_catmetrics {
    tlr_metric_family *cpu, *mem, *price, *avail;
};

void lc_catmetrics_create(tlr_metrics *m, lc_catmetrics **out)
{
    lc_catmetrics *cm = tlr_calloc(1, sizeof(*cm));
    static const char *const it[] = { "instance_type" };
    static const char *const off[] = { "instance_type", "capacity_type", "zone" };
    cm->cpu = tlr_metrics_gauge(m, "karpenter_cloudprovider_instance_type_cpu_cores",
                                "VCPUs cores for a given instance type.", 1, it);
    cm->mem = tlr_metrics_gauge(m, "karpenter_cloudprovider_instance_type_memory_bytes",
                                "Memory, in bytes, for a given instance type.", 1, it);
    cm->price = tlr_metrics_gauge(m, "karpenter_cloudprovider_instance_type_offering_price_estimate",
                                  "Instance type offering estimated hourly price used when making informed "
                                  "decisions on node cost calculation, based on instance type, capacity type, "
                                  "and zone.", 3, off);
    cm->avail = tlr_metrics_gauge(m, "karpenter_cloudprovider_instance_type_offering_available",
                                  "Instance type offering availability, based on instance type, capacity type, "
                                  "and zone", 3, off);
    *out = cm;
}

void lc_catmetrics_free(lc_catmetrics *cm)
{
    free(cm);
}

typedef struct row {
    const Tailor__V1__InstanceType *t;   /* borrowed */
    const char *ct, *zone;               /* borrowed; ct NULL = the type's row only */
    double price;
    bool available;
} row;

typedef struct rows {
    row *v;
    size_t n, cap;
} rows;

static void add(rows *r, const Tailor__V1__InstanceType *t, const char *ct, const char *zone, double price,
                bool available)
{
    TLR_GROW(r->v, r->cap, r->n + 1);
    r->v[r->n++] = (row){ t, ct, zone, price, available };
}

static int str_cmp0(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int row_cmp(const void *a, const void *b)
{
    const row *x = a, *y = b;
    int c = strcmp(x->t->name, y->t->name);
    if (!c)
        c = str_cmp0(x->ct, y->ct);
    if (!c)
        c = str_cmp0(x->zone, y->zone);
    return c;
}

static bool pool_allows(const Tailor__V1__NodePool *pool, const tlr_ks_labels *l)
{
    for (size_t i = 0; i < pool->n_requirements; i++)
        if (!tlr_ks_requirement_holds(pool->requirements[i], l, true))
            return false;
    return true;
}

static void collect(rows *r, const lc_catmetrics_pool *p, lc_ice *ice, tlr_ks_labels *l)
{
    const Tailor__V1__Catalog *cat = p->catalog;
    for (size_t i = 0; cat && i < cat->n_instance_types; i++) {
        const Tailor__V1__InstanceType *t = cat->instance_types[i];
        add(r, t, NULL, NULL, 0, false);
        for (size_t j = 0; j < t->n_offerings; j++) {
            const Tailor__V1__Offering *o = t->offerings[j];
            tlr_ks_labels_for_offering(l, p->pool, t, o);
            if (!pool_allows(p->pool, l))
                continue;
            bool iced = ice && lc_ice_unavailable(ice, t->name, o->zone, o->capacity_type);
            add(r, t, tlr_ks_capacity_type_name(o->capacity_type), o->zone, o->price_per_hour,
                o->available && !iced);
        }
    }
}

void lc_catmetrics_update(lc_catmetrics *cm, const lc_catmetrics_pool *pools, size_t n, lc_ice *ice)
{
    rows r = { 0 };
    tlr_ks_labels l = { 0 };
    for (size_t i = 0; i < n; i++)
        collect(&r, &pools[i], ice, &l);
    tlr_ks_labels_free(&l);
    if (r.n)
        qsort(r.v, r.n, sizeof(r.v[0]), row_cmp);

    tlr_metric_family *all[] = { cm->cpu, cm->mem, cm->price, cm->avail };
    for (size_t i = 0; i < 4; i++)
        tlr_metrics_family_mark_stale(all[i]);
    for (size_t i = 0; i < r.n;) {
        size_t j = i + 1;
        bool available = r.v[i].available;
        for (; j < r.n && !row_cmp(&r.v[i], &r.v[j]); j++)
            available = available || r.v[j].available;
        const row *x = &r.v[j - 1];       /* the last pool's price, as Karpenter */
        if (!x->ct) {
            const char *const it[] = { x->t->name };
            tlr_metrics_gauge_set(cm->cpu, it, (double)x->t->vcpu);
            tlr_metrics_gauge_set(cm->mem, it, (double)x->t->memory_mib * 1024.0 * 1024.0);
        } else {
            const char *const off[] = { x->t->name, x->ct, x->zone };
            tlr_metrics_gauge_set(cm->price, off, x->price);
            tlr_metrics_gauge_set(cm->avail, off, available ? 1 : 0);
        }
        i = j;
    }
    for (size_t i = 0; i < 4; i++)
        tlr_metrics_family_sweep_stale(all[i]);
    free(r.v);
}
