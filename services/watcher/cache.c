/* cache.c - the compact cluster cache (see cache.h for the design).
 *
 * Each kind is a chained hash table of entries allocated as one block
 * with their key.  The table doubles when it holds more entries than
 * buckets, so lookups stay O(1) at 100k pods.
 *
 * Change tracking for deltas (cache.h): "touch" is a direct-mapped array
 * of generations indexed by the low bits of a node name's hash.  It grows
 * with the Node table by folding - slot j of the larger array starts as
 * slot (j & old mask) of the smaller - so no touch is ever forgotten, only
 * shared by more names.  Tombstones are a ring.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "pending.h"
#include "report.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_hash.h"
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
    uint32_t node_hash;        /* bound pods: hash of spec.nodeName */
    bool pending;
    uint64_t changed;          /* generation of the last change of content */
    char key[];
} cache_ent;

typedef struct tombstone {
    uint64_t gen;
    Tailor__V1__ClusterKind kind;
    char *name;                /* owned */
} tombstone;

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
    /* Deltas: see the top of this file and cache.h. */
    uint64_t *touch;           /* per node-name hash slot: last generation */
    size_t ntouch;             /* a power of two */
    tombstone *tomb;           /* ring of max_tomb */
    size_t max_tomb, tomb_head, ntomb;
    uint64_t horizon;          /* no delta from a generation before it */
    uint64_t wholesale;        /* last change to every Node's content (PDBs) */
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

void watcher_cache_create(const watcher_cache_opts *o, watcher_cache **out)
{
    watcher_cache *c = tlr_calloc(1, sizeof(*c));
    c->log = o ? o->log : NULL;
    c->epoch_ms = o ? o->epoch_ms : 0;
    c->report = o ? o->report : NULL;
    c->max_tomb = o && o->max_tombstones ? o->max_tombstones : 16384;
    c->tomb = tlr_calloc(c->max_tomb, sizeof(*c->tomb));
    c->ntouch = 1024;
    c->touch = tlr_calloc(c->ntouch, sizeof(*c->touch));
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
    for (size_t i = 0; i < c->ntomb; i++)
        free(c->tomb[(c->tomb_head + i) % c->max_tomb].name);
    free(c->tomb);
    free(c->touch);
    free(c);
}

/* ---- change tracking ---- */

static void touch_node(watcher_cache *c, uint32_t node_hash)
{
    c->touch[node_hash & (c->ntouch - 1)] = c->generation;
}

/* Keep 16 slots or more per Node: two Nodes share one seldom (about 1 in
 * 16 touched Nodes drags another along), for 128 bytes a Node. */
static void touch_fit(watcher_cache *c)
{
    size_t want = c->ntouch;
    while (want < c->t[TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE].n * 16)
        want *= 2;
    if (want == c->ntouch)
        return;
    uint64_t *t = tlr_malloc(want * sizeof(*t));
    for (size_t j = 0; j < want; j++)
        t[j] = c->touch[j & (c->ntouch - 1)];
    free(c->touch);
    c->touch = t;
    c->ntouch = want;
}

static void bury(watcher_cache *c, Tailor__V1__ClusterKind kind, const char *name)
{
    if (c->ntomb == c->max_tomb) {
        tombstone *old = &c->tomb[c->tomb_head];
        /* a base before this removal could no longer learn of it */
        c->horizon = old->gen;
        free(old->name);
        c->tomb_head = (c->tomb_head + 1) % c->max_tomb;
        c->ntomb--;
    }
    tombstone *t = &c->tomb[(c->tomb_head + c->ntomb++) % c->max_tomb];
    t->gen = c->generation;
    t->kind = kind;
    t->name = tlr_strdup(name);
}

/* e (of kind) changed content, or is going away (gone), at the current
 * generation. */
static void note_change(watcher_cache *c, Tailor__V1__ClusterKind kind, cache_ent *e, bool gone)
{
    e->changed = c->generation;
    switch (kind) {
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD:
        if (e->packed)
            touch_node(c, e->node_hash);
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE:
        touch_node(c, e->hash);
        if (gone)
            bury(c, kind, e->key);
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM:
        if (gone)
            bury(c, kind, e->key);
        break;
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB:
        c->wholesale = c->generation;
        break;
    default:
        break;     /* sent inline, whole, every time */
    }
}

/* Is the new converted form the one e holds already? */
static bool same_content(const cache_ent *e, const ProtobufCMessage *msg, const uint8_t *packed,
                         uint32_t len, uint32_t node_hash)
{
    if (e->packed || packed)
        return e->packed && packed && e->packed_len == len && e->node_hash == node_hash &&
               !memcmp(e->packed, packed, (size_t)e->prefix + len);
    if (!e->msg || !msg || e->msg->descriptor != msg->descriptor ||
        msg->descriptor == &tailor__v1__pod__descriptor)
        return false;      /* an unbound pod is on no Node: not worth comparing */
    size_t n = protobuf_c_message_get_packed_size(e->msg);
    if (n != protobuf_c_message_get_packed_size(msg))
        return false;
    uint8_t *a = tlr_malloc(n + 1), *b = tlr_malloc(n + 1);
    protobuf_c_message_pack(e->msg, a);
    protobuf_c_message_pack(msg, b);
    bool same = !memcmp(a, b, n);
    free(a);
    free(b);
    return same;
}

/* Only the kinds that go by reference, or change them, are compared. */
static bool tracked(Tailor__V1__ClusterKind kind)
{
    return kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD ||
           kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE ||
           kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM ||
           kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB;
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
    uint64_t h = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, msg);
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
                   uint32_t *node_hash, bool *pending)
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
        *node_hash = tlr_fnv1a32_str(TLR_FNV32_BASIS, node);
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

/* Remove *pp (of kind), a change at the current generation. */
static void unlink_ent(watcher_cache *c, Tailor__V1__ClusterKind kind, table *t, cache_ent **pp)
{
    cache_ent *e = *pp;
    note_change(c, kind, e, true);
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
    uint32_t node_hash = 0;
    bool pending = false;
    int rc = convert(c, kind, obj, &msg, &packed, &len, &prefix, &node_hash, &pending);
    if (rc)
        return rc;
    uint32_t h = tlr_fnv1a32_str(TLR_FNV32_BASIS, key);
    cache_ent **pp = find(t, key, h);
    cache_ent *e = *pp;
    bool added = e == NULL;
    c->generation++;
    bool changed = added || (tracked(kind) && !same_content(e, msg, packed, len, node_hash));
    if (changed && !added)
        note_change(c, kind, e, false);    /* the pod's old node, before it moves */
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
    e->node_hash = node_hash;
    e->mark = t->mark;
    if (changed)
        note_change(c, kind, e, false);    /* its new node */
    if (pending && !e->pending) {
        c->npending++;
        *became_pending = true;
    } else if (!pending && e->pending) {
        c->npending--;
    }
    e->pending = pending;
    if (t->n > t->nb)
        grow(t);
    if (kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE)
        touch_fit(c);
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
    cache_ent **pp = find(t, key, tlr_fnv1a32_str(TLR_FNV32_BASIS, key));
    if (!*pp)
        return;
    c->generation++;
    unlink_ent(c, kind, t, pp);
    fill_change(c, kind, TAILOR__V1__CHANGE_TYPE__CHANGE_TYPE_DELETED, obj, chg);
}

/* Drop what the relist that just ended did not see. */
static void sweep(watcher_cache *c, Tailor__V1__ClusterKind kind, table *t)
{
    for (size_t i = 0; i < t->nb; i++) {
        cache_ent **pp = &t->b[i];
        while (*pp) {
            if ((*pp)->mark != t->mark)
                unlink_ent(c, kind, t, pp);
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
        c->generation++;       /* what the sweep drops goes at this one */
        sweep(c, kind, t);
        if (c->report)
            watcher_report_relist(c->report, kind, true);
        t->synced = true;
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
            watcher_cache_item it = { .key = e->key, .msg = e->msg, .pending = e->pending,
                                      .changed = e->changed };
            if (kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE)
                it.node_hash = e->hash;
            else if (e->packed)
                it.node_hash = e->node_hash;
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
    return *find(&c->t[kind], key, tlr_fnv1a32_str(TLR_FNV32_BASIS, key)) != NULL;
}

uint32_t watcher_cache_name_hash(const char *name)
{
    return tlr_fnv1a32_str(TLR_FNV32_BASIS, name);
}

uint64_t watcher_cache_node_touched(const watcher_cache *c, uint32_t node_hash)
{
    return c->touch[node_hash & (c->ntouch - 1)];
}

bool watcher_cache_node_changed_since(const watcher_cache *c, const char *name, uint64_t since)
{
    return watcher_cache_node_touched(c, tlr_fnv1a32_str(TLR_FNV32_BASIS, name)) > since;
}

bool watcher_cache_delta_computable(const watcher_cache *c, uint64_t since)
{
    return since != 0 && since <= c->generation && since >= c->horizon && since >= c->wholesale;
}

void watcher_cache_visit_removed(const watcher_cache *c, uint64_t since,
                                 watcher_cache_removed_fn fn, void *arg)
{
    /* generations only grow along the ring: skip the old ones from the end */
    size_t i = c->ntomb;
    while (i > 0 && c->tomb[(c->tomb_head + i - 1) % c->max_tomb].gen > since)
        i--;
    for (; i < c->ntomb; i++) {
        const tombstone *t = &c->tomb[(c->tomb_head + i) % c->max_tomb];
        fn(arg, t->kind, t->name, t->gen);
    }
}
