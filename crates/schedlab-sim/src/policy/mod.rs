//! The policy trait — the simulator's `struct sched_class` — and the registry of policies.
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
pub mod eevdf;
pub mod fair;
pub mod linux24;
pub mod linux24_mq;
pub mod linux24_prio;
pub mod o1;
mod prio_array;
pub mod staircase;
pub mod ule;

use schedlab_workload::knobs::{Knobs, SchedPolicy};
use std::fmt;

/// A task's index in the simulated machine (the workload's task id).
pub type TaskId = usize;
/// A simulated CPU's index.
pub type CpuId = usize;

/// The most CPUs a simulated machine may have (a CPU set is one `u64`).
pub const MAX_CPUS: usize = 64;

/// A set of CPUs, as a bit mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuMask(pub u64);

impl CpuMask {
    /// CPUs `0..n`.
    pub fn first(n: usize) -> CpuMask {
        CpuMask(if n >= 64 { u64::MAX } else { (1u64 << n) - 1 })
    }
    /// Whether `cpu` is in the set.
    pub fn contains(self, cpu: CpuId) -> bool {
        cpu < 64 && self.0 & (1 << cpu) != 0
    }
    /// The CPUs in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = CpuId> {
        (0..64).filter(move |&c| self.0 & (1 << c) != 0)
    }
    /// The lowest CPU in the set.
    pub fn lowest(self) -> Option<CpuId> {
        (self.0 != 0).then(|| self.0.trailing_zeros() as CpuId)
    }
    /// Number of CPUs in the set.
    pub fn count(self) -> usize {
        self.0.count_ones() as usize
    }
}

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
#[derive(Clone, Copy, Debug)]
pub struct MachineView<'a> {
    /// Simulated time, ns since the run's epoch.
    pub now: u64,
    /// Number of CPUs.
    pub ncpus: usize,
    /// The task running on each CPU (`None`: idle or switching).
    pub curr: &'a [Option<TaskId>],
    /// Runnable tasks (queued + current) on each CPU's runqueue.
    pub nr_running: &'a [usize],
    /// Timer interrupt frequency of the machine's cost profile.
    pub hz: u32,
}

impl MachineView<'_> {
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
    /// It blocked (recv, sleep, lock, I/O).
    Sleep,
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
    /// The policy and its parameters as the user would write them (`o1:threshold=40`).
    fn describe(&self) -> String;

    /// Reject knobs this policy has no notion of (a SCHED_DEADLINE task on O(1), a custom slice
    /// on CFS), with a message naming the group, the value and what the policy accepts.
    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), String>;

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
    fn last_scan_len(&self, _cpu: CpuId) -> usize {
        0
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
    /// Called before every other hook that concerns the current task.
    fn update_curr(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, delta_ns: u64);

    /// Timer tick on `cpu` while `task` runs (`task_tick`); true asks for a reschedule.
    fn task_tick(&mut self, m: &MachineView, cpu: CpuId, task: TaskId) -> bool;

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

    /// Which runqueue lock an operation on `cpu`'s runqueue takes. Per-CPU queues: `cpu`; one
    /// global run list (Linux 2.4): 0 for all. The cost model makes CPUs wait for a held lock.
    fn lock_domain(&self, cpu: CpuId) -> usize {
        cpu
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
}

/// A policy name, its parameters and a one-line summary, for `list` and errors.
pub struct PolicyInfo {
    /// Name on the command line.
    pub name: &'static str,
    /// Parameters as `key=default (meaning)`.
    pub params: &'static [&'static str],
    /// What it models, and from which source.
    pub summary: &'static str,
}

/// The policies the simulator knows.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "o1",
        params: &[
            "threshold=0 (Hartner's preemption threshold: 0 = stock, 40 = no priority preemption among SCHED_OTHER tasks)",
        ],
        summary: "Linux 2.6 O(1): active/expired arrays, sleep_avg bonus, interactivity (2.6.20 kernel/sched.c; seed 000)",
    },
    PolicyInfo {
        name: "cfs",
        params: &[],
        summary: "Linux CFS: weights, vruntime, min/wakeup granularity (2.6.24 sched_fair.c … 6.5 fair.c)",
    },
    PolicyInfo {
        name: "eevdf",
        params: &[
            "run_to_parity=1 (curr keeps the CPU while eligible until its deadline; 6.12 protect_slice)",
            "preempt_short=1 (a waking task with a shorter slice cancels curr's protection; 6.12 PREEMPT_SHORT)",
        ],
        summary: "Linux EEVDF: eligibility, virtual deadlines, custom slices (6.6+ fair.c, sched-eevdf.rst)",
    },
    PolicyInfo {
        name: "linux24",
        params: &[],
        summary: "Linux 2.4: one run list and lock for all CPUs, goodness() over every runnable task, counter recalculation, reschedule_idle (2.4.17 kernel/sched.c; seed 002)",
    },
    PolicyInfo {
        name: "linux24-prio",
        params: &[],
        summary: "Franke & Kravetz's priority-list scheduler for 2.4: the run list split into 33 lists by static goodness, schedule() searches the top one (IBM LTC, Dec 2000; seed 002)",
    },
    PolicyInfo {
        name: "linux24-mq",
        params: &[],
        summary: "IBM multi-queue scheduler for 2.4: per-CPU run lists, cached na_goodness maxima, stealing (Kravetz, LKML 2001-08-08; seed 002)",
    },
    PolicyInfo {
        name: "bsd4",
        params: &[
            "preemption=1 (options PREEMPTION: maybe_preempt switches at once to an interrupt-thread priority, or away from an idle-class thread)",
            "full=0 (options FULL_PREEMPTION: any better priority preempts at once; needs preemption=1)",
            "ipiwakeup=1 (kern.sched.ipiwakeup.enabled: IPI an idle CPU on wakeup; 0 = it finds the thread at its next clock tick)",
        ],
        summary: "FreeBSD 4BSD: estcpu/nice priorities, schedcpu decay, one global run queue, 100 ms quantum (sched_4bsd.c, FreeBSD 6/7; seed 001)",
    },
    PolicyInfo {
        name: "staircase",
        params: &[
            "interactive=1 (the sysctl: a task's best stair rises with its sleep/run ratio; 0 = nice alone sets it)",
            "compute=0 (the sysctl: 20x longer rr intervals, no bonus, wakeup preemption delayed ~10 ms)",
        ],
        summary: "Con Kolivas's staircase v13: one priority array, one stair down per rr interval, bonus from CPU share (2.6.14-ck, LKML 2005-11-10; seed 004)",
    },
    PolicyInfo {
        name: "ule",
        params: &[
            "preemption=1 (options PREEMPTION: preempt_thresh = PRI_MIN_KERN, a wakeup at a kernel priority ≤ 64 switches at once; 0 = preempt_thresh 0)",
            "full=0 (options FULL_PREEMPTION: preempt_thresh = 255, any better priority switches at once; needs preemption=1)",
        ],
        summary: "FreeBSD ULE: per-CPU queues, interactivity score from sleep/run history, timeshare calendar queue, idle stealing and balancing (sched_ule.c, FreeBSD 7; seed 001)",
    },
];

/// A parsed `--policy NAME[:key=value,...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySpec {
    /// Policy name.
    pub name: String,
    /// Parameters in the order given.
    pub params: Vec<(String, String)>,
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.params.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

impl std::str::FromStr for PolicySpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        if !POLICIES.iter().any(|p| p.name == name) {
            return Err(format!(
                "--policy '{s}': unknown policy '{name}'; the simulator knows {}",
                POLICIES
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut params = Vec::new();
        for kv in rest.split(',').filter(|kv| !kv.is_empty()) {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!(
                    "--policy '{s}': '{kv}' is not key=value (e.g. o1:threshold=40)"
                ));
            };
            params.push((k.to_string(), v.to_string()));
        }
        let spec = PolicySpec {
            name: name.to_string(),
            params,
        };
        build(&spec)?; // checks the parameters
        Ok(spec)
    }
}

/// Look up a parameter, parse it and check its range; the error names the value and the range.
pub fn param<T>(spec: &PolicySpec, key: &str, default: T, accepted: &str) -> Result<T, String>
where
    T: std::str::FromStr,
{
    match spec.params.iter().rev().find(|(k, _)| k == key) {
        None => Ok(default),
        Some((_, v)) => v
            .parse()
            .map_err(|_| format!("--policy {spec}: {key}={v} is not accepted; use {accepted}")),
    }
}

/// Reject parameters a policy does not have.
pub fn only_params(spec: &PolicySpec, known: &[&str]) -> Result<(), String> {
    for (k, _) in &spec.params {
        if !known.contains(&k.as_str()) {
            return Err(format!(
                "--policy {spec}: policy '{}' has no parameter '{k}'; its parameters: {}",
                spec.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    Ok(())
}

/// Build a fresh policy object from its spec (one per repetition).
pub fn build(spec: &PolicySpec) -> Result<Box<dyn Policy>, String> {
    Ok(match spec.name.as_str() {
        "o1" => Box::new(o1::O1::from_spec(spec)?),
        "cfs" => Box::new(cfs::Cfs::from_spec(spec)?),
        "eevdf" => Box::new(eevdf::Eevdf::from_spec(spec)?),
        "linux24" => Box::new(linux24::Linux24::from_spec(spec)?),
        "linux24-prio" => Box::new(linux24_prio::Linux24Prio::from_spec(spec)?),
        "linux24-mq" => Box::new(linux24_mq::Linux24Mq::from_spec(spec)?),
        "bsd4" => Box::new(bsd4::Bsd4::from_spec(spec)?),
        "staircase" => Box::new(staircase::Staircase::from_spec(spec)?),
        "ule" => Box::new(ule::Ule::from_spec(spec)?),
        other => return Err(format!("unknown policy '{other}'")),
    })
}

/// Why SCHED_BATCH, SCHED_IDLE and SCHED_DEADLINE mean nothing to an older Linux scheduler.
pub const WHY_NO_BATCH: &str = "SCHED_BATCH, added in Linux 2.6.16";
/// See [`WHY_NO_BATCH`].
pub const WHY_NO_IDLE: &str = "SCHED_IDLE, added in Linux 2.6.23";
/// See [`WHY_NO_BATCH`].
pub const WHY_NO_DEADLINE: &str = "SCHED_DEADLINE, added in Linux 3.14";

/// The knob check of a policy that knows nice, cpus and some scheduling classes but no custom
/// slice: `missing(p)` says why class `p` has no meaning under it (`None`: accepted), `no_slice`
/// why a `slice=` has none. The errors name the group, the value and what is accepted.
pub fn check_class_knobs(
    policy: &str,
    group: &str,
    knobs: &Knobs,
    accepted: &str,
    missing: impl Fn(SchedPolicy) -> Option<&'static str>,
    no_slice: &str,
) -> Result<(), String> {
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

/// Reject any knob other than nice for a policy that knows only nice (and say which it knows).
pub fn reject_knob(policy: &str, group: &str, what: &str, accepted: &str) -> String {
    format!("group '{group}': {what} has no meaning under the simulated {policy}; it accepts {accepted}")
}
