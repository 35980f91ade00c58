#!/usr/bin/env bash
# Messaging over pipes with threads against processes: validate's "messaging pipe threads" and
# "messaging pipe processes" rows (validate --quick's size: 4 groups of 20 senders and 20
# receivers, 50 loops; and validate's 200 loops). What the real kernel does differently for
# processes: switches between address spaces (the simulator's `mm_switch`, which a calibrated
# profile measures and the built-in profiles leave at 0), and the copy-on-write faults of 160
# forked children (not simulated). Rounds alternate threads and processes at each size so that
# drift favours none; each column is a median of the workload's Time (s) and, where `perf`
# runs, of the page faults of the whole command (fork and exit included). With PROFILE, the
# simulated Time of each configuration on the simulator validate uses (eevdf:base_slice=700 on
# this machine's CPUs, 4 seeds) and its error against the real median of the same
# configuration. A cost per switch between address spaces grows with the loops, the forked
# children's faults do not. Times mean something only on a quiet machine: the load average is
# printed before and after, and a 1-minute load of 1.5 or more is flagged.
#
# Usage: bench/messaging-tasks.sh [ROUNDS [PROFILE]]   (default 7 rounds; PROFILE a file
# `schedlab calibrate` wrote, or a built-in profile name)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
profile=${2:-}
. bench/lib.sh
whole_in_range messaging-tasks.sh ROUNDS "$rounds" 1 100
schedlab_bin || exit 1
perf_ok=0
if command -v perf >/dev/null && perf stat -x, -e page-faults true >/dev/null 2>&1; then
  perf_ok=1
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# One real run: "TIME FAULTS" (FAULTS "-" without perf).
real_run() {
  local loops=$1 tasks=$2 out
  local cmd=("$SCHEDLAB" run messaging --groups 4 --loops "$loops" --transport pipe --tasks "$tasks" --runs 1 --counters proc)
  if [ "$perf_ok" = 1 ]; then
    out=$(perf stat -x, -e page-faults -o "$dir/perf" -- "${cmd[@]}" 2>&1) || true
    printf '%s %s\n' "$(grep -o 'Time: [0-9.]*' <<<"$out" | head -1 | cut -d' ' -f2)" \
      "$(awk -F, '/page-faults/ {print $1}' "$dir/perf")"
  else
    out=$("${cmd[@]}" 2>&1) || true
    printf '%s -\n' "$(grep -o 'Time: [0-9.]*' <<<"$out" | head -1 | cut -d' ' -f2)"
  fi
}

before=$(load1)
for i in $(seq "$rounds"); do
  for loops in 50 200; do
    for tasks in threads processes; do
      read -r t f <<<"$(real_run "$loops" "$tasks")"
      [ -n "$t" ] || { echo "messaging-tasks.sh: a run printed no Time; run schedlab run messaging --transport pipe --tasks $tasks by hand to see why" >&2; exit 1; }
      echo "$t" >>"$dir/time-$loops-$tasks"
      echo "$f" >>"$dir/faults-$loops-$tasks"
    done
  done
done
after=$(load1)

printf 'messaging, 4 groups, pipes, real kernel, %d alternating rounds (medians)\n' "$rounds"
printf '%-8s %-10s %10s %10s %12s\n' loops tasks "time (s)" "vs threads" "page faults"
for loops in 50 200; do
  th=$(median <"$dir/time-$loops-threads")
  for tasks in threads processes; do
    t=$(median <"$dir/time-$loops-$tasks")
    f=$(grep -v '^-$' "$dir/faults-$loops-$tasks" | median)
    [ "$perf_ok" = 1 ] || f=-
    printf '%-8s %-10s %10.4f %10.2f %12s\n' "$loops" "$tasks" "$t" "$(awk -v a="$t" -v b="$th" 'BEGIN {print a / b}')" "$f"
  done
done
if [ -n "$profile" ]; then
  for loops in 50 200; do
    for tasks in threads processes; do
      sim=$("$SCHEDLAB" run messaging --groups 4 --loops "$loops" --transport pipe --tasks "$tasks" \
        --backend sim --cpus "$(nproc)" --policy eevdf:base_slice=700 --profile "$profile" --runs 4 2>&1 |
        grep -o 'Time: [0-9.]*' | cut -d' ' -f2 | median)
      t=$(median <"$dir/time-$loops-$tasks")
      printf 'simulated, %s loops, %s (%s): %.4f s, error against real %+.1f %%\n' "$loops" "$tasks" "$profile" "$sim" \
        "$(awk -v s="$sim" -v r="$t" 'BEGIN {print (s - r) / r * 100}')"
    done
  done
fi
printf 'load average (1 min): %s before, %s after\n' "$before" "$after"
if awk -v a="$before" -v b="$after" 'BEGIN {exit !(a >= 1.5 || b >= 1.5)}'; then
  echo "warning: load 1.5 or more; the times above include other tasks' slices"
fi
