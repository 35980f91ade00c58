//! schedlab — a laboratory for CPU-scheduler experiments. This binary only parses the command
//! line and calls the library crates: workloads (`schedlab-workload`), the real backend
//! (`schedlab-real`), statistics (`schedlab-stats`) and output (`schedlab-report`).

mod cli;
mod info;
mod run;

use clap::Parser;
use cli::{Cli, Command, WorkloadCmd};
use schedlab_workload::presets::{Chat, Messaging, PingPong, Yield};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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
        Command::Run { workload } => {
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone())
                    .map_err(|e| format!("signal handler: {e}"))?;
            }
            let end = match workload {
                WorkloadCmd::Messaging {
                    groups,
                    fds,
                    loops,
                    datasize,
                    transport,
                    tasks,
                    common,
                } => {
                    let w = Messaging {
                        groups,
                        fds,
                        loops,
                        datasize,
                        transport,
                        mode: tasks,
                    };
                    w.validate()?;
                    run::run_workload(vec![w], &common, stop)?
                }
                WorkloadCmd::Chat {
                    rooms,
                    users,
                    messages,
                    size,
                    transport,
                    mode,
                    tasks,
                    common,
                } => {
                    let w = Chat {
                        rooms,
                        users,
                        messages,
                        size,
                        transport,
                        mode,
                        hosting: tasks,
                    };
                    w.validate()?;
                    run::run_workload(vec![w], &common, stop)?
                }
                WorkloadCmd::Pingpong {
                    transport,
                    loops,
                    tasks,
                    common,
                } => {
                    let w = PingPong {
                        loops,
                        transport,
                        mode: tasks,
                    };
                    w.validate()?;
                    run::run_workload(vec![w], &common, stop)?
                }
                WorkloadCmd::Yield {
                    threads,
                    duration,
                    common,
                } => {
                    let configs: Vec<Yield> = threads
                        .iter()
                        .map(|&t| Yield {
                            threads: t,
                            duration,
                        })
                        .collect();
                    for c in &configs {
                        c.validate()?;
                    }
                    run::run_workload(configs, &common, stop)?
                }
            };
            Ok(match end {
                run::RunEnd::Complete => ExitCode::SUCCESS,
                run::RunEnd::Interrupted => {
                    eprintln!("schedlab: interrupted; the repetitions that finished are kept");
                    ExitCode::from(130)
                }
            })
        }
    }
}
