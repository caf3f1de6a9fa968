# lib_e2e.sh - the provisioning loop end to end, for the e2e tests
# (sourced).  A real local cluster (moto with SigV4 enforced + kubesim with
# its scheduler, controllers and kubelet simulator), optionally the
# fault-injecting EC2 proxy (ec2proxy.py) in front of moto, and the real
# services: tailor-solver, tailor-watcher, tailor-launcher.
#
#   e2e_up [proxy]          cluster (+ proxy); sets K (kubectl), EC2_URL
#   e2e_start_solver        one tailor-solver
#   e2e_start_watcher [ARGS...]
#   e2e_start_launcher [ARGS...]   (sets LAUNCHER_PID; log in $STATE_DIR/launcher.log)
#   e2e_wait_running N SECS  all N pods Running (prints progress)
#   e2e_check                instances = NodeClaims = Nodes, no pod on two claims (check.py)
#   e2e_proxy CMD [JSON]     POST /__proxy/CMD, or GET stats
#   e2e_fleets               CreateFleet calls the proxy saw
# Needs BUILD (the build tree).  Everything stops on EXIT.
here_e2e=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here_e2e/../.." && pwd)
. "$repo/integration-tests/lib.sh"
KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.33
[ -x "$KUBECTL" ] || KUBECTL=kubectl
SHARED=${TAILOR_SHARED_DATA:-$repo/../shared/data}
CATALOG=$SHARED/aws-instance-types.json
e2e_pids=()

e2e_cleanup() {
  local p
  for p in "${e2e_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${e2e_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  e2e_pids=()
  "$repo/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
  if [ "${FAILED:-0}" != 0 ] || [ "${E2E_KEEP:-0}" = 1 ]; then
    echo "--- logs kept in $STATE_DIR"
  else
    rm -rf "$STATE_DIR"
  fi
}

e2e_up() {
  export STATE_DIR=$(mktemp -d /tmp/e2e.XXXXXX)
  export CLUSTER_NAME=${CLUSTER_NAME:-e2e} BOOT_DELAY=${BOOT_DELAY:-1s}
  export KUBESIM_BIN=${KUBESIM_BIN:-$BUILD/integration-tests/kubesim/kubesim}
  [ -x "$KUBESIM_BIN" ] || { echo "FAIL: no kubesim at $KUBESIM_BIN"; exit 1; }
  trap e2e_cleanup EXIT
  "$repo/scripts/local-cluster.sh" up >"$STATE_DIR/up.log" 2>&1 || { cat "$STATE_DIR/up.log"; exit 1; }
  eval "$("$repo/scripts/local-cluster.sh" env)"
  K="$KUBECTL --kubeconfig $KUBECONFIG"
  EC2_URL=$AWS_ENDPOINT_URL
  if [ "${1:-}" = proxy ]; then
    PROXY_PORT=$(free_port)
    /usr/bin/python3 "$here_e2e/ec2proxy.py" "$PROXY_PORT" "$AWS_ENDPOINT_URL" \
      "$AWS_SHARED_CREDENTIALS_FILE" >"$STATE_DIR/proxy.log" 2>&1 &
    e2e_pids+=($!)
    EC2_URL=http://127.0.0.1:$PROXY_PORT
    wait_for_status "$EC2_URL/__proxy/stats" 200 20 || { cat "$STATE_DIR/proxy.log"; exit 1; }
  fi
}

e2e_start_solver() {
  SOLVER_PORT=$(free_port)
  $(tls_as tailor-solver) "$BUILD/services/tailor-solver" --listen "tls+tcp://127.0.0.1:$SOLVER_PORT" \
    --http-listen "127.0.0.1:$(free_port)" "$@" >"$STATE_DIR/solver.log" 2>&1 &
  e2e_pids+=($!)
}

e2e_start_watcher() {
  WATCHER_PUB=$(free_port) WATCHER_DECISIONS=$(free_port) WATCHER_REP=$(free_port)
  local h=$(free_port)
  $(tls_as tailor-watcher) "$BUILD/services/tailor-watcher" --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$WATCHER_REP" \
    --publish "tls+tcp://127.0.0.1:$WATCHER_PUB" --decisions "tls+tcp://127.0.0.1:$WATCHER_DECISIONS" \
    --http-listen "127.0.0.1:$h" "$@" \
    >"$STATE_DIR/watcher.log" 2>&1 &
  e2e_pids+=($!)
  wait_for_status "http://127.0.0.1:$h/readyz" 200 30 || { tail "$STATE_DIR/watcher.log"; exit 1; }
}

# e2e_start_launcher [ARGS...]: appends to launcher.log (restarts keep history).
e2e_start_launcher() {
  LAUNCHER_HTTP=$(free_port)
  $(tls_as tailor-launcher) "$BUILD/services/tailor-launcher" --kubeconfig "$KUBECONFIG" --listen "tls+tcp://127.0.0.1:$(free_port)" \
    --publish "tls+tcp://127.0.0.1:$(free_port)" --http-listen "127.0.0.1:$LAUNCHER_HTTP" \
    --solver "tls+tcp://127.0.0.1:$SOLVER_PORT" --watcher "tls+tcp://127.0.0.1:$WATCHER_PUB" \
    ${WATCHER_REP:+--watcher-rep "tls+tcp://127.0.0.1:$WATCHER_REP"} \
    ${WATCHER_DECISIONS:+--decisions "tls+tcp://127.0.0.1:$WATCHER_DECISIONS"} \
    --cluster-name "$CLUSTER_NAME" --catalog "$CATALOG" --aws-endpoint "$EC2_URL" \
    --lifecycle-interval 500ms --gc-interval 5s "$@" >>"$STATE_DIR/launcher.log" 2>&1 &
  LAUNCHER_PID=$!
  e2e_pids+=($LAUNCHER_PID)
  wait_for_status "http://127.0.0.1:$LAUNCHER_HTTP/healthz" 200 30 ||
    { tail "$STATE_DIR/launcher.log"; exit 1; }
}

# e2e_general_pool [CPU_LIMIT]: the NodePool "general" (c/m/r, generation
# > 4, amd64, on-demand; a cpu limit when given) and its EC2NodeClass, YAML.
e2e_general_pool() {
  cat <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
YAML
  [ -z "${1:-}" ] || echo "  limits: {cpu: \"$1\"}"
  it_nodeclass KarpenterNodeRole-e2e
}

# e2e_wait_running N SECS: true once N pods are Running.
e2e_wait_running() {
  local want=$1 secs=$2 i running=0 t0=$SECONDS
  for ((i = 0; i < secs; i++)); do
    running=$($K get pods -A --no-headers 2>/dev/null | grep -c ' Running ' || true)
    [ "$running" -ge "$want" ] && { E2E_RUN_S=$((SECONDS - t0)); echo "  $running/$want pods Running after ${E2E_RUN_S}s"; return 0; }
    [ $((i % 10)) = 0 ] && echo "  ${i}s: $running/$want Running, $($K get nodeclaims --no-headers 2>/dev/null | wc -l) NodeClaims, $($K get nodes --no-headers 2>/dev/null | wc -l) nodes"
    sleep 1
  done
  echo "  only $running/$want pods Running after ${secs}s"
  return 1
}

# e2e_check [ARGS...]: consistency of EC2, NodeClaims, Nodes and pods
# (check.py); prints a JSON line of figures to $STATE_DIR/check.json.
e2e_check() {
  $K get pods,nodes,nodeclaims,events -A -o json >"$STATE_DIR/state.json"
  /usr/bin/python3 "$here_e2e/check.py" "$STATE_DIR/state.json" "$CLUSTER_NAME" "$@" \
    >"$STATE_DIR/check.json"
}

# e2e_settle SECONDS [ARGS...]: e2e_check until every instance has its
# NodeClaim and its Node (or SECONDS pass).  A claim launched in the last
# seconds of a burst is still booting when its pods are already Running
# elsewhere, and a leaked instance only goes after its GC grace; neither is
# a final state to judge.
e2e_settle() {
  local limit=$1 i
  shift
  for ((i = 0; i <= limit; i++)); do
    e2e_check "$@"
    [ "$(e2e_fig leaked)" = "[]" ] && [ "$(e2e_fig instances_without_node)" = "[]" ] &&
      [ "$(e2e_fig claims_without_instance)" = "[]" ] && return 0
    sleep 1
  done
  return 0
}

e2e_proxy() {   # e2e_proxy config '{"ice": [...]}' | e2e_proxy stats | e2e_proxy reset
  if [ "$1" = stats ]; then curl -fsS "$EC2_URL/__proxy/stats"
  else curl -fsS -X POST -H 'Content-Type: application/json' -d "${2:-{\}}" "$EC2_URL/__proxy/$1" >/dev/null; fi
}

e2e_fleets() {
  e2e_proxy stats | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["actions"].get("CreateFleet", 0))'
}

# jq-free field access to check.json: e2e_fig KEY
e2e_fig() {
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$STATE_DIR/check.json" "$1"
}

e2e_finish() {
  if [ "${FAILED:-0}" != 0 ]; then
    echo "--- launcher log (warnings, tail)"
    grep -E '"level":"(warn|error)"' "$STATE_DIR/launcher.log" | tail -n 15 || true
    # A pod provisioned twice: its two claims' story in the launcher's log.
    local how
    how=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get("double_how", [])))' \
      "$STATE_DIR/check.json" 2>/dev/null || echo "[]")
    if [ "$how" != "[]" ]; then
      echo "--- pods provisioned twice (first five): $how"
      for c in $(/usr/bin/python3 -c 'import json,sys; print(" ".join(sorted({x[k] for x in json.loads(sys.argv[1]) for k in ("first", "second")})))' "$how"); do
        echo "--- launcher log lines naming $c"
        grep -F "\"$c\"" "$STATE_DIR/launcher.log" | cut -c1-400 | head -n 12 || true
      done
      echo "--- batches"
      grep '"msg":"batch provisioned"' "$STATE_DIR/launcher.log" | cut -c1-400 || true
    fi
  fi
  finish
}
