/* replay_test.c - plans the scheduler keeps (replay.c, solve.c; issue 16
 * item 3).
 *
 * What a user notices: when a plan's nodes become schedulable together,
 * kube-scheduler binds the pending pods in its queue order to the node
 * its default scores (LeastAllocated + BalancedAllocation) prefer, and a
 * pod whose planned room the scheduler gave away waits for another node.
 * The judge here is this file's own small scheduler (queue order, fit on
 * cpu and memory, DoNotSchedule zone spreads over the zones that have
 * nodes, the two resource scores, first of equal ones), run over the
 * nodes of the plan as launched (each claim's first option, in its zone):
 * on the 200-pod burst and on mixed zone-spread workloads, every
 * pod tailor plans is bound (the plan holds), a plan's second stage
 * (tailor.sh/plan-stage=2) released after the first has bound what it
 * can; the same request planned without the replay leaves pods out in the
 * burst (the case is real), and every plan passes the independent plan
 * checker.
 */
#include <math.h>
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

/* An m5-like ladder (n cpu, 4n GiB, 0.048/vCPU) and a c5-like one (n
 * cpu, 2n GiB, 0.0425/vCPU), on demand in three zones. */
static void catalog(Tailor__V1__SolveRequest *req)
{
    static const int sz[] = { 2, 4, 8, 16 };
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < 4; i++) {
            char n[16];
            snprintf(n, sizeof n, "%s.%d", f ? "c" : "m", sz[i]);
            Tailor__V1__InstanceType *it = tk_type_raw(req, n, sz[i], (f ? 2 : 4) * sz[i]);
            for (int z = 0; z < 3; z++)
                tk_offer(it, zones[z], TK_OD, (f ? 0.0425 : 0.048) * sz[i], true);
        }
    tk_pool(req, "default", 0);
}

static int64_t created = 1000;

static void deployment(Tailor__V1__SolveRequest *req, const char *app, int n, int64_t cpu, int64_t mem_mib,
                       int spread)
{
    created += 1000;
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%03d", app, i);
        Tailor__V1__Pod *p = tk_pod(req, name, cpu, mem_mib);
        p->creation_unix_ms = created;
        tk_pod_label(p, "app", app);
        if (spread)
            tk_pod_spread(p, K_ZONE, spread, false, "app", app);
    }
}

/* The burst of planhold_it.sh. */
static void burst(Tailor__V1__SolveRequest *req)
{
    deployment(req, "web", 60, 500, 1024, 1);
    deployment(req, "api", 50, 1000, 2048, 0);
    deployment(req, "worker", 30, 2000, 4096, 0);
    deployment(req, "cache", 30, 250, 3072, 0);
    deployment(req, "batch", 30, 100, 128, 0);
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void mixed(Tailor__V1__SolveRequest *req, uint64_t seed)
{
    for (int d = 0; d < 10; d++) {
        char app[16];
        snprintf(app, sizeof app, "app-%d", d);
        int n = 4 + (int)(rng(&seed) % 30);
        int64_t cpu = 100 * (1 + (int64_t)(rng(&seed) % 20)), mem = 128 * (1 + (int64_t)(rng(&seed) % 32));
        deployment(req, app, n, cpu, mem, d < 3 ? 1 + (int)(rng(&seed) % 2) : 0);
    }
}

/* ---- the judge: a scheduler of its own --------------------------------- */

typedef struct jnode {
    int64_t cpu, mem, ucpu, umem;
    int zone;
} jnode;

static const Tailor__V1__InstanceType *find_type(const Tailor__V1__SolveRequest *req, const char *name)
{
    const Tailor__V1__Catalog *c = req->catalogs[0]->catalog;
    for (size_t i = 0; i < c->n_instance_types; i++)
        if (!strcmp(c->instance_types[i]->name, name))
            return c->instance_types[i];
    return NULL;
}

static const char *label(const Tailor__V1__Pod *p, const char *k)
{
    for (size_t i = 0; i < p->n_labels; i++)
        if (!strcmp(p->labels[i]->key, k))
            return p->labels[i]->value;
    return "";
}

static int pod_cmp(const void *a, const void *b)
{
    const Tailor__V1__Pod *x = *(Tailor__V1__Pod *const *)a, *y = *(Tailor__V1__Pod *const *)b;
    if (x->creation_unix_ms != y->creation_unix_ms)
        return x->creation_unix_ms < y->creation_unix_ms ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int64_t score(const jnode *n, const Tailor__V1__Pod *p)
{
    int64_t uc = n->ucpu + p->requests->cpu_millis, um = n->umem + p->requests->memory_bytes;
    int64_t least = ((uc > n->cpu ? 0 : (n->cpu - uc) * 100 / n->cpu) +
                     (um > n->mem ? 0 : (n->mem - um) * 100 / n->mem)) / 2;
    double fc = fmin(1, (double)uc / (double)n->cpu), fm = fmin(1, (double)um / (double)n->mem);
    return least + (int64_t)((1 - fabs(fc - fm) / 2) * 100);
}

static bool second_stage(const Tailor__V1__NodeClaim *nc)
{
    for (size_t i = 0; i < nc->n_annotations; i++)
        if (!strcmp(nc->annotations[i]->key, "tailor.sh/plan-stage"))
            return !strcmp(nc->annotations[i]->value, "2");
    return false;
}

/* Pods the scheduler leaves pending on plan s's nodes: the first stage's
 * nodes released together, then, once it has bound what it can, the
 * second stage's (plangate.h). */
static int judge(const Tailor__V1__SolveRequest *req, const Tailor__V1__SolveResponse *s)
{
    size_t nn = s->n_new_nodeclaims;
    jnode *nodes = calloc(nn + 1, sizeof(*nodes));
    int *stage = calloc(nn + 1, sizeof(int));
    for (size_t i = 0; i < nn; i++) {
        const Tailor__V1__NodeClaim *nc = s->new_nodeclaims[i];
        const Tailor__V1__InstanceType *t = find_type(req, nc->instance_type_options[0]->name);
        assert_non_null(t);
        nodes[i].cpu = t->allocatable->cpu_millis;
        nodes[i].mem = t->allocatable->memory_bytes;
        nodes[i].zone = -1;
        stage[i] = second_stage(nc) ? 2 : 1;
        for (size_t j = 0; j < nc->n_requirements; j++)
            if (!strcmp(nc->requirements[j]->key, K_ZONE))
                for (int z = 0; z < 3 && nodes[i].zone < 0; z++)
                    if (!strcmp(nc->requirements[j]->values[0], zones[z]))
                        nodes[i].zone = z;
        assert_true(nodes[i].zone >= 0);
    }
    Tailor__V1__Pod **q = calloc(req->n_pending_pods + 1, sizeof(*q));
    memcpy(q, req->pending_pods, req->n_pending_pods * sizeof(*q));
    qsort(q, req->n_pending_pods, sizeof(*q), pod_cmp);
    int *placed_in = malloc((req->n_pending_pods + 1) * sizeof(int));
    for (size_t i = 0; i < req->n_pending_pods; i++)
        placed_in[i] = -1;
    for (int st = 1; st <= 2; st++)
        for (size_t i = 0; i < req->n_pending_pods; i++) {
            const Tailor__V1__Pod *p = q[i];
            if (placed_in[i] >= 0)
                continue;
            /* matching pods per zone, for its spread, over the zones with
             * a released node */
            int cnt[3] = { 0 }, has[3] = { 0 };
            for (size_t j = 0; j < nn; j++)
                if (stage[j] <= st)
                    has[nodes[j].zone] = 1;
            for (size_t j = 0; j < req->n_pending_pods; j++)
                if (placed_in[j] >= 0 && !strcmp(label(q[j], "app"), label(p, "app")))
                    cnt[nodes[placed_in[j]].zone]++;
            int minc = 1 << 30;
            for (int z = 0; z < 3; z++)
                if (has[z] && cnt[z] < minc)
                    minc = cnt[z];
            int best = -1;
            int64_t bs = -1;
            for (size_t j = 0; j < nn; j++) {
                jnode *n = &nodes[j];
                if (stage[j] > st || n->ucpu + p->requests->cpu_millis > n->cpu ||
                    n->umem + p->requests->memory_bytes > n->mem)
                    continue;
                if (p->n_topology_spread_constraints &&
                    cnt[n->zone] + 1 - minc > p->topology_spread_constraints[0]->max_skew)
                    continue;
                int64_t sc = score(n, p);
                if (sc > bs) {
                    bs = sc;
                    best = (int)j;
                }
            }
            if (best < 0)
                continue;
            placed_in[i] = best;
            nodes[best].ucpu += p->requests->cpu_millis;
            nodes[best].umem += p->requests->memory_bytes;
        }
    int left = 0;
    for (size_t i = 0; i < req->n_pending_pods; i++)
        left += placed_in[i] < 0;
    free(placed_in);
    free(q);
    free(stage);
    free(nodes);
    return left;
}

/* Claims of the plan's second stage. */
static size_t stage2(const Tailor__V1__SolveResponse *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++)
        n += second_stage(s->new_nodeclaims[i]);
    return n;
}

static Tailor__V1__SolveResponse *solve(const Tailor__V1__SolveRequest *req, bool no_replay)
{
    tlr_solve_opts o = { .strategy = TLR_SOLVE_TAILOR, .replica_id = "test", .no_lower_bound = true,
                         .replay = !no_replay };
    Tailor__V1__SolveResponse *s = NULL;
    assert_int_equal(tlr_solve(req, &o, &s), TLR_OK);
    assert_non_null(s);
    assert_int_equal(s->n_pod_errors, 0);
    assert_int_equal(tk_check(req, s), 0);
    return s;
}

/* Every pod planned once: on one claim, or bound to an existing node. */
static void planned_once(const Tailor__V1__SolveRequest *req, const Tailor__V1__SolveResponse *s)
{
    size_t total = s->n_bindings;
    for (size_t i = 0; i < s->n_new_nodeclaims; i++) {
        assert_true(s->new_nodeclaims[i]->n_planned_pod_uids > 0);
        total += s->new_nodeclaims[i]->n_planned_pod_uids;
    }
    assert_int_equal(total, req->n_pending_pods);
}

static void test_burst_holds(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    catalog(req);
    burst(req);
    Tailor__V1__SolveResponse *packed = solve(req, true);
    Tailor__V1__SolveResponse *held = solve(req, false);
    int left_packed = judge(req, packed), left_held = judge(req, held);
    print_message("burst: packed $%.4f/h (%zu nodes, the scheduler leaves %d pods), replayed $%.4f/h "
                  "(%zu nodes, %zu of them a second stage, leaves %d)\n", packed->total_cost_per_hour,
                  packed->n_new_nodeclaims, left_packed, held->total_cost_per_hour, held->n_new_nodeclaims,
                  stage2(held), left_held);
    if (left_packed == 0)
        fail_msg("the case needs a packing the scheduler does not keep");
    assert_int_equal(left_held, 0);
    planned_once(req, held);
    tlr_solve_response_free(packed);
    tlr_solve_response_free(held);
    tk_free(req);
}

static void test_mixed_hold(void **state)
{
    (void)state;
    int staged = 0;   /* seeds whose plan has a second stage */
    for (uint64_t seed = 1; seed <= 10; seed++) {
        Tailor__V1__SolveRequest *req = tk_new();
        catalog(req);
        mixed(req, seed * 0x9e3779b97f4a7c15ULL);
        Tailor__V1__SolveResponse *held = solve(req, false);
        int left = judge(req, held);
        if (left)
            fail_msg("seed %d: the scheduler leaves %d pods of the replayed plan", (int)seed, left);
        planned_once(req, held);
        staged += stage2(held) > 0;
        tlr_solve_response_free(held);
        tk_free(req);
    }
    print_message("mixed: %d of 10 plans with a second stage\n", staged);
    assert_true(staged > 0);   /* the second stage is exercised, and holds */
}

/* A plan without a DoNotSchedule spread is not gated, so not replayed:
 * the answer is the packing's. */
static void test_ungated_unchanged(void **state)
{
    (void)state;
    Tailor__V1__SolveRequest *req = tk_new();
    catalog(req);
    deployment(req, "api", 50, 1000, 2048, 0);
    deployment(req, "cache", 30, 250, 3072, 0);
    Tailor__V1__SolveResponse *a = solve(req, true), *b = solve(req, false);
    assert_true(fabs(a->total_cost_per_hour - b->total_cost_per_hour) < 1e-9);
    assert_int_equal(a->n_new_nodeclaims, b->n_new_nodeclaims);
    tlr_solve_response_free(a);
    tlr_solve_response_free(b);
    tk_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_holds),
        cmocka_unit_test(test_mixed_hold),
        cmocka_unit_test(test_ungated_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
