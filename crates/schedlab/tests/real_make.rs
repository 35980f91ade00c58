//! `build --real-make` run as a user would: a small generated tree built by the real make and
//! compiler with the graph's job count and nothing left behind (also when interrupted), the
//! simulator's refusal, and bad input.

mod common;

use common::schedlab;
use schedlab_workload::record::RunRecord;
use std::path::Path;
use std::time::{Duration, Instant};

const INSTALL: &str = "apt-get install -y gcc make";

/// Whether make and cc are installed; prints `skipped:` when not.
fn have_tools() -> bool {
    let found = |p: &str| schedlab_real::program::find_in_path(p).is_some();
    if found("make") && found("cc") {
        return true;
    }
    eprintln!("skipped: make or cc is not installed; install with `{INSTALL}`");
    false
}

/// Processes whose working directory is under `dir` (make and its compilers run in the tree).
fn processes_in(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
            continue;
        };
        if cwd.starts_with(dir) {
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            found.push(format!(
                "{} {}",
                entry.file_name().to_string_lossy(),
                comm.trim()
            ));
        }
    }
    found
}

#[test]
fn a_small_tree_builds_with_the_graphs_job_count_and_leaves_nothing() {
    if !have_tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("make.json");
    let args = [
        "run",
        "build",
        "--real-make",
        "--jobs",
        "2",
        "--units",
        "20",
        "--dirs",
        "4",
        "--runs",
        "1",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ];
    let output = schedlab()
        .args(args)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    common::succeeded(&args, output);
    let rec: RunRecord = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let m = &rec.configs[0].repetitions[0].metrics;
    assert_eq!(m["jobs"], 20.0 + 4.0 + 1.0);
    assert!(m["makespan_s"] > 0.0 && m["busy_cpus"] > 0.0, "{m:?}");
    assert_eq!(
        rec.configs[0].params.get("real-make").map(String::as_str),
        Some("true")
    );
    assert!(processes_in(tmp.path()).is_empty());
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn an_interrupted_build_leaves_no_make_compiler_or_file() {
    if !have_tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut child = schedlab()
        .args([
            "run",
            "build",
            "--real-make",
            "--jobs",
            "2",
            "--units",
            "400",
            "--runs",
            "1",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until make and its compilers are running in the tree.
    let start = Instant::now();
    while processes_in(tmp.path()).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "make never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
    // make ends its jobs on SIGTERM and waits for them; give them a moment.
    let start = Instant::now();
    while !processes_in(tmp.path()).is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_in(tmp.path()), Vec::<String>::new());
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn the_simulator_refuses_real_make_before_anything_runs() {
    let out = schedlab()
        .args([
            "run",
            "build",
            "--real-make",
            "--backend",
            "sim",
            "--runs",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("real-make")
            && err.contains("needs the real kernel")
            && err.contains("--backend real"),
        "{err}"
    );
    assert!(!err.contains("run 1/"), "{err}");
}

#[test]
fn bad_input_and_missing_tools_are_refused_with_what_is_accepted() {
    let out = schedlab()
        .args(["run", "build", "--real-make", "--jobs", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--jobs 0") && err.contains("1..1024"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let out = schedlab()
        .args([
            "run",
            "build",
            "--real-make",
            "--units",
            "20",
            "--dirs",
            "4",
        ])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("make and cc") && err.contains(INSTALL),
        "{err}"
    );
}
