#!/usr/bin/env bash
# kubelet_it.sh KUBESIM - the kubelet simulator end to end on moto:
# scripts/local-cluster.sh up (moto with SigV4 enforced + kubesim), then
#   - two instances launched in moto with the cluster tag and a nodeadm
#     NodeConfig in their user data (written by hand here, never by
#     tailor's code: the simulator's tests do not depend on the product)
#     become Ready Nodes with the right providerID, instance type, zone and
#     the NodeConfig's --node-labels;
#   - an untagged instance does not; neither does a tagged one whose
#     NodeConfig names another API server, nor one without user data (the
#     kubelet logs why, once);
#   - a pending pod that fits is bound to one of them (when this kubesim
#     runs a scheduler);
#   - terminating an instance removes its Node, the other stays.
# Exit 77 (skipped) without moto; fails when this kubesim has no kubelet
# simulator.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/integration-tests/lib.sh"
kubesim=${1:?usage: kubelet_it.sh KUBESIM}

if ! "$kubesim" --help 2>&1 | grep -q -- '--aws-endpoint'; then
  echo "FAIL: $kubesim has no kubelet simulator (ks_kubelet_module missing from main.c)"
  exit 1
fi
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || KUBECTL=kubectl

export STATE_DIR
STATE_DIR=$(mktemp -d /tmp/kubelet_it.XXXXXX)
export KUBESIM_BIN=$kubesim CLUSTER_NAME=kubelet-it BOOT_DELAY=1s
cleanup() {
  "$repo/scripts/local-cluster.sh" down || true
  rm -rf "$STATE_DIR"
}
trap cleanup EXIT

rc=0
"$repo/scripts/local-cluster.sh" up >"$STATE_DIR/up.out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$STATE_DIR/up.out"
  if grep -q "no python3 with moto" "$STATE_DIR/up.out"; then echo "SKIP: no moto"; exit 77; fi
  exit 1
fi
eval "$("$repo/scripts/local-cluster.sh" env)"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# EC2 calls with Debian's botocore, signed with the key local-cluster made.
ec2() {
  /usr/bin/python3 - "$@" <<'EOF'
import os, sys
import botocore.session
ec2 = botocore.session.get_session().create_client(
    "ec2", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
op = sys.argv[1]

def kubeconfig(field):   # the one cluster's server / certificate-authority-data
    for line in open(os.environ["KUBECONFIG"]):
        k, _, v = line.strip().partition(": ")
        if k == field:
            return v
    raise SystemExit("no %s in kubeconfig" % field)

def nodeconfig(server):   # what a node needs to join, in nodeadm's format
    return ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n"
            "--//\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho kubelet-it\n"
            "--//\nContent-Type: application/node.eks.aws\n\n"
            "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n"
            "    name: %s\n    apiServerEndpoint: %s\n    certificateAuthority: %s\n"
            "    cidr: 10.100.0.0/16\n  kubelet:\n    flags:\n"
            "    - --node-labels=karpenter.sh/nodepool=default\n--//--\n"
            % (os.environ["TAILOR_CLUSTER_NAME"], server,
               kubeconfig("certificate-authority-data")))

if op == "run":   # run COUNT TYPE [tagged|wrong-endpoint|no-user-data]
    # A Linux x86_64 image: moto's first one is Windows, and a Windows node
    # never joins (the simulator refuses it, as it does not simulate one).
    img = [i for i in ec2.describe_images(Owners=["amazon"])["Images"]
           if i.get("Architecture") == "x86_64" and i.get("Platform") != "windows"
           and "windows" not in i.get("Name", "").lower()][0]["ImageId"]
    how = sys.argv[4] if len(sys.argv) > 4 else ""
    tags = [{"Key": "kubernetes.io/cluster/" + os.environ["TAILOR_CLUSTER_NAME"], "Value": "owned"},
            {"Key": "karpenter.sh/nodepool", "Value": "default"}] if how else \
           [{"Key": "Name", "Value": "not-ours"}]
    kw = {}
    if how == "tagged":
        kw["UserData"] = nodeconfig(kubeconfig("server"))
    elif how == "wrong-endpoint":
        kw["UserData"] = nodeconfig("https://ABCDEF.gr7.us-east-1.eks.amazonaws.com")
    r = ec2.run_instances(ImageId=img, InstanceType=sys.argv[3], MinCount=int(sys.argv[2]),
                          MaxCount=int(sys.argv[2]),
                          TagSpecifications=[{"ResourceType": "instance", "Tags": tags}], **kw)
    print(" ".join(i["InstanceId"] for i in r["Instances"]))
elif op == "terminate":
    ec2.terminate_instances(InstanceIds=sys.argv[2:])
EOF
}

wait_nodes() {   # COUNT SECONDS: wait until exactly COUNT Ready nodes
  local want=$1 secs=$2 i n
  for ((i = 0; i < secs * 5; i++)); do
    n=$(k get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l)
    [ "$n" -eq "$want" ] && return 0
    sleep 0.2
  done
  echo "  nodes now:"; k get nodes || true
  return 1
}

ids=$(ec2 run 2 m5.large tagged)
read -r id1 id2 <<<"$ids"
other=$(ec2 run 1 t3.micro)
wrong=$(ec2 run 1 m5.large wrong-endpoint)
bare=$(ec2 run 1 m5.large no-user-data)
check "two tagged instances become Ready nodes" wait_nodes 2 20
provider_ids() { k get nodes -o jsonpath='{.items[*].spec.providerID}' | tr ' ' '\n'; }
has_provider_id() { provider_ids | grep -qx "aws:///us-east-1[a-f]/$1"; }
labelled_nodes() { [ "$(k get nodes -l "$1" --no-headers | wc -l)" -eq "$2" ]; }
capacity_is() {
  [ "$(k get node "$1" -o jsonpath='{.status.capacity.cpu}/{.status.capacity.pods}')" = "$2" ]
}
no_node_for() { ! provider_ids | grep -q "$1"; }
first_node() { k get nodes -o jsonpath='{.items[0].metadata.name}'; }

check "providerID is aws:///ZONE/ID" has_provider_id "$id1"
check "instance type and nodepool labels" \
  labelled_nodes node.kubernetes.io/instance-type=m5.large,karpenter.sh/nodepool=default 2
check "capacity: 2 cpu, 29 pods (m5.large, ENI max pods)" capacity_is "$(first_node)" 2/29
check "kubectl wait for Ready" k wait --for=condition=Ready node --all --timeout=10s
check "the untagged instance ($other) has no node" no_node_for "$other"
check "the instance told another API server ($wrong) has no node" no_node_for "$wrong"
check "the instance without user data ($bare) has no node" no_node_for "$bare"
logged_once() {   # ID REASON: one warning, a few polls after it booted
  local i
  for ((i = 0; i < 50; i++)); do
    grep -q "never joins.*$1.*$2" "$STATE_DIR/kubesim.log" && break
    sleep 0.2
  done
  sleep 2   # more passes: still one line
  [ "$(grep -c "never joins.*$1.*$2" "$STATE_DIR/kubesim.log")" -eq 1 ]
}
check "the kubelet says once why $wrong never joins" logged_once "$wrong" "is not this cluster's"
check "the kubelet says once why $bare never joins" logged_once "$bare" "no bootstrap in user data"

# A Deployment's pod lands on a simulated node; when that node's instance
# terminates the Node goes, and the pod is recreated and bound again to the
# node that is left; when no node is left the replacement stays Pending,
# marked Unschedulable -- what tailor's watcher looks for.
k apply --validate=false -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
EOF
web_pod() {   # prints "NAME NODE" of the web pod (NODE empty when pending)
  k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' \
    2>/dev/null | head -n 1 || true
}
bound_pod() {   # wait until a web pod is bound; sets POD and NODE
  local i line
  for ((i = 0; i < 75; i++)); do
    line=$(web_pod)
    POD='' NODE=''
    read -r POD NODE <<<"$line" || true
    [ -n "${NODE:-}" ] && return 0
    sleep 0.2
  done
  k get pods -o wide || true
  return 1
}
instance_of() { k get node "$1" -o jsonpath='{.metadata.labels.kubesim\.tailor\.dev/instance-id}'; }
check "a pending pod that fits is bound to a simulated node" bound_pod
first_pod=$POD
first_node=$NODE
first_id=$(instance_of "$first_node")
if [ "$first_id" = "$id1" ]; then second_id=$id2; else second_id=$id1; fi

ec2 terminate "$first_id"
gone() {
  local i
  for ((i = 0; i < 50; i++)); do
    no_node_for "$1" && return 0
    sleep 0.2
  done
  return 1
}
check "terminating an instance removes its node" gone "$first_id"
check "the other instance keeps its node" has_provider_id "$second_id"
check "the other node stays" wait_nodes 1 5
rebound() { bound_pod && [ "$POD" != "$first_pod" ] && [ "$NODE" != "$first_node" ]; }
check "the pod is recreated and bound to the remaining node" rebound

ec2 terminate "$second_id"
check "terminating the last instance removes its node" gone "$second_id"
unschedulable() {
  local i got=''
  for ((i = 0; i < 75; i++)); do
    got=$(k get pods -l app=web \
      -o jsonpath='{.items[0].spec.nodeName}|{.items[0].status.conditions[?(@.type=="PodScheduled")].reason}' \
      2>/dev/null || true)
    [ "$got" = "|Unschedulable" ] && return 0
    sleep 0.2
  done
  echo "  got: $got"
  return 1
}
check "with no node left the replacement pod is Pending and Unschedulable" unschedulable
no_errors() { ! grep -q '"level":"error"' "$STATE_DIR/kubesim.log"; }
check "kubesim log has no errors" no_errors
finish
