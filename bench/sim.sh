#!/usr/bin/env bash
# Simulator speed and memory (issues: simulator core, historic policies). Prints simulated
# scheduling events per wall-clock second for three cases (chat, a yield storm, seed 003's
# lookup walk under dcache_lock), per policy, and peak RSS against
# task count.
#
#   bench/sim.sh [REPS]      (default 3 repetitions per case; the median events/s is printed)
#   POLICIES="o1 ule" bench/sim.sh 1
#   SCALE_ONLY=1 bench/sim.sh      (only the scale table: CPUs 8..1024 x tasks 1k..100k)
#
# Goals: >= 5 million events/s on one core; memory linear in tasks, 2048 tasks < 64 MiB.
# linux24 scans every runnable task at each schedule (O(n) by design): its goal for yield with
# 2048 threads on 8 CPUs is a wall time under 30 s for 1 simulated second, printed instead.
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

if [ -z "${SCALE_ONLY:-}" ]; then
printf '%-58s %14s %8s\n' "case" "events/s" "vs goal"
all=$("$sl" list | sed -n '/^SIMULATED POLICIES/,/^$/p' | awk '/^  [a-z]/ { print $1 }')
for policy in ${POLICIES:-$all}; do
  for case in "chat --rooms 10 --messages 100 --cpus 8" "yield --threads 2048 --duration 1s --cpus 8" \
    "lookup --threads 8 --lookups 20000 --cpus 8"; do
    if [ "$policy" = linux24 ] && [ "${case%% *}" = yield ]; then
      # shellcheck disable=SC2086
      s=$( { /usr/bin/time -f '%e' "$sl" run $case --backend sim --policy linux24 --runs 1 --quiet >/dev/null; } 2>&1 | tail -1)
      printf '%-58s %12s s %7.2fx\n' "$policy: $case (wall)" "$s" "$(awk -v s="$s" 'BEGIN { print 30 / s }')"
      continue
    fi
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
fi

# Scale (issue 21): a yield storm of 1k … 100k threads on 8 … 1024 CPUs, events/s (one
# repetition) and peak RSS. Every run simulates SCALE_CPU_S CPU-seconds in all (default 2:
# 250 ms on 8 CPUs, about 2 ms on 1024), so the rows handle comparable numbers of events.
# Goal: 100k tasks on 1024 CPUs under 1 GiB and >= 5 M events/s.
#   SCALE_POLICY=cfs SCALE_CPUS="8 1024" SCALE_TASKS="100000" bench/sim.sh 1
# SCALE_ONLY=1 prints this table alone.
echo
scale_policy=${SCALE_POLICY:-eevdf}
printf '%-58s %14s %12s\n' "scale case ($scale_policy, yield, 1 repetition)" "events/s" "peak RSS MiB"
for cpus in ${SCALE_CPUS:-8 64 256 1024}; do
  for tasks in ${SCALE_TASKS:-1000 10000 100000}; do
    us=$(awk -v c="$cpus" -v s="${SCALE_CPU_S:-2}" 'BEGIN { printf "%d", s * 1e6 / c }')
    out=$( { /usr/bin/time -f 'rss %M' "$sl" run yield --backend sim --policy "$scale_policy" \
             --cpus "$cpus" --threads "$tasks" --duration "${us}us" --runs 1 >/dev/null; } 2>&1)
    r=$(sed -n 's/.*\[simulated \([0-9]*\) events in \([0-9.]*\) s\].*/\1 \2/p' <<<"$out" | awk '{ print $1 / $2 }')
    kb=$(sed -n 's/^rss //p' <<<"$out")
    printf '%-58s %14.0f %12.1f\n' "$cpus CPUs, $tasks threads, ${us}us" "${r:-0}" \
      "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
  done
done
