#!/usr/bin/env bash
# cli_it.sh TAILORCTL BINDIR - one command line for every tool a user
# meets: each tailorctl subcommand (migrate's too) and each service binary
# prints --help on stdout and exits 0 with nothing on stderr, and answers
# an unknown flag with exit 2, a message on stderr and nothing on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
tctl=$1
bindir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

probe() {   # LABEL CMD...: --help, then a bad flag
  local label=$1 rc
  shift
  rc=0
  "$@" --help >"$work/out" 2>"$work/err" || rc=$?
  check "$label --help: exit 0 (got $rc), help on stdout, stderr empty" \
    test "$rc" -eq 0 -a -s "$work/out" -a ! -s "$work/err"
  check "$label --help names its usage" grep -qi "usage" "$work/out"
  rc=0
  "$@" --no-such-flag >"$work/out" 2>"$work/err" || rc=$?
  check "$label --no-such-flag: exit 2 (got $rc), the error on stderr, stdout empty" \
    test "$rc" -eq 2 -a -s "$work/err" -a ! -s "$work/out"
}

probe "tailorctl" "$tctl"
for c in ping solve explain convert validate pdb-check patch-check migrate; do
  probe "tailorctl $c" "$tctl" "$c"
done
for c in plan run status rollback; do
  probe "tailorctl migrate $c" "$tctl" migrate "$c"
done
for s in watcher solver launcher disruptor; do
  probe "tailor-$s" "$bindir/tailor-$s"
done

# explain without a target is a usage error, not help
rc=0
"$tctl" explain >"$work/out" 2>"$work/err" || rc=$?
check "tailorctl explain without a target: exit 2 (got $rc), stderr says what is missing" \
  test "$rc" -eq 2 -a ! -s "$work/out"
check "tailorctl explain's flags read positively (--[no-]simulate)" \
  bash -c "'$tctl' explain --help | grep -q -- '--\[no-\]simulate' && ! '$tctl' explain --help | grep -q -- 'no-\]no-'"
finish
