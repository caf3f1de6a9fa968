/* plancheck.c - the independent plan checker (see tlr_plancheck.h).
 *
 * Written from the contract, not from the engine.  The checker rebuilds
 * the final placement (existing node, in-flight claim or new claim for
 * every pending pod) and then verifies each rule on it:
 *
 *   outcomes     every pending pod: exactly one of binding / planned on one
 *                new claim / PodError; no unknown uids in the plan.
 *   resources    existing node: requested + new bindings <= allocatable.
 *                in-flight claim: resources_requested + new bindings <=
 *                its status allocatable, or every option's allocatable.
 *                new claim: planned pods + the DaemonSets that would run
 *                there <= allocatable, for EVERY option and every offering
 *                of it the claim requirements allow (the launcher may buy
 *                any of them).
 *   options      1..max_instance_types, sorted by price, each known to the
 *                catalog, each with an available offering outside the ICE
 *                cache that the claim and NodePool requirements allow, and
 *                priced at the cheapest such offering.
 *   affinity     nodeSelector / required node affinity / volume
 *                requirements hold on the node labels, or for a claim on
 *                the labels of every allowed option/offering combination.
 *   taints       tolerated (NoSchedule and NoExecute); a claim carries its
 *                NodePool's taints; no pod on a cordoned or deleting node.
 *                A node not initialized yet sheds its ephemeral and startup
 *                taints, and its claim fills in the allocatable it does not
 *                report yet (tlr_pc_pod_tolerates_node, _node_allocatable).
 *   host ports   unique per node or claim (port, protocol, overlapping IP).
 *   pod (anti-)affinity (required terms) and hard topology spread, over
 *                the final placement with existing pods counted.
 *   minValues    every key with minValues (NodePool or claim requirement)
 *                has that many distinct values across the claim's options,
 *                unless the claim is annotated as relaxed (BestEffort).
 *   labels       a new claim's template labels satisfy its own and its
 *                NodePool's requirements on the same key.
 *   limits       NodePool usage + the largest capacity among each new
 *                claim's options stays within the limits.
 *   cost         total_cost_per_hour = sum of each claim's first option.
 *
 * Topology on new claims: hostname is the claim itself; any other key has
 * a domain only when every allowed option/offering gives the same label
 * value (e.g. zone pinned by a requirement).  A pod whose own hard
 * constraint needs a domain it does not have is a violation; other pods
 * without a domain are not counted (Kubernetes does not count pods on
 * nodes lacking the key).  Topology spread is checked on the final state
 * with a condition every legal incremental placement satisfies, whatever
 * the order pods were bound in: for the pods carrying the same hard
 * constraint (and matching its selector) plus existing matching pods in
 * domain d, members(d) - min over domains of ALL matching pods <= maxSkew.
 * (The last member placed in d saw at least members(d) - 1 others there,
 * and the minimum only grows as pods are added.)  Unconstrained pods that
 * match the selector may legally pile up later, so they count only in
 * the minimum.  Domains and counts are those of the locations the
 * constraint's node filter keeps for the pod (nodeAffinityPolicy /
 * nodeTaintsPolicy, as kube-scheduler; see check_spread_key).
 */
#include "tlr_hash.h"
#include "tlr_plancheck.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

#define OP_IN       TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
#define EFF_NOSCHED TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE
#define EFF_NOEXEC  TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE
#define TSC_ANYWAY  TAILOR__V1__UNSATISFIABLE_CONSTRAINT_ACTION__UNSATISFIABLE_CONSTRAINT_ACTION_SCHEDULE_ANYWAY

#define HOSTNAME_KEY TLR_LABEL_HOSTNAME
#define DEFAULT_MAX_OPTIONS 60

static bool in_values(const char *v, char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(values[i], v) == 0)
            return true;
    return false;
}

/* ---- capacity still booting ---------------------------------------- */

const Tailor__V1__NodeClaim *tlr_pc_node_claim(const Tailor__V1__ClusterState *cl,
                                               const Tailor__V1__Node *n)
{
    for (size_t i = 0; cl && i < cl->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = cl->nodeclaims[i];
        const Tailor__V1__NodeClaimStatus *st = c->status;
        if ((n->nodeclaim_name[0] && strcmp(n->nodeclaim_name, c->name) == 0) ||
            (st && st->node_name[0] && strcmp(st->node_name, n->name) == 0) ||
            (st && st->provider_id[0] && n->provider_id[0] &&
             strcmp(st->provider_id, n->provider_id) == 0))
            return c;
    }
    return NULL;
}

bool tlr_pc_node_booting(const Tailor__V1__Node *n, const Tailor__V1__NodeClaim *nc)
{
    return nc && !n->initialized;
}

/* Karpenter's scheduling.KnownEphemeralTaints (key and effect, as
 * corev1.Taint.MatchTaint compares them) and its key prefixes. */
static bool taint_passing(const Tailor__V1__Taint *t, Tailor__V1__Taint *const *startup,
                          size_t n_startup)
{
    static const struct { const char *key; int effect; } eph[] = {
        {"node.kubernetes.io/not-ready", EFF_NOSCHED},
        {"node.kubernetes.io/not-ready", EFF_NOEXEC},
        {"node.kubernetes.io/unreachable", EFF_NOSCHED},
        {"node.cloudprovider.kubernetes.io/uninitialized", EFF_NOSCHED},
        {TLR_TAINT_UNREGISTERED, EFF_NOEXEC},
    };
    for (size_t i = 0; i < sizeof(eph) / sizeof(eph[0]); i++)
        if ((int)t->effect == eph[i].effect && strcmp(t->key, eph[i].key) == 0)
            return true;
    if (strncmp(t->key, "readiness.k8s.io/", 17) == 0)
        return true;
    for (size_t i = 0; i < n_startup; i++)
        if (startup[i]->effect == t->effect && strcmp(startup[i]->key, t->key) == 0)
            return true;
    return false;
}

static bool tolerates_booting(const Tailor__V1__Pod *p, Tailor__V1__Taint *const *taints,
                              size_t n, Tailor__V1__Taint *const *startup, size_t n_startup)
{
    for (size_t i = 0; i < n; i++)
        if (!taint_passing(taints[i], startup, n_startup) &&
            !tlr_ks_pod_tolerates(p, &taints[i], 1))
            return false;
    return true;
}

bool tlr_pc_pod_tolerates_node(const Tailor__V1__Pod *p, const Tailor__V1__Node *n,
                               const Tailor__V1__NodeClaim *nc,
                               const Tailor__V1__NodePool *pool)
{
    bool registered = true;
    if (nc) {
        const char *r = tlr_ks_label_get(n->labels, n->n_labels, TLR_LABEL_REGISTERED);
        registered = r && strcmp(r, "true") == 0;
    }
    Tailor__V1__Taint *const *t = registered ? n->taints : nc->taints;
    size_t nt = registered ? n->n_taints : nc->n_taints;
    if (!tlr_pc_node_booting(n, nc))
        return tlr_ks_pod_tolerates(p, t, nt);
    if (nc)
        return tolerates_booting(p, t, nt, nc->startup_taints, nc->n_startup_taints);
    return tolerates_booting(p, t, nt, pool ? pool->startup_taints : NULL,
                             pool ? pool->n_startup_taints : 0);
}

bool tlr_pc_pod_tolerates_claim(const Tailor__V1__Pod *p, const Tailor__V1__NodeClaim *nc)
{
    return tolerates_booting(p, nc->taints, nc->n_taints, nc->startup_taints,
                             nc->n_startup_taints);
}

static int64_t rl_named(const Tailor__V1__ResourceList *l, const char *name)
{
    if (!l)
        return 0;
    if (strcmp(name, "cpu") == 0)
        return l->cpu_millis;
    if (strcmp(name, "memory") == 0)
        return l->memory_bytes;
    if (strcmp(name, "pods") == 0)
        return l->pods;
    if (strcmp(name, "ephemeral-storage") == 0)
        return l->ephemeral_storage_bytes;
    for (size_t i = 0; i < l->n_extended; i++)
        if (strcmp(l->extended[i]->name, name) == 0)
            return l->extended[i]->value;
    return 0;
}

int64_t tlr_pc_node_allocatable(const Tailor__V1__Node *n, const Tailor__V1__NodeClaim *nc,
                                const char *name)
{
    int64_t v = rl_named(n->allocatable, name);
    if (v == 0 && tlr_pc_node_booting(n, nc) && nc && nc->status)
        v = rl_named(nc->status->allocatable, name);
    return v;
}

bool tlr_pc_offering_iced(const Tailor__V1__SolveRequest *req, const char *type_name,
                          const Tailor__V1__Offering *o)
{
    for (size_t i = 0; i < req->n_unavailable_offerings; i++) {
        const Tailor__V1__OfferingUnavailable *u = req->unavailable_offerings[i];
        if (u->until_unix_ms > req->now_unix_ms && u->capacity_type == o->capacity_type &&
            strcmp(u->instance_type, type_name) == 0 && strcmp(u->zone, o->zone) == 0)
            return true;
    }
    return false;
}

const Tailor__V1__Catalog *tlr_pc_catalog_for_class(const Tailor__V1__SolveRequest *req,
                                                    const char *node_class)
{
    for (size_t i = 0; i < req->n_catalogs; i++) {
        const Tailor__V1__CatalogRef *c = req->catalogs[i];
        for (size_t j = 0; j < c->n_node_classes; j++)
            if (strcmp(c->node_classes[j], node_class) == 0)
                return c->catalog;
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* string -> index map (open addressing; keys borrowed)                */

typedef struct smap {
    const char **keys;
    size_t *lens;
    int64_t *vals;
    size_t cap, n;
} smap;

static void smap_init(smap *m, size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2 + 16)
        cap <<= 1;
    m->keys = tlr_calloc(cap, sizeof(*m->keys));
    m->lens = tlr_calloc(cap, sizeof(*m->lens));
    m->vals = tlr_calloc(cap, sizeof(*m->vals));
    m->cap = cap;
    m->n = 0;
}

static void smap_free(smap *m)
{
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

static size_t smap_slot(const smap *m, const char *k, size_t len)
{
    size_t i = tlr_fnv1a64(TLR_FNV64_BASIS_SHORT, k, len) & (m->cap - 1);
    while (m->keys[i] && !(m->lens[i] == len && memcmp(m->keys[i], k, len) == 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void smap_grow(smap *m);

/* Insert if absent; returns the value stored (existing or new). */
static int64_t smap_put(smap *m, const char *k, size_t len, int64_t v)
{
    if ((m->n + 1) * 2 > m->cap)
        smap_grow(m);
    size_t i = smap_slot(m, k, len);
    if (!m->keys[i]) {
        m->keys[i] = k;
        m->lens[i] = len;
        m->vals[i] = v;
        m->n++;
    }
    return m->vals[i];
}

static void smap_grow(smap *m)
{
    smap old = *m;
    smap_init(m, old.cap);
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i])
            smap_put(m, old.keys[i], old.lens[i], old.vals[i]);
    smap_free(&old);
}

static int64_t smap_get(const smap *m, const char *k, size_t len)
{
    size_t i = smap_slot(m, k, len);
    return m->keys[i] ? m->vals[i] : -1;
}

#define SMAP_PUTS(m, s, v) smap_put((m), (s), strlen(s), (v))
#define SMAP_GETS(m, s)    smap_get((m), (s), strlen(s))

/* ------------------------------------------------------------------ */
/* resource vectors                                                    */

typedef struct res {
    int64_t cpu, mem, pods, eph;
    size_t n;
    const char *names[16];   /* borrowed */
    int64_t vals[16];
} res;

static void res_add_ext(res *r, const char *name, int64_t v)
{
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->names[i], name) == 0) {
            r->vals[i] += v;
            return;
        }
    }
    if (r->n < 16) {
        r->names[r->n] = name;
        r->vals[r->n++] = v;
    }
}

static void res_add(res *r, const Tailor__V1__ResourceList *l)
{
    if (!l)
        return;
    r->cpu += l->cpu_millis;
    r->mem += l->memory_bytes;
    r->pods += l->pods;
    r->eph += l->ephemeral_storage_bytes;
    for (size_t i = 0; i < l->n_extended; i++)
        res_add_ext(r, l->extended[i]->name, l->extended[i]->value);
}

static int64_t ext_value(const Tailor__V1__ResourceList *l, const char *name)
{
    if (!l)
        return 0;
    for (size_t i = 0; i < l->n_extended; i++)
        if (strcmp(l->extended[i]->name, name) == 0)
            return l->extended[i]->value;
    return 0;
}

static bool rl_empty(const Tailor__V1__ResourceList *l)
{
    return !l || (l->cpu_millis == 0 && l->memory_bytes == 0 && l->pods == 0 &&
                  l->ephemeral_storage_bytes == 0 && l->n_extended == 0);
}

/* Write into why the first resource of used that exceeds cap. */
static bool res_fits(const res *used, const Tailor__V1__ResourceList *cap, char *why,
                     size_t whylen)
{
    const Tailor__V1__ResourceList zero = TAILOR__V1__RESOURCE_LIST__INIT;
    if (!cap)
        cap = &zero;
    struct { const char *n; int64_t u, c; } dims[] = {
        {"cpu(m)", used->cpu, cap->cpu_millis},
        {"memory(B)", used->mem, cap->memory_bytes},
        {"pods", used->pods, cap->pods},
        {"ephemeral-storage(B)", used->eph, cap->ephemeral_storage_bytes},
    };
    for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
        if (dims[i].u > dims[i].c) {
            snprintf(why, whylen, "%s %" PRId64 " > allocatable %" PRId64, dims[i].n,
                     dims[i].u, dims[i].c);
            return false;
        }
    }
    for (size_t i = 0; i < used->n; i++) {
        int64_t c = ext_value(cap, used->names[i]);
        if (used->vals[i] > c) {
            snprintf(why, whylen, "%s %" PRId64 " > allocatable %" PRId64, used->names[i],
                     used->vals[i], c);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* the checker                                                         */

enum loc_kind { LOC_NONE = 0, LOC_NODE, LOC_INFLIGHT, LOC_NEW };

typedef struct loc {
    enum loc_kind kind;
    size_t idx;
} loc;

/* One pod in the final placement: a pending pod placed by the plan or a
 * pod already bound to a node. */
typedef struct placed {
    const Tailor__V1__Pod *pod;
    loc where;
    bool pending;
} placed;

/* A (type, offering) the launcher may buy for a new claim. */
typedef struct combo {
    const Tailor__V1__InstanceType *t;
    const Tailor__V1__Offering *o;
} combo;

typedef struct checker {
    const Tailor__V1__SolveRequest *req;
    const Tailor__V1__SolveResponse *resp;
    const Tailor__V1__ClusterState *cl;
    tlr_buf *out;
    int count;

    smap pod_by_uid;       /* pending pod uid -> index */
    smap node_by_name;
    smap inflight_by_name;
    smap pool_by_name;
    loc *pod_loc;          /* per pending pod */

    /* per new claim: allowed (option, offering) combos */
    combo **combos;
    size_t *n_combos;
    const Tailor__V1__NodePool **claim_pool;

    placed *pl;
    size_t n_pl;

    tlr_ks_labels lab;
} checker;

static void violation(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void violation(checker *c, const char *fmt, ...)
{
    c->count++;
    if (!c->out)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (tlr_buf_vprintf(c->out, fmt, ap) == TLR_OK)
        (void)tlr_buf_addc(c->out, '\n');
    va_end(ap);
}

static const Tailor__V1__InstanceType *catalog_type(const Tailor__V1__Catalog *cat,
                                                    const char *name)
{
    if (!cat)
        return NULL;
    size_t lo = 0, hi = cat->n_instance_types;
    /* Catalogs are sorted by name (instancetype.proto); fall back to a scan
     * if a producer did not sort. */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int d = strcmp(cat->instance_types[mid]->name, name);
        if (d == 0)
            return cat->instance_types[mid];
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = 0; i < cat->n_instance_types; i++)
        if (strcmp(cat->instance_types[i]->name, name) == 0)
            return cat->instance_types[i];
    return NULL;
}

static const char *pod_id(const Tailor__V1__Pod *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", p->namespace_, p->name);
    return buf;
}

static void index_request(checker *c)
{
    const Tailor__V1__SolveRequest *req = c->req;
    smap_init(&c->pod_by_uid, req->n_pending_pods);
    for (size_t i = 0; i < req->n_pending_pods; i++)
        SMAP_PUTS(&c->pod_by_uid, req->pending_pods[i]->uid, (int64_t)i);
    c->pod_loc = tlr_calloc(req->n_pending_pods + 1, sizeof(*c->pod_loc));
    size_t nn = c->cl ? c->cl->n_nodes : 0, nc = c->cl ? c->cl->n_nodeclaims : 0;
    size_t np = c->cl ? c->cl->n_nodepools : 0;
    smap_init(&c->node_by_name, nn);
    smap_init(&c->inflight_by_name, nc);
    smap_init(&c->pool_by_name, np);
    for (size_t i = 0; i < nn; i++)
        SMAP_PUTS(&c->node_by_name, c->cl->nodes[i]->name, (int64_t)i);
    for (size_t i = 0; i < nc; i++)
        SMAP_PUTS(&c->inflight_by_name, c->cl->nodeclaims[i]->name, (int64_t)i);
    for (size_t i = 0; i < np; i++)
        SMAP_PUTS(&c->pool_by_name, c->cl->nodepools[i]->name, (int64_t)i);
}

/* Record outcome o of pending pod uid; flags duplicates and unknown uids. */
static void note_outcome(checker *c, const char *uid, loc where, const char *what,
                         int *seen)
{
    int64_t i = SMAP_GETS(&c->pod_by_uid, uid);
    if (i < 0) {
        violation(c, "%s names pod uid %s, which is not a pending pod of the request",
                  what, uid);
        return;
    }
    const Tailor__V1__Pod *p = c->req->pending_pods[i];
    char id[512];
    if (seen[i]++) {
        violation(c, "pod %s: has more than one outcome (also %s)", pod_id(p, id, sizeof(id)),
                  what);
        return;
    }
    c->pod_loc[i] = where;
}

static void check_outcomes(checker *c)
{
    const Tailor__V1__SolveResponse *r = c->resp;
    int *seen = tlr_calloc(c->req->n_pending_pods + 1, sizeof(*seen));
    char what[600];
    for (size_t i = 0; i < r->n_bindings; i++) {
        const Tailor__V1__Binding *b = r->bindings[i];
        loc where = {LOC_NONE, 0};
        if (b->target_case == TAILOR__V1__BINDING__TARGET_NODE_NAME) {
            int64_t n = SMAP_GETS(&c->node_by_name, b->node_name);
            if (n < 0)
                violation(c, "binding of pod uid %s targets unknown node %s", b->pod_uid,
                          b->node_name);
            else
                where = (loc){LOC_NODE, (size_t)n};
            snprintf(what, sizeof(what), "binding to node %s", b->node_name);
        } else if (b->target_case == TAILOR__V1__BINDING__TARGET_NODECLAIM_NAME) {
            int64_t n = SMAP_GETS(&c->inflight_by_name, b->nodeclaim_name);
            if (n < 0)
                violation(c, "binding of pod uid %s targets unknown nodeclaim %s", b->pod_uid,
                          b->nodeclaim_name);
            else
                where = (loc){LOC_INFLIGHT, (size_t)n};
            snprintf(what, sizeof(what), "binding to nodeclaim %s", b->nodeclaim_name);
        } else {
            violation(c, "binding of pod uid %s has no target", b->pod_uid);
            snprintf(what, sizeof(what), "binding without target");
        }
        note_outcome(c, b->pod_uid, where, what, seen);
    }
    for (size_t i = 0; i < r->n_new_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *nc = r->new_nodeclaims[i];
        snprintf(what, sizeof(what), "new claim #%zu", i);
        if (nc->n_planned_pod_uids == 0)
            violation(c, "new claim #%zu has no planned pods", i);
        for (size_t j = 0; j < nc->n_planned_pod_uids; j++)
            note_outcome(c, nc->planned_pod_uids[j], (loc){LOC_NEW, i}, what, seen);
    }
    for (size_t i = 0; i < r->n_pod_errors; i++)
        note_outcome(c, r->pod_errors[i]->pod_uid, (loc){LOC_NONE, 0}, "a pod error", seen);
    char id[512];
    for (size_t i = 0; i < c->req->n_pending_pods; i++)
        if (!seen[i])
            violation(c, "pod %s: neither bound, planned nor reported as an error",
                      pod_id(c->req->pending_pods[i], id, sizeof(id)));
    free(seen);
}

/* Labels of an in-flight claim: its template labels, single-valued
 * requirements, and what its status says it became. */
static void inflight_labels(checker *c, const Tailor__V1__NodeClaim *nc)
{
    tlr_ks_labels_reset(&c->lab);
    for (size_t i = 0; i < nc->n_labels; i++)
        tlr_ks_labels_set(&c->lab, nc->labels[i]->key, nc->labels[i]->value);
    tlr_ks_labels_set_single_in(&c->lab, nc->requirements, nc->n_requirements, false);
    if (nc->status) {
        if (nc->status->instance_type[0])
            tlr_ks_labels_set(&c->lab, TLR_LABEL_INSTANCE_TYPE,
                              nc->status->instance_type);
        if (nc->status->zone[0])
            tlr_ks_labels_set(&c->lab, TLR_LABEL_ZONE, nc->status->zone);
        const char *ct = tlr_ks_capacity_type_name(nc->status->capacity_type);
        if (ct[0])
            tlr_ks_labels_set(&c->lab, TLR_LABEL_CAPACITY_TYPE, ct);
    }
    if (nc->nodepool[0])
        tlr_ks_labels_set(&c->lab, TLR_LABEL_NODEPOOL, nc->nodepool);
}

/* Labels of new claim #ci bought as combo k. */
static void new_claim_labels(checker *c, size_t ci, const combo *k)
{
    const Tailor__V1__NodeClaim *nc = c->resp->new_nodeclaims[ci];
    tlr_ks_labels_for_offering(&c->lab, c->claim_pool[ci], k->t, k->o);
    for (size_t i = 0; i < nc->n_labels; i++)
        if (!tlr_ks_labels_get(&c->lab, nc->labels[i]->key))
            tlr_ks_labels_set(&c->lab, nc->labels[i]->key, nc->labels[i]->value);
    tlr_ks_labels_set_single_in(&c->lab, nc->requirements, nc->n_requirements, true);
}

static bool daemonset_runs(const Tailor__V1__DaemonSet *ds, Tailor__V1__Taint *const *taints,
                           size_t n_taints, const tlr_ks_labels *l)
{
    if (!ds->pod_template)
        return false;
    return tlr_ks_pod_tolerates(ds->pod_template, taints, n_taints) &&
           tlr_ks_pod_node_affinity_holds(ds->pod_template, l, false);
}

/* Check the options of new claim ci and collect its allowed combos. */
static void check_claim_options(checker *c, size_t ci)
{
    const Tailor__V1__NodeClaim *nc = c->resp->new_nodeclaims[ci];
    int64_t pi = SMAP_GETS(&c->pool_by_name, nc->nodepool);
    const Tailor__V1__NodePool *pool = pi >= 0 ? c->cl->nodepools[pi] : NULL;
    c->claim_pool[ci] = pool;
    if (!pool) {
        violation(c, "new claim #%zu: unknown nodepool '%s'", ci, nc->nodepool);
        return;
    }
    const char *cls = nc->node_class[0] ? nc->node_class
                      : pool->node_class_ref ? pool->node_class_ref->name : "";
    const Tailor__V1__Catalog *cat = tlr_pc_catalog_for_class(c->req, cls);
    if (!cat) {
        violation(c, "new claim #%zu: no catalog in the request for node class '%s'", ci, cls);
        return;
    }
    int max = c->req->options && c->req->options->max_instance_types > 0
                  ? c->req->options->max_instance_types : DEFAULT_MAX_OPTIONS;
    if (nc->n_instance_type_options == 0)
        violation(c, "new claim #%zu: no instance-type options", ci);
    if (nc->n_instance_type_options > (size_t)max)
        violation(c, "new claim #%zu: %zu options, more than max_instance_types %d", ci,
                  nc->n_instance_type_options, max);
    for (size_t i = 0; i < pool->n_taints; i++) {
        bool found = false;
        for (size_t j = 0; j < nc->n_taints && !found; j++)
            found = strcmp(nc->taints[j]->key, pool->taints[i]->key) == 0 &&
                    strcmp(nc->taints[j]->value, pool->taints[i]->value) == 0 &&
                    nc->taints[j]->effect == pool->taints[i]->effect;
        if (!found)
            violation(c, "new claim #%zu: lacks taint %s of nodepool %s", ci,
                      pool->taints[i]->key, pool->name);
    }
    /* A claim carries exactly its pool's taints (Karpenter copies the
     * template): more would silently change which DaemonSets run. */
    for (size_t j = 0; j < nc->n_taints; j++) {
        bool found = false;
        for (size_t i = 0; i < pool->n_taints && !found; i++)
            found = strcmp(nc->taints[j]->key, pool->taints[i]->key) == 0 &&
                    strcmp(nc->taints[j]->value, pool->taints[i]->value) == 0 &&
                    nc->taints[j]->effect == pool->taints[i]->effect;
        if (!found)
            violation(c, "new claim #%zu: taint %s is not a taint of nodepool %s", ci,
                      nc->taints[j]->key, pool->name);
    }
    size_t cap = 0;
    for (size_t i = 0; i < nc->n_instance_type_options; i++) {
        const Tailor__V1__InstanceTypeOption *opt = nc->instance_type_options[i];
        if (i > 0 && opt->price_per_hour < nc->instance_type_options[i - 1]->price_per_hour)
            violation(c, "new claim #%zu: option %s ($%.6f) ranked after a dearer one ($%.6f)",
                      ci, opt->name, opt->price_per_hour,
                      nc->instance_type_options[i - 1]->price_per_hour);
        for (size_t j = 0; j < i; j++)
            if (strcmp(nc->instance_type_options[j]->name, opt->name) == 0)
                violation(c, "new claim #%zu: option %s listed twice", ci, opt->name);
        const Tailor__V1__InstanceType *t = catalog_type(cat, opt->name);
        if (!t) {
            violation(c, "new claim #%zu: option %s is not in the catalog", ci, opt->name);
            continue;
        }
        double cheapest = INFINITY;
        for (size_t k = 0; k < t->n_offerings; k++) {
            const Tailor__V1__Offering *o = t->offerings[k];
            if (!o->available || tlr_pc_offering_iced(c->req, t->name, o))
                continue;
            tlr_ks_labels_for_offering(&c->lab, pool, t, o);
            tlr_ks_labels_set_single_in(&c->lab, nc->requirements, nc->n_requirements, true);
            if (!tlr_ks_requirements_hold(pool->requirements, pool->n_requirements, &c->lab, true) ||
                !tlr_ks_requirements_hold(nc->requirements, nc->n_requirements, &c->lab, true))
                continue;
            TLR_GROW(c->combos[ci], cap, c->n_combos[ci] + 1);
            c->combos[ci][c->n_combos[ci]++] = (combo){t, o};
            if (o->price_per_hour < cheapest)
                cheapest = o->price_per_hour;
        }
        if (cheapest == INFINITY) {
            violation(c, "new claim #%zu: option %s has no available offering (outside the "
                      "ICE cache) that the claim and nodepool requirements allow", ci, t->name);
            continue;
        }
        if (fabs(cheapest - opt->price_per_hour) > 1e-9 * (1 + cheapest))
            violation(c, "new claim #%zu: option %s priced $%.6f, cheapest allowed offering "
                      "is $%.6f", ci, t->name, opt->price_per_hour, cheapest);
    }
}

/* ---- minValues ------------------------------------------------------ *
 *
 * Karpenter's SatisfiesMinValues (pkg/cloudprovider/types.go): for every
 * requirement key with minValues, the union over the claim's instance-type
 * options of the values the type's own requirements give that key must
 * hold at least minValues values.  A type's requirements carry every value
 * of a multi-valued label (fake types' os In [linux, windows, darwin]), and
 * zone and capacity type as the union over its offerings; a type without
 * the key adds nothing.  When a key has minValues on several requirements
 * (NodePool and claim), the intersection keeps the largest
 * (Requirement.Intersection, maxIntPtr).  A claim the solver relaxed under
 * MinValuesPolicy BestEffort carries the annotation below and is exempt;
 * under Strict that annotation is itself a violation. */

#define MINV_RELAXED TLR_ANNOTATION_MIN_VALUES_RELAXED

typedef struct strset {
    const char **v;   /* borrowed */
    size_t n, cap;
} strset;

static void strset_add(strset *s, const char *x)
{
    if (!x || !x[0])
        return;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0)
            return;
    TLR_GROW(s->v, s->cap, s->n + 1);
    s->v[s->n++] = x;
}

/* Add the values instance type t's requirements give key to s. */
static void type_values(const Tailor__V1__InstanceType *t, const char *key, strset *s)
{
    if (strcmp(key, TLR_LABEL_INSTANCE_TYPE) == 0)
        strset_add(s, t->name);
    else if (strcmp(key, TLR_LABEL_ARCH) == 0)
        strset_add(s, t->arch);
    else if (strcmp(key, TLR_LABEL_OS) == 0)
        for (size_t i = 0; i < t->n_operating_systems; i++)
            strset_add(s, t->operating_systems[i]);
    for (size_t i = 0; i < t->n_offerings; i++) {
        const Tailor__V1__Offering *o = t->offerings[i];
        if (strcmp(key, TLR_LABEL_ZONE) == 0)
            strset_add(s, o->zone);
        else if (strcmp(key, TLR_LABEL_ZONE_ID) == 0)
            strset_add(s, o->zone_id);
        else if (strcmp(key, TLR_LABEL_CAPACITY_TYPE) == 0)
            strset_add(s, tlr_ks_capacity_type_name(o->capacity_type));
    }
    for (size_t i = 0; i < t->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = t->requirements[i];
        if (r->operator_ != OP_IN || strcmp(r->key, key) != 0)
            continue;
        for (size_t j = 0; j < r->n_values; j++)
            strset_add(s, r->values[j]);
    }
}

/* The largest minValues any of rs (and of more, may be NULL) sets on key. */
static int32_t min_values_of(const char *key, Tailor__V1__NodeSelectorRequirement *const *rs,
                             size_t n, Tailor__V1__NodeSelectorRequirement *const *more,
                             size_t n_more)
{
    int32_t mv = 0;
    for (size_t i = 0; i < n; i++)
        if (rs[i]->min_values > mv && strcmp(rs[i]->key, key) == 0)
            mv = rs[i]->min_values;
    for (size_t i = 0; i < n_more; i++)
        if (more[i]->min_values > mv && strcmp(more[i]->key, key) == 0)
            mv = more[i]->min_values;
    return mv;
}

static void check_claim_min_values(checker *c, size_t ci)
{
    const Tailor__V1__NodeClaim *nc = c->resp->new_nodeclaims[ci];
    const Tailor__V1__NodePool *pool = c->claim_pool[ci];
    if (!pool)
        return;
    const char *relaxed = tlr_ks_label_get(nc->annotations, nc->n_annotations, MINV_RELAXED);
    if (relaxed && strcmp(relaxed, "true") == 0) {
        bool best_effort = c->req->options && c->req->options->min_values_policy ==
            TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT;
        if (!best_effort)
            violation(c, "new claim #%zu: annotated %s, but min_values_policy is Strict", ci,
                      MINV_RELAXED);
        return;
    }
    const char *cls = nc->node_class[0] ? nc->node_class
                      : pool->node_class_ref ? pool->node_class_ref->name : "";
    const Tailor__V1__Catalog *cat = tlr_pc_catalog_for_class(c->req, cls);
    if (!cat)
        return;   /* check_claim_options reported it */
    /* Every key with minValues, each once: the pool's, then the claim's. */
    Tailor__V1__NodeSelectorRequirement *const *lists[2] = {pool->requirements, nc->requirements};
    size_t lens[2] = {pool->n_requirements, nc->n_requirements};
    strset keys = {0}, vals = {0};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < lens[l]; i++)
            if (lists[l][i]->min_values > 0)
                strset_add(&keys, lists[l][i]->key);
    for (size_t k = 0; k < keys.n; k++) {
        int32_t mv = min_values_of(keys.v[k], pool->requirements, pool->n_requirements,
                                   nc->requirements, nc->n_requirements);
        vals.n = 0;
        for (size_t i = 0; i < nc->n_instance_type_options; i++) {
            const Tailor__V1__InstanceType *t =
                catalog_type(cat, nc->instance_type_options[i]->name);
            if (t)   /* unknown options: check_claim_options reported them */
                type_values(t, keys.v[k], &vals);
        }
        if (vals.n < (size_t)mv)
            violation(c, "new claim #%zu (nodepool %s): minValues %d for %s not met: its %zu "
                      "options have %zu distinct values", ci, pool->name, mv, keys.v[k],
                      nc->n_instance_type_options, vals.n);
    }
    free(keys.v);
    free(vals.v);
}

/* A claim's template labels are requirements too (Karpenter adds them as
 * key In [value]): a label whose value a requirement of the claim or of
 * its NodePool excludes leaves the claim with no node it could become. */
static void check_claim_labels(checker *c, size_t ci)
{
    const Tailor__V1__NodeClaim *nc = c->resp->new_nodeclaims[ci];
    const Tailor__V1__NodePool *pool = c->claim_pool[ci];
    Tailor__V1__NodeSelectorRequirement *const *lists[2] = {
        nc->requirements, pool ? pool->requirements : NULL};
    size_t lens[2] = {nc->n_requirements, pool ? pool->n_requirements : 0};
    static const char *const whose[2] = {"its requirement", "its nodepool's requirement"};
    for (size_t i = 0; i < nc->n_labels; i++) {
        const Tailor__V1__Label *lb = nc->labels[i];
        tlr_ks_labels_reset(&c->lab);
        tlr_ks_labels_set(&c->lab, lb->key, lb->value);
        for (int l = 0; l < 2; l++) {
            for (size_t j = 0; j < lens[l]; j++) {
                const Tailor__V1__NodeSelectorRequirement *r = lists[l][j];
                if (strcmp(r->key, lb->key) != 0 || tlr_ks_requirement_holds(r, &c->lab, false))
                    continue;
                violation(c, "new claim #%zu: label %s=%s contradicts %s %s %s [%s%s]", ci,
                          lb->key, lb->value, whose[l], r->key, tlr_ks_operator_name(r->operator_),
                          r->n_values ? r->values[0] : "", r->n_values > 1 ? ", ..." : "");
            }
        }
    }
}

static void check_pod_on_labels(checker *c, const Tailor__V1__Pod *p, const char *where,
                                const char *combo_desc)
{
    char id[512];
    if (!tlr_ks_pod_node_affinity_holds(p, &c->lab, false))
        violation(c, "pod %s: node selector/affinity does not hold on %s%s",
                  pod_id(p, id, sizeof(id)), where, combo_desc);
}

static void check_new_claim(checker *c, size_t ci)
{
    const Tailor__V1__NodeClaim *nc = c->resp->new_nodeclaims[ci];
    char where[96], desc[300], why[200], id[512];
    snprintf(where, sizeof(where), "new claim #%zu", ci);
    res sum = {0};
    for (size_t j = 0; j < nc->n_planned_pod_uids; j++) {
        int64_t pi = SMAP_GETS(&c->pod_by_uid, nc->planned_pod_uids[j]);
        if (pi < 0)
            continue;
        const Tailor__V1__Pod *p = c->req->pending_pods[pi];
        res_add(&sum, p->requests);
        if (!tlr_ks_pod_tolerates(p, nc->taints, nc->n_taints))
            violation(c, "pod %s: does not tolerate the taints of %s", pod_id(p, id, sizeof(id)),
                      where);
    }
    const Tailor__V1__ClusterState *cl = c->cl;
    /* Labels matter only for daemonsets and pods with node constraints. */
    bool need_labels = cl->n_daemonsets > 0;
    for (size_t j = 0; j < nc->n_planned_pod_uids && !need_labels; j++) {
        int64_t pi = SMAP_GETS(&c->pod_by_uid, nc->planned_pod_uids[j]);
        const Tailor__V1__Pod *p = pi >= 0 ? c->req->pending_pods[pi] : NULL;
        need_labels = p && (p->n_node_selector || p->n_required_node_affinity ||
                            p->n_volume_requirements);
    }
    bool *bad = tlr_calloc(nc->n_planned_pod_uids + 1, sizeof(bool));
    const Tailor__V1__InstanceType *last_fail = NULL;
    for (size_t k = 0; k < c->n_combos[ci]; k++) {
        const combo *cb = &c->combos[ci][k];
        if (need_labels)
            new_claim_labels(c, ci, cb);
        snprintf(desc, sizeof(desc), " (as %s in %s/%s)", cb->t->name, cb->o->zone,
                 tlr_ks_capacity_type_name(cb->o->capacity_type));
        res used = sum;
        for (size_t d = 0; d < cl->n_daemonsets; d++)
            if (daemonset_runs(cl->daemonsets[d], nc->taints, nc->n_taints, &c->lab))
                res_add(&used, cl->daemonsets[d]->pod_template->requests);
        if (cb->t != last_fail && !res_fits(&used, cb->t->allocatable, why, sizeof(why))) {
            violation(c, "%s%s: planned pods + daemonsets do not fit: %s", where, desc, why);
            last_fail = cb->t;
        }
        for (size_t j = 0; need_labels && j < nc->n_planned_pod_uids; j++) {
            int64_t pi = SMAP_GETS(&c->pod_by_uid, nc->planned_pod_uids[j]);
            if (pi < 0 || bad[j])
                continue;
            const Tailor__V1__Pod *p = c->req->pending_pods[pi];
            if (!tlr_ks_pod_node_affinity_holds(p, &c->lab, false)) {
                bad[j] = true;
                violation(c, "pod %s: node selector/affinity does not hold on %s%s",
                          pod_id(p, id, sizeof(id)), where, desc);
            }
        }
    }
    free(bad);
}

/* The allocatable of a booting node whose claim fills in what the Node
 * does not report yet (tlr_pc_node_allocatable), or NULL when the Node's
 * own applies.  Owned: free with free_allocatable(). */
static Tailor__V1__ResourceList *booting_allocatable(const Tailor__V1__Node *n,
                                                     const Tailor__V1__NodeClaim *nc)
{
    if (!tlr_pc_node_booting(n, nc) || !nc || !nc->status || rl_empty(nc->status->allocatable))
        return NULL;
    const Tailor__V1__ResourceList *a = n->allocatable, *b = nc->status->allocatable;
    Tailor__V1__ResourceList *r = tlr_malloc(sizeof(*r));
    tailor__v1__resource_list__init(r);
    r->cpu_millis = tlr_pc_node_allocatable(n, nc, "cpu");
    r->memory_bytes = tlr_pc_node_allocatable(n, nc, "memory");
    r->pods = tlr_pc_node_allocatable(n, nc, "pods");
    r->ephemeral_storage_bytes = tlr_pc_node_allocatable(n, nc, "ephemeral-storage");
    size_t na = a ? a->n_extended : 0, nb = b->n_extended;
    r->extended = tlr_calloc(na + nb + 1, sizeof(*r->extended));
    for (size_t i = 0; i < na + nb; i++) {
        const char *name = i < na ? a->extended[i]->name : b->extended[i - na]->name;
        bool dup = false;
        for (size_t j = 0; j < r->n_extended && !dup; j++)
            dup = strcmp(r->extended[j]->name, name) == 0;
        if (dup)
            continue;
        Tailor__V1__ExtendedResource *e = tlr_malloc(sizeof(*e));
        tailor__v1__extended_resource__init(e);
        e->name = (char *)name;   /* borrowed */
        e->value = tlr_pc_node_allocatable(n, nc, name);
        r->extended[r->n_extended++] = e;
    }
    return r;
}

static void free_allocatable(Tailor__V1__ResourceList *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_extended; i++)
        free(r->extended[i]);
    free(r->extended);
    free(r);
}

static void check_existing(checker *c)
{
    const Tailor__V1__ClusterState *cl = c->cl;
    size_t nn = cl ? cl->n_nodes : 0, nc = cl ? cl->n_nodeclaims : 0;
    res *node_use = tlr_calloc(nn + 1, sizeof(*node_use));
    res *claim_use = tlr_calloc(nc + 1, sizeof(*claim_use));
    bool *node_touched = tlr_calloc(nn + 1, sizeof(bool));
    bool *claim_touched = tlr_calloc(nc + 1, sizeof(bool));
    char id[512], why[200];
    for (size_t i = 0; i < nn; i++)
        res_add(&node_use[i], cl->nodes[i]->requested);
    for (size_t i = 0; i < nc; i++)
        res_add(&claim_use[i], cl->nodeclaims[i]->resources_requested);
    for (size_t i = 0; i < c->req->n_pending_pods; i++) {
        const Tailor__V1__Pod *p = c->req->pending_pods[i];
        loc w = c->pod_loc[i];
        if (w.kind == LOC_NODE) {
            const Tailor__V1__Node *n = cl->nodes[w.idx];
            node_touched[w.idx] = true;
            res_add(&node_use[w.idx], p->requests);
            if (n->unschedulable || n->marked_for_deletion || n->deletion_unix_ms)
                violation(c, "pod %s: bound to node %s, which is cordoned or being deleted",
                          pod_id(p, id, sizeof(id)), n->name);
            int64_t pi = SMAP_GETS(&c->pool_by_name, n->nodepool);
            if (!tlr_pc_pod_tolerates_node(p, n, tlr_pc_node_claim(cl, n),
                                           pi >= 0 ? cl->nodepools[pi] : NULL))
                violation(c, "pod %s: does not tolerate the taints of node %s",
                          pod_id(p, id, sizeof(id)), n->name);
            tlr_ks_labels_reset(&c->lab);
            for (size_t j = 0; j < n->n_labels; j++)
                tlr_ks_labels_set(&c->lab, n->labels[j]->key, n->labels[j]->value);
            tlr_ks_labels_set(&c->lab, HOSTNAME_KEY,
                              tlr_ks_labels_get(&c->lab, HOSTNAME_KEY) ? tlr_ks_labels_get(&c->lab, HOSTNAME_KEY) : n->name);
            char where[300];
            snprintf(where, sizeof(where), "node %s", n->name);
            check_pod_on_labels(c, p, where, "");
        } else if (w.kind == LOC_INFLIGHT) {
            const Tailor__V1__NodeClaim *ncl = cl->nodeclaims[w.idx];
            bool planned = false;
            for (size_t j = 0; j < ncl->n_planned_pod_uids && !planned; j++)
                planned = strcmp(ncl->planned_pod_uids[j], p->uid) == 0;
            if (!planned) {
                claim_touched[w.idx] = true;
                res_add(&claim_use[w.idx], p->requests);
            }
            if (ncl->deletion_unix_ms)
                violation(c, "pod %s: bound to nodeclaim %s, which is being deleted",
                          pod_id(p, id, sizeof(id)), ncl->name);
            if (!tlr_pc_pod_tolerates_claim(p, ncl))
                violation(c, "pod %s: does not tolerate the taints of nodeclaim %s",
                          pod_id(p, id, sizeof(id)), ncl->name);
            inflight_labels(c, ncl);
            char where[300];
            snprintf(where, sizeof(where), "nodeclaim %s", ncl->name);
            check_pod_on_labels(c, p, where, "");
        }
    }
    for (size_t i = 0; i < nn; i++) {
        if (!node_touched[i])
            continue;
        const Tailor__V1__Node *n = cl->nodes[i];
        Tailor__V1__ResourceList *al = booting_allocatable(n, tlr_pc_node_claim(cl, n));
        if (!res_fits(&node_use[i], al ? al : n->allocatable, why, sizeof(why)))
            violation(c, "node %s: requested + new bindings do not fit: %s", n->name, why);
        free_allocatable(al);
    }
    for (size_t i = 0; i < nc; i++) {
        if (!claim_touched[i])
            continue;
        const Tailor__V1__NodeClaim *ncl = cl->nodeclaims[i];
        if (ncl->status && !rl_empty(ncl->status->allocatable)) {
            if (!res_fits(&claim_use[i], ncl->status->allocatable, why, sizeof(why)))
                violation(c, "nodeclaim %s: requested + new bindings do not fit: %s",
                          ncl->name, why);
            continue;
        }
        int64_t pi = SMAP_GETS(&c->pool_by_name, ncl->nodepool);
        const Tailor__V1__NodePool *pool = pi >= 0 ? cl->nodepools[pi] : NULL;
        const char *cls = ncl->node_class[0] ? ncl->node_class
                          : pool && pool->node_class_ref ? pool->node_class_ref->name : "";
        const Tailor__V1__Catalog *cat = tlr_pc_catalog_for_class(c->req, cls);
        for (size_t j = 0; j < ncl->n_instance_type_options; j++) {
            const Tailor__V1__InstanceType *t =
                catalog_type(cat, ncl->instance_type_options[j]->name);
            if (!t) {
                violation(c, "nodeclaim %s: option %s unknown, cannot verify new bindings",
                          ncl->name, ncl->instance_type_options[j]->name);
                continue;
            }
            if (!res_fits(&claim_use[i], t->allocatable, why, sizeof(why)))
                violation(c, "nodeclaim %s (as %s): requested + new bindings do not fit: %s",
                          ncl->name, t->name, why);
        }
    }
    free(node_use);
    free(claim_use);
    free(node_touched);
    free(claim_touched);
}

/* ---- final placement: host ports, pod (anti-)affinity, spread ---- */

static void build_placement(checker *c)
{
    const Tailor__V1__ClusterState *cl = c->cl;
    size_t cap = 0;
    for (size_t i = 0; i < c->req->n_pending_pods; i++) {
        if (c->pod_loc[i].kind == LOC_NONE)
            continue;
        TLR_GROW(c->pl, cap, c->n_pl + 1);
        c->pl[c->n_pl++] = (placed){c->req->pending_pods[i], c->pod_loc[i], true};
    }
    for (size_t i = 0; cl && i < cl->n_nodes; i++) {
        for (size_t j = 0; j < cl->nodes[i]->n_pods; j++) {
            TLR_GROW(c->pl, cap, c->n_pl + 1);
            c->pl[c->n_pl++] = (placed){cl->nodes[i]->pods[j], {LOC_NODE, i}, false};
        }
    }
}

/* The domain of location w for topology key; NULL = none / not pinned.
 * The string is borrowed from the request/response or from scratch. */
static const char *domain_of(checker *c, loc w, const char *key, char *scratch, size_t n)
{
    if (w.kind == LOC_NODE) {
        const Tailor__V1__Node *nd = c->cl->nodes[w.idx];
        const char *v = tlr_ks_label_get(nd->labels, nd->n_labels, key);
        if (!v && strcmp(key, HOSTNAME_KEY) == 0)
            v = nd->name;
        return v;
    }
    if (w.kind == LOC_INFLIGHT) {
        const Tailor__V1__NodeClaim *nc = c->cl->nodeclaims[w.idx];
        if (strcmp(key, HOSTNAME_KEY) == 0) {
            snprintf(scratch, n, "inflight:%s", nc->name);
            return scratch;
        }
        inflight_labels(c, nc);
        return tlr_ks_labels_get(&c->lab, key);
    }
    if (w.kind == LOC_NEW) {
        if (strcmp(key, HOSTNAME_KEY) == 0) {
            snprintf(scratch, n, "new:%zu", w.idx);
            return scratch;
        }
        const char *v = NULL;
        for (size_t k = 0; k < c->n_combos[w.idx]; k++) {
            new_claim_labels(c, w.idx, &c->combos[w.idx][k]);
            const char *x = tlr_ks_labels_get(&c->lab, key);
            if (!x || (v && strcmp(v, x) != 0))
                return NULL;
            v = x;
        }
        if (!v)
            return NULL;
        snprintf(scratch, n, "%s", v);
        return scratch;
    }
    return NULL;
}

/* Domain values for every placed pod under key (borrowed from *store;
 * NULL = none).  Each location is resolved once. */
static const char **domains_for_key(checker *c, const char *key, char ***store,
                                    size_t *n_store)
{
    size_t nn = c->cl->n_nodes, ni = c->cl->n_nodeclaims, nw = c->resp->n_new_nodeclaims;
    *n_store = nn + ni + nw;
    char **s = tlr_calloc(*n_store + 1, sizeof(*s));
    bool *done = tlr_calloc(*n_store + 1, sizeof(bool));
    const char **d = tlr_calloc(c->n_pl + 1, sizeof(*d));
    char scratch[300];
    for (size_t i = 0; i < c->n_pl; i++) {
        loc w = c->pl[i].where;
        size_t slot = w.kind == LOC_NODE ? w.idx : w.kind == LOC_INFLIGHT ? nn + w.idx
                                                                           : nn + ni + w.idx;
        if (!done[slot]) {
            const char *v = domain_of(c, w, key, scratch, sizeof(scratch));
            s[slot] = v ? tlr_strdup(v) : NULL;
            done[slot] = true;
        }
        d[i] = s[slot];
    }
    free(done);
    *store = s;
    return d;
}

static void free_domains(const char **d, char **store, size_t n_store)
{
    for (size_t i = 0; i < n_store; i++)
        free(store[i]);
    free(store);
    free(d);
}

/* Does affinity term t of pod owner select pod q? */
static bool term_selects(const Tailor__V1__PodAffinityTerm *t, const Tailor__V1__Pod *owner,
                         const Tailor__V1__Pod *q)
{
    if (!t->all_namespaces) {
        if (t->n_namespaces == 0) {
            if (strcmp(owner->namespace_, q->namespace_) != 0)
                return false;
        } else if (!in_values(q->namespace_, t->namespaces, t->n_namespaces)) {
            return false;
        }
    }
    for (size_t i = 0; i < t->n_match_label_keys; i++) {
        const char *ov = tlr_ks_label_get(owner->labels, owner->n_labels, t->match_label_keys[i]);
        const char *qv = tlr_ks_label_get(q->labels, q->n_labels, t->match_label_keys[i]);
        if (ov && (!qv || strcmp(ov, qv) != 0))
            return false;
    }
    for (size_t i = 0; i < t->n_mismatch_label_keys; i++) {
        const char *ov = tlr_ks_label_get(owner->labels, owner->n_labels, t->mismatch_label_keys[i]);
        const char *qv = tlr_ks_label_get(q->labels, q->n_labels, t->mismatch_label_keys[i]);
        if (ov && qv && strcmp(ov, qv) == 0)
            return false;
    }
    return tlr_ks_selector_matches(t->label_selector, q->labels, q->n_labels);
}

/* Group placed pods by domain: returns, per placed pod, the index of the
 * next pod in the same domain (a singly linked ring via head[]). */
typedef struct dgroups {
    smap by_value;         /* domain value -> group id */
    size_t *first;         /* group -> first placed index */
    size_t *next;          /* placed index -> next in group, SIZE_MAX ends */
    int64_t *group;        /* placed index -> group id, -1 = no domain */
    size_t n_groups;
} dgroups;

static void dgroups_build(dgroups *g, const char **dom, size_t n)
{
    smap_init(&g->by_value, 64);
    g->first = tlr_calloc(n + 1, sizeof(size_t));
    g->next = tlr_calloc(n + 1, sizeof(size_t));
    g->group = tlr_calloc(n + 1, sizeof(int64_t));
    g->n_groups = 0;
    size_t *last = tlr_calloc(n + 1, sizeof(size_t));
    for (size_t i = 0; i < n; i++) {
        g->next[i] = SIZE_MAX;
        if (!dom[i]) {
            g->group[i] = -1;
            continue;
        }
        int64_t id = SMAP_PUTS(&g->by_value, dom[i], (int64_t)g->n_groups);
        if ((size_t)id == g->n_groups) {
            g->first[g->n_groups] = i;
            last[g->n_groups] = i;
            g->n_groups++;
        } else {
            g->next[last[id]] = i;
            last[id] = i;
        }
        g->group[i] = id;
    }
    free(last);
}

static void dgroups_free(dgroups *g)
{
    smap_free(&g->by_value);
    free(g->first);
    free(g->next);
    free(g->group);
}

static void check_anti_affinity_key(checker *c, const char *key, const char **dom,
                                    dgroups *g)
{
    char id1[512], id2[512];
    for (size_t i = 0; i < c->n_pl; i++) {
        const Tailor__V1__Pod *q = c->pl[i].pod;
        if (!q->pod_anti_affinity)
            continue;
        for (size_t t = 0; t < q->pod_anti_affinity->n_required; t++) {
            const Tailor__V1__PodAffinityTerm *term = q->pod_anti_affinity->required[t];
            if (strcmp(term->topology_key, key) != 0)
                continue;
            if (g->group[i] < 0) {
                if (c->pl[i].pending)
                    violation(c, "pod %s: anti-affinity on %s, but its node has no %s domain",
                              pod_id(q, id1, sizeof(id1)), key, key);
                continue;
            }
            for (size_t j = g->first[g->group[i]]; j != SIZE_MAX; j = g->next[j]) {
                if (j == i || (!c->pl[i].pending && !c->pl[j].pending))
                    continue;
                if (term_selects(term, q, c->pl[j].pod))
                    violation(c, "pod %s: required anti-affinity (%s) violated by pod %s in "
                              "domain %s", pod_id(q, id1, sizeof(id1)), key,
                              pod_id(c->pl[j].pod, id2, sizeof(id2)), dom[i]);
            }
        }
    }
}

static void check_affinity_key(checker *c, const char *key, dgroups *g)
{
    char id[512];
    for (size_t i = 0; i < c->n_pl; i++) {
        const Tailor__V1__Pod *p = c->pl[i].pod;
        if (!c->pl[i].pending || !p->pod_affinity)
            continue;
        for (size_t t = 0; t < p->pod_affinity->n_required; t++) {
            const Tailor__V1__PodAffinityTerm *term = p->pod_affinity->required[t];
            if (strcmp(term->topology_key, key) != 0)
                continue;
            if (g->group[i] < 0) {
                violation(c, "pod %s: pod affinity on %s, but its node has no %s domain",
                          pod_id(p, id, sizeof(id)), key, key);
                continue;
            }
            bool ok = false;
            for (size_t j = g->first[g->group[i]]; j != SIZE_MAX && !ok; j = g->next[j])
                ok = j != i && term_selects(term, p, c->pl[j].pod);
            if (ok)
                continue;
            /* The first pod of a self-matching group may start a domain,
             * but only if no matching pod lives elsewhere. */
            bool self = term_selects(term, p, p), elsewhere = false;
            for (size_t j = 0; self && j < c->n_pl && !elsewhere; j++)
                elsewhere = j != i && g->group[j] >= 0 && g->group[j] != g->group[i] &&
                            term_selects(term, p, c->pl[j].pod);
            if (!self || elsewhere)
                violation(c, "pod %s: required pod affinity (%s) has no matching pod in its "
                          "domain", pod_id(p, id, sizeof(id)), key);
        }
    }
}

/* ---- topology spread: which nodes count --------------------------------
 *
 * kube-scheduler's PodTopologySpread (and Karpenter's TopologyNodeFilter)
 * count, for an incoming pod, only the nodes it could be placed on by the
 * constraint's inclusion policies: nodeAffinityPolicy Honor (the default)
 * keeps the nodes where the pod's nodeSelector and required node affinity
 * hold, Ignore keeps all; nodeTaintsPolicy Honor keeps the nodes whose
 * NoSchedule / NoExecute taints the pod tolerates, Ignore (the default)
 * keeps all.  The domains are those of the kept nodes, and only pods on
 * kept nodes count.  Pods with the same constraint but a different node
 * filter see different domains, so they are checked as separate groups. */

static bool honor_affinity(const Tailor__V1__TopologySpreadConstraint *x)
{
    return x->node_affinity_policy !=
           TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_IGNORE;
}

static bool honor_taints(const Tailor__V1__TopologySpreadConstraint *x)
{
    return x->node_taints_policy ==
           TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_HONOR;
}

/* Do messages a[0..na) and b[0..nb) pack to the same bytes, in order? */
static bool same_msgs(ProtobufCMessage *const *a, size_t na, ProtobufCMessage *const *b,
                      size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        size_t la = protobuf_c_message_get_packed_size(a[i]);
        size_t lb = protobuf_c_message_get_packed_size(b[i]);
        if (la != lb)
            return false;
        /* called per placed pod and constraint: stay off the heap for the
         * usual small selector / term */
        uint8_t sa[512], sb[512];
        uint8_t *ba = la <= sizeof(sa) ? sa : tlr_malloc(la);
        uint8_t *bb = la <= sizeof(sb) ? sb : tlr_malloc(lb);
        protobuf_c_message_pack(a[i], ba);
        protobuf_c_message_pack(b[i], bb);
        bool eq = memcmp(ba, bb, la) == 0;
        if (ba != sa)
            free(ba);
        if (bb != sb)
            free(bb);
        if (!eq)
            return false;
    }
    return true;
}

/* Do pods a and b keep the same nodes under x's inclusion policies? */
static bool same_node_filter(const Tailor__V1__TopologySpreadConstraint *x,
                             const Tailor__V1__Pod *a, const Tailor__V1__Pod *b)
{
    if (honor_affinity(x)) {
        if (a->n_node_selector != b->n_node_selector)
            return false;
        for (size_t i = 0; i < a->n_node_selector; i++) {
            const char *v = tlr_ks_label_get(b->node_selector, b->n_node_selector,
                                      a->node_selector[i]->key);
            if (!v || strcmp(v, a->node_selector[i]->value) != 0)
                return false;
        }
        if (!same_msgs((ProtobufCMessage *const *)a->required_node_affinity,
                       a->n_required_node_affinity,
                       (ProtobufCMessage *const *)b->required_node_affinity,
                       b->n_required_node_affinity))
            return false;
    }
    return !honor_taints(x) ||
           same_msgs((ProtobufCMessage *const *)a->tolerations, a->n_tolerations,
                     (ProtobufCMessage *const *)b->tolerations, b->n_tolerations);
}

/* Is the spread constraint of pod a the same as that of pod b (same
 * selector after match_label_keys, key, skew, namespace, inclusion
 * policies and node filter)? */
static bool same_spread(const Tailor__V1__TopologySpreadConstraint *x,
                        const Tailor__V1__Pod *a, const Tailor__V1__Pod *b)
{
    if (strcmp(a->namespace_, b->namespace_) != 0)
        return false;
    for (size_t i = 0; i < b->n_topology_spread_constraints; i++) {
        const Tailor__V1__TopologySpreadConstraint *y = b->topology_spread_constraints[i];
        if (y->when_unsatisfiable == TSC_ANYWAY || strcmp(x->topology_key, y->topology_key) ||
            x->max_skew != y->max_skew || honor_affinity(x) != honor_affinity(y) ||
            honor_taints(x) != honor_taints(y))
            continue;
        if (!y->label_selector ||
            !same_msgs((ProtobufCMessage *const *)&x->label_selector, 1,
                       (ProtobufCMessage *const *)&y->label_selector, 1))
            continue;
        bool keys_same = true;
        for (size_t k = 0; k < x->n_match_label_keys && keys_same; k++) {
            const char *va = tlr_ks_label_get(a->labels, a->n_labels, x->match_label_keys[k]);
            const char *vb = tlr_ks_label_get(b->labels, b->n_labels, x->match_label_keys[k]);
            keys_same = (!va && !vb) || (va && vb && strcmp(va, vb) == 0);
        }
        if (keys_same && same_node_filter(x, a, b))
            return true;
    }
    return false;
}

/* Does x's node filter for pod p keep location w?  A new claim is kept
 * when the pod's node affinity holds on some (option, offering) the
 * launcher may buy for it. */
static bool spread_keeps(checker *c, const Tailor__V1__TopologySpreadConstraint *x,
                         const Tailor__V1__Pod *p, loc w)
{
    bool aff = honor_affinity(x), tnt = honor_taints(x);
    if (w.kind == LOC_NODE) {
        const Tailor__V1__Node *n = c->cl->nodes[w.idx];
        if (tnt && !tlr_ks_pod_tolerates(p, n->taints, n->n_taints))
            return false;
        if (!aff)
            return true;
        tlr_ks_labels_reset(&c->lab);
        for (size_t j = 0; j < n->n_labels; j++)
            tlr_ks_labels_set(&c->lab, n->labels[j]->key, n->labels[j]->value);
        if (!tlr_ks_labels_get(&c->lab, HOSTNAME_KEY))
            tlr_ks_labels_set(&c->lab, HOSTNAME_KEY, n->name);
        return tlr_ks_pod_node_affinity_holds(p, &c->lab, false);
    }
    if (w.kind == LOC_INFLIGHT) {
        const Tailor__V1__NodeClaim *nc = c->cl->nodeclaims[w.idx];
        if (tnt && !tlr_ks_pod_tolerates(p, nc->taints, nc->n_taints))
            return false;
        if (!aff)
            return true;
        inflight_labels(c, nc);
        return tlr_ks_pod_node_affinity_holds(p, &c->lab, false);
    }
    if (w.kind == LOC_NEW) {
        const Tailor__V1__NodeClaim *nc = c->resp->new_nodeclaims[w.idx];
        if (tnt && !tlr_ks_pod_tolerates(p, nc->taints, nc->n_taints))
            return false;
        if (!aff || c->n_combos[w.idx] == 0)
            return true;
        for (size_t k = 0; k < c->n_combos[w.idx]; k++) {
            new_claim_labels(c, w.idx, &c->combos[w.idx][k]);
            if (tlr_ks_pod_node_affinity_holds(p, &c->lab, false))
                return true;
        }
        return false;
    }
    return false;
}

static bool spread_selects(const Tailor__V1__TopologySpreadConstraint *x,
                           const Tailor__V1__Pod *owner, const Tailor__V1__Pod *q)
{
    if (strcmp(owner->namespace_, q->namespace_) != 0)
        return false;
    for (size_t k = 0; k < x->n_match_label_keys; k++) {
        const char *ov = tlr_ks_label_get(owner->labels, owner->n_labels, x->match_label_keys[k]);
        const char *qv = tlr_ks_label_get(q->labels, q->n_labels, x->match_label_keys[k]);
        if (ov && (!qv || strcmp(ov, qv) != 0))
            return false;
    }
    return tlr_ks_selector_matches(x->label_selector, q->labels, q->n_labels);
}

/* Index of location w among nodes, in-flight claims, new claims. */
static size_t loc_slot(const checker *c, loc w)
{
    size_t nn = c->cl->n_nodes, ni = c->cl->n_nodeclaims;
    return w.kind == LOC_NODE ? w.idx : w.kind == LOC_INFLIGHT ? nn + w.idx : nn + ni + w.idx;
}

static void check_spread_key(checker *c, const char *key, dgroups *g)
{
    char id[512];
    size_t n_slots = c->cl->n_nodes + c->cl->n_nodeclaims + c->resp->n_new_nodeclaims;
    int64_t *count = tlr_calloc(g->n_groups + 1, sizeof(int64_t));
    int64_t *all = tlr_calloc(g->n_groups + 1, sizeof(int64_t));
    bool *eligible = tlr_calloc(g->n_groups + 1, sizeof(bool));
    signed char *keeps = tlr_calloc(n_slots + 1, 1);   /* 0 unknown, 1 kept, -1 not */
    bool *checked = tlr_calloc(c->n_pl + 1, sizeof(bool));
    for (size_t i = 0; i < c->n_pl; i++) {
        const Tailor__V1__Pod *p = c->pl[i].pod;
        if (!c->pl[i].pending)
            continue;
        for (size_t s = 0; s < p->n_topology_spread_constraints; s++) {
            const Tailor__V1__TopologySpreadConstraint *x = p->topology_spread_constraints[s];
            if (x->when_unsatisfiable == TSC_ANYWAY || strcmp(x->topology_key, key) != 0 ||
                !x->label_selector)
                continue;
            if (g->group[i] < 0) {
                violation(c, "pod %s: topology spread on %s, but its node has no %s domain",
                          pod_id(p, id, sizeof(id)), key, key);
                continue;
            }
            if (checked[i])
                continue;
            /* Count existing matching pods and pending pods carrying the
             * same constraint, per domain, on the locations x's node
             * filter keeps for p (and p's same-constraint peers). */
            memset(count, 0, (g->n_groups + 1) * sizeof(int64_t));
            memset(all, 0, (g->n_groups + 1) * sizeof(int64_t));
            memset(eligible, 0, (g->n_groups + 1) * sizeof(bool));
            memset(keeps, 0, n_slots + 1);
            size_t *members = NULL, n_members = 0, mcap = 0;
            for (size_t j = 0; j < c->n_pl; j++) {
                if (g->group[j] < 0)
                    continue;
                bool member = c->pl[j].pending && (j == i || same_spread(x, p, c->pl[j].pod));
                if (member) {
                    TLR_GROW(members, mcap, n_members + 1);
                    members[n_members++] = j;
                }
                size_t slot = loc_slot(c, c->pl[j].where);
                if (!keeps[slot])
                    keeps[slot] = spread_keeps(c, x, p, c->pl[j].where) ? 1 : -1;
                if (keeps[slot] < 0)
                    continue;
                eligible[g->group[j]] = true;
                bool selected = spread_selects(x, p, c->pl[j].pod);
                if ((member || !c->pl[j].pending) && selected)
                    count[g->group[j]]++;
                if (selected)
                    all[g->group[j]]++;
            }
            /* Existing nodes kept by the filter are domains too, with
             * count 0 when no placed pod is there. */
            char scratch[300];
            strset empty = {0};   /* values of kept empty nodes, not yet a group */
            for (size_t nd = 0; nd < c->cl->n_nodes; nd++) {
                if (keeps[nd])
                    continue;   /* a placed pod is there: seen above */
                const char *v = domain_of(c, (loc){LOC_NODE, nd}, key, scratch, sizeof(scratch));
                if (!v || !spread_keeps(c, x, p, (loc){LOC_NODE, nd}))
                    continue;
                int64_t gid = SMAP_GETS(&g->by_value, v);
                if (gid >= 0) {
                    eligible[gid] = true;
                    continue;
                }
                strset_add(&empty, v);   /* a node's label or name: borrowed */
            }
            size_t n_dom = empty.n;
            free(empty.v);
            int64_t min = n_dom ? 0 : INT64_MAX;
            for (size_t d = 0; d < g->n_groups; d++) {
                if (!eligible[d])
                    continue;
                n_dom++;
                if (all[d] < min)
                    min = all[d];
            }
            if (x->min_domains > 0 && n_dom < (size_t)x->min_domains)
                min = 0;
            int64_t skew = x->max_skew > 0 ? x->max_skew : 1;
            for (size_t m = 0; m < n_members; m++) {
                size_t j = members[m];
                checked[j] = true;
                int64_t here = count[g->group[j]];
                if (here - min > skew)
                    violation(c, "pod %s: topology spread on %s violated: %" PRId64
                              " matching pods in its domain, minimum %" PRId64
                              ", maxSkew %" PRId64, pod_id(c->pl[j].pod, id, sizeof(id)), key,
                              here, min, skew);
            }
            free(members);
        }
    }
    free(count);
    free(all);
    free(eligible);
    free(keeps);
    free(checked);
}

static bool ports_conflict(const Tailor__V1__HostPort *a, const Tailor__V1__HostPort *b)
{
    if (a->port != b->port)
        return false;
    int pa = a->protocol ? a->protocol : 1, pb = b->protocol ? b->protocol : 1;
    if (pa != pb)
        return false;
    bool wa = !a->host_ip[0] || strcmp(a->host_ip, "0.0.0.0") == 0;
    bool wb = !b->host_ip[0] || strcmp(b->host_ip, "0.0.0.0") == 0;
    return wa || wb || strcmp(a->host_ip, b->host_ip) == 0;
}

static void check_host_ports(checker *c, dgroups *g)
{
    char id1[512], id2[512];
    for (size_t i = 0; i < c->n_pl; i++) {
        const Tailor__V1__Pod *p = c->pl[i].pod;
        if (!c->pl[i].pending || p->n_host_ports == 0 || g->group[i] < 0)
            continue;
        for (size_t j = g->first[g->group[i]]; j != SIZE_MAX; j = g->next[j]) {
            if (j == i || (c->pl[j].pending && j < i))
                continue;
            const Tailor__V1__Pod *q = c->pl[j].pod;
            for (size_t a = 0; a < p->n_host_ports; a++)
                for (size_t b = 0; b < q->n_host_ports; b++)
                    if (ports_conflict(p->host_ports[a], q->host_ports[b]))
                        violation(c, "pod %s: host port %d conflicts with pod %s on the same "
                                  "node", pod_id(p, id1, sizeof(id1)), p->host_ports[a]->port,
                                  pod_id(q, id2, sizeof(id2)));
        }
    }
}

static void add_key(const char ***keys, size_t *n, size_t *cap, const char *k)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*keys)[i], k) == 0)
            return;
    TLR_GROW(*keys, *cap, *n + 1);
    (*keys)[(*n)++] = k;
}

static void check_topology(checker *c)
{
    const char **keys = NULL;
    size_t nk = 0, kcap = 0;
    add_key(&keys, &nk, &kcap, HOSTNAME_KEY);
    for (size_t i = 0; i < c->n_pl; i++) {
        const Tailor__V1__Pod *p = c->pl[i].pod;
        if (p->pod_anti_affinity)
            for (size_t t = 0; t < p->pod_anti_affinity->n_required; t++)
                add_key(&keys, &nk, &kcap, p->pod_anti_affinity->required[t]->topology_key);
        if (p->pod_affinity && c->pl[i].pending)
            for (size_t t = 0; t < p->pod_affinity->n_required; t++)
                add_key(&keys, &nk, &kcap, p->pod_affinity->required[t]->topology_key);
        if (c->pl[i].pending)
            for (size_t s = 0; s < p->n_topology_spread_constraints; s++)
                add_key(&keys, &nk, &kcap, p->topology_spread_constraints[s]->topology_key);
    }
    for (size_t k = 0; k < nk; k++) {
        char **store;
        size_t n_store;
        const char **dom = domains_for_key(c, keys[k], &store, &n_store);
        dgroups g;
        dgroups_build(&g, dom, c->n_pl);
        if (strcmp(keys[k], HOSTNAME_KEY) == 0)
            check_host_ports(c, &g);
        check_anti_affinity_key(c, keys[k], dom, &g);
        check_affinity_key(c, keys[k], &g);
        check_spread_key(c, keys[k], &g);
        dgroups_free(&g);
        free_domains(dom, store, n_store);
    }
    free(keys);
}

/* ---- limits and cost ---- */

static void check_limits_and_cost(checker *c)
{
    const Tailor__V1__SolveResponse *r = c->resp;
    double total = 0;
    for (size_t i = 0; i < r->n_new_nodeclaims; i++)
        if (r->new_nodeclaims[i]->n_instance_type_options)
            total += r->new_nodeclaims[i]->instance_type_options[0]->price_per_hour;
    if (fabs(total - r->total_cost_per_hour) > 1e-6 * (1 + total))
        violation(c, "total_cost_per_hour %.6f != sum of cheapest options %.6f",
                  r->total_cost_per_hour, total);
    const Tailor__V1__ClusterState *cl = c->cl;
    for (size_t p = 0; cl && p < cl->n_nodepools; p++) {
        const Tailor__V1__NodePool *pool = cl->nodepools[p];
        const Tailor__V1__NodePoolLimits *lim = pool->limits;
        if (!lim)
            continue;
        res use = {0};
        int64_t nodes = pool->status ? pool->status->nodes : 0;
        if (pool->status)
            res_add(&use, pool->status->usage);
        for (size_t i = 0; i < r->n_new_nodeclaims; i++) {
            if (c->claim_pool[i] != pool)
                continue;
            nodes++;
            res biggest = {0};
            const Tailor__V1__InstanceType *seen = NULL;
            for (size_t k = 0; k < c->n_combos[i]; k++) {
                const Tailor__V1__InstanceType *t = c->combos[i][k].t;
                if (t == seen)
                    continue;
                seen = t;
                const Tailor__V1__ResourceList *cap = rl_empty(t->capacity) ? t->allocatable
                                                                             : t->capacity;
                res one = {0};
                res_add(&one, cap);
                if (one.cpu > biggest.cpu) biggest.cpu = one.cpu;
                if (one.mem > biggest.mem) biggest.mem = one.mem;
                if (one.pods > biggest.pods) biggest.pods = one.pods;
                if (one.eph > biggest.eph) biggest.eph = one.eph;
                for (size_t e = 0; e < one.n; e++) {
                    bool found = false;
                    for (size_t b = 0; b < biggest.n; b++) {
                        if (strcmp(biggest.names[b], one.names[e]) == 0) {
                            found = true;
                            if (one.vals[e] > biggest.vals[b])
                                biggest.vals[b] = one.vals[e];
                        }
                    }
                    if (!found)
                        res_add_ext(&biggest, one.names[e], one.vals[e]);
                }
            }
            use.cpu += biggest.cpu;
            use.mem += biggest.mem;
            use.pods += biggest.pods;
            use.eph += biggest.eph;
            for (size_t e = 0; e < biggest.n; e++)
                res_add_ext(&use, biggest.names[e], biggest.vals[e]);
        }
        struct { bool has; const char *n; int64_t u, l; } dims[] = {
            {lim->has_cpu, "cpu(m)", use.cpu, lim->cpu_millis},
            {lim->has_memory, "memory(B)", use.mem, lim->memory_bytes},
            {lim->has_pods, "pods", use.pods, lim->pods},
            {lim->has_ephemeral_storage, "ephemeral-storage(B)", use.eph,
             lim->ephemeral_storage_bytes},
            {lim->has_nodes, "nodes", nodes, lim->nodes},
        };
        for (size_t d = 0; d < sizeof(dims) / sizeof(dims[0]); d++)
            if (dims[d].has && dims[d].u > dims[d].l)
                violation(c, "nodepool %s: %s would reach %" PRId64 ", over its limit %" PRId64,
                          pool->name, dims[d].n, dims[d].u, dims[d].l);
        for (size_t e = 0; e < lim->n_extended; e++) {
            int64_t u = 0;
            for (size_t b = 0; b < use.n; b++)
                if (strcmp(use.names[b], lim->extended[e]->name) == 0)
                    u = use.vals[b];
            if (u > lim->extended[e]->value)
                violation(c, "nodepool %s: %s would reach %" PRId64 ", over its limit %" PRId64,
                          pool->name, lim->extended[e]->name, u, lim->extended[e]->value);
        }
    }
}

int tlr_plan_check(const Tailor__V1__SolveRequest *req,
                   const Tailor__V1__SolveResponse *resp, tlr_buf *violations)
{
    if (!req || !resp) {
        if (violations)
            (void)tlr_buf_adds(violations, "no request or no response to check\n");
        return 1;
    }
    checker c = {.req = req, .resp = resp, .cl = req->cluster, .out = violations};
    static const Tailor__V1__ClusterState empty = TAILOR__V1__CLUSTER_STATE__INIT;
    if (!c.cl)
        c.cl = &empty;
    index_request(&c);
    size_t nclaims = resp->n_new_nodeclaims;
    c.combos = tlr_calloc(nclaims + 1, sizeof(*c.combos));
    c.n_combos = tlr_calloc(nclaims + 1, sizeof(*c.n_combos));
    c.claim_pool = tlr_calloc(nclaims + 1, sizeof(*c.claim_pool));

    check_outcomes(&c);
    for (size_t i = 0; i < nclaims; i++)
        check_claim_options(&c, i);
    for (size_t i = 0; i < nclaims; i++) {
        check_new_claim(&c, i);
        check_claim_min_values(&c, i);
        check_claim_labels(&c, i);
    }
    check_existing(&c);
    build_placement(&c);
    check_topology(&c);
    check_limits_and_cost(&c);

    for (size_t i = 0; i < nclaims; i++)
        free(c.combos[i]);
    free(c.combos);
    free(c.n_combos);
    free(c.claim_pool);
    free(c.pl);
    free(c.pod_loc);
    smap_free(&c.pod_by_uid);
    smap_free(&c.node_by_name);
    smap_free(&c.inflight_by_name);
    smap_free(&c.pool_by_name);
    tlr_ks_labels_free(&c.lab);
    return c.count;
}
