/* termination_test.c - the termination controller against the recording
 * fake: finalizers, the full taint -> drain -> terminate -> release order,
 * PDB-blocked drains with their Events, the terminationGracePeriod
 * deadline forcing it, a restart in the middle, node deletion, orphan
 * nodes and a launcher that cannot terminate yet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ds_fake.h"
#include "termination.h"
#include "ds_testkit.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"

typedef struct fx {
    ds_fake f;
    ds_term *t;
    ds_term_opts o;
} fx;

static ds_term_opts opts_of(ds_fake *f)
{
    ds_term_opts o = { 0 };
    o.clock = &f->clock;
    o.kube = ds_fake_kube(f);
    o.launcher = ds_fake_launcher(f);
    o.drain = ds_fake_drain(f);
    o.manage_finalizers = true;
    return o;
}

static int setup(void **state)
{
    fx *x = tlr_calloc(1, sizeof(*x));
    ds_fake_init(&x->f);
    x->o = opts_of(&x->f);
    ds_term_create(&x->o, &x->t);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    ds_term_free(x->t);
    ds_fake_clear(&x->f);
    free(x);
    return 0;
}

static void add_pod(ds_fake *f, const char *name, const char *node, const char *app, char kind)
{
    Tailor__V1__Pod *p = tk_pod(name, node, app, kind, "web-rs", 100, 1 << 20);
    ds_fake_add_pod(f, p);
    tlr_kubeobj_free(p);
}

/* "what" in the i-th call starting with prefix, or fail. */
static void assert_call(const ds_fake *f, size_t i, const char *want)
{
    if (i >= f->ncalls || strcmp(f->calls[i], want)) {
        for (size_t k = 0; k < f->ncalls; k++)
            print_message("  call %zu: %s\n", k, f->calls[k]);
        fail_msg("call %zu: want \"%s\", got \"%s\"", i, want, i < f->ncalls ? f->calls[i] : "(none)");
    }
}

static void test_finalizers_are_added_to_managed_objects(void **state)
{
    fx *x = *state;
    ds_fake_add_claim(&x->f, "nc-1", "default", "i-1");
    ds_fake_add_node(&x->f, "n1", "default", "i-1");
    ds_fake_add_node(&x->f, "other", NULL, "i-9");          /* not managed */
    tlr_kclaim *gone = ds_fake_add_claim(&x->f, "nc-2", "default", "i-2");
    gone->deletion_ms = x->f.now_ms;                       /* deleting without ours: not ours */
    ds_term_stats st;
    assert_int_equal(ds_term_pass(x->t, &st), TLR_OK);
    assert_int_equal(st.finalized, 2);
    assert_call(&x->f, 0, "finalizer nodeclaim nc-1 add");
    assert_call(&x->f, 1, "finalizer node n1 add");
    assert_int_equal(x->f.ncalls, 2);
    ds_fake_forget_calls(&x->f);
    ds_term_pass(x->t, &st);                               /* idempotent */
    assert_int_equal(x->f.ncalls, 0);
}

static void test_full_termination_in_order(void **state)
{
    fx *x = *state;
    tlr_kclaim *c = ds_fake_add_claim(&x->f, "nc-1", "default", "i-1");
    c->finalizer = true;
    c->deletion_ms = x->f.now_ms;
    ds_fake_add_node(&x->f, "n1", "default", "i-1")->finalizer = true;
    add_pod(&x->f, "web-1", "n1", "web", 'r');
    add_pod(&x->f, "logs-1", "n1", "logs", 'd');
    add_pod(&x->f, "elsewhere", "n2", "web", 'r');
    ds_term_stats st;
    ds_term_pass(x->t, &st);
    assert_call(&x->f, 0, "taint n1 on");
    assert_call(&x->f, 1, "evict default/web-1");   /* tier 0 first, DaemonSet waits */
    assert_call(&x->f, 2, "condition nc-1 Drained=Unknown Draining: evicting pods");
    assert_int_equal(x->f.ncalls, 3);
    assert_int_equal(st.terminating, 1);
    ds_fake_forget_calls(&x->f);
    ds_term_pass(x->t, &st);
    assert_call(&x->f, 0, "evict default/logs-1");
    assert_int_equal(x->f.ncalls, 1);               /* the condition already says so */
    ds_fake_forget_calls(&x->f);
    ds_term_pass(x->t, &st);                        /* drained: terminate and release */
    assert_call(&x->f, 0, "condition nc-1 Drained=True Drained: ");
    assert_call(&x->f, 1, "condition nc-1 InstanceTerminating=True InstanceTerminating: ");
    assert_call(&x->f, 2, "terminate nc-1 i-1");
    assert_call(&x->f, 3, "finalizer node n1 remove");
    assert_call(&x->f, 4, "delete node n1");
    assert_call(&x->f, 5, "finalizer nodeclaim nc-1 remove");
    assert_int_equal(st.terminated, 1);
    assert_null(ds_fake_claim(&x->f, "nc-1"));
    assert_null(ds_fake_node(&x->f, "n1"));
    assert_int_equal(ds_fake_pods_on(&x->f, "n2"), 1);   /* other nodes untouched */
}

static void test_pdb_block_names_it_then_deadline_forces(void **state)
{
    fx *x = *state;
    tlr_kclaim *c = ds_fake_add_claim(&x->f, "nc-1", "default", "i-1");
    c->finalizer = true;
    c->deletion_ms = x->f.now_ms;
    c->tgp_ms = 120000;                               /* terminationGracePeriod 2m */
    ds_fake_add_node(&x->f, "n1", "default", "i-1")->finalizer = true;
    add_pod(&x->f, "web-1", "n1", "web", 'r');
    x->f.pdbs[x->f.npdbs++] = tk_pdb("web-pdb", "web", 0);
    x->f.refuse_app = "web";
    ds_term_stats st;
    ds_term_pass(x->t, &st);
    assert_int_equal(st.blocked, 1);
    /* the deadline is persisted first */
    assert_call(&x->f, 0, "annotate nc-1 karpenter.sh/nodeclaim-termination-timestamp=2027-01-15T08:02:00Z");
    const char *ev = ds_fake_call(&x->f, "event NodeClaim nc-1 Warning FailedDraining", 0);
    assert_non_null(ev);
    assert_non_null(strstr(ev, "PodDisruptionBudget default/web-pdb"));
    assert_non_null(strstr(ev, "pod default/web-1"));
    assert_non_null(ds_fake_call(&x->f, "event Node n1 Warning FailedDraining", 0));
    assert_int_equal(ds_fake_count(&x->f, "terminate"), 0);
    /* the NodeClaim's Drained condition says what blocks it */
    const char *cond = ds_fake_call(&x->f, "condition nc-1 Drained=Unknown Draining: drain of node n1 blocked:", 0);
    assert_non_null(cond);
    assert_non_null(strstr(cond, "PodDisruptionBudget default/web-pdb"));
    /* 5 s later: same blocker, no second event (de-duplicated), no rewrite */
    ds_fake_forget_calls(&x->f);
    x->f.now_ms += 5000;
    ds_term_pass(x->t, &st);
    assert_int_equal(ds_fake_count(&x->f, "event"), 0);
    assert_int_equal(ds_fake_count(&x->f, "condition"), 0);
    /* 91 s after deletion: the pod's 30 s grace would pass the deadline -> deleted */
    ds_fake_forget_calls(&x->f);
    x->f.now_ms += 86000;
    ds_term_pass(x->t, &st);
    assert_non_null(ds_fake_call(&x->f, "delete pod default/web-1 grace=29", 0));
    assert_int_equal(ds_fake_count(&x->f, "evict"), 0);
    ds_fake_forget_calls(&x->f);
    ds_term_pass(x->t, &st);
    assert_non_null(ds_fake_call(&x->f, "condition nc-1 Drained=True", 0));
    assert_call(&x->f, 2, "terminate nc-1 i-1");
    assert_null(ds_fake_claim(&x->f, "nc-1"));
}

static void test_restart_mid_drain_finishes(void **state)
{
    fx *x = *state;
    tlr_kclaim *c = ds_fake_add_claim(&x->f, "nc-1", "default", "i-1");
    c->finalizer = true;
    c->deletion_ms = x->f.now_ms;
    ds_fake_add_node(&x->f, "n1", "default", "i-1")->finalizer = true;
    add_pod(&x->f, "web-1", "n1", "web", 'r');
    add_pod(&x->f, "logs-1", "n1", "logs", 'd');
    ds_term_pass(x->t, NULL);
    assert_int_equal(ds_fake_pods_on(&x->f, "n1"), 1);
    /* the process dies: all memory is gone, Kubernetes keeps the state */
    ds_term_free(x->t);
    ds_term_create(&x->o, &x->t);
    ds_fake_forget_calls(&x->f);
    for (int i = 0; i < 4 && ds_fake_claim(&x->f, "nc-1"); i++)
        ds_term_pass(x->t, NULL);
    assert_null(ds_fake_claim(&x->f, "nc-1"));
    assert_null(ds_fake_node(&x->f, "n1"));
    assert_int_equal(ds_fake_count(&x->f, "terminate nc-1"), 1);
    assert_int_equal(ds_fake_count(&x->f, "taint"), 0);   /* the taint was already there */
}

static void test_deleting_node_deletes_its_claim(void **state)
{
    fx *x = *state;
    ds_fake_add_claim(&x->f, "nc-1", "default", "i-1")->finalizer = true;
    tlr_knode *n = ds_fake_add_node(&x->f, "n1", "default", "i-1");
    n->finalizer = true;
    n->deletion_ms = x->f.now_ms;                 /* kubectl delete node n1 */
    ds_term_pass(x->t, NULL);
    assert_call(&x->f, 0, "delete nodeclaim nc-1");
    ds_fake_forget_calls(&x->f);
    ds_term_pass(x->t, NULL);                     /* now the claim's termination runs */
    assert_non_null(ds_fake_call(&x->f, "terminate nc-1 i-1", 0));
    assert_null(ds_fake_claim(&x->f, "nc-1"));
}

static void test_launcher_failure_keeps_finalizers(void **state)
{
    fx *x = *state;
    tlr_kclaim *c = ds_fake_add_claim(&x->f, "nc-1", "default", "i-1");
    c->finalizer = true;
    c->deletion_ms = x->f.now_ms;
    x->f.terminate_rc = TLR_E_UNAVAILABLE;
    ds_term_pass(x->t, NULL);
    ds_term_pass(x->t, NULL);
    assert_int_equal(ds_fake_count(&x->f, "terminate nc-1"), 2);   /* retried */
    assert_int_equal(ds_fake_count(&x->f, "finalizer"), 0);
    char why[256];
    assert_true(ds_term_status(x->t, "nc-1", why, sizeof(why)));
    assert_non_null(strstr(why, "could not terminate"));
    x->f.terminate_rc = 0;
    ds_term_pass(x->t, NULL);
    assert_null(ds_fake_claim(&x->f, "nc-1"));
}

static void test_orphan_node_is_drained_and_terminated_by_id(void **state)
{
    fx *x = *state;
    tlr_knode *n = ds_fake_add_node(&x->f, "n1", "default", "i-7");
    n->finalizer = true;
    n->deletion_ms = x->f.now_ms;
    add_pod(&x->f, "web-1", "n1", "web", 'r');
    ds_term_pass(x->t, NULL);
    ds_term_pass(x->t, NULL);
    assert_non_null(ds_fake_call(&x->f, "evict default/web-1", 0));
    assert_non_null(ds_fake_call(&x->f, "terminate  i-7", 0));
    assert_null(ds_fake_node(&x->f, "n1"));
}

/* A node no AWS instance backs (providerID of another cloud) is drained
 * and released, and nothing is terminated in EC2 in its name. */
static void test_orphan_node_not_on_aws_is_not_terminated(void **state)
{
    fx *x = *state;
    tlr_knode *n = ds_fake_add_node(&x->f, "n1", "default", "i-7");
    free(n->provider_id);
    n->provider_id = tlr_strdup("kind://docker/kind/kind-worker");
    n->finalizer = true;
    n->deletion_ms = x->f.now_ms;
    add_pod(&x->f, "web-1", "n1", "web", 'r');
    ds_term_pass(x->t, NULL);
    ds_term_pass(x->t, NULL);
    assert_non_null(ds_fake_call(&x->f, "evict default/web-1", 0));
    assert_int_equal(ds_fake_count(&x->f, "terminate"), 0);
    assert_null(ds_fake_node(&x->f, "n1"));
}

static void test_min_drain_time_waits(void **state)
{
    fx *x = *state;
    ds_term_free(x->t);
    x->o.min_drain_ms = 5000;
    ds_term_create(&x->o, &x->t);
    tlr_kclaim *c = ds_fake_add_claim(&x->f, "nc-1", "default", "i-1");
    c->finalizer = true;
    c->deletion_ms = x->f.now_ms;
    ds_fake_add_node(&x->f, "n1", "default", "i-1")->finalizer = true;
    ds_term_pass(x->t, NULL);
    x->f.now_ms += 3000;
    ds_term_pass(x->t, NULL);
    assert_int_equal(ds_fake_count(&x->f, "terminate"), 0);
    x->f.now_ms += 3000;
    ds_term_pass(x->t, NULL);
    assert_int_equal(ds_fake_count(&x->f, "terminate"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_finalizers_are_added_to_managed_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_termination_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pdb_block_names_it_then_deadline_forces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_mid_drain_finishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleting_node_deletes_its_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_failure_keeps_finalizers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphan_node_is_drained_and_terminated_by_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphan_node_not_on_aws_is_not_terminated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_drain_time_waits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
