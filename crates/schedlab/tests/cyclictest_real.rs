//! `schedlab run cyclictest` on the running kernel, as a user runs it: two threads, a 1 ms
//! interval, 200 loops and a 1000 µs histogram, with SCHED_OTHER always and with SCHED_FIFO 90
//! where this process may use it (the supervisor of docs/safety.md bounds it). Where real-time
//! is not allowed the FIFO run prints `skipped:` naming the missing capability; that path is
//! checked by forcing it (schedlab run without CAP_SYS_NICE and with RLIMIT_RTPRIO 0).

mod common;

use common::{is_root, schedlab, serial, stderr};
use schedlab_workload::knobs::SchedPolicy;
use schedlab_workload::record::RunRecord;
use std::process::{Command, Output};

/// Cycles each thread runs.
const LOOPS: f64 = 200.0;

/// The run: cyclictest -t 2 -i 1000 -l 200 -h 1000, and `extra`.
fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "run",
        "cyclictest",
        "--backend",
        "real",
        "--threads",
        "2",
        "--interval",
        "1ms",
        "--loops",
        "200",
        "--histogram",
        "1000",
        "--runs",
        "1",
        "--counters",
        "proc",
    ];
    a.extend(extra);
    a
}

/// Why a run was refused for want of the right to use a real-time policy (the error's line
/// naming CAP_SYS_NICE), or `None` when it was not refused for that.
fn realtime_refused(out: &Output) -> Option<String> {
    if out.status.success() {
        return None;
    }
    let err = stderr(out);
    err.lines()
        .find(|l| l.contains("CAP_SYS_NICE"))
        .map(|l| l.trim().to_string())
}

/// The `skipped:` line of a FIFO run refused for `why`.
fn skip_line(why: &str) -> String {
    format!(
        "skipped: SCHED_FIFO is not permitted here ({why}); run as root, or raise RLIMIT_RTPRIO to 90 (ulimit -r 90)"
    )
}

/// Run `cmd` with `--json` into a temporary file: its output and, if it succeeded, the record;
/// an error if `cmd` could not be started.
fn run(mut cmd: Command, args: &[&str]) -> std::io::Result<(Output, Option<RunRecord>)> {
    let dir = common::temp_dir("cyclictest", "real");
    let json = dir.path().join("r.json");
    let out = cmd
        .args(args)
        .args(["--json", json.to_str().unwrap()])
        .output()?;
    let rec = out.status.success().then(|| common::read_record(&json));
    Ok((out, rec))
}

/// What a finished run must show: every thread made its 200 cycles, its latencies are positive
/// and ordered, its histogram counted every cycle, and the histogram was printed.
fn check(rec: &RunRecord, out: &Output) {
    let err = stderr(out);
    let rep = &rec.configs[0].repetitions[0];
    let m = |k: &str| {
        *rep.metrics
            .get(k)
            .unwrap_or_else(|| panic!("no {k} in {:?}", rep.metrics.keys()))
    };
    for i in 0..2 {
        let t = |s: &str| m(&format!("t{i}_{s}"));
        assert_eq!(t("cycles"), LOOPS, "thread {i} did not complete its loops");
        // A timer never fires before its expiry: the clock read after the wakeup is later.
        assert!(t("min") > 0.0, "thread {i}: min {} us", t("min"));
        assert!(
            t("min") <= t("avg") && t("avg") <= t("max"),
            "thread {i}: min {} avg {} max {}",
            t("min"),
            t("avg"),
            t("max")
        );
        let prefix = format!("t{i}_hist_");
        let counted: f64 = (rep.metrics.iter())
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(
            counted + t("overflows"),
            LOOPS,
            "thread {i}: histogram {counted} + overflows {}",
            t("overflows")
        );
    }
    assert_eq!(m("cycles"), 2.0 * LOOPS);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &err;
    for line in [
        "# Histogram\n000000 ",
        "\n000999 ",
        "# Total: ",
        "# Min Latencies: ",
        "# Max Latencies: ",
        "# Histogram Overflows: ",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
}

#[test]
fn sched_other_threads_complete_their_loops() {
    let _one = serial();
    let args = args(&[]);
    let (out, rec) = run(schedlab(), &args).expect("run schedlab");
    let rec = rec.unwrap_or_else(|| panic!("{args:?} failed: {}", stderr(&out)));
    check(&rec, &out);
}

#[test]
fn sched_fifo_threads_complete_their_loops_where_permitted() {
    let _one = serial();
    let args = args(&["--priority", "90"]);
    let (out, rec) = run(schedlab(), &args).expect("run schedlab");
    if let Some(why) = realtime_refused(&out) {
        eprintln!("{}", skip_line(&why));
        return;
    }
    let rec = rec.unwrap_or_else(|| panic!("{args:?} failed: {}", stderr(&out)));
    check(&rec, &out);
    let cyclic = rec.configs[0].groups.iter().find(|g| g.name == "cyclic");
    assert_eq!(
        cyclic.and_then(|g| g.knobs.policy),
        Some(SchedPolicy::Fifo(90)),
        "{:?}",
        rec.configs[0].groups
    );
}

/// Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 (util-linux's prlimit and setpriv), the FIFO
/// run is refused before it starts and the test above takes its `skipped:` path.
#[test]
fn without_the_right_to_real_time_the_fifo_run_is_skipped() {
    if !is_root() {
        eprintln!("skipped: dropping CAP_SYS_NICE from the bounding set needs root");
        return;
    }
    let mut cmd = Command::new("prlimit");
    cmd.args(["--rtprio=0:0", "setpriv", "--bounding-set", "-sys_nice"])
        .arg(env!("CARGO_BIN_EXE_schedlab"));
    let (out, rec) = match run(cmd, &args(&["--priority", "90"])) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skipped: prlimit not found ({e}; install: apt-get install util-linux)");
            return;
        }
    };
    if stderr(&out).contains("setpriv:") || stderr(&out).contains("prlimit:") {
        eprintln!(
            "skipped: setpriv could not drop the capability here: {}",
            stderr(&out)
        );
        return;
    }
    assert!(rec.is_none(), "the FIFO run ran without CAP_SYS_NICE");
    let why = realtime_refused(&out).unwrap_or_else(|| panic!("{}", stderr(&out)));
    assert!(why.contains("fifo:90"), "{why}");
    let line = skip_line(&why);
    assert!(
        line.starts_with("skipped: SCHED_FIFO is not permitted here (")
            && line.contains("CAP_SYS_NICE"),
        "{line}"
    );
}
