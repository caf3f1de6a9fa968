/* podmetrics.h - Karpenter's per-pod metrics (its metrics.pod controller).
 *
 * karpenter_pods_state (one series per pod, value 1, labelled with the
 * pod's owner, node, phase and readiness and its Node's pool, zone, arch,
 * capacity type and instance type); karpenter_pods_unbound_time_seconds
 * and karpenter_pods_unstarted_time_seconds (one series per pod that is
 * not bound / not started yet: seconds since its creation); and the
 * observations made when a pod binds (karpenter_pods_bound_duration_seconds)
 * or becomes Ready after it was seen Pending
 * (karpenter_pods_startup_duration_seconds, a summary).
 *
 * Pod events come from the informer (watcher_podmetrics_apply), so no
 * transition is missed between two passes; the series are set between a
 * mark and a sweep every pass (watcher_podmetrics_update), so a pod that
 * was bound, started or deleted loses its series at the next pass.
 */
#ifndef WATCHER_PODMETRICS_H
#define WATCHER_PODMETRICS_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cache.h"
#include "tlr_kube.h"
#include "tlr_metrics.h"

/* Series ceiling of the per-pod families: the watcher is sized for 100k
 * pods. */
#define WATCHER_PODMETRICS_MAX_PODS 150000

typedef struct watcher_podmetrics watcher_podmetrics;

/* Registers the families in m (borrowed; must outlive *out).  *out is new
 * and owned: watcher_podmetrics_free() it. */
void watcher_podmetrics_create(tlr_metrics *m, watcher_podmetrics **out);
void watcher_podmetrics_free(watcher_podmetrics *pm);    /* NULL is fine */

/* One pod informer event (obj borrowed; NULL for RELIST_*).  A pod whose
 * JSON lacks a name is ignored (the cache reports it).  now_ms: wall
 * clock, Unix ms; used when a condition has no lastTransitionTime. */
void watcher_podmetrics_apply(watcher_podmetrics *pm, tlr_kube_event_type type, json_object *obj,
                              int64_t now_ms);

/* The launcher's decision for a pod (the "decisions" topic; strings
 * borrowed), made at at_ms (its wall clock, Unix ms).  Ignored for a pod
 * not known, of another uid, or bound already. */
void watcher_podmetrics_decided(watcher_podmetrics *pm, const char *ns, const char *name,
                                const char *uid, bool scheduled, int64_t at_ms);

/* Set every per-pod series from the pods known now (Node labels from c,
 * borrowed) and drop the series of pods that are gone, bound or started. */
void watcher_podmetrics_update(watcher_podmetrics *pm, const watcher_cache *c, int64_t now_ms);

/* Pods tracked (tests). */
size_t watcher_podmetrics_count(const watcher_podmetrics *pm);

#endif
