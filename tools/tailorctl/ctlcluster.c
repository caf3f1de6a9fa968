/* ctlcluster.c - a live cluster as tailor.v1 protos (ctlcluster.h). */
#include "ctlcluster.h"

#include "ctlprogress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"

#define PUSH(arr, n, x)                                         \
    do {                                                        \
        (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); \
        (arr)[(n)++] = (x);                                     \
    } while (0)

typedef struct cc_list {
    ctl_cluster *c;
    const ctl_cluster_opts *o;
    unsigned kind;     /* one CTL_* */
    const char *name;  /* its Kind, for the warnings */
    size_t seen;
} cc_list;

/* One listed object: converted and appended, or skipped with a warning. */
static int cc_on_item(void *arg, json_object *item)
{
    cc_list *l = arg;
    ctl_cluster *c = l->c;
    char err[TLR_KUBEOBJ_ERRLEN], what[256];
    size_t el = sizeof(err);
    void *m = NULL;
    int rc;
    ctl_progress_set(l->o->progress, ++l->seen);
    switch (l->kind) {
    case CTL_NODEPOOLS:
        rc = tlr_kubeobj_nodepool(item, NULL, (Tailor__V1__NodePool **)&m, err, el);
        break;
    case CTL_NODECLASSES:
        rc = tlr_kubeobj_nodeclass(item, NULL, (Tailor__V1__NodeClass **)&m, err, el);
        break;
    case CTL_NODES:
        rc = tlr_kubeobj_node(item, NULL, (Tailor__V1__Node **)&m, err, el);
        break;
    case CTL_PODS:
        rc = tlr_kubeobj_pod(item, &(tlr_kubeobj_opts){ .compact = l->o->compact_pods },
                             (Tailor__V1__Pod **)&m, err, el);
        break;
    case CTL_DAEMONSETS:
        rc = tlr_kubeobj_daemonset(item, NULL, (Tailor__V1__DaemonSet **)&m, err, el);
        break;
    case CTL_PDBS:
        rc = tlr_kubeobj_pdb(item, NULL, (Tailor__V1__PodDisruptionBudget **)&m, err, el);
        break;
    default:
        rc = tlr_kubeobj_nodeclaim(item, NULL, (Tailor__V1__NodeClaim **)&m, err, el);
        break;
    }
    if (rc != TLR_OK) {
        tlr_kubeobj_describe(item, what, sizeof(what));
        fprintf(stderr, "tailorctl %s: warning: skipping %s %s: %s\n", l->o->cmd, l->name, what,
                err);
        return TLR_OK;
    }
    switch (l->kind) {
    case CTL_NODEPOOLS: PUSH(c->pools, c->npools, m); break;
    case CTL_NODECLASSES: PUSH(c->classes, c->nclasses, m); break;
    case CTL_NODES: PUSH(c->nodes, c->nnodes, m); break;
    case CTL_PODS: PUSH(c->pods, c->npods, m); break;
    case CTL_DAEMONSETS: PUSH(c->ds, c->nds, m); break;
    case CTL_PDBS: PUSH(c->pdbs, c->npdbs, m); break;
    default: PUSH(c->claims, c->nclaims, m); break;
    }
    return TLR_OK;
}

int ctl_cluster_load(tlr_kube *kc, const ctl_cluster_opts *o, ctl_cluster *out, char *err,
                     size_t errlen)
{
    static const struct {
        unsigned kind;
        tlr_kube_res res;
        const char *name;
        bool optional;
    } kinds[] = {
        { CTL_NODEPOOLS, TLR_KUBE_RES_NODEPOOLS, "NodePool", true },
        { CTL_NODECLASSES, TLR_KUBE_RES_EC2NODECLASSES, "EC2NodeClass", true },
        { CTL_NODES, TLR_KUBE_RES_NODES, "Node", false },
        { CTL_PODS, TLR_KUBE_RES_PODS, "Pod", false },
        { CTL_DAEMONSETS, TLR_KUBE_RES_DAEMONSETS, "DaemonSet", true },
        { CTL_PDBS, TLR_KUBE_RES_PDBS, "PodDisruptionBudget", false },
        { CTL_NODECLAIMS, TLR_KUBE_RES_NODECLAIMS, "NodeClaim", true },
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (!(o->kinds & kinds[i].kind))
            continue;
        cc_list l = { out, o, kinds[i].kind, kinds[i].name, 0 };
        tlr_kube_status st = { 0 };
        char step[64];
        snprintf(step, sizeof(step), "listing %s", kinds[i].res.plural);
        ctl_progress_step(o->progress, step, 0);
        tlr_kube_list_opts lo = { .label_selector =
                                      kinds[i].kind == CTL_NODES ? o->node_selector : NULL };
        int rc = tlr_kube_list(kc, &kinds[i].res, NULL, &lo, cc_on_item, &l, NULL, &st);
        ctl_progress_end(o->progress, rc == TLR_OK ? NULL
                                      : rc == TLR_E_NOTFOUND && kinds[i].optional
                                      ? "not installed" : tlr_strerror(rc));
        if (rc == TLR_E_NOTFOUND && kinds[i].optional)
            continue;   /* the CRD is not installed: none of that kind */
        if (rc != TLR_OK) {
            snprintf(err, errlen, "listing %s: %s%s%.300s", kinds[i].res.plural,
                     tlr_strerror(rc), st.message[0] ? ": " : "", st.message);
            return rc;
        }
    }
    return TLR_OK;
}

void ctl_cluster_free(ctl_cluster *c)
{
#define FREE_ALL(a, n)                  \
    for (size_t i_ = 0; i_ < (n); i_++) \
        tlr_kubeobj_free((a)[i_]);      \
    free(a)
    FREE_ALL(c->pools, c->npools);
    FREE_ALL(c->classes, c->nclasses);
    FREE_ALL(c->nodes, c->nnodes);
    FREE_ALL(c->pods, c->npods);
    FREE_ALL(c->ds, c->nds);
    FREE_ALL(c->pdbs, c->npdbs);
    FREE_ALL(c->claims, c->nclaims);
#undef FREE_ALL
    memset(c, 0, sizeof(*c));
}

int ctl_server_version(tlr_kube *kc, char *out, size_t len)
{
    json_object *v = NULL;
    int rc = tlr_kube_request(kc, "GET", "/version", NULL, NULL, &v, NULL);
    if (rc != TLR_OK)
        return rc;
    const char *major = tlr_json_str(v, "major"), *minor = tlr_json_str(v, "minor");
    rc = TLR_E_NOTFOUND;
    if (major && minor && major[0] && minor[0]) {
        snprintf(out, len, "%s.%.*s", major, (int)strspn(minor, "0123456789"), minor);
        rc = TLR_OK;
    }
    json_object_put(v);
    return rc;
}
