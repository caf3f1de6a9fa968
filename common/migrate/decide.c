/* decide.c - the migration's step machine (tlr_migrate.h): which nodes go
 * next, is a batch's work back, is the cluster healthy, who holds the
 * lock, which pod needs a rolling restart first, what a rollback undoes.
 *
 * Pure functions over the checkpoint and plain views of the cluster; the
 * caller (tools/tailorctl/migrate_run.c) reads the cluster, asks, acts,
 * and writes the checkpoint before each act, so a crash at any point
 * resumes at the step the checkpoint names.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate_int.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

#define MAX_PROBLEMS 20

static const char *const step_names[] = { "freeze", "start", "drain", "wait", "health",
                                          "remove", "pause", "done" };

const char *tlr_mig_step_name(tlr_mig_step s)
{
    return (unsigned)s < sizeof(step_names) / sizeof(step_names[0]) ? step_names[s] : "?";
}

const tlr_mig_nodev *mig_nodev(const tlr_mig_nodev *nodes, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].name, name) == 0)
            return &nodes[i];
    return NULL;
}

static bool in_flight(tlr_mig_node_state st)
{
    return st >= TLR_MIG_NODE_DRAINING && st <= TLR_MIG_NODE_REMOVING;
}

/* ---- merge --------------------------------------------------------------- */

static int cmp_view_name(const void *a, const void *b)
{
    return strcmp((*(const tlr_mig_nodev *const *)a)->name,
                  (*(const tlr_mig_nodev *const *)b)->name);
}

static void fill_empty(char **field, const char *v)
{
    if ((*field == NULL || (*field)[0] == '\0') && v != NULL && v[0] != '\0') {
        free(*field);
        *field = tlr_strdup(v);
    }
}

size_t tlr_mig_merge(tlr_mig_state *s, const tlr_mig_nodev *nodes, size_t n, int64_t now_ms)
{
    const tlr_mig_nodev **fresh = tlr_calloc(n + 1, sizeof(*fresh));
    size_t nfresh = 0;

    for (size_t i = 0; i < n; i++) {
        if (!nodes[i].selected)
            continue;
        tlr_mig_node *have = tlr_mig_state_node(s, nodes[i].name);
        if (have == NULL) {
            fresh[nfresh++] = &nodes[i];
            continue;
        }
        fill_empty(&have->instance, nodes[i].instance);
        fill_empty(&have->asg, nodes[i].asg);
        fill_empty(&have->zone, nodes[i].zone);
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        tlr_mig_node *nd = &s->nodes[i];
        const tlr_mig_nodev *v = mig_nodev(nodes, n, nd->name);
        if (nd->state == TLR_MIG_NODE_PENDING && (v == NULL || !v->selected))
            tlr_mig_node_set(nd, TLR_MIG_NODE_GONE,
                             v == NULL ? "the node went away before its turn"
                                       : "the node is no longer selected", now_ms);
    }
    if (nfresh > 1)
        qsort(fresh, nfresh, sizeof(*fresh), cmp_view_name);
    if (nfresh > 0)
        s->nodes = tlr_realloc(s->nodes, (s->nnodes + nfresh) * sizeof(*s->nodes));
    for (size_t i = 0; i < nfresh; i++) {
        tlr_mig_node *nd = &s->nodes[s->nnodes++];
        memset(nd, 0, sizeof(*nd));
        nd->name = tlr_strdup(fresh[i]->name);
        nd->instance = tlr_strdup(fresh[i]->instance ? fresh[i]->instance : "");
        nd->asg = tlr_strdup(fresh[i]->asg ? fresh[i]->asg : "");
        nd->zone = tlr_strdup(fresh[i]->zone ? fresh[i]->zone : "");
        nd->message = tlr_strdup("");
        nd->was_cordoned = fresh[i]->unschedulable;
    }
    free(fresh);
    return nfresh;
}

/* ---- next ---------------------------------------------------------------- */

void tlr_mig_decide_next(const tlr_mig_state *s, const tlr_mig_next_opts *o, tlr_mig_next *out)
{
    memset(out, 0, sizeof(*out));
    out->nodes = tlr_calloc(s->nnodes + 1, sizeof(*out->nodes));
    if (!s->frozen) {
        out->step = TLR_MIG_STEP_FREEZE;
        return;
    }
    tlr_mig_node_state least = TLR_MIG_NODE_DONE;
    for (size_t i = 0; i < s->nnodes; i++)
        if (in_flight(s->nodes[i].state)) {
            out->nodes[out->n++] = i;
            if (s->nodes[i].state < least)
                least = s->nodes[i].state;
        }
    if (out->n > 0) {
        switch (least) {
        case TLR_MIG_NODE_DRAINING: out->step = TLR_MIG_STEP_DRAIN; break;
        case TLR_MIG_NODE_REPLACING: out->step = TLR_MIG_STEP_WAIT; break;
        case TLR_MIG_NODE_VERIFYING: out->step = TLR_MIG_STEP_HEALTH; break;
        default: out->step = TLR_MIG_STEP_REMOVE; break;
        }
        return;
    }
    int batch = o->batch > 0 ? o->batch : 1;
    if (o->max_nodes > 0) {
        int room = o->max_nodes - o->started;
        if (room <= 0) {
            for (size_t i = 0; i < s->nnodes; i++)
                if (s->nodes[i].state == TLR_MIG_NODE_PENDING) {
                    out->step = TLR_MIG_STEP_PAUSE;
                    return;
                }
            out->step = TLR_MIG_STEP_DONE;
            return;
        }
        if (room < batch)
            batch = room;
    }
    for (size_t i = 0; i < s->nnodes && out->n < (size_t)batch; i++)
        if (s->nodes[i].state == TLR_MIG_NODE_PENDING)
            out->nodes[out->n++] = i;
    out->step = out->n > 0 ? TLR_MIG_STEP_START : TLR_MIG_STEP_DONE;
}

void tlr_mig_next_clear(tlr_mig_next *n)
{
    if (n == NULL)
        return;
    free(n->nodes);
    memset(n, 0, sizeof(*n));
}

/* ---- a batch ---------------------------------------------------------------- */

static bool same_owner(const tlr_mig_podv *p, const char *kind, const char *ns, const char *name)
{
    return p->owner_kind && p->owner_name && strcmp(p->owner_kind, kind) == 0 &&
           strcmp(p->ns, ns) == 0 && strcmp(p->owner_name, name) == 0;
}

static bool live_ready(const tlr_mig_podv *p)
{
    return p->ready && !p->deleting && !p->terminal;
}

/* Is node name one of the current batch's? */
static bool batch_node(const tlr_mig_state *s, const char *name)
{
    if (name == NULL || name[0] == '\0')
        return false;
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->nodes[i].batch == s->batch_no && s->batch_no > 0 &&
            in_flight(s->nodes[i].state) && strcmp(s->nodes[i].name, name) == 0)
            return true;
    return false;
}

static bool on_tailor(const tlr_mig_nodev *nodes, size_t n, const char *node)
{
    const tlr_mig_nodev *v = node && node[0] ? mig_nodev(nodes, n, node) : NULL;
    return v != NULL && v->tailor;
}

/* Pods a batch waits to see again: they have a controller that recreates
 * them and are not a DaemonSet's (those go with the node). */
static bool waited_for(const tlr_mig_podv *p)
{
    return p->owner_kind && p->owner_kind[0] && strcmp(p->owner_kind, "DaemonSet") != 0 &&
           strcmp(p->owner_kind, "Node") != 0 && !p->terminal;
}

static void take_baseline(tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods);

void tlr_mig_batch_begin(tlr_mig_state *s, const size_t *idx, size_t n,
                         const tlr_mig_podv *pods, size_t npods, const tlr_mig_nodev *nodes,
                         size_t nnodes, int64_t now_ms)
{
    s->batch_no++;
    mig_baseline_clear(s);
    for (size_t i = 0; i < n; i++) {
        tlr_mig_node *nd = &s->nodes[idx[i]];
        nd->batch = s->batch_no;
        nd->started_ms = now_ms;
        nd->pods = 0;
        tlr_mig_node_set(nd, TLR_MIG_NODE_DRAINING, "", now_ms);
    }
    take_baseline(s, pods, npods);
    size_t cap = 0;
    for (size_t i = 0; i < npods; i++) {
        const tlr_mig_podv *p = &pods[i];
        if (!batch_node(s, p->node) || p->terminal)
            continue;
        tlr_mig_node *nd = tlr_mig_state_node(s, p->node);
        bool ds = p->owner_kind && strcmp(p->owner_kind, "DaemonSet") == 0;
        if (nd && !ds && !p->deleting)
            nd->pods++;
        if (!waited_for(p) || !live_ready(p))
            continue;
        tlr_mig_owner *o = NULL;
        for (size_t k = 0; k < s->nowners && !o; k++)
            if (same_owner(p, s->owners[k].kind, s->owners[k].ns, s->owners[k].name))
                o = &s->owners[k];
        if (o == NULL) {
            TLR_GROW(s->owners, cap, s->nowners + 1);
            o = &s->owners[s->nowners++];
            *o = (tlr_mig_owner){ tlr_strdup(p->owner_kind), tlr_strdup(p->ns),
                                  tlr_strdup(p->owner_name), 0, 0, 0 };
            for (size_t k = 0; k < npods; k++)
                if (same_owner(&pods[k], o->kind, o->ns, o->name) && live_ready(&pods[k])) {
                    o->ready_before++;
                    if (on_tailor(nodes, nnodes, pods[k].node))
                        o->tailor_before++;
                }
        }
        o->displaced++;
    }
}

static void take_baseline(tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods)
{
    size_t cap = 0;
    for (size_t i = 0; i < s->nbaseline; i++) {
        free(s->baseline[i].uid);
        free(s->baseline[i].pod);
    }
    free(s->baseline);
    s->baseline = NULL;
    s->nbaseline = 0;
    for (size_t i = 0; i < npods; i++) {
        const tlr_mig_podv *p = &pods[i];
        if (p->restarts > 0 || p->crashloop) {
            TLR_GROW(s->baseline, cap, s->nbaseline + 1);
            char who[512];
            snprintf(who, sizeof(who), "%s/%s", p->ns, p->name);
            s->baseline[s->nbaseline++] = (tlr_mig_restart){ tlr_strdup(p->uid),
                                                              tlr_strdup(who), p->restarts,
                                                              p->crashloop };
        }
    }
}

void tlr_mig_rebaseline(tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods)
{
    take_baseline(s, pods, npods);
}

bool tlr_mig_replaced(const tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods,
                      const tlr_mig_nodev *nodes, size_t nnodes, char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    for (size_t k = 0; k < s->nowners; k++) {
        const tlr_mig_owner *o = &s->owners[k];
        int left = 0, ready = 0, tailor = 0, elsewhere = 0, waiting = 0;
        const char *left_on = "";
        for (size_t i = 0; i < npods; i++) {
            const tlr_mig_podv *p = &pods[i];
            if (!same_owner(p, o->kind, o->ns, o->name) || p->terminal)
                continue;
            if (batch_node(s, p->node)) {
                if (!p->deleting) {
                    left++;
                    left_on = p->node;
                }
                continue;
            }
            if (!live_ready(p)) {
                waiting += !p->deleting;
                continue;
            }
            ready++;
            if (on_tailor(nodes, nnodes, p->node))
                tailor++;
            else
                elsewhere++;
        }
        int want_tailor = o->tailor_before + o->displaced;
        if (left > 0) {
            snprintf(why, len, "%s %s/%s: %d pod%s still on %s", o->kind, o->ns, o->name, left,
                     left == 1 ? "" : "s", left_on);
            return false;
        }
        if (ready < o->ready_before) {
            snprintf(why, len, "%s %s/%s: %d of %d pods Ready (%d starting or pending)", o->kind,
                     o->ns, o->name, ready, o->ready_before, waiting);
            return false;
        }
        if (tailor < want_tailor) {
            snprintf(why, len, "%s %s/%s: %d of %d displaced pods Ready on tailor's nodes "
                     "(%d Ready on other nodes, %d starting or pending)", o->kind, o->ns,
                     o->name, tailor - o->tailor_before < 0 ? 0 : tailor - o->tailor_before,
                     o->displaced, elsewhere, waiting);
            return false;
        }
    }
    return true;
}

/* ---- health ------------------------------------------------------------------ */

static const tlr_mig_restart *baseline_of(const tlr_mig_state *s, const char *uid)
{
    for (size_t i = 0; i < s->nbaseline; i++)
        if (strcmp(s->baseline[i].uid, uid) == 0)
            return &s->baseline[i];
    return NULL;
}

static void problem(tlr_mig_health *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(tlr_mig_health *h, const char *fmt, ...)
{
    if (h->nproblems >= MAX_PROBLEMS)
        return;
    va_list ap;
    va_start(ap, fmt);
    tlr_strv_vaddf(&h->problems, &h->nproblems, fmt, ap);
    va_end(ap);
}

void tlr_mig_health_check(const tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods,
                          const tlr_mig_health_opts *o, tlr_mig_health *out)
{
    int threshold = o->restart_threshold > 0 ? o->restart_threshold : 1;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < npods; i++) {
        const tlr_mig_podv *p = &pods[i];
        if (p->terminal || p->deleting)
            continue;
        if (p->node == NULL || p->node[0] == '\0') {
            out->pending++;
            continue;
        }
        const tlr_mig_restart *b = baseline_of(s, p->uid);
        int before = b ? b->restarts : 0;
        if (p->crashloop && !(b && b->crashloop)) {
            out->crashing++;
            problem(out, "pod %s/%s is in CrashLoopBackOff (it was not when batch %d began)",
                    p->ns, p->name, s->batch_no);
        } else if (p->restarts - before >= threshold) {
            out->crashing++;
            problem(out, "pod %s/%s restarted %d time%s since batch %d began", p->ns, p->name,
                    p->restarts - before, p->restarts - before == 1 ? "" : "s", s->batch_no);
        }
    }
    size_t allowed = (size_t)(o->max_pending < 0 ? 0 : o->max_pending);
    if (out->pending > allowed)
        problem(out, "%zu pods pending (at most %d allowed)", out->pending, o->max_pending);
    out->ok = out->crashing == 0 && out->pending <= allowed;
}

void tlr_mig_health_clear(tlr_mig_health *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->nproblems; i++)
        free(h->problems[i]);
    free(h->problems);
    memset(h, 0, sizeof(*h));
}

/* ---- the lock ------------------------------------------------------------------ */

int tlr_mig_lock_decide(const tlr_mig_holder *h, const char *host, int64_t pid, bool alive,
                        int64_t now_ms, int64_t ttl_ms, char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    if (h->host == NULL || h->host[0] == '\0')
        return TLR_OK;
    bool same_host = strcmp(h->host, host) == 0;
    if (same_host && h->pid == pid)
        return TLR_OK;
    if (same_host && !alive)
        return TLR_OK;   /* its process died (kill -9, a crashed runner) */
    int64_t age = now_ms - h->heartbeat_ms;
    if (age > ttl_ms)
        return TLR_OK;
    snprintf(why, len, "held by pid %lld on %s (last heartbeat %llds ago; it is taken over "
             "after %llds without one)", (long long)h->pid, h->host,
             (long long)(age < 0 ? 0 : age / 1000), (long long)(ttl_ms / 1000));
    return TLR_E_BUSY;
}

/* ---- single-replica protection --------------------------------------------------- */

bool tlr_mig_needs_restart(const tlr_mig_podv *p, const tlr_mig_podv *pods, size_t npods)
{
    if (!live_ready(p) || p->owner_kind == NULL || strcmp(p->owner_kind, "Deployment") != 0)
        return false;
    int ready = 0;
    for (size_t i = 0; i < npods; i++)
        if (same_owner(&pods[i], p->owner_kind, p->ns, p->owner_name) && live_ready(&pods[i]))
            ready++;
    return ready <= 1;
}

/* ---- rollback -------------------------------------------------------------------- */

void tlr_mig_rollback_plan(const tlr_mig_state *s, const tlr_mig_nodev *nodes, size_t nnodes,
                           tlr_mig_rollback *out)
{
    memset(out, 0, sizeof(*out));
    out->uncordon = tlr_calloc(s->nnodes + 1, sizeof(*out->uncordon));
    out->restore = tlr_calloc(s->nasgs + 1, sizeof(*out->restore));
    for (size_t i = 0; i < s->nnodes; i++) {
        const tlr_mig_node *nd = &s->nodes[i];
        const tlr_mig_nodev *v = mig_nodev(nodes, nnodes, nd->name);
        if (nd->state == TLR_MIG_NODE_DONE || nd->state == TLR_MIG_NODE_GONE ||
            nd->was_cordoned || v == NULL || !v->unschedulable)
            continue;
        out->uncordon[out->nuncordon++] = i;
    }
    for (size_t i = 0; i < s->nasgs; i++)
        out->restore[out->nrestore++] = i;
}

void tlr_mig_rollback_clear(tlr_mig_rollback *r)
{
    if (r == NULL)
        return;
    free(r->uncordon);
    free(r->restore);
    memset(r, 0, sizeof(*r));
}

/* ---- status ------------------------------------------------------------------------ */

static void dur(int64_t ms, char *buf, size_t len)
{
    if (ms <= 0) {
        snprintf(buf, len, "-");
        return;
    }
    int64_t s = ms / 1000;
    if (s < 120)
        snprintf(buf, len, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
}

void tlr_mig_status_text(const tlr_mig_state *s, int64_t now_ms, tlr_buf *b)
{
    tlr_mig_counts c;
    char d[32];
    tlr_mig_state_counts(s, &c);
    dur((s->finished_ms ? s->finished_ms : now_ms) - s->created_ms, d, sizeof(d));
    tlr_buf_printf(b, "Migration %s: %s after %s; %zu nodes: %zu done, %zu in flight, %zu "
                   "pending, %zu gone; batch %d (size %d)\n", s->name, tlr_mig_phase_name(s->phase),
                   d, c.total, c.done, c.in_flight, c.pending, c.gone, s->batch_no,
                   s->batch_size);
    if (s->selector[0])
        tlr_buf_printf(b, "Selector: %s\n", s->selector);
    for (size_t i = 0; i < s->nasgs; i++)
        tlr_buf_printf(b, "ASG %s: min %d, max %d, desired %d before the migration\n",
                       s->asgs[i].name, s->asgs[i].min, s->asgs[i].max, s->asgs[i].desired);
    if (s->message[0])
        tlr_buf_printf(b, "Message: %s\n", s->message);
    if (s->holder.host[0] && s->phase == TLR_MIG_PHASE_RUNNING) {
        dur(now_ms - s->holder.heartbeat_ms, d, sizeof(d));
        tlr_buf_printf(b, "Held by pid %lld on %s (heartbeat %s ago)\n",
                       (long long)s->holder.pid, s->holder.host, d);
    }
    if (s->nnodes == 0)
        return;
    size_t w = 4;
    for (size_t i = 0; i < s->nnodes; i++)
        if (strlen(s->nodes[i].name) > w)
            w = strlen(s->nodes[i].name);
    tlr_buf_printf(b, "\n%-*s  %-20s  %-16s  %-9s  %5s  %4s  %7s  %s\n", (int)w, "NODE",
                   "INSTANCE", "ASG", "STATE", "BATCH", "PODS", "TOOK", "MESSAGE");
    for (size_t i = 0; i < s->nnodes; i++) {
        const tlr_mig_node *n = &s->nodes[i];
        int64_t took = n->started_ms == 0 ? 0
                       : (n->done_ms ? n->done_ms : now_ms) - n->started_ms;
        dur(took, d, sizeof(d));
        tlr_buf_printf(b, "%-*s  %-20s  %-16s  %-9s  %5d  %4d  %7s  %s\n", (int)w, n->name,
                       n->instance[0] ? n->instance : "-", n->asg[0] ? n->asg : "-",
                       tlr_mig_node_state_name(n->state), n->batch, n->pods, d, n->message);
    }
}

void tlr_mig_status_json(const tlr_mig_state *s, tlr_buf *b)
{
    tlr_mig_counts c;
    tlr_buf one;
    tlr_mig_state_counts(s, &c);
    tlr_buf_init(&one, 1u << 26);
    tlr_mig_state_json(s, &one);
    /* The checkpoint's object with "counts" added at its end. */
    tlr_buf_add(b, one.data, one.len - 1);
    tlr_buf_printf(b, ",\"counts\":{\"total\":%zu,\"pending\":%zu,\"in_flight\":%zu,"
                   "\"done\":%zu,\"gone\":%zu}}", c.total, c.pending, c.in_flight, c.done,
                   c.gone);
    tlr_buf_free(&one);
}
