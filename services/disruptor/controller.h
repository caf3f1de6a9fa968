/* controller.h - the disruption controller: one pass decides, validates
 * and executes (Karpenter's disruption controller and orchestration
 * queue).
 *
 * Each pass, on a fresh snapshot from the watcher (nothing is decided
 * until it says synced):
 *   1. drift hashes are stamped (hash.h);
 *   2. expired nodes are deleted, forcefully (expiration.c);
 *   3. commands in flight advance: a PROPOSED one older than
 *      validation_ms is validated again on this pass's view -- every
 *      candidate still exists, is not disrupting, passes its blockers, is
 *      still empty / drifted / worth consolidating (consolidation is
 *      simulated again, with the pods read from Kubernetes in full form
 *      -- node selectors, affinity, tolerations -- and the fresh
 *      replacement used), and the budgets
 *      still allow it -- then executed: candidates tainted
 *      karpenter.sh/disrupted:NoSchedule, replacements launched (named
 *      here; the launcher's idempotency key), and once every replacement's
 *      NodeClaim is Initialized the candidates' NodeClaims are deleted, to
 *      be drained by the termination controller.  Deletes without
 *      replacements are deleted at once.  A command whose replacements
 *      are not Initialized by replace_timeout_ms, or whose launch failed,
 *      is undone (untainted, unused replacements deleted);
 *   4. taints no command holds -- left by a crash -- are taken off once
 *      seen stale twice, at least 5 s apart (a node is never left tainted);
 *   5. when no voluntary command is in flight and no pod is freshly
 *      pending (pending_grace_ms: provisioning owns those, and a
 *      simulation that left them out would count their room twice), the
 *      voluntary methods run in order -- emptiness, drift, consolidation
 *      -- and the first decision is PROPOSED.
 * Pods of nodes still draining are placed in every simulation (sim.h
 * extra), so a decision never counts room another one will use.
 */
#ifndef DS_CONTROLLER_H
#define DS_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "budget.h"
#include "cmd.h"
#include "methods.h"
#include "ds_ops.h"
#include "sim.h"
#include "tailor/v1/disruptor.pb-c.h"
#include "tlr_log.h"
#include "tlr_metrics.h"
#include "tlr_time.h"
#include "view.h"

typedef struct ds_ctl_opts {
    const tlr_clock *clock;
    ds_kube_ops kube;
    ds_launcher_ops launcher;
    ds_solver_ops solver;
    ds_watcher_ops watcher;
    const Tailor__V1__Catalog *catalog;    /* borrowed; NULL: no simulation */
    const ds_podevents *podevents;         /* borrowed; may be NULL */
    /* The pods bound to a node in full form (tlr_drain_ops.list_pods):
     * validation places those, not the snapshot's compact ones (sim.h).
     * NULL: validate on the snapshot. */
    int (*full_pods)(void *arg, const char *node, Tailor__V1__Pod ***pods, size_t *n);
    void *full_pods_arg;
    int64_t validation_ms;                 /* 0 = none */
    int64_t replace_timeout_ms;            /* 0 = 10 min */
    int64_t pending_grace_ms;              /* 0 = 120 s */
    int64_t time_budget_ms;                /* single-node probing; 0 = 5 s */
    double min_savings;
    bool spot_to_spot;                     /* methods.h ds_mctx.spot_to_spot */
    /* Karpenter's MIN_VALUES_POLICY / PREFERENCE_POLICY for Simulate, as
     * the launcher sends them with Solve (UNSPECIFIED = Strict / Respect). */
    Tailor__V1__MinValuesPolicy min_values_policy;
    Tailor__V1__PreferencePolicy preference_policy;
    int max_candidates;
    bool dry_run;                          /* decide and publish, never act */
    tlr_logger *log;
    tlr_metrics *metrics;
    void (*publish)(void *arg, const Tailor__V1__DisruptionEvent *ev);
    void *publish_arg;
} ds_ctl_opts;

typedef struct ds_ctl ds_ctl;

void ds_ctl_create(const ds_ctl_opts *o, ds_ctl **out);   /* owned */
void ds_ctl_free(ds_ctl *c);
/* Price and simulate with cat from the next pass on (borrowed; NULL: no
 * simulation).  The previous one may be freed once this returns. */
void ds_ctl_set_catalog(ds_ctl *c, const Tailor__V1__Catalog *cat);

typedef struct ds_ctl_stats {
    bool synced;
    int expired;              /* claims deleted for expireAfter */
    int proposed;             /* commands decided this pass */
    int executed;             /* commands that tainted / launched / deleted */
    int done, aborted, failed;
    int untainted;            /* stale taints removed */
    int stamps;               /* hash annotations written */
    int pool_status;          /* NodePool statuses written */
    int claim_conditions;     /* NodeClaim Drifted / Consolidatable changes written */
    double decide_ms;         /* time in the voluntary methods */
    int simulations;
} ds_ctl_stats;

int ds_ctl_pass(ds_ctl *c, ds_ctl_stats *st);

/* A fresh view (snapshot) for Explain.  *out owned (ds_view_free). */
int ds_ctl_view(ds_ctl *c, ds_view **out);
/* A method context over v for one-off evaluations (Explain): b and sim
 * are the caller's storage, filled here; clear b with ds_budgets_clear. */
void ds_ctl_mctx(ds_ctl *c, const ds_view *v, ds_budgets *b, ds_sim *sim, ds_mctx *m);
/* The command in flight holding node, or NULL (borrowed, valid until the
 * next pass). */
const ds_cmd *ds_ctl_command_for(const ds_ctl *c, const char *node);

#endif
