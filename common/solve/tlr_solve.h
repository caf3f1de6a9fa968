/* tlr_solve.h - the solver engine: scheduling simulation and instance
 * selection, a pure function from a request to a plan.
 *
 * The same engine runs behind tailor-solver (Solve/Simulate over nng) and
 * `tailorctl solve` (offline dry-run).  It links no HTTP, Kubernetes or
 * AWS code and never reads a clock other than for its own timeout: the
 * request carries "now".
 *
 * Strategies:
 *   TLR_SOLVE_TAILOR     tailor's packing (the default).
 *   TLR_SOLVE_KARPENTER  the baseline the benchmarks compare against:
 *                        Karpenter's Scheduler.Solve as docs/solver.md
 *                        ("Strategies") describes it (pods
 *                        by cpu then memory descending; existing nodes,
 *                        then in-flight claims with fewest pods first, then
 *                        a new claim keeping every type that still fits;
 *                        launch the cheapest option), honouring the same
 *                        constraints so the comparison is fair.
 *   TLR_SOLVE_FFD        first-fit decreasing (ffd.c): pods largest first,
 *                        each on the first node or claim that holds it
 *                        (existing nodes, in-flight claims, then new claims
 *                        in the order they opened), a new claim only when
 *                        none does; every claim launches its cheapest type
 *                        that holds its pods.  The simple packer tailor's
 *                        plan is never worse than when the portfolio runs
 *                        it (solve.c), same constraints as the others.
 */
#ifndef TLR_SOLVE_H
#define TLR_SOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include "tailor/v1/solver.pb-c.h"

typedef enum tlr_solve_strategy {
    TLR_SOLVE_TAILOR = 0,
    TLR_SOLVE_KARPENTER = 1,
    TLR_SOLVE_FFD = 2,
} tlr_solve_strategy;

typedef struct tlr_solve_opts {
    tlr_solve_strategy strategy;
    const char *replica_id;    /* borrowed; copied into the response */
    /* Leave SolveResponse.lower_bound_cost_per_hour at 0 (not computed):
     * the bound is an LP and can cost more than the solve itself. */
    bool no_lower_bound;
    /* Greedy placement only: no LP-guided candidate plan (seed.c), for
     * side-by-side measurements. */
    bool no_lp_guide;
    /* No first-fit-decreasing candidate plans (solve.c), for side-by-side
     * measurements and tests. */
    bool no_ffd;
    /* No zone pre-assignment candidate plan (zonepin.c), for side-by-side
     * measurements. */
    bool no_zone_pin;
    /* Replay a plan whose nodes the launcher releases together as
     * kube-scheduler will bind it, and answer the plan the replay makes of
     * it, with a second stage for what the scheduler would leave pending
     * (solve.c, replay.c).  For the launcher's provisioning: tailor-solver
     * sets it unless --scheduler-replay=false; off for other callers
     * (Simulate, benchmarks of packing). */
    bool replay;
} tlr_solve_opts;

/* Plan req (borrowed).  o may be NULL (defaults).  On TLR_OK *out is new
 * and owned by the caller: free with tlr_solve_response_free().  Pods that
 * cannot be placed are not an error: each gets a PodError with reasons.
 * Errors: TLR_E_INVAL for a request that makes no sense as a whole (the
 * response is then still returned, with status set, when out is non-NULL:
 * check (*out)->status).  Catalog misses: see solver.proto. */
int  tlr_solve(const Tailor__V1__SolveRequest *req, const tlr_solve_opts *o,
               Tailor__V1__SolveResponse **out);
void tlr_solve_response_free(Tailor__V1__SolveResponse *r);   /* NULL is fine */

/* Would the pods of req->remove_node_names (and req->pending_pods) fit
 * without those nodes, and at what cost.  Ownership as tlr_solve(). */
int  tlr_simulate(const Tailor__V1__SimulateRequest *req, const tlr_solve_opts *o,
                  Tailor__V1__SimulateResponse **out);
void tlr_simulate_response_free(Tailor__V1__SimulateResponse *r);

/* A reply that solves nothing, for a request refused before the engine
 * ran (the solver service's cluster-by-reference resolution): status
 * code, reason and msg; when reason is "ClusterMiss" also cluster_miss
 * and the nheld generations held (solver.proto).  Free as the replies
 * above. */
Tailor__V1__SolveResponse *tlr_solve_refusal(const tlr_solve_opts *o, int code, const char *reason,
                                             const char *msg, const uint64_t *held, size_t nheld);
Tailor__V1__SimulateResponse *tlr_simulate_refusal(const tlr_solve_opts *o, int code,
                                                   const char *reason, const char *msg,
                                                   const uint64_t *held, size_t nheld);

/* A lower bound on the hourly cost of new capacity for the pending pods of
 * req that do not fit on existing nodes and in-flight claims: the optimum
 * of a linear relaxation (see lower_bound.c and docs/solver.md).  0 when
 * nothing needs new capacity.  Pure; does not place anything. */
int  tlr_solve_lower_bound(const Tailor__V1__SolveRequest *req, double *cost_per_hour);

/* A tighter bound, slower (seconds on thousands of pods): the larger of
 * that one and the certified optimum of the configuration LP, whose nodes
 * hold whole pods (see lower_bound.c).  Same contract as above. */
int  tlr_solve_lower_bound_tight(const Tailor__V1__SolveRequest *req, double *cost_per_hour);

/* The bound (tight or not) over the pending pods of req that plan r placed,
 * leaving out its pod_errors: what SolveResponse.lower_bound_cost_per_hour
 * holds.  A plan that leaves pods out (unschedulable, ignored, out of
 * time) is compared with the cheapest way to place the same pods, never
 * with one that places pods no node can take. */
int  tlr_solve_lower_bound_placed(const Tailor__V1__SolveRequest *req,
                                  const Tailor__V1__SolveResponse *r, bool tight,
                                  double *cost_per_hour);

#endif
