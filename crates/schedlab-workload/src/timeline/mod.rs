//! The run-queue timeline: where every task was, runnable or not, at every moment of a run, and
//! what follows from it — each CPU's run-queue length over time, its divergence from the mean,
//! CPUs left idle while another has a task waiting that may run on them, and migrations towards
//! a busier CPU.
//!
//! The picture is seed 002's third study (IBM's multi-queue scheduler with CPU pools: "the
//! divergence of the average runqueue length from the mean" over a `make -j12` on a 4-way
//! machine) and the figures of Franke, Nagar, Kravetz and Ravindran (pooled MQ, ALS 2001: run
//! queue length as deviation from the mean, per second). The two checks are invariants 1 and 3
//! of the wasted-cores sanity checker (Lozi et al., "The Linux Scheduler: a Decade of Wasted
//! Cores", EuroSys 2016): no CPU idle while another CPU has a waiting task that may run on it,
//! and no migration from a CPU no busier than its destination.
//!
//! **The event model.** A [`Timeline`] is a task table and a list of [`TaskEvent`]s in time
//! order, each saying "from now on, task T is [`TaskState::Waiting`] / [`TaskState::Running`]
//! on CPU C, or [`TaskState::Off`] (asleep, or gone)". A CPU's run queue is the tasks waiting or
//! running on it, as the kernel's `nr_running` counts them. Tasks that are created during the run
//! are new rows of the table whose first event makes them runnable (a fork is a wakeup of a new
//! task); a task that exits goes `Off` for good. Both backends write the same model: the
//! simulator exactly from its own state changes (`schedlab-sim`), the real backend by replaying
//! the kernel's tracepoints (`schedlab-real`'s `trace::timeline`).
//!
//! [`replay::analyse`] turns a timeline into the [`TimelineSummary`] the record keeps: per series
//! (the workload's tasks; all tasks) the divergence figures and a downsampled length per CPU for
//! drawing, plus the two invariant checks over all tasks.

pub mod replay;

use serde::{Deserialize, Serialize};

/// Where a task is from an event on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    /// Runnable and waiting in the CPU's run queue.
    Waiting,
    /// Running on the CPU.
    Running,
    /// Not runnable: asleep, blocked, or exited.
    Off,
}

/// One change of one task's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskEvent {
    /// When, ns since the timeline's start.
    pub t_ns: u64,
    /// The task (an index into [`Timeline::tasks`]).
    pub task: u32,
    /// The CPU whose run queue the task is on (meaningless for [`TaskState::Off`]).
    pub cpu: u32,
    /// Its state from now on.
    pub state: TaskState,
}

/// A task of the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineTask {
    /// Its group's name (the workload's), or what else it is (`kernel`, a real task's name).
    pub group: String,
    /// Whether it is one of the workload's tasks.
    pub workload: bool,
    /// CPUs it may run on, ascending; `None` when it may run on any (or it is not known).
    pub allowed: Option<Vec<u32>>,
}

/// Where every task was during a run: the exact events, before any downsampling.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// CPUs of the machine (events name CPUs below this).
    pub cpus: usize,
    /// Length of the timeline, ns.
    pub end_ns: u64,
    /// The tasks; events index into this.
    pub tasks: Vec<TimelineTask>,
    /// The events, in time order (a task's events in the order they happened).
    pub events: Vec<TaskEvent>,
    /// Trace events the kernel dropped (the timeline may then be wrong after them).
    pub lost_events: u64,
    /// Where the events came from (`simulator (exact)`, `tracefs instance (…)`).
    pub source: String,
    /// Which tasks it covers: `workload` (only the workload's tasks are in it) or `all`.
    pub covers: String,
}

impl Timeline {
    /// An empty timeline of `cpus` CPUs from `source`.
    pub fn new(cpus: usize, source: &str, covers: &str) -> Timeline {
        Timeline {
            cpus,
            source: source.to_string(),
            covers: covers.to_string(),
            ..Timeline::default()
        }
    }

    /// Add a task; returns its index for events.
    pub fn add_task(&mut self, task: TimelineTask) -> u32 {
        self.tasks.push(task);
        (self.tasks.len() - 1) as u32
    }

    /// Record that `task` is `state` on `cpu` from `t_ns` on.
    #[inline]
    pub fn push(&mut self, t_ns: u64, task: u32, cpu: u32, state: TaskState) {
        self.events.push(TaskEvent {
            t_ns,
            task,
            cpu,
            state,
        });
    }

    /// Write the exact events as text, one per line: `t_ns task cpu state` (state `W`, `R` or
    /// `-`), after a header naming the columns and a `# task N group workload allowed` line per
    /// task. This is the sidecar file next to a record.
    pub fn write_events(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "# schedlab run-queue timeline: {} CPUs, {} ns, source {}, covers {}, lost events {}",
            self.cpus, self.end_ns, self.source, self.covers, self.lost_events
        )?;
        for (i, t) in self.tasks.iter().enumerate() {
            let allowed = match &t.allowed {
                None => "any".to_string(),
                Some(l) => l.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            };
            let group: String = t.group.chars().filter(|c| !c.is_whitespace()).collect();
            writeln!(out, "# task {i} {group} {} {allowed}", t.workload)?;
        }
        writeln!(out, "# t_ns task cpu state")?;
        for e in &self.events {
            let s = match e.state {
                TaskState::Waiting => 'W',
                TaskState::Running => 'R',
                TaskState::Off => '-',
            };
            writeln!(out, "{} {} {} {s}", e.t_ns, e.task, e.cpu)?;
        }
        Ok(())
    }
}

/// The figures of one series of run-queue lengths (one set of tasks counted).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SeriesSummary {
    /// Which tasks are counted: `workload` or `all`.
    pub tasks: String,
    /// Time average of the mean over CPUs of |length − mean length|.
    pub mean_abs_divergence: f64,
    /// Largest |length − mean length| of any CPU at any moment.
    pub max_abs_divergence: f64,
    /// Per whole or partial second: the standard deviation across CPUs of each CPU's mean length
    /// in that second; the mean over seconds.
    pub per_second_sd_mean: f64,
    /// The largest of those per-second standard deviations.
    pub per_second_sd_max: f64,
    /// Per second: max − min across CPUs of each CPU's mean length in that second; the mean
    /// over seconds.
    pub per_second_range_mean: f64,
    /// The largest of those per-second ranges.
    pub per_second_range_max: f64,
    /// Seconds (whole or partial) the per-second figures are over.
    pub seconds: usize,
    /// Largest length of any CPU.
    pub max_length: u32,
    /// Width of one drawing bin, seconds.
    pub bin_s: f64,
    /// Per CPU, its mean length in each bin (downsampled for drawing; rounded to 1/1000).
    pub lengths: Vec<Vec<f32>>,
}

/// A repetition's timeline figures, as the record keeps them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineSummary {
    /// Where the events came from.
    pub source: String,
    /// CPUs.
    pub cpus: usize,
    /// Length of the timeline, seconds.
    pub duration_s: f64,
    /// Task events replayed.
    pub events: u64,
    /// Trace events the kernel dropped; when non-zero the figures may be wrong.
    pub lost_events: u64,
    /// The series: `workload` first, then `all` when the timeline covers all tasks and some are
    /// not the workload's (a real machine's other tasks, the simulator's kernel threads).
    pub series: Vec<SeriesSummary>,
    /// CPU time (seconds, summed over CPUs) a CPU was idle while another CPU was running a task
    /// and had a task waiting that may run on the idle one (wasted-cores invariant 1; over all
    /// tasks the timeline covers).
    pub idle_while_waiting_s: f64,
    /// That time as a share of the machine's CPU time (CPUs × duration), percent.
    pub idle_while_waiting_percent: f64,
    /// Migrations of runnable tasks between run queues.
    pub migrations: u64,
    /// Of those, the ones from a CPU no busier than the destination (wasted-cores invariant 3):
    /// the source's length (the task included) was not above the destination's.
    pub migrations_to_busier: u64,
}

impl TimelineSummary {
    /// The series of `tasks` (`workload` or `all`), if present.
    pub fn series(&self, tasks: &str) -> Option<&SeriesSummary> {
        self.series.iter().find(|s| s.tasks == tasks)
    }
}
