#!/usr/bin/env bash
# How faithfully `schedlab record` captures a program, and what recording costs it.
#   For each program: record it (the workload file, and the recorded run as a run record with
#   --json), replay the file on the real kernel (--runs REPS), and print recorded against
#   replayed wall time, context switches, wakeups and CPU time, per task too, and the
#   Kolmogorov-Smirnov distance between the recorded and the replayed wakeup-latency
#   distributions (bench/record.py; the replay's distribution is measured by recording one
#   more replay, so both sides are traced alike); then recording's cost: REPS rounds untraced,
#   through BPF and through tracefs (bench/record-cost.sh), medians and the rounds' ratios;
#   then, with perf installed, `perf sched record` + `perf sched replay` of the same program.
# Programs: hackbench (threads, processes), perf bench sched pipe, cyclictest (periodic),
#   rt-app's mp3 example (2 s), and make -j2 of a generated C project of 12 files.
# Needs root (tracefs) and: apt-get install rt-tests linux-perf rt-app build-essential python3
#
# Usage: bench/record.sh [REPS]   (default 5)
#        RECORD_FLAGS=--keep-sleeps bench/record.sh [REPS]   (flags for the recording replayed)
#        RECORD_COST=off bench/record.sh [REPS]   (accuracy only: recording's cost not measured)
#        REPLAY_ALSO="BIN..." bench/record.sh [REPS]   (each file replayed by these binaries too)
#        RECORD_KEEP=DIR bench/record.sh [REPS]   (the files and records kept in DIR)
#        RECORD_ONLY=REGEX bench/record.sh [REPS]   (only the programs whose label matches, grep -E)
#        PERF_REPLAY=off bench/record.sh [REPS]   (no perf sched record/replay of each program)
#        SCHEDLAB=BIN bench/record.sh [REPS]   (record and replay with BIN, not this tree's build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
reps=${1:-5}
whole_in_range record.sh REPS "$reps" 1 100
for tool in hackbench perf python3; do
  command -v "$tool" >/dev/null || { echo "record.sh: $tool not found; apt-get install rt-tests linux-perf python3" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "record.sh: needs root (tracefs)" >&2; exit 1; }
schedlab_bin || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The optional programs: a case line each, or a line saying why it is skipped.
cases="hackbench threads|hackbench -g 2 -l 200 -T
hackbench processes|hackbench -g 2 -l 200 -P
perf bench sched pipe|perf bench sched pipe -l 20000
perf bench sched pipe, one CPU|taskset -c 0 perf bench sched pipe -l 20000"
if command -v cyclictest >/dev/null; then
  cases+=$'\n'"cyclictest|cyclictest -t1 -i 1000 -l 2000 -q"
else
  echo "skipped: cyclictest not found (install: apt-get install rt-tests)"
fi
mp3=/usr/share/doc/rt-app/examples/mp3-short.json
if command -v rt-app >/dev/null && [ -f "$mp3" ]; then
  # rt-app's mp3 example for 2 s, its logs in the temporary directory.
  sed -e 's/"duration" : [0-9]*/"duration" : 2/' -e "s|\"logdir\" : \"[^\"]*\"|\"logdir\" : \"$dir\"|" "$mp3" >"$dir/mp3.json"
  cases+=$'\n'"rt-app mp3 example|rt-app $dir/mp3.json"
else
  echo "skipped: rt-app or its examples not found (install: apt-get install rt-app)"
fi
if command -v gcc >/dev/null && command -v make >/dev/null; then
  # A small C project: 12 files of a few loops each, and a Makefile; -B rebuilds every time.
  mkdir -p "$dir/cproj"
  for i in $(seq 1 12); do
    printf 'int f%d(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * %d ^ (s >> 3); return s; }\n' "$i" "$i" >"$dir/cproj/f$i.c"
    printf 'static inline long g%d(long x) { return x * x + %d; }\nlong h%d(long x) { return g%d(x) + g%d(x + 1); }\n' "$i" "$i" "$i" "$i" "$i" >>"$dir/cproj/f$i.c"
  done
  printf 'int main(void) { return 0; }\n' >"$dir/cproj/main.c"
  printf 'OBJS := $(patsubst %%.c,%%.o,$(wildcard *.c))\nprog: $(OBJS)\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n' >"$dir/cproj/Makefile"
  cases+=$'\n'"make -j2 (13 C files)|make -s -B -j2 -C $dir/cproj"
else
  echo "skipped: gcc or make not found (install: apt-get install build-essential)"
fi

echo "load average before: $(load1); a shared machine's figures move by 10 % or more between runs"
case_no=0
while IFS='|' read -r label cmd; do
  [ -n "$label" ] || continue
  [ -z "${RECORD_ONLY:-}" ] || grep -Eq -- "$RECORD_ONLY" <<<"$label" || continue
  case_no=$((case_no + 1))
  file=$dir/case$case_no.toml
  read -r -a argv <<<"$cmd"
  # A program recorded under taskset is replayed under it too (the file keeps no affinity).
  pin=()
  [ "${argv[0]}" != taskset ] || pin=("${argv[@]:0:3}")
  echo
  echo "== $label: $cmd"
  # shellcheck disable=SC2086 # RECORD_FLAGS: several flags, split on purpose
  "$SCHEDLAB" record -o "$file" --json "$dir/orig$case_no.json" ${RECORD_FLAGS:-} -- "${argv[@]}" 2>&1 >/dev/null |
    sed -n 's/^\(recorded \|schedlab: \)/  \1/p' # schedlab's lines, not the program's
  # Recording's cost, through BPF and through tracefs (bench/record-cost.sh: alternating rounds).
  cost="  not measured (RECORD_COST=off)"
  [ "${RECORD_COST:-on}" = off ] || cost=$(SCHEDLAB=$SCHEDLAB bench/record-cost.sh "$reps" "${argv[@]}")
  pm=$(sed -n 's/^  untraced \([0-9.]*\) s.*/\1/p' <<<"$cost")
  # The same file replayed by each binary in turn (this tree's, then REPLAY_ALSO's).
  k=0
  # shellcheck disable=SC2086 # REPLAY_ALSO: several binaries, split on purpose
  for bin in "$SCHEDLAB" ${REPLAY_ALSO:-}; do
    k=$((k + 1))
    [ -z "${REPLAY_ALSO:-}" ] || echo "  replayed by $bin:"
    out=$dir/case$case_no-$k.json
    "${pin[@]}" "$bin" run "$file" --runs "$reps" --json "$out" -q >/dev/null 2>&1 ||
      "${pin[@]}" "$bin" run "$file" --runs "$reps" --json "$out" >/dev/null
    # One replay recorded in turn: its wakeup latencies, measured as the original's were.
    tj=$dir/traced$case_no-$k.json
    "${pin[@]}" "$SCHEDLAB" record -o "$dir/traced$case_no-$k.toml" --json "$tj" -- \
      "$bin" run "$file" --runs 1 -q >/dev/null 2>&1 || echo "  (the traced replay failed; no KS distance)"
    [ -s "$tj" ] || tj=-
    python3 bench/record.py "$dir/orig$case_no.json" "$out" "$tj" "$pm"
  done
  [ -z "${RECORD_KEEP:-}" ] || cp "$file" "$dir"/orig$case_no.json "$dir"/case$case_no-*.json "$RECORD_KEEP"/
  echo "  recording cost (program's wall time, fork to exit):"
  sed 's/^/  /' <<<"$cost"
  if [ "${PERF_REPLAY:-on}" != off ] && perf sched record -o "$dir/perf.data" -- "${argv[@]}" >/dev/null 2>&1; then
    perf sched replay -i "$dir/perf.data" -r 1 2>/dev/null | grep -E 'run measurement overhead|#1  :|^#' | tail -2 | sed 's/^/  perf sched replay: /'
  fi
done <<<"$cases"
