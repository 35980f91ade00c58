//! `schedlab merge DIR... -o OUT`: the experiment layer checks and joins the shards
//! (`schedlab_experiment::merge`); this prints the sweep's table as `sweep` would (seed 004's
//! side-by-side tables for interbench), and its plot.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Merge the shards in `dirs` into `out`, print the table, and draw `plot` if asked.
pub fn run(dirs: &[PathBuf], out: &Path, plot: Option<&Path>) -> Result<ExitCode, String> {
    if let Some(p) = plot {
        crate::execute::check_file_output("--plot", p)?;
    }
    let merged = schedlab_experiment::merge::merge(dirs, out).map_err(|e| e.to_string())?;
    let record = &merged.record;
    // The varied keys, in the order the labels name them (the order of --vary).
    let mut keys: Vec<String> = Vec::new();
    for c in &record.configs {
        for (k, _) in c.label.split(' ').filter_map(|kv| kv.split_once('=')) {
            if !keys.iter().any(|x| x == k) {
                keys.push(k.to_string());
            }
        }
    }
    if record.workload == "interbench" {
        print!(
            "{}",
            crate::execute::interbench_tables(record, &interbench_combinations(record))
        );
    } else {
        print!("{}", schedlab_report::sweep::table(record, &keys));
    }
    eprintln!(
        "wrote {}: {} configurations, {} repetitions, from {} shards",
        out.display(),
        record.configs.len(),
        merged.repetitions,
        merged.shards
    );
    if let Some(p) = plot {
        schedlab_report::plot::sweep_chart(record, &keys, p).map_err(|e| {
            format!(
                "--plot {}: {e}; the plot was not written (the records in {} are complete)",
                p.display(),
                out.display()
            )
        })?;
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The combinations of an interbench sweep's varied values, in order: each configuration's
/// label without the `bench=` and `load=` the workload itself splits into (`sweep` gets them
/// from the experiment; a merged record has only its labels).
fn interbench_combinations(record: &schedlab_workload::record::RunRecord) -> Vec<String> {
    let mut combinations: Vec<String> = Vec::new();
    for c in &record.configs {
        let what: Vec<&str> = (c.label.split(' '))
            .filter(|t| !t.starts_with("bench=") && !t.starts_with("load="))
            .collect();
        let what = what.join(" ");
        if !combinations.contains(&what) {
            combinations.push(what);
        }
    }
    combinations
}
