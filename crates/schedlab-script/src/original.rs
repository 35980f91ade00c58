//! The recorded program's own run as a run record (`schedlab record --json FILE`), so that
//! `schedlab compare original.json replay.json` sets the replay beside the program it was
//! recorded from, in the terms every run record has (docs/record.md).
//!
//! The record is the one a replay of the recorded file writes on the real kernel, with one
//! repetition: the same workload name and parameters (each group's `count`), the same groups,
//! the wall time as the `time` metric, and per group the counters the kernel's own would give —
//! voluntary and involuntary switches, wakeups, migrations and CPU time — counted from the
//! trace by the conversion ([`crate::from_trace::TaskFacts`]). It adds the wakeup-latency
//! distribution (a sleeping task's `sched_waking` to its switch-in), as the metrics
//! `wakeup_latency_avg`, `_p50`, `_p99` and `_max` (µs, as cyclictest names its own) and whole,
//! as an HDR histogram ([`Distribution`]), for the Kolmogorov–Smirnov distance `compare`
//! states between two records that have one.

use crate::from_trace::Converted;
use hdrhistogram::Histogram;
use schedlab_workload::record::{
    BackendInfo, Better, ConfigResult, CounterSources, Counters, Distribution, GroupInfo,
    MetricDef, Repetition, RunRecord, Summary, SCHEMA_VERSION,
};
use schedlab_workload::sched_events::Recording;
use std::collections::BTreeMap;

/// Where the counters of the original's record come from.
const SOURCE: &str = "the recorded trace (schedlab record)";

/// The recorded run of `rec` (converted into `conv`) as a run record; the caller fills in
/// `tool`, `machine`, `command` and `started_unix`, which are the recording command's.
pub fn run_record(rec: &Recording, conv: &Converted) -> RunRecord {
    let mut metrics = BTreeMap::new();
    metrics.insert(
        "time".to_string(),
        rec.stop_ns.saturating_sub(rec.start_ns) as f64 / 1e9,
    );
    let latency = distribution_us(&conv.wakeup_latencies_ns);
    if let Some(h) = &latency.1 {
        metrics.insert("wakeup_latency_avg".into(), h.mean());
        metrics.insert("wakeup_latency_p50".into(), h.value_at_quantile(0.5) as f64);
        metrics.insert(
            "wakeup_latency_p99".into(),
            h.value_at_quantile(0.99) as f64,
        );
        metrics.insert("wakeup_latency_max".into(), h.max() as f64);
    }
    // Groups in the file's order (the order tasks were first seen), each with its tasks'
    // counters summed, as the replay's record has them.
    let mut groups: Vec<GroupInfo> = Vec::new();
    let mut counters: BTreeMap<String, Counters> = BTreeMap::new();
    let mut total = Counters::default();
    for t in &conv.tasks {
        match groups.iter_mut().find(|g| g.name == t.group) {
            Some(g) => g.tasks += 1,
            None => groups.push(GroupInfo {
                name: t.group.clone(),
                tasks: 1,
                knobs: Default::default(),
                observed: BTreeMap::new(),
            }),
        }
        let c = Counters {
            voluntary_switches: Some(t.voluntary_switches),
            involuntary_switches: Some(t.involuntary_switches),
            migrations: Some(t.migrations),
            wakeups: Some(t.wakeups),
            cpu_time_s: t.cpu_ns as f64 / 1e9,
            ..Counters::default()
        };
        counters.entry(t.group.clone()).or_default().add(&c);
        total.add(&c);
    }
    counters.insert("total".into(), total);
    let params = groups
        .iter()
        .map(|g| (format!("{}.count", g.name), g.tasks.to_string()))
        .collect();
    let summary = metrics
        .iter()
        .map(|(k, &v)| {
            (
                k.clone(),
                Summary {
                    n: 1,
                    mean: v,
                    sd: 0.0,
                    min: v,
                    median: v,
                    max: v,
                },
            )
        })
        .collect();
    let config = ConfigResult {
        label: String::new(),
        params,
        machine: None,
        groups,
        counter_sources: CounterSources {
            switches: SOURCE.into(),
            migrations: SOURCE.into(),
            wakeups: SOURCE.into(),
        },
        repetitions: vec![Repetition {
            metrics,
            counters,
            lost_events: rec.lost,
            wakeup_latency: latency.0,
            ..Repetition::default()
        }],
        summary,
        intervals: BTreeMap::new(),
        converged: None,
    };
    let mut details = BTreeMap::new();
    details.insert(
        "recorded".to_string(),
        format!("the original run of: {}", rec.source),
    );
    RunRecord {
        schema: SCHEMA_VERSION,
        workload: crate::from_trace::workload_name(&rec.source),
        backend: BackendInfo {
            kind: "real".into(),
            details,
            ..BackendInfo::default()
        },
        metrics: metric_defs(latency.1.is_some()),
        configs: vec![config],
        level: 95.0,
        ..RunRecord::default()
    }
}

/// The metrics: `time` as a replay's record defines it, then the wakeup latencies.
fn metric_defs(latency: bool) -> Vec<MetricDef> {
    let m = |name: &str, unit: &str, description: &str| MetricDef {
        name: name.into(),
        unit: unit.into(),
        better: Better::Lower,
        description: description.into(),
    };
    let mut defs = vec![m(
        "time",
        "s",
        "wall time from the start until every task is done",
    )];
    if latency {
        defs.extend([
            m(
                "wakeup_latency_avg",
                "us",
                "mean wakeup latency (sched_waking of a sleeping task to its switch-in)",
            ),
            m(
                "wakeup_latency_p50",
                "us",
                "median wakeup latency (HDR histogram, 3 digits)",
            ),
            m(
                "wakeup_latency_p99",
                "us",
                "99th percentile of the wakeup latency (HDR histogram, 3 digits)",
            ),
            m("wakeup_latency_max", "us", "largest wakeup latency"),
        ]);
    }
    defs
}

/// The latencies (ns) as a distribution in µs (the trace's resolution), and the histogram
/// for its statistics; `(None, None)` without samples.
pub fn distribution_us(latencies_ns: &[u64]) -> (Option<Distribution>, Option<Histogram<u64>>) {
    if latencies_ns.is_empty() {
        return (None, None);
    }
    // 3 significant digits, auto-resizing: a few kB whatever the samples.
    let mut h = Histogram::<u64>::new(3).expect("3 significant digits is a valid precision");
    for &ns in latencies_ns {
        h.saturating_record(ns / 1000);
    }
    let buckets = h
        .iter_recorded()
        .map(|v| {
            (
                h.highest_equivalent(v.value_iterated_to()) as f64,
                v.count_at_value(),
            )
        })
        .collect();
    (
        Some(Distribution {
            unit: "us".into(),
            buckets,
        }),
        Some(h),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::sched_events::{EventKind, LeftAs, SchedEvent};

    #[test]
    fn the_original_run_is_a_record_with_its_counters_and_latencies() {
        // Two tasks: 10 wakes the sleeping 11 at 100 ns, which runs at 2100 ns (2 µs later).
        let ev = |ts, kind| SchedEvent {
            ts_ns: ts,
            cpu: 0,
            kind,
        };
        let events = vec![
            ev(
                0,
                EventKind::Switch {
                    prev: 0,
                    left: LeftAs::Runnable,
                    next: 10,
                    prev_runtime_ns: None,
                },
            ),
            ev(
                50,
                EventKind::Waking {
                    waker: 10,
                    wakee: 11,
                },
            ),
            ev(
                2_050,
                EventKind::Switch {
                    prev: 10,
                    left: LeftAs::Sleeping,
                    next: 11,
                    prev_runtime_ns: None,
                },
            ),
            ev(
                3_050,
                EventKind::Switch {
                    prev: 11,
                    left: LeftAs::Dead,
                    next: 0,
                    prev_runtime_ns: None,
                },
            ),
        ];
        let rec = Recording {
            events,
            roots: vec![10, 11],
            names: [(10, "a".to_string()), (11, "b".to_string())].into(),
            start_ns: 0,
            stop_ns: 4_000_000,
            source: "prog".into(),
            ..Recording::default()
        };
        let conv = crate::from_trace::convert(&rec, false).unwrap();
        let r = run_record(&rec, &conv);
        assert_eq!(r.workload, "recorded-prog");
        let c = &r.configs[0];
        assert_eq!(
            c.params,
            BTreeMap::from([
                ("a_10.count".to_string(), "1".to_string()),
                ("b_11.count".to_string(), "1".to_string())
            ])
        );
        let rep = &c.repetitions[0];
        assert_eq!(rep.metrics["time"], 0.004);
        assert_eq!(rep.metrics["wakeup_latency_max"], 2.0);
        let a = &rep.counters["a_10"];
        assert_eq!((a.voluntary_switches, a.wakeups), (Some(1), Some(0)));
        assert_eq!(a.cpu_time_s, 2.05e-6);
        let b = &rep.counters["b_11"];
        assert_eq!((b.voluntary_switches, b.wakeups), (Some(0), Some(1)));
        assert_eq!(rep.counters["total"].wakeups, Some(1));
        let d = rep.wakeup_latency.as_ref().unwrap();
        assert_eq!(d.buckets, vec![(2.0, 1)]);
        // It reads back as a record (the schema's own round trip).
        let back = RunRecord::from_json(&r.to_json()).unwrap();
        assert_eq!(
            back.configs[0].repetitions[0].wakeup_latency,
            rep.wakeup_latency
        );
    }
}
