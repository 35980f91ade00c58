#!/usr/bin/env bash
# Does a deep AF_UNIX queue cost by the count of messages queued or by their bytes of skb?
# (issue #16: the held-out messaging run, `--datasize 1000`, whose queue the `sock_queue` key
# charged by count.) An skb's truesize steps with the write's size (crates/schedlab-sim/src/
# skb.rs): 192 bytes make 768 bytes of skb, 193 make 1,280; 704 make 1,280, 705 make 2,304. So
# each pair copies the same bytes, and only the memory queued differs. This times a write + read
# on CPU 0 with one message on one socket, then with DEPTH messages written to each of 80
# socketpairs before all are read back. If the queue's cost follows the count, each pair costs
# alike at the same depth; if it follows the bytes of skb, the second of each pair costs more
# there (and alike with one queued). ns per message by the thread's CPU time (best of 15 rounds
# of 100,000 messages), so that other tasks' time slices drop out, though not their cache use;
# the pairs are timed alternately ROUNDS times and the medians printed.
# A C program, built here with cc: the kernel's cost with nothing of schedlab's around it.
#
# Usage: bench/sock-bytes.sh [DEPTH [ROUNDS]]   (default 16 3; DEPTH 1..90, ROUNDS 1..20)
set -euo pipefail
depth=${1:-16}
rounds=${2:-3}
. "$(dirname "$0")/lib.sh"
whole_in_range sock-bytes.sh DEPTH "$depth" 1 90
whole_in_range sock-bytes.sh ROUNDS "$rounds" 1 20
command -v cc >/dev/null || { echo "skipped: needs a C compiler; apt-get install -y gcc"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/sb.c" <<'EOF'
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static long ns(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
int main(int argc, char **argv) {
  int size = atoi(argv[1]), depth = atoi(argv[2]), nsock = atoi(argv[3]);
  cpu_set_t c; CPU_ZERO(&c); CPU_SET(0, &c);
  if (sched_setaffinity(0, sizeof c, &c)) { perror("sched_setaffinity"); return 1; }
  long reps = 100000 / ((long)depth * nsock);
  if (reps < 1) reps = 1;
  int (*sv)[2] = malloc(sizeof(int[2]) * nsock);
  char *b = calloc(1, size);
  if (!sv || !b) { perror("malloc"); return 1; }
  for (int i = 0; i < nsock; i++)
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i])) { perror("socketpair"); return 1; }
  double best = 1e18;
  for (int round = 0; round < 15; round++) {
    long t0 = ns(), n = 0;
    for (long r = 0; r < reps; r++) {
      for (int s = 0; s < nsock; s++)
        for (int i = 0; i < depth; i++)
          if (write(sv[s][0], b, size) != size) { perror("write"); return 1; }
      for (int s = 0; s < nsock; s++)
        for (int i = 0; i < depth; i++)
          if (read(sv[s][1], b, size) != size) { perror("read"); return 1; }
      n += (long)depth * nsock;
    }
    double per = (double)(ns() - t0) / n;
    if (per < best) best = per;
  }
  printf("%.0f\n", best);
  return 0;
}
EOF
cc -O2 -o "$tmp/sb" "$tmp/sb.c"
before=$(cut -d' ' -f1 /proc/loadavg)
n=$((depth * 80))
sizes="192 193 704 705"
declare -A one deep
for _ in $(seq "$rounds"); do
  for size in $sizes; do
    one[$size]+="$("$tmp/sb" "$size" 1 1) "
    deep[$size]+="$("$tmp/sb" "$size" "$depth" 80) "
  done
done
printf 'AF_UNIX stream, write + read on CPU 0, ns per message (thread CPU time, medians of %d)\n' "$rounds"
printf '%-10s %14s %12s %22s\n' "write" "bytes of skb" "1 queued" "$n queued ($depth × 80)"
for size in $sizes; do
  case $size in 192) ts=768 ;; 193 | 704) ts=1280 ;; 705) ts=2304 ;; esac
  o=$(tr ' ' '\n' <<<"${one[$size]}" | grep . | median)
  d=$(tr ' ' '\n' <<<"${deep[$size]}" | grep . | median)
  printf '%-10s %14s %12s %22s\n' "$size B" "$ts" "$o" "$d"
done
printf 'load average (1 min): %s before, %s after\n' "$before" "$(cut -d' ' -f1 /proc/loadavg)"
