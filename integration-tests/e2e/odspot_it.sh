#!/usr/bin/env bash
# odspot_it.sh BUILD_DIR - AWS karpenter-blueprints' on-demand/spot split
# (blueprints/od-spot-split), end to end on kubesim + moto: two NodePools
# with disjoint values of a label only they define (capacity-spread: "1"
# on-demand, "2".."5" spot), both tainted, and a Deployment of 10 replicas
# spread over capacity-spread with maxSkew 1.
#   1. tailor's plan for it (tailorctl solve, the engine the solver runs)
#      is the blueprint's 20/80: 2 pods on on-demand, 8 on spot, 2 per
#      capacity-spread value;
#   2. live, every pod runs, on nodes launched for every capacity-spread
#      value, each node carrying its pool's capacity type and one of its
#      values (the label the kubelet got from its user data); nothing
#      leaks.  Which node each pod lands on is the scheduler's choice as
#      nodes register one by one (a domain without a node yet does not
#      count for skew, in kube-scheduler as in kubesim), so the live split
#      is reported, not asserted.
# The manifests are written here after the blueprint's shape, not copied.
set -euo pipefail
BUILD=$(cd "${1:?usage: odspot_it.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib_e2e.sh"
e2e_up
e2e_start_solver
e2e_start_watcher --batch-idle 1s
e2e_start_launcher --catalog-source file

pool() {   # NAME CAPACITY-TYPE SPREAD-VALUES
  cat <<YAML
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: apps}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: capacity-spread, operator: In, values: [$3]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [$2]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
      taints: [{key: intent, value: workload-split, effect: NoSchedule}]
YAML
}
{
  pool split-od on-demand '"1"'
  pool split-spot spot '"2", "3", "4", "5"'
  it_nodeclass KarpenterNodeRole-e2e
  cat <<'YAML'
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: split, namespace: default}
spec:
  replicas: 10
  selector: {matchLabels: {app: split}}
  template:
    metadata: {labels: {app: split}}
    spec:
      nodeSelector: {intent: apps}
      tolerations: [{key: intent, operator: Equal, value: workload-split, effect: NoSchedule}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: capacity-spread, whenUnsatisfiable: DoNotSchedule,
         labelSelector: {matchLabels: {app: split}}}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 512m, memory: 512Mi}}}
YAML
} >"$STATE_DIR/odspot.yaml"
"$BUILD/tools/tailorctl" solve --pods "$STATE_DIR/odspot.yaml" --nodepools "$STATE_DIR/odspot.yaml" \
  --catalog "$CATALOG" --spot-discount 0.6 -o json >"$STATE_DIR/plan.json"
plan=$(/usr/bin/python3 - "$STATE_DIR/plan.json" <<'PY'
import json, sys, collections
p = json.load(open(sys.argv[1]))
ct, spread = collections.Counter(), collections.Counter()
for c in p["nodeclaims"]:
    n = len(c["pods"])
    ct[c["capacity_type"]] += n
    spread[c["labels"].get("capacity-spread", "?")] += n
print(ct["on-demand"], ct["spot"], ",".join("%s=%d" % kv for kv in sorted(spread.items())))
PY
)
read -r pod pspot pper <<<"$plan"
echo "  plan: on-demand $pod, spot $pspot; per capacity-spread value: $pper"
check "the plan: 2 pods on on-demand nodes, 8 on spot (the blueprint's 20/80)" test "$pod $pspot" = "2 8"
check "the plan: 2 pods per capacity-spread value" test "$pper" = "1=2,2=2,3=2,4=2,5=2"

$K apply --validate=false -f "$STATE_DIR/odspot.yaml" >/dev/null
check "all 10 pods Running" e2e_wait_running 10 90
e2e_settle 30
$K get pods,nodes -A -o json >"$STATE_DIR/split.json"
split=$(/usr/bin/python3 - "$STATE_DIR/split.json" <<'PY'
import json, sys, collections
items = json.load(open(sys.argv[1]))["items"]
nodes = {o["metadata"]["name"]: o["metadata"].get("labels", {}) for o in items if o["kind"] == "Node"}
ct, spread = collections.Counter(), collections.Counter()
for o in items:
    if o["kind"] != "Pod" or o["status"].get("phase") != "Running":
        continue
    labels = nodes.get(o["spec"].get("nodeName", ""), {})
    ct[labels.get("karpenter.sh/capacity-type", "?")] += 1
    spread[labels.get("capacity-spread", "?")] += 1
bad = sorted(n for n, l in nodes.items()
             if (l.get("karpenter.sh/capacity-type"), l.get("capacity-spread")) not in
             [("on-demand", "1")] + [("spot", v) for v in "2345"])
values = ",".join(sorted({l.get("capacity-spread", "?") for l in nodes.values()}))
print(ct["on-demand"], ct["spot"], ",".join("%s=%d" % kv for kv in sorted(spread.items())),
      ",".join(bad) or "-", values)
PY
)
read -r od spot per bad values <<<"$split"
echo "  live: on-demand $od, spot $spot; per capacity-spread value: $per; nodes off their pool's labels: $bad"
check "nodes launched for every capacity-spread value ($values)" test "$values" = "1,2,3,4,5"
check "every node carries its pool's capacity type and a capacity-spread value of it" test "$bad" = "-"
check "instances = NodeClaims = Nodes, none leaked" \
  test "$(e2e_fig instances)" = "$(e2e_fig claims)" -a "$(e2e_fig claims)" = "$(e2e_fig nodes)" \
  -a "$(e2e_fig leaked)" = "[]"
e2e_finish
