#!/usr/bin/env bash
# Replay accuracy of two schedlab binaries, each recording and replaying the same programs, in
# alternating rounds (A, B, A, B, ...): bench/record.sh's per-program rows (replayed / recorded
# CPU time of all tasks, tasks within ±5 % of their recorded CPU time) gathered over the rounds
# and summarised by bench/record_ab.py: per program and binary, the median CPU ratio and the
# median share of tasks within ±5 %, with every round's figures beside them.
# Needs what bench/record.sh needs (root; apt-get install rt-tests linux-perf rt-app build-essential python3).
#
# Usage: bench/record-ab.sh ROUNDS BIN_A BIN_B
#        RECORD_ONLY=REGEX bench/record-ab.sh ROUNDS BIN_A BIN_B   (programs, grep -E; default
#        'cyclictest|rt-app|make|hackbench threads')
#        REPS=N bench/record-ab.sh ...   (replays per recording, default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
[ $# -eq 3 ] || { echo "usage: bench/record-ab.sh ROUNDS BIN_A BIN_B" >&2; exit 2; }
rounds=$1
whole_in_range record-ab.sh ROUNDS "$rounds" 1 50
whole_in_range record-ab.sh REPS "${REPS:-3}" 1 100
for bin in "$2" "$3"; do
  [ -x "$bin" ] || { echo "record-ab.sh: $bin is not an executable schedlab binary" >&2; exit 2; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$2
    [ "$side" = A ] || bin=$3
    echo "### $side round $round load $(load1)" | tee -a "$out"
    SCHEDLAB=$bin RECORD_COST=off PERF_REPLAY=off RECORD_ONLY="${RECORD_ONLY:-cyclictest|rt-app|make|hackbench threads}" \
      bench/record.sh "${REPS:-3}" 2>&1 | tee -a "$out" | grep -E '^== |CPU time s, all|per-task' || true
  done
done
echo
echo "A: $2"
echo "B: $3"
python3 bench/record_ab.py <"$out"
