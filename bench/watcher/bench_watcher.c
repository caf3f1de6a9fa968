/* bench_watcher.c - how much memory the watcher's cache needs per pod.
 *
 * Loads N synthetic bound pods (default 100,000; realistic metadata: a
 * namespace, generated name and uid, app and pod-template-hash labels, a
 * ReplicaSet owner, cpu/memory requests, conditions) on N/30 nodes plus
 * 50 unschedulable pods, through watcher_cache_apply() exactly as the
 * informer events reach it, then prints:
 *
 *   heap bytes per pod   malloc'd bytes held by the cache / pods (mallinfo2)
 *   RSS                  the process' resident set after loading
 *   load and batch time  applying every event; building + packing one
 *                        full PendingBatch (every node with its pods)
 *   delta batches        the next windows' batches, by reference from the
 *                        previous one (as the service publishes them):
 *                        the last window's 50 pending pods now bound, 50
 *                        new pending pods, and 0, 0.1% and 1% of the bound
 *                        pods replaced (deleted + a new pod on the same
 *                        node, spread over the nodes) - bytes, build+pack
 *                        ms, nodes carried, and the ratio to the full batch
 *
 * and the ratio of each to its target (1 KB per pod; 150 MB RSS at 100k
 * pods; a 50-pending-pod batch well under 1 MiB).  Usage: bench-watcher
 * [PODS]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "snapshot.h"
#include "tlr_time.h"

#define POD_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD
#define NODE_K TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static void apply(watcher_cache *c, Tailor__V1__ClusterKind kind, tlr_kube_event_type t, const char *json)
{
    json_object *o = json ? json_tokener_parse(json) : NULL;
    if (json && !o) {
        fprintf(stderr, "bench-watcher: bad synthetic JSON: %s\n", json);
        exit(1);
    }
    Tailor__V1__ClusterChange chg;
    bool became;
    if (watcher_cache_apply(c, kind, t, o, &chg, &became)) {
        fprintf(stderr, "bench-watcher: the cache refused: %s\n", json ? json : "(no object)");
        exit(1);
    }
    json_object_put(o);
}

static void hex(unsigned long long x, char *out, int n)
{
    static const char d[] = "0123456789abcdef";
    for (int i = 0; i < n; i++, x = x * 6364136223846793005ULL + 1442695040888963407ULL)
        out[i] = d[(x >> 33) & 15];
    out[n] = '\0';
}

/* Pod i; bound: on node `node` (-1: i % nnodes). */
static void pod_json_on(char *buf, size_t len, int i, int nnodes, bool bound, int node_ix)
{
    char hash[11], sfx[6], uid[33];
    int app = i % 400;
    hex((unsigned long long)app * 7919, hash, 10);
    hex((unsigned long long)i * 104729 + 17, sfx, 5);
    hex((unsigned long long)i * 15485863 + 3, uid, 32);
    char node[64] = "";
    if (bound)
        snprintf(node, sizeof(node), "\"nodeName\":\"ip-10-0-%d.ec2.internal\",",
                 node_ix >= 0 ? node_ix : i % nnodes);
    snprintf(buf, len,
             "{\"metadata\":{\"name\":\"app-%d-%s-%s\",\"namespace\":\"team-%d\",\"uid\":\"%.8s-%.4s-%.4s-%.4s-%.12s\","
             "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-11-30T10:00:00Z\","
             "\"labels\":{\"app\":\"app-%d\",\"pod-template-hash\":\"%s\"},"
             "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"app-%d-%s\","
             "\"uid\":\"%.8s-0000-4000-8000-%.12s\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
             "\"spec\":{%s\"containers\":[{\"name\":\"main\",\"image\":\"registry.example/app:1\","
             "\"resources\":{\"requests\":{\"cpu\":\"%dm\",\"memory\":\"%dMi\"},\"limits\":{\"memory\":\"%dMi\"}}}],"
             "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
             "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]},"
             "\"status\":{\"phase\":\"%s\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"%s\"%s},"
             "{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             app, hash, sfx, app % 20, uid, uid + 8, uid + 12, uid + 16, uid + 20, 1000 + i, app, hash, app,
             hash, uid, uid + 20, node, 100 + (i % 16) * 125, 128 + (i % 8) * 256, 256 + (i % 8) * 256,
             bound ? "Running" : "Pending", bound ? "True" : "False", bound ? "" : ",\"reason\":\"Unschedulable\"",
             bound ? "True" : "False");
}

static void pod_json(char *buf, size_t len, int i, int nnodes, bool bound)
{
    pod_json_on(buf, len, i, nnodes, bound, -1);
}

typedef struct batch_stats {
    size_t bytes, nodes, pending;
    int64_t ms;
    uint64_t gen, base;
} batch_stats;

/* Build and pack one batch from base as main.c does; its figures. */
static void one_batch(watcher_cache *c, uint64_t seq, uint64_t base, batch_stats *st)
{
    int64_t t0 = tlr_mono_ms();
    watcher_snapshot *s;
    watcher_batch_window w = { 0, 0 };
    watcher_snapshot_for_batch(c, &w, seq, base, tlr_wall_ms(), &s);
    Tailor__V1__PendingBatch *b = watcher_snapshot_batch(s);
    size_t packed = tailor__v1__pending_batch__get_packed_size(b);
    uint8_t *out = malloc(packed);
    tailor__v1__pending_batch__pack(b, out);
    st->ms = tlr_mono_ms() - t0;
    st->bytes = packed;
    st->nodes = b->cluster->by_ref->n_nodes;
    st->pending = b->n_pending_pods;
    st->gen = b->cluster->generation;
    st->base = b->cluster->by_ref->base_generation;
    free(out);
    watcher_snapshot_free(s);
}

int main(int argc, char **argv)
{
    int npods = argc > 1 ? atoi(argv[1]) : 100000;
    if (npods < 30) {
        fprintf(stderr, "usage: bench-watcher [PODS >= 30]\n");
        return 2;
    }
    int nnodes = npods / 30, npending = 50;
    char buf[4096];
    long rss0 = rss_kib();
    struct mallinfo2 m0 = mallinfo2();
    watcher_cache *c;
    watcher_cache_create(&(watcher_cache_opts){ .epoch_ms = tlr_wall_ms() }, &c);
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++)
        apply(c, k, TLR_KUBE_RELIST_START, NULL);
    for (int n = 0; n < nnodes; n++) {
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"ip-10-0-%d.ec2.internal\",\"uid\":\"node-%d\",\"labels\":{"
                 "\"karpenter.sh/nodepool\":\"general\",\"node.kubernetes.io/instance-type\":\"m5.2xlarge\","
                 "\"topology.kubernetes.io/zone\":\"us-east-1a\",\"karpenter.sh/capacity-type\":\"on-demand\"}},"
                 "\"status\":{\"allocatable\":{\"cpu\":\"7910m\",\"memory\":\"29Gi\",\"pods\":\"58\"},"
                 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", n, n);
        apply(c, NODE_K, TLR_KUBE_ADDED, buf);
    }
    struct mallinfo2 m1 = mallinfo2();
    int64_t t0 = tlr_mono_ms();
    for (int i = 0; i < npods; i++) {
        pod_json(buf, sizeof(buf), i, nnodes, true);
        apply(c, POD_K, TLR_KUBE_ADDED, buf);
    }
    for (int i = 0; i < npending; i++) {
        pod_json(buf, sizeof(buf), npods + i, nnodes, false);
        apply(c, POD_K, TLR_KUBE_ADDED, buf);
    }
    int64_t t1 = tlr_mono_ms();
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++)
        apply(c, k, TLR_KUBE_RELIST_DONE, NULL);
    malloc_trim(0);
    struct mallinfo2 m2 = mallinfo2();
    long rss1 = rss_kib();

    int64_t t2 = tlr_mono_ms();
    watcher_snapshot *s;
    watcher_batch_window w = { 0, 0 };
    watcher_snapshot_for_batch(c, &w, 1, 0, tlr_wall_ms(), &s);     /* no base: whole */
    Tailor__V1__PendingBatch *b = watcher_snapshot_batch(s);
    size_t packed = tailor__v1__pending_batch__get_packed_size(b);
    uint8_t *out = malloc(packed);
    tailor__v1__pending_batch__pack(b, out);
    int64_t t3 = tlr_mono_ms();
    size_t on_nodes = 0;
    for (size_t i = 0; i < b->cluster->by_ref->n_nodes; i++)
        on_nodes += b->cluster->by_ref->nodes[i]->base.n_unknown_fields;   /* wire-form pods */
    long rss2 = rss_kib();
    size_t pending = b->n_pending_pods;
    free(out);
    watcher_snapshot_free(s);

    /* The next windows, each a delta from the previous batch. */
    batch_stats prev;
    one_batch(c, 2, 0, &prev);     /* the whole state by reference: the base */
    int next_pod = npods + npending, bound_ix = npods;
    static const int churn_permille[] = { 0, 1, 10 };
    batch_stats delta[3];
    int churned[3];
    for (int r = 0; r < 3; r++) {
        /* last window's pending pods were scheduled; 50 new ones arrive */
        for (int i = 0; i < npending; i++, bound_ix++) {
            pod_json_on(buf, sizeof(buf), bound_ix, nnodes, true, (bound_ix * 13) % nnodes);
            apply(c, POD_K, TLR_KUBE_MODIFIED, buf);
        }
        bound_ix = next_pod;
        for (int i = 0; i < npending; i++) {
            pod_json(buf, sizeof(buf), next_pod++, nnodes, false);
            apply(c, POD_K, TLR_KUBE_ADDED, buf);
        }
        churned[r] = npods * churn_permille[r] / 1000;
        for (int j = 0; j < churned[r]; j++) {
            int i = (int)(((long long)(j + r * (npods / 3)) * 7919) % npods);   /* spread, distinct */
            pod_json(buf, sizeof(buf), i, nnodes, true);
            apply(c, POD_K, TLR_KUBE_DELETED, buf);
            pod_json_on(buf, sizeof(buf), 2000000 + r * npods + j, nnodes, true, i % nnodes);
            apply(c, POD_K, TLR_KUBE_ADDED, buf);
        }
        one_batch(c, 3 + (uint64_t)r, prev.gen, &delta[r]);
        prev = delta[r];
    }

    double per_pod = (double)(m2.uordblks - m1.uordblks) / (npods + npending);
    double rss_mb = rss1 / 1024.0;
    printf("bench-watcher: %d bound pods on %d nodes + %d pending\n", npods, nnodes, npending);
    printf("  cache: pods %zu (pending %zu), nodes %zu\n", watcher_cache_count(c, POD_K),
           watcher_cache_pending(c), watcher_cache_count(c, NODE_K));
    printf("  heap held by the cache for pods: %.1f MiB = %.0f bytes/pod  (target 1024: %.2fx of target)\n",
           (double)(m2.uordblks - m1.uordblks) / (1 << 20), per_pod, per_pod / 1024.0);
    printf("  heap held for nodes: %.0f bytes/node\n", (double)(m1.uordblks - m0.uordblks) / nnodes);
    printf("  RSS: %.1f MiB at start, %.1f MiB loaded (target 150 MB at 100k pods: %.2fx of target,"
           " scaled to this N)\n", rss0 / 1024.0, rss_mb,
           rss_mb / (150.0 * 1e6 / (1 << 20) * npods / 100000.0));
    printf("  load: %lld ms for %d events = %.1f us/event (JSON parse + convert + pack)\n",
           (long long)(t1 - t0), npods + npending, 1000.0 * (double)(t1 - t0) / (npods + npending));
    printf("  one full PendingBatch: %lld ms to build and pack, %.1f MiB on the wire, %zu pods on nodes,"
           " %zu pending; peak RSS during it %.1f MiB\n", (long long)(t3 - t2), packed / 1048576.0,
           on_nodes, pending, rss2 / 1024.0);
    for (int r = 0; r < 3; r++)
        printf("  delta PendingBatch, 50 new pending + %d bound pods replaced (%.1f%%): %lld ms to build and"
               " pack, %.3f MiB on the wire (%zu bytes), %zu of %d nodes, %zu pending, base %llu;"
               " %.4f of the full batch's bytes, %.3f of its time\n",
               churned[r], churn_permille[r] / 10.0, (long long)delta[r].ms, delta[r].bytes / 1048576.0,
               delta[r].bytes, delta[r].nodes, nnodes, delta[r].pending, (unsigned long long)delta[r].base,
               (double)delta[r].bytes / (double)packed,
               t3 > t2 ? (double)delta[r].ms / (double)(t3 - t2) : 0.0);
    watcher_cache_free(c);
    return 0;
}
