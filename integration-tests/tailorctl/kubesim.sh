# kubesim.sh - start kubesim over HTTPS for a tailorctl test (sourced).
#
#   start_kubesim KUBESIM WORKDIR   sets KS_PID, KS_KC (kubeconfig), KS_URL
#                                   (plain HTTP, for health), KS_TOKEN
#   kubectl_for VERSION             prints the kubectl command line for it
#   stop_kubesim                    SIGTERM, wait
#
# kubesim writes a kubeconfig with its generated CA and the token; real
# kubectl and tailorctl both use it, with TLS verification on.

start_kubesim() {
  local bin=$1 dir=$2 port tport
  port=$(free_port)
  tport=$(free_port)
  KS_TOKEN=tailorctl-it-token
  "$bin" --listen "127.0.0.1:$port" --tls-listen "127.0.0.1:$tport" --data-dir "$dir" \
    --token "$KS_TOKEN" --kubeconfig-out "$dir/kc" >"$dir/kubesim.out" 2>"$dir/kubesim.err" &
  KS_PID=$!
  KS_URL="http://127.0.0.1:$port"
  KS_KC="$dir/kc"
  if ! wait_for_status "$KS_URL/healthz" 200 20; then
    echo "kubesim did not start; its log:" >&2
    tail -20 "$dir/kubesim.err" >&2
    return 1
  fi
  for _ in $(seq 50); do [ -s "$KS_KC" ] && break; sleep 0.1; done
  [ -s "$KS_KC" ]
}

kubectl_for() {
  echo "/usr/lib/google-cloud-sdk/bin/kubectl.$1 --kubeconfig $KS_KC --cache-dir $KS_KC.cache-$1"
}

stop_kubesim() {
  if [ -n "${KS_PID:-}" ]; then
    kill -TERM "$KS_PID" 2>/dev/null || true
    wait "$KS_PID" 2>/dev/null || true
    KS_PID=
  fi
}
