#!/usr/bin/env bash
# interruption_it.sh BUILD_DIR - explain, then a spot interruption from
# SQS, on kubesim + moto with the four services.
#
#   A. `tailorctl explain node` on a node whose pods a maxUnavailable: 0
#      PDB guards and one of which carries karpenter.sh/do-not-disrupt:
#      exit 3, and the blockers name the PDB and the pod;
#   B. an "EC2 Spot Instance Interruption Warning" for the node running the
#      only pod of a one-replica Deployment is put in the queue (moto SQS,
#      the EventBridge event format): the node is tainted, a replacement is
#      launched first (every other node is full), the node is drained (the single-replica pod moved
#      by a rolling restart, never at zero Ready) and terminated, all
#      before the two-minute deadline; the message is deleted, nothing
#      is leaked and no node stays tainted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:?usage: interruption_it.sh BUILD_DIR}
export KUBESIM_POD_START_DELAY=1s
export DS_ARGS="--interruption-queue tailor-it-interrupt --interruption-interval 500ms"
trap ds_down EXIT
ds_up "$build" || { echo "FAIL: stack did not start"; exit 1; }
sqs() {   # python statements over `q` (the queue URL) and `sqs`
  /usr/bin/python3 - "$1" <<'PY'
import json, os, sys, time, botocore.session
sqs = botocore.session.get_session().create_client(
    "sqs", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
q = sqs.create_queue(QueueName="tailor-it-interrupt")["QueueUrl"]
exec(sys.argv[1])
PY
}
sqs "pass"

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
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, m5.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 5s}
YAML
  it_nodeclass
  it_deployment web 3 1000m 512Mi "      terminationGracePeriodSeconds: 5"
  it_pdb web maxUnavailable 0
  cat <<'YAML'
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: solo, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: solo}}
  template:
    metadata:
      labels: {app: solo}
      annotations: {karpenter.sh/do-not-disrupt: "true"}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - {name: c, image: nginx, resources: {requests: {cpu: 1000m, memory: 512Mi}}}
YAML
} >"$STATE_DIR/m.yaml"
k apply --validate=false -f "$STATE_DIR/m.yaml" >/dev/null
running() { test "$(k get pods --no-headers 2>/dev/null | grep -c ' Running ')" = "$1"; }
check "4 pods Running" wait_until 120 running 4
solo_pod=$(k get pods -l app=solo -o jsonpath='{.items[0].metadata.name}')
node=$(k get pod "$solo_pod" -o jsonpath='{.spec.nodeName}')
claim=$(k get nodeclaims -o json | json_get /dev/stdin "' '.join(i['metadata']['name'] for i in d['items'] if i.get('status', {}).get('nodeName') == '$node')")
inst=$(k get node "$node" -o jsonpath='{.spec.providerID}' | sed 's|.*/||')
echo "  solo runs on $node ($claim, $inst)"

echo "--- A. explain"
set +e
$(tls_as tailorctl) "$build/tools/tailorctl" explain node "$node" --disruptor "tls+tcp://127.0.0.1:$d_rep" >"$STATE_DIR/explain.txt"
rc=$?
$(tls_as tailorctl) "$build/tools/tailorctl" explain node "$node" --disruptor "tls+tcp://127.0.0.1:$d_rep" --output json >"$STATE_DIR/explain.json"
set -e
sed 's/^/  /' "$STATE_DIR/explain.txt" | head -n 12 || true
check "explain exits 3: the node is blocked (got $rc)" test "$rc" = 3
check "explain names the do-not-disrupt pod" \
  test "$(json_get "$STATE_DIR/explain.json" "any(b['kind'] == 'DO_NOT_DISRUPT' and b['object']['name'] == '$solo_pod' for b in d['blockers'])")" = True
web_on=$(k get pods -l app=web --field-selector "spec.nodeName=$node" --no-headers | grep -c . || true)
if [ "$web_on" -gt 0 ]; then
  check "explain names the PDB" \
    test "$(json_get "$STATE_DIR/explain.json" "any(b['kind'] == 'PDB' and b['object']['name'] == 'web-pdb' for b in d['blockers'])")" = True
fi
check "explain says the pool consolidates only empty nodes" \
  test "$(json_get "$STATE_DIR/explain.json" "any(b['kind'] == 'CONSOLIDATION_POLICY' for b in d['blockers'])")" = True
k delete pdb web-pdb >/dev/null
# B is about the interruption: take the annotation off (a rollout) and find
# where solo runs now
k patch deployment solo --type=json \
  -p '[{"op":"remove","path":"/spec/template/metadata/annotations/karpenter.sh~1do-not-disrupt"}]' >/dev/null
rolled() { k get pods -l app=solo -o json | json_get /dev/stdin "sum(1 for p in d['items'] if 'karpenter.sh/do-not-disrupt' not in (p['metadata'].get('annotations') or {}) and any(c['type'] == 'Ready' and c['status'] == 'True' for c in p['status'].get('conditions', []))) == 1 and len(d['items']) == 1" | grep -q True; }
check "solo rolled without the annotation" wait_until 60 rolled
# one pod per node, none empty (emptiness removes the node solo left): the
# interrupted node's pod then has nowhere to go but a replacement
four() { test "$(k get nodes --no-headers | grep -c .)" = 4; }
check "four nodes, one pod each" wait_until 60 four
solo_pod=$(k get pods -l app=solo -o jsonpath='{.items[0].metadata.name}')
node=$(k get pod "$solo_pod" -o jsonpath='{.spec.nodeName}')
claim=$(k get nodeclaims -o json | json_get /dev/stdin "' '.join(i['metadata']['name'] for i in d['items'] if i.get('status', {}).get('nodeName') == '$node')")
inst=$(k get node "$node" -o jsonpath='{.spec.providerID}' | sed 's|.*/||')
echo "  solo now runs on $node ($claim, $inst)"

echo "--- B. spot interruption"
ds_watch_start "$STATE_DIR/watch.json"
sleep 2
claims_before=$(k get nodeclaims -o name | sort)
launches_before=$(grep -c '"msg":"launched nodeclaim"' "$STATE_DIR/launcher.log" || true)
t0=$(date +%s)
sqs "
ev = {'version': '0', 'id': 'it-1', 'detail-type': 'EC2 Spot Instance Interruption Warning',
      'source': 'aws.ec2', 'account': '123456789012',
      'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'region': os.environ['AWS_REGION'],
      'resources': ['arn:aws:ec2:us-east-1:123456789012:instance/$inst'],
      'detail': {'instance-id': '$inst', 'instance-action': 'terminate'}}
sqs.send_message(QueueUrl=q, MessageBody=json.dumps(ev))
"
tainted() { k get node "$node" -o jsonpath='{.spec.taints[*].key}' 2>/dev/null | grep -q karpenter.sh/disrupted; }
check "the node is tainted (cordoned)" wait_until 15 tainted
new_claim() { [ -n "$(comm -13 <(echo "$claims_before") <(k get nodeclaims -o name | sort))" ]; }
check "a replacement NodeClaim was launched" wait_until 15 new_claim
gone() { ! k get nodeclaim "$claim" >/dev/null 2>&1; }
check "the interrupted NodeClaim is gone before the 2-minute deadline" wait_until 110 gone
t1=$(date +%s)
echo "  drained and terminated in $((t1 - t0)) s"
check "... in under 120 s" test $((t1 - t0)) -lt 120
check "its instance is not running" \
  bash -c "! /usr/bin/python3 -c \"import os,botocore.session; e=botocore.session.get_session().create_client('ec2',region_name=os.environ['AWS_REGION'],endpoint_url=os.environ['AWS_ENDPOINT_URL']); s=e.describe_instances(InstanceIds=['$inst'])['Reservations'][0]['Instances'][0]['State']['Name']; exit(0 if s in ('pending','running') else 1)\""
check "all 4 pods Running" wait_until 60 running 4
sleep 2
ds_watch_stop
outs=$(json_get "$STATE_DIR/watch.json" "d['n_single_replica_outages']")
check "solo was never without a Ready pod ($outs outages)" test "$outs" = 0
check "the launch is recorded as for the interruption" \
  grep -q '"msg":"interruption: replacement launched","node":"'"$node"'"' "$STATE_DIR/disruptor.log"
check "a SpotInterrupted Event on the node" \
  bash -c "'$KUBECTL' --kubeconfig '$KUBECONFIG' get events -A -o json | grep -q SpotInterrupted"
left=$(sqs "a = sqs.get_queue_attributes(QueueUrl=q, AttributeNames=['All'])['Attributes']; print(int(a['ApproximateNumberOfMessages']) + int(a['ApproximateNumberOfMessagesNotVisible']))")
check "the message was deleted from the queue ($left left)" test "$left" = 0
same() { test "$(ec2_live)" = "$(k get nodeclaims --no-headers | grep -c .)"; }
check "EC2 runs one instance per NodeClaim" wait_until 30 same
# solo's rolling restart waits for the replacement to be Ready, so its new
# pod lands there instead of going pending and buying a second node
launches=$(( $(grep -c '"msg":"launched nodeclaim"' "$STATE_DIR/launcher.log" || true) - launches_before ))
check "one node launched for the interruption, none for solo's restart ($launches)" test "$launches" = 1
check "no node left tainted or cordoned" wait_until 30 ds_no_disrupted_node
if [ "$FAILED" != 0 ]; then
  echo "--- disruptor log (tail)"; grep -v '"level":"debug"' "$STATE_DIR/disruptor.log" | tail -n 30 | cut -c1-400
  KEEP_STATE=1
fi
finish
