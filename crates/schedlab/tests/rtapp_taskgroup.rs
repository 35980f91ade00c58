//! rt-app's `taskgroup` (upstream's tutorial example10/11): on the real kernel, CPU cgroups
//! made for the run below the cgroup schedlab runs in, a thread moved at its phase boundaries,
//! every cgroup removed at the end and on an interrupt; on the simulator, one warning naming
//! the policy, which has no group scheduling.

mod common;
use common::{schedlab, stderr, Scratch};
use schedlab_real::taskgroup::{self, Choice, Hierarchy, Version, HIERARCHY_VAR};
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

/// The hierarchy a test runs on: `None`, the default choice (v1's cpu controller if there is
/// one, else v2); `Some(v)`, [`HIERARCHY_VAR`] set to `v` for the run.
type Chosen = Option<&'static str>;

/// The hierarchy `chosen` gives, if the test can make cgroups there; why not otherwise.
fn cgroup_for(chosen: Chosen) -> Result<Hierarchy, String> {
    if !common::is_root() {
        return Err("needs root to create cgroups".into());
    }
    let choice = Choice::parse(chosen.unwrap_or("")).map_err(|e| e.to_string())?;
    let h = taskgroup::hierarchy_chosen(choice).map_err(|e| e.to_string())?;
    let probe = h.own.join("cgroup.procs");
    let writable = std::fs::OpenOptions::new().write(true).open(&probe);
    if h.version == Version::V2 && writable.is_err() {
        return Err(format!("{} cannot be written", probe.display()));
    }
    Ok(h)
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

/// A v2 cgroup's type (`domain threaded`, `threaded`), empty once it is gone.
fn cgroup_type(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("cgroup.type"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A real run of [`FILE`] for `seconds`, started in a scratch directory of its own, with the
/// test's turn held; `None` (after saying `skipped:`) where the cgroups cannot be made.
struct Started {
    hierarchy: Hierarchy,
    _turn: std::sync::MutexGuard<'static, ()>,
    s: Scratch,
    child: std::process::Child,
    pid: u32,
    base: PathBuf,
}

impl Started {
    /// The cgroup `/` stands for: the cgroup schedlab runs in on v1, the private directory
    /// (the process's domain) on v2.
    fn root(&self) -> PathBuf {
        match self.hierarchy.version {
            Version::V1 => self.hierarchy.own.clone(),
            Version::V2 => self.base.clone(),
        }
    }
}

/// `schedlab run` of the file `file` in `s`, on the hierarchy `chosen`, its output piped.
fn spawn_run(s: &Scratch, file: &str, chosen: Chosen) -> std::process::Child {
    let mut cmd = schedlab();
    cmd.current_dir(s.path())
        .args(["run", file, "--runs", "1", "--counters", "proc"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    match chosen {
        Some(v) => cmd.env(HIERARCHY_VAR, v),
        None => cmd.env_remove(HIERARCHY_VAR),
    };
    cmd.spawn().unwrap()
}

fn start(name: &str, seconds: u32, chosen: Chosen) -> Option<Started> {
    let hierarchy = match cgroup_for(chosen) {
        Ok(h) => h,
        Err(why) => {
            let wanted = match chosen {
                Some("v2") => "a writable cgroup2 hierarchy (mount -t cgroup2)",
                _ => "a kernel with the cgroup cpu controller",
            };
            println!("skipped: {why} (install: {wanted}; run as root)");
            return None;
        }
    };
    if !hierarchy.cpu {
        // What this machine can and cannot show.
        println!(
            "{}: no cpu controller in {}: the groups' mechanics are tested, their CPU weight is not",
            chosen.unwrap_or("default"),
            hierarchy.own.display()
        );
    }
    let turn = common::serial();
    let s = Scratch::new("rtapp", name);
    s.write("tg.json", &FILE.replace("DURATION", &seconds.to_string()));
    let child = spawn_run(&s, "tg.json", chosen);
    let pid = child.id();
    let base = private_dir(&hierarchy.own, pid);
    Some(Started {
        hierarchy,
        _turn: turn,
        s,
        child,
        pid,
        base,
    })
}

/// Threads seen in `/ga`, in `/ga/gb` and moving from there back to `/` during a 2 s run; on
/// v2, the process in the private directory (its domain) and the groups threaded; nothing
/// left at the end.
fn taskgroups_hold_their_threads(chosen: Chosen) {
    let Some(mut run) = start("taskgroup", 2, chosen) else {
        return;
    };
    let v2 = run.hierarchy.version == Version::V2;
    let (root, base, pid) = (run.root(), run.base.clone(), run.pid);
    // What each cgroup held, polled every 5 ms for the run's 2 s (at most 1000 polls).
    let (mut in_ga, mut in_gb, mut gb_then_left, mut made) = (false, false, false, false);
    let mut types: Vec<[String; 3]> = Vec::new();
    let mut process_in_base = false;
    let started = Instant::now();
    let mut last_gb: Vec<i32> = Vec::new();
    for _ in 0..1000 {
        if run.child.try_wait().unwrap().is_some() {
            break;
        }
        if base.is_dir() {
            made = true;
            let ours = threads_of(pid);
            in_ga |= threads(&base.join("ga")).iter().any(|t| ours.contains(t));
            let gb = threads(&base.join("ga/gb"));
            in_gb |= !gb.is_empty();
            // The hopper left /ga/gb for `/` (after `same`, 100 ms later).
            if last_gb
                .iter()
                .any(|t| !gb.contains(t) && threads(&root).contains(t))
            {
                gb_then_left = true;
            }
            if !gb.is_empty() {
                last_gb = gb;
            }
            if v2 && base.join("ga/gb").is_dir() {
                let procs = std::fs::read_to_string(base.join("cgroup.procs")).unwrap_or_default();
                process_in_base |= procs.lines().any(|l| l.trim() == pid.to_string());
                let t = [&base, &base.join("ga"), &base.join("ga/gb")].map(|d| cgroup_type(d));
                if !types.contains(&t) && t.iter().all(|x| !x.is_empty()) {
                    types.push(t);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = run.child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
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
        "the hopper was not seen moving from /ga/gb back to / ({})",
        root.display()
    );
    assert!(!base.exists(), "{} left behind", base.display());
    if v2 {
        assert!(
            process_in_base,
            "the process was never seen in {}",
            base.display()
        );
        assert_eq!(
            types,
            [["domain threaded", "threaded", "threaded"].map(String::from)],
            "the types of the private directory, /ga and /ga/gb"
        );
    }
    // The record says where the groups were, and whether they had the cpu controller; so does
    // a warning when they had not.
    let warned = err.contains("has no cpu controller");
    assert_eq!(warned, !run.hierarchy.cpu, "{err}");
    let _ = &run.s;
}

#[test]
fn real_taskgroups_hold_their_threads_and_are_removed_at_the_end() {
    taskgroups_hold_their_threads(None);
}

/// The v2 path where the machine also has v1 (the cpu controller may be on v1, as here: the
/// grouping is tested then, not the weight).
#[test]
fn real_taskgroups_on_cgroup_v2_use_threaded_groups_and_are_removed_at_the_end() {
    taskgroups_hold_their_threads(Some("v2"));
}

/// Waits (at most 10 s) until the run's group `group` (below its private directory) holds a
/// thread, failing if the run ends first.
fn wait_for_a_thread(run: &mut Started, group: &str) {
    let dir = run.base.join(group);
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads(&dir).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} never held a thread",
            dir.display()
        );
        assert!(
            run.child.try_wait().unwrap().is_none(),
            "the run ended early"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGINT once the threads are in their groups: status 130, nothing left.
fn interrupted_run_leaves_nothing(chosen: Chosen) {
    let Some(mut run) = start("taskgroup-int", 30, chosen) else {
        return;
    };
    let (base, pid) = (run.base.clone(), run.pid);
    // Interrupted once its threads are in their taskgroups.
    wait_for_a_thread(&mut run, "ga");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = run.child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(!base.exists(), "{} left behind", base.display());
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists() || threads_of(pid).is_empty(),
        "the run's process is still there"
    );
}

#[test]
fn an_interrupted_real_run_leaves_no_taskgroup_behind() {
    interrupted_run_leaves_nothing(None);
}

#[test]
fn an_interrupted_real_run_on_cgroup_v2_leaves_no_taskgroup_behind() {
    interrupted_run_leaves_nothing(Some("v2"));
}

/// SIGKILL leaves the private directory and its groups (nothing ran to remove them); the next
/// run in the same cgroup removes them before it makes its own.
fn killed_runs_groups_go_with_the_next_run(chosen: Chosen) {
    let Some(mut run) = start("taskgroup-kill", 30, chosen) else {
        return;
    };
    let base = run.base.clone();
    wait_for_a_thread(&mut run, "ga/gb");
    run.child.kill().unwrap();
    run.child.wait().unwrap();
    assert!(
        base.join("ga/gb").is_dir(),
        "{} was removed by a killed run",
        base.display()
    );
    run.s.write("short.json", &FILE.replace("DURATION", "1"));
    let next = spawn_run(&run.s, "short.json", chosen);
    let next_base = private_dir(&run.hierarchy.own, next.id());
    let out = next.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !base.exists(),
        "{} (a killed run's) left behind by the next run",
        base.display()
    );
    assert!(!next_base.exists(), "{} left behind", next_base.display());
}

#[test]
fn a_killed_real_runs_taskgroups_are_removed_by_the_next_run() {
    killed_runs_groups_go_with_the_next_run(None);
}

#[test]
fn a_killed_real_runs_taskgroups_on_cgroup_v2_are_removed_by_the_next_run() {
    killed_runs_groups_go_with_the_next_run(Some("v2"));
}

/// A value of the variable it does not accept is refused before anything runs, naming it.
#[test]
fn a_bad_hierarchy_choice_is_refused_before_anything_runs() {
    let s = Scratch::new("rtapp", "taskgroup-var");
    s.write("tg.json", &FILE.replace("DURATION", "1"));
    let out = schedlab()
        .current_dir(s.path())
        .args(["run", "tg.json", "--runs", "1"])
        .env(HIERARCHY_VAR, "cgroup2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("SCHEDLAB_TASKGROUP_CGROUP=\"cgroup2\" is not accepted")
            && err.contains("give v1"),
        "{err}"
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
