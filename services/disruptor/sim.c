/* sim.c - Simulate requests built from a view (sim.h). */
#include "sim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_time.h"

/* marks[i]: view node i is removed.  Owned by the caller (free()). */
static bool *marks_of(const ds_view *v, const char *const *names, size_t n)
{
    bool *m = tlr_calloc(v->nnodes + 1, sizeof(*m));
    for (size_t i = 0; i < n; i++) {
        const ds_vnode *x = ds_view_node(v, names[i]);
        if (x)
            m[x - v->nodes] = true;
    }
    return m;
}

typedef struct target {
    size_t idx;
    int64_t cpu, mem;
} target;

static int by_room(const void *a, const void *b)
{
    const target *x = a, *y = b;
    if (x->cpu != y->cpu)
        return x->cpu > y->cpu ? -1 : 1;
    return x->idx < y->idx ? -1 : 1;
}

static int by_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
    return x < y ? -1 : x > y;
}

/* The reduced request leaves out nodes (the removed ones, those no pod
 * can land on, those past the first limit), but a NodeClaim whose Node is
 * not in the request is, to the solver, a claim still in flight: capacity
 * (its allocatable less its spec requests) that it plans pods onto.  The
 * removed node's own claim would take its pods back and a node that must
 * not be a target would be one.  So only the claims of the sent targets
 * and those of no Node at all (really in flight) go with it: cs->nodeclaims
 * (the request's own array) is filtered in place. */
static void drop_unsent_claims(const ds_view *v, const target *t, size_t keep, Tailor__V1__ClusterState *cs)
{
    const Tailor__V1__NodeClaim **sent = tlr_calloc(v->nnodes + 1, sizeof(*sent));
    const Tailor__V1__NodeClaim **unsent = tlr_calloc(v->nnodes + 1, sizeof(*unsent));
    size_t ns = 0, nu = 0;
    bool *is_sent = tlr_calloc(v->nnodes + 1, sizeof(*is_sent));
    for (size_t k = 0; k < keep; k++)
        is_sent[t[k].idx] = true;
    for (size_t i = 0; i < v->nnodes; i++)
        if (v->nodes[i].claim) {
            if (is_sent[i])
                sent[ns++] = v->nodes[i].claim;
            else
                unsent[nu++] = v->nodes[i].claim;
        }
    qsort(sent, ns, sizeof(*sent), by_ptr);
    qsort(unsent, nu, sizeof(*unsent), by_ptr);
    size_t nk = 0;
    for (size_t i = 0; i < cs->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = cs->nodeclaims[i];
        /* a claim two nodes joined (sent and not) stays: its sent node is
         * where the solver binds it */
        if (bsearch(&c, sent, ns, sizeof(*sent), by_ptr) || !bsearch(&c, unsent, nu, sizeof(*unsent), by_ptr))
            cs->nodeclaims[nk++] = cs->nodeclaims[i];
    }
    cs->n_nodeclaims = nk;
    free(is_sent);
    free(unsent);
    free(sent);
}

/* The request, with limit targets at most (0 = every eligible one). */
typedef struct owned {
    Tailor__V1__Pod **v;
    size_t n;
} owned;

static void owned_free(owned *o)
{
    for (size_t i = 0; i < o->n; i++)
        tlr_kubeobj_free(o->v[i]);
    free(o->v);
    memset(o, 0, sizeof(*o));
}

static void build(const ds_sim *s, const char *const *names, size_t n, bool allow_replacement,
                  int max_replacements, size_t limit, Tailor__V1__SimulateRequest *req,
                  size_t *eligible, owned *full)
{
    const ds_view *v = s->v;
    const Tailor__V1__ClusterState *src = v->cs;
    tailor__v1__simulate_request__init(req);
    Tailor__V1__ClusterState *cs = tlr_malloc(sizeof(*cs));
    *cs = *src;
    cs->nodes = tlr_calloc(src->n_nodes + 1, sizeof(*cs->nodes));
    cs->n_nodes = 0;
    /* the claims: an array of the request's own (drop_unsent_claims) */
    cs->nodeclaims = tlr_calloc(src->n_nodeclaims + 1, sizeof(*cs->nodeclaims));
    if (src->n_nodeclaims)
        memcpy(cs->nodeclaims, src->nodeclaims, src->n_nodeclaims * sizeof(*cs->nodeclaims));
    bool *gone = marks_of(v, names, n);
    /* the removed nodes' pods in full form, where the caller reads them:
     * fullnode[i] says node i's came in full (its compact ones are not
     * sent) */
    bool *fullnode = tlr_calloc(v->nnodes + 1, sizeof(*fullnode));
    size_t fullcap = 0;
    for (size_t i = 0; full && s->full_pods && i < v->nnodes; i++) {
        if (!gone[i])
            continue;
        Tailor__V1__Pod **fp = NULL;
        size_t nf = 0;
        if (s->full_pods(s->full_pods_arg, v->nodes[i].node->name, &fp, &nf) != TLR_OK)
            continue;
        /* the same pods, in full form; they are the caller's to free */
        for (size_t j = 0; j < nf; j++) {
            TLR_GROW(full->v, fullcap, full->n + 1);
            full->v[full->n++] = fp[j];
        }
        free(fp);
        fullnode[i] = true;
    }

    /* what the moving pods need, at least and in all, and host ports */
    int64_t min_cpu = INT64_MAX, min_mem = INT64_MAX, need_pods = 0;
    bool ports = false, spread = false;
    for (size_t i = 0; i < v->nnodes; i++) {
        if (!gone[i])
            continue;
        const Tailor__V1__Node *nd = v->nodes[i].node;
        for (size_t j = 0; j < nd->n_pods; j++) {
            const Tailor__V1__Pod *p = nd->pods[j];
            if (!ds_pod_moves(p))
                continue;
            ports = ports || p->n_host_ports > 0;
            int64_t c = p->requests ? p->requests->cpu_millis : 0;
            int64_t m = p->requests ? p->requests->memory_bytes : 0;
            min_cpu = c < min_cpu ? c : min_cpu;
            min_mem = m < min_mem ? m : min_mem;
            need_pods++;
            spread = spread || (!fullnode[i] && p->n_topology_spread_constraints > 0);
        }
    }
    for (size_t j = 0; full && j < full->n; j++)
        spread = spread || (ds_pod_moves(full->v[j]) && full->v[j]->n_topology_spread_constraints > 0);
    /* A moving pod with a topology spread is placed against the count of
     * the pods its selector matches in every domain of the nodes that
     * stay, as kube-scheduler's PodTopologySpread filter counts them when
     * the evicted pod comes back: the reduced request sends too few nodes
     * and those without their pods (every count would read 0, and any
     * placement would be within skew), so such a probe sends the whole
     * cluster, the removed nodes named (their pods no longer count). */
    bool reduce = !s->no_reduce && !v->affinity && !spread;
    target *t = tlr_calloc(v->nnodes + 1, sizeof(*t));
    size_t nt = 0;
    for (size_t i = 0; i < v->nnodes; i++) {
        const ds_vnode *x = &v->nodes[i];
        const Tailor__V1__Node *nd = x->node;
        if (gone[i]) {
            if (!reduce) {
                Tailor__V1__Node *copy = tlr_malloc(sizeof(*copy));
                *copy = *nd;
                cs->nodes[cs->n_nodes++] = copy;
            }
            continue;
        }
        if (!reduce) {
            Tailor__V1__Node *copy = tlr_malloc(sizeof(*copy));
            *copy = *nd;
            cs->nodes[cs->n_nodes++] = copy;
            continue;
        }
        if (!need_pods || !nd->ready || nd->unschedulable || x->disrupting || !x->initialized)
            continue;
        const Tailor__V1__ResourceList *al = nd->allocatable, *rq = nd->requested;
        int64_t fc = (al ? al->cpu_millis : 0) - (rq ? rq->cpu_millis : 0);
        int64_t fm = (al ? al->memory_bytes : 0) - (rq ? rq->memory_bytes : 0);
        int64_t fp = (al && al->pods ? al->pods : 110) - (rq ? rq->pods : (int64_t)nd->n_pods);
        if (fc < min_cpu || fm < min_mem || fp < 1)
            continue;
        t[nt++] = (target){ i, fc, fm };
    }
    *eligible = nt;
    if (reduce) {
        /* the roomiest targets first, enough of them (limit) */
        if (limit && limit < nt)
            qsort(t, nt, sizeof(*t), by_room);
        size_t keep = limit && limit < nt ? limit : nt;
        for (size_t k = 0; k < keep; k++) {
            Tailor__V1__Node *copy = tlr_malloc(sizeof(*copy));
            *copy = *v->nodes[t[k].idx].node;
            if (!ports) {   /* their requested says how full they are */
                copy->pods = NULL;
                copy->n_pods = 0;
            }
            cs->nodes[cs->n_nodes++] = copy;
        }
        drop_unsent_claims(v, t, keep, cs);
        /* the removed nodes' pods go as pods to place: the nodes need not
         * be sent (nor looked up by name for every node the solver sees) */
        size_t np = 0;
        Tailor__V1__Pod **pp = tlr_calloc((size_t)need_pods + 1, sizeof(*pp));
        for (size_t i = 0; i < v->nnodes; i++) {
            if (!gone[i] || fullnode[i])
                continue;
            const Tailor__V1__Node *nd = v->nodes[i].node;
            for (size_t j = 0; j < nd->n_pods; j++)
                if (ds_pod_moves(nd->pods[j]))
                    pp[np++] = nd->pods[j];
        }
        if (full && full->n) {
            size_t fcap = np + full->n + 1;
            pp = tlr_realloc(pp, fcap * sizeof(*pp));
            for (size_t j = 0; j < full->n; j++)
                if (ds_pod_moves(full->v[j]) && !full->v[j]->deletion_unix_ms)
                    pp[np++] = full->v[j];
        }
        req->pending_pods = pp;
        req->n_pending_pods = np;
    } else {
        req->remove_node_names = (char **)names;
        req->n_remove_node_names = n;
        /* the full forms go as pending pods: the solver places them
         * instead of the removed nodes' compact copies (same uid) */
        size_t np = 0;
        Tailor__V1__Pod **pp = tlr_calloc((full ? full->n : 0) + 1, sizeof(*pp));
        for (size_t j = 0; full && j < full->n; j++)
            if (ds_pod_moves(full->v[j]) && !full->v[j]->deletion_unix_ms)
                pp[np++] = full->v[j];
        req->pending_pods = pp;
        req->n_pending_pods = np;
    }
    free(t);
    free(fullnode);
    free(gone);
    req->cluster = cs;
    req->allow_replacement = allow_replacement;
    req->max_replacements = max_replacements;
    req->now_unix_ms = v->now_ms;
    req->unavailable_offerings = (Tailor__V1__OfferingUnavailable **)s->ice;
    req->n_unavailable_offerings = s->nice;
    Tailor__V1__SolveOptions *o = tlr_malloc(sizeof(*o));
    tailor__v1__solve_options__init(o);
    o->timeout_ms = s->timeout_ms ? s->timeout_ms : 10000;
    o->max_instance_types = 60;
    o->min_values_policy = s->min_values_policy;
    o->preference_policy = s->preference_policy;
    req->options = o;
    if (v->catalog) {
        Tailor__V1__CatalogRef *ref = tlr_malloc(sizeof(*ref));
        tailor__v1__catalog_ref__init(ref);
        ref->hash = v->catalog->hash;
        ref->node_classes = tlr_calloc(src->n_node_classes + 1, sizeof(char *));
        for (size_t i = 0; i < src->n_node_classes; i++)
            ref->node_classes[ref->n_node_classes++] = src->node_classes[i]->name;
        req->catalogs = tlr_malloc(sizeof(*req->catalogs));
        req->catalogs[0] = ref;
        req->n_catalogs = 1;
    }
}

void ds_sim_request(const ds_sim *s, const char *const *names, size_t n, bool allow_replacement,
                    int max_replacements, Tailor__V1__SimulateRequest *req)
{
    size_t eligible;
    build(s, names, n, allow_replacement, max_replacements, 0, req, &eligible, NULL);
}

void ds_sim_request_free(Tailor__V1__SimulateRequest *req)
{
    if (req->cluster) {
        for (size_t i = 0; i < req->cluster->n_nodes; i++)
            free(req->cluster->nodes[i]);
        free(req->cluster->nodes);
        free(req->cluster->nodeclaims);
        free(req->cluster);
    }
    free(req->pending_pods);
    for (size_t i = 0; i < req->n_catalogs; i++) {
        free(req->catalogs[i]->node_classes);
        free(req->catalogs[i]);
    }
    free(req->catalogs);
    free(req->options);
    tailor__v1__simulate_request__init(req);
}

/* How many of the roomiest targets to try first: enough free room for the
 * moving pods 1.5 times over (but at least 16).  A plan found on a subset
 * of the nodes is a plan on all of them, so only a miss is sent again in
 * full.  0 = all. */
static size_t first_limit(const ds_sim *s, const char *const *names, size_t n)
{
    const ds_view *v = s->v;
    int64_t cpu = 0;
    for (size_t i = 0; i < n; i++) {
        const ds_vnode *x = ds_view_node(v, names[i]);
        if (x && x->node->requested)
            cpu += x->node->requested->cpu_millis;
    }
    int64_t per = 0, cnt = 0;
    for (size_t i = 0; i < v->nnodes; i++) {
        const Tailor__V1__Node *nd = v->nodes[i].node;
        if (nd->allocatable && nd->requested && nd->allocatable->cpu_millis > nd->requested->cpu_millis) {
            per += nd->allocatable->cpu_millis - nd->requested->cpu_millis;
            cnt++;
        }
    }
    if (!cnt || !per)
        return 0;
    size_t lim = (size_t)(1.5 * (double)cpu / ((double)per / (double)cnt)) + 16;
    return lim;
}

static int send(ds_sim *s, const char *const *all, size_t na, bool allow_replacement,
                int max_replacements, size_t limit, Tailor__V1__SimulateResponse **resp,
                size_t *sent, size_t *eligible)
{
    Tailor__V1__SimulateRequest req;
    owned full = { 0 };
    build(s, all, na, allow_replacement, max_replacements, limit, &req, eligible, &full);
    *sent = req.cluster->n_nodes;
    int64_t t0 = tlr_mono_ms();
    int rc = s->solver.simulate(s->solver.arg, &req, resp);
    s->calls++;
    s->ms += (double)(tlr_mono_ms() - t0);
    ds_sim_request_free(&req);
    owned_free(&full);
    return rc;
}

int ds_sim_run(ds_sim *s, const char *const *names, size_t n, bool allow_replacement,
               int max_replacements, ds_sim_result *out)
{
    memset(out, 0, sizeof(*out));
    if (!s->v->catalog) {
        snprintf(out->why, sizeof(out->why), "no instance catalog: nodes cannot be priced");
        return TLR_E_NOTREADY;
    }
    const char **all = tlr_calloc(n + s->nextra + 1, sizeof(*all));
    size_t na = 0;
    for (size_t i = 0; i < n; i++)
        all[na++] = names[i];
    bool *given = marks_of(s->v, names, n);
    for (size_t i = 0; i < s->nextra; i++) {
        const ds_vnode *x = ds_view_node(s->v, s->extra[i]);
        if (!x || !given[x - s->v->nodes])
            all[na++] = s->extra[i];
    }
    free(given);
    Tailor__V1__SimulateResponse *resp = NULL;
    size_t limit = s->no_reduce || s->v->affinity ? 0 : first_limit(s, all, na), eligible = 0;
    int rc = send(s, all, na, allow_replacement, max_replacements, limit, &resp, &out->sent_nodes,
                  &eligible);
    /* a miss on a subset may be a hit on all: ask again with every target */
    if (rc == TLR_OK && limit && limit < eligible && resp->status && !resp->status->code &&
        (!resp->feasible || resp->n_replacements)) {
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        resp = NULL;
        rc = send(s, all, na, allow_replacement, max_replacements, 0, &resp, &out->sent_nodes,
                  &eligible);
    }
    free(all);
    if (rc) {
        snprintf(out->why, sizeof(out->why), "Simulate failed: %s", tlr_strerror(rc));
        return rc;
    }
    if (resp->status && resp->status->code) {
        snprintf(out->why, sizeof(out->why), "Simulate: %s", resp->status->message);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        return TLR_E_REMOTE;
    }
    out->resp = resp;
    out->feasible = resp->feasible;
    for (size_t i = 0; i < n; i++) {
        const ds_vnode *x = ds_view_node(s->v, names[i]);
        out->before += x ? x->price : 0;
    }
    out->after = resp->cost_after_per_hour;
    out->savings = resp->feasible ? out->before - out->after : 0;
    out->nreplacements = resp->n_replacements;
    if (!resp->feasible) {
        if (resp->timed_out)
            snprintf(out->why, sizeof(out->why), "the simulation timed out");
        else if (resp->n_pod_errors) {
            const Tailor__V1__PodError *e = resp->pod_errors[0];
            const char *r = e->n_reasons ? e->reasons[0]->reason
                                         : e->status ? e->status->message : "";
            snprintf(out->why, sizeof(out->why), "pod %s/%s would not fit elsewhere%s%s%s",
                     e->namespace_, e->name, r[0] ? " (" : "", r, r[0] ? ")" : "");
            if (resp->n_pod_errors > 1) {
                size_t l = strlen(out->why);
                snprintf(out->why + l, sizeof(out->why) - l, ", and %zu more",
                         resp->n_pod_errors - 1);
            }
        } else
            snprintf(out->why, sizeof(out->why), "the pods would not fit elsewhere");
    }
    return TLR_OK;
}

void ds_sim_result_clear(ds_sim *s, ds_sim_result *r)
{
    if (r->resp)
        protobuf_c_message_free_unpacked(&r->resp->base, NULL);
    memset(r, 0, sizeof(*r));
}
