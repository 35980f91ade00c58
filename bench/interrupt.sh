#!/usr/bin/env bash
# Interrupt and kill suite (issues 13 and 38; not run by CI). Each trial starts a real schedlab run
# or sweep (messaging threads/processes, chat, pingpong, yield, interbench with read/write/memload/
# ring loads, a build with its process-group keeper, sweeps with --out) writing --json, --csv
# and --markdown, waits a random time, then does one ACTION:
#   kill-schedlab  SIGKILL schedlab
#   kill-worker    SIGKILL a random worker (a child process, or a worker thread — which takes
#                  its process, schedlab, with it)
#   kill-keeper    SIGKILL the build's process-group keeper (schedlab-keeper): the run must fail,
#                  naming it
#   sigint/sigterm SIGINT or SIGTERM: schedlab must exit 130 with the finished repetitions kept
#                  in --json (run) or --out (sweep)
# Then, at once and again after the next command of another kind (in turn a simulated run,
# `check` of a workload file, `list`, in the same TMPDIR; each removes what dead runs left), it
# checks that nothing is left behind:
#   - no process or thread of this schedlab binary,
#   - no tracefs instance instances/schedlab-<pid>-* of the trial's runs,
#   - no mount left by them (private tracefs mounts schedlab-tracefs-<pid>-*, debugfs),
#   - nothing in the trial's own $TMPDIR (schedlab-* temporary directories and files),
#   - no half-written output under its final name: every --json (and a sweep's --out/*.json)
#     that exists loads as JSON, every --csv has its header and whole rows, every --markdown
#     ends its last line,
#   - no temporary output file (*.tmp, .*.tmp) in the trial's work directory (the outputs' and
#     schedlab's working directory).
# After a SIGKILL, temporary directories and tracefs leftovers may stay until the next command
# (they are listed, not counted); processes, broken outputs and *.tmp files may not.
#
#   bench/interrupt.sh [TRIALS] [ACTIONS]   # TRIALS default 100; ACTIONS a comma-separated
#                                           # subset of the above, default all; as root to see
#                                           # tracefs instances and mounts
#   bench/interrupt.sh 100 kill-schedlab    # the issue's 100 SIGKILLs
#
# One line per trial, then `N trials (per action): X clean, Y left something (listed)` and a
# tally of what was left. SEED=n makes the choices repeatable; SCHEDLAB=path uses that binary
# instead of building this tree's.
set -uo pipefail
cd "$(dirname "$0")/.."
trials=${1:-100}
all_actions="kill-schedlab kill-worker kill-keeper sigint sigterm"
IFS=, read -r -a actions <<<"${2:-${all_actions// /,}}"
RANDOM=${SEED:-$$}
. bench/lib.sh
whole_in_range bench/interrupt.sh TRIALS "$trials" 1 100000
for a in "${actions[@]}"; do
  case " $all_actions " in
    *" $a "*) ;;
    *) echo "bench/interrupt.sh: unknown action '$a'; accepted: ${all_actions// /, }" >&2; exit 2 ;;
  esac
done
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

# Workloads: NAME and arguments; each runs for several seconds. OUT stands for the record (a
# run's --json, a sweep's --out directory); every one also writes --csv and --markdown.
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
  "build|run build --units 60 --dirs 6 --cpu 20ms --runs 6 --json OUT"
  "sweep-yield|sweep yield --threads 2 --duration 0.3s --vary yield.nice=0,5 --runs 8 --out OUT"
  "sweep-msg|sweep messaging --groups 1 --fds 10 --loops 2000 --vary tasks=threads,processes --runs 8 --out OUT"
)
# The workload whose forked jobs have a process-group keeper.
keeper_workload=build
# The next commands, in turn (FILE: a workload file of the repository).
nexts=(
  "sim|run pingpong --backend sim --loops 2000 --runs 1 -q"
  "check|check FILE"
  "list|list"
)
workload_file=$PWD/examples/pingpong.toml

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

# Print one line per broken or temporary output file under the trial's work directory $1: a
# .json that does not load, a .csv without its header or with a row cut short (or a last line
# without its newline), a .md whose last line is cut, and any *.tmp or .*.tmp file.
broken_outputs() {
  python3 - "$1" <<'PY'
import csv, io, json, os, sys
root = sys.argv[1]
for d, _, files in os.walk(root):
    for f in sorted(files):
        p = os.path.join(d, f)
        rel = os.path.relpath(p, root)
        if f.endswith(".tmp"):
            print(f"temporary output {rel} ({os.path.getsize(p)} bytes)")
            continue
        try:
            data = open(p, "rb").read()
        except OSError as e:
            print(f"unreadable output {rel}: {e}")
            continue
        if f.endswith(".json"):
            try:
                json.loads(data)
            except ValueError as e:
                print(f"half-written JSON {rel} ({len(data)} bytes): {e}")
        elif f.endswith(".csv"):
            text = data.decode("utf-8", "replace")
            rows = list(csv.reader(io.StringIO(text)))
            if not rows or rows[0][0] != "configuration" or "metric" not in rows[0]:
                print(f"CSV {rel} ({len(data)} bytes) without its header")
            elif not text.endswith("\n") or any(len(r) != len(rows[0]) for r in rows[1:]):
                print(f"half-written CSV {rel} ({len(data)} bytes, {len(rows)} rows)")
        elif f.endswith(".md"):
            if not data.endswith(b"\n"):
                print(f"half-written Markdown {rel} ({len(data)} bytes)")
PY
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
# Trials per signal actually sent, and problems by kind.
declare -A per_action=() left_kinds=()
for ((t = 1; t <= trials; t++)); do
  action=${actions[$((RANDOM % ${#actions[@]}))]}
  if [ "$action" = kill-keeper ]; then
    for w in "${workloads[@]}"; do [ "${w%%|*}" = "$keeper_workload" ] && break; done
  else
    w=${workloads[$((RANDOM % ${#workloads[@]}))]}
  fi
  name=${w%%|*}
  args=${w#*|}
  delay_ms=$((300 + RANDOM % 3200))
  tmp=$work/t$t
  odir=$work/o$t
  mkdir -p "$tmp" "$odir"
  case "$args" in
    sweep*) out=$odir/sweep; record=$out/sweep.json ;;
    *) out=$odir/rec.json; record=$out ;;
  esac
  args="${args/OUT/$out} --csv $odir/out.csv --markdown $odir/out.md"
  # schedlab runs as the grandchild of this shell (a subshell records its status), so that the
  # shell has no job of its own killed by a signal to report; its working directory is the
  # trial's work directory.
  rm -f "$work/pid" "$work/code"
  # shellcheck disable=SC2086
  (
    cd "$odir" &&
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
      kill-keeper)
        k=""
        for c in $(pgrep -P "$pid"); do
          [ "$(cat /proc/"$c"/comm 2>/dev/null)" = schedlab-keeper ] && k=$c
        done
        if [ -n "$k" ]; then
          kill -9 "$k" && what="SIGKILL keeper $k"
        else
          what="no keeper (between repetitions)"
        fi
        ;;
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
  case $what in
    "SIGKILL schedlab"*) sent="SIGKILL schedlab" ;;
    "SIGKILL worker"*) sent="SIGKILL worker" ;;
    "SIGKILL keeper"*) sent="SIGKILL keeper" ;;
    SIGINT | SIGTERM) sent=$what ;;
    *) sent="no signal" ;;
  esac
  per_action[$sent]=$((${per_action[$sent]:-0} + 1))
  # schedlab must end by itself (SIGINT/SIGTERM, a killed worker or keeper) within a bound.
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
  mapfile -t outputs < <(broken_outputs "$odir")
  # The next command, of another kind in turn: removes what dead runs left (stale instances,
  # mounts, temporary directories).
  n=${nexts[$((t % ${#nexts[@]}))]}
  next_name=${n%%|*}
  next_args=${n#*|}
  next_args=${next_args/FILE/$workload_file}
  # shellcheck disable=SC2086
  (cd "$odir" && TMPDIR=$tmp exec "$bin" $next_args >/dev/null 2>"$work/next$t") &
  next=$!
  wait "$next"
  next_code=$?
  sleep 0.1
  mapfile -t after < <(leftovers "$tmp" "$pid" "$next")
  problems=()
  [ -n "$hung" ] && problems+=("$hung")
  [ "$next_code" = 0 ] || problems+=("the next command ($next_name) failed: $(tail -1 "$work/next$t")")
  for x in "${after[@]}"; do problems+=("after the next command ($next_name): $x"); done
  for x in "${outputs[@]}"; do problems+=("$x"); done
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
    "SIGKILL keeper"*)
      for x in "${now[@]}"; do problems+=("at exit: $x"); done
      if [ "$code" = 0 ] || ! grep -q "process-group keeper" "$work/stderr$t"; then
        problems+=("the keeper's death went unnoticed: exit $code, $(tail -1 "$work/stderr$t")")
      else
        info="; $(grep -o 'process-group keeper.*' "$work/stderr$t" | head -1)"
      fi
      ;;
    *)
      for x in "${now[@]}"; do
        case $x in
          process*) problems+=("at exit: $x") ;;
          *) info+="; until the next command: $x" ;;
        esac
      done
      ;;
  esac
  line=$(printf 'trial %d/%d %s: %s at %.1f s -> exit %s after %.1f s, then %s%s' "$t" "$trials" "$name" \
    "$what" "$(awk "BEGIN { print $delay_ms / 1000 }")" "$code" "$(awk "BEGIN { print $took / 1000 }")" \
    "$next_name" "$info")
  if [ "${#problems[@]}" = 0 ]; then
    clean=$((clean + 1))
    echo "$line: clean"
  else
    dirty=$((dirty + 1))
    joined=$(printf '%s; ' "${problems[@]}")
    line+=": LEFT SOMETHING: ${joined%; }"
    echo "$line"
    listed+=("$line")
    for x in "${problems[@]}"; do
      # The kind: the problem without its numbers and names of this trial.
      kind=$(sed -E 's/schedlab-([0-9]+)-[A-Za-z0-9]{6}( |$)/schedlab-N-XXXXXX\2/g; s/[0-9]+/N/g; s#'"$work"'/[^ ]*#PATH#g' <<<"$x" | cut -c1-90)
      left_kinds[$kind]=$((${left_kinds[$kind]:-0} + 1))
    done
  fi
  # Nothing of this trial may disturb the next one.
  for p in $(our_processes); do kill -9 "$p" 2>/dev/null; done
  awk -v w="$tmp" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null
  done
  rm -rf "$tmp" "$odir"
done
counts=""
for a in "SIGKILL schedlab" "SIGKILL worker" "SIGKILL keeper" SIGINT SIGTERM "no signal"; do
  [ -n "${per_action[$a]:-}" ] && counts+="${counts:+, }${per_action[$a]} $a"
done
echo "$trials trials ($counts): $clean clean, $dirty left something$([ "$dirty" = 0 ] || echo ' (listed)')"
for l in "${listed[@]}"; do echo "  $l"; done
if [ "$dirty" != 0 ]; then
  echo "what was left, by kind (trials may have several):"
  for k in "${!left_kinds[@]}"; do echo "${left_kinds[$k]} x $k"; done | sort -rn | sed 's/^/  /'
fi
[ "$dirty" = 0 ]
