/* pdb.h - PodDisruptionBudgets: the disruption controller's status math
 * and the Eviction API's decisions, as pure functions over json-c objects,
 * plus the kubesim controller that keeps PDB status current (pdb_ctl.c).
 *
 * Status (pkg/controller/disruption):
 *   pods          the PDB's namespace, matching spec.selector (nil selects
 *                 none, {} selects all);
 *   expectedPods  with maxUnavailable, or a percentage minAvailable: the
 *                 sum of spec.replicas of the pods' distinct controllers (a
 *                 ReplicaSet owned by a Deployment counts the Deployment);
 *                 pods without a controller are ignored; a controller that
 *                 cannot be found fails the sync.  With an integer
 *                 minAvailable: the number of matching pods.
 *   desiredHealthy  minAvailable (percentages of expectedPods, rounded up),
 *                 or expectedPods - maxUnavailable (rounded up), >= 0;
 *   currentHealthy  matching pods that are Ready, not terminating, and not
 *                 in status.disruptedPods (entries younger than 2 minutes);
 *   disruptionsAllowed  currentHealthy - desiredHealthy, 0 when negative or
 *                 when expectedPods is 0;
 *   observedGeneration  metadata.generation; condition DisruptionAllowed
 *                 (SufficientPods / InsufficientPods / SyncFailed).
 *
 * Eviction (pkg/registry/core/pod/storage/eviction.go):
 *   - a Pending, Succeeded or Failed pod, or one already terminating, is
 *     deleted without looking at budgets;
 *   - budgets with an empty selector do not apply; more than one matching
 *     budget is a 500 "This pod has more than one PodDisruptionBudget,
 *     which the eviction subresource does not support.";
 *   - a pod that is not Ready is deleted without spending the budget when
 *     unhealthyPodEvictionPolicy is AlwaysAllow, or when currentHealthy >=
 *     desiredHealthy > 0;
 *   - otherwise the budget must be processed (observedGeneration >=
 *     generation, else 429 "still being processed") and allow a disruption
 *     (else 429 "Cannot evict pod as it would violate the pod's disruption
 *     budget." with cause DisruptionBudget "The disruption budget NAME
 *     needs D healthy pods and has C currently"); it is then decremented
 *     and the pod recorded in status.disruptedPods before the delete, so
 *     two concurrent evictions cannot both spend the last disruption.
 */
#ifndef KS_PDB_H
#define KS_PDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "ks_module.h"
#include "ks_store.h"

/* After this long an entry of status.disruptedPods is no longer trusted. */
#define KS_PDB_DELETION_TIMEOUT_MS (2 * 60 * 1000)
/* The eviction API refuses to grow status.disruptedPods beyond this. */
#define KS_PDB_MAX_DISRUPTED 2000

/* One matching pod as the disruption controller sees it (strings borrowed). */
typedef struct ks_pdb_pod {
    const char *name;
    const char *owner_kind;   /* controller ownerReference, "" when none */
    const char *owner_name;
    const char *owner_uid;
    bool ready;               /* condition Ready is True */
    bool deleting;            /* has deletionTimestamp */
} ks_pdb_pod;

/* The scale of a pod's controller: on TLR_OK *scale is its spec.replicas
 * and scale_uid (len bytes) the uid it is counted under (a ReplicaSet
 * owned by a Deployment answers with the Deployment's).  TLR_E_NOTFOUND
 * when the controller does not exist or has no scale. */
typedef int (*ks_pdb_scale_fn)(void *arg, const char *ns, const char *kind,
                               const char *name, const char *uid,
                               char *scale_uid, size_t len, int32_t *scale);

/* What the controller computed for one PDB. */
typedef struct ks_pdb_calc {
    bool failed;              /* sync failed: err says why */
    char err[256];
    int32_t expected;
    int32_t desired;
    int32_t healthy;
    int32_t allowed;
    json_object *disrupted;   /* owned: the new status.disruptedPods */
} ks_pdb_calc;

/* Compute the status of pdb (borrowed) over its matching pods[0..n),
 * reading status.disruptedPods from `disrupted_from` (a PDB object,
 * borrowed; usually pdb itself or a fresher copy), at wall time now_ms.
 * scale may be NULL when no percentage or maxUnavailable is used.
 * *out is always written; free it with ks_pdb_calc_clear(). */
void ks_pdb_compute(json_object *pdb, json_object *disrupted_from,
                    const ks_pdb_pod *pods, size_t n, ks_pdb_scale_fn scale,
                    void *arg, int64_t now_ms, ks_pdb_calc *out);
void ks_pdb_calc_clear(ks_pdb_calc *c);

/* Write c into pdb's status (pdb mutable, borrowed): the counts,
 * disruptedPods, observedGeneration (not on failure) and the
 * DisruptionAllowed condition (lastTransitionTime = now, an RFC 3339
 * string, only when its status changes).  Returns true when anything
 * changed. */
bool ks_pdb_apply(json_object *pdb, const ks_pdb_calc *c, const char *now);

/* Whether a label selector object (may be NULL) selects pods for the
 * disruption controller (nil: none, {}: all) / for the eviction API
 * (nil or {}: none). */
bool ks_pdb_selects(json_object *pdb, json_object *pod_labels, bool for_eviction);

/* The eviction API's canIgnorePDB: Pending/Succeeded/Failed or terminating. */
bool ks_evict_can_ignore_pdb(json_object *pod);

/* Whether a pod that is not Ready may go without spending pdb's budget
 * (see the file comment).  false for a Ready pod. */
bool ks_evict_unhealthy_ok(json_object *pod, json_object *pdb);

/* checkAndDecrement on pdb (mutable, borrowed): on TLR_OK its status has
 * one disruption fewer and disruptedPods[pod_name] = now (RFC 3339).
 * Otherwise pdb is unchanged and st says what the API answers:
 * TLR_E_THROTTLED 429 TooManyRequests (cause DisruptionBudget), or
 * TLR_E_AUTH 403 Forbidden (negative budget, disruptedPods too big). */
int ks_pdb_check_and_decrement(json_object *pdb, const char *pod_name,
                               const char *now, ks_status *st);

/* One pass of the disruption controller: recompute and write (when it
 * changed) the status of every PodDisruptionBudget in s (borrowed);
 * lg may be NULL.  Returns the number of budgets whose status changed. */
size_t ks_pdb_sync(ks_store *s, tlr_logger *lg);

/* The PDB status controller as a kubesim module (settings: pdb-period). */
extern const ks_module ks_pdb_module;

#endif
