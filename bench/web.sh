#!/usr/bin/env bash
# The web workload's performance goals (issue 17), on this machine, alternating runs:
#
#   1. schedlab's closed-loop clients — the event client (`--client event`: a loop per CPU,
#      as wrk's threads) and the per-connection client (`--client connections`: a thread per
#      connection) — against wrk (apt package wrk), all against nginx started
#      by schedlab with its generated configuration, C connections, the same file set and
#      SPECweb99's static mix, D seconds each, un-paced (`--pace off`: each connection sends its
#      next request as soon as its response is checked, as wrk does). wrk's turn runs while
#      a schedlab run hosts the nginx (one paced connection of its own, ~3 requests/s, keeps it
#      up; interrupted when wrk is done) and replays a list of 20000 paths drawn by the mix.
#      CPU per request: wrk's process CPU (user + system, from its rusage) and the schedlab
#      client group's CPU (the record's counters: its threads' CPU during the run), each over
#      the requests it completed. Goal: schedlab (the event client) >= 90 % of wrk's
#      requests/s, <= 1.2x its CPU per request; the per-connection client is shown beside them.
#   2. the built-in `event` server against nginx, the same client (schedlab's event client,
#      un-paced), the
#      same connections and mix. Goal: event >= 80 % of nginx's requests/s.
#
# Usage: bench/web.sh [ROUNDS]  (default 3); CONNS (50), DURATION (10, seconds), DIRS (10:
# 49 MB of files) from the environment. Prints each run, the load average before each round,
# and the medians and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
conns=${CONNS:-50}
dur=${DURATION:-10}
dirs=${DIRS:-10}
for p in nginx wrk; do
  if ! command -v "$p" > /dev/null; then
    echo "skipped: $p is not installed; apt-get install -y nginx wrk"
    exit 0
  fi
done
cargo build --release -q
sl=$PWD/target/release/schedlab
tmp=$(mktemp -d)
host=
cleanup() {
  if [ -n "$host" ]; then kill -INT "$host" 2> /dev/null || true; wait "$host" 2> /dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
. bench/lib.sh
# record FILE: "req_per_s client_cpu_s" of a one-run record.
record() {
  python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))["configs"][0]["repetitions"][0]
print(r["metrics"]["req_per_s"], r["counters"]["client"]["cpu_time_s"])' "$1"
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# 20000 paths drawn by SPECweb99's mix over the file set's directories (docs/web.md: classes
# 35/50/14/1 %, files by Zipf in the order 4 3 5 2 6 1 7 8 0, directories by Zipf), as a wrk
# script that replays them in turn on every connection.
python3 - "$dirs" > "$tmp/mix.lua" <<'PY'
import random, sys
dirs = int(sys.argv[1])
rng = random.Random(1)
class_w = [0.35, 0.50, 0.14, 0.01]
file_w = [1 / 9, 1 / 6, 1 / 4, 1 / 2, 1, 1 / 3, 1 / 5, 1 / 7, 1 / 8]
dir_w = [1 / (d + 1) for d in range(dirs)]
paths = []
for _ in range(20000):
    d = rng.choices(range(dirs), dir_w)[0]
    c = rng.choices(range(4), class_w)[0]
    f = rng.choices(range(9), file_w)[0]
    paths.append(f'"/file_set/dir{d:05}/class{c}_{f}"')
print("paths = {" + ",".join(paths) + "}")
print("""i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end""")
PY

common=(run web --connections "$conns" --dirs "$dirs" --duration "${dur}s" --pace off --runs 1 --quiet)
echo "bench/web.sh: $conns connections, ${dur}s per run, $dirs directories, $rounds rounds, $(nproc) CPUs"
printf '%-6s %-34s %12s %14s\n' round run "requests/s" "CPU us/req"
for r in $(seq "$rounds"); do
  echo "round $r: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  # schedlab's clients against nginx: the event client, then the per-connection one.
  for client in event connections; do
    "$sl" "${common[@]}" --server nginx --client "$client" --json "$tmp/sl.json" > /dev/null
    read -r rps cpu < <(record "$tmp/sl.json")
    us=$(python3 -c "print($cpu * 1e6 / ($rps * $dur))")
    echo "$rps" >> "$tmp/sl-$client.rps"; echo "$us" >> "$tmp/sl-$client.us"
    printf '%-6s %-34s %12.0f %14.1f\n' "$r" "schedlab --client $client -> nginx" "$rps" "$us"
  done

  # wrk against nginx, hosted by a schedlab run.
  port=$(free_port)
  "$sl" run web --server nginx --port "$port" --connections 1 --dirs "$dirs" \
    --duration "$((dur + 60))s" --runs 1 --quiet > /dev/null 2>&1 &
  host=$!
  for _ in $(seq 300); do
    if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then break; fi
    sleep 0.1
  done
  read -r rps cpu < <(python3 - "$tmp/mix.lua" "$port" "$conns" "$dur" <<'PY'
import resource, subprocess, sys, re
lua, port, conns, dur = sys.argv[1:]
threads = min(int(conns), 2)
out = subprocess.run(["wrk", "-t", str(threads), "-c", conns, "-d", dur + "s", "-s", lua,
                      f"http://127.0.0.1:{port}/"], capture_output=True, text=True, check=True).stdout
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
reqs = int(re.search(r"(\d+) requests in", out).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", out)
if errors:
    sys.exit("wrk: " + errors.group(0))
print(reqs / float(dur), ru.ru_utime + ru.ru_stime)
PY
  )
  kill -INT "$host"; wait "$host" 2> /dev/null || true; host=
  us=$(python3 -c "print($cpu * 1e6 / ($rps * $dur))")
  echo "$rps" >> "$tmp/wrk.rps"; echo "$us" >> "$tmp/wrk.us"
  printf '%-6s %-34s %12.0f %14.1f\n' "$r" "wrk -> nginx" "$rps" "$us"

  # schedlab's client against the built-in event server.
  "$sl" "${common[@]}" --server event --client event --json "$tmp/ev.json" > /dev/null
  read -r rps cpu < <(record "$tmp/ev.json")
  echo "$rps" >> "$tmp/ev.rps"
  printf '%-6s %-34s %12.0f %14s\n' "$r" "schedlab --client event -> event" "$rps" "-"
done
m() { median < "$tmp/$1"; }
echo
echo "medians of $rounds rounds:"
printf '  schedlab --client event:       %8.0f req/s, %6.1f us CPU/req\n' "$(m sl-event.rps)" "$(m sl-event.us)"
printf '  schedlab --client connections: %8.0f req/s, %6.1f us CPU/req\n' "$(m sl-connections.rps)" "$(m sl-connections.us)"
printf '  wrk:                           %8.0f req/s, %6.1f us CPU/req\n' "$(m wrk.rps)" "$(m wrk.us)"
printf '  event server:                  %8.0f req/s (schedlab --client event)\n' "$(m ev.rps)"
python3 - "$(m sl-event.rps)" "$(m wrk.rps)" "$(m sl-event.us)" "$(m wrk.us)" "$(m ev.rps)" \
  "$(m sl-connections.rps)" "$(m sl-connections.us)" <<'PY'
import sys
sl, wrk, slu, wrku, ev, cn, cnu = map(float, sys.argv[1:])
def goal(ok): return "meets the goal" if ok else "MISSES the goal"
print(f"client req/s, schedlab event / wrk:    {100 * sl / wrk:6.1f} %  (goal >= 90 %: {goal(sl >= 0.9 * wrk)})")
print(f"CPU per request, schedlab event / wrk: {slu / wrku:6.2f} x  (goal <= 1.2 x: {goal(slu <= 1.2 * wrku)})")
print(f"  (per-connection client: {100 * cn / wrk:.1f} % of wrk's req/s, {cnu / wrku:.2f} x its CPU per request)")
print(f"server req/s, event / nginx:            {100 * ev / sl:6.1f} %  (goal >= 80 %: {goal(ev >= 0.8 * sl)})")
PY
