#!/usr/bin/env bash
# run-fuzz.sh BINARY CORPUS_DIR [SECONDS]
# A short libFuzzer run (10 s; TAILOR_FUZZ_SECONDS) as part of the test
# suite: 16 targets, under 3 minutes in all.  New inputs go to a
# scratch copy, so the checked-in seed corpus never changes under a test.
set -euo pipefail
bin=$1
corpus=$2
secs=${3:-${TAILOR_FUZZ_SECONDS:-10}}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -d "$corpus" ]; then cp -r "$corpus"/. "$work"/; fi
echo "fuzz: $(basename "$bin") for ${secs}s, seeds: $(ls "$work" | wc -l)"
"$bin" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$work/" "$work" 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "fuzz: FAILED (crash inputs were in $work)"
  ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null | head
fi
exit "$status"
