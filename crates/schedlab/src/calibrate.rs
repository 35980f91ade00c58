//! `schedlab calibrate`: measure this machine's costs, print them, and write a profile file for
//! `--profile FILE` (schedlab-experiment's `calibrate` does the work).

use crate::error::Error;
use schedlab_experiment::calibrate::{calibrate, CalibrateOptions};
use schedlab_report::table::Table;
use std::fmt::Write as _;
use std::path::Path;

/// Run calibrate; the text to print. An existing profile at `out` is replaced only with
/// `force`.
pub fn run(out: Option<&Path>, base: &str, quick: bool, force: bool) -> Result<String, Error> {
    let base: &'static str = schedlab_sim::cost::PROFILES
        .iter()
        .find(|p| **p == base)
        .ok_or_else(|| Error::BadValue {
            flag: "--base".into(),
            value: base.to_string(),
            why: format!(
                "not a profile; use {}",
                schedlab_sim::cost::PROFILES.join(" or ")
            ),
        })?;
    // Check the output path before measuring anything.
    if let Some(path) = out {
        check_out(path, force)?;
    }
    let stop = crate::execute::interrupt_flag()?;
    let dir = schedlab_real::tempdir::TempDir::new()
        .map_err(|e| Error::System(format!("calibrate: temporary directory: {e}")))?;
    // Other runnable tasks inflate every probe (a null system call preempted by a compiler costs
    // its time slice): look before, watch others' CPU time and steal time throughout, and say so
    // in the output and the file.
    let watch = schedlab_real::interference::InterferenceWatch::start();
    let started = std::time::Instant::now();
    let (mut file, probes) = calibrate(CalibrateOptions { quick, base }, dir.path(), &stop, |p| {
        eprintln!("calibrate: {p}");
    })
    .map_err(Error::Experiment)?;
    let seen = watch.finish();
    let m = schedlab_real::machine::machine_info();
    file.name = out
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    file.note = format!(
        "schedlab calibrate{} on {}, Linux {}, {} CPUs{}; base profile {base}",
        if quick { " --quick" } else { "" },
        m.hostname,
        m.kernel_release,
        m.cpus,
        m.cpu_model.map(|c| format!(" ({c})")).unwrap_or_default(),
    );
    let mut text = String::new();
    if let Some(warning) = busy_warning("the probes", seen) {
        let _ = writeln!(text, "warning: {warning}");
        file.note.push_str("; warning: ");
        file.note.push_str(&warning);
    }
    let mut t = Table::new(["probe", "median ns/op", "95 % interval", "rounds"]);
    for (p, r) in &probes {
        t.row([
            p.describe().to_string(),
            format!("{:.1}", r.median),
            format!("{:.1}-{:.1}", r.low, r.high),
            r.samples.to_string(),
        ]);
    }
    text.push_str(&t.render());
    let mut k = Table::new(["key", "value", "±CI95"]);
    for (key, value) in &file.costs {
        let ci = file
            .measured
            .get(key)
            .map_or("-".to_string(), |m| m.ci95.clone());
        k.row([key.clone(), value.clone(), ci]);
    }
    let kept: Vec<&str> = file.not_measured.keys().map(String::as_str).collect();
    let _ = writeln!(text);
    text.push_str(&k.render());
    let _ = writeln!(
        text,
        "kept from {base}: {} (how each key was measured, and why these were not: schedlab list --profile FILE)",
        kept.join(", ")
    );
    for (key, why) in &file.not_measured {
        if why.starts_with("could not be pinned") || why.contains(" could not be pinned") {
            let _ = writeln!(text, "{key}: {why}");
        }
    }
    let _ = writeln!(
        text,
        "calibrated in {:.1} s; {}",
        started.elapsed().as_secs_f64(),
        match out {
            Some(p) => {
                schedlab_report::output::write(p, file.to_toml().as_bytes())
                    .map_err(|e| Error::output("--out", p, e.to_string()))?;
                format!(
                    "wrote {} (use it with --profile {})",
                    p.display(),
                    p.display()
                )
            }
            None => "not written (give --out FILE)".into(),
        }
    );
    Ok(text)
}

/// What else used the machine during `what` (seen by an [`InterferenceWatch`]), said as a
/// warning when it was enough to matter ([`Interference::busy`]) or when other tasks are
/// runnable now: whatever they take inflates the real side's times.
///
/// [`InterferenceWatch`]: schedlab_real::interference::InterferenceWatch
/// [`Interference::busy`]: schedlab_real::interference::Interference::busy
fn busy_warning(
    what: &str,
    seen: Option<schedlab_real::interference::Interference>,
) -> Option<String> {
    let after = schedlab_real::procfs::competing_runnable().filter(|&n| n > 0);
    let seen = seen.filter(|s| s.busy() || after.is_some())?;
    let mut w = format!("while {what} ran, {}", seen.describe());
    if let Some(n) = after {
        w.push_str(&format!(", {n} other task(s) runnable after"));
    }
    w.push_str(": the times are inflated by what they took; measure on an idle machine");
    Some(w)
}

/// The output must be writable ([`schedlab_report::output::resolve`]); an existing file is a
/// profile somebody measured, replaced only with `--force`.
fn check_out(path: &Path, force: bool) -> Result<(), Error> {
    let target = crate::execute::check_file_output("--out", path)?;
    if let schedlab_report::output::Target::File(real) = &target {
        if real.exists() && !force {
            return Err(Error::output(
                "--out",
                path,
                "exists (a profile measured before?); add --force to replace it, or give another file name",
            ));
        }
    }
    Ok(())
}
