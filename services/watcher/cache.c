/* cache.c - the compact cluster cache (see cache.h for the design).
 *
 * Each kind is a chained hash table of entries allocated as one block
 * with their key.  The table doubles when it holds more entries than
 * buckets, so lookups stay O(1) at 100k pods.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "pending.h"
#include "report.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_kubeobj.h"

typedef struct cache_ent {
    struct cache_ent *next;
    ProtobufCMessage *msg;     /* owned; NULL for a bound pod */
    uint8_t *packed;           /* owned; bound pods only: varint length, bytes */
    uint32_t packed_len;       /* bytes after the varint */
    uint8_t prefix;            /* length of the varint */
    uint32_t mark;             /* relist round that last saw it */
    uint32_t hash;
    bool pending;
    char key[];
} cache_ent;

typedef struct table {
    cache_ent **b;
    size_t nb, n;
    uint32_t mark;             /* current relist round */
    bool synced;
} table;

struct watcher_cache {
    table t[WATCHER_NKINDS];
    size_t npending;
    uint64_t generation;
    int64_t epoch_ms;
    tlr_logger *log;
    /* Warnings already logged (FNV-1a of the message): each field tailor
     * accepts but does not act on is said once, not on every update. */
    uint64_t *warned;
    size_t nwarned, capwarned;
    /* Says warnings and errors as Events and conditions too (NULL: log
     * only); cur_* is the object being converted, for on_warn. */
    watcher_report *report;
    Tailor__V1__ClusterKind cur_kind;
    json_object *cur_obj;
};

static const char *const kind_names[WATCHER_NKINDS] = {
    [TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD] = "pods",
    [TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE] = "nodes",
    [TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM] = "nodeclaims",
    [TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL] = "nodepools",
    [TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE_CLASS] = "ec2nodeclasses",
    [TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB] = "poddisruptionbudgets",
    [TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_DAEMONSET] = "daemonsets",
};

static bool cached_kind(Tailor__V1__ClusterKind k)
{
    return k >= WATCHER_KIND_FIRST && k <= WATCHER_KIND_LAST;
}

const char *watcher_kind_name(Tailor__V1__ClusterKind kind)
{
    return cached_kind(kind) ? kind_names[kind] : "?";
}

tlr_kube_res watcher_kind_res(Tailor__V1__ClusterKind kind)
{
    switch (kind) {
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD: return TLR_KUBE_RES_PODS;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE: return TLR_KUBE_RES_NODES;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM: return TLR_KUBE_RES_NODECLAIMS;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL: return TLR_KUBE_RES_NODEPOOLS;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE_CLASS: return TLR_KUBE_RES_EC2NODECLASSES;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB: return TLR_KUBE_RES_PDBS;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_DAEMONSET: return TLR_KUBE_RES_DAEMONSETS;
    default: return (tlr_kube_res){ 0 };
    }
}

/* FNV-1a. */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

void watcher_cache_create(const watcher_cache_opts *o, watcher_cache **out)
{
    watcher_cache *c = tlr_calloc(1, sizeof(*c));
    c->log = o ? o->log : NULL;
    c->epoch_ms = o ? o->epoch_ms : 0;
    c->report = o ? o->report : NULL;
    for (int k = 0; k < WATCHER_NKINDS; k++) {
        c->t[k].nb = 64;
        c->t[k].b = tlr_calloc(c->t[k].nb, sizeof(cache_ent *));
    }
    *out = c;
}

static void ent_free(cache_ent *e)
{
    tlr_kubeobj_free(e->msg);
    free(e->packed);
    free(e);
}

void watcher_cache_free(watcher_cache *c)
{
    if (!c)
        return;
    for (int k = 0; k < WATCHER_NKINDS; k++) {
        for (size_t i = 0; i < c->t[k].nb; i++)
            for (cache_ent *e = c->t[k].b[i], *nx; e; e = nx) {
                nx = e->next;
                ent_free(e);
            }
        free(c->t[k].b);
    }
    free(c->warned);
    free(c);
}

static cache_ent **find(const table *t, const char *key, uint32_t h)
{
    cache_ent **pp = &t->b[h & (t->nb - 1)];
    while (*pp && ((*pp)->hash != h || strcmp((*pp)->key, key)))
        pp = &(*pp)->next;
    return pp;
}

static void grow(table *t)
{
    size_t nb = t->nb * 2;
    cache_ent **b = tlr_calloc(nb, sizeof(*b));
    for (size_t i = 0; i < t->nb; i++)
        for (cache_ent *e = t->b[i], *nx; e; e = nx) {
            nx = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    free(t->b);
    t->b = b;
    t->nb = nb;
}

/* kubeobj warning: a field of a Karpenter object tailor accepts but does
 * not act on (the message names object and field). */
static void on_warn(void *arg, const char *msg)
{
    watcher_cache *c = arg;
    if (c->report) {
        watcher_report_ignored(c->report, c->cur_kind, c->cur_obj, msg);
        return;
    }
    uint64_t h = 1469598103934665603ull;
    for (const char *p = msg; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    for (size_t i = 0; i < c->nwarned; i++)
        if (c->warned[i] == h)
            return;
    TLR_GROW(c->warned, c->capwarned, c->nwarned + 1);
    c->warned[c->nwarned++] = h;
    if (c->log)
        TLR_WARN(c->log, "a field tailor accepts but does not act on", TLR_S("warning", msg));
}

/* Convert obj into *out: a message (msg) or, for a bound pod, its compact
 * form packed (packed/len).  *pending for pods. */
static int convert(watcher_cache *c, Tailor__V1__ClusterKind kind, json_object *obj,
                   ProtobufCMessage **msg, uint8_t **packed, uint32_t *len, uint8_t *prefix,
                   bool *pending)
{
    char err[TLR_KUBEOBJ_ERRLEN];
    tlr_kubeobj_opts opts = { .warn = on_warn, .warn_arg = c };
    void *m = NULL;
    int rc;
    *pending = false;
    c->cur_kind = kind;
    c->cur_obj = obj;
    switch (kind) {
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD: {
        const char *node = tlr_json_str(obj, "spec.nodeName");
        opts.compact = node && node[0];
        Tailor__V1__Pod *p = NULL;
        if ((rc = tlr_kubeobj_pod(obj, &opts, &p, err, sizeof(err))))
            break;
        if (!opts.compact) {
            *pending = watcher_pod_pending(p);
            m = p;
            break;
        }
        size_t n = tailor__v1__pod__get_packed_size(p);
        uint8_t hdr[10];
        uint8_t h = 0;
        for (size_t v = n; h == 0 || v; v >>= 7)
            hdr[h++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
        uint8_t *buf = tlr_malloc(h + n);
        memcpy(buf, hdr, h);
        tailor__v1__pod__pack(p, buf + h);
        tlr_kubeobj_free(p);
        if (c->report)
            watcher_report_valid(c->report, kind, obj);
        *packed = buf;
        *len = (uint32_t)n;
        *prefix = h;
        *msg = NULL;
        return TLR_OK;
    }
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE:
        rc = tlr_kubeobj_node(obj, &opts, (Tailor__V1__Node **)&m, err, sizeof(err));
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM:
        rc = tlr_kubeobj_nodeclaim(obj, &opts, (Tailor__V1__NodeClaim **)&m, err, sizeof(err));
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL:
        rc = tlr_kubeobj_nodepool(obj, &opts, (Tailor__V1__NodePool **)&m, err, sizeof(err));
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE_CLASS:
        rc = tlr_kubeobj_nodeclass(obj, &opts, (Tailor__V1__NodeClass **)&m, err, sizeof(err));
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB:
        rc = tlr_kubeobj_pdb(obj, &opts, (Tailor__V1__PodDisruptionBudget **)&m, err, sizeof(err));
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_DAEMONSET:
        rc = tlr_kubeobj_daemonset(obj, &opts, (Tailor__V1__DaemonSet **)&m, err, sizeof(err));
        break;
    default:
        return TLR_E_INVAL;
    }
    if (rc && c->report) {
        watcher_report_invalid(c->report, kind, obj, err);
        return TLR_E_PARSE;
    }
    if (rc) {
        if (c->log)
            TLR_WARN(c->log, "ignoring an object that does not convert; the cache keeps its previous version",
                     TLR_S("kind", watcher_kind_name(kind)), TLR_S("error", err));
        return TLR_E_PARSE;
    }
    if (c->report)
        watcher_report_valid(c->report, kind, obj);
    *msg = m;
    *packed = NULL;
    *len = 0;
    return TLR_OK;
}

static void key_of(json_object *obj, char *key, size_t len)
{
    const char *ns = tlr_json_str(obj, "metadata.namespace");
    const char *name = tlr_json_str(obj, "metadata.name");
    snprintf(key, len, "%s%s%s", ns && ns[0] ? ns : "", ns && ns[0] ? "/" : "", name ? name : "");
}

static void fill_change(const watcher_cache *c, Tailor__V1__ClusterKind kind, Tailor__V1__ChangeType type,
                        json_object *obj, Tailor__V1__ClusterChange *chg)
{
    tailor__v1__cluster_change__init(chg);
    chg->kind = kind;
    chg->type = type;
    if (obj) {
        const char *s;
        if ((s = tlr_json_str(obj, "metadata.namespace")))
            chg->namespace_ = (char *)s;
        if ((s = tlr_json_str(obj, "metadata.name")))
            chg->name = (char *)s;
        if ((s = tlr_json_str(obj, "metadata.uid")))
            chg->uid = (char *)s;
        if ((s = tlr_json_str(obj, "metadata.resourceVersion")))
            chg->resource_version = (char *)s;
        chg->deleting = tlr_json_str(obj, "metadata.deletionTimestamp") != NULL;
        if (kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD && (s = tlr_json_str(obj, "spec.nodeName")))
            chg->node_name = (char *)s;
    }
    chg->generation = c->generation;
    chg->watcher_epoch_unix_ms = c->epoch_ms;
}

static void unlink_ent(watcher_cache *c, table *t, cache_ent **pp)
{
    cache_ent *e = *pp;
    *pp = e->next;
    t->n--;
    if (e->pending)
        c->npending--;
    ent_free(e);
}

static int upsert(watcher_cache *c, Tailor__V1__ClusterKind kind, json_object *obj,
                  Tailor__V1__ClusterChange *chg, bool *became_pending)
{
    table *t = &c->t[kind];
    char key[600];
    key_of(obj, key, sizeof(key));
    if (!key[0]) {
        if (c->log)
            TLR_WARN(c->log, "ignoring an object without metadata.name",
                     TLR_S("kind", watcher_kind_name(kind)));
        return TLR_E_PARSE;
    }
    ProtobufCMessage *msg = NULL;
    uint8_t *packed = NULL;
    uint32_t len = 0;
    uint8_t prefix = 0;
    bool pending = false;
    int rc = convert(c, kind, obj, &msg, &packed, &len, &prefix, &pending);
    if (rc)
        return rc;
    uint32_t h = hash_str(key);
    cache_ent **pp = find(t, key, h);
    cache_ent *e = *pp;
    bool added = e == NULL;
    if (added) {
        size_t klen = strlen(key);
        e = tlr_calloc(1, sizeof(*e) + klen + 1);
        memcpy(e->key, key, klen + 1);
        e->hash = h;
        *pp = e;
        t->n++;
    } else {
        tlr_kubeobj_free(e->msg);
        free(e->packed);
    }
    e->msg = msg;
    e->packed = packed;
    e->packed_len = len;
    e->prefix = prefix;
    e->mark = t->mark;
    if (pending && !e->pending) {
        c->npending++;
        *became_pending = true;
    } else if (!pending && e->pending) {
        c->npending--;
    }
    e->pending = pending;
    if (t->n > t->nb)
        grow(t);
    c->generation++;
    fill_change(c, kind, added ? TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_ADDED
                               : TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_MODIFIED, obj, chg);
    return TLR_OK;
}

static void remove_obj(watcher_cache *c, Tailor__V1__ClusterKind kind, json_object *obj,
                       Tailor__V1__ClusterChange *chg)
{
    table *t = &c->t[kind];
    char key[600];
    key_of(obj, key, sizeof(key));
    cache_ent **pp = find(t, key, hash_str(key));
    if (!*pp)
        return;
    unlink_ent(c, t, pp);
    c->generation++;
    fill_change(c, kind, TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_DELETED, obj, chg);
}

/* Drop what the relist that just ended did not see. */
static void sweep(watcher_cache *c, table *t)
{
    for (size_t i = 0; i < t->nb; i++) {
        cache_ent **pp = &t->b[i];
        while (*pp) {
            if ((*pp)->mark != t->mark)
                unlink_ent(c, t, pp);
            else
                pp = &(*pp)->next;
        }
    }
}

int watcher_cache_apply(watcher_cache *c, Tailor__V1__ClusterKind kind, tlr_kube_event_type type,
                        json_object *obj, Tailor__V1__ClusterChange *chg, bool *became_pending)
{
    if (!cached_kind(kind))
        return TLR_E_INVAL;
    table *t = &c->t[kind];
    tailor__v1__cluster_change__init(chg);
    *became_pending = false;
    switch (type) {
    case TLR_KUBE_RELIST_START:
        t->mark++;
        if (c->report)
            watcher_report_relist(c->report, kind, false);
        return TLR_OK;
    case TLR_KUBE_RELIST_DONE:
        sweep(c, t);
        if (c->report)
            watcher_report_relist(c->report, kind, true);
        t->synced = true;
        c->generation++;
        fill_change(c, kind, TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_RESYNCED, NULL, chg);
        return TLR_OK;
    case TLR_KUBE_ADDED:
    case TLR_KUBE_MODIFIED:
        if (!obj)
            return TLR_E_INVAL;
        return upsert(c, kind, obj, chg, became_pending);
    case TLR_KUBE_DELETED:
        if (obj && c->report)
            watcher_report_deleted(c->report, kind, obj);
        if (obj)
            remove_obj(c, kind, obj, chg);
        return TLR_OK;
    default:
        return TLR_OK;     /* bookmarks, errors: nothing cached changes */
    }
}

size_t watcher_cache_count(const watcher_cache *c, Tailor__V1__ClusterKind kind)
{
    return cached_kind(kind) ? c->t[kind].n : 0;
}

size_t watcher_cache_pending(const watcher_cache *c)
{
    return c->npending;
}

uint64_t watcher_cache_generation(const watcher_cache *c)
{
    return c->generation;
}

int64_t watcher_cache_epoch(const watcher_cache *c)
{
    return c->epoch_ms;
}

bool watcher_cache_synced(const watcher_cache *c, Tailor__V1__ClusterKind kind)
{
    return cached_kind(kind) && c->t[kind].synced;
}

bool watcher_cache_all_synced(const watcher_cache *c, char *buf, size_t len)
{
    bool all = true;
    size_t off = 0;
    if (buf && len)
        buf[0] = '\0';
    for (int k = WATCHER_KIND_FIRST; k <= WATCHER_KIND_LAST; k++) {
        if (c->t[k].synced)
            continue;
        if (buf && off < len) {
            int w = snprintf(buf + off, len - off, "%s%s", all ? "" : ", ", kind_names[k]);
            off += w > 0 ? (size_t)w : 0;
        }
        all = false;
    }
    return all;
}

void watcher_cache_visit(const watcher_cache *c, Tailor__V1__ClusterKind kind,
                         watcher_cache_visit_fn fn, void *arg)
{
    if (!cached_kind(kind))
        return;
    const table *t = &c->t[kind];
    for (size_t i = 0; i < t->nb; i++)
        for (const cache_ent *e = t->b[i]; e; e = e->next) {
            watcher_cache_item it = { .key = e->key, .msg = e->msg, .pending = e->pending };
            if (e->packed) {
                it.packed = e->packed + e->prefix;
                it.packed_len = e->packed_len;
                it.framed = e->packed;
                it.framed_len = (size_t)e->prefix + e->packed_len;
            }
            fn(arg, &it);
        }
}

bool watcher_cache_has(const watcher_cache *c, Tailor__V1__ClusterKind kind, const char *key)
{
    if (!cached_kind(kind))
        return false;
    return *find(&c->t[kind], key, hash_str(key)) != NULL;
}
