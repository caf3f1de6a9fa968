#!/usr/bin/env bash
# demo.sh BUILD_DIR - the README's first command (make demo): tailor's jobs
# on the local embedded cluster, no cloud account, in four acts.
#
#   setup  moto (EC2, SQS, SSM; SigV4 enforced) and kubesim come up
#          (local-cluster.sh); the interruption queue and the node image's
#          SSM parameter are made in moto, as an installation makes them;
#          the services start: watcher, two solver replicas, launcher,
#          disruptor (with its queue, short timings as the disruptor tests);
#   act 1  provision a burst: two NodePools (on-demand; spot, tainted), an
#          EC2NodeClass, a PDB and five Deployments (scripts/demo-workload.yaml)
#          go Pending; nodes are launched until every pod runs;
#   act 2  consolidate: the biggest Deployment (web) scales 24 -> 6; the
#          disruptor deletes or replaces nodes, at most the pool's budget (2)
#          at a time, web's PDB (maxUnavailable 1) holding throughout;
#   act 3  spot interruption: an "EC2 Spot Instance Interruption Warning"
#          for a spot node goes into the SQS queue; the node is replaced
#          (replacement launched first) and its instance terminated;
#   act 4  drift: a new AMI is released under the node class's SSM
#          parameter; the launcher publishes it in status.amis and every
#          node is rotated onto it within the budget.
#
# Every second a progress line (time, act, pods, NodeClaims, nodes, cost);
# at the end a summary per act (time, nodes launched/removed, cost
# before/after, PDB violations seen by an independent observer,
# integration-tests/disruptor/watch.py) and an HTML report.  An act that
# does not reach its goal within its timeout fails the demo (exit 1; the
# logs stay in $DEMO_OUT).
#
# Settings (environment):
#   DEMO_OUT       /tmp/tailor-demo   logs and records (samples.jsonl, acts.json,
#                                     nodeclaims-watch.jsonl, nodes-watch.jsonl,
#                                     decisions.jsonl, final.json, report.html)
#   DEMO_ACTS      1,2,3,4            the acts to run, in order; act 1 always
#                                     runs first (it makes the nodes the others
#                                     act on): DEMO_ACTS=3 runs 1 and 3
#   DEMO_TIMEOUTS  60,60,50,80        seconds each act may take to reach its goal
#                                     (act 4: 150 without act 2, see below)
#   DEMO_HOLD      0                  1: keep everything running until Ctrl-C
#   BOOT_DELAY     2s                 instance launch -> Node Ready
set -euo pipefail
build=${1:-build/release}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$repo/integration-tests/lib.sh"
out=${DEMO_OUT:-/tmp/tailor-demo}
catalog=${TAILOR_CATALOG:-$repo/../shared/data/aws-instance-types.json}
KUBECTL=${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
[ -x "$KUBECTL" ] || KUBECTL=kubectl
queue=tailor-demo-interruption      # the SQS queue EventBridge would feed
ami_param=/tailor/demo/node-ami     # the node class's amiSelectorTerms
[[ ${DEMO_ACTS:-1,2,3,4} =~ ^[1-4](,[1-4])*$ ]] ||
  { echo "demo: DEMO_ACTS is a comma-separated list of 1..4 (got '${DEMO_ACTS:-}')" >&2; exit 2; }
acts=1   # act 1 first, always; then the others asked for, in order, once
for a in 2 3 4; do [[ ,${DEMO_ACTS:-1,2,3,4}, == *,$a,* ]] && acts="$acts,$a"; done
[[ ,${DEMO_ACTS:-1,2,3,4}, == *,1,* ]] ||
  echo "demo: act 1 runs first anyway: it makes the nodes acts ${DEMO_ACTS} act on"
# Without act 2, web keeps 24 replicas under its PDB (maxUnavailable 1):
# act 4's drain evicts them one at a time, so it gets longer by default.
[[ ,$acts, == *,2,* ]] && t4=80 || t4=150
IFS=, read -r -a tmo <<<"${DEMO_TIMEOUTS:-60,60,50,$t4}"
rm -rf "$out"
mkdir -p "$out"
export STATE_DIR=$out/cluster KUBESIM_BIN=$build/integration-tests/kubesim/kubesim
export TAILOR_CLUSTER_NAME=tailor-demo BOOT_DELAY=${BOOT_DELAY:-2s}
[ -f "$catalog" ] || { echo "demo: no instance catalog at $catalog (set TAILOR_CATALOG)" >&2; exit 1; }

pids=()
names=()
aux=()   # the observers (demo-observer.py, watch.py): stopped first
stop_all() {   # a service still up 15 s after TERM is killed: never hang here
  for p in "${aux[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for i in "${!pids[@]}"; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for i in "${!pids[@]}"; do wait_exit "${pids[$i]}" 15 2>/dev/null || true; done
  for p in "${aux[@]}"; do wait_exit "$p" 5 2>/dev/null || true; done
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
aws() {   # python statements over ec2, sqs, ssm (botocore clients on moto)
  /usr/bin/python3 - "$1" <<'PY'
import json, os, sys, time, botocore.session
s = botocore.session.get_session()
ec2, sqs, ssm = (s.create_client(n, region_name=os.environ["AWS_REGION"],
                                 endpoint_url=os.environ["AWS_ENDPOINT_URL"]) for n in ("ec2", "sqs", "ssm"))
exec(sys.argv[1])
PY
}
# What an installation has before tailor runs: the queue EventBridge feeds
# (Karpenter's CloudFormation makes it) and, here, the parameter the node
# class selects its image through, set to the current EKS AL2023 release
# (AWS's own /aws/service/... parameters cannot be written, in moto as in AWS).
old_ami=$(aws "
sqs.create_queue(QueueName='$queue')
v = ssm.get_parameter(Name='/aws/service/eks/optimized-ami/${K8S_VERSION:-1.31}/amazon-linux-2023/x86_64/standard/recommended/image_id')['Parameter']['Value']
ssm.put_parameter(Name='$ami_param', Value=v, Type='String', Overwrite=True)
print(v)")
echo "  SQS queue $queue; SSM $ami_param = $old_ami"

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
  --http-listen "127.0.0.1:${http[watcher]}" --batch-idle 500ms --batch-max 2s
start launcher launcher --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$l_rep" \
  --publish "tls+tcp://127.0.0.1:$l_pub" --http-listen "127.0.0.1:${http[launcher]}" \
  --solver "tls+tcp://127.0.0.1:$sa,tls+tcp://127.0.0.1:$sb" --watcher "tls+tcp://127.0.0.1:$w_pub" \
  --watcher-rep "tls+tcp://127.0.0.1:$w_rep" \
  --decisions "tls+tcp://127.0.0.1:$w_dec" --cluster-name "$TAILOR_CLUSTER_NAME" --catalog "$catalog" \
  --lifecycle-interval 500ms --nodeclass-refresh 2s
# The disruptor with the disruptor tests' short timings
# (integration-tests/disruptor/lib.sh) and the interruption queue.
start disruptor disruptor --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$d_rep" \
  --publish "tls+tcp://127.0.0.1:$d_pub" --http-listen "127.0.0.1:${http[disruptor]}" \
  --watcher "tls+tcp://127.0.0.1:$w_rep" --watcher-publish "tls+tcp://127.0.0.1:$w_pub" \
  --launcher "tls+tcp://127.0.0.1:$l_rep" \
  --solver "tls+tcp://127.0.0.1:$sa,tls+tcp://127.0.0.1:$sb" --catalog "$catalog" \
  --termination-interval 500ms --disruption-interval 2s --min-drain-time 1s \
  --validation-delay 2s --lease-duration 3s --lease-renew-deadline 2s \
  --lease-retry-period 500ms --event-interval 5s --catalog-refresh 2s \
  --interruption-queue "$queue" --interruption-interval 500ms
for n in watcher solver-a solver-b launcher disruptor; do
  wait_for_status "http://127.0.0.1:${http[$n]}/readyz" 200 30 ||
    { echo "demo: $n not ready; its log:"; tail -n 20 "$out/$n.log"; exit 1; }
  printf '  %-10s ready  (http 127.0.0.1:%s)\n' "$n" "${http[$n]}"
done

# A tiny price table for the instance types nodes report.
/usr/bin/python3 - "$catalog" >"$out/prices.tsv" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1])):
    p = (t.get("od_price_usd_hr") or {}).get("us-east-1")
    if p: print(f'{t["name"]}\t{p}')
PY
# The recorder: samples.jsonl (what the progress lines print) and the
# NodeClaim, Node and Event watches.
echo 0 >"$out/act"
/usr/bin/python3 "$here/demo-observer.py" "$KUBECONFIG" "$out" "$t0" "$out/prices.tsv" \
  2>"$out/observer.log" &
aux+=($!)
for _ in $(seq 1 100); do [ -s "$out/samples.jsonl" ] && break; sleep 0.1; done

# ---- the acts --------------------------------------------------------------
sample() { tail -n 1 "$out/samples.jsonl"; }
sjq() { sample | jq -r "$@"; }
head_line() { printf '  %6s %4s %8s %8s %7s %6s %6s %9s  %s\n' time act pending running claims nodes disr '$/hour' capacity; }
show() {   # the last sample as one progress line
  sample | jq -r '[.t, .act, .pods.pending, .pods.running, .claims, .nodes.total, .nodes.disrupting,
      .cost_per_hour, (.nodes.by_capacity_type | to_entries | map("\(.key) \(.value)") | join(", "))] | @tsv' |
    awk -F'\t' '{printf "  %5.1fs %4s %8s %8s %7s %6s %6s %9.4f  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
}
# The cluster at rest: every pod runs, as many Nodes as NodeClaims, none
# deleting or disrupting.
SETTLED='.pods.total > 0 and .pods.pending == 0 and .claims_deleting == 0 and .nodes.disrupting == 0 and .claims == .nodes.total'
# wait_goal SECONDS HOLD JQ: a progress line every second until JQ (over
# the last sample, with $before = the act's first claim names) holds in
# HOLD consecutive lines; false after SECONDS.
wait_goal() {
  local secs=$1 hold=$2 expr=$3 ok=0 start
  start=$(date +%s)
  while :; do
    show
    if [ "$(sample | jq --argjson before "$claims0" "$expr")" = true ]; then
      ok=$((ok + 1))
      [ "$ok" -ge "$hold" ] && return 0
    else
      ok=0
    fi
    [ $(($(date +%s) - start)) -lt "$secs" ] || return 1
    sleep 1
  done
}
echo '[]' >"$out/acts.json"
act_begin() {   # N NAME
  act=$1 act_name=$2
  step "act $1: $2"
  echo "$1" >"$out/act"
  act_t0=$(elapsed)
  claims0=$(sjq -c '.claim_names')
  cost0=$(sjq '.cost_per_hour')
  /usr/bin/python3 "$repo/integration-tests/disruptor/watch.py" "$KUBECONFIG" "$out/watch-act$1.json" \
    >"$out/watch-act$1.log" 2>&1 &
  watch_pid=$!
  aux+=("$watch_pid")
  head_line
}
act_end() {   # OK DETAIL [EXTRA]: stop the observer, append the act (and the
              # JSON object EXTRA's fields) to acts.json
  local ok=$1 detail=$2 extra=${3:-'{}'} t1 counts viol
  t1=$(elapsed)
  kill -TERM "$watch_pid" 2>/dev/null || true
  wait_exit "$watch_pid" 10
  viol=$(jq '.n_pdb_violations' "$out/watch-act$act.json" 2>/dev/null || echo null)
  [ "$viol" = 0 ] || { ok=false; detail="$detail; PDB violations: $viol (watch-act$act.json)"; }
  # launched: NodeClaims added during the act that were not there at its
  # start; removed: NodeClaims deleted during it (the watch keeps both)
  counts=$(jq -s -c --argjson a "$act_t0" --argjson b "$t1" --argjson before "$claims0" '
      [.[] | select(.t >= $a and .t <= $b + 1)] as $w |
      {launched: ([$w[] | select(.type == "ADDED") | .object.metadata.name |
                   select(. as $n | any($before[]; . == $n) | not)] | unique | length),
       removed: ([$w[] | select(.type == "DELETED") | .object.metadata.name] | unique | length)}' \
      "$out/nodeclaims-watch.jsonl")
  jq --argjson n "$act" --arg name "$act_name" --argjson s "$act_t0" --argjson e "$t1" \
     --argjson ok "$ok" --argjson c "$counts" --argjson cb "$cost0" --argjson ca "$(sjq '.cost_per_hour')" \
     --argjson v "$viol" --arg d "$detail" --argjson x "$extra" \
     '. + [{act: $n, name: $name, start: $s, end: $e, ok: $ok, launched: $c.launched, removed: $c.removed,
            cost_before: $cb, cost_after: $ca, pdb_violations: $v, detail: $d} + $x]' \
     "$out/acts.json" >"$out/acts.json.new" && mv "$out/acts.json.new" "$out/acts.json"
  printf '  act %s: %s in %.1fs: %s\n' "$act" "$([ "$ok" = true ] && echo done || echo FAILED)" \
    "$(awk -v a="$act_t0" -v b="$t1" 'BEGIN{print b-a}')" "$detail"
  [ "$ok" = true ]
}

act1() {
  act_begin 1 "provision a burst"
  k apply --validate=false -f "$repo/scripts/demo-workload.yaml" >"$out/act1-apply.log"
  if wait_goal "${tmo[0]:-60}" 1 "$SETTLED"; then
    act_end true "$(sjq '"\(.pods.running) pods on \(.nodes.total) nodes (\(.nodes.by_capacity_type |
        to_entries | map("\(.value) \(.key)") | join(", ")))"')"
  else
    act_end false "not every pod runs on a Ready node after ${tmo[0]:-60}s"
  fi
}

act2() {
  act_begin 2 "scale down and consolidate"
  echo "  web 24 -> 6 replicas; PDB web: maxUnavailable 1; pool default: WhenEmptyOrUnderutilized, consolidateAfter 5s, budget 2 nodes"
  k scale deployment web --replicas 6 >/dev/null
  # done: a node gone, cost down, and the cluster at rest for 6 lines (so
  # that what consolidation still does is seldom left to the next act)
  if wait_goal "${tmo[1]:-60}" 6 "$SETTLED and .cost_per_hour < $cost0 and ([\$before[] as \$n | select(.claim_names | index([\$n]) | not)] | length) >= 1"; then
    act_end true "$(sjq '"\(.nodes.total) nodes left, $\(.cost_per_hour)/h"') (was \$$cost0/h)"
  else
    act_end false "no node removed with the cost down and the cluster at rest after ${tmo[1]:-60}s"
  fi
}

act3() {
  act_begin 3 "spot interruption"
  local node claim inst state x
  node=$(k get nodes -l karpenter.sh/capacity-type=spot -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
  if [ -z "$node" ]; then act_end false "no spot node to interrupt"; return; fi
  inst=$(k get node "$node" -o jsonpath='{.spec.providerID}' | sed 's|.*/||')
  claim=$(k get nodeclaims -o json | jq -r --arg n "$node" '.items[] | select(.status.nodeName == $n) | .metadata.name')
  echo "  EC2 Spot Instance Interruption Warning for $inst ($node, NodeClaim $claim) into SQS $queue"
  aws "
q = sqs.get_queue_url(QueueName='$queue')['QueueUrl']
ev = {'version': '0', 'id': 'demo-1', 'detail-type': 'EC2 Spot Instance Interruption Warning',
      'source': 'aws.ec2', 'account': '123456789012',
      'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'region': os.environ['AWS_REGION'],
      'resources': ['arn:aws:ec2:%s:123456789012:instance/$inst' % os.environ['AWS_REGION']],
      'detail': {'instance-id': '$inst', 'instance-action': 'terminate'}}
sqs.send_message(QueueUrl=q, MessageBody=json.dumps(ev))"
  x=$(jq -n -c --arg n "$node" --arg c "$claim" --arg i "$inst" '{interrupted: {node: $n, nodeclaim: $c, instance: $i}}')
  # done: the claim gone, a new one launched, the cluster at rest
  if wait_goal "${tmo[2]:-50}" 3 "$SETTLED and (.claim_names | index([\"$claim\"]) | not) and ([.claim_names[] as \$n | select(\$before | index([\$n]) | not)] | length) >= 1"; then
    state=$(aws "print(ec2.describe_instances(InstanceIds=['$inst'])['Reservations'][0]['Instances'][0]['State']['Name'])")
    if [ "$state" = terminated ] || [ "$state" = shutting-down ]; then
      act_end true "$node ($claim) replaced; instance $inst $state" "$x"
    else
      act_end false "$node ($claim) gone but its instance $inst is $state" "$x"
    fi
  else
    act_end false "$node ($claim) not replaced after ${tmo[2]:-50}s" "$x"
  fi
}

act4() {
  act_begin 4 "drift: a new AMI"
  local new imgs x
  # A new release of the image: registered (a copy of the current one, as
  # a new EKS AL2023 build) and published under the class's parameter.
  new=$(aws "
r = os.environ['AWS_REGION']
img = ec2.copy_image(SourceImageId='$old_ami', SourceRegion=r,
                     Name='amazon-eks-node-al2023-x86_64-standard-${K8S_VERSION:-1.31}-v20251204',
                     Description='EKS optimized AL2023, the next release')['ImageId']
ssm.put_parameter(Name='$ami_param', Value=img, Type='String', Overwrite=True)
print(img)")
  echo "  $ami_param: $old_ami -> $new; pools' budgets: default 2 nodes, spot 1"
  x=$(jq -n -c --arg o "$old_ami" --arg n "$new" '{ami: {old: $o, new: $n}}')
  if wait_goal "${tmo[3]:-80}" 2 "$SETTLED and .claims_by_image == {\"$new\": .claims}"; then
    imgs=$(aws "
imgs = set()
for r in ec2.describe_instances(Filters=[{'Name': 'instance-state-name', 'Values': ['pending', 'running']},
                                         {'Name': 'tag-key', 'Values': ['karpenter.sh/nodepool']}])['Reservations']:
    imgs.update(i['ImageId'] for i in r['Instances'])
print(' '.join(sorted(imgs)))")
    if [ "$imgs" = "$new" ]; then
      act_end true "$(sjq '.nodes.total') nodes rotated onto $new" "$x"
    else
      act_end false "NodeClaims on $new but EC2 runs images: $imgs" "$x"
    fi
  else
    act_end false "not every node on $new after ${tmo[3]:-80}s: $(sjq -c '.claims_by_image')" "$x"
  fi
}

ok=1
IFS=, read -r -a run <<<"$acts"
for a in "${run[@]}"; do
  "act$a" || { ok=0; echo "  (later acts skipped: they start from this act's end)"; break; }
done
echo 5 >"$out/act"   # after the acts

step "summary"
total=$(elapsed)
jq -r '.[] | [.act, .name, (.end - .start), .launched, .removed, .cost_before, .cost_after, .pdb_violations,
              (if .ok then "ok" else "FAILED" end), .detail] | @tsv' "$out/acts.json" |
  awk -F'\t' 'BEGIN{printf "  %-3s %-28s %7s %8s %7s %21s %5s %-6s\n", "act", "", "time", "launched", "removed", "$/hour before -> after", "PDB!", ""}
              {printf "  %-3s %-28s %6.1fs %8s %7s %9.4f -> %9.4f %5s %-6s %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}'
k get nodes -L node.kubernetes.io/instance-type,topology.kubernetes.io/zone,karpenter.sh/capacity-type 2>/dev/null |
  sed 's/^/  /' || true
k get nodes,nodeclaims,pods -A -o json >"$out/final.json" 2>/dev/null || true
k get events -A -o json >"$out/events-final.json" 2>/dev/null || true
# every instance EC2 knows, with its state and image (instances-final.json)
instances=$(aws "
all = [{'id': i['InstanceId'], 'state': i['State']['Name'], 'image': i['ImageId'], 'type': i['InstanceType'],
        'tags': {t['Key']: t['Value'] for t in i.get('Tags', [])}}
       for r in ec2.describe_instances()['Reservations'] for i in r['Instances']]
json.dump(all, open('$out/instances-final.json', 'w'), indent=1)
print(sum(1 for i in all if i['state'] in ('pending', 'running')))" 2>/dev/null || echo '?')
claims=$(sjq '.claims')
echo "  $(sjq '"pods running: \(.pods.running) of \(.pods.total); NodeClaims: \(.claims); nodes: \(.nodes.total); $\(.cost_per_hour)/h"'); EC2 instances: $instances"
[ "$instances" = "$claims" ] || { echo "  MISMATCH: $instances instances vs $claims NodeClaims"; ok=0; }
# How the nodes joined: each through the bootstrap in its user data, read
# by kubesim's kubelet simulator (the agent its AMI carries).
grep '"msg":"kubelet: node registered"' "$STATE_DIR/kubesim.log" 2>/dev/null |
  sed -n 's/.*"agent":"\([^"]*\)","ami":"\([^"]*\)".*/\1 (AMI \2)/p' | sort | uniq -c |
  sed 's/^ *\([0-9]*\) /  nodes joined through their user data: \1 via /' || true
refused=$(grep -c '"msg":"kubelet: instance never joins' "$STATE_DIR/kubesim.log" 2>/dev/null || true)
echo "  instances whose bootstrap was refused: ${refused:-0}"
# How web (maxSkew 1 across zones) landed.
spread=$(/usr/bin/python3 - "$out/final.json" <<'PY' || true
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
echo "  web (maxSkew 1, DoNotSchedule) by zone: $spread"
echo "  total time: ${total}s (acts $acts)"

# The records the report reads: every disruption decision with its reason
# (Events on Nodes and NodeClaims, the disruptor's decision log lines), and
# the series the old report plotted.
/usr/bin/python3 "$here/demo-decisions.py" "$out" "$t0" >"$out/decisions.jsonl" ||
  echo "demo: warning: decisions.jsonl not written"
jq -r '[.t, .pods.pending, .pods.running, .claims, .nodes.total, .cost_per_hour,
        (.nodes.by_type | to_entries | map("\(.key)=\(.value)") | join(";"))] | @csv' "$out/samples.jsonl" |
  tr -d '"' | sed '1i t,pending,running,claims,ready_nodes,cost,types' >"$out/series.csv" || true
if /usr/bin/python3 "$here/demo-report.py" "$out" "$out/report.html" >"$out/report.log" 2>&1; then
  echo "  report: $out/report.html"
else
  echo "demo: warning: the report was not written ($out/report.log)"
fi
if [ "${DEMO_HOLD:-0}" = 1 ]; then
  step "running; Ctrl-C stops"
  wait
fi
step "stopping"
trap - EXIT
for p in "${aux[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${aux[@]}"; do wait_exit "$p" 10; done
for i in "${!pids[@]}"; do
  # A service that already died is reported (its exit status), not fatal.
  kill -TERM "${pids[$i]}" 2>/dev/null || true
  wait_exit "${pids[$i]}" 15
  printf '  %-10s exit %s\n' "${names[$i]}" "$WAIT_RC"
  [ "$WAIT_RC" = 0 ] || ok=0
done
"$repo/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
[ $ok = 1 ] && echo "demo: every act reached its goal; records in $out" ||
  { echo "demo: FAILED; logs in $out"; exit 1; }
