#!/usr/bin/env bash
# kube_it.sh KUBESIM KUBE_IT - start kubesim with HTTPS, a bearer token and
# a short event history (so an old resourceVersion expires: 410), then run
# kube_it against the kubeconfig kubesim wrote (its CA and token).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
kubesim=$1
kube_it=$2
work=$(mktemp -d)
port=$(free_port)
tport=$(free_port)
"$kubesim" --listen "127.0.0.1:$port" --tls-listen "127.0.0.1:$tport" --data-dir "$work" \
  --token kube-it-token --kubeconfig-out "$work/kc" --bookmark-interval 1s --history 16 \
  >"$work/out" 2>"$work/err" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
if ! wait_for_status "http://127.0.0.1:$port/healthz" 200 20; then
  echo "kubesim did not start; its log:" >&2
  tail -20 "$work/err" >&2
  exit 1
fi
for _ in $(seq 50); do [ -s "$work/kc" ] && break; sleep 0.1; done
grep -q "certificate-authority" "$work/kc" || { echo "FAIL: kubeconfig has no CA"; exit 1; }
"$kube_it" "$work/kc"
