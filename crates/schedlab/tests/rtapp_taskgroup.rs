//! rt-app's `taskgroup` (upstream's tutorial example10/11): on the real kernel, CPU cgroups
//! made for the run below the cgroup schedlab runs in, a thread moved at its phase boundaries,
//! every cgroup removed at the end and on an interrupt; on the simulator, one warning naming
//! the policy, which has no group scheduling.

mod common;
use common::{schedlab, stderr, Scratch};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A thread in `/ga` for the whole run, and one that moves every 100 ms: into `/ga/gb`, stays
/// there a phase, then back to `/` (the cgroup schedlab runs in).
const FILE: &str = r#"{
  "global": { "duration": DURATION },
  "tasks": {
    "grouped": { "loop": -1, "run": 1000, "sleep": 20000, "taskgroup": "/ga" },
    "hopper": { "loop": -1, "phases": {
        "inner": { "run": 1000, "sleep": 100000, "taskgroup": "/ga/gb" },
        "same": { "run": 1000, "sleep": 100000 },
        "root": { "run": 1000, "sleep": 100000, "taskgroup": "/" } } } } }"#;

/// The directory of this process's cgroup where the cpu controller is (v1 or v2), if the test
/// can make cgroups there; why not otherwise.
fn cpu_cgroup() -> Result<PathBuf, String> {
    if !common::is_root() {
        return Err("needs root to create CPU cgroups".into());
    }
    let h = schedlab_real::taskgroup::hierarchy().map_err(|e| e.to_string())?;
    Ok(h.own)
}

/// The run's private directory, once it exists.
fn private_dir(own: &Path, pid: u32) -> PathBuf {
    own.join(format!("schedlab-{pid}-taskgroups"))
}

/// Thread ids listed in a cgroup (v1 `tasks`, v2 `cgroup.threads`).
fn threads(dir: &Path) -> Vec<i32> {
    let text = std::fs::read_to_string(dir.join("tasks"))
        .or_else(|_| std::fs::read_to_string(dir.join("cgroup.threads")))
        .unwrap_or_default();
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// The threads of process `pid`.
fn threads_of(pid: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    (entries.flatten())
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// A real run of [`FILE`] for `seconds`, started in a scratch directory of its own, with the
/// test's turn held; `None` (after saying `skipped:`) where CPU cgroups cannot be made.
struct Started {
    own: PathBuf,
    _turn: std::sync::MutexGuard<'static, ()>,
    _s: Scratch,
    child: std::process::Child,
    pid: u32,
    base: PathBuf,
}

fn start(name: &str, seconds: u32) -> Option<Started> {
    let own = match cpu_cgroup() {
        Ok(d) => d,
        Err(why) => {
            println!(
                "skipped: {why} (install: a kernel with the cgroup cpu controller; run as root)"
            );
            return None;
        }
    };
    let turn = common::serial();
    let s = Scratch::new("rtapp", name);
    s.write("tg.json", &FILE.replace("DURATION", &seconds.to_string()));
    let child = schedlab()
        .current_dir(s.path())
        .args(["run", "tg.json", "--runs", "1", "--counters", "proc"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let base = private_dir(&own, pid);
    Some(Started {
        own,
        _turn: turn,
        _s: s,
        child,
        pid,
        base,
    })
}

#[test]
fn real_taskgroups_hold_their_threads_and_are_removed_at_the_end() {
    let Some(Started {
        own,
        _turn,
        _s,
        mut child,
        pid,
        base,
    }) = start("taskgroup", 2)
    else {
        return;
    };
    // What each cgroup held, polled every 5 ms for the run's 2 s (at most 1000 polls).
    let (mut in_ga, mut in_gb, mut gb_then_left, mut made) = (false, false, false, false);
    let started = Instant::now();
    let mut last_gb: Vec<i32> = Vec::new();
    for _ in 0..1000 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if base.is_dir() {
            made = true;
            let ours = threads_of(pid);
            in_ga |= threads(&base.join("ga")).iter().any(|t| ours.contains(t));
            let gb = threads(&base.join("ga/gb"));
            in_gb |= !gb.is_empty();
            // The hopper left /ga/gb for `/`, its own cgroup (after `same`, 100 ms later).
            if last_gb
                .iter()
                .any(|t| !gb.contains(t) && threads(&own).contains(t))
            {
                gb_then_left = true;
            }
            if !gb.is_empty() {
                last_gb = gb;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        made,
        "{} never appeared within {:?}",
        base.display(),
        started.elapsed()
    );
    assert!(in_ga, "no thread of the run was seen in /ga");
    assert!(in_gb, "no thread was seen in /ga/gb");
    assert!(
        gb_then_left,
        "the hopper was not seen moving from /ga/gb back to /"
    );
    assert!(!base.exists(), "{} left behind", base.display());
}

#[test]
fn an_interrupted_real_run_leaves_no_taskgroup_behind() {
    let Some(Started {
        own: _,
        _turn,
        _s,
        mut child,
        pid,
        base,
    }) = start("taskgroup-int", 30)
    else {
        return;
    };
    // Interrupted once its threads are in their taskgroups (at most 10 s of waiting).
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads(&base.join("ga")).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} never held a thread",
            base.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(!base.exists(), "{} left behind", base.display());
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists() || threads_of(pid).is_empty(),
        "the run's process is still there"
    );
}

/// No simulated policy has group scheduling: one warning per policy, naming it, and the run
/// goes on as if the tasks were in no taskgroup — the same results as without the key.
#[test]
fn simulated_taskgroups_warn_once_naming_the_policy_and_change_nothing() {
    let s = Scratch::new("rtapp", "taskgroup-sim");
    s.write("tg.json", &FILE.replace("DURATION", "1"));
    let without = FILE
        .replace("DURATION", "1")
        .replace(r#", "taskgroup": "/ga""#, "")
        .replace(r#", "taskgroup": "/ga/gb""#, "")
        .replace(r#", "taskgroup": "/""#, "");
    assert!(!without.contains("taskgroup"));
    s.write("plain.json", &without);
    let sim = [
        "--backend",
        "sim",
        "--policy",
        "cfs",
        "--cpus",
        "2",
        "--runs",
        "1",
    ];
    let run = |file: &str, json: &str| {
        let mut args = vec!["run", file, "--json", json];
        args.extend(sim);
        s.run(&args)
    };
    let out = run("tg.json", "tg-rec.json");
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("taskgroup=")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("simulated policy cfs") && warnings[0].contains("no group scheduling"),
        "{err}"
    );
    run("plain.json", "plain-rec.json");
    let metrics = |json: &str| {
        let rec = common::read_record(&s.join(json));
        serde_json::to_value(&rec.configs[0].repetitions[0].metrics).unwrap()
    };
    assert_eq!(metrics("tg-rec.json"), metrics("plain-rec.json"));
}

/// As rt-app refuses it (`check_taskgroup_policy_dep`): a taskgroup with a real-time policy.
#[test]
fn a_taskgroup_with_a_real_time_policy_is_refused_before_anything_runs() {
    let s = Scratch::new("rtapp", "taskgroup-rt");
    s.write(
        "rt.json",
        r#"{ "tasks": { "t": { "loop": 1, "policy": "SCHED_FIFO", "taskgroup": "/x", "run": 100 } } }"#,
    );
    let out = s.try_run(&["run", "rt.json", "--backend", "sim", "--runs", "1"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("taskgroup applies to policies other, batch and idle, not fifo"),
        "{err}"
    );
}
