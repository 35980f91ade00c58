#!/usr/bin/env bash
# Side by side with the originals of the latency benchmarks, on this machine's kernel:
#   schbench (masoncl/schbench, built from its public source in a temporary directory, never
#   kept) against `schedlab run schbench` with the same options, alternating (original,
#   schedlab, original, ...): wakeup-latency p50/p90/p99/p99.9 and average RPS, the medians of
#   REPS runs of each and their ratio, and the spread (min..max) of the original's runs against
#   themselves, which says how much of a difference this machine's noise can make.
# Then bench/latency-cyclictest.sh, if it is there, with the same arguments.
#
# The original's work is a matrix multiplication; schedlab's is CPU time (op-time). Its -C
# calibration mode measures one request's CPU time here first (one worker without locking, over
# -n operations), and schedlab is given that per operation.
#
# Usage: bench/latency.sh [REPS] [RUNTIME_S] [THREADS]   (default 5 10 <CPUs>)
# SCHBENCH=path/to/schbench uses that binary; SCHBENCH_SRC=DIR builds DIR/schbench.c; otherwise
# the source is cloned from https://github.com/masoncl/schbench. SCHEDLAB=path as bench/lib.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
reps=${1:-5}
runtime=${2:-10}
threads=${3:-$(nproc)}
whole_in_range latency.sh REPS "$reps" 1 100
whole_in_range latency.sh RUNTIME_S "$runtime" 2 3600
whole_in_range latency.sh THREADS "$threads" 1 1024
ops=5

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The original, built in $tmp unless given.
schbench_bin() {
  if [ -n "${SCHBENCH:-}" ]; then
    [ -x "$SCHBENCH" ] || { echo "latency.sh: SCHBENCH=$SCHBENCH is not an executable" >&2; return 1; }
    return 0
  fi
  if ! command -v cc >/dev/null && ! command -v gcc >/dev/null; then
    echo "skipped: schbench needs a C compiler to build (install: apt-get install build-essential)"
    return 1
  fi
  local src=$tmp/schbench
  if [ -n "${SCHBENCH_SRC:-}" ]; then
    mkdir -p "$src" && cp "$SCHBENCH_SRC/schbench.c" "$src/" || return 1
  elif ! git clone -q --depth 1 https://github.com/masoncl/schbench "$src" 2>"$tmp/clone.log"; then
    echo "skipped: could not fetch schbench's source ($(tail -1 "$tmp/clone.log")); give SCHBENCH_SRC=DIR or SCHBENCH=BINARY"
    return 1
  fi
  # The flags of its Makefile.
  local cc
  cc=$(command -v gcc || command -v cc)
  "$cc" -Wall -O2 -g -W -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64 -o "$src/schbench" \
    "$src/schbench.c" -lpthread -lm 2>"$tmp/cc.log" || {
    echo "latency.sh: building schbench failed:" >&2
    tail -5 "$tmp/cc.log" >&2
    return 1
  }
  SCHBENCH=$src/schbench
}

schbench_bin || exit 0
schedlab_bin || exit 1

# The last table of each kind in a schbench-layout text (the original's stderr, schedlab's
# classic lines): "wakeup p50 p90 p99 p99.9" and "rps AVG".
summarise() {
  awk '
    /Wakeup Latencies/ { t = "w"; n = 0; next }
    /Request Latencies/ || /^RPS/ { t = ""; next }
    t == "w" && /th:/ {
      for (i = 1; i <= NF; i++) if ($i ~ /th:$/) { v[++n] = $(i + 1) }
      w = v[1] " " v[2] " " v[3] " " v[4]
    }
    /^average rps:/ { r = $3 }
    END { print w, r }
  '
}

# One run of each with the same options: -m 1 -t THREADS -r RUNTIME, no interval reports.
orig() {
  "$SCHBENCH" -m 1 -t "$threads" -r "$runtime" -i 100000 2>&1 >/dev/null | summarise
}
ours() {
  "$SCHEDLAB" run schbench --message-threads 1 --threads "$threads" --runtime "$runtime" \
    --op-time "${op_ns}ns" --operations $ops --runs 1 --counters proc 2>&1 >/dev/null | summarise
}

# One operation's CPU time here: schbench -C (one worker, no lock, its sleep not timed) for 3 s,
# its CPU time (the shell's `time`: user + sys) over the requests it served and -n. CPU time,
# not the requests' wall time, which other work on the machine stretches.
cal=$({ time -p "$SCHBENCH" -C -m 1 -t 1 -n $ops -r 3 -i 100000; } 2>&1)
op_ns=$(printf '%s\n' "$cal" | awk -v ops=$ops '
  /^Request Latencies/ { sub(/.*\(/, ""); n = $1 }
  $1 == "user" || $1 == "sys" { cpu += $2 }
  END { if (n > 0) printf "%d", cpu * 1e9 / n / ops }')
case $op_ns in '' | 0 | *[!0-9]*) echo "latency.sh: schbench -C printed no request count:" >&2; printf '%s\n' "$cal" >&2; exit 1 ;; esac

printf 'schbench -m 1 -t %s -r %s: %s alternating runs each; one operation = %s us (schbench -C); load %s\n' \
  "$threads" "$runtime" "$reps" "$((op_ns / 1000))" "$(load1)"
: >"$tmp/orig" && : >"$tmp/ours"
for ((i = 0; i < reps; i++)); do
  orig >>"$tmp/orig"
  ours >>"$tmp/ours"
done

# col FILE N: column N of every run.
col() { awk -v c="$2" 'NF >= 5 { print $c }' "$1"; }
printf '%-18s %12s %12s %8s   %s\n' "metric" "schbench" "schedlab" "ratio" "schbench's own spread (min..max of $reps)"
names=("wakeup p50 us" "wakeup p90 us" "wakeup p99 us" "wakeup p99.9 us" "rps")
for c in 1 2 3 4 5; do
  o=$(col "$tmp/orig" $c | median)
  s=$(col "$tmp/ours" $c | median)
  lo=$(col "$tmp/orig" $c | sort -g | head -1)
  hi=$(col "$tmp/orig" $c | sort -g | tail -1)
  printf '%-18s %12s %12s %8s   %s..%s\n' "${names[c - 1]}" "$o" "$s" \
    "$(awk -v a="$s" -v b="$o" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" "$lo" "$hi"
done
# The issue's goals, one line each: RPS within 5 %, wakeup p50 and p90 within 10 % or 2 us,
# p99 within 25 % (p99.9 has none). Each line also says how far the original's own runs spread
# (max / min - 1), which bounds what this machine can tell apart.
goal() { # goal NAME COLUMN REL ABS_US
  local o s lo hi
  o=$(col "$tmp/orig" "$2" | median)
  s=$(col "$tmp/ours" "$2" | median)
  lo=$(col "$tmp/orig" "$2" | sort -g | head -1)
  hi=$(col "$tmp/orig" "$2" | sort -g | tail -1)
  awk -v n="$1" -v o="$o" -v s="$s" -v rel="$3" -v abs="$4" -v lo="$lo" -v hi="$hi" 'BEGIN {
    d = s - o; if (d < 0) d = -d
    allowed = rel * o; if (abs > allowed) allowed = abs
    what = sprintf("within %d %%", rel * 100); if (abs > 0) what = what sprintf(" or %g us", abs)
    spread = lo > 0 ? sprintf("%.0f %%", (hi / lo - 1) * 100) : "-"
    printf "goal: %-12s %-20s %-8s (schedlab %s, schbench %s; schbench against itself: %s)\n", n, what, (d <= allowed ? "met" : "not met"), s, o, spread
  }'
}
goal rps 5 0.05 0
goal "wakeup p50" 1 0.10 2
goal "wakeup p90" 2 0.10 2
goal "wakeup p99" 3 0.25 0
echo "goals hold on an otherwise idle machine; load average (1 min) now $(load1)"
if [ "$(wc -l <"$tmp/ours")" -ne "$reps" ] || [ "$(col "$tmp/ours" 1 | wc -l)" -ne "$reps" ]; then
  echo "latency.sh: a schedlab run printed no table:" >&2
  cat "$tmp/ours" >&2
  exit 1
fi

if [ -x bench/latency-cyclictest.sh ]; then
  bench/latency-cyclictest.sh "$@"
fi
