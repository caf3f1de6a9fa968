/* sched_filter_test.c - effective requests, node filters, resource fit and
 * the FitError message, table-driven.  JSON in the tables uses ' for " to
 * stay readable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched_filter.h"
#include "tlr_err.h"

/* Parse JSON written with ' for ". */
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

typedef struct req_case {
    const char *name;
    const char *pod;
    int64_t cpu_m, mem, eph;
    const char *ext;       /* "nvidia.com/gpu" or NULL */
    int64_t ext_v;
    int rc;
} req_case;

#define CT(r) "{'name':'c','resources':" r "}"
static const req_case req_cases[] = {
    { "one container", "{'spec':{'containers':[" CT("{'requests':{'cpu':'500m','memory':'1Gi'}}") "]}}",
      500, 1073741824, 0, NULL, 0, TLR_OK },
    { "containers add up",
      "{'spec':{'containers':[" CT("{'requests':{'cpu':'1'}}") "," CT("{'requests':{'cpu':'250m','ephemeral-storage':'1G'}}") "]}}",
      1250, 0, 1000000000, NULL, 0, TLR_OK },
    { "limit stands in for a missing request",
      "{'spec':{'containers':[" CT("{'limits':{'cpu':'2','memory':'1Mi'},'requests':{'memory':'512Ki'}}") "]}}",
      2000, 524288, 0, NULL, 0, TLR_OK },
    { "a larger init container raises the total",
      "{'spec':{'containers':[" CT("{'requests':{'cpu':'1'}}") "],'initContainers':[" CT("{'requests':{'cpu':'3','memory':'10'}}") "]}}",
      3000, 10, 0, NULL, 0, TLR_OK },
    { "a smaller init container does not",
      "{'spec':{'containers':[" CT("{'requests':{'cpu':'2'}}") "],'initContainers':[" CT("{'requests':{'cpu':'1'}}") "]}}",
      2000, 0, 0, NULL, 0, TLR_OK },
    { "sidecars add up and run beside later init containers",
      "{'spec':{'containers':[" CT("{'requests':{'cpu':'1'}}") "],'initContainers':["
      "{'name':'s','restartPolicy':'Always','resources':{'requests':{'cpu':'500m'}}},"
      CT("{'requests':{'cpu':'2'}}") "]}}",
      2500, 0, 0, NULL, 0, TLR_OK },
    { "overhead is added",
      "{'spec':{'overhead':{'cpu':'100m','memory':'64Mi'},'containers':[" CT("{'requests':{'cpu':'1'}}") "]}}",
      1100, 67108864, 0, NULL, 0, TLR_OK },
    { "extended resources",
      "{'spec':{'containers':[" CT("{'limits':{'nvidia.com/gpu':'2'}}") "," CT("{'requests':{'nvidia.com/gpu':1}}") "]}}",
      0, 0, 0, "nvidia.com/gpu", 3, TLR_OK },
    { "no containers", "{'spec':{}}", 0, 0, 0, NULL, 0, TLR_OK },
    { "malformed quantity", "{'spec':{'containers':[" CT("{'requests':{'cpu':'1x'}}") "]}}",
      0, 0, 0, NULL, 0, TLR_E_PARSE },
    { "negative quantity", "{'spec':{'containers':[" CT("{'requests':{'memory':'-1'}}") "]}}",
      0, 0, 0, NULL, 0, TLR_E_RANGE },
};

static void test_pod_requests(void **state)
{
    (void)state;
    ks_resnames *names;
    ks_resnames_create(&names);
    for (size_t i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
        const req_case *c = &req_cases[i];
        json_object *pod = J(c->pod);
        ks_res r;
        char err[256] = "";
        int rc = ks_pod_requests(pod, names, &r, err, sizeof(err));
        if (rc != c->rc)
            fail_msg("%s: rc got %d want %d (%s)", c->name, rc, c->rc, err);
        if (rc == TLR_OK) {
            int64_t ext = 0;
            for (int id = 0; c->ext && ks_resnames_name(names, id); id++)
                if (!strcmp(ks_resnames_name(names, id), c->ext))
                    ext = ks_res_ext(&r, id);
            if (r.cpu_m != c->cpu_m || r.mem != c->mem || r.eph != c->eph || ext != c->ext_v ||
                r.pods != 1)
                fail_msg("%s: got cpu %lld mem %lld eph %lld ext %lld pods %lld, want %lld %lld "
                         "%lld %lld 1", c->name, (long long)r.cpu_m, (long long)r.mem,
                         (long long)r.eph, (long long)ext, (long long)r.pods,
                         (long long)c->cpu_m, (long long)c->mem, (long long)c->eph,
                         (long long)c->ext_v);
        } else if (!strstr(err, "resource")) {
            fail_msg("%s: error %s does not name the resource", c->name, err);
        }
        json_object_put(pod);
    }
    ks_resnames_free(names);
}

/* ------------------------------------------------------------------ */

#define NODE(extra_meta, spec, ready)                                                      \
    "{'metadata':{'name':'n1','labels':{'zone':'a','size':'8','kubernetes.io/hostname':'n1'}" \
    extra_meta "},'spec':" spec ",'status':{'allocatable':{'cpu':'4','memory':'8Gi','pods':'10'},"  \
    "'conditions':[{'type':'Ready','status':'" ready "'}]}}"

typedef struct filter_case {
    const char *name;
    const char *node;
    const char *pod_spec;
    const char *want;     /* NULL: placed */
} filter_case;

#define TAINT(k, v, e) "{'taints':[{'key':'" k "','value':'" v "','effect':'" e "'}]}"
#define REQ(terms) "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':" terms "}}}"
#define EXPR(k, op, vals) "{'matchExpressions':[{'key':'" k "','operator':'" op "','values':" vals "}]}"

static const filter_case filter_cases[] = {
    { "plain node", NODE("", "{}", "True"), "{}", NULL },
    { "cordoned", NODE("", "{'unschedulable':true}", "True"), "{}", "node(s) were unschedulable" },
    { "cordoned, tolerated", NODE("", "{'unschedulable':true}", "True"),
      "{'tolerations':[{'key':'node.kubernetes.io/unschedulable','operator':'Exists','effect':'NoSchedule'}]}", NULL },
    { "not ready", NODE("", "{}", "False"), "{}",
      "node(s) had untolerated taint {node.kubernetes.io/not-ready: }" },
    { "not ready, tolerated", NODE("", "{}", "Unknown"),
      "{'tolerations':[{'operator':'Exists'}]}", NULL },
    { "NoSchedule taint", NODE("", TAINT("gpu", "yes", "NoSchedule"), "True"), "{}",
      "node(s) had untolerated taint {gpu: yes}" },
    { "NoExecute taint", NODE("", TAINT("gpu", "yes", "NoExecute"), "True"), "{}",
      "node(s) had untolerated taint {gpu: yes}" },
    { "PreferNoSchedule is ignored", NODE("", TAINT("gpu", "yes", "PreferNoSchedule"), "True"),
      "{}", NULL },
    { "Equal toleration", NODE("", TAINT("gpu", "yes", "NoSchedule"), "True"),
      "{'tolerations':[{'key':'gpu','operator':'Equal','value':'yes','effect':'NoSchedule'}]}", NULL },
    { "Equal toleration, other value", NODE("", TAINT("gpu", "yes", "NoSchedule"), "True"),
      "{'tolerations':[{'key':'gpu','value':'no'}]}", "node(s) had untolerated taint {gpu: yes}" },
    { "Exists toleration, any effect", NODE("", TAINT("gpu", "yes", "NoExecute"), "True"),
      "{'tolerations':[{'key':'gpu','operator':'Exists'}]}", NULL },
    { "toleration for another effect", NODE("", TAINT("gpu", "yes", "NoExecute"), "True"),
      "{'tolerations':[{'key':'gpu','operator':'Exists','effect':'NoSchedule'}]}",
      "node(s) had untolerated taint {gpu: yes}" },
    { "nodeSelector match", NODE("", "{}", "True"), "{'nodeSelector':{'zone':'a'}}", NULL },
    { "nodeSelector mismatch", NODE("", "{}", "True"), "{'nodeSelector':{'zone':'b'}}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "nodeSelector missing label", NODE("", "{}", "True"), "{'nodeSelector':{'gpu':'x'}}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "In", NODE("", "{}", "True"), "{" REQ("[" EXPR("zone", "In", "['a','b']") "]") "}", NULL },
    { "In, no", NODE("", "{}", "True"), "{" REQ("[" EXPR("zone", "In", "['b']") "]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "NotIn", NODE("", "{}", "True"), "{" REQ("[" EXPR("zone", "NotIn", "['b']") "]") "}", NULL },
    { "NotIn, no", NODE("", "{}", "True"), "{" REQ("[" EXPR("zone", "NotIn", "['a']") "]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "Exists", NODE("", "{}", "True"), "{" REQ("[" EXPR("size", "Exists", "[]") "]") "}", NULL },
    { "DoesNotExist, no", NODE("", "{}", "True"),
      "{" REQ("[" EXPR("size", "DoesNotExist", "[]") "]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "Gt", NODE("", "{}", "True"), "{" REQ("[" EXPR("size", "Gt", "['4']") "]") "}", NULL },
    { "Gt, no", NODE("", "{}", "True"), "{" REQ("[" EXPR("size", "Gt", "['8']") "]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "Lt", NODE("", "{}", "True"), "{" REQ("[" EXPR("size", "Lt", "['16']") "]") "}", NULL },
    { "Lt on a non-number", NODE("", "{}", "True"), "{" REQ("[" EXPR("zone", "Lt", "['16']") "]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "terms are ORed", NODE("", "{}", "True"),
      "{" REQ("[" EXPR("zone", "In", "['x']") "," EXPR("zone", "In", "['a']") "]") "}", NULL },
    { "empty term list matches nothing", NODE("", "{}", "True"), "{" REQ("[]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "empty term matches nothing", NODE("", "{}", "True"), "{" REQ("[{}]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "matchFields metadata.name", NODE("", "{}", "True"),
      "{" REQ("[{'matchFields':[{'key':'metadata.name','operator':'In','values':['n1']}]}]") "}", NULL },
    { "matchFields other node", NODE("", "{}", "True"),
      "{" REQ("[{'matchFields':[{'key':'metadata.name','operator':'In','values':['n2']}]}]") "}",
      "node(s) didn't match Pod's node affinity/selector" },
    { "cordon is checked before taints", NODE("", "{'unschedulable':true,'taints':[{'key':'a','effect':'NoSchedule'}]}", "True"),
      "{}", "node(s) were unschedulable" },
    { "taints are checked before affinity", NODE("", TAINT("gpu", "", "NoSchedule"), "True"),
      "{'nodeSelector':{'zone':'b'}}", "node(s) had untolerated taint {gpu: }" },
};

static void test_filter_node(void **state)
{
    (void)state;
    ks_resnames *names;
    ks_resnames_create(&names);
    for (size_t i = 0; i < sizeof(filter_cases) / sizeof(filter_cases[0]); i++) {
        const filter_case *c = &filter_cases[i];
        json_object *node = J(c->node), *pod = json_object_new_object();
        json_object_object_add(pod, "spec", J(c->pod_spec));
        ks_node_info n;
        char err[128], buf[256];
        assert_int_equal(ks_node_info_init(node, names, &n, err, sizeof(err)), TLR_OK);
        const char *got = ks_filter_node(pod, &n, buf, sizeof(buf));
        if ((got == NULL) != (c->want == NULL) || (got && strcmp(got, c->want)))
            fail_msg("%s: got %s, want %s", c->name, got ? got : "(placed)",
                     c->want ? c->want : "(placed)");
        json_object_put(node);
        json_object_put(pod);
    }
    ks_resnames_free(names);
}

/* ------------------------------------------------------------------ */

typedef struct fit_case {
    const char *name;
    const char *alloc;      /* node allocatable */
    const char *used;       /* resources of pods already there */
    int64_t npods;
    const char *req;        /* the pod's requests */
    const char *want;       /* reasons joined by "; ", "" = fits */
} fit_case;

static const fit_case fit_cases[] = {
    { "fits", "{'cpu':'2','memory':'4Gi','pods':'10'}", "{'cpu':'1'}", 1, "{'cpu':'1'}", "" },
    { "exactly full fits", "{'cpu':'2','pods':'2'}", "{'cpu':'1500m'}", 1, "{'cpu':'500m'}", "" },
    { "cpu", "{'cpu':'2','memory':'4Gi','pods':'10'}", "{'cpu':'1500m'}", 1, "{'cpu':'1'}",
      "Insufficient cpu" },
    { "memory and cpu", "{'cpu':'1','memory':'1Gi','pods':'10'}", "{}", 0,
      "{'cpu':'2','memory':'2Gi'}", "Insufficient cpu; Insufficient memory" },
    { "pods count", "{'cpu':'8','pods':'2'}", "{}", 2, "{}", "Too many pods" },
    { "no pods allocatable", "{'cpu':'8'}", "{}", 0, "{'cpu':'1'}", "Too many pods" },
    { "zero request fits a full node", "{'cpu':'1','pods':'5'}", "{'cpu':'1'}", 1, "{}", "" },
    { "gpu", "{'cpu':'8','pods':'10','nvidia.com/gpu':'1'}", "{'nvidia.com/gpu':'1'}", 1,
      "{'nvidia.com/gpu':'1'}", "Insufficient nvidia.com/gpu" },
    { "gpu the node lacks", "{'cpu':'8','pods':'10'}", "{}", 0, "{'nvidia.com/gpu':'1'}",
      "Insufficient nvidia.com/gpu" },
    { "ephemeral storage", "{'ephemeral-storage':'10Gi','pods':'10'}", "{}", 0,
      "{'ephemeral-storage':'20Gi'}", "Insufficient ephemeral-storage" },
    { "unqualified names are not checked", "{'pods':'10'}", "{}", 0, "{'foo':'5'}", "" },
};

static void test_filter_fit(void **state)
{
    (void)state;
    ks_resnames *names;
    ks_resnames_create(&names);
    for (size_t i = 0; i < sizeof(fit_cases) / sizeof(fit_cases[0]); i++) {
        const fit_case *c = &fit_cases[i];
        json_object *alloc = J(c->alloc), *used = J(c->used), *req = J(c->req);
        ks_node_info n = { .name = "n1" };
        ks_res r;
        char err[128], scratch[256], got[512] = "";
        assert_int_equal(ks_res_from_list(alloc, names, &n.alloc, err, sizeof(err)), TLR_OK);
        assert_int_equal(ks_res_from_list(used, names, &n.used, err, sizeof(err)), TLR_OK);
        assert_int_equal(ks_res_from_list(req, names, &r, err, sizeof(err)), TLR_OK);
        n.npods = c->npods;
        r.pods = 1;
        const char *reasons[8];
        int k = ks_filter_fit(&r, &n, names, reasons, 8, scratch, sizeof(scratch));
        for (int j = 0; j < k; j++) {
            strcat(got, j ? "; " : "");
            strcat(got, reasons[j]);
        }
        if (strcmp(got, c->want))
            fail_msg("%s: got \"%s\", want \"%s\"", c->name, got, c->want);
        json_object_put(alloc);
        json_object_put(used);
        json_object_put(req);
    }
    ks_resnames_free(names);
}

static void test_score_prefers_emptier_node(void **state)
{
    (void)state;
    ks_node_info a = { .alloc = { .cpu_m = 4000, .mem = 8 << 20 } };
    ks_node_info b = a;
    b.used.cpu_m = 3000;
    ks_res r = { .cpu_m = 500 };
    int sa = ks_score_least_allocated(&r, &a), sb = ks_score_least_allocated(&r, &b);
    if (!(sa > sb))
        fail_msg("empty node scored %d, busy node %d: want empty > busy", sa, sb);
}

/* kube-scheduler's default profile adds NodeResourcesBalancedAllocation:
 * of two nodes equally free, the one whose cpu and memory in use stay
 * closer wins. */
static void test_score_balanced(void **state)
{
    (void)state;
    ks_node_info cpu_heavy = { .alloc = { .cpu_m = 4000, .mem = 8 << 20 }, .used = { .cpu_m = 2000 } };
    ks_node_info mem_heavy = { .alloc = { .cpu_m = 4000, .mem = 8 << 20 }, .used = { .mem = 4 << 20 } };
    ks_res memory_pod = { .mem = 2 << 20 };
    /* 50 % cpu + 25 % memory against 0 % cpu + 75 % memory: the same free
     * share (LeastAllocated 62 both), balance 87 against 62 */
    assert_int_equal(ks_score_least_allocated(&memory_pod, &cpu_heavy),
                     ks_score_least_allocated(&memory_pod, &mem_heavy));
    assert_int_equal(ks_score_balanced(&memory_pod, &cpu_heavy), 87);
    assert_int_equal(ks_score_balanced(&memory_pod, &mem_heavy), 62);
    assert_true(ks_score_node(&memory_pod, &cpu_heavy) > ks_score_node(&memory_pod, &mem_heavy));
}

static void test_fitmsg(void **state)
{
    (void)state;
    ks_fitmsg *m;
    ks_fitmsg_create(&m);
    char buf[512];
    ks_fitmsg_add(m, "node(s) had untolerated taint {a: b}");
    ks_fitmsg_add(m, "Insufficient cpu");
    ks_fitmsg_add(m, "node(s) had untolerated taint {a: b}");
    ks_fitmsg_format(m, 3, buf, sizeof(buf));
    const char *want = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had "
                       "untolerated taint {a: b}.";
    if (strcmp(buf, want))
        fail_msg("got \"%s\", want \"%s\"", buf, want);
    /* entries sort as strings, counts included, as kube-scheduler does */
    ks_fitmsg_reset(m);
    for (int i = 0; i < 10; i++)
        ks_fitmsg_add(m, "Insufficient memory");
    for (int i = 0; i < 2; i++)
        ks_fitmsg_add(m, "Insufficient cpu");
    ks_fitmsg_format(m, 12, buf, sizeof(buf));
    want = "0/12 nodes are available: 10 Insufficient memory, 2 Insufficient cpu.";
    if (strcmp(buf, want))
        fail_msg("got \"%s\", want \"%s\"", buf, want);
    ks_fitmsg_reset(m);
    ks_fitmsg_format(m, 0, buf, sizeof(buf));
    if (strcmp(buf, "no nodes available to schedule pods"))
        fail_msg("got \"%s\" for no nodes", buf);
    ks_fitmsg_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_requests),
        cmocka_unit_test(test_filter_node),
        cmocka_unit_test(test_filter_fit),
        cmocka_unit_test(test_score_prefers_emptier_node),
        cmocka_unit_test(test_score_balanced),
        cmocka_unit_test(test_fitmsg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
