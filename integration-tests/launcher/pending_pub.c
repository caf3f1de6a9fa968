/* pending_pub.c - a stand-in watcher for the launcher's end-to-end test.
 *
 *   pending_pub PUB_URL FILE [COUNT] [INTERVAL_MS]
 *
 * Reads FILE (YAML or `kubectl get -o json` output) holding NodePools,
 * EC2NodeClasses and Pods, and publishes COUNT (default 3) PendingBatch
 * messages on topic "pending" every INTERVAL_MS (default 1000): every
 * unbound Pod as pending, the pools and classes as cluster state, synced.
 * Waits up to 10 s for a subscriber first.  Exit 0 when all were sent.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tailor/v1/watcher.pb-c.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"
#include "tlr_pubsub.h"
#include "tlr_time.h"
#include "../it_tls.h"

#define PUSH(arr, n, x) \
    do { (arr) = tlr_realloc((arr), ((n) + 1) * sizeof(*(arr))); (arr)[(n)++] = (x); } while (0)

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void batch_clear(Tailor__V1__PendingBatch *b, Tailor__V1__ClusterState *cs)
{
    for (size_t i = 0; i < b->n_pending_pods; i++)
        tlr_kubeobj_free(b->pending_pods[i]);
    for (size_t i = 0; i < cs->n_nodepools; i++)
        tlr_kubeobj_free(cs->nodepools[i]);
    for (size_t i = 0; i < cs->n_node_classes; i++)
        tlr_kubeobj_free(cs->node_classes[i]);
    free(b->pending_pods);
    free(cs->nodepools);
    free(cs->node_classes);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pending_pub PUB_URL FILE [COUNT] [INTERVAL_MS]\n");
        return 2;
    }
    int count = argc > 3 ? atoi(argv[3]) : 3, every = argc > 4 ? atoi(argv[4]) : 1000;
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    static char buf[16 << 20];
    size_t len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    json_object *objs = NULL;
    char err[512];
    if (tlr_kubeobj_decode(buf, len, sizeof(buf), &objs, err, sizeof(err))) {
        fprintf(stderr, "pending_pub: %s: %s\n", argv[2], err);
        return 1;
    }
    Tailor__V1__PendingBatch b = TAILOR__V1__PENDING_BATCH__INIT;
    Tailor__V1__ClusterState cs = TAILOR__V1__CLUSTER_STATE__INIT;
    cs.synced = 1;
    b.cluster = &cs;
    for (size_t i = 0; i < json_object_array_length(objs); i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        const char *kind = tlr_json_str(o, "kind");
        int rc = TLR_OK;
        if (kind && !strcmp(kind, "NodePool")) {
            Tailor__V1__NodePool *p = NULL;
            if (!(rc = tlr_kubeobj_nodepool(o, NULL, &p, err, sizeof(err))))
                PUSH(cs.nodepools, cs.n_nodepools, p);
        } else if (kind && !strcmp(kind, "EC2NodeClass")) {
            Tailor__V1__NodeClass *c = NULL;
            if (!(rc = tlr_kubeobj_nodeclass(o, NULL, &c, err, sizeof(err))))
                PUSH(cs.node_classes, cs.n_node_classes, c);
        } else if (kind && !strcmp(kind, "Pod")) {
            Tailor__V1__Pod *p = NULL;
            if (!(rc = tlr_kubeobj_pod(o, NULL, &p, err, sizeof(err)))) {
                if (p->node_name[0] || p->is_daemonset)
                    tlr_kubeobj_free(p);
                else
                    PUSH(b.pending_pods, b.n_pending_pods, p);
            }
        }
        if (rc) {
            fprintf(stderr, "pending_pub: %s: %s\n", argv[2], err);
            batch_clear(&b, &cs);
            json_object_put(objs);
            return 1;
        }
    }
    tlr_pub *pub = NULL;
    int rc = 0;
    tlr_tls *tls = NULL;
    if (it_tls_from_env(NULL, &tls) ||
        tlr_pub_open(&(tlr_pub_opts){ .url = argv[1], .sender = "pending_pub", .tls = tls }, &pub)) {
        fprintf(stderr, "pending_pub: cannot listen on %s\n", argv[1]);
        rc = 1;
        count = 0;
    }
    for (int i = 0; pub && i < 100 && tlr_pub_peers(pub) == 0; i++)
        sleep_ms(100);
    sleep_ms(300);   /* let the subscription settle */
    for (int i = 0; i < count; i++) {
        char id[64];
        snprintf(id, sizeof(id), "pub-%d", i + 1);
        b.batch_id = id;
        b.sequence = (uint64_t)i + 1;
        b.window_end_unix_ms = tlr_wall_ms();
        cs.taken_unix_ms = b.window_end_unix_ms;
        if (tlr_pub_send(pub, "pending", &b.base)) {
            fprintf(stderr, "pending_pub: send failed\n");
            rc = 1;
            break;
        }
        fprintf(stderr, "pending_pub: sent %s with %zu pods (%zu subscribers)\n", id,
                b.n_pending_pods, tlr_pub_peers(pub));
        sleep_ms(every);
    }
    tlr_pub_free(pub);
    tlr_tls_free(tls);
    batch_clear(&b, &cs);
    json_object_put(objs);
    return rc;
}
