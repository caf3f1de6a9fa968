/* interruption.h - EC2 interruption events from SQS, as EventBridge
 * delivers them (Karpenter's interruption controller).
 *
 * Events (the EventBridge envelope's detail-type):
 *   EC2 Spot Instance Interruption Warning   the instance goes 2 minutes
 *                                            after the event time
 *   AWS Health Event (scheduledChange)       maintenance will stop it
 *   EC2 Instance State-change Notification   stopping, stopped,
 *                                            shutting-down, terminated
 *   EC2 Instance Rebalance Recommendation    a higher interruption risk
 * For the first three the node is replaced ahead of time, forcefully (no
 * budget, no candidate filter):
 *   1. replacement capacity is launched first: a Simulate without the
 *      node (the interrupted spot offering marked unavailable, so the new
 *      node is not in the same pool) says what the node's pods need; the
 *      launcher gets those NodeClaims with the offering in its ICE cache;
 *   2. the node is tainted karpenter.sh/disrupted:NoSchedule;
 *   3. the drain deadline is set: for a spot warning two minutes after the
 *      event less margin_ms (so every pod is gone before the instance
 *      is), for a stopping/terminated instance now; the termination
 *      controller then forces what PDBs still hold;
 *   4. the NodeClaim is deleted (termination drains, terminates,
 *      releases) and a Warning Event on the Node and NodeClaim says why.
 * A rebalance recommendation only gets an Event (Karpenter's behaviour),
 * unless rebalance_drains.  Messages about instances tailor does not
 * manage, of other kinds, or that do not parse are deleted (and logged):
 * a queue never fills with what nobody will read.  A message is deleted
 * once handled; one that failed midway comes back after its visibility
 * timeout and is handled again (every step is idempotent).
 */
#ifndef DS_INTERRUPTION_H
#define DS_INTERRUPTION_H

#include <stdbool.h>
#include <stdint.h>

#include "ds_ops.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tlr_log.h"
#include "tlr_metrics.h"
#include "tlr_time.h"

typedef enum ds_intr_kind {
    DS_INTR_NONE = 0,          /* not an event we act on */
    DS_INTR_SPOT,
    DS_INTR_SCHEDULED,
    DS_INTR_STATE,             /* stopping / stopped / shutting-down / terminated */
    DS_INTR_REBALANCE,
} ds_intr_kind;

typedef struct ds_intr_msg {
    ds_intr_kind kind;
    char instance[64];
    char state[32];            /* DS_INTR_STATE */
    char type[96];             /* detail-type */
    int64_t time_ms;           /* the event's time; 0 unknown */
} ds_intr_msg;

/* Parse one EventBridge event (JSON).  TLR_OK with kind NONE for events
 * of other kinds or states; TLR_E_PARSE (err says why) for what is not
 * such an event. */
int ds_intr_parse(const char *body, ds_intr_msg *out, char *err, size_t len);
/* "spot_interrupted", "scheduled_change", "instance_stopping", ...
 * (metric label values, as Karpenter's message_type). */
const char *ds_intr_kind_name(ds_intr_kind k, const char *state);

typedef struct ds_intr_opts {
    const tlr_clock *clock;
    ds_kube_ops kube;
    ds_launcher_ops launcher;
    ds_solver_ops solver;
    ds_watcher_ops watcher;
    ds_cloud_ops cloud;
    /* the pods of a node in full form (tlr_drain_ops.list_pods), so the
     * simulation sees their constraints; may be NULL */
    int (*full_pods)(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n);
    void *full_pods_arg;
    const Tailor__V1__Catalog *catalog;   /* borrowed; NULL: no replacement simulation */
    bool rebalance_drains;
    int64_t margin_ms;                    /* 0 = 20000 */
    tlr_logger *log;
    tlr_metrics *metrics;
    void (*publish)(void *arg, const Tailor__V1__DisruptionEvent *ev);
    void *publish_arg;
} ds_intr_opts;

typedef struct ds_intr ds_intr;
void ds_intr_create(const ds_intr_opts *o, ds_intr **out);   /* owned */
void ds_intr_free(ds_intr *i);
/* As ds_ctl_set_catalog. */
void ds_intr_set_catalog(ds_intr *i, const Tailor__V1__Catalog *cat);

typedef struct ds_intr_stats {
    int received, handled, ignored, failed, replacements;
} ds_intr_stats;

/* Read the queue once and handle what came. */
int ds_intr_pass(ds_intr *i, ds_intr_stats *st);

#endif
