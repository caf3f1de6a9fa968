/* place.c - where each pod goes: existing nodes, in-flight NodeClaims, new
 * NodeClaims.  Both strategies share every constraint check here (one
 * function, sv_bin_room, answers "how many pods of class c may this bin
 * still take at relaxation level lv"), so the comparison between them is
 * about packing and instance choice only.
 *
 * TLR_SOLVE_KARPENTER (the baseline) follows Karpenter's Scheduler.Solve:
 * pods one at a time, sorted by cpu then memory descending; first fit over
 * existing nodes (initialized first, then by name) and in-flight claims;
 * then the claims opened in this solve, fewest pods first; then a new
 * claim from the first NodePool (by weight) that can take the pod.  A new
 * claim keeps every instance type that still fits and absorbs pods while
 * any does; its cost is its cheapest option.
 *
 * TLR_SOLVE_TAILOR works on classes of identical pods, most expensive per
 * pod first (a class's "unit": its cheapest price per pod on any type it
 * may use, packed alone), and
 * places a whole class in a few steps: as many as fit on each existing
 * node, in-flight claim and open claim, then new claims.  A new claim is
 * sized when it opens: the "target" type minimises price per unit of value
 * packed, where a pod's value is its cheapest achievable cost per pod and
 * the packing looks ahead at the next classes still to place.  Claims keep
 * every compatible type as a later option; emit.c ranks the types that hold
 * the final content, so a claim that ended up half full is downsized.
 * While a class keeps opening claims, the type choice is reused whenever
 * it provably cannot change (choose_target).  A last pass empties the
 * least filled claims into other claims' slack when that is cheaper
 * (empty_claims).
 *
 * TLR_SOLVE_FFD (ffd.c) opens and fills claims as the baseline does, with
 * pods in first-fit-decreasing order and claims in the order they opened.
 *
 * Cost: the compiled tables make each room check O(dims + constraints);
 * tailor's placement is O(classes x bins), the baseline's O(pods x bins x
 * types) in the worst case, like Karpenter's.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solve_internal.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_labels.h"

/* ---- small helpers ---------------------------------------------------- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool timed_out(sv_model *m)
{
    if (!m->timed_out && now_ns() > m->deadline_ns)
        m->timed_out = true;
    return m->timed_out;
}

static int *grow_int(sv_model *m, int *a, int n, int *cap)
{
    if (n < *cap)
        return a;
    int nc = *cap ? *cap * 2 : 8;
    int *na = tlr_arena_alloc(m->ar, (size_t)nc * sizeof(int));
    if (n)
        memcpy(na, a, (size_t)n * sizeof(int));
    *cap = nc;
    return na;
}

static int host_count(const sv_group *g, const int *arr, int b)
{
    return arr && b < g->nhost ? arr[b] : 0;
}

static void group_host_grow(sv_model *m, sv_group *g, int need)
{
    if (need <= g->nhost)
        return;
    int nc = g->nhost ? g->nhost : 16;
    while (nc < need)
        nc *= 2;
    int *a = tlr_arena_calloc(m->ar, (size_t)nc, sizeof(int));
    int *o = tlr_arena_calloc(m->ar, (size_t)nc, sizeof(int));
    if (g->nhost) {
        memcpy(a, g->host_match, (size_t)g->nhost * sizeof(int));
        memcpy(o, g->host_owner, (size_t)g->nhost * sizeof(int));
    }
    g->host_match = a;
    g->host_owner = o;
    g->nhost = nc;
}

static void group_record(sv_model *m, int gi, int b, int zone, int ct, const int *tkv, int n, bool owner)
{
    sv_group *g = &m->groups[gi];
    if (g->tk == SV_TK_LABEL && g->lab_match && tkv && tkv[g->tki] >= 0)
        (owner ? g->lab_owner : g->lab_match)[tkv[g->tki]] += n;
    if (owner) {
        if (zone >= 0)
            g->zone_owner[zone] += n;
        if (ct >= 0)
            g->ct_owner[ct] += n;
        if (b >= 0) {
            group_host_grow(m, g, b + 1);
            g->host_owner[b] += n;
        }
        return;
    }
    if (zone >= 0)
        g->zone_match[zone] += n;
    if (ct >= 0)
        g->ct_match[ct] += n;
    if (b >= 0) {
        group_host_grow(m, g, b + 1);
        g->host_match[b] += n;
    }
    g->total_match += n;
}

/* Room for n more bins without regrowing (sv_bin is large: doubling from
 * 64 to thousands of existing nodes copied it many times over). */
static void bins_reserve(sv_model *m, int n)
{
    if (m->nbins + n <= m->cbins)
        return;
    int nc = m->nbins + n;
    sv_bin *nb = tlr_arena_calloc(m->ar, (size_t)nc, sizeof(sv_bin));
    if (m->nbins)
        memcpy(nb, m->bins, (size_t)m->nbins * sizeof(sv_bin));
    m->bins = nb;
    m->cbins = nc;
}

static int new_bin(sv_model *m)
{
    if (m->nbins == m->cbins) {
        int nc = m->cbins ? m->cbins * 2 : 64;
        sv_bin *nb = tlr_arena_calloc(m->ar, (size_t)nc, sizeof(sv_bin));
        if (m->nbins)
            memcpy(nb, m->bins, (size_t)m->nbins * sizeof(sv_bin));
        m->bins = nb;
        m->cbins = nc;
    }
    sv_bin *b = &m->bins[m->nbins];
    memset(b, 0, sizeof(*b));
    b->zone = b->ct = SV_NONE;
    b->pool = SV_NONE;
    b->target = SV_NONE;
    return m->nbins++;
}

static int zone_of(sv_model *m, const char *z)
{
    sv_id id = sv_intern(m, z);
    for (int i = 0; id && i < m->nzones; i++)
        if (m->zones[i] == id)
            return i;
    if (!id || m->nzones == SV_MAXZONE)
        return SV_NONE;
    m->zones[m->nzones] = id;
    m->zone_ids[m->nzones] = 0;
    return m->nzones++;
}

static int ct_of(const char *s)
{
    if (!s)
        return SV_NONE;
    if (!strcmp(s, "on-demand"))
        return 1;
    if (!strcmp(s, "spot"))
        return 2;
    if (!strcmp(s, "reserved"))
        return 3;
    return SV_NONE;
}

static const char *label_val(const sv_model *m, const sv_dom *d, sv_id k)
{
    const sv_dent *e = sv_dom_get(d, k);
    return e && e->nvals == 1 ? sv_str(m, e->vals[0]) : NULL;
}

static void bin_add_ports(sv_model *m, sv_bin *b, const Tailor__V1__HostPort *const *hp, size_t n,
                          const sv_port *cp, int ncp)
{
    int need = b->nports + (int)n + ncp;
    if (need > b->cports) {
        int nc = need * 2;
        sv_port *np = tlr_arena_alloc(m->ar, (size_t)nc * sizeof(sv_port));
        if (b->nports)
            memcpy(np, b->ports, (size_t)b->nports * sizeof(sv_port));
        b->ports = np;
        b->cports = nc;
    }
    for (size_t i = 0; i < n; i++) {
        sv_port *p = &b->ports[b->nports++];
        p->port = hp[i]->port;
        p->proto = hp[i]->protocol ? hp[i]->protocol : 1;
        p->ip = strcmp(hp[i]->host_ip ? hp[i]->host_ip : "", "0.0.0.0") ? sv_intern(m, hp[i]->host_ip) : 0;
    }
    for (int i = 0; i < ncp; i++)
        b->ports[b->nports++] = cp[i];
}

static bool ports_conflict(const sv_bin *b, const sv_class *c)
{
    for (int i = 0; i < c->nports; i++)
        for (int j = 0; j < b->nports; j++)
            if (c->ports[i].port == b->ports[j].port && c->ports[i].proto == b->ports[j].proto &&
                (!c->ports[i].ip || !b->ports[j].ip || c->ports[i].ip == b->ports[j].ip))
                return true;
    return false;
}

static bool removed(const sv_model *m, const char *name)
{
    for (size_t i = 0; i < m->nremoved; i++)
        if (!strcmp(m->removed[i], name ? name : ""))
            return true;
    return false;
}

/* Record a pod already running (or planned) in bin b into the groups;
 * tkv (may be NULL) is its node's value per SV_TK_LABEL key. */
static void record_existing(sv_model *m, const Tailor__V1__Pod *p, int b, int zone, int ct, const int *tkv)
{
    /* Without a topology group (no pending pod spreads or (anti-)affines,
     * no existing pod owns a required anti-affinity: compile.c made every
     * group there is) an existing pod counts for nothing: skip building
     * its labels, which at 100k bound pods was most of a small solve. */
    if (m->ngroups == 0)
        return;
    sv_dom l = sv_labels_dom(m, p->labels, p->n_labels);
    sv_id ns = sv_intern(m, p->namespace_);
    for (int g = 0; g < m->ngroups; g++) {
        sv_group *x = &m->groups[g];
        if (sv_group_ns_ok(x, ns) && sv_selector_match(m, x->sel, &x->extra, &l))
            group_record(m, g, b, zone, ct, tkv, 1, false);
    }
    int own[16];
    int n = sv_pod_anti_groups(m, p, &l, own, 16);
    for (int i = 0; i < n; i++)
        group_record(m, own[i], b, zone, ct, tkv, 1, true);
}

/* ---- existing capacity ------------------------------------------------ */

/* A Node and its NodeClaim are one piece of capacity (Karpenter's
 * StateNode): the Node is the bin, the claim only fills in what a booting
 * Node does not report yet, and is never a bin of its own.  They are
 * linked by the Node's owner reference, the claim's status.nodeName or the
 * provider ID; link_claims indexes the claims by all three once. */
enum { LK_NAME, LK_NODE, LK_PID };

typedef struct {
    const char *s;
    int tag, idx;
} link_ent;

static void link_put(link_ent *t, size_t cap, int tag, const char *s, int idx)
{
    if (!s || !*s)
        return;
    size_t k = (tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, s) + (uint64_t)tag) & (cap - 1);
    while (t[k].s)
        k = (k + 1) & (cap - 1);
    t[k] = (link_ent){ s, tag, idx };
}

static int link_get(const link_ent *t, size_t cap, int tag, const char *s)
{
    if (!s || !*s)
        return SV_NONE;
    size_t k = (tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, s) + (uint64_t)tag) & (cap - 1);
    int best = SV_NONE;
    for (; t[k].s; k = (k + 1) & (cap - 1))
        if (t[k].tag == tag && !strcmp(t[k].s, s) && (best == SV_NONE || t[k].idx < best))
            best = t[k].idx;
    return best;
}

static void link_claims(sv_model *m)
{
    const Tailor__V1__ClusterState *cs = m->cluster;
    m->node_claim = tlr_arena_alloc(m->ar, (cs->n_nodes + 1) * sizeof(int));
    m->claim_node = tlr_arena_calloc(m->ar, cs->n_nodeclaims + 1, sizeof(bool));
    size_t cap = 16;
    while (cap < cs->n_nodeclaims * 6)
        cap <<= 1;
    link_ent *t = tlr_arena_calloc(m->ar, cap, sizeof(*t));
    for (size_t i = 0; i < cs->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *nc = cs->nodeclaims[i];
        link_put(t, cap, LK_NAME, nc->name, (int)i);
        if (nc->status) {
            link_put(t, cap, LK_NODE, nc->status->node_name, (int)i);
            link_put(t, cap, LK_PID, nc->status->provider_id, (int)i);
        }
    }
    for (size_t i = 0; i < cs->n_nodes; i++) {
        const Tailor__V1__Node *n = cs->nodes[i];
        int c = link_get(t, cap, LK_NAME, n->nodeclaim_name);
        if (c == SV_NONE)
            c = link_get(t, cap, LK_NODE, n->name);
        if (c == SV_NONE)
            c = link_get(t, cap, LK_PID, n->provider_id);
        m->node_claim[i] = c;
        if (c != SV_NONE)
            m->claim_node[c] = true;
    }
}

static const char *node_label(const Tailor__V1__Node *n, const char *key)
{
    for (size_t i = 0; i < n->n_labels; i++)
        if (n->labels[i]->key && !strcmp(n->labels[i]->key, key))
            return n->labels[i]->value;
    return NULL;
}

/* Karpenter's StateNode.Initialized: a node no NodeClaim owns is always
 * initialized (StateNode.Managed is "has a NodeClaim", not "has a
 * NodePool label"); a claimed one once it carries karpenter.sh/initialized
 * (the watcher's Node.initialized; the disruptor also takes the claim's
 * Initialized condition).  So a Node with a NodePool label but no claim
 * -- an instance launched twice, whose extra copy GC will terminate --
 * keeps every taint, karpenter.sh/unregistered included, and is no
 * in-flight capacity for pods that would wait on it for ever. */
static bool node_initialized(const Tailor__V1__Node *n, const Tailor__V1__NodeClaim *nc)
{
    return n->initialized || !nc;
}

/* scheduling.KnownEphemeralTaints (matched on key and effect, as
 * corev1.Taint.MatchTaint) and KnownEphemeralTaintKeyPrefixes. */
static bool known_ephemeral_taint(const Tailor__V1__Taint *t)
{
    static const struct {
        const char *key;
        Tailor__V1__TaintEffect effect;
    } known[] = {
        { "node.kubernetes.io/not-ready", TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE },
        { "node.kubernetes.io/not-ready", TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE },
        { "node.kubernetes.io/unreachable", TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE },
        { "node.cloudprovider.kubernetes.io/uninitialized", TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE },
        { TLR_TAINT_UNREGISTERED, TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE },
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (t->effect == known[i].effect && !strcmp(t->key, known[i].key))
            return true;
    return !strncmp(t->key, "readiness.k8s.io/", strlen("readiness.k8s.io/"));
}

static bool taint_listed(const Tailor__V1__Taint *t, Tailor__V1__Taint *const *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (l[i]->effect == t->effect && !strcmp(l[i]->key, t->key))
            return true;
    return false;
}

/* The taints the scheduler honours on capacity that is not initialized
 * yet (StateNode.Taints): the known ephemeral taints and the startup
 * taints (the claim's, else its NodePool's) are dropped, because they go
 * away by themselves while the node boots.  A taint that comes back after
 * initialization counts again.  Returns taints itself when nothing is
 * dropped, else a filtered copy in the arena. */
static const Tailor__V1__Taint *const *booting_taints(sv_model *m, Tailor__V1__Taint *const *taints,
                                                      size_t n, const Tailor__V1__NodeClaim *nc,
                                                      const Tailor__V1__NodePool *np, size_t *nout)
{
    Tailor__V1__Taint *const *st = nc ? nc->startup_taints : np ? np->startup_taints : NULL;
    size_t nst = nc ? nc->n_startup_taints : np ? np->n_startup_taints : 0;
    const Tailor__V1__Taint **out = NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool drop = known_ephemeral_taint(taints[i]) || taint_listed(taints[i], st, nst);
        if (drop && !out) {
            out = tlr_arena_alloc(m->ar, (n + 1) * sizeof(*out));
            for (size_t j = 0; j < i; j++)
                out[k++] = taints[j];
        } else if (!drop && out)
            out[k++] = taints[i];
    }
    if (!out) {
        *nout = n;
        return (const Tailor__V1__Taint *const *)taints;
    }
    *nout = k;
    return out;
}

typedef struct {
    const Tailor__V1__Node *n;
    const Tailor__V1__NodeClaim *nc;   /* its NodeClaim, or NULL */
    bool init;
} node_ref;

static int node_cmp(const void *a, const void *b)
{
    const node_ref *x = a, *y = b;
    if (x->init != y->init)
        return x->init ? -1 : 1;
    return strcmp(x->n->name ? x->n->name : "", y->n->name ? y->n->name : "");
}

static const Tailor__V1__NodePool *find_pool(const sv_model *m, const char *name)
{
    for (int i = 0; name && *name && i < m->npools; i++)
        if (!strcmp(m->pools[i].np->name, name))
            return m->pools[i].np;
    return NULL;
}

static void bins_nodes(sv_model *m)
{
    const Tailor__V1__ClusterState *cs = m->cluster;
    if (!cs)
        return;
    link_claims(m);
    bins_reserve(m, (int)cs->n_nodes + 64);
    node_ref *nodes = tlr_arena_alloc(m->ar, (cs->n_nodes + 1) * sizeof(*nodes));
    for (size_t i = 0; i < cs->n_nodes; i++) {
        int c = m->node_claim[i];
        nodes[i].n = cs->nodes[i];
        nodes[i].nc = c == SV_NONE ? NULL : cs->nodeclaims[c];
        nodes[i].init = node_initialized(nodes[i].n, nodes[i].nc);
    }
    qsort(nodes, cs->n_nodes, sizeof(*nodes), node_cmp);
    for (size_t i = 0; i < cs->n_nodes; i++) {
        const Tailor__V1__Node *n = nodes[i].n;
        const Tailor__V1__NodeClaim *nc = nodes[i].nc;
        bool init = nodes[i].init;
        if (removed(m, n->name))
            continue;
        /* A registered Node carries its own labels and taints; before
         * registration its claim's stand in for what is missing. */
        const char *reg = node_label(n, TLR_LABEL_REGISTERED);
        bool registered = !nc || (reg && !strcmp(reg, "true"));
        const char *ks[4] = { TLR_LABEL_ZONE, TLR_LABEL_CAPACITY_TYPE,
                              TLR_LABEL_HOSTNAME, TLR_LABEL_INSTANCE_TYPE };
        static const char *const cts[4] = { "", "on-demand", "spot", "reserved" };
        const char *vs[4] = { n->zone, n->capacity_type > 0 && n->capacity_type < 4 ? cts[n->capacity_type] : "",
                              n->name, n->instance_type };
        sv_dom base = sv_labels_dom(m, n->labels, n->n_labels);
        if (!registered) {
            const char **ck = tlr_arena_alloc(m->ar, (nc->n_labels + 1) * sizeof(char *));
            const char **cv = tlr_arena_alloc(m->ar, (nc->n_labels + 1) * sizeof(char *));
            int nk = 0;
            for (size_t j = 0; j < nc->n_labels; j++)
                if (!node_label(n, nc->labels[j]->key)) {
                    ck[nk] = nc->labels[j]->key;
                    cv[nk++] = nc->labels[j]->value;
                }
            base = sv_dom_extend(m, &base, ck, cv, nk);
        }
        sv_dom labels = sv_dom_extend(m, &base, ks, vs, 4);
        int zone = zone_of(m, label_val(m, &labels, m->k_zone));
        int ct = ct_of(label_val(m, &labels, m->k_ct));
        int *tkv = sv_tk_values(m, &labels);
        /* Karpenter reads no Ready condition: a NotReady node is held off
         * by the taints the node lifecycle controller puts on it.  tailor
         * also wants Ready of an initialized node, whose taints may lag;
         * a booting node is Ready only at the end, so it is in flight
         * (StateNode.Taints drops the not-ready taints until then). */
        bool eligible = !n->unschedulable && !n->marked_for_deletion && !n->deletion_unix_ms &&
                        !(nc && nc->deletion_unix_ms) && (init ? n->ready : m->allow_uninit);
        int b = SV_NONE;
        if (eligible) {
            b = new_bin(m);
            sv_bin *x = &m->bins[b];
            x->kind = SV_BIN_NODE;
            x->idx = (int)i;
            x->name = n->name;
            x->labels = labels;
            x->np = find_pool(m, n->nodepool);
            Tailor__V1__Taint *const *tt = registered ? n->taints : nc->taints;
            size_t ntt = registered ? n->n_taints : nc->n_taints;
            if (init) {
                x->taints = (const Tailor__V1__Taint *const *)tt;
                x->ntaints = ntt;
            } else
                x->taints = booting_taints(m, tt, ntt, nc, x->np, &x->ntaints);
            x->zone = zone;
            x->ct = ct;
            x->tkv = tkv;
            x->initialized = init;
            sv_res a = { { 0 } }, r = { { 0 } };
            const Tailor__V1__ResourceList *al = n->allocatable, *rq = n->requested;
            /* A booting node reports zero for what its kubelet or device
             * plugins have not advertised yet: the claim's allocatable
             * (its launched type's) fills those in (StateNode.Allocatable). */
            const Tailor__V1__ResourceList *cal =
                !init && nc && nc->status ? nc->status->allocatable : NULL;
            for (int pass = 0; pass < 2; pass++) {
                const Tailor__V1__ResourceList *l = pass ? cal : al;
                if (!l)
                    continue;
                sv_res v = { { 0 } };
                v.v[SV_DIM_CPU] = l->cpu_millis;
                v.v[SV_DIM_MEM] = l->memory_bytes;
                v.v[SV_DIM_PODS] = l->pods;
                v.v[SV_DIM_EPH] = l->ephemeral_storage_bytes;
                for (size_t j = 0; j < l->n_extended; j++)
                    for (int d = 4; d < m->ndim; d++)
                        if (!strcmp(m->dim_name[d], l->extended[j]->name))
                            v.v[d] = l->extended[j]->value;
                for (int d = 0; d < SV_NDIM; d++)
                    if (a.v[d] == 0)
                        a.v[d] = v.v[d];
            }
            if ((al || cal) && !a.v[SV_DIM_PODS])
                a.v[SV_DIM_PODS] = 110;
            if (rq) {
                r.v[SV_DIM_CPU] = rq->cpu_millis;
                r.v[SV_DIM_MEM] = rq->memory_bytes;
                r.v[SV_DIM_PODS] = rq->pods ? rq->pods : (int64_t)n->n_pods;
                r.v[SV_DIM_EPH] = rq->ephemeral_storage_bytes;
                for (size_t j = 0; j < rq->n_extended; j++)
                    for (int d = 4; d < m->ndim; d++)
                        if (!strcmp(m->dim_name[d], rq->extended[j]->name))
                            r.v[d] = rq->extended[j]->value;
            } else
                r.v[SV_DIM_PODS] = (int64_t)n->n_pods;
            x->alloc = a;
            for (int d = 0; d < SV_NDIM; d++)
                x->free.v[d] = a.v[d] - r.v[d];
            for (size_t j = 0; j < n->n_pods; j++)
                bin_add_ports(m, x, (const Tailor__V1__HostPort *const *)n->pods[j]->host_ports,
                              n->pods[j]->n_host_ports, NULL, 0);
        }
        for (size_t j = 0; j < n->n_pods; j++)
            record_existing(m, n->pods[j], b, zone, ct, tkv);
    }
}

/* The pending pod with this uid not placed yet, or SV_NONE.  In-flight
 * claims may plan thousands of the batch's pods, so the pods are indexed
 * by uid once per model (open addressing, in the arena). */
static int pending_by_uid(sv_model *m, const char *uid)
{
    if (!uid || !*uid || m->npods == 0)
        return SV_NONE;
    if (!m->uid_tab) {
        int cap = 16;
        while (cap < m->npods * 2)
            cap <<= 1;
        m->uid_cap = cap;
        m->uid_tab = tlr_arena_alloc(m->ar, (size_t)cap * sizeof(int));
        for (int i = 0; i < cap; i++)
            m->uid_tab[i] = SV_NONE;
        for (int i = 0; i < m->npods; i++) {
            const char *u = m->pods[i].pod->uid;
            if (!u || !*u)
                continue;
            size_t k = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, u) & (size_t)(cap - 1);
            while (m->uid_tab[k] != SV_NONE)
                k = (k + 1) & (size_t)(cap - 1);
            m->uid_tab[k] = i;
        }
    }
    /* Duplicated uids: the first one not placed yet. */
    size_t k = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, uid) & (size_t)(m->uid_cap - 1);
    for (; m->uid_tab[k] != SV_NONE; k = (k + 1) & (size_t)(m->uid_cap - 1)) {
        int i = m->uid_tab[k];
        if (m->pods[i].bin == SV_NONE && !strcmp(m->pods[i].pod->uid, uid))
            return i;
    }
    return SV_NONE;
}

static void bins_inflight(sv_model *m)
{
    const Tailor__V1__ClusterState *cs = m->cluster;
    for (size_t i = 0; cs && i < cs->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *nc = cs->nodeclaims[i];
        const Tailor__V1__NodeClaimStatus *st = nc->status;
        if (nc->deletion_unix_ms || removed(m, nc->name))
            continue;
        if (st && (st->phase >= TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_DRAINING))
            continue;
        if (m->claim_node && m->claim_node[i])
            continue;   /* its Node is the bin (bins_nodes), never both */
        if (!m->allow_uninit && m->nremoved)
            continue;   /* Simulate: in-flight claims are not initialized */
        int b = new_bin(m);
        sv_bin *x = &m->bins[b];
        x->kind = SV_BIN_INFLIGHT;
        x->idx = (int)i;
        x->name = nc->name;
        x->np = find_pool(m, nc->nodepool);
        x->taints = booting_taints(m, nc->taints, nc->n_taints, nc, x->np, &x->ntaints);
        const char *ks[1] = { TLR_LABEL_NODEPOOL };
        const char *vs[1] = { nc->nodepool };
        sv_dom base = sv_labels_dom(m, nc->labels, nc->n_labels);
        /* Requirements with one value are labels the node will have. */
        const char **rk = tlr_arena_alloc(m->ar, (nc->n_requirements + 2) * sizeof(char *));
        const char **rv = tlr_arena_alloc(m->ar, (nc->n_requirements + 2) * sizeof(char *));
        int nr = 0;
        rk[nr] = ks[0];
        rv[nr++] = vs[0];
        for (size_t j = 0; j < nc->n_requirements; j++) {
            const Tailor__V1__NodeSelectorRequirement *r = nc->requirements[j];
            if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN && r->n_values == 1) {
                rk[nr] = r->key;
                rv[nr++] = r->values[0];
            }
        }
        if (st && st->zone && *st->zone) {
            rk[nr] = TLR_LABEL_ZONE;
            rv[nr++] = st->zone;
        }
        x->labels = sv_dom_extend(m, &base, rk, rv, nr);
        x->zone = zone_of(m, label_val(m, &x->labels, m->k_zone));
        x->ct = ct_of(label_val(m, &x->labels, m->k_ct));
        x->tkv = sv_tk_values(m, &x->labels);
        /* Capacity: the launched type's allocatable, else the smallest of
         * its options that the catalog knows. */
        sv_res a = { { 0 } };
        bool have = false;
        if (st && st->allocatable && st->allocatable->cpu_millis) {
            a.v[SV_DIM_CPU] = st->allocatable->cpu_millis;
            a.v[SV_DIM_MEM] = st->allocatable->memory_bytes;
            a.v[SV_DIM_PODS] = st->allocatable->pods ? st->allocatable->pods : 110;
            a.v[SV_DIM_EPH] = st->allocatable->ephemeral_storage_bytes;
            have = true;
        } else {
            for (size_t j = 0; j < nc->n_instance_type_options; j++)
                for (int t = 0; t < m->ntypes; t++)
                    if (!strcmp(sv_str(m, m->types[t].name), nc->instance_type_options[j]->name)) {
                        for (int d = 0; d < SV_NDIM; d++)
                            if (!have || m->types[t].alloc.v[d] < a.v[d])
                                a.v[d] = m->types[t].alloc.v[d];
                        have = true;
                        break;
                    }
        }
        const Tailor__V1__ResourceList *rq = nc->resources_requested;
        sv_res used = { { 0 } };
        if (rq) {
            used.v[SV_DIM_CPU] = rq->cpu_millis;
            used.v[SV_DIM_MEM] = rq->memory_bytes;
            used.v[SV_DIM_PODS] = rq->pods;
            used.v[SV_DIM_EPH] = rq->ephemeral_storage_bytes;
        }
        if (have)
            x->alloc = a;
        for (int d = 0; d < SV_NDIM; d++)
            x->free.v[d] = have ? a.v[d] - used.v[d] : 0;
        /* Pods already planned here are covered: bind them, don't count
         * them again unless the claim says nothing of its requests. */
        for (size_t j = 0; j < nc->n_planned_pod_uids; j++) {
            int p = pending_by_uid(m, nc->planned_pod_uids[j]);
            if (p == SV_NONE)
                continue;
            sv_podst *ps = &m->pods[p];
            sv_class *c = &m->classes[ps->cls];
            ps->bin = b;
            c->left--;
            x = &m->bins[b];
            if (!rq)
                for (int d = 0; d < SV_NDIM; d++)
                    x->free.v[d] -= c->req.v[d];
            bin_add_ports(m, x, NULL, 0, c->ports, c->nports);
            for (int g = 0; g < c->nmatch; g++)
                group_record(m, c->match[g], b, x->zone, x->ct, x->tkv, 1, false);
            for (int g = 0; g < c->nowns; g++)
                group_record(m, c->owns[g], b, x->zone, x->ct, x->tkv, 1, true);
        }
    }
}

/* ---- constraints ------------------------------------------------------ */

static bool taints_ok(const sv_bin *b, const sv_class *c, const sv_level *lv)
{
    for (size_t i = 0; i < b->ntaints; i++) {
        const Tailor__V1__Taint *t = b->taints[i];
        bool block = t->effect == TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE ||
                     t->effect == TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE ||
                     (lv->prefer_noschedule && t->effect == TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE);
        if (!block || sv_tolerates(c->tols, c->ntols, t))
            continue;
        return false;   /* a booting node's passing taints are gone already (booting_taints) */
    }
    return true;
}

static bool labels_ok(const sv_model *m, const sv_bin *b, const sv_level *lv)
{
    for (int i = 0; i < lv->reqs.n; i++)
        if (!sv_req_ok(m, &lv->reqs.r[i], &b->labels, NULL))
            return false;
    return true;
}

/* Zones and capacity types a spread of class c at level lv counts: those
 * its required node terms allow (sv_level_strict), not only its preferred
 * ones. */
static void level_domains(sv_model *m, sv_class *c, sv_level *lv)
{
    if (lv->dmask_ok)
        return;
    const sv_level *sl = sv_level_strict(m, c, lv);
    uint32_t zm = 0;
    uint8_t cm = 0;
    for (int pi = 0; pi < m->npools; pi++) {
        if (!sl->compat[pi])
            continue;
        sv_pool *p = &m->pools[pi];
        for (int pt = 0; pt < p->ntypes; pt++) {
            if (!sv_bit(sl->compat[pi], pt))
                continue;
            const sv_type *t = &m->types[p->types[pt]];
            for (int o = 0; o < t->noffers; o++)
                if (sv_pmask_has(sl->pmask[pi], t->offers[o].place)) {
                    zm |= 1u << (t->offers[o].place / 4);
                    cm |= (uint8_t)(1u << (t->offers[o].place % 4));
                }
        }
    }
    for (int b = 0; b < m->nexisting; b++) {
        sv_bin *x = &m->bins[b];
        if (!labels_ok(m, x, sl))
            continue;
        if (x->zone >= 0)
            zm |= 1u << x->zone;
        if (x->ct >= 0)
            cm |= (uint8_t)(1u << x->ct);
    }
    lv->zmask = zm;
    lv->ctmask = cm;
    lv->dmask_ok = true;
}

uint32_t sv_level_zones(sv_model *m, sv_class *c, sv_level *lv)
{
    level_domains(m, c, lv);
    return lv->zmask;
}

/* The index of value v among tkey tki's values, SV_NONE if not one. */
static int tk_index(const sv_model *m, int tki, sv_id v)
{
    const sv_tkey *k = &m->tkeys[tki];
    for (int i = 0; i < k->nvals; i++)
        if (k->vals[i] == v)
            return i;
    return SV_NONE;
}

/* Values of SV_TK_LABEL key tki a spread cn of class c at level lv counts
 * as domains, as a bitset over the key's values (cached per level and
 * policy).  nodeAffinityPolicy Honor (the default): the values of the
 * pools the level's required node terms can use (sv_level_strict: a
 * pool's fixed value, the In values its requirements leave, the values of
 * its compatible types) and of the existing nodes whose labels those
 * terms accept; Ignore: every pool's and
 * node's.  nodeTaintsPolicy Honor drops the existing nodes whose taints
 * the pod does not tolerate (pools with such taints are never usable). */
static const uint64_t *level_tk_domains(sv_model *m, sv_class *c, sv_level *lv, int tki, const sv_cons *cn)
{
    int pol = (cn->aff_ignore ? 1 : 0) | (cn->taints_honor ? 2 : 0);
    if (!lv->tkdom)
        lv->tkdom = tlr_arena_calloc(m->ar, (size_t)m->ntkeys * 4, sizeof(uint64_t *));
    if (lv->tkdom[tki * 4 + pol])
        return lv->tkdom[tki * 4 + pol];
    const sv_tkey *k = &m->tkeys[tki];
    uint64_t *bits = tlr_arena_calloc(m->ar, (size_t)k->nvals / 64 + 1, sizeof(uint64_t));
    bool all = cn->aff_ignore;
    const sv_level *sl = sv_level_strict(m, c, lv);
    for (int pi = 0; pi < m->npools; pi++) {
        const sv_pool *p = &m->pools[pi];
        const uint64_t *compat = sl->compat[pi];
        if (!p->tk_mode || (!compat && !all))
            continue;
        int arg = p->tk_arg[tki];
        switch (p->tk_mode[tki]) {
        case SV_TKM_FIXED:
            if (arg >= 0)
                sv_bit_set(bits, arg);
            break;
        case SV_TKM_CUSTOM: {
            const sv_dent *e = p->custom_dent[arg];
            for (int j = 0; j < e->nvals && j < 64; j++)
                if (all || ((sl->custom[pi][arg] >> j) & 1)) {
                    int v = tk_index(m, tki, e->vals[j]);
                    if (v >= 0)
                        sv_bit_set(bits, v);
                }
            break;
        }
        case SV_TKM_TYPE:
            for (int pt = 0; pt < p->ntypes; pt++)
                if (p->tk_tval[tki][pt] >= 0 && (all || sv_bit(compat, pt)))
                    sv_bit_set(bits, p->tk_tval[tki][pt]);
            break;
        default:
            break;
        }
    }
    for (int b = 0; b < m->nexisting; b++) {
        sv_bin *x = &m->bins[b];
        if (!x->tkv || x->tkv[tki] < 0)
            continue;
        if ((!all && !labels_ok(m, x, sl)) || (cn->taints_honor && !taints_ok(x, c, lv)))
            continue;
        sv_bit_set(bits, x->tkv[tki]);
    }
    lv->tkdom[tki * 4 + pol] = bits;
    return bits;
}

static int spread_min(sv_model *m, sv_class *c, sv_level *lv, const sv_group *g, const sv_cons *cn)
{
    if (g->tk == SV_TK_LABEL) {
        const uint64_t *dm = level_tk_domains(m, c, lv, g->tki, cn);
        int mn = -1, nd = 0;
        for (int v = 0; v < m->tkeys[g->tki].nvals; v++)
            if (sv_bit(dm, v)) {
                nd++;
                if (mn < 0 || g->lab_match[v] < mn)
                    mn = g->lab_match[v];
            }
        return mn < 0 || nd < cn->min_domains ? 0 : mn;
    }
    if (g->tk == SV_TK_HOST) {
        if (m->allow_new)
            return 0;
        int mn = -1;
        for (int b = 0; b < m->nexisting; b++)
            if (labels_ok(m, &m->bins[b], lv)) {
                int v = host_count(g, g->host_match, b);
                if (mn < 0 || v < mn)
                    mn = v;
            }
        return mn < 0 ? 0 : mn;
    }
    level_domains(m, c, lv);
    int mn = -1, nd = 0;
    if (g->tk == SV_TK_ZONE) {
        for (int z = 0; z < m->nzones; z++)
            if (lv->zmask & (1u << z)) {
                nd++;
                if (mn < 0 || g->zone_match[z] < mn)
                    mn = g->zone_match[z];
            }
    } else {
        for (int k = 1; k < 4; k++)
            if (lv->ctmask & (1u << k)) {
                nd++;
                if (mn < 0 || g->ct_match[k] < mn)
                    mn = g->ct_match[k];
            }
    }
    if (mn < 0 || nd < cn->min_domains)
        return 0;
    return mn;
}

/* How many pods of c the topology allows on bin b if its zone is z, its
 * capacity type ct (SV_NONE = unknown) and its values of the SV_TK_LABEL
 * keys tkv (may be NULL; SV_NONE = the node has no such label).  With
 * only >= 0, just the constraints and groups of that tkey count. */
static int topo_cap(sv_model *m, sv_class *c, sv_level *lv, int b, int z, int ct, const int *tkv, int k,
                    int only)
{
    for (int i = 0; i < c->ncons && k > 0; i++) {
        const sv_cons *cn = &c->cons[i];
        if ((cn->soft && !lv->soft_tsc) || !SV_CONS_ON(cn, lv))
            continue;
        const sv_group *g = &m->groups[cn->group];
        if (only >= 0 && (g->tk != SV_TK_LABEL || g->tki != only))
            continue;
        int cnt;
        if (g->tk == SV_TK_LABEL) {
            int v = tkv && g->lab_match ? tkv[g->tki] : SV_NONE;
            if (v < 0) {
                /* A node without the label: no domain for a spread or an
                 * affinity, and nothing an anti-affinity could meet. */
                if (cn->kind == SV_C_ANTI)
                    continue;
                return 0;
            }
            cnt = g->lab_match[v];
        } else if (g->tk == SV_TK_ZONE) {
            if (z < 0)
                return 0;
            cnt = g->zone_match[z];
        } else if (g->tk == SV_TK_CT) {
            if (ct < 0)
                return 0;
            cnt = g->ct_match[ct];
        } else
            cnt = host_count(g, g->host_match, b);
        switch (cn->kind) {
        case SV_C_SPREAD: {
            int cap = cn->max_skew + spread_min(m, c, lv, g, cn) - cnt;
            if (cap <= 0)
                return 0;
            if (cn->self_match && cap < k)
                k = cap;
            break;
        }
        case SV_C_AFFINITY:
            if (cnt == 0 && !(g->total_match == 0 && cn->self_match))
                return 0;
            break;
        case SV_C_ANTI:
            if (cnt > 0)
                return 0;
            if (cn->self_match)
                k = 1;
            break;
        }
    }
    for (int i = 0; i < c->nmatch && k > 0; i++) {
        const sv_group *g = &m->groups[c->match[i]];
        if (only >= 0 && (g->tk != SV_TK_LABEL || g->tki != only))
            continue;
        int own = g->tk == SV_TK_LABEL ? (tkv && g->lab_owner && tkv[g->tki] >= 0 ? g->lab_owner[tkv[g->tki]] : 0)
                : g->tk == SV_TK_ZONE ? (z >= 0 ? g->zone_owner[z] : 0)
                : g->tk == SV_TK_CT ? (ct >= 0 ? g->ct_owner[ct] : 0)
                : host_count(g, g->host_owner, b);
        if (own > 0)
            return 0;
    }
    return k;
}

static int res_room(const sv_model *m, const sv_res *free, const sv_res *req, int k)
{
    for (int d = 0; d < m->ndim && k > 0; d++) {
        if (req->v[d] <= 0)
            continue;
        int64_t q = free->v[d] < 0 ? 0 : free->v[d] / req->v[d];
        if (q < k)
            k = (int)q;
    }
    return k;
}

/* Free room of a new claim on pool type pt. */
static void claim_free(const sv_model *m, const sv_bin *x, int pt, sv_res *out)
{
    const sv_pool *p = &m->pools[x->pool];
    const sv_type *t = &m->types[p->types[pt]];
    for (int d = 0; d < m->ndim; d++)
        out->v[d] = t->alloc.v[d] - p->ds[pt].v[d] - x->used.v[d];
}

/* Karpenter claims: does some candidate type hold used + n*req? */
static bool karp_fits(sv_model *m, sv_bin *x, const uint64_t *compat, sv_pmask pm, const sv_res *req, int n)
{
    const sv_pool *p = &m->pools[x->pool];
    sv_res u = x->used;
    for (int d = 0; d < m->ndim; d++)
        u.v[d] += req->v[d] * n;
    if (x->target >= 0 && sv_bit(compat, x->target) && sv_pool_type_fits(m, p, x->target, &u) &&
        sv_type_price(m, p->types[x->target], pm, NULL) >= 0)
        return true;
    int words = p->ntypes / 64 + 1;
    for (int w = 0; w < words; w++) {
        uint64_t bits = x->cand[w] & compat[w];
        while (bits) {
            int pt = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            if (sv_pool_type_fits(m, p, pt, &u) && sv_type_price(m, p->types[pt], pm, NULL) >= 0) {
                x->target = pt;
                return true;
            }
        }
    }
    return false;
}

/* The pool types new claim x may still be for a pod of level lv: those of
 * lv->compat[pi] whose multi-valued labels (sv_pool.tmv_*) share a value
 * with what the claim's pods so far and lv allow together, as Karpenter
 * keeps a NodeClaim's instance types compatible with its intersected
 * requirements (nodeclaim.go, filterInstanceTypesByRequirements).
 * lv->compat[pi] itself when the pool has no such label (NULL: none);
 * else m->tmv_buf, valid until the next call, or NULL when some key is
 * left with no value. */
static const uint64_t *claim_compat(sv_model *m, const sv_bin *x, const sv_level *lv, int pi)
{
    const sv_pool *p = &m->pools[pi];
    const uint64_t *compat = lv->compat[pi];
    if (!p->ntmv || !compat)
        return compat;
    uint64_t want[SV_MAXTMV];
    bool narrower = false;
    for (int k = 0; k < p->ntmv; k++) {
        want[k] = x->tmv[k] & lv->tmv[pi][k];
        if (!want[k])
            return NULL;
        narrower |= want[k] != lv->tmv[pi][k];
    }
    /* The usual case (no pod on the claim narrowed a key beyond what lv
     * allows): every type of lv->compat already shares a value with lv's
     * masks (compile.c, level_compat). */
    if (!narrower)
        return compat;
    if (!m->tmv_buf)
        m->tmv_buf = tlr_arena_alloc(m->ar, (size_t)m->pwords_max * sizeof(uint64_t));
    uint64_t *out = m->tmv_buf;
    for (int w = 0; w <= (p->ntypes - 1) / 64; w++) {
        uint64_t bits = compat[w], keep = 0;
        while (bits) {
            int pt = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            const uint64_t *tv = &p->tmv_type[(size_t)pt * (size_t)p->ntmv];
            bool ok = true;
            for (int k = 0; k < p->ntmv && ok; k++)
                ok = (tv[k] & want[k]) != 0;
            if (ok)
                keep |= (uint64_t)1 << (pt & 63);
        }
        out[w] = keep;
    }
    return out;
}

static bool custom_ok(const sv_pool *p, const uint64_t *a, const uint64_t *b)
{
    for (int k = 0; k < p->ncustom; k++)
        if (!(a[k] & b[k]))
            return false;
    return true;
}

/* The value of SV_TK_LABEL key tki to give new claim b, not pinned on it
 * yet, for class c at level lvi: the one whose constraints on that key
 * allow the most pods (for a spread, the least loaded domain, as
 * Karpenter's nextDomainTopologySpread picks), ties to the value with the
 * cheapest type (SV_TKM_TYPE) or the first one.  tailor claims already
 * have their target type, whose value it must be.  Returns SV_NONE when
 * the pool gives the key no value (its nodes will lack the label), -2 when
 * no value is possible.  Pure: place_n repeats room_at's choice. */
static const double *pool_prices(sv_model *m, int pi, sv_pmask pm);

#define SV_TK_IMPOSSIBLE (-2)
#define SV_TK_TRY 256
static int tk_choose(sv_model *m, int b, int c, int lvi, int tki)
{
    sv_bin *x = &m->bins[b];
    sv_class *cl = &m->classes[c];
    sv_level *lv = &cl->levels[lvi];
    int pi = x->pool;
    const sv_pool *p = &m->pools[pi];
    int mode = p->tk_mode ? p->tk_mode[tki] : SV_TKM_NONE;
    if (mode == SV_TKM_NONE)
        return SV_NONE;
    if (mode == SV_TKM_FIXED)
        return p->tk_arg[tki] >= 0 ? p->tk_arg[tki] : SV_TK_IMPOSSIBLE;
    /* the values to try, with the cheapest price of each (TYPE) */
    int vals[SV_TK_TRY];
    double price[SV_TK_TRY];
    int nv = 0;
    if (mode == SV_TKM_CUSTOM) {
        int kk = p->tk_arg[tki];
        const sv_dent *e = p->custom_dent[kk];
        uint64_t mask = x->custom[kk] & lv->custom[pi][kk];
        for (int j = 0; j < e->nvals && j < 64 && nv < SV_TK_TRY; j++)
            if ((mask >> j) & 1) {
                int v = tk_index(m, tki, e->vals[j]);
                if (v >= 0) {
                    price[nv] = 0;
                    vals[nv++] = v;
                }
            }
    } else if (m->strategy == TLR_SOLVE_TAILOR && x->target >= 0) {
        int v = p->tk_tval[tki][x->target];
        return v >= 0 ? v : SV_TK_IMPOSSIBLE;
    } else {
        sv_pmask pm = sv_pmask_and(x->pmask, lv->pmask[pi]);
        const double *pr = pool_prices(m, pi, pm);
        sv_res u = x->used;
        for (int d = 0; d < m->ndim; d++)
            u.v[d] += cl->req.v[d];
        for (int w = 0; w <= (p->ntypes - 1) / 64; w++) {
            uint64_t bits = x->cand[w] & lv->compat[pi][w];
            while (bits) {
                int pt = w * 64 + __builtin_ctzll(bits);
                bits &= bits - 1;
                int v = p->tk_tval[tki][pt];
                if (v < 0 || pr[pt] < 0 || (x->npods && !sv_pool_type_fits(m, p, pt, &u)))
                    continue;
                int j = 0;
                while (j < nv && vals[j] != v)
                    j++;
                if (j == nv) {
                    if (nv == SV_TK_TRY)
                        continue;
                    vals[nv] = v;
                    price[nv++] = pr[pt];
                } else if (pr[pt] < price[j])
                    price[j] = pr[pt];
            }
        }
    }
    int tkv[SV_MAXTK];
    for (int i = 0; i < m->ntkeys; i++)
        tkv[i] = x->tkv[i];
    int best = SV_TK_IMPOSSIBLE, bestcap = 0;
    double bestprice = 0;
    for (int j = 0; j < nv; j++) {
        tkv[tki] = vals[j];
        int cap = topo_cap(m, cl, lv, b, SV_NONE, SV_NONE, tkv, 1 << 30, tki);
        if (cap > bestcap || (cap == bestcap && cap > 0 && price[j] < bestprice)) {
            best = vals[j];
            bestcap = cap;
            bestprice = price[j];
        }
    }
    return best;
}

/* Narrow new claim b to value v of SV_TK_LABEL key tki: its value mask
 * (SV_TKM_CUSTOM) or its candidate types (SV_TKM_TYPE). */
static void tk_apply(sv_model *m, int b, int tki, int v)
{
    sv_bin *x = &m->bins[b];
    const sv_pool *p = &m->pools[x->pool];
    x->tkv[tki] = v;
    if (p->tk_mode[tki] == SV_TKM_CUSTOM) {
        int kk = p->tk_arg[tki];
        const sv_dent *e = p->custom_dent[kk];
        uint64_t keep = 0;
        for (int j = 0; j < e->nvals && j < 64; j++)
            if (tk_index(m, tki, e->vals[j]) == v)
                keep |= (uint64_t)1 << j;
        x->custom[kk] &= keep;
    } else if (p->tk_mode[tki] == SV_TKM_TYPE) {
        int n = 0;
        for (int pt = 0; pt < p->ntypes; pt++) {
            if (!sv_bit(x->cand, pt))
                continue;
            if (p->tk_tval[tki][pt] != v)
                sv_bit_clr(x->cand, pt);
            else
                n++;
        }
        x->ncand = n;
        if (x->target >= 0 && !sv_bit(x->cand, x->target) && m->strategy != TLR_SOLVE_TAILOR)
            x->target = SV_NONE;
    }
}

/* The room of bin b for class c at level lv, at most want; *place gets the
 * place to pin (SV_NONE when nothing to pin). */
static int room_at(sv_model *m, int b, int c, int lvi, int want, int *place)
{
    sv_bin *x = &m->bins[b];
    sv_class *cl = &m->classes[c];
    sv_level *lv = &cl->levels[lvi];
    *place = SV_NONE;
    if (cl->nports && ports_conflict(x, cl))
        return 0;
    int k = want;
    if (cl->nports)
        k = 1;
    if (x->kind != SV_BIN_NEW) {
        if (!labels_ok(m, x, lv) || !taints_ok(x, cl, lv))
            return 0;
        k = res_room(m, &x->free, &cl->req, k);
        if (k <= 0)
            return 0;
        return topo_cap(m, cl, lv, b, x->zone, x->ct, x->tkv, k, SV_NONE);
    }
    int pi = x->pool;
    const sv_pool *p = &m->pools[pi];
    const uint64_t *compat = claim_compat(m, x, lv, pi);
    if (!compat || !custom_ok(p, x->custom, lv->custom[pi]))
        return 0;
    sv_pmask pm = sv_pmask_and(x->pmask, lv->pmask[pi]);
    if (!sv_pmask_any(pm))
        return 0;
    if (m->strategy == TLR_SOLVE_TAILOR) {
        if (!sv_bit(compat, x->target))
            return 0;
        sv_res f;
        claim_free(m, x, x->target, &f);
        k = res_room(m, &f, &cl->req, k);
    } else if (k > 0 && !karp_fits(m, x, compat, pm, &cl->req, 1)) {
        k = 0;
    } else if (k > 1) {
        /* Candidate-keeping claims: the most of the k pods some candidate
         * type holds (the baseline asks for one pod at a time, ffd.c for a
         * run of identical ones). */
        int lo = 1;
        while (lo < k) {
            int mid = lo + (k - lo + 1) / 2;
            if (karp_fits(m, x, compat, pm, &cl->req, mid))
                lo = mid;
            else
                k = mid - 1;
        }
    }
    if (k <= 0)
        return 0;
    /* SV_TK_LABEL keys the class needs and the claim has no value for yet:
     * the value place_n will pin (tk_choose). */
    int tkbuf[SV_MAXTK];
    const int *tkv = x->tkv;
    for (int i = 0; cl->pin_tk && i < m->ntkeys; i++) {
        if (!((cl->pin_tk >> i) & 1) || x->tkv[i] >= 0)
            continue;
        if (tkv != tkbuf) {
            memcpy(tkbuf, x->tkv, (size_t)m->ntkeys * sizeof(int));
            tkv = tkbuf;
        }
        int v = tk_choose(m, b, c, lvi, i);
        if (v == SV_TK_IMPOSSIBLE)
            return 0;
        tkbuf[i] = v;
    }
    bool needz = cl->pin_zone && x->zone < 0, needc = cl->pin_ct && x->ct < 0;
    if (!needz && !needc) {
        k = topo_cap(m, cl, lv, b, x->zone, x->ct, tkv, k, SV_NONE);
        return k > 0 ? sv_minv_room(m, b, c, lvi, k, SV_NONE) : 0;   /* Strict minValues (emit.c) */
    }
    /* Choose the place to pin: the one allowing most pods, then the
     * cheapest for the claim's target type. */
    int best = 0, bestp = SV_NONE;
    double bestprice = 0;
    int tt = x->target >= 0 ? p->types[x->target] : SV_NONE;
    for (int pl = 0; pl < m->nzones * 4; pl++) {
        if (!sv_pmask_has(pm, pl))
            continue;
        int z = needz ? pl / 4 : x->zone, ct = needc ? pl % 4 : x->ct;
        sv_pmask one = { { 0, 0 } };
        sv_pmask_set(&one, pl);
        double price = tt >= 0 ? sv_type_price(m, tt, one, NULL) : 0;
        if (price < 0)
            continue;
        int r = topo_cap(m, cl, lv, b, z, ct, tkv, k, SV_NONE);
        if (r > 0)
            r = sv_minv_room(m, b, c, lvi, r, pl);   /* Strict minValues once pinned there (emit.c) */
        if (r > best || (r == best && r > 0 && price < bestprice)) {
            best = r;
            bestp = pl;
            bestprice = price;
        }
    }
    *place = bestp;
    return best;
}

int sv_bin_room(sv_model *m, int b, int c, int lv, int want)
{
    int pl;
    return room_at(m, b, c, lv, want, &pl);
}

/* ---- placing ---------------------------------------------------------- */

static void claim_narrow_karp(sv_model *m, sv_bin *x)
{
    const sv_pool *p = &m->pools[x->pool];
    int words = p->ntypes / 64 + 1;
    int n = 0;
    for (int w = 0; w < words; w++) {
        uint64_t bits = x->cand[w];
        while (bits) {
            int pt = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            if (!sv_pool_type_fits(m, p, pt, &x->used) || sv_type_price(m, p->types[pt], x->pmask, NULL) < 0)
                sv_bit_clr(x->cand, pt);
            else
                n++;
        }
    }
    x->ncand = n;
}

/* Place n pods (indices pods[0..n)) of class c at level lv on bin b. */
static void place_n(sv_model *m, int b, int c, int lvi, const int *pods, int n, int place)
{
    sv_bin *x = &m->bins[b];
    sv_class *cl = &m->classes[c];
    sv_level *lv = &cl->levels[lvi];
    /* the SV_TK_LABEL values room_at chose, before any other narrowing */
    if (x->kind == SV_BIN_NEW && cl->pin_tk) {
        for (int i = 0; i < m->ntkeys; i++)
            if (((cl->pin_tk >> i) & 1) && x->tkv[i] < 0) {
                int v = tk_choose(m, b, c, lvi, i);
                if (v >= 0)
                    tk_apply(m, b, i, v);
            }
    }
    if (place >= 0) {
        if (cl->pin_zone && x->zone < 0) {
            x->zone = place / 4;
            sv_pmask zm = { { 0, 0 } };
            for (int k = 1; k < 4; k++)
                sv_pmask_set(&zm, SV_PLACE(x->zone, k));
            x->pmask = sv_pmask_and(x->pmask, zm);
        }
        if (cl->pin_ct && x->ct < 0) {
            x->ct = place % 4;
            sv_pmask cm = { { 0, 0 } };
            for (int z = 0; z < m->nzones; z++)
                sv_pmask_set(&cm, SV_PLACE(z, x->ct));
            x->pmask = sv_pmask_and(x->pmask, cm);
        }
    }
    if (x->kind == SV_BIN_NEW) {
        int pi = x->pool;
        const sv_pool *p = &m->pools[pi];
        x->pmask = sv_pmask_and(x->pmask, lv->pmask[pi]);
        for (int k = 0; k < p->ncustom; k++)
            x->custom[k] &= lv->custom[pi][k];
        const uint64_t *compat = claim_compat(m, x, lv, pi);
        for (int k = 0; k < p->ntmv; k++)
            x->tmv[k] &= lv->tmv[pi][k];
        int words = p->ntypes / 64 + 1;
        for (int w = 0; w < words; w++)
            x->cand[w] &= compat ? compat[w] : 0;
        for (int d = 0; d < m->ndim; d++)
            x->used.v[d] += cl->req.v[d] * n;
        x->qcpu -= cl->req.v[SV_DIM_CPU] * n;
        x->qmem -= cl->req.v[SV_DIM_MEM] * n;
        bool seen = false;
        for (int i = 0; i < x->nclasses && !seen; i++)
            seen = x->classes[i] == c && x->lvls[i] == lvi;
        if (!seen) {
            int cap = x->nclasses, cap2 = x->nclasses;
            x->classes = grow_int(m, x->classes, x->nclasses, &cap);
            x->lvls = grow_int(m, x->lvls, x->nclasses, &cap2);
            if (cap != cap2) {
                /* keep the two arrays the same capacity */
                int *l2 = tlr_arena_alloc(m->ar, (size_t)cap * sizeof(int));
                memcpy(l2, x->lvls, (size_t)x->nclasses * sizeof(int));
                x->lvls = l2;
            }
            x->classes[x->nclasses] = c;
            x->lvls[x->nclasses++] = lvi;
        }
        if (m->strategy != TLR_SOLVE_TAILOR)
            claim_narrow_karp(m, x);
    } else {
        for (int d = 0; d < m->ndim; d++)
            x->free.v[d] -= cl->req.v[d] * n;
    }
    if (cl->nports)
        bin_add_ports(m, x, NULL, 0, cl->ports, cl->nports);
    int cap = x->npods_cap;
    if (x->npods + n > cap) {
        int nc = (x->npods + n) * 2;
        int *np = tlr_arena_alloc(m->ar, (size_t)nc * sizeof(int));
        if (x->npods)
            memcpy(np, x->pods, (size_t)x->npods * sizeof(int));
        x->pods = np;
        x->npods_cap = nc;
    }
    for (int i = 0; i < n; i++) {
        sv_podst *ps = &m->pods[pods[i]];
        ps->bin = b;
        ps->level = lvi;
        ps->err = TLR_OK;
        x->pods[x->npods++] = pods[i];
    }
    cl->left -= n;
    if (m->strategy == TLR_SOLVE_TAILOR)
        for (int d = 0; d < m->ndim; d++)
            m->tot_all[d] -= (double)cl->req.v[d] * n;
    for (int g = 0; g < cl->nmatch; g++)
        group_record(m, cl->match[g], b, x->zone, x->ct, x->tkv, n, false);
    for (int g = 0; g < cl->nowns; g++)
        group_record(m, cl->owns[g], b, x->zone, x->ct, x->tkv, n, true);
}

/* Most pods of class c one node may take because of its constraints. */
static int class_host_cap(const sv_model *m, const sv_class *c)
{
    int k = 1 << 30;
    if (c->nports)
        k = 1;
    for (int i = 0; i < c->ncons; i++) {
        const sv_cons *cn = &c->cons[i];
        if (!cn->self_match || cn->pref || m->groups[cn->group].tk != SV_TK_HOST)
            continue;
        if (cn->kind == SV_C_ANTI)
            k = 1;
        if (cn->kind == SV_C_SPREAD && cn->max_skew < k)
            k = cn->max_skew;
    }
    return k;
}

/* Pool pi's price per type under place mask pm (cached on the pool). */
static const double *pool_prices(sv_model *m, int pi, sv_pmask pm)
{
    sv_pool *p = &m->pools[pi];
    for (sv_prices *x = p->prices; x; x = x->next)
        if (x->pm.w[0] == pm.w[0] && x->pm.w[1] == pm.w[1])
            return x->price;
    sv_prices *x = tlr_arena_alloc(m->ar, sizeof(*x));
    x->pm = pm;
    x->price = tlr_arena_alloc(m->ar, ((size_t)p->ntypes + 1) * sizeof(double));
    for (int pt = 0; pt < p->ntypes; pt++)
        x->price[pt] = sv_type_price(m, p->types[pt], pm, NULL);
    x->next = p->prices;
    p->prices = x;
    return x->price;
}

/* Pool pi's room per type for pods (allocatable less DaemonSets), as
 * doubles, SV_NDIM per type (cached on the pool). */
static const double *pool_room(sv_model *m, int pi)
{
    sv_pool *p = &m->pools[pi];
    if (p->room)
        return p->room;
    p->room = tlr_arena_calloc(m->ar, ((size_t)p->ntypes + 1) * SV_NDIM, sizeof(double));
    for (int pt = 0; pt < p->ntypes; pt++)
        for (int d = 0; d < m->ndim; d++)
            p->room[(size_t)pt * SV_NDIM + d] = (double)(m->types[p->types[pt]].alloc.v[d] - p->ds[pt].v[d]);
    return p->room;
}

/* Cheapest price per pod of class cl at level lv over the types it may
 * use; 0 when none. */
static double level_unit(sv_model *m, const sv_class *cl, const sv_level *lv)
{
    double best = 0;
    for (int pi = 0; pi < m->npools; pi++) {
        if (!lv->compat[pi])
            continue;
        const sv_pool *p = &m->pools[pi];
        const double *pr = pool_prices(m, pi, lv->pmask[pi]);
        for (int pt = 0; pt < p->ntypes; pt++) {
            if (!sv_bit(lv->compat[pi], pt))
                continue;
            const sv_type *t = &m->types[p->types[pt]];
            double price = pr[pt];
            sv_res f;
            for (int d = 0; d < m->ndim; d++)
                f.v[d] = t->alloc.v[d] - p->ds[pt].v[d];
            int k = res_room(m, &f, &cl->req, 1 << 20);
            if (k > cl->host_cap)
                k = cl->host_cap;
            if (k > 0 && price >= 0) {
                double u = price / k;
                if (best == 0 || u < best)
                    best = u;
            }
        }
    }
    return best;
}

/* Cheapest price per pod of c over the types it may use (value unit). */
static double class_unit(sv_model *m, int c)
{
    sv_class *cl = &m->classes[c];
    if (cl->unit > 0)
        return cl->unit;
    double best = 0;
    for (int li = 0; li < cl->nlevels && best == 0; li++)
        best = level_unit(m, cl, &cl->levels[li]);
    cl->unit = best > 0 ? best : 1e-9;
    return cl->unit;
}

/* Level 0 of two classes asks the same of every pool: same requests, same
 * pods per node, same compatible types and places.  Their units are then
 * equal when level 0 has one. */
static bool level0_same(const sv_model *m, const sv_class *a, const sv_class *b)
{
    if (a->host_cap != b->host_cap || a->nlevels < 1 || b->nlevels < 1)
        return false;
    for (int d = 0; d < m->ndim; d++)
        if (a->req.v[d] != b->req.v[d])
            return false;
    const sv_level *x = &a->levels[0], *y = &b->levels[0];
    for (int pi = 0; pi < m->npools; pi++) {
        if (!x->compat[pi] != !y->compat[pi])
            return false;
        if (!x->compat[pi])
            continue;
        if (memcmp(&x->pmask[pi], &y->pmask[pi], sizeof(sv_pmask)) ||
            memcmp(x->compat[pi], y->compat[pi], ((size_t)m->pools[pi].ntypes / 64 + 1) * sizeof(uint64_t)))
            return false;
    }
    return true;
}

static uint64_t level0_hash(const sv_model *m, const sv_class *c)
{
    uint64_t h = TLR_FNV64_BASIS_SHORT;
#define MIX(v) (h = tlr_fnv1a64_word(h, (uint64_t)(v)))
    MIX(c->host_cap);
    for (int d = 0; d < m->ndim; d++)
        MIX(c->req.v[d]);
    const sv_level *x = &c->levels[0];
    for (int pi = 0; pi < m->npools; pi++) {
        if (!x->compat[pi]) {
            MIX(pi);
            continue;
        }
        MIX(x->pmask[pi].w[0]);
        MIX(x->pmask[pi].w[1]);
        for (int w = 0; w <= m->pools[pi].ntypes / 64; w++)
            MIX(x->compat[pi][w]);
    }
#undef MIX
    return h;
}

/* Every class's unit.  Classes that differ only in labels or topology
 * (diverse-20k has ~3,200 classes of 30 request shapes) share one
 * computation: a hash table keyed by level 0 (level0_same). */
static void class_units(sv_model *m)
{
    int cap = 16;
    while (cap < 2 * m->nclasses)
        cap *= 2;
    int *tab = tlr_arena_alloc(m->ar, (size_t)cap * sizeof(int));
    for (int i = 0; i < cap; i++)
        tab[i] = SV_NONE;
    for (int c = 0; c < m->nclasses; c++) {
        sv_class *cl = &m->classes[c];
        if (cl->bad || cl->unit > 0)
            continue;
        if (cl->nlevels < 1) {
            class_unit(m, c);
            continue;
        }
        int slot = (int)(level0_hash(m, cl) & (uint64_t)(cap - 1));
        while (tab[slot] != SV_NONE && !level0_same(m, &m->classes[tab[slot]], cl))
            slot = (slot + 1) & (cap - 1);
        if (tab[slot] != SV_NONE) {
            cl->unit = m->classes[tab[slot]].unit;
            continue;
        }
        double u0 = level_unit(m, cl, &cl->levels[0]);
        if (u0 > 0) {
            cl->unit = u0;
            tab[slot] = c;   /* only units found at level 0 are shared */
        } else
            class_unit(m, c);
    }
}

#define SV_TOPK 8
#define SV_LOOKAHEAD 24

/* Tailor's memory of the type choice while placing one class (see
 * choose_target).  pi == SV_NONE: nothing to reuse. */
typedef struct target_cache {
    int pi, lvi;
    int kfull;                    /* most pods of the class a candidate holds */
    int top[SV_TOPK];             /* best types for the class alone */
    int ntop;
    int extra[SV_TOPK / 2];       /* best types for the remaining demand, sorted */
    int nextra;
    int best;                     /* the answer for (top, extra) */
} target_cache;

static int int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Offers id, scored score (lower is better), to a top-k list of at most
 * k: ids and scores hold the *n kept so far.  While the list is not full
 * the offer joins it; after, it replaces the worst kept score (the first
 * one on ties) when strictly better. */
static void topk_offer(int *ids, double *scores, int *n, int k, int id, double score)
{
    if (*n < k) {
        ids[*n] = id;
        scores[(*n)++] = score;
        return;
    }
    int w = 0;
    for (int i = 1; i < k; i++)
        if (scores[i] > scores[w])
            w = i;
    if (score < scores[w]) {
        ids[w] = id;
        scores[w] = score;
    }
}

/* One call of choose_target: what every phase reads. */
typedef struct target_query {
    sv_model *m;
    const sv_class *cl;
    const sv_level *lv;
    int lvi, pi;
    const sv_pool *p;
    const uint64_t *cand;
    const double *pr;             /* the pool's prices at the level's places */
    double unit;                  /* the class's */
    int nrem, pos;
} target_query;

/* choose_target's "top": the candidate types with the best price per pod
 * of the class alone, into tc, with what decides whether a later claim
 * may reuse them.  Returns how many (0: none can take a pod). */
static int target_top(const target_query *q, target_cache *tc)
{
    sv_model *m = q->m;
    const sv_pool *p = q->p;
    double topv[SV_TOPK];
    int ntop = 0;
    int kmax = 0;
    for (int pt = 0; pt < p->ntypes; pt++) {
        if (!sv_bit(q->cand, pt))
            continue;
        double price = q->pr[pt];
        sv_res f;
        const sv_type *t = &m->types[p->types[pt]];
        for (int d = 0; d < m->ndim; d++)
            f.v[d] = t->alloc.v[d] - p->ds[pt].v[d];
        int k = res_room(m, &f, &q->cl->req, q->cl->host_cap);
        if (k > kmax)
            kmax = k;
        if (k > q->nrem)
            k = q->nrem;
        if (k <= 0 || price < 0)
            continue;
        topk_offer(tc->top, topv, &ntop, SV_TOPK, pt, price / (k * q->unit));
    }
    tc->ntop = ntop;
    tc->kfull = kmax;
    tc->lvi = q->lvi;
    tc->pi = ntop > 0 && !p->limited && q->nrem >= kmax ? q->pi : SV_NONE;
    tc->nextra = -1;
    return ntop;
}

/* choose_target's "extra": the candidate types that are cheapest for the
 * whole remaining demand (what the next classes will want too): big nodes
 * whose price per unit of capacity is best, which a class alone would not
 * fill.  Writes up to SV_TOPK/2 into extra, in no order; returns how many. */
static int target_extra(const target_query *q, int *extra)
{
    sv_model *m = q->m;
    const double *tot = m->tot_all;
    double tleft[SV_NDIM];
    int dl[SV_NDIM], nd = 0;
    for (int dd = 0; dd < m->ndim; dd++) {
        tleft[dd] = tot[dd] - m->tot_done[dd];
        if (tleft[dd] > 0)
            dl[nd++] = dd;
    }
    const double *room = pool_room(m, q->pi);
    double extrav[SV_TOPK / 2];
    int nextra = 0;
    for (int w = 0; w <= (q->p->ntypes - 1) / 64; w++) {
        uint64_t bits = q->cand[w];
        while (bits) {
            int pt = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            double price = q->pr[pt];
            if (price < 0)
                continue;
            const double *fr = room + (size_t)pt * SV_NDIM;
            double cap = 0;
            for (int i = 0; i < nd; i++) {
                double share = fr[dl[i]] / tleft[dl[i]];
                if (cap == 0 || share < cap)
                    cap = share;
            }
            if (cap <= 0)
                continue;
            topk_offer(extra, extrav, &nextra, SV_TOPK / 2, pt, price / cap);
        }
    }
    return nextra;
}

/* The types to look ahead with: top, then the extra types not in top.
 * Returns how many it wrote into all. */
static int target_candidates(const int *top, int ntop, const int *extra, int nextra, int *all)
{
    int nall = 0;
    for (int i = 0; i < ntop; i++)
        all[nall++] = top[i];
    for (int i = 0; i < nextra; i++) {
        bool dup = false;
        for (int j = 0; j < ntop && !dup; j++)
            dup = top[j] == extra[i];
        if (!dup)
            all[nall++] = extra[i];
    }
    return nall;
}

/* Look ahead: what the rest of a new claim of type pt would hold once the
 * class's pods are on it.  Returns its price per unit of value held. */
static double target_lookahead(const target_query *q, int pt)
{
    sv_model *m = q->m;
    const sv_class *cl = q->cl;
    const sv_pool *p = q->p;
    int pi = q->pi, nrem = q->nrem;
    const sv_type *t = &m->types[p->types[pt]];
    double price = q->pr[pt];
    sv_res f;
    for (int d = 0; d < m->ndim; d++)
        f.v[d] = t->alloc.v[d] - p->ds[pt].v[d];
    int k = res_room(m, &f, &cl->req, nrem < cl->host_cap ? nrem : cl->host_cap);
    for (int d = 0; d < m->ndim; d++)
        f.v[d] -= cl->req.v[d] * k;
    double value = k * q->unit;
    int seen = 0;
    for (int j = q->pos + 1; j < m->nclasses && seen < SV_LOOKAHEAD; j++) {
        int dci = m->class_order[j];
        sv_class *d = &m->classes[dci];
        if (d->left <= 0 || d->bad || !d->levels[0].compat[pi] || !sv_bit(d->levels[0].compat[pi], pt))
            continue;
        /* a class that may not share the claim's places (pinned to
         * another zone) will not fill it */
        if (!sv_pmask_any(sv_pmask_and(d->levels[0].pmask[pi], q->lv->pmask[pi])))
            continue;
        bool aff = false;
        for (int c = 0; c < d->ncons; c++)
            if (d->cons[c].kind == SV_C_AFFINITY)
                aff = true;
        if (aff)
            continue;
        seen++;
        int kd = res_room(m, &f, &d->req, d->left < d->host_cap ? d->left : d->host_cap);
        if (kd <= 0)
            continue;
        for (int dd = 0; dd < m->ndim; dd++)
            f.v[dd] -= d->req.v[dd] * kd;
        value += kd * class_unit(m, dci);
    }
    return price / value;
}

/* The type among all[0..nall) whose look-ahead is cheapest (the first
 * one on ties); SV_NONE when nall is 0. */
static int target_best(const target_query *q, const int *all, int nall)
{
    int best = SV_NONE;
    double bestv = 0;
    for (int i = 0; i < nall; i++) {
        double v = target_lookahead(q, all[i]);
        if (best == SV_NONE || v < bestv) {
            best = all[i];
            bestv = v;
        }
    }
    return best;
}

/* Tailor: the target type of a new claim of pool pi for class c.
 *
 * The candidates are the SV_TOPK types with the best price per pod of the
 * class ("top"), plus the SV_TOPK/2 types cheapest per unit of the whole
 * remaining demand ("extra"); each is scored by a greedy look-ahead fill.
 *
 * The class keeps opening claims while it has pods left, and most of the
 * choice does not move between them: "top" depends on min(pods left, pods
 * a type holds), which is constant while the pods left stay at or above
 * kfull; the look-ahead depends on the classes after this one, whose
 * counts do not move while this class is placed.  Only "extra" moves,
 * because the remaining demand shrinks.  So tc keeps top and the answer,
 * and a later claim recomputes extra only (one cheap pass): when it is the
 * same set, the answer is exactly the one computed before.  This turns the
 * ~4,000 full choices of diverse-20k's hostname anti-affinity pods (one
 * claim each) into a few dozen, without changing any plan. */
static int choose_target(sv_model *m, int c, int lvi, int pi, const uint64_t *cand, int nrem, int pos,
                         target_cache *tc)
{
    sv_class *cl = &m->classes[c];
    sv_level *lv = &cl->levels[lvi];
    target_query q = { .m = m, .cl = cl, .lv = lv, .lvi = lvi, .pi = pi, .p = &m->pools[pi],
                       .cand = cand, .nrem = nrem, .pos = pos };
    q.unit = class_unit(m, c);
    q.pr = pool_prices(m, pi, lv->pmask[pi]);
    bool warm = tc->pi == pi && tc->lvi == lvi && !q.p->limited && nrem >= tc->kfull && tc->ntop > 0;
    if (!warm && !target_top(&q, tc))
        return SV_NONE;
    int extra[SV_TOPK / 2];
    int nextra = target_extra(&q, extra);
    int sorted[SV_TOPK / 2];
    memcpy(sorted, extra, (size_t)nextra * sizeof(int));
    qsort(sorted, (size_t)nextra, sizeof(int), int_cmp);
    if (warm && nextra == tc->nextra && !memcmp(sorted, tc->extra, (size_t)nextra * sizeof(int)))
        return tc->best;
    int all[SV_TOPK + SV_TOPK / 2];
    int nall = target_candidates(tc->top, tc->ntop, extra, nextra, all);
    int best = target_best(&q, all, nall);
    tc->nextra = nextra;
    memcpy(tc->extra, sorted, (size_t)nextra * sizeof(int));
    tc->best = best;
    return best;
}

static bool limit_fits(const sv_model *m, const sv_pool *p, const sv_res *cap)
{
    for (int d = 0; d < m->ndim; d++)
        if (p->limit_left.v[d] != INT64_MAX && cap->v[d] > p->limit_left.v[d])
            return false;
    return true;
}

static const char *limit_dim(const sv_model *m, const sv_pool *p, const sv_res *cap)
{
    for (int d = 0; d < m->ndim; d++)
        if (p->limit_left.v[d] != INT64_MAX && cap->v[d] > p->limit_left.v[d])
            return m->dim_name[d];
    return "nodes";
}

/* A new, empty claim of pool pi with candidate types cand (ncand of them)
 * and places pm; returns its bin. */
static int claim_new(sv_model *m, int pi, uint64_t *cand, int ncand, sv_pmask pm)
{
    const sv_pool *p = &m->pools[pi];
    int b = new_bin(m);
    sv_bin *x = &m->bins[b];
    x->kind = SV_BIN_NEW;
    x->pool = pi;
    x->np = p->np;
    x->cand = cand;
    x->ncand = ncand;
    x->pmask = pm;
    x->custom = tlr_arena_alloc(m->ar, ((size_t)p->ncustom + 1) * sizeof(uint64_t));
    for (int k = 0; k < p->ncustom; k++)
        x->custom[k] = ~(uint64_t)0;
    if (p->ntmv) {
        x->tmv = tlr_arena_alloc(m->ar, (size_t)p->ntmv * sizeof(uint64_t));
        memcpy(x->tmv, p->tmv_pool, (size_t)p->ntmv * sizeof(uint64_t));
    }
    if (m->ntkeys) {
        x->tkv = tlr_arena_alloc(m->ar, (size_t)m->ntkeys * sizeof(int));
        for (int i = 0; i < m->ntkeys; i++)
            x->tkv[i] = p->tk_mode[i] == SV_TKM_FIXED ? p->tk_arg[i] : SV_NONE;
    }
    return b;
}

/* Open a new claim of pool pi for class c and place up to want pods on it.
 * tc (borrowed, may be NULL) is the class's target cache (tailor only).
 * Returns the number placed (0: nothing opened; cl->fail[pi] says why). */
static int open_claim(sv_model *m, int c, int lvi, int pi, const int *pods, int want, int pos,
                      target_cache *tc)
{
    sv_class *cl = &m->classes[c];
    sv_level *lv = &cl->levels[lvi];
    sv_pool *p = &m->pools[pi];
    if (!lv->compat[pi])
        return 0;
    if (!m->allow_new || (m->max_new > 0 && m->nnew >= m->max_new)) {
        cl->fail[pi] = m->allow_new ? "the replacement limit is reached" : "new nodes are not allowed";
        return 0;
    }
    if (p->nodes_left <= 0) {
        cl->fail[pi] = "NodePool limit nodes reached";
        return 0;
    }
    int words = p->ntypes / 64 + 1;
    uint64_t *cand = tlr_arena_alloc(m->ar, (size_t)words * sizeof(uint64_t));
    int ncand = 0;
    const char *lim = NULL;
    for (int w = 0; w < words; w++) {
        cand[w] = lv->compat[pi][w];
        uint64_t bits = cand[w];
        while (bits) {
            int pt = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            if (p->limited && !limit_fits(m, p, &m->types[p->types[pt]].cap)) {
                if (!lim)
                    lim = limit_dim(m, p, &m->types[p->types[pt]].cap);
                sv_bit_clr(cand, pt);
            } else
                ncand++;
        }
    }
    if (!ncand) {
        cl->fail[pi] = sv_arena_printf(m->ar, "NodePool limit %s reached", lim ? lim : "?");
        return 0;
    }
    int b = claim_new(m, pi, cand, ncand, lv->pmask[pi]);
    sv_bin *x = &m->bins[b];
    x->level_class = c;
    x->level = lvi;
    /* The SV_TK_LABEL keys the class constrains get their value before the
     * type choice: for an instance-type label, the value decides the
     * candidate types (the class's target cache then does not apply). */
    target_cache fresh = { .pi = SV_NONE, .lvi = SV_NONE, .nextra = -1 };
    for (int i = 0; i < cl->ncons; i++) {
        const sv_cons *cn = &cl->cons[i];
        const sv_group *g = &m->groups[cn->group];
        if (g->tk != SV_TK_LABEL || (cn->soft && !lv->soft_tsc) || !SV_CONS_ON(cn, lv) || x->tkv[g->tki] >= 0)
            continue;
        int mode = p->tk_mode[g->tki];
        if (mode == SV_TKM_NONE && cn->kind == SV_C_ANTI)
            continue;   /* a node without the label meets no one */
        int v = mode == SV_TKM_NONE ? SV_TK_IMPOSSIBLE : tk_choose(m, b, c, lvi, g->tki);
        if (v >= 0) {
            tk_apply(m, b, g->tki, v);
            if (mode == SV_TKM_TYPE)
                tc = &fresh;
        }
        if (v < 0 || !x->ncand) {
            m->nbins--;
            cl->fail[pi] = mode == SV_TKM_NONE
                ? sv_arena_printf(m->ar, "topology key %s has no value on this NodePool's nodes (no template "
                                  "label, requirement with In values or instance-type label gives one)",
                                  sv_str(m, m->tkeys[g->tki].key))
                : sv_arena_printf(m->ar, "topology constraints on %s cannot be met on a new node",
                                  sv_str(m, m->tkeys[g->tki].key));
            return 0;
        }
    }
    if (m->strategy == TLR_SOLVE_TAILOR) {
        x->target = choose_target(m, c, lvi, pi, x->cand, cl->left, pos, tc);
        if (x->target == SV_NONE) {
            m->nbins--;
            cl->fail[pi] = "no instance type has an available offering for the pod";
            return 0;
        }
        sv_res f;
        claim_free(m, x, x->target, &f);
        x->qcpu = f.v[SV_DIM_CPU];
        x->qmem = f.v[SV_DIM_MEM];
    }
    int place;
    int r = room_at(m, b, c, lvi, want, &place);
    if (r <= 0) {
        char *minv = sv_minv_why(m, b, c, lvi);
        m->nbins--;
        cl->fail[pi] = minv ? minv
                            : "topology constraints (spread, pod affinity or anti-affinity) cannot be met on a new node";
        return 0;
    }
    place_n(m, b, c, lvi, pods, r, place);
    x = &m->bins[b];
    /* Limits: the largest option counts (Karpenter's subtractMax). */
    sv_res charge = { { 0 } };
    if (m->strategy == TLR_SOLVE_TAILOR)
        charge = m->types[p->types[x->target]].cap;
    else
        for (int w = 0; w < words; w++) {
            uint64_t bits = x->cand[w];
            while (bits) {
                int pt = w * 64 + __builtin_ctzll(bits);
                bits &= bits - 1;
                for (int d = 0; d < m->ndim; d++)
                    if (m->types[p->types[pt]].cap.v[d] > charge.v[d])
                        charge.v[d] = m->types[p->types[pt]].cap.v[d];
            }
        }
    x->charged = charge;
    for (int d = 0; d < m->ndim; d++)
        if (p->limit_left.v[d] != INT64_MAX)
            p->limit_left.v[d] -= charge.v[d];
    if (p->nodes_left != INT64_MAX)
        p->nodes_left--;
    m->nnew++;
    return r;
}

/* ---- claims opened from outside (seed.c, ffd.c) ------------------------ */

static int quick_ok(const sv_model *m, const sv_bin *x, const sv_class *cl);

bool sv_timed_out(sv_model *m)
{
    return timed_out(m);
}

bool sv_bin_quick_ok(const sv_model *m, int b, const sv_class *cl)
{
    return quick_ok(m, &m->bins[b], cl);
}

int sv_claim_open(sv_model *m, int c, int lv, int pi, const int *pods, int want)
{
    return open_claim(m, c, lv, pi, pods, want, 0, NULL);
}

int sv_room_place(sv_model *m, int b, int c, int lv, int want, int *place)
{
    return room_at(m, b, c, lv, want, place);
}

void sv_place_pods(sv_model *m, int b, int c, int lv, const int *pods, int n, int place)
{
    place_n(m, b, c, lv, pods, n, place);
}

int sv_claim_open_target(sv_model *m, int pi, int pt)
{
    sv_pool *p = &m->pools[pi];
    if (m->strategy != TLR_SOLVE_TAILOR || !m->allow_new || (m->max_new > 0 && m->nnew >= m->max_new) ||
        p->nodes_left <= 0 || pt < 0 || pt >= p->ntypes)
        return SV_NONE;
    if (p->limited && !limit_fits(m, p, &m->types[p->types[pt]].cap))
        return SV_NONE;
    int words = p->ntypes / 64 + 1;
    uint64_t *cand = tlr_arena_calloc(m->ar, (size_t)words, sizeof(uint64_t));
    int ncand = 0;
    for (int t = 0; t < p->ntypes; t++)
        if (!p->limited || limit_fits(m, p, &m->types[p->types[t]].cap)) {
            sv_bit_set(cand, t);
            ncand++;
        }
    int b = claim_new(m, pi, cand, ncand, p->pmask);
    sv_bin *x = &m->bins[b];
    x->level_class = SV_NONE;
    x->level = 0;
    x->target = pt;
    sv_res f;
    claim_free(m, x, pt, &f);
    x->qcpu = f.v[SV_DIM_CPU];
    x->qmem = f.v[SV_DIM_MEM];
    return b;
}

void sv_claim_commit(sv_model *m, int b)
{
    sv_bin *x = &m->bins[b];
    sv_pool *p = &m->pools[x->pool];
    if (!x->npods) {
        if (b == m->nbins - 1)
            m->nbins--;
        else
            x->dead = true;
        return;
    }
    x->charged = m->types[p->types[x->target]].cap;
    for (int d = 0; d < m->ndim; d++)
        if (p->limit_left.v[d] != INT64_MAX)
            p->limit_left.v[d] -= x->charged.v[d];
    if (p->nodes_left != INT64_MAX)
        p->nodes_left--;
    m->nnew++;
}

void sv_place_existing(sv_model *m, int c)
{
    sv_class *cl = &m->classes[c];
    if (cl->bad || cl->left <= 0)
        return;
    int *q = tlr_arena_alloc(m->ar, (size_t)cl->npods * sizeof(int));
    int nq = 0;
    for (int i = 0; i < cl->npods; i++)
        if (m->pods[cl->pods[i]].bin == SV_NONE)
            q[nq++] = cl->pods[i];
    int head = 0;
    for (int b = 0; b < m->nexisting && head < nq; b++) {
        sv_bin *x = &m->bins[b];
        if (x->dead || !quick_ok(m, x, cl))
            continue;
        int place;
        int r = room_at(m, b, c, 0, nq - head, &place);
        if (r > 0) {
            place_n(m, b, c, 0, q + head, r, place);
            head += r;
        }
    }
}

/* ---- tailor ----------------------------------------------------------- */

static int quick_ok(const sv_model *m, const sv_bin *x, const sv_class *cl)
{
    if (x->kind != SV_BIN_NEW)
        return x->free.v[SV_DIM_CPU] >= cl->req.v[SV_DIM_CPU] && x->free.v[SV_DIM_MEM] >= cl->req.v[SV_DIM_MEM] &&
               x->free.v[SV_DIM_PODS] >= 1;
    if (m->strategy != TLR_SOLVE_TAILOR)
        return 1;
    return cl->req.v[SV_DIM_CPU] <= x->qcpu && cl->req.v[SV_DIM_MEM] <= x->qmem;
}

static bool class_topo_changes(const sv_model *m, const sv_class *c)
{
    for (int i = 0; i < c->ncons; i++)
        if (m->groups[c->cons[i].group].tk != SV_TK_HOST)
            return true;
    return false;
}

static void tailor_class(sv_model *m, int pos)
{
    int c = m->class_order[pos];
    sv_class *cl = &m->classes[c];
    if (cl->left <= 0)
        return;
    int *q = tlr_arena_alloc(m->ar, (size_t)cl->npods * sizeof(int));
    int nq = 0;
    for (int i = 0; i < cl->npods; i++)
        if (m->pods[cl->pods[i]].bin == SV_NONE)
            q[nq++] = cl->pods[i];
    int head = 0;
    int lvi = 0;
    int scanned = 0;
    bool rescan = class_topo_changes(m, cl);
    target_cache tc = { .pi = SV_NONE, .lvi = SV_NONE, .nextra = -1 };
    while (head < nq) {
        if (timed_out(m))
            return;
        bool progress = false;
        for (int b = rescan ? 0 : scanned; b < m->nbins && head < nq; b++) {
            sv_bin *x = &m->bins[b];
            if (x->dead || !quick_ok(m, x, cl))
                continue;
            int place;
            int r = room_at(m, b, c, lvi, nq - head, &place);
            if (r > 0) {
                place_n(m, b, c, lvi, q + head, r, place);
                head += r;
                progress = true;
            }
        }
        scanned = m->nbins;
        if (head >= nq)
            break;
        for (int pi = 0; pi < m->npools; pi++) {
            int r = open_claim(m, c, lvi, pi, q + head, nq - head, pos, &tc);
            if (r > 0) {
                head += r;
                progress = true;
                scanned = m->nbins;
                break;
            }
        }
        if (progress)
            continue;
        if (lvi + 1 < cl->nlevels) {
            lvi++;
            scanned = 0;
            continue;
        }
        for (int i = head; i < nq; i++) {
            m->pods[q[i]].err = TLR_E_UNSCHEDULABLE;
            m->pods[q[i]].level = lvi;
        }
        return;
    }
}

/* ---- karpenter -------------------------------------------------------- */

static int karp_pod_cmp(const void *a, const void *b, void *arg)
{
    const sv_model *m = arg;
    const sv_podst *x = &m->pods[*(const int *)a], *y = &m->pods[*(const int *)b];
    const sv_res *rx = &m->classes[x->cls].req, *ry = &m->classes[y->cls].req;
    if (rx->v[SV_DIM_CPU] != ry->v[SV_DIM_CPU])
        return rx->v[SV_DIM_CPU] > ry->v[SV_DIM_CPU] ? -1 : 1;
    if (rx->v[SV_DIM_MEM] != ry->v[SV_DIM_MEM])
        return rx->v[SV_DIM_MEM] > ry->v[SV_DIM_MEM] ? -1 : 1;
    if (x->pod->creation_unix_ms != y->pod->creation_unix_ms)
        return x->pod->creation_unix_ms < y->pod->creation_unix_ms ? -1 : 1;
    int s = strcmp(x->pod->uid ? x->pod->uid : "", y->pod->uid ? y->pod->uid : "");
    return s ? s : *(const int *)a - *(const int *)b;
}

typedef struct karp_order {
    int *b;    /* new-claim bins by (pods, index) */
    int n, cap;
} karp_order;

static void korder_bump(sv_model *m, karp_order *o, int j)
{
    /* bins[o->b[j]] gained pods: move it right to keep the order. */
    while (j + 1 < o->n) {
        sv_bin *x = &m->bins[o->b[j]], *y = &m->bins[o->b[j + 1]];
        if (x->npods < y->npods || (x->npods == y->npods && o->b[j] < o->b[j + 1]))
            break;
        int t = o->b[j];
        o->b[j] = o->b[j + 1];
        o->b[j + 1] = t;
        j++;
    }
}

static bool karp_try(sv_model *m, int pi_pod, int lvi, karp_order *o)
{
    sv_podst *ps = &m->pods[pi_pod];
    int c = ps->cls;
    sv_class *cl = &m->classes[c];
    for (int b = 0; b < m->nexisting; b++) {
        if (!quick_ok(m, &m->bins[b], cl))
            continue;
        int place;
        if (room_at(m, b, c, lvi, 1, &place) > 0) {
            place_n(m, b, c, lvi, &pi_pod, 1, place);
            return true;
        }
    }
    for (int j = 0; j < o->n; j++) {
        int place;
        if (room_at(m, o->b[j], c, lvi, 1, &place) > 0) {
            place_n(m, o->b[j], c, lvi, &pi_pod, 1, place);
            korder_bump(m, o, j);
            return true;
        }
    }
    for (int pi = 0; pi < m->npools; pi++) {
        if (open_claim(m, c, lvi, pi, &pi_pod, 1, 0, NULL) > 0) {
            int b = m->nbins - 1;
            o->b = grow_int(m, o->b, o->n, &o->cap);
            int j = o->n++;
            /* a one-pod claim goes before every claim with more pods */
            while (j > 0 && m->bins[o->b[j - 1]].npods > 1) {
                o->b[j] = o->b[j - 1];
                j--;
            }
            o->b[j] = b;
            return true;
        }
    }
    return false;
}

static void karpenter_all(sv_model *m)
{
    int *q = tlr_arena_alloc(m->ar, ((size_t)m->npods + 1) * sizeof(int));
    int nq = 0;
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].bin == SV_NONE && !m->classes[m->pods[i].cls].bad)
            q[nq++] = i;
        else if (m->pods[i].bin == SV_NONE)
            m->pods[i].err = TLR_E_UNSCHEDULABLE;
    qsort_r(q, (size_t)nq, sizeof(int), karp_pod_cmp, m);
    karp_order o = { 0 };
    int *fail = tlr_arena_alloc(m->ar, ((size_t)nq + 1) * sizeof(int));
    for (;;) {
        int nf = 0, placed = 0;
        for (int i = 0; i < nq; i++) {
            if ((i & 255) == 0 && timed_out(m))
                return;
            sv_podst *ps = &m->pods[q[i]];
            sv_class *cl = &m->classes[ps->cls];
            bool ok = false;
            for (int lv = ps->level; lv < cl->nlevels && !ok; lv++) {
                ok = karp_try(m, q[i], lv, &o);
                if (!ok)
                    ps->level = lv;
            }
            if (ok)
                placed++;
            else {
                ps->err = TLR_E_UNSCHEDULABLE;
                fail[nf++] = q[i];
            }
        }
        if (!nf || !placed)
            break;
        memcpy(q, fail, (size_t)nf * sizeof(int));
        nq = nf;
    }
}

/* ---- improvement: empty the emptiest claims into the others' slack ---- */

/* Pods of such a class can move between new claims without touching any
 * topology count: no spread, affinity or anti-affinity, no group selects
 * them, no host ports. */
bool sv_class_movable(const sv_class *c)
{
    return !c->ncons && !c->nmatch && !c->nowns && !c->nports && !c->pin_zone && !c->pin_ct;
}

int sv_claim_topo_labels(const sv_model *m, int b, sv_id *keys, sv_id *vals, int max)
{
    const sv_bin *x = &m->bins[b];
    const sv_pool *p = &m->pools[x->pool];
    int n = 0;
    for (int i = 0; x->tkv && i < m->ntkeys && n < max; i++)
        if (x->tkv[i] >= 0 && (p->tk_mode[i] == SV_TKM_CUSTOM || p->tk_mode[i] == SV_TKM_TYPE)) {
            keys[n] = m->tkeys[i].key;
            vals[n++] = m->tkeys[i].vals[x->tkv[i]];
        }
    return n;
}

static double claim_fill(const sv_model *m, const sv_bin *x)
{
    const sv_pool *p = &m->pools[x->pool];
    const sv_type *t = &m->types[p->types[x->target]];
    double f = 0;
    for (int d = 0; d < m->ndim; d++) {
        int64_t room = t->alloc.v[d] - p->ds[x->target].v[d];
        if (room > 0 && (double)x->used.v[d] / (double)room > f)
            f = (double)x->used.v[d] / (double)room;
    }
    return f;
}

static int fill_cmp(const void *a, const void *b, void *arg)
{
    const double *f = arg;
    double x = f[*(const int *)a], y = f[*(const int *)b];
    if (x != y)
        return x < y ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* Try to move every pod of claim a into the slack of other new claims.
 * The move is kept only when the plan gets cheaper: a's price is saved,
 * and each receiver may have to move up to a dearer option.  Returns true
 * when a was emptied. */
static bool empty_claim(sv_model *m, int a, int *recv, int *podrecv, uint64_t *candsave, sv_res *usedsave,
                        double *costsave, uint32_t *hopeless)
{
    sv_bin *xa = &m->bins[a];
    for (int i = 0; i < xa->npods; i++) {
        const sv_podst *ps = &m->pods[xa->pods[i]];
        if (!sv_class_movable(&m->classes[ps->cls]) || (ps->level < 32 && (hopeless[ps->cls] >> ps->level) & 1))
            return false;
    }
    if (m->pools[xa->pool].limited)
        return false;
    int nrecv = 0;
    bool ok = true;
    /* per receiver, saved: its candidate types, then its multi-valued
     * label masks */
    int words = m->pwords_max, stride = words + SV_MAXTMV;
    int ntmv = m->pools[xa->pool].ntmv;
    for (int i = 0; i < xa->npods && ok; i++) {
        const sv_podst *ps = &m->pods[xa->pods[i]];
        sv_class *cl = &m->classes[ps->cls];
        int got = SV_NONE;
        for (int b = m->nexisting; b < m->nbins && got == SV_NONE; b++) {
            sv_bin *x = &m->bins[b];
            /* same pool only: NodePool weights decided where the pod went */
            if (b == a || x->dead || !x->npods || x->pool != xa->pool || !quick_ok(m, x, cl))
                continue;
            int place;
            if (room_at(m, b, ps->cls, ps->level, 1, &place) <= 0 || place != SV_NONE)
                continue;
            int j = 0;
            while (j < nrecv && recv[j] != b)
                j++;
            if (j == nrecv) {
                recv[nrecv] = b;
                usedsave[nrecv] = x->used;
                memcpy(candsave + (size_t)nrecv * stride, x->cand, (size_t)words * sizeof(uint64_t));
                if (ntmv)
                    memcpy(candsave + (size_t)nrecv * stride + words, x->tmv, (size_t)ntmv * sizeof(uint64_t));
                costsave[nrecv] = sv_claim_cost(m, b);
                nrecv++;
            }
            got = b;
        }
        if (got == SV_NONE) {
            /* Slack only shrinks from here on (receivers gain pods, emptied
             * claims go): no other pod of this class and level will find a
             * receiver either. */
            if (ps->level < 32)
                hopeless[ps->cls] |= 1u << ps->level;
            ok = false;
            break;
        }
        /* tentatively: the pod's requests and requirements on the receiver */
        sv_bin *x = &m->bins[got];
        const sv_level *lv = &cl->levels[ps->level];
        for (int d = 0; d < m->ndim; d++)
            x->used.v[d] += cl->req.v[d];
        x->qcpu -= cl->req.v[SV_DIM_CPU];
        x->qmem -= cl->req.v[SV_DIM_MEM];
        const uint64_t *compat = claim_compat(m, x, lv, x->pool);
        for (int w = 0; w <= m->pools[x->pool].ntypes / 64; w++)
            x->cand[w] &= compat ? compat[w] : 0;
        for (int k = 0; k < ntmv; k++)
            x->tmv[k] &= lv->tmv[x->pool][k];
        podrecv[i] = got;
    }
    double gain = 0;
    if (ok) {
        gain = sv_claim_cost(m, a);
        for (int j = 0; j < nrecv && gain > 0; j++) {
            double after = sv_claim_cost(m, recv[j]);
            gain -= after - costsave[j];
            if (after <= 0)
                gain = -1;   /* no option holds it any more */
        }
    }
    /* undo the tentative state */
    for (int j = 0; j < nrecv; j++) {
        sv_bin *x = &m->bins[recv[j]];
        x->used = usedsave[j];
        memcpy(x->cand, candsave + (size_t)j * stride, (size_t)words * sizeof(uint64_t));
        if (ntmv)
            memcpy(x->tmv, candsave + (size_t)j * stride + words, (size_t)ntmv * sizeof(uint64_t));
        sv_res f;
        claim_free(m, x, x->target, &f);
        x->qcpu = f.v[SV_DIM_CPU];
        x->qmem = f.v[SV_DIM_MEM];
    }
    if (!ok || gain <= 1e-9)
        return false;
    /* commit: each pod onto its receiver, and a is gone */
    int n = xa->npods;
    for (int i = 0; i < n; i++) {
        int pod = xa->pods[i];
        sv_podst *ps = &m->pods[pod];
        sv_class *cl = &m->classes[ps->cls];
        cl->left++;
        for (int d = 0; d < m->ndim; d++)
            m->tot_all[d] += (double)cl->req.v[d];
        place_n(m, podrecv[i], ps->cls, ps->level, &pod, 1, SV_NONE);
        xa = &m->bins[a];
    }
    sv_pool *p = &m->pools[xa->pool];
    if (p->nodes_left != INT64_MAX)
        p->nodes_left++;
    m->nnew--;
    xa->npods = 0;
    xa->dead = true;
    return true;
}

/* Tailor's last step: claims, least filled first, are emptied into the
 * slack of the others when that makes the plan cheaper (empty_claim).
 * Bounded: at most SV_EMPTY_TRIES claims are tried. */
#define SV_EMPTY_TRIES 4096
static void empty_claims(sv_model *m)
{
    int n = 0;
    int *order = tlr_arena_alloc(m->ar, ((size_t)m->nbins + 1) * sizeof(int));
    double *fill = tlr_arena_calloc(m->ar, (size_t)m->nbins + 1, sizeof(double));
    for (int b = m->nexisting; b < m->nbins; b++) {
        sv_bin *x = &m->bins[b];
        if (x->kind != SV_BIN_NEW || x->dead || !x->npods || x->target < 0)
            continue;
        fill[b] = claim_fill(m, x);
        order[n++] = b;
    }
    qsort_r(order, (size_t)n, sizeof(int), fill_cmp, fill);
    int maxp = 1;
    for (int i = 0; i < n; i++)
        if (m->bins[order[i]].npods > maxp)
            maxp = m->bins[order[i]].npods;
    int *recv = tlr_arena_alloc(m->ar, (size_t)maxp * sizeof(int));
    int *podrecv = tlr_arena_alloc(m->ar, (size_t)maxp * sizeof(int));
    uint64_t *candsave = tlr_arena_alloc(m->ar, (size_t)maxp * (size_t)(m->pwords_max + SV_MAXTMV) *
                                         sizeof(uint64_t));
    sv_res *usedsave = tlr_arena_alloc(m->ar, (size_t)maxp * sizeof(sv_res));
    double *costsave = tlr_arena_alloc(m->ar, (size_t)maxp * sizeof(double));
    uint32_t *hopeless = tlr_arena_calloc(m->ar, (size_t)m->nclasses + 1, sizeof(uint32_t));
    for (int i = 0; i < n && i < SV_EMPTY_TRIES && !timed_out(m); i++) {
        sv_bin *x = &m->bins[order[i]];
        if (x->dead || !x->npods || x->npods > maxp)
            continue;
        empty_claim(m, order[i], recv, podrecv, candsave, usedsave, costsave, hopeless);
    }
}

/* ---- entry ------------------------------------------------------------ */

/* Class cl's turn is over: what it left is no longer "demand to come". */
static void demand_done(sv_model *m, const sv_class *cl)
{
    for (int d = 0; d < m->ndim; d++)
        m->tot_done[d] += (double)cl->req.v[d] * cl->left;
}

/* Most expensive pods first: they decide which nodes are bought; the
 * cheap ones fill what is left.  Ties: larger first, then request order. */
static int unit_cmp(const void *a, const void *b, void *arg)
{
    const sv_model *m = arg;
    const sv_class *x = &m->classes[*(const int *)a], *y = &m->classes[*(const int *)b];
    double ux = x->bad ? 0 : x->unit, uy = y->bad ? 0 : y->unit;
    if (ux != uy)
        return ux > uy ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

void sv_place_begin(sv_model *m)
{
    for (int c = 0; c < m->nclasses; c++) {
        sv_class *cl = &m->classes[c];
        cl->left = cl->npods;
        cl->host_cap = class_host_cap(m, cl);
        cl->fail = tlr_arena_calloc(m->ar, (size_t)m->npools + 1, sizeof(char *));
    }
    bins_nodes(m);
    bins_inflight(m);
    m->nexisting = m->nbins;
}

void sv_place_all(sv_model *m)
{
    sv_place_begin(m);
    if (m->strategy == TLR_SOLVE_KARPENTER) {
        karpenter_all(m);
    } else if (m->strategy == TLR_SOLVE_FFD) {
        sv_ffd_all(m);
    } else {
        class_units(m);
        for (int c = 0; c < m->nclasses; c++)
            if (!m->classes[c].bad && m->unit_hint && m->unit_hint[c] > 0)
                m->classes[c].unit = m->unit_hint[c];
        qsort_r(m->class_order, (size_t)m->nclasses, sizeof(int), unit_cmp, m);
        /* The demand still to place (choose_target): every class's pods
         * left, less those of the classes already behind (tot_done). */
        memset(m->tot_all, 0, sizeof(m->tot_all));
        memset(m->tot_done, 0, sizeof(m->tot_done));
        for (int c = 0; c < m->nclasses; c++)
            if (!m->classes[c].bad)
                for (int d = 0; d < m->ndim; d++)
                    m->tot_all[d] += (double)m->classes[c].req.v[d] * m->classes[c].left;
        if (m->seed && m->allow_new && m->nremoved == 0)
            sv_seed(m);
        for (int pos = 0; pos < m->nclasses; pos++) {
            sv_class *cl = &m->classes[m->class_order[pos]];
            if (cl->bad) {
                for (int i = 0; i < cl->npods; i++)
                    if (m->pods[cl->pods[i]].bin == SV_NONE)
                        m->pods[cl->pods[i]].err = TLR_E_UNSCHEDULABLE;
                continue;
            }
            tailor_class(m, pos);
            demand_done(m, cl);
            if (m->timed_out)
                break;
        }
        /* A second pass: pods whose affinity targets were placed later. */
        memset(m->tot_done, 0, sizeof(m->tot_done));
        for (int pos = 0; pos < m->nclasses && !m->timed_out; pos++) {
            sv_class *cl = &m->classes[m->class_order[pos]];
            if (cl->left > 0 && !cl->bad) {
                for (int i = 0; i < cl->npods; i++)
                    m->pods[cl->pods[i]].err = TLR_OK;
                tailor_class(m, pos);
            }
            if (!cl->bad)
                demand_done(m, cl);
        }
        if (!m->timed_out && m->allow_new && m->nremoved == 0)
            empty_claims(m);
    }
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].bin == SV_NONE && m->pods[i].err == TLR_OK)
            m->pods[i].err = m->timed_out ? TLR_E_TIMEOUT : TLR_E_UNSCHEDULABLE;
}
