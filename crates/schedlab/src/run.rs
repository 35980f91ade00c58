//! `schedlab run`: validate everything, then run each configuration's warm-up and measured
//! repetitions on the chosen backend, writing the record after every repetition (so an
//! interrupted or failed run keeps what finished) and printing the summary.

use crate::cli::{BackendArg, CommonArgs, CountersArg};
use schedlab_real::machine::{machine_info, online_cpus};
use schedlab_real::runner::COMM_PREFIX;
use schedlab_real::trace::SchedTrace;
use schedlab_real::{run_repetition, RepetitionSetup, RunError};
use schedlab_workload::knobs::{parse_group_arg, Knobs};
use schedlab_workload::record::{
    BackendInfo, ConfigResult, GroupInfo, Repetition, RunRecord, ToolInfo, SCHEMA_VERSION,
};
use schedlab_workload::Workload;
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

/// Trace buffer per CPU: room for about a million events per CPU before the kernel drops some
/// (drops are counted and reported).
const TRACE_BUFFER_KB: usize = 65536;

/// Parse and check `--group` arguments against the workload's groups and this machine.
pub fn group_knobs<W: Workload>(workload: &W, args: &[String]) -> Result<Vec<Knobs>, String> {
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
        k.validate(&name, online_cpus())?;
        knobs[i] = k;
    }
    Ok(knobs)
}

/// Make sure the process may open the descriptors a plan needs, raising the soft limit to the
/// hard limit if that suffices (a per-process setting, not a system-wide one).
fn ensure_fd_limit(needed: u64) -> Result<(), String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max >= needed {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: valid pointer; raising the soft limit up to the hard limit needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    Err(format!(
        "this run needs about {needed} open files but the limit is {} (hard {}); raise it, e.g. `ulimit -n {needed}`",
        lim.rlim_cur, lim.rlim_max
    ))
}

/// Run every configuration of one workload.
pub fn run_workload<W: Workload>(
    configs: Vec<W>,
    common: &CommonArgs,
    stop: Arc<AtomicBool>,
) -> Result<RunEnd, String> {
    if common.backend == BackendArg::Sim {
        return Err(
            "--backend sim: the simulator is not part of this release yet; use --backend real"
                .into(),
        );
    }
    if common.runs == 0 {
        return Err("--runs 0: at least one measured repetition is needed".into());
    }
    let first = configs.first().ok_or("no configuration to run")?;
    let knobs = group_knobs(first, &common.group_knobs)?;
    for c in &configs {
        let plan = c.plan();
        ensure_fd_limit((plan.channels * 2 + plan.total_tasks() * 2 + 64) as u64)?;
    }
    let mut trace_holder: Option<SchedTrace> = None;
    let wakeup_reason = match common.counters {
        CountersArg::Proc => "disabled (--counters proc)".to_string(),
        CountersArg::Auto | CountersArg::Trace => {
            match SchedTrace::open(COMM_PREFIX, TRACE_BUFFER_KB) {
                Ok(t) => {
                    trace_holder = Some(t);
                    String::new()
                }
                Err(e) if common.counters == CountersArg::Trace => {
                    return Err(format!("--counters trace: {e}"));
                }
                Err(e) => e,
            }
        }
    };

    let mut record = RunRecord {
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
        backend: BackendInfo {
            kind: "real".into(),
            ..BackendInfo::default()
        },
        metrics: first.metric_defs(),
        warmup: common.warmup,
        interrupted: false,
        configs: Vec::new(),
    };
    if let Some(t) = &trace_holder {
        record
            .backend
            .details
            .insert("wakeup_counters".into(), t.source());
    } else {
        record.backend.details.insert(
            "wakeup_counters".into(),
            format!("unavailable: {wakeup_reason}"),
        );
    }
    let primary = record.metrics[0].name.clone();
    let save = |record: &RunRecord| -> Result<(), String> {
        if let Some(path) = &common.json {
            schedlab_report::export::write_json(record, path)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        Ok(())
    };

    for workload in configs {
        let workload = Arc::new(workload);
        let plan = workload.plan();
        let budget = common
            .timeout
            .or(workload.expected_time())
            .unwrap_or(Duration::from_secs(600));
        record.configs.push(ConfigResult {
            label: workload.label(),
            params: workload.params(),
            groups: plan
                .groups
                .iter()
                .zip(&knobs)
                .map(|(g, k)| GroupInfo {
                    name: g.name.into(),
                    tasks: g.tasks,
                    knobs: k.clone(),
                    observed: Default::default(),
                })
                .collect(),
            ..ConfigResult::default()
        });
        let total = common.warmup + common.runs;
        for i in 0..total {
            let warm = i < common.warmup;
            let result = run_repetition(
                &workload,
                RepetitionSetup {
                    knobs: &knobs,
                    stop: stop.clone(),
                    budget,
                    trace: trace_holder.as_mut(),
                },
            );
            let result = match result {
                Ok(r) => r,
                Err(RunError::Interrupted) => {
                    record.interrupted = true;
                    save(&record)?;
                    print!("{}", schedlab_report::text::summary(&record));
                    return Ok(RunEnd::Interrupted);
                }
                Err(e) => {
                    save(&record)?;
                    return Err(with_context(&e, &workload.label()));
                }
            };
            let metrics = workload
                .metrics(&result.outcome)
                .map_err(|e| format!("{}: {e}", workload.name()))?;
            if !common.quiet {
                let what = if warm {
                    format!("warm-up {}/{}", i + 1, common.warmup)
                } else {
                    format!("run {}/{}", i + 1 - common.warmup, common.runs)
                };
                let line = workload.classic_line(&metrics).unwrap_or_else(|| {
                    format!(
                        "{primary}: {}",
                        schedlab_report::table::num(metrics[&primary])
                    )
                });
                let label = workload.label();
                let sep = if label.is_empty() { "" } else { " " };
                eprintln!("{}{sep}{label} {what}: {line}", workload.name());
            }
            if warm {
                continue;
            }
            let config = record.configs.last_mut().expect("pushed above");
            for (g, obs) in config.groups.iter_mut().zip(result.observed) {
                if g.observed.is_empty() {
                    g.observed = obs;
                }
            }
            config.counter_sources = result.sources;
            if trace_holder.is_none() {
                config.counter_sources.wakeups = format!("unavailable: {wakeup_reason}");
            }
            config.repetitions.push(Repetition {
                metrics,
                counters: result.counters,
                lost_events: result.lost_events,
            });
            config.summary = schedlab_stats::summarize_config(config);
            save(&record)?;
        }
    }
    print!("{}", schedlab_report::text::summary(&record));
    Ok(RunEnd::Complete)
}

fn with_context(e: &RunError, label: &str) -> String {
    if label.is_empty() {
        e.to_string()
    } else {
        format!("{label}: {e}")
    }
}
