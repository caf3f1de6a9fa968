/* controllers.h - kubesim's workload controllers: Deployments,
 * ReplicaSets, StatefulSets, DaemonSets and garbage collection.
 *
 * Each pass (ks_ctl_pass) lists every object of these kinds, the pods and
 * the nodes once, indexes pods by their controller's uid, then reconciles
 * each workload: decide with the pure functions below, act through the
 * store, write status only when it changed.  The store is read directly
 * (no informer lag), so the real controllers' "expectations" are not
 * needed: a pod created in one pass is listed by the next.
 *
 *   Deployment   one ReplicaSet per pod-template hash (NAME-HASH, label
 *                pod-template-hash); RollingUpdate with maxSurge /
 *                maxUnavailable (defaults 25% / 25%, surge rounded up,
 *                unavailable down, both 0 -> 1), one step per pass as the
 *                real controller does; Recreate; revisionHistoryLimit;
 *                status replicas/updated/ready/available/unavailable and
 *                the Available and Progressing conditions.
 *   ReplicaSet   keeps spec.replicas active pods (generateName NAME-xxxxx,
 *                ownerReferences); deletes the least valuable extras first
 *                (unbound, pending, not ready, newest).
 *   StatefulSet  pods NAME-0..N-1; OrderedReady creates the next ordinal
 *                only when all lower ones are Running and Ready and removes
 *                the highest first; Parallel does all at once; a template
 *                change replaces outdated pods from the highest ordinal,
 *                one at a time.
 *   DaemonSet    one pod per node whose labels and taints the template
 *                accepts (with the tolerations the real controller adds),
 *                pinned with required node affinity on metadata.name, as
 *                the real controller does; the scheduler binds it.
 *   GC           pods and ReplicaSets whose controlling owner (of a kind
 *                above) no longer exists are deleted; pods bound to a Node
 *                that no longer exists are deleted (their controllers then
 *                create Pending replacements).
 */
#ifndef KS_CONTROLLERS_H
#define KS_CONTROLLERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "ks_module.h"
#include "ks_store.h"
#include "sched_filter.h"
#include "tlr_log.h"

/* ------------------------------------------------------------------ */
/* Pure decisions (controllers_logic.c)                                */
/* ------------------------------------------------------------------ */

/* The pod-template hash of a Deployment template (borrowed) with its
 * status.collisionCount, as 1..10 characters of [bcdfghjklmnpqrstvwxz2456789]
 * into buf (>= 16 bytes).  Depends only on the template's content, not on
 * the order of its object keys. */
void ks_template_hash(json_object *tmpl, int64_t collision_count, char *buf, size_t len);

/* maxSurge and maxUnavailable of a Deployment (borrowed) resolved against
 * spec.replicas.  TLR_E_PARSE with err for a malformed value. */
int ks_deploy_surge(json_object *deploy, int32_t *surge, int32_t *unavailable,
                    char *err, size_t errlen);

/* One ReplicaSet as the rollout sees it. */
typedef struct ks_rs_state {
    int32_t replicas;    /* spec.replicas */
    int32_t available;   /* status.availableReplicas */
} ks_rs_state;

/* One RollingUpdate step (reconcileNewReplicaSet, else
 * reconcileOldReplicaSets).  rs[new_idx] is the new ReplicaSet, the others
 * are old, ordered oldest first.  Writes the wanted spec.replicas of each
 * into want[0..n) and returns true when any differs from rs[]. */
bool ks_rollout_step(int32_t replicas, int32_t surge, int32_t unavailable,
                     const ks_rs_state *rs, size_t n, size_t new_idx, int32_t *want);

/* A pod as controllers rank it. */
typedef struct ks_ctl_pod {
    bool assigned;          /* has spec.nodeName */
    int  phase_rank;        /* Pending 0, Unknown 1, Running 2 */
    bool ready;
    int64_t ready_since_ms; /* Ready condition's lastTransitionTime */
    int32_t restarts;
    int64_t created_ms;
    const char *name;
} ks_ctl_pod;

/* Sort pods so the ones to delete first come first (the ReplicaSet
 * controller's ActivePods order): unassigned before assigned, Pending
 * before Unknown before Running, not ready before ready, ready for less
 * time first, more restarts first, newer first, then by name. */
void ks_ctl_rank_for_deletion(ks_ctl_pod *pods, size_t n);

/* Whether a DaemonSet whose pod template spec is `spec` (borrowed) should
 * run a pod on n: node affinity/selector match and every NoSchedule /
 * NoExecute taint tolerated, counting the tolerations the DaemonSet
 * controller adds to its pods. */
bool ks_ds_should_run(json_object *spec, const ks_node_info *n);

/* Add the DaemonSet controller's tolerations to a pod spec (mutable)
 * and pin it to node with required node affinity on metadata.name. */
void ks_ds_pod_prepare(json_object *spec, const char *node);

/* ------------------------------------------------------------------ */
/* The controller over a store (controllers.c)                         */
/* ------------------------------------------------------------------ */

typedef struct ks_ctl ks_ctl;

/* s, lg borrowed.  On return *out is new and owned (ks_ctl_free). */
void ks_ctl_create(ks_store *s, tlr_logger *lg, ks_ctl **out);
void ks_ctl_free(ks_ctl *c);   /* NULL is fine */

/* One pass over every workload.  Returns the number of writes it made
 * (creates, updates, deletes); 0 means the cluster is at rest. */
size_t ks_ctl_pass(ks_ctl *c);

/* The controllers as a kubesim module (settings: controllers-period). */
extern const ks_module ks_ctl_module;

#endif
