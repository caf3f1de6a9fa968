# lib.sh - the disruptor integration tests' shared setup (sourced).
#
# ds_up BUILD_DIR: moto (SigV4) + kubesim (scheduler, controllers, kubelet
# simulator) through scripts/local-cluster.sh, then tailor-solver,
# tailor-watcher, tailor-launcher and tailor-disruptor on random loopback
# ports with short timings (DS_ARGS adds disruptor flags).  Logs go to
# $STATE_DIR/<name>.log.  ds_down stops everything (trap it).
#
# Helpers: k (kubectl), wait_until SECONDS CMD..., ds_restart_disruptor,
# ds_watch_start / ds_watch_stop (the independent observer, watch.py),
# ec2_live (instances pending/running), json_get FILE EXPR.
here_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here_lib/../.." && pwd)
. "$repo/integration-tests/lib.sh"
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || KUBECTL=kubectl
ds_pids=()
ds_names=()   # parallel to ds_pids: each one's log name
ds_pid=
watch_pid=

k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }


ds_start_disruptor() {
  $(tls_as tailor-disruptor) "$build/services/tailor-disruptor" --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$d_rep" \
    --publish "tls+tcp://127.0.0.1:$d_pub" --http-listen "127.0.0.1:$d_http" \
    --watcher "tls+tcp://127.0.0.1:$w_rep" --watcher-publish "tls+tcp://127.0.0.1:$w_pub" \
    --launcher "tls+tcp://127.0.0.1:$l_rep" \
    --solver "tls+tcp://127.0.0.1:$s_rep" --catalog "$catalog" \
    --termination-interval 500ms --disruption-interval 2s --min-drain-time 1s \
    --validation-delay 2s --lease-duration 3s --lease-renew-deadline 2s \
    --lease-retry-period 500ms --event-interval 5s \
    --catalog-refresh 2s ${DS_ARGS:-} \
    >>"$STATE_DIR/disruptor.log" 2>&1 &
  ds_pid=$!
}

ds_up() {
  build=$1
  export STATE_DIR=${STATE_DIR:-$(mktemp -d /tmp/disr_it.XXXXXX)}
  export CLUSTER_NAME=${CLUSTER_NAME:-disr-it} BOOT_DELAY=${BOOT_DELAY:-1s}
  export KUBESIM_BIN=${KUBESIM_BIN:-$build/integration-tests/kubesim/kubesim}
  export KUBESIM_POD_START_DELAY=${KUBESIM_POD_START_DELAY:-1s}
  catalog=${TAILOR_SHARED_DATA:-$repo/../shared/data}/aws-instance-types.json
  [ -x "$KUBESIM_BIN" ] || { echo "FAIL: no kubesim at $KUBESIM_BIN"; exit 1; }
  "$repo/scripts/local-cluster.sh" up >"$STATE_DIR/up.log" 2>&1 || { cat "$STATE_DIR/up.log"; return 1; }
  eval "$("$repo/scripts/local-cluster.sh" env)"
  s_rep=$(free_port) w_rep=$(free_port) w_pub=$(free_port) l_rep=$(free_port) l_pub=$(free_port)
  d_rep=$(free_port) d_pub=$(free_port) d_http=$(free_port) w_dec=$(free_port)
  s_http=$(free_port) w_http=$(free_port) l_http=$(free_port)   # /metrics of each
  $(tls_as tailor-solver) "$build/services/tailor-solver" --listen "tls+tcp://127.0.0.1:$s_rep" --http-listen "127.0.0.1:$s_http" \
    >"$STATE_DIR/solver.log" 2>&1 & ds_pids+=($!) ds_names+=(solver)
  $(tls_as tailor-watcher) "$build/services/tailor-watcher" --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$w_rep" \
    --publish "tls+tcp://127.0.0.1:$w_pub" --http-listen "127.0.0.1:$w_http" \
    --decisions "tls+tcp://127.0.0.1:$w_dec" --batch-idle 500ms --batch-max 2s --resync 5s >"$STATE_DIR/watcher.log" 2>&1 & ds_pids+=($!) ds_names+=(watcher)
  $(tls_as tailor-launcher) "$build/services/tailor-launcher" --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$l_rep" \
    --publish "tls+tcp://127.0.0.1:$l_pub" --http-listen "127.0.0.1:$l_http" \
    --solver "tls+tcp://127.0.0.1:$s_rep" --watcher "tls+tcp://127.0.0.1:$w_pub" \
    --watcher-rep "tls+tcp://127.0.0.1:$w_rep" \
    --decisions "tls+tcp://127.0.0.1:$w_dec" --cluster-name "$TAILOR_CLUSTER_NAME" --catalog "$catalog" --lifecycle-interval 500ms \
    ${LC_ARGS:-} >"$STATE_DIR/launcher.log" 2>&1 & ds_pids+=($!) ds_names+=(launcher)
  ds_start_disruptor
  wait_for_status "http://127.0.0.1:$d_http/readyz" 200 30 || { ds_logs; return 1; }
  local p
  for p in "${ds_pids[@]}" "$ds_pid"; do
    kill -0 "$p" 2>/dev/null || { echo "FAIL: a service exited at start (pid $p)"; ds_logs; return 1; }
  done
}

# ds_logs: what the services said that was not info, and their last lines
# (printed when something failed, so that a CI log says why).
ds_logs() {
  local f
  for f in up solver watcher launcher disruptor; do
    [ -f "$STATE_DIR/$f.log" ] || continue
    echo "--- $f.log: warnings and errors (last 15)"
    grep -E '"level":"(warn|error)"' "$STATE_DIR/$f.log" | tail -n 15 | cut -c1-400 || true
    echo "--- $f.log: last 8 lines"
    tail -n 8 "$STATE_DIR/$f.log" | cut -c1-400
  done
}

ds_restart_disruptor() {   # SIGNAL: stop it with SIGNAL, start a new one
  kill "-$1" "$ds_pid" 2>/dev/null || true
  wait "$ds_pid" 2>/dev/null || true
  echo "--- disruptor restarted after SIG$1" >>"$STATE_DIR/disruptor.log"
  ds_start_disruptor
}

ds_watch_start() {   # OUT.json
  /usr/bin/python3 "$here_lib/watch.py" "$KUBECONFIG" "$1" >"$STATE_DIR/watch.log" 2>&1 &
  watch_pid=$!
}

ds_watch_stop() {
  [ -n "$watch_pid" ] || return 0
  kill -TERM "$watch_pid" 2>/dev/null || true
  wait "$watch_pid" 2>/dev/null || true
  watch_pid=
}

ds_down() {
  [ "${FAILED:-0}" = 0 ] || ds_logs
  ds_watch_stop
  local failed_before=${FAILED:-0} i
  [ -n "$ds_pid" ] && stop_service tailor-disruptor "$ds_pid" "$STATE_DIR/disruptor.log"
  for i in "${!ds_pids[@]}"; do
    stop_service "tailor-${ds_names[$i]}" "${ds_pids[$i]}" "$STATE_DIR/${ds_names[$i]}.log"
  done
  "$repo/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
  [ "${FAILED:-0}" = "$failed_before" ] || KEEP_STATE=1
  if [ "${KEEP_STATE:-0}" = 1 ]; then echo "state kept in $STATE_DIR"; else rm -rf "$STATE_DIR"; fi
  [ "${FAILED:-0}" = "$failed_before" ] || exit 1
}


# Instances pending or running in moto (tagged for this cluster).
ec2_live() {
  /usr/bin/python3 - <<'PY'
import os, botocore.session
ec2 = botocore.session.get_session().create_client(
    "ec2", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
n = 0
for r in ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]},
                                         {"Name": "tag-key", "Values": ["karpenter.sh/nodepool"]}])["Reservations"]:
    n += len(r["Instances"])
print(n)
PY
}

json_get() {   # FILE EXPR (python expression over d)
  /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

count_lines() { grep -c . || true; }
# true once no node is cordoned or carries karpenter.sh/disrupted; a node the
# disruptor is still removing (an empty node found at the very end) counts
# until it is gone, so callers wait for this rather than test one snapshot
# ds_same_catalog: the disruptor prices with the catalog the launcher plans
# with now (the last one it loaded or refreshed), which it got over
# the launcher's Catalog request.
ds_same_catalog() {
  /usr/bin/python3 - "$STATE_DIR/launcher.log" "$STATE_DIR/disruptor.log" <<'PY'
import json, sys
def last(path, msgs):
    h = None
    for line in open(path, errors="replace"):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("msg") in msgs:
            h = d.get("hash")
    return h
lc = last(sys.argv[1], ("catalog loaded", "catalog refreshed"))
ds = last(sys.argv[2], ("catalog from the launcher",))
print(f"launcher {lc} disruptor {ds}")
sys.exit(0 if lc and lc == ds else 1)
PY
}

ds_no_disrupted_node() {
  k get nodes -o json | json_get /dev/stdin "sum(1 for n in d['items'] if n['spec'].get('unschedulable') or any(t['key'] == 'karpenter.sh/disrupted' for t in n['spec'].get('taints', [])))" | grep -qx 0
}

# ds_cost: what the cluster's nodes cost, $/h at the catalog's on-demand
# prices in us-east-1; ds_n_nodes: how many nodes there are.
ds_cost() {
  local prices=$STATE_DIR/prices.tsv
  [ -s "$prices" ] || /usr/bin/python3 - "$catalog" >"$prices" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1])):
    p = (t.get("od_price_usd_hr") or {}).get("us-east-1")
    if p: print(f'{t["name"]}\t{p}')
PY
  k get nodes -o jsonpath='{range .items[*]}{.metadata.labels.node\.kubernetes\.io/instance-type}{"\n"}{end}' |
    awk -F'\t' 'NR==FNR{p[$1]=$2; next} $1!="" {c+=p[$1]} END{printf "%.4f\n", c}' "$prices" -
}
ds_n_nodes() { k get nodes --no-headers | grep -c . || true; }
