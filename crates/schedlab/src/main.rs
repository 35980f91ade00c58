//! schedlab — a laboratory for CPU-scheduler experiments. This binary parses the command line
//! ([`cli`]), hands typed requests to the experiment layer (`schedlab-experiment`), prints what
//! comes back (`schedlab-report`) and turns errors into messages that name the flag.
#![forbid(unsafe_code)]

mod calibrate;
mod cli;
mod compare;
mod error;
mod execute;
mod generate;
mod info;
mod merge;
mod messages;
mod progress;
mod record;
mod validate;

use clap::FromArgMatches;
use cli::{Cli, Command};
use error::Error;
use std::process::ExitCode;

/// The system allocator, asking for transparent huge pages for large blocks: a simulated
/// machine's per-task state of 100,000 tasks then takes 50 TLB entries, not 25,000
/// (`schedlab_sim::huge_pages`).
#[global_allocator]
static ALLOCATOR: schedlab_sim::huge_pages::HugePageHint = schedlab_sim::huge_pages::HugePageHint;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let prepared = match cli::prepare(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = prepared
        .command
        .clone()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m))
        .unwrap_or_else(|e| with_suggestion(e, &prepared.command, &args).exit());
    clean_leftovers(&cli);
    match run_cli(cli, prepared) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// clap's error for an unknown command or option, with the nearest name as its tip where clap
/// found none: clap's Jaro similarity misses short transpositions (`schedlab rnu`), which
/// [`schedlab_workload::suggest`], the suggestion of every other message, finds.
fn with_suggestion(mut e: clap::Error, command: &clap::Command, args: &[String]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use schedlab_workload::suggest::nearest;
    let (invalid, suggested) = match e.kind() {
        ErrorKind::InvalidSubcommand => (
            ContextKind::InvalidSubcommand,
            ContextKind::SuggestedSubcommand,
        ),
        ErrorKind::UnknownArgument => (ContextKind::InvalidArg, ContextKind::SuggestedArg),
        _ => return e,
    };
    if e.get(suggested).is_some() {
        return e;
    }
    let Some(ContextValue::String(word)) = e.get(invalid).cloned() else {
        return e;
    };
    // The deepest command the arguments name before the unknown word.
    let mut cmd = command;
    for a in args.iter().skip(1).take_while(|a| **a != word) {
        if let Some(sub) = cmd.find_subcommand(a) {
            cmd = sub;
        }
    }
    let found = if suggested == ContextKind::SuggestedSubcommand {
        nearest(&word, cmd.get_subcommands().map(|s| s.get_name())).map(str::to_string)
    } else {
        let Some(long) = word.strip_prefix("--") else {
            return e;
        };
        let long = long.split('=').next().unwrap_or(long);
        let shown = cmd.get_arguments().filter(|a| !a.is_hide_set());
        nearest(long, shown.filter_map(|a| a.get_long())).map(|s| format!("--{s}"))
    };
    if let Some(s) = found {
        e.insert(suggested, ContextValue::String(s));
    }
    e
}

/// Remove what killed schedlab runs left (temporary directories, tracefs mounts and
/// instances), before any command: a simulated run or `check` cleans up too, not only the next
/// real run. Said on stderr; `-q` keeps only what could not be removed.
fn clean_leftovers(cli: &Cli) {
    let quiet = match &cli.command {
        Command::Run(a) | Command::Sweep(a) | Command::Check(a) => a.common.quiet,
        _ => false,
    };
    let found = schedlab_real::leftovers::cleanup();
    if found.is_empty() {
        return;
    }
    for line in schedlab_experiment::real::leftover_messages(&found) {
        if !quiet || line.starts_with("schedlab: could not") {
            eprintln!("{line}");
        }
    }
}

/// Dispatch one command (`prepared` holds the whole command line's definition, for completions
/// and the manual, and the workload file it names); errors come back as one message.
fn run_cli(cli: Cli, prepared: cli::Prepared) -> Result<ExitCode, Error> {
    let file = prepared.file.as_ref();
    match cli.command {
        Command::List { profile } => {
            execute::say(&info::list(profile.as_deref())?, false);
            Ok(ExitCode::SUCCESS)
        }
        Command::Env => {
            execute::say(&info::env(), false);
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate {
            profile,
            json,
            quick,
            jobs,
        } => validate::run(
            &profile,
            json.as_deref(),
            quick,
            jobs.unwrap_or_else(cli::default_jobs),
        ),
        Command::Calibrate {
            out,
            base,
            quick,
            force,
        } => {
            let taken = out
                .as_deref()
                .is_some_and(|p| p.as_os_str() == schedlab_report::output::STDOUT);
            let text = calibrate::run(out.as_deref(), &base, quick, force)?;
            execute::say(&text, taken);
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare {
            records,
            metric,
            level,
            welch,
            force,
        } => {
            execute::say(
                &compare::compare(&records, metric.as_deref(), &level, welch, force)?,
                false,
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Report { records, out } => {
            let w = schedlab_report::html::write_report(&records, &out)
                .map_err(|e| Error::Input(e.to_string()))?;
            eprintln!(
                "wrote {} ({} record{}, {} configuration{}, {} bytes)",
                out.display(),
                w.records,
                if w.records == 1 { "" } else { "s" },
                w.configs,
                if w.configs == 1 { "" } else { "s" },
                w.bytes
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Merge {
            dirs,
            out,
            plot,
            timeline,
        } => merge::run(&dirs, &out, plot.as_deref(), timeline.as_deref()),
        Command::Record {
            out,
            allow_lossy,
            pid,
            duration,
            keep_sleeps,
            data_flow,
            json,
            buffer_mb,
            source,
            command,
        } => record::run(
            &out,
            json.as_deref(),
            schedlab_script::from_trace::Options {
                allow_lossy,
                keep_sleeps,
            },
            record::What {
                pid,
                duration,
                buffer_mb,
                source,
                data_flow,
                command,
            },
        ),
        Command::Completions { shell } => generate::completions(shell, prepared.command),
        Command::Man { command: path } => generate::man(prepared.command, &path),
        Command::Run(args) => execute::execute(args, file, false),
        Command::Sweep(args) => execute::execute(args, file, true),
        Command::Check(args) => execute::check(args, file),
    }
}
