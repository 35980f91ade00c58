#!/usr/bin/env bash
# The running kernel's EEVDF state in the chat row (issue #16: validate's "chat burst" row),
# read from its own sched_entity and cfs_rq fields with bpftrace (BTF), so it can be set beside
# what the simulated eevdf policy does with the same workload:
#
# - At every wakeup of a client task by a server task (a relayed message reaching a receiver
#   that was asleep): whether the server, the running task, is eligible (vruntime <= V), whether
#   its slice is protected (RUN_TO_PARITY: `vprot` > vruntime since 6.17, `vlag` == deadline
#   before), and whether the wakeup left NEED_RESCHED(_LAZY) set on it — that is, whether the
#   woken receiver became pick_eevdf's choice and preempts the server at its system call's
#   return (check_preempt_wakeup_fair in kernel/sched/fair.c).
# - At every return from read()/recvfrom() of a server or client task (the task is running, so
#   not in the tree): its lag V - v and its deadline - V, in microseconds (p10/p50/p90).
#
# V is computed as the kernel's avg_vruntime does (the weighted sum over the tree plus curr).
# Usage: bench/chat-eevdf.sh [CHAT ARGS...]
#   default: validate's chat on one CPU, --rooms 4 --messages 50 --mode burst
#            --group server:cpus=0 --group client:cpus=0
# Needs root, bpftrace and /sys/kernel/btf/vmlinux; prints "skipped: ..." without them.
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--rooms 4 --messages 50 --mode burst --group server:cpus=0 --group client:cpus=0)
if ! command -v bpftrace >/dev/null; then
  echo "skipped: bpftrace is not installed (apt-get install -y bpftrace)"
  exit 0
fi
if [ ! -r /sys/kernel/btf/vmlinux ] || [ "$(id -u)" != 0 ]; then
  echo "skipped: needs root and the kernel's BTF (/sys/kernel/btf/vmlinux)"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  echo "skipped: the NEED_RESCHED bits read here are x86_64's (TIF_NEED_RESCHED 3, _LAZY 4)"
  exit 0
fi
. bench/lib.sh
schedlab_bin
cfs=$(bpftrace -lv 'struct cfs_rq' 2>/dev/null || true)
se=$(bpftrace -lv 'struct sched_entity' 2>/dev/null || true)
# The sums' names: 6.18's zero_vruntime/sum_w_vruntime/sum_weight, before them min_vruntime/
# avg_vruntime/avg_load.
if grep -q zero_vruntime <<<"$cfs"; then
  zero=zero_vruntime sum=sum_w_vruntime load=sum_weight
elif grep -q avg_load <<<"$cfs"; then
  zero=min_vruntime sum=avg_vruntime load=avg_load
else
  echo "skipped: this kernel's struct cfs_rq has neither zero_vruntime nor avg_load"
  exit 0
fi
if grep -q vprot <<<"$se"; then
  prot='(int64)($t->se.vprot - $t->se.vruntime) > 0'
else
  prot='$t->se.vlag == (int64)$t->se.deadline'
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/chat.bt" <<EOF
tracepoint:sched:sched_wakeup
/ strncmp(comm, "sl-server", 9) == 0 && strncmp(args->comm, "sl-client", 9) == 0 /
{
  \$t = curtask;
  \$rq = \$t->se.cfs_rq;
  \$key = (int64)(\$t->se.vruntime - \$rq->$zero);
  \$elig = (int64)\$rq->$sum >= \$key * (int64)\$rq->$load ? 1 : 0;
  \$prot = $prot ? 1 : 0;
  \$resched = (\$t->thread_info.flags & 24) != 0 ? 1 : 0;
  @wake[\$elig, \$prot, \$resched] = count();
}
tracepoint:syscalls:sys_exit_read, tracepoint:syscalls:sys_exit_recvfrom
/ strncmp(comm, "sl-server", 9) == 0 || strncmp(comm, "sl-client", 9) == 0 /
{
  \$t = curtask;
  \$rq = \$t->se.cfs_rq;
  \$w = (int64)(\$t->se.load.weight >> 10);
  \$key = (int64)(\$t->se.vruntime - \$rq->$zero);
  \$s = (int64)\$rq->$sum + \$key * \$w;
  \$l = (int64)\$rq->$load + \$w;
  \$lag = (\$s - \$key * \$l) / \$l;
  \$dl = ((int64)(\$t->se.deadline - \$rq->$zero) * \$l - \$s) / \$l;
  \$k = strncmp(comm, "sl-client", 9) == 0 ? 1 : 0;
  @lag[\$k] = lhist((\$lag + 5000000) / 10000, 0, 1000, 1);
  @dl[\$k] = lhist((\$dl + 5000000) / 10000, 0, 1000, 1);
}
EOF
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if ! bpftrace "$tmp/chat.bt" -c "$SCHEDLAB run chat ${args[*]} --runs 1" >"$tmp/out" 2>"$tmp/err"; then
  echo "skipped: bpftrace failed: $(grep -v RLIMIT_MEMLOCK "$tmp/err" | grep -m1 -B1 ERROR || tail -1 "$tmp/err")"
  exit 0
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$tmp/out" "$tmp/err" | grep -m1 "Average throughput" | sed 's/.*Average/real chat: Average/' || true
python3 - "$tmp/out" <<'EOF'
import re, sys
wake, hist, cur = {}, {}, None
for line in open(sys.argv[1]):
    m = re.match(r"@wake\[(\d), (\d), (\d)\]: (\d+)", line)
    if m:
        wake[tuple(int(x) for x in m.groups()[:3])] = int(m.group(4))
        continue
    m = re.match(r"@(lag|dl)\[(\d)\]:", line)
    if m:
        cur = (m.group(1), int(m.group(2)))
        hist[cur] = []
        continue
    m = re.match(r"\[(\d+), \d+\)\s+(\d+)", line)
    if m and cur:
        # buckets of 10 us, offset by 5 ms: the bucket's middle in us
        hist[cur].append(((int(m.group(1)) - 500) * 10 + 5, int(m.group(2))))
total = sum(wake.values())
print(f"server -> client wakeups: {total}")
print("  server eligible  protected  wakee preempts (resched set)     count   share")
for (e, p, r), n in sorted(wake.items(), key=lambda kv: -kv[1]):
    print(f"  {'yes' if e else 'no':>15}  {'yes' if p else 'no':>9}  {'yes' if r else 'no':>28}  {n:8}  {100 * n / max(total, 1):5.1f} %")
def pct(h, q):
    n = sum(c for _, c in h)
    acc = 0
    for v, c in h:
        acc += c
        if acc >= q * n:
            return v
    return float("nan")
print("at read() returns (us, 10 us buckets)      n      p10      p50      p90")
for kind, name in ((0, "server"), (1, "client")):
    for what, label in (("lag", "lag V - v"), ("dl", "deadline - V")):
        h = hist.get((what, kind), [])
        n = sum(c for _, c in h)
        if n:
            print(f"  {name} {label:<15} {n:>14} {pct(h, .1):8} {pct(h, .5):8} {pct(h, .9):8}")
EOF
