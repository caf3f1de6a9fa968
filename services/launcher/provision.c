/* provision.c - Solve -> NodeClaims -> CreateFleet, with ICE re-planning
 * (provision.h); launching itself is in launch.c.
 *
 * Three details worth knowing:
 *
 * Borrowed request building.  The SolveRequest is assembled from
 * pointers into the batch (pods, pools, classes, nodes) and into the
 * registry (our in-flight claims); only the pointer arrays are ours.  So
 * it is never freed with protobuf_c_message_free_unpacked -- only the
 * arrays are freed.
 *
 * In-flight merge.  The watcher's state may already hold one of our
 * claims (without the planned pods: those live only here); ours replaces
 * it, so the solver sees which pods it covers.  A claim adopted after a
 * restart has no planned pods, so the watcher's copy is kept for it.
 *
 * Catalogs per NodeClass.  Every usable NodeClass gets the catalog
 * restricted to its subnets' zones (nodeclass.h); classes with the same
 * view share one CatalogRef.  An unusable class is in no CatalogRef, so
 * its pools place nothing and the solver says why per pod.
 */
#include "provision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "gc.h"
#include "lifecycle.h"
#include "plangate.h"
#include "prov_int.h"
#include "tlr_alloc.h"
#include "tlr_clnt.h"
#include "tlr_err.h"
#include "tlr_hash.h"
#include "tlr_kubesem.h"
#include "tlr_labels.h"

#define TOLD_EVERY_MS (5 * 60 * 1000)
#define TOLD_MAX 100000

int64_t lc_prov_now(const lc_prov *p)
{
    return p->o.clock->wall_ms(p->o.clock->arg);
}

int64_t lc_prov_mono(const lc_prov *p)
{
    return p->o.clock->mono_ms(p->o.clock->arg);
}

static uint64_t rnd(lc_prov *p)
{
    if (p->o.rand)
        return p->o.rand(p->o.rand_arg);
    return ((uint64_t)random() << 31) ^ (uint64_t)random();
}

static void id_clear(tlr_cluster_identity *id)
{
    free((char *)id->name);
    free((char *)id->endpoint);
    free((char *)id->ca_b64);
    free((char *)id->service_cidr);
    free((char *)id->dns_ip);
    memset(id, 0, sizeof(*id));
}

void lc_prov_set_identity(lc_prov *p, const tlr_cluster_identity *id)
{
    id_clear(&p->id);
    if (!id)
        return;
    p->id.name = tlr_strdup0(id->name);
    p->id.endpoint = tlr_strdup0(id->endpoint);
    p->id.ca_b64 = tlr_strdup0(id->ca_b64);
    p->id.service_cidr = tlr_strdup0(id->service_cidr);
    p->id.dns_ip = tlr_strdup0(id->dns_ip);
}

bool lc_prov_identity_ok(const lc_prov *p, char *why, size_t len)
{
    const tlr_cluster_identity *id = &p->id;
    const char *missing = !id->endpoint || !id->endpoint[0] ? "API endpoint (--cluster-endpoint)"
                          : !id->ca_b64[0]       ? "CA bundle (--cluster-ca-bundle)"
                          : !id->service_cidr[0] ? "service CIDR (--cluster-cidr)"
                          : !id->name[0]         ? "cluster name"
                                                 : NULL;
    if (missing && why)
        snprintf(why, len, "cluster identity incomplete: no %s (set it, or let EKS "
                 "DescribeCluster give it)", missing);
    return missing == NULL;
}

void lc_prov_create(const lc_prov_opts *o, lc_prov **out)
{
    lc_prov *p = tlr_calloc(1, sizeof(*p));
    p->o = *o;
    p->cluster = tlr_strdup(o->cluster);
    p->o.cluster = p->cluster;
    p->o.default_ami = p->o.k8s_version = NULL;   /* copied into the classes */
    p->catalog = o->catalog;
    p->o.identity = NULL;   /* copied into p->id */
    lc_prov_set_identity(p, o->identity);
    lc_claims_create(&p->claims);
    tlr_cstate_create(8, &p->states);
    lc_ice_create(o->clock, o->ice_ttl_ms, &p->ice);
    lc_classes_opts co = { o->cloud, o->kube, o->clock, o->log, o->default_ami,
                           o->k8s_version, o->resolve_ttl_ms, o->iam, o->cluster, o->region };
    lc_classes_create(&co, &p->classes);
    if (o->metrics) {
        /* Names, label names and values as Karpenter v1.14 exposes them
         * (docs/metrics.md); tailor's own under tailor_. */
        static const char *const created[] = { "reason", "nodepool", "min_values_relaxed" };
        static const char *const terminated[] = { "nodepool", "capacity_type", "zone" };
        static const char *const method[] = { "controller", "method", "provider" };
        static const char *const errs[] = { "controller", "method", "provider", "error" };
        p->m_created = tlr_metrics_counter(o->metrics, "karpenter_nodeclaims_created_total",
                                           "Number of nodeclaims created in total by Karpenter. Labeled "
                                           "by reason the nodeclaim was created, the owning nodepool, "
                                           "and if min values was relaxed for this nodeclaim.", 3, created);
        p->m_terminated = tlr_metrics_counter(o->metrics,
                                              "karpenter_nodeclaims_terminated_total",
                                              "Number of nodeclaims terminated in total by Karpenter. "
                                              "Labeled by the owning nodepool, capacity type, and zone.",
                                              3, terminated);
        p->m_cloud = tlr_metrics_histogram(o->metrics,
                                           "karpenter_cloudprovider_duration_seconds",
                                           "Duration of cloud provider method calls. Labeled by the "
                                           "controller, method name and provider.", 3, method,
                                           NULL, 0);
        p->m_cloud_err = tlr_metrics_counter(o->metrics, "karpenter_cloudprovider_errors_total",
                                             "Total number of errors returned from CloudProvider calls.",
                                             4, errs);
        static const char *const ctl[] = { "controller" };
        p->m_unschedulable = tlr_metrics_gauge(o->metrics, "karpenter_scheduler_unschedulable_pods_count",
                                               "The number of unschedulable Pods.", 1, ctl);
        p->m_ignored = tlr_metrics_gauge(o->metrics, "karpenter_scheduler_ignored_pods_count",
                                         "Number of pods ignored during scheduling by Karpenter", 0, NULL);
        tlr_metrics_gauge_set(p->m_ignored, NULL, 0);
        static const char *const pool_zone[] = { "nodepool", "zone" };
        p->m_nodes_created = tlr_metrics_counter(o->metrics, "karpenter_nodes_created_total",
                                                 "Number of nodes created in total by Karpenter. "
                                                 "Labeled by owning nodepool and zone.", 2, pool_zone);
        p->m_pods = tlr_metrics_counter(o->metrics, "tailor_launcher_pods_nominated_total",
                                        "Pods nominated to new or in-flight NodeClaims.", 0,
                                        NULL);
        static const char *const result[] = { "result" };
        p->m_cluster = tlr_metrics_counter(
            o->metrics, "tailor_launcher_cluster_state_total",
            "Pending batches whose cluster came by reference, by how it was resolved: delta "
            "(applied to a state held), snapshot (a Snapshot was fetched: the base was not "
            "held), skipped (neither), invalid.", 1, result);
        p->m_solves = tlr_metrics_counter(o->metrics, "tailor_launcher_solves_total",
                                          "Solve calls to the solver service, by result (ok, "
                                          "error: no answer in time or an error Status).",
                                          1, result);
        p->m_fleets = tlr_metrics_counter(o->metrics, "tailor_launcher_create_fleet_calls_total",
                                          "CreateFleet calls made (batched or not).", 0, NULL);
        p->m_gc_instances = tlr_metrics_counter(
            o->metrics, "tailor_launcher_gc_instances_terminated_total",
            "Leaked instances (no NodeClaim owns them) the garbage collector terminated.", 0, NULL);
        static const char *const launch_fail[] = { "zone", "zone_id", "capacity_type", "reason" };
        p->m_launch_fail = tlr_metrics_counter(
            o->metrics, "karpenter_cloudprovider_instance_launch_failures_total",
            "Number of instance launch (CreateFleet offering) failures, dimensioned by availability zone, "
            "zone ID, capacity type, and launch failure reason.", 4, launch_fail);
        static const char *const term_fail[] = { "zone", "zone_id" };
        p->m_term_fail = tlr_metrics_counter(
            o->metrics, "karpenter_cloudprovider_instance_termination_failures_total",
            "Number of instance termination (TerminateInstances) failures, dimensioned by availability "
            "zone and zone ID.", 2, term_fail);
        lc_catmetrics_create(o->metrics, &p->catm);
        /* The AWS provider's batcher metrics: Karpenter's DurationBuckets
         * and SizeBuckets. */
        static const double dur[] = {
            0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
            1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50,
            60, 120, 150, 300, 450, 600,
        };
        static const double size[] = {
            1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200,
            225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000,
        };
        static const char *const batcher[] = { "batcher" };
        p->m_batch_time = tlr_metrics_histogram(o->metrics, "karpenter_cloudprovider_batcher_batch_time_seconds",
                                                "Duration of the batching window per batcher", 1, batcher, dur,
                                                (int)(sizeof(dur) / sizeof(dur[0])));
        p->m_batch_size = tlr_metrics_histogram(o->metrics, "karpenter_cloudprovider_batcher_batch_size",
                                                "Size of the request batch per batcher", 1, batcher, size,
                                                (int)(sizeof(size) / sizeof(size[0])));
    }
    *out = p;
}

/* Free the batch, its cluster put back first when it came by reference. */
static void batch_drop(lc_prov *p)
{
    if (!p->batch)
        return;
    if (p->view) {
        p->batch->cluster = p->wire_cluster;
        tlr_cstate_view_free(p->view);
        p->view = NULL;
        p->wire_cluster = NULL;
    }
    protobuf_c_message_free_unpacked(&p->batch->base, NULL);
    p->batch = NULL;
}

void lc_prov_free(lc_prov *p)
{
    if (!p)
        return;
    batch_drop(p);
    tlr_cstate_free(p->states);
    for (size_t i = 0; i < p->nreplicas; i++)
        free(p->replicas[i].id);
    free(p->batch_idx);
    free(p->decided);
    for (size_t i = 0; i < p->ntold; i++)
        free(p->told[i].uid);
    free(p->told);
    lc_claims_free(p->claims);
    lc_ice_free(p->ice);
    lc_classes_free(p->classes);
    lc_catmetrics_free(p->catm);
    id_clear(&p->id);
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

lc_classes *lc_prov_classes(lc_prov *p)
{
    return p->classes;
}

void lc_prov_set_catalog(lc_prov *p, const Tailor__V1__Catalog *catalog)
{
    p->catalog = catalog;
}

/* Karpenter's reason label for a created NodeClaim, from the launch
 * reason ("provisioning", "<disruption method>:<decision id>", ...):
 * "provisioned", or the disruption reason lower-cased ("underutilized",
 * "drifted", "empty"); tailor's own causes (interruption,
 * single-replica-room) keep their name. */
static void created_reason(const char *why, char *out, size_t len)
{
    static const struct {
        const char *method, *reason;
    } map[] = {
        { "provisioning", "provisioned" },         { "consolidation-replace", "underutilized" },
        { "consolidation-delete", "underutilized" }, { "drift", "drifted" },
        { "emptiness", "empty" },
    };
    size_t n = strcspn(why, ":");
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strlen(map[i].method) == n && !strncmp(why, map[i].method, n)) {
            snprintf(out, len, "%s", map[i].reason);
            return;
        }
    snprintf(out, len, "%.*s", (int)n, why);
}

void lc_prov_count_created(lc_prov *p, const Tailor__V1__NodeClaim *nc, const char *why)
{
    if (!p->m_created)
        return;
    char reason[64];
    created_reason(why, reason, sizeof(reason));
    bool relaxed = false;
    for (size_t i = 0; i < nc->n_annotations; i++)
        relaxed |= !strcmp(nc->annotations[i]->key, TLR_ANNOTATION_MIN_VALUES_RELAXED) &&
                   !strcmp(nc->annotations[i]->value, "true");
    tlr_metrics_counter_inc(p->m_created,
                            (const char *const[]){ reason, nc->nodepool, relaxed ? "true" : "false" });
}

void lc_prov_count_terminated(lc_prov *p, const char *nodepool, const Tailor__V1__NodeClaim *nc)
{
    if (!p->m_terminated)
        return;
    /* Karpenter reads the NodeClaim's labels: empty before launch. */
    const Tailor__V1__NodeClaimStatus *st = nc ? nc->status : NULL;
    const char *ct = st && st->instance_id[0] ? tlr_ks_capacity_type_name(st->capacity_type) : "";
    tlr_metrics_counter_inc(p->m_terminated,
                            (const char *const[]){ nodepool ? nodepool : "", ct ? ct : "",
                                                   st ? st->zone : "" });
}

/* The zone ID of zone, from the catalog's offerings ("" when none says). */
static const char *zone_id_of(const lc_prov *p, const char *zone)
{
    const Tailor__V1__Catalog *cat = p->catalog;
    for (size_t i = 0; zone && zone[0] && cat && i < cat->n_instance_types; i++)
        for (size_t j = 0; j < cat->instance_types[i]->n_offerings; j++) {
            const Tailor__V1__Offering *o = cat->instance_types[i]->offerings[j];
            if (!strcmp(o->zone, zone) && o->zone_id[0])
                return o->zone_id;
        }
    return "";
}

const char *lc_launch_failure_reason(const char *code, const char *message)
{
    /* In Karpenter's order: the first whose patterns all occur in
     * "code: message" wins. */
    static const struct {
        const char *has, *and_has, *reason;
    } map[] = {
        { "AuthFailure.ServiceLinkedRoleCreationNotPermitted", NULL, "SpotSLRCreationFailed" },
        { "Not authorized for images", NULL, "AMIAuthorizationFailure" },
        { "UnauthorizedOperation", NULL, "Unauthorized" },
        { "AccessDenied", NULL, "Unauthorized" },
        { "AuthFailure", NULL, "Unauthorized" },
        { "InvalidParameter", "belong to different networks", "SecurityGroupSubnetVPCMismatch" },
        { "iamInstanceProfile.name is invalid", NULL, "InstanceProfileNameInvalid" },
        { "InvalidLaunchTemplateId.NotFound", NULL, "LaunchTemplateNotFound" },
        { "User data is limited to", NULL, "UserDataSizeLimitExceeded" },
        { "InvalidAMIID.Malformed", NULL, "InvalidAMIID" },
        { "InvalidAMIID.NotFound", NULL, "AMINotFound" },
        { "RequestLimitExceeded", NULL, "RequestLimitExceeded" },
        { "InternalError", NULL, "InternalError" },
        { "not eligible for Free Tier", NULL, "FreeTierIneligible" },
        { "MaxFleetCountExceeded", NULL, "FleetQuotaExceeded" },
        { "PendingVerification", NULL, "AccountPendingVerification" },
        { "MaxSpotInstanceCountExceeded", NULL, "SpotQuotaExceeded" },
        { "VcpuLimitExceeded", NULL, "VCPULimitExceeded" },
        { "InsufficientFreeAddressesInSubnet", NULL, "InsufficientFreeAddressesInSubnet" },
    };
    char s[1024];
    snprintf(s, sizeof(s), "%s: %s", code ? code : "", message ? message : "");
    bool auth = strstr(s, "UnauthorizedOperation") || strstr(s, "AccessDenied") || strstr(s, "AuthFailure");
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        /* "Not authorized for images" refines the Unauthorized family only. */
        if (i == 1 && !auth)
            continue;
        if (strstr(s, map[i].has) && (!map[i].and_has || strstr(s, map[i].and_has)))
            return map[i].reason;
    }
    return "LaunchFailed";
}

void lc_prov_fleet_batch(lc_prov *p, size_t size, int64_t window_ms)
{
    if (!p->m_batch_size)
        return;
    static const char *const cf[] = { "create_fleet" };
    tlr_metrics_histogram_observe(p->m_batch_size, cf, (double)size);
    tlr_metrics_histogram_observe(p->m_batch_time, cf, (double)window_ms / 1000.0);
}

void lc_prov_count_launch_failure(lc_prov *p, const char *zone, Tailor__V1__CapacityType ct,
                                  const char *code, const char *message)
{
    if (!p->m_launch_fail)
        return;
    const char *ctn = tlr_ks_capacity_type_name(ct);
    tlr_metrics_counter_inc(p->m_launch_fail,
                            (const char *const[]){ zone ? zone : "", zone_id_of(p, zone), ctn ? ctn : "",
                                                   lc_launch_failure_reason(code, message) });
}

/* karpenter_nodes_created_total, when a NodeClaim's Node registers:
 * labeled, as in Karpenter, by the Node's NodePool and zone labels. */
static void count_node_created(lc_prov *p, const lc_claim *c, const tlr_knode *node)
{
    if (!p->m_nodes_created)
        return;
    const char *zone = "", *pool = c->nc->nodepool;
    for (size_t i = 0; i < node->nlabels; i++) {
        if (!strcmp(node->label_keys[i], TLR_LABEL_ZONE))
            zone = node->label_values[i];
        else if (!strcmp(node->label_keys[i], TLR_LABEL_NODEPOOL))
            pool = node->label_values[i];
    }
    tlr_metrics_counter_inc(p->m_nodes_created, (const char *const[]){ pool, zone });
}

void lc_prov_observe(lc_prov *p, const char *method, int rc, int64_t t0)
{
    if (!p->m_cloud)
        return;
    /* Karpenter's decorator labels: the calling controller, the
     * CloudProvider method (Create, Delete, Get, List, ...), the provider. */
    const char *v[3] = { "nodeclaim.lifecycle", method, "aws" };
    if (!strcmp(method, "Delete"))
        v[0] = "nodeclaim.termination";
    int64_t t = lc_prov_mono(p) - t0;
    tlr_metrics_histogram_observe(p->m_cloud, v, (double)t / 1000.0);
    if (rc && p->m_cloud_err)
        tlr_metrics_counter_inc(p->m_cloud_err,
                                (const char *const[]){ v[0], v[1], v[2],
                                                       rc == TLR_E_CAPACITY ? "InsufficientCapacityError"
                                                                            : "" });
}

void lc_prov_publish(lc_prov *p, Tailor__V1__LaunchEventKind kind, const lc_claim *c,
                     Tailor__V1__NodeClaimPhase prev, const char *msg)
{
    if (!p->o.publish)
        return;
    Tailor__V1__LaunchEvent ev = TAILOR__V1__LAUNCH_EVENT__INIT;
    ev.kind = kind;
    ev.event_unix_ms = lc_prov_now(p);
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

Tailor__V1__NodeClaimStatus *lc_prov_status_of(lc_claim *c)
{
    if (!c->nc->status) {
        c->nc->status = tlr_malloc(sizeof(*c->nc->status));
        tailor__v1__node_claim_status__init(c->nc->status);
    }
    return c->nc->status;
}

void lc_prov_set_phase(lc_prov *p, lc_claim *c, Tailor__V1__NodeClaimPhase phase)
{
    Tailor__V1__NodeClaimStatus *st = lc_prov_status_of(c);
    Tailor__V1__NodeClaimPhase prev = st->phase;
    st->phase = phase;
    lc_prov_publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_PHASE_CHANGED, c, prev,
                    NULL);
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

void lc_prov_event(lc_prov *p, const char *kind, const char *ns, const char *name,
                   const char *uid, const char *type, const char *reason, const char *msg)
{
    int rc = p->o.kube.event(p->o.kube.arg, kind, ns, name, uid, type, reason, msg);
    if (rc)
        TLR_DEBUG(p->o.log, "event not written", TLR_S("reason", reason), TLR_ERR(rc));
}

/* ---- the cluster state we know about --------------------------------- */

static const char *pool_uid(const lc_prov *p, const char *name)
{
    const Tailor__V1__ClusterState *cs = p->batch ? p->batch->cluster : NULL;
    for (size_t i = 0; cs && i < cs->n_nodepools; i++)
        if (strcmp(cs->nodepools[i]->name, name) == 0)
            return cs->nodepools[i]->uid;
    return NULL;
}

/* Index the batch's pods by uid (a burst nominates thousands of them, and
 * every nomination and settle check looks one up). */
static void index_batch(lc_prov *p)
{
    free(p->batch_idx);
    free(p->decided);
    p->batch_idx = NULL;
    p->decided = NULL;
    p->batch_cap = 0;
    size_t n = p->batch ? p->batch->n_pending_pods : 0;
    if (!n)
        return;
    p->decided = tlr_calloc(n, 1);
    size_t cap = 16;
    while (cap < n * 2)
        cap <<= 1;
    p->batch_idx = tlr_malloc(cap * sizeof(size_t));
    p->batch_cap = cap;
    for (size_t i = 0; i < cap; i++)
        p->batch_idx[i] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const char *u = p->batch->pending_pods[i]->uid;
        size_t k = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, u ? u : "") & (cap - 1);
        while (p->batch_idx[k] != SIZE_MAX)
            k = (k + 1) & (cap - 1);
        p->batch_idx[k] = i;
    }
}

/* The batch index of the pod with uid; SIZE_MAX if it is not in the batch. */
static size_t find_pod_index(const lc_prov *p, const char *uid)
{
    if (!p->batch_cap || !uid)
        return SIZE_MAX;
    for (size_t k = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, uid) & (p->batch_cap - 1); p->batch_idx[k] != SIZE_MAX;
         k = (k + 1) & (p->batch_cap - 1)) {
        const Tailor__V1__Pod *pod = p->batch->pending_pods[p->batch_idx[k]];
        if (pod->uid && strcmp(pod->uid, uid) == 0)
            return p->batch_idx[k];
    }
    return SIZE_MAX;
}

static const Tailor__V1__Pod *find_pod(const lc_prov *p, const char *uid)
{
    size_t i = find_pod_index(p, uid);
    return i == SIZE_MAX ? NULL : p->batch->pending_pods[i];
}

/* Did the solver answer that Karpenter's provisioner ignores the pod
 * (status reason "Ignored")? */
static bool pod_ignored(const Tailor__V1__PodError *e)
{
    return e->status && e->status->reason && strcmp(e->status->reason, "Ignored") == 0;
}

static void decide(lc_prov *p, const char *uid, uint8_t how)
{
    size_t i = find_pod_index(p, uid);
    if (i != SIZE_MAX)
        p->decided[i] = how;
}

/* Tell the watcher what this batch's plan decided for each of its pods. */
static void publish_decisions(lc_prov *p)
{
    if (!p->o.publish_decisions || !p->batch)
        return;
    size_t n = p->batch->n_pending_pods, k = 0;
    Tailor__V1__PodSchedulingDecision *dv = tlr_calloc(n + 1, sizeof(*dv));
    Tailor__V1__PodSchedulingDecision **dp = tlr_calloc(n + 1, sizeof(*dp));
    for (size_t i = 0; i < n; i++) {
        if (p->decided[i] == LC_UNDECIDED)
            continue;
        const Tailor__V1__Pod *pod = p->batch->pending_pods[i];
        tailor__v1__pod_scheduling_decision__init(&dv[k]);
        dv[k].namespace_ = pod->namespace_;
        dv[k].name = pod->name;
        dv[k].uid = pod->uid;
        dv[k].scheduled = p->decided[i] == LC_DECIDED_SCHEDULED;
        dp[k] = &dv[k];
        k++;
    }
    if (k) {
        Tailor__V1__SchedulingDecisions d = TAILOR__V1__SCHEDULING_DECISIONS__INIT;
        d.batch_id = p->batch->batch_id;
        d.decided_unix_ms = lc_prov_now(p);
        d.decisions = dp;
        d.n_decisions = k;
        p->o.publish_decisions(p->o.publish_arg, &d);
    }
    free(dp);
    free(dv);
}

/* ---- creating claims ------------------------------------------------------ */

/* Write the claims (handed over) to Kubernetes -- all at once when the
 * client can -- and to the registry.  out[i] is the registry entry of
 * ncs[i], or NULL when Kubernetes refused it (logged; the claim freed). */
static void create_claims(lc_prov *p, Tailor__V1__NodeClaim **ncs, size_t n,
                          const char *reason, lc_claim **out)
{
    const char **names = tlr_calloc(n + 1, sizeof(*names));
    char **jsons = tlr_calloc(n + 1, sizeof(*jsons));
    int *rcs = tlr_calloc(n + 1, sizeof(*rcs));
    for (size_t i = 0; i < n; i++) {
        names[i] = ncs[i]->name;
        lc_claim_fill_labels(ncs[i]);
        jsons[i] = lc_claim_json(ncs[i], pool_uid(p, ncs[i]->nodepool));
    }
    if (p->o.kube.claims_create_n && n > 1)
        p->o.kube.claims_create_n(p->o.kube.arg, n, names, (const char *const *)jsons, rcs);
    else
        for (size_t i = 0; i < n; i++)
            rcs[i] = p->o.kube.claim_create(p->o.kube.arg, names[i], jsons[i]);
    for (size_t i = 0; i < n; i++) {
        free(jsons[i]);
        out[i] = NULL;
        if (rcs[i] && rcs[i] != TLR_E_EXISTS) {
            TLR_ERROR(p->o.log, "nodeclaim not created", TLR_S("nodeclaim", ncs[i]->name),
                      TLR_ERR(rcs[i]));
            protobuf_c_message_free_unpacked(&ncs[i]->base, NULL);
            continue;
        }
        lc_claim *c = lc_claims_add(p->claims, ncs[i], lc_prov_now(p));
        if (!c)
            continue;
        lc_prov_count_created(p, c->nc, reason);
        lc_prov_set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_PENDING);
        out[i] = c;
    }
    free(names);
    free(jsons);
    free(rcs);
}

/* ---- solve ------------------------------------------------------------ */

/* One CatalogRef per distinct class catalog, for the usable classes. */
static void build_refs(lc_prov *p, const Tailor__V1__ClusterState *cs, tlr_clnt_cats *r)
{
    int64_t now = lc_prov_now(p);
    for (size_t i = 0; i < cs->n_node_classes; i++) {
        const char *name = cs->node_classes[i]->name;
        lc_class *c = lc_classes_get(p->classes, name);
        if (lc_class_usable(c, now, NULL))
            tlr_clnt_cats_name(r, lc_class_catalog(c, p->catalog), name);
    }
}

/* ---- NodePool usage, for limits ----------------------------------------- */

static void add_res(Tailor__V1__ResourceList *to, const Tailor__V1__ResourceList *r)
{
    if (!r)
        return;
    to->cpu_millis += r->cpu_millis;
    to->memory_bytes += r->memory_bytes;
    to->pods += r->pods;
    to->ephemeral_storage_bytes += r->ephemeral_storage_bytes;
}

/* What claim c will hold once it runs: its launched type's capacity, else
 * the largest of its options (a claim in flight may still get any). */
static const Tailor__V1__ResourceList *claim_capacity(const lc_prov *p,
                                                      const Tailor__V1__NodeClaim *c)
{
    const Tailor__V1__NodeClaimStatus *st = c->status;
    if (st && st->capacity && st->capacity->cpu_millis > 0)
        return st->capacity;
    const Tailor__V1__InstanceType *it = NULL;
    if (st && st->instance_type[0])
        it = lc_catalog_find(p->catalog, st->instance_type);
    for (size_t i = 0; !it && i < c->n_instance_type_options; i++) {
        const Tailor__V1__InstanceType *o = lc_catalog_find(p->catalog,
                                                            c->instance_type_options[i]->name);
        if (o && o->capacity && (!it || o->capacity->cpu_millis > it->capacity->cpu_millis))
            it = o;
    }
    return it ? it->capacity : NULL;
}

static bool node_of_claim(const Tailor__V1__Node *n, const Tailor__V1__NodeClaim *c)
{
    if (n->nodeclaim_name[0] && strcmp(n->nodeclaim_name, c->name) == 0)
        return true;
    if (c->status && c->status->node_name[0] && strcmp(c->status->node_name, n->name) == 0)
        return true;
    const char *pid = c->status ? c->status->provider_id : "";
    return pid[0] && n->provider_id[0] && strcmp(pid, n->provider_id) == 0;
}

/* NodePool status.usage and nodes, as Karpenter's counter controller keeps
 * them, from what the launcher knows now: every Node of the pool plus every
 * NodeClaim of it without its Node yet (ncs: the claims sent to Solve).
 * Nobody else writes them here, and the solver enforces spec.limits
 * against them.  Written into the batch's own NodePools. */
static void pool_usage(lc_prov *p, Tailor__V1__ClusterState *cs, Tailor__V1__NodeClaim **ncs,
                       size_t n)
{
    for (size_t i = 0; i < cs->n_nodepools; i++) {
        Tailor__V1__NodePool *np = cs->nodepools[i];
        if (!np->limits)
            continue;
        if (!np->status) {
            np->status = tlr_malloc(sizeof(*np->status));
            tailor__v1__node_pool_status__init(np->status);
        }
        if (!np->status->usage) {
            np->status->usage = tlr_malloc(sizeof(*np->status->usage));
            tailor__v1__resource_list__init(np->status->usage);
        }
        Tailor__V1__ResourceList *u = np->status->usage;
        u->cpu_millis = u->memory_bytes = u->pods = u->ephemeral_storage_bytes = 0;
        int64_t count = 0;
        for (size_t k = 0; k < cs->n_nodes; k++)
            if (strcmp(cs->nodes[k]->nodepool, np->name) == 0) {
                add_res(u, cs->nodes[k]->capacity);
                count++;
            }
        for (size_t j = 0; j < n; j++) {
            const Tailor__V1__NodeClaim *c = ncs[j];
            if (strcmp(c->nodepool, np->name) != 0)
                continue;
            bool has_node = false;
            for (size_t k = 0; k < cs->n_nodes && !has_node; k++)
                has_node = node_of_claim(cs->nodes[k], c);
            if (has_node)
                continue;
            add_res(u, claim_capacity(p, c));
            count++;
        }
        np->status->nodes = count;
    }
}

/* The NodeClaims as a Solve sees them: the watcher's, with our in-flight
 * claims replacing its copies of the same name (an adopted claim, with no
 * planned pods known, keeps the watcher's).  Returns how many; *out is a
 * new array (owned; free()) of borrowed claims. */
static size_t claims_in_view(lc_prov *p, const Tailor__V1__ClusterState *cs,
                             Tailor__V1__NodeClaim ***out)
{
    size_t nown = lc_claims_count(p->claims);
    Tailor__V1__NodeClaim **ncs = tlr_calloc(cs->n_nodeclaims + nown + 1, sizeof(*ncs));
    size_t n = 0;
    for (size_t i = 0; i < cs->n_nodeclaims; i++) {
        lc_claim *own = lc_claims_find(p->claims, cs->nodeclaims[i]->name);
        if (!own || own->adopted)
            ncs[n++] = cs->nodeclaims[i];
    }
    for (size_t i = 0; i < nown; i++) {
        lc_claim *own = lc_claims_at(p->claims, i);
        if (!own->adopted)
            ncs[n++] = own->nc;
    }
    *out = ncs;
    return n;
}

/* Our own in-flight claims (not adopted ones): what a Solve by reference
 * sends beside the referenced state, replacing the watcher's copies by
 * name.  *out: new array (owned; free()) of borrowed claims. */
static size_t own_claims(lc_prov *p, Tailor__V1__NodeClaim ***out)
{
    size_t nown = lc_claims_count(p->claims), n = 0;
    Tailor__V1__NodeClaim **v = tlr_calloc(nown + 1, sizeof(*v));
    for (size_t i = 0; i < nown; i++) {
        lc_claim *own = lc_claims_at(p->claims, i);
        if (!own->adopted)
            v[n++] = own->nc;
    }
    *out = v;
    return n;
}

/* The entry of replica id, added (the least recently heard of goes when
 * the table is full) if new; heard of now.  NULL for no id. */
static struct lc_replica_gen *replica_get(lc_prov *p, const char *id)
{
    if (!id || !*id)
        return NULL;
    size_t n = p->nreplicas, k = n;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p->replicas[i].id, id))
            k = i;
    if (k == n && n < sizeof(p->replicas) / sizeof(p->replicas[0])) {
        p->replicas[k] = (struct lc_replica_gen){ .id = tlr_strdup(id) };
        p->nreplicas++;
    } else if (k == n) {   /* full: the least recently heard of goes */
        k = 0;
        for (size_t i = 1; i < n; i++)
            if (p->replicas[i].used < p->replicas[k].used)
                k = i;
        free(p->replicas[k].id);
        p->replicas[k] = (struct lc_replica_gen){ .id = tlr_strdup(id) };
    }
    p->replicas[k].used = ++p->rclock;
    return &p->replicas[k];
}

/* Replica id holds (epoch, gen); gen 0 = nothing we can build on. */
static void replica_note(lc_prov *p, const char *id, int64_t epoch, uint64_t gen)
{
    struct lc_replica_gen *r = replica_get(p, id);
    if (r) {
        r->epoch = epoch;
        r->gen = gen;
    }
}

/* Replica id answered a Solve: it holds what that Solve sent. */
static void replica_fed(lc_prov *p, const char *id)
{
    struct lc_replica_gen *r = replica_get(p, id);
    if (r)
        r->starved = false;
}

/* Replica id missed what a Solve named (cluster state or catalogs).  The
 * resend goes wherever the transport sends it -- calls take the
 * connections in turn, so usually to another replica -- and the next
 * call by reference that reaches this one misses again: a replica added
 * by a scale-out would never solve.  Until it answers, Solves carry the
 * whole state and the catalogs (replica_starved). */
static void replica_starve(lc_prov *p, const char *id)
{
    struct lc_replica_gen *r = replica_get(p, id);
    if (r)
        r->missed_at = p->solve_seq;
    if (r && !r->starved) {
        r->starved = true;
        TLR_INFO(p->o.log, "solver replica holds nothing to build on: Solves carry the whole "
                 "cluster state and catalogs until it answers one", TLR_S("solver", id));
    }
}

/* A replica that missed within the last LC_REPLICA_STARVED_SOLVES Solves
 * and still holds nothing to build on (one gone since stops counting). */
static bool replica_starved(const lc_prov *p)
{
    for (size_t i = 0; i < p->nreplicas; i++)
        if (p->replicas[i].starved &&
            p->solve_seq - p->replicas[i].missed_at < LC_REPLICA_STARVED_SOLVES)
            return true;
    return false;
}

/* The generations of epoch the replicas are known to hold (out[16]). */
static size_t replica_bases(const lc_prov *p, int64_t epoch, uint64_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nreplicas; i++)
        if (p->replicas[i].epoch == epoch && p->replicas[i].gen)
            out[n++] = p->replicas[i].gen;
    return n;
}

/* The base for the next delta to the solvers after a ClusterMiss: the
 * newest generation the replica holds that we hold too; 0 = none. */
static uint64_t common_base(lc_prov *p, const Tailor__V1__SolveResponse *miss)
{
    const Tailor__V1__ClusterState *cs = tlr_cstate_view_state(p->view);
    uint64_t mine[8];
    size_t n = tlr_cstate_held(p->states, cs->watcher_epoch_unix_ms, mine, 8);
    n = n < 8 ? n : 8;
    uint64_t best = 0;
    for (size_t i = 0; i < miss->n_held_generations; i++)
        for (size_t k = 0; k < n; k++)
            if (miss->held_generations[i] == mine[k] && mine[k] > best && mine[k] < cs->generation)
                best = mine[k];
    return best;
}

static int prov_solve(lc_prov *p, Tailor__V1__SolveResponse **out, int64_t *spent, size_t *bytes)
{
    Tailor__V1__PendingBatch *b = p->batch;
    Tailor__V1__ClusterState cs = TAILOR__V1__CLUSTER_STATE__INIT;
    if (b->cluster)
        cs = *b->cluster;
    Tailor__V1__NodeClaim **ncs = NULL;
    size_t n = claims_in_view(p, &cs, &ncs);
    cs.nodeclaims = ncs;
    cs.n_nodeclaims = n;
    pool_usage(p, &cs, ncs, n);

    tlr_clnt_cats r = { 0 };
    build_refs(p, &cs, &r);
    Tailor__V1__SolveRequest req = TAILOR__V1__SOLVE_REQUEST__INIT;
    req.batch_id = b->batch_id;
    req.pending_pods = b->pending_pods;
    req.n_pending_pods = b->n_pending_pods;
    req.cluster = &cs;
    req.catalogs = r.refs;
    req.n_catalogs = r.n;
    lc_ice_list(p->ice, &req.unavailable_offerings, &req.n_unavailable_offerings);
    req.now_unix_ms = lc_prov_now(p);
    Tailor__V1__SolveOptions opts = TAILOR__V1__SOLVE_OPTIONS__INIT;
    opts.min_values_policy = p->o.min_values_policy;
    opts.preference_policy = p->o.preference_policy;
    req.options = &opts;

    /* The cluster by reference when it came so: a delta from the state a
     * solver last took (a replica that does not hold it says which it
     * holds, and the resend is a delta from one of those, or whole). */
    Tailor__V1__ClusterState by_ref;
    Tailor__V1__ClusterRef ref = TAILOR__V1__CLUSTER_REF__INIT;
    Tailor__V1__NodeClaim **own = NULL;
    const Tailor__V1__ClusterState *whole = p->view ? tlr_cstate_view_state(p->view) : NULL;
    uint64_t bases[16];
    p->solve_seq++;
    bool starved = replica_starved(p);
    if (whole) {
        size_t nown = own_claims(p, &own);
        size_t nb = starved ? 0 : replica_bases(p, whole->watcher_epoch_unix_ms, bases);
        tlr_cstate_delta(p->states, p->view, bases, nb, &ref);
        tlr_cstate_by_ref(p->view, own, nown, &ref, &by_ref);
        req.cluster = &by_ref;
    }
    if (starved)
        tlr_clnt_cats_inline(&r);

    int64_t t0 = lc_prov_mono(p);
    Tailor__V1__SolveResponse *resp = NULL;
    int rc = TLR_OK;
    bool whole_sent = starved && whole;
    int cluster_misses = 0;
    for (int attempt = 0;; attempt++) {
        rc = p->o.solver.solve(p->o.solver.arg, &req, &resp);
        if (rc != TLR_OK)
            break;
        bool again = true;
        if (whole && req.cluster == &by_ref && !resp->cluster_miss && !resp->catalog_miss &&
            resp->cluster_generation != whole->generation) {
            /* A replica that predates by_ref solved against no nodes:
             * never act on that; the whole state goes inline. */
            TLR_WARN(p->o.log, "solver does not take the cluster by reference: resending it inline",
                     TLR_S("solver", resp->solver_replica_id));
            req.cluster = &cs;
        } else if (resp->cluster_miss && whole && !whole_sent) {
            /* The replica does not hold a base we named: note what it
             * holds and send a delta valid for it too; on a second miss
             * (the transport picked yet another replica) the whole state,
             * which any replica takes. */
            replica_note(p, resp->solver_replica_id, whole->watcher_epoch_unix_ms,
                         common_base(p, resp));
            replica_starve(p, resp->solver_replica_id);
            size_t nb = ++cluster_misses < 2 ? replica_bases(p, whole->watcher_epoch_unix_ms, bases)
                                             : 0;
            tlr_cstate_ref_clear(&ref);
            tlr_cstate_delta(p->states, p->view, bases, nb, &ref);
            whole_sent = ref.base_generation == 0;
            TLR_INFO(p->o.log, "solver does not hold the cluster state: resending",
                     TLR_S("solver", resp->solver_replica_id),
                     TLR_I("generation", (int64_t)whole->generation),
                     TLR_I("base_generation", (int64_t)ref.base_generation),
                     TLR_I("bases", (int64_t)(ref.base_generation ? 1 + ref.n_also_applies_to : 0)));
        } else if (tlr_clnt_cats_resend(&r, resp->catalog_miss, resp->cluster_miss)) {
            /* The replica does not hold our catalogs: they go in full. */
            replica_starve(p, resp->solver_replica_id);
        } else {
            again = false;
        }
        if (!again || attempt >= 5)
            break;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        resp = NULL;
    }
    if (bytes)   /* the last attempt's: one more walk of the request, not one per attempt */
        *bytes = tailor__v1__solve_request__get_packed_size(&req);
    if (rc == TLR_OK && (resp->catalog_miss || resp->cluster_miss)) {
        TLR_WARN(p->o.log, "solver still misses what was resent",
                 TLR_S("solver", resp->solver_replica_id),
                 TLR_S("status", resp->status ? resp->status->message : ""));
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        rc = TLR_E_REMOTE;
    }
    if (rc == TLR_OK && whole && req.cluster == &by_ref)
        replica_note(p, resp->solver_replica_id, whole->watcher_epoch_unix_ms, whole->generation);
    if (rc == TLR_OK)
        replica_fed(p, resp->solver_replica_id);
    *spent += lc_prov_mono(p) - t0;
    tlr_cstate_ref_clear(&ref);
    free(own);
    lc_ice_list_free(req.unavailable_offerings, req.n_unavailable_offerings);
    tlr_clnt_cats_clear(&r);
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
    decide(p, pod_uid, LC_DECIDED_SCHEDULED);
    char m[256];
    snprintf(m, sizeof(m), "Pod should schedule on: nodeclaim/%s", claim);
    lc_prov_event(p, "Pod", pod->namespace_, pod->name, pod->uid, "Normal", "Nominated", m);
    if (p->m_pods)
        tlr_metrics_counter_inc(p->m_pods, NULL);
}

/* Pods nothing could be planned for get a FailedScheduling Warning with
 * the solver's reasons -- once per pod per 5 minutes or when the reason
 * changes, so a pod pending for an hour is not an event storm.  A pod
 * that avoids Karpenter's nodes on purpose (karpenter.sh/nodepool
 * DoesNotExist) gets none, as in Karpenter. */
static void tell_unplaced(lc_prov *p, const Tailor__V1__SolveResponse *resp)
{
    int64_t now = lc_prov_now(p);
    for (size_t i = 0; i < resp->n_pod_errors; i++) {
        const Tailor__V1__PodError *e = resp->pod_errors[i];
        if (pod_ignored(e)) {
            char why[512];
            bool quiet = false;
            tlr_ks_pod_ignored(find_pod(p, e->pod_uid), why, sizeof(why), &quiet);
            if (quiet)
                continue;
        }
        char msg[1024];
        size_t off = (size_t)snprintf(msg, sizeof(msg), "Failed to schedule pod, %s",
                                      e->status && e->status->message[0] ? e->status->message
                                                                         : "no NodePool fits");
        for (size_t k = 0; k < e->n_reasons && off < sizeof(msg); k++)
            off += (size_t)snprintf(msg + off, sizeof(msg) - off, "; %s%s%s",
                                    e->reasons[k]->nodepool, e->reasons[k]->nodepool[0] ? ": " : "",
                                    e->reasons[k]->reason);
        uint64_t h = tlr_fnv1a64_str(TLR_FNV64_BASIS_SHORT, msg);
        lc_told *t = NULL;
        for (size_t k = 0; k < p->ntold && !t; k++)
            if (strcmp(p->told[k].uid, e->pod_uid) == 0)
                t = &p->told[k];
        if (t && t->what == h && now - t->at_ms < TOLD_EVERY_MS)
            continue;
        if (!t) {
            if (p->ntold >= TOLD_MAX)
                continue;
            TLR_GROW(p->told, p->captold, p->ntold + 1);
            t = &p->told[p->ntold++];
            t->uid = tlr_strdup(e->pod_uid);
        }
        t->what = h;
        t->at_ms = now;
        lc_prov_event(p, "Pod", e->namespace_, e->name, e->pod_uid, "Warning", "FailedScheduling",
                      msg);
    }
    /* Forget pods that are no longer pending. */
    for (size_t k = 0; k < p->ntold;) {
        if (find_pod(p, p->told[k].uid)) {
            k++;
            continue;
        }
        free(p->told[k].uid);
        p->told[k] = p->told[--p->ntold];
    }
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
    int64_t now = lc_prov_now(p);
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

/* The instance type metrics (catmetrics.h) for the latest batch's
 * NodePools, each with its NodeClass's catalog; a pool whose NodeClass
 * the launcher does not know has none, as in Karpenter. */
static void update_catmetrics(lc_prov *p)
{
    if (!p->catm)
        return;
    const Tailor__V1__ClusterState *cs = p->batch ? p->batch->cluster : NULL;
    size_t n = cs ? cs->n_nodepools : 0, k = 0;
    lc_catmetrics_pool *v = tlr_calloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const Tailor__V1__NodePool *np = cs->nodepools[i];
        lc_class *c = np->node_class_ref ? lc_classes_get(p->classes, np->node_class_ref->name) : NULL;
        if (c && p->catalog)
            v[k++] = (lc_catmetrics_pool){ np, lc_class_catalog(c, p->catalog) };
    }
    lc_catmetrics_update(p->catm, v, k, p->ice);
    free(v);
    p->catm_due = lc_prov_mono(p) + 30000;
}

/* ---- plan gates (plangate.h) ------------------------------------------ */

static bool claim_needs_gate(const lc_prov *p, const Tailor__V1__NodeClaim *nc)
{
    for (size_t j = 0; j < nc->n_planned_pod_uids; j++)
        if (lc_plan_gate_pod(find_pod(p, nc->planned_pod_uids[j])))
            return true;
    return false;
}

/* The new claims ncs[0..n) of one plan (named): when two or more and one
 * holds a pod with a DoNotSchedule spread, they all join one gate, named
 * after the first: a spread pod may land on any of the plan's nodes its
 * affinity allows, so any of them registering early is a domain alone. */
static void plan_gate_mark(lc_prov *p, Tailor__V1__NodeClaim **ncs, size_t n)
{
    if (p->o.plan_gate_ms <= 0 || n < 2)
        return;
    bool need = false;
    for (size_t i = 0; i < n && !need; i++)
        need = claim_needs_gate(p, ncs[i]);
    if (!need)
        return;
    char *name = tlr_strdup(ncs[0]->name);
    for (size_t i = 0; i < n; i++)
        lc_plan_gate_set(ncs[i], name);
    TLR_INFO(p->o.log, "plan gate: these nodeclaims register together", TLR_S("gate", name),
             TLR_I("nodeclaims", (int64_t)n));
    free(name);
}

/* Must claim c, whose Node appeared, wait before registering?  A claim
 * of a plan's first stage waits while another first-stage claim of its
 * gate is still without a Node; one of its second stage (plangate.h)
 * while a first-stage claim of its gate has not registered, and then until
 * a batch received since shows none of the first stage's planned pods
 * pending or LC_PLAN_STAGE_SETTLE_MS have passed since the last of them
 * registered.  Either within the gate timeout since c's launch. */
static bool plan_gate_closed(lc_prov *p, const lc_claim *c, const tlr_knodes *nodes, int64_t now)
{
    const char *gate = lc_plan_gate_of(c->nc);
    if (!gate || p->o.plan_gate_ms <= 0)
        return false;
    bool second = lc_plan_stage(c->nc) == 2;
    size_t waiting = 0, total = 0, pending = 0;
    int64_t last_reg = 0;
    for (size_t i = 0; i < lc_claims_count(p->claims); i++) {
        lc_claim *d = lc_claims_at(p->claims, i);
        const char *g = lc_plan_gate_of(d->nc);
        if (!g || strcmp(g, gate) != 0 || lc_plan_stage(d->nc) == 2)
            continue;
        total++;
        const Tailor__V1__NodeClaimStatus *st = d->nc->status;
        if (st && st->phase == TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED)
            continue;
        if (!second) {
            if (!lc_node_for_instance(nodes, st ? st->instance_id : NULL))
                waiting++;
            continue;
        }
        if (!d->registered_ms) {
            waiting++;
            continue;
        }
        if (d->registered_ms > last_reg)
            last_reg = d->registered_ms;
        for (size_t j = 0; j < d->nc->n_planned_pod_uids; j++)
            pending += find_pod(p, d->nc->planned_pod_uids[j]) != NULL;
    }
    if (second && !waiting && total &&
        (p->batch_ms <= last_reg || pending) && now - last_reg < LC_PLAN_STAGE_SETTLE_MS)
        waiting = pending ? pending : 1;   /* the scheduler is still binding the first stage */
    if (!waiting)
        return false;
    if (now - c->launched_ms >= p->o.plan_gate_ms) {
        TLR_WARN(p->o.log, "plan gate timed out: registering without the rest of the plan's nodes",
                 TLR_S("nodeclaim", c->nc->name), TLR_S("gate", gate),
                 TLR_I("nodes_missing", (int64_t)waiting), TLR_I("nodeclaims", (int64_t)total));
        return false;
    }
    TLR_DEBUG(p->o.log, second ? "plan gate: the second stage waits for the first"
                               : "plan gate: waiting for the plan's other nodes",
              TLR_S("nodeclaim", c->nc->name), TLR_S("gate", gate),
              TLR_I("waiting", (int64_t)waiting));
    return true;
}

static void count_cluster(lc_prov *p, const char *result)
{
    if (p->m_cluster)
        tlr_metrics_counter_inc(p->m_cluster, (const char *const[]){ result });
}

/* A Snapshot of the watcher's current cluster by reference, as a delta
 * from the newest state we hold of epoch: its cluster replaces b's, and
 * is resolved into *view.  An older watcher that answers inline is used
 * inline (*view stays NULL). */
static int fetch_cluster(lc_prov *p, Tailor__V1__PendingBatch *b, tlr_cstate_view **view)
{
    Tailor__V1__SnapshotRequest req = TAILOR__V1__SNAPSHOT_REQUEST__INIT;
    req.by_reference = true;
    req.watcher_epoch_unix_ms = b->cluster->watcher_epoch_unix_ms;
    uint64_t held[1];
    if (tlr_cstate_held(p->states, req.watcher_epoch_unix_ms, held, 1))
        req.delta_base_generation = held[0];
    Tailor__V1__SnapshotResponse *resp = NULL;
    int rc = p->o.watcher.snapshot(p->o.watcher.arg, &req, &resp);
    if (rc) {
        TLR_WARN(p->o.log, "batch skipped: its cluster delta is from a state not held and the "
                 "watcher's Snapshot failed", TLR_S("batch", b->batch_id), TLR_ERR(rc));
        return rc;
    }
    if (!resp->cluster) {
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        TLR_WARN(p->o.log, "batch skipped: the watcher's Snapshot has no cluster",
                 TLR_S("batch", b->batch_id));
        return TLR_E_DECODE;
    }
    char err[256] = "";
    if (resp->cluster->by_ref &&
        (rc = tlr_cstate_resolve(p->states, resp->cluster, view, err, sizeof(err)))) {
        TLR_WARN(p->o.log, "batch skipped: the watcher's Snapshot does not resolve",
                 TLR_S("batch", b->batch_id), TLR_S("why", err), TLR_ERR(rc));
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        return rc;
    }
    TLR_INFO(p->o.log, "cluster state fetched from the watcher",
             TLR_S("batch", b->batch_id), TLR_I("base_generation", (int64_t)req.delta_base_generation),
             TLR_I("generation", (int64_t)resp->cluster->generation),
             TLR_I("delta_base", resp->cluster->by_ref
                                     ? (int64_t)resp->cluster->by_ref->base_generation : -1));
    tailor__v1__cluster_state__free_unpacked(b->cluster, NULL);
    b->cluster = resp->cluster;
    resp->cluster = NULL;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return TLR_OK;
}

/* b's cluster, when it came by reference, resolved into *view (NULL when
 * inline): the delta applied to the state we hold, or, when its base is
 * not held (this launcher just started, or missed a batch), a Snapshot
 * fetched instead. */
static int take_cluster(lc_prov *p, Tailor__V1__PendingBatch *b, tlr_cstate_view **view)
{
    *view = NULL;
    if (!b->cluster || !b->cluster->by_ref)
        return TLR_OK;
    char err[256] = "";
    int rc = tlr_cstate_resolve(p->states, b->cluster, view, err, sizeof(err));
    if (rc == TLR_OK) {
        count_cluster(p, "delta");
        return TLR_OK;
    }
    if (rc != TLR_E_NOTFOUND || !p->o.watcher.snapshot) {
        count_cluster(p, rc == TLR_E_NOTFOUND ? "skipped" : "invalid");
        TLR_WARN(p->o.log, "batch skipped: its cluster by reference does not resolve",
                 TLR_S("batch", b->batch_id), TLR_S("why", err), TLR_ERR(rc));
        return rc;
    }
    rc = fetch_cluster(p, b, view);
    count_cluster(p, rc ? "skipped" : "snapshot");
    return rc;
}

void lc_prov_follow(lc_prov *p, Tailor__V1__PendingBatch *b)
{
    tlr_cstate_view *view = NULL;
    char err[256];
    if (b->cluster && b->cluster->by_ref &&
        tlr_cstate_resolve(p->states, b->cluster, &view, err, sizeof(err)) == TLR_OK)
        tlr_cstate_view_free(view);
    protobuf_c_message_free_unpacked(&b->base, NULL);
}

int lc_prov_batch(lc_prov *p, Tailor__V1__PendingBatch *b, lc_batch_result *res)
{
    lc_batch_result r = { 0 };
    int64_t t_arrival = lc_prov_mono(p);
    p->fleets_done_mono = p->fleets_issued_mono = 0;
    tlr_cstate_view *view = NULL;
    int crc = take_cluster(p, b, &view);
    if (crc) {
        protobuf_c_message_free_unpacked(&b->base, NULL);
        if (res)
            *res = r;
        return crc;
    }
    batch_drop(p);
    p->batch = b;
    p->batch_ms = lc_prov_now(p);
    if (view) {
        p->view = view;
        p->wire_cluster = b->cluster;
        b->cluster = (Tailor__V1__ClusterState *)tlr_cstate_view_state(view);
    }
    index_batch(p);
    if (!p->adopted)
        lc_prov_adopt(p);
    lc_classes_sync(p->classes, b->cluster);
    update_catmetrics(p);
    drop_settled(p);
    char why[256];
    if (!lc_prov_identity_ok(p, why, sizeof(why))) {
        /* Claims wait: a node that cannot join is worse than none. */
        TLR_WARN(p->o.log, "not provisioning", TLR_S("why", why),
                 TLR_I("pods", (int64_t)b->n_pending_pods));
        if (res)
            *res = r;
        return TLR_E_NOTREADY;
    }
    r.inflight = (int)lc_claims_count(p->claims);
    int rc = TLR_OK;
    int64_t launch_t0 = 0;
    for (int round = 0; round < LC_MAX_REPLANS; round++) {
        Tailor__V1__SolveResponse *resp = NULL;
        size_t bytes = 0;
        rc = prov_solve(p, &resp, &r.solve_ms, round == 0 ? &bytes : NULL);
        if (round == 0)
            r.solve_bytes = (int64_t)bytes;
        if (round == 0 && rc == TLR_OK)
            r.solver_ms = resp->solve_duration_ms;
        if (p->m_solves)
            tlr_metrics_counter_inc(p->m_solves, (const char *const[]){ rc ? "error" : "ok" });
        if (rc)
            break;
        r.solves++;
        r.plan_cost += resp->total_cost_per_hour;
        r.pods_unplaced = (int)resp->n_pod_errors;
        size_t ignored = 0;
        for (size_t i = 0; i < resp->n_pod_errors; i++)
            ignored += pod_ignored(resp->pod_errors[i]);
        if (p->m_unschedulable) {
            /* Karpenter drops the pods it ignores before scheduling: they
             * are not among its unschedulable pods. */
            tlr_metrics_gauge_set(p->m_unschedulable, (const char *const[]){ "provisioner" },
                                  (double)(resp->n_pod_errors - ignored));
            tlr_metrics_gauge_set(p->m_ignored, NULL, (double)ignored);
        }
        for (size_t i = 0; i < resp->n_bindings; i++) {
            const Tailor__V1__Binding *bd = resp->bindings[i];
            if (bd->target_case == TAILOR__V1__BINDING__TARGET_NODECLAIM_NAME) {
                nominate(p, bd->pod_uid, bd->nodeclaim_name);
                r.pods_nominated++;
            } else {
                decide(p, bd->pod_uid, LC_DECIDED_SCHEDULED);   /* room on a Node */
            }
        }
        size_t n = resp->n_new_nodeclaims;
        Tailor__V1__NodeClaim **ncs = tlr_calloc(n + 1, sizeof(*ncs));
        for (size_t i = 0; i < n; i++) {
            Tailor__V1__NodeClaim *nc = resp->new_nodeclaims[i];
            resp->new_nodeclaims[i] = NULL;   /* handed to the registry below */
            char name[64];
            lc_claim_name(nc->nodepool, rnd(p), name, sizeof(name));
            if (nc->name != protobuf_c_empty_string)
                free(nc->name);
            nc->name = tlr_strdup(name);
            ncs[i] = nc;
        }
        /* Its claims are ours now: the answer keeps only its pod errors. */
        resp->n_new_nodeclaims = 0;
        plan_gate_mark(p, ncs, n);
        if (n > 0 && launch_t0 == 0)
            launch_t0 = lc_prov_mono(p);
        lc_claim **made = tlr_calloc(n + 1, sizeof(*made));
        int64_t tc = lc_prov_mono(p);
        create_claims(p, ncs, n, "provisioning", made);
        r.claims_ms += lc_prov_mono(p) - tc;
        lc_launch_item *items = tlr_calloc(n + 1, sizeof(*items));
        size_t ni = 0;
        for (size_t i = 0; i < n; i++) {
            if (!made[i]) {
                r.failed++;
                continue;
            }
            for (size_t j = 0; j < made[i]->nc->n_planned_pod_uids; j++)
                nominate(p, made[i]->nc->planned_pod_uids[j], made[i]->nc->name);
            r.pods_nominated += (int)made[i]->nc->n_planned_pod_uids;
            items[ni++].c = made[i];
        }
        r.fleets += (int)lc_launch_claims(p, items, ni);
        bool capacity_failed = false;
        for (size_t i = 0; i < ni; i++) {
            if (items[i].rc == TLR_OK)
                r.launched++;
            else
                r.failed++;
            capacity_failed |= items[i].rc == TLR_E_CAPACITY;
        }
        free(items);
        free(made);
        free(ncs);
        if (ni > 0)
            r.launch_ms = lc_prov_mono(p) - launch_t0;
        /* The pods this plan could not place are told why -- unless a
         * re-plan follows, which may place them. */
        bool replan = capacity_failed && round + 1 < LC_MAX_REPLANS;
        if (!replan) {
            tell_unplaced(p, resp);
            for (size_t i = 0; i < resp->n_pod_errors; i++)
                decide(p, resp->pod_errors[i]->pod_uid, LC_DECIDED_FAILED);
        }
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        /* Re-plan at once with the larger ICE cache: the solver falls back
         * to other offerings and pools for the pods whose claim failed. */
        if (!replan)
            break;
    }
    publish_decisions(p);
    r.ice = (int)lc_ice_count(p->ice);
    if (p->fleets_done_mono)
        r.fleets_ms = p->fleets_done_mono - t_arrival;
    if (p->fleets_issued_mono)
        r.issued_ms = p->fleets_issued_mono - t_arrival;
    if (res)
        *res = r;
    return rc;
}

/* ---- adoption after a restart ----------------------------------------- */

void lc_prov_forget_adoption(lc_prov *p)
{
    /* Another replica may have led in between and deleted, launched or
     * adopted what this one remembers in flight: a new term starts from
     * what Kubernetes and EC2 hold (adoption), not from memory. */
    while (lc_claims_count(p->claims))
        lc_claims_remove(p->claims, lc_claims_at(p->claims, 0)->nc->name);
    p->adopted = false;
}

int lc_prov_adopt(lc_prov *p)
{
    tlr_kclaims claims = { 0 };
    tlr_ec2_instances inst = { 0 };
    tlr_aws_error err = { 0 };
    int rc = p->o.kube.claims_list(p->o.kube.arg, &claims);
    if (rc) {
        TLR_WARN(p->o.log, "adoption: nodeclaims not listed", TLR_ERR(rc));
        return rc;
    }
    if ((rc = p->o.cloud.instances(p->o.cloud.arg, NULL, &inst, &err))) {
        TLR_WARN(p->o.log, "adoption: instances not listed", TLR_S("aws_code", err.code),
                 TLR_ERR(rc));
        tlr_kclaims_free(&claims);
        return rc;
    }
    size_t kept = 0, deleted = 0;
    for (size_t i = 0; i < claims.n; i++) {
        const tlr_kclaim *k = &claims.v[i];
        if (k->deletion_ms != 0 || k->initialized || lc_claims_find(p->claims, k->name))
            continue;
        const tlr_ec2_instance *in = NULL;
        for (size_t j = 0; j < inst.n && !in; j++) {
            const char *tag = tlr_ec2_instance_tag(&inst.v[j], TLR_TAG_NODECLAIM);
            if ((k->instance_id[0] && strcmp(inst.v[j].id, k->instance_id) == 0) ||
                (tag && strcmp(tag, k->name) == 0))
                in = &inst.v[j];
        }
        if (!in) {
            if (k->instance_id[0])
                continue;   /* launched, instance gone: GC deletes the claim */
            /* Written, never launched: the launcher that wrote it is gone.
             * Delete it; its pods are planned again. */
            TLR_INFO(p->o.log, "adoption: deleting nodeclaim that was never launched",
                     TLR_S("nodeclaim", k->name));
            if (p->o.kube.claim_delete(p->o.kube.arg, k->name) == TLR_OK) {
                lc_prov_count_terminated(p, k->nodepool, NULL);
                deleted++;
            }
            continue;
        }
        Tailor__V1__NodeClaim *nc = tlr_malloc(sizeof(*nc));
        tailor__v1__node_claim__init(nc);
        nc->name = tlr_strdup(k->name);
        nc->nodepool = tlr_strdup(k->nodepool);
        nc->node_class = tlr_strdup(k->nodeclass);
        lc_claim *c = lc_claims_add(p->claims, nc, k->creation_ms);
        if (!c)
            continue;
        c->adopted = true;
        Tailor__V1__NodeClaimStatus *st = lc_prov_status_of(c);
        char pid[256];
        tlr_provider_id_format(pid, sizeof(pid), in->zone, in->id);
        st->instance_id = tlr_strdup(in->id);
        st->provider_id = tlr_strdup(pid);
        st->instance_type = tlr_strdup(in->type);
        st->zone = tlr_strdup(in->zone);
        st->image_id = tlr_strdup(in->image_id);
        st->capacity_type = in->spot ? TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_SPOT
                                     : TAILOR__V1__CAPACITY_TYPE__CAPACITY_TYPE_ON_DEMAND;
        st->phase = TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED;
        c->launched_ms = in->launch_ms ? in->launch_ms : lc_prov_now(p);
        if (!k->provider_id[0])
            write_status(p, c);   /* launched, but its status was never written */
        kept++;
    }
    if (kept || deleted)
        TLR_INFO(p->o.log, "adopted nodeclaims of a previous launcher", TLR_I("tracked", (int64_t)kept),
                 TLR_I("deleted", (int64_t)deleted));
    p->adopted = true;
    tlr_ec2_instances_free(&inst);
    tlr_kclaims_free(&claims);
    return TLR_OK;
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

/* One dimension of a limit: used + add against limit. */
static bool over(bool has, int64_t limit, int64_t used, int64_t add, const char *what,
                 const char *unit, const char *pool, char *why, size_t len)
{
    if (!has || used + add <= limit)
        return false;
    snprintf(why, len, "NodePool %s limit %s %lld%s: %lld%s in use or in flight, this NodeClaim "
             "adds %lld%s", pool, what, (long long)limit, unit, (long long)used, unit,
             (long long)add, unit);
    return true;
}

/* Whether launching claim in keeps its NodePool within spec.limits, with
 * the pool's Nodes and every claim in flight (ours included) counted as a
 * Solve counts them.  The limits and Nodes are those of the last batch; a
 * pool no batch has shown is not checked.  false with why filled when the
 * claim would pass a limit. */
static bool within_limits(lc_prov *p, const Tailor__V1__NodeClaim *in, char *why, size_t len)
{
    Tailor__V1__ClusterState *b = p->batch ? p->batch->cluster : NULL;
    Tailor__V1__NodePool *np = NULL;
    for (size_t i = 0; b && i < b->n_nodepools && !np; i++)
        if (strcmp(b->nodepools[i]->name, in->nodepool) == 0)
            np = b->nodepools[i];
    if (!np || !np->limits)
        return true;
    Tailor__V1__ClusterState cs = *b;
    Tailor__V1__NodeClaim **ncs = NULL;
    size_t n = claims_in_view(p, &cs, &ncs);
    pool_usage(p, &cs, ncs, n);
    free(ncs);
    const Tailor__V1__NodePoolLimits *l = np->limits;
    const Tailor__V1__ResourceList *u = np->status->usage;
    const Tailor__V1__ResourceList *add = claim_capacity(p, in);
    Tailor__V1__ResourceList none = TAILOR__V1__RESOURCE_LIST__INIT;
    if (!add)
        add = &none;
    return !(over(l->has_cpu, l->cpu_millis, u->cpu_millis, add->cpu_millis, "cpu", "m",
                  np->name, why, len) ||
             over(l->has_memory, l->memory_bytes, u->memory_bytes, add->memory_bytes, "memory",
                  "B", np->name, why, len) ||
             over(l->has_pods, l->pods, u->pods, add->pods, "pods", "", np->name, why, len) ||
             over(l->has_ephemeral_storage, l->ephemeral_storage_bytes,
                  u->ephemeral_storage_bytes, add->ephemeral_storage_bytes, "ephemeral-storage",
                  "B", np->name, why, len) ||
             over(l->has_nodes, l->nodes, np->status->nodes, 1, "nodes", "", np->name, why,
                  len));
}

void lc_prov_launch(lc_prov *p, const Tailor__V1__LaunchRequest *req,
                    Tailor__V1__LaunchResponse **out)
{
    Tailor__V1__LaunchResponse *resp = tlr_malloc(sizeof(*resp));
    tailor__v1__launch_response__init(resp);
    resp->results = tlr_calloc(req->n_nodeclaims + 1, sizeof(*resp->results));
    for (size_t i = 0; i < req->n_unavailable_offerings; i++)
        lc_ice_merge(p->ice, req->unavailable_offerings[i]);
    char why[256];
    if (!lc_prov_identity_ok(p, why, sizeof(why))) {
        for (size_t i = 0; i < req->n_nodeclaims; i++) {
            Tailor__V1__LaunchResult *r = tlr_malloc(sizeof(*r));
            tailor__v1__launch_result__init(r);
            r->nodeclaim_name = tlr_strdup(req->nodeclaims[i]->name);
            r->status = new_status(TLR_E_UNAVAILABLE, "ClusterIdentityIncomplete", why);
            resp->results[resp->n_results++] = r;
        }
        *out = resp;
        return;
    }
    if (p->batch)
        lc_classes_sync(p->classes, p->batch->cluster);
    for (size_t i = 0; i < req->n_nodeclaims; i++)
        lc_classes_ensure(p->classes, req->nodeclaims[i]->node_class);
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
        /* The name becomes an API path and an EC2 tag: nothing the API
         * server would refuse goes further (the bytes are not echoed in
         * the message: they may not even be text). */
        if (!tlr_ks_dns1123_subdomain(in->name)) {
            r->status = new_status(TLR_E_INVAL, "InvalidName", "a NodeClaim name must be a "
                                   "DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
                                   "alphanumeric at both ends, at most 253 characters)");
            TLR_WARN(p->o.log, "launch refused: invalid NodeClaim name",
                     TLR_S("nodeclaim", in->name));
            continue;
        }
        lc_claim *c = lc_claims_find(p->claims, in->name);
        if (c) {   /* idempotent: the second request describes the first launch */
            fill_result(r, c);
            r->status = new_status(TLR_OK, "", "");
            continue;
        }
        /* Nothing is bought past the pool's limits, whatever the caller
         * simulated: the cluster may have grown since. */
        char lim[512];
        if (!within_limits(p, in, lim, sizeof(lim))) {
            TLR_WARN(p->o.log, "launch refused: NodePool limit", TLR_S("nodeclaim", in->name),
                     TLR_S("why", lim));
            r->status = new_status(TLR_E_CAPACITY, "NodePoolLimitExceeded", lim);
            continue;
        }
        /* Not ours in memory: after a restart the instance may exist. */
        tlr_ec2_instances found = { 0 };
        tlr_aws_error err = { 0 };
        Tailor__V1__NodeClaim *copy = lc_claim_copy(in);
        lc_claim *made = NULL;
        create_claims(p, &copy, 1, req->reason[0] ? req->reason : "launch", &made);
        if (!made) {
            r->status = new_status(TLR_E_IO, "NodeClaimNotCreated", "Kubernetes refused it");
            continue;
        }
        c = made;
        if (p->o.cloud.instances(p->o.cloud.arg, in->name, &found, &err) == TLR_OK &&
            found.n > 0) {
            Tailor__V1__NodeClaimStatus *st = lc_prov_status_of(c);
            char pid[256];
            tlr_provider_id_format(pid, sizeof(pid), found.v[0].zone, found.v[0].id);
            st->instance_id = tlr_strdup(found.v[0].id);
            st->provider_id = tlr_strdup(pid);
            st->instance_type = tlr_strdup(found.v[0].type);
            st->zone = tlr_strdup(found.v[0].zone);
            c->launched_ms = lc_prov_now(p);
            lc_prov_set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_LAUNCHED);
            fill_result(r, c);
            r->status = new_status(TLR_OK, "", "");
            tlr_ec2_instances_free(&found);
            continue;
        }
        tlr_ec2_instances_free(&found);
        lc_launch_item it = { .c = c, .r = r };
        lc_launch_claims(p, &it, 1);
        if (it.rc == TLR_OK) {
            fill_result(r, lc_claims_find(p->claims, in->name));
            r->status = new_status(TLR_OK, "", "");
        } else {
            r->status = new_status(it.rc, it.rc == TLR_E_CAPACITY ? "InsufficientCapacity"
                                                                  : "LaunchFailed", it.msg);
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
        int64_t t0 = lc_prov_mono(p);
        rc = p->o.cloud.terminate(p->o.cloud.arg, ids, 1, &err);
        lc_prov_observe(p, "Delete", rc, t0);
        if (rc) {
            if (p->m_term_fail) {
                lc_claim *c = claim && claim[0] ? lc_claims_find(p->claims, claim) : NULL;
                const char *zone = c && c->nc->status ? c->nc->status->zone : "";
                tlr_metrics_counter_inc(p->m_term_fail, (const char *const[]){ zone, zone_id_of(p, zone) });
            }
            return rc;
        }
    }
    if (claim && claim[0]) {
        lc_claim *c = lc_claims_find(p->claims, claim);
        int drc = p->o.kube.claim_delete(p->o.kube.arg, claim);
        if (drc && drc != TLR_E_NOTFOUND)
            return drc;
        lc_prov_count_terminated(p, c ? c->nc->nodepool : "", c ? c->nc : NULL);
        if (c) {
            lc_prov_set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_TERMINATED);
            lc_claims_remove(p->claims, claim);
        }
    }
    return TLR_OK;
}

/* Is instance id one of this cluster's NodeClaim instances: live, tagged
 * for the cluster and carrying a karpenter.sh/nodeclaim or
 * karpenter.sh/nodepool tag (GC's rule)?  TLR_OK with *ours set; an EC2
 * error otherwise. */
/* Whether instance id is one of this cluster's NodeClaim instances that
 * is already shutting down or gone (terminated by another leader, say):
 * *state ("shutting-down", "terminated") new and owned when so. */
static bool already_terminated(lc_prov *p, const char *id, char **state)
{
    tlr_ec2_instances l = { 0 };
    tlr_aws_error err = { 0 };
    bool done = false;
    if (p->o.cloud.instance_any && p->o.cloud.instance_any(p->o.cloud.arg, id, &l, &err) == TLR_OK)
        for (size_t i = 0; i < l.n && !done; i++) {
            const tlr_ec2_instance *in = &l.v[i];
            done = !strcmp(in->id, id) &&
                   (tlr_ec2_instance_tag(in, TLR_TAG_NODECLAIM) ||
                    tlr_ec2_instance_tag(in, TLR_LABEL_NODEPOOL)) &&
                   (!strcmp(in->state, "shutting-down") || !strcmp(in->state, "terminated"));
            if (done)
                *state = tlr_strdup(in->state);
        }
    tlr_ec2_instances_free(&l);
    return done;
}

static int instance_is_ours(lc_prov *p, const char *id, bool *ours)
{
    tlr_ec2_instances l = { 0 };
    tlr_aws_error err = { 0 };
    *ours = false;
    int rc = p->o.cloud.instance ? p->o.cloud.instance(p->o.cloud.arg, id, &l, &err)
                                 : TLR_E_UNIMPLEMENTED;
    for (size_t i = 0; rc == TLR_OK && i < l.n && !*ours; i++)
        *ours = !strcmp(l.v[i].id, id) && (tlr_ec2_instance_tag(&l.v[i], TLR_TAG_NODECLAIM) ||
                                            tlr_ec2_instance_tag(&l.v[i], TLR_LABEL_NODEPOOL));
    tlr_ec2_instances_free(&l);
    return rc;
}

/* Terminate: for a NodeClaim, the instance it records, else the one tagged
 * for it; a caller's instance id is never taken on trust.  A bare instance
 * id (a Node without a claim) is terminated only when it is one of this
 * cluster's NodeClaim instances: the launcher's port must not terminate
 * any instance its IAM role can reach. */
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
        const char *inst = "";
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
        } else if (it->instance_id[0]) {
            bool ours = false;
            int rc = instance_is_ours(p, it->instance_id, &ours);
            char *gone = NULL;
            if (!rc && !ours && already_terminated(p, it->instance_id, &gone)) {
                /* Idempotent: terminated already (by another leader). */
                r->instance_id = tlr_strdup(it->instance_id);
                r->status = new_status(TLR_OK, "", "");
                r->instance_state = gone;
                continue;
            }
            if (rc || !ours) {
                r->instance_id = tlr_strdup(it->instance_id);
                r->status = rc ? new_status(rc, "TerminateFailed", tlr_strerror(rc))
                               : new_status(TLR_E_AUTH, "NotOwned",
                                            "not a live instance of this cluster's NodeClaims: "
                                            "refused");
                r->instance_state = tlr_strdup("");
                if (!rc)
                    TLR_WARN(p->o.log, "terminate refused: instance is not ours",
                             TLR_S("instance", it->instance_id),
                             TLR_S("reason", req->reason));
                continue;
            }
            inst = it->instance_id;
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

/* The Node of claim c appeared: sync the claim onto it (lifecycle.h).
 * false: not done (a conflict or an error), retried next pass. */
static bool register_node(lc_prov *p, lc_claim *c, const tlr_knode *node)
{
    char *patch = lc_registration_patch(c, node);
    int rc = p->o.kube.node_patch ? p->o.kube.node_patch(p->o.kube.arg, node->name, patch)
                                  : TLR_E_UNIMPLEMENTED;
    free(patch);
    if (rc) {
        /* 409: the Node changed since we listed it; the next pass sees it. */
        if (rc == TLR_E_CONFLICT)
            TLR_DEBUG(p->o.log, "node changed while registering; retried next pass",
                      TLR_S("nodeclaim", c->nc->name), TLR_S("node", node->name));
        else
            TLR_WARN(p->o.log, "node not registered", TLR_S("nodeclaim", c->nc->name),
                     TLR_S("node", node->name), TLR_ERR(rc));
        return false;
    }
    TLR_INFO(p->o.log, "registered nodeclaim", TLR_S("nodeclaim", c->nc->name),
             TLR_S("node", node->name));
    return true;
}

static void register_timeout_message(const lc_prov *p, const lc_claim *c, int64_t now,
                                     char *msg, size_t len)
{
    const Tailor__V1__NodeClaimStatus *st = c->nc->status;
    char ago[32];
    tlr_duration_format(now - c->launched_ms, ago, sizeof(ago));
    snprintf(msg, len,
             "instance %s launched %s ago but no Node registered with providerID %s; check the "
             "node's bootstrap (cluster endpoint %s, CA, security groups)",
             st && st->instance_id[0] ? st->instance_id : "?", ago,
             st && st->provider_id[0] ? st->provider_id : "?",
             p->id.endpoint && p->id.endpoint[0] ? p->id.endpoint : "(none)");
}

void lc_prov_lifecycle(lc_prov *p)
{
    if (lc_prov_mono(p) >= p->catm_due)
        update_catmetrics(p);          /* ICE entries expire, catalogs refresh */
    tlr_knodes nodes = { 0 };
    int rc = p->o.kube.nodes_list(p->o.kube.arg, &nodes);
    if (rc) {
        TLR_WARN(p->o.log, "lifecycle: nodes not listed", TLR_ERR(rc));
        return;
    }
    int64_t now = lc_prov_now(p);
    for (size_t i = 0; i < lc_claims_count(p->claims);) {
        lc_claim *c = lc_claims_at(p->claims, i);
        const char *inst = c->nc->status ? c->nc->status->instance_id : "";
        const tlr_knode *node = lc_node_for_instance(&nodes, inst);
        const Tailor__V1__InstanceType *it =
            c->nc->status && c->nc->status->instance_type[0]
                ? lc_catalog_find(p->catalog, c->nc->status->instance_type) : NULL;
        switch (lc_lifecycle_decide(c, node, it, p->o.register_ttl_ms, now)) {
        case LC_LIFE_REGISTERED:
            if (plan_gate_closed(p, c, &nodes, now) || !register_node(p, c, node)) {
                i++;
                continue;
            }
            c->registered_ms = now;
            count_node_created(p, c, node);
            lc_prov_status_of(c)->node_name = tlr_strdup(node->name);
            lc_prov_set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_REGISTERED);
            write_status(p, c);
            /* The node as listed still has the unregistered taint: it is
             * initialized at the earliest on the next pass. */
            i++;
            continue;
        case LC_LIFE_INITIALIZED: {
            int prc = p->o.kube.node_patch
                          ? p->o.kube.node_patch(p->o.kube.arg, node->name, LC_INITIALIZED_PATCH)
                          : TLR_OK;
            if (prc) {
                TLR_WARN(p->o.log, "node not labelled initialized", TLR_S("node", node->name),
                         TLR_ERR(prc));
                i++;
                continue;
            }
            c->initialized_ms = now;
            lc_prov_set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_INITIALIZED);
            write_status(p, c);
            TLR_INFO(p->o.log, "initialized nodeclaim", TLR_S("nodeclaim", c->nc->name),
                     TLR_S("node", node->name));
            /* Still in flight for the solver until its pods are bound
             * (see drop_settled): the watcher's next batch may predate the
             * bindings and show them pending with no room for them. */
            i++;
            continue;
        }
        case LC_LIFE_LAUNCH_TIMEOUT:
        case LC_LIFE_REGISTER_TIMEOUT: {
            char name[256], msg[1024];
            snprintf(name, sizeof(name), "%s", c->nc->name);
            if (c->launched_ms)
                register_timeout_message(p, c, now, msg, sizeof(msg));
            else
                snprintf(msg, sizeof(msg), "not launched within %ds of its creation",
                         LC_LAUNCH_TTL_MS / 1000);
            TLR_WARN(p->o.log, "nodeclaim liveness timeout", TLR_S("nodeclaim", name),
                     TLR_S("instance", inst), TLR_S("why", msg));
            lc_prov_event(p, "NodeClaim", "", name, c->nc->uid, "Warning",
                          c->launched_ms ? "RegistrationTimeout" : "LivenessTimeout", msg);
            char *id = tlr_strdup(inst);
            lc_prov_set_phase(p, c, TAILOR__V1__NODE_CLAIM_PHASE__NODECLAIM_PHASE_FAILED);
            if (terminate_one(p, name, id, c->launched_ms ? "registration-timeout" : "liveness")
                != TLR_OK)
                i++;   /* retried next pass */
            free(id);
            continue;
        }
        case LC_LIFE_NONE:
            break;
        }
        i++;
    }
    tlr_knodes_free(&nodes);
}

/* Read instances and claims and decide.  TLR_OK with *plan filled. */
static int gc_plan(lc_prov *p, lc_gc_plan *plan)
{
    tlr_ec2_instances inst = { 0 };
    tlr_kclaims claims = { 0 };
    tlr_aws_error err = { 0 };
    int rc = p->o.cloud.instances(p->o.cloud.arg, NULL, &inst, &err);
    if (rc) {
        TLR_WARN(p->o.log, "gc: instances not listed", TLR_S("code", err.code), TLR_ERR(rc));
        return rc;
    }
    if ((rc = p->o.kube.claims_list(p->o.kube.arg, &claims))) {
        TLR_WARN(p->o.log, "gc: nodeclaims not listed", TLR_ERR(rc));
        tlr_ec2_instances_free(&inst);
        return rc;
    }
    /* Our own launches whose status may not be written yet are not leaks. */
    size_t nown = lc_claims_count(p->claims), nk = 0;
    const char **known = tlr_calloc(nown + 1, sizeof(*known));
    for (size_t i = 0; i < nown; i++) {
        const Tailor__V1__NodeClaimStatus *st = lc_claims_at(p->claims, i)->nc->status;
        if (st && st->instance_id[0])
            known[nk++] = st->instance_id;
    }
    lc_gc_decide(&inst, &claims, known, nk, lc_prov_now(p), plan);
    free(known);
    tlr_kclaims_free(&claims);
    tlr_ec2_instances_free(&inst);
    return TLR_OK;
}

static bool in_list(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* Keep in a only what b decided too. */
static void gc_intersect(lc_gc_plan *a, const lc_gc_plan *b)
{
    size_t k = 0;
    for (size_t i = 0; i < a->nterminate; i++)
        if (in_list(b->terminate, b->nterminate, a->terminate[i]))
            a->terminate[k++] = a->terminate[i];
        else
            free(a->terminate[i]);
    a->nterminate = k;
    k = 0;
    for (size_t i = 0; i < a->ndelete; i++)
        if (in_list(b->delete_claims, b->ndelete, a->delete_claims[i]))
            a->delete_claims[k++] = a->delete_claims[i];
        else
            free(a->delete_claims[i]);
    a->ndelete = k;
}

void lc_prov_classes_refresh(lc_prov *p)
{
    lc_classes_refresh(p->classes);
}

/* GC acts only on what two reads in a row agree on: a launch or a
 * NodeClaim written between the first read and the act (by this replica's
 * own fan-out, or by a replica that led a moment ago) takes the instance
 * or the claim out of the plan instead of having it collected. */
void lc_prov_gc(lc_prov *p)
{
    lc_gc_plan plan, again;
    if (gc_plan(p, &plan))
        return;
    if ((plan.nterminate || plan.ndelete) && gc_plan(p, &again) == TLR_OK) {
        gc_intersect(&plan, &again);
        lc_gc_plan_clear(&again);
    } else if (plan.nterminate || plan.ndelete) {
        lc_gc_plan_clear(&plan);
        return;
    }
    for (size_t i = 0; i < plan.nterminate; i++) {
        TLR_INFO(p->o.log, "gc: terminating leaked instance", TLR_S("instance", plan.terminate[i]));
        if (terminate_one(p, NULL, plan.terminate[i], "garbage-collected") == TLR_OK) {
            if (p->m_gc_instances)
                tlr_metrics_counter_inc(p->m_gc_instances, NULL);
            lc_prov_publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_GARBAGE_COLLECTED,
                            NULL, 0, plan.terminate[i]);
        }
    }
    for (size_t i = 0; i < plan.ndelete; i++) {
        TLR_INFO(p->o.log, "gc: deleting nodeclaim without instance",
                 TLR_S("nodeclaim", plan.delete_claims[i]));
        if (terminate_one(p, plan.delete_claims[i], NULL, "garbage-collected") == TLR_OK)
            lc_prov_publish(p, TAILOR__V1__LAUNCH_EVENT_KIND__LAUNCH_EVENT_KIND_GARBAGE_COLLECTED,
                            NULL, 0, plan.delete_claims[i]);
    }
    lc_gc_plan_clear(&plan);
}
