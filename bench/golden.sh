#!/usr/bin/env bash
# Refactoring guard: runs a fixed list of simulated commands (every workload, every policy, runs
# and sweeps, knobs, errors) and keeps what each printed (stdout, exit status) and each record it
# wrote, with the fields that change from one invocation to the next (start time) removed.
# Simulated runs are exact for a seed, so two trees that behave the same give identical output:
#
#   bench/golden.sh /tmp/before            # on the old tree
#   bench/golden.sh /tmp/after             # on the new tree
#   diff -r /tmp/before /tmp/after && echo identical
#
# SCHEDLAB=path/to/schedlab uses that binary instead of building this tree's.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/golden.sh OUTDIR}
. bench/lib.sh
schedlab_bin || exit 1
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=0
# case NAME ARGS...: run schedlab ARGS with --json (for run) and keep stdout, status, record.
case_() {
  local name=$1
  shift
  n=$((n + 1))
  local rec="$tmp/$name.json"
  local json=()
  case "$1" in run) json=(--json "$name.json") ;; esac
  (cd "$tmp" && "$SCHEDLAB" "$@" "${json[@]}" >"$out/$name.stdout" 2>"$tmp/$name.stderr")
  echo "exit $?" >"$out/$name.status"
  # Errors are part of the behaviour: keep the first stderr line that says "error".
  grep -m1 'error' "$tmp/$name.stderr" >>"$out/$name.status" || true
  if [ -f "$rec" ]; then
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.pop("started_unix",None); r["command"][0]="schedlab"; json.dump(r,open(sys.argv[2],"w"),indent=1,sort_keys=True)' "$rec" "$out/$name.record.json"
  fi
}

policies=$("$SCHEDLAB" list | sed -n '/^SIMULATED POLICIES/,/^$/p' | awk '/^  [a-z]/ { print $1 }')
sim=(--backend sim --runs 2 --seed 7)
for p in $policies; do
  case_ "msg-$p" run messaging --groups 2 --fds 4 --loops 20 "${sim[@]}" --policy "$p" --cpus 2
  case_ "chat-$p" run chat --rooms 2 --users 5 --messages 10 "${sim[@]}" --policy "$p" --cpus 4
  case_ "chat-turns-$p" run chat --rooms 2 --users 4 --messages 5 --mode turns "${sim[@]}" --policy "$p" --cpus 1 --profile piii-700 --group server:nice=5
  case_ "ping-$p" run pingpong --loops 500 "${sim[@]}" --policy "$p" --cpus 2
  case_ "yield-$p" run yield --threads 1,8 --duration 20ms "${sim[@]}" --policy "$p" --cpus 2
  # Computes in the bodies (server and client work): a compute's clock reads and reschedule points.
  case_ "chat-work-$p" run chat --rooms 2 --users 4 --messages 8 --server-work 40us --client-work 25us "${sim[@]}" --policy "$p" --cpus 2
  case_ "ib-$p" run interbench --bench audio,video --loads none,burn --duration 300ms "${sim[@]}" --policy "$p" --cpus 2 --group bench:nice=5
done
case_ o1-threshold run chat --rooms 2 --users 5 --messages 10 "${sim[@]}" --policy o1:threshold=40 --cpus 2 --group client:nice=-19
case_ eevdf-knobs run messaging --groups 1 --fds 3 --loops 10 "${sim[@]}" --policy eevdf:run_to_parity=0 --group sender:slice=1ms,cpus=0 --group receiver:nice=3 --cpus 2
case_ cost run pingpong --loops 300 "${sim[@]}" --cost switch=2us,hz=1000 --cpus 2
case_ until run pingpong --loops 300 --backend sim --until 95:5% --max-runs 6 --cpus 2
case_ warmup run yield --threads 4 --duration 10ms --backend sim --runs 2 --warmup 1 --cpus 2 --level 90 --quiet
case_ sweep-yield sweep yield --backend sim --vary policy=linux24,linux24-mq --threads 1,16 --duration 10ms --runs 2
case_ sweep-knob sweep chat --rooms 2 --users 4 --messages 5 --backend sim --cpus 2 --runs 2 --vary server.nice=0,19 --vary client.nice=0,-5
case_ sweep-param sweep messaging --groups 1 --fds 2 --backend sim --cpus 2 --runs 2 --vary loops=5,10 --vary policy=o1,cfs
case_ sweep-machine sweep pingpong --loops 200 --backend sim --runs 2 --vary cpus=1,2 --vary profile=modern,piii-700
case_ sweep-ib sweep interbench --bench audio --loads none,burn --duration 200ms --backend sim --cpus 2 --runs 2 --vary policy=o1,staircase --group bench:nice=19
case_ sweep-bsd sweep yield --threads 4 --duration 10ms --backend sim --cpus 2 --runs 2 --vary policy=bsd4:preemption=0,ipiwakeup=0,ule
# Bad input: the message is behaviour too.
case_ bad-policy run yield --backend sim --policy nosuch
case_ bad-param run yield --backend sim --policy o1:nosuch=1
case_ bad-cpus run yield --backend sim --cpus 0
case_ bad-group run chat --backend sim --group nosuch:nice=1
case_ bad-nice run chat --backend sim --group server:nice=40
case_ bad-knobcpu run chat --backend sim --cpus 2 --group server:cpus=5
case_ bad-vary sweep yield --backend sim --vary nosuch=1,2
case_ bad-varyknob sweep chat --backend sim --vary server.bogus=1,2
case_ bad-simflag run yield --policy o1
case_ bad-runs run yield --backend sim --runs 0
case_ bad-until run yield --backend sim --until 95
case_ bad-class run chat --backend sim --policy cfs --group server:policy=fifo:5
echo "$n cases in $out"
