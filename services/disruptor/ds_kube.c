/* ds_kube.c - ds_kube_ops over common/kube (ds_kube.h).
 *
 * Lists are read into the structs of tlr_kread.h (common/kubeobj); writes that change a
 * list (finalizers, taints) read the object, change the list and write it
 * back as a merge patch carrying the resourceVersion, so a concurrent
 * writer makes the patch fail with CONFLICT instead of being overwritten
 * (a merge patch replaces a list whole).  Blocking calls, made from the
 * disruptor's loop thread.
 */
#include "ds_kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube_writeq.h"
#include "tlr_time.h"

#define RES_REPLICASETS ((tlr_kube_res){ "apps", "v1", "replicasets", true })
#define RES_STATEFULSETS ((tlr_kube_res){ "apps", "v1", "statefulsets", true })

static tlr_kube_res res_of(ds_kind k)
{
    switch (k) {
    case DS_KIND_NODE:
        return TLR_KUBE_RES_NODES;
    case DS_KIND_NODECLAIM:
        return TLR_KUBE_RES_NODECLAIMS;
    case DS_KIND_NODEPOOL:
        return TLR_KUBE_RES_NODEPOOLS;
    case DS_KIND_NODECLASS:
        return TLR_KUBE_RES_EC2NODECLASSES;
    }
    return TLR_KUBE_RES_NODES;
}

static int k_claims_list(void *arg, tlr_kclaims *out)
{
    tlr_kclaims l = { 0 };
    tlr_kube_res res = TLR_KUBE_RES_NODECLAIMS;
    int rc = tlr_kube_list(arg, &res, NULL, NULL, tlr_kclaims_add_item, &l, NULL, NULL);
    if (rc) {
        tlr_kclaims_free(&l);
        return rc;
    }
    *out = l;
    return TLR_OK;
}

static int k_nodes_list(void *arg, tlr_knodes *out)
{
    tlr_knodes l = { 0 };
    tlr_kube_res res = TLR_KUBE_RES_NODES;
    int rc = tlr_kube_list(arg, &res, NULL, NULL, tlr_knodes_add_item, &l, NULL, NULL);
    if (rc) {
        tlr_knodes_free(&l);
        return rc;
    }
    *out = l;
    return TLR_OK;
}

/* Merge-patch obj's metadata.<field> (or spec.<field>, or status.<field>
 * through the status subresource) array, written whole with the
 * resourceVersion it was read at. */
static int patch_list(tlr_kube *kc, const tlr_kube_res *res, const char *name, json_object *obj,
                      const char *section, const char *field, json_object *list)
{
    const char *rv = tlr_json_str(obj, "metadata.resourceVersion");
    json_object *p = json_object_new_object();
    json_object *md = json_object_new_object();
    if (rv)
        json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(p, "metadata", md);
    json_object *sec = md;
    if (strcmp(section, "metadata")) {
        sec = json_object_new_object();
        json_object_object_add(p, section, sec);
    }
    json_object_object_add(sec, field, list);
    const char *sub = strcmp(section, "status") ? NULL : "status";
    int rc = tlr_kube_patch(kc, res, NULL, name, sub, TLR_KUBE_PATCH_MERGE,
                            tlr_json_to_string(p, JSON_C_TO_STRING_PLAIN), NULL, NULL);
    json_object_put(p);
    return rc;
}

static int k_finalizer(void *arg, ds_kind kind, const char *name, bool add)
{
    tlr_kube_res res = res_of(kind);
    json_object *obj = NULL;
    int rc = tlr_kube_get(arg, &res, NULL, name, &obj, NULL);
    if (rc)
        return rc;
    if (tlr_kread_has_finalizer(obj) == add) {
        json_object_put(obj);
        return TLR_OK;
    }
    if (add && tlr_json_get(obj, "metadata.deletionTimestamp")) {
        json_object_put(obj);   /* a deleting object takes no new finalizers */
        return TLR_OK;
    }
    json_object *list = json_object_new_array();
    json_object *f = tlr_json_arr(obj, "metadata.finalizers");
    for (size_t i = 0; f && i < json_object_array_length(f); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(f, i));
        if (s && strcmp(s, DS_FINALIZER))
            json_object_array_add(list, json_object_new_string(s));
    }
    if (add)
        json_object_array_add(list, json_object_new_string(DS_FINALIZER));
    rc = patch_list(arg, &res, name, obj, "metadata", "finalizers", list);
    json_object_put(obj);
    return rc;
}

static int k_taint(void *arg, const char *node, bool on)
{
    tlr_kube_res res = TLR_KUBE_RES_NODES;
    json_object *obj = NULL;
    int rc = tlr_kube_get(arg, &res, NULL, node, &obj, NULL);
    if (rc)
        return rc;
    json_object *t = tlr_json_arr(obj, "spec.taints");
    json_object *list = json_object_new_array();
    bool had = false;
    size_t nkey = 0;
    for (size_t i = 0; t && i < json_object_array_length(t); i++) {
        json_object *x = json_object_array_get_idx(t, i);
        const char *k = tlr_json_str(x, "key");
        if (k && !strcmp(k, DS_TAINT_KEY)) {
            const char *e = tlr_json_str(x, "effect");
            had = had || (e && !strcmp(e, "NoSchedule"));
            nkey++;
            continue;   /* re-added below with the right effect when on */
        }
        json_object_array_add(list, json_object_get(x));
    }
    if (on ? (had && nkey == 1) : nkey == 0) {
        json_object_put(list);
        json_object_put(obj);
        return TLR_OK;
    }
    if (on) {
        json_object *x = json_object_new_object();
        json_object_object_add(x, "key", json_object_new_string(DS_TAINT_KEY));
        json_object_object_add(x, "effect", json_object_new_string("NoSchedule"));
        json_object_array_add(list, x);
    }
    rc = patch_list(arg, &res, node, obj, "spec", "taints", list);
    json_object_put(obj);
    return rc;
}

static int k_annotate(void *arg, ds_kind kind, const char *name, const char *key,
                      const char *value)
{
    tlr_kube_res res = res_of(kind);
    json_object *p = json_object_new_object();
    json_object *md = json_object_new_object();
    json_object *ann = json_object_new_object();
    json_object_object_add(ann, key, value ? json_object_new_string(value) : NULL);
    json_object_object_add(md, "annotations", ann);
    json_object_object_add(p, "metadata", md);
    int rc = tlr_kube_patch(arg, &res, NULL, name, NULL, TLR_KUBE_PATCH_MERGE,
                            tlr_json_to_string(p, JSON_C_TO_STRING_PLAIN), NULL, NULL);
    json_object_put(p);
    return rc;
}

static int k_remove(void *arg, ds_kind kind, const char *name)
{
    tlr_kube_res res = res_of(kind);
    return tlr_kube_delete(arg, &res, NULL, name, NULL, NULL);
}

static int k_event(void *arg, const char *kind, const char *ns, const char *name,
                   const char *uid, const char *type, const char *reason, const char *message)
{
    const tlr_kube_event_spec e = { kind, strcmp(kind, "NodeClaim") ? "v1" : "karpenter.sh/v1",
                                    ns, name, uid, type, reason, message };
    return tlr_kube_event_write(arg, &e, "karpenter", "tailor-disruptor");
}

static int32_t int_at(json_object *o, const char *path, int32_t def)
{
    int64_t v;
    return tlr_json_int(o, path, &v) == TLR_OK ? (int32_t)v : def;
}

/* Does a Deployment's rolling update add a pod before taking one away? */
static bool deployment_surges(json_object *d, int32_t replicas)
{
    const char *type = tlr_json_str(d, "spec.strategy.type");
    if (type && !strcmp(type, "Recreate"))
        return false;
    json_object *ms = tlr_json_get(d, "spec.strategy.rollingUpdate.maxSurge");
    if (!ms)
        return true;   /* default 25%, rounded up: at least 1 */
    if (json_object_is_type(ms, json_type_int))
        return json_object_get_int(ms) > 0;
    const char *s = json_object_get_string(ms);
    int pct = s ? atoi(s) : 0;
    /* a percentage is rounded up: any positive share of >= 1 replica is >= 1 */
    return pct > 0 && replicas >= 0;
}

static void fill_workload(json_object *o, const char *kind, ds_workload *out)
{
    const char *ann = tlr_json_str(o, "metadata.annotations.tailor\\.sh/restarted-for");
    out->kind = tlr_strdup(kind);
    out->ns = tlr_strdup0(tlr_json_str(o, "metadata.namespace"));
    out->name = tlr_strdup0(tlr_json_str(o, "metadata.name"));
    out->replicas = int_at(o, "spec.replicas", 1);
    out->ready = int_at(o, "status.readyReplicas", 0);
    out->updated = int_at(o, "status.updatedReplicas", 0);
    out->restarted_for = tlr_strdup0(ann);
}

static int k_workload(void *arg, const char *ns, const char *owner_kind, const char *owner_name,
                      ds_workload *out)
{
    memset(out, 0, sizeof(*out));
    tlr_kube_res res;
    if (!strcmp(owner_kind, "ReplicaSet"))
        res = RES_REPLICASETS;
    else if (!strcmp(owner_kind, "StatefulSet"))
        res = RES_STATEFULSETS;
    else if (!strcmp(owner_kind, "Deployment"))
        res = TLR_KUBE_RES_DEPLOYMENTS;
    else
        return TLR_E_NOTFOUND;
    json_object *o = NULL;
    int rc = tlr_kube_get(arg, &res, ns, owner_name, &o, NULL);
    if (rc)
        return rc;
    if (!strcmp(owner_kind, "ReplicaSet")) {
        json_object *refs = tlr_json_arr(o, "metadata.ownerReferences");
        for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
            json_object *r = json_object_array_get_idx(refs, i);
            const char *k = tlr_json_str(r, "kind"), *n = tlr_json_str(r, "name");
            if (!k || strcmp(k, "Deployment") || !n)
                continue;
            json_object *d = NULL;
            tlr_kube_res dr = TLR_KUBE_RES_DEPLOYMENTS;
            if (tlr_kube_get(arg, &dr, ns, n, &d, NULL) == TLR_OK) {
                fill_workload(d, "Deployment", out);
                out->surge = deployment_surges(d, out->replicas);
                json_object_put(d);
                json_object_put(o);
                return TLR_OK;
            }
        }
    }
    fill_workload(o, owner_kind, out);
    if (!strcmp(owner_kind, "Deployment"))
        out->surge = deployment_surges(o, out->replicas);
    json_object_put(o);
    return TLR_OK;
}

static int k_restart(void *arg, const char *ns, const char *deployment, const char *at,
                     const char *reason)
{
    tlr_buf b;
    tlr_buf_init(&b, 2048);
    tlr_buf_adds(&b, "{\"metadata\":{\"annotations\":{\"tailor.sh/restarted-for\":");
    tlr_buf_add_json_str(&b, reason);
    tlr_buf_adds(&b, "}},\"spec\":{\"template\":{\"metadata\":{\"annotations\":"
                     "{\"kubectl.kubernetes.io/restartedAt\":");
    tlr_buf_add_json_str(&b, at);
    tlr_buf_adds(&b, "}}}}}");
    tlr_kube_res res = TLR_KUBE_RES_DEPLOYMENTS;
    int rc = tlr_kube_patch(arg, &res, ns, deployment, NULL, TLR_KUBE_PATCH_MERGE, tlr_buf_str(&b),
                            NULL, NULL);
    tlr_buf_free(&b);
    return rc;
}

static int k_condition(void *arg, const char *claim, const char *type, const char *status,
                       const char *reason, const char *message)
{
    tlr_kube_res res = TLR_KUBE_RES_NODECLAIMS;
    json_object *obj = NULL;
    int rc = tlr_kube_get(arg, &res, NULL, claim, &obj, NULL);
    if (rc)
        return rc;
    json_object *list = json_object_new_array(), *mine = NULL;
    json_object *c = tlr_json_arr(obj, "status.conditions");
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *x = json_object_array_get_idx(c, i);
        const char *t = tlr_json_str(x, "type");
        if (t && !strcmp(t, type))
            mine = x;
        else
            json_object_array_add(list, json_object_get(x));
    }
    if (!status) {   /* remove it */
        rc = mine ? patch_list(arg, &res, claim, obj, "status", "conditions", list) : TLR_OK;
        if (!mine)
            json_object_put(list);
        json_object_put(obj);
        return rc;
    }
    char now[TLR_TIME_BUFLEN];
    tlr_time_format_s(tlr_wall_ms(), now);
    const char *was = mine ? tlr_json_str(mine, "status") : NULL;
    const char *since = mine && was && !strcmp(was, status) ? tlr_json_str(mine, "lastTransitionTime")
                                                            : NULL;
    json_object *x = json_object_new_object();
    json_object_object_add(x, "type", json_object_new_string(type));
    json_object_object_add(x, "status", json_object_new_string(status));
    json_object_object_add(x, "reason", json_object_new_string(reason));
    json_object_object_add(x, "message", json_object_new_string(message ? message : ""));
    json_object_object_add(x, "lastTransitionTime", json_object_new_string(since ? since : now));
    json_object_array_add(list, x);
    rc = patch_list(arg, &res, claim, obj, "status", "conditions", list);
    json_object_put(obj);
    return rc;
}

static int k_status(void *arg, ds_kind kind, const char *name, const char *rv, const char *status)
{
    tlr_kube_res res = res_of(kind);
    json_object *st = NULL;
    int rc = tlr_json_parse(status, strlen(status), strlen(status) + 1, &st, NULL, 0);
    if (rc)
        return rc;
    json_object *p = json_object_new_object(), *md = json_object_new_object();
    if (rv && rv[0])
        json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(p, "metadata", md);
    json_object_object_add(p, "status", st);
    rc = tlr_kube_patch(arg, &res, NULL, name, "status", TLR_KUBE_PATCH_MERGE,
                        tlr_json_to_string(p, JSON_C_TO_STRING_PLAIN), NULL, NULL);
    json_object_put(p);
    return rc;
}

ds_kube_ops ds_kube_ops_of(tlr_kube *kc)
{
    return (ds_kube_ops){ .claims_list = k_claims_list, .nodes_list = k_nodes_list,
                          .finalizer = k_finalizer, .taint = k_taint, .annotate = k_annotate,
                          .remove = k_remove, .event = k_event, .workload = k_workload,
                          .restart = k_restart, .condition = k_condition, .status = k_status,
                          .arg = kc };
}

void ds_workload_clear(ds_workload *w)
{
    if (!w)
        return;
    free(w->kind);
    free(w->ns);
    free(w->name);
    free(w->restarted_for);
    memset(w, 0, sizeof(*w));
}
