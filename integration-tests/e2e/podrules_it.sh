#!/usr/bin/env bash
# podrules_it.sh BUILD_DIR - pods written as real clusters still write
# them, on kubesim + moto, read as Karpenter reads them:
#   1. a Deployment selecting nodes by the deprecated aliases
#      (beta.kubernetes.io/os: linux, failure-domain.beta.kubernetes.io/zone)
#      runs, on nodes in that zone (Karpenter reads the aliases as the
#      stable keys; kubelets and cloud controllers set both);
#   2. pods Karpenter's provisioner ignores stay Pending without a node
#      launched for them: one pinned to a hostname gets a FailedScheduling
#      Event "ignoring pod, ...", one requiring karpenter.sh/nodepool
#      DoesNotExist (it avoids Karpenter's nodes on purpose) gets none;
#      karpenter_scheduler_ignored_pods_count says 2.
set -euo pipefail
BUILD=$(cd "${1:?usage: podrules_it.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib_e2e.sh"
e2e_up
e2e_start_solver
e2e_start_watcher --batch-idle 1s
e2e_start_launcher --catalog-source file --no-spot

cat >"$STATE_DIR/pods.yaml" <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
YAML
it_nodeclass KarpenterNodeRole-e2e >>"$STATE_DIR/pods.yaml"
cat >>"$STATE_DIR/pods.yaml" <<'YAML'
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: legacy, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: legacy}}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      nodeSelector: {beta.kubernetes.io/os: linux}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [us-east-1b]}
      containers:
      - {name: c, image: app, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: ip-10-9-9-9.ec2.internal}
  containers:
  - {name: c, image: app, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: default}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
  containers:
  - {name: c, image: app, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
$K apply --validate=false -f "$STATE_DIR/pods.yaml" >/dev/null
check "the 3 legacy pods Running" e2e_wait_running 3 60
ignored() {
  curl -fsS "http://127.0.0.1:$LAUNCHER_HTTP/metrics" |
    sed -n 's/^karpenter_scheduler_ignored_pods_count \([0-9.e+]*\)$/\1/p'
}
# Let a few more batches pass over the two pending pods.
for _ in $(seq 1 20); do [ "$(ignored)" = 2 ] && break; sleep 0.5; done
sleep 3
e2e_settle 20
$K get pods,nodes,events -A -o json >"$STATE_DIR/rules.json"
read -r zones pinned_ev elsewhere_ev pinned_phase elsewhere_phase idle < <(/usr/bin/python3 - "$STATE_DIR/rules.json" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
nodes = {o["metadata"]["name"]: o["metadata"].get("labels", {}) for o in items if o["kind"] == "Node"}
pods = {o["metadata"]["name"]: o for o in items if o["kind"] == "Pod"}
zones = sorted({nodes.get(p["spec"].get("nodeName", ""), {}).get("topology.kubernetes.io/zone", "?")
                for n, p in pods.items() if n.startswith("legacy-")})
def told(name):   # tailor's Events, not the scheduler's
    return [e["message"] for e in items if e["kind"] == "Event" and e.get("reason") == "FailedScheduling"
            and e["involvedObject"].get("name") == name
            and e.get("source", {}).get("component") != "default-scheduler"]
pinned = told("pinned")
busy = {p["spec"].get("nodeName") for n, p in pods.items() if n.startswith("legacy-")}
print(",".join(zones), "yes" if any("ignoring pod" in m for m in pinned) else "no",
      len(told("elsewhere")), pods["pinned"]["status"].get("phase"), pods["elsewhere"]["status"].get("phase"),
      len(set(nodes) - busy))
PY
)
echo "  legacy pods in zones: $zones; ignored pods counted: $(ignored)"
check "the legacy pods run in us-east-1b only ($zones)" test "$zones" = us-east-1b
check "karpenter_scheduler_ignored_pods_count is 2 ($(ignored))" test "$(ignored)" = 2
check "the pinned pod stays Pending with an 'ignoring pod' FailedScheduling Event ($pinned_phase, $pinned_ev)" \
  test "$pinned_phase $pinned_ev" = "Pending yes"
check "the pod avoiding Karpenter's nodes stays Pending without an Event ($elsewhere_phase, $elsewhere_ev)" \
  test "$elsewhere_phase $elsewhere_ev" = "Pending 0"
check "no node without a legacy pod: none launched for the ignored pods ($idle)" test "$idle" = 0
check "instances = NodeClaims = Nodes ($(e2e_fig instances)), none leaked" \
  test "$(e2e_fig instances)" = "$(e2e_fig claims)" -a "$(e2e_fig claims)" = "$(e2e_fig nodes)" \
  -a "$(e2e_fig leaked)" = "[]"
e2e_finish
