//! schedlab — a laboratory for CPU-scheduler experiments. This binary parses the command line
//! ([`cli`]), hands typed requests to the experiment layer (`schedlab-experiment`), prints what
//! comes back (`schedlab-report`) and turns errors into messages that name the flag.
#![forbid(unsafe_code)]

mod cli;
mod compare;
mod execute;
mod info;
mod messages;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run_cli(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Dispatch one command; errors come back as one message.
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
        Command::Run(args) => execute::execute(args, false),
        Command::Sweep(args) => execute::execute(args, true),
    }
}
