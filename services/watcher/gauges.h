/* gauges.h - Karpenter's cluster-state gauges, computed from the cache.
 *
 * The watcher is the only process that sees every Node, pod and NodePool,
 * so it owns the gauges Karpenter's metrics.node, metrics.nodepool and
 * state controllers expose (docs/metrics.md): per Node allocatable,
 * system overhead, pod and DaemonSet pod requests and lifetime; per
 * NodePool limits and usage; cluster utilization, node count and sync.
 * Same names, label names and label values as Karpenter v1.14.
 */
#ifndef WATCHER_GAUGES_H
#define WATCHER_GAUGES_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "tlr_metrics.h"

typedef struct watcher_gauges watcher_gauges;

/* Registers the families in m (borrowed; must outlive *out).  *out is new
 * and owned: watcher_gauges_free() it. */
void watcher_gauges_create(tlr_metrics *m, watcher_gauges **out);
void watcher_gauges_free(watcher_gauges *g);    /* NULL is fine */

/* Recompute every gauge from the cache (borrowed, not changed): series of
 * Nodes and NodePools that are gone are removed.  synced: every informer
 * has listed; now_ms: wall clock, Unix ms.  Unpacks each bound pod once
 * (a scratch arena, freed on return). */
void watcher_gauges_update(watcher_gauges *g, const watcher_cache *c, bool synced, int64_t now_ms);

#endif
