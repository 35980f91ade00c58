#!/usr/bin/env bash
# Side-by-side: schedlab against the peers it imitates, on this machine, in one run.
#   messaging  vs  hackbench (rt-tests)            socketpair|pipe × threads|processes
#   pingpong   vs  perf bench sched pipe           threads|processes
#   yield 2048 threads: peak RSS (goal < 256 MiB)
# Runs alternate (peer, schedlab, peer, schedlab, ...) so that drift favours neither, and each
# row compares medians. Install the peers with: apt-get install rt-tests linux-perf
#
# Usage: bench/peers.sh [REPS]   (default 7)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-7}
for tool in hackbench perf; do
  command -v "$tool" >/dev/null || { echo "peers.sh: $tool not found; apt-get install rt-tests linux-perf" >&2; exit 1; }
done
cargo build --release -q
sl=target/release/schedlab
groups=4 loops=500 pploops=100000

. bench/lib.sh

# hackbench prints "Time: S.mmm"; schedlab prints the same line per repetition on stderr.
hb_time() { hackbench "$@" | awk '/^Time:/ {print $2}'; }
sl_msg_time() { "$sl" run messaging "$@" --runs 1 --counters proc 2>&1 >/dev/null | awk '/Time:/ {print $NF}'; }
sl_msg_time_traced() { "$sl" run messaging "$@" --runs 1 --counters auto 2>&1 >/dev/null | awk '/Time:/ {print $NF}'; }
# perf prints "Total time: S [sec]"; schedlab's pingpong prints "Total time: S [sec] ..."
perf_time() { perf bench sched pipe "$@" 2>/dev/null | awk '/Total time:/ {print $3}'; }
sl_pp_time() { "$sl" run pingpong "$@" --runs 1 --counters proc 2>&1 >/dev/null | awk '/Total time:/ {print $(NF-5)}'; }

printf '%-44s %10s %10s %8s\n' "configuration ($reps alternating runs, medians)" "peer s" "schedlab s" "ratio"
row() { # label, peer-fn args..., -- , schedlab-fn args...
  local label=$1; shift
  local peer=() ours=() seen=0
  for a in "$@"; do
    if [[ $a == -- ]]; then seen=1; continue; fi
    if ((seen)); then ours+=("$a"); else peer+=("$a"); fi
  done
  local p=() s=()
  for ((i = 0; i < reps; i++)); do
    p+=("$("${peer[@]}")")
    s+=("$("${ours[@]}")")
  done
  local pm sm
  pm=$(printf '%s\n' "${p[@]}" | median)
  sm=$(printf '%s\n' "${s[@]}" | median)
  printf '%-44s %10.3f %10.3f %8.3f\n' "$label" "$pm" "$sm" "$(awk -v a="$sm" -v b="$pm" 'BEGIN {print a / b}')"
}

for transport in socketpair pipe; do
  for mode in processes threads; do
    hbargs=(-g $groups -l $loops -s 100)
    [[ $transport == pipe ]] && hbargs+=(-p)
    [[ $mode == threads ]] && hbargs+=(-T) || hbargs+=(-P)
    row "messaging $transport $mode ${groups}g×${loops}" hb_time "${hbargs[@]}" -- \
      sl_msg_time --groups $groups --loops $loops --transport $transport --tasks $mode
  done
done
row "messaging socketpair processes, tracing on" hb_time -g $groups -l $loops -s 100 -P -- \
  sl_msg_time_traced --groups $groups --loops $loops --transport socketpair --tasks processes
row "pingpong pipe threads ${pploops}" perf_time -l $pploops -T -- sl_pp_time --loops $pploops --tasks threads
row "pingpong pipe processes ${pploops}" perf_time -l $pploops -- sl_pp_time --loops $pploops --tasks processes

rss_kb=$( { /usr/bin/time -f '%M' "$sl" run yield --threads 2048 --duration 1s --runs 1 --quiet >/dev/null; } 2>&1 | tail -1)
printf '%-44s %10s %10.1f MiB (goal < 256)\n' "yield 2048 threads: peak RSS" "" "$(awk -v k="$rss_kb" 'BEGIN {print k / 1024}')"

# Chat (issue: the client and server code must not be the bottleneck that hides the scheduler).
# msg/s of chat next to hackbench's messages/s, and where the CPU time goes (perf stat user vs
# sys over the whole command; perf record's share of samples in schedlab's own code).
echo
printf '%-44s %12s %12s\n' "throughput ($reps alternating runs, medians)" "hackbench" "chat burst"
hb_rate() { hackbench -g 10 -l 100 | awk '/^Time:/ {print 10*20*20*100 / $2}'; }
chat_rate() { "$sl" run chat --rooms 10 --messages 100 --runs 1 --counters proc 2>&1 >/dev/null | awk '/Average throughput/ {print $(NF-3)}'; }
h=() c=()
for ((i = 0; i < reps; i++)); do h+=("$(hb_rate)"); c+=("$(chat_rate)"); done
printf '%-44s %12.0f %12.0f\n' "messages per second" "$(printf '%s\n' "${h[@]}" | median)" "$(printf '%s\n' "${c[@]}" | median)"
for mode in burst turns; do
  perf stat -x, -e user_time,system_time -o /tmp/schedlab-chat-stat.$$ -- \
    "$sl" run chat --rooms 10 --messages 100 --mode $mode --runs 3 --counters proc -q >/dev/null 2>&1
  awk -F, -v mode=$mode '/user_time/ {u=$1} /system_time/ {s=$1} END {printf "chat %-5s user time share of CPU time        %6.1f %%  (user %.2f s, sys %.2f s; goal <= 15 %%)\n", mode, 100*u/(u+s), u/1e9, s/1e9}' /tmp/schedlab-chat-stat.$$
  rm -f /tmp/schedlab-chat-stat.$$
done
perf record -q -o /tmp/schedlab-chat-perf.$$ -- "$sl" run chat --rooms 10 --messages 100 --runs 3 --counters proc -q >/dev/null 2>&1
perf report -i /tmp/schedlab-chat-perf.$$ --no-children --sort dso 2>/dev/null \
  | awk '/%/ && !/^#/ {gsub("%","",$1); if ($2 == "schedlab") own += $1; else if ($2 ~ /kernel/) k += $1; else lib += $1}
         END {printf "chat burst samples: kernel %.1f %%, schedlab code %.1f %%, libraries %.1f %%\n", k, own, lib}'
rm -f /tmp/schedlab-chat-perf.$$
