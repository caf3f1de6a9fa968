/* report.h - telling users about the objects the watcher cannot use as
 * written.
 *
 * The watcher converts every object it reads (common/kubeobj).  Two
 * things can go wrong, and both must reach whoever runs `kubectl describe`
 * or `kubectl get events`, not only the watcher's log:
 *
 *   - a field tailor accepts but does not act on (a kubeobj warning):
 *     a Warning Event, reason IgnoredField, and a log line;
 *   - an object that makes no sense (a kubeobj error): a Warning Event,
 *     reason FailedValidation, and a log line; for a NodePool or an
 *     EC2NodeClass also the status conditions Karpenter's validation
 *     controllers write, ValidationSucceeded=False (reason
 *     NodePoolValidationFailed / NodeClassValidationFailed, the message
 *     naming object and field as `tailorctl validate` prints it) and
 *     Ready=False (UnhealthyDependents).
 *
 * Each message is said once per object generation (metadata.generation,
 * which only spec changes bump): a relist, a status update - our own
 * condition patch included - or a resync does not repeat it; an edit
 * that keeps the problem does.  The objects with something to say are
 * remembered (at most max_objects; past it the memory is cleared and a
 * message may be said again); the invalid ones make the error state,
 * counted by kind.  When an invalid object converts again it leaves the
 * error state, and the watcher sets ValidationSucceeded=True again where
 * it had set it False (Ready is the disruptor's, for NodePools, and the
 * launcher's, for EC2NodeClasses, which recompute it).
 *
 * Writes go through ops, which must not block (main.c queues them on a
 * tlr_kube_writeq); status patches carry the object's resourceVersion, so
 * a stale one fails rather than overwrites, and a condition already as
 * wanted is not written again.  Everything runs on the loop thread.
 */
#ifndef WATCHER_REPORT_H
#define WATCHER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "tailor/v1/watcher.pb-c.h"
#include "tlr_kube.h"
#include "tlr_kube_writeq.h"
#include "tlr_log.h"

typedef struct watcher_report_ops {
    /* Queue an Event (e and its strings borrowed for the call). */
    int (*event)(void *arg, const tlr_kube_event_spec *e);
    /* Queue a JSON merge patch of res's object name, subresource status
     * (res static, the rest borrowed for the call). */
    int (*status)(void *arg, const tlr_kube_res *res, const char *name, const char *patch);
    void *arg;
} watcher_report_ops;

typedef struct watcher_report_opts {
    watcher_report_ops ops;
    tlr_logger *log;           /* borrowed; NULL: nothing logged */
    size_t max_objects;        /* objects remembered; 0: 10000 */
    int64_t (*now_ms)(void);   /* wall clock, Unix ms; NULL: tlr_wall_ms */
} watcher_report_opts;

typedef struct watcher_report watcher_report;

/* o is borrowed.  *out is new and owned: watcher_report_free() it. */
void watcher_report_create(const watcher_report_opts *o, watcher_report **out);
void watcher_report_free(watcher_report *r);          /* NULL is fine */

/* obj (borrowed) of kind converted with the kubeobj warning msg. */
void watcher_report_ignored(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj,
                            const char *msg);
/* obj did not convert: err is kubeobj's "<Kind> <name>: <field>: <why>". */
void watcher_report_invalid(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj,
                            const char *err);
/* obj converted: it leaves the error state. */
void watcher_report_valid(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj);
/* obj was deleted: forget it. */
void watcher_report_deleted(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj);

/* A relist of kind starts (done false) or ended (done true): what it did
 * not see is forgotten, as deleted. */
void watcher_report_relist(watcher_report *r, Tailor__V1__ClusterKind kind, bool done);

/* Objects of kind in the error state now. */
size_t watcher_report_invalid_count(const watcher_report *r, Tailor__V1__ClusterKind kind);

#endif
