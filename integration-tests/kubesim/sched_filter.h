/* sched_filter.h - the pure parts of kubesim's scheduler: what a pod asks
 * for, what a node offers, and whether one fits the other.
 *
 * These functions read json-c objects (borrowed, never modified) and hold
 * no store state, so the scheduler (sched.c), the DaemonSet controller and
 * the unit tests share them.  They follow kube-scheduler's Filter plugins,
 * in its order, with its messages:
 *
 *   NodeUnschedulable  "node(s) were unschedulable"
 *   TaintToleration    "node(s) had untolerated taint {KEY: VALUE}"
 *   NodeAffinity       "node(s) didn't match Pod's node affinity/selector"
 *   NodeResourcesFit   "Too many pods", "Insufficient cpu", "Insufficient X"
 *
 * (PodTopologySpread and InterPodAffinity need the whole cluster: see
 * sched_topo.h.)  A node whose Ready condition is not True is treated as
 * if it carried the taint node.kubernetes.io/not-ready:NoSchedule, which
 * is what the node lifecycle controller adds in a real cluster.
 */
#ifndef KS_SCHED_FILTER_H
#define KS_SCHED_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* ------------------------------------------------------------------ */
/* Resource vectors                                                    */
/* ------------------------------------------------------------------ */

/* Names of scalar resources (nvidia.com/gpu, hugepages-2Mi, ...) are
 * interned into small ids by a table the caller owns, so a resource vector
 * is a small value type. */
typedef struct ks_resnames ks_resnames;

#define KS_RESNAMES_MAX 256   /* distinct scalar resource names per table */
#define KS_RES_EXT_MAX  12    /* scalar resources in one vector */

/* On return *out is new and owned: free with ks_resnames_free(). */
void ks_resnames_create(ks_resnames **out);
void ks_resnames_free(ks_resnames *t);     /* NULL is fine */
/* The name of id (borrowed from t), or NULL for an unknown id. */
const char *ks_resnames_name(const ks_resnames *t, int id);

typedef struct ks_res {
    int64_t cpu_m;       /* millicores */
    int64_t mem;         /* bytes */
    int64_t eph;         /* ephemeral-storage bytes */
    int64_t pods;        /* pod slots (allocatable) */
    int     n;           /* scalar entries used */
    uint16_t ext_id[KS_RES_EXT_MAX];
    int64_t  ext_v[KS_RES_EXT_MAX];
} ks_res;

/* The value of scalar resource id in r (0 when absent). */
int64_t ks_res_ext(const ks_res *r, int id);

/* Read a ResourceList object ({"cpu":"2","memory":"4Gi",...}; borrowed,
 * NULL = empty) into *out.  Names kube-scheduler ignores (unqualified
 * names other than the four above, kubernetes.io/ ones) are skipped.
 * TLR_E_PARSE: a value is not a quantity; TLR_E_RANGE: out of range, or
 * more than KS_RES_EXT_MAX scalar resources, or the name table is full.
 * A reason naming the resource goes to err.  *out written only on TLR_OK. */
int ks_res_from_list(json_object *list, ks_resnames *names, ks_res *out,
                     char *err, size_t errlen);

/* The effective requests of a Pod object as Kubernetes computes them
 * (resourcehelper.PodRequests): the sum over containers and restartable
 * init containers (sidecars), raised to the largest need of any regular
 * init container (plus the sidecars started before it), plus
 * spec.overhead.  A container's limit stands in for a missing request, as
 * API defaulting does.  out->pods is 1.  Errors as ks_res_from_list. */
int ks_pod_requests(json_object *pod, ks_resnames *names, ks_res *out,
                    char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Nodes                                                               */
/* ------------------------------------------------------------------ */

/* What the filters need of one Node, with the requests of the pods bound
 * to it.  Strings and json objects are borrowed from the node object. */
typedef struct ks_node_info {
    json_object *node;
    const char  *name;
    json_object *labels;     /* may be NULL */
    json_object *taints;     /* array, may be NULL */
    bool ready;              /* condition Ready is True */
    bool unschedulable;      /* spec.unschedulable (cordoned) */
    ks_res alloc;            /* status.allocatable */
    ks_res used;             /* sum of the requests of pods bound here */
    int64_t npods;           /* pods bound here */
} ks_node_info;

/* Fill *out from node (borrowed; must outlive *out); used is zero.
 * TLR_E_INVAL without metadata.name; allocatable errors as
 * ks_res_from_list.  *out written only on TLR_OK. */
int ks_node_info_init(json_object *node, ks_resnames *names, ks_node_info *out,
                      char *err, size_t errlen);

/* The value of label key on the node, or NULL. */
const char *ks_node_label(const ks_node_info *n, const char *key);

/* ------------------------------------------------------------------ */
/* Filters                                                             */
/* ------------------------------------------------------------------ */

/* Whether tolerations (an array of Toleration, borrowed, may be NULL)
 * tolerate the taint key=value:effect (ToleratesTaint). */
bool ks_tolerates(json_object *tolerations, const char *key, const char *value,
                  const char *effect);

/* Whether the pod spec's nodeSelector and required node affinity (ORed
 * nodeSelectorTerms of ANDed requirements: In NotIn Exists DoesNotExist
 * Gt Lt, and matchFields on metadata.name) accept the node.  spec
 * borrowed. */
bool ks_node_affinity_matches(json_object *spec, const ks_node_info *n);

/* The first untolerated NoSchedule/NoExecute taint of n for tolerations,
 * including the implicit not-ready taint; its reason is written to buf
 * ("node(s) had untolerated taint {k: v}").  true when one exists. */
bool ks_untolerated_taint(json_object *tolerations, const ks_node_info *n,
                          char *buf, size_t len);

/* The node-only filters, in kube-scheduler's order: NodeUnschedulable,
 * TaintToleration, NodeAffinity.  NULL when the node passes; otherwise the
 * reason, either a static string or buf (len bytes, caller's). */
const char *ks_filter_node(json_object *pod, const ks_node_info *n,
                           char *buf, size_t len);

/* NodeResourcesFit: the reasons req does not fit n's free resources, as
 * static strings or names from `names`, in a fixed order (pods, cpu,
 * memory, ephemeral-storage, then scalars by id).  Up to max go to
 * reasons[]; the count is returned (0 = fits).  Scalar reasons are
 * written into scratch (scratch_len bytes) as "Insufficient NAME". */
int ks_filter_fit(const ks_res *req, const ks_node_info *n,
                  const ks_resnames *names, const char **reasons, int max,
                  char *scratch, size_t scratch_len);

/* Least-allocated score of n after adding req: 0..100, higher is emptier
 * (mean of the free cpu and memory fractions). */
int ks_score_least_allocated(const ks_res *req, const ks_node_info *n);
/* Balanced-allocation score of n after adding req: 0..100, higher when
 * the cpu and memory fractions in use are closer ((1 - |f_cpu - f_mem| /
 * 2) * 100, kube-scheduler's NodeResourcesBalancedAllocation). */
int ks_score_balanced(const ks_res *req, const ks_node_info *n);
/* The node's score in a scheduling pass: kube-scheduler's default profile
 * as far as resources go, LeastAllocated + BalancedAllocation (weight 1
 * each); its other default scores are not simulated. */
int ks_score_node(const ks_res *req, const ks_node_info *n);

/* ------------------------------------------------------------------ */
/* The "0/3 nodes are available: ..." message                          */
/* ------------------------------------------------------------------ */

typedef struct ks_fitmsg ks_fitmsg;

/* On return *out is new and owned: free with ks_fitmsg_free(). */
void ks_fitmsg_create(ks_fitmsg **out);
void ks_fitmsg_free(ks_fitmsg *m);          /* NULL is fine */
/* Forget all reasons (reuse for the next pod). */
void ks_fitmsg_reset(ks_fitmsg *m);
/* Count one more node failing for reason (copied). */
void ks_fitmsg_add(ks_fitmsg *m, const char *reason);
/* The message for nnodes nodes, as kube-scheduler's FitError prints it:
 * "0/N nodes are available: " then "COUNT REASON" entries sorted as
 * strings, joined by ", ", then ".".  Written to buf (truncated to len,
 * always NUL-terminated). */
void ks_fitmsg_format(ks_fitmsg *m, size_t nnodes, char *buf, size_t len);

#endif
