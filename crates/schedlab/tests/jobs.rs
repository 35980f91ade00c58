//! `--jobs N`: simulated repetitions run on N threads give the same bytes as `--jobs 1` — the
//! record, `--out`'s records, CSV, Markdown, the plot and the table — for a sweep of every
//! workload, `run` with `--until`, and a sweep interrupted with SIGINT and resumed. Each runs
//! the built binary; both runs of a pair use the same relative paths in directories of their
//! own, so that even the command line in the record is the same (the record leaves `--jobs`
//! out of it). Only `started_unix`, when each process started, may differ.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// A fresh directory for one test, removed when dropped.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("schedlab-jobs-test-{name}-"))
        .tempdir()
        .unwrap()
}

/// Run `schedlab args` in `dir`; it must succeed. Its standard output.
fn run_ok(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = schedlab()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run schedlab");
    common::succeeded_in(dir, args, out).stdout
}

/// Every file under `dir` (relative path, bytes), sorted, with `started_unix` set to 0.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let text = std::fs::read(&p).unwrap();
            let text: Vec<u8> = String::from_utf8_lossy(&text)
                .lines()
                .map(|l| match l.split_once("\"started_unix\": ") {
                    Some((indent, _)) => format!("{indent}\"started_unix\": 0,"),
                    None => l.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            out.push((rel, text));
        }
    }
    out.sort();
    out
}

/// Run `args` (with `jobs` appended) in a fresh directory each for `--jobs 1` and `--jobs 2`,
/// and assert that standard output and every file written are the same bytes; the files.
fn same_with_one_and_two_jobs(name: &str, args: &[&str], jobs: &str) -> Vec<(String, Vec<u8>)> {
    let mut seen = Vec::new();
    for n in ["1", "2"] {
        let tmp = temp_dir(name);
        let mut a = args.to_vec();
        a.extend([jobs, n]);
        let stdout = run_ok(tmp.path(), &a);
        seen.push((stdout, files(tmp.path())));
    }
    let (one, two) = (&seen[0], &seen[1]);
    assert!(!one.0.is_empty(), "{name}: nothing printed");
    assert_eq!(
        String::from_utf8_lossy(&one.0),
        String::from_utf8_lossy(&two.0),
        "{name}: standard output"
    );
    let names: Vec<&String> = one.1.iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        two.1.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "{name}"
    );
    for ((n, a), (_, b)) in one.1.iter().zip(&two.1) {
        assert!(
            a == b,
            "{name}: {n} differs:\n--jobs 1:\n{}\n--jobs 2:\n{}",
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b)
        );
    }
    one.1.clone()
}

#[test]
fn every_workload_s_sweep_is_the_same_bytes_with_two_jobs() {
    let outputs = [
        "--runs",
        "2",
        "--json",
        "r.json",
        "--csv",
        "r.csv",
        "--markdown",
        "r.md",
        "--out",
        "out",
        "-q",
    ];
    let sweeps: [(&str, &[&str]); 8] = [
        ("messaging", &["--loops", "20", "--vary", "groups=1,2"]),
        (
            "chat",
            &[
                "--rooms",
                "1",
                "--users",
                "3",
                "--messages",
                "20",
                "--vary",
                "rooms=1,2",
                "--warmup",
                "1",
            ],
        ),
        (
            "pingpong",
            &[
                "--loops",
                "100",
                "--vary",
                "loops=100,200",
                "--plot",
                "p.svg",
            ],
        ),
        (
            "interbench",
            &["--duration", "100ms", "--vary", "loads=none,burn"],
        ),
        (
            "yield",
            &[
                "--duration",
                "5ms",
                "--vary",
                "threads=1,2",
                "--plot",
                "p.svg",
            ],
        ),
        (
            "web",
            &[
                "--connections",
                "2",
                "--duration",
                "100ms",
                "--vary",
                "connections=1,2",
            ],
        ),
        ("lookup", &["--vary", "threads=1,2"]),
        (
            "build",
            &["--units", "24", "--dirs", "4", "--vary", "units=24,40"],
        ),
    ];
    for (workload, extra) in sweeps {
        let mut args = vec![
            "sweep",
            workload,
            "--backend",
            "sim",
            "--vary",
            "policy=o1,eevdf",
        ];
        args.extend(extra);
        args.extend(outputs);
        // build's own --jobs is make's -j; the option is --sim-jobs there.
        let jobs = if workload == "build" {
            "--sim-jobs"
        } else {
            "--jobs"
        };
        let written = same_with_one_and_two_jobs(workload, &args, jobs);
        let record = &written.iter().find(|(n, _)| n == "r.json").unwrap().1;
        let record = String::from_utf8_lossy(record);
        assert!(!record.contains(jobs), "{workload}: {jobs} in the record");
        // 2 policies × 2 values (× interbench's benchmarks), 2 runs each: every repetition is
        // in the record.
        let v: serde_json::Value = serde_json::from_str(&record).unwrap();
        let configs = v["configs"].as_array().unwrap();
        assert_eq!(configs.len() % 4, 0, "{workload}");
        for c in configs {
            assert_eq!(c["repetitions"].as_array().unwrap().len(), 2, "{workload}");
        }
    }
}

#[test]
fn run_with_until_and_runs_is_the_same_with_two_jobs() {
    // --until decides as results come in: workers run ahead, and what a converged
    // configuration did not need is dropped.
    let until = [
        "run",
        "yield",
        "--backend",
        "sim",
        "--threads",
        "4",
        "--duration",
        "5ms",
        "--until",
        "95:1%",
        "--max-runs",
        "12",
        "--json",
        "r.json",
    ];
    let files = same_with_one_and_two_jobs("until", &until, "--jobs");
    let v: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(&files[0].1)).unwrap();
    let runs = v["configs"][0]["repetitions"].as_array().unwrap().len();
    assert!((3..=12).contains(&runs), "{runs} runs");
    let runs = [
        "run",
        "chat",
        "--backend",
        "sim",
        "--rooms",
        "1",
        "--users",
        "3",
        "--messages",
        "20",
        "--runs",
        "5",
        "--warmup",
        "2",
        "--json",
        "r.json",
    ];
    same_with_one_and_two_jobs("runs", &runs, "-j");
}

/// Whether process `pid` catches SIGINT yet (its handler is installed).
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGINT - 1)) != 0)
}

/// The repetitions of each configuration in a record.
fn repetitions(record: &serde_json::Value) -> Vec<Vec<serde_json::Value>> {
    record["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["repetitions"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn an_interrupted_sweep_keeps_what_finished_and_resumes_to_the_same_bytes() {
    // 4 configurations × 4 runs of about 50 ms each.
    let args = [
        "sweep",
        "chat",
        "--backend",
        "sim",
        "--rooms",
        "2",
        "--users",
        "8",
        "--messages",
        "1000",
        "--vary",
        "policy=o1,cfs",
        "--vary",
        "cpus=1,2",
        "--runs",
        "4",
        "--out",
        "out",
        "-q",
    ];
    let whole = temp_dir("whole");
    let mut serial = args.to_vec();
    serial.extend(["--jobs", "1"]);
    run_ok(whole.path(), &serial);
    let expected = files(&whole.path().join("out"));
    let full: serde_json::Value =
        serde_json::from_slice(&std::fs::read(whole.path().join("out/sweep.json")).unwrap())
            .unwrap();

    let tmp = temp_dir("resume");
    let mut parallel = args.to_vec();
    parallel.extend(["--jobs", "2"]);
    let child = schedlab()
        .args(&parallel)
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = Instant::now();
    // Interrupt once a repetition is saved (the handler is installed before anything runs).
    let sweep_json = tmp.path().join("out/sweep.json");
    while !(catches_sigint(pid) && sweep_json.exists()) {
        assert!(started.elapsed() < Duration::from_secs(30), "never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("the repetitions that finished are kept"),
        "{err}"
    );
    // What was kept is, for every configuration, the first repetitions of the whole sweep.
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&sweep_json).unwrap()).unwrap();
    assert_eq!(kept["interrupted"], true);
    let (kept, full) = (repetitions(&kept), repetitions(&full));
    let held: usize = kept.iter().map(Vec::len).sum();
    assert!((1..16).contains(&held), "{held} of 16 repetitions kept");
    for (k, f) in kept.iter().zip(&full) {
        assert_eq!(k[..], f[..k.len()]);
    }
    // Resumed with two workers, it is the uninterrupted serial sweep.
    let said = run_ok(tmp.path(), &parallel);
    let table = run_ok(whole.path(), &serial); // resumes nothing: all is there
    assert_eq!(
        String::from_utf8_lossy(&said),
        String::from_utf8_lossy(&table)
    );
    let resumed = files(&tmp.path().join("out"));
    assert_eq!(resumed.len(), expected.len());
    for ((n, a), (m, b)) in resumed.iter().zip(&expected) {
        assert_eq!(n, m);
        assert!(
            a == b,
            "{n} differs after resuming:\n{}\nuninterrupted:\n{}",
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b)
        );
    }
}

#[test]
fn the_real_kernel_takes_one_job_and_refuses_more() {
    let tmp = temp_dir("real");
    // One job is what a real run does anyway: accepted.
    let plan = run_ok(tmp.path(), &["check", "chat", "--jobs", "1"]);
    assert!(String::from_utf8_lossy(&plan).contains("checked; nothing was run"));
    let out = schedlab()
        .args([
            "sweep",
            "chat",
            "--vary",
            "rooms=1,2",
            "--jobs",
            "2",
            "--out",
            "o",
        ])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--jobs 2: real-kernel repetitions run one at a time")
            && err.contains("--backend sim"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists(), "refused after starting");
}
