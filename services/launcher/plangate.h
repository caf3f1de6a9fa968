/* plangate.h - the nodes of one plan become schedulable together.
 *
 * Why.  kube-scheduler counts only the topology domains that have Nodes.
 * When a plan spreads a group's pods over three zones (maxSkew 1,
 * DoNotSchedule) and the first zone's nodes register a second before the
 * others, the scheduler binds the whole group there -- within the skew of
 * the one zone it can see -- and the plan no longer holds: the other
 * zones' nodes stay half empty and the pods the first zone's nodes were
 * bought for need new ones.  The same goes for hostname spreads.
 *
 * How.  When one of the new claims of a Solve answer holds a pod with a
 * DoNotSchedule topology spread constraint and there are two or more, all
 * of them form a gate (a spread pod may land on any node of the plan its
 * affinity allows, so any node registering early is a lone domain): each
 * carries the annotation tailor.sh/plan-gate = the first one's name.  The
 * launcher holds a gated claim's registration
 * (its Node keeps the karpenter.sh/unregistered NoExecute taint, so no pod
 * lands on it) until every other claim of its gate that is still tracked
 * has a Node too, or until the gate timeout (--plan-gate-timeout, 90 s by
 * default) has passed since the claim's launch.  A Node that exists is a
 * domain for the spread whatever its taints (nodeTaintsPolicy Ignore, the
 * default), so once every Node of the gate is there the scheduler sees
 * every domain the plan uses; the gate's nodes then register in the same
 * lifecycle pass.  A claim that failed or was deleted no longer holds its
 * gate; a claim adopted after a launcher restart is not gated (its
 * planned pods are not known).
 *
 * Stages.  A solver run with --scheduler-replay predicts where the
 * scheduler will bind the plan's pods and buys for the ones it would
 * leave pending as the plan's second stage (annotation
 * tailor.sh/plan-stage=2, common/solve/solve.c).  Those nodes must come
 * after the scheduler has bound the first stage, or they would draw its
 * pods: a second-stage claim registers once every first-stage claim of
 * its gate has, and a batch received since shows none of their planned
 * pods pending (or LC_PLAN_STAGE_SETTLE_MS after the last registered),
 * within the same gate timeout.  The first stage does not wait for the
 * second.
 */
#ifndef LC_PLANGATE_H
#define LC_PLANGATE_H

#include <stdbool.h>
#include <stdint.h>

#include "tailor/v1/nodeclaim.pb-c.h"
#include "tailor/v1/pod.pb-c.h"

#define LC_ANNOTATION_PLAN_GATE "tailor.sh/plan-gate"
#define LC_PLAN_GATE_MS         (90 * 1000)
/* A second stage registers at the latest this long after the first
 * stage's last node did, even if some of its planned pods still look
 * pending (kube-scheduler binds hundreds of pods a second). */
#define LC_PLAN_STAGE_SETTLE_MS (10 * 1000)

/* Does pod (borrowed; NULL is false) need its plan's nodes to appear
 * together: does it have a DoNotSchedule topology spread constraint? */
bool lc_plan_gate_pod(const Tailor__V1__Pod *pod);

/* nc's plan stage: 2 when the solver made it a plan's second stage
 * (annotation tailor.sh/plan-stage=2, solve.c), else 1. */
int lc_plan_stage(const Tailor__V1__NodeClaim *nc);

/* The gate claim nc belongs to (borrowed from nc), or NULL. */
const char *lc_plan_gate_of(const Tailor__V1__NodeClaim *nc);

/* Put nc in gate (copied): the annotation, replacing any earlier one. */
void lc_plan_gate_set(Tailor__V1__NodeClaim *nc, const char *gate);

#endif
