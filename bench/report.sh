#!/usr/bin/env bash
# Measures `schedlab report` against its goals: 1,000 records render in under 5 s, into a file
# under 10 MB.
#
#   bench/report.sh              # make the records, time the report, print the figures
#
# The records come from a real simulated sweep: chat (the workload with the most in a report:
# six metrics, the counters and seed 000's table) over policy=o1,cfs,eevdf × cpus=1,2,4 with
# 3 repetitions each, a few seconds of simulation. Its nine per-configuration records are
# copied to 1,000 files (record i is a copy of configuration i mod 9), beside the sweep's
# sweep.json (all nine configurations, with the sweep's charts): the report is made of those
# 1,001 files, named one by one (the directory alone would stand for its sweep.json). Copies cost the report as much as distinct records do: each is read,
# parsed and rendered on its own. Exits 1 when a goal is missed.
#
# SCHEDLAB=path/to/schedlab uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
schedlab_bin

records=1000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dir=$work/records
sweep=$work/sweep
mkdir "$dir"
"$SCHEDLAB" sweep chat --backend sim --vary policy=o1,cfs,eevdf --vary cpus=1,2,4 \
  --rooms 2 --messages 50 --runs 3 --quiet --out "$sweep" > /dev/null
cp "$sweep/sweep.json" "$dir/"
configs=("$sweep"/policy=*.json)
for i in $(seq 0 $((records - 1))); do
  cp "${configs[$((i % ${#configs[@]}))]}" "$(printf '%s/record-%04d.json' "$dir" "$i")"
done
have=$(find "$dir" -maxdepth 1 -name '*.json' | wc -l)

out=$work/report.html
start=$(date +%s%N)
"$SCHEDLAB" report "$dir"/*.json -o "$out"
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
bytes=$(stat -c %s "$out")

time_ok=$(( ms < 5000 ))
size_ok=$(( bytes < 10000000 ))
verdict() { if [ "$1" -eq 1 ]; then echo ok; else echo MISSED; fi; }
printf 'records   %d files (%d copies of %d configurations + sweep.json)\n' "$have" "$records" "${#configs[@]}"
printf 'time      %d.%03d s   goal < 5 s     %s\n' $((ms / 1000)) $((ms % 1000)) "$(verdict $time_ok)"
printf 'size      %s MB   goal < 10 MB   %s\n' "$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e6 }')" \
  "$(verdict $size_ok)"
[ "$time_ok" -eq 1 ] && [ "$size_ok" -eq 1 ]
