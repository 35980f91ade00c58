#!/usr/bin/env bash
# How well `schedlab calibrate` repeats itself: RUNS calibrations of each kind (`--quick` and the
# full one), alternating quick, full, quick, full … so that a change of the machine's load
# touches both kinds alike, each written to a profile file in a temporary directory. Then, per
# kind and per cost key, every run's value side by side (`-` where the run could not pin the key
# and kept the base profile's), and min / median / max and max/min over the runs that pinned it.
# A key that repeats has max/min near 1; `pinned` says in how many runs it was measured.
# The load average is printed before and after: on a shared machine the spread is the
# robustness of the probes under load, on a quiet one their repeatability.
#
# Usage: bench/calibrate-repeat.sh [RUNS] [KEEP_DIR]   (default 3 runs of each kind; KEEP_DIR,
# if given, receives the profile files instead of a temporary directory that is removed)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
keep=${2:-}
. bench/lib.sh
whole_in_range calibrate-repeat.sh RUNS "$runs" 1 50
if [ -n "$keep" ] && [ ! -d "$keep" ]; then
  echo "calibrate-repeat.sh: KEEP_DIR '$keep' is not a directory" >&2
  exit 2
fi
schedlab_bin || exit 1

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=${keep:-$dir}

before=$(load1)
start=$(date +%s)
for i in $(seq "$runs"); do
  for kind in quick full; do
    flag=()
    [ "$kind" = quick ] && flag=(--quick)
    "$SCHEDLAB" calibrate "${flag[@]}" --force --out "$out/$kind-$i.toml" >"$dir/$kind-$i.txt" 2>/dev/null || {
      echo "calibrate-repeat.sh: calibrate ${flag[*]} failed (run it by hand to see why)" >&2
      exit 1
    }
  done
done
after=$(load1)
took=$(($(date +%s) - start))

python3 - "$out" "$runs" <<'EOF'
import sys, tomllib, statistics
out, runs = sys.argv[1], int(sys.argv[2])
for kind in ("quick", "full"):
    files = [tomllib.load(open(f"{out}/{kind}-{i}.toml", "rb")) for i in range(1, runs + 1)]
    keys = sorted({k for f in files for k in f.get("costs", {})}
                  | {k for f in files for k, why in f.get("not_measured", {}).items()
                     if "pinned" in why})
    print(f"calibrate{' --quick' if kind == 'quick' else ''}: {runs} runs")
    head = "".join(f"{'run ' + str(i):>10}" for i in range(1, runs + 1))
    print(f"{'key':<14}{head}{'min':>10}{'median':>10}{'max':>10}{'max/min':>9}  pinned")
    for key in keys:
        vals = []
        for f in files:
            v = f.get("costs", {}).get(key)
            vals.append(None if v is None else float(v.removesuffix("ns").removesuffix("MiB")))
        got = [v for v in vals if v is not None]
        cells = "".join(f"{'-' if v is None else format(v, '.0f'):>10}" for v in vals)
        if got:
            lo, hi = min(got), max(got)
            ratio = f"{hi / lo:.2f}" if lo > 0 else "inf"
            stats = f"{lo:>10.0f}{statistics.median(got):>10.0f}{hi:>10.0f}{ratio:>9}"
        else:
            stats = f"{'-':>10}{'-':>10}{'-':>10}{'-':>9}"
        print(f"{key:<14}{cells}{stats}  {len(got)}/{runs}")
    print()
EOF
printf 'load average (1 min): %s before, %s after; %d s in all\n' "$before" "$after" "$took"
awk -v a="$before" -v b="$after" 'BEGIN { if (a >= 1.5 || b >= 1.5) print "note: the machine was busy (1-minute load 1.5 or more): this is the spread under load, not on a quiet machine" }'
