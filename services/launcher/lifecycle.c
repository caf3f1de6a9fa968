/* lifecycle.c - NodeClaim phase decisions (lifecycle.h). */
#include "lifecycle.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_bootstrap.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

static bool has_taint(const tlr_knode *n, const char *key)
{
    for (size_t i = 0; i < n->ntaints; i++)
        if (strcmp(n->taints[i].key, key) == 0)
            return true;
    return false;
}

static bool has_label(const tlr_knode *n, const char *key)
{
    for (size_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->label_keys[i], key) == 0)
            return true;
    return false;
}

static bool advertises(const tlr_knode *n, const char *resource)
{
    for (size_t i = 0; i < n->nextended; i++)
        if (strcmp(n->extended[i], resource) == 0)
            return true;
    return false;
}

/* Taints the kubelet and node controllers put on and take off by
 * themselves (Karpenter's KnownEphemeralTaints). */
static const char *const ephemeral[] = {
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.cloudprovider.kubernetes.io/uninitialized",
};

const char *lc_lifecycle_waiting(const lc_claim *c, const tlr_knode *n,
                                 const Tailor__V1__InstanceType *it, char *buf, size_t len)
{
    if (!n->ready)
        return "NodeNotReady";
    if (has_taint(n, TLR_TAINT_UNREGISTERED))
        return "UnregisteredTaintExists";
    for (size_t i = 0; i < sizeof(ephemeral) / sizeof(ephemeral[0]); i++)
        if (has_taint(n, ephemeral[i])) {
            snprintf(buf, len, "KnownEphemeralTaintsExist %s", ephemeral[i]);
            return buf;
        }
    for (size_t i = 0; i < c->nc->n_startup_taints; i++)
        if (has_taint(n, c->nc->startup_taints[i]->key)) {
            snprintf(buf, len, "StartupTaintsExist %s", c->nc->startup_taints[i]->key);
            return buf;
        }
    const Tailor__V1__ResourceList *cap = it ? it->capacity : NULL;
    for (size_t i = 0; cap && i < cap->n_extended; i++)
        if (cap->extended[i]->value > 0 && !advertises(n, cap->extended[i]->name)) {
            snprintf(buf, len, "ResourceNotRegistered %s", cap->extended[i]->name);
            return buf;
        }
    return NULL;
}

lc_life_action lc_lifecycle_decide(const lc_claim *c, const tlr_knode *node,
                                   const Tailor__V1__InstanceType *it, int64_t register_ttl_ms,
                                   int64_t now_ms)
{
    int64_t ttl = register_ttl_ms > 0 ? register_ttl_ms : LC_REGISTER_TTL_MS;
    if (!c->launched_ms)
        return now_ms - c->created_ms >= LC_LAUNCH_TTL_MS ? LC_LIFE_LAUNCH_TIMEOUT
                                                          : LC_LIFE_NONE;
    if (!c->registered_ms) {
        if (node)
            return LC_LIFE_REGISTERED;
        return now_ms - c->launched_ms >= ttl ? LC_LIFE_REGISTER_TIMEOUT : LC_LIFE_NONE;
    }
    char why[256];
    if (!c->initialized_ms && node && !lc_lifecycle_waiting(c, node, it, why, sizeof(why)))
        return LC_LIFE_INITIALIZED;
    return LC_LIFE_NONE;
}

/* ---- the registration patch ---------------------------------------------- */

static bool same_taint(const char *key, const char *effect, const tlr_ktaint *t)
{
    return strcmp(t->key, key) == 0 && strcmp(t->effect ? t->effect : "", effect) == 0;
}

static void add_taint(json_object *arr, const char *key, const char *value, const char *effect)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "key", json_object_new_string(key));
    if (value && value[0])
        json_object_object_add(o, "value", json_object_new_string(value));
    json_object_object_add(o, "effect", json_object_new_string(effect));
    json_object_array_add(arr, o);
}

/* Claim taints t[0..n) that the node (as patched so far: node's kept taints
 * plus arr) does not have, appended to arr. */
static void merge_taints(json_object *arr, const tlr_knode *n, Tailor__V1__Taint *const *t,
                         size_t nt)
{
    for (size_t i = 0; i < nt; i++) {
        const char *eff = lc_taint_effect_name(t[i]->effect);
        bool have = false;
        for (size_t j = 0; j < n->ntaints && !have; j++)
            have = same_taint(t[i]->key, eff, &n->taints[j]);
        for (size_t j = 0; j < json_object_array_length(arr) && !have; j++) {
            json_object *o = json_object_array_get_idx(arr, j), *k, *e;
            have = json_object_object_get_ex(o, "key", &k) &&
                   json_object_object_get_ex(o, "effect", &e) &&
                   strcmp(json_object_get_string(k), t[i]->key) == 0 &&
                   strcmp(json_object_get_string(e), eff) == 0;
        }
        if (!have)
            add_taint(arr, t[i]->key, t[i]->value, eff);
    }
}

char *lc_registration_patch(const lc_claim *c, const tlr_knode *n)
{
    const Tailor__V1__NodeClaim *nc = c->nc;
    json_object *root = json_object_new_object();
    json_object *md = json_object_new_object();
    if (n->resource_version && n->resource_version[0])
        json_object_object_add(md, "resourceVersion",
                               json_object_new_string(n->resource_version));
    json_object *labels = json_object_new_object();
    for (size_t i = 0; i < nc->n_labels; i++)
        json_object_object_add(labels, nc->labels[i]->key,
                               json_object_new_string(nc->labels[i]->value));
    if (nc->nodepool[0])
        json_object_object_add(labels, TLR_LABEL_NODEPOOL,
                               json_object_new_string(nc->nodepool));
    if (nc->node_class[0])
        json_object_object_add(labels, TLR_LABEL_NODECLASS,
                               json_object_new_string(nc->node_class));
    json_object_object_add(labels, TLR_LABEL_REGISTERED, json_object_new_string("true"));
    json_object_object_add(md, "labels", labels);
    if (nc->n_annotations) {
        json_object *ann = json_object_new_object();
        for (size_t i = 0; i < nc->n_annotations; i++)
            json_object_object_add(ann, nc->annotations[i]->key,
                                   json_object_new_string(nc->annotations[i]->value));
        json_object_object_add(md, "annotations", ann);
    }
    json_object_object_add(root, "metadata", md);

    /* The whole list (a merge patch replaces it): what the node has but
     * the unregistered taint, then what the claim adds. */
    json_object *taints = json_object_new_array();
    for (size_t i = 0; i < n->ntaints; i++) {
        const tlr_ktaint *t = &n->taints[i];
        if (strcmp(t->key, TLR_TAINT_UNREGISTERED) == 0)
            continue;
        add_taint(taints, t->key, t->value, t->effect ? t->effect : "NoSchedule");
    }
    json_object *added = json_object_new_array();
    merge_taints(added, n, nc->taints, nc->n_taints);
    /* Startup taints only the first time: once registered, whoever removed
     * them (the agent that readies the node) must not see them come back. */
    if (!has_label(n, TLR_LABEL_REGISTERED))
        merge_taints(added, n, nc->startup_taints, nc->n_startup_taints);
    for (size_t i = 0; i < json_object_array_length(added); i++)
        json_object_array_add(taints, json_object_get(json_object_array_get_idx(added, i)));
    json_object_put(added);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "taints", taints);
    json_object_object_add(root, "spec", spec);
    char *out = tlr_strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return out;
}

const tlr_knode *lc_node_for_instance(const tlr_knodes *nodes, const char *instance_id)
{
    if (!instance_id || !instance_id[0])
        return NULL;
    for (size_t i = 0; i < nodes->n; i++) {
        const char *id = tlr_provider_id_instance(nodes->v[i].provider_id);
        if (id && strcmp(id, instance_id) == 0)
            return &nodes->v[i];
    }
    return NULL;
}
