/* report.c - Events, conditions and log lines about objects the watcher
 * cannot use as written (see report.h for the design).
 *
 * The objects remembered (those with a warning or an error) are a chained
 * hash table by kind and name with a fixed number of buckets: every object
 * the watcher converts is looked up, pods included, so a lookup must not
 * cost a scan.  An object whose uid or generation changed starts over
 * with nothing said.
 */
#include "report.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_alloc.h"
#include "tlr_hash.h"
#include "tlr_json.h"
#include "tlr_time.h"

#define NBUCKETS 1024

/* What was said about one object (kind, key) at (uid, generation). */
typedef struct rec {
    struct rec *next;
    uint32_t hash;
    Tailor__V1__ClusterKind kind;
    char *key;                 /* "namespace/name" or "name" */
    char *uid;
    int64_t gen;
    uint64_t *said;            /* FNV-1a of each message said */
    size_t nsaid, capsaid;
    bool invalid;
    uint32_t mark;             /* the kind's relist round that last saw it */
} rec;

struct watcher_report {
    watcher_report_opts o;
    rec *b[NBUCKETS];
    size_t n;
    size_t ninvalid[64];       /* records with invalid set, by kind */
    uint32_t mark[64];         /* relist round, by kind */
};

typedef struct kind_meta {
    const char *kind, *api_version;
    const tlr_kube_res *res;   /* whose status carries ValidationSucceeded; NULL: none */
    const char *reason;        /* ValidationSucceeded=False's reason */
} kind_meta;

static const tlr_kube_res res_nodepools = TLR_KUBE_RES_NODEPOOLS;
static const tlr_kube_res res_nodeclasses = TLR_KUBE_RES_EC2NODECLASSES;

static kind_meta meta_of(Tailor__V1__ClusterKind kind)
{
    switch (kind) {
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_POD: return (kind_meta){ "Pod", "v1", NULL, NULL };
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE: return (kind_meta){ "Node", "v1", NULL, NULL };
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODECLAIM:
        return (kind_meta){ "NodeClaim", "karpenter.sh/v1", NULL, NULL };
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODEPOOL:
        return (kind_meta){ "NodePool", "karpenter.sh/v1", &res_nodepools, "NodePoolValidationFailed" };
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_NODE_CLASS:
        return (kind_meta){ "EC2NodeClass", "karpenter.k8s.aws/v1", &res_nodeclasses,
                            "NodeClassValidationFailed" };
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_PDB:
        return (kind_meta){ "PodDisruptionBudget", "policy/v1", NULL, NULL };
    case TAILOR__V1__CLUSTER_KIND__CLUSTER_KIND_DAEMONSET:
        return (kind_meta){ "DaemonSet", "apps/v1", NULL, NULL };
    default: return (kind_meta){ NULL, NULL, NULL, NULL };
    }
}

static int64_t now(const watcher_report *r)
{
    return r->o.now_ms ? r->o.now_ms() : tlr_wall_ms();
}

void watcher_report_create(const watcher_report_opts *o, watcher_report **out)
{
    watcher_report *r = tlr_calloc(1, sizeof(*r));
    r->o = *o;
    if (r->o.max_objects == 0)
        r->o.max_objects = 10000;
    *out = r;
}

static void rec_free(rec *x)
{
    free(x->key);
    free(x->uid);
    free(x->said);
    free(x);
}

static void set_invalid(watcher_report *r, rec *x, bool invalid)
{
    if (x->invalid != invalid && (unsigned)x->kind < 64)
        r->ninvalid[x->kind] += invalid ? 1 : (size_t)-1;
    x->invalid = invalid;
}

/* Unlink and free *pp. */
static void unlink_rec(watcher_report *r, rec **pp)
{
    rec *x = *pp;
    *pp = x->next;
    set_invalid(r, x, false);
    rec_free(x);
    r->n--;
}

static void forget_all(watcher_report *r)
{
    for (size_t i = 0; i < NBUCKETS; i++)
        while (r->b[i])
            unlink_rec(r, &r->b[i]);
}

void watcher_report_free(watcher_report *r)
{
    if (!r)
        return;
    forget_all(r);
    free(r);
}

static void key_of(json_object *obj, char *key, size_t len)
{
    const char *ns = tlr_json_str(obj, "metadata.namespace");
    const char *name = tlr_json_str(obj, "metadata.name");
    snprintf(key, len, "%s%s%s", ns && ns[0] ? ns : "", ns && ns[0] ? "/" : "", name ? name : "");
}

static uint32_t hash_of(Tailor__V1__ClusterKind kind, const char *key)
{
    return (uint32_t)(tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, key) ^ (uint64_t)kind * 0x9e3779b97f4a7c15ull);
}

/* Where (kind, key) is or would be linked. */
static rec **find(watcher_report *r, Tailor__V1__ClusterKind kind, const char *key, uint32_t h)
{
    rec **pp = &r->b[h % NBUCKETS];
    while (*pp && ((*pp)->hash != h || (*pp)->kind != kind || strcmp((*pp)->key, key)))
        pp = &(*pp)->next;
    return pp;
}

/* The record of obj, started over when obj is another object (uid) or
 * another spec (generation) than the one remembered; created when create
 * is set, else NULL when none. */
static rec *rec_of(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj, bool create)
{
    char key[600];
    key_of(obj, key, sizeof(key));
    const char *uid = tlr_json_str(obj, "metadata.uid");
    int64_t gen = 0;
    (void)tlr_json_int(obj, "metadata.generation", &gen);
    uint32_t h = hash_of(kind, key);
    rec *x = *find(r, kind, key, h);
    uint32_t mark = (unsigned)kind < 64 ? r->mark[kind] : 0;
    if (x)
        x->mark = mark;
    if (!x) {
        if (!create)
            return NULL;
        if (r->n >= r->o.max_objects) {
            if (r->o.log)
                TLR_WARN(r->o.log, "too many objects with warnings to remember; starting over",
                         TLR_I("objects", (int64_t)r->n));
            forget_all(r);
        }
        x = tlr_calloc(1, sizeof(*x));
        x->hash = h;
        x->next = r->b[h % NBUCKETS];
        r->b[h % NBUCKETS] = x;
        r->n++;
        x->kind = kind;
        x->key = tlr_strdup(key);
        x->uid = tlr_strdup(uid ? uid : "");
        x->gen = gen;
        x->mark = mark;
        return x;
    }
    if (strcmp(x->uid, uid ? uid : "") || x->gen != gen) {
        free(x->uid);
        x->uid = tlr_strdup(uid ? uid : "");
        x->gen = gen;
        x->nsaid = 0;
    }
    return x;
}

/* True the first time msg is said about x (and remembers it). */
static bool first_time(rec *x, const char *msg)
{
    uint64_t h = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, msg);
    for (size_t i = 0; i < x->nsaid; i++)
        if (x->said[i] == h)
            return false;
    TLR_GROW(x->said, x->capsaid, x->nsaid + 1);
    x->said[x->nsaid++] = h;
    return true;
}

static void post(watcher_report *r, const kind_meta *m, json_object *obj, const char *reason,
                 const char *msg)
{
    if (!r->o.ops.event || !m->kind)
        return;
    const tlr_kube_event_spec e = { m->kind, m->api_version, tlr_json_str(obj, "metadata.namespace"),
                                    tlr_json_str(obj, "metadata.name"),
                                    tlr_json_str(obj, "metadata.uid"), "Warning", reason, msg };
    if (!e.name)
        return;
    if (r->o.ops.event(r->o.ops.arg, &e) && r->o.log)
        TLR_WARN(r->o.log, "event dropped: the event queue is full", TLR_S("reason", reason),
                 TLR_S("object", e.name));
}

void watcher_report_ignored(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj,
                            const char *msg)
{
    rec *x = rec_of(r, kind, obj, true);
    if (!first_time(x, msg))
        return;
    if (r->o.log)
        TLR_WARN(r->o.log, "a field tailor accepts but does not act on", TLR_S("warning", msg));
    kind_meta m = meta_of(kind);
    post(r, &m, obj, "IgnoredField", msg);
}

/* ---- status conditions ----------------------------------------------------- */

static json_object *cond_find(json_object *conds, const char *type)
{
    size_t n = conds ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

static bool cond_is(json_object *c, const char *status, const char *reason, const char *message)
{
    const char *s = tlr_json_str(c, "status"), *re = tlr_json_str(c, "reason"),
               *me = tlr_json_str(c, "message");
    return c && s && !strcmp(s, status) && (!reason || (re && !strcmp(re, reason))) &&
           (!message || !strcmp(me ? me : "", message));
}

typedef struct cond_want {
    const char *type, *status, *reason, *message;
} cond_want;

static json_object *cond_new(const cond_want *w, json_object *was, int64_t gen, int64_t now_ms)
{
    json_object *o = json_object_new_object();
    const char *since = was && cond_is(was, w->status, NULL, NULL)
                            ? tlr_json_str(was, "lastTransitionTime") : NULL;
    char ts[TLR_TIME_BUFLEN];
    tlr_time_format_s(now_ms, ts);
    json_object_object_add(o, "type", json_object_new_string(w->type));
    json_object_object_add(o, "status", json_object_new_string(w->status));
    json_object_object_add(o, "reason", json_object_new_string(w->reason));
    json_object_object_add(o, "message", json_object_new_string(w->message));
    json_object_object_add(o, "lastTransitionTime", json_object_new_string(since ? since : ts));
    if (gen > 0)
        json_object_object_add(o, "observedGeneration", json_object_new_int64(gen));
    return o;
}

/* Merge-patch status.conditions of obj: the conditions in want[0..n)
 * replaced, every other one kept, under obj's resourceVersion. */
static void patch_conditions(watcher_report *r, const kind_meta *m, json_object *obj,
                             const cond_want *want, int n)
{
    const char *name = tlr_json_str(obj, "metadata.name");
    if (!r->o.ops.status || !name)
        return;
    json_object *have = tlr_json_arr(obj, "status.conditions");
    int64_t gen = 0, t = now(r);
    (void)tlr_json_int(obj, "metadata.generation", &gen);
    json_object *a = json_object_new_array();
    for (int i = 0; i < n; i++)
        json_object_array_add(a, cond_new(&want[i], cond_find(have, want[i].type), gen, t));
    size_t nh = have ? json_object_array_length(have) : 0;
    for (size_t i = 0; i < nh; i++) {
        json_object *c = json_object_array_get_idx(have, i);
        const char *type = tlr_json_str(c, "type");
        bool ours = false;
        for (int k = 0; k < n && !ours; k++)
            ours = type && !strcmp(type, want[k].type);
        if (!ours)
            json_object_array_add(a, json_object_get(c));
    }
    json_object *p = json_object_new_object(), *md = json_object_new_object(),
                *st = json_object_new_object();
    const char *rv = tlr_json_str(obj, "metadata.resourceVersion");
    if (rv)
        json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(p, "metadata", md);
    json_object_object_add(st, "conditions", a);
    json_object_object_add(p, "status", st);
    if (r->o.ops.status(r->o.ops.arg, m->res, name, tlr_json_to_string(p, JSON_C_TO_STRING_PLAIN)) &&
        r->o.log)
        TLR_WARN(r->o.log, "status condition not queued: the write queue is full",
                 TLR_S("object", name));
    json_object_put(p);
}

void watcher_report_invalid(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj,
                            const char *err)
{
    rec *x = rec_of(r, kind, obj, true);
    set_invalid(r, x, true);
    kind_meta m = meta_of(kind);
    if (first_time(x, err)) {
        if (r->o.log)
            TLR_WARN(r->o.log, "ignoring an object that does not convert; the cache keeps its previous version",
                     TLR_S("kind", m.kind ? m.kind : "?"),
                     TLR_S("namespace", tlr_json_str(obj, "metadata.namespace")),
                     TLR_S("name", tlr_json_str(obj, "metadata.name")), TLR_S("error", err));
        post(r, &m, obj, "FailedValidation", err);
    }
    if (!m.res)
        return;
    json_object *have = tlr_json_arr(obj, "status.conditions");
    if (cond_is(cond_find(have, "ValidationSucceeded"), "False", m.reason, err) &&
        cond_is(cond_find(have, "Ready"), "False", NULL, NULL))
        return;     /* already says so (our own patch coming back, or a relist) */
    const cond_want want[] = {
        { "ValidationSucceeded", "False", m.reason, err },
        { "Ready", "False", "UnhealthyDependents", "ValidationSucceeded=False" },
    };
    patch_conditions(r, &m, obj, want, 2);
}

void watcher_report_valid(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj)
{
    kind_meta m = meta_of(kind);
    rec *x = r->n ? rec_of(r, kind, obj, false) : NULL;
    if (x && x->invalid) {
        set_invalid(r, x, false);
        if (r->o.log)
            TLR_INFO(r->o.log, "an object that did not convert does again",
                     TLR_S("kind", m.kind ? m.kind : "?"), TLR_S("object", x->key));
    }
    if (!m.res)
        return;
    /* Only a False the watcher wrote (its reason) is turned back: another
     * writer's (the launcher's, for an EC2NodeClass it cannot launch
     * with) is theirs to clear.  This also heals what a watcher that
     * restarted meanwhile had written. */
    json_object *have = tlr_json_arr(obj, "status.conditions");
    if (!cond_is(cond_find(have, "ValidationSucceeded"), "False", m.reason, NULL))
        return;
    const cond_want want[] = { { "ValidationSucceeded", "True", "ValidationSucceeded", "" } };
    patch_conditions(r, &m, obj, want, 1);
}

void watcher_report_deleted(watcher_report *r, Tailor__V1__ClusterKind kind, json_object *obj)
{
    if (!r->n)
        return;
    char key[600];
    key_of(obj, key, sizeof(key));
    rec **pp = find(r, kind, key, hash_of(kind, key));
    if (*pp)
        unlink_rec(r, pp);
}


void watcher_report_relist(watcher_report *r, Tailor__V1__ClusterKind kind, bool done)
{
    if ((unsigned)kind >= 64)
        return;
    if (!done) {
        r->mark[kind]++;
        return;
    }
    for (size_t i = 0; r->n && i < NBUCKETS; i++)
        for (rec **pp = &r->b[i]; *pp;) {
            if ((*pp)->kind == kind && (*pp)->mark != r->mark[kind])
                unlink_rec(r, pp);
            else
                pp = &(*pp)->next;
        }
}

size_t watcher_report_invalid_count(const watcher_report *r, Tailor__V1__ClusterKind kind)
{
    return (unsigned)kind < 64 ? r->ninvalid[kind] : 0;
}
