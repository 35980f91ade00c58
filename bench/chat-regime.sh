#!/usr/bin/env bash
# The chat row's regime, real against simulated (issue #16: validate's "chat burst" row): one
# real run of validate's chat configuration under `perf sched record` and one simulated run
# (eevdf on the machine's CPUs, the given profile) with `--timeline`, each turned by
# bench/chat_regime.py into the same table — per 25 ms from the first message a server
# delivers: receiver wakeups and sleeps, server turns (how many, how many ended preempted, their
# median length) and how long a woken receiver waits to run (median). Then each run's counters
# per message (clients' sleeps, servers' involuntary switches). The load average is printed
# before and after: times are comparable only on a quiet machine (load < 1.5), counts less
# sensitive.
#
# Usage: bench/chat-regime.sh PROFILE [CHAT ARGS...]   (default: --rooms 4 --messages 50
# --mode burst, validate's; needs root for perf sched record, or prints "skipped: ...")
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:?usage: bench/chat-regime.sh PROFILE [CHAT ARGS...] (PROFILE: written by schedlab calibrate --out FILE)}
shift
if [ ! -r "$profile" ]; then
  echo "chat-regime.sh: PROFILE '$profile' is not a readable file (write one with schedlab calibrate --out FILE)" >&2
  exit 2
fi
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--rooms 4 --messages 50 --mode burst)
if ! command -v perf >/dev/null; then
  echo "skipped: perf is not installed (apt-get install -y linux-perf)"
  exit 0
fi
. bench/lib.sh
schedlab_bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if ! perf sched record -o "$tmp/real.perf" -- "$SCHEDLAB" run chat "${args[@]}" --runs 1 \
  --json "$tmp/real.json" >"$tmp/real.out" 2>&1; then
  echo "skipped: perf sched record failed (root and tracepoints needed): $(tail -1 "$tmp/real.out")"
  exit 0
fi
"$SCHEDLAB" run chat "${args[@]}" --runs 1 --backend sim --policy eevdf --cpus "$(nproc)" \
  --profile "$profile" --timeline "$tmp/sim.svg" --json "$tmp/sim.json" >"$tmp/sim.out" 2>&1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
users=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["configs"][0]["params"]; print(int(p["rooms"]) * int(p["users"]))' "$tmp/real.json")
perf script -i "$tmp/real.perf" -F tid,cpu,time,event,trace 2>/dev/null >"$tmp/real.txt"
python3 bench/chat_regime.py real "$tmp/real.txt" "$users"
python3 bench/chat_regime.py sim "$tmp/sim.events/C0-R0.txt" "$users"
for side in real sim; do
  echo "$side: $(grep -m1 'Average throughput' "$tmp/$side.out" | sed 's/.*Average/Average/')"
  awk -v side="$side" '$1 == "messages" {m = $4} $1 == "server" || $1 == "client" {v[$1] = $3; i[$1] = $4}
    END {printf "%s per message: client sleeps %.3f, server involuntary switches %.3f\n", side, v["client"] / m, i["server"] / m}' "$tmp/$side.out"
done
