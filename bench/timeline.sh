#!/usr/bin/env bash
# What the run-queue timeline costs and how fast it draws (issue #19, part 1).
#
#   bench/timeline.sh [PAIRS]        (default 5; needs root for the real runs)
#   SENDER_GROUPS=8 LOOPS=400 bench/timeline.sh 10
#
# 1. Tracing cost on the real kernel: the same `run messaging` with and without --timeline,
#    alternately, PAIRS times. Per pair: hackbench's own time (the workload's metric, measured
#    inside the run while tracing is on) and the command's whole wall time (which adds opening
#    the tracefs instance, reading and replaying the trace, and drawing); the medians and the
#    ratios with over without. Goal: <= 1.10 on the metric.
# 2. Drawing: a synthetic 60 s timeline (8 CPUs, 400 tasks, 5 million events) replayed and
#    drawn by `cargo test -p schedlab-report timeline_render_bench -- --ignored`: the seconds
#    to replay and to draw, and the SVG's size. Goals: < 1 s to draw, < 2 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-5}
cargo build --release -q
sl=$PWD/target/release/schedlab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(messaging --groups "${SENDER_GROUPS:-8}" --loops "${LOOPS:-200}" --runs 1 --quiet)

# The metric "time" (s) and the command's wall time (s) of one run; $1 = on/off.
one() {
  local extra=()
  [ "$1" = on ] && extra=(--timeline "$tmp/rq.svg")
  rm -rf "$tmp/r.json" "$tmp/rq.svg" "$tmp/rq.events"
  local t0 t1
  t0=$(date +%s.%N)
  if ! "$sl" run "${args[@]}" "${extra[@]}" --json "$tmp/r.json" >/dev/null 2>"$tmp/err"; then
    echo "the run failed (timeline $1): $(tail -1 "$tmp/err")" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  local m
  m=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["configs"][0]["repetitions"][0]["metrics"]["time"])' "$tmp/r.json")
  echo "$m $(echo "$t1 - $t0" | bc -l)"
}

. bench/lib.sh

if [ "$(id -u)" = 0 ]; then
  echo "real kernel: schedlab run ${args[*]} [--timeline], $pairs pairs"
  printf '%-6s %12s %12s %12s %12s\n' pair "time off" "time on" "wall off" "wall on"
  : >"$tmp/pairs"
  for i in $(seq 1 "$pairs"); do
    one off >"$tmp/off" || exit 1
    one on >"$tmp/on" || exit 1
    read -r moff woff <"$tmp/off"
    read -r mon won <"$tmp/on"
    printf '%-6s %12.4f %12.4f %12.3f %12.3f\n' "$i" "$moff" "$mon" "$woff" "$won"
    echo "$moff $mon $woff $won" >>"$tmp/pairs"
  done
  mo=$(awk '{print $1}' "$tmp/pairs" | median); mn=$(awk '{print $2}' "$tmp/pairs" | median)
  wo=$(awk '{print $3}' "$tmp/pairs" | median); wn=$(awk '{print $4}' "$tmp/pairs" | median)
  printf 'median: hackbench time %.4f s off, %.4f s on: %.3fx (goal <= 1.10)\n' "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)"
  printf 'median: command wall   %.3f s off, %.3f s on: %.3fx (includes reading, replaying, drawing)\n' "$wo" "$wn" "$(echo "$wn / $wo" | bc -l)"
  "$sl" run "${args[@]}" --timeline "$tmp/rq.svg" 2>/dev/null | grep -E "trace events were lost|source" || true
else
  echo "skipped the real-kernel part: tracing needs root (sudo -E bench/timeline.sh)"
fi
echo
cargo test --release -q -p schedlab-report timeline_render_bench -- --ignored --nocapture 2>&1 | grep -E '^(render|replay|svg)'
