//! The `web` workload run as a user runs it (issue 17): each built-in server serves SPECweb99's
//! mix with byte-exact responses over real TCP, a throttled server gives the conforming count
//! it must, the simulator runs the same bodies on several policies, and bad input is refused
//! before anything starts.

mod common;

use common::{schedlab, serial, temp_json};
use schedlab_workload::record::RunRecord;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Run `schedlab run web ARGS --runs 1`, and read its record.
fn run_web(args: &[&str], name: &str) -> RunRecord {
    let path = temp_json(name);
    let mut all = vec!["run", "web", "--runs", "1", "--quiet", "--json"];
    let p = path.to_str().unwrap().to_string();
    all.push(&p);
    all.extend_from_slice(args);
    common::succeeded(&all, schedlab().args(&all).output().expect("run schedlab"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    RunRecord::from_json(&text).unwrap()
}

/// Metric `name` of the first repetition of the first configuration.
fn metric(rec: &RunRecord, name: &str) -> f64 {
    common::metric(rec, 0, 0, name)
}

fn fails(args: &[&str]) -> String {
    let out: Output = schedlab().args(args).output().expect("run schedlab");
    assert!(!out.status.success(), "schedlab {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every built-in server serves four connections at the rated 400 kbit/s: each response was
/// checked byte for byte by its client (a wrong one fails the run), and all four conform.
#[test]
fn each_builtin_server_serves_the_mix_byte_exact() {
    let _s = serial();
    for server in ["prefork", "threads:4", "event:2"] {
        let rec = run_web(
            &[
                "--connections",
                "4",
                "--dirs",
                "2",
                "--duration",
                "3s",
                "--server",
                server,
            ],
            server,
        );
        assert_eq!(metric(&rec, "conforming"), 4.0, "{server}");
        assert!(metric(&rec, "req_per_s") > 4.0, "{server}");
        let kbps = metric(&rec, "kbps_mean");
        assert!(kbps > 320.0 && kbps <= 400.5, "{server}: {kbps} kbit/s");
    }
}

/// One prefork process for four connections serves one paced connection's keep-alive batch at
/// a time while the others wait: at most one connection conforms, and the median does not.
#[test]
fn a_throttled_server_gives_the_known_conforming_count() {
    let _s = serial();
    let rec = run_web(
        &[
            "--connections",
            "4",
            "--dirs",
            "2",
            "--duration",
            "4s",
            "--server",
            "prefork:1",
        ],
        "throttled",
    );
    assert!(
        metric(&rec, "conforming") <= 1.0,
        "{}",
        metric(&rec, "conforming")
    );
    let p50 = metric(&rec, "kbps_p50");
    assert!(
        p50 < 320.0,
        "median {p50} kbit/s for 4 connections sharing one server"
    );
    let mean = metric(&rec, "kbps_mean");
    assert!(
        mean > 20.0,
        "mean {mean} kbit/s: the one server hardly served"
    );
}

/// The simulator runs the same bodies, the per-connection client's and the event client's:
/// every policy serves the mix, and a seed gives the same numbers twice.
#[test]
fn the_simulator_runs_web_on_several_policies() {
    let cases = [
        ("connections", &["o1", "cfs", "ule", "linux24"][..]),
        ("event", &["o1", "cfs", "ule"][..]),
    ];
    for (client, policies) in cases {
        for &policy in policies {
            let args = [
                "--backend",
                "sim",
                "--policy",
                policy,
                "--cpus",
                "2",
                "--connections",
                "8",
                "--dirs",
                "2",
                "--duration",
                "3s",
                "--server",
                "prefork:4",
                "--client",
                client,
            ];
            let name = format!("sim-{client}-{policy}");
            let a = run_web(&args, &name);
            let b = run_web(&args, &name);
            assert_eq!(
                a.configs[0].repetitions[0].metrics, b.configs[0].repetitions[0].metrics,
                "{client} {policy}"
            );
            // Four processes for eight paced connections: each serves one of its two
            // connections at a time, so the mean is well under the rated 400 kbit/s (and with
            // a task per connection, not all conform).
            let mean = metric(&a, "kbps_mean");
            assert!(mean > 150.0 && mean < 300.0, "{client} {policy}: {mean}");
            if client == "connections" {
                let conforming = metric(&a, "conforming");
                assert!((1.0..8.0).contains(&conforming), "{policy}: {conforming}");
            }
        }
    }
}

/// The event client (`--client event:2`: two loops for four connections) keeps the
/// per-connection client's measurements: against each built-in server at the rated 400 kbit/s
/// every response is checked byte for byte and all four conform; one prefork process for the
/// four throttles them as it does the per-connection client's.
#[test]
fn the_event_client_serves_and_throttles_as_the_per_connection_client() {
    let _s = serial();
    for server in ["prefork", "threads:4", "event:2"] {
        let rec = run_web(
            &[
                "--connections",
                "4",
                "--dirs",
                "2",
                "--duration",
                "3s",
                "--server",
                server,
                "--client",
                "event:2",
            ],
            &format!("evc-{server}"),
        );
        let params = &rec.configs[0].params;
        assert_eq!(params["client"], "event:2", "{params:?}");
        assert_eq!(params["client-tasks"], "2", "{params:?}");
        assert_eq!(metric(&rec, "conforming"), 4.0, "{server}");
        let kbps = metric(&rec, "kbps_mean");
        assert!(kbps > 320.0 && kbps <= 400.5, "{server}: {kbps} kbit/s");
    }
    let rec = run_web(
        &[
            "--connections",
            "4",
            "--dirs",
            "2",
            "--duration",
            "4s",
            "--server",
            "prefork:1",
            "--client",
            "event",
        ],
        "evc-throttled",
    );
    assert!(metric(&rec, "conforming") <= 1.0);
    let p50 = metric(&rec, "kbps_p50");
    assert!(
        p50 < 320.0,
        "median {p50} kbit/s for 4 connections sharing one server"
    );
    assert!(metric(&rec, "kbps_mean") > 20.0);
}

#[test]
fn bad_input_is_refused_naming_the_value() {
    let e = fails(&["run", "web", "--client", "epoll"]);
    assert!(
        e.contains("'epoll'") && e.contains("connections, event"),
        "{e}"
    );
    let e = fails(&["run", "web", "--client", "event:0"]);
    assert!(e.contains("event:0") && e.contains("not a count"), "{e}");
    let e = fails(&["run", "web", "--server", "iis"]);
    assert!(e.contains("'iis'") && e.contains("prefork"), "{e}");
    let e = fails(&["run", "web", "--server", "threads:0"]);
    assert!(e.contains("threads:0"), "{e}");
    let e = fails(&[
        "run",
        "web",
        "--connections",
        "200",
        "--disk-budget",
        "100MiB",
    ]);
    assert!(e.contains("disk-budget") && e.contains("798.6 MB"), "{e}");
    // A pool larger than the connections is not bad input (find-max lowers the connections
    // below a pool's size): it runs one server task per connection.
    let args = [
        "check",
        "web",
        "--backend",
        "sim",
        "--connections",
        "4",
        "--server",
        "prefork:5",
    ];
    let out = common::succeeded(&args, schedlab().args(args).output().unwrap());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("server-tasks=4"), "{text}");
    let e = fails(&["run", "web", "--duration", "0s"]);
    assert!(e.contains("duration"), "{e}");
}

/// The open loop (`--rate`) sends on schedule and times from the scheduled send, with either
/// client (a task per connection, or two event loops): on the simulator, one prefork process
/// for four connections makes every connection's requests wait while it serves another's
/// keep-alive batch (about a second at 10 requests/s each), and that wait shows in the
/// latency; four processes serve each at once.
#[test]
fn the_open_loop_counts_latency_from_the_scheduled_send() {
    for client in ["connections", "event:2"] {
        let run = |server: &str| {
            run_web(
                &[
                    "--backend",
                    "sim",
                    "--connections",
                    "4",
                    "--dirs",
                    "2",
                    "--duration",
                    "5s",
                    "--rate",
                    "40",
                    "--server",
                    server,
                    "--client",
                    client,
                ],
                &format!("open-{client}-{server}"),
            )
        };
        let (one, four) = (run("prefork:1"), run("prefork:4"));
        for rec in [&one, &four] {
            let r = metric(rec, "req_per_s");
            assert!((r - 40.0).abs() < 1.0, "{client}: {r}");
        }
        let (slow, fast) = (metric(&one, "lat_p90"), metric(&four, "lat_p90"));
        assert!(slow > 300.0, "{client}: {slow}");
        assert!(fast < 5.0, "{client}: {fast}");
    }
    let e = fails(&["run", "web", "--rate", "-5"]);
    assert!(e.contains("rate") && e.contains("'-5'"), "{e}");
}

/// A web sweep prints seed 000's SPECweb99 table after its own.
#[test]
fn a_web_sweep_prints_seed_000s_table() {
    let args = [
        "sweep",
        "web",
        "--backend",
        "sim",
        "--cpus",
        "2",
        "--connections",
        "4",
        "--dirs",
        "2",
        "--duration",
        "2s",
        "--runs",
        "1",
        "--vary",
        "policy=o1:threshold=0,o1:threshold=40",
    ];
    let out = common::succeeded(&args, schedlab().args(args).output().unwrap());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("conforming connections") && text.contains("percent improvement"),
        "{text}"
    );
    assert!(
        text.contains("o1:threshold=40") && text.contains("baseline"),
        "{text}"
    );
}

/// The processes whose parent is `pid`, from /proc.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(format!("/proc/{child}/status")).unwrap_or_default();
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .and_then(|v| v.trim().parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// The temporary directories of process `pid` (`$TMPDIR/schedlab-<pid>-…`).
fn temp_dirs_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("schedlab-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// A run interrupted while its servers and clients run (and its file set is on disk) leaves no
/// process and no temporary file behind.
#[test]
fn an_interrupted_run_leaves_nothing_behind() {
    let _s = serial();
    let mut child = schedlab()
        .args([
            "run",
            "web",
            "--connections",
            "4",
            "--dirs",
            "2",
            "--duration",
            "3s",
            "--runs",
            "3",
            "--server",
            "prefork",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let tasks: Vec<(u32, u64)> = children(pid)
        .into_iter()
        .filter_map(|t| Some((t, start_time(t)?)))
        .collect();
    assert!(
        !tasks.is_empty(),
        "no server or client processes while running"
    );
    // The run's file set (written once for every repetition) and the repetition's directory.
    assert_eq!(
        temp_dirs_of(pid).len(),
        2,
        "the file set's and the repetition's directories while running"
    );
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait().unwrap();
    assert_eq!(temp_dirs_of(pid), Vec::<PathBuf>::new());
    for (t, started) in tasks {
        // The same pid with the same start time is the same process (not a reused pid).
        assert_ne!(
            start_time(t),
            Some(started),
            "task {t} of the interrupted run is still there"
        );
    }
}

/// When process `pid` started (field 22 of /proc/PID/stat, in clock ticks since boot).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}
