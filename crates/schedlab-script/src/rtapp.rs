//! rt-app's JSON grammar, read into the workload [`model`](crate::model).
//!
//! rt-app (github.com/scheduler-tools/rt-app) describes a use case as JSON: a `global` object,
//! a `tasks` object of threads, each a sequence of *events* (`run`, `sleep`, `timer`, `lock`, …)
//! either directly in the task or in ordered `phases`, and an optional, obsolete `resources`
//! object. Its reader (`src/rt-app_parse_config.c`) looks up the keys it knows and ignores every
//! other key silently — a misplaced `delay` (rt-app issue #37) or a misspelt event (issue #45)
//! just vanishes. This reader understands every key rt-app knows: it is honoured (mapped into
//! the model below), or accepted with one warning ([`ScriptDef::warnings`]) saying why it has
//! no meaning here, or — where honouring it is impossible and ignoring it would change what
//! is measured — refused with an error naming what rt-app does with it. Every key rt-app does
//! not know is an error with the nearest known key. Errors and warnings carry
//! `file:line:column`.
//!
//! # JSON as rt-app reads it
//! rt-app reads the file with json-c (`json_object_from_file`, non-strict), which accepts C
//! comments (`//`, `/* */`), a trailing comma before `}` or `]`, and single-quoted strings;
//! so does this reader (`jsonc-parser`, already used for its positions, with those options).
//! Not accepted, as json-c does not accept them either: unquoted keys, `#` comments, a key
//! without a value (upstream's `video-short.json` has a bare `"suspend",`, which rt-app refuses
//! too; its `workgen` pre-processor fills it in). json-c's other leniencies — `True` in any
//! case, text after the closing brace — appear in no upstream file and are refused.
//!
//! **Repeated keys** are resolved as json-c resolves them: `json_object_object_add` replaces
//! the value of the existing entry, and rt-app walks objects in insertion order, so a key given
//! twice keeps the *place of its first occurrence and the value of its last* — for tasks,
//! phases, events and global keys alike (checked with rt-app 1.0: phases `a`, `b`, `a` run
//! as `a` with the last `a`'s events, then `b`; a phase `{run: 1000, timer, run: 30000}`
//! runs one `run` of 30000 µs before the timer). jsonc-parser keeps every occurrence in its
//! tree, so the resolution is done here, with one warning per repeated key. rt-app's `workgen`
//! would instead have renamed repeats (`run`, `run1`, …) and kept them all; a file meant for
//! workgen should be passed through it, or have its keys renamed.
//!
//! # Events: matched by prefix, in rt-app's order
//! A key of a phase (or of a task without `phases`) is an event when it *starts with* an event
//! name (`obj_is_event`), so `run0`, `run1` are two run events; which event it is follows
//! `parse_task_event_data`'s order: `run`/`sleep` first (a `run…` key that starts with
//! `runtime` is runtime, so `runtime` is never run), then `memrun` before `mem`, `iorun`,
//! `lock`/`unlock`, `signal`/`broad`, `wait`/`sync`, `barrier`, `timer`, `resume`, `suspend`,
//! `yield`, `fork`, `sem_post`, `sem_wait`. Events run in file order (a repeated key: above).
//!
//! # Units
//! rt-app's times are whole microseconds and its sizes whole bytes (json-c integers: `1.5` is
//! refused, as rt-app refuses it). They become expression literals at the value's span:
//! `Quantity { value: us / 1e6, unit: Seconds }` (µs × 10⁻⁶, divided so that 200 µs is exactly
//! 0.0002 s) and `Quantity { value: bytes, unit: Bytes }`.
//!
//! # Mapping (rt-app key → model), with the deviations
//! | rt-app | model |
//! |---|---|
//! | `global.duration` (s; -1 or 0: none) | [`ScriptDef::ends_at`]: every task stops there, as rt-app's `__shutdown` clears its run flag and cancels every thread — the interpreter stops a task before its next step, cuts its sleeps and timer waits there, releases the locks it holds, and the plan's `wait_end` makes both backends end the barrier, semaphore and condition waits still blocked then (`docs/workload-files.md` says where each task stops). Also the length of every `loop: -1` loop: a [`StepKind::Loop`] whose repeat is a duration, `duration − delay` (rt-app's clock starts before the delay). Without it, a loop of -1 is an error. |
//! | `global.default_policy` | the `policy` knob of every task without its own |
//! | `global.calibration` | checked (`"CPU<n>"` or a whole number; 0 is `"CPU0"`, as in rt-app), [`ScriptDef::loop_calibration`]: honoured when the file runs with `run-as=loops` (below: `"CPU<n>"` measures on CPU n, which the real backend refuses before the run where this process may not run); warned ([`ScriptDef::cpu_time_warnings`]) only where a configuration runs as CPU time, which needs no calibration; `--rt-app-logs` counts its `perf` column at it whatever `run` is (`model::RtAppLog::calibration`) |
//! | `global.pi_enabled` | `false` accepted; `true` warned: schedlab's locks have no priority inheritance |
//! | `global.lock_pages`, `logdir`, `log_basename`, `log_size`, `ftrace`, `gnuplot`, `cumulative_slack` | checked; warned when they ask for something (`true`, a log name, trace categories): page locking and rt-app's own logs and traces; schedlab records its own metrics |
//! | `global.io_device` | checked, warned: `iorun` writes each task's scratch file, never a path the file names |
//! | `global.frag` | warned: rt-app never reads it (an AQuoSA option removed in 2014 that survives in upstream's mp3, video and browser examples) |
//! | `global.mem_buffer_size` (bytes, default 4 MiB) | honoured by `mem` (below) |
//! | `resources.NAME.type` | `mutex` → a lock, `wait` → a condition, `timer` → nothing (timers are named by their events); `signal`, `broadcast`, `sync`, `sleep`, `run` are warned: no event ever looks such a resource up |
//! | `tasks.NAME` | a [`GroupSpec`] named as the task, in file order |
//! | `instance` (default 1) | the group's count |
//! | `delay` (µs; task only) | a first `sleep` step; in a phase it is an error (rt-app ignores it there) |
//! | `loop` (task: default -1; phase: default 1) | a `Loop` around the phases (task) or around one phase; a repeat of 1 is no loop; -1 → `global.duration` (above); 0 is refused (rt-app would run a task of loop 0 never, a phase of loop 0 forever) |
//! | `policy`, `priority` | knobs `policy` (`other`, `batch`, `idle`, `fifo:P`, `rr:P`) and `nice`: `priority` is the nice value for SCHED_OTHER/BATCH (default 0) and the real-time priority for FIFO/RR (default 10, rt-app's `DEFAULT_THREAD_PRIORITY`); rt-app applies no nice to SCHED_IDLE and no priority to SCHED_DEADLINE, so a non-zero one there is refused |
//! | `dl-runtime`, `dl-period`, `dl-deadline` (µs) | `policy = "deadline:R/D/P"` (period defaults to runtime, deadline to period); for SCHED_OTHER/BATCH `dl-runtime` is the custom slice (Linux ≥ 6.12) → knob `slice`; elsewhere refused. The task-level legacy keys `runtime`, `period`, `deadline` are read as rt-app reads them (only when the `dl-` key is absent); a task-level `runtime` in a task without `phases` is both an event and the legacy budget in rt-app, and is refused as ambiguous |
//! | `cpus` (array) | knob `cpus` |
//! | phase-level `policy`, `priority`, `dl-*`, `cpus` | rt-app switches them when the phase starts. When they amount to one setting for the whole run they are the group's knobs (`merged_sched`); otherwise each phase that changes them starts with a [`StepKind::Set`] (`phase_sets`), before its loop and outside its timed pass, as rt-app applies them before taking the pass's start time. The switches are checked before the run as the group's knobs are (a CPU outside the machine, a class the simulated policy lacks) |
//! | `util_min`, `util_max` (task or phase) | knobs `util-min`, `util-max` (0..1024; -1: none), per phase as `priority` is; warned, saying where they apply: the real backend sets them after the policy (rt-app's `_set_thread_uclamp`) where the kernel has utilization clamping, and refuses the run before it starts where it has not (CONFIG_UCLAMP_TASK unset: EOPNOTSUPP, on which rt-app exits); the simulator has no utilization signal and ignores them |
//! | `nodes_membind` | checked (node numbers), warned: NUMA memory binding is applied on neither backend |
//! | `taskgroup` (task or phase) | knob `taskgroup` (`""`: none), per phase as `policy` is — a phase without it stays where the thread is, as rt-app moves a thread only when a phase gives one (`set_thread_taskgroup`). The real backend creates a CPU cgroup per taskgroup for the run, below the cgroup schedlab runs in, and moves the thread at its start and at the phase boundary (`schedlab_real::taskgroup`, after rt-app_taskgroups.c; `/` is the cgroup schedlab runs in, where rt-app's is the hierarchy's root); as in rt-app, a taskgroup with a policy other than SCHED_OTHER/BATCH/IDLE is refused. No simulated policy has group scheduling: the simulator warns once per policy and runs the task as if in none. rt-app 1.0 (Debian's) ignores the key |
//! | `run` (µs of work) | `Compute` fixed. rt-app's run is a calibrated number of loops whose duration varies with CPU frequency and capacity; what schedlab's is follows the parameter [`RUN_AS`] every rt-app file has ([`ScriptDef::compute_as`]): `cpu-time` (the default: CPU time) or `loops` (rt-app's: `Context::compute_loops`, a loop count calibrated as `calibration` says) |
//! | `runtime` (µs of wall time on the CPU) | `Busy`: running until that much wall time has passed (rt-app's `runtime` loops `loadwait(32)` until its clock says so); with `run-as=loops` in 32 µs bursts of the calibrated loop, as rt-app's |
//! | `sleep` (µs) | `Sleep` fixed |
//! | `timer` `{ref, period, mode}` | `Period { timer: ref, every: period }`. rt-app anchors a timer at the thread's start (after `delay`), so each timer also gets one anchoring `Period` step right after the delay; the first activation in the body then comes one period after the start, as in rt-app (deviation: a forked thread's timers start at its fork, rt-app's at the use case's start). A `ref` starting with `unique` is per thread in rt-app; its timer is named `TASK.ref` so that two tasks' timers keep apart. Any other `ref` is one timer shared by every thread that uses it in rt-app; schedlab's timers are per task, so a shared one (two tasks, or `instance` > 1) is refused. `mode: "relative"` (the default) is honoured. Deviation: after an overrun rt-app's relative timer restarts its period at the late wake-up, while schedlab keeps the original grid and counts the periods missed. `mode: "absolute"` is refused: its point is to run the missed activations back to back, which schedlab's `Period` skips |
//! | `lock`, `unlock` | `Lock`, `Unlock` (a lock per name) |
//! | `wait` `{ref, mutex}` | `CondWait { cond: ref, lock: mutex }` |
//! | `signal`, `broad` | `CondSignal`, `CondBroadcast` |
//! | `sync` `{ref, mutex}` | `CondSignal` then `CondWait` (rt-app's `rtapp_sig_and_wait`: the caller holds the mutex) |
//! | `barrier` | `Barrier` with `parties: None` (every task that uses it), as rt-app counts the instances of the tasks using it; a task using one barrier in two events is refused (rt-app would count it twice and wait for itself), and so is a barrier in a forked task (rt-app cannot count forks) |
//! | `suspend` | `Lock(T)`, `CondWait { cond: T, lock: T }`, `Unlock(T)` as rt-app implements it (`rtapp_suspend`), with T the task's own name when the value is `""` or that name (rt-app after 1.0 always uses it); another value is the condition's name, as rt-app 1.0 reads it (upstream's browser examples rely on it), with a warning |
//! | `resume` NAME | `Lock(NAME)`, `CondBroadcast(NAME)`, `Unlock(NAME)` (`rtapp_resume`); NAME must be what some `suspend` waits on (a task's name, or a 1.0-style value) |
//! | `mem` (bytes) | `Touch`; rt-app rewrites its `mem_buffer_size` buffer, so `mem` larger than the buffer is a loop of whole-buffer touches plus the rest |
//! | `iorun` (bytes) | `Io { Rewrite }`. Deviation: rt-app writes `io_device` (by default /dev/null, where a write costs only the system call); schedlab writes the start of the task's scratch file again (a copy into the page cache; the file never grows past one `iorun`) |
//! | `memrun` {type, size, count, stride, pattern, ref} | `MemAccess` (read or write `count` bytes one at a time, wrapping; or follow `count` pointers of a chain with a position every `stride` bytes, bit-reversed or sequential), as upstream's `memread`/`memwrite`/`memchase_run`; each task has its own buffer per type, size, stride and pattern, `ref` shares one by name and type, and a second `memrun` of one `ref` with another size, stride or pattern is an error, as in rt-app. Stricter: an unknown `type` or `pattern` (rt-app reads any pattern but "sequential" as random), a missing `size`, a chase of fewer than 2 positions or a stride not a multiple of 8 are errors; `stride`/`pattern` on a read or write are warned and ignored |
//! | `yield` (any value: rt-app does not read it) | `Yield` |
//! | `fork` TASK | `Spawn(TASK)`; TASK's group is `spawned`, its count TASK's `instance` (default 1) plus the number of times the fork runs (the forking task's threads × loops around it, following forks of forks), which must be finite; its first `instance` threads start with the run, as upstream rt-app's `main` starts every task's instances and each fork event one more thread (rt-app 1.0, Debian's, has no `fork`: it runs only the instances) |
//! | `sem_post`, `sem_wait` | `SemPost`, `SemWait` (semaphores start at 0, as rt-app's) |
//!
//! Locks, conditions, barriers and semaphores are declared implicitly by use, as in rt-app
//! (which creates them while parsing), in order of first use, each at the span of that use.
//! Names are per kind, as rt-app looks resources up by name and type: the lock and condition a
//! `suspend` uses, named after its task, are the same as a `lock` or `wait` naming that task.
//!
//! Timers: all `Period` steps of one task that name the same timer are one timer (its
//! activations advance by the `every` of the step that waits), which is what the anchoring step
//! and rt-app's timers shared between phases rely on.
//!
//! # Metrics
//! rt-app logs, per phase pass, `perf`, `run`, `period` (the pass's duration), `slack`,
//! `c_duration`, `c_period` and `wu_lat`. What schedlab can give is kept: each phase pass is
//! wrapped in a [`StepKind::Timed`] named `TASK.PHASE.period` (`TASK.period` for a task without
//! `phases`) — rt-app's `period` column; each timer's `Period` gives the wake-up latency
//! (`wu_lat`), deadlines met and periods missed (`slack`'s sign); and each pass of a task's loop
//! ends with a [`StepKind::Count`] `TASK.loops`, whose rate shows how many passes a task kept up
//! under contention. `perf`, `run` and `c_*` are not kept: schedlab's compute is a fixed CPU
//! time, so they would only echo the file.

use crate::error::{did_you_mean, Diagnostic, FileError};
use crate::expr::{Expr, Quantity, Unit};
use crate::model::{
    Amount, BarrierSpec, Grammar, GroupSpec, MetricsSpec, ObjectRef, ObjectSpec, ParamSpec,
    ParamValue, ScriptDef, SemaphoreSpec, Step, StepKind,
};
use crate::span::{LineCol, Span, Spanned};
use jsonc_parser::ast::{Object, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{parse_to_ast, CollectOptions, ParseOptions};
use schedlab_workload::knobs::{parse_knob, Knobs};
use schedlab_workload::{
    ChasePattern, IoKind, KnobError, LoopCalibration, MemAccess, MemAccessKind, SharedBuffers,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

type R<T> = Result<T, Diagnostic>;

/// Read an rt-app JSON file (`text`, from `path`) into the model, as rt-app's json-c reads it
/// (comments, trailing commas, repeated keys). Any key rt-app does not know, a key schedlab
/// cannot honour where ignoring it would change what is measured, a wrong type or invalid JSON
/// is an error at its `file:line:column`; keys with no meaning here are in
/// [`ScriptDef::warnings`].
pub fn read(path: &Path, text: &str) -> Result<ScriptDef, FileError> {
    let reader = Reader {
        text,
        warnings: RefCell::new(Vec::new()),
        cpu_time_warnings: RefCell::new(Vec::new()),
        memrun_refs: RefCell::default(),
    };
    let mut def = reader
        .file(path)
        .map_err(|d| FileError::at(path, text, d))?;
    def.warnings = reader.warnings.into_inner();
    def.cpu_time_warnings = reader.cpu_time_warnings.into_inner();
    Ok(def)
}

/// The parameter every rt-app file has that says what its `run` events are
/// ([`crate::model::ComputeAs`]): `cpu-time` or `loops`.
pub const RUN_AS: &str = "run-as";

/// rt-app's default `mem_buffer_size` (`DEFAULT_MEM_BUF_SIZE`).
const DEFAULT_MEM_BUFFER: i64 = 4 * 1024 * 1024;
/// The most taskgroups rt-app accepts (`max_nbr_tgs` in rt-app_taskgroups.c).
const MAX_TASKGROUPS: usize = 32;
/// rt-app's default real-time priority (`DEFAULT_THREAD_PRIORITY`).
const DEFAULT_RT_PRIORITY: i64 = 10;

const ROOT_KEYS: &[&str] = &["global", "tasks", "resources"];
const GLOBAL_KEYS: &[&str] = &[
    "duration",
    "calibration",
    "default_policy",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];
/// Keys of a phase that are not events (`parse_task_phase_data`).
const PHASE_KEYS: &[&str] = &[
    "loop",
    "cpus",
    "nodes_membind",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "util_min",
    "util_max",
    "taskgroup",
];
/// Keys of a task besides the phase keys (`parse_task_data`, `parse_sched_data`'s legacy keys).
const TASK_ONLY_KEYS: &[&str] = &[
    "instance", "delay", "phases", "runtime", "period", "deadline",
];
/// rt-app's event names, in `obj_is_event`'s order.
const EVENTS: &[&str] = &[
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer",
    "suspend", "resume", "memrun", "mem", "iorun", "yield", "barrier", "fork", "sem_post",
    "sem_wait",
];
/// Names from other grammars that mean an rt-app key, for a suggestion when no key is near.
const ALIASES: &[(&str, &str)] = &[
    ("exec", "run"),
    ("compute", "run"),
    ("busy", "runtime"),
    ("nice", "priority"),
    ("affinity", "cpus"),
    ("count", "instance"),
    ("instances", "instance"),
];

/// Which event a key is, mirroring `parse_task_event_data`'s order of prefix tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EvKind {
    Run,
    Runtime,
    Sleep,
    Memrun,
    Mem,
    Iorun,
    Lock,
    Unlock,
    Signal,
    Broad,
    Wait,
    Sync,
    Barrier,
    Timer,
    Resume,
    Suspend,
    Yield,
    Fork,
    SemPost,
    SemWait,
}

impl EvKind {
    /// The event `key` is, if it is one (a key rt-app's `obj_is_event` accepts).
    fn of(key: &str) -> Option<EvKind> {
        if !EVENTS.iter().any(|e| key.starts_with(e)) {
            return None;
        }
        let p = |prefix: &str| key.starts_with(prefix);
        Some(if p("run") || p("sleep") {
            if p("sleep") {
                EvKind::Sleep
            } else if p("runtime") {
                EvKind::Runtime
            } else {
                EvKind::Run
            }
        } else if p("memrun") {
            EvKind::Memrun
        } else if p("mem") || p("iorun") {
            if p("mem") {
                EvKind::Mem
            } else {
                EvKind::Iorun
            }
        } else if p("lock") || p("unlock") {
            if p("lock") {
                EvKind::Lock
            } else {
                EvKind::Unlock
            }
        } else if p("signal") || p("broad") {
            if p("signal") {
                EvKind::Signal
            } else {
                EvKind::Broad
            }
        } else if p("wait") || p("sync") {
            if p("wait") {
                EvKind::Wait
            } else {
                EvKind::Sync
            }
        } else if p("barrier") {
            EvKind::Barrier
        } else if p("timer") {
            EvKind::Timer
        } else if p("resume") {
            EvKind::Resume
        } else if p("suspend") {
            EvKind::Suspend
        } else if p("yield") {
            EvKind::Yield
        } else if p("fork") {
            EvKind::Fork
        } else if p("sem_post") {
            EvKind::SemPost
        } else {
            EvKind::SemWait
        })
    }

    fn name(self) -> &'static str {
        match self {
            EvKind::Run => "run",
            EvKind::Runtime => "runtime",
            EvKind::Sleep => "sleep",
            EvKind::Memrun => "memrun",
            EvKind::Mem => "mem",
            EvKind::Iorun => "iorun",
            EvKind::Lock => "lock",
            EvKind::Unlock => "unlock",
            EvKind::Signal => "signal",
            EvKind::Broad => "broad",
            EvKind::Wait => "wait",
            EvKind::Sync => "sync",
            EvKind::Barrier => "barrier",
            EvKind::Timer => "timer",
            EvKind::Resume => "resume",
            EvKind::Suspend => "suspend",
            EvKind::Yield => "yield",
            EvKind::Fork => "fork",
            EvKind::SemPost => "sem_post",
            EvKind::SemWait => "sem_wait",
        }
    }
}

/// A scheduling policy as rt-app names it (`string_to_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
}

const POLICY_NAMES: &[&str] = &[
    "SCHED_OTHER",
    "SCHED_BATCH",
    "SCHED_IDLE",
    "SCHED_RR",
    "SCHED_FIFO",
    "SCHED_DEADLINE",
];

impl Policy {
    fn parse(s: &Spanned<String>, key: &str) -> R<Policy> {
        Ok(match s.value.as_str() {
            "SCHED_OTHER" => Policy::Other,
            "SCHED_BATCH" => Policy::Batch,
            "SCHED_IDLE" => Policy::Idle,
            "SCHED_RR" => Policy::Rr,
            "SCHED_FIFO" => Policy::Fifo,
            "SCHED_DEADLINE" => Policy::Deadline,
            other => {
                let upper = other.to_ascii_uppercase();
                let hint = if POLICY_NAMES.contains(&upper.as_str()) {
                    format!(" (did you mean '{upper}'? rt-app's names are case-sensitive)")
                } else {
                    did_you_mean(&upper, POLICY_NAMES.iter().copied())
                };
                return Err(Diagnostic::new(
                    s.span,
                    format!(
                        "'{key}' = \"{other}\" is not a policy rt-app knows; use {}{hint}",
                        POLICY_NAMES.join(", ")
                    ),
                ));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Deadline => "SCHED_DEADLINE",
        }
    }
}

/// A value with the span of its key and of itself.
#[derive(Clone, Debug, PartialEq)]
struct Kv<T> {
    value: T,
    key: Span,
    span: Span,
}

/// The scheduling and affinity keys of a task or a phase.
#[derive(Clone, Debug, Default)]
struct Sched {
    policy: Option<Kv<Policy>>,
    priority: Option<Kv<i64>>,
    dl_runtime: Option<Kv<i64>>,
    dl_period: Option<Kv<i64>>,
    dl_deadline: Option<Kv<i64>>,
    cpus: Option<Kv<Vec<i64>>>,
    /// `util_min` when it sets a clamp (>= 0; -1 leaves it as it is).
    util_min: Option<Kv<i64>>,
    /// `util_max`, as `util_min`.
    util_max: Option<Kv<i64>>,
    /// `taskgroup`, normalised (`/tg1/tg11`); `""` (none) leaves it unset.
    taskgroup: Option<Kv<String>>,
}

/// One event of a phase, read.
#[derive(Clone, Debug)]
enum Ev {
    Run(Kv<i64>),
    Runtime(Kv<i64>),
    Sleep(Kv<i64>),
    Mem(Kv<i64>),
    Iorun(Kv<i64>),
    Memrun(MemAccess),
    Lock(Spanned<String>),
    Unlock(Spanned<String>),
    Signal(Spanned<String>),
    Broad(Spanned<String>),
    Wait {
        cond: Spanned<String>,
        mutex: Spanned<String>,
    },
    Sync {
        cond: Spanned<String>,
        mutex: Spanned<String>,
    },
    Barrier(Spanned<String>),
    Timer {
        name: Spanned<String>,
        period: Kv<i64>,
    },
    /// On the condition (and lock) of this name: the task's own, or the value's (rt-app 1.0).
    Suspend(Spanned<String>),
    Resume(Spanned<String>),
    Yield,
    Fork(Spanned<String>),
    SemPost(Spanned<String>),
    SemWait(Spanned<String>),
}

#[derive(Clone, Debug)]
struct Event {
    ev: Ev,
    /// The whole `"key": value`.
    span: Span,
}

#[derive(Clone, Debug)]
struct Phase {
    /// `None` for the events of a task without `phases`.
    name: Option<Spanned<String>>,
    loop_: Option<Kv<i64>>,
    events: Vec<Event>,
    sched: Sched,
}

#[derive(Clone, Debug)]
struct Task {
    name: Spanned<String>,
    span: Span,
    instance: Option<Kv<i64>>,
    delay: Option<Kv<i64>>,
    loop_: Option<Kv<i64>>,
    sched: Sched,
    legacy_runtime: Option<Kv<i64>>,
    legacy_period: Option<Kv<i64>>,
    legacy_deadline: Option<Kv<i64>>,
    phases: Vec<Phase>,
}

impl Task {
    /// The task's loop: rt-app's default is -1 (until the global duration).
    fn task_loop(&self) -> i64 {
        self.loop_.as_ref().map_or(-1, |l| l.value)
    }
}

fn phase_loop(p: &Phase) -> i64 {
    p.loop_.as_ref().map_or(1, |l| l.value)
}

/// The global object's keys that shape the model.
struct Global {
    /// Seconds, when positive.
    duration: Option<Kv<i64>>,
    default_policy: Option<Kv<Policy>>,
    mem_buffer_size: i64,
    /// What rt-app's logs take from `global` (`--rt-app-logs`).
    log: crate::model::RtAppLog,
    /// `calibration`: `"CPU<n>"` or 0 measures on CPU n (rt-app's default: CPU 0), a number
    /// is the ns per loop.
    calibration: LoopCalibration,
}

/// A `"key": value` of an object.
struct Entry<'v, 'a> {
    key: &'v str,
    key_span: Span,
    value: &'v Value<'a>,
    span: Span,
}

fn span_of(r: jsonc_parser::common::Range) -> Span {
    Span::new(r.start, r.end)
}

fn vspan(v: &Value) -> Span {
    span_of(v.range())
}

/// What a JSON value is, for messages.
fn describe(v: &Value) -> String {
    match v {
        Value::StringLit(s) => format!("the string \"{}\"", s.value),
        Value::NumberLit(n) => format!("the number {}", n.value),
        Value::BooleanLit(b) => format!("{}", b.value),
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "an array".into(),
        Value::NullKeyword(_) => "null".into(),
    }
}

/// ` (did you mean 'x'?)` over `accepted`, else a known alias, else nothing.
fn suggestion<'a>(given: &str, accepted: impl IntoIterator<Item = &'a str>) -> String {
    let near = did_you_mean(given, accepted);
    if !near.is_empty() {
        return near;
    }
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == given)
        .map_or(String::new(), |(_, key)| {
            format!(" (did you mean '{key}'?)")
        })
}

fn lit(value: f64, unit: Unit, span: Span) -> Expr {
    Expr::literal(Quantity { value, unit }, span)
}

fn micros(kv: &Kv<i64>) -> Expr {
    lit(kv.value as f64 / 1e6, Unit::Seconds, kv.span)
}

fn step(kind: StepKind, span: Span) -> Step {
    Step { kind, span }
}

fn oref(name: &Spanned<String>) -> ObjectRef {
    ObjectRef {
        name: name.clone(),
        index: None,
    }
}

struct Reader<'t> {
    text: &'t str,
    /// Keys rt-app knows that have no meaning here, and repeated keys: one each.
    warnings: RefCell<Vec<Diagnostic>>,
    /// Keys with no meaning while `run` is CPU time (`calibration`).
    cpu_time_warnings: RefCell<Vec<Diagnostic>>,
    /// The first `memrun` of each shared buffer (kind and `ref`), with its span: every later
    /// one must agree with it, as rt-app requires.
    memrun_refs: RefCell<SharedBuffers<Span>>,
}

impl Reader<'_> {
    /// Accept what is at `span`, with `message` saying why it has no effect here.
    fn warn(&self, span: Span, message: impl Into<String>) {
        self.warnings
            .borrow_mut()
            .push(Diagnostic::new(span, message));
    }

    fn file(&self, path: &Path) -> R<ScriptDef> {
        let options = ParseOptions {
            allow_comments: true,
            allow_loose_object_property_names: false,
            allow_trailing_commas: true,
            allow_missing_commas: false,
            allow_single_quoted_strings: true,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_non_finite_numbers: false,
            allow_extended_string_escapes: false,
        };
        let parsed =
            parse_to_ast(self.text, &CollectOptions::default(), &options).map_err(|e| {
                let r = e.range();
                Diagnostic::new(
                    Span::new(r.start, r.end.max(r.start + 1)),
                    format!("not valid JSON: {}", e.kind()),
                )
            })?;
        let Some(root) = parsed.value else {
            return Err(Diagnostic::new(
                Span::new(0, 0),
                "the file holds no JSON value; rt-app needs an object with a 'tasks' object",
            ));
        };
        let root = self.object("the file", &root)?;
        let entries = self.entries(root)?;
        let mut global_value = None;
        let mut tasks_value = None;
        let mut resources_value = None;
        for e in &entries {
            match e.key {
                "global" => global_value = Some(e),
                "tasks" => tasks_value = Some(e),
                "resources" => resources_value = Some(e),
                k => {
                    return Err(Diagnostic::new(
                        e.key_span,
                        format!(
                            "unknown key '{k}' at the top level; rt-app reads 'global', 'tasks' and 'resources' and would ignore it silently{}",
                            suggestion(k, ROOT_KEYS.iter().copied())
                        ),
                    ))
                }
            }
        }
        let global = match global_value {
            Some(e) => self.global(e)?,
            None => Global {
                duration: None,
                default_policy: None,
                mem_buffer_size: DEFAULT_MEM_BUFFER,
                log: Default::default(),
                calibration: LoopCalibration::Measure { cpu: 0 },
            },
        };
        let mut objects = Objects::default();
        if let Some(e) = resources_value {
            self.resources(e, &mut objects)?;
        }
        let Some(tasks_entry) = tasks_value else {
            return Err(Diagnostic::new(
                span_of(root.range),
                "the file has no 'tasks' object; rt-app requires one (\"tasks\": { \"NAME\": { ... } })",
            ));
        };
        let tasks_obj = self.object("tasks", tasks_entry.value)?;
        let task_entries = self.entries(tasks_obj)?;
        if task_entries.is_empty() {
            return Err(Diagnostic::new(
                tasks_entry.span,
                "'tasks' is empty; rt-app would start no thread: describe at least one task",
            ));
        }
        let mut tasks = Vec::new();
        for e in &task_entries {
            tasks.push(self.task(e)?);
        }
        let name = path.file_stem().map_or_else(
            || "rt-app".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        let groups = build_groups(&tasks, &global, &mut objects)?;
        Ok(ScriptDef {
            description: format!("rt-app workload, {} task(s)", tasks.len()),
            name,
            path: path.to_path_buf(),
            text: self.text.to_string(),
            grammar: Grammar::RtApp,
            params: vec![ParamSpec {
                name: Spanned::new(RUN_AS.to_string(), Span::default()),
                default: ParamValue::Text("cpu-time".into()),
                default_span: Span::default(),
                help: "What an rt-app `run` is: cpu-time (that much CPU time of the task) or loops (rt-app's semantic: a count of busy-loop iterations calibrated at the run's start, as `calibration` says; on the simulator the same as cpu-time).".into(),
                choices: vec!["cpu-time".into(), "loops".into()],
            }],
            groups,
            channels: Vec::new(),
            locks: (objects.locks.into_iter())
                .map(|object| crate::model::LockSpec {
                    object,
                    kind: schedlab_workload::plan::LockKind::Sleep,
                })
                .collect(),
            barriers: objects
                .barriers
                .into_iter()
                .map(|object| BarrierSpec {
                    object,
                    parties: None,
                })
                .collect(),
            semaphores: objects
                .semaphores
                .into_iter()
                .map(|object| SemaphoreSpec {
                    object,
                    initial: None,
                })
                .collect(),
            conds: objects.conds,
            transport: None,
            tasks: None,
            start: None,
            metrics: MetricsSpec::default(),
            ends_at: (global.duration.as_ref())
                .map(|d| std::time::Duration::from_secs(d.value.unsigned_abs())),
            rtapp_log: Some(crate::model::RtAppLog {
                calibration: global.calibration,
                ..global.log
            }),
            compute_as: Some(Spanned::new(format!("${RUN_AS}"), Span::default())),
            loop_calibration: global.calibration,
            computes: None,
            warnings: Vec::new(),
            cpu_time_warnings: Vec::new(),
        })
    }

    // ---- JSON access -------------------------------------------------------------------------

    /// The properties of `obj` as json-c gives them to rt-app: a key given more than once keeps
    /// the place of its first occurrence and the value of its last (`json_object_object_add`
    /// replaces the value of the existing entry), with one warning per repeated key.
    fn entries<'v, 'a>(&self, obj: &'v Object<'a>) -> R<Vec<Entry<'v, 'a>>> {
        let mut out: Vec<Entry<'v, 'a>> = Vec::new();
        // Where each key is first given: an object of many tasks is read in linear time.
        let mut seen: HashMap<&'v str, usize> = HashMap::new();
        // Per repeated key: its first line and the later lines, for one warning each.
        let mut repeats: Vec<(usize, Vec<usize>)> = Vec::new();
        for p in &obj.properties {
            let key = p.name.as_str();
            let key_span = span_of(p.name.range());
            if let Some(&i) = seen.get(key) {
                out[i].value = &p.value;
                out[i].span = span_of(p.range);
                let line = LineCol::of(self.text, key_span.start).line;
                match repeats.iter_mut().find(|(at, _)| *at == i) {
                    Some((_, lines)) => lines.push(line),
                    None => repeats.push((i, vec![line])),
                }
                continue;
            }
            seen.insert(key, out.len());
            out.push(Entry {
                key,
                key_span,
                value: &p.value,
                span: span_of(p.range),
            });
        }
        for (i, lines) in repeats {
            let e = &out[i];
            let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            self.warn(
                e.key_span,
                format!(
                    "'{}' is given again at line {}: rt-app's JSON reader (json-c) keeps one '{}' here, with the last value, in the first one's place, as schedlab does; rt-app's workgen would instead have renamed the repeats ('{}1', '{}2', ...) and kept them all: rename them to keep them",
                    e.key,
                    lines.join(", "),
                    e.key,
                    e.key,
                    e.key
                ),
            );
        }
        Ok(out)
    }

    fn object<'v, 'a>(&self, what: &str, v: &'v Value<'a>) -> R<&'v Object<'a>> {
        match v {
            Value::Object(o) => Ok(o),
            other => Err(Diagnostic::new(
                vspan(other),
                format!("{what} must be an object, not {}", describe(other)),
            )),
        }
    }

    /// A json-c integer (no fraction, no exponent, 32 bits), described as `what` in errors.
    fn int(&self, key: &str, v: &Value, what: &str) -> R<Kv<i64>> {
        let Value::NumberLit(n) = v else {
            return Err(Diagnostic::new(
                vspan(v),
                format!("'{key}' must be {what}, not {}", describe(v)),
            ));
        };
        if n.value.contains(['.', 'e', 'E']) {
            return Err(Diagnostic::new(
                vspan(v),
                format!(
                    "'{key}' must be {what}, not {} (rt-app reads it as a json-c integer and refuses a fraction or an exponent)",
                    n.value
                ),
            ));
        }
        match n.value.parse::<i64>() {
            Ok(x) if i32::try_from(x).is_ok() => Ok(Kv {
                value: x,
                key: Span::default(),
                span: vspan(v),
            }),
            _ => Err(Diagnostic::new(
                vspan(v),
                format!(
                    "'{key}' = {} is out of range: rt-app reads a 32-bit integer",
                    n.value
                ),
            )),
        }
    }

    /// `int` for the value of entry `e`, keeping the key's span.
    fn int_entry(&self, e: &Entry, what: &str) -> R<Kv<i64>> {
        let mut kv = self.int(e.key, e.value, what)?;
        kv.key = e.key_span;
        Ok(kv)
    }

    /// `int_entry`, at least `min`.
    fn int_at_least(&self, e: &Entry, what: &str, min: i64) -> R<Kv<i64>> {
        let kv = self.int_entry(e, what)?;
        if kv.value < min {
            return Err(Diagnostic::new(
                kv.span,
                format!(
                    "'{}' = {} is not accepted; it must be {what}",
                    e.key, kv.value
                ),
            ));
        }
        Ok(kv)
    }

    fn string(&self, key: &str, v: &Value) -> R<Spanned<String>> {
        match v {
            Value::StringLit(s) => Ok(Spanned::new(s.value.to_string(), vspan(v))),
            other => Err(Diagnostic::new(
                vspan(other),
                format!("'{key}' must be a string, not {}", describe(other)),
            )),
        }
    }

    /// A string naming a resource: not empty.
    fn name(&self, key: &str, v: &Value, what: &str) -> R<Spanned<String>> {
        let s = self.string(key, v).map_err(|mut d| {
            d.message = format!("{} naming {what}", d.message);
            d
        })?;
        if s.value.is_empty() {
            return Err(Diagnostic::new(
                s.span,
                format!("'{key}' names {what} with an empty string; give it a name"),
            ));
        }
        Ok(s)
    }

    fn boolean(&self, key: &str, v: &Value) -> R<bool> {
        match v {
            Value::BooleanLit(b) => Ok(b.value),
            other => Err(Diagnostic::new(
                vspan(other),
                format!("'{key}' must be true or false, not {}", describe(other)),
            )),
        }
    }

    // ---- global and resources ----------------------------------------------------------------

    fn global(&self, e: &Entry) -> R<Global> {
        let obj = self.object("'global'", e.value)?;
        let mut g = Global {
            duration: None,
            default_policy: None,
            mem_buffer_size: DEFAULT_MEM_BUFFER,
            log: Default::default(),
            calibration: LoopCalibration::Measure { cpu: 0 },
        };
        for e in self.entries(obj)? {
            match e.key {
                "duration" => {
                    let d = self.int_entry(&e, "a whole number of seconds (-1: none)")?;
                    match d.value {
                        x if x > 0 => g.duration = Some(d),
                        -1 | 0 => {}
                        x => {
                            return Err(Diagnostic::new(
                                d.span,
                                format!("'duration' = {x} is not accepted; give seconds (> 0) or -1 for no limit"),
                            ))
                        }
                    }
                }
                "default_policy" => {
                    let s = self.string(e.key, e.value)?;
                    g.default_policy = Some(Kv {
                        value: Policy::parse(&s, e.key)?,
                        key: e.key_span,
                        span: s.span,
                    });
                }
                "calibration" => {
                    match e.value {
                        Value::NumberLit(_) => {
                            let ns = self.int_at_least(&e, "a whole number of ns per loop (>= 0) or \"CPU<n>\"", 0)?;
                            // rt-app measures on its calibration CPU (0) when the number is 0.
                            g.calibration = match ns.value {
                                0 => LoopCalibration::Measure { cpu: 0 },
                                n => LoopCalibration::Given { ns_per_loop: n as u64 },
                            };
                        }
                        Value::StringLit(s) => {
                            let cpu = (s.value.strip_prefix("CPU"))
                                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                                .and_then(|n| n.parse::<usize>().ok());
                            if let Some(cpu) = cpu {
                                g.calibration = LoopCalibration::Measure { cpu };
                            } else {
                                return Err(Diagnostic::new(
                                    vspan(e.value),
                                    format!("'calibration' = \"{}\" is not accepted; rt-app takes \"CPU<n>\" (the CPU to calibrate its busy loop on) or a whole number of ns per loop", s.value),
                                ));
                            }
                        }
                        other => {
                            return Err(Diagnostic::new(
                                vspan(other),
                                format!("'calibration' must be \"CPU<n>\" or a whole number of ns per loop, not {}", describe(other)),
                            ))
                        }
                    }
                    // Where `run` is a loop count the calibration is what sets it: no warning.
                    self.cpu_time_warnings.borrow_mut().push(Diagnostic::new(e.key_span, "'calibration' is used only with --run-as loops (rt-app's semantic: 'run' a count of its busy loop, calibrated to take that many µs); with --run-as cpu-time (the default) schedlab's 'run' is that much CPU time itself and needs no calibration (only --rt-app-logs counts its 'perf' column at it: the loops rt-app's loop would have run, measured on that CPU before the run, on the real kernel)"));
                }
                "pi_enabled" => {
                    if self.boolean(e.key, e.value)? {
                        self.warn(e.key_span, "'pi_enabled': true makes rt-app's mutexes priority-inheriting (PTHREAD_PRIO_INHERIT); schedlab's locks have no priority inheritance on either backend, so a low-priority holder is not boosted (results differ only under priority inversion)");
                    }
                }
                "lock_pages" => {
                    if self.boolean(e.key, e.value)? {
                        self.warn(e.key_span, "'lock_pages': true (rt-app's default) makes rt-app mlockall() its memory; schedlab does not lock pages (its tasks' memory is small and touched before the run)");
                    }
                }
                "gnuplot" => {
                    if self.boolean(e.key, e.value)? {
                        self.warn(e.key_span, "'gnuplot': true makes rt-app write gnuplot scripts beside its logs; schedlab writes none (its plots: --plot, and 'schedlab report')");
                    }
                }
                // Both shape rt-app's per-task logs, which --rt-app-logs writes.
                "cumulative_slack" => g.log.cumulative_slack = self.boolean(e.key, e.value)?,
                "log_basename" => g.log.basename = self.string(e.key, e.value)?.value,
                "logdir" => {
                    self.string(e.key, e.value)?;
                    self.warn(e.key_span, "'logdir' is not used: schedlab writes rt-app's per-task logs into the directory given with --rt-app-logs DIR, and only then");
                }
                "io_device" => {
                    self.string(e.key, e.value)?;
                    self.warn(e.key_span, "'io_device' has no effect here: 'iorun' writes each task's own scratch file in the run's temporary directory, never a path the file names");
                }
                "log_size" => {
                    match e.value {
                        Value::NumberLit(_) => {
                            self.int_at_least(&e, "a whole number of MB (>= 0) or \"file\", \"disable\", \"auto\"", 0)?;
                        }
                        Value::StringLit(s) if ["file", "disable", "auto"].contains(&s.value.as_ref()) => {}
                        other => {
                            return Err(Diagnostic::new(
                                vspan(other),
                                format!("'log_size' must be a whole number of MB or \"file\", \"disable\", \"auto\", not {}", describe(other)),
                            ))
                        }
                    }
                    self.warn(e.key_span, "'log_size' sizes rt-app's in-memory log buffer; schedlab's --rt-app-logs keeps up to 100,000 rows a task and counts the rest");
                }
                "ftrace" => {
                    let tracing = match e.value {
                        Value::BooleanLit(b) => b.value,
                        Value::StringLit(s) => {
                            const CATEGORIES: &[&str] = &["main", "task", "loop", "event", "stats", "none"];
                            for cat in s.value.split(',') {
                                if !CATEGORIES.iter().any(|c| c.eq_ignore_ascii_case(cat)) {
                                    return Err(Diagnostic::new(
                                        vspan(e.value),
                                        format!("'ftrace' category '{cat}' is not one rt-app knows; use a comma-separated list of {}{}", CATEGORIES.join(", "), did_you_mean(cat, CATEGORIES.iter().copied())),
                                    ));
                                }
                            }
                            !s.value.eq_ignore_ascii_case("none")
                        }
                        other => {
                            return Err(Diagnostic::new(
                                vspan(other),
                                format!("'ftrace' must be a string of categories (or a boolean), not {}", describe(other)),
                            ))
                        }
                    };
                    if tracing {
                        self.warn(e.key_span, "'ftrace' makes rt-app write its events to the kernel's trace_marker; schedlab writes no trace markers (its own tracing: --timeline, and the counters)");
                    }
                }
                "frag" => {
                    self.warn(e.key_span, "'frag' is not read by rt-app: it was an option of rt-app's AQuoSA backend, removed in 2014, that survives in some of its example files; it has no effect");
                }
                "mem_buffer_size" => {
                    g.mem_buffer_size = self.int_at_least(&e, "a whole number of bytes (> 0)", 1)?.value;
                }
                k => {
                    return Err(Diagnostic::new(
                        e.key_span,
                        format!(
                            "unknown key '{k}' in 'global'; rt-app would ignore it silently; it reads {}{}",
                            GLOBAL_KEYS.join(", "),
                            suggestion(k, GLOBAL_KEYS.iter().copied())
                        ),
                    ))
                }
            }
        }
        Ok(g)
    }

    fn resources(&self, e: &Entry, objects: &mut Objects) -> R<()> {
        const TYPES: &[&str] = &[
            "mutex",
            "wait",
            "timer",
            "signal",
            "broadcast",
            "sync",
            "sleep",
            "run",
        ];
        let obj = self.object("'resources'", e.value)?;
        for r in self.entries(obj)? {
            let name = Spanned::new(r.key.to_string(), r.key_span);
            let body = self.object(&format!("resource '{}'", r.key), r.value)?;
            let mut ty = None;
            for f in self.entries(body)? {
                match f.key {
                    "type" => ty = Some(self.string(f.key, f.value)?),
                    k => {
                        return Err(Diagnostic::new(
                            f.key_span,
                            format!(
                                "unknown key '{k}' in resource '{}'; rt-app reads only 'type'{}",
                                r.key,
                                suggestion(k, ["type"])
                            ),
                        ))
                    }
                }
            }
            let Some(ty) = ty else {
                return Err(Diagnostic::new(
                    r.span,
                    format!(
                        "resource '{}' has no 'type'; rt-app needs one of {}",
                        r.key,
                        TYPES.join(", ")
                    ),
                ));
            };
            match ty.value.as_str() {
                "mutex" => add_object(&mut objects.locks, &name),
                "wait" => add_object(&mut objects.conds, &name),
                "timer" => {}
                t @ ("signal" | "broadcast" | "sync" | "sleep" | "run") => {
                    self.warn(ty.span, format!("resource type '{t}' makes rt-app create a resource no event ever looks up (signal, broad, sync and wait events use a 'wait' resource, lock and unlock a 'mutex'); it has no effect here — resources are created by use anyway"));
                }
                t => {
                    return Err(Diagnostic::new(
                        ty.span,
                        format!(
                        "resource type '{t}' is not one rt-app knows; use mutex, wait or timer{}",
                        did_you_mean(t, TYPES.iter().copied())
                    ),
                    ))
                }
            }
        }
        Ok(())
    }

    // ---- tasks, phases, events ---------------------------------------------------------------

    fn task(&self, e: &Entry) -> R<Task> {
        let name = Spanned::new(e.key.to_string(), e.key_span);
        let obj = self.object(&format!("task '{}'", e.key), e.value)?;
        let with_phases = obj.properties.iter().any(|p| p.name.as_str() == "phases");
        let entries = self.entries(obj)?;
        let mut t = Task {
            name: name.clone(),
            span: e.span,
            instance: None,
            delay: None,
            loop_: None,
            sched: Sched::default(),
            legacy_runtime: None,
            legacy_period: None,
            legacy_deadline: None,
            phases: Vec::new(),
        };
        let mut direct = Phase {
            name: None,
            loop_: None,
            events: Vec::new(),
            sched: Sched::default(),
        };
        let mut bare_runtime = None;
        let mut phases_entry = None;
        for en in &entries {
            match en.key {
                "instance" => {
                    t.instance =
                        Some(self.int_at_least(en, "a whole number of threads (>= 0)", 0)?)
                }
                "delay" => {
                    t.delay =
                        Some(self.int_at_least(en, "a whole number of microseconds (>= 0)", 0)?)
                }
                "loop" => {
                    t.loop_ = Some(self.int_entry(
                        en,
                        "a whole number of passes (-1: until the global duration)",
                    )?)
                }
                "phases" => phases_entry = Some(en),
                "period" => {
                    t.legacy_period =
                        Some(self.int_at_least(en, "a whole number of microseconds (>= 0)", 0)?)
                }
                "deadline" => {
                    t.legacy_deadline =
                        Some(self.int_at_least(en, "a whole number of microseconds (>= 0)", 0)?)
                }
                "runtime" if with_phases => {
                    t.legacy_runtime =
                        Some(self.int_at_least(en, "a whole number of microseconds (>= 0)", 0)?)
                }
                k => {
                    if self.sched_key(&mut t.sched, en)? {
                        continue;
                    }
                    if EvKind::of(k).is_some() {
                        if with_phases {
                            return Err(Diagnostic::new(
                                en.key_span,
                                format!("event '{k}' is in task '{}', which has 'phases': rt-app reads a task's events only when it has no 'phases' and would ignore this one silently; move it into a phase", name.value),
                            ));
                        }
                        if k == "runtime" {
                            bare_runtime = Some(en.key_span);
                        }
                        direct.events.push(self.event(&name.value, en)?);
                        continue;
                    }
                    let accepted: Vec<&str> = PHASE_KEYS
                        .iter()
                        .chain(TASK_ONLY_KEYS)
                        .chain(if with_phases { &[][..] } else { EVENTS })
                        .copied()
                        .collect();
                    return Err(Diagnostic::new(
                        en.key_span,
                        format!(
                            "unknown key '{k}' in task '{}'; rt-app would ignore it silently{}",
                            name.value,
                            suggestion(k, accepted)
                        ),
                    ));
                }
            }
        }
        if let Some(at) = bare_runtime {
            if t.sched.dl_runtime.is_none() {
                return Err(Diagnostic::new(
                    at,
                    format!("'runtime' in task '{}', which has no 'phases', is ambiguous: rt-app runs it as a runtime event and also reads it as the legacy name of dl-runtime (the SCHED_DEADLINE budget, or a custom slice for SCHED_OTHER since Linux 6.12); rename the event (e.g. 'runtime0': events match by prefix) or give dl-runtime", name.value),
                ));
            }
        }
        for (legacy, modern, what) in [
            (&t.legacy_runtime, &t.sched.dl_runtime, "runtime"),
            (&t.legacy_period, &t.sched.dl_period, "period"),
            (&t.legacy_deadline, &t.sched.dl_deadline, "deadline"),
        ] {
            if let (Some(l), Some(_)) = (legacy, modern) {
                return Err(Diagnostic::new(
                    l.key,
                    format!("'{what}' in task '{}' is rt-app's legacy name of 'dl-{what}', which is also given; rt-app reads '{what}' only without 'dl-{what}': give one", name.value),
                ));
            }
        }
        match phases_entry {
            Some(pe) => {
                let pobj = self.object("'phases'", pe.value)?;
                let pentries = self.entries(pobj)?;
                if pentries.is_empty() {
                    return Err(Diagnostic::new(
                        pe.span,
                        format!("'phases' of task '{}' is empty; rt-app needs at least one phase with events", name.value),
                    ));
                }
                for p in &pentries {
                    t.phases.push(self.phase(&name.value, p)?);
                }
            }
            None => {
                if direct.events.is_empty() {
                    return Err(Diagnostic::new(
                        e.key_span,
                        format!("task '{}' has no events; rt-app refuses a task without events (give events such as run and sleep, or a 'phases' object)", name.value),
                    ));
                }
                t.phases.push(direct);
            }
        }
        Ok(t)
    }

    /// Read `en` into `s` if it is one of the scheduling, affinity or refused keys a task and a
    /// phase share; `false` if it is none of them.
    fn sched_key(&self, s: &mut Sched, en: &Entry) -> R<bool> {
        let us = "a whole number of microseconds (>= 0)";
        match en.key {
            "policy" => {
                let v = self.string(en.key, en.value)?;
                s.policy = Some(Kv {
                    value: Policy::parse(&v, en.key)?,
                    key: en.key_span,
                    span: v.span,
                });
            }
            "priority" => {
                s.priority =
                    Some(self.int_entry(en, "a whole number (nice or real-time priority)")?)
            }
            "dl-runtime" => s.dl_runtime = Some(self.int_at_least(en, us, 0)?),
            "dl-period" => s.dl_period = Some(self.int_at_least(en, us, 0)?),
            "dl-deadline" => s.dl_deadline = Some(self.int_at_least(en, us, 0)?),
            "cpus" => {
                let Value::Array(a) = en.value else {
                    return Err(Diagnostic::new(
                        vspan(en.value),
                        format!(
                            "'cpus' must be an array of CPU numbers such as [0, 2], not {}",
                            describe(en.value)
                        ),
                    ));
                };
                if a.elements.is_empty() {
                    return Err(Diagnostic::new(
                        vspan(en.value),
                        "'cpus' is empty; rt-app would give the thread no CPU to run on: list at least one",
                    ));
                }
                let mut cpus = Vec::new();
                for c in &a.elements {
                    let n = self.int("cpus", c, "an array of whole CPU numbers (>= 0)")?;
                    if n.value < 0 {
                        return Err(Diagnostic::new(
                            n.span,
                            format!(
                                "CPU {} in 'cpus' is not accepted; CPU numbers start at 0",
                                n.value
                            ),
                        ));
                    }
                    cpus.push(n.value);
                }
                s.cpus = Some(Kv {
                    value: cpus,
                    key: en.key_span,
                    span: vspan(en.value),
                });
            }
            "nodes_membind" => {
                let Value::Array(a) = en.value else {
                    return Err(Diagnostic::new(
                        vspan(en.value),
                        format!("'nodes_membind' must be an array of NUMA node numbers such as [0], not {}", describe(en.value)),
                    ));
                };
                for n in &a.elements {
                    self.int_at_least(
                        &Entry { value: n, ..*en },
                        "an array of whole NUMA node numbers (>= 0)",
                        0,
                    )?;
                }
                self.warn(en.key_span, "'nodes_membind' binds the thread's memory to NUMA nodes (rt-app calls numa_set_membind); it has no effect here: the simulator places memory by its own NUMA model and the real backend leaves placement to the kernel");
            }
            k @ ("util_min" | "util_max") => {
                let v = self.int_at_least(en, "a utilization clamp 0..1024 (-1: unchanged)", -1)?;
                if v.value > 1024 {
                    return Err(Diagnostic::new(v.span, format!("'{k}' = {} is not accepted; a utilization clamp is 0..1024 (-1: unchanged)", v.value)));
                }
                self.warn(en.key_span, format!("'{k}' clamps the thread's utilization (sched_setattr's uclamp, read by schedutil and capacity-aware placement): the real backend applies it (knob {}) where the kernel has utilization clamping (CONFIG_UCLAMP_TASK), and refuses the run before it starts where it has not (sched_setattr fails with EOPNOTSUPP there, and rt-app exits); the simulator models no utilization signal and ignores it", k.replace('_', "-")));
                if v.value >= 0 {
                    if k == "util_min" {
                        s.util_min = Some(v);
                    } else {
                        s.util_max = Some(v);
                    }
                }
            }
            "taskgroup" => {
                let v = self.string(en.key, en.value)?;
                // "" is rt-app's "none" (`parse_taskgroup_data` returns NULL for it).
                if !v.value.is_empty() {
                    let path = schedlab_workload::knobs::parse_taskgroup(&v.value)
                        .map_err(|e| Diagnostic::new(v.span, e.to_string()))?;
                    s.taskgroup = Some(Kv {
                        value: path,
                        key: en.key_span,
                        span: v.span,
                    });
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn phase(&self, task: &str, e: &Entry) -> R<Phase> {
        let name = Spanned::new(e.key.to_string(), e.key_span);
        let obj = self.object(&format!("phase '{}'", e.key), e.value)?;
        let mut p = Phase {
            name: Some(name.clone()),
            loop_: None,
            events: Vec::new(),
            sched: Sched::default(),
        };
        for en in self.entries(obj)? {
            if en.key == "loop" {
                p.loop_ = Some(self.int_entry(
                    &en,
                    "a whole number of passes (-1: until the global duration)",
                )?);
                continue;
            }
            if self.sched_key(&mut p.sched, &en)? {
                continue;
            }
            if EvKind::of(en.key).is_some() {
                p.events.push(self.event(task, &en)?);
                continue;
            }
            let misplaced = match en.key {
                "delay" => Some("rt-app reads 'delay' only in a task, before its first phase; in a phase it would be ignored silently: move it to the task, or use a sleep event".to_string()),
                "instance" | "phases" => Some(format!("rt-app reads '{}' only in a task and would ignore it here silently: move it to the task", en.key)),
                k @ ("period" | "deadline") => Some(format!("rt-app reads '{k}' only in a task, as the legacy name of 'dl-{k}', and would ignore it here silently: use 'dl-{k}' (for SCHED_DEADLINE) or a timer event")),
                _ => None,
            };
            if let Some(why) = misplaced {
                return Err(Diagnostic::new(
                    en.key_span,
                    format!(
                        "'{}' in phase '{}' of task '{task}' is misplaced: {why}",
                        en.key, name.value
                    ),
                ));
            }
            let accepted = PHASE_KEYS.iter().chain(EVENTS).copied();
            return Err(Diagnostic::new(
                en.key_span,
                format!(
                    "unknown key '{}' in phase '{}' of task '{task}'; rt-app would ignore it silently{}",
                    en.key,
                    name.value,
                    suggestion(en.key, accepted)
                ),
            ));
        }
        if p.events.is_empty() {
            return Err(Diagnostic::new(
                e.key_span,
                format!("phase '{}' of task '{task}' has no events; rt-app refuses a phase without events", name.value),
            ));
        }
        Ok(p)
    }

    /// A `memrun` object (`type`, `size`, `count`, and for a chase `stride` and `pattern`;
    /// `ref` shares the buffer), with rt-app's defaults and its check that every event of one
    /// shared buffer agrees on size, stride and pattern.
    fn memrun(&self, key: &str, en: &Entry) -> R<MemAccess> {
        let obj = self.object(key, en.value).map_err(|mut d| {
            d.message
                .push_str(" such as {\"type\": \"chase\", \"size\": 1048576, \"count\": 1000}");
            d
        })?;
        const KEYS: [&str; 6] = ["type", "size", "count", "stride", "pattern", "ref"];
        let (mut kind, mut size, mut count, mut stride, mut pattern, mut shared) =
            (None, None, 0, None, None, None);
        for f in self.entries(obj)? {
            match f.key {
                "type" => {
                    let t = self.string(f.key, f.value)?;
                    kind = Some(match t.value.as_str() {
                        "read" => MemAccessKind::Read,
                        "write" => MemAccessKind::Write,
                        "chase" => MemAccessKind::Chase,
                        other => {
                            return Err(Diagnostic::new(
                                t.span,
                                format!("{key} has type \"{other}\"; rt-app accepts \"read\", \"write\" or \"chase\"{}", did_you_mean(other, ["read", "write", "chase"])),
                            ))
                        }
                    });
                }
                "size" => size = Some(self.int_at_least(&f, "a buffer size in bytes (> 0)", 1)?),
                "count" => {
                    count = self
                        .int_at_least(&f, "a whole number of bytes or hops (>= 0)", 0)?
                        .value
                }
                "stride" => {
                    stride = Some(self.int_at_least(&f, "a whole number of bytes (> 0)", 1)?)
                }
                "pattern" => {
                    let p = self.string(f.key, f.value)?;
                    // rt-app reads anything but "sequential" as random; a misspelling would
                    // silently change the pattern, so schedlab accepts only the two words.
                    let at = f.key_span;
                    pattern = Some((match p.value.as_str() {
                        "random" => ChasePattern::Random,
                        "sequential" => ChasePattern::Sequential,
                        other => {
                            return Err(Diagnostic::new(
                                p.span,
                                format!("{key} has pattern \"{other}\"; accepted: \"random\" (the default) or \"sequential\"{}", did_you_mean(other, ["random", "sequential"])),
                            ))
                        }
                    }, at));
                }
                "ref" => shared = Some(self.name(f.key, f.value, "a shared buffer")?),
                k => {
                    return Err(Diagnostic::new(
                        f.key_span,
                        format!(
                            "unknown key '{k}' in {key}; rt-app reads {}{}",
                            KEYS.join(", "),
                            suggestion(k, KEYS)
                        ),
                    ))
                }
            }
        }
        let kind = kind.ok_or_else(|| {
            Diagnostic::new(
                vspan(en.value),
                format!(
                    "{key} has no 'type'; rt-app needs one of \"read\", \"write\" or \"chase\""
                ),
            )
        })?;
        let size = size.ok_or_else(|| {
            Diagnostic::new(
                vspan(en.value),
                format!("{key} has no 'size'; give the buffer's size in bytes (rt-app would allocate an empty buffer)"),
            )
        })?;
        if kind != MemAccessKind::Chase {
            for (name, given) in [
                ("stride", stride.as_ref().map(|s| s.key)),
                ("pattern", pattern.map(|p: (ChasePattern, Span)| p.1)),
            ] {
                if let Some(at) = given {
                    self.warn(at, format!("'{name}' in {key} of type \"{}\": rt-app reads it only for a chase; ignored", kind.name()));
                }
            }
        }
        let access = MemAccess {
            kind,
            size: size.value as u64,
            count: count as u64,
            // A read or write keeps rt-app's defaults for what it ignores.
            stride: (stride.filter(|_| kind == MemAccessKind::Chase))
                .map_or(64, |s| s.value as u64),
            pattern: (pattern.filter(|_| kind == MemAccessKind::Chase))
                .map_or(ChasePattern::Random, |p| p.0),
            shared: shared.as_ref().map(|s| Arc::from(s.value.as_str())),
        };
        access
            .check()
            .map_err(|m| Diagnostic::new(vspan(en.value), format!("{key}: {m}")))?;
        if let Some(name) = &shared {
            if let Err((first, at)) = self.memrun_refs.borrow_mut().admit(&access, en.span) {
                let at = format!("line {}", LineCol::of(self.text, at.start).line);
                return Err(Diagnostic::new(
                    name.span,
                    format!("{key} shares buffer \"{}\" ({}) with the {} memrun at {at} ({}); rt-app requires every memrun of one 'ref' to agree on size, stride and pattern", name.value, access, kind.name(), first),
                ));
            }
        }
        Ok(access)
    }

    fn event(&self, task: &str, en: &Entry) -> R<Event> {
        let kind = EvKind::of(en.key).expect("an event key");
        // How the key is named in messages: `'run0' (a run event)`.
        let key = if en.key == kind.name() {
            format!("'{}'", en.key)
        } else {
            format!(
                "'{}' (a {} event: rt-app matches events by prefix)",
                en.key,
                kind.name()
            )
        };
        let us = "a whole number of microseconds (>= 0)";
        let bytes = "a whole number of bytes (>= 0)";
        let non_negative = |what: &str| -> R<Kv<i64>> {
            let kv = self.int(en.key, en.value, what).map_err(|mut d| {
                d.message = d.message.replacen(&format!("'{}'", en.key), &key, 1);
                d
            })?;
            if kv.value < 0 {
                return Err(Diagnostic::new(
                    kv.span,
                    format!("{key} = {} is not accepted; it must be {what}", kv.value),
                ));
            }
            Ok(Kv {
                key: en.key_span,
                ..kv
            })
        };
        let name = |what: &str| -> R<Spanned<String>> {
            self.name(en.key, en.value, what).map_err(|mut d| {
                d.message = d.message.replacen(&format!("'{}'", en.key), &key, 1);
                d
            })
        };
        let ev = match kind {
            EvKind::Run => Ev::Run(non_negative(us)?),
            EvKind::Runtime => Ev::Runtime(non_negative(us)?),
            EvKind::Sleep => Ev::Sleep(non_negative(us)?),
            EvKind::Mem => Ev::Mem(non_negative(bytes)?),
            EvKind::Iorun => Ev::Iorun(non_negative(bytes)?),
            EvKind::Memrun => Ev::Memrun(self.memrun(&key, en)?),
            EvKind::Lock => Ev::Lock(name("a mutex")?),
            EvKind::Unlock => Ev::Unlock(name("a mutex")?),
            EvKind::Signal => Ev::Signal(name("a condition")?),
            EvKind::Broad => Ev::Broad(name("a condition")?),
            EvKind::Barrier => Ev::Barrier(name("a barrier")?),
            EvKind::Fork => Ev::Fork(name("the task to fork")?),
            EvKind::SemPost => Ev::SemPost(name("a semaphore")?),
            EvKind::SemWait => Ev::SemWait(name("a semaphore")?),
            EvKind::Resume => Ev::Resume(name("the task to resume")?),
            // rt-app does not look at the value.
            EvKind::Yield => Ev::Yield,
            EvKind::Suspend => {
                let v = self.string(en.key, en.value)?;
                if v.value.is_empty() || v.value == task {
                    Ev::Suspend(Spanned::new(task.to_string(), v.span))
                } else {
                    self.warn(v.span, format!("{key} = \"{}\" in task '{task}': rt-app 1.0 suspends on the condition the value names, which 'resume: \"{}\"' wakes, and schedlab does the same; rt-app after 1.0 ignores the value and suspends the task on its own name ('resume: \"{task}\"' wakes it)", v.value, v.value));
                    Ev::Suspend(v)
                }
            }
            EvKind::Wait | EvKind::Sync => {
                let obj = self.object(&key, en.value).map_err(|mut d| {
                    d.message
                        .push_str(" such as {\"ref\": \"cond\", \"mutex\": \"lock\"}");
                    d
                })?;
                let (mut cond, mut mutex) = (None, None);
                for f in self.entries(obj)? {
                    match f.key {
                        "ref" => cond = Some(self.name(f.key, f.value, "a condition")?),
                        "mutex" => mutex = Some(self.name(f.key, f.value, "a mutex")?),
                        k => {
                            return Err(Diagnostic::new(
                                f.key_span,
                                format!("unknown key '{k}' in {key}; rt-app reads 'ref' (the condition) and 'mutex'{}", suggestion(k, ["ref", "mutex"])),
                            ))
                        }
                    }
                }
                let missing = |what: &str| {
                    Diagnostic::new(
                        vspan(en.value),
                        format!("{key} has no '{what}'; rt-app would use a resource named \"unknown\": give both 'ref' (the condition) and 'mutex'"),
                    )
                };
                let cond = cond.ok_or_else(|| missing("ref"))?;
                let mutex = mutex.ok_or_else(|| missing("mutex"))?;
                if kind == EvKind::Wait {
                    Ev::Wait { cond, mutex }
                } else {
                    Ev::Sync { cond, mutex }
                }
            }
            EvKind::Timer => {
                let obj = self.object(&key, en.value).map_err(|mut d| {
                    d.message
                        .push_str(" such as {\"ref\": \"tick\", \"period\": 10000}");
                    d
                })?;
                let (mut tref, mut period) = (None, None);
                for f in self.entries(obj)? {
                    match f.key {
                        "ref" => tref = Some(self.name(f.key, f.value, "the timer")?),
                        "period" => {
                            let p = self.int_at_least(&f, "a whole number of microseconds (> 0)", 1)?;
                            period = Some(p);
                        }
                        "mode" => {
                            let m = self.string(f.key, f.value)?;
                            match m.value.as_str() {
                                "relative" => {}
                                "absolute" => {
                                    return Err(Diagnostic::new(
                                        m.span,
                                        "timer mode \"absolute\" makes rt-app keep the original schedule after an overrun and run the missed activations back to back; schedlab cannot honour it: its periodic timer skips missed activations (counting them missed). Use \"relative\" (rt-app's default)",
                                    ))
                                }
                                other => {
                                    return Err(Diagnostic::new(
                                        m.span,
                                        format!("timer mode \"{other}\" is not one rt-app knows; use \"relative\" (the default){}", did_you_mean(other, ["relative", "absolute"])),
                                    ))
                                }
                            }
                        }
                        k => {
                            return Err(Diagnostic::new(
                                f.key_span,
                                format!("unknown key '{k}' in {key}; rt-app reads 'ref', 'period' and 'mode'{}", suggestion(k, ["ref", "period", "mode"])),
                            ))
                        }
                    }
                }
                let missing = |what: &str, why: &str| {
                    Diagnostic::new(vspan(en.value), format!("{key} has no '{what}'; rt-app would {why}: give 'ref' and 'period' (µs)"))
                };
                Ev::Timer {
                    name: tref.ok_or_else(|| missing("ref", "use a timer named \"unknown\""))?,
                    period: period.ok_or_else(|| missing("period", "use a period of 0"))?,
                }
            }
        };
        Ok(Event { ev, span: en.span })
    }
}

// ---- building the model ----------------------------------------------------------------------

/// Objects declared by use, in order of first use.
#[derive(Default)]
struct Objects {
    locks: Vec<ObjectSpec>,
    conds: Vec<ObjectSpec>,
    barriers: Vec<ObjectSpec>,
    semaphores: Vec<ObjectSpec>,
}

fn add_object(list: &mut Vec<ObjectSpec>, name: &Spanned<String>) {
    if !list.iter().any(|o| o.name.value == name.value) {
        list.push(ObjectSpec {
            name: name.clone(),
            count: None,
        });
    }
}

fn build_groups(tasks: &[Task], global: &Global, objects: &mut Objects) -> R<Vec<GroupSpec>> {
    check_loops(tasks, global)?;
    // rt-app's `alloc_taskgroup` stops at 32 (`max_nbr_tgs`); so do the cgroups made here.
    let mut taskgroups: Vec<&str> = Vec::new();
    for t in tasks {
        for tg in std::iter::once(&t.sched)
            .chain(t.phases.iter().map(|p| &p.sched))
            .filter_map(|s| s.taskgroup.as_ref())
        {
            if !taskgroups.contains(&tg.value.as_str()) {
                if taskgroups.len() == MAX_TASKGROUPS {
                    return Err(Diagnostic::new(tg.span, format!("taskgroup \"{}\" is the file's {}th: rt-app accepts at most {MAX_TASKGROUPS} (its max_nbr_tgs)", tg.value, MAX_TASKGROUPS + 1)));
                }
                taskgroups.push(&tg.value);
            }
        }
    }
    let counts = fork_counts(tasks)?;
    check_shared_use(tasks, &counts)?;
    let mut groups = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        let (count, with_run) = &counts[i];
        // Settings that hold for the whole run are the group's knobs; others change at the
        // phases that give them, as in rt-app, through `set` steps.
        let (knobs, sets) = match merged_sched(t) {
            Ok(s) => (knobs(t, global, &s)?, None),
            Err(_) => (knobs(t, global, &t.sched)?, Some(phase_sets(t, global)?)),
        };
        groups.push(GroupSpec {
            name: t.name.clone(),
            count: lit(count.value as f64, Unit::None, count.span),
            knobs,
            spawned: with_run.is_some(),
            with_run: with_run.map(|n| lit(n as f64, Unit::None, count.span)),
            spawn: None,
            body: body(t, global, objects, sets.as_deref()),
            span: t.span,
        });
    }
    Ok(groups)
}

/// Loops: 0 and below -1 refused, -1 needs a global duration, an endless phase must be the last.
fn check_loops(tasks: &[Task], global: &Global) -> R<()> {
    let with_phases = |t: &Task| t.phases[0].name.is_some();
    for t in tasks {
        if let Some(l) = &t.loop_ {
            match l.value {
                0 if with_phases(t) => {
                    return Err(Diagnostic::new(l.span, format!("'loop' = 0 in task '{}' makes rt-app run none of its phases; give a count >= 1, or -1 for 'until the global duration'", t.name.value)))
                }
                0 => {
                    return Err(Diagnostic::new(l.span, format!("'loop' = 0 in task '{}' makes rt-app repeat its events forever (its pass counter never equals 0); give a count >= 1, or -1 for 'until the global duration'", t.name.value)))
                }
                x if x < -1 => {
                    return Err(Diagnostic::new(l.span, format!("'loop' = {x} in task '{}' is not accepted; give a count >= 1, or -1 for 'until the global duration'", t.name.value)))
                }
                _ => {}
            }
        }
        let endless = |at: Span, what: String| -> R<()> {
            if global.duration.is_none() {
                return Err(Diagnostic::new(at, format!("{what} repeats until rt-app's global duration ends it, and the file gives none ('global': {{ 'duration': SECONDS }}); give a loop count or a duration")));
            }
            Ok(())
        };
        if t.task_loop() == -1 {
            let at = t.loop_.as_ref().map_or(t.name.span, |l| l.span);
            let what = if t.loop_.is_some() {
                format!("task '{}' (loop -1)", t.name.value)
            } else {
                format!(
                    "task '{}' (no 'loop': rt-app's default for a task is -1)",
                    t.name.value
                )
            };
            endless(at, what)?;
        }
        for (i, p) in t.phases.iter().enumerate() {
            let (Some(l), Some(name)) = (&p.loop_, &p.name) else {
                continue;
            };
            match l.value {
                0 => return Err(Diagnostic::new(l.span, format!("'loop' = 0 in phase '{}' makes rt-app repeat the phase forever (its pass counter never equals 0); give a count >= 1, or -1 for 'until the global duration'", name.value))),
                x if x < -1 => return Err(Diagnostic::new(l.span, format!("'loop' = {x} in phase '{}' is not accepted; give a count >= 1, or -1 for 'until the global duration'", name.value))),
                -1 => {
                    endless(l.span, format!("phase '{}' (loop -1)", name.value))?;
                    if let Some(next) = t.phases.get(i + 1).and_then(|n| n.name.as_ref()) {
                        return Err(Diagnostic::new(next.span, format!("phase '{}' of task '{}' would never run: phase '{}' before it loops until the end (loop -1)", next.value, t.name.value, name.value)));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Each task's thread count (with its span) and, for a task some phase forks, how many of those
/// start with the run (its `instance`; the others wait for a fork each).
fn fork_counts(tasks: &[Task]) -> R<Vec<(Kv<i64>, Option<i64>)>> {
    let index: HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.value.as_str(), i))
        .collect();
    // For each task, the forks that start it: (forking task, phase, the fork's value).
    let mut forked_by: Vec<Vec<(usize, usize, Span)>> = vec![Vec::new(); tasks.len()];
    for (ti, t) in tasks.iter().enumerate() {
        for (pi, p) in t.phases.iter().enumerate() {
            for e in &p.events {
                let Ev::Fork(target) = &e.ev else { continue };
                let Some(&target_index) = index.get(target.value.as_str()) else {
                    return Err(Diagnostic::new(
                        target.span,
                        format!("fork of '{}': there is no task of that name (rt-app would stop with \"Can't fork unknown task\"){}", target.value, did_you_mean(&target.value, tasks.iter().map(|t| t.name.value.as_str()))),
                    ));
                };
                forked_by[target_index].push((ti, pi, target.span));
            }
        }
    }
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Visiting,
        Done(i64),
    }
    fn count(
        i: usize,
        tasks: &[Task],
        forked_by: &[Vec<(usize, usize, Span)>],
        state: &mut [State],
    ) -> R<i64> {
        match state[i] {
            State::Done(n) => return Ok(n),
            State::Visiting => unreachable!("cycles are caught at the fork"),
            State::New => {}
        }
        let t = &tasks[i];
        // Upstream rt-app starts a task's `instance`s with the use case whether or not some
        // phase also forks it (`main` creates `num_instances` threads of every task; each fork
        // event creates one more), so a forked task's threads are those plus one per fork.
        let instances = t.instance.as_ref().map_or(1, |n| n.value);
        if forked_by[i].is_empty() {
            state[i] = State::Done(instances);
            return Ok(instances);
        }
        state[i] = State::Visiting;
        let mut total: i64 = instances;
        for &(s, p, at) in &forked_by[i] {
            if state[s] == State::Visiting {
                return Err(Diagnostic::new(at, format!("fork of '{}' closes a cycle of forks (a task forks, directly or not, a task that forks it); rt-app would fork without end, up to its limit of 1024 forks per fork event", t.name.value)));
            }
            let forker = &tasks[s];
            let threads = count(s, tasks, forked_by, state)?;
            if threads == 0 {
                continue;
            }
            let phase = &forker.phases[p];
            let (task_loop, phase_loop) = (forker.task_loop(), phase_loop(phase));
            if task_loop == -1 || phase_loop == -1 {
                return Err(Diagnostic::new(at, format!("fork of '{}' runs in a loop of -1 (task '{}'{}): schedlab needs the number of tasks a fork starts (each run of it starts one), which is finite only with finite loops around it; give the loops counts", t.name.value, forker.name.value, phase.name.as_ref().map_or(String::new(), |n| format!(", phase '{}'", n.value)))));
            }
            let runs = threads
                .checked_mul(task_loop)
                .and_then(|x| x.checked_mul(phase_loop))
                .and_then(|x| total.checked_add(x))
                .filter(|&x| x <= 1_000_000);
            total = runs.ok_or_else(|| {
                Diagnostic::new(
                    at,
                    format!(
                        "fork of '{}' would start more than a million tasks",
                        t.name.value
                    ),
                )
            })?;
        }
        state[i] = State::Done(total);
        Ok(total)
    }
    let mut state = vec![State::New; tasks.len()];
    let mut out = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        let n = count(i, tasks, &forked_by, &mut state)?;
        let span = match (forked_by[i].first(), &t.instance) {
            (Some(&(_, _, at)), _) => at,
            (None, Some(inst)) => inst.span,
            (None, None) => t.name.span,
        };
        out.push((
            Kv {
                value: n,
                key: span,
                span,
            },
            (!forked_by[i].is_empty()).then(|| t.instance.as_ref().map_or(1, |n| n.value)),
        ));
    }
    Ok(out)
}

/// Timers shared between threads, barriers used twice by a task or by a forked one, and resumes
/// of tasks that never suspend.
fn check_shared_use(tasks: &[Task], counts: &[(Kv<i64>, Option<i64>)]) -> R<()> {
    let mut timer_users: HashMap<&str, Vec<(usize, Span)>> = HashMap::new();
    let suspending: Vec<&str> = (tasks.iter())
        .flat_map(|t| t.phases.iter().flat_map(|p| &p.events))
        .filter_map(|e| match &e.ev {
            Ev::Suspend(name) => Some(name.value.as_str()),
            _ => None,
        })
        .collect();
    for (ti, t) in tasks.iter().enumerate() {
        let mut barriers: HashMap<&str, Span> = HashMap::new();
        for e in t.phases.iter().flat_map(|p| &p.events) {
            match &e.ev {
                Ev::Timer { name, .. } if !name.value.starts_with("unique") => {
                    let users = timer_users.entry(name.value.as_str()).or_default();
                    if !users.iter().any(|&(u, _)| u == ti) {
                        users.push((ti, name.span));
                    }
                }
                Ev::Barrier(name) => {
                    if counts[ti].1.is_some() {
                        return Err(Diagnostic::new(name.span, format!("barrier '{}' in task '{}', which is started by fork: rt-app counts a barrier's parties from the instances of the tasks that use it and cannot count forked ones (its tutorial: barrier can't be used with fork)", name.value, t.name.value)));
                    }
                    if barriers.insert(name.value.as_str(), name.span).is_some() {
                        return Err(Diagnostic::new(name.span, format!("barrier '{}' is used twice by task '{}': rt-app counts one party per use, so the task would wait for itself; use a barrier name per synchronisation point", name.value, t.name.value)));
                    }
                }
                Ev::Resume(name) if !suspending.contains(&name.value.as_str()) => {
                    let known = tasks.iter().any(|t| t.name.value == name.value);
                    let why = if known {
                        format!("task '{}' has no suspend event", name.value)
                    } else {
                        format!(
                            "there is no task '{}'{}",
                            name.value,
                            did_you_mean(&name.value, suspending.iter().copied())
                        )
                    };
                    return Err(Diagnostic::new(name.span, format!("resume '{}' would wake nobody: rt-app's resume wakes the threads of the task of that name suspended in a suspend event, and {why}", name.value)));
                }
                _ => {}
            }
        }
    }
    let mut shared: Vec<_> = timer_users.into_iter().collect();
    shared.sort_by_key(|(_, users)| users[0].1.start);
    for (name, users) in shared {
        let threads: i64 = users.iter().map(|&(u, _)| counts[u].0.value).sum();
        if threads > 1 {
            let who: Vec<String> = users
                .iter()
                .map(|&(u, _)| {
                    format!(
                        "'{}' ({} thread{})",
                        tasks[u].name.value,
                        counts[u].0.value,
                        if counts[u].0.value == 1 { "" } else { "s" }
                    )
                })
                .collect();
            let at = users.get(1).map_or(users[0].1, |u| u.1);
            return Err(Diagnostic::new(at, format!("timer '{name}' is shared by {threads} threads ({}): rt-app has them advance one timer, each use by its period; schedlab's timers are per task: give each task its own timer, e.g. a ref starting with 'unique' (rt-app makes those per thread)", who.join(", "))));
        }
    }
    Ok(())
}

/// The task's scheduling keys with its phases' folded in, when they amount to one setting for
/// the whole run (schedlab's groups keep one policy and one CPU list).
///
/// rt-app applies a phase's `cpus` on entry to that phase, and a phase without `cpus` runs on
/// the task's (`set_thread_affinity`); so `cpus` is one setting when every phase runs on the
/// same CPUs. A phase's scheduling keys, by contrast, stay in force until another phase sets
/// them (`set_thread_param` does nothing for a phase without them); so they are one setting
/// when every phase that gives a key gives the same value and either the first phase gives it
/// or the task gives that value too (else the phases before the first setter run with the
/// task's setting on the first pass).
fn merged_sched(t: &Task) -> R<Sched> {
    fn phase_name(p: &Phase) -> String {
        p.name.as_ref().map_or(String::new(), |n| n.value.clone())
    }
    fn refuse(key: &str, at: Span, t: &Task, why: String) -> Diagnostic {
        Diagnostic::new(
            at,
            format!("'{key}' of task '{}': {why}; rt-app switches the thread's setting when a phase starts, but schedlab gives a task one policy and one CPU list for the whole run: set '{key}' on the task, give every phase the same value, or split the phases into tasks", t.name.value),
        )
    }
    /// Scheduling keys: a phase's value stays in force until another phase sets one.
    fn persist<T: Clone + PartialEq>(
        t: &Task,
        key: &str,
        get: impl Fn(&Sched) -> &Option<Kv<T>>,
        slot: &mut Option<Kv<T>>,
    ) -> R<()> {
        let mut setters = t
            .phases
            .iter()
            .filter_map(|p| get(&p.sched).as_ref().map(|v| (p, v)));
        let Some((first_phase, first)) = setters.next() else {
            return Ok(());
        };
        if let Some((p, v)) = setters.find(|(_, v)| v.value != first.value) {
            return Err(refuse(
                key,
                v.key,
                t,
                format!(
                    "phase '{}' gives another value than phase '{}'",
                    phase_name(p),
                    phase_name(first_phase)
                ),
            ));
        }
        let from_start = std::ptr::eq(first_phase, &t.phases[0]);
        if !from_start
            && get(&t.sched)
                .as_ref()
                .is_none_or(|v| v.value != first.value)
        {
            return Err(refuse(key, first.key, t, format!("phase '{}' sets it, which takes effect only when that phase first starts, so phase '{}' before it runs with the task's setting the first time round", phase_name(first_phase), phase_name(&t.phases[0]))));
        }
        *slot = Some(first.clone());
        Ok(())
    }
    let mut s = t.sched.clone();
    persist(t, "policy", |s| &s.policy, &mut s.policy)?;
    persist(t, "priority", |s| &s.priority, &mut s.priority)?;
    persist(t, "dl-runtime", |s| &s.dl_runtime, &mut s.dl_runtime)?;
    persist(t, "dl-period", |s| &s.dl_period, &mut s.dl_period)?;
    persist(t, "dl-deadline", |s| &s.dl_deadline, &mut s.dl_deadline)?;
    persist(t, "util_min", |s| &s.util_min, &mut s.util_min)?;
    persist(t, "util_max", |s| &s.util_max, &mut s.util_max)?;
    persist(t, "taskgroup", |s| &s.taskgroup, &mut s.taskgroup)?;
    // `cpus`: a phase without it runs on the task's CPUs.
    let effective: Vec<(&Phase, Option<&Kv<Vec<i64>>>)> = t
        .phases
        .iter()
        .map(|p| (p, p.sched.cpus.as_ref().or(t.sched.cpus.as_ref())))
        .collect();
    let (first_phase, first) = effective[0];
    let value = |c: Option<&Kv<Vec<i64>>>| c.map(|c| c.value.clone());
    if let Some((p, c)) = effective.iter().find(|(_, c)| value(*c) != value(first)) {
        let at = c.or(first).map_or(t.name.span, |c| c.key);
        let on = |c: Option<&Kv<Vec<i64>>>| match c {
            Some(c) => format!("CPUs {:?}", c.value),
            None => "every CPU".to_string(),
        };
        return Err(refuse(
            "cpus",
            at,
            t,
            format!(
                "phase '{}' runs on {}, phase '{}' on {}",
                phase_name(first_phase),
                on(first),
                phase_name(p),
                on(*c)
            ),
        ));
    }
    s.cpus = first.cloned();
    Ok(s)
}

/// The group's knobs, as `schedlab_workload::knobs::parse_knob` accepts them.
fn knobs(t: &Task, global: &Global, s: &Sched) -> R<Vec<(Spanned<String>, Spanned<String>)>> {
    let mut k = sched_knobs(
        &t.name.value,
        t.name.span,
        s,
        s.policy.clone().or_else(|| global.default_policy.clone()),
        [
            s.dl_runtime.clone().or_else(|| t.legacy_runtime.clone()),
            s.dl_period.clone().or_else(|| t.legacy_period.clone()),
            s.dl_deadline.clone().or_else(|| t.legacy_deadline.clone()),
        ],
    )?;
    k.extend(taskgroup_knob(s));
    // rt-app sets no timer slack: its threads sleep with the one they inherit (the kernel's
    // 50 µs), where schedlab's own workloads ask 1 ns. `--timer-slack` goes over it.
    k.push((
        Spanned::new("timer-slack".to_string(), t.name.span),
        Spanned::new("default".to_string(), t.name.span),
    ));
    Ok(k)
}

/// The `taskgroup` knob of scheduling keys `s`, if they give one.
fn taskgroup_knob(s: &Sched) -> Option<(Spanned<String>, Spanned<String>)> {
    s.taskgroup.as_ref().map(|tg| {
        (
            Spanned::new("taskgroup".to_string(), tg.key),
            Spanned::new(tg.value.clone(), tg.span),
        )
    })
}

/// The knobs for scheduling keys `s` of task `task` (named at `name_at`) under `policy_kv`
/// (none: SCHED_OTHER, left unsaid), with the deadline keys `[runtime, period, deadline]`.
fn sched_knobs(
    task: &str,
    name_at: Span,
    s: &Sched,
    policy_kv: Option<Kv<Policy>>,
    [runtime, period, deadline]: [Option<Kv<i64>>; 3],
) -> R<Vec<(Spanned<String>, Spanned<String>)>> {
    let policy = policy_kv.as_ref().map_or(Policy::Other, |p| p.value);
    let mut out: Vec<(Spanned<String>, Spanned<String>)> = Vec::new();
    let mut push = |key: &str, key_span: Span, value: String, span: Span| {
        out.push((
            Spanned::new(key.to_string(), key_span),
            Spanned::new(value, span),
        ));
    };
    let refuse = |kv: &Option<Kv<i64>>, why: &str| -> R<()> {
        match kv {
            Some(kv) => Err(Diagnostic::new(
                kv.key,
                format!("task '{task}' runs {}, for which {why}", policy.name()),
            )),
            None => Ok(()),
        }
    };
    let only_deadline =
        "rt-app passes no period or deadline to the kernel (they belong to SCHED_DEADLINE)";
    let policy_at = policy_kv
        .as_ref()
        .map_or((name_at, name_at), |p| (p.key, p.span));
    match policy {
        Policy::Other | Policy::Batch => {
            refuse(&period, only_deadline)?;
            refuse(&deadline, only_deadline)?;
            if policy_kv.is_some() {
                let name = if policy == Policy::Other {
                    "other"
                } else {
                    "batch"
                };
                push("policy", policy_at.0, name.into(), policy_at.1);
            }
            if let Some(p) = &s.priority {
                if !(-20..=19).contains(&p.value) {
                    return Err(Diagnostic::new(p.span, format!("'priority' = {} of task '{task}' is its nice value under {}, which must be -20..19", p.value, policy.name())));
                }
                push("nice", p.key, p.value.to_string(), p.span);
            }
            if let Some(r) = runtime.as_ref().filter(|r| r.value > 0) {
                if !(100..=100_000).contains(&r.value) {
                    return Err(Diagnostic::new(r.span, format!("dl-runtime = {} µs of task '{task}' asks {} for a custom slice of that length, which Linux and schedlab accept from 100 µs to 100 ms", r.value, policy.name())));
                }
                push("slice", r.key, format!("{}us", r.value), r.span);
            }
        }
        Policy::Idle => {
            let why = "rt-app only switches the policy: it sets no nice value and no slice";
            refuse(&runtime, why)?;
            refuse(&period, only_deadline)?;
            refuse(&deadline, only_deadline)?;
            if let Some(p) = s.priority.as_ref().filter(|p| p.value != 0) {
                return Err(Diagnostic::new(
                    p.key,
                    format!("task '{task}' runs SCHED_IDLE, for which {why}; remove 'priority'"),
                ));
            }
            push("policy", policy_at.0, "idle".into(), policy_at.1);
        }
        Policy::Fifo | Policy::Rr => {
            let why = "rt-app passes only the real-time priority to the kernel";
            refuse(&runtime, why)?;
            refuse(&period, why)?;
            refuse(&deadline, why)?;
            let prio = s.priority.as_ref().map_or(DEFAULT_RT_PRIORITY, |p| p.value);
            if let Some(p) = s.priority.as_ref().filter(|p| !(1..=99).contains(&p.value)) {
                return Err(Diagnostic::new(p.span, format!("'priority' = {} of task '{task}' is its real-time priority under {}, which must be 1..99", p.value, policy.name())));
            }
            let name = if policy == Policy::Fifo { "fifo" } else { "rr" };
            push("policy", policy_at.0, format!("{name}:{prio}"), policy_at.1);
        }
        Policy::Deadline => {
            if let Some(p) = s.priority.as_ref().filter(|p| p.value != 0) {
                return Err(Diagnostic::new(p.key, format!("task '{task}' runs SCHED_DEADLINE, for which rt-app passes no priority to the kernel; remove 'priority' (dl-runtime, dl-period and dl-deadline set it)")));
            }
            let Some(r) = runtime.filter(|r| r.value > 0) else {
                return Err(Diagnostic::new(policy_at.1, format!("task '{task}' runs SCHED_DEADLINE without 'dl-runtime' (µs of CPU per period); rt-app's default 0 makes the kernel refuse it")));
            };
            let period = period.filter(|p| p.value > 0);
            let deadline = deadline.filter(|d| d.value > 0);
            let p = period.as_ref().map_or(r.value, |p| p.value);
            let d = deadline.as_ref().map_or(p, |d| d.value);
            if !(r.value <= d && d <= p) {
                let at = match (&deadline, &period) {
                    (Some(dl), _) if dl.value < r.value || dl.value > p => dl.span,
                    (_, Some(pe)) => pe.span,
                    _ => r.span,
                };
                return Err(Diagnostic::new(at, format!("task '{task}' runs SCHED_DEADLINE with runtime {} µs, deadline {d} µs and period {p} µs; the kernel needs runtime <= deadline <= period (rt-app's dl-period defaults to dl-runtime, dl-deadline to dl-period)", r.value)));
            }
            push(
                "policy",
                policy_at.0,
                format!("deadline:{}us/{d}us/{p}us", r.value),
                policy_at.1,
            );
        }
    }
    if let Some(c) = &s.cpus {
        let list: Vec<String> = c.value.iter().map(|c| c.to_string()).collect();
        push("cpus", c.key, list.join(","), c.span);
    }
    // rt-app sets the clamps after the policy (`_set_thread_uclamp`), for every policy but
    // SCHED_DEADLINE, where the knobs' check below refuses them.
    for (name, kv) in [("util-min", &s.util_min), ("util-max", &s.util_max)] {
        if let Some(kv) = kv {
            push(name, kv.key, kv.value.to_string(), kv.span);
        }
    }
    // Each knob parsed, then checked with those before it: a fault is reported at the value
    // that brings it in (the CPU numbers are checked against the machine when it runs).
    let mut all = Knobs::default();
    for (key, value) in &out {
        let one = parse_knob(&key.value, &value.value)
            .map_err(|e| Diagnostic::new(value.span, format!("task '{task}': {e}")))?;
        all = all.merged(&one);
        all.validate(task, usize::MAX).map_err(|e| {
            let problem = match e {
                KnobError::Invalid { problem, .. } => problem,
                other => other.to_string(),
            };
            Diagnostic::new(value.span, format!("task '{task}': {problem}"))
        })?;
    }
    Ok(out)
}

/// Per phase, the `set` step rt-app's switch at its start amounts to, if any (rt-app's
/// `thread_body` at the top of each pass: `set_thread_affinity`, then `set_thread_param`).
///
/// CPUs: a phase runs on its `cpus`, else the task's, else every CPU (the mask the thread
/// started with); a step is made where that differs from the phase before it (for the first
/// phase: from the start, or from the last phase, which precedes it from the second pass on).
/// Scheduling keys: rt-app applies a phase's when the phase starts, and they stay in force
/// until another phase sets some — a phase without them keeps what the one before it left,
/// even on the next pass — so each phase that gives one gets a step with the whole setting:
/// its `policy`, else the policy in force before it, with its `priority` (or the policy's
/// default), and its `dl-*` keys.
fn phase_sets(t: &Task, global: &Global) -> R<Vec<Option<Step>>> {
    let task = &t.name.value;
    let cpus_of = |p: &Phase| -> Option<Kv<Vec<i64>>> {
        p.sched.cpus.clone().or_else(|| t.sched.cpus.clone())
    };
    let value = |c: &Option<Kv<Vec<i64>>>| c.as_ref().map(|c| c.value.clone());
    let n = t.phases.len();
    let start_policy = t
        .sched
        .policy
        .clone()
        .or_else(|| global.default_policy.clone());
    let mut out = Vec::new();
    // The policy in force when each phase starts, in file order (the first pass).
    let mut policy = start_policy.clone();
    for (i, p) in t.phases.iter().enumerate() {
        let mut keys: Vec<(Spanned<String>, Spanned<String>)> = Vec::new();
        let here = cpus_of(p);
        let before = if i == 0 {
            value(&t.sched.cpus) != value(&here)
                || value(&cpus_of(&t.phases[n - 1])) != value(&here)
        } else {
            value(&cpus_of(&t.phases[i - 1])) != value(&here)
        };
        let mut at = None;
        if before {
            match &here {
                Some(c) => {
                    let list: Vec<String> = c.value.iter().map(|c| c.to_string()).collect();
                    keys.push((
                        Spanned::new("cpus".into(), c.key),
                        Spanned::new(list.join(","), c.span),
                    ));
                    at = Some(c.key);
                }
                None => {
                    let span = p.name.as_ref().map_or(t.name.span, |n| n.span);
                    keys.push((
                        Spanned::new("cpus".into(), span),
                        Spanned::new("all".into(), span),
                    ));
                    at = Some(span);
                }
            }
        }
        let s = &p.sched;
        let gives = [
            s.policy.as_ref().map(|k| k.key),
            s.priority.as_ref().map(|k| k.key),
            s.dl_runtime.as_ref().map(|k| k.key),
            s.dl_period.as_ref().map(|k| k.key),
            s.dl_deadline.as_ref().map(|k| k.key),
            s.util_min.as_ref().map(|k| k.key),
            s.util_max.as_ref().map(|k| k.key),
        ];
        if let Some(first) = gives.iter().flatten().min_by_key(|k| k.start) {
            let phase_policy = s.policy.clone().or_else(|| policy.clone());
            let mut sched = s.clone();
            sched.cpus = None;
            // A policy left unsaid is SCHED_OTHER: named, so that the step switches to it.
            let named = phase_policy.clone().or(Some(Kv {
                value: Policy::Other,
                key: *first,
                span: *first,
            }));
            let k = sched_knobs(
                task,
                *first,
                &sched,
                named,
                [
                    s.dl_runtime.clone(),
                    s.dl_period.clone(),
                    s.dl_deadline.clone(),
                ],
            )?;
            keys.extend(k);
            policy = phase_policy;
            at = Some(at.map_or(
                *first,
                |a: Span| if a.start < first.start { a } else { *first },
            ));
        }
        // rt-app moves the thread when a phase gives a taskgroup (`set_thread_taskgroup` at
        // each phase's start); a phase without one stays where the thread is.
        if let Some((key, value)) = taskgroup_knob(s) {
            at = Some(at.map_or(key.span, |a: Span| {
                if a.start < key.span.start {
                    a
                } else {
                    key.span
                }
            }));
            keys.push((key, value));
        }
        out.push(at.map(|at| step(StepKind::Set(keys), at)));
    }
    // A phase that gives a priority but no policy takes the policy in force before it; from
    // the second pass on that is the last setter's, which must be the same.
    if t.task_loop() != 1 {
        let last = t
            .phases
            .iter()
            .rev()
            .find_map(|p| p.sched.policy.as_ref())
            .map(|k| k.value);
        let mut in_force = start_policy.as_ref().map(|k| k.value);
        for p in &t.phases {
            if let (None, Some(prio)) = (&p.sched.policy, &p.sched.priority) {
                if last.is_some() && in_force != last {
                    return Err(Diagnostic::new(prio.key, format!("'priority' without 'policy' in phase '{}' of task '{task}' means the policy in force, which is the task's on the first pass but a later phase's on the next: give this phase its 'policy'", p.name.as_ref().map_or("", |n| n.value.as_str()))));
                }
            }
            if let Some(pol) = &p.sched.policy {
                in_force = Some(pol.value);
            }
        }
    }
    Ok(out)
}

/// The group's body: the delay, the timers' anchors, then the loop of phases (each after its
/// `set` step, if `sets` gives it one).
fn body(
    t: &Task,
    global: &Global,
    objects: &mut Objects,
    sets: Option<&[Option<Step>]>,
) -> Vec<Step> {
    let task = &t.name.value;
    let mut out = Vec::new();
    let delay_us = t.delay.as_ref().map_or(0, |d| d.value);
    if let Some(d) = t.delay.as_ref().filter(|d| d.value > 0) {
        out.push(step(StepKind::Sleep(Amount::Fixed(micros(d))), d.key));
    }
    // rt-app starts every timer at the thread's start (after the delay), not at its first use.
    let mut anchored: Vec<String> = Vec::new();
    for e in t.phases.iter().flat_map(|p| &p.events) {
        if let Ev::Timer { name, period } = &e.ev {
            let timer = timer_name(task, name);
            if !anchored.contains(&timer.value) {
                anchored.push(timer.value.clone());
                out.push(step(
                    StepKind::Period {
                        timer,
                        every: micros(period),
                        deadline: None,
                    },
                    e.span,
                ));
            }
        }
    }
    let endless = |at: Span| -> Expr {
        let seconds =
            global.duration.as_ref().map_or(0, |d| d.value) as f64 - delay_us as f64 / 1e6;
        let span = global.duration.as_ref().map_or(at, |d| d.span);
        lit(seconds.max(0.0), Unit::Seconds, span)
    };
    let repeat = |l: &Kv<i64>| -> Expr {
        if l.value == -1 {
            endless(l.span)
        } else {
            lit(l.value as f64, Unit::None, l.span)
        }
    };
    let mut pass = Vec::new();
    for (i, p) in t.phases.iter().enumerate() {
        // Before the phase's own loop (rt-app applies a change once, at the phase's entry)
        // and outside its timed pass (rt-app applies it before taking the pass's start time).
        if let Some(Some(set)) = sets.map(|s| &s[i]) {
            pass.push(set.clone());
        }
        let mut events = Vec::new();
        for e in &p.events {
            event_steps(task, e, global, objects, &mut events);
        }
        let timed_name = match &p.name {
            Some(n) => Spanned::new(format!("{task}.{}.period", n.value), n.span),
            None => Spanned::new(format!("{task}.period"), t.name.span),
        };
        let at = timed_name.span;
        let timed = step(
            StepKind::Timed {
                name: timed_name,
                body: events,
            },
            at,
        );
        match p.loop_.as_ref().filter(|l| l.value != 1) {
            Some(l) => pass.push(step(
                StepKind::Loop {
                    repeat: repeat(l),
                    var: None,
                    body: vec![timed],
                },
                l.key,
            )),
            _ => pass.push(timed),
        }
    }
    pass.push(step(
        StepKind::Count {
            name: Spanned::new(format!("{task}.loops"), t.name.span),
            by: lit(1.0, Unit::None, t.name.span),
        },
        t.name.span,
    ));
    // A task without phases: rt-app counts its `loop` as the phase's (the task's is then 1);
    // read as the task's loop, the passes are the same.
    match &t.loop_ {
        Some(l) if l.value == 1 => out.extend(pass),
        Some(l) => out.push(step(
            StepKind::Loop {
                repeat: repeat(l),
                var: None,
                body: pass,
            },
            l.key,
        )),
        None => out.push(step(
            StepKind::Loop {
                repeat: endless(t.name.span),
                var: None,
                body: pass,
            },
            t.name.span,
        )),
    }
    out
}

/// A timer's name: rt-app's `ref`, or `TASK.ref` for a per-thread (`unique…`) timer.
fn timer_name(task: &str, name: &Spanned<String>) -> Spanned<String> {
    if name.value.starts_with("unique") {
        Spanned::new(format!("{task}.{}", name.value), name.span)
    } else {
        name.clone()
    }
}

fn event_steps(task: &str, e: &Event, global: &Global, objects: &mut Objects, out: &mut Vec<Step>) {
    let at = e.span;
    let mut push = |kind: StepKind| out.push(step(kind, at));
    match &e.ev {
        Ev::Run(us) => push(StepKind::Compute(Amount::Fixed(micros(us)))),
        Ev::Runtime(us) => push(StepKind::Busy(micros(us))),
        Ev::Sleep(us) => push(StepKind::Sleep(Amount::Fixed(micros(us)))),
        Ev::Mem(n) => {
            // rt-app's memload: memset of the per-thread buffer, as often as needed.
            let buffer = global.mem_buffer_size;
            let bytes = |b: i64| lit(b as f64, Unit::Bytes, n.span);
            if n.value <= buffer {
                push(StepKind::Touch(bytes(n.value)));
            } else {
                push(StepKind::Loop {
                    repeat: lit((n.value / buffer) as f64, Unit::None, n.span),
                    var: None,
                    body: vec![step(StepKind::Touch(bytes(buffer)), at)],
                });
                if n.value % buffer > 0 {
                    push(StepKind::Touch(bytes(n.value % buffer)));
                }
            }
        }
        Ev::Memrun(a) => push(StepKind::MemAccess(a.clone())),
        Ev::Iorun(n) => push(StepKind::Io {
            kind: IoKind::Rewrite,
            bytes: lit(n.value as f64, Unit::Bytes, n.span),
        }),
        Ev::Lock(m) => {
            add_object(&mut objects.locks, m);
            push(StepKind::Lock(oref(m)));
        }
        Ev::Unlock(m) => {
            add_object(&mut objects.locks, m);
            push(StepKind::Unlock(oref(m)));
        }
        Ev::Signal(c) => {
            add_object(&mut objects.conds, c);
            push(StepKind::CondSignal(oref(c)));
        }
        Ev::Broad(c) => {
            add_object(&mut objects.conds, c);
            push(StepKind::CondBroadcast(oref(c)));
        }
        Ev::Wait { cond, mutex } => {
            add_object(&mut objects.conds, cond);
            add_object(&mut objects.locks, mutex);
            push(StepKind::CondWait {
                cond: oref(cond),
                lock: oref(mutex),
            });
        }
        Ev::Sync { cond, mutex } => {
            add_object(&mut objects.conds, cond);
            add_object(&mut objects.locks, mutex);
            push(StepKind::CondSignal(oref(cond)));
            push(StepKind::CondWait {
                cond: oref(cond),
                lock: oref(mutex),
            });
        }
        Ev::Barrier(b) => {
            add_object(&mut objects.barriers, b);
            push(StepKind::Barrier(oref(b)));
        }
        Ev::Timer { name, period } => push(StepKind::Period {
            timer: timer_name(task, name),
            every: micros(period),
            deadline: None,
        }),
        Ev::Suspend(name) => {
            let own = Spanned::new(name.value.clone(), at);
            add_object(&mut objects.locks, &own);
            add_object(&mut objects.conds, &own);
            push(StepKind::Lock(oref(&own)));
            push(StepKind::CondWait {
                cond: oref(&own),
                lock: oref(&own),
            });
            push(StepKind::Unlock(oref(&own)));
        }
        Ev::Resume(name) => {
            add_object(&mut objects.locks, name);
            add_object(&mut objects.conds, name);
            push(StepKind::Lock(oref(name)));
            push(StepKind::CondBroadcast(oref(name)));
            push(StepKind::Unlock(oref(name)));
        }
        Ev::Yield => push(StepKind::Yield),
        Ev::Fork(name) => push(StepKind::Spawn(name.clone())),
        Ev::SemPost(s) => {
            add_object(&mut objects.semaphores, s);
            push(StepKind::SemPost(oref(s)));
        }
        Ev::SemWait(s) => {
            add_object(&mut objects.semaphores, s);
            push(StepKind::SemWait(oref(s)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_match_by_prefix_in_rt_apps_order() {
        assert_eq!(EvKind::of("run"), Some(EvKind::Run));
        assert_eq!(EvKind::of("run1"), Some(EvKind::Run));
        assert_eq!(EvKind::of("runtime"), Some(EvKind::Runtime));
        assert_eq!(EvKind::of("runtime2"), Some(EvKind::Runtime));
        assert_eq!(EvKind::of("sleep_long"), Some(EvKind::Sleep));
        assert_eq!(EvKind::of("memrun0"), Some(EvKind::Memrun));
        assert_eq!(EvKind::of("memory"), Some(EvKind::Mem));
        assert_eq!(EvKind::of("unlock0"), Some(EvKind::Unlock));
        assert_eq!(EvKind::of("broadcast"), Some(EvKind::Broad));
        assert_eq!(EvKind::of("sem_wait1"), Some(EvKind::SemWait));
        assert_eq!(EvKind::of("suspend"), Some(EvKind::Suspend));
        assert_eq!(EvKind::of("loop"), None);
        assert_eq!(EvKind::of("dl-runtime"), None);
        assert_eq!(EvKind::of("exec"), None);
    }
}
