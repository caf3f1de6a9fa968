#!/usr/bin/env bash
# launcher_it.sh BUILD_DIR PENDING_PUB - the launcher against a real local
# cluster (moto with SigV4 enforced + kubesim with its kubelet simulator).
#
#   1. cloud_moto_it: launch templates, CreateFleet type instant through
#      a launch template (a real moto instance with the claim's tags),
#      TerminateInstances twice, SSM GetParameter.
#   2. end to end: tailor-solver + tailor-launcher, fed pending batches by
#      PENDING_PUB (a stand-in watcher publishing the cluster's pending
#      pods) for a 5-replica Deployment: the first batch creates the
#      NodeClaims (how many is the solver's choice), each gets a tagged
#      moto instance whose Node joins, every pod Running, and four more
#      identical (stale) batches buy nothing more.
# Exit 77 (skipped) when moto or kubesim is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib.sh"
build=${1:?usage: launcher_it.sh BUILD_DIR PENDING_PUB}
pub=${2:?usage: launcher_it.sh BUILD_DIR PENDING_PUB}
export STATE_DIR=$(mktemp -d /tmp/launcher_it.XXXXXX)
export CLUSTER_NAME=launcher-it BOOT_DELAY=1s
export KUBESIM_BIN=${KUBESIM_BIN:-$build/integration-tests/kubesim/kubesim}
[ -x "$KUBESIM_BIN" ] || { echo "FAIL: no kubesim at $KUBESIM_BIN"; exit 1; }
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || KUBECTL=kubectl
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  "$repo/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
  rm -rf "$STATE_DIR"
}
trap cleanup EXIT
"$repo/scripts/local-cluster.sh" up >"$STATE_DIR/up.log" 2>&1 || { cat "$STATE_DIR/up.log"; exit 1; }
eval "$("$repo/scripts/local-cluster.sh" env)"
K="$KUBECTL --kubeconfig $KUBECONFIG"

echo "--- 1. cloud ops against moto"
"$build/services/launcher_cloud_moto_it"

echo "--- 2. end to end"
sp=$(free_port); lp=$(free_port); pp=$(free_port); wp=$(free_port); h1=$(free_port); h2=$(free_port)
$(tls_as tailor-solver) "$build/services/tailor-solver" --listen "tls+tcp://127.0.0.1:$sp" --http-listen "127.0.0.1:$h1" \
  >"$STATE_DIR/solver.log" 2>&1 & pids+=($!)
$(tls_as tailor-launcher) "$build/services/tailor-launcher" --listen "tls+tcp://127.0.0.1:$lp" --publish "tls+tcp://127.0.0.1:$pp" \
  --http-listen "127.0.0.1:$h2" --solver "tls+tcp://127.0.0.1:$sp" --watcher "tls+tcp://127.0.0.1:$wp" \
  --cluster-name "$TAILOR_CLUSTER_NAME" --catalog "${TAILOR_SHARED_DATA:-$repo/../shared/data}/aws-instance-types.json" \
  --lifecycle-interval 500ms >"$STATE_DIR/launcher.log" 2>&1 & pids+=($!)
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
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
YAML
  it_nodeclass KarpenterNodeRole-demo
  it_deployment web 5 1 1Gi
} >"$STATE_DIR/m.yaml"
$K apply --validate=false -f "$STATE_DIR/m.yaml" >/dev/null
sleep 2
$K get pods,nodepools,ec2nodeclasses -o json >"$STATE_DIR/state.json"
$(tls_as tailor-watcher) "$pub" "tls+tcp://127.0.0.1:$wp" "$STATE_DIR/state.json" 5 1500
for i in $(seq 1 30); do
  running=$($K get pods --no-headers 2>/dev/null | grep -c ' Running ' || true)
  [ "$running" = 5 ] && break
  sleep 1
done
claims=$($K get nodeclaims --no-headers | wc -l)
nodes=$($K get nodes --no-headers | wc -l)
check "5 pods Running" test "$running" = 5
first=$(grep '"batch":"pub-1"' "$STATE_DIR/launcher.log" | sed -n 's/.*"launched":\([0-9]*\).*/\1/p')
later=$(grep '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" | grep -v '"batch":"pub-1"' |
        grep -vc '"launched":0,' || true)
check "the first batch launched claims (got ${first:-none})" test "${first:-0}" -ge 1
check "4 later identical batches launched nothing (got $later batches launching)" test "$later" = 0
check "one NodeClaim per launch, no more ($claims claims, ${first:-0} launched)" test "$claims" = "${first:-x}"
check "every NodeClaim's Node joined ($nodes nodes)" test "$nodes" = "$claims"
check "every NodeClaim Initialized=True" sh -c "$K get nodeclaims -o json | /usr/bin/python3 -c '
import json, sys
items = json.load(sys.stdin)[\"items\"]
ok = [c for c in items if any(k[\"type\"] == \"Initialized\" and k[\"status\"] == \"True\"
                               for k in c.get(\"status\", {}).get(\"conditions\", []))]
sys.exit(0 if items and len(ok) == len(items) else 1)'"
PASSED=${PASSED:-0}; FAILED=${FAILED:-0}
if [ "$FAILED" != 0 ]; then
  echo "--- launcher log (tail)"; tail -n 30 "$STATE_DIR/launcher.log"
  exit 1
fi
finish
