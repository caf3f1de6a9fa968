# lib.sh - shell helpers for integration tests (sourced, not run).
# Every helper fails loudly; tests use `set -euo pipefail`.

tailor_scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")/../scripts" && pwd)

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now and
# that no other test was given in the last two minutes (scripts/free-port.py:
# two services of one test, or two tests in parallel, never race for one).
free_port() {
  /usr/bin/python3 "$tailor_scripts/free-port.py"
}

# promtool_check FILE: `promtool check metrics` on a /metrics page.  A
# parse error always fails; a lint finding fails unless it is about a
# metric Karpenter itself names that way and tailor exposes under that name
# for its dashboards (integration-tests/metrics/karpenter_metrics.txt, e.g.
# karpenter_cluster_state_node_count, a gauge ending in _count).  Prints
# the findings that count.
promtool_check() {
  local list out rc=0
  list="$(dirname "${BASH_SOURCE[0]}")/metrics/karpenter_metrics.txt"
  out=$(promtool check metrics <"$1" 2>&1) || rc=$?
  [ "$rc" = 0 ] && return 0
  grep -q 'error while linting' <<<"$out" && { echo "$out" >&2; return 1; }
  out=$(while read -r name rest; do
          [ -z "$name" ] && continue
          grep -q "^$name | .* | exposed | " "$list" || echo "$name $rest"
        done <<<"$out")
  [ -z "$out" ] && return 0
  echo "$out" >&2
  return 1
}

# http_get URL: print the body; return non-zero unless the status is 2xx.
http_get() {
  curl -fsS --max-time 5 "$1"
}

# http_status URL: print just the status code (000 when nothing answers).
http_status() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$1" || true
}

# wait_for_status URL CODE SECONDS: poll until URL answers CODE.
wait_for_status() {
  local url=$1 want=$2 secs=$3 i
  for ((i = 0; i < secs * 10; i++)); do
    [ "$(http_status "$url")" = "$want" ] && return 0
    sleep 0.1
  done
  echo "timeout: $url never answered $want (last: $(http_status "$url"))" >&2
  return 1
}

# wait_exit PID SECONDS: wait for child PID to exit; its exit status is
# left in WAIT_RC (137 when it had to be killed after SECONDS).  Not for
# use inside $(...): a subshell cannot wait for its parent's children.
wait_exit() {
  local pid=$1 secs=$2 killer
  # The watchdog's sleep is killed once pid is reaped, which skips the
  # rest of its && chain, so it exits quietly.
  # Its threads' stacks go to stderr first, so the log says where it hung.
  (sleep "$secs" && echo "timeout: pid $pid still running after ${secs}s; its threads:" >&2 &&
    { ! command -v gdb >/dev/null ||
      timeout 60 gdb -p "$pid" -batch -nx -ex "thread apply all bt" 2>/dev/null |
      grep -E '^(Thread|#)' | cut -c1-200 | head -n 80 >&2 || true; } &&
    kill -9 "$pid" 2>/dev/null) &
  killer=$!
  WAIT_RC=0
  wait "$pid" || WAIT_RC=$?
  pkill -PIPE -P "$killer" sleep 2>/dev/null || true   # bash reports no SIGPIPE deaths
  wait "$killer" 2>/dev/null || true
}

# stop_service NAME PID [LOG]: SIGTERM a service and wait for it; a
# service still running 15 s later is a defect (a pod's
# terminationGracePeriod would SIGKILL it): print the end of its LOG and
# its threads' stacks (gdb) so the CI log says where it hung, kill it, and
# count a FAIL.
stop_service() {
  local name=$1 pid=$2 log=${3:-} secs=15 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < secs * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  echo "FAIL: $name (pid $pid) still running ${secs}s after SIGTERM"
  [ -n "$log" ] && [ -f "$log" ] && tail -n 6 "$log" | cut -c1-300
  echo "its threads:"
  if command -v gdb >/dev/null; then
    timeout 60 gdb -p "$pid" -batch -nx -ex "thread apply all bt" 2>/dev/null |
      grep -E '^(Thread|#)' | cut -c1-200 | head -n 80 || true
  fi
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  FAILED=$((${FAILED:-0} + 1))
}

# wait_until SECONDS CMD...: poll CMD (output dropped) every 0.5 s until
# it succeeds; false when it never did.
wait_until() {
  local secs=$1 i
  shift
  for ((i = 0; i < secs * 2; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

# check NAME CONDITION...: run the condition; print PASS/FAIL and count.
PASSED=0
FAILED=0
check() {
  local name=$1
  shift
  if "$@"; then
    echo "PASS: $name"
    PASSED=$((PASSED + 1))
  else
    echo "FAIL: $name"
    FAILED=$((FAILED + 1))
  fi
}

# finish: the summary line ctest and CI read; non-zero if anything failed.
finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

# ---- mutual TLS (docs/security.md) --------------------------------------
# Every test runs the services' nng sockets over tls+tcp:// with client
# certificates.  Sourcing this file makes (once; scripts/certs.sh is
# idempotent and locked) a CA and one certificate per identity in
# $TAILOR_TEST_CERTS; each process gets the CA and its own certificate
# and key from tls_as:
#
#   $(tls_as tailor-solver) "$build/services/tailor-solver" \
#       --listen "$(nng_url "$port")" ... &
#   $(tls_as tailorctl) "$build/tools/tailorctl" ping "$(nng_url "$port")"
#
# (tls_as prints `env TAILOR_TLS_CA=... TAILOR_TLS_CERT=... TAILOR_TLS_KEY=...`;
# env execs the command, so $! is still the service's pid.)  tls_env ID
# exports the three into the current shell instead.
export TAILOR_TEST_CERTS=${TAILOR_TEST_CERTS:-${TMPDIR:-/tmp}/tailor-test-certs.$(id -u)}
"$tailor_scripts/certs.sh" "$TAILOR_TEST_CERTS" >/dev/null

# tls_as ID: the env prefix that gives a command ID's certificate.
tls_as() {
  echo "env TAILOR_TLS_CA=$TAILOR_TEST_CERTS/ca.crt TAILOR_TLS_CERT=$TAILOR_TEST_CERTS/$1.crt" \
    "TAILOR_TLS_KEY=$TAILOR_TEST_CERTS/$1.key"
}

# tls_env ID: export the CA and ID's certificate and key (TAILOR_TLS_*).
tls_env() {
  export TAILOR_TLS_CA=$TAILOR_TEST_CERTS/ca.crt TAILOR_TLS_CERT=$TAILOR_TEST_CERTS/$1.crt \
    TAILOR_TLS_KEY=$TAILOR_TEST_CERTS/$1.key
}

# nng_url PORT: the URL tests listen and dial on.
nng_url() {
  echo "tls+tcp://127.0.0.1:$1"
}

# --- manifests: the objects most tests apply, YAML on stdout --------------
# Each prints one document that starts with "---", so they concatenate.

# it_nodeclass [ROLE]: the EC2NodeClass "default" (AL2023 alias, the
# subnets and security groups scripts/local-cluster.sh tags).
it_nodeclass() {
  cat <<YAML
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: ${1:-KarpenterNodeRole-it}
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
YAML
}

# it_deployment NAME REPLICAS CPU MEMORY [POD_SPEC_LINES]: a Deployment in
# default whose pods (label app=NAME) request CPU and MEMORY; the lines
# (indented six spaces) go into the pod spec.
it_deployment() {
  cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: default}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
${5:-}
      containers:
      - {name: c, image: app, resources: {requests: {cpu: "$3", memory: $4}}}
YAML
}

# it_pdb APP FIELD VALUE: the PodDisruptionBudget APP-pdb in default over
# app=APP, FIELD maxUnavailable or minAvailable.
it_pdb() {
  cat <<YAML
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: $1-pdb, namespace: default}
spec:
  $2: $3
  selector: {matchLabels: {app: $1}}
YAML
}
