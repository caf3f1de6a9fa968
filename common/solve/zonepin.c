/* zonepin.c - zone pre-assignment: a candidate plan in which each group of
 * pods sharing a zone topology spread is split over its zones up front.
 *
 * Why: tailor places a spread group pod by pod (place.c, topo_cap), each
 * pod going wherever the skew lets it at that moment.  Over many services
 * that leaves each zone with its own half-filled nodes of every mix, and
 * the greedy never sees that putting the group's remainder in the zone
 * that is cheapest for its shape would save a node.  Deciding the split
 * first and then packing each zone's pods freely is, on the cluster-like
 * bench cases, markedly cheaper.
 *
 * What: on a model compiled from the request (nothing placed; the bins of
 * existing capacity are built so the groups hold the counts of matching
 * pods already running, or planned on in-flight claims, per zone), the
 * classes are gathered into "units": the classes whose one zone spread
 * has the same group (selector, namespace, matchLabelKeys), maxSkew,
 * minDomains, whenUnsatisfiable and the same domains (the zones their
 * required node terms can use, sv_level_zones).  For each unit the pods
 * are dealt out one at a time, as the scheduler would admit them: a pod
 * may go to zone z when count(z) + 1 - min <= maxSkew (min over the
 * domains, 0 while fewer domains exist than minDomains), and takes the
 * cheapest such zone for its shape (price per pod of the best offering in
 * that zone, packed alone), ties to the least filled then the first zone.
 * With maxSkew 1 over three equal zones that is round-robin, the
 * remainder going to the cheapest zone.  Each dealt pod becomes a copy
 * (in the model's arena; the request is never touched) without its zone
 * spread and with a volume requirement zone In [z] (volume requirements
 * are ANDed with every node term), and the ordinary tailor model runs on
 * the copies.
 *
 * Why the plan holds for the original request: every pinned pod lands in
 * the zone it was dealt, and the deal is a legal admission order, so the
 * final counts satisfy the spread incrementally (plancheck.c's condition).
 * That needs three things, checked here: every pending pod the group's
 * selector matches belongs to the unit (an unconstrained matching pod
 * could pile up anywhere); a unit is pinned whole or not at all (a pod
 * left with its spread would be judged against partial counts); and
 * every pinned pod is placed (sv_zone_pin_held: a pinned pod left out
 * would leave a zone short).  Units this cannot reason about are left
 * alone: a class with two zone spreads, a zone pod (anti-)affinity,
 * nodeAffinityPolicy Ignore or nodeTaintsPolicy Honor (domains beyond or
 * short of the zones the pod may use), several ORed required node terms,
 * a selector that does not match the pod itself, or a class no NodePool
 * can take.
 *
 * Cost: one more compile and two more tailor placements (solve.c runs the
 * pinned pods plain and re-priced), only when some pending pod has a zone
 * spread (sv_zone_spread_any); solve.c keeps a pinned plan only when it is
 * better.
 */
#include <math.h>
#include <string.h>

#include "solve_internal.h"
#include "tlr_labels.h"

#define ZP_NONE (-1)   /* class in no unit */
#define ZP_BAD  (-2)   /* class that must not be pinned */

typedef struct zp_unit {
    int group;
    int max_skew, min_domains;
    bool soft;
    uint32_t zones;
    bool void_;        /* left alone */
} zp_unit;

bool sv_zone_spread_any(const Tailor__V1__Pod *const *pods, size_t npods)
{
    for (size_t i = 0; i < npods; i++)
        for (size_t j = 0; j < pods[i]->n_topology_spread_constraints; j++) {
            const char *k = pods[i]->topology_spread_constraints[j]->topology_key;
            if (k && !strcmp(k, TLR_LABEL_ZONE))
                return true;
        }
    return false;
}

/* Class c's cheapest price per pod on new capacity in zone z at level lv:
 * the best offering there of a type its pods fit on, divided by how many
 * of them the type holds (after the DaemonSets).  INFINITY: none. */
static double level_zone_price(const sv_model *m, const sv_class *c, const sv_level *lv, int z)
{
    double best = INFINITY;
    for (int pi = 0; pi < m->npools; pi++) {
        if (!lv->compat[pi])
            continue;
        const sv_pool *p = &m->pools[pi];
        for (int pt = 0; pt < p->ntypes; pt++) {
            if (!sv_bit(lv->compat[pi], pt))
                continue;
            const sv_type *t = &m->types[p->types[pt]];
            int64_t fit = INT64_MAX;
            for (int d = 0; d < m->ndim; d++) {
                if (c->req.v[d] <= 0)
                    continue;
                int64_t room = t->alloc.v[d] - (p->ds ? p->ds[pt].v[d] : 0);
                int64_t f = room > 0 ? room / c->req.v[d] : 0;
                if (f < fit)
                    fit = f;
            }
            if (fit <= 0)
                continue;
            if (fit == INT64_MAX)
                fit = 1;
            /* offers are cheapest first: the first one in z is the one */
            for (int o = 0; o < t->noffers; o++) {
                int place = t->offers[o].place;
                if (place / 4 != z || !sv_pmask_has(lv->pmask[pi], place))
                    continue;
                double v = t->offers[o].price / (double)fit;
                if (v < best)
                    best = v;
                break;
            }
        }
    }
    return best;
}

/* The class's first level (it honours the heaviest node preference when it
 * can), else its required terms alone. */
static double zone_price(sv_model *m, sv_class *c, int z)
{
    double v = level_zone_price(m, c, &c->levels[0], z);
    if (isinf(v))
        v = level_zone_price(m, c, sv_level_strict(m, c, &c->levels[0]), z);
    return v;
}

/* The unit of class c: its one zone spread's index in c->cons, or ZP_NONE
 * (no zone topology at all) / ZP_BAD (zone topology pinning cannot take). */
static int class_zone_spread(const sv_model *m, const sv_class *c)
{
    if (c->bad)
        return ZP_BAD;
    int found = ZP_NONE;
    for (int i = 0; i < c->ncons; i++) {
        const sv_cons *cn = &c->cons[i];
        if (m->groups[cn->group].tk != SV_TK_ZONE)
            continue;
        if (cn->kind != SV_C_SPREAD || found != ZP_NONE || cn->aff_ignore || cn->taints_honor ||
            !cn->self_match)
            return ZP_BAD;
        found = i;
    }
    if (found == ZP_NONE)
        return found;
    if (c->nreqterms != 1)
        return ZP_BAD;
    /* A class no pool can take would leave its pinned pods out, and with
     * them the whole pinned plan (sv_zone_pin_held): leave its unit be. */
    bool any = false;
    for (int pi = 0; pi < m->npools && !any; pi++)
        any = c->levels[0].compat[pi] != NULL;
    return any ? found : ZP_BAD;
}

bool sv_zone_pin_worth(const sv_model *m)
{
    for (int g = 0; g < m->ngroups; g++) {
        if (m->groups[g].tk != SV_TK_ZONE)
            continue;
        bool member = false, alone = true;
        for (int ci = 0; ci < m->nclasses && alone; ci++) {
            const sv_class *c = &m->classes[ci];
            int k = class_zone_spread(m, c);
            if (k >= 0 && c->cons[k].group == g) {
                member = true;
                continue;
            }
            for (int j = 0; j < c->nmatch; j++)
                if (c->match[j] == g)
                    alone = false;
        }
        if (member && alone)
            return true;
    }
    return false;
}

/* Pod p pinned to zone: a copy in ar without its zone spreads and with
 * zone In [zone] added to its volume requirements.  The copy shares
 * everything else with p (borrowed). */
static const Tailor__V1__Pod *pin_copy(tlr_arena *ar, const Tailor__V1__Pod *p, const char *zone)
{
    Tailor__V1__Pod *q = tlr_arena_alloc(ar, sizeof(*q));
    *q = *p;
    q->topology_spread_constraints =
        tlr_arena_alloc(ar, (p->n_topology_spread_constraints + 1) * sizeof(*q->topology_spread_constraints));
    q->n_topology_spread_constraints = 0;
    for (size_t i = 0; i < p->n_topology_spread_constraints; i++) {
        Tailor__V1__TopologySpreadConstraint *t = p->topology_spread_constraints[i];
        if (!t->topology_key || strcmp(t->topology_key, TLR_LABEL_ZONE))
            q->topology_spread_constraints[q->n_topology_spread_constraints++] = t;
    }
    Tailor__V1__NodeSelectorRequirement *r = tlr_arena_alloc(ar, sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = sv_ostrdup(ar, TLR_LABEL_ZONE);
    r->operator_ = TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN;
    r->n_values = 1;
    r->values = tlr_arena_alloc(ar, sizeof(char *));
    r->values[0] = sv_ostrdup(ar, zone);
    q->volume_requirements = tlr_arena_alloc(ar, (p->n_volume_requirements + 1) * sizeof(*q->volume_requirements));
    if (p->n_volume_requirements)
        memcpy(q->volume_requirements, p->volume_requirements,
               p->n_volume_requirements * sizeof(*q->volume_requirements));
    q->volume_requirements[p->n_volume_requirements] = r;
    q->n_volume_requirements = p->n_volume_requirements + 1;
    return q;
}

/* Deal the unplaced pods of unit u's classes over its zones (see the file
 * comment); zone_of[i] gets pod i's zone.  false: some pod found no zone
 * the skew allows (zone_of is then as it was: the unit is left alone). */
static bool unit_deal(sv_model *m, const zp_unit *u, const int *cls_unit, int ui, int *zone_of)
{
    const sv_group *g = &m->groups[u->group];
    int cnt[SV_MAXZONE] = { 0 }, nd = 0;
    for (int z = 0; z < m->nzones; z++)
        if (u->zones & (1u << z)) {
            cnt[z] = g->zone_match[z];
            nd++;
        }
    double price[SV_MAXZONE];
    for (int ci = 0; ci < m->nclasses; ci++) {
        if (cls_unit[ci] != ui)
            continue;
        sv_class *c = &m->classes[ci];
        for (int z = 0; z < m->nzones; z++)
            price[z] = u->zones & (1u << z) ? zone_price(m, c, z) : INFINITY;
        for (int k = 0; k < c->npods; k++) {
            int i = c->pods[k];
            if (m->pods[i].bin != SV_NONE)
                continue;   /* an in-flight claim plans it: counted already */
            int mn = -1;
            for (int z = 0; z < m->nzones; z++)
                if ((u->zones & (1u << z)) && (mn < 0 || cnt[z] < mn))
                    mn = cnt[z];
            if (nd < u->min_domains)
                mn = 0;
            int best = SV_NONE;
            for (int z = 0; z < m->nzones; z++) {
                if (!(u->zones & (1u << z)) || cnt[z] + 1 - mn > u->max_skew)
                    continue;
                if (best == SV_NONE) {
                    best = z;
                    continue;
                }
                double eps = 1e-9 * (price[best] > 1 ? price[best] : 1);
                if (price[z] < price[best] - eps || (price[z] <= price[best] + eps && cnt[z] < cnt[best]))
                    best = z;
            }
            if (best == SV_NONE) {
                for (int cj = 0; cj <= ci; cj++)
                    if (cls_unit[cj] == ui)
                        for (int j = 0; j < m->classes[cj].npods; j++)
                            zone_of[m->classes[cj].pods[j]] = SV_NONE;
                return false;
            }
            zone_of[i] = best;
            cnt[best]++;
        }
    }
    return true;
}

const Tailor__V1__Pod **sv_zone_pin(sv_model *m)
{
    sv_place_begin(m);
    int *cls_unit = tlr_arena_alloc(m->ar, ((size_t)m->nclasses + 1) * sizeof(int));
    zp_unit *units = tlr_arena_calloc(m->ar, (size_t)m->nclasses + 1, sizeof(zp_unit));
    int nunits = 0;
    for (int ci = 0; ci < m->nclasses; ci++) {
        sv_class *c = &m->classes[ci];
        int k = class_zone_spread(m, c);
        cls_unit[ci] = k;
        if (k < 0)
            continue;
        const sv_cons *cn = &c->cons[k];
        zp_unit key = { cn->group, cn->max_skew, cn->min_domains, cn->soft,
                        sv_level_zones(m, c, &c->levels[0]), false };
        int u = 0;
        while (u < nunits && (units[u].group != key.group || units[u].max_skew != key.max_skew ||
                              units[u].min_domains != key.min_domains || units[u].soft != key.soft ||
                              units[u].zones != key.zones))
            u++;
        if (u == nunits)
            units[nunits++] = key;
        cls_unit[ci] = u;
    }
    if (!nunits)
        return NULL;
    /* A pending pod the unit's selector matches must be one of its own. */
    for (int ci = 0; ci < m->nclasses; ci++) {
        const sv_class *c = &m->classes[ci];
        for (int j = 0; j < c->nmatch; j++)
            for (int u = 0; u < nunits; u++)
                if (units[u].group == c->match[j] && cls_unit[ci] != u)
                    units[u].void_ = true;
    }
    int *zone_of = tlr_arena_alloc(m->ar, ((size_t)m->npods + 1) * sizeof(int));
    for (int i = 0; i < m->npods; i++)
        zone_of[i] = SV_NONE;
    bool any = false;
    for (int u = 0; u < nunits; u++)
        if (!units[u].void_ && __builtin_popcount(units[u].zones) >= 2 &&
            unit_deal(m, &units[u], cls_unit, u, zone_of))
            any = true;
    if (!any)
        return NULL;
    const Tailor__V1__Pod **out = tlr_arena_alloc(m->ar, ((size_t)m->npods + 1) * sizeof(*out));
    for (int i = 0; i < m->npods; i++)
        out[i] = zone_of[i] == SV_NONE ? m->pods[i].pod
                                       : pin_copy(m->ar, m->pods[i].pod, sv_str(m, m->zones[zone_of[i]]));
    return out;
}

bool sv_zone_pin_held(const sv_model *m, const Tailor__V1__Pod *const *orig)
{
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].pod != orig[i] && m->pods[i].bin == SV_NONE)
            return false;
    return true;
}

const Tailor__V1__Pod **sv_zone_pin_copy(tlr_arena *ar, const Tailor__V1__Pod *const *pinned,
                                         const Tailor__V1__Pod *const *orig, size_t n)
{
    const Tailor__V1__Pod **out = tlr_arena_alloc(ar, (n + 1) * sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__Pod *p = pinned[i];
        /* pin_copy put the zone requirement last */
        out[i] = p == orig[i] ? p : pin_copy(ar, orig[i], p->volume_requirements[p->n_volume_requirements - 1]->values[0]);
    }
    return out;
}
