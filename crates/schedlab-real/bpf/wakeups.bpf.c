// SPDX-License-Identifier: GPL-2.0
/*
 * schedlab's in-kernel wakeup counters: per task, the wakeups it received and, for each,
 * whether it asked the task running on its CPU to give way. Nothing is copied out per event;
 * user space reads the COUNTS and SLOT_TID maps once after the run
 * (crates/schedlab-real/src/bpf.rs).
 *
 * One BTF tracepoint of include/trace/events/sched.h, on the wakeup path only (no probe on the
 * context switch, the hottest scheduler event): sched_wakeup, which fires in ttwu_do_wakeup()
 * once per wakeup of a sleeping task, after ttwu_do_activate() has enqueued the task and run
 * wakeup_preempt() on the target run queue, with that run queue's lock held. So the current
 * task of that run queue (rq->curr, found through p->se.cfs_rq->rq, which needs
 * CONFIG_FAIR_GROUP_SCHED) carries the verdict in its thread flags: TIF_NEED_RESCHED set means
 * it will be preempted at its next preemption point, TIF_NEED_RESCHED_LAZY (preempt=lazy
 * kernels) at the next tick. An idle current task is not a preemption: waking an idle CPU
 * preempts nobody. A task an earlier wakeup already told (same task, no switch on that run
 * queue since) is not credited again.
 *
 * Whether the waker runs on the wakee's CPU (a preemption at the waker's next preemption point
 * rather than by an interrupt) is read at the same place: the program runs on the waker's CPU
 * unless the wakeup was queued to the target CPU (ttwu_queue_wakelist), in which case it runs on
 * the target CPU from sched_ttwu_pending() with rq->ttwu_pending still set (cleared after the
 * queued wakeups are done since Linux 6.2; before, such wakeups count as made on the waker's
 * CPU). Noting the waker at sched_waking instead would cost a second tracepoint: about 1 % of a
 * pinned ping-pong (200 alternating rounds).
 *
 * The program reads only the wakee, its run queue (locked at sched_wakeup) and that run
 * queue's current task: reading another CPU's run queue without its lock cost about 250 ns a
 * wakeup in cache misses on a 2-CPU VM, more than the rest together.
 *
 * The flag bits differ between kernel versions and architectures and are not in BTF; user space
 * sets them (need_resched_mask, lazy_mask) before loading. Tasks are taken in by name, as the
 * tracefs path filters them: a task whose comm starts with `prefix` gets a slot at its first
 * wakeup while counting is on, and keeps its counts in its task-local storage (SLOTS), so that
 * every later wakeup makes one lookup and writes the line it has just read — a hash lookup by
 * TID cost half of sched_wakeup's time, and a per-CPU array slot beside the storage was a
 * second lookup and cache line. The counts must outlive the task: sched_process_exit copies an
 * exiting task's counts to its slot in COUNTS, and user space, when it collects, runs the task
 * iterator on_task, which copies those of the tasks still alive; then it reads COUNTS and
 * SLOT_TID (the slot's task) once. `counting` (a global, read without a map lookup) is the
 * generation counting now (0: off); a slot taken in an earlier generation is stale and the task
 * gets a new one. When the slots run out, CONTROL[0] counts the tasks left out.
 *
 * Rebuild with crates/schedlab-real/bpf/build.sh (clang, libbpf-dev); the object is committed
 * so that building schedlab needs neither.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* Only the fields read here; CO-RE relocates them to the running kernel's layout by name. */
struct thread_info {
	unsigned long flags;
} __attribute__((preserve_access_index));
struct task_struct;
struct rq {
	struct task_struct *curr;
	struct task_struct *idle;
	int cpu;
	__u64 nr_switches;
	unsigned int ttwu_pending;
} __attribute__((preserve_access_index));
struct cfs_rq {
	struct rq *rq;
} __attribute__((preserve_access_index));
struct sched_entity {
	struct cfs_rq *cfs_rq;
} __attribute__((preserve_access_index));
struct task_struct {
	struct thread_info thread_info;
	int pid;
	char comm[16];
	struct sched_entity se;
} __attribute__((preserve_access_index));
struct bpf_iter_meta;
struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/*
 * One task's counts; the layout is mirrored by TaskCounts in bpf.rs. They are kept in the
 * task's own local storage while it lives (below), so that a wakeup writes the line its lookup
 * has just read. A task's wakeups are serialized by the kernel (one wakeup at a time, and none
 * while the task runs), so plain increments are exact without atomics.
 */
struct counts {
	__u64 wakeups;         /* sched_wakeup events: as many as sched_waking's on 6.18 */
	__u64 preempt;         /* ...that set TIF_NEED_RESCHED on a busy CPU's current task */
	__u64 preempt_lazy;    /* ...that set only TIF_NEED_RESCHED_LAZY */
	__u64 preempt_waker;   /* of preempt and preempt_lazy, those on the waker's own CPU */
};

#define MAX_TASKS 65536

/*
 * Where the counts of each slot end up for user space: copied out of the task's storage when
 * the task exits (on_exit) or, for a task still alive, when user space collects (on_task, an
 * iterator over every task). Its size is set by user space before loading.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_TASKS);
	__type(key, __u32);
	__type(value, struct counts);
} COUNTS SEC(".maps");

/* The task (TID) of each slot handed out in this generation. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_TASKS);
	__type(key, __u32);
	__type(value, __u32);
} SLOT_TID SEC(".maps");

/* Where a task's counts of the current generation are. */
enum {
	IN_TASK = 0,   /* in its storage (counts below) */
	COPIED = 1,    /* copied to COUNTS[index]: later wakeups add there */
	LEFT_OUT = 2,  /* no slot was free: not counted */
};

/* A task's slot and, while it lives, its counts, in its task-local storage; freed with it. */
struct slot {
	__u64 generation;
	struct counts counts;
	__u64 where; /* IN_TASK, COPIED or LEFT_OUT; COPIED is claimed atomically (64 bits) */
	__u32 index;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct slot);
} SLOTS SEC(".maps");

/*
 * Per run queue (indexed by CPU, up to MAX_CPUS): the task a wakeup last told to give way and
 * the run queue's switch count then. A later wakeup that finds the same task on the same run
 * queue with no switch since found the flag already set: it is not credited again. Written under
 * that run queue's lock (sched_wakeup holds it), so never by two CPUs at once.
 */
#define MAX_CPUS 8192
struct told {
	__u64 curr;
	__u64 nr_switches;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, struct told);
} TOLD SEC(".maps");

/*
 * [0]: tasks left out because no slot was free; [1]: slots handed out in this generation (some
 * may be past the end: see [0]).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} CONTROL SEC(".maps");

/*
 * Set by user space (the .bss map): the generation counting now (0: off), read by every wakeup
 * without a map lookup, and the last generation started, whose counts on_exit and on_task copy
 * out (counting may already be off when a task exits or is collected).
 */
__u64 counting = 0;
__u64 generation = 0;

const volatile __u64 need_resched_mask = 0;
const volatile __u64 lazy_mask = 0;
const volatile char prefix[16] = {};
const volatile __u32 prefix_len = 0;

static __always_inline int named_ours(struct task_struct *p)
{
	char comm[16];

	if (bpf_probe_read_kernel(comm, sizeof(comm), &p->comm))
		return 0;
	for (int i = 0; i < 15; i++) {
		if (i >= prefix_len)
			return 1;
		if (comm[i] != prefix[i])
			return 0;
	}
	return 1;
}

/*
 * The counts of p for generation gen when its slot is not (or no longer) in its storage: a new
 * slot at its first wakeup of the generation, COUNTS[index] once copied out, 0 if not counted.
 */
static __noinline struct counts *counts_elsewhere(struct task_struct *p, struct slot *s, __u64 gen)
{
	__u32 zero = 0, one = 1;

	if (!p)
		return 0;
	if (s && s->generation == gen) {
		if (s->where == COPIED)
			return bpf_map_lookup_elem(&COUNTS, &s->index);
		return 0; /* LEFT_OUT */
	}
	if (!named_ours(p))
		return 0;
	if (!s)
		s = bpf_task_storage_get(&SLOTS, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 *left_out = bpf_map_lookup_elem(&CONTROL, &zero);
	__u64 *handed_out = bpf_map_lookup_elem(&CONTROL, &one);
	if (!handed_out || !left_out)
		return 0;
	/* Once per task and generation: a new slot, or left out for good (rare: no slot free). */
	__u32 index = __sync_fetch_and_add(handed_out, 1);
	__u32 tid = p->pid;
	if (bpf_map_update_elem(&SLOT_TID, &index, &tid, BPF_ANY)) {
		__sync_fetch_and_add(left_out, 1);
		if (s) {
			s->where = LEFT_OUT;
			s->generation = gen;
		}
		return 0;
	}
	/*
	 * No storage could be made now: the kernel's allocator for it had none at hand (many
	 * tasks woken at once on one CPU, as at a start gate, lost the first wakeup of about a
	 * third of 80 tasks). This wakeup is counted in the slot itself, and the task's next
	 * wakeup tries again with a new slot; user space adds up the slots of one TID.
	 */
	if (!s)
		return bpf_map_lookup_elem(&COUNTS, &index);
	__builtin_memset(&s->counts, 0, sizeof(s->counts));
	s->index = index;
	s->where = IN_TASK;
	s->generation = gen;
	return &s->counts;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	__u64 gen = counting;

	if (!gen)
		return 0;
	struct counts *c;
	struct slot *s = bpf_task_storage_get(&SLOTS, p, 0, 0);
	if (s && s->generation == gen && s->where == IN_TASK)
		c = &s->counts;
	else
		c = counts_elsewhere(p, s, gen);
	if (!c)
		return 0;
	c->wakeups++;
	struct rq *rq = p->se.cfs_rq->rq;
	if (!rq)
		return 0;
	struct task_struct *curr = rq->curr;
	if (!curr || curr == p)
		return 0;
	unsigned long flags = curr->thread_info.flags;
	if (!(flags & (need_resched_mask | lazy_mask)))
		return 0;
	if (curr == rq->idle)
		return 0; /* an idle CPU: nobody to preempt */
	__u32 cpu = rq->cpu;
	__u64 switches = rq->nr_switches;
	struct told *told = bpf_map_lookup_elem(&TOLD, &cpu);
	if (told) {
		if (told->curr == (__u64)curr && told->nr_switches == switches)
			return 0; /* told already by an earlier wakeup */
		told->curr = (__u64)curr;
		told->nr_switches = switches;
	}
	if (flags & need_resched_mask)
		c->preempt++;
	else
		c->preempt_lazy++;
	if (cpu == bpf_get_smp_processor_id() && !rq->ttwu_pending)
		c->preempt_waker++; /* made here, not queued to this CPU by another */
	return 0;
}

/*
 * Move p's counts of the last generation from its storage to its slot in COUNTS, once: the
 * exiting task itself and the collecting iterator may race for it, and the first to claim it
 * copies. After that, wakeups of p add to COUNTS directly.
 */
static __always_inline void copy_out(struct task_struct *p)
{
	struct slot *s = bpf_task_storage_get(&SLOTS, p, 0, 0);

	if (!s || s->generation != generation || s->where != IN_TASK)
		return;
	if (__sync_val_compare_and_swap(&s->where, IN_TASK, COPIED) != IN_TASK)
		return;
	struct counts *c = bpf_map_lookup_elem(&COUNTS, &s->index);
	if (!c)
		return;
	c->wakeups += s->counts.wakeups;
	c->preempt += s->counts.preempt;
	c->preempt_lazy += s->counts.preempt_lazy;
	c->preempt_waker += s->counts.preempt_waker;
}

/* A task leaving: its counts outlive it in COUNTS. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	copy_out(p);
	return 0;
}

/* Run by user space when it collects: the counts of every task still alive to COUNTS. */
SEC("iter/task")
int on_task(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;

	if (p)
		copy_out(p);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
