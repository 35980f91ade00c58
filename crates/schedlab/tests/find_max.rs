//! `schedlab run web --find-max` as a user runs it (issue 17, part 4): on the simulator a
//! throttled server (prefork:4, one process per connection up to four) gives the maximum it
//! must, 4; the search's bounds end it; the real kernel finds the same boundary for prefork:2;
//! bad input is refused before anything runs.

mod common;

use common::{schedlab, temp_json};
use schedlab_workload::record::{RunRecord, SearchInfo};

/// Run `schedlab run web --find-max ARGS --json F`: its standard output and record.
fn find_max(args: &[&str], name: &str) -> (String, RunRecord) {
    let path = temp_json(name);
    let p = path.to_str().unwrap().to_string();
    let mut all = vec!["run", "web", "--find-max", "--quiet", "--json", &p];
    all.extend_from_slice(args);
    let out = schedlab().args(&all).output().expect("run schedlab");
    common::succeeded(&all, out.clone());
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        RunRecord::from_json(&text).unwrap(),
    )
}

fn search(rec: &RunRecord) -> &SearchInfo {
    rec.search.as_ref().expect("the record has its search")
}

const SIM: &[&str] = &[
    "--backend",
    "sim",
    "--policy",
    "o1",
    "--cpus",
    "2",
    "--dirs",
    "2",
    "--duration",
    "3s",
];

/// Four processes serve four paced connections each on its own and all conform; a fifth
/// connection shares a process with another, so at most 4 of 5 (80 %) conform. The search
/// from 4 doubles to 8 (fails), bisects 6 and 5 (fail): the maximum is 4.
#[test]
fn a_throttled_simulated_server_gives_the_known_maximum() {
    let mut args = SIM.to_vec();
    args.extend(["--server", "prefork:4", "--connections", "4"]);
    args.extend(["--find-max-limit", "64"]);
    let (out, rec) = find_max(&args, "sim");
    let s = search(&rec);
    assert_eq!(s.maximum, Some(4), "{out}");
    assert_eq!(s.first_failing, Some(5), "{out}");
    assert_eq!(s.ended, "converged");
    let tried: Vec<u64> = s.candidates.iter().map(|c| c.value).collect();
    assert_eq!(tried, [4, 8, 6, 5]);
    let verdicts: Vec<&str> = s.candidates.iter().map(|c| c.verdict.as_str()).collect();
    assert_eq!(verdicts, ["pass", "fail", "fail", "fail"]);
    assert!(s.candidates.iter().all(|c| c.runs >= 3));
    assert!(s.candidates[0].mean >= 95.0 && s.candidates[3].mean < 95.0);
    // Every candidate's repetitions are in the record, one configuration each.
    let labels: Vec<&str> = rec.configs.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "connections=4",
            "connections=8",
            "connections=6",
            "connections=5"
        ]
    );
    let runs: usize = rec.configs.iter().map(|c| c.repetitions.len()).sum();
    assert_eq!(runs, s.candidates.iter().map(|c| c.runs).sum::<usize>());
    assert!(
        out.contains("maximum: 4 connections (conforming_share 100.0 ± 0.0)"),
        "{out}"
    );
}

/// The bounds end the search: the limit when every candidate passes, the run budget when it
/// runs out, and a start that fails is halved down.
#[test]
fn the_limit_and_the_run_budget_end_the_search() {
    let mut args = SIM.to_vec();
    args.extend(["--server", "prefork", "--connections", "4"]);
    args.extend(["--find-max-limit", "6"]);
    let (_, rec) = find_max(&args, "limit");
    let s = search(&rec);
    assert_eq!((s.maximum, s.ended.as_str()), (Some(6), "limit"));
    let tried: Vec<u64> = s.candidates.iter().map(|c| c.value).collect();
    assert_eq!(tried, [4, 6]);

    let mut args = SIM.to_vec();
    args.extend(["--server", "prefork:4", "--connections", "4"]);
    args.extend(["--find-max-runs", "5"]);
    let (out, rec) = find_max(&args, "budget");
    let s = search(&rec);
    assert_eq!(s.candidates.len(), 1, "{out}");
    assert_eq!((s.maximum, s.ended.as_str()), (Some(4), "budget"));
    assert!(out.contains("--find-max-runs"), "{out}");

    let mut args = SIM.to_vec();
    args.extend(["--server", "prefork:4", "--connections", "16"]);
    args.extend(["--find-max-limit", "64"]);
    let (_, rec) = find_max(&args, "down");
    let s = search(&rec);
    let tried: Vec<u64> = s.candidates.iter().map(|c| c.value).collect();
    assert_eq!(tried, [16, 8, 4, 6, 5]);
    assert_eq!(s.maximum, Some(4));
}

/// The real kernel: two prefork processes serve two paced connections each on its own, and
/// a third shares a process with the first (at most 2 of 3 conform).
#[test]
fn the_real_kernel_finds_the_same_boundary() {
    let args = [
        "--server",
        "prefork:2",
        "--connections",
        "2",
        "--dirs",
        "2",
        "--duration",
        "1s",
        "--find-max-limit",
        "4",
        "--max-runs",
        "6",
    ];
    let (out, rec) = find_max(&args, "real");
    let s = search(&rec);
    assert_eq!(s.maximum, Some(2), "{out}");
    assert_eq!(s.first_failing, Some(3), "{out}");
}

fn fails(args: &[&str]) -> String {
    let out = schedlab().args(args).output().expect("run schedlab");
    assert!(!out.status.success(), "schedlab {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let e = fails(&["run", "yield", "--find-max"]);
    assert!(
        e.contains("web workload only") && e.contains("'yield'"),
        "{e}"
    );
    let e = fails(&[
        "sweep",
        "web",
        "--find-max",
        "--vary",
        "server=event,prefork",
    ]);
    assert!(e.contains("belongs to `schedlab run`"), "{e}");
    let e = fails(&["run", "web", "--find-max", "--rate", "100"]);
    assert!(e.contains("--rate 100"), "{e}");
    let e = fails(&[
        "run",
        "web",
        "--find-max",
        "--connections",
        "50",
        "--find-max-limit",
        "10",
    ]);
    assert!(
        e.contains("--find-max-limit 10") && e.contains("50 or more"),
        "{e}"
    );
    let e = fails(&["run", "web", "--find-max", "--find-max-limit", "0"]);
    assert!(e.contains("1..10000"), "{e}");
    let e = fails(&["run", "web", "--find-max", "--find-max-limit", "20000"]);
    assert!(e.contains("1..10000"), "{e}");
    let e = fails(&["run", "web", "--find-max", "--max-runs", "2"]);
    assert!(e.contains("--max-runs 2"), "{e}");
    let e = fails(&["run", "web", "--find-max", "--runs", "3"]);
    assert!(e.contains("--runs"), "{e}");
    let e = fails(&["run", "web", "--find-max-limit", "10"]);
    assert!(e.contains("--find-max"), "{e}");
    let e = fails(&["run", "web", "--find-max", "--csv", "x.csv"]);
    assert!(e.contains("--csv"), "{e}");
}
