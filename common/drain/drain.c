/* drain.c - drain decisions and the drain pass (tlr_drain.h).
 *
 * tlr_drain_decide() is the whole policy and touches nothing but its
 * arguments; tlr_drain_pass() is the loop around it that talks to the API
 * server through tlr_drain_ops, so a recording fake exercises every path.
 */
#include "tlr_drain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"
#include "tlr_time.h"

const char *tlr_drain_verdict_name(tlr_drain_verdict v)
{
    static const char *const names[] = {
        [TLR_DRAIN_SKIP_TERMINAL] = "skip-terminal",
        [TLR_DRAIN_SKIP_MIRROR] = "skip-mirror",
        [TLR_DRAIN_SKIP_TOLERATES] = "skip-tolerates",
        [TLR_DRAIN_SKIP_STUCK] = "skip-stuck",
        [TLR_DRAIN_WAIT_TERMINATING] = "wait-terminating",
        [TLR_DRAIN_WAIT_TIER] = "wait-tier",
        [TLR_DRAIN_WAIT_DO_NOT_DISRUPT] = "wait-do-not-disrupt",
        [TLR_DRAIN_WAIT_BACKOFF] = "wait-backoff",
        [TLR_DRAIN_EVICT] = "evict",
        [TLR_DRAIN_FORCE_DELETE] = "force-delete",
    };
    return (unsigned)v < sizeof(names) / sizeof(names[0]) && names[v] ? names[v] : "?";
}

/* ---- retry memory ------------------------------------------------------ */

typedef struct retry {
    char *uid;
    int refusals;
    int64_t retry_at_ms;
    tlr_drain_block_kind kind;   /* what refused it last */
    char *object, *message;
    bool keep;                   /* seen by the last tlr_drain_state_keep */
} retry;

struct tlr_drain_state {
    struct lh_table *t;          /* uid -> retry */
};

static void retry_free(struct lh_entry *e)
{
    retry *r = (retry *)lh_entry_v(e);
    free(r->uid);
    free(r->object);
    free(r->message);
    free(r);
}

void tlr_drain_state_create(tlr_drain_state **out)
{
    tlr_drain_state *s = tlr_calloc(1, sizeof(*s));
    s->t = lh_kchar_table_new(64, retry_free);
    *out = s;
}

void tlr_drain_state_free(tlr_drain_state *s)
{
    if (!s)
        return;
    lh_table_free(s->t);
    free(s);
}

static retry *retry_get(const tlr_drain_state *s, const char *uid)
{
    void *v = NULL;
    if (!s || !uid || !lh_table_lookup_ex(s->t, uid, &v))
        return NULL;
    return v;
}

static retry *retry_put(tlr_drain_state *s, const char *uid)
{
    retry *r = retry_get(s, uid);
    if (r)
        return r;
    r = tlr_calloc(1, sizeof(*r));
    r->uid = tlr_strdup(uid);
    lh_table_insert(s->t, r->uid, r);
    return r;
}

void tlr_drain_state_keep(tlr_drain_state *s, const char *const *uids, size_t n)
{
    if (!s)
        return;
    struct lh_entry *e;
    lh_foreach(s->t, e)
        ((retry *)lh_entry_v(e))->keep = false;
    for (size_t i = 0; i < n; i++) {
        retry *r = retry_get(s, uids[i]);
        if (r)
            r->keep = true;
    }
    struct lh_entry *tmp;
    lh_foreach_safe(s->t, e, tmp) {
        retry *r = (retry *)lh_entry_v(e);
        if (!r->keep)
            lh_table_delete(s->t, r->uid);
    }
}

int64_t tlr_drain_state_refused(tlr_drain_state *s, const char *uid, int64_t now_ms,
                                int64_t min_ms, int64_t max_ms)
{
    retry *r = retry_put(s, uid);
    r->refusals++;
    int64_t d = min_ms;
    for (int i = 1; i < r->refusals && d < max_ms; i++)
        d *= 2;
    if (d > max_ms)
        d = max_ms;
    r->retry_at_ms = now_ms + d;
    return r->retry_at_ms;
}

int tlr_drain_state_refusals(const tlr_drain_state *s, const char *uid)
{
    const retry *r = retry_get(s, uid);
    return r ? r->refusals : 0;
}

static void retry_note(tlr_drain_state *s, const char *uid, tlr_drain_block_kind kind,
                       const char *object, const char *message)
{
    retry *r = retry_put(s, uid);
    r->kind = kind;
    free(r->object);
    free(r->message);
    r->object = tlr_strdup(object ? object : "");
    r->message = tlr_strdup(message ? message : "");
}

/* ---- pod predicates ----------------------------------------------------- */

const char *tlr_drain_pod_annotation(const Tailor__V1__Pod *p, const char *key)
{
    for (size_t i = 0; i < p->n_annotations; i++)
        if (!strcmp(p->annotations[i]->key, key))
            return p->annotations[i]->value;
    return NULL;
}

bool tlr_drain_pod_terminal(const Tailor__V1__Pod *p)
{
    return p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED ||
           p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_FAILED;
}

bool tlr_drain_pod_mirror(const Tailor__V1__Pod *p)
{
    for (size_t i = 0; i < p->n_owners; i++)
        if (!strcmp(p->owners[i]->kind, "Node") &&
            (!p->owners[i]->api_version[0] || !strcmp(p->owners[i]->api_version, "v1")))
            return true;
    return false;
}

bool tlr_drain_pod_critical(const Tailor__V1__Pod *p)
{
    return !strcmp(p->priority_class_name, "system-cluster-critical") ||
           !strcmp(p->priority_class_name, "system-node-critical");
}

bool tlr_drain_pod_tolerates_disrupted(const Tailor__V1__Pod *p)
{
    Tailor__V1__Taint t = TAILOR__V1__TAINT__INIT;
    t.key = (char *)TLR_DRAIN_TAINT_KEY;
    t.effect = TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE;
    Tailor__V1__Taint *list[1] = { &t };
    return p->n_tolerations > 0 && tlr_ks_pod_tolerates(p, list, 1);
}

bool tlr_drain_pod_do_not_disrupt(const Tailor__V1__Pod *p, int64_t now_ms, int64_t *until_ms)
{
    const char *v = tlr_drain_pod_annotation(p, TLR_DRAIN_DO_NOT_DISRUPT);
    if (until_ms)
        *until_ms = 0;
    if (!v)
        return false;
    if (!strcmp(v, "true"))
        return true;
    int64_t d = 0;
    if (tlr_duration_parse(v, &d) != TLR_OK || d <= 0)
        return false;   /* invalid: as if absent (Karpenter) */
    if (!p->creation_unix_ms)
        return true;    /* start unknown: fail safe */
    if (until_ms)
        *until_ms = p->creation_unix_ms + d;
    return now_ms < p->creation_unix_ms + d;
}

bool tlr_drain_pdb_selects(const Tailor__V1__PodDisruptionBudget *b, const Tailor__V1__Pod *p)
{
    return !strcmp(b->namespace_, p->namespace_) &&
           tlr_ks_selector_matches(b->selector, p->labels, p->n_labels);
}

static int tier_of(const Tailor__V1__Pod *p)
{
    return (tlr_drain_pod_critical(p) ? 2 : 0) + (p->is_daemonset ? 1 : 0);
}

/* Karpenter needsForceDelete: the pod's grace would run past the deadline. */
static bool needs_force(const Tailor__V1__Pod *p, const tlr_drain_opts *o)
{
    if (!o->deadline_ms)
        return false;
    if (p->deletion_unix_ms)
        return p->deletion_unix_ms > o->deadline_ms;
    return o->now_ms > o->deadline_ms - p->termination_grace_period_ms;
}

/* ---- decide ------------------------------------------------------------ */

void tlr_drain_decide(const Tailor__V1__Pod *const *pods, size_t npods,
                      const Tailor__V1__PodDisruptionBudget *const *pdbs, size_t npdbs,
                      const tlr_drain_state *st, const tlr_drain_opts *o,
                      tlr_drain_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->items = tlr_calloc(npods + 1, sizeof(*out->items));
    out->n = npods;
    out->tier = -1;
    bool graceful_in_tier[4] = { false };
    for (size_t i = 0; i < npods; i++) {
        const Tailor__V1__Pod *p = pods[i];
        tlr_drain_item *it = &out->items[i];
        it->pod = p;
        it->tier = tier_of(p);
        for (size_t k = 0; k < npdbs; k++) {
            if (!tlr_drain_pdb_selects(pdbs[k], p))
                continue;
            if (!it->npdbs++) {
                it->pdb = pdbs[k]->name;
                it->pdb_blocks = pdbs[k]->disruptions_allowed <= 0;
            }
        }
        if (tlr_drain_pod_terminal(p)) {
            it->verdict = TLR_DRAIN_SKIP_TERMINAL;
            continue;
        }
        if (tlr_drain_pod_mirror(p)) {
            it->verdict = TLR_DRAIN_SKIP_MIRROR;
            continue;
        }
        if (tlr_drain_pod_tolerates_disrupted(p)) {
            it->verdict = TLR_DRAIN_SKIP_TOLERATES;
            continue;
        }
        if (p->deletion_unix_ms && o->now_ms - p->deletion_unix_ms > TLR_DRAIN_STUCK_MS) {
            it->verdict = TLR_DRAIN_SKIP_STUCK;
            continue;
        }
        out->waiting++;
        if (needs_force(p, o)) {
            it->verdict = TLR_DRAIN_FORCE_DELETE;
            int64_t left = (o->deadline_ms - o->now_ms) / 1000;
            it->grace_s = left > 1 ? left : 1;
            continue;
        }
        it->verdict = TLR_DRAIN_WAIT_TIER;   /* refined below */
        graceful_in_tier[it->tier] = true;
    }
    for (int t = 0; t < 4; t++)
        if (graceful_in_tier[t]) {
            out->tier = t;
            break;
        }
    for (size_t i = 0; i < npods && out->tier >= 0; i++) {
        tlr_drain_item *it = &out->items[i];
        if (it->verdict != TLR_DRAIN_WAIT_TIER || it->tier != out->tier)
            continue;
        const Tailor__V1__Pod *p = it->pod;
        const retry *r = retry_get(st, p->uid);
        if (p->deletion_unix_ms)
            it->verdict = TLR_DRAIN_WAIT_TERMINATING;
        else if (tlr_drain_pod_do_not_disrupt(p, o->now_ms, &it->dnd_until_ms))
            it->verdict = TLR_DRAIN_WAIT_DO_NOT_DISRUPT;
        else if (r && r->retry_at_ms > o->now_ms) {
            it->verdict = TLR_DRAIN_WAIT_BACKOFF;
            it->retry_at_ms = r->retry_at_ms;
        } else
            it->verdict = TLR_DRAIN_EVICT;
    }
    out->done = out->waiting == 0;
}

void tlr_drain_plan_clear(tlr_drain_plan *p)
{
    if (!p)
        return;
    free(p->items);
    memset(p, 0, sizeof(*p));
}

/* ---- act --------------------------------------------------------------- */

void tlr_drain_report_clear(tlr_drain_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nblockers; i++) {
        free(r->blockers[i].pod_ns);
        free(r->blockers[i].pod_name);
        free(r->blockers[i].object);
        free(r->blockers[i].message);
    }
    free(r->blockers);
    memset(r, 0, sizeof(*r));
}

static void add_blocker(tlr_drain_report *r, size_t *cap, tlr_drain_block_kind kind,
                        const Tailor__V1__Pod *p, const char *object, const char *message)
{
    TLR_GROW(r->blockers, *cap, r->nblockers + 1);
    tlr_drain_blocker *b = &r->blockers[r->nblockers++];
    b->kind = kind;
    b->pod_ns = tlr_strdup(p->namespace_);
    b->pod_name = tlr_strdup(p->name);
    b->object = tlr_strdup(object ? object : "");
    b->message = tlr_strdup(message);
}

void tlr_drain_report_summary(const tlr_drain_report *r, size_t max, char *buf, size_t len)
{
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < r->nblockers && i < max && at + 1 < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? "; " : "", r->blockers[i].message);
        if (w < 0)
            break;
        at += (size_t)w < len - at ? (size_t)w : len - at - 1;
    }
    if (r->nblockers > max && at + 1 < len)
        snprintf(buf + at, len - at, "; and %zu more", r->nblockers - max);
}

static void free_pods(Tailor__V1__Pod **pods, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tlr_kubeobj_free(pods[i]);
    free(pods);
}

static void free_pdbs(Tailor__V1__PodDisruptionBudget **pdbs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tlr_kubeobj_free(pdbs[i]);
    free(pdbs);
}

/* The PDB message for a refused eviction of it; api is the server's words. */
static void pdb_message(const tlr_drain_item *it, const char *api, char *buf, size_t len)
{
    const Tailor__V1__Pod *p = it->pod;
    char tail[540] = "";
    if (api && *api)
        snprintf(tail, sizeof(tail), " (%s)", api);
    if (it->pdb)
        snprintf(buf, len, "cannot evict pod %s/%s: PodDisruptionBudget %s/%s allows no "
                 "disruption now%s", p->namespace_, p->name, p->namespace_, it->pdb, tail);
    else
        snprintf(buf, len, "cannot evict pod %s/%s: a PodDisruptionBudget allows no "
                 "disruption now%s", p->namespace_, p->name, tail);
}

int tlr_drain_pass(const tlr_drain_ops *ops, const char *node, tlr_drain_state *st,
                   const tlr_drain_opts *o, tlr_drain_report *rep)
{
    memset(rep, 0, sizeof(*rep));
    rep->tier = -1;
    Tailor__V1__Pod **pods = NULL;
    Tailor__V1__PodDisruptionBudget **pdbs = NULL;
    size_t npods = 0, npdbs = 0, cap = 0;
    int rc = ops->list_pods(ops->arg, node, &pods, &npods);
    if (rc)
        return rc;
    if (ops->list_pdbs(ops->arg, &pdbs, &npdbs) != TLR_OK) {
        pdbs = NULL;   /* PDBs only name blockers: drain on without them */
        npdbs = 0;
    }
    tlr_drain_opts eo = *o;
    if (!eo.backoff_min_ms)
        eo.backoff_min_ms = 100;
    if (!eo.backoff_max_ms)
        eo.backoff_max_ms = 10000;
    tlr_drain_plan plan;
    tlr_drain_decide((const Tailor__V1__Pod *const *)pods, npods,
                     (const Tailor__V1__PodDisruptionBudget *const *)pdbs, npdbs, st, &eo, &plan);
    rep->pods = npods;
    rep->waiting = plan.waiting;
    rep->tier = plan.tier;
    rep->done = plan.done;
    char msg[768], api[512], why[512];
    for (size_t i = 0; i < plan.n; i++) {
        const tlr_drain_item *it = &plan.items[i];
        const Tailor__V1__Pod *p = it->pod;
        api[0] = '\0';
        switch (it->verdict) {
        case TLR_DRAIN_EVICT: {
            why[0] = '\0';
            if (ops->guard && ops->guard(ops->guard_arg, p, why, sizeof(why)) == TLR_E_BUSY) {
                snprintf(msg, sizeof(msg), "pod %s/%s waits: %s", p->namespace_, p->name, why);
                add_blocker(rep, &cap, TLR_DRAIN_BLOCK_GUARD, p, NULL, msg);
                break;
            }
            int erc = ops->evict(ops->arg, p, api, sizeof(api));
            if (erc == TLR_OK) {
                rep->evicted++;
            } else if (erc == TLR_E_NOTFOUND || erc == TLR_E_CONFLICT) {
                /* gone or replaced: nothing to do */
            } else if (erc == TLR_E_THROTTLED) {
                rep->refused++;
                pdb_message(it, api, msg, sizeof(msg));
                if (st) {
                    tlr_drain_state_refused(st, p->uid, eo.now_ms, eo.backoff_min_ms,
                                            eo.backoff_max_ms);
                    retry_note(st, p->uid, TLR_DRAIN_BLOCK_PDB, it->pdb, msg);
                }
                char obj[512];
                snprintf(obj, sizeof(obj), "%s/%s", p->namespace_, it->pdb ? it->pdb : "");
                add_blocker(rep, &cap, TLR_DRAIN_BLOCK_PDB, p, it->pdb ? obj : NULL, msg);
            } else {
                bool multi = it->npdbs > 1;
                if (multi)
                    snprintf(msg, sizeof(msg),
                             "cannot evict pod %s/%s: %d PodDisruptionBudgets select it and the "
                             "Eviction API supports one",
                             p->namespace_, p->name, it->npdbs);
                else
                    snprintf(msg, sizeof(msg), "cannot evict pod %s/%s: %s (%s)", p->namespace_,
                             p->name, api[0] ? api : tlr_strerror(erc), tlr_errname(erc));
                tlr_drain_block_kind k = multi ? TLR_DRAIN_BLOCK_MULTIPLE_PDBS
                                               : TLR_DRAIN_BLOCK_ERROR;
                if (st) {
                    tlr_drain_state_refused(st, p->uid, eo.now_ms, eo.backoff_min_ms,
                                            eo.backoff_max_ms);
                    retry_note(st, p->uid, k, NULL, msg);
                }
                add_blocker(rep, &cap, k, p, NULL, msg);
            }
            break;
        }
        case TLR_DRAIN_FORCE_DELETE: {
            int drc = ops->delete_pod(ops->arg, p, it->grace_s, api, sizeof(api));
            if (drc == TLR_OK || drc == TLR_E_NOTFOUND) {
                rep->deleted++;
            } else {
                snprintf(msg, sizeof(msg), "cannot delete pod %s/%s past the deadline: %s",
                         p->namespace_, p->name, api[0] ? api : tlr_strerror(drc));
                add_blocker(rep, &cap, TLR_DRAIN_BLOCK_ERROR, p, NULL, msg);
            }
            break;
        }
        case TLR_DRAIN_WAIT_DO_NOT_DISRUPT: {
            const char *v = tlr_drain_pod_annotation(p, TLR_DRAIN_DO_NOT_DISRUPT);
            snprintf(msg, sizeof(msg), "pod %s/%s has %s=%s", p->namespace_, p->name,
                     TLR_DRAIN_DO_NOT_DISRUPT, v ? v : "");
            add_blocker(rep, &cap, TLR_DRAIN_BLOCK_DO_NOT_DISRUPT, p, NULL, msg);
            break;
        }
        case TLR_DRAIN_WAIT_BACKOFF: {
            const retry *r = retry_get(st, p->uid);
            if (r && r->message && r->message[0]) {
                char obj[512];
                snprintf(obj, sizeof(obj), "%s/%s", p->namespace_, r->object);
                add_blocker(rep, &cap, r->kind, p, r->object[0] ? obj : NULL, r->message);
            }
            break;
        }
        default:
            break;
        }
    }
    if (st) {
        const char **uids = tlr_calloc(npods + 1, sizeof(*uids));
        for (size_t i = 0; i < npods; i++)
            uids[i] = pods[i]->uid;
        tlr_drain_state_keep(st, uids, npods);
        free(uids);
    }
    tlr_drain_plan_clear(&plan);
    free_pods(pods, npods);
    free_pdbs(pdbs, npdbs);
    return TLR_OK;
}
