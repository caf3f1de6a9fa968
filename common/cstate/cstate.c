/* cstate.c - the store of cluster states by reference (tlr_cstate.h).
 *
 * A state is two arrays of entry pointers sorted by name (nodes, claims).
 * Building one from a delta is a merge of the base's sorted array with the
 * delta's (sorted here) and its removed names (sorted too): O(n + d log d).
 * Entries are counted references to one unpacked message each; the
 * count changes only under the store's mutex.  A state is counted too:
 * once by the store's list and once per view; it goes when both are done.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_cstate.h"
#include "tlr_err.h"

typedef struct cs_ent {
    uint32_t refs;
    ProtobufCMessage *msg;     /* owned */
    const char *name;          /* borrowed from msg */
} cs_ent;

typedef struct cs_list {
    cs_ent **v;
    size_t n;
} cs_list;

typedef struct cs_state {
    int64_t epoch;
    uint64_t gen;
    cs_list nodes, claims;
    uint32_t pins;             /* the store's list + views */
    uint64_t used;             /* recency stamp */
} cs_state;

struct tlr_cstate {
    pthread_mutex_t mu;
    cs_state **st;
    size_t n, max;
    uint64_t clock;
};

struct tlr_cstate_view {
    tlr_cstate *c;
    cs_state *s;
    Tailor__V1__ClusterState cs;
    Tailor__V1__Node **nodes;
    Tailor__V1__NodeClaim **claims;
};

static void set_err(char *err, size_t len, const char *fmt, ...)
{
    if (!err || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

void tlr_cstate_create(size_t max_states, tlr_cstate **out)
{
    tlr_cstate *c = tlr_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->max = max_states ? max_states : 4;
    c->st = tlr_calloc(c->max + 1, sizeof(*c->st));
    *out = c;
}

static void ent_put(cs_ent *e)
{
    if (--e->refs)
        return;
    protobuf_c_message_free_unpacked(e->msg, NULL);
    free(e);
}

static void list_put(cs_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ent_put(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static void state_put(cs_state *s)
{
    if (--s->pins)
        return;
    list_put(&s->nodes);
    list_put(&s->claims);
    free(s);
}

void tlr_cstate_free(tlr_cstate *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        state_put(c->st[i]);
    free(c->st);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static cs_state *find(tlr_cstate *c, int64_t epoch, uint64_t gen)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->st[i]->epoch == epoch && c->st[i]->gen == gen)
            return c->st[i];
    return NULL;
}

/* Add s to the list (which holds one pin), dropping the least recently
 * used other states beyond max. */
static void keep(tlr_cstate *c, cs_state *s)
{
    s->pins++;
    c->st[c->n++] = s;
    while (c->n > c->max) {
        size_t lru = c->n;
        for (size_t i = 0; i < c->n; i++)
            if (c->st[i] != s && (lru == c->n || c->st[i]->used < c->st[lru]->used))
                lru = i;
        cs_state *gone = c->st[lru];
        c->st[lru] = c->st[--c->n];
        state_put(gone);
    }
}

/* ---- building a state from a delta ------------------------------------ */

static const char *node_name(const ProtobufCMessage *m)
{
    return ((const Tailor__V1__Node *)m)->name;
}

static const char *claim_name(const ProtobufCMessage *m)
{
    return ((const Tailor__V1__NodeClaim *)m)->name;
}

static int cmp_ent(const void *a, const void *b)
{
    return strcmp((*(cs_ent *const *)a)->name, (*(cs_ent *const *)b)->name);
}

/* Move msgs[0..n) into new entries (msgs[i] = NULL), sorted by name;
 * a nameless or repeated name is TLR_E_INVAL (what was moved is kept in
 * *out either way, for the caller to put). */
static int take(ProtobufCMessage **msgs, size_t n, const char *(*name)(const ProtobufCMessage *),
                const char *what, cs_list *out, char *err, size_t len)
{
    out->v = tlr_calloc(n + 1, sizeof(*out->v));
    out->n = 0;
    int rc = TLR_OK;
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i])
            continue;
        cs_ent *e = tlr_calloc(1, sizeof(*e));
        e->refs = 1;
        e->msg = msgs[i];
        e->name = name(msgs[i]) ? name(msgs[i]) : "";
        msgs[i] = NULL;
        out->v[out->n++] = e;
        if (!e->name[0] && rc == TLR_OK) {
            set_err(err, len, "a %s in the delta has no name", what);
            rc = TLR_E_INVAL;
        }
    }
    qsort(out->v, out->n, sizeof(*out->v), cmp_ent);
    for (size_t i = 1; i < out->n && rc == TLR_OK; i++)
        if (!strcmp(out->v[i - 1]->name, out->v[i]->name)) {
            set_err(err, len, "%s %s is in the delta twice", what, out->v[i]->name);
            rc = TLR_E_INVAL;
        }
    return rc;
}

static bool in_sorted(char *const *v, size_t n, const char *name)
{
    return n && bsearch(&name, v, n, sizeof(*v), tlr_cmp_strp) != NULL;
}

/* out = base with changed replacing or adding by name and removed names
 * dropped.  Every entry of out holds one reference of its own. */
static int merge(const cs_list *base, const cs_list *changed, char **removed, size_t nremoved,
                 const char *what, cs_list *out, char *err, size_t len)
{
    if (nremoved)
        qsort(removed, nremoved, sizeof(*removed), tlr_cmp_strp);
    for (size_t i = 0; i < changed->n; i++)
        if (in_sorted(removed, nremoved, changed->v[i]->name)) {
            set_err(err, len, "%s %s is both changed and removed", what, changed->v[i]->name);
            return TLR_E_INVAL;
        }
    out->v = tlr_calloc(base->n + changed->n + 1, sizeof(*out->v));
    out->n = 0;
    size_t i = 0, j = 0;
    while (i < base->n || j < changed->n) {
        int d = i == base->n ? 1 : j == changed->n ? -1 : strcmp(base->v[i]->name, changed->v[j]->name);
        cs_ent *e;
        if (d < 0) {
            e = base->v[i++];
            if (in_sorted(removed, nremoved, e->name))
                continue;
        } else {
            e = changed->v[j++];
            i += d == 0;
        }
        e->refs++;
        out->v[out->n++] = e;
    }
    return TLR_OK;
}

static int build(const cs_state *base, Tailor__V1__ClusterRef *ref, cs_state *s, char *err,
                 size_t len)
{
    static const cs_list empty = { 0 };
    cs_list cn = { 0 }, cc = { 0 };
    int rc = take((ProtobufCMessage **)ref->nodes, ref->n_nodes, node_name, "node", &cn, err, len);
    int rc2 = take((ProtobufCMessage **)ref->nodeclaims, ref->n_nodeclaims, claim_name, "nodeclaim",
                   &cc, err, len);
    ref->n_nodes = 0;
    ref->n_nodeclaims = 0;
    if (rc == TLR_OK)
        rc = rc2;
    if (rc == TLR_OK)
        rc = merge(base ? &base->nodes : &empty, &cn, ref->removed_nodes, ref->n_removed_nodes,
                   "node", &s->nodes, err, len);
    if (rc == TLR_OK)
        rc = merge(base ? &base->claims : &empty, &cc, ref->removed_nodeclaims,
                   ref->n_removed_nodeclaims, "nodeclaim", &s->claims, err, len);
    list_put(&cn);
    list_put(&cc);
    return rc;
}

/* ---- views --------------------------------------------------------------- */

static int cmp_claim(const void *a, const void *b)
{
    return strcmp((*(Tailor__V1__NodeClaim *const *)a)->name,
                  (*(Tailor__V1__NodeClaim *const *)b)->name);
}

/* v->claims: s's claims with the request's (extra) replacing or adding by
 * name, sorted. */
static void view_claims(tlr_cstate_view *v, Tailor__V1__NodeClaim *const *extra, size_t nextra)
{
    const cs_list *held = &v->s->claims;
    Tailor__V1__NodeClaim **x = tlr_calloc(nextra + 1, sizeof(*x));
    size_t nx = 0;
    for (size_t i = 0; i < nextra; i++)
        if (extra[i] && extra[i]->name)
            x[nx++] = extra[i];
    qsort(x, nx, sizeof(*x), cmp_claim);
    v->claims = tlr_calloc(held->n + nx + 1, sizeof(*v->claims));
    size_t n = 0, i = 0, j = 0;
    while (i < held->n || j < nx) {
        int d = i == held->n ? 1 : j == nx ? -1 : strcmp(held->v[i]->name, x[j]->name);
        if (d < 0) {
            v->claims[n++] = (Tailor__V1__NodeClaim *)held->v[i++]->msg;
        } else {
            /* a repeated extra name: the last one sent wins */
            while (j + 1 < nx && !strcmp(x[j]->name, x[j + 1]->name))
                j++;
            v->claims[n++] = x[j++];
            i += d == 0;
        }
    }
    free(x);
    v->cs.nodeclaims = v->claims;
    v->cs.n_nodeclaims = n;
}

static tlr_cstate_view *view_new(tlr_cstate *c, cs_state *s, const Tailor__V1__ClusterState *cs)
{
    tlr_cstate_view *v = tlr_calloc(1, sizeof(*v));
    v->c = c;
    v->s = s;
    s->pins++;
    s->used = ++c->clock;
    v->cs = *cs;
    v->cs.by_ref = NULL;
    v->nodes = tlr_calloc(s->nodes.n + 1, sizeof(*v->nodes));
    for (size_t i = 0; i < s->nodes.n; i++)
        v->nodes[i] = (Tailor__V1__Node *)s->nodes.v[i]->msg;
    v->cs.nodes = v->nodes;
    v->cs.n_nodes = s->nodes.n;
    view_claims(v, cs->nodeclaims, cs->n_nodeclaims);
    return v;
}

int tlr_cstate_resolve(tlr_cstate *c, Tailor__V1__ClusterState *cs, tlr_cstate_view **out,
                       char *err, size_t len)
{
    Tailor__V1__ClusterRef *ref = cs ? cs->by_ref : NULL;
    if (!ref) {
        set_err(err, len, "the cluster state is not sent by reference");
        return TLR_E_INVAL;
    }
    if (cs->generation == 0) {
        set_err(err, len, "a cluster state by reference needs its generation");
        return TLR_E_INVAL;
    }
    if (ref->has_delta && ref->base_generation >= cs->generation) {
        set_err(err, len, "delta base generation %llu is not older than generation %llu",
                (unsigned long long)ref->base_generation, (unsigned long long)cs->generation);
        return TLR_E_INVAL;
    }
    int64_t epoch = cs->watcher_epoch_unix_ms;
    int rc = TLR_OK;
    pthread_mutex_lock(&c->mu);
    cs_state *s = find(c, epoch, cs->generation);
    if (!s && ref->has_delta && ref->base_generation) {
        /* the first base the delta applies to that is held */
        uint64_t b = ref->base_generation;
        for (size_t i = 0; !find(c, epoch, b) && i < ref->n_also_applies_to; i++)
            if (ref->also_applies_to[i] && ref->also_applies_to[i] < cs->generation &&
                find(c, epoch, ref->also_applies_to[i]))
                b = ref->also_applies_to[i];
        ref->base_generation = b;
    }
    if (!s && !ref->has_delta) {
        set_err(err, len, "cluster state %lld/%llu is not held", (long long)epoch,
                (unsigned long long)cs->generation);
        rc = TLR_E_NOTFOUND;
        goto out;
    }
    if (!s) {
        cs_state *base = NULL;
        if (ref->base_generation && !(base = find(c, epoch, ref->base_generation))) {
            set_err(err, len, "the delta's base, cluster state %lld/%llu, is not held",
                    (long long)epoch, (unsigned long long)ref->base_generation);
            rc = TLR_E_NOTFOUND;
            goto out;
        }
        s = tlr_calloc(1, sizeof(*s));
        s->epoch = epoch;
        s->gen = cs->generation;
        s->pins = 1;
        if ((rc = build(base, ref, s, err, len))) {
            state_put(s);
            goto out;
        }
        keep(c, s);
        state_put(s);   /* the list's pin is the one that stays */
    }
    *out = view_new(c, s, cs);
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}

const Tailor__V1__ClusterState *tlr_cstate_view_state(const tlr_cstate_view *v)
{
    return &v->cs;
}

void tlr_cstate_view_free(tlr_cstate_view *v)
{
    if (!v)
        return;
    pthread_mutex_lock(&v->c->mu);
    state_put(v->s);
    pthread_mutex_unlock(&v->c->mu);
    free(v->nodes);
    free(v->claims);
    free(v);
}

size_t tlr_cstate_held(tlr_cstate *c, int64_t epoch, uint64_t *out, size_t max)
{
    pthread_mutex_lock(&c->mu);
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->st[i]->epoch == epoch) {
            /* insertion, newest first */
            size_t k = n < max ? n : max;
            while (k > 0 && out[k - 1] < c->st[i]->gen) {
                if (k < max)
                    out[k] = out[k - 1];
                k--;
            }
            if (k < max)
                out[k] = c->st[i]->gen;
            n++;
        }
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- the sending end ----------------------------------------------------- */

/* Mark in chg[] the entries of to that are not (the same pointer) in
 * from; add to *gone (names, borrowed) those of from missing from to. */
static void diff_mark(const cs_list *from, const cs_list *to, bool *chg, const char **gone,
                      size_t *ngone)
{
    size_t i = 0, j = 0;
    while (i < from->n || j < to->n) {
        int d = i == from->n ? 1 : j == to->n ? -1 : strcmp(from->v[i]->name, to->v[j]->name);
        if (d < 0) {
            gone[(*ngone)++] = from->v[i++]->name;
        } else if (d > 0) {
            chg[j++] = true;
        } else {
            chg[j] |= from->v[i] != to->v[j];
            i++;
            j++;
        }
    }
}

/* The union over the bases (from[0..nb), NULL = the empty state) of what
 * differs from each: valid for every one of them (an entry unchanged
 * since some base is sent whole anyway, a name removed since some base is
 * removed: both are no-ops for the others).  *chg (messages, borrowed)
 * and *gone (names, copied) are new arrays. */
static void diff_union(const cs_list *const *from, size_t nb, const cs_list *to, void ***chg,
                       size_t *nchg, char ***gone, size_t *ngone)
{
    static const cs_list empty = { 0 };
    bool *mark = tlr_calloc(to->n + 1, sizeof(*mark));
    size_t cap = 1;
    for (size_t k = 0; k < nb; k++)
        cap += from[k] ? from[k]->n : 0;
    const char **g = tlr_calloc(cap, sizeof(*g));
    size_t ng = 0;
    for (size_t k = 0; k < nb; k++)
        diff_mark(from[k] ? from[k] : &empty, to, mark, g, &ng);
    void **c = tlr_calloc(to->n + 1, sizeof(*c));
    size_t nc = 0;
    for (size_t j = 0; j < to->n; j++)
        if (mark[j])
            c[nc++] = to->v[j]->msg;
    qsort(g, ng, sizeof(*g), tlr_cmp_strp);
    char **gg = tlr_calloc(ng + 1, sizeof(*gg));
    size_t n = 0;
    for (size_t k = 0; k < ng; k++)
        if (n == 0 || strcmp(gg[n - 1], g[k]))
            gg[n++] = tlr_strdup(g[k]);
    free(g);
    free(mark);
    *chg = c;
    *nchg = nc;
    *gone = gg;
    *ngone = n;
}

void tlr_cstate_delta(tlr_cstate *c, const tlr_cstate_view *v, const uint64_t *bases,
                      size_t nbases, Tailor__V1__ClusterRef *ref)
{
    pthread_mutex_lock(&c->mu);
    const cs_state **held = tlr_calloc(nbases + 1, sizeof(*held));
    uint64_t *gens = tlr_calloc(nbases + 1, sizeof(*gens));
    size_t nh = 0;
    for (size_t i = 0; i < nbases; i++) {
        const cs_state *b = bases[i] && bases[i] < v->s->gen ? find(c, v->s->epoch, bases[i]) : NULL;
        bool dup = false;
        for (size_t k = 0; k < nh; k++)
            dup |= gens[k] == bases[i];
        if (b && !dup) {
            held[nh] = b;
            gens[nh++] = bases[i];
        }
    }
    const cs_list **fn = tlr_calloc(nh + 1, sizeof(*fn)), **fc = tlr_calloc(nh + 1, sizeof(*fc));
    for (size_t k = 0; k < nh; k++) {
        fn[k] = &held[k]->nodes;
        fc[k] = &held[k]->claims;
    }
    ref->has_delta = true;
    ref->base_generation = nh ? gens[0] : 0;
    diff_union(fn, nh ? nh : 1, &v->s->nodes, (void ***)&ref->nodes, &ref->n_nodes,
               &ref->removed_nodes, &ref->n_removed_nodes);
    diff_union(fc, nh ? nh : 1, &v->s->claims, (void ***)&ref->nodeclaims, &ref->n_nodeclaims,
               &ref->removed_nodeclaims, &ref->n_removed_nodeclaims);
    if (nh > 1) {
        ref->also_applies_to = tlr_calloc(nh, sizeof(uint64_t));
        memcpy(ref->also_applies_to, gens + 1, (nh - 1) * sizeof(uint64_t));
        ref->n_also_applies_to = nh - 1;
    }
    free(fn);
    free(fc);
    free(held);
    free(gens);
    pthread_mutex_unlock(&c->mu);
}

void tlr_cstate_ref_clear(Tailor__V1__ClusterRef *ref)
{
    if (!ref)
        return;
    for (size_t i = 0; i < ref->n_removed_nodes; i++)
        free(ref->removed_nodes[i]);
    for (size_t i = 0; i < ref->n_removed_nodeclaims; i++)
        free(ref->removed_nodeclaims[i]);
    free(ref->removed_nodes);
    free(ref->removed_nodeclaims);
    free(ref->nodes);
    free(ref->nodeclaims);
    free(ref->also_applies_to);
    tailor__v1__cluster_ref__init(ref);
}

void tlr_cstate_by_ref(const tlr_cstate_view *v, Tailor__V1__NodeClaim **claims, size_t nclaims,
                       Tailor__V1__ClusterRef *ref, Tailor__V1__ClusterState *out)
{
    *out = v->cs;
    out->nodes = NULL;
    out->n_nodes = 0;
    out->nodeclaims = claims;
    out->n_nodeclaims = nclaims;
    out->generation = v->s->gen;
    out->watcher_epoch_unix_ms = v->s->epoch;
    out->by_ref = ref;
}
