//! `schedlab record -o FILE.toml -- CMD ARGS...` (or `--pid PID --duration D`): the real
//! backend records the program's scheduler events (`schedlab_real::trace::record`), the script
//! crate turns them into a workload file (`schedlab_script::from_trace`), and this writes it
//! through the one output writer and says what it holds; with `--json`, also the recorded run
//! as a run record (`schedlab_script::original`).

use crate::error::Error;
use schedlab_real::trace::record::{record_from, Source, Target};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// What to record and how: the command line's `record` options.
pub struct What {
    /// A running process to record (`--pid`), instead of a command.
    pub pid: Option<i32>,
    /// How long to record `pid`.
    pub duration: Option<Duration>,
    /// The ring buffer, MiB.
    pub buffer_mb: u32,
    /// Where the events come from: auto, bpf or tracefs.
    pub source: String,
    /// Record the pipe and socket calls too (BPF only).
    pub data_flow: bool,
    /// The command and its arguments (empty with `pid`).
    pub command: Vec<String>,
}

/// Record `what`, convert and write `out` (and the recorded run's record to `json`).
pub fn run(
    out: &Path,
    json: Option<&Path>,
    options: schedlab_script::from_trace::Options,
    what: What,
) -> Result<ExitCode, Error> {
    let What {
        pid,
        duration,
        buffer_mb,
        source,
        data_flow,
        command,
    } = what;
    let mut source: Source = source.parse().map_err(Error::Conflict)?;
    // SCHEDLAB_BPF=off keeps `auto` off BPF here too, as it does for the counters.
    if source == Source::Auto
        && std::env::var(schedlab_experiment::real::BPF_SWITCH).as_deref() == Ok("off")
    {
        source = Source::Tracefs;
    }
    let target = match (pid, command.is_empty()) {
        (Some(pid), true) => Target::Pid {
            pid,
            duration: duration.ok_or_else(|| {
                Error::Conflict("--pid needs --duration (how long to record, e.g. 10s)".into())
            })?,
        },
        (None, false) => Target::Command(command),
        (None, true) => {
            return Err(Error::Conflict(
                "record needs a command after `--` (schedlab record -o FILE.toml -- CMD ARGS...) or --pid PID --duration D".into(),
            ))
        }
        (Some(_), false) => {
            return Err(Error::Conflict(
                "--pid and a command do not go together; give one".into(),
            ))
        }
    };
    if out.as_os_str() != schedlab_report::output::STDOUT
        && out.extension().is_none_or(|e| e != "toml")
    {
        return Err(Error::output(
            "--out",
            out,
            "accepted: a file name ending in .toml (a workload file), or - for standard output",
        ));
    }
    let target_out = crate::execute::check_file_output("--out", out)?;
    let json_out = match json {
        Some(j) if j == out => {
            return Err(Error::Conflict(format!(
                "--json {} is the --out file too; give the run record another name",
                j.display()
            )))
        }
        Some(j) => Some((j, crate::execute::check_file_output("--json", j)?)),
        None => None,
    };
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stop = crate::execute::interrupt_flag()?;
    if data_flow && source == Source::Tracefs {
        return Err(Error::Conflict(
            "--data-flow needs the BPF recorder (--source auto or bpf); the tracefs recorder sees no pipe or socket calls".into(),
        ));
    }
    let rec = record_from(&target, source, buffer_mb, data_flow, &stop)
        .map_err(|e| Error::System(format!("record: {e}")))?;
    // The file's computes are cumulative: what the replay's own posts, waits, sleeps and calls
    // cost comes off them as it runs, so nothing is taken off here.
    let converted = schedlab_script::from_trace::convert_with(&rec, &options)
        .map_err(|e| Error::Input(format!("record: {e}")))?;
    schedlab_report::output::write_target(&target_out, converted.toml.as_bytes())
        .map_err(|e| Error::output("--out", out, e.to_string()))?;
    if let Some((path, target)) = json_out {
        let mut r = schedlab_script::original::run_record(&rec, &converted);
        r.tool = schedlab_workload::record::ToolInfo {
            name: "schedlab".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        };
        r.machine = schedlab_real::machine::machine_info();
        r.command = std::env::args().collect();
        r.started_unix = started_unix;
        schedlab_report::output::write_target(&target, r.to_json().as_bytes())
            .map_err(|e| Error::output("--json", path, e.to_string()))?;
    }
    let s = &converted.summary;
    eprintln!(
        "recorded {} events in {:.3} s{}; wrote {}: {}; {} steps{}",
        s.events,
        rec.stop_ns.saturating_sub(rec.start_ns) as f64 / 1e9,
        if s.lost > 0 {
            format!(", {} LOST (approximate)", s.lost)
        } else {
            String::new()
        },
        out.display(),
        s.holds(),
        s.written_steps,
        s.summarised()
            .map_or_else(String::new, |line| format!("; summarised: {line}"))
    );
    Ok(ExitCode::SUCCESS)
}
