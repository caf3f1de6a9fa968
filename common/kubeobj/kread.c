/* kread.c - NodeClaims and Nodes into plain structs (tlr_kread.h). */
#include "tlr_kread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"
#include "tlr_time.h"

/* The string under key in the map at path (metadata.labels,
 * metadata.annotations); NULL when absent or not a string.  Keys hold
 * dots, so they are looked up whole rather than through a path. */
static const char *map_str(json_object *obj, const char *path, const char *key)
{
    json_object *m = tlr_json_obj(obj, path), *v = NULL;
    if (!m || !json_object_object_get_ex(m, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static void str_into(const char *s, char *out, size_t len)
{
    snprintf(out, len, "%s", s ? s : "");
}

/* A timestamp; 0 when absent or malformed. */
static int64_t time_of(const char *s)
{
    int64_t ms = 0;
    if (s)
        tlr_time_parse(s, &ms);
    return ms;
}

bool tlr_kread_has_finalizer(json_object *obj)
{
    json_object *f = tlr_json_arr(obj, "metadata.finalizers");
    for (size_t i = 0; f && i < json_object_array_length(f); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(f, i));
        if (s && !strcmp(s, TLR_FINALIZER_TERMINATION))
            return true;
    }
    return false;
}

/* The first status.conditions entry of type (with a status); NULL when
 * there is none. */
static json_object *condition(json_object *obj, const char *type)
{
    json_object *c = tlr_json_arr(obj, "status.conditions");
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *x = json_object_array_get_idx(c, i);
        const char *t = tlr_json_str(x, "type"), *s = tlr_json_str(x, "status");
        if (t && s && !strcmp(t, type))
            return x;
    }
    return NULL;
}

/* Condition type's status ("" when absent) into st (len bytes); its
 * message returned (borrowed, NULL when absent). */
static const char *condition_of(json_object *obj, const char *type, char *st, size_t len)
{
    json_object *x = condition(obj, type);
    str_into(x ? tlr_json_str(x, "status") : NULL, st, len);
    return x ? tlr_json_str(x, "message") : NULL;
}

static bool condition_true(json_object *obj, const char *type)
{
    json_object *x = condition(obj, type);
    return x && !strcmp(tlr_json_str(x, "status"), "True");
}

/* The reason of the first condition of type whose status is True and
 * which has a reason, into out (len bytes; "" otherwise). */
static void condition_reason(json_object *obj, const char *type, char *out, size_t len)
{
    json_object *c = tlr_json_arr(obj, "status.conditions");
    out[0] = '\0';
    for (size_t i = 0; c && i < json_object_array_length(c); i++) {
        json_object *x = json_object_array_get_idx(c, i);
        const char *t = tlr_json_str(x, "type"), *s = tlr_json_str(x, "status");
        const char *r = tlr_json_str(x, "reason");
        if (t && s && r && !strcmp(t, type) && !strcmp(s, "True")) {
            str_into(r, out, len);
            return;
        }
    }
}

void tlr_kclaim_read(json_object *obj, tlr_kclaim *out)
{
    memset(out, 0, sizeof(*out));
    const char *pid = tlr_json_str(obj, "status.providerID");
    out->name = tlr_strdup0(tlr_json_str(obj, "metadata.name"));
    out->uid = tlr_strdup0(tlr_json_str(obj, "metadata.uid"));
    out->nodepool = tlr_strdup0(map_str(obj, "metadata.labels", TLR_LABEL_NODEPOOL));
    out->nodeclass = tlr_strdup0(map_str(obj, "metadata.labels", TLR_LABEL_NODECLASS));
    out->provider_id = tlr_strdup0(pid);
    out->instance_id = tlr_strdup0(tlr_provider_id_instance(pid));
    out->node_name = tlr_strdup0(tlr_json_str(obj, "status.nodeName"));
    out->creation_ms = time_of(tlr_json_str(obj, "metadata.creationTimestamp"));
    out->deletion_ms = time_of(tlr_json_str(obj, "metadata.deletionTimestamp"));
    out->finalizer = tlr_kread_has_finalizer(obj);
    const char *tgp = tlr_json_str(obj, "spec.terminationGracePeriod");
    if (tgp)
        tlr_duration_parse(tgp, &out->tgp_ms);
    out->term_ts_ms =
        time_of(map_str(obj, "metadata.annotations", TLR_ANNOTATION_TERMINATION_TIMESTAMP));
    out->initialized = condition_true(obj, "Initialized");
    out->launched = condition_true(obj, "Launched");
    out->drained_msg = tlr_strdup0(condition_of(obj, "Drained", out->drained, sizeof(out->drained)));
    condition_of(obj, "InstanceTerminating", out->terminating, sizeof(out->terminating));
    str_into(map_str(obj, "metadata.labels", TLR_LABEL_ZONE), out->zone, sizeof(out->zone));
    str_into(map_str(obj, "metadata.labels", TLR_LABEL_CAPACITY_TYPE), out->capacity_type,
             sizeof(out->capacity_type));
    condition_reason(obj, "DisruptionReason", out->disruption_reason, sizeof(out->disruption_reason));
}

/* Resources every node has; what is left in allocatable is an extended
 * resource (a device plugin's). */
static bool basic_resource(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           strcmp(name, "pods") == 0 || strcmp(name, "ephemeral-storage") == 0 ||
           strncmp(name, "hugepages-", 10) == 0 || strncmp(name, "attachable-volumes-", 19) == 0;
}

/* A quantity string that is not zero ("0", "0m", "0Gi" are). */
static bool nonzero_qty(const char *q)
{
    for (; q && *q; q++) {
        if (*q >= '1' && *q <= '9')
            return true;
        if (*q != '0' && *q != '.' && *q != '+')
            return false;   /* the digits are over: a suffix follows */
    }
    return false;
}

static void read_taints(json_object *obj, tlr_knode *out)
{
    json_object *taints = tlr_json_arr(obj, "spec.taints");
    if (!taints)
        return;
    size_t n = json_object_array_length(taints);
    out->taints = tlr_calloc(n + 1, sizeof(*out->taints));
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        const char *k = tlr_json_str(t, "key");
        const char *v = tlr_json_str(t, "value"), *e = tlr_json_str(t, "effect");
        if (!k)
            continue;
        if (!strcmp(k, TLR_TAINT_DISRUPTED) && e && !strcmp(e, "NoSchedule"))
            out->tainted = true;
        tlr_ktaint *d = &out->taints[out->ntaints++];
        d->key = tlr_strdup(k);
        d->value = tlr_strdup0(v);
        d->effect = tlr_strdup0(e);
    }
}

static void read_labels(json_object *obj, tlr_knode *out)
{
    json_object *labels = tlr_json_obj(obj, "metadata.labels");
    if (!labels)
        return;
    size_t n = (size_t)json_object_object_length(labels);
    out->label_keys = tlr_calloc(n + 1, sizeof(char *));
    out->label_values = tlr_calloc(n + 1, sizeof(char *));
    json_object_object_foreach(labels, k, v) {
        if (out->nlabels >= n)
            break;
        out->label_keys[out->nlabels] = tlr_strdup(k);
        out->label_values[out->nlabels++] =
            tlr_strdup0(json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL);
    }
}

static void read_extended(json_object *obj, tlr_knode *out)
{
    json_object *alloc = tlr_json_obj(obj, "status.allocatable");
    if (!alloc)
        return;
    size_t n = (size_t)json_object_object_length(alloc);
    out->extended = tlr_calloc(n + 1, sizeof(char *));
    json_object_object_foreach(alloc, k, v) {
        if (out->nextended >= n)
            break;
        if (!basic_resource(k) && nonzero_qty(json_object_get_string(v)))
            out->extended[out->nextended++] = tlr_strdup(k);
    }
}

void tlr_knode_read(json_object *obj, tlr_knode *out)
{
    memset(out, 0, sizeof(*out));
    out->name = tlr_strdup0(tlr_json_str(obj, "metadata.name"));
    out->uid = tlr_strdup0(tlr_json_str(obj, "metadata.uid"));
    out->provider_id = tlr_strdup0(tlr_json_str(obj, "spec.providerID"));
    out->nodepool = tlr_strdup0(map_str(obj, "metadata.labels", TLR_LABEL_NODEPOOL));
    out->resource_version = tlr_strdup(tlr_json_str(obj, "metadata.resourceVersion"));
    out->creation_ms = time_of(tlr_json_str(obj, "metadata.creationTimestamp"));
    out->deletion_ms = time_of(tlr_json_str(obj, "metadata.deletionTimestamp"));
    out->finalizer = tlr_kread_has_finalizer(obj);
    out->ready = condition_true(obj, "Ready");
    bool b = false;
    out->unschedulable = tlr_json_bool(obj, "spec.unschedulable", &b) == TLR_OK && b;
    const char *dnd = map_str(obj, "metadata.annotations", TLR_ANNOTATION_DO_NOT_DISRUPT);
    out->do_not_disrupt = dnd && !strcmp(dnd, "true");
    str_into(map_str(obj, "metadata.labels", TLR_LABEL_ZONE), out->zone, sizeof(out->zone));
    read_taints(obj, out);
    read_labels(obj, out);
    read_extended(obj, out);
}

void tlr_kclaim_copy(const tlr_kclaim *src, tlr_kclaim *out)
{
    *out = *src;
    out->name = tlr_strdup(src->name);
    out->uid = tlr_strdup(src->uid);
    out->nodepool = tlr_strdup(src->nodepool);
    out->nodeclass = tlr_strdup(src->nodeclass);
    out->provider_id = tlr_strdup(src->provider_id);
    out->instance_id = tlr_strdup(src->instance_id);
    out->node_name = tlr_strdup(src->node_name);
    out->drained_msg = tlr_strdup(src->drained_msg);
}

static char **strv_copy(char *const *v, size_t n)
{
    if (!v)
        return NULL;
    char **c = tlr_calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        c[i] = tlr_strdup(v[i]);
    return c;
}

void tlr_knode_copy(const tlr_knode *src, tlr_knode *out)
{
    *out = *src;
    out->name = tlr_strdup(src->name);
    out->uid = tlr_strdup(src->uid);
    out->provider_id = tlr_strdup(src->provider_id);
    out->nodepool = tlr_strdup(src->nodepool);
    out->resource_version = tlr_strdup(src->resource_version);
    out->taints = NULL;
    if (src->taints) {
        out->taints = tlr_calloc(src->ntaints + 1, sizeof(*out->taints));
        for (size_t j = 0; j < src->ntaints; j++) {
            out->taints[j].key = tlr_strdup(src->taints[j].key);
            out->taints[j].value = tlr_strdup(src->taints[j].value);
            out->taints[j].effect = tlr_strdup(src->taints[j].effect);
        }
    }
    out->label_keys = strv_copy(src->label_keys, src->nlabels);
    out->label_values = strv_copy(src->label_values, src->nlabels);
    out->extended = strv_copy(src->extended, src->nextended);
}

void tlr_kclaim_clear(tlr_kclaim *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->uid);
    free(c->nodepool);
    free(c->nodeclass);
    free(c->provider_id);
    free(c->instance_id);
    free(c->node_name);
    free(c->drained_msg);
    memset(c, 0, sizeof(*c));
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void tlr_knode_clear(tlr_knode *n)
{
    if (!n)
        return;
    free(n->name);
    free(n->uid);
    free(n->provider_id);
    free(n->nodepool);
    free(n->resource_version);
    for (size_t j = 0; n->taints && j < n->ntaints; j++) {
        free(n->taints[j].key);
        free(n->taints[j].value);
        free(n->taints[j].effect);
    }
    free(n->taints);
    strv_free(n->label_keys, n->nlabels);
    strv_free(n->label_values, n->nlabels);
    strv_free(n->extended, n->nextended);
    memset(n, 0, sizeof(*n));
}

/* Room for one more element of size sz in v, which holds n: the
 * capacity is 4, then doubles (full at n == 0, 4, 8, 16, ...). */
static void *kread_grow(void *v, size_t n, size_t sz)
{
    if (n == 0)
        return tlr_realloc(v, 4 * sz);
    if (n >= 4 && (n & (n - 1)) == 0)
        return tlr_realloc(v, 2 * n * sz);
    return v;
}

int tlr_kclaims_add_item(void *list, json_object *item)
{
    tlr_kclaims *l = list;
    l->v = kread_grow(l->v, l->n, sizeof(*l->v));
    tlr_kclaim_read(item, &l->v[l->n++]);
    return TLR_OK;
}

int tlr_knodes_add_item(void *list, json_object *item)
{
    tlr_knodes *l = list;
    l->v = kread_grow(l->v, l->n, sizeof(*l->v));
    tlr_knode_read(item, &l->v[l->n++]);
    return TLR_OK;
}

void tlr_kclaims_free(tlr_kclaims *l)
{
    if (!l)
        return;
    for (size_t i = 0; l->v && i < l->n; i++)
        tlr_kclaim_clear(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

void tlr_knodes_free(tlr_knodes *l)
{
    if (!l)
        return;
    for (size_t i = 0; l->v && i < l->n; i++)
        tlr_knode_clear(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}
