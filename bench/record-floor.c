// SPDX-License-Identifier: GPL-2.0
/*
 * record-floor OBJ CMD ARGS...: attach every program of the BPF object OBJ (bench/record-floor.
 * bpf.c: empty programs on the recorder's tracepoints), run CMD, wait for it and exit with its
 * status; the programs are detached when this process exits. Built and run by
 * bench/record-cost.sh FLOOR=on (gcc, libbpf-dev).
 */
#include <bpf/libbpf.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	pid_t child;
	int status;

	if (argc < 3) {
		fprintf(stderr, "usage: record-floor OBJ CMD ARGS...\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "record-floor: cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "record-floor: cannot attach %s\n", bpf_program__name(prog));
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
	if (waitpid(child, &status, 0) < 0) {
		perror("record-floor: waitpid");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
