#!/usr/bin/env bash
# ice_it.sh BUILD_DIR - insufficient capacity for the cheapest instance
# types, injected by ec2proxy.py in front of moto as EC2 reports it (a 200
# CreateFleet answer whose errorSet holds InsufficientInstanceCapacity for
# the failed overrides).
#
#   1. the instance types one plan would buy (tailorctl solve) are out of
#      capacity in every zone: pods still all run, on other types;
#   2. within the ICE TTL (--ice-ttl 25s here; 3m by default) more pods
#      come: no CreateFleet even offers the failed types;
#   3. capacity is back and the TTL has passed: a second copy of the first
#      workload is offered, and gets, the formerly failed types again.
set -euo pipefail
BUILD=$(cd "${1:?usage: ice_it.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib_e2e.sh"
TTL=25
e2e_up proxy
e2e_start_solver
e2e_start_watcher --batch-idle 1s
e2e_start_launcher --catalog-source file --no-spot --ice-ttl ${TTL}s

e2e_general_pool >"$STATE_DIR/pools.yaml"
dep() { it_deployment "$@"; }
{ dep web 20 1 1Gi; dep api 6 2 4Gi; } >"$STATE_DIR/pods.yaml"
"$BUILD/tools/tailorctl" solve --pods "$STATE_DIR/pods.yaml" --nodepools "$STATE_DIR/pools.yaml" \
  --catalog "$CATALOG" -o json >"$STATE_DIR/plan.json"
ice=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps(sorted({n["instance_type"] for n in json.load(open(sys.argv[1]))["nodeclaims"]})))' "$STATE_DIR/plan.json")
echo "--- 1. out of capacity: $ice (what one plan would buy)"
e2e_proxy config "{\"ice\": $ice}"
$K apply --validate=false -f "$STATE_DIR/pools.yaml" >/dev/null
$K apply --validate=false -f "$STATE_DIR/pods.yaml" >/dev/null
check "all 26 pods Running on other types" e2e_wait_running 26 90
e2e_settle 30
fig() { e2e_fig "$1"; }
on_ice=$(/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["types"]; ice=json.loads(sys.argv[2]); print(sum(v for k,v in t.items() if k in ice))' "$STATE_DIR/check.json" "$ice")
injected=$(e2e_proxy stats | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ice_injected"])')
echo "  nodes $(fig types); $injected failed overrides injected"
check "EC2 answered insufficient capacity ($injected overrides)" test "$injected" -gt 0
check "no node of an out-of-capacity type ($on_ice)" test "$on_ice" = 0
check "instances = NodeClaims = Nodes ($(fig instances)/$(fig claims)/$(fig nodes)), none leaked" \
  test "$(fig instances)" = "$(fig claims)" -a "$(fig claims)" = "$(fig nodes)" -a "$(fig leaked)" = "[]"
iceln=$(grep '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" | tail -n 1 | sed -n 's/.*"ice":\([0-9]*\).*/\1/p')
check "the failed offerings are in the ICE cache (${iceln:-0})" test "${iceln:-0}" -gt 0
t_marked=$SECONDS

echo "--- 2. within the TTL: more pods, the failed types not even offered"
e2e_proxy reset
dep web 26 1 1Gi | $K apply --validate=false -f - >/dev/null
check "32 pods Running" e2e_wait_running 32 60
offered=$(e2e_proxy stats | /usr/bin/python3 -c 'import json,sys; ice=set(json.loads(sys.argv[1])); r=json.load(sys.stdin)["fleet_requests"]; print(len(r), sum(1 for f in r if ice & set(f["types"])))' "$ice")
echo "  CreateFleet calls within the TTL, and how many offered a failed type: $offered"
check "CreateFleet was called for the new pods (${offered% *})" test "${offered% *}" -gt 0
check "no CreateFleet offered a failed type within the TTL (${offered#* })" test "${offered#* }" = 0
check "that was within the TTL ($((SECONDS - t_marked))s < ${TTL}s)" test $((SECONDS - t_marked)) -lt $TTL

echo "--- 3. capacity back, TTL over: the cheap types are used again"
e2e_proxy config '{"ice": []}'
e2e_proxy reset
while [ $((SECONDS - t_marked)) -le $((TTL + 2)) ]; do sleep 1; done
# A second copy of the first workload: the plan that chose the failed
# types in step 1 chooses them again now that they are no longer cached.
{ dep web2 20 1 1Gi; dep api2 6 2 4Gi; } | $K apply --validate=false -f - >/dev/null
check "58 pods Running" e2e_wait_running 58 60
again=$(e2e_proxy stats | /usr/bin/python3 -c 'import json,sys; ice=set(json.loads(sys.argv[1])); r=json.load(sys.stdin)["fleet_requests"]; print(sum(1 for f in r if ice & set(f["types"])))' "$ice")
e2e_settle 30
on_ice=$(/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["types"]; ice=json.loads(sys.argv[2]); print(sum(v for k,v in t.items() if k in ice))' "$STATE_DIR/check.json" "$ice")
echo "  after the TTL: $again CreateFleet calls offered a formerly failed type; nodes $(fig types)"
check "a formerly failed type is offered again ($again calls)" test "$again" -gt 0
check "and bought ($on_ice nodes)" test "$on_ice" -gt 0
check "instances = NodeClaims = Nodes, none leaked" \
  test "$(fig instances)" = "$(fig claims)" -a "$(fig claims)" = "$(fig nodes)" -a "$(fig leaked)" = "[]"
e2e_finish
