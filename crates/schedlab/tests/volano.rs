//! `volano` through the built binary: the real kernel runs VolanoMark's four threads per user
//! and reports what it measured; the simulator prints seed 000's table with the batching columns.

mod common;

use common::{schedlab, succeeded};
use schedlab_workload::record::RunRecord;

/// Run `args` with `--json` into a temporary file and read the record back.
fn run_record(args: &[&str], name: &str) -> RunRecord {
    let dir = common::temp_dir("volano", name);
    let path = dir.path().join("r.json");
    let out = schedlab()
        .args(args)
        .arg("--json")
        .arg(&path)
        .arg("--quiet")
        .output()
        .expect("run schedlab");
    succeeded(args, out);
    let text = std::fs::read_to_string(&path).unwrap();
    RunRecord::from_json(&text).unwrap_or_else(|e| panic!("record: {e}\n{text}"))
}

/// A real run of 2 rooms of 3 users sending 5 messages each, once, with `extra` options.
fn small_run<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "volano",
        "--rooms",
        "2",
        "--users",
        "3",
        "--messages",
        "5",
        "--runs",
        "1",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn the_real_kernel_runs_four_threads_per_user_and_checks_every_packet() {
    let (rooms, users, messages) = (2usize, 3usize, 5usize);
    for (transport, tasks) in [("tcp", "group-processes"), ("unix", "threads")] {
        let rec = run_record(
            &small_run(&["--transport", transport, "--tasks", tasks]),
            &format!("real-{transport}"),
        );
        let c = &rec.configs[0];
        // metrics() failed the run unless every packet arrived whole and in order.
        let m = &c.repetitions[0].metrics;
        assert_eq!(m["messages"], (rooms * users * messages * users) as f64);
        assert!(m["msgs_per_s"] > 0.0 && m["ss_packets_per_read"] >= 1.0);
        assert_eq!(c.groups[0].tasks, 2 * rooms * users, "S_R and S_S per user");
        assert_eq!(c.groups[1].tasks, 2 * rooms * users, "C_R and C_S per user");
        let total = &c.repetitions[0].counters["total"];
        assert!(total.cpu_time_s > 0.0, "{total:?}");
    }
}

/// The seed's scale (10 rooms of 20 users: 800 threads, four per user) on the real kernel, a few
/// messages each: every packet arrives and the run reports the counters seed 000's table reads —
/// wakeups and the share that preempted, where the kernel lets BPF count them.
#[test]
fn the_real_kernel_runs_the_seeds_800_threads_and_reports_its_counters() {
    let (rooms, users, messages) = (10usize, 20usize, 3usize);
    let rec = run_record(
        &[
            "run",
            "volano",
            "--rooms",
            "10",
            "--users",
            "20",
            "--messages",
            "3",
            "--runs",
            "1",
        ],
        "real-800",
    );
    let c = &rec.configs[0];
    let r = &c.repetitions[0];
    assert_eq!(
        r.metrics["messages"],
        (rooms * users * messages * users) as f64
    );
    let tasks: usize = c.groups.iter().map(|g| g.tasks).sum();
    assert_eq!(tasks, 4 * rooms * users, "four threads per user");
    let total = &r.counters["total"];
    assert!(
        total.voluntary_switches.unwrap_or(0) > 0 && total.cpu_time_s > 0.0,
        "{total:?}"
    );
    match total.wakeups {
        Some(w) => {
            // Each of the 600 messages sent wakes at least one sleeping thread on its way (a
            // run of 4,000 messages here counted 13 wakeups a message).
            assert!(w >= (rooms * users * messages) as u64, "{total:?}");
            assert!(total.wakeup_preemptions.is_some(), "{total:?}");
        }
        None => println!("skipped: wakeup counts (BPF in the kernel not available here: run as root on a kernel with BTF)"),
    }
}

#[test]
fn the_real_kernel_runs_the_queue_monitors_once_per_append_and_per_take() {
    let (rooms, users, messages) = (2usize, 3usize, 5usize);
    let n = rooms * users;
    let rec = run_record(
        &small_run(&["--monitors", "on", "--tasks", "threads"]),
        "real-monitors",
    );
    let r = &rec.configs[0].repetitions[0];
    assert_eq!(r.metrics["messages"], (n * messages * users) as f64);
    // One monitor per send queue; each append takes it once (the server's: the others'
    // messages and the confirms, users × messages per queue; the client's: its own messages),
    // and each take once more: at least one take per queue, at most one per packet.
    let monitors: Vec<_> = r
        .locks
        .iter()
        .filter(|l| l.name.ends_with(" queue"))
        .collect();
    assert_eq!(monitors.len(), 2 * n, "{:?}", r.locks);
    let puts = (n * users * messages + n * messages) as u64;
    let taken: u64 = monitors.iter().map(|l| l.acquisitions).sum();
    assert!(
        (puts + 2 * n as u64..=2 * puts).contains(&taken),
        "{taken} acquisitions for {puts} appends"
    );
}

#[test]
fn the_simulator_prints_seed_000s_table_with_the_batching_columns() {
    let args = [
        "run",
        "volano",
        "--backend",
        "sim",
        "--cpus",
        "1",
        "--profile",
        "piii-700",
        "--seed",
        "1",
        "--rooms",
        "1",
        "--users",
        "4",
        "--messages",
        "10",
        "--policy",
        "o1:threshold=0,yield=2.5.25",
        "--runs",
        "1",
    ];
    let out = succeeded(&args, schedlab().args(args).output().unwrap());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for column in [
        "calls to wake_up",
        "% priority preemptions",
        "S_S pkt/read",
        "C_R pkt/read",
        "o1:threshold=0,yield=2.5.25",
    ] {
        assert!(stdout.contains(column), "no '{column}' in:\n{stdout}");
    }
}
