/* solve_topo_test.c - topology spread and pod (anti-)affinity on label
 * keys other than zone, hostname and capacity type (issue 13).
 *
 * What a user notices: the pods spread over the values the NodePools can
 * give the key (a requirement's In values, a template label, an
 * instance-type label such as karpenter.k8s.aws/instance-family), each
 * new NodeClaim carries the value it was given (so the Node gets the
 * label), existing nodes' pods count, minDomains holds, and a key nothing
 * can produce is refused with a reason.  Every plan also passes the
 * independent checker (tlr_plancheck.h), with every strategy (tailor, the
 * baseline, first-fit decreasing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "solve_testkit.h"
#include "tlr_err.h"

#define K_SPREAD "capacity-spread"
#define K_FAMILY "karpenter.k8s.aws/instance-family"

#define NST 3
static const tlr_solve_strategy strategies[NST] = { TLR_SOLVE_TAILOR, TLR_SOLVE_KARPENTER, TLR_SOLVE_FFD };
static const char *const sname[NST] = { "tailor", "karpenter", "ffd" };

static Tailor__V1__SolveResponse *solve(const Tailor__V1__SolveRequest *req, int st)
{
    tlr_solve_opts o = { .strategy = strategies[st], .replica_id = "test", .no_lower_bound = true };
    Tailor__V1__SolveResponse *s = NULL;
    assert_int_equal(tlr_solve(req, &o, &s), TLR_OK);
    assert_non_null(s);
    return s;
}

/* The value claim c gives key: a one-value In requirement, else its label
 * (NULL when it has neither, or two different ones). */
static const char *claim_domain(const Tailor__V1__NodeClaim *c, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < c->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = c->requirements[i];
        if (strcmp(r->key, key) || r->operator_ != TK_IN || r->n_values != 1)
            continue;
        if (v && strcmp(v, r->values[0]))
            return NULL;
        v = r->values[0];
    }
    for (size_t i = 0; !v && i < c->n_labels; i++)
        if (!strcmp(c->labels[i]->key, key))
            v = c->labels[i]->value;
    return v;
}

/* Pods of the plan per value of key, over the new claims; values[] and
 * counts[] (n of them) in first-seen order.  Returns the pods counted. */
static int domain_counts(const Tailor__V1__SolveResponse *s, const char *key, const char **values, int *counts,
                         int *n)
{
    int tot = 0;
    *n = 0;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = s->new_nodeclaims[i];
        const char *v = claim_domain(c, key);
        assert_non_null(v);   /* every claim carries its domain */
        int j = 0;
        while (j < *n && strcmp(values[j], v))
            j++;
        if (j == *n) {
            values[j] = v;
            counts[(*n)++] = 0;
        }
        counts[j] += (int)c->n_planned_pod_uids;
        tot += (int)c->n_planned_pod_uids;
    }
    return tot;
}

/* total pods spread evenly over exactly ndomains values of key. */
static void expect_even(const Tailor__V1__SolveResponse *s, const char *key, int total, int ndomains,
                        const char *strategy)
{
    const char *vals[16];
    int cnt[16], nd;
    assert_int_equal(domain_counts(s, key, vals, cnt, &nd), total);
    assert_int_equal(nd, ndomains);
    for (int i = 0; i < nd; i++) {
        if (cnt[i] != total / ndomains)
            fail_msg("%s: domain %s=%s got %d pods, want %d", strategy, key, vals[i], cnt[i],
                     total / ndomains);
    }
}

static int pool_pods(const Tailor__V1__SolveResponse *s, const char *pool)
{
    int n = 0;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++)
        if (!strcmp(s->new_nodeclaims[i]->nodepool, pool))
            n += (int)s->new_nodeclaims[i]->n_planned_pod_uids;
    return n;
}

/* AWS karpenter-blueprints' od-spot split: spot carries capacity-spread
 * 2..5, on-demand 1. */
static void b_blueprint_pools(Tailor__V1__SolveRequest *req)
{
    tk_ladder(req);
    Tailor__V1__NodePool *od = tk_pool(req, "on-demand", 0);
    tk_pool_req(od, K_CT, TK_IN, "on-demand", 0);
    tk_pool_req(od, K_SPREAD, TK_IN, "1", 0);
    Tailor__V1__NodePool *sp = tk_pool(req, "spot", 0);
    tk_pool_req(sp, K_CT, TK_IN, "spot", 0);
    tk_pool_req(sp, K_SPREAD, TK_IN, "2,3,4,5", 0);
}

static Tailor__V1__Pod *web_pod(Tailor__V1__SolveRequest *req, const char *name, const char *key, int skew)
{
    Tailor__V1__Pod *p = tk_pod(req, name, 1000, 1024);
    tk_pod_label(p, "app", "web");
    if (key)
        tk_pod_spread(p, key, skew, false, "app", "web");
    return p;
}

static void web_pods(Tailor__V1__SolveRequest *req, int n, const char *key, int skew, int min_domains)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "web-%d", i);
        Tailor__V1__Pod *p = web_pod(req, name, key, skew);
        if (p->n_topology_spread_constraints)
            p->topology_spread_constraints[0]->min_domains = min_domains;
    }
}

/* 10 replicas over 5 capacity-spread domains: 2 per domain, so the
 * on-demand pool gets 20 % and spot 80 %. */
static void test_blueprint_od_spot(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_blueprint_pools(req);
        web_pods(req, 10, K_SPREAD, 1, 0);
        Tailor__V1__SolveResponse *s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        expect_even(s, K_SPREAD, 10, 5, sname[st]);
        assert_int_equal(pool_pods(s, "on-demand"), 2);
        assert_int_equal(pool_pods(s, "spot"), 8);
        /* spot claims name their value in their requirements */
        for (size_t i = 0; i < s->n_new_nodeclaims; i++) {
            const Tailor__V1__NodeClaim *c = s->new_nodeclaims[i];
            const char *v = claim_domain(c, K_SPREAD);
            assert_int_equal(!strcmp(c->nodepool, "on-demand"), !strcmp(v, "1"));
        }
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* A preferred node affinity does not narrow the spread's domains (as
 * Karpenter's topology_test "should not limit spread options by preferred
 * node affinity"): the preferred values 2 and 3 get no more than their
 * share, 2 pods each over the 5 domains, not 5 each. */
static void test_preferred_keeps_domains(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_blueprint_pools(req);
        web_pods(req, 10, K_SPREAD, 1, 0);
        for (size_t i = 0; i < req->n_pending_pods; i++)
            tk_pod_preferred(req->pending_pods[i], 10, K_SPREAD, TK_IN, "2,3");
        Tailor__V1__SolveResponse *s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        expect_even(s, K_SPREAD, 10, 5, sname[st]);
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* The checker verifies the domain on the plan: a spot claim that does not
 * say which capacity-spread value it has is a violation. */
static void test_checker_needs_domain(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    b_blueprint_pools(req);
    web_pods(req, 10, K_SPREAD, 1, 0);
    Tailor__V1__SolveResponse *s = solve(req, 0);
    assert_int_equal(tk_check(req, s), 0);
    bool cut = false;
    for (size_t i = 0; i < s->n_new_nodeclaims && !cut; i++) {
        Tailor__V1__NodeClaim *c = s->new_nodeclaims[i];
        if (strcmp(c->nodepool, "spot"))
            continue;
        for (size_t j = 0; j < c->n_requirements && !cut; j++)
            if (!strcmp(c->requirements[j]->key, K_SPREAD) && c->requirements[j]->n_values == 1) {
                c->requirements[j] = c->requirements[--c->n_requirements];
                cut = true;
            }
    }
    assert_true(cut);
    tlr_buf b;
    tlr_buf_init(&b, 1 << 16);
    assert_true(tlr_plan_check(req, s, &b) > 0);
    assert_non_null(strstr(tlr_buf_str(&b), "has no capacity-spread domain"));
    tlr_buf_free(&b);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* A spread on an instance-type label: the claims' types are narrowed to
 * one family each, 2 pods per family. */
static void test_instance_family(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        tk_type(req, "m5.4", 4, 8, 0.20);
        tk_type(req, "m5.8", 8, 16, 0.40);
        tk_type(req, "c5.4", 4, 8, 0.22);
        tk_type(req, "r5.4", 4, 8, 0.30);
        tk_pool(req, "default", 0);
        web_pods(req, 6, K_FAMILY, 1, 0);
        Tailor__V1__SolveResponse *s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        expect_even(s, K_FAMILY, 6, 3, sname[st]);
        for (size_t i = 0; i < s->n_new_nodeclaims; i++) {
            const Tailor__V1__NodeClaim *c = s->new_nodeclaims[i];
            const char *fam = claim_domain(c, K_FAMILY);
            for (size_t j = 0; j < c->n_instance_type_options; j++)
                if (strncmp(c->instance_type_options[j]->name, fam, strlen(fam)))
                    fail_msg("%s: claim of family %s has option %s", sname[st], fam,
                             c->instance_type_options[j]->name);
        }
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* A template label only one pool has is a single domain: no skew can
 * arise, every pod is placed (packed, not one per node). */
static void test_template_label_single_domain(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        tk_ladder(req);
        Tailor__V1__NodePool *p = tk_pool(req, "team-a", 0);
        TK_PUSH(p->labels, p->n_labels, tk_label("team", "a"));
        web_pods(req, 8, "team", 1, 0);
        Tailor__V1__SolveResponse *s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        const char *vals[4];
        int cnt[4], nd;
        assert_int_equal(domain_counts(s, "team", vals, cnt, &nd), 8);
        assert_int_equal(nd, 1);
        assert_string_equal(vals[0], "a");
        assert_true(s->n_new_nodeclaims < 8);
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* minDomains above the 5 domains there are: the global minimum counts as
 * 0, so each domain takes maxSkew pods and the rest wait. */
static void test_min_domains(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_blueprint_pools(req);
        web_pods(req, 10, K_SPREAD, 1, 6);
        Tailor__V1__SolveResponse *s = solve(req, st);
        const char *vals[16];
        int cnt[16], nd;
        assert_int_equal(domain_counts(s, K_SPREAD, vals, cnt, &nd), 5);
        assert_int_equal(nd, 5);
        assert_int_equal(s->n_pod_errors, 5);
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
        /* minDomains 5 is met: all ten go */
        req = tk_new();
        b_blueprint_pools(req);
        web_pods(req, 10, K_SPREAD, 1, 5);
        s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* A key no NodePool, instance type or node gives a value: unschedulable,
 * and the reason names the key. */
static void test_key_nobody_produces(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_blueprint_pools(req);
        web_pods(req, 3, "rack", 1, 0);
        Tailor__V1__SolveResponse *s = solve(req, st);
        assert_int_equal(s->n_new_nodeclaims, 0);
        assert_int_equal(s->n_pod_errors, 3);
        const char *why = tk_reasons(tk_error_of(s, "web-0"));
        if (!strstr(why, "topology key rack has no value on this NodePool's nodes"))
            fail_msg("%s: reason %s", sname[st], why);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* Pods already running count: an on-demand node (capacity-spread 1)
 * runs 2 replicas, so the 8 new ones go 2 to each spot value. */
static void test_existing_nodes_count(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_blueprint_pools(req);
        Tailor__V1__Node *n = tk_node(req, "od-1", "test-1a", 4000, 8);
        n->nodepool = tk_s("on-demand");
        TK_PUSH(n->labels, n->n_labels, tk_label(K_SPREAD, "1"));
        for (int i = 0; i < 2; i++) {
            char name[32];
            snprintf(name, sizeof name, "old-%d", i);
            tk_pod_label(tk_node_pod(n, name, 1000, 1024), "app", "web");
        }
        web_pods(req, 8, K_SPREAD, 1, 0);
        Tailor__V1__SolveResponse *s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        assert_int_equal(s->n_bindings, 0);   /* the node has room, but domain 1 is full */
        const char *vals[16];
        int cnt[16], nd;
        assert_int_equal(domain_counts(s, K_SPREAD, vals, cnt, &nd), 8);
        assert_int_equal(nd, 4);
        for (int i = 0; i < nd; i++) {
            assert_string_not_equal(vals[i], "1");
            assert_int_equal(cnt[i], 2);
        }
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* Pod anti-affinity on a custom key: one replica per domain, the rest
 * wait; self-affinity: all in one domain. */
static void test_pod_affinity_custom_key(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_blueprint_pools(req);
        for (int i = 0; i < 7; i++) {
            char name[32];
            snprintf(name, sizeof name, "anti-%d", i);
            Tailor__V1__Pod *p = web_pod(req, name, NULL, 0);
            tk_pod_podaff(p, true, K_SPREAD, "app", "web");
        }
        Tailor__V1__SolveResponse *s = solve(req, st);
        const char *vals[16];
        int cnt[16], nd;
        assert_int_equal(domain_counts(s, K_SPREAD, vals, cnt, &nd), 5);
        assert_int_equal(nd, 5);
        assert_int_equal(s->n_pod_errors, 2);
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);

        req = tk_new();
        b_blueprint_pools(req);
        for (int i = 0; i < 7; i++) {
            char name[32];
            snprintf(name, sizeof name, "aff-%d", i);
            Tailor__V1__Pod *p = web_pod(req, name, NULL, 0);
            tk_pod_podaff(p, false, K_SPREAD, "app", "web");
        }
        s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        assert_int_equal(domain_counts(s, K_SPREAD, vals, cnt, &nd), 7);
        assert_int_equal(nd, 1);
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

/* A pod that only narrows the key (nodeSelector capacity-spread=3) limits
 * its own domains: with nodeAffinityPolicy Honor (the default) the spread
 * counts domain 3 alone, so all its replicas go there. */
static void test_affinity_policy_honor(void **state)
{
    (void)state;
    for (int st = 0; st < NST; st++) {
        Tailor__V1__SolveRequest *req = tk_new();
        b_blueprint_pools(req);
        web_pods(req, 4, K_SPREAD, 1, 0);
        for (size_t i = 0; i < req->n_pending_pods; i++)
            tk_pod_selector(req->pending_pods[i], K_SPREAD, "3");
        Tailor__V1__SolveResponse *s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 0);
        const char *vals[16];
        int cnt[16], nd;
        assert_int_equal(domain_counts(s, K_SPREAD, vals, cnt, &nd), 4);
        assert_int_equal(nd, 1);
        assert_string_equal(vals[0], "3");
        assert_int_equal(tk_check(req, s), 0);
        tlr_solve_response_free(s);
        tk_free(req);
        /* Ignore: the other four values count too (at 0), so only maxSkew
         * replicas fit in domain 3 */
        req = tk_new();
        b_blueprint_pools(req);
        web_pods(req, 4, K_SPREAD, 1, 0);
        for (size_t i = 0; i < req->n_pending_pods; i++) {
            tk_pod_selector(req->pending_pods[i], K_SPREAD, "3");
            req->pending_pods[i]->topology_spread_constraints[0]->node_affinity_policy =
                TAILOR__V1__NODE_INCLUSION_POLICY__NODE_INCLUSION_POLICY_IGNORE;
        }
        s = solve(req, st);
        assert_int_equal(s->n_pod_errors, 3);
        tlr_solve_response_free(s);
        tk_free(req);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blueprint_od_spot),
        cmocka_unit_test(test_checker_needs_domain),
        cmocka_unit_test(test_instance_family),
        cmocka_unit_test(test_preferred_keeps_domains),
        cmocka_unit_test(test_template_label_single_domain),
        cmocka_unit_test(test_min_domains),
        cmocka_unit_test(test_key_nobody_produces),
        cmocka_unit_test(test_existing_nodes_count),
        cmocka_unit_test(test_pod_affinity_custom_key),
        cmocka_unit_test(test_affinity_policy_honor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
