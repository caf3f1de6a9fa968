/* tlr_migrate.h - the decisions of `tailorctl migrate`: moving a live
 * cluster's pods off Auto Scaling Group nodes onto tailor's, a batch at a
 * time, with a checkpoint that survives a crash.
 *
 * Everything here is pure (docs/STYLE.md, "Decide, then act"): tools/tailorctl/
 * migrate*.c reads the cluster and the cloud, hands plain views to these
 * functions, and carries out what they say.  The pieces:
 *
 *   the checkpoint (state.c)   what a run has done, as JSON in a ConfigMap:
 *                              the legacy nodes and their progress, the
 *                              ASGs' original sizes, the current batch's
 *                              health baseline and displaced workloads;
 *   the step machine (decide.c) which nodes go next and what to do now;
 *                              is a batch's work Ready on tailor's nodes;
 *                              is the cluster healthy; who holds the lock;
 *                              which pods need a rolling restart first;
 *                              what a rollback undoes;
 *   preflight (preflight.c)    the checks before anything moves: the AMIs
 *                              each EC2NodeClass resolves to (exist, arch,
 *                              deprecation, not older than the legacy
 *                              nodes'), the dry-run solve's coverage, drain
 *                              blockers; rendered as a table or JSON;
 *   the plan file (planfile.c) clusters in waves, and the gate between
 *                              waves.
 *
 * A node's life in a migration (tlr_mig_node_state):
 *
 *   pending -> draining -> replacing -> verifying -> removing -> done
 *                 cordon,     displaced    health      ASG shrinks,
 *                 evict       pods Ready   gate        node gone
 *                             on tailor
 * A node that disappears before its turn is "gone".  A batch moves
 * together; the checkpoint is written before each act, so a restarted run
 * picks up the batch where it stopped and never drains a finished node.
 */
#ifndef TLR_MIGRATE_H
#define TLR_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/nodepool.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "tlr_ami.h"
#include "tlr_buf.h"

/* ---- exit codes ----------------------------------------------------------
 * One table for the code, its name in JSON and the documentation
 * (docs/tailorctl.md copies it). */
#define TLR_MIG_EXIT_MAP(X)                                                               \
    X(OK, 0, "done: the checks passed, the migration finished, or the rollback did")      \
    X(FAIL, 1, "an operation failed: the cluster or AWS could not be read or changed")    \
    X(USAGE, 2, "bad usage or bad input: flags, the plan file")                           \
    X(INVALID, 3, "a preflight check failed: nothing was touched")                        \
    X(HALTED, 4, "a step timed out or the health gate failed: the run stopped, the "      \
                 "checkpoint says where; run again to resume, or roll back")              \
    X(GATE, 5, "a wave gate is closed: an approval is missing or the soak time is not over") \
    X(LOCKED, 6, "another run holds the checkpoint")                                      \
    X(PAUSED, 7, "--max-nodes reached: the migration is paused; run again to go on")

typedef enum tlr_mig_exit {
#define TLR_MIG_X(name, num, msg) TLR_MIG_EXIT_##name = num,
    TLR_MIG_EXIT_MAP(TLR_MIG_X)
#undef TLR_MIG_X
} tlr_mig_exit;

const char *tlr_mig_exit_name(int code);   /* "HALTED"; "UNKNOWN" */
const char *tlr_mig_exit_text(int code);

/* ---- the checkpoint --------------------------------------------------- */

typedef enum tlr_mig_phase {
    TLR_MIG_PHASE_PENDING = 0,   /* created, nothing touched yet */
    TLR_MIG_PHASE_RUNNING,
    TLR_MIG_PHASE_PAUSED,        /* --max-nodes reached */
    TLR_MIG_PHASE_HALTED,        /* a step failed; message says why */
    TLR_MIG_PHASE_DONE,
    TLR_MIG_PHASE_ROLLED_BACK,
} tlr_mig_phase;

typedef enum tlr_mig_node_state {
    TLR_MIG_NODE_PENDING = 0,
    TLR_MIG_NODE_DRAINING,
    TLR_MIG_NODE_REPLACING,
    TLR_MIG_NODE_VERIFYING,
    TLR_MIG_NODE_REMOVING,
    TLR_MIG_NODE_DONE,
    TLR_MIG_NODE_GONE,
} tlr_mig_node_state;

const char *tlr_mig_phase_name(tlr_mig_phase p);        /* "Running" */
const char *tlr_mig_node_state_name(tlr_mig_node_state s); /* "draining" */

typedef struct tlr_mig_node {
    char *name, *instance, *asg, *zone;   /* owned; instance/asg/zone "" unknown */
    tlr_mig_node_state state;
    bool was_cordoned;    /* cordoned before the migration: rollback leaves it so */
    int batch;            /* 0 = not started */
    int pods;             /* pods displaced from it (at its batch's start) */
    int64_t started_ms, done_ms;
    char *message;        /* owned: last blocker or reason; "" */
} tlr_mig_node;

/* An ASG's sizes before the migration froze it. */
typedef struct tlr_mig_asg {
    char *name;
    int min, max, desired;
} tlr_mig_asg;

/* A workload that had pods on the current batch's nodes. */
typedef struct tlr_mig_owner {
    char *kind, *ns, *name;   /* "Deployment" default web */
    int ready_before;         /* its Ready pods anywhere when the batch began */
    int tailor_before;        /* ... of them on tailor's nodes */
    int displaced;            /* its Ready pods on the batch's nodes */
} tlr_mig_owner;

/* A pod's restart count when the current batch began. */
typedef struct tlr_mig_restart {
    char *uid, *pod;          /* pod: "ns/name" */
    int restarts;
    bool crashloop;
} tlr_mig_restart;

/* Who is running the migration now. */
typedef struct tlr_mig_holder {
    char *host;               /* "" = nobody */
    int64_t pid;
    int64_t heartbeat_ms;
} tlr_mig_holder;

typedef struct tlr_mig_state {
    int version;              /* 1 */
    char *name;               /* the migration's name: ConfigMap tailor-migrate-<name> */
    char *selector, *asg;     /* how legacy nodes are chosen ("" unused) */
    tlr_mig_phase phase;
    char *message;            /* "" or why it halted / what it did last */
    bool frozen;              /* ASGs' sizes recorded and frozen, nodes cordoned */
    int batch_size;
    int batch_no;             /* batches started so far */
    int64_t created_ms, updated_ms, finished_ms;
    tlr_mig_holder holder;
    tlr_mig_asg *asgs;
    size_t nasgs;
    tlr_mig_node *nodes;
    size_t nnodes;
    tlr_mig_owner *owners;      /* the current batch's */
    size_t nowners;
    tlr_mig_restart *baseline;  /* the current batch's; pods with restarts or crash loops */
    size_t nbaseline;
} tlr_mig_state;

/* A fresh state for name (copied), selector/asg (copied, may be NULL). */
void tlr_mig_state_init(tlr_mig_state *s, const char *name, const char *selector,
                        const char *asg, int batch_size, int64_t now_ms);
void tlr_mig_state_clear(tlr_mig_state *s);   /* contents; NULL fine */

/* Append the checkpoint as one JSON object to out (fields stable;
 * docs/migration.md lists them). */
int tlr_mig_state_json(const tlr_mig_state *s, tlr_buf *out);
/* Parse text[0..len) (borrowed).  On TLR_OK *out is filled (owned: clear
 * it).  TLR_E_PARSE with err saying which field is wrong; TLR_E_VERSION
 * for a checkpoint written by a newer tailorctl. */
int tlr_mig_state_parse(const char *text, size_t len, tlr_mig_state *out, char *err,
                        size_t errlen);

/* Counts by node state, for status lines. */
typedef struct tlr_mig_counts {
    size_t total, pending, in_flight, done, gone;
} tlr_mig_counts;
void tlr_mig_state_counts(const tlr_mig_state *s, tlr_mig_counts *out);

/* The node named name, or NULL (borrowed). */
tlr_mig_node *tlr_mig_state_node(tlr_mig_state *s, const char *name);
const tlr_mig_asg *tlr_mig_state_asg(const tlr_mig_state *s, const char *name);
/* Record an ASG's sizes (once: a second call for the same name keeps the
 * first, which are the originals). */
void tlr_mig_state_add_asg(tlr_mig_state *s, const char *name, int min, int max, int desired);
/* Set a node's state, its message (may be NULL), and done_ms when it
 * becomes done or gone. */
void tlr_mig_node_set(tlr_mig_node *n, tlr_mig_node_state st, const char *message,
                      int64_t now_ms);

/* ---- views of the cluster (borrowed strings, filled by the caller) ---- */

typedef struct tlr_mig_podv {
    const char *uid, *ns, *name;
    const char *node;         /* "" unbound */
    /* The workload: the controller owner, a ReplicaSet followed to its
     * Deployment ("Deployment", "StatefulSet", "DaemonSet", "Job",
     * "ReplicaSet", ...); "" when it has none. */
    const char *owner_kind, *owner_name;
    bool ready, terminal, deleting;
    int restarts;             /* summed over containers */
    bool crashloop;           /* a container waits in CrashLoopBackOff */
} tlr_mig_podv;

typedef struct tlr_mig_nodev {
    const char *name, *instance, *zone;
    const char *asg;          /* its instance's aws:autoscaling:groupName; "" none */
    bool tailor;              /* karpenter.sh/nodepool label: one of tailor's */
    bool selected;            /* a legacy node of this migration */
    bool unschedulable;
} tlr_mig_nodev;

/* ---- the step machine ------------------------------------------------- */

/* Fold the nodes found now (nodes[0..n), only those with .selected count)
 * into s: new ones are appended as pending (sorted by name among
 * themselves), pending ones no longer there become gone. Returns how many
 * were added. */
size_t tlr_mig_merge(tlr_mig_state *s, const tlr_mig_nodev *nodes, size_t n, int64_t now_ms);

typedef enum tlr_mig_step {
    TLR_MIG_STEP_FREEZE = 0,  /* record the ASGs' sizes, set min 0 / max desired, cordon */
    TLR_MIG_STEP_START,       /* begin a batch: next.nodes */
    TLR_MIG_STEP_DRAIN,       /* cordon and drain the batch */
    TLR_MIG_STEP_WAIT,        /* wait for the displaced pods, Ready on tailor's nodes */
    TLR_MIG_STEP_HEALTH,      /* the health gate */
    TLR_MIG_STEP_REMOVE,      /* shrink the ASGs; wait for the nodes to go */
    TLR_MIG_STEP_PAUSE,       /* --max-nodes reached */
    TLR_MIG_STEP_DONE,
} tlr_mig_step;

const char *tlr_mig_step_name(tlr_mig_step s);

typedef struct tlr_mig_next_opts {
    int batch;                /* nodes per batch, >= 1 */
    int max_nodes;            /* nodes to start in this run; 0 = all */
    int started;              /* nodes started in this run so far */
} tlr_mig_next_opts;

typedef struct tlr_mig_next {
    tlr_mig_step step;
    size_t *nodes;            /* owned: indexes into s->nodes (the batch) */
    size_t n;
} tlr_mig_next;

/* What to do now.  A batch in flight is finished first (its least
 * advanced node says the step); then the next batch's pending nodes in
 * checkpoint order.  *out is filled; free with tlr_mig_next_clear(). */
void tlr_mig_decide_next(const tlr_mig_state *s, const tlr_mig_next_opts *o, tlr_mig_next *out);
void tlr_mig_next_clear(tlr_mig_next *n);

/* Begin a batch of s->nodes[idx[0..n)]: they become draining with batch
 * number ++s->batch_no, and the batch's baseline is recorded from pods:
 * restart counts (only pods with restarts or a crash loop are stored:
 * absent means 0), and the workloads with pods on those nodes (DaemonSet
 * pods and pods without a controller are not waited for). */
void tlr_mig_batch_begin(tlr_mig_state *s, const size_t *idx, size_t n,
                         const tlr_mig_podv *pods, size_t npods, const tlr_mig_nodev *nodes,
                         size_t nnodes, int64_t now_ms);

/* Are the current batch's displaced pods back?  For every owner: no pod of
 * it left on a batch node, at least ready_before Ready pods elsewhere, and
 * at least tailor_before + displaced Ready pods on tailor's nodes.  On
 * false, why (len bytes) names the first workload that is short and how. */
bool tlr_mig_replaced(const tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods,
                      const tlr_mig_nodev *nodes, size_t nnodes, char *why, size_t len);

typedef struct tlr_mig_health_opts {
    int max_pending;          /* pending (unbound, live) pods allowed */
    int restart_threshold;    /* restarts since the baseline that count; >= 1 */
} tlr_mig_health_opts;

typedef struct tlr_mig_health {
    bool ok;
    size_t pending;           /* unbound live pods */
    size_t crashing;          /* pods newly crash-looping or restarting */
    char **problems;          /* owned: one line each, at most 20 */
    size_t nproblems;
} tlr_mig_health;

/* The health gate: no pod newly crash-looping (CrashLoopBackOff now but
 * not at the baseline, or restarts grown by restart_threshold or more;
 * pods not in the baseline count from 0), and at most max_pending
 * pending pods. */
void tlr_mig_health_check(const tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods,
                          const tlr_mig_health_opts *o, tlr_mig_health *out);
void tlr_mig_health_clear(tlr_mig_health *h);

/* Take the restart baseline again from pods (owners are kept).  A run
 * resuming a halted migration does this: the operator has looked at the
 * pods that failed the gate, and restarts that happened before are not
 * news. */
void tlr_mig_rebaseline(tlr_mig_state *s, const tlr_mig_podv *pods, size_t npods);

/* The lock.  host/pid: this run; alive: whether the holder's pid still
 * runs (only meaningful on the same host).  TLR_OK take it (nobody holds
 * it, it is ours, it is stale past ttl_ms, or its process is dead on this
 * host); TLR_E_BUSY refuse (why names the holder). */
int tlr_mig_lock_decide(const tlr_mig_holder *h, const char *host, int64_t pid, bool alive,
                        int64_t now_ms, int64_t ttl_ms, char *why, size_t len);

/* Single-replica protection: should pod p's workload get a rolling restart
 * before p is evicted, so it never has zero Ready pods?  True for a Ready
 * pod of a Deployment with one Ready pod in all (surge then starts the new
 * pod first); other workloads are evicted (their PDB decides). */
bool tlr_mig_needs_restart(const tlr_mig_podv *p, const tlr_mig_podv *pods, size_t npods);

/* What a rollback undoes: the nodes to uncordon (not done or gone, not
 * cordoned before the migration, cordoned now), and the ASGs to restore
 * (every recorded one).  Indexes into s->nodes / s->asgs; owned arrays. */
typedef struct tlr_mig_rollback {
    size_t *uncordon;
    size_t nuncordon;
    size_t *restore;
    size_t nrestore;
} tlr_mig_rollback;
void tlr_mig_rollback_plan(const tlr_mig_state *s, const tlr_mig_nodev *nodes, size_t nnodes,
                           tlr_mig_rollback *out);
void tlr_mig_rollback_clear(tlr_mig_rollback *r);

/* `status`: the checkpoint as a table (text) or JSON (the checkpoint plus
 * "counts"), appended to out. */
void tlr_mig_status_text(const tlr_mig_state *s, int64_t now_ms, tlr_buf *out);
void tlr_mig_status_json(const tlr_mig_state *s, tlr_buf *out);

/* ---- preflight -------------------------------------------------------- */

typedef enum tlr_mig_result {
    TLR_MIG_PASS = 0,
    TLR_MIG_WARN,
    TLR_MIG_FAIL,
} tlr_mig_result;

typedef struct tlr_mig_check {
    char *check;      /* "ami-arch", "coverage", ... */
    char *object;     /* "NodePool default", "pod default/web-1" */
    tlr_mig_result result;
    char *message;
} tlr_mig_check;

typedef struct tlr_mig_checks {
    tlr_mig_check *v;   /* owned */
    size_t n, cap;
} tlr_mig_checks;

void tlr_mig_checks_add(tlr_mig_checks *c, const char *check, const char *object,
                        tlr_mig_result r, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void tlr_mig_checks_free(tlr_mig_checks *c);
size_t tlr_mig_checks_count(const tlr_mig_checks *c, tlr_mig_result r);

/* One legacy node's AMI, as DescribeInstances and DescribeImages said. */
typedef struct tlr_mig_legacy_ami {
    const char *node;         /* borrowed */
    const char *ami;          /* "" when the instance was not found */
    const tlr_ami *image;     /* NULL when DescribeImages did not know it */
} tlr_mig_legacy_ami;

/* The AMI checks of one NodePool. */
typedef struct tlr_mig_pool_in {
    const Tailor__V1__NodePool *pool;
    const char *nodeclass;             /* the class it names */
    bool class_found;
    const tlr_amis *amis;              /* resolved; NULL when it failed */
    const char *resolve_error;         /* why not */
    const tlr_mig_legacy_ami *legacy;  /* the legacy nodes' AMIs */
    size_t nlegacy;
    int64_t now_ms;
} tlr_mig_pool_in;

/* The architectures a NodePool allows: its kubernetes.io/arch requirement
 * (In, NotIn), of amd64 and arm64.  *constrained: the pool says which. */
void tlr_mig_pool_archs(const Tailor__V1__NodePool *p, bool *amd64, bool *arm64,
                        bool *constrained);

/* Checks "ami-resolves", "ami-arch", "ami-deprecated", "ami-age". */
void tlr_mig_check_pool(const tlr_mig_pool_in *in, tlr_mig_checks *out);

/* Check "coverage" from a dry-run solve of the legacy nodes' pods:
 * pass with the new nodes and cost, or a fail per unschedulable pod with
 * every NodePool's reason. */
void tlr_mig_check_coverage(const Tailor__V1__SolveResponse *r, size_t pods,
                            tlr_mig_checks *out);

/* Render: a table (RESULT CHECK OBJECT MESSAGE, then a summary line) or
 * one JSON object {"ok", "passed", "warnings", "failed", "checks": [...]}.
 * context (may be NULL) labels the table and adds "cluster" to the JSON. */
void tlr_mig_checks_text(const tlr_mig_checks *c, const char *context, tlr_buf *out);
void tlr_mig_checks_json(const tlr_mig_checks *c, const char *context, tlr_buf *out);

/* ---- the plan file ------------------------------------------------------ */

/* One cluster's settings; unset strings are NULL, unset numbers -1. */
typedef struct tlr_mig_cluster {
    char *name;               /* checkpoint name; default the context */
    char *context, *kubeconfig;
    char *selector, *asg;
    char *region, *aws_endpoint, *k8s_version, *catalog;
    int batch, max_pending, max_nodes;
    int64_t drain_timeout_ms, ready_timeout_ms, health_timeout_ms, remove_timeout_ms;
} tlr_mig_cluster;

typedef struct tlr_mig_gate {
    bool require_done;        /* default true: every earlier cluster Done */
    int64_t wait_ms;          /* soak: since the earlier waves finished; 0 none */
    bool approval;            /* needs --approve-wave NAME */
} tlr_mig_gate;

typedef struct tlr_mig_wave {
    char *name;
    tlr_mig_gate gate;
    tlr_mig_cluster *clusters;   /* defaults already applied */
    size_t nclusters;
} tlr_mig_wave;

typedef struct tlr_mig_plan {
    char *name;
    tlr_mig_wave *waves;
    size_t nwaves;
} tlr_mig_plan;

/* Parse a plan file's bytes (borrowed; YAML or JSON; docs/migration.md).
 * file names it in errors.  On TLR_OK *out is filled (owned: clear it).
 * TLR_E_PARSE / TLR_E_INVAL with err naming the file, the path and the
 * key: "plan.yaml: spec.waves[1].clusters[0].asgg: unknown key". */
int tlr_mig_plan_parse(const char *buf, size_t len, const char *file, tlr_mig_plan *out,
                       char *err, size_t errlen);
void tlr_mig_plan_clear(tlr_mig_plan *p);

/* Where the earlier waves stand (every cluster of every earlier wave). */
typedef struct tlr_mig_waves_done {
    size_t clusters;          /* in the earlier waves */
    size_t done;              /* of them Done */
    int64_t finished_ms;      /* the latest finish among them; 0 none */
} tlr_mig_waves_done;

typedef enum tlr_mig_gate_verdict {
    TLR_MIG_GATE_OPEN = 0,
    TLR_MIG_GATE_WAIT,        /* soak time: open at *until_ms */
    TLR_MIG_GATE_APPROVAL,    /* --approve-wave NAME missing */
    TLR_MIG_GATE_BLOCKED,     /* earlier clusters not Done */
} tlr_mig_gate_verdict;

/* The gate before wave (first: only approval applies).  why (len bytes)
 * says what it waits for. */
tlr_mig_gate_verdict tlr_mig_gate_decide(const tlr_mig_wave *w, bool first,
                                         const tlr_mig_waves_done *earlier, bool approved,
                                         int64_t now_ms, int64_t *until_ms, char *why,
                                         size_t len);

/* "tailor-migrate-" + a DNS-1123 form of name (lowercase, [a-z0-9-],
 * at most 63 characters, a hash suffix when shortened), into buf. */
void tlr_mig_configmap_name(const char *name, char *buf, size_t len);

#endif
