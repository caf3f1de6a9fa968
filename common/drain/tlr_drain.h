/* tlr_drain.h - drain one node the way Karpenter's terminator does.
 *
 * Used by tailor-disruptor's termination controller and by `tailorctl
 * migrate`.  Two halves (docs/STYLE.md, "Decide, then act"):
 *
 *   decide (pure): tlr_drain_decide() takes the pods bound to the node,
 *   the PodDisruptionBudgets, the clock, the node's deadline and the
 *   per-pod retry memory, and says for every pod what to do now --
 *   nothing (skip), wait, evict, or delete past the deadline -- and why;
 *
 *   act: tlr_drain_pass() lists the pods and PDBs through an ops table,
 *   decides, calls the Eviction API (policy/v1 pods/eviction) or deletes,
 *   records 429s with a per-pod exponential backoff, and reports exactly
 *   what blocks the drain (which pod, which PDB, which annotation).
 *
 * Order (Karpenter's terminator, after the Kubernetes graceful node
 * shutdown): pods are evicted in tiers, a tier only once every pod of the
 * tiers before it is gone:
 *   0 non-critical, not DaemonSet;  1 non-critical DaemonSet;
 *   2 critical, not DaemonSet;      3 critical DaemonSet;
 * critical = priorityClassName system-cluster-critical or
 * system-node-critical.
 *
 * Which pods the drain waits for (Karpenter IsWaitingEviction): every pod
 * that is not terminal (Succeeded/Failed), not a mirror pod (owned by the
 * Node: the kubelet's), does not tolerate karpenter.sh/disrupted:NoSchedule
 * (such a pod asked to stay to the end), and is not stuck terminating (its
 * deletionTimestamp passed over a minute ago).  Pods with an active
 * karpenter.sh/do-not-disrupt annotation ("true", or a duration such as
 * "30m" still running since the pod was created) are waited for but never
 * evicted: the node waits until they finish or its deadline passes.
 *
 * The deadline (the NodeClaim's terminationGracePeriod, as the
 * karpenter.sh/nodeclaim-termination-timestamp annotation): a pod whose
 * own terminationGracePeriodSeconds would run past it is deleted (not
 * evicted: PDBs and do-not-disrupt are bypassed) with the grace period
 * clamped to the time left, at least 1 s -- from deadline minus the pod's
 * grace on, in every tier at once, as Karpenter documents.
 *
 * Per-pod retry: an eviction refused with 429 (a PDB allows no disruption
 * now) is retried after a backoff that doubles from backoff_min_ms to
 * backoff_max_ms (Karpenter's eviction queue: 100 ms to 10 s); the memory
 * lives in a tlr_drain_state, kept by the caller between passes and safe
 * to lose (a restarted drain just retries sooner).
 */
#ifndef TLR_DRAIN_H
#define TLR_DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/cluster.pb-c.h"
#include "tailor/v1/pod.pb-c.h"
#include "tlr_labels.h"

#define TLR_DRAIN_DO_NOT_DISRUPT TLR_ANNOTATION_DO_NOT_DISRUPT
#define TLR_DRAIN_TAINT_KEY TLR_TAINT_DISRUPTED
/* A terminating pod is given up on this long after its deletionTimestamp. */
#define TLR_DRAIN_STUCK_MS (60 * 1000)

typedef enum tlr_drain_verdict {
    TLR_DRAIN_SKIP_TERMINAL = 0,    /* Succeeded / Failed */
    TLR_DRAIN_SKIP_MIRROR,          /* owned by the Node (static pod) */
    TLR_DRAIN_SKIP_TOLERATES,       /* tolerates karpenter.sh/disrupted:NoSchedule */
    TLR_DRAIN_SKIP_STUCK,           /* terminating for over TLR_DRAIN_STUCK_MS */
    TLR_DRAIN_WAIT_TERMINATING,     /* deleting already: wait for it to go */
    TLR_DRAIN_WAIT_TIER,            /* an earlier tier still has pods */
    TLR_DRAIN_WAIT_DO_NOT_DISRUPT,  /* karpenter.sh/do-not-disrupt is active */
    TLR_DRAIN_WAIT_BACKOFF,         /* refused recently: retry at retry_at_ms */
    TLR_DRAIN_EVICT,                /* call the Eviction API now */
    TLR_DRAIN_FORCE_DELETE,         /* delete now with grace_s: past the deadline */
} tlr_drain_verdict;

/* "skip-terminal", "wait-tier", "evict", ... (static). */
const char *tlr_drain_verdict_name(tlr_drain_verdict v);

/* Per-pod retry memory, by pod uid.  Owned by the caller. */
typedef struct tlr_drain_state tlr_drain_state;
void tlr_drain_state_create(tlr_drain_state **out);   /* owned */
void tlr_drain_state_free(tlr_drain_state *s);       /* NULL is fine */
/* Forget pods not in uids[0..n) (they are gone). */
void tlr_drain_state_keep(tlr_drain_state *s, const char *const *uids, size_t n);
/* Record a refused eviction of uid at now_ms; the next try waits
 * min(max, min * 2^(refusals-1)).  Returns the retry time. */
int64_t tlr_drain_state_refused(tlr_drain_state *s, const char *uid, int64_t now_ms,
                                int64_t min_ms, int64_t max_ms);
/* Evictions of uid refused in a row so far (0 = never). */
int tlr_drain_state_refusals(const tlr_drain_state *s, const char *uid);

typedef struct tlr_drain_opts {
    int64_t now_ms;          /* wall clock, Unix ms */
    int64_t deadline_ms;     /* node termination time; 0 = none (never force) */
    int64_t backoff_min_ms;  /* 0 = 100 */
    int64_t backoff_max_ms;  /* 0 = 10000 */
} tlr_drain_opts;

/* The verdict on one pod. */
typedef struct tlr_drain_item {
    const Tailor__V1__Pod *pod;      /* borrowed from the input */
    tlr_drain_verdict verdict;
    int tier;                        /* 0..3, see above */
    int64_t grace_s;                 /* FORCE_DELETE: delete with this grace */
    int64_t retry_at_ms;             /* WAIT_BACKOFF: when to try again */
    int64_t dnd_until_ms;            /* WAIT_DO_NOT_DISRUPT: 0 = "true" (until removed) */
    /* The PDB selecting the pod ("ns/name", borrowed from the input), or
     * NULL; pdb_blocks when it allows no disruption now (status). */
    const char *pdb;
    bool pdb_blocks;
    int npdbs;                       /* PDBs selecting it (>1: unevictable) */
} tlr_drain_item;

typedef struct tlr_drain_plan {
    tlr_drain_item *items;   /* one per input pod, input order; owned */
    size_t n;
    size_t waiting;          /* pods the drain still waits for */
    int tier;                /* the tier being evicted; -1 when none */
    bool done;               /* nothing left to wait for: drained */
} tlr_drain_plan;

/* Decide.  pods[0..npods) and pdbs[0..npdbs) are borrowed (the plan points
 * into them; keep them alive while using it).  st may be NULL (no retry
 * memory).  *out is filled; free with tlr_drain_plan_clear(). */
void tlr_drain_decide(const Tailor__V1__Pod *const *pods, size_t npods,
                      const Tailor__V1__PodDisruptionBudget *const *pdbs, size_t npdbs,
                      const tlr_drain_state *st, const tlr_drain_opts *o,
                      tlr_drain_plan *out);
void tlr_drain_plan_clear(tlr_drain_plan *p);

/* Helpers the decision uses, exposed for other deciders (disruption
 * candidates read the same annotations).  All pure; p borrowed. */
bool tlr_drain_pod_terminal(const Tailor__V1__Pod *p);
bool tlr_drain_pod_mirror(const Tailor__V1__Pod *p);
bool tlr_drain_pod_critical(const Tailor__V1__Pod *p);
bool tlr_drain_pod_tolerates_disrupted(const Tailor__V1__Pod *p);
/* Is karpenter.sh/do-not-disrupt active at now_ms?  *until_ms (may be
 * NULL) gets when a duration value runs out (0 for "true").  An invalid
 * value counts as absent, as Karpenter treats it. */
bool tlr_drain_pod_do_not_disrupt(const Tailor__V1__Pod *p, int64_t now_ms, int64_t *until_ms);
/* The value of annotation key on p, or NULL. */
const char *tlr_drain_pod_annotation(const Tailor__V1__Pod *p, const char *key);
/* Does the PDB select p (same namespace, selector matches its labels)? */
bool tlr_drain_pdb_selects(const Tailor__V1__PodDisruptionBudget *b, const Tailor__V1__Pod *p);

/* ---- act ------------------------------------------------------------ */

/* What the drain needs from Kubernetes.  Pointers passed in are borrowed. */
typedef struct tlr_drain_ops {
    /* Every pod bound to node (spec.nodeName), full form (tlr_kubeobj_pod).
     * On TLR_OK *pods is a new array of *n new pods, owned by the caller
     * (free each with tlr_kubeobj_free(), the array with free()). */
    int (*list_pods)(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n);
    /* Every PDB (all namespaces); ownership as list_pods. */
    int (*list_pdbs)(void *arg, Tailor__V1__PodDisruptionBudget ***pdbs, size_t *n);
    /* POST a policy/v1 Eviction with a uid precondition.  TLR_OK evicted;
     * TLR_E_NOTFOUND / TLR_E_CONFLICT the pod is gone or was replaced;
     * TLR_E_THROTTLED a PDB forbids it now (429); anything else an error.
     * msg (len bytes) receives the API server's message. */
    int (*evict)(void *arg, const Tailor__V1__Pod *pod, char *msg, size_t len);
    /* DELETE with gracePeriodSeconds = grace_s and a uid precondition;
     * TLR_E_NOTFOUND when gone (success for the drain). */
    int (*delete_pod)(void *arg, const Tailor__V1__Pod *pod, int64_t grace_s, char *msg,
                      size_t len);
    void *arg;
    /* Optional: asked before every eviction (not before a forced delete).
     * TLR_OK lets it go; TLR_E_BUSY holds it this pass, why (len bytes)
     * says what the pod waits for.  The disruptor's single-replica
     * protection lives here. */
    int (*guard)(void *arg, const Tailor__V1__Pod *pod, char *why, size_t len);
    void *guard_arg;
} tlr_drain_ops;

typedef enum tlr_drain_block_kind {
    TLR_DRAIN_BLOCK_PDB = 1,            /* eviction refused; object = the PDB */
    TLR_DRAIN_BLOCK_DO_NOT_DISRUPT,     /* the pod's annotation */
    TLR_DRAIN_BLOCK_GUARD,              /* held by ops->guard */
    TLR_DRAIN_BLOCK_MULTIPLE_PDBS,      /* more than one PDB selects the pod */
    TLR_DRAIN_BLOCK_ERROR,              /* the API call failed */
} tlr_drain_block_kind;

/* One thing holding the drain up. */
typedef struct tlr_drain_blocker {
    tlr_drain_block_kind kind;
    char *pod_ns, *pod_name;            /* owned */
    char *object;                       /* owned: PDB "ns/name"; "" when none */
    char *message;                      /* owned: one line for an Event */
} tlr_drain_blocker;

typedef struct tlr_drain_report {
    size_t pods;             /* bound to the node */
    size_t waiting;          /* still waited for after this pass */
    size_t evicted;          /* evictions accepted this pass */
    size_t deleted;          /* forced deletes this pass */
    size_t refused;          /* evictions refused (429) this pass */
    int tier;                /* tier evicted this pass; -1 none */
    bool done;               /* drained (nothing left to wait for) */
    tlr_drain_blocker *blockers;   /* owned */
    size_t nblockers;
} tlr_drain_report;

void tlr_drain_report_clear(tlr_drain_report *r);
/* "pod default/web-1: PodDisruptionBudget default/web allows no
 * disruption now; ..." for the first max blockers (buf len bytes). */
void tlr_drain_report_summary(const tlr_drain_report *r, size_t max, char *buf, size_t len);

/* One drain pass over node: list, decide, act.  st (may be NULL) keeps
 * the retry memory between passes.  *rep is filled (clear it after).
 * Returns TLR_OK, or the list error (nothing was done). */
int tlr_drain_pass(const tlr_drain_ops *ops, const char *node, tlr_drain_state *st,
                   const tlr_drain_opts *o, tlr_drain_report *rep);

/* ---- the real ops ---------------------------------------------------- */

typedef struct tlr_kube tlr_kube;
/* ops over a Kubernetes client (kc borrowed; must outlive the ops):
 * list pods with fieldSelector spec.nodeName, list PDBs, POST
 * pods/<name>/eviction, DELETE pods.  guard is left NULL. */
tlr_drain_ops tlr_drain_kube_ops(tlr_kube *kc);

#endif
