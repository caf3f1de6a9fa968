/* provision.c - Solve -> NodeClaims -> CreateFleet, with ICE re-planning.
 *
 * See provision.h for the flow.  Two details worth knowing:
 *
 * Borrowed request building.  The SolveRequest is assembled from
 * pointers into the batch (pods, pools, classes, nodes) and into the
 * registry (our in-flight claims); only the pointer arrays are ours.  So
 * it is never freed with protobuf_c_message_free_unpacked -- only the
 * arrays are freed.
 *
 * In-flight merge.  The watcher's state may already hold one of our
 * claims (without the planned pods: those live only here); ours replaces
 * it, so the solver sees which pods it covers.  After a restart the
 * registry is empty and the solver still places pods onto in-flight
 * claims with room, which bounds the damage to one extra node per pool.
 */
#include "provision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "gc.h"
#include "lifecycle.h"
#include "tlr_alloc.h"
#include "tlr_err.h"

typedef struct lt_entry {
    char *nodeclass;
    char *id;
} lt_entry;

struct lc_prov {
    lc_prov_opts o;
    char *cluster;
    lc_claims *claims;
    lc_ice *ice;
    Tailor__V1__PendingBatch *batch;   /* owned; latest */
    lt_entry *lts;
    size_t nlts, caplts;
    tlr_metric_family *m_created, *m_terminated, *m_cloud, *m_pods;
};

static int64_t now_ms(const lc_prov *p)
{
    return p->o.clock->wall_ms(p->o.clock->arg);
}

static uint64_t rnd(lc_prov *p)
{
    if (p->o.rand)
        return p->o.rand(p->o.rand_arg);
    return ((uint64_t)random() << 31) ^ (uint64_t)random();
}

void lc_prov_create(const lc_prov_opts *o, lc_prov **out)
{
    lc_prov *p = tlr_calloc(1, sizeof(*p));
    p->o = *o;
    p->cluster = tlr_strdup(o->cluster);
    p->o.cluster = p->cluster;
    lc_claims_create(&p->claims);
    lc_ice_create(o->clock, 0, &p->ice);
    if (o->metrics) {
        static const char *const np_reason[] = { "nodepool", "reason" };
        static const char *const method[] = { "method", "error" };
        p->m_created = tlr_metrics_counter(o->metrics, "karpenter_nodeclaims_created_total",
                                           "NodeClaims created, by NodePool and reason.", 2,
                                           np_reason);
        p->m_terminated = tlr_metrics_counter(o->metrics,
                                              "karpenter_nodeclaims_terminated_total",
                                              "NodeClaims terminated, by NodePool and reason.",
                                              2, np_reason);
        p->m_cloud = tlr_metrics_histogram(o->metrics,
                                           "karpenter_cloudprovider_duration_seconds",
                                           "Duration of cloud provider calls.", 2, method,
                                           NULL, 0);
        p->m_pods = tlr_metrics_counter(o->metrics, "karpenter_pods_provisioning_total",
                                        "Pods nominated to new or in-flight NodeClaims.", 0,
                                        NULL);
    }
    *out = p;
}

void lc_prov_free(lc_prov *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nlts; i++) {
        free(p->lts[i].nodeclass);
        free(p->lts[i].id);
    }
    free(p->lts);
    if (p->batch)
        protobuf_c_message_free_unpacked(&p->batch->base, NULL);
    lc_claims_free(p->claims);
    lc_ice_free(p->ice);
    free(p->cluster);
    free(p);
}

lc_ice *lc_prov_ice(lc_prov *p)
{
    return p->ice;
}

lc_claims *lc_prov_claims(lc_prov *p)
{
    return p->claims;
}

static void count(tlr_metric_family *f, const char *a, const char *b)
{
    if (!f)
        return;
    const char *v[2] = { a, b };
    tlr_metrics_counter_inc(f, v);
}

static void observe_cloud(lc_prov *p, const char *method, int rc, int64_t t0)
{
    if (!p->m_cloud)
        return;
    const char *v[2] = { method, rc ? tlr_strerror(rc) : "" };
    int64_t t = p->o.clock->mono_ms(p->o.clock->arg) - t0;
    tlr_metrics_histogram_observe(p->m_cloud, v, (double)t / 1000.0);
}

static int64_t mono(lc_prov *p)
{
    return p->o.clock->mono_ms(p->o.clock->arg);
}

static void publish(lc_prov *p, Tailor__V1__LaunchEventKind kind, const lc_claim *c,
                    Tailor__V1__NodeClaimPhase prev, const char *msg)
{
    if (!p->o.publish)
        return;
    Tailor__V1__LaunchEvent ev = TAILOR__V1__LAUNCH_EVENT__INIT;
    ev.kind = kind;
    ev.event_unix_ms = now_ms(p);
    ev.message = (char *)(msg ? msg : "");
    if (c) {
        const Tailor__V1__NodeClaimStatus *st = c->nc->status;
        ev.nodeclaim_name = c->nc->name;
        ev.nodepool = c->nc->nodepool;
        ev.previous_phase = prev;
        if (st) {
            ev.phase = st->phase;
            ev.instance_id = st->instance_id;
            ev.instance_type = st->instance_type;
            ev.zone = st->zone;
            ev.capacity_type = st->capacity_type;
            ev.node_name = st->node_name;
        }
    }
    p->o.publish(p->o.publish_arg, &ev);
}

static Tailor__V1__NodeClaimStatus *status_of(lc_claim *c)
{
    if (!c->nc->status) {
        c->nc->status = tlr_malloc(sizeof(*c->nc->status));
        tailor__v1__node_claim_status__init(c->nc->status);
    }
    return c->nc->status;
}

/* Move c to phase and publish the change. */
static void set_phase(lc_prov *p, lc_claim *c, Tailor__V1__NodeClaimPhase phase)
{
    Tailor__V1__NodeClaimStatus *st = status_of(c);
    Tailor__V1__NodeClaimPhase prev = st->phase;
    st->phase = phase;
    publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_PHASE_CHANGED, c, prev, NULL);
}

static void write_status(lc_prov *p, lc_claim *c)
{
    char *patch = lc_claim_status_json(c);
    int rc = p->o.kube.claim_status(p->o.kube.arg, c->nc->name, patch);
    if (rc)
        TLR_WARN(p->o.log, "nodeclaim status update failed", TLR_S("nodeclaim", c->nc->name),
                 TLR_ERR(rc));
    free(patch);
}

static void event(lc_prov *p, const char *kind, const char *ns, const char *name,
                  const char *uid, const char *type, const char *reason, const char *msg)
{
    int rc = p->o.kube.event(p->o.kube.arg, kind, ns, name, uid, type, reason, msg);
    if (rc)
        TLR_DEBUG(p->o.log, "event not written", TLR_S("reason", reason), TLR_ERR(rc));
}

/* ---- the cluster state we know about --------------------------------- */

static const Tailor__V1__NodeClass *find_nodeclass(const lc_prov *p, const char *name)
{
    const Tailor__V1__ClusterState *cs = p->batch ? p->batch->cluster : NULL;
    for (size_t i = 0; cs && i < cs->n_node_classes; i++)
        if (strcmp(cs->node_classes[i]->name, name) == 0)
            return cs->node_classes[i];
    return NULL;
}

static const char *pool_uid(const lc_prov *p, const char *name)
{
    const Tailor__V1__ClusterState *cs = p->batch ? p->batch->cluster : NULL;
    for (size_t i = 0; cs && i < cs->n_nodepools; i++)
        if (strcmp(cs->nodepools[i]->name, name) == 0)
            return cs->nodepools[i]->uid;
    return NULL;
}

static const Tailor__V1__Pod *find_pod(const lc_prov *p, const char *uid)
{
    for (size_t i = 0; p->batch && i < p->batch->n_pending_pods; i++)
        if (strcmp(p->batch->pending_pods[i]->uid, uid) == 0)
            return p->batch->pending_pods[i];
    return NULL;
}

/* ---- launch ----------------------------------------------------------- */

static int launch_template(lc_prov *p, const char *ncname, const char **id,
                           tlr_aws_error *err)
{
    for (size_t i = 0; i < p->nlts; i++) {
        if (strcmp(p->lts[i].nodeclass, ncname) == 0) {
            *id = p->lts[i].id;
            return TLR_OK;
        }
    }
    const Tailor__V1__NodeClass *nc = find_nodeclass(p, ncname);
    Tailor__V1__NodeClass dflt = TAILOR__V1__NODE_CLASS__INIT;
    if (!nc) {
        dflt.name = (char *)ncname;
        nc = &dflt;
    }
    char *lt = NULL;
    int64_t t0 = mono(p);
    int rc = p->o.cloud.launch_template(p->o.cloud.arg, nc, &lt, err);
    observe_cloud(p, "LaunchTemplate", rc, t0);
    if (rc)
        return rc;
    TLR_GROW(p->lts, p->caplts, p->nlts + 1);
    p->lts[p->nlts].nodeclass = tlr_strdup(ncname);
    p->lts[p->nlts].id = lt;
    *id = p->lts[p->nlts++].id;
    return TLR_OK;
}

static void add_failed(Tailor__V1__LaunchResult *r, const tlr_ec2_fleet_error *e,
                       Tailor__V1__CapacityType ct, int64_t until)
{
    if (!r)
        return;
    Tailor__V1__OfferingUnavailable *u = tlr_malloc(sizeof(*u));
    tailor__v1__offering_unavailable__init(u);
    u->instance_type = tlr_strdup(e->instance_type);
    u->zone = tlr_strdup(e->zone);
    u->capacity_type = ct;
    u->reason = tlr_strdup(e->code);
    u->until_unix_ms = until;
    r->failed_offerings = tlr_realloc(r->failed_offerings,
                                      (r->n_failed_offerings + 1) * sizeof(u));
    r->failed_offerings[r->n_failed_offerings++] = u;
}

/* Launch the instance of claim c.  TLR_OK with c's status filled;
 * TLR_E_CAPACITY when every offering was out of capacity (the ICE cache
 * now says so); another code for other failures.  r (may be NULL)
 * collects the failed offerings.  msg (len bytes) says why on failure. */
static int launch_claim(lc_prov *p, lc_claim *c, Tailor__V1__LaunchResult *r, char *msg,
                        size_t len)
{
    tlr_aws_error err = { 0 };
    const char *lt = NULL;
    int rc = launch_template(p, c->nc->node_class, &lt, &err);
    if (rc) {
        snprintf(msg, len, "launch template for %.64s: %.64s %.300s", c->nc->node_class, err.code,
                 err.message);
        return rc;
    }
    const Tailor__V1__NodeClass *nc = find_nodeclass(p, c->nc->node_class);
    for (int attempt = 0; attempt < 4; attempt++) {
        lc_fleet f;
        lc_fleet_in in = { c->nc, p->o.catalog, nc, p->ice, p->cluster, lt };
        if ((rc = lc_fleet_build(&in, &f))) {
            snprintf(msg, len, "no available offering left among %zu instance types",
                     c->nc->n_instance_type_options);
            return rc;
        }
        tlr_ec2_fleet_result res = { 0 };
        int64_t t0 = mono(p);
        rc = p->o.cloud.create_fleet(p->o.cloud.arg, &f.req, &res, &err);
        observe_cloud(p, "Create", rc, t0);
        if (rc) {
            snprintf(msg, len, "CreateFleet: %.64s %.300s", err.code, err.message);
            lc_fleet_clear(&f);
            return rc;
        }
        if (res.ninstances > 0) {
            const tlr_ec2_fleet_instance *fi = &res.instances[0];
            const char *zone = fi->zone[0] ? fi->zone : NULL;
            /* moto and EC2 may leave the zone out: take the override's. */
            for (size_t i = 0; !zone && i < f.nov; i++)
                if (strcmp(f.ov[i].instance_type, fi->instance_type) == 0)
                    zone = f.ov[i].zone;
            Tailor__V1__NodeClaimStatus *st = status_of(c);
            char pid[256];
            snprintf(pid, sizeof(pid), "aws:///%s/%s", zone ? zone : "", fi->id);
            st->instance_id = tlr_strdup(fi->id);
            st->provider_id = tlr_strdup(pid);
            st->instance_type = tlr_strdup(fi->instance_type);
            st->zone = tlr_strdup(zone ? zone : "");
            st->capacity_type = f.capacity_type;
            st->price_per_hour = lc_fleet_price(&f, fi->instance_type, zone);
            c->launched_ms = now_ms(p);
            tlr_ec2_fleet_result_free(&res);
            lc_fleet_clear(&f);
            return TLR_OK;
        }
        /* No instance: mark what ran out of capacity and try again
         * without it; any other error ends the launch. */
        bool capacity = res.nerrors > 0;
        for (size_t i = 0; i < res.nerrors; i++) {
            const tlr_ec2_fleet_error *e = &res.errors[i];
            if (e->tlr_code != TLR_E_CAPACITY) {
                capacity = false;
                snprintf(msg, len, "CreateFleet: %s %s", e->code, e->message);
                continue;
            }
            Tailor__V1__CapacityType ct = f.capacity_type;
            if (e->instance_type[0]) {
                lc_ice_mark(p->ice, e->instance_type, e->zone, ct, e->code);
                add_failed(r, e, ct, now_ms(p) + LC_ICE_TTL_MS);
            } else {
                /* An error without its override: every override failed. */
                for (size_t j = 0; j < f.nov; j++)
                    lc_ice_mark(p->ice, f.ov[j].instance_type, f.ov[j].zone, ct, e->code);
            }
        }
        if (res.nerrors == 0)
            snprintf(msg, len, "CreateFleet returned neither an instance nor an error");
        tlr_ec2_fleet_result_free(&res);
        lc_fleet_clear(&f);
        if (!capacity)
            return TLR_E_REMOTE;
        publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_OFFERING_UNAVAILABLE, c,
                0, "insufficient capacity");
    }
    snprintf(msg, len, "insufficient capacity in every offering tried");
    return TLR_E_CAPACITY;
}

/* Write claim (handed over) to Kubernetes and the registry.  NULL when
 * Kubernetes refused it (logged). */
static lc_claim *create_claim(lc_prov *p, Tailor__V1__NodeClaim *nc, const char *reason)
{
    char *json = lc_claim_json(nc, pool_uid(p, nc->nodepool));
    int rc = p->o.kube.claim_create(p->o.kube.arg, nc->name, json);
    free(json);
    if (rc && rc != TLR_E_EXISTS) {
        TLR_ERROR(p->o.log, "nodeclaim not created", TLR_S("nodeclaim", nc->name),
                  TLR_ERR(rc));
        protobuf_c_message_free_unpacked(&nc->base, NULL);
        return NULL;
    }
    lc_claim *c = lc_claims_add(p->claims, nc, now_ms(p));
    if (!c)
        return NULL;
    count(p->m_created, c->nc->nodepool, reason);
    set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_PENDING);
    return c;
}

/* Launch c and record the outcome.  On failure the claim is deleted
 * (its pods get provisioned again by the next plan). */
static int launch_and_record(lc_prov *p, lc_claim *c, Tailor__V1__LaunchResult *r)
{
    char msg[512] = "";
    int rc = launch_claim(p, c, r, msg, sizeof(msg));
    if (rc == TLR_OK) {
        set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED);
        write_status(p, c);
        char m[256];
        snprintf(m, sizeof(m), "Launched %s (%s) in %s", c->nc->status->instance_id,
                 c->nc->status->instance_type, c->nc->status->zone);
        event(p, "NodeClaim", "", c->nc->name, c->nc->uid, "Normal", "Launched", m);
        TLR_INFO(p->o.log, "launched nodeclaim", TLR_S("nodeclaim", c->nc->name),
                 TLR_S("instance", c->nc->status->instance_id),
                 TLR_S("type", c->nc->status->instance_type), TLR_S("zone", c->nc->status->zone));
        return TLR_OK;
    }
    TLR_WARN(p->o.log, "launch failed", TLR_S("nodeclaim", c->nc->name), TLR_S("why", msg),
             TLR_ERR(rc));
    event(p, "NodeClaim", "", c->nc->name, c->nc->uid, "Warning",
          rc == TLR_E_CAPACITY ? "InsufficientCapacity" : "LaunchFailed", msg);
    set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED);
    p->o.kube.claim_delete(p->o.kube.arg, c->nc->name);
    count(p->m_terminated, c->nc->nodepool, "launch-failed");
    lc_claims_remove(p->claims, c->nc->name);
    return rc;
}

/* ---- solve ------------------------------------------------------------ */

static int solve(lc_prov *p, Tailor__V1__SolveResponse **out)
{
    Tailor__V1__PendingBatch *b = p->batch;
    Tailor__V1__ClusterState cs = TAILOR__V1__CLUSTER_STATE__INIT;
    if (b->cluster)
        cs = *b->cluster;
    /* Our in-flight claims replace the watcher's copies of the same name. */
    size_t nown = lc_claims_count(p->claims);
    Tailor__V1__NodeClaim **ncs = tlr_calloc(cs.n_nodeclaims + nown + 1, sizeof(*ncs));
    size_t n = 0;
    for (size_t i = 0; i < cs.n_nodeclaims; i++)
        if (!lc_claims_find(p->claims, cs.nodeclaims[i]->name))
            ncs[n++] = cs.nodeclaims[i];
    for (size_t i = 0; i < nown; i++)
        ncs[n++] = lc_claims_at(p->claims, i)->nc;
    cs.nodeclaims = ncs;
    cs.n_nodeclaims = n;

    /* One catalog for every NodeClass the pools use. */
    char **classes = tlr_calloc(cs.n_nodepools + cs.n_node_classes + 1, sizeof(char *));
    size_t nclasses = 0;
    for (size_t i = 0; i < cs.n_node_classes; i++)
        classes[nclasses++] = cs.node_classes[i]->name;
    for (size_t i = 0; i < cs.n_nodepools; i++) {
        const Tailor__V1__NodeClassRef *ref = cs.nodepools[i]->node_class_ref;
        bool dup = !ref || !ref->name[0];
        for (size_t j = 0; j < nclasses && !dup; j++)
            dup = strcmp(classes[j], ref->name) == 0;
        if (!dup)
            classes[nclasses++] = ref->name;
    }
    Tailor__V1__CatalogRef ref = TAILOR__V1__CATALOG_REF__INIT;
    ref.hash = p->o.catalog->hash;
    ref.node_classes = classes;
    ref.n_node_classes = nclasses;
    Tailor__V1__CatalogRef *refs[1] = { &ref };

    Tailor__V1__SolveRequest req = TAILOR__V1__SOLVE_REQUEST__INIT;
    req.batch_id = b->batch_id;
    req.pending_pods = b->pending_pods;
    req.n_pending_pods = b->n_pending_pods;
    req.cluster = &cs;
    req.catalogs = refs;
    req.n_catalogs = 1;
    lc_ice_list(p->ice, &req.unavailable_offerings, &req.n_unavailable_offerings);
    req.now_unix_ms = now_ms(p);

    Tailor__V1__SolveResponse *resp = NULL;
    int rc = p->o.solver.solve(p->o.solver.arg, &req, &resp);
    if (rc == TLR_OK && resp->catalog_miss) {
        /* The replica does not hold our catalog: resend it in full. */
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        resp = NULL;
        ref.catalog = (Tailor__V1__Catalog *)p->o.catalog;
        rc = p->o.solver.solve(p->o.solver.arg, &req, &resp);
        if (rc == TLR_OK && resp->catalog_miss) {
            protobuf_c_message_free_unpacked(&resp->base, NULL);
            rc = TLR_E_REMOTE;
        }
    }
    lc_ice_list_free(req.unavailable_offerings, req.n_unavailable_offerings);
    free(classes);
    free(ncs);
    if (rc == TLR_OK)
        *out = resp;
    return rc;
}

static void nominate(lc_prov *p, const char *pod_uid, const char *claim)
{
    const Tailor__V1__Pod *pod = find_pod(p, pod_uid);
    if (!pod)
        return;
    char m[256];
    snprintf(m, sizeof(m), "Pod should schedule on: nodeclaim/%s", claim);
    event(p, "Pod", pod->namespace_, pod->name, pod->uid, "Normal", "Nominated", m);
    if (p->m_pods)
        tlr_metrics_counter_inc(p->m_pods, NULL);
}

/* Does the batch's own cluster state hold claim c's Node, Ready?  Then
 * the solver sees the real node with the pods really bound to it and its
 * real free room, and the claim's plan is stale: the scheduler may have
 * packed other pods there than the ones we planned. */
static bool batch_has_node(const lc_prov *p, const lc_claim *c)
{
    const Tailor__V1__ClusterState *cs = p->batch ? p->batch->cluster : NULL;
    const char *inst = c->nc->status ? c->nc->status->instance_id : NULL;
    if (!cs || !inst || !*inst)
        return false;
    size_t il = strlen(inst);
    for (size_t i = 0; i < cs->n_nodes; i++) {
        const Tailor__V1__Node *n = cs->nodes[i];
        size_t pl = n->provider_id ? strlen(n->provider_id) : 0;
        if (n->ready && pl > il && n->provider_id[pl - il - 1] == '/' &&
            strcmp(n->provider_id + pl - il, inst) == 0)
            return true;
    }
    return false;
}

/* Forget initialized claims that the batch's state already shows as a
 * Ready node, whose planned pods are no longer pending (bound: the Node
 * covers them), or that have been initialized for LC_SETTLE_MAX_MS
 * whatever the pods do.  Keeping a claim whose node the batch already
 * shows would make the solver believe its planned pods still fit there
 * even when the scheduler filled it with others, leaving them pending
 * until the watcher's next resync. */
static void drop_settled(lc_prov *p)
{
    int64_t now = now_ms(p);
    for (size_t i = 0; i < lc_claims_count(p->claims);) {
        lc_claim *c = lc_claims_at(p->claims, i);
        bool pending = false;
        for (size_t j = 0; j < c->nc->n_planned_pod_uids && !pending; j++)
            pending = find_pod(p, c->nc->planned_pod_uids[j]) != NULL;
        if (c->initialized_ms && (!pending || batch_has_node(p, c) ||
                                  now - c->initialized_ms >= LC_SETTLE_MAX_MS))
            lc_claims_remove(p->claims, c->nc->name);
        else
            i++;
    }
}

int lc_prov_batch(lc_prov *p, Tailor__V1__PendingBatch *b, lc_batch_result *res)
{
    lc_batch_result r = { 0 };
    if (p->batch)
        protobuf_c_message_free_unpacked(&p->batch->base, NULL);
    p->batch = b;
    drop_settled(p);
    r.inflight = (int)lc_claims_count(p->claims);
    int rc = TLR_OK;
    for (int round = 0; round < LC_MAX_REPLANS; round++) {
        Tailor__V1__SolveResponse *resp = NULL;
        if ((rc = solve(p, &resp)))
            break;
        r.solves++;
        r.pods_unplaced = (int)resp->n_pod_errors;
        bool capacity_failed = false;
        for (size_t i = 0; i < resp->n_bindings; i++) {
            const Tailor__V1__Binding *bd = resp->bindings[i];
            if (bd->target_case == TAILOR__V1__BINDING__TARGET_NODECLAIM_NAME) {
                nominate(p, bd->pod_uid, bd->nodeclaim_name);
                r.pods_nominated++;
            }
        }
        for (size_t i = 0; i < resp->n_new_nodeclaims; i++) {
            Tailor__V1__NodeClaim *nc = resp->new_nodeclaims[i];
            resp->new_nodeclaims[i] = NULL;   /* handed to the registry below */
            char name[64];
            lc_claim_name(nc->nodepool, rnd(p), name, sizeof(name));
            free(nc->name == protobuf_c_empty_string ? NULL : nc->name);
            nc->name = tlr_strdup(name);
            lc_claim *c = create_claim(p, nc, "provisioning");
            if (!c) {
                r.failed++;
                continue;
            }
            for (size_t j = 0; j < c->nc->n_planned_pod_uids; j++)
                nominate(p, c->nc->planned_pod_uids[j], c->nc->name);
            r.pods_nominated += (int)c->nc->n_planned_pod_uids;
            int lrc = launch_and_record(p, c, NULL);
            if (lrc == TLR_OK)
                r.launched++;
            else
                r.failed++;
            if (lrc == TLR_E_CAPACITY)
                capacity_failed = true;
        }
        /* Its claims were handed to the registry: free only the array. */
        resp->n_new_nodeclaims = 0;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        /* Re-plan at once with the larger ICE cache: the solver falls back
         * to other offerings and pools for the pods whose claim failed. */
        if (!capacity_failed)
            break;
    }
    if (res)
        *res = r;
    return rc;
}

/* ---- Launch / Terminate requests ------------------------------------- */

static void fill_result(Tailor__V1__LaunchResult *r, const lc_claim *c)
{
    const Tailor__V1__NodeClaimStatus *st = c->nc->status;
    if (!st || !c->launched_ms)
        return;
    r->instance_id = tlr_strdup(st->instance_id);
    r->provider_id = tlr_strdup(st->provider_id);
    r->instance_type = tlr_strdup(st->instance_type);
    r->zone = tlr_strdup(st->zone);
    r->capacity_type = st->capacity_type;
    r->price_per_hour = st->price_per_hour;
    r->launched_unix_ms = c->launched_ms;
}

static Tailor__V1__Status *new_status(int code, const char *reason, const char *msg)
{
    Tailor__V1__Status *s = tlr_malloc(sizeof(*s));
    tailor__v1__status__init(s);
    s->code = code;
    s->reason = tlr_strdup(reason ? reason : "");
    s->message = tlr_strdup(msg ? msg : "");
    return s;
}

void lc_prov_launch(lc_prov *p, const Tailor__V1__LaunchRequest *req,
                    Tailor__V1__LaunchResponse **out)
{
    Tailor__V1__LaunchResponse *resp = tlr_malloc(sizeof(*resp));
    tailor__v1__launch_response__init(resp);
    resp->results = tlr_calloc(req->n_nodeclaims + 1, sizeof(*resp->results));
    for (size_t i = 0; i < req->n_unavailable_offerings; i++)
        lc_ice_merge(p->ice, req->unavailable_offerings[i]);
    for (size_t i = 0; i < req->n_nodeclaims; i++) {
        const Tailor__V1__NodeClaim *in = req->nodeclaims[i];
        Tailor__V1__LaunchResult *r = tlr_malloc(sizeof(*r));
        tailor__v1__launch_result__init(r);
        resp->results[resp->n_results++] = r;
        r->nodeclaim_name = tlr_strdup(in->name);
        if (!in->name[0]) {
            r->status = new_status(TLR_E_INVAL, "NoName", "a LaunchRequest claim needs a name");
            continue;
        }
        lc_claim *c = lc_claims_find(p->claims, in->name);
        if (c) {   /* idempotent: the second request describes the first launch */
            fill_result(r, c);
            r->status = new_status(TLR_OK, "", "");
            continue;
        }
        /* Not ours in memory: after a restart the instance may exist. */
        tlr_ec2_instances found = { 0 };
        tlr_aws_error err = { 0 };
        c = create_claim(p, lc_claim_copy(in), req->reason[0] ? req->reason : "launch");
        if (!c) {
            r->status = new_status(TLR_E_IO, "NodeClaimNotCreated", "Kubernetes refused it");
            continue;
        }
        if (p->o.cloud.instances(p->o.cloud.arg, in->name, &found, &err) == TLR_OK &&
            found.n > 0) {
            Tailor__V1__NodeClaimStatus *st = status_of(c);
            char pid[256];
            snprintf(pid, sizeof(pid), "aws:///%s/%s", found.v[0].zone, found.v[0].id);
            st->instance_id = tlr_strdup(found.v[0].id);
            st->provider_id = tlr_strdup(pid);
            st->instance_type = tlr_strdup(found.v[0].type);
            st->zone = tlr_strdup(found.v[0].zone);
            c->launched_ms = now_ms(p);
            set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED);
            fill_result(r, c);
            r->status = new_status(TLR_OK, "", "");
            tlr_ec2_instances_free(&found);
            continue;
        }
        tlr_ec2_instances_free(&found);
        int rc = launch_and_record(p, c, r);
        if (rc == TLR_OK) {
            fill_result(r, lc_claims_find(p->claims, in->name));
            r->status = new_status(TLR_OK, "", "");
        } else {
            r->status = new_status(rc, rc == TLR_E_CAPACITY ? "InsufficientCapacity"
                                                            : "LaunchFailed", tlr_strerror(rc));
        }
    }
    *out = resp;
}

static int terminate_one(lc_prov *p, const char *claim, const char *instance, const char *why)
{
    tlr_aws_error err = { 0 };
    int rc = TLR_OK;
    if (instance && instance[0]) {
        const char *ids[1] = { instance };
        int64_t t0 = mono(p);
        rc = p->o.cloud.terminate(p->o.cloud.arg, ids, 1, &err);
        observe_cloud(p, "Delete", rc, t0);
        if (rc)
            return rc;
    }
    if (claim && claim[0]) {
        lc_claim *c = lc_claims_find(p->claims, claim);
        int drc = p->o.kube.claim_delete(p->o.kube.arg, claim);
        if (drc && drc != TLR_E_NOTFOUND)
            return drc;
        count(p->m_terminated, c ? c->nc->nodepool : "", why);
        if (c) {
            set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_TERMINATED);
            lc_claims_remove(p->claims, claim);
        }
    }
    return TLR_OK;
}

void lc_prov_terminate(lc_prov *p, const Tailor__V1__TerminateRequest *req,
                       Tailor__V1__TerminateResponse **out)
{
    Tailor__V1__TerminateResponse *resp = tlr_malloc(sizeof(*resp));
    tailor__v1__terminate_response__init(resp);
    resp->results = tlr_calloc(req->n_items + 1, sizeof(*resp->results));
    for (size_t i = 0; i < req->n_items; i++) {
        const Tailor__V1__TerminateItem *it = req->items[i];
        Tailor__V1__TerminateResult *r = tlr_malloc(sizeof(*r));
        tailor__v1__terminate_result__init(r);
        resp->results[resp->n_results++] = r;
        r->nodeclaim_name = tlr_strdup(it->nodeclaim_name);
        const char *inst = it->instance_id;
        char *found_id = NULL;
        if (it->nodeclaim_name[0]) {
            lc_claim *c = lc_claims_find(p->claims, it->nodeclaim_name);
            if (c && c->nc->status && c->nc->status->instance_id[0]) {
                inst = c->nc->status->instance_id;
            } else {
                /* Not in memory: find the instance by its claim tag. */
                tlr_ec2_instances l = { 0 };
                tlr_aws_error err = { 0 };
                if (p->o.cloud.instances(p->o.cloud.arg, it->nodeclaim_name, &l, &err) == 0 &&
                    l.n > 0)
                    found_id = tlr_strdup(l.v[0].id);
                tlr_ec2_instances_free(&l);
                if (found_id)
                    inst = found_id;
            }
        }
        /* inst may point into the claim, which terminate_one frees. */
        r->instance_id = tlr_strdup(inst);
        int rc = terminate_one(p, it->nodeclaim_name, r->instance_id,
                               req->reason[0] ? req->reason : "terminate");
        r->status = new_status(rc, rc ? "TerminateFailed" : "", rc ? tlr_strerror(rc) : "");
        r->instance_state = tlr_strdup(rc == 0 && r->instance_id[0] ? "shutting-down" : "");
        free(found_id);
    }
    *out = resp;
}

/* ---- lifecycle and GC ------------------------------------------------- */

void lc_prov_lifecycle(lc_prov *p)
{
    lc_nodes nodes = { 0 };
    int rc = p->o.kube.nodes_list(p->o.kube.arg, &nodes);
    if (rc) {
        TLR_WARN(p->o.log, "lifecycle: nodes not listed", TLR_ERR(rc));
        return;
    }
    int64_t now = now_ms(p);
    for (size_t i = 0; i < lc_claims_count(p->claims);) {
        lc_claim *c = lc_claims_at(p->claims, i);
        const char *inst = c->nc->status ? c->nc->status->instance_id : "";
        const lc_node *node = lc_node_for_instance(&nodes, inst);
        switch (lc_lifecycle_decide(c, node, now)) {
        case LC_LIFE_REGISTERED:
            c->registered_ms = now;
            status_of(c)->node_name = tlr_strdup(node->name);
            set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_REGISTERED);
            write_status(p, c);
            continue;   /* same claim again: it may be initialized already */
        case LC_LIFE_INITIALIZED:
            c->initialized_ms = now;
            set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_INITIALIZED);
            write_status(p, c);
            /* Still in flight for the solver until its pods are bound
             * (see drop_settled): the watcher's next batch may predate the
             * bindings and show them pending with no room for them. */
            i++;
            continue;
        case LC_LIFE_LAUNCH_TIMEOUT:
        case LC_LIFE_REGISTER_TIMEOUT: {
            char name[256];
            snprintf(name, sizeof(name), "%s", c->nc->name);
            TLR_WARN(p->o.log, "nodeclaim liveness timeout", TLR_S("nodeclaim", name));
            event(p, "NodeClaim", "", name, c->nc->uid, "Warning", "LivenessTimeout",
                  c->launched_ms ? "not registered within 15m" : "not launched within 5m");
            char *id = tlr_strdup(inst);
            set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED);
            if (terminate_one(p, name, id, "liveness") != TLR_OK)
                i++;   /* retried next pass */
            free(id);
            continue;
        }
        case LC_LIFE_NONE:
            break;
        }
        i++;
    }
    lc_nodes_free(&nodes);
}

void lc_prov_gc(lc_prov *p)
{
    tlr_ec2_instances inst = { 0 };
    lc_kclaims claims = { 0 };
    tlr_aws_error err = { 0 };
    int rc = p->o.cloud.instances(p->o.cloud.arg, NULL, &inst, &err);
    if (rc) {
        TLR_WARN(p->o.log, "gc: instances not listed", TLR_S("code", err.code), TLR_ERR(rc));
        return;
    }
    if ((rc = p->o.kube.claims_list(p->o.kube.arg, &claims))) {
        TLR_WARN(p->o.log, "gc: nodeclaims not listed", TLR_ERR(rc));
        tlr_ec2_instances_free(&inst);
        return;
    }
    lc_gc_plan plan;
    lc_gc_decide(&inst, &claims, now_ms(p), &plan);
    for (size_t i = 0; i < plan.nterminate; i++) {
        /* Our own launch in flight is never a leak. */
        TLR_INFO(p->o.log, "gc: terminating leaked instance", TLR_S("instance", plan.terminate[i]));
        if (terminate_one(p, NULL, plan.terminate[i], "garbage-collected") == TLR_OK)
            publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_GARBAGE_COLLECTED, NULL,
                    0, plan.terminate[i]);
    }
    for (size_t i = 0; i < plan.ndelete; i++) {
        TLR_INFO(p->o.log, "gc: deleting nodeclaim without instance",
                 TLR_S("nodeclaim", plan.delete_claims[i]));
        if (terminate_one(p, plan.delete_claims[i], NULL, "garbage-collected") == TLR_OK)
            publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_GARBAGE_COLLECTED, NULL,
                    0, plan.delete_claims[i]);
    }
    lc_gc_plan_clear(&plan);
    lc_kclaims_free(&claims);
    tlr_ec2_instances_free(&inst);
}
