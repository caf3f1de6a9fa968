#!/usr/bin/env bash
# consolidation_it.sh BUILD_DIR - scale a workload from 500 pods to 100 on
# kubesim + moto with the four services, and watch consolidation bring the
# cost down without breaking anything.
#
#   1. web (500 replicas, 250m / 256Mi, a PDB maxUnavailable 10%) and solo
#      (one replica) run on whatever the solver bought;
#   2. web is scaled to 100: empty nodes go (emptiness), others are deleted
#      or replaced by cheaper ones (multi- and single-node consolidation);
#   3. the cost settles within 10% of what `tailorctl solve` buys for the
#      same 101 pods from scratch (the same engine, the same catalog);
#   4. meanwhile an independent observer (watch.py) records zero PDB
#      violations and zero moments with solo not Ready; every pod runs, no
#      node is left tainted, EC2 holds one instance per NodeClaim.
# Timings are short (consolidateAfter 5s, validation 2s, pass every 2s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:?usage: consolidation_it.sh BUILD_DIR}
export KUBESIM_POD_START_DELAY=1s
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
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 5s
    budgets: [{nodes: "50%"}]
YAML
  it_nodeclass
} >"$STATE_DIR/pool.yaml"
workload() {   # REPLICAS
  it_deployment web "$1" 250m 256Mi "      terminationGracePeriodSeconds: 5"
  it_deployment solo 1 500m 512Mi "      terminationGracePeriodSeconds: 5"
  it_pdb web maxUnavailable 10%
}
workload 500 >"$STATE_DIR/w500.yaml"
workload 100 >"$STATE_DIR/w100.yaml"
k apply --validate=false -f "$STATE_DIR/pool.yaml" -f "$STATE_DIR/w500.yaml" >/dev/null

running() { test "$(k get pods --no-headers 2>/dev/null | grep -c ' Running ')" = "$1"; }
check "501 pods Running" wait_until 180 running 501
check "the disruptor prices with the launcher's catalog" wait_until 30 ds_same_catalog
ds_same_catalog | sed "s/^/  /" || true   # the launcher may refresh its catalog meanwhile
# NodePool status as Karpenter's counter and readiness controllers keep it:
# `kubectl get nodepools` shows NODES and READY from it.
pool_status_ok() {
  local want got
  want=$(k get nodes -l karpenter.sh/nodepool=default --no-headers 2>/dev/null | grep -c . || true)
  got=$(k get nodepool default -o jsonpath='{.status.nodes}/{.status.resources.nodes}/{.status.conditions[?(@.type=="Ready")].status}')
  POOL_STATUS="nodes/resources.nodes/Ready = $got ($want Nodes)"
  test "$got" = "$want/$want/True"
}
check "NodePool status.nodes, status.resources and Ready follow the pool's nodes" \
  wait_until 30 pool_status_ok
echo "  nodepool status: $POOL_STATUS"

cost500=$(ds_cost)
nodes500=$(ds_n_nodes)
echo "  500 pods: $nodes500 nodes, \$$cost500/h"

# the plan for the 101 pods from scratch (same engine, same catalog)
"$build/tools/tailorctl" solve --pods "$STATE_DIR/w100.yaml" --nodepools "$STATE_DIR/pool.yaml" \
  --nodeclasses "$STATE_DIR/pool.yaml" --catalog "$catalog" -o json >"$STATE_DIR/scratch.json" || true
scratch=$(json_get "$STATE_DIR/scratch.json" "'%.4f' % d['total_cost_per_hour']")
echo "  from scratch for 101 pods: \$$scratch/h"

ds_watch_start "$STATE_DIR/watch.json"
sleep 1
t0=$(date +%s)
k apply --validate=false -f "$STATE_DIR/w100.yaml" >/dev/null
within() {   # the cost is within 10% of the from-scratch plan
  awk -v c="$(ds_cost)" -v s="$scratch" 'BEGIN{exit !(c <= s * 1.10)}'
}
settled=0
for i in $(seq 1 120); do
  if within && running 101 && ds_no_disrupted_node && [ "$(k get nodeclaims -o json | json_get /dev/stdin "sum(1 for c in d['items'] if c['metadata'].get('deletionTimestamp'))")" = 0 ]; then
    settled=1; break
  fi
  sleep 2
done
t1=$(date +%s)
final=$(ds_cost)
echo "  after scale-down: $(ds_n_nodes) nodes, \$$final/h in $((t1 - t0)) s"
check "cost within 10% of the from-scratch plan (\$$final vs \$$scratch)" test "$settled" = 1
# consolidation may go on past 10% (a decision already proposed): the pods
# must all be Running again once it is done, with the observer watching
check "101 pods Running" wait_until 120 running 101
sleep 3
ds_watch_stop
viol=$(json_get "$STATE_DIR/watch.json" "d['n_pdb_violations']")
outs=$(json_get "$STATE_DIR/watch.json" "d['n_single_replica_outages']")
samples=$(json_get "$STATE_DIR/watch.json" "d['samples']")
check "the observer saw no PDB violation ($viol in $samples samples)" test "$viol" = 0
check "the observer saw solo Ready throughout ($outs outages)" test "$outs" = 0
check "no node left tainted or cordoned" wait_until 30 ds_no_disrupted_node
same() { test "$(ec2_live)" = "$(k get nodeclaims --no-headers | grep -c .)"; }
check "EC2 runs one instance per NodeClaim" wait_until 30 same
decisions=$(grep -c '"msg":"disruption decision executed"' "$STATE_DIR/disruptor.log" || true)
echo "  decisions executed: $decisions"
grep '"msg":"disruption decision proposed"' "$STATE_DIR/disruptor.log" | /usr/bin/python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    print("   ", d["method"], d["nodes"], "nodes,", "%.0f ms," % d["decide_ms"], d["simulations"], "simulations:", d["why"][:110])
' | head -n 20 || true
if [ "$FAILED" != 0 ]; then
  echo "--- disruptor log (tail)"; grep -v '"level":"debug"' "$STATE_DIR/disruptor.log" | tail -n 30 | cut -c1-400
  KEEP_STATE=1
fi
finish
