//! schedlab — a laboratory for CPU-scheduler experiments. This binary only parses the command
//! line and calls the library crates: workloads (`schedlab-workload`), the real backend
//! (`schedlab-real`), statistics (`schedlab-stats`) and output (`schedlab-report`).
#![forbid(unsafe_code)]

mod backend;
mod cli;
mod compare;
mod info;
mod run;
mod sweep;
mod workloads;

use clap::Parser;
use cli::{Cli, Command, CommonArgs};
use run::{run_configs, Config, RunEnd};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use workloads::{build, Preset};

fn main() -> ExitCode {
    match run_cli(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// parse → validate → run → summarize; errors come back as one message.
fn run_cli(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::List => {
            print!("{}", info::list());
            Ok(ExitCode::SUCCESS)
        }
        Command::Env => {
            print!("{}", info::env());
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare {
            records,
            metric,
            level,
            welch,
            force,
        } => {
            print!(
                "{}",
                compare::compare(&records, metric.as_deref(), &level, welch, force)?
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { workload } => {
            let (built, common) = build(workload)?;
            if !common.vary.is_empty() || common.out.is_some() || common.plot.is_some() {
                return Err("--vary, --out and --plot belong to `schedlab sweep`".into());
            }
            let stop = interrupt_flag()?;
            finish(with_preset!(built, run_plain(&common, stop))?)
        }
        Command::Sweep { workload } => {
            let (built, common) = build(workload)?;
            let stop = interrupt_flag()?;
            finish(with_preset!(built, run_sweep(&common, stop))?)
        }
    }
}

/// SIGINT and SIGTERM set a flag; the run stops at the next check and keeps what finished.
fn interrupt_flag() -> Result<Arc<AtomicBool>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("signal handler: {e}"))?;
    }
    Ok(stop)
}

fn finish(end: RunEnd) -> Result<ExitCode, String> {
    Ok(match end {
        RunEnd::Complete => ExitCode::SUCCESS,
        RunEnd::Interrupted => {
            eprintln!("schedlab: interrupted; the repetitions that finished are kept");
            ExitCode::from(130)
        }
    })
}

/// `schedlab sweep`.
fn run_sweep<W: Preset>(
    configs: Vec<W>,
    common: &CommonArgs,
    stop: Arc<AtomicBool>,
) -> Result<RunEnd, String> {
    sweep::sweep(configs, common, stop)
}

/// `schedlab run`: every configuration of the command (several only for list parameters).
fn run_plain<W: Preset>(
    configs: Vec<W>,
    common: &CommonArgs,
    stop: Arc<AtomicBool>,
) -> Result<RunEnd, String> {
    let backend = backend::Backend::from_args(common)?;
    let knobs = run::group_knobs(&configs[0], &common.group_knobs, &backend)?;
    let several = configs.len() > 1;
    let configs = configs
        .into_iter()
        .map(|w| Config {
            label: if several { w.label() } else { String::new() },
            knobs: knobs.clone(),
            workload: w,
            backend: backend.clone(),
        })
        .collect();
    let (end, record) = run_configs(configs, common, stop, None)?;
    print!("{}", schedlab_report::text::summary(&record));
    Ok(end)
}
