/* sched_topo.c - PodTopologySpread and InterPodAffinity for one pass
 * (see sched_topo.h for the semantics and the caching idea).
 *
 * Three caches, all dense arrays over the pass's nodes:
 *   doms    per topology key: node -> domain id (-1 without the label);
 *   counts  per (kind, namespaces, selector): node -> matching pods;
 *   groups  per anti-affinity term of bound pods (namespaces, selector,
 *           topology key): which domains hold such a pod.
 */
#include "sched_topo.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_store.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_json.h"

#define ANTI_PATH "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
#define AFF_PATH  "podAffinity.requiredDuringSchedulingIgnoredDuringExecution"

#define REASON_SPREAD       "node(s) didn't match pod topology spread constraints"
#define REASON_SPREAD_LABEL REASON_SPREAD " (missing required label)"
#define REASON_AFF          "node(s) didn't match pod affinity rules"
#define REASON_ANTI         "node(s) didn't match pod anti-affinity rules"
#define REASON_EXISTING     "node(s) didn't satisfy existing pods anti-affinity rules"

/* Longest cache key (namespaces + selector JSON) we build. */
#define KEY_MAX (4u << 20)

typedef struct topo_rec {
    size_t node;
    const char *ns;
    json_object *labels;
    bool deleting;
} topo_rec;

/* A set of namespaces: all, or a list (borrowed strings). */
typedef struct nsset {
    bool all;
    const char **ns;
    size_t n;
} nsset;

typedef struct topo_dom {
    char *key;
    int *dom;      /* per node */
    int ndom;
} topo_dom;

typedef struct topo_count {
    nsset ns;             /* strings owned (ns.ns entries strdup'd) */
    bool skip_deleting;   /* spread ignores terminating pods */
    ks_selector *sel;
    int *cnt;             /* per node */
    long total;
} topo_count;

typedef struct topo_group {
    nsset ns;             /* owned, as in topo_count */
    ks_selector *sel;
    int dk;               /* index into doms */
    bool *hit;            /* per domain of doms[dk] */
} topo_group;

struct ks_topo {
    const ks_node_info *nodes;
    size_t n;
    topo_rec *recs;
    size_t nrec, caprec;
    topo_dom *doms;
    size_t ndoms, capdoms;
    topo_count *counts;
    size_t ncounts, capcounts;
    json_object *count_idx;    /* key -> index into counts */
    topo_group *groups;
    size_t ngroups, capgroups;
    json_object *group_idx;    /* key -> index into groups */
};

/* One prepared constraint of a pending pod. */
typedef struct pod_check {
    enum { CK_SPREAD, CK_AFF, CK_ANTI, CK_EXISTING } kind;
    int dk;           /* topology key: index into doms */
    int *dcnt;        /* spread: matching pods per domain (owned) */
    bool *hit;        /* affinity/anti: domains holding a matching pod (owned) */
    long min;         /* spread: the minimum over domains (LONG_MAX: none) */
    long max_skew;
    int self;         /* spread: 1 if the pod matches its own selector */
} pod_check;

struct ks_topo_pod {
    const ks_topo *t;
    pod_check *ck;
    size_t nck, capck;
    bool aff_first;   /* required affinity: no pod matches yet, pod matches itself */
};

/* ------------------------------------------------------------------ */

void ks_topo_create(const ks_node_info *nodes, size_t n, ks_topo **out)
{
    ks_topo *t = tlr_calloc(1, sizeof(*t));
    t->nodes = nodes;
    t->n = n;
    t->count_idx = json_object_new_object();
    t->group_idx = json_object_new_object();
    *out = t;
}

static void nsset_free_owned(nsset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free((char *)s->ns[i]);
    free(s->ns);
}

void ks_topo_free(ks_topo *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ndoms; i++) {
        free(t->doms[i].key);
        free(t->doms[i].dom);
    }
    for (size_t i = 0; i < t->ncounts; i++) {
        nsset_free_owned(&t->counts[i].ns);
        ks_selector_free(t->counts[i].sel);
        free(t->counts[i].cnt);
    }
    for (size_t i = 0; i < t->ngroups; i++) {
        nsset_free_owned(&t->groups[i].ns);
        ks_selector_free(t->groups[i].sel);
        free(t->groups[i].hit);
    }
    json_object_put(t->count_idx);
    json_object_put(t->group_idx);
    free(t->recs);
    free(t->doms);
    free(t->counts);
    free(t->groups);
    free(t);
}

/* The domain table of topology key (built on first use). */
static int dom_get(ks_topo *t, const char *key)
{
    for (size_t i = 0; i < t->ndoms; i++)
        if (strcmp(t->doms[i].key, key) == 0)
            return (int)i;
    TLR_GROW(t->doms, t->capdoms, t->ndoms + 1);
    topo_dom *d = &t->doms[t->ndoms];
    d->key = tlr_strdup(key);
    d->dom = tlr_malloc((t->n ? t->n : 1) * sizeof(int));
    d->ndom = 0;
    json_object *ids = json_object_new_object();
    for (size_t i = 0; i < t->n; i++) {
        const char *v = ks_node_label(&t->nodes[i], key);
        json_object *id;
        if (!v) {
            d->dom[i] = -1;
        } else if (json_object_object_get_ex(ids, v, &id)) {
            d->dom[i] = json_object_get_int(id);
        } else {
            json_object_object_add(ids, v, json_object_new_int(d->ndom));
            d->dom[i] = d->ndom++;
        }
    }
    json_object_put(ids);
    return (int)t->ndoms++;
}

static bool nsset_has(const nsset *s, const char *ns)
{
    if (s->all)
        return true;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->ns[i], ns) == 0)
            return true;
    return false;
}

/* The namespaces an affinity term selects for a pod in pod_ns; strings
 * borrowed from term / pod_ns.  The key text goes to kb. */
static void nsset_of_term(json_object *term, const char *pod_ns, nsset *out, tlr_buf *kb)
{
    json_object *list = tlr_json_arr(term, "namespaces");
    json_object *nssel = tlr_json_obj(term, "namespaceSelector");
    size_t n = list ? json_object_array_length(list) : 0;
    out->all = false;
    out->ns = NULL;
    out->n = 0;
    if (nssel && json_object_object_length(nssel) == 0) {
        out->all = true;
        tlr_buf_adds(kb, "*");
        return;
    }
    if (n == 0 && !nssel) {
        out->ns = tlr_malloc(sizeof(char *));
        out->ns[0] = pod_ns;
        out->n = 1;
    } else {
        out->ns = tlr_calloc(n ? n : 1, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
            const char *s = json_object_get_string(json_object_array_get_idx(list, i));
            if (s)
                out->ns[out->n++] = s;
        }
    }
    for (size_t i = 0; i < out->n; i++) {
        tlr_buf_adds(kb, out->ns[i]);
        tlr_buf_addc(kb, ',');
    }
}

static void nsset_own(nsset *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->ns[i] = tlr_strdup(s->ns[i]);
}

static bool rec_counts(const topo_count *c, const topo_rec *r)
{
    if (c->skip_deleting && r->deleting)
        return false;
    return nsset_has(&c->ns, r->ns) && ks_selector_matches_labels(c->sel, r->labels);
}

/* The count entry for (kind, ns, selector json), created on first use.
 * ns: borrowed, copied when the entry is new.  -1 with err on a bad
 * selector. */
static int count_get(ks_topo *t, bool spread, const nsset *ns, const char *nskey,
                     json_object *sel, char *err, size_t errlen)
{
    tlr_buf kb;
    tlr_buf_init(&kb, KEY_MAX);
    tlr_buf_printf(&kb, "%c|%s|%s", spread ? 'S' : 'A', nskey,
                   tlr_json_to_string(sel, JSON_C_TO_STRING_PLAIN));
    json_object *idx;
    int ret = -1;
    if (json_object_object_get_ex(t->count_idx, tlr_buf_str(&kb), &idx)) {
        ret = json_object_get_int(idx);
        goto out;
    }
    ks_selector *s = NULL;
    ks_status st;
    if (ks_label_selector_from_json(sel, false, &s, &st) != TLR_OK) {
        snprintf(err, errlen, "invalid label selector: %s", st.message);
        goto out;
    }
    TLR_GROW(t->counts, t->capcounts, t->ncounts + 1);
    topo_count *c = &t->counts[t->ncounts];
    memset(c, 0, sizeof(*c));
    c->ns.all = ns->all;
    c->ns.n = ns->n;
    c->ns.ns = tlr_calloc(ns->n ? ns->n : 1, sizeof(char *));
    memcpy(c->ns.ns, ns->ns, ns->n * sizeof(char *));
    nsset_own(&c->ns);
    c->skip_deleting = spread;
    c->sel = s;
    c->cnt = tlr_calloc(t->n ? t->n : 1, sizeof(int));
    for (size_t i = 0; i < t->nrec; i++)
        if (rec_counts(c, &t->recs[i])) {
            c->cnt[t->recs[i].node]++;
            c->total++;
        }
    ret = (int)t->ncounts++;
    json_object_object_add(t->count_idx, tlr_buf_str(&kb), json_object_new_int(ret));
out:
    tlr_buf_free(&kb);
    return ret;
}

/* Record the anti-affinity terms of a bound pod on node. */
static void groups_add(ks_topo *t, size_t node, const char *ns, json_object *affinity)
{
    json_object *terms = tlr_json_arr(affinity, ANTI_PATH);
    for (size_t i = 0; terms && i < json_object_array_length(terms); i++) {
        json_object *term = json_object_array_get_idx(terms, i);
        const char *key = tlr_json_str(term, "topologyKey");
        json_object *sel = tlr_json_obj(term, "labelSelector");
        if (!key || !*key || !sel)
            continue;   /* nil selector matches nothing: never forbids */
        tlr_buf kb;
        tlr_buf_init(&kb, KEY_MAX);
        nsset nss;
        nsset_of_term(term, ns, &nss, &kb);
        tlr_buf_printf(&kb, "|%s|%s", key, tlr_json_to_string(sel, JSON_C_TO_STRING_PLAIN));
        json_object *idx;
        int g = -1;
        if (json_object_object_get_ex(t->group_idx, tlr_buf_str(&kb), &idx)) {
            g = json_object_get_int(idx);
            free(nss.ns);
        } else {
            ks_selector *s = NULL;
            if (ks_label_selector_from_json(sel, false, &s, NULL) != TLR_OK) {
                free(nss.ns);
                tlr_buf_free(&kb);
                continue;   /* the API would have refused it; it forbids nothing */
            }
            int dk = dom_get(t, key);
            TLR_GROW(t->groups, t->capgroups, t->ngroups + 1);
            topo_group *gr = &t->groups[t->ngroups];
            gr->ns = nss;
            nsset_own(&gr->ns);
            gr->sel = s;
            gr->dk = dk;
            gr->hit = tlr_calloc(t->doms[dk].ndom ? (size_t)t->doms[dk].ndom : 1, sizeof(bool));
            g = (int)t->ngroups++;
            json_object_object_add(t->group_idx, tlr_buf_str(&kb), json_object_new_int(g));
        }
        topo_group *gr = &t->groups[g];
        int d = t->doms[gr->dk].dom[node];
        if (d >= 0)
            gr->hit[d] = true;
        tlr_buf_free(&kb);
    }
}

void ks_topo_add_pod(ks_topo *t, size_t node, const char *ns, json_object *labels,
                     bool deleting, json_object *affinity)
{
    if (node >= t->n)
        return;
    TLR_GROW(t->recs, t->caprec, t->nrec + 1);
    topo_rec *r = &t->recs[t->nrec++];
    r->node = node;
    r->ns = ns;
    r->labels = labels;
    r->deleting = deleting;
    for (size_t i = 0; i < t->ncounts; i++)
        if (rec_counts(&t->counts[i], r)) {
            t->counts[i].cnt[node]++;
            t->counts[i].total++;
        }
    if (affinity)
        groups_add(t, node, ns, affinity);
}

/* ------------------------------------------------------------------ */
/* Pending pods                                                        */
/* ------------------------------------------------------------------ */

static pod_check *check_new(ks_topo_pod *p)
{
    TLR_GROW(p->ck, p->capck, p->nck + 1);
    pod_check *c = &p->ck[p->nck++];
    memset(c, 0, sizeof(*c));
    return c;
}

/* The spread selector: labelSelector plus matchLabelKeys pinned to the
 * pod's values.  A new object owned by the caller, or NULL for a nil
 * selector (matches nothing). */
static json_object *spread_selector(json_object *c, json_object *labels)
{
    json_object *sel = tlr_json_obj(c, "labelSelector");
    if (!sel)
        return NULL;
    json_object *copy = NULL;
    json_object_deep_copy(sel, &copy, NULL);
    json_object *keys = tlr_json_arr(c, "matchLabelKeys");
    for (size_t i = 0; keys && i < json_object_array_length(keys); i++) {
        const char *k = json_object_get_string(json_object_array_get_idx(keys, i));
        json_object *v;
        if (!k || !labels || !json_object_object_get_ex(labels, k, &v))
            continue;
        json_object *exprs = tlr_json_arr(copy, "matchExpressions");
        if (!exprs) {
            exprs = json_object_new_array();
            json_object_object_add(copy, "matchExpressions", exprs);
        }
        json_object *req = json_object_new_object();
        json_object_object_add(req, "key", json_object_new_string(k));
        json_object_object_add(req, "operator", json_object_new_string("In"));
        json_object *vals = json_object_new_array();
        json_object_array_add(vals, json_object_get(v));
        json_object_object_add(req, "values", vals);
        json_object_array_add(exprs, req);
    }
    return copy;
}

static int prepare_spread(ks_topo *t, ks_topo_pod *p, json_object *pod,
                          const bool *affinity_ok, char *err, size_t errlen)
{
    json_object *cons = tlr_json_arr(pod, "spec.topologySpreadConstraints");
    const char *ns = tlr_json_str(pod, "metadata.namespace");
    json_object *labels = tlr_json_obj(pod, "metadata.labels");
    json_object *tols = tlr_json_arr(pod, "spec.tolerations");
    size_t n = cons ? json_object_array_length(cons) : 0;
    if (!ns)
        ns = "default";
    /* the keys every DoNotSchedule constraint needs on a counted node */
    int dks[16];
    size_t ndk = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(cons, i);
        const char *wu = tlr_json_str(c, "whenUnsatisfiable");
        const char *key = tlr_json_str(c, "topologyKey");
        if (!wu || strcmp(wu, "DoNotSchedule") != 0)
            continue;
        if (!key || !*key) {
            snprintf(err, errlen, "topologySpreadConstraints[%zu]: topologyKey is required", i);
            return TLR_E_PARSE;
        }
        if (ndk == sizeof(dks) / sizeof(dks[0])) {
            snprintf(err, errlen, "too many topologySpreadConstraints");
            return TLR_E_PARSE;
        }
        dks[ndk++] = dom_get(t, key);
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(cons, i);
        const char *wu = tlr_json_str(c, "whenUnsatisfiable");
        if (!wu || strcmp(wu, "DoNotSchedule") != 0)
            continue;
        int64_t max_skew = 1, min_domains = 1;
        if (tlr_json_int(c, "maxSkew", &max_skew) != TLR_OK || max_skew < 1) {
            snprintf(err, errlen, "topologySpreadConstraints[%zu]: maxSkew must be > 0", i);
            return TLR_E_PARSE;
        }
        (void)tlr_json_int(c, "minDomains", &min_domains);
        const char *ap = tlr_json_str(c, "nodeAffinityPolicy");
        const char *tp = tlr_json_str(c, "nodeTaintsPolicy");
        bool honor_aff = !ap || strcmp(ap, "Ignore") != 0;
        bool honor_taints = tp && strcmp(tp, "Honor") == 0;

        json_object *sel = spread_selector(c, labels);
        pod_check *ck = check_new(p);
        ck->kind = CK_SPREAD;
        ck->dk = dks[k++];
        ck->max_skew = max_skew;
        ck->min = LONG_MAX;
        const topo_dom *d = &t->doms[ck->dk];
        ck->dcnt = tlr_calloc(d->ndom ? (size_t)d->ndom : 1, sizeof(int));
        if (sel) {
            nsset one = { .all = false, .ns = &ns, .n = 1 };
            int ci = count_get(t, true, &one, ns, sel, err, errlen);
            if (ci < 0) {
                json_object_put(sel);
                return TLR_E_PARSE;
            }
            ck->self = ks_selector_matches_labels(t->counts[ci].sel, labels) ? 1 : 0;
            const int *cnt = t->counts[ci].cnt;
            bool *seen = tlr_calloc(d->ndom ? (size_t)d->ndom : 1, sizeof(bool));
            int ndomains = 0;
            for (size_t ni = 0; ni < t->n; ni++) {
                bool counted = !honor_aff || !affinity_ok || affinity_ok[ni];
                for (size_t j = 0; counted && j < ndk; j++)
                    counted = t->doms[dks[j]].dom[ni] >= 0;
                if (counted && honor_taints) {
                    char buf[8];
                    counted = !ks_untolerated_taint(tols, &t->nodes[ni], buf, sizeof(buf));
                }
                if (!counted)
                    continue;
                int dd = d->dom[ni];
                ck->dcnt[dd] += cnt[ni];
                if (!seen[dd]) {
                    seen[dd] = true;
                    ndomains++;
                }
            }
            for (int dd = 0; dd < d->ndom; dd++)
                if (seen[dd] && ck->dcnt[dd] < ck->min)
                    ck->min = ck->dcnt[dd];
            if (ndomains < min_domains)
                ck->min = 0;
            free(seen);
            json_object_put(sel);
        } else {
            ck->min = 0;   /* nothing matches: every domain has 0 */
        }
    }
    return TLR_OK;
}

/* Required pod affinity (aff=true) or anti-affinity terms of the pod. */
static int prepare_terms(ks_topo *t, ks_topo_pod *p, json_object *pod, bool aff,
                         char *err, size_t errlen)
{
    json_object *terms = tlr_json_arr(pod, aff ? "spec.affinity." AFF_PATH
                                               : "spec.affinity." ANTI_PATH);
    const char *ns = tlr_json_str(pod, "metadata.namespace");
    json_object *labels = tlr_json_obj(pod, "metadata.labels");
    size_t n = terms ? json_object_array_length(terms) : 0;
    long total = 0;
    bool self_all = true;
    if (!ns)
        ns = "default";
    for (size_t i = 0; i < n; i++) {
        json_object *term = json_object_array_get_idx(terms, i);
        const char *key = tlr_json_str(term, "topologyKey");
        json_object *sel = tlr_json_obj(term, "labelSelector");
        if (!key || !*key) {
            snprintf(err, errlen, "pod %s affinity term %zu: topologyKey is required",
                     aff ? "" : "anti-", i);
            return TLR_E_PARSE;
        }
        pod_check *ck = check_new(p);
        ck->kind = aff ? CK_AFF : CK_ANTI;
        ck->dk = dom_get(t, key);
        const topo_dom *d = &t->doms[ck->dk];
        ck->hit = tlr_calloc(d->ndom ? (size_t)d->ndom : 1, sizeof(bool));
        tlr_buf kb;
        tlr_buf_init(&kb, KEY_MAX);
        nsset nss;
        nsset_of_term(term, ns, &nss, &kb);
        if (!sel) {
            self_all = false;
        } else {
            int ci = count_get(t, false, &nss, tlr_buf_str(&kb), sel, err, errlen);
            if (ci < 0) {
                free(nss.ns);
                tlr_buf_free(&kb);
                return TLR_E_PARSE;
            }
            const int *cnt = t->counts[ci].cnt;
            for (size_t ni = 0; ni < t->n; ni++)
                if (cnt[ni] > 0 && d->dom[ni] >= 0) {
                    ck->hit[d->dom[ni]] = true;
                    total += cnt[ni];
                }
            if (!nsset_has(&nss, ns) || !ks_selector_matches_labels(t->counts[ci].sel, labels))
                self_all = false;
        }
        free(nss.ns);
        tlr_buf_free(&kb);
    }
    if (aff && n > 0)
        p->aff_first = total == 0 && self_all;
    return TLR_OK;
}

/* Anti-affinity of bound pods that matches this pod. */
static void prepare_existing(ks_topo *t, ks_topo_pod *p, json_object *pod)
{
    const char *ns = tlr_json_str(pod, "metadata.namespace");
    json_object *labels = tlr_json_obj(pod, "metadata.labels");
    if (!ns)
        ns = "default";
    for (size_t g = 0; g < t->ngroups; g++) {
        const topo_group *gr = &t->groups[g];
        if (!nsset_has(&gr->ns, ns) || !ks_selector_matches_labels(gr->sel, labels))
            continue;
        pod_check *ck = check_new(p);
        ck->kind = CK_EXISTING;
        ck->dk = gr->dk;
        size_t nd = t->doms[gr->dk].ndom ? (size_t)t->doms[gr->dk].ndom : 1;
        ck->hit = tlr_malloc(nd * sizeof(bool));
        memcpy(ck->hit, gr->hit, nd * sizeof(bool));
    }
}

int ks_topo_pod_prepare(ks_topo *t, json_object *pod, const bool *affinity_ok,
                        ks_topo_pod **out, char *err, size_t errlen)
{
    ks_topo_pod *p = tlr_calloc(1, sizeof(*p));
    p->t = t;
    int rc = prepare_spread(t, p, pod, affinity_ok, err, errlen);
    if (rc == TLR_OK)
        rc = prepare_terms(t, p, pod, true, err, errlen);
    if (rc == TLR_OK)
        rc = prepare_terms(t, p, pod, false, err, errlen);
    if (rc != TLR_OK) {
        ks_topo_pod_free(p);
        return rc;
    }
    prepare_existing(t, p, pod);
    *out = p;
    return TLR_OK;
}

bool ks_topo_pod_constrained(const ks_topo_pod *p)
{
    return p && p->nck > 0;
}

const char *ks_topo_pod_filter(const ks_topo_pod *p, size_t node)
{
    const ks_topo *t = p->t;
    if (node >= t->n)
        return REASON_SPREAD_LABEL;
    /* in kube-scheduler's plugin order: spread, then inter-pod affinity
     * (affinity, anti-affinity, existing pods' anti-affinity) */
    for (size_t i = 0; i < p->nck; i++) {
        const pod_check *c = &p->ck[i];
        if (c->kind != CK_SPREAD)
            continue;
        int d = t->doms[c->dk].dom[node];
        if (d < 0)
            return REASON_SPREAD_LABEL;
        if (c->min != LONG_MAX && (long)c->dcnt[d] + c->self - c->min > c->max_skew)
            return REASON_SPREAD;
    }
    bool aff_ok = true, all_keys = true;
    for (size_t i = 0; i < p->nck; i++) {
        const pod_check *c = &p->ck[i];
        if (c->kind != CK_AFF)
            continue;
        int d = t->doms[c->dk].dom[node];
        if (d < 0)
            all_keys = false;
        else if (!c->hit[d])
            aff_ok = false;
    }
    if (!all_keys || (!aff_ok && !p->aff_first))
        return REASON_AFF;
    for (int kind = CK_ANTI; kind <= CK_EXISTING; kind++)
        for (size_t i = 0; i < p->nck; i++) {
            const pod_check *c = &p->ck[i];
            if ((int)c->kind != kind)
                continue;
            int d = t->doms[c->dk].dom[node];
            if (d >= 0 && c->hit[d])
                return kind == CK_ANTI ? REASON_ANTI : REASON_EXISTING;
        }
    return NULL;
}

void ks_topo_pod_free(ks_topo_pod *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nck; i++) {
        free(p->ck[i].dcnt);
        free(p->ck[i].hit);
    }
    free(p->ck);
    free(p);
}
