#!/usr/bin/env bash
# How long `schedlab record`'s converter takes, and its peak memory, on synthetic traces of a
# million scheduler events (and more) of three shapes — a two-task ping-pong, hackbench-like
# pairs with the kernel's CPU-time readings, make-like children that fork, sleep on the disk
# and exit (crates/schedlab-script/examples/convert_bench.rs says how each is built):
#
#   bench/convert.sh [EVENTS...]      # default: 1000000 and 5000000
#
# Each shape runs in a process of its own, so its peak resident set (VmHWM, the trace in memory
# included) is its own. Prints per shape and size the conversion's wall time and the peak, and
# both as a fraction of the goal (10 s and 500 MiB a million events, scaled to the size).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 5000000)
cargo build --release -q -p schedlab-script --example convert_bench
bin=target/release/examples/convert_bench
echo "# converter on synthetic traces; load average $(cut -d' ' -f1 /proc/loadavg) at the start; goal for 1,000,000 events: under 10 s and under 500 MiB"
first=1
for n in "${sizes[@]}"; do
  for shape in pingpong hackbench make; do
    out=$("$bin" "$n" "$shape")
    [ $first = 1 ] && echo "$out" | head -1
    first=0
    echo "$out" | tail -1
  done
done
echo "# load average $(cut -d' ' -f1 /proc/loadavg) at the end"
