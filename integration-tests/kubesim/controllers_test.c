/* controllers_test.c - the workload controllers' decisions (table-driven)
 * and their behaviour against a real in-process store together with the
 * scheduler and pod lifecycle: the pods a user would see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controllers.h"
#include "sched.h"
#include "tlr_err.h"
#include "tlr_json.h"

static json_object *J(const char *s)
{
    char *t = strdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_object *o = json_tokener_parse(t);
    if (!o)
        fail_msg("bad test JSON: %s", s);
    free(t);
    return o;
}

/* ------------------------------------------------------------------ */
/* Pure decisions                                                      */
/* ------------------------------------------------------------------ */

typedef struct rollout_case {
    const char *name;
    int32_t replicas, surge, unavailable;
    ks_rs_state rs[3];      /* oldest first */
    size_t n, new_idx;
    bool changed;
    int32_t want[3];
} rollout_case;

static const rollout_case rollout_cases[] = {
    { "fresh: the new set scales to replicas", 3, 1, 0, { { 0, 0 } }, 1, 0, true, { 3 } },
    { "surge 1: one new pod first", 3, 1, 0, { { 3, 3 }, { 0, 0 } }, 2, 1, true, { 3, 1 } },
    { "surge used up, new pod not available: wait", 3, 1, 0, { { 3, 3 }, { 1, 0 } }, 2, 1, false,
      { 3, 1 } },
    { "new pod available: one old pod goes", 3, 1, 0, { { 3, 3 }, { 1, 1 } }, 2, 1, true, { 2, 1 } },
    { "maxUnavailable 1, no surge: old scales down first", 4, 0, 1, { { 4, 4 }, { 0, 0 } }, 2, 1,
      true, { 3, 0 } },
    { "unhealthy old pods go first, as far as maxUnavailable allows", 4, 0, 1,
      { { 4, 2 }, { 0, 0 } }, 2, 1, true, { 3, 0 } },
    { "two old sets: the oldest goes first", 2, 0, 1, { { 1, 1 }, { 1, 1 }, { 0, 0 } }, 3, 2, true,
      { 0, 1, 0 } },
    { "scale down after the rollout", 2, 1, 0, { { 0, 0 }, { 3, 3 } }, 2, 1, true, { 0, 2 } },
    { "done", 3, 1, 0, { { 0, 0 }, { 3, 3 } }, 2, 1, false, { 0, 3 } },
};

static void test_rollout_steps(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rollout_cases) / sizeof(rollout_cases[0]); i++) {
        const rollout_case *c = &rollout_cases[i];
        int32_t want[3] = { -1, -1, -1 };
        bool ch = ks_rollout_step(c->replicas, c->surge, c->unavailable, c->rs, c->n, c->new_idx,
                                  want);
        bool same = ch == c->changed;
        for (size_t k = 0; k < c->n; k++)
            same &= want[k] == c->want[k];
        if (!same)
            fail_msg("%s: got changed=%d [%d %d %d], want changed=%d [%d %d %d]", c->name, ch,
                     want[0], want[1], want[2], c->changed, c->want[0], c->want[1], c->want[2]);
    }
}

typedef struct surge_case {
    const char *deploy;
    int32_t surge, unavailable;
    int rc;
} surge_case;

static const surge_case surge_cases[] = {
    { "{'spec':{'replicas':10}}", 3, 2, TLR_OK },   /* 25% up, 25% down */
    { "{'spec':{'replicas':1}}", 1, 0, TLR_OK },
    { "{'spec':{'replicas':3,'strategy':{'rollingUpdate':{'maxSurge':0,'maxUnavailable':0}}}}", 0,
      1, TLR_OK },
    { "{'spec':{'replicas':3,'strategy':{'rollingUpdate':{'maxSurge':2,'maxUnavailable':'50%'}}}}",
      2, 1, TLR_OK },
    { "{'spec':{'replicas':3,'strategy':{'type':'Recreate'}}}", 0, 3, TLR_OK },
    { "{'spec':{'replicas':3,'strategy':{'rollingUpdate':{'maxSurge':'x'}}}}", 0, 0, TLR_E_PARSE },
};

static void test_surge(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(surge_cases) / sizeof(surge_cases[0]); i++) {
        const surge_case *c = &surge_cases[i];
        json_object *d = J(c->deploy);
        int32_t s = -1, u = -1;
        char err[128];
        int rc = ks_deploy_surge(d, &s, &u, err, sizeof(err));
        if (rc != c->rc || (rc == TLR_OK && (s != c->surge || u != c->unavailable)))
            fail_msg("%s: got rc %d surge %d unavailable %d, want %d %d %d", c->deploy, rc, s, u,
                     c->rc, c->surge, c->unavailable);
        json_object_put(d);
    }
}

static void test_rank_for_deletion(void **state)
{
    (void)state;
    ks_ctl_pod pods[] = {
        { .name = "running-old", .assigned = true, .phase_rank = 2, .ready = true,
          .ready_since_ms = 100, .created_ms = 1 },
        { .name = "unassigned", .assigned = false, .created_ms = 5 },
        { .name = "running-new", .assigned = true, .phase_rank = 2, .ready = true,
          .ready_since_ms = 900, .created_ms = 9 },
        { .name = "pending", .assigned = true, .phase_rank = 0, .created_ms = 3 },
        { .name = "not-ready", .assigned = true, .phase_rank = 2, .ready = false, .created_ms = 2 },
    };
    ks_ctl_rank_for_deletion(pods, 5);
    const char *want[] = { "unassigned", "pending", "not-ready", "running-new", "running-old" };
    for (size_t i = 0; i < 5; i++)
        if (strcmp(pods[i].name, want[i]))
            fail_msg("position %zu: got %s, want %s", i, pods[i].name, want[i]);
}

static void test_template_hash(void **state)
{
    (void)state;
    json_object *a = J("{'metadata':{'labels':{'app':'web','tier':'x'}},'spec':{'containers':[{'name':'c','image':'nginx'}]}}");
    json_object *b = J("{'spec':{'containers':[{'image':'nginx','name':'c'}]},'metadata':{'labels':{'tier':'x','app':'web'}}}");
    json_object *c = J("{'metadata':{'labels':{'app':'web','tier':'x'},'annotations':{'kubectl.kubernetes.io/restartedAt':'now'}},'spec':{'containers':[{'name':'c','image':'nginx'}]}}");
    char ha[16], hb[16], hc[16], hd[16];
    ks_template_hash(a, 0, ha, sizeof(ha));
    ks_template_hash(b, 0, hb, sizeof(hb));
    ks_template_hash(c, 0, hc, sizeof(hc));
    ks_template_hash(a, 1, hd, sizeof(hd));
    if (strcmp(ha, hb))
        fail_msg("key order changed the hash: %s vs %s", ha, hb);
    if (!strcmp(ha, hc) || !strcmp(ha, hd))
        fail_msg("different templates share a hash: %s %s %s", ha, hc, hd);
    for (const char *p = ha; *p; p++)
        if (!strchr("bcdfghjklmnpqrstvwxz2456789", *p))
            fail_msg("hash %s has a character outside the safe alphabet", ha);
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

typedef struct ds_case {
    const char *name;
    const char *node_spec;
    const char *pod_spec;
    bool run;
} ds_case;

static const ds_case ds_cases[] = {
    { "plain", "{}", "{}", true },
    { "cordoned node still runs it", "{'unschedulable':true,'taints':[{'key':"
      "'node.kubernetes.io/unschedulable','effect':'NoSchedule'}]}", "{}", true },
    { "tainted node", "{'taints':[{'key':'gpu','effect':'NoSchedule'}]}", "{}", false },
    { "tainted node, tolerated", "{'taints':[{'key':'gpu','effect':'NoSchedule'}]}",
      "{'tolerations':[{'key':'gpu','operator':'Exists'}]}", true },
    { "not-ready NoExecute is tolerated", "{'taints':[{'key':'node.kubernetes.io/not-ready',"
      "'effect':'NoExecute'}]}", "{}", true },
    { "nodeSelector elsewhere", "{}", "{'nodeSelector':{'zone':'b'}}", false },
    { "network-unavailable only with hostNetwork", "{'taints':[{'key':"
      "'node.kubernetes.io/network-unavailable','effect':'NoSchedule'}]}", "{'hostNetwork':true}",
      true },
};

static void test_ds_should_run(void **state)
{
    (void)state;
    ks_resnames *names;
    ks_resnames_create(&names);
    for (size_t i = 0; i < sizeof(ds_cases) / sizeof(ds_cases[0]); i++) {
        const ds_case *c = &ds_cases[i];
        json_object *node = J("{'metadata':{'name':'n1','labels':{'zone':'a'}}}");
        json_object_object_add(node, "spec", J(c->node_spec));
        json_object *spec = J(c->pod_spec);
        ks_node_info n;
        char err[64];
        assert_int_equal(ks_node_info_init(node, names, &n, err, sizeof(err)), TLR_OK);
        if (ks_ds_should_run(spec, &n) != c->run)
            fail_msg("%s: got %d, want %d", c->name, !c->run, c->run);
        /* the prepared pod lands only on that node */
        ks_ds_pod_prepare(spec, "n1");
        const char *v = tlr_json_str(spec, "affinity.nodeAffinity."
                                           "requiredDuringSchedulingIgnoredDuringExecution."
                                           "nodeSelectorTerms.0.matchFields.0.values.0");
        if (!v || strcmp(v, "n1") || !ks_tolerates(tlr_json_arr(spec, "tolerations"),
                                                   "node.kubernetes.io/unschedulable", "",
                                                   "NoSchedule"))
            fail_msg("%s: prepared spec %s", c->name, json_object_to_json_string(spec));
        json_object_put(node);
        json_object_put(spec);
    }
    ks_resnames_free(names);
}

/* ------------------------------------------------------------------ */
/* Against a store                                                     */
/* ------------------------------------------------------------------ */

typedef struct fx {
    ks_store *s;
    ks_ctl *ctl;
    ks_sched *sc;
    ks_podlife *pl;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    assert_int_equal(ks_store_create(&(ks_store_opts){ 0 }, &f->s), TLR_OK);
    ks_ctl_create(f->s, NULL, &f->ctl);
    ks_sched_create(f->s, NULL, &f->sc);
    ks_podlife_create(f->s, NULL, 0, &f->pl);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    ks_ctl_free(f->ctl);
    ks_sched_free(f->sc);
    ks_podlife_free(f->pl);
    ks_store_free(f->s);
    free(f);
    return 0;
}

/* Run controllers, scheduler and kubelet until nothing changes. */
static void settle(fx *f)
{
    for (int i = 0; i < 60; i++) {
        uint64_t before = ks_store_rv(f->s);
        ks_ctl_pass(f->ctl);
        ks_sched_pass(f->sc, NULL);
        ks_podlife_pass(f->pl);
        if (ks_store_rv(f->s) == before)
            return;
    }
    fail_msg("the cluster did not settle in 60 rounds");
}

static void create(ks_store *s, ks_kind_id kind, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    ks_status st;
    const ks_kind *k = ks_kind_get(kind);
    if (ks_store_create_text(s, kind, k->namespaced ? "default" : NULL, buf, NULL, &st) != TLR_OK)
        fail_msg("create failed: %s: %s", st.message, buf);
}

static void node(ks_store *s, const char *name, const char *extra_spec)
{
    create(s, KS_NODE, "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'}},"
           "'spec':{%s},'status':{'allocatable':{'cpu':'4','memory':'8Gi','pods':'110'},"
           "'conditions':[{'type':'Ready','status':'True'}]}}", name, name, extra_spec);
}

#define TEMPLATE "'template':{'metadata':{'labels':{'app':'web'}},'spec':{'containers':[{'name':'c'," \
                 "'image':'nginx','resources':{'requests':{'cpu':'100m'}}}]}}"

/* Pods in default with label app=web that are not terminating, and how
 * many of them are Running. */
static size_t web_pods(ks_store *s, size_t *running, const char *label, const char *value)
{
    ks_objlist l = { 0 };
    assert_int_equal(ks_store_list(s, KS_POD, NULL, &l, NULL), TLR_OK);
    size_t n = 0, r = 0;
    for (size_t i = 0; i < l.n; i++) {
        const char *v = ks_obj_label(l.items[i], label);
        if (ks_obj_deleting(l.items[i]) || !v || (value && strcmp(v, value)))
            continue;
        n++;
        r += !strcmp(ks_obj_phase(l.items[i]), "Running");
    }
    ks_objlist_free(&l);
    if (running)
        *running = r;
    return n;
}

static int64_t status_int(ks_store *s, ks_kind_id kind, const char *name, const char *path)
{
    json_object *o = NULL;
    assert_int_equal(ks_store_get_json(s, kind, "default", name, &o, NULL), TLR_OK);
    int64_t v = -1;
    (void)tlr_json_int(o, path, &v);
    json_object_put(o);
    return v;
}

static void test_deployment_replaces_evicted_pod(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "");
    create(f->s, KS_DEPLOYMENT, "{'metadata':{'name':'web'},'spec':{'replicas':3,'selector':"
           "{'matchLabels':{'app':'web'}}," TEMPLATE "}}");
    settle(f);
    size_t running = 0, n = web_pods(f->s, &running, "app", NULL);
    if (n != 3 || running != 3)
        fail_msg("got %zu pods, %zu running; want 3 and 3", n, running);
    int64_t avail = status_int(f->s, KS_DEPLOYMENT, "web", "status.availableReplicas");
    int64_t upd = status_int(f->s, KS_DEPLOYMENT, "web", "status.updatedReplicas");
    if (avail != 3 || upd != 3)
        fail_msg("deployment status available %lld updated %lld, want 3 3", (long long)avail,
                 (long long)upd);
    /* delete one pod: a new pending pod replaces it, then runs */
    ks_objlist l = { 0 };
    assert_int_equal(ks_store_list(f->s, KS_POD, NULL, &l, NULL), TLR_OK);
    char victim[256];
    snprintf(victim, sizeof(victim), "%s", ks_obj_name(l.items[0]));
    ks_objlist_free(&l);
    assert_int_equal(ks_store_delete(f->s, KS_POD, "default", victim, NULL, NULL, NULL), TLR_OK);
    ks_ctl_pass(f->ctl);
    size_t pending_running = 0;
    n = web_pods(f->s, &pending_running, "app", NULL);
    if (n != 3 || pending_running != 2)
        fail_msg("after a delete: %zu pods, %zu running; want 3 with 2 running", n,
                 pending_running);
    settle(f);
    n = web_pods(f->s, &running, "app", NULL);
    if (n != 3 || running != 3)
        fail_msg("settled: %zu pods, %zu running", n, running);
}

static void test_rollout_restart_makes_new_replicaset(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "");
    create(f->s, KS_DEPLOYMENT, "{'metadata':{'name':'web'},'spec':{'replicas':2,'selector':"
           "{'matchLabels':{'app':'web'}}," TEMPLATE "}}");
    settle(f);
    const char *patch = "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{"
                        "\"kubectl.kubernetes.io/restartedAt\":\"2025-01-01T00:00:00Z\"}}}}}";
    ks_status st;
    assert_int_equal(ks_store_patch(f->s, KS_DEPLOYMENT, "default", "web", KS_PATCH_STRATEGIC,
                                    patch, strlen(patch), 0, NULL, &st), TLR_OK);
    settle(f);
    ks_objlist l = { 0 };
    assert_int_equal(ks_store_list(f->s, KS_REPLICASET, NULL, &l, NULL), TLR_OK);
    int64_t total = 0;
    size_t nrs = l.n;
    for (size_t i = 0; i < l.n; i++)
        total += status_int(f->s, KS_REPLICASET, ks_obj_name(l.items[i]), "spec.replicas");
    ks_objlist_free(&l);
    size_t running = 0, n = web_pods(f->s, &running, "app", NULL);
    if (nrs != 2 || total != 2 || n != 2 || running != 2)
        fail_msg("after restart: %zu replicasets with %lld replicas, %zu pods (%zu running); "
                 "want 2, 2, 2, 2", nrs, (long long)total, n, running);
    /* every pod carries the restart annotation */
    assert_int_equal(ks_store_list(f->s, KS_POD, NULL, &l, NULL), TLR_OK);
    for (size_t i = 0; i < l.n; i++) {
        json_object *p = ks_obj_parse(l.items[i]);
        if (!tlr_json_str(p, "metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt"))
            fail_msg("pod %s not from the new template", ks_obj_name(l.items[i]));
        json_object_put(p);
    }
    ks_objlist_free(&l);
}

static void test_node_deletion_reschedules(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "");
    create(f->s, KS_DEPLOYMENT, "{'metadata':{'name':'web'},'spec':{'replicas':2,'selector':"
           "{'matchLabels':{'app':'web'}}," TEMPLATE "}}");
    settle(f);
    assert_int_equal(ks_store_delete(f->s, KS_NODE, NULL, "n1", NULL, NULL, NULL), TLR_OK);
    settle(f);
    size_t running = 0, n = web_pods(f->s, &running, "app", NULL);
    if (n != 2 || running != 0)
        fail_msg("node gone: %zu pods (%zu running), want 2 pending", n, running);
    node(f->s, "n2", "");
    settle(f);
    n = web_pods(f->s, &running, "app", NULL);
    if (n != 2 || running != 2)
        fail_msg("new node: %zu pods (%zu running), want 2 running", n, running);
}

static void test_statefulset_ordinals(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "");
    create(f->s, KS_STATEFULSET, "{'metadata':{'name':'db'},'spec':{'replicas':3,'serviceName':"
           "'db','selector':{'matchLabels':{'app':'web'}}," TEMPLATE "}}");
    /* OrderedReady: db-0 first, db-1 only once db-0 runs */
    ks_ctl_pass(f->ctl);
    if (web_pods(f->s, NULL, "app", NULL) != 1)
        fail_msg("first pass created %zu pods, want 1", web_pods(f->s, NULL, "app", NULL));
    ks_obj *o = NULL;
    assert_int_equal(ks_store_get(f->s, KS_POD, "default", "db-0", &o, NULL), TLR_OK);
    ks_obj_unref(o);
    settle(f);
    size_t running = 0;
    if (web_pods(f->s, &running, "app", NULL) != 3 || running != 3)
        fail_msg("settled: want db-0..2 running, got %zu running", running);
    assert_int_equal(ks_store_get(f->s, KS_POD, "default", "db-2", &o, NULL), TLR_OK);
    ks_obj_unref(o);
    assert_int_equal(status_int(f->s, KS_STATEFULSET, "db", "status.readyReplicas"), 3);
    ks_status st;
    const char *scale = "{\"spec\":{\"replicas\":1}}";
    assert_int_equal(ks_store_patch(f->s, KS_STATEFULSET, "default", "db", KS_PATCH_MERGE, scale,
                                    strlen(scale), 0, NULL, &st), TLR_OK);
    settle(f);
    if (web_pods(f->s, NULL, "app", NULL) != 1 ||
        ks_store_get(f->s, KS_POD, "default", "db-0", &o, NULL) != TLR_OK)
        fail_msg("scaled to 1: want only db-0");
    ks_obj_unref(o);
}

static void test_daemonset_per_node(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "");
    node(f->s, "n2", "'taints':[{'key':'gpu','effect':'NoSchedule'}]");
    node(f->s, "n3", "'unschedulable':true");
    create(f->s, KS_DAEMONSET, "{'metadata':{'name':'agent'},'spec':{'selector':{'matchLabels':"
           "{'app':'web'}}," TEMPLATE "}}");
    settle(f);
    size_t running = 0, n = web_pods(f->s, &running, "app", NULL);
    /* n1 and the cordoned n3, not the tainted n2 */
    if (n != 2 || running != 2)
        fail_msg("got %zu pods (%zu running), want 2", n, running);
    assert_int_equal(status_int(f->s, KS_DAEMONSET, "agent", "status.desiredNumberScheduled"), 2);
    assert_int_equal(status_int(f->s, KS_DAEMONSET, "agent", "status.numberReady"), 2);
    node(f->s, "n4", "");
    settle(f);
    if (web_pods(f->s, NULL, "app", NULL) != 3)
        fail_msg("a new node got no pod");
    /* deleting the DaemonSet deletes its pods (background) */
    assert_int_equal(ks_store_delete(f->s, KS_DAEMONSET, "default", "agent", NULL, NULL, NULL),
                     TLR_OK);
    settle(f);
    if (web_pods(f->s, NULL, "app", NULL) != 0)
        fail_msg("pods left after the DaemonSet went");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollout_steps),
        cmocka_unit_test(test_surge),
        cmocka_unit_test(test_rank_for_deletion),
        cmocka_unit_test(test_template_hash),
        cmocka_unit_test(test_ds_should_run),
        cmocka_unit_test_setup_teardown(test_deployment_replaces_evicted_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout_restart_makes_new_replicaset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_deletion_reschedules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statefulset_ordinals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemonset_per_node, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
