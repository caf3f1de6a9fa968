#!/usr/bin/env bash
# fuzz-long.sh BUILD_DIR OUT_DIR
# Run every libFuzzer target of a fuzz build (the ctest tests labelled
# fuzz) for FUZZ_RUNS executions each (default 10^7), one after another,
# and write what each did to OUT_DIR/report.md (also printed).
#
# Each target keeps its corpus in OUT_DIR/corpus/<target>, outside the
# source tree: a run starts from what the last one found plus the seeds
# checked in beside the target, so coverage builds up across runs.
# Crash, leak and timeout inputs land in OUT_DIR/artifacts/<target>/.
#
# Settings (environment):
#   FUZZ_RUNS=N        executions per target (-runs=N); default 10000000
#   FUZZ_MAX_TIME=S    also stop a target after S seconds (0 = no limit)
#   FUZZ_TARGETS=RE    only targets whose name matches the regex RE
#   FUZZ_PARALLEL=N    targets run at once (default 1)
#   FUZZ_PROGRESS=S    seconds between progress lines (default 60)
# Exit status: 1 when any target crashed, leaked or timed out.
set -uo pipefail
build=${1:?usage: fuzz-long.sh BUILD_DIR OUT_DIR}
out=${2:?usage: fuzz-long.sh BUILD_DIR OUT_DIR}
runs=${FUZZ_RUNS:-10000000}
max_time=${FUZZ_MAX_TIME:-0}
filter=${FUZZ_TARGETS:-.}
parallel=${FUZZ_PARALLEL:-1}
progress=${FUZZ_PROGRESS:-60}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# name binary seed-corpus, one target a line, from ctest's own list.
(cd "$build" && ctest --show-only=json-v1 -L fuzz) | python3 -c '
import json, re, sys
for t in json.load(sys.stdin)["tests"]:
    name, cmd = t["name"].removeprefix("fuzz."), t["command"]
    if re.search(sys.argv[1], name):
        print(name, cmd[1], cmd[2])
' "$filter" > "$out/targets" || { echo "fuzz-long: no fuzz build in $build" >&2; exit 2; }
total=$(wc -l < "$out/targets")
[ "$total" -gt 0 ] || { echo "fuzz-long: no target matches $filter" >&2; exit 2; }
echo "fuzz-long: $total targets, $runs runs each$([ "$max_time" != 0 ] && echo ", at most ${max_time}s each"), results in $out"

# Run one target; its summary goes to $out/results/<name> as one
# tab-separated line: name execs seconds cov ft corpus_files corpus_kb crashes status
run_one() {
    local name=$1 bin=$2 seeds=$3
    local corpus="$out/corpus/$name" art="$out/artifacts/$name/" log="$out/logs/$name.log"
    mkdir -p "$corpus" "$art" "$out/logs" "$out/results"
    local args=(-runs="$runs" -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art")
    [ "$max_time" != 0 ] && args+=(-max_total_time="$max_time")
    local start=$SECONDS
    rm -f "$out/results/$name"
    if [ ! -x "$bin" ]; then
        echo "fuzz-long: $name: $bin is not built" | tee "$log"
        printf '%s\t0\t0\t?\t?\t0\t0\t0\t127\n' "$name" > "$out/results/$name"
        return
    fi
    touch "$art/.started"   # crashes of this run are the artifacts newer than this
    echo "fuzz-long: start $name"
    "$bin" "${args[@]}" "$corpus" $( [ -d "$seeds" ] && echo "$seeds" ) > "$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        for ((i = 0; i < progress && $(kill -0 "$pid" 2>/dev/null; echo $?) == 0; i++)); do
            sleep 1
        done
        kill -0 "$pid" 2>/dev/null &&
            echo "fuzz-long: $name $(( SECONDS - start ))s: $(grep -a -E '^#[0-9]+' "$log" | tail -n 1 | cut -c1-110)"
    done
    wait "$pid"
    local status=$? secs=$(( SECONDS - start ))
    local execs cov ft files kb crashes
    execs=$(grep -a -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')
    cov=$(grep -a -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')
    ft=$(grep -a -o 'ft: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')
    files=$(find "$corpus" -type f | wc -l)
    kb=$(du -sk "$corpus" | cut -f1)
    crashes=$(find "$art" -type f -newer "$art/.started" \( -name 'crash-*' -o -name 'leak-*' \
                   -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${execs:-0}" "$secs" "${cov:-?}" \
        "${ft:-?}" "$files" "$kb" "$crashes" "$status" > "$out/results/$name"
    echo "fuzz-long: done  $name: ${execs:-0} runs in ${secs}s, cov ${cov:-?} ft ${ft:-?}," \
         "corpus $files files, crashes $crashes, exit $status"
}

n=0
while read -r name bin seeds; do
    n=$((n + 1))
    echo "fuzz-long: [$n/$total] $name"
    run_one "$name" "$bin" "$seeds" &
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n; done
done < "$out/targets"
wait

report="$out/report.md"
{
    echo "# fuzz-long report"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo '?'), FUZZ_RUNS=$runs$([ "$max_time" != 0 ] && echo ", FUZZ_MAX_TIME=$max_time"), $(nproc) cores, $parallel at once"
    echo
    echo "Every target's latest run (this one's and earlier ones kept in $out/results):"
    echo
    echo "| target | executions | time (s) | execs/s | cov | ft | corpus files | corpus KiB | crashes | exit | finished |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    for r in "$out"/results/*; do
        IFS=$'\t' read -r n e s c f files kb cr st < "$r"
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$e" "$s" \
            "$(( s > 0 ? e / s : e ))" "$c" "$f" "$files" "$kb" "$cr" "$st" \
            "$(date -u -r "$r" '+%H:%M')"
    done
    echo
    echo "Corpora: $out/corpus/<target> (kept between runs); crash inputs: $out/artifacts/<target>/; logs: $out/logs/."
} > "$report"
cat "$report"
bad=$(while read -r name _ _; do cut -f8,9 "$out/results/$name"; done < "$out/targets" |
      awk '$1 > 0 || $2 != 0' | wc -l)
if [ "$bad" -gt 0 ]; then
    echo "fuzz-long: $bad target(s) crashed, leaked or timed out: see $out/artifacts/"
    exit 1
fi
