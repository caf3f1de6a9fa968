#!/usr/bin/env bash
# tls_it.sh BUILD_DIR KUBESIM TLS_CALL PENDING_SUB - mutual TLS and
# authorization on the services' nng sockets, as a user (or an attacker on
# the network) meets them (docs/security.md):
#
#   1. a client without a certificate, or with one from another CA, gets
#      no connection; the service keeps serving;
#   2. per request type: an identity the route does not list is answered
#      AUTH naming identity and type (and logged), the listed one served;
#      Ping is open to every verified peer;
#   3. a subscriber with the wrong identity receives nothing while the
#      right one gets the batch (the watcher logs the refusal);
#   4. a re-issued certificate (files replaced in place) is served to new
#      connections without a restart; a bad new file is refused, logged,
#      and the old certificate kept;
#   5. plaintext tcp:// is refused at start (exit 2, clear message) unless
#      --insecure-transport, which is accepted with a warning.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
# Certificates of this test's own (rotation must not touch other tests').
export TAILOR_TEST_CERTS=$work/certs
. "$here/../lib.sh"
build=$1 kubesim=$2 call=$3 sub=$4
solver=$build/services/tailor-solver
certs=$TAILOR_TEST_CERTS
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT

s_rep=$(free_port) s_http=$(free_port)
$(tls_as tailor-solver) "$solver" --listen "$(nng_url "$s_rep")" --http-listen "127.0.0.1:$s_http" \
  >"$work/solver.log" 2>&1 & pids+=($!)
solver_pid=$!
l_rep=$(free_port) l_http=$(free_port)
# A launcher without Kubernetes or EC2 still serves (Ping; Launch and
# Terminate answered UNAVAILABLE): enough to see who reaches the handlers.
$(tls_as tailor-launcher) "$build/services/tailor-launcher" --listen "$(nng_url "$l_rep")" \
  --publish "$(nng_url "$(free_port)")" --http-listen "127.0.0.1:$l_http" \
  --kubeconfig "$work/none" --solver "$(nng_url "$s_rep")" >"$work/launcher.log" 2>&1 & pids+=($!)
wait_for_status "http://127.0.0.1:$s_http/readyz" 200 20
wait_for_status "http://127.0.0.1:$l_http/healthz" 200 20

ping_as() {   # ID URL [flags]: tailorctl ping as ID
  local id=$1 url=$2
  shift 2
  $(tls_as "$id") "$build/tools/tailorctl" ping --timeout 2s "$@" "$url"
}
call_as() {   # ID URL TYPE: print what the service answered
  $(tls_as "$1") "$call" "$2" "$3" || true
}

# --- 1. no certificate, a foreign CA ------------------------------------
check "tailorctl (its certificate) pings the solver" ping_as tailorctl "$(nng_url "$s_rep")"
check "TLS 1.2 client without a certificate: handshake refused" bash -c \
  "! openssl s_client -connect 127.0.0.1:$s_rep -CAfile '$certs/ca.crt' -tls1_2 </dev/null >'$work/nocert.out' 2>&1"
# TLS 1.3 refuses after the client's handshake: the server's alert can be
# lost to a reset on a loaded machine, so up to three tries; a server that
# took the session would never send it.
check "TLS 1.3 client without a certificate: no session (certificate required)" bash -c \
  "for i in 1 2 3; do
     openssl s_client -connect 127.0.0.1:$s_rep -CAfile '$certs/ca.crt' -tls1_3 -ign_eof </dev/null >'$work/nocert13.out' 2>&1
     grep -qi 'certificate required' '$work/nocert13.out' && exit 0
   done; cat '$work/nocert13.out'; exit 1"
check "TLS 1.1 is not offered" bash -c \
  "! openssl s_client -connect 127.0.0.1:$s_rep -CAfile '$certs/ca.crt' -cert '$certs/tailorctl.crt' \
     -key '$certs/tailorctl.key' -tls1_1 </dev/null >/dev/null 2>&1"
check "TLS 1.2 suites are ECDHE + AEAD only (CBC refused)" bash -c \
  "! openssl s_client -connect 127.0.0.1:$s_rep -CAfile '$certs/ca.crt' -cert '$certs/tailorctl.crt' \
     -key '$certs/tailorctl.key' -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA256 </dev/null >/dev/null 2>&1"
"$tailor_scripts/certs.sh" "$work/rogue" tailorctl
check "a certificate named tailorctl from another CA is refused" bash -c \
  "! TAILOR_TLS_CA='$certs/ca.crt' TAILOR_TLS_CERT='$work/rogue/tailorctl.crt' TAILOR_TLS_KEY='$work/rogue/tailorctl.key' \
     '$build/tools/tailorctl' ping --timeout 1s '$(nng_url "$s_rep")' >/dev/null 2>&1"
check "...and the solver serves on" ping_as tailorctl "$(nng_url "$s_rep")"
openssl s_client -connect "127.0.0.1:$s_rep" -CAfile "$certs/ca.crt" -cert "$certs/tailorctl.crt" \
  -key "$certs/tailorctl.key" </dev/null >/dev/null 2>&1 || true
check "a client that completes the handshake and hangs up leaves the solver serving" \
  ping_as tailorctl "$(nng_url "$s_rep")"

# --- 2. per request type --------------------------------------------------
check "Ping: any verified peer (tailor-watcher)" ping_as tailor-watcher "$(nng_url "$s_rep")"
out=$(call_as tailor-watcher "$(nng_url "$s_rep")" solve)
check "Solve from tailor-watcher: AUTH naming identity and type (got: $out)" \
  bash -c "grep -q '^AUTH: .*\"tailor-watcher\".*tailor.v1.SolveRequest' <<<'$out'"
out=$(call_as tailor-launcher "$(nng_url "$s_rep")" solve)
check "Solve from tailor-launcher: served (got: $out)" bash -c "! grep -q '^AUTH' <<<'$out' && ! grep -q '^UNAVAILABLE\|^TIMEOUT' <<<'$out'"
check "the solver logged the refusal" \
  grep -q '"msg":"request rejected".*"type":"tailor.v1.SolveRequest".*tailor-watcher' "$work/solver.log"
out=$(call_as tailor-watcher "$(nng_url "$l_rep")" launch)
check "Launch from tailor-watcher: AUTH (got: $out)" bash -c "grep -q '^AUTH: .*tailor-watcher.*LaunchRequest' <<<'$out'"
out=$(call_as tailor-disruptor "$(nng_url "$l_rep")" launch)
check "Launch from tailor-disruptor: reaches the launcher (got: $out)" bash -c "! grep -q '^AUTH\|^SETUP\|^TIMEOUT' <<<'$out'"
out=$(call_as tailor-solver "$(nng_url "$l_rep")" terminate)
check "Terminate from tailor-solver: AUTH (got: $out)" bash -c "grep -q '^AUTH: .*tailor-solver.*TerminateRequest' <<<'$out'"
out=$(call_as tailor-disruptor "$(nng_url "$l_rep")" terminate)
check "Terminate from tailor-disruptor: reaches the launcher (got: $out)" bash -c "! grep -q '^AUTH\|^SETUP\|^TIMEOUT' <<<'$out'"

# --- 3. pub/sub: the watcher's "pending" topic ----------------------------
. "$here/../tailorctl/kubesim.sh"
mkdir -p "$work/ks"
start_kubesim "$kubesim" "$work/ks"
pids+=("$KS_PID")
w_rep=$(free_port) w_pub=$(free_port) w_http=$(free_port)
$(tls_as tailor-watcher) "$build/services/tailor-watcher" --kubeconfig "$KS_KC" \
  --listen "$(nng_url "$w_rep")" --publish "$(nng_url "$w_pub")" --http-listen "127.0.0.1:$w_http" \
  --batch-idle 500ms --batch-max 5s >"$work/watcher.log" 2>&1 & pids+=($!)
wait_for_status "http://127.0.0.1:$w_http/readyz" 200 30
$(tls_as tailor-launcher) "$sub" "$(nng_url "$w_pub")" >"$work/good.out" 2>"$work/good.err" & pids+=($!)
$(tls_as tailor-solver) "$sub" "$(nng_url "$w_pub")" >"$work/bad.out" 2>"$work/bad.err" & pids+=($!)
sleep 1
$(kubectl_for 1.33) apply --validate=false -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: "64", memory: 512Gi}}}
YAML
check "tailor-launcher's subscription gets the pending batch" wait_until 15 grep -q '"huge"' "$work/good.out"
sleep 1
check "tailor-solver's subscription receives nothing" test ! -s "$work/bad.out"
check "the watcher logged the refused subscriber" \
  grep -q '"msg":"peer refused".*"identity":"tailor-solver"' "$work/watcher.log"

# --- 4. rotation without restart ------------------------------------------
served_serial() {
  openssl s_client -connect "127.0.0.1:$s_rep" -CAfile "$certs/ca.crt" -cert "$certs/tailorctl.crt" \
    -key "$certs/tailorctl.key" </dev/null 2>/dev/null | openssl x509 -noout -serial
}
old=$(served_serial)
check "the solver serves its certificate ($old)" test "$old" = "$(openssl x509 -noout -serial -in "$certs/tailor-solver.crt")"
CERTS_FORCE=1 "$tailor_scripts/certs.sh" "$certs" tailor-solver
new=$(openssl x509 -noout -serial -in "$certs/tailor-solver.crt")
check "re-issued: new connections get the new certificate ($new)" \
  wait_until 10 bash -c "[ \"\$(openssl s_client -connect 127.0.0.1:$s_rep -CAfile '$certs/ca.crt' \
    -cert '$certs/tailorctl.crt' -key '$certs/tailorctl.key' </dev/null 2>/dev/null | openssl x509 -noout -serial)\" = '$new' ]"
check "...logged with subject and notAfter" \
  bash -c "[ \$(grep -c '\"msg\":\"TLS certificate loaded\".*\"subject\":\"/O=tailor/CN=tailor-solver\".*\"not_after\"' '$work/solver.log') = 2 ]"
check "...by the same process" kill -0 "$solver_pid"
check "...which serves the launcher's Solve" bash -c "! grep -q '^AUTH\|^UNAVAILABLE\|^TIMEOUT' <<<'$(call_as tailor-launcher "$(nng_url "$s_rep")" solve)'"
cp "$certs/tailor-solver.crt" "$work/good.crt"
echo "not a certificate" >"$certs/tailor-solver.crt.tmp" && mv "$certs/tailor-solver.crt.tmp" "$certs/tailor-solver.crt"
check "a bad new certificate file is refused and logged" \
  wait_until 10 grep -q '"msg":"new TLS certificate files refused; keeping the old certificate"' "$work/solver.log"
check "...and the old certificate still serves" ping_as tailorctl "$(nng_url "$s_rep")"
check "...the same one" test "$(served_serial)" = "$new"
cp "$work/good.crt" "$certs/tailor-solver.crt"

# --- 5. plaintext ---------------------------------------------------------
p=$(free_port)
rc=0
$(tls_as tailor-solver) "$solver" --listen "tcp://127.0.0.1:$p" --http-listen "127.0.0.1:$(free_port)" \
  >"$work/plain.out" 2>"$work/plain.err" || rc=$?
check "tcp:// without --insecure-transport: exit 2 (got $rc)" test "$rc" = 2
check "...saying why" grep -q -- "tcp://127.0.0.1:$p is plaintext; use tls+tcp://.*--insecure-transport" "$work/plain.err"
h=$(free_port)
"$solver" --listen "tcp://127.0.0.1:$p" --http-listen "127.0.0.1:$h" --insecure-transport \
  >"$work/insecure.log" 2>&1 & pids+=($!)
check "tcp:// with --insecure-transport: serves" wait_for_status "http://127.0.0.1:$h/readyz" 200 10
check "...with a warning log line" \
  grep -q '"level":"warn".*"msg":"insecure transport: plaintext, unauthenticated connections allowed".*"url":"tcp://127.0.0.1:'"$p" "$work/insecure.log"
check "tailorctl refuses tcp:// without --insecure-transport" bash -c \
  "'$build/tools/tailorctl' ping 'tcp://127.0.0.1:$p' >/dev/null 2>&1; [ \$? = 2 ]"
check "tailorctl ping --insecure-transport tcp:// works" \
  "$build/tools/tailorctl" ping --insecure-transport "tcp://127.0.0.1:$p"
finish
