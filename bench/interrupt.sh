#!/usr/bin/env bash
# Interrupt suite (issue 13; not run by CI). Each trial starts a real schedlab run or sweep (messaging
# threads/processes, chat, pingpong, yield, interbench with read/write/memload/ring loads, sweeps
# with --out), waits a random time, then SIGKILLs schedlab, SIGKILLs a random worker (a child
# process, or a worker thread — which takes its process, schedlab, with it), or sends SIGINT or
# SIGTERM. Afterwards, and again after the next run (a short real run in the same TMPDIR, which
# removes what dead runs left), it checks that nothing is left behind:
#   - no process or thread of this schedlab binary,
#   - no tracefs instance instances/schedlab-<pid>-* of the trial's runs,
#   - no mount left by them (private tracefs mounts $TMPDIR/schedlab-tracefs-<pid>-*, debugfs),
#   - nothing in the trial's own $TMPDIR (schedlab-* temporary directories and files),
# and, for SIGINT/SIGTERM, that schedlab exited 130 with the finished repetitions kept in --json
# (run) or --out (sweep). After a SIGKILL, files may stay until the next run; processes may not.
#
#   bench/interrupt.sh [TRIALS]         # default 100; as root to see tracefs instances and mounts
#
# One line per trial, then `N trials: X clean, Y left something (listed)`. SEED=n makes the
# choices repeatable; SCHEDLAB=path uses that binary instead of building this tree's.
set -uo pipefail
cd "$(dirname "$0")/.."
trials=${1:-100}
RANDOM=${SEED:-$$}
. bench/lib.sh
schedlab_bin || exit 1
work=$(mktemp -d "${TMPDIR:-/tmp}/interrupt-suite.XXXXXX")
# A copy no other schedlab runs from: its processes are the ones whose /proc/PID/exe is $bin.
bin=$work/schedlab
cp "$SCHEDLAB" "$bin"
root=0
[ "$(id -u)" = 0 ] && root=1
cleanup() {
  for p in $(our_processes); do kill -9 "$p" 2>/dev/null; done
  awk -v w="$work" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Workloads: NAME and arguments; each runs for several seconds (OUT stands for the record path).
workloads=(
  "msg-threads|run messaging --groups 2 --fds 10 --loops 2000 --tasks threads --runs 12 --json OUT"
  "msg-procs|run messaging --groups 2 --fds 10 --loops 2000 --tasks processes --runs 12 --json OUT"
  "chat|run chat --rooms 2 --users 10 --messages 500 --runs 12 --json OUT"
  "chat-threads|run chat --rooms 2 --users 10 --messages 500 --tasks threads --runs 12 --json OUT"
  "pingpong-procs|run pingpong --loops 50000 --tasks processes --runs 12 --json OUT"
  "pingpong-unix|run pingpong --loops 50000 --transport unix --tasks threads --runs 12 --json OUT"
  "yield|run yield --threads 2,4 --duration 0.3s --runs 10 --json OUT"
  "ib-read-write|run interbench --bench audio --loads read,write --duration 1s --io-size 32MiB --runs 3 --json OUT"
  "ib-memload-ring|run interbench --bench audio --loads memload,ring --duration 1s --mem-size 64MiB --runs 3 --json OUT"
  "sweep-yield|sweep yield --threads 2 --duration 0.3s --vary yield.nice=0,5 --runs 8 --out OUT"
  "sweep-msg|sweep messaging --groups 1 --fds 10 --loops 2000 --vary tasks=threads,processes --runs 8 --out OUT"
)
actions=(kill-schedlab kill-worker sigint sigterm)

our_processes() {
  local d
  for d in /proc/[0-9]*; do
    [ "$(readlink "$d/exe" 2>/dev/null)" = "$bin" ] && echo "${d#/proc/}"
  done
}

# Print one line per thing left behind by the runs with pids $2... in TMPDIR $1.
leftovers() {
  local tmp=$1
  shift
  local p m pid
  for p in $(our_processes); do
    echo "process $p ($(cat "/proc/$p/comm" 2>/dev/null), $(ls "/proc/$p/task" 2>/dev/null | wc -l) threads)"
  done
  while read -r _ m fs _; do
    case "$m" in "$tmp"/*) echo "mount $m ($fs)"; continue ;; esac
    for pid in "$@"; do
      case "$m" in *"/schedlab-tracefs-$pid-"*) echo "mount $m ($fs)" ;; esac
    done
  done </proc/mounts
  if [ "$root" = 1 ]; then
    local tfs=$work/tracefs inst=""
    if [ -d /sys/kernel/tracing/instances ]; then
      inst=/sys/kernel/tracing/instances
    else
      mkdir -p "$tfs" && mount -t tracefs nodev "$tfs" 2>/dev/null && inst=$tfs/instances
    fi
    if [ -n "$inst" ]; then
      for pid in "$@"; do
        for m in "$inst"/schedlab-"$pid"-*; do
          [ -e "$m" ] && echo "tracefs instance ${m##*/}"
        done
      done
      [ "$inst" = "$tfs/instances" ] && umount -l "$tfs"
    fi
  fi
  for m in "$tmp"/* "$tmp"/.[!.]*; do
    [ -e "$m" ] && echo "temporary ${m##*/} ($(du -sh "$m" 2>/dev/null | cut -f1))"
  done
}

# Repetitions in a record (a run's --json or a sweep's --out/sweep.json); 0 if there is none.
record_reps() {
  [ -f "$1" ] || { echo 0; return; }
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(len(c["repetitions"]) for c in r["configs"]), r.get("interrupted"))' "$1" 2>/dev/null || echo "unreadable"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

clean=0
dirty=0
listed=()
for ((t = 1; t <= trials; t++)); do
  w=${workloads[$((RANDOM % ${#workloads[@]}))]}
  name=${w%%|*}
  args=${w#*|}
  action=${actions[$((RANDOM % ${#actions[@]}))]}
  delay_ms=$((300 + RANDOM % 3200))
  tmp=$work/t$t
  mkdir -p "$tmp"
  case "$args" in
    sweep*) out=$work/out$t; record=$out/sweep.json ;;
    *) out=$work/rec$t.json; record=$out ;;
  esac
  args=${args/OUT/$out}
  # schedlab runs as the grandchild of this shell (a subshell records its status), so that the
  # shell has no job of its own killed by a signal to report.
  rm -f "$work/pid" "$work/code"
  # shellcheck disable=SC2086
  (
    TMPDIR=$tmp bash -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$work/pid" "$bin" $args \
      >"$work/stdout$t" 2>"$work/stderr$t"
    echo $? >"$work/code"
  ) 2>/dev/null &
  job=$!
  start=$(now_ms)
  until [ -s "$work/pid" ]; do sleep 0.01; done
  pid=$(cat "$work/pid")
  sleep "$(printf '0.%03d' $((delay_ms % 1000)))"
  sleep $((delay_ms / 1000))
  what=""
  if ! kill -0 "$pid" 2>/dev/null; then
    what="finished before the signal"
  else
    case $action in
      kill-schedlab) kill -9 "$pid" && what="SIGKILL schedlab" ;;
      sigint) kill -INT "$pid" && what="SIGINT" ;;
      sigterm) kill -TERM "$pid" && what="SIGTERM" ;;
      kill-worker)
        mapfile -t kids < <(pgrep -P "$pid")
        if [ "${#kids[@]}" -gt 0 ]; then
          k=${kids[$((RANDOM % ${#kids[@]}))]}
          what="SIGKILL worker process $k ($(cat /proc/"$k"/comm 2>/dev/null))"
          kill -9 "$k"
        else
          mapfile -t tids < <(grep -l '^sl-' /proc/"$pid"/task/*/comm 2>/dev/null | cut -d/ -f5)
          if [ "${#tids[@]}" -gt 0 ]; then
            k=${tids[$((RANDOM % ${#tids[@]}))]}
            what="SIGKILL worker thread $k ($(cat /proc/"$pid"/task/"$k"/comm 2>/dev/null), so its process)"
            kill -9 "$k"
          else
            what="SIGKILL schedlab (no worker yet)"
            kill -9 "$pid"
          fi
        fi
        ;;
    esac
  fi
  # schedlab must end by itself (SIGINT/SIGTERM, a killed worker) within a bound.
  hung=""
  for ((i = 0; i < 600; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    hung="still running 60 s after the signal (killed)"
    kill -9 "$pid"
  fi
  wait "$job"
  code=$(cat "$work/code")
  took=$(($(now_ms) - start))
  sleep 0.3 # workers of a killed schedlab die by PR_SET_PDEATHSIG
  mapfile -t now < <(leftovers "$tmp" "$pid")
  # The next run: removes what dead runs left (stale instances, mounts, temporary directories).
  TMPDIR=$tmp "$bin" run pingpong --loops 2000 --transport unix --runs 1 -q >/dev/null 2>"$work/next$t" &
  next=$!
  wait "$next"
  next_code=$?
  sleep 0.1
  mapfile -t after < <(leftovers "$tmp" "$pid" "$next")
  problems=()
  [ -n "$hung" ] && problems+=("$hung")
  [ "$next_code" = 0 ] || problems+=("the next run failed: $(tail -1 "$work/next$t")")
  for x in "${after[@]}"; do problems+=("after the next run: $x"); done
  info=""
  case $what in
    SIGINT | SIGTERM)
      for x in "${now[@]}"; do problems+=("at exit: $x"); done
      finished=$(grep -cE ' run [0-9]+/[0-9]+' "$work/stderr$t")
      read -r kept interrupted <<<"$(record_reps "$record")"
      if [ "$code" != 130 ] && [ "$code" != 0 ]; then
        problems+=("exit $code, expected 130: $(tail -1 "$work/stderr$t")")
      fi
      if [ "$kept" = unreadable ] || [ "$kept" -lt "$finished" ]; then
        problems+=("$finished repetitions finished, record holds $kept")
      elif [ "$code" = 130 ] && [ "$kept" -gt 0 ] && [ "$interrupted" != True ]; then
        problems+=("the record is not marked interrupted")
      fi
      info="; kept $kept of $finished finished repetitions"
      ;;
    *)
      for x in "${now[@]}"; do
        case $x in
          process*) problems+=("at exit: $x") ;;
          *) info+="; until the next run: $x" ;;
        esac
      done
      ;;
  esac
  line=$(printf 'trial %d/%d %s: %s at %.1f s -> exit %s after %.1f s%s' "$t" "$trials" "$name" \
    "$what" "$(awk "BEGIN { print $delay_ms / 1000 }")" "$code" "$(awk "BEGIN { print $took / 1000 }")" "$info")
  if [ "${#problems[@]}" = 0 ]; then
    clean=$((clean + 1))
    echo "$line: clean"
  else
    dirty=$((dirty + 1))
    joined=$(printf '%s; ' "${problems[@]}")
    line+=": LEFT SOMETHING: ${joined%; }"
    echo "$line"
    listed+=("$line")
  fi
  # Nothing of this trial may disturb the next one.
  for p in $(our_processes); do kill -9 "$p" 2>/dev/null; done
  awk -v w="$tmp" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null
  done
  rm -rf "$tmp" "$out"
done
echo "$trials trials: $clean clean, $dirty left something$([ "$dirty" = 0 ] || echo ' (listed)')"
for l in "${listed[@]}"; do echo "  $l"; done
[ "$dirty" = 0 ]
