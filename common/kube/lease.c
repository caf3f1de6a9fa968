/* lease.c - Lease-based leader election (tlr_lease.h). */
#include "tlr_lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_time.h"

struct tlr_lease {
    tlr_kube *kc;
    char *ns, *name, *me;
    int duration_s;
    int64_t last_renew_ms;   /* 0 = not leading */
};

tlr_lease_action tlr_lease_decide(const char *holder, int64_t renew_ms, int duration_s,
                                const char *me, int64_t now_ms)
{
    if (!holder || !holder[0])
        return TLR_LEASE_ACQUIRE;
    if (strcmp(holder, me) == 0)
        return TLR_LEASE_RENEW;
    return now_ms >= renew_ms + (int64_t)duration_s * 1000 ? TLR_LEASE_ACQUIRE : TLR_LEASE_FOLLOW;
}

void tlr_lease_create(tlr_kube *kc, const char *ns, const char *name, const char *identity,
                      int duration_s, tlr_lease **out)
{
    tlr_lease *l = tlr_calloc(1, sizeof(*l));
    l->kc = kc;
    l->ns = tlr_strdup(ns);
    l->name = tlr_strdup(name);
    l->me = tlr_strdup(identity);
    l->duration_s = duration_s > 0 ? duration_s : 15;
    *out = l;
}

void tlr_lease_free(tlr_lease *l)
{
    if (!l)
        return;
    free(l->ns);
    free(l->name);
    free(l->me);
    free(l);
}

/* MicroTime: RFC 3339 with microseconds. */
static void micro_time(int64_t ms, char *buf, size_t len)
{
    char s[TLR_TIME_BUFLEN];
    tlr_time_format_s(ms, s);   /* 2026-12-02T15:04:05Z */
    snprintf(buf, len, "%.19s.%03d000Z", s, (int)(ms % 1000));
}

static json_object *lease_body(const tlr_lease *l, int64_t now_ms, const char *rv,
                               int64_t acquire_ms, int transitions)
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
    json_object_object_add(spec, "holderIdentity", json_object_new_string(l->me));
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(l->duration_s));
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

bool tlr_lease_tick(tlr_lease *l, int64_t now_ms)
{
    json_object *cur = NULL;
    int rc = tlr_kube_get(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, &cur, NULL);
    if (rc == TLR_E_NOTFOUND) {
        json_object *b = lease_body(l, now_ms, NULL, now_ms, 0);
        rc = tlr_kube_create_obj(l->kc, &TLR_KUBE_RES_LEASES, l->ns, b, NULL, NULL);
        json_object_put(b);
        if (rc == TLR_OK)
            l->last_renew_ms = now_ms;
        else
            l->last_renew_ms = 0;
        return rc == TLR_OK;
    }
    if (rc) {
        /* API trouble: keep leading only within our own lease. */
        if (l->last_renew_ms && now_ms - l->last_renew_ms < (int64_t)l->duration_s * 1000)
            return true;
        l->last_renew_ms = 0;
        return false;
    }
    const char *holder = sget(cur, "spec", "holderIdentity");
    const char *renew = sget(cur, "spec", "renewTime");
    const char *acq = sget(cur, "spec", "acquireTime");
    const char *rv = sget(cur, "metadata", "resourceVersion");
    json_object *spec = NULL, *tr = NULL, *dur = NULL;
    json_object_object_get_ex(cur, "spec", &spec);
    int transitions = spec && json_object_object_get_ex(spec, "leaseTransitions", &tr)
                          ? json_object_get_int(tr) : 0;
    int duration = spec && json_object_object_get_ex(spec, "leaseDurationSeconds", &dur)
                       ? json_object_get_int(dur) : l->duration_s;
    int64_t renew_ms = 0, acq_ms = now_ms;
    if (renew)
        tlr_time_parse(renew, &renew_ms);
    tlr_lease_action a = tlr_lease_decide(holder, renew_ms, duration, l->me, now_ms);
    bool ok = false;
    if (a != TLR_LEASE_FOLLOW) {
        if (a == TLR_LEASE_RENEW && acq)
            tlr_time_parse(acq, &acq_ms);
        json_object *b = lease_body(l, now_ms, rv, acq_ms,
                                    a == TLR_LEASE_ACQUIRE ? transitions + 1 : transitions);
        /* The resourceVersion makes a takeover race safe: 409 for the loser. */
        ok = tlr_kube_update(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, NULL, b, NULL,
                             NULL) == TLR_OK;
        json_object_put(b);
    }
    json_object_put(cur);
    l->last_renew_ms = ok ? now_ms : 0;
    return ok;
}

void tlr_lease_release(tlr_lease *l, int64_t now_ms)
{
    if (!l || !l->last_renew_ms)
        return;
    json_object *cur = NULL;
    if (tlr_kube_get(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, &cur, NULL) != TLR_OK)
        return;
    const char *holder = sget(cur, "spec", "holderIdentity");
    const char *rv = sget(cur, "metadata", "resourceVersion");
    json_object *spec = NULL, *tr = NULL;
    json_object_object_get_ex(cur, "spec", &spec);
    int transitions = spec && json_object_object_get_ex(spec, "leaseTransitions", &tr)
                          ? json_object_get_int(tr) : 0;
    if (holder && strcmp(holder, l->me) == 0) {
        json_object *b = lease_body(l, now_ms, rv, now_ms, transitions);
        json_object *bs = NULL;
        json_object_object_get_ex(b, "spec", &bs);
        json_object_object_add(bs, "holderIdentity", json_object_new_string(""));
        json_object_object_add(bs, "leaseDurationSeconds", json_object_new_int(1));
        tlr_kube_update(l->kc, &TLR_KUBE_RES_LEASES, l->ns, l->name, NULL, b, NULL, NULL);
        json_object_put(b);
    }
    json_object_put(cur);
    l->last_renew_ms = 0;
}
