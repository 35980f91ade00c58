#!/usr/bin/env bash
# What `schedlab record` costs the program it records, per source: REPS rounds, each running the
# program untraced, recorded through BPF (`--source bpf`) and through tracefs (`--source tracefs`),
# in an order that rotates from round to round (so that neither source always follows the
# other). Untraced: fork to exit, timed by bench/record-wall.py; recorded: the program's own run
# (fork to exit) as `record` reports it, without the set-up, the reading and the conversion
# around it. Prints the medians and, per source, the median of the rounds' own ratios
# (traced / untraced of the same round) with their interquartile range; the goal is ≤ 1.05.
# METRIC=cpu compares the CPU time the program's tasks were charged (user + system, through
# bench/record-wall.py --cpu on both sides) instead of wall time: on a loaded machine the wall
# time holds the other processes' turns on the program's CPUs, its CPU time mostly not, while
# the recorder's programs run in the recorded tasks' context and are charged to them.
# TRACEFS=off leaves the tracefs recording out of the rounds. FLOOR=on adds a run with empty BPF
# programs on the recorder's two frequent tracepoints (sched_switch, sched_waking;
# bench/record-floor.bpf.c, attached by bench/record-floor.c, both built here: apt-get install
# clang libbpf-dev): what entering those tracepoints costs before any recorder does anything.
# BPF_ALSO="BIN..." adds a BPF recording by each of those schedlab binaries to every round (an
# older build beside this one, say), in the same rotation. Needs root. Called by
# bench/record.sh per program; alone:
#
#   bench/record-cost.sh REPS CMD ARGS...      e.g. bench/record-cost.sh 11 hackbench -g 2 -l 200
#   BPF_ALSO=/tmp/old/schedlab bench/record-cost.sh 11 taskset -c 0 perf bench sched pipe -l 50000
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
reps=${1:?usage: bench/record-cost.sh REPS CMD ARGS...}
shift
whole_in_range record-cost.sh REPS "$reps" 1 1000
[ $# -gt 0 ] || { echo "record-cost.sh: no command given" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "record-cost.sh: needs root (BPF, tracefs)" >&2; exit 1; }
metric=${METRIC:-wall}
case $metric in
  wall | cpu) ;;
  *) echo "record-cost.sh: METRIC must be wall or cpu, not '$metric'" >&2; exit 2 ;;
esac
tracefs=${TRACEFS:-on}
case $tracefs in
  on | off) ;;
  *) echo "record-cost.sh: TRACEFS must be on or off, not '$tracefs'" >&2; exit 2 ;;
esac
floor=${FLOOR:-off}
case $floor in
  on | off) ;;
  *) echo "record-cost.sh: FLOOR must be on or off, not '$floor'" >&2; exit 2 ;;
esac
schedlab_bin || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ "$floor" = on ]; then
  clang -O2 -target bpf -I/usr/include/"$(uname -m)"-linux-gnu -Wall -c bench/record-floor.bpf.c \
    -o "$dir/floor.bpf.o" && gcc -O2 -Wall -o "$dir/floor" bench/record-floor.c -lbpf || {
    echo "record-cost.sh: FLOOR=on needs clang, gcc and libbpf (apt-get install clang libbpf-dev)" >&2
    exit 1
  }
fi

untraced() {
  if [ "$metric" = cpu ]; then
    python3 bench/record-wall.py --cpu "$@"
  else
    python3 bench/record-wall.py "$@"
  fi
}

# empty_programs: the program's run with the floor's empty programs attached.
empty_programs() {
  local wall=(python3 bench/record-wall.py)
  [ "$metric" = wall ] || wall+=(--cpu)
  "$dir/floor" "$dir/floor.bpf.o" "${wall[@]}" "$@"
}

# traced BIN SOURCE: the program's run under `BIN record --source SOURCE`, seconds ("" if it
# failed): its wall time as `record` reports it, or with METRIC=cpu its tasks' CPU time, taken
# by bench/record-wall.py inside the recording.
traced() {
  local bin=$1 source=$2
  shift 2
  if [ "$metric" = cpu ]; then
    rm -f "$dir/cpu"
    if "$bin" record --source "$source" -o "$dir/cost.toml" -- \
      python3 bench/record-wall.py --cpu --out "$dir/cpu" "$@" >/dev/null 2>&1; then
      cat "$dir/cpu" 2>/dev/null || true
    fi
    return
  fi
  "$bin" record --source "$source" -o "$dir/cost.toml" -- "$@" 2>&1 >/dev/null |
    sed -n 's/^recorded .* in \([0-9.]*\) s[;,].*/\1/p' | head -1
}
read -r -a also <<<"${BPF_ALSO:-}"
for b in "${also[@]}"; do
  [ -x "$b" ] || { echo "record-cost.sh: BPF_ALSO: $b is not an executable schedlab" >&2; exit 2; }
done
n=$((3 + ${#also[@]}))
[ "$floor" = off ] || n=$((n + 1))
plain=() bpf=() tfs=() other=() empty=()
for ((i = 0; i < reps; i++)); do
  for ((k = 0; k < n; k++)); do
    v=$(((i + k) % n))
    case $v in
      0) plain+=("$(untraced "$@")") ;;
      1) bpf+=("$(traced "$SCHEDLAB" bpf "$@")") ;;
      2) [ "$tracefs" = off ] || tfs+=("$(traced "$SCHEDLAB" tracefs "$@")") ;;
      *)
        if [ "$v" -lt $((3 + ${#also[@]})) ]; then
          other[v - 3]+=" $(traced "${also[v - 3]}" bpf "$@")"
        else
          empty+=("$(empty_programs "$@")")
        fi
        ;;
    esac
  done
done
extra=()
for ((j = 0; j < ${#also[@]}; j++)); do
  extra+=("bpf by ${also[j]}" "${other[j]:-}")
done
[ "$floor" = off ] || extra+=("empty programs" "${empty[*]}")
python3 - "$metric" "${plain[*]}" "${bpf[*]}" "${tfs[*]}" "${extra[@]}" <<'PY'
import os, statistics, sys
metric = sys.argv[1]
plain, bpf, tfs = ([float(x) for x in a.split()] for a in sys.argv[2:5])
others = [(sys.argv[i], [float(x) for x in sys.argv[i + 1].split()])
          for i in range(5, len(sys.argv), 2)]
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]
print(f"  untraced {statistics.median(plain):.4f} s (median of {len(plain)})")
print(f"  (the {'CPU time of the program' if metric == 'cpu' else 'wall time'}; load average {os.getloadavg()[0]:.2f} at the end)")
for name, xs in [("bpf", bpf), ("tracefs", tfs)] + others:
    if name == "tracefs" and not xs:
        print("  tracefs: left out (TRACEFS=off)")
        continue
    if len(xs) != len(plain):
        print(f"  {name}: {len(xs)} of {len(plain)} recordings succeeded; no ratio")
        continue
    r = [t / p for t, p in zip(xs, plain)]
    label = "with the floor's" if name == "empty programs" else "recorded through"
    print(f"  {label} {name:<7} {statistics.median(xs):.4f} s: ratio {statistics.median(r):.3f} "
          f"(median of the rounds' ratios, interquartile {q(r, .25):.3f}-{q(r, .75):.3f}; "
          f"ratio of medians {statistics.median(xs) / statistics.median(plain):.3f})")
PY
