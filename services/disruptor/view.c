/* view.c - the per-pass cluster view (view.h). */
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>

#include "tlr_alloc.h"
#include "tlr_drain.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

/* ---- pod removals ------------------------------------------------------- */

struct ds_podevents {
    struct lh_table *t;     /* node name -> int64_t * */
    int64_t start_ms;
};

static void ev_free(struct lh_entry *e)
{
    free((void *)lh_entry_k(e));
    free(lh_entry_v(e));
}

void ds_podevents_create(int64_t start_ms, ds_podevents **out)
{
    ds_podevents *e = tlr_calloc(1, sizeof(*e));
    e->t = lh_kchar_table_new(256, ev_free);
    e->start_ms = start_ms;
    *out = e;
}

void ds_podevents_free(ds_podevents *e)
{
    if (!e)
        return;
    lh_table_free(e->t);
    free(e);
}

void ds_podevents_note(ds_podevents *e, const char *node, int64_t at_ms)
{
    if (!node || !node[0])
        return;
    void *v = NULL;
    if (lh_table_lookup_ex(e->t, node, &v)) {
        int64_t *p = v;
        if (at_ms > *p)
            *p = at_ms;
        return;
    }
    int64_t *p = tlr_malloc(sizeof(*p));
    *p = at_ms;
    lh_table_insert(e->t, tlr_strdup(node), p);
}

int64_t ds_podevents_last(const ds_podevents *e, const char *node)
{
    if (!e)
        return 0;
    void *v = NULL;
    if (node && lh_table_lookup_ex(e->t, node, &v) && *(int64_t *)v > e->start_ms)
        return *(int64_t *)v;
    return e->start_ms;
}

/* ---- catalog ------------------------------------------------------------- */

static int type_cmp(const void *key, const void *elem)
{
    const Tailor__V1__InstanceType *t = *(const Tailor__V1__InstanceType *const *)elem;
    return strcmp(key, t->name);
}

const Tailor__V1__InstanceType *ds_catalog_type(const Tailor__V1__Catalog *c, const char *type)
{
    if (!c || !type || !type[0])
        return NULL;
    Tailor__V1__InstanceType **hit =
        bsearch(type, c->instance_types, c->n_instance_types, sizeof(*c->instance_types), type_cmp);
    if (hit)
        return *hit;
    for (size_t i = 0; i < c->n_instance_types; i++)   /* an unsorted catalog */
        if (!strcmp(c->instance_types[i]->name, type))
            return c->instance_types[i];
    return NULL;
}

double ds_catalog_price(const Tailor__V1__Catalog *c, const char *type, const char *zone,
                        Tailor__V1__CapacityType ct)
{
    const Tailor__V1__InstanceType *t = ds_catalog_type(c, type);
    if (!t)
        return 0;
    if (ct == TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_UNSPECIFIED)
        ct = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
    double any = 0;
    for (size_t i = 0; i < t->n_offerings; i++) {
        const Tailor__V1__Offering *o = t->offerings[i];
        if (o->capacity_type != ct)
            continue;
        if (zone && !strcmp(o->zone, zone))
            return o->price_per_hour;
        if (!any)
            any = o->price_per_hour;
    }
    return any;
}

/* ---- view ---------------------------------------------------------------- */

bool ds_pod_moves(const Tailor__V1__Pod *p)
{
    return !p->is_daemonset && !tlr_drain_pod_terminal(p) && !tlr_drain_pod_mirror(p);
}

static bool claim_initialized(const Tailor__V1__NodeClaim *c)
{
    if (!c->status)
        return false;
    if (c->status->phase == TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_INITIALIZED)
        return true;
    const Tailor__V1__Condition *k =
        tlr_ks_condition(c->status->conditions, c->status->n_conditions, "Initialized");
    return k && k->status == TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE;
}

static const char *annotation(Tailor__V1__Label *const *l, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(l[i]->key, key))
            return l[i]->value;
    return NULL;
}

static bool has_affinity(const Tailor__V1__Pod *p)
{
    return (p->pod_affinity && p->pod_affinity->n_required) ||
           (p->pod_anti_affinity && p->pod_anti_affinity->n_required);
}

void ds_view_build(Tailor__V1__SnapshotResponse *snap, const Tailor__V1__Catalog *catalog,
                   const ds_podevents *ev, int64_t now_ms, ds_view **out)
{
    ds_view *v = tlr_calloc(1, sizeof(*v));
    v->snap = snap;
    v->cs = snap->cluster;
    v->catalog = catalog;
    v->now_ms = now_ms;
    Tailor__V1__ClusterState *cs = v->cs;
    size_t nn = cs ? cs->n_nodes : 0;
    v->nodes = tlr_calloc(nn + 1, sizeof(*v->nodes));
    v->nnodes = nn;
    struct lh_table *claims = lh_kchar_table_new(nn + 16, NULL);
    for (size_t i = 0; cs && i < cs->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = cs->nodeclaims[i];
        lh_table_insert(claims, c->name, (void *)c);
        if (c->status && c->status->provider_id[0])
            lh_table_insert(claims, c->status->provider_id, (void *)c);
        if (c->status && c->status->node_name[0])
            lh_table_insert(claims, c->status->node_name, (void *)c);
    }
    for (size_t i = 0; i < nn; i++) {
        Tailor__V1__Node *n = cs->nodes[i];
        ds_vnode *x = &v->nodes[i];
        x->node = n;
        void *c = NULL;
        if ((n->nodeclaim_name[0] && lh_table_lookup_ex(claims, n->nodeclaim_name, &c)) ||
            (n->provider_id[0] && lh_table_lookup_ex(claims, n->provider_id, &c)) ||
            lh_table_lookup_ex(claims, n->name, &c))
            x->claim = c;
        x->pool = ds_view_pool(v, n->nodepool);
        x->price = n->price_per_hour;
        if (x->price <= 0 && x->claim && x->claim->status)
            x->price = x->claim->status->price_per_hour;
        if (x->price <= 0)
            x->price = ds_catalog_price(catalog, n->instance_type, n->zone, n->capacity_type);
        n->price_per_hour = x->price;
        x->initialized = n->initialized || (x->claim && claim_initialized(x->claim)) ||
                         (!n->managed && n->ready);
        n->initialized = x->initialized;
        x->disrupting = n->marked_for_deletion || n->deletion_unix_ms ||
                        (x->claim && x->claim->deletion_unix_ms);
        const char *dnd =
            annotation(n->annotations, n->n_annotations, TLR_ANNOTATION_DO_NOT_DISRUPT);
        x->do_not_disrupt = dnd && !strcmp(dnd, "true");
        int64_t last = x->claim ? x->claim->creation_unix_ms : n->creation_unix_ms;
        if (x->claim && x->claim->status && x->claim->status->last_pod_event_unix_ms > last)
            last = x->claim->status->last_pod_event_unix_ms;
        for (size_t j = 0; j < n->n_pods; j++) {
            const Tailor__V1__Pod *p = n->pods[j];
            if (ds_pod_moves(p))
                x->moving++;
            if (!p->is_daemonset && p->creation_unix_ms > last)
                last = p->creation_unix_ms;
            if (has_affinity(p))
                v->affinity = true;
        }
        int64_t removed = ds_podevents_last(ev, n->name);
        x->last_pod_event_ms = removed > last ? removed : last;
    }
    for (size_t i = 0; snap->n_pending_pods && i < snap->n_pending_pods; i++)
        if (has_affinity(snap->pending_pods[i]))
            v->affinity = true;
    lh_table_free(claims);
    struct lh_table *idx = lh_kchar_table_new(nn + 16, NULL);
    for (size_t i = 0; i < nn; i++)
        lh_table_insert(idx, v->nodes[i].node->name, &v->nodes[i]);
    v->by_name = idx;
    *out = v;
}

void ds_view_free(ds_view *v)
{
    if (!v)
        return;
    if (v->snap)
        protobuf_c_message_free_unpacked(&v->snap->base, NULL);
    if (v->by_name)
        lh_table_free(v->by_name);
    free(v->nodes);
    free(v);
}

ds_vnode *ds_view_node(const ds_view *v, const char *name)
{
    void *x = NULL;
    if (name && v->by_name && lh_table_lookup_ex(v->by_name, name, &x))
        return x;
    return NULL;
}

const Tailor__V1__NodeClaim *ds_view_launching_claim(const ds_view *v, int64_t within_ms)
{
    const Tailor__V1__ClusterState *cs = v->cs;
    for (size_t i = 0; cs && i < cs->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = cs->nodeclaims[i];
        if (!c->deletion_unix_ms && !claim_initialized(c) &&
            v->now_ms - c->creation_unix_ms <= within_ms)
            return c;
    }
    return NULL;
}

ds_vnode *ds_view_node_of_claim(const ds_view *v, const char *claim)
{
    for (size_t i = 0; claim && i < v->nnodes; i++)
        if ((v->nodes[i].claim && !strcmp(v->nodes[i].claim->name, claim)) ||
            !strcmp(v->nodes[i].node->nodeclaim_name, claim))
            return &v->nodes[i];
    return NULL;
}

const Tailor__V1__NodePool *ds_view_pool(const ds_view *v, const char *name)
{
    for (size_t i = 0; v->cs && name && i < v->cs->n_nodepools; i++)
        if (!strcmp(v->cs->nodepools[i]->name, name))
            return v->cs->nodepools[i];
    return NULL;
}

const Tailor__V1__NodeClass *ds_view_class(const ds_view *v, const char *name)
{
    for (size_t i = 0; v->cs && name && i < v->cs->n_node_classes; i++)
        if (!strcmp(v->cs->node_classes[i]->name, name))
            return v->cs->node_classes[i];
    return NULL;
}

const Tailor__V1__PodDisruptionBudget *ds_view_pdb(const ds_view *v, const char *ns_name)
{
    const char *slash = strchr(ns_name, '/');
    if (!slash)
        return NULL;
    size_t nl = (size_t)(slash - ns_name);
    for (size_t i = 0; v->cs && i < v->cs->n_pdbs; i++) {
        const Tailor__V1__PodDisruptionBudget *b = v->cs->pdbs[i];
        if (strlen(b->namespace_) == nl && !strncmp(b->namespace_, ns_name, nl) &&
            !strcmp(b->name, slash + 1))
            return b;
    }
    return NULL;
}
