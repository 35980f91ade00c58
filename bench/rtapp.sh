#!/usr/bin/env bash
# rt-app's own examples with rt-app and with schedlab, side by side, read from the per-task logs
# both write (rt-app's logdir; schedlab's --rt-app-logs):
#
#   bench/rtapp.sh [RUNS] [SECONDS]      # default 2 runs of 2 s per example and side
#
# Per example: RUNS rounds on the real kernel, each of two rt-app runs (A and B) with schedlab's
# between them (A schedlab B, then B schedlab A: each side runs before and after the others),
# then one run on every simulated policy; per thread, the mean over the runs
# of the passes that ended within SECONDS (both stop every task at `duration` and drop the pass
# it interrupts): periods completed (rows), mean and max period, mean run, mean slack and mean
# wake-up latency (µs), printed as rt-app/schedlab and the ratio schedlab/rt-app, then the
# example's ratios over its threads (bench/rtapp.py compare). rt-app's B runs against its A
# runs (the A/A column and row) are rt-app's own run-to-run spread: the floor under any
# comparison with it. At the end, how many threads and examples of the real-kernel comparison
# are within 2 % of rt-app in period and run, how many rt-app keeps within 2 % of itself, how
# many of schedlab's are within rt-app's own spread, and the 2 % goal judged where it can be:
# over the threads whose period (run) rt-app keeps within 2 % of itself, how many of schedlab's
# periods (runs) are within 2 % of rt-app's, naming those that are not.
#
# The examples are upstream's (RTAPP_SRC, a git directory of scheduler-tools/rt-app; HEAD's
# doc/examples), else the rt-app package's copies (/usr/share/doc/rt-app/examples). Each is
# first rewritten once (bench/rtapp.py prepare) — comments, trailing commas and repeated keys
# resolved as rt-app's json-c reads them, `global` given the run's duration, the calibration,
# the log directory, ftrace and gnuplot off, `frag` (never read by rt-app) removed — and the
# same file goes to both. A file the reader refuses is reported with what rt-app itself says
# of it (upstream's video-short has a key without a value, which neither reads). Where the
# rt-app here does not run `fork` (rt-app 1.0; found by running it once on a small file), a
# file's forks, and its tasks of instance 0 that only a fork would start, are removed for both,
# as that rt-app runs it, and the example's header says what was removed: otherwise schedlab
# (which runs forks as upstream does) would run more threads on the same CPUs (example9: four
# against rt-app 1.0's two) and the threads both run would be compared under different loads.
#
# rt-app's `run` is a calibrated loop count. What schedlab's `run` is follows RUN_SEMANTIC:
#   cpu-time (default)  schedlab's own semantic: that much CPU time;
#   loops               `--run-as loops`: rt-app's, a count of rt-app's loop (the same C
#                       library calls) at the file's `calibration`.
# CALIBRATION is the file's `calibration`, the nanoseconds rt-app counts per loop:
#   measure (default)  before each example, rt-app runs 40 passes of 5 ms on CPU 0 at a
#                      given figure (SCHED_FIFO: needs root), and the median ns per loop its own passes took (run ×
#                      1000 / perf), rounded, becomes that example's figure for both sides;
#   CPU<n>             each rt-app run calibrates at its start (a second's sleep between
#                      trials: about 6 s a run, not counted in its duration), and so does
#                      schedlab's with loops. rt-app keeps whole ns of what its calibration
#                      saw: 21 or 22 here for a loop of 21.1 ns, so its runs take 1.00 or 0.96
#                      of the time asked from one run to the next (rt-app against itself);
#   a whole number     that figure, for every run.
# Each side's mean run over the run asked (`run/asked`) shows which side is off the request.
# A task without phases whose loop is N is compared over its first N passes: rt-app 1.0 runs
# it for ever (bench/rtapp.py compare --file).
# schedlab's threads sleep with rt-app's timer slack: an rt-app file's tasks keep the slack
# they inherit (the kernel's 50 us for SCHED_OTHER, none for real-time threads), as rt-app's.
# TIMER_SLACK (a duration such as 1ns, or default) gives schedlab's runs `--timer-slack` instead:
# TIMER_SLACK=1ns shows what exact sleeps change against rt-app's.
# POLICIES lists the simulated policies to run the files on (default: all; empty: none), each
# on a simulated machine of this one's CPUs; a file that names more CPUs than this machine has
# (example8), which neither tool runs here, is simulated with the CPUs it names, its figures
# printed alone. A thread that finished no pass in a run (a suspend or wait nothing ended: on
# the simulator example4's two 10 ms runs end at the same instant and each resume comes before
# the other's suspend, lost as rt-app loses it) is named in a `(no pass)` line; its passes
# column counts such runs as 0.
# EXAMPLES lists the examples to run, by name (`example5 example6`, `mp3-short`; default: all
# below); a name that is not one of them is refused before anything runs.
#
# How long: per example and round, SECONDS for each of the three runs plus about 2 s (measure)
# or 8 s (CPU<n>) of start and calibration each, then about a second per simulated policy
# (and a second for the fork probe, once). With the A/A runs and POLICIES=, the 16 examples
# (14 run on both sides) took 4.4 minutes with 3 runs of 1 s on a 2-CPU VM while other builds
# ran (load 7); 5 runs of 2 s had reached the last example after 13 minutes on the idle VM.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
runs=${1:-2}
secs=${2:-2}
whole_in_range bench/rtapp.sh RUNS "$runs" 1 100
whole_in_range bench/rtapp.sh SECONDS "$secs" 1 600
# Every example of doc/examples but the long ones (minutes of duration, which `global` sets
# here anyway), custom-slice (sched_runtime of SCHED_OTHER, which rt-app 1.0 cannot set) and
# the merge/ and cpufreq_governor_efficiency/ pieces (not task files).
names="template tutorial/example1 tutorial/example2 tutorial/example3 tutorial/example4 tutorial/example5 tutorial/example6 tutorial/example7 tutorial/example8 tutorial/example9 tutorial/example10 tutorial/example11 mp3-short video-short browser-short spreading-tasks"
if [ -n "${EXAMPLES:-}" ]; then
  chosen=""
  for want in $EXAMPLES; do
    found=""
    for n in $names; do
      [ "$(basename "$n")" = "$want" ] && found=$n
    done
    if [ -z "$found" ]; then
      echo "bench/rtapp.sh: EXAMPLES names '$want', which is not one of: $(for n in $names; do basename "$n"; done | tr '\n' ' ')" >&2
      exit 2
    fi
    chosen="$chosen $found"
  done
  names=${chosen# }
fi
if ! command -v rt-app >/dev/null; then
  echo "bench/rtapp.sh: rt-app not found (install: apt-get install rt-app)" >&2
  exit 1
fi
schedlab_bin || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

src=${RTAPP_SRC:-/work/.mirror/scheduler-tools+rt-app/repo}
mkdir -p "$tmp/src/tutorial"
if git --git-dir="$src" rev-parse -q --verify HEAD >/dev/null 2>&1; then
  from="upstream $(git --git-dir="$src" rev-parse --short HEAD)"
  for n in $names; do git --git-dir="$src" show "HEAD:doc/examples/$n.json" >"$tmp/src/$n.json"; done
else
  from=/usr/share/doc/rt-app/examples
  for n in $names; do cp "$from/$n.json" "$tmp/src/$n.json"; done
fi

CALIBRATION=${CALIBRATION:-measure}
case "$CALIBRATION" in
  measure | CPU[0-9]*) unit="" ;;
  *[!0-9]* | "") echo "bench/rtapp.sh: CALIBRATION '$CALIBRATION' is not accepted; use measure, CPU<n> or a whole number of ns per loop" >&2; exit 1 ;;
  *) unit=" ns/loop" ;;
esac
RUN_SEMANTIC=${RUN_SEMANTIC:-cpu-time}
case "$RUN_SEMANTIC" in
  cpu-time | loops) ;;
  *) echo "bench/rtapp.sh: RUN_SEMANTIC '$RUN_SEMANTIC' is not accepted; use cpu-time or loops" >&2; exit 1 ;;
esac
slack=()
[ -n "${TIMER_SLACK:-}" ] && slack=(--timer-slack "$TIMER_SLACK")
echo "# examples: $from${EXAMPLES:+ (EXAMPLES: $EXAMPLES)}; $runs run(s) of ${secs}s per side; calibration ${CALIBRATION}${unit}; schedlab's run as $RUN_SEMANTIC; schedlab's timer slack ${TIMER_SLACK:-default, as rt-app}; load average $(load1) at the start"

if [ -z "${POLICIES+set}" ]; then
  policies=$("$SCHEDLAB" list 2>/dev/null | awk '/^SIMULATED POLICIES/ { p = 1; next } p && NF == 0 { exit } p && /^  [a-z]/ { print $1 }')
else
  policies=$POLICIES
fi
# rtapp_runs_forks: whether the rt-app here starts a thread for a `fork` event (upstream does;
# rt-app 1.0, Debian's, skips the key), found by running it once on a file where only a fork
# starts a task: its log is there or not. Asked once, at the first example with a fork.
forks=""
rtapp_runs_forks() {
  if [ -z "$forks" ]; then
    local d="$tmp/forkprobe"
    mkdir -p "$d"
    cat >"$tmp/forkprobe.json" <<EOF
{ "global": { "duration": 1, "calibration": 20, "logdir": "$d", "log_basename": "probe",
              "ftrace": false, "gnuplot": false },
  "tasks": { "forked": { "instance": 0, "loop": 1, "run": 100 },
             "forker": { "loop": 1, "phases": { "p": { "fork": "forked", "run": 100 } } } } }
EOF
    timeout -s INT 20 rt-app "$tmp/forkprobe.json" >"$d.out" 2>&1
    forks=no
    ls "$d" | grep -q '^probe-forked-' && forks=yes
  fi
  [ "$forks" = yes ]
}
# rtapp_verdict FILE: what rt-app itself says of a file the script or schedlab refuses (it reads
# the whole file before it starts anything; its logdir is pointed into the temporary
# directory, and the run bounded in time, in case it does accept the file and runs it).
rtapp_verdict() {
  local d="$tmp/verdict"
  mkdir -p "$d"
  sed -E "s#\"logdir\"[[:space:]]*:[[:space:]]*\"[^\"]*\"#\"logdir\": \"$d\"#" "$1" >"$d.json"
  (cd "$d" && timeout -s INT 20 rt-app "$d.json" >"$d.out" 2>&1)
  case $? in
    0) echo "rt-app runs it" ;;
    124) echo "rt-app runs it (stopped after 20 s)" ;;
    *) echo "rt-app refuses it too: $(grep -m1 -i 'crit\|error' "$d.out" || grep -m1 . "$d.out")" ;;
  esac
}
began=$(date +%s)
ns=""
for n in $names; do
  base=$(basename "$n")
  file="$tmp/$base.json"
  cal=$CALIBRATION
  if [ "$cal" = measure ]; then
    ns=$(rtapp_measure_ns "$tmp") || { echo "== $n: rt-app's loop could not be measured: $(grep -m1 . "$tmp/nsloop.out")"; continue; }
    cal=${ns% *}
  fi
  nofork=()
  grep -q '"fork' "$tmp/src/$n.json" && ! rtapp_runs_forks && nofork=(--no-fork)
  if ! err=$(python3 bench/rtapp.py prepare "$tmp/src/$n.json" "$file" --duration "$secs" \
    --calibration "$cal" --logdir "$tmp/logs/$base/rt-app/RUN" "${nofork[@]}" 2>&1); then
    echo
    echo "== $n: not JSON as rt-app's reader (json-c) and schedlab's read it: $(echo "$err" | tail -1); $(rtapp_verdict "$tmp/src/$n.json")"
    continue
  fi
  echo
  took=""
  [ -n "$ns" ] && took=" ns; rt-app's loop took ${ns#* } ns"
  echo "== $n (calibration $cal$took)"
  [ -n "$err" ] && echo "$err"
  if ! err=$("$SCHEDLAB" check "$file" 2>&1 >/dev/null); then
    # The error, not the warnings before it.
    echo "schedlab does not load it: $(echo "$err" | grep -m1 'error' || echo "$err" | grep -m1 -v '^\s*$'); $(rtapp_verdict "$file")"
    # A file that names more CPUs than this machine has (example8: CPU 2) still runs on a
    # simulated machine with that many; with no rt-app run to compare with, each policy's
    # figures are printed alone.
    need=$(python3 bench/rtapp.py cpus "$file")
    if [ "$need" -gt "$(nproc)" ]; then
      mkdir -p "$tmp/logs/$base"
      for p in $policies; do
        pdir="$tmp/logs/$base/sim-$p"
        if ! "$SCHEDLAB" run "$file" --run-as "$RUN_SEMANTIC" --backend sim --cpus "$need" --policy "$p" --runs 1 --timeout 60s --rt-app-logs "$pdir" >"$pdir.out" 2>&1; then
          echo "-- sim $p on $need CPUs: $(grep -m1 error "$pdir.out" || grep -m1 . "$pdir.out")"
          continue
        fi
        echo "-- simulated $p on $need CPUs (the CPUs the file names; no rt-app run to compare with): schedlab's figures"
        python3 bench/rtapp.py show "$secs" --file "$file" "$pdir"
      done
    fi
    continue
  fi
  ref=() mine=() again=()
  for r in $(seq 1 "$runs"); do
    rdir="$tmp/logs/$base/rt-app/$r" bdir="$tmp/logs/$base/rt-app-b/$r" sdir="$tmp/logs/$base/schedlab/$r"
    mkdir -p "$rdir" "$bdir" "${sdir%/*}"
    # rt-app's calibration on CPU<n> sleeps 1 s between trials until two agree: 60 s more.
    # rtapp_run DIR: one rt-app run logging into DIR (its own copy of the file says where).
    rtapp_run() {
      sed "s#$tmp/logs/$base/rt-app/RUN#$1#" "$file" >"$tmp/run-rt.json"
      timeout -s INT $((secs + 60)) rt-app "$tmp/run-rt.json" >"$1.out" 2>&1 || echo "rt-app failed (status $?): $(grep -m1 -i 'crit\|error' "$1.out")"
    }
    sed "s#$tmp/logs/$base/rt-app/RUN#$rdir#" "$file" >"$tmp/run.json"
    sl_run() { "$SCHEDLAB" run "$tmp/run.json" --run-as "$RUN_SEMANTIC" "${slack[@]}" --runs 1 --timeout $((secs * 5 + 20))s --rt-app-logs "$sdir" >"$sdir.out" 2>&1 || echo "schedlab failed: $(grep -m1 error "$sdir.out" || grep -m1 . "$sdir.out")"; }
    if [ $((r % 2)) = 1 ]; then rtapp_run "$rdir"; sl_run; rtapp_run "$bdir"; else rtapp_run "$bdir"; sl_run; rtapp_run "$rdir"; fi
    ref+=("$rdir") mine+=("$sdir") again+=("$bdir")
  done
  ploads=$(cat "${ref[@]/%/.out}" "${again[@]/%/.out}" 2>/dev/null | grep -o 'pLoad = [0-9]*' | tr -dc '0-9 \n' | tr -s ' \n' ' ')
  echo "-- real kernel: rt-app/schedlab and the ratio schedlab/rt-app; A/A: rt-app's B runs over its A runs (load average $(load1); rt-app's pLoad per run, ns:${ploads})"
  python3 bench/rtapp.py compare "$secs" --tally "$tmp/tally" --label "$base" --file "$tmp/run.json" "${ref[@]}" -- "${mine[@]}" -- "${again[@]}"
  for p in $policies; do
    pdir="$tmp/logs/$base/sim-$p"
    if ! "$SCHEDLAB" run "$tmp/run.json" --run-as "$RUN_SEMANTIC" --backend sim --policy "$p" --runs 1 --timeout 60s --rt-app-logs "$pdir" >"$pdir.out" 2>&1; then
      echo "-- sim $p: $(grep -m1 error "$pdir.out" || grep -m1 . "$pdir.out")"
      continue
    fi
    echo "-- simulated $p: rt-app (real kernel)/schedlab (simulated) and the ratio"
    python3 bench/rtapp.py compare "$secs" --file "$tmp/run.json" "${ref[@]}" -- "$pdir"
  done
done
echo
echo "== summary (real kernel; load average $(load1) at the end; $(( ($(date +%s) - began + 59) / 60 )) minutes)"
python3 bench/rtapp.py summary "$tmp/tally"
