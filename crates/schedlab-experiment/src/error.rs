//! The experiment layer's errors: typed, in the model's words. The binary turns each into a
//! message that names its flag (`--group`, `--vary`, `--policy`).

use schedlab_workload::{KnobError, ParamError, ValueError};
use std::path::PathBuf;

/// Why an experiment cannot be built or run.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// No workload of that name.
    #[error("unknown workload '{0}'")]
    UnknownWorkload(String),
    /// A workload parameter (given, defaulted or varied).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A group argument (`NAME:knob=value,...`) that does not parse.
    #[error("{source}")]
    GroupArg {
        /// What is wrong.
        source: KnobError,
    },
    /// A group the workload does not have.
    #[error("'{arg}': workload '{workload}' has no group '{group}'; its groups are: {groups}")]
    NoSuchGroup {
        /// The argument as given.
        arg: String,
        /// The workload.
        workload: &'static str,
        /// The group named.
        group: String,
        /// The workload's groups.
        groups: String,
    },
    /// The same group given twice.
    #[error("'{0}' is given twice; put all its knobs in one group argument")]
    GroupTwice(String),
    /// A group's knobs that cannot be used (out of range, or on this machine).
    #[error(transparent)]
    Knob(#[from] KnobError),
    /// A knob the workload sets because of one of its parameters, also set by the user.
    #[error("{workload}: {param} sets the {group} group's {knob} ({value}); drop {knob}= from the {group} group's knobs")]
    ForcedKnob {
        /// The workload.
        workload: &'static str,
        /// The parameter that sets it (`rt`).
        param: &'static str,
        /// The group.
        group: &'static str,
        /// The knob (`policy`).
        knob: &'static str,
        /// The value it sets.
        value: String,
    },
    /// A bad simulated machine (CPU count, profile, cost, policy name or parameter).
    #[error("{0}")]
    Machine(String),
    /// A policy spec that names no policy or a bad parameter.
    #[error(transparent)]
    Policy(Box<schedlab_sim::policy::SpecError>),
    /// An unknown cost profile, or a profile file that cannot be used.
    #[error(transparent)]
    Profile(schedlab_sim::profile_file::ProfileFileError),
    /// A cost override that cannot be used.
    #[error(transparent)]
    Cost(schedlab_sim::cost::CostError),
    /// A simulated CPU count out of range.
    #[error("{cpus} CPUs is not accepted; the simulator models 1..{max} CPUs")]
    SimCpus {
        /// The count asked for.
        cpus: usize,
        /// The most the simulator models.
        max: usize,
    },
    /// Knobs the simulated policy has no notion of.
    #[error("{message}")]
    PolicyRefuses {
        /// The policy as given (`cfs`).
        policy: String,
        /// What it refuses and what it accepts.
        message: String,
    },
    /// A variation (`KEY=V1,V2`) that cannot be used.
    #[error("{key}: {problem}")]
    Vary {
        /// The key as given.
        key: String,
        /// What is wrong and what is accepted.
        problem: String,
    },
    /// A sweep asking for more repetitions than [`crate::vary::MAX_SWEEP_REPETITIONS`],
    /// refused before it is built.
    #[error("{message}")]
    TooLarge {
        /// The count, the limit and what to do.
        message: String,
    },
    /// One combination of a sweep's values that cannot be built.
    #[error("{combination}: {source}")]
    Combination {
        /// `threads=4 policy=o1`.
        combination: String,
        /// Why.
        source: Box<ExperimentError>,
    },
    /// A fault of knobs a workload file gives a group, at their place in the file.
    #[error("{place}: {source}")]
    InFile {
        /// `file:line:column` of the knobs.
        place: String,
        /// Why.
        source: Box<ExperimentError>,
    },
    /// A value that does not parse.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A fixed count of zero repetitions.
    #[error("at least one measured repetition is needed")]
    NoRepetitions,
    /// A confidence level that is not accepted.
    #[error(transparent)]
    Level(schedlab_stats::LevelError),
    /// A stopping rule that is not accepted.
    #[error(transparent)]
    Until(schedlab_stats::ParseRuleError),
    /// A `--shard` that cannot be used.
    #[error(transparent)]
    Shard(#[from] crate::shard::ShardError),
    /// Another setting of the measuring loop.
    #[error("{0}")]
    Setting(String),
    /// The machine cannot afford what a configuration needs.
    #[error("{0}")]
    Host(String),
    /// Tracepoint counters were required and cannot be had.
    #[error("{0}")]
    TraceRequired(String),
    /// The real backend's counters or limits.
    #[error("{0}")]
    Backend(String),
    /// Stopped from outside (Ctrl-C) before anything could be kept.
    #[error("interrupted; nothing was written")]
    Interrupted,
    /// A repetition failed.
    #[error("{label}{sep}{message}", sep = if label.is_empty() { "" } else { ": " })]
    Repetition {
        /// The configuration's label (empty for a lone configuration).
        label: String,
        /// What failed.
        message: String,
        /// Whether it ran past its time budget.
        timed_out: bool,
    },
    /// A record in a sweep's directory that another experiment wrote: resuming from it would
    /// mix results, overwriting it would lose them.
    #[error("{} was written by another experiment ({}); resuming would mix its results and overwriting would lose them", path.display(), differences.join("; "))]
    OtherExperiment {
        /// The record file.
        path: PathBuf,
        /// What differs, each as `what THERE there, HERE here`.
        differences: Vec<String>,
    },
    /// The run finished (or stopped) but its record could not be written: the record, as it
    /// stands, is kept here so that its summary is not lost.
    #[error("{source}; the results were not saved")]
    Unsaved {
        /// Why the record could not be written.
        source: Box<ExperimentError>,
        /// The record as far as it got.
        record: Box<schedlab_workload::record::RunRecord>,
    },
    /// A record could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
