//! `--wis-csv FILE`: a thread sweep as will-it-scale's CSV (antonblanchard/will-it-scale,
//! `runtest.py`), so that plots made for will-it-scale read schedlab's results:
//!
//! ```text
//! tasks,processes,processes_idle,threads,threads_idle,linear
//! 0,0,100,0,100,0
//! 1,,,41234,49.12,41234
//! ```
//!
//! In runtest.py each row is one task count: `processes` and `threads` are the `average:` line
//! of the `_processes` and `_threads` binaries (operations per second of all tasks together,
//! averaged over the measured seconds), `processes_idle` and `threads_idle` the machine's idle
//! percentage from /proc/stat over each run, and `linear` the one-task rate (the larger of the
//! two) times the task count; a first row `0,0,100,0,100,0` anchors the plot. schedlab fills:
//!
//! - `tasks`: the configuration's `threads`;
//! - `threads`: the mean of the primary metric over the repetitions (for `lookup`, lookups per
//!   second of all tasks), rounded as runtest.py prints it;
//! - `threads_idle`: on the simulator, the simulated CPUs' idle share of the run (mean over the
//!   repetitions); empty on the real kernel, where schedlab does not read the whole machine's
//!   /proc/stat;
//! - `processes`, `processes_idle`: empty — schedlab's run is one hosting (the tasks are threads);
//! - `linear`: the `threads` value of the one-task row times `tasks`; empty without such a row.

use crate::export::Exporter;
use schedlab_workload::record::RunRecord;
use std::io;

/// The header runtest.py prints.
pub const HEADER: &str = "tasks,processes,processes_idle,threads,threads_idle,linear";

/// Writes a thread sweep as will-it-scale's CSV: one row per configuration, by its `threads`.
pub struct WisExporter;

/// One row's figures.
struct Row {
    tasks: u64,
    ops: Option<f64>,
    idle: Option<f64>,
}

impl Exporter for WisExporter {
    fn serialize(&self, record: &RunRecord) -> io::Result<Vec<u8>> {
        let primary = record
            .metrics
            .first()
            .ok_or_else(|| io::Error::other("the record has no metric"))?;
        let mut rows: Vec<Row> = Vec::new();
        for c in &record.configs {
            let tasks = c
                .params
                .get("threads")
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| {
                    io::Error::other(format!(
                        "configuration '{}' has no threads parameter",
                        c.label
                    ))
                })?;
            let idle: Vec<f64> = c
                .repetitions
                .iter()
                .filter(|r| !r.cpus.is_empty())
                .map(|r| {
                    let idle: f64 = r.cpus.iter().map(|c| c.idle_s).sum();
                    let all: f64 = r.cpus.iter().map(|c| c.idle_s + c.busy_s).sum();
                    100.0 * idle / all
                })
                .filter(|v| v.is_finite())
                .collect();
            rows.push(Row {
                tasks,
                ops: c.summary.get(&primary.name).map(|s| s.mean),
                idle: (!idle.is_empty()).then(|| idle.iter().sum::<f64>() / idle.len() as f64),
            });
        }
        rows.sort_by_key(|r| r.tasks);
        let one = rows.iter().find(|r| r.tasks == 1).and_then(|r| r.ops);
        let mut out = format!("{HEADER}\n0,0,100,0,100,0\n");
        for r in &rows {
            let ops = r.ops.map_or(String::new(), |v| format!("{}", v.round()));
            let idle = r.idle.map_or(String::new(), |v| format!("{v:.2}"));
            let linear = one.map_or(String::new(), |v| format!("{}", v.round() * r.tasks as f64));
            out.push_str(&format!("{},,,{ops},{idle},{linear}\n", r.tasks));
        }
        Ok(out.into_bytes())
    }
}
