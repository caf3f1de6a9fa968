/* controllers.c - the controller pass: listings, the pod summary cache,
 * shared write helpers, ReplicaSets, Deployments, garbage collection and
 * the module (StatefulSets and DaemonSets are in controllers_sets.c).
 */
#include "controllers.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_time.h"

/* Pods one ReplicaSet creates per pass (the real one grows batches up to
 * 500 as well). */
#define CREATE_BURST 500

/* ------------------------------------------------------------------ */
/* Caches and indexes                                                  */
/* ------------------------------------------------------------------ */

static void pod_info_free(struct lh_entry *e)
{
    ctl_pod_info *pi = (ctl_pod_info *)lh_entry_v(e);
    free(pi->uid);
    free(pi->target_node);
    free(pi);
}

static void objs_free(struct lh_entry *e)
{
    ctl_objs *o = (ctl_objs *)lh_entry_v(e);
    free((void *)lh_entry_k(e));
    free(o->v);
    free(o);
}

void ks_ctl_create(ks_store *s, tlr_logger *lg, ks_ctl **out)
{
    ks_ctl *c = tlr_calloc(1, sizeof(*c));
    c->s = s;
    c->lg = lg;
    ks_resnames_create(&c->names);
    c->pods = lh_kchar_table_new(1024, pod_info_free);
    c->rng = (uint64_t)tlr_wall_ms() * 2654435761u + (uint64_t)tlr_mono_ms() + 1;
    *out = c;
}

void ks_ctl_free(ks_ctl *c)
{
    if (!c)
        return;
    lh_table_free(c->pods);
    ks_resnames_free(c->names);
    free(c);
}

static const ctl_objs no_objs = { 0 };

const ctl_objs *ctl_owned(ctl_pass *p, const char *uid)
{
    void *v = NULL;
    if (!uid || !*uid || !lh_table_lookup_ex(p->by_owner, uid, &v))
        return &no_objs;
    return v;
}

static void index_owner(ctl_pass *p, ks_obj *o)
{
    const char *uid = ks_obj_owner_uid(o);
    if (!*uid)
        return;
    void *v = NULL;
    ctl_objs *l;
    if (lh_table_lookup_ex(p->by_owner, uid, &v)) {
        l = v;
    } else {
        l = tlr_calloc(1, sizeof(*l));
        lh_table_insert(p->by_owner, tlr_strdup(uid), l);
    }
    TLR_GROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = o;
}

static bool cond_status(json_object *o, const char *type, const char **ltt)
{
    json_object *conds = tlr_json_arr(o, "status.conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (t && strcmp(t, type) == 0) {
            if (ltt)
                *ltt = tlr_json_str(c, "lastTransitionTime");
            return s && strcmp(s, "True") == 0;
        }
    }
    return false;
}

ctl_pod_info *ctl_pod(ctl_pass *p, const ks_obj *o)
{
    ks_ctl *c = p->c;
    void *v = NULL;
    ctl_pod_info *pi;
    if (lh_table_lookup_ex(c->pods, ks_obj_uid(o), &v)) {
        pi = v;
        pi->pass = c->pass;
        pi->rank.name = ks_obj_name(o);
        if (pi->rv == ks_obj_rv(o))
            return pi;
    } else {
        pi = tlr_calloc(1, sizeof(*pi));
        pi->uid = tlr_strdup(ks_obj_uid(o));
        pi->pass = c->pass;
        lh_table_insert(c->pods, pi->uid, pi);
    }
    json_object *j = ks_obj_parse(o);
    const char *phase = ks_obj_phase(o), *ltt = NULL, *created;
    pi->rv = ks_obj_rv(o);
    pi->active = !ks_obj_deleting(o) && strcmp(phase, "Succeeded") != 0 &&
                 strcmp(phase, "Failed") != 0;
    pi->rank.name = ks_obj_name(o);
    pi->rank.assigned = ks_obj_node_name(o)[0] != 0;
    pi->rank.phase_rank = strcmp(phase, "Running") == 0 ? 2 : strcmp(phase, "Unknown") == 0 ? 1 : 0;
    pi->rank.ready = cond_status(j, "Ready", &ltt);
    pi->rank.ready_since_ms = 0;
    if (ltt)
        (void)tlr_time_parse(ltt, &pi->rank.ready_since_ms);
    pi->rank.created_ms = 0;
    if ((created = tlr_json_str(j, "metadata.creationTimestamp")))
        (void)tlr_time_parse(created, &pi->rank.created_ms);
    pi->rank.restarts = 0;
    json_object *cs = tlr_json_arr(j, "status.containerStatuses");
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
        int64_t r = 0;
        if (tlr_json_int(json_object_array_get_idx(cs, i), "restartCount", &r) == TLR_OK &&
            r > pi->rank.restarts)
            pi->rank.restarts = (int32_t)r;
    }
    free(pi->target_node);
    pi->target_node = NULL;
    if (ks_obj_node_name(o)[0]) {
        pi->target_node = tlr_strdup(ks_obj_node_name(o));
    } else {
        json_object *terms = tlr_json_arr(j, "spec.affinity.nodeAffinity."
                                             "requiredDuringSchedulingIgnoredDuringExecution."
                                             "nodeSelectorTerms");
        json_object *t0 = terms ? json_object_array_get_idx(terms, 0) : NULL;
        const char *key = tlr_json_str(t0, "matchFields.0.key");
        const char *val = tlr_json_str(t0, "matchFields.0.values.0");
        if (key && val && strcmp(key, "metadata.name") == 0)
            pi->target_node = tlr_strdup(val);
    }
    json_object_put(j);
    return pi;
}

bool ctl_available(const ctl_pass *p, const ctl_pod_info *pi, int64_t min_ready_s)
{
    if (!pi->active || !pi->rank.ready)
        return false;
    return min_ready_s <= 0 || p->now_ms - pi->rank.ready_since_ms >= min_ready_s * 1000;
}

/* ------------------------------------------------------------------ */
/* Writes                                                              */
/* ------------------------------------------------------------------ */

static void random_suffix(ks_ctl *c, char *buf, size_t n)
{
    static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
    for (size_t i = 0; i + 1 < n; i++) {
        c->rng ^= c->rng << 13;
        c->rng ^= c->rng >> 7;
        c->rng ^= c->rng << 17;
        buf[i] = alnum[c->rng % (sizeof(alnum) - 1)];
    }
    buf[n - 1] = 0;
}

static json_object *owner_ref(json_object *owner)
{
    json_object *r = json_object_new_object();
    const char *av = tlr_json_str(owner, "apiVersion"), *k = tlr_json_str(owner, "kind");
    const char *n = tlr_json_str(owner, "metadata.name"), *u = tlr_json_str(owner, "metadata.uid");
    json_object_object_add(r, "apiVersion", json_object_new_string(av ? av : "apps/v1"));
    json_object_object_add(r, "kind", json_object_new_string(k ? k : ""));
    json_object_object_add(r, "name", json_object_new_string(n ? n : ""));
    json_object_object_add(r, "uid", json_object_new_string(u ? u : ""));
    json_object_object_add(r, "controller", json_object_new_boolean(1));
    json_object_object_add(r, "blockOwnerDeletion", json_object_new_boolean(1));
    json_object *a = json_object_new_array();
    json_object_array_add(a, r);
    return a;
}

/* A deep copy of o[path] (an object), or a new empty object. */
static json_object *copy_obj(json_object *o, const char *path)
{
    json_object *src = tlr_json_obj(o, path), *dst = NULL;
    if (!src || json_object_deep_copy(src, &dst, NULL) != 0 || !dst)
        return json_object_new_object();
    return dst;
}

void ctl_create_pod(ctl_pass *p, json_object *owner, json_object *tmpl, const char *name,
                    json_object *extra_labels,
                    void (*prepare)(json_object *spec, const void *arg), const void *arg)
{
    const char *ns = tlr_json_str(owner, "metadata.namespace");
    const char *oname = tlr_json_str(owner, "metadata.name");
    if (!ns || !oname)
        return;
    json_object *pod = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *labels = copy_obj(tmpl, "metadata.labels");
    if (extra_labels) {
        json_object_object_foreach(extra_labels, k, v)
            json_object_object_add(labels, k, json_object_get(v));
    }
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(meta, "labels", labels);
    json_object *ann = tlr_json_obj(tmpl, "metadata.annotations");
    if (ann)
        json_object_object_add(meta, "annotations", copy_obj(tmpl, "metadata.annotations"));
    json_object_object_add(meta, "ownerReferences", owner_ref(owner));
    json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(pod, "kind", json_object_new_string("Pod"));
    json_object_object_add(pod, "metadata", meta);
    json_object *spec = copy_obj(tmpl, "spec");
    if (!tlr_json_str(spec, "schedulerName"))
        json_object_object_add(spec, "schedulerName", json_object_new_string("default-scheduler"));
    if (prepare)
        prepare(spec, arg);
    json_object_object_add(pod, "spec", spec);
    json_object *status = json_object_new_object();
    json_object_object_add(status, "phase", json_object_new_string("Pending"));
    json_object_object_add(pod, "status", status);
    ks_status st;
    int rc = TLR_E_EXISTS;
    char gen[300], full[320], sfx[6];
    snprintf(gen, sizeof(gen), "%.57s-", oname);   /* names stay within 63 characters */
    if (!name)
        json_object_object_add(meta, "generateName", json_object_new_string(gen));
    for (int attempt = 0; rc == TLR_E_EXISTS && attempt < 8; attempt++) {
        if (name) {
            snprintf(full, sizeof(full), "%s", name);
        } else {
            random_suffix(p->c, sfx, sizeof(sfx));
            snprintf(full, sizeof(full), "%s%s", gen, sfx);
        }
        json_object_object_add(meta, "name", json_object_new_string(full));
        rc = ks_store_create_obj(p->c->s, KS_POD, ns, pod, 0, NULL, &st);
        if (name)
            break;
    }
    if (rc == TLR_OK)
        p->writes++;
    else if (rc != TLR_E_EXISTS && rc != TLR_E_NOTFOUND)
        TLR_WARN(p->c->lg, "pod not created", TLR_S("owner", oname), TLR_S("error", st.message));
    json_object_put(pod);
}

void ctl_delete(ctl_pass *p, ks_kind_id kind, const char *ns, const char *name)
{
    ks_delete_opts o = { .propagation = KS_PROPAGATE_BACKGROUND, .grace_seconds = -1 };
    ks_status st;
    int rc = ks_store_delete(p->c->s, kind, ns, name, &o, NULL, &st);
    if (rc == TLR_OK)
        p->writes++;
    else if (rc != TLR_E_NOTFOUND)
        TLR_WARN(p->c->lg, "delete failed", TLR_S("name", name), TLR_S("error", st.message));
}

typedef struct status_arg {
    const char *const *keys;
    const int64_t *vals;
    size_t n;
    json_object *extra;   /* more status members to set (borrowed), may be NULL */
} status_arg;

static int status_mutate(json_object *o, void *arg, ks_status *st)
{
    (void)st;
    const status_arg *a = arg;
    json_object *status = tlr_json_obj(o, "status");
    if (!status) {
        status = json_object_new_object();
        json_object_object_add(o, "status", status);
    }
    json_object *before = NULL;
    json_object_deep_copy(status, &before, NULL);
    for (size_t i = 0; i < a->n; i++)
        json_object_object_add(status, a->keys[i], json_object_new_int64(a->vals[i]));
    int64_t gen = 0;
    if (tlr_json_int(o, "metadata.generation", &gen) == TLR_OK)
        json_object_object_add(status, "observedGeneration", json_object_new_int64(gen));
    if (a->extra) {
        json_object_object_foreach(a->extra, k, v) {
            json_object *copy = NULL;
            json_object_deep_copy(v, &copy, NULL);
            json_object_object_add(status, k, copy);
        }
    }
    bool same = json_object_equal(before, status);
    json_object_put(before);
    return same ? TLR_E_CANCELED : TLR_OK;
}

void ctl_set_status_extra(ctl_pass *p, ks_kind_id kind, const char *ns, const char *name,
                             const char *const *keys, const int64_t *vals, size_t n,
                             json_object *extra)
{
    status_arg a = { keys, vals, n, extra };
    ks_obj *before = NULL, *after = NULL;
    ks_status st;
    (void)ks_store_get(p->c->s, kind, ns, name, &before, NULL);
    int rc = ks_store_modify(p->c->s, kind, ns, name, KS_W_STATUS, status_mutate, &a, &after, &st);
    if (rc == TLR_OK && before && after && ks_obj_rv(after) != ks_obj_rv(before))
        p->writes++;
    else if (rc != TLR_OK && rc != TLR_E_NOTFOUND)
        TLR_WARN(p->c->lg, "status not written", TLR_S("name", name), TLR_S("error", st.message));
    ks_obj_unref(before);
    ks_obj_unref(after);
}

void ctl_set_status(ctl_pass *p, ks_kind_id kind, const char *ns, const char *name,
                    const char *const *keys, const int64_t *vals, size_t n)
{
    ctl_set_status_extra(p, kind, ns, name, keys, vals, n, NULL);
}

typedef struct replicas_arg {
    int32_t replicas;
    json_object *annotations;   /* merged into metadata.annotations, may be NULL */
} replicas_arg;

static int replicas_mutate(json_object *o, void *arg, ks_status *st)
{
    (void)st;
    const replicas_arg *a = arg;
    json_object *spec = tlr_json_obj(o, "spec");
    if (!spec)
        return TLR_E_CANCELED;
    json_object_object_add(spec, "replicas", json_object_new_int(a->replicas));
    if (a->annotations) {
        json_object *meta = tlr_json_obj(o, "metadata");
        json_object *ann = tlr_json_obj(meta, "annotations");
        if (!ann) {
            ann = json_object_new_object();
            json_object_object_add(meta, "annotations", ann);
        }
        json_object_object_foreach(a->annotations, k, v)
            json_object_object_add(ann, k, json_object_get(v));
    }
    return TLR_OK;
}

static void scale_rs(ctl_pass *p, const char *ns, const char *name, int32_t replicas,
                     json_object *annotations)
{
    replicas_arg a = { replicas, annotations };
    ks_status st;
    int rc = ks_store_modify(p->c->s, KS_REPLICASET, ns, name, 0, replicas_mutate, &a, NULL, &st);
    if (rc == TLR_OK)
        p->writes++;
    else if (rc != TLR_E_NOTFOUND)
        TLR_WARN(p->c->lg, "replicaset not scaled", TLR_S("name", name),
                 TLR_S("error", st.message));
}

/* ------------------------------------------------------------------ */
/* ReplicaSets                                                         */
/* ------------------------------------------------------------------ */

static void sync_rs(ctl_pass *p, ks_obj *listed)
{
    /* re-read: the Deployment may have scaled it earlier in this pass */
    ks_obj *o = NULL;
    if (ks_store_get(p->c->s, KS_REPLICASET, ks_obj_namespace(listed), ks_obj_name(listed), &o,
                     NULL) != TLR_OK)
        return;
    if (ks_obj_deleting(o) || strcmp(ks_obj_uid(o), ks_obj_uid(listed)) != 0) {
        ks_obj_unref(o);
        return;
    }
    json_object *rs = ks_obj_parse(o);
    const char *ns = ks_obj_namespace(o), *name = ks_obj_name(o);
    int64_t replicas = 1, min_ready = 0;
    (void)tlr_json_int(rs, "spec.replicas", &replicas);
    (void)tlr_json_int(rs, "spec.minReadySeconds", &min_ready);
    const ctl_objs *owned = ctl_owned(p, ks_obj_uid(listed));
    ks_ctl_pod *active = tlr_calloc(owned->n ? owned->n : 1, sizeof(*active));
    size_t nactive = 0;
    int64_t ready = 0, available = 0;
    for (size_t i = 0; i < owned->n; i++) {
        if (ks_obj_kind(owned->v[i]) != KS_POD)
            continue;
        ctl_pod_info *pi = ctl_pod(p, owned->v[i]);
        if (!pi->active)
            continue;
        active[nactive++] = pi->rank;
        ready += pi->rank.ready;
        available += ctl_available(p, pi, min_ready);
    }
    if ((int64_t)nactive < replicas) {
        json_object *tmpl = tlr_json_obj(rs, "spec.template");
        int64_t want = replicas - (int64_t)nactive;
        for (int64_t i = 0; tmpl && i < want && i < CREATE_BURST; i++)
            ctl_create_pod(p, rs, tmpl, NULL, NULL, NULL, NULL);
    } else if ((int64_t)nactive > replicas) {
        ks_ctl_rank_for_deletion(active, nactive);
        for (size_t i = 0; i < nactive - (size_t)replicas; i++)
            ctl_delete(p, KS_POD, ns, active[i].name);
    }
    static const char *const keys[] = { "replicas", "fullyLabeledReplicas", "readyReplicas",
                                         "availableReplicas" };
    int64_t vals[] = { (int64_t)nactive, (int64_t)nactive, ready, available };
    ctl_set_status(p, KS_REPLICASET, ns, name, keys, vals, 4);
    free(active);
    json_object_put(rs);
    ks_obj_unref(o);
}

/* ------------------------------------------------------------------ */
/* Deployments                                                         */
/* ------------------------------------------------------------------ */

typedef struct dep_rs {
    ks_obj *obj;
    json_object *rs;        /* owned */
    const char *created;
    int64_t revision;
    ks_rs_state st;
    int32_t status_replicas, ready;
} dep_rs;

static int cmp_dep_rs(const void *a, const void *b)
{
    const dep_rs *x = a, *y = b;
    int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");
    return c ? c : strcmp(ks_obj_name(x->obj), ks_obj_name(y->obj));
}

static void create_rs(ctl_pass *p, json_object *dep, const char *hash, int64_t revision,
                      int32_t replicas, int32_t surge)
{
    const char *ns = tlr_json_str(dep, "metadata.namespace");
    const char *dname = tlr_json_str(dep, "metadata.name");
    json_object *rs = json_object_new_object(), *meta = json_object_new_object();
    char name[320], buf[32];
    snprintf(name, sizeof(name), "%s-%s", dname, hash);
    json_object_object_add(rs, "apiVersion", json_object_new_string("apps/v1"));
    json_object_object_add(rs, "kind", json_object_new_string("ReplicaSet"));
    json_object_object_add(meta, "name", json_object_new_string(name));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object *tmpl = copy_obj(dep, "spec.template");
    json_object *tmeta = tlr_json_obj(tmpl, "metadata");
    if (!tmeta) {
        tmeta = json_object_new_object();
        json_object_object_add(tmpl, "metadata", tmeta);
    }
    json_object *tlabels = tlr_json_obj(tmeta, "labels");
    if (!tlabels) {
        tlabels = json_object_new_object();
        json_object_object_add(tmeta, "labels", tlabels);
    }
    json_object_object_add(tlabels, "pod-template-hash", json_object_new_string(hash));
    json_object *labels = NULL;
    json_object_deep_copy(tlabels, &labels, NULL);
    json_object_object_add(meta, "labels", labels);
    json_object *ann = json_object_new_object();
    snprintf(buf, sizeof(buf), "%d", replicas);
    json_object_object_add(ann, "deployment.kubernetes.io/desired-replicas",
                           json_object_new_string(buf));
    snprintf(buf, sizeof(buf), "%d", replicas + surge);
    json_object_object_add(ann, "deployment.kubernetes.io/max-replicas", json_object_new_string(buf));
    snprintf(buf, sizeof(buf), "%" PRId64, revision);
    json_object_object_add(ann, "deployment.kubernetes.io/revision", json_object_new_string(buf));
    json_object_object_add(meta, "annotations", ann);
    json_object_object_add(meta, "ownerReferences", owner_ref(dep));
    json_object_object_add(rs, "metadata", meta);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "replicas", json_object_new_int(0));
    int64_t mrs = 0;
    if (tlr_json_int(dep, "spec.minReadySeconds", &mrs) == TLR_OK)
        json_object_object_add(spec, "minReadySeconds", json_object_new_int64(mrs));
    json_object *sel = copy_obj(dep, "spec.selector");
    json_object *ml = tlr_json_obj(sel, "matchLabels");
    if (!ml) {
        ml = json_object_new_object();
        json_object_object_add(sel, "matchLabels", ml);
    }
    json_object_object_add(ml, "pod-template-hash", json_object_new_string(hash));
    json_object_object_add(spec, "selector", sel);
    json_object_object_add(spec, "template", tmpl);
    json_object_object_add(rs, "spec", spec);
    ks_status st;
    int rc = ks_store_create_obj(p->c->s, KS_REPLICASET, ns, rs, 0, NULL, &st);
    if (rc == TLR_OK)
        p->writes++;
    else
        TLR_WARN(p->c->lg, "replicaset not created", TLR_S("name", name),
                 TLR_S("error", st.message));
    json_object_put(rs);
}

/* One Deployment condition (type, status, reason, message), keeping the
 * times when nothing changed. */
static void dep_condition(json_object *conds, json_object *old, const char *type,
                          const char *status, const char *reason, const char *message,
                          const char *now)
{
    json_object *prev = NULL;
    for (size_t i = 0; old && i < json_object_array_length(old); i++) {
        const char *t = tlr_json_str(json_object_array_get_idx(old, i), "type");
        if (t && strcmp(t, type) == 0)
            prev = json_object_array_get_idx(old, i);
    }
    const char *ps = tlr_json_str(prev, "status"), *pr = tlr_json_str(prev, "reason");
    const char *pm = tlr_json_str(prev, "message");
    bool same = ps && pr && pm && !strcmp(ps, status) && !strcmp(pr, reason) && !strcmp(pm, message);
    bool transition = !ps || strcmp(ps, status) != 0;
    json_object *c = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string(type));
    json_object_object_add(c, "status", json_object_new_string(status));
    const char *lut = same ? tlr_json_str(prev, "lastUpdateTime") : NULL;
    const char *ltt = transition ? NULL : tlr_json_str(prev, "lastTransitionTime");
    json_object_object_add(c, "lastUpdateTime", json_object_new_string(lut ? lut : now));
    json_object_object_add(c, "lastTransitionTime", json_object_new_string(ltt ? ltt : now));
    json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(message));
    json_object_array_add(conds, c);
}

static void dep_status(ctl_pass *p, json_object *dep, dep_rs *rss, size_t n, size_t new_idx,
                       int32_t replicas, int32_t unavailable)
{
    int64_t total = 0, ready = 0, available = 0, updated = 0;
    for (size_t i = 0; i < n; i++) {
        total += rss[i].status_replicas;
        ready += rss[i].ready;
        available += rss[i].st.available;
    }
    if (new_idx < n)
        updated = rss[new_idx].status_replicas;
    int64_t unavail = total - available > 0 ? total - available : 0;
    if (replicas - available > unavail)
        unavail = replicas - available;
    char now[32], msg[400];
    ks_now_rfc3339(now, sizeof(now));
    json_object *old = tlr_json_arr(dep, "status.conditions");
    json_object *extra = json_object_new_object(), *conds = json_object_new_array();
    bool avail_ok = available >= replicas - unavailable;
    dep_condition(conds, old, "Available", avail_ok ? "True" : "False",
                  avail_ok ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
                  avail_ok ? "Deployment has minimum availability."
                           : "Deployment does not have minimum availability.", now);
    const char *rsname = new_idx < n ? ks_obj_name(rss[new_idx].obj) : "";
    bool complete = updated == replicas && available == replicas && total == replicas;
    snprintf(msg, sizeof(msg), complete ? "ReplicaSet \"%s\" has successfully progressed."
                                        : "ReplicaSet \"%s\" is progressing.", rsname);
    dep_condition(conds, old, "Progressing", "True",
                  complete ? "NewReplicaSetAvailable" : "ReplicaSetUpdated", msg, now);
    json_object_object_add(extra, "conditions", conds);
    static const char *const keys[] = { "replicas", "updatedReplicas", "readyReplicas",
                                        "availableReplicas", "unavailableReplicas" };
    int64_t vals[] = { total, updated, ready, available, unavail };
    ctl_set_status_extra(p, KS_DEPLOYMENT, tlr_json_str(dep, "metadata.namespace"),
                     tlr_json_str(dep, "metadata.name"), keys, vals, 5, extra);
    json_object_put(extra);
}

static void sync_deployment(ctl_pass *p, ks_obj *o)
{
    json_object *dep = ks_obj_parse(o);
    const char *ns = ks_obj_namespace(o);
    int64_t r = 1, coll = 0, history = 10;
    (void)tlr_json_int(dep, "spec.replicas", &r);
    (void)tlr_json_int(dep, "status.collisionCount", &coll);
    (void)tlr_json_int(dep, "spec.revisionHistoryLimit", &history);
    int32_t replicas = (int32_t)r, surge = 0, unavailable = 0;
    char err[256], hash[16];
    if (ks_deploy_surge(dep, &surge, &unavailable, err, sizeof(err)) != TLR_OK) {
        TLR_WARN(p->c->lg, "deployment skipped", TLR_S("name", ks_obj_name(o)),
                 TLR_S("reason", err));
        json_object_put(dep);
        return;
    }
    ks_template_hash(tlr_json_obj(dep, "spec.template"), coll, hash, sizeof(hash));
    const ctl_objs *owned = ctl_owned(p, ks_obj_uid(o));
    dep_rs *rss = tlr_calloc(owned->n ? owned->n : 1, sizeof(*rss));
    size_t n = 0, new_idx = SIZE_MAX;
    int64_t max_rev = 0;
    for (size_t i = 0; i < owned->n; i++) {
        if (ks_obj_kind(owned->v[i]) != KS_REPLICASET || ks_obj_deleting(owned->v[i]))
            continue;
        dep_rs *d = &rss[n++];
        d->obj = owned->v[i];
        d->rs = ks_obj_parse(d->obj);
        d->created = tlr_json_str(d->rs, "metadata.creationTimestamp");
        const char *rev = tlr_json_str(d->rs, "metadata.annotations.deployment\\.kubernetes\\.io/"
                                              "revision");
        d->revision = rev ? strtoll(rev, NULL, 10) : 0;
        if (d->revision > max_rev)
            max_rev = d->revision;
        int64_t v = 1;
        (void)tlr_json_int(d->rs, "spec.replicas", &v);
        d->st.replicas = (int32_t)v;
        v = 0;
        (void)tlr_json_int(d->rs, "status.availableReplicas", &v);
        d->st.available = (int32_t)v;
        v = 0;
        (void)tlr_json_int(d->rs, "status.replicas", &v);
        d->status_replicas = (int32_t)v;
        v = 0;
        (void)tlr_json_int(d->rs, "status.readyReplicas", &v);
        d->ready = (int32_t)v;
    }
    qsort(rss, n, sizeof(*rss), cmp_dep_rs);
    for (size_t i = 0; i < n; i++) {
        const char *h = ks_obj_label(rss[i].obj, "pod-template-hash");
        if (h && strcmp(h, hash) == 0)
            new_idx = i;
    }
    bool paused = false;
    (void)tlr_json_bool(dep, "spec.paused", &paused);
    if (new_idx == SIZE_MAX) {
        if (!paused)
            create_rs(p, dep, hash, max_rev + 1, replicas, surge);
        goto status;
    }
    if (paused)
        goto status;
    /* a rollback to an old template makes that ReplicaSet the newest revision */
    if (rss[new_idx].revision < max_rev) {
        json_object *ann = json_object_new_object();
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRId64, max_rev + 1);
        json_object_object_add(ann, "deployment.kubernetes.io/revision", json_object_new_string(buf));
        scale_rs(p, ns, ks_obj_name(rss[new_idx].obj), rss[new_idx].st.replicas, ann);
        json_object_put(ann);
    }
    const char *type = tlr_json_str(dep, "spec.strategy.type");
    if (type && strcmp(type, "Recreate") == 0) {
        bool old_up = false, old_pods = false;
        for (size_t i = 0; i < n; i++) {
            if (i == new_idx)
                continue;
            if (rss[i].st.replicas > 0) {
                scale_rs(p, ns, ks_obj_name(rss[i].obj), 0, NULL);
                old_up = true;
            }
            const ctl_objs *pods = ctl_owned(p, ks_obj_uid(rss[i].obj));
            for (size_t k = 0; k < pods->n; k++)
                old_pods |= ks_obj_kind(pods->v[k]) == KS_POD;
        }
        if (!old_up && !old_pods && rss[new_idx].st.replicas != replicas)
            scale_rs(p, ns, ks_obj_name(rss[new_idx].obj), replicas, NULL);
    } else {
        ks_rs_state *st = tlr_calloc(n, sizeof(*st));
        int32_t *want = tlr_calloc(n, sizeof(*want));
        for (size_t i = 0; i < n; i++)
            st[i] = rss[i].st;
        if (ks_rollout_step(replicas, surge, unavailable, st, n, new_idx, want))
            for (size_t i = 0; i < n; i++)
                if (want[i] != st[i].replicas)
                    scale_rs(p, ns, ks_obj_name(rss[i].obj), want[i], NULL);
        free(st);
        free(want);
    }
    /* keep revisionHistoryLimit scaled-down old ReplicaSets */
    size_t idle = 0;
    for (size_t i = 0; i < n; i++)
        idle += i != new_idx && rss[i].st.replicas == 0 && rss[i].status_replicas == 0;
    for (size_t i = 0; i < n && idle > (size_t)(history < 0 ? 0 : history); i++)
        if (i != new_idx && rss[i].st.replicas == 0 && rss[i].status_replicas == 0) {
            ctl_delete(p, KS_REPLICASET, ns, ks_obj_name(rss[i].obj));
            idle--;
        }
status:
    dep_status(p, dep, rss, n, new_idx, replicas, unavailable);
    for (size_t i = 0; i < n; i++)
        json_object_put(rss[i].rs);
    free(rss);
    json_object_put(dep);
}

/* ------------------------------------------------------------------ */
/* Garbage collection                                                  */
/* ------------------------------------------------------------------ */

/* Whether o's controlling owner is of a kind we serve and is gone. */
static bool orphaned(struct lh_table *uids, const ks_obj *o)
{
    const char *owner = ks_obj_owner_uid(o);
    if (!*owner || lh_table_lookup_entry(uids, owner))
        return false;
    json_object *j = ks_obj_parse(o);
    json_object *refs = tlr_json_arr(j, "metadata.ownerReferences");
    bool gone = false;
    for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        const char *u = tlr_json_str(r, "uid"), *k = tlr_json_str(r, "kind");
        if (u && k && strcmp(u, owner) == 0)
            gone = !strcmp(k, "ReplicaSet") || !strcmp(k, "Deployment") ||
                   !strcmp(k, "StatefulSet") || !strcmp(k, "DaemonSet");
    }
    json_object_put(j);
    return gone;
}

static void collect_garbage(ctl_pass *p)
{
    struct lh_table *uids = lh_kchar_table_new(256, NULL);
    struct lh_table *nodes = lh_kchar_table_new(64, NULL);
    const ks_objlist *owners[] = { &p->rss, &p->deps, &p->stss, &p->dss };
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < owners[k]->n; i++)
            lh_table_insert(uids, ks_obj_uid(owners[k]->items[i]), NULL);
    for (size_t i = 0; i < p->nodes.n; i++)
        lh_table_insert(nodes, ks_obj_name(p->nodes.items[i]), NULL);
    for (size_t i = 0; i < p->pods.n; i++) {
        ks_obj *o = p->pods.items[i];
        const char *node = ks_obj_node_name(o);
        if ((*node && !lh_table_lookup_entry(nodes, node)) || orphaned(uids, o)) {
            ks_delete_opts d = { .propagation = KS_PROPAGATE_BACKGROUND, .grace_seconds = 0 };
            if (ks_store_delete(p->c->s, KS_POD, ks_obj_namespace(o), ks_obj_name(o), &d, NULL,
                                NULL) == TLR_OK)
                p->writes++;
        }
    }
    for (size_t i = 0; i < p->rss.n; i++)
        if (orphaned(uids, p->rss.items[i]))
            ctl_delete(p, KS_REPLICASET, ks_obj_namespace(p->rss.items[i]),
                       ks_obj_name(p->rss.items[i]));
    lh_table_free(uids);
    lh_table_free(nodes);
}

/* ------------------------------------------------------------------ */
/* The pass                                                            */
/* ------------------------------------------------------------------ */

size_t ks_ctl_pass(ks_ctl *c)
{
    ctl_pass p = { .c = c, .now_ms = tlr_wall_ms() };
    c->pass++;
    p.by_owner = lh_kchar_table_new(256, objs_free);
    if (ks_store_list(c->s, KS_NODE, NULL, &p.nodes, NULL) != TLR_OK ||
        ks_store_list(c->s, KS_DEPLOYMENT, NULL, &p.deps, NULL) != TLR_OK ||
        ks_store_list(c->s, KS_REPLICASET, NULL, &p.rss, NULL) != TLR_OK ||
        ks_store_list(c->s, KS_STATEFULSET, NULL, &p.stss, NULL) != TLR_OK ||
        ks_store_list(c->s, KS_DAEMONSET, NULL, &p.dss, NULL) != TLR_OK ||
        ks_store_list(c->s, KS_POD, NULL, &p.pods, NULL) != TLR_OK)
        goto out;
    for (size_t i = 0; i < p.pods.n; i++)
        index_owner(&p, p.pods.items[i]);
    for (size_t i = 0; i < p.rss.n; i++)
        index_owner(&p, p.rss.items[i]);
    collect_garbage(&p);
    for (size_t i = 0; i < p.deps.n; i++)
        if (!ks_obj_deleting(p.deps.items[i]))
            sync_deployment(&p, p.deps.items[i]);
    for (size_t i = 0; i < p.rss.n; i++)
        if (!ks_obj_deleting(p.rss.items[i]))
            sync_rs(&p, p.rss.items[i]);
    ctl_statefulsets(&p);
    ctl_daemonsets(&p);
    {   /* forget pods that are gone */
        struct lh_entry *e, *tmp;
        lh_foreach_safe(c->pods, e, tmp) {
            if (((ctl_pod_info *)lh_entry_v(e))->pass != c->pass)
                lh_table_delete(c->pods, lh_entry_k(e));
        }
    }
out:
    lh_table_free(p.by_owner);
    ks_objlist_free(&p.nodes);
    ks_objlist_free(&p.deps);
    ks_objlist_free(&p.rss);
    ks_objlist_free(&p.stss);
    ks_objlist_free(&p.dss);
    ks_objlist_free(&p.pods);
    return p.writes;
}

/* ------------------------------------------------------------------ */
/* Module                                                              */
/* ------------------------------------------------------------------ */

typedef struct ctl_cfg {
    int64_t period_ms;
} ctl_cfg;

static const tlr_setting ctl_settings[] = {
    { .name = "controllers-period", .env = "KUBESIM_CONTROLLERS_PERIOD",
      .type = TLR_SET_DURATION, .offset = offsetof(ctl_cfg, period_ms), .def = "1s",
      .min = 10, .max = 3600000,
      .help = "run the workload controllers at least this often (also soon after workloads, "
              "pods or nodes change)" },
};

static void ctl_run(ks_store *s, void *arg)
{
    (void)s;
    ks_ctl_pass(arg);
}

static void ctl_stop(void *state)
{
    ks_ctl_free(state);
}

static int ctl_start(ks_store *s, const void *cfgp, tlr_logger *lg, void **state)
{
    const ctl_cfg *cfg = cfgp;
    ks_ctl *c;
    ks_ctl_create(s, lg, &c);
    ks_controller kc = {
        .name = "workloads", .period_ms = (int)cfg->period_ms,
        .wake_kinds = KS_KIND_BIT(KS_POD) | KS_KIND_BIT(KS_NODE) | KS_KIND_BIT(KS_DEPLOYMENT) |
                      KS_KIND_BIT(KS_REPLICASET) | KS_KIND_BIT(KS_STATEFULSET) |
                      KS_KIND_BIT(KS_DAEMONSET),
        .min_gap_ms = 50, .fn = ctl_run, .arg = c,
    };
    int rc = ks_store_add_controller(s, &kc);
    if (rc != TLR_OK) {
        ks_ctl_free(c);
        return rc;
    }
    *state = c;
    return TLR_OK;
}

const ks_module ks_ctl_module = {
    .name = "controllers",
    .cfg_size = sizeof(ctl_cfg),
    .settings = ctl_settings,
    .nsettings = sizeof(ctl_settings) / sizeof(ctl_settings[0]),
    .start = ctl_start,
    .stop = ctl_stop,
};
