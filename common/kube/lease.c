/* lease.c - fenced Lease leader election (tlr_lease.h).
 *
 * One thread per Lease runs rounds every retry period: GET the Lease,
 * note what changed (observed time), decide, write.  The thread is the
 * fence's only writer; it raises valid-until after each acknowledged
 * write and drops it to 0 the moment it learns someone else holds the
 * Lease.  It never has to lower it on a timeout: valid-until is a point
 * in time, so a stalled round (or a stalled thread) lets it run out by
 * itself and every reader stops at that point.
 */
#include "tlr_lease.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

struct tlr_lease {
    tlr_kube *kc;
    char *ns, *name, *me;
    int64_t duration_ms, deadline_ms, retry_ms;
    tlr_fence *fence;
    tlr_logger *log;
    tlr_metric *m_leader, *m_lost, *m_renew_fail;
    tlr_lease_seen seen;
    bool leading;                 /* the thread's view; readers use the fence */
    _Atomic uint64_t term;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
};

bool tlr_lease_observe(tlr_lease_seen *s, const char *holder, const char *renew,
                       const char *rv, int64_t now_mono_ms)
{
    holder = holder ? holder : "";
    renew = renew ? renew : "";
    rv = rv ? rv : "";
    if (s->at_mono_ms && strcmp(s->holder, holder) == 0 && strcmp(s->renew, renew) == 0 &&
        strcmp(s->rv, rv) == 0)
        return false;
    snprintf(s->holder, sizeof(s->holder), "%s", holder);
    snprintf(s->renew, sizeof(s->renew), "%s", renew);
    snprintf(s->rv, sizeof(s->rv), "%s", rv);
    s->at_mono_ms = now_mono_ms;
    return true;
}

tlr_lease_action tlr_lease_decide(const tlr_lease_seen *s, int64_t duration_ms, const char *me,
                                  int64_t now_mono_ms)
{
    if (!s->holder[0])
        return TLR_LEASE_ACQUIRE;
    if (strcmp(s->holder, me) == 0)
        return TLR_LEASE_RENEW;
    return now_mono_ms >= s->at_mono_ms + duration_ms ? TLR_LEASE_ACQUIRE : TLR_LEASE_FOLLOW;
}

int64_t tlr_lease_valid_until(int64_t sent_mono_ms, int64_t ack_mono_ms,
                              int64_t renew_deadline_ms)
{
    int64_t until = sent_mono_ms + renew_deadline_ms;
    return ack_mono_ms < until ? until : 0;
}

/* MicroTime: RFC 3339 with microseconds. */
static void micro_time(int64_t ms, char *buf, size_t len)
{
    char s[TLR_TIME_BUFLEN];
    tlr_time_format_s(ms, s);   /* 2026-12-02T15:04:05Z */
    snprintf(buf, len, "%.19s.%03d000Z", s, (int)(ms % 1000));
}

static json_object *lease_body(const tlr_lease *l, const char *holder, int duration_s,
                               int64_t now_ms, const char *rv, int64_t acquire_ms,
                               int transitions)
{
    char now[48], acq[48];
    micro_time(now_ms, now, sizeof(now));
    micro_time(acquire_ms, acq, sizeof(acq));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
    json_object_object_add(o, "kind", json_object_new_string("Lease"));
    json_object *md = json_object_new_object();
    json_object_object_add(md, "name", json_object_new_string(l->name));
    json_object_object_add(md, "namespace", json_object_new_string(l->ns));
    if (rv)
        json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(o, "metadata", md);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "holderIdentity", json_object_new_string(holder));
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(duration_s));
    json_object_object_add(spec, "acquireTime", json_object_new_string(acq));
    json_object_object_add(spec, "renewTime", json_object_new_string(now));
    json_object_object_add(spec, "leaseTransitions", json_object_new_int(transitions));
    json_object_object_add(o, "spec", spec);
    return o;
}

static const char *sget(json_object *o, const char *a, const char *b)
{
    json_object *x, *y;
    if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y))
        return NULL;
    return json_object_get_string(y);
}

static int iget(json_object *o, const char *a, const char *b, int def)
{
    json_object *x, *y;
    if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y))
        return def;
    return json_object_get_int(y);
}

static int lease_seconds(const tlr_lease *l)
{
    return (int)((l->duration_ms + 999) / 1000);
}

/* An acknowledged write sent at sent: lead until sent + renew deadline. */
static void grant(tlr_lease *l, int64_t sent)
{
    int64_t now = tlr_mono_ms();
    int64_t until = tlr_lease_valid_until(sent, now, l->deadline_ms);
    if (!until) {
        TLR_WARN(l->log, "lease renewal answered after the renew deadline: not acting on it",
                 TLR_S("lease", l->name), TLR_I("took_ms", now - sent));
        return;
    }
    tlr_fence_set(l->fence, until);
    if (!l->leading) {
        l->leading = true;
        atomic_fetch_add(&l->term, 1);
        TLR_INFO(l->log, "became leader", TLR_S("lease", l->name), TLR_S("identity", l->me),
                 TLR_I("valid_for_ms", until - now));
        if (l->m_leader)
            tlr_gauge_set(l->m_leader, 1);
    }
}

static void revoke(tlr_lease *l, const char *why, const char *holder)
{
    tlr_fence_set(l->fence, 0);
    if (!l->leading)
        return;
    l->leading = false;
    TLR_WARN(l->log, "lost leadership: stopped acting", TLR_S("lease", l->name),
             TLR_S("identity", l->me), TLR_S("why", why), TLR_S("holder", holder ? holder : ""));
    if (l->m_leader)
        tlr_gauge_set(l->m_leader, 0);
    if (l->m_lost)
        tlr_counter_inc(l->m_lost);
}

/* A failed round: a warning while leading (the fence is running out), a
 * debug line for a follower, which tries again every retry period. */
static void renew_failed(tlr_lease *l, const char *what, int rc, const tlr_kube_status *st)
{
    if (!l->leading) {
        TLR_DEBUG(l->log, "lease round failed", TLR_S("lease", l->name), TLR_S("op", what),
                  TLR_ERR(rc), TLR_S("reason", st->reason), TLR_S("message", st->message));
        return;
    }
    if (l->m_renew_fail)
        tlr_counter_inc(l->m_renew_fail);
    TLR_WARN(l->log, "lease renewal failed", TLR_S("lease", l->name), TLR_S("op", what),
             TLR_ERR(rc), TLR_S("reason", st->reason), TLR_S("message", st->message),
             TLR_I("valid_for_ms", tlr_fence_left_ms(l->fence, tlr_mono_ms())));
}

/* One round: read, decide, write. */
static void lease_round(tlr_lease *l)
{
    tlr_kube_status st = { 0 };
    json_object *cur = NULL;
    int rc = tlr_kube_get(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, &cur, &st);
    int64_t now_wall = tlr_wall_ms();
    if (rc == TLR_E_NOTFOUND) {
        json_object *b = lease_body(l, l->me, lease_seconds(l), now_wall, NULL, now_wall, 0);
        int64_t sent = tlr_mono_ms();
        rc = tlr_kube_create_obj(l->kc, &TLR_KUBE_RES_LEASES, l->ns, b, NULL, &st);
        json_object_put(b);
        if (rc == TLR_OK)
            grant(l, sent);
        else
            renew_failed(l, "create", rc, &st);
        return;
    }
    if (rc) {
        /* API trouble: the fence runs out by itself if this goes on. */
        renew_failed(l, "get", rc, &st);
        return;
    }
    const char *holder = sget(cur, "spec", "holderIdentity");
    const char *rv = sget(cur, "metadata", "resourceVersion");
    int64_t now = tlr_mono_ms();
    tlr_lease_observe(&l->seen, holder, sget(cur, "spec", "renewTime"), rv, now);
    int64_t duration_ms = (int64_t)iget(cur, "spec", "leaseDurationSeconds",
                                        lease_seconds(l)) * 1000;
    tlr_lease_action a = tlr_lease_decide(&l->seen, duration_ms, l->me, now);
    if (a == TLR_LEASE_FOLLOW) {
        revoke(l, "another replica holds the Lease", holder);
        json_object_put(cur);
        return;
    }
    int transitions = iget(cur, "spec", "leaseTransitions", 0);
    int64_t acq_ms = now_wall;
    const char *acq = sget(cur, "spec", "acquireTime");
    if (a == TLR_LEASE_RENEW && acq)
        tlr_time_parse(acq, &acq_ms);
    json_object *b = lease_body(l, l->me, lease_seconds(l), now_wall, rv, acq_ms,
                                a == TLR_LEASE_ACQUIRE ? transitions + 1 : transitions);
    int64_t sent = tlr_mono_ms();
    /* The resourceVersion makes a takeover race safe: 409 for the loser. */
    rc = tlr_kube_update(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, NULL, b, NULL, &st);
    json_object_put(b);
    if (rc == TLR_OK)
        grant(l, sent);
    else if (rc == TLR_E_CONFLICT)
        revoke(l, "the Lease was written by another replica (409 Conflict)", holder);
    else
        renew_failed(l, a == TLR_LEASE_RENEW ? "renew" : "acquire", rc, &st);
    json_object_put(cur);
}

static void *lease_main(void *arg)
{
    tlr_lease *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        pthread_mutex_unlock(&l->mu);
        if (l->leading && !tlr_fence_valid(l->fence, tlr_mono_ms()))
            revoke(l, "no renewal acknowledged within the renew deadline", NULL);
        lease_round(l);
        if (l->leading && !tlr_fence_valid(l->fence, tlr_mono_ms()))
            revoke(l, "no renewal acknowledged within the renew deadline", NULL);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + (l->retry_ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(l->retry_ms / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_mutex_lock(&l->mu);
        while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0)
            ;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int tlr_lease_start(const tlr_lease_opts *o, tlr_lease **out, char *why, size_t whylen)
{
    int64_t d = o->duration_ms > 0 ? o->duration_ms : 15000;
    int64_t rd = o->renew_deadline_ms > 0 ? o->renew_deadline_ms : 10000;
    int64_t rt = o->retry_ms > 0 ? o->retry_ms : 2000;
    if (!o->kc || !o->fence || !o->ns || !o->name || !o->identity || !o->identity[0]) {
        snprintf(why, whylen, "lease: client, fence, namespace, name and identity are required");
        return TLR_E_INVAL;
    }
    if (rd >= d || rt >= rd) {
        snprintf(why, whylen,
                 "lease: want retry (%lld ms) < renew deadline (%lld ms) < lease duration "
                 "(%lld ms)", (long long)rt, (long long)rd, (long long)d);
        return TLR_E_INVAL;
    }
    tlr_lease *l = tlr_calloc(1, sizeof(*l));
    l->kc = o->kc;
    l->ns = tlr_strdup(o->ns);
    l->name = tlr_strdup(o->name);
    l->me = tlr_strdup(o->identity);
    l->duration_ms = d;
    l->deadline_ms = rd;
    l->retry_ms = rt;
    l->fence = o->fence;
    l->log = o->log;
    tlr_fence_set(l->fence, 0);
    if (o->metrics) {
        const char *lbl[] = { "lease" }, *v[] = { l->name };
        l->m_leader = tlr_metric_series(
            tlr_metrics_gauge(o->metrics, "tailor_lease_leader",
                              "1 while this replica holds the Lease and may act", 1, lbl), v);
        l->m_lost = tlr_metric_series(
            tlr_metrics_counter(o->metrics, "tailor_lease_lost_total",
                                "times this replica stopped acting: the Lease was taken or "
                                "not renewed within the renew deadline", 1, lbl), v);
        l->m_renew_fail = tlr_metric_series(
            tlr_metrics_counter(o->metrics, "tailor_lease_renew_failures_total",
                                "Lease renewals that failed while leading", 1, lbl), v);
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&l->th, NULL, lease_main, l) != 0)
        abort();
    *out = l;
    return TLR_OK;
}

bool tlr_lease_leading(const tlr_lease *l)
{
    return l && tlr_fence_valid(l->fence, tlr_mono_ms());
}

uint64_t tlr_lease_term(const tlr_lease *l)
{
    return l ? atomic_load(&((tlr_lease *)l)->term) : 0;
}

/* Give the Lease up if we hold it: holder emptied, duration 1 s. */
static void release(tlr_lease *l)
{
    json_object *cur = NULL;
    if (tlr_kube_get(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, &cur, NULL) != TLR_OK)
        return;
    const char *holder = sget(cur, "spec", "holderIdentity");
    if (holder && strcmp(holder, l->me) == 0) {
        int64_t now = tlr_wall_ms();
        json_object *b = lease_body(l, "", 1, now, sget(cur, "metadata", "resourceVersion"), now,
                                    iget(cur, "spec", "leaseTransitions", 0));
        if (tlr_kube_update(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, NULL, b, NULL,
                            NULL) == TLR_OK)
            TLR_INFO(l->log, "lease released", TLR_S("lease", l->name));
        json_object_put(b);
    }
    json_object_put(cur);
}

void tlr_lease_stop(tlr_lease *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->th, NULL);
    bool held = l->leading;
    revoke(l, "stopping", NULL);   /* stop acting before letting go */
    if (held)
        release(l);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->ns);
    free(l->name);
    free(l->me);
    free(l);
}
