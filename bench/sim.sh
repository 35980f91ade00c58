#!/usr/bin/env bash
# Simulator speed and memory (issues: simulator core, historic policies, 21). Prints simulated
# scheduling events per second of the process's user CPU time for three cases (chat, a yield
# storm, seed 003's lookup walk under dcache_lock), per policy, the engine alone under a trivial
# FIFO policy (crates/schedlab-sim/examples/engine_speed.rs), and peak RSS against task count.
#
#   bench/sim.sh [REPS]      (default 3 repetitions per case; the median events/s is printed)
#   POLICIES="o1 ule" bench/sim.sh 1
#   CASES="chat --rooms 10 --messages 500 --cpus 8;lookup --threads 8 --lookups 100000 --cpus 8" bench/sim.sh
#                            (other cases, separated by ';': longer runs measure finer)
#   SCALE_ONLY=1 bench/sim.sh      (only the scale table: CPUs 8..1024 x tasks 1k..100k)
#   OLD=/tmp/old/schedlab OLD_ENGINE=/tmp/old/engine_speed bench/sim.sh 5
#                            (comparison: old and new binaries alternating, REPS times each)
#
# Events/s are events / user CPU seconds of the whole process (setup included), from
# bash's time: on a machine shared with other jobs, wall time counts their share too. User
# time still varies with the load (SMT siblings, caches), which is why the comparison runs the
# old and the new binary alternately and prints the medians and their ratio, not figures from
# different runs. OLD_ENGINE is engine_speed built from the old tree (same example source).
#
# Goals (issue 21): >= 10 million events/s on one core for every case, EEVDF's yield included;
# the engine with the trivial policy >= 30 M/s; memory linear in tasks, 2048 tasks < 64 MiB.
# linux24 scans every runnable task at each schedule (O(n) by design): its goal for yield with
# 2048 threads on 8 CPUs is a user time under 30 s for 1 simulated second, printed instead.
# Events are the simulator's queue pops (burst ends, ticks, IPIs, timers): what it schedules.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
cargo build --release -q
cargo build --release -q -p schedlab-sim --example engine_speed
sl=target/release/schedlab
engine=target/release/examples/engine_speed

# One run of BINARY ARGS...: prints "EVENTS USER_SECONDS" (the events of its progress line).
# The user time is bash's `time` (getrusage of the child, printed to the millisecond):
# /usr/bin/time prints it in 10 ms steps, a few percent of the short cases.
one() {
  local out TIMEFORMAT='user %3U'
  out=$( { time "$@" >/dev/null; } 2>&1)
  local ev us
  ev=$(sed -n 's/.*\[simulated \([0-9]*\) events in .*/\1/p' <<<"$out" | tail -1)
  us=$(sed -n 's/^user //p' <<<"$out" | tail -1)
  echo "${ev:-0} ${us:-0}"
}

# The median of the numbers on stdin.
. bench/lib.sh

# measure NEW_CMD... [-- OLD_CMD...]: REPS runs of each, alternating (old first); prints the
# median events per user second of new and of old (0 when there is no old), and the median user
# seconds of each.
measure() {
  local new=() old=() seen=0
  for a in "$@"; do
    if [ "$a" = "--" ] && [ $seen = 0 ]; then seen=1; continue; fi
    if [ $seen = 0 ]; then new+=("$a"); else old+=("$a"); fi
  done
  local nr="" or="" nu="" ou=""
  for _ in $(seq "$reps"); do
    if [ ${#old[@]} -gt 0 ]; then
      read -r e u < <(one "${old[@]}")
      or+="$(awk -v e="$e" -v u="$u" 'BEGIN { print (u > 0 ? e / u : 0) }')"$'\n'
      ou+="$u"$'\n'
    fi
    read -r e u < <(one "${new[@]}")
    nr+="$(awk -v e="$e" -v u="$u" 'BEGIN { print (u > 0 ? e / u : 0) }')"$'\n'
    nu+="$u"$'\n'
  done
  echo "$(median <<<"$nr") $(median <<<"${or:-0}") $(median <<<"$nu") $(median <<<"${ou:-0}")"
}

# row LABEL GOAL NEW_CMD... [-- OLD_CMD...]: one printed row.
row() {
  local label=$1 goal=$2
  shift 2
  read -r n o nu ou < <(measure "$@")
  if [ -n "${OLD:-}" ]; then
    printf '%-58s %12.0f %12.0f %7.2fx %7.2fx\n' "$label" "$o" "$n" \
      "$(awk -v n="$n" -v o="$o" 'BEGIN { print (o > 0 ? n / o : 0) }')" \
      "$(awk -v n="$n" -v g="$goal" 'BEGIN { print n / g }')"
  else
    printf '%-58s %14.0f %7.2fx\n' "$label" "$n" "$(awk -v n="$n" -v g="$goal" 'BEGIN { print n / g }')"
  fi
}

if [ -z "${SCALE_ONLY:-}" ]; then
if [ -n "${OLD:-}" ]; then
  echo "old: $OLD; new: $sl; $reps runs each, alternating; events per user CPU second, medians"
  printf '%-58s %12s %12s %8s %8s\n' "case" "old ev/s" "new ev/s" "new/old" "vs goal"
else
  printf '%-58s %14s %8s\n' "case" "events/s" "vs goal"
fi
all=$("$sl" list | sed -n '/^SIMULATED POLICIES/,/^$/p' | awk '/^  [a-z]/ { print $1 }')
cases=${CASES:-"chat --rooms 10 --messages 100 --cpus 8;yield --threads 2048 --duration 1s --cpus 8;lookup --threads 8 --lookups 20000 --cpus 8"}
IFS=';' read -r -a case_list <<<"$cases"
for policy in ${POLICIES:-$all}; do
  for case in "${case_list[@]}"; do
    # shellcheck disable=SC2206
    args=(run $case --backend sim --policy "$policy" --runs 1)
    if [ "$policy" = linux24 ] && [ "${case%% *}" = yield ]; then
      old=()
      [ -n "${OLD:-}" ] && old=(-- "$OLD" "${args[@]}")
      read -r _ _ nu ou < <(measure "$sl" "${args[@]}" "${old[@]}")
      if [ -n "${OLD:-}" ]; then
        printf '%-58s %10s s %10s s %7.2fx %7.2fx\n' "$policy: $case (user s)" "$ou" "$nu" \
          "$(awk -v n="$nu" -v o="$ou" 'BEGIN { print (n > 0 ? o / n : 0) }')" \
          "$(awk -v s="$nu" 'BEGIN { print (s > 0 ? 30 / s : 0) }')"
      else
        printf '%-58s %12s s %7.2fx\n' "$policy: $case (user s)" "$nu" "$(awk -v s="$nu" 'BEGIN { print (s > 0 ? 30 / s : 0) }')"
      fi
      continue
    fi
    old=()
    [ -n "${OLD:-}" ] && old=(-- "$OLD" "${args[@]}")
    row "$policy: $case" 10e6 "$sl" "${args[@]}" "${old[@]}"
  done
done
# The engine alone: the yield storm under the example's FIFO policy.
old=()
[ -n "${OLD_ENGINE:-}" ] && old=(-- "$OLD_ENGINE" fifo 2048 8 1000)
if [ -n "${OLD:-}" ] && [ -z "${OLD_ENGINE:-}" ]; then
  echo "(engine row: no OLD_ENGINE given, new only)"
fi
row "engine (fifo): yield --threads 2048 --duration 1s --cpus 8" 30e6 "$engine" fifo 2048 8 1000 "${old[@]}"

echo
printf '%-58s %14s\n' "case (cfs, 8 CPUs, 1 repetition)" "peak RSS MiB"
for threads in 256 1024 2048 4096; do
  kb=$( { /usr/bin/time -f '%M' "$sl" run yield --backend sim --policy cfs --cpus 8 \
          --threads "$threads" --duration 200ms --runs 1 --quiet >/dev/null; } 2>&1 | tail -1)
  printf '%-58s %14.1f\n' "yield $threads threads" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
done
fi

# Scale (issue 21): a yield storm of 1k … 100k threads on 8 … 1024 CPUs, events per user CPU
# second and peak RSS. Every run simulates SCALE_CPU_S CPU-seconds in all (default 2: 250 ms on
# 8 CPUs, about 2 ms on 1024), so the rows handle comparable numbers of events. That short a run
# is mostly the creation of the tasks when they are many, so each case also runs 4 times as long
# (simulated) and the steady state is the difference of the two: (events of the long run −
# events of the short) / (user time of the long − user time of the short), what a run pays per
# event once its tasks exist. With OLD=, the old and the new binary run alternately, REPS times
# each, and the row prints both medians and new/old.
# Goal: 100k tasks on 1024 CPUs under 1 GiB and >= 5 M events/s.
#   SCALE_POLICY=cfs SCALE_CPUS="8 1024" SCALE_TASKS="100000" bench/sim.sh 1
# SCALE_ONLY=1 prints this table alone.

# scale_one BINARY CPUS TASKS US: prints "EVENTS USER_SECONDS RSS_KIB" of one run.
scale_one() {
  local out
  out=$( { /usr/bin/time -f 'user %U rss %M' "$1" run yield --backend sim --policy "$scale_policy" \
           --cpus "$2" --threads "$3" --duration "${4}us" --runs 1 >/dev/null; } 2>&1)
  local ev us kb
  ev=$(sed -n 's/.*\[simulated \([0-9]*\) events in .*/\1/p' <<<"$out" | tail -1)
  us=$(sed -n 's/^user \([0-9.]*\) rss.*/\1/p' <<<"$out" | tail -1)
  kb=$(sed -n 's/.* rss //p' <<<"$out" | tail -1)
  echo "${ev:-0} ${us:-0} ${kb:-0}"
}

# scale_case BINARY CPUS TASKS US: one short and one long run; prints "RATE STEADY RSS_KIB".
scale_case() {
  read -r e1 u1 kb < <(scale_one "$1" "$2" "$3" "$4")
  read -r e4 u4 _ < <(scale_one "$1" "$2" "$3" $(($4 * 4)))
  awk -v e1="$e1" -v u1="$u1" -v e4="$e4" -v u4="$u4" -v kb="$kb" \
    'BEGIN { printf "%f %f %d\n", (u1 > 0 ? e1 / u1 : 0), (u4 > u1 ? (e4 - e1) / (u4 - u1) : 0), kb }'
}

echo
scale_policy=${SCALE_POLICY:-eevdf}
if [ -n "${OLD:-}" ]; then
  echo "old: $OLD; new: $sl; $reps runs each, alternating; events per user CPU second, medians;"
  echo "steady: the extra events per extra user second of a run 4x as long (simulated)"
  printf '%-44s %10s %10s %6s %10s %10s %6s %8s\n' "scale case ($scale_policy, yield, 1 repetition)" \
    "old ev/s" "new ev/s" "new/old" "old steady" "new steady" "new/old" "RSS MiB"
else
  echo "events per user CPU second (median of $reps); steady: the extra events per extra user second"
  echo "of a run 4x as long (simulated)"
  printf '%-44s %10s %10s %8s\n' "scale case ($scale_policy, yield, 1 repetition)" "events/s" "steady" "RSS MiB"
fi
for cpus in ${SCALE_CPUS:-8 64 256 1024}; do
  for tasks in ${SCALE_TASKS:-1000 10000 100000}; do
    us=$(awk -v c="$cpus" -v s="${SCALE_CPU_S:-2}" 'BEGIN { printf "%d", s * 1e6 / c }')
    nr="" ns="" or="" os="" kb=0
    for _ in $(seq "$reps"); do
      if [ -n "${OLD:-}" ]; then
        read -r r st _ < <(scale_case "$OLD" "$cpus" "$tasks" "$us")
        or+="$r"$'\n'
        os+="$st"$'\n'
      fi
      read -r r st kb < <(scale_case "$sl" "$cpus" "$tasks" "$us")
      nr+="$r"$'\n'
      ns+="$st"$'\n'
    done
    label="$cpus CPUs, $tasks threads, ${us}us"
    mib=$(awk -v k="$kb" 'BEGIN { print k / 1024 }')
    n=$(median <<<"$nr")
    s=$(median <<<"$ns")
    if [ -n "${OLD:-}" ]; then
      o=$(median <<<"$or")
      so=$(median <<<"$os")
      printf '%-44s %10.0f %10.0f %5.2fx %10.0f %10.0f %5.2fx %8.1f\n' "$label" "$o" "$n" \
        "$(awk -v n="$n" -v o="$o" 'BEGIN { print (o > 0 ? n / o : 0) }')" "$so" "$s" \
        "$(awk -v n="$s" -v o="$so" 'BEGIN { print (o > 0 ? n / o : 0) }')" "$mib"
    else
      printf '%-44s %10.0f %10.0f %8.1f\n' "$label" "$n" "$s" "$mib"
    fi
  done
done
