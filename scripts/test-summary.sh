#!/usr/bin/env bash
# test-summary.sh BUILD_DIR... - add up the ctest passes of `make test` and
# print one closing line: "tests: N passed, N failed".
set -euo pipefail
passed=0
failed=0
for dir in "$@"; do
  out="$dir/ctest.out"
  [ -f "$out" ] || { echo "test-summary: no $out" >&2; exit 1; }
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$out" | tail -n 1)
  [ -n "$line" ] || { echo "test-summary: no ctest summary in $out" >&2; exit 1; }
  f=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  t=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
  printf '  %-16s %s\n' "$(basename "$dir")" "$line"
  passed=$((passed + t - f))
  failed=$((failed + f))
done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
