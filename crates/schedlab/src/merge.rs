//! `schedlab merge DIR... -o OUT`: the experiment layer checks and joins the shards
//! (`schedlab_experiment::merge`); this prints the sweep's table as `sweep` would (a workload's
//! own tables side by side, as interbench's seed 004 prints them), its plot, and the run-queue timelines the shards
//! recorded (their figures, and the chart with `--timeline`).

use crate::error::Error;
use schedlab_workload::presets::OwnTables;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Merge the shards in `dirs` into `out`, print the table, and draw `plot` and `timeline` if
/// asked.
pub fn run(
    dirs: &[PathBuf],
    out: &Path,
    plot: Option<&Path>,
    timeline: Option<&Path>,
) -> Result<ExitCode, Error> {
    // What merge reads: every file of every shard's directory.
    let read: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .collect();
    let inputs: Vec<(&str, &Path)> = read
        .iter()
        .map(|p| ("a file of a shard", p.as_path()))
        .collect();
    if out.as_os_str() == schedlab_report::output::STDOUT {
        return Err(Error::Conflict("-o -: merge writes a directory (sweep.json and a record per configuration); give a directory name".into()));
    }
    if let Some(p) = plot {
        let target = crate::execute::check_file_output("--plot", p)?;
        schedlab_report::output::refuse_inputs("--plot", p, &target, &inputs)?;
    }
    if let Some(p) = timeline {
        let target = crate::execute::check_file_output("--timeline", p)?;
        schedlab_report::output::refuse_inputs("--timeline", p, &target, &inputs)?;
        if p.extension().is_none_or(|e| e != "svg") {
            return Err(Error::output(
                "--timeline",
                p,
                "accepted: a file name ending in .svg (the chart is SVG)",
            ));
        }
        if plot == Some(p) {
            return Err(Error::output(
                "--timeline",
                p,
                "--plot writes that file too; give each output its own file",
            ));
        }
    }
    let merged =
        schedlab_experiment::merge::merge(dirs, out).map_err(|e| Error::Input(e.to_string()))?;
    let record = &merged.record;
    let timeline_text = schedlab_report::timeline::timeline_text(record);
    if let Some(p) = timeline.filter(|_| timeline_text.is_empty()) {
        return Err(Error::output(
            "--timeline",
            p,
            format!(
                "the shards recorded no run-queue timeline; run them with --timeline FILE.svg (the merged records in {} are written)",
                out.display()
            ),
        ));
    }
    // The varied keys, in the order the labels name them (the order of --vary).
    let mut keys: Vec<String> = Vec::new();
    for c in &record.configs {
        for (k, _) in c.label.split(' ').filter_map(|kv| kv.split_once('=')) {
            if !keys.iter().any(|x| x == k) {
                keys.push(k.to_string());
            }
        }
    }
    let taken = plot.is_some_and(|p| p.as_os_str() == schedlab_report::output::STDOUT);
    if let Some(own) = schedlab_report::seed::own_tables_def(record) {
        crate::execute::say(
            &crate::execute::own_tables(&own, record, &combinations(&own, record)),
            taken,
        );
    } else {
        crate::execute::say(&schedlab_report::sweep::table(record, &keys), taken);
    }
    eprintln!(
        "wrote {}: {} configurations, {} repetitions, from {} shards",
        out.display(),
        record.configs.len(),
        merged.repetitions,
        merged.shards
    );
    crate::execute::say(&timeline_text, taken);
    if let Some(p) = timeline {
        schedlab_report::timeline::write_timeline(record, p).map_err(|e| {
            Error::output(
                "--timeline",
                p,
                format!(
                    "{e}; the chart was not written (the records in {} are complete)",
                    out.display()
                ),
            )
        })?;
        eprintln!(
            "wrote {} (the exact events are in each shard's FILE.events directory)",
            p.display()
        );
    }
    if let Some(p) = plot {
        schedlab_report::plot::sweep_chart(record, &keys, p).map_err(|e| {
            Error::output(
                "--plot",
                p,
                format!(
                    "{e}; the plot was not written (the records in {} are complete)",
                    out.display()
                ),
            )
        })?;
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The combinations of a sweep's varied values, in order, for a workload with tables of its own:
/// each configuration's label without the points the workload itself splits into
/// ([`OwnTables::points`]; `sweep` gets them from the experiment, a merged record has only its
/// labels).
fn combinations(own: &OwnTables, record: &schedlab_workload::record::RunRecord) -> Vec<String> {
    let mut combinations: Vec<String> = Vec::new();
    for c in &record.configs {
        let what: Vec<&str> = (c.label.split(' '))
            .filter(|t| {
                !own.points
                    .iter()
                    .any(|p| t.strip_prefix(p).is_some_and(|v| v.starts_with('=')))
            })
            .collect();
        let what = what.join(" ");
        if !combinations.contains(&what) {
            combinations.push(what);
        }
    }
    combinations
}
