/* cmd.h - one disruption decision ("command"): which nodes go, what
 * replaces them, why, and where it is in its life.
 *
 *   PROPOSED  decided by a method; waits validation_delay, then is
 *             checked again against a fresh view (controller.c);
 *   WAITING   candidates tainted karpenter.sh/disrupted:NoSchedule and
 *             replacements launched; waits until every replacement's
 *             NodeClaim is Initialized (or replacement_timeout: abort);
 *   DONE      the candidates' NodeClaims were deleted: the termination
 *             controller drains them;
 *   ABORTED   validation failed (churn: the cluster changed) -- nothing
 *             was touched, or the taints were taken off again;
 *   FAILED    execution failed (a launch refused, a timeout): untainted,
 *             replacements not yet used deleted.
 *
 * Commands live in memory only.  A restart loses PROPOSED and WAITING
 * commands; the controller then takes the taints off nodes no command
 * holds (a node is never left tainted), replacements that were launched
 * become ordinary nodes that consolidation reclaims if unneeded.
 */
#ifndef DS_CMD_H
#define DS_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailor/v1/disruptor.pb-c.h"
#include "tailor/v1/solver.pb-c.h"
#include "view.h"

typedef enum ds_cmd_state {
    DS_CMD_PROPOSED = 0,
    DS_CMD_WAITING,
    DS_CMD_DONE,
    DS_CMD_ABORTED,
    DS_CMD_FAILED,
} ds_cmd_state;

typedef struct ds_cand_ref {
    char *node, *claim, *pool, *type, *zone;   /* owned */
    Tailor__V1__CapacityType ct;
    double price, cost;                       /* USD/h; disruption cost */
} ds_cand_ref;

typedef struct ds_cmd {
    char id[48];
    Tailor__V1__DisruptionMethod method;
    Tailor__V1__DisruptionReason reason;      /* the budget it takes; UNSPECIFIED = forceful */
    ds_cand_ref *c;                           /* owned */
    size_t n, cap;
    Tailor__V1__NodeClaim **repl;             /* owned copies; named when launched */
    size_t nrepl;
    double before, after, savings;            /* USD/hour */
    char why[768];
    ds_cmd_state state;
    int64_t created_ms, validated_ms, launched_ms;
    int sim_calls;                            /* Simulates spent deciding */
} ds_cmd;

/* id "d-<ms>-<seq>".  Owned: ds_cmd_free(). */
ds_cmd *ds_cmd_new(Tailor__V1__DisruptionMethod m, Tailor__V1__DisruptionReason r, int64_t now_ms,
                   unsigned seq);
void ds_cmd_free(ds_cmd *c);
void ds_cmd_add(ds_cmd *c, const ds_vnode *x);
bool ds_cmd_has_node(const ds_cmd *c, const char *node);
/* Take the replacements (deep copies) and costs of a Simulate. */
void ds_cmd_set_replacements(ds_cmd *c, const Tailor__V1__SimulateResponse *r, double after);
/* The candidates' node names, borrowed (free() the array only). */
const char **ds_cmd_nodes(const ds_cmd *c);

/* "consolidation-delete", "drift", ... */
const char *ds_method_name(Tailor__V1__DisruptionMethod m);
/* The DisruptionDecision for events and Explain.  New, owned
 * (protobuf_c_message_free_unpacked). */
Tailor__V1__DisruptionDecision *ds_cmd_decision(const ds_cmd *c);

#endif
