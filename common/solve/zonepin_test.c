/* zonepin_test.c - zone pre-assignment (zonepin.c, issue 16 item 1).
 *
 * What a user notices: the replicas of a zone-spread Deployment are split
 * over the zones within maxSkew with the remainder in the zone where its
 * pods are cheapest; replicas already running count; a spread narrowed
 * to two zones by node affinity uses only those; every plan passes the
 * independent checker against the request as sent; and on StatefulSet-
 * like groups (hostname anti-affinity plus a zone spread) the plan costs
 * less than tailor's without the candidate.
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

static const char *const zones[3] = { "test-1a", "test-1b", "test-1c" };

/* Types s.1, s.2, s.4, s.8 (n cpu, 2n GiB) on demand in the three zones,
 * per vCPU 0.05 in a and b and cheap_c in c. */
static void three_zone_types(Tailor__V1__SolveRequest *req, double cheap_c)
{
    static const int sz[] = { 1, 2, 4, 8 };
    for (int i = 0; i < 4; i++) {
        char n[16];
        snprintf(n, sizeof n, "s.%d", sz[i]);
        Tailor__V1__InstanceType *it = tk_type_raw(req, n, sz[i], 2 * sz[i]);
        tk_offer(it, zones[0], TK_OD, 0.05 * sz[i], true);
        tk_offer(it, zones[1], TK_OD, 0.05 * sz[i], true);
        tk_offer(it, zones[2], TK_OD, cheap_c * sz[i], true);
    }
    tk_pool(req, "default", 0);
}

/* n replicas of app (cpu_m, mem MiB) with a zone spread of maxSkew skew. */
static void replicas(Tailor__V1__SolveRequest *req, const char *app, int n, int64_t cpu_m, int64_t mem,
                     int skew)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", app, i);
        Tailor__V1__Pod *p = tk_pod(req, name, cpu_m, mem);
        tk_pod_label(p, "app", app);
        tk_pod_spread(p, K_ZONE, skew, false, "app", app);
    }
}

static Tailor__V1__SolveResponse *solve(const Tailor__V1__SolveRequest *req, bool no_pin)
{
    tlr_solve_opts o = { .strategy = TLR_SOLVE_TAILOR, .replica_id = "test", .no_lower_bound = true,
                         .no_zone_pin = no_pin };
    Tailor__V1__SolveResponse *s = NULL;
    assert_int_equal(tlr_solve(req, &o, &s), TLR_OK);
    assert_non_null(s);
    return s;
}

/* The zone of the node named name in req, or NULL. */
static const char *node_zone(const Tailor__V1__SolveRequest *req, const char *name)
{
    for (size_t i = 0; i < req->cluster->n_nodes; i++)
        if (!strcmp(req->cluster->nodes[i]->name, name))
            return req->cluster->nodes[i]->zone;
    return NULL;
}

/* Pending pods of app placed per zone (bindings and new claims); every
 * pod of app must be placed in a known zone. */
static void app_zone_counts(const Tailor__V1__SolveRequest *req, const Tailor__V1__SolveResponse *s,
                            const char *app, int cnt[3])
{
    cnt[0] = cnt[1] = cnt[2] = 0;
    size_t len = strlen(app);
    for (size_t i = 0; i < req->n_pending_pods; i++) {
        const Tailor__V1__Pod *p = req->pending_pods[i];
        if (strncmp(p->name, app, len) || p->name[len] != '-')
            continue;
        const char *z = NULL;
        int c = tk_claim_of(s, p->uid);
        if (c >= 0) {
            z = tk_claim_req(s->new_nodeclaims[c], K_ZONE);
        } else {
            const char *n = tk_bound_to(s, p->uid);
            if (!n)
                fail_msg("pod %s was not placed", p->name);
            z = node_zone(req, n);
        }
        int k = 0;
        while (k < 3 && (!z || strcmp(z, zones[k])))
            k++;
        if (k == 3)
            fail_msg("pod %s: zone %s is not one zone", p->name, z ? z : "(none)");
        cnt[k]++;
    }
}

static void expect_counts(const int got[3], const int want[3], const char *what)
{
    for (int k = 0; k < 3; k++)
        if (got[k] != want[k])
            fail_msg("%s: %s got %d pods, want %d (a/b/c got %d/%d/%d, want %d/%d/%d)", what, zones[k],
                     got[k], want[k], got[0], got[1], got[2], want[0], want[1], want[2]);
}

/* 10 replicas, maxSkew 1, zone c 20 % cheaper: 3/3/4, c takes the
 * remainder; cost what those 10 vCPUs cost at that split. */
static void test_split_remainder_to_cheaper_zone(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    three_zone_types(req, 0.04);
    replicas(req, "web", 10, 1000, 1024, 1);
    Tailor__V1__SolveResponse *s = solve(req, false);
    assert_int_equal(s->n_pod_errors, 0);
    int cnt[3];
    app_zone_counts(req, s, "web", cnt);
    expect_counts(cnt, (const int[3]){ 3, 3, 4 }, "maxSkew 1");
    assert_true(s->total_cost_per_hour < 6 * 0.05 + 4 * 0.04 + 1e-9);
    assert_int_equal(tk_check(req, s), 0);
    tlr_solve_response_free(s);
    tk_free(req);

    /* maxSkew 2, 8 replicas: c may run two ahead of the least filled
     * zone, 2/2/4 (c cannot reach 5: a legal admission order never lets
     * it run 3 ahead). */
    req = tk_new();
    three_zone_types(req, 0.04);
    replicas(req, "web", 8, 1000, 1024, 2);
    s = solve(req, false);
    assert_int_equal(s->n_pod_errors, 0);
    app_zone_counts(req, s, "web", cnt);
    expect_counts(cnt, (const int[3]){ 2, 2, 4 }, "maxSkew 2");
    assert_int_equal(tk_check(req, s), 0);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* Two replicas already run in zone a (on a full node): of 7 new ones, a
 * gets 1, b and c 3 each (3/3/3 in all). */
static void test_existing_pods_count(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    three_zone_types(req, 0.04);
    Tailor__V1__Node *n = tk_node(req, "old-a", zones[0], 2000, 4);
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "old-%d", i);
        tk_pod_label(tk_node_pod(n, name, 1000, 1024), "app", "web");
    }
    replicas(req, "web", 7, 1000, 1024, 1);
    Tailor__V1__SolveResponse *s = solve(req, false);
    assert_int_equal(s->n_pod_errors, 0);
    int cnt[3];
    app_zone_counts(req, s, "web", cnt);
    expect_counts(cnt, (const int[3]){ 1, 3, 3 }, "two running in a");
    assert_int_equal(tk_check(req, s), 0);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* Node affinity zone In [a, c]: the spread has two domains; 7 replicas go
 * 3 to a and 4 to the cheaper c, none to b. */
static void test_affinity_two_zones(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    three_zone_types(req, 0.04);
    replicas(req, "cache", 7, 1000, 1024, 1);
    char both[64];
    snprintf(both, sizeof both, "%s,%s", zones[0], zones[2]);
    for (size_t i = 0; i < req->n_pending_pods; i++)
        tk_pod_affinity(req->pending_pods[i], K_ZONE, TK_IN, both);
    Tailor__V1__SolveResponse *s = solve(req, false);
    assert_int_equal(s->n_pod_errors, 0);
    int cnt[3];
    app_zone_counts(req, s, "cache", cnt);
    expect_counts(cnt, (const int[3]){ 3, 0, 4 }, "zone In [a, c]");
    assert_int_equal(tk_check(req, s), 0);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* One replica no node can take (64 cpu) in a group of 7: it gets a
 * PodError, the six others are still split within the skew, and the plan
 * passes the checker. */
static void test_unplaceable_replica(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    three_zone_types(req, 0.04);
    replicas(req, "web", 6, 1000, 1024, 1);
    Tailor__V1__Pod *big = tk_pod(req, "huge-0", 64000, 1024);
    tk_pod_label(big, "app", "web");
    tk_pod_spread(big, K_ZONE, 1, false, "app", "web");
    Tailor__V1__SolveResponse *s = solve(req, false);
    assert_int_equal(s->n_pod_errors, 1);
    assert_non_null(tk_error_of(s, big->uid));
    int cnt[3];
    app_zone_counts(req, s, "web", cnt);
    expect_counts(cnt, (const int[3]){ 2, 2, 2 }, "six placeable");
    assert_int_equal(tk_check(req, s), 0);
    tlr_solve_response_free(s);
    tk_free(req);
}

/* StatefulSet-like groups (each replica its own labels, one per node by
 * hostname anti-affinity, zone spread maxSkew 1) beside a Deployment
 * without topology: the pre-assigned plan costs less than tailor's
 * without it, and both pass the checker on the request as sent. */
static void statefulset(Tailor__V1__SolveRequest *req, const char *app, int n, int64_t cpu_m, int64_t mem)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", app, i);
        Tailor__V1__Pod *p = tk_pod(req, name, cpu_m, mem);
        tk_pod_label(p, "app", app);
        tk_pod_label(p, "statefulset.kubernetes.io/pod-name", name);
        tk_pod_spread(p, K_ZONE, 1, false, "app", app);
        tk_pod_podaff(p, true, K_HOST, "app", app);
    }
}

static void test_cheaper_than_without(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    three_zone_types(req, 0.045);
    statefulset(req, "kafka", 5, 3000, 6144);
    statefulset(req, "zk", 4, 500, 1024);
    statefulset(req, "pg", 4, 2000, 4096);
    replicas(req, "web", 20, 500, 512, 1);
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof name, "batch-%d", i);
        tk_pod(req, name, 1500, 1024);
    }
    Tailor__V1__SolveResponse *with = solve(req, false);
    Tailor__V1__SolveResponse *without = solve(req, true);
    assert_int_equal(with->n_pod_errors, 0);
    assert_int_equal(without->n_pod_errors, 0);
    assert_int_equal(tk_check(req, with), 0);
    assert_int_equal(tk_check(req, without), 0);
    if (!(with->total_cost_per_hour < without->total_cost_per_hour - 1e-9))
        fail_msg("with zone pre-assignment %.4f $/h, without %.4f", with->total_cost_per_hour,
                 without->total_cost_per_hour);
    tlr_solve_response_free(with);
    tlr_solve_response_free(without);
    tk_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_remainder_to_cheaper_zone),
        cmocka_unit_test(test_existing_pods_count),
        cmocka_unit_test(test_affinity_two_zones),
        cmocka_unit_test(test_unplaceable_replica),
        cmocka_unit_test(test_cheaper_than_without),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
