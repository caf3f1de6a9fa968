#!/usr/bin/env bash
# moto_it.sh AWS_IT - run common/aws against a real moto server.
#
# Starts moto on a free loopback port with INITIAL_NO_AUTH_ACTION_COUNT=3,
# so the IT program's first three calls (IAM CreateUser, PutUserPolicy,
# CreateAccessKey) pass unauthenticated and every later call must carry a
# valid SigV4 signature from the key it created.  Then runs AWS_IT
# (aws_it.c) against it.  Exit 77 (skipped) when no Python with moto.
# A second moto, with no IAM user and so no authentication, serves the EKS
# REST GET: moto cannot verify a signed GET (botocore's own DescribeCluster
# gets SignatureDoesNotMatch from it the same way); the signing of GETs is
# covered by the SigV4 test vectors (common/aws/sigv4_test.c).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
it=${1:?usage: moto_it.sh AWS_IT}

# moto lives in the pyenv Python (DEVELOPERS notes); /usr/bin/python3 lacks it.
py=""
for cand in "${TAILOR_MOTO_PYTHON:-}" python3 /root/.pyenv/shims/python3; do
  [ -n "$cand" ] || continue
  if "$cand" -c 'import moto.server' 2>/dev/null; then py=$cand; break; fi
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with moto (pip install 'moto[server]')"
  exit 77
fi

port=$(free_port)
log=$(mktemp /tmp/moto_it.XXXXXX.log)
INITIAL_NO_AUTH_ACTION_COUNT=3 "$py" -m moto.server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto=$!
port2=$(free_port)
"$py" -m moto.server -H 127.0.0.1 -p "$port2" >>"$log" 2>&1 &
moto2=$!
cleanup() {
  kill "$moto" "$moto2" 2>/dev/null || true
  wait "$moto" "$moto2" 2>/dev/null || true
  rm -f "$log"
}
trap cleanup EXIT

# /moto-api/ is moto's own dashboard: it does not count as an AWS action.
wait_for_status "http://127.0.0.1:$port/moto-api/" 200 30 || { cat "$log"; exit 1; }
wait_for_status "http://127.0.0.1:$port2/moto-api/" 200 30 || { cat "$log"; exit 1; }

rc=0
"$it" "http://127.0.0.1:$port" "http://127.0.0.1:$port2" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "--- moto log (tail) ---"
  tail -n 30 "$log"
fi
exit "$rc"
