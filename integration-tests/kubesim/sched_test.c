/* sched_test.c - the scheduling pass and the pod lifecycle against a real
 * in-process store: what a user would see with kubectl (nodeName,
 * conditions, events, phase). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ks_hooks.h"
#include "ks_store.h"
#include "sched.h"
#include "tlr_err.h"
#include "tlr_json.h"

typedef struct fx {
    ks_store *s;
    ks_sched *sc;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    assert_int_equal(ks_store_create(&(ks_store_opts){ 0 }, &f->s), TLR_OK);
    ks_sched_create(f->s, NULL, &f->sc);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    ks_sched_free(f->sc);
    ks_store_free(f->s);
    free(f);
    return 0;
}

/* Create from JSON written with ' for ". */
static void create(ks_store *s, ks_kind_id kind, const char *ns, const char *fmt, ...)
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
    if (ks_store_create_text(s, kind, ns, buf, NULL, &st) != TLR_OK)
        fail_msg("create failed: %s: %s", st.message, buf);
}

static void node(ks_store *s, const char *name, const char *cpu, const char *zone,
                 const char *ready, const char *spec)
{
    create(s, KS_NODE, NULL,
           "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s',"
           "'topology.kubernetes.io/zone':'%s'}},'spec':%s,'status':{'allocatable':{'cpu':'%s',"
           "'memory':'8Gi','pods':'110'},'conditions':[{'type':'Ready','status':'%s'}]}}",
           name, name, zone, spec, cpu, ready);
}

static void pod(ks_store *s, const char *name, const char *cpu, const char *extra)
{
    create(s, KS_POD, "default",
           "{'metadata':{'name':'%s','labels':{'app':'web'}},'spec':{%s'containers':[{'name':'c',"
           "'image':'nginx','resources':{'requests':{'cpu':'%s'}}}]}}",
           name, extra, cpu);
}

static json_object *get_pod(ks_store *s, const char *name)
{
    json_object *o = NULL;
    assert_int_equal(ks_store_get_json(s, KS_POD, "default", name, &o, NULL), TLR_OK);
    return o;
}

static const char *node_of(json_object *p)
{
    const char *n = tlr_json_str(p, "spec.nodeName");
    return n ? n : "";
}

/* The PodScheduled condition's status/reason/message as "S|R|M". */
static void scheduled_cond(json_object *p, char *buf, size_t len)
{
    json_object *conds = tlr_json_arr(p, "status.conditions");
    snprintf(buf, len, "(none)");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type");
        if (t && !strcmp(t, "PodScheduled")) {
            const char *r = tlr_json_str(c, "reason"), *m = tlr_json_str(c, "message");
            snprintf(buf, len, "%s|%s|%s", tlr_json_str(c, "status"), r ? r : "", m ? m : "");
        }
    }
}

static size_t count_events(ks_store *s, const char *reason)
{
    ks_objlist l = { 0 };
    assert_int_equal(ks_store_list(s, KS_EVENT, NULL, &l, NULL), TLR_OK);
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++) {
        json_object *e = ks_obj_parse(l.items[i]);
        const char *r = tlr_json_str(e, "reason");
        n += r && !strcmp(r, reason);
        json_object_put(e);
    }
    ks_objlist_free(&l);
    return n;
}

static void test_binds_where_it_fits(void **state)
{
    fx *f = *state;
    node(f->s, "small", "1", "a", "True", "{}");
    node(f->s, "big", "4", "a", "True", "{}");
    pod(f->s, "p", "2", "");
    ks_sched_stats st;
    assert_int_equal(ks_sched_pass(f->sc, &st), TLR_OK);
    json_object *p = get_pod(f->s, "p");
    char cond[512];
    scheduled_cond(p, cond, sizeof(cond));
    if (strcmp(node_of(p), "big") || strcmp(cond, "True||"))
        fail_msg("got node \"%s\" condition %s, want big and True", node_of(p), cond);
    assert_int_equal(st.bound, 1);
    assert_int_equal(count_events(f->s, "Scheduled"), 1);
    json_object_put(p);
}

static void test_unschedulable_message_without_churn(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "1", "a", "True", "{}");
    node(f->s, "n2", "8", "a", "True", "{'taints':[{'key':'gpu','value':'true','effect':'NoSchedule'}]}");
    pod(f->s, "p", "2", "");
    assert_int_equal(ks_sched_pass(f->sc, NULL), TLR_OK);
    json_object *p = get_pod(f->s, "p");
    char cond[512];
    scheduled_cond(p, cond, sizeof(cond));
    const char *want = "False|Unschedulable|0/2 nodes are available: 1 Insufficient cpu, 1 "
                       "node(s) had untolerated taint {gpu: true}.";
    if (strcmp(cond, want))
        fail_msg("got %s, want %s", cond, want);
    const char *rv = tlr_json_str(p, "metadata.resourceVersion");
    char rv1[32];
    snprintf(rv1, sizeof(rv1), "%s", rv);
    json_object_put(p);
    assert_int_equal(count_events(f->s, "FailedScheduling"), 1);
    /* nothing changed: no new write, no new event */
    ks_sched_stats st;
    assert_int_equal(ks_sched_pass(f->sc, &st), TLR_OK);
    assert_int_equal(st.attempted, 0);
    p = get_pod(f->s, "p");
    if (strcmp(tlr_json_str(p, "metadata.resourceVersion"), rv1))
        fail_msg("pod rewritten with nothing changed: rv %s -> %s", rv1,
                 tlr_json_str(p, "metadata.resourceVersion"));
    json_object_put(p);
    assert_int_equal(count_events(f->s, "FailedScheduling"), 1);
    /* a node that fits arrives: bound on the next pass */
    node(f->s, "n3", "4", "b", "True", "{}");
    assert_int_equal(ks_sched_pass(f->sc, NULL), TLR_OK);
    p = get_pod(f->s, "p");
    if (strcmp(node_of(p), "n3"))
        fail_msg("after n3 joined: node \"%s\", want n3", node_of(p));
    json_object_put(p);
}

static void test_bound_pods_take_capacity(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "2", "a", "True", "{}");
    /* a DaemonSet-style pod already on the node, not via the scheduler */
    pod(f->s, "ds", "1500m", "'nodeName':'n1',");
    pod(f->s, "p", "1", "");
    assert_int_equal(ks_sched_pass(f->sc, NULL), TLR_OK);
    json_object *p = get_pod(f->s, "p");
    char cond[512];
    scheduled_cond(p, cond, sizeof(cond));
    if (*node_of(p) || !strstr(cond, "1 Insufficient cpu"))
        fail_msg("got node \"%s\" condition %s, want unbound and Insufficient cpu", node_of(p),
                 cond);
    json_object_put(p);
    /* two pending pods that each fit alone but not together */
    pod(f->s, "q1", "250m", "");
    pod(f->s, "q2", "300m", "");
    assert_int_equal(ks_sched_pass(f->sc, NULL), TLR_OK);
    json_object *q1 = get_pod(f->s, "q1"), *q2 = get_pod(f->s, "q2");
    int bound = (*node_of(q1) != 0) + (*node_of(q2) != 0);
    if (bound != 1)
        fail_msg("q1 on \"%s\", q2 on \"%s\": want exactly one bound in 500m", node_of(q1),
                 node_of(q2));
    json_object_put(q1);
    json_object_put(q2);
}

static void set_ready(ks_store *s, const char *name, const char *ready)
{
    char patch[128];
    ks_status st;
    snprintf(patch, sizeof(patch),
             "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}", ready);
    if (ks_store_patch(s, KS_NODE, NULL, name, KS_PATCH_MERGE, patch, strlen(patch), KS_W_STATUS,
                       NULL, &st) != TLR_OK)
        fail_msg("patch node %s: %s", name, st.message);
}

static void test_not_ready_node_and_pod_lifecycle(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "4", "a", "False", "{}");
    pod(f->s, "p", "1", "");
    assert_int_equal(ks_sched_pass(f->sc, NULL), TLR_OK);
    json_object *p = get_pod(f->s, "p");
    char cond[512];
    scheduled_cond(p, cond, sizeof(cond));
    if (!strstr(cond, "untolerated taint {node.kubernetes.io/not-ready: }"))
        fail_msg("on a NotReady node: %s", cond);
    json_object_put(p);
    /* the node turns Ready: bound, then started by the kubelet step */
    set_ready(f->s, "n1", "True");
    assert_int_equal(ks_sched_pass(f->sc, NULL), TLR_OK);
    ks_podlife *pl;
    ks_podlife_create(f->s, NULL, 0, &pl);
    assert_int_equal(ks_podlife_pass(pl), 1);
    p = get_pod(f->s, "p");
    const char *phase = tlr_json_str(p, "status.phase");
    if (strcmp(node_of(p), "n1") || !phase || strcmp(phase, "Running") ||
        !tlr_json_str(p, "status.podIP"))
        fail_msg("got node \"%s\" phase %s, want n1 Running with an IP", node_of(p),
                 phase ? phase : "(none)");
    json_object_put(p);
    assert_int_equal(ks_podlife_pass(pl), 0);   /* at rest: no writes */
    /* the node goes NotReady: the pod turns not Ready */
    set_ready(f->s, "n1", "False");
    assert_int_equal(ks_podlife_pass(pl), 1);
    p = get_pod(f->s, "p");
    json_object *conds = tlr_json_arr(p, "status.conditions");
    const char *ready = NULL;
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++)
        if (!strcmp(tlr_json_str(json_object_array_get_idx(conds, i), "type"), "Ready"))
            ready = tlr_json_str(json_object_array_get_idx(conds, i), "status");
    if (!ready || strcmp(ready, "False"))
        fail_msg("pod Ready is %s on a NotReady node, want False", ready ? ready : "(none)");
    json_object_put(p);
    ks_podlife_free(pl);
}

static void test_start_delay(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "4", "a", "True", "{}");
    pod(f->s, "p", "1", "'nodeName':'n1',");
    ks_podlife *pl;
    ks_podlife_create(f->s, NULL, 60000, &pl);
    assert_int_equal(ks_podlife_pass(pl), 0);
    json_object *p = get_pod(f->s, "p");
    const char *phase = tlr_json_str(p, "status.phase");
    if (phase && strcmp(phase, "Pending"))
        fail_msg("phase %s within the start delay, want Pending", phase);
    json_object_put(p);
    ks_podlife_free(pl);
}

static void test_spread_in_one_pass(void **state)
{
    fx *f = *state;
    node(f->s, "a1", "8", "a", "True", "{}");
    node(f->s, "a2", "8", "a", "True", "{}");
    node(f->s, "b1", "8", "b", "True", "{}");
    node(f->s, "c1", "8", "c", "True", "{}");
    const char *spread = "'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':"
                         "'topology.kubernetes.io/zone','whenUnsatisfiable':'DoNotSchedule',"
                         "'labelSelector':{'matchLabels':{'app':'web'}}}],";
    char name[16];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "w%d", i);
        pod(f->s, name, "100m", spread);
    }
    assert_int_equal(ks_sched_pass(f->sc, NULL), TLR_OK);
    int zone[3] = { 0 };
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "w%d", i);
        json_object *p = get_pod(f->s, name);
        const char *n = node_of(p);
        if (!*n)
            fail_msg("%s not bound", name);
        zone[n[0] - 'a']++;
        json_object_put(p);
    }
    if (zone[0] != 2 || zone[1] != 2 || zone[2] != 2)
        fail_msg("pods per zone a/b/c: %d/%d/%d, want 2/2/2", zone[0], zone[1], zone[2]);
}

static void test_binding_subresource(void **state)
{
    fx *f = *state;
    node(f->s, "n1", "4", "a", "True", "{}");
    pod(f->s, "p", "1", "");
    json_object *b = json_tokener_parse("{\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}");
    json_object *empty = json_tokener_parse("{\"target\":{}}");
    ks_status st;
    assert_int_equal(ks_pods_bind(f->s, "default", "p", empty, &st), TLR_E_INVAL);
    assert_int_equal(st.code, 422);
    assert_int_equal(ks_pods_bind(f->s, "default", "p", b, &st), TLR_OK);
    assert_int_equal(ks_pods_bind(f->s, "default", "p", b, &st), TLR_E_CONFLICT);
    if (st.code != 409 || !strstr(st.message, "is already assigned to node \"n1\""))
        fail_msg("rebind: %d %s", st.code, st.message);
    assert_int_equal(ks_pods_bind(f->s, "default", "nope", b, &st), TLR_E_NOTFOUND);
    assert_int_equal(st.code, 404);
    json_object *p = get_pod(f->s, "p");
    char cond[128];
    scheduled_cond(p, cond, sizeof(cond));
    if (strcmp(node_of(p), "n1") || strcmp(cond, "True||"))
        fail_msg("after binding: node %s condition %s", node_of(p), cond);
    json_object_put(p);
    json_object_put(b);
    json_object_put(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_binds_where_it_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unschedulable_message_without_churn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_pods_take_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_ready_node_and_pod_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spread_in_one_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binding_subresource, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
