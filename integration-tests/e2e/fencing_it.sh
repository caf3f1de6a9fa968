#!/usr/bin/env bash
# fencing_it.sh BUILD_DIR - two launchers on one Lease; the leader is cut
# off from the API server in the middle of a stalled CreateFleet.
#
# Launcher A reaches the API server through partition.py (a TCP
# pass-through that can go silent) and EC2 through ec2proxy.py, which
# holds every CreateFleet 15 s (a stalled EC2 call) and counts what
# arrives.  Launcher B talks to kubesim and moto directly.  Lease timing:
# 6 s lease, 4 s renew deadline, 1 s retry.  A leads; pods go pending; A
# writes a NodeClaim and its CreateFleet hangs in the proxy; then A's
# connection to the API server goes silent (renewals hang, nothing fails
# fast).  Checked:
#   - A stops acting within its renew deadline of the partition: it logs
#     "lost leadership", its tailor_lease_leader gauge reads 0, and no
#     mutating EC2 call from A arrives after its valid-until (the proxy's
#     counts do not move after partition + renew deadline);
#   - B takes the Lease (observed time: 6 s after it last saw A renew),
#     deletes A's never-launched NodeClaim and provisions the pods;
#   - EC2 executes the held CreateFleet anyway (as EC2 would: the request
#     had arrived): the instance it makes belongs to no claim and B's GC
#     terminates it after its 30 s grace;
#   - at the end instances = NodeClaims = Nodes, nothing leaked, no
#     instance named by two NodeClaims, every pod Running.
set -euo pipefail
BUILD=$(cd "${1:?usage: fencing_it.sh BUILD_DIR}" && pwd)
export BOOT_DELAY=1s
. "$(dirname "$0")/lib_e2e.sh"
e2e_up proxy
e2e_start_solver
e2e_start_watcher --batch-idle 1s
A_EC2=$EC2_URL

ks_url=$(sed -n 's/^ *server: *//p' "$KUBECONFIG" | head -n 1)
ks_port=${ks_url##*:}
KP=$(free_port) KC=$(free_port)
/usr/bin/python3 "$here_e2e/partition.py" "$KP" "$ks_port" "$KC" >"$STATE_DIR/partition.log" 2>&1 &
e2e_pids+=($!)
wait_for_status "http://127.0.0.1:$KC/stats" 200 20 || { cat "$STATE_DIR/partition.log"; exit 1; }
sed "s#$ks_url#https://127.0.0.1:$KP#" "$KUBECONFIG" >"$STATE_DIR/kubeconfig-a"

# start_launcher NAME KUBECONFIG EC2_URL: sets HTTP_<NAME>, PID_<NAME>.
start_launcher() {
  local h=$(free_port)
  $(tls_as tailor-launcher) "$BUILD/services/tailor-launcher" --kubeconfig "$2" \
    --listen "$(nng_url "$(free_port)")" --publish "$(nng_url "$(free_port)")" \
    --http-listen "127.0.0.1:$h" \
    --solver "$(nng_url "$SOLVER_PORT")" --watcher "$(nng_url "$WATCHER_PUB")" \
    --watcher-rep "$(nng_url "$WATCHER_REP")" \
    --cluster-name "$CLUSTER_NAME" --catalog "$CATALOG" --aws-endpoint "$3" \
    --catalog-source file --no-spot --lifecycle-interval 500ms --gc-interval 5s \
    --lease-duration 6s --lease-renew-deadline 4s --lease-retry-period 1s \
    >"$STATE_DIR/launcher-$1.log" 2>&1 &
  e2e_pids+=($!)
  printf -v "PID_$1" %s $!
  printf -v "HTTP_$1" %s "$h"
  wait_for_status "http://127.0.0.1:$h/healthz" 200 30 || { tail "$STATE_DIR/launcher-$1.log"; exit 1; }
}
metric() {   # metric HTTP NAME: the value of an unlabelled-or-lease series, or -
  curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null |
    awk -v n="$2" '$1 == n || index($1, n "{") == 1 { v = $2 } END { print (v == "" ? "-" : v) }'
}
wait_metric() {   # wait_metric HTTP NAME VALUE SECS
  local i
  for ((i = 0; i < $4 * 10; i++)); do
    [ "$(metric "$1" "$2")" = "$3" ] && return 0
    sleep 0.1
  done
  return 1
}
mutating() {   # the mutating EC2 calls that reached A's proxy, as one line
  e2e_proxy stats | /usr/bin/python3 -c 'import json,sys
a = json.load(sys.stdin)["actions"]
print(" ".join("%s=%d" % (k, a.get(k, 0)) for k in ("CreateFleet", "RunInstances",
      "TerminateInstances", "CreateTags", "CreateLaunchTemplate", "DeleteLaunchTemplate")))'
}

start_launcher a "$STATE_DIR/kubeconfig-a" "$A_EC2"
check "A leads" wait_metric "$HTTP_a" tailor_lease_leader 1 20
start_launcher b "$KUBECONFIG" "$AWS_ENDPOINT_URL"
sleep 2
check "B follows while A renews" test "$(metric "$HTTP_b" tailor_lease_leader)" = 0

e2e_proxy config '{"fleet_delay_ms": 15000}'
n=4
{
  cat <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
YAML
  it_nodeclass KarpenterNodeRole-e2e
  cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec:
  replicas: $n
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - {name: c, image: app, resources: {requests: {cpu: "1", memory: 2Gi}}}
YAML
} >"$STATE_DIR/w.yaml"
$K apply --validate=false -f "$STATE_DIR/w.yaml" >/dev/null

# A's CreateFleet has reached EC2's front door and is held there.
for ((i = 0; i < 600; i++)); do
  [ "$(e2e_fleets)" -ge 1 ] && break
  sleep 0.05
done
check "A's CreateFleet is stalled in EC2" test "$(e2e_fleets)" -ge 1
claims_a=$($K get nodeclaims -o jsonpath='{.items[*].metadata.name}')
sleep 0.5
hung_at=$(curl -fsS -X POST "http://127.0.0.1:$KC/hang" |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["hung_at"])')
echo "  A cut off from the API server with its CreateFleet in flight (claims: $claims_a)"

check "A stops leading within its renew deadline" wait_metric "$HTTP_a" tailor_lease_leader 0 5
lost=$(grep -m1 '"msg":"lost leadership: stopped acting"' "$STATE_DIR/launcher-a.log" || true)
echo "  ${lost:-no lost-leadership line}"
check "A says it stopped acting" test -n "$lost"
lost_s=$(/usr/bin/python3 -c 'import json,sys,datetime
t = json.loads(sys.argv[1])["ts"]
print(datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
    tzinfo=datetime.timezone.utc).timestamp())' "$lost")
late=$(/usr/bin/python3 -c 'import sys; print("%.1f" % (float(sys.argv[1]) - float(sys.argv[2])))' \
  "$lost_s" "$hung_at")
echo "  A stopped ${late}s after the partition (renew deadline 4s)"
check "... at most its renew deadline (+0.5 s) after its last renewal could have been sent" \
  /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 4.5)' "$late"
# The stalled CreateFleet did not outlive A's leadership: it was cut (EC2
# holds it for 15 s, so an uncut call would still be waiting).
cutline=$(grep -m1 'CreateFleet: cut: this replica' "$STATE_DIR/launcher-a.log" || true)
check "A's stalled CreateFleet was cut at its valid-until" test -n "$cutline"
if [ -n "$cutline" ]; then
  cut_late=$(/usr/bin/python3 -c 'import json,sys,datetime
t = json.loads(sys.argv[1])["ts"]
s = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print("%.1f" % (s.timestamp() - float(sys.argv[2])))' "$cutline" "$hung_at")
  echo "  A's CreateFleet given up ${cut_late}s after the partition"
  check "... within the renew deadline (+0.5 s) of the partition" \
    /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 4.5)' "$cut_late"
fi
# Past A's valid-until (partition + renew deadline): what A sent to EC2 so far.
sleep "$(/usr/bin/python3 -c 'import sys,time; print(max(0, float(sys.argv[1]) + 4.5 - time.time()))' "$hung_at")"
at_valid_until=$(mutating)
echo "  A's mutating EC2 calls by its valid-until: $at_valid_until"

check "B takes the Lease" wait_metric "$HTTP_b" tailor_lease_leader 1 15
check "all $n pods Running, provisioned by B" e2e_wait_running "$n" 60
adopt=$(grep -m1 '"msg":"adoption: deleting nodeclaim that was never launched"\|"msg":"adopted nodeclaims' \
  "$STATE_DIR/launcher-b.log" || true)
echo "  B on A's NodeClaims: ${adopt:-nothing to adopt}"
# Judge only once EC2 has executed the held CreateFleet calls (they had
# arrived: EC2 carries them out though A gave up on them).
sleep "$(/usr/bin/python3 -c 'import sys,time; print(max(0, float(sys.argv[1]) + 15.5 - time.time()))' "$hung_at")"
e2e_settle 60
fig() { e2e_fig "$1"; }
# The Nodes of garbage-collected instances go when the kubelet simulator
# sees their instance gone (as the cloud node controller removes them).
for ((i = 0; i < 30; i++)); do
  [ "$(fig nodes)" = "$(fig instances)" ] && break
  sleep 1
  e2e_check
done
echo "  figures: $(cat "$STATE_DIR/check.json")"
after=$(mutating)
echo "  A's mutating EC2 calls at the end:       $after"
check "no mutating EC2 call from A after its valid-until" test "$after" = "$at_valid_until"
check "A never led again" test "$(metric "$HTTP_a" tailor_lease_leader)" = 0
check "A counted the loss once" test "$(metric "$HTTP_a" tailor_lease_lost_total)" = 1
check "A's launcher process is still up" kill -0 "$PID_a"
gced=$(grep -c '"msg":"gc: terminating leaked instance"' "$STATE_DIR/launcher-b.log" || true)
echo "  B garbage-collected $gced instance(s) (the stalled CreateFleet's, executed by EC2 after A let go)"
check "the instances EC2 made for A's abandoned CreateFleet were collected" test "$gced" -ge 1
# Every instance ever launched (terminated ones included), per NodeClaim tag.
twice=$(/usr/bin/python3 -c 'import os, botocore.session
from collections import Counter
ec2 = botocore.session.get_session().create_client("ec2",
    region_name=os.environ.get("AWS_REGION", "us-east-1"), endpoint_url=os.environ["AWS_ENDPOINT_URL"])
n = Counter()
for page in ec2.get_paginator("describe_instances").paginate():
    for r in page["Reservations"]:
        for i in r["Instances"]:
            for t in i.get("Tags", []):
                if t["Key"] == "karpenter.sh/nodeclaim":
                    n[t["Value"]] += 1
print(" ".join(sorted(c for c, k in n.items() if k > 1)))')
check "no NodeClaim ever got two instances (${twice:-none})" test -z "$twice"
check "no leaked instance" test "$(fig leaked)" = "[]"
check "no instance named by two NodeClaims" test "$(fig duplicate_claims)" = "[]"
check "instances = NodeClaims = Nodes ($(fig instances)/$(fig claims)/$(fig nodes))" \
  test "$(fig instances)" = "$(fig claims)" -a "$(fig claims)" = "$(fig nodes)"
check "no NodeClaim without its instance" test "$(fig claims_without_instance)" = "[]"
check "still all $n pods Running ($(fig running))" test "$(fig running)" = "$n"
if [ "${FAILED:-0}" != 0 ]; then
  for r in a b; do
    echo "--- launcher $r (warnings, tail)"
    grep -E '"level":"(warn|error)"' "$STATE_DIR/launcher-$r.log" | tail -n 12 || true
  done
fi
finish
