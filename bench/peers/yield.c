/*
 * The peer of `schedlab run yield`: N threads call sched_yield() in a loop for D seconds;
 * prints the total yields per second. Built by bench/overhead.sh with the system's C compiler.
 * Usage: yield THREADS SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int go, stop;
static atomic_ulong total;

static void *body(void *arg)
{
	unsigned long n = 0;
	(void)arg;
	while (!atomic_load_explicit(&go, memory_order_acquire))
		sched_yield();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		sched_yield();
		n++;
	}
	atomic_fetch_add(&total, n);
	return NULL;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: yield THREADS SECONDS\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	double seconds = atof(argv[2]);
	if (threads < 1 || threads > 4096 || seconds <= 0) {
		fprintf(stderr, "yield: THREADS 1..4096 and SECONDS > 0\n");
		return 2;
	}
	pthread_t *t = calloc(threads, sizeof(*t));
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, body, NULL);
	double start = now();
	atomic_store(&go, 1);
	struct timespec d = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	double elapsed = now() - start;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("%.0f\n", atomic_load(&total) / elapsed);
	return 0;
}
