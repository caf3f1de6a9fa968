/* writeq.c - best-effort writes off the caller's thread (tlr_kube_writeq.h).
 *
 * A ring of copied requests under one mutex; workers take one at a time
 * and write it without the lock held.  `busy` counts requests taken but
 * not yet written, so the flush at free waits for those too.
 */
#include "tlr_kube_writeq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

/* An Event, or (patch != NULL) a patch of res ns/name/sub. */
typedef struct wq_item {
    char *kind, *api_version, *ns, *name, *uid, *type, *reason, *message;
    tlr_kube_res res;
    char *sub, *patch;
    tlr_kube_patch_type pt;
} wq_item;

struct tlr_kube_writeq {
    tlr_kube *kc;
    tlr_logger *log;
    char *source, *reporting;
    pthread_mutex_t mu;
    pthread_cond_t cv, idle;
    wq_item *q;              /* ring */
    size_t cap, head, len, busy;
    bool stop;
    pthread_t th[8];
    int nth;
    atomic_size_t dropped;
};

int tlr_kube_event_write(tlr_kube *kc, const tlr_kube_event_spec *e, const char *source,
                         const char *reporting)
{
    const char *evns = e->ns && e->ns[0] ? e->ns : "default";
    int64_t now = tlr_wall_ms();
    char ts[TLR_TIME_BUFLEN], evname[300];
    tlr_time_format_s(now, ts);
    snprintf(evname, sizeof(evname), "%.200s.%llx", e->name,
             (unsigned long long)now * 1000 + (unsigned)(random() % 1000));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(o, "kind", json_object_new_string("Event"));
    json_object *md = json_object_new_object();
    json_object_object_add(md, "name", json_object_new_string(evname));
    json_object_object_add(md, "namespace", json_object_new_string(evns));
    json_object_object_add(o, "metadata", md);
    json_object *io = json_object_new_object();
    json_object_object_add(io, "kind", json_object_new_string(e->kind));
    json_object_object_add(io, "name", json_object_new_string(e->name));
    if (e->ns && e->ns[0])
        json_object_object_add(io, "namespace", json_object_new_string(e->ns));
    if (e->uid && e->uid[0])
        json_object_object_add(io, "uid", json_object_new_string(e->uid));
    json_object_object_add(io, "apiVersion", json_object_new_string(e->api_version));
    json_object_object_add(o, "involvedObject", io);
    json_object_object_add(o, "type", json_object_new_string(e->type));
    json_object_object_add(o, "reason", json_object_new_string(e->reason));
    json_object_object_add(o, "message", json_object_new_string(e->message ? e->message : ""));
    json_object *src = json_object_new_object();
    json_object_object_add(src, "component", json_object_new_string(source));
    json_object_object_add(o, "source", src);
    json_object_object_add(o, "reportingComponent", json_object_new_string(reporting));
    json_object_object_add(o, "firstTimestamp", json_object_new_string(ts));
    json_object_object_add(o, "lastTimestamp", json_object_new_string(ts));
    json_object_object_add(o, "count", json_object_new_int(1));
    int rc = tlr_kube_create_obj(kc, &TLR_KUBE_RES_EVENTS, evns, o, NULL, NULL);
    json_object_put(o);
    return rc;
}

static void item_clear(wq_item *it)
{
    free(it->kind);
    free(it->api_version);
    free(it->ns);
    free(it->name);
    free(it->uid);
    free(it->type);
    free(it->reason);
    free(it->message);
    free(it->sub);
    free(it->patch);
}

static void write_item(tlr_kube_writeq *q, const wq_item *it)
{
    if (it->patch) {
        tlr_kube_status st = { 0 };
        int rc = tlr_kube_patch(q->kc, &it->res, it->ns, it->name, it->sub, it->pt, it->patch,
                                NULL, &st);
        if (rc)
            TLR_WARN(q->log, "patch not written", TLR_S("resource", it->res.plural),
                     TLR_S("name", it->name), TLR_S("subresource", it->sub ? it->sub : ""),
                     TLR_S("why", st.message), TLR_ERR(rc));
        return;
    }
    const tlr_kube_event_spec e = { it->kind, it->api_version, it->ns, it->name,
                                    it->uid, it->type, it->reason, it->message };
    int rc = tlr_kube_event_write(q->kc, &e, q->source, q->reporting);
    if (rc)
        TLR_DEBUG(q->log, "event not written", TLR_S("reason", it->reason), TLR_ERR(rc));
}

static void *worker_main(void *arg)
{
    tlr_kube_writeq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->len == 0 && !q->stop)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->len == 0 && q->stop)
            break;
        wq_item it = q->q[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
        q->busy++;
        pthread_mutex_unlock(&q->mu);
        write_item(q, &it);
        item_clear(&it);
        pthread_mutex_lock(&q->mu);
        q->busy--;
        if (q->len == 0 && q->busy == 0)
            pthread_cond_broadcast(&q->idle);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* A free slot at the ring's tail, zeroed, with the lock held; NULL (lock
 * released, counted as dropped) when full.  push() makes it count. */
static wq_item *slot(tlr_kube_writeq *q)
{
    pthread_mutex_lock(&q->mu);
    if (q->len >= q->cap || q->nth == 0) {
        pthread_mutex_unlock(&q->mu);
        atomic_fetch_add(&q->dropped, 1);
        return NULL;
    }
    wq_item *it = &q->q[(q->head + q->len) % q->cap];
    memset(it, 0, sizeof(*it));
    return it;
}

static void push(tlr_kube_writeq *q)
{
    q->len++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

int tlr_kube_writeq_patch(tlr_kube_writeq *q, const tlr_kube_res *res, const char *ns,
                          const char *name, const char *sub, tlr_kube_patch_type pt,
                          const char *patch)
{
    wq_item *it = slot(q);
    if (!it)
        return TLR_E_TOOBIG;
    it->res = *res;
    it->ns = ns && ns[0] ? tlr_strdup(ns) : NULL;
    it->name = tlr_strdup(name);
    it->sub = sub ? tlr_strdup(sub) : NULL;
    it->pt = pt;
    it->patch = tlr_strdup(patch);
    push(q);
    return TLR_OK;
}

int tlr_kube_writeq_event(tlr_kube_writeq *q, const tlr_kube_event_spec *e)
{
    wq_item *it = slot(q);
    if (!it)
        return TLR_E_TOOBIG;
    it->kind = tlr_strdup(e->kind);
    it->api_version = tlr_strdup(e->api_version);
    it->ns = tlr_strdup(e->ns ? e->ns : "");
    it->name = tlr_strdup(e->name);
    it->uid = tlr_strdup(e->uid ? e->uid : "");
    it->type = tlr_strdup(e->type);
    it->reason = tlr_strdup(e->reason);
    it->message = tlr_strdup(e->message ? e->message : "");
    push(q);
    return TLR_OK;
}

void tlr_kube_writeq_create(const tlr_kube_writeq_opts *o, tlr_kube_writeq **out)
{
    tlr_kube_writeq *q = tlr_calloc(1, sizeof(*q));
    q->kc = o->kc;
    q->log = o->log;
    q->source = tlr_strdup(o->source ? o->source : "tailor");
    q->reporting = tlr_strdup(o->reporting ? o->reporting : q->source);
    q->cap = o->max > 0 ? o->max : 50000;
    q->q = tlr_calloc(q->cap, sizeof(*q->q));
    atomic_init(&q->dropped, 0);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_cond_init(&q->idle, NULL);
    int nth = o->threads > 0 ? o->threads : 2;
    if (nth > 8)
        nth = 8;
    for (int i = 0; i < nth; i++)
        if (pthread_create(&q->th[q->nth], NULL, worker_main, q) == 0)
            q->nth++;
    *out = q;
}

void tlr_kube_writeq_free(tlr_kube_writeq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    /* Flush what is queued, for a while: these writes are best effort. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    while ((q->len > 0 || q->busy > 0) && q->nth > 0)
        if (pthread_cond_timedwait(&q->idle, &q->mu, &until) != 0)
            break;
    /* Whatever is left is dropped, not written. */
    while (q->len > 0) {
        item_clear(&q->q[q->head]);
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    q->stop = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nth; i++)
        pthread_join(q->th[i], NULL);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    pthread_cond_destroy(&q->idle);
    free(q->q);
    free(q->source);
    free(q->reporting);
    free(q);
}

size_t tlr_kube_writeq_dropped(tlr_kube_writeq *q)
{
    return atomic_load(&q->dropped);
}
