/* pending.c - the pending-pod predicate (see pending.h). */
#include <stddef.h>
#include <string.h>

#include "pending.h"

static bool owned_by(const Tailor__V1__Pod *p, const char *kind)
{
    for (size_t i = 0; i < p->n_owners; i++)
        if (p->owners[i]->controller && p->owners[i]->kind && !strcmp(p->owners[i]->kind, kind))
            return true;
    return false;
}

const char *watcher_pending_reason(const Tailor__V1__Pod *p)
{
    if (p->node_name && p->node_name[0])
        return "bound to a node";
    if (p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED ||
        p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_FAILED)
        return "terminal";
    if (p->deletion_unix_ms != 0)
        return "terminating";
    if (p->n_scheduling_gates > 0)
        return "scheduling gated";
    if (!p->unschedulable)
        return "not marked Unschedulable by the scheduler";
    if (p->is_daemonset || owned_by(p, "DaemonSet"))
        return "owned by a DaemonSet";
    if (owned_by(p, "Node"))
        return "static pod (owned by a Node)";
    if (p->nominated_node_name && p->nominated_node_name[0])
        return "nominated to a node (preemption under way)";
    return NULL;
}

bool watcher_pod_pending(const Tailor__V1__Pod *p)
{
    return watcher_pending_reason(p) == NULL;
}
