#!/usr/bin/env bash
# failures_it.sh BUILD_DIR - what a user sees when provisioning cannot
# work, and that the launcher neither crash-loops nor storms EC2 (every
# EC2 call goes through ec2proxy.py, which counts them):
#
#   A. invalid credentials (a wrong secret: moto refuses the signature):
#      the EC2NodeClass says why in its conditions, an Event says it, the
#      pods get FailedScheduling Warnings; no CreateFleet at all, a handful
#      of Describe calls (back-off), the launcher up and the same process;
#   B. expired credentials (ExpiredToken, injected by the proxy) with good
#      ones: the same, then the token is "renewed" and the launcher
#      recovers by itself -- the pods get nodes without a restart;
#   C. a bad AMI selector: AMIsReady False / AMINotFound on that class,
#      its pool's pods stay pending with a reason, nothing launched for it;
#   D. a NodePool whose limit is reached: it buys up to the limit, the
#      rest of its pods are told why, and no further launch is attempted.
set -euo pipefail
BUILD=$(cd "${1:?usage: failures_it.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib_e2e.sh"
e2e_up proxy
e2e_start_solver
e2e_start_watcher --batch-idle 1s --resync 5s
GOOD_CREDS=$AWS_SHARED_CREDENTIALS_FILE
sed 's/^\(aws_secret_access_key = \).*/\1wrongwrongwrongwrongwrongwrongwrongwrong/' "$GOOD_CREDS" \
  >"$STATE_DIR/bad-credentials"

cat >"$STATE_DIR/pools.yaml" <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    metadata: {labels: {team: general}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
YAML
it_nodeclass KarpenterNodeRole-e2e >>"$STATE_DIR/pools.yaml"
dep() {   # NAME REPLICAS CPU TEAM
  it_deployment "$1" "$2" "$3" 1Gi "      nodeSelector: {team: $4}"
}
actions() {   # the proxy's count of one action
  e2e_proxy stats | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["actions"].get(sys.argv[1], 0))' "$1"
}
cond() {   # EC2NodeClass TYPE -> "status reason message"
  $K get ec2nodeclass "$1" -o json | /usr/bin/python3 -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c["type"] == sys.argv[1]:
        print(c["status"], c["reason"], c.get("message", ""))' "$2"
}
events() {   # KIND REASON -> count of such Events
  $K get events -A -o json | /usr/bin/python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["items"]
          if e["involvedObject"]["kind"] == sys.argv[1] and e["reason"] == sys.argv[2]))' "$1" "$2"
}

echo "--- A. invalid credentials"
AWS_SHARED_CREDENTIALS_FILE=$STATE_DIR/bad-credentials e2e_start_launcher --catalog-source file --no-spot
pid_a=$LAUNCHER_PID
$K apply --validate=false -f "$STATE_DIR/pools.yaml" >/dev/null
dep app 6 1 general | $K apply --validate=false -f - >/dev/null
sleep 25
c=$(cond default SubnetsReady)
echo "  SubnetsReady: $c"
echo "  Ready: $(cond default Ready)"
check "the EC2NodeClass says the credentials were refused" sh -c "echo '$c' | grep -q '^False SubnetsNotResolved .*\(AuthFailure\|SignatureDoesNotMatch\|InvalidClientTokenId\)'"
check "a Warning Event on the EC2NodeClass ($(events EC2NodeClass NotReady))" test "$(events EC2NodeClass NotReady)" -ge 1
fs=$(events Pod FailedScheduling)
check "the pods are told why they wait ($fs FailedScheduling Events)" test "$fs" -ge 6
cf=$(actions CreateFleet)
ds=$(actions DescribeSubnets)
echo "  in 25 s: $cf CreateFleet, $ds DescribeSubnets calls"
check "no CreateFleet ($cf)" test "$cf" = 0
check "a handful of DescribeSubnets, backing off ($ds)" test "$ds" -le 5
check "the launcher is up, the same process (no crash loop)" \
  sh -c "kill -0 $pid_a && curl -fsS http://127.0.0.1:$LAUNCHER_HTTP/healthz >/dev/null"
kill "$pid_a"; wait "$pid_a" 2>/dev/null || true

echo "--- B. expired credentials, then renewed"
e2e_proxy reset
e2e_proxy config '{"expired": true}'
e2e_start_launcher --catalog-source file --no-spot
for ((i = 0; i < 30; i++)); do
  c=$(cond default SubnetsReady)
  case $c in *ExpiredToken*) break ;; esac
  sleep 1
done
echo "  (the stopped launcher released its Lease: the new one led at once)"
echo "  SubnetsReady: $c"
check "the EC2NodeClass says the token expired" sh -c "echo '$c' | grep -q '^False SubnetsNotResolved ExpiredToken'"
check "no CreateFleet while expired ($(actions CreateFleet))" test "$(actions CreateFleet)" = 0
e2e_proxy config '{"expired": false}'
check "renewed: the launcher recovers by itself, all 6 pods Running" e2e_wait_running 6 60
echo "  Ready: $(cond default Ready)"
check "the EC2NodeClass is Ready again" sh -c "$K get ec2nodeclass default -o json | grep -q '\"type\": *\"Ready\", *\"status\": *\"True\"' || [ \"\$($K get ec2nodeclass default -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]"

echo "--- C. a bad AMI selector"
e2e_proxy reset
cat <<'YAML' | $K apply --validate=false -f - >/dev/null
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: badami}
spec:
  template:
    metadata: {labels: {team: badami}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: badami}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: badami}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{id: ami-0doesnotexist000}]
  role: KarpenterNodeRole-e2e
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
YAML
dep bad 4 1 badami | $K apply --validate=false -f - >/dev/null
sleep 15
c=$(cond badami AMIsReady)
echo "  AMIsReady: $c"
check "AMIsReady False, AMINotFound" sh -c "echo '$c' | grep -q '^False AMINotFound AMISelector did not match any AMIs'"
bad_claims=$($K get nodeclaims -l karpenter.sh/nodepool=badami --no-headers 2>/dev/null | wc -l)
check "no NodeClaim for the pool ($bad_claims), no CreateFleet ($(actions CreateFleet))" \
  test "$bad_claims" = 0 -a "$(actions CreateFleet)" = 0
pending=$($K get pods -l app=bad --no-headers | grep -c Pending || true)
check "its pods wait ($pending Pending)" test "$pending" = 4

echo "--- D. a NodePool at its limit"
cat <<'YAML' | $K apply --validate=false -f - >/dev/null
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: limited}
spec:
  template:
    metadata: {labels: {team: limited}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  limits: {cpu: "8"}
YAML
e2e_proxy reset
dep lim 12 1 limited | $K apply --validate=false -f - >/dev/null
sleep 15
cpu_lim=$($K get nodeclaims -l karpenter.sh/nodepool=limited -o json | /usr/bin/python3 -c '
import json, sys
tot = 0
for c in json.load(sys.stdin)["items"]:
    v = c.get("status", {}).get("capacity", {}).get("cpu") or c["spec"].get("resources", {}).get("requests", {}).get("cpu", "0")
    tot += float(v[:-1]) / 1000 if v.endswith("m") else float(v)
print(tot)')
nodes_lim=$($K get nodes -l karpenter.sh/nodepool=limited -o json | /usr/bin/python3 -c '
import json, sys
print(sum(float(n["status"]["capacity"]["cpu"]) for n in json.load(sys.stdin)["items"]))')
cf1=$(actions CreateFleet)
claims1=$($K get nodeclaims -l karpenter.sh/nodepool=limited --no-headers | wc -l)
running=$($K get pods -l app=lim --no-headers | grep -c Running || true)
echo "  limited pool: $claims1 NodeClaims, nodes with $nodes_lim vCPUs; $running of 12 pods Running; $cf1 CreateFleet"
check "bought up to the limit, not past it ($nodes_lim vCPUs <= 8)" \
  /usr/bin/python3 -c "import sys; sys.exit(0 if 0 < $nodes_lim <= 8 else 1)"
told=$($K get events -A -o json | /usr/bin/python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["items"] if e["reason"] == "FailedScheduling"
          and e["involvedObject"]["name"].startswith("lim-") and "limit" in e.get("message", "")))')
check "the pods left over are told the limit is reached ($told Events)" test "$told" -ge 1
sleep 20
cf2=$(actions CreateFleet)
claims2=$($K get nodeclaims -l karpenter.sh/nodepool=limited --no-headers | wc -l)
echo "  20 s later: $claims2 NodeClaims, $cf2 CreateFleet in all (batches every 5 s meanwhile)"
check "no further launch at the limit ($cf1 -> $cf2 CreateFleet, $claims1 -> $claims2 claims)" \
  test "$cf1" = "$cf2" -a "$claims1" = "$claims2"
check "the launcher never restarted" sh -c "kill -0 $LAUNCHER_PID"
e2e_finish
