/* budget.h - NodePool disruption budgets, as Karpenter v1 computes them.
 *
 * A pool's budgets (spec.disruption.budgets; default one {nodes: 10%})
 * each give a node count -- a number, or a percentage of the pool's nodes
 * rounded UP -- and apply to the reasons they list (none = all of
 * Underutilized, Empty, Drifted) while active: always without a schedule,
 * else for `duration` after each time the cron `schedule` (UTC) fires.
 * The allowance for a reason is the minimum over the active budgets that
 * apply to it, minus the pool's nodes already disrupting (tainted or being
 * deleted) or NotReady, never below zero.  The pool's nodes are its
 * managed, Initialized nodes.  A budget that does not parse allows
 * nothing (Karpenter fails closed).
 *
 * Forceful methods -- expiration, interruption -- do not take budgets.
 */
#ifndef DS_BUDGET_H
#define DS_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/nodepool.pb-c.h"
#include "view.h"

#define DS_NREASONS 4   /* indexed by Tailor__V1__DisruptionReason */

/* The allowance of np for reason before subtracting disrupting nodes:
 * INT32_MAX when no active budget applies.  total: the pool's nodes.
 * why (len bytes, may be NULL) names the budget that decided, or an
 * error. */
int32_t ds_budget_allowed(const Tailor__V1__NodePool *np, int total,
                          Tailor__V1__DisruptionReason reason, int64_t now_ms, char *why, size_t len);

typedef struct ds_pool_budget {
    const char *pool;                 /* borrowed */
    int total;                        /* managed, initialized nodes */
    int disrupting;                   /* of which disrupting or NotReady */
    int32_t allowed[DS_NREASONS];     /* before disrupting is subtracted */
    int taken;                        /* by decisions of this pass */
    char why[DS_NREASONS][160];
} ds_pool_budget;

typedef struct ds_budgets {
    ds_pool_budget *v;                /* owned */
    size_t n;
} ds_budgets;

/* Every pool of the view.  *out filled (ds_budgets_clear). */
void ds_budgets_compute(const ds_view *v, ds_budgets *out);
void ds_budgets_clear(ds_budgets *b);
/* Nodes of pool that may still be disrupted for reason now (>= 0). */
int ds_budgets_left(const ds_budgets *b, const char *pool, Tailor__V1__DisruptionReason reason);
/* A decision takes n nodes of pool. */
void ds_budgets_take(ds_budgets *b, const char *pool, int n);
const ds_pool_budget *ds_budgets_pool(const ds_budgets *b, const char *pool);
/* "Underutilized", "Empty", "Drifted". */
const char *ds_reason_name(Tailor__V1__DisruptionReason r);

#endif
