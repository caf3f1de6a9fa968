#!/usr/bin/env bash
# kubectl_it.sh KUBESIM - real kubectl (1.27 and 1.33) against kubesim over
# HTTPS with a bearer token: get (table and -o json), get -w, apply then
# re-apply (patch), delete, cordon, wait --for=condition=Ready; bad input
# gets the API's status codes and the server keeps serving.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
bin=$1
work=$(mktemp -d)
port=$(free_port)
tport=$(free_port)
"$bin" --listen "127.0.0.1:$port" --tls-listen "127.0.0.1:$tport" --data-dir "$work" \
  --token it-token --kubeconfig-out "$work/kc" --bookmark-interval 1s --history 16 \
  >"$work/out" 2>"$work/err" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
if ! wait_for_status "http://127.0.0.1:$port/healthz" 200 20; then
  echo "kubesim did not start; its log:" >&2
  tail -20 "$work/err" >&2
  exit 1
fi
for _ in $(seq 50); do [ -s "$work/kc" ] && break; sleep 0.1; done
check "prints the kubectl line" grep -q "kubectl --kubeconfig $work/kc" "$work/out"
api() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer it-token" "$@"; }

for v in 1.27 1.33; do
  K="/usr/lib/google-cloud-sdk/bin/kubectl.$v --kubeconfig $work/kc"
  n="node-${v/./-}"
  cat >"$work/node.json" <<JSON
{"apiVersion":"v1","kind":"Node","metadata":{"name":"$n"},"spec":{},
 "status":{"conditions":[{"type":"Ready","status":"True"}],"allocatable":{"cpu":"4","pods":"110"}}}
JSON
  check "$v create node" $K create --validate=false -f "$work/node.json"
  check "$v wait Ready" $K wait --for=condition=Ready "node/$n" --timeout=10s
  check "$v get no (table)" bash -c "$K get no | grep -E '^$n +Ready'"
  check "$v get po -A" $K get po -A
  check "$v get nodepools" bash -c "$K get nodepools 2>&1 | grep -q 'No resources found'"
  check "$v cordon" $K cordon "$n"
  check "$v node unschedulable" bash -c "$K get no $n -o json | grep -q '\"unschedulable\": true'"
  check "$v table shows SchedulingDisabled" bash -c "$K get no $n | grep -q SchedulingDisabled"
  # get -w sees a change made while it runs
  $K get cm -w >"$work/watch-$v" 2>&1 &
  wpid=$!
  sleep 1
  cat >"$work/app.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-${v/./-}, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.25"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg-${v/./-}}
data: {a: "one"}
YAML
  check "$v apply" $K apply --validate=false -f "$work/app.yaml"
  sed -i 's/nginx:1.25/nginx:1.26/; s/a: "one"/a: "two"/' "$work/app.yaml"
  check "$v re-apply (patch)" bash -c "$K apply --validate=false -f $work/app.yaml | grep -q configured"
  check "$v image patched" bash -c \
    "[ \"\$($K get deploy web-${v/./-} -o jsonpath='{.spec.template.spec.containers[0].image}')\" = nginx:1.26 ]"
  check "$v generation bumped" bash -c \
    "[ \"\$($K get deploy web-${v/./-} -o jsonpath='{.metadata.generation}')\" = 2 ]"
  check "$v configmap patched" bash -c "[ \"\$($K get cm cfg-${v/./-} -o jsonpath='{.data.a}')\" = two ]"
  check "$v get -o json" bash -c "$K get cm cfg-${v/./-} -o json | grep -q '\"kind\": \"ConfigMap\"'"
  sleep 1
  kill "$wpid" 2>/dev/null || true
  wait "$wpid" 2>/dev/null || true
  check "$v get -w saw the configmap" grep -q "cfg-${v/./-}" "$work/watch-$v"
  check "$v delete" $K delete cm "cfg-${v/./-}"
  check "$v deleted" bash -c "! $K get cm cfg-${v/./-} 2>/dev/null"
  check "$v delete deployment" $K delete deploy "web-${v/./-}"
done

base="http://127.0.0.1:$port"
check "no token: 401" [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/api/v1/pods")" = 401 ]
check "malformed JSON: 400" [ "$(api -X POST -H 'Content-Type: application/json' -d '{bad' "$base/api/v1/namespaces/default/configmaps")" = 400 ]
check "unknown kind: 404" [ "$(api "$base/api/v1/widgets")" = 404 ]
check "replicas as string: 400" [ "$(api -X POST -H 'Content-Type: application/json' \
  -d '{"metadata":{"name":"x"},"spec":{"replicas":"3"}}' "$base/apis/apps/v1/namespaces/default/deployments")" = 400 ]
check "name not a string: 400" [ "$(api -X POST -H 'Content-Type: application/json' \
  -d '{"metadata":{"name":7}}' "$base/api/v1/namespaces/default/configmaps")" = 400 ]
head -c 4000000 /dev/zero | tr '\0' ' ' >"$work/big"
check "oversize body: 413" [ "$(api -X POST -H 'Content-Type: application/json' --data-binary "@$work/big" "$base/api/v1/namespaces/default/configmaps")" = 413 ]
check "bad patch: 400" [ "$(api -X PATCH -H 'Content-Type: application/json-patch+json' -d '{"op":1}' "$base/api/v1/nodes/node-1-33")" = 400 ]
check "failed test op: 422" [ "$(api -X PATCH -H 'Content-Type: application/json-patch+json' \
  -d '[{"op":"test","path":"/metadata/name","value":"nope"}]' "$base/api/v1/nodes/node-1-33")" = 422 ]
check "watch from a too-old version: ERROR 410" bash -c \
  "curl -s -H 'Authorization: Bearer it-token' '$base/api/v1/nodes?watch=1&resourceVersion=1&timeoutSeconds=2' | grep -q '\"type\":\"ERROR\".*\"code\":410'"
# What kube-apiserver's validation refuses: real kubectl shows the field
# from details.causes, and the Status has the apiserver's shape.
K="/usr/lib/google-cloud-sdk/bin/kubectl.1.33 --kubeconfig $work/kc"
invalid() {  # invalid NAME WANT YAML: kubectl create fails and prints WANT
  printf '%s\n' "$3" >"$work/$1.yaml"
  check "kubectl: $1 is refused: $2" bash -c \
    "! $K create --validate=false -f '$work/$1.yaml' >'$work/$1.out' 2>&1 && grep -qF -- '$2' '$work/$1.out'"
}
invalid dup-container 'The Pod "dup" is invalid: spec.containers[1].name: Duplicate value: "a"' \
  'apiVersion: v1
kind: Pod
metadata: {name: dup}
spec: {containers: [{name: a, image: busybox}, {name: a, image: busybox}]}'
invalid no-image 'spec.containers[0].image: Required value' \
  'apiVersion: v1
kind: Pod
metadata: {name: noimage}
spec: {containers: [{name: a}]}'
invalid bad-label 'metadata.labels: Invalid value: "a b"' \
  'apiVersion: v1
kind: ConfigMap
metadata: {name: lab, labels: {app: "a b"}}'
invalid bad-svc-name 'metadata.name: Invalid value: "1svc"' \
  'apiVersion: v1
kind: Service
metadata: {name: 1svc}
spec: {ports: [{port: 80}]}'
check "the Status: 422 Invalid, details.causes[0] with the field" bash -c \
  "curl -s -H 'Authorization: Bearer it-token' -H 'Content-Type: application/json' -d '{\"metadata\":{\"name\":\"a..b\"}}' \
     '$base/api/v1/namespaces/default/configmaps' | python3 -c '
import json, sys
s = json.load(sys.stdin)
c = s[\"details\"][\"causes\"][0]
sys.exit(0 if s[\"code\"] == 422 and s[\"reason\"] == \"Invalid\" and c[\"field\"] == \"metadata.name\"
         and c[\"reason\"] == \"FieldValueInvalid\" and s[\"details\"][\"kind\"] == \"ConfigMap\" else 1)'"
check "still serving" [ "$(api "$base/api/v1/nodes")" = 200 ]
kill -TERM "$pid"
wait_exit "$pid" 20
check "clean exit on SIGTERM" [ "$WAIT_RC" = 0 ]
finish
