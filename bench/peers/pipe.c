/*
 * The peer of `schedlab run pingpong --tasks processes`: what `perf bench sched pipe` does
 * (tools/perf/bench/sched-pipe.c: two processes, two pipes, a 4-byte token written and read
 * back LOOPS times), except that each process is pinned to a CPU of its own choosing, which
 * perf bench cannot do (under taskset both of its processes share one mask). Prints
 * microseconds per round trip.
 *
 * The clock runs from the first token to the last one's return: both processes are pinned and
 * waiting before it starts (the child says so with one byte), and the fork and the final
 * waitpid are outside it, as schedlab's start gate leaves its forks outside. perf bench's
 * total includes them (about 0.1 ms, 0.03 % of 100,000 round trips of 3 us).
 *
 * Usage: pipe LOOPS CPU_PING CPU_PONG   (a CPU of - leaves that side unpinned)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Parse a CPU argument: -1 for "-" (unpinned), else 0..CPU_SETSIZE-1; exit 2 if neither. */
static int parse_cpu(const char *what, const char *s)
{
	char *end;
	long cpu;

	if (strcmp(s, "-") == 0)
		return -1;
	errno = 0;
	cpu = strtol(s, &end, 10);
	if (errno || *end || end == s || cpu < 0 || cpu >= CPU_SETSIZE) {
		fprintf(stderr, "pipe: %s '%s' is not accepted; use 0..%d or -\n", what, s,
			CPU_SETSIZE - 1);
		exit(2);
	}
	return (int)cpu;
}

/* Pin the calling process to `cpu` (nothing for -1); exit 1 if the kernel refuses. */
static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "pipe: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
		exit(1);
	}
}

/* Exactly one int through `fd`, or exit 1. */
static void put(int fd, int v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v)) {
		perror("pipe: write");
		exit(1);
	}
}

static int get(int fd)
{
	int v;
	ssize_t n = read(fd, &v, sizeof(v));

	if (n != sizeof(v)) {
		fprintf(stderr, "pipe: read: %s\n", n < 0 ? strerror(errno) : "the other side ended");
		exit(1);
	}
	return v;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int to_pong[2], to_ping[2], status;
	char *end;
	long loops;
	pid_t pid;

	if (argc != 4) {
		fprintf(stderr, "usage: pipe LOOPS CPU_PING CPU_PONG   (a CPU of - is unpinned)\n");
		return 2;
	}
	errno = 0;
	loops = strtol(argv[1], &end, 10);
	if (errno || *end || end == argv[1] || loops < 1 || loops > 1000000000) {
		fprintf(stderr, "pipe: LOOPS '%s' is not accepted; use 1..1000000000\n", argv[1]);
		return 2;
	}
	int ping_cpu = parse_cpu("CPU_PING", argv[2]);
	int pong_cpu = parse_cpu("CPU_PONG", argv[3]);
	if (pipe(to_pong) || pipe(to_ping)) {
		perror("pipe: pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("pipe: fork");
		return 1;
	}
	if (pid == 0) {
		/* pong: echo every token. Unused ends closed, so that either side's death is
		 * the other's end of file rather than a wait for ever. */
		close(to_pong[1]);
		close(to_ping[0]);
		pin(pong_cpu);
		put(to_ping[1], 0); /* ready */
		for (long i = 0; i < loops; i++)
			put(to_ping[1], get(to_pong[0]));
		_exit(0);
	}
	close(to_pong[0]);
	close(to_ping[1]);
	pin(ping_cpu);
	get(to_ping[0]); /* pong is pinned and waiting */
	double start = now();
	for (long i = 0; i < loops; i++) {
		put(to_pong[1], (int)i);
		get(to_ping[0]);
	}
	double elapsed = now() - start;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "pipe: the pong process failed\n");
		return 1;
	}
	printf("%.3f\n", elapsed * 1e6 / loops);
	return 0;
}
