/* prov_int.h - the provisioning core's state, shared by provision.c (the
 * batch pass, requests, lifecycle, GC, adoption) and launch.c (turning
 * NodeClaims into instances).  Not a public header. */
#ifndef LC_PROV_INT_H
#define LC_PROV_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "catmetrics.h"
#include "nodeclass.h"
#include "provision.h"
#include "tlr_cstate.h"

/* For how many Solves after its last miss a replica that holds nothing
 * to build on keeps Solves whole (provision.c replica_starved); one
 * scaled in since stops counting after that. */
#define LC_REPLICA_STARVED_SOLVES 16

/* A batch pod's scheduling decision in the latest plan. */
enum { LC_UNDECIDED = 0, LC_DECIDED_FAILED = 1, LC_DECIDED_SCHEDULED = 2 };

typedef struct lc_told {
    char *uid;            /* pod */
    uint64_t what;        /* hash of the message last told */
    int64_t at_ms;
} lc_told;

struct lc_prov {
    lc_prov_opts o;
    char *cluster;
    lc_claims *claims;
    lc_ice *ice;
    lc_classes *classes;
    const Tailor__V1__Catalog *catalog;  /* borrowed; the current base catalog */
    Tailor__V1__PendingBatch *batch;     /* owned; latest */
    int64_t batch_ms;                    /* lc_prov_now() when it came */
    /* When the batch's cluster came by reference: its view (batch->cluster
     * points at the whole state in it) and the batch's own ClusterState,
     * put back before the batch is freed (batch_drop). */
    tlr_cstate *states;                  /* the watcher's states we hold */
    tlr_cstate_view *view;
    Tailor__V1__ClusterState *wire_cluster;
    /* What each solver replica (by replica id) was last known to hold: a
     * delta to the solvers is made valid for every one of them, since the
     * transport, not the launcher, picks the replica. */
    struct lc_replica_gen {
        char *id;
        int64_t epoch;
        uint64_t gen;
        uint64_t used;
        /* It missed (cluster or catalogs) and the resend was answered by
         * another replica: it still holds nothing to build on. */
        bool starved;
        uint64_t missed_at;   /* solve_seq of its last miss */
    } replicas[16];
    size_t nreplicas;
    uint64_t rclock;
    uint64_t solve_seq;                  /* Solves started (prov_solve) */
    tlr_metric_family *m_cluster;
    size_t *batch_idx;                   /* its pods by uid: open addressing, */
    size_t batch_cap;                    /* SIZE_MAX = empty slot */
    uint8_t *decided;                    /* per batch pod: LC_DECIDED_* */
    bool adopted;                        /* restart adoption done */
    int64_t fleets_done_mono;            /* when the last launch pass's CreateFleets returned */
    int64_t fleets_issued_mono;          /* when its last CreateFleet was sent */
    tlr_cluster_identity id;             /* strings owned */
    lc_told *told;                       /* FailedScheduling events, rate-limited */
    size_t ntold, captold;
    tlr_metric_family *m_created, *m_terminated, *m_cloud, *m_cloud_err, *m_pods, *m_fleets, *m_solves;
    tlr_metric_family *m_nodes_created, *m_unschedulable, *m_ignored;
    tlr_metric_family *m_launch_fail, *m_term_fail, *m_batch_time, *m_batch_size;
    tlr_metric_family *m_gc_instances;
    lc_catmetrics *catm;                 /* NULL without metrics */
    int64_t catm_due;                    /* mono ms of the next lifecycle-pass update */
};

/* One claim to launch and what became of it. */
typedef struct lc_launch_item {
    lc_claim *c;                  /* borrowed, in the registry */
    Tailor__V1__LaunchResult *r;  /* borrowed; may be NULL: failed offerings go here */
    int rc;                       /* TLR_OK, TLR_E_CAPACITY, ... */
    char msg[512];                /* why, on failure */
    bool batched;                 /* launched by a fleet shared with other claims */
} lc_launch_item;

/* Launch every item's claim: identical fleets batched into one CreateFleet
 * with a larger target, the calls made in parallel; capacity failures
 * retried claim by claim with the ICE cache (launch.c).  Each item's rc
 * and msg say how it went; a launched claim's status is filled, written
 * and announced, a failed one deleted (its item's c is then NULL).
 * Returns the CreateFleet calls made. */
size_t lc_launch_claims(lc_prov *p, lc_launch_item *items, size_t n);

int64_t lc_prov_now(const lc_prov *p);
int64_t lc_prov_mono(const lc_prov *p);
void lc_prov_event(lc_prov *p, const char *kind, const char *ns, const char *name,
                   const char *uid, const char *type, const char *reason, const char *msg);
void lc_prov_set_phase(lc_prov *p, lc_claim *c, Tailor__V1__NodeClaimPhase phase);
void lc_prov_publish(lc_prov *p, Tailor__V1__LaunchEventKind kind, const lc_claim *c,
                     Tailor__V1__NodeClaimPhase prev, const char *msg);
/* karpenter_nodeclaims_created_total for nc (borrowed), created for why
 * (the launch reason). */
void lc_prov_count_created(lc_prov *p, const Tailor__V1__NodeClaim *nc, const char *why);
/* karpenter_nodeclaims_terminated_total; nc (borrowed, may be NULL) gives
 * capacity type and zone once launched. */
void lc_prov_count_terminated(lc_prov *p, const char *nodepool, const Tailor__V1__NodeClaim *nc);
void lc_prov_observe(lc_prov *p, const char *method, int rc, int64_t t0);
/* karpenter_cloudprovider_instance_launch_failures_total for one
 * CreateFleet error (all borrowed): zone, capacity type, and the reason
 * Karpenter derives from "code: message" (lc_launch_failure_reason). */
void lc_prov_count_launch_failure(lc_prov *p, const char *zone, Tailor__V1__CapacityType ct,
                                  const char *code, const char *message);
/* Karpenter's create_fleet batcher metrics for one CreateFleet call made
 * for size claims, window_ms after the launch pass began collecting them. */
void lc_prov_fleet_batch(lc_prov *p, size_t size, int64_t window_ms);
/* Karpenter's launch failure reason (the AWS provider's ToReasonMessage)
 * for an EC2 error code and message: "Unauthorized", "AMINotFound", ...,
 * "LaunchFailed" for anything else (capacity errors included). */
const char *lc_launch_failure_reason(const char *code, const char *message);
Tailor__V1__NodeClaimStatus *lc_prov_status_of(lc_claim *c);

#endif
