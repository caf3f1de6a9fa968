/* pdbcheck_test.c - the PDB rules, table-driven: each case is a set of
 * objects (YAML, as kubectl would read them) and the exact findings
 * wanted ("rule namespace/Kind/name"), so a rule that fires too often
 * fails as surely as one that never fires; then the admission decision
 * on real AdmissionReview documents. */
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
#include "tlr_pdbcheck.h"
#include "tlr_yaml.h"

static tlr_pdbc *load(tlr_pdbc_mode mode, const char *yaml)
{
    json_object *docs = NULL;
    char err[512];
    tlr_pdbc *c = NULL;
    if (tlr_yaml_parse(yaml, strlen(yaml), NULL, &docs, err, sizeof(err)) != TLR_OK) {
        print_error("yaml: %s\n", err);
        return NULL;
    }
    tlr_pdbc_create(mode, &c);
    for (size_t i = 0; i < json_object_array_length(docs); i++) {
        int rc = tlr_pdbc_add(c, NULL, json_object_array_get_idx(docs, i), err, sizeof(err));
        if (rc != TLR_OK && rc != TLR_E_NOTFOUND) {
            print_error("add #%zu: %s\n", i, err);
            tlr_pdbc_free(c);
            c = NULL;
            break;
        }
    }
    json_object_put(docs);
    return c;
}

#define DEPLOY(name, n, app)                                                               \
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " name ", namespace: shop}\n" \
    "spec:\n  replicas: " #n "\n  selector: {matchLabels: {app: " app "}}\n  template:\n"       \
    "    metadata: {labels: {app: " app ", tier: web}}\n    spec: {containers: [{name: c, image: x}]}\n"
#define PDB(name, sel, field, val)                                                             \
    "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: " name             \
    ", namespace: shop}\nspec:\n  " field ": " val "\n  selector: {matchLabels: " sel "}\n"

typedef struct rule_case {
    const char *name;
    tlr_pdbc_mode mode;
    const char *objects;
    const char *want;     /* findings, one "rule ns/Kind/name" per line, in order */
} rule_case;

static const rule_case rule_cases[] = {
    { "healthy: 3 replicas, maxUnavailable 1", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "maxUnavailable", "1"), "" },
    { "maxUnavailable 0 blocks", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "maxUnavailable", "0"),
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "maxUnavailable 0% blocks", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "maxUnavailable", "\"0%\""),
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "maxUnavailable 10% of 3 rounds up to 1: fine", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "maxUnavailable", "\"10%\""), "" },
    { "minAvailable = replicas blocks", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "minAvailable", "3"),
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "minAvailable above replicas blocks", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 2, "web") PDB("web", "{app: web}", "minAvailable", "5"),
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "minAvailable 100% blocks", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 4, "web") PDB("web", "{app: web}", "minAvailable", "\"100%\""),
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "minAvailable 90% of 3 rounds up to 3: blocks", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "minAvailable", "\"90%\""),
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "minAvailable 2 of 3: fine", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "minAvailable", "2"), "" },
    { "selects no pods (label typo)", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: wbe}", "maxUnavailable", "1"),
      "selects-no-pods shop/PodDisruptionBudget/web\n" },
    { "another namespace's pods do not count", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web")
      "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: "
      "other}\nspec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}\n",
      "selects-no-pods other/PodDisruptionBudget/web\n" },
    { "two PDBs on one workload", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web") PDB("web", "{app: web}", "maxUnavailable", "1")
      PDB("tier", "{tier: web}", "maxUnavailable", "1"),
      "multiple-pdbs shop/Deployment/web\n" },
    { "single replica without PDB", TLR_PDBC_MANIFESTS, DEPLOY("cron", 1, "cron"),
      "single-replica-unprotected shop/Deployment/cron\n" },
    { "single replica with a PDB minAvailable 1: blocking, not unprotected", TLR_PDBC_MANIFESTS,
      DEPLOY("db", 1, "db") PDB("db", "{app: db}", "minAvailable", "1"),
      "blocks-eviction shop/PodDisruptionBudget/db\n" },
    { "zero replicas: not a single-replica workload; its PDB selects nothing",
      TLR_PDBC_MANIFESTS, DEPLOY("paused", 0, "paused") PDB("paused", "{app: paused}", "maxUnavailable", "1"),
      "selects-no-pods shop/PodDisruptionBudget/paused\n" },
    { "matchExpressions In", TLR_PDBC_MANIFESTS,
      DEPLOY("web", 3, "web")
      "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: "
      "shop}\nspec:\n  minAvailable: 3\n  selector:\n    matchExpressions:\n"
      "    - {key: app, operator: In, values: [web, api]}\n",
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "maxUnavailable 0 on nothing still blocks what it will select", TLR_PDBC_MANIFESTS,
      PDB("future", "{app: future}", "maxUnavailable", "0"),
      "blocks-eviction shop/PodDisruptionBudget/future\n"
      "selects-no-pods shop/PodDisruptionBudget/future\n" },
    /* live: pods with owners; the ReplicaSet resolves to its Deployment */
    { "live: a Deployment's pods through their ReplicaSet", TLR_PDBC_LIVE,
      DEPLOY("web", 2, "web")
      "---\napiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web-7d9\n  namespace: shop\n"
      "  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: u1, "
      "controller: true}]\nspec:\n  replicas: 2\n  template: {metadata: {labels: {app: web}}}\n"
      "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web-7d9-a\n  namespace: shop\n"
      "  labels: {app: web, pod-template-hash: 7d9}\n  ownerReferences: [{apiVersion: apps/v1, "
      "kind: ReplicaSet, name: web-7d9, uid: u2, controller: true}]\nspec: {containers: []}\n"
      "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web-7d9-b\n  namespace: shop\n"
      "  labels: {app: web, pod-template-hash: 7d9}\n  ownerReferences: [{apiVersion: apps/v1, "
      "kind: ReplicaSet, name: web-7d9, uid: u2, controller: true}]\nspec: {containers: []}\n"
      PDB("web", "{app: web}", "minAvailable", "2"),
      "blocks-eviction shop/PodDisruptionBudget/web\n" },
    { "live: finished pods do not count", TLR_PDBC_LIVE,
      "---\napiVersion: v1\nkind: Pod\nmetadata: {name: done, namespace: shop, labels: {app: "
      "job}}\nspec: {containers: []}\nstatus: {phase: Succeeded}\n"
      PDB("job", "{app: job}", "maxUnavailable", "1"),
      "selects-no-pods shop/PodDisruptionBudget/job\n" },
    { "live: a bare pod under two PDBs", TLR_PDBC_LIVE,
      "---\napiVersion: v1\nkind: Pod\nmetadata: {name: solo, namespace: shop, labels: {app: s, "
      "tier: web}}\nspec: {containers: []}\n"
      PDB("a", "{app: s}", "maxUnavailable", "1") PDB("b", "{tier: web}", "maxUnavailable", "1"),
      "multiple-pdbs shop/Pod/solo\n" },
};

static void test_rules(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(rule_cases) / sizeof(rule_cases[0]); i++) {
        const rule_case *rc = &rule_cases[i];
        tlr_pdbc *c = load(rc->mode, rc->objects);
        if (!c) {
            print_error("case %s: objects did not load\n", rc->name);
            failed++;
            continue;
        }
        tlr_pdbc_findings f = { 0 };
        assert_int_equal(tlr_pdbc_run(c, &f), TLR_OK);
        char got[2048] = "";
        for (size_t k = 0; k < f.n; k++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s %s/%s/%s\n",
                     tlr_pdbc_rule_name(f.v[k].rule), f.v[k].ns, f.v[k].kind, f.v[k].name);
        if (strcmp(got, rc->want)) {
            print_error("case %s:\n got:\n%s want:\n%s", rc->name, got, rc->want);
            failed++;
        }
        for (size_t k = 0; k < f.n; k++)
            if (!f.v[k].message || !f.v[k].message[0] ||
                (f.v[k].npdbs == 0 && f.v[k].rule != TLR_PDBC_SINGLE_REPLICA)) {
                print_error("case %s: finding %zu lacks a message or its PDBs\n", rc->name, k);
                failed++;
            }
        tlr_pdbc_findings_free(&f);
        tlr_pdbc_free(c);
    }
    assert_int_equal(failed, 0);
}

static void test_messages(void **state)
{
    (void)state;
    tlr_pdbc *c = load(TLR_PDBC_MANIFESTS,
                       DEPLOY("web", 3, "web") PDB("web", "{app: web}", "minAvailable", "3")
                       PDB("tier", "{tier: web}", "maxUnavailable", "1"));
    assert_non_null(c);
    tlr_pdbc_findings f = { 0 };
    assert_int_equal(tlr_pdbc_run(c, &f), TLR_OK);
    assert_int_equal(f.n, 2);
    assert_non_null(strstr(f.v[0].message, "minAvailable 3 needs all 3 pods"));
    assert_non_null(strstr(f.v[1].message, "3 pods are selected by 2 PDBs (tier, web)"));
    assert_int_equal(f.v[1].pods, 3);
    tlr_buf b;
    tlr_buf_init(&b, 1 << 20);
    assert_int_equal(tlr_pdbc_findings_json(c, &f, &b), TLR_OK);
    json_object *j = NULL;
    assert_int_equal(tlr_json_parse(b.data, b.len, b.len, &j, NULL, 0), TLR_OK);
    int64_t n = 0;
    assert_int_equal(tlr_json_int(j, "errors", &n), TLR_OK);
    assert_int_equal(n, 2);
    assert_string_equal(tlr_json_str(j, "findings.0.rule"), "blocks-eviction");
    assert_string_equal(tlr_json_str(j, "findings.1.pdbs.1"), "web");
    json_object_put(j);
    tlr_buf_reset(&b);
    assert_int_equal(tlr_pdbc_findings_text(c, &f, &b), TLR_OK);
    assert_non_null(strstr(tlr_buf_str(&b), "2 PDBs, 3 pods, 1 workloads: 2 errors, 0 warnings"));
    tlr_buf_free(&b);
    tlr_pdbc_findings_free(&f);
    tlr_pdbc_free(c);
}

/* ---- admission --------------------------------------------------------------- */

#define REVIEW(op, spec)                                                                      \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"      \
    "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"kind\":{\"group\":\"policy\","         \
    "\"version\":\"v1\",\"kind\":\"PodDisruptionBudget\"},\"resource\":{\"group\":\"policy\"," \
    "\"version\":\"v1\",\"resource\":\"poddisruptionbudgets\"},\"namespace\":\"shop\","        \
    "\"operation\":\"" op "\",\"object\":{\"apiVersion\":\"policy/v1\",\"kind\":"              \
    "\"PodDisruptionBudget\",\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\"},"          \
    "\"spec\":" spec "}}}"

typedef struct admit_case {
    const char *name;
    const char *review;
    bool with_cluster;
    bool want_allowed;
    const char *want;      /* substring of status.message or of a warning */
} admit_case;

static const admit_case admit_cases[] = {
    { "maxUnavailable 0 refused without a cluster",
      REVIEW("CREATE", "{\"maxUnavailable\":0,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}"),
      false, false, "blocks-eviction" },
    { "minAvailable 100% refused", REVIEW("UPDATE", "{\"minAvailable\":\"100%\",\"selector\":"
                                          "{\"matchLabels\":{\"app\":\"web\"}}}"),
      false, false, "minAvailable 100%" },
    { "maxUnavailable 1 allowed", REVIEW("CREATE", "{\"maxUnavailable\":1,\"selector\":"
                                         "{\"matchLabels\":{\"app\":\"web\"}}}"),
      false, true, NULL },
    { "minAvailable 3 of 3 replicas refused with the cluster",
      REVIEW("CREATE", "{\"minAvailable\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}"),
      true, false, "minAvailable 3 needs all 3 pods" },
    { "minAvailable 2 of 3 allowed", REVIEW("CREATE", "{\"minAvailable\":2,\"selector\":"
                                            "{\"matchLabels\":{\"app\":\"web\"}}}"),
      true, true, NULL },
    { "overlapping an existing PDB refused",
      REVIEW("CREATE", "{\"maxUnavailable\":1,\"selector\":{\"matchLabels\":{\"tier\":\"web\"}}}"),
      true, false, "selected by 2 PDBs" },
    { "selecting nothing: allowed with a warning",
      REVIEW("CREATE", "{\"maxUnavailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"nope\"}}}"),
      true, true, "selects no pods" },
    { "DELETE is always allowed", REVIEW("DELETE", "{\"maxUnavailable\":0}"), true, true, NULL },
};

static void test_admit(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(admit_cases) / sizeof(admit_cases[0]); i++) {
        const admit_case *ac = &admit_cases[i];
        json_object *rev = NULL, *resp = NULL;
        char err[256], *out = NULL;
        assert_int_equal(tlr_json_parse(ac->review, strlen(ac->review), 1 << 20, &rev, err,
                                        sizeof(err)), TLR_OK);
        /* The namespace as the server would load it: web with 3 replicas;
         * for the overlap case also a PDB "edge" on the same pods. */
        tlr_pdbc *c = NULL;
        if (ac->with_cluster)
            c = load(TLR_PDBC_MANIFESTS,
                     strstr(ac->name, "overlapping")
                         ? DEPLOY("web", 3, "web") PDB("edge", "{app: web}", "maxUnavailable", "1")
                         : DEPLOY("web", 3, "web"));
        assert_int_equal(tlr_pdbc_admit(rev, c, &out, err, sizeof(err)), TLR_OK);
        assert_int_equal(tlr_json_parse(out, strlen(out), 1 << 20, &resp, err, sizeof(err)),
                         TLR_OK);
        bool allowed = false;
        tlr_json_bool(resp, "response.allowed", &allowed);
        const char *uid = tlr_json_str(resp, "response.uid");
        const char *msg = tlr_json_str(resp, "response.status.message");
        const char *warn = tlr_json_str(resp, "response.warnings.0");
        const char *where = !allowed ? msg : warn;
        if (allowed != ac->want_allowed || !uid || strcmp(uid, "705ab4f5-6393-11e8-b7cc-42010a800002") ||
            (ac->want && (!where || !strstr(where, ac->want))) ||
            strcmp(tlr_json_str(resp, "kind"), "AdmissionReview")) {
            print_error("case %s: got %s\n", ac->name, out);
            failed++;
        }
        if (!allowed) {
            int64_t code = 0;
            tlr_json_int(resp, "response.status.code", &code);
            if (code != 403) {
                print_error("case %s: status code %lld, want 403\n", ac->name, (long long)code);
                failed++;
            }
        }
        free(out);
        json_object_put(rev);
        json_object_put(resp);
        tlr_pdbc_free(c);
    }
    assert_int_equal(failed, 0);

    /* Not an AdmissionReview: an error for the server to answer 400. */
    json_object *bad = json_object_new_object();
    char err[128], *out = NULL;
    assert_int_equal(tlr_pdbc_admit(bad, NULL, &out, err, sizeof(err)), TLR_E_PARSE);
    assert_non_null(strstr(err, "AdmissionReview"));
    json_object_put(bad);
}

/* Namespaces and names the API server would refuse: refused here with
 * 400 Invalid naming the field, before any lookup could be built. */
#define NAMED(ns, name)                                                                       \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"      \
    "\"uid\":\"u-1\",\"kind\":{\"group\":\"policy\",\"version\":\"v1\",\"kind\":"             \
    "\"PodDisruptionBudget\"},\"namespace\":" ns ",\"name\":" name ",\"operation\":\"CREATE\","   \
    "\"object\":{\"metadata\":{\"name\":" name ",\"namespace\":" ns "},"                       \
    "\"spec\":{\"maxUnavailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}}}"

/* 254 characters: one past a subdomain's 253. */
#define NAME254 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static void test_admit_names(void **state)
{
    (void)state;
    static const struct { const char *review; bool ok; const char *field; } cases[] = {
        { NAMED("\"shop\"", "\"web\""), true, NULL },
        { NAMED("\"shop-2\"", "\"web.v1-a\""), true, NULL },
        { NAMED("\"..\"", "\"web\""), false, "request.namespace" },
        { NAMED("\".\"", "\"web\""), false, "request.namespace" },
        { NAMED("\"a/b\"", "\"web\""), false, "request.namespace" },
        { NAMED("\"Shop\"", "\"web\""), false, "request.namespace" },
        { NAMED("\"shop.prod\"", "\"web\""), false, "request.namespace" },   /* a label */
        { NAMED("\"-shop\"", "\"web\""), false, "request.namespace" },
        { NAMED("\"shop%2F..\"", "\"web\""), false, "request.namespace" },
        { NAMED("\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", "\"web\""),
          false, "request.namespace" },   /* 64 characters */
        { NAMED("7", "\"web\""), false, "request.namespace" },
        { NAMED("\"shop\"", "\"../x\""), false, "request.name" },
        { NAMED("\"shop\"", "\"web..x\""), false, "request.name" },
        { NAMED("\"shop\"", "\"web\\u0000\""), false, "request.name" },
        /* A name is a subdomain: only the whole is limited (253), a part
         * between dots may pass a label's 63, as kube-apiserver allows. */
        { NAMED("\"shop\"", "\"checkout-frontend-canary-eu-west-with-a-very-long-deployment-name-abcde\""),
          true, NULL },
        { NAMED("\"shop\"", "\"" NAME254 "\""), false, "request.name" },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *rev = NULL, *resp = NULL;
        char err[256], *out = NULL, why[300] = "";
        assert_int_equal(tlr_json_parse(cases[i].review, strlen(cases[i].review), 1 << 20, &rev,
                                        err, sizeof(err)), TLR_OK);
        bool ok = tlr_pdbc_review_names(rev, why, sizeof(why));
        assert_int_equal(tlr_pdbc_admit(rev, NULL, &out, err, sizeof(err)), TLR_OK);
        assert_int_equal(tlr_json_parse(out, strlen(out), 1 << 20, &resp, err, sizeof(err)),
                         TLR_OK);
        bool allowed = false;
        int64_t code = 0;
        tlr_json_bool(resp, "response.allowed", &allowed);
        tlr_json_int(resp, "response.status.code", &code);
        const char *msg = tlr_json_str(resp, "response.status.message");
        const char *reason = tlr_json_str(resp, "response.status.reason");
        if (ok != cases[i].ok || allowed != cases[i].ok ||
            (!cases[i].ok && (code != 400 || !reason || strcmp(reason, "Invalid") || !msg ||
                              strncmp(msg, cases[i].field, strlen(cases[i].field)) ||
                              strncmp(why, cases[i].field, strlen(cases[i].field))))) {
            print_error("case %zu (%s): names_ok %d, got %s\n", i, cases[i].review, ok, out);
            failed++;
        }
        free(out);
        json_object_put(rev);
        json_object_put(resp);
    }
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_admit),
        cmocka_unit_test(test_admit_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
