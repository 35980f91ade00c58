//! rt-app's global `duration` stops every task, as rt-app's `__shutdown` does (cancels every
//! thread at the duration): a task blocked on a peer that has stopped ends there too, on both
//! backends — on the simulator exactly at the duration, on the real kernel within a second of
//! it — and rt-app's example shapes that never end by themselves (example4, mp3-short,
//! spreading-tasks) or whose tasks wait for each other (example5) end at their duration.

mod common;
use common::{is_root, metric, run_json, serial};
use std::path::{Path, PathBuf};

/// `waiter` suspends itself and `peer` resumes it once every 600 ms; at the duration (1 s)
/// `peer` is asleep and `waiter` blocked in its suspend: rt-app cancels both there. `bar_a`
/// waits at a barrier for `bar_b`, which passes it once and ends; `holder` takes `m` and waits
/// on `q` (releasing `m`), which nobody signals, while `taker` waits for `m` then `q` behind it.
const BLOCKED: &str = r#"{
  "global": { "duration": 1 },
  "tasks": {
    "peer": { "loop": -1, "run": 1000, "sleep": 600000, "resume": "waiter" },
    "waiter": { "loop": -1, "suspend": "waiter", "run": 1000 },
    "bar_a": { "loop": -1, "run": 1000, "barrier": "bar", "sleep": 10000 },
    "bar_b": { "loop": 1, "run": 1000, "barrier": "bar" },
    "holder": { "loop": -1, "lock": "m", "wait": { "ref": "q", "mutex": "m" }, "unlock": "m" },
    "taker": { "loop": -1, "lock": "m", "run": 1000, "wait": { "ref": "q", "mutex": "m" }, "unlock": "m" }
  }
}
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_task_blocked_on_a_stopped_peer_ends_at_the_duration_on_the_simulator() {
    let dir = common::temp_dir("rtapp-duration", "sim");
    let file = write(dir.path(), "blocked.json", BLOCKED);
    let f = file.to_str().unwrap();
    let rec = run_json(
        &["run", f, "--backend", "sim", "--cpus", "2", "--runs", "1"],
        "rtapp-duration-sim",
    );
    // At the duration: the waits are cut at 1 s; the run ends a few simulated µs later, when the
    // cut tasks have been woken and have ended (measured 4.7 µs past it), never a pass later.
    let time = metric(&rec, 0, 0, "time");
    assert!((1.0..1.000_05).contains(&time), "{time} s");
    // The waiter was resumed once (at 0.6 s), and its second pass was cut: one pass counted.
    assert_eq!(metric(&rec, 0, 0, "waiter.loops"), 1.0);
    assert_eq!(metric(&rec, 0, 0, "peer.loops"), 1.0);
    // bar_b passed the barrier once with bar_a; bar_a's second wait was cut.
    assert_eq!(metric(&rec, 0, 0, "bar_a.loops"), 1.0);
    assert_eq!(metric(&rec, 0, 0, "bar_b.loops"), 1.0);
    assert_eq!(metric(&rec, 0, 0, "holder.loops"), 0.0);
}

#[test]
fn a_task_blocked_on_a_stopped_peer_ends_within_a_second_of_the_duration_on_the_real_kernel() {
    let _turn = serial();
    let dir = common::temp_dir("rtapp-duration", "real");
    let file = write(dir.path(), "blocked.json", BLOCKED);
    let f = file.to_str().unwrap();
    let rec = run_json(&["run", f, "--runs", "1"], "rtapp-duration-real");
    let time = metric(&rec, 0, 0, "time");
    assert!((1.0..2.0).contains(&time), "the run took {time} s");
    assert_eq!(metric(&rec, 0, 0, "holder.loops"), 0.0);
    assert!(metric(&rec, 0, 0, "bar_b.loops") == 1.0);
}

/// rt-app's example shapes: the package's own files where installed, and the shapes written
/// for the tests (`crates/schedlab-script/tests/rtapp/upstream/`), with their duration set to
/// `secs` (added to a file without one).
fn examples(secs: u32) -> Vec<(String, String)> {
    let ours =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../schedlab-script/tests/rtapp/upstream");
    let package = Path::new("/usr/share/doc/rt-app/examples");
    let mut out = Vec::new();
    for (dir, tag) in [(ours.as_path(), "shape"), (package, "package")] {
        for name in [
            "example4",
            "example5",
            "mp3-short",
            "spreading-tasks",
            "tutorial/example4",
            "tutorial/example5",
        ] {
            let Ok(text) = std::fs::read_to_string(dir.join(format!("{name}.json"))) else {
                continue;
            };
            out.push((format!("{tag} {name}"), with_duration(&text, secs)));
        }
    }
    assert!(out.len() >= 4, "the test's own shapes are there");
    out
}

/// `text` with its global `"duration"` set to `secs`, or a `global` of that duration added
/// before its first key (the files have no `global` then).
fn with_duration(text: &str, secs: u32) -> String {
    match text.find("\"duration\"") {
        Some(at) => {
            let colon = at + text[at..].find(':').unwrap() + 1;
            let digits = text[colon..]
                .find(|c: char| c.is_ascii_digit() || c == '-')
                .unwrap();
            let start = colon + digits;
            let len = text[start..]
                .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap();
            format!("{}{secs}{}", &text[..start], &text[start + len..])
        }
        None => {
            let brace = text.find('{').unwrap() + 1;
            format!(
                "{} \"global\": {{ \"duration\": {secs} }},{}",
                &text[..brace],
                &text[brace..]
            )
        }
    }
}

#[test]
fn rt_apps_example_shapes_end_at_their_duration_on_the_simulator() {
    let dir = common::temp_dir("rtapp-duration", "examples-sim");
    for (name, text) in examples(2) {
        let file = write(dir.path(), "example.json", &text);
        let f = file.to_str().unwrap();
        let rec = run_json(
            &["run", f, "--backend", "sim", "--cpus", "2", "--runs", "1"],
            "rtapp-duration-examples",
        );
        let time = metric(&rec, 0, 0, "time");
        // example5's tasks may all end before it; the others loop until the end.
        if name.ends_with("example5") {
            assert!(time <= 2.0, "{name}: {time} s");
        } else {
            // The end wakes and ends the blocked tasks: a few µs past it (2.3 µs for example4).
            assert!((2.0..2.000_05).contains(&time), "{name}: {time} s");
        }
    }
}

#[test]
fn rt_apps_example_shapes_end_at_their_duration_on_the_real_kernel() {
    if !is_root() {
        eprintln!("skipped: the examples' negative nice values need root (run the tests as root)");
        return;
    }
    let _turn = serial();
    let dir = common::temp_dir("rtapp-duration", "examples-real");
    for (name, text) in examples(1) {
        let file = write(dir.path(), "example.json", &text);
        let f = file.to_str().unwrap();
        let rec = run_json(&["run", f, "--runs", "1"], "rtapp-duration-examples-real");
        let time = metric(&rec, 0, 0, "time");
        assert!(time < 2.0, "{name}: the run took {time} s");
        if !name.ends_with("example5") {
            assert!(time >= 1.0, "{name}: the run took {time} s");
        }
    }
}

/// Every rt-app example shape, on every simulated policy (3 CPUs: example8 names CPU 2): it runs
/// to its duration, or is refused before anything runs with an error at its place in the file
/// (a policy without a scheduling class the file asks for, a file rt-app refuses too). Runs on
/// the policies where it loads, the others refused: no panic, no run that ends elsewhere.
#[test]
fn every_example_shape_runs_or_is_refused_on_every_simulated_policy() {
    let dir = common::temp_dir("rtapp-duration", "policies");
    let ours =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../schedlab-script/tests/rtapp/upstream");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&ours)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 16, "{files:?}");
    let list = String::from_utf8(common::succeeds(&["list"]).stdout).unwrap();
    let policies: Vec<&str> = (list.lines())
        .skip_while(|l| !l.starts_with("SIMULATED POLICIES"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(policies.len() >= 9, "{policies:?}");
    let (mut ran, mut refused) = (Vec::new(), Vec::new());
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let file = write(
            dir.path(),
            name,
            &with_duration(&std::fs::read_to_string(path).unwrap(), 1),
        );
        let f = file.to_str().unwrap();
        for policy in &policies {
            let json = dir.path().join("r.json");
            let out = common::schedlab()
                .args(["run", f, "--backend", "sim", "--cpus", "3", "--runs", "1"])
                .args(["--policy", policy, "--quiet", "--json"])
                .arg(&json)
                .output()
                .unwrap();
            let err = common::stderr(&out);
            assert!(!err.contains("panicked"), "{name} on {policy}: {err}");
            if out.status.success() {
                let time = metric(&common::read_record(&json), 0, 0, "time");
                // example5's tasks may all end before the duration; the rest end at it, or
                // when a `run` in progress there ends (rt-app's loop is no cancellation
                // point): up to 100 ms past it is allowed.
                assert!(time <= 1.1, "{name} on {policy}: {time} s");
                ran.push(format!("{name}/{policy}"));
            } else {
                assert!(
                    err.contains(&format!("{name}:")) && err.contains("error"),
                    "{name} on {policy}: refused, but not at a place in the file:\n{err}"
                );
                refused.push(format!("{name}/{policy}"));
            }
        }
    }
    println!(
        "ran {}: {ran:?}\nrefused {}: {refused:?}",
        ran.len(),
        refused.len()
    );
    // Every shape but video-short (rt-app refuses it too) loads and runs on some policy.
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        if name != "video-short.json" {
            assert!(
                ran.iter().any(|r| r.starts_with(&format!("{name}/"))),
                "{name} ran on no simulated policy; refused: {refused:?}"
            );
        }
    }
}
