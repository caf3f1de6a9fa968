#!/usr/bin/env bash
# planhold_it.sh BUILD_DIR - plans that hold (plangate.h), end to end on
# kubesim + moto with the real watcher, solver and launcher.
#
# A 200-pod burst whose biggest Deployment (60 replicas) spreads over the
# zones (maxSkew 1, DoNotSchedule), on a cluster whose nodes take 1 s plus
# up to BOOT_JITTER (3 s) from launch to registering, as real instances
# launched together do not all boot at once.  kube-scheduler counts only
# the zones that have Nodes: without the plan gate the first zone's nodes
# take the whole Deployment and the plan breaks.  Per run, what a user
# would check: every pod Running, the Deployment's realized skew <= 1, the
# realized cost (the Nodes at on-demand catalog prices) within 10 % (the
# goal, 2 %, is counted and printed) of the
# plan (what the launcher's Solve answers planned, plan_cost_per_hour of
# its "batch provisioned" lines before the first node registered), no pod
# provisioned twice, nothing leaked.
#
# PLANHOLD_RUNS runs (default 2; 10 for the figure in the docs), each on a
# fresh cluster; PLANHOLD_GATE=0s turns the gate off (the runs then show
# what it prevents); PLANHOLD_SOLVER_ARGS=--scheduler-replay=false plans
# as packed, without the solver's scheduler replay (docs/solver.md).
set -euo pipefail
BUILD=$(cd "${1:?usage: planhold_it.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib_e2e.sh"
RUNS=${PLANHOLD_RUNS:-2}
GATE=${PLANHOLD_GATE:-90s}
export BOOT_DELAY=1s BOOT_JITTER=${BOOT_JITTER:-3s}

pods() {
  it_deployment web 60 500m 1Gi '      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}'
  it_deployment api 50 "1" 2Gi
  it_deployment worker 30 "2" 4Gi
  it_deployment cache 30 250m 3Gi
  it_deployment batch 30 100m 128Mi
}

# realized $/h of the Nodes: on-demand catalog prices of their types
realized_cost() {
  /usr/bin/python3 - "$STATE_DIR/state.json" "$CATALOG" <<'PY'
import json, sys
state, cat = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
price = {t["name"]: (t.get("od_price_usd_hr") or {}).get("us-east-1", 0) for t in cat}
print(round(sum(price.get(n["metadata"]["labels"].get("node.kubernetes.io/instance-type", ""), 0)
                for n in state["items"] if n["kind"] == "Node"), 4))
PY
}

# $/h the launcher planned for the burst: plan_cost_per_hour of the batches
# it received before the first of the burst's nodes registered (later
# plans buy for pods the scheduler left without room: not the plan).
planned_cost() {
  /usr/bin/python3 - "$STATE_DIR/launcher.log" <<'PY'
import json, sys
from datetime import datetime, timezone
first_reg, batches = None, []
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("msg") == "registered nodeclaim" and first_reg is None:
        first_reg = datetime.strptime(r["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=timezone.utc).timestamp() * 1000
    elif r.get("msg") == "batch provisioned":
        batches.append((r.get("received_unix_ms", 0), r.get("plan_cost_per_hour", 0)))
print("%.4f" % sum(c for t, c in batches if first_reg is None or t < first_reg))
PY
}

held=0
summary=()
for ((run = 1; run <= RUNS; run++)); do
  echo "--- run $run of $RUNS (boot 1s + up to $BOOT_JITTER, plan gate $GATE)"
  e2e_up
  e2e_start_solver ${PLANHOLD_SOLVER_ARGS:-}
  e2e_start_watcher
  e2e_start_launcher --catalog-source file --plan-gate-timeout "$GATE"
  e2e_general_pool 1000 >"$STATE_DIR/pools.yaml"
  pods >"$STATE_DIR/pods.yaml"
  t0=$SECONDS
  $K apply --validate=false -f "$STATE_DIR/pools.yaml" >/dev/null
  $K apply --validate=false -f "$STATE_DIR/pods.yaml" >/dev/null
  check "run $run: all 200 pods Running" e2e_wait_running 200 150
  e2e_settle 30 web
  skew=$(e2e_fig spread_skew)
  real=$(realized_cost)
  plan=$(planned_cost)
  ratio=$(/usr/bin/python3 -c "import sys; p=float(sys.argv[2]); print(round(float(sys.argv[1])/p, 4) if p else 0)" "$real" "$plan")
  gates=$(grep -c '"msg":"plan gate: these nodeclaims register together"' "$STATE_DIR/launcher.log" || true)
  timeouts=$(grep -c '"msg":"plan gate timed out' "$STATE_DIR/launcher.log" || true)
  line="run $run: skew $skew, realized \$$real/h, planned \$$plan/h (x$ratio), $(e2e_fig nodes) nodes, zones $(e2e_fig zones), $gates gate(s), $timeouts gate timeout(s), $((SECONDS - t0))s"
  echo "  $line"
  summary+=("$line")
  check "run $run: the spread Deployment within maxSkew 1 (skew $skew)" test "$skew" -le 1
  # The goal is 2 %; measured with the gate and the solver's scheduler
  # replay (a second stage for what the scheduler leaves pending):
  # 1.000-1.019 in 10 of 10 runs; with --scheduler-replay=false 1.02-1.05
  # (kube-scheduler scores LeastAllocated + BalancedAllocation and gives
  # planned room away); without the gate up to 1.13, and skew up to 60.
  check "run $run: realized cost within 10% of the plan (x$ratio)" \
    /usr/bin/python3 -c "import sys; r=float(sys.argv[1]); sys.exit(0 if 0 < r <= 1.10 else 1)" "$ratio"
  check "run $run: every instance has its NodeClaim and Node ($(e2e_fig instances)/$(e2e_fig claims)/$(e2e_fig nodes))" \
    test "$(e2e_fig instances)/$(e2e_fig claims)" = "$(e2e_fig nodes)/$(e2e_fig nodes)"
  check "run $run: no leaked instance" test "$(e2e_fig leaked)" = "[]"
  check "run $run: no pod provisioned twice ($(e2e_fig double_provisioned); $(e2e_fig reprovisioned) needed a new node after the scheduler gave their room away)" \
    test "$(e2e_fig double_provisioned)" = 0
  if [ "$skew" -le 1 ] && /usr/bin/python3 -c "import sys; sys.exit(0 if 0 < float(sys.argv[1]) <= 1.02 else 1)" "$ratio"; then   # the 2 % goal
    held=$((held + 1))
  fi
  trap - EXIT
  e2e_cleanup
done
echo "plans held (skew <= 1, realized within 2 % of the plan) in $held of $RUNS runs:"
printf '  %s\n' "${summary[@]}"
finish
