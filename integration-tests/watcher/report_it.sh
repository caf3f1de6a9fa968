#!/usr/bin/env bash
# report_it.sh KUBESIM WATCHER PENDING_SUB - what a user sees, with a real
# kubectl, about NodePools tailor cannot use as written:
#   - a field tailor accepts but does not act on (consolidationPolicy
#     Balanced): one Warning Event IgnoredField on the pool naming it;
#   - an invalid pool (a restricted template label) and a static one
#     (spec.replicas, which Karpenter's CRD accepts and tailor refuses):
#     one Warning Event FailedValidation each naming the field, and
#     ValidationSucceeded=False / Ready=False on their status, the other
#     conditions kept;
#   - the watcher keeps serving: its Snapshot holds the good pools;
#   - a relist (the watch expired: 410 Gone) and a status update post no
#     second Event;
#   - fixing the bad pool takes it out of the error state
#     (tailor_watcher_invalid_objects) and back into the Snapshot, and its
#     ValidationSucceeded turns True;
#   - a pod whose cpu request the API server accepts but tailor cannot use
#     (1e308 cores): a Warning Event FailedValidation on the Pod naming
#     the field, so `kubectl describe pod` says why it stays Pending, and
#     a log line naming the pod.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
kubesim=$1
watcher=$2
sub=$3
work=$(mktemp -d)
kport=$(free_port)
tport=$(free_port)
hport=$(free_port)
lport=$(free_port)
pport=$(free_port)
wpid=
cleanup() {
  [ -n "$wpid" ] && kill -CONT "$wpid" 2>/dev/null || true
  for p in $wpid $kpid; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# A short history, so a watch that stops reading falls behind it (410).
"$kubesim" --listen "127.0.0.1:$kport" --tls-listen "127.0.0.1:$tport" --data-dir "$work" \
  --token report-it --kubeconfig-out "$work/kc" --history 16 \
  >"$work/kubesim.out" 2>"$work/kubesim.err" &
kpid=$!
wait_for_status "http://127.0.0.1:$kport/healthz" 200 20 || { tail -20 "$work/kubesim.err" >&2; exit 1; }
for _ in $(seq 50); do [ -s "$work/kc" ] && break; sleep 0.1; done
K=(kubectl --kubeconfig "$work/kc")

$(tls_as tailor-watcher) "$watcher" --kubeconfig "$work/kc" --http-listen "127.0.0.1:$hport" \
  --listen "tls+tcp://127.0.0.1:$lport" --publish "tls+tcp://127.0.0.1:$pport" >"$work/watcher.log" 2>&1 &
wpid=$!
check "watcher ready" wait_for_status "http://127.0.0.1:$hport/readyz" 200 20

pool() {   # pool NAME EXTRA_SPEC LABELS
  cat <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
$2
  template:
    metadata: {labels: {$3}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
YAML
}
{
  pool good "" "team: a"
  pool balanced "  disruption: {consolidationPolicy: Balanced, consolidateAfter: 1m}" ""
  pool bad "" "karpenter.sh/team: a"
  pool static "  replicas: 2" ""
} >"$work/pools.yaml"
"${K[@]}" apply --validate=false -f "$work/pools.yaml" >/dev/null

# events_json: every Event, as JSON; count REASON NAME: how many Warning
# Events with that reason are on the NodePool NAME.
events_json() { "${K[@]}" get events -A -o json; }
count() {
  events_json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(1 for e in d["items"] if e["reason"] == sys.argv[1] and e["type"] == "Warning"
          and e["involvedObject"]["kind"] == "NodePool" and e["involvedObject"]["name"] == sys.argv[2]))
' "$1" "$2"
}
message() {
  events_json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("\n".join(e["message"] for e in d["items"]
                if e["reason"] == sys.argv[1] and e["involvedObject"]["name"] == sys.argv[2]))
' "$1" "$2"
}
cond() {   # cond POOL TYPE FIELD
  "${K[@]}" get nodepool "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}"
}

# eq WANT CMD...: CMD prints WANT.  has WANT_SUBSTRING CMD...: CMD's output holds it.
eq() { local want=$1; shift; test "$("$@")" = "$want"; }
has() { local want=$1; shift; "$@" | grep -qF -- "$want"; }
pool_names() {
  $(tls_as tailorctl) "$sub" --snapshot "tls+tcp://127.0.0.1:$lport" | head -1 |
    /usr/bin/python3 -c 'import json, sys; print(",".join(sorted(json.loads(sys.stdin.read())["nodepool_names"])))'
}
per_problem() {
  echo "$(count IgnoredField balanced),$(count FailedValidation bad),$(count FailedValidation static)"
}
invalid_pools() { http_get "http://127.0.0.1:$hport/metrics" | sed -n 's/^tailor_watcher_invalid_objects{kind="nodepools"} //p'; }

check "an IgnoredField Event on the pool with consolidationPolicy Balanced" \
  wait_until 10 eq 1 count IgnoredField balanced
check "...naming the field" has \
  'NodePool balanced: spec.disruption.consolidationPolicy: Balanced is run as WhenEmptyOrUnderutilized' \
  message IgnoredField balanced
check "...from tailor-watcher" has '"component": "tailor-watcher"' events_json
check "a FailedValidation Event on the pool with a restricted label" \
  wait_until 10 eq 1 count FailedValidation bad
check "...naming the field" has \
  'NodePool bad: spec.template.metadata.labels[karpenter.sh/team]: label domain "karpenter.sh" is restricted' \
  message FailedValidation bad
check "a FailedValidation Event on the static pool" wait_until 10 eq 1 count FailedValidation static
check "no Event on the good pool" eq 0 count FailedValidation good
check "...nor an IgnoredField one" eq 0 count IgnoredField good

check "bad pool: ValidationSucceeded=False" wait_until 10 eq False cond bad ValidationSucceeded status
check "...reason NodePoolValidationFailed" eq NodePoolValidationFailed cond bad ValidationSucceeded reason
check "...the message naming the field" has 'spec.template.metadata.labels[karpenter.sh/team]' \
  cond bad ValidationSucceeded message
check "...and Ready=False" eq False cond bad Ready status
check "static pool: ValidationSucceeded=False naming spec.replicas" has 'spec.replicas' \
  cond static ValidationSucceeded message

# Another writer's condition (the disruptor's NodeClassReady) is kept
# when the watcher writes its own.
"${K[@]}" patch nodepool static --subresource status --type merge -p \
  '{"status":{"conditions":[{"type":"NodeClassReady","status":"True","reason":"NodeClassReady","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' >/dev/null
check "a status patch wiping the conditions: the watcher sets them again" \
  wait_until 10 eq False cond static ValidationSucceeded status
check "...keeping the other writer's NodeClassReady" eq True cond static NodeClassReady status

check "the watcher keeps serving: its Snapshot has the good pools, not the invalid ones" \
  eq balanced,good pool_names
check "metrics: 2 invalid nodepools" eq 2 invalid_pools

# A relist: stop the watcher reading while far more than the 16 changes
# kubesim keeps go by, each a 200 KB annotation, until the NodePool watch
# stream is stuck on a full socket; it then ends in 410 Gone and the
# watcher lists again.
kill -STOP "$wpid"
for i in $(seq 80); do
  printf '{"metadata":{"annotations":{"n":"%s-%0204800d"}}}' "$i" 0 >"$work/ann.json"
  "${K[@]}" patch nodepool good --type merge --patch-file "$work/ann.json" >/dev/null
done
kill -CONT "$wpid"
check "the watcher relisted the nodepools (410 Gone)" \
  wait_until 15 grep -q 'kube watch expired; relisting.*nodepools' "$work/watcher.log"
sleep 1
check "after the relist and the status updates: still one Event per problem" \
  eq 1,1,1 per_problem

# Fix the bad pool.
pool bad "" "team: b" | "${K[@]}" apply --validate=false -f - >/dev/null
check "fixed: the bad pool leaves the error state" wait_until 10 eq 1 invalid_pools
check "...its ValidationSucceeded is True again" wait_until 10 eq True cond bad ValidationSucceeded status
check "...and the Snapshot holds it" eq bad,balanced,good pool_names
check "...with no new Event" eq 1 count FailedValidation bad

# A pod tailor cannot use: the Event is on the Pod.
"${K[@]}" apply --validate=false -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: "1e308"}}}
YAML
pod_events() {
  events_json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("\n".join(e["message"] for e in d["items"] if e["reason"] == "FailedValidation"
                and e["type"] == "Warning" and e["involvedObject"]["kind"] == "Pod"
                and e["involvedObject"]["name"] == "huge"))'
}
check "a pod requesting 1e308 cpu: a FailedValidation Event on the Pod naming the field" \
  wait_until 10 has 'spec.containers[0].resources.requests.cpu' pod_events
check "...and a log line naming the pod" \
  grep -q '"msg":"ignoring an object that does not convert.*"namespace":"default","name":"huge"' "$work/watcher.log"

kill -TERM "$wpid"
wait_exit "$wpid" 10
check "watcher exits 0 on SIGTERM (got $WAIT_RC)" test "$WAIT_RC" = 0
wpid=
check "watcher log has no error lines" bash -c "! grep -q '\"level\":\"error\"' '$work/watcher.log'"
finish
