/* pdb.c - PodDisruptionBudget status math and eviction decisions (pure;
 * the rules are in pdb.h).
 */
#include "pdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_time.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static bool pod_ready(json_object *pod)
{
    json_object *conds = tlr_json_arr(pod, "status.conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (t && s && strcmp(t, "Ready") == 0)
            return strcmp(s, "True") == 0;
    }
    return false;
}

static int64_t get_int(json_object *o, const char *path, int64_t def)
{
    int64_t v;
    return tlr_json_int(o, path, &v) == TLR_OK ? v : def;
}

/* intstr.GetScaledValueFromIntOrPercent(v, total, roundUp=true). */
static int scaled_value(json_object *v, int32_t total, int32_t *out, char *err, size_t errlen)
{
    if (json_object_is_type(v, json_type_int)) {
        *out = (int32_t)json_object_get_int(v);
        return TLR_OK;
    }
    const char *s = json_object_get_string(v);
    size_t len = s ? strlen(s) : 0;
    char *end = NULL;
    long pct = len > 1 && s[len - 1] == '%' ? strtol(s, &end, 10) : 0;
    if (!json_object_is_type(v, json_type_string) || len < 2 || s[len - 1] != '%' ||
        end != s + len - 1) {
        snprintf(err, errlen, "invalid value for IntOrString: invalid type: string is not a "
                 "percentage");
        return TLR_E_PARSE;
    }
    int64_t scaled = ((int64_t)pct * total + 99) / 100;   /* ceil for pct >= 0 */
    if (pct < 0)
        scaled = ((int64_t)pct * total) / 100;
    *out = (int32_t)scaled;
    return TLR_OK;
}

/* ------------------------------------------------------------------ */
/* Status                                                              */
/* ------------------------------------------------------------------ */

/* The sum of the scales of the pods' distinct controllers. */
static int expected_scale(json_object *pdb, const ks_pdb_pod *pods, size_t n,
                          ks_pdb_scale_fn scale, void *arg, int32_t *out,
                          char *err, size_t errlen)
{
    const char *ns = tlr_json_str(pdb, "metadata.namespace");
    json_object *seen = json_object_new_object();   /* controller uid -> scale */
    json_object *owner_to_scale = json_object_new_object();
    int rc = TLR_OK;
    for (size_t i = 0; i < n && rc == TLR_OK; i++) {
        const ks_pdb_pod *p = &pods[i];
        if (!p->owner_uid || !*p->owner_uid)
            continue;   /* unmanaged pods are ignored */
        if (json_object_object_get_ex(owner_to_scale, p->owner_uid, NULL))
            continue;
        char suid[128] = "";
        int32_t sc = 0;
        if (!scale || scale(arg, ns ? ns : "", p->owner_kind, p->owner_name, p->owner_uid,
                            suid, sizeof(suid), &sc) != TLR_OK) {
            snprintf(err, errlen, "found no controllers for pod \"%s\"", p->name);
            rc = TLR_E_NOTFOUND;
            break;
        }
        json_object_object_add(owner_to_scale, p->owner_uid, json_object_new_int(sc));
        json_object_object_add(seen, suid[0] ? suid : p->owner_uid, json_object_new_int(sc));
    }
    if (rc == TLR_OK) {
        int64_t sum = 0;
        json_object_object_foreach(seen, k, v) {
            (void)k;
            sum += json_object_get_int(v);
        }
        *out = (int32_t)sum;
    }
    json_object_put(seen);
    json_object_put(owner_to_scale);
    return rc;
}

void ks_pdb_calc_clear(ks_pdb_calc *c)
{
    json_object_put(c->disrupted);
    c->disrupted = NULL;
}

void ks_pdb_compute(json_object *pdb, json_object *disrupted_from,
                    const ks_pdb_pod *pods, size_t n, ks_pdb_scale_fn scale,
                    void *arg, int64_t now_ms, ks_pdb_calc *out)
{
    memset(out, 0, sizeof(*out));
    out->disrupted = json_object_new_object();
    json_object *max_un = tlr_json_get(pdb, "spec.maxUnavailable");
    json_object *min_av = tlr_json_get(pdb, "spec.minAvailable");
    int rc = TLR_OK;
    if (max_un) {
        int32_t mu = 0;
        rc = expected_scale(pdb, pods, n, scale, arg, &out->expected, out->err, sizeof(out->err));
        if (rc == TLR_OK)
            rc = scaled_value(max_un, out->expected, &mu, out->err, sizeof(out->err));
        if (rc == TLR_OK)
            out->desired = out->expected - mu < 0 ? 0 : out->expected - mu;
    } else if (min_av && json_object_is_type(min_av, json_type_int)) {
        out->desired = (int32_t)json_object_get_int(min_av);
        out->expected = (int32_t)n;
    } else if (min_av) {
        rc = expected_scale(pdb, pods, n, scale, arg, &out->expected, out->err, sizeof(out->err));
        if (rc == TLR_OK)
            rc = scaled_value(min_av, out->expected, &out->desired, out->err, sizeof(out->err));
    }
    if (rc != TLR_OK) {
        out->failed = true;
        return;
    }
    /* keep the disruptedPods entries of pods that still exist, are not yet
     * terminating and were evicted recently; they do not count as healthy */
    json_object *old = tlr_json_obj(disrupted_from, "status.disruptedPods");
    for (size_t i = 0; i < n; i++) {
        const ks_pdb_pod *p = &pods[i];
        json_object *ts;
        int64_t at;
        bool disrupted = false;
        if (old && !p->deleting && json_object_object_get_ex(old, p->name, &ts) &&
            tlr_time_parse(json_object_get_string(ts), &at) == TLR_OK &&
            at + KS_PDB_DELETION_TIMEOUT_MS > now_ms) {
            json_object_object_add(out->disrupted, p->name, json_object_get(ts));
            disrupted = true;
        }
        if (p->ready && !p->deleting && !disrupted)
            out->healthy++;
    }
    out->allowed = out->healthy - out->desired;
    if (out->expected <= 0 || out->allowed < 0)
        out->allowed = 0;
}

/* Set the DisruptionAllowed condition (SetStatusCondition semantics). */
static bool set_condition(json_object *status, const char *cstatus, const char *reason,
                          const char *message, int64_t gen, const char *now)
{
    json_object *conds = tlr_json_arr(status, "conditions");
    if (!conds) {
        conds = json_object_new_array();
        json_object_object_add(status, "conditions", conds);
    }
    json_object *c = NULL;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *x = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(x, "type");
        if (t && strcmp(t, "DisruptionAllowed") == 0)
            c = x;
    }
    const char *os = c ? tlr_json_str(c, "status") : NULL;
    const char *orr = c ? tlr_json_str(c, "reason") : NULL;
    const char *om = c ? tlr_json_str(c, "message") : NULL;
    int64_t og = c ? get_int(c, "observedGeneration", -1) : -1;
    if (c && os && orr && om && strcmp(os, cstatus) == 0 && strcmp(orr, reason) == 0 &&
        strcmp(om, message) == 0 && og == gen)
        return false;
    bool transition = !c || !os || strcmp(os, cstatus) != 0;
    if (!c) {
        c = json_object_new_object();
        json_object_array_add(conds, c);
        json_object_object_add(c, "type", json_object_new_string("DisruptionAllowed"));
    }
    json_object_object_add(c, "status", json_object_new_string(cstatus));
    json_object_object_add(c, "observedGeneration", json_object_new_int64(gen));
    if (transition || !tlr_json_str(c, "lastTransitionTime"))
        json_object_object_add(c, "lastTransitionTime", json_object_new_string(now));
    json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(message));
    return true;
}

/* status[key] = v; true when it changed. */
static bool set_int(json_object *status, const char *key, int64_t v)
{
    int64_t old;
    if (tlr_json_int(status, key, &old) == TLR_OK && old == v)
        return false;
    json_object_object_add(status, key, json_object_new_int64(v));
    return true;
}

bool ks_pdb_apply(json_object *pdb, const ks_pdb_calc *c, const char *now)
{
    json_object *status = tlr_json_obj(pdb, "status");
    if (!status) {
        status = json_object_new_object();
        json_object_object_add(pdb, "status", status);
    }
    bool changed = false;
    int64_t og = get_int(status, "observedGeneration", 0);
    if (c->failed) {
        changed |= set_int(status, "disruptionsAllowed", 0);
        changed |= set_condition(status, "False", "SyncFailed", c->err, og, now);
        return changed;
    }
    int64_t gen = get_int(pdb, "metadata.generation", 0);
    changed |= set_int(status, "currentHealthy", c->healthy);
    changed |= set_int(status, "desiredHealthy", c->desired);
    changed |= set_int(status, "expectedPods", c->expected);
    changed |= set_int(status, "disruptionsAllowed", c->allowed);
    changed |= set_int(status, "observedGeneration", gen);
    json_object *old = tlr_json_obj(status, "disruptedPods");
    size_t nold = old ? (size_t)json_object_object_length(old) : 0;
    size_t nnew = (size_t)json_object_object_length(c->disrupted);
    if (nold != nnew || (nnew && !json_object_equal(old, c->disrupted))) {
        if (nnew) {
            json_object *copy = NULL;
            json_object_deep_copy(c->disrupted, &copy, NULL);
            json_object_object_add(status, "disruptedPods", copy);
        } else {
            json_object_object_del(status, "disruptedPods");
        }
        changed = true;
    }
    if (c->allowed > 0)
        changed |= set_condition(status, "True", "SufficientPods", "", gen, now);
    else
        changed |= set_condition(status, "False", "InsufficientPods", "", gen, now);
    return changed;
}

/* ------------------------------------------------------------------ */
/* Eviction                                                            */
/* ------------------------------------------------------------------ */

bool ks_pdb_selects(json_object *pdb, json_object *pod_labels, bool for_eviction)
{
    json_object *sel = tlr_json_obj(pdb, "spec.selector");
    if (!sel)
        return false;
    if (for_eviction) {
        json_object *ml = tlr_json_obj(sel, "matchLabels");
        json_object *me = tlr_json_arr(sel, "matchExpressions");
        if ((!ml || json_object_object_length(ml) == 0) &&
            (!me || json_object_array_length(me) == 0))
            return false;   /* "should match nothing, not everything" */
    }
    ks_selector *s = NULL;
    if (ks_label_selector_from_json(sel, false, &s, NULL) != TLR_OK)
        return false;   /* an invalid selector matches nothing */
    bool m = ks_selector_matches_labels(s, pod_labels);
    ks_selector_free(s);
    return m;
}

bool ks_evict_can_ignore_pdb(json_object *pod)
{
    const char *phase = tlr_json_str(pod, "status.phase");
    if (tlr_json_str(pod, "metadata.deletionTimestamp"))
        return true;
    /* an absent phase is what the API defaults to: Pending */
    return !phase || strcmp(phase, "Pending") == 0 || strcmp(phase, "Succeeded") == 0 ||
           strcmp(phase, "Failed") == 0;
}

bool ks_evict_unhealthy_ok(json_object *pod, json_object *pdb)
{
    if (pod_ready(pod))
        return false;
    const char *policy = tlr_json_str(pdb, "spec.unhealthyPodEvictionPolicy");
    if (policy && strcmp(policy, "AlwaysAllow") == 0)
        return true;
    int64_t cur = get_int(pdb, "status.currentHealthy", 0);
    int64_t des = get_int(pdb, "status.desiredHealthy", 0);
    return cur >= des && des > 0;
}

static int too_many_requests(ks_status *st, int retry_after, const char *cause)
{
    int rc = ks_status_set(st, TLR_E_THROTTLED, 429, "TooManyRequests",
                           "Cannot evict pod as it would violate the pod's disruption budget.");
    if (st) {
        st->cause_reason = "DisruptionBudget";
        snprintf(st->cause_message, sizeof(st->cause_message), "%s", cause);
        st->retry_after = retry_after;
    }
    return rc;
}

static int forbidden(ks_status *st, const char *name, const char *why)
{
    int rc = ks_status_set(st, TLR_E_AUTH, 403, "Forbidden",
                           "poddisruptionbudget.policy \"%s\" is forbidden: %s", name, why);
    if (st) {
        st->kind = "poddisruptionbudget";
        st->group = "policy";
        snprintf(st->name, sizeof(st->name), "%s", name);
    }
    return rc;
}

int ks_pdb_check_and_decrement(json_object *pdb, const char *pod_name,
                               const char *now, ks_status *st)
{
    const char *name = tlr_json_str(pdb, "metadata.name");
    if (!name)
        name = "";
    int64_t gen = get_int(pdb, "metadata.generation", 0);
    int64_t og = get_int(pdb, "status.observedGeneration", 0);
    int64_t allowed = get_int(pdb, "status.disruptionsAllowed", 0);
    json_object *disrupted = tlr_json_obj(pdb, "status.disruptedPods");
    char cause[256];
    if (og < gen) {
        snprintf(cause, sizeof(cause),
                 "The disruption budget %s is still being processed by the server.", name);
        return too_many_requests(st, 10, cause);
    }
    if (allowed < 0)
        return forbidden(st, name, "pdb disruptions allowed is negative");
    if (disrupted && json_object_object_length(disrupted) > KS_PDB_MAX_DISRUPTED)
        return forbidden(st, name, "DisruptedPods map too big - too many evictions not "
                                   "confirmed by PDB controller");
    if (allowed == 0) {
        snprintf(cause, sizeof(cause),
                 "The disruption budget %s needs %lld healthy pods and has %lld currently", name,
                 (long long)get_int(pdb, "status.desiredHealthy", 0),
                 (long long)get_int(pdb, "status.currentHealthy", 0));
        return too_many_requests(st, 0, cause);
    }
    json_object *status = tlr_json_obj(pdb, "status");
    json_object_object_add(status, "disruptionsAllowed", json_object_new_int64(allowed - 1));
    if (allowed - 1 == 0)
        set_condition(status, "False", "InsufficientPods", "", og, now);
    if (!disrupted) {
        disrupted = json_object_new_object();
        json_object_object_add(status, "disruptedPods", disrupted);
    }
    json_object_object_add(disrupted, pod_name, json_object_new_string(now));
    return TLR_OK;
}
