/* controllers_sets.c - StatefulSets and DaemonSets (see controllers.h for
 * the behaviour each follows).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers_internal.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"

/* ------------------------------------------------------------------ */
/* StatefulSets                                                        */
/* ------------------------------------------------------------------ */

/* The ordinal of pod `name` of set `set` ("web-3" -> 3), -1 if not one. */
static long ordinal_of(const char *set, const char *name)
{
    size_t n = strlen(set);
    if (strncmp(name, set, n) != 0 || name[n] != '-' || !name[n + 1])
        return -1;
    char *end;
    long v = strtol(name + n + 1, &end, 10);
    return *end || v < 0 ? -1 : v;
}

typedef struct sts_pod {
    ks_obj *obj;
    ctl_pod_info *pi;
} sts_pod;

typedef struct sts_arg {
    const char *name;
    const char *service;
} sts_arg;

static void sts_prepare(json_object *spec, const void *arg)
{
    const sts_arg *a = arg;
    json_object_object_add(spec, "hostname", json_object_new_string(a->name));
    if (a->service && *a->service)
        json_object_object_add(spec, "subdomain", json_object_new_string(a->service));
}

static void sync_sts(ctl_pass *p, ks_obj *o)
{
    json_object *sts = ks_obj_parse(o);
    const char *ns = ks_obj_namespace(o), *name = ks_obj_name(o);
    int64_t replicas = 1, coll = 0, min_ready = 0, partition = 0;
    (void)tlr_json_int(sts, "spec.replicas", &replicas);
    (void)tlr_json_int(sts, "status.collisionCount", &coll);
    (void)tlr_json_int(sts, "spec.minReadySeconds", &min_ready);
    (void)tlr_json_int(sts, "spec.updateStrategy.rollingUpdate.partition", &partition);
    const char *policy = tlr_json_str(sts, "spec.podManagementPolicy");
    bool parallel = policy && strcmp(policy, "Parallel") == 0;
    const char *strategy = tlr_json_str(sts, "spec.updateStrategy.type");
    bool on_delete = strategy && strcmp(strategy, "OnDelete") == 0;
    char hash[16], rev[320];
    ks_template_hash(tlr_json_obj(sts, "spec.template"), coll, hash, sizeof(hash));
    snprintf(rev, sizeof(rev), "%s-%s", name, hash);

    const ctl_objs *owned = ctl_owned(p, ks_obj_uid(o));
    size_t slots = (size_t)(replicas > 0 ? replicas : 0);
    sts_pod *byord = tlr_calloc(slots ? slots : 1, sizeof(*byord));
    sts_pod *condemned = tlr_calloc(owned->n ? owned->n : 1, sizeof(*condemned));
    size_t ncond = 0;
    int64_t present = 0, ready = 0, available = 0, updated = 0;
    bool waiting = false;   /* some pod terminating */
    for (size_t i = 0; i < owned->n; i++) {
        ks_obj *po = owned->v[i];
        if (ks_obj_kind(po) != KS_POD)
            continue;
        long ord = ordinal_of(name, ks_obj_name(po));
        ctl_pod_info *pi = ctl_pod(p, po);
        if (ks_obj_deleting(po)) {
            waiting = true;
            continue;
        }
        present++;
        ready += pi->active && pi->rank.ready;
        available += ctl_available(p, pi, min_ready);
        const char *h = ks_obj_label(po, "controller-revision-hash");
        updated += h && strcmp(h, rev) == 0;
        if (ord >= 0 && (size_t)ord < slots)
            byord[ord] = (sts_pod){ po, pi };
        else
            condemned[ncond++] = (sts_pod){ po, pi };
    }
    json_object *extra_labels = json_object_new_object();
    json_object_object_add(extra_labels, "controller-revision-hash", json_object_new_string(rev));
    const char *svc = tlr_json_str(sts, "spec.serviceName");
    json_object *tmpl = tlr_json_obj(sts, "spec.template");
    bool all_healthy = !waiting;
    for (size_t i = 0; i < slots && tmpl; i++) {
        if (!byord[i].obj) {
            char pname[320], idx[24];
            snprintf(pname, sizeof(pname), "%s-%zu", name, i);
            snprintf(idx, sizeof(idx), "%zu", i);
            json_object_object_add(extra_labels, "statefulset.kubernetes.io/pod-name",
                                   json_object_new_string(pname));
            json_object_object_add(extra_labels, "apps.kubernetes.io/pod-index",
                                   json_object_new_string(idx));
            sts_arg a = { pname, svc };
            if (!waiting || parallel)
                ctl_create_pod(p, sts, tmpl, pname, extra_labels, sts_prepare, &a);
            all_healthy = false;
            if (!parallel)
                break;   /* OrderedReady: one at a time, in order */
            continue;
        }
        bool ok = byord[i].pi->rank.phase_rank == 2 && byord[i].pi->rank.ready;
        all_healthy &= ok;
        if (!ok && !parallel)
            break;
    }
    /* scale down: highest ordinal first; OrderedReady only when healthy */
    for (size_t k = 0; k < ncond && (parallel || all_healthy); k++) {
        size_t hi = 0;
        long best = -2;
        for (size_t j = 0; j < ncond; j++) {
            long ord = ordinal_of(name, ks_obj_name(condemned[j].obj));
            if (condemned[j].obj && ord > best) {
                best = ord;
                hi = j;
            }
        }
        if (best == -2)
            break;
        ctl_delete(p, KS_POD, ns, ks_obj_name(condemned[hi].obj));
        condemned[hi].obj = NULL;
        if (!parallel)
            break;
    }
    /* rolling update: replace the highest outdated ordinal when healthy */
    if (!on_delete && all_healthy && ncond == 0) {
        for (size_t i = slots; i-- > (size_t)(partition > 0 ? partition : 0);) {
            const char *h = byord[i].obj ? ks_obj_label(byord[i].obj, "controller-revision-hash")
                                         : NULL;
            if (byord[i].obj && (!h || strcmp(h, rev) != 0)) {
                ctl_delete(p, KS_POD, ns, ks_obj_name(byord[i].obj));
                break;
            }
        }
    }
    json_object *extra = json_object_new_object();
    json_object_object_add(extra, "updateRevision", json_object_new_string(rev));
    if (updated == present && present == replicas)
        json_object_object_add(extra, "currentRevision", json_object_new_string(rev));
    static const char *const keys[] = { "replicas", "readyReplicas", "availableReplicas",
                                        "currentReplicas", "updatedReplicas", "collisionCount" };
    int64_t vals[] = { present, ready, available, updated, updated, coll };
    ctl_set_status_extra(p, KS_STATEFULSET, ns, name, keys, vals, 6, extra);
    json_object_put(extra);
    json_object_put(extra_labels);
    free(byord);
    free(condemned);
    json_object_put(sts);
}

void ctl_statefulsets(ctl_pass *p)
{
    for (size_t i = 0; i < p->stss.n; i++)
        if (!ks_obj_deleting(p->stss.items[i]))
            sync_sts(p, p->stss.items[i]);
}

/* ------------------------------------------------------------------ */
/* DaemonSets                                                          */
/* ------------------------------------------------------------------ */

static void ds_prepare(json_object *spec, const void *arg)
{
    ks_ds_pod_prepare(spec, arg);
}

static void sync_ds(ctl_pass *p, ks_obj *o, const ks_node_info *nodes, size_t nn)
{
    json_object *ds = ks_obj_parse(o);
    const char *ns = ks_obj_namespace(o), *name = ks_obj_name(o);
    json_object *tmpl = tlr_json_obj(ds, "spec.template");
    json_object *spec = tlr_json_obj(tmpl, "spec");
    int64_t gen = 1, min_ready = 0;
    (void)tlr_json_int(ds, "metadata.generation", &gen);
    (void)tlr_json_int(ds, "spec.minReadySeconds", &min_ready);
    char gens[24];
    snprintf(gens, sizeof(gens), "%" PRId64, gen);
    int64_t max_unavail = 1;
    json_object *mu = tlr_json_get(ds, "spec.updateStrategy.rollingUpdate.maxUnavailable");
    if (mu && json_object_is_type(mu, json_type_int))
        max_unavail = json_object_get_int64(mu);
    const char *strategy = tlr_json_str(ds, "spec.updateStrategy.type");
    bool on_delete = strategy && strcmp(strategy, "OnDelete") == 0;

    const ctl_objs *owned = ctl_owned(p, ks_obj_uid(o));
    /* which pods sit (or are pinned) on which node */
    size_t *node_of = tlr_calloc(owned->n ? owned->n : 1, sizeof(size_t));
    for (size_t i = 0; i < owned->n; i++) {
        node_of[i] = SIZE_MAX;
        if (ks_obj_kind(owned->v[i]) != KS_POD)
            continue;
        ctl_pod_info *pi = ctl_pod(p, owned->v[i]);
        for (size_t k = 0; pi->target_node && k < nn; k++)
            if (strcmp(nodes[k].name, pi->target_node) == 0)
                node_of[i] = k;
        if (node_of[i] == SIZE_MAX && !ks_obj_deleting(owned->v[i]))
            ctl_delete(p, KS_POD, ns, ks_obj_name(owned->v[i]));   /* its node is gone */
    }
    json_object *extra_labels = json_object_new_object();
    json_object_object_add(extra_labels, "pod-template-generation", json_object_new_string(gens));
    int64_t desired = 0, current = 0, mis = 0, nready = 0, navail = 0, nupdated = 0;
    int64_t outdated_budget = max_unavail;
    for (size_t k = 0; k < nn; k++) {
        bool should = spec && ks_ds_should_run(spec, &nodes[k]);
        size_t here = 0, first = SIZE_MAX;
        for (size_t i = 0; i < owned->n; i++) {
            if (node_of[i] != k || ks_obj_deleting(owned->v[i]))
                continue;
            ctl_pod_info *pi = ctl_pod(p, owned->v[i]);
            if (!pi->active)
                continue;
            if (!should || here > 0) {
                ctl_delete(p, KS_POD, ns, ks_obj_name(owned->v[i]));
                mis += !should;
                continue;
            }
            here++;
            first = i;
        }
        if (!should)
            continue;
        desired++;
        if (!here) {
            ctl_create_pod(p, ds, tmpl, NULL, extra_labels, ds_prepare, nodes[k].name);
            outdated_budget--;   /* a missing pod is an unavailable one */
            continue;
        }
        current++;
        ctl_pod_info *pi = ctl_pod(p, owned->v[first]);
        bool avail = ctl_available(p, pi, min_ready);
        nready += pi->rank.ready;
        navail += avail;
        const char *g = ks_obj_label(owned->v[first], "pod-template-generation");
        if (g && strcmp(g, gens) == 0)
            nupdated++;
        if (!avail)
            outdated_budget--;
    }
    /* rolling update: replace outdated pods, unavailable ones first, while
     * at most maxUnavailable are down */
    for (int pass = 0; pass < 2 && !on_delete; pass++)
        for (size_t i = 0; i < owned->n; i++) {
            if (node_of[i] == SIZE_MAX || ks_obj_deleting(owned->v[i]))
                continue;
            const char *g = ks_obj_label(owned->v[i], "pod-template-generation");
            if (g && strcmp(g, gens) == 0)
                continue;
            ctl_pod_info *pi = ctl_pod(p, owned->v[i]);
            bool avail = ctl_available(p, pi, min_ready);
            if (pass == 0 && !avail)
                ctl_delete(p, KS_POD, ns, ks_obj_name(owned->v[i]));
            else if (pass == 1 && avail && outdated_budget > 0) {
                ctl_delete(p, KS_POD, ns, ks_obj_name(owned->v[i]));
                outdated_budget--;
            }
        }
    static const char *const keys[] = { "desiredNumberScheduled", "currentNumberScheduled",
                                        "numberMisscheduled", "numberReady", "numberAvailable",
                                        "numberUnavailable", "updatedNumberScheduled" };
    int64_t vals[] = { desired, current, mis, nready, navail, desired - navail, nupdated };
    ctl_set_status(p, KS_DAEMONSET, ns, name, keys, vals, 7);
    json_object_put(extra_labels);
    free(node_of);
    json_object_put(ds);
}

void ctl_daemonsets(ctl_pass *p)
{
    if (p->dss.n == 0)
        return;
    ks_node_info *nodes = tlr_calloc(p->nodes.n ? p->nodes.n : 1, sizeof(*nodes));
    json_object *keep = json_object_new_array();
    size_t nn = 0;
    for (size_t i = 0; i < p->nodes.n; i++) {
        json_object *n = ks_obj_parse(p->nodes.items[i]);
        json_object_array_add(keep, n);
        char err[128];
        if (ks_node_info_init(n, p->c->names, &nodes[nn], err, sizeof(err)) == TLR_OK)
            nn++;
    }
    for (size_t i = 0; i < p->dss.n; i++)
        if (!ks_obj_deleting(p->dss.items[i]))
            sync_ds(p, p->dss.items[i], nodes, nn);
    json_object_put(keep);
    free(nodes);
}
