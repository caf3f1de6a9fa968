/* tlr_plancheck.h - an independent checker for solver plans, and the
 * placement semantics it (and the lower bound) is built on.
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
 * The tlr_pc_* helpers are the checker's reading of Kubernetes placement
 * rules (label requirements, taints, label selectors).  lower_bound.c uses
 * the same helpers so that "the plan passed the checker" implies "the plan
 * is a feasible point of the bound's relaxation", hence cost >= bound.
 */
#ifndef TLR_PLANCHECK_H
#define TLR_PLANCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/solver.pb-c.h"
#include "tlr_buf.h"

/* Check resp (borrowed) against req (borrowed).  Returns 0 (TLR_OK) when the
 * plan is legal, otherwise the number of violations found (> 0).  When
 * violations is not NULL one human-readable line per violation is appended
 * ("pod default/web-1: ..."), as far as the buffer's ceiling allows; the
 * count is complete either way.  A request that carries no catalog for a
 * NodeClass a claim uses yields a violation (the plan cannot be verified). */
int tlr_plan_check(const Tailor__V1__SolveRequest *req,
                   const Tailor__V1__SolveResponse *resp, tlr_buf *violations);

/* ---- placement semantics shared with the lower bound ---------------- */

/* A concrete set of node labels; keys and values are borrowed. */
typedef struct tlr_pc_label {
    const char *key;
    const char *value;
} tlr_pc_label;

typedef struct tlr_pc_labels {
    tlr_pc_label *v;    /* owned */
    size_t n, cap;
} tlr_pc_labels;

/* Set key=value (replacing an earlier value); both borrowed. */
void        tlr_pc_labels_set(tlr_pc_labels *l, const char *key, const char *value);
const char *tlr_pc_labels_get(const tlr_pc_labels *l, const char *key);   /* NULL = absent */
void        tlr_pc_labels_reset(tlr_pc_labels *l);   /* n = 0, keeps memory */
void        tlr_pc_labels_free(tlr_pc_labels *l);

/* The karpenter.sh/capacity-type label value of ct ("on-demand", "spot",
 * "reserved"; "" for UNSPECIFIED). */
const char *tlr_pc_capacity_type_name(Tailor__V1__CapacityType ct);

/* Reset l to the labels a node of instance type t bought through offering
 * o for NodePool pool would carry: the pool's template labels, its
 * single-valued In requirements, the type's single-valued In requirements,
 * kubernetes.io/arch, node.kubernetes.io/instance-type, zone, zone-id,
 * capacity type and karpenter.sh/nodepool.  All borrowed from the
 * arguments.  pool and o may be NULL. */
void tlr_pc_labels_for_offering(tlr_pc_labels *l, const Tailor__V1__NodePool *pool,
                                const Tailor__V1__InstanceType *t,
                                const Tailor__V1__Offering *o);

/* Does requirement r hold on labels l?  Kubernetes semantics: In/Exists
 * need the label, NotIn/DoesNotExist pass without it, Gt/Lt/Gte/Lte compare
 * integers.  When lax is true, a requirement on a key l does not define
 * passes (used for new capacity, where a NodePool may still set the
 * label; the lower bound must not exclude what might be possible). */
bool tlr_pc_requirement_holds(const Tailor__V1__NodeSelectorRequirement *r,
                              const tlr_pc_labels *l, bool lax);

/* Do the pod's nodeSelector, required node affinity (terms ORed) and volume
 * requirements hold on l?  lax as above. */
bool tlr_pc_pod_node_affinity_holds(const Tailor__V1__Pod *p, const tlr_pc_labels *l,
                                    bool lax);

/* Does the pod tolerate every NoSchedule / NoExecute taint of the list? */
bool tlr_pc_pod_tolerates(const Tailor__V1__Pod *p, Tailor__V1__Taint *const *taints,
                          size_t n_taints);

/* ---- capacity still booting (Karpenter's in-flight nodes) ---------- */

/* The NodeClaim (borrowed from cl) behind node n: named by n's owner
 * reference, or whose status names n or its provider ID; NULL when none. */
const Tailor__V1__NodeClaim *tlr_pc_node_claim(const Tailor__V1__ClusterState *cl,
                                               const Tailor__V1__Node *n);

/* Is node n (nc: its claim, may be NULL) still booting?  Karpenter's
 * StateNode.Initialized: a node no NodePool manages never is; a managed
 * one until it carries karpenter.sh/initialized (Node.initialized). */
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

/* Does label selector s (borrowed; NULL = the nil selector, matches nothing)
 * select a pod with these labels? */
bool tlr_pc_selector_matches(const Tailor__V1__LabelSelector *s,
                             Tailor__V1__Label *const *labels, size_t n_labels);

/* Is the offering in the request's ICE cache (entries with until > now)? */
bool tlr_pc_offering_iced(const Tailor__V1__SolveRequest *req, const char *type_name,
                          const Tailor__V1__Offering *o);

/* The catalog (borrowed from req) serving node class name, or NULL when
 * the request names none or did not send it. */
const Tailor__V1__Catalog *tlr_pc_catalog_for_class(const Tailor__V1__SolveRequest *req,
                                                    const char *node_class);

#endif
