/* lease.c - Lease-based leader election (lease.h). */
#include "lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_time.h"

struct ds_lease {
    tlr_kube *kc;
    char *ns, *name, *me;
    int duration_s;
    int64_t renewed_ms;   /* our last successful write; 0 = not holding */
};

ds_lease_action ds_lease_decide(const char *holder, int64_t renew_ms, int duration_s,
                                const char *me, int64_t now_ms)
{
    if (!holder || !holder[0])
        return DS_LEASE_ACQUIRE;
    if (!strcmp(holder, me))
        return DS_LEASE_RENEW;
    return now_ms >= renew_ms + (int64_t)duration_s * 1000 ? DS_LEASE_ACQUIRE : DS_LEASE_FOLLOW;
}

void ds_lease_create(tlr_kube *kc, const char *ns, const char *name, const char *identity,
                     int duration_s, ds_lease **out)
{
    ds_lease *l = tlr_calloc(1, sizeof(*l));
    l->kc = kc;
    l->ns = tlr_strdup(ns);
    l->name = tlr_strdup(name);
    l->me = tlr_strdup(identity);
    l->duration_s = duration_s > 0 ? duration_s : 15;
    *out = l;
}

void ds_lease_free(ds_lease *l)
{
    if (!l)
        return;
    free(l->ns);
    free(l->name);
    free(l->me);
    free(l);
}

/* MicroTime: RFC 3339 with microseconds, as the Lease type wants. */
static void micro(int64_t ms, char *buf, size_t len)
{
    char s[TLR_TIME_BUFLEN];
    tlr_time_format_s(ms, s);
    snprintf(buf, len, "%.19s.%03d000Z", s, (int)(ms % 1000));
}

static json_object *body(const ds_lease *l, const char *holder, int64_t renew_ms,
                         int64_t acquire_ms, const char *rv, int64_t transitions)
{
    char rn[48], aq[48];
    micro(renew_ms, rn, sizeof(rn));
    micro(acquire_ms, aq, sizeof(aq));
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
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(l->duration_s));
    json_object_object_add(spec, "acquireTime", json_object_new_string(aq));
    json_object_object_add(spec, "renewTime", json_object_new_string(rn));
    json_object_object_add(spec, "leaseTransitions", json_object_new_int64(transitions));
    json_object_object_add(o, "spec", spec);
    return o;
}

bool ds_lease_tick(ds_lease *l, int64_t now_ms)
{
    tlr_kube_res res = TLR_KUBE_RES_LEASES;
    json_object *cur = NULL;
    int rc = tlr_kube_get(l->kc, &res, l->ns, l->name, &cur, NULL);
    if (rc == TLR_E_NOTFOUND) {
        json_object *b = body(l, l->me, now_ms, now_ms, NULL, 0);
        rc = tlr_kube_create_obj(l->kc, &res, l->ns, b, NULL, NULL);
        json_object_put(b);
        l->renewed_ms = rc == TLR_OK ? now_ms : 0;
        return rc == TLR_OK;
    }
    if (rc) {
        if (l->renewed_ms && now_ms - l->renewed_ms < (int64_t)l->duration_s * 1000)
            return true;
        l->renewed_ms = 0;
        return false;
    }
    const char *holder = tlr_json_str(cur, "spec.holderIdentity");
    const char *rv = tlr_json_str(cur, "metadata.resourceVersion");
    int64_t renew_ms = 0, acq_ms = now_ms, dur = l->duration_s, tr = 0;
    const char *s = tlr_json_str(cur, "spec.renewTime");
    if (s)
        tlr_time_parse(s, &renew_ms);
    tlr_json_int(cur, "spec.leaseDurationSeconds", &dur);
    tlr_json_int(cur, "spec.leaseTransitions", &tr);
    ds_lease_action a = ds_lease_decide(holder, renew_ms, (int)dur, l->me, now_ms);
    bool ok = false;
    if (a != DS_LEASE_FOLLOW) {
        if (a == DS_LEASE_RENEW && (s = tlr_json_str(cur, "spec.acquireTime")))
            tlr_time_parse(s, &acq_ms);
        json_object *b = body(l, l->me, now_ms, acq_ms, rv, a == DS_LEASE_ACQUIRE ? tr + 1 : tr);
        ok = tlr_kube_update(l->kc, &res, l->ns, l->name, NULL, b, NULL, NULL) == TLR_OK;
        json_object_put(b);
    }
    json_object_put(cur);
    l->renewed_ms = ok ? now_ms : 0;
    return ok;
}

void ds_lease_release(ds_lease *l)
{
    if (!l || !l->renewed_ms)
        return;
    tlr_kube_res res = TLR_KUBE_RES_LEASES;
    json_object *cur = NULL;
    if (tlr_kube_get(l->kc, &res, l->ns, l->name, &cur, NULL) == TLR_OK) {
        const char *holder = tlr_json_str(cur, "spec.holderIdentity");
        if (holder && !strcmp(holder, l->me)) {
            int64_t tr = 0;
            tlr_json_int(cur, "spec.leaseTransitions", &tr);
            json_object *b = body(l, "", l->renewed_ms, l->renewed_ms,
                                  tlr_json_str(cur, "metadata.resourceVersion"), tr);
            tlr_kube_update(l->kc, &res, l->ns, l->name, NULL, b, NULL, NULL);
            json_object_put(b);
        }
        json_object_put(cur);
    }
    l->renewed_ms = 0;
}
