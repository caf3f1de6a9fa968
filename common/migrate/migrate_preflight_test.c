/* migrate_preflight_test.c - the checks before a migration moves
 * anything: which architectures a NodePool allows, the AMI rules (exists,
 * architecture, deprecation, not older than the legacy nodes'), the
 * dry-run solve's coverage, and how the checks render. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_migrate.h"

#define DAY (24LL * 3600 * 1000)
#define NOW (1800000000000LL)

/* A NodePool with an arch requirement: op 0 none, 1 In, 2 NotIn. */
static Tailor__V1__NodePool *pool(int op, const char *v1, const char *v2)
{
    Tailor__V1__NodePool *p = tlr_calloc(1, sizeof(*p));
    tailor__v1__node_pool__init(p);
    p->name = (char *)"general";
    if (op == 0)
        return p;
    Tailor__V1__NodeSelectorRequirement *r = tlr_calloc(1, sizeof(*r));
    tailor__v1__node_selector_requirement__init(r);
    r->key = (char *)"kubernetes.io/arch";
    r->operator_ = op == 1 ? TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN
                           : TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN;
    r->values = tlr_calloc(2, sizeof(char *));
    r->values[r->n_values++] = (char *)v1;
    if (v2)
        r->values[r->n_values++] = (char *)v2;
    p->requirements = tlr_calloc(1, sizeof(*p->requirements));
    p->requirements[0] = r;
    p->n_requirements = 1;
    return p;
}

static void pool_free(Tailor__V1__NodePool *p)
{
    for (size_t i = 0; i < p->n_requirements; i++) {
        free(p->requirements[i]->values);
        free(p->requirements[i]);
    }
    free(p->requirements);
    free(p);
}

static void test_pool_archs(void **state)
{
    (void)state;
    static const struct {
        int op;
        const char *v1, *v2;
        bool amd, arm, constrained;
    } t[] = {
        { 0, NULL, NULL, true, true, false },
        { 1, "amd64", NULL, true, false, true },
        { 1, "arm64", "amd64", true, true, true },
        { 2, "arm64", NULL, true, false, true },
        { 1, "s390x", NULL, false, false, true },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        Tailor__V1__NodePool *p = pool(t[i].op, t[i].v1, t[i].v2);
        bool amd, arm, c;
        tlr_mig_pool_archs(p, &amd, &arm, &c);
        if (amd != t[i].amd || arm != t[i].arm || c != t[i].constrained)
            printf("FAIL row %zu: got %d %d %d\n", i, amd, arm, c);
        assert_true(amd == t[i].amd && arm == t[i].arm && c == t[i].constrained);
        pool_free(p);
    }
}

/* The verdict a check list holds for check (the worst if several). */
static int verdict(const tlr_mig_checks *c, const char *check, const char **msg)
{
    int worst = -1;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].check, check) == 0 && (int)c->v[i].result > worst) {
            worst = (int)c->v[i].result;
            *msg = c->v[i].message;
        }
    return worst;
}

static void test_pool_amis(void **state)
{
    (void)state;
    tlr_ami amd = { "ami-new", "node-new", "amd64", "standard", "ssm", NOW - 2 * DAY, 0 };
    tlr_ami amd_old = { "ami-older", "node-old", "amd64", "standard", "ssm", NOW - 90 * DAY, 0 };
    tlr_ami amd_dep = { "ami-dep", "node-dep", "amd64", "standard", "ssm", NOW - 2 * DAY,
                        NOW - DAY };
    tlr_ami amd_soon = { "ami-soon", "", "amd64", "standard", "ssm", NOW - 2 * DAY, NOW + DAY };
    tlr_ami amd_nodate = { "ami-nodate", "", "amd64", "standard", "ssm", 0, 0 };
    tlr_ami arm = { "ami-arm", "node-arm", "arm64", "standard", "ssm", NOW - 2 * DAY, 0 };
    tlr_ami legacy_img = { "ami-legacy", "legacy", "amd64", "", "", NOW - 30 * DAY, 0 };
    tlr_mig_legacy_ami legacy[] = { { "ip-1", "ami-legacy", &legacy_img },
                                    { "ip-2", "ami-gone", NULL } };
    static const struct {
        const char *what;
        int op;
        const char *v1, *v2;
        bool class_found;
        int images;   /* which of the images below, as a bit set */
        const char *check;
        int want;     /* -1: no such check */
        const char *msg;
    } t[] = {
        { "the class is missing", 1, "amd64", NULL, false, 0, "ami-resolves", TLR_MIG_FAIL,
          "EC2NodeClass general does not exist" },
        { "nothing resolved", 1, "amd64", NULL, true, 0, "ami-resolves", TLR_MIG_FAIL,
          "resolve to no image: no SSM parameter" },
        { "resolves", 1, "amd64", NULL, true, 1, "ami-resolves", TLR_MIG_PASS, "ami-new (amd64)" },
        { "amd64 pool, arm64 image", 1, "amd64", NULL, true, 32, "ami-arch", TLR_MIG_FAIL,
          "allows amd64 but EC2NodeClass general resolves to no amd64 image (it resolves to "
          "ami-arm (arm64))" },
        { "both archs, one image", 1, "amd64", "arm64", true, 1, "ami-arch", TLR_MIG_FAIL,
          "allows arm64" },
        { "unconstrained, one arch", 0, NULL, NULL, true, 1, "ami-arch", TLR_MIG_PASS,
          "launches only the covered one" },
        { "amd64 pool, amd64 image", 1, "amd64", NULL, true, 1, "ami-arch", TLR_MIG_PASS,
          "amd64 covered" },
        { "deprecated yesterday", 1, "amd64", NULL, true, 4, "ami-deprecated", TLR_MIG_FAIL,
          "ami-dep (node-dep) is deprecated since" },
        { "deprecated tomorrow", 1, "amd64", NULL, true, 8, "ami-deprecated", TLR_MIG_WARN,
          "ami-soon will be deprecated on" },
        { "a deprecated image of an arch not allowed", 1, "arm64", NULL, true, 4 | 32,
          "ami-deprecated", TLR_MIG_PASS, "no image it boots is deprecated" },
        { "older than the legacy nodes'", 1, "amd64", NULL, true, 2, "ami-age", TLR_MIG_FAIL,
          "ami-older (created 2026-10-17T08:00:00Z) is older than ami-legacy (created "
          "2026-12-16T08:00:00Z), which legacy node ip-1 runs" },
        { "newer than the legacy nodes'", 1, "amd64", NULL, true, 1, "ami-age", TLR_MIG_PASS,
          "at least as new" },
        { "no CreationDate", 1, "amd64", NULL, true, 16, "ami-age", TLR_MIG_WARN,
          "ami-nodate has no CreationDate" },
        { "an arm64 image is not compared with amd64 legacy", 1, "arm64", NULL, true, 32,
          "ami-age", TLR_MIG_PASS, "at least as new" },
    };
    tlr_ami all[] = { amd, amd_old, amd_dep, amd_soon, amd_nodate, arm };
    int failures = 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        Tailor__V1__NodePool *p = pool(t[i].op, t[i].v1, t[i].v2);
        tlr_ami chosen[6];
        tlr_amis amis = { chosen, 0 };
        for (int k = 0; k < 6; k++)
            if (t[i].images & (1 << k))
                chosen[amis.n++] = all[k];
        tlr_mig_pool_in in = {
            .pool = p, .nodeclass = "general", .class_found = t[i].class_found,
            .amis = amis.n ? &amis : NULL,
            .resolve_error = amis.n ? "" : "no SSM parameter /x found", .legacy = legacy,
            .nlegacy = 2, .now_ms = NOW,
        };
        tlr_mig_checks c = { 0 };
        tlr_mig_check_pool(&in, &c);
        const char *msg = "";
        int got = verdict(&c, t[i].check, &msg);
        if (got != t[i].want || strstr(msg, t[i].msg) == NULL) {
            printf("FAIL %s: %s got %d \"%s\", want %d containing \"%s\"\n", t[i].what,
                   t[i].check, got, msg, t[i].want, t[i].msg);
            failures++;
        }
        tlr_mig_checks_free(&c);
        pool_free(p);
    }
    assert_int_equal(failures, 0);
}

static void test_coverage(void **state)
{
    (void)state;
    Tailor__V1__SolveResponse r = TAILOR__V1__SOLVE_RESPONSE__INIT;
    Tailor__V1__NodeClaim claim = TAILOR__V1__NODE_CLAIM__INIT;
    char *uids[3] = { "a", "b", "c" };
    claim.planned_pod_uids = uids;
    claim.n_planned_pod_uids = 3;
    Tailor__V1__NodeClaim *claims[1] = { &claim };
    r.new_nodeclaims = claims;
    r.n_new_nodeclaims = 1;
    r.total_cost_per_hour = 0.192;
    tlr_mig_checks c = { 0 };
    tlr_mig_check_coverage(&r, 3, &c);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.v[0].result, TLR_MIG_PASS);
    assert_string_equal(c.v[0].message, "all 3 pods fit: 0 on tailor's nodes now, 3 on 1 new node "
                                        "($0.1920/hour)");
    tlr_mig_checks_free(&c);

    Tailor__V1__Status st = TAILOR__V1__STATUS__INIT;
    st.reason = "Unschedulable";
    st.message = "requests 96 cpu";
    Tailor__V1__NodePoolReason why = TAILOR__V1__NODE_POOL_REASON__INIT;
    why.nodepool = "general";
    why.reason = "no instance type has 96 cpu";
    Tailor__V1__NodePoolReason *whys[1] = { &why };
    Tailor__V1__PodError e = TAILOR__V1__POD_ERROR__INIT;
    e.namespace_ = "default";
    e.name = "huge";
    e.status = &st;
    e.reasons = whys;
    e.n_reasons = 1;
    Tailor__V1__PodError *errs[1] = { &e };
    r.pod_errors = errs;
    r.n_pod_errors = 1;
    tlr_mig_check_coverage(&r, 4, &c);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.v[0].result, TLR_MIG_FAIL);
    assert_string_equal(c.v[0].object, "pod default/huge");
    assert_string_equal(c.v[0].message, "no NodePool can run it: requests 96 cpu; general: no "
                                        "instance type has 96 cpu");
    /* Rendered: the table's summary says NOT READY; the JSON says ok false. */
    tlr_buf b;
    tlr_buf_init(&b, 1u << 16);
    tlr_mig_checks_add(&c, "legacy-nodes", "legacy-m5", TLR_MIG_PASS, "4 legacy nodes");
    tlr_mig_checks_text(&c, "dev/legacy-m5", &b);
    assert_non_null(strstr(tlr_buf_str(&b), "Cluster dev/legacy-m5\n"));
    assert_non_null(strstr(tlr_buf_str(&b), "FAIL   coverage"));
    assert_non_null(strstr(tlr_buf_str(&b), "2 checks: 1 passed, 0 warnings, 1 failed: NOT READY"));
    tlr_buf_free(&b);
    tlr_buf_init(&b, 1u << 16);
    tlr_mig_checks_json(&c, NULL, &b);
    assert_non_null(strstr(tlr_buf_str(&b), "{\"ok\":false,\"passed\":1,\"warnings\":0,\"failed\":1,"
                                            "\"checks\":[{\"check\":\"coverage\",\"object\":\"pod "
                                            "default/huge\",\"result\":\"FAIL\""));
    tlr_buf_free(&b);
    assert_int_equal(tlr_mig_checks_count(&c, TLR_MIG_FAIL), 1);
    tlr_mig_checks_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_archs),
        cmocka_unit_test(test_pool_amis),
        cmocka_unit_test(test_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
