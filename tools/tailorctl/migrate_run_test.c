/* migrate_run_test.c - the migrate run loop (migrate_run.c) against a
 * recording fake world: a small cluster that evicts, reschedules onto
 * tailor's node after a start-up delay, honours a PDB, rolls Deployments,
 * and an ASG that shrinks as instances are terminated.  It asserts what a
 * user would see: the order of the acts (freeze, cordon, drain, terminate),
 * that no node is drained twice across a crash, that the health gate and
 * the drain timeout halt the run, the lock, pause and rollback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "migctl.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"

#define MAXN 12
#define MAXP 96

typedef struct fpod {
    char uid[16], name[32], node[16];
    const char *kind, *owner;
    bool ready, crashloop;
    int restarts;
    int start_in;            /* snapshots until it is Ready on T0 (pending meanwhile) */
} fpod;

typedef struct fnode {
    char name[16], inst[16];
    bool tailor, unsched, gone;
} fnode;

typedef struct fake {
    fnode nodes[MAXN];
    int nn;
    fpod pods[MAXP];
    int np, next_uid;
    int web_replicas, web_max_unavailable;
    int min, max, desired;
    char *saved;
    int saves, fail_save_at;     /* the save numbered fail_save_at fails (0 never) */
    bool holder_alive;
    int64_t now;
    char log[1024][96];
    int nlog;
    int evicted[MAXN];           /* evictions per legacy node */
    int terminated[MAXN];
    int crash_after_evictions;   /* make a T0 pod crash-loop after this many; 0 never */
    int evictions;
} fake;

static void rec(fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec(fake *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (f->nlog < 1024)
        vsnprintf(f->log[f->nlog++], sizeof(f->log[0]), fmt, ap);
    va_end(ap);
}

static int node_idx(const fake *f, const char *name)
{
    for (int i = 0; i < f->nn; i++)
        if (strcmp(f->nodes[i].name, name) == 0)
            return i;
    return -1;
}

static fpod *add_pod(fake *f, const char *node, const char *kind, const char *owner, bool ready,
                     int start_in)
{
    fpod *p = &f->pods[f->np++];
    memset(p, 0, sizeof(*p));
    snprintf(p->uid, sizeof(p->uid), "u%d", ++f->next_uid);
    snprintf(p->name, sizeof(p->name), "%s-%d", owner, f->next_uid);
    snprintf(p->node, sizeof(p->node), "%s", node);
    p->kind = kind;
    p->owner = owner;
    p->ready = ready;
    p->start_in = start_in;
    return p;
}

static void del_pod(fake *f, int i)
{
    f->pods[i] = f->pods[--f->np];
}

/* 5 legacy nodes L0..L4 (instances i-0..i-4) and tailor's T0; web with
 * one pod per legacy node behind maxUnavailable 1; solo (one replica) on
 * L2; a DaemonSet pod on every legacy node. */
static void world(fake *f)
{
    memset(f, 0, sizeof(*f));
    for (int i = 0; i < 5; i++) {
        snprintf(f->nodes[i].name, sizeof(f->nodes[i].name), "L%d", i);
        snprintf(f->nodes[i].inst, sizeof(f->nodes[i].inst), "i-%d", i);
    }
    snprintf(f->nodes[5].name, sizeof(f->nodes[5].name), "T0");
    snprintf(f->nodes[5].inst, sizeof(f->nodes[5].inst), "i-9");
    f->nodes[5].tailor = true;
    f->nn = 6;
    for (int i = 0; i < 5; i++) {
        add_pod(f, f->nodes[i].name, "Deployment", "web", true, 0);
        add_pod(f, f->nodes[i].name, "DaemonSet", "agent", true, 0);
    }
    add_pod(f, "L2", "Deployment", "solo", true, 0);
    f->web_replicas = 5;
    f->web_max_unavailable = 1;
    f->min = 3;
    f->max = 7;
    f->desired = 5;
    f->now = 1000000;
}

/* ---- the ops ------------------------------------------------------------ */

static int f_snapshot(void *arg, mig_snap *out, char *err, size_t len)
{
    fake *f = arg;
    (void)err;
    (void)len;
    /* Time passes: pending replacements start, finished rollouts end. */
    for (int i = 0; i < f->np; i++)
        if (!f->pods[i].ready && f->pods[i].start_in > 0 && --f->pods[i].start_in == 0) {
            snprintf(f->pods[i].node, sizeof(f->pods[i].node), "T0");
            f->pods[i].ready = true;
        }
    for (int i = 0; i < f->np; i++) {
        fpod *p = &f->pods[i];
        if (strcmp(p->owner, "solo") != 0 || strcmp(p->node, "T0") == 0)
            continue;
        bool newer_ready = false;
        for (int k = 0; k < f->np; k++)
            newer_ready |= k != i && strcmp(f->pods[k].owner, "solo") == 0 && f->pods[k].ready &&
                           strcmp(f->pods[k].node, "T0") == 0;
        if (newer_ready) {   /* the rollout removes the old pod itself */
            rec(f, "rollout removed %s", p->name);
            del_pod(f, i--);
        }
    }
    memset(out, 0, sizeof(*out));
    out->nodes = tlr_calloc(MAXN, sizeof(*out->nodes));
    out->pods = tlr_calloc(MAXP, sizeof(*out->pods));
    for (int i = 0; i < f->nn; i++) {
        if (f->nodes[i].gone)
            continue;
        tlr_mig_nodev *v = &out->nodes[out->nnodes++];
        v->name = mig_snap_str(out, f->nodes[i].name);
        v->instance = mig_snap_str(out, f->nodes[i].inst);
        v->zone = "us-east-1a";
        v->asg = f->nodes[i].tailor ? "" : "g";
        v->tailor = f->nodes[i].tailor;
        v->selected = !f->nodes[i].tailor;
        v->unschedulable = f->nodes[i].unsched;
    }
    for (int i = 0; i < f->np; i++) {
        const fpod *p = &f->pods[i];
        tlr_mig_podv *v = &out->pods[out->npods++];
        v->uid = mig_snap_str(out, p->uid);
        v->ns = "default";
        v->name = mig_snap_str(out, p->name);
        v->node = mig_snap_str(out, p->node);
        v->owner_kind = p->kind;
        v->owner_name = p->owner;
        v->ready = p->ready;
        v->crashloop = p->crashloop;
        v->restarts = p->restarts;
    }
    return TLR_OK;
}

static int f_cordon(void *arg, const char *node, bool on, char *err, size_t len)
{
    fake *f = arg;
    (void)err;
    (void)len;
    int i = node_idx(f, node);
    if (i < 0 || f->nodes[i].gone)
        return TLR_E_NOTFOUND;
    f->nodes[i].unsched = on;
    rec(f, "%s %s", on ? "cordon" : "uncordon", node);
    return TLR_OK;
}

static int f_load(void *arg, tlr_mig_state *out, char *err, size_t len)
{
    fake *f = arg;
    if (f->saved == NULL)
        return TLR_E_NOTFOUND;
    return tlr_mig_state_parse(f->saved, strlen(f->saved), out, err, len);
}

static int f_save(void *arg, const tlr_mig_state *s, char *err, size_t len)
{
    fake *f = arg;
    f->saves++;
    if (f->fail_save_at > 0 && f->saves >= f->fail_save_at) {
        snprintf(err, len, "the API server went away");
        return TLR_E_IO;
    }
    tlr_buf b;
    tlr_buf_init(&b, 1u << 20);
    tlr_mig_state_json(s, &b);
    free(f->saved);
    f->saved = tlr_buf_take(&b);
    return TLR_OK;
}

static int f_restart(void *arg, const char *ns, const char *name, const char *token,
                     bool *started, char *err, size_t len)
{
    fake *f = arg;
    (void)ns;
    (void)err;
    (void)len;
    for (int i = 0; i < f->nlog; i++)
        if (strncmp(f->log[i], "restart ", 8) == 0 && strstr(f->log[i], token)) {
            *started = false;
            return TLR_OK;
        }
    rec(f, "restart %s for %s", name, token);
    add_pod(f, "", "Deployment", name, false, 2);
    *started = true;
    return TLR_OK;
}

static int f_asg_describe(void *arg, const char *asg, mig_asg_view *out, char *err, size_t len)
{
    fake *f = arg;
    (void)err;
    (void)len;
    if (strcmp(asg, "g") != 0)
        return TLR_E_NOTFOUND;
    memset(out, 0, sizeof(*out));
    out->min = f->min;
    out->max = f->max;
    out->desired = f->desired;
    out->instances = tlr_calloc(MAXN, sizeof(*out->instances));
    for (int i = 0; i < 5; i++)
        if (!f->nodes[i].gone)
            out->instances[out->ninstances++] = tlr_strdup(f->nodes[i].inst);
    return TLR_OK;
}

static int f_asg_update(void *arg, const char *asg, int min, int max, int desired, char *err,
                        size_t len)
{
    fake *f = arg;
    (void)err;
    (void)len;
    rec(f, "asg %s min %d max %d desired %d", asg, min, max, desired);
    if (min >= 0)
        f->min = min;
    if (max >= 0)
        f->max = max;
    if (desired >= 0)
        f->desired = desired;
    return TLR_OK;
}

static int f_asg_terminate(void *arg, const char *instance, char *err, size_t len)
{
    fake *f = arg;
    (void)err;
    (void)len;
    for (int i = 0; i < 5; i++)
        if (strcmp(f->nodes[i].inst, instance) == 0 && !f->nodes[i].gone) {
            f->nodes[i].gone = true;
            f->terminated[i]++;
            f->desired--;
            rec(f, "terminate %s", instance);
            for (int k = 0; k < f->np; k++)
                if (strcmp(f->pods[k].node, f->nodes[i].name) == 0)
                    del_pod(f, k--);
            return TLR_OK;
        }
    return TLR_E_NOTFOUND;
}

static Tailor__V1__Pod *proto_pod(const fpod *p)
{
    Tailor__V1__Pod *m = tlr_malloc(sizeof(*m));
    tailor__v1__pod__init(m);
    m->uid = tlr_strdup(p->uid);
    m->namespace_ = tlr_strdup("default");
    m->name = tlr_strdup(p->name);
    m->node_name = tlr_strdup(p->node);
    m->phase = TAILOR__V1__POD_PHASE__POD_PHASE_RUNNING;
    m->ready = p->ready;
    m->is_daemonset = strcmp(p->kind, "DaemonSet") == 0;
    m->termination_grace_period_ms = 1000;
    m->owners = tlr_calloc(1, sizeof(*m->owners));
    m->owners[0] = tlr_malloc(sizeof(**m->owners));
    tailor__v1__owner_reference__init(m->owners[0]);
    m->owners[0]->kind = tlr_strdup(m->is_daemonset ? "DaemonSet" : "ReplicaSet");
    m->owners[0]->name = tlr_strdup(p->owner);
    m->owners[0]->controller = true;
    m->n_owners = 1;
    return m;
}

static int f_list_pods(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n)
{
    fake *f = arg;
    *pods = tlr_calloc(MAXP, sizeof(**pods));
    *n = 0;
    for (int i = 0; i < f->np; i++)
        if (strcmp(f->pods[i].node, node) == 0)
            (*pods)[(*n)++] = proto_pod(&f->pods[i]);
    return TLR_OK;
}

static int f_list_pdbs(void *arg, Tailor__V1__PodDisruptionBudget ***pdbs, size_t *n)
{
    (void)arg;
    *pdbs = NULL;
    *n = 0;
    return TLR_OK;
}

static int f_evict(void *arg, const Tailor__V1__Pod *pod, char *msg, size_t len)
{
    fake *f = arg;
    for (int i = 0; i < f->np; i++) {
        fpod *p = &f->pods[i];
        if (strcmp(p->uid, pod->uid) != 0)
            continue;
        if (strcmp(p->owner, "web") == 0) {
            int ready = 0;
            for (int k = 0; k < f->np; k++)
                ready += strcmp(f->pods[k].owner, "web") == 0 && f->pods[k].ready;
            if (f->web_replicas - ready >= f->web_max_unavailable) {
                snprintf(msg, len, "Cannot evict pod as it would violate the pod's disruption "
                         "budget.");
                rec(f, "refused %s", p->name);
                return TLR_E_THROTTLED;
            }
        }
        int ni = node_idx(f, p->node);
        if (ni >= 0)
            f->evicted[ni]++;
        rec(f, "evict %s from %s", p->name, p->node);
        const char *kind = p->kind, *owner = p->owner;
        del_pod(f, i);
        fpod *again = add_pod(f, "", kind, owner, false, 2);   /* its controller recreates it */
        if (++f->evictions == f->crash_after_evictions)
            again->crashloop = true, again->restarts = 3;   /* ... and crash-loops there */
        return TLR_OK;
    }
    return TLR_E_NOTFOUND;
}

static int f_delete(void *arg, const Tailor__V1__Pod *pod, int64_t grace_s, char *msg,
                    size_t len)
{
    fake *f = arg;
    (void)msg;
    (void)len;
    rec(f, "force-delete %s (%lld)", pod->name, (long long)grace_s);
    return TLR_OK;
}

static void f_sleep(void *arg, int64_t ms)
{
    ((fake *)arg)->now += ms;
}

static bool f_alive(void *arg, int64_t pid)
{
    (void)pid;
    return ((fake *)arg)->holder_alive;
}

static int64_t f_clock(void *arg)
{
    return ((fake *)arg)->now;
}

static mig_ops ops_of(fake *f)
{
    return (mig_ops){
        .snapshot = f_snapshot, .cordon = f_cordon, .load = f_load, .save = f_save,
        .restart = f_restart, .asg_describe = f_asg_describe, .asg_update = f_asg_update,
        .asg_terminate = f_asg_terminate,
        .drain = { .list_pods = f_list_pods, .list_pdbs = f_list_pdbs, .evict = f_evict,
                   .delete_pod = f_delete, .arg = f },
        .sleep_ms = f_sleep, .alive = f_alive, .clock = { f_clock, f_clock, f }, .arg = f,
    };
}

static mig_run_opts opts(void)
{
    return (mig_run_opts){
        .name = "g", .label = "test", .asg = "g", .batch = 2, .max_pending = 0,
        .restart_threshold = 1, .cordon_all = true, .restart_single = true,
        .drain_timeout_ms = 60000, .ready_timeout_ms = 60000, .health_timeout_ms = 10000,
        .remove_timeout_ms = 60000, .poll_ms = 500, .lock_ttl_ms = 120000,
        .heartbeat_ms = 10000, .host = "host-a", .pid = 100, .progress = NULL,
    };
}

static int first(const fake *f, const char *prefix)
{
    for (int i = 0; i < f->nlog; i++)
        if (strncmp(f->log[i], prefix, strlen(prefix)) == 0)
            return i;
    return -1;
}

static int last(const fake *f, const char *prefix)
{
    int at = -1;
    for (int i = 0; i < f->nlog; i++)
        if (strncmp(f->log[i], prefix, strlen(prefix)) == 0)
            at = i;
    return at;
}

static int count(const fake *f, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < f->nlog; i++)
        n += strncmp(f->log[i], prefix, strlen(prefix)) == 0;
    return n;
}

static void dump(const fake *f)
{
    for (int i = 0; i < f->nlog; i++)
        printf("  %3d %s\n", i, f->log[i]);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_full_run(void **state)
{
    (void)state;
    fake *f = tlr_calloc(1, sizeof(*f));
    world(f);
    mig_ops ops = ops_of(f);
    mig_run_opts o = opts();
    tlr_mig_state s;
    int code = mig_run(&ops, &o, &s);
    if (code != TLR_MIG_EXIT_OK) {
        printf("FAIL: exit %d (%s): %s\n", code, tlr_mig_exit_name(code), s.message);
        dump(f);
    }
    assert_int_equal(code, TLR_MIG_EXIT_OK);
    assert_int_equal(s.phase, TLR_MIG_PHASE_DONE);
    tlr_mig_counts c;
    tlr_mig_state_counts(&s, &c);
    assert_int_equal(c.done, 5);
    /* Freeze first: min 0, max = desired, originals on record. */
    assert_int_equal(first(f, "asg g min 0 max 5 desired -1"), 0);
    assert_int_equal(s.asgs[0].min, 3);
    assert_int_equal(s.asgs[0].max, 7);
    assert_int_equal(s.asgs[0].desired, 5);
    /* Every legacy node cordoned before the first eviction. */
    assert_int_equal(count(f, "cordon L"), 5);
    assert_true(last(f, "cordon L") < first(f, "evict "));
    /* Batches in order: L0/L1 evicted and terminated before L2 is touched. */
    int t1 = first(f, "terminate i-1");
    assert_true(t1 > last(f, "evict web-1 ") || t1 > 0);
    for (int i = 0; i < f->nlog; i++)
        if (strstr(f->log[i], "from L2") || strstr(f->log[i], "from L3"))
            assert_true(i > t1);
    /* Each node's web pod evicted once; DaemonSet pods never; solo rolled. */
    for (int i = 0; i < 5; i++) {
        int want = 1;   /* L2 too: web only (solo goes by its rollout) */
        if (f->evicted[i] != want) {
            printf("FAIL L%d evicted %d times\n", i, f->evicted[i]);
            dump(f);
        }
        assert_int_equal(f->evicted[i], want);
        assert_int_equal(f->terminated[i], 1);
    }
    assert_int_equal(count(f, "evict agent"), 0);
    assert_int_equal(count(f, "evict solo"), 0);
    assert_int_equal(count(f, "restart solo"), 1);
    assert_int_equal(count(f, "rollout removed solo"), 1);
    assert_int_equal(count(f, "force-delete"), 0);
    /* The PDB refused some evictions: the run waited instead of pushing. */
    assert_true(count(f, "refused ") > 0);
    /* The ASG ends empty, max following desired down. */
    assert_int_equal(f->desired, 0);
    assert_int_equal(f->max, 0);
    assert_string_equal(s.holder.host, "");   /* released */
    tlr_mig_state_clear(&s);
    free(f->saved);
    free(f);
}

static void test_crash_and_resume(void **state)
{
    (void)state;
    fake *f = tlr_calloc(1, sizeof(*f));
    world(f);
    mig_ops ops = ops_of(f);
    mig_run_opts o = opts();
    tlr_mig_state s;
    /* The checkpoint write that would move batch 2 on fails: the run
     * stops as if killed there. */
    f->fail_save_at = 12;
    int code = mig_run(&ops, &o, &s);
    assert_int_equal(code, TLR_MIG_EXIT_FAIL);
    tlr_mig_state_clear(&s);
    int terminated_before = count(f, "terminate ");
    assert_true(terminated_before >= 2 && terminated_before < 5);
    /* Another process takes over: the holder is dead. */
    f->fail_save_at = 0;
    f->holder_alive = false;
    o.pid = 200;
    code = mig_run(&ops, &o, &s);
    if (code != TLR_MIG_EXIT_OK) {
        printf("FAIL resume: exit %d: %s\n", code, s.message);
        dump(f);
    }
    assert_int_equal(code, TLR_MIG_EXIT_OK);
    assert_int_equal(s.phase, TLR_MIG_PHASE_DONE);
    for (int i = 0; i < 5; i++) {
        if (f->evicted[i] != 1 || f->terminated[i] != 1)
            dump(f);
        assert_int_equal(f->evicted[i], 1);     /* never drained twice */
        assert_int_equal(f->terminated[i], 1);
    }
    /* The originals survive the crash: the second run did not re-record. */
    assert_int_equal(s.asgs[0].min, 3);
    assert_int_equal(s.asgs[0].desired, 5);
    assert_int_equal(count(f, "asg g min 0 max 5 desired -1"), 1);
    tlr_mig_state_clear(&s);
    free(f->saved);
    free(f);
}

static void test_health_gate_halts(void **state)
{
    (void)state;
    fake *f = tlr_calloc(1, sizeof(*f));
    world(f);
    f->crash_after_evictions = 1;
    mig_ops ops = ops_of(f);
    mig_run_opts o = opts();
    tlr_mig_state s;
    int code = mig_run(&ops, &o, &s);
    assert_int_equal(code, TLR_MIG_EXIT_HALTED);
    assert_int_equal(s.phase, TLR_MIG_PHASE_HALTED);
    assert_non_null(strstr(s.message, "batch 1: the health gate failed: pod default/"));
    assert_non_null(strstr(s.message, "CrashLoopBackOff"));
    assert_int_equal(count(f, "terminate "), 0);   /* nothing removed after a failed gate */
    assert_string_equal(s.holder.host, "");
    tlr_mig_state_clear(&s);
    /* Fixed (it stopped crashing; its restart count stays 3): the next
     * run resumes where it halted (the gate is also checked while the
     * displaced pods are awaited) and finishes, without draining
     * batch 1 again. */
    for (int k = 0; k < f->np; k++)
        f->pods[k].crashloop = false;
    f->crash_after_evictions = 0;
    code = mig_run(&ops, &o, &s);
    if (code != TLR_MIG_EXIT_OK)
        printf("FAIL resume after the fix: %s\n", s.message);
    assert_int_equal(code, TLR_MIG_EXIT_OK);
    for (int i = 0; i < 5; i++)
        assert_int_equal(f->evicted[i], 1);
    tlr_mig_state_clear(&s);
    free(f->saved);
    free(f);
}

static void test_drain_timeout(void **state)
{
    (void)state;
    fake *f = tlr_calloc(1, sizeof(*f));
    world(f);
    f->web_max_unavailable = 0;   /* a PDB that never allows an eviction */
    mig_ops ops = ops_of(f);
    mig_run_opts o = opts();
    o.drain_timeout_ms = 5000;
    tlr_mig_state s;
    int code = mig_run(&ops, &o, &s);
    assert_int_equal(code, TLR_MIG_EXIT_HALTED);
    assert_non_null(strstr(s.message, "draining batch 1 timed out"));
    assert_non_null(strstr(s.message, "allows no disruption now"));
    assert_int_equal(count(f, "evict web"), 0);
    assert_int_equal(count(f, "force-delete"), 0);   /* never forced */
    assert_int_equal(count(f, "terminate "), 0);
    tlr_mig_state_clear(&s);
    free(f->saved);
    free(f);
}

static void test_locked(void **state)
{
    (void)state;
    fake *f = tlr_calloc(1, sizeof(*f));
    world(f);
    tlr_mig_state held;
    tlr_mig_state_init(&held, "g", "", "g", 2, f->now);
    free(held.holder.host);
    held.holder.host = tlr_strdup("ci-runner-3");
    held.holder.pid = 77;
    held.holder.heartbeat_ms = f->now - 1000;
    mig_ops ops = ops_of(f);
    char err[64];
    ops.save(f, &held, err, sizeof(err));
    tlr_mig_state_clear(&held);
    mig_run_opts o = opts();
    tlr_mig_state s;
    f->holder_alive = true;
    assert_int_equal(mig_run(&ops, &o, &s), TLR_MIG_EXIT_LOCKED);
    assert_int_equal(f->nlog, 0);   /* touched nothing */
    tlr_mig_state_clear(&s);
    free(f->saved);
    free(f);
}

static void test_pause_then_rollback(void **state)
{
    (void)state;
    fake *f = tlr_calloc(1, sizeof(*f));
    world(f);
    mig_ops ops = ops_of(f);
    mig_run_opts o = opts();
    o.max_nodes = 2;
    tlr_mig_state s;
    assert_int_equal(mig_run(&ops, &o, &s), TLR_MIG_EXIT_PAUSED);
    assert_int_equal(s.phase, TLR_MIG_PHASE_PAUSED);
    tlr_mig_state_clear(&s);
    assert_int_equal(count(f, "terminate "), 2);
    assert_int_equal(f->desired, 3);
    f->nlog = 0;
    assert_int_equal(mig_rollback(&ops, &o, &s), TLR_MIG_EXIT_OK);
    assert_int_equal(s.phase, TLR_MIG_PHASE_ROLLED_BACK);
    /* The three nodes left are uncordoned; the ASG gets its sizes back. */
    assert_int_equal(count(f, "uncordon L"), 3);
    assert_int_equal(first(f, "asg g min 3 max 7 desired 5") >= 0, 1);
    assert_int_equal(f->min, 3);
    assert_int_equal(f->max, 7);
    assert_int_equal(f->desired, 5);
    for (int i = 2; i < 5; i++)
        assert_false(f->nodes[i].unsched);
    tlr_mig_state_clear(&s);
    /* A run after the rollback starts over: it records the sizes again. */
    f->nlog = 0;
    o.max_nodes = 1;
    assert_int_equal(mig_run(&ops, &o, &s), TLR_MIG_EXIT_PAUSED);
    assert_int_equal(first(f, "asg g min 0 max 5 desired -1"), 0);
    tlr_mig_state_clear(&s);
    free(f->saved);
    free(f);
}

/* Rolling back what never ran changes nothing and writes no checkpoint. */
static void test_rollback_nothing(void **state)
{
    (void)state;
    fake *f = tlr_calloc(1, sizeof(*f));
    world(f);
    mig_ops ops = ops_of(f);
    mig_run_opts o = opts();
    tlr_mig_state s;
    assert_int_equal(mig_rollback(&ops, &o, &s), TLR_MIG_EXIT_OK);
    assert_null(s.name);
    assert_int_equal(f->saves, 0);
    assert_int_equal(f->nlog, 0);
    free(f);
}

/* Progress lines: text by default; with -o json each line is one JSON
 * object, so stderr stays machine-readable too. */
static void test_progress_lines(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    mig_run_opts o = { .name = "prod", .label = "dev/legacy", .progress = f };
    mig_say(&o, "drained %d of %d nodes", 1, 3);
    o.progress_json = true;
    mig_say(&o, "node \"ip-1\" done");
    fclose(f);
    assert_string_equal(buf, "tailorctl migrate dev/legacy: drained 1 of 3 nodes\n"
                             "{\"progress\":{\"command\":\"migrate\",\"cluster\":\"dev/legacy\","
                             "\"step\":\"node \\\"ip-1\\\" done\"}}\n");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_run),
        cmocka_unit_test(test_crash_and_resume),
        cmocka_unit_test(test_health_gate_halts),
        cmocka_unit_test(test_drain_timeout),
        cmocka_unit_test(test_locked),
        cmocka_unit_test(test_pause_then_rollback),
        cmocka_unit_test(test_rollback_nothing),
        cmocka_unit_test(test_progress_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
