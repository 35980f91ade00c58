#!/usr/bin/env bash
# Simulator speed and memory (issue: simulator core). Prints simulated scheduling events per
# wall-clock second for the issue's two cases, per policy, and peak RSS against task count.
#
#   bench/sim.sh [REPS]      (default 3 repetitions per case; the median events/s is printed)
#
# Goals: >= 5 million events/s on one core; memory linear in tasks, 2048 tasks < 64 MiB.
# Events are the simulator's queue pops (burst ends, ticks, IPIs, timers): what it schedules.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
cargo build --release -q
sl=target/release/schedlab

# Median of "events / seconds" over the progress lines a run prints.
rate() {
  "$sl" "$@" --runs "$reps" 2>&1 >/dev/null |
    sed -n 's/.*\[simulated \([0-9]*\) events in \([0-9.]*\) s\].*/\1 \2/p' |
    awk '{ print $1 / $2 }' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

printf '%-58s %14s %8s\n' "case" "events/s" "vs goal"
for policy in ${POLICIES:-o1 cfs eevdf}; do
  for case in "chat --rooms 10 --messages 100 --cpus 8" "yield --threads 2048 --duration 1s --cpus 8"; do
    # shellcheck disable=SC2086
    r=$(rate run $case --backend sim --policy $policy)
    printf '%-58s %14.0f %7.2fx\n' "$policy: $case" "$r" "$(awk -v r="$r" 'BEGIN { print r / 5e6 }')"
  done
done

echo
printf '%-58s %14s\n' "case (cfs, 8 CPUs, 1 repetition)" "peak RSS MiB"
for threads in 256 1024 2048 4096; do
  kb=$( { /usr/bin/time -f '%M' "$sl" run yield --backend sim --policy cfs --cpus 8 \
          --threads "$threads" --duration 200ms --runs 1 --quiet >/dev/null; } 2>&1 | tail -1)
  printf '%-58s %14.1f\n' "yield $threads threads" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
done
