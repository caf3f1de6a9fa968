/* ds_testkit.h - builders for the disruptor's tests: pods, nodes, NodePools,
 * NodeClaims, catalogs and snapshots.  Every builder returns a message
 * owned by the caller (protobuf_c_message_free_unpacked), made of malloc'd
 * parts, or adds it to a parent that then owns it. */
#ifndef DS_TESTKIT_H
#define DS_TESTKIT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/instancetype.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

#define TK_PUSH(arr, n, x) \
    do { (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); (arr)[(n)++] = (x); } while (0)

#define TK_NOW 1800000000000LL
#define TK_GIB (1024LL * 1024 * 1024)

static inline Tailor__V1__Label *tk_label(const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(k);
    l->value = tlr_strdup(v);
    return l;
}

static inline Tailor__V1__ResourceList *tk_res(int64_t cpu_m, int64_t mem, int64_t pods)
{
    Tailor__V1__ResourceList *r = tlr_malloc(sizeof(*r));
    tailor__v1__resource_list__init(r);
    r->cpu_millis = cpu_m;
    r->memory_bytes = mem;
    r->pods = pods;
    return r;
}

/* A running, ready pod owned by kind/owner ('r' ReplicaSet, 'd' DaemonSet,
 * 's' StatefulSet, 0 none) with label app=app (NULL none). */
static inline Tailor__V1__Pod *tk_pod(const char *name, const char *node, const char *app, char kind,
                                      const char *owner, int64_t cpu_m, int64_t mem)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    tailor__v1__pod__init(p);
    char uid[96];
    snprintf(uid, sizeof(uid), "uid-%s", name);
    p->uid = tlr_strdup(uid);
    p->namespace_ = tlr_strdup("default");
    p->name = tlr_strdup(name);
    p->node_name = tlr_strdup(node ? node : "");
    p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_RUNNING;
    p->ready = true;
    p->creation_unix_ms = TK_NOW - 3600000;
    p->termination_grace_period_ms = 30000;
    p->requests = tk_res(cpu_m, mem, 1);
    if (app)
        TK_PUSH(p->labels, p->n_labels, tk_label("app", app));
    if (kind) {
        Tailor__V1__OwnerReference *o = tlr_malloc(sizeof(*o));
        tailor__v1__owner_reference__init(o);
        o->kind = tlr_strdup(kind == 'd' ? "DaemonSet" : kind == 's' ? "StatefulSet" : "ReplicaSet");
        o->api_version = tlr_strdup("apps/v1");
        o->name = tlr_strdup(owner ? owner : "owner");
        char ouid[96];
        snprintf(ouid, sizeof(ouid), "uid-%s", owner ? owner : "owner");
        o->uid = tlr_strdup(ouid);
        o->controller = true;
        TK_PUSH(p->owners, p->n_owners, o);
        p->is_daemonset = kind == 'd';
    }
    return p;
}

static inline void tk_annotate_pod(Tailor__V1__Pod *p, const char *k, const char *v)
{
    TK_PUSH(p->annotations, p->n_annotations, tk_label(k, v));
}

static inline Tailor__V1__PodDisruptionBudget *tk_pdb(const char *name, const char *app, int allowed)
{
    Tailor__V1__PodDisruptionBudget *b = tlr_malloc(sizeof(*b));
    tailor__v1__pod_disruption_budget__init(b);
    b->name = tlr_strdup(name);
    b->namespace_ = tlr_strdup("default");
    b->uid = tlr_strdup(name);
    b->selector = tlr_malloc(sizeof(*b->selector));
    tailor__v1__label_selector__init(b->selector);
    TK_PUSH(b->selector->match_labels, b->selector->n_match_labels, tk_label("app", app));
    b->disruptions_allowed = allowed;
    return b;
}

/* Offer type in zone at price (on-demand). */
static inline void tk_offer(Tailor__V1__InstanceType *it, const char *zone, char ct, double price)
{
    Tailor__V1__Offering *o = tlr_malloc(sizeof(*o));
    tailor__v1__offering__init(o);
    o->zone = tlr_strdup(zone);
    o->capacity_type = ct == 's' ? TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
                                 : TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
    o->price_per_hour = price;
    o->available = true;
    TK_PUSH(it->offerings, it->n_offerings, o);
}

static inline Tailor__V1__NodeSelectorRequirement *tk_req(const char *key, const char *v)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    TK_PUSH(r->values, r->n_values, tlr_strdup(v));
    return r;
}

/* A type with cpu cores, mem GiB (allocatable = capacity) and price. */
static inline Tailor__V1__InstanceType *tk_type(Tailor__V1__Catalog *c, const char *name, int cpu,
                                                int mem_gib, double price)
{
    Tailor__V1__InstanceType *it = tlr_malloc(sizeof(*it));
    tailor__v1__instance_type__init(it);
    it->name = tlr_strdup(name);
    it->capacity = tk_res(cpu * 1000LL, mem_gib * TK_GIB, 110);
    it->allocatable = tk_res(cpu * 1000LL, mem_gib * TK_GIB, 110);
    TK_PUSH(it->requirements, it->n_requirements, tk_req(TLR_LABEL_INSTANCE_TYPE, name));
    TK_PUSH(it->requirements, it->n_requirements, tk_req(TLR_LABEL_ARCH, "amd64"));
    TK_PUSH(it->requirements, it->n_requirements, tk_req(TLR_LABEL_OS, "linux"));
    tk_offer(it, "us-east-1a", 'o', price);
    TK_PUSH(c->instance_types, c->n_instance_types, it);
    return it;
}

/* small (2 cpu, 4 GiB, 0.10/h), medium (4, 8, 0.19), large (8, 16, 0.36),
 * xlarge (16, 32, 0.70); names sorted. */
static inline Tailor__V1__Catalog *tk_catalog(void)
{
    Tailor__V1__Catalog *c = tlr_malloc(sizeof(*c));
    tailor__v1__catalog__init(c);
    c->hash = tlr_strdup("cat-1");
    c->region = tlr_strdup("us-east-1");
    tk_type(c, "t.large", 8, 16, 0.36);
    tk_type(c, "t.medium", 4, 8, 0.19);
    tk_type(c, "t.small", 2, 4, 0.10);
    tk_type(c, "t.xlarge", 16, 32, 0.70);
    return c;
}

/* A managed, initialized, ready node of type (cpu/mem from the catalog
 * shape), nodeclaim "nc-<name>", instance "i-<name>". */
static inline Tailor__V1__Node *tk_node(const char *name, const char *pool, const char *type, int cpu,
                                        int mem_gib, double price)
{
    Tailor__V1__Node *n = tlr_malloc(sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tlr_strdup(name);
    char b[128];
    snprintf(b, sizeof(b), "uid-%s", name);
    n->uid = tlr_strdup(b);
    snprintf(b, sizeof(b), "aws:///us-east-1a/i-%s", name);
    n->provider_id = tlr_strdup(b);
    n->capacity = tk_res(cpu * 1000LL, mem_gib * TK_GIB, 110);
    n->allocatable = tk_res(cpu * 1000LL, mem_gib * TK_GIB, 110);
    n->requested = tk_res(0, 0, 0);
    n->ready = true;
    n->managed = pool != NULL;
    snprintf(b, sizeof(b), "nc-%s", name);
    n->nodeclaim_name = tlr_strdup(pool ? b : "");
    n->nodepool = tlr_strdup(pool ? pool : "");
    n->instance_type = tlr_strdup(type);
    n->zone = tlr_strdup("us-east-1a");
    n->capacity_type = TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
    n->price_per_hour = price;
    n->initialized = true;
    n->creation_unix_ms = TK_NOW - 3600000;
    TK_PUSH(n->labels, n->n_labels, tk_label(TLR_LABEL_ARCH, "amd64"));
    TK_PUSH(n->labels, n->n_labels, tk_label(TLR_LABEL_OS, "linux"));
    TK_PUSH(n->labels, n->n_labels, tk_label(TLR_LABEL_INSTANCE_TYPE, type));
    if (pool)
        TK_PUSH(n->labels, n->n_labels, tk_label(TLR_LABEL_NODEPOOL, pool));
    TK_PUSH(n->labels, n->n_labels, tk_label(TLR_LABEL_ZONE, "us-east-1a"));
    return n;
}

/* Bind pod (handed over) to node: added to its pods and requested. */
static inline void tk_bind(Tailor__V1__Node *n, Tailor__V1__Pod *p)
{
    free(p->node_name);
    p->node_name = tlr_strdup(n->name);
    n->requested->cpu_millis += p->requests->cpu_millis;
    n->requested->memory_bytes += p->requests->memory_bytes;
    n->requested->pods += 1;
    TK_PUSH(n->pods, n->n_pods, p);
}

/* NodePool "name" on node class "default", WhenEmptyOrUnderutilized,
 * consolidateAfter 0, budget nodes (e.g. "100%"). */
static inline Tailor__V1__NodePool *tk_pool(const char *name, const char *budget)
{
    Tailor__V1__NodePool *p = tlr_malloc(sizeof(*p));
    tailor__v1__node_pool__init(p);
    p->name = tlr_strdup(name);
    p->uid = tlr_strdup("uid-pool");
    p->node_class_ref = tlr_malloc(sizeof(*p->node_class_ref));
    tailor__v1__node_class_ref__init(p->node_class_ref);
    p->node_class_ref->name = tlr_strdup("default");
    p->expire_after_ms = 720LL * 3600 * 1000;
    p->disruption = tlr_malloc(sizeof(*p->disruption));
    tailor__v1__disruption__init(p->disruption);
    p->disruption->consolidation_policy =
        TAILOR__V1__CONSOLIDATION_POLICY__CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED;
    Tailor__V1__Budget *b = tlr_malloc(sizeof(*b));
    tailor__v1__budget__init(b);
    b->nodes = tlr_strdup(budget ? budget : "10%");
    TK_PUSH(p->disruption->budgets, p->disruption->n_budgets, b);
    TK_PUSH(p->requirements, p->n_requirements, tk_req(TLR_LABEL_ARCH, "amd64"));
    return p;
}

static inline Tailor__V1__NodeClass *tk_nodeclass(const char *name)
{
    Tailor__V1__NodeClass *c = tlr_malloc(sizeof(*c));
    tailor__v1__node_class__init(c);
    c->name = tlr_strdup(name);
    c->ready = true;
    return c;
}

/* An entry of an EC2NodeClass's status.amis, as the launcher publishes it. */
static inline Tailor__V1__ResolvedAmi *tk_ami(const char *id)
{
    Tailor__V1__ResolvedAmi *a = tlr_malloc(sizeof(*a));
    tailor__v1__resolved_ami__init(a);
    a->id = tlr_strdup(id);
    return a;
}

/* A status condition of that type, True or False. */
static inline Tailor__V1__Condition *tk_cond(const char *type, bool is_true)
{
    Tailor__V1__Condition *k = tlr_malloc(sizeof(*k));
    tailor__v1__condition__init(k);
    k->type = tlr_strdup(type);
    k->status = is_true ? TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE
                        : TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE;
    return k;
}

/* The NodeClaim of a tk_node (Initialized). */
static inline Tailor__V1__NodeClaim *tk_claim_for(const Tailor__V1__Node *n)
{
    Tailor__V1__NodeClaim *c = tlr_malloc(sizeof(*c));
    tailor__v1__node_claim__init(c);
    c->name = tlr_strdup(n->nodeclaim_name);
    c->nodepool = tlr_strdup(n->nodepool);
    c->node_class = tlr_strdup("default");
    c->creation_unix_ms = n->creation_unix_ms;
    c->expire_after_ms = 720LL * 3600 * 1000;
    c->status = tlr_malloc(sizeof(*c->status));
    tailor__v1__node_claim_status__init(c->status);
    c->status->provider_id = tlr_strdup(n->provider_id);
    c->status->instance_id = tlr_strdup(tlr_provider_id_instance(n->provider_id));
    c->status->instance_type = tlr_strdup(n->instance_type);
    c->status->node_name = tlr_strdup(n->name);
    c->status->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_INITIALIZED;
    return c;
}

/* A t.<size> node (small 2 cpu / 4 GiB, medium 4/8, large 8/16, xlarge
 * 16/32) in pool "default" with pods of the given cpu (millis, 1 GiB
 * each; the list ends with 0), added to cs with its NodeClaim. */
static inline Tailor__V1__Node *tk_sized_node(Tailor__V1__ClusterState *cs, const char *name,
                                              const char *size, const int *pods)
{
    static const struct { const char *s; int cpu, mem; } shapes[] = {
        { "small", 2, 4 }, { "medium", 4, 8 }, { "large", 8, 16 }, { "xlarge", 16, 32 },
    };
    int k = 0;
    while (strcmp(shapes[k].s, size))
        k++;
    char type[32];
    snprintf(type, sizeof(type), "t.%s", size);
    Tailor__V1__Node *n = tk_node(name, "default", type, shapes[k].cpu, shapes[k].mem, 0);
    for (int i = 0; pods && pods[i]; i++) {
        char pn[64];
        snprintf(pn, sizeof(pn), "%s-p%d", name, i);
        tk_bind(n, tk_pod(pn, NULL, "app", 'r', "rs", pods[i], TK_GIB));
    }
    TK_PUSH(cs->nodes, cs->n_nodes, n);
    TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, tk_claim_for(n));
    return n;
}

/* An empty synced snapshot. */
static inline Tailor__V1__SnapshotResponse *tk_snapshot(void)
{
    Tailor__V1__SnapshotResponse *s = tlr_malloc(sizeof(*s));
    tailor__v1__snapshot_response__init(s);
    s->cluster = tlr_malloc(sizeof(*s->cluster));
    tailor__v1__cluster_state__init(s->cluster);
    s->cluster->synced = true;
    s->cluster->generation = 1;
    s->cluster->watcher_epoch_unix_ms = TK_NOW - 100000;
    return s;
}

#endif
