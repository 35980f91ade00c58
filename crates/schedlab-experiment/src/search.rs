//! The search for the largest value of a parameter that still passes a criterion — SPECweb99's
//! "simultaneous connections": the most connections of which at least 95 % conform
//! (docs/web.md). General over any workload with a pass/fail metric: a parameter (a count), a
//! metric and a threshold the metric's mean must reach.
//!
//! The stopping rule, stated:
//! 1. **Each candidate** is measured by the ordinary loop ([`crate::measure`](fn@crate::measure)) with a
//!    [`Budget::Threshold`]: repetitions until the metric's confidence interval (at `--level`)
//!    is clear of the threshold — `pass` when its lower end is at or above it, `fail` when its
//!    upper end is below — after at least [`schedlab_stats::StoppingRule::MIN_RUNS`], or
//!    `undecided` at the per-candidate maximum, which counts as not passing (the maximum
//!    reported is one that demonstrably passes).
//! 2. **Growth**: from the start value, double while candidates pass (never past the limit).
//! 3. **Bisection** between the largest passing and the smallest non-passing candidate until
//!    they are adjacent; if the start does not pass, halve down until one passes or 1 fails.
//! 4. **Bounds**: no candidate above the limit; no candidate is started unless the total
//!    repetitions left cover its minimum, and each candidate's maximum is cut to what is left.
//!    The record says which of these ended the search.

use crate::backend::Backend;
use crate::build::{build_from, ExperimentRequest};
use crate::error::ExperimentError;
use crate::measure::{measure, Progress, RunEnd, Sinks};
use crate::settings::{Budget, Settings};
use schedlab_stats::{metric_values, StoppingRule, ThresholdRule};
use schedlab_workload::presets::Configurable;
use schedlab_workload::record::{RunRecord, SearchCandidate, SearchInfo};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What to search for and within which bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchSpec {
    /// The parameter searched, a count (`connections`).
    pub param: String,
    /// The metric judged (`conforming_share`).
    pub metric: String,
    /// The value the metric's interval must be at or above.
    pub threshold: f64,
    /// The first candidate (≥ 1).
    pub start: u64,
    /// The largest candidate (≥ start).
    pub limit: u64,
    /// The most repetitions of one candidate (≥ the rule's minimum).
    pub max_runs: usize,
    /// The most repetitions of the whole search (≥ one candidate's minimum).
    pub total_runs: usize,
}

impl SearchSpec {
    /// Refuse bounds that cannot work, naming the value and what is accepted.
    pub fn check(&self) -> Result<(), ExperimentError> {
        let min = StoppingRule::MIN_RUNS;
        let bad = |m: String| Err(ExperimentError::Setting(m));
        if self.start == 0 {
            return bad(format!(
                "--{} 0: the search starts at 1 or more",
                self.param
            ));
        }
        if self.limit < self.start {
            return bad(format!(
                "--find-max-limit {}: below the start --{} {}; accepted: {} or more",
                self.limit, self.param, self.start, self.start
            ));
        }
        if self.max_runs < min {
            return bad(format!(
                "--max-runs {}: each candidate needs at least {min} runs for its interval",
                self.max_runs
            ));
        }
        if self.total_runs < min {
            return bad(format!(
                "--find-max-runs {}: the search needs at least {min} runs (one candidate)",
                self.total_runs
            ));
        }
        Ok(())
    }
}

/// The next candidate after the passing `lo` and non-passing `hi` found so far, or `None` when
/// the search has its answer (`lo` and `hi` adjacent, the limit passes, or 1 fails).
pub fn next_candidate(lo: Option<u64>, hi: Option<u64>, limit: u64) -> Option<u64> {
    match (lo, hi) {
        (Some(lo), None) => (lo < limit).then(|| lo.saturating_mul(2).min(limit)),
        (None, Some(hi)) => (hi > 1).then_some(hi / 2),
        (Some(lo), Some(hi)) => (hi - lo > 1).then_some(lo + (hi - lo) / 2),
        (None, None) => None,
    }
}

/// Run the search of `spec` over configurations of `base` (with `request`'s other parameters,
/// knobs and no variations), each candidate measured on `backend`; the record holds every
/// candidate's repetitions as a configuration and [`SearchInfo`], and is written to
/// `settings.json` after every candidate.
#[allow(clippy::too_many_arguments)]
pub fn search<W: Configurable, B: Backend>(
    base: W,
    request: &ExperimentRequest,
    backend: &mut B,
    machine: &B::Machine,
    settings: &Settings,
    spec: &SearchSpec,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(RunEnd, RunRecord), ExperimentError> {
    spec.check()?;
    let mut info = SearchInfo {
        param: spec.param.clone(),
        metric: spec.metric.clone(),
        threshold: spec.threshold,
        level: settings.level,
        start: spec.start,
        limit: spec.limit,
        max_runs: spec.max_runs,
        total_runs: spec.total_runs,
        rule: format!(
            "each candidate: runs until the {}% interval of {} is clear of {} (at least {}, at most {}; undecided counts as failing); double from {} while passing (up to {}), then bisect; at most {} runs in all",
            settings.level, spec.metric, spec.threshold, StoppingRule::MIN_RUNS, spec.max_runs,
            spec.start, spec.limit, spec.total_runs
        ),
        ..SearchInfo::default()
    };
    let mut record: Option<RunRecord> = None;
    let (mut lo, mut hi) = (None, None);
    let mut used = 0usize;
    let mut candidate = Some(spec.start);
    let mut end = RunEnd::Complete;
    while let Some(value) = candidate {
        let left = spec.total_runs - used;
        if left < StoppingRule::MIN_RUNS {
            info.ended = "budget".into();
            break;
        }
        let rule = ThresholdRule {
            level: settings.level,
            threshold: spec.threshold,
            min_runs: StoppingRule::MIN_RUNS,
            max_runs: spec.max_runs.min(left),
        };
        let mut req = request.clone();
        req.params.retain(|(k, _)| *k != spec.param);
        req.params.push((spec.param.clone(), value.to_string()));
        req.vary.clear();
        let mut experiment = build_from(base.clone(), &req, backend, machine)?;
        let label = format!("{}={value}", spec.param);
        for c in &mut experiment.configs {
            c.label = label.clone();
        }
        let candidate_settings = Settings {
            budget: Budget::Threshold {
                metric: spec.metric.clone(),
                rule,
            },
            json: None,
            ..settings.clone()
        };
        let sinks = Sinks {
            json: None,
            out: None,
            exports: None,
        };
        let (ran_end, ran) = measure(
            experiment,
            backend,
            &candidate_settings,
            &sinks,
            stop,
            progress,
        )?;
        let rec = record.get_or_insert_with(|| RunRecord {
            configs: Vec::new(),
            ..ran.clone()
        });
        for config in ran.configs {
            let values = metric_values(&config, &spec.metric);
            used += values.len();
            if ran_end == RunEnd::Complete {
                let verdict = rule.verdict(&values);
                let d = schedlab_stats::describe(&values, settings.level);
                info.candidates.push(SearchCandidate {
                    value,
                    runs: values.len(),
                    mean: d.summary.mean,
                    half_width: d.ci_half_width.is_finite().then_some(d.ci_half_width),
                    verdict: verdict.as_str().into(),
                });
                if verdict == schedlab_stats::Verdict::Pass {
                    lo = Some(value);
                } else {
                    hi = Some(value);
                }
            }
            rec.configs.push(config);
        }
        if ran_end == RunEnd::Interrupted {
            end = RunEnd::Interrupted;
            rec.interrupted = true;
            info.ended = "interrupted".into();
            break;
        }
        info.maximum = lo;
        info.first_failing = hi;
        rec.search = Some(info.clone());
        save(settings, rec)?;
        candidate = next_candidate(lo, hi, spec.limit);
    }
    let mut rec = record.unwrap_or_default();
    info.maximum = lo;
    info.first_failing = hi;
    if info.ended.is_empty() {
        info.ended = match (lo, hi) {
            (Some(_), Some(_)) => "converged",
            (Some(_), None) => "limit",
            _ => "no-pass",
        }
        .into();
    }
    rec.search = Some(info);
    save(settings, &rec)?;
    Ok((end, rec))
}

/// Write the search's record to `--json`, if given.
fn save(settings: &Settings, record: &RunRecord) -> Result<(), ExperimentError> {
    let Some(path) = &settings.json else {
        return Ok(());
    };
    schedlab_report::export::write_json(record, path, schedlab_report::output::Stage::Last).map_err(
        |source| ExperimentError::Write {
            path: path.clone(),
            source,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_then_bisection_then_stop() {
        assert_eq!(next_candidate(Some(4), None, 100), Some(8));
        assert_eq!(next_candidate(Some(64), None, 100), Some(100));
        assert_eq!(next_candidate(Some(100), None, 100), None);
        assert_eq!(next_candidate(Some(4), Some(8), 100), Some(6));
        assert_eq!(next_candidate(Some(4), Some(5), 100), None);
        assert_eq!(next_candidate(None, Some(8), 100), Some(4));
        assert_eq!(next_candidate(None, Some(1), 100), None);
    }

    #[test]
    fn bad_bounds_are_refused() {
        let spec = SearchSpec {
            param: "connections".into(),
            metric: "conforming_share".into(),
            threshold: 95.0,
            start: 10,
            limit: 5,
            max_runs: 10,
            total_runs: 50,
        };
        let e = spec.check().unwrap_err().to_string();
        assert!(e.contains("--find-max-limit 5"), "{e}");
        let e = SearchSpec {
            limit: 20,
            max_runs: 2,
            ..spec.clone()
        }
        .check()
        .unwrap_err();
        assert!(e.to_string().contains("--max-runs 2"), "{e}");
        let e = SearchSpec {
            limit: 20,
            total_runs: 1,
            ..spec.clone()
        }
        .check()
        .unwrap_err();
        assert!(e.to_string().contains("--find-max-runs 1"), "{e}");
        assert!(SearchSpec { limit: 20, ..spec }.check().is_ok());
    }
}
