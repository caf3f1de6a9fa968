/* replay.c - where kube-scheduler will put a plan's pods.
 *
 * Why.  The engine packs pods onto the nodes it buys; the scheduler then
 * binds them by its own rules and follows no plan.  When a plan's nodes
 * become schedulable together (the launcher's plan gate, plangate.h),
 * kube-scheduler takes the pending pods in its queue order and gives each
 * the feasible node with the best score; its default profile scores
 * resources LeastAllocated, so it spreads the first pods over every node
 * and can leave a big pod of the plan without the room it was bought for.
 * That pod then waits for a second provisioning round, and the cluster
 * costs more than the plan said (issue 16: 1-5 % on a 200-pod burst).
 *
 * How.  sv_replay_all places a plan's pods as the scheduler would, on a
 * model whose bins are the existing capacity plus the plan's claims as
 * claims in flight (solve.c builds it): pods in queue order (priority,
 * then creation time, then namespace and name, as kube-scheduler's active
 * queue and kubesim order them), each on the feasible bin with the
 * highest score, the first of equal ones.  Feasible is what the
 * scheduler's filters ask: resources, ports, taints, the required node
 * and pod (anti-)affinity terms and DoNotSchedule spreads (the class's
 * most relaxed level: no preferences, no ScheduleAnyway spread).  The
 * score is the default profile's two resource scores, LeastAllocated and
 * BalancedAllocation over cpu and memory, each 0-100 with weight 1;
 * kube-scheduler's other default scores are the same on the plan's
 * nodes (taints, images) or are not modelled (the soft spreads of
 * PodTopologySpread, its system default spreading, preferred
 * affinities), and it breaks ties at random, so this is a prediction,
 * not a promise.  solve.c buys for the pods the replay leaves without
 * room and replays again (see the comment at tlr_solve).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve_internal.h"
#include "tlr_alloc.h"

/* cpu and memory only, as the default NodeResourcesFit and
 * NodeResourcesBalancedAllocation score them */
static const int score_dims[2] = { SV_DIM_CPU, SV_DIM_MEM };

/* LeastAllocated + BalancedAllocation of one pod of class c on bin x. */
static int64_t replay_score(const sv_bin *x, const sv_class *c)
{
    int64_t least = 0;
    int nleast = 0, nf = 0;
    double f[2];
    for (int i = 0; i < 2; i++) {
        int d = score_dims[i];
        int64_t a = x->alloc.v[d];
        if (a <= 0)
            continue;
        int64_t used = a - x->free.v[d] + c->req.v[d];
        least += used > a ? 0 : (int64_t)((__int128)(a - used) * 100 / a);
        nleast++;
        double fr = (double)used / (double)a;
        f[nf++] = fr > 1 ? 1 : fr;
    }
    if (nleast)
        least /= nleast;
    double std = nf == 2 ? fabs(f[0] - f[1]) / 2 : 0;
    return least + (int64_t)((1 - std) * 100);
}

static int queue_cmp(const void *a, const void *b, void *arg)
{
    const sv_model *m = arg;
    const Tailor__V1__Pod *x = m->pods[*(const int *)a].pod, *y = m->pods[*(const int *)b].pod;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->creation_unix_ms != y->creation_unix_ms)
        return x->creation_unix_ms < y->creation_unix_ms ? -1 : 1;
    int c = strcmp(x->namespace_ ? x->namespace_ : "", y->namespace_ ? y->namespace_ : "");
    return c ? c : strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

int sv_replay_all(sv_model *m)
{
    sv_place_begin(m);
    int *order = tlr_arena_alloc(m->ar, (size_t)(m->npods + 1) * sizeof(int));
    int n = 0;
    for (int i = 0; i < m->npods; i++)
        if (m->pods[i].bin == SV_NONE && !m->classes[m->pods[i].cls].bad)
            order[n++] = i;
    qsort_r(order, (size_t)n, sizeof(int), queue_cmp, m);
    int left = 0;
    for (int k = 0; k < n; k++) {
        int pi = order[k];
        if (m->pods[pi].bin != SV_NONE)
            continue;
        int c = m->pods[pi].cls;
        sv_class *cl = &m->classes[c];
        int lv = cl->nlevels - 1;   /* required terms only (compile.c, class_levels) */
        int best = SV_NONE;
        int64_t best_score = -1;
        for (int b = 0; b < m->nexisting; b++) {
            if (!sv_bin_quick_ok(m, b, cl))
                continue;
            int place;
            if (sv_room_place(m, b, c, lv, 1, &place) < 1)
                continue;
            int64_t s = replay_score(&m->bins[b], cl);
            if (s > best_score) {
                best = b;
                best_score = s;
            }
        }
        if (best == SV_NONE) {
            left++;
            continue;
        }
        sv_place_pods(m, best, c, lv, &pi, 1, SV_NONE);
        if ((k & 255) == 255 && sv_timed_out(m))
            return left + (n - k - 1);
    }
    return left;
}
