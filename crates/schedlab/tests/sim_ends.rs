//! Every simulated run ends (issue 38, item 2): workload files whose loops take no simulated
//! time, which the dry run cannot prove empty, end with a message naming the task — by
//! themselves, at `--timeout`, or on SIGINT — and a long compute runs to its end.

mod common;

use common::{catches_sigint, schedlab, stderr};
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// A workload file of one group `a` whose steps are `steps`, in a directory of its own.
fn file(name: &str, steps: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-h38-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("[groups.a]\nsteps = [ {steps} ]\n")).unwrap();
    path
}

/// Run `schedlab run FILE ARGS...` on the simulator; its output and how long it took.
fn run(path: &PathBuf, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = schedlab()
        .arg("run")
        .arg(path)
        .args(["--backend", "sim", "--runs", "1"])
        .args(args)
        .output()
        .unwrap();
    (out, started.elapsed())
}

/// A timed loop whose compute is of nothing for task 0 only (`index * 1ms`): the dry run
/// cannot prove it, so the loop's clock standing still ends the run, naming the task.
#[test]
fn a_timed_loop_of_nothing_fails_naming_the_task() {
    let path = file(
        "frozen",
        r#"{ loop = "10ms", steps = [ { compute = "index * 1ms" } ] }"#,
    );
    let (out, took) = run(&path, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "a#0's timed loop of 10.000ms made 4194304 passes in a row without the clock moving"
        ),
        "{err}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

/// A counted loop of 10^15 passes of counts takes no simulated time and would run for days:
/// `--timeout` ends it, naming the task that held the machine.
#[test]
fn a_loop_without_calls_ends_at_the_timeout() {
    let path = file(
        "counts",
        r#"{ loop = "1000000000000000", steps = [ { count = "n" } ] }"#,
    );
    let (out, took) = run(&path, &["--timeout", "2s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("wall-clock budget of 2.000s"), "{err}");
    assert!(
        err.contains("task 0 (group a) ran on at") && err.contains("without the clock moving"),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// The same with computes of nothing: the body hands the machine calls that take no time.
#[test]
fn a_loop_of_computes_of_nothing_ends_at_the_timeout() {
    let path = file(
        "computes",
        r#"{ loop = "1000000000000000", steps = [ { compute = "index * 1ms" } ] }"#,
    );
    let (out, took) = run(&path, &["--timeout", "2s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("wall-clock budget of 2.000s"), "{err}");
    assert!(err.contains("task 0 (group a)"), "{err}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// SIGINT ends a run stuck in a loop without calls: exit 130, at once.
#[test]
fn a_loop_without_calls_ends_on_sigint() {
    let path = file(
        "sigint",
        r#"{ loop = "1000000000000000", steps = [ { count = "n" } ] }"#,
    );
    let child = schedlab()
        .arg("run")
        .arg(&path)
        .args(["--backend", "sim", "--runs", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = Instant::now();
    while !catches_sigint(pid) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no SIGINT handler"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Well into the loop (the dry run and the start take about a second).
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let signalled = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "ended {:?} after SIGINT",
        signalled.elapsed()
    );
}

/// A compute of 5000 s on one CPU runs to its end (the queue held a stale burst end per tick
/// and ran out of its budget, blaming the tick).
#[test]
fn a_long_compute_runs_to_its_end() {
    let path = file("long", r#"{ compute = "5000s" }"#);
    let (out, _) = run(&path, &["--cpus", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
