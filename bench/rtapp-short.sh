#!/usr/bin/env bash
# Short `run`s right after a wakeup, rt-app against schedlab's `--run-as loops` at one
# calibration (the same loop count on both sides), read from both tools' per-thread logs:
#
#   bench/rtapp-short.sh [ROUNDS] [SECONDS]     # default 5 alternating rounds of 3 s per case
#
# Cases (CASES picks some; default all, in this order):
#   wake-200    one thread (POLICY, below): passes of sleep 5 ms then run 200 µs (a short run
#               right after a wakeup, nothing else in the use case);
#   wake-5000   the same with run 5 ms: the same path with a long run, so that a constant cost
#               per run and a slower loop can be told apart;
#   wake-200-cpu0  wake-200 with the thread pinned to CPU 0 (no migration on wakeup);
#   mp3-short   rt-app's doc/examples/mp3-short.json (upstream's when RTAPP_SRC is a git
#               directory of scheduler-tools/rt-app, else the rt-app package's copy), its
#               `global` rewritten by bench/rtapp.py prepare as bench/rtapp.sh does.
# Both tools get one `calibration`: CAL, or by default the ns per loop rt-app's own SCHED_FIFO
# passes on CPU 0 took at the start (bench/rtapp.py nsloop, as bench/rtapp.sh's
# CALIBRATION=measure), so both run `run × 1000 / CAL` loops a run (rt-app 1.0's loadwait).
# Per case, thread and tool, over all rounds' passes: the passes, the median `perf` (the loop
# count of the pass's runs as each log gives it: rt-app 1.0's loadwait returns the loops it
# ran), the asked run (`c_duration`), the run's (wall time of the run events, µs) median,
# 10th and 90th percentile and mean, the median run over the asked one, the median excess over
# the asked run (µs), the share of passes whose run exceeded the asked one by more than 10 %
# (preempted or stretched), and the median over the rounds of schedlab's median run over
# rt-app's of the same round (`paired`). Each round runs rt-app twice, A and B, with schedlab
# between them (A schedlab B, then B schedlab A), so that rt-app's B over its A (`A/A`, the
# median over the rounds) is rt-app's own spread; the last column judges schedlab's `paired`
# against it: `2 %` within 2 % of rt-app, `spread` within rt-app's own spread, `off` neither.
# `perf` says whether the two tools' logs give the same loop count per pass (`same`).
# Reading it: a constant excess in wake-200 and wake-5000 alike is a cost per run; an excess
# that grows with the run is the loop's speed; an excess in mp3-short alone, with wake-200
# equal on both sides, is what the other threads do to the run (preemption, sharing a CPU);
# a difference in the share over +10 % with equal medians is the same, in a few passes.
# POLICY=SCHED_FIFO runs the wake cases' thread at SCHED_FIFO priority 10 (mp3-short keeps its
# own policies), so that other work on a loaded machine does not preempt their runs: what is
# left is the loop's own speed after the wakeup.
# Needs rt-app (apt-get install rt-app) and root (the calibration's SCHED_FIFO passes and
# mp3-short's negative nice values).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
secs=${2:-3}
whole_in_range bench/rtapp-short.sh ROUNDS "$rounds" 1 100
whole_in_range bench/rtapp-short.sh SECONDS "$secs" 1 600
all="wake-200 wake-5000 wake-200-cpu0 mp3-short"
policy=${POLICY:-SCHED_OTHER}
case $policy in
  SCHED_OTHER) sched="" ;;
  SCHED_FIFO) sched='"policy": "SCHED_FIFO", "priority": 10,' ;;
  *) echo "bench/rtapp-short.sh: POLICY '$policy' is not accepted; use SCHED_OTHER or SCHED_FIFO" >&2; exit 2 ;;
esac
cases=${CASES:-$all}
for c in $cases; do
  case " $all " in
    *" $c "*) ;;
    *) echo "bench/rtapp-short.sh: CASES names '$c', which is not one of: $all" >&2; exit 2 ;;
  esac
done
if ! command -v rt-app >/dev/null; then
  echo "bench/rtapp-short.sh: rt-app not found (install: apt-get install rt-app)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "bench/rtapp-short.sh: needs root (SCHED_FIFO for the calibration, negative nice values in mp3-short)" >&2
  exit 1
fi
schedlab_bin || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${CAL:-}" ]; then
  whole_in_range bench/rtapp-short.sh CAL "$CAL" 1 100000
  cal=$CAL took="given"
else
  if ! ns=$(rtapp_measure_ns "$tmp"); then
    echo "bench/rtapp-short.sh: rt-app's loop could not be measured: $(grep -m1 . "$tmp/nsloop.out")" >&2
    exit 1
  fi
  cal=${ns% *} took="rt-app's SCHED_FIFO passes took ${ns#* } ns"
fi

# wake CASE RUN CPUS: a use case of one thread, sleep 5 ms then run RUN µs, logging into
# $tmp/CASE/TOOL/R (the placeholder RUN_DIR).
wake() {
  cat >"$tmp/$1.json" <<EOF
{ "global": { "duration": $secs, "calibration": $cal, "logdir": "RUN_DIR", "log_basename": "rt-app",
              "ftrace": false, "gnuplot": false, "lock_pages": false },
  "tasks": { "t": { "loop": -1, $sched $3 "phases": { "p": { "sleep": 5000, "run": $2 } } } } }
EOF
}
src=${RTAPP_SRC:-/work/.mirror/scheduler-tools+rt-app/repo}
for c in $cases; do
  case $c in
    wake-200) wake "$c" 200 "" ;;
    wake-5000) wake "$c" 5000 "" ;;
    wake-200-cpu0) wake "$c" 200 '"cpus": [0],' ;;
    mp3-short)
      if git --git-dir="$src" rev-parse -q --verify HEAD >/dev/null 2>&1; then
        git --git-dir="$src" show HEAD:doc/examples/mp3-short.json >"$tmp/mp3-src.json"
      else
        cp /usr/share/doc/rt-app/examples/mp3-short.json "$tmp/mp3-src.json"
      fi
      python3 bench/rtapp.py prepare "$tmp/mp3-src.json" "$tmp/$c.json" --duration "$secs" \
        --calibration "$cal" --logdir RUN_DIR >/dev/null || exit 1 ;;
  esac
done

# one CASE TOOL R: one run, its logs in $tmp/CASE/TOOL/R.
one() {
  local d="$tmp/$1/$2/$3"
  mkdir -p "$d"
  sed "s#RUN_DIR#$d#" "$tmp/$1.json" >"$d.json"
  case $2 in
    rt-app | rt-app-b) timeout -s INT $((secs + 30)) rt-app "$d.json" >"$d.out" 2>&1 ||
      echo "rt-app, $1, round $3: failed (status $?): $(grep -m1 -i 'crit\|error' "$d.out")" ;;
    schedlab) "$SCHEDLAB" run "$d.json" --run-as loops --runs 1 --timeout $((secs * 5 + 20))s --rt-app-logs "$d" >"$d.out" 2>&1 ||
      echo "schedlab, $1, round $3: failed: $(grep -m1 error "$d.out" || grep -m1 . "$d.out")" ;;
  esac
}
echo "# short runs after a wakeup: rt-app 1.0 and schedlab --run-as loops at calibration $cal ns ($took); wake cases $policy; $rounds alternating rounds of ${secs}s per case; load average $(load1) at the start"
for r in $(seq 1 "$rounds"); do
  for c in $cases; do
    if [ $((r % 2)) = 1 ]; then one "$c" rt-app "$r"; one "$c" schedlab "$r"; one "$c" rt-app-b "$r"
    else one "$c" rt-app-b "$r"; one "$c" schedlab "$r"; one "$c" rt-app "$r"; fi
  done
done
echo "# load average $(load1) at the end"
python3 - "$tmp" "$rounds" "$secs" $cases <<'EOF'
import os, sys
tmp, rounds, secs, cases = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]

def rows(case, tool, r):
    """{thread: [(perf, run, asked)]} of one run: the passes that ended within the duration."""
    d, out = os.path.join(tmp, case, tool, str(r)), {}
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not name.endswith(".log"):
            continue
        thread = name[: -len(".log")].removeprefix("rt-app-")
        for line in open(os.path.join(d, name)):
            if line.startswith("#") or not line.strip():
                continue
            f = [float(x) for x in line.split()]
            if f[6] + f[3] <= secs * 1e6 and f[8] > 0:
                out.setdefault(thread, []).append((f[1], f[2], f[8]))
    return out

def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")

print(f"{'case':<14}{'thread':<16}{'tool':<9}{'passes':>7}{'perf':>8}{'asked':>7}{'median':>8}{'p10':>7}{'p90':>7}{'mean':>8}{'/asked':>8}{'excess':>8}{'>+10%':>7}{'paired':>8}{'A/A':>7}  judged")
def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")
for case in cases:
    per = {t: {r: rows(case, t, r) for r in range(1, rounds + 1)} for t in ("rt-app", "schedlab", "rt-app-b")}
    threads = sorted({th for t in per.values() for run in t.values() for th in run})
    for th in threads:
        meds = {t: [q([x[1] for x in per[t][r].get(th, [])], 0.5) for r in range(1, rounds + 1)] for t in per}
        ratios = lambda t: [o / a for o, a in zip(meds[t], meds["rt-app"]) if a == a and o == o and a > 0]
        paired, aa = med(ratios("schedlab")), med(ratios("rt-app-b"))
        perfs = {t: q([x[0] for r in range(1, rounds + 1) for x in per[t][r].get(th, [])], 0.5) for t in per}
        for t in ("rt-app", "schedlab"):
            v = [x for r in range(1, rounds + 1) for x in per[t][r].get(th, [])]
            if not v:
                print(f"{case:<14}{th:<16}{t:<9}{0:>7}  (no pass)")
                continue
            run = [x[1] for x in v]
            asked = q([x[2] for x in v], 0.5)
            over = sum(1 for x in v if x[1] > 1.1 * x[2]) / len(v)
            if t == "rt-app":
                tail = f"{'':>8}{aa:>7.3f}"
            else:
                verdict = "2 %" if abs(paired - 1) <= 0.02 else ("spread" if abs(paired - 1) <= abs(aa - 1) else "off")
                same = "same" if perfs["schedlab"] == perfs["rt-app"] else "differs"
                tail = f"{paired:>8.3f}{'':>7}  {verdict}; perf {same}"
            print(f"{case:<14}{th:<16}{t:<9}{len(v):>7}{q([x[0] for x in v], 0.5):>8.0f}{asked:>7.0f}{q(run, 0.5):>8.0f}{q(run, 0.1):>7.0f}{q(run, 0.9):>7.0f}"
                  f"{sum(run) / len(run):>8.1f}{q([x[1] / x[2] for x in v], 0.5):>8.3f}{q([x[1] - x[2] for x in v], 0.5):>8.0f}{over:>7.1%}{tail}")
EOF
