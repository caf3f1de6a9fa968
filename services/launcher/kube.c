/* kube.c - lc_kube_ops over tlr_kube (kube.h). */
#include "kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

static const char *jstr(json_object *o, const char *a, const char *b)
{
    json_object *x = NULL, *y = NULL;
    if (!o || !json_object_object_get_ex(o, a, &x))
        return NULL;
    if (!b)
        return json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
    if (!json_object_object_get_ex(x, b, &y) || !json_object_is_type(y, json_type_string))
        return NULL;
    return json_object_get_string(y);
}

void lc_kube_claim_decode(json_object *obj, lc_kclaim *out)
{
    json_object *md = NULL, *st = NULL, *labels = NULL;
    json_object_object_get_ex(obj, "metadata", &md);
    json_object_object_get_ex(obj, "status", &st);
    if (md)
        json_object_object_get_ex(md, "labels", &labels);
    const char *name = jstr(md, "name", NULL);
    const char *pool = jstr(labels, "karpenter.sh/nodepool", NULL);
    const char *pid = jstr(st, "providerID", NULL);
    const char *slash = pid ? strrchr(pid, '/') : NULL;
    int64_t ms = 0;
    const char *ct = jstr(md, "creationTimestamp", NULL);
    if (ct)
        tlr_time_parse(ct, &ms);
    out->name = tlr_strdup(name ? name : "");
    out->nodepool = tlr_strdup(pool ? pool : "");
    out->instance_id = tlr_strdup(slash ? slash + 1 : "");
    out->creation_ms = ms;
    out->deleting = jstr(md, "deletionTimestamp", NULL) != NULL;
}

void lc_kube_node_decode(json_object *obj, lc_node *out)
{
    json_object *md = NULL, *spec = NULL, *st = NULL, *taints = NULL, *conds = NULL;
    json_object_object_get_ex(obj, "metadata", &md);
    json_object_object_get_ex(obj, "spec", &spec);
    json_object_object_get_ex(obj, "status", &st);
    const char *name = jstr(md, "name", NULL);
    const char *pid = jstr(spec, "providerID", NULL);
    memset(out, 0, sizeof(*out));
    out->name = tlr_strdup(name ? name : "");
    out->provider_id = tlr_strdup(pid ? pid : "");
    if (spec && json_object_object_get_ex(spec, "taints", &taints) &&
        json_object_is_type(taints, json_type_array)) {
        size_t n = json_object_array_length(taints);
        out->taint_keys = tlr_calloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
            const char *k = jstr(json_object_array_get_idx(taints, i), "key", NULL);
            if (k)
                out->taint_keys[out->ntaints++] = tlr_strdup(k);
        }
    }
    if (st && json_object_object_get_ex(st, "conditions", &conds) &&
        json_object_is_type(conds, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(conds); i++) {
            json_object *c = json_object_array_get_idx(conds, i);
            const char *t = jstr(c, "type", NULL), *s = jstr(c, "status", NULL);
            if (t && s && strcmp(t, "Ready") == 0)
                out->ready = strcmp(s, "True") == 0;
        }
    }
}

static int k_claim_create(void *arg, const char *name, const char *json)
{
    (void)name;
    json_object *body = json_tokener_parse(json);
    if (!body)
        return TLR_E_INVAL;
    int rc = tlr_kube_create_obj(arg, &TLR_KUBE_RES_NODECLAIMS, NULL, body, NULL, NULL);
    json_object_put(body);
    return rc;
}

static int k_claim_status(void *arg, const char *name, const char *patch)
{
    return tlr_kube_patch(arg, &TLR_KUBE_RES_NODECLAIMS, NULL, name, "status",
                          TLR_KUBE_PATCH_MERGE, patch, NULL, NULL);
}

static int k_claim_delete(void *arg, const char *name)
{
    int rc = tlr_kube_delete(arg, &TLR_KUBE_RES_NODECLAIMS, NULL, name, NULL, NULL);
    return rc;
}

typedef struct collect {
    lc_kclaims *claims;
    lc_nodes *nodes;
    size_t cap;
} collect;

static int on_claim(void *arg, json_object *item)
{
    collect *c = arg;
    TLR_GROW(c->claims->v, c->cap, c->claims->n + 1);
    lc_kube_claim_decode(item, &c->claims->v[c->claims->n++]);
    return TLR_OK;
}

static int on_node(void *arg, json_object *item)
{
    collect *c = arg;
    TLR_GROW(c->nodes->v, c->cap, c->nodes->n + 1);
    lc_kube_node_decode(item, &c->nodes->v[c->nodes->n++]);
    return TLR_OK;
}

static int k_claims_list(void *arg, lc_kclaims *out)
{
    lc_kclaims l = { 0 };
    collect c = { &l, NULL, 0 };
    int rc = tlr_kube_list(arg, &TLR_KUBE_RES_NODECLAIMS, NULL, NULL, on_claim, &c, NULL, NULL);
    if (rc) {
        lc_kclaims_free(&l);
        return rc;
    }
    *out = l;
    return TLR_OK;
}

static int k_nodes_list(void *arg, lc_nodes *out)
{
    lc_nodes l = { 0 };
    collect c = { NULL, &l, 0 };
    int rc = tlr_kube_list(arg, &TLR_KUBE_RES_NODES, NULL, NULL, on_node, &c, NULL, NULL);
    if (rc) {
        lc_nodes_free(&l);
        return rc;
    }
    *out = l;
    return TLR_OK;
}

static int k_event(void *arg, const char *kind, const char *ns, const char *name,
                   const char *uid, const char *type, const char *reason, const char *message)
{
    /* Cluster-scoped objects (NodeClaim) get their events in "default",
     * as kubectl describe expects. */
    const char *evns = ns && ns[0] ? ns : "default";
    int64_t now = tlr_wall_ms();
    char ts[TLR_TIME_BUFLEN], evname[300];
    tlr_time_format_s(now, ts);
    snprintf(evname, sizeof(evname), "%.200s.%llx", name, (unsigned long long)now * 1000 + (unsigned)(random() % 1000));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(o, "kind", json_object_new_string("Event"));
    json_object *md = json_object_new_object();
    json_object_object_add(md, "name", json_object_new_string(evname));
    json_object_object_add(md, "namespace", json_object_new_string(evns));
    json_object_object_add(o, "metadata", md);
    json_object *io = json_object_new_object();
    json_object_object_add(io, "kind", json_object_new_string(kind));
    json_object_object_add(io, "name", json_object_new_string(name));
    if (ns && ns[0])
        json_object_object_add(io, "namespace", json_object_new_string(ns));
    if (uid && uid[0])
        json_object_object_add(io, "uid", json_object_new_string(uid));
    json_object_object_add(io, "apiVersion",
                           json_object_new_string(strcmp(kind, "Pod") == 0 ? "v1" : "karpenter.sh/v1"));
    json_object_object_add(o, "involvedObject", io);
    json_object_object_add(o, "type", json_object_new_string(type));
    json_object_object_add(o, "reason", json_object_new_string(reason));
    json_object_object_add(o, "message", json_object_new_string(message));
    json_object *src = json_object_new_object();
    json_object_object_add(src, "component", json_object_new_string("karpenter"));
    json_object_object_add(o, "source", src);
    json_object_object_add(o, "reportingComponent", json_object_new_string("tailor-launcher"));
    json_object_object_add(o, "firstTimestamp", json_object_new_string(ts));
    json_object_object_add(o, "lastTimestamp", json_object_new_string(ts));
    json_object_object_add(o, "count", json_object_new_int(1));
    int rc = tlr_kube_create_obj(arg, &TLR_KUBE_RES_EVENTS, evns, o, NULL, NULL);
    json_object_put(o);
    return rc;
}

lc_kube_ops lc_kube_ops_of(tlr_kube *kc)
{
    return (lc_kube_ops){ k_claim_create, k_claim_status, k_claim_delete, k_claims_list,
                          k_nodes_list, k_event, kc };
}
