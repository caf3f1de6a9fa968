/* sched.h - kubesim's scheduler: binds pending pods to nodes, as
 * kube-scheduler's filter phase would, and a kubelet-ish step that starts
 * bound pods.
 *
 * One pass (ks_sched_pass) reads every node and pod from the store,
 * filters each pending pod (no spec.nodeName, not terminating,
 * schedulerName default-scheduler or unset, no scheduling gates) against
 * every node (sched_filter.h, sched_topo.h), binds it to the node with the
 * highest least-allocated score (ties: first by name), or marks it
 * PodScheduled=False/Unschedulable with kube-scheduler's "0/N nodes are
 * available: ..." message and a FailedScheduling event - only when that
 * message changes.  A pod that could not be placed is tried again only
 * when it or the cluster (nodes, bound pods) changed.
 *
 * The pod lifecycle step (ks_podlife_pass) is the kubelet's part: a pod
 * bound to a Ready node becomes Running and Ready after a delay; pods on
 * a node that is not Ready stay Pending, or turn not Ready.
 *
 * ks_sched_module registers both as store controllers.  Settings:
 *   --sched-period      run at least this often (default 1s)
 *   --pod-start-delay   bound -> Running/Ready delay (default 0)
 */
#ifndef KS_SCHED_H
#define KS_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "ks_module.h"
#include "ks_store.h"
#include "tlr_log.h"

typedef struct ks_sched ks_sched;

/* s and lg borrowed (must outlive the scheduler; lg may be NULL).  On
 * return *out is new and owned: free with ks_sched_free(). */
void ks_sched_create(ks_store *s, tlr_logger *lg, ks_sched **out);
void ks_sched_free(ks_sched *sc);     /* NULL is fine */

typedef struct ks_sched_stats {
    size_t nodes;          /* nodes considered */
    size_t pending;        /* pending pods seen */
    size_t attempted;      /* pending pods filtered this pass */
    size_t bound;          /* ... and bound */
    size_t unschedulable;  /* ... and found no node */
} ks_sched_stats;

/* One scheduling pass.  TLR_OK, or the store's error when it could not be
 * read.  stats (may be NULL) is written on TLR_OK. */
int ks_sched_pass(ks_sched *sc, ks_sched_stats *stats);

typedef struct ks_podlife ks_podlife;

/* start_delay_ms: how long a pod stays Pending after it was first seen
 * bound to a Ready node.  s, lg borrowed.  *out new and owned. */
void ks_podlife_create(ks_store *s, tlr_logger *lg, int64_t start_delay_ms,
                       ks_podlife **out);
void ks_podlife_free(ks_podlife *pl);  /* NULL is fine */
/* One pass; returns the number of pods whose status it changed. */
size_t ks_podlife_pass(ks_podlife *pl);

/* Bind pod ns/name to node as the scheduler does (spec.nodeName and
 * PodScheduled=True in one write).  Errors as ks_pods_bind (ks_hooks.h). */
int ks_sched_bind(ks_store *s, const char *ns, const char *name, const char *node,
                  ks_status *st);

/* Create a core/v1 Event about an object (involved: borrowed, the object
 * it is about).  type "Normal"/"Warning"; component e.g.
 * "default-scheduler".  Best effort: failures are only logged. */
void ks_event_emit(ks_store *s, json_object *involved, const char *type,
                   const char *reason, const char *message, const char *component);

extern const ks_module ks_sched_module;

#endif
