/* tlr_kubesem.h - Kubernetes and Karpenter placement semantics, in one place.
 *
 * The rules that decide whether a pod may land on a node, read the same way
 * by the solver, the independent plan checker and its lower bound, drain,
 * pdbcheck, patchcheck and the watcher.  Everything here is a pure function
 * of borrowed protobuf messages; nothing allocates except a label set.
 *
 * The rules, as the code applies them:
 *
 *   node requirements   (NodeSelectorRequirement on a concrete label set)
 *       In          the label is present and its value is listed.
 *       NotIn       the label is absent, or present with an unlisted value
 *                   (Karpenter and Kubernetes: NotIn holds on an absent label).
 *       Exists      the label is present.
 *       DoesNotExist the label is absent.
 *       Gt Lt Gte Lte  the label is present, the requirement has exactly one
 *                   value, and both parse as base-10 int64 (strtoll, whole
 *                   string, no overflow); then compared.  Anything else fails.
 *       unknown operator  never holds.
 *       lax         a requirement on a key the label set does not define
 *                   holds, whatever the operator (new capacity: the NodePool
 *                   may still set that label).
 *   pod node affinity   nodeSelector entries are equality on a present label
 *       (lax: absent passes); volume requirements must all hold; required
 *       node affinity terms are ORed, the expressions of a term ANDed; no
 *       terms means no constraint; an empty term matches nothing; a term with
 *       matchFields counts only when lax (it names metadata.name, which a
 *       node not yet created does not have).
 *   tolerations  a toleration matches a taint when its effect is empty or
 *       equal, and then: operator Exists with an empty key matches every
 *       taint, Exists with a key matches that key, Equal matches key and
 *       value.  A pod tolerates a taint list when every NoSchedule and
 *       NoExecute taint is matched by one of its tolerations (PreferNoSchedule
 *       never blocks).
 *   label selectors  (LabelSelector on a pod's labels)  a NULL selector is
 *       the nil selector and matches nothing; a non-NULL selector with no
 *       terms matches everything; matchLabels are equality on a present
 *       label; matchExpressions In/NotIn/Exists/DoesNotExist as above (NotIn
 *       holds on an absent label); any other operator fails.
 *   labels of new capacity  tlr_ks_labels_for_offering() below.
 *   provider IDs  "aws:///<zone>/<instance-id>", as the AWS cloud provider
 *       sets Node.spec.providerID; the instance id is what follows the last
 *       '/' (as Karpenter's ParseInstanceID).
 */
#ifndef TLR_KUBESEM_H
#define TLR_KUBESEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/solver.pb-c.h"

/* ---- label sets ---------------------------------------------------- */

/* A concrete set of node labels; keys and values are borrowed. */
typedef struct tlr_ks_label {
    const char *key;
    const char *value;
} tlr_ks_label;

typedef struct tlr_ks_labels {
    tlr_ks_label *v;    /* owned */
    size_t n, cap;
} tlr_ks_labels;

/* Set key=value (replacing an earlier value); both borrowed. */
void        tlr_ks_labels_set(tlr_ks_labels *l, const char *key, const char *value);
const char *tlr_ks_labels_get(const tlr_ks_labels *l, const char *key);   /* NULL = absent */
void        tlr_ks_labels_reset(tlr_ks_labels *l);   /* n = 0, keeps memory */
void        tlr_ks_labels_free(tlr_ks_labels *l);

/* The value of key in a protobuf label list (borrowed), NULL when absent. */
const char *tlr_ks_label_get(Tailor__V1__Label *const *ls, size_t n, const char *key);

/* The condition of that type in v[0..n) (a status's conditions), or NULL;
 * borrowed. */
const Tailor__V1__Condition *tlr_ks_condition(Tailor__V1__Condition *const *v, size_t n,
                                              const char *type);

/* ---- labels of new capacity ---------------------------------------- */

/* The karpenter.sh/capacity-type label value of ct ("on-demand", "spot",
 * "reserved"; "" for UNSPECIFIED). */
const char *tlr_ks_capacity_type_name(Tailor__V1__CapacityType ct);

/* Set on l the label each single-valued In requirement of rs pins
 * (key=value); when only_absent, keys l already has are left alone. */
void tlr_ks_labels_set_single_in(tlr_ks_labels *l,
                                 Tailor__V1__NodeSelectorRequirement *const *rs, size_t n,
                                 bool only_absent);

/* Reset l to the labels a node of instance type t bought through offering
 * o for NodePool pool would carry: the pool's template labels, its
 * single-valued In requirements, karpenter.sh/nodepool, the type's
 * single-valued In requirements, node.kubernetes.io/instance-type,
 * kubernetes.io/arch (when the type names one), kubernetes.io/os (when the
 * type has exactly one), zone and zone-id (when the offering names them)
 * and capacity type (when specified), later ones replacing earlier ones.
 * All borrowed from the arguments.  pool, t and o may be NULL. */
void tlr_ks_labels_for_offering(tlr_ks_labels *l, const Tailor__V1__NodePool *pool,
                                const Tailor__V1__InstanceType *t,
                                const Tailor__V1__Offering *o);

/* ---- node requirements --------------------------------------------- */

/* "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"; "?"
 * for anything else. */
const char *tlr_ks_operator_name(int op);

/* Does a op b hold for op Gt, Lt, Gte or Lte?  false for other operators. */
bool tlr_ks_compare_holds(int op, int64_t a, int64_t b);

/* Does requirement r hold on labels l?  The rules atop this file; lax as
 * there. */
bool tlr_ks_requirement_holds(const Tailor__V1__NodeSelectorRequirement *r,
                              const tlr_ks_labels *l, bool lax);

/* Do all n requirements of rs hold on l (true when n is 0)? */
bool tlr_ks_requirements_hold(Tailor__V1__NodeSelectorRequirement *const *rs, size_t n,
                              const tlr_ks_labels *l, bool lax);

/* Do the pod's nodeSelector, required node affinity (terms ORed) and volume
 * requirements hold on l?  lax as above. */
bool tlr_ks_pod_node_affinity_holds(const Tailor__V1__Pod *p, const tlr_ks_labels *l,
                                    bool lax);

/* ---- taints and tolerations ---------------------------------------- */

/* Does toleration tol match taint t (effect, then Exists / Equal)?  NULL
 * strings read as "". */
bool tlr_ks_toleration_matches(const Tailor__V1__Toleration *tol, const Tailor__V1__Taint *t);

/* Does the pod tolerate every NoSchedule / NoExecute taint of the list? */
/* Does p (NULL is false) have a DoNotSchedule topology spread constraint:
 * one the scheduler will not break, so that its plan's nodes must become
 * schedulable together (the launcher's plan gate, the solver's replay)? */
bool tlr_ks_pod_spread_hard(const Tailor__V1__Pod *p);

bool tlr_ks_pod_tolerates(const Tailor__V1__Pod *p, Tailor__V1__Taint *const *taints,
                          size_t n_taints);

/* ---- label selectors ----------------------------------------------- */

/* Does label selector s (borrowed; NULL = the nil selector, matches nothing)
 * select an object with these labels? */
bool tlr_ks_selector_matches(const Tailor__V1__LabelSelector *s,
                             Tailor__V1__Label *const *labels, size_t n_labels);

/* ---- label aliases ------------------------------------------------- */

/* The key Karpenter reads a requirement key as: the stable key for a
 * deprecated alias (beta.kubernetes.io/arch, /os, /instance-type,
 * failure-domain.beta.kubernetes.io/zone, /region), else key itself.
 * Karpenter applies it to every requirement (NodePool, pod nodeSelector and
 * node affinity, volume), so a pod asking for beta.kubernetes.io/os: linux
 * schedules on nodes Karpenter launches. */
const char *tlr_ks_normalized_key(const char *key);

/* ---- restricted labels --------------------------------------------- */

/* Karpenter's rule on label and requirement keys (the CRDs' CEL rules,
 * and IsRestrictedLabel for pods): NULL when key may be used, else the
 * message.  Restricted: kubernetes.io/hostname, the karpenter.sh domain
 * but karpenter.sh/capacity-type (and karpenter.sh/nodepool when
 * nodepool_key_ok: NodeClaim and pod requirements), the karpenter.k8s.aws
 * domain but its well-known labels. */
const char *tlr_ks_restricted_label(const char *key, bool nodepool_key_ok);

/* ---- pods Karpenter's provisioner ignores --------------------------- */

/* Does Karpenter's provisioner ignore pod p (its Validate: the pod is not
 * provisioned for at all, and counts in karpenter_scheduler_ignored_pods_count)?
 * NULL when not, else buf holding "ignoring pod, <why>".  Ignored: a pod
 * whose scheduling requirements (nodeSelector, first required term,
 * heaviest preferred term) say karpenter.sh/nodepool DoesNotExist -- it
 * avoids Karpenter's nodes on purpose, so *quiet is set: no Event -- and a
 * pod whose nodeSelector or required node affinity uses a restricted key
 * (kubernetes.io/hostname, karpenter.sh/..., an unknown karpenter.k8s.aws
 * label), matchFields, In without values, or Gt/Lt without one
 * non-negative integer.  DaemonSet pods are never ignored here. */
const char *tlr_ks_pod_ignored(const Tailor__V1__Pod *p, char *buf, size_t n, bool *quiet);

/* ---- object names -------------------------------------------------- */

/* kube-apiserver's name rules (apimachinery's IsDNS1123Label and
 * IsDNS1123Subdomain).  A label: s[0..n), 1-63 of [a-z0-9-], alphanumeric
 * at both ends (namespaces).  A subdomain: NUL-terminated, 1-253
 * characters, parts of [a-z0-9-] alphanumeric at both ends joined by dots
 * -- a part may be longer than 63 (most objects' names: Pods, PDBs,
 * NodeClaims). */
bool tlr_ks_dns1123_label(const char *s, size_t n);
bool tlr_ks_dns1123_subdomain(const char *s);

/* ---- provider IDs ------------------------------------------------- */

/* The EC2 instance id of an "aws://" provider ID (borrowed from
 * provider_id): what follows its last '/', when it is an "i-" id.  NULL
 * when provider_id is NULL, not "aws://", or names no EC2 instance (an
 * EKS Fargate node's "aws:///<zone>/<id>/fargate-ip-...", a trailing '/'). */
const char *tlr_provider_id_instance(const char *provider_id);

/* "aws:///<zone>/<instance>" into buf (what a kubelet on EC2 reports);
 * returns buf. */
char *tlr_provider_id_format(char *buf, size_t len, const char *zone, const char *instance);

#endif
