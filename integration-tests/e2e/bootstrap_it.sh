#!/usr/bin/env bash
# bootstrap_it.sh BUILD_DIR - nodes join only through the bootstrap tailor
# writes, as on EKS.  kubesim's kubelet simulator builds each Node from the
# instance's user data, AMI name and type alone, and refuses what a real
# node would (another endpoint or CA, no bootstrap); moto holds the public
# EKS AMIs and SSM parameters (scripts/moto-server.py).
#
#   1. Karpenter v1's getting-started NodePool + EC2NodeClass (al2023@latest,
#      no userData), a tainted pool with template labels and a startup
#      taint, a Bottlerocket class (bottlerocket@latest), a class whose
#      userData is a MIME document with a shell part and a partial
#      NodeConfig, a class with kubelet {maxPods: 5, systemReserved: {cpu:
#      "1"}} on m5.xlarge, and a GPU pool: pods Pending -> NodeClaims
#      Launched/Registered/Initialized -> pods Running, each node with its
#      pool's labels and taints, no karpenter.sh/unregistered taint, the
#      AMI of its family and variant, the allocatable its kubelet settings
#      leave (equal to its NodeClaim's status.allocatable);
#   2. the launcher restarted with a wrong --cluster-endpoint and a short
#      --registration-ttl: the new instance never registers (kubesim says
#      why), its NodeClaim is deleted at the timeout, the instance
#      terminated, and a RegistrationTimeout Event says why.
set -euo pipefail
BUILD=$(cd "${1:?usage: bootstrap_it.sh BUILD_DIR}" && pwd)
export CLUSTER_NAME=boot-it DISCOVERY_TAG=boot-it BOOT_DELAY=1s
. "$(dirname "$0")/lib_e2e.sh"
e2e_up
e2e_start_solver
e2e_start_watcher --batch-idle 1s --batch-max 5s
e2e_start_launcher --catalog-source file --no-spot

# --- 1. the manifests, as a user writes them ---------------------------------
cat >"$STATE_DIR/m.yaml" <<YAML
# Karpenter v1 getting started (karpenter.sh docs), unchanged but for the names.
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
        - key: kubernetes.io/os
          operator: In
          values: ["linux"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: ["2"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      expireAfter: 720h
  limits:
    cpu: 1000
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: "KarpenterNodeRole-$CLUSTER_NAME"
  amiSelectorTerms:
    - alias: "al2023@latest"
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "$CLUSTER_NAME"
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "$CLUSTER_NAME"
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: tainted}
spec:
  template:
    metadata:
      labels: {team: payments, tailor.dev/tier: gold}
      annotations: {example.com/owner: payments}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      taints: [{key: dedicated, value: payments, effect: NoSchedule}]
      startupTaints: [{key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}]
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: bottlerocket}
spec:
  role: "KarpenterNodeRole-$CLUSTER_NAME"
  amiSelectorTerms: [{alias: bottlerocket@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "$CLUSTER_NAME"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "$CLUSTER_NAME"}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: br}
spec:
  template:
    metadata: {labels: {os-image: bottlerocket}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: bottlerocket}
      taints: [{key: br, effect: NoSchedule}]
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: userdata}
spec:
  role: "KarpenterNodeRole-$CLUSTER_NAME"
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "$CLUSTER_NAME"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "$CLUSTER_NAME"}}]
  userData: |
    MIME-Version: 1.0
    Content-Type: multipart/mixed; boundary="BOUNDARY"

    --BOUNDARY
    Content-Type: text/x-shellscript; charset="us-ascii"

    #!/bin/bash
    echo user-shell-part-ran > /etc/tailor-it-marker
    --BOUNDARY
    Content-Type: application/node.eks.aws

    apiVersion: node.eks.aws/v1alpha1
    kind: NodeConfig
    spec:
      kubelet:
        flags:
          - --node-labels=tailor.dev/from-user-nodeconfig=yes
    --BOUNDARY--
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ud}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: userdata}
      taints: [{key: ud, effect: NoSchedule}]
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: small}
spec:
  role: "KarpenterNodeRole-$CLUSTER_NAME"
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "$CLUSTER_NAME"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "$CLUSTER_NAME"}}]
  kubelet: {maxPods: 5, systemReserved: {cpu: "1"}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: small}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: small}
      taints: [{key: small, effect: NoSchedule}]
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
      requirements:
      - {key: karpenter.k8s.aws/instance-gpu-manufacturer, operator: In, values: [nvidia]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g4dn, g5]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
YAML
dep() {   # NAME REPLICAS CPU [TOLERATION-KEY [NODESELECTOR-YAML [EXTRA-RESOURCES-YAML]]]
  local sel="" tol="" ext="" lim=""
  [ -n "${5:-}" ] && sel="nodeSelector: $5"
  [ -n "${4:-}" ] && tol="tolerations: [{key: $4, operator: Exists}]"
  [ -n "${6:-}" ] && { ext=", $6"; lim=", limits: {$6}"; }
  cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: default}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      $sel
      $tol
      containers:
      - name: c
        image: app
        resources: {requests: {cpu: "$3", memory: 256Mi$ext}$lim}
YAML
}
{
  dep plain 4 500m
  dep payments 2 250m dedicated "{team: payments}"
  dep br 2 250m br "{karpenter.sh/nodepool: br}"
  dep ud 1 250m ud "{karpenter.sh/nodepool: ud}"
  dep small 12 100m small "{karpenter.sh/nodepool: small}"
  dep gpu 1 500m nvidia.com/gpu "{karpenter.sh/nodepool: gpu}" "nvidia.com/gpu: 1"
} >>"$STATE_DIR/m.yaml"
$K apply --validate=false -f "$STATE_DIR/m.yaml" >/dev/null
PODS=22
check "every pod Running (pods Pending -> nodes joined through their bootstrap)" \
  e2e_wait_running "$PODS" 150
# A NodeClaim is Initialized a moment after its pods run (the lifecycle pass).
sleep 2
$K get pods,nodes,nodeclaims,events -A -o json >"$STATE_DIR/state.json"
AWS="$STATE_DIR/aws.json"
/usr/bin/python3 - "$AWS" <<'PY'
import json, os, sys, botocore.session
s = botocore.session.get_session()
ec2 = s.create_client("ec2", region_name=os.environ["AWS_REGION"],
                      endpoint_url=os.environ["AWS_ENDPOINT_URL"])
out = {}
for r in ec2.describe_instances()["Reservations"]:
    for i in r["Instances"]:
        out[i["InstanceId"]] = {"state": i["State"]["Name"], "image": i["ImageId"]}
imgs = {im["ImageId"]: im.get("Name", "") for im in
        ec2.describe_images(ImageIds=sorted({v["image"] for v in out.values()}))["Images"]}
for v in out.values():
    v["image_name"] = imgs.get(v["image"], "")
json.dump(out, open(sys.argv[1], "w"))
PY
q() {   # q PYTHON-EXPRESSION-THAT-MUST-BE-TRUE (st: state, aws: instances, node(pool), claim(pool))
  /usr/bin/python3 - "$STATE_DIR/state.json" "$AWS" "$1" <<'PY'
import json, sys
st = json.load(open(sys.argv[1])); aws = json.load(open(sys.argv[2]))
items = st["items"]
nodes = [o for o in items if o["kind"] == "Node"]
claims = [o for o in items if o["kind"] == "NodeClaim"]
events = [o for o in items if o["kind"] == "Event"]
def pool_nodes(p): return [n for n in nodes if n["metadata"]["labels"].get("karpenter.sh/nodepool") == p]
def pool_claims(p): return [c for c in claims if c["metadata"]["labels"].get("karpenter.sh/nodepool") == p]
def taints(n): return {(t["key"], t.get("value", ""), t["effect"]) for t in n["spec"].get("taints", [])}
def cond(c, t): return any(k["type"] == t and k["status"] == "True" for k in c.get("status", {}).get("conditions", []))
def inst(n): return aws[n["spec"]["providerID"].rsplit("/", 1)[1]]
def qty(v):   # a Kubernetes quantity as a number (bytes, cores, count)
    v = str(v)
    for suf, mul in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40), ("m", 1e-3),
                     ("k", 1e3), ("M", 1e6), ("G", 1e9)):
        if v.endswith(suf):
            return float(v[:-len(suf)]) * mul
    return float(v)
def same_alloc(c, n, rs=("cpu", "memory", "pods", "ephemeral-storage")):
    a, b = c["status"].get("allocatable", {}), n["status"]["allocatable"]
    return all(r in a and r in b and abs(qty(a[r]) - qty(b[r])) < 1 for r in rs)
def claim_of(n): return [c for c in claims if c["status"].get("nodeName") == n["metadata"]["name"]]
ok = eval(sys.argv[3])
if not ok:
    print("  failed:", sys.argv[3])
sys.exit(0 if ok else 1)
PY
}
check "every NodeClaim Launched, Registered and Initialized" \
  q 'claims and all(cond(c, "Launched") and cond(c, "Registered") and cond(c, "Initialized") for c in claims)'
check "instances = NodeClaims = Nodes" \
  q 'len([i for i in aws.values() if i["state"] == "running"]) == len(claims) == len(nodes)'
check "no node keeps karpenter.sh/unregistered; every node labelled registered + initialized" \
  q 'all(not any(t[0] == "karpenter.sh/unregistered" for t in taints(n)) and n["metadata"]["labels"].get("karpenter.sh/registered") == "true" and n["metadata"]["labels"].get("karpenter.sh/initialized") == "true" for n in nodes)'
check "getting-started nodes: al2023 standard AMI, the instance's labels synced from the NodeClaim" \
  q 'pool_nodes("default") and all("al2023-x86_64-standard" in inst(n)["image_name"] and n["metadata"]["labels"].get("karpenter.k8s.aws/instance-category") in ("c", "m", "r") and n["metadata"]["labels"].get("karpenter.sh/capacity-type") == "on-demand" for n in pool_nodes("default"))'
check "tainted pool: template labels, annotation and taint on the Node; the startup taint gone" \
  q 'pool_nodes("tainted") and all(n["metadata"]["labels"].get("team") == "payments" and n["metadata"]["labels"].get("tailor.dev/tier") == "gold" and n["metadata"].get("annotations", {}).get("example.com/owner") == "payments" and ("dedicated", "payments", "NoSchedule") in taints(n) and not any(t[0] == "node.cilium.io/agent-not-ready" for t in taints(n)) for n in pool_nodes("tainted"))'
check "Bottlerocket nodes boot the Bottlerocket AMI and carry their pool's label and taint" \
  q 'pool_nodes("br") and all(inst(n)["image_name"].startswith("bottlerocket-aws-k8s-") and "-nvidia-" not in inst(n)["image_name"] and n["metadata"]["labels"].get("os-image") == "bottlerocket" and ("br", "", "NoSchedule") in taints(n) for n in pool_nodes("br"))'
check "user userData merged: the node has the label of the user's partial NodeConfig" \
  q 'pool_nodes("ud") and all(n["metadata"]["labels"].get("tailor.dev/from-user-nodeconfig") == "yes" for n in pool_nodes("ud"))'
check "user userData merged: the node's agent ran the user's shell part and both NodeConfigs" \
  grep -q '"ran":"shell: echo user-shell-part-ran > /etc/tailor-it-marker; nodeadm: NodeConfig part 2; nodeadm: NodeConfig part 3"' "$STATE_DIR/kubesim.log"
# 3 nodes when the 12 pods come in one batch; a loaded machine may split
# them over two batch windows (say 6 + 6), and then 4 is the right answer.
check "kubelet maxPods 5: 12 pods on ceil(12/5) = 3 m5.xlarge nodes (4 if they came in two batches)" \
  q 'len(pool_nodes("small")) in (3, 4) and all(n["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "m5.xlarge" for n in pool_nodes("small"))'
# m5.xlarge: 4 vCPU - kube-reserved 80m - systemReserved 1 = 2920m; pods 5.
check "maxPods 5 + systemReserved cpu 1: each node reports pods 5, cpu 2920m" \
  q 'all(n["status"]["allocatable"]["pods"] == "5" and n["status"]["allocatable"]["cpu"] == "2920m" for n in pool_nodes("small"))'
check "every joined node reports the allocatable its NodeClaim planned (cpu, memory, pods, ephemeral-storage)" \
  q 'nodes and all(len(claim_of(n)) == 1 and same_alloc(claim_of(n)[0], n) for n in nodes)'
check "GPU pool: the NVIDIA AMI variant, nvidia.com/gpu advertised before Initialized" \
  q 'pool_nodes("gpu") and all("-nvidia-" in inst(n)["image_name"] and int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) >= 1 for n in pool_nodes("gpu"))'
check "EC2NodeClass status: instanceProfile from role, AMIs with variants" \
  sh -c "$K get ec2nodeclass default -o json | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)[\"status\"]
conds = {c[\"type\"]: c[\"status\"] for c in s[\"conditions\"]}
vs = [r for a in s[\"amis\"] for r in a.get(\"requirements\", []) if r[\"key\"] == \"karpenter.k8s.aws/instance-gpu-count\"]
ok = s[\"instanceProfile\"].startswith(\"boot-it_\") and conds.get(\"InstanceProfileReady\") == \"True\" and len(s[\"amis\"]) == 5 and {r[\"operator\"] for r in vs} == {\"Exists\", \"DoesNotExist\"}
sys.exit(0 if ok else 1)'"

# --- 2. a wrong endpoint: the instance never registers ------------------------
kill "$LAUNCHER_PID"; wait "$LAUNCHER_PID" 2>/dev/null || true
e2e_start_launcher --catalog-source file --no-spot \
  --cluster-endpoint https://127.0.0.1:9 --registration-ttl 15s
# 3 CPU: more than the pool's first node has left, so a new NodeClaim.
dep wrong 1 3 dedicated "{karpenter.sh/nodepool: tainted}" | $K apply --validate=false -f - >/dev/null
claim_of_wrong() {
  $K get nodeclaims -o json | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted(c["metadata"]["name"] for c in json.load(sys.stdin)["items"]
                      if not any(k["type"] == "Registered" and k["status"] == "True"
                                 for k in c.get("status", {}).get("conditions", [])))))'
}
wrong=""
for ((i = 0; i < 40; i++)); do wrong=$(claim_of_wrong); [ -n "$wrong" ] && break; sleep 1; done
check "the pod gets a NodeClaim that launches ($wrong)" test -n "$wrong"
check "kubesim: the instance never joins, its kubelet says the endpoint is not this cluster's" \
  wait_until 30 grep -q 'never joins.*127.0.0.1:9' "$STATE_DIR/kubesim.log"
gone() { ! $K get nodeclaim "$wrong" >/dev/null 2>&1; }
check "the NodeClaim is deleted at the registration timeout" wait_until 60 gone
check "a RegistrationTimeout Event names the instance and the endpoint" \
  sh -c "$K get events -A -o json | grep -q 'RegistrationTimeout' &&
         $K get events -A -o json | grep -q 'https://127.0.0.1:9'"
terminated() {
  /usr/bin/python3 - <<'PY'
import os, sys, botocore.session
ec2 = botocore.session.get_session().create_client(
    "ec2", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
st = [i["State"]["Name"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
      if any(t["Key"] == "karpenter.sh/nodepool" and t["Value"] == "tainted" for t in i.get("Tags", []))]
# The tainted pool's first node (Registered) runs; the wrong one is gone.
sys.exit(0 if st.count("running") == 1 and len(st) >= 2 else 1)
PY
}
check "its instance is terminated" wait_until 30 terminated
e2e_finish
