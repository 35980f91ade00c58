//! `schedlab run schbench` as a user runs it: the wakeup latency of an unloaded simulated
//! machine against the cost model's wakeup path (a known answer), bad input refused before
//! anything runs, and a short run on the real kernel.

mod common;

use common::{schedlab, stderr, succeeded};
use schedlab_workload::record::RunRecord;

/// Run `args` with `--json` into a temporary file; the record.
fn record(args: &[&str]) -> (RunRecord, String) {
    let dir = common::temp_dir("schbench", "run");
    let json = dir.path().join("r.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let out = succeeded(&all, schedlab().args(&all).output().unwrap());
    let text = std::fs::read_to_string(&json).unwrap();
    (RunRecord::from_json(&text).unwrap(), stderr(&out))
}

/// The first configuration's mean of `metric`.
fn mean(r: &RunRecord, metric: &str) -> f64 {
    let reps = &r.configs[0].repetitions;
    assert!(!reps.is_empty());
    reps.iter().map(|x| x.metrics[metric]).sum::<f64>() / reps.len() as f64
}

/// One worker and its message thread on an otherwise idle simulated machine, without jitter:
/// every wakeup takes the same path from the message thread's clock reading to the worker
/// reading the clock — the stamp's store into shared memory (free), the semaphore post
/// (`syscall`) that wakes the worker: its runqueue lock (`rq_lock`), the IPI to its idle CPU
/// (`ipi`), the CPU's idle exit (`idle_exit`) and the switch to the worker (`switch`):
/// 0.15 + 0.05 + 1.5 + 1.0 + 1.2 = 3.9 µs in the default profile, the original's path (no
/// pipe write or read on it) — and it moves by exactly what one of them is made to cost more.
/// (`wakeup`, the waker's own cost of the wakeup, comes after the post: not on the path.)
#[test]
fn an_unloaded_simulated_machine_wakes_in_the_modelled_cost() {
    let run = |extra: &str| {
        let cost = format!("jitter=0{extra}");
        let args = [
            "run",
            "schbench",
            "--backend",
            "sim",
            "--policy",
            "eevdf",
            "--cpus",
            "4",
            "--threads",
            "1",
            "--runtime",
            "1s",
            "--no-locking",
            "--runs",
            "1",
            "-q",
            "--cost",
            &cost,
        ];
        let (r, _) = record(&args);
        (
            mean(&r, "wakeup_p99.9"),
            mean(&r, "wakeup_min"),
            mean(&r, "wakeup_samples"),
        )
    };
    let (top, min, n) = run("");
    // 1 s of 100 µs sleeps and 4.04 ms of work: about 240 requests, each woken once.
    assert!((200.0..300.0).contains(&n), "{n} wakeups");
    // HdrHistogram keeps 3 significant digits: 3900 ns is in the bucket 3900..3903.
    assert!(
        (min - 3.9).abs() < 0.005,
        "wakeup {min} us, modelled 3.9 us"
    );
    assert!(
        (top - min).abs() < 0.005,
        "an unloaded machine wakes every worker alike"
    );
    for dearer in [
        ",ipi=2500ns",
        ",idle_exit=2000ns",
        ",switch=2200ns",
        ",rq_lock=1050ns",
    ] {
        let (_, slower, _) = run(dearer);
        assert!(
            (slower - 4.9).abs() < 0.005,
            "{dearer}: wakeup {slower} us, modelled 4.9 us"
        );
    }
    let (_, same, _) = run(",wakeup=1400ns");
    assert!(
        (same - 3.9).abs() < 0.005,
        "the waker's own cost moved it: {same}"
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    for (args, says) in [
        (
            &["--threads", "0"][..],
            "threads 0 is not accepted; use 1..131072",
        ),
        (
            &["--worker-cpus", "2-5"],
            "names CPU 4, which the machine does not have",
        ),
        (&["--rps", "5000"], "more than the machine's 4"),
        (&["--message-cpus", "x"], "message-cpus"),
    ] {
        let mut all = vec!["run", "schbench", "--backend", "sim", "--cpus", "4"];
        all.extend(args);
        let out = schedlab().args(&all).output().unwrap();
        assert!(!out.status.success(), "{all:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains(says), "{all:?}: {err}");
    }
}

/// A second on the real kernel: wakeups measured, requests served at about what a worker
/// can do, and the original's table on stderr.
#[test]
fn a_short_real_run_measures_wakeups_and_requests() {
    let args = [
        "run",
        "schbench",
        "--backend",
        "real",
        "--threads",
        "2",
        "--runtime",
        "1",
        "--op-time",
        "100us",
        "--runs",
        "1",
        "--counters",
        "proc",
    ];
    let (r, err) = record(&args);
    assert!(mean(&r, "wakeup_samples") > 10.0, "{err}");
    assert!(mean(&r, "wakeup_p50") > 0.0);
    // Each request sleeps 100 µs and works 500 µs: two workers serve at most ~3,300 a second.
    let rps = mean(&r, "rps");
    assert!((50.0..4000.0).contains(&rps), "rps {rps}");
    assert!(mean(&r, "request_p50") >= 600.0, "{err}");
    assert!(
        err.contains("Wakeup Latencies percentiles (usec) runtime 1 (s)"),
        "{err}"
    );
    assert!(err.contains("\t* 99.0th: "), "{err}");
    assert!(err.contains("average rps: "), "{err}");
}

/// `-R`'s queue bound on the simulator: one worker posted 200 requests at the start of every
/// second takes them one by one, 1.1 ms each, so the burst passes 128 pending and the rest of
/// it is dropped, counted and printed; two workers, 100 each, drop none.
#[test]
fn requests_past_the_queue_bound_are_dropped_and_counted() {
    let run = |threads: &str| {
        let args = [
            "run",
            "schbench",
            "--backend",
            "sim",
            "--cpus",
            "4",
            "--threads",
            threads,
            "--rps",
            "200",
            "--op-time",
            "200us",
            "--runtime",
            "3s",
            "--runs",
            "1",
        ];
        record(&args)
    };
    let (r, err) = run("1");
    let dropped = mean(&r, "dropped");
    let served = mean(&r, "rps") * 3.0;
    // 200 a second, of which 129 fit before the worker takes its first: about 70 dropped.
    assert!(
        (100.0..300.0).contains(&dropped),
        "dropped {dropped}\n{err}"
    );
    // What was posted and not dropped was served, but for what the run's end cut off.
    let posted = 600.0 - dropped;
    assert!(
        served <= posted && served >= posted - 130.0,
        "served {served} of {posted} posted\n{err}"
    );
    assert!(
        err.contains(&format!(
            "dropped requests: {dropped:.0} (posted to a worker with more than 128 pending)"
        )),
        "{err}"
    );
    assert!(err.contains(" samples)\n"), "per-band counts: {err}");
    let (r, _) = run("2");
    assert_eq!(mean(&r, "dropped"), 0.0);
}

/// `-A` on the simulator: the rate is steered until the CPUs are that busy, and a higher
/// target ends at a higher rate.
#[test]
fn auto_rps_reaches_its_cpu_target() {
    let run = |target: &str| {
        let args = [
            "run",
            "schbench",
            "--backend",
            "sim",
            "--cpus",
            "4",
            "--threads",
            "8",
            "-A",
            target,
            "--op-time",
            "100us",
            "--runtime",
            "20s",
            "--runs",
            "1",
        ];
        let (r, err) = record(&args);
        let busy = mean(&r, "cpu_busy");
        let t: f64 = target.parse().unwrap();
        // The controller takes steps of an eighth within 20 % of the target, and calls it hit
        // within 5 %: the seconds after that stay within 5 points of it.
        assert!((busy - t).abs() <= 5.0, "target {t}%: busy {busy}%\n{err}");
        assert!(err.contains("final rps goal was "), "{err}");
        (mean(&r, "rps_p50"), mean(&r, "rps_goal"))
    };
    let (low, low_goal) = run("30");
    let (high, high_goal) = run("60");
    assert!(high > low * 1.5, "rps {low} at 30 %, {high} at 60 %");
    assert!(
        high_goal > low_goal,
        "goal {low_goal} at 30 %, {high_goal} at 60 %"
    );
}
