// SPDX-License-Identifier: GPL-2.0
/*
 * record-floor [--stats FILE] OBJ CMD ARGS...: load the BPF object OBJ, attach its programs on
 * the scheduler's BTF tracepoints (section tp_btf/sched_*; its other programs are not loaded),
 * run CMD, wait for it and exit with its status; the programs are detached when this process
 * exits. Built and run by bench/record-cost.sh FLOOR=on (OBJ bench/record-floor.bpf.c: empty
 * programs, what entering the tracepoints costs) and bench/record-variants.py (OBJ a variant of
 * crates/schedlab-real/bpf/record.bpf.c with one part of its work taken out).
 *
 * A recorder object (one with the SEED map) is set up as schedlab's recorder sets it up:
 * this process is its seed while it forks CMD, so the command's tree is marked at the fork and
 * this process is untraced right after. Its ring (EVENTS) is made RING_MIB large and is not
 * drained (nothing wakes a reader: wake_bytes is set above the ring's size), and the records it
 * had no room for (its LOST counters) are printed at the end: "lost N" on standard error, and
 * an exit status of 1 when N > 0, so that a variant that lost records is not taken for a cheap
 * one.
 *
 * With --stats FILE, the kernel's run-time statistics are on while CMD runs (BPF_ENABLE_STATS
 * held by a file descriptor of this process, no sysctl) and FILE gets one line per attached
 * program: its name, its runs and its run time in ns.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The recorder's ring while CMD runs, never drained: room for 2 M records of 32 bytes. */
#define RING_MIB 64
#define MAX_PROGS 16

/* struct seed of record.bpf.c. */
struct seed {
	int32_t tid;
	int32_t tgid;
	uint32_t sleep_starts;
	uint32_t pad;
};

/* Set the global `name` (a __u64 in .rodata) of obj to value, before loading. */
static int set_rodata_u64(struct bpf_object *obj, const char *name, uint64_t value)
{
	struct bpf_map *rodata = bpf_object__find_map_by_name(obj, ".rodata");
	struct btf *btf = bpf_object__btf(obj);
	const void *initial;
	size_t size;
	int id, set = -1;

	if (!rodata || !btf)
		return -1;
	initial = bpf_map__initial_value(rodata, &size);
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (!initial || id < 0)
		return -1;
	char *data = malloc(size);
	if (!data)
		return -1;
	memcpy(data, initial, size);
	const struct btf_type *sec = btf__type_by_id(btf, id);
	const struct btf_var_secinfo *var = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, var++) {
		const struct btf_type *t = btf__type_by_id(btf, var->type);
		if (strcmp(btf__name_by_offset(btf, t->name_off), name) == 0 &&
		    var->size == sizeof(value) && var->offset + sizeof(value) <= size) {
			memcpy(data + var->offset, &value, sizeof(value));
			set = bpf_map__set_initial_value(rodata, data, size);
			break;
		}
	}
	free(data);
	return set;
}

static int set_seed(int fd, int32_t tid)
{
	struct seed s = { .tid = tid };
	uint32_t zero = 0;

	return bpf_map_update_elem(fd, &zero, &s, BPF_ANY);
}

/* The sum over CPUs of LOST[0] and LOST[1], or -1 if it cannot be read. */
static long long lost_records(struct bpf_object *obj)
{
	struct bpf_map *lost = bpf_object__find_map_by_name(obj, "LOST");
	int cpus = libbpf_num_possible_cpus();
	long long sum = 0;

	if (!lost || cpus <= 0)
		return -1;
	uint64_t *per_cpu = calloc(cpus, sizeof(uint64_t));
	if (!per_cpu)
		return -1;
	for (uint32_t which = 0; which < 2; which++) {
		if (bpf_map_lookup_elem(bpf_map__fd(lost), &which, per_cpu)) {
			free(per_cpu);
			return -1;
		}
		for (int c = 0; c < cpus; c++)
			sum += per_cpu[c];
	}
	free(per_cpu);
	return sum;
}

int main(int argc, char **argv)
{
	struct bpf_program *prog, *attached[MAX_PROGS];
	const char *stats_file = NULL;
	int nattached = 0, stats_fd = -1, seed_fd = -1;
	struct bpf_object *obj;
	struct bpf_map *map;
	pid_t child;
	int status;

	if (argc > 2 && strcmp(argv[1], "--stats") == 0) {
		stats_file = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: record-floor [--stats FILE] OBJ CMD ARGS...\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "record-floor: cannot open %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (strncmp(bpf_program__section_name(prog), "tp_btf/sched_", 13) != 0)
			bpf_program__set_autoload(prog, false);
	}
	map = bpf_object__find_map_by_name(obj, "EVENTS");
	if (map && (bpf_map__set_max_entries(map, RING_MIB << 20) ||
		    set_rodata_u64(obj, "wake_bytes", (uint64_t)RING_MIB << 20))) {
		fprintf(stderr, "record-floor: cannot size %s's ring\n", argv[1]);
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "record-floor: cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__autoload(prog))
			continue;
		if (nattached == MAX_PROGS || !bpf_program__attach(prog)) {
			fprintf(stderr, "record-floor: cannot attach %s\n", bpf_program__name(prog));
			return 1;
		}
		attached[nattached++] = prog;
	}
	map = bpf_object__find_map_by_name(obj, "SEED");
	if (map) {
		seed_fd = bpf_map__fd(map);
		if (set_seed(seed_fd, getpid())) {
			perror("record-floor: SEED");
			return 1;
		}
	}
	if (stats_file) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0) {
			fprintf(stderr, "record-floor: BPF_ENABLE_STATS refused (needs root)\n");
			return 1;
		}
	}
	child = fork();
	if (child < 0) {
		perror("record-floor: fork");
		return 1;
	}
	if (child == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	if (seed_fd >= 0 && set_seed(seed_fd, 0)) {
		perror("record-floor: SEED");
		kill(child, SIGKILL);
	}
	if (waitpid(child, &status, 0) < 0) {
		perror("record-floor: waitpid");
		return 1;
	}
	if (stats_file) {
		FILE *f = fopen(stats_file, "w");
		if (!f) {
			perror(stats_file);
			return 1;
		}
		for (int i = 0; i < nattached; i++) {
			struct bpf_prog_info info = {};
			__u32 len = sizeof(info);

			if (bpf_obj_get_info_by_fd(bpf_program__fd(attached[i]), &info, &len)) {
				perror("record-floor: program info");
				return 1;
			}
			fprintf(f, "%s %llu %llu\n", bpf_program__name(attached[i]),
				(unsigned long long)info.run_cnt,
				(unsigned long long)info.run_time_ns);
		}
		fclose(f);
		close(stats_fd);
	}
	if (seed_fd >= 0) {
		long long lost = lost_records(obj);
		fprintf(stderr, "lost %lld\n", lost);
		if (lost != 0)
			return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
