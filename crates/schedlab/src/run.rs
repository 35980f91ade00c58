//! `schedlab run` and the measuring loop behind `sweep`: validate everything, then run each
//! configuration's warm-up and measured repetitions — interleaved across configurations
//! (A B C A B C …) so that drift favours none — for a fixed count or until the primary metric's
//! confidence interval is tight enough. The record is written after every repetition, so an
//! interrupted or failed run keeps what finished.

use crate::backend::{run_repetition, Backend, RepArgs, RepError};
use crate::cli::{CommonArgs, CountersArg};
use schedlab_real::machine::machine_info;
use schedlab_real::runner::COMM_PREFIX;
use schedlab_real::trace::SchedTrace;
use schedlab_stats::{describe, metric_values, Decision, StoppingRule};
use schedlab_workload::knobs::{parse_group_arg, Knobs};
use schedlab_workload::record::{
    BackendInfo, ConfigResult, GroupInfo, Interval, Repetition, RunRecord, ToolInfo, SCHEMA_VERSION,
};
use schedlab_workload::Workload;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How a run ended, for the exit status.
pub enum RunEnd {
    /// Every repetition finished.
    Complete,
    /// Interrupted; the finished repetitions were kept.
    Interrupted,
}

/// One configuration to measure: a workload, its groups' knobs, and how it is named.
pub struct Config<W> {
    /// The workload with its parameters.
    pub workload: W,
    /// Knobs per plan group.
    pub knobs: Vec<Knobs>,
    /// Row label (`threads=16 server.nice=19`); empty for a lone configuration.
    pub label: String,
    /// Where it runs.
    pub backend: Backend,
}

/// Trace buffer per CPU: room for about a million events per CPU before the kernel drops some
/// (drops are counted and reported).
const TRACE_BUFFER_KB: usize = 65536;

/// Parse and check `--group` arguments against the workload's groups and the backend's machine.
pub fn group_knobs<W: Workload>(
    workload: &W,
    args: &[String],
    backend: &Backend,
) -> Result<Vec<Knobs>, String> {
    let plan = workload.plan();
    let names: Vec<&str> = plan.groups.iter().map(|g| g.name).collect();
    let mut knobs = vec![Knobs::default(); plan.groups.len()];
    let mut seen = Vec::new();
    for arg in args {
        let (name, k) = parse_group_arg(arg)?;
        let Some(i) = plan.group_index(&name) else {
            return Err(format!(
                "--group '{arg}': workload '{}' has no group '{name}'; its groups are: {}",
                workload.name(),
                names.join(", ")
            ));
        };
        if seen.contains(&i) {
            return Err(format!(
                "--group '{name}' is given twice; put all its knobs in one --group"
            ));
        }
        seen.push(i);
        k.validate(&name, backend.cpus())?;
        backend.check_knobs(&name, &k)?;
        knobs[i] = k;
    }
    Ok(knobs)
}

/// How many repetitions to run: a fixed count or a stopping rule.
enum Budget {
    Fixed(usize),
    Until(StoppingRule),
}

impl Budget {
    fn from_args(common: &CommonArgs) -> Result<Budget, String> {
        match (&common.until, common.runs) {
            (Some(rule), _) => Ok(Budget::Until(StoppingRule::parse(rule, common.max_runs)?)),
            (None, Some(0)) => Err("--runs 0: at least one measured repetition is needed".into()),
            (None, runs) => Ok(Budget::Fixed(runs.unwrap_or(3))),
        }
    }

    /// Whether a configuration with these primary-metric values is done, and if so whether it
    /// converged (`None` for a fixed count).
    fn done(&self, values: &[f64]) -> Option<Option<bool>> {
        match self {
            Budget::Fixed(n) => (values.len() >= *n).then_some(None),
            Budget::Until(rule) => match rule.decide(values) {
                Decision::Continue => None,
                Decision::Converged => Some(Some(true)),
                Decision::GaveUp => Some(Some(false)),
            },
        }
    }

    fn describe_progress(&self, done: usize) -> String {
        match self {
            Budget::Fixed(n) => format!("run {done}/{n}"),
            Budget::Until(rule) => format!("run {done} (until {rule}, at most {})", rule.max_runs),
        }
    }
}

/// Recompute a configuration's summaries after a repetition.
pub fn update_summary(config: &mut ConfigResult, level: f64) {
    let names: std::collections::BTreeSet<String> = config
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

/// The record skeleton for a run of `first`'s workload.
fn new_record<W: Workload>(
    first: &W,
    backend: &Backend,
    common: &CommonArgs,
    level: f64,
) -> RunRecord {
    let backend = match backend {
        Backend::Real => BackendInfo {
            kind: "real".into(),
            ..BackendInfo::default()
        },
        Backend::Sim(s) => BackendInfo {
            kind: "sim".into(),
            policy: Some(s.policy_name()),
            seed: Some(s.seed),
            details: BTreeMap::from([
                ("cpus".to_string(), s.cpus.to_string()),
                ("cost".to_string(), s.cost.to_string()),
                ("counters".to_string(), "exact (simulator)".to_string()),
            ]),
        },
    };
    RunRecord {
        schema: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "schedlab".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        started_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        command: std::env::args().collect(),
        machine: machine_info(),
        workload: first.name().into(),
        backend,
        metrics: first.metric_defs(),
        warmup: common.warmup,
        interrupted: false,
        level,
        until: common.until.clone(),
        configs: Vec::new(),
    }
}

/// Where a sweep keeps its records.
pub struct OutDir {
    dir: PathBuf,
}

impl OutDir {
    /// Use (and create) `dir`.
    pub fn new(dir: &Path) -> Result<OutDir, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
        Ok(OutDir {
            dir: dir.to_path_buf(),
        })
    }

    fn config_path(&self, label: &str) -> PathBuf {
        let name: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!(
            "{}.json",
            if name.is_empty() {
                "config".into()
            } else {
                name
            }
        ))
    }

    /// The repetitions a previous, interrupted sweep left for this configuration, if its record
    /// describes the same workload, parameters and knobs.
    fn resume(&self, record: &RunRecord, config: &ConfigResult) -> Vec<Repetition> {
        let Ok(old) = schedlab_report::export::read_json(&self.config_path(&config.label)) else {
            return Vec::new();
        };
        match old.configs.first() {
            Some(c)
                if old.workload == record.workload
                    && c.params == config.params
                    && c.groups
                        .iter()
                        .map(|g| &g.knobs)
                        .eq(config.groups.iter().map(|g| &g.knobs)) =>
            {
                c.repetitions.clone()
            }
            _ => Vec::new(),
        }
    }

    /// Write the whole sweep and each configuration's own record.
    fn save(&self, record: &RunRecord) -> Result<(), String> {
        let err = |p: &Path, e: std::io::Error| format!("writing {}: {e}", p.display());
        let all = self.dir.join("sweep.json");
        schedlab_report::export::write_json(record, &all).map_err(|e| err(&all, e))?;
        for c in &record.configs {
            let mut one = record.clone();
            one.configs = vec![c.clone()];
            let p = self.config_path(&c.label);
            schedlab_report::export::write_json(&one, &p).map_err(|e| err(&p, e))?;
        }
        Ok(())
    }
}

/// Run every configuration (of one workload), interleaving their repetitions, and return the
/// record; the caller prints it.
#[allow(clippy::needless_range_loop)] // `i` indexes workloads, setups, `finished` and the record alike
pub fn run_configs<W: Workload>(
    configs: Vec<Config<W>>,
    common: &CommonArgs,
    stop: Arc<AtomicBool>,
    out: Option<&OutDir>,
) -> Result<(RunEnd, RunRecord), String> {
    let budget = Budget::from_args(common)?;
    let level = schedlab_stats::parse_level(&common.level)?;
    if configs.is_empty() {
        return Err("no configuration to run".into());
    }
    type Setup = (Vec<Knobs>, String, Backend);
    let (workloads, setups): (Vec<Arc<W>>, Vec<Setup>) = configs
        .into_iter()
        .map(|c| (Arc::new(c.workload), (c.knobs, c.label, c.backend)))
        .unzip();
    let first = &*workloads[0];
    let any_real = setups.iter().any(|s| matches!(s.2, Backend::Real));
    for (w, s) in workloads.iter().zip(&setups) {
        let plan = w.plan();
        if matches!(s.2, Backend::Real) {
            let needed = (plan.channels * 2 + plan.total_tasks() * 2 + 64) as u64;
            schedlab_real::host::raise_fd_limit(needed)
                .map_err(|e| format!("{e}; raise it, e.g. `ulimit -n {needed}`"))?;
        }
    }
    let mut trace_holder: Option<SchedTrace> = None;
    let wakeup_reason = match common.counters {
        _ if !any_real => String::new(),
        CountersArg::Proc => "disabled (--counters proc)".to_string(),
        CountersArg::Auto | CountersArg::Trace => {
            match SchedTrace::open(COMM_PREFIX, TRACE_BUFFER_KB) {
                Ok(t) => {
                    trace_holder = Some(t);
                    String::new()
                }
                Err(e) if common.counters == CountersArg::Trace => {
                    return Err(format!("--counters trace: {e}"))
                }
                Err(e) => e.to_string(),
            }
        }
    };
    let mut record = new_record(first, &setups[0].2, common, level);
    if any_real {
        record.backend.details.insert(
            "wakeup_counters".into(),
            trace_holder
                .as_ref()
                .map_or_else(|| format!("unavailable: {wakeup_reason}"), |t| t.source()),
        );
    }
    if setups
        .iter()
        .any(|s| s.2.policy_label() != setups[0].2.policy_label())
    {
        record.backend.policy = Some("varied: see each configuration's machine".into());
    }
    let primary = record.metrics[0].name.clone();
    let save = |record: &RunRecord| -> Result<(), String> {
        if let Some(path) = &common.json {
            schedlab_report::export::write_json(record, path)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        if let Some(out) = out {
            out.save(record)?;
        }
        Ok(())
    };

    let mut finished = vec![false; workloads.len()];
    for ((knobs, label, backend), w) in setups.iter().zip(&workloads) {
        let plan = w.plan();
        let mut result = ConfigResult {
            label: label.clone(),
            params: w.params(),
            machine: backend.machine_label(),
            groups: plan
                .groups
                .iter()
                .zip(knobs)
                .map(|(g, k)| GroupInfo {
                    name: g.name.into(),
                    tasks: g.tasks,
                    knobs: k.clone(),
                    observed: Default::default(),
                })
                .collect(),
            ..ConfigResult::default()
        };
        if let Some(out) = out {
            result.repetitions = out.resume(&record, &result);
            if !result.repetitions.is_empty() {
                eprintln!(
                    "{} {label}: resuming with {} finished repetitions",
                    w.name(),
                    result.repetitions.len()
                );
                update_summary(&mut result, level);
            }
        }
        let done = budget.done(&metric_values(&result, &primary));
        finished[record.configs.len()] = done.is_some();
        result.converged = done.flatten();
        record.configs.push(result);
    }

    let interrupted = |record: &mut RunRecord| -> Result<(RunEnd, RunRecord), String> {
        record.interrupted = true;
        save(record)?;
        Ok((RunEnd::Interrupted, record.clone()))
    };
    let run_one = |i: usize, trace: Option<&mut SchedTrace>, index: u64| {
        let w = &workloads[i];
        let budget_time = common
            .timeout
            .or(w.expected_time())
            .unwrap_or(Duration::from_secs(600));
        let backend = &setups[i].2;
        run_repetition(
            backend,
            w,
            RepArgs {
                knobs: &setups[i].0,
                stop: &stop,
                budget: budget_time,
                trace,
                index,
            },
        )
    };
    let progress = |i: usize, what: &str, metrics: &BTreeMap<String, f64>| {
        if common.quiet {
            return;
        }
        let w = &workloads[i];
        let line = w.classic_line(metrics).unwrap_or_else(|| {
            format!(
                "{primary}: {}",
                schedlab_report::table::num(metrics[&primary])
            )
        });
        let label = &setups[i].1;
        let sep = if label.is_empty() { "" } else { " " };
        eprintln!("{}{sep}{label} {what}: {line}", w.name());
    };
    let fail = |e: &str, i: usize| {
        let label = &setups[i].1;
        if label.is_empty() {
            e.to_string()
        } else {
            format!("{label}: {e}")
        }
    };

    // Warm-up rounds, interleaved, then measured rounds until every configuration is done.
    for round in 0..common.warmup {
        for i in 0..workloads.len() {
            match run_one(i, trace_holder.as_mut(), 1_000_000 + round as u64) {
                Ok(r) => {
                    let m = workloads[i]
                        .metrics(&r.outcome)
                        .map_err(|e| format!("{}: {e}", workloads[i].name()))?;
                    progress(i, &format!("warm-up {}/{}", round + 1, common.warmup), &m);
                }
                Err(RepError::Interrupted) => return interrupted(&mut record),
                Err(RepError::Failed(e)) => return Err(fail(&e, i)),
            }
        }
    }
    while finished.iter().any(|f| !f) {
        #[allow(clippy::needless_range_loop)]
        // `i` indexes workloads, setups, finished and the record
        for i in 0..workloads.len() {
            if finished[i] {
                continue;
            }
            let index = record.configs[i].repetitions.len() as u64;
            let result = match run_one(i, trace_holder.as_mut(), index) {
                Ok(r) => r,
                Err(RepError::Interrupted) => return interrupted(&mut record),
                Err(RepError::Failed(e)) => {
                    save(&record)?;
                    return Err(fail(&e, i));
                }
            };
            let metrics = workloads[i]
                .metrics(&result.outcome)
                .map_err(|e| format!("{}: {e}", workloads[i].name()))?;
            let config = &mut record.configs[i];
            let mut what = budget.describe_progress(config.repetitions.len() + 1);
            if let (Some(events), Some(wall)) = (result.events, result.sim_wall) {
                what.push_str(&format!(
                    " [simulated {} events in {:.2} s]",
                    events,
                    wall.as_secs_f64()
                ));
            }
            progress(i, &what, &metrics);
            for (g, obs) in config.groups.iter_mut().zip(result.observed) {
                if g.observed.is_empty() {
                    g.observed = obs;
                }
            }
            config.counter_sources = result.sources;
            if trace_holder.is_none() && matches!(setups[i].2, Backend::Real) {
                config.counter_sources.wakeups = format!("unavailable: {wakeup_reason}");
            }
            config.repetitions.push(Repetition {
                metrics,
                counters: result.counters,
                lost_events: result.lost_events,
                cpus: result.cpus,
                sim_events: result.events,
            });
            update_summary(config, level);
            if let Some(converged) = budget.done(&metric_values(config, &primary)) {
                finished[i] = true;
                config.converged = converged;
            }
            save(&record)?;
        }
    }
    Ok((RunEnd::Complete, record))
}
