/* sched_topo_test.c - topology spread and inter-pod (anti-)affinity:
 * for a small cluster and one pending pod, which nodes pass.  JSON uses '
 * for ". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched_topo.h"
#include "tlr_json.h"
#include "tlr_err.h"

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

/* Nodes n1..n4: zones a, a, b, c (n4 has no zone label when asked). */
typedef struct bound_pod {
    int node;              /* index */
    const char *labels;
    const char *affinity;  /* spec.affinity or NULL */
    const char *ns;
} bound_pod;

typedef struct topo_case {
    const char *name;
    bool n4_no_zone;
    bound_pod bound[6];
    size_t nbound;
    const char *pod;       /* the pending pod */
    const char *want;      /* nodes that pass, comma-separated */
    const char *reason;    /* the reason on the first failing node (or NULL) */
} topo_case;

#define SPREAD(key, skew, sel) \
    "'topologySpreadConstraints':[{'maxSkew':" #skew ",'topologyKey':'" key \
    "','whenUnsatisfiable':'DoNotSchedule','labelSelector':" sel "}]"
#define APP(a) "{'matchLabels':{'app':'" a "'}}"
#define ANTI(key, sel) \
    "{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'" key \
    "','labelSelector':" sel "}]}}"
#define AFFN(key, sel) \
    "{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'" key \
    "','labelSelector':" sel "}]}}"
#define HOST "kubernetes.io/hostname"
#define ZONE "topology.kubernetes.io/zone"

static const topo_case cases[] = {
    { "no constraints", false, { { 0, "{'app':'web'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{}}", "n1,n2,n3,n4", NULL },
    { "zone spread: the zone with a pod is full at skew 1", false,
      { { 0, "{'app':'web'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{" SPREAD(ZONE, 1, APP("web")) "}}",
      "n3,n4", "node(s) didn't match pod topology spread constraints" },
    { "zone spread: skew 2 allows it", false, { { 0, "{'app':'web'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{" SPREAD(ZONE, 2, APP("web")) "}}",
      "n1,n2,n3,n4", NULL },
    { "zone spread: other apps do not count", false, { { 0, "{'app':'db'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{" SPREAD(ZONE, 1, APP("web")) "}}",
      "n1,n2,n3,n4", NULL },
    { "zone spread: other namespaces do not count", false,
      { { 0, "{'app':'web'}", NULL, "other" } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{" SPREAD(ZONE, 1, APP("web")) "}}",
      "n1,n2,n3,n4", NULL },
    { "zone spread: a node without the key fails", true, { { 0, "{'app':'web'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{" SPREAD(ZONE, 1, APP("web")) "}}",
      "n3", "node(s) didn't match pod topology spread constraints" },
    { "hostname spread", false,
      { { 0, "{'app':'web'}", NULL, NULL }, { 1, "{'app':'web'}", NULL, NULL },
        { 2, "{'app':'web'}", NULL, NULL } }, 3,
      "{'metadata':{'labels':{'app':'web'}},'spec':{" SPREAD(HOST, 1, APP("web")) "}}",
      "n4", "node(s) didn't match pod topology spread constraints" },
    { "minDomains above the domain count makes the minimum 0", false,
      { { 0, "{'app':'web'}", NULL, NULL }, { 2, "{'app':'web'}", NULL, NULL },
        { 3, "{'app':'web'}", NULL, NULL } }, 3,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'topologySpreadConstraints':[{'maxSkew':1,"
      "'minDomains':5,'topologyKey':'" ZONE "','whenUnsatisfiable':'DoNotSchedule',"
      "'labelSelector':" APP("web") "}]}}",
      "", "node(s) didn't match pod topology spread constraints" },
    { "ScheduleAnyway is not a filter", false, { { 0, "{'app':'web'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'topologySpreadConstraints':[{'maxSkew':1,"
      "'topologyKey':'" ZONE "','whenUnsatisfiable':'ScheduleAnyway','labelSelector':" APP("web") "}]}}",
      "n1,n2,n3,n4", NULL },
    { "anti-affinity on hostname", false, { { 1, "{'app':'web'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'affinity':" ANTI(HOST, APP("web")) "}}",
      "n1,n3,n4", "node(s) didn't match pod anti-affinity rules" },
    { "anti-affinity on zone", false, { { 1, "{'app':'web'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'affinity':" ANTI(ZONE, APP("web")) "}}",
      "n3,n4", "node(s) didn't match pod anti-affinity rules" },
    { "anti-affinity of a pod already there", false,
      { { 2, "{'app':'db'}", ANTI(HOST, APP("web")), NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{}}", "n1,n2,n4",
      "node(s) didn't satisfy existing pods anti-affinity rules" },
    { "anti-affinity of a pod already there, not matching", false,
      { { 2, "{'app':'db'}", ANTI(HOST, APP("cache")), NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{}}", "n1,n2,n3,n4", NULL },
    { "anti-affinity with namespaces listed", false,
      { { 0, "{'app':'web'}", NULL, "other" } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'affinity':{'podAntiAffinity':{"
      "'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'" HOST "',"
      "'namespaces':['other'],'labelSelector':" APP("web") "}]}}}}",
      "n2,n3,n4", "node(s) didn't match pod anti-affinity rules" },
    { "pod affinity to a zone", false, { { 2, "{'app':'db'}", NULL, NULL } }, 1,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'affinity':" AFFN(ZONE, APP("db")) "}}",
      "n3", "node(s) didn't match pod affinity rules" },
    { "pod affinity: the first pod matching itself goes anywhere", false, { { 0 } }, 0,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'affinity':" AFFN(ZONE, APP("web")) "}}",
      "n1,n2,n3,n4", NULL },
    { "pod affinity: nothing matches and not itself", false, { { 0 } }, 0,
      "{'metadata':{'labels':{'app':'web'}},'spec':{'affinity':" AFFN(ZONE, APP("db")) "}}",
      "", "node(s) didn't match pod affinity rules" },
};

static void test_topology(void **state)
{
    (void)state;
    ks_resnames *names;
    ks_resnames_create(&names);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const topo_case *c = &cases[i];
        static const char *const zones[] = { "a", "a", "b", "c" };
        json_object *keep = json_object_new_array();
        ks_node_info nodes[4];
        for (int k = 0; k < 4; k++) {
            char buf[512];
            snprintf(buf, sizeof(buf),
                     "{\"metadata\":{\"name\":\"n%d\",\"labels\":{\"kubernetes.io/hostname\":"
                     "\"n%d\"%s%s%s}}}", k + 1, k + 1,
                     k == 3 && c->n4_no_zone ? "" : ",\"topology.kubernetes.io/zone\":\"",
                     k == 3 && c->n4_no_zone ? "" : zones[k],
                     k == 3 && c->n4_no_zone ? "" : "\"");
            json_object *n = json_tokener_parse(buf);
            json_object_array_add(keep, n);
            char err[64];
            assert_int_equal(ks_node_info_init(n, names, &nodes[k], err, sizeof(err)), TLR_OK);
        }
        ks_topo *t;
        ks_topo_create(nodes, 4, &t);
        for (size_t b = 0; b < c->nbound; b++) {
            json_object *labels = J(c->bound[b].labels);
            json_object *aff = c->bound[b].affinity ? J(c->bound[b].affinity) : NULL;
            json_object_array_add(keep, labels);
            if (aff)
                json_object_array_add(keep, aff);
            ks_topo_add_pod(t, (size_t)c->bound[b].node, c->bound[b].ns ? c->bound[b].ns : "default",
                            labels, false, aff);
        }
        json_object *pod = J(c->pod);
        json_object_object_add(json_object_object_get(pod, "metadata"), "namespace",
                               json_object_new_string("default"));
        ks_topo_pod *tp;
        char err[256], got[64] = "";
        const char *first_reason = NULL;
        assert_int_equal(ks_topo_pod_prepare(t, pod, NULL, &tp, err, sizeof(err)), TLR_OK);
        for (size_t k = 0; k < 4; k++) {
            const char *r = ks_topo_pod_filter(tp, k);
            if (!r) {
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%sn%zu", *got ? "," : "",
                         k + 1);
            } else if (!first_reason) {
                first_reason = r;
            }
        }
        if (strcmp(got, c->want))
            fail_msg("%s: nodes got \"%s\", want \"%s\"", c->name, got, c->want);
        if ((c->reason == NULL) != (first_reason == NULL) ||
            (c->reason && strcmp(c->reason, first_reason)))
            fail_msg("%s: reason got \"%s\", want \"%s\"", c->name,
                     first_reason ? first_reason : "(none)", c->reason ? c->reason : "(none)");
        ks_topo_pod_free(tp);
        ks_topo_free(t);
        json_object_put(pod);
        json_object_put(keep);
    }
    ks_resnames_free(names);
}

/* A pod added mid-pass (just bound) counts for the next one. */
static void test_added_pod_counts(void **state)
{
    (void)state;
    ks_resnames *names;
    ks_resnames_create(&names);
    json_object *n1 = J("{'metadata':{'name':'n1','labels':{'kubernetes.io/hostname':'n1'}}}");
    json_object *n2 = J("{'metadata':{'name':'n2','labels':{'kubernetes.io/hostname':'n2'}}}");
    ks_node_info nodes[2];
    char err[128];
    assert_int_equal(ks_node_info_init(n1, names, &nodes[0], err, sizeof(err)), TLR_OK);
    assert_int_equal(ks_node_info_init(n2, names, &nodes[1], err, sizeof(err)), TLR_OK);
    ks_topo *t;
    ks_topo_create(nodes, 2, &t);
    json_object *pod = J("{'metadata':{'namespace':'default','labels':{'app':'web'}},'spec':{'affinity':"
                         ANTI(HOST, APP("web")) "}}");
    ks_topo_pod *tp;
    assert_int_equal(ks_topo_pod_prepare(t, pod, NULL, &tp, err, sizeof(err)), TLR_OK);
    assert_null(ks_topo_pod_filter(tp, 0));
    ks_topo_pod_free(tp);
    ks_topo_add_pod(t, 0, "default", tlr_json_obj(pod, "metadata.labels"), false, NULL);
    assert_int_equal(ks_topo_pod_prepare(t, pod, NULL, &tp, err, sizeof(err)), TLR_OK);
    const char *r = ks_topo_pod_filter(tp, 0);
    if (!r || strcmp(r, "node(s) didn't match pod anti-affinity rules"))
        fail_msg("n1 after a web pod landed: got %s", r ? r : "(placed)");
    assert_null(ks_topo_pod_filter(tp, 1));
    ks_topo_pod_free(tp);
    ks_topo_free(t);
    json_object_put(pod);
    json_object_put(n1);
    json_object_put(n2);
    ks_resnames_free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topology),
        cmocka_unit_test(test_added_pod_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
