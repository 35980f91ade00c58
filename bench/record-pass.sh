#!/usr/bin/env bash
# Where a replayed periodic pass's CPU time goes: cyclictest's measuring thread recorded and
# replayed, against the same pass written small in C and in schedlab's own steps.
#
# Each round, alternating the variants, measures the measuring thread's CPU time a pass (µs):
#   recorded      cyclictest -t1 -i INTERVAL -l PASSES -q under `schedlab record` (the
#                 kernel's charge, as the file's computes sum it); R is this round's figure
#   replay        `schedlab run` of that recording's file (the task's thread CPU clock)
#   sl-sleep      a schedlab file of PASSES sleeps of INTERVAL (cumulative computes, no compute)
#   sl-pass       the same with a compute of R before each sleep (the replay's shape)
#   c-sleep-def   C: sleep to an absolute time, read CLOCK_MONOTONIC (cyclictest's pass, bare),
#                 the default timer slack (cyclictest's: 50 µs for a normal thread)
#   c-sleep       the same with 1 ns of timer slack (what the replay's tasks set)
#   c-rel         C: sleep INTERVAL from the clock read before the call (the replay's sleep,
#                 `now + d`), 1 ns of slack: every pass sleeps, as the replay's do, where an
#                 absolute deadline already passed (a late wakeup on a loaded machine) makes the
#                 call return at once, a pass without a sleep that costs a fraction of one
#   c-read        c-sleep and one read of the thread CPU clock (what a cumulative compute reads)
#   c-pass        c-read spending up to R a pass by that clock (the replay's pass in C)
#   c-recorded    c-sleep-def under `schedlab record` (the recorder's own cost on a pass)
# then the medians, and what each part of the replay's pass costs: the sleep path (c-rel),
# the CPU clock read (c-read - c-sleep), schedlab's own steps beside the sleep (sl-sleep -
# c-rel: both sleep in every pass), and the replay's floor: the least a replayed pass of a sleep
# and a compute costs (sl-sleep + the read), against R. The C loops' passes that did not sleep
# (their absolute deadline had passed) are printed per variant, as "skipped". A recorded pass
# below the floor cannot be replayed to its CPU time: the run's report then names the group
# ("cumulative computes: ... beyond").
# C figures are the thread CPU clock around the loop; schedlab's, the run record's per-task CPU
# time (the thread CPU clock around the body); recorded ones, the kernel's sum_exec_runtime.
# Needs root (recording) and: apt-get install rt-tests build-essential python3
#
# Usage: bench/record-pass.sh [ROUNDS] [PASSES] [INTERVAL_US]   (default 5 2000 1000)
#        SCHEDLAB=BIN bench/record-pass.sh ...   (record and replay with BIN)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
passes=${2:-2000}
interval_us=${3:-1000}
whole_in_range record-pass.sh ROUNDS "$rounds" 1 100
whole_in_range record-pass.sh PASSES "$passes" 100 100000
whole_in_range record-pass.sh INTERVAL_US "$interval_us" 100 100000
for tool in cyclictest gcc python3; do
  command -v "$tool" >/dev/null || { echo "record-pass.sh: $tool not found; apt-get install rt-tests build-essential python3" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "record-pass.sh: needs root (schedlab record)" >&2; exit 1; }
schedlab_bin || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The C pass: MODE sleep (sleep, read the monotonic clock), read (and read the thread CPU
# clock), pass (and spend until that clock reaches PASS_NS a pass); prints CPU µs a pass.
cat >"$dir/pass.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
static long long ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: pass sleep|rel|read|pass PASSES INTERVAL_NS SLACK_NS PASS_NS\n");
    return 2;
  }
  int rel = strcmp(argv[1], "rel") == 0;
  int read = strcmp(argv[1], "sleep") != 0 && !rel, spend = strcmp(argv[1], "pass") == 0;
  if (read && !spend && strcmp(argv[1], "read") != 0) {
    fprintf(stderr, "pass: mode '%s'; accepted: sleep, rel, read, pass\n", argv[1]);
    return 2;
  }
  long skipped = 0;
  int n = atoi(argv[2]);
  long long interval = atoll(argv[3]), slack = atoll(argv[4]), pass = atoll(argv[5]);
  if (slack > 0 && prctl(PR_SET_TIMERSLACK, slack) != 0) return 3;
  volatile long long sink = 0;
  long long c0 = ns(CLOCK_THREAD_CPUTIME_ID);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (int i = 1; i <= n; i++) {
    if (rel)
      clock_gettime(CLOCK_MONOTONIC, &next);
    next.tv_nsec += interval;
    next.tv_sec += next.tv_nsec / 1000000000;
    next.tv_nsec %= 1000000000;
    if (!rel && next.tv_sec * 1000000000LL + next.tv_nsec <= ns(CLOCK_MONOTONIC))
      skipped++;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    sink += ns(CLOCK_MONOTONIC);
    if (read) {
      long long now = ns(CLOCK_THREAD_CPUTIME_ID), target = c0 + i * pass;
      while (spend && now < target) {
        long long until = ns(CLOCK_MONOTONIC) + (target - now);
        while (ns(CLOCK_MONOTONIC) < until) {
        }
        now = ns(CLOCK_THREAD_CPUTIME_ID);
      }
    }
  }
  printf("%.3f %ld\n", (ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)n / 1e3, skipped);
  return 0;
}
EOF
gcc -O2 -o "$dir/pass" "$dir/pass.c"

# group_cpu FILE.json [GROUP]: CPU µs a pass of GROUP (default: the group with the most
# voluntary switches, the measuring thread) in a record, median over its repetitions; prints
# "GROUP µs".
group_cpu() {
  python3 - "$1" "${2:-}" "$passes" <<'EOF'
import json, statistics, sys
reps = json.load(open(sys.argv[1]))["configs"][0]["repetitions"]
group = sys.argv[2] or max((g for g in reps[0]["counters"] if g != "total"),
                           key=lambda g: reps[0]["counters"][g]["voluntary_switches"] or 0)
cpu = statistics.median(r["counters"][group]["cpu_time_s"] for r in reps)
print(group, "%.3f" % (cpu * 1e6 / int(sys.argv[3])))
EOF
}

# sl_file NAME COMPUTE_US: a file of PASSES passes of [compute COMPUTE_US,] sleep INTERVAL.
sl_file() {
  local step=""
  [ "$2" = 0 ] || step="{ compute = \"${2}us\" }, "
  cat >"$dir/$1.toml" <<EOF
name = "$1"
computes = "cumulative"
[groups.m]
steps = [ { loop = $passes, steps = [ $step{ sleep = "${interval_us}us" } ] } ]
EOF
}

interval_ns=$((interval_us * 1000))

# c_pass MODE SLACK_NS PASS_NS: run the C pass; sets x (CPU µs a pass) and skipped (its passes
# whose absolute deadline had passed before the call, which did not sleep).
c_pass() {
  read -r x skipped <<<"$("$dir/pass" "$1" "$passes" "$interval_ns" "$2" "$3")"
}
variants="recorded replay sl-sleep sl-pass c-sleep-def c-sleep c-rel c-read c-pass c-recorded"
echo "$passes passes of $interval_us us a run, $rounds rounds; load average before: $(load1)"
for round in $(seq 1 "$rounds"); do
  "$SCHEDLAB" record -o "$dir/cyc.toml" --json "$dir/cyc.json" -- \
    cyclictest -t1 -i "$interval_us" -l "$passes" -q >/dev/null 2>&1
  read -r group r <<<"$(group_cpu "$dir/cyc.json")"
  sl_file sl-sleep 0
  sl_file sl-pass "$r"
  r_ns=$(awk -v r="$r" 'BEGIN { printf "%d", r * 1000 }')
  line="round $round (load $(load1)): recorded $r"
  echo "$r" >>"$dir/recorded.txt"
  for v in $variants; do
    case $v in
      recorded) continue ;;
      replay)
        "$SCHEDLAB" run "$dir/cyc.toml" --runs 1 --json "$dir/out.json" -q >/dev/null
        x=$(group_cpu "$dir/out.json" "$group" | cut -d' ' -f2) ;;
      sl-*)
        "$SCHEDLAB" run "$dir/$v.toml" --runs 1 --json "$dir/out.json" -q >/dev/null
        x=$(group_cpu "$dir/out.json" m | cut -d' ' -f2) ;;
      c-sleep-def) c_pass sleep 0 0 ;;
      c-sleep) c_pass sleep 1 0 ;;
      c-rel) c_pass rel 1 0 ;;
      c-read) c_pass read 1 0 ;;
      c-pass) c_pass pass 1 "$r_ns" ;;
      c-recorded)
        "$SCHEDLAB" record -o "$dir/c.toml" --json "$dir/c.json" -- \
          "$dir/pass" sleep "$passes" "$interval_ns" 0 0 >/dev/null 2>&1
        skipped=-
        x=$(group_cpu "$dir/c.json" | cut -d' ' -f2) ;;
    esac
    echo "$x" >>"$dir/$v.txt"
    line+=" $v $x"
    case $v in c-sleep* | c-rel | c-read | c-pass) line+=" (skipped $skipped)" ;; esac
  done
  echo "$line"
done
echo "measuring thread, CPU time a pass, us, median of $rounds rounds (load average after: $(load1)):"
for v in $variants; do
  printf '  %-12s %8.3f\n' "$v" "$(median <"$dir/$v.txt")"
done
m() { median <"$dir/$1.txt"; }
awk -v r="$(m recorded)" -v rp="$(m replay)" -v s="$(m c-rel)" -v rd="$(m c-read)" -v cs="$(m c-sleep)" \
  -v ss="$(m sl-sleep)" -v cr="$(m c-recorded)" -v cd="$(m c-sleep-def)" 'BEGIN {
  printf "a replayed pass, us: sleep path (C, a sleep every pass) %.3f; CPU clock read %.3f; schedlab beside the sleep %.3f\n", s, rd - cs, ss - s
  printf "  floor (schedlab sleep alone) %.3f, with a read %.3f, against the recorded pass %.3f; replay / recorded %.3f\n", ss, ss + rd - cs, r, rp / r
  printf "  the recorder on a bare pass %.3f (c-recorded - c-sleep-def)\n", cr - cd
}'
