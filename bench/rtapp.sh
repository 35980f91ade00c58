#!/usr/bin/env bash
# rt-app's own examples with rt-app and with schedlab, side by side, read from the per-task logs
# both write (rt-app's logdir; schedlab's --rt-app-logs):
#
#   bench/rtapp.sh [RUNS] [SECONDS]      # default 2 runs of 2 s per example and side
#
# Per example: RUNS alternating runs of rt-app and of schedlab on the real kernel (the order
# flips every run), then one run on every simulated policy; per thread, the mean over the runs
# of the passes that ended within SECONDS (both stop every task at `duration` and drop the pass
# it interrupts): periods completed (rows), mean and max period, mean run, mean slack and mean
# wake-up latency (µs), printed as rt-app/schedlab and the ratio schedlab/rt-app, then the
# example's ratios over its threads (bench/rtapp.py compare); at the end, how many threads and
# examples of the real-kernel comparison are within 2 % of rt-app in period and run.
#
# The examples are upstream's (RTAPP_SRC, a git directory of scheduler-tools/rt-app; HEAD's
# doc/examples), else the rt-app package's copies (/usr/share/doc/rt-app/examples). Each is
# first rewritten once (bench/rtapp.py prepare) — comments, trailing commas and repeated keys
# resolved as rt-app's json-c reads them, `global` given the run's duration, a whole-number
# calibration (CALIBRATION ns per loop, by default measured once by rt-app itself), the log
# directory, ftrace and gnuplot off, `frag` (never read by rt-app) removed — and the same file
# goes to both. rt-app's `run` is a calibrated loop count, schedlab's `compute` CPU time: with
# a calibration measured here both ask for the same time on an idle CPU; the ratio of `run`
# shows how they differ under load (rt-app's stretches with preemption and CPU frequency,
# schedlab's with preemption only).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
runs=${1:-2}
secs=${2:-2}
whole_in_range bench/rtapp.sh RUNS "$runs" 1 100
whole_in_range bench/rtapp.sh SECONDS "$secs" 1 600
if ! command -v rt-app >/dev/null; then
  echo "bench/rtapp.sh: rt-app not found (install: apt-get install rt-app)" >&2
  exit 1
fi
schedlab_bin || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

src=${RTAPP_SRC:-/work/.mirror/scheduler-tools+rt-app/repo}
names="template tutorial/example1 tutorial/example2 tutorial/example3 tutorial/example4 tutorial/example5 tutorial/example6 tutorial/example7 tutorial/example8 mp3-short browser-short spreading-tasks"
mkdir -p "$tmp/src/tutorial"
if git --git-dir="$src" rev-parse -q --verify HEAD >/dev/null 2>&1; then
  from="upstream $(git --git-dir="$src" rev-parse --short HEAD)"
  for n in $names; do git --git-dir="$src" show "HEAD:doc/examples/$n.json" >"$tmp/src/$n.json"; done
else
  from=/usr/share/doc/rt-app/examples
  for n in $names; do cp "$from/$n.json" "$tmp/src/$n.json"; done
fi

if [ -z "${CALIBRATION:-}" ]; then
  printf '{"global":{"duration":1,"calibration":"CPU0","logdir":"%s","ftrace":false},"tasks":{"t":{"loop":1,"run":1000}}}\n' "$tmp" >"$tmp/cal.json"
  CALIBRATION=$(timeout 120 rt-app "$tmp/cal.json" 2>&1 | sed -n 's/.*pLoad = \([0-9]*\)ns.*/\1/p' | head -1)
  [ -n "$CALIBRATION" ] || { echo "bench/rtapp.sh: rt-app did not report its calibration" >&2; exit 1; }
fi
echo "# examples: $from; $runs run(s) of ${secs}s per side; calibration ${CALIBRATION} ns/loop; load average $(load1) at the start"

policies=$("$SCHEDLAB" list 2>/dev/null | awk '/^SIMULATED POLICIES/ { p = 1; next } p && NF == 0 { exit } p && /^  [a-z]/ { print $1 }')
for n in $names; do
  base=$(basename "$n")
  file="$tmp/$base.json"
  python3 bench/rtapp.py prepare "$tmp/src/$n.json" "$file" --duration "$secs" \
    --calibration "$CALIBRATION" --logdir "$tmp/logs/$base/rt-app/RUN" || { echo "== $n: cannot be prepared"; continue; }
  echo
  echo "== $n"
  if ! err=$("$SCHEDLAB" check "$file" 2>&1 >/dev/null); then
    echo "schedlab does not load it: $(echo "$err" | grep -m1 -v '^\s*$')"
    continue
  fi
  ref=() mine=()
  for r in $(seq 1 "$runs"); do
    rdir="$tmp/logs/$base/rt-app/$r" sdir="$tmp/logs/$base/schedlab/$r"
    mkdir -p "$rdir" "${sdir%/*}"
    sed "s#$tmp/logs/$base/rt-app/RUN#$rdir#" "$file" >"$tmp/run.json"
    rtapp_run() { timeout -s INT $((secs + 30)) rt-app "$tmp/run.json" >"$rdir.out" 2>&1 || echo "rt-app failed (status $?): $(grep -m1 -i 'crit\|error' "$rdir.out")"; }
    sl_run() { "$SCHEDLAB" run "$tmp/run.json" --runs 1 --timeout $((secs * 5 + 20))s --rt-app-logs "$sdir" >"$sdir.out" 2>&1 || echo "schedlab failed: $(grep -m1 . "$sdir.out")"; }
    if [ $((r % 2)) = 1 ]; then rtapp_run; sl_run; else sl_run; rtapp_run; fi
    ref+=("$rdir") mine+=("$sdir")
  done
  echo "-- real kernel: rt-app/schedlab and the ratio schedlab/rt-app (load average $(load1))"
  python3 bench/rtapp.py compare "$secs" --tally "$tmp/tally" --label "$base" "${ref[@]}" -- "${mine[@]}"
  for p in $policies; do
    pdir="$tmp/logs/$base/sim-$p"
    if ! "$SCHEDLAB" run "$tmp/run.json" --backend sim --policy "$p" --runs 1 --timeout 60s --rt-app-logs "$pdir" >"$pdir.out" 2>&1; then
      echo "-- sim $p: $(grep -m1 . "$pdir.out")"
      continue
    fi
    echo "-- simulated $p: rt-app (real kernel)/schedlab (simulated) and the ratio"
    python3 bench/rtapp.py compare "$secs" "${ref[@]}" -- "$pdir"
  done
done
echo
echo "== summary (real kernel; load average $(load1) at the end)"
python3 bench/rtapp.py summary "$tmp/tally"
