#!/usr/bin/env bash
# solve_it.sh TAILORCTL - tailorctl solve as a user runs it: manifests in,
# a plan (text and JSON) and an exit code out.
#
# Fixtures (integration-tests/tailorctl/fixtures): Deployments, a
# StatefulSet and a Job of mixed shapes, a GPU pod, a pod no instance type
# can hold, two NodePools and an EC2NodeClass, a hand-written ten-type
# catalog, kubectl-style lists of pods and nodes, and broken inputs;
# fixtures/nodeshape: one m5.xlarge-only NodePool whose EC2NodeClass comes
# with and without kubelet settings that change what a node holds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
tctl=$1
fx=$here/fixtures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME ARGS...: run tailorctl solve, keep stdout/stderr, set RC.
run() {
  local name=$1
  shift
  RC=0
  "$tctl" solve "$@" >"$work/$name.out" 2>"$work/$name.err" || RC=$?
}
has() { grep -qF -- "$2" "$work/$1"; }
# pyjson NAME EXPR: evaluate a Python expression over the JSON plan `p`.
pyjson() {
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$work/$1.out" "$2"
}

base=(--pods "$fx/pods" --nodepools "$fx/nodepools.yaml" --catalog "$fx/catalog.json")

# --- the full workload with one impossible pod -----------------------------
run text "${base[@]}" --pods "$fx/impossible.yaml"
check "some pods unschedulable: exit 3" [ "$RC" -eq 3 ]
check "text: 17 pending pods read" has text.out "17 pending pods"
check "text: new nodes table" has text.out "INSTANCE TYPE"
check "text: the GPU pod gets a g4dn" has text.out "g4dn."
check "text: total and lower bound" has text.out "Lower bound: \$"
check "text: impossible pod listed" has text.out "Unschedulable pods (1)"
check "text: impossible pod named with its reason" has text.out "default/huge: "
check "text: reason per NodePool" has text.out "nodepool gpu: "
check "warning names the skipped ConfigMap and its file" has text.err "api.yaml: skipping ConfigMap shop/api-config"
check "warning names the skipped Service" has text.err "skipping Service shop/web"

run json "${base[@]}" --pods "$fx/impossible.yaml" -o json
check "json: exit 3" [ "$RC" -eq 3 ]
check "json: valid and counts add up" pyjson json \
  'p["pods"]["pending"]==17 and p["pods"]["on_new_nodes"]+p["pods"]["on_existing"]+p["pods"]["unschedulable"]==17'
check "json: only the impossible pod is unschedulable" pyjson json \
  '[u["pod"] for u in p["unschedulable"]]==["default/huge"] and len(p["unschedulable"][0]["nodepools"])>=1'
check "json: every replica placed on a new node" pyjson json \
  'sorted(x for c in p["nodeclaims"] for x in c["pods"])==sorted(set(x for c in p["nodeclaims"] for x in c["pods"])) and len([x for c in p["nodeclaims"] for x in c["pods"]])==16'
check "json: the GPU pod is on a g4dn in pool gpu" pyjson json \
  'any("ml/trainer" in c["pods"] and c["instance_type"].startswith("g4dn") and c["nodepool"]=="gpu" for c in p["nodeclaims"])'
check "json: no general pod on the tainted GPU pool" pyjson json \
  'all(all(x=="ml/trainer" for x in c["pods"]) for c in p["nodeclaims"] if c["nodepool"]=="gpu")'
check "json: groups carry zone and capacity type; costs add up" pyjson json \
  'all(g["zone"] and g["capacity_type"]=="on-demand" for g in p["new_nodes"]) and abs(sum(g["cost_per_hour"] for g in p["new_nodes"])-p["total_cost_per_hour"])<1e-6'
check "json: lower bound is below the cost" pyjson json \
  '0 < p["lower_bound_cost_per_hour"] <= p["total_cost_per_hour"]+1e-9 and p["cost_bound_ratio"]>=1'
check "json: the web spread uses every zone" pyjson json \
  'len({c["zone"] for c in p["nodeclaims"] if any(x.startswith("shop/web-") for x in c["pods"])})==3'

# --- everything placeable: exit 0 --------------------------------------------
run ok "${base[@]}"
check "all placed: exit 0" [ "$RC" -eq 0 ]
check "all placed: no unschedulable section" bash -c "! grep -q Unschedulable '$work/ok.out'"

# --- a file named by two flags is read once; a NodePool defined twice is refused
run twice "${base[@]}" --nodeclasses "$fx/nodepools.yaml"
check "the same file under --nodepools and --nodeclasses: read once" has twice.out "2 node pools"
cp "$fx/nodepools.yaml" "$work/copy.yaml"
run dup "${base[@]}" --nodepools "$work/copy.yaml"
check "a NodePool defined twice: exit 2" [ "$RC" -eq 2 ]
check "a NodePool defined twice: the file and the name said" has dup.err "copy.yaml: NodePool default is defined twice"

# --- tailor is never dearer than the Karpenter baseline ------------------------
run tl "${base[@]}" -o json
run kp "${base[@]}" -o json --strategy karpenter
check "baseline strategy runs" [ "$RC" -eq 0 ]
check "tailor costs no more than the baseline" python3 -c '
import json,sys
t=json.load(open(sys.argv[1]))["total_cost_per_hour"]; k=json.load(open(sys.argv[2]))["total_cost_per_hour"]
print("tailor %.4f baseline %.4f" % (t,k)); sys.exit(0 if t <= k + 1e-9 else 1)' "$work/tl.out" "$work/kp.out"

# --- existing nodes from kubectl output ---------------------------------------
run cl --pods "$fx/cluster-pods.json" --nodes "$fx/cluster-nodes.json" \
  --nodepools "$fx/nodepools.yaml" --catalog "$fx/catalog.json"
check "kubectl lists: exit 0" [ "$RC" -eq 0 ]
check "kubectl lists: pending pod goes to the existing node" \
  has cl.out "default/pending-1 -> ip-10-0-1-10.ec2.internal"
check "kubectl lists: bound and finished pods are not pending" has cl.out "1 pending pods"

# --- bad input: exit 2, message names file and object --------------------------
run bad --pods "$fx/malformed.yaml" --nodepools "$fx/nodepools.yaml" --catalog "$fx/catalog.json"
check "malformed YAML: exit 2" [ "$RC" -eq 2 ]
check "malformed YAML: file, line and column" has bad.err "malformed.yaml: line 5, column 2"
run qty --pods "$fx/badquantity.yaml" --nodepools "$fx/nodepools.yaml" --catalog "$fx/catalog.json"
check "negative quantity: exit 2" [ "$RC" -eq 2 ]
check "negative quantity: file, object and field" has qty.err \
  'badquantity.yaml: Deployment oops: spec.template.spec.containers[0].resources.requests.memory: "-2Gi" is negative'
printf '[{"name": "m5.large", "vcpu": 2' >"$work/cat.json"
run cat "${base[@]}" --catalog "$work/cat.json"
check "malformed catalog: exit 2 naming it" bash -c "[ $RC -eq 2 ] && grep -q 'cat.json' '$work/cat.err'"
run nocat --pods "$fx/pods" --nodepools "$fx/nodepools.yaml"
check "no --catalog: exit 2 and says why" bash -c "[ $RC -eq 2 ] && grep -q 'no EC2 to ask' '$work/nocat.err'"
run missing "${base[@]}" --pods "$work/nope.yaml"
check "missing file: exit 2 naming it" bash -c "[ $RC -eq 2 ] && grep -q 'nope.yaml: No such file' '$work/missing.err'"
run nopool --pods "$fx/pods" --nodepools "$fx/pods/gpu.yaml" --catalog "$fx/catalog.json"
check "no NodePool in the files: exit 2" [ "$RC" -eq 2 ]
run flag "${base[@]}" --strategy greedy
check "unknown strategy: exit 2" [ "$RC" -eq 2 ]
head -c 3000 /dev/urandom >"$work/noise.yaml"
run noise --pods "$work/noise.yaml" --nodepools "$fx/nodepools.yaml" --catalog "$fx/catalog.json"
check "random bytes: a clean exit 2, not a crash" [ "$RC" -eq 2 ]

# --- the EC2NodeClass's kubelet settings size the nodes -------------------------
# maxPods 5 + systemReserved cpu 1 on m5.xlarge (4 vCPU, 58 ENI pods, 3920m
# allocatable by default): 12 pods of 100m need ceil(12/5) = 3 nodes, not 1;
# a 3.5-CPU pod fits 3920m but not 2920m.
ns=$fx/nodeshape
shape() { run "$1" --pods "$ns/$2.yaml" --nodepools "$ns/pool.yaml" --nodeclasses "$ns/class-$3.yaml" \
  --catalog "$fx/catalog.json" -o json; }
shape sm_dflt small default
check "defaults: 12 small pods on one m5.xlarge" pyjson sm_dflt \
  'len(p["nodeclaims"])==1 and p["nodeclaims"][0]["instance_type"]=="m5.xlarge" and len(p["nodeclaims"][0]["pods"])==12'
shape sm_kube small kubelet
check "maxPods 5: all placed, exit 0" [ "$RC" -eq 0 ]
check "maxPods 5: 3 nodes of at most 5 pods" pyjson sm_kube \
  'len(p["nodeclaims"])==3 and all(c["instance_type"]=="m5.xlarge" and len(c["pods"])<=5 for c in p["nodeclaims"]) and p["pods"]["on_new_nodes"]==12'
run sm_kp --pods "$ns/small.yaml" --nodepools "$ns/pool.yaml" --nodeclasses "$ns/class-kubelet.yaml" \
  --catalog "$fx/catalog.json" -o json --strategy karpenter
check "maxPods 5: the baseline strategy too" pyjson sm_kp 'len(p["nodeclaims"])==3'
shape big_dflt big default
check "defaults: the 3.5-CPU pod fits an m5.xlarge" pyjson big_dflt \
  'p["pods"]["on_new_nodes"]==1 and p["nodeclaims"][0]["instance_type"]=="m5.xlarge"'
shape big_kube big kubelet
check "systemReserved cpu 1: the 3.5-CPU pod does not fit, exit 3" [ "$RC" -eq 3 ]
check "systemReserved cpu 1: unschedulable with the pool's reason" pyjson big_kube \
  'p["pods"]["unschedulable"]==1 and p["unschedulable"][0]["pod"]=="shape/big" and "cpu" in p["unschedulable"][0]["nodepools"][0]["reason"]'
run big_txt --pods "$ns/big.yaml" --nodepools "$ns/pool.yaml" --nodeclasses "$ns/class-kubelet.yaml" \
  --catalog "$fx/catalog.json"
check "systemReserved cpu 1: the text plan says why" has big_txt.out "nodepool xl: no instance type has 3500m cpu"

# --- zone IDs offline: only --zones ZONE=ID gives them ------------------------
cat >"$work/zid.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  nodeSelector: {topology.k8s.aws/zone-id: use1-az4}
  containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
YAML
zp=(--pods "$work/zid.yaml" --nodepools "$fx/nodepools.yaml" --catalog "$fx/catalog.json" -o json)
run zid_none "${zp[@]}"
check "zone-id without a zone map: unschedulable, exit 3" [ "$RC" -eq 3 ]
run zid "${zp[@]}" --zones us-east-1a=use1-az6,us-east-1b=use1-az4,us-east-1c
check "zone-id with --zones ZONE=ID: placed in the zone that has that ID" pyjson zid \
  'p["pods"]["on_new_nodes"]==1 and p["nodeclaims"][0]["zone"]=="us-east-1b"'
run zid_bad "${zp[@]}" --zones us-east-1a=
check "--zones with an empty ID: exit 2" [ "$RC" -eq 2 ]

# --- progress on stderr (tools/tailorctl/ctlprogress.h) ----------------------
# 12,000 pods; the quiet time is 0 so that a fast machine shows it too.
cat >"$work/many.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: many, namespace: default}
spec:
  replicas: 12000
  selector: {matchLabels: {app: many}}
  template:
    metadata: {labels: {app: many}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: 250m, memory: 256Mi}}}]
YAML
many=(--pods "$work/many.yaml" --nodepools "$fx/nodepools.yaml" --catalog "$fx/catalog.json")
RC=0
TAILORCTL_PROGRESS_AFTER_MS=0 "$tctl" solve "${many[@]}" -o json >"$work/many.out" 2>"$work/many.err" || RC=$?
check "-o json with progress: stdout is still the plan" pyjson many 'p["pods"]["pending"]==12000'
check "-o json: every progress line on stderr is JSON, reading then solving" python3 -c '
import json,sys
ls=[json.loads(l)["progress"] for l in open(sys.argv[1]) if l.strip()]
steps=[l["step"] for l in ls if l["finished"]]
print(steps); sys.exit(0 if steps==["reading manifests","solving 12000 pending pods"] and all(l["command"]=="solve" for l in ls) else 1)' "$work/many.err"
RC=0
TAILORCTL_PROGRESS=tty TAILORCTL_PROGRESS_AFTER_MS=0 "$tctl" solve "${many[@]}" >"$work/many_tty.out" 2>"$work/many_tty.err" || RC=$?
check "on a terminal: one line redrawn in place, ending with the count read" bash -c \
  "grep -q \$'\r\e\\[Ktailorctl solve: reading manifests' '$work/many_tty.err' && grep -q '12000 pending pods, 0 bound, 0 nodes' '$work/many_tty.err'"
RC=0
"$tctl" solve "${base[@]}" -o json >"$work/many_q.out" 2>"$work/many_q.err" || RC=$?
check "a quick run shows no progress (quiet for 2 s off a terminal)" bash -c "! grep -q progress '$work/many_q.err'"

finish
