#!/usr/bin/env bash
# kill9_it.sh BUILD_DIR - kill -9 of the launcher in the middle of a burst,
# then a restart.
#
# EC2 is made slow (ec2proxy.py holds each CreateFleet 700 ms, one call at
# a time), so the burst's launches take seconds; the launcher is killed
# with SIGKILL once EC2 has answered a few of them: NodeClaims are written,
# some have instances (batched ones not yet tagged with their claim, none
# with its status written), others none.  The restarted launcher adopts
# what has an instance, deletes the NodeClaims that never got one (their
# pods are planned again), and garbage-collects instances nobody owns after
# their 30 s grace.  Checked at the end: every pod Running, every instance
# with exactly one NodeClaim and a Node, nothing leaked, no duplicate
# NodeClaim.
set -euo pipefail
BUILD=$(cd "${1:?usage: kill9_it.sh BUILD_DIR}" && pwd)
export BOOT_DELAY=2s
. "$(dirname "$0")/lib_e2e.sh"
e2e_up proxy
e2e_start_solver
e2e_start_watcher --batch-idle 1s
LARGS=(--catalog-source file --no-spot --parallel-calls 1)
e2e_start_launcher "${LARGS[@]}"
e2e_proxy config '{"fleet_delay_ms": 700}'

cat >"$STATE_DIR/w.yaml" <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
YAML
it_nodeclass KarpenterNodeRole-e2e >>"$STATE_DIR/w.yaml"
n=0
for spec in "a 40 1 2Gi" "b 30 2 4Gi" "c 30 500m 1Gi" "d 20 4 8Gi" "e 20 250m 3Gi" "f 10 8 16Gi"; do
  read -r name reps cpu mem <<<"$spec"
  n=$((n + reps))
  cat >>"$STATE_DIR/w.yaml" <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $name, namespace: default}
spec:
  replicas: $reps
  selector: {matchLabels: {app: $name}}
  template:
    metadata: {labels: {app: $name}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: $name}}}
      containers:
      - {name: c, image: app, resources: {requests: {cpu: "$cpu", memory: $mem}}}
YAML
done
$K apply --validate=false -f "$STATE_DIR/w.yaml" >/dev/null
# Kill once EC2 has answered at least one CreateFleet call while some
# written NodeClaim still has no instance: mid-burst.
unlaunched_now() {
  $K get nodeclaims -o json 2>/dev/null | /usr/bin/python3 -c 'import json,sys
try: items = json.load(sys.stdin)["items"]
except Exception: items = []
print(sum(1 for c in items if not c.get("status",{}).get("providerID")))'
}
for ((i = 0; i < 300; i++)); do
  f=$(e2e_fleets)
  if [ "$f" -ge 1 ] && [ "$(unlaunched_now)" -ge 1 ]; then
    break
  fi
  sleep 0.05
done
kill -9 "$LAUNCHER_PID"
wait "$LAUNCHER_PID" 2>/dev/null || true
claims_at_kill=$($K get nodeclaims --no-headers 2>/dev/null | wc -l)
unlaunched=$($K get nodeclaims -o json | /usr/bin/python3 -c 'import json,sys; print(sum(1 for c in json.load(sys.stdin)["items"] if not c.get("status",{}).get("providerID")))')
echo "  killed -9 after $f CreateFleet calls: $claims_at_kill NodeClaims written, $unlaunched without a providerID"
check "the kill came mid-burst (claims written, not all launched: $unlaunched of $claims_at_kill)" \
  test "$claims_at_kill" -gt 0 -a "$unlaunched" -gt 0
e2e_proxy config '{"fleet_delay_ms": 0}'
e2e_start_launcher "${LARGS[@]}"
check "all $n pods Running after the restart" e2e_wait_running "$n" 120
adopt=$(grep '"msg":"adopted nodeclaims of a previous launcher"' "$STATE_DIR/launcher.log" | tail -n 1 || true)
echo "  ${adopt:-no adoption line}"
check "the restarted launcher took over the dead one's NodeClaims" test -n "$adopt"
# Batches are deltas from the previous batch: the restarted launcher holds
# no state, so it asks the watcher for one (a Snapshot by reference).
fetched=$(grep -c '"msg":"cluster state fetched from the watcher"' "$STATE_DIR/launcher.log" || true)
check "the restarted launcher fetched the cluster state it did not hold ($fetched Snapshot(s))" \
  test "$fetched" -ge 1
# Leaked instances (launched, never tagged or recorded) go after their
# 30 s grace; wait for the GC pass after it.
e2e_settle 60
fig() { e2e_fig "$1"; }
echo "  figures: $(cat "$STATE_DIR/check.json")"
gced=$(grep -c '"msg":"gc: terminating leaked instance"' "$STATE_DIR/launcher.log" || true)
echo "  garbage-collected instances: $gced"
check "no leaked instance" test "$(fig leaked)" = "[]"
check "no duplicate NodeClaim" test "$(fig duplicate_claims)" = "[]"
check "instances = NodeClaims = Nodes ($(fig instances)/$(fig claims)/$(fig nodes))" \
  test "$(fig instances)" = "$(fig claims)" -a "$(fig claims)" = "$(fig nodes)"
check "no NodeClaim without its instance" test "$(fig claims_without_instance)" = "[]"
check "still all $n pods Running ($(fig running))" test "$(fig running)" = "$n"
e2e_finish
