#!/usr/bin/env bash
# metrics_it.sh BUILD_DIR - Karpenter metrics parity (issue 13) on kubesim +
# moto with the four real services (disruptor/lib.sh brings them up).
#
# Drives a small provision (one NodePool, a 2-pod Deployment), scrapes
# every service while the nodes run (the per-Node gauges follow the nodes),
# then terminates one NodeClaim by hand and lets emptiness remove the rest
# (scale to 0), so provisioning, termination and disruption counters have
# series, and scrapes again.  On every page:
#   * each page passes `promtool check metrics`, but for lint findings on
#     names Karpenter itself spells so (promtool_check in lib.sh);
#   * every metric karpenter_metrics.txt marks "exposed" is on some page
#     with Karpenter's type and label names (check_metrics.py), the
#     dashboards' metrics are all accounted for, and nothing else is
#     named karpenter_*;
#   * per-pod metrics follow the pods: startup and bound durations observed
#     for the Deployment's pods, pods_state with owner and Node labels, a
#     pod that cannot schedule in unbound/unstarted time until deleted;
#   * a few label values are Karpenter's: reason="provisioned",
#     capacity_type/zone on the terminated NodeClaim, a pods_drained reason.
# Exit 77 (skipped) when moto is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../disruptor/lib.sh"
build=${1:?usage: metrics_it.sh BUILD_DIR}
command -v promtool >/dev/null || { echo "SKIP: no promtool (apt package prometheus)"; exit 77; }
trap ds_down EXIT
ds_up "$build" || { echo "FAIL: stack did not start"; exit 1; }

has() { grep -q "$1" "$STATE_DIR/$2.metrics"; }
# series SVC NAME K=V...: SVC's page has a NAME series with (at least)
# those label values and a value > 0, whatever the label order.
series() {
  /usr/bin/python3 - "$STATE_DIR/$1.metrics" "${@:2}" <<'PY'
import re, sys
page, name, want = sys.argv[1], sys.argv[2], dict(a.split('=', 1) for a in sys.argv[3:])
for line in open(page):
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$', line.strip())
    if m and m.group(1) == name:
        got = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2)))
        if all(got.get(k) == v for k, v in want.items()) and float(m.group(3)) > 0:
            sys.exit(0)
sys.exit(1)
PY
}


{
  cat <<'YAML'
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  limits: {cpu: "100"}
  disruption: {consolidateAfter: Never}
YAML
  it_nodeclass
  it_deployment web 2 900m 1Gi "      terminationGracePeriodSeconds: 1"
  cat <<'YAML'
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - {name: c, image: agent, resources: {requests: {cpu: 50m, memory: 64Mi}}}
YAML
} >"$STATE_DIR/m.yaml"
k apply --validate=false -f "$STATE_DIR/m.yaml" >/dev/null
running() { [ "$(k get pods -n default -l app=web --no-headers 2>/dev/null | grep -c ' Running ')" -ge "$1" ]; }
check "provision: 2 pods Running" wait_until 90 running 2

# scrape [SUFFIX]: every service's page to $STATE_DIR/<svc>[SUFFIX].metrics
scrape() {
  for svc in solver:$s_http watcher:$w_http launcher:$l_http disruptor:$d_http; do
    http_get "http://127.0.0.1:${svc#*:}/metrics" >"$STATE_DIR/${svc%%:*}${1:-}.metrics" || return 1
  done
}
# While the nodes run: the watcher's per-Node and NodePool gauges (they
# follow the cluster, so they are gone once the nodes are).
gauged() {
  scrape _running && series watcher_running karpenter_nodes_allocatable nodepool=default resource_type=cpu &&
    series watcher_running karpenter_nodes_total_pod_requests nodepool=default resource_type=cpu &&
    series watcher_running karpenter_nodes_total_daemon_requests nodepool=default resource_type=cpu
}
check "watcher: per-Node gauges while nodes run" wait_until 20 gauged

# Per-pod metrics (the watcher's podmetrics.c).  value SVC LINE-REGEX: the
# value of the first line of SVC's latest page matching it.
value() { grep -E "$2" "$STATE_DIR/$1.metrics" | head -1 | awk '{print $NF}'; }
# The Deployment's pods were seen Pending, then bound and Ready: one
# bound-duration and one startup observation each (DaemonSet pods too),
# and pods_state carries their Node's pool, zone and instance type.
started() {
  scrape _pods &&
    [ "$(value watcher_pods '^karpenter_pods_startup_duration_seconds_count ')" -ge 2 ] &&
    [ "$(value watcher_pods '^karpenter_pods_bound_duration_seconds_count ')" -ge 2 ] &&
    [ "$(value watcher_pods '^karpenter_pods_scheduling_decision_duration_seconds_count ')" -ge 2 ] &&
    [ "$(value watcher_pods '^karpenter_pods_provisioning_bound_duration_seconds_count ')" -ge 2 ] &&
    [ "$(value watcher_pods '^karpenter_pods_provisioning_startup_duration_seconds_count ')" -ge 2 ] &&
    series watcher_pods karpenter_pods_state namespace=default phase=Running ready=true scheduled=true \
      nodepool=default managed=true instance_type=c5.large capacity_type=on-demand
}
check "pods: startup, bound, decision and provisioning durations observed, pods_state of a running pod" \
  wait_until 20 started
# The provisioning durations count from the launcher's decision (sent to
# the watcher on the decisions topic), so they are shorter than the ones
# from pod creation.
shorter() {
  /usr/bin/python3 - "$STATE_DIR/watcher_pods.metrics" <<'PY'
import re, sys
v = {}
for line in open(sys.argv[1]):
    m = re.match(r'^(karpenter_pods_\w+_duration_seconds_sum) (\S+)$', line.strip())
    if m:
        v[m.group(1)] = float(m.group(2))
b, pb = v['karpenter_pods_bound_duration_seconds_sum'], v['karpenter_pods_provisioning_bound_duration_seconds_sum']
print(f'  bound: {b:.2f} s from creation, {pb:.2f} s from the decision (sums)')
sys.exit(0 if 0 <= pb <= b else 1)
PY
}
check "pods: provisioning bound duration counts from the decision (<= from creation)" shorter
web_pod=$(k get pods -n default -l app=web -o jsonpath='{.items[0].metadata.name}')
web_rs=$(k get pods -n default "$web_pod" -o jsonpath='{.metadata.ownerReferences[0].name}')
web_node=$(k get pod -n default "$web_pod" -o jsonpath='{.spec.nodeName}')
web_zone=$(k get node "$web_node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')
check "pods_state{name=$web_pod,owner=.../replicasets/$web_rs,node=$web_node,zone=$web_zone}" \
  series watcher_pods karpenter_pods_state "name=$web_pod" namespace=default \
    "owner=/apis/apps/v1/namespaces/default/replicasets/$web_rs" "node=$web_node" "zone=$web_zone"
check "a started, bound pod has no unbound or unstarted series" \
  bash -c "! grep -q 'name=\"$web_pod\"' <(grep -E '^karpenter_pods_un(bound|started)_time_seconds' '$STATE_DIR/watcher_pods.metrics')"
# A pod nothing can hold (1000 cpu) stays Pending: it is in unbound and
# unstarted time, growing; deleted, its series go.
k run stuck -n default --image=nginx --restart=Never \
  --overrides='{"spec":{"containers":[{"name":"stuck","image":"nginx","resources":{"requests":{"cpu":"1000"}}}]}}' \
  >/dev/null
stuck_seen() {
  scrape _stuck && series watcher_stuck karpenter_pods_unbound_time_seconds name=stuck namespace=default &&
    series watcher_stuck karpenter_pods_unstarted_time_seconds name=stuck namespace=default &&
    series watcher_stuck karpenter_pods_state name=stuck phase=Pending scheduled=false ready=false node= managed=false
}
check "pods: a pending pod is in unbound/unstarted time and pods_state" wait_until 20 stuck_seen
# The plan could not place it: once the launcher has decided (its Solve
# may take a second or two, more under ASan) there is no undecided series,
# and as it is not schedulable it has no provisioning unbound time.
stuck_decided() {
  scrape _stuck &&
    ! grep -qE '^karpenter_pods_provisioning_(unbound|unstarted|scheduling_undecided)_time_seconds\{name="stuck"' \
      "$STATE_DIR/watcher_stuck.metrics"
}
check "pods: an unplaceable pod has no provisioning_unbound or undecided series" wait_until 20 stuck_decided
first=$(value watcher_stuck '^karpenter_pods_unbound_time_seconds\{name="stuck"')
grows() { scrape _stuck && awk -v a="$first" -v b="$(value watcher_stuck '^karpenter_pods_unbound_time_seconds\{name="stuck"')" 'BEGIN{exit !(b > a)}'; }
check "pods: its unbound time grows ($first s first)" wait_until 20 grows
k delete pod stuck -n default --grace-period=0 --force >/dev/null 2>&1 || true
stuck_gone() { scrape _gone && ! grep -q 'name="stuck"' "$STATE_DIR/watcher_gone.metrics"; }
check "pods: deleted, its series are gone" wait_until 20 stuck_gone

# Terminate one NodeClaim by hand: drain, eviction and terminate counters.
claim=$(k get nodeclaims -o jsonpath='{.items[0].metadata.name}')
check "a NodeClaim to delete ($claim)" test -n "$claim"
k delete nodeclaim "$claim" --wait=false >/dev/null 2>&1 || true
gone() { ! k get nodeclaim "$claim" >/dev/null 2>&1; }
check "NodeClaim $claim terminated" wait_until 60 gone
check "pods Running again" wait_until 90 running 2

# Emptiness: scale to zero under WhenEmpty so the disruptor decides (the
# decision counters, karpenter_nodeclaims_disrupted_total).
k patch nodepool default --type merge \
  -p '{"spec":{"disruption":{"consolidationPolicy":"WhenEmpty","consolidateAfter":"2s"}}}' >/dev/null
k scale deployment web -n default --replicas 0 >/dev/null
no_claims() { [ "$(k get nodeclaims --no-headers 2>/dev/null | wc -l)" = 0 ]; }
check "empty nodes consolidated away" wait_until 90 no_claims

counted() {
  scrape && has '^karpenter_nodeclaims_terminated_total{' launcher &&
    has '^karpenter_nodes_created_total{' launcher && has '^karpenter_nodeclaims_disrupted_total{' disruptor &&
    ! has '^karpenter_nodes_allocatable{' watcher
}
check "created, terminated and disrupted counters have series; Node gauges gone" wait_until 20 counted
for page in {solver,watcher,launcher,disruptor}{_running,} watcher_pods watcher_stuck; do
  check "$page /metrics passes promtool check metrics (Karpenter's own names aside)" \
    promtool_check "$STATE_DIR/$page.metrics"
done
# Counters of events this run does not cause: no series, so no lines yet
# (as in Karpenter).  An SQS queue is not configured, nothing fails in EC2,
not_caused=karpenter_cloudprovider_errors_total,karpenter_interruption_received_messages_total
not_caused+=,karpenter_interruption_deleted_messages_total
not_caused+=,karpenter_interruption_message_queue_duration_seconds
# and no decision fails validation or execution here.
not_caused+=,karpenter_voluntary_disruption_failed_validations_total
not_caused+=,karpenter_voluntary_disruption_queue_failures_total
# EC2 (moto) neither refuses a CreateFleet offering nor a termination.
not_caused+=,karpenter_cloudprovider_instance_launch_failures_total
not_caused+=,karpenter_cloudprovider_instance_termination_failures_total
# Gauges that have series only for a moment: a pod between the launcher's
# decision and its binding (seconds, and the watcher sets them every 5 s),
# a pod bound but not yet Running, a pod not decided yet, a solve in
# progress (the solver's queue depth).
# The pods' logic is unit-tested (podmetrics_test); here they are checked
# when a scrape happens to catch them.
not_caused+=,karpenter_pods_provisioning_unbound_time_seconds
not_caused+=,karpenter_pods_provisioning_unstarted_time_seconds
not_caused+=,karpenter_pods_provisioning_scheduling_undecided_time_seconds
not_caused+=,karpenter_scheduler_queue_depth
parity() {
  /usr/bin/python3 "$here/check_metrics.py" --not-caused "$not_caused" "$here/karpenter_metrics.txt" \
    "$STATE_DIR"/{solver,watcher,launcher,disruptor}{_running,}.metrics "$STATE_DIR"/watcher_{pods,stuck}.metrics \
    >"$STATE_DIR/parity.txt"
}
check "metric names and label names match Karpenter's (check_metrics.py)" parity
grep -E '^(FAIL|SKIP|Karpenter|  dash)' "$STATE_DIR/parity.txt" || true
check "nodeclaims_created_total{reason=provisioned,nodepool,min_values_relaxed=false}" \
  series launcher karpenter_nodeclaims_created_total reason=provisioned nodepool=default min_values_relaxed=false
zone=$(k get nodes -o jsonpath='{.items[0].metadata.labels.topology\.kubernetes\.io/zone}' 2>/dev/null || true)
[ -n "$zone" ] || zone=$(grep -o 'zone="us-[a-z0-9-]*"' "$STATE_DIR/launcher.metrics" | head -1 | cut -d'"' -f2)
check "nodeclaims_terminated_total{nodepool,capacity_type=on-demand,zone=$zone}" \
  series launcher karpenter_nodeclaims_terminated_total nodepool=default capacity_type=on-demand "zone=$zone"
check "nodes_created_total{nodepool,zone=$zone}" \
  series launcher karpenter_nodes_created_total nodepool=default "zone=$zone"
check "nodes_terminated_total{nodepool,zone=$zone}" \
  series disruptor karpenter_nodes_terminated_total nodepool=default "zone=$zone"
check "pods_drained_total{reason=Forceful Termination} (a claim deleted by hand)" \
  series disruptor karpenter_pods_drained_total "reason=Forceful Termination"
check "pods_eviction_requests_total{code=200}" \
  series disruptor karpenter_pods_eviction_requests_total code=200
check "voluntary_disruption_decisions_total{decision=delete,reason=empty,consolidation_type=empty}" \
  series disruptor karpenter_voluntary_disruption_decisions_total decision=delete reason=empty consolidation_type=empty
check "voluntary_disruption_decisions_by_nodepool_total{nodepool=default,...}" \
  series disruptor karpenter_voluntary_disruption_decisions_by_nodepool_total nodepool=default decision=delete reason=empty
check "nodeclaims_disrupted_total{reason=empty,nodepool,capacity_type=on-demand}" \
  series disruptor karpenter_nodeclaims_disrupted_total reason=empty nodepool=default capacity_type=on-demand
check "nodepools_limit / usage while running (cpu limit 100, usage 4 cores)" \
  bash -c "grep -q '^karpenter_nodepools_limit{resource_type=\"cpu\",nodepool=\"default\"} 100\$' '$STATE_DIR/watcher_running.metrics'"
check "cluster_state_synced 1 and node count" \
  bash -c "grep -q '^karpenter_cluster_state_synced 1\$' '$STATE_DIR/watcher.metrics' && grep -q '^karpenter_cluster_state_node_count ' '$STATE_DIR/watcher.metrics'"
check "per-Node series went with the nodes" \
  bash -c "! grep -q '^karpenter_nodes_allocatable{' '$STATE_DIR/watcher.metrics'"
check "nodes_termination_duration_seconds: a summary with quantiles per nodepool" \
  series disruptor karpenter_nodes_termination_duration_seconds_count nodepool=default
check "nodes_lifetime_duration_seconds observed" \
  series disruptor karpenter_nodes_lifetime_duration_seconds_count nodepool=default
check "eligible_nodes: reasons lower-cased as in Karpenter" \
  bash -c "grep '^karpenter_voluntary_disruption_eligible_nodes{' '$STATE_DIR/disruptor.metrics' | grep -q 'reason=\"underutilized\"'"
check "cloudprovider_duration_seconds{controller=nodeclaim.lifecycle,method=Create,provider=aws}" \
  series launcher karpenter_cloudprovider_duration_seconds_count controller=nodeclaim.lifecycle method=Create provider=aws
check "instance type metrics: the pool's one type, its on-demand offerings only" \
  bash -c "grep -q '^karpenter_cloudprovider_instance_type_cpu_cores{instance_type=\"c5.large\"} 2\$' '$STATE_DIR/launcher_running.metrics' &&
    grep -q '^karpenter_cloudprovider_instance_type_offering_available{instance_type=\"c5.large\",capacity_type=\"on-demand\",zone=\"$zone\"} 1\$' '$STATE_DIR/launcher_running.metrics' &&
    ! grep -q '^karpenter_cloudprovider_instance_type_offering_available{.*capacity_type=\"spot\"' '$STATE_DIR/launcher_running.metrics' &&
    ! grep -q '^karpenter_cloudprovider_instance_type_offering_price_estimate{instance_type=\"m5' '$STATE_DIR/launcher_running.metrics'"
check "no karpenter_pods_provisioning_total (now tailor_launcher_pods_nominated_total)" \
  bash -c "! grep -q '^karpenter_pods_provisioning_total' '$STATE_DIR/launcher.metrics' && grep -q '^tailor_launcher_pods_nominated_total ' '$STATE_DIR/launcher.metrics'"
finish
