/* lc_kube.c - lc_kube_ops over tlr_kube (lc_kube.h). */
#include "lc_kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube_writeq.h"
#include "tlr_kubeobj.h"
#include "par.h"

struct lc_kube {
    tlr_kube *kc;
    tlr_logger *log;
    int parallel;
    tlr_kube_writeq *events;   /* owned */
};

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
    const char *v = tlr_json_str(o, "spec.clusterIP");
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

static int k_claims_list(void *arg, tlr_kclaims *out)
{
    tlr_kclaims l = { 0 };
    lc_kube *k = arg;
    int rc = tlr_kube_list(k->kc, &TLR_KUBE_RES_NODECLAIMS, NULL, NULL, tlr_kclaims_add_item, &l,
                           NULL, NULL);
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
    lc_kube *k = arg;
    int rc = tlr_kube_list(k->kc, &TLR_KUBE_RES_NODES, NULL, NULL, tlr_knodes_add_item, &l,
                           NULL, NULL);
    if (rc) {
        tlr_knodes_free(&l);
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
