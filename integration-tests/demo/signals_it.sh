#!/usr/bin/env bash
# signals_it.sh BUILD_DIR - make demo stopped as a CI runner or a closed
# terminal stops it: TERM (and HUP) to the demo's shell alone, while the
# services run, leaves nothing behind -- no moto, no kubesim, no tailor
# service of that demo.  (Ctrl-C reaches the whole process group; TERM from
# a runner reaches the script only, so the script itself must clean up.)
set -euo pipefail
BUILD=$(cd "${1:?usage: signals_it.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/integration-tests/lib.sh"

left() {   # processes whose command line names the demo's folder
  { pgrep -f "$1" || true; } | wc -l
}

for sig in TERM HUP; do
  out=$(mktemp -d /tmp/demo-sig.XXXXXX)
  DEMO_OUT=$out/d setsid bash "$repo/scripts/demo.sh" "$BUILD" >"$out/demo.log" 2>&1 &
  pid=$!
  # wait for the services: the demo narrates pods once they run
  for _ in $(seq 1 120); do
    grep -q "pending" "$out/demo.log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  check "$sig: the demo is running with its local cluster" \
    test -s "$out/d/cluster/kubesim.pid" -a -s "$out/d/cluster/moto.pid"
  before=$(left "$out/d")
  moto=$(cat "$out/d/cluster/moto.pid" 2>/dev/null || echo 0)
  ks=$(cat "$out/d/cluster/kubesim.pid" 2>/dev/null || echo 0)
  kill -s "$sig" "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  sleep 1
  check "$sig: the demo exits" bash -c "! kill -0 $pid 2>/dev/null"
  n=$(left "$out/d")
  check "$sig: nothing of it is left ($before processes before, $n after)" test "$n" -eq 0
  check "$sig: moto (pid $moto) and kubesim (pid $ks) are stopped" \
    bash -c "! kill -0 $moto 2>/dev/null && ! kill -0 $ks 2>/dev/null"
  if [ "$n" -ne 0 ]; then
    pgrep -fa "$out/d" || true
    pkill -f "$out/d" || true
  fi
  kill "$moto" "$ks" 2>/dev/null || true
  rm -rf "$out"
done
finish
