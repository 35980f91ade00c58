//! The model every workload file is read into, whichever its grammar (schedlab's TOML, rt-app's
//! JSON): parameters, task groups with a body of steps, channels, locks, barriers, semaphores and
//! condition variables, and the metrics the file reports. Every element keeps the span it came
//! from, so that a fault found later (a reference to nothing, a unit that does not fit) is
//! reported at its place in the file.

use crate::expr::{Expr, Quantity};
use crate::span::{Span, Spanned};
use schedlab_workload::plan::LockKind;
use schedlab_workload::IoKind;
use std::path::PathBuf;

/// A whole workload file.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptDef {
    /// The workload's name (the file's `name`, or its stem).
    pub name: String,
    /// What it is, one line (`description`).
    pub description: String,
    /// The file it came from.
    pub path: PathBuf,
    /// The file's text, for `file:line:column` of faults found after reading.
    pub text: String,
    /// Which grammar it was read with.
    pub grammar: Grammar,
    /// Parameters with defaults, set by `--set NAME=VALUE` and `sweep --vary NAME=...`.
    pub params: Vec<ParamSpec>,
    /// Task groups, in order: task ids are assigned group by group.
    pub groups: Vec<GroupSpec>,
    /// Message channels (each an array of `count` channels).
    pub channels: Vec<ChannelSpec>,
    /// Locks (each an array), with their kinds.
    pub locks: Vec<LockSpec>,
    /// Barriers (each an array), with their parties.
    pub barriers: Vec<BarrierSpec>,
    /// Semaphores (each an array), with their initial counts.
    pub semaphores: Vec<SemaphoreSpec>,
    /// Condition variables (each an array).
    pub conds: Vec<ObjectSpec>,
    /// How channels are carried on the real backend (`pipe`, `socketpair`, `unix`, `tcp`,
    /// `udp`, or `$param`); default socketpair.
    pub transport: Option<Spanned<String>>,
    /// How tasks are hosted on the real backend (`threads`, `processes`, or `$param`); default
    /// threads.
    pub tasks: Option<Spanned<String>>,
    /// The order tasks are created and released in, when not group by group.
    pub start: Option<StartOrder>,
    /// The metrics reported and the primary one.
    pub metrics: MetricsSpec,
    /// What rt-app's per-task logs need of an rt-app file's `global` (`None` for a TOML file).
    pub rtapp_log: Option<RtAppLog>,
    /// When every task stops, from the run's start (an rt-app file's global `duration`: rt-app
    /// stops every thread then, wherever it is); `None`: tasks run to their own end.
    pub ends_at: Option<std::time::Duration>,
    /// How `compute` steps (rt-app's `run`) spend their amount: `cpu-time` (the default) or
    /// `loops` ([`ComputeAs`]), or `$param`.
    pub compute_as: Option<Spanned<String>>,
    /// The busy loop's calibration when `compute` runs as loops (rt-app's `calibration`;
    /// by default measured on CPU 0, as rt-app does).
    pub loop_calibration: schedlab_workload::LoopCalibration,
    /// What a `compute` step's amount is: `each` (the default) or `cumulative`
    /// ([`Computes`]), or `$param`; a TOML file's top-level `computes`.
    pub computes: Option<Spanned<String>>,
    /// What was accepted but has no effect (rt-app keys with no meaning here, repeated keys),
    /// one each, at its place; the binary prints them before the run.
    pub warnings: Vec<crate::error::Diagnostic>,
    /// What has no effect only while `compute` steps are CPU time ([`ComputeAs::CpuTime`]):
    /// rt-app's `calibration`, which only a loop count uses. The binary prints them before a
    /// run of which some configuration computes as CPU time.
    pub cpu_time_warnings: Vec<crate::error::Diagnostic>,
}

/// How a `compute` step spends its amount ([`ScriptDef::compute_as`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComputeAs {
    /// That much CPU time of the task (`Context::compute`).
    #[default]
    CpuTime,
    /// rt-app's `run`: the count of busy-loop iterations a calibration at the run's start says
    /// take that long (`Context::compute_loops`).
    Loops,
}

impl std::str::FromStr for ComputeAs {
    type Err = schedlab_workload::ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu-time" => Ok(ComputeAs::CpuTime),
            "loops" => Ok(ComputeAs::Loops),
            _ => Err(schedlab_workload::ValueError::new(format!(
                "run-as '{s}' is not known; use cpu-time or loops"
            ))),
        }
    }
}

/// What a `compute` step's amount is ([`ScriptDef::computes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Computes {
    /// That much CPU time, the task's other steps costing their own beside it.
    #[default]
    Each,
    /// The task's CPU time, its other steps' own included: on the real kernel each compute
    /// runs until the task has used, since its start, the sum of its computes so far
    /// (`Context::compute_to_total`), so that what its posts, waits, sleeps, sends and receives
    /// cost comes off its next compute. A recorded program's computes are such: the kernel
    /// charged the program's own calls to them.
    Cumulative,
}

impl std::str::FromStr for Computes {
    type Err = schedlab_workload::ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "each" => Ok(Computes::Each),
            "cumulative" => Ok(Computes::Cumulative),
            _ => Err(schedlab_workload::ValueError::new(format!(
                "computes '{s}' is not known; use each or cumulative"
            ))),
        }
    }
}

/// The settings of rt-app's per-task logs an rt-app file gives in `global`
/// (`crate::rtapp_log` writes the logs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtAppLog {
    /// `log_basename`: the logs are `BASENAME-TASK-INDEX.log` (rt-app's default `rt-app`).
    pub basename: String,
    /// `calibration`: the `perf` column counts the loops of rt-app's busy loop that `run` takes
    /// at its ns per loop — given, or measured on the real kernel when the run keeps the logs
    /// (`schedlab_workload::Workload::rt_app_log_calibration`).
    pub calibration: schedlab_workload::LoopCalibration,
    /// `cumulative_slack`: a pass's slack sums its timers' instead of keeping the last.
    pub cumulative_slack: bool,
}

impl Default for RtAppLog {
    fn default() -> RtAppLog {
        RtAppLog {
            basename: "rt-app".into(),
            calibration: schedlab_workload::LoopCalibration::Measure { cpu: 0 },
            cumulative_slack: false,
        }
    }
}

/// One knob of a `set` step or a group: its name and its value, each with its place.
pub type KnobPair = (Spanned<String>, Spanned<String>);

/// Which grammar a file was read with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grammar {
    /// schedlab's TOML step language (docs/workload-files.md).
    Toml,
    /// rt-app's JSON grammar (rt-app's doc/tutorial.txt).
    RtApp,
}

/// A parameter of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    /// Its name (an expression refers to it by this name, `--set NAME=` sets it).
    pub name: Spanned<String>,
    /// Its default, which also fixes its kind.
    pub default: ParamValue,
    /// Where the default is.
    pub default_span: Span,
    /// What it means (`help`), shown by `schedlab list FILE` and `--help`.
    pub help: String,
    /// For a text parameter, the values it accepts (empty: any).
    pub choices: Vec<String>,
}

/// A parameter's value.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// A number, a duration or a size.
    Number(Quantity),
    /// A word (a transport, a hosting, a mode); referred to as `$name` where a word is expected.
    Text(String),
}

/// A task group: `count` tasks, each running `body`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSpec {
    /// Its name (`--group NAME:...`, `sweep --vary NAME.nice=...`).
    pub name: Spanned<String>,
    /// How many tasks (an expression of the parameters).
    pub count: Expr,
    /// Knobs as `--group` takes them (`nice`, `policy`, `slice`, `cpus`), each `(key, value)`
    /// with the value's span.
    pub knobs: Vec<(Spanned<String>, Spanned<String>)>,
    /// Whether its tasks wait, parked, until another task's `spawn` step starts each of them
    /// (rt-app's `fork`); otherwise they start with the run.
    pub spawned: bool,
    /// Of a `spawned` group, how many of its `count` tasks start with the run rather than
    /// parked (rt-app's `instance` of a task some `fork` also starts: upstream rt-app starts
    /// those with the use case, and each fork one more). `None`: none.
    pub with_run: Option<Expr>,
    /// How many tasks `spawn` steps may fork into the group during the run, beyond its `count`
    /// (an expression of the parameters; a bound, checked before anything runs). `None`: the
    /// group is not spawnable.
    pub spawn: Option<Expr>,
    /// The steps each task runs, once.
    pub body: Vec<Step>,
    /// The whole group's span.
    pub span: Span,
}

/// A named array of objects (locks, condition variables).
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectSpec {
    /// Its name.
    pub name: Spanned<String>,
    /// How many (an array; `name[i]` refers to one); `None`: one, referred to as `name`.
    pub count: Option<Expr>,
}

/// A lock array and how its waiters wait (`kind = "spin"` or the default `"sleep"`).
#[derive(Clone, Debug, PartialEq)]
pub struct LockSpec {
    /// Name and count.
    pub object: ObjectSpec,
    /// Sleeping (a futex mutex) or spinning.
    pub kind: LockKind,
}

/// A message channel array: many writers, one reader per channel.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelSpec {
    /// Name and count.
    pub object: ObjectSpec,
    /// The groups that may send on it (empty: any that does).
    pub writers: Vec<Spanned<String>>,
    /// The groups that may receive from it (empty: any that does).
    pub readers: Vec<Spanned<String>>,
}

/// A barrier array.
#[derive(Clone, Debug, PartialEq)]
pub struct BarrierSpec {
    /// Name and count.
    pub object: ObjectSpec,
    /// How many tasks each barrier waits for; `None`: every task of every group whose body
    /// uses it.
    pub parties: Option<Expr>,
}

/// A semaphore array.
#[derive(Clone, Debug, PartialEq)]
pub struct SemaphoreSpec {
    /// Name and count.
    pub object: ObjectSpec,
    /// Initial count of each (default 0).
    pub initial: Option<Expr>,
}

/// The order tasks are created in: `chunk` tasks of each named group in turn (hackbench creates
/// each group's receivers, then its senders).
#[derive(Clone, Debug, PartialEq)]
pub struct StartOrder {
    /// The groups, in the order their chunks are taken; every group of the file once.
    pub groups: Vec<Spanned<String>>,
    /// Tasks per turn.
    pub chunk: Expr,
    /// Where it is.
    pub span: Span,
}

/// Which metrics the file reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsSpec {
    /// The primary metric (what `--until`, `compare` and `sweep` look at first); default `time`.
    pub primary: Option<Spanned<String>>,
    /// The metrics shown, in order (default: every metric the file produces).
    pub show: Vec<Spanned<String>>,
    /// Metrics computed from the others (`us_per_yield = cpu / yields * 1e6`).
    pub derived: Vec<DerivedMetric>,
}

/// A metric computed from the file's other metrics after each repetition.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedMetric {
    /// Its name.
    pub name: Spanned<String>,
    /// How it is computed: an expression of metric names (those that are names: `time`,
    /// `messages`, a timer, a count, `C_per_s`) and `cpu`, the CPU seconds of all tasks.
    pub value: Expr,
    /// Its unit, for display (`us`).
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// What it means.
    pub help: String,
}

/// A reference to a channel, lock, barrier, semaphore or condition: `name` or `name[expr]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectRef {
    /// The array's name.
    pub name: Spanned<String>,
    /// The element; `None` for element 0 of a one-element array.
    pub index: Option<Expr>,
}

/// How long a `compute` or `sleep` takes: fixed, or drawn from a seeded distribution per step.
#[derive(Clone, Debug, PartialEq)]
pub enum Amount {
    /// Always this.
    Fixed(Expr),
    /// Uniform between `low` and `high`.
    Uniform {
        /// Lower bound.
        low: Expr,
        /// Upper bound.
        high: Expr,
    },
    /// Exponential with this mean.
    Exponential {
        /// Mean.
        mean: Expr,
    },
    /// Normal with this mean and standard deviation, clamped at zero.
    Normal {
        /// Mean.
        mean: Expr,
        /// Standard deviation.
        sd: Expr,
    },
    /// Log-normal with this mean and standard deviation (of the value, not its logarithm).
    LogNormal {
        /// Mean.
        mean: Expr,
        /// Standard deviation.
        sd: Expr,
    },
}

/// One step of a body.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What it does.
    pub kind: StepKind,
    /// Where it is.
    pub span: Span,
}

/// What a step does.
#[derive(Clone, Debug, PartialEq)]
pub enum StepKind {
    /// Use this much CPU time.
    Compute(Amount),
    /// Stay on the CPU until this much wall time has passed (rt-app's `runtime`).
    Busy(Expr),
    /// Sleep.
    Sleep(Amount),
    /// Wait for the next activation of periodic timer `timer` (first activation: the first
    /// time the step runs), then go on. Accounted as interbench does: the latency of each
    /// wake-up, periods missed entirely, and whether the work between two activations ended
    /// before the deadline.
    Period {
        /// The timer's name; its metrics are `NAME.latency`, `NAME.max_latency`,
        /// `NAME.deadlines_met`, `NAME.missed`.
        timer: Spanned<String>,
        /// The period.
        every: Expr,
        /// The relative deadline (default: the period).
        deadline: Option<Expr>,
    },
    /// Send one message of `size` bytes.
    Send {
        /// Where.
        channel: ObjectRef,
        /// Bytes (at least 8: each message carries its sender and sequence number, and the
        /// receiver checks them).
        size: Expr,
    },
    /// Receive one message of `size` bytes.
    Recv {
        /// From where.
        channel: ObjectRef,
        /// Bytes.
        size: Expr,
    },
    /// Take a lock.
    Lock(ObjectRef),
    /// Release a lock this task holds.
    Unlock(ObjectRef),
    /// Wait at a barrier.
    Barrier(ObjectRef),
    /// Post a semaphore.
    SemPost(ObjectRef),
    /// Wait on a semaphore.
    SemWait(ObjectRef),
    /// Wait on a condition with a held lock.
    CondWait {
        /// The condition.
        cond: ObjectRef,
        /// The lock held (released while waiting).
        lock: ObjectRef,
    },
    /// Wake one waiter of a condition.
    CondSignal(ObjectRef),
    /// Wake every waiter of a condition.
    CondBroadcast(ObjectRef),
    /// Give up the CPU (sched_yield).
    Yield,
    /// Change the task's own scheduling attributes from here on (rt-app's per-phase `cpus`,
    /// `policy`, `priority`): knobs as a group's (`nice`, `policy`, `slice`, `cpus`), each
    /// `(key, value)` with the value's span; a knob not given is unchanged, and `cpus = "all"`
    /// allows every CPU of the machine again.
    Set(Vec<KnobPair>),
    /// Read or write the task's scratch file.
    Io {
        /// Read, write, or truncate.
        kind: IoKind,
        /// Bytes.
        bytes: Expr,
    },
    /// Write to this much memory, page by page.
    Touch(Expr),
    /// Read or write a buffer byte by byte, or chase pointers through it (rt-app's `memrun`).
    MemAccess(schedlab_workload::MemAccess),
    /// Fork a new task of a spawnable group (one with a `spawn` bound), or start the next
    /// parked task of a `spawned` group.
    Spawn(Spanned<String>),
    /// Wait until one of the task's spawned children has ended, and reap it (wait(2)).
    WaitChild,
    /// End the task here (exit(2)); its children not waited for are left to the backend.
    Exit,
    /// Repeat `body`.
    Loop {
        /// How often: a plain number is a count of passes; a duration runs passes until that
        /// much time has passed since the loop began (checked before each pass).
        repeat: Expr,
        /// The pass number's name (0, 1, …) for expressions inside, if given.
        var: Option<Spanned<String>>,
        /// The steps.
        body: Vec<Step>,
    },
    /// Run `body` and record its wall time as a sample of metric `name`.
    Timed {
        /// The timer's name (metrics `NAME` and `NAME.max`).
        name: Spanned<String>,
        /// The steps timed.
        body: Vec<Step>,
    },
    /// Add `by` to count `name` (metrics `NAME` and `NAME_per_s`).
    Count {
        /// The count's name.
        name: Spanned<String>,
        /// How much (default 1).
        by: Expr,
    },
}
