/* ffd.c - TLR_SOLVE_FFD: first-fit decreasing, the plain packer whose
 * plan tailor's must never be dearer than (solve.c runs it in the
 * portfolio).
 *
 * Pods are taken one at a time, largest first: a pod's size is the largest
 * of its requests (every dimension but the pod count) over the same
 * dimension of the largest type of the first NodePool its class may use,
 * ties by the sum of those shares, then cpu, memory, creation time, uid
 * and request order, so the order is total and the plan deterministic.
 * Each pod goes to the first bin, in one fixed order, that holds it:
 * existing nodes and in-flight claims (place.c's order: initialized nodes
 * first, then by name, then in-flight claims), then the claims this solve
 * opened, oldest first.  Only when none holds it does a new claim open,
 * from the first NodePool by weight that can take the pod.  A new claim
 * keeps every candidate type that still holds its pods, as the baseline's
 * do (place.c, claim_narrow_karp), so it grows up to the largest type;
 * emit.c then prices it at its cheapest option that holds its pods, which
 * is the final "shrink every node to the cheapest type of its pool, zone
 * and capacity type that holds it" pass of the textbook packer.
 *
 * The sized variant (m->ffd_sized) differs in one point: a new claim is
 * sized when it opens, for the candidate type with the lowest price per pod
 * of the opening pod's class (counted up to what is left of the class and
 * what one node takes of it), and takes pods only while that type holds
 * them; the shrink still applies.  Growing to the largest type suits small
 * batches; on a real catalog the largest types are the dearest per pod, and
 * sized claims avoid them (alibaba-cpu: 3.8x the relaxation bound grown,
 * 1.15x sized).  solve.c runs both and keeps the cheaper plan.
 *
 * Every constraint goes through place.c's primitives (sv_room_place,
 * sv_place_pods, sv_claim_open), exactly as the baseline's: relaxation
 * levels for preferences (a pod tries every bin at one level before the
 * next), topology, host ports, NodePool limits and minValues.  Pods that
 * fit nowhere are retried while a pass places something, for affinity
 * targets placed after them.
 *
 * Cost: a pod scans the bins in order, O(pods x bins) room checks in the
 * worst case.  For a class with no topology, ports or pinned domain
 * (sv_class_movable), a bin that refuses one of its pods at a level refuses
 * every later one (free room only shrinks, a claim's candidates, places and
 * label values only narrow), so a cursor per class and level remembers
 * where the previous pod went and the scan starts there.  The same
 * monotony lets the consecutive pods of such a class go as a run: the
 * first bin that takes one takes as many as it holds (one room check, one
 * narrowing of the claim's candidates), which is where placing them one by
 * one would put them.  A run of identical pods then costs a few room
 * checks per bin it fills, not a scan of the candidate types per pod.
 */
#include <stdlib.h>
#include <string.h>

#include "solve_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

typedef struct ffd_key {
    double big;    /* the largest share of one dimension */
    double sum;    /* the shares summed */
} ffd_key;

/* A pod with its sort key, copied out so the sort touches one array. */
typedef struct ffd_item {
    double big, sum;
    int64_t cpu, mem, created;
    const char *uid;
    int pod;
} ffd_item;

/* The sized variant's per-new-claim type: the pool type whose room caps
 * what the claim takes (SV_NONE: none), indexed by bin - nexisting. */
typedef struct ffd_sizes {
    int *pt;
} ffd_sizes;

/* Each class's size: its requests over the largest allocatable of the
 * first NodePool (weight order) its first level may use, else of all
 * types. */
static void class_keys(const sv_model *m, ffd_key *key)
{
    double all[SV_NDIM] = { 0 };
    double *pmax = tlr_calloc((size_t)m->npools * SV_NDIM + 1, sizeof(double));
    for (int pi = 0; pi < m->npools; pi++) {
        const sv_pool *p = &m->pools[pi];
        for (int i = 0; i < p->ntypes; i++)
            for (int d = 0; d < m->ndim; d++) {
                double v = (double)m->types[p->types[i]].alloc.v[d];
                if (v > pmax[pi * SV_NDIM + d])
                    pmax[pi * SV_NDIM + d] = v;
            }
    }
    for (int t = 0; t < m->ntypes; t++)
        for (int d = 0; d < m->ndim; d++)
            if ((double)m->types[t].alloc.v[d] > all[d])
                all[d] = (double)m->types[t].alloc.v[d];
    for (int c = 0; c < m->nclasses; c++) {
        const sv_class *cl = &m->classes[c];
        const double *mx = all;
        for (int pi = 0; !cl->bad && cl->nlevels && pi < m->npools; pi++)
            if (cl->levels[0].compat[pi]) {
                mx = &pmax[pi * SV_NDIM];
                break;
            }
        key[c].big = key[c].sum = 0;
        for (int d = 0; d < m->ndim; d++) {
            if (d == SV_DIM_PODS || mx[d] <= 0 || cl->req.v[d] <= 0)
                continue;
            double f = (double)cl->req.v[d] / mx[d];
            key[c].sum += f;
            if (f > key[c].big)
                key[c].big = f;
        }
    }
    free(pmax);
}

static int item_cmp(const void *a, const void *b)
{
    const ffd_item *x = a, *y = b;
    if (x->big != y->big)
        return x->big > y->big ? -1 : 1;
    if (x->sum != y->sum)
        return x->sum > y->sum ? -1 : 1;
    if (x->cpu != y->cpu)
        return x->cpu > y->cpu ? -1 : 1;
    if (x->mem != y->mem)
        return x->mem > y->mem ? -1 : 1;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    int s = strcmp(x->uid, y->uid);
    return s ? s : x->pod - y->pod;
}

/* Sized variant: how many of want pods of class c at level lv new claim
 * b may still take within its sizing type. */
static int size_room(const sv_model *m, const ffd_sizes *sz, int b, int c, int lv, int want)
{
    if (!sz)
        return want;
    int pt = sz->pt[b - m->nexisting];
    if (pt == SV_NONE)
        return want;
    const sv_bin *x = &m->bins[b];
    const sv_pool *p = &m->pools[x->pool];
    const sv_class *cl = &m->classes[c];
    const uint64_t *compat = cl->levels[lv].compat[x->pool];
    if (!compat || !sv_bit(compat, pt) || !sv_bit(x->cand, pt))
        return 0;
    const sv_type *t = &m->types[p->types[pt]];
    int64_t k = want;
    for (int d = 0; d < m->ndim && k > 0; d++) {
        if (cl->req.v[d] <= 0)
            continue;
        int64_t room = t->alloc.v[d] - p->ds[pt].v[d] - x->used.v[d];
        int64_t q = room > 0 ? room / cl->req.v[d] : 0;
        if (q < k)
            k = q;
    }
    return (int)k;
}

/* Sized variant: new claim b (just opened for a pod of class c) is sized
 * for the candidate type with the lowest price per pod of c it holds, the
 * pods counted up to what is left of c (this one included) and to what one
 * node may take of it; ties: more pods, then the cheaper type. */
static void size_claim(sv_model *m, ffd_sizes *sz, int b, int c)
{
    const sv_bin *x = &m->bins[b];
    const sv_pool *p = &m->pools[x->pool];
    const sv_class *cl = &m->classes[c];
    int most = cl->left + 1;
    if (cl->host_cap > 0 && cl->host_cap < most)
        most = cl->host_cap;
    int best = SV_NONE, bestk = 0;
    double bestr = 0, bestprice = 0;
    for (int pt = 0; pt < p->ntypes; pt++) {
        if (!sv_bit(x->cand, pt))
            continue;
        double price = sv_type_price(m, p->types[pt], x->pmask, NULL);
        if (price < 0)
            continue;
        const sv_type *t = &m->types[p->types[pt]];
        int64_t k = most;
        for (int d = 0; d < m->ndim; d++) {
            if (cl->req.v[d] <= 0)
                continue;
            int64_t room = t->alloc.v[d] - p->ds[pt].v[d] - (x->used.v[d] - cl->req.v[d]);
            int64_t q = room > 0 ? room / cl->req.v[d] : 0;
            if (q < k)
                k = q;
        }
        if (k <= 0)
            continue;
        double r = price / (double)k;
        if (best == SV_NONE || r < bestr || (r == bestr && (k > bestk || (k == bestk && price < bestprice)))) {
            best = pt;
            bestk = (int)k;
            bestr = r;
            bestprice = price;
        }
    }
    sz->pt[b - m->nexisting] = best;
}

/* Pods pods[0..n) (identical, n > 1 only for a movable class) at level
 * lv: as many as the first bin that holds one takes, else a new claim.
 * *cold and *cnew are the class's cursors at this level (see the file
 * comment), used and moved only when mono.  sz: the sized variant's state,
 * NULL for the plain one.  Returns the pods placed, 0 when none fits. */
static int ffd_try(sv_model *m, const int *pods, int n, int lv, bool mono, int *cold, int *cnew, ffd_sizes *sz)
{
    int c = m->pods[pods[0]].cls;
    const sv_class *cl = &m->classes[c];
    int place, r;
    for (int b = mono ? *cold : 0; b < m->nexisting; b++) {
        if (!sv_bin_quick_ok(m, b, cl) || (r = sv_room_place(m, b, c, lv, n, &place)) <= 0)
            continue;
        if (mono)
            *cold = b;
        sv_place_pods(m, b, c, lv, pods, r, place);
        return r;
    }
    if (mono)
        *cold = m->nexisting;
    for (int b = mono ? *cnew : m->nexisting; b < m->nbins; b++) {
        int want = m->bins[b].dead ? 0 : size_room(m, sz, b, c, lv, n);
        if (want <= 0 || (r = sv_room_place(m, b, c, lv, want, &place)) <= 0)
            continue;
        if (mono)
            *cnew = b;
        sv_place_pods(m, b, c, lv, pods, r, place);
        return r;
    }
    if (mono)
        *cnew = m->nbins;
    /* the sized variant sizes a claim for its first pod, then fills it */
    for (int pi = 0; pi < m->npools; pi++)
        if ((r = sv_claim_open(m, c, lv, pi, pods, sz ? 1 : n)) > 0) {
            if (sz)
                size_claim(m, sz, m->nbins - 1, c);
            return r;
        }
    return 0;
}

void sv_ffd_all(sv_model *m)
{
    ffd_key *key = tlr_arena_alloc(m->ar, ((size_t)m->nclasses + 1) * sizeof(ffd_key));
    class_keys(m, key);
    ffd_item *it = tlr_malloc(((size_t)m->npods + 1) * sizeof(*it));
    int nq = 0;
    for (int i = 0; i < m->npods; i++) {
        const sv_podst *ps = &m->pods[i];
        const sv_class *cl = &m->classes[ps->cls];
        if (ps->bin != SV_NONE)
            continue;
        if (cl->bad) {
            m->pods[i].err = TLR_E_UNSCHEDULABLE;
            continue;
        }
        it[nq++] = (ffd_item){ key[ps->cls].big, key[ps->cls].sum, cl->req.v[SV_DIM_CPU], cl->req.v[SV_DIM_MEM],
                               ps->pod->creation_unix_ms, ps->pod->uid ? ps->pod->uid : "", i };
    }
    qsort(it, (size_t)nq, sizeof(*it), item_cmp);
    int *q = tlr_arena_alloc(m->ar, ((size_t)nq + 1) * sizeof(int));
    for (int i = 0; i < nq; i++)
        q[i] = it[i].pod;
    free(it);
    /* cursors: class c at level lv uses [off[c] + lv] */
    int *off = tlr_arena_alloc(m->ar, ((size_t)m->nclasses + 1) * sizeof(int));
    int ncur = 0;
    for (int c = 0; c < m->nclasses; c++) {
        off[c] = ncur;
        ncur += m->classes[c].nlevels;
    }
    int *cold = tlr_arena_calloc(m->ar, (size_t)ncur + 1, sizeof(int));
    int *cnew = tlr_arena_alloc(m->ar, ((size_t)ncur + 1) * sizeof(int));
    for (int i = 0; i < ncur; i++)
        cnew[i] = m->nexisting;
    int *fail = tlr_arena_alloc(m->ar, ((size_t)nq + 1) * sizeof(int));
    /* every new claim holds a pod: at most nq of them */
    ffd_sizes sizes = { NULL }, *sz = NULL;
    if (m->ffd_sized) {
        sizes.pt = tlr_arena_alloc(m->ar, ((size_t)nq + 1) * sizeof(int));
        sz = &sizes;
    }
    unsigned steps = 0;
    for (;;) {
        int nf = 0, placed = 0;
        for (int i = 0; i < nq;) {
            if ((steps++ & 255) == 0 && sv_timed_out(m))
                return;
            sv_podst *ps = &m->pods[q[i]];
            const sv_class *cl = &m->classes[ps->cls];
            bool mono = sv_class_movable(cl);
            /* a movable class's pods at one level go as a run (see the
             * file comment) */
            int run = 1, lv0 = ps->level;
            while (mono && i + run < nq && m->pods[q[i + run]].cls == ps->cls && m->pods[q[i + run]].level == lv0)
                run++;
            for (int done = 0; done < run;) {
                int got = 0, lv;
                for (lv = lv0; lv < cl->nlevels && !got; lv++) {
                    int k = off[ps->cls] + lv;
                    got = ffd_try(m, q + i + done, run - done, lv, mono, &cold[k], &cnew[k], sz);
                }
                if (got) {
                    placed += got;
                    done += got;
                    continue;
                }
                /* none fits at any level: nor will the rest of the run */
                for (; done < run; done++) {
                    m->pods[q[i + done]].level = cl->nlevels ? cl->nlevels - 1 : lv0;
                    m->pods[q[i + done]].err = TLR_E_UNSCHEDULABLE;
                    fail[nf++] = q[i + done];
                }
            }
            i += run;
        }
        if (!nf || !placed)
            break;
        memcpy(q, fail, (size_t)nf * sizeof(int));
        nq = nf;
    }
}
