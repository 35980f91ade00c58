#!/usr/bin/env bash
# rt-app's tutorial example4 (two threads that run 10 ms, resume the other and suspend
# themselves, github.com/scheduler-tools/rt-app doc/examples/tutorial/example4.json), with
# rt-app and with schedlab, and with the hand-off's CPUs fixed — what a `run` after a
# suspend/resume hand-off takes:
#
#   bench/rtapp-handoff.sh [ROUNDS] [SECONDS]      # default 5 rounds of 2 s per variant
#
# Variants, each ROUNDS times, in alternating order (forward, then backward):
#   rt-app          the file as upstream writes it (SCHED_OTHER, any CPU);
#   rt-app same     both threads on CPU 0: the woken thread runs where the waker ran;
#   rt-app cross    thread0 on CPU 0, thread1 on CPU 1: every run on a CPU idle since the
#                   last but one run;
#   schedlab        the file as upstream writes it, `run` as CPU time (schedlab's default);
#   schedlab loops  the same with `--run-as loops`: rt-app's semantic, the same loop count.
# All at one `calibration`, the ns per loop rt-app's own SCHED_FIFO passes took on CPU 0 at the
# start (as bench/rtapp.sh's CALIBRATION=measure), so every loop-count variant runs the same
# count. Per variant, over its runs' passes (both tools' per-thread logs, rt-app's format):
# passes a run (both threads; its min-max over the runs, and `stuck`: runs with no pass, where
# both threads' first runs ended so close together that each resume was lost), the median `run` (µs, wall time of the run event: rt-app.c's clock_gettime around
# loadwait), the median period, `run/asked`, the median ns per loop (run × 1000 / perf; for a
# loop count, how fast the loop went — for CPU time it is not a loop count, `-`), and the
# median run over rt-app's (first variant). On a quiet machine, rt-app's `run/asked` well above
# 1 with `same` near 1 says the loop runs slower after a hand-off to another CPU; schedlab's CPU
# time does not stretch so, its loop count does.
# POLICY=SCHED_FIFO gives both threads SCHED_FIFO priority 10 in every variant (root), so that
# other work on a loaded machine does not preempt the runs: what is left is the loop's own speed.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
secs=${2:-2}
whole_in_range bench/rtapp-handoff.sh ROUNDS "$rounds" 1 100
whole_in_range bench/rtapp-handoff.sh SECONDS "$secs" 1 600
if ! command -v rt-app >/dev/null; then
  echo "bench/rtapp-handoff.sh: rt-app not found (install: apt-get install rt-app)" >&2
  exit 1
fi
policy=${POLICY:-SCHED_OTHER}
case $policy in
  SCHED_OTHER) sched="" ;;
  SCHED_FIFO) sched='"policy": "SCHED_FIFO", "priority": 10,' ;;
  *) echo "bench/rtapp-handoff.sh: POLICY '$policy' is not accepted; use SCHED_OTHER or SCHED_FIFO" >&2; exit 2 ;;
esac
schedlab_bin || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The loop's ns as rt-app's own SCHED_FIFO passes on CPU 0 take it (bench/rtapp.py nsloop).
if ! ns=$(rtapp_measure_ns "$tmp"); then
  echo "bench/rtapp-handoff.sh: rt-app's loop could not be measured: $(grep -m1 . "$tmp/nsloop.out")" >&2
  exit 1
fi
cal=${ns% *}

# write VARIANT CPUS0 CPUS1: the file of VARIANT, logging into $tmp/VARIANT/RUN.
write() {
  cat >"$tmp/$1.json" <<EOF
{ "global": { "duration": $secs, "calibration": $cal, "logdir": "$tmp/$1/RUN", "log_basename": "rt-app",
              "ftrace": false, "gnuplot": false },
  "tasks": { "thread0": { "loop": -1, $sched $2 "run": 10000, "resume": "thread1", "suspend": "thread0" },
             "thread1": { "loop": -1, $sched $3 "run": 10000, "resume": "thread0", "suspend": "thread1" } } }
EOF
}
write free "" ""
write same '"cpus": [0],' '"cpus": [0],'
write cross '"cpus": [0],' '"cpus": [1],'
variants=(rt-app rt-app-same rt-app-cross schedlab schedlab-loops)
# run VARIANT R: one run of VARIANT, its logs in $tmp/VARIANT/R.
run() {
  local d="$tmp/$1/$2" file
  mkdir -p "$d"
  case $1 in
    rt-app) file=free ;;
    rt-app-same) file=same ;;
    rt-app-cross) file=cross ;;
    schedlab*) file=free ;;
  esac
  sed "s#$tmp/$file/RUN#$d#" "$tmp/$file.json" >"$d.json"
  case $1 in
    rt-app*) timeout -s INT $((secs + 30)) rt-app "$d.json" >"$d.out" 2>&1 || echo "$1 run $2: rt-app failed (status $?)" ;;
    schedlab) "$SCHEDLAB" run "$d.json" --runs 1 --timeout $((secs * 5 + 20))s --rt-app-logs "$d" >"$d.out" 2>&1 || echo "$1 run $2: schedlab failed: $(grep -m1 error "$d.out")" ;;
    schedlab-loops) "$SCHEDLAB" run "$d.json" --run-as loops --runs 1 --timeout $((secs * 5 + 20))s --rt-app-logs "$d" >"$d.out" 2>&1 || echo "$1 run $2: schedlab failed: $(grep -m1 error "$d.out")" ;;
  esac
}
echo "# example4's hand-off: $rounds round(s) of ${secs}s per variant, alternating; $policy; calibration $cal ns (rt-app's SCHED_FIFO loop took ${ns#* } ns); load average $(load1) at the start"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order=("${variants[@]}"); else order=(); for ((i = ${#variants[@]} - 1; i >= 0; i--)); do order+=("${variants[i]}"); done; fi
  for v in "${order[@]}"; do run "$v" "$r"; done
done
echo "# load average $(load1) at the end"
python3 - "$tmp" "${variants[@]}" <<'EOF'
import os, sys
tmp, variants = sys.argv[1], sys.argv[2:]

def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")

rows = {}
for v in variants:
    passes, runs, periods, asked, nsl = [], [], [], [], []
    for r in sorted(os.listdir(os.path.join(tmp, v))):
        d = os.path.join(tmp, v, r)
        if not os.path.isdir(d):
            continue
        n = 0
        for name in os.listdir(d):
            if not name.endswith(".log"):
                continue
            for line in open(os.path.join(d, name)):
                if line.startswith("#") or not line.strip():
                    continue
                c = [float(x) for x in line.split()]
                n += 1
                runs.append(c[2]); periods.append(c[3]); asked.append(c[2] / c[8] if c[8] else float("nan"))
                if c[1] > 0 and not v == "schedlab":
                    nsl.append(c[2] * 1000 / c[1])
        passes.append(n)
    rows[v] = (passes, med(runs), med(periods), med(asked), med(nsl) if nsl else None)
ref = rows[variants[0]][1]
print(f"{'variant':<16}{'passes a run':>13}{'min-max':>10}{'stuck':>7}{'run µs':>10}{'period µs':>11}{'run/asked':>11}{'ns/loop':>9}{'run/rt-app':>12}")
stuck_any = False
for v in variants:
    p, run, per, a, nl = rows[v]
    # A run with no pass: both threads' first runs ended so close together that each one's
    # resume came before the other's suspend and was lost (rt-app's semantic), and both waited
    # to the end of the run.
    stuck = sum(1 for n in p if n == 0)
    stuck_any |= stuck > 0
    span = f"{min(p)}-{max(p)}" if p else "-"
    print(f"{v:<16}{sum(p) / max(1, len(p)):>13.1f}{span:>10}{stuck:>7}{run:>10.0f}{per:>11.0f}{a:>11.3f}{'-' if nl is None else f'{nl:.2f}':>9}{run / ref:>12.3f}")
if stuck_any:
    print("stuck: runs with no pass at all. Both threads start with a 10 ms run; where the two runs end within "
          "microseconds of each other, each thread's resume comes before the other's suspend and is lost, as rt-app "
          "loses it, and both wait to the end. schedlab's CPU-time runs end that close when the threads start that "
          "close (exact CPU time); a loop count spreads the ends by the two CPUs' speeds. The other columns are over "
          "the runs that made passes.")
EOF
