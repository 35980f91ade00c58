//! The record's published schema and field reference are what the record types generate, and
//! the schema accepts a record with every field filled and refuses broken ones.
//!
//! After changing a record type, regenerate both files:
//!
//!     SCHEDLAB_UPDATE_SCHEMA=1 cargo test --release -p schedlab-workload --test record_schema

use schedlab_workload::knobs::parse_group_arg;
use schedlab_workload::record::*;
use schedlab_workload::schema::{field_reference, json_schema, json_schema_text};
use schedlab_workload::timeline::{SeriesSummary, TimelineSummary};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

const UPDATE: &str = "SCHEDLAB_UPDATE_SCHEMA";
const REGENERATE: &str =
    "SCHEDLAB_UPDATE_SCHEMA=1 cargo test --release -p schedlab-workload --test record_schema";
/// The lines around the generated part of docs/record.md; the prose outside is written by hand.
const BEGIN: &str =
    "<!-- BEGIN FIELD REFERENCE: generated from the record types' doc comments; do not edit -->\n";
const END: &str = "<!-- END FIELD REFERENCE -->\n";

fn docs(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(file)
}

fn updating() -> bool {
    std::env::var_os(UPDATE).is_some()
}

#[test]
fn the_checked_in_schema_is_what_the_types_generate() {
    let path = docs("record.schema.json");
    let generated = json_schema_text();
    if updating() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is not what the record types generate; regenerate it with\n    {REGENERATE}",
        path.display()
    );
}

#[test]
fn the_field_reference_is_what_the_doc_comments_generate() {
    let path = docs("record.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let (Some(b), Some(e)) = (page.find(BEGIN), page.find(END)) else {
        panic!(
            "{} has no generated section ({BEGIN:?} … {END:?})",
            path.display()
        );
    };
    let generated = field_reference(&json_schema());
    let current = &page[b + BEGIN.len()..e];
    if updating() && current != generated {
        let new = format!("{}{BEGIN}{generated}{}", &page[..b], &page[e..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert!(
        current == generated,
        "{}'s field reference is not what the doc comments generate; regenerate it with\n    {REGENERATE}",
        path.display()
    );
}

/// A record with every optional field present and every list non-empty.
fn full_record() -> RunRecord {
    let (_, knobs) = parse_group_arg(
        "server:nice=-5,policy=deadline:1ms/10ms/10ms,slice=3ms,cpus=0-1,mode=kernel",
    )
    .unwrap();
    let counters = Counters {
        voluntary_switches: Some(10),
        involuntary_switches: Some(2),
        migrations: Some(1),
        wakeups: Some(9),
        wakeup_preemptions: Some(3),
        preemptions_at_once: Some(1),
        preemptions_at_return: Some(1),
        preemptions_lazy: Some(1),
        cpu_time_s: 0.5,
        compute_s: Some(0.4),
        remote_compute_s: Some(0.1),
        cumulative: Some(schedlab_workload::record::CumulativeComputes {
            sum_s: 0.4,
            beyond_s: 0.05,
            computes: 2000,
            past: 1500,
        }),
    };
    let series = SeriesSummary {
        tasks: "workload".into(),
        seconds: 1,
        max_length: 2,
        bin_s: 0.01,
        lengths: vec![vec![0.0, 1.5]],
        ..SeriesSummary::default()
    };
    let repetition = Repetition {
        metrics: BTreeMap::from([("time".to_string(), 1.25)]),
        counters: BTreeMap::from([("total".to_string(), counters)]),
        lost_events: 0,
        cpus: vec![CpuCounters {
            busy_s: 1.0,
            idle_s: 0.5,
            mean_runnable: 1.2,
            max_runnable: 3,
        }],
        sim_events: Some(1000),
        index: Some(0),
        locks: vec![LockStats::new("rq[0]".into(), "spin", true)],
        timeline: Some(TimelineSummary {
            source: "sim".into(),
            cpus: 2,
            series: vec![series],
            ..TimelineSummary::default()
        }),
        wakeup_latency: Some(schedlab_workload::record::Distribution {
            unit: "us".into(),
            buckets: vec![(1.0, 3), (15.0, 1)],
        }),
    };
    RunRecord {
        schema: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "schedlab".into(),
            version: "0.1.0".into(),
        },
        started_unix: 1_700_000_000,
        command: vec!["schedlab".into(), "run".into(), "yield".into()],
        machine: MachineInfo {
            hostname: "h".into(),
            cpus: 2,
            cpu_model: Some("cpu".into()),
            preempt: Some("full".into()),
            ..MachineInfo::default()
        },
        workload: "yield".into(),
        backend: BackendInfo {
            kind: "sim".into(),
            policy: Some("o1:threshold=40".into()),
            seed: Some(1),
            details: BTreeMap::from([("cost".to_string(), "modern".to_string())]),
        },
        metrics: vec![MetricDef {
            name: "time".into(),
            unit: "s".into(),
            better: Better::Lower,
            description: "elapsed".into(),
        }],
        warmup: 1,
        interrupted: false,
        level: 95.0,
        until: Some("95:2%".into()),
        configs: vec![ConfigResult {
            label: "threads=2".into(),
            params: BTreeMap::from([("threads".to_string(), "2".to_string())]),
            machine: Some("o1 on 2 CPUs, modern".into()),
            groups: vec![GroupInfo {
                name: "server".into(),
                tasks: 2,
                knobs,
                observed: BTreeMap::from([("nice".to_string(), "-5".to_string())]),
            }],
            counter_sources: CounterSources {
                switches: "sim".into(),
                migrations: "sim".into(),
                wakeups: "sim".into(),
            },
            repetitions: vec![repetition],
            summary: BTreeMap::from([(
                "time".to_string(),
                Summary {
                    n: 1,
                    mean: 1.25,
                    ..Summary::default()
                },
            )]),
            intervals: BTreeMap::from([(
                "time".to_string(),
                Interval {
                    half_width: Some(0.1),
                    harmonic_mean: None,
                    outliers: vec![0],
                },
            )]),
            converged: Some(true),
        }],
        shard: Some(ShardInfo {
            index: 1,
            count: 2,
            runs: 3,
        }),
        search: Some(SearchInfo {
            param: "connections".into(),
            metric: "conforming_share".into(),
            candidates: vec![SearchCandidate {
                value: 10,
                runs: 2,
                mean: 99.0,
                half_width: Some(1.0),
                verdict: "pass".into(),
            }],
            maximum: Some(10),
            ended: "converged".into(),
            ..SearchInfo::default()
        }),
    }
}

/// The schema's complaints about `record` (empty when it validates).
fn errors(record: &Value) -> Vec<String> {
    let schema = json_schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid schema");
    validator
        .iter_errors(record)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn a_full_record_validates_and_broken_ones_do_not() {
    let record: Value = serde_json::from_str(&full_record().to_json()).unwrap();
    assert_eq!(errors(&record), Vec::<String>::new());
    // Every optional part was present, so the schema saw each of them.
    for part in ["shard", "search"] {
        assert!(record.get(part).is_some(), "{part}");
    }
    let broken = |path: &str, value: Value| {
        let mut r = record.clone();
        *r.pointer_mut(path).unwrap_or_else(|| panic!("{path}")) = value;
        let e = errors(&r);
        assert!(
            !e.is_empty(),
            "{path} = {} was accepted",
            r.pointer(path).unwrap()
        );
        e
    };
    let e = broken("/schema", json!(2));
    assert!(e[0].starts_with("/schema: "), "{e:?}");
    broken("/metrics/0/better", json!("sideways"));
    broken("/configs/0/repetitions/0/counters/total/wakeups", json!(-1));
    broken("/configs/0/groups/0/knobs/policy", json!("fifo:100"));
    broken("/configs/0/groups/0/knobs/cpus", json!([1, 1]));
    broken("/configs/0/repetitions/0/metrics/time", json!("fast"));
    broken("/configs/0/summary/time/mean", Value::Null);
    // A required field missing.
    let mut r = record.clone();
    r.as_object_mut().unwrap().remove("configs");
    assert!(!errors(&r).is_empty());
    // An unknown key is allowed, as every reader skips it.
    let mut r = record.clone();
    r["added_later"] = json!({"x": 1});
    assert_eq!(errors(&r), Vec::<String>::new());
}
