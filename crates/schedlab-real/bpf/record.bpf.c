// SPDX-License-Identifier: GPL-2.0
/*
 * schedlab's BPF recorder: the scheduler events of one traced tree of tasks, copied as compact
 * fixed-size records into a ring buffer (BPF_MAP_TYPE_RINGBUF) that a user-space thread drains
 * while the program runs (crates/schedlab-real/src/trace/record_bpf.rs). It replaces the tracefs
 * recorder's instance where BPF loads: no text formatting, no per-CPU buffers to merge, and no
 * raw_syscalls tracepoint, whose mere registration puts every task of the machine on the
 * system-call slow path (SYSCALL_WORK_SYSCALL_TRACEPOINT) however tightly it is filtered.
 *
 * BTF tracepoints of include/trace/events/sched.h:
 *
 * - sched_switch(preempt, prev, next, prev_state): recorded when prev or next is traced. How
 *   prev left is computed as the tracepoint's own prev_state column is (__trace_sched_switch_state
 *   in sched.h): preempted or TASK_RUNNING is runnable, EXIT_DEAD/EXIT_ZOMBIE (in the state or in
 *   exit_state) is dead, anything else a sleep. The system call prev is blocked in is read from
 *   its saved user registers (bpf_task_pt_regs: orig_ax on x86-64, which the entry code sets to
 *   the call's number on a system call and to -1 on an interrupt or exception, so a task that
 *   sleeps in a page fault is seen in no call) instead of tracing sys_enter/sys_exit.
 * - sched_waking(p): in the waker's context; recorded when the wakee or the waker is traced.
 * - sched_process_fork(parent, child): a traced parent's child joins the traced set.
 * - sched_process_exit(p, group_dead): the task's last name is recorded with it; it leaves the
 *   traced set at its last switch, as dead.
 * - sched_migrate_task(p, dest_cpu): a traced task moved.
 *
 * The traced set is a hash of TIDs (TRACED), seeded by user space (the recording thread before
 * it forks the command, or every thread of --pid). When it is full, the tasks left out are
 * counted in LOST[1]; a record the ring had no room for is counted in LOST[0]. Both counters are
 * per CPU (no shared cache line) and user space reports their sum as lost events.
 *
 * Submitting without a wakeup (BPF_RB_NO_WAKEUP) keeps the drain thread from being woken at
 * every record, which would add a wakeup and a context switch of its own to the machine per
 * event: the thread polls on a timer instead, and is woken early only when the ring is more than
 * wake_bytes full.
 *
 * Rebuild with crates/schedlab-real/bpf/build.sh (clang, libbpf-dev); the object is committed so
 * that building schedlab needs neither.
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* Only the fields read here; CO-RE relocates them to the running kernel's layout by name. */
struct task_struct {
	int exit_state;
	int pid;
	char comm[16];
} __attribute__((preserve_access_index));
/* The kernel's struct pt_regs (x86-64); the ___ suffix keeps it apart from the user-space
 * headers' struct of the same name, and CO-RE matches it to the kernel's by the name before it. */
struct pt_regs___kernel {
	long orig_ax;
} __attribute__((preserve_access_index));

#define KIND_SWITCH 1
#define KIND_WAKING 2
#define KIND_FORK 3
#define KIND_EXIT 4
#define KIND_MIGRATE 5

#define LEFT_RUNNABLE 0
#define LEFT_SLEEPING 1
#define LEFT_DEAD 2

/* One event; the layout is mirrored by Record in record_bpf.rs (32 bytes). */
struct rec {
	__u64 ts;   /* bpf_ktime_get_ns: CLOCK_MONOTONIC, as the tracefs recorder's "mono" clock */
	__u32 cpu;
	__u8 kind;
	__u8 left;  /* switch: how prev left */
	__u16 pad;
	__s32 a;    /* switch: prev; waking: waker; fork: parent; exit, migrate: the task */
	__s32 b;    /* switch: next; waking: wakee; fork: child; migrate: dest_cpu */
	__s64 nr;   /* switch: prev's system call (-1: none, or not read) */
};

/* A fork or an exit, with a name: the child's at fork, the task's last at exit (48 bytes). */
struct rec_named {
	struct rec r;
	char comm[16];
};

/* Sizes set by user space before loading (max_entries). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} EVENTS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} TRACED SEC(".maps");

/* [0]: records the ring had no room for; [1]: tasks the traced set had no room for. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} LOST SEC(".maps");

/* Wake the drain thread when more than this many bytes wait (user space: a quarter of the ring). */
const volatile __u64 wake_bytes = 1 << 20;

static __always_inline void count_lost(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&LOST, &which);

	if (n)
		(*n)++;
}

static __always_inline int traced(__u32 tid)
{
	return tid && bpf_map_lookup_elem(&TRACED, &tid);
}

static __always_inline void submit(void *r)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&EVENTS, BPF_RB_AVAIL_DATA) > wake_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(r, flags);
}

static __always_inline struct rec *reserve(__u32 size, __u8 kind)
{
	struct rec *r = bpf_ringbuf_reserve(&EVENTS, size, 0);

	if (!r) {
		count_lost(0);
		return 0;
	}
	r->ts = bpf_ktime_get_ns();
	r->cpu = bpf_get_smp_processor_id();
	r->kind = kind;
	r->left = 0;
	r->pad = 0;
	r->nr = -1;
	return r;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 p = prev->pid, n = next->pid;
	int prev_traced = traced(p);

	if (!prev_traced && !traced(n))
		return 0;
	/* TASK_REPORT: the states the tracepoint reports; EXIT_DEAD | EXIT_ZOMBIE. */
	__u32 state = (prev_state | prev->exit_state) & 0x7f;
	__u8 left = LEFT_SLEEPING;
	if (preempt || !state)
		left = LEFT_RUNNABLE;
	else if (state & 0x30)
		left = LEFT_DEAD;
	struct rec *r = reserve(sizeof(struct rec), KIND_SWITCH);
	if (r) {
		r->left = left;
		r->a = p;
		r->b = n;
		if (prev_traced && left != LEFT_DEAD) {
			struct pt_regs___kernel *regs = (void *)bpf_task_pt_regs(prev);
			if (regs)
				r->nr = regs->orig_ax;
		}
		submit(r);
	}
	if (prev_traced && left == LEFT_DEAD)
		bpf_map_delete_elem(&TRACED, &p);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	__u32 wakee = p->pid, waker = (__u32)bpf_get_current_pid_tgid();

	if (!traced(wakee) && !traced(waker))
		return 0;
	struct rec *r = reserve(sizeof(struct rec), KIND_WAKING);
	if (!r)
		return 0;
	r->a = waker;
	r->b = wakee;
	submit(r);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 pp = parent->pid, c = child->pid;
	__u8 one = 1;

	if (!traced(pp))
		return 0;
	if (bpf_map_update_elem(&TRACED, &c, &one, BPF_ANY))
		count_lost(1);
	struct rec_named *r = (void *)reserve(sizeof(struct rec_named), KIND_FORK);
	if (!r)
		return 0;
	r->r.a = pp;
	r->r.b = c;
	bpf_probe_read_kernel(r->comm, sizeof(r->comm), child->comm);
	submit(r);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid = p->pid;

	if (!traced(pid))
		return 0;
	struct rec_named *r = (void *)reserve(sizeof(struct rec_named), KIND_EXIT);
	if (!r)
		return 0;
	r->r.a = pid;
	r->r.b = 0;
	bpf_probe_read_kernel(r->comm, sizeof(r->comm), p->comm);
	submit(r);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(on_migrate, struct task_struct *p, int dest_cpu)
{
	__u32 pid = p->pid;

	if (!traced(pid))
		return 0;
	struct rec *r = reserve(sizeof(struct rec), KIND_MIGRATE);
	if (!r)
		return 0;
	r->a = pid;
	r->b = dest_cpu;
	submit(r);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
