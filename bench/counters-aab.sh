#!/usr/bin/env bash
# The cost of the default counters on the wakeup-densest row, against an A/A control: a
# ping-pong of two processes pinned to CPU 0 (a wakeup every ~1.7 µs), each round running three
# cells in a random order — the default counters (in-kernel BPF), --counters proc, and
# --counters proc again — and printing the median and interquartile range of the rounds'
# ratios default/proc and proc/proc (the control: how far apart two identical cells read here),
# and each cell's median. A difference smaller than the control's spread is not shown.
#
# With OTHER=path, a fourth cell runs another schedlab binary's default counters (a changed BPF
# program against the current one, say) and the ratio other/default is printed too.
#
# PONG_CPU=N pins the pong process to CPU N instead (PONG_CPU=1: the ping-pong across two CPUs,
# a wakeup every ~5 µs, each one to another CPU).
#
# WARMUP=N gives every cell N unrecorded warm-up repetitions first (--warmup): the first
# repetition after the in-kernel counters are loaded runs slower (see docs/performance.md).
#
# METRIC=cpu compares the CPU time both tasks used a round trip (getrusage, the record's
# cpu_time_s) instead of the wall time: the wakeup program runs in the waker's context, so its
# cost is in it, while the time spent waiting for other processes is not — on a loaded machine
# the wall time mostly measures those.
#
# Usage: bench/counters-aab.sh [ROUNDS] [ROUND_TRIPS]
#        (default 45 30000; SCHEDLAB=path, OTHER=path, WARMUP=N, PONG_CPU=N, METRIC=wall|cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-45}
loops=${2:-30000}
whole_in_range counters-aab.sh ROUNDS "$rounds" 3 1000
whole_in_range counters-aab.sh ROUND_TRIPS "$loops" 100 10000000
schedlab_bin || exit 1
other=${OTHER:-}
warmup=${WARMUP:-0}
whole_in_range counters-aab.sh WARMUP "$warmup" 0 10
metric=${METRIC:-wall}
case $metric in
  wall) query='.metrics.us_per_rt' ;;
  cpu) query=".counters.total.cpu_time_s * 1e6 / $loops" ;;
  *)
    echo "counters-aab.sh: METRIC=$metric is not accepted; use wall or cpu" >&2
    exit 1
    ;;
esac
pong_cpu=${PONG_CPU:-0}
whole_in_range counters-aab.sh PONG_CPU "$pong_cpu" 0 $(($(nproc) - 1))
if [ -n "$other" ] && [ ! -x "$other" ]; then
  echo "counters-aab.sh: OTHER=$other is not an executable file" >&2
  exit 1
fi
cell() {
  "${bin:-$SCHEDLAB}" run pingpong --loops "$loops" --tasks processes --group ping:cpus=0 \
    --group pong:cpus="$pong_cpu" --runs 1 --warmup "$warmup" --quiet --counters "$1" --json - 2>/dev/null |
    jq -r ".configs[0].repetitions[0] | $query"
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "ping-pong pinned to CPUs 0|$pong_cpu, $loops round trips, $metric time a round trip, $rounds rounds of (default, proc, proc${other:+, other}) in a random order, $warmup warm-up repetition(s) a cell; load $(cut -d' ' -f1 /proc/loadavg)"
for ((i = 0; i < rounds; i++)); do
  declare -A v=()
  cells='auto\nproc\nproc2\n'
  [ -n "$other" ] && cells+='other\n'
  for c in $(printf "$cells" | shuf); do
    if [ "$c" = other ]; then v[$c]=$(bin=$other cell auto); else v[$c]=$(cell "${c%2}"); fi
  done
  echo "${v[auto]} ${v[proc]} ${v[proc2]} ${v[other]:-}" >>"$out"
done
python3 - "$out" "$metric" <<'PY'
import statistics as st, sys
r = [list(map(float, l.split())) for l in open(sys.argv[1])]
def spread(i, j):
    x = sorted(a[i] / a[j] for a in r); n = len(x)
    return f"{st.median(x):.3f} (interquartile {x[n // 4]:.3f}-{x[3 * n // 4]:.3f})"
print(f"default/proc {spread(0, 1)}")
print(f"proc/proc    {spread(1, 2)}   (A/A control)")
m = [st.median(c) for c in zip(*r)]
print(f"cell medians us/rt ({sys.argv[2]}): default {m[0]:.3f}  proc {m[1]:.3f}  proc again {m[2]:.3f}")
if len(m) > 3:
    print(f"other/default {spread(3, 0)}   (OTHER's default counters; other median {m[3]:.3f})")
PY
