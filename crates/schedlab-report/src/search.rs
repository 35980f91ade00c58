//! The table of a search for the largest passing value (`run web --find-max`,
//! schedlab_experiment::search): every candidate in the order tried, and the answer with its
//! confidence interval, from the record's [`SearchInfo`] alone.

use schedlab_workload::record::{RunRecord, SearchCandidate, SearchInfo};
use std::fmt::Write;

/// `mean ± half-width` of a candidate (`± -` with one run).
fn interval(c: &SearchCandidate) -> String {
    match c.half_width {
        Some(hw) => format!("{:.1} ± {:.1}", c.mean, hw),
        None => format!("{:.1} ± -", c.mean),
    }
}

/// The search's table and answer, or nothing for a record without a search.
pub fn search_table(record: &RunRecord) -> String {
    let Some(s) = &record.search else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "find-max: the largest {} whose {} is at least {} ({}% confidence)",
        s.param, s.metric, s.threshold, s.level
    );
    let _ = writeln!(out, "rule: {}", s.rule);
    let head = format!("{} (mean ± CI)", s.metric);
    let _ = writeln!(out, "{:>12}  {:>5}  {:<30}  verdict", s.param, "runs", head);
    for c in &s.candidates {
        let _ = writeln!(
            out,
            "{:>12}  {:>5}  {:<30}  {}",
            c.value,
            c.runs,
            interval(c),
            c.verdict
        );
    }
    out.push_str(&answer(s));
    out.push('\n');
    out
}

/// The answer line: the maximum with its interval, the value above it that does not pass, and
/// why the search ended.
fn answer(s: &SearchInfo) -> String {
    let at = |v: u64| s.candidates.iter().rev().find(|c| c.value == v);
    let runs: usize = s.candidates.iter().map(|c| c.runs).sum();
    let max = match s.maximum.and_then(|m| Some((m, at(m)?))) {
        Some((m, c)) => format!("maximum: {m} {} ({} {})", s.param, s.metric, interval(c)),
        None => format!("maximum: none — no {} tried passes", s.param),
    };
    let above = match s.first_failing.and_then(|f| Some((f, at(f)?))) {
        Some((f, c)) => format!("; {f} does not pass ({}, {})", interval(c), c.verdict),
        None => String::new(),
    };
    let why = match s.ended.as_str() {
        "converged" => "the next value does not pass".to_string(),
        "limit" => format!("the limit {} passes (raise --find-max-limit)", s.limit),
        "no-pass" => "even the smallest value tried does not pass".to_string(),
        "budget" => format!(
            "the budget of {} runs ran out before the boundary was found (raise --find-max-runs)",
            s.total_runs
        ),
        other => other.to_string(),
    };
    format!(
        "{max}{above}\nended: {why}; {runs} runs over {} candidates",
        s.candidates.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(value: u64, mean: f64, verdict: &str) -> SearchCandidate {
        SearchCandidate {
            value,
            runs: 3,
            mean,
            half_width: Some(0.0),
            verdict: verdict.into(),
        }
    }

    #[test]
    fn the_table_names_every_candidate_and_the_answer() {
        let rec = RunRecord {
            search: Some(SearchInfo {
                param: "connections".into(),
                metric: "conforming_share".into(),
                threshold: 95.0,
                level: 95.0,
                limit: 100,
                total_runs: 50,
                candidates: vec![
                    cand(4, 100.0, "pass"),
                    cand(8, 50.0, "fail"),
                    cand(6, 33.3, "fail"),
                    cand(5, 60.0, "fail"),
                ],
                maximum: Some(4),
                first_failing: Some(5),
                ended: "converged".into(),
                ..SearchInfo::default()
            }),
            ..RunRecord::default()
        };
        let t = search_table(&rec);
        assert!(
            t.contains("maximum: 4 connections (conforming_share 100.0 ± 0.0)"),
            "{t}"
        );
        assert!(t.contains("5 does not pass (60.0 ± 0.0, fail)"), "{t}");
        assert!(t.contains("12 runs over 4 candidates"), "{t}");
        assert_eq!(t.lines().filter(|l| l.ends_with("fail")).count(), 3, "{t}");
        assert_eq!(search_table(&RunRecord::default()), "");
    }
}
