/* pending.h - which pods the watcher hands to the solver.
 *
 * A pod is pending when kube-scheduler tried it and found no node: it has
 * no spec.nodeName, its PodScheduled condition is False with reason
 * Unschedulable, and nothing else will take care of it - Karpenter's
 * IsProvisionable: not owned by a DaemonSet (the DaemonSet controller
 * places those; the solver adds them to new nodes from the template) or by
 * a Node (static pods), not terminating or terminal, not gated, and not
 * nominated (status.nominatedNodeName: a preemption will make room).
 */
#ifndef WATCHER_PENDING_H
#define WATCHER_PENDING_H

#include <stdbool.h>

#include "tailor/v1/pod.pb-c.h"

/* NULL when p (borrowed) is pending; otherwise a static string saying why
 * not ("bound to a node", "owned by a DaemonSet", ...). */
const char *watcher_pending_reason(const Tailor__V1__Pod *p);

/* watcher_pending_reason(p) == NULL. */
bool watcher_pod_pending(const Tailor__V1__Pod *p);

#endif
