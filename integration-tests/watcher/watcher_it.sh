#!/usr/bin/env bash
# watcher_it.sh KUBESIM WATCHER PENDING_SUB - tailor-watcher against kubesim
# over HTTPS (token auth, no nodes): unschedulable Deployments show up as
# pending batches with exactly their pods, a scale-up is seen in full, a
# kill -9 and restart republishes after sync, pods bound to a node travel
# on it while the pending set is republished every --resync, SIGTERM
# exits 0.
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
spid=
cleanup() {
  for p in $spid $wpid $kpid; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
"$kubesim" --listen "127.0.0.1:$kport" --tls-listen "127.0.0.1:$tport" --data-dir "$work" \
  --token watcher-it --kubeconfig-out "$work/kc" >"$work/kubesim.out" 2>"$work/kubesim.err" &
kpid=$!
wait_for_status "http://127.0.0.1:$kport/healthz" 200 20 || { tail -20 "$work/kubesim.err" >&2; exit 1; }
for _ in $(seq 50); do [ -s "$work/kc" ] && break; sleep 0.1; done
K=(kubectl --kubeconfig "$work/kc")

start_watcher() {
  $(tls_as tailor-watcher) "$watcher" --kubeconfig "$work/kc" --http-listen "127.0.0.1:$hport" \
    --listen "tls+tcp://127.0.0.1:$lport" --publish "tls+tcp://127.0.0.1:$pport" \
    --batch-idle 1s --batch-max 10s --resync 3s >>"$work/watcher.log" 2>&1 &
  wpid=$!
}

# wait_batch N SECS [NOT_EPOCH]: wait for a batch line with N pods (and a
# batch id not starting with NOT_EPOCH); print it.
wait_batch() {
  local n=$1 secs=$2 not=${3:-none} i
  for ((i = 0; i < secs * 10; i++)); do
    if line=$(/usr/bin/python3 - "$work/sub.out" "$n" "$not" <<'PY'
import json, sys
want, not_epoch = int(sys.argv[2]), sys.argv[3]
for l in open(sys.argv[1]):
    b = json.loads(l)
    if len(b["pods"]) == want and not b["batch"].startswith(not_epoch + "-"):
        print(l.strip()); sys.exit(0)
sys.exit(1)
PY
    ); then echo "$line"; return 0; fi
    sleep 0.1
  done
  echo "no batch with $n pods within ${secs}s; got:" >&2
  cat "$work/sub.out" >&2
  return 1
}

pod_names() { "${K[@]}" get pods -l app=big -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | paste -sd, -; }
batch_pods() { /usr/bin/python3 -c 'import json,sys; print(",".join(json.loads(sys.argv[1])["pods"]))' "$1"; }

# Before its informers have listed, the watcher is not ready and says why:
# point one at an API server that is not there.
dead=$(free_port)
sed "s#server: .*#server: https://127.0.0.1:$dead#" "$work/kc" >"$work/kc-dead"
$(tls_as tailor-watcher) "$watcher" --kubeconfig "$work/kc-dead" --http-listen "127.0.0.1:$hport" \
  --listen "tls+tcp://127.0.0.1:$lport" --publish "tls+tcp://127.0.0.1:$pport" >"$work/dead.log" 2>&1 &
wpid=$!
check "unsynced watcher: /readyz 503" wait_for_status "http://127.0.0.1:$hport/readyz" 503 10
# (the first 503 may come before the informers exist, while it starts)
check "...naming the kinds not synced" \
  wait_until 10 bash -c "curl -s 'http://127.0.0.1:$hport/readyz' | grep -q 'not synced: pods, nodes, nodeclaims'"
kill -TERM "$wpid"
wait_exit "$wpid" 15
check "unsynced watcher still exits 0 on SIGTERM (got $WAIT_RC)" test "$WAIT_RC" = 0

start_watcher
check "watcher /readyz 200 once every informer synced" \
  wait_for_status "http://127.0.0.1:$hport/readyz" 200 20
$(tls_as tailor-launcher) "$sub" "tls+tcp://127.0.0.1:$pport" "tls+tcp://127.0.0.1:$lport" >"$work/sub.out" 2>"$work/sub.err" &
spid=$!
sleep 0.5   # pub/sub: only what is published after the subscription is seen

cat >"$work/big.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      containers:
      - name: c
        image: busybox
        resources: {requests: {cpu: "64", memory: 512Gi}}
YAML
"${K[@]}" apply --validate=false -f "$work/big.yaml" >/dev/null
t0=$(date +%s.%N)
b3=$(wait_batch 3 6) || true
t1=$(date +%s.%N)
check "a batch with the 3 unschedulable pods arrives" test -n "$b3"
check "...within idle (1s) + slack (got $(printf '%.1f' "$(echo "$t1 - $t0" | bc)")s)" \
  test "$(echo "$t1 - $t0 < 5" | bc)" = 1
check "...and exactly the Deployment's pods" test "$(batch_pods "${b3:-{\"pods\":[]\}}")" = "$(pod_names)"
check "...with no nodes in the cluster state" grep -q '"nodes":0,"bound":0' "$work/sub.out"

"${K[@]}" scale deployment big --replicas 5 >/dev/null
b5=$(wait_batch 5 8) || true
check "scaling to 5: a batch with all 5 pods (level-triggered)" test -n "$b5"
check "...exactly the Deployment's pods" test "$(batch_pods "${b5:-{\"pods\":[]\}}")" = "$(pod_names)"

metrics=$(http_get "http://127.0.0.1:$hport/metrics")
check "metrics: 5 pending pods" grep -q '^tailor_watcher_pending_pods 5' <<<"$metrics"
check "metrics: batches published" grep -Eq '^tailor_watcher_batches_published_total [1-9]' <<<"$metrics"
check "metrics: cached pods by kind" grep -q '^tailor_watcher_cache_objects{kind="pods"} 5' <<<"$metrics"

epoch=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])["batch"].split("-")[0])' "${b5:-{\"batch\":\"x-0\"\}}")
kill -9 "$wpid"
wait "$wpid" 2>/dev/null || true
start_watcher
br=$(wait_batch 5 10 "$epoch") || true
check "after kill -9 and restart: a new watcher republishes the 5 pods after sync" test -n "$br"

# A node with room for a small pod only: the small pod binds and travels
# on its node in the next (resync) batch; the big ones stay pending.
cat >"$work/node.json" <<'JSON'
{"apiVersion":"v1","kind":"Node","metadata":{"name":"small-1"},"spec":{},
 "status":{"conditions":[{"type":"Ready","status":"True"}],"allocatable":{"cpu":"2","memory":"8Gi","pods":"110"}}}
JSON
"${K[@]}" create --validate=false -f "$work/node.json" >/dev/null
"${K[@]}" run tiny --image busybox --restart Never --overrides \
  '{"spec":{"containers":[{"name":"tiny","image":"busybox","resources":{"requests":{"cpu":"100m"}}}]}}' >/dev/null
seen=
for _ in $(seq 100); do
  if grep -q '"nodes":1,"bound":1' "$work/sub.out"; then seen=1; break; fi
  sleep 0.1
done
check "resync batch: the bound pod rides on its node, the 5 big pods still pending" \
  bash -c "[ -n '$seen' ] && grep '\"nodes\":1,\"bound\":1' '$work/sub.out' | grep -q '\"pods\":\[\"big-[^]]*\]' &&
    [ \$(grep '\"nodes\":1,\"bound\":1' '$work/sub.out' | tail -1 | grep -o '\"big-' | wc -l) = 5 ]"

check "batches after the first are deltas: the resync batch carries at most the one node" \
  bash -c "grep '\"nodes\":1,\"bound\":1' '$work/sub.out' | tail -1 | grep -Eq '\"base\":[1-9][0-9]*,\"delta_nodes\":[01],'"

$(tls_as tailorctl) "$sub" --snapshot "tls+tcp://127.0.0.1:$lport" >"$work/snap.out" 2>"$work/snap.err" || cat "$work/snap.err" >&2
check "Snapshot on REP: synced, the node with its pod, the 5 pending pods" /usr/bin/python3 -c '
import json, sys
s = json.loads(open(sys.argv[1]).readline())
assert s["synced"] and s["nodes"] == 1 and s["bound"] == 1, s
assert len(s["pending"]) == 5 and all(p.startswith("big-") for p in s["pending"]), s
' "$work/snap.out"
check "Snapshot poll with the current generation: {unchanged}" grep -q '"unchanged":true' "$work/snap.out"

kill -TERM "$wpid"
wait_exit "$wpid" 10
check "watcher exits 0 on SIGTERM (got $WAIT_RC)" test "$WAIT_RC" = 0
wpid=
check "watcher log has no error lines" bash -c "! grep -q '\"level\":\"error\"' '$work/watcher.log'"
finish
