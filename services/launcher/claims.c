/* claims.c - the in-flight claim registry and NodeClaim JSON (claims.h). */
#include "claims.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_labels.h"
#include "tlr_quantity.h"
#include "tlr_time.h"

/* An array of pointers: an entry stays where it is until removed, so a
 * caller may hold several entries across adds and removals of others. */
struct lc_claims {
    lc_claim **v;
    size_t n, cap;
};

void lc_claims_create(lc_claims **out)
{
    *out = tlr_calloc(1, sizeof(lc_claims));
}

void lc_claims_free(lc_claims *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        protobuf_c_message_free_unpacked(&r->v[i]->nc->base, NULL);
        free(r->v[i]);
    }
    free(r->v);
    free(r);
}

lc_claim *lc_claims_find(lc_claims *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i]->nc->name, name) == 0)
            return r->v[i];
    return NULL;
}

lc_claim *lc_claims_add(lc_claims *r, Tailor__V1__NodeClaim *nc, int64_t now_ms)
{
    if (lc_claims_find(r, nc->name)) {
        protobuf_c_message_free_unpacked(&nc->base, NULL);
        return NULL;
    }
    TLR_GROW(r->v, r->cap, r->n + 1);
    lc_claim *c = tlr_calloc(1, sizeof(*c));
    c->nc = nc;
    c->created_ms = now_ms;
    r->v[r->n++] = c;
    return c;
}

void lc_claims_remove(lc_claims *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->v[i]->nc->name, name) == 0) {
            protobuf_c_message_free_unpacked(&r->v[i]->nc->base, NULL);
            free(r->v[i]);
            memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(r->v[0]));
            r->n--;
            return;
        }
    }
}

size_t lc_claims_count(const lc_claims *r)
{
    return r->n;
}

lc_claim *lc_claims_at(lc_claims *r, size_t i)
{
    return r->v[i];
}

void lc_claim_name(const char *nodepool, uint64_t rnd, char *buf, size_t len)
{
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";   /* k8s generateName's */
    char sfx[6];
    for (int i = 0; i < 5; i++) {
        sfx[i] = alpha[rnd % (sizeof(alpha) - 1)];
        rnd /= sizeof(alpha) - 1;
    }
    sfx[5] = 0;
    /* Names are at most 63 characters in tags and labels. */
    int keep = (int)(len < 64 ? len : 64) - 7;
    snprintf(buf, len, "%.*s-%s", keep, nodepool, sfx);
}

Tailor__V1__NodeClaim *lc_claim_copy(const Tailor__V1__NodeClaim *nc)
{
    size_t n = protobuf_c_message_get_packed_size(&nc->base);
    uint8_t *b = tlr_malloc(n ? n : 1);
    protobuf_c_message_pack(&nc->base, b);
    Tailor__V1__NodeClaim *c = tailor__v1__node_claim__unpack(NULL, n, b);
    free(b);
    if (!c)
        abort();   /* we packed it: a failure is a bug */
    return c;
}

static const char *op_name(Tailor__V1__SelectorOperator op)
{
    switch (op) {
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN: return "In";
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_NOT_IN: return "NotIn";
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_EXISTS: return "Exists";
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_DOES_NOT_EXIST: return "DoesNotExist";
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GT: return "Gt";
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LT: return "Lt";
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_GTE: return "Gte";
    case TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_LTE: return "Lte";
    default: return "Exists";
    }
}

const char *lc_taint_effect_name(Tailor__V1__TaintEffect e)
{
    switch (e) {
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE: return "PreferNoSchedule";
    case TAILOR__V1__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE: return "NoExecute";
    default: return "NoSchedule";
    }
}

static json_object *taints_json(Tailor__V1__Taint *const *t, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "key", json_object_new_string(t[i]->key));
        if (t[i]->value[0])
            json_object_object_add(o, "value", json_object_new_string(t[i]->value));
        json_object_object_add(o, "effect", json_object_new_string(lc_taint_effect_name(t[i]->effect)));
        json_object_array_add(a, o);
    }
    return a;
}

void lc_claim_label_set(Tailor__V1__NodeClaim *nc, const char *key, const char *value)
{
    for (size_t i = 0; i < nc->n_labels; i++)
        if (strcmp(nc->labels[i]->key, key) == 0) {
            if (nc->labels[i]->value != protobuf_c_empty_string)
                free(nc->labels[i]->value);
            nc->labels[i]->value = tlr_strdup(value);
            return;
        }
    Tailor__V1__Label *l = tlr_malloc(sizeof(*l));
    tailor__v1__label__init(l);
    l->key = tlr_strdup(key);
    l->value = tlr_strdup(value);
    nc->labels = tlr_realloc(nc->labels, (nc->n_labels + 1) * sizeof(*nc->labels));
    nc->labels[nc->n_labels++] = l;
}

const char *lc_claim_label(const Tailor__V1__NodeClaim *nc, const char *key)
{
    for (size_t i = 0; i < nc->n_labels; i++)
        if (strcmp(nc->labels[i]->key, key) == 0)
            return nc->labels[i]->value;
    return NULL;
}

/* Keys in the kubernetes.io and k8s.io domains that a NodeClaim still
 * carries as labels (Karpenter's WellKnownLabels). */
static bool restricted_label(const char *key)
{
    static const char *const known[] = {
        TLR_LABEL_ZONE, TLR_LABEL_REGION,
        TLR_LABEL_INSTANCE_TYPE, TLR_LABEL_ARCH, TLR_LABEL_OS,
        TLR_LABEL_WINDOWS_BUILD, TLR_LABEL_ZONE_ID,
    };
    const char *slash = strchr(key, '/');
    if (!slash)
        return false;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(key, known[i]) == 0)
            return false;
    size_t dl = (size_t)(slash - key);
    static const char *const domains[] = { "kubernetes.io", "k8s.io" };
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(domains[i]);
        if (dl == n && strncmp(key, domains[i], n) == 0)
            return true;
        if (dl > n && key[dl - n - 1] == '.' && strncmp(key + dl - n, domains[i], n) == 0)
            return true;
    }
    return false;
}

void lc_claim_fill_labels(Tailor__V1__NodeClaim *nc)
{
    for (size_t i = 0; i < nc->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = nc->requirements[i];
        if (r->operator_ != TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN ||
            r->n_values != 1 || restricted_label(r->key) || lc_claim_label(nc, r->key))
            continue;
        lc_claim_label_set(nc, r->key, r->values[0]);
    }
    if (nc->nodepool[0])
        lc_claim_label_set(nc, TLR_LABEL_NODEPOOL, nc->nodepool);
    if (nc->node_class[0])
        lc_claim_label_set(nc, TLR_LABEL_NODECLASS, nc->node_class);
}

void lc_claim_add_instance_labels(Tailor__V1__NodeClaim *nc, const Tailor__V1__InstanceType *it,
                                  const char *region)
{
    const Tailor__V1__NodeClaimStatus *st = nc->status;
    if (!st)
        return;
    for (size_t i = 0; it && i < it->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = it->requirements[i];
        if (r->operator_ == TAILOR__V1__SELECTOR_OPERATOR__SELECTOR_OPERATOR_IN &&
            r->n_values == 1)
            lc_claim_label_set(nc, r->key, r->values[0]);
    }
    if (st->instance_type[0])
        lc_claim_label_set(nc, TLR_LABEL_INSTANCE_TYPE, st->instance_type);
    if (it && it->arch[0])
        lc_claim_label_set(nc, TLR_LABEL_ARCH, it->arch);
    if (!lc_claim_label(nc, TLR_LABEL_OS))
        lc_claim_label_set(nc, TLR_LABEL_OS, "linux");
    if (st->zone[0]) {
        lc_claim_label_set(nc, TLR_LABEL_ZONE, st->zone);
        char reg[64];
        if (region && region[0]) {
            snprintf(reg, sizeof(reg), "%s", region);
        } else {
            /* us-east-1a -> us-east-1 */
            size_t n = strlen(st->zone);
            snprintf(reg, sizeof(reg), "%.*s", (int)(n > 1 ? n - 1 : n), st->zone);
        }
        lc_claim_label_set(nc, TLR_LABEL_REGION, reg);
        for (size_t i = 0; it && i < it->n_offerings; i++)
            if (!strcmp(it->offerings[i]->zone, st->zone) && it->offerings[i]->zone_id &&
                it->offerings[i]->zone_id[0]) {
                lc_claim_label_set(nc, TLR_LABEL_ZONE_ID, it->offerings[i]->zone_id);
                break;
            }
    }
    lc_claim_label_set(nc, TLR_LABEL_CAPACITY_TYPE,
                       st->capacity_type == TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
                           ? "spot" : "on-demand");
}

char *lc_claim_labels_patch(const Tailor__V1__NodeClaim *nc)
{
    json_object *root = json_object_new_object(), *md = json_object_new_object();
    json_object *labels = json_object_new_object();
    for (size_t i = 0; i < nc->n_labels; i++)
        json_object_object_add(labels, nc->labels[i]->key,
                               json_object_new_string(nc->labels[i]->value));
    json_object_object_add(md, "labels", labels);
    json_object_object_add(root, "metadata", md);
    char *s = tlr_strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return s;
}

static void add_qty(json_object *o, const char *key, int64_t v, bool milli)
{
    char buf[TLR_QUANTITY_STR_MAX];
    if (v <= 0)
        return;
    if ((milli ? tlr_quantity_format_milli(v, buf, sizeof(buf))
               : tlr_quantity_format_bytes(v, buf, sizeof(buf))) == 0)
        json_object_object_add(o, key, json_object_new_string(buf));
}

static json_object *resources_json(const Tailor__V1__ResourceList *r)
{
    json_object *o = json_object_new_object();
    if (!r)
        return o;
    add_qty(o, "cpu", r->cpu_millis, true);
    add_qty(o, "memory", r->memory_bytes, false);
    add_qty(o, "ephemeral-storage", r->ephemeral_storage_bytes, false);
    if (r->pods > 0) {
        char b[32];
        snprintf(b, sizeof(b), "%lld", (long long)r->pods);
        json_object_object_add(o, "pods", json_object_new_string(b));
    }
    for (size_t i = 0; i < r->n_extended; i++) {
        char b[32];
        snprintf(b, sizeof(b), "%lld", (long long)r->extended[i]->value);
        json_object_object_add(o, r->extended[i]->name, json_object_new_string(b));
    }
    return o;
}

char *lc_claim_json(const Tailor__V1__NodeClaim *nc, const char *pool_uid)
{
    json_object *root = json_object_new_object();
    json_object_object_add(root, "apiVersion", json_object_new_string("karpenter.sh/v1"));
    json_object_object_add(root, "kind", json_object_new_string("NodeClaim"));

    json_object *md = json_object_new_object();
    json_object_object_add(md, "name", json_object_new_string(nc->name));
    json_object *labels = json_object_new_object();
    for (size_t i = 0; i < nc->n_labels; i++)
        json_object_object_add(labels, nc->labels[i]->key,
                               json_object_new_string(nc->labels[i]->value));
    json_object_object_add(labels, TLR_LABEL_NODEPOOL, json_object_new_string(nc->nodepool));
    json_object_object_add(labels, TLR_LABEL_NODECLASS,
                           json_object_new_string(nc->node_class));
    json_object_object_add(md, "labels", labels);
    json_object *ann = json_object_new_object();
    for (size_t i = 0; i < nc->n_annotations; i++)
        json_object_object_add(ann, nc->annotations[i]->key,
                               json_object_new_string(nc->annotations[i]->value));
    if (nc->nodepool_hash[0])
        json_object_object_add(ann, TLR_ANNOTATION_NODEPOOL_HASH,
                               json_object_new_string(nc->nodepool_hash));
    if (nc->node_class_hash[0])
        json_object_object_add(ann, TLR_ANNOTATION_NODECLASS_HASH,
                               json_object_new_string(nc->node_class_hash));
    json_object_object_add(md, "annotations", ann);
    if (pool_uid && pool_uid[0]) {
        json_object *ref = json_object_new_object();
        json_object_object_add(ref, "apiVersion", json_object_new_string("karpenter.sh/v1"));
        json_object_object_add(ref, "kind", json_object_new_string("NodePool"));
        json_object_object_add(ref, "name", json_object_new_string(nc->nodepool));
        json_object_object_add(ref, "uid", json_object_new_string(pool_uid));
        json_object_object_add(ref, "blockOwnerDeletion", json_object_new_boolean(1));
        json_object *refs = json_object_new_array();
        json_object_array_add(refs, ref);
        json_object_object_add(md, "ownerReferences", refs);
    }
    json_object_object_add(root, "metadata", md);

    json_object *spec = json_object_new_object();
    json_object *ncr = json_object_new_object();
    json_object_object_add(ncr, "group", json_object_new_string("karpenter.k8s.aws"));
    json_object_object_add(ncr, "kind", json_object_new_string("EC2NodeClass"));
    json_object_object_add(ncr, "name", json_object_new_string(nc->node_class));
    json_object_object_add(spec, "nodeClassRef", ncr);
    json_object *reqs = json_object_new_array();
    for (size_t i = 0; i < nc->n_requirements; i++) {
        const Tailor__V1__NodeSelectorRequirement *r = nc->requirements[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "key", json_object_new_string(r->key));
        json_object_object_add(o, "operator", json_object_new_string(op_name(r->operator_)));
        json_object *vals = json_object_new_array();
        for (size_t j = 0; j < r->n_values; j++)
            json_object_array_add(vals, json_object_new_string(r->values[j]));
        json_object_object_add(o, "values", vals);
        if (r->min_values > 0)
            json_object_object_add(o, "minValues", json_object_new_int(r->min_values));
        json_object_array_add(reqs, o);
    }
    json_object_object_add(spec, "requirements", reqs);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "requests", resources_json(nc->resources_requested));
    json_object_object_add(spec, "resources", res);
    if (nc->n_taints)
        json_object_object_add(spec, "taints", taints_json(nc->taints, nc->n_taints));
    if (nc->n_startup_taints)
        json_object_object_add(spec, "startupTaints",
                               taints_json(nc->startup_taints, nc->n_startup_taints));
    char dur[32];
    if (nc->expire_never) {
        json_object_object_add(spec, "expireAfter", json_object_new_string("Never"));
    } else if (nc->expire_after_ms > 0) {
        tlr_duration_format(nc->expire_after_ms, dur, sizeof(dur));
        json_object_object_add(spec, "expireAfter", json_object_new_string(dur));
    }
    if (nc->termination_grace_period_ms > 0) {
        tlr_duration_format(nc->termination_grace_period_ms, dur, sizeof(dur));
        json_object_object_add(spec, "terminationGracePeriod", json_object_new_string(dur));
    }
    json_object_object_add(root, "spec", spec);

    char *s = tlr_strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return s;
}

static void add_cond(json_object *arr, const char *type, int64_t at_ms, const char *reason)
{
    char ts[TLR_TIME_BUFLEN];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string(type));
    json_object_object_add(o, "status", json_object_new_string(at_ms ? "True" : "Unknown"));
    json_object_object_add(o, "reason", json_object_new_string(at_ms ? type : reason));
    json_object_object_add(o, "message", json_object_new_string(""));
    tlr_time_format_s(at_ms, ts);
    json_object_object_add(o, "lastTransitionTime", json_object_new_string(ts));
    json_object_array_add(arr, o);
}

char *lc_claim_status_json(const lc_claim *c)
{
    const Tailor__V1__NodeClaimStatus *st = c->nc->status;
    json_object *root = json_object_new_object();
    json_object *s = json_object_new_object();
    if (st && st->provider_id[0])
        json_object_object_add(s, "providerID", json_object_new_string(st->provider_id));
    if (st && st->image_id[0])
        json_object_object_add(s, "imageID", json_object_new_string(st->image_id));
    if (st && st->node_name[0])
        json_object_object_add(s, "nodeName", json_object_new_string(st->node_name));
    if (st && st->capacity)
        json_object_object_add(s, "capacity", resources_json(st->capacity));
    if (st && st->allocatable)
        json_object_object_add(s, "allocatable", resources_json(st->allocatable));
    json_object *conds = json_object_new_array();
    add_cond(conds, "Launched", c->launched_ms, "NotLaunched");
    add_cond(conds, "Registered", c->registered_ms, "NotRegistered");
    add_cond(conds, "Initialized", c->initialized_ms, "NotInitialized");
    add_cond(conds, "Ready", c->initialized_ms, "NotInitialized");
    json_object_object_add(s, "conditions", conds);
    json_object_object_add(root, "status", s);
    char *out = tlr_strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return out;
}
