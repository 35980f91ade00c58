//! What one repetition takes and gives: its [`RepetitionSetup`], its [`RepetitionResult`] and
//! the [`RunError`] that ends it — shared by the runner that starts it and the supervisor that
//! measures it.

use crate::trace::timeline::RqTrace;
use crate::wakeups::WakeupCounter;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::{CounterSources, Counters};
use schedlab_workload::timeline::Timeline;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Why a repetition did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// Setting up channels, tasks or files failed.
    #[error("setting up the run failed: {0}")]
    Setup(String),
    /// A task could not apply its group's knobs.
    #[error("group '{group}': {message}")]
    Knob {
        /// Group name.
        group: String,
        /// What went wrong, naming the knob and capability.
        message: String,
    },
    /// A task failed or died during its body.
    #[error("task {task} failed: {message}")]
    Task {
        /// Which task (`receiver 3`).
        task: String,
        /// What went wrong.
        message: String,
    },
    /// A process hosting tasks died before they finished.
    #[error("{what} died before its tasks finished: {how}")]
    Died {
        /// What it hosted (`the server process`, `receiver 3`).
        what: String,
        /// How it ended (`process 123 was killed by signal 9`).
        how: String,
    },
    /// A task or process died after its report, before the repetition ended (at the end gate):
    /// its counters would be missing or incomplete, so the repetition fails.
    #[error("{what} died after its report, before the repetition ended: {how}")]
    Lost {
        /// What (`receiver 3`, `the server process (20 tasks)`).
        what: String,
        /// How it ended.
        how: String,
    },
    /// The keeper of the spawned processes' group died before the repetition ended: something
    /// outside the run is killing its processes, and the group could no longer be relied on.
    #[error("the process-group keeper of the spawned tasks (schedlab-keeper) died before the repetition ended: {how}")]
    KeeperDied {
        /// How it ended (`process 123 was killed by signal 9`).
        how: String,
    },
    /// The run was interrupted (SIGINT/SIGTERM).
    #[error("interrupted")]
    Interrupted,
    /// The supervisor ended the repetition after its time budget (the caller says how to
    /// raise it).
    #[error("the supervisor ended the repetition after its time budget of {:.1}s", .0.as_secs_f64())]
    Timeout(Duration),
}

/// What a repetition needs besides the workload.
pub struct RepetitionSetup<'a> {
    /// Knobs per plan group (same order as `plan.groups`).
    pub knobs: &'a [Knobs],
    /// Set by the interrupt handler; the repetition stops when it is set.
    pub stop: Arc<AtomicBool>,
    /// Time budget for the body phase.
    pub budget: Duration,
    /// Wakeup/preemption counting (in-kernel BPF or tracefs), if available.
    pub trace: Option<&'a mut WakeupCounter>,
    /// Run-queue timeline tracing (`--timeline`), if asked for.
    pub rq_trace: Option<&'a mut RqTrace>,
    /// Where the caller wrote the workload's shared files
    /// ([`schedlab_workload::Workload::shared_files`]), if it did; `None`: the repetition
    /// writes [`schedlab_workload::presets::Workload::write_files`] into its own temporary directory.
    pub files: Option<&'a std::path::Path>,
    /// Keep the bodies' pass rows ([`schedlab_workload::passes`], in each task's
    /// [`schedlab_workload::presets::TaskOutcome::passes`]), measured in the task's own thread
    /// with CLOCK_MONOTONIC. Tasks a body spawns keep none.
    pub passes: bool,
}

/// The measured result of one repetition.
#[derive(Debug, Clone)]
pub struct RepetitionResult {
    /// Raw outcome for the workload's metric computation.
    pub outcome: Outcome,
    /// Counters per group name, plus `total`.
    pub counters: BTreeMap<String, Counters>,
    /// Where the counters came from.
    pub sources: CounterSources,
    /// Trace events lost (counters are lower bounds when > 0).
    pub lost_events: u64,
    /// Settings of the first task of each group, read back from /proc after the run.
    pub observed: Vec<BTreeMap<String, String>>,
    /// Per lock of the workload, its statistics in this repetition.
    pub locks: Vec<schedlab_workload::record::LockStats>,
    /// The run-queue timeline, when [`RepetitionSetup::rq_trace`] recorded one.
    pub timeline: Option<Timeline>,
}
