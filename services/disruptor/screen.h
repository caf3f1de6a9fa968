/* screen.h - a proof, without a Simulate, that removing some nodes cannot
 * be worth it: a lower bound on what new nodes for their pods cost.
 *
 * Consolidation's single-node search asks this before each probe (a
 * Simulate of a few hundred pods against the whole catalog costs tens of
 * milliseconds, and a converged cluster of thousands of nodes has
 * hundreds of candidates that all come back "no replacement saves 10%").
 * A candidate whose bound is above what a replacement may cost is not
 * simulated; every other one is, exactly as before.  The multi-node
 * search only asks whether the pods fit at all (ds_screen_may_fit: the
 * residual of step 1 against what its one new node, of the largest type
 * of step 2, holds); a probe that cannot fit is one the Simulate would
 * call infeasible.  The bound must never be above what the solver would
 * plan, so each step takes the side that makes it lower:
 *
 *   1. What the other capacity can take.  Every other node (whatever its
 *      state; a booting node's unknown allocatable counts as unbounded)
 *      and every NodeClaim of no node (in flight: the reduced Simulate
 *      sends those, sim.h) is a bin with free cpu, memory and pod slots.
 *      A bin takes at most k of the moving pods, k its free slots, and no
 *      more than its free cpu (memory) over the smallest pod's cpu
 *      (memory) allows; of cpu it takes no more than its free cpu nor the
 *      k largest cpu requests together, the same for memory.  Summed over
 *      the bins, per resource: an upper bound on what stays on existing
 *      capacity.  What is left (the residual) must go on new nodes; when
 *      nothing is left, a delete may be possible and the bound is 0.
 *   2. What new capacity costs.  For each resource, the lowest price per
 *      unit any instance type offers through any NodePool: the type's
 *      largest figure among allocatable, capacity and max pods (the
 *      solver's fallbacks), DaemonSet overhead not subtracted; its
 *      cheapest offering in any availability whose zone and capacity type
 *      the pool's requirements do not rule out.  A type is ruled out for
 *      a pool only by an In or NotIn requirement on a label the type
 *      itself defines (instance type, arch, os, its own requirements);
 *      everything else (pods' requirements, minValues, limits, the
 *      candidates' own types, spot rules) only removes options.
 *   3. Any set of new nodes holding the residual costs at least, for
 *      each resource, the residual times that unit price: each node's
 *      price is at least its allocatable times the unit price.  The bound
 *      is the largest of the three (cpu, memory, pods).
 *
 * It reads the pods the reduced Simulate sends (the moving ones); a pass
 * that sends the whole cluster (required pod affinity in the cluster, or
 * no_reduce) or validates with pods from Kubernetes must not use it.
 */
#ifndef DS_SCREEN_H
#define DS_SCREEN_H

#include <stdbool.h>
#include <stddef.h>

#include "view.h"

typedef struct ds_screen ds_screen;

/* Precompute the bins and unit prices of one pass over v (borrowed: it
 * must outlive *out).  *out owned: ds_screen_free(). */
void ds_screen_create(const ds_view *v, ds_screen **out);
void ds_screen_free(ds_screen *s);   /* NULL is fine */

/* A lower bound, USD/hour, on the new nodes any plan for the moving pods
 * of set[0..n) (nodes of the view, borrowed) needs: 0 when they may fit
 * on the other capacity, INFINITY when they cannot and no NodePool offers
 * any instance type. */
double ds_screen_floor(const ds_screen *s, ds_vnode *const *set, size_t n);

/* false when the moving pods of set[0..n) provably cannot all be placed
 * on the other capacity plus max_new new nodes (each holds no more of a
 * resource than the largest type any NodePool may launch); true when
 * they may. */
bool ds_screen_may_fit(const ds_screen *s, ds_vnode *const *set, size_t n, int max_new);

#endif
