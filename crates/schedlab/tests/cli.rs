//! Run the built binary the way a user would, with small parameters.

mod common;

use common::{is_root, metric, read_record, run_json, schedlab, serial, succeeds, temp_json};
use schedlab_workload::record::RunRecord;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// The counters of one group (or `total`) in one repetition.
fn counters<'a>(
    rec: &'a RunRecord,
    config: usize,
    rep: usize,
    group: &str,
) -> &'a schedlab_workload::record::Counters {
    let reps = &rec.configs[config].repetitions[rep];
    reps.counters
        .get(group)
        .unwrap_or_else(|| panic!("no counters for {group}: {:?}", reps.counters))
}

/// A setting the kernel reported for a group's first task (`observed` in the record).
fn observed<'a>(rec: &'a RunRecord, group: usize, key: &str) -> Option<&'a str> {
    rec.configs[0].groups[group]
        .observed
        .get(key)
        .map(String::as_str)
}

#[test]
fn messaging_delivers_exactly_every_message_in_all_modes() {
    let _serial = serial();
    for (transport, tasks) in [
        ("socketpair", "processes"),
        ("pipe", "threads"),
        ("socketpair", "threads"),
        ("pipe", "processes"),
    ] {
        let rec = run_json(
            &[
                "run",
                "messaging",
                "--groups",
                "2",
                "--fds",
                "3",
                "--loops",
                "7",
                "--runs",
                "2",
                "--transport",
                transport,
                "--tasks",
                tasks,
            ],
            &format!("msg-{transport}-{tasks}"),
        );
        assert_eq!(rec.schema, 1);
        assert_eq!(rec.configs[0].repetitions.len(), 2);
        for rep in 0..2 {
            assert_eq!(
                metric(&rec, 0, rep, "messages"),
                (2 * 3 * 3 * 7) as f64,
                "{transport} {tasks}"
            );
            assert!(metric(&rec, 0, rep, "time") > 0.0);
        }
        let total = counters(&rec, 0, 0, "total");
        assert!(
            total.voluntary_switches.is_some() && total.cpu_time_s > 0.0,
            "{total:?}"
        );
    }
}

#[test]
fn messaging_prints_hackbench_time_lines() {
    let _serial = serial();
    let out = succeeds(&[
        "run",
        "messaging",
        "--groups",
        "1",
        "--loops",
        "5",
        "--runs",
        "2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let times = err.lines().filter(|l| l.contains("Time: ")).count();
    assert_eq!(times, 2, "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("msgs_per_s") && stdout.contains("median"),
        "{stdout}"
    );
}

#[test]
fn pingpong_counts_round_trips_on_every_transport() {
    let _serial = serial();
    for transport in ["pipe", "socketpair", "unix", "tcp", "udp"] {
        let rec = run_json(
            &[
                "run",
                "pingpong",
                "--loops",
                "500",
                "--runs",
                "1",
                "--transport",
                transport,
            ],
            &format!("pp-{transport}"),
        );
        assert_eq!(metric(&rec, 0, 0, "round_trips"), 500.0, "{transport}");
        let p50 = metric(&rec, 0, 0, "rtt_p50");
        let max = metric(&rec, 0, 0, "rtt_max");
        assert!(p50 > 0.0 && p50 <= max, "{transport}: p50 {p50} max {max}");
    }
}

/// Wakeup counters (tracefs) against what must hold: with ping and pong on different CPUs each
/// side sleeps in every round trip (≥ 2N wakeups), and every voluntary switch of a task is
/// followed by exactly one wakeup of it (both include the wait at the start gate).
///
/// Conditional: it needs tracefs, which root always has (as root, unavailable counters fail the
/// test); elsewhere it prints `skipped:` when the counters are unavailable.
#[test]
fn pingpong_wakeups_match_round_trips_and_sleeps_when_traceable() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = 3000u64;
    let placement: &[&str] = if cpus >= 2 {
        &["--group", "ping:cpus=0", "--group", "pong:cpus=1"]
    } else {
        &[]
    };
    let mut args = vec!["run", "pingpong", "--loops", "3000", "--runs", "1"];
    args.extend_from_slice(placement);
    let rec = run_json(&args, "pp-wakeups");
    let source = rec.configs[0].counter_sources.wakeups.clone();
    if source.starts_with("unavailable") {
        // As root, tracefs can always be mounted: unavailable counters are a failure there.
        assert!(
            !is_root(),
            "as root the wakeup counters must be available: {source}"
        );
        eprintln!(
            "skipped: not root, wakeup counters {source}; run as root to check them \
             (sudo -E cargo test --release -p schedlab --test cli)"
        );
        return;
    }
    for side in ["ping", "pong"] {
        let c = counters(&rec, 0, 0, side);
        let wakeups = c.wakeups.expect("wakeups counted");
        let vol = c.voluntary_switches.expect("voluntary switches counted");
        // A wakeup that comes after its task set itself asleep but before it switched out
        // (try_to_wake_up's ttwu_runnable path) counts without a voluntary switch: a few in
        // 3,000 round trips (seen: 3).
        assert!(
            wakeups.abs_diff(vol + 1) <= 6,
            "{side}: {wakeups} wakeups vs {vol} voluntary switches ({source})"
        );
        assert!(c.wakeup_preemptions.expect("preemptions counted") <= wakeups);
    }
    let total = counters(&rec, 0, 0, "total")
        .wakeups
        .expect("wakeups counted");
    if cpus >= 2 {
        assert!(
            total * 100 >= 2 * n * 95,
            "{total} wakeups for {n} round trips across CPUs ({source})"
        );
    }
    assert!(total <= 2 * n + 10, "{total} wakeups for {n} round trips");
}

#[test]
fn yield_reports_nonzero_yields_per_thread_count() {
    let _serial = serial();
    let rec = run_json(
        &[
            "run",
            "yield",
            "--threads",
            "1,3",
            "--duration",
            "0.1s",
            "--runs",
            "1",
        ],
        "yield",
    );
    let configs = &rec.configs;
    assert_eq!(configs.len(), 2);
    assert_eq!(
        configs[1].params.get("threads").map(String::as_str),
        Some("3")
    );
    for c in 0..2 {
        assert!(metric(&rec, c, 0, "yields") > 0.0);
        let us = metric(&rec, c, 0, "us_per_yield");
        assert!(us > 0.0 && us < 1000.0, "{us}");
    }
}

#[test]
fn knobs_really_take_effect() {
    let _serial = serial();
    let rec = run_json(
        &[
            "run",
            "pingpong",
            "--loops",
            "200",
            "--runs",
            "1",
            "--group",
            "ping:nice=7,cpus=0",
            "--group",
            "pong:policy=batch,nice=3",
        ],
        "knobs",
    );
    let groups = &rec.configs[0].groups;
    assert_eq!(observed(&rec, 0, "nice"), Some("7"), "{groups:?}");
    assert_eq!(observed(&rec, 0, "cpus"), Some("0"), "{groups:?}");
    assert_eq!(observed(&rec, 1, "policy"), Some("batch"), "{groups:?}");
    assert_eq!(observed(&rec, 1, "nice"), Some("3"), "{groups:?}");
    assert_eq!(groups[0].knobs.nice, Some(7));
}

#[test]
fn privileged_knobs_take_effect_or_name_the_capability() {
    let _serial = serial();
    let out = schedlab()
        .args([
            "run",
            "pingpong",
            "--loops",
            "200",
            "--runs",
            "1",
            "--group",
            "ping:policy=fifo:10,cpus=0",
            "--group",
            "pong:nice=-5",
            "--json",
        ])
        .arg(temp_json("rt"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !is_root() {
        assert!(!out.status.success());
        assert!(err.contains("CAP_SYS_NICE"), "{err}");
        eprintln!(
            "skipped: not root, so the knobs could not be applied (checked the capability \
             message instead); run as root to check them (sudo -E cargo test --release -p \
             schedlab --test cli)"
        );
        return;
    }
    assert!(out.status.success(), "{err}");
    let rec = read_record(&temp_json("rt"));
    std::fs::remove_file(temp_json("rt")).ok();
    let groups = &rec.configs[0].groups;
    assert_eq!(observed(&rec, 0, "policy"), Some("fifo"), "{groups:?}");
    assert_eq!(
        observed(&rec, 0, "prio"),
        Some("89"),
        "fifo 10 is kernel prio 99-10: {groups:?}"
    );
    assert_eq!(observed(&rec, 1, "nice"), Some("-5"), "{groups:?}");
}

#[test]
fn bad_input_is_rejected_before_anything_starts() {
    let _serial = serial();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "messaging", "--group", "sender:nice=25"],
            "-20..19",
        ),
        (
            &["run", "messaging", "--group", "nobody:nice=1"],
            "its groups are: sender, receiver",
        ),
        (
            &["run", "messaging", "--group", "sender:cpus=0-4095"],
            "this machine has CPUs",
        ),
        (
            &["run", "messaging", "--group", "sender:colour=red"],
            "unknown knob 'colour'",
        ),
        (
            &["run", "messaging", "--group", "sender:policy=fifo:0"],
            "1..99",
        ),
        (
            &["run", "messaging", "--transport", "tcp"],
            "socketpair or pipe",
        ),
        (
            &["run", "pingpong", "--transport", "carrier-pigeon"],
            "pipe, socketpair, unix, tcp or udp",
        ),
        (&["run", "yield", "--threads", "0"], "1..131072"),
        (&["run", "yield", "--duration=-1s"], "positive"),
        (&["run", "pingpong", "--runs", "0"], "at least one"),
        (
            &["run", "pingpong", "--group", "ping:slice=5s"],
            "0.1ms..100ms",
        ),
    ];
    for (args, needle) in cases {
        let start = Instant::now();
        let out = schedlab().args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in:\n{err}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{args:?} must fail before running"
        );
    }
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1))
                .and_then(|s| s.parse::<u32>().ok());
            if ppid == Some(pid) {
                out.push(p);
            }
        }
    }
    out
}

fn leftovers(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with(&format!("schedlab-{pid}-")) {
            found.push(name);
        }
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    for m in mounts.lines().filter(|l| l.contains("tracefs")) {
        let dir = m.split_whitespace().nth(1).unwrap_or("");
        let inst = format!("{dir}/instances");
        if let Ok(rd) = std::fs::read_dir(&inst) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if n.starts_with(&format!("schedlab-{pid}-")) {
                    found.push(format!("{inst}/{n}"));
                }
            }
        }
        if dir.contains(&format!("schedlab-{pid}-"))
            || dir.contains(&format!("schedlab-tracefs-{pid}-"))
        {
            found.push(format!("mount {dir}"));
        }
    }
    found
}

/// After a run has ended: no child process, temporary directory or tracefs instance or mount.
fn assert_nothing_left(pid: u32) {
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        children_of(pid).is_empty(),
        "children left: {:?}",
        children_of(pid)
    );
    assert!(
        leftovers(pid).is_empty(),
        "left behind: {:?}",
        leftovers(pid)
    );
}

/// Ctrl-C a running schedlab: it exits with 130 and leaves nothing behind.
fn interrupt(child: std::process::Child) -> Output {
    let pid = child.id();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(pid);
    out
}

#[test]
fn an_interrupted_run_leaves_no_child_and_keeps_finished_repetitions() {
    let _serial = serial();
    let json = temp_json("interrupt");
    let child = schedlab()
        .args([
            "run",
            "messaging",
            "--groups",
            "2",
            "--loops",
            "3000",
            "--runs",
            "50",
            "--tasks",
            "processes",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until at least one repetition finished (the record exists) and workers are running.
    let start = Instant::now();
    while !(json.exists() && children_of(pid).len() > 10) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    interrupt(child);
    let rec = read_record(&json);
    std::fs::remove_file(&json).ok();
    assert!(rec.interrupted);
    let reps = rec.configs[0].repetitions.len();
    assert!((1..50).contains(&reps), "{reps} repetitions kept");
}

#[test]
fn the_supervisor_ends_a_run_past_its_budget() {
    let _serial = serial();
    let out = schedlab()
        .args([
            "run",
            "yield",
            "--threads",
            "2",
            "--duration",
            "30s",
            "--runs",
            "1",
            "--timeout",
            "0.5s",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("time budget"), "{err}");
}

#[test]
fn list_and_env_describe_workloads_and_machine() {
    let _serial = serial();
    let out = String::from_utf8(succeeds(&["list"]).stdout).unwrap();
    for w in [
        "messaging",
        "pingpong",
        "yield",
        "sender, receiver",
        "ping, pong",
        "deadline:",
    ] {
        assert!(out.contains(w), "list lacks {w}:\n{out}");
    }
    let out = String::from_utf8(succeeds(&["env"]).stdout).unwrap();
    for w in [
        "kernel",
        "CPUs",
        "preemption",
        "negative nice",
        "real-time",
        "custom slices",
        "wakeup and preemption counters",
    ] {
        assert!(out.contains(w), "env lacks {w}:\n{out}");
    }
}

#[test]
fn every_command_has_help() {
    let _serial = serial();
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["run", "messaging", "--help"],
        &["run", "pingpong", "--help"],
        &["run", "yield", "--help"],
        &["list", "--help"],
        &["env", "--help"],
    ] {
        let out = succeeds(args);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
}

#[test]
fn chat_accounts_for_every_message_in_both_modes_transports_and_servers() {
    let _serial = serial();
    let (rooms, users, messages) = (2usize, 4usize, 10usize);
    let expected = rooms * users * messages * users; // sent + received (users − 1 each)
    for mode in ["burst", "turns"] {
        for transport in ["tcp", "unix"] {
            for (tasks, server) in [
                ("group-processes", "relay"),
                ("threads", "relay"),
                ("group-processes", "volano"),
                ("threads", "volano"),
            ] {
                let rec = run_json(
                    &[
                        "run",
                        "chat",
                        "--rooms",
                        "2",
                        "--users",
                        "4",
                        "--messages",
                        "10",
                        "--runs",
                        "1",
                        "--mode",
                        mode,
                        "--transport",
                        transport,
                        "--tasks",
                        tasks,
                        "--server",
                        server,
                    ],
                    &format!("chat-{mode}-{transport}-{tasks}-{server}"),
                );
                assert_eq!(
                    metric(&rec, 0, 0, "messages"),
                    expected as f64,
                    "{mode} {transport} {tasks} {server}"
                );
                assert!(metric(&rec, 0, 0, "msgs_per_s") > 0.0);
                let p50 = metric(&rec, 0, 0, "latency_p50");
                assert!(p50 > 0.0 && p50 <= metric(&rec, 0, 0, "latency_max"));
                let groups = &rec.configs[0].groups;
                // VolanoChat's server has a reader and a writer per connection.
                let per_connection = if server == "volano" { 2 } else { 1 };
                assert_eq!(groups[0].tasks, per_connection * rooms * users);
                assert_eq!(
                    groups[1].tasks,
                    if mode == "burst" {
                        2 * rooms * users
                    } else {
                        rooms * users
                    }
                );
            }
        }
    }
}

#[test]
fn chat_prints_the_seed_table_and_applies_knobs_per_side() {
    let _serial = serial();
    let json = temp_json("chat-knobs");
    let out = schedlab()
        .args([
            "run",
            "chat",
            "--rooms",
            "1",
            "--users",
            "5",
            "--messages",
            "20",
            "--runs",
            "1",
            "--group",
            "server:nice=5",
            "--group",
            "client:nice=3,policy=batch",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Srvr Nice") && stdout.contains("% priority preemptions"),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("+5"))
        .unwrap_or_else(|| panic!("no +5 row:\n{stdout}"));
    assert!(
        row.contains("+3") && row.contains("client:policy=batch"),
        "{row}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Average throughput :"));
    let rec = read_record(&json);
    std::fs::remove_file(&json).ok();
    let groups = &rec.configs[0].groups;
    assert_eq!(observed(&rec, 0, "nice"), Some("5"), "{groups:?}");
    assert_eq!(observed(&rec, 1, "nice"), Some("3"), "{groups:?}");
    assert_eq!(observed(&rec, 1, "policy"), Some("batch"), "{groups:?}");
    let server = counters(&rec, 0, 0, "server");
    assert!(server.voluntary_switches.is_some(), "{server:?}");
}

#[test]
fn chat_fails_clearly_when_the_server_is_killed() {
    let _serial = serial();
    let mut child = schedlab()
        .args([
            "run",
            "chat",
            "--rooms",
            "4",
            "--messages",
            "200000",
            "--mode",
            "turns",
            "--runs",
            "1",
            "--counters",
            "proc",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    let server = loop {
        let found = children_of(pid).into_iter().find(|c| {
            std::fs::read_to_string(format!("/proc/{c}/comm"))
                .is_ok_and(|n| n.trim() == "schedlab-server")
        });
        if let Some(s) = found {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no server process appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: killing the run's server process (our grandchild).
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("the run hung after its server was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success());
    assert!(
        err.contains("the server process") && err.contains("died") && err.contains("signal 9"),
        "{err}"
    );
    assert_nothing_left(pid);
}

#[test]
fn chat_checks_the_open_file_limit_up_front() {
    let _serial = serial();
    use std::os::unix::process::CommandExt;
    let mut cmd = schedlab();
    cmd.args(["run", "chat", "--runs", "1"]);
    // SAFETY: setrlimit is async-signal-safe; it lowers only the child's own limits.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 100,
                rlim_max: 100,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
    let start = Instant::now();
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("open files") && err.contains("ulimit -n"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// End to end through the binary, on the simulator so that the values (and so the number of
/// runs) are exact; the loop itself is unit-tested on the mock backend in schedlab-experiment.
#[test]
fn until_stops_when_the_interval_is_tight_or_says_it_did_not_converge() {
    let _serial = serial();
    let rec = run_json(
        &[
            "run",
            "yield",
            "--threads",
            "1",
            "--duration",
            "0.05s",
            "--until",
            "95:50%",
            "--max-runs",
            "8",
            "--backend",
            "sim",
            "--cpus",
            "2",
        ],
        "until-loose",
    );
    let c = &rec.configs[0];
    assert_eq!(c.converged, Some(true), "{c:?}");
    assert_eq!(
        c.repetitions.len(),
        3,
        "a loose precision converges at the minimum of 3 runs"
    );
    let half_width = c.intervals["us_per_yield"]
        .half_width
        .expect("an interval from 3 runs");
    assert!(half_width > 0.0, "{half_width}");
    assert_eq!(rec.until.as_deref(), Some("95:50%"));

    let out = schedlab()
        .args([
            "run",
            "yield",
            "--threads",
            "1",
            "--duration",
            "0.05s",
            "--until",
            "99:0.0001%",
            "--max-runs",
            "4",
            "--backend",
            "sim",
            "--cpus",
            "2",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("did not converge") && stdout.contains("after 4 runs"),
        "{stdout}"
    );

    let out = schedlab()
        .args(["run", "yield", "--until", "150:2%"])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("150"));
    let out = schedlab()
        .args(["run", "yield", "--until", "95:2%", "--runs", "3"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "--runs and --until exclude each other"
    );
}

#[test]
fn sweep_prints_one_row_per_configuration_writes_records_and_an_svg() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("schedlab-test-sweep-{}", std::process::id()));
    let svg = dir.join("yield.svg");
    std::fs::create_dir_all(&dir).unwrap();
    let args = |runs: &str| {
        vec![
            "sweep".to_string(),
            "yield".into(),
            "--duration".into(),
            "0.05s".into(),
            "--vary".into(),
            "threads=1,2,3".into(),
            "--vary".into(),
            "yield.nice=0,5".into(),
            "--runs".into(),
            runs.into(),
            "--out".into(),
            dir.display().to_string(),
            "--plot".into(),
            svg.display().to_string(),
        ]
    };
    let out = schedlab().args(args("2")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = stdout.lines().next().unwrap();
    assert!(
        header.contains("threads") && header.contains("yield.nice") && header.contains("vs first"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('+'))
        .collect();
    assert_eq!(rows.len(), 6, "{stdout}");
    assert!(
        rows[0].starts_with('1') && rows[0].contains("baseline"),
        "{stdout}"
    );
    assert!(
        rows[5].starts_with('3') && rows[5].contains(" 5 "),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg") && text.trim_end().ends_with("</svg>"),
        "not an SVG"
    );
    assert!(
        text.contains("yield.nice=5") && text.matches("<polyline").count() >= 2,
        "two lines with a legend"
    );
    let all = read_record(&dir.join("sweep.json"));
    assert_eq!(all.configs.len(), 6);
    assert!(
        dir.join("threads=2_yield.nice=5.json").exists(),
        "{:?}",
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect::<Vec<_>>()
    );
    // The same sweep with more runs resumes from the directory: two runs each are kept.
    let out = schedlab().args(args("3")).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("resuming with 2 finished repetitions").count(),
        6,
        "{err}"
    );
    assert_eq!(
        err.matches(" run 3/3").count(),
        6,
        "only the third run is new: {err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sweep_rejects_bad_keys_before_running() {
    let _serial = serial();
    for (args, needle) in [
        (
            &["sweep", "chat", "--vary", "roomz=1,2"][..],
            "no parameter 'roomz'",
        ),
        (
            &["sweep", "chat", "--vary", "server.colour=1"],
            "unknown knob 'colour'",
        ),
        (
            &["sweep", "chat", "--vary", "waiter.nice=1"],
            "no group 'waiter'",
        ),
        (&["sweep", "chat", "--vary", "rooms=1,x"], "rooms=x"),
        (&["sweep", "chat", "--vary", "server.nice=0,25"], "-20..19"),
        (&["sweep", "chat"], "at least one --vary"),
        (
            &["run", "chat", "--vary", "rooms=1"],
            "belong to `schedlab sweep`",
        ),
    ] {
        let out = schedlab().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in {err}"
        );
    }
}

#[test]
fn compare_reports_like_ministat_and_refuses_unlike_records() {
    let _serial = serial();
    let a = temp_json("cmp-a");
    let b = temp_json("cmp-b");
    let c = temp_json("cmp-c");
    for (path, threads) in [(&a, "1"), (&b, "1")] {
        succeeds(&[
            "run",
            "yield",
            "--threads",
            threads,
            "--duration",
            "0.05s",
            "--runs",
            "4",
            "-q",
            "--json",
            path.to_str().unwrap(),
        ]);
    }
    succeeds(&[
        "run",
        "pingpong",
        "--loops",
        "300",
        "--runs",
        "3",
        "-q",
        "--json",
        c.to_str().unwrap(),
    ]);
    let out = succeeds(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("N           Min           Max        Median           Avg        Stddev"),
        "{stdout}"
    );
    assert!(stdout.contains("confidence"), "{stdout}");
    assert!(
        stdout.contains("us_per_yield") && stdout.contains("yields_per_s"),
        "{stdout}"
    );
    let out = succeeds(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--level",
        "99",
        "--welch",
        "--metric",
        "yields_per_s",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("99"),
        "level 99"
    );
    let out = schedlab()
        .args(["compare", a.to_str().unwrap(), c.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    let out = schedlab()
        .args([
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--level",
            "101",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    for p in [a, b, c] {
        std::fs::remove_file(p).ok();
    }
}

#[test]
fn the_simulator_runs_every_workload_repeatably() {
    let _serial = serial();
    let sim = [
        "--backend",
        "sim",
        "--policy",
        "cfs",
        "--cpus",
        "2",
        "--runs",
        "2",
    ];
    let run = |workload: &[&str], name: &str| {
        let mut args = vec!["run"];
        args.extend_from_slice(workload);
        args.extend_from_slice(&sim);
        run_json(&args, name)
    };
    let a = run(&["pingpong", "--loops", "2000"], "sim-a");
    let b = run(&["pingpong", "--loops", "2000"], "sim-b");
    assert_eq!(a.backend.kind, "sim");
    assert_eq!(a.backend.policy.as_deref(), Some("cfs"));
    assert_eq!(a.configs[0].machine.as_deref(), Some("cfs, 2 CPUs, modern"));
    // Same command, same seeds: the same repetitions, to the last counter.
    assert_eq!(a.configs[0].repetitions, b.configs[0].repetitions);
    // Repetitions use different seeds, so they differ.
    assert_ne!(
        a.configs[0].repetitions[0].metrics,
        a.configs[0].repetitions[1].metrics
    );
    let rep = &a.configs[0].repetitions[0];
    assert_eq!(rep.cpus.len(), 2);
    let events = rep.sim_events.expect("the simulator counts its events");
    assert!(events > 4 * 2000, "{events}");
    assert_eq!(metric(&a, 0, 0, "round_trips"), 2000.0);
    let other_seed = run_json(
        &[
            "run",
            "pingpong",
            "--loops",
            "2000",
            "--backend",
            "sim",
            "--policy",
            "cfs",
            "--cpus",
            "2",
            "--runs",
            "1",
            "--seed",
            "9",
        ],
        "sim-c",
    );
    assert_ne!(
        other_seed.configs[0].repetitions[0].metrics,
        a.configs[0].repetitions[0].metrics
    );

    // The printed summary is byte-identical too.
    let summary = || {
        succeeds(&[
            "run",
            "messaging",
            "--groups",
            "2",
            "--fds",
            "4",
            "--loops",
            "20",
            "--backend",
            "sim",
            "--policy",
            "o1:threshold=40",
            "--cpus",
            "4",
            "--profile",
            "piii-700",
            "-q",
        ])
        .stdout
    };
    assert_eq!(summary(), summary());
    let m = run(
        &["messaging", "--groups", "2", "--fds", "5", "--loops", "20"],
        "sim-m",
    );
    assert_eq!(metric(&m, 0, 0, "messages"), (2 * 5 * 5 * 20) as f64);
    let y = run(
        &["yield", "--threads", "1,8", "--duration", "20ms"],
        "sim-y",
    );
    assert_eq!(y.configs.len(), 2);
    assert!(metric(&y, 1, 0, "yields") > 1000.0);
    let c = run(
        &["chat", "--rooms", "2", "--users", "4", "--messages", "10"],
        "sim-chat",
    );
    assert_eq!(
        metric(&c, 0, 0, "messages"),
        (2 * 4 * 10 + 2 * 4 * 3 * 10) as f64
    );
    let total = counters(&c, 0, 0, "total");
    assert!(total.wakeups.is_some_and(|w| w > 0), "{total:?}");
    assert!(total.wakeup_preemptions.is_some(), "{total:?}");
}

#[test]
fn the_simulator_rejects_bad_input_before_anything_starts() {
    let _serial = serial();
    let pp = ["run", "pingpong", "--loops", "10"];
    for (extra, needle) in [
        (
            &["--backend", "sim", "--policy", "bfs"][..],
            "unknown policy 'bfs'",
        ),
        (
            &["--backend", "sim", "--policy", "cfs:x=1"],
            "no parameter 'x'",
        ),
        (&["--backend", "sim", "--cpus", "0"], "--cpus 0"),
        (&["--backend", "sim", "--cpus", "1025"], "1..1024"),
        (
            &["--backend", "sim", "--profile", "vax"],
            "modern, piii-700",
        ),
        (
            &["--backend", "sim", "--cost", "warp=1"],
            "unknown key 'warp'",
        ),
        (&["--backend", "sim", "--cost", "hz=5"], "10..10000"),
        (&["--policy", "cfs"], "add --backend sim"),
        (&["--cpus", "4"], "add --backend sim"),
        (
            &[
                "--backend",
                "sim",
                "--policy",
                "cfs",
                "--group",
                "ping:slice=1ms",
            ],
            "slice=1.000ms",
        ),
        (
            &["--backend", "sim", "--cpus", "2", "--group", "ping:cpus=5"],
            "CPU 5",
        ),
        (&["--backend", "sim", "--counters", "trace"], "exactly"),
    ] {
        let mut args = pp.to_vec();
        args.extend_from_slice(extra);
        let out = schedlab().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed results");
    }
    let out = schedlab()
        .args(["sweep", "pingpong", "--vary", "policy=cfs,eevdf"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a real sweep over policies ran");
    assert!(err.contains("add --backend sim"), "{err}");
    assert!(out.stdout.is_empty(), "it printed results");
}

#[test]
fn a_sweep_varies_the_simulated_machine() {
    let _serial = serial();
    let out = succeeds(&[
        "sweep",
        "pingpong",
        "--loops",
        "1000",
        "--backend",
        "sim",
        "--runs",
        "2",
        "-q",
        "--vary",
        "cpus=1,2",
        "--vary",
        "policy=cfs",
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header[..2], ["cpus", "policy"], "{table}");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.contains("cfs"))
        .map(|l| l.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(
        rows,
        [["1", "cfs"], ["2", "cfs"]],
        "one row per CPU count, naming it:\n{table}"
    );
}

#[test]
fn an_interbench_sweep_over_policies_prints_seed_004s_tables_per_policy() {
    let _serial = serial();
    let out = succeeds(&[
        "sweep",
        "interbench",
        "--backend",
        "sim",
        "--cpus",
        "1",
        "--bench",
        "audio",
        "--loads",
        "none,burn",
        "--duration",
        "2s",
        "--runs",
        "3",
        "-q",
        "--group",
        "bench:nice=19",
        "--vary",
        "policy=o1,o1:threshold=40,cfs",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    for policy in ["o1", "o1:threshold=40", "cfs"] {
        assert!(text.contains(&format!("== policy={policy} ==\n")), "{text}");
    }
    assert_eq!(
        text.matches(
            "--- Benchmarking simulated cpu of Audio nice 19 in the presence of simulated ---"
        )
        .count(),
        3,
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("Burn")).count(),
        3,
        "{text}"
    );
}

#[test]
fn interbench_meets_deadlines_alone_and_misses_them_when_asking_too_much() {
    let _serial = serial();
    let rec = run_json(
        &[
            "run",
            "interbench",
            "--bench",
            "audio",
            "--loads",
            "none",
            "--duration",
            "1s",
            "--runs",
            "1",
        ],
        "ib-alone",
    );
    let params = &rec.configs[0].params;
    assert_eq!(params.get("bench").map(String::as_str), Some("audio"));
    assert_eq!(params.get("load").map(String::as_str), Some("none"));
    let met = metric(&rec, 0, 0, "deadlines_met");
    assert!(met >= 95.0, "audio alone met only {met}% of its deadlines");
    assert!(metric(&rec, 0, 0, "desired_cpu") >= 95.0);
    // 90 % of a CPU every 10 ms, against one CPU burner per CPU at the same nice: it gets
    // about (CPUs)/(CPUs + 1) of a CPU at best, and misses.
    let rec = run_json(
        &[
            "run",
            "interbench",
            "--cpu",
            "90",
            "--interval",
            "10ms",
            "--bench",
            "custom",
            "--loads",
            "burn",
            "--duration",
            "1s",
            "--runs",
            "1",
        ],
        "ib-greedy",
    );
    let met = metric(&rec, 0, 0, "deadlines_met");
    assert!(
        met < 80.0,
        "a 90 % task against burners met {met}% of its deadlines"
    );
    assert!(metric(&rec, 0, 0, "latency_max") >= metric(&rec, 0, 0, "latency_p99"));
    // The seed's table shape.
    let out = succeeds(&[
        "run",
        "interbench",
        "--bench",
        "audio",
        "--loads",
        "none,burn",
        "--duration",
        "0.5s",
        "--runs",
        "1",
        "-q",
        "--group",
        "bench:nice=19",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "--- Benchmarking simulated cpu of Audio nice 19 in the presence of simulated ---"
        ),
        "{text}"
    );
    assert!(text.contains("Latency +/- SD (ms)") && text.contains("% Deadlines Met"));
    assert!(text.lines().any(|l| l.starts_with("Burn")), "{text}");
}

#[test]
fn interbench_loads_leave_no_process_or_file_behind_even_when_interrupted() {
    let _serial = serial();
    let child = schedlab()
        .args([
            "run",
            "interbench",
            "--bench",
            "audio",
            "--loads",
            "write,read,memload,ring",
            "--duration",
            "0.5s",
            "--io-size",
            "8MiB",
            "--mem-size",
            "32MiB",
            "--runs",
            "1",
            "-q",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(pid);
    let child = schedlab()
        .args([
            "run",
            "interbench",
            "--bench",
            "video",
            "--loads",
            "compile",
            "--duration",
            "20s",
            "--io-size",
            "64MiB",
            "--runs",
            "3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    while children_of(pid).len() < 2 || leftovers(pid).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(child);
}

#[test]
fn interbench_rejects_bad_input_before_anything_starts() {
    let _serial = serial();
    for (args, needle) in [
        (
            &["run", "interbench", "--loads", "walk"][..],
            "is not a load",
        ),
        (
            &["run", "interbench", "--bench", "tetris"],
            "is not a benchmark",
        ),
        (
            &["run", "interbench", "--duration", "-1s"],
            "zero or positive",
        ),
        (&["run", "interbench", "--duration", "10ms"], "100ms..1h"),
        (
            &["run", "interbench", "--bench", "video", "--loads", "video"],
            "against itself",
        ),
        (&["run", "interbench", "--bench", "custom"], "needs --cpu"),
        (&["run", "interbench", "--cpu", "150"], "--cpu 150"),
        (
            &[
                "run",
                "interbench",
                "--loads",
                "memload",
                "--mem-size",
                "64GiB",
            ],
            "--mem-size 64GiB",
        ),
        (
            &["run", "interbench", "--io-size", "1KiB"],
            "--io-size 1KiB",
        ),
        (
            &["run", "interbench", "--memload", "spin"],
            "'spin' is not a memload; use round or walk",
        ),
        (
            &["run", "interbench", "--load-timer", "maybe"],
            "'maybe' is not accepted; use on or off",
        ),
        (
            &["run", "interbench", "--bench-start", "late"],
            "'late' is not accepted; use runnable or asleep",
        ),
        (
            &["run", "interbench", "--rt", "--group", "bench:policy=batch"],
            "drop policy=",
        ),
    ] {
        let out = schedlab().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in {err}"
        );
    }
}

#[test]
fn a_sweep_resumes_only_its_own_experiment_and_never_loses_a_summary() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("schedlab-test-{}-resume", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap().to_string();
    // The sweep with its duration and runs, and more arguments.
    let sweep = |duration: &str, runs: &str, extra: &[&str]| {
        let mut args = vec![
            "sweep",
            "yield",
            "--backend",
            "sim",
            "--vary",
            "threads=1,2",
            "--duration",
            duration,
            "--runs",
            runs,
            "--quiet",
            "--out",
            &d,
        ];
        args.extend(extra);
        schedlab().args(&args).output().unwrap()
    };
    let first = sweep("0.05s", "2", &[]);
    assert!(first.status.success(), "{first:?}");
    let record = dir.join("threads=1.json");
    let before = std::fs::read_to_string(&record).unwrap();
    // Another policy, another duration: refused before anything runs, the records left alone.
    for (duration, extra, words) in [
        ("0.05s", &["--policy", "o1"][..], "policy eevdf"),
        (
            "0.1s",
            &[][..],
            "duration=50.000ms there, duration=100.000ms here",
        ),
    ] {
        let out = sweep(duration, "2", extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(
            err.contains("was written by another experiment")
                && err.contains(words)
                && err.contains("use a new --out directory"),
            "{extra:?}: {err}"
        );
        assert_eq!(std::fs::read_to_string(&record).unwrap(), before);
    }
    // A tampered value is dropped, and said; the rest resumes.
    let tampered = before.replacen("\"us_per_yield\": 0.", "\"us_per_yield\": -5", 1);
    assert_ne!(tampered, before);
    std::fs::write(&record, tampered).unwrap();
    let out = sweep("0.05s", "3", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("repetition 1 has us_per_yield = -5")
            && err.contains("cannot be negative")
            && err.contains("yield threads=2: resuming with 2 finished repetitions"),
        "{err}"
    );
    let rec = read_record(&record);
    assert!(rec.configs[0].repetitions.len() == 3 && metric(&rec, 0, 0, "us_per_yield") > 0.0);

    // A record that cannot be written: the summary still prints, the error says what was not
    // saved.
    // A FIFO nobody reads: written once at the end, and refused then.
    let json = dir.join("x.json");
    let c_path = std::ffi::CString::new(json.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node in the test's directory.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let out = schedlab()
        .args([
            "run",
            "yield",
            "--backend",
            "sim",
            "--duration",
            "0.05s",
            "--runs",
            "2",
        ])
        .args(["--quiet", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(stdout.contains("us_per_yield"), "the summary: {stdout}");
    assert!(
        err.contains(&format!("writing {}", json.display()))
            && err.contains("the results above were not saved"),
        "{err}"
    );

    // compare of a simulated and a real record: refused without --force, a warning with it.
    let real = dir.join("real.json");
    succeeds(&[
        "run",
        "yield",
        "--duration",
        "0.05s",
        "--runs",
        "3",
        "--counters",
        "proc",
        "--quiet",
        "--json",
        real.to_str().unwrap(),
    ]);
    let sim = dir.join("threads=1.json");
    let (sim, real) = (sim.to_str().unwrap(), real.to_str().unwrap());
    let out = schedlab().args(["compare", real, sim]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds the real kernel's results") && err.contains("pass --force"),
        "{err}"
    );
    let out = succeeds(&["compare", "--force", real, sim]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!(
        "warning: {real} holds the real kernel's results and {sim} simulated"
    )));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 13, the real backend (items 2, 5 and 10): a run killed by SIGKILL leaves its temporary
/// directory, which the next run removes and names on stderr; a FIFO group burning past
/// `--timeout` at the highest priority accepted ends at the budget; a run that a limit on tasks
/// cannot hold (RLIMIT_NPROC of a non-root user, a cgroup's pids.max) is refused at once, naming
/// the limit, instead of failing after tens of seconds.
#[test]
fn real_runs_clean_up_after_kills_end_realtime_groups_and_check_task_limits() {
    let _serial = serial();
    use std::os::unix::process::CommandExt;
    let stderr = |out: &Output| String::from_utf8_lossy(&out.stderr).into_owned();

    // Item 2: a private TMPDIR, an interbench read load killed while its file exists.
    let tmp = std::env::temp_dir().join(format!("schedlab-test-{}-stale", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut killed = schedlab()
        .args([
            "run",
            "interbench",
            "--bench",
            "audio",
            "--loads",
            "read",
            "--io-size",
            "4MiB",
            "--duration",
            "20s",
            "--runs",
            "1",
            "--counters",
            "proc",
        ])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let owned = format!("schedlab-{}-", killed.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    let scratch = loop {
        let found = std::fs::read_dir(&tmp).unwrap().flatten().find(|e| {
            e.file_name().to_string_lossy().starts_with(&owned)
                && std::fs::read_dir(e.path()).is_ok_and(|mut d| d.next().is_some())
        });
        if let Some(e) = found {
            break e.path();
        }
        assert!(
            Instant::now() < deadline,
            "no {owned}* with a file in {}",
            tmp.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(scratch.exists(), "a SIGKILL leaves the directory behind");
    let next = schedlab()
        .args([
            "run",
            "yield",
            "--duration",
            "0.1s",
            "--runs",
            "1",
            "--counters",
            "proc",
        ])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = stderr(&next);
    assert!(next.status.success(), "{err}");
    assert!(
        !scratch.exists(),
        "{} not removed:\n{err}",
        scratch.display()
    );
    assert!(
        err.contains(&format!("schedlab: removed {}", scratch.display()))
            && err.contains("which no longer exists"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "the next run left its own"
    );
    std::fs::remove_dir(&tmp).unwrap();

    if !is_root() {
        eprintln!("skipped: real-time groups and limits of another user need root");
        return;
    }

    // Item 5: burners at FIFO 98 on every CPU, past a budget of 0.5 s; kept short.
    let started = Instant::now();
    let out = schedlab()
        .args([
            "run",
            "interbench",
            "--bench",
            "audio",
            "--loads",
            "burn",
            "--duration",
            "3s",
            "--runs",
            "1",
            "--group",
            "load:policy=fifo:98",
            "--timeout",
            "0.5s",
            "--counters",
            "proc",
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("time budget of 0.5s"),
        "{}",
        stderr(&out)
    );
    assert!(took < Duration::from_millis(1500), "ended after {took:?}");

    // Item 10: 1800 chat tasks under RLIMIT_NPROC 600 for a non-root user.
    const UID: u32 = 54_321;
    // 30 rooms of 20 users: 1800 tasks, far more than the limits below allow.
    let chat_1800_tasks = || {
        let mut cmd = schedlab();
        cmd.args([
            "run",
            "chat",
            "--rooms",
            "30",
            "--messages",
            "2",
            "--runs",
            "1",
        ]);
        cmd
    };
    let mut cmd = chat_1800_tasks();
    // SAFETY: only async-signal-safe system calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 600,
                rlim_max: 600,
            };
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(UID, UID, UID) != 0
                || libc::setrlimit(libc::RLIMIT_NPROC, &lim) != 0
                || libc::setresuid(UID, UID, UID) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("this run needs about 1802 tasks")
            && err.contains(&format!(
                "RLIMIT_NPROC (`ulimit -u`) of uid {UID} allows 600 tasks"
            )),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // The same under a pids cgroup of 600 tasks, made for the test (and removed).
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let base = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let pids_v1 = f.get(2) == Some(&"cgroup") && f[3].split(',').any(|o| o == "pids");
        let path = own.lines().find_map(|c| {
            let mut p = c.splitn(3, ':');
            let (_, controllers, path) = (p.next()?, p.next()?, p.next()?);
            controllers.split(',').any(|x| x == "pids").then_some(path)
        })?;
        pids_v1.then(|| Path::new(f[1]).join(path.trim_start_matches('/')))
    });
    let Some(base) = base else {
        eprintln!("skipped: no cgroup v1 pids hierarchy here to make a limited cgroup in");
        return;
    };
    let cg = base.join(format!("schedlab-test-{}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    std::fs::write(cg.join("pids.max"), "600").unwrap();
    let procs = cg.join("cgroup.procs");
    let mut cmd = chat_1800_tasks();
    // SAFETY: open, write and close are async-signal-safe; the path is prepared before the fork.
    let procs_c = std::ffi::CString::new(procs.to_str().unwrap()).unwrap();
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs_c.as_ptr(), libc::O_WRONLY);
            let ok = fd >= 0 && libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
            if fd >= 0 {
                libc::close(fd);
            }
            if ok {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let took = started.elapsed();
    let removed = std::fs::remove_dir(&cg);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("this run needs about 1802 tasks")
            && err.contains(&format!(
                "the pids cgroup {} (pids.max) allows 600 tasks",
                cg.display()
            )),
        "{err}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    removed.unwrap();
}

/// `validate --quick` runs every suite entry on the real kernel and on the simulator: one row
/// per entry, each with a measured and a simulated estimate and the error (in points for
/// interbench's deadlines), in the table and in the `--json` record.
#[test]
fn validate_measures_and_simulates_every_suite_entry() {
    let _s = serial();
    let json = temp_json("validate");
    let o = succeeds(&["validate", "--quick", "--json", json.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let cpus = v["cpus"].as_u64().unwrap();
    // 4 messaging, 1 or 2 ping-pongs, the distinct yield thread counts, chat, 8 interbench.
    let mut threads = vec![1, cpus, 4 * cpus, 256];
    threads.dedup();
    let expected = 4 + if cpus > 1 { 2 } else { 1 } + threads.len() + 1 + 8;
    assert_eq!(rows.len(), expected, "{text}");
    for row in rows {
        let name = row["name"].as_str().unwrap();
        assert!(text.contains(name), "{name} not printed:\n{text}");
        assert!(row["measured"]["mean"].is_number(), "{row}");
        assert!(row["simulated"]["mean"].is_number(), "{row}");
        assert!(row["error"].is_number(), "{row}");
        let points = row["points"].as_bool().unwrap();
        assert_eq!(points, name.starts_with("interbench"), "{row}");
    }
    assert!(text.contains("rows within ±20 %"), "{text}");
    std::fs::remove_file(&json).ok();
}

/// A number of the lock table's line for `name`: `Util`, `Con`, `Cpu` (the `(% CPU)` column)
/// or `Total` (percent signs dropped).
fn lock_column(table: &str, name: &str, col: LockCol) -> f64 {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().last() == Some(name))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{table}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let word = match col {
        LockCol::Util => words[0],
        LockCol::Con => words[1],
        // The MAX columns may hold spaces: count TOTAL from the end, and take the last
        // parenthesised value for % CPU.
        LockCol::Total => words[words.len() - 5],
        LockCol::Cpu => {
            let open = line.rfind('(').unwrap();
            let close = open + line[open..].find(')').unwrap();
            line[open + 1..close].trim()
        }
    };
    word.trim_end_matches('%')
        .parse()
        .unwrap_or_else(|e| panic!("{word} in {line}: {e}"))
}

/// A column of [`lock_column`].
#[derive(Clone, Copy)]
enum LockCol {
    Util,
    Con,
    Cpu,
    Total,
}

#[test]
fn locks_prints_lockmeters_table_linux24s_runqueue_lock_contended_and_mqs_not() {
    let run = |policy: &str| {
        let out = succeeds(&[
            "run",
            "yield",
            "--backend",
            "sim",
            "--policy",
            policy,
            "--cpus",
            "8",
            "--threads",
            "256",
            "--duration",
            "50ms",
            "--runs",
            "1",
            "--locks",
            "--quiet",
        ]);
        String::from_utf8(out.stdout).unwrap()
    };
    let l24 = run("linux24");
    let header = "UTIL CON MEAN( MAX ) MEAN( MAX )(% CPU) TOTAL NOWAIT SPIN RJECT NAME";
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        l24.lines().any(|l| words(l) == "SPINLOCKS HOLD WAIT"),
        "{l24}"
    );
    assert!(l24.lines().any(|l| words(l) == header), "{l24}");
    let con = lock_column(&l24, "runqueue_lock", LockCol::Con);
    assert!(
        con > 50.0,
        "linux24's runqueue_lock contention {con} %:\n{l24}"
    );
    assert_eq!(
        lock_column(&l24, "runqueue_lock", LockCol::Util),
        100.0,
        "{l24}"
    );
    assert!(
        lock_column(&l24, "runqueue_lock", LockCol::Cpu) > 10.0,
        "% CPU spinning:\n{l24}"
    );
    let mq = run("linux24-mq");
    assert!(!mq.contains("runqueue_lock"), "{mq}");
    for cpu in 0..8 {
        let con = lock_column(&mq, &format!("rq[{cpu}]"), LockCol::Con);
        assert!(con < 5.0, "linux24-mq rq[{cpu}] contention {con} %:\n{mq}");
    }
    // Without --locks, no table.
    let out = succeeds(&[
        "run",
        "yield",
        "--backend",
        "sim",
        "--cpus",
        "2",
        "--threads",
        "4",
        "--duration",
        "10ms",
        "--runs",
        "1",
        "--quiet",
    ]);
    assert!(!String::from_utf8(out.stdout).unwrap().contains("SPINLOCKS"));
    // A real run of a workload without locks says there is nothing to show.
    let _guard = serial();
    let out = succeeds(&[
        "run",
        "yield",
        "--threads",
        "1",
        "--duration",
        "20ms",
        "--runs",
        "1",
        "--quiet",
        "--locks",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("locks: none measured"), "{text}");
}

#[test]
fn a_real_run_keeps_both_kinds_of_lock_in_the_record_and_prints_them() {
    let _guard = serial();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/locks.toml");
    let args = [
        "run",
        file,
        "--runs",
        "1",
        "--iterations",
        "2000",
        "--spinners",
        "2",
        "--sleepers",
        "2",
        "--locks",
    ];
    let out = succeeds(&args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("SPINLOCKS") && text.contains("SLEEPING LOCKS"),
        "{text}"
    );
    assert_eq!(
        lock_column(&text, "spinlock", LockCol::Total),
        4000.0,
        "{text}"
    );
    assert_eq!(
        lock_column(&text, "mutex", LockCol::Total),
        4000.0,
        "{text}"
    );
    let rec = run_json(&args[..args.len() - 1], "real-locks");
    let locks = &rec.configs[0].repetitions[0].locks;
    let names: Vec<(&str, &str)> = locks
        .iter()
        .map(|l| (l.name.as_str(), l.kind.as_str()))
        .collect();
    assert_eq!(names, [("spinlock", "spin"), ("mutex", "sleep")]);
    for l in locks {
        assert_eq!(l.acquisitions, 4000, "{l:?}");
        // Each holds it for its 1 µs critical section: a compute that short is a loop
        // calibrated when the run started (crate schedlab-real, `compute`), which runs faster
        // than calibrated when the machine got quieter since (seen on a loaded 2-CPU runner:
        // 0.93 µs a hold), so the bound leaves a quarter for the calibration's error.
        assert!(l.hold_ns >= 4000 * 750, "{l:?}");
        // One holder at a time: the holds never add up to more than the run.
        assert!(l.hold_ns <= l.elapsed_ns, "{l:?}");
        assert!(l.waited <= l.acquisitions && l.elapsed_ns > 0, "{l:?}");
    }
    assert_eq!(locks[1].spin_ns, 0);
}

/// A sweep of one key that is not a number (`--vary policy=...`, issue #19's pools sweep) is
/// drawn with a point per value, labelled with the values.
#[test]
fn a_sweep_of_one_non_numeric_key_is_plotted_a_point_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("pools.svg");
    let out = schedlab()
        .args([
            "sweep",
            "build",
            "--backend",
            "sim",
            "--cpus",
            "4",
            "--jobs",
            "4",
            "--vary",
            "policy=linux24-mq:pools=4,balance=0,idle=pool,linux24-mq:pools=4,balance=1,idle=all",
            "--runs",
            "1",
            "-q",
            "--plot",
            svg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "not an SVG");
    assert!(
        text.contains("balance=0,idle=pool") && text.contains("balance=1,idle=all"),
        "each value labels its point"
    );
}

/// A default that follows the CPU count (interbench's load threads: one per CPU, as the
/// original) follows the simulated machine's `--cpus` or `--topology`, not the host's: the same
/// command simulates the same thing on every host.
#[test]
fn cpu_count_defaults_follow_the_simulated_machine() {
    for (machine, want) in [
        (&["--cpus", "8"][..], "load_threads=8"),
        (&["--topology", "2s:3c:1t"][..], "load_threads=6"),
        (
            &["--cpus", "8", "--load-threads", "3"][..],
            "load_threads=3",
        ),
    ] {
        let mut args = vec!["check", "interbench", "--backend", "sim", "--loads", "burn"];
        args.extend_from_slice(machine);
        let out = succeeds(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(want), "{machine:?}: want {want} in\n{text}");
    }
}

/// `sweep --policy A,B` (each policy with its own parameters) varies the policy, as
/// `--vary policy=A,B` does; `run` takes one policy and says so; both forms at once are refused.
#[test]
fn a_policy_list_is_a_sweep_over_policies() {
    let out = succeeds(&[
        "check",
        "yield",
        "--backend",
        "sim",
        "--policy",
        "o1:threshold=0,o1:threshold=40,bsd4:preemption=0,ipiwakeup=0",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "configurations 12",
        "policy=o1:threshold=0",
        "policy=o1:threshold=40",
        "policy=bsd4:preemption=0,ipiwakeup=0",
    ] {
        assert!(text.contains(want), "want {want} in\n{text}");
    }
    for (args, want) in [
        (
            &["run", "yield", "--backend", "sim", "--policy", "o1,cfs"][..],
            "`run` takes one",
        ),
        (
            &[
                "sweep",
                "yield",
                "--backend",
                "sim",
                "--policy",
                "o1,cfs",
                "--vary",
                "policy=ule",
            ][..],
            "give one of them",
        ),
    ] {
        let out = schedlab().args(args).output().expect("run schedlab");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
    }
}
