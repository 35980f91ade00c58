#!/usr/bin/env bash
# What a timed sleep costs the sleeping thread: a C loop of clock_nanosleep (as cyclictest's
# measuring thread sleeps: an absolute CLOCK_MONOTONIC deadline) against schedlab's replay of
# the same sleeps (a workload file of `sleep` steps, what `schedlab record` writes for a timer
# sleep), each with the default timer slack of a normal thread (50 us) and with 1 ns (what
# schedlab's own workloads set). Rounds alternate the four variants; each prints the thread's
# CPU time per sleep (the C loop's CLOCK_THREAD_CPUTIME_ID around its loop, the replay's
# per-task CPU time from its run record), then the medians and their ratios to the C loop's.
# Needs gcc (apt-get install build-essential) and python3.
#
# Usage: bench/record-sleep.sh [ROUNDS] [SLEEPS] [SLEEP_US]   (default 7 2000 925)
#        SCHEDLAB=BIN bench/record-sleep.sh ...   (replay with BIN, not this tree's build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-7}
sleeps=${2:-2000}
sleep_us=${3:-925}
whole_in_range record-sleep.sh ROUNDS "$rounds" 1 100
whole_in_range record-sleep.sh SLEEPS "$sleeps" 100 100000
whole_in_range record-sleep.sh SLEEP_US "$sleep_us" 10 100000
for tool in gcc python3; do
  command -v "$tool" >/dev/null || { echo "record-sleep.sh: $tool not found; apt-get install build-essential python3" >&2; exit 1; }
done
schedlab_bin || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The C sleeper: SLEEPS absolute-deadline sleeps of SLEEP_NS, timer slack SLACK_NS (0: the
# default); prints its thread's CPU time per sleep, us.
cat >"$dir/sleeper.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/prctl.h>
static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
int main(int argc, char **argv) {
  if (argc != 4) return 2;
  int n = atoi(argv[1]);
  long ns = atol(argv[2]), slack = atol(argv[3]);
  if (slack > 0 && prctl(PR_SET_TIMERSLACK, slack) != 0) return 3;
  double c0 = cpu_ns();
  for (int i = 0; i < n; i++) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += ns;
    t.tv_sec += t.tv_nsec / 1000000000;
    t.tv_nsec %= 1000000000;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
  }
  printf("%.3f\n", (cpu_ns() - c0) / n / 1e3);
  return 0;
}
EOF
gcc -O2 -o "$dir/sleeper" "$dir/sleeper.c"
for slack in 1ns 50us; do
  cat >"$dir/replay-$slack.toml" <<EOF
name = "sleeps"
computes = "cumulative"
[groups.s]
timer_slack = "$slack"
steps = [ { loop = $sleeps, steps = [ { sleep = "${sleep_us}us" } ] } ]
EOF
done

# One variant's CPU time per sleep, us.
measure() {
  case $1 in
    c-50us) "$dir/sleeper" "$sleeps" "$((sleep_us * 1000))" 0 ;;
    c-1ns) "$dir/sleeper" "$sleeps" "$((sleep_us * 1000))" 1 ;;
    replay-*)
      "$SCHEDLAB" run "$dir/$1.toml" --runs 1 --json "$dir/out.json" -q >/dev/null
      python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["configs"][0]["repetitions"][0]["counters"]["s"]
print("%.3f" % (c["cpu_time_s"] * 1e6 / int(sys.argv[2])))' "$dir/out.json" "$sleeps"
      ;;
  esac
}

variants="c-50us replay-50us c-1ns replay-1ns"
echo "$sleeps sleeps of $sleep_us us a run, $rounds rounds; load average before: $(load1)"
for round in $(seq 1 "$rounds"); do
  line="round $round (load $(load1)):"
  for v in $variants; do
    x=$(measure "$v")
    echo "$x" >>"$dir/$v.txt"
    line+=" $v $x"
  done
  echo "$line"
done
echo "CPU time per sleep, us, median of $rounds (ratio to the C loop with the same slack):"
for slack in 50us 1ns; do
  c=$(median <"$dir/c-$slack.txt")
  r=$(median <"$dir/replay-$slack.txt")
  awk -v s="$slack" -v c="$c" -v r="$r" 'BEGIN { printf "  slack %-5s C loop %8.3f   replay %8.3f   x%.3f\n", s, c, r, r / c }'
done
