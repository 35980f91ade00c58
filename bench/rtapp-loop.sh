#!/usr/bin/env bash
# rt-app's busy loop against schedlab's `--run-as loops` for the same loop count on the same
# CPU: one SCHED_FIFO thread pinned to CPU N, PASSES passes of a 5 ms `run` and a 1 ms `sleep`
# at one given `calibration` (so both run exactly 5,000,000 / CAL iterations a pass), rt-app
# (github.com/scheduler-tools/rt-app, src/rt-app.c's waste_cpu_cycles) and schedlab in
# alternating order:
#
#   bench/rtapp-loop.sh [ROUNDS] [PASSES]     # default 5 rounds of 40 passes per tool and CPU
#
# CAL=20 (ns per loop asked of both, a whole number as rt-app keeps it) and CPUS="0 1" can be
# set. Prints per CPU and tool the median `run` (µs, the wall time of the run event in each
# tool's rt-app log) and ns per loop (run × 1000 / loops), schedlab/rt-app over all rounds and
# the median (and range) of the rounds' own ratios (each round's two runs back to back), and
# rt-app's own A/A (its last rounds against its first) to read the ratio against rt-app's spread.
# On a quiet machine the paired ratio should be within 2 % of 1.
# Needs root (SCHED_FIFO) and rt-app (apt-get install rt-app).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
passes=${2:-40}
whole_in_range bench/rtapp-loop.sh ROUNDS "$rounds" 2 100
whole_in_range bench/rtapp-loop.sh PASSES "$passes" 1 1000
cal=${CAL:-20}
whole_in_range bench/rtapp-loop.sh CAL "$cal" 1 100000
cpus=${CPUS:-0 1}
ncpu=$(nproc)
for c in $cpus; do
  whole_in_range bench/rtapp-loop.sh "a CPU of CPUS" "$c" 0 $((ncpu - 1))
done
if ! command -v rt-app >/dev/null; then
  echo "bench/rtapp-loop.sh: rt-app not found (install: apt-get install rt-app)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "bench/rtapp-loop.sh: SCHED_FIFO needs root" >&2
  exit 1
fi
schedlab_bin || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# file CPU DIR: the use case on CPU, logging into DIR.
file() {
  cat <<EOF
{ "global": { "duration": $((passes * 6 / 1000 + 5)), "calibration": $cal, "logdir": "$2",
              "log_basename": "loop", "ftrace": false, "gnuplot": false },
  "tasks": { "t": { "loop": 1, "cpus": [$1], "policy": "SCHED_FIFO", "priority": 10,
                    "phases": { "p": { "loop": $passes, "run": 5000, "sleep": 1000 } } } } }
EOF
}
# one TOOL CPU R: one run, its log in $tmp/TOOL-CPU/R.
one() {
  local d="$tmp/$1-$2/$3"
  mkdir -p "$d"
  file "$2" "$d" >"$d.json"
  case $1 in
    rt-app) timeout -s INT 120 rt-app "$d.json" >"$d.out" 2>&1 || echo "rt-app on CPU $2, round $3: failed (status $?)" ;;
    schedlab) "$SCHEDLAB" run "$d.json" --run-as loops --runs 1 --timeout 120s --rt-app-logs "$d" >"$d.out" 2>&1 ||
      echo "schedlab on CPU $2, round $3: failed: $(grep -m1 error "$d.out")" ;;
  esac
}
echo "# the same loop count: SCHED_FIFO 10 pinned, $passes passes of run 5000 µs at calibration $cal ns ($((5000000 / cal)) loops a pass), $rounds alternating rounds per tool and CPU; load average $(load1) at the start"
for r in $(seq 1 "$rounds"); do
  for c in $cpus; do
    if [ $((r % 2)) = 1 ]; then one rt-app "$c" "$r"; one schedlab "$c" "$r"; else one schedlab "$c" "$r"; one rt-app "$c" "$r"; fi
  done
done
echo "# load average $(load1) at the end"
python3 - "$tmp" "$rounds" "$cal" $cpus <<'EOF'
import os, sys
tmp, rounds, cal, cpus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
loops = 5_000_000 // cal

def runs(tool, cpu, which):
    out = []
    for r in which:
        d = os.path.join(tmp, f"{tool}-{cpu}", str(r))
        for name in os.listdir(d) if os.path.isdir(d) else []:
            if name.endswith(".log"):
                for line in open(os.path.join(d, name)):
                    if line.strip() and not line.startswith("#"):
                        out.append(float(line.split()[2]))
    return out

def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")

half = rounds // 2
# Per round, schedlab's median over rt-app's (the two ran one after the other): the host's
# speed moves between rounds, so the median of these paired ratios is steadier than the ratio
# of pooled medians.
print(f"{'CPU':<5}{'tool':<10}{'passes':>7}{'run µs':>9}{'ns/loop':>9}{'/rt-app':>9}{'paired':>8}{'paired range':>15}{'rt-app A/A':>12}")
for c in cpus:
    ref = med(runs("rt-app", c, range(1, rounds + 1)))
    aa = med(runs("rt-app", c, range(rounds - half + 1, rounds + 1))) / med(runs("rt-app", c, range(1, half + 1)))
    paired = sorted(med(runs("schedlab", c, [r])) / med(runs("rt-app", c, [r])) for r in range(1, rounds + 1))
    for tool in ("rt-app", "schedlab"):
        v = runs(tool, c, range(1, rounds + 1))
        m = med(v)
        p, span, a = ("1.000", "-", f"{aa:.3f}") if tool == "rt-app" else (f"{med(paired):.3f}", f"{paired[0]:.3f}-{paired[-1]:.3f}", "-")
        print(f"{c:<5}{tool:<10}{len(v):>7}{m:>9.0f}{m * 1000 / loops:>9.2f}{m / ref:>9.3f}{p:>8}{span:>15}{a:>12}")
EOF
