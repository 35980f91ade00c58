//! The workloads schedlab ships, each in its own file, behind the [`Workload`] trait, each
//! declaring itself once ([`Preset::DEF`], a [`WorkloadDef`]: name, help, parameters, its own
//! tables). [`WORKLOADS`] is the one list of them, a line per workload; [`visit`] reaches a
//! preset's type by name from the same list.

pub mod build;
pub mod build_tree;
mod chat;
mod cyclictest;
pub mod def;
pub mod interbench;
mod loads;
pub mod lookup;
mod messaging;
pub mod params;
mod pingpong;
mod schbench;
mod sched_yield;
mod seed000;
mod volano;
mod volano_seed;
mod web;

pub use build::Build;
pub use chat::{Chat, ChatMode, ChatServer, CHAT_HEADER};
pub use cyclictest::{CyclicLoad, CyclicPolicy, Cyclictest};
pub use def::{
    lookup, names, Example, FileOutput, OwnTables, SearchDef, SeedTable, TableStats, Tables,
    WorkloadDef,
};
pub use interbench::{BenchKind, Interbench, LoadKind};
pub use lookup::Lookup;
pub use messaging::Messaging;
pub use params::{
    param_defs, set_from_table, Configurable, DefaultKind, GroupDefault, HostNeeds, ListValues,
    Param, ParamDef, ParamKind, Preset, SizedBy, MAX_MESSAGES, MAX_TASKS,
};
pub use pingpong::PingPong;
pub use schbench::{Pin, Schbench};
pub use sched_yield::Yield;
pub use volano::Volano;
pub use web::{ServerKind, Web, CONFORMING_SHARE_PERCENT, MAX_CONNECTIONS};

use crate::context::{Context, WorkloadError};
use crate::plan::{Plan, TaskRef};
use crate::record::{Better, MetricDef};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// The samples one task's body recorded, by metric name: a short list (a body records one to
/// three metrics), each name once. The simulator hands over its bodies' `&'static str` names
/// without copying them, which matters when a repetition has 100,000 tasks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples(Vec<(Cow<'static, str>, Vec<f64>)>);

impl Samples {
    /// The samples of `metric`, if the body recorded any.
    pub fn get(&self, metric: &str) -> Option<&Vec<f64>> {
        self.0.iter().find(|(m, _)| m == metric).map(|(_, v)| v)
    }

    /// Metrics recorded.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the body recorded nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// From a list whose names are each there once (the simulator's per-task slot, which
    /// keeps its samples in this shape so that a task's are handed over without a copy).
    pub fn from_list(list: Vec<(Cow<'static, str>, Vec<f64>)>) -> Samples {
        Samples(list)
    }
}

impl std::ops::Index<&str> for Samples {
    type Output = Vec<f64>;

    /// The samples of `metric`; panics when the body recorded none (as a map's index does).
    fn index(&self, metric: &str) -> &Vec<f64> {
        self.get(metric)
            .unwrap_or_else(|| panic!("no samples of metric {metric:?}"))
    }
}

impl From<BTreeMap<String, Vec<f64>>> for Samples {
    fn from(map: BTreeMap<String, Vec<f64>>) -> Samples {
        Samples(map.into_iter().map(|(m, v)| (Cow::Owned(m), v)).collect())
    }
}

/// What one task left behind after a repetition, as the backend measured it.
#[derive(Clone, Debug, Default)]
pub struct TaskOutcome {
    /// Samples the body recorded, by metric name.
    pub samples: Samples,
    /// CPU time the task consumed while its body ran.
    pub cpu_time: Duration,
    /// When the body finished, relative to the run's epoch.
    pub finished_at: Duration,
    /// The body's pass rows, when the run kept them ([`crate::Context::logs_passes`]).
    pub passes: crate::passes::PassLog,
}

/// One repetition's raw outcome, from which a workload computes its metrics.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Wall time from releasing the tasks until the last body finished.
    pub wall: Duration,
    /// Per task, indexed by [`TaskRef::id`].
    pub tasks: Vec<TaskOutcome>,
}

impl Outcome {
    /// Sum of a recorded metric over the tasks of group `group` (all groups if `None`).
    pub fn sum(&self, plan: &Plan, group: Option<usize>, metric: &str) -> f64 {
        plan.tasks()
            .iter()
            .filter(|t| group.is_none_or(|g| t.group == g))
            .filter_map(|t| self.tasks.get(t.id))
            .filter_map(|o| o.samples.get(metric))
            .flatten()
            .sum()
    }

    /// Total CPU time of all tasks.
    pub fn cpu_time(&self) -> Duration {
        self.tasks.iter().map(|t| t.cpu_time).sum()
    }
}

/// A workload: a plan, a task body written once against [`Context`], and the metrics it reports.
pub trait Workload: Send + Sync + 'static {
    /// The workload's name on the command line.
    fn name(&self) -> &'static str;
    /// The parameters that define this configuration, for the result record and tables.
    fn params(&self) -> BTreeMap<String, String>;
    /// A short label for this configuration's row in a table (e.g. `threads=16`).
    fn label(&self) -> String {
        String::new()
    }
    /// Groups, channels, locks, task hosting and transport.
    fn plan(&self) -> Plan;
    /// The body every task runs. On the real backend every await completes at once.
    fn body<C: Context>(
        &self,
        task: TaskRef,
        ctx: &C,
    ) -> impl Future<Output = Result<(), WorkloadError>>;
    /// The order in which a backend should create the tasks (task ids). Creation order is also
    /// the order in which tasks waiting at the start gate are woken, which shapes the first
    /// moments of a run; the default is group by group.
    fn start_order(&self) -> Vec<usize> {
        (0..self.plan().total_tasks()).collect()
    }
    /// Tasks (ids) whose body begins by sleeping until a time, and that had reached that sleep
    /// in the original program before the others began (interbench's benchmarked thread waits
    /// on its start semaphore before the load is let go): the simulator starts each asleep,
    /// as if it had slept since the run's start, and wakes it then. The real backend starts
    /// every task at once and lets the body sleep. Default: none.
    fn start_asleep(&self) -> Vec<(usize, Duration)> {
        Vec::new()
    }
    /// The most any one channel carries in a run, when the workload knows it (`None`: it
    /// does not). The real backend uses it to tell whether a blocking TCP write could ever wait
    /// for send-buffer space halfway through a message — the only way two writers' bytes can
    /// interleave on a stream — and lets the writers of a TCP channel take turns under a lock
    /// only then.
    fn channel_volume(&self) -> Option<crate::plan::ChannelVolume> {
        None
    }
    /// The metrics this workload reports, primary first.
    fn metric_defs(&self) -> Vec<MetricDef>;
    /// This repetition's metrics, after checking its outcome (message counts and the like).
    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError>;
    /// A line in the workload's traditional output format for one repetition (hackbench's
    /// `Time: 1.234`), if it has one.
    fn classic_line(&self, _metrics: &BTreeMap<String, f64>) -> Option<String> {
        None
    }
    /// What the workload does, in words, beyond its plan (a workload file's steps), for
    /// `schedlab check`.
    fn describe(&self) -> Option<String> {
        None
    }
    /// Write the files the task bodies read ([`Context::read_file`]) into `dir`, the run's
    /// temporary directory, before the tasks start (a build's tree). The real backend calls it
    /// once per repetition unless [`Workload::shared_files`] says repetitions may share them;
    /// the simulator has no files.
    fn write_files(&self, _dir: &std::path::Path) -> std::io::Result<()> {
        Ok(())
    }
    /// Files the tasks only read, which repetitions and configurations may share (the web
    /// workload's file set): the real backend then writes them once per run, in a directory of
    /// their own ([`Context::read_file`] and a daemon's `@FILES@` name it), with
    /// [`Workload::write_shared_files`] instead of [`Workload::write_files`]. `None` (the
    /// default): [`Workload::write_files`] every repetition.
    fn shared_files(&self) -> Option<SharedFiles> {
        None
    }
    /// Write the shared files of extents `from..` of [`Workload::shared_files`] into `dir`
    /// (those below `from`, written for another configuration of the same key, are there).
    fn write_shared_files(&self, _dir: &std::path::Path, _from: usize) -> std::io::Result<()> {
        Ok(())
    }
    /// A generous upper bound on one repetition's wall time, for the supervisor's budget.
    fn expected_time(&self) -> Option<Duration> {
        None
    }
    /// Tasks (processes and threads) that the programs a repetition starts hold at once,
    /// beyond the plan's own (a real web server's master and workers), with what they are in
    /// words naming the parameters that size them; the real backend counts them in its check
    /// of the room for tasks before anything runs.
    fn program_tasks(&self) -> Option<(&'static str, usize)> {
        None
    }
    /// The `log_basename` of rt-app's per-task logs (`--rt-app-logs`), when the body logs
    /// rt-app's phase passes ([`crate::passes`]): an rt-app file. `None` (the default): the
    /// workload has no such logs.
    fn rt_app_log_basename(&self) -> Option<String> {
        None
    }
    /// The calibration of the busy loop the body's [`Context::compute_loops`] runs, when it
    /// runs any (an rt-app file read with `run-as=loops`): the real backend measures it on
    /// its CPU before the tasks start, as rt-app does, or takes the given number. `None` (the
    /// default): the body runs no such loop.
    fn loop_calibration(&self) -> Option<crate::context::LoopCalibration> {
        None
    }
    /// The calibration at which rt-app's logs count the `perf` column, the loops of rt-app's
    /// busy loop a pass's `run`s take ([`Workload::rt_app_log_basename`]): rt-app's
    /// `calibration`, whatever the body's `run` is. When a run keeps the logs, the real
    /// backend measures a `"CPU<n>"` one before the tasks start, as it measures
    /// [`Workload::loop_calibration`]'s. `None` (the default): the workload has no such logs.
    fn rt_app_log_calibration(&self) -> Option<crate::context::LoopCalibration> {
        None
    }
}

/// What identifies the read-only files of a configuration ([`Workload::shared_files`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedFiles {
    /// Configurations of the same key write the same files for the same extent.
    pub key: String,
    /// How much of them this configuration needs (the web workload's directories); the files
    /// of a larger extent include those of a smaller one, so one directory serves both.
    pub extent: usize,
}

/// Something done with a preset's type: the way to reach every shipped workload through one
/// generic function (a workload's task body is generic over the context, so workloads are not
/// trait objects).
pub trait PresetVisitor {
    /// What the visit returns.
    type Output;
    /// Do it with preset `P`.
    fn visit<P: Preset>(self) -> Self::Output;
}

/// The registry: [`WORKLOADS`] and [`visit`] from one list of preset types.
macro_rules! registry {
    ($($preset:ty),* $(,)?) => {
        /// The shipped workloads' definitions, in the order the command line's help and
        /// `schedlab list` show them.
        pub const WORKLOADS: &[&WorkloadDef] = &[$(&<$preset as Preset>::DEF),*];

        /// Call `visitor` with the preset named `name`; `None` if there is none.
        pub fn visit<V: PresetVisitor>(name: &str, visitor: V) -> Option<V::Output> {
            $(
                if name == <$preset as Preset>::DEF.name {
                    return Some(visitor.visit::<$preset>());
                }
            )*
            None
        }
    };
}

// The shipped workloads: a new preset adds its file and one line here.
registry! {
    Messaging,
    Chat,
    PingPong,
    Interbench,
    Yield,
    Web,
    Lookup,
    Build,
    Schbench,
    Cyclictest,
    Volano,
}

/// Shorthand for a metric definition.
pub(crate) fn metric(
    name: &'static str,
    unit: &'static str,
    better: Better,
    description: &'static str,
) -> MetricDef {
    MetricDef {
        name: name.into(),
        unit: unit.into(),
        better,
        description: description.into(),
    }
}
