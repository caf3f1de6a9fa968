#!/usr/bin/env bash
# waves_it.sh BUILD_DIR - pods arriving in waves, each in a batch window of
# its own, while the NodeClaims of the earlier waves are still booting
# (boot delay 8 s): every later batch still shows the earlier pods pending,
# and the launcher must not buy for them again (it passes its in-flight
# NodeClaims with their planned pods to every Solve).
#
#   wave 1  web x12                      (1 CPU, 1 GiB)
#   wave 2  web -> 24, api x8 appears    (2 CPU, 4 GiB)
#   wave 3  web -> 36, api -> 16
# Checked: every pod Running; instances = NodeClaims = Nodes; no pod
# provisioned twice; and what was bought over the three waves against one
# plan for the final 52 pods (tailorctl solve, same engine and catalog):
# capacity (vCPUs) and cost within one node of it.
set -euo pipefail
BUILD=$(cd "${1:?usage: waves_it.sh BUILD_DIR}" && pwd)
export BOOT_DELAY=8s
. "$(dirname "$0")/lib_e2e.sh"
e2e_up
e2e_start_solver
e2e_start_watcher --batch-idle 1s --batch-max 10s
e2e_start_launcher --catalog-source file --no-spot

e2e_general_pool >"$STATE_DIR/pools.yaml"
dep() { it_deployment "$@"; }
$K apply --validate=false -f "$STATE_DIR/pools.yaml" >/dev/null
echo "--- wave 1"
dep web 12 1 1Gi | $K apply --validate=false -f - >/dev/null
sleep 3.5
echo "--- wave 2 ($($K get nodeclaims --no-headers | wc -l) NodeClaims, $($K get nodes --no-headers 2>/dev/null | wc -l) nodes so far)"
{ dep web 24 1 1Gi; dep api 8 2 4Gi; } | $K apply --validate=false -f - >/dev/null
sleep 3.5
echo "--- wave 3 ($($K get nodeclaims --no-headers | wc -l) NodeClaims, $($K get nodes --no-headers 2>/dev/null | wc -l) nodes so far)"
{ dep web 36 1 1Gi; dep api 16 2 4Gi; } | tee "$STATE_DIR/final.yaml" | $K apply --validate=false -f - >/dev/null
check "all 52 pods Running" e2e_wait_running 52 120
e2e_settle 30
fig() { e2e_fig "$1"; }
echo "  figures: $(cat "$STATE_DIR/check.json")"
batches=$(grep -c '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" || true)
covered=$(grep '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" | grep -vc '"inflight":0,' || true)
echo "  $batches batches; $covered of them saw in-flight NodeClaims of earlier waves"
check "the waves came in separate batches while claims were in flight ($covered)" test "$covered" -ge 2
check "instances = NodeClaims = Nodes ($(fig instances)/$(fig claims)/$(fig nodes))" \
  test "$(fig instances)" = "$(fig claims)" -a "$(fig claims)" = "$(fig nodes)"
check "no leaked instance, no claim without instance" \
  test "$(fig leaked)" = "[]" -a "$(fig claims_without_instance)" = "[]"
check "no pod provisioned twice ($(fig double_provisioned))" test "$(fig double_provisioned)" = 0
"$BUILD/tools/tailorctl" solve --pods "$STATE_DIR/final.yaml" --nodepools "$STATE_DIR/pools.yaml" \
  --catalog "$CATALOG" -o json >"$STATE_DIR/plan.json"
read -r pn pcpu pcost pmax pmaxcost gcost < <(/usr/bin/python3 - "$STATE_DIR/plan.json" "$CATALOG" "$STATE_DIR/check.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cat = {t["name"]: t for t in json.load(open(sys.argv[2]))}
got = json.load(open(sys.argv[3]))["types"]
price = lambda t: cat[t]["od_price_usd_hr"]["us-east-1"]
cpus = [cat[n["instance_type"]]["vcpu"] for n in d["nodeclaims"]]
print(len(cpus), sum(cpus), round(d["total_cost_per_hour"], 3), max(cpus),
      round(max(price(n["instance_type"]) for n in d["nodeclaims"]), 3),
      round(sum(price(t) * k for t, k in got.items()), 3))
PY
)
got_n=$(fig nodes)
got_cpu=$(fig cpu)
echo "  one plan for the final 52 pods: $pn nodes, $pcpu vCPUs, \$$pcost/h (largest node $pmax vCPUs, \$$pmaxcost/h)"
echo "  bought over the 3 waves:        $got_n nodes, $got_cpu vCPUs, \$$gcost/h; types $(fig types)"
# Within one node: the waves may buy smaller nodes than one plan would
# (each wave is planned when it comes), so the count may differ; what must
# not differ by more than a node is what was bought.
check "capacity bought within one node of one plan ($got_cpu vCPUs vs $pcpu + $pmax)" \
  /usr/bin/python3 -c "import sys; sys.exit(0 if $got_cpu <= $pcpu + $pmax else 1)"
check "cost within one node of one plan (\$$gcost vs \$$pcost + \$$pmaxcost)" \
  /usr/bin/python3 -c "import sys; sys.exit(0 if $gcost <= $pcost + $pmaxcost + 1e-9 else 1)"
e2e_finish
