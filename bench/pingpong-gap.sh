#!/usr/bin/env bash
# Cross-CPU ping-pong: the pingpong workload on the real backend against calibrate's own probe
# of the same thing (issue #16: validate's "pingpong, two CPUs" row). The simulator reproduces
# the probe; this says how far the workload is from it, and whether the run's length matters:
#   probe   calibrate --quick's "1-byte ping-pong round trip over two pipes, threads on two
#           CPUs" (batches of 3 ms, interleaved with the other probes)
#   short   schedlab run pingpong, ping on CPU 0, pong on CPU 1, 570 round trips (~20 ms, one
#           full calibrate batch)
#   long    the same, 20,000 round trips (validate's entry)
# Rounds alternate probe, short, long so that drift favours none; each column is a median of
# µs per round trip. Times mean something only on a quiet machine: the load average is printed
# before and after, and a 1-minute load of 1.5 or more is flagged.
#
# Usage: bench/pingpong-gap.sh [ROUNDS]   (default 7; needs 2 CPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
. bench/lib.sh
whole_in_range pingpong-gap.sh ROUNDS "$rounds" 1 100
if [ "$(nproc)" -lt 2 ]; then
  echo "skipped: needs 2 CPUs, this machine has $(nproc)"
  exit 0
fi
schedlab_bin

# calibrate prints the probe's row as: description, median ns, 95 % interval (LOW-HIGH), rounds.
probe_us() {
  "$SCHEDLAB" calibrate --quick 2>/dev/null |
    awk '/round trip over two pipes, threads on two CPUs/ && $NF ~ /^[0-9]+$/ {printf "%.3f\n", $(NF-2) / 1000}' || true
}
# pingpong prints "Total time: S [sec]  U usecs/op ..." per repetition on stderr.
workload_us() {
  "$SCHEDLAB" run pingpong --group ping:cpus=0 --group pong:cpus=1 --loops "$1" --runs 1 \
    --counters proc 2>&1 >/dev/null | awk '/usecs\/op/ {print $(NF-3)}' || true
}

before=$(load1)
probe=() short=() long=()
for _ in $(seq "$rounds"); do
  probe+=("$(probe_us)")
  short+=("$(workload_us 570)")
  long+=("$(workload_us 20000)")
  for v in "${probe[-1]}" "${short[-1]}" "${long[-1]}"; do
    [ -n "$v" ] || { echo "pingpong-gap.sh: a run printed no time (probe '${probe[-1]}', short '${short[-1]}', long '${long[-1]}'); run the commands by hand to see why" >&2; exit 1; }
  done
done
after=$(load1)
p=$(printf '%s\n' "${probe[@]}" | median)
s=$(printf '%s\n' "${short[@]}" | median)
l=$(printf '%s\n' "${long[@]}" | median)
printf 'pingpong, ping on CPU 0, pong on CPU 1, %d alternating rounds, medians of us per round trip\n' "$rounds"
printf '%-52s %10.3f\n' "calibrate probe (1 byte, 3 ms batches)" "$p"
printf '%-52s %10.3f\n' "workload, 570 round trips (4 bytes)" "$s"
printf '%-52s %10.3f\n' "workload, 20000 round trips (validate's entry)" "$l"
awk -v p="$p" -v s="$s" -v l="$l" 'BEGIN {
  printf "%-52s %10.3f\n", "short / probe", s / p
  printf "%-52s %10.3f\n", "long / probe", l / p
  printf "%-52s %10.3f\n", "long / short", l / s
}'
printf 'load average (1 min): %s before, %s after\n' "$before" "$after"
if awk -v a="$before" -v b="$after" 'BEGIN {exit !(a >= 1.5 || b >= 1.5)}'; then
  echo "warning: load 1.5 or more; the times above include other tasks' slices"
fi
