#!/usr/bin/env bash
# What the progress bar costs (issue #20; a script that prints figures, not a test). The same
# short runs, simulated and real, alternately with stderr on a terminal (the bar is drawn) and
# with stderr not a terminal (no bar). Both run under `script` (util-linux), which gives the
# pseudo-terminal, so that the only difference is whether stderr is a terminal; stdout goes to
# /dev/null either way. Per run it prints the medians, over TRIALS, of the whole command's wall
# time and of the run's own primary metric (the mean its record holds), and their ratios
# (terminal / no terminal). Goal: ratios within the runs' spread, i.e. about 1.00.
#
# Usage: bench/progress.sh [TRIALS]   (default 7; SCHEDLAB=path uses that binary)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-7}
command -v script >/dev/null || { echo "bench/progress.sh needs script (util-linux)" >&2; exit 1; }
if [ -z "${SCHEDLAB:-}" ]; then
  cargo build --release -q -p schedlab
  SCHEDLAB=$PWD/target/release/schedlab
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
spread() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.4g-%.4g", lo, hi}'; }
# The record's primary metric: the mean of the first configuration.
primary() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); m=r["metrics"][0]["name"]; print(r["configs"][0]["summary"][m]["mean"])' "$1"
}
# One trial: wall seconds and the primary metric, on a terminal (tty) or not (none).
trial() {
  local mode=$1 args=$2 start end
  rm -f "$tmp/r.json"
  start=$EPOCHREALTIME
  if [ "$mode" = tty ]; then
    script -qfec "$SCHEDLAB $args --json $tmp/r.json >/dev/null" /dev/null >"$tmp/screen"
    # The bar was drawn, or this compares nothing.
    grep -q elapsed "$tmp/screen" || { echo "no progress bar on the terminal: $args" >&2; exit 1; }
  else
    script -qfec "$SCHEDLAB $args --json $tmp/r.json >/dev/null 2>$tmp/stderr" /dev/null >"$tmp/screen"
    ! grep -q elapsed "$tmp/stderr" || { echo "a progress bar without a terminal: $args" >&2; exit 1; }
  fi
  end=$EPOCHREALTIME
  echo "$(awk -v s="$start" -v e="$end" 'BEGIN { print e - s }') $(primary "$tmp/r.json")" >>"$tmp/$mode"
}

runs=(
  "simulated|yield (us_per_yield)|run yield --backend sim --threads 4 --duration 1s --runs 5"
  "real|messaging (time, s)|run messaging --groups 2 --loops 200 --runs 5"
)
echo "progress bar cost: $trials alternating trials per run and mode ($(nproc) CPUs)"
printf '%-10s %-20s %-5s %22s %30s\n' "backend" "workload (metric)" "mode" "wall s: median (range)" "metric: median (range)"
for r in "${runs[@]}"; do
  IFS='|' read -r backend what args <<<"$r"
  rm -f "$tmp/tty" "$tmp/none"
  for ((t = 0; t < trials; t++)); do
    # Alternate which goes first, so that drift favours neither.
    if ((t % 2)); then trial none "$args"; trial tty "$args"; else trial tty "$args"; trial none "$args"; fi
  done
  for mode in tty none; do
    printf '%-10s %-20s %-5s %10.3f (%s) %14.5g (%s)\n' "$backend" "$what" "$mode" \
      "$(cut -d' ' -f1 "$tmp/$mode" | median)" "$(cut -d' ' -f1 "$tmp/$mode" | spread)" \
      "$(cut -d' ' -f2 "$tmp/$mode" | median)" "$(cut -d' ' -f2 "$tmp/$mode" | spread)"
  done
  wall=$(awk -v a="$(cut -d' ' -f1 "$tmp/tty" | median)" -v b="$(cut -d' ' -f1 "$tmp/none" | median)" 'BEGIN { printf "%.3f", a / b }')
  metric=$(awk -v a="$(cut -d' ' -f2 "$tmp/tty" | median)" -v b="$(cut -d' ' -f2 "$tmp/none" | median)" 'BEGIN { printf "%.3f", a / b }')
  printf '%-10s %-20s ratio terminal/none: wall %s, metric %s\n' "$backend" "$what" "$wall" "$metric"
done
