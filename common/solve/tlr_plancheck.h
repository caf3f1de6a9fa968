/* tlr_plancheck.h - an independent checker for solver plans, and the
 * in-flight capacity rules it (and the lower bound) is built on.
 *
 * tlr_plan_check() re-derives, from the request alone, whether a
 * SolveResponse is a legal plan: every pending pod has exactly one outcome,
 * nothing exceeds allocatable on any node or on ANY ranked option of a new
 * claim, node affinity / taints / host ports / pod anti-affinity / pod
 * affinity / hard topology spread (over the domains its inclusion
 * policies keep) hold on the final placement, NodePool limits hold, each
 * new claim's options meet minValues (unless annotated relaxed) and its
 * labels agree with its requirements, the options are ranked and priced
 * right and the total adds up.  It is written from the contract (proto comments, docs/contracts.md,
 * Kubernetes semantics), never from the engine's code, so that a bug in
 * the engine is not silently shared by its test oracle.
 *
 * The placement rules (label requirements, taints, label selectors, the
 * labels of new capacity) are those of tlr_kubesem.h; the tlr_pc_* helpers
 * add what a SolveRequest says about capacity still booting.  lower_bound.c
 * uses the same helpers so that "the plan passed the checker" implies "the
 * plan is a feasible point of the bound's relaxation", hence cost >= bound.
 */
#ifndef TLR_PLANCHECK_H
#define TLR_PLANCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/solver.pb-c.h"
#include "tlr_buf.h"
#include "tlr_kubesem.h"

/* Check resp (borrowed) against req (borrowed).  Returns 0 (TLR_OK) when the
 * plan is legal, otherwise the number of violations found (> 0).  When
 * violations is not NULL one human-readable line per violation is appended
 * ("pod default/web-1: ..."), as far as the buffer's ceiling allows; the
 * count is complete either way.  A request that carries no catalog for a
 * NodeClass a claim uses yields a violation (the plan cannot be verified). */
int tlr_plan_check(const Tailor__V1__SolveRequest *req,
                   const Tailor__V1__SolveResponse *resp, tlr_buf *violations);

/* ---- capacity still booting (Karpenter's in-flight nodes) ---------- */

/* The NodeClaim (borrowed from cl) behind node n: named by n's owner
 * reference, or whose status names n or its provider ID; NULL when none. */
const Tailor__V1__NodeClaim *tlr_pc_node_claim(const Tailor__V1__ClusterState *cl,
                                               const Tailor__V1__Node *n);

/* Is node n (nc: its claim, may be NULL) still booting?  Karpenter's
 * StateNode.Initialized: a node no NodeClaim owns never is (even with a
 * NodePool label); a claimed one until it carries karpenter.sh/initialized
 * (Node.initialized). */
bool tlr_pc_node_booting(const Tailor__V1__Node *n, const Tailor__V1__NodeClaim *nc);

/* Does pod p tolerate node n as the scheduler sees it: its taints (its
 * claim's before the Node is registered), less, while it boots, the taints
 * that go away by themselves (Kubernetes' not-ready, unreachable, the
 * cloud provider's uninitialized, karpenter.sh/unregistered, readiness.k8s.io/
 * and the startup taints of its claim, else of pool (may be NULL)). */
bool tlr_pc_pod_tolerates_node(const Tailor__V1__Pod *p, const Tailor__V1__Node *n,
                               const Tailor__V1__NodeClaim *nc,
                               const Tailor__V1__NodePool *pool);

/* The same for the taints of an in-flight NodeClaim with no Node yet. */
bool tlr_pc_pod_tolerates_claim(const Tailor__V1__Pod *p, const Tailor__V1__NodeClaim *nc);

/* Allocatable of resource name ("cpu" in millis, "memory", "pods",
 * "ephemeral-storage", or an extended name) on node n: while it boots,
 * where the Node reports 0 its claim's status.allocatable stands in
 * (StateNode.Allocatable). */
int64_t tlr_pc_node_allocatable(const Tailor__V1__Node *n, const Tailor__V1__NodeClaim *nc,
                                const char *name);

/* Is the offering in the request's ICE cache (entries with until > now)? */
bool tlr_pc_offering_iced(const Tailor__V1__SolveRequest *req, const char *type_name,
                          const Tailor__V1__Offering *o);

/* The catalog (borrowed from req) serving node class name, or NULL when
 * the request names none or did not send it. */
const Tailor__V1__Catalog *tlr_pc_catalog_for_class(const Tailor__V1__SolveRequest *req,
                                                    const char *node_class);

#endif
