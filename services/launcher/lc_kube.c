/* lc_kube.c - lc_kube_ops over tlr_kube (lc_kube.h). */
#include "lc_kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kube_writeq.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"
#include "tlr_time.h"
#include "par.h"
#include "tlr_labels.h"

struct lc_kube {
    tlr_kube *kc;
    tlr_logger *log;
    int parallel;
    tlr_kube_writeq *events;   /* owned */
};

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
    const char *pool = jstr(labels, TLR_LABEL_NODEPOOL, NULL);
    const char *pid = jstr(st, "providerID", NULL);
    const char *inst = tlr_provider_id_instance(pid);
    int64_t ms = 0;
    const char *ct = jstr(md, "creationTimestamp", NULL);
    if (ct)
        tlr_time_parse(ct, &ms);
    out->name = tlr_strdup(name ? name : "");
    out->nodepool = tlr_strdup(pool ? pool : "");
    out->instance_id = tlr_strdup(inst ? inst : "");
    out->provider_id = tlr_strdup(pid ? pid : "");
    const char *ncl = jstr(labels, TLR_LABEL_NODECLASS, NULL);
    out->nodeclass = tlr_strdup(ncl ? ncl : "");
    out->creation_ms = ms;
    out->deleting = jstr(md, "deletionTimestamp", NULL) != NULL;
    out->initialized = false;
    json_object *conds = NULL;
    if (st && json_object_object_get_ex(st, "conditions", &conds) &&
        json_object_is_type(conds, json_type_array))
        for (size_t i = 0; i < json_object_array_length(conds); i++) {
            json_object *c = json_object_array_get_idx(conds, i);
            const char *t = jstr(c, "type", NULL), *v = jstr(c, "status", NULL);
            if (t && v && strcmp(t, "Initialized") == 0)
                out->initialized = strcmp(v, "True") == 0;
        }
}

/* Resources every node has; what is left in allocatable is an extended
 * resource (a device plugin's). */
static bool basic_resource(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           strcmp(name, "pods") == 0 || strcmp(name, "ephemeral-storage") == 0 ||
           strncmp(name, "hugepages-", 10) == 0 || strncmp(name, "attachable-volumes-", 19) == 0;
}

/* A quantity string that is not zero ("0", "0m", "0Gi" are). */
static bool nonzero_qty(const char *q)
{
    for (; q && *q; q++) {
        if (*q >= '1' && *q <= '9')
            return true;
        if (*q != '0' && *q != '.' && *q != '+')
            return false;   /* the digits are over: a suffix follows */
    }
    return false;
}

void lc_kube_node_decode(json_object *obj, lc_node *out)
{
    json_object *md = NULL, *spec = NULL, *st = NULL, *taints = NULL, *conds = NULL;
    json_object *labels = NULL, *alloc = NULL;
    json_object_object_get_ex(obj, "metadata", &md);
    json_object_object_get_ex(obj, "spec", &spec);
    json_object_object_get_ex(obj, "status", &st);
    const char *name = jstr(md, "name", NULL);
    const char *pid = jstr(spec, "providerID", NULL);
    const char *rv = jstr(md, "resourceVersion", NULL);
    memset(out, 0, sizeof(*out));
    out->name = tlr_strdup(name ? name : "");
    out->provider_id = tlr_strdup(pid ? pid : "");
    out->resource_version = rv ? tlr_strdup(rv) : NULL;
    if (spec && json_object_object_get_ex(spec, "taints", &taints) &&
        json_object_is_type(taints, json_type_array)) {
        size_t n = json_object_array_length(taints);
        out->taints = tlr_calloc(n + 1, sizeof(*out->taints));
        for (size_t i = 0; i < n; i++) {
            json_object *t = json_object_array_get_idx(taints, i);
            const char *k = jstr(t, "key", NULL);
            const char *v = jstr(t, "value", NULL), *e = jstr(t, "effect", NULL);
            if (!k)
                continue;
            out->taints[out->ntaints].key = tlr_strdup(k);
            out->taints[out->ntaints].value = tlr_strdup(v ? v : "");
            out->taints[out->ntaints++].effect = tlr_strdup(e ? e : "");
        }
    }
    if (md && json_object_object_get_ex(md, "labels", &labels) &&
        json_object_is_type(labels, json_type_object)) {
        size_t n = (size_t)json_object_object_length(labels);
        out->label_keys = tlr_calloc(n + 1, sizeof(char *));
        out->label_values = tlr_calloc(n + 1, sizeof(char *));
        json_object_object_foreach(labels, k, v) {
            if (out->nlabels >= n)
                break;
            out->label_keys[out->nlabels] = tlr_strdup(k);
            out->label_values[out->nlabels++] =
                tlr_strdup(json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                     : "");
        }
    }
    if (st && json_object_object_get_ex(st, "allocatable", &alloc) &&
        json_object_is_type(alloc, json_type_object)) {
        size_t n = (size_t)json_object_object_length(alloc);
        out->extended = tlr_calloc(n + 1, sizeof(char *));
        json_object_object_foreach(alloc, k, v) {
            if (out->nextended >= n)
                break;
            if (!basic_resource(k) && nonzero_qty(json_object_get_string(v)))
                out->extended[out->nextended++] = tlr_strdup(k);
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
    lc_kube *k = arg;
    (void)name;
    json_object *body = json_tokener_parse(json);
    if (!body)
        return TLR_E_INVAL;
    int rc = tlr_kube_create_obj(k->kc, &TLR_KUBE_RES_NODECLAIMS, NULL, body, NULL, NULL);
    json_object_put(body);
    return rc;
}

static int k_claim_status(void *arg, const char *name, const char *patch)
{
    lc_kube *k = arg;
    return tlr_kube_patch(k->kc, &TLR_KUBE_RES_NODECLAIMS, NULL, name, "status",
                          TLR_KUBE_PATCH_MERGE, patch, NULL, NULL);
}

static int k_claim_delete(void *arg, const char *name)
{
    lc_kube *k = arg;
    return tlr_kube_delete(k->kc, &TLR_KUBE_RES_NODECLAIMS, NULL, name, NULL, NULL);
}

static int k_claim_patch(void *arg, const char *name, const char *patch)
{
    lc_kube *k = arg;
    return tlr_kube_patch(k->kc, &TLR_KUBE_RES_NODECLAIMS, NULL, name, NULL,
                          TLR_KUBE_PATCH_MERGE, patch, NULL, NULL);
}

static int k_node_patch(void *arg, const char *name, const char *patch)
{
    lc_kube *k = arg;
    return tlr_kube_patch(k->kc, &TLR_KUBE_RES_NODES, NULL, name, NULL, TLR_KUBE_PATCH_MERGE,
                          patch, NULL, NULL);
}

static int k_service_ip(void *arg, const char *ns, const char *name, char **ip)
{
    lc_kube *k = arg;
    static const tlr_kube_res services = { "", "v1", "services", true };
    json_object *o = NULL;
    int rc = tlr_kube_get(k->kc, &services, ns, name, &o, NULL);
    if (rc)
        return rc;
    const char *v = jstr(json_object_object_get(o, "spec"), "clusterIP", NULL);
    rc = v && v[0] && strcmp(v, "None") != 0 ? TLR_OK : TLR_E_NOTFOUND;
    if (rc == TLR_OK)
        *ip = tlr_strdup(v);
    json_object_put(o);
    return rc;
}

static int k_nodeclass_status(void *arg, const char *name, const char *patch)
{
    lc_kube *k = arg;
    return tlr_kube_patch(k->kc, &TLR_KUBE_RES_EC2NODECLASSES, NULL, name, "status",
                          TLR_KUBE_PATCH_MERGE, patch, NULL, NULL);
}

static int k_nodeclass_get(void *arg, const char *name, Tailor__V1__NodeClass **out)
{
    lc_kube *k = arg;
    json_object *o = NULL;
    int rc = tlr_kube_get(k->kc, &TLR_KUBE_RES_EC2NODECLASSES, NULL, name, &o, NULL);
    if (rc)
        return rc;
    char err[256];
    rc = tlr_kubeobj_nodeclass(o, NULL, out, err, sizeof(err));
    if (rc)
        TLR_WARN(k->log, "ec2nodeclass not understood", TLR_S("ec2nodeclass", name),
                 TLR_S("why", err));
    json_object_put(o);
    return rc;
}

typedef struct batch {
    lc_kube *k;
    const char *const *names, *const *bodies;
    int *rcs;
} batch;

static void one_create(void *arg, size_t i, int worker)
{
    batch *b = arg;
    (void)worker;
    b->rcs[i] = k_claim_create(b->k, b->names[i], b->bodies[i]);
}

static void one_status(void *arg, size_t i, int worker)
{
    batch *b = arg;
    (void)worker;
    b->rcs[i] = k_claim_status(b->k, b->names[i], b->bodies[i]);
}

static void one_patch(void *arg, size_t i, int worker)
{
    batch *b = arg;
    (void)worker;
    b->rcs[i] = k_claim_patch(b->k, b->names[i], b->bodies[i]);
}

static void k_claims_patch_n(void *arg, size_t n, const char *const *names,
                             const char *const *patches, int *rcs)
{
    lc_kube *k = arg;
    batch b = { k, names, patches, rcs };
    lc_par_run(n, k->parallel, one_patch, &b);
}

static void k_claims_create_n(void *arg, size_t n, const char *const *names,
                              const char *const *jsons, int *rcs)
{
    lc_kube *k = arg;
    batch b = { k, names, jsons, rcs };
    lc_par_run(n, k->parallel, one_create, &b);
}

static void k_claims_status_n(void *arg, size_t n, const char *const *names,
                              const char *const *patches, int *rcs)
{
    lc_kube *k = arg;
    batch b = { k, names, patches, rcs };
    lc_par_run(n, k->parallel, one_status, &b);
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
    lc_kube *k = arg;
    int rc = tlr_kube_list(k->kc, &TLR_KUBE_RES_NODECLAIMS, NULL, NULL, on_claim, &c, NULL, NULL);
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
    lc_kube *k = arg;
    int rc = tlr_kube_list(k->kc, &TLR_KUBE_RES_NODES, NULL, NULL, on_node, &c, NULL, NULL);
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
    lc_kube *k = arg;
    const tlr_kube_event_spec e = { kind, strcmp(kind, "Pod") == 0 ? "v1" : "karpenter.sh/v1",
                                    ns, name, uid, type, reason, message };
    return tlr_kube_writeq_event(k->events, &e);
}

void lc_kube_create(const lc_kube_opts *o, lc_kube **out)
{
    lc_kube *k = tlr_calloc(1, sizeof(*k));
    k->kc = o->kc;
    k->log = o->log;
    k->parallel = o->parallel > 0 ? o->parallel : 8;
    const tlr_kube_writeq_opts wo = { .kc = o->kc, .log = o->log, .max = o->events_max,
                                      .threads = o->event_threads, .source = "karpenter",
                                      .reporting = "tailor-launcher" };
    tlr_kube_writeq_create(&wo, &k->events);
    *out = k;
}

void lc_kube_free(lc_kube *k)
{
    if (!k)
        return;
    tlr_kube_writeq_free(k->events);
    free(k);
}

size_t lc_kube_events_dropped(lc_kube *k)
{
    return tlr_kube_writeq_dropped(k->events);
}

lc_kube_ops lc_kube_ops_of(lc_kube *k)
{
    return (lc_kube_ops){ k_claim_create, k_claim_status, k_claim_delete, k_claims_list,
                          k_nodes_list, k_event, k_claims_create_n, k_claims_status_n,
                          k_nodeclass_status, k_nodeclass_get, k_claim_patch, k_node_patch,
                          k_service_ip, k_claims_patch_n, k };
}
