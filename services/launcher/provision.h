/* provision.h - the launcher's provisioning core.
 *
 * Per pending batch (level-triggered: the complete pending set):
 *   1. Solve, on any solver replica, with the batch's cluster state plus
 *      this launcher's own in-flight NodeClaims (with the pods planned on
 *      them) and the ICE cache -- so a pod already covered by a claim
 *      not yet visible to the watcher is not provisioned twice;
 *   2. for every new claim: name it, write the NodeClaim to Kubernetes
 *      BEFORE any EC2 call (a crash after CreateFleet leaves a claim that
 *      GC or liveness can reconcile, never an unowned instance for long),
 *      emit Nominated on its pods;
 *   3. launch it (fleet.h); on insufficient capacity mark the failed
 *      offerings in the ICE cache and rebuild the fleet (other types,
 *      zones, then on-demand); when nothing is left delete the claim,
 *      emit InsufficientCapacity and re-Solve at once with the larger
 *      ICE cache, so the solver falls back to other types, zones,
 *      capacity types and lower-weight NodePools.  At most
 *      LC_MAX_REPLANS solves per batch.
 *
 * Our claims stay in flight (passed in every Solve) from creation until
 * their node is Initialized AND none of their planned pods is pending
 * any more, so a batch taken before the scheduler bound them cannot buy
 * a second node for them.
 *
 * Launch and Terminate requests from the disruptor use the same launch
 * path and the same registry.  Single-threaded: call from the loop.
 */
#ifndef LC_PROVISION_H
#define LC_PROVISION_H

#include <stdint.h>

#include "claims.h"
#include "ice.h"
#include "nodeclass.h"
#include "lc_ops.h"
#include "tlr_bootstrap.h"
#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_log.h"
#include "tlr_metrics.h"
#include "tlr_time.h"

#define LC_MAX_REPLANS 4
/* An initialized claim stays in flight at most this long after its node
 * became ready, waiting for its planned pods to bind. */
#define LC_SETTLE_MAX_MS (5 * 60 * 1000)

typedef struct lc_prov_opts {
    const char *cluster;                /* borrowed; copied */
    const tlr_clock *clock;             /* borrowed */
    lc_solver_ops solver;
    /* Snapshots by reference when a batch's cluster delta is from a state
     * this launcher does not hold (cluster.proto, ClusterRef); snapshot
     * NULL = such a batch is skipped until one it can follow. */
    lc_watcher_ops watcher;
    lc_cloud_ops cloud;
    lc_kube_ops kube;
    const Tailor__V1__Catalog *catalog; /* borrowed; outlives the prov */
    tlr_logger *log;                    /* borrowed; may be NULL */
    tlr_metrics *metrics;               /* borrowed; may be NULL */
    uint64_t (*rand)(void *arg);        /* claim name suffixes; NULL = random() */
    void *rand_arg;
    /* Publish a LaunchEvent on "launch"; may be NULL.  ev borrowed. */
    void (*publish)(void *arg, const Tailor__V1__LaunchEvent *ev);
    void *publish_arg;
    /* After each batch, the plan's outcome per pod (Karpenter's
     * MarkPodSchedulingDecisions), for the watcher's pod metrics; may be
     * NULL.  d borrowed. */
    void (*publish_decisions)(void *arg, const Tailor__V1__SchedulingDecisions *d);
    int64_t ice_ttl_ms;                 /* 0 = LC_ICE_TTL_MS (3 min) */
    int64_t resolve_ttl_ms;             /* node classes; 0 = 60 s */
    const char *default_ami;            /* borrowed; copied; may be NULL */
    const char *k8s_version;            /* borrowed; copied; for AMI aliases */
    bool no_fleet_batching;             /* one CreateFleet per claim (tests, debugging) */
    /* The cluster nodes join (borrowed; copied); NULL = not known yet:
     * nothing launches until lc_prov_set_identity() completes it. */
    const tlr_cluster_identity *identity;
    int64_t register_ttl_ms;            /* 0 = LC_REGISTER_TTL_MS (15 min) */
    /* How long a gated claim's registration may wait for the rest of its
     * plan's nodes (plangate.h); 0 = no plan gates. */
    int64_t plan_gate_ms;
    /* Instance profiles of classes that name a role (nodeclass.h); get
     * NULL = not managed. */
    lc_iam_ops iam;
    const char *region;                 /* borrowed; copied; profile names and tags */
    /* Karpenter's MIN_VALUES_POLICY and PREFERENCE_POLICY, sent with every
     * Solve (UNSPECIFIED = Strict / Respect). */
    Tailor__V1__MinValuesPolicy min_values_policy;
    Tailor__V1__PreferencePolicy preference_policy;
} lc_prov_opts;

typedef struct lc_prov lc_prov;

void lc_prov_create(const lc_prov_opts *o, lc_prov **out);   /* owned */
void lc_prov_free(lc_prov *p);                                /* NULL fine */

typedef struct lc_batch_result {
    int solves;          /* Solve calls made (re-plans included) */
    int inflight;        /* our claims passed as in flight in the first Solve */
    int launched;        /* claims whose instance was created */
    int failed;          /* claims given up (capacity, errors) */
    int pods_nominated;  /* pods placed on new or in-flight claims */
    int pods_unplaced;   /* pod errors in the last solve */
    int fleets;          /* CreateFleet calls made */
    int ice;             /* offerings in the ICE cache after the batch */
    double plan_cost;    /* $/h of the new claims the Solve answers planned */
    int64_t solve_ms;    /* wall time in Solve calls */
    int64_t solve_bytes; /* the first SolveRequest's packed size (its last attempt) */
    int64_t solver_ms;   /* the first Solve's solve_duration_ms (the engine's own time) */
    int64_t launch_ms;   /* from the first NodeClaim create to the end of the launch pass */
    int64_t claims_ms;   /* writing the NodeClaims */
    int64_t fleets_ms;   /* from the batch's arrival to the last CreateFleet answer */
    int64_t issued_ms;   /* from the batch's arrival to the last CreateFleet sent */
} lc_batch_result;

/* Provision for batch b (handed over: the prov keeps the latest batch
 * for its NodePools and NodeClasses).  res may be NULL.  Errors: the
 * solver's (nothing was launched); launch errors are per claim. */
int lc_prov_batch(lc_prov *p, Tailor__V1__PendingBatch *b, lc_batch_result *res);

/* A batch this replica will not act on (it does not lead): its cluster
 * delta, when it follows a state held, is applied so that a new leader
 * does not start from nothing.  b handed over (freed). */
void lc_prov_follow(lc_prov *p, Tailor__V1__PendingBatch *b);

/* Answer a LaunchRequest (borrowed).  *out new and owned. */
void lc_prov_launch(lc_prov *p, const Tailor__V1__LaunchRequest *req,
                    Tailor__V1__LaunchResponse **out);
/* Answer a TerminateRequest (borrowed).  *out new and owned. */
void lc_prov_terminate(lc_prov *p, const Tailor__V1__TerminateRequest *req,
                       Tailor__V1__TerminateResponse **out);

/* One lifecycle pass over the registry (lifecycle.h). */
void lc_prov_lifecycle(lc_prov *p);
/* One garbage-collection pass (gc.h). */
void lc_prov_gc(lc_prov *p);
/* Resolve the EC2NodeClasses due again (lc_classes_refresh). */
void lc_prov_classes_refresh(lc_prov *p);

/* The cluster identity (id borrowed; copied) nodes are bootstrapped with.
 * Complete = name, API endpoint, CA bundle and service CIDR; the DNS IP
 * may be empty (the node's default).  While it is incomplete no claim is
 * written or launched: batches are skipped (the log says why) and Launch
 * requests are answered UNAVAILABLE "ClusterIdentityIncomplete". */
void lc_prov_set_identity(lc_prov *p, const tlr_cluster_identity *id);
/* Is the identity complete?  false with why (len bytes) saying what is
 * missing. */
bool lc_prov_identity_ok(const lc_prov *p, char *why, size_t len);

/* Use catalog (borrowed; must outlive the prov or the next call) from
 * the next Solve on: the live catalog was refreshed. */
void lc_prov_set_catalog(lc_prov *p, const Tailor__V1__Catalog *catalog);

/* Take over what a previous launcher left (run once before the first
 * batch, and again on becoming leader): NodeClaims not yet Initialized
 * with an instance are tracked to Initialized; NodeClaims with no
 * instance at all -- the launcher died between writing the claim and
 * CreateFleet -- are deleted so their pods are planned again.  Returns
 * TLR_OK, or the list error (it is then retried before the next batch). */
int lc_prov_adopt(lc_prov *p);
/* Lost or (re)gained the Lease: forget the claims in flight in memory and
 * adopt again, from Kubernetes and EC2, when leading. */
void lc_prov_forget_adoption(lc_prov *p);

lc_ice    *lc_prov_ice(lc_prov *p);      /* borrowed */
lc_classes *lc_prov_classes(lc_prov *p); /* borrowed */
lc_claims *lc_prov_claims(lc_prov *p);   /* borrowed */

#endif
