#!/usr/bin/env bash
# What watching costs the measured workload: each row runs the peer (the tool the workload
# imitates), schedlab with its default counters (in-kernel BPF where they load), schedlab with
# --counters proc (no wakeup counters, no probe at all) and schedlab with --counters trace (the
# tracefs replay), alternating, and prints the medians and ratios. A ratio is the cost of the
# left column against the right one: time / time, or rate / rate inverted, so 1.030 means 3 %
# slower. Each ratio is the median of the rounds' own ratios (a round runs its cells back to
# back), which a machine whose speed drifts disturbs much less than a ratio of medians.
#   pingpong pipe processes   vs  bench/peers/pipe.c (perf bench sched pipe's loop with each
#                                 process pinned as schedlab's are; needs cc)
#   messaging pipe|socketpair vs  hackbench -p / hackbench / hackbench -T (rt-tests)
#   yield 1, 16, 64, 1024     vs  bench/peers/yield.c (a C loop of sched_yield; needs cc)
#   chat                      (no peer)
# A last table checks bench/peers/pipe.c against perf bench sched pipe itself where both can
# run the same way: on one CPU (taskset) and unpinned.
# Install the peers with: apt-get install rt-tests linux-perf gcc. A missing peer leaves its
# column empty.
#
# Usage: bench/overhead.sh [REPS]   (default 5; SCHEDLAB=path to use a given binary; ONLY=REGEX
# runs the rows whose label matches, e.g. ONLY=yield)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
reps=${1:-5}
whole_in_range overhead.sh REPS "$reps" 1 100
schedlab_bin || exit 1
sl=$SCHEDLAB
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
yield_peer= pipe_peer=
if command -v cc > /dev/null && cc -O2 -pthread -o "$tmp/yield" bench/peers/yield.c; then
  yield_peer=$tmp/yield
fi
if command -v cc > /dev/null && cc -O2 -o "$tmp/pipe" bench/peers/pipe.c; then
  pipe_peer=$tmp/pipe
fi
have() { command -v "$1" > /dev/null; }

# metric COUNTERS METRIC ARGS...: one repetition of `schedlab run ARGS`, printing METRIC.
metric() {
  local counters=$1 name=$2
  shift 2
  "$sl" run "$@" --runs 1 --quiet --counters "$counters" --json - 2> /dev/null |
    jq -r ".configs[0].repetitions[0].metrics[\"$name\"]"
}
# The source the default counters used here, for the heading.
source=$("$sl" run pingpong --loops 100 --runs 1 --quiet --json - 2> /dev/null |
  jq -r '.configs[0].counter_sources.wakeups')

echo "bench/overhead.sh: $reps alternating runs per cell, medians; $(nproc) CPUs; load $(load1)"
echo "default counters here: $source"
printf '%-40s %6s %11s %11s %11s %11s  %9s %9s %9s\n' configuration unit peer default proc trace \
  default/proc default/peer trace/proc
# row LABEL UNIT KIND PEER-COMMAND -- SCHEDLAB-METRIC SCHEDLAB-ARGS...
# KIND is `time` (lower is better) or `rate` (higher is better); PEER-COMMAND prints one
# number of that kind, or is `-` for none.
row() {
  local label=$1 unit=$2 kind=$3 peer=$4
  shift 4
  [[ -n ${ONLY:-} && ! $label =~ $ONLY ]] && return
  [[ $1 == -- ]] && shift
  local name=$1
  shift
  local p=() d=() q=() t=()
  for ((i = 0; i < reps; i++)); do
    [[ $peer != - ]] && p+=("$(bash -c "$peer")")
    d+=("$(metric auto "$name" "$@")")
    q+=("$(metric proc "$name" "$@")")
    t+=("$(metric trace "$name" "$@")")
  done
  local pm=nan dm qm tm
  [[ $peer != - ]] && pm=$(printf '%s\n' "${p[@]}" | median)
  dm=$(printf '%s\n' "${d[@]}" | median)
  qm=$(printf '%s\n' "${q[@]}" | median)
  tm=$(printf '%s\n' "${t[@]}" | median)
  # The ratios are medians of each round's own ratio (the cells of one round ran back to back,
  # so a slow minute of the machine slows both sides of a ratio), not ratios of the medians.
  local rdq=() rdp=() rtq=()
  for ((i = 0; i < reps; i++)); do
    rdq+=("$(cost "$kind" "${d[i]}" "${q[i]}")")
    [[ $peer != - ]] && rdp+=("$(cost "$kind" "${d[i]}" "${p[i]}")")
    rtq+=("$(cost "$kind" "${t[i]}" "${q[i]}")")
  done
  local a b c=-
  a=$(printf '%s\n' "${rdq[@]}" | median)
  [[ $peer != - ]] && b=$(printf '%s\n' "${rdp[@]}" | median) || b=-
  c=$(printf '%s\n' "${rtq[@]}" | median)
  awk -v l="$label" -v u="$unit" -v p="$pm" -v d="$dm" -v q="$qm" -v t="$tm" -v a="$a" -v b="$b" -v c="$c" '
    function num(x) { return x == "nan" ? "-" : sprintf("%.4g", x) }
    function r(x) { return x == "-" ? "-" : sprintf("%.3f", x) }
    BEGIN { printf "%-40s %6s %11s %11s %11s %11s  %9s %9s %9s\n", l, u, num(p), num(d), num(q), num(t), r(a), r(b), r(c) }'
}

# cost KIND A B: how much slower A is than B (time: A / B; rate: B / A).
cost() {
  awk -v k="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.6f\n", (k == "time" ? a / b : b / a) }'
}

pp=100000
# Ping-pong unpinned is bimodal (3 µs a round trip when both sides share a CPU, 10 µs across
# CPUs on a VM), and a median of such runs flips between the modes: the schedlab rows pin both
# sides, once on two CPUs and once on one, and so does their peer, bench/peers/pipe.c (perf
# bench cannot pin its two processes apart; the table at the end compares the two peers).
pipe_pp=- pipe_pp1=-
if [[ -n $pipe_peer ]]; then
  pipe_pp="$pipe_peer $pp 0 1"
  pipe_pp1="$pipe_peer $pp 0 0"
fi
row "pingpong pipe processes ${pp}, CPUs 0|1" us/rt time "$pipe_pp" -- \
  us_per_rt pingpong --loops $pp --tasks processes --group ping:cpus=0 --group pong:cpus=1
row "pingpong pipe processes ${pp}, CPU 0" us/rt time "$pipe_pp1" -- \
  us_per_rt pingpong --loops $pp --tasks processes --group ping:cpus=0 --group pong:cpus=0
g=4 l=500
for t in "pipe processes:-p -P" "socketpair processes:-P" "socketpair threads:-T"; do
  what=${t%%:*} flags=${t#*:}
  hb=-
  have hackbench && hb="hackbench -g $g -l $l -s 100 $flags | awk '/^Time:/ {print \$2}'"
  row "messaging $what ${g}g×${l}" s time "$hb" -- \
    time messaging --groups $g --loops $l --transport "${what% *}" --tasks "${what#* }"
done
for n in 1 16 64 1024; do
  yp=-
  [[ -n $yield_peer ]] && yp="$yield_peer $n 2"
  row "yield $n threads 2s" yields/s rate "$yp" -- yields_per_s yield --threads $n --duration 2s
done
row "chat 10 rooms × 100 messages" msgs/s rate - -- msgs_per_s chat --rooms 10 --messages 100

# --timeline keeps a tracefs recording of every switch, wakeup and migration (it draws each
# CPU's run queue over time): its cost against the default counters alone. (--locks records
# nothing more: it prints the lock statistics every run keeps.)
echo
printf '%-40s %9s %11s %13s %9s\n' "--timeline (same alternation)" unit default "+ --timeline" cost
tl_row() {
  local label=$1 unit=$2 kind=$3 name=$4
  shift 4
  [[ -n ${ONLY:-} && ! $label =~ $ONLY ]] && return
  local d=() t=()
  for ((i = 0; i < reps; i++)); do
    d+=("$(metric auto "$name" "$@")")
    t+=("$(metric auto "$name" "$@" --timeline "$tmp/timeline.svg")")
  done
  local dm tm r=()
  dm=$(printf '%s\n' "${d[@]}" | median)
  tm=$(printf '%s\n' "${t[@]}" | median)
  for ((i = 0; i < reps; i++)); do r+=("$(cost "$kind" "${t[i]}" "${d[i]}")"); done
  awk -v l="$label" -v u="$unit" -v d="$dm" -v t="$tm" -v c="$(printf '%s\n' "${r[@]}" | median)" 'BEGIN {
    printf "%-40s %9s %11.4g %13.4g %9.3f\n", l, u, d, t, c }'
}
tl_row "pingpong pipe processes ${pp}" us/rt time us_per_rt pingpong --loops $pp --tasks processes
tl_row "messaging pipe processes ${g}g×${l}" s time time messaging --groups $g --loops $l --transport pipe --tasks processes
tl_row "yield 64 threads 2s" yields/s rate yields_per_s yield --threads 64 --duration 2s

# The ping-pong peer against perf bench sched pipe itself, where both can run alike: both
# processes on CPU 0 (perf under taskset), and both unpinned (bimodal: see above; a median of
# such runs says little). perf's figure includes its fork and wait, about 0.1 ms.
if [[ -n $pipe_peer ]] && have perf && have taskset && [[ -z ${ONLY:-} || "pingpong peers" =~ $ONLY ]]; then
  echo
  printf '%-40s %9s %11s %13s %9s\n' "pingpong peers (same alternation)" unit pipe.c "perf bench" perf/pipe.c
  # perf_us [PREFIX...]: perf bench's µs per round trip, run under PREFIX (taskset -c 0).
  perf_us() { "$@" perf bench sched pipe -l $pp 2> /dev/null | awk '/usecs\/op/ {print $1}'; }
  for how in "CPU 0" "unpinned"; do
    a=() b=() r=()
    for ((i = 0; i < reps; i++)); do
      if [[ $how == "CPU 0" ]]; then
        a+=("$("$pipe_peer" $pp 0 0)")
        b+=("$(perf_us taskset -c 0)")
      else
        a+=("$("$pipe_peer" $pp - -)")
        b+=("$(perf_us)")
      fi
      r+=("$(cost time "${b[i]}" "${a[i]}")")
    done
    awk -v l="pipe processes ${pp}, $how" -v a="$(printf '%s\n' "${a[@]}" | median)" \
      -v b="$(printf '%s\n' "${b[@]}" | median)" -v c="$(printf '%s\n' "${r[@]}" | median)" \
      'BEGIN { printf "%-40s %9s %11.4g %13.4g %9.3f\n", l, "us/rt", a, b, c }'
  done
fi
