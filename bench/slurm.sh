#!/usr/bin/env bash
# A sharded sweep on a real Slurm cluster of one node, this machine (docs/scale-out.md):
#
#   1. In a private temporary directory: a munge key, munged on its own socket, a slurm.conf
#      (one node, this host, all its CPUs; ports that are free), slurmctld and slurmd. Nothing
#      is written outside that directory and no system service is used or touched
#      (/etc/slurm, /etc/munge, a system munged are left alone).
#   2. Waits until `sinfo` shows the node idle, then submits examples/scale-out/shard.sbatch as
#      is (its `#SBATCH --array=1-8`; ARRAY=0-7 in the environment overrides it on the command
#      line) and examples/scale-out/merge.sbatch with `--dependency=afterok:` the array's id,
#      both in a work directory, with `schedlab` on PATH; waits for both and checks that every
#      task and the merge completed with exit code 0.
#   3. Runs the unsharded sweep: the command the merged sweep.json records (the shard script's
#      command without --shard, --out as the merge's), in another directory, and compares: the
#      same file names, and every record equal as JSON but for `started_unix` (when each
#      process started) — the notion of crates/schedlab/tests/shard.rs. Also checks that each
#      configuration's repetitions differ (so a merge out of order, or with other seeds, could
#      not compare equal).
#   4. Always (trap on EXIT, INT, TERM): cancels the jobs, stops slurmd, slurmctld and munged,
#      kills any process still carrying this cluster's SLURM_CONF (a job step), and removes the
#      directory.
#
# Usage: bench/slurm.sh   (as root, with `apt-get install slurm-wlm munge`; otherwise it prints
# `skipped:` and exits 0). SCHEDLAB=path uses that binary instead of building this tree's;
# TIMEOUT (default 600) bounds the wait for the jobs, in seconds; KEEP=DIR copies the work
# directory (shards, merged sweep, job logs) and the unsharded sweep's into DIR/work and
# DIR/whole before cleaning up. Exit status 0 when the records are equal, 1 when a job failed
# or they differ, 2 on bad input.
set -euo pipefail
# Paths given relative to where the script is started, before it moves to the repository.
if [ -n "${KEEP:-}" ]; then KEEP=$(realpath -m -- "$KEEP"); fi
if [ -n "${SCHEDLAB:-}" ]; then SCHEDLAB=$(realpath -- "$SCHEDLAB"); fi
cd "$(dirname "$0")/.."
. bench/lib.sh
examples=$PWD/examples/scale-out

timeout=${TIMEOUT:-600}
whole_in_range bench/slurm.sh TIMEOUT "$timeout" 1 86400
if [ -n "${KEEP:-}" ] && [ -e "$KEEP" ] && [ -n "$(ls -A "$KEEP")" ]; then
  echo "bench/slurm.sh: KEEP=$KEEP exists and is not empty; name an empty or new directory" >&2
  exit 2
fi
for p in sbatch squeue sinfo scontrol scancel slurmctld slurmd munged mungekey python3; do
  if ! command -v "$p" > /dev/null; then
    echo "skipped: $p is not installed or not on PATH (apt-get install slurm-wlm munge)"
    exit 0
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: the one-node cluster runs its daemons as root (apt-get install slurm-wlm munge)"
  exit 0
fi
schedlab_bin || exit 1

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
t_start=$(now)

tmp= conf= munged_pid= ctld_pid= slurmd_pid= jobs= whole_pid=

# sl CMD...: a Slurm command of this cluster. SLURM_CONF is set for it (and so for the daemons
# and every job, which inherit it) but not in this shell, so that the processes that carry it
# are exactly this cluster's.
sl() { SLURM_CONF=$conf "$@"; }

# The processes whose environment names this cluster's slurm.conf: its daemons and whatever
# its jobs started (this shell does not carry it).
ours() {
  [ -n "$conf" ] || return 0
  grep -lsF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2> /dev/null |
    sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' || true
}

# stop PID...: TERM, then KILL after 5 s, each of the PIDs still alive.
stop() {
  local pid left
  for pid in "$@"; do kill -TERM "$pid" 2> /dev/null || true; done
  for _ in $(seq 50); do
    left=
    for pid in "$@"; do if kill -0 "$pid" 2> /dev/null; then left=1; fi; done
    if [ -z "$left" ]; then return 0; fi
    sleep 0.1
  done
  for pid in "$@"; do kill -KILL "$pid" 2> /dev/null || true; done
}

# Print the end of each log, for a failure.
show_logs() {
  local f
  for f in "$tmp"/log/* "$tmp"/work/*.log; do
    [ -f "$f" ] || continue
    echo "--- ${f#"$tmp"/} (last lines)" >&2
    tail -n 15 "$f" >&2
  done
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  # Every step runs, whatever fails before it.
  set +e
  [ -n "$tmp" ] || exit "$status"
  if [ -n "$whole_pid" ]; then stop "$whole_pid"; wait "$whole_pid" 2> /dev/null; fi
  if [ "$status" -ne 0 ]; then show_logs; fi
  if [ -n "$jobs" ] && [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2> /dev/null; then
    sl scancel ${jobs//,/ } 2> /dev/null || true
    for _ in $(seq 50); do
      [ -z "$(sl squeue -h -o %i 2> /dev/null)" ] && break
      sleep 0.2
    done
  fi
  # The daemons' own PIDs (they are this shell's children), then whatever of a job is left.
  local daemons
  daemons=$(echo $slurmd_pid $ctld_pid $munged_pid)
  if [ -n "$daemons" ]; then stop $daemons; fi
  for pid in $daemons; do wait "$pid" 2> /dev/null || true; done
  local left
  left=$(ours)
  if [ -n "$left" ]; then
    echo "bench/slurm.sh: stopping what the jobs left: $(echo $left)" >&2
    stop $left
  fi
  if [ -n "${KEEP:-}" ] && [ -d "$tmp/work" ]; then
    mkdir -p "$KEEP"
    cp -r "$tmp/work" "$KEEP/work"
    [ -d "$tmp/whole" ] && cp -r "$tmp/whole" "$KEEP/whole"
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# munged checks that every directory on its socket's path can be traversed by all.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/schedlab-slurm.XXXXXX")
chmod 711 "$tmp"
conf=$tmp/slurm.conf

# wait_until WHAT SECONDS CMD...: poll CMD every 0.2 s until it succeeds; fail after SECONDS,
# or at once when a daemon has died.
wait_until() {
  local what=$1 secs=$2 t0 pid
  shift 2
  t0=$(now)
  until "$@"; do
    for pid in $munged_pid $ctld_pid $slurmd_pid; do
      if ! kill -0 "$pid" 2> /dev/null; then
        echo "bench/slurm.sh: a daemon (pid $pid) died while waiting for $what" >&2
        exit 1
      fi
    done
    if awk -v a="$t0" -v b="$(now)" -v s="$secs" 'BEGIN { exit !(b - a > s) }'; then
      echo "bench/slurm.sh: $what did not happen within $secs s" >&2
      exit 1
    fi
    sleep 0.2
  done
}

# --- 1. the cluster -----------------------------------------------------------------------
# Each daemon runs in a session of its own (setsid, which keeps the PID: a background job is
# not a group leader): what a daemon signals as its process group must not reach this shell,
# and a Ctrl-C at the terminal reaches this shell only, whose trap stops them in order.
mkdir -m 755 "$tmp/run"
mkdir "$tmp/log" "$tmp/state" "$tmp/spool" "$tmp/bin" "$tmp/work" "$tmp/whole"
mungekey --create --keyfile="$tmp/munge.key" > "$tmp/log/mungekey.log" 2>&1
setsid munged --foreground --socket="$tmp/run/munge.sock" --key-file="$tmp/munge.key" \
  --pid-file="$tmp/run/munged.pid" --log-file="$tmp/log/munged.log" \
  --seed-file="$tmp/munged.seed" > "$tmp/log/munged.out" 2>&1 &
munged_pid=$!
wait_until "munged's socket" 20 test -S "$tmp/run/munge.sock"

node=$(hostname -s)
cpus=$(nproc)
read -r ctld_port slurmd_port < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
: > "$tmp/plugstack.conf"
cat > "$conf" << EOF
# A one-node cluster for bench/slurm.sh; everything it writes is under $tmp.
ClusterName=schedlab
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/run/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Start the next tasks as soon as CPUs are free (by default batch jobs may wait 3 s: a
# wave every 3 s).
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=256 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
SLURM_CONF=$conf setsid slurmctld -D -f "$conf" > "$tmp/log/slurmctld.out" 2>&1 &
ctld_pid=$!
SLURM_CONF=$conf setsid slurmd -D -f "$conf" > "$tmp/log/slurmd.out" 2>&1 &
slurmd_pid=$!
node_idle() { [ "$(sl sinfo -h -N -n "$node" -o %t 2> /dev/null)" = idle ]; }
wait_until "node $node idle in sinfo" 60 node_idle
t_up=$(since "$t_start")
echo "bench/slurm.sh: cluster up in ${t_up} s: node $node, $cpus CPUs, slurmctld :$ctld_port, slurmd :$slurmd_port, in $tmp"

# --- 2. the jobs --------------------------------------------------------------------------
ln -s "$(realpath "$SCHEDLAB")" "$tmp/bin/schedlab"
export PATH=$tmp/bin:$PATH
t_jobs=$(now)
array_opt=()
if [ -n "${ARRAY:-}" ]; then array_opt=(--array="$ARRAY"); fi
shard=$(sl sbatch --parsable --chdir="$tmp/work" "${array_opt[@]}" "$examples/shard.sbatch")
shard=${shard%%;*}
jobs=$shard
merge=$(sl sbatch --parsable --chdir="$tmp/work" --dependency="afterok:$shard" \
  --kill-on-invalid-dep=yes "$examples/merge.sbatch")
merge=${merge%%;*}
jobs=$shard,$merge
echo "bench/slurm.sh: submitted shard.sbatch as job $shard${ARRAY:+ (--array=$ARRAY)}, merge.sbatch as job $merge (afterok:$shard)"
jobs_done() { [ -z "$(sl squeue -h -j "$jobs" -o %i 2> /dev/null)" ]; }
wait_until "jobs $jobs ending" "$timeout" jobs_done
t_sharded=$(since "$t_jobs")
# Every task of the array, then the merge: completed, exit code 0, and the merge started no
# earlier than the last task ended (scontrol keeps ended jobs for MinJobAge, 300 s).
states=$( (sl scontrol -o show job "$shard"; sl scontrol -o show job "$merge") |
  awk '{
    delete f
    for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v); f[k] = v }
    id = f["ArrayTaskId"] != "" ? f["ArrayJobId"] "_" f["ArrayTaskId"] : f["JobId"]
    print id, f["JobName"], f["JobState"], f["ExitCode"], f["StartTime"], f["EndTime"]
  }' | sort -k2,2r -k1,1V)
echo "$states" | awk '{ printf "  job %s (%s): %s, exit code %s, ran %s .. %s\n", $1, $2, $3, $4, $5, $6 }'
tasks=$(awk '$2 == "schedlab-shard"' <<< "$states" | wc -l)
bad=$(awk '$3 != "COMPLETED" || $4 != "0:0"' <<< "$states")
if [ -n "$bad" ] || [ "$tasks" -lt 1 ]; then
  echo "bench/slurm.sh: a job did not complete with exit code 0:" >&2
  awk '{ printf "  job %s (%s): %s, exit code %s\n", $1, $2, $3, $4 }' <<< "$bad" >&2
  exit 1
fi
early=$(awk '$2 == "schedlab-shard" && $6 > end { end = $6 } $2 == "schedlab-merge" { start = $5 }
  END { if (start < end) print "merge started " start ", before the last task ended (" end ")" }' <<< "$states")
if [ -n "$early" ]; then
  echo "bench/slurm.sh: afterok was not honoured: $early" >&2
  exit 1
fi
echo "bench/slurm.sh: $tasks array tasks and the merge completed (exit code 0) in ${t_sharded} s; $(ls -d "$tmp"/work/sw-shard-* | wc -l) shard directories; the merge said:"
tail -n 2 "$tmp/work/schedlab-merge.log" | sed 's/^/  /'

# --- 3. the unsharded sweep, and the comparison ------------------------------------------
mapfile -t command < <(python3 -c 'import json, sys
print("\n".join(json.load(open(sys.argv[1]))["command"]))' "$tmp/work/sw/sweep.json")
echo "bench/slurm.sh: unsharded: ${command[*]}"
t_whole=$(now)
# In the background, so that a signal is handled at once (`wait` returns for it).
(cd "$tmp/whole" && exec "${command[@]}" > unsharded.log) &
whole_pid=$!
wait "$whole_pid"
whole_pid=
t_whole=$(since "$t_whole")
echo "bench/slurm.sh: unsharded sweep took ${t_whole} s"
python3 - "$tmp/work/sw" "$tmp/whole/sw" << 'PY'
import json, os, sys

merged, whole = sys.argv[1:3]
names = sorted(os.listdir(merged))
if names != sorted(os.listdir(whole)):
    sys.exit(f"files differ: merged {names}, unsharded {sorted(os.listdir(whole))}")


def comparable(path):
    with open(path) as f:
        v = json.load(f)
    if "started_unix" not in v:
        sys.exit(f"{path}: no started_unix")
    del v["started_unix"]
    return v


def first_difference(a, b, where=""):
    if type(a) is not type(b):
        return where or "/"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}/{k}"
            d = first_difference(a[k], b[k], f"{where}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}/{i}")
            if d:
                return d
        return None
    return None if a == b else where


for name in names:
    a, b = comparable(os.path.join(merged, name)), comparable(os.path.join(whole, name))
    if a != b:
        sys.exit(f"{name}: the merged record differs from the unsharded one at {first_difference(a, b)}")
sweep = comparable(os.path.join(whole, "sweep.json"))
if "shard" in sweep:
    sys.exit("the merged sweep.json still names a shard")
configs = sweep["configs"]
reps = sum(len(c["repetitions"]) for c in configs)
for c in configs:
    m = [json.dumps(r["metrics"], sort_keys=True) for r in c["repetitions"]]
    if len(set(m)) != len(m):
        sys.exit(f"{c['label']}: two repetitions have the same metrics; the comparison could not see their order")
print(f"bench/slurm.sh: equal: {len(names)} files (sweep.json and {len(names) - 1} configurations, "
      f"{len(configs)} configurations x {reps // max(len(configs), 1)} repetitions = {reps}), "
      "every field but started_unix; each configuration's repetitions differ")
PY
echo "bench/slurm.sh: total ${t_sharded} s for the sharded sweep on Slurm (cluster up in ${t_up} s), ${t_whole} s unsharded, $(since "$t_start") s in all; load $(load1)"
