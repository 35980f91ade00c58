#!/usr/bin/env bash
# The blocking loopback-TCP receive cycle against a pipe's (issue #16: validate's "chat burst"
# row and the cost key `net_wait`). Ping and pong share CPU 0, so every receive sleeps and is
# woken by the other's send; the round trip over TCP less the one over pipes is four
# non-blocking messages' extra kernel work (4 × (net_msg − msg), from a profile) plus what the
# sleeps cost extra (net_wait, two per round trip in the simulator's accounting):
#   net_wait ≈ ((tcp − pipe) − 4 × (net_msg − msg)) / 2
# Each column is the median over ROUNDS of the workload's rtt_p50 (a per-round-trip median, so
# a loaded machine inflates it less than a mean), rounds alternating pipe and tcp. The load
# average is printed before and after, and a 1-minute load of 1.5 or more is flagged.
#
# Usage: bench/tcp-cycle.sh [ROUNDS [PROFILE]]   (default 5 rounds; PROFILE a file `schedlab
# calibrate` wrote, for net_msg and msg; default: none, and only the round trips are printed)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
profile=${2:-}
. bench/lib.sh
whole_in_range tcp-cycle.sh ROUNDS "$rounds" 1 100
if [ -n "$profile" ] && [ ! -r "$profile" ]; then
  echo "tcp-cycle.sh: PROFILE '$profile' is not a readable file (write one with schedlab calibrate --out FILE)" >&2
  exit 2
fi
schedlab_bin

# The summary table's rtt_p50 row: name, unit, N, mean, ...
p50_us() {
  "$SCHEDLAB" run pingpong --transport "$1" --loops 20000 --group ping:cpus=0 --group pong:cpus=0 \
    --runs 1 2>/dev/null | awk '$1 == "rtt_p50" {print $4}' || true
}
# A key of the profile's [costs] table, in ns ("3222ns").
key_ns() { awk -v k="$1" '$1 == k && $2 == "=" {gsub(/[^0-9]/, "", $3); print $3; exit}' "$profile"; }

before=$(load1)
pipe=() tcp=()
for _ in $(seq "$rounds"); do
  pipe+=("$(p50_us pipe)")
  tcp+=("$(p50_us tcp)")
  for v in "${pipe[-1]}" "${tcp[-1]}"; do
    [ -n "$v" ] || { echo "tcp-cycle.sh: a run printed no rtt_p50; run schedlab run pingpong --transport tcp by hand to see why" >&2; exit 1; }
  done
done
after=$(load1)
p=$(printf '%s\n' "${pipe[@]}" | median)
t=$(printf '%s\n' "${tcp[@]}" | median)
echo "same-CPU ping-pong, 20,000 round trips, median of $rounds rounds' rtt_p50 (load $before before, $after after)"
printf '  pipe  %8.2f us a round trip\n' "$p"
printf '  tcp   %8.2f us a round trip (ratio %.2f)\n' "$t" "$(awk -v a="$t" -v b="$p" 'BEGIN {print a / b}')"
if [ -n "$profile" ]; then
  nm=$(key_ns net_msg) m=$(key_ns msg)
  if [ -z "$nm" ] || [ -z "$m" ]; then
    echo "tcp-cycle.sh: $profile sets no net_msg or msg" >&2
    exit 1
  fi
  awk -v t="$t" -v p="$p" -v nm="$nm" -v m="$m" -v f="$profile" 'BEGIN {
    printf "  net_wait ≈ ((%.2f − %.2f) − 4 × (%d − %d) ns) / 2 = %.2f us per sleeping receive (net_msg, msg from %s)\n",
      t, p, nm, m, ((t - p) - 4 * (nm - m) / 1000) / 2, f }'
fi
if awk -v a="$before" -v b="$after" 'BEGIN {exit !(a >= 1.5 || b >= 1.5)}'; then
  echo "  warning: load 1.5 or more: other tasks share the CPUs, the figures are inflated"
fi
