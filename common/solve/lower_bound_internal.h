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

/* Solve the bound's LP for req (borrowed).  On TLR_OK *out is new and
 * owned by the caller (free with sv_lp_plan_free); it borrows pointers
 * from req, which must outlive it.  Errors: TLR_E_INVAL without req. */
int  sv_lp_plan_solve(const Tailor__V1__SolveRequest *req, sv_lp_plan **out);
void sv_lp_plan_free(sv_lp_plan *p);   /* NULL is fine */

#endif
