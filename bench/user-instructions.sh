#!/usr/bin/env bash
# User-space instructions a round trip (pinned ping-pong) and a message (pipe messaging with
# processes), schedlab against its peers, counted by cachegrind: exact and the same on a busy
# machine as on a quiet one, where this VM has no hardware counters for `perf stat -e
# instructions` to read. Each figure is the difference between two runs of different lengths
# (N and 2N round trips or loops) divided by the extra work, so start-up, fork and the report
# cancel out; each process is counted on its own (cachegrind writes a file per process, and a
# forked child's counts start from its parent's at the fork, which the difference cancels too).
# The kernel's side cannot be counted this way: see docs/performance.md.
#
# rustix finds the vDSO through prctl(PR_GET_AUXV), which under valgrind returns valgrind's own
# auxiliary vector (its vDSO is not mapped in the program): a small seccomp filter, compiled
# here, makes that call fail, and rustix falls back to /proc/self/auxv, which valgrind answers
# for the program (no vDSO: the clock is read by a system call, in schedlab and in the peers).
#
# Usage: bench/user-instructions.sh [N]   (default 20000 round trips and 100 loops of 4 groups;
#        SCHEDLAB=path). Needs valgrind, cc, and rt-tests' hackbench for the messaging peer.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
n=${1:-20000}
whole_in_range user-instructions.sh N "$n" 100 1000000
for tool in valgrind cc; do
  command -v $tool > /dev/null || { echo "skipped: no $tool (install: apt-get install valgrind gcc)"; exit 0; }
done
schedlab_bin || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/pipe" bench/peers/pipe.c
cat > "$tmp/noauxv.c" << 'EOF'
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
/* Run argv[1..] with prctl(PR_GET_AUXV, ...) failing with EINVAL. */
int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x41555856 /* PR_GET_AUXV */, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("noauxv");
		return 1;
	}
	execvp(argv[1], argv + 1);
	perror("noauxv: exec");
	return 127;
}
EOF
cc -O2 -o "$tmp/noauxv" "$tmp/noauxv.c"

# count TAG K ARGS...: run ARGS (with @K@ replaced by K) under cachegrind, one file a process.
count() {
  local tag=$1 k=$2
  shift 2
  mkdir -p "$tmp/$tag.$k"
  "$tmp/noauxv" valgrind --tool=cachegrind --cache-sim=no --trace-children=yes \
    --cachegrind-out-file="$tmp/$tag.$k/%p" "${@//@K@/$k}" > /dev/null 2>&1
}
# per TAG K1 K2 UNITS FIRST LAST: the instructions added from K1 to K2 by the processes FIRST..LAST
# (in the order they were created: by pid, which a wrap of the pid counter would mix), per unit
# of the extra work.
per() {
  local tag=$1 a=$2 b=$3 units=$4 first=$5 last=$6
  python3 - "$tmp/$tag.$a" "$tmp/$tag.$b" "$units" "$first" "$last" << 'PY'
import os, sys
def totals(d):
    out = []
    for pid in sorted(os.listdir(d), key=int):
        for line in open(os.path.join(d, pid)):
            if line.startswith("summary:"):
                out.append(int(line.split()[1]))
    return out
a, b = totals(sys.argv[1]), totals(sys.argv[2])
first, last = int(sys.argv[4]), int(sys.argv[5])
print(f"{(sum(b[first:last + 1]) - sum(a[first:last + 1])) / float(sys.argv[3]):.0f}")
PY
}

echo "bench/user-instructions.sh: user-space instructions (cachegrind), by difference of two lengths"
printf '%-52s %10s %10s\n' "" schedlab peer
pp=(run pingpong --loops @K@ --tasks processes --group ping:cpus=0 --group pong:cpus=0 --runs 1
  --counters proc --quiet)
count pipe "$n" "$tmp/pipe" @K@ 0 0
count pipe $((2 * n)) "$tmp/pipe" @K@ 0 0
count pp "$n" "$SCHEDLAB" "${pp[@]}"
count pp $((2 * n)) "$SCHEDLAB" "${pp[@]}"
# pipe.c: the parent pings, its child pongs. schedlab: process 0 supervises (its share is the
# report's parsing, after the run), 1 pings (its count includes formatting its samples for the
# report, after its body: see docs/performance.md), 2 pongs.
printf '%-52s %10s %10s\n' "ping-pong on CPU 0, a round trip: ping" "$(per pp "$n" $((2 * n)) "$n" 1 1)" \
  "$(per pipe "$n" $((2 * n)) "$n" 0 0)"
printf '%-52s %10s %10s\n' "ping-pong on CPU 0, a round trip: pong" "$(per pp "$n" $((2 * n)) "$n" 2 2)" \
  "$(per pipe "$n" $((2 * n)) "$n" 1 1)"
if command -v hackbench > /dev/null; then
  l=$((n / 200 > 0 ? n / 200 : 1))
  msgs=$((4 * 20 * 20 * l))
  count hb "$l" hackbench -g 4 -l @K@ -s 100 -p -P
  count hb $((2 * l)) hackbench -g 4 -l @K@ -s 100 -p -P
  ms=(run messaging --groups 4 --loops @K@ --transport pipe --tasks processes --runs 1
    --counters proc --quiet)
  count msg "$l" "$SCHEDLAB" "${ms[@]}"
  count msg $((2 * l)) "$SCHEDLAB" "${ms[@]}"
  # Both create the parent first, then its 160 workers; the sum over the workers.
  printf '%-52s %10s %10s\n' "messaging pipe processes 4 groups, a message" \
    "$(per msg "$l" $((2 * l)) "$msgs" 1 160)" "$(per hb "$l" $((2 * l)) "$msgs" 1 160)"
else
  echo "messaging: skipped: no hackbench (install: apt-get install rt-tests)"
fi
