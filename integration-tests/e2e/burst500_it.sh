#!/usr/bin/env bash
# burst500_it.sh BUILD_DIR - 500 pending pods at once, end to end on
# kubesim + moto (SigV4 enforced) with the real watcher, solver and
# launcher: five Deployments of different shapes, one spread across zones
# (maxSkew 1), one pinned to on-demand, the rest free to use spot.
#
# What a user would check: every pod Running; every EC2 instance tailor
# launched has exactly one NodeClaim and one Node (nothing leaked, nothing
# twice); no pod was nominated onto two NodeClaims that both got an
# instance; nodes in the three zones of the node subnets, the spread
# Deployment within its skew; spot and on-demand both bought.
set -euo pipefail
BUILD=$(cd "${1:?usage: burst500_it.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib_e2e.sh"
e2e_up
e2e_start_solver
e2e_start_watcher
e2e_start_launcher --catalog-source file --spot-discount 0.6

cat >"$STATE_DIR/pools.yaml" <<'YAML'
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
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
  limits: {cpu: "2000"}
YAML
it_nodeclass KarpenterNodeRole-e2e >>"$STATE_DIR/pools.yaml"
dep() { it_deployment "$@"; }
{
  dep web 150 250m 256Mi '      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}'
  dep api 120 "1" 2Gi '      nodeSelector: {karpenter.sh/capacity-type: on-demand}'
  dep worker 100 "2" 4Gi
  dep cache 60 500m 4Gi
  dep batch 70 100m 128Mi
} >"$STATE_DIR/pods.yaml"
t0=$SECONDS
$K apply --validate=false -f "$STATE_DIR/pools.yaml" >/dev/null
$K apply --validate=false -f "$STATE_DIR/pods.yaml" >/dev/null
check "all 500 pods Running" e2e_wait_running 500 150
e2e_settle 30 web
echo "  figures: $(cat "$STATE_DIR/check.json")"
fig() { e2e_fig "$1"; }
check "every instance has a NodeClaim ($(fig instances) instances, $(fig claims) claims)" \
  test "$(fig instances)" = "$(fig claims)"
check "every NodeClaim's Node joined ($(fig nodes) nodes)" test "$(fig nodes)" = "$(fig claims)"
check "no leaked instance" test "$(fig leaked)" = "[]"
check "no NodeClaim without its instance" test "$(fig claims_without_instance)" = "[]"
check "no two NodeClaims for one instance" test "$(fig duplicate_claims)" = "[]"
check "no pod provisioned twice ($(fig double_provisioned); $(fig reprovisioned) pods needed a new node after the scheduler packed their room with others)" \
  test "$(fig double_provisioned)" = 0
zones=$(/usr/bin/python3 -c 'import json,sys; z=json.load(open(sys.argv[1]))["zones"]; print(len([k for k in z if k in ("us-east-1a","us-east-1b","us-east-1c")]))' "$STATE_DIR/check.json")
check "nodes in the three subnet zones ($(fig zones))" test "$zones" = 3
check "the spread Deployment within maxSkew 1 (skew $(fig spread_skew))" test "$(fig spread_skew)" -le 1
cts=$(fig capacity_types)
check "both spot and on-demand bought ($cts)" sh -c "echo '$cts' | grep -q spot && echo '$cts' | grep -q on-demand"
launched=$(grep -c '"msg":"launched nodeclaim"' "$STATE_DIR/launcher.log" || true)
fleets=$(grep '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" |
         sed -n 's/.*"fleets":\([0-9]*\).*/\1/p' | awk '{s+=$1} END{print s+0}')
batched=$(grep -c '"batched":true' "$STATE_DIR/launcher.log" || true)
echo "  $launched NodeClaims launched with $fleets CreateFleet calls ($batched in shared fleets);" \
     "$(fig cpu) vCPUs; types $(fig types); $((SECONDS - t0))s from apply to checked"
check "identical NodeClaims shared CreateFleet calls ($fleets calls for $launched claims)" \
  test "$fleets" -lt "$launched"
# One plan for the whole set, offline (the same engine, the same catalog).
"$BUILD/tools/tailorctl" solve --pods "$STATE_DIR/pods.yaml" --nodepools "$STATE_DIR/pools.yaml" \
  --catalog "$CATALOG" --spot-discount 0.6 -o json >"$STATE_DIR/plan.json" || true
plan=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["nodeclaims"]), round(d["total_cost_per_hour"],2))' "$STATE_DIR/plan.json")
echo "  one offline plan (tailorctl solve) for the same 500 pods: ${plan% *} nodes, \$${plan#* }/h; launched: $(fig nodes) nodes"
e2e_finish
