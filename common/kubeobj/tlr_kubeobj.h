/* tlr_kubeobj.h - Kubernetes objects (json-c) to tailor.v1 messages.
 *
 * The edge where Kubernetes' loose JSON becomes tailor's exact contract:
 * quantities are parsed once here (tlr_quantity), API defaults are applied
 * here (a container's limits stand in for missing requests, a NodePool's
 * expireAfter is 720h when left out, ...), and impossible values are
 * refused here, each with an error that names the object and the field:
 *
 *   Pod default/web-0: spec.containers[1].resources.requests.cpu: "-1" is negative
 *   NodePool general: spec.weight: 300 is outside 1..100
 *
 * The watcher (over watch events) and `tailorctl solve` (over manifests)
 * share these converters.  Every converter takes the object borrowed and,
 * on TLR_OK, writes a new message to *out that the caller owns and frees
 * with tlr_kubeobj_free().  On failure *out is untouched and err (errlen
 * bytes, always NUL-terminated, may be NULL) says why: TLR_E_PARSE for a
 * malformed or impossible value, TLR_E_RANGE for an out-of-range one,
 * TLR_E_INVAL when a required field is missing or the object is of another
 * kind.
 *
 * Messages are built from malloc()ed parts exactly like protobuf-c's
 * unpack builds them, so protobuf_c_message_free_unpacked() frees them
 * too.  Labels, annotations and extended resources come out sorted by key.
 */
#ifndef TLR_KUBEOBJ_H
#define TLR_KUBEOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tailor/v1/cluster.pb-c.h"
#include "tailor/v1/node.pb-c.h"
#include "tailor/v1/nodeclaim.pb-c.h"
#include "tailor/v1/nodepool.pb-c.h"
#include "tailor/v1/pod.pb-c.h"

#define TLR_KUBEOBJ_ERRLEN 512

/* Resolves a pod affinity term's non-empty namespaceSelector (borrowed)
 * into namespace names: call add(term_ctx, name) for each matching
 * namespace.  Return TLR_OK or an error code that fails the conversion. */
typedef int (*tlr_kubeobj_ns_resolver)(void *arg, json_object *namespace_selector,
                                       void (*add)(void *term_ctx, const char *ns),
                                       void *term_ctx);

typedef struct tlr_kubeobj_opts {
    /* Namespace for namespaced objects that carry none (manifests);
     * NULL = "default", as kubectl does. */
    const char *default_namespace;
    /* NULL: a non-empty namespaceSelector is kept as all_namespaces = true
     * (offline there is no Namespace to match; this errs towards counting
     * more pods, never fewer). */
    tlr_kubeobj_ns_resolver ns_resolver;
    void *ns_resolver_arg;
    /* Pods: fill only the fields of the compact form (pod.proto). */
    bool compact;
    /* NULL, or called once per valid field that tailor accepts but does not
     * act on as Karpenter would (EC2NodeClass placementGroupSelector,
     * NodePool consolidationPolicy Balanced, ...).  msg (borrowed, valid
     * for the call) names object and field like an error:
     *   EC2NodeClass default: spec.placementGroupSelector: ignored: ...
     * The conversion still succeeds; callers turn these into log lines
     * and Warning Events. */
    void (*warn)(void *arg, const char *msg);
    void *warn_arg;
} tlr_kubeobj_opts;

/* Free a message returned by this module.  NULL is fine. */
void tlr_kubeobj_free(void *msg);

/* The object's kind, namespace/name, for messages: "Pod default/web-0",
 * "NodePool general", "object #3" when it has neither.  buf is borrowed. */
void tlr_kubeobj_describe(json_object *o, char *buf, size_t len);

/* ---- converters: o borrowed, opts borrowed and may be NULL ------------ */

/* core/v1 Pod (a pod template works too: a Pod without status).
 * Effective requests as kube-scheduler computes them, per resource:
 *   max( sum(containers) + sum(sidecars),
 *        max over init container i of (i + sum(sidecars before i)) )
 *   + spec.overhead
 * where sidecars are init containers with restartPolicy Always, and a
 * container's limits fill in its missing requests (API defaulting).
 * requests.pods is 1.  is_daemonset: the controller owner is a DaemonSet. */
int tlr_kubeobj_pod(json_object *o, const tlr_kubeobj_opts *opts, Tailor__V1__Pod **out,
                    char *err, size_t errlen);

/* core/v1 Node.  managed and the Karpenter fields come from the well-known
 * labels (karpenter.sh/nodepool, node.kubernetes.io/instance-type,
 * topology.kubernetes.io/zone, karpenter.sh/capacity-type,
 * karpenter.sh/initialized) and a NodeClaim owner reference.  requested and
 * pods are left empty: see tlr_kubeobj_node_add_pod(). */
int tlr_kubeobj_node(json_object *o, const tlr_kubeobj_opts *opts, Tailor__V1__Node **out,
                     char *err, size_t errlen);

/* Bind pod (borrowed) to node (borrowed, modified): append a compact copy
 * to node->pods and add its requests to node->requested, unless the pod is
 * terminal (Succeeded/Failed). */
void tlr_kubeobj_node_add_pod(Tailor__V1__Node *node, const Tailor__V1__Pod *pod);

/* karpenter.sh/v1 NodePool, defaults applied (expireAfter 720h,
 * consolidationPolicy WhenEmptyOrUnderutilized, consolidateAfter 0s,
 * budgets [{nodes: 10%}]), validated against Karpenter v1.14's CRD schema
 * and CEL rules (docs/contracts.md, "Karpenter object validation").
 * Static NodePools (spec.replicas) are refused: tailor provisions only
 * dynamically.  consolidationPolicy Balanced is accepted and run as
 * WhenEmptyOrUnderutilized, with a warning. */
int tlr_kubeobj_nodepool(json_object *o, const tlr_kubeobj_opts *opts,
                         Tailor__V1__NodePool **out, char *err, size_t errlen);

/* karpenter.k8s.aws/v1 EC2NodeClass, defaults applied (metadataOptions
 * enabled/disabled/1/required), status (amis, subnets, security groups,
 * capacity reservations, instance profile) when present.  Validated like
 * the NodePool (CRD schema, CEL, and the kubelet rules Karpenter's
 * controller applies); fields tailor does not act on are warned about. */
int tlr_kubeobj_nodeclass(json_object *o, const tlr_kubeobj_opts *opts,
                          Tailor__V1__NodeClass **out, char *err, size_t errlen);

/* karpenter.sh/v1 NodeClaim, with its phase derived from its conditions;
 * spec validated against the CRD like the NodePool's template. */
int tlr_kubeobj_nodeclaim(json_object *o, const tlr_kubeobj_opts *opts,
                          Tailor__V1__NodeClaim **out, char *err, size_t errlen);

/* policy/v1 PodDisruptionBudget. */
int tlr_kubeobj_pdb(json_object *o, const tlr_kubeobj_opts *opts,
                    Tailor__V1__PodDisruptionBudget **out, char *err, size_t errlen);

/* apps/v1 DaemonSet: its pod template converted like a pending pod. */
int tlr_kubeobj_daemonset(json_object *o, const tlr_kubeobj_opts *opts,
                          Tailor__V1__DaemonSet **out, char *err, size_t errlen);

/* ---- workloads (dry runs) ---------------------------------------------- */

/* Expand a Pod, Deployment, ReplicaSet, StatefulSet, ReplicationController
 * or Job into the pending pods it would create: spec.replicas (default 1;
 * a Job: parallelism, default 1, capped by completions) pods from its
 * template, each Pending and marked unschedulable, with a generated name
 * (StatefulSet: name-0, name-1, ...; others name-<5 chars>), a generated
 * uid, and a controller owner reference (a Deployment's pods are owned by
 * its ReplicaSet name-<hash>).  A Pod expands to itself.
 * max_pods (0 = no limit) bounds the total: TLR_E_TOOBIG beyond it.
 * On TLR_OK *pods is a new array of *npods new pods; free each with
 * tlr_kubeobj_free() and the array with free().  TLR_E_NOTFOUND: o is not
 * a workload kind (it is left alone). */
int tlr_kubeobj_expand(json_object *o, const tlr_kubeobj_opts *opts, size_t max_pods,
                       Tailor__V1__Pod ***pods, size_t *npods, char *err, size_t errlen);

/* Do the claim's requirements on key allow value?  (In, NotIn, Exists,
 * DoesNotExist; no requirement on key allows everything.)  What the
 * launcher launches a claim as, and what consolidation prices it at. */
bool tlr_nodeclaim_allows(const Tailor__V1__NodeClaim *claim, const char *key, const char *value);

/* ---- input ------------------------------------------------------------- */

/* Decode a file's bytes (borrowed): JSON (first non-blank byte '{' or '[')
 * or a YAML stream, at most max bytes.  Lists (kind List or *List, as
 * `kubectl get -o json` prints) are flattened into their items; a top-level
 * JSON array is flattened too.  On TLR_OK *objs is a new JSON array of
 * objects, owned by the caller.  Errors as tlr_json_parse/tlr_yaml_parse,
 * and TLR_E_PARSE for a document that is not an object (err names it). */
int tlr_kubeobj_decode(const char *buf, size_t len, size_t max, json_object **objs,
                       char *err, size_t errlen);

#endif
