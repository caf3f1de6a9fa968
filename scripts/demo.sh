#!/usr/bin/env bash
# demo.sh BUILD_DIR - the README's first command (make demo): tailor's main
# job on the local embedded cluster, no cloud account.
#
#   1. moto (EC2, SigV4 enforced) and kubesim come up (local-cluster.sh);
#   2. the four services start: watcher, two solver replicas, launcher,
#      disruptor;
#   3. a NodePool, an EC2NodeClass and several Deployments are applied;
#      their pods go Pending (no nodes yet);
#   4. live progress every second: pods pending/running, NodeClaims and
#      Nodes, cost per hour -- until every pod runs (or DEMO_TIMEOUT);
#   5. a summary, and an HTML report with plots over time
#      ($DEMO_OUT/report.html, default /tmp/tailor-demo/report.html).
# DEMO_HOLD=1 keeps everything running until Ctrl-C.
set -euo pipefail
build=${1:-build/release}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$repo/integration-tests/lib.sh"
out=${DEMO_OUT:-/tmp/tailor-demo}
timeout=${DEMO_TIMEOUT:-110}
catalog=${TAILOR_CATALOG:-$repo/../shared/data/aws-instance-types.json}
KUBECTL=${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
[ -x "$KUBECTL" ] || KUBECTL=kubectl
rm -rf "$out"
mkdir -p "$out"
export STATE_DIR=$out/cluster KUBESIM_BIN=$build/integration-tests/kubesim/kubesim
export TAILOR_CLUSTER_NAME=tailor-demo BOOT_DELAY=${BOOT_DELAY:-2s}
[ -f "$catalog" ] || { echo "demo: no instance catalog at $catalog (set TAILOR_CATALOG)" >&2; exit 1; }

pids=()
names=()
stop_all() {   # a service still up 15 s after TERM is killed: never hang here
  for i in "${!pids[@]}"; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for i in "${!pids[@]}"; do wait_exit "${pids[$i]}" 15 2>/dev/null || true; done
  "$repo/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
}
trap stop_all EXIT
# stopped by Ctrl-C, by `timeout`/a CI runner (TERM) or a closed terminal
# (HUP): exit, and the EXIT trap stops the services, moto and kubesim
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

step "local cluster: moto + kubesim (logs in $out)"
"$repo/scripts/local-cluster.sh" up >"$out/local-cluster.log" 2>&1 ||
  { cat "$out/local-cluster.log"; exit 1; }
eval "$("$repo/scripts/local-cluster.sh" env)"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
grep -E 'kubectl' "$out/local-cluster.log" | tail -n 1 | sed 's/^/  /'

step "services"
start() {   # NAME BINARY ARGS...
  local name=$1 bin=$2
  shift 2
  $(tls_as "tailor-$bin") "$build/services/tailor-$bin" "$@" 2>"$out/$name.log" &
  pids+=($!)
  names+=("$name")
}
declare -A http
for n in watcher solver-a solver-b launcher disruptor; do http[$n]=$(free_port); done
w_rep=$(free_port) w_pub=$(free_port) w_dec=$(free_port) sa=$(free_port) sb=$(free_port)
l_rep=$(free_port) l_pub=$(free_port) d_rep=$(free_port) d_pub=$(free_port)
start solver-a solver --listen "tls+tcp://127.0.0.1:$sa" --http-listen "127.0.0.1:${http[solver-a]}"
start solver-b solver --listen "tls+tcp://127.0.0.1:$sb" --http-listen "127.0.0.1:${http[solver-b]}"
start watcher watcher --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$w_rep" \
  --publish "tls+tcp://127.0.0.1:$w_pub" --decisions "tls+tcp://127.0.0.1:$w_dec" \
  --http-listen "127.0.0.1:${http[watcher]}"
start launcher launcher --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$l_rep" \
  --publish "tls+tcp://127.0.0.1:$l_pub" --http-listen "127.0.0.1:${http[launcher]}" \
  --solver "tls+tcp://127.0.0.1:$sa,tls+tcp://127.0.0.1:$sb" --watcher "tls+tcp://127.0.0.1:$w_pub" \
  --watcher-rep "tls+tcp://127.0.0.1:$w_rep" \
  --decisions "tls+tcp://127.0.0.1:$w_dec" --cluster-name "$TAILOR_CLUSTER_NAME" --catalog "$catalog" --lifecycle-interval 500ms
start disruptor disruptor --listen "tls+tcp://127.0.0.1:$d_rep" --publish "tls+tcp://127.0.0.1:$d_pub" \
  --http-listen "127.0.0.1:${http[disruptor]}"
for n in watcher solver-a solver-b launcher disruptor; do
  wait_for_status "http://127.0.0.1:${http[$n]}/readyz" 200 30 ||
    { echo "demo: $n not ready; its log:"; tail -n 20 "$out/$n.log"; exit 1; }
  printf '  %-10s ready  (http 127.0.0.1:%s)\n' "$n" "${http[$n]}"
done

step "workload: NodePool, EC2NodeClass and five Deployments"
k apply --validate=false -f "$repo/scripts/demo-workload.yaml" | sed 's/^/  /'

step "provisioning (every second: time, pods, NodeClaims, nodes, cost)"
# A tiny price table for the instance types nodes report.
/usr/bin/python3 - "$catalog" >"$out/prices.tsv" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1])):
    p = (t.get("od_price_usd_hr") or {}).get("us-east-1")
    if p: print(f'{t["name"]}\t{p}')
PY
echo "t,pending,running,claims,ready_nodes,cost,types" >"$out/series.csv"
printf '  %6s %8s %8s %8s %6s %10s\n' time pending running claims nodes '$/hour'
total=0 running=0
while :; do
  t=$(elapsed)
  pods=$(k get pods -A --no-headers 2>/dev/null || true)
  total=$(grep -c . <<<"$pods" || true)
  running=$(grep -c ' Running ' <<<"$pods" || true)
  pending=$((total - running))
  claims=$(k get nodeclaims --no-headers 2>/dev/null | grep -c . || true)
  nodes=$(k get nodes -o jsonpath='{range .items[*]}{.metadata.labels.node\.kubernetes\.io/instance-type} {.metadata.labels.karpenter\.sh/capacity-type}{"\n"}{end}' 2>/dev/null || true)
  ready=$(grep -c . <<<"$nodes" || true)
  read -r cost types < <(awk -F'\t' 'NR==FNR{p[$1]=$2; next}
      $1!="" {c += ($2=="spot" ? p[$1]*0.4 : p[$1]); n[$1]++}
      END{s=""; for (k in n) s = s (s==""?"":";") k "=" n[k]; printf "%.4f %s\n", c, (s==""?"-":s)}' \
      "$out/prices.tsv" <(tr ' ' '\t' <<<"$nodes"))
  printf '  %5ss %8s %8s %8s %6s %10s\n' "$t" "$pending" "$running" "$claims" "$ready" "$cost"
  echo "$t,$pending,$running,$claims,$ready,$cost,$types" >>"$out/series.csv"
  if [ "$total" -gt 0 ] && [ "$running" = "$total" ]; then break; fi
  if awk -v a="$t" -v b="$timeout" 'BEGIN{exit !(a > b)}'; then
    echo "demo: not every pod runs after ${timeout}s"; break
  fi
  sleep 1
done

step "summary"
instances=$(/usr/bin/python3 - <<'PY'
import os, botocore.session
ec2 = botocore.session.get_session().create_client(
    "ec2", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
n = 0
for r in ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])["Reservations"]:
    n += len(r["Instances"])
print(n)
PY
)
k get nodes -L node.kubernetes.io/instance-type,topology.kubernetes.io/zone,karpenter.sh/capacity-type |
  sed 's/^/  /'
echo "  pods running: $running of $total; EC2 instances: $instances; NodeClaims: $claims; nodes: $ready"
# How the nodes joined: each through the bootstrap in its user data, read
# by kubesim's kubelet simulator (the agent its AMI carries).
grep '"msg":"kubelet: node registered"' "$STATE_DIR/kubesim.log" 2>/dev/null |
  sed -n 's/.*"agent":"\([^"]*\)","ami":"\([^"]*\)".*/\1 (AMI \2)/p' | sort | uniq -c |
  sed 's/^ *\([0-9]*\) /  nodes joined through their user data: \1 via /' || true
refused=$(grep -c '"msg":"kubelet: instance never joins' "$STATE_DIR/kubesim.log" 2>/dev/null || true)
echo "  instances whose bootstrap was refused: ${refused:-0}"
echo "  cost: \$$cost per hour; time to all running: $(elapsed)s"
# The plan against what the cluster became: what the launcher's Solve
# answers planned, and how the zone-spread Deployment (web) landed.
planned=$(grep '"msg":"batch provisioned"' "$out/launcher.log" 2>/dev/null |
  sed -n 's/.*"plan_cost_per_hour":\([0-9.e+-]*\).*/\1/p' | awk '{s+=$1} END{printf "%.4f", s}')
k get pods,nodes -A -o json >"$out/final.json" 2>/dev/null || true
spread=$(/usr/bin/python3 - "$out/final.json" <<'PY'
import json, sys
from collections import Counter
items = json.load(open(sys.argv[1])).get("items", [])
zone = {n["metadata"]["name"]: n["metadata"].get("labels", {}).get("topology.kubernetes.io/zone", "")
        for n in items if n["kind"] == "Node"}
per = Counter(zone.get(p["spec"].get("nodeName", ""), "") for p in items
              if p["kind"] == "Pod" and p["metadata"].get("labels", {}).get("app") == "web"
              and p["spec"].get("nodeName"))
zs = sorted(set(zone.values()))
counts = [per.get(z, 0) for z in zs] or [0]
print("%s (skew %d)" % (", ".join("%s %d" % (z, per.get(z, 0)) for z in zs), max(counts) - min(counts)))
PY
)
echo "  planned: \$$planned per hour (the launcher's plans), realized \$$cost; web (maxSkew 1) by zone: $spread"
/usr/bin/python3 "$here/demo-report.py" "$out/series.csv" "$out/report.html"
echo "  report: $out/report.html"
ok=1
[ "$total" -gt 0 ] && [ "$running" = "$total" ] || ok=0
[ "$instances" = "$claims" ] || { echo "  MISMATCH: $instances instances vs $claims NodeClaims"; ok=0; }

if [ "${DEMO_HOLD:-0}" = 1 ]; then
  step "running; Ctrl-C stops"
  wait
fi
step "stopping"
trap - EXIT
for i in "${!pids[@]}"; do
  # A service that already died is reported (its exit status), not fatal.
  kill -TERM "${pids[$i]}" 2>/dev/null || true
  wait_exit "${pids[$i]}" 15
  printf '  %-10s exit %s\n' "${names[$i]}" "$WAIT_RC"
  [ "$WAIT_RC" = 0 ] || ok=0
done
"$repo/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
[ $ok = 1 ] && echo "demo: every pod runs on right-sized nodes tailor launched" ||
  { echo "demo: FAILED; logs in $out"; exit 1; }
