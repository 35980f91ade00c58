//! The measuring loop: each configuration's warm-up and measured repetitions, interleaved
//! across configurations (A B C A B C …) so that drift favours none, for a fixed count or until
//! the primary metric's confidence interval is tight enough. The record is saved after every
//! repetition, so an interrupted or failed run keeps what finished.

use crate::backend::{Backend, RepDetail, RepError, RepInput, RepOutput};
use crate::build::{Config, Experiment};
use crate::error::ExperimentError;
use crate::outdir::OutDir;
use crate::settings::{Done, Settings};
use schedlab_stats::{describe, metric_values};
use schedlab_workload::record::{
    ConfigResult, GroupInfo, Interval, Repetition, RunRecord, ToolInfo, SCHEMA_VERSION,
};
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

/// What the loop reports as it goes, for the front end to show.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// A configuration starts from repetitions a previous sweep left.
    Resumed {
        /// The workload.
        workload: &'static str,
        /// The configuration's label.
        label: String,
        /// Repetitions kept.
        repetitions: usize,
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
}

impl Sinks<'_> {
    fn save(&self, record: &RunRecord) -> Result<(), ExperimentError> {
        if let Some(path) = self.json {
            schedlab_report::export::write_json(record, path).map_err(|source| {
                ExperimentError::Write {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        }
        if let Some(out) = self.out {
            out.save(record)?;
        }
        Ok(())
    }
}

/// Fold one repetition's output into its configuration's result.
fn add_repetition(
    config: &mut ConfigResult,
    metrics: BTreeMap<String, f64>,
    output: RepOutput,
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
    config.repetitions.push(Repetition {
        metrics,
        counters: output.counters,
        lost_events,
        cpus,
        sim_events,
    });
    update_summary(config, level);
}

/// A configuration ready to run: its workload shared with the repetitions, the rest apart.
type Prepared<W, M> = (Arc<W>, Config<(), M>);

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
    let mut record = new_record(&experiment, backend, settings);
    backend.prepare(&experiment.configs, &mut record.backend)?;
    let primary = record.metrics[0].name.clone();
    let configs: Vec<Prepared<W, B::Machine>> = experiment
        .configs
        .into_iter()
        .map(|c| {
            (
                Arc::new(c.workload),
                Config {
                    workload: (),
                    knobs: c.knobs,
                    label: c.label,
                    machine: c.machine,
                },
            )
        })
        .collect();

    let mut finished = Vec::with_capacity(configs.len());
    for (w, c) in &configs {
        let mut result = config_result(backend, &**w, c);
        if let Some(out) = sinks.out {
            result.repetitions = out.resume(&record, &result);
            if !result.repetitions.is_empty() {
                progress(Progress::Resumed {
                    workload: w.name(),
                    label: c.label.clone(),
                    repetitions: result.repetitions.len(),
                });
                update_summary(&mut result, settings.level);
            }
        }
        let done = settings.budget.done(&metric_values(&result, &primary));
        finished.push(done != Done::No);
        result.converged = done.converged();
        record.configs.push(result);
    }

    let run_one = |backend: &mut B, i: usize, index: u64| {
        let (w, c) = &configs[i];
        let budget = settings
            .timeout
            .or(w.expected_time())
            .unwrap_or(Settings::DEFAULT_TIMEOUT);
        backend.run(
            &c.machine,
            w,
            RepInput {
                knobs: &c.knobs,
                stop,
                budget,
                index,
            },
        )
    };
    let line = |i: usize, metrics: &BTreeMap<String, f64>| {
        configs[i].0.classic_line(metrics).unwrap_or_else(|| {
            format!(
                "{primary}: {}",
                schedlab_report::table::num(metrics[&primary])
            )
        })
    };
    let failed = |i: usize, e: RepError| {
        let (message, timed_out) = match e {
            RepError::TimedOut(m) => (m, true),
            RepError::Failed(m) => (m, false),
            RepError::Interrupted => ("interrupted".into(), false),
        };
        ExperimentError::Repetition {
            label: configs[i].1.label.clone(),
            message,
            timed_out,
        }
    };
    let metrics_of = |i: usize, output: &RepOutput| {
        let w = &configs[i].0;
        w.metrics(&output.outcome)
            .map_err(|e| ExperimentError::Backend(format!("{}: {e}", w.name())))
    };

    for round in 0..settings.warmup {
        for (i, _) in configs.iter().enumerate() {
            match run_one(backend, i, RepInput::WARMUP_BASE + round as u64) {
                Ok(output) => {
                    let metrics = metrics_of(i, &output)?;
                    progress(Progress::Repetition {
                        workload: configs[i].0.name(),
                        label: configs[i].1.label.clone(),
                        what: format!("warm-up {}/{}", round + 1, settings.warmup),
                        line: line(i, &metrics),
                    });
                }
                Err(RepError::Interrupted) => return interrupted(record, sinks),
                Err(e) => return Err(failed(i, e)),
            }
        }
    }
    while finished.iter().any(|f| !f) {
        for i in 0..configs.len() {
            if finished[i] {
                continue;
            }
            let index = record.configs[i].repetitions.len() as u64;
            let output = match run_one(backend, i, index) {
                Ok(output) => output,
                Err(RepError::Interrupted) => return interrupted(record, sinks),
                Err(e) => {
                    sinks.save(&record)?;
                    return Err(failed(i, e));
                }
            };
            let metrics = metrics_of(i, &output)?;
            let config = &mut record.configs[i];
            let mut what = settings
                .budget
                .describe_progress(config.repetitions.len() + 1);
            if let RepDetail::Sim { events, wall, .. } = &output.detail {
                what.push_str(&format!(
                    " [simulated {} events in {:.2} s]",
                    events,
                    wall.as_secs_f64()
                ));
            }
            progress(Progress::Repetition {
                workload: configs[i].0.name(),
                label: configs[i].1.label.clone(),
                what,
                line: line(i, &metrics),
            });
            add_repetition(config, metrics, output, settings.level);
            let done = settings.budget.done(&metric_values(config, &primary));
            if done != Done::No {
                finished[i] = true;
                config.converged = done.converged();
            }
            sinks.save(&record)?;
        }
    }
    Ok((RunEnd::Complete, record))
}

/// Mark the record interrupted, save it, and end.
fn interrupted(
    mut record: RunRecord,
    sinks: &Sinks,
) -> Result<(RunEnd, RunRecord), ExperimentError> {
    record.interrupted = true;
    sinks.save(&record)?;
    Ok((RunEnd::Interrupted, record))
}
