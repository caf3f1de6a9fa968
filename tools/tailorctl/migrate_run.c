/* migrate_run.c - `tailorctl migrate run` for one cluster: the loop that
 * asks common/migrate what to do next and does it through mig_ops.
 *
 * Every pass reads the cluster (a snapshot), folds the legacy nodes found
 * into the checkpoint, asks tlr_mig_decide_next() for the step, acts, and
 * writes the checkpoint before moving a node on:
 *
 *   freeze  record each ASG's min/max/desired, then set min 0 and max to
 *           the desired capacity (so only our decrements change it and
 *           nothing scales it up behind us), cordon the legacy nodes;
 *   start   record the batch's baseline (restart counts, the workloads on
 *           its nodes and their Ready counts);
 *   drain   cordon, then tlr_drain_pass() over each node until it is
 *           empty: the Eviction API, PDBs and per-pod backoff are the drain
 *           library's; DaemonSet pods are left to die with the node (the
 *           adapter below hides them, as kubectl drain --ignore-daemonsets);
 *           a Ready pod of a Deployment with one Ready pod gets a rolling
 *           restart first (the drain's guard), so it is never down;
 *   wait    until every displaced workload is back to its Ready count with
 *           the displaced pods Ready on tailor's nodes;
 *   health  until no pod is newly crash-looping and few enough are pending;
 *   remove  TerminateInstanceInAutoScalingGroup with the decrement, then
 *           wait for the Node to go; lower the ASG's max with it.
 * Each step has its own timeout; past it the run halts (exit 4) with the
 * reason in the checkpoint, and a later run resumes at that step.  The
 * lock (holder + heartbeat in the checkpoint) keeps two runs apart; a run
 * killed with SIGKILL leaves a holder whose pid is dead, which the next
 * run on the same host takes over at once.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migctl.h"
#include "tlr_alloc.h"
#include "tlr_buf.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"

typedef struct run {
    const mig_ops *ops;
    const mig_run_opts *o;
    tlr_mig_state s;
    mig_snap snap;
    tlr_drain_ops drain;     /* the adapter over ops->drain */
    int started;             /* nodes started in this run */
    int64_t last_save_mono;
    char err[768];
} run;

/* ---- snapshots (filled by the ops) -------------------------------------- */

const char *mig_snap_str(mig_snap *s, const char *v)
{
    if (v == NULL)
        return NULL;
    TLR_GROW(s->pool, s->cap, s->npool + 1);
    return s->pool[s->npool++] = tlr_strdup(v);
}

void mig_snap_free(mig_snap *s)
{
    for (size_t i = 0; i < s->npool; i++)
        free(s->pool[i]);
    free(s->pool);
    free(s->nodes);
    free(s->pods);
    memset(s, 0, sizeof(*s));
}

void mig_asg_view_free(mig_asg_view *v)
{
    for (size_t i = 0; i < v->ninstances; i++)
        free(v->instances[i]);
    free(v->instances);
    memset(v, 0, sizeof(*v));
}

void mig_say(const mig_run_opts *o, const char *fmt, ...)
{
    if (o->progress == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (o->progress_json) {
        char msg[1024];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        tlr_buf b;
        tlr_buf_init(&b, 8192);
        tlr_buf_adds(&b, "{\"progress\":{\"command\":\"migrate\",\"cluster\":");
        tlr_buf_add_json_str(&b, o->label ? o->label : o->name);
        tlr_buf_adds(&b, ",\"step\":");
        tlr_buf_add_json_str(&b, msg);
        tlr_buf_adds(&b, "}}\n");
        fputs(tlr_buf_str(&b), o->progress);
        tlr_buf_free(&b);
    } else {
        fprintf(o->progress, "tailorctl migrate %s: ", o->label ? o->label : o->name);
        vfprintf(o->progress, fmt, ap);
        fputc('\n', o->progress);
    }
    fflush(o->progress);
    va_end(ap);
}

static int64_t wall(const run *r)
{
    return r->ops->clock.wall_ms(r->ops->clock.arg);
}

static int64_t mono(const run *r)
{
    return r->ops->clock.mono_ms(r->ops->clock.arg);
}

static void set_str(char **field, const char *v)
{
    free(*field);
    *field = tlr_strdup(v ? v : "");
}

/* ---- the checkpoint and its lock -------------------------------------- */

static void hold(tlr_mig_state *s, const mig_run_opts *o, int64_t now)
{
    set_str(&s->holder.host, o->host);
    s->holder.pid = o->pid;
    s->holder.heartbeat_ms = now;
}

int mig_lock(const mig_ops *ops, const mig_run_opts *o, tlr_mig_state *s, bool *fresh)
{
    char err[512], why[512];
    for (int attempt = 0; attempt < 3; attempt++) {
        tlr_mig_state cur;
        int64_t now = ops->clock.wall_ms(ops->clock.arg);
        int rc = ops->load(ops->arg, &cur, err, sizeof(err));
        *fresh = false;
        if (rc == TLR_E_NOTFOUND) {
            tlr_mig_state_init(&cur, o->name, o->selector, o->asg, o->batch, now);
            *fresh = true;
        } else if (rc != TLR_OK) {
            mig_say(o, "cannot read the checkpoint: %s", err);
            return TLR_MIG_EXIT_FAIL;
        }
        if (tlr_mig_lock_decide(&cur.holder, o->host, o->pid,
                                ops->alive ? ops->alive(ops->arg, cur.holder.pid) : true, now,
                                o->lock_ttl_ms, why, sizeof(why)) != TLR_OK) {
            mig_say(o, "the checkpoint is locked: %s", why);
            tlr_mig_state_clear(&cur);
            return TLR_MIG_EXIT_LOCKED;
        }
        hold(&cur, o, now);
        cur.updated_ms = now;
        rc = ops->save(ops->arg, &cur, err, sizeof(err));
        if (rc == TLR_E_CONFLICT || rc == TLR_E_EXISTS) {
            tlr_mig_state_clear(&cur);
            continue;   /* someone wrote it meanwhile: decide again */
        }
        if (rc != TLR_OK) {
            mig_say(o, "cannot write the checkpoint: %s", err);
            tlr_mig_state_clear(&cur);
            return TLR_MIG_EXIT_FAIL;
        }
        *s = cur;
        return TLR_MIG_EXIT_OK;
    }
    mig_say(o, "the checkpoint keeps changing under us: another run is active");
    return TLR_MIG_EXIT_LOCKED;
}

/* Write the checkpoint (with a fresh heartbeat).  A conflict means
 * someone else wrote it: if they took the lock, we stop. */
static int save(run *r)
{
    int64_t now = wall(r);
    r->s.updated_ms = now;
    if (r->s.holder.host[0])
        r->s.holder.heartbeat_ms = now;
    int rc = r->ops->save(r->ops->arg, &r->s, r->err, sizeof(r->err));
    if (rc == TLR_E_CONFLICT) {
        tlr_mig_state cur;
        char e2[512];
        if (r->ops->load(r->ops->arg, &cur, e2, sizeof(e2)) == TLR_OK) {
            bool ours = strcmp(cur.holder.host, r->o->host) == 0 && cur.holder.pid == r->o->pid;
            tlr_mig_state_clear(&cur);
            if (!ours) {
                snprintf(r->err, sizeof(r->err), "another run took the checkpoint over");
                return TLR_E_BUSY;
            }
            /* Ours still (the store reordered our own writes): write again. */
            rc = r->ops->save(r->ops->arg, &r->s, r->err, sizeof(r->err));
        }
    }
    r->last_save_mono = mono(r);
    return rc;
}

static int heartbeat(run *r)
{
    if (r->o->heartbeat_ms > 0 && mono(r) - r->last_save_mono >= r->o->heartbeat_ms)
        return save(r);
    return TLR_OK;
}

static int refresh(run *r)
{
    mig_snap_free(&r->snap);
    return r->ops->snapshot(r->ops->arg, &r->snap, r->err, sizeof(r->err));
}

static int finish(run *r, tlr_mig_phase phase, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int finish(run *r, tlr_mig_phase phase, int code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->s.phase = phase;
    set_str(&r->s.message, msg);
    /* A rerun of a finished migration keeps its finish time: the soak
     * gates of later waves count from it. */
    if (phase == TLR_MIG_PHASE_DONE && (r->s.finished_ms == 0 || r->started > 0))
        r->s.finished_ms = wall(r);
    set_str(&r->s.holder.host, "");   /* released: the next run may start at once */
    r->s.holder.pid = 0;
    int rc = save(r);
    mig_say(r->o, "%s: %s", tlr_mig_phase_name(phase), msg);
    if (rc != TLR_OK) {
        mig_say(r->o, "could not write the checkpoint: %s", r->err);
        if (code == TLR_MIG_EXIT_OK)
            code = TLR_MIG_EXIT_FAIL;
    }
    return code;
}

static const tlr_mig_nodev *view(const run *r, const char *name)
{
    for (size_t i = 0; i < r->snap.nnodes; i++)
        if (strcmp(r->snap.nodes[i].name, name) == 0)
            return &r->snap.nodes[i];
    return NULL;
}

/* ---- the drain adapter -------------------------------------------------- */

/* DaemonSet pods stay: their controller would put them back on the
 * cordoned node (kubectl drain --ignore-daemonsets); they go with it. */
static int a_list_pods(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n)
{
    run *r = arg;
    Tailor__V1__Pod **all = NULL;
    size_t nall = 0, k = 0;
    int rc = r->ops->drain.list_pods(r->ops->drain.arg, node, &all, &nall);
    if (rc != TLR_OK)
        return rc;
    for (size_t i = 0; i < nall; i++) {
        if (all[i]->is_daemonset)
            tlr_kubeobj_free(all[i]);
        else
            all[k++] = all[i];
    }
    *pods = all;
    *n = k;
    return TLR_OK;
}

static int a_list_pdbs(void *arg, Tailor__V1__PodDisruptionBudget ***pdbs, size_t *n)
{
    run *r = arg;
    return r->ops->drain.list_pdbs(r->ops->drain.arg, pdbs, n);
}

static int a_evict(void *arg, const Tailor__V1__Pod *pod, char *msg, size_t len)
{
    run *r = arg;
    return r->ops->drain.evict(r->ops->drain.arg, pod, msg, len);
}

static int a_delete(void *arg, const Tailor__V1__Pod *pod, int64_t grace_s, char *msg,
                    size_t len)
{
    run *r = arg;
    return r->ops->drain.delete_pod(r->ops->drain.arg, pod, grace_s, msg, len);
}

/* Single-replica protection, asked before every eviction. */
static int a_guard(void *arg, const Tailor__V1__Pod *pod, char *why, size_t len)
{
    run *r = arg;
    const tlr_mig_podv *pv = NULL;
    for (size_t i = 0; i < r->snap.npods && !pv; i++)
        if (strcmp(r->snap.pods[i].uid, pod->uid) == 0)
            pv = &r->snap.pods[i];
    if (!r->o->restart_single || pv == NULL ||
        !tlr_mig_needs_restart(pv, r->snap.pods, r->snap.npods))
        return TLR_OK;
    bool started = false;
    char err[512];
    int rc = r->ops->restart(r->ops->arg, pv->ns, pv->owner_name, pv->uid, &started, err,
                             sizeof(err));
    if (rc == TLR_E_UNIMPLEMENTED)
        return TLR_OK;   /* it cannot surge: evict, its PDB decides */
    if (rc != TLR_OK) {
        snprintf(why, len, "a rolling restart of Deployment %s/%s failed: %s", pv->ns,
                 pv->owner_name, err);
        return TLR_E_BUSY;
    }
    if (started)
        mig_say(r->o, "Deployment %s/%s has one Ready pod (%s): rolling restart so its new pod "
                "is Ready before the old one goes", pv->ns, pv->owner_name, pv->name);
    snprintf(why, len, "Deployment %s/%s has one Ready pod: waiting for its rolling restart",
             pv->ns, pv->owner_name);
    return TLR_E_BUSY;
}

/* ---- steps ----------------------------------------------------------------- */

static int step_freeze(run *r)
{
    const mig_ops *ops = r->ops;
    /* The ASGs: the one named, and every legacy node's. */
    const char **names = tlr_calloc(r->s.nnodes + 2, sizeof(*names));
    size_t n = 0;
    if (r->o->asg && r->o->asg[0])
        names[n++] = r->o->asg;
    for (size_t i = 0; i < r->s.nnodes; i++) {
        const char *a = r->s.nodes[i].asg;
        bool seen = !a[0];
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(names[k], a) == 0;
        if (!seen)
            names[n++] = a;
    }
    int code = TLR_MIG_EXIT_OK;
    int *desired = tlr_calloc(n + 1, sizeof(*desired));
    for (size_t k = 0; k < n; k++) {
        mig_asg_view v = { 0 };
        int rc = ops->asg_describe(ops->arg, names[k], &v, r->err, sizeof(r->err));
        if (rc == TLR_E_NOTFOUND) {
            desired[k] = -1;
            mig_say(r->o, "warning: Auto Scaling Group %s does not exist: its nodes are drained "
                    "but nothing is terminated", names[k]);
            continue;
        }
        if (rc != TLR_OK) {
            code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL,
                          "reading Auto Scaling Group %s: %s", names[k], r->err);
            goto out;
        }
        tlr_mig_state_add_asg(&r->s, names[k], v.min, v.max, v.desired);
        desired[k] = v.desired;
        mig_asg_view_free(&v);
    }
    /* The originals are on record before anything changes. */
    if (save(r) != TLR_OK) {
        code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "checkpoint: %s", r->err);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        if (desired[k] < 0)
            continue;
        if (ops->asg_update(ops->arg, names[k], 0, desired[k], -1, r->err, sizeof(r->err)) !=
            TLR_OK) {
            code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL,
                          "freezing Auto Scaling Group %s: %s", names[k], r->err);
            goto out;
        }
        const tlr_mig_asg *g = tlr_mig_state_asg(&r->s, names[k]);
        mig_say(r->o, "ASG %s: min %d -> 0, max %d -> %d (desired %d): it shrinks only as nodes "
                "move", names[k], g ? g->min : -1, g ? g->max : -1, desired[k], desired[k]);
    }
    size_t cordoned = 0;
    for (size_t i = 0; r->o->cordon_all && i < r->s.nnodes; i++) {
        tlr_mig_node *nd = &r->s.nodes[i];
        if (nd->state != TLR_MIG_NODE_PENDING || nd->was_cordoned)
            continue;
        int rc = ops->cordon(ops->arg, nd->name, true, r->err, sizeof(r->err));
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
            code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "cordoning %s: %s",
                          nd->name, r->err);
            goto out;
        }
        cordoned++;
    }
    if (r->o->cordon_all)
        mig_say(r->o, "cordoned %zu legacy nodes: new and displaced pods go to tailor's nodes",
                cordoned);
    r->s.frozen = true;
    if (save(r) != TLR_OK)
        code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "checkpoint: %s", r->err);
out:
    free(desired);
    free(names);
    return code;
}

static void batch_names(const run *r, const tlr_mig_next *nx, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < nx->n && at + 1 < len; i++) {
        const tlr_mig_node *nd = &r->s.nodes[nx->nodes[i]];
        int w = snprintf(buf + at, len - at, "%s%s (%d pod%s)", i ? ", " : "", nd->name,
                         nd->pods, nd->pods == 1 ? "" : "s");
        if (w < 0 || (size_t)w >= len - at)
            break;
        at += (size_t)w;
    }
}

static int step_start(run *r, const tlr_mig_next *nx)
{
    char names[2048];
    tlr_mig_batch_begin(&r->s, nx->nodes, nx->n, r->snap.pods, r->snap.npods, r->snap.nodes,
                        r->snap.nnodes, wall(r));
    r->started += (int)nx->n;
    batch_names(r, nx, names, sizeof(names));
    size_t waited = 0;
    for (size_t i = 0; i < r->s.nowners; i++)
        waited += (size_t)r->s.owners[i].displaced;
    mig_say(r->o, "batch %d: %s; %zu Ready pods of %zu workloads to move", r->s.batch_no, names,
            waited, r->s.nowners);
    if (save(r) != TLR_OK)
        return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "checkpoint: %s", r->err);
    return TLR_MIG_EXIT_OK;
}

/* Per node of the batch: what the drain did so far, and its retry memory
 * (a tlr_drain_state keeps only the pods of the last node it was given,
 * so each node has its own). */
typedef struct drain_seen {
    size_t evicted;
    char last[1024];
    tlr_drain_state *st;
} drain_seen;

static int step_drain(run *r, const tlr_mig_next *nx)
{
    const mig_ops *ops = r->ops;
    int64_t deadline = mono(r) + r->o->drain_timeout_ms;
    drain_seen *seen = tlr_calloc(nx->n + 1, sizeof(*seen));
    int code = TLR_MIG_EXIT_OK;
    for (size_t i = 0; i < nx->n; i++)
        tlr_drain_state_create(&seen[i].st);

    for (size_t i = 0; i < nx->n; i++) {
        tlr_mig_node *nd = &r->s.nodes[nx->nodes[i]];
        const tlr_mig_nodev *v = view(r, nd->name);
        if (nd->state != TLR_MIG_NODE_DRAINING || v == NULL || v->unschedulable)
            continue;
        int rc = ops->cordon(ops->arg, nd->name, true, r->err, sizeof(r->err));
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
            code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "cordoning %s: %s",
                          nd->name, r->err);
            goto out;
        }
    }
    for (;;) {
        bool all = true, changed = false;
        for (size_t i = 0; i < nx->n; i++) {
            tlr_mig_node *nd = &r->s.nodes[nx->nodes[i]];
            if (nd->state != TLR_MIG_NODE_DRAINING)
                continue;
            if (view(r, nd->name) == NULL) {
                tlr_mig_node_set(nd, TLR_MIG_NODE_REPLACING, "the node went away while "
                                 "draining", wall(r));
                changed = true;
                continue;
            }
            tlr_drain_report rep;
            tlr_drain_opts dopts = { .now_ms = wall(r) };
            int rc = tlr_drain_pass(&r->drain, nd->name, seen[i].st, &dopts, &rep);
            if (rc != TLR_OK) {
                snprintf(seen[i].last, sizeof(seen[i].last), "listing its pods: %s",
                         tlr_strerror(rc));
                all = false;
                continue;
            }
            seen[i].evicted += rep.evicted;
            if (rep.done) {
                char msg[128];
                snprintf(msg, sizeof(msg), "drained: %zu pods evicted", seen[i].evicted);
                tlr_mig_node_set(nd, TLR_MIG_NODE_REPLACING, msg, wall(r));
                mig_say(r->o, "%s drained (%zu evicted by this run)", nd->name, seen[i].evicted);
                changed = true;
            } else {
                char sum[1024];
                all = false;
                tlr_drain_report_summary(&rep, 3, sum, sizeof(sum));
                if (rep.evicted > 0 || strcmp(sum, seen[i].last) != 0) {
                    mig_say(r->o, "draining %s: %zu evicted so far, %zu pods left%s%s", nd->name,
                            seen[i].evicted, rep.waiting, sum[0] ? "; " : "", sum);
                    snprintf(seen[i].last, sizeof(seen[i].last), "%s", sum);
                    set_str(&nd->message, sum[0] ? sum : "draining");
                }
            }
            tlr_drain_report_clear(&rep);
        }
        if (changed && save(r) != TLR_OK) {
            code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "checkpoint: %s", r->err);
            goto out;
        }
        if (all)
            break;
        if (mono(r) >= deadline) {
            char why[2048] = "";
            size_t at = 0;
            for (size_t i = 0; i < nx->n && at + 1 < sizeof(why); i++) {
                const tlr_mig_node *nd = &r->s.nodes[nx->nodes[i]];
                if (nd->state != TLR_MIG_NODE_DRAINING)
                    continue;
                int w = snprintf(why + at, sizeof(why) - at, "%s%s: %s", at ? "; " : "",
                                 nd->name, seen[i].last[0] ? seen[i].last : "pods left");
                if (w < 0 || (size_t)w >= sizeof(why) - at)
                    break;
                at += (size_t)w;
            }
            code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_HALTED,
                          "draining batch %d timed out: %s", r->s.batch_no, why);
            goto out;
        }
        if (heartbeat(r) != TLR_OK) {
            code = finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_LOCKED, "%s", r->err);
            goto out;
        }
        ops->sleep_ms(ops->arg, r->o->poll_ms);
        if (refresh(r) != TLR_OK)
            mig_say(r->o, "warning: reading the cluster: %s", r->err);
    }
out:
    for (size_t i = 0; i < nx->n; i++)
        tlr_drain_state_free(seen[i].st);
    free(seen);
    return code;
}

static void batch_set(run *r, const tlr_mig_next *nx, tlr_mig_node_state from,
                      tlr_mig_node_state to, const char *msg)
{
    for (size_t i = 0; i < nx->n; i++) {
        tlr_mig_node *nd = &r->s.nodes[nx->nodes[i]];
        if (nd->state == from)
            tlr_mig_node_set(nd, to, msg, wall(r));
    }
}

/* The health gate on the current snapshot: whether it passes, its
 * problems joined with "; " into buf, and how many pods are pending and
 * newly crash-looping or restarting. */
static bool health(run *r, char *buf, size_t len, size_t *pending, size_t *crash)
{
    tlr_mig_health_opts ho = { r->o->max_pending, r->o->restart_threshold };
    tlr_mig_health h;
    tlr_mig_health_check(&r->s, r->snap.pods, r->snap.npods, &ho, &h);
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < h.nproblems && at + 1 < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? "; " : "", h.problems[i]);
        if (w < 0 || (size_t)w >= len - at)
            break;
        at += (size_t)w;
    }
    bool ok = h.ok;
    *pending = h.pending;
    *crash = h.crashing;
    tlr_mig_health_clear(&h);
    return ok;
}

static int step_wait(run *r, const tlr_mig_next *nx)
{
    int64_t t0 = mono(r), deadline = t0 + r->o->ready_timeout_ms;
    char why[1024], last[1024] = "";
    for (;;) {
        /* A pod crash-looping now (say a displaced one on the new nodes)
         * will not turn Ready: halt at once rather than at the timeout,
         * before another node is touched. */
        char bad[2048];
        size_t pending, crash;
        health(r, bad, sizeof(bad), &pending, &crash);
        if (crash > 0)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_HALTED,
                          "batch %d: the health gate failed: %s", r->s.batch_no, bad);
        if (tlr_mig_replaced(&r->s, r->snap.pods, r->snap.npods, r->snap.nodes, r->snap.nnodes,
                             why, sizeof(why))) {
            size_t moved = 0;
            for (size_t i = 0; i < r->s.nowners; i++)
                moved += (size_t)r->s.owners[i].displaced;
            mig_say(r->o, "batch %d: %zu displaced pods of %zu workloads Ready on tailor's nodes "
                    "after %.1fs", r->s.batch_no, moved, r->s.nowners,
                    (double)(mono(r) - t0) / 1000.0);
            batch_set(r, nx, TLR_MIG_NODE_REPLACING, TLR_MIG_NODE_VERIFYING,
                      "its pods are Ready on tailor's nodes");
            if (save(r) != TLR_OK)
                return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "checkpoint: %s",
                              r->err);
            return TLR_MIG_EXIT_OK;
        }
        if (strcmp(why, last) != 0) {
            mig_say(r->o, "batch %d: waiting: %s", r->s.batch_no, why);
            snprintf(last, sizeof(last), "%s", why);
        }
        if (mono(r) >= deadline)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_HALTED,
                          "batch %d: the displaced pods were not Ready on tailor's nodes within "
                          "the ready timeout: %s", r->s.batch_no, why);
        if (heartbeat(r) != TLR_OK)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_LOCKED, "%s", r->err);
        r->ops->sleep_ms(r->ops->arg, r->o->poll_ms);
        if (refresh(r) != TLR_OK)
            mig_say(r->o, "warning: reading the cluster: %s", r->err);
    }
}

static int step_health(run *r, const tlr_mig_next *nx)
{
    int64_t deadline = mono(r) + r->o->health_timeout_ms;
    char last[2048] = "";
    for (;;) {
        char all[2048];
        size_t pending, crash;
        if (health(r, all, sizeof(all), &pending, &crash)) {
            mig_say(r->o, "batch %d: healthy: %zu pods pending (at most %d), no pod newly "
                    "crash-looping", r->s.batch_no, pending, r->o->max_pending);
            batch_set(r, nx, TLR_MIG_NODE_VERIFYING, TLR_MIG_NODE_REMOVING, "healthy; removing");
            if (save(r) != TLR_OK)
                return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "checkpoint: %s",
                              r->err);
            return TLR_MIG_EXIT_OK;
        }
        if (strcmp(all, last) != 0) {
            mig_say(r->o, "batch %d: not healthy yet: %s", r->s.batch_no, all);
            snprintf(last, sizeof(last), "%s", all);
        }
        if (mono(r) >= deadline)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_HALTED,
                          "batch %d: the health gate failed: %s", r->s.batch_no, all);
        if (heartbeat(r) != TLR_OK)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_LOCKED, "%s", r->err);
        r->ops->sleep_ms(r->ops->arg, r->o->poll_ms);
        if (refresh(r) != TLR_OK)
            mig_say(r->o, "warning: reading the cluster: %s", r->err);
    }
}

static bool has_instance(const mig_asg_view *v, const char *id)
{
    for (size_t i = 0; i < v->ninstances; i++)
        if (strcmp(v->instances[i], id) == 0)
            return true;
    return false;
}

static int step_remove(run *r, const tlr_mig_next *nx)
{
    const mig_ops *ops = r->ops;
    int64_t deadline = mono(r) + r->o->remove_timeout_ms;
    for (size_t i = 0; i < nx->n; i++) {
        tlr_mig_node *nd = &r->s.nodes[nx->nodes[i]];
        if (nd->state != TLR_MIG_NODE_REMOVING)
            continue;
        if (!nd->asg[0] || !nd->instance[0] || tlr_mig_state_asg(&r->s, nd->asg) == NULL) {
            tlr_mig_node_set(nd, TLR_MIG_NODE_DONE, "drained; in no Auto Scaling Group we "
                             "manage, so it stays (cordoned)", wall(r));
            mig_say(r->o, "%s: drained; not in a known Auto Scaling Group: left cordoned",
                    nd->name);
            continue;
        }
        /* Idempotent: terminate only an instance still in its group (a
         * resumed run may have terminated it already). */
        mig_asg_view v = { 0 };
        int rc = ops->asg_describe(ops->arg, nd->asg, &v, r->err, sizeof(r->err));
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL,
                          "reading Auto Scaling Group %s: %s", nd->asg, r->err);
        bool member = rc == TLR_OK && has_instance(&v, nd->instance);
        int before = v.desired;
        mig_asg_view_free(&v);
        if (!member)
            continue;
        rc = ops->asg_terminate(ops->arg, nd->instance, r->err, sizeof(r->err));
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL,
                          "TerminateInstanceInAutoScalingGroup %s (%s): %s", nd->instance,
                          nd->name, r->err);
        mig_say(r->o, "ASG %s: terminated %s (%s), desired %d -> %d", nd->asg, nd->instance,
                nd->name, before, before - 1);
    }
    /* The nodes go when their instances do. */
    for (;;) {
        bool all = true, changed = false;
        for (size_t i = 0; i < nx->n; i++) {
            tlr_mig_node *nd = &r->s.nodes[nx->nodes[i]];
            if (nd->state != TLR_MIG_NODE_REMOVING)
                continue;
            if (view(r, nd->name) == NULL) {
                tlr_mig_node_set(nd, TLR_MIG_NODE_DONE, "rotated: its instance is terminated "
                                 "and the node is gone", wall(r));
                changed = true;
            } else {
                all = false;
            }
        }
        if (changed && save(r) != TLR_OK)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "checkpoint: %s", r->err);
        if (all)
            break;
        if (mono(r) >= deadline)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_HALTED,
                          "batch %d: terminated nodes did not leave the cluster within the "
                          "remove timeout", r->s.batch_no);
        if (heartbeat(r) != TLR_OK)
            return finish(r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_LOCKED, "%s", r->err);
        ops->sleep_ms(ops->arg, r->o->poll_ms);
        if (refresh(r) != TLR_OK)
            mig_say(r->o, "warning: reading the cluster: %s", r->err);
    }
    /* Keep max at desired so nothing scales the group back up. */
    for (size_t k = 0; k < r->s.nasgs; k++) {
        mig_asg_view v = { 0 };
        if (ops->asg_describe(ops->arg, r->s.asgs[k].name, &v, r->err, sizeof(r->err)) !=
            TLR_OK)
            continue;
        if (v.max > v.desired)
            ops->asg_update(ops->arg, r->s.asgs[k].name, -1, v.desired, -1, r->err,
                            sizeof(r->err));
        mig_asg_view_free(&v);
    }
    return TLR_MIG_EXIT_OK;
}

static void summary(run *r, char *buf, size_t len)
{
    tlr_mig_counts c;
    size_t at;
    tlr_mig_state_counts(&r->s, &c);
    at = (size_t)snprintf(buf, len, "%zu of %zu legacy nodes rotated%s", c.done, c.total,
                          c.gone ? " (some went away on their own)" : "");
    for (size_t k = 0; k < r->s.nasgs && at + 1 < len; k++) {
        mig_asg_view v = { 0 };
        if (r->ops->asg_describe(r->ops->arg, r->s.asgs[k].name, &v, r->err, sizeof(r->err)) !=
            TLR_OK)
            continue;
        int w = snprintf(buf + at, len - at, "; ASG %s desired %d (was %d)", r->s.asgs[k].name,
                         v.desired, r->s.asgs[k].desired);
        mig_asg_view_free(&v);
        if (w < 0 || (size_t)w >= len - at)
            break;
        at += (size_t)w;
    }
}

int mig_run(const mig_ops *ops, const mig_run_opts *o, tlr_mig_state *final)
{
    run r = { .ops = ops, .o = o };
    bool fresh;
    int code = mig_lock(ops, o, &r.s, &fresh);
    if (code != TLR_MIG_EXIT_OK) {
        if (final)
            memset(final, 0, sizeof(*final));
        return code;
    }
    if (!fresh && r.s.phase == TLR_MIG_PHASE_ROLLED_BACK) {
        /* Rolled back: a new run starts the migration over. */
        tlr_mig_state again;
        tlr_mig_state_init(&again, o->name, o->selector, o->asg, o->batch, wall(&r));
        hold(&again, o, wall(&r));
        tlr_mig_state_clear(&r.s);
        r.s = again;
        fresh = true;
    }
    const char *want = o->asg && o->asg[0] ? o->asg : o->selector ? o->selector : "";
    if (!fresh && (strcmp(r.s.selector, o->selector ? o->selector : "") != 0 ||
                   strcmp(r.s.asg, o->asg ? o->asg : "") != 0)) {
        code = finish(&r, r.s.phase, TLR_MIG_EXIT_USAGE,
                      "checkpoint %s is for %s %s, not %s %s: use another --name, or roll it "
                      "back first", r.s.name, r.s.asg[0] ? "--asg" : "--selector",
                      r.s.asg[0] ? r.s.asg : r.s.selector, o->asg && o->asg[0] ? "--asg"
                      : "--selector", want);
        goto out;
    }
    bool was_halted = !fresh && r.s.phase == TLR_MIG_PHASE_HALTED;
    if (!fresh && r.s.phase != TLR_MIG_PHASE_PENDING)
        mig_say(o, "resuming a %s migration at batch %d", tlr_mig_phase_name(r.s.phase),
                r.s.batch_no);
    r.s.phase = TLR_MIG_PHASE_RUNNING;
    r.s.batch_size = o->batch;
    set_str(&r.s.message, "");
    r.drain = (tlr_drain_ops){ .list_pods = a_list_pods, .list_pdbs = a_list_pdbs,
                               .evict = a_evict, .delete_pod = a_delete, .arg = &r,
                               .guard = a_guard, .guard_arg = &r };
    for (;;) {
        if (refresh(&r) != TLR_OK) {
            code = finish(&r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL, "reading the cluster: %s",
                          r.err);
            break;
        }
        if (was_halted) {
            /* Whoever runs us again has seen why it halted: restarts
             * counted so far are not news to the health gate. */
            tlr_mig_rebaseline(&r.s, r.snap.pods, r.snap.npods);
            was_halted = false;
        }
        size_t added = tlr_mig_merge(&r.s, r.snap.nodes, r.snap.nnodes, wall(&r));
        if (added > 0 && r.s.frozen)
            mig_say(o, "%zu new legacy node%s found; %s join the migration", added,
                    added == 1 ? "" : "s", added == 1 ? "it will" : "they will");
        if (added > 0 && r.s.frozen && o->cordon_all)
            for (size_t i = r.s.nnodes - added; i < r.s.nnodes; i++)
                if (!r.s.nodes[i].was_cordoned)
                    ops->cordon(ops->arg, r.s.nodes[i].name, true, r.err, sizeof(r.err));
        tlr_mig_next nx;
        tlr_mig_decide_next(&r.s, &(tlr_mig_next_opts){ o->batch, o->max_nodes, r.started },
                            &nx);
        switch (nx.step) {
        case TLR_MIG_STEP_FREEZE: code = step_freeze(&r); break;
        case TLR_MIG_STEP_START: code = step_start(&r, &nx); break;
        case TLR_MIG_STEP_DRAIN: code = step_drain(&r, &nx); break;
        case TLR_MIG_STEP_WAIT: code = step_wait(&r, &nx); break;
        case TLR_MIG_STEP_HEALTH: code = step_health(&r, &nx); break;
        case TLR_MIG_STEP_REMOVE: code = step_remove(&r, &nx); break;
        case TLR_MIG_STEP_PAUSE:
            code = finish(&r, TLR_MIG_PHASE_PAUSED, TLR_MIG_EXIT_PAUSED,
                          "paused after %d nodes (--max-nodes %d); run again to go on",
                          r.started, o->max_nodes);
            break;
        case TLR_MIG_STEP_DONE: {
            char sum[1024];
            summary(&r, sum, sizeof(sum));
            code = finish(&r, TLR_MIG_PHASE_DONE, TLR_MIG_EXIT_OK, "%s", sum);
            break;
        }
        }
        bool terminal = nx.step == TLR_MIG_STEP_PAUSE || nx.step == TLR_MIG_STEP_DONE;
        tlr_mig_next_clear(&nx);
        if (terminal || code != TLR_MIG_EXIT_OK)
            break;
    }
out:
    mig_snap_free(&r.snap);
    if (final)
        *final = r.s;
    else
        tlr_mig_state_clear(&r.s);
    return code;
}

/* ---- rollback ---------------------------------------------------------------- */

int mig_rollback(const mig_ops *ops, const mig_run_opts *o, tlr_mig_state *final)
{
    run r = { .ops = ops, .o = o };
    bool fresh;
    char err[512];
    if (final)
        memset(final, 0, sizeof(*final));
    /* Nothing recorded, nothing to undo: look before taking the lock,
     * which would write an empty checkpoint. */
    int rc = ops->load(ops->arg, &r.s, err, sizeof(err));
    if (rc == TLR_E_NOTFOUND) {
        mig_say(o, "no checkpoint %s: nothing to roll back", o->name);
        return TLR_MIG_EXIT_OK;
    }
    if (rc == TLR_OK)
        tlr_mig_state_clear(&r.s);
    int code = mig_lock(ops, o, &r.s, &fresh);
    if (code != TLR_MIG_EXIT_OK)
        return code;
    if (refresh(&r) != TLR_OK) {
        code = finish(&r, r.s.phase, TLR_MIG_EXIT_FAIL, "reading the cluster: %s", r.err);
        goto out;
    }
    tlr_mig_rollback rb;
    tlr_mig_rollback_plan(&r.s, r.snap.nodes, r.snap.nnodes, &rb);
    size_t failed = 0;
    char fails[1024] = "";
    for (size_t i = 0; i < rb.nuncordon; i++) {
        tlr_mig_node *nd = &r.s.nodes[rb.uncordon[i]];
        rc = ops->cordon(ops->arg, nd->name, false, r.err, sizeof(r.err));
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
            failed++;
            snprintf(fails, sizeof(fails), "uncordoning %s: %s", nd->name, r.err);
            continue;
        }
        mig_say(o, "uncordoned %s", nd->name);
        if (nd->state != TLR_MIG_NODE_PENDING)
            tlr_mig_node_set(nd, TLR_MIG_NODE_PENDING, "rolled back", wall(&r));
    }
    for (size_t i = 0; i < rb.nrestore; i++) {
        const tlr_mig_asg *g = &r.s.asgs[rb.restore[i]];
        rc = ops->asg_update(ops->arg, g->name, g->min, g->max, g->desired, r.err,
                             sizeof(r.err));
        if (rc != TLR_OK) {
            failed++;
            snprintf(fails, sizeof(fails), "restoring Auto Scaling Group %s: %s", g->name, r.err);
            continue;
        }
        mig_say(o, "ASG %s restored: min %d, max %d, desired %d", g->name, g->min, g->max,
                g->desired);
    }
    size_t nun = rb.nuncordon, nrs = rb.nrestore;
    tlr_mig_rollback_clear(&rb);
    if (failed > 0) {
        code = finish(&r, TLR_MIG_PHASE_HALTED, TLR_MIG_EXIT_FAIL,
                      "rollback incomplete (%zu failed; run it again): %s", failed, fails);
        goto out;
    }
    code = finish(&r, TLR_MIG_PHASE_ROLLED_BACK, TLR_MIG_EXIT_OK,
                  "rolled back: %zu nodes uncordoned, %zu Auto Scaling Groups restored", nun, nrs);
out:
    mig_snap_free(&r.snap);
    if (final)
        *final = r.s;
    else
        tlr_mig_state_clear(&r.s);
    return code;
}
