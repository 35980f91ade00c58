#!/usr/bin/env bash
# The memory-access costs of the simulator's cost profile (mem_rw_per_kib, chase_cached_per_khop,
# chase_uncached_per_khop, chase_sequential_per_khop), measured on this machine's real kernel
# with schedlab's own memory-access step (rt-app's `memrun`): each configuration is a one-task
# rt-app file that runs the access PASSES times, against the same file with count 0 (the same
# buffer made, no access); the difference of the run's CPU time over the bytes or hops is the
# cost. Variants alternate within each round; medians over ROUNDS rounds.
#
#   bench/memrun-costs.sh [ROUNDS] [PASSES]      (defaults 5 and 20)
#
# Prints one row per configuration: kind, buffer, stride, pattern, count per pass, passes, the
# median cost (ns per KiB for read/write, ns per 1000 hops for a chase) and the min-max over
# the rounds, and the load at the start and the end. SCHEDLAB=path/to/schedlab uses that binary.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
passes=${2:-20}
whole_in_range memrun-costs.sh ROUNDS "$rounds" 1 100
whole_in_range memrun-costs.sh PASSES "$passes" 1 10000
schedlab_bin || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name kind size stride pattern count: per configuration. Counts give each pass tens of ms or
# more, beyond the noise of making a 64 MiB buffer (which both variants make).
configs=(
  "read-32KiB read 32768 64 random 268435456"
  "read-64MiB read 67108864 64 random 268435456"
  "write-32KiB write 32768 64 random 268435456"
  "write-64MiB write 67108864 64 random 268435456"
  "chase-16KiB chase 16384 64 random 67108864"
  "chase-256KiB chase 262144 64 random 16777216"
  "chase-4MiB chase 4194304 64 random 1048576"
  "chase-64MiB chase 67108864 64 random 1048576"
  "chase-seq-64MiB chase 67108864 64 sequential 268435456"
)

# file NAME KIND SIZE STRIDE PATTERN COUNT: a one-task rt-app file, PASSES passes of the access.
file() {
  cat >"$tmp/$1.json" <<EOF
{ "global": { "default_policy": "SCHED_OTHER" },
  "tasks": { "t": { "loop": $passes, "cpus": [0],
    "memrun": { "type": "$2", "size": $3, "stride": $4, "pattern": "$5", "count": $6 } } } }
EOF
}

# cpu FILE: the run's CPU time in seconds.
cpu() {
  "$SCHEDLAB" run "$1" --backend real --runs 1 --json "$1.rec" >/dev/null 2>"$1.err" || {
    echo "memrun-costs.sh: $1 failed: $(head -3 "$1.err")" >&2
    return 1
  }
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["configs"][0]["repetitions"][0]["counters"]["total"]["cpu_time_s"])' "$1.rec"
}

echo "# memrun-costs: rounds=$rounds passes=$passes load at start $(load1) ($(nproc) CPUs)"
for c in "${configs[@]}"; do
  set -- $c
  name=$1
  file "$name" "$2" "$3" "$4" "$5" "$6"
  file "$name-0" "$2" "$3" "$4" "$5" 0
  : >"$tmp/$name.costs"
  for _ in $(seq "$rounds"); do
    a=$(cpu "$tmp/$name.json") || exit 1
    b=$(cpu "$tmp/$name-0.json") || exit 1
    python3 -c 'import sys
a, b, n, kind = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]) * int(sys.argv[4]), sys.argv[5]
unit = 1024 if kind != "chase" else 1000
print((a - b) * 1e9 / n * unit)' "$a" "$b" "$6" "$passes" "$2" >>"$tmp/$name.costs"
  done
  med=$(median <"$tmp/$name.costs")
  lo=$(sort -g "$tmp/$name.costs" | head -1)
  hi=$(sort -g "$tmp/$name.costs" | tail -1)
  unit=$([ "$2" = chase ] && echo "ns/1000 hops" || echo "ns/KiB")
  printf '%-18s kind=%-5s size=%-10s stride=%-3s pattern=%-10s count=%-9s passes=%-4s %10.0f %s (min %.0f max %.0f)\n' \
    "$name" "$2" "$3" "$4" "$5" "$6" "$passes" "$med" "$unit" "$lo" "$hi"
done
echo "# load at end $(load1)"
