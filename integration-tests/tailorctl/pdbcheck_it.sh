#!/usr/bin/env bash
# pdbcheck_it.sh TAILORCTL KUBESIM - tailorctl pdb-check on a fixture
# cluster with six planted PDB problems (fixtures/pdb/cluster.yaml): the
# manifests, then the same objects applied with real kubectl to kubesim
# (whose controllers create the pods) and checked live; every planted
# problem is found and nothing else.  Then --serve as an admission
# webhook over TLS: real AdmissionReview v1 documents posted with curl
# and with Python's ssl client, both verifying the server certificate;
# a namespace the API server would refuse ('..') is answered 400 Invalid
# with no API call; lookups are cached (kubesim's debug log counts the
# calls); TLS 1.1 and TLS 1.2 suites that are not ECDHE + AEAD are
# refused; a rotated certificate is served without a
# restart and a broken one is not taken.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
. "$here/kubesim.sh"
tctl=$1
kubesim=$2
fx=$here/fixtures/pdb
work=$(mktemp -d)
wpid=
cleanup() {
  [ -n "$wpid" ] && kill "$wpid" 2>/dev/null && wait "$wpid" 2>/dev/null
  stop_kubesim
  rm -rf "$work"
}
trap cleanup EXIT

want='blocks-eviction data/PodDisruptionBudget/cache
blocks-eviction data/PodDisruptionBudget/db
blocks-eviction shop/PodDisruptionBudget/web-strict
multiple-pdbs shop/Deployment/api
selects-no-pods batch/PodDisruptionBudget/worker-v1
single-replica-unprotected ml/Deployment/notebook'
findings() {  # findings FILE: "rule ns/Kind/name" per finding, from -o json
  python3 -c 'import json,sys
for f in json.load(open(sys.argv[1]))["findings"]: print(f["rule"], "%s/%s/%s" % (f["namespace"], f["kind"], f["name"]))' "$1"
}
run() {  # run NAME ARGS...
  local name=$1
  shift
  RC=0
  "$tctl" pdb-check "$@" >"$work/$name.out" 2>"$work/$name.err" || RC=$?
}

# --- manifests ------------------------------------------------------------------
run files "$fx/cluster.yaml" -o json
check "files: findings exit 3" [ "$RC" -eq 3 ]
check "files: exactly the six planted problems" [ "$(findings "$work/files.out")" = "$want" ]
run files-text "$fx/cluster.yaml"
check "text table names rule, severity and object" grep -q "blocks-eviction *error *shop *PodDisruptionBudget/web-strict" "$work/files-text.out"
check "text says how to fix it" grep -q "use maxUnavailable 1" "$work/files-text.out"
run errors-only "$fx/cluster.yaml" --fail-on error -n ml
check "--fail-on error: warnings alone exit 0" [ "$RC" -eq 0 ]
run never "$fx/cluster.yaml" --fail-on never
check "--fail-on never: exit 0" [ "$RC" -eq 0 ]
printf 'apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {maxUnavailable: [1]}\n' >"$work/bad.yaml"
run bad "$work/bad.yaml"
check "malformed PDB: exit 2 naming the file" bash -c "[ $RC -eq 2 ] && grep -q 'bad.yaml' '$work/bad.err'"

# --- live, on kubesim -------------------------------------------------------------
KUBESIM_LOG_LEVEL=debug start_kubesim "$kubesim" "$work"   # debug: one log line per request
K=$(kubectl_for 1.33)
cat >"$work/node.json" <<'JSON'
{"apiVersion":"v1","kind":"Node","metadata":{"name":"legacy-1","labels":{"kubernetes.io/hostname":"legacy-1"}},
 "spec":{},"status":{"conditions":[{"type":"Ready","status":"True"}],
 "allocatable":{"cpu":"32","memory":"128Gi","pods":"110"},"capacity":{"cpu":"32","memory":"128Gi","pods":"110"}}}
JSON
$K create --validate=false -f "$work/node.json" >/dev/null
check "kubectl applies the fixture cluster" bash -c "$K apply --validate=false -f '$fx/cluster.yaml' >/dev/null"
for _ in $(seq 100); do
  [ "$($K get pods -A -o name 2>/dev/null | wc -l)" -ge 26 ] && break
  sleep 0.2
done
check "kubesim's controllers created the 26 pods" [ "$($K get pods -A -o name | wc -l)" -eq 26 ]
run live --kubeconfig "$KS_KC" -o json
check "live: findings exit 3" [ "$RC" -eq 3 ]
check "live: exactly the six planted problems" [ "$(findings "$work/live.out")" = "$want" ]
run live-ns --kubeconfig "$KS_KC" -n shop -o json
check "live -n shop: only shop's" [ "$(findings "$work/live-ns.out")" = "$(grep ' shop/' <<<"$want")" ]
KUBECONFIG=$KS_KC "$tctl" pdb-check --namespace batch -o json >"$work/env.out" 2>&1 || true
check "KUBECONFIG is honoured" [ "$(findings "$work/env.out")" = "$(grep ' batch/' <<<"$want")" ]
# fix two problems the way the messages say, and check again
$K -n shop patch pdb web-strict --type merge -p '{"spec":{"maxUnavailable":1}}' >/dev/null
$K -n ml scale deploy notebook --replicas 2 >/dev/null
$K -n ml apply --validate=false -f - >/dev/null <<'YAML'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: notebook, namespace: ml}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: notebook}}}
YAML
run fixed --kubeconfig "$KS_KC" -o json
check "after the fixes: four findings left" [ "$(findings "$work/fixed.out" | wc -l)" -eq 4 ]
check "after the fixes: web-strict and notebook are gone" bash -c \
  "! grep -qE 'web-strict|notebook' <<<\"\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])))' '$work/fixed.out')\""
run nocluster --kubeconfig "$work/missing-kubeconfig"
check "unreadable kubeconfig: exit 1" [ "$RC" -eq 1 ]

# --- the admission webhook over TLS --------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" -days 1 \
  -subj /CN=tailor-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$work/srv.key" -out "$work/srv.csr" \
  -subj /CN=tailor-pdb-webhook 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$work/san.ext"
openssl x509 -req -in "$work/srv.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -out "$work/srv.crt" -days 1 -extfile "$work/san.ext" 2>/dev/null
wport=$(free_port)
"$tctl" pdb-check --serve --listen "127.0.0.1:$wport" --tls-cert "$work/srv.crt" \
  --tls-key "$work/srv.key" --kubeconfig "$KS_KC" >"$work/webhook.out" 2>"$work/webhook.err" &
wpid=$!
up=0
for _ in $(seq 50); do
  curl -fsS --cacert "$work/ca.crt" "https://127.0.0.1:$wport/healthz" >/dev/null 2>&1 && { up=1; break; }
  sleep 0.1
done
check "webhook serves /healthz over TLS" [ "$up" = 1 ]
check "TLS is verified: a client without the CA is refused" bash -c \
  "! curl -fsS 'https://127.0.0.1:$wport/healthz' >/dev/null 2>&1"

review() {  # review UID OP NAMESPACE NAME SPEC-JSON: an AdmissionReview as the API server sends it
  cat <<JSON
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
 "uid":"$1","kind":{"group":"policy","version":"v1","kind":"PodDisruptionBudget"},
 "resource":{"group":"policy","version":"v1","resource":"poddisruptionbudgets"},
 "requestKind":{"group":"policy","version":"v1","kind":"PodDisruptionBudget"},
 "requestResource":{"group":"policy","version":"v1","resource":"poddisruptionbudgets"},
 "name":"$4","namespace":"$3","operation":"$2",
 "userInfo":{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]},
 "object":{"apiVersion":"policy/v1","kind":"PodDisruptionBudget",
   "metadata":{"name":"$4","namespace":"$3","uid":"3a1c2b1e-0000-4000-8000-000000000001",
     "creationTimestamp":"2026-01-01T00:00:00Z"},
   "spec":$5},
 "oldObject":null,"dryRun":false,
 "options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions","fieldManager":"kubectl-client-side-apply"}}}
JSON
}
post() {  # post NAME: POST $work/NAME.json, answer in $work/NAME.resp
  curl -sS --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
    --data-binary "@$work/$1.json" "https://127.0.0.1:$wport/validate" >"$work/$1.resp"
}
answer() {  # answer NAME EXPR: a Python expression over the AdmissionReview answer a
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$work/$1.resp" "$2"
}
review 11111111-aaaa-4bbb-8ccc-000000000001 CREATE shop block \
  '{"maxUnavailable":0,"selector":{"matchLabels":{"app":"checkout"}}}' >"$work/block.json"
post block
check "webhook rejects a blocking PDB (maxUnavailable 0)" answer block \
  'a["response"]["allowed"] is False and a["response"]["status"]["code"]==403 and "blocks-eviction" in a["response"]["status"]["message"]'
check "the answer carries the request's uid" answer block \
  'a["response"]["uid"]=="11111111-aaaa-4bbb-8ccc-000000000001" and a["kind"]=="AdmissionReview" and a["apiVersion"]=="admission.k8s.io/v1"'
review 11111111-aaaa-4bbb-8ccc-000000000002 CREATE data all-search \
  '{"minAvailable":4,"selector":{"matchLabels":{"app":"search"}}}' >"$work/minall.json"
post minall
check "webhook reads the cluster: minAvailable 4 of search's 4 replicas is refused" answer minall \
  'a["response"]["allowed"] is False and "needs all 4 pods" in a["response"]["status"]["message"]'
review 11111111-aaaa-4bbb-8ccc-000000000003 CREATE data search \
  '{"minAvailable":3,"selector":{"matchLabels":{"app":"search"}}}' >"$work/ok.json"
post ok
check "webhook admits minAvailable 3 of 4 (replacing search's own PDB)" answer ok 'a["response"]["allowed"] is True'
review 11111111-aaaa-4bbb-8ccc-000000000004 CREATE batch second \
  '{"maxUnavailable":1,"selector":{"matchLabels":{"app":"worker"}}}' >"$work/overlap.json"
post overlap
check "webhook refuses a second PDB over the same pods" answer overlap \
  'a["response"]["allowed"] is False and "selected by 2 PDBs (second, worker)" in a["response"]["status"]["message"]'
review 11111111-aaaa-4bbb-8ccc-000000000005 CREATE batch early \
  '{"maxUnavailable":1,"selector":{"matchLabels":{"app":"not-yet"}}}' >"$work/early.json"
post early
check "a PDB that selects nothing yet is admitted with a warning" answer early \
  'a["response"]["allowed"] is True and any("selects no pods" in w for w in a["response"]["warnings"])'
# Python's ssl client over a kept-alive connection, as the API server's
# webhook client sends (no "Connection: close"): nng 1.5.2's HTTP server,
# asked to close after its answer, closes the TLS stream while the answer
# may still be in flight, so a close-requesting client (urllib) loses it
# about one time in ten, whatever the TLS engine (docs/tailorctl.md).
check "Python's ssl client (verifying) gets the same refusal" /usr/bin/python3 -c '
import http.client,json,ssl,sys
ctx=ssl.create_default_context(cafile=sys.argv[1])
c=http.client.HTTPSConnection("127.0.0.1", int(sys.argv[2]), context=ctx, timeout=10)
c.request("POST", "/validate", body=open(sys.argv[3],"rb").read(), headers={"Content-Type":"application/json"})
a=json.load(c.getresponse())
sys.exit(0 if a["response"]["allowed"] is False else 1)' "$work/ca.crt" "$wport" "$work/block.json"
echo '{"not":"a review"}' >"$work/junk.json"
check "a body that is not an AdmissionReview: 400" [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/ca.crt" \
  --data-binary "@$work/junk.json" "https://127.0.0.1:$wport/validate")" = 400 ]

# --- names the API server would refuse never become an API call -------------------
api_calls() { grep -c '"msg":"request"' "$work/kubesim.err" || true; }
before=$(api_calls)
for bad in '..' '.' 'Shop' 'a%2F..' "$(printf 'a%.0s' $(seq 64))"; do
  review 11111111-aaaa-4bbb-8ccc-0000000000b1 CREATE "$bad" pdb \
    '{"maxUnavailable":1,"selector":{"matchLabels":{"app":"x"}}}' >"$work/badns.json"
  post badns
  check "namespace '$bad' is refused: 400 Invalid naming request.namespace" answer badns \
    'a["response"]["allowed"] is False and a["response"]["status"]["code"]==400 and a["response"]["status"]["reason"]=="Invalid" and a["response"]["status"]["message"].startswith("request.namespace must be a DNS-1123 label")'
done
review 11111111-aaaa-4bbb-8ccc-0000000000b2 CREATE shop '../../x' \
  '{"maxUnavailable":1,"selector":{"matchLabels":{"app":"x"}}}' >"$work/badname.json"
post badname
check "name '../../x' is refused: 400 Invalid naming request.name" answer badname \
  'a["response"]["allowed"] is False and a["response"]["status"]["code"]==400 and a["response"]["status"]["message"].startswith("request.name must be a DNS-1123 subdomain")'
check "bad names made no API call (kubesim served $before requests before and after)" \
  [ "$(api_calls)" = "$before" ]
check "a refused name is logged with the review's uid" \
  grep -q '"uid":"11111111-aaaa-4bbb-8ccc-0000000000b1".*request.namespace must be' "$work/webhook.err"

# --- lookups are cached: three reviews in one namespace, one list of its PDBs -------
ml_lists() { grep -cE '"path":"/apis/policy/v1/namespaces/ml/poddisruptionbudgets(\?[^"]*)?"' \
  "$work/kubesim.err" || true; }
before=$(ml_lists)
for i in 1 2 3; do
  review "11111111-aaaa-4bbb-8ccc-00000000c00$i" CREATE ml "nb-$i" \
    '{"maxUnavailable":1,"selector":{"matchLabels":{"app":"nb-'"$i"'"}}}' >"$work/cached.json"
  post cached
done
pdb_lists=$(($(ml_lists) - before))
check "three reviews in ml within the cache TTL: one PDB list (got $pdb_lists)" [ "$pdb_lists" = 1 ]

# --- TLS: 1.2 at least ----------------------------------------------------------------
tls_ok() {  # tls_ok ARGS...: does a handshake with these openssl s_client options succeed?
  openssl s_client -connect "127.0.0.1:$wport" -CAfile "$work/ca.crt" -verify_return_error "$@" \
    </dev/null >"$work/sclient.out" 2>&1
}
tls_refused() { ! tls_ok "$@"; }
check "TLS 1.2 is accepted" tls_ok -tls1_2
check "TLS 1.1 is refused (client allows it: SECLEVEL 0)" bash -c \
  "! openssl s_client -connect 127.0.0.1:$wport -tls1_1 -cipher DEFAULT@SECLEVEL=0 </dev/null >/dev/null 2>&1"
check "TLS 1.2 with ECDHE and AES-GCM is accepted" tls_ok -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256
check "...and with ChaCha20-Poly1305" tls_ok -tls1_2 -cipher ECDHE-RSA-CHACHA20-POLY1305
check "TLS 1.3 is accepted" tls_ok -tls1_3
for c in AES128-SHA AES128-GCM-SHA256 ECDHE-RSA-AES128-SHA DHE-RSA-AES128-GCM-SHA256; do
  check "TLS 1.2 cipher $c (not ECDHE or not AEAD) is refused" tls_refused -tls1_2 -cipher "$c"
done

# --- certificate rotation without a restart -------------------------------------------
served_cn() { openssl s_client -connect "127.0.0.1:$wport" -CAfile "$work/ca.crt" </dev/null 2>/dev/null |
  sed -n 's/^subject=.*CN *= *//p'; }
check "before rotation the first certificate is served" [ "$(served_cn)" = tailor-pdb-webhook ]
openssl req -newkey rsa:2048 -nodes -keyout "$work/new.key" -out "$work/new.csr" \
  -subj /CN=tailor-pdb-webhook-rotated 2>/dev/null
openssl x509 -req -in "$work/new.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -out "$work/new.crt" -days 1 -extfile "$work/san.ext" 2>/dev/null
cp "$work/new.crt" "$work/srv.crt.tmp" && mv "$work/srv.crt.tmp" "$work/srv.crt"   # as a Secret volume swaps
cp "$work/new.key" "$work/srv.key.tmp" && mv "$work/srv.key.tmp" "$work/srv.key"
rotated=
for _ in $(seq 40); do
  [ "$(served_cn)" = tailor-pdb-webhook-rotated ] && { rotated=1; break; }
  sleep 0.25
done
check "the rotated certificate is served without a restart" [ "$rotated" = 1 ]
check "curl verifies the rotated certificate" curl -fsS --cacert "$work/ca.crt" "https://127.0.0.1:$wport/healthz"
echo 'not a certificate' >"$work/srv.crt"
for _ in $(seq 40); do
  grep -q 'cannot be used; serving the old one' "$work/webhook.err" && break
  sleep 0.25
done
check "a broken certificate file is logged" grep -q '"cause":"the certificate file holds no PEM certificate"' "$work/webhook.err"
check "and the last good certificate is still served" [ "$(served_cn)" = tailor-pdb-webhook-rotated ]
check "decisions are logged as JSON lines" grep -q '"msg":"admission review".*"allowed":false' "$work/webhook.err"
kill -TERM "$wpid"
wait_exit "$wpid" 10
wpid=
check "webhook stops cleanly on SIGTERM" [ "$WAIT_RC" = 0 ]
finish
