//! `schedlab calibrate` through the built binary. Its probes time this machine, so this test
//! has a test binary of its own: cargo runs test binaries one after another, and no other test
//! then competes with the probes for the CPUs (beside the other CLI tests, on a loaded two-CPU
//! machine, a derived cost could come out at 0).

mod common;

use common::{metric, run_json, succeeds};

/// `calibrate --quick` measures every key it can pin on this machine (a positive value, its
/// interval and method), keeps the base profile's value for the others and says what came out,
/// and its file is a profile the simulator takes — one that reproduces the probes it was derived
/// from: a same-CPU pipe ping-pong, simulated on one CPU with the calibrated costs, takes what
/// the probe measured (within 25 %: the simulator adds the copies and its jitter, and the probe's
/// noise is a VM's); so does the same-CPU ping-pong over two loopback TCP connections, simulated
/// over TCP (`net_msg`, `net_wait`), and, when the cross-CPU keys were pinned, the ping-pong
/// with the threads on two CPUs (`bounce`, `ipi_send`, `ipi`, `idle_exit`).
#[test]
fn calibrate_writes_a_profile_that_reproduces_its_own_probe() {
    // Removed when dropped, also when an assertion fails.
    let guard = tempfile::Builder::new()
        .prefix("schedlab-test-cal-")
        .suffix(".toml")
        .tempfile()
        .unwrap();
    let out = guard.path().to_path_buf();
    // The guard made the file: replacing it needs --force.
    let o = succeeds(&[
        "calibrate",
        "--quick",
        "--force",
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let file = std::fs::read_to_string(&out).unwrap();
    let table: toml::Table = file.parse().unwrap();
    let costs = table["costs"].as_table().unwrap();
    let measured = table["measured"].as_table().unwrap();
    let ns = |k: &str| -> f64 {
        let v = costs[k].as_str().unwrap();
        v.trim_end_matches("ns")
            .parse()
            .unwrap_or_else(|_| panic!("{k} = {v}"))
    };
    // Other runnable tasks (a parallel build) inflate the probes unevenly: calibrate says so,
    // and the reproduction of the probes is not checked then (the keys, the pinning and the
    // file's shape still are).
    let loaded = text
        .lines()
        .find(|l| l.starts_with("warning:") && l.contains("other runnable task"));
    if loaded.is_some() {
        assert!(
            table["note"]
                .as_str()
                .unwrap()
                .contains("other runnable task"),
            "the file records the warning: {file}"
        );
    }
    let not = table
        .get("not_measured")
        .and_then(|t| t.as_table())
        .cloned()
        .unwrap_or_default();
    // Every time key is either measured — pinned: above 0, with its interval and method — or
    // kept at the base profile's value with the reason; none is written as 0.
    for key in [
        "syscall",
        "msg",
        "copy_per_kib",
        "net_msg",
        // A TCP read's ACK, half a write + read less a read that leaves data queued: ~2.5 µs.
        "net_ack",
        "sock_msg",
        "sock_queue",
        "rq_lock",
        "wakeup",
        "switch",
        "net_wait",
        "bounce",
        "ipi_send",
        "ipi",
        "idle_exit",
        "tick",
        "migration",
        "mm_switch",
        "page_touch",
    ] {
        if costs.contains_key(key) {
            assert!(ns(key) > 0.0, "{key} written as 0: {file}");
            let m = measured[key].as_table().unwrap();
            assert!(
                m["method"]
                    .as_str()
                    .unwrap()
                    .contains("rounds, 95 % interval"),
                "{key}: {file}"
            );
        } else {
            let why = not[key].as_str().unwrap_or_else(|| panic!("{key}: {file}"));
            assert!(why.contains("could not be pinned"), "{key}: {why}");
            assert!(why.contains("came out"), "{key}: {why}");
        }
    }
    assert!(
        costs.contains_key("hz")
            && costs.contains_key("memory")
            && costs.contains_key("sock_slots"),
        "{file}"
    );
    for key in ["io_latency", "io_per_kib"] {
        assert!(
            costs.contains_key(key) || not.contains_key(key),
            "{key}: {file}"
        );
    }
    if let Some(w) = loaded {
        eprintln!(
            "skipped: the calibrated values and the probe's reproduction (the machine is loaded: {w})"
        );
        return;
    }
    let cross = ["ipi", "idle_exit", "ipi_send", "bounce"]
        .iter()
        .all(|k| costs.contains_key(*k));
    let mut checks = vec![
        (
            "1-byte ping-pong round trip over two pipes, both threads on one CPU",
            "pipe",
            "1",
        ),
        (
            "1-byte ping-pong round trip over two loopback TCP connections (TCP_NODELAY), both threads on one CPU",
            "tcp",
            "1",
        ),
    ];
    if cross {
        checks.push((
            "1-byte ping-pong round trip over two pipes, threads on two CPUs",
            "pipe",
            "2",
        ));
    }
    for (probe, transport, cpus) in checks {
        // The probe's round trip, in the printed table.
        let probe_ns: f64 = text
            .lines()
            .find(|l| l.starts_with(probe))
            .and_then(|l| l.split_whitespace().rev().nth(2))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no probe '{probe}' in\n{text}"));
        let rec = run_json(
            &[
                "run",
                "pingpong",
                "--loops",
                "2000",
                "--transport",
                transport,
                "--runs",
                "1",
                "--backend",
                "sim",
                "--cpus",
                cpus,
                "--group",
                "ping:cpus=0",
                "--group",
                &format!("pong:cpus={}", cpus.parse::<usize>().unwrap() - 1),
                "--profile",
                out.to_str().unwrap(),
            ],
            &format!("cal-pp-{transport}-{cpus}"),
        );
        let sim_ns = metric(&rec, 0, 0, "us_per_rt") * 1000.0;
        assert!(
            (sim_ns - probe_ns).abs() <= 0.25 * probe_ns,
            "{transport} on {cpus} CPU(s): simulated {sim_ns} ns per round trip, measured {probe_ns} ns\n{file}"
        );
    }
    drop(guard);
}
