//! The table of a sweep: one row per configuration, the varied keys first, then the primary
//! metric's mean with its confidence interval, and the change against the first row — signed so
//! that + is better and marked `*` where it is significant (Student's t at the record's level),
//! as interbench's and mmtests' tables mark theirs. A workload with a seed table of its own (chat's
//! and web's seed 000 tables) gets it after.

use crate::table::{num, Table};
use schedlab_stats::{compare, metric_values};
use schedlab_workload::record::{ConfigResult, RunRecord};

/// The value of a varied key (`threads`, `server.nice`) in a configuration
/// ([`ConfigResult::key_value`]).
pub fn key_value(config: &ConfigResult, key: &str) -> String {
    config.key_value(key)
}

/// Against the first configuration at the same point of the other keys (with keys `policy`,
/// `threads`: `b threads=16` against `a threads=16`): `+3.2% *` (significant) or `+0.4%`.
/// Comparing across the other keys would compare unlike with unlike.
pub fn versus_first(record: &RunRecord, metric: &str, keys: &[String]) -> Vec<String> {
    let better = record.metric(metric).map(|m| m.better);
    let others = |c: &ConfigResult| -> Vec<String> {
        keys.iter().skip(1).map(|k| key_value(c, k)).collect()
    };
    record
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let point = others(c);
            let first = record
                .configs
                .iter()
                .position(|b| others(b) == point)
                .unwrap_or(i);
            if first == i {
                return "baseline".into();
            }
            let base = metric_values(&record.configs[first], metric);
            match (
                compare(&base, &metric_values(c, metric), record.level, false),
                better,
            ) {
                (Ok(cmp), Some(b)) => {
                    let pct = cmp.improvement_pct(b);
                    match (cmp.significant, pct > 0.0) {
                        (true, true) => format!("{pct:+.1}% *"),
                        (true, false) => format!("{pct:+.1}% !"),
                        _ => format!("{pct:+.1}%"),
                    }
                }
                _ => "n/a (needs 2+ runs)".into(),
            }
        })
        .collect()
}

/// The sweep's table, followed by the workload's seed table if it has one (seed 000's for chat
/// and web sweeps).
pub fn table(record: &RunRecord, keys: &[String]) -> String {
    let mut out = primary_table(record, keys);
    if let Some(table) = crate::seed::seed_table(record, keys) {
        out.push('\n');
        out.push_str(&table);
    }
    if record.interrupted {
        out.push_str("(interrupted: only the repetitions that finished are shown)\n");
    }
    out
}

/// The sweep's table of the primary metric alone, with its legend.
pub fn primary_table(record: &RunRecord, keys: &[String]) -> String {
    let Some(primary) = record.primary_metric() else {
        return String::new();
    };
    let mut header: Vec<String> = keys.to_vec();
    header.push(format!(
        "{} ({}) ± CI{}",
        primary.name, primary.unit, record.level
    ));
    header.push("N".into());
    header.push("vs first".into());
    if record.until.is_some() {
        header.push("converged".into());
    }
    let mut t = Table::new(header);
    let marks = versus_first(record, &primary.name, keys);
    for (c, mark) in record.configs.iter().zip(&marks) {
        let mut row: Vec<String> = keys.iter().map(|k| key_value(c, k)).collect();
        let s = c.summary.get(&primary.name);
        let ci = c.intervals.get(&primary.name).and_then(|i| i.half_width);
        row.push(match (s, ci) {
            (Some(s), Some(ci)) => format!("{} ± {}", num(s.mean), num(ci)),
            (Some(s), None) => num(s.mean),
            _ => "-".into(),
        });
        row.push(s.map_or(0, |s| s.n).to_string());
        row.push(mark.clone());
        if record.until.is_some() {
            row.push(match c.converged {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "-".into(),
            });
        }
        t.row(row);
    }
    let mut out = t.render();
    out.push_str(&format!(
        "+ is better; * = significantly better than the first row{}, ! = significantly worse ({}%, Student's t)\n",
        if keys.len() > 1 {
            format!(" with the same {}", keys[1..].join(", "))
        } else {
            String::new()
        },
        record.level
    ));
    out
}
