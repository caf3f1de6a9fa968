/* solve_minvalues_test.c - minValues as a user sees it, on the real
 * catalog (../shared/data/aws-instance-types.json, TAILOR_SHARED_DATA).
 *
 * Issue 13: a NodePool with instance-family minValues 3 and
 * instance-category minValues 2 and two Deployments pending failed every
 * pod of the first with "minValues 3 ... cannot be met", although each
 * pod fits types of all six families: claims were packed until only one
 * or two families held them.  As in Karpenter (nodeclaim.go,
 * filterInstanceTypesByRequirements), a pod now joins a claim only while
 * the claim's remaining types meet minValues, and fails only when a claim
 * of its own cannot meet them.
 *
 * One case uses the synthetic testkit catalog instead (a family offered in
 * one zone only).  Each case runs with every strategy (tailor, the baseline,
 * first-fit decreasing) and checks: how many pods are
 * placed, the reason of those that are not, that every claim's options
 * carry enough distinct values of each minValues key, the
 * min-values-relaxed annotation, and the independent plan checker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "solve_testkit.h"
#include "tlr_catalog.h"
#include "tlr_err.h"

#define K_FAMILY   "karpenter.k8s.aws/instance-family"
#define K_CATEGORY "karpenter.k8s.aws/instance-category"
#define K_CPU      "karpenter.k8s.aws/instance-cpu"
#define FAMILIES   "c6i,c7i,m6i,m7i,r6i,r7i"

static Tailor__V1__Catalog *g_cat;   /* the real catalog, loaded once */

/* ---- building requests ------------------------------------------------ */

/* The request's catalog is the shared real one (detached before freeing). */
static void use_real_catalog(Tailor__V1__SolveRequest *r)
{
    Tailor__V1__CatalogRef *ref = calloc(1, sizeof(*ref));
    tailor__v1__catalog_ref__init(ref);
    ref->hash = tk_s(g_cat->hash);
    ref->catalog = g_cat;
    TK_PUSH(ref->node_classes, ref->n_node_classes, tk_s("default"));
    TK_PUSH(r->catalogs, r->n_catalogs, ref);
}

static void set_best_effort(Tailor__V1__SolveRequest *r)
{
    r->options = calloc(1, sizeof(*r->options));
    tailor__v1__solve_options__init(r->options);
    r->options->min_values_policy = TAILOR__V1__MIN_VALUES_POLICY__MIN_VALUES_POLICY_BEST_EFFORT;
}

/* The NodePool of the issue, with family minValues fam_min. */
static Tailor__V1__NodePool *issue_pool(Tailor__V1__SolveRequest *r, int fam_min)
{
    use_real_catalog(r);
    Tailor__V1__NodePool *p = tk_pool(r, "default", 0);
    tk_pool_req(p, K_FAMILY, TK_IN, FAMILIES, fam_min);
    tk_pool_req(p, K_CATEGORY, TK_IN, "c,m,r", 2);
    tk_pool_req(p, K_CPU, TK_IN, "4,8,16", 0);
    return p;
}

static void deployment(Tailor__V1__SolveRequest *r, const char *name, int n, int64_t cpu_m, int64_t mem_mib)
{
    char pn[64];
    for (int i = 0; i < n; i++) {
        snprintf(pn, sizeof pn, "%s-%d", name, i);
        tk_pod_label(tk_pod(r, pn, cpu_m, mem_mib), "app", name);
    }
}

/* Issue 13 as reported: 12 pods of 1.5 cpu / 6 GiB, 14 of 1 cpu / 12 GiB. */
static void b_issue(Tailor__V1__SolveRequest *r)
{
    issue_pool(r, 3);
    deployment(r, "web", 12, 1500, 6 * 1024);
    deployment(r, "cache", 14, 1000, 12 * 1024);
}

/* Larger: claims must stay small enough for three families many times. */
static void b_issue_x10(Tailor__V1__SolveRequest *r)
{
    issue_pool(r, 3);
    deployment(r, "web", 120, 1500, 6 * 1024);
    deployment(r, "cache", 140, 1000, 12 * 1024);
    deployment(r, "tiny", 50, 250, 512);
}

/* Seven families asked of six: no claim can meet it, whatever it holds. */
static void b_seven_of_six(Tailor__V1__SolveRequest *r)
{
    issue_pool(r, 7);
    deployment(r, "web", 3, 1500, 6 * 1024);
}

/* 100 GiB fits only r6i/r7i.4xlarge (118 GiB): two families, alone or not;
 * the pods beside it are still placed. */
static void b_alone_too_big(Tailor__V1__SolveRequest *r)
{
    issue_pool(r, 3);
    tk_pod(r, "huge", 2000, 100 * 1024);
    deployment(r, "web", 4, 1500, 6 * 1024);
}

/* minValues on the instance-type key itself: every claim keeps 5 types. */
static void b_type_key(Tailor__V1__SolveRequest *r)
{
    use_real_catalog(r);
    Tailor__V1__NodePool *p = tk_pool(r, "default", 0);
    tk_pool_req(p, K_FAMILY, TK_IN, FAMILIES, 0);
    tk_pool_req(p, K_CPU, TK_IN, "4,8,16", 0);
    tk_pool_req(p, K_TYPE, TK_EXISTS, NULL, 5);
    deployment(r, "cache", 14, 1000, 12 * 1024);
    deployment(r, "web", 12, 1500, 6 * 1024);
}

/* BestEffort: the impossible minValues is relaxed, not failed. */
static void b_best_effort(Tailor__V1__SolveRequest *r)
{
    b_seven_of_six(r);
    set_best_effort(r);
}

/* BestEffort keeps packing as before: the issue's pods all go, possibly on
 * claims that do not meet minValues (then annotated as relaxed). */
static void b_issue_best_effort(Tailor__V1__SolveRequest *r)
{
    b_issue(r);
    set_best_effort(r);
}

/* A zone spread pins the claim to a zone; family c is offered in test-1b
 * only, so only test-1b leaves three families (synthetic catalog: the
 * zones tie on price, and the first one would be pinned otherwise). */
static void b_pinned_zone(Tailor__V1__SolveRequest *r)
{
    tk_type(r, "a.4", 4, 8, 0.20);
    tk_type(r, "b.4", 4, 8, 0.21);
    Tailor__V1__InstanceType *c = tk_type_raw(r, "c.4", 4, 8);
    tk_offer(c, "test-1b", TK_OD, 0.22, true);
    tk_pool_req(tk_pool(r, "default", 0), K_FAMILY, TK_IN, "a,b,c", 3);
    Tailor__V1__Pod *p = tk_pod(r, "spread", 1000, 1024);
    tk_pod_label(p, "app", "spread");
    tk_pod_spread(p, K_ZONE, 1, false, "app", "spread");
}

/* minValues on an offering key: a type's zones are those of its
 * offerings, as Karpenter's instance types carry zone In [every zone
 * offered] (SatisfiesMinValues reads the type's requirements, not the
 * claim's).  A zone spread pins each claim to one zone; its types still
 * bring two zones each, so minValues 2 holds and the pods are placed. */
static void b_zone_key(Tailor__V1__SolveRequest *r)
{
    tk_type(r, "a.4", 4, 8, 0.20);
    tk_type(r, "b.4", 4, 8, 0.21);
    tk_pool_req(tk_pool(r, "default", 0), K_ZONE, TK_IN, "test-1a,test-1b", 2);
    for (int i = 0; i < 2; i++) {
        Tailor__V1__Pod *p = tk_pod(r, i ? "spread-1" : "spread-0", 1000, 1024);
        tk_pod_label(p, "app", "spread");
        tk_pod_spread(p, K_ZONE, 1, false, "app", "spread");
    }
}

/* ---- the table -------------------------------------------------------- */

enum { RELAXED_NO = 0, RELAXED_YES, RELAXED_ANY };

typedef struct mcase {
    const char *name;
    void (*build)(Tailor__V1__SolveRequest *);
    int placed;            /* pods placed (the others must fail) */
    const char *why;       /* substring of every failed pod's reasons */
    int fam_min, cat_min, type_min;   /* per claim, unless relaxed */
    int relaxed;           /* RELAXED_*: the annotation on every claim */
} mcase;

static const mcase cases[] = {
    { "issue 13: both Deployments placed, 3 families and 2 categories per claim", b_issue, 26, NULL, 3, 2, 0,
      RELAXED_NO },
    { "issue 13 x10 with small pods", b_issue_x10, 310, NULL, 3, 2, 0, RELAXED_NO },
    { "minValues 7 of 6 families: unschedulable with the reason", b_seven_of_six, 0,
      "minValues 7 for karpenter.k8s.aws/instance-family cannot be met", 0, 0, 0, RELAXED_NO },
    { "a pod that cannot meet minValues alone fails, the others go", b_alone_too_big, 4,
      "minValues 3 for karpenter.k8s.aws/instance-family cannot be met", 3, 2, 0, RELAXED_NO },
    { "minValues on node.kubernetes.io/instance-type", b_type_key, 26, NULL, 0, 0, 5, RELAXED_NO },
    { "a zone pin keeps the zone where minValues can be met", b_pinned_zone, 1, NULL, 3, 0, 0, RELAXED_NO },
    { "minValues on zone, claims pinned to one zone by a spread", b_zone_key, 2, NULL, 0, 0, 0, RELAXED_NO },
    { "BestEffort relaxes what cannot be met", b_best_effort, 3, NULL, 0, 0, 0, RELAXED_YES },
    { "BestEffort: the issue's pods are all placed", b_issue_best_effort, 26, NULL, 0, 0, 0, RELAXED_ANY },
};

/* ---- reading a plan --------------------------------------------------- */

static const Tailor__V1__InstanceType *cat_type(const Tailor__V1__Catalog *cat, const char *name)
{
    for (size_t i = 0; i < cat->n_instance_types; i++)
        if (!strcmp(cat->instance_types[i]->name, name))
            return cat->instance_types[i];
    return NULL;
}

static const char *type_label(const Tailor__V1__InstanceType *t, const char *key)
{
    for (size_t i = 0; t && i < t->n_requirements; i++)
        if (!strcmp(t->requirements[i]->key, key) && t->requirements[i]->n_values)
            return t->requirements[i]->values[0];
    return NULL;
}

/* Distinct values of key over the claim's options (types of catalog cat). */
static int distinct(const Tailor__V1__Catalog *cat, const Tailor__V1__NodeClaim *nc, const char *key)
{
    const char *seen[256];
    int n = 0;
    for (size_t i = 0; i < nc->n_instance_type_options && n < 256; i++) {
        const char *v = type_label(cat_type(cat, nc->instance_type_options[i]->name), key);
        bool dup = !v;
        for (int j = 0; j < n && !dup; j++)
            dup = !strcmp(seen[j], v);
        if (!dup)
            seen[n++] = v;
    }
    return n;
}

static bool claim_relaxed(const Tailor__V1__NodeClaim *nc)
{
    for (size_t i = 0; i < nc->n_annotations; i++)
        if (!strcmp(nc->annotations[i]->key, "karpenter.sh/nodeclaim-min-values-relaxed"))
            return !strcmp(nc->annotations[i]->value, "true");
    return false;
}

static int check_claims(const mcase *tc, const char *strat, const Tailor__V1__SolveRequest *req,
                        const Tailor__V1__SolveResponse *s)
{
    const Tailor__V1__Catalog *cat = req->catalogs[0]->catalog;
    int bad = 0;
    struct { const char *key; int min; } mins[] = {
        { K_FAMILY, tc->fam_min }, { K_CATEGORY, tc->cat_min }, { K_TYPE, tc->type_min } };
    for (size_t i = 0; i < s->n_new_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *nc = s->new_nodeclaims[i];
        bool relaxed = claim_relaxed(nc);
        if ((tc->relaxed == RELAXED_NO && relaxed) || (tc->relaxed == RELAXED_YES && !relaxed)) {
            fprintf(stderr, "case \"%s\" (%s): claim %zu: min-values-relaxed: want %s, got %s\n", tc->name, strat,
                    i, tc->relaxed == RELAXED_YES ? "true" : "false", relaxed ? "true" : "false");
            bad++;
        }
        if (relaxed)
            continue;
        for (size_t k = 0; k < sizeof mins / sizeof mins[0]; k++) {
            int got = mins[k].min ? distinct(cat, nc, mins[k].key) : 0;
            if (got < mins[k].min) {
                fprintf(stderr, "case \"%s\" (%s): claim %zu (%zu pods, cheapest %s): %s: want >= %d values, "
                                "got %d\n", tc->name, strat, i, nc->n_planned_pod_uids,
                        nc->instance_type_options[0]->name, mins[k].key, mins[k].min, got);
                bad++;
            }
        }
    }
    return bad;
}

static int run_case(const mcase *tc, tlr_solve_strategy st)
{
    const char *strat = st == TLR_SOLVE_TAILOR ? "tailor" : st == TLR_SOLVE_FFD ? "ffd" : "karpenter";
    Tailor__V1__SolveRequest *req = tk_new();
    tc->build(req);
    tlr_solve_opts o = { .strategy = st, .replica_id = "test", .no_lower_bound = true };
    Tailor__V1__SolveResponse *s = NULL;
    int bad = 0;
    int rc = tlr_solve(req, &o, &s);
    if (rc != TLR_OK || !s) {
        fprintf(stderr, "case \"%s\" (%s): tlr_solve: want OK, got %s\n", tc->name, strat, tlr_strerror(rc));
        bad = 1;
        goto out;
    }
    size_t placed = s->n_bindings;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++)
        placed += s->new_nodeclaims[i]->n_planned_pod_uids;
    if ((int)placed != tc->placed || placed + s->n_pod_errors != req->n_pending_pods) {
        fprintf(stderr, "case \"%s\" (%s): placed: want %d of %zu, got %zu (%zu errors%s%s)\n", tc->name, strat,
                tc->placed, req->n_pending_pods, placed, s->n_pod_errors, s->n_pod_errors ? ", first: " : "",
                s->n_pod_errors ? tk_reasons(s->pod_errors[0]) : "");
        bad++;
    }
    for (size_t i = 0; i < s->n_pod_errors && tc->why; i++)
        if (!strstr(tk_reasons(s->pod_errors[i]), tc->why)) {
            fprintf(stderr, "case \"%s\" (%s): pod %s: want reason \"%s\", got \"%s\"\n", tc->name, strat,
                    s->pod_errors[i]->pod_uid, tc->why, tk_reasons(s->pod_errors[i]));
            bad++;
        }
    bad += check_claims(tc, strat, req, s);
    bad += tk_check(req, s);
out:
    tlr_solve_response_free(s);
    if (req->catalogs[0]->catalog == g_cat)
        req->catalogs[0]->catalog = NULL;   /* shared: freed in teardown */
    tk_free(req);
    return bad;
}

static void test_cases(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bad += run_case(&cases[i], TLR_SOLVE_TAILOR);
        bad += run_case(&cases[i], TLR_SOLVE_KARPENTER);
        bad += run_case(&cases[i], TLR_SOLVE_FFD);
    }
    assert_int_equal(bad, 0);
}

static int setup(void **state)
{
    (void)state;
    const char *dir = getenv("TAILOR_SHARED_DATA");
    char path[1024], err[256] = "";
    snprintf(path, sizeof path, "%s/aws-instance-types.json", dir ? dir : "../shared/data");
    if (tlr_catalog_file_load(path, NULL, &g_cat, err, sizeof err) != TLR_OK) {
        printf("FAIL: %s: %s\n", path, err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tlr_catalog_free(g_cat);
    g_cat = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
