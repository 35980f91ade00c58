// SPDX-License-Identifier: GPL-2.0
/*
 * The floor under the BPF recorder's cost (bench/record-cost.sh FLOOR=on): programs that do
 * nothing, on the two tracepoints the recorder's frequent records come from (sched_switch and
 * sched_waking, as crates/schedlab-real/bpf/record.bpf.c attaches them). What a program run
 * with them attached pays is what entering a BTF tracepoint with a program costs on this
 * machine: any recorder on these tracepoints pays it before its body does anything.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tp_btf/sched_switch")
int floor_switch(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_waking")
int floor_waking(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
