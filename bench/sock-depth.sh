#!/usr/bin/env bash
# The CPU cost of an AF_UNIX stream message when many are queued (issue #16: validate's
# messaging-over-socketpairs rows, whose real runs spend more CPU per message than the
# simulator charges). calibrate's `sock_msg` times one 1-byte write + read on one socketpair,
# nothing queued; hackbench (schedlab's messaging) has 80 socketpairs and a receiver reads ~63
# messages per wakeup, so each socket holds dozens of queued skbs. This times write + read of a
# 100-byte message on one CPU (taskset), first one message on one socket, then DEPTH messages
# written to each of SOCKETS sockets before they are all read back, and prints ns per message
# (best of 5 rounds) and the ratio; and, to tell one socket's depth from the total queued, the
# same number (up to 256) queued on a single socket. A C program, built here with cc, since the point is the
# kernel's cost with nothing of schedlab's around it.
#
# Usage: bench/sock-depth.sh [DEPTH [SOCKETS]]   (default 63 80; each 1..256)
set -euo pipefail
depth=${1:-63}
sockets=${2:-80}
. "$(dirname "$0")/lib.sh"
whole_in_range sock-depth.sh DEPTH "$depth" 1 256
whole_in_range sock-depth.sh SOCKETS "$sockets" 1 256
command -v cc >/dev/null || { echo "skipped: needs a C compiler; apt-get install -y gcc"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/sk.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
int main(int argc, char **argv) {
  int depth = atoi(argv[1]), nsock = atoi(argv[2]);
  long reps = 200000 / ((long)depth * nsock);
  if (reps < 1) reps = 1;
  int (*sv)[2] = malloc(sizeof(int[2]) * nsock);
  for (int i = 0; i < nsock; i++)
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i])) { perror("socketpair"); return 1; }
  char b[100] = {0};
  double best = 1e18;
  for (int round = 0; round < 5; round++) {
    long t0 = ns(), n = 0;
    for (long r = 0; r < reps; r++) {
      for (int s = 0; s < nsock; s++)
        for (int i = 0; i < depth; i++)
          if (write(sv[s][0], b, 100) != 100) { perror("write"); return 1; }
      for (int s = 0; s < nsock; s++)
        for (int i = 0; i < depth; i++)
          if (read(sv[s][1], b, 100) != 100) { perror("read"); return 1; }
      n += (long)depth * nsock;
    }
    double per = (double)(ns() - t0) / n;
    if (per < best) best = per;
  }
  printf("%.0f\n", best);
  return 0;
}
EOF
cc -O2 -o "$tmp/sk" "$tmp/sk.c"
one=$(taskset -c 0 "$tmp/sk" 1 1)
# As many on one socket as it takes (256 at most: an AF_UNIX stream socket holds 278 writes of
# 100 bytes before the writer blocks), to tell one socket's depth from the machine's total.
single=$((depth * sockets > 256 ? 256 : depth * sockets))
deep1=$(taskset -c 0 "$tmp/sk" "$single" 1)
deep=$(taskset -c 0 "$tmp/sk" "$depth" "$sockets")
printf 'AF_UNIX stream, 100-byte write + read on CPU 0, ns per message (best of 5 rounds)\n'
printf '%-44s %8s\n' "1 message queued, 1 socket" "$one"
printf '%-44s %8s\n' "$single messages queued on 1 socket" "$deep1"
printf '%-44s %8s\n' "$depth messages queued on each of $sockets sockets" "$deep"
awk -v a="$one" -v b="$deep1" 'BEGIN {printf "%-44s %8.2f\n", "ratio, one deep socket", b / a}'
awk -v a="$one" -v b="$deep" 'BEGIN {printf "%-44s %8.2f\n", "ratio, many sockets", b / a}'
printf 'load average (1 min): %s\n' "$(cut -d' ' -f1 /proc/loadavg)"
