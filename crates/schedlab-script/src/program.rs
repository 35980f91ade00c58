//! A workload file compiled for one configuration: the plan, and per group a flat list of
//! instructions whose expressions are compiled ([`crate::expr::Compiled`]). Loops are jumps, so
//! the interpreter ([`crate::interp`]) runs a body without recursion or allocation per step.

use crate::expr::Compiled;
use schedlab_workload::{IoKind, Plan};

/// The largest message: one write of up to a page is atomic on pipes and UNIX sockets, so
/// senders sharing a channel never interleave their bytes.
pub const MAX_MESSAGE: u64 = 4096;

/// How long a `compute` or `sleep` takes, compiled (seconds).
#[derive(Clone, Debug, PartialEq)]
pub enum CAmount {
    /// Always this.
    Fixed(Compiled),
    /// Uniform in `[low, high)`.
    Uniform(Compiled, Compiled),
    /// Exponential with this mean.
    Exponential(Compiled),
    /// Normal (mean, sd), clamped at zero.
    Normal(Compiled, Compiled),
    /// Log-normal with this mean and standard deviation of the value.
    LogNormal(Compiled, Compiled),
}

impl CAmount {
    /// Whether it draws from a distribution.
    pub fn is_random(&self) -> bool {
        !matches!(self, CAmount::Fixed(_))
    }
}

/// A reference to one element of an object array: `base + index`, checked against `len`.
#[derive(Clone, Debug, PartialEq)]
pub struct CRef {
    /// Id of element 0 in the plan.
    pub base: usize,
    /// Elements in the array.
    pub len: usize,
    /// The element (none: 0).
    pub index: Option<Compiled>,
    /// The element as `slot + offset`, when `index` has that form with a whole offset (a loop
    /// variable plus a constant, once a task's index is folded in): read without evaluating an
    /// expression. The slots expressions read (`index`, `from`, loop variables) hold whole
    /// numbers.
    pub affine: Option<(usize, i64)>,
    /// The array's name, for errors.
    pub name: &'static str,
}

impl CAmount {
    fn with_slot(&self, slot: usize, v: f64) -> CAmount {
        match self {
            CAmount::Fixed(c) => CAmount::Fixed(c.with_slot(slot, v)),
            CAmount::Uniform(a, b) => CAmount::Uniform(a.with_slot(slot, v), b.with_slot(slot, v)),
            CAmount::Exponential(m) => CAmount::Exponential(m.with_slot(slot, v)),
            CAmount::Normal(m, s) => CAmount::Normal(m.with_slot(slot, v), s.with_slot(slot, v)),
            CAmount::LogNormal(m, s) => {
                CAmount::LogNormal(m.with_slot(slot, v), s.with_slot(slot, v))
            }
        }
    }
}

impl CRef {
    fn with_slot(&self, slot: usize, v: f64) -> CRef {
        let index = self.index.as_ref().map(|c| c.with_slot(slot, v));
        // A constant element in range needs no evaluation while running.
        if let Some(i) = index.as_ref().and_then(Compiled::constant) {
            if let Some(w) = crate::expr::whole(i).filter(|w| *w >= 0 && (*w as usize) < self.len) {
                return CRef {
                    base: self.base + w as usize,
                    len: 1,
                    index: None,
                    affine: None,
                    name: self.name,
                };
            }
        }
        CRef {
            affine: index.as_ref().and_then(affine),
            index,
            ..self.clone()
        }
    }
}

/// `slot + offset` if `c` has that form with a whole offset.
pub fn affine(c: &Compiled) -> Option<(usize, i64)> {
    use crate::expr::{whole, BinOp};
    match c {
        Compiled::Slot(s) => Some((*s, 0)),
        Compiled::Bin(BinOp::Add, a, b) => match (&**a, &**b) {
            (Compiled::Slot(s), Compiled::Const(k)) | (Compiled::Const(k), Compiled::Slot(s)) => {
                Some((*s, whole(*k)?))
            }
            _ => None,
        },
        Compiled::Bin(BinOp::Sub, a, b) => match (&**a, &**b) {
            (Compiled::Slot(s), Compiled::Const(k)) => Some((*s, -whole(*k)?)),
            _ => None,
        },
        _ => None,
    }
}

/// A message size known in advance: `size` as a whole number of bytes in range, else 0 (then
/// it is evaluated and checked for every message).
pub fn fixed_bytes(size: &Compiled) -> usize {
    size.constant()
        .and_then(crate::expr::whole)
        .filter(|b| (1..=MAX_MESSAGE as i64).contains(b))
        .map_or(0, |b| b as usize)
}

/// One instruction of a compiled body.
#[derive(Clone, Debug, PartialEq)]
pub enum Instr {
    /// Use CPU time.
    Compute(CAmount),
    /// Stay on the CPU for wall time.
    Busy(Compiled),
    /// Sleep.
    Sleep(CAmount),
    /// Wait for the next activation of periodic timer `timer`.
    Period {
        /// Index into the program's periods.
        timer: usize,
        /// Period (s).
        every: Compiled,
        /// Relative deadline (s).
        deadline: Compiled,
    },
    /// Send one message.
    Send {
        /// The channel.
        chan: CRef,
        /// Bytes.
        size: Compiled,
        /// `size` when it is known in advance (see [`fixed_bytes`]), else 0.
        bytes: usize,
    },
    /// Receive one message.
    Recv {
        /// The channel.
        chan: CRef,
        /// Bytes.
        size: Compiled,
        /// `size` when it is known in advance, else 0.
        bytes: usize,
    },
    /// Take a lock.
    Lock(CRef),
    /// Release a lock.
    Unlock(CRef),
    /// Wait at a barrier.
    Barrier(CRef),
    /// Post a semaphore.
    SemPost(CRef),
    /// Wait on a semaphore.
    SemWait(CRef),
    /// Wait on a condition, releasing and re-taking a lock.
    CondWait {
        /// The condition.
        cond: CRef,
        /// The lock.
        lock: CRef,
    },
    /// Signal a condition.
    CondSignal(CRef),
    /// Broadcast a condition.
    CondBroadcast(CRef),
    /// sched_yield.
    Yield,
    /// Change the task's own attributes ([`schedlab_workload::Context::set_attrs`]).
    Set(Box<AttrChange>),
    /// Scratch-file I/O.
    Io {
        /// Read, write or truncate.
        kind: IoKind,
        /// Bytes.
        bytes: Compiled,
    },
    /// Dirty memory.
    Touch(Compiled),
    /// Read, write or chase a buffer ([`schedlab_workload::Context::access_memory`]).
    MemAccess(Box<schedlab_workload::MemAccess>),
    /// Fork a new task of a spawnable group ([`schedlab_workload::Context::spawn`]).
    Fork {
        /// The group's index.
        group: usize,
    },
    /// Reap one ended child ([`schedlab_workload::Context::wait`] for any).
    WaitChild,
    /// End the task.
    Exit,
    /// Post the start semaphore of a spawned group.
    Spawn {
        /// The group's start semaphore.
        semaphore: usize,
    },
    /// Begin a loop: set its counter, or skip to after `end` if it runs no pass.
    LoopBegin {
        /// Passes (a count) or time (s).
        repeat: Compiled,
        /// Whether `repeat` is a duration.
        timed: bool,
        /// Slot holding the passes left, or the loop's end time (s since the epoch).
        counter: usize,
        /// Slot of the pass number, if the loop names it.
        var: Option<usize>,
        /// Index of the matching `LoopEnd`.
        end: usize,
    },
    /// End of a loop's body: go back to after `begin` while passes are left.
    LoopEnd {
        /// Index of the matching `LoopBegin`.
        begin: usize,
        /// The loop's counter slot, as in its `LoopBegin`.
        counter: usize,
        /// The loop's pass-number slot, as in its `LoopBegin`.
        var: Option<usize>,
        /// Whether the loop is timed, as in its `LoopBegin`.
        timed: bool,
    },
    /// Start timing: remember the time in `slot`.
    TimedBegin {
        /// Slot.
        slot: usize,
    },
    /// Stop timing and record the sample.
    TimedEnd {
        /// Index into the program's timers.
        timer: usize,
        /// Slot holding the start time.
        slot: usize,
    },
    /// Add to a count.
    Count {
        /// Index into the program's counts.
        count: usize,
        /// How much.
        by: Compiled,
    },
}

/// What a `set` step changes: the knobs it gives (the others stay), and whether it allows
/// every CPU of the machine again (`cpus = "all"`).
#[derive(Clone, Debug, PartialEq)]
pub struct AttrChange {
    /// The knobs given.
    pub knobs: schedlab_workload::knobs::Knobs,
    /// `cpus = "all"`.
    pub all_cpus: bool,
}

impl Instr {
    /// This instruction with frame slot `slot` fixed at `v` (a task's index), its expressions
    /// folded.
    pub fn with_slot(&self, slot: usize, v: f64) -> Instr {
        let e = |c: &Compiled| c.with_slot(slot, v);
        match self {
            Instr::Compute(a) => Instr::Compute(a.with_slot(slot, v)),
            Instr::Busy(c) => Instr::Busy(e(c)),
            Instr::Sleep(a) => Instr::Sleep(a.with_slot(slot, v)),
            Instr::Period {
                timer,
                every,
                deadline,
            } => Instr::Period {
                timer: *timer,
                every: e(every),
                deadline: e(deadline),
            },
            Instr::Send { chan, size, .. } => {
                let size = e(size);
                Instr::Send {
                    chan: chan.with_slot(slot, v),
                    bytes: fixed_bytes(&size),
                    size,
                }
            }
            Instr::Recv { chan, size, .. } => {
                let size = e(size);
                Instr::Recv {
                    chan: chan.with_slot(slot, v),
                    bytes: fixed_bytes(&size),
                    size,
                }
            }
            Instr::Lock(r) => Instr::Lock(r.with_slot(slot, v)),
            Instr::Unlock(r) => Instr::Unlock(r.with_slot(slot, v)),
            Instr::Barrier(r) => Instr::Barrier(r.with_slot(slot, v)),
            Instr::SemPost(r) => Instr::SemPost(r.with_slot(slot, v)),
            Instr::SemWait(r) => Instr::SemWait(r.with_slot(slot, v)),
            Instr::CondWait { cond, lock } => Instr::CondWait {
                cond: cond.with_slot(slot, v),
                lock: lock.with_slot(slot, v),
            },
            Instr::CondSignal(r) => Instr::CondSignal(r.with_slot(slot, v)),
            Instr::CondBroadcast(r) => Instr::CondBroadcast(r.with_slot(slot, v)),
            Instr::Io { kind, bytes } => Instr::Io {
                kind: *kind,
                bytes: e(bytes),
            },
            Instr::Touch(c) => Instr::Touch(e(c)),
            Instr::MemAccess(a) => Instr::MemAccess(a.clone()),
            Instr::LoopBegin {
                repeat,
                timed,
                counter,
                var,
                end,
            } => Instr::LoopBegin {
                repeat: e(repeat),
                timed: *timed,
                counter: *counter,
                var: *var,
                end: *end,
            },
            Instr::Count { count, by } => Instr::Count {
                count: *count,
                by: e(by),
            },
            other => other.clone(),
        }
    }
}

/// One compiled task group.
#[derive(Clone, Debug, PartialEq)]
pub struct CGroup {
    /// Its name.
    pub name: &'static str,
    /// Its tasks when the run starts.
    pub tasks: usize,
    /// How many more tasks `spawn` steps may fork into it (a bound; 0: not spawnable).
    pub spawn: usize,
    /// Task id of its first task.
    pub first: usize,
    /// Its body.
    pub body: Vec<Instr>,
    /// Frame slots its body uses (slot 0 is the task's index).
    pub slots: usize,
    /// The start semaphore of a spawned group (its tasks wait on it first).
    pub start_semaphore: Option<usize>,
    /// Of a spawned group, how many of its first tasks start with the run without waiting on
    /// the start semaphore (the rest wait for a spawn each).
    pub with_run: usize,
}

/// Names of the samples a periodic timer records.
#[derive(Clone, Debug, PartialEq)]
pub struct PeriodNames {
    /// The timer's name.
    pub name: &'static str,
    /// Sample key: latency of each activation (s).
    pub latency: &'static str,
    /// Sample key: deadlines met, once per task.
    pub met: &'static str,
    /// Sample key: deadlines missed (including periods missed), once per task.
    pub late: &'static str,
    /// Sample key: periods missed entirely, once per task.
    pub missed: &'static str,
}

/// A derived metric, compiled: its expression reads `inputs[i]` from slot `i`.
#[derive(Clone, Debug, PartialEq)]
pub struct CDerived {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: Compiled,
    /// The metric (or `cpu`) each slot of `value` reads.
    pub inputs: Vec<String>,
    /// Unit, for display.
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// What it means (the file's `help`, or its expression).
    pub help: String,
}

/// One step's share of [`Program::memory`]: what it makes its tasks hold, for an error that
/// names what the file asked when the machine cannot afford it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryStep {
    /// The group whose tasks run it.
    pub group: usize,
    /// The step's place in the file.
    pub span: crate::span::Span,
    /// What the step asks (`touch 8388608 B`, `read 1 of 1073741824 B`).
    pub what: String,
    /// The most one holder keeps (bytes).
    pub bytes: u64,
    /// How many keep memory for it: the group's tasks that run it, or 1 for a buffer the
    /// whole run shares.
    pub holders: u64,
    /// What they keep in all (bytes).
    pub total: u64,
}

/// A workload file compiled for one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// What the backend builds.
    pub plan: Plan,
    /// Groups, in plan order.
    pub groups: Vec<CGroup>,
    /// Task ids in creation order.
    pub start_order: Vec<usize>,
    /// Timers (`timer` steps): sample keys.
    pub timers: Vec<&'static str>,
    /// Counts (`count` steps): sample keys.
    pub counts: Vec<&'static str>,
    /// Periodic timers (`period` steps).
    pub periods: Vec<PeriodNames>,
    /// Metrics computed from the others.
    pub derived: Vec<CDerived>,
    /// Whether any task receives messages.
    pub receives: bool,
    /// Whether an expression uses `from` (the interpreter then tracks each message's sender).
    pub uses_from: bool,
    /// Messages one repetition delivers, when the file fixes it (no timed loop around a send
    /// or receive).
    pub expected_messages: Option<u64>,
    /// The seed of the file's distributions.
    pub seed: u64,
    /// A generous bound on one repetition's wall time.
    pub expected_time: std::time::Duration,
    /// Memory the tasks write, at most (bytes).
    pub memory: u64,
    /// The steps that make up [`Program::memory`], the largest share first.
    pub memory_steps: Vec<MemoryStep>,
    /// Scratch-file bytes the tasks hold, at most.
    pub files: u64,
    /// rt-app's log settings, for an rt-app file: its phase passes (`Timed` steps) are then
    /// logged as rt-app logs them, when the run keeps pass rows.
    pub rtapp_log: Option<crate::model::RtAppLog>,
    /// When every task stops, epoch-relative (an rt-app file's global `duration`; also the
    /// plan's [`schedlab_workload::SyncPlan::wait_end`]).
    pub ends_at: Option<std::time::Duration>,
    /// When `compute` steps run as calibrated busy loops (`run-as=loops`), the loop's
    /// calibration; `None`: they are CPU time.
    pub loops: Option<schedlab_workload::LoopCalibration>,
    /// Whether `compute` steps are cumulative ([`crate::model::Computes::Cumulative`]): each
    /// runs until the task's CPU time reaches the sum of its computes so far.
    pub cumulative: bool,
}

impl Program {
    /// The group a task id belongs to, and its index there: a task the run starts with, or
    /// one a spawn step forked ([`schedlab_workload::Plan::spawn_slots`]'s places).
    pub fn locate(&self, id: usize) -> (usize, usize) {
        let mut slot = id.checked_sub(self.plan.total_tasks());
        if let Some(k) = slot.as_mut() {
            for (g, group) in self.groups.iter().enumerate() {
                if *k < group.spawn {
                    return (g, group.tasks + *k);
                }
                *k -= group.spawn;
            }
        }
        let g = self
            .groups
            .partition_point(|g| g.first + g.tasks <= id)
            .min(self.groups.len() - 1);
        (g, id - self.groups[g].first)
    }
}
