//! interbench's tables (interbench.c `show_latencies` and the headers of `main`), as seed 004
//! prints them: one table per benchmarked task, one row per load —
//!
//! ```text
//! --- Benchmarking simulated cpu of Audio nice 19 in the presence of simulated ---
//! Load  Latency +/- SD (ms)  Max Latency  % Desired CPU  % Deadlines Met
//! ```
//!
//! With several repetitions each cell is the mean over them, followed by its confidence interval.
//! Comparing records marks a row with `*` where that record is significantly better than the
//! first, judged as the seed reads its tables: from right to left (deadlines met, desired CPU, max
//! latency, mean latency), the first metric whose difference is significant decides.

use crate::table::{num, Table};
use schedlab_stats::{compare, describe, metric_values};
use schedlab_workload::presets::{BenchKind, LoadKind};
use schedlab_workload::record::{ConfigResult, RunRecord};

/// Metrics in the seed's order of importance (most important first) and whether higher is better.
const IMPORTANCE: [(&str, bool); 4] = [
    ("deadlines_met", true),
    ("desired_cpu", true),
    ("latency_max", false),
    ("latency", false),
];

fn param<'a>(c: &'a ConfigResult, key: &str) -> &'a str {
    c.params.get(key).map(String::as_str).unwrap_or("-")
}

/// The original's capitalised label of a benchmark or load named in a record (`x` → `X`).
fn bench_label(c: &ConfigResult) -> &'static str {
    param(c, "bench")
        .parse::<BenchKind>()
        .map_or("?", |b| b.label())
}

fn load_label(c: &ConfigResult) -> &'static str {
    param(c, "load")
        .parse::<LoadKind>()
        .map_or("?", |l| l.label())
}

/// `--- Benchmarking simulated cpu of Audio nice 19 in the presence of simulated nice -5 ---`
fn header(c: &ConfigResult) -> String {
    let nice = |group: &str| {
        c.groups
            .iter()
            .find(|g| g.name == group)
            .and_then(|g| g.knobs.nice)
            .filter(|&n| n != 0)
    };
    let mut h = format!("--- Benchmarking simulated cpu of {} ", bench_label(c));
    if param(c, "rt") == "true" {
        h.push_str("real time ");
    } else if let Some(n) = nice("bench") {
        h.push_str(&format!("nice {n} "));
    }
    h.push_str("in the presence of simulated ");
    if let Some(n) = nice("load") {
        h.push_str(&format!("nice {n} "));
    }
    h.push_str("---");
    h
}

/// A cell: the mean over repetitions, and its CI when there are several.
fn cell(c: &ConfigResult, metric: &str, level: f64) -> String {
    let values = metric_values(c, metric);
    if values.is_empty() {
        return "-".into();
    }
    let d = describe(&values, level);
    if values.len() > 1 && d.ci_half_width.is_finite() {
        format!("{} ±{}", num(d.summary.mean), num(d.ci_half_width))
    } else {
        num(d.summary.mean)
    }
}

/// Whether `c` is significantly better than `base` by the first significant metric in the
/// seed's order of importance.
fn better(c: &ConfigResult, base: &ConfigResult, level: f64) -> bool {
    for (metric, higher) in IMPORTANCE {
        let (a, b) = (metric_values(base, metric), metric_values(c, metric));
        if a.len() < 2 || b.len() < 2 {
            continue;
        }
        let Ok(cmp) = compare(&a, &b, level, false) else {
            continue;
        };
        if cmp.significant {
            let diff = cmp.diff; // b − a
            return if higher { diff > 0.0 } else { diff < 0.0 };
        }
    }
    false
}

/// The tables of one record; `against` marks rows significantly better than that record's row
/// for the same (bench, load) pair.
pub fn tables(record: &RunRecord, against: Option<&RunRecord>) -> String {
    let level = record.level;
    let unit = if record.configs.iter().any(|c| param(c, "rt") == "true") {
        "us"
    } else {
        "ms"
    };
    let mut out = String::new();
    let mut benches: Vec<&str> = Vec::new();
    for c in &record.configs {
        let b = param(c, "bench");
        if !benches.contains(&b) {
            benches.push(b);
        }
    }
    let runs = record
        .configs
        .iter()
        .map(|c| c.repetitions.len())
        .max()
        .unwrap_or(0);
    for bench in benches {
        let rows: Vec<&ConfigResult> = record
            .configs
            .iter()
            .filter(|c| param(c, "bench") == bench)
            .collect();
        out.push_str(&header(rows[0]));
        out.push('\n');
        let deadlines = bench != "gaming";
        let mut head = vec![
            "Load".to_string(),
            format!("Latency +/- SD ({unit})"),
            "Max Latency".into(),
            "% Desired CPU".into(),
        ];
        if deadlines {
            head.push("% Deadlines Met".into());
        }
        if against.is_some() {
            head.push(String::new());
        }
        let mut t = Table::new(head);
        for c in rows {
            let mut row = vec![
                load_label(c).to_string(),
                format!(
                    "{} +/- {}",
                    cell(c, "latency", level),
                    cell(c, "latency_sd", level)
                ),
                cell(c, "latency_max", level),
                cell(c, "desired_cpu", level),
            ];
            if deadlines {
                row.push(cell(c, "deadlines_met", level));
            }
            if let Some(base) = against {
                let other = base.configs.iter().find(|o| {
                    param(o, "bench") == param(c, "bench") && param(o, "load") == param(c, "load")
                });
                row.push(match other {
                    Some(o) if better(c, o, level) => "*".into(),
                    _ => String::new(),
                });
            }
            t.row(row);
        }
        out.push_str(&t.render());
        out.push('\n');
    }
    if runs > 1 {
        out.push_str(&format!(
            "cells: mean over {runs} repetitions ±{level}% confidence interval; SD is within a run\n"
        ));
    }
    out
}

/// Seed 004's side-by-side form: each named record's tables, rows marked `*` where that record is
/// significantly better than the other one (the first is compared with the second, every other
/// record with the first).
pub fn side_by_side(parts: &[(&str, &RunRecord)], level: f64) -> String {
    let mut out = String::new();
    for (i, (name, r)) in parts.iter().enumerate() {
        let other = match i {
            0 => parts.get(1),
            _ => parts.first(),
        };
        out.push_str(&format!("== {name} ==\n"));
        out.push_str(&tables(r, other.map(|(_, o)| *o)));
        if let Some((o, _)) = other {
            out.push_str(&format!(
                "* = significantly better than {o} at {level}% (first significant of: deadlines met, desired CPU, max latency, latency)\n"
            ));
        }
        out.push('\n');
    }
    out
}
