//! The policy trait — the simulator's `struct sched_class` — and the registry of policies: each
//! policy file ends with its [`PolicyDef`] (name, summary, parameters, constructor), and
//! [`POLICIES`] lists them, one line per policy.
//!
//! Like the kernel's kernel/sched/core.c and its classes, the split is mechanism versus policy:
//! the machine ([`crate::machine`]) owns the clock, the CPUs, the wakeup and context-switch paths,
//! accounting and the cost model; a policy owns only its runqueues and decides *which* task runs,
//! *where* a waking task goes, *whether* a wakeup preempts and *when* a slice is over. Hooks are
//! named after the kernel's (`enqueue_task`, `pick_next_task`, `put_prev_task`, `wakeup_preempt`,
//! `task_tick`, `select_task_rq`, `balance`, `yield_task`); optional ones have defaults.
//!
//! Task states as a policy sees them: a task is either *queued* on one CPU's runqueue (enqueued,
//! not running), *current* on a CPU (returned by `pick_next_task`, no longer queued), or
//! *sleeping* (handed to `dequeue_task`). `put_prev_task` puts a current task that is still
//! runnable back in the queue.

mod balance;
pub mod bsd4;
pub mod cfs;
mod cpumask;
pub mod domains;
pub mod domains26;
mod ds;
pub mod eevdf;
mod error;
pub mod fair;
pub mod linux24;
pub mod linux24_mq;
pub mod linux24_prio;
pub mod o1;
mod registry;
pub mod staircase;
#[cfg(test)]
mod testing;
pub mod ule;

pub use cpumask::{CpuMask, MAX_CPUS};
pub use error::PolicyError;
pub use registry::{
    boxed, lookup, names, no_check, FromParams, ParamDef, Params, PolicyDef, PolicySpec, SpecError,
    Values,
};
use schedlab_workload::knobs::{Knobs, SchedPolicy};

/// A task's index in the simulated machine (the workload's task id).
pub type TaskId = usize;
/// A simulated CPU's index.
pub type CpuId = usize;

/// What a policy learns about a task when the machine creates it.
#[derive(Clone, Debug)]
pub struct TaskSetup {
    /// The task.
    pub id: TaskId,
    /// Its workload group index.
    pub group: usize,
    /// The group's knobs (already checked with [`Policy::check_knobs`]).
    pub knobs: Knobs,
    /// CPUs it may run on (the `cpus=` knob, else every CPU).
    pub allowed: CpuMask,
    /// A workload thread, or a kernel thread the machine runs itself.
    pub kind: TaskKind,
}

/// What a task is: one of the workload's threads, or a kernel thread the simulated machine runs
/// itself (see the machine's `kthreads` module). A policy that has no notion of a kind schedules
/// a kernel thread as it does a workload thread with the same knobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskKind {
    /// A thread of the workload.
    #[default]
    Workload,
    /// A kernel thread scheduled like any other thread with its knobs (Linux's kswapd).
    Kernel,
    /// A FreeBSD interrupt thread at ithread priority `priority` (0..=63 in FreeBSD 6/7's
    /// sys/priority.h); the machine gives these only to policies that answer
    /// [`Policy::loopback_via_netisr`], which know the priority range.
    Interrupt {
        /// td_priority, fixed: interrupt threads never take a user priority.
        priority: u8,
    },
}

impl TaskSetup {
    /// The task's scheduling policy (SCHED_OTHER when unset).
    pub fn sched_policy(&self) -> SchedPolicy {
        self.knobs.policy.unwrap_or(SchedPolicy::Other)
    }
    /// The task's nice value (0 when unset).
    pub fn nice(&self) -> i32 {
        self.knobs.nice.unwrap_or(0)
    }
}

/// Read-only facts about the machine a policy may consult at a hook, like the fields of the
/// kernel's `struct rq` that classes read.
///
/// The simulator keeps one for the whole run as its own state (its clock, each CPU's current
/// task and runnable count live here, nowhere else) and hands every hook a reference to it, so
/// a hook call costs no copying. A policy sees it only through `&MachineView`; tests may build
/// one by hand.
#[derive(Clone, Debug, Default)]
pub struct MachineView {
    /// Simulated time, ns since the run's epoch.
    pub now: u64,
    /// Number of CPUs.
    pub ncpus: usize,
    /// The task running on each CPU (`None`: idle or switching); `ncpus` long.
    pub curr: Vec<Option<TaskId>>,
    /// Runnable tasks (queued + current) on each CPU's runqueue; `ncpus` long.
    pub nr_running: Vec<usize>,
    /// Timer interrupt frequency of the machine's cost profile.
    pub hz: u32,
}

impl MachineView {
    /// Whether `cpu` has nothing at all to run.
    pub fn is_idle(&self, cpu: CpuId) -> bool {
        self.curr[cpu].is_none() && self.nr_running[cpu] == 0
    }
    /// Length of one timer tick in ns.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.hz as u64
    }
}

/// Why a task enters a runqueue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueKind {
    /// Its first enqueue (the run's start, like `wake_up_new_task`).
    New,
    /// It woke up after sleeping `slept_ns`.
    Wakeup {
        /// How long it slept.
        slept_ns: u64,
    },
}

/// Why a current task stops being current while staying runnable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutPrevKind {
    /// Preempted: by a tick, a wakeup, or a balancing move that asked for a reschedule.
    Preempted,
    /// It called `sched_yield` ([`Policy::yield_task`] was called first).
    Yielded,
}

/// Why a current task leaves the CPU without staying runnable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DequeueKind {
    /// It blocked (recv, sleep, lock, a readiness wait): an interruptible sleep.
    Sleep,
    /// It blocked on a device — a disk read or write, a swap-in read — which Linux sleeps in
    /// TASK_UNINTERRUPTIBLE. A policy that does not tell the two apart treats it as [`Sleep`].
    ///
    /// [`Sleep`]: DequeueKind::Sleep
    DeviceWait,
    /// Its body finished.
    Exit,
}

/// When the machine asks a policy to balance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalanceKind {
    /// From `cpu`'s timer tick (the policy decides whether its interval has passed).
    Periodic,
    /// `cpu` found nothing to run (`newidle_balance`).
    NewIdle,
}

/// A task a policy moved from one CPU's runqueue to another's (it was queued, not running).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The task.
    pub task: TaskId,
    /// Where it was queued.
    pub from: CpuId,
    /// Where it is queued now.
    pub to: CpuId,
}

/// A scheduling policy: one file per policy, hooks named like `struct sched_class`'s.
pub trait Policy {
    /// Reject knobs this policy has no notion of (a SCHED_DEADLINE task on O(1), a custom slice
    /// on CFS), with a message naming the group, the value and what the policy accepts.
    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), PolicyError>;

    /// Refuse a machine of `cpus` CPUs this configuration cannot run on (linux24-mq's pools
    /// must divide the CPUs), naming the value and what is accepted. Default: any.
    fn check_cpus(&self, _cpus: usize) -> Result<(), PolicyError> {
        Ok(())
    }

    /// Called once per task before the run (`sched_fork`).
    fn task_new(&mut self, m: &MachineView, task: &TaskSetup);

    /// The CPU whose runqueue a waking (or new) task should join. `prev` is where it last was;
    /// `waker` is the CPU of the task that woke it (`None`: a timer or the start of the run).
    fn select_task_rq(
        &mut self,
        m: &MachineView,
        task: TaskId,
        prev: CpuId,
        waker: Option<CpuId>,
    ) -> CpuId;

    /// The CPU whose runqueue `child`, just forked by `parent` on `parent_cpu` (and already
    /// told to [`Policy::task_new`]), joins (`sched_fork` / `wake_up_new_task`). `None`, the
    /// default, places it as a wakeup from `parent_cpu` ([`Policy::select_task_rq`] with that
    /// CPU as waker, as 2.4's `do_fork` → `wake_up_process` → `reschedule_idle` does). The child
    /// is then enqueued with [`EnqueueKind::New`].
    fn task_fork(
        &mut self,
        _m: &MachineView,
        _child: TaskId,
        _parent: TaskId,
        _parent_cpu: CpuId,
    ) -> Option<CpuId> {
        None
    }

    /// Put a runnable task on `cpu`'s runqueue.
    fn enqueue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: EnqueueKind);

    /// A current task stops running without staying runnable.
    fn dequeue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: DequeueKind);

    /// Whether `woken`, just enqueued on `cpu`, should preempt `curr` (`check_preempt_curr` /
    /// `wakeup_preempt`). Also asked after a balancing move.
    fn wakeup_preempt(&mut self, m: &MachineView, cpu: CpuId, curr: TaskId, woken: TaskId) -> bool;

    /// Take the next task to run on `cpu` off its runqueue, or `None` to go idle. The task may
    /// have been queued for another CPU (a shared run list, or a steal as in IBM's MQ): the
    /// machine then moves it to `cpu` and counts a migration.
    fn pick_next_task(&mut self, m: &MachineView, cpu: CpuId) -> Option<TaskId>;

    /// How many tasks the last `pick_next_task` on `cpu` examined — for policies that scan a run
    /// list (Linux 2.4's goodness loop); the cost model charges each. Default 0 (O(1) picks).
    /// Asked only if [`Policy::picks_scan`] says so.
    fn last_scan_len(&self, _cpu: CpuId) -> usize {
        0
    }

    /// Whether [`Policy::last_scan_len`] can be other than 0: a policy that overrides it says
    /// so here. The machine asks once, at the start of a run, and then after every pick only
    /// for a policy whose picks scan (a call per switch otherwise). Default false.
    fn picks_scan(&self) -> bool {
        false
    }

    /// The task `pick_next_task` would take on `cpu` next if nothing changed before it is
    /// asked, if the policy can tell cheaply: a hint the machine uses only to bring that task's
    /// memory into the cache ahead of its switch (`prefetch.rs`). Results never depend on it; a
    /// wrong guess costs only time. Default: no guess.
    fn next_task_hint(&self, _cpu: CpuId) -> Option<TaskId> {
        None
    }

    /// `prev`, put back runnable on `cpu` by a preemption, has just lost the CPU to another task
    /// (`__schedule_tail` in Linux 2.4 runs reschedule_idle for it): a policy may move it, still
    /// queued, to another CPU's runqueue; the machine then wakes or asks that CPU as after a
    /// balancing move. Default: it stays.
    fn schedule_tail(&mut self, _m: &MachineView, _cpu: CpuId, _prev: TaskId) -> Option<Move> {
        None
    }

    /// The current task of `cpu` goes back into the runqueue, still runnable.
    fn put_prev_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: PutPrevKind);

    /// Charge `delta_ns` of CPU time just consumed by `task`, current on `cpu` (`update_curr`).
    /// Called before every other hook that concerns the current task, if
    /// [`Policy::charges_runtime`] says so.
    fn update_curr(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, delta_ns: u64);

    /// Whether [`Policy::update_curr`] does anything: a policy whose `update_curr` is empty
    /// (it charges CPU time at the tick, or not at all) says false, and the machine, which
    /// asks once at the start of a run, then makes no call at every burst's end. Default true.
    fn charges_runtime(&self) -> bool {
        true
    }

    /// Timer tick on `cpu` while `task` runs (`task_tick`); true asks for a reschedule.
    fn task_tick(&mut self, m: &MachineView, cpu: CpuId, task: TaskId) -> bool;

    /// Whether an `update_curr` since `cpu`'s current task was picked asked to reschedule it
    /// (the kernel's `resched_curr` inside `update_curr`: EEVDF's `update_deadline` when a
    /// request is used up). The machine asks when a system call accounts the running task on
    /// the spot — a read of its own CPU clock (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)` →
    /// `task_sched_runtime` → `update_curr`, kernel/sched/core.c), which a compute does at its
    /// start and its end, as the real backend's does — and switches at the call's return to
    /// user mode. Default: never (the policy reschedules only from [`Policy::task_tick`] and
    /// [`Policy::wakeup_preempt`], as CFS's `update_curr` and the older kernels' accounting do).
    fn update_curr_resched(&self, _cpu: CpuId) -> bool {
        false
    }

    /// `task`, current on `cpu`, calls `sched_yield` (`yield_task`). True: the yield goes
    /// through schedule(), so `put_prev_task(Yielded)` and `pick_next_task` follow (every
    /// kernel since 2.5). False: the system call returns at once without taking a runqueue lock
    /// (2.4's sys_sched_yield when no other task is pending).
    fn yield_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId) -> bool;

    /// Move queued tasks between runqueues (`balance`, `load_balance`, idle pulling). The moved
    /// tasks must be queued on `to` when this returns.
    fn balance(&mut self, _m: &MachineView, _cpu: CpuId, _kind: BalanceKind) -> Vec<Move> {
        Vec::new()
    }

    /// CPUs whose running task the last [`Policy::balance`] asked to push away (the kernel's
    /// `stop_one_cpu_nowait(active_load_balance_cpu_stop)`, when balancing failed because the
    /// only movable task was running): the machine reschedules each as a wakeup of its
    /// highest-priority stopper would, and calls [`Policy::active_balance`] once the task is
    /// back on the runqueue. Default: none.
    fn take_active_balance(&mut self) -> Vec<CpuId> {
        Vec::new()
    }

    /// The stopper on `cpu`, whose current task has just been put back on its runqueue by a
    /// preemption: move one queued task to the CPU that asked for it
    /// (`active_load_balance_cpu_stop`), if an active balance is pending for `cpu`. Default:
    /// none ever is.
    fn active_balance(&mut self, _m: &MachineView, _cpu: CpuId) -> Option<Move> {
        None
    }

    /// Which runqueue lock an operation on `cpu`'s runqueue takes. Per-CPU queues: `cpu`; one
    /// global run list (Linux 2.4): 0 for all. The cost model makes CPUs wait for a held lock.
    /// Fixed for a CPU over a run: the machine asks for every CPU at the start, and if each
    /// has its own lock (the default), does not ask again.
    fn lock_domain(&self, cpu: CpuId) -> usize {
        cpu
    }

    /// The name of runqueue lock `domain` in the lock table (`schedlab run --locks`), as the
    /// kernel calls it: per-CPU queues `rq[N]`; one global lock its own name
    /// (`runqueue_lock`, `sched_lock`).
    fn lock_name(&self, domain: usize) -> String {
        format!("rq[{domain}]")
    }

    /// Whether a wakeup that queues a task for idle `cpu` wakes that CPU at once (an IPI or
    /// the idle loop's poll). False models 4BSD without `kern.sched.ipiwakeup`: the task waits
    /// for the CPU's next clock tick, so a policy returning false must also keep
    /// [`Policy::idle_ticks`].
    fn wakeup_kicks_idle(&self, _cpu: CpuId) -> bool {
        true
    }

    /// Whether idle CPUs keep their periodic tick (kernels before NO_HZ, 2.6.21) — then
    /// [`Policy::balance`] is called from idle CPUs' ticks too.
    fn idle_ticks(&self) -> bool {
        false
    }

    /// Whether a timed sleep (`nanosleep`, the machine's `sleep_until`) ends at a clock tick,
    /// as on the jiffy timer wheel of Linux before 2.6.16's high-resolution timers: 2.6.14's
    /// `sys_nanosleep` sleeps `timespec_to_jiffies(t)` (rounded up) + 1 jiffies from the
    /// current one, and the timer softirq wakes the sleeper at that tick's interrupt exit.
    /// Default: at the time asked for.
    fn jiffy_timers(&self) -> bool {
        false
    }

    /// Whether the preemption just granted by [`Policy::wakeup_preempt`] on `cpu`, the waker's
    /// own CPU, switches *at once*, inside the waker's system call (FreeBSD's `maybe_preempt`
    /// and ULE's `owepreempt`), rather than at the waker's next return to user mode
    /// (NEEDRESCHED, Linux's `need_resched`). Asked right after `wakeup_preempt` returned true
    /// for a local wakeup. Default: at return.
    fn wakeup_preempt_at_once(&self, _cpu: CpuId) -> bool {
        false
    }

    /// Whether loopback TCP/UDP's receive half runs in a software-interrupt thread the waker
    /// wakes (FreeBSD 6/7: `if_simloop` → `netisr_queue` → swi "net") rather than inline in the
    /// sender's system call (Linux: `netif_rx` and the NET_RX softirq run at the sender's
    /// `local_bh_enable`). True makes the machine run a netisr thread of kind
    /// [`TaskKind::Interrupt`]. Default: inline.
    fn loopback_via_netisr(&self) -> bool {
        false
    }

    /// Whether the NET_RX softirq wakes ksoftirqd when it is raised again during its own pass,
    /// as 2.5.22–2.5.30's `do_softirq` did (kernel/softirq.c: a softirq pending at entry may not
    /// restart the loop, `mask = ~pending`; one raised again goes to `wakeup_softirqd`, which
    /// calls `wake_up_process` if ksoftirqd sleeps). True makes the machine run a nice 19
    /// ksoftirqd per CPU of kind [`TaskKind::Kernel`] (`machine/kthreads.rs`). Default: no.
    fn softirq_wakes_ksoftirqd(&self) -> bool {
        false
    }

    /// Whether a device's completion (a disk read or write, a swap-in) wakes the waiting task
    /// through the device's interrupt thread (FreeBSD: the driver's interrupt handler schedules
    /// the ithread, which runs `biodone` → `wakeup`, sys/kern/kern_intr.c and vfs_bio.c) rather
    /// than from the interrupt handler itself (Linux: `end_request` → `wake_up` in hard-interrupt
    /// context). True makes the machine run a disk interrupt thread of kind
    /// [`TaskKind::Interrupt`], so the policy must know that kind. Default: from the handler.
    fn device_interrupt_threads(&self) -> bool {
        false
    }

    /// `from` blocks on a lock that `holder` (queued or running) holds: lend `from`'s priority
    /// to `holder` if it is better (FreeBSD's turnstile priority propagation, `sched_lend_prio`).
    /// The holder keeps it until it next runs to user mode. Default: no priority propagation.
    fn lend_priority(&mut self, _m: &MachineView, _holder: TaskId, _from: TaskId) {}

    /// The machine has this CPU topology (`--topology`; never called on a flat machine), told
    /// once before the first task is made, as the kernel builds its scheduling domains at boot.
    /// Default: the policy ignores it.
    fn set_topology(&mut self, _topology: &crate::topology::Topology) {}
}

/// The policies the simulator knows: one line per policy, each defined in its own file.
pub const POLICIES: &[&PolicyDef] = &[
    &o1::DEF,
    &cfs::DEF,
    &eevdf::DEF,
    &linux24::DEF,
    &linux24_prio::DEF,
    &linux24_mq::DEF,
    &bsd4::DEF,
    &staircase::DEF,
    &ule::DEF,
];

/// Why SCHED_BATCH, SCHED_IDLE and SCHED_DEADLINE mean nothing to an older Linux scheduler.
pub const WHY_NO_BATCH: &str = "SCHED_BATCH, added in Linux 2.6.16";
/// See [`WHY_NO_BATCH`].
pub const WHY_NO_IDLE: &str = "SCHED_IDLE, added in Linux 2.6.23";
/// See [`WHY_NO_BATCH`].
pub const WHY_NO_DEADLINE: &str = "SCHED_DEADLINE, added in Linux 3.14";

/// Why class `p` has no meaning under the Linux scheduler of kernel `version` because the class
/// came later (SCHED_BATCH in 2.6.16, SCHED_IDLE in 2.6.23, SCHED_DEADLINE in 3.14); `None` when
/// that kernel has it.
pub fn missing_linux_class(version: (u32, u32, u32), p: SchedPolicy) -> Option<&'static str> {
    let (since, why) = match p {
        SchedPolicy::Batch => ((2, 6, 16), WHY_NO_BATCH),
        SchedPolicy::Idle => ((2, 6, 23), WHY_NO_IDLE),
        SchedPolicy::Deadline { .. } => ((3, 14, 0), WHY_NO_DEADLINE),
        _ => return None,
    };
    (version < since).then_some(why)
}

/// The knob check of a policy that knows nice, cpus and some scheduling classes but no custom
/// slice: `missing(p)` says why class `p` has no meaning under it (`None`: accepted), `no_slice`
/// why a `slice=` has none. The errors name the group, the value and what is accepted.
pub fn check_class_knobs(
    policy: &str,
    group: &str,
    knobs: &Knobs,
    accepted: &'static str,
    missing: impl Fn(SchedPolicy) -> Option<&'static str>,
    no_slice: &str,
) -> Result<(), PolicyError> {
    if let Some(p) = knobs.policy {
        if let Some(why) = missing(p) {
            return Err(reject_knob(
                policy,
                group,
                &format!("policy={p} ({why})"),
                accepted,
            ));
        }
    }
    if let Some(slice) = knobs.slice() {
        let what = format!(
            "slice={} ({no_slice})",
            schedlab_workload::duration::format_duration(slice)
        );
        return Err(reject_knob(policy, group, &what, accepted));
    }
    Ok(())
}

/// The error for a knob a policy has no notion of: the group, the knob and value (with why),
/// the policy in words and what it accepts.
pub fn reject_knob(policy: &str, group: &str, what: &str, accepted: &'static str) -> PolicyError {
    PolicyError::Knob {
        group: group.to_string(),
        what: what.to_string(),
        policy: policy.to_string(),
        accepted,
    }
}
