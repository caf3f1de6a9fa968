/* sched_topo.h - the scheduler filters that look at other pods:
 * PodTopologySpread (whenUnsatisfiable: DoNotSchedule) and
 * InterPodAffinity (required pod affinity, required pod anti-affinity, and
 * the anti-affinity of pods already bound).
 *
 * A ks_topo lives for one scheduling pass over a fixed array of nodes.
 * The caller adds every bound pod once (ks_topo_add_pod), then for each
 * pending pod prepares its constraints (ks_topo_pod_prepare: counts per
 * topology domain, computed once per pod) and asks per node
 * (ks_topo_pod_filter: O(constraints)).  When the pass binds a pod it adds
 * it, so the next pending pod sees it.
 *
 * Counting is cached by (namespaces, label selector): the pods of one
 * Deployment share one counter array, built by one scan of the bound pods
 * and kept current on each add, so a pass over 10k pending pods does not
 * rescan 10k bound pods for each.
 *
 * Semantics follow kube-scheduler:
 *   - spread: a node counts as a domain member only if it passes the
 *     pod's node affinity/selector (nodeAffinityPolicy Honor, the default;
 *     Ignore counts all) and, with nodeTaintsPolicy Honor, its taints, and
 *     carries every DoNotSchedule constraint's topology key.  Terminating
 *     pods are not counted.  skew = count(node's domain) + (1 if the pod
 *     matches its own selector) - min over domains (0 while there are
 *     fewer domains than minDomains); the node fails when skew > maxSkew.
 *     matchLabelKeys add "key In (pod's value)" to the selector.
 *   - affinity terms: namespaces list, else the pod's own namespace; an
 *     empty namespaceSelector ({}) means all namespaces (a non-empty one
 *     is not evaluated: only the listed namespaces count).  A nil
 *     labelSelector matches nothing.  Nodes without the term's topology
 *     key never match.
 *
 * Node, pod and label objects passed in are borrowed and must outlive the
 * ks_topo.  Not thread safe.
 */
#ifndef KS_SCHED_TOPO_H
#define KS_SCHED_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "sched_filter.h"

typedef struct ks_topo ks_topo;
typedef struct ks_topo_pod ks_topo_pod;

/* nodes[0..n) borrowed for the life of the topo.  On return *out is new
 * and owned: free with ks_topo_free(). */
void ks_topo_create(const ks_node_info *nodes, size_t n, ks_topo **out);
void ks_topo_free(ks_topo *t);   /* NULL is fine */

/* Record a pod bound to nodes[node].  ns, labels (may be NULL) and
 * affinity (the pod's spec.affinity, may be NULL) are borrowed and must
 * outlive t.  deleting: the pod has a deletionTimestamp. */
void ks_topo_add_pod(ks_topo *t, size_t node, const char *ns, json_object *labels,
                     bool deleting, json_object *affinity);

/* Prepare pod's spread and inter-pod constraints.  pod borrowed (must
 * outlive *out); affinity_ok: borrowed array over the nodes, true where
 * the pod's node affinity/selector accepts the node (NULL: all).  On
 * TLR_OK *out is new and owned (ks_topo_pod_free) - NULL-free even when
 * the pod has no constraints.  TLR_E_PARSE with a reason in err for a
 * malformed selector or constraint. */
int ks_topo_pod_prepare(ks_topo *t, json_object *pod, const bool *affinity_ok,
                        ks_topo_pod **out, char *err, size_t errlen);

/* NULL when nodes[node] passes PodTopologySpread and InterPodAffinity
 * for the prepared pod, else the static reason (spread first). */
const char *ks_topo_pod_filter(const ks_topo_pod *p, size_t node);

/* Whether the prepared pod has any constraint at all (cheap skip). */
bool ks_topo_pod_constrained(const ks_topo_pod *p);

void ks_topo_pod_free(ks_topo_pod *p);   /* NULL is fine */

#endif
