#!/usr/bin/env bash
# What the progress bar costs (issue #20; a script that prints figures, not a test). The same
# short runs, simulated and real, alternately with stderr on a terminal (the bar is drawn) and
# with stderr not a terminal (no bar). Both run under `script` (util-linux), which gives the
# pseudo-terminal, so that the only difference is whether stderr is a terminal; stdout goes to
# /dev/null either way. Per run it prints the medians, over TRIALS, of schedlab's wall time, of
# its CPU time (user + system: what the bar could add, and far less disturbed by other load on
# the machine than wall time), and of the run's own primary metric (the mean its record holds),
# and their ratios (terminal / no terminal). Goal: ratios within the runs' spread, about 1.00.
#
# Usage: bench/progress.sh [TRIALS]   (default 7; SCHEDLAB=path uses that binary)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-7}
command -v script >/dev/null || { echo "bench/progress.sh needs script (util-linux)" >&2; exit 1; }
. bench/lib.sh
schedlab_bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spread() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.4g-%.4g", lo, hi}'; }
# The record's primary metric: the mean of the first configuration.
primary() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); m=r["metrics"][0]["name"]; print(r["configs"][0]["summary"][m]["mean"])' "$1"
}
# One trial, on a terminal (tty) or not (none): schedlab's wall and CPU seconds (bash's `time`,
# written to a file of its own so that schedlab's stderr is untouched) and the primary metric.
export TIMEFORMAT='%R %U %S'
trial() {
  local mode=$1 args=$2 stderr
  rm -f "$tmp/r.json"
  # On the terminal, schedlab's stderr is the terminal (fd 4 below); else a file.
  if [ "$mode" = tty ]; then stderr='2>&4'; else stderr="2>$tmp/stderr"; fi
  script -qfec "bash -c '{ time $SCHEDLAB $args --json $tmp/r.json >/dev/null $stderr; } 4>&2 2>$tmp/time'" /dev/null >"$tmp/screen"
  if [ "$mode" = tty ]; then
    # The bar was drawn, or this compares nothing.
    grep -q elapsed "$tmp/screen" || { echo "no progress bar on the terminal: $args" >&2; exit 1; }
  else
    ! grep -q elapsed "$tmp/stderr" "$tmp/screen" || { echo "a progress bar without a terminal: $args" >&2; exit 1; }
  fi
  read -r real user sys <"$tmp/time"
  echo "$real $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') $(primary "$tmp/r.json")" >>"$tmp/$mode"
}

runs=(
  "simulated|yield (us_per_yield)|run yield --backend sim --threads 4 --duration 1s --runs 5"
  "real|messaging (time, s)|run messaging --groups 2 --loops 200 --runs 5"
)
echo "progress bar cost: $trials alternating trials per run and mode ($(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg))"
printf '%-10s %-20s %-5s %24s %24s %26s\n' "backend" "workload (metric)" "mode" "wall s: median (range)" "CPU s: median (range)" "metric: median (range)"
column() { cut -d' ' -f"$2" "$tmp/$1"; }
ratio() { awk -v a="$(column tty "$1" | median)" -v b="$(column none "$1" | median)" 'BEGIN { printf "%.3f", a / b }'; }
for r in "${runs[@]}"; do
  IFS='|' read -r backend what args <<<"$r"
  rm -f "$tmp/tty" "$tmp/none"
  for ((t = 0; t < trials; t++)); do
    # Alternate which goes first, so that drift favours neither.
    if ((t % 2)); then trial none "$args"; trial tty "$args"; else trial tty "$args"; trial none "$args"; fi
  done
  for mode in tty none; do
    printf '%-10s %-20s %-5s %8.3f (%13s) %8.3f (%13s) %10.5g (%13s)\n' "$backend" "$what" "$mode" \
      "$(column $mode 1 | median)" "$(column $mode 1 | spread)" \
      "$(column $mode 2 | median)" "$(column $mode 2 | spread)" \
      "$(column $mode 3 | median)" "$(column $mode 3 | spread)"
  done
  printf '%-10s %-20s ratio terminal/none: wall %s, CPU %s, metric %s\n' "$backend" "$what" "$(ratio 1)" "$(ratio 2)" "$(ratio 3)"
done
