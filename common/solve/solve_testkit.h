/* solve_testkit.h - a tiny builder for SolveRequests in the solver tests.
 *
 * Everything is allocated with malloc in the layout protobuf-c's
 * free_unpacked expects, so a test frees a whole request with
 * tk_free(req).  Instance types come from one synthetic catalog whose
 * prices are linear in size, with offerings in zones test-1a and test-1b,
 * on-demand and spot (spot at 40%), unless a test says otherwise.
 *
 * Only *_test.c files include this header; every function is static
 * inline so a test that does not use one does not warn.
 */
#ifndef SOLVE_TESTKIT_H
#define SOLVE_TESTKIT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/solver.pb-c.h"
#include "tlr_buf.h"
#include "tlr_labels.h"
#include "tlr_plancheck.h"
#include "tlr_solve.h"

#define TK_PUSH(arr, n, item)                                                \
    do {                                                                     \
        (arr) = realloc((arr), ((n) + 1) * sizeof(*(arr)));                  \
        (arr)[(n)++] = (item);                                               \
    } while (0)

#define TK_GIB ((int64_t)1 << 30)
#define TK_MIB ((int64_t)1 << 20)
#define K_ZONE TLR_LABEL_ZONE
#define K_CT TLR_LABEL_CAPACITY_TYPE
#define K_HOST TLR_LABEL_HOSTNAME
#define K_TYPE TLR_LABEL_INSTANCE_TYPE

static inline char *tk_s(const char *s) { return strdup(s ? s : ""); }

static inline Tailor__V1__SolveRequest *tk_new(void)
{
    Tailor__V1__SolveRequest *r = calloc(1, sizeof(*r));
    tailor__v1__solve_request__init(r);
    r->cluster = calloc(1, sizeof(*r->cluster));
    tailor__v1__cluster_state__init(r->cluster);
    r->cluster->synced = true;
    r->now_unix_ms = 1700000000000;
    return r;
}

static inline void tk_free(Tailor__V1__SolveRequest *r)
{
    tailor__v1__solve_request__free_unpacked(r, NULL);
}

static inline Tailor__V1__ResourceList *tk_rl(int64_t cpu_m, int64_t mem, int64_t pods)
{
    Tailor__V1__ResourceList *l = calloc(1, sizeof(*l));
    tailor__v1__resource_list__init(l);
    l->cpu_millis = cpu_m;
    l->memory_bytes = mem;
    l->pods = pods;
    return l;
}

static inline void tk_rl_ext(Tailor__V1__ResourceList *l, const char *name, int64_t v)
{
    Tailor__V1__ExtendedResource *x = calloc(1, sizeof(*x));
    tailor__v1__extended_resource__init(x);
    x->name = tk_s(name);
    x->value = v;
    TK_PUSH(l->extended, l->n_extended, x);
}

static inline Tailor__V1__NodeSelectorRequirement *tk_nsr(const char *key, int op, const char *vals)
{
    Tailor__V1__NodeSelectorRequirement *r = calloc(1, sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = tk_s(key);
    r->operator_ = op;
    /* vals: comma separated */
    if (vals && *vals) {
        char *dup = strdup(vals), *save = NULL;
        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
            TK_PUSH(r->values, r->n_values, tk_s(t));
        free(dup);
    }
    return r;
}

#define TK_IN     TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
#define TK_NOTIN  TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN
#define TK_EXISTS TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS
#define TK_DNE    TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST
#define TK_GT     TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT
#define TK_LT     TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT
#define TK_NOSCHED TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE
#define TK_PREFER  TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE
#define TK_OD   TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND
#define TK_SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
#define TK_RESERVED TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_RESERVED

/* ---- catalog ----------------------------------------------------------- */

static inline Tailor__V1__Catalog *tk_catalog(Tailor__V1__SolveRequest *r)
{
    if (r->n_catalogs)
        return r->catalogs[0]->catalog;
    Tailor__V1__CatalogRef *ref = calloc(1, sizeof(*ref));
    tailor__v1__catalog_ref__init(ref);
    ref->hash = tk_s("testhash");
    ref->catalog = calloc(1, sizeof(*ref->catalog));
    tailor__v1__catalog__init(ref->catalog);
    ref->catalog->hash = tk_s("testhash");
    ref->catalog->region = tk_s("test-1");
    TK_PUSH(ref->node_classes, ref->n_node_classes, tk_s("default"));
    TK_PUSH(r->catalogs, r->n_catalogs, ref);
    return ref->catalog;
}

static inline void tk_offer(Tailor__V1__InstanceType *it, const char *zone, int ct, double price, bool avail)
{
    Tailor__V1__Offering *o = calloc(1, sizeof(*o));
    tailor__v1__offering__init(o);
    o->zone = tk_s(zone);
    o->capacity_type = ct;
    o->price_per_hour = price;
    o->available = avail;
    TK_PUSH(it->offerings, it->n_offerings, o);
}

static inline void tk_type_label(Tailor__V1__InstanceType *it, const char *k, const char *v)
{
    TK_PUSH(it->requirements, it->n_requirements, tk_nsr(k, TK_IN, v));
}

/* A type without offerings: tk_type_raw(); with the standard ones: tk_type().
 * A type with vcpu cores and mem GiB, price od per hour (spot 40%), in
 * zones test-1a and test-1b; family "f" by default. */
static inline Tailor__V1__InstanceType *tk_type_raw(Tailor__V1__SolveRequest *r, const char *name, int vcpu,
                                                   int mem_gib)
{
    Tailor__V1__Catalog *c = tk_catalog(r);
    Tailor__V1__InstanceType *it = calloc(1, sizeof(*it));
    tailor__v1__instance_type__init(it);
    it->name = tk_s(name);
    it->arch = tk_s("amd64");
    it->vcpu = vcpu;
    it->memory_mib = (int64_t)mem_gib * 1024;
    it->max_pods = 110;
    it->capacity = tk_rl((int64_t)vcpu * 1000, (int64_t)mem_gib * TK_GIB, 110);
    it->allocatable = tk_rl((int64_t)vcpu * 1000, (int64_t)mem_gib * TK_GIB, 110);
    char fam[64];
    snprintf(fam, sizeof fam, "%s", name);
    char *dot = strchr(fam, '.');
    if (dot)
        *dot = 0;
    tk_type_label(it, K_TYPE, name);
    tk_type_label(it, TLR_LABEL_INSTANCE_FAMILY, fam);
    char cpu[16];
    snprintf(cpu, sizeof cpu, "%d", vcpu);
    tk_type_label(it, TLR_LABEL_INSTANCE_CPU, cpu);
    tk_type_label(it, TLR_LABEL_ARCH, "amd64");
    TK_PUSH(c->instance_types, c->n_instance_types, it);
    return it;
}

static inline Tailor__V1__InstanceType *tk_type(Tailor__V1__SolveRequest *r, const char *name, int vcpu,
                                               int mem_gib, double od)
{
    Tailor__V1__InstanceType *it = tk_type_raw(r, name, vcpu, mem_gib);
    tk_offer(it, "test-1a", TK_OD, od, true);
    tk_offer(it, "test-1b", TK_OD, od, true);
    tk_offer(it, "test-1a", TK_SPOT, od * 0.4, true);
    tk_offer(it, "test-1b", TK_SPOT, od * 0.4, true);
    return it;
}

/* The standard ladder: s.1 (1 cpu, 2 GiB) ... s.16 (16 cpu, 32 GiB),
 * on-demand 0.05 per vCPU. */
static inline void tk_ladder(Tailor__V1__SolveRequest *r)
{
    static const int sz[] = { 1, 2, 4, 8, 16 };
    for (int i = 0; i < 5; i++) {
        char n[16];
        snprintf(n, sizeof n, "s.%d", sz[i]);
        tk_type(r, n, sz[i], 2 * sz[i], 0.05 * sz[i]);
    }
}

/* ---- NodePools --------------------------------------------------------- */

static inline Tailor__V1__NodePool *tk_pool(Tailor__V1__SolveRequest *r, const char *name, int weight)
{
    Tailor__V1__NodePool *p = calloc(1, sizeof(*p));
    tailor__v1__node_pool__init(p);
    p->name = tk_s(name);
    p->weight = weight;
    p->node_class_ref = calloc(1, sizeof(*p->node_class_ref));
    tailor__v1__node_class_ref__init(p->node_class_ref);
    p->node_class_ref->name = tk_s("default");
    p->expire_after_ms = 720LL * 3600 * 1000;
    TK_PUSH(r->cluster->nodepools, r->cluster->n_nodepools, p);
    return p;
}

static inline void tk_pool_req(Tailor__V1__NodePool *p, const char *key, int op, const char *vals, int minv)
{
    Tailor__V1__NodeSelectorRequirement *q = tk_nsr(key, op, vals);
    q->min_values = minv;
    TK_PUSH(p->requirements, p->n_requirements, q);
}

static inline Tailor__V1__Taint *tk_taint(const char *k, const char *v, int effect)
{
    Tailor__V1__Taint *t = calloc(1, sizeof(*t));
    tailor__v1__taint__init(t);
    t->key = tk_s(k);
    t->value = tk_s(v);
    t->effect = effect;
    return t;
}

static inline void tk_pool_taint(Tailor__V1__NodePool *p, const char *k, const char *v, int effect)
{
    TK_PUSH(p->taints, p->n_taints, tk_taint(k, v, effect));
}

static inline Tailor__V1__Label *tk_label(const char *k, const char *v)
{
    Tailor__V1__Label *l = calloc(1, sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tk_s(k);
    l->value = tk_s(v);
    return l;
}

static inline void tk_pool_limit_cpu(Tailor__V1__NodePool *p, int64_t cpu_m)
{
    if (!p->limits) {
        p->limits = calloc(1, sizeof(*p->limits));
        tailor__v1__node_pool_limits__init(p->limits);
    }
    p->limits->has_cpu = true;
    p->limits->cpu_millis = cpu_m;
}

/* ---- pods -------------------------------------------------------------- */

static inline Tailor__V1__Pod *tk_pod_new(const char *name, int64_t cpu_m, int64_t mem_mib)
{
    Tailor__V1__Pod *p = calloc(1, sizeof(*p));
    tailor__v1__pod__init(p);
    p->uid = tk_s(name);
    p->name = tk_s(name);
    p->namespace_ = tk_s("default");
    p->requests = tk_rl(cpu_m, mem_mib * TK_MIB, 1);
    p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_PENDING;
    p->unschedulable = true;
    return p;
}

static inline Tailor__V1__Pod *tk_pod(Tailor__V1__SolveRequest *r, const char *name, int64_t cpu_m,
                                     int64_t mem_mib)
{
    Tailor__V1__Pod *p = tk_pod_new(name, cpu_m, mem_mib);
    TK_PUSH(r->pending_pods, r->n_pending_pods, p);
    return p;
}

static inline void tk_pod_label(Tailor__V1__Pod *p, const char *k, const char *v)
{
    TK_PUSH(p->labels, p->n_labels, tk_label(k, v));
}

static inline void tk_pod_selector(Tailor__V1__Pod *p, const char *k, const char *v)
{
    TK_PUSH(p->node_selector, p->n_node_selector, tk_label(k, v));
}

/* Add a required node affinity term with one requirement (a new ORed term
 * each call). */
static inline void tk_pod_affinity(Tailor__V1__Pod *p, const char *key, int op, const char *vals)
{
    Tailor__V1__NodeSelectorTerm *t = calloc(1, sizeof(*t));
    tailor__v1__node_selector_term__init(t);
    TK_PUSH(t->match_expressions, t->n_match_expressions, tk_nsr(key, op, vals));
    TK_PUSH(p->required_node_affinity, p->n_required_node_affinity, t);
}

static inline void tk_pod_preferred(Tailor__V1__Pod *p, int weight, const char *key, int op, const char *vals)
{
    Tailor__V1__PreferredSchedulingTerm *t = calloc(1, sizeof(*t));
    tailor__v1__preferred_scheduling_term__init(t);
    t->weight = weight;
    t->preference = calloc(1, sizeof(*t->preference));
    tailor__v1__node_selector_term__init(t->preference);
    TK_PUSH(t->preference->match_expressions, t->preference->n_match_expressions, tk_nsr(key, op, vals));
    TK_PUSH(p->preferred_node_affinity, p->n_preferred_node_affinity, t);
}

static inline void tk_pod_tolerate(Tailor__V1__Pod *p, const char *k, const char *v, int effect)
{
    Tailor__V1__Toleration *t = calloc(1, sizeof(*t));
    tailor__v1__toleration__init(t);
    t->key = tk_s(k);
    t->value = tk_s(v);
    t->operator_ = v ? TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL
                     : TAILOR__V1__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS;
    t->effect = effect;
    TK_PUSH(p->tolerations, p->n_tolerations, t);
}

static inline Tailor__V1__LabelSelector *tk_sel(const char *k, const char *v)
{
    Tailor__V1__LabelSelector *s = calloc(1, sizeof(*s));
    tailor__v1__label_selector__init(s);
    TK_PUSH(s->match_labels, s->n_match_labels, tk_label(k, v));
    return s;
}

static inline void tk_pod_spread(Tailor__V1__Pod *p, const char *key, int skew, bool soft, const char *selk,
                                 const char *selv)
{
    Tailor__V1__TopologySpreadConstraint *t = calloc(1, sizeof(*t));
    tailor__v1__topology_spread_constraint__init(t);
    t->max_skew = skew;
    t->topology_key = tk_s(key);
    t->when_unsatisfiable = soft
        ? TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY
        : TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_DO_NOT_SCHEDULE;
    t->label_selector = tk_sel(selk, selv);
    TK_PUSH(p->topology_spread_constraints, p->n_topology_spread_constraints, t);
}

/* Required pod affinity (anti = false) or anti-affinity to pods labelled
 * selk=selv, over topology key. */
static inline void tk_pod_podaff(Tailor__V1__Pod *p, bool anti, const char *key, const char *selk,
                                 const char *selv)
{
    Tailor__V1__PodAffinity **a = anti ? &p->pod_anti_affinity : &p->pod_affinity;
    if (!*a) {
        *a = calloc(1, sizeof(**a));
        tailor__v1__pod_affinity__init(*a);
    }
    Tailor__V1__PodAffinityTerm *t = calloc(1, sizeof(*t));
    tailor__v1__pod_affinity_term__init(t);
    t->topology_key = tk_s(key);
    t->label_selector = tk_sel(selk, selv);
    TK_PUSH((*a)->required, (*a)->n_required, t);
}

/* Preferred pod affinity (anti = false) or anti-affinity to pods labelled
 * selk=selv, over topology key, with weight w. */
static inline void tk_pod_podpref(Tailor__V1__Pod *p, bool anti, const char *key, const char *selk,
                                  const char *selv, int w)
{
    Tailor__V1__PodAffinity **a = anti ? &p->pod_anti_affinity : &p->pod_affinity;
    if (!*a) {
        *a = calloc(1, sizeof(**a));
        tailor__v1__pod_affinity__init(*a);
    }
    Tailor__V1__WeightedPodAffinityTerm *wt = calloc(1, sizeof(*wt));
    tailor__v1__weighted_pod_affinity_term__init(wt);
    wt->weight = w;
    wt->term = calloc(1, sizeof(*wt->term));
    tailor__v1__pod_affinity_term__init(wt->term);
    wt->term->topology_key = tk_s(key);
    wt->term->label_selector = tk_sel(selk, selv);
    TK_PUSH((*a)->preferred, (*a)->n_preferred, wt);
}

static inline void tk_pod_port(Tailor__V1__Pod *p, int port)
{
    Tailor__V1__HostPort *h = calloc(1, sizeof(*h));
    tailor__v1__host_port__init(h);
    h->port = port;
    h->protocol = TAILOR__V1__PORT_PROTOCOL__PORT_PROTOCOL_TCP;
    TK_PUSH(p->host_ports, p->n_host_ports, h);
}

static inline void tk_pod_ext(Tailor__V1__Pod *p, const char *name, int64_t v)
{
    tk_rl_ext(p->requests, name, v);
}

/* ---- cluster ----------------------------------------------------------- */

static inline Tailor__V1__Node *tk_node(Tailor__V1__SolveRequest *r, const char *name, const char *zone,
                                       int64_t cpu_m, int64_t mem_gib)
{
    Tailor__V1__Node *n = calloc(1, sizeof(*n));
    tailor__v1__node__init(n);
    n->name = tk_s(name);
    n->zone = tk_s(zone);
    n->ready = true;
    n->initialized = true;
    n->allocatable = tk_rl(cpu_m, mem_gib * TK_GIB, 110);
    n->capacity = tk_rl(cpu_m, mem_gib * TK_GIB, 110);
    n->requested = tk_rl(0, 0, 0);
    n->capacity_type = TK_OD;
    n->price_per_hour = 0.05 * (double)cpu_m / 1000;
    TK_PUSH(n->labels, n->n_labels, tk_label(K_HOST, name));
    TK_PUSH(n->labels, n->n_labels, tk_label(K_ZONE, zone));
    TK_PUSH(r->cluster->nodes, r->cluster->n_nodes, n);
    return n;
}

/* Bind a copy of pod p (compact form) to node n, counting its requests. */
static inline Tailor__V1__Pod *tk_node_pod(Tailor__V1__Node *n, const char *name, int64_t cpu_m, int64_t mem_mib)
{
    Tailor__V1__Pod *p = tk_pod_new(name, cpu_m, mem_mib);
    p->node_name = tk_s(n->name);
    p->phase = TAILOR__V1__POD_PHASE__POD_PHASE_RUNNING;
    p->unschedulable = false;
    n->requested->cpu_millis += cpu_m;
    n->requested->memory_bytes += mem_mib * TK_MIB;
    n->requested->pods++;
    TK_PUSH(n->pods, n->n_pods, p);
    return p;
}

static inline Tailor__V1__Pod *tk_daemonset(Tailor__V1__SolveRequest *r, const char *name, int64_t cpu_m,
                                           int64_t mem_mib)
{
    Tailor__V1__DaemonSet *d = calloc(1, sizeof(*d));
    tailor__v1__daemon_set__init(d);
    d->name = tk_s(name);
    d->namespace_ = tk_s("kube-system");
    d->pod_template = tk_pod_new("", cpu_m, mem_mib);
    TK_PUSH(r->cluster->daemonsets, r->cluster->n_daemonsets, d);
    return d->pod_template;
}

static inline Tailor__V1__NodeClaim *tk_inflight(Tailor__V1__SolveRequest *r, const char *name, const char *pool,
                                                const char *type, const char *zone)
{
    Tailor__V1__NodeClaim *c = calloc(1, sizeof(*c));
    tailor__v1__node_claim__init(c);
    c->name = tk_s(name);
    c->nodepool = tk_s(pool);
    TK_PUSH(c->requirements, c->n_requirements, tk_nsr(K_TYPE, TK_IN, type));
    TK_PUSH(c->requirements, c->n_requirements, tk_nsr(K_ZONE, TK_IN, zone));
    Tailor__V1__InstanceTypeOption *o = calloc(1, sizeof(*o));
    tailor__v1__instance_type_option__init(o);
    o->name = tk_s(type);
    TK_PUSH(c->instance_type_options, c->n_instance_type_options, o);
    c->resources_requested = tk_rl(0, 0, 0);
    TK_PUSH(r->cluster->nodeclaims, r->cluster->n_nodeclaims, c);
    return c;
}

/* ---- reading a plan ---------------------------------------------------- */

/* Index of the new claim planned for pod uid, or -1. */
static inline int tk_claim_of(const Tailor__V1__SolveResponse *s, const char *uid)
{
    for (size_t i = 0; i < s->n_new_nodeclaims; i++)
        for (size_t j = 0; j < s->new_nodeclaims[i]->n_planned_pod_uids; j++)
            if (!strcmp(s->new_nodeclaims[i]->planned_pod_uids[j], uid))
                return (int)i;
    return -1;
}

/* Node or in-flight claim name the pod is bound to, or NULL. */
static inline const char *tk_bound_to(const Tailor__V1__SolveResponse *s, const char *uid)
{
    for (size_t i = 0; i < s->n_bindings; i++)
        if (!strcmp(s->bindings[i]->pod_uid, uid))
            return s->bindings[i]->target_case == TAILOR__V1__BINDING__TARGET_NODE_NAME
                   ? s->bindings[i]->node_name : s->bindings[i]->nodeclaim_name;
    return NULL;
}

static inline const Tailor__V1__PodError *tk_error_of(const Tailor__V1__SolveResponse *s, const char *uid)
{
    for (size_t i = 0; i < s->n_pod_errors; i++)
        if (!strcmp(s->pod_errors[i]->pod_uid, uid))
            return s->pod_errors[i];
    return NULL;
}

/* All reasons of a pod error joined with " | " (static buffer). */
static inline const char *tk_reasons(const Tailor__V1__PodError *e)
{
    static char buf[2048];
    buf[0] = 0;
    for (size_t i = 0; e && i < e->n_reasons; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, sizeof buf - n, "%s%s: %s", i ? " | " : "", e->reasons[i]->nodepool,
                 e->reasons[i]->reason);
    }
    return buf;
}

/* The value list of a claim requirement on key, comma joined (static). */
static inline const char *tk_claim_req(const Tailor__V1__NodeClaim *c, const char *key)
{
    static char buf[1024];
    buf[0] = 0;
    for (size_t i = 0; i < c->n_requirements; i++)
        if (!strcmp(c->requirements[i]->key, key)) {
            for (size_t j = 0; j < c->requirements[i]->n_values; j++) {
                size_t n = strlen(buf);
                snprintf(buf + n, sizeof buf - n, "%s%s", j ? "," : "", c->requirements[i]->values[j]);
            }
            return buf;
        }
    return NULL;
}

/* The independent checker on a plan; returns the violation count and
 * prints them. */
static inline int tk_check(const Tailor__V1__SolveRequest *req, const Tailor__V1__SolveResponse *resp)
{
    tlr_buf b;
    tlr_buf_init(&b, 1 << 16);
    int n = tlr_plan_check(req, resp, &b);
    if (n)
        fprintf(stderr, "plan check: %d violation(s):\n%s\n", n, tlr_buf_str(&b));
    tlr_buf_free(&b);
    return n;
}

#endif
