/* pdbcheck.c - the PDB rules (tlr_pdbcheck.h): objects in, findings out.
 *
 * Objects are reduced to three lists when added: PDBs (through the
 * watcher's converter, so selectors mean the same everywhere), workloads
 * (kind, replicas, template labels, controller owner) and pod groups
 * (labels and a count: one per live Pod, or one per workload template for
 * manifests).  Each run resolves every group to its top workload (a
 * ReplicaSet run by a Deployment counts as the Deployment) and then
 * applies the rules; nothing is fetched, so the same code serves files,
 * a live cluster and the admission webhook.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdbcheck_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"

const char *tlr_pdbc_rule_name(tlr_pdbc_rule r)
{
    switch (r) {
    case TLR_PDBC_BLOCKS_EVICTION: return "blocks-eviction";
    case TLR_PDBC_MULTIPLE_PDBS: return "multiple-pdbs";
    case TLR_PDBC_SELECTS_NO_PODS: return "selects-no-pods";
    case TLR_PDBC_SINGLE_REPLICA: return "single-replica-unprotected";
    }
    return "?";
}

bool tlr_pdbc_rule_is_error(tlr_pdbc_rule r)
{
    return r == TLR_PDBC_BLOCKS_EVICTION || r == TLR_PDBC_MULTIPLE_PDBS;
}

/* ---- labels ------------------------------------------------------------ */

static int cmp_label(const void *a, const void *b)
{
    return strcmp((*(Tailor__V1__Label *const *)a)->key, (*(Tailor__V1__Label *const *)b)->key);
}

static void labels_read(json_object *map, pdbc_labels *l)
{
    l->v = NULL;
    l->n = 0;
    if (!map || !json_object_is_type(map, json_type_object))
        return;
    l->v = tlr_calloc((size_t)json_object_object_length(map) + 1, sizeof(*l->v));
    json_object_object_foreach(map, k, v) {
        if (!json_object_is_type(v, json_type_string))
            continue;
        Tailor__V1__Label *x = tlr_malloc(sizeof(*x));
        tailor__v1__label__init(x);
        x->key = tlr_strdup(k);
        x->value = tlr_strdup(json_object_get_string(v));
        l->v[l->n++] = x;
    }
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(*l->v), cmp_label);
}

static void labels_free(pdbc_labels *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i]->key);
        free(l->v[i]->value);
        free(l->v[i]);
    }
    free(l->v);
}

/* ---- adding objects --------------------------------------------------------- */

int tlr_pdbc_create(tlr_pdbc_mode mode, tlr_pdbc **out)
{
    tlr_pdbc *c = tlr_calloc(1, sizeof(*c));
    c->mode = mode;
    *out = c;
    return TLR_OK;
}

void tlr_pdbc_free(tlr_pdbc *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->npdbs; i++)
        tlr_kubeobj_free(c->pdbs[i].p);
    for (size_t i = 0; i < c->nwl; i++) {
        pdbc_workload *w = &c->wl[i];
        free(w->kind);
        free(w->ns);
        free(w->name);
        free(w->owner_kind);
        free(w->owner_name);
        labels_free(&w->labels);
    }
    for (size_t i = 0; i < c->ngroups; i++) {
        pdbc_group *g = &c->groups[i];
        free(g->kind);
        free(g->ns);
        free(g->name);
        free(g->owner_kind);
        free(g->owner_name);
        labels_free(&g->labels);
    }
    free(c->pdbs);
    free(c->wl);
    free(c->groups);
    free(c);
}

/* The controller owner reference of o: kind and name (borrowed), or NULL. */
static void controller_of(json_object *o, const char **kind, const char **name)
{
    json_object *refs = tlr_json_arr(o, "metadata.ownerReferences");
    *kind = *name = NULL;
    for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        bool ctl = false;
        if (tlr_json_bool(r, "controller", &ctl) == TLR_OK && ctl) {
            *kind = tlr_json_str(r, "kind");
            *name = tlr_json_str(r, "name");
            return;
        }
    }
}

static void add_group(tlr_pdbc *c, const char *kind, const char *ns, const char *name,
                      json_object *labels, long long count, const char *okind,
                      const char *oname, long long workload)
{
    c->groups = tlr_realloc(c->groups, (c->ngroups + 1) * sizeof(*c->groups));
    pdbc_group *g = &c->groups[c->ngroups++];
    memset(g, 0, sizeof(*g));
    g->kind = tlr_strdup(kind);
    g->ns = tlr_strdup(ns);
    g->name = tlr_strdup(name);
    labels_read(labels, &g->labels);
    g->count = count;
    g->owner_kind = tlr_strdup(okind);
    g->owner_name = tlr_strdup(oname);
    g->workload = workload;
}

int tlr_pdbc_add(tlr_pdbc *c, const char *kind_hint, json_object *o, char *err, size_t errlen)
{
    const char *kind = tlr_json_str(o, "kind"), *name = tlr_json_str(o, "metadata.name");
    if (!kind)
        kind = kind_hint;
    const char *ns = tlr_json_str(o, "metadata.namespace");
    char what[256];

    if (err && errlen)
        err[0] = '\0';
    if (!ns || !ns[0])
        ns = "default";
    if (!kind)
        return TLR_E_NOTFOUND;
    if (!strcmp(kind, "PodDisruptionBudget")) {
        Tailor__V1__PodDisruptionBudget *p = NULL;
        tlr_kubeobj_opts ko = { .default_namespace = ns };
        int rc = tlr_kubeobj_pdb(o, &ko, &p, err, errlen);
        if (rc != TLR_OK)
            return rc;
        c->pdbs = tlr_realloc(c->pdbs, (c->npdbs + 1) * sizeof(*c->pdbs));
        c->pdbs[c->npdbs++].p = p;
        return TLR_OK;
    }
    if (!name || !name[0]) {
        tlr_kubeobj_describe(o, what, sizeof(what));
        if (err && errlen)
            snprintf(err, errlen, "%s: metadata.name is required", what);
        return TLR_E_INVAL;
    }
    const char *okind, *oname;
    controller_of(o, &okind, &oname);
    if (!strcmp(kind, "Pod")) {
        const char *phase = tlr_json_str(o, "status.phase");
        if ((phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) ||
            tlr_json_get(o, "metadata.deletionTimestamp"))
            return TLR_OK;
        add_group(c, "Pod", ns, name, tlr_json_obj(o, "metadata.labels"), 1, okind, oname, -1);
        return TLR_OK;
    }
    if (strcmp(kind, "Deployment") && strcmp(kind, "StatefulSet") && strcmp(kind, "ReplicaSet") &&
        strcmp(kind, "ReplicationController"))
        return TLR_E_NOTFOUND;
    int64_t replicas = 1;
    int rc = tlr_json_int(o, "spec.replicas", &replicas);
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
        tlr_kubeobj_describe(o, what, sizeof(what));
        if (err && errlen)
            snprintf(err, errlen, "%s: spec.replicas: not an integer", what);
        return TLR_E_PARSE;
    }
    if (rc == TLR_E_NOTFOUND)
        replicas = 1;
    if (replicas < 0) {
        tlr_kubeobj_describe(o, what, sizeof(what));
        if (err && errlen)
            snprintf(err, errlen, "%s: spec.replicas: %lld is negative", what,
                     (long long)replicas);
        return TLR_E_PARSE;
    }
    c->wl = tlr_realloc(c->wl, (c->nwl + 1) * sizeof(*c->wl));
    pdbc_workload *w = &c->wl[c->nwl];
    memset(w, 0, sizeof(*w));
    w->kind = tlr_strdup(kind);
    w->ns = tlr_strdup(ns);
    w->name = tlr_strdup(name);
    w->replicas = replicas;
    w->owner_kind = tlr_strdup(okind);
    w->owner_name = tlr_strdup(oname);
    json_object *tl = tlr_json_obj(o, "spec.template.metadata.labels");
    labels_read(tl, &w->labels);
    if (c->mode == TLR_PDBC_MANIFESTS && replicas > 0)
        add_group(c, kind, ns, name, tl, replicas, NULL, NULL, (long long)c->nwl);
    c->nwl++;
    return TLR_OK;
}

size_t tlr_pdbc_count_pdbs(const tlr_pdbc *c) { return c->npdbs; }
size_t tlr_pdbc_count_workloads(const tlr_pdbc *c) { return c->nwl; }

size_t tlr_pdbc_count_pods(const tlr_pdbc *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->ngroups; i++)
        n += (size_t)c->groups[i].count;
    return n;
}

/* ---- resolving ------------------------------------------------------------------ */

static long long find_wl(const tlr_pdbc *c, const char *kind, const char *ns, const char *name)
{
    if (!kind || !name)
        return -1;
    for (size_t i = 0; i < c->nwl; i++)
        if (!strcmp(c->wl[i].kind, kind) && !strcmp(c->wl[i].ns, ns) &&
            !strcmp(c->wl[i].name, name))
            return (long long)i;
    return -1;
}

/* The top workload of workload i: a ReplicaSet run by a listed Deployment
 * is the Deployment. */
static long long top_of(const tlr_pdbc *c, long long i)
{
    if (i < 0)
        return -1;
    const pdbc_workload *w = &c->wl[i];
    long long up = find_wl(c, w->owner_kind, w->ns, w->owner_name);
    return up >= 0 && !strcmp(c->wl[up].kind, "Deployment") ? up : i;
}

static long long group_top(const tlr_pdbc *c, const pdbc_group *g)
{
    long long w = g->workload >= 0 ? g->workload : find_wl(c, g->owner_kind, g->ns, g->owner_name);
    return top_of(c, w);
}

static bool pdb_matches(const Tailor__V1__PodDisruptionBudget *p, const char *ns,
                        const pdbc_labels *l)
{
    return !strcmp(p->namespace_, ns) && tlr_ks_selector_matches(p->selector, l->v, l->n);
}

/* ---- arithmetic ------------------------------------------------------------------- */

/* IntOrString v against total, rounded up as the disruption controller
 * does; -1 for a malformed percentage. */
static long long scaled(const Tailor__V1__IntOrString *v, long long total)
{
    if (v->value_case == TAILOR__V1__INT_OR_STRING__VALUE_INT_VALUE)
        return v->int_value;
    const char *s = v->str_value;
    char *end;
    long pct = strtol(s, &end, 10);
    if (end == s || strcmp(end, "%") || pct < 0)
        return -1;
    return (total * pct + 99) / 100;
}

static void iostr(const Tailor__V1__IntOrString *v, char *buf, size_t len)
{
    if (v->value_case == TAILOR__V1__INT_OR_STRING__VALUE_INT_VALUE)
        snprintf(buf, len, "%d", v->int_value);
    else
        snprintf(buf, len, "%s", v->str_value);
}

static bool is_set(const Tailor__V1__IntOrString *v)
{
    return v && v->value_case != TAILOR__V1__INT_OR_STRING__VALUE__NOT_SET;
}

bool pdbc_pdb_blocks_statically(const Tailor__V1__PodDisruptionBudget *p, char *why, size_t len)
{
    char v[64];
    if (is_set(p->max_unavailable) && scaled(p->max_unavailable, 1000000) == 0) {
        iostr(p->max_unavailable, v, sizeof(v));
        snprintf(why, len, "maxUnavailable %s", v);
        return true;
    }
    if (is_set(p->min_available) &&
        p->min_available->value_case == TAILOR__V1__INT_OR_STRING__VALUE_STR_VALUE &&
        !strcmp(p->min_available->str_value, "100%")) {
        snprintf(why, len, "minAvailable 100%%");
        return true;
    }
    return false;
}

/* ---- findings --------------------------------------------------------------------- */

static tlr_pdbc_finding *finding(tlr_pdbc_findings *f, tlr_pdbc_rule rule, const char *kind,
                                 const char *ns, const char *name)
{
    f->v = tlr_realloc(f->v, (f->n + 1) * sizeof(*f->v));
    tlr_pdbc_finding *x = &f->v[f->n++];
    memset(x, 0, sizeof(*x));
    x->rule = rule;
    x->kind = tlr_strdup(kind);
    x->ns = tlr_strdup(ns);
    x->name = tlr_strdup(name);
    return x;
}

static void finding_pdb(tlr_pdbc_finding *x, const char *name)
{
    for (size_t i = 0; i < x->npdbs; i++)
        if (!strcmp(x->pdbs[i], name))
            return;
    x->pdbs = tlr_realloc(x->pdbs, (x->npdbs + 1) * sizeof(*x->pdbs));
    x->pdbs[x->npdbs++] = tlr_strdup(name);
}

static int cmp_finding(const void *a, const void *b)
{
    const tlr_pdbc_finding *x = a, *y = b;
    int c;
    if (x->rule != y->rule)
        return (int)x->rule - (int)y->rule;
    if ((c = strcmp(x->ns, y->ns)) || (c = strcmp(x->kind, y->kind)) ||
        (c = strcmp(x->name, y->name)))
        return c;
    return 0;
}

void tlr_pdbc_findings_free(tlr_pdbc_findings *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        tlr_pdbc_finding *x = &f->v[i];
        free(x->kind);
        free(x->ns);
        free(x->name);
        free(x->message);
        for (size_t k = 0; k < x->npdbs; k++)
            free(x->pdbs[k]);
        free(x->pdbs);
    }
    free(f->v);
    f->v = NULL;
    f->n = 0;
}

/* ---- the rules ----------------------------------------------------------------------- */

int pdbc_run(const tlr_pdbc *c, Tailor__V1__PodDisruptionBudget *const *pdbs, size_t np,
           tlr_pdbc_findings *out)
{
    tlr_pdbc_findings f = { 0 };
    size_t ng = c->ngroups;
    long long *top = tlr_calloc(ng + 1, sizeof(*top));
    /* per group, the indexes of the PDBs that match it */
    size_t **match = tlr_calloc(ng + 1, sizeof(*match)), *nmatch = tlr_calloc(ng + 1, sizeof(size_t));
    bool *seen_wl = tlr_calloc(c->nwl + 1, sizeof(bool));

    for (size_t g = 0; g < ng; g++) {
        top[g] = group_top(c, &c->groups[g]);
        for (size_t p = 0; p < np; p++)
            if (pdb_matches(pdbs[p], c->groups[g].ns, &c->groups[g].labels)) {
                match[g] = tlr_realloc(match[g], (nmatch[g] + 1) * sizeof(size_t));
                match[g][nmatch[g]++] = p;
            }
    }

    /* blocks-eviction and selects-no-pods, per PDB */
    for (size_t p = 0; p < np; p++) {
        const Tailor__V1__PodDisruptionBudget *b = pdbs[p];
        long long expected = 0, pods = 0;
        memset(seen_wl, 0, (c->nwl + 1) * sizeof(bool));
        for (size_t g = 0; g < ng; g++) {
            bool m = false;
            for (size_t k = 0; k < nmatch[g]; k++)
                m |= match[g][k] == p;
            if (!m)
                continue;
            pods += c->groups[g].count;
            if (top[g] < 0)
                expected += c->groups[g].count;
            else if (!seen_wl[top[g]]) {
                seen_wl[top[g]] = true;
                expected += c->wl[top[g]].replicas;
            }
        }
        char why[96], v[64];
        tlr_pdbc_finding *x = NULL;
        if (pods == 0) {
            x = finding(&f, TLR_PDBC_SELECTS_NO_PODS, "PodDisruptionBudget", b->namespace_,
                        b->name);
            x->message = tlr_strdupf("selects no pods in namespace %s: check spec.selector against "
                              "the pods' labels, or delete it if its workload is gone",
                              b->namespace_);
            finding_pdb(x, b->name);
            if (pdbc_pdb_blocks_statically(b, why, sizeof(why))) {
                x = finding(&f, TLR_PDBC_BLOCKS_EVICTION, "PodDisruptionBudget", b->namespace_,
                            b->name);
                x->message = tlr_strdupf("%s allows no eviction of any pod it will select: draining "
                                  "their nodes waits forever; use maxUnavailable 1", why);
                finding_pdb(x, b->name);
            }
            continue;
        }
        if (expected <= 0)
            expected = pods;
        if (is_set(b->max_unavailable)) {
            long long mu = scaled(b->max_unavailable, expected);
            iostr(b->max_unavailable, v, sizeof(v));
            if (mu == 0) {
                x = finding(&f, TLR_PDBC_BLOCKS_EVICTION, "PodDisruptionBudget", b->namespace_,
                            b->name);
                x->message = tlr_strdupf("maxUnavailable %s allows no eviction of its %lld pod%s: "
                                  "draining any of their nodes waits forever; use "
                                  "maxUnavailable 1 (or a percentage above 0)", v, expected,
                                  expected == 1 ? "" : "s");
            }
        } else if (is_set(b->min_available)) {
            long long ma = scaled(b->min_available, expected);
            iostr(b->min_available, v, sizeof(v));
            if (ma >= expected) {
                x = finding(&f, TLR_PDBC_BLOCKS_EVICTION, "PodDisruptionBudget", b->namespace_,
                            b->name);
                x->message = tlr_strdupf("minAvailable %s needs all %lld pod%s it selects: no "
                                  "eviction is ever allowed; set minAvailable below %lld (or "
                                  "maxUnavailable 1)", v, expected, expected == 1 ? "" : "s",
                                  expected);
            }
        }
        if (x) {
            x->pods = expected;
            finding_pdb(x, b->name);
        }
    }

    /* multiple-pdbs, per top workload (or bare pod) and set of PDBs */
    for (size_t g = 0; g < ng; g++) {
        if (nmatch[g] < 2)
            continue;
        const pdbc_group *gr = &c->groups[g];
        const char *kind = top[g] >= 0 ? c->wl[top[g]].kind : gr->kind;
        const char *name = top[g] >= 0 ? c->wl[top[g]].name : gr->name;
        tlr_pdbc_finding *x = NULL;
        for (size_t i = 0; i < f.n && !x; i++)
            if (f.v[i].rule == TLR_PDBC_MULTIPLE_PDBS && !strcmp(f.v[i].kind, kind) &&
                !strcmp(f.v[i].ns, gr->ns) && !strcmp(f.v[i].name, name))
                x = &f.v[i];
        if (!x)
            x = finding(&f, TLR_PDBC_MULTIPLE_PDBS, kind, gr->ns, name);
        x->pods += gr->count;
        for (size_t k = 0; k < nmatch[g]; k++)
            finding_pdb(x, pdbs[match[g][k]]->name);
    }
    for (size_t i = 0; i < f.n; i++) {
        tlr_pdbc_finding *x = &f.v[i];
        if (x->npdbs > 1)
            qsort(x->pdbs, x->npdbs, sizeof(*x->pdbs), tlr_cmp_strp);
        if (x->rule != TLR_PDBC_MULTIPLE_PDBS)
            continue;
        char list[512] = "";
        for (size_t k = 0; k < x->npdbs; k++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "",
                     x->pdbs[k]);
        x->message = tlr_strdupf("%lld pod%s selected by %zu PDBs (%s): the Eviction API refuses to "
                          "evict a pod with more than one PDB, so its nodes cannot be drained; "
                          "keep one", x->pods, x->pods == 1 ? " is" : "s are", x->npdbs, list);
    }

    /* single-replica-unprotected, per top workload */
    for (size_t w = 0; w < c->nwl; w++) {
        const pdbc_workload *wl = &c->wl[w];
        if (top_of(c, (long long)w) != (long long)w || wl->replicas != 1)
            continue;
        bool covered = false;
        for (size_t p = 0; p < np && !covered; p++)
            covered = pdb_matches(pdbs[p], wl->ns, &wl->labels);
        for (size_t g = 0; g < ng && !covered; g++)
            covered = top[g] == (long long)w && nmatch[g] > 0;
        if (covered)
            continue;
        tlr_pdbc_finding *x = finding(&f, TLR_PDBC_SINGLE_REPLICA, wl->kind, wl->ns, wl->name);
        x->pods = 1;
        x->message = tlr_strdupf("1 replica and no PodDisruptionBudget: draining its node stops it "
                          "until the replacement is running; run 2 replicas with a PDB "
                          "maxUnavailable 1");
    }

    for (size_t g = 0; g < ng; g++)
        free(match[g]);
    free(match);
    free(nmatch);
    free(top);
    free(seen_wl);
    if (f.n > 1)
        qsort(f.v, f.n, sizeof(*f.v), cmp_finding);
    *out = f;
    return TLR_OK;
}

int tlr_pdbc_run(const tlr_pdbc *c, tlr_pdbc_findings *out)
{
    Tailor__V1__PodDisruptionBudget **p = tlr_calloc(c->npdbs + 1, sizeof(*p));
    for (size_t i = 0; i < c->npdbs; i++)
        p[i] = c->pdbs[i].p;
    int rc = pdbc_run(c, p, c->npdbs, out);
    free(p);
    return rc;
}
