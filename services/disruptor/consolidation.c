/* consolidation.c - delete or replace underused nodes (methods.h).
 *
 * Candidates: nodes that pass every blocker check (candidates.h), sorted
 * by Karpenter's savings ratio (price / (1 + disruption cost)), best
 * first, each pool's Underutilized budget applied in that order.
 *
 * Multi-node (Karpenter's firstNConsolidationOption): the first
 * max_candidates candidates form a prefix, and a binary search over its
 * length looks for the longest prefix (at least two nodes) whose removal
 * is worth it -- every pod fits on the other nodes (delete), or on them
 * plus one new node cheaper than the prefix (replace); of the valid
 * probes the search meets, the one that saves the most wins.  Unlike
 * Karpenter, when that search finds no delete, the instance types its
 * probes were offered for the replacement price every other prefix
 * length, and the two lengths that look best are probed too: a
 * replacement's saving jumps with the few sizes a new node comes in, so
 * the binary search alone settles on short replacements (4 nodes by one
 * where 24 by one save as much per node) and a cluster takes several
 * times the passes to converge (bench-disruptor converge).  Each probe is one
 * Simulate on the C solver, sent reduced (sim.h), so a probe costs
 * milliseconds at thousands of nodes where Karpenter's full re-simulation
 * costs seconds; a resource check in the disruptor skips probes that
 * cannot succeed (the pods' sum exceeds the free room plus the largest
 * instance type; or, per node and pod slot, what the other nodes can take
 * leaves more than one new node of the largest type holds: screen.h)
 * without a round trip.
 *
 * Single-node: the candidates in order, one Simulate each, until one is
 * worth it or time_budget_ms is spent.  A candidate whose pods provably
 * need new nodes costing more than min_savings allows (screen.h: the
 * other nodes' free room per resource, the catalog's lowest price per
 * unit) is passed over without one: on a converged cluster that is
 * nearly every candidate, and the pass that finds nothing to do is then
 * as quick as one that does.  A single node may also be
 * replaced by up to DS_SPLIT_MAX cheaper nodes (a split; Karpenter only
 * replaces N by 1): a big node left holding few pods is otherwise stuck,
 * since no one node both fits them and costs less.  Every step still has
 * to save min_savings, so cost only goes down and nothing cycles.
 *
 * No churn:
 *   - a replacement must cost at most (1 - min_savings) of what it
 *     replaces (default 10%, docs/disruptor.md says why); options above
 *     that price are dropped from the replacement, and none left = no;
 *   - it never is the same instance type as one it replaces: those
 *     options are dropped too (Karpenter's filterOutSameInstanceType);
 *   - consolidateAfter keeps recently changed nodes out (candidates.h);
 *   - a replacement that may be spot is made spot only (pin_spot), and
 *     spot nodes are replaced by spot only when spot_to_spot allows it
 *     (a single one only with DS_SPOT_MIN_TYPES cheaper types);
 *   - the controller validates the decision again before acting.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "methods.h"
#include "screen.h"
#include "tlr_alloc.h"
#include "tlr_kubeobj.h"
#include "tlr_labels.h"
#include "tlr_time.h"

#define UNDER TAILOR__V1__DISRUPTION_REASON__DISRUPTION_REASON_UNDERUTILIZED
#define SPOT TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
/* One node may be replaced by at most this many cheaper ones (a split). */
#define DS_SPLIT_MAX 4

typedef struct scored {
    ds_vnode *x;
    double ratio;
} scored;

static int by_ratio(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->ratio != y->ratio)
        return x->ratio > y->ratio ? -1 : 1;
    return strcmp(x->x->node->name, y->x->node->name);
}

size_t ds_consolidation_candidates(ds_mctx *m, ds_vnode ***out)
{
    const ds_view *v = m->v;
    scored *s = tlr_calloc(v->nnodes + 1, sizeof(*s));
    size_t n = 0;
    for (size_t i = 0; i < v->nnodes; i++) {
        ds_vnode *x = &v->nodes[i];
        ds_blockers bl;
        if (!x->moving || !ds_candidate_check(v, x, DS_USE_CONSOLIDATION, &bl))
            continue;   /* empty nodes are emptiness's */
        s[n++] = (scored){ x, ds_savings_ratio(x) };
    }
    qsort(s, n, sizeof(*s), by_ratio);
    ds_vnode **c = tlr_calloc(n + 1, sizeof(*c));
    size_t k = 0;
    /* each pool's budget, in candidate order (a local tally: the real
     * budget is taken only by the decision made) */
    int *used = tlr_calloc(v->cs->n_nodepools + 1, sizeof(int));
    for (size_t i = 0; i < n; i++) {
        const char *pool = s[i].x->node->nodepool;
        size_t pi = 0;
        while (pi < v->cs->n_nodepools && strcmp(v->cs->nodepools[pi]->name, pool))
            pi++;
        if (pi == v->cs->n_nodepools || used[pi] >= ds_budgets_left(m->b, pool, UNDER))
            continue;
        used[pi]++;
        c[k++] = s[i].x;
    }
    free(used);
    free(s);
    *out = c;
    return k;
}

/* A necessary condition, without a round trip: the moving pods' requests
 * fit in the free room of the nodes that stay, plus (replace allowed) the
 * largest type of the catalog. */
static bool could_fit(const ds_mctx *m, ds_vnode *const *set, size_t n)
{
    const ds_view *v = m->v;
    int64_t need_c = 0, need_m = 0, free_c = 0, free_m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < set[i]->node->n_pods; j++) {
            const Tailor__V1__Pod *p = set[i]->node->pods[j];
            if (ds_pod_moves(p) && p->requests) {
                need_c += p->requests->cpu_millis;
                need_m += p->requests->memory_bytes;
            }
        }
    for (size_t i = 0; i < v->nnodes; i++) {
        const ds_vnode *x = &v->nodes[i];
        const Tailor__V1__Node *nd = x->node;
        bool in = false;
        for (size_t k = 0; k < n && !in; k++)
            in = set[k] == x;
        if (in || x->disrupting || !x->initialized || !nd->ready || nd->unschedulable ||
            !nd->allocatable || !nd->requested)
            continue;
        int64_t fc = nd->allocatable->cpu_millis - nd->requested->cpu_millis;
        int64_t fm = nd->allocatable->memory_bytes - nd->requested->memory_bytes;
        free_c += fc > 0 ? fc : 0;
        free_m += fm > 0 ? fm : 0;
    }
    int64_t big_c = 0, big_m = 0;
    for (size_t i = 0; v->catalog && i < v->catalog->n_instance_types; i++) {
        const Tailor__V1__ResourceList *a = v->catalog->instance_types[i]->allocatable;
        if (a && a->cpu_millis > big_c)
            big_c = a->cpu_millis;
        if (a && a->memory_bytes > big_m)
            big_m = a->memory_bytes;
    }
    return need_c <= free_c + big_c && need_m <= free_m + big_m;
}

static Tailor__V1__NodeSelectorRequirement *req_in(const Tailor__V1__NodeClaim *nc, const char *key)
{
    for (size_t r = 0; r < nc->n_requirements; r++) {
        Tailor__V1__NodeSelectorRequirement *q = nc->requirements[r];
        if (!strcmp(q->key, key) && q->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN)
            return q;
    }
    return NULL;
}

/* Keep the claim's instance-type requirement in step with its options. */
static void sync_types(Tailor__V1__NodeClaim *nc)
{
    Tailor__V1__NodeSelectorRequirement *q = req_in(nc, TLR_LABEL_INSTANCE_TYPE);
    if (!q)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < q->n_values; i++) {
        bool keep = false;
        for (size_t j = 0; j < nc->n_instance_type_options && !keep; j++)
            keep = !strcmp(nc->instance_type_options[j]->name, q->values[i]);
        if (keep)
            q->values[kept++] = q->values[i];
        else
            free(q->values[i]);
    }
    q->n_values = kept;
}

/* Keep the first n options. */
static void keep_options(Tailor__V1__NodeClaim *nc, size_t n)
{
    for (size_t i = n; i < nc->n_instance_type_options; i++)
        protobuf_c_message_free_unpacked(&nc->instance_type_options[i]->base, NULL);
    if (n < nc->n_instance_type_options)
        nc->n_instance_type_options = n;
    sync_types(nc);
}

/* Drop from the replacement every option of a candidate's type or dearer
 * than the ceiling; keep its instance-type requirement in step. */
static double trim_options(Tailor__V1__NodeClaim *nc, const ds_cmd *c, double ceiling)
{
    size_t k = 0;
    for (size_t i = 0; i < nc->n_instance_type_options; i++) {
        Tailor__V1__InstanceTypeOption *o = nc->instance_type_options[i];
        bool same = false;
        for (size_t j = 0; j < c->n && !same; j++)
            same = !strcmp(c->c[j].type, o->name);
        if (same || o->price_per_hour > ceiling)
            protobuf_c_message_free_unpacked(&o->base, NULL);
        else
            nc->instance_type_options[k++] = o;
    }
    nc->n_instance_type_options = k;
    sync_types(nc);
    return k ? nc->instance_type_options[0]->price_per_hour : -1;
}

static int by_price(const void *a, const void *b)
{
    const Tailor__V1__InstanceTypeOption *x = *(Tailor__V1__InstanceTypeOption *const *)a;
    const Tailor__V1__InstanceTypeOption *y = *(Tailor__V1__InstanceTypeOption *const *)b;
    if (x->price_per_hour != y->price_per_hour)
        return x->price_per_hour < y->price_per_hour ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A replacement allowed both spot and on-demand was priced at its
 * cheapest offering, spot where there is one; the launcher, allowed both,
 * would fall back to on-demand on a spot shortage and buy a node dearer
 * than the ones it replaces.  Make it a spot claim (Karpenter does the
 * same): each option priced at its cheapest available spot offering in
 * the claim's zones, options without one dropped, sorted by price.  A
 * spot shortage then fails the launch and the decision is undone.
 * "Allowed" is what the launcher reads (tlr_nodeclaim_allows).  Returns
 * whether nc is now spot only. */
static bool pin_spot(const Tailor__V1__Catalog *cat, Tailor__V1__NodeClaim *nc)
{
    if (!tlr_nodeclaim_allows(nc, TLR_LABEL_CAPACITY_TYPE, "spot"))
        return false;
    if (!tlr_nodeclaim_allows(nc, TLR_LABEL_CAPACITY_TYPE, "on-demand") &&
        !tlr_nodeclaim_allows(nc, TLR_LABEL_CAPACITY_TYPE, "reserved"))
        return true;
    Tailor__V1__NodeSelectorRequirement *ct = req_in(nc, TLR_LABEL_CAPACITY_TYPE);
    size_t k = 0;
    for (size_t i = 0; i < nc->n_instance_type_options; i++) {
        Tailor__V1__InstanceTypeOption *o = nc->instance_type_options[i];
        const Tailor__V1__InstanceType *it = ds_catalog_type(cat, o->name);
        double best = -1;
        for (size_t q = 0; it && q < it->n_offerings; q++) {
            const Tailor__V1__Offering *of = it->offerings[q];
            if (of->available && of->capacity_type == SPOT &&
                tlr_nodeclaim_allows(nc, TLR_LABEL_ZONE, of->zone) &&
                (best < 0 || of->price_per_hour < best))
                best = of->price_per_hour;
        }
        if (best < 0) {
            protobuf_c_message_free_unpacked(&o->base, NULL);
            continue;
        }
        o->price_per_hour = best;
        nc->instance_type_options[k++] = o;
    }
    nc->n_instance_type_options = k;
    if (k > 1)
        qsort(nc->instance_type_options, k, sizeof(*nc->instance_type_options), by_price);
    sync_types(nc);
    if (!ct) {
        nc->requirements = tlr_realloc(nc->requirements, (nc->n_requirements + 1) * sizeof(*nc->requirements));
        ct = tlr_malloc(sizeof(*ct));
        tailor__v1__node_selector_requirement__init(ct);
        ct->key = tlr_strdup(TLR_LABEL_CAPACITY_TYPE);
        ct->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
        nc->requirements[nc->n_requirements++] = ct;
    } else {
        for (size_t i = 0; i < ct->n_values; i++)
            free(ct->values[i]);
        ct->n_values = 0;
    }
    ct->values = tlr_realloc(ct->values, sizeof(*ct->values));
    ct->values[0] = tlr_strdup("spot");
    ct->n_values = 1;
    return true;
}

/* The instance types the Simulates offered this pass for one node
 * replacing a prefix (what the pool and the pods allow), each at its
 * price there: what replace_estimate() prices prefixes with. */
typedef struct offered {
    char *name;                                  /* owned */
    double price;
    const Tailor__V1__ResourceList *alloc;       /* borrowed from the catalog */
} offered;

typedef struct offers {
    offered *v;                                  /* owned */
    size_t n, cap;
} offers;

static void offers_note(offers *o, const Tailor__V1__Catalog *cat, const Tailor__V1__NodeClaim *nc)
{
    for (size_t i = 0; i < nc->n_instance_type_options; i++) {
        const Tailor__V1__InstanceTypeOption *t = nc->instance_type_options[i];
        const Tailor__V1__InstanceType *it = ds_catalog_type(cat, t->name);
        if (!it || !it->allocatable)
            continue;
        size_t k = 0;
        while (k < o->n && strcmp(o->v[k].name, t->name))
            k++;
        if (k < o->n) {
            if (t->price_per_hour < o->v[k].price)
                o->v[k].price = t->price_per_hour;
            continue;
        }
        TLR_GROW(o->v, o->cap, o->n + 1);
        o->v[o->n++] = (offered){ tlr_strdup(t->name), t->price_per_hour, it->allocatable };
    }
}

static void offers_clear(offers *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->v[i].name);
    free(o->v);
    memset(o, 0, sizeof(*o));
}

/* ds_consolidation_evaluate, and whether the pods fit at all (*fits: on
 * the other nodes plus at most the replacements allowed, worth it or
 * not); a single replacement's options go to book (may be NULL).  sc (may
 * be NULL) proves some sets cannot fit without a Simulate, which would
 * have answered the same (infeasible: nothing for book). */
static ds_cmd *evaluate(ds_mctx *m, const ds_screen *sc, ds_vnode *const *set, size_t n, bool *fits,
                        offers *book, char *why, size_t len)
{
    *fits = false;
    /* N -> 1 as Karpenter; one node may also be split into a few cheaper */
    int maxr = n == 1 ? DS_SPLIT_MAX : 1;
    if (!could_fit(m, set, n)) {
        snprintf(why, len, "the pods need more room than the other nodes and the largest type "
                 "together have");
        return NULL;
    }
    if (sc && !ds_screen_may_fit(sc, set, n, maxr)) {
        snprintf(why, len, "the pods need more room than the other nodes and %d new node%s of the "
                 "largest type together have", maxr, maxr == 1 ? "" : "s");
        return NULL;
    }
    const char **names = tlr_calloc(n + 1, sizeof(*names));
    for (size_t i = 0; i < n; i++)
        names[i] = set[i]->node->name;
    ds_sim_result r;
    int rc = ds_sim_run(m->sim, names, n, true, maxr, &r);
    free(names);
    if (rc || !r.feasible || r.nreplacements > (size_t)maxr) {
        if (rc || !r.feasible)
            snprintf(why, len, "%s", r.why);
        else
            snprintf(why, len, "the pods would need %zu new nodes", r.nreplacements);
        ds_sim_result_clear(m->sim, &r);
        return NULL;
    }
    *fits = true;
    if (book && r.nreplacements == 1)
        offers_note(book, m->v->catalog, r.resp->replacements[0]);
    bool replace = r.nreplacements > 0;
    ds_cmd *c = ds_cmd_new(replace ? TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_REPLACE
                                   : TAILOR__V1__DISRUPTION_METHOD__DISRUPTION_METHOD_CONSOLIDATION_DELETE,
                           UNDER, m->v->now_ms, (*m->seq)++);
    for (size_t i = 0; i < n; i++)
        ds_cmd_add(c, set[i]);
    ds_cmd_set_replacements(c, replace ? r.resp : NULL, 0);
    if (replace) {
        /* capacity types: a replacement that may be spot is made spot;
         * spot nodes replaced by spot only when allowed (methods.h) */
        bool all_spot = true, spot_repl = false, spot[DS_SPLIT_MAX] = { false };
        for (size_t j = 0; j < c->n; j++)
            all_spot = all_spot && c->c[j].ct == SPOT;
        for (size_t k = 0; k < c->nrepl; k++)   /* nrepl <= maxr <= DS_SPLIT_MAX */
            spot_repl = (spot[k] = pin_spot(m->v->catalog, c->repl[k])) || spot_repl;
        bool s2s = all_spot && spot_repl;
        if (s2s && !m->spot_to_spot) {
            snprintf(why, len, "spot-to-spot consolidation is off: spot node%s not replaced by spot "
                     "(--spot-to-spot-consolidation)", n == 1 ? "" : "s");
            ds_cmd_free(c);
            ds_sim_result_clear(m->sim, &r);
            return NULL;
        }
        double ceiling = c->before * (1.0 - m->min_savings);
        /* each replacement without the candidates' types; the total must
         * save min_savings.  The cheapest other total, for the message. */
        double after = 0, other_total = 0;
        bool none = false;
        for (size_t k = 0; k < c->nrepl; k++) {
            const Tailor__V1__InstanceTypeOption *other = NULL;
            for (size_t i = 0; i < c->repl[k]->n_instance_type_options && !other; i++) {
                const Tailor__V1__InstanceTypeOption *o = c->repl[k]->instance_type_options[i];
                bool same = false;
                for (size_t j = 0; j < c->n && !same; j++)
                    same = !strcmp(c->c[j].type, o->name);
                if (!same)
                    other = o;
            }
            other_total += other ? other->price_per_hour : 0;
            double a = trim_options(c->repl[k], c, ceiling);
            if (a < 0)
                none = true;
            after += a;
        }
        if (none || after > ceiling + 1e-9) {
            if (none && other_total == 0)
                snprintf(why, len, "no replacement saves %.0f%%: only the same type fits",
                         m->min_savings * 100);
            else
                snprintf(why, len, "no replacement saves %.0f%%: the cheapest other plan that fits "
                         "(%zu node%s) costs $%.4f/h vs $%.4f/h now", m->min_savings * 100, c->nrepl,
                         c->nrepl == 1 ? "" : "s", other_total, c->before);
            ds_cmd_free(c);
            ds_sim_result_clear(m->sim, &r);
            return NULL;
        }
        /* A single spot node: only with enough cheaper types, and then
         * only the cheapest of them, so that repeated replacements do not
         * walk down the spot price ladder into the pools most likely to
         * be interrupted (Karpenter's rule, docs/disruptor.md). */
        for (size_t k = 0; s2s && n == 1 && k < c->nrepl; k++) {
            Tailor__V1__NodeClaim *q = c->repl[k];
            if (!spot[k])
                continue;
            if (q->n_instance_type_options < DS_SPOT_MIN_TYPES) {
                snprintf(why, len, "spot-to-spot consolidation needs %d cheaper instance types, got "
                         "%zu", DS_SPOT_MIN_TYPES, q->n_instance_type_options);
                ds_cmd_free(c);
                ds_sim_result_clear(m->sim, &r);
                return NULL;
            }
            keep_options(q, DS_SPOT_MIN_TYPES);
        }
        c->after = after;
        c->savings = c->before - after;
        char types[256] = "";
        for (size_t k = 0; k < c->nrepl && k < 4; k++)
            snprintf(types + strlen(types), sizeof(types) - strlen(types), "%s%s", k ? ", " : "",
                     c->repl[k]->instance_type_options[0]->name);
        snprintf(c->why, sizeof(c->why), "replace %zu node%s ($%.4f/h) by %s%s%s ($%.4f/h): saves "
                 "$%.4f/h (%.0f%%)", n, n == 1 ? "" : "s", c->before,
                 c->nrepl == 1 ? "one " : "", c->nrepl == 1 ? "" : "nodes ", types, after,
                 c->savings, 100.0 * c->savings / c->before);
    } else {
        c->after = 0;
        c->savings = c->before;
        snprintf(c->why, sizeof(c->why), "delete %zu node%s ($%.4f/h): their pods fit on the "
                 "other nodes", n, n == 1 ? "" : "s", c->before);
    }
    ds_sim_result_clear(m->sim, &r);
    return c;
}

ds_cmd *ds_consolidation_evaluate(ds_mctx *m, ds_vnode *const *set, size_t n, char *why, size_t len)
{
    bool fits;
    return evaluate(m, NULL, set, n, &fits, NULL, why, len);
}

/* ---- the in-process estimate ------------------------------------------- */

typedef struct room {
    int64_t cpu, mem, pods;
} room;

/* a max-heap of rooms by free cpu */
static void sift_down(room *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l].cpu > h[m].cpu)
            m = l;
        if (r < n && h[r].cpu > h[m].cpu)
            m = r;
        if (m == i)
            return;
        room t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static int by_cpu_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Do the moving pods of cands[0..k) fit in the free room of the nodes
 * that stay (rank[i] >= k: not a candidate, or a later one)?  Largest pod
 * first into the roomiest node (a max-heap by cpu): a resource-only
 * estimate, which the solver then checks. */
static bool greedy_fits(const ds_mctx *m, ds_vnode *const *cands, size_t k, const size_t *rank)
{
    const ds_view *v = m->v;
    room *h = tlr_calloc(v->nnodes + 1, sizeof(*h));
    size_t nh = 0, np = 0;
    for (size_t i = 0; i < v->nnodes; i++) {
        const ds_vnode *x = &v->nodes[i];
        const Tailor__V1__Node *nd = x->node;
        if (rank[i] < k || x->disrupting || !x->initialized || !nd->ready || nd->unschedulable ||
            !nd->allocatable || !nd->requested)
            continue;
        h[nh++] = (room){ nd->allocatable->cpu_millis - nd->requested->cpu_millis,
                          nd->allocatable->memory_bytes - nd->requested->memory_bytes,
                          (nd->allocatable->pods ? nd->allocatable->pods : 110) - nd->requested->pods };
    }
    for (size_t i = 0; i < k; i++)
        np += cands[i]->moving;
    int64_t (*pods)[2] = tlr_calloc(np + 1, sizeof(*pods));
    np = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < cands[i]->node->n_pods; j++) {
            const Tailor__V1__Pod *p = cands[i]->node->pods[j];
            if (ds_pod_moves(p) && p->requests) {
                pods[np][0] = p->requests->cpu_millis;
                pods[np++][1] = p->requests->memory_bytes;
            }
        }
    qsort(pods, np, sizeof(*pods), by_cpu_desc);
    for (size_t i = nh; i-- > 0;)
        sift_down(h, nh, i);
    bool ok = true;
    for (size_t i = 0; i < np; i++) {
        if (!nh || h[0].cpu < pods[i][0] || h[0].mem < pods[i][1] || h[0].pods < 1) {
            ok = false;
            break;
        }
        h[0].cpu -= pods[i][0];
        h[0].mem -= pods[i][1];
        h[0].pods--;
        sift_down(h, nh, 0);
    }
    free(pods);
    free(h);
    return ok;
}

/* What a probe of a prefix found. */
enum { PROBE_NONE = 0, PROBE_NO_FIT, PROBE_FITS, PROBE_WORTH };

/* One probe of the prefix cands[0..k), remembered by length in seen[k]
 * so that no length is simulated twice; the command, when worth it,
 * replaces *best if it saves more.  Returns seen[k]. */
static unsigned char probe(ds_mctx *m, const ds_screen *sc, ds_vnode **cands, size_t k, unsigned char *seen,
                           offers *book, ds_cmd **best)
{
    if (seen[k])
        return seen[k];
    char why[512];
    bool fits;
    ds_cmd *c = evaluate(m, sc, cands, k, &fits, book, why, sizeof(why));
    seen[k] = c ? PROBE_WORTH : fits ? PROBE_FITS : PROBE_NO_FIT;
    if (c && (!*best || c->savings > (*best)->savings)) {
        ds_cmd_free(*best);
        *best = c;
    } else {
        ds_cmd_free(c);
    }
    return seen[k];
}

/* The prefix length (not yet probed) whose replacement by one node of
 * an offered type would save the most, more than floor and at least
 * min_savings: by resources alone (the moving pods' requests summed
 * against the type's allocatable, the other nodes' free room not
 * counted), never of a type in the prefix.  0 when none. */
static size_t replace_estimate(const ds_mctx *m, ds_vnode **cands, size_t n, const unsigned char *seen,
                               const offers *book, double floor)
{
    size_t bestk = 0;
    double best = floor, price = 0;
    int64_t cpu = 0, mem = 0, pods = 0;
    for (size_t k = 1; k <= n; k++) {
        const Tailor__V1__Node *nd = cands[k - 1]->node;
        price += cands[k - 1]->price;
        for (size_t j = 0; j < nd->n_pods; j++) {
            const Tailor__V1__Pod *p = nd->pods[j];
            if (!ds_pod_moves(p))
                continue;
            cpu += p->requests ? p->requests->cpu_millis : 0;
            mem += p->requests ? p->requests->memory_bytes : 0;
            pods++;
        }
        if (k < 2 || seen[k])
            continue;
        for (size_t t = 0; t < book->n; t++) {
            const offered *o = &book->v[t];
            double save = price - o->price;
            if (save <= best || save < m->min_savings * price || o->alloc->cpu_millis < cpu ||
                o->alloc->memory_bytes < mem || (o->alloc->pods && o->alloc->pods < pods))
                continue;
            bool same = false;
            for (size_t i = 0; i < k && !same; i++)
                same = !strcmp(cands[i]->node->instance_type, o->name);
            if (!same) {
                best = save;
                bestk = k;
            }
        }
    }
    return bestk;
}

/* The screen for this pass, or NULL where it must not be used: it reads
 * the pods a reduced Simulate sends (screen.h).  Owned: ds_screen_free. */
static ds_screen *screen_of(const ds_mctx *m)
{
    ds_screen *sc = NULL;
    if (!m->sim->no_reduce && !m->v->affinity && !m->sim->full_pods)
        ds_screen_create(m->v, &sc);
    return sc;
}

static ds_cmd *multi_node(ds_mctx *m, ds_vnode **cands, size_t n)
{
    size_t max = m->max_candidates > 0 ? (size_t)m->max_candidates : 100;
    if (n > max)
        n = max;
    if (n < 2)
        return NULL;
    /* First the estimate: the longest prefix whose pods fit in the room
     * of the nodes that stay, found in-process (a binary search over a
     * greedy packing, no round trip), then one Simulate to confirm it.
     * Deleting that many nodes is usually the best this pass can do. */
    size_t *rank = tlr_calloc(m->v->nnodes + 1, sizeof(*rank));
    for (size_t i = 0; i < m->v->nnodes; i++)
        rank[i] = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        rank[cands[i] - m->v->nodes] = i;
    size_t est = 0, glo = 2, ghi = n;
    while (glo <= ghi) {
        size_t mid = (glo + ghi) / 2;
        if (greedy_fits(m, cands, mid, rank)) {
            est = mid;
            glo = mid + 1;
        } else {
            ghi = mid - 1;
        }
    }
    free(rank);
    unsigned char *seen = tlr_calloc(n + 1, 1);
    offers book = { 0 };
    ds_cmd *best = NULL;
    ds_screen *sc = screen_of(m);
    if (est >= 2) {
        probe(m, sc, cands, est, seen, &book, &best);
        if (best)
            goto out;
    }
    /* Then Karpenter's search, which also finds N -> 1 replacements.  The
     * prefix length in [2, n]: the longest worth doing (binary search); of
     * the valid probes it meets, the one saving the most is kept (a
     * shorter delete can beat a longer replace). */
    size_t lo = 2, hi = n;
    while (lo <= hi) {
        size_t mid = (lo + hi) / 2;
        if (probe(m, sc, cands, mid, seen, &book, &best) == PROBE_WORTH)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    /* A replacement's saving is not monotone in the prefix length: the new
     * node is one of a few sizes, and N nodes' pods that just miss a size
     * need the next, which may cost as much as the N nodes.  The search
     * above turns back at such a prefix and settles on a short one (4
     * nodes by one where 24 by the largest size of the cheapest family
     * save as much per node), and convergence takes several times the
     * passes.  So when it found no delete, the types the probes were
     * offered price every other prefix length (replace_estimate), and the
     * two that look best are probed too; the best of all wins. */
    for (int i = 0; i < 2 && (!best || best->nrepl); i++) {
        size_t k = replace_estimate(m, cands, n, seen, &book, best ? best->savings : 0);
        if (!k)
            break;
        probe(m, sc, cands, k, seen, &book, &best);
    }
out:
    ds_screen_free(sc);
    offers_clear(&book);
    free(seen);
    return best;
}

static ds_cmd *single_node(ds_mctx *m, ds_vnode **cands, size_t n)
{
    int64_t t0 = tlr_mono_ms(), budget = m->time_budget_ms > 0 ? m->time_budget_ms : 5000;
    char why[512];
    ds_screen *sc = screen_of(m);
    ds_cmd *c = NULL;
    for (size_t i = 0; i < n && !c; i++) {
        if (tlr_mono_ms() - t0 > budget) {
            m->single_timed_out = true;
            break;
        }
        /* evaluate() refuses a replacement above the ceiling, and any
         * replacement costs at least the floor */
        double ceiling = cands[i]->price * (1.0 - m->min_savings) + 1e-9;
        if (sc && (!ds_screen_may_fit(sc, &cands[i], 1, DS_SPLIT_MAX) ||
                   ds_screen_floor(sc, &cands[i], 1) > ceiling * (1 + 1e-9))) {
            m->single_screened++;
            continue;
        }
        c = ds_consolidation_evaluate(m, &cands[i], 1, why, sizeof(why));
    }
    ds_screen_free(sc);
    return c;
}

ds_cmd *ds_consolidation_decide(ds_mctx *m)
{
    ds_vnode **cands = NULL;
    size_t n = ds_consolidation_candidates(m, &cands);
    int calls0 = m->sim->calls;
    m->multi_ms = m->single_ms = -1;
    m->single_timed_out = false;
    m->single_screened = 0;
    int64_t t0 = tlr_mono_ms();
    ds_cmd *c = multi_node(m, cands, n);
    m->multi_ms = tlr_mono_ms() - t0;
    if (!c) {
        t0 = tlr_mono_ms();
        c = single_node(m, cands, n);
        m->single_ms = tlr_mono_ms() - t0;
    }
    if (c) {
        c->sim_calls = m->sim->calls - calls0;
        for (size_t i = 0; i < c->n; i++)
            ds_budgets_take(m->b, c->c[i].pool, 1);
    }
    free(cands);
    return c;
}
