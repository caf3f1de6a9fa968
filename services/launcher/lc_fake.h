/* lc_fake.h - recording fakes of the launcher's ops (lc_ops.h) for tests.
 *
 * Each fake records the calls it receives (in order, as one line of text
 * each: "create_fleet nc-1 spot m5.large/us-east-1a ...") and answers
 * from a script: the solver returns queued SolveResponses; CreateFleet
 * fails with InsufficientInstanceCapacity for offerings listed in
 * ice_offerings ("m5.large/us-east-1a/spot") and otherwise launches the
 * target capacity on the first override left (as moto does);
 * Kubernetes keeps NodeClaims and Nodes in memory.  Lives in the logic
 * library (like Karpenter's cloudprovider/fake) so every test can use it.
 */
#ifndef LC_FAKE_H
#define LC_FAKE_H

#include "lc_ops.h"
#include "tlr_time.h"

typedef struct lc_fake {
    /* script */
    Tailor__V1__SolveResponse *solve_q[16];  /* handed over; popped in order */
    size_t nsolve_q;
    /* Answer as a solver that predates ClusterState.by_ref: its replies
     * never carry cluster_generation (a current one's do, when the
     * request's cluster came by reference and was not a miss). */
    bool solver_predates_by_ref;
    /* The watcher's Snapshot answers (handed over; popped in order; none
     * left: TLR_E_UNAVAILABLE). */
    Tailor__V1__SnapshotResponse *snap_q[4];
    size_t nsnap_q;
    const char *ice_offerings[32];           /* "type/zone/market" answering ICE */
    size_t nice;
    int kube_create_rc;                      /* returned by claim_create */
    int lt_rc;                               /* returned by launch_template */
    const char *lt_code;                     /* its AWS error code */
    int fleet_rc;                            /* returned by create_fleet (whole call) */
    int describe_rc;                         /* returned by subnets/security_groups/images */
    int node_patch_rc;                       /* returned once by node_patch, then cleared */
    int terminate_rc;                        /* returned by terminate (nothing terminated) */
    const char *dns_ip;                      /* kube-system/kube-dns ClusterIP; NULL = none */
    /* Called before claims_list answers (the nth call, from 1): a test
     * changes the world between two reads (another writer). */
    void (*on_claims_list)(struct lc_fake *f, int nth);
    int nclaims_list;
    /* What EC2 holds for node-class resolution: subnets a, b, c (tag
     * karpenter.sh/discovery=demo, b with the most free IPs, plus a
     * second, fuller subnet in a), one security group, AMIs ami-x86
     * (x86_64) and ami-arm (arm64), all tagged the same. */
    tlr_ec2_subnets subnets;
    tlr_ec2_security_groups sgs;
    tlr_ec2_images images;
    /* state */
    tlr_ec2_instances instances;             /* "live" instances */
    tlr_knodes nodes;
    tlr_kclaims claims;
    int next_id;
    /* record */
    char **calls;
    size_t ncalls;
    Tailor__V1__SolveRequest *last_solve;    /* packed copy of the last request */
    char *lt_user_data;                      /* user data of the last launch_template (owned) */
    int64_t now_ms;                          /* fake clock */
    tlr_clock clock;
} lc_fake;

void lc_fake_init(lc_fake *f);
void lc_fake_clear(lc_fake *f);
lc_solver_ops lc_fake_solver(lc_fake *f);
lc_watcher_ops lc_fake_watcher(lc_fake *f);
lc_cloud_ops  lc_fake_cloud(lc_fake *f);
lc_kube_ops   lc_fake_kube(lc_fake *f);
/* Calls whose text starts with prefix. */
size_t lc_fake_count(const lc_fake *f, const char *prefix);
/* Add a live instance (copied strings). */
void lc_fake_add_instance(lc_fake *f, const char *id, const char *claim, int64_t launch_ms);
/* taint: NULL, "key" (NoSchedule; karpenter.sh/unregistered: NoExecute)
 * or "key:Effect".  The node gets resourceVersion "1". */
void lc_fake_add_node(lc_fake *f, const char *name, const char *provider_id, bool ready,
                      const char *taint);
/* The node named name (borrowed) or NULL.  node_patch applies merge
 * patches to it: labels and annotations merged, spec.taints replaced,
 * resourceVersion bumped (a stale one in the patch: TLR_E_CONFLICT). */
tlr_knode *lc_fake_node(lc_fake *f, const char *name);
/* Node name advertises extended resource (allocatable > 0). */
void lc_fake_node_add_extended(lc_fake *f, const char *name, const char *resource);
/* An EC2NodeClass selecting the fake's subnets and security group by tag
 * karpenter.sh/discovery=demo and AMI ami_id (NULL = ami-x86); owned. */
Tailor__V1__NodeClass *lc_fake_nodeclass(const char *name, const char *ami_id);
/* Add a NodeClaim as Kubernetes would list it. */
void lc_fake_add_claim(lc_fake *f, const char *name, const char *instance_id, int64_t created_ms,
                       bool initialized);

#endif
