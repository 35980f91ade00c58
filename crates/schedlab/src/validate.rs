//! `schedlab validate`: the real kernel against the simulator, workload by workload
//! (schedlab-experiment's `validate` runs the suite); a table, and the record with `--json`.

use crate::error::Error;
use schedlab_experiment::validate::{validate, Estimate, Row};
use schedlab_experiment::RunEnd;
use schedlab_report::table::{num, Table};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// Time and rate rows within this many % count as predicted (issue #16's goal).
const GOAL_PCT: f64 = 20.0;
/// Deadline rows within this many points.
const GOAL_POINTS: f64 = 5.0;

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
    let competing_before = schedlab_real::procfs::competing_runnable();
    let (end, v) = validate(profile, quick, jobs, &stop, |row| {
        eprintln!("validate: {}: {}", row.name, error_text(row));
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
    let judged: Vec<&Row> = v.rows.iter().filter(|r| r.error.is_some()).collect();
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
        "{within} of {} rows within ±{GOAL_PCT} % (times, rates) or ±{GOAL_POINTS} points (deadlines met)",
        judged.len()
    );
    if let Some(w) = crate::calibrate::competing_warning("the real runs", competing_before) {
        let _ = writeln!(text, "warning: {w}");
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
    match row.error {
        None => "-".into(),
        Some(e) if row.points => format!("{e:+.1} points"),
        Some(e) => format!("{e:+.1} %"),
    }
}
