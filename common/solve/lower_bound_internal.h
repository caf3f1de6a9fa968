/* lower_bound_internal.h - the lower bound's LP solution, for the engine.
 * Not a public header: only common/solve includes it.
 *
 * tlr_solve_lower_bound() returns a number; the LP behind it
 * (lower_bound.c) also knows, fractionally, which nodes to buy and which
 * pods go on each: its final basis is a set of columns "x nodes of
 * (NodePool, type), each holding count[i] pods of group[i]".  place.c
 * builds integral nodes from those columns (LP-guided packing, see
 * docs/solver.md), so a solve that wants both the guidance and the bound
 * solves the LP once.
 */
#ifndef LOWER_BOUND_INTERNAL_H
#define LOWER_BOUND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tailor/v1/solver.pb-c.h"

/* One column of the LP's final basis: x nodes of (pool, type). */
typedef struct sv_lp_col {
    const Tailor__V1__NodePool *pool;      /* borrowed from the request */
    const Tailor__V1__InstanceType *type;  /* borrowed from the request */
    double price;                          /* per node */
    double x;                              /* nodes (fractional) */
    int n;                                 /* groups on one node */
    int *group;                            /* owned: group ids */
    double *count;                         /* owned: pods of each per node */
} sv_lp_col;

typedef struct sv_lp_plan {
    double bound;          /* exactly what tlr_solve_lower_bound returns */
    int npods;             /* req->n_pending_pods */
    int *pod_group;        /* owned: per pending pod its group, -1 = none */
    int ngroups;
    sv_lp_col *cols;       /* owned: new-capacity columns with x > 0 */
    int ncols;
} sv_lp_plan;

/* How to solve it.  integer: columns are integer patterns (the
 * configuration LP, priced by branch and bound, knapsack.c) instead of
 * fractional fillings; budgets are knapsack nodes per bin while columns
 * are generated and for the last, certifying pass; the deadline
 * (CLOCK_MONOTONIC ns, 0 = none) stops column generation early. */
typedef struct sv_lp_opts {
    bool integer;
    bool certify;          /* integer: also certify its bound (can be slow) */
    long round_budget;
    long final_budget;
    long cert_budget;      /* knapsack nodes per bin when certifying */
    int64_t deadline_ns;
} sv_lp_opts;

/* Solve the bound's LP for req (borrowed); o may be NULL (fractional).
 * On TLR_OK *out is new and owned by the caller (free with
 * sv_lp_plan_free); it borrows pointers from req, which must outlive it.
 * Errors: TLR_E_INVAL without req. */
int  sv_lp_plan_solve(const Tailor__V1__SolveRequest *req, const sv_lp_opts *o, sv_lp_plan **out);
void sv_lp_plan_free(sv_lp_plan *p);   /* NULL is fine */

#endif
