/* ds_ops.h - what the disruptor's logic needs from the outside world.
 *
 * Small method tables -- Kubernetes, the launcher, the solver, the
 * watcher, AWS (SQS) -- filled by the real clients (ds_kube.c,
 * clients.c, ds_cloud.c) in the service and by recording fakes (ds_fake.c) in
 * tests, so every decision (termination.c, protect.c, the methods,
 * controller.c, explain.c) is tested without a network.  Every method
 * returns TLR_OK or a TLR_E_* code; pointers passed in are borrowed unless
 * the comment says otherwise.
 */
#ifndef DS_OPS_H
#define DS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/launcher.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tailor/v1/watcher.pb-c.h"
#include "tlr_drain.h"
#include "tlr_kread.h"
#include "tlr_labels.h"

#define DS_FINALIZER TLR_FINALIZER_TERMINATION
#define DS_TAINT_KEY TLR_TAINT_DISRUPTED
#define DS_DO_NOT_DISRUPT TLR_ANNOTATION_DO_NOT_DISRUPT
/* Where the drain deadline (deletion + terminationGracePeriod) lives. */
#define DS_TERMINATION_TS TLR_ANNOTATION_TERMINATION_TIMESTAMP

/* ---- Kubernetes ------------------------------------------------------ */

/* NodeClaims and Nodes as the termination controller reads them:
 * tlr_kclaims / tlr_knodes of tlr_kread.h (common/kubeobj). */

typedef enum ds_kind {
    DS_KIND_NODE = 1,
    DS_KIND_NODECLAIM,
    DS_KIND_NODEPOOL,
    DS_KIND_NODECLASS,
} ds_kind;

/* A pod's workload, as single-replica protection needs it. */
typedef struct ds_workload {
    char *kind;              /* "Deployment", "StatefulSet", "ReplicaSet", ... */
    char *ns, *name;
    int32_t replicas;        /* spec.replicas */
    int32_t ready;           /* status.readyReplicas */
    int32_t updated;         /* status.updatedReplicas (Deployment) */
    bool surge;              /* a rolling update may add a pod first (maxSurge > 0) */
    char *restarted_for;     /* annotation tailor.sh/restarted-for ("" none) */
} ds_workload;
void ds_workload_clear(ds_workload *w);

typedef struct ds_kube_ops {
    int (*claims_list)(void *arg, tlr_kclaims *out);
    int (*nodes_list)(void *arg, tlr_knodes *out);
    /* Add (add = true) or remove DS_FINALIZER on a Node or NodeClaim
     * (read-modify-write with the resourceVersion; TLR_E_CONFLICT when it
     * changed meanwhile).  TLR_E_NOTFOUND when gone. */
    int (*finalizer)(void *arg, ds_kind kind, const char *name, bool add);
    /* Put on (on = true) or take off karpenter.sh/disrupted:NoSchedule. */
    int (*taint)(void *arg, const char *node, bool on);
    /* Merge-patch one annotation on an object (value NULL removes it). */
    int (*annotate)(void *arg, ds_kind kind, const char *name, const char *key,
                    const char *value);
    /* Delete; TLR_E_NOTFOUND when already gone. */
    int (*remove)(void *arg, ds_kind kind, const char *name);
    /* A core/v1 Event about an object ("Node", "NodeClaim", "Pod").
     * type "Normal" or "Warning". */
    int (*event)(void *arg, const char *kind, const char *ns, const char *name,
                 const char *uid, const char *type, const char *reason, const char *message);
    /* The workload owning a pod through its controller owner (kind/name in
     * ns); a ReplicaSet is followed to its Deployment.  *out filled
     * (ds_workload_clear).  TLR_E_NOTFOUND: no such owner. */
    int (*workload)(void *arg, const char *ns, const char *owner_kind, const char *owner_name,
                    ds_workload *out);
    /* A rolling restart: spec.template.metadata.annotations
     * kubectl.kubernetes.io/restartedAt = at (RFC 3339) and the
     * Deployment's annotation tailor.sh/restarted-for = reason. */
    int (*restart)(void *arg, const char *ns, const char *deployment, const char *at,
                   const char *reason);
    /* Set one condition in a NodeClaim's status.conditions (the others
     * kept; read-modify-write with the resourceVersion: TLR_E_CONFLICT when
     * it changed meanwhile).  status "True", "False" or "Unknown", or NULL
     * to remove the condition (Karpenter's Clear).  May be NULL (no
     * conditions written). */
    int (*condition)(void *arg, const char *claim, const char *type, const char *status,
                     const char *reason, const char *message);
    /* Merge-patch an object's status subresource with status (a JSON
     * object) under metadata.resourceVersion rv ("" = none): TLR_E_CONFLICT
     * when the object changed since.  May be NULL (no status written). */
    int (*status)(void *arg, ds_kind kind, const char *name, const char *rv, const char *status);
    void *arg;
} ds_kube_ops;

/* ---- the other services --------------------------------------------- */

typedef struct ds_launcher_ops {
    /* On TLR_OK *resp is new and owned (protobuf_c_message_free_unpacked). */
    int (*launch)(void *arg, const Tailor__V1__LaunchRequest *req,
                  Tailor__V1__LaunchResponse **resp);
    int (*terminate)(void *arg, const Tailor__V1__TerminateRequest *req,
                     Tailor__V1__TerminateResponse **resp);
    void *arg;
} ds_launcher_ops;

typedef struct ds_solver_ops {
    /* One Simulate; the client resends with the catalog on a miss.  On
     * TLR_OK *resp is new and owned: an unpacked message, freed with
     * protobuf_c_message_free_unpacked (tlr_clnt_free), as every reply. */
    int (*simulate)(void *arg, const Tailor__V1__SimulateRequest *req,
                    Tailor__V1__SimulateResponse **resp);
    void *arg;
} ds_solver_ops;

typedef struct ds_watcher_ops {
    /* On TLR_OK *resp is new and owned (protobuf_c_message_free_unpacked). */
    int (*snapshot)(void *arg, const Tailor__V1__SnapshotRequest *req,
                    Tailor__V1__SnapshotResponse **resp);
    void *arg;
} ds_watcher_ops;

/* ---- AWS (the interruption queue) -------------------------------------- */

/* One SQS message. */
typedef struct ds_sqs_msg {
    char *id;
    char *receipt;
    char *body;
} ds_sqs_msg;

typedef struct ds_sqs_msgs {
    ds_sqs_msg *v;
    size_t n;
} ds_sqs_msgs;
void ds_sqs_msgs_free(ds_sqs_msgs *l);

typedef struct ds_cloud_ops {
    /* Up to max messages from the interruption queue, without waiting. */
    int (*receive)(void *arg, int max, ds_sqs_msgs *out);
    int (*delete_msg)(void *arg, const char *receipt);
    void *arg;
} ds_cloud_ops;

#endif
