/* protect_test.c - single-replica protection: rolling restart for a
 * Deployment that can surge, make-room (simulate, launch, wait) for one
 * that cannot, and the pods it leaves alone; then through a real drain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ds_fake.h"
#include "protect.h"
#include "termination.h"
#include "ds_testkit.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"

typedef struct fx {
    ds_fake f;
    Tailor__V1__Catalog *cat;
    ds_protect *p;
} fx;

static int setup(void **state)
{
    fx *x = tlr_calloc(1, sizeof(*x));
    ds_fake_init(&x->f);
    x->cat = tk_catalog();
    x->f.catalog = x->cat;
    ds_protect_opts o = { .clock = &x->f.clock, .kube = ds_fake_kube(&x->f),
                          .watcher = ds_fake_watcher(&x->f), .solver = ds_fake_solver(&x->f),
                          .launcher = ds_fake_launcher(&x->f), .catalog = x->cat };
    ds_protect_create(&o, &x->p);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    ds_protect_free(x->p);
    ds_fake_clear(&x->f);
    protobuf_c_message_free_unpacked(&x->cat->base, NULL);
    free(x);
    return 0;
}

static void add_workload(ds_fake *f, const char *owner_kind, const char *owner, const char *kind,
                         const char *name, int replicas, int ready, bool surge)
{
    ds_fake_workload *w = &f->workloads[f->nworkloads++];
    w->owner_kind = owner_kind;
    w->owner_name = owner;
    w->w.kind = (char *)kind;
    w->w.name = (char *)name;
    w->w.replicas = replicas;
    w->w.ready = ready;
    w->w.surge = surge;
}

static int guard(fx *x, const Tailor__V1__Pod *pod, char *why, size_t len)
{
    x->f.now_ms += 1000;   /* past the cache */
    return ds_protect_guard(x->p, pod, why, len);
}

static void test_surge_deployment_restarts_then_waits(void **state)
{
    fx *x = *state;
    add_workload(&x->f, "ReplicaSet", "web-rs", "Deployment", "web", 1, 1, true);
    Tailor__V1__Pod *pod = tk_pod("web-1", "n1", "web", 'r', "web-rs", 100, 1 << 20);
    char why[512];
    assert_int_equal(guard(x, pod, why, sizeof(why)), TLR_E_BUSY);
    assert_non_null(strstr(why, "Deployment default/web has one Ready pod; rolling restart started"));
    assert_int_equal(ds_fake_count(&x->f, "restart default/web for drain/uid-web-1"), 1);
    assert_non_null(ds_fake_call(&x->f, "event Pod web-1 Normal SingleReplicaRestart", 0));
    /* next passes: no second restart, still held */
    assert_int_equal(guard(x, pod, why, sizeof(why)), TLR_E_BUSY);
    assert_non_null(strstr(why, "waiting for the restarted pod to be Ready"));
    assert_int_equal(ds_fake_count(&x->f, "restart"), 1);
    /* the new pod is Ready: two Ready replicas, the old one may go */
    x->f.workloads[0].w.ready = 2;
    assert_int_equal(guard(x, pod, why, sizeof(why)), TLR_OK);
    tlr_kubeobj_free(pod);
}

static void test_pods_left_alone(void **state)
{
    fx *x = *state;
    add_workload(&x->f, "ReplicaSet", "big-rs", "Deployment", "big", 3, 3, true);
    struct { Tailor__V1__Pod *p; const char *name; } cases[4] = {
        { tk_pod("big-1", "n1", "big", 'r', "big-rs", 100, 1), "three Ready replicas" },
        { tk_pod("logs-1", "n1", "logs", 'd', "logs", 100, 1), "a DaemonSet pod" },
        { tk_pod("bare", "n1", "bare", 0, NULL, 100, 1), "a pod without a controller" },
        { tk_pod("job-1", "n1", "job", 'r', "unknown-rs", 100, 1), "an owner that is not a workload" },
    };
    char why[512];
    for (int i = 0; i < 4; i++) {
        int rc = guard(x, cases[i].p, why, sizeof(why));
        if (rc != TLR_OK)
            fail_msg("%s: held (%s)", cases[i].name, why);
        tlr_kubeobj_free(cases[i].p);
    }
    Tailor__V1__Pod *notready = tk_pod("web-1", "n1", "web", 'r', "web-rs", 100, 1);
    notready->ready = false;
    add_workload(&x->f, "ReplicaSet", "web-rs", "Deployment", "web", 1, 0, true);
    assert_int_equal(guard(x, notready, why, sizeof(why)), TLR_OK);   /* nothing to keep up */
    tlr_kubeobj_free(notready);
    assert_int_equal(ds_fake_count(&x->f, "restart"), 0);
}

/* A snapshot: n1 (t.small, the StatefulSet pod db-0 of 1.5 cpu) and n2
 * (t.small, full); optionally n3 (t.medium, empty). */
static void snapshot(fx *x, bool room)
{
    if (x->f.snap)
        protobuf_c_message_free_unpacked(&x->f.snap->base, NULL);
    Tailor__V1__SnapshotResponse *s = tk_snapshot();
    Tailor__V1__ClusterState *cs = s->cluster;
    TK_PUSH(cs->nodepools, cs->n_nodepools, tk_pool("default", "10%"));
    TK_PUSH(cs->node_classes, cs->n_node_classes, tk_nodeclass("default"));
    Tailor__V1__Node *n1 = tk_node("n1", "default", "t.small", 2, 4, 0.10);
    tk_bind(n1, tk_pod("db-0", NULL, "db", 's', "db", 1500, TK_GIB));
    Tailor__V1__Node *n2 = tk_node("n2", "default", "t.small", 2, 4, 0.10);
    tk_bind(n2, tk_pod("full-1", NULL, "full", 'r', "full-rs", 1800, TK_GIB));
    TK_PUSH(cs->nodes, cs->n_nodes, n1);
    TK_PUSH(cs->nodes, cs->n_nodes, n2);
    if (room)
        TK_PUSH(cs->nodes, cs->n_nodes, tk_node("n3", "default", "t.medium", 4, 8, 0.19));
    for (size_t i = 0; i < cs->n_nodes; i++)
        TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, tk_claim_for(cs->nodes[i]));
    x->f.snap = s;
}

static void test_statefulset_gets_room_first(void **state)
{
    fx *x = *state;
    add_workload(&x->f, "StatefulSet", "db", "StatefulSet", "db", 1, 1, false);
    Tailor__V1__Pod *pod = tk_pod("db-0", "n1", "db", 's', "db", 1500, TK_GIB);
    snapshot(x, false);
    char why[512], room[96];
    ds_protect_room_name("default", "n1", room, sizeof(room));
    assert_int_equal(guard(x, pod, why, sizeof(why)), TLR_E_BUSY);
    char want[200];
    snprintf(want, sizeof(want), "launch %s t.small (single-replica-room:n1)", room);
    if (!ds_fake_call(&x->f, want, 0))
        fail_msg("no \"%s\"; why: %s", want, why);
    assert_non_null(strstr(why, "StatefulSet default/db has one Ready pod; making room first"));
    /* asked again before the room is there: launched again under the same name (idempotent) */
    assert_int_equal(guard(x, pod, why, sizeof(why)), TLR_E_BUSY);
    assert_int_equal(ds_fake_count(&x->f, "launch"), 2);
    assert_non_null(ds_fake_call(&x->f, want, 1));
    /* the room is Initialized (n3): the pod may go */
    snapshot(x, true);
    assert_int_equal(guard(x, pod, why, sizeof(why)), TLR_OK);
    assert_int_equal(ds_fake_count(&x->f, "launch"), 2);
    tlr_kubeobj_free(pod);
}

/* A NodeClaim on its way (not Initialized), created now. */
static void add_launching_claim(fx *x, const char *name)
{
    Tailor__V1__ClusterState *cs = x->f.snap->cluster;
    Tailor__V1__NodeClaim *c = tk_claim_for(cs->nodes[0]);
    free(c->name);
    c->name = tlr_strdup(name);
    c->creation_unix_ms = x->f.now_ms;
    c->status->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED;
    free(c->status->node_name);
    c->status->node_name = tlr_strdup("");
    TK_PUSH(cs->nodeclaims, cs->n_nodeclaims, c);
}

/* The interruption case: a replacement for n1's pods is already launching.
 * Restarting now would leave the new pod pending, and the launcher would
 * buy a second node for it; launching a room would too.  Both wait. */
static void test_launching_replacement_is_waited_for(void **state)
{
    fx *x = *state;
    add_workload(&x->f, "ReplicaSet", "web-rs", "Deployment", "web", 1, 1, true);
    add_workload(&x->f, "StatefulSet", "db", "StatefulSet", "db", 1, 1, false);
    Tailor__V1__Pod *web = tk_pod("web-1", "n1", "web", 'r', "web-rs", 100, 1 << 20);
    Tailor__V1__Pod *db = tk_pod("db-0", "n1", "db", 's', "db", 1500, TK_GIB);
    snapshot(x, false);
    add_launching_claim(x, "default-abcde");
    char why[512];
    assert_int_equal(guard(x, web, why, sizeof(why)), TLR_E_BUSY);
    assert_non_null(strstr(why, "Deployment default/web has one Ready pod; waiting for NodeClaim "
                                "default-abcde to be Initialized"));
    assert_int_equal(guard(x, db, why, sizeof(why)), TLR_E_BUSY);
    assert_non_null(strstr(why, "waiting for NodeClaim default-abcde"));
    assert_int_equal(ds_fake_count(&x->f, "restart"), 0);
    assert_int_equal(ds_fake_count(&x->f, "launch"), 0);
    /* the replacement is a Ready node now (n3): restart, and let db go */
    snapshot(x, true);
    assert_int_equal(guard(x, web, why, sizeof(why)), TLR_E_BUSY);
    assert_non_null(strstr(why, "rolling restart started"));
    assert_int_equal(ds_fake_count(&x->f, "restart default/web for drain/uid-web-1"), 1);
    assert_int_equal(guard(x, db, why, sizeof(why)), TLR_OK);
    assert_int_equal(ds_fake_count(&x->f, "launch"), 0);
    /* a claim that never came up (older than the registration TTL) is not
     * waited for: the room is launched */
    snapshot(x, false);
    add_launching_claim(x, "default-stale");
    x->f.snap->cluster->nodeclaims[x->f.snap->cluster->n_nodeclaims - 1]->creation_unix_ms =
        x->f.now_ms - 16 * 60 * 1000;
    assert_int_equal(guard(x, db, why, sizeof(why)), TLR_E_BUSY);
    assert_non_null(strstr(why, "making room first"));
    assert_int_equal(ds_fake_count(&x->f, "launch"), 1);
    tlr_kubeobj_free(web);
    tlr_kubeobj_free(db);
}

static void test_drain_with_protection(void **state)
{
    fx *x = *state;
    add_workload(&x->f, "ReplicaSet", "web-rs", "Deployment", "web", 1, 1, true);
    tlr_kclaim *c = ds_fake_add_claim(&x->f, "nc-1", "default", "i-1");
    c->finalizer = true;
    c->deletion_ms = x->f.now_ms;
    ds_fake_add_node(&x->f, "n1", "default", "i-1")->finalizer = true;
    Tailor__V1__Pod *pod = tk_pod("web-1", "n1", "web", 'r', "web-rs", 100, 1 << 20);
    ds_fake_add_pod(&x->f, pod);
    tlr_kubeobj_free(pod);
    ds_term_opts o = { .clock = &x->f.clock, .kube = ds_fake_kube(&x->f),
                       .launcher = ds_fake_launcher(&x->f), .drain = ds_fake_drain(&x->f),
                       .manage_finalizers = true };
    o.drain.guard = ds_protect_guard;
    o.drain.guard_arg = x->p;
    ds_term *t;
    ds_term_create(&o, &t);
    ds_term_stats st;
    ds_term_pass(t, &st);
    assert_int_equal(st.blocked, 1);
    assert_int_equal(ds_fake_count(&x->f, "evict"), 0);
    assert_int_equal(ds_fake_count(&x->f, "restart default/web"), 1);
    const char *ev = ds_fake_call(&x->f, "event NodeClaim nc-1 Warning FailedDraining", 0);
    assert_non_null(ev);
    assert_non_null(strstr(ev, "pod default/web-1 waits: Deployment default/web has one Ready pod"));
    x->f.now_ms += 1000;
    ds_term_pass(t, &st);
    assert_int_equal(ds_fake_count(&x->f, "evict"), 0);
    x->f.workloads[0].w.ready = 2;       /* the restarted pod is Ready elsewhere */
    x->f.now_ms += 1000;
    ds_term_pass(t, &st);
    assert_int_equal(ds_fake_count(&x->f, "evict default/web-1"), 1);
    ds_term_pass(t, &st);
    assert_null(ds_fake_claim(&x->f, "nc-1"));
    ds_term_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_surge_deployment_restarts_then_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pods_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statefulset_gets_room_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launching_replacement_is_waited_for, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_with_protection, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
