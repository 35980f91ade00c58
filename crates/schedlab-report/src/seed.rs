//! A workload's own tables, as its definition declares them
//! ([`schedlab_workload::presets::WorkloadDef::tables`]): found by the record's workload name,
//! rendered by the hooks in the workload's file, with the statistics of `schedlab-stats`
//! ([`Stats`]). Nothing here knows a workload by name.

use schedlab_stats::{compare, describe};
use schedlab_workload::presets::{self, OwnTables, SeedTable, TableStats};
use schedlab_workload::record::{ConfigResult, RunRecord};

/// The statistics the workloads' table hooks use, from `schedlab-stats`.
pub struct Stats;

impl TableStats for Stats {
    fn mean_ci(&self, values: &[f64], level: f64) -> (f64, f64) {
        let d = describe(values, level);
        (d.summary.mean, d.ci_half_width)
    }

    fn significant_diff(&self, a: &[f64], b: &[f64], level: f64) -> Option<f64> {
        compare(a, b, level, false)
            .ok()
            .filter(|c| c.significant)
            .map(|c| c.diff)
    }
}

/// The seed table the record's workload prints after the generic tables, if it has one.
pub fn seed_table_def(record: &RunRecord) -> Option<SeedTable> {
    presets::lookup(&record.workload).and_then(|d| d.tables.seed)
}

/// The tables that take the place of the summary and the sweep table for the record's
/// workload, if it has them.
pub fn own_tables_def(record: &RunRecord) -> Option<OwnTables> {
    presets::lookup(&record.workload).and_then(|d| d.tables.own)
}

/// The record's seed table over all its configurations (`varied`: the sweep's varied keys),
/// if its workload has one.
pub fn seed_table(record: &RunRecord, varied: &[String]) -> Option<String> {
    let def = seed_table_def(record)?;
    let rows: Vec<&ConfigResult> = record.configs.iter().collect();
    Some((def.render)(&rows, varied))
}

/// The record's own tables (`against`: mark rows significantly better than that record's), if
/// its workload has them.
pub fn own_tables(record: &RunRecord, against: Option<&RunRecord>) -> Option<String> {
    let def = own_tables_def(record)?;
    Some((def.render)(record, against, &Stats))
}

/// The side-by-side form of records whose workload has its own tables (seed 004's): each named
/// record's tables, rows marked `*` where that record is significantly better than the other
/// one (the first is compared with the second, every other record with the first).
pub fn side_by_side(own: &OwnTables, parts: &[(&str, &RunRecord)], level: f64) -> String {
    let mut out = String::new();
    for (i, (name, r)) in parts.iter().enumerate() {
        let other = match i {
            0 => parts.get(1),
            _ => parts.first(),
        };
        out.push_str(&format!("== {name} ==\n"));
        out.push_str(&(own.render)(r, other.map(|(_, o)| *o), &Stats));
        if let Some((o, _)) = other {
            out.push_str(&format!(
                "* = significantly better than {o} at {level}% ({})\n",
                own.better_by
            ));
        }
        out.push('\n');
    }
    out
}
