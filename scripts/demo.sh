#!/usr/bin/env bash
# demo.sh BUILD_DIR - the README's first command (make demo).
#
# Today: starts the four services (two solver replicas) on loopback, waits
# for each to be ready, pings every endpoint through the real nng
# transport, shows /metrics figures, then stops them with SIGTERM and
# checks they exit cleanly.  The provisioning work turns this into the
# full local demo (kubesim + moto + a workload).
# DEMO_HOLD=1 keeps the services running until Ctrl-C.
set -euo pipefail
build=${1:-build/release}
bin="$build/services"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../integration-tests/lib.sh"
logdir=$(mktemp -d /tmp/tailor-demo.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# name  binary   extra args
declare -a names=(watcher solver-a solver-b launcher disruptor)
declare -A http rep
step "starting services (logs in $logdir)"
for name in "${names[@]}"; do
  svc=${name%%-*}
  http[$name]=$(free_port)
  rep[$name]=$(free_port)
  args=(--http-listen "127.0.0.1:${http[$name]}" --listen "tcp://127.0.0.1:${rep[$name]}")
  [ "$svc" = solver ] || args+=(--publish "tcp://127.0.0.1:$(free_port)")
  "$bin/tailor-$svc" "${args[@]}" 2>"$logdir/$name.log" &
  pids+=($!)
  printf '  %-10s pid %-7s nng tcp://127.0.0.1:%-6s http 127.0.0.1:%s\n' \
    "$name" "$!" "${rep[$name]}" "${http[$name]}"
done

step "waiting for /readyz"
for name in "${names[@]}"; do
  wait_for_status "http://127.0.0.1:${http[$name]}/readyz" 200 20
  printf '  %-10s healthz %s  readyz %s\n' "$name" \
    "$(http_status "http://127.0.0.1:${http[$name]}/healthz")" \
    "$(http_status "http://127.0.0.1:${http[$name]}/readyz")"
done

step "ping over nng (tailorctl ping)"
urls=()
for name in "${names[@]}"; do urls+=("tcp://127.0.0.1:${rep[$name]}"); done
"$build/tools/tailorctl" ping "${urls[@]}"

step "metrics"
for name in "${names[@]}"; do
  m=$(http_get "http://127.0.0.1:${http[$name]}/metrics")
  rss=$(awk '/^process_resident_memory_bytes /{printf "%.1f MiB", $2/1048576}' <<<"$m")
  pings=$(awk '/^tailor_rpc_requests_total\{type="tailor.v1.PingRequest"/{s+=$2} END{print s+0}' <<<"$m")
  printf '  %-10s rss %-10s pings answered %s\n' "$name" "$rss" "$pings"
done

if [ "${DEMO_HOLD:-0}" = 1 ]; then
  step "running; Ctrl-C stops"
  wait
fi

step "stopping (SIGTERM)"
trap - EXIT INT
status=0
for i in "${!names[@]}"; do
  kill -TERM "${pids[$i]}"
  wait_exit "${pids[$i]}" 10; rc=$WAIT_RC
  printf '  %-10s exit %s\n' "${names[$i]}" "$rc"
  [ "$rc" = 0 ] || status=1
done
echo
[ $status = 0 ] && echo "demo: all services started, answered and stopped cleanly" ||
  echo "demo: a service did not stop cleanly; see $logdir"
exit $status
