/* sim.h - "would these pods fit without these nodes, and at what cost":
 * one Simulate on the solver, built from a view.
 *
 * Every method that removes nodes asks this (consolidation, drift and
 * interruption replacements, single-replica protection, explain).  The
 * request carries the view's cluster with the candidates' pods to place;
 * pending pods are not sent (provisioning owns them; consolidation waits
 * while pods are freshly pending, see controller.h).
 *
 * Reduction (what makes a probe cheap at thousands of nodes): unless some
 * pod in the cluster has a required pod (anti-)affinity term, or a moving
 * pod has a topology spread -- the constraints that look at other nodes'
 * pods: the whole cluster goes, the removed nodes named, so every
 * matching pod on the nodes that stay counts in its domain -- the
 * request
 *   - sends the removed nodes' moving pods as the pods to place
 *     (pending_pods) and leaves the removed nodes out, so the solver does
 *     not look every node up in a list of thousands of removed names;
 *   - keeps only the nodes a moving pod could land on (Ready,
 *     Initialized, not disrupting, with room for the smallest moving pod),
 *     without their pods (their `requested` already says how full they
 *     are) unless a moving pod binds a host port, and only their
 *     NodeClaims and those of no node (in flight): the solver takes a
 *     claim without its node for capacity still coming;
 *   - first offers only the roomiest of those, enough for the moving pods
 *     1.5 times over: a plan found on a subset of the nodes is a plan on
 *     all of them, so only when that probe misses (infeasible, or needs a
 *     replacement) is it sent again with every node.
 * Nothing the solver would decide differently is dropped; the subset can
 * only cost a second request.
 */
#ifndef DS_SIM_H
#define DS_SIM_H

#include <stdbool.h>
#include <stddef.h>

#include "ds_ops.h"
#include "view.h"

typedef struct ds_sim {
    const ds_view *v;               /* borrowed */
    ds_solver_ops solver;
    bool no_reduce;                 /* send the whole cluster (tests, comparison) */
    /* Nodes already going (disrupting, with pods still on them): their
     * pods are placed in every probe too, as Karpenter does, so two
     * decisions never count the same free room.  Borrowed. */
    const char *const *extra;
    size_t nextra;
    /* Offerings the probe must not plan onto (e.g. the spot pool being
     * interrupted); borrowed. */
    Tailor__V1__OfferingUnavailable *const *ice;
    size_t nice;
    /* Optional: the pods bound to a node in FULL form (nodeSelector,
     * affinity, tolerations, spread constraints), from Kubernetes
     * (tlr_drain_ops.list_pods).  The watcher's snapshot carries bound pods
     * compact, without those; when set (the controller sets it to validate
     * a decision before acting), the reduced request places the removed
     * nodes' pods in full form, so a decision never rests on a pod that
     * could not really land where the simulation put it. */
    int (*full_pods)(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n);
    void *full_pods_arg;
    int64_t timeout_ms;             /* SolveOptions.timeout_ms; 0 = 10000 */
    Tailor__V1__MinValuesPolicy min_values_policy;     /* as the launcher's */
    Tailor__V1__PreferencePolicy preference_policy;
    int calls;                      /* Simulates made through this */
    double ms;                      /* time spent in them */
} ds_sim;

typedef struct ds_sim_result {
    bool feasible;                  /* every moving pod has a place */
    Tailor__V1__SimulateResponse *resp;   /* owned; NULL on a call error */
    double before, after, savings;  /* USD/hour */
    size_t nreplacements;
    size_t sent_nodes;              /* nodes in the request (after reduction) */
    char why[512];                  /* infeasible: the first pod error */
} ds_sim_result;

/* Simulate removing names[0..n) (and extra).  before/savings count the
 * prices of names only.  allow_replacement / max_replacements as
 * SimulateRequest.  *out filled (ds_sim_result_clear).  Returns TLR_OK
 * (feasible or not), TLR_E_NOTREADY without a catalog, or the call's
 * error. */
int ds_sim_run(ds_sim *s, const char *const *names, size_t n, bool allow_replacement,
               int max_replacements, ds_sim_result *out);
void ds_sim_result_clear(ds_sim *s, ds_sim_result *r);

/* Build the request without sending it (tests, the bench).  *req borrows
 * from the view; ds_sim_request_free() frees what it allocated. */
void ds_sim_request(const ds_sim *s, const char *const *names, size_t n, bool allow_replacement,
                    int max_replacements, Tailor__V1__SimulateRequest *req);
void ds_sim_request_free(Tailor__V1__SimulateRequest *req);

#endif
