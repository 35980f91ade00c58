//! Issue 38, part 3 and 5: inputs bounded before anything starts. `check` is linear in the
//! size of a workload file (100,000 groups, 20,000 rt-app tasks); a record is read without
//! holding its whole text (an unknown key of 50 MB costs no memory); `compare` refuses values
//! no measurement can have, naming the file and the field. Each runs the built binary.

mod common;

use common::schedlab;
use serde_json::Value;
use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("schedlab-bounds-test-")
        .tempdir()
        .unwrap()
}

/// Run `schedlab args` in `dir`: its exit status, stderr, CPU time (user and system) and peak
/// resident set (KiB), both from the kernel's accounting of this one child. CPU time, not wall
/// time: a check that took 1.5 s of CPU took 14 s of wall time beside a loaded machine's
/// compilers, and the bound is about the work, not the machine's load.
// The child is reaped by wait4, which also gives its own resource use (std's wait does not).
#[allow(clippy::zombie_processes)]
fn measured(dir: &Path, args: &[&str]) -> (Option<i32>, String, Duration, i64) {
    let err_path = dir.join("stderr.txt");
    let child = schedlab()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run schedlab");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for this child only.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, by its pid, with valid pointers.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    let cpu = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu_time = cpu(usage.ru_utime) + cpu(usage.ru_stime);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    (code, stderr, cpu_time, usage.ru_maxrss)
}

#[test]
fn check_of_100000_groups_is_linear() {
    let tmp = temp_dir();
    let file = tmp.path().join("many.toml");
    // Each group with a knob of its own: their places in the file are looked up too.
    let mut text = String::from("name = \"many\"\n");
    for i in 0..100_000 {
        text.push_str(&format!("[groups.g{i}]\nnice=5\nsteps=[\"yield\"]\n"));
    }
    std::fs::write(&file, text).unwrap();
    let (code, err, took, _) = measured(tmp.path(), &["check", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    // Quadratic in the groups, it took 20 s and more; linear, well under 2 s of CPU.
    assert!(
        took < Duration::from_secs(10),
        "check of 100,000 groups took {took:?} of CPU"
    );
}

#[test]
fn check_of_20000_rtapp_tasks_is_linear() {
    let tmp = temp_dir();
    let file = tmp.path().join("many.json");
    let tasks: Vec<String> = (0..20_000)
        .map(|i| format!("\"t{i}\": {{\"loop\": 1, \"run\": 100}}"))
        .collect();
    let text = format!(
        "{{\"global\": {{\"duration\": 1}}, \"tasks\": {{{}}}}}",
        tasks.join(", ")
    );
    std::fs::write(&file, text).unwrap();
    let (code, err, took, _) = measured(tmp.path(), &["check", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    // Quadratic in the tasks' metrics, it took 479 s; linear, about a second of CPU.
    assert!(
        took < Duration::from_secs(10),
        "check of 20,000 rt-app tasks took {took:?} of CPU"
    );
}

/// A record of three repetitions of a simulated run, written by schedlab in `dir`.
fn record(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let args = [
        "run",
        "yield",
        "--backend",
        "sim",
        "--cpus",
        "2",
        "--duration",
        "10ms",
        "--runs",
        "3",
        "--json",
        path.to_str().unwrap(),
    ];
    let out = schedlab()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run schedlab");
    common::succeeded_in(dir, &args, out);
    path
}

/// `path`'s record with the first repetition's `metric` set to `value`.
fn edit_metric(path: &Path, metric: &str, value: Value) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["configs"][0]["repetitions"][0]["metrics"][metric] = value;
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn a_record_s_unknown_key_is_skipped_as_it_is_read() {
    let tmp = temp_dir();
    let a = record(tmp.path(), "a.json");
    let b = record(tmp.path(), "b.json");
    // 50 MB of an unknown key's array: read into a document tree first, it took 12 times its
    // size (2.3 GB for 200 MB).
    // Written in pieces: the child's ru_maxrss starts from this process's high-water mark
    // (fork copies it), so 100 MB of strings here would be counted as compare's.
    let text = std::fs::read_to_string(&b).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(&b).unwrap());
    f.write_all(b"{\"junk\": [").unwrap();
    let chunk = "1.5,".repeat(12_500);
    for _ in 0..1000 {
        f.write_all(chunk.as_bytes()).unwrap();
    }
    f.write_all(b"1.5], ").unwrap();
    f.write_all(&text.trim_start().as_bytes()[1..]).unwrap();
    f.into_inner().unwrap();
    let (code, err, _, peak_kib) = measured(
        tmp.path(),
        &["compare", a.to_str().unwrap(), b.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        peak_kib < 100 * 1024,
        "compare of a 50 MB record peaked at {} MiB",
        peak_kib / 1024
    );
}

#[test]
fn compare_refuses_impossible_values_naming_file_and_field() {
    let tmp = temp_dir();
    let a = record(tmp.path(), "a.json");
    let b = record(tmp.path(), "b.json");
    let metric = {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
        v["metrics"][0]["name"].as_str().unwrap().to_string()
    };
    let args = ["compare", a.to_str().unwrap(), b.to_str().unwrap()];
    for (value, words) in [
        (serde_json::json!(-1.0), "which cannot be negative"),
        (
            serde_json::json!(1e308),
            "beyond what any measurement reaches",
        ),
    ] {
        edit_metric(&b, &metric, value);
        let (code, err, _, _) = measured(tmp.path(), &args);
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "{}: configuration 'threads=1', repetition 1: has {metric} = ",
                b.display()
            )) && err.contains(words),
            "{err}"
        );
        assert!(!err.contains("inf"), "{err}");
    }
    // A rate, in the first record given.
    let c = record(tmp.path(), "c.json");
    edit_metric(&c, "yields_per_s", serde_json::json!(-0.5));
    let args = ["compare", a.to_str().unwrap(), b.to_str().unwrap()];
    let args_c = ["compare", c.to_str().unwrap(), a.to_str().unwrap()];
    let (code, err, _, _) = measured(tmp.path(), &args_c);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("{}: configuration 'threads=1', repetition 1: has yields_per_s = -0.5, which cannot be negative (a rate in yields/s)", c.display())),
        "{err}"
    );
    // Intact, the records compare.
    edit_metric(&b, &metric, serde_json::json!(2.0));
    let (code, err, _, _) = measured(tmp.path(), &args);
    assert_eq!(code, Some(0), "{err}");
}
