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
 * The data flow between traced tasks, through fentry/fexit (BPF trampolines: a direct call at the
 * function's entry and return, and nothing at all in any other function, where a kprobe's int3 or
 * ftrace detour costs more, and the raw_syscalls tracepoint would slow every system call of the
 * machine). One record per call, at its return, with the time it entered (kept in task-local
 * storage between the two), the bytes it returned and the object the bytes went through:
 *
 * - anon_pipe_read/anon_pipe_write(iocb, iter) (fs/pipe.c; pipe_read/pipe_write before 6.16,
 *   user space picks the name the kernel has): the pipe's pipe_inode_info, shared by both ends.
 * - unix_stream_recvmsg(sock, msg, size, flags) and unix_stream_sendmsg(sock, msg, len)
 *   (net/unix/af_unix.c): the receiving socket's struct sock — a read's own, a write's peer
 *   (unix_peer), since a write on one end of a socketpair is read on the other.
 *
 * Named FIFOs (fifo_pipe_read/write), datagram sockets and every other descriptor are not
 * recorded here.
 *
 * Where the kernel refuses fentry/fexit (some kernels lock ftrace's function hooks down, and a
 * kernel without CONFIG_KPROBES has no kprobes either), UNIX stream sockets are still seen
 * through the BTF tracepoints sock:sock_send_length and sock:sock_recv_length, which the socket
 * layer fires as a send or a receive returns (no pipe has such a tracepoint). They give no entry
 * time: a call that slept is taken to have begun where it first went to sleep (sched_switch
 * keeps the time, the call's number and its first argument, the descriptor, and the exit takes
 * them when its own call and descriptor match), one that did not sleep to take no time.
 *
 * The traced set is a mark in each traced task's task-local storage (TASKS, BPF_MAP_TYPE_TASK_
 * STORAGE, the wakeup counters' way in wakeups.bpf.c): an event of a task that has none costs
 * one pointer load from its task_struct (task->bpf_storage is empty) instead of a hash lookup
 * by TID, whose bucket was a cache miss of its own on every event of the machine. A traced
 * task's children are marked at fork. The roots are named by user space in SEED: the recording
 * thread's TID while it forks the command (its fork marks the command), or --pid's thread
 * group (TGID: every thread the process has, and those it makes later are its forks anyway);
 * a seed is a comparison of two fields of the task, read only when the task has no mark. A
 * mark the kernel cannot allocate leaves the task out and counts it in LOST[1]; the marks are
 * freed with their tasks (at the latest), so there are never more than the traced tree's live
 * tasks. A record the ring had no room for is counted in LOST[0]. Both counters are per CPU (no
 * shared cache line) and user space reports their sum as lost events.
 *
 * The switch and waking programs, which run for every task of the machine, first ask SEEN, a
 * per-CPU list of the last few marked tasks met there, known by address and start time: a
 * traced task that keeps coming back to one CPU (a pinned ping-pong's two ends) then costs no
 * storage lookup, which is a helper call with the storage's per-CPU busy count around it. Only
 * a task not found there is looked up (and joins it if marked). The waking program's one
 * bpf_get_current_task_btf gives both the waker to test and its TID (bpf_get_current_pid_tgid
 * was a second helper call, made for every waking of the machine).
 *
 * Submitting without a wakeup (BPF_RB_NO_WAKEUP) keeps the drain thread from being woken at
 * every record, which would add a wakeup and a context switch of its own to the machine per
 * event: the thread polls on a timer instead, and is woken early only when the ring is more than
 * wake_bytes full.
 *
 * The frequent records, switches and wakings, are gathered per CPU in STAGE and go to the ring
 * STAGE_RECS at a time (one bpf_ringbuf_output of the batch): a record written alone into the
 * ring costs a reservation and a commit (a lock and two atomic operations on the ring's shared
 * state) and lands on a ring line last read by the drain thread on another CPU, which the
 * commit's atomic operation then waits for; in a batch those are paid once per STAGE_RECS
 * records and the copy streams. Only the switch and waking programs stage: sched_switch runs
 * with interrupts off, and sched_waking either with them off or, interrupted, cannot run again
 * on the same CPU before it returns (a tracing program does not nest in itself), so the two
 * never write one CPU's stage at once; the rarer records (fork, exit, migration, I/O), whose
 * programs can run in an interrupt, go to the ring alone. User space reads what is left in
 * each CPU's stage after the programs are detached. A batch the ring has no room for counts
 * its records lost.
 *
 * Rebuild with crates/schedlab-real/bpf/build.sh (clang, libbpf-dev); the object is committed so
 * that building schedlab needs neither.
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* Only the fields read here; CO-RE relocates them to the running kernel's layout by name. */
struct sched_entity {
	__u64 sum_exec_runtime;
} __attribute__((preserve_access_index));
struct task_struct {
	int exit_state;
	int pid;
	int tgid;
	char comm[16];
	struct sched_entity se;
	__u64 start_time;
} __attribute__((preserve_access_index));
/* The kernel's struct pt_regs (x86-64); the ___ suffix keeps it apart from the user-space
 * headers' struct of the same name, and CO-RE matches it to the kernel's by the name before it. */
struct pt_regs___kernel {
	long orig_ax;
	long di;
} __attribute__((preserve_access_index));

#define KIND_SWITCH 1
#define KIND_WAKING 2
#define KIND_FORK 3
#define KIND_EXIT 4
#define KIND_MIGRATE 5
#define KIND_IO 6

/* An I/O record's left field: bit 0 a write (else a read), bit 1 a UNIX socket (else a pipe). */
#define IO_WRITE 1
#define IO_SOCKET 2

#define LEFT_RUNNABLE 0
#define LEFT_SLEEPING 1
#define LEFT_DEAD 2

/* One event; the layout is mirrored by Record in record_bpf.rs (32 bytes). */
struct rec {
	__u64 ts;   /* bpf_ktime_get_ns: CLOCK_MONOTONIC, as the tracefs recorder's "mono" clock */
	__u16 cpu;
	__u8 kind;
	__u8 left;  /* switch: how prev left */
	__s32 a;    /* switch: prev; waking: waker; fork: parent; exit, migrate: the task */
	__s32 b;    /* switch: next; waking: wakee; fork: child; migrate: dest_cpu */
	__s32 nr;   /* switch: prev's system call (-1: none, or not read); I/O: bytes returned */
	__u64 x;    /* switch: prev's sum_exec_runtime (0: prev not traced); I/O: its entry time */
};

/* A fork or an exit, with a name: the child's at fork, the task's last at exit (48 bytes). */
struct rec_named {
	struct rec r;
	char comm[16];
};

/* A pipe or socket call of a traced task, at its return (40 bytes): r.a the task, r.nr the bytes
 * returned (negative: an error; the kernel returns at most MAX_RW_COUNT, under 2^31), r.x when
 * the call entered (bpf_ktime_get_ns), r.left the IO_ bits. */
struct rec_io {
	struct rec r;
	__u64 obj;   /* the pipe's pipe_inode_info or the receiving struct sock, as an identity */
};

/* Only the fields read here (CO-RE). */
struct file {
	void *private_data;
} __attribute__((preserve_access_index));
struct kiocb {
	struct file *ki_filp;
} __attribute__((preserve_access_index));
struct sock_common {
	unsigned short skc_family;
} __attribute__((preserve_access_index));
struct sock {
	struct sock_common __sk_common;
	unsigned short sk_type;
} __attribute__((preserve_access_index));
struct socket {
	struct sock *sk;
} __attribute__((preserve_access_index));
struct unix_sock {
	struct sock *peer;
} __attribute__((preserve_access_index));

/* Sizes set by user space before loading (max_entries). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} EVENTS SEC(".maps");

/* The roots, set by user space (SEED[0]; mirrored by Seed in record_bpf.rs): tid, a task by
 * its TID (the recording thread while it forks the command), tgid, every task of a thread group
 * (--pid); 0 is none. sleep_starts: 1 when the socket tracepoints record the data flow, which
 * take a call's start from where it went to sleep (note_sleep). */
struct seed {
	__s32 tid;
	__s32 tgid;
	__u32 sleep_starts;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seed);
} SEED SEC(".maps");

/* [0]: records the ring had no room for; [1]: tasks the traced set had no room for. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} LOST SEC(".maps");

/* Records gathered on one CPU before they go to the ring together (mirrored by STAGE_RECS in
 * record_bpf.rs): n of recs are filled. */
#define STAGE_RECS 64
struct stage {
	__u32 n;
	__u32 pad;
	struct rec recs[STAGE_RECS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stage);
} STAGE SEC(".maps");

/* A task's own state, in its task-local storage. traced: the task is in the traced set (a task
 * seeded by SEED may have state without it). ts, nr, fd: when its pipe or socket call began: at
 * its entry (fentry; nr = ENTERED_BY_FENTRY), or, for the tracepoints, where the task last went
 * to sleep, in call nr on descriptor fd. */
struct task_state {
	__u64 ts;
	long nr;
	long fd;
	__u64 traced;
};
#define ENTERED_BY_FENTRY (-2)

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} TASKS SEC(".maps");

/* The traced tasks this CPU's switch and waking programs met last, so that the next event of
 * one costs no task-local storage lookup (a helper call, with the storage's per-CPU busy count
 * around it): SEEN_TASKS entries, filled round robin. A task is known by its task_struct's
 * address and its start time together: an address can be a later task's once the first has
 * been freed, but that task started later. Only marked tasks are kept (a seed may be taken
 * back; a mark stays until the task is dead), and only these two programs read or write it,
 * which never run at once on one CPU (see STAGE). */
#define SEEN_TASKS 4
struct seen {
	__u64 task[SEEN_TASKS];  /* the task_struct's address; 0: empty */
	__u64 start[SEEN_TASKS]; /* its start_time */
	__u32 next;              /* the entry to fill next */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen);
} SEEN SEC(".maps");

/* Wake the drain thread when more than this many bytes wait (user space: a quarter of the ring). */
const volatile __u64 wake_bytes = 1 << 20;

static __always_inline void count_lost(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&LOST, &which);

	if (n)
		(*n)++;
}

static __always_inline struct seed *seed(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&SEED, &zero);
}

/* Whether t is traced; *state its task-local state, if it has any. */
static __always_inline int traced(struct task_struct *t, struct task_state **state)
{
	struct task_state *s = bpf_task_storage_get(&TASKS, t, 0, 0);
	struct seed *root;

	*state = s;
	if (s && s->traced)
		return 1;
	root = seed();
	return root && ((root->tid && t->pid == root->tid) ||
			(root->tgid && t->tgid == root->tgid));
}

static __always_inline struct seen *seen_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&SEEN, &zero);
}

/* Whether t is traced, as traced() says, asked of SEEN first; a task traced() finds marked
 * joins SEEN. *state: t's task-local state where traced() looked it up, else 0. */
static __always_inline int traced_here(struct seen *seen, struct task_struct *t,
				       struct task_state **state)
{
	__u64 addr = (__u64)t, start = t->start_time;

	*state = 0;
	if (seen) {
#pragma unroll
		for (int i = 0; i < SEEN_TASKS; i++)
			if (seen->task[i] == addr && seen->start[i] == start)
				return 1;
	}
	if (!traced(t, state))
		return 0;
	if (seen && *state && (*state)->traced) {
		__u32 i = seen->next & (SEEN_TASKS - 1);

		seen->task[i] = addr;
		seen->start[i] = start;
		seen->next = i + 1;
	}
	return 1;
}

/* t, dead, leaves SEEN (its entry would never match again; this frees it sooner). */
static __always_inline void forget(struct seen *seen, struct task_struct *t)
{
	__u64 addr = (__u64)t;

	if (!seen)
		return;
#pragma unroll
	for (int i = 0; i < SEEN_TASKS; i++)
		if (seen->task[i] == addr)
			seen->task[i] = 0;
}

/* t's state, made if it has none (zero: not traced, no call). */
static __always_inline struct task_state *state_of(struct task_struct *t, struct task_state *s)
{
	if (s)
		return s;
	return bpf_task_storage_get(&TASKS, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline void submit(void *r)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&EVENTS, BPF_RB_AVAIL_DATA) > wake_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(r, flags);
}

static __always_inline void fill(struct rec *r, __u8 kind)
{
	r->ts = bpf_ktime_get_ns();
	r->cpu = bpf_get_smp_processor_id();
	r->kind = kind;
	r->left = 0;
	r->nr = -1;
	r->x = 0;
}

static __always_inline struct rec *reserve(__u32 size, __u8 kind)
{
	struct rec *r = bpf_ringbuf_reserve(&EVENTS, size, 0);

	if (!r) {
		count_lost(0);
		return 0;
	}
	fill(r, kind);
	return r;
}

/* This CPU's stage, and in *slot the next free record of it, filled as reserve's is. */
static __always_inline struct stage *staged(__u8 kind, struct rec **slot)
{
	__u32 zero = 0;
	struct stage *st = bpf_map_lookup_elem(&STAGE, &zero);

	if (!st)
		return 0;
	*slot = &st->recs[st->n & (STAGE_RECS - 1)];
	fill(*slot, kind);
	return st;
}

/* The staged record is complete: count it, and send the stage to the ring when it is full. */
static __always_inline void stage_done(struct stage *st)
{
	__u64 flags = BPF_RB_NO_WAKEUP;
	__u32 n = (st->n & (STAGE_RECS - 1)) + 1;

	if (n < STAGE_RECS) {
		st->n = n;
		return;
	}
	st->n = 0;
	if (bpf_ringbuf_query(&EVENTS, BPF_RB_AVAIL_DATA) > wake_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&EVENTS, st->recs, sizeof(st->recs), flags)) {
		__u32 which = 0;
		__u64 *lost = bpf_map_lookup_elem(&LOST, &which);

		if (lost)
			*lost += STAGE_RECS;
	}
}

/* A traced task goes to sleep: where its call began, for the socket tracepoints (unless fentry
 * saw the call's own entry). */
static __always_inline void note_sleep(struct task_struct *prev, struct task_state *s, __u64 ts,
				       struct pt_regs___kernel *regs)
{
	struct task_state *e = state_of(prev, s);

	if (!e || (e->ts && e->nr == ENTERED_BY_FENTRY))
		return;
	/* Asleep again in the same call (a writer woken before there was room enough): the call
	 * began at its first sleep. A call's return clears the time, so an equal call and
	 * descriptor with the time set is the call in progress. */
	if (e->ts && e->nr == regs->orig_ax && e->fd == regs->di)
		return;
	e->ts = ts;
	e->nr = regs->orig_ax;
	e->fd = regs->di;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 p = prev->pid, n = next->pid;
	struct seen *seen = seen_here();
	struct task_state *ps, *ns;
	int prev_traced = traced_here(seen, prev, &ps);

	if (!prev_traced && !traced_here(seen, next, &ns))
		return 0;
	/* TASK_REPORT: the states the tracepoint reports; EXIT_DEAD | EXIT_ZOMBIE. */
	__u32 state = (prev_state | prev->exit_state) & 0x7f;
	__u8 left = LEFT_SLEEPING;
	if (preempt || !state)
		left = LEFT_RUNNABLE;
	else if (state & 0x30)
		left = LEFT_DEAD;
	struct rec *r = 0;
	struct stage *st = staged(KIND_SWITCH, &r);
	if (st) {
		r->left = left;
		r->a = p;
		r->b = n;
		/* The kernel's own CPU time of prev: __schedule() has charged it (update_curr()) up to
		 * this switch before the tracepoint fires, so a task's reading at each switch-out,
		 * less the one before, is what the kernel charged it in between: what getrusage() and
		 * /proc/PID/schedstat report, without the gaps of switch-in-to-switch-out times. */
		if (prev_traced)
			r->x = prev->se.sum_exec_runtime;
		if (prev_traced && left != LEFT_DEAD) {
			struct pt_regs___kernel *regs = (void *)bpf_task_pt_regs(prev);
			if (regs)
				r->nr = regs->orig_ax;
			if (regs && left == LEFT_SLEEPING) {
				struct seed *root = seed();

				if (root && root->sleep_starts)
					note_sleep(prev, ps, r->ts, regs);
			}
		}
		stage_done(st);
	}
	if (prev_traced && left == LEFT_DEAD) {
		forget(seen, prev);
		/* Found in SEEN, its state was not looked up. */
		if (!ps)
			ps = bpf_task_storage_get(&TASKS, prev, 0, 0);
		if (ps)
			bpf_task_storage_delete(&TASKS, prev);
	}
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct task_struct *me = bpf_get_current_task_btf();
	struct seen *seen = seen_here();
	__u32 wakee = p->pid;
	struct task_state *s;

	if (!traced_here(seen, p, &s) && !traced_here(seen, me, &s))
		return 0;
	__u32 waker = me->pid;
	struct rec *r = 0;
	struct stage *st = staged(KIND_WAKING, &r);
	if (!st)
		return 0;
	r->a = waker;
	r->b = wakee;
	stage_done(st);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 pp = parent->pid, c = child->pid;
	struct task_state *s;

	if (!traced(parent, &s))
		return 0;
	s = bpf_task_storage_get(&TASKS, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (s)
		s->traced = 1;
	else
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
	struct task_state *s;

	if (!traced(p, &s))
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
	struct task_state *s;

	if (!traced(p, &s))
		return 0;
	struct rec *r = reserve(sizeof(struct rec), KIND_MIGRATE);
	if (!r)
		return 0;
	r->a = pid;
	r->b = dest_cpu;
	submit(r);
	return 0;
}

static __always_inline void io_enter(void)
{
	struct task_struct *me = bpf_get_current_task_btf();
	struct task_state *s;

	if (!traced(me, &s))
		return;
	struct task_state *e = state_of(me, s);
	if (e) {
		e->ts = bpf_ktime_get_ns();
		e->nr = ENTERED_BY_FENTRY;
	}
}

static __always_inline void emit_io(__u32 tid, __u8 bits, __u64 obj, long ret, __u64 enter)
{
	struct rec_io *r = (void *)reserve(sizeof(struct rec_io), KIND_IO);
	if (!r)
		return;
	r->r.left = bits;
	r->r.a = tid;
	r->r.b = 0;
	r->r.nr = ret;
	r->r.x = enter ? enter : r->r.ts;
	r->obj = obj;
	submit(r);
}

static __always_inline void io_exit(__u8 bits, __u64 obj, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct task_state *e;

	if (!traced(bpf_get_current_task_btf(), &e))
		return;
	if (!e || !e->ts || e->nr != ENTERED_BY_FENTRY)
		return; /* entered before the task was traced */
	emit_io(tid, bits, obj, ret, e->ts);
	e->ts = 0;
}

/* A UNIX stream socket's call returns (the tracepoints' path): its entry is where it slept. */
static __always_inline void sock_exit(struct sock *sk, int ret, __u8 bits)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct task_struct *me = bpf_get_current_task_btf();
	struct task_state *e;

	if (!traced(me, &e) || sk->__sk_common.skc_family != 1 /* AF_UNIX */ ||
	    sk->sk_type != 1 /* SOCK_STREAM */)
		return;
	__u64 obj = (__u64)sk;
	if (bits & IO_WRITE) {
		struct unix_sock *u = (void *)sk;
		obj = (__u64)BPF_CORE_READ(u, peer);
	}
	__u64 enter = 0;
	struct pt_regs___kernel *regs = (void *)bpf_task_pt_regs(me);
	if (e && e->ts && regs && e->nr == regs->orig_ax && e->fd == regs->di)
		enter = e->ts;
	if (e)
		e->ts = 0;
	emit_io(tid, bits, obj, ret, enter);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_sock_send, struct sock *sk, int ret, int flags)
{
	sock_exit(sk, ret, IO_SOCKET | IO_WRITE);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_sock_recv, struct sock *sk, int ret, int flags)
{
	sock_exit(sk, ret, IO_SOCKET);
	return 0;
}

SEC("fentry")
int BPF_PROG(pipe_read_enter, struct kiocb *iocb)
{
	io_enter();
	return 0;
}

SEC("fexit")
int BPF_PROG(pipe_read_exit, struct kiocb *iocb, void *to, long ret)
{
	io_exit(0, (__u64)iocb->ki_filp->private_data, ret);
	return 0;
}

SEC("fentry")
int BPF_PROG(pipe_write_enter, struct kiocb *iocb)
{
	io_enter();
	return 0;
}

SEC("fexit")
int BPF_PROG(pipe_write_exit, struct kiocb *iocb, void *from, long ret)
{
	io_exit(IO_WRITE, (__u64)iocb->ki_filp->private_data, ret);
	return 0;
}

SEC("fentry")
int BPF_PROG(unix_recv_enter, struct socket *sock)
{
	io_enter();
	return 0;
}

SEC("fexit")
int BPF_PROG(unix_recv_exit, struct socket *sock, void *msg, __u64 size, int flags, int ret)
{
	io_exit(IO_SOCKET, (__u64)sock->sk, ret);
	return 0;
}

SEC("fentry")
int BPF_PROG(unix_send_enter, struct socket *sock)
{
	io_enter();
	return 0;
}

SEC("fexit")
int BPF_PROG(unix_send_exit, struct socket *sock, void *msg, __u64 len, int ret)
{
	/* struct unix_sock begins with its struct sock: the socket's sk is its unix_sock. */
	struct unix_sock *u = (void *)sock->sk;

	io_exit(IO_SOCKET | IO_WRITE, (__u64)BPF_CORE_READ(u, peer), ret);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
