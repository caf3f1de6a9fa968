#!/usr/bin/env bash
# clang-check.sh BUILD_DIR - every C file of BUILD_DIR's compile database
# through clang's front end (-fsyntax-only, the same flags and
# -Werror): clang warns where gcc does not (-Wstring-concatenation, say),
# and the fuzz tree, built by clang, holds only the libFuzzer targets and
# the libraries they link.  No code is generated, so this takes a tenth of
# a build.  Non-zero exit on the first file clang rejects (its messages
# shown).
set -euo pipefail
db=${1:?usage: clang-check.sh BUILD_DIR}/compile_commands.json
[ -f "$db" ] || { echo "clang-check: no $db (configure the build first)" >&2; exit 2; }
command -v clang >/dev/null || { echo "clang-check: clang not installed" >&2; exit 2; }
jobs=${JOBS:-$(nproc)}
n=$(jq length "$db")
echo "clang-check: $n files, $jobs at a time"
# One line per file: its directory, then its command with clang for the
# compiler, -fsyntax-only, and no -o.
jq -r '.[] | [.directory, (.command | sub("^[^ ]+"; "clang") | sub(" -o [^ ]+"; "") + " -fsyntax-only")] | @tsv' "$db" |
  xargs -d '\n' -P "$jobs" -n 1 bash -c 'IFS=$'"'"'\t'"'"' read -r dir cmd <<<"$1"; cd "$dir" && eval "$cmd" || exit 255' _
echo "clang-check: $n files clean"
