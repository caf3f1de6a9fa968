/* plancheck_testkit.h - tiny builders for SolveRequest / SolveResponse
 * messages, shared by lower_bound_test.c and plancheck_test.c
 * (header-only, test use only; not part of the library).
 *
 * Everything is malloc'ed so a whole request or response is released with
 * tailor__v1__solve_request__free_unpacked(req, NULL) (or the response's).
 * Units in the builders: cpu in millicores, memory in MiB, prices $/h.
 */
#ifndef PLANCHECK_TESTKIT_H
#define PLANCHECK_TESTKIT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/solver.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_labels.h"

#define KIT_MIB (1024LL * 1024)
#define KIT_PUSH(arr, n, x)                                        \
    do {                                                           \
        (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr)));    \
        (arr)[(n)++] = (x);                                        \
    } while (0)

static inline Tailor__V1__ResourceList *kit_res(int64_t cpu_m, int64_t mem_mib, int64_t pods,
                                                int64_t gpus)
{
    Tailor__V1__ResourceList *r = tlr_malloc(sizeof(*r));
    tailor__v1__resource_list__init(r);
    r->cpu_millis = cpu_m;
    r->memory_bytes = mem_mib * KIT_MIB;
    r->pods = pods;
    if (gpus) {
        Tailor__V1__ExtendedResource *e = tlr_malloc(sizeof(*e));
        tailor__v1__extended_resource__init(e);
        e->name = tlr_strdup("nvidia.com/gpu");
        e->value = gpus;
        KIT_PUSH(r->extended, r->n_extended, e);
    }
    return r;
}

static inline Tailor__V1__NodeSelectorRequirement *kit_req_in(const char *key, const char *v)
{
    Tailor__V1__NodeSelectorRequirement *r = tlr_malloc(sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tlr_strdup(key);
    r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    KIT_PUSH(r->values, r->n_values, tlr_strdup(v));
    return r;
}

static inline Tailor__V1__Label *kit_label(const char *k, const char *v)
{
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(k);
    l->value = tlr_strdup(v);
    return l;
}

static inline void kit_offer(Tailor__V1__InstanceType *t, const char *zone,
                             Tailor__V1__CapacityType ct, double price)
{
    Tailor__V1__Offering *o = tlr_malloc(sizeof(*o));
    tailor__v1__offering__init(o);
    o->zone = tlr_strdup(zone);
    o->capacity_type = ct;
    o->price_per_hour = price;
    o->available = 1;
    KIT_PUSH(t->offerings, t->n_offerings, o);
}

#define KIT_OD TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND
#define KIT_SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT

/* An amd64 type with one on-demand offering in zone-a at price. */
static inline Tailor__V1__InstanceType *kit_type(const char *name, int64_t cpu_m,
                                                 int64_t mem_mib, int64_t pods, int64_t gpus,
                                                 double price)
{
    Tailor__V1__InstanceType *t = tlr_malloc(sizeof(*t));
    tailor__v1__instance_type__init(t);
    t->name = tlr_strdup(name);
    t->arch = tlr_strdup("amd64");
    t->vcpu = (int32_t)(cpu_m / 1000);
    t->memory_mib = mem_mib;
    t->gpu_count = (int32_t)gpus;
    t->allocatable = kit_res(cpu_m, mem_mib, pods, gpus);
    t->capacity = kit_res(cpu_m, mem_mib, pods, gpus);
    KIT_PUSH(t->requirements, t->n_requirements,
             kit_req_in(TLR_LABEL_INSTANCE_TYPE, name));
    kit_offer(t, "zone-a", KIT_OD, price);
    return t;
}

static inline Tailor__V1__Pod *kit_pod(const char *uid, int64_t cpu_m, int64_t mem_mib,
                                       int64_t gpus)
{
    Tailor__V1__Pod *p = tlr_malloc(sizeof(*p));
    tailor__v1__pod__init(p);
    p->uid = tlr_strdup(uid);
    p->namespace_ = tlr_strdup("default");
    p->name = tlr_strdup(uid);
    p->requests = kit_res(cpu_m, mem_mib, 1, gpus);
    return p;
}

/* A request with one NodePool "default" (node class "default") and an
 * empty catalog served for it. */
static inline Tailor__V1__SolveRequest *kit_request(void)
{
    Tailor__V1__SolveRequest *req = tlr_malloc(sizeof(*req));
    tailor__v1__solve_request__init(req);
    req->cluster = tlr_malloc(sizeof(*req->cluster));
    tailor__v1__cluster_state__init(req->cluster);
    Tailor__V1__NodePool *pool = tlr_malloc(sizeof(*pool));
    tailor__v1__node_pool__init(pool);
    pool->name = tlr_strdup("default");
    pool->node_class_ref = tlr_malloc(sizeof(*pool->node_class_ref));
    tailor__v1__node_class_ref__init(pool->node_class_ref);
    pool->node_class_ref->name = tlr_strdup("default");
    KIT_PUSH(req->cluster->nodepools, req->cluster->n_nodepools, pool);
    Tailor__V1__CatalogRef *ref = tlr_malloc(sizeof(*ref));
    tailor__v1__catalog_ref__init(ref);
    ref->hash = tlr_strdup("test");
    KIT_PUSH(ref->node_classes, ref->n_node_classes, tlr_strdup("default"));
    ref->catalog = tlr_malloc(sizeof(*ref->catalog));
    tailor__v1__catalog__init(ref->catalog);
    KIT_PUSH(req->catalogs, req->n_catalogs, ref);
    return req;
}

static inline void kit_add_type(Tailor__V1__SolveRequest *req, Tailor__V1__InstanceType *t)
{
    Tailor__V1__Catalog *c = req->catalogs[0]->catalog;
    KIT_PUSH(c->instance_types, c->n_instance_types, t);
}

static inline void kit_add_pod(Tailor__V1__SolveRequest *req, Tailor__V1__Pod *p)
{
    KIT_PUSH(req->pending_pods, req->n_pending_pods, p);
}

static inline Tailor__V1__Taint *kit_taint(const char *k, const char *v)
{
    Tailor__V1__Taint *t = tlr_malloc(sizeof(*t));
    tailor__v1__taint__init(t);
    t->key = tlr_strdup(k);
    t->value = tlr_strdup(v);
    t->effect = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE;
    return t;
}

static inline Tailor__V1__Toleration *kit_toleration(const char *k, const char *v)
{
    Tailor__V1__Toleration *t = tlr_malloc(sizeof(*t));
    tailor__v1__toleration__init(t);
    t->key = tlr_strdup(k);
    t->value = tlr_strdup(v);
    t->operator_ = TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL;
    return t;
}

/* A required anti-affinity (or affinity) term on key selecting app=<app>. */
static inline Tailor__V1__PodAffinityTerm *kit_term(const char *key, const char *app)
{
    Tailor__V1__PodAffinityTerm *t = tlr_malloc(sizeof(*t));
    tailor__v1__pod_affinity_term__init(t);
    t->topology_key = tlr_strdup(key);
    t->label_selector = tlr_malloc(sizeof(*t->label_selector));
    tailor__v1__label_selector__init(t->label_selector);
    KIT_PUSH(t->label_selector->match_labels, t->label_selector->n_match_labels,
             kit_label("app", app));
    return t;
}

static inline Tailor__V1__PodAffinity *kit_affinity(Tailor__V1__PodAffinityTerm *t)
{
    Tailor__V1__PodAffinity *a = tlr_malloc(sizeof(*a));
    tailor__v1__pod_affinity__init(a);
    KIT_PUSH(a->required, a->n_required, t);
    return a;
}

/* An existing node with allocatable and requested. */
static inline Tailor__V1__Node *kit_node(const char *name, Tailor__V1__ResourceList *alloc,
                                         Tailor__V1__ResourceList *requested)
{
    Tailor__V1__Node *n = tlr_malloc(sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tlr_strdup(name);
    n->allocatable = alloc;
    n->requested = requested;
    n->ready = 1;
    n->initialized = 1;
    KIT_PUSH(n->labels, n->n_labels, kit_label(TLR_LABEL_HOSTNAME, name));
    return n;
}

static inline Tailor__V1__DaemonSet *kit_daemonset(const char *name, int64_t cpu_m,
                                                   int64_t mem_mib)
{
    Tailor__V1__DaemonSet *d = tlr_malloc(sizeof(*d));
    tailor__v1__daemon_set__init(d);
    d->name = tlr_strdup(name);
    d->pod_template = kit_pod("", cpu_m, mem_mib, 0);
    return d;
}

#endif
