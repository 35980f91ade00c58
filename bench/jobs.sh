#!/usr/bin/env bash
# Simulated sweeps on every core (--jobs): times a 16-configuration × 4-run chat sweep
# (4 policies × 4 CPU counts) with --jobs 1 and with --jobs N, alternating, and prints the
# median wall times, the speedup and the goal: T(N) <= T(1) / N × 1.25. It also checks that
# both wrote the same record (started_unix aside) — the point of --jobs is the same numbers,
# sooner.
#
#   bench/jobs.sh [N] [REPS]    (default N: this machine's CPUs (nproc); 3 pairs)
#   MESSAGES=500 bench/jobs.sh  (the chat's --messages, which sets the sweep's length)
#
# Wall time is what --jobs shortens; on a machine shared with other jobs it counts their share
# too, so the 1-minute load average is printed with the figures: measure on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
jobs=${1:-$(nproc)}
reps=${2:-3}
whole_in_range bench/jobs.sh N "$jobs" 1 1024
whole_in_range bench/jobs.sh REPS "$reps" 1 100
messages=${MESSAGES:-500}
whole_in_range bench/jobs.sh MESSAGES "$messages" 1 1000000
schedlab_bin || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sweep=(sweep chat --backend sim --rooms 4 --users 10 --messages "$messages"
  --vary policy=o1,cfs,eevdf,staircase --vary cpus=1,2,4,8 --runs 4 -q)

# time_sweep J: the sweep's wall seconds with --jobs J; its record in $tmp/jJ/r.json (the same
# name each time: the record holds the command line).
time_sweep() {
  mkdir -p "$tmp/j$1"
  (cd "$tmp/j$1" && /usr/bin/time -f %e -o time "$SCHEDLAB" "${sweep[@]}" --jobs "$1" --json r.json >/dev/null)
  cat "$tmp/j$1/time"
}

: >"$tmp/t1"
: >"$tmp/tn"
for _ in $(seq "$reps"); do
  time_sweep 1 >>"$tmp/t1"
  time_sweep "$jobs" >>"$tmp/tn"
done
same=$(cmp -s <(grep -v started_unix "$tmp/j1/r.json") <(grep -v started_unix "$tmp/j$jobs/r.json") && echo yes || echo NO)
t1=$(median <"$tmp/t1")
tn=$(median <"$tmp/tn")
awk -v t1="$t1" -v tn="$tn" -v n="$jobs" -v reps="$reps" -v load="$(load1)" -v same="$same" -v cpus="$(nproc)" 'BEGIN {
  goal = t1 / n * 1.25
  printf "chat sweep, 16 configurations x 4 runs (median of %d): --jobs 1 %.2f s, --jobs %d %.2f s\n", reps, t1, n, tn
  printf "speedup %.2fx on %d CPUs (ideal %dx); goal <= T1/N x 1.25 = %.2f s: %s\n", t1 / tn, cpus, n, goal, (tn <= goal ? "met" : "NOT met")
  printf "same record with --jobs 1 and --jobs %d: %s; load average (1 min) at the end: %s\n", n, same, load
}'
