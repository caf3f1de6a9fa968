/* store.c - kubesim's object store (see ks_store.h for the contract).
 *
 * Design
 * ------
 * Per kind, a skip list ordered by (namespace, name) holds the current
 * version of every object.  A version is an immutable ks_obj: one
 * allocation with the compact JSON text and the handful of indexed
 * strings (labels as key/value pointer pairs), reference counted with an
 * atomic so readers can use it after dropping the lock.
 *
 * Every change takes the next global resourceVersion and is appended to
 * a ring of events (type, new version, previous version).  The ring is
 * what a watch resumes from, and it is also how a paged list stays
 * consistent: page 2 of a list taken at version V walks the current skip
 * list and undoes, key by key, the changes the ring records after V.
 * When the ring no longer reaches back to V the answer is 410 Expired,
 * exactly the contract of etcd compaction.
 *
 * Writes run their read-compare-write under the store mutex, so the
 * optimistic-concurrency check and the version bump are atomic; JSON
 * parsing of request bodies and patch application happen before, outside
 * the lock.  A condition variable is broadcast on every change; watchers
 * and controller threads wait on it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "ks_patch.h"
#include "ks_store.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_quantity.h"

#define SL_MAX_LEVEL 24
#define DEFAULT_HISTORY 100000
#define MAX_RETRIES 16

/* ------------------------------------------------------------------ */
/* status helpers                                                      */
/* ------------------------------------------------------------------ */

int ks_status_set(ks_status *st, int rc, int code, const char *reason, const char *fmt, ...)
{
    if (!st)
        return rc;
    memset(st, 0, sizeof(*st));
    st->code = code;
    st->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof(st->message), fmt, ap);
    va_end(ap);
    return rc;
}

void ks_status_details(ks_status *st, const ks_kind *k, const char *name)
{
    if (!st)
        return;
    if (k) {
        st->kind = k->plural;
        st->group = k->group[0] ? k->group : NULL;
    }
    snprintf(st->name, sizeof(st->name), "%s", name ? name : "");
}

static int not_found(ks_status *st, const ks_kind *k, const char *name)
{
    int rc = ks_status_set(st, TLR_E_NOTFOUND, 404, "NotFound", "%s%s%s \"%s\" not found",
                           k->plural, k->group[0] ? "." : "", k->group, name);
    ks_status_details(st, k, name);
    return rc;
}

static int conflict(ks_status *st, const ks_kind *k, const char *name)
{
    int rc = ks_status_set(st, TLR_E_CONFLICT, 409, "Conflict",
                           "Operation cannot be fulfilled on %s%s%s \"%s\": the object has "
                           "been modified; please apply your changes to the latest version "
                           "and try again",
                           k->plural, k->group[0] ? "." : "", k->group, name);
    ks_status_details(st, k, name);
    return rc;
}

const char *ks_now_rfc3339(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/* ------------------------------------------------------------------ */
/* objects                                                             */
/* ------------------------------------------------------------------ */

struct ks_obj {
    atomic_int refs;
    ks_kind_id kind;
    bool deleting;
    bool has_finalizers;
    uint64_t rv;
    size_t json_len;
    const char *json, *ns, *name, *uid, *node, *phase, *owner;
    size_t nlabels;
    const char **labels; /* 2 * nlabels: key, value */
    char blob[];
};

const char *ks_obj_json(const ks_obj *o) { return o->json; }
size_t ks_obj_json_len(const ks_obj *o) { return o->json_len; }
ks_kind_id ks_obj_kind(const ks_obj *o) { return o->kind; }
const char *ks_obj_namespace(const ks_obj *o) { return o->ns; }
const char *ks_obj_name(const ks_obj *o) { return o->name; }
const char *ks_obj_uid(const ks_obj *o) { return o->uid; }
const char *ks_obj_node_name(const ks_obj *o) { return o->node; }
const char *ks_obj_phase(const ks_obj *o) { return o->phase; }
const char *ks_obj_owner_uid(const ks_obj *o) { return o->owner; }
uint64_t ks_obj_rv(const ks_obj *o) { return o->rv; }
bool ks_obj_deleting(const ks_obj *o) { return o->deleting; }

const char *ks_obj_label(const ks_obj *o, const char *key)
{
    for (size_t i = 0; i < o->nlabels; i++)
        if (!strcmp(o->labels[2 * i], key))
            return o->labels[2 * i + 1];
    return NULL;
}

json_object *ks_obj_parse(const ks_obj *o)
{
    json_object *j = NULL;
    /* Stored text was produced by json-c: parsing cannot fail. */
    if (tlr_json_parse(o->json, o->json_len, o->json_len + 1, &j, NULL, 0) != TLR_OK)
        abort();
    return j;
}

void ks_obj_ref(ks_obj *o)
{
    atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

void ks_obj_unref(ks_obj *o)
{
    if (o && atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        free(o);
}

static const char *str_or_empty(json_object *j, const char *path)
{
    const char *s = tlr_json_str(j, path);
    return s ? s : "";
}

/* The uid of the controller ownerReference (else the first one). */
static const char *owner_uid(json_object *j)
{
    json_object *refs = tlr_json_arr(j, "metadata.ownerReferences");
    const char *first = NULL;
    for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        const char *uid = tlr_json_str(r, "uid");
        bool ctl = false;
        tlr_json_bool(r, "controller", &ctl);
        if (uid && ctl)
            return uid;
        if (uid && !first)
            first = uid;
    }
    return first ? first : "";
}

/* Build an immutable version of j (whose metadata.resourceVersion the
 * caller has set to rv). */
static ks_obj *obj_build(ks_kind_id kind, json_object *j, uint64_t rv)
{
    size_t jlen = 0;
    const char *text = json_object_to_json_string_length(
        j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &jlen);
    const char *strs[6] = {
        str_or_empty(j, "metadata.namespace"), str_or_empty(j, "metadata.name"),
        str_or_empty(j, "metadata.uid"),       str_or_empty(j, "spec.nodeName"),
        str_or_empty(j, "status.phase"),       owner_uid(j),
    };
    json_object *labels = tlr_json_obj(j, "metadata.labels");
    size_t nl = 0, size = sizeof(ks_obj) + jlen + 1;
    if (labels) {
        json_object_object_foreach(labels, lk, lv) {
            if (!json_object_is_type(lv, json_type_string))
                continue;
            nl++;
            size += strlen(lk) + 1 + (size_t)json_object_get_string_len(lv) + 1;
        }
    }
    size += 2 * nl * sizeof(char *);
    for (int i = 0; i < 6; i++)
        size += strlen(strs[i]) + 1;
    ks_obj *o = tlr_malloc(size);
    atomic_init(&o->refs, 1);
    o->kind = kind;
    o->rv = rv;
    o->deleting = tlr_json_get(j, "metadata.deletionTimestamp") != NULL;
    json_object *fin = tlr_json_arr(j, "metadata.finalizers");
    o->has_finalizers = fin && json_object_array_length(fin) > 0;
    o->nlabels = nl;
    o->labels = (const char **)(void *)o->blob;
    char *p = o->blob + 2 * nl * sizeof(char *);
    const char **dst[6] = { &o->ns, &o->name, &o->uid, &o->node, &o->phase, &o->owner };
    for (int i = 0; i < 6; i++) {
        size_t n = strlen(strs[i]) + 1;
        memcpy(p, strs[i], n);
        *dst[i] = p;
        p += n;
    }
    size_t li = 0;
    if (labels) {
        json_object_object_foreach(labels, lk, lv) {
            if (!json_object_is_type(lv, json_type_string))
                continue;
            size_t n = strlen(lk) + 1;
            memcpy(p, lk, n);
            o->labels[li++] = p;
            p += n;
            n = (size_t)json_object_get_string_len(lv) + 1;
            memcpy(p, json_object_get_string(lv), n);
            o->labels[li++] = p;
            p += n;
        }
    }
    memcpy(p, text, jlen + 1);
    o->json = p;
    o->json_len = jlen;
    return o;
}

void ks_objlist_free(ks_objlist *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        ks_obj_unref(l->items[i]);
    free(l->items);
    free(l->cont);
    memset(l, 0, sizeof(*l));
}

void ks_events_free(ks_event *ev, size_t n)
{
    for (size_t i = 0; ev && i < n; i++) {
        ks_obj_unref(ev[i].obj);
        ks_obj_unref(ev[i].prev);
    }
    free(ev);
}

/* ------------------------------------------------------------------ */
/* skip list per kind                                                  */
/* ------------------------------------------------------------------ */

typedef struct sl_node {
    ks_obj *obj;
    int level;
    struct sl_node *next[];
} sl_node;

typedef struct kind_tab {
    sl_node *head;
    int level;
    size_t n;
    uint64_t last_rv; /* version of the last change to this kind */
} kind_tab;

static int key_cmp(const char *ns1, const char *n1, const char *ns2, const char *n2)
{
    int c = strcmp(ns1, ns2);
    return c ? c : strcmp(n1, n2);
}

/* First node with key >= (ns, name); update[] gets the predecessors. */
static sl_node *sl_lower(kind_tab *t, const char *ns, const char *name, sl_node **update)
{
    sl_node *x = t->head;
    for (int i = t->level - 1; i >= 0; i--) {
        while (x->next[i] && key_cmp(x->next[i]->obj->ns, x->next[i]->obj->name, ns, name) < 0)
            x = x->next[i];
        if (update)
            update[i] = x;
    }
    return x->next[0];
}

static sl_node *sl_find(kind_tab *t, const char *ns, const char *name)
{
    sl_node *x = sl_lower(t, ns, name, NULL);
    if (x && !key_cmp(x->obj->ns, x->obj->name, ns, name))
        return x;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* the store                                                           */
/* ------------------------------------------------------------------ */

typedef struct ctl_thread {
    ks_controller c;
    char *name;
    ks_store *s;
    pthread_t th;
} ctl_thread;

struct ks_store {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint64_t rv;
    bool closing;
    bool ctl_stop;
    kind_tab tabs[KS_KIND_COUNT];
    ks_event *ring;
    size_t cap, head, count;     /* ring[head] is the oldest */
    uint64_t dropped_upto;       /* rv of the newest event dropped from the ring */
    uint64_t rng;
    tlr_logger *log;
    ctl_thread **ctls;
    size_t nctls;
};

static uint64_t rng_next(ks_store *s)
{
    uint64_t x = s->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s->rng = x;
    return x;
}

static int sl_random_level(ks_store *s)
{
    int lvl = 1;
    uint64_t r = rng_next(s);
    while (lvl < SL_MAX_LEVEL && (r & 3) == 0) {
        lvl++;
        r >>= 2;
    }
    return lvl;
}

static void sl_insert(ks_store *s, kind_tab *t, ks_obj *o)
{
    sl_node *update[SL_MAX_LEVEL];
    sl_lower(t, o->ns, o->name, update);
    int lvl = sl_random_level(s);
    if (lvl > t->level) {
        for (int i = t->level; i < lvl; i++)
            update[i] = t->head;
        t->level = lvl;
    }
    sl_node *n = tlr_malloc(sizeof(*n) + (size_t)lvl * sizeof(sl_node *));
    n->obj = o;
    n->level = lvl;
    for (int i = 0; i < lvl; i++) {
        n->next[i] = update[i]->next[i];
        update[i]->next[i] = n;
    }
    t->n++;
}

/* Unlink (ns, name); returns the object reference it held. */
static ks_obj *sl_remove(kind_tab *t, const char *ns, const char *name)
{
    sl_node *update[SL_MAX_LEVEL];
    sl_node *x = sl_lower(t, ns, name, update);
    if (!x || key_cmp(x->obj->ns, x->obj->name, ns, name))
        return NULL;
    for (int i = 0; i < x->level; i++)
        if (update[i]->next[i] == x)
            update[i]->next[i] = x->next[i];
    while (t->level > 1 && !t->head->next[t->level - 1])
        t->level--;
    ks_obj *o = x->obj;
    free(x);
    t->n--;
    return o;
}

tlr_logger *ks_store_log(ks_store *s) { return s->log; }

uint64_t ks_store_rv(ks_store *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t rv = s->rv;
    pthread_mutex_unlock(&s->mu);
    return rv;
}

uint64_t ks_store_oldest_rv(ks_store *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t rv = s->dropped_upto;
    pthread_mutex_unlock(&s->mu);
    return rv;
}

size_t ks_store_count(ks_store *s, ks_kind_id kind)
{
    if ((unsigned)kind >= KS_KIND_COUNT)
        return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = s->tabs[kind].n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Record a change (lock held).  Takes over one reference to obj and one
 * to prev (either may be NULL as the type implies); the table is updated
 * to match. */
static void commit(ks_store *s, ks_event_type type, ks_obj *obj, ks_obj *prev)
{
    kind_tab *t = &s->tabs[obj->kind];
    if (type == KS_EV_ADDED) {
        ks_obj_ref(obj);
        sl_insert(s, t, obj);
    } else {
        ks_obj *old = sl_remove(t, obj->ns, obj->name);
        ks_obj_unref(old); /* the table's reference; prev is the event's */
        if (type == KS_EV_MODIFIED) {
            ks_obj_ref(obj);
            sl_insert(s, t, obj);
        }
    }
    s->rv = obj->rv;
    t->last_rv = obj->rv;
    if (s->count == s->cap) {
        ks_event *old = &s->ring[s->head];
        s->dropped_upto = old->rv;
        ks_obj_unref(old->obj);
        ks_obj_unref(old->prev);
        s->head = (s->head + 1) % s->cap;
        s->count--;
    }
    ks_event *e = &s->ring[(s->head + s->count) % s->cap];
    *e = (ks_event){ .type = type, .rv = obj->rv, .obj = obj, .prev = prev };
    s->count++;
    pthread_cond_broadcast(&s->cond);
}

static void set_rv(json_object *j, uint64_t rv)
{
    json_object *meta = tlr_json_obj(j, "metadata");
    char buf[24];
    snprintf(buf, sizeof(buf), "%" PRIu64, rv);
    json_object_object_add(meta, "resourceVersion", json_object_new_string(buf));
}

static const char *default_namespaces[] = { "default", "kube-system", "kube-public",
                                            "kube-node-lease" };

int ks_store_create(const ks_store_opts *o, ks_store **out)
{
    if (!out)
        return TLR_E_INVAL;
    ks_store *s = tlr_calloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    s->cap = o && o->history ? o->history : DEFAULT_HISTORY;
    s->ring = tlr_calloc(s->cap, sizeof(ks_event));
    s->log = o ? o->log : NULL;
    if (getrandom(&s->rng, sizeof(s->rng), 0) != (ssize_t)sizeof(s->rng) || !s->rng)
        s->rng = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < KS_KIND_COUNT; k++) {
        s->tabs[k].head = tlr_calloc(1, sizeof(sl_node) + SL_MAX_LEVEL * sizeof(sl_node *));
        s->tabs[k].head->level = SL_MAX_LEVEL;
        s->tabs[k].level = 1;
    }
    s->rv = 1;
    for (size_t i = 0; i < sizeof(default_namespaces) / sizeof(default_namespaces[0]); i++) {
        char json[256];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"finalizers\":[\"kubernetes\"]},"
                 "\"status\":{\"phase\":\"Active\"}}",
                 default_namespaces[i]);
        int rc = ks_store_create_text(s, KS_NAMESPACE, NULL, json, NULL, NULL);
        if (rc) {
            ks_store_free(s);
            return rc;
        }
    }
    *out = s;
    return TLR_OK;
}

void ks_store_close(ks_store *s)
{
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

void ks_store_free(ks_store *s)
{
    if (!s)
        return;
    ks_store_stop_controllers(s);
    for (int k = 0; k < KS_KIND_COUNT; k++) {
        sl_node *x = s->tabs[k].head;
        while (x) {
            sl_node *next = x->next[0];
            ks_obj_unref(x->obj);
            free(x);
            x = next;
        }
    }
    for (size_t i = 0; i < s->count; i++) {
        ks_event *e = &s->ring[(s->head + i) % s->cap];
        ks_obj_unref(e->obj);
        ks_obj_unref(e->prev);
    }
    free(s->ring);
    free(s->ctls);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ------------------------------------------------------------------ */
/* reads                                                               */
/* ------------------------------------------------------------------ */

static const char *key_ns(const ks_kind *k, const char *ns)
{
    return k->namespaced && ns ? ns : "";
}

int ks_store_get(ks_store *s, ks_kind_id kind, const char *ns, const char *name, ks_obj **out,
                 ks_status *st)
{
    const ks_kind *k = ks_kind_get(kind);
    if (!k || !name || !out)
        return ks_status_set(st, TLR_E_INVAL, 400, "BadRequest", "bad get arguments");
    pthread_mutex_lock(&s->mu);
    sl_node *n = sl_find(&s->tabs[kind], key_ns(k, ns), name);
    /* Take the pointer under the lock: the next write to this object
     * frees the node, and malloc may hand it to the new version's node. */
    ks_obj *o = n ? n->obj : NULL;
    if (o)
        ks_obj_ref(o);
    pthread_mutex_unlock(&s->mu);
    if (!o)
        return not_found(st, k, name);
    *out = o;
    return TLR_OK;
}

int ks_store_get_json(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                      json_object **out, ks_status *st)
{
    ks_obj *o = NULL;
    int rc = ks_store_get(s, kind, ns, name, &o, st);
    if (rc)
        return rc;
    *out = ks_obj_parse(o);
    ks_obj_unref(o);
    return TLR_OK;
}

/* Continue token: hex of "<rv>\x1f<ns>\x1f<name>". */
static char *cont_encode(uint64_t rv, const char *ns, const char *name)
{
    char raw[600];
    int n = snprintf(raw, sizeof(raw), "%" PRIu64 "\x1f%s\x1f%s", rv, ns, name);
    if (n < 0 || (size_t)n >= sizeof(raw))
        abort(); /* names are at most 253 bytes */
    char *hex = tlr_malloc((size_t)n * 2 + 1);
    for (int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)raw[i]);
    return hex;
}

static int cont_decode(const char *tok, uint64_t *rv, char *ns, char *name, size_t cap)
{
    size_t len = strlen(tok);
    if (len == 0 || len % 2 || len / 2 >= 600)
        return TLR_E_PARSE;
    char raw[600];
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(tok + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdef", tok[2 * i]) ||
            !strchr("0123456789abcdef", tok[2 * i + 1]))
            return TLR_E_PARSE;
        raw[i] = (char)v;
    }
    raw[len / 2] = 0;
    if (memchr(raw, 0, len / 2))
        return TLR_E_PARSE;
    char *a = strchr(raw, '\x1f');
    char *b = a ? strchr(a + 1, '\x1f') : NULL;
    if (!a || !b || (size_t)(b - a) > cap || strlen(b + 1) >= cap)
        return TLR_E_PARSE;
    *a = *b = 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(raw, &end, 10);
    if (errno || end == raw || *end || v == 0)
        return TLR_E_PARSE;
    *rv = v;
    snprintf(ns, cap, "%s", a + 1);
    snprintf(name, cap, "%s", b + 1);
    return TLR_OK;
}

typedef struct undo_ent {
    const char *ns, *name;
    uint64_t rv;
    ks_obj *prev; /* state at the snapshot, NULL = absent */
} undo_ent;

static int undo_cmp(const void *a, const void *b)
{
    const undo_ent *x = a, *y = b;
    int c = key_cmp(x->ns, x->name, y->ns, y->name);
    if (c)
        return c;
    return x->rv < y->rv ? -1 : x->rv > y->rv;
}

typedef struct list_ctx {
    const ks_list_opts *o;
    const char *ns;
    ks_objlist *out;
    size_t cap;
    size_t limit;
    bool more;
    const char *after_ns, *after_name; /* exclusive lower bound, or NULL */
} list_ctx;

/* Offer one candidate; returns false once the page is full and one more
 * match has been seen (so the caller can stop). */
static bool list_offer(list_ctx *c, ks_obj *o)
{
    if (!o)
        return true;
    if (c->after_ns && key_cmp(o->ns, o->name, c->after_ns, c->after_name) <= 0)
        return true;
    if (c->ns && strcmp(o->ns, c->ns))
        return true;
    const ks_list_opts *lo = c->o;
    if (lo && lo->labels && !ks_selector_matches_obj(lo->labels, o))
        return true;
    if (lo && lo->fields && !ks_selector_matches_obj(lo->fields, o))
        return true;
    if (lo && lo->filter && !lo->filter(o, lo->filter_arg))
        return true;
    if (c->limit && c->out->n == c->limit) {
        c->more = true;
        return false;
    }
    if (c->out->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->out->items = tlr_realloc(c->out->items, c->cap * sizeof(ks_obj *));
    }
    ks_obj_ref(o);
    c->out->items[c->out->n++] = o;
    return true;
}

int ks_store_list(ks_store *s, ks_kind_id kind, const ks_list_opts *o, ks_objlist *out,
                  ks_status *st)
{
    const ks_kind *k = ks_kind_get(kind);
    if (!k || !out)
        return ks_status_set(st, TLR_E_INVAL, 400, "BadRequest", "bad list arguments");
    ks_objlist res = { 0 };
    list_ctx c = { .o = o, .out = &res, .limit = o ? o->limit : 0 };
    if (o && o->ns && o->ns[0] && k->namespaced)
        c.ns = o->ns;
    uint64_t snap = 0;
    char cns[300], cname[300];
    if (o && o->cont && o->cont[0]) {
        if (cont_decode(o->cont, &snap, cns, cname, sizeof(cns)))
            return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                                 "continue key is not valid: malformed token");
        c.after_ns = cns;
        c.after_name = cname;
    }
    pthread_mutex_lock(&s->mu);
    kind_tab *t = &s->tabs[kind];
    if (!snap)
        snap = s->rv;
    if (snap > s->rv) {
        pthread_mutex_unlock(&s->mu);
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "continue key is not valid: resourceVersion from the future");
    }
    const char *start_ns = c.after_ns ? c.after_ns : (c.ns ? c.ns : "");
    const char *start_name = c.after_ns ? c.after_name : "";
    if (c.ns && strcmp(start_ns, c.ns) < 0) {
        start_ns = c.ns;
        start_name = "";
    }
    sl_node *x = sl_lower(t, start_ns, start_name, NULL);
    if (t->last_rv <= snap) {
        for (; x; x = x->next[0]) {
            if (c.ns && strcmp(x->obj->ns, c.ns))
                break;
            if (!list_offer(&c, x->obj))
                break;
        }
    } else if (snap < s->dropped_upto) {
        pthread_mutex_unlock(&s->mu);
        return ks_status_set(st, TLR_E_GONE, 410, "Expired",
                             "The provided continue parameter is too old to display a "
                             "consistent list result. You can start a new list without the "
                             "continue parameter.");
    } else {
        /* Undo the changes after snap: the first change per key after snap
         * carries the key's state at snap in its prev. */
        undo_ent *u = NULL;
        size_t nu = 0, ucap = 0;
        for (size_t i = 0; i < s->count; i++) {
            ks_event *e = &s->ring[(s->head + i) % s->cap];
            if (e->rv <= snap || e->obj->kind != kind)
                continue;
            if (nu == ucap) {
                ucap = ucap ? ucap * 2 : 64;
                u = tlr_realloc(u, ucap * sizeof(*u));
            }
            u[nu++] = (undo_ent){ e->obj->ns, e->obj->name, e->rv, e->prev };
        }
        qsort(u, nu, sizeof(*u), undo_cmp);
        size_t w = 0;
        for (size_t i = 0; i < nu; i++)
            if (!w || key_cmp(u[w - 1].ns, u[w - 1].name, u[i].ns, u[i].name))
                u[w++] = u[i];
        nu = w;
        size_t ui = 0;
        while (ui < nu && key_cmp(u[ui].ns, u[ui].name, start_ns, start_name) < 0)
            ui++;
        for (;;) {
            int cmp;
            if (x && ui < nu)
                cmp = key_cmp(x->obj->ns, x->obj->name, u[ui].ns, u[ui].name);
            else if (x)
                cmp = -1;
            else if (ui < nu)
                cmp = 1;
            else
                break;
            ks_obj *cand;
            if (cmp < 0) {
                cand = x->obj;
                x = x->next[0];
            } else if (cmp == 0) {
                cand = u[ui++].prev;
                x = x->next[0];
            } else {
                cand = u[ui++].prev;
            }
            if (cand && c.ns && strcmp(cand->ns, c.ns) > 0)
                break;
            if (!list_offer(&c, cand))
                break;
        }
        free(u);
    }
    pthread_mutex_unlock(&s->mu);
    res.rv = snap;
    if (c.more && res.n) {
        ks_obj *last = res.items[res.n - 1];
        res.cont = cont_encode(snap, last->ns, last->name);
    }
    *out = res;
    return TLR_OK;
}

/* ------------------------------------------------------------------ */
/* validation                                                          */
/* ------------------------------------------------------------------ */

/* Field type checks, as Go's decoder would refuse the body (400). */
typedef struct type_check {
    unsigned kinds; /* mask; 0 = every kind */
    const char *path;
    json_type type;
    const char *go_type;
} type_check;

#define WORKLOADS (KS_KIND_BIT(KS_DEPLOYMENT) | KS_KIND_BIT(KS_REPLICASET) | \
                   KS_KIND_BIT(KS_STATEFULSET))

static const type_check type_checks[] = {
    { 0, "metadata", json_type_object, "ObjectMeta" },
    { 0, "metadata.name", json_type_string, "string" },
    { 0, "metadata.namespace", json_type_string, "string" },
    { 0, "metadata.generateName", json_type_string, "string" },
    { 0, "metadata.resourceVersion", json_type_string, "string" },
    { 0, "metadata.labels", json_type_object, "map[string]string" },
    { 0, "metadata.annotations", json_type_object, "map[string]string" },
    { 0, "metadata.finalizers", json_type_array, "[]string" },
    { 0, "metadata.ownerReferences", json_type_array, "[]OwnerReference" },
    { 0, "spec", json_type_object, "Spec" },
    { 0, "status", json_type_object, "Status" },
    { WORKLOADS, "spec.replicas", json_type_int, "int32" },
    { WORKLOADS | KS_KIND_BIT(KS_DAEMONSET), "spec.template", json_type_object,
      "PodTemplateSpec" },
    { WORKLOADS | KS_KIND_BIT(KS_DAEMONSET) | KS_KIND_BIT(KS_PDB), "spec.selector",
      json_type_object, "LabelSelector" },
    { KS_KIND_BIT(KS_POD), "spec.nodeName", json_type_string, "string" },
    { KS_KIND_BIT(KS_POD), "spec.containers", json_type_array, "[]Container" },
    { KS_KIND_BIT(KS_POD), "spec.tolerations", json_type_array, "[]Toleration" },
    { KS_KIND_BIT(KS_POD), "spec.nodeSelector", json_type_object, "map[string]string" },
    { KS_KIND_BIT(KS_POD), "status.phase", json_type_string, "string" },
    { KS_KIND_BIT(KS_NODE), "spec.unschedulable", json_type_boolean, "bool" },
    { KS_KIND_BIT(KS_NODE), "spec.taints", json_type_array, "[]Taint" },
    { KS_KIND_BIT(KS_NODE), "spec.providerID", json_type_string, "string" },
    { KS_KIND_BIT(KS_CONFIGMAP), "data", json_type_object, "map[string]string" },
};

static const char *jtype_name(json_type t)
{
    switch (t) {
    case json_type_string: return "string";
    case json_type_int: return "number";
    case json_type_double: return "number";
    case json_type_boolean: return "bool";
    case json_type_array: return "array";
    case json_type_object: return "object";
    default: return "null";
    }
}

static int bad_type(ks_status *st, const ks_kind *k, const char *path, json_type got,
                    const char *go_type)
{
    return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                         "%s in version \"%s\" cannot be handled as a %s: json: cannot "
                         "unmarshal %s into Go struct field %s of type %s",
                         k->kind, k->version, k->kind, jtype_name(got), path, go_type);
}

static int check_string_map(const ks_kind *k, json_object *j, const char *path, ks_status *st)
{
    json_object *m = tlr_json_obj(j, path);
    if (!m)
        return TLR_OK;
    json_object_object_foreach(m, key, v) {
        (void)key;
        if (v && !json_object_is_type(v, json_type_string))
            return bad_type(st, k, path, json_object_get_type(v), "string");
    }
    return TLR_OK;
}

static int field_error(ks_status *st, const ks_kind *k, const char *name, const char *cause,
                       const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Container resources as kube-apiserver reads them: a value that is not
 * a quantity cannot be decoded (400), a negative one is invalid (422). */
static int check_resources(const ks_kind *k, json_object *j, const char *spec, ks_status *st)
{
    static const char *const lists[] = { "containers", "initContainers" };
    static const char *const maps[] = { "requests", "limits" };
    for (size_t l = 0; l < 2; l++) {
        char path[96];
        snprintf(path, sizeof(path), "%s.%s", spec, lists[l]);
        json_object *arr = tlr_json_arr(j, path);
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
            json_object *c = json_object_array_get_idx(arr, i);
            for (size_t m = 0; m < 2; m++) {
                char mp[32];
                snprintf(mp, sizeof(mp), "resources.%s", maps[m]);
                json_object *res = tlr_json_obj(c, mp);
                if (!res)
                    continue;
                json_object_object_foreach(res, name, v) {
                    const char *q = v ? json_object_get_string(v) : "";
                    tlr_quantity qq;
                    int rc = tlr_quantity_parse(q, &qq);
                    if (rc == TLR_E_PARSE || !v || json_object_is_type(v, json_type_boolean) ||
                        json_object_is_type(v, json_type_object) ||
                        json_object_is_type(v, json_type_array))
                        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                                             "%s in version \"%s\" cannot be handled as a %s: "
                                             "quantities must match the regular expression "
                                             "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                                             k->kind, k->version, k->kind);
                    if (rc == TLR_OK && qq.neg) {
                        const char *name_ = tlr_json_str(j, "metadata.name");
                        char field[160];
                        snprintf(field, sizeof(field), "%s[%zu].%s[%s]", path, i, mp, name);
                        return field_error(st, k, name_, "FieldValueInvalid", field,
                                           "Invalid value: \"%.60s\": must be greater than or "
                                           "equal to 0", q);
                    }
                }
            }
        }
    }
    return TLR_OK;
}

static int check_labels(const ks_kind *k, json_object *j, const char *path, ks_status *st);
static int check_containers(const ks_kind *k, json_object *j, const char *spec, ks_status *st);

static int check_types(const ks_kind *k, json_object *j, ks_status *st)
{
    if (!json_object_is_type(j, json_type_object))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "%s in version \"%s\" cannot be handled as a %s: the body is "
                             "not a JSON object",
                             k->kind, k->version, k->kind);
    for (size_t i = 0; i < sizeof(type_checks) / sizeof(type_checks[0]); i++) {
        const type_check *c = &type_checks[i];
        if (c->kinds && !(c->kinds & KS_KIND_BIT(k->id)))
            continue;
        json_object *v = tlr_json_get(j, c->path);
        if (v && !json_object_is_type(v, c->type))
            return bad_type(st, k, c->path, json_object_get_type(v), c->go_type);
    }
    int rc = check_string_map(k, j, "metadata.labels", st);
    if (!rc)
        rc = check_string_map(k, j, "metadata.annotations", st);
    if (!rc && k->id == KS_CONFIGMAP)
        rc = check_string_map(k, j, "data", st);
    if (!rc && k->id == KS_POD)
        rc = check_resources(k, j, "spec", st);
    if (!rc && (k->id == KS_DEPLOYMENT || k->id == KS_REPLICASET || k->id == KS_STATEFULSET ||
                k->id == KS_DAEMONSET))
        rc = check_resources(k, j, "spec.template.spec", st);
    if (!rc)
        rc = check_labels(k, j, "metadata.labels", st);
    if (!rc && k->id == KS_POD)
        rc = check_containers(k, j, "spec", st);
    if (!rc && (k->id == KS_DEPLOYMENT || k->id == KS_REPLICASET || k->id == KS_STATEFULSET ||
                k->id == KS_DAEMONSET)) {
        rc = check_labels(k, j, "spec.template.metadata.labels", st);
        if (!rc && tlr_json_obj(j, "spec.template"))
            rc = check_containers(k, j, "spec.template.spec", st);
    }
    return rc;
}

/* ---- field validation as kube-apiserver does it ---------------------------
 * The rules of apimachinery's validation (IsDNS1123Label/Subdomain,
 * IsDNS1035Label, IsQualifiedName, IsValidLabelValue) and of core's
 * ValidateObjectMeta / validateContainers, for what kubesim serves.  A
 * failure is 422 Invalid with the apiserver's shape: the message
 * "<Kind> \"<name>\" is invalid: <field>: <detail>" and details.causes[0]
 * {reason FieldValue..., message <detail>, field <field>}. */

static int field_error(ks_status *st, const ks_kind *k, const char *name, const char *cause,
                       const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int field_error(ks_status *st, const ks_kind *k, const char *name, const char *cause,
                       const char *field, const char *fmt, ...)
{
    char detail[250];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    int rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid", "%s \"%s\" is invalid: %s: %s",
                           k->kind, name ? name : "", field, detail);
    ks_status_details(st, k, name);
    if (st) {
        st->kind = k->kind;   /* Invalid names the Kind ("Pod"), NotFound the resource */
        st->cause_reason = cause;
        snprintf(st->cause_message, sizeof(st->cause_message), "%s", detail);
        snprintf(st->cause_field, sizeof(st->cause_field), "%s", field);
    }
    return rc;
}

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool any_alnum(char c)
{
    return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n), any length. */
static bool is_dns_part(const char *s, size_t n)
{
    if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* DNS-1123 label: 1-63 of [a-z0-9-], alphanumeric ends (s[0..n)). */
static bool is_dns_label(const char *s, size_t n)
{
    return n <= 63 && is_dns_part(s, n);
}

/* DNS-1123 subdomain: at most 253 in all, dot-separated parts shaped like
 * labels -- kube-apiserver limits only the whole, not each part. */
static bool is_dns_subdomain(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i <= n;) {
        const char *dot = memchr(s + i, '.', n - i);
        size_t len = dot ? (size_t)(dot - (s + i)) : n - i;
        if (!is_dns_part(s + i, len))
            return false;
        i += len + 1;
        if (!dot)
            break;
    }
    return true;
}

/* DNS-1035 label: a DNS-1123 label that starts with a letter. */
static bool is_dns1035_label(const char *s, size_t n)
{
    return is_dns_label(s, n) && s[0] >= 'a' && s[0] <= 'z';
}

/* A label value or a qualified name's name part: [A-Za-z0-9] at both
 * ends, [-A-Za-z0-9_.] between, at most 63 (empty when empty_ok). */
static bool is_label_token(const char *s, size_t n, bool empty_ok)
{
    if (n == 0)
        return empty_ok;
    if (n > 63 || !any_alnum(s[0]) || !any_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!any_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* A label key: [prefix/]name, prefix a DNS-1123 subdomain. */
static bool is_qualified_name(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash)
        return is_label_token(s, strlen(s), false);
    if (strchr(slash + 1, '/'))
        return false;
    return is_dns_subdomain(s, (size_t)(slash - s)) &&
           is_label_token(slash + 1, strlen(slash + 1), false);
}

typedef enum name_rule { NAME_SUBDOMAIN, NAME_LABEL, NAME_1035 } name_rule;

static name_rule name_rule_of(const ks_kind *k)
{
    return k->id == KS_NAMESPACE ? NAME_LABEL : k->id == KS_SERVICE ? NAME_1035 : NAME_SUBDOMAIN;
}

/* name (generateName when prefix: a trailing '-' is allowed, as the
 * generated suffix follows it) under k's rule; 422 on field. */
static int check_name_as(const ks_kind *k, const char *name, bool prefix, const char *shown,
                         ks_status *st)
{
    char buf[300];
    snprintf(buf, sizeof(buf), "%s", name);
    size_t n = strlen(name);
    if (prefix && n > 0 && n < sizeof(buf) && buf[n - 1] == '-')
        buf[n - 1] = 'a';
    name_rule r = name_rule_of(k);
    bool ok = n < sizeof(buf) && (r == NAME_LABEL      ? is_dns_label(buf, n)
                                  : r == NAME_1035     ? is_dns1035_label(buf, n)
                                                       : is_dns_subdomain(buf, n));
    if (ok)
        return TLR_OK;
    const char *field = prefix ? "metadata.generateName" : "metadata.name";
    if (r == NAME_SUBDOMAIN && n > 253)
        return field_error(st, k, shown, "FieldValueInvalid", field,
                           "Invalid value: \"%.60s...\": must be no more than 253 characters", name);
    if (r != NAME_SUBDOMAIN && n > 63)
        return field_error(st, k, shown, "FieldValueInvalid", field,
                           "Invalid value: \"%.60s...\": must be no more than 63 characters", name);
    return field_error(st, k, shown, "FieldValueInvalid", field,
                       "Invalid value: \"%.100s\": a lowercase RFC 1123 %s must consist of lower "
                       "case alphanumeric characters%s, and must %s",
                       name, r == NAME_SUBDOMAIN ? "subdomain" : r == NAME_LABEL ? "label" : "label",
                       r == NAME_SUBDOMAIN ? ", '-' or '.'" : " or '-'",
                       r == NAME_1035 ? "start with an alphabetic character, and end with an "
                                        "alphanumeric character"
                                      : "start and end with an alphanumeric character");
}

static int check_name(const ks_kind *k, const char *name, ks_status *st)
{
    return check_name_as(k, name, false, name, st);
}

/* metadata.labels: qualified keys, valid values (types: check_string_map). */
static int check_labels(const ks_kind *k, json_object *j, const char *path, ks_status *st)
{
    json_object *m = tlr_json_obj(j, path);
    if (!m)
        return TLR_OK;
    const char *name = tlr_json_str(j, "metadata.name");
    json_object_object_foreach(m, key, v) {
        char field[200];
        snprintf(field, sizeof(field), "%s", path);
        if (!is_qualified_name(key))
            return field_error(st, k, name, "FieldValueInvalid", field,
                               "Invalid value: \"%.100s\": name part must consist of alphanumeric "
                               "characters, '-', '_' or '.', and must start and end with an "
                               "alphanumeric character (an optional prefix: a DNS-1123 "
                               "subdomain followed by '/'), at most 63 characters", key);
        const char *val = v ? json_object_get_string(v) : "";
        if (!is_label_token(val, strlen(val), true)) {
            snprintf(field, sizeof(field), "%s", path);
            return field_error(st, k, name, "FieldValueInvalid", field,
                               "Invalid value: \"%.100s\": a valid label must be an empty string "
                               "or consist of alphanumeric characters, '-', '_' or '.', and must "
                               "start and end with an alphanumeric character, at most 63 "
                               "characters", val);
        }
    }
    return TLR_OK;
}

/* Containers of a pod spec at spec: at least one; each with a name (a
 * DNS-1123 label, unique across containers and initContainers) and an
 * image. */
static int check_containers(const ks_kind *k, json_object *j, const char *spec, ks_status *st)
{
    static const char *const lists[] = { "containers", "initContainers" };
    const char *name = tlr_json_str(j, "metadata.name");
    if (!name || !name[0])
        name = tlr_json_str(j, "metadata.generateName");
    char path[96], field[160];
    snprintf(path, sizeof(path), "%s.containers", spec);
    json_object *main_list = tlr_json_arr(j, path);
    if (!main_list || json_object_array_length(main_list) == 0)
        return field_error(st, k, name, "FieldValueRequired", path, "Required value");
    for (size_t l = 0; l < 2; l++) {
        snprintf(path, sizeof(path), "%s.%s", spec, lists[l]);
        json_object *arr = tlr_json_arr(j, path);
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
            json_object *c = json_object_array_get_idx(arr, i);
            const char *cn = tlr_json_str(c, "name");
            const char *image = tlr_json_str(c, "image");
            if (!cn || !cn[0]) {
                snprintf(field, sizeof(field), "%s[%zu].name", path, i);
                return field_error(st, k, name, "FieldValueRequired", field, "Required value");
            }
            if (!is_dns_label(cn, strlen(cn))) {
                snprintf(field, sizeof(field), "%s[%zu].name", path, i);
                return field_error(st, k, name, "FieldValueInvalid", field,
                                   "Invalid value: \"%.100s\": a lowercase RFC 1123 label must "
                                   "consist of lower case alphanumeric characters or '-', and "
                                   "must start and end with an alphanumeric character", cn);
            }
            /* Unique against every container before this one, in both lists. */
            for (size_t l2 = 0; l2 <= l; l2++) {
                char p2[96];
                snprintf(p2, sizeof(p2), "%s.%s", spec, lists[l2]);
                json_object *a2 = tlr_json_arr(j, p2);
                size_t upto = l2 == l ? i : (a2 ? json_object_array_length(a2) : 0);
                for (size_t i2 = 0; a2 && i2 < upto; i2++) {
                    const char *other = tlr_json_str(json_object_array_get_idx(a2, i2), "name");
                    if (other && !strcmp(other, cn)) {
                        snprintf(field, sizeof(field), "%s[%zu].name", path, i);
                        return field_error(st, k, name, "FieldValueDuplicate", field,
                                           "Duplicate value: \"%.100s\"", cn);
                    }
                }
            }
            if (!image || !image[0]) {
                snprintf(field, sizeof(field), "%s[%zu].image", path, i);
                return field_error(st, k, name, "FieldValueRequired", field, "Required value");
            }
        }
    }
    return TLR_OK;
}

/* Kinds whose metadata.generation counts spec changes. */
static bool has_generation(ks_kind_id k)
{
    const ks_kind *kk = ks_kind_get(k);
    return (kk->subresources & KS_SUB_STATUS) && k != KS_POD && k != KS_NODE &&
           k != KS_NAMESPACE && k != KS_SERVICE;
}

/* apiVersion/kind: fill when absent, 400 when they name another kind. */
static int check_type_meta(const ks_kind *k, json_object *j, ks_status *st)
{
    char av[128];
    ks_kind_api_version(k, av, sizeof(av));
    json_object *v = json_object_object_get(j, "apiVersion");
    json_object *kd = json_object_object_get(j, "kind");
    if ((v && !json_object_is_type(v, json_type_string)) ||
        (kd && !json_object_is_type(kd, json_type_string)))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "%s in version \"%s\" cannot be handled as a %s: apiVersion and "
                             "kind must be strings",
                             k->kind, k->version, k->kind);
    const char *vs = v ? json_object_get_string(v) : "";
    const char *ks = kd ? json_object_get_string(kd) : "";
    if (vs[0] && strcmp(vs, av))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "the API version in the data (%s) does not match the expected "
                             "API version (%s)",
                             vs, av);
    if (ks[0] && strcmp(ks, k->kind))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "the kind in the data (%s) does not match the expected kind (%s)",
                             ks, k->kind);
    json_object_object_add(j, "apiVersion", json_object_new_string(av));
    json_object_object_add(j, "kind", json_object_new_string(k->kind));
    return TLR_OK;
}

static void new_uid(char *buf)
{
    unsigned char r[16];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        abort();
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    snprintf(buf, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
             r[15]);
}

/* The body minus metadata and status, to tell spec changes. */
static bool spec_equal(json_object *a, json_object *b)
{
    bool eq = true;
    json_object_object_foreach(a, key, va) {
        if (!strcmp(key, "metadata") || !strcmp(key, "status"))
            continue;
        if (!json_object_equal(va, json_object_object_get(b, key))) {
            eq = false;
            break;
        }
    }
    if (eq) {
        json_object_object_foreach(b, key2, vb) {
            if (!strcmp(key2, "metadata") || !strcmp(key2, "status"))
                continue;
            if (!json_object_object_get(a, key2) && vb)
                return false;
        }
    }
    return eq;
}

/* ------------------------------------------------------------------ */
/* writes                                                              */
/* ------------------------------------------------------------------ */

static int namespace_of(const ks_kind *k, const char *ns, json_object *meta, const char **out,
                        ks_status *st)
{
    if (!k->namespaced) {
        json_object_object_del(meta, "namespace");
        *out = "";
        return TLR_OK;
    }
    const char *mns = tlr_json_str(meta, "namespace");
    if (ns && ns[0] && mns && mns[0] && strcmp(ns, mns))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "the namespace of the provided object does not match the "
                             "namespace sent on the request");
    const char *use = ns && ns[0] ? ns : (mns && mns[0] ? mns : "default");
    json_object_object_add(meta, "namespace", json_object_new_string(use));
    *out = tlr_json_str(meta, "namespace");
    return TLR_OK;
}

/* One create on its way into the store: the caller's copy of the body,
 * checked and filled in, and the strings it names (borrowed from j). */
typedef struct ks_create_req {
    const ks_kind *k;
    ks_kind_id kind;
    json_object *j;       /* owned by ks_store_create_obj */
    json_object *meta;    /* j's metadata */
    const char *ns;       /* "" for a cluster-scoped kind */
    const char *name;     /* NULL or "" until generated from gen */
    const char *gen;      /* metadata.generateName, or NULL */
} ks_create_req;

/* metadata.name, or generateName when it has none, under the kind's rule:
 * 422 Invalid when neither is there or the one to use is bad. */
static int ks_store_create_check_name(ks_create_req *c, ks_status *st)
{
    const ks_kind *k = c->k;
    const char *name = tlr_json_str(c->meta, "name");
    const char *gen = tlr_json_str(c->meta, "generateName");
    int rc;
    c->name = name;
    c->gen = gen;
    if ((!name || !name[0]) && (!gen || !gen[0]))
        return ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                             "%s \"\" is invalid: metadata.name: Required value: name or "
                             "generateName is required",
                             k->kind);
    if (name && name[0] && (rc = check_name(k, name, st)))
        return rc;
    if ((!name || !name[0]) && (rc = check_name_as(k, gen, true, gen, st)))
        return rc;
    if ((!name || !name[0]) && strlen(gen) > 200) {
        rc = check_name(k, gen, st);
        if (!rc)
            rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                               "%s is invalid: metadata.generateName: too long", k->kind);
        return rc;
    }
    return TLR_OK;
}

/* A Pod needs containers (422 Invalid) and starts Pending. */
static int ks_store_create_pod(const ks_create_req *c, ks_status *st)
{
    json_object *ctrs = tlr_json_arr(c->j, "spec.containers");
    if (!ctrs || json_object_array_length(ctrs) == 0) {
        int rc = ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                               "%s \"%s\" is invalid: spec.containers: Required value",
                               c->k->kind, c->name ? c->name : c->gen);
        ks_status_details(st, c->k, c->name);
        return rc;
    }
    if (!tlr_json_str(c->j, "status.phase")) {
        json_object *status = tlr_json_obj(c->j, "status");
        if (!status) {
            status = json_object_new_object();
            json_object_object_add(c->j, "status", status);
        }
        json_object_object_add(status, "phase", json_object_new_string("Pending"));
    }
    return TLR_OK;
}

/* The metadata the server owns: a new uid and creationTimestamp, the first
 * generation where it counts, and none of what a client may not set. */
static void ks_store_create_stamp(const ks_create_req *c)
{
    json_object *meta = c->meta;
    char uid[40], now[32];
    new_uid(uid);
    json_object_object_add(meta, "uid", json_object_new_string(uid));
    json_object_object_add(meta, "creationTimestamp",
                           json_object_new_string(ks_now_rfc3339(now, sizeof(now))));
    json_object_object_del(meta, "deletionTimestamp");
    json_object_object_del(meta, "deletionGracePeriodSeconds");
    json_object_object_del(meta, "resourceVersion");
    json_object_object_del(meta, "selfLink");
    if (has_generation(c->kind))
        json_object_object_add(meta, "generation", json_object_new_int64(1));
}

/* Check c->j and fill it in, all before the lock is taken: apiVersion and
 * kind, metadata, the namespace, the name, a Pod's defaults. */
static int ks_store_create_prepare(ks_create_req *c, const char *ns, ks_status *st)
{
    int rc = check_type_meta(c->k, c->j, st);
    if (rc)
        return rc;
    c->meta = json_object_object_get(c->j, "metadata");
    if (!c->meta) {
        c->meta = json_object_new_object();
        json_object_object_add(c->j, "metadata", c->meta);
    }
    rc = namespace_of(c->k, ns, c->meta, &c->ns, st);
    if (rc)
        return rc;
    rc = ks_store_create_check_name(c, st);
    if (rc)
        return rc;
    if (c->kind == KS_POD && (rc = ks_store_create_pod(c, st)))
        return rc;
    ks_store_create_stamp(c);
    return TLR_OK;
}

/* metadata.name from generateName and a random suffix, drawn again while
 * the name is taken, about a hundred times at most (lock held).  422
 * Invalid when the result is not a valid name. */
static int ks_store_create_generate_name(ks_store *s, ks_create_req *c, ks_status *st)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    char buf[256];
    for (int tries = 0;; tries++) {
        uint64_t r = rng_next(s);
        char sfx[6];
        for (int i = 0; i < 5; i++, r /= 27)
            sfx[i] = alphabet[r % 27];
        sfx[5] = 0;
        snprintf(buf, sizeof(buf), "%s%s", c->gen, sfx);
        if (!sl_find(&s->tabs[c->kind], c->ns, buf) || tries > 100)
            break;
    }
    json_object_object_add(c->meta, "name", json_object_new_string(buf));
    c->name = tlr_json_str(c->meta, "name");
    if (check_name(c->k, c->name, NULL) != TLR_OK)
        return check_name(c->k, c->name, st);
    return TLR_OK;
}

/* Store the prepared object as the next version (lock held); with
 * KS_W_DRY_RUN only build it.  404 NotFound when its namespace is absent,
 * 409 AlreadyExists when its name is taken.  *out owned (ks_obj_unref). */
static int ks_store_create_locked(ks_store *s, ks_create_req *c, unsigned flags, ks_obj **out,
                                  ks_status *st)
{
    const ks_kind *k = c->k;
    int rc;
    if (k->namespaced && !sl_find(&s->tabs[KS_NAMESPACE], "", c->ns)) {
        rc = ks_status_set(st, TLR_E_NOTFOUND, 404, "NotFound", "namespaces \"%s\" not found",
                           c->ns);
        ks_status_details(st, ks_kind_get(KS_NAMESPACE), c->ns);
        return rc;
    }
    if ((!c->name || !c->name[0]) && (rc = ks_store_create_generate_name(s, c, st)))
        return rc;
    if (sl_find(&s->tabs[c->kind], c->ns, c->name)) {
        rc = ks_status_set(st, TLR_E_EXISTS, 409, "AlreadyExists", "%s%s%s \"%s\" already exists",
                           k->plural, k->group[0] ? "." : "", k->group, c->name);
        ks_status_details(st, k, c->name);
        return rc;
    }
    uint64_t rv = s->rv + 1;
    set_rv(c->j, rv);
    ks_obj *o = obj_build(c->kind, c->j, rv);
    if (!(flags & KS_W_DRY_RUN)) {
        ks_obj_ref(o); /* the event's */
        commit(s, KS_EV_ADDED, o, NULL);
    }
    *out = o;
    return TLR_OK;
}

int ks_store_create_obj(ks_store *s, ks_kind_id kind, const char *ns, json_object *in,
                        unsigned flags, ks_obj **out, ks_status *st)
{
    const ks_kind *k = ks_kind_get(kind);
    if (!k || !in)
        return ks_status_set(st, TLR_E_INVAL, 400, "BadRequest", "bad create arguments");
    int rc = check_types(k, in, st);
    if (rc)
        return rc;
    ks_create_req c = { .k = k, .kind = kind };
    json_object_deep_copy(in, &c.j, NULL);
    rc = ks_store_create_prepare(&c, ns, st);
    if (rc)
        goto out;
    ks_obj *o = NULL;
    pthread_mutex_lock(&s->mu);
    rc = ks_store_create_locked(s, &c, flags, &o, st);
    pthread_mutex_unlock(&s->mu);
    if (rc)
        goto out;
    if (out)
        *out = o;
    else
        ks_obj_unref(o);
out:
    json_object_put(c.j);
    return rc;
}

int ks_store_create_text(ks_store *s, ks_kind_id kind, const char *ns, const char *json,
                         ks_obj **out, ks_status *st)
{
    json_object *j = NULL;
    char err[200];
    if (!json || tlr_json_parse(json, strlen(json), KS_PATCH_MAX, &j, err, sizeof(err)))
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest", "malformed JSON: %s",
                             json ? err : "NULL");
    int rc = ks_store_create_obj(s, kind, ns, j, 0, out, st);
    json_object_put(j);
    return rc;
}

static void copy_member(json_object *dst, json_object *src, const char *key)
{
    json_object *v = src ? json_object_object_get(src, key) : NULL;
    if (v)
        json_object_object_add(dst, key, json_object_get(v));
    else
        json_object_object_del(dst, key);
}

/* Remove the object (lock held): a final version with a new rv goes into
 * the DELETED event. */
static ks_obj *remove_locked(ks_store *s, ks_obj *cur, json_object *j)
{
    uint64_t rv = s->rv + 1;
    set_rv(j, rv);
    ks_obj *fin = obj_build(cur->kind, j, rv);
    ks_obj_ref(cur);   /* the event's prev */
    ks_obj_ref(fin);   /* the event's obj */
    commit(s, KS_EV_DELETED, fin, cur);
    return fin;
}

int ks_store_update(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                    json_object *in, unsigned flags, ks_obj **out, ks_status *st)
{
    const ks_kind *k = ks_kind_get(kind);
    if (!k || !in || !name)
        return ks_status_set(st, TLR_E_INVAL, 400, "BadRequest", "bad update arguments");
    int rc = check_types(k, in, st);
    if (rc)
        return rc;
    json_object *j = NULL, *curj = NULL;
    json_object_deep_copy(in, &j, NULL);
    if ((rc = check_type_meta(k, j, st)))
        goto out;
    json_object *meta = json_object_object_get(j, "metadata");
    if (!meta) {
        meta = json_object_new_object();
        json_object_object_add(j, "metadata", meta);
    }
    const char *mname = tlr_json_str(meta, "name");
    if (mname && strcmp(mname, name)) {
        rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                           "the name of the object (%s) does not match the name on the URL "
                           "(%s)",
                           mname, name);
        goto out;
    }
    const char *mns = tlr_json_str(meta, "namespace");
    if (k->namespaced && mns && mns[0] && ns && strcmp(mns, ns)) {
        rc = ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                           "the namespace of the provided object does not match the namespace "
                           "sent on the request");
        goto out;
    }
    const char *want_rv = tlr_json_str(meta, "resourceVersion");
    char want_buf[32] = "";
    if (want_rv)
        snprintf(want_buf, sizeof(want_buf), "%s", want_rv);

    pthread_mutex_lock(&s->mu);
    sl_node *n = sl_find(&s->tabs[kind], key_ns(k, ns), name);
    if (!n) {
        pthread_mutex_unlock(&s->mu);
        rc = not_found(st, k, name);
        goto out;
    }
    ks_obj *cur = n->obj;
    char cur_rv[24];
    snprintf(cur_rv, sizeof(cur_rv), "%" PRIu64, cur->rv);
    if (!(flags & KS_W_NO_RV) && want_buf[0] && strcmp(want_buf, cur_rv)) {
        pthread_mutex_unlock(&s->mu);
        rc = conflict(st, k, name);
        goto out;
    }
    curj = ks_obj_parse(cur);
    json_object *next = NULL;
    if (flags & KS_W_STATUS) {
        /* Only .status comes from the request. */
        json_object_deep_copy(curj, &next, NULL);
        copy_member(next, j, "status");
    } else {
        next = json_object_get(j);
        if ((k->subresources & KS_SUB_STATUS) && !(flags & KS_W_ALL))
            copy_member(next, curj, "status");
    }
    json_object *nmeta = json_object_object_get(next, "metadata");
    json_object *cmeta = json_object_object_get(curj, "metadata");
    static const char *const fixed[] = { "name", "namespace", "uid", "creationTimestamp",
                                         "deletionTimestamp", "deletionGracePeriodSeconds",
                                         "generation", "generateName" };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        copy_member(nmeta, cmeta, fixed[i]);
    if (!k->namespaced)
        json_object_object_del(nmeta, "namespace");
    if (has_generation(kind) && !spec_equal(curj, next)) {
        int64_t g = 0;
        tlr_json_int(curj, "metadata.generation", &g);
        json_object_object_add(nmeta, "generation", json_object_new_int64(g + 1));
    }
    set_rv(next, cur->rv);
    ks_obj *res = NULL;
    if (json_object_equal(next, curj)) {
        /* A no-op write does not bump the version, as in the real API. */
        res = cur;
        ks_obj_ref(res);
    } else if (flags & KS_W_DRY_RUN) {
        res = obj_build(kind, next, cur->rv);
    } else if (cur->deleting && !tlr_json_arr(next, "metadata.finalizers")) {
        res = remove_locked(s, cur, next);
    } else if (cur->deleting && json_object_array_length(tlr_json_arr(next, "metadata.finalizers")) == 0) {
        res = remove_locked(s, cur, next);
    } else {
        uint64_t rv = s->rv + 1;
        set_rv(next, rv);
        res = obj_build(kind, next, rv);
        ks_obj_ref(res);
        ks_obj_ref(cur); /* prev, for the event */
        commit(s, KS_EV_MODIFIED, res, cur);
    }
    pthread_mutex_unlock(&s->mu);
    json_object_put(next);
    if (out)
        *out = res;
    else
        ks_obj_unref(res);
out:
    json_object_put(curj);
    json_object_put(j);
    return rc;
}

int ks_store_modify(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                    unsigned flags, ks_mutate_fn fn, void *arg, ks_obj **out, ks_status *st)
{
    for (int attempt = 0;; attempt++) {
        ks_obj *cur = NULL;
        int rc = ks_store_get(s, kind, ns, name, &cur, st);
        if (rc)
            return rc;
        json_object *j = ks_obj_parse(cur);
        rc = fn(j, arg, st);
        if (rc == TLR_E_CANCELED) {
            json_object_put(j);
            if (out)
                *out = cur;
            else
                ks_obj_unref(cur);
            return TLR_OK;
        }
        if (rc) {
            json_object_put(j);
            ks_obj_unref(cur);
            return rc;
        }
        json_object *meta = tlr_json_obj(j, "metadata");
        if (meta) {
            char buf[24];
            snprintf(buf, sizeof(buf), "%" PRIu64, cur->rv);
            json_object_object_add(meta, "resourceVersion", json_object_new_string(buf));
        }
        ks_obj_unref(cur);
        rc = ks_store_update(s, kind, ns, name, j, flags & ~KS_W_NO_RV, out, st);
        json_object_put(j);
        if (rc != TLR_E_CONFLICT || attempt >= MAX_RETRIES)
            return rc;
    }
}

int ks_store_patch(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                   ks_patch_type type, const char *patch, size_t len, unsigned flags,
                   ks_obj **out, ks_status *st)
{
    for (int attempt = 0;; attempt++) {
        ks_obj *cur = NULL;
        int rc = ks_store_get(s, kind, ns, name, &cur, st);
        if (rc)
            return rc;
        json_object *j = ks_obj_parse(cur), *res = NULL;
        rc = ks_patch_apply(type, kind, j, patch, len, &res, st);
        json_object_put(j);
        if (rc) {
            ks_obj_unref(cur);
            return rc;
        }
        if (!json_object_is_type(res, json_type_object)) {
            json_object_put(res);
            ks_obj_unref(cur);
            return ks_status_set(st, TLR_E_INVAL, 422, "Invalid",
                                 "%s \"%s\" is invalid: the patched document is not an object",
                                 ks_kind_get(kind)->kind, name);
        }
        /* A resourceVersion the patch itself sets is a precondition;
         * otherwise the version we read is. */
        const char *prv = tlr_json_str(res, "metadata.resourceVersion");
        char cur_rv[24];
        snprintf(cur_rv, sizeof(cur_rv), "%" PRIu64, cur->rv);
        bool own_rv = prv && strcmp(prv, cur_rv);
        json_object *meta = tlr_json_obj(res, "metadata");
        if (meta && !prv)
            json_object_object_add(meta, "resourceVersion", json_object_new_string(cur_rv));
        ks_obj_unref(cur);
        rc = ks_store_update(s, kind, ns, name, res, flags & ~KS_W_NO_RV, out, st);
        json_object_put(res);
        if (rc != TLR_E_CONFLICT || own_rv || attempt >= MAX_RETRIES)
            return rc;
    }
}

/* Kinds that own others through ownerReferences. */
#define OWNER_KINDS (KS_KIND_BIT(KS_DEPLOYMENT) | KS_KIND_BIT(KS_REPLICASET) |   \
                     KS_KIND_BIT(KS_STATEFULSET) | KS_KIND_BIT(KS_DAEMONSET) |   \
                     KS_KIND_BIT(KS_NODEPOOL) | KS_KIND_BIT(KS_NODECLAIM) |      \
                     KS_KIND_BIT(KS_SERVICE))

typedef struct dep_ref {
    ks_kind_id kind;
    char *ns, *name;
} dep_ref;

int ks_store_delete(ks_store *s, ks_kind_id kind, const char *ns, const char *name,
                    const ks_delete_opts *o, ks_obj **out, ks_status *st)
{
    const ks_kind *k = ks_kind_get(kind);
    if (!k || !name)
        return ks_status_set(st, TLR_E_INVAL, 400, "BadRequest", "bad delete arguments");
    pthread_mutex_lock(&s->mu);
    sl_node *n = sl_find(&s->tabs[kind], key_ns(k, ns), name);
    if (!n) {
        pthread_mutex_unlock(&s->mu);
        return not_found(st, k, name);
    }
    ks_obj *cur = n->obj;
    char cur_rv[24];
    snprintf(cur_rv, sizeof(cur_rv), "%" PRIu64, cur->rv);
    if (o && ((o->precondition_uid && strcmp(o->precondition_uid, cur->uid)) ||
              (o->precondition_rv && strcmp(o->precondition_rv, cur_rv)))) {
        /* cur is the table's reference: format before unlocking. */
        int rc = ks_status_set(st, TLR_E_CONFLICT, 409, "Conflict",
                               "Operation cannot be fulfilled on %s \"%s\": Precondition "
                               "failed: UID in precondition: %s, UID in object meta: %s",
                               k->plural, name,
                               o->precondition_uid ? o->precondition_uid : "", cur->uid);
        pthread_mutex_unlock(&s->mu);
        ks_status_details(st, k, name);
        return rc;
    }
    ks_obj *res;
    bool removed = false;
    if (cur->has_finalizers) {
        if (cur->deleting) {
            res = cur;
            ks_obj_ref(res);
        } else {
            json_object *j = ks_obj_parse(cur);
            json_object *meta = tlr_json_obj(j, "metadata");
            char now[32];
            json_object_object_add(meta, "deletionTimestamp",
                                   json_object_new_string(ks_now_rfc3339(now, sizeof(now))));
            int64_t grace = o && o->grace_seconds >= 0 ? o->grace_seconds : 0;
            json_object_object_add(meta, "deletionGracePeriodSeconds",
                                   json_object_new_int64(grace));
            uint64_t rv = s->rv + 1;
            set_rv(j, rv);
            res = obj_build(kind, j, rv);
            json_object_put(j);
            ks_obj_ref(res);
            ks_obj_ref(cur);
            commit(s, KS_EV_MODIFIED, res, cur);
        }
    } else {
        json_object *j = ks_obj_parse(cur);
        res = remove_locked(s, cur, j);
        json_object_put(j);
        removed = true;
    }
    /* Collect dependents to delete after the lock is dropped. */
    dep_ref *deps = NULL;
    size_t ndeps = 0, dcap = 0;
    bool orphan = o && o->propagation == KS_PROPAGATE_ORPHAN;
    bool cascade = removed && !orphan && (KS_KIND_BIT(kind) & OWNER_KINDS);
    bool is_ns = removed && kind == KS_NAMESPACE;
    if (cascade || is_ns) {
        for (int kk = 0; kk < KS_KIND_COUNT; kk++) {
            if (is_ns && !ks_kind_get(kk)->namespaced)
                continue;
            for (sl_node *x = s->tabs[kk].head->next[0]; x; x = x->next[0]) {
                bool hit = is_ns ? !strcmp(x->obj->ns, name)
                                 : !strcmp(x->obj->owner, res->uid);
                if (!hit)
                    continue;
                if (ndeps == dcap) {
                    dcap = dcap ? dcap * 2 : 16;
                    deps = tlr_realloc(deps, dcap * sizeof(*deps));
                }
                deps[ndeps++] = (dep_ref){ (ks_kind_id)kk, tlr_strdup(x->obj->ns),
                                           tlr_strdup(x->obj->name) };
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < ndeps; i++) {
        ks_delete_opts dopt = { .propagation = KS_PROPAGATE_BACKGROUND, .grace_seconds = -1 };
        ks_store_delete(s, deps[i].kind, deps[i].ns, deps[i].name, &dopt, NULL, NULL);
        free(deps[i].ns);
        free(deps[i].name);
    }
    free(deps);
    if (out)
        *out = res;
    else
        ks_obj_unref(res);
    return TLR_OK;
}

/* ------------------------------------------------------------------ */
/* events and waiting                                                  */
/* ------------------------------------------------------------------ */

int ks_store_events_since(ks_store *s, uint64_t since, unsigned kind_mask, size_t max,
                          ks_event **out, size_t *n, uint64_t *next)
{
    pthread_mutex_lock(&s->mu);
    if (since < s->dropped_upto) {
        pthread_mutex_unlock(&s->mu);
        return TLR_E_GONE;
    }
    /* The ring is in version order: binary search the first event > since. */
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->ring[(s->head + mid) % s->cap].rv <= since)
            lo = mid + 1;
        else
            hi = mid;
    }
    ks_event *ev = NULL;
    size_t cnt = 0, cap = 0;
    uint64_t last = s->rv > since ? s->rv : since;
    for (size_t i = lo; i < s->count; i++) {
        ks_event *e = &s->ring[(s->head + i) % s->cap];
        if (!(kind_mask & KS_KIND_BIT(e->obj->kind)))
            continue;
        if (max && cnt == max) {
            last = ev[cnt - 1].rv;
            break;
        }
        if (cnt == cap) {
            cap = cap ? cap * 2 : 16;
            ev = tlr_realloc(ev, cap * sizeof(*ev));
        }
        ev[cnt] = *e;
        ks_obj_ref(e->obj);
        if (e->prev)
            ks_obj_ref(e->prev);
        cnt++;
    }
    pthread_mutex_unlock(&s->mu);
    *out = ev;
    *n = cnt;
    *next = last;
    return TLR_OK;
}

static void deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int ks_store_wait(ks_store *s, uint64_t rv, int timeout_ms)
{
    struct timespec ts;
    deadline_after(&ts, timeout_ms < 0 ? 0 : timeout_ms);
    int rc = TLR_OK;
    pthread_mutex_lock(&s->mu);
    while (s->rv <= rv && !s->closing) {
        if (pthread_cond_timedwait(&s->cond, &s->mu, &ts) == ETIMEDOUT) {
            rc = s->rv > rv ? TLR_OK : TLR_E_TIMEOUT;
            break;
        }
    }
    if (s->closing)
        rc = TLR_E_CLOSED;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ------------------------------------------------------------------ */
/* controllers                                                         */
/* ------------------------------------------------------------------ */

static uint64_t kinds_rv(ks_store *s, unsigned mask)
{
    uint64_t m = 0;
    for (int k = 0; k < KS_KIND_COUNT; k++)
        if ((mask & KS_KIND_BIT(k)) && s->tabs[k].last_rv > m)
            m = s->tabs[k].last_rv;
    return m;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *ctl_main(void *arg)
{
    ctl_thread *ct = arg;
    ks_store *s = ct->s;
    int gap = ct->c.min_gap_ms > 0 ? ct->c.min_gap_ms : 50;
    pthread_mutex_lock(&s->mu);
    uint64_t seen = 0; /* run once at start */
    int64_t last_run = mono_ms() - ct->c.period_ms;
    while (!s->ctl_stop) {
        int64_t now = mono_ms();
        bool changed = ct->c.wake_kinds && kinds_rv(s, ct->c.wake_kinds) > seen;
        int64_t due = last_run + ct->c.period_ms;
        if (changed && last_run + gap < due)
            due = last_run + gap;
        if (now >= due) {
            seen = kinds_rv(s, ct->c.wake_kinds);
            pthread_mutex_unlock(&s->mu);
            ct->c.fn(s, ct->c.arg);
            pthread_mutex_lock(&s->mu);
            last_run = mono_ms();
            continue;
        }
        struct timespec ts;
        deadline_after(&ts, (int)(due - now));
        pthread_cond_timedwait(&s->cond, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int ks_store_add_controller(ks_store *s, const ks_controller *c)
{
    if (!s || !c || !c->fn || c->period_ms <= 0)
        return TLR_E_INVAL;
    ctl_thread *ct = tlr_calloc(1, sizeof(*ct));
    ct->c = *c;
    ct->name = tlr_strdup(c->name ? c->name : "controller");
    ct->c.name = ct->name;
    ct->s = s;
    pthread_mutex_lock(&s->mu);
    s->ctl_stop = false;
    s->ctls = tlr_realloc(s->ctls, (s->nctls + 1) * sizeof(*s->ctls));
    s->ctls[s->nctls++] = ct;
    pthread_mutex_unlock(&s->mu);
    if (pthread_create(&ct->th, NULL, ctl_main, ct)) {
        pthread_mutex_lock(&s->mu);
        s->nctls--;
        pthread_mutex_unlock(&s->mu);
        free(ct->name);
        free(ct);
        return TLR_E_NOMEM;
    }
    return TLR_OK;
}

void ks_store_stop_controllers(ks_store *s)
{
    pthread_mutex_lock(&s->mu);
    s->ctl_stop = true;
    pthread_cond_broadcast(&s->cond);
    ctl_thread **ctls = s->ctls;
    size_t n = s->nctls;
    s->ctls = NULL;
    s->nctls = 0;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        pthread_join(ctls[i]->th, NULL);
        free(ctls[i]->name);
        free(ctls[i]);
    }
    free(ctls);
}
