/* lc_ops.h - what the launcher's logic needs from the outside world.
 *
 * Three small method tables -- the solver, the cloud (EC2), Kubernetes --
 * filled by the real clients (tlr_clnt.h via lc_app.c, lc_cloud.c, lc_kube.c) in the
 * service and by recording fakes (lc_fake.c) in tests, so every decision in
 * provision.c, lifecycle.c and gc.c is tested without a network
 * (Karpenter's cloudprovider/fake pattern).  Every method returns TLR_OK
 * or a TLR_E_* code; pointers passed in are borrowed unless said.
 */
#ifndef LC_OPS_H
#define LC_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/nodepool.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_ec2.h"
#include "tlr_kread.h"

typedef struct lc_solver_ops {
    /* One Solve.  On TLR_OK *resp is new and owned by the caller
     * (protobuf_c_message_free_unpacked). */
    int (*solve)(void *arg, const Tailor__V1__SolveRequest *req,
                 Tailor__V1__SolveResponse **resp);
    void *arg;
} lc_solver_ops;

typedef struct lc_watcher_ops {
    /* One Snapshot.  On TLR_OK *resp is new and owned by the caller
     * (protobuf_c_message_free_unpacked). */
    int (*snapshot)(void *arg, const Tailor__V1__SnapshotRequest *req,
                    Tailor__V1__SnapshotResponse **resp);
    void *arg;
} lc_watcher_ops;

typedef struct lc_cloud_ops {
    /* The launch template id for node class nc (resolved: security groups
     * filled) with AMI ami, creating it when absent.  On TLR_OK *lt_id is
     * new and owned (free()). */
    int (*launch_template)(void *arg, const Tailor__V1__NodeClass *nc, const char *ami,
                           char **lt_id, tlr_aws_error *err);
    /* CreateFleet type instant; as tlr_ec2_create_fleet. */
    int (*create_fleet)(void *arg, const tlr_ec2_fleet_req *r, tlr_ec2_fleet_result *out,
                        tlr_aws_error *err);
    /* Live (pending/running) instances tagged for the cluster; with claim
     * non-NULL only those tagged karpenter.sh/nodeclaim=claim.  *out owned. */
    int (*instances)(void *arg, const char *claim, tlr_ec2_instances *out, tlr_aws_error *err);
    /* Instance id when it is live (pending/running) and tagged for the
     * cluster: *out holds it, else nothing (an unknown or malformed id is
     * not an error).  *out owned. */
    int (*instance)(void *arg, const char *id, tlr_ec2_instances *out, tlr_aws_error *err);
    /* The same in any state (shutting-down and terminated too), so a
     * termination another leader already made is recognised as done.
     * NULL = not available. */
    int (*instance_any)(void *arg, const char *id, tlr_ec2_instances *out, tlr_aws_error *err);
    /* Terminate; an absent instance is success. */
    int (*terminate)(void *arg, const char *const *ids, size_t n, tlr_aws_error *err);
    /* Several CreateFleet calls at once (they may run in parallel): rcs[i],
     * outs[i] and errs[i] as create_fleet would fill them for reqs[i].
     * NULL = the launcher calls create_fleet for each in turn. */
    void (*create_fleets)(void *arg, size_t n, const tlr_ec2_fleet_req *const *reqs,
                          tlr_ec2_fleet_result *outs, int *rcs, tlr_aws_error *errs,
                          int64_t *last_issued_mono);   /* when the last call was sent; may be NULL */
    /* CreateTags: ids[i] gets the ntags[i] tags of tags[i] (one call per
     * instance, possibly in parallel); rcs[i] per instance. */
    void (*tag_instances)(void *arg, size_t n, const char *const *ids,
                          const tlr_ec2_tag *const *tags, const size_t *ntags, int *rcs);
    /* Node-class resolution (nodeclass.h): one Describe call each, with
     * the filters given (borrowed); *out owned by the caller. */
    int (*subnets)(void *arg, const tlr_ec2_filter *f, size_t nf, tlr_ec2_subnets *out,
                   tlr_aws_error *err);
    int (*security_groups)(void *arg, const tlr_ec2_filter *f, size_t nf,
                           tlr_ec2_security_groups *out, tlr_aws_error *err);
    int (*images)(void *arg, const tlr_ec2_filter *f, size_t nf, tlr_ec2_images *out,
                  tlr_aws_error *err);
    /* An AMI id from an SSM parameter (alias, ssmParameter terms).  *ami
     * owned.  TLR_E_NOTFOUND when the parameter does not exist. */
    int (*ssm_ami)(void *arg, const char *parameter, char **ami, tlr_aws_error *err);
    void *arg;
} lc_cloud_ops;

/* NodeClaims and Nodes as read back from Kubernetes (GC, restart, the
 * lifecycle): tlr_kclaims / tlr_knodes of tlr_kread.h (common/kubeobj). */

typedef struct lc_kube_ops {
    /* Create the NodeClaim object (JSON text).  TLR_E_EXISTS when it is
     * already there (callers treat that as success). */
    int (*claim_create)(void *arg, const char *name, const char *json);
    /* Merge-patch the status subresource. */
    int (*claim_status)(void *arg, const char *name, const char *patch);
    /* Delete; TLR_E_NOTFOUND when already gone (callers: success). */
    int (*claim_delete)(void *arg, const char *name);
    int (*claims_list)(void *arg, tlr_kclaims *out);
    int (*nodes_list)(void *arg, tlr_knodes *out);
    /* A core/v1 Event about an object.  type "Normal" or "Warning".  The
     * real client queues it and writes it from a thread of its own. */
    int (*event)(void *arg, const char *kind, const char *ns, const char *name,
                 const char *uid, const char *type, const char *reason, const char *message);
    /* Several creates / status patches at once (possibly in parallel);
     * rcs[i] as claim_create / claim_status.  NULL = one at a time. */
    void (*claims_create_n)(void *arg, size_t n, const char *const *names,
                            const char *const *jsons, int *rcs);
    void (*claims_status_n)(void *arg, size_t n, const char *const *names,
                            const char *const *patches, int *rcs);
    /* Merge-patch an EC2NodeClass's status subresource. */
    int (*nodeclass_status)(void *arg, const char *name, const char *patch);
    /* Read one EC2NodeClass (for a LaunchRequest naming a class no batch
     * has shown yet).  On TLR_OK *out is new and owned; TLR_E_NOTFOUND. */
    int (*nodeclass_get)(void *arg, const char *name, Tailor__V1__NodeClass **out);
    /* JSON merge patch of a NodeClaim's metadata / spec (not its status).
     * TLR_E_NOTFOUND when the claim is gone. */
    int (*claim_patch)(void *arg, const char *name, const char *patch);
    /* JSON merge patch of a Node.  A patch carrying metadata.resourceVersion
     * is refused with TLR_E_CONFLICT when the Node changed since. */
    int (*node_patch)(void *arg, const char *name, const char *patch);
    /* spec.clusterIP of Service ns/name.  On TLR_OK *ip is new and owned;
     * TLR_E_NOTFOUND when there is no such Service (or it has no IP). */
    int (*service_ip)(void *arg, const char *ns, const char *name, char **ip);
    /* Several claim_patch calls at once (possibly in parallel); rcs[i] as
     * claim_patch.  NULL = one at a time. */
    void (*claims_patch_n)(void *arg, size_t n, const char *const *names,
                           const char *const *patches, int *rcs);
    void *arg;
} lc_kube_ops;

#endif
