#!/usr/bin/env bash
# certs.sh DIR [IDENTITY...] - a CA and one certificate + key per identity
# for tailor's mutual TLS (docs/security.md), with the openssl CLI.
#
#   DIR/ca.crt  DIR/ca.key              the CA (EC P-256, 10 years)
#   DIR/<id>.crt  DIR/<id>.key          subject CN=<id>, signed by the CA
#                                       (EC P-256, 1 year, clientAuth +
#                                       serverAuth, SANs localhost, 127.0.0.1,
#                                       <id>, <id>.<ns>.svc)
#
# IDENTITY defaults to every tailor identity: tailor-watcher tailor-solver
# tailor-launcher tailor-disruptor tailorctl.  Idempotent: an existing CA
# and existing certificates are kept; only what is missing is made.  With
# CERTS_FORCE=1 the listed identities are re-issued (rotation: same CA,
# new key and certificate, files replaced in place by rename).
# For local runs and tests; a cluster uses cert-manager (deploy/certs.yaml).
set -euo pipefail

dir=${1:?usage: certs.sh DIR [IDENTITY...]}
shift
ids=("$@")
[ ${#ids[@]} -gt 0 ] || ids=(tailor-watcher tailor-solver tailor-launcher tailor-disruptor tailorctl)
ns=${CERTS_NAMESPACE:-tailor}
days=${CERTS_DAYS:-365}

mkdir -p "$dir"
umask 077
# Tests in parallel share one directory: one writer at a time.
exec 9>"$dir/.lock"
flock 9
if [ ! -s "$dir/ca.crt" ] || [ ! -s "$dir/ca.key" ]; then
  openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca.key.tmp" 2>/dev/null
  openssl req -x509 -new -key "$dir/ca.key.tmp" -sha256 -days 3650 -subj "/O=tailor/CN=tailor-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$dir/ca.crt.tmp" 2>/dev/null
  mv "$dir/ca.key.tmp" "$dir/ca.key"
  mv "$dir/ca.crt.tmp" "$dir/ca.crt"
  chmod 644 "$dir/ca.crt"
fi

for id in "${ids[@]}"; do
  if [ "${CERTS_FORCE:-0}" != 1 ] && [ -s "$dir/$id.crt" ] && [ -s "$dir/$id.key" ] &&
    openssl x509 -in "$dir/$id.crt" -noout -checkend 86400 >/dev/null 2>&1; then
    continue   # present and good for another day
  fi
  tmp=$(mktemp -d "$dir/.issue.XXXXXX")
  openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/key.pem" 2>/dev/null
  openssl req -new -key "$tmp/key.pem" -subj "/O=tailor/CN=$id" -out "$tmp/req.csr" 2>/dev/null
  cat >"$tmp/ext.cnf" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:$id,DNS:$id.$ns.svc
EXT
  openssl x509 -req -in "$tmp/req.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -CAserial "$dir/ca.srl" -days "$days" -sha256 -extfile "$tmp/ext.cnf" \
    -out "$tmp/crt.pem" 2>/dev/null
  # Key first: a reader that sees the new certificate finds its key.
  mv "$tmp/key.pem" "$dir/$id.key"
  mv "$tmp/crt.pem" "$dir/$id.crt"
  chmod 644 "$dir/$id.crt"
  rm -rf "$tmp"
done
