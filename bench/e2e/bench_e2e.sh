#!/usr/bin/env bash
# bench_e2e.sh BUILD_DIR [SIZE...] - a burst of SIZE pending pods (default
# 1000 and 10000; "big" alone: only the big-cluster run below) on kubesim + moto (SigV4 enforced) with zero boot delay,
# through the real tailor-watcher, tailor-solver and tailor-launcher.
#
# For each size, on a fresh local cluster: six Deployments of different
# shapes (one spread over zones, one on-demand only, the rest spot or
# on-demand) are applied at once; the watcher's batch window (idle 1 s,
# max 10 s) closes; the launcher solves, writes the NodeClaims and calls
# CreateFleet (identical claims batched, calls in parallel).  Printed:
#   window       first pod Pending -> the window closed (the watcher's log)
#   issued       the window closed -> the last CreateFleet sent: deliver
#                (pub/sub) + solve + NodeClaim writes + waiting for a free
#                call slot; ratio to the 2 s target (Karpenter's solve
#                alone takes ~8 s for 10k pods)
#   answered     ... -> the last CreateFleet answered (moto's own time in)
#   running      apply -> every pod Running (nodes join with no boot delay)
# Each size runs twice: with the defaults (32 CreateFleet calls at once) and
# with --parallel-calls 64 (every call of the burst sent at once).
# With BENCH_SEQUENTIAL=1 the 1k burst also runs one CreateFleet per claim,
# one call at a time (--no-fleet-batching --parallel-calls 1), the way
# the launcher launched before batching, to show what batching buys.
# Then a cluster that is big and busy but asks for little: BIG_NODES
# (default 3,333) existing nodes with BIG_PODS (default 100,000) bound pods
# (bigcluster.py), and a Deployment of 50 pods that needs new capacity.
# Printed per run, for the batch that carried them: the PendingBatch's and
# the SolveRequest's packed size, and pending -> CreateFleet (the pods
# created -> the last CreateFleet issued; window close -> the same).  It
# runs with the cluster by reference (the default) and with
# --no-batch-by-reference (whole states on both hops, as before), so the
# two are compared in the same run; the goal is a batch well under 1 MiB
# and window close -> CreateFleet under 1 s.  BIG_PODS=0 skips it.
# Figures are printed, never asserted.  Each size needs a few minutes on
# 2 cores (moto is a Python process; 10k pods make ~1,000 instances).
set -euo pipefail
BUILD=$(cd "${1:?usage: bench_e2e.sh BUILD_DIR [SIZE...]}" && pwd)
shift
SIZES=${*:-1000 10000}
export BOOT_DELAY=0s
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../integration-tests/e2e/lib_e2e.sh"
FAILED=0

# pods_yaml N: six Deployments adding up to N pods.
pods_yaml() {
  local n=$1
  /usr/bin/python3 - "$n" <<'PY'
import sys
n = int(sys.argv[1])
shapes = [("web", .30, "250m", "256Mi", "spread"), ("api", .20, "1", "2Gi", "ondemand"),
          ("worker", .15, "2", "4Gi", ""), ("cache", .10, "500m", "4Gi", ""),
          ("batch", .15, "100m", "128Mi", ""), ("ml", .10, "4", "16Gi", "")]
left = n
for i, (name, frac, cpu, mem, extra) in enumerate(shapes):
    reps = left if i == len(shapes) - 1 else int(n * frac)
    left -= reps
    spec = ""
    if extra == "spread":
        spec = ("      topologySpreadConstraints:\n"
                "      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, "
                "whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: %s}}}\n" % name)
    if extra == "ondemand":
        spec = "      nodeSelector: {karpenter.sh/capacity-type: on-demand}\n"
    print("""---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
%s      containers:
      - {name: c, image: app, resources: {requests: {cpu: "%s", memory: %s}}}""" % (
        name, reps, name, name, spec, cpu, mem))
PY
}

POOLS=$(cat <<'YAML'
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
YAML
it_nodeclass KarpenterNodeRole-bench
)

# The live catalog (moto's DescribeInstanceTypes...) first, as in
# production; then the NodePool and EC2NodeClass.
pools_after_catalog() {
  local i
  for ((i = 0; i < 60; i++)); do
    grep -q '"msg":"catalog refreshed"\|"msg":"live catalog not built' "$STATE_DIR/launcher.log" && break
    sleep 1
  done
  echo "$POOLS" | $K apply --validate=false -f - >/dev/null
  sleep 2
}

# run_one N LABEL [LAUNCHER ARGS...]: one burst on a fresh cluster.
run_one() {
  local n=$1 label=$2
  shift 2
  e2e_up
  e2e_start_solver
  e2e_start_watcher --batch-idle 1s --batch-max 10s
  e2e_start_launcher --spot-discount 0.6 "$@"
  pools_after_catalog
  pods_yaml "$n" >"$STATE_DIR/pods.yaml"
  local t_apply
  t_apply=$(date +%s%3N)
  $K apply --validate=false -f "$STATE_DIR/pods.yaml" >/dev/null
  local want=$((n * 9 / 10)) i line=""
  for ((i = 0; i < 300; i++)); do
    line=$(grep '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" |
           awk -v w="$want" -F'"pods":' '{split($2, a, ","); if (a[1] + 0 >= w) {print; exit}}' || true)
    [ -n "$line" ] && break
    sleep 1
  done
  [ -n "$line" ] || { echo "  $label: no batch of $want+ pods within 300 s"; FAILED=1; e2e_cleanup; trap - EXIT; return; }
  local running_s="-"
  if e2e_wait_running "$n" 240 >/dev/null; then
    running_s=$(awk -v a="$t_apply" -v b="$(date +%s%3N)" 'BEGIN{printf "%.1f", (b - a) / 1000}')
  fi
  /usr/bin/python3 - "$STATE_DIR" "$line" "$n" "$label" "$t_apply" "$running_s" <<'PY'
import json, sys
from datetime import datetime, timezone
d, line, n, label, t_apply, running = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
b = json.loads(line)
def ms(ts):
    return int(datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() * 1000)
pub = None
for l in open(d + "/watcher.log"):
    if '"published pending batch"' in l:
        w = json.loads(l)
        if w["pods"] >= b["pods"] * 0.99:
            pub, window = ms(w["ts"]), w["window_ms"]
            break
deliver = b["received_unix_ms"] - pub
issued = deliver + b["to_issued_ms"]
answered = deliver + b["to_fleets_ms"]
fl = b["to_fleets_ms"] - b["solve_ms"] - b["claims_ms"]
print("  %-40s pods %6d  NodeClaims %4d  CreateFleet calls %3d  window %5d ms" % (
    label, n, b["launched"], b["fleets"], window))
print("  %-40s after the window: deliver %d + solve %d + NodeClaim writes %d ms; then CreateFleet:"
      % ("", deliver, b["solve_ms"], b["claims_ms"]))
print("  %-40s   every CreateFleet issued  %6d ms  (%.2fx the 2 s target)" % ("", issued, issued / 2000.0))
print("  %-40s   every CreateFleet answered %6d ms  (%.2fx; %.0f ms of moto per call, calls overlapping)"
      % ("", answered, answered / 2000.0, fl / max(b["fleets"], 1)))
print("  %-40s all pods Running %ss after apply" % ("", running))
PY
  e2e_cleanup
  trap - EXIT
}

# run_big LABEL [WATCHER ARGS...]: 50 pending pods in a big existing cluster.
run_big() {
  local label=$1
  shift
  e2e_up
  echo "  $label: loading $BIG_NODES nodes and $BIG_PODS bound pods"
  /usr/bin/python3 "$here/bigcluster.py" "$KUBECONFIG" "$BIG_NODES" "$BIG_PODS" | tail -n 1 | sed 's/^/    /'
  e2e_start_solver
  e2e_start_watcher --batch-idle 1s --batch-max 10s "$@"
  e2e_start_launcher --spot-discount 0.6
  pools_after_catalog
  # Warm up as a running cluster is: one pod provisioned first, so the
  # burst's batch is not the first a launcher and a solver ever see.
  it_deployment warm 1 500m 1Gi | $K apply --validate=false -f - >/dev/null
  local t_apply line="" i
  for ((i = 0; i < 120; i++)); do
    grep -q '"msg":"batch provisioned".*"launched":[1-9]' "$STATE_DIR/launcher.log" && break
    sleep 1
  done
  sleep 3
  t_apply=$(date +%s%3N)
  it_deployment few 50 500m 1Gi | $K apply --validate=false -f - >/dev/null
  for ((i = 0; i < 120; i++)); do
    line=$(grep '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" |
           awk -F'"pods":' '{split($2, a, ","); if (a[1] + 0 >= 50 && $0 ~ /"launched":[1-9]/) {print; exit}}' || true)
    [ -n "$line" ] && break
    sleep 1
  done
  [ -n "$line" ] || { echo "  $label: nothing launched within 120 s"; FAILED=1; e2e_cleanup; trap - EXIT; return; }
  /usr/bin/python3 - "$STATE_DIR" "$line" "$label" "$t_apply" <<'PY'
import json, sys
from datetime import datetime, timezone
d, line, label, t_apply = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
b = json.loads(line)
def ms(ts):
    return int(datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() * 1000)
pub = w = None
for l in open(d + "/watcher.log"):
    if '"published pending batch"' in l:
        x = json.loads(l)
        if x["pods"] >= b["pods"] and ms(x["ts"]) <= b["received_unix_ms"]:
            pub, w = ms(x["ts"]), x
deliver = b["received_unix_ms"] - pub
issued = deliver + b["to_issued_ms"]
print("  %-44s PendingBatch %9s bytes (%s nodes in it)  SolveRequest %9d bytes"
      % (label, w.get("bytes", "?"), w.get("nodes", "?"), b.get("solve_request_bytes", -1)))
print("  %-44s window close -> last CreateFleet issued %5d ms (%.2fx the 1 s goal): deliver %d + solve %d (the engine %d) + NodeClaim writes %d"
      % ("", issued, issued / 1000.0, deliver, b["solve_ms"], b.get("solver_ms", -1), b["claims_ms"]))
print("  %-44s pods created -> last CreateFleet issued %5d ms (the 1 s batch window included)"
      % ("", b["received_unix_ms"] + b["to_issued_ms"] - t_apply))
PY
  e2e_cleanup
  trap - EXIT
}

echo "bench-e2e: bursts on kubesim + moto, zero boot delay ($(nproc) cores)"
for n in $SIZES; do
  [ "$n" = big ] && continue   # "bench_e2e.sh BUILD big": only the big cluster
  run_one "$n" "$n pods, defaults (32 calls at once)"
  run_one "$n" "$n pods, --parallel-calls 64" --parallel-calls 64
  if [ "$n" = 1000 ] && [ "${BENCH_SEQUENTIAL:-0}" = 1 ]; then
    run_one "$n" "$n pods, one fleet per claim, serial" --no-fleet-batching --parallel-calls 1
  fi
done
BIG_NODES=${BIG_NODES:-3333} BIG_PODS=${BIG_PODS:-100000}
if [ "$BIG_PODS" != 0 ]; then
  echo "bench-e2e: 50 pending pods in a cluster of $BIG_NODES nodes and $BIG_PODS pods"
  run_big "cluster by reference (default)"
  run_big "whole cluster state (--no-batch-by-reference)" --no-batch-by-reference
fi
exit $FAILED
