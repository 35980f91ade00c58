#!/usr/bin/env bash
# How faithfully `schedlab record` captures a program, and what recording costs it.
#   For each program: record it, replay the file on the real kernel (--runs REPS), and print
#   recorded against replayed wall time, context switches, wakeups and CPU time (bench/record.py);
#   then recording's cost: REPS rounds untraced, through BPF and through tracefs
#   (bench/record-cost.sh), medians and the rounds' ratios.
#   With perf installed, `perf sched record` + `perf sched replay` of the same program beside it.
# Needs root (tracefs) and: apt-get install rt-tests linux-perf
#
# Usage: bench/record.sh [REPS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
reps=${1:-5}
whole_in_range record.sh REPS "$reps" 1 100
for tool in hackbench perf python3; do
  command -v "$tool" >/dev/null || { echo "record.sh: $tool not found; apt-get install rt-tests linux-perf python3" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "record.sh: needs root (tracefs)" >&2; exit 1; }
schedlab_bin || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# wall CMD...: the command's wall time in seconds (output discarded).
wall() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", (b - a) / 1e9 }'; }

echo "load average before: $(load1); a shared machine's figures move by 10 % or more between runs"
case_no=0
while IFS='|' read -r label cmd; do
  [ -n "$label" ] || continue
  case_no=$((case_no + 1))
  file=$dir/case$case_no.toml
  read -r -a argv <<<"$cmd"
  echo
  echo "== $label: $cmd"
  "$SCHEDLAB" record -o "$file" -- "${argv[@]}" 2>&1 >/dev/null | sed 's/^/  /'
  "$SCHEDLAB" run "$file" --runs "$reps" --json "$dir/case$case_no.json" -q >/dev/null 2>&1 ||
    "$SCHEDLAB" run "$file" --runs "$reps" --json "$dir/case$case_no.json" >/dev/null
  # Recording's cost, through BPF and through tracefs (bench/record-cost.sh: alternating rounds).
  cost=$(SCHEDLAB=$SCHEDLAB bench/record-cost.sh "$reps" "${argv[@]}")
  pm=$(sed -n 's/^  untraced \([0-9.]*\) s.*/\1/p' <<<"$cost")
  python3 bench/record.py "$file" "$dir/case$case_no.json" "$pm"
  echo "  recording cost (program's wall time, fork to exit):"
  sed 's/^/  /' <<<"$cost"
  if perf sched record -o "$dir/perf.data" -- "${argv[@]}" >/dev/null 2>&1; then
    perf sched replay -i "$dir/perf.data" -r 1 2>/dev/null | grep -E 'run measurement overhead|#1  :|^#' | tail -2 | sed 's/^/  perf sched replay: /'
  fi
done <<'CASES'
hackbench threads|hackbench -g 2 -l 200 -T
hackbench processes|hackbench -g 2 -l 200 -P
perf bench sched pipe|perf bench sched pipe -l 20000
CASES
