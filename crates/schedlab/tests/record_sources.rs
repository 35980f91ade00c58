//! `schedlab record --source`: the header names the source used; `auto` takes BPF where it
//! loads and falls back to tracefs where it does not (forced here by taking the BPF
//! capabilities out of the process's bounding set with setpriv), saying why; `bpf` fails there
//! instead, naming the capability. Skipped without root.

mod common;
use common::{is_root, schedlab, serial, temp_dir};
use std::process::Command;

/// Record a short `sleep` with `args` (and `prefix` before schedlab, e.g. setpriv); stderr and
/// the file's text ("" when nothing was written).
fn record(prefix: &[&str], env: Option<(&str, &str)>, args: &[&str]) -> (bool, String, String) {
    let d = temp_dir("record-sources", "sleep");
    let file = d.path().join("s.toml");
    let bin = env!("CARGO_BIN_EXE_schedlab");
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(bin);
            c
        }
        None => schedlab(),
    };
    cmd.env_remove("SCHEDLAB_BPF");
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = cmd
        .arg("record")
        .args(args)
        .args(["-o", file.to_str().unwrap(), "--", "sleep", "0.05"])
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        text,
    )
}

const VIA_BPF: &str = "# Recorded through BPF";
const VIA_TRACEFS: &str = "# Recorded through a tracefs instance";

#[test]
fn the_header_names_the_source_and_auto_falls_back() {
    if !is_root() {
        eprintln!("skipped: recording needs root (BPF or tracefs); run `sudo -E cargo test -p schedlab --test record_sources`");
        return;
    }
    let _turn = serial();
    let (ok, err, text) = record(&[], None, &["--source", "tracefs"]);
    assert!(ok, "{err}");
    assert!(text.contains(VIA_TRACEFS), "{text}");
    let (ok, err, text) = record(&[], None, &["--source", "bpf"]);
    if !ok {
        eprintln!("skipped: the BPF recorder does not load here ({err})");
        return;
    }
    assert!(text.contains(VIA_BPF), "{text}");
    let (ok, err, text) = record(&[], None, &[]);
    assert!(
        ok && text.contains(VIA_BPF),
        "auto where BPF loads: {err}\n{text}"
    );
    let (ok, err, text) = record(&[], Some(("SCHEDLAB_BPF", "off")), &[]);
    assert!(
        ok && text.contains(VIA_TRACEFS),
        "SCHEDLAB_BPF=off: {err}\n{text}"
    );

    // Without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN the programs cannot load.
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!(
            "skipped: the forced fallback needs setpriv (install: apt-get install util-linux)"
        );
        return;
    }
    let drop = [
        "setpriv",
        "--bounding-set",
        "-bpf,-perfmon,-sys_admin",
        "--inh-caps",
        "-all",
    ];
    let (ok, err, _) = record(&drop, None, &["--source", "bpf"]);
    assert!(!ok, "BPF loaded without its capabilities: {err}");
    assert!(
        err.contains("--source bpf:") && err.contains("CAP_BPF"),
        "{err}"
    );
    let (ok, err, text) = record(&drop, None, &["--source", "auto"]);
    assert!(err.contains("recording through tracefs instead"), "{err}");
    if ok {
        assert!(text.contains(VIA_TRACEFS), "{text}");
    } else {
        // tracefs may need CAP_SYS_ADMIN too (to mount it where it is not mounted).
        eprintln!("the fallback's tracefs could not run without CAP_SYS_ADMIN either: {err}");
    }
}
