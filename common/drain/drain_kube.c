/* drain_kube.c - tlr_drain_ops over a Kubernetes client (tlr_drain.h).
 *
 * Pods come back in full form (tlr_kubeobj_pod): the drain needs their
 * priority class, tolerations, owners and grace period.  A pod the
 * converter refuses (a malformed quantity, say) is still drained: it is
 * kept with its identity only, so a bad object can never make a node
 * undrainable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_drain.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kube.h"
#include "tlr_kubeobj.h"

typedef struct collect {
    void **v;
    size_t n, cap;
    bool pdb;
} collect;

/* A pod reduced to what identifies it, when the converter refused it. */
static Tailor__V1__Pod *bare_pod(json_object *item)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    tailor__v1__pod__init(p);
    const char *ns = tlr_json_str(item, "metadata.namespace");
    const char *name = tlr_json_str(item, "metadata.name");
    const char *uid = tlr_json_str(item, "metadata.uid");
    p->namespace_ = tlr_strdup(ns ? ns : "");
    p->name = tlr_strdup(name ? name : "");
    p->uid = tlr_strdup(uid ? uid : "");
    p->termination_grace_period_ms = 30000;
    return p;
}

static int on_item(void *arg, json_object *item)
{
    collect *c = arg;
    char err[TLR_KUBEOBJ_ERRLEN];
    void *m = NULL;
    if (c->pdb) {
        Tailor__V1__PodDisruptionBudget *b = NULL;
        if (tlr_kubeobj_pdb(item, NULL, &b, err, sizeof(err)) != TLR_OK)
            return TLR_OK;   /* an unreadable PDB names nothing */
        m = b;
    } else {
        Tailor__V1__Pod *p = NULL;
        if (tlr_kubeobj_pod(item, NULL, &p, err, sizeof(err)) != TLR_OK)
            p = bare_pod(item);
        m = p;
    }
    TLR_GROW(c->v, c->cap, c->n + 1);
    c->v[c->n++] = m;
    return TLR_OK;
}

static int k_list_pods(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n)
{
    char sel[300];
    snprintf(sel, sizeof(sel), "spec.nodeName=%s", node);
    tlr_kube_list_opts lo = { .field_selector = sel };
    collect c = { 0 };
    tlr_kube_res res = TLR_KUBE_RES_PODS;
    int rc = tlr_kube_list(arg, &res, NULL, &lo, on_item, &c, NULL, NULL);
    if (rc) {
        for (size_t i = 0; i < c.n; i++)
            tlr_kubeobj_free(c.v[i]);
        free(c.v);
        return rc;
    }
    *pods = (Tailor__V1__Pod **)c.v;
    *n = c.n;
    return TLR_OK;
}

static int k_list_pdbs(void *arg, Tailor__V1__PodDisruptionBudget ***pdbs, size_t *n)
{
    collect c = { .pdb = true };
    tlr_kube_res res = TLR_KUBE_RES_PDBS;
    int rc = tlr_kube_list(arg, &res, NULL, NULL, on_item, &c, NULL, NULL);
    if (rc) {
        for (size_t i = 0; i < c.n; i++)
            tlr_kubeobj_free(c.v[i]);
        free(c.v);
        return rc;
    }
    *pdbs = (Tailor__V1__PodDisruptionBudget **)c.v;
    *n = c.n;
    return TLR_OK;
}

static int k_evict(void *arg, const Tailor__V1__Pod *pod, char *msg, size_t len)
{
    char path[1024];
    tlr_kube_res res = TLR_KUBE_RES_PODS;
    int rc = tlr_kube_path(&res, pod->namespace_, pod->name, "eviction", path, sizeof(path));
    if (rc)
        return rc;
    tlr_buf b;
    tlr_buf_init(&b, 4096);
    tlr_buf_adds(&b, "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":");
    tlr_buf_add_json_str(&b, pod->name);
    tlr_buf_adds(&b, ",\"namespace\":");
    tlr_buf_add_json_str(&b, pod->namespace_);
    tlr_buf_adds(&b, "}");
    if (pod->uid[0]) {
        tlr_buf_adds(&b, ",\"deleteOptions\":{\"preconditions\":{\"uid\":");
        tlr_buf_add_json_str(&b, pod->uid);
        tlr_buf_adds(&b, "}}");
    }
    tlr_buf_adds(&b, "}");
    tlr_kube_status st = { 0 };
    rc = tlr_kube_request(arg, "POST", path, NULL, tlr_buf_str(&b), NULL, &st);
    tlr_buf_free(&b);
    if (rc && msg && len)
        snprintf(msg, len, "%s", st.message);
    return rc;
}

static int k_delete(void *arg, const Tailor__V1__Pod *pod, int64_t grace_s, char *msg, size_t len)
{
    char path[1024];
    tlr_kube_res res = TLR_KUBE_RES_PODS;
    int rc = tlr_kube_path(&res, pod->namespace_, pod->name, NULL, path, sizeof(path));
    if (rc)
        return rc;
    tlr_buf b;
    tlr_buf_init(&b, 1024);
    tlr_buf_printf(&b, "{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"gracePeriodSeconds\":%lld",
                   (long long)grace_s);
    if (pod->uid[0]) {
        tlr_buf_adds(&b, ",\"preconditions\":{\"uid\":");
        tlr_buf_add_json_str(&b, pod->uid);
        tlr_buf_adds(&b, "}");
    }
    tlr_buf_adds(&b, "}");
    tlr_kube_status st = { 0 };
    rc = tlr_kube_request(arg, "DELETE", path, NULL, tlr_buf_str(&b), NULL, &st);
    tlr_buf_free(&b);
    if (rc == TLR_E_CONFLICT)
        rc = TLR_E_NOTFOUND;   /* another pod by that name now: ours is gone */
    if (rc && msg && len)
        snprintf(msg, len, "%s", st.message);
    return rc;
}

tlr_drain_ops tlr_drain_kube_ops(tlr_kube *kc)
{
    return (tlr_drain_ops){ .list_pods = k_list_pods, .list_pdbs = k_list_pdbs,
                            .evict = k_evict, .delete_pod = k_delete, .arg = kc };
}
