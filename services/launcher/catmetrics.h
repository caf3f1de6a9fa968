/* catmetrics.h - the AWS provider's instance type metrics, from the
 * catalogs the launcher buys from.
 *
 *   karpenter_cloudprovider_instance_type_cpu_cores{instance_type}
 *   karpenter_cloudprovider_instance_type_memory_bytes{instance_type}
 *       every instance type of the catalogs of the NodeClasses the
 *       NodePools use (as Karpenter: the vCPUs and the advertised memory,
 *       MiB x 2^20, before any VM overhead);
 *   karpenter_cloudprovider_instance_type_offering_price_estimate
 *   karpenter_cloudprovider_instance_type_offering_available
 *       {instance_type,capacity_type,zone}: the offerings some NodePool's
 *       requirements allow (Karpenter lists every offering of the pool's
 *       NodeClass; tailor narrows it to what the pool can buy, so the
 *       series stay bounded by the pools' own choices instead of the
 *       region's ~1,300 types x zones x capacity types).  available is 1
 *       when the catalog offers it and the ICE cache does not hold it.
 *
 * Every update sets the whole set between a mark and a sweep: a type or
 * offering no pool allows any more loses its series.  Pure given its
 * inputs; call from the launcher's loop.
 */
#ifndef LC_CATMETRICS_H
#define LC_CATMETRICS_H

#include <stddef.h>

#include "ice.h"
#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tlr_metrics.h"

typedef struct lc_catmetrics lc_catmetrics;

/* Registers the families in m (borrowed; must outlive *out).  *out is new
 * and owned: lc_catmetrics_free() it. */
void lc_catmetrics_create(tlr_metrics *m, lc_catmetrics **out);
void lc_catmetrics_free(lc_catmetrics *cm);     /* NULL is fine */

/* A NodePool and the catalog its NodeClass buys from (both borrowed). */
typedef struct lc_catmetrics_pool {
    const Tailor__V1__NodePool *pool;
    const Tailor__V1__Catalog *catalog;
} lc_catmetrics_pool;

/* Set every series from the n pools (borrowed); ice (borrowed, may be
 * NULL) marks offerings unavailable. */
void lc_catmetrics_update(lc_catmetrics *cm, const lc_catmetrics_pool *pools, size_t n, lc_ice *ice);

#endif
