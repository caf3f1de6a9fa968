/* migctl.h - what the files of `tailorctl migrate` share.
 *
 *   migrate.c           flags, subcommand dispatch, one cluster or a plan file
 *   migrate_cluster.c   the real world: Kubernetes and AWS clients, the ops
 *                       the run loop acts through, snapshots of the cluster
 *   migrate_preflight.c gathers what the preflight checks judge
 *   migrate_run.c       the run loop: decide (common/migrate), act (ops)
 *   migrate_status.c    status and rollback
 *   migrate_waves.c     a plan file: clusters in waves, gates between them
 *
 * The run loop sees the world only through mig_ops, so it is tested with
 * a recording fake (migrate_run_test.c).
 */
#ifndef MIGCTL_H
#define MIGCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tlr_buf.h"
#include "tlr_conf.h"
#include "tlr_drain.h"
#include "tlr_migrate.h"
#include "tlr_time.h"

#define MIG_NAMESPACE_DEFAULT "tailor-system"

/* ---- one read of the cluster ------------------------------------------- */

/* Nodes and pods as the decisions see them.  The views' strings point
 * into pool, which the snapshot owns. */
typedef struct mig_snap {
    tlr_mig_nodev *nodes;
    size_t nnodes;
    tlr_mig_podv *pods;
    size_t npods;
    char **pool;
    size_t npool, cap;
} mig_snap;

/* A copy of v kept in s->pool (borrowed from s); NULL stays NULL. */
const char *mig_snap_str(mig_snap *s, const char *v);
void mig_snap_free(mig_snap *s);

/* An ASG as the run loop needs it. */
typedef struct mig_asg_view {
    int min, max, desired;
    char **instances;      /* owned */
    size_t ninstances;
} mig_asg_view;
void mig_asg_view_free(mig_asg_view *v);

/* Everything the run loop, status and rollback do to the world.  Errors
 * are TLR_E_* with a one-line reason in err (len bytes). */
typedef struct mig_ops {
    /* Every node (selected = a legacy node of this migration) and pod. */
    int (*snapshot)(void *arg, mig_snap *out, char *err, size_t len);
    int (*cordon)(void *arg, const char *node, bool on, char *err, size_t len);
    /* The checkpoint: TLR_E_NOTFOUND when there is none.  save: create or
     * update; TLR_E_CONFLICT when someone else wrote it since load/save. */
    int (*load)(void *arg, tlr_mig_state *out, char *err, size_t len);
    int (*save)(void *arg, const tlr_mig_state *s, char *err, size_t len);
    /* A rolling restart of Deployment ns/name for token (the pod uid it
     * protects): *started true when it started one now, false when one
     * for token was started before; TLR_E_UNIMPLEMENTED when the
     * Deployment cannot surge (Recreate, maxSurge 0). */
    int (*restart)(void *arg, const char *ns, const char *name, const char *token,
                   bool *started, char *err, size_t len);
    /* The ASG: TLR_E_NOTFOUND when it does not exist. */
    int (*asg_describe)(void *arg, const char *asg, mig_asg_view *out, char *err, size_t len);
    /* Sizes < 0 are left as they are. */
    int (*asg_update)(void *arg, const char *asg, int min, int max, int desired, char *err,
                      size_t len);
    /* Terminate instance, decrementing its group's desired capacity. */
    int (*asg_terminate)(void *arg, const char *instance, char *err, size_t len);
    /* Evictions: list_pods, list_pdbs, evict, delete_pod (guard unused:
     * the run loop sets its own). */
    tlr_drain_ops drain;
    void (*sleep_ms)(void *arg, int64_t ms);
    /* Is pid alive on this host (the lock's stale check)? */
    bool (*alive)(void *arg, int64_t pid);
    tlr_clock clock;
    void *arg;
} mig_ops;

/* ---- the run ------------------------------------------------------------ */

typedef struct mig_run_opts {
    const char *name;          /* checkpoint name */
    const char *label;         /* progress prefix: "legacy-m5" or "dev/legacy-m5" */
    const char *selector, *asg;
    int batch, max_nodes, max_pending, restart_threshold;
    bool cordon_all;           /* cordon every legacy node first (default) */
    bool restart_single;       /* rolling-restart single-replica Deployments first */
    int64_t drain_timeout_ms, ready_timeout_ms, health_timeout_ms, remove_timeout_ms;
    int64_t poll_ms, lock_ttl_ms, heartbeat_ms;
    const char *host;          /* this run, for the lock */
    int64_t pid;
    FILE *progress;            /* stderr; NULL = quiet */
    bool progress_json;        /* -o json: each line a {"progress":{...}} object */
} mig_run_opts;

/* Run (or resume) one cluster's migration.  Returns a TLR_MIG_EXIT_*
 * code; *final (may be NULL) gets the last checkpoint (owned: clear it). */
int mig_run(const mig_ops *ops, const mig_run_opts *o, tlr_mig_state *final);

/* Rollback: uncordon, restore the ASGs' sizes, phase RolledBack.
 * Returns a TLR_MIG_EXIT_* code. */
int mig_rollback(const mig_ops *ops, const mig_run_opts *o, tlr_mig_state *final);

/* Take the checkpoint's lock for this run (load it, or start a fresh one
 * when there is none or it was rolled back).  TLR_MIG_EXIT_OK, _LOCKED,
 * or _FAIL. */
int mig_lock(const mig_ops *ops, const mig_run_opts *o, tlr_mig_state *s, bool *fresh);

/* One progress line: "tailorctl migrate LABEL: ..." on o->progress. */
void mig_say(const mig_run_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- one cluster, for real (migrate_cluster.c) -------------------------- */

typedef struct mig_cfg {
    char *kubeconfig, *context, *name, *ns, *selector, *asg;
    char *region, *endpoint, *catalog, *k8s, *plan_file, *wave;
    tlr_strlist approve;
    int batch, max_nodes, max_pending, restart_threshold;
    int output;                /* 0 text, 1 json */
    int cordon;                /* 0 all, 1 batch */
    int64_t drain_timeout_ms, ready_timeout_ms, health_timeout_ms, remove_timeout_ms;
    int64_t poll_ms, lock_ttl_ms, gate_timeout_ms;
    bool in_cluster, restart_single, wait_gates;
} mig_cfg;

typedef struct mig_cluster mig_cluster;

/* Connect to the cluster and AWS as cfg says (borrowed; must outlive the
 * cluster).  On TLR_OK *out is new (mig_cluster_free).  Nothing is
 * contacted yet except the kubeconfig's exec plugin, if any. */
int mig_cluster_open(const mig_cfg *cfg, mig_cluster **out, char *err, size_t len);
void mig_cluster_free(mig_cluster *c);
/* The ops over c (borrowed: valid while c lives). */
void mig_cluster_ops(mig_cluster *c, mig_ops *out);
/* The checkpoint name this cluster's migration uses. */
const char *mig_cluster_name(const mig_cluster *c);

/* Preflight (migrate_preflight.c): append the checks to out.  resuming:
 * a checkpoint exists, so no legacy node left is not a failure.
 * TLR_OK when the checks ran (they may have failed); an error when the
 * cluster or AWS could not be read (err says which). */
int mig_preflight(mig_cluster *c, bool resuming, tlr_mig_checks *out, char *err, size_t len);

/* Shared by migrate_preflight.c and migrate_cluster.c: the Kubernetes and
 * AWS clients of c (borrowed). */
typedef struct tlr_kube tlr_kube;
typedef struct tlr_ec2 tlr_ec2;
typedef struct tlr_aws_json tlr_aws_json;
tlr_kube *mig_cluster_kube(mig_cluster *c);
tlr_ec2 *mig_cluster_ec2(mig_cluster *c);
tlr_aws_json *mig_cluster_ssm(mig_cluster *c);
const mig_cfg *mig_cluster_cfg(const mig_cluster *c);
/* The legacy nodes' names and instances now (selection as the run
 * makes it), as a snapshot. */
int mig_cluster_snapshot(mig_cluster *c, mig_snap *out, char *err, size_t len);

/* Options for a run from cfg (strings borrowed from cfg and c). */
void mig_run_opts_from(const mig_cfg *cfg, mig_cluster *c, const char *label,
                       mig_run_opts *out);

/* ---- subcommands (migrate_cmds.c) ------------------------------------------ */

/* One cluster each; label prefixes progress lines (NULL: the name).  The
 * mig_cmd_* print their result (table or JSON) to stdout; the others hand
 * it back for a plan file's summary.  All return the exit code. */
int mig_cmd_plan(const mig_cfg *cfg, const char *label);
int mig_cmd_run(const mig_cfg *cfg, const char *label);
int mig_cmd_status(const mig_cfg *cfg, const char *label);
int mig_cmd_rollback(const mig_cfg *cfg, const char *label);
/* The checks, as cfg->output says, appended to out. */
int mig_plan_into(const mig_cfg *cfg, const char *label, tlr_buf *out);
/* *final gets the last checkpoint (owned; name NULL when there is none). */
int mig_run_cluster(const mig_cfg *cfg, const char *label, tlr_mig_state *final);
int mig_rollback_cluster(const mig_cfg *cfg, const char *label, tlr_mig_state *final);
/* The checkpoint of cfg's cluster: TLR_OK with *out filled,
 * TLR_E_NOTFOUND, or an error (err says which). */
int mig_read_state(const mig_cfg *cfg, tlr_mig_state *out, char *err, size_t len);

/* With --plan-file (migrate_waves.c); sub is "plan", "run", "status" or
 * "rollback". */
int mig_waves(const mig_cfg *cfg, const char *sub);

#endif
