//! How a configuration is measured: how many repetitions (a count, or until the primary
//! metric's confidence interval is tight), warm-up, confidence level, time budget, counters.

use crate::error::ExperimentError;
use schedlab_stats::{Decision, StoppingRule, ThresholdRule, Verdict};
use std::path::PathBuf;
use std::time::Duration;

/// How many measured repetitions a configuration gets.
#[derive(Clone, Debug)]
pub enum Budget {
    /// Exactly this many.
    Fixed(usize),
    /// Until the stopping rule converges or gives up.
    Until(StoppingRule),
    /// Until the interval of `metric` is clear of the rule's threshold, or its maximum of runs
    /// (a candidate of [`crate::search`]).
    Threshold {
        /// The metric judged (not necessarily the primary one).
        metric: String,
        /// The threshold and the bounds of runs.
        rule: ThresholdRule,
    },
}

/// Whether a configuration is done after some repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    /// It needs more.
    No,
    /// A fixed count was reached.
    Counted,
    /// The stopping rule converged.
    Converged,
    /// The stopping rule gave up at its maximum.
    GaveUp,
}

impl Done {
    /// The record's `converged` field.
    pub fn converged(self) -> Option<bool> {
        match self {
            Done::Converged => Some(true),
            Done::GaveUp => Some(false),
            Done::No | Done::Counted => None,
        }
    }
}

impl Budget {
    /// A budget from `runs` and `until` (LEVEL:PRECISION, at most `max_runs`).
    pub fn new(
        runs: Option<usize>,
        until: Option<&str>,
        max_runs: usize,
    ) -> Result<Budget, ExperimentError> {
        match (until, runs) {
            (Some(rule), _) => Ok(Budget::Until(
                StoppingRule::parse(rule, max_runs).map_err(ExperimentError::Until)?,
            )),
            (None, Some(0)) => Err(ExperimentError::NoRepetitions),
            (None, runs) => Ok(Budget::Fixed(runs.unwrap_or(3))),
        }
    }

    /// Whether a configuration whose primary metric has these values is done.
    pub fn done(&self, values: &[f64]) -> Done {
        match self {
            Budget::Fixed(n) if values.len() >= *n => Done::Counted,
            Budget::Fixed(_) => Done::No,
            Budget::Until(rule) => match rule.decide(values) {
                Decision::Continue => Done::No,
                Decision::Converged => Done::Converged,
                Decision::GaveUp => Done::GaveUp,
            },
            Budget::Threshold { rule, .. } if rule.verdict(values) != Verdict::Undecided => {
                Done::Converged
            }
            Budget::Threshold { rule, .. } if values.len() >= rule.max_runs => Done::GaveUp,
            Budget::Threshold { .. } => Done::No,
        }
    }

    /// The metric the budget judges, when it is not the primary one.
    pub fn metric(&self) -> Option<&str> {
        match self {
            Budget::Threshold { metric, .. } => Some(metric),
            _ => None,
        }
    }

    /// The most measured repetitions a configuration gets: the count, or the stopping rule's
    /// maximum.
    pub fn most_runs(&self) -> usize {
        match self {
            Budget::Fixed(n) => *n,
            Budget::Until(rule) => rule.max_runs,
            Budget::Threshold { rule, .. } => rule.max_runs,
        }
    }

    /// `run 2/3` or `run 2 (until 95:2%, at most 30)`.
    pub fn describe_progress(&self, done: usize) -> String {
        match self {
            Budget::Fixed(n) => format!("run {done}/{n}"),
            Budget::Until(rule) => format!("run {done} (until {rule}, at most {})", rule.max_runs),
            Budget::Threshold { metric, rule } => format!(
                "run {done} (until {metric}'s {}% interval is clear of {}, at most {})",
                rule.level, rule.threshold, rule.max_runs
            ),
        }
    }
}

/// Where the real backend's wakeup and preemption counters come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterMode {
    /// The in-kernel BPF counters when they load, else the tracefs replay, else /proc only.
    Auto,
    /// The in-kernel BPF counters, or fail.
    Bpf,
    /// The tracefs replay of the wakeup and switch tracepoints, or fail.
    Trace,
    /// /proc only (no tracing overhead).
    Proc,
}

/// The measuring settings of one run or sweep.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Repetitions per configuration.
    pub budget: Budget,
    /// The stopping rule as the user wrote it, for the record.
    pub until_text: Option<String>,
    /// Unrecorded warm-up repetitions per configuration.
    pub warmup: usize,
    /// Confidence level of the summaries, percent.
    pub level: f64,
    /// Time budget per repetition (default: from the workload's size, else 10 minutes).
    pub timeout: Option<Duration>,
    /// Where the record goes, rewritten after every repetition.
    pub json: Option<PathBuf>,
    /// The command line, for the record.
    pub command: Vec<String>,
    /// The slice of the sweep to run (`--shard K/N`); every repetition when `None`.
    pub shard: Option<crate::shard::Shard>,
    /// Record each repetition's run-queue timeline (`--timeline`): its figures and a
    /// downsampled drawing go in the record's repetitions.
    pub timeline: bool,
    /// A directory for each repetition's exact timeline events, as text
    /// (`Timeline::write_events`), one file `C<config>-R<repetition>.txt` per repetition.
    pub timeline_events: Option<PathBuf>,
    /// A directory for rt-app's per-task logs of each measured repetition (`--rt-app-logs`;
    /// [`schedlab_report::rtapp_log`]): the files themselves for a run of one configuration and
    /// `--runs 1`, else one directory `C<config>-R<repetition>` of them per repetition.
    pub rt_app_logs: Option<PathBuf>,
    /// Repetitions run at the same time (`--jobs`), on a backend that allows it
    /// ([`crate::Backend::worker`]); 1 runs one at a time. The results are the same either way.
    pub jobs: usize,
}

/// The most workers `--jobs` accepts: more threads than any machine schedlab runs on has
/// CPUs would only hold more simulated machines in memory at once.
pub const MAX_JOBS: usize = 1024;

impl Settings {
    /// The default time budget of a repetition whose workload expects none.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

    /// The confidence level from its text (80, 90, 95, 98, 99 or 99.5).
    pub fn parse_level(text: &str) -> Result<f64, ExperimentError> {
        schedlab_stats::parse_level(text).map_err(ExperimentError::Level)
    }
}
