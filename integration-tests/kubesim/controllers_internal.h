/* controllers_internal.h - what the controller files share inside one
 * pass (controllers.c, controllers_sets.c).  Not for other modules.
 */
#ifndef KS_CONTROLLERS_INTERNAL_H
#define KS_CONTROLLERS_INTERNAL_H

#include <json-c/linkhash.h>

#include "controllers.h"

/* What controllers need of a pod, cached by uid and resourceVersion. */
typedef struct ctl_pod_info {
    char    *uid;
    uint64_t rv;
    uint64_t pass;
    ks_ctl_pod rank;       /* name borrowed from the pass's pod list */
    bool     active;       /* not terminating, not Succeeded/Failed */
    char    *target_node;  /* DaemonSet pods: nodeName or the pinned node */
} ctl_pod_info;

/* An array of borrowed objects (the pods of one owner). */
typedef struct ctl_objs {
    ks_obj **v;
    size_t n, cap;
} ctl_objs;

struct ks_ctl {
    ks_store *s;
    tlr_logger *lg;
    ks_resnames *names;
    struct lh_table *pods;    /* uid -> ctl_pod_info */
    uint64_t pass;
    uint64_t rng;
};

/* One pass's listings and indexes. */
typedef struct ctl_pass {
    ks_ctl *c;
    ks_objlist pods, rss, deps, stss, dss, nodes;
    struct lh_table *by_owner;   /* controller uid -> ctl_objs (pods, and RSs of Deployments) */
    size_t writes;
    int64_t now_ms;
} ctl_pass;

/* The objects owned (as controller) by uid; never NULL. */
const ctl_objs *ctl_owned(ctl_pass *p, const char *uid);
/* The cached summary of pod o. */
ctl_pod_info *ctl_pod(ctl_pass *p, const ks_obj *o);
/* Whether the pod is available: Ready for at least min_ready_s seconds. */
bool ctl_available(const ctl_pass *p, const ctl_pod_info *pi, int64_t min_ready_s);

/* Create a pod from template (borrowed) owned by owner (borrowed, the
 * controller object with apiVersion/kind/metadata).  name: the full name,
 * or NULL for generateName OWNER-xxxxx.  extra_labels (may be NULL) are
 * added; prepare (may be NULL) edits the new pod's spec. */
void ctl_create_pod(ctl_pass *p, json_object *owner, json_object *tmpl, const char *name,
                    json_object *extra_labels,
                    void (*prepare)(json_object *spec, const void *arg), const void *arg);
/* Delete an object (background propagation, default grace). */
void ctl_delete(ctl_pass *p, ks_kind_id kind, const char *ns, const char *name);
/* Replace status.KEY for each key with vals (and status.observedGeneration
 * with the object's generation); writes only when something changed. */
void ctl_set_status(ctl_pass *p, ks_kind_id kind, const char *ns, const char *name,
                    const char *const *keys, const int64_t *vals, size_t n);

/* Same, also setting each member of extra (borrowed; may be NULL). */
void ctl_set_status_extra(ctl_pass *p, ks_kind_id kind, const char *ns, const char *name,
                          const char *const *keys, const int64_t *vals, size_t n,
                          json_object *extra);

void ctl_statefulsets(ctl_pass *p);
void ctl_daemonsets(ctl_pass *p);

#endif
