/* poolstatus.c - NodePool status (poolstatus.h). */
#include "poolstatus.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_kubeobj.h"
#include "tlr_kubesem.h"
#include "tlr_quantity.h"
#include "tlr_time.h"

/* ---- resources ---------------------------------------------------------- */

typedef struct ext_sum {
    const char *name;   /* borrowed from the snapshot, or "nodes" */
    int64_t value;
} ext_sum;

typedef struct usage {
    int64_t cpu_millis, memory_bytes, pods, storage_bytes;
    ext_sum *ext;
    size_t next, cap;
} usage;

static void ext_add(usage *u, const char *name, int64_t v)
{
    for (size_t i = 0; i < u->next; i++)
        if (!strcmp(u->ext[i].name, name)) {
            u->ext[i].value += v;
            return;
        }
    TLR_GROW(u->ext, u->cap, u->next + 1);
    u->ext[u->next++] = (ext_sum){ name, v };
}

/* Add r; a field r leaves at zero is taken from fill (may be NULL). */
static void usage_add(usage *u, const Tailor__V1__ResourceList *r,
                      const Tailor__V1__ResourceList *fill)
{
    const Tailor__V1__ResourceList *f = fill;
#define FIELD(x) ((r && r->x) ? r->x : (f ? f->x : 0))
    u->cpu_millis += FIELD(cpu_millis);
    u->memory_bytes += FIELD(memory_bytes);
    u->pods += FIELD(pods);
    u->storage_bytes += FIELD(ephemeral_storage_bytes);
#undef FIELD
    for (size_t i = 0; r && i < r->n_extended; i++)
        ext_add(u, r->extended[i]->name, r->extended[i]->value);
    for (size_t i = 0; f && i < f->n_extended; i++) {
        bool have = false;
        for (size_t k = 0; r && k < r->n_extended && !have; k++)
            have = !strcmp(r->extended[k]->name, f->extended[i]->name) && r->extended[k]->value;
        if (!have)
            ext_add(u, f->extended[i]->name, f->extended[i]->value);
    }
}

static int ext_cmp(const void *a, const void *b)
{
    return strcmp(((const ext_sum *)a)->name, ((const ext_sum *)b)->name);
}

static json_object *qty_milli(int64_t m)
{
    char b[64];
    if (tlr_quantity_format_milli(m, b, sizeof(b)))
        snprintf(b, sizeof(b), "%" PRId64 "m", m);
    return json_object_new_string(b);
}

static json_object *qty_bytes(int64_t v)
{
    char b[64];
    if (tlr_quantity_format_bytes(v, b, sizeof(b)))
        snprintf(b, sizeof(b), "%" PRId64, v);
    return json_object_new_string(b);
}

static json_object *qty_count(int64_t v)
{
    char b[32];
    snprintf(b, sizeof(b), "%" PRId64, v);
    return json_object_new_string(b);
}

/* status.resources: Karpenter's base resources always present. */
static json_object *resources_json(usage *u)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "cpu", qty_milli(u->cpu_millis));
    json_object_object_add(o, "ephemeral-storage", qty_bytes(u->storage_bytes));
    json_object_object_add(o, "memory", qty_bytes(u->memory_bytes));
    json_object_object_add(o, "pods", qty_count(u->pods));
    bool nodes = false;
    for (size_t i = 0; i < u->next; i++)
        nodes = nodes || !strcmp(u->ext[i].name, "nodes");
    if (!nodes)
        ext_add(u, "nodes", 0);
    if (u->next > 1)
        qsort(u->ext, u->next, sizeof(*u->ext), ext_cmp);
    for (size_t i = 0; i < u->next; i++)
        json_object_object_add(o, u->ext[i].name, qty_count(u->ext[i].value));
    return o;
}

static int64_t ext_value(const usage *u, const char *name)
{
    for (size_t i = 0; i < u->next; i++)
        if (!strcmp(u->ext[i].name, name))
            return u->ext[i].value;
    return 0;
}

/* The pool's usage now: its nodes not being deleted, and its claims
 * without a Node yet. */
static void pool_usage(const ds_view *v, const Tailor__V1__NodePool *p, usage *u)
{
    int64_t count = 0;
    for (size_t i = 0; i < v->nnodes; i++) {
        const ds_vnode *x = &v->nodes[i];
        const Tailor__V1__Node *n = x->node;
        if (strcmp(n->nodepool, p->name))
            continue;
        if (n->marked_for_deletion || n->deletion_unix_ms ||
            (x->claim && x->claim->deletion_unix_ms))
            continue;
        const Tailor__V1__ResourceList *fill = NULL;
        if (x->claim && !x->initialized && x->claim->status)
            fill = x->claim->status->capacity;
        usage_add(u, n->capacity, fill);
        count++;
    }
    for (size_t i = 0; v->cs && i < v->cs->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *c = v->cs->nodeclaims[i];
        if (strcmp(c->nodepool, p->name) || c->deletion_unix_ms || ds_view_node_of_claim(v, c->name))
            continue;
        usage_add(u, c->status ? c->status->capacity : NULL, NULL);
        count++;
    }
    ext_add(u, "nodes", count - ext_value(u, "nodes"));
}

/* ---- conditions ----------------------------------------------------------- */

typedef struct cond {
    const char *type, *status, *reason, *message;
} cond;

static const char *status_name(Tailor__V1__ConditionStatus s)
{
    switch (s) {
    case TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_TRUE: return "True";
    case TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE: return "False";
    default: return "Unknown";
    }
}

static json_object *cond_json(const char *type, const char *status, const char *reason,
                              const char *message, int64_t since_ms)
{
    json_object *o = json_object_new_object();
    char ts[TLR_TIME_BUFLEN];
    tlr_time_format_s(since_ms, ts);
    json_object_object_add(o, "lastTransitionTime", json_object_new_string(ts));
    json_object_object_add(o, "message", json_object_new_string(message ? message : ""));
    json_object_object_add(o, "reason", json_object_new_string(reason ? reason : ""));
    json_object_object_add(o, "status", json_object_new_string(status));
    json_object_object_add(o, "type", json_object_new_string(type));
    return o;
}

/* NodeClassReady from the class's Ready condition. */
static cond class_ready(const ds_view *v, const Tailor__V1__NodePool *p)
{
    const char *name = p->node_class_ref ? p->node_class_ref->name : NULL;
    const Tailor__V1__NodeClass *nc = name ? ds_view_class(v, name) : NULL;
    if (!nc)
        return (cond){ "NodeClassReady", "False", "NodeClassNotFound", "NodeClass not found on cluster" };
    if (nc->ready)
        return (cond){ "NodeClassReady", "True", "NodeClassReady", "" };
    const Tailor__V1__Condition *r = tlr_ks_condition(nc->conditions, nc->n_conditions, "Ready");
    if (!r || r->status != TAILOR__V1__CONDITION_STATUS__CONDITION_STATUS_FALSE)
        return (cond){ "NodeClassReady", "False", "NodeClassReadinessUnknown",
                       "Node Class Readiness Unknown" };
    return (cond){ "NodeClassReady", "False", r->reason[0] ? r->reason : "NodeClassNotReady",
                   r->message };
}

static json_object *conditions_json(const ds_view *v, const Tailor__V1__NodePool *p)
{
    Tailor__V1__Condition *const *have = p->status ? p->status->conditions : NULL;
    size_t nhave = p->status ? p->status->n_conditions : 0;
    cond ours[3];
    ours[0] = (cond){ "ValidationSucceeded", "True", "ValidationSucceeded", "" };
    ours[1] = class_ready(v, p);
    char msg[256] = "";
    for (int i = 0; i < 2; i++)
        if (strcmp(ours[i].status, "True"))
            snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s%s=%s", msg[0] ? ", " : "",
                     ours[i].type, ours[i].status);
    ours[2] = msg[0] ? (cond){ "Ready", "False", "UnhealthyDependents", msg }
                     : (cond){ "Ready", "True", "Ready", "" };
    json_object *a = json_object_new_array();
    for (int i = 0; i < 3; i++) {
        const Tailor__V1__Condition *was = tlr_ks_condition(have, nhave, ours[i].type);
        int64_t since = was && !strcmp(status_name(was->status), ours[i].status) &&
                                was->last_transition_unix_ms
                            ? was->last_transition_unix_ms
                            : v->now_ms;
        json_object_array_add(a, cond_json(ours[i].type, ours[i].status, ours[i].reason,
                                           ours[i].message, since));
    }
    for (size_t i = 0; i < nhave; i++) {
        const Tailor__V1__Condition *c = have[i];
        bool mine = false;
        for (int k = 0; k < 3 && !mine; k++)
            mine = !strcmp(c->type, ours[k].type);
        if (!mine)
            json_object_array_add(a, cond_json(c->type, status_name(c->status), c->reason,
                                               c->message, c->last_transition_unix_ms));
    }
    return a;
}

/* The status the snapshot holds, in the same form, for comparison. */
static json_object *current_json(const Tailor__V1__NodePool *p)
{
    const Tailor__V1__NodePoolStatus *s = p->status;
    json_object *o = json_object_new_object();
    if (!s)
        return o;
    if (s->usage) {
        usage u = { 0 };
        usage_add(&u, s->usage, NULL);
        json_object_object_add(o, "resources", resources_json(&u));
        free(u.ext);
    }
    json_object_object_add(o, "nodes", json_object_new_int64(s->nodes));
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < s->n_conditions; i++) {
        const Tailor__V1__Condition *c = s->conditions[i];
        json_object_array_add(a, cond_json(c->type, status_name(c->status), c->reason, c->message,
                                           c->last_transition_unix_ms));
    }
    json_object_object_add(o, "conditions", a);
    return o;
}

/* ---- plan and apply ------------------------------------------------------- */

void ds_poolstatus_plan(const ds_view *v, ds_pool_writes *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; v->cs && i < v->cs->n_nodepools; i++) {
        const Tailor__V1__NodePool *p = v->cs->nodepools[i];
        usage u = { 0 };
        pool_usage(v, p, &u);
        json_object *want = json_object_new_object();
        int64_t nodes = ext_value(&u, "nodes");
        json_object_object_add(want, "resources", resources_json(&u));
        json_object_object_add(want, "nodes", json_object_new_int64(nodes));
        json_object_object_add(want, "conditions", conditions_json(v, p));
        free(u.ext);
        json_object *have = current_json(p);
        if (!json_object_equal(want, have)) {
            TLR_GROW(out->v, out->cap, out->n + 1);
            ds_pool_write *w = &out->v[out->n++];
            w->name = tlr_strdup(p->name);
            w->resource_version = tlr_strdup(p->resource_version ? p->resource_version : "");
            w->status = tlr_strdup(json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
        }
        json_object_put(want);
        json_object_put(have);
    }
}

void ds_pool_writes_clear(ds_pool_writes *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->v[i].name);
        free(w->v[i].resource_version);
        free(w->v[i].status);
    }
    free(w->v);
    memset(w, 0, sizeof(*w));
}

int ds_poolstatus_apply(const ds_pool_writes *w, const ds_kube_ops *kube)
{
    int ok = 0;
    for (size_t i = 0; kube->status && i < w->n; i++)
        if (kube->status(kube->arg, DS_KIND_NODEPOOL, w->v[i].name, w->v[i].resource_version,
                         w->v[i].status) == TLR_OK)
            ok++;
    return ok;
}
