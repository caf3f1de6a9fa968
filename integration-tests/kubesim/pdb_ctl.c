/* pdb_ctl.c - the Eviction API (ks_pods_evict) and the disruption
 * controller that keeps PodDisruptionBudget status current, over the
 * store.  The decisions themselves are in pdb.c.
 *
 * Why two evictions cannot both spend the last disruption: the budget is
 * decremented with ks_store_modify (a compare-and-swap on the PDB) before
 * the pod is deleted, and the pod is recorded in status.disruptedPods.
 * The controller computes its status inside its own compare-and-swap,
 * from the fresh copy's disruptedPods, so a pod evicted a moment ago is
 * not counted healthy even when the controller's pod list predates the
 * eviction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_hooks.h"
#include "pdb.h"
#include "tlr_alloc.h"
#include "tlr_err.h"
#include "tlr_json.h"
#include "tlr_time.h"

/* ------------------------------------------------------------------ */
/* Eviction                                                            */
/* ------------------------------------------------------------------ */

typedef struct evict_opts {
    bool dry_run;
    int64_t grace;                 /* -1: default */
    const char *pre_uid, *pre_rv;  /* the client's preconditions */
} evict_opts;

static int delete_pod(ks_store *s, const char *ns, const char *name, const evict_opts *eo,
                      const char *rv_precondition, ks_status *st)
{
    if (eo->dry_run)
        return TLR_OK;
    ks_delete_opts o = {
        .propagation = KS_PROPAGATE_BACKGROUND,
        .precondition_uid = eo->pre_uid,
        .precondition_rv = eo->pre_rv ? eo->pre_rv : rv_precondition,
        .grace_seconds = eo->grace,
    };
    return ks_store_delete(s, KS_POD, ns, name, &o, NULL, st);
}

typedef struct decrement_arg {
    const char *pod;
    bool dry_run;
} decrement_arg;

static int decrement_mutate(json_object *pdb, void *arg, ks_status *st)
{
    const decrement_arg *a = arg;
    char now[32];
    int rc = ks_pdb_check_and_decrement(pdb, a->pod, ks_now_rfc3339(now, sizeof(now)), st);
    if (rc == TLR_OK && a->dry_run)
        return TLR_E_CANCELED;
    return rc;
}

static int too_many_requests(ks_status *st, const char *pdb)
{
    int rc = ks_status_set(st, TLR_E_THROTTLED, 429, "TooManyRequests",
                           "Cannot evict pod as it would violate the pod's disruption budget.");
    if (st) {
        st->cause_reason = "DisruptionBudget";
        snprintf(st->cause_message, sizeof(st->cause_message),
                 "The disruption budget %s is still being processed by the server.", pdb);
        st->retry_after = 10;
    }
    return rc;
}

/* The budgets in ns that apply to the pod for eviction: *n their count
 * and *first (owned) the first one.  Errors as ks_store_list. */
static int matching_pdbs(ks_store *s, const char *ns, json_object *pod, int *count,
                         json_object **first, ks_status *st)
{
    ks_objlist l = { 0 };
    ks_list_opts lo = { .ns = ns };
    int rc = ks_store_list(s, KS_PDB, &lo, &l, st);
    if (rc != TLR_OK)
        return rc;
    int n = 0;
    json_object *labels = tlr_json_obj(pod, "metadata.labels");
    for (size_t i = 0; i < l.n; i++) {
        json_object *pdb = ks_obj_parse(l.items[i]);
        if (ks_pdb_selects(pdb, labels, true) && n++ == 0) {
            *first = pdb;
            continue;
        }
        json_object_put(pdb);
    }
    ks_objlist_free(&l);
    *count = n;
    return TLR_OK;
}

int ks_pods_evict(ks_store *s, const char *ns, const char *name, json_object *eviction,
                  ks_status *st)
{
    const char *ename = tlr_json_str(eviction, "metadata.name");
    if (ename && *ename && strcmp(ename, name) != 0)
        return ks_status_set(st, TLR_E_PARSE, 400, "BadRequest",
                             "name in URL does not match name in Eviction object");
    evict_opts eo = { .grace = -1 };
    json_object *dopt = tlr_json_obj(eviction, "deleteOptions");
    json_object *dry = tlr_json_arr(dopt, "dryRun");
    eo.dry_run = dry && json_object_array_length(dry) > 0;
    (void)tlr_json_int(dopt, "gracePeriodSeconds", &eo.grace);
    eo.pre_uid = tlr_json_str(dopt, "preconditions.uid");
    eo.pre_rv = tlr_json_str(dopt, "preconditions.resourceVersion");

    json_object *pod = NULL, *pdb = NULL;
    int rc;
    /* a pod that is not running (or already going) costs no budget; the
     * version precondition makes sure it did not start meanwhile */
    for (int attempt = 0;; attempt++) {
        json_object_put(pod);
        pod = NULL;
        rc = ks_store_get_json(s, KS_POD, ns, name, &pod, st);
        if (rc != TLR_OK)
            goto out;
        if (!ks_evict_can_ignore_pdb(pod))
            break;
        const char *phase = tlr_json_str(pod, "status.phase");
        bool enforce = !tlr_json_str(pod, "metadata.deletionTimestamp") &&
                       !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
        rc = delete_pod(s, ns, name, &eo,
                        enforce ? tlr_json_str(pod, "metadata.resourceVersion") : NULL, st);
        if (rc != TLR_E_CONFLICT || eo.pre_rv || attempt == 3)
            goto out;
    }

    int n = 0;
    if ((rc = matching_pdbs(s, ns, pod, &n, &pdb, st)) != TLR_OK)
        goto out;
    if (n > 1) {
        rc = ks_status_set(st, TLR_E_INTERNAL, 500, NULL,
                           "This pod has more than one PodDisruptionBudget, which the eviction "
                           "subresource does not support.");
        goto out;
    }
    const char *pdb_name = n ? tlr_json_str(pdb, "metadata.name") : NULL;
    const char *rv_pre = NULL;
    if (n == 1 && ks_evict_unhealthy_ok(pod, pdb)) {
        /* not Ready: goes without spending the budget, unless it turned
         * Ready since we looked */
        rv_pre = tlr_json_str(pod, "metadata.resourceVersion");
    } else if (n == 1) {
        decrement_arg da = { .pod = name, .dry_run = eo.dry_run };
        rc = ks_store_modify(s, KS_PDB, ns, pdb_name, KS_W_STATUS, decrement_mutate, &da, NULL,
                             st);
        if (rc != TLR_OK)
            goto out;
    }
    rc = delete_pod(s, ns, name, &eo, rv_pre, st);
    if (rc == TLR_E_CONFLICT && rv_pre && !eo.pre_rv)
        rc = too_many_requests(st, pdb_name ? pdb_name : "");
out:
    json_object_put(pod);
    json_object_put(pdb);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Disruption controller                                               */
/* ------------------------------------------------------------------ */

typedef struct pdb_ctl {
    ks_store *s;
    tlr_logger *lg;
} pdb_ctl;

/* ks_pdb_scale_fn over the store: ReplicaSets (through their Deployment)
 * and StatefulSets. */
static int store_scale(void *arg, const char *ns, const char *kind, const char *name,
                       const char *uid, char *scale_uid, size_t len, int32_t *scale)
{
    ks_store *s = arg;
    ks_kind_id k;
    if (!strcmp(kind, "ReplicaSet"))
        k = KS_REPLICASET;
    else if (!strcmp(kind, "StatefulSet"))
        k = KS_STATEFULSET;
    else if (!strcmp(kind, "Deployment"))
        k = KS_DEPLOYMENT;
    else
        return TLR_E_NOTFOUND;
    json_object *o = NULL;
    int rc = ks_store_get_json(s, k, ns, name, &o, NULL);
    if (rc != TLR_OK)
        return rc;
    const char *ouid = tlr_json_str(o, "metadata.uid");
    if (!ouid || strcmp(ouid, uid) != 0) {
        json_object_put(o);
        return TLR_E_NOTFOUND;
    }
    json_object *refs = tlr_json_arr(o, "metadata.ownerReferences");
    for (size_t i = 0; k == KS_REPLICASET && refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        bool ctl = false;
        const char *rk = tlr_json_str(r, "kind"), *rn = tlr_json_str(r, "name");
        const char *ru = tlr_json_str(r, "uid");
        if (tlr_json_bool(r, "controller", &ctl) != TLR_OK || !ctl || !rk || !rn || !ru ||
            strcmp(rk, "Deployment") != 0)
            continue;
        /* rn and ru live in o: copy them before letting o go. */
        char *dn = tlr_strdup(rn), *du = tlr_strdup(ru);
        json_object_put(o);
        rc = store_scale(arg, ns, "Deployment", dn, du, scale_uid, len, scale);
        free(dn);
        free(du);
        return rc;
    }
    int64_t replicas = 1;   /* the API defaults spec.replicas to 1 */
    (void)tlr_json_int(o, "spec.replicas", &replicas);
    snprintf(scale_uid, len, "%s", ouid);
    *scale = (int32_t)replicas;
    json_object_put(o);
    return TLR_OK;
}

typedef struct sync_arg {
    ks_store *s;
    const ks_pdb_pod *pods;
    size_t n;
} sync_arg;

static int sync_mutate(json_object *pdb, void *arg, ks_status *st)
{
    (void)st;
    const sync_arg *a = arg;
    ks_pdb_calc c;
    char now[32];
    ks_pdb_compute(pdb, pdb, a->pods, a->n, store_scale, a->s, tlr_wall_ms(), &c);
    bool changed = ks_pdb_apply(pdb, &c, ks_now_rfc3339(now, sizeof(now)));
    ks_pdb_calc_clear(&c);
    return changed ? TLR_OK : TLR_E_CANCELED;
}

static bool pod_ready(json_object *pod)
{
    json_object *conds = tlr_json_arr(pod, "status.conditions");
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tlr_json_str(c, "type"), *s = tlr_json_str(c, "status");
        if (t && s && strcmp(t, "Ready") == 0)
            return strcmp(s, "True") == 0;
    }
    return false;
}

/* Fill p from a parsed pod (strings borrowed from pod). */
static void pdb_pod_of(json_object *pod, ks_pdb_pod *p)
{
    memset(p, 0, sizeof(*p));
    p->name = tlr_json_str(pod, "metadata.name");
    p->owner_kind = p->owner_name = p->owner_uid = "";
    json_object *refs = tlr_json_arr(pod, "metadata.ownerReferences");
    for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        bool ctl = false;
        if (tlr_json_bool(r, "controller", &ctl) != TLR_OK || !ctl)
            continue;
        const char *k = tlr_json_str(r, "kind"), *n = tlr_json_str(r, "name");
        const char *u = tlr_json_str(r, "uid");
        p->owner_kind = k ? k : "";
        p->owner_name = n ? n : "";
        p->owner_uid = u ? u : "";
    }
    p->ready = pod_ready(pod);
    p->deleting = tlr_json_str(pod, "metadata.deletionTimestamp") != NULL;
}

static bool sync_one(ks_store *s, tlr_logger *lg, const ks_obj *po)
{
    json_object *pdb = ks_obj_parse(po);
    ks_selector *sel = NULL;
    ks_objlist pods = { 0 };
    json_object *parsed = json_object_new_array();
    ks_pdb_pod *pp = NULL;
    size_t n = 0;
    bool changed = false;
    ks_list_opts lo = { .ns = ks_obj_namespace(po) };
    if (ks_label_selector_from_json(tlr_json_obj(pdb, "spec.selector"), false, &sel, NULL) ==
        TLR_OK) {
        lo.labels = sel;
        if (ks_store_list(s, KS_POD, &lo, &pods, NULL) != TLR_OK)
            goto out;
    }
    pp = tlr_calloc(pods.n ? pods.n : 1, sizeof(*pp));
    for (size_t i = 0; i < pods.n; i++) {
        json_object *pod = ks_obj_parse(pods.items[i]);
        json_object_array_add(parsed, pod);
        pdb_pod_of(pod, &pp[n++]);
    }
    sync_arg a = { .s = s, .pods = pp, .n = n };
    ks_status st;
    ks_obj *after = NULL;
    int rc = ks_store_modify(s, KS_PDB, ks_obj_namespace(po), ks_obj_name(po), KS_W_STATUS,
                             sync_mutate, &a, &after, &st);
    changed = rc == TLR_OK && after && ks_obj_rv(after) != ks_obj_rv(po);
    ks_obj_unref(after);
    if (rc != TLR_OK && rc != TLR_E_NOTFOUND)
        TLR_WARN(lg, "pdb status not written", TLR_S("pdb", ks_obj_name(po)),
                 TLR_S("error", st.message));
out:
    free(pp);
    json_object_put(parsed);
    ks_objlist_free(&pods);
    ks_selector_free(sel);
    json_object_put(pdb);
    return changed;
}

size_t ks_pdb_sync(ks_store *s, tlr_logger *lg)
{
    ks_objlist l = { 0 };
    size_t changed = 0;
    if (ks_store_list(s, KS_PDB, NULL, &l, NULL) != TLR_OK)
        return 0;
    for (size_t i = 0; i < l.n; i++)
        if (!ks_obj_deleting(l.items[i]))
            changed += sync_one(s, lg, l.items[i]);
    ks_objlist_free(&l);
    return changed;
}

static void pdb_run(ks_store *s, void *arg)
{
    pdb_ctl *pc = arg;
    ks_pdb_sync(s, pc->lg);
}

typedef struct pdb_cfg {
    int64_t period_ms;
} pdb_cfg;

static const tlr_setting pdb_settings[] = {
    { .name = "pdb-period", .env = "KUBESIM_PDB_PERIOD", .type = TLR_SET_DURATION,
      .offset = offsetof(pdb_cfg, period_ms), .def = "1s", .min = 10, .max = 3600000,
      .help = "recompute PodDisruptionBudget status at least this often (also soon after "
              "pods or budgets change)" },
};

static void pdb_stop(void *state)
{
    free(state);
}

static int pdb_start(ks_store *s, const void *cfgp, tlr_logger *lg, void **state)
{
    const pdb_cfg *cfg = cfgp;
    pdb_ctl *pc = tlr_calloc(1, sizeof(*pc));
    pc->s = s;
    pc->lg = lg;
    ks_controller c = {
        .name = "disruption", .period_ms = (int)cfg->period_ms,
        .wake_kinds = KS_KIND_BIT(KS_POD) | KS_KIND_BIT(KS_PDB) | KS_KIND_BIT(KS_REPLICASET) |
                      KS_KIND_BIT(KS_DEPLOYMENT) | KS_KIND_BIT(KS_STATEFULSET),
        .min_gap_ms = 50, .fn = pdb_run, .arg = pc,
    };
    int rc = ks_store_add_controller(s, &c);
    if (rc != TLR_OK) {
        free(pc);
        return rc;
    }
    *state = pc;
    return TLR_OK;
}

const ks_module ks_pdb_module = {
    .name = "disruption",
    .cfg_size = sizeof(pdb_cfg),
    .settings = pdb_settings,
    .nsettings = sizeof(pdb_settings) / sizeof(pdb_settings[0]),
    .start = pdb_start,
    .stop = pdb_stop,
};
