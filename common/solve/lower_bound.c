/* lower_bound.c - a certified lower bound on the hourly cost of the new
 * capacity a SolveRequest needs (tlr_solve_lower_bound).
 *
 * The relaxation
 * ---------------
 * Pending pods are grouped: g = (constraint class, request vector, anti-
 * affinity set), n_g pods each.  A "bin" is what a pod can be put in:
 *   - (NodePool p, instance type t) for new capacity, priced at the
 *     cheapest available offering of t that p's requirements allow and
 *     that is not in the ICE cache; its capacity is t's allocatable minus
 *     the DaemonSets that surely run there (tolerate p's taints, match the
 *     labels of every allowed offering);
 *   - one aggregate "free" bin: the free capacity (allocatable - requested)
 *     of every schedulable existing node plus every in-flight claim, summed,
 *     price 0, usable at most once.
 * Group g may use bin b when its pods tolerate the taints, their node
 * affinity holds on the labels of at least one allowed offering (keys the
 * NodePool may still set count as satisfied), and one pod fits alone.
 * Dimensions: cpu, memory, pods, ephemeral storage, every extended
 * resource a pending pod asks for, and one "slot" per set of pods that
 * share a required hostname anti-affinity term selecting themselves (at
 * most one such pod per node: capacity 1 per bin).
 *
 *   min  sum_b c_b x_b
 *   s.t. sum_{b in A_g} a_{g,b} = n_g                    for every group g
 *        sum_g a_{g,b} r_{g,d} <= C_{b,d} x_b              for every bin b, dim d
 *        x_free <= 1,  a, x >= 0
 *
 * Any plan that passes tlr_plan_check (same placement semantics, same
 * helpers) is a feasible point of this LP: set x_b to the number of new
 * claims whose cheapest option is b (their options must all fit the
 * planned pods plus DaemonSets, so the cheapest does too), a_{g,b} to the
 * pods of g on them, and put everything on existing nodes and in-flight
 * claims into the free bin (summing capacities only enlarges it).  Pods
 * planned on in-flight claims and pods no bin can take are left out (they
 * cost nothing new).  Topology spread, pod affinity, limits and
 * integrality are dropped; all of that only lowers the optimum.
 *
 * Solving it
 * ----------
 * Dantzig-Wolfe: a column is one bin filled with a fractional mix of
 * groups (a vertex of {a >= 0 : R a <= C_b}).  The master has one row per
 * group plus the free bin's convexity row and is solved by a revised
 * simplex with an explicit dense basis inverse (a few hundred rows at
 * most).  Columns are generated per bin by a tiny dense simplex over the
 * bin's D capacity rows ("pricing").
 *
 * Certification
 * -------------
 * Floating point and iteration caps must never yield a bound above the
 * optimum, so the returned value is not the master's objective but a
 * dual-feasible value built from the final duals u >= 0: for each bin the
 * pricing LP's dual y (scaled up until r_g . y >= u_g for all allowed g)
 * gives v_b >= max{u.a : R a <= C_b}; with theta = min(1, min_b c_b / v_b)
 * the point (theta u, -theta v_free) is feasible for the LP dual, so
 *     LB = theta * (sum_g n_g u_g - v_free)
 * is a lower bound by weak duality whatever the quality of u.  It is then
 * shaved by a relative 1e-9 against rounding.
 *
 * The configuration LP
 * --------------------
 * With sv_lp_opts.integer the columns are integer patterns instead (whole
 * pods, at most n_g of group g on a node), priced by a bounded integer
 * knapsack per bin (knapsack.c, branch and bound with node budgets).  It
 * starts from the fractional LP's solution (its columns rounded to whole
 * pods, and each bin's best pattern under its duals).  Its solution is
 * what seed.c rounds into whole nodes; its optimum is a lower bound too,
 * never below the relaxation's, and tlr_solve_lower_bound_tight()
 * certifies it the same way with v_b an upper bound on the *integer*
 * pricing problem (the knapsack's own bound when its search finished,
 * else the fractional certificate), keeping the larger of the two bounds.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knapsack.h"
#include "lower_bound_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_labels.h"
#include "tlr_plancheck.h"
#include "tlr_solve.h"

#define MAX_EXT   16
#define MAX_ANTI  8
#define MAX_DIMS  (4 + MAX_EXT + MAX_ANTI)
#define MAX_ROUNDS 400
#define MAX_PIVOTS 20000
#define COLS_PER_ROUND 256
/* Integer pricing (the configuration LP, knapsack.c): branch-and-bound
 * nodes per bin in a round, and in the round that looks again harder
 * when a cheap round found nothing; the relative gap a knapsack may
 * leave.  Deterministic budgets, not time, so equal requests give equal
 * plans on any machine.  The certified configuration bound
 * (tlr_solve_lower_bound_tight) generates columns with LB_TIGHT_BUDGET for
 * its harder rounds and certifies with LB_CERT_BUDGET. */
#define LB_ROUND_BUDGET 20
#define LB_FINAL_BUDGET 2000
#define LB_TIGHT_BUDGET 20000
#define LB_CERT_BUDGET 50000
#define LB_KNAP_GAP 1e-4
#define LB_CERT_GAP 1e-7

/* ---- byte-key hash map ---------------------------------------------- */

typedef struct bmap {
    char **keys;           /* owned copies */
    size_t *lens;
    size_t *vals;
    size_t cap, n;
} bmap;

static void bmap_init(bmap *m, size_t cap)
{
    m->cap = cap;
    m->n = 0;
    m->keys = tlr_calloc(cap, sizeof(*m->keys));
    m->lens = tlr_calloc(cap, sizeof(*m->lens));
    m->vals = tlr_calloc(cap, sizeof(*m->vals));
}

static void bmap_free(bmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->lens);
    free(m->vals);
}

/* The id of key, inserting next_id when absent (then *added = true). */
static size_t bmap_id(bmap *m, const char *k, size_t len, size_t next_id, bool *added)
{
    if ((m->n + 1) * 2 > m->cap) {
        bmap old = *m;
        bmap_init(m, old.cap * 2);
        for (size_t i = 0; i < old.cap; i++) {
            if (!old.keys[i])
                continue;
            size_t j = tlr_fnv1a64(TLR_FNV64_BASIS_SHORT, old.keys[i], old.lens[i]) & (m->cap - 1);
            while (m->keys[j])
                j = (j + 1) & (m->cap - 1);
            m->keys[j] = old.keys[i];
            m->lens[j] = old.lens[i];
            m->vals[j] = old.vals[i];
            m->n++;
        }
        free(old.keys);
        free(old.lens);
        free(old.vals);
    }
    size_t i = tlr_fnv1a64(TLR_FNV64_BASIS_SHORT, k, len) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->lens[i] == len && memcmp(m->keys[i], k, len) == 0) {
            *added = false;
            return m->vals[i];
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = tlr_malloc(len + 1);
    memcpy(m->keys[i], k, len);
    m->lens[i] = len;
    m->vals[i] = next_id;
    m->n++;
    *added = true;
    return next_id;
}

/* ---- growable byte key ------------------------------------------------ */

typedef struct key {
    uint8_t *b;
    size_t n, cap;
} key;

static void key_add(key *k, const void *p, size_t n)
{
    TLR_GROW(k->b, k->cap, k->n + n + 1);
    memcpy(k->b + k->n, p, n);
    k->n += n;
}

static void key_msg(key *k, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    TLR_GROW(k->b, k->cap, k->n + n + 9);
    uint64_t len = n;
    memcpy(k->b + k->n, &len, sizeof(len));
    k->n += sizeof(len);
    protobuf_c_message_pack(m, k->b + k->n);
    k->n += n;
}

/* ---- model ------------------------------------------------------------- */

typedef struct bin {
    double price;
    double cap[MAX_DIMS];          /* normalized */
    bool free_bin;
    const Tailor__V1__NodePool *pool;
    const Tailor__V1__InstanceType *type;
} bin;

typedef struct group {
    size_t cls;
    double n;
    double r[MAX_DIMS];            /* normalized */
    const Tailor__V1__Pod *rep;    /* a representative pod, borrowed */
} group;

typedef struct model {
    size_t D;
    size_t n_res;                  /* resource dims (before anti slots) */
    const char *ext[MAX_EXT];      /* borrowed extended names */
    size_t n_ext;
    size_t n_anti;

    group *g;
    size_t G, gcap;
    const Tailor__V1__Pod **cls_rep;   /* per class */
    size_t n_cls, ccap;

    bin *b;
    size_t B, bcap;
    uint8_t *allow;                /* B x G */
    int *pod_group;                /* per pending pod: group, -1 = none */
} model;

static int64_t rl_dim(const Tailor__V1__ResourceList *l, const model *m, size_t d)
{
    if (!l)
        return 0;
    switch (d) {
    case 0: return l->cpu_millis;
    case 1: return l->memory_bytes;
    case 2: return l->pods;
    case 3: return l->ephemeral_storage_bytes;
    default:
        for (size_t i = 0; i < l->n_extended; i++)
            if (strcmp(l->extended[i]->name, m->ext[d - 4]) == 0)
                return l->extended[i]->value;
        return 0;
    }
}

static bool bmap_has(const bmap *m, const char *k, size_t len)
{
    size_t i = tlr_fnv1a64(TLR_FNV64_BASIS_SHORT, k, len) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->lens[i] == len && memcmp(m->keys[i], k, len) == 0)
            return true;
        i = (i + 1) & (m->cap - 1);
    }
    return false;
}

/* Does the pod's term select the pod itself (so all holders of the same
 * term are pairwise exclusive per node)? */
static bool self_anti_term(const Tailor__V1__Pod *p, const Tailor__V1__PodAffinityTerm *t)
{
    if (strcmp(t->topology_key, TLR_LABEL_HOSTNAME) != 0 || t->n_match_label_keys ||
        t->n_mismatch_label_keys || !t->label_selector)
        return false;
    if (!t->all_namespaces && t->n_namespaces) {
        bool in = false;
        for (size_t i = 0; i < t->n_namespaces && !in; i++)
            in = strcmp(t->namespaces[i], p->namespace_) == 0;
        if (!in)
            return false;
    }
    return tlr_ks_selector_matches(t->label_selector, p->labels, p->n_labels);
}

static void collect_dims(model *m, const Tailor__V1__SolveRequest *req)
{
    for (size_t i = 0; i < req->n_pending_pods; i++) {
        const Tailor__V1__ResourceList *r = req->pending_pods[i]->requests;
        for (size_t e = 0; r && e < r->n_extended; e++) {
            bool have = false;
            for (size_t k = 0; k < m->n_ext && !have; k++)
                have = strcmp(m->ext[k], r->extended[e]->name) == 0;
            if (!have && m->n_ext < MAX_EXT && r->extended[e]->value > 0)
                m->ext[m->n_ext++] = r->extended[e]->name;
        }
    }
    m->n_res = 4 + m->n_ext;
}

/* Build groups from the pending pods.  Returns the anti-set map size. */
static void build_groups(model *m, const Tailor__V1__SolveRequest *req, int64_t *raw_r,
                         size_t *raw_cap)
{
    const Tailor__V1__ClusterState *cl = req->cluster;
    bmap planned, classes, antis, groups;
    bmap_init(&planned, 64);
    bmap_init(&classes, 64);
    bmap_init(&antis, 16);
    bmap_init(&groups, 256);
    for (size_t c = 0; cl && c < cl->n_nodeclaims; c++) {
        const Tailor__V1__NodeClaim *nc = cl->nodeclaims[c];
        for (size_t j = 0; j < nc->n_planned_pod_uids; j++) {
            bool added;
            const char *u = nc->planned_pod_uids[j];
            bmap_id(&planned, u, strlen(u), 2, &added);
        }
    }
    key k = {0};
    for (size_t i = 0; i < req->n_pending_pods; i++) {
        const Tailor__V1__Pod *p = req->pending_pods[i];
        if (planned.n && bmap_has(&planned, p->uid, strlen(p->uid)))
            continue;
        /* constraint class */
        k.n = 0;
        for (size_t j = 0; j < p->n_node_selector; j++)
            key_msg(&k, &p->node_selector[j]->base);
        key_add(&k, "|", 1);
        for (size_t j = 0; j < p->n_required_node_affinity; j++)
            key_msg(&k, &p->required_node_affinity[j]->base);
        key_add(&k, "|", 1);
        for (size_t j = 0; j < p->n_tolerations; j++)
            key_msg(&k, &p->tolerations[j]->base);
        key_add(&k, "|", 1);
        for (size_t j = 0; j < p->n_volume_requirements; j++)
            key_msg(&k, &p->volume_requirements[j]->base);
        bool added;
        size_t cls = bmap_id(&classes, (char *)k.b, k.n, m->n_cls, &added);
        if (added) {
            TLR_GROW(m->cls_rep, m->ccap, m->n_cls + 1);
            m->cls_rep[m->n_cls++] = p;
        }
        /* anti-affinity slot set */
        size_t anti = SIZE_MAX;
        for (size_t t = 0; p->pod_anti_affinity && t < p->pod_anti_affinity->n_required; t++) {
            const Tailor__V1__PodAffinityTerm *term = p->pod_anti_affinity->required[t];
            if (!self_anti_term(p, term))
                continue;
            k.n = 0;
            key_msg(&k, &term->base);
            key_add(&k, p->namespace_, strlen(p->namespace_));
            size_t id = bmap_id(&antis, (char *)k.b, k.n, m->n_anti, &added);
            if (added) {
                if (m->n_anti == MAX_ANTI)
                    continue;   /* more sets than slots: ignoring one is still a bound */
                m->n_anti++;
            }
            if (id < MAX_ANTI) {
                anti = id;
                break;
            }
        }
        /* group */
        int64_t rv[MAX_DIMS];
        for (size_t d = 0; d < m->n_res; d++)
            rv[d] = rl_dim(p->requests, m, d);
        k.n = 0;
        key_add(&k, &cls, sizeof(cls));
        key_add(&k, &anti, sizeof(anti));
        key_add(&k, rv, m->n_res * sizeof(int64_t));
        size_t gid = bmap_id(&groups, (char *)k.b, k.n, m->G, &added);
        m->pod_group[i] = (int)gid;
        if (added) {
            TLR_GROW(m->g, m->gcap, m->G + 1);
            if (m->G + 1 > *raw_cap)
                abort();   /* raw_r is sized for every pending pod */
            memset(&m->g[m->G], 0, sizeof(group));
            m->g[m->G].cls = cls;
            m->g[m->G].rep = p;
            for (size_t d = 0; d < m->n_res; d++)
                raw_r[m->G * MAX_DIMS + d] = rv[d];
            for (size_t a = 0; a < MAX_ANTI; a++)
                raw_r[m->G * MAX_DIMS + m->n_res + a] = (anti == a);
            m->G++;
        }
        m->g[gid].n += 1;
    }
    free(k.b);
    bmap_free(&planned);
    bmap_free(&classes);
    bmap_free(&antis);
    bmap_free(&groups);
}

/* ---- bins ---------------------------------------------------------------- */

static bin *new_bin(model *m, int64_t *raw_c, size_t *raw_cap, int64_t **raw_cp)
{
    (void)raw_c;
    TLR_GROW(m->b, m->bcap, m->B + 1);
    if (m->B + 1 > *raw_cap) {
        size_t nc = *raw_cap * 2 + 64;
        *raw_cp = tlr_realloc(*raw_cp, nc * MAX_DIMS * sizeof(int64_t));
        *raw_cap = nc;
    }
    memset(&m->b[m->B], 0, sizeof(bin));
    memset(*raw_cp + m->B * MAX_DIMS, 0, MAX_DIMS * sizeof(int64_t));
    return &m->b[m->B++];
}

/* Every key the pod's node constraints read is fixed by l (so no label a
 * claim adds later can change the answer). */
static bool keys_fixed(const Tailor__V1__Pod *p, const tlr_ks_labels *l)
{
    for (size_t i = 0; i < p->n_node_selector; i++)
        if (!tlr_ks_labels_get(l, p->node_selector[i]->key))
            return false;
    for (size_t i = 0; i < p->n_volume_requirements; i++)
        if (!tlr_ks_labels_get(l, p->volume_requirements[i]->key))
            return false;
    for (size_t t = 0; t < p->n_required_node_affinity; t++) {
        const Tailor__V1__NodeSelectorTerm *term = p->required_node_affinity[t];
        if (term->n_match_fields)
            return false;
        for (size_t i = 0; i < term->n_match_expressions; i++)
            if (!tlr_ks_labels_get(l, term->match_expressions[i]->key))
                return false;
    }
    return true;
}

/* The DaemonSet runs on every node of this pool bought as l, whatever the
 * claim adds: it tolerates the pool's taints and its node constraints hold
 * on keys the type, offering and pool already fix. */
static bool ds_surely_runs(const Tailor__V1__DaemonSet *ds, const Tailor__V1__NodePool *pool,
                           const tlr_ks_labels *l)
{
    return ds->pod_template && keys_fixed(ds->pod_template, l) &&
           tlr_ks_pod_tolerates(ds->pod_template, pool->taints, pool->n_taints) &&
           tlr_ks_pod_node_affinity_holds(ds->pod_template, l, false);
}

typedef struct bins_ctx {
    int64_t *raw_c;                 /* B x MAX_DIMS */
    size_t raw_cap;
    uint8_t *cls_allow;             /* per bin x class, grown with bins */
    size_t cls_allow_cap;
} bins_ctx;

static void grow_cls_allow(model *m, bins_ctx *bc)
{
    size_t need = m->B * (m->n_cls + 1);
    if (need > bc->cls_allow_cap) {
        size_t nc = need * 2 + 64;
        bc->cls_allow = tlr_realloc(bc->cls_allow, nc);
        bc->cls_allow_cap = nc;
    }
}

static void build_new_bins(model *m, const Tailor__V1__SolveRequest *req, bins_ctx *bc)
{
    const Tailor__V1__ClusterState *cl = req->cluster;
    tlr_ks_labels lab = {0};
    bool *ok_cls = tlr_calloc(m->n_cls + 1, sizeof(bool));
    for (size_t p = 0; cl && p < cl->n_nodepools; p++) {
        const Tailor__V1__NodePool *pool = cl->nodepools[p];
        const char *cls = pool->node_class_ref ? pool->node_class_ref->name : "";
        const Tailor__V1__Catalog *cat = tlr_pc_catalog_for_class(req, cls);
        if (!cat)
            continue;
        /* Classes that tolerate the pool's taints at all. */
        bool *tol = tlr_calloc(m->n_cls + 1, sizeof(bool));
        bool any_tol = false;
        for (size_t c = 0; c < m->n_cls; c++)
            any_tol |= tol[c] = tlr_ks_pod_tolerates(m->cls_rep[c], pool->taints, pool->n_taints);
        for (size_t ti = 0; any_tol && ti < cat->n_instance_types; ti++) {
            const Tailor__V1__InstanceType *t = cat->instance_types[ti];
            double price = INFINITY;
            memset(ok_cls, 0, (m->n_cls + 1) * sizeof(bool));
            int64_t over[MAX_DIMS] = {0};
            bool first_offer = true;
            for (size_t oi = 0; oi < t->n_offerings; oi++) {
                const Tailor__V1__Offering *o = t->offerings[oi];
                if (!o->available || tlr_pc_offering_iced(req, t->name, o))
                    continue;
                tlr_ks_labels_for_offering(&lab, pool, t, o);
                bool pool_ok = true;
                for (size_t r = 0; r < pool->n_requirements && pool_ok; r++)
                    pool_ok = tlr_ks_requirement_holds(pool->requirements[r], &lab, true);
                if (!pool_ok)
                    continue;
                if (o->price_per_hour < price)
                    price = o->price_per_hour;
                for (size_t c = 0; c < m->n_cls; c++)
                    if (tol[c] && !ok_cls[c])
                        ok_cls[c] = tlr_ks_pod_node_affinity_holds(m->cls_rep[c], &lab, true);
                /* DaemonSet overhead: the minimum over allowed offerings
                 * of what surely runs, per dimension. */
                int64_t here[MAX_DIMS] = {0};
                for (size_t d = 0; d < cl->n_daemonsets; d++)
                    if (ds_surely_runs(cl->daemonsets[d], pool, &lab))
                        for (size_t k = 0; k < m->n_res; k++)
                            here[k] += rl_dim(cl->daemonsets[d]->pod_template->requests, m, k);
                for (size_t k = 0; k < m->n_res; k++)
                    if (first_offer || here[k] < over[k])
                        over[k] = here[k];
                first_offer = false;
            }
            if (price == INFINITY)
                continue;
            bool any = false;
            for (size_t c = 0; c < m->n_cls && !any; c++)
                any = ok_cls[c];
            if (!any)
                continue;
            bin *b = new_bin(m, NULL, &bc->raw_cap, &bc->raw_c);
            b->price = price;
            b->pool = pool;
            b->type = t;
            int64_t *rc = bc->raw_c + (m->B - 1) * MAX_DIMS;
            for (size_t k = 0; k < m->n_res; k++) {
                int64_t v = rl_dim(t->allocatable, m, k) - over[k];
                rc[k] = v > 0 ? v : 0;
            }
            for (size_t a = 0; a < m->n_anti; a++)
                rc[m->n_res + a] = 1;
            grow_cls_allow(m, bc);
            memcpy(bc->cls_allow + (m->B - 1) * (m->n_cls + 1), ok_cls, m->n_cls);
        }
        free(tol);
    }
    free(ok_cls);
    tlr_ks_labels_free(&lab);
}

static const char *const dim_names[4] = {"cpu", "memory", "pods", "ephemeral-storage"};

/* Per claim of cl: is some Node its registered form (then it is counted
 * as that node)?  Owned by the caller (free). */
static bool *claims_with_node(const Tailor__V1__ClusterState *cl)
{
    bool *has = tlr_calloc(cl->n_nodeclaims + 1, sizeof(bool));
    for (size_t i = 0; i < cl->n_nodes; i++) {
        const Tailor__V1__NodeClaim *nc = tlr_pc_node_claim(cl, cl->nodes[i]);
        for (size_t j = 0; nc && j < cl->n_nodeclaims; j++)
            if (cl->nodeclaims[j] == nc)
                has[j] = true;
    }
    return has;
}

static const Tailor__V1__NodePool *node_pool(const Tailor__V1__ClusterState *cl,
                                             const Tailor__V1__Node *n)
{
    for (size_t i = 0; i < cl->n_nodepools; i++)
        if (strcmp(cl->nodepools[i]->name, n->nodepool) == 0)
            return cl->nodepools[i];
    return NULL;
}

/* The aggregate free bin: schedulable existing nodes and in-flight claims.
 * A group may use it when it may use one of them and fits its free space. */
static void build_free_bin(model *m, const Tailor__V1__SolveRequest *req, bins_ctx *bc,
                           const int64_t *raw_r, uint8_t *free_fit)
{
    const Tailor__V1__ClusterState *cl = req->cluster;
    if (!cl || (cl->n_nodes == 0 && cl->n_nodeclaims == 0))
        return;
    tlr_ks_labels lab = {0};
    int64_t sum[MAX_DIMS] = {0};
    bool used = false;
    bool *has_node = claims_with_node(cl);
    for (size_t i = 0; i < cl->n_nodes + cl->n_nodeclaims; i++) {
        int64_t fr[MAX_DIMS] = {0};
        const Tailor__V1__Node *node = NULL;
        const Tailor__V1__NodeClaim *nnc = NULL;
        Tailor__V1__Taint *const *taints;
        size_t n_taints;
        bool lax;
        tlr_ks_labels_reset(&lab);
        if (i < cl->n_nodes) {
            const Tailor__V1__Node *n = cl->nodes[i];
            if (n->unschedulable || n->marked_for_deletion || n->deletion_unix_ms)
                continue;
            /* A booting node is its claim's capacity (the claim is
             * skipped below), with the taints it will shed. */
            nnc = tlr_pc_node_claim(cl, n);
            for (size_t k = 0; k < m->n_res; k++)
                fr[k] = tlr_pc_node_allocatable(n, nnc, k < 4 ? dim_names[k] : m->ext[k - 4]) -
                        rl_dim(n->requested, m, k);
            for (size_t j = 0; j < n->n_labels; j++)
                tlr_ks_labels_set(&lab, n->labels[j]->key, n->labels[j]->value);
            node = n;
            taints = NULL;
            n_taints = 0;
            lax = false;
        } else {
            const Tailor__V1__NodeClaim *nc = cl->nodeclaims[i - cl->n_nodes];
            if (nc->deletion_unix_ms || has_node[i - cl->n_nodes])
                continue;
            /* Free space: status allocatable, else the largest option's. */
            const Tailor__V1__ResourceList *al = nc->status ? nc->status->allocatable : NULL;
            for (size_t k = 0; k < m->n_res; k++)
                fr[k] = rl_dim(al, m, k);
            const Tailor__V1__Catalog *cat = tlr_pc_catalog_for_class(req, nc->node_class);
            for (size_t o = 0; cat && o < nc->n_instance_type_options; o++)
                for (size_t t = 0; t < cat->n_instance_types; t++)
                    if (strcmp(cat->instance_types[t]->name,
                               nc->instance_type_options[o]->name) == 0)
                        for (size_t k = 0; k < m->n_res; k++) {
                            int64_t v = rl_dim(cat->instance_types[t]->allocatable, m, k);
                            if (v > fr[k])
                                fr[k] = v;
                        }
            for (size_t k = 0; k < m->n_res; k++)
                fr[k] -= rl_dim(nc->resources_requested, m, k);
            for (size_t j = 0; j < nc->n_labels; j++)
                tlr_ks_labels_set(&lab, nc->labels[j]->key, nc->labels[j]->value);
            for (size_t j = 0; j < nc->n_requirements; j++)
                if (nc->requirements[j]->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN &&
                    nc->requirements[j]->n_values == 1)
                    tlr_ks_labels_set(&lab, nc->requirements[j]->key,
                                      nc->requirements[j]->values[0]);
            taints = nc->taints;
            n_taints = nc->n_taints;
            lax = true;
        }
        bool any = false;
        for (size_t g = 0; g < m->G; g++) {
            const group *gr = &m->g[g];
            if (free_fit[g])
                continue;
            bool fits = true;
            for (size_t k = 0; k < m->n_res && fits; k++)
                fits = raw_r[g * MAX_DIMS + k] <= fr[k];
            bool tol = node ? tlr_pc_pod_tolerates_node(gr->rep, node, nnc, node_pool(cl, node))
                            : tlr_ks_pod_tolerates(gr->rep, taints, n_taints);
            if (fits && tol &&
                tlr_ks_pod_node_affinity_holds(gr->rep, &lab, lax)) {
                free_fit[g] = 1;
                any = true;
            }
        }
        (void)any;
        for (size_t k = 0; k < m->n_res; k++)
            sum[k] += fr[k] > 0 ? fr[k] : 0;
        for (size_t a = 0; a < m->n_anti; a++)
            sum[m->n_res + a] += 1;
        used = true;
    }
    tlr_ks_labels_free(&lab);
    free(has_node);
    if (!used)
        return;
    bin *b = new_bin(m, NULL, &bc->raw_cap, &bc->raw_c);
    b->free_bin = true;
    memcpy(bc->raw_c + (m->B - 1) * MAX_DIMS, sum, sizeof(sum));
    grow_cls_allow(m, bc);
}

/* ---- pricing: max u.a  s.t.  R a <= C, a >= 0  (dense tableau) ---------- */

typedef struct pricer {
    double *T;          /* (D+1) x (ncol+1) tableau, row D = objective */
    size_t tcap;
    size_t *cols;       /* group index per structural column */
    size_t *basis;      /* per row: column index */
    size_t ccap, bcap;
    double *kv, *kr;    /* integer pricing: item values and weights */
    int *kmax, *kcnt;
    size_t kvcap, krcap, kmaxcap, kcntcap;
} pricer;

/* Returns the certified upper bound on the pricing value (INFINITY when it
 * cannot certify), and the pattern in a_out (per group, 0 when unused). */
static double price_bin(pricer *pr, const model *m, const double *u, size_t bi,
                        double *a_out, double *lp_value, double *y_out)
{
    const size_t D = m->D;
    const bin *b = &m->b[bi];
    size_t nc = 0;
    for (size_t g = 0; g < m->G; g++) {
        if (!m->allow[bi * m->G + g] || u[g] <= 0)
            continue;
        TLR_GROW(pr->cols, pr->ccap, nc + 1);
        pr->cols[nc++] = g;
    }
    *lp_value = 0;
    if (nc == 0)
        return 0;
    size_t W = nc + D + 1;   /* structural, slacks, rhs */
    size_t need = (D + 1) * W;
    TLR_GROW(pr->T, pr->tcap, need);
    TLR_GROW(pr->basis, pr->bcap, D + 1);
    double *T = pr->T;
    memset(T, 0, need * sizeof(double));
    for (size_t d = 0; d < D; d++) {
        for (size_t j = 0; j < nc; j++)
            T[d * W + j] = m->g[pr->cols[j]].r[d];
        T[d * W + nc + d] = 1;
        T[d * W + W - 1] = b->cap[d];
        pr->basis[d] = nc + d;
    }
    for (size_t j = 0; j < nc; j++)
        T[D * W + j] = -u[pr->cols[j]];
    for (int it = 0; it < 200; it++) {
        size_t e = SIZE_MAX;
        double best = -1e-12;
        for (size_t j = 0; j < nc + D; j++)
            if (T[D * W + j] < best) {
                best = T[D * W + j];
                e = j;
            }
        if (e == SIZE_MAX)
            break;
        size_t r = SIZE_MAX;
        double ratio = INFINITY;
        for (size_t d = 0; d < D; d++) {
            double v = T[d * W + e];
            if (v > 1e-12) {
                double q = T[d * W + W - 1] / v;
                if (q < ratio) {
                    ratio = q;
                    r = d;
                }
            }
        }
        if (r == SIZE_MAX)
            return INFINITY;    /* unbounded: a group needs nothing here */
        sv_tableau_pivot(T, D + 1, W, r, e);
        pr->basis[r] = e;
    }
    memset(a_out, 0, m->G * sizeof(double));
    for (size_t d = 0; d < D; d++)
        if (pr->basis[d] < nc && T[d * W + W - 1] > 0)
            a_out[pr->cols[pr->basis[d]]] = T[d * W + W - 1];
    *lp_value = T[D * W + W - 1];
    /* Certify: y_d = reduced cost of slack d (>= 0 at optimum). */
    double y[MAX_DIMS];
    for (size_t d = 0; d < D; d++)
        y[d] = T[D * W + nc + d] > 0 ? T[D * W + nc + d] : 0;
    /* Repair any dual constraint r_g . y >= u_g the floating-point
     * tableau left violated by raising y on the group's relatively
     * largest dimension; y only grows, so repaired groups stay repaired. */
    for (size_t j = 0; j < nc; j++) {
        const group *g = &m->g[pr->cols[j]];
        double ry = 0;
        for (size_t d = 0; d < D; d++)
            ry += g->r[d] * y[d];
        double deficit = u[pr->cols[j]] - ry;
        if (deficit <= 0)
            continue;
        size_t best = SIZE_MAX;
        double best_q = 0;
        for (size_t d = 0; d < D; d++) {
            if (g->r[d] <= 0 || b->cap[d] <= 0)
                continue;
            double q = g->r[d] / b->cap[d];
            if (q > best_q) {
                best_q = q;
                best = d;
            }
        }
        if (best == SIZE_MAX)
            return INFINITY;
        y[best] += deficit / g->r[best];
    }
    double v = 0;
    for (size_t d = 0; d < D; d++)
        v += b->cap[d] * y[d];
    v *= 1 + 1e-12;
    if (y_out)
        memcpy(y_out, y, D * sizeof(double));
    return v > *lp_value ? v : *lp_value;
}

/* The knapsack of bin bi under duals u: the allowed groups with u > 0 as
 * items (values u, weights r, limits n_g), into *in (pointing into pr). */
static void knap_items(pricer *pr, const model *m, const double *u, size_t bi, const double *y, long budget,
                       double beat, double gap, sv_knap_in *in)
{
    const size_t D = m->D;
    size_t n = 0;
    for (size_t g = 0; g < m->G; g++) {
        if (!m->allow[bi * m->G + g] || u[g] <= 0)
            continue;
        TLR_GROW(pr->cols, pr->ccap, n + 1);
        pr->cols[n++] = g;
    }
    TLR_GROW(pr->kv, pr->kvcap, n + 1);
    TLR_GROW(pr->kr, pr->krcap, (n + 1) * D);
    TLR_GROW(pr->kmax, pr->kmaxcap, n + 1);
    TLR_GROW(pr->kcnt, pr->kcntcap, n + 1);
    for (size_t j = 0; j < n; j++) {
        const group *g = &m->g[pr->cols[j]];
        pr->kv[j] = u[pr->cols[j]];
        memcpy(pr->kr + j * D, g->r, D * sizeof(double));
        pr->kmax[j] = g->n > 1e9 ? 1000000000 : (int)g->n;
    }
    *in = (sv_knap_in){ .D = D, .cap = m->b[bi].cap, .y = y, .n = n, .v = pr->kv, .r = pr->kr,
                        .stride = D, .kmax = pr->kmax, .budget = budget, .beat = beat,
                        .gap = gap, .swaps = true };
}

/* Integer pricing for a new bin: max u.a over integer patterns
 * (0 <= a_g <= n_g) by branch and bound (knapsack.c), seeded with the
 * fractional pricing's dual.  a_out gets the best pattern found.  Returns
 * a certified upper bound on the integer optimum: the smaller of the
 * fractional certificate and the search's own bound (exact when the
 * search finished within budget). */
static double iprice_bin(pricer *pr, sv_knap *kn, const model *m, const double *u, size_t bi,
                         double *a_out, long budget, double beat, double gap, double *value, bool *exact)
{
    double y[MAX_DIMS], lpv;
    double vfrac = price_bin(pr, m, u, bi, a_out, &lpv, y);
    memset(a_out, 0, m->G * sizeof(double));
    *value = 0;
    *exact = true;
    if (vfrac == 0 || vfrac == INFINITY)
        return vfrac;
    if (vfrac <= beat)
        return vfrac;   /* not even the fractional optimum beats it */
    sv_knap_in in;
    knap_items(pr, m, u, bi, y, budget, beat, gap, &in);
    sv_knap_out ko;
    sv_knap_solve(kn, &in, pr->kcnt, &ko);
    for (size_t j = 0; j < in.n; j++)
        a_out[pr->cols[j]] = pr->kcnt[j];
    *value = ko.value;
    *exact = ko.exact;
    return ko.upper < vfrac ? ko.upper : vfrac;
}

/* ---- master: revised simplex over generated columns -------------------- */

typedef struct column {
    size_t bin;
    double cost;
    size_t n;
    size_t *rows;
    double *vals;
} column;

typedef struct master {
    size_t m;              /* rows: G groups + 1 free row */
    double *Binv;          /* m x m */
    double *xB;            /* m */
    size_t *basis;         /* per row: column index */
    column *cols;
    size_t n_cols, cap_cols;
    double *pi;            /* duals */
    double *work;
} master;

static size_t add_column(master *ms, size_t bin_idx, double cost, const double *a, size_t G,
                         bool free_row)
{
    TLR_GROW(ms->cols, ms->cap_cols, ms->n_cols + 1);
    column *c = &ms->cols[ms->n_cols];
    size_t nz = free_row ? 1 : 0;
    for (size_t g = 0; g < G; g++)
        nz += a && a[g] > 0;
    c->bin = bin_idx;
    c->cost = cost;
    c->n = 0;
    c->rows = tlr_malloc((nz + 1) * sizeof(size_t));
    c->vals = tlr_malloc((nz + 1) * sizeof(double));
    for (size_t g = 0; a && g < G; g++)
        if (a[g] > 0) {
            c->rows[c->n] = g;
            c->vals[c->n++] = a[g];
        }
    if (free_row) {
        c->rows[c->n] = G;
        c->vals[c->n++] = 1;
    }
    return ms->n_cols++;
}

static void compute_duals(master *ms)
{
    size_t m = ms->m;
    for (size_t j = 0; j < m; j++) {
        double s = 0;
        for (size_t i = 0; i < m; i++)
            s += ms->cols[ms->basis[i]].cost * ms->Binv[i * m + j];
        ms->pi[j] = s;
    }
}

static double reduced_cost(const master *ms, const column *c)
{
    double s = c->cost;
    for (size_t k = 0; k < c->n; k++)
        s -= ms->pi[c->rows[k]] * c->vals[k];
    return s;
}

/* One pivot with entering column e; *row = the leaving row.  Returns
 * false when unbounded. */
static bool pivot(master *ms, size_t e, size_t *row)
{
    size_t m = ms->m;
    const column *c = &ms->cols[e];
    double *d = ms->work;
    for (size_t i = 0; i < m; i++) {
        double s = 0;
        for (size_t k = 0; k < c->n; k++)
            s += ms->Binv[i * m + c->rows[k]] * c->vals[k];
        d[i] = s;
    }
    size_t r = SIZE_MAX;
    double ratio = INFINITY;
    for (size_t i = 0; i < m; i++) {
        if (d[i] > 1e-11) {
            double q = ms->xB[i] / d[i];
            if (q < ratio - 1e-15 || (q <= ratio + 1e-15 && r != SIZE_MAX && d[i] > d[r])) {
                ratio = q;
                r = i;
            }
        }
    }
    if (r == SIZE_MAX)
        return false;
    double pv = d[r];
    for (size_t j = 0; j < m; j++)
        ms->Binv[r * m + j] /= pv;
    ms->xB[r] /= pv;
    for (size_t i = 0; i < m; i++) {
        if (i == r || d[i] == 0)
            continue;
        double f = d[i];
        for (size_t j = 0; j < m; j++)
            ms->Binv[i * m + j] -= f * ms->Binv[r * m + j];
        ms->xB[i] -= f * ms->xB[r];
        if (ms->xB[i] < 0 && ms->xB[i] > -1e-9)
            ms->xB[i] = 0;
    }
    ms->basis[r] = e;
    *row = r;
    return true;
}

/* ---- driver --------------------------------------------------------------- */

static int64_t lb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void normalize(model *m, const int64_t *raw_r, const int64_t *raw_c)
{
    for (size_t d = 0; d < m->D; d++) {
        size_t src = d < m->n_res ? d : d;   /* anti dims follow resource dims */
        double s = 1;
        for (size_t b = 0; b < m->B; b++)
            if ((double)raw_c[b * MAX_DIMS + src] > s)
                s = (double)raw_c[b * MAX_DIMS + src];
        for (size_t g = 0; g < m->G; g++)
            m->g[g].r[d] = (double)raw_r[g * MAX_DIMS + src] / s;
        for (size_t b = 0; b < m->B; b++)
            m->b[b].cap[d] = (double)raw_c[b * MAX_DIMS + src] / s;
    }
}

/* The basis columns of the master that buy new capacity, into plan. */
static void export_columns(const model *m, const master *ms, sv_lp_plan *plan)
{
    plan->cols = tlr_calloc(ms->m + 1, sizeof(sv_lp_col));
    for (size_t i = 0; i < ms->m; i++) {
        const column *c = &ms->cols[ms->basis[i]];
        if (c->bin == SIZE_MAX || m->b[c->bin].free_bin || !(ms->xB[i] > 1e-9))
            continue;
        sv_lp_col *o = &plan->cols[plan->ncols++];
        o->pool = m->b[c->bin].pool;
        o->type = m->b[c->bin].type;
        o->price = m->b[c->bin].price;
        o->x = ms->xB[i];
        o->group = tlr_calloc(c->n + 1, sizeof(int));
        o->count = tlr_calloc(c->n + 1, sizeof(double));
        for (size_t k = 0; k < c->n; k++)
            if (c->rows[k] < m->G) {
                o->group[o->n] = (int)c->rows[k];
                o->count[o->n++] = c->vals[k];
            }
    }
}

/* ---- column generation ---------------------------------------------------- */

/* One column-generation run over a master: its columns are fractional
 * fillings of a bin (integer = false) or integer patterns (true). */
typedef struct cg {
    master ms;
    pricer pr;
    sv_knap *kn;
    double *a, *u, *vbar, *cand_rc, *cand_a;
    size_t *cand_b;
    double maxprice;
    bool integer;
    bool fresh;            /* vbar certifies the current duals */
    double gap;            /* the knapsacks' relative gap */
    int pivots;
} cg;

/* A fresh master: per group its cheapest single-group column on a new bin
 * (the most pods of the group one node holds: fractional, or rounded down
 * for integer patterns), else an artificial column at a prohibitive price;
 * plus the free row's slack. */
static void cg_init(cg *c, const model *m, bool integer)
{
    const size_t G = m->G, rows = G + 1;
    memset(c, 0, sizeof(*c));
    c->integer = integer;
    c->gap = LB_KNAP_GAP;
    c->ms.m = rows;
    c->ms.Binv = tlr_calloc(rows * rows, sizeof(double));
    c->ms.xB = tlr_calloc(rows, sizeof(double));
    c->ms.basis = tlr_calloc(rows, sizeof(size_t));
    c->ms.pi = tlr_calloc(rows, sizeof(double));
    c->ms.work = tlr_calloc(rows, sizeof(double));
    c->a = tlr_calloc(G + 1, sizeof(double));
    c->u = tlr_calloc(G + 1, sizeof(double));
    c->vbar = tlr_calloc(m->B + 1, sizeof(double));
    c->cand_rc = tlr_calloc(m->B + 1, sizeof(double));
    c->cand_b = tlr_calloc(m->B + 1, sizeof(size_t));
    c->cand_a = tlr_calloc((m->B + 1) * (G + 1), sizeof(double));
    if (integer)
        sv_knap_create(&c->kn);
    c->maxprice = 1;
    for (size_t b = 0; b < m->B; b++)
        if (!m->b[b].free_bin && m->b[b].price > c->maxprice)
            c->maxprice = m->b[b].price;
    master *ms = &c->ms;
    double *a = c->a;
    for (size_t g = 0; g < G; g++) {
        double best = INFINITY, best_k = 0;
        size_t best_b = SIZE_MAX;
        for (size_t b = 0; b < m->B; b++) {
            if (m->b[b].free_bin || !m->allow[b * G + g])
                continue;
            double k = INFINITY;
            for (size_t d = 0; d < m->D; d++)
                if (m->g[g].r[d] > 0 && m->b[b].cap[d] / m->g[g].r[d] < k)
                    k = m->b[b].cap[d] / m->g[g].r[d];
            if (integer && k != INFINITY) {
                k = floor(k * (1 + 1e-9) + 1e-9);
                if (k > m->g[g].n)
                    k = m->g[g].n;
            }
            if (k == INFINITY || k <= 0)
                continue;
            if (m->b[b].price / k < best) {
                best = m->b[b].price / k;
                best_b = b;
                best_k = k;
            }
        }
        memset(a, 0, G * sizeof(double));
        size_t col;
        if (best_b != SIZE_MAX) {
            a[g] = best_k;
            col = add_column(ms, best_b, m->b[best_b].price, a, G, false);
        } else {
            a[g] = 1;
            col = add_column(ms, SIZE_MAX, 1e4 * c->maxprice, a, G, false);
        }
        ms->basis[g] = col;
        ms->Binv[g * rows + g] = 1 / a[g];
        ms->xB[g] = m->g[g].n / a[g];
    }
    ms->basis[G] = add_column(ms, SIZE_MAX, 0, NULL, G, true);   /* free slack */
    ms->Binv[G * rows + G] = 1;
    ms->xB[G] = 1;
}

static void cg_free(cg *c)
{
    for (size_t j = 0; j < c->ms.n_cols; j++) {
        free(c->ms.cols[j].rows);
        free(c->ms.cols[j].vals);
    }
    free(c->ms.cols);
    free(c->ms.Binv);
    free(c->ms.xB);
    free(c->ms.basis);
    free(c->ms.pi);
    free(c->ms.work);
    free(c->a);
    free(c->u);
    free(c->vbar);
    free(c->cand_rc);
    free(c->cand_b);
    free(c->cand_a);
    sv_knap_free(c->kn);
    free(c->pr.kv);
    free(c->pr.kr);
    free(c->pr.kmax);
    free(c->pr.kcnt);
    free(c->pr.T);
    free(c->pr.cols);
    free(c->pr.basis);
}

/* Optimize the master over the columns it has. */
static void cg_optimize(cg *c)
{
    master *ms = &c->ms;
    size_t rows = ms->m;
    compute_duals(ms);
    for (int since = 0;; since++) {
        /* Duals are updated in O(m) per pivot (pi += rc * new row r of
         * B^-1) and recomputed from scratch now and then. */
        if (since % 64 == 63)
            compute_duals(ms);
        size_t e = SIZE_MAX;
        double best = -1e-9 * c->maxprice;
        for (size_t j = 0; j < ms->n_cols; j++) {
            double rc = reduced_cost(ms, &ms->cols[j]);
            if (rc < best) {
                best = rc;
                e = j;
            }
        }
        if (e == SIZE_MAX || c->pivots >= MAX_PIVOTS)
            break;
        size_t r;
        if (!pivot(ms, e, &r))
            break;
        for (size_t j = 0; j < rows; j++)
            ms->pi[j] += best * ms->Binv[r * rows + j];
        c->pivots++;
    }
    compute_duals(ms);
    for (size_t g = 0; g + 1 < rows; g++)
        c->u[g] = ms->pi[g] > 0 ? ms->pi[g] : 0;
}

/* Price bin b under the current duals: its certified upper bound on u.a
 * (into vbar) and its best column (into a, *val its value). */
static void cg_price(cg *c, const model *m, size_t b, long budget, double *a, double *val, bool *exact)
{
    *exact = true;
    if (c->integer && !m->b[b].free_bin)
        c->vbar[b] = iprice_bin(&c->pr, c->kn, m, c->u, b, a, budget, m->b[b].price, c->gap, val, exact);
    else
        c->vbar[b] = price_bin(&c->pr, m, c->u, b, a, val, NULL);
}

/* Generate columns until none prices out (or caps, or the deadline). */
static void cg_run(cg *c, const model *m, const sv_lp_opts *o, long round_budget, long final_budget)
{
    master *ms = &c->ms;
    const size_t G = m->G;
    long budget = round_budget;
    bool last_partial = false;
    c->fresh = false;
    for (int round = 0; round < MAX_ROUNDS && c->pivots < MAX_PIVOTS; round++) {
        if (o->deadline_ns && lb_now_ns() > o->deadline_ns)
            break;
        cg_optimize(c);
        size_t n_cand = 0;
        bool inexact = false;
        /* Partial pricing: between full rounds only the bins whose last
         * fractional value came near their price are priced again. */
        bool full = !c->integer || round % 8 == 0 || last_partial;
        for (size_t b = 0; b < m->B; b++) {
            double val;
            bool exact;
            double *ca = c->cand_a + n_cand * (G + 1);
            if (!full && c->vbar[b] < m->b[b].price * 0.97 && !m->b[b].free_bin)
                continue;
            cg_price(c, m, b, budget, ca, &val, &exact);
            inexact |= !exact;
            double rc = (m->b[b].free_bin ? -ms->pi[G] : m->b[b].price) - val;
            if (val > 0 && rc < -1e-9 * c->maxprice) {
                c->cand_rc[n_cand] = rc;
                c->cand_b[n_cand++] = b;
            }
        }
        c->fresh = full;
        /* Keep the COLS_PER_ROUND most negative (partial selection). */
        size_t keep = n_cand < COLS_PER_ROUND ? n_cand : COLS_PER_ROUND;
        for (size_t i = 0; i < keep; i++) {
            size_t best = i;
            for (size_t j = i + 1; j < n_cand; j++)
                if (c->cand_rc[j] < c->cand_rc[best])
                    best = j;
            double trc = c->cand_rc[i];
            size_t tb = c->cand_b[i];
            c->cand_rc[i] = c->cand_rc[best];
            c->cand_b[i] = c->cand_b[best];
            c->cand_rc[best] = trc;
            c->cand_b[best] = tb;
            if (best != i) {
                memcpy(c->a, c->cand_a + i * (G + 1), G * sizeof(double));
                memcpy(c->cand_a + i * (G + 1), c->cand_a + best * (G + 1), G * sizeof(double));
                memcpy(c->cand_a + best * (G + 1), c->a, G * sizeof(double));
            }
        }
        for (size_t i = 0; i < keep; i++) {
            size_t b = c->cand_b[i];
            add_column(ms, b, m->b[b].free_bin ? 0 : m->b[b].price, c->cand_a + i * (G + 1), G,
                       m->b[b].free_bin);
        }
        last_partial = false;
        if (keep > 0) {
            c->fresh = false;
            budget = round_budget;
            continue;
        }
        if (!full) {
            last_partial = true;   /* nothing near: look at every bin */
            continue;
        }
        /* No column found.  An integer search that ran out of budget may
         * have missed one: search once more with the final budget. */
        if (!c->integer || !inexact || budget >= final_budget)
            break;
        budget = final_budget;
    }
    if (!c->fresh)
        cg_optimize(c);
}

/* The certified dual value of the current duals (see the file comment):
 * theta * (sum_g n_g u_g - v_free). */
static double cg_certify(cg *c, const model *m, long final_budget)
{
    double theta = 1, vfree = 0, nu = 0;
    for (size_t b = 0; b < m->B; b++) {
        if (!c->fresh) {
            double val;
            bool exact;
            cg_price(c, m, b, final_budget, c->a, &val, &exact);
        }
        double v = c->vbar[b];
        if (m->b[b].free_bin) {
            vfree = v;
        } else if (v > 0) {
            double t = v == INFINITY ? 0 : m->b[b].price / v;
            if (t < theta)
                theta = t;
        }
    }
    c->fresh = true;
    for (size_t g = 0; g < m->G; g++)
        nu += m->g[g].n * c->u[g];
    double lb = vfree == INFINITY ? 0 : theta * (nu - vfree);
    if (!(lb > 0))
        lb = 0;
    return lb * (1 - 1e-9);
}

/* An integer pattern near a fractional column: its counts rounded down,
 * then filled by the column's own groups (largest fraction first) and
 * then any allowed group by value per size, while they fit. */
static void integerize(const model *m, size_t bi, const double *u, const column *col, double *a)
{
    const size_t G = m->G, D = m->D;
    const bin *b = &m->b[bi];
    double left[MAX_DIMS];
    memcpy(left, b->cap, D * sizeof(double));
    memset(a, 0, G * sizeof(double));
    for (size_t k = 0; k < col->n; k++) {
        size_t g = col->rows[k];
        if (g >= G)
            continue;
        double f = floor(col->vals[k] + 1e-9);
        if (f > m->g[g].n)
            f = m->g[g].n;
        a[g] = f;
        for (size_t d = 0; d < D; d++)
            left[d] -= f * m->g[g].r[d];
    }
    /* Fill: the column's own groups first, then the others by value per
     * unit of the bin they use. */
    size_t *ord = tlr_malloc((G + 1) * sizeof(size_t));
    double *eff = tlr_malloc((G + 1) * sizeof(double));
    size_t no = 0;
    for (size_t g = 0; g < G; g++) {
        if (!m->allow[bi * G + g] || !(u[g] > 0))
            continue;
        double sz = 0;
        for (size_t d = 0; d < D; d++)
            if (b->cap[d] > 0)
                sz += m->g[g].r[d] / b->cap[d];
        eff[g] = (a[g] > 0 ? 1e6 : 0) + (sz > 0 ? u[g] / sz : 0);
        ord[no++] = g;
    }
    for (size_t i = 1; i < no; i++)
        for (size_t j = i; j > 0 && eff[ord[j]] > eff[ord[j - 1]]; j--) {
            size_t t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    for (size_t oi = 0; oi < no; oi++) {
        size_t g = ord[oi];
        {
            for (;;) {
                if (a[g] + 1 > m->g[g].n)
                    break;
                bool fits = true;
                for (size_t d = 0; d < D && fits; d++)
                    fits = m->g[g].r[d] <= left[d] * (1 + 1e-9) + 1e-12;
                if (!fits)
                    break;
                a[g] += 1;
                for (size_t d = 0; d < D; d++)
                    left[d] -= m->g[g].r[d];
            }
        }
    }
    free(ord);
    free(eff);
}

/* Solve the LP; the certified bound is returned, and with plan non-NULL
 * the final basis's columns are exported into it.  With o->integer the
 * fractional LP is solved first (its bound is kept), then the
 * configuration LP over integer patterns starts from its columns, rounded
 * to integers, and its solution is what plan gets. */
static double solve_bound(model *m, sv_lp_plan *plan, const sv_lp_opts *o)
{
    long round_budget = o->round_budget > 0 ? o->round_budget : LB_ROUND_BUDGET;
    long final_budget = o->final_budget > 0 ? o->final_budget : LB_FINAL_BUDGET;
    cg f;
    cg_init(&f, m, false);
    cg_run(&f, m, o, round_budget, final_budget);
    double lb = cg_certify(&f, m, final_budget);
    if (!o->integer) {
        if (plan)
            export_columns(m, &f.ms, plan);
        cg_free(&f);
        return lb;
    }
    cg c;
    cg_init(&c, m, true);
    for (size_t i = 0; i < f.ms.m; i++) {
        const column *col = &f.ms.cols[f.ms.basis[i]];
        if (col->bin == SIZE_MAX || m->b[col->bin].free_bin || !(f.ms.xB[i] > 1e-9))
            continue;
        integerize(m, col->bin, f.u, col, c.a);
        bool any = false;
        for (size_t g = 0; g < m->G && !any; g++)
            any = c.a[g] > 0;
        if (any)
            add_column(&c.ms, col->bin, m->b[col->bin].price, c.a, m->G, false);
    }
    /* And each new bin's best integer pattern under the fractional duals. */
    memcpy(c.u, f.u, m->G * sizeof(double));
    for (size_t b = 0; b < m->B; b++) {
        if (m->b[b].free_bin)
            continue;
        double val;
        bool exact;
        (void)iprice_bin(&c.pr, c.kn, m, c.u, b, c.a, round_budget * 10, 0, c.gap, &val, &exact);
        if (val > 0)
            add_column(&c.ms, b, m->b[b].price, c.a, m->G, false);
    }
    cg_free(&f);
    cg_run(&c, m, o, round_budget, final_budget);
    if (o->certify) {
        /* Certify with tight knapsacks: a gap g costs the bound a share g. */
        c.gap = LB_CERT_GAP;
        c.fresh = false;
        double ilb = cg_certify(&c, m, o->cert_budget > 0 ? o->cert_budget : LB_CERT_BUDGET);
        if (ilb > lb)
            lb = ilb;
    }
    if (plan)
        export_columns(m, &c.ms, plan);
    cg_free(&c);
    return lb;
}

/* Remove new bins dominated by a bin of the same NodePool that costs no
 * more, holds at least as much in every dimension and takes every group
 * the dominated one takes: any column of the dominated bin is a column of
 * the dominating bin at no higher cost, so the optimum is unchanged. */
static int cmp_price(const void *a, const void *b, void *ctx)
{
    const model *m = ctx;
    double x = m->b[*(const size_t *)a].price, y = m->b[*(const size_t *)b].price;
    return x < y ? -1 : x > y ? 1 : 0;
}

static void prune_dominated(model *m, bins_ctx *bc)
{
    size_t *order = tlr_calloc(m->B + 1, sizeof(size_t));
    uint8_t *gone = tlr_calloc(m->B + 1, 1);
    size_t *kept = tlr_calloc(m->B + 1, sizeof(size_t));
    size_t nk = 0;
    for (size_t i = 0; i < m->B; i++)
        order[i] = i;
    qsort_r(order, m->B, sizeof(size_t), cmp_price, m);
    for (size_t oi = 0; oi < m->B; oi++) {
        size_t b = order[oi];
        if (m->b[b].free_bin)
            continue;
        const int64_t *cb = bc->raw_c + b * MAX_DIMS;
        for (size_t k = 0; k < nk && !gone[b]; k++) {
            size_t d = kept[k];
            if (m->b[d].pool != m->b[b].pool || m->b[d].price > m->b[b].price)
                continue;
            const int64_t *cd = bc->raw_c + d * MAX_DIMS;
            bool dom = true;
            for (size_t x = 0; x < m->D && dom; x++)
                dom = cd[x] >= cb[x];
            for (size_t g = 0; g < m->G && dom; g++)
                dom = m->allow[d * m->G + g] >= m->allow[b * m->G + g];
            gone[b] = dom;
        }
        if (!gone[b])
            kept[nk++] = b;
    }
    size_t w = 0;
    for (size_t b = 0; b < m->B; b++) {
        if (gone[b])
            continue;
        if (w != b) {
            m->b[w] = m->b[b];
            memcpy(bc->raw_c + w * MAX_DIMS, bc->raw_c + b * MAX_DIMS, MAX_DIMS * sizeof(int64_t));
            memmove(m->allow + w * m->G, m->allow + b * m->G, m->G);
        }
        w++;
    }
    m->B = w;
    free(order);
    free(gone);
    free(kept);
}

/* The bound of req; with plan non-NULL also the LP's solution. */
static double lb_run(const Tailor__V1__SolveRequest *req, const sv_lp_opts *o, sv_lp_plan *plan)
{
    model m = {0};
    m.pod_group = tlr_malloc((req->n_pending_pods + 1) * sizeof(int));
    for (size_t i = 0; i < req->n_pending_pods; i++)
        m.pod_group[i] = -1;
    collect_dims(&m, req);
    size_t raw_r_cap = req->n_pending_pods + 1;
    int64_t *raw_r = tlr_calloc(raw_r_cap * MAX_DIMS, sizeof(int64_t));
    build_groups(&m, req, raw_r, &raw_r_cap);
    m.D = m.n_res + m.n_anti;
    double lb = 0;
    bins_ctx bc = {0};
    uint8_t *free_fit = NULL;
    if (m.G == 0)
        goto out;
    build_new_bins(&m, req, &bc);
    free_fit = tlr_calloc(m.G + 1, 1);
    build_free_bin(&m, req, &bc, raw_r, free_fit);
    if (m.B == 0)
        goto out;
    /* Allowed matrix: class allowed on the bin and one pod fits alone. */
    m.allow = tlr_calloc(m.B * m.G + 1, 1);
    for (size_t b = 0; b < m.B; b++) {
        const int64_t *rc = bc.raw_c + b * MAX_DIMS;
        for (size_t g = 0; g < m.G; g++) {
            bool ok = m.b[b].free_bin ? free_fit[g]
                                      : bc.cls_allow[b * (m.n_cls + 1) + m.g[g].cls];
            for (size_t d = 0; d < m.D && ok; d++)
                ok = raw_r[g * MAX_DIMS + d] <= rc[d];
            m.allow[b * m.G + g] = ok;
        }
    }
    /* Groups no new bin takes are left out: either they fit nowhere
     * (a PodError costs nothing) or only on existing capacity, where
     * leaving them out only leaves more room for the others. */
    for (size_t g = 0; g < m.G; g++) {
        bool any = false;
        for (size_t b = 0; b < m.B && !any; b++)
            any = !m.b[b].free_bin && m.allow[b * m.G + g];
        if (!any) {
            m.g[g].n = 0;
            for (size_t b = 0; b < m.B; b++)
                m.allow[b * m.G + g] = 0;
        }
    }
    prune_dominated(&m, &bc);
    /* Drop dimensions nobody asks for (keeps the pricing LPs small). */
    {
        size_t keep[MAX_DIMS], nk = 0;
        for (size_t d = 0; d < m.D; d++) {
            bool used = false;
            for (size_t g = 0; g < m.G && !used; g++)
                used = raw_r[g * MAX_DIMS + d] > 0 && m.g[g].n > 0;
            if (used)
                keep[nk++] = d;
        }
        for (size_t g = 0; g < m.G; g++)
            for (size_t k = 0; k < nk; k++)
                raw_r[g * MAX_DIMS + k] = raw_r[g * MAX_DIMS + keep[k]];
        for (size_t b = 0; b < m.B; b++)
            for (size_t k = 0; k < nk; k++)
                bc.raw_c[b * MAX_DIMS + k] = bc.raw_c[b * MAX_DIMS + keep[k]];
        m.D = nk;
        m.n_res = nk;
    }
    if (m.D == 0)
        goto out;
    normalize(&m, raw_r, bc.raw_c);
    sv_lp_opts def = { .integer = false };
    lb = solve_bound(&m, plan, o ? o : &def);
out:
    if (plan) {
        plan->npods = (int)req->n_pending_pods;
        plan->ngroups = (int)m.G;
        plan->pod_group = m.pod_group;
        m.pod_group = NULL;
    }
    free(m.pod_group);
    free(raw_r);
    free(bc.raw_c);
    free(bc.cls_allow);
    free(free_fit);
    free(m.g);
    free(m.cls_rep);
    free(m.b);
    free(m.allow);
    return lb;
}

int tlr_solve_lower_bound(const Tailor__V1__SolveRequest *req, double *cost_per_hour)
{
    if (!req || !cost_per_hour)
        return TLR_E_INVAL;
    *cost_per_hour = lb_run(req, NULL, NULL);
    return TLR_OK;
}

int tlr_solve_lower_bound_tight(const Tailor__V1__SolveRequest *req, double *cost_per_hour)
{
    if (!req || !cost_per_hour)
        return TLR_E_INVAL;
    sv_lp_opts o = { .integer = true, .certify = true, .final_budget = LB_TIGHT_BUDGET,
                     .cert_budget = LB_CERT_BUDGET };
    *cost_per_hour = lb_run(req, &o, NULL);
    return TLR_OK;
}

int sv_lp_plan_solve(const Tailor__V1__SolveRequest *req, const sv_lp_opts *o, sv_lp_plan **out)
{
    if (!req || !out)
        return TLR_E_INVAL;
    sv_lp_plan *p = tlr_calloc(1, sizeof(*p));
    p->bound = lb_run(req, o, p);
    *out = p;
    return TLR_OK;
}

void sv_lp_plan_free(sv_lp_plan *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->ncols; i++) {
        free(p->cols[i].group);
        free(p->cols[i].count);
    }
    free(p->cols);
    free(p->pod_group);
    free(p);
}
