#!/usr/bin/env bash
# termination_it.sh BUILD_DIR - the termination controller on kubesim + moto
# with the real watcher, solver, launcher and disruptor.
#
#   A. every NodeClaim and managed Node carries karpenter.sh/termination;
#   B. a NodeClaim whose node runs pods of a PDB with maxUnavailable: 0 is
#      deleted: the node is tainted, the drain is blocked, a Warning Event
#      FailedDraining on the NodeClaim names the PDB and the pod, nothing
#      is evicted; the NodePool's terminationGracePeriod (20s) then forces
#      it (pods deleted from deadline minus their 5 s grace), the instance
#      is terminated and the objects are gone;
#   C. a NodeClaim whose node runs pods of a PDB with maxUnavailable: 1 is
#      deleted (a slow drain: one pod at a time); the disruptor is killed
#      with SIGKILL after the first eviction and started again: the drain
#      finishes, no node is left tainted or cordoned, and EC2 runs exactly
#      one instance per NodeClaim (none leaked);
#   D. a NodeClaim whose node runs the only pod of a one-replica Deployment
#      is deleted: the disruptor makes a rolling restart first, the old pod
#      goes only once the new one is Ready elsewhere, and the independent
#      observer (watch.py) never sees the Deployment without a Ready pod.
# Exit 77 (skipped) when moto is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:?usage: termination_it.sh BUILD_DIR}
export KUBESIM_POD_START_DELAY=2s
trap ds_down EXIT
ds_up "$build" || { echo "FAIL: stack did not start"; exit 1; }

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
      terminationGracePeriod: 20s
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption: {consolidateAfter: Never}
YAML
  it_nodeclass
  it_deployment web 2 900m 1Gi "      terminationGracePeriodSeconds: 5"
  it_pdb web maxUnavailable 0
  it_deployment slow 4 400m 256Mi "      terminationGracePeriodSeconds: 5"
  it_deployment solo 1 300m 256Mi "      terminationGracePeriodSeconds: 5"
  it_pdb slow maxUnavailable 1
} >"$STATE_DIR/m.yaml"
k apply --validate=false -f "$STATE_DIR/m.yaml" >/dev/null

running() { test "$(k get pods --no-headers 2>/dev/null | grep -c ' Running ')" = "$1"; }
check "all 7 pods Running" wait_until 90 running 7

echo "--- A. finalizers"
finalized() {
  local c n
  c=$(k get nodeclaims -o json | json_get /dev/stdin "sum(1 for i in d['items'] if 'karpenter.sh/termination' not in i['metadata'].get('finalizers', []))")
  n=$(k get nodes -o json | json_get /dev/stdin "sum(1 for i in d['items'] if 'karpenter.sh/termination' not in i['metadata'].get('finalizers', []))")
  [ "$c" = 0 ] && [ "$n" = 0 ]
}
check "every NodeClaim and Node carries karpenter.sh/termination" wait_until 10 finalized

# nothing terminates: the termination pass (a LIST of NodeClaims and
# Nodes) runs every --termination-idle-interval (10 s), not every 500 ms
passes() { curl -s "http://127.0.0.1:$d_http/metrics" | awk '/^tailor_disruptor_termination_passes_total /{print $2}'; }
sleep 2
p0=$(passes)
sleep 6
p1=$(passes)
check "idle: $((p1 - p0)) termination passes in 6 s (at most 2; 12 at the busy interval)" \
  test "$((p1 - p0))" -le 2

claim_of_node() {   # NODE -> the NodeClaim whose status.nodeName is NODE
  k get nodeclaims -o json | json_get /dev/stdin "' '.join(i['metadata']['name'] for i in d['items'] if i.get('status', {}).get('nodeName') == '$1')"
}
node_of_pod() { k get pod "$1" -o jsonpath='{.spec.nodeName}'; }

echo "--- B. maxUnavailable: 0 blocks; terminationGracePeriod forces"
web_pod=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
node_b=$(node_of_pod "$web_pod")
claim_b=$(claim_of_node "$node_b")
check "found the web pod's node ($node_b) and NodeClaim ($claim_b)" test -n "$claim_b"
t0=$(date +%s)
k delete nodeclaim "$claim_b" --wait=false >/dev/null
tainted() { k get node "$1" -o jsonpath='{.spec.taints[*].key}' | grep -q karpenter.sh/disrupted; }
check "the node is tainted karpenter.sh/disrupted within 3 s of the delete (the watcher's notice starts the pass)" \
  wait_until 3 tainted "$node_b"
event_names_pdb() {
  k get events -A -o json | json_get /dev/stdin "any(e['involvedObject']['name'] == '$claim_b' and e['reason'] == 'FailedDraining' and 'PodDisruptionBudget default/web-pdb' in e['message'] and 'pod default/$web_pod' in e['message'] for e in d['items'])" | grep -q True
}
check "a FailedDraining Event on the NodeClaim names the PDB and the pod" wait_until 10 event_names_pdb
drained_cond() {
  k get nodeclaim "$claim_b" -o json | json_get /dev/stdin "[(c['status'], c['reason']) for c in d['status'].get('conditions', []) if c['type'] == 'Drained' and 'PodDisruptionBudget default/web-pdb' in c.get('message', '')] + [(c['status'], c['reason']) for c in d['status'].get('conditions', []) if c['type'] == 'Initialized']" |
    grep -q "('Unknown', 'Draining'), ('True', 'Initialized')"
}
check "the NodeClaim's Drained condition is Unknown/Draining naming the PDB; the launcher's conditions are kept" \
  wait_until 10 drained_cond
k get events -A -o json | json_get /dev/stdin "'\n'.join(['  event: ' + e['message'] for e in d['items'] if e['reason'] == 'FailedDraining'][:2])" || true
sleep 3
check "the blocked web pod is still on its node before the deadline" \
  test "$(node_of_pod "$web_pod" 2>/dev/null)" = "$node_b"
gone() { ! k get nodeclaim "$1" >/dev/null 2>&1; }
check "the NodeClaim is gone after terminationGracePeriod" wait_until 60 gone "$claim_b"
t1=$(date +%s)
check "it took at least deadline - pod grace (15 s): $((t1 - t0)) s" test $((t1 - t0)) -ge 14
check "its node is gone" wait_until 15 bash -c "! '$KUBECTL' --kubeconfig '$KUBECONFIG' get node '$node_b' >/dev/null 2>&1"
check "the disruptor logged the termination" \
  grep -q '"msg":"nodeclaim terminated","nodeclaim":"'"$claim_b"'"' "$STATE_DIR/disruptor.log"

echo "--- C. SIGKILL mid-drain, restart, the drain finishes"
k delete pdb web-pdb >/dev/null
check "all 7 pods Running again" wait_until 90 running 7
slow_pod=$(k get pods -l app=slow -o jsonpath='{.items[0].metadata.name}')
node_c=$(node_of_pod "$slow_pod")
claim_c=$(claim_of_node "$node_c")
on_c() { k get pods --field-selector "spec.nodeName=$node_c" --no-headers 2>/dev/null | grep -c . || true; }
before=$(on_c)
k delete nodeclaim "$claim_c" --wait=false >/dev/null
evicted_one() { [ "$(on_c)" -lt "$before" ]; }
check "the drain of $node_c started ($before pods)" wait_until 30 evicted_one
ds_restart_disruptor KILL
check "after the restart the NodeClaim is gone" wait_until 90 gone "$claim_c"
check "all 7 pods Running" wait_until 90 running 7
check "no node is left tainted or cordoned" wait_until 30 ds_no_disrupted_node
same() { test "$(ec2_live)" = "$(k get nodeclaims --no-headers | grep -c .)"; }
check "EC2 runs one instance per NodeClaim (none leaked)" wait_until 30 same
check "the restarted disruptor logged the termination" \
  bash -c "sed -n '/disruptor restarted/,\$p' '$STATE_DIR/disruptor.log' | grep -q '\"nodeclaim terminated\",\"nodeclaim\":\"$claim_c\"'"

echo "--- D. a single-replica Deployment is never without a Ready pod"
# the other PDBs' pods are not what D is about: their forced deletes at
# the terminationGracePeriod would be (documented) PDB violations
k delete pdb slow-pdb >/dev/null
k scale deployment slow --replicas=0 >/dev/null
ds_watch_start "$STATE_DIR/watch.json"
sleep 2
solo_pod=$(k get pods -l app=solo -o jsonpath='{.items[0].metadata.name}')
node_d=$(node_of_pod "$solo_pod")
claim_d=$(claim_of_node "$node_d")
k delete nodeclaim "$claim_d" --wait=false >/dev/null
restarted() { k get deployment solo -o jsonpath='{.spec.template.metadata.annotations}' | grep -q restartedAt; }
check "the disruptor rolled the Deployment (restartedAt)" wait_until 20 restarted
check "the NodeClaim of the single-replica pod's node is gone" wait_until 90 gone "$claim_d"
solo_ready() { k get pods -l app=solo -o json | json_get /dev/stdin "sum(1 for p in d['items'] if not p['metadata'].get('deletionTimestamp') and any(c['type'] == 'Ready' and c['status'] == 'True' for c in p['status'].get('conditions', [])))" | grep -qx 1; }
check "the Deployment has its Ready pod on another node" wait_until 30 solo_ready
ds_watch_stop
check "the observer saw no moment without a Ready solo pod ($(json_get "$STATE_DIR/watch.json" "d['n_single_replica_outages']") outages, $(json_get "$STATE_DIR/watch.json" "d['samples']") samples)" \
  test "$(json_get "$STATE_DIR/watch.json" "d['n_single_replica_outages']")" = 0
check "the observer saw no PDB violation" test "$(json_get "$STATE_DIR/watch.json" "d['n_pdb_violations']")" = 0
if [ "$FAILED" != 0 ]; then
  echo "--- disruptor log (tail)"; tail -n 40 "$STATE_DIR/disruptor.log"
  KEEP_STATE=1
fi
finish
