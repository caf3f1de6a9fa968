#!/usr/bin/env bash
# smoke.sh BIN_DIR [valgrind]
# Every service binary as a user meets it: --help, a bad flag, start-up,
# /healthz, /readyz, /metrics (checked by promtool), JSON log lines, and a
# clean exit 0 on SIGTERM.  With "valgrind", each service runs under
# valgrind and must report no leaks and no errors on a normal start/stop.
# The watcher needs a cluster: it gets a kubesim of its own (HTTPS, token)
# and is ready only once every informer has synced.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
bindir=$1
mode=${2:-plain}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
kubesim="$bindir/../integration-tests/kubesim/kubesim"
kpid=

# start_kubesim: a kubesim on loopback writing $work/kc; sets kpid.
start_kubesim() {
  local port tport
  port=$(free_port)
  tport=$(free_port)
  "$kubesim" --listen "127.0.0.1:$port" --tls-listen "127.0.0.1:$tport" --data-dir "$work/kubesim" \
    --token smoke-token --kubeconfig-out "$work/kc" >"$work/kubesim.out" 2>"$work/kubesim.err" &
  kpid=$!
  wait_for_status "http://127.0.0.1:$port/healthz" 200 20 || { tail -20 "$work/kubesim.err" >&2; return 1; }
  for _ in $(seq 50); do [ -s "$work/kc" ] && return 0; sleep 0.1; done
  echo "kubesim wrote no kubeconfig" >&2
  return 1
}

# version_names_commit PROG BIN: BIN --version is "PROG 0.1.0 (commit C,
# contract tailor.v1)" with C this checkout's commit (what the build saw).
commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
version_names_commit() {
  local out
  out=$("$2" --version) || return 1
  [[ "$out" =~ ^$1\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ $commit(-dirty)?,\ contract\ tailor\.v1\)$ ]] ||
    { echo "got: $out (want commit $commit)" >&2; return 1; }
}
if [ "$mode" = plain ]; then
  check "tailorctl --version names the commit" \
    version_names_commit tailorctl "$bindir/../tools/tailorctl"
fi

for svc in watcher solver launcher disruptor; do
  bin="$bindir/tailor-$svc"
  if [ "$mode" = plain ]; then
    check "$svc --version names the commit" version_names_commit "tailor-$svc" "$bin"
    check "$svc --help lists the common and own settings" \
      bash -c "'$bin' --help | grep -q -- '--http-listen' && '$bin' --help | grep -q -- '--listen'"
    check "$svc rejects an unknown flag with exit 2" \
      bash -c "'$bin' --no-such-flag >/dev/null 2>&1; [ \$? -eq 2 ]"
    check "$svc rejects a bad log level with exit 2" \
      bash -c "'$bin' --log-level=loud >/dev/null 2>&1; [ \$? -eq 2 ]"
  fi

  hport=$(free_port)
  nport=$(free_port)
  args=(--http-listen "127.0.0.1:$hport" --listen "tls+tcp://127.0.0.1:$nport")
  [ "$svc" = watcher ] || [ "$svc" = launcher ] || [ "$svc" = disruptor ] &&
    args+=(--publish "tls+tcp://127.0.0.1:$(free_port)")
  if [ "$svc" = watcher ]; then
    check "kubesim starts for the watcher" start_kubesim
    args+=(--kubeconfig "$work/kc")
  fi
  log="$work/$svc.log"
  tls_env "tailor-$svc"   # mutual TLS on (lib.sh)
  if [ "$mode" = valgrind ]; then
    valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible \
      --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
      --log-file="$work/$svc.vg" "$bin" "${args[@]}" 2>"$log" &
    secs=60
  else
    "$bin" "${args[@]}" 2>"$log" &
    secs=10
  fi
  pid=$!
  check "$svc /healthz answers 200" wait_for_status "http://127.0.0.1:$hport/healthz" 200 "$secs"
  check "$svc /readyz answers 200" wait_for_status "http://127.0.0.1:$hport/readyz" 200 "$secs"
  check "$svc answers tailorctl ping over mutual TLS" \
    $(tls_as tailorctl) "$bindir/../tools/tailorctl" ping --timeout 10s "tls+tcp://127.0.0.1:$nport"
  http_get "http://127.0.0.1:$hport/metrics" >"$work/$svc.metrics" || true
  check "$svc /metrics passes promtool check metrics (Karpenter's own names aside)" \
    promtool_check "$work/$svc.metrics"
  check "$svc /metrics has build info and process metrics" \
    bash -c "grep -q '^tailor_build_info{' '$work/$svc.metrics' && grep -q '^process_resident_memory_bytes ' '$work/$svc.metrics'"
  check "$svc unknown path is 404" test "$(http_status "http://127.0.0.1:$hport/nope")" = 404
  kill -TERM "$pid"
  wait_exit "$pid" "$secs"; rc=$WAIT_RC
  check "$svc exits 0 on SIGTERM (got $rc)" test "$rc" = 0
  if [ "$rc" != 0 ]; then   # a sanitizer's or abort's report is not JSON
    echo "--- $svc: what its log holds that is not JSON"
    grep -v '^{' "$log" | head -n 80 || true
  fi
  if [ -n "$kpid" ]; then
    kill -TERM "$kpid" 2>/dev/null || true
    wait "$kpid" 2>/dev/null || true
    kpid=
  fi
  check "$svc logs only JSON lines with ts, level, service, msg" \
    /usr/bin/python3 -c '
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
assert lines, "no log lines"
for l in lines:
    o = json.loads(l)
    assert {"ts", "level", "service", "msg"} <= o.keys(), l
assert any(json.loads(l)["msg"] == "stopped" for l in lines), "no stopped line"
' "$log"
  if [ "$mode" = valgrind ]; then
    check "$svc valgrind: no leaks, no errors" \
      bash -c "grep -q 'ERROR SUMMARY: 0 errors' '$work/$svc.vg' || { cat '$work/$svc.vg'; false; }"
  fi
done
finish
