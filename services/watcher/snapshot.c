/* snapshot.c - build ClusterState / PendingBatch / SnapshotResponse from
 * the cache (see snapshot.h).
 *
 * By reference, the same code builds the Nodes of a delta: collect_node
 * and collect_pod keep only the Nodes whose name the cache says was
 * touched after the base, and the bound pods whose node name hash was, so
 * fill() and attach_pods() give a changed Node exactly the content a full
 * snapshot gives it, and the pods of unchanged Nodes are never unpacked.
 *
 * Nodes are shallow copies (arena) of the cached ones with requested
 * filled and their pods attached in wire form (see attach_pods); a small
 * open-addressing index maps node names to them.  Everything else built
 * comes from the snapshot's arena, freed in one go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"
#include "tlr_alloc.h"
#include "tlr_arena.h"
#include "tlr_hash.h"
#include "tlr_kubesem.h"


struct watcher_snapshot {
    tlr_arena *arena;
    Tailor__V1__ClusterState cs;
    Tailor__V1__SnapshotResponse resp;
    Tailor__V1__PendingBatch batch;
    bool is_batch;
};

typedef struct ptrvec {
    void **v;
    size_t n, cap;
} ptrvec;

/* Arena-backed growth: the old array is simply abandoned in the arena. */
static void vec_push(tlr_arena *a, ptrvec *pv, void *p)
{
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 16;
        void **v = tlr_arena_alloc(a, cap * sizeof(*v));
        if (pv->n)
            memcpy(v, pv->v, pv->n * sizeof(*v));
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n++] = p;
}

static void *arena_pb_alloc(void *data, size_t size)
{
    return tlr_arena_alloc(data, size ? size : 1);
}

static void arena_pb_free(void *data, void *p)
{
    (void)data;
    (void)p;
}

typedef struct build {
    watcher_snapshot *s;
    const watcher_cache *c;
    ptrvec nodes, bound, pending, msgs, pdbs;
    bool want_pods, want_pending;
    /* Only the Nodes (and their pods) touched after this generation; 0 =
     * every Node.  A pod is kept when its node's name hash was touched:
     * the pods of unchanged Nodes are never unpacked. */
    uint64_t since;
    /* node index: slots hold node index + 1, 0 = empty */
    size_t *slot;
    size_t nslot;
} build;

static void collect_msg(void *arg, const watcher_cache_item *it)
{
    build *b = arg;
    vec_push(b->s->arena, &b->msgs, (void *)it->msg);
}

static bool node_wanted(const build *b, uint32_t node_hash)
{
    return !b->since || watcher_cache_node_touched(b->c, node_hash) > b->since;
}

static void collect_node(void *arg, const watcher_cache_item *it)
{
    build *b = arg;
    if (!node_wanted(b, it->node_hash))
        return;
    Tailor__V1__Node *n = tlr_arena_alloc(b->s->arena, sizeof(*n));
    *n = *(const Tailor__V1__Node *)it->msg;
    n->n_pods = 0;
    n->pods = NULL;
    vec_push(b->s->arena, &b->nodes, n);
}

static void collect_pod(void *arg, const watcher_cache_item *it)
{
    build *b = arg;
    if (it->packed) {
        if (!b->want_pods || !node_wanted(b, it->node_hash))
            return;
        /* a copy of the item; its key and bytes stay borrowed from the cache */
        watcher_cache_item *copy = tlr_arena_alloc(b->s->arena, sizeof(*copy));
        *copy = *it;
        vec_push(b->s->arena, &b->bound, copy);
    } else if (it->pending && b->want_pending) {
        Tailor__V1__Pod *p = tlr_arena_alloc(b->s->arena, sizeof(*p));
        *p = *(const Tailor__V1__Pod *)it->msg;   /* shallow: pdb_names set below */
        vec_push(b->s->arena, &b->pending, p);
    }
}

/* The index + 1 in b->nodes of the node called name; 0 = none. */
static size_t node_named(build *b, const char *name)
{
    if (!b->nslot)
        return 0;
    for (size_t i = tlr_fnv1a32_str(TLR_FNV32_BASIS, name) & (b->nslot - 1);; i = (i + 1) & (b->nslot - 1)) {
        if (!b->slot[i])
            return 0;
        Tailor__V1__Node *n = b->nodes.v[b->slot[i] - 1];
        if (!strcmp(n->name, name))
            return b->slot[i];
    }
}

static int cmp_item_key(const void *x, const void *y)
{
    return strcmp((*(const watcher_cache_item *const *)x)->key,
                  (*(const watcher_cache_item *const *)y)->key);
}

static void index_nodes(build *b)
{
    b->nslot = 16;
    while (b->nslot < b->nodes.n * 2)
        b->nslot *= 2;
    b->slot = tlr_arena_calloc(b->s->arena, b->nslot, sizeof(*b->slot));
    for (size_t k = 0; k < b->nodes.n; k++) {
        Tailor__V1__Node *n = b->nodes.v[k];
        size_t i = tlr_fnv1a32_str(TLR_FNV32_BASIS, n->name) & (b->nslot - 1);
        while (b->slot[i])
            i = (i + 1) & (b->nslot - 1);
        b->slot[i] = k + 1;
    }
}

static bool terminal(const Tailor__V1__Pod *p)
{
    return p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_SUCCEEDED ||
           p->phase == TAILOR__V1__POD_PHASE__POD_PHASE_FAILED;
}

/* requested += add, extended resources merged by name, kept sorted. */
static void res_add(tlr_arena *a, Tailor__V1__ResourceList *sum, const Tailor__V1__ResourceList *add)
{
    if (!add)
        return;
    sum->cpu_millis += add->cpu_millis;
    sum->memory_bytes += add->memory_bytes;
    sum->pods += add->pods;
    sum->ephemeral_storage_bytes += add->ephemeral_storage_bytes;
    for (size_t i = 0; i < add->n_extended; i++) {
        const Tailor__V1__ExtendedResource *x = add->extended[i];
        size_t k = 0;
        while (k < sum->n_extended && strcmp(sum->extended[k]->name, x->name) < 0)
            k++;
        if (k < sum->n_extended && !strcmp(sum->extended[k]->name, x->name)) {
            sum->extended[k]->value += x->value;
            continue;
        }
        Tailor__V1__ExtendedResource **v = tlr_arena_alloc(a, (sum->n_extended + 1) * sizeof(*v));
        if (sum->n_extended) {
            memcpy(v, sum->extended, k * sizeof(*v));
            memcpy(v + k + 1, sum->extended + k, (sum->n_extended - k) * sizeof(*v));
        }
        Tailor__V1__ExtendedResource *e = tlr_arena_alloc(a, sizeof(*e));
        tailor__v1__extended_resource__init(e);
        e->name = tlr_arena_strdup(a, x->name);   /* x lives in the scratch arena */
        e->value = x->value;
        v[k] = e;
        sum->extended = v;
        sum->n_extended++;
    }
}

/* pdb_names for pod p: "ns/name" of every PDB in its namespace selecting
 * it, allocated from a.  Returns whether any matched. */
static bool set_pdb_names(build *b, tlr_arena *a, Tailor__V1__Pod *p)
{
    p->n_pdb_names = 0;
    p->pdb_names = NULL;
    for (size_t i = 0; i < b->pdbs.n; i++) {
        const Tailor__V1__PodDisruptionBudget *d = b->pdbs.v[i];
        if (strcmp(d->namespace_, p->namespace_) ||
            !tlr_ks_selector_matches(d->selector, p->labels, p->n_labels))
            continue;
        size_t len = strlen(d->namespace_) + strlen(d->name) + 2;
        char *s = tlr_arena_alloc(a, len);
        snprintf(s, len, "%s/%s", d->namespace_, d->name);
        char **v = tlr_arena_alloc(a, (p->n_pdb_names + 1) * sizeof(*v));
        if (p->n_pdb_names)
            memcpy(v, p->pdb_names, p->n_pdb_names * sizeof(*v));
        v[p->n_pdb_names++] = s;
        p->pdb_names = v;
    }
    return p->n_pdb_names > 0;
}

/* The wire form of pod p as a length-delimited field: varint, bytes. */
static uint8_t *frame(tlr_arena *a, const Tailor__V1__Pod *p, size_t *len)
{
    size_t n = tailor__v1__pod__get_packed_size(p);
    uint8_t hdr[10], h = 0;
    for (size_t v = n; h == 0 || v; v >>= 7)
        hdr[h++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
    uint8_t *buf = tlr_arena_alloc(a, h + n);
    memcpy(buf, hdr, h);
    tailor__v1__pod__pack(p, buf + h);
    *len = h + n;
    return buf;
}

/* Put every bound pod on its node.  Each pod is unpacked into a scratch
 * arena only long enough to read its node, phase, requests and labels;
 * what goes on the wire is the cache's packed bytes, attached to the Node
 * as unknown fields with Node.pods' tag (18), which protobuf-c packs
 * verbatim.  So a 100k-pod batch never holds 100k unpacked pods; a pod
 * that a PDB selects is re-packed once with its pdb_names.  A node's pods
 * are in key order, so its bytes depend only on what it holds, not on the
 * cache's table layout: a receiver that keeps a Node from an earlier
 * delta holds the very bytes a full snapshot would carry now. */
static void attach_pods(build *b)
{
    tlr_arena *a = b->s->arena, *scratch;
    tlr_arena_create(0, &scratch);
    ProtobufCAllocator sa = { arena_pb_alloc, arena_pb_free, scratch };
    uint32_t pods_tag = protobuf_c_message_descriptor_get_field_by_name(
                            &tailor__v1__node__descriptor, "pods")->id;
    index_nodes(b);
    for (size_t k = 0; k < b->nodes.n; k++) {
        Tailor__V1__Node *n = b->nodes.v[k];
        Tailor__V1__ResourceList *req = tlr_arena_alloc(a, sizeof(*req));
        tailor__v1__resource_list__init(req);
        n->requested = req;
        n->base.n_unknown_fields = 0;
        n->base.unknown_fields = NULL;
    }
    size_t nb = b->bound.n, nn = b->nodes.n;
    size_t *owner = tlr_arena_alloc(a, (nb + 1) * sizeof(*owner));   /* node index + 1 */
    for (size_t i = 0; i < nb; i++) {
        tlr_arena_reset(scratch);
        const watcher_cache_item *it = b->bound.v[i];
        Tailor__V1__Pod *p = tailor__v1__pod__unpack(&sa, it->packed_len, it->packed);
        owner[i] = p && !terminal(p) ? node_named(b, p->node_name) : 0;
        if (!owner[i])
            continue;
        Tailor__V1__Node *n = b->nodes.v[owner[i] - 1];
        n->base.n_unknown_fields++;
        res_add(a, n->requested, p->requests);
        if (b->pdbs.n && set_pdb_names(b, scratch, p)) {
            /* re-framed copy replaces the cache's bytes for this pod */
            watcher_cache_item *copy = tlr_arena_alloc(a, sizeof(*copy));
            *copy = *it;
            copy->framed = frame(a, p, &copy->framed_len);
            b->bound.v[i] = copy;
        }
    }
    tlr_arena_free(scratch);
    /* group the pods by node (counting sort), then key order within each */
    size_t *start = tlr_arena_calloc(a, nn + 1, sizeof(*start));
    for (size_t k = 0; k < nn; k++) {
        Tailor__V1__Node *n = b->nodes.v[k];
        start[k + 1] = start[k] + n->base.n_unknown_fields;
        n->base.unknown_fields = tlr_arena_alloc(a, (n->base.n_unknown_fields + 1) *
                                                        sizeof(ProtobufCMessageUnknownField));
        n->base.n_unknown_fields = 0;
    }
    const watcher_cache_item **grouped = tlr_arena_alloc(a, (start[nn] + 1) * sizeof(*grouped));
    for (size_t i = 0; i < nb; i++) {
        if (!owner[i])
            continue;
        Tailor__V1__Node *n = b->nodes.v[owner[i] - 1];
        grouped[start[owner[i] - 1] + n->base.n_unknown_fields++] = b->bound.v[i];
    }
    for (size_t k = 0; k < nn; k++) {
        Tailor__V1__Node *n = b->nodes.v[k];
        qsort(grouped + start[k], n->base.n_unknown_fields, sizeof(*grouped), cmp_item_key);
        for (size_t j = 0; j < n->base.n_unknown_fields; j++) {
            const watcher_cache_item *it = grouped[start[k] + j];
            ProtobufCMessageUnknownField *f = &n->base.unknown_fields[j];
            f->tag = pods_tag;
            f->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
            f->len = it->framed_len;
            f->data = (uint8_t *)it->framed;
        }
    }
}

#define WANT(mask, k) ((mask) == 0 || ((mask) & (1u << (k))))

/* What fill() builds. */
typedef struct fill_opts {
    uint32_t kinds;            /* bit per ClusterKind; 0 = all */
    bool want_pending;
    bool by_ref;               /* nodes and NodeClaims as cs->by_ref (kinds ignored) */
    /* by_ref: a delta from this generation, which the caller checked with
     * watcher_cache_delta_computable(); 0 = the whole state. */
    uint64_t since;
    int64_t now_ms;
} fill_opts;

static int cmp_node_name(const void *x, const void *y)
{
    return strcmp((*(Tailor__V1__Node *const *)x)->name, (*(Tailor__V1__Node *const *)y)->name);
}

static int cmp_claim_name(const void *x, const void *y)
{
    return strcmp((*(Tailor__V1__NodeClaim *const *)x)->name,
                  (*(Tailor__V1__NodeClaim *const *)y)->name);
}

typedef struct claims_since {
    build *b;
    uint64_t since;
} claims_since;

static void collect_claim_since(void *arg, const watcher_cache_item *it)
{
    claims_since *cl = arg;
    if (it->changed > cl->since)
        vec_push(cl->b->s->arena, &cl->b->msgs, (void *)it->msg);
}

typedef struct removed {
    build *b;
    ptrvec nodes, claims;
} removed;

/* A name removed since base and not held now; one held again is a change. */
static void collect_removed(void *arg, Tailor__V1__ClusterKind kind, const char *name, uint64_t gen)
{
    (void)gen;
    removed *r = arg;
    if (watcher_cache_has(r->b->c, kind, name))
        return;
    ptrvec *v = kind == TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE ? &r->nodes : &r->claims;
    vec_push(r->b->s->arena, v, tlr_arena_strdup(r->b->s->arena, name));
}

/* Sort and drop repeats (a name removed, re-added, removed again). */
static size_t sorted_unique(ptrvec *v)
{
    if (!v->n)
        return 0;
    qsort(v->v, v->n, sizeof(*v->v), tlr_cmp_strp);
    size_t n = 1;
    for (size_t i = 1; i < v->n; i++)
        if (strcmp(v->v[i], v->v[n - 1]))
            v->v[n++] = v->v[i];
    return v->n = n;
}

/* cs->by_ref: the Nodes touched and the NodeClaims changed since o->since
 * (all of them when 0), sorted by name, and the names removed since. */
static void fill_ref(const watcher_cache *c, build *b, const fill_opts *o)
{
    tlr_arena *a = b->s->arena;
    Tailor__V1__ClusterRef *ref = tlr_arena_alloc(a, sizeof(*ref));
    tailor__v1__cluster_ref__init(ref);
    b->s->cs.by_ref = ref;
    if (o->since && o->since == watcher_cache_generation(c)) {
        /* Nothing changed since the base: the receiver holds this very
         * state, and a delta must have a base older than its state. */
        ref->has_delta = false;
        return;
    }
    ref->has_delta = true;
    ref->base_generation = o->since;
    if (b->nodes.n)    /* qsort's base must not be NULL, even for none */
        qsort(b->nodes.v, b->nodes.n, sizeof(*b->nodes.v), cmp_node_name);
    ref->nodes = (Tailor__V1__Node **)b->nodes.v;
    ref->n_nodes = b->nodes.n;
    claims_since cl = { b, o->since };
    b->msgs = (ptrvec){ 0 };
    watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM, collect_claim_since, &cl);
    if (b->msgs.n)
        qsort(b->msgs.v, b->msgs.n, sizeof(*b->msgs.v), cmp_claim_name);
    ref->nodeclaims = (Tailor__V1__NodeClaim **)b->msgs.v;
    ref->n_nodeclaims = b->msgs.n;
    if (!o->since)
        return;
    removed r = { .b = b };
    watcher_cache_visit_removed(c, o->since, collect_removed, &r);
    ref->n_removed_nodes = sorted_unique(&r.nodes);
    ref->removed_nodes = (char **)r.nodes.v;
    ref->n_removed_nodeclaims = sorted_unique(&r.claims);
    ref->removed_nodeclaims = (char **)r.claims.v;
}

static void fill(const watcher_cache *c, watcher_snapshot *s, const fill_opts *o)
{
    uint32_t kinds = o->by_ref ? 0 : o->kinds;
    build b = { .s = s, .c = c, .want_pending = o->want_pending };
    b.want_pods = WANT(kinds, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD);
    bool want_nodes = b.want_pods || WANT(kinds, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE);
    Tailor__V1__ClusterState *cs = &s->cs;
    tailor__v1__cluster_state__init(cs);
    if (o->by_ref && o->since) {
        b.since = o->since;
        if (o->since == watcher_cache_generation(c))
            b.want_pods = want_nodes = false;     /* see fill_ref */
    }

    /* PDBs are needed for pdb_names even when not requested themselves. */
    watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB, collect_msg, &b);
    b.pdbs = b.msgs;
    b.msgs = (ptrvec){ 0 };
    if (WANT(kinds, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB)) {
        cs->pdbs = (Tailor__V1__PodDisruptionBudget **)b.pdbs.v;
        cs->n_pdbs = b.pdbs.n;
    }
    if (want_nodes)
        watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE, collect_node, &b);
    if (b.want_pods || b.want_pending)
        watcher_cache_visit(c, TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD, collect_pod, &b);
    if (want_nodes)
        attach_pods(&b);
    if (o->by_ref) {
        fill_ref(c, &b, o);
    } else if (want_nodes) {
        cs->nodes = (Tailor__V1__Node **)b.nodes.v;
        cs->n_nodes = b.nodes.n;
    }
    for (size_t i = 0; i < b.pending.n; i++)
        set_pdb_names(&b, s->arena, b.pending.v[i]);

#define LIST(KIND, field, type)                                              \
    if (WANT(kinds, KIND)) {                                                 \
        b.msgs = (ptrvec){ 0 };                                              \
        watcher_cache_visit(c, KIND, collect_msg, &b);                       \
        cs->field = (type **)b.msgs.v;                                       \
        cs->n_##field = b.msgs.n;                                            \
    }
    if (!o->by_ref) {
        LIST(TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM, nodeclaims, Tailor__V1__NodeClaim)
    }
    LIST(TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL, nodepools, Tailor__V1__NodePool)
    LIST(TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE_CLASS, node_classes, Tailor__V1__NodeClass)
    LIST(TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_DAEMONSET, daemonsets, Tailor__V1__DaemonSet)
#undef LIST
    cs->synced = watcher_cache_all_synced(c, NULL, 0);
    cs->generation = watcher_cache_generation(c);
    cs->watcher_epoch_unix_ms = watcher_cache_epoch(c);
    cs->taken_unix_ms = o->now_ms;
    if (s->is_batch) {
        s->batch.pending_pods = (Tailor__V1__Pod **)b.pending.v;
        s->batch.n_pending_pods = b.pending.n;
    } else {
        s->resp.pending_pods = (Tailor__V1__Pod **)b.pending.v;
        s->resp.n_pending_pods = b.pending.n;
    }
}

static watcher_snapshot *snap_new(bool is_batch)
{
    watcher_snapshot *s = tlr_calloc(1, sizeof(*s));
    tlr_arena_create(1 << 20, &s->arena);
    s->is_batch = is_batch;
    tailor__v1__snapshot_response__init(&s->resp);
    tailor__v1__pending_batch__init(&s->batch);
    return s;
}

void watcher_snapshot_for_request(const watcher_cache *c, const Tailor__V1__SnapshotRequest *req,
                                  int64_t now_ms, watcher_snapshot **out)
{
    watcher_snapshot *s = snap_new(false);
    if (req->if_changed_since_generation != 0 &&
        req->if_changed_since_generation == watcher_cache_generation(c) &&
        req->watcher_epoch_unix_ms == watcher_cache_epoch(c)) {
        s->resp.unchanged = true;
        *out = s;
        return;
    }
    fill_opts o = { .want_pending = req->include_pending_pods, .by_ref = req->by_reference,
                    .now_ms = now_ms };
    for (size_t i = 0; i < req->n_kinds; i++)
        if (req->kinds[i] > 0 && req->kinds[i] < 32)
            o.kinds |= 1u << req->kinds[i];
    /* a base of another watcher process, or one whose changes are no
     * longer known: the whole state */
    if (o.by_ref && req->watcher_epoch_unix_ms == watcher_cache_epoch(c) &&
        watcher_cache_delta_computable(c, req->delta_base_generation))
        o.since = req->delta_base_generation;
    fill(c, s, &o);
    s->resp.cluster = &s->cs;
    *out = s;
}

void watcher_snapshot_for_batch(const watcher_cache *c, const watcher_batch_window *w,
                                uint64_t sequence, uint64_t base_generation, int64_t now_ms,
                                watcher_snapshot **out)
{
    watcher_snapshot *s = snap_new(true);
    fill_opts o = { .want_pending = true, .by_ref = true, .now_ms = now_ms };
    if (watcher_cache_delta_computable(c, base_generation))
        o.since = base_generation;
    fill(c, s, &o);
    char id[64];
    snprintf(id, sizeof(id), "%lld-%llu", (long long)watcher_cache_epoch(c),
             (unsigned long long)sequence);
    s->batch.batch_id = tlr_arena_strdup(s->arena, id);
    s->batch.sequence = sequence;
    s->batch.window_start_unix_ms = w->start_ms;
    s->batch.window_end_unix_ms = w->end_ms;
    s->batch.cluster = &s->cs;
    *out = s;
}

Tailor__V1__SnapshotResponse *watcher_snapshot_response(watcher_snapshot *s)
{
    return s->is_batch ? NULL : &s->resp;
}

Tailor__V1__PendingBatch *watcher_snapshot_batch(watcher_snapshot *s)
{
    return s->is_batch ? &s->batch : NULL;
}

void watcher_snapshot_free(watcher_snapshot *s)
{
    if (!s)
        return;
    tlr_arena_free(s->arena);
    free(s);
}
