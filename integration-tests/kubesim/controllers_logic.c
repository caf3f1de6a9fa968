/* controllers_logic.c - the workload controllers' decisions as pure
 * functions (see controllers.h): template hashes, rollout steps, which
 * pods to delete first, where DaemonSet pods belong.
 */
#include "controllers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_json.h"

/* ------------------------------------------------------------------ */
/* Template hash                                                       */
/* ------------------------------------------------------------------ */

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Hash a JSON value with object keys in sorted order and every string
 * length-prefixed, so no two different documents feed the same bytes. */
static uint32_t hash_value(uint32_t h, json_object *v)
{
    char tag;
    switch (json_object_get_type(v)) {
    case json_type_null:
        return tlr_fnv1a32(h, "n", 1);
    case json_type_boolean:
        tag = json_object_get_boolean(v) ? 't' : 'f';
        return tlr_fnv1a32(h, &tag, 1);
    case json_type_int:
    case json_type_double: {
        const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
        h = tlr_fnv1a32(h, "#", 1);
        return tlr_fnv1a32(h, s, strlen(s) + 1);
    }
    case json_type_string: {
        uint32_t len = (uint32_t)json_object_get_string_len(v);
        h = tlr_fnv1a32(h, "s", 1);
        h = tlr_fnv1a32(h, &len, sizeof(len));
        return tlr_fnv1a32(h, json_object_get_string(v), len);
    }
    case json_type_array: {
        size_t n = json_object_array_length(v);
        h = tlr_fnv1a32(h, "[", 1);
        for (size_t i = 0; i < n; i++)
            h = hash_value(h, json_object_array_get_idx(v, i));
        return tlr_fnv1a32(h, "]", 1);
    }
    case json_type_object: {
        size_t n = (size_t)json_object_object_length(v), i = 0;
        const char **keys = malloc((n ? n : 1) * sizeof(char *));
        if (!keys)
            abort();
        json_object_object_foreach(v, k, val) {
            (void)val;
            keys[i++] = k;
        }
        qsort(keys, n, sizeof(char *), cmp_key);
        h = tlr_fnv1a32(h, "{", 1);
        for (i = 0; i < n; i++) {
            uint32_t len = (uint32_t)strlen(keys[i]);
            h = tlr_fnv1a32(h, &len, sizeof(len));
            h = tlr_fnv1a32(h, keys[i], len);
            h = hash_value(h, json_object_object_get(v, keys[i]));
        }
        free(keys);
        return tlr_fnv1a32(h, "}", 1);
    }
    }
    return h;
}

void ks_template_hash(json_object *tmpl, int64_t collision_count, char *buf, size_t len)
{
    /* the alphabet of apimachinery's rand.SafeEncodeString: no vowels,
     * no 0/1/3, so a hash never spells a word */
    static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
    uint32_t h = hash_value(TLR_FNV32_BASIS, tmpl);
    if (collision_count > 0) {
        uint32_t c = (uint32_t)collision_count;
        h = tlr_fnv1a32(h, &c, sizeof(c));
    }
    char dec[16];
    snprintf(dec, sizeof(dec), "%u", h);
    size_t i = 0;
    for (; dec[i] && i + 1 < len; i++)
        buf[i] = alnum[(unsigned char)dec[i] % (sizeof(alnum) - 1)];
    if (len)
        buf[i < len ? i : len - 1] = 0;
}

/* ------------------------------------------------------------------ */
/* Rolling updates                                                     */
/* ------------------------------------------------------------------ */

/* intstr.GetScaledValueFromIntOrPercent. */
static int scaled(json_object *v, int32_t total, bool round_up, int32_t def, int32_t *out,
                  const char *what, char *err, size_t errlen)
{
    if (!v) {
        *out = def;
        return TLR_OK;
    }
    if (json_object_is_type(v, json_type_int)) {
        *out = (int32_t)json_object_get_int(v);
        return TLR_OK;
    }
    const char *s = json_object_get_string(v);
    char *end = NULL;
    long pct = s ? strtol(s, &end, 10) : 0;
    if (!json_object_is_type(v, json_type_string) || !end || end == s || strcmp(end, "%") != 0) {
        snprintf(err, errlen, "%s: invalid value %s: must be an integer or a percentage", what,
                 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        return TLR_E_PARSE;
    }
    int64_t x = (int64_t)pct * total;
    *out = (int32_t)(round_up ? (x + 99) / 100 : x / 100);
    return TLR_OK;
}

int ks_deploy_surge(json_object *deploy, int32_t *surge, int32_t *unavailable,
                    char *err, size_t errlen)
{
    int64_t r = 1;
    (void)tlr_json_int(deploy, "spec.replicas", &r);
    int32_t replicas = (int32_t)r, s = 0, u = 0;
    const char *type = tlr_json_str(deploy, "spec.strategy.type");
    if (type && strcmp(type, "Recreate") == 0) {
        *surge = 0;
        *unavailable = replicas;
        return TLR_OK;
    }
    json_object *ru = tlr_json_obj(deploy, "spec.strategy.rollingUpdate");
    json_object *ms = tlr_json_get(ru, "maxSurge"), *mu = tlr_json_get(ru, "maxUnavailable");
    json_object *d = json_object_new_string("25%");
    int rc = scaled(ms ? ms : d, replicas, true, 0, &s, "maxSurge", err, errlen);
    if (rc == TLR_OK)
        rc = scaled(mu ? mu : d, replicas, false, 0, &u, "maxUnavailable", err, errlen);
    json_object_put(d);
    if (rc != TLR_OK)
        return rc;
    if (s == 0 && u == 0)
        u = 1;
    if (u > replicas)
        u = replicas;
    *surge = s;
    *unavailable = u;
    return TLR_OK;
}

static int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

bool ks_rollout_step(int32_t replicas, int32_t surge, int32_t unavailable,
                     const ks_rs_state *rs, size_t n, size_t new_idx, int32_t *want)
{
    int32_t all = 0, old = 0, available = 0;
    for (size_t i = 0; i < n; i++) {
        want[i] = rs[i].replicas;
        all += rs[i].replicas;
        available += rs[i].available;
        if (i != new_idx)
            old += rs[i].replicas;
    }
    if (new_idx >= n)
        return false;
    /* 1. the new ReplicaSet: down to replicas, or up within the surge */
    const ks_rs_state *nr = &rs[new_idx];
    if (nr->replicas > replicas) {
        want[new_idx] = replicas;
        return true;
    }
    if (nr->replicas < replicas) {
        int32_t max_total = replicas + surge;
        if (all < max_total) {
            want[new_idx] = nr->replicas + min32(max_total - all, replicas - nr->replicas);
            return true;
        }
    }
    /* 2. the old ones, oldest first: unhealthy replicas first, then as
     * far as availability allows */
    if (old == 0)
        return false;
    int32_t min_available = replicas - unavailable;
    int32_t new_unavailable = nr->replicas - nr->available;
    int32_t max_down = all - min_available - new_unavailable;
    if (max_down <= 0)
        return false;
    int32_t cleaned = 0;
    for (size_t i = 0; i < n && cleaned < max_down; i++) {
        if (i == new_idx || want[i] == 0 || want[i] <= rs[i].available)
            continue;
        int32_t d = min32(max_down - cleaned, want[i] - rs[i].available);
        want[i] -= d;
        cleaned += d;
    }
    int32_t scaled_down = 0;
    if (available > min_available) {
        int32_t total = available - min_available;
        for (size_t i = 0; i < n && scaled_down < total; i++) {
            if (i == new_idx || want[i] == 0)
                continue;
            int32_t d = min32(want[i], total - scaled_down);
            want[i] -= d;
            scaled_down += d;
        }
    }
    return cleaned + scaled_down > 0;
}

/* ------------------------------------------------------------------ */
/* Which pods go first                                                 */
/* ------------------------------------------------------------------ */

static int cmp_pod(const void *a, const void *b)
{
    const ks_ctl_pod *x = a, *y = b;
    if (x->assigned != y->assigned)
        return x->assigned ? 1 : -1;
    if (x->phase_rank != y->phase_rank)
        return x->phase_rank < y->phase_rank ? -1 : 1;
    if (x->ready != y->ready)
        return x->ready ? 1 : -1;
    if (x->ready && y->ready && x->ready_since_ms != y->ready_since_ms)
        return x->ready_since_ms > y->ready_since_ms ? -1 : 1;   /* ready less long first */
    if (x->restarts != y->restarts)
        return x->restarts > y->restarts ? -1 : 1;
    if (x->created_ms != y->created_ms)
        return x->created_ms > y->created_ms ? -1 : 1;           /* newer first */
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

void ks_ctl_rank_for_deletion(ks_ctl_pod *pods, size_t n)
{
    qsort(pods, n, sizeof(*pods), cmp_pod);
}

/* ------------------------------------------------------------------ */
/* DaemonSets                                                          */
/* ------------------------------------------------------------------ */

static const struct {
    const char *key, *effect;
} ds_tolerations[] = {
    { "node.kubernetes.io/not-ready", "NoExecute" },
    { "node.kubernetes.io/unreachable", "NoExecute" },
    { "node.kubernetes.io/disk-pressure", "NoSchedule" },
    { "node.kubernetes.io/memory-pressure", "NoSchedule" },
    { "node.kubernetes.io/pid-pressure", "NoSchedule" },
    { "node.kubernetes.io/unschedulable", "NoSchedule" },
    { "node.kubernetes.io/network-unavailable", "NoSchedule" },   /* hostNetwork only */
};
#define N_DS_TOL (sizeof(ds_tolerations) / sizeof(ds_tolerations[0]))

static bool host_network(json_object *spec)
{
    bool b = false;
    return tlr_json_bool(spec, "hostNetwork", &b) == TLR_OK && b;
}

static bool ds_tolerates(json_object *spec, const char *key, const char *value,
                         const char *effect)
{
    if (ks_tolerates(tlr_json_arr(spec, "tolerations"), key, value, effect))
        return true;
    for (size_t i = 0; i < N_DS_TOL; i++) {
        if (i == N_DS_TOL - 1 && !host_network(spec))
            break;
        if (strcmp(ds_tolerations[i].key, key) == 0 &&
            strcmp(ds_tolerations[i].effect, effect) == 0)
            return true;
    }
    return false;
}

bool ks_ds_should_run(json_object *spec, const ks_node_info *n)
{
    if (!ks_node_affinity_matches(spec, n))
        return false;
    for (size_t i = 0; n->taints && i < json_object_array_length(n->taints); i++) {
        json_object *t = json_object_array_get_idx(n->taints, i);
        const char *k = tlr_json_str(t, "key"), *v = tlr_json_str(t, "value");
        const char *e = tlr_json_str(t, "effect");
        if (!e || (strcmp(e, "NoSchedule") != 0 && strcmp(e, "NoExecute") != 0))
            continue;
        if (!ds_tolerates(spec, k ? k : "", v ? v : "", e))
            return false;
    }
    return true;
}

void ks_ds_pod_prepare(json_object *spec, const char *node)
{
    json_object *tols = tlr_json_arr(spec, "tolerations");
    if (!tols) {
        tols = json_object_new_array();
        json_object_object_add(spec, "tolerations", tols);
    }
    for (size_t i = 0; i < N_DS_TOL; i++) {
        if (i == N_DS_TOL - 1 && !host_network(spec))
            break;
        bool have = false;
        for (size_t j = 0; j < json_object_array_length(tols) && !have; j++) {
            json_object *t = json_object_array_get_idx(tols, j);
            const char *k = tlr_json_str(t, "key"), *e = tlr_json_str(t, "effect");
            have = k && e && !strcmp(k, ds_tolerations[i].key) &&
                   !strcmp(e, ds_tolerations[i].effect);
        }
        if (have)
            continue;
        json_object *t = json_object_new_object();
        json_object_object_add(t, "key", json_object_new_string(ds_tolerations[i].key));
        json_object_object_add(t, "operator", json_object_new_string("Exists"));
        json_object_object_add(t, "effect", json_object_new_string(ds_tolerations[i].effect));
        json_object_array_add(tols, t);
    }
    json_object *aff = tlr_json_obj(spec, "affinity");
    if (!aff) {
        aff = json_object_new_object();
        json_object_object_add(spec, "affinity", aff);
    }
    json_object *na = tlr_json_obj(aff, "nodeAffinity");
    if (!na) {
        na = json_object_new_object();
        json_object_object_add(aff, "nodeAffinity", na);
    }
    json_object *req = json_object_new_object(), *terms = json_object_new_array();
    json_object *term = json_object_new_object(), *fields = json_object_new_array();
    json_object *f = json_object_new_object(), *vals = json_object_new_array();
    json_object_array_add(vals, json_object_new_string(node));
    json_object_object_add(f, "key", json_object_new_string("metadata.name"));
    json_object_object_add(f, "operator", json_object_new_string("In"));
    json_object_object_add(f, "values", vals);
    json_object_array_add(fields, f);
    json_object_object_add(term, "matchFields", fields);
    json_object_array_add(terms, term);
    json_object_object_add(req, "nodeSelectorTerms", terms);
    json_object_object_add(na, "requiredDuringSchedulingIgnoredDuringExecution", req);
}
