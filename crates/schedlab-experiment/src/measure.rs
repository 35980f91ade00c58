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
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
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

/// How one repetition ended, for the loop.
enum Step {
    /// It finished.
    Ran,
    /// The run was interrupted: stop, keep what finished.
    Interrupted,
}

impl<W: Workload, B: Backend> Measurement<'_, W, B> {
    /// Run repetition `index` of configuration `i`.
    fn run_one(&self, backend: &mut B, i: usize, index: u64) -> Result<RepOutput, RepError> {
        let (w, c) = &self.configs[i];
        let budget = self
            .settings
            .timeout
            .or(w.expected_time())
            .unwrap_or(Settings::DEFAULT_TIMEOUT);
        backend.run(
            &c.machine,
            w,
            RepInput {
                knobs: &c.knobs,
                stop: self.stop,
                budget,
                index,
                timeline: self.settings.timeline,
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

    /// The unrecorded warm-up rounds, interleaved.
    fn warm_up(
        &mut self,
        backend: &mut B,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        for round in 0..self.settings.warmup {
            for i in 0..self.configs.len() {
                if self.plan.as_ref().is_some_and(|p| p.indices[i].is_empty()) {
                    continue; // a shard warms up only the configurations it measures
                }
                let count = RepetitionCount {
                    warmup: true,
                    number: round + 1,
                    of: self.settings.warmup,
                    at_most: false,
                };
                progress(self.started(i, count));
                let ran = self.run_one(backend, i, RepInput::WARMUP_BASE + round as u64);
                self.ran += 1;
                match ran {
                    Ok(output) => {
                        let metrics = self.metrics(i, &output)?;
                        let what = format!("warm-up {}/{}", round + 1, self.settings.warmup);
                        progress(self.progress(i, what, &metrics));
                    }
                    Err(RepError::Interrupted) => return Ok(Step::Interrupted),
                    Err(e) => return Err(self.failed(i, e)),
                }
            }
        }
        Ok(Step::Ran)
    }

    /// One measured repetition of configuration `i`, folded into the record, which is saved.
    fn measure_one(
        &mut self,
        backend: &mut B,
        i: usize,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        let done = self.record.configs[i].repetitions.len();
        let index = match &self.plan {
            Some(plan) => plan.indices[i][done],
            None => done as u64,
        };
        let count = RepetitionCount {
            warmup: false,
            number: done + 1,
            of: self.most_runs(i),
            at_most: !matches!(self.settings.budget, Budget::Fixed(_)),
        };
        progress(self.started(i, count));
        let ran = self.run_one(backend, i, index);
        self.ran += 1;
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

    /// A shard's repetitions, in the sweep's interleaved order, skipping those it holds.
    fn shard_rounds(
        &mut self,
        backend: &mut B,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        let Some(plan) = &self.plan else {
            return Ok(Step::Ran);
        };
        let order = plan.order.clone();
        // How many of each configuration's repetitions come before this one in the slice.
        let mut before = vec![0; self.configs.len()];
        for (i, _) in order {
            before[i] += 1;
            if self.record.configs[i].repetitions.len() >= before[i] {
                continue; // resumed
            }
            if let Step::Interrupted = self.measure_one(backend, i, progress)? {
                return Ok(Step::Interrupted);
            }
        }
        Ok(Step::Ran)
    }

    /// Measured rounds, each giving every unfinished configuration one repetition, until all
    /// are finished.
    fn rounds(
        &mut self,
        backend: &mut B,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Step, ExperimentError> {
        if self.plan.is_some() {
            return self.shard_rounds(backend, progress);
        }
        while self.finished.iter().any(|f| !f) {
            for i in 0..self.configs.len() {
                if !self.finished[i] {
                    if let Step::Interrupted = self.measure_one(backend, i, progress)? {
                        return Ok(Step::Interrupted);
                    }
                }
            }
        }
        Ok(Step::Ran)
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
    if let Step::Interrupted = m.warm_up(backend, progress)? {
        return m.interrupted();
    }
    if let Step::Interrupted = m.rounds(backend, progress)? {
        return m.interrupted();
    }
    // Standard output, a device or a FIFO gets the record now; files have it already.
    m.save(Stage::Streams)?;
    Ok((RunEnd::Complete, m.record))
}
