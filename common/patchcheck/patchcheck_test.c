/* patchcheck_test.c - patch-check's per-node decisions, table-driven:
 * state, expected AMI and blockers for nodes built from real Node, Pod
 * and PDB JSON; then the summary and the compliance verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"
#include "tlr_patchcheck.h"

#define NOW 1700000000000LL

static void *conv(const char *kind, const char *json)
{
    json_object *o = NULL;
    char err[512];
    void *m = NULL;
    assert_int_equal(tlr_json_parse(json, strlen(json), 1 << 20, &o, err, sizeof(err)), TLR_OK);
    int rc = !strcmp(kind, "Node") ? tlr_kubeobj_node(o, NULL, (Tailor__V1__Node **)&m, err, sizeof(err))
             : !strcmp(kind, "Pod") ? tlr_kubeobj_pod(o, NULL, (Tailor__V1__Pod **)&m, err, sizeof(err))
                                    : tlr_kubeobj_pdb(o, NULL, (Tailor__V1__PodDisruptionBudget **)&m,
                                                      err, sizeof(err));
    if (rc != TLR_OK)
        print_error("%s: %s\n", kind, err);
    assert_int_equal(rc, TLR_OK);
    json_object_put(o);
    return m;
}

#define NODE(ann, cap)                                                                          \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"creationTimestamp\":" \
    "\"2023-11-12T22:13:20Z\",\"labels\":{\"karpenter.sh/nodepool\":\"general\","                 \
    "\"kubernetes.io/arch\":\"amd64\"},\"annotations\":{" ann "}},\"spec\":{\"providerID\":"     \
    "\"aws:///us-east-1a/i-0123456789abcdef0\"},\"status\":{\"capacity\":{\"cpu\":\"8\"" cap "}}}"
#define POD(name, ann)                                                                          \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":"  \
    "\"shop\",\"uid\":\"u-" name "\",\"labels\":{\"app\":\"" name "\"},\"annotations\":{" ann     \
    "}},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},"         \
    "\"status\":{\"phase\":\"Running\"}}"
#define PDB(name, app, allowed)                                                                 \
    "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\""  \
    name "\",\"namespace\":\"shop\"},\"spec\":{\"maxUnavailable\":1,\"selector\":{\"matchLabels\"" \
    ":{\"app\":\"" app "\"}}},\"status\":{\"disruptionsAllowed\":" #allowed "}}"

typedef struct patch_case {
    const char *name;
    const char *node_ann, *node_cap;
    const char *class_name;      /* NULL: unmanaged */
    const char *ami;             /* NULL: unknown */
    bool resolved;
    const char *pool_hash, *node_hash;
    const char *pod_ann;         /* annotations of pod "web" */
    int web_allowed;             /* disruptionsAllowed of PDB web; -1 none */
    bool second_pdb;             /* another PDB also selects web */
    tlr_pchk_state want_state;
    const char *want_expected;
    const char *want_reason;     /* substring */
    const char *want_blockers;   /* "|"-joined, exact */
} patch_case;

static const patch_case cases[] = {
    { "current, unblocked", "", "", "general", "ami-0000000000000a001", true, NULL, NULL, "", 1,
      false, TLR_PCHK_CURRENT, "ami-0000000000000a001", "", "" },
    { "drifted to a newer AMI", "", "", "general", "ami-00000000000000old", true, NULL, NULL, "",
      1, false, TLR_PCHK_DRIFTED, "ami-0000000000000a001",
      "runs ami-00000000000000old; EC2NodeClass general now resolves to ami-0000000000000a001 "
      "(al2023-std)", "" },
    { "GPU node expects the nvidia variant", "", ",\"nvidia.com/gpu\":\"1\"", "general",
      "ami-0000000000000a001", true, NULL, NULL, "", 1, false, TLR_PCHK_CURRENT,
      "ami-0000000000000a003", "", "" },
    { "NodePool hash changed", "", "", "general", "ami-0000000000000a001", true, "111", "222", "",
      1, false, TLR_PCHK_DRIFTED, "ami-0000000000000a001", "NodePool general changed", "" },
    { "AMI unknown", "", "", "general", NULL, true, NULL, NULL, "", 1, false, TLR_PCHK_UNKNOWN,
      "ami-0000000000000a001", "its AMI is unknown: instance not found", "" },
    { "class unresolved", "", "", "general", "ami-0000000000000a001", false, NULL, NULL, "", 1,
      false, TLR_PCHK_UNKNOWN, "", "EC2NodeClass general: no SSM parameter", "" },
    { "unmanaged", "", "", NULL, "ami-0000000000000a001", true, NULL, NULL, "", 1, false,
      TLR_PCHK_UNMANAGED, "ami-0000000000000a001", "no NodePool", "" },
    { "node do-not-disrupt", "\"karpenter.sh/do-not-disrupt\":\"true\"", "", "general",
      "ami-00000000000000old", true, NULL, NULL, "", 1, false, TLR_PCHK_DRIFTED,
      "ami-0000000000000a001", "runs", "node has karpenter.sh/do-not-disrupt" },
    { "pod do-not-disrupt (a duration counts)", "", "", "general", "ami-0000000000000a001", true,
      NULL, NULL, "\"karpenter.sh/do-not-disrupt\":\"30m\"", 1, false, TLR_PCHK_CURRENT,
      "ami-0000000000000a001", "", "pod shop/web has karpenter.sh/do-not-disrupt" },
    { "PDB with 0 disruptions allowed", "", "", "general", "ami-0000000000000a001", true, NULL,
      NULL, "", 0, false, TLR_PCHK_CURRENT, "ami-0000000000000a001", "",
      "pod shop/web: PDB web allows 0 disruptions now" },
    { "pod under two PDBs", "", "", "general", "ami-0000000000000a001", true, NULL, NULL, "", 1,
      true, TLR_PCHK_CURRENT, "ami-0000000000000a001", "",
      "pod shop/web is selected by 2 PDBs (web, web-too): the Eviction API refuses it" },
    { "do-not-disrupt false does not block", "\"karpenter.sh/do-not-disrupt\":\"false\"", "",
      "general", "ami-0000000000000a001", true, NULL, NULL, "", -1, false, TLR_PCHK_CURRENT,
      "ami-0000000000000a001", "", "" },
};

static void test_decide(void **state)
{
    (void)state;
    tlr_ami amis_v[] = {
        { "ami-0000000000000a001", "al2023-std", "amd64", "standard", "alias", 1000, 0 },
        { "ami-0000000000000a003", "al2023-nvidia", "amd64", "nvidia", "alias", 1000, 0 },
    };
    tlr_amis amis = { amis_v, 2 };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const patch_case *c = &cases[i];
        char nj[2048], pj[1024];
        snprintf(nj, sizeof(nj), NODE("%s", "%s"), c->node_ann, c->node_cap);
        snprintf(pj, sizeof(pj), POD("web", "%s"), c->pod_ann);
        Tailor__V1__Node *node = conv("Node", nj);
        Tailor__V1__Pod *pods[2] = { conv("Pod", pj), conv("Pod", POD("api", "")) };
        Tailor__V1__PodDisruptionBudget *pdbs[3];
        size_t np = 0;
        if (c->web_allowed == 0)
            pdbs[np++] = conv("PDB", PDB("web", "web", 0));
        else if (c->web_allowed > 0)
            pdbs[np++] = conv("PDB", PDB("web", "web", 1));
        if (c->second_pdb)
            pdbs[np++] = conv("PDB", PDB("web-too", "web", 1));
        pdbs[np++] = conv("PDB", PDB("api", "api", 1));
        tlr_pchk_in in = { .node = node, .nodeclass = c->class_name, .instance_id = "i-0123",
                           .ami = c->ami, .ami_error = "instance not found",
                           .resolved = c->resolved ? &amis : NULL,
                           .resolve_error = "no SSM parameter found",
                           .pool_hash = c->pool_hash, .node_pool_hash = c->node_hash,
                           .pods = pods, .npods = 2, .pdbs = pdbs, .npdbs = np, .now_ms = NOW };
        tlr_pchk_row r;
        tlr_pchk_decide(&in, &r);
        char got[1024] = "";
        for (size_t k = 0; k < r.nblockers; k++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? "|" : "",
                     r.blockers[k]);
        if (r.state != c->want_state || strcmp(r.expected_ami, c->want_expected) ||
            !strstr(r.reason, c->want_reason) || strcmp(got, c->want_blockers) ||
            r.age_ms != NOW - 1699827200000LL) {
            print_error("case %s: got %s expected=%s reason=\"%s\" blockers=\"%s\" age %lld\n",
                        c->name, tlr_pchk_state_name(r.state), r.expected_ami, r.reason, got,
                        (long long)r.age_ms);
            failed++;
        }
        tlr_pchk_row_free(&r);
        tlr_kubeobj_free(node);
        tlr_kubeobj_free(pods[0]);
        tlr_kubeobj_free(pods[1]);
        for (size_t k = 0; k < np; k++)
            tlr_kubeobj_free(pdbs[k]);
    }
    assert_int_equal(failed, 0);
}

static void test_summary(void **state)
{
    (void)state;
    tlr_pchk_row rows[5] = { 0 };
    tlr_pchk_state st[5] = { TLR_PCHK_CURRENT, TLR_PCHK_CURRENT, TLR_PCHK_DRIFTED,
                             TLR_PCHK_UNKNOWN, TLR_PCHK_UNMANAGED };
    char *b = "pod x has karpenter.sh/do-not-disrupt";
    for (int i = 0; i < 5; i++) {
        rows[i].state = st[i];
        rows[i].node = rows[i].nodepool = rows[i].nodeclass = rows[i].instance_id = "";
        rows[i].ami = rows[i].expected_ami = rows[i].reason = "";
    }
    rows[2].blockers = &b;
    rows[2].nblockers = 1;
    tlr_pchk_summary s;
    tlr_pchk_summarize(rows, 5, &s);
    /* 2 current of 4 judged (unmanaged left out) */
    assert_int_equal(s.current, 2);
    assert_int_equal(s.drifted_blocked, 1);
    assert_true(s.compliance > 49.99 && s.compliance < 50.01);
    tlr_buf out;
    tlr_buf_init(&out, 1 << 20);
    tlr_pchk_text(rows, 5, &s, 95, &out);
    assert_non_null(strstr(tlr_buf_str(&out), "Compliance 50.0% (minimum 95.0%): NOT COMPLIANT"));
    tlr_buf_reset(&out);
    tlr_pchk_text(rows, 5, &s, 50, &out);
    assert_non_null(strstr(tlr_buf_str(&out), "(minimum 50.0%): compliant"));
    tlr_buf_reset(&out);
    tlr_pchk_json(rows, 5, &s, 95, &out);
    json_object *j = NULL;
    assert_int_equal(tlr_json_parse(out.data, out.len, out.len, &j, NULL, 0), TLR_OK);
    bool ok = true;
    assert_int_equal(tlr_json_bool(j, "compliant", &ok), TLR_OK);
    assert_false(ok);
    assert_string_equal(tlr_json_str(j, "nodes.2.state"), "drifted");
    assert_string_equal(tlr_json_str(j, "nodes.2.blocked_by.0"), b);
    json_object_put(j);
    tlr_buf_free(&out);
    /* nothing to judge: compliant */
    tlr_pchk_summarize(rows + 4, 1, &s);
    assert_true(s.compliance >= 100.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
