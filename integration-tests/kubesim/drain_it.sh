#!/usr/bin/env bash
# drain_it.sh KUBESIM - kubectl drain against kubesim's scheduler,
# controllers and Eviction API: a Deployment of 3 behind a PDB with
# minAvailable=3 blocks `kubectl drain` (it keeps retrying on 429); once
# the PDB allows one disruption the drain completes, and the evicted pods
# come back Pending and are bound to the other node.  kubectl 1.27 does the
# cordon/uncordon, 1.33 the drain.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
bin=$1
work=$(mktemp -d)
port=$(free_port)
tport=$(free_port)
"$bin" --listen "127.0.0.1:$port" --tls-listen "127.0.0.1:$tport" --data-dir "$work" \
  --token drain-token --kubeconfig-out "$work/kc" >"$work/out" 2>"$work/err" &
pid=$!
drain_pid=
cleanup() {
  [ -n "$drain_pid" ] && kill "$drain_pid" 2>/dev/null || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if ! wait_for_status "http://127.0.0.1:$port/healthz" 200 20; then
  echo "kubesim did not start; its log:" >&2
  tail -20 "$work/err" >&2
  exit 1
fi
for _ in $(seq 50); do [ -s "$work/kc" ] && break; sleep 0.1; done
K27="/usr/lib/google-cloud-sdk/bin/kubectl.1.27 --kubeconfig $work/kc"
K="/usr/lib/google-cloud-sdk/bin/kubectl.1.33 --kubeconfig $work/kc"

# until SECONDS CMD...: poll CMD every 0.2 s.
until_ok() {
  local secs=$1 i
  shift
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}
# pods_on NODE: "Running" web pods bound to NODE.
pods_on() {
  $K get pods -l app=web -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.phase}{"\n"}{end}' |
    grep -c "^$1 Running" || true
}
web_running_on() { [ "$(pods_on "$1")" = "$2" ]; }

for n in n1 n2; do
  cat >"$work/$n.json" <<JSON
{"apiVersion":"v1","kind":"Node","metadata":{"name":"$n","labels":{"kubernetes.io/hostname":"$n"}},
 "spec":{},"status":{"conditions":[{"type":"Ready","status":"True"}],
 "allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}
JSON
  check "create node $n" $K create --validate=false -f "$work/$n.json"
done
check "1.27 cordon n2" $K27 cordon n2
check "n2 shows SchedulingDisabled" bash -c "$K27 get no n2 | grep -q SchedulingDisabled"

cat >"$work/app.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.25", resources: {requests: {cpu: 100m, memory: 64Mi}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 3
  selector: {matchLabels: {app: web}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "busybox", resources: {requests: {cpu: 50m}}}]
YAML
check "apply deployment, pdb, daemonset" $K apply --validate=false -f "$work/app.yaml"
check "3 web pods Running on n1 (n2 cordoned)" until_ok 20 web_running_on n1 3
check "the PDB allows no disruption" until_ok 10 bash -c \
  "[ \"\$($K get pdb web -o jsonpath='{.status.currentHealthy}/{.status.disruptionsAllowed}')\" = 3/0 ]"
check "1.27 uncordon n2" $K27 uncordon n2
check "DaemonSet pods on both nodes" until_ok 20 bash -c \
  "[ \"\$($K get ds agent -o jsonpath='{.status.numberReady}')\" = 2 ]"
before=$($K get pods -l app=web -o jsonpath='{.items[*].metadata.name}')

# The drain is blocked while the budget allows nothing.
$K drain n1 --ignore-daemonsets --delete-emptydir-data --timeout=90s >"$work/drain" 2>&1 &
drain_pid=$!
sleep 8
check "drain still running after 8 s" kill -0 "$drain_pid"
check "drain is retrying on the budget" \
  grep -q "Cannot evict pod as it would violate the pod's disruption budget" "$work/drain"
check "all 3 pods still on n1" web_running_on n1 3
check "n1 cordoned by the drain" bash -c "$K get no n1 | grep -q SchedulingDisabled"

# Relax the budget: one at a time, the pods move to n2.
check "patch PDB minAvailable=2" $K patch pdb web --type=merge -p '{"spec":{"minAvailable":2}}'
wait_exit "$drain_pid" 90
drain_rc=$WAIT_RC
drain_pid=
check "drain completed" [ "$drain_rc" = 0 ]
grep -q "node/n1 drained" "$work/drain" || cat "$work/drain" >&2
check "drain says n1 drained" grep -q "node/n1 drained" "$work/drain"
check "3 web pods Running on n2" until_ok 20 web_running_on n2 3
check "no web pod left on n1" web_running_on n1 0
after=$($K get pods -l app=web -o jsonpath='{.items[*].metadata.name}')
check "the evicted pods were replaced" bash -c \
  "for p in $before; do case ' $after ' in *\" \$p \"*) exit 1;; esac; done"
check "the scheduler bound the new pending pods to n2" bash -c \
  "$K get events -o jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}' |
   grep -q '^Scheduled: Successfully assigned default/web-.* to n2'"
check "DaemonSet pod stayed on n1" bash -c \
  "$K get pods -l app=agent -o jsonpath='{.items[*].spec.nodeName}' | grep -q n1"
check "deployment available again" until_ok 10 bash -c \
  "[ \"\$($K get deploy web -o jsonpath='{.status.availableReplicas}')\" = 3 ]"
check "kubesim still serving" [ "$(http_status "http://127.0.0.1:$port/healthz")" = 200 ]
finish
