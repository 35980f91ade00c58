//! `--timeline FILE.svg` as a user runs it: the chart, the exact events beside it, the figures in
//! the summary and the record, on the simulator and (as root) on the real kernel; and bad paths
//! refused before anything runs.

mod common;

use common::{schedlab, succeeds};
use schedlab_workload::record::RunRecord;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A fresh directory for one test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-tl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn record(path: &std::path::Path) -> RunRecord {
    RunRecord::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_simulated_run_draws_its_timeline_and_keeps_the_figures() {
    let d = dir("sim");
    let svg = d.join("rq.svg");
    let json = d.join("rq.json");
    let args = [
        "run",
        "messaging",
        "--groups",
        "2",
        "--loops",
        "20",
        "--backend",
        "sim",
        "--policy",
        "o1",
        "--cpus",
        "4",
        "--runs",
        "2",
        "--quiet",
        "--timeline",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let out = succeeds(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("RUN-QUEUE TIMELINE"), "{stdout}");
    assert!(
        stdout.contains("idle while a task waited (invariant 1)"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("divergence from the mean"));
    // Exact events for each repetition beside the chart.
    for rep in 0..2 {
        let events = d.join(format!("rq.events/C0-R{rep}.txt"));
        let e = std::fs::read_to_string(&events).unwrap();
        assert!(
            e.starts_with("# schedlab run-queue timeline: 4 CPUs"),
            "{e}"
        );
    }
    let rec = record(&json);
    for r in &rec.configs[0].repetitions {
        let tl = r
            .timeline
            .as_ref()
            .expect("every repetition has its timeline");
        assert_eq!(tl.cpus, 4);
        assert_eq!(tl.source, "simulator (exact)");
        let w = tl.series("workload").unwrap();
        assert_eq!(w.lengths.len(), 4);
        assert!(w.max_length >= 1 && w.mean_abs_divergence >= 0.0);
    }
    // The same command gives the same figures (the simulator is exact).
    let json2 = d.join("again.json");
    let mut again = args.to_vec();
    let j2 = json2.to_str().unwrap().to_string();
    *again.last_mut().unwrap() = &j2;
    succeeds(&again);
    assert_eq!(
        rec.configs[0].repetitions[0].timeline,
        record(&json2).configs[0].repetitions[0].timeline
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_sweep_draws_one_row_per_configuration() {
    let d = dir("sweep");
    let svg = d.join("sweep.svg");
    succeeds(&[
        "sweep",
        "messaging",
        "--groups",
        "1",
        "--loops",
        "10",
        "--backend",
        "sim",
        "--cpus",
        "2",
        "--vary",
        "policy=o1,cfs",
        "--runs",
        "1",
        "--quiet",
        "--timeline",
        svg.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    for label in ["policy=o1", "policy=cfs"] {
        assert!(text.contains(label), "no row for {label}");
    }
    assert!(d.join("sweep.events/C1-R0.txt").is_file());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_timeline_paths_are_refused_before_anything_runs() {
    let d = dir("bad");
    let cases = [
        (d.join("rq.png"), "accepted: a file name ending in .svg"),
        (
            d.join("no/such/dir/rq.svg"),
            "not a file in an existing directory",
        ),
        (d.clone(), "is a directory"),
    ];
    for (path, needle) in cases {
        let start = Instant::now();
        let out = schedlab()
            .args(["run", "yield", "--backend", "sim", "--timeline"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{path:?} should fail");
        assert!(
            err.contains("--timeline") && err.contains(needle),
            "{path:?}: {err}"
        );
        assert!(start.elapsed() < Duration::from_secs(5));
    }
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        0,
        "nothing was written"
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_real_run_traces_every_task_when_root() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: the real timeline needs tracefs (root); run `sudo -E cargo test -p schedlab --test timeline`");
        return;
    }
    let d = dir("real");
    let svg = d.join("rq.svg");
    let json = d.join("rq.json");
    succeeds(&[
        "run",
        "messaging",
        "--groups",
        "1",
        "--loops",
        "50",
        "--runs",
        "1",
        "--quiet",
        "--timeline",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let rec = record(&json);
    let tl = rec.configs[0].repetitions[0].timeline.as_ref().unwrap();
    assert!(tl.source.starts_with("tracefs instance"), "{}", tl.source);
    // The workload's 40 tasks, and all tasks (at least as many at every moment).
    let (w, all) = (tl.series("workload").unwrap(), tl.series("all").unwrap());
    assert!(w.max_length >= 1 && all.max_length >= w.max_length);
    assert!(tl.events > 40, "{} events", tl.events);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("all tasks"));
    std::fs::remove_dir_all(&d).ok();
}
