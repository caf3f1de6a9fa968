/* bench_kubesim.c - kubesim at benchmark scale.
 *
 * Loads 5,000 nodes and 100,000 pods through the store API, serves them
 * over HTTP on loopback and measures, with libcurl as the client:
 *   - a paged full list of pods (limit 500, following continue tokens),
 *   - one unpaged list of all pods,
 *   - 10 concurrent watchers each receiving 10,000 changes.
 * Prints times, throughput and peak RSS against the targets (list of 100k
 * pods under 2 s, memory under 1 GiB).
 *
 *   bench-kubesim [PODS] [NODES]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <curl/curl.h>

#include "ks_api.h"
#include "ks_http.h"
#include "ks_store.h"
#include "tlr_buf.h"
#include "tlr_err.h"

#define WATCHERS 10
#define CHANGES 10000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static size_t to_buf(char *p, size_t sz, size_t n, void *arg)
{
    return tlr_buf_add(arg, p, sz * n) ? 0 : sz * n;
}

static int get(const char *url, tlr_buf *out)
{
    CURL *c = curl_easy_init();
    tlr_buf_reset(out);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return rc == CURLE_OK && code == 200 ? 0 : -1;
}

typedef struct watcher {
    char url[256];
    long events;
    long want;
    double done_at;
    tlr_buf line;
} watcher;

static size_t watch_data(char *p, size_t sz, size_t n, void *arg)
{
    watcher *w = arg;
    size_t len = sz * n;
    for (size_t i = 0; i < len; i++)
        if (p[i] == '\n' && ++w->events == w->want) {
            w->done_at = now_s();
            return 0; /* stop: got everything */
        }
    return len;
}

static void *watch_main(void *arg)
{
    watcher *w = arg;
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, w->url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    return NULL;
}

int main(int argc, char **argv)
{
    long npods = argc > 1 ? atol(argv[1]) : 100000;
    long nnodes = argc > 2 ? atol(argv[2]) : 5000;
    curl_global_init(CURL_GLOBAL_ALL);
    ks_store *s = NULL;
    ks_store_create(&(ks_store_opts){ .history = 200000 }, &s);
    double t0 = now_s();
    char json[2048];
    for (long i = 0; i < nnodes; i++) {
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"node-%05ld\",\"labels\":{\"kubernetes.io/hostname\":"
                 "\"node-%05ld\",\"topology.kubernetes.io/zone\":\"us-east-1%c\","
                 "\"node.kubernetes.io/instance-type\":\"m5.xlarge\"}},\"spec\":{\"providerID\":"
                 "\"aws:///us-east-1a/i-%012ld\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
                 "\"status\":\"True\"}],\"allocatable\":{\"cpu\":\"4\",\"memory\":\"15Gi\","
                 "\"pods\":\"58\"}}}",
                 i, i, 'a' + (char)(i % 3), i);
        if (ks_store_create_text(s, KS_NODE, NULL, json, NULL, NULL))
            return 1;
    }
    for (long i = 0; i < npods; i++) {
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"web-%07ld\",\"labels\":{\"app\":\"web-%ld\","
                 "\"pod-template-hash\":\"5d9f8c7b6\"},\"ownerReferences\":[{\"apiVersion\":"
                 "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"web-5d9f8c7b6\",\"uid\":"
                 "\"0b7c7a4e-6a51-4c1b-9d0e-3f2a1b0c9d8e\",\"controller\":true}]},\"spec\":{"
                 "\"nodeName\":\"node-%05ld\",\"containers\":[{\"name\":\"web\",\"image\":"
                 "\"nginx:1.25\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":"
                 "\"128Mi\"}},\"ports\":[{\"containerPort\":80}]}],\"tolerations\":[{\"key\":"
                 "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":"
                 "\"NoExecute\",\"tolerationSeconds\":300}]},\"status\":{\"phase\":\"Running\","
                 "\"podIP\":\"10.%ld.%ld.%ld\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
                 "\"True\"}]}}",
                 i, i % 100, i % nnodes, (i >> 16) & 255, (i >> 8) & 255, i & 255);
        if (ks_store_create_text(s, KS_POD, "default", json, NULL, NULL))
            return 1;
    }
    double t_load = now_s() - t0;
    double rss_loaded = peak_rss_mib();
    ks_api *api = NULL;
    ks_api_create(&(ks_api_opts){ .store = s }, &api);
    ks_http *h = NULL;
    if (ks_http_start(api, "127.0.0.1:0", NULL, NULL, NULL, &h)) {
        fprintf(stderr, "cannot listen\n");
        return 1;
    }
    int port = ks_http_port(h);
    tlr_buf body;
    tlr_buf_init(&body, (size_t)1 << 32);

    /* paged full list */
    char url[1024];
    long items = 0, pages = 0;
    char cont[700] = "";
    t0 = now_s();
    for (;;) {
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/pods?limit=500%s%s", port,
                 cont[0] ? "&continue=" : "", cont);
        if (get(url, &body))
            return 1;
        /* Count and follow without a full client-side parse: the figure
         * is the server's, not json-c's. */
        for (const char *p = tlr_buf_str(&body); (p = strstr(p, "\"kind\":\"Pod\"")); p++)
            items++;
        pages++;
        const char *c = strstr(tlr_buf_str(&body), "\"continue\":\"");
        cont[0] = 0;
        if (c) {
            c += 12;
            size_t n = strcspn(c, "\"");
            if (n >= sizeof(cont))
                return 1;
            memcpy(cont, c, n);
            cont[n] = 0;
        }
        if (!cont[0])
            break;
    }
    double t_paged = now_s() - t0;
    t0 = now_s();
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/pods", port);
    if (get(url, &body))
        return 1;
    double t_full = now_s() - t0;
    size_t full_bytes = body.len;
    tlr_buf_free(&body);

    /* 10 watchers, 10,000 changes */
    watcher w[WATCHERS];
    pthread_t th[WATCHERS];
    uint64_t rv = ks_store_rv(s);
    for (int i = 0; i < WATCHERS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].want = CHANGES;
        snprintf(w[i].url, sizeof(w[i].url),
                 "http://127.0.0.1:%d/api/v1/pods?watch=1&resourceVersion=%llu", port,
                 (unsigned long long)rv);
        pthread_create(&th[i], NULL, watch_main, &w[i]);
    }
    t0 = now_s();
    for (long i = 0; i < CHANGES; i++) {
        char name[32], patch[128];
        snprintf(name, sizeof(name), "web-%07ld", i % npods);
        snprintf(patch, sizeof(patch), "{\"metadata\":{\"labels\":{\"rev\":\"%ld\"}}}", i);
        if (ks_store_patch(s, KS_POD, "default", name, KS_PATCH_MERGE, patch, strlen(patch), 0,
                           NULL, NULL))
            return 1;
    }
    double t_writes = now_s() - t0;
    long delivered = 0;
    double last = t0;
    for (int i = 0; i < WATCHERS; i++) {
        pthread_join(th[i], NULL);
        delivered += w[i].events;
        if (w[i].done_at > last)
            last = w[i].done_at;
    }
    double t_watch = last - t0;

    printf("kubesim bench: %ld pods on %ld nodes\n", npods, nnodes);
    printf("  load via store API       %8.2f s  (%.0f objects/s)\n", t_load,
           (double)(npods + nnodes) / t_load);
    printf("  peak RSS after load      %8.1f MiB\n", rss_loaded);
    printf("  paged list (limit 500)   %8.3f s  %ld items in %ld pages  target < 2 s: %s\n",
           t_paged, items, pages, t_paged < 2.0 ? "met" : "MISSED");
    printf("  unpaged list             %8.3f s  %.1f MiB body\n", t_full,
           (double)full_bytes / (1 << 20));
    printf("  %d changes written        %8.3f s  (%.0f writes/s)\n", CHANGES, t_writes,
           CHANGES / t_writes);
    printf("  %d watchers got %ld/%d events in %.3f s (%.0f events/s delivered)\n", WATCHERS,
           delivered, WATCHERS * CHANGES, t_watch, (double)delivered / t_watch);
    printf("  peak RSS                 %8.1f MiB  target < 1024 MiB: %s\n", peak_rss_mib(),
           peak_rss_mib() < 1024 ? "met" : "MISSED");
    ks_store_close(s);
    ks_http_stop(h);
    ks_api_free(api);
    ks_store_free(s);
    curl_global_cleanup();
    return delivered == (long)WATCHERS * CHANGES && items == npods ? 0 : 1;
}
