/* pending_sub.c - subscribe to a watcher's "pending" topic and print each
 * PendingBatch as one JSON line on stdout:
 *
 *   {"batch":"1764000000000-1","sequence":1,"pods":["web-abc","web-def"],"nodes":0,"bound":0,
 *    "base":0,"delta_nodes":0,"fetched":false}
 *
 * Pod names come sorted; nodes counts the cluster state's nodes, bound
 * the pods attached to them - the whole state, as a launcher sees it after
 * applying the batch's delta (tlr_cstate.h); base and delta_nodes say what
 * the delta was.  When the subscriber does not hold the delta's base (it
 * missed a batch) and REP_URL is given, it asks the watcher for a Snapshot
 * by reference, as the launcher does (fetched: true).  Usage: pending_sub
 * URL [REP_URL].  Runs until SIGTERM or SIGINT, exit 0.
 *
 * pending_sub --snapshot URL asks the watcher's REP socket instead: one
 * SnapshotRequest with the pending pods, printed as
 *
 *   {"generation":41,"synced":true,"nodes":1,"bound":1,"nodepools":1,"pending":["big-..."],
 *    "nodepool_names":["general"]}
 *
 * then the same request again with if_changed_since_generation (retried
 * a few times in case the cluster moved in between), printed as
 * {"unchanged":true} or {"unchanged":false}.  Used by watcher_it.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tailor/v1/watcher.pb-c.h"
#include "tlr_buf.h"
#include "tlr_cstate.h"
#include "tlr_err.h"
#include "tlr_loop.h"
#include "tlr_pubsub.h"
#include "tlr_clnt.h"
#include "tlr_req.h"
#include "../it_tls.h"

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_names(tlr_buf *out, Tailor__V1__Pod *const *pods, size_t n)
{
    char **names = calloc(n + 1, sizeof(*names));
    for (size_t i = 0; i < n; i++)
        names[i] = pods[i]->name;
    qsort(names, n, sizeof(*names), by_name);
    for (size_t i = 0; i < n; i++) {
        if (i)
            tlr_buf_adds(out, ",");
        tlr_buf_add_json_str(out, names[i]);
    }
    free(names);
}

static size_t bound_pods(const Tailor__V1__ClusterState *cs)
{
    size_t n = 0;
    for (size_t i = 0; cs && i < cs->n_nodes; i++)
        n += cs->nodes[i]->n_pods;
    return n;
}

static int snapshot(const char *url)
{
    const char *urls[] = { url };
    tlr_req_client *c;
    tlr_tls *tls = NULL;
    if (it_tls_from_env(NULL, &tls))
        return 1;
    if (tlr_req_client_create(&(tlr_req_opts){ .urls = urls, .nurls = 1, .sender = "pending_sub",
                                               .tls = tls }, &c)) {
        tlr_tls_free(tls);
        return 1;
    }
    int rc = 1;
    for (int attempt = 0; attempt < 5; attempt++) {
        Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
        req.include_pending_pods = true;
        Tailor__V1__SnapshotResponse *r = NULL;
        tlr_status st = { 0 };
        const tlr_clnt wc = { c, 0, NULL, false };
        if (tlr_watcher_clnt_snapshot(&wc, &req, &r, &st)) {
            fprintf(stderr, "pending_sub: snapshot: %s\n", st.message);
            break;
        }
        const Tailor__V1__ClusterState *cs = r->cluster;
        uint64_t gen = cs ? cs->generation : 0;
        int64_t epoch = cs ? cs->watcher_epoch_unix_ms : 0;
        if (attempt == 0) {
            tlr_buf out;
            tlr_buf_init(&out, 64 << 20);
            tlr_buf_printf(&out, "{\"generation\":%llu,\"synced\":%s,\"nodes\":%zu,\"bound\":%zu,"
                                 "\"nodepools\":%zu,\"pending\":[", (unsigned long long)gen,
                           cs && cs->synced ? "true" : "false", cs ? cs->n_nodes : 0, bound_pods(cs),
                           cs ? cs->n_nodepools : 0);
            print_names(&out, r->pending_pods, r->n_pending_pods);
            tlr_buf_adds(&out, "],\"nodepool_names\":[");
            for (size_t i = 0; cs && i < cs->n_nodepools; i++)
                tlr_buf_printf(&out, "%s\"%s\"", i ? "," : "", cs->nodepools[i]->name);
            tlr_buf_adds(&out, "]}\n");
            fputs(tlr_buf_str(&out), stdout);
            tlr_buf_free(&out);
        }
        tlr_clnt_free(r);
        req.if_changed_since_generation = gen;
        req.watcher_epoch_unix_ms = epoch;
        if (tlr_watcher_clnt_snapshot(&wc, &req, &r, &st))
            break;
        bool unchanged = r->unchanged && r->cluster == NULL;
        tlr_clnt_free(r);
        if (unchanged || attempt == 4) {
            printf("{\"unchanged\":%s}\n", unchanged ? "true" : "false");
            rc = 0;
            break;
        }
    }
    fflush(stdout);
    tlr_req_client_free(c);
    tlr_tls_free(tls);
    return rc;
}

typedef struct sub_ctx {
    tlr_cstate *states;
    tlr_req_client *rep;   /* may be NULL */
} sub_ctx;

/* The whole state of b's cluster (by reference) into *view: the delta
 * applied, or a Snapshot by reference when its base is not held.  Sets
 * *fetched when a Snapshot was asked for. */
static void resolve(sub_ctx *x, Tailor__V1__PendingBatch *b, tlr_cstate_view **view, bool *fetched)
{
    char err[256];
    *view = NULL;
    *fetched = false;
    if (!b->cluster || !b->cluster->by_ref)
        return;
    int rc = tlr_cstate_resolve(x->states, b->cluster, view, err, sizeof(err));
    if (rc != TLR_E_NOTFOUND || !x->rep) {
        if (rc)
            fprintf(stderr, "pending_sub: %s\n", err);
        return;
    }
    *fetched = true;
    Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    req.by_reference = true;
    req.watcher_epoch_unix_ms = b->cluster->watcher_epoch_unix_ms;
    uint64_t held[1];
    if (tlr_cstate_held(x->states, req.watcher_epoch_unix_ms, held, 1))
        req.delta_base_generation = held[0];
    Tailor__V1__SnapshotResponse *r = NULL;
    tlr_status st = { 0 };
    if (tlr_watcher_clnt_snapshot(&(tlr_clnt){ x->rep, 0, NULL, false }, &req, &r, &st)) {
        fprintf(stderr, "pending_sub: snapshot: %s\n", st.message);
        return;
    }
    if (r->cluster && r->cluster->by_ref &&
        tlr_cstate_resolve(x->states, r->cluster, view, err, sizeof(err)) == TLR_OK) {
        /* the view borrows the cluster: it replaces b's */
        tailor__v1__cluster_state__free_unpacked(b->cluster, NULL);
        b->cluster = r->cluster;
        r->cluster = NULL;
    } else {
        fprintf(stderr, "pending_sub: the Snapshot did not resolve: %s\n", err);
    }
    tlr_clnt_free(r);
}

static void on_msg(void *arg, const char *topic, const Tailor__V1__Envelope *env)
{
    sub_ctx *x = arg;
    (void)topic;
    ProtobufCMessage *m = NULL;
    char err[256];
    if (tlr_envelope_payload(env, &tailor__v1__pending_batch__descriptor, &m, err, sizeof(err))) {
        fprintf(stderr, "pending_sub: bad batch: %s\n", err);
        return;
    }
    Tailor__V1__PendingBatch *b = (Tailor__V1__PendingBatch *)m;
    const Tailor__V1__ClusterRef *ref = b->cluster ? b->cluster->by_ref : NULL;
    uint64_t base = ref ? ref->base_generation : 0;
    size_t delta_nodes = ref ? ref->n_nodes : 0;   /* read before resolve moves them */
    tlr_cstate_view *view = NULL;
    bool fetched = false;
    resolve(x, b, &view, &fetched);
    const Tailor__V1__ClusterState *cs = view ? tlr_cstate_view_state(view) : b->cluster;
    tlr_buf out;
    tlr_buf_init(&out, 64 << 20);
    tlr_buf_adds(&out, "{\"batch\":");
    tlr_buf_add_json_str(&out, b->batch_id);
    tlr_buf_printf(&out, ",\"sequence\":%llu,\"pods\":[", (unsigned long long)b->sequence);
    print_names(&out, b->pending_pods, b->n_pending_pods);
    tlr_buf_printf(&out, "],\"nodes\":%zu,\"bound\":%zu,\"base\":%llu,\"delta_nodes\":%zu,"
                         "\"fetched\":%s}\n",
                   cs ? cs->n_nodes : 0, bound_pods(cs), (unsigned long long)base, delta_nodes,
                   fetched ? "true" : "false");
    fputs(tlr_buf_str(&out), stdout);
    fflush(stdout);
    tlr_buf_free(&out);
    tlr_cstate_view_free(view);
    protobuf_c_message_free_unpacked(m, NULL);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--snapshot"))
        return snapshot(argv[2]);
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: pending_sub URL [REP_URL] | pending_sub --snapshot URL\n");
        return 2;
    }
    tlr_loop *loop;
    if (tlr_loop_create(&loop))
        return 1;
    const char *urls[] = { argv[1] };
    const char *topics[] = { "pending" };
    tlr_tls *tls = NULL;
    if (it_tls_from_env(NULL, &tls)) {
        tlr_loop_free(loop);
        return 1;
    }
    sub_ctx x = { 0 };
    tlr_cstate_create(0, &x.states);
    const char *rep_urls[] = { argc == 3 ? argv[2] : NULL };
    if (argc == 3 &&
        tlr_req_client_create(&(tlr_req_opts){ .urls = rep_urls, .nurls = 1, .sender = "pending_sub",
                                               .tls = tls }, &x.rep)) {
        fprintf(stderr, "pending_sub: cannot dial %s\n", argv[2]);
        tlr_cstate_free(x.states);
        tlr_tls_free(tls);
        tlr_loop_free(loop);
        return 1;
    }
    tlr_sub_opts o = { .urls = urls, .nurls = 1, .topics = topics, .ntopics = 1, .fn = on_msg,
                       .arg = &x, .tls = tls };
    tlr_sub *s;
    int rc = tlr_sub_create(loop, &o, &s);
    if (rc) {
        fprintf(stderr, "pending_sub: cannot subscribe to %s: %s\n", argv[1], tlr_strerror(rc));
        tlr_req_client_free(x.rep);
        tlr_cstate_free(x.states);
        tlr_tls_free(tls);
        tlr_loop_free(loop);
        return 1;
    }
    rc = tlr_loop_run(loop);
    tlr_sub_free(s);
    tlr_req_client_free(x.rep);
    tlr_cstate_free(x.states);
    tlr_tls_free(tls);
    tlr_loop_free(loop);
    return rc ? 1 : 0;
}
