//! The measuring loop: each configuration's warm-up and measured repetitions, interleaved
//! across configurations (A B C A B C …) so that drift favours none, for a fixed count or until
//! the primary metric's confidence interval is tight enough. The record is saved after every
//! repetition, so an interrupted or failed run keeps what finished. A shard of a sharded sweep
//! ([`crate::shard`]) runs only its block of the interleaved repetitions, in the same order,
//! each with its own index (the simulator's seed), and records the index.

use crate::backend::{Backend, RepDetail, RepError, RepInput, RepOutput};
use crate::build::{Config, Experiment};
use crate::error::ExperimentError;
use crate::outdir::{Dropped, OutDir};
use crate::settings::{Budget, Done, Settings};
use crate::shard::{ShardError, ShardPlan};
use schedlab_report::output::Stage;
use schedlab_stats::{describe, metric_values};
use schedlab_workload::record::{
    ConfigResult, GroupInfo, Interval, Repetition, RunRecord, ShardInfo, ToolInfo, SCHEMA_VERSION,
};
use schedlab_workload::timeline::replay::DEFAULT_BINS;
use schedlab_workload::Workload;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// How a run ended, for the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Every repetition finished.
    Complete,
    /// Interrupted; the finished repetitions were kept.
    Interrupted,
}

/// Which repetition of a configuration starts, and of how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepetitionCount {
    /// Whether it is an unrecorded warm-up repetition.
    pub warmup: bool,
    /// Its number among the configuration's warm-ups or measured repetitions, from 1.
    pub number: usize,
    /// How many there are: the count, or under `--until` the most there may be.
    pub of: usize,
    /// Whether `of` is only the most there may be (`--until` stops earlier when it converges).
    pub at_most: bool,
}

/// What the loop reports as it goes, for the front end to show.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// A repetition starts (for a progress display; nothing to print otherwise).
    Started {
        /// The workload.
        workload: &'static str,
        /// The configuration's label.
        label: String,
        /// The configuration's position among the configurations, from 0.
        config: usize,
        /// How many configurations there are.
        configs: usize,
        /// Which repetition of the configuration this is.
        repetition: RepetitionCount,
        /// Repetitions (warm-ups included) this measurement has finished, over every
        /// configuration; resumed ones are not counted.
        finished: usize,
        /// The most repetitions (warm-ups included) this measurement runs in all: `finished`
        /// and those still to run, fewer as `--until` configurations converge.
        planned: usize,
    },
    /// A configuration starts from repetitions a previous sweep left.
    Resumed {
        /// The workload.
        workload: &'static str,
        /// The configuration's label.
        label: String,
        /// Repetitions kept.
        repetitions: usize,
    },
    /// A configuration's record in the sweep's directory, or some of its repetitions, are not
    /// resumed (unreadable, or values that cannot be right).
    Dropped {
        /// The workload.
        workload: &'static str,
        /// The configuration's label.
        label: String,
        /// What was dropped and why.
        dropped: Dropped,
    },
    /// A repetition finished.
    Repetition {
        /// The workload.
        workload: &'static str,
        /// The configuration's label.
        label: String,
        /// `warm-up 1/2`, `run 2/3 [simulated … events in … s]`.
        what: String,
        /// The workload's traditional line (`Time: 1.234`), or the primary metric.
        line: String,
    },
}

/// Recompute a configuration's summaries after a repetition.
pub fn update_summary(config: &mut ConfigResult, level: f64) {
    let names: BTreeSet<String> = config
        .repetitions
        .iter()
        .flat_map(|r| r.metrics.keys().cloned())
        .collect();
    let finite = |v: f64| v.is_finite().then_some(v);
    config.summary.clear();
    config.intervals.clear();
    for m in names {
        let d = describe(&metric_values(config, &m), level);
        let iv = Interval {
            half_width: finite(d.ci_half_width),
            harmonic_mean: finite(d.harmonic_mean),
            outliers: d.outliers,
        };
        config.intervals.insert(m.clone(), iv);
        config.summary.insert(m, d.summary);
    }
}

/// The record skeleton for `experiment` on `backend`.
fn new_record<W: Workload, B: Backend>(
    experiment: &Experiment<W, B::Machine>,
    backend: &B,
    settings: &Settings,
) -> RunRecord {
    let first = &experiment.configs[0];
    let mut info = backend.info(&first.machine);
    if experiment
        .configs
        .iter()
        .any(|c| backend.policy_label(&c.machine) != backend.policy_label(&first.machine))
    {
        info.policy = Some("varied: see each configuration's machine".into());
    }
    RunRecord {
        schema: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "schedlab".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        started_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        command: settings.command.clone(),
        machine: schedlab_real::machine::machine_info(),
        workload: first.workload.name().into(),
        backend: info,
        metrics: first.workload.metric_defs(),
        warmup: settings.warmup,
        interrupted: false,
        level: settings.level,
        until: settings.until_text.clone(),
        configs: Vec::new(),
        shard: None,
        search: None,
    }
}

/// A configuration's empty result.
fn config_result<W: Workload, B: Backend>(
    backend: &B,
    workload: &W,
    c: &Config<(), B::Machine>,
) -> ConfigResult {
    let plan = workload.plan();
    ConfigResult {
        label: c.label.clone(),
        params: workload.params(),
        machine: backend.machine_label(&c.machine),
        groups: plan
            .groups
            .iter()
            .zip(&c.knobs)
            .map(|(g, k)| GroupInfo {
                name: g.name.into(),
                tasks: g.tasks,
                knobs: k.clone(),
                observed: Default::default(),
            })
            .collect(),
        ..ConfigResult::default()
    }
}

/// Where the record goes after every repetition.
pub struct Sinks<'a> {
    /// `--json FILE`.
    pub json: Option<&'a std::path::Path>,
    /// A sweep's `--out DIR` (also the source of resumed repetitions).
    pub out: Option<&'a OutDir>,
    /// The summary's exports (`--csv FILE`, `--markdown FILE`).
    pub exports: Option<&'a schedlab_report::export::Exports>,
}

impl Sinks<'_> {
    /// Write the record to every sink at `stage` (each is tried even if another fails); the
    /// first error. Standard output, a device or a FIFO takes only the last write.
    fn save(&self, record: &RunRecord, stage: Stage) -> Result<(), ExperimentError> {
        let json = self.json.map_or(Ok(()), |path| {
            schedlab_report::export::write_json(record, path, stage).map_err(|source| {
                ExperimentError::Write {
                    path: path.to_path_buf(),
                    source,
                }
            })
        });
        // A sweep's directory holds files only: nothing new for it at Stage::Streams.
        let out = match (self.out, stage) {
            (Some(out), Stage::Progress | Stage::Last) => out.save(record),
            _ => Ok(()),
        };
        let exports = self.exports.map_or(Ok(()), |exports| {
            exports
                .write(record, stage)
                .map_err(|(path, source)| ExperimentError::Write { path, source })
        });
        json.and(out).and(exports)
    }
}

/// Write the exact events of repetition `index` of configuration `config` into `dir` (made if
/// missing) as `C<config>-R<index>.txt`.
fn write_timeline_events(
    dir: &std::path::Path,
    config: usize,
    index: u64,
    tl: &schedlab_workload::timeline::Timeline,
) -> Result<(), ExperimentError> {
    let path = dir.join(format!("C{config}-R{index}.txt"));
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut events = Vec::new();
        tl.write_events(&mut events)?;
        schedlab_report::output::write(&path, &events)
    };
    write().map_err(|source| ExperimentError::Write { path, source })
}

/// Fold one repetition's output into its configuration's result; `index` is recorded for a
/// shard's repetitions.
fn add_repetition(
    config: &mut ConfigResult,
    metrics: BTreeMap<String, f64>,
    output: RepOutput,
    index: Option<u64>,
    level: f64,
) {
    let (lost_events, cpus, sim_events) = match output.detail {
        RepDetail::Real {
            lost_events,
            observed,
        } => {
            for (g, obs) in config.groups.iter_mut().zip(observed) {
                if g.observed.is_empty() {
                    g.observed = obs;
                }
            }
            (lost_events, Vec::new(), None)
        }
        RepDetail::Sim { cpus, events, .. } => (0, cpus, Some(events)),
        RepDetail::None => (0, Vec::new(), None),
    };
    config.counter_sources = output.sources;
    let timeline = (output.timeline.as_ref())
        .map(|tl| schedlab_workload::timeline::replay::analyse(tl, DEFAULT_BINS));
    config.repetitions.push(Repetition {
        metrics,
        counters: output.counters,
        lost_events,
        cpus,
        sim_events,
        index,
        locks: output.locks,
        timeline,
        wakeup_latency: None,
    });
    update_summary(config, level);
}

/// A configuration ready to run: its workload shared with the repetitions, the rest apart.
type Prepared<W, M> = (Arc<W>, Config<(), M>);

/// One measurement in progress: the configurations, the record they fill, and where it goes.
struct Measurement<'a, W, B: Backend> {
    configs: Vec<Prepared<W, B::Machine>>,
    record: RunRecord,
    /// Whether each configuration has all its repetitions.
    finished: Vec<bool>,
    /// A shard's repetitions (`--shard`): which of each configuration's repetitions it runs.
    plan: Option<ShardPlan>,
    primary: String,
    settings: &'a Settings,
    sinks: &'a Sinks<'a>,
    stop: &'a Arc<AtomicBool>,
    /// Repetitions (warm-ups included) run so far by this measurement.
    ran: usize,
}

/// One repetition to run: which configuration, whether a warm-up, with which index.
#[derive(Clone, Copy, Debug)]
struct Unit {
    /// The configuration.
    config: usize,
    /// A warm-up's round (from 0); `None` for a measured repetition.
    warmup: Option<usize>,
    /// Its index ([`RepInput::index`]: the simulator's seed is SEED + index).
    index: u64,
}

/// What a worker needs of a configuration to run its repetitions.
struct Job<W, M> {
    workload: Arc<W>,
    machine: M,
    knobs: Vec<schedlab_workload::knobs::Knobs>,
    budget: std::time::Duration,
}

/// How many units per worker may be taken ahead of the oldest one not yet folded: enough that
/// a worker rarely waits behind a slow repetition, few enough that the finished results held
/// back stay small (and, under `--until`, that few repetitions run that a configuration's
/// convergence makes unnecessary).
const WINDOW_PER_WORKER: usize = 2;

/// The units of a parallel measurement between its workers and the thread that folds them.
struct Pipeline {
    state: Mutex<PipeState>,
    /// Signalled whenever the state changes.
    changed: Condvar,
    /// Set to stop: the workers take no more units and their repetitions end early.
    halt: Arc<AtomicBool>,
    /// Units taken ahead of the oldest not folded, at most.
    window: usize,
    /// Whether units of finished configurations are skipped (not a shard's: it runs its slice).
    skip_finished: bool,
}

/// The shared part of a [`Pipeline`].
struct PipeState {
    /// The next unit a worker takes.
    next: usize,
    /// Units before this one are folded.
    folded: usize,
    /// Per configuration, whether it is done.
    finished: Vec<bool>,
    /// Results of units not yet folded.
    results: BTreeMap<usize, Result<RepOutput, RepError>>,
    /// Units the workers are running.
    running: usize,
}

impl Pipeline {
    /// A pipeline over configurations `finished` (whether each is already done).
    fn new(finished: Vec<bool>, window: usize, skip_finished: bool) -> Pipeline {
        Pipeline {
            state: Mutex::new(PipeState {
                next: 0,
                folded: 0,
                finished,
                results: BTreeMap::new(),
                running: 0,
            }),
            changed: Condvar::new(),
            halt: Arc::new(AtomicBool::new(false)),
            window,
            skip_finished,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PipeState> {
        // A worker that panicked leaves consistent state (it holds the lock only to update it).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn halted(&self) -> bool {
        self.halt.load(Ordering::Relaxed)
    }

    /// The next unit for a worker to run, waiting while it is too far ahead; `None` when every
    /// unit is taken or the pipeline is halted.
    fn take(&self, units: &[Unit]) -> Option<usize> {
        let mut s = self.lock();
        loop {
            if self.halted() || s.next >= units.len() {
                return None;
            }
            let unit = &units[s.next];
            if self.skip_finished && unit.warmup.is_none() && s.finished[unit.config] {
                s.next += 1; // converged: the folding thread skips it too
                continue;
            }
            if s.next < s.folded + self.window {
                s.next += 1;
                s.running += 1;
                return Some(s.next - 1);
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A worker's result of unit `pos`.
    fn put(&self, pos: usize, ran: Result<RepOutput, RepError>) {
        let mut s = self.lock();
        s.running -= 1;
        if pos >= s.folded {
            s.results.insert(pos, ran);
        }
        self.changed.notify_all();
    }

    /// Wait for the result of unit `pos`, halting the workers when `stop` is set (SIGINT,
    /// SIGTERM); an interruption when the pipeline halted before any worker took the unit.
    fn wait(&self, pos: usize, stop: &AtomicBool) -> Result<RepOutput, RepError> {
        let mut s = self.lock();
        loop {
            if let Some(ran) = s.results.remove(&pos) {
                return ran;
            }
            if stop.load(Ordering::Relaxed) && !self.halted() {
                self.halt.store(true, Ordering::Relaxed);
                self.changed.notify_all();
            }
            if self.halted() && pos >= s.next {
                return Err(RepError::Interrupted);
            }
            // The stop flag is set by a signal handler, which cannot signal the condition:
            // look at it every few milliseconds.
            let (next, _) = (self.changed)
                .wait_timeout(s, std::time::Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner());
            s = next;
        }
    }

    /// Units up to `pos` are folded; `finished` says whether a configuration is now done.
    fn folded(&self, pos: usize, finished: Option<(usize, bool)>) {
        let mut s = self.lock();
        s.folded = s.folded.max(pos + 1);
        if let Some((i, done)) = finished {
            s.finished[i] = done;
        }
        let folded = s.folded;
        s.results = s.results.split_off(&folded);
        self.changed.notify_all();
    }

    /// Stop: no more units are taken, and running repetitions end early.
    fn halt(&self) {
        self.halt.store(true, Ordering::Relaxed);
        let _s = self.lock();
        self.changed.notify_all();
    }

    /// Halt, wait for the workers' running units to end, and take every result not folded.
    fn drain(&self) -> BTreeMap<usize, Result<RepOutput, RepError>> {
        self.halt();
        let mut s = self.lock();
        while s.running > 0 {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        std::mem::take(&mut s.results)
    }
}

/// How one repetition ended, for the loop.
enum Step {
    /// It finished.
    Ran,
    /// The run was interrupted: stop, keep what finished.
    Interrupted,
}

impl<W: Workload, B: Backend> Measurement<'_, W, B> {
    /// The time budget of a repetition of configuration `i`.
    fn budget(&self, i: usize) -> std::time::Duration {
        self.settings
            .timeout
            .or(self.configs[i].0.expected_time())
            .unwrap_or(Settings::DEFAULT_TIMEOUT)
    }

    /// Run repetition `index` of configuration `i`.
    fn run_one(&self, backend: &mut B, i: usize, index: u64) -> Result<RepOutput, RepError> {
        let (w, c) = &self.configs[i];
        backend.run(
            &c.machine,
            w,
            RepInput {
                knobs: &c.knobs,
                stop: self.stop,
                budget: self.budget(i),
                index,
                timeline: self.settings.timeline,
                passes: self.settings.rt_app_logs.is_some(),
            },
        )
    }

    /// The workload's metrics of one repetition.
    fn metrics(
        &self,
        i: usize,
        output: &RepOutput,
    ) -> Result<BTreeMap<String, f64>, ExperimentError> {
        let w = &self.configs[i].0;
        w.metrics(&output.outcome)
            .map_err(|e| ExperimentError::Backend(format!("{}: {e}", w.name())))
    }

    /// The progress report of one repetition.
    fn progress(&self, i: usize, what: String, metrics: &BTreeMap<String, f64>) -> Progress {
        let (w, c) = &self.configs[i];
        let primary = &self.primary;
        Progress::Repetition {
            workload: w.name(),
            label: c.label.clone(),
            what,
            line: w.classic_line(metrics).unwrap_or_else(|| {
                format!(
                    "{primary}: {}",
                    schedlab_report::table::num(metrics[primary])
                )
            }),
        }
    }

    /// The report that repetition `repetition` of configuration `i` starts.
    fn started(&self, i: usize, repetition: RepetitionCount) -> Progress {
        let (w, c) = &self.configs[i];
        let measured_left: usize = self
            .record
            .configs
            .iter()
            .enumerate()
            .zip(&self.finished)
            .filter(|(_, done)| !**done)
            .map(|((k, r), _)| self.most_runs(k).saturating_sub(r.repetitions.len()))
            .sum();
        let warmups_left = if repetition.warmup {
            // This round's configurations from `i` on, and the rounds after it (a shard warms
            // up only the configurations it measures).
            let warmed = |k: &usize| self.most_runs(*k) > 0;
            (i..self.configs.len()).filter(warmed).count()
                + (self.settings.warmup - repetition.number)
                    * (0..self.configs.len()).filter(warmed).count()
        } else {
            0
        };
        Progress::Started {
            workload: w.name(),
            label: c.label.clone(),
            config: i,
            configs: self.configs.len(),
            repetition,
            finished: self.ran,
            planned: self.ran + warmups_left + measured_left,
        }
    }

    /// The most measured repetitions configuration `i` runs here: a shard's block of it, or the
    /// budget's count (`--max-runs` under `--until`).
    fn most_runs(&self, i: usize) -> usize {
        match &self.plan {
            Some(plan) => plan.indices[i].len(),
            None => self.settings.budget.most_runs(),
        }
    }

    /// The error of a repetition of configuration `i` that did not finish.
    fn failed(&self, i: usize, e: RepError) -> ExperimentError {
        let (message, timed_out) = match e {
            RepError::TimedOut(m) => (m, true),
            RepError::Failed(m) => (m, false),
            RepError::Interrupted => ("interrupted".into(), false),
        };
        ExperimentError::Repetition {
            label: self.configs[i].1.label.clone(),
            message,
            timed_out,
        }
    }

    /// Start each configuration's result, from the repetitions a previous sweep left if any;
    /// refuse a directory another experiment wrote before anything runs.
    fn start(
        &mut self,
        backend: &B,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), ExperimentError> {
        let results: Vec<ConfigResult> = self
            .configs
            .iter()
            .map(|(w, c)| config_result(backend, &**w, c))
            .collect();
        let resumed = match self.sinks.out {
            Some(out) => out.resume_all(&self.record, &results)?,
            None => vec![Default::default(); results.len()],
        };
        for (((w, c), mut result), resume) in self.configs.iter().zip(results).zip(resumed) {
            if let Some(dropped) = resume.dropped {
                progress(Progress::Dropped {
                    workload: w.name(),
                    label: c.label.clone(),
                    dropped,
                });
            }
            result.repetitions = resume.repetitions;
            if let Some(dropped) = self.keep_planned(self.finished.len(), &mut result) {
                progress(Progress::Dropped {
                    workload: w.name(),
                    label: c.label.clone(),
                    dropped,
                });
            }
            if !result.repetitions.is_empty() {
                progress(Progress::Resumed {
                    workload: w.name(),
                    label: c.label.clone(),
                    repetitions: result.repetitions.len(),
                });
                update_summary(&mut result, self.settings.level);
            }
            let done = self.done(self.finished.len(), &result);
            self.finished.push(done != Done::No);
            result.converged = done.converged();
            self.record.configs.push(result);
        }
        Ok(())
    }

    /// Save the record at `stage`; if it cannot be written, stop with the record kept in the
    /// error.
    fn save(&mut self, stage: Stage) -> Result<(), ExperimentError> {
        self.sinks
            .save(&self.record, stage)
            .map_err(|e| ExperimentError::Unsaved {
                source: Box::new(e),
                record: Box::new(std::mem::take(&mut self.record)),
            })
    }

    /// The unrecorded warm-up rounds, interleaved: every configuration's first warm-up, then
    /// every second one (a shard warms up only the configurations it measures).
    fn warmup_units(&self) -> Vec<Unit> {
        let mut units = Vec::new();
        for round in 0..self.settings.warmup {
            for i in 0..self.configs.len() {
                if self.plan.as_ref().is_some_and(|p| p.indices[i].is_empty()) {
                    continue;
                }
                units.push(Unit {
                    config: i,
                    warmup: Some(round),
                    index: RepInput::WARMUP_BASE + round as u64,
                });
            }
        }
        units
    }

    /// The measured repetitions still to run, in the order the loop runs them: a shard's
    /// slice in the sweep's interleaved order, skipping those it holds; otherwise rounds, each
    /// giving every unfinished configuration its next repetition. Under `--until` this is the
    /// most that may run: a configuration that converges skips the rest of its repetitions
    /// ([`Measurement::skipped`]), which changes nothing for the others, as whether a
    /// configuration is done depends on its own repetitions only.
    fn measured_units(&self) -> Vec<Unit> {
        let held: Vec<usize> = (self.record.configs.iter())
            .map(|c| c.repetitions.len())
            .collect();
        let mut units = Vec::new();
        match &self.plan {
            Some(plan) => {
                // How many of each configuration's repetitions come up to this one in the slice.
                let mut before = vec![0; self.configs.len()];
                for &(i, index) in &plan.order {
                    before[i] += 1;
                    if held[i] < before[i] {
                        units.push(Unit {
                            config: i,
                            warmup: None,
                            index,
                        });
                    }
                }
            }
            None => {
                for round in 0.. {
                    let planned = units.len();
                    for (i, &held) in held.iter().enumerate() {
                        if !self.finished[i] && held + round < self.most_runs(i) {
                            units.push(Unit {
                                config: i,
                                warmup: None,
                                index: (held + round) as u64,
                            });
                        }
                    }
                    if units.len() == planned {
                        break;
                    }
                }
            }
        }
        units
    }

    /// Whether `unit` is not to run after all: a measured repetition of a configuration that
    /// is done (converged under `--until`).
    fn skipped(&self, unit: &Unit) -> bool {
        unit.warmup.is_none() && self.plan.is_none() && self.finished[unit.config]
    }

    /// The report that `unit` starts.
    fn started_unit(&self, unit: &Unit) -> Progress {
        let i = unit.config;
        let count = match unit.warmup {
            Some(round) => RepetitionCount {
                warmup: true,
                number: round + 1,
                of: self.settings.warmup,
                at_most: false,
            },
            None => RepetitionCount {
                warmup: false,
                number: self.record.configs[i].repetitions.len() + 1,
                of: self.most_runs(i),
                at_most: !matches!(self.settings.budget, Budget::Fixed(_)),
            },
        };
        self.started(i, count)
    }

    /// Run `units` in order, each folded into the record as it finishes: one at a time on
    /// `backend`, or with `--jobs N` on N workers while this thread folds the results in the
    /// same order ([`Measurement::run_parallel`]).
    fn run_units(
        &mut self,
        backend: &mut B,
        units: &[Unit],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        let jobs = self.settings.jobs.min(units.len());
        if jobs > 1 {
            if let Some(workers) = (0..jobs).map(|_| backend.worker()).collect() {
                return self.run_parallel(workers, units, progress);
            }
        }
        for unit in units {
            if self.skipped(unit) {
                continue;
            }
            progress(self.started_unit(unit));
            let ran = self.run_one(backend, unit.config, unit.index);
            if let Step::Interrupted = self.fold(unit, ran, progress)? {
                return Ok(Step::Interrupted);
            }
        }
        Ok(Step::Ran)
    }

    /// Run `units` on `workers`, one thread each. Workers take units in order, at most
    /// [`WINDOW_PER_WORKER`] per worker ahead of the oldest one not yet folded (so that a slow
    /// repetition holds back a bounded number of finished ones in memory); this thread reports
    /// and folds each unit's result in order, so that the record, its files and the progress
    /// lines go through exactly the states of a serial run. On an interruption the workers
    /// stop at once, and of the repetitions that finished after the first one interrupted,
    /// each configuration keeps those that continue its own repetitions without a gap.
    fn run_parallel(
        &mut self,
        workers: Vec<B>,
        units: &[Unit],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        let window = WINDOW_PER_WORKER * workers.len();
        let jobs: Vec<Job<W, B::Machine>> = (self.configs.iter().enumerate())
            .map(|(i, (w, c))| Job {
                workload: w.clone(),
                machine: c.machine.clone(),
                knobs: c.knobs.clone(),
                budget: self.budget(i),
            })
            .collect();
        let pipe = Pipeline::new(self.finished.clone(), window, self.plan.is_none());
        let timeline = self.settings.timeline;
        let passes = self.settings.rt_app_logs.is_some();
        std::thread::scope(|scope| {
            for mut backend in workers {
                let (pipe, jobs) = (&pipe, &jobs);
                scope.spawn(move || {
                    while let Some(pos) = pipe.take(units) {
                        let unit = &units[pos];
                        let job = &jobs[unit.config];
                        let ran = backend.run(
                            &job.machine,
                            &job.workload,
                            RepInput {
                                knobs: &job.knobs,
                                stop: &pipe.halt,
                                budget: job.budget,
                                index: unit.index,
                                timeline,
                                passes,
                            },
                        );
                        pipe.put(pos, ran);
                    }
                });
            }
            let collected = self.collect(&pipe, units, progress);
            // However collection ended, the workers take no more units and end the ones they
            // run (the scope waits for them).
            pipe.halt();
            collected
        })
    }

    /// Fold the results of `units` in order as the workers of [`Measurement::run_parallel`]
    /// deliver them.
    fn collect(
        &mut self,
        pipe: &Pipeline,
        units: &[Unit],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        for (pos, unit) in units.iter().enumerate() {
            if self.skipped(unit) {
                pipe.folded(pos, None);
                continue;
            }
            progress(self.started_unit(unit));
            let ran = pipe.wait(pos, self.stop);
            let step = self.fold(unit, ran, progress)?;
            let i = unit.config;
            pipe.folded(pos, Some((i, self.finished[i])));
            if let Step::Interrupted = step {
                return self.keep_finished(pipe, units, pos, progress);
            }
        }
        Ok(Step::Ran)
    }

    /// After unit `at` was interrupted: stop the workers, wait for them, and fold each
    /// measured repetition that finished, in order, while its configuration has no gap.
    fn keep_finished(
        &mut self,
        pipe: &Pipeline,
        units: &[Unit],
        at: usize,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        let mut results = pipe.drain();
        let mut gap = vec![false; self.configs.len()];
        if units[at].warmup.is_none() {
            gap[units[at].config] = true;
        }
        for (pos, unit) in units.iter().enumerate().skip(at + 1) {
            if unit.warmup.is_some() || self.skipped(unit) {
                continue;
            }
            let i = unit.config;
            match results.remove(&pos) {
                Some(Ok(output)) if !gap[i] => {
                    progress(self.started_unit(unit));
                    self.fold(unit, Ok(output), progress)?;
                }
                _ => gap[i] = true,
            }
        }
        Ok(Step::Interrupted)
    }

    /// Fold a finished unit into the measurement: a warm-up's progress line, or a measured
    /// repetition added to the record, which is saved.
    fn fold(
        &mut self,
        unit: &Unit,
        ran: Result<RepOutput, RepError>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        self.ran += 1;
        let i = unit.config;
        let Some(round) = unit.warmup else {
            return self.measured(i, unit.index, ran, progress);
        };
        match ran {
            Ok(output) => {
                let metrics = self.metrics(i, &output)?;
                let what = format!("warm-up {}/{}", round + 1, self.settings.warmup);
                progress(self.progress(i, what, &metrics));
                Ok(Step::Ran)
            }
            Err(RepError::Interrupted) => Ok(Step::Interrupted),
            Err(e) => Err(self.failed(i, e)),
        }
    }

    /// One measured repetition (`index`) of configuration `i`, folded into the record, which
    /// is saved.
    fn measured(
        &mut self,
        i: usize,
        index: u64,
        ran: Result<RepOutput, RepError>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        let output = match ran {
            Ok(output) => output,
            Err(RepError::Interrupted) => return Ok(Step::Interrupted),
            Err(e) => {
                let saved = self.sinks.save(&self.record, Stage::Last);
                let mut failed = self.failed(i, e);
                if let (Err(w), ExperimentError::Repetition { message, .. }) = (saved, &mut failed)
                {
                    message.push_str(&format!("; {w}"));
                }
                return Err(failed);
            }
        };
        let metrics = self.metrics(i, &output)?;
        let mut what = match &self.plan {
            Some(plan) => format!("run {}/{} (shard {})", index + 1, plan.runs, plan.shard),
            None => self.settings.budget.describe_progress(index as usize + 1),
        };
        if let RepDetail::Sim { events, wall, .. } = &output.detail {
            what.push_str(&format!(
                " [simulated {} events in {:.2} s]",
                events,
                wall.as_secs_f64()
            ));
        }
        progress(self.progress(i, what, &metrics));
        if let (Some(dir), Some(tl)) = (&self.settings.timeline_events, &output.timeline) {
            write_timeline_events(dir, i, index, tl)?;
        }
        if let Some(dir) = &self.settings.rt_app_logs {
            self.write_rt_app_logs(dir, i, index, &output.outcome)?;
        }
        let sharded = self.plan.is_some().then_some(index);
        let config = &mut self.record.configs[i];
        add_repetition(config, metrics, output, sharded, self.settings.level);
        let done = self.done(i, &self.record.configs[i]);
        if done != Done::No {
            self.finished[i] = true;
            self.record.configs[i].converged = done.converged();
        }
        self.save(Stage::Progress)?;
        Ok(Step::Ran)
    }

    /// Write rt-app's logs of repetition `index` of configuration `i` into `dir`
    /// ([`Settings::rt_app_logs`] says where), one per thread rt-app would have had, under
    /// rt-app's names (a forked one's `TASK-INDEX-NNNN`).
    fn write_rt_app_logs(
        &self,
        dir: &std::path::Path,
        i: usize,
        index: u64,
        outcome: &schedlab_workload::presets::Outcome,
    ) -> Result<(), ExperimentError> {
        let (w, c) = &self.configs[i];
        let Some(basename) = w.rt_app_log_basename() else {
            return Ok(());
        };
        let single = self.configs.len() == 1
            && self.plan.is_none()
            && matches!(self.settings.budget, crate::settings::Budget::Fixed(1));
        let dir = if single {
            dir.to_path_buf()
        } else {
            dir.join(format!("C{i}-R{index}"))
        };
        let plan = w.plan();
        let empty = schedlab_workload::passes::PassLog::default();
        let tasks = plan.tasks();
        let logs: Vec<&schedlab_workload::passes::PassLog> = (tasks.iter())
            .map(|t| outcome.tasks.get(t.id).map_or(&empty, |o| &o.passes))
            .collect();
        let starts: Vec<(&str, schedlab_workload::passes::Start)> = (tasks.iter().zip(&logs))
            .map(|(t, l)| (plan.groups[t.group].name, l.start))
            .collect();
        // rt-app's names: a parked task no fork started has none (rt-app never made it).
        let names = schedlab_report::rtapp_log::upstream_names(&starts);
        let threads: Vec<schedlab_report::rtapp_log::ThreadLog> = (tasks.iter().zip(&logs))
            .zip(names)
            .filter_map(|((t, log), name)| {
                let (index, fork) = name?;
                Some(schedlab_report::rtapp_log::ThreadLog {
                    task: plan.groups[t.group].name,
                    index,
                    fork,
                    knobs: &c.knobs[t.group],
                    log,
                })
            })
            .collect();
        for t in threads.iter().filter(|t| t.log.dropped > 0) {
            eprintln!(
                "schedlab: rt-app log of {}-{}: {} passes after the first {} were not kept",
                t.task,
                t.index,
                t.log.dropped,
                schedlab_workload::passes::MAX_PASSES
            );
        }
        schedlab_report::rtapp_log::write(&dir, &basename, &threads)
            .map(drop)
            .map_err(|source| ExperimentError::Write { path: dir, source })
    }

    /// Whether configuration `i`, with the repetitions `config` holds, is done: a shard's when
    /// it holds every repetition of its slice, else by the budget.
    fn done(&self, i: usize, config: &ConfigResult) -> Done {
        match &self.plan {
            Some(plan) if config.repetitions.len() >= plan.indices[i].len() => Done::Counted,
            Some(_) => Done::No,
            None => {
                let metric = self.settings.budget.metric().unwrap_or(&self.primary);
                self.settings.budget.done(&metric_values(config, metric))
            }
        }
    }

    /// For a shard, keep of configuration `i`'s resumed repetitions only those that are, in
    /// order, the first repetitions of its slice (a shard resumes only its own repetitions, so
    /// each keeps its index and seed); what is dropped, if anything.
    fn keep_planned(&self, i: usize, config: &mut ConfigResult) -> Option<Dropped> {
        let plan = self.plan.as_ref()?;
        let wanted = &plan.indices[i];
        let kept = config
            .repetitions
            .iter()
            .zip(wanted)
            .take_while(|(r, &k)| r.index == Some(k))
            .count();
        let count = config.repetitions.len() - kept;
        if count == 0 {
            return None;
        }
        let reason = match (config.repetitions[kept].index, wanted.get(kept)) {
            (_, None) => format!(
                "is beyond the {} repetitions of shard {}",
                wanted.len(),
                plan.shard
            ),
            (None, Some(k)) => format!(
                "has no repetition index (shard {} runs repetition {} next)",
                plan.shard,
                k + 1
            ),
            (Some(x), Some(k)) => format!(
                "is repetition {} of the sweep, not {} as shard {} runs next",
                x + 1,
                k + 1,
                plan.shard
            ),
        };
        config.repetitions.truncate(kept);
        Some(Dropped::Repetitions {
            path: self
                .sinks
                .out
                .map_or_else(Default::default, |o| o.config_path(&config.label)),
            first: kept,
            count,
            reason,
        })
    }

    /// Mark the record interrupted and save it.
    fn interrupted(mut self) -> Result<(RunEnd, RunRecord), ExperimentError> {
        self.record.interrupted = true;
        self.save(Stage::Last)?;
        Ok((RunEnd::Interrupted, self.record))
    }
}

/// Measure every configuration of `experiment` on `backend`, interleaving their repetitions,
/// and return how it ended and the record (also saved to `sinks` after every repetition).
pub fn measure<W: Workload, B: Backend>(
    experiment: Experiment<W, B::Machine>,
    backend: &mut B,
    settings: &Settings,
    sinks: &Sinks,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(RunEnd, RunRecord), ExperimentError> {
    if experiment.configs.is_empty() {
        return Err(ExperimentError::Setting("no configuration to run".into()));
    }
    let plan = match (settings.shard, &settings.budget) {
        (None, _) => None,
        (Some(shard), Budget::Fixed(runs)) => Some(shard.plan(experiment.configs.len(), *runs)?),
        (Some(_), _) => return Err(ShardError::Until.into()),
    };
    let mut record = new_record(&experiment, backend, settings);
    record.shard = plan.as_ref().map(|p| ShardInfo {
        index: p.shard.index,
        count: p.shard.count,
        runs: p.runs,
    });
    backend.prepare(&experiment.configs, &mut record.backend)?;
    let mut m: Measurement<W, B> = Measurement {
        primary: record.metrics[0].name.clone(),
        record,
        configs: experiment
            .configs
            .into_iter()
            .map(|c| {
                let rest = Config {
                    workload: (),
                    knobs: c.knobs,
                    label: c.label,
                    machine: c.machine,
                };
                (Arc::new(c.workload), rest)
            })
            .collect(),
        finished: Vec::new(),
        plan,
        settings,
        sinks,
        stop,
        ran: 0,
    };
    m.start(backend, progress)?;
    if m.plan.is_some() {
        // A shard's directory names it from the start, even before its first repetition.
        m.save(Stage::Progress)?;
    }
    // Warm-ups and measured repetitions in one sequence, so that workers (`--jobs`) need not
    // wait for the last warm-up before they start measuring.
    let units = [m.warmup_units(), m.measured_units()].concat();
    if let Step::Interrupted = m.run_units(backend, &units, progress)? {
        return m.interrupted();
    }
    // Standard output, a device or a FIFO gets the record now; files have it already.
    m.save(Stage::Streams)?;
    Ok((RunEnd::Complete, m.record))
}
