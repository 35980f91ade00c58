//! Which source the real backend's wakeup counters come from: the in-kernel BPF counters by
//! default, the tracefs replay when they are turned off (`SCHEDLAB_BPF=off`) or cannot load,
//! and a clear error when a source that was asked for cannot be had. The record names the
//! source; the counts of both agree on a ping-pong (schedlab-real's tests/bpf.rs compares them
//! on the same repetitions).

mod common;

use common::{is_root, serial};
use serde_json::Value;
use std::process::{Command, Output};

/// `schedlab run pingpong` (a short one) with `extra`, `SCHEDLAB_BPF` set to `bpf` (or unset).
fn pingpong(extra: &[&str], bpf: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_schedlab"));
    cmd.args([
        "run", "pingpong", "--loops", "2000", "--runs", "1", "--quiet",
    ])
    .args(extra);
    cmd.env_remove("SCHEDLAB_BPF");
    if let Some(v) = bpf {
        cmd.env("SCHEDLAB_BPF", v);
    }
    cmd.output().expect("run schedlab")
}

/// The record of a successful run with `--json -`, and its wakeup counters' source.
fn record(bpf: Option<&str>, extra: &[&str]) -> (Value, String) {
    let mut args = vec!["--json", "-"];
    args.extend_from_slice(extra);
    let out = common::succeeded(&args, pingpong(&args, bpf));
    let rec: Value = serde_json::from_slice(&out.stdout).expect("a JSON record on stdout");
    let source = rec["configs"][0]["counter_sources"]["wakeups"]
        .as_str()
        .expect("the record names the wakeup source")
        .to_string();
    (rec, source)
}

#[test]
fn the_default_source_is_in_the_kernel_and_falls_back_to_tracefs() {
    let _one = serial();
    if !is_root() {
        eprintln!("skipped: the counter sources need root (CAP_BPF, CAP_PERFMON, tracefs); run the tests as root");
        return;
    }
    let (rec, source) = record(None, &[]);
    if !source.starts_with("BPF") {
        // The kernel refused the program (no BTF, another architecture): the fallback is used,
        // and the record says why.
        let why = &rec["backend"]["details"]["wakeup_counters_bpf"];
        eprintln!("skipped: the in-kernel counters did not load here ({why}); source {source}");
        assert!(
            why.as_str().is_some_and(|w| w.starts_with("unavailable")),
            "{rec}"
        );
        return;
    }
    let total = &rec["configs"][0]["repetitions"][0]["counters"]["total"];
    let wakeups = total["wakeups"].as_u64().expect("wakeups counted");
    assert!(
        (2_000..=4_010).contains(&wakeups),
        "2,000 round trips wake each side about once each: {total}"
    );
    assert!(total["wakeup_preemptions"].as_u64().unwrap() <= wakeups);
    assert!(total["preemptions_at_return"].as_u64().is_some(), "{total}");

    // Turned off: the tracefs replay, and the record says why the default was not used.
    let (rec, source) = record(Some("off"), &[]);
    assert!(source.starts_with("tracefs"), "{source}");
    assert_eq!(
        rec["backend"]["details"]["wakeup_counters_bpf"],
        "unavailable: turned off by SCHEDLAB_BPF=off"
    );
    // Asked for by name: that source.
    let (_, source) = record(None, &["--counters", "trace"]);
    assert!(source.starts_with("tracefs"), "{source}");
    let (_, source) = record(Some("off"), &["--counters", "proc"]);
    assert_eq!(source, "unavailable: disabled (--counters proc)");
}

#[test]
fn a_source_that_cannot_be_had_is_an_error_before_anything_runs() {
    let _one = serial();
    let out = pingpong(&["--counters", "bpf"], Some("off"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("--counters bpf: turned off by SCHEDLAB_BPF=off"),
        "{err}"
    );
    assert!(!err.contains("run 1/1"), "nothing may run: {err}");
    // A value of the switch that means nothing is refused, naming what is accepted.
    let out = pingpong(&[], Some("maybe"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("SCHEDLAB_BPF=\"maybe\"") && err.contains("accepted: on, off"),
        "{err}"
    );
}

/// Without the privilege, `--counters bpf` says which capabilities it needs (run as nobody
/// through util-linux's setpriv).
#[test]
fn without_privilege_the_error_names_the_capabilities() {
    let _one = serial();
    if !is_root() {
        eprintln!("skipped: dropping privileges needs root");
        return;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "run",
            "pingpong",
            "--loops",
            "100",
            "--runs",
            "1",
            "--counters",
            "bpf",
        ])
        .env_remove("SCHEDLAB_BPF")
        .output();
    let out = match out {
        Ok(o) if !String::from_utf8_lossy(&o.stderr).contains("Permission denied") => o,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            eprintln!("skipped: user nobody cannot run the test binary here ({err})");
            return;
        }
        Err(e) => {
            eprintln!("skipped: setpriv not found ({e}; apt-get install util-linux)");
            return;
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--counters bpf:") && err.contains("CAP_BPF and CAP_PERFMON"),
        "{err}"
    );
    assert!(
        err.matches("failed to create map").count() <= 1,
        "the error says it once: {err}"
    );
}
