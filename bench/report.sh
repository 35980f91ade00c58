#!/usr/bin/env bash
# Measures `schedlab report` against its goals: 1,000 records render in under 5 s, into a file
# under 10 MB.
#
#   bench/report.sh              # make the records (once), time the report, print the figures
#   bench/report.sh DIR          # keep the records in DIR (reused when it already holds them)
#
# The records come from a simulated sweep of 1,000 configurations (yield: 25 thread counts ×
# 8 CPU counts × 5 policies, 3 repetitions each), whose --out directory holds one record per
# configuration plus sweep.json, a record of all 1,000: the report is made of the directory,
# 1,001 records and 2,000 configurations. Exits 1 when a goal is missed.
#
# SCHEDLAB=path/to/schedlab uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${SCHEDLAB:-}" ]; then
  cargo build --release --quiet
  SCHEDLAB=$PWD/target/release/schedlab
fi

dir=${1:-${TMPDIR:-/tmp}/schedlab-bench-report}
records=1000
have=0
if [ -d "$dir" ]; then have=$(find "$dir" -maxdepth 1 -name "*.json" ! -name sweep.json | wc -l); fi
if [ "$have" -ne "$records" ] || [ ! -f "$dir/sweep.json" ]; then
  rm -rf "$dir"
  echo "making $records records in $dir (a simulated sweep; takes a minute or two)" >&2
  start=$(date +%s)
  "$SCHEDLAB" sweep yield --backend sim --duration 2ms --runs 3 --quiet \
    --vary threads=$(seq -s, 1 25) --vary cpus=$(seq -s, 1 8) \
    --vary policy=o1,cfs,eevdf,linux24,linux24-prio \
    --out "$dir" > /dev/null
  echo "made them in $(( $(date +%s) - start )) s" >&2
fi
have=$(find "$dir" -maxdepth 1 -name '*.json' | wc -l)

out=$(mktemp -d)/report.html
start=$(date +%s%N)
"$SCHEDLAB" report "$dir" -o "$out"
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
bytes=$(stat -c %s "$out")
rm -rf "$(dirname "$out")"

time_ok=$(( ms < 5000 ))
size_ok=$(( bytes < 10000000 ))
verdict() { if [ "$1" -eq 1 ]; then echo ok; else echo MISSED; fi; }
printf 'records   %d files (%d configurations + sweep.json)\n' "$have" "$records"
printf 'time      %d.%03d s   goal < 5 s     %s\n' $((ms / 1000)) $((ms % 1000)) "$(verdict $time_ok)"
printf 'size      %s MB   goal < 10 MB   %s\n' "$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e6 }')" \
  "$(verdict $size_ok)"
[ "$time_ok" -eq 1 ] && [ "$size_ok" -eq 1 ]
