//! `schedlab validate`: the real kernel against the simulator, workload by workload
//! (schedlab-experiment's `validate` runs the suite); a table, and the record with `--json`.

use crate::error::Error;
use schedlab_experiment::validate::{validate, Estimate, Progress, Row, GOAL_PCT, GOAL_POINTS};
use schedlab_experiment::RunEnd;
use schedlab_report::table::{num, Table};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// Run validate, simulating `jobs` entries at a time; prints as it goes.
pub fn run(
    profile: &str,
    json: Option<&Path>,
    quick: bool,
    jobs: usize,
) -> Result<ExitCode, Error> {
    let taken = json.is_some_and(|p| p.as_os_str() == schedlab_report::output::STDOUT);
    if let Some(p) = json {
        let target = crate::execute::check_file_output("--json", p)?;
        if !schedlab_sim::cost::PROFILES.contains(&profile) {
            let input = [("the --profile file", Path::new(profile))];
            schedlab_report::output::refuse_inputs("--json", p, &target, &input)?;
        }
    }
    let stop = crate::execute::interrupt_flag()?;
    let (end, v) = validate(profile, quick, jobs, &stop, |p| match p {
        Progress::Row(row) => eprintln!("validate: {}: {}", row.name, error_text(row)),
        Progress::BusyRun { entry, seen } => {
            eprintln!("validate: {entry}: a real run left out: {}", seen.describe())
        }
        Progress::StillBusy { entry, waited } => eprintln!(
            "validate: {entry}: other tasks still runnable after waiting {} s; running, and watching",
            waited.as_secs()
        ),
    })
    .map_err(Error::Experiment)?;
    let mut t = Table::new(["entry", "metric", "measured", "simulated", "error"]);
    for row in &v.rows {
        t.row([
            row.name.clone(),
            format!("{} ({})", row.metric, row.unit),
            est(row.measured),
            est(row.simulated),
            error_text(row),
        ]);
    }
    let mut text = format!(
        "validate: Linux {} against the simulator's {} on {} CPUs, profile {}, {} runs each\n",
        v.kernel, v.policy, v.cpus, v.profile, v.runs
    );
    text.push_str(&t.render());
    let judged: Vec<&Row> = v
        .rows
        .iter()
        .filter(|r| r.judged && r.error.is_some())
        .collect();
    let within = judged
        .iter()
        .filter(|r| {
            let e = r.error.unwrap_or(f64::INFINITY).abs();
            if r.points {
                e <= GOAL_POINTS
            } else {
                e <= GOAL_PCT
            }
        })
        .count();
    let _ = writeln!(
        text,
        "{within} of {} judged rows within ±{GOAL_PCT} % (times, rates) or ±{GOAL_POINTS} points (deadlines met)",
        judged.len()
    );
    let unjudged = v.rows.len() - judged.len();
    if unjudged > 0 {
        let _ = writeln!(
            text,
            "{unjudged} of {} rows not judged (marked ?; why below): a busy machine or a real side \
             wider than the goal says nothing about the simulator",
            v.rows.len()
        );
    }
    let busy: usize = v.rows.iter().map(|r| r.busy_runs).sum();
    if busy > 0 {
        let _ = writeln!(
            text,
            "warning: {busy} real run(s) were measured while other processes or the hypervisor \
             took CPU time, and were left out; measure on an idle machine"
        );
    }
    for row in v.rows.iter().filter(|r| r.note.is_some()) {
        let _ = writeln!(
            text,
            "{}: {}",
            row.name,
            row.note.as_deref().unwrap_or_default()
        );
    }
    crate::execute::say(&text, taken);
    if let Some(p) = json {
        let json = serde_json::to_string_pretty(&v).expect("a validation serializes") + "\n";
        schedlab_report::output::write(p, json.as_bytes())
            .map_err(|e| Error::output("--json", p, e.to_string()))?;
        eprintln!("wrote {}", p.display());
    }
    Ok(match end {
        RunEnd::Complete => ExitCode::SUCCESS,
        RunEnd::Interrupted => {
            eprintln!("schedlab: interrupted; the rows above are the ones that finished");
            ExitCode::from(130)
        }
    })
}

fn est(e: Option<Estimate>) -> String {
    match e {
        None => "-".into(),
        Some(Estimate {
            mean,
            ci95: Some(ci),
            ..
        }) => format!("{} ± {}", num(mean), num(ci)),
        Some(Estimate { mean, .. }) => num(mean),
    }
}

fn error_text(row: &Row) -> String {
    let mark = if row.judged { "" } else { " ?" };
    match row.error {
        None => "-".into(),
        Some(e) if row.points => format!("{e:+.1} points{mark}"),
        Some(e) => format!("{e:+.1} %{mark}"),
    }
}
