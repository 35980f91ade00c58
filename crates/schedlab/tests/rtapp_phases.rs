//! rt-app's per-phase settings run as rt-app switches them: a task whose phases give other
//! `cpus` (rt-app's tutorial example8) runs each phase there, on the simulator (each CPU's busy
//! time) and on the real kernel (the CPU /proc shows for the task's thread while it runs); a
//! phase's CPU outside the machine is an error before anything starts.

mod common;

use schedlab_workload::record::RunRecord;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// A file in a fresh temporary directory holding `text`.
fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// One task `mover` (with `task` keys) whose phases `zero` and `one` (with their keys) each
/// compute `us` µs.
fn two_phases(task: &str, cpus0: &str, cpus1: &str, us: u64) -> String {
    format!(
        r#"{{
  "tasks": {{
    "mover": {{ {task}
      "loop": 1,
      "phases": {{
        "zero": {{ {cpus0} "run": {us} }},
        "one": {{ {cpus1} "run": {us} }},
      }}
    }}
  }}
}}"#
    )
}

fn record(path: &Path, args: &[&str]) -> RunRecord {
    let json = path.with_extension("out.json");
    let mut all = vec!["run", path.to_str().unwrap()];
    all.extend(args);
    all.extend(["--runs", "1", "--quiet", "--json", json.to_str().unwrap()]);
    let out = schedlab().args(&all).output().unwrap();
    common::succeeded(&all, out);
    RunRecord::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn a_task_moves_between_cpus_at_its_phases_on_the_simulator() {
    let dir = common::temp_dir("rtapp-phases", "sim");
    let sim = ["--backend", "sim", "--policy", "eevdf", "--cpus", "2"];
    // 50 ms on CPU 0, then 50 ms on CPU 1.
    let moved = file(
        &dir,
        "moved.json",
        &two_phases("", "\"cpus\": [0],", "\"cpus\": [1],", 50_000),
    );
    let busy = |r: &RunRecord| -> Vec<f64> {
        let rep = &r.configs[0].repetitions[0];
        rep.cpus.iter().map(|c| c.busy_s).collect()
    };
    let b = busy(&record(&moved, &sim));
    assert_eq!(b.len(), 2);
    for (cpu, s) in b.iter().enumerate() {
        assert!((0.049..0.052).contains(s), "CPU {cpu} busy {s} s: {b:?}");
    }
    // The control: both phases on CPU 0 (one setting for the whole run, the group's knob).
    let stays = file(
        &dir,
        "stays.json",
        &two_phases("", "\"cpus\": [0],", "\"cpus\": [0],", 50_000),
    );
    let b = busy(&record(&stays, &sim));
    assert!(b[0] > 0.099 && b[1] < 0.001, "{b:?}");
}

#[test]
fn a_phase_policy_the_simulated_policy_lacks_or_a_cpu_outside_the_machine_is_refused_before_the_run(
) {
    let dir = common::temp_dir("rtapp-phases", "bad");
    let outside = file(
        &dir,
        "outside.json",
        &two_phases("", "\"cpus\": [0],", "\"cpus\": [5],", 1000),
    );
    for backend in [
        &["--backend", "sim", "--cpus", "2"][..],
        &["--backend", "real"][..],
    ] {
        let mut args = vec!["run", outside.to_str().unwrap(), "--runs", "1"];
        args.extend(backend);
        let out: Output = schedlab().args(&args).output().unwrap();
        let err = common::stderr(&out);
        assert!(!out.status.success(), "{args:?} ran:\n{err}");
        assert!(
            err.contains("outside.json:7:") && err.contains('5'),
            "{args:?}: the phase's line and the CPU:\n{err}"
        );
    }
    // eevdf models the fair class only: a phase switching to SCHED_FIFO is refused there, and
    // runs on o1.
    let fifo = file(
        &dir,
        "fifo.json",
        &two_phases("", "", "\"policy\": \"SCHED_FIFO\", \"priority\": 5,", 1000),
    );
    let f = fifo.to_str().unwrap();
    let args = [
        "run",
        f,
        "--backend",
        "sim",
        "--policy",
        "eevdf",
        "--runs",
        "1",
    ];
    let out = schedlab().args(args).output().unwrap();
    let err = common::stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("fifo.json:7:"), "{err}");
    record(&fifo, &["--backend", "sim", "--policy", "o1"]);
}

/// The CPUs the thread whose name ends in `suffix` was seen on (/proc/PID/task/TID/stat, field
/// 39), in order, while `child` runs; each change once.
fn cpus_seen(child: &mut std::process::Child, suffix: &str, limit: Duration) -> Vec<u32> {
    let start = Instant::now();
    let mut seen: Vec<u32> = Vec::new();
    while child.try_wait().unwrap().is_none() && start.elapsed() < limit {
        for pid in descendants(child.id()) {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for t in tasks.flatten() {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                if !comm.trim_end().ends_with(suffix) {
                    continue;
                }
                let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                // After the command's closing parenthesis, field 3 is the first: 39 is the 37th.
                let Some(cpu) = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(36))
                    .and_then(|c| c.parse().ok())
                else {
                    continue;
                };
                if seen.last() != Some(&cpu) {
                    seen.push(cpu);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    seen
}

/// `pid` and its descendants (the real backend may host tasks in a child process).
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() && out.len() < 64 {
        let p = out[i];
        let children =
            std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")).unwrap_or_default();
        out.extend(
            children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
        i += 1;
    }
    out
}

#[test]
fn a_task_moves_between_cpus_at_its_phases_on_the_real_kernel() {
    let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
    if allowed < 2 {
        println!("skipped: this machine lets the test use {allowed} CPU (a move needs 2)");
        return;
    }
    let dir = common::temp_dir("rtapp-phases", "real");
    // 400 ms of CPU time on CPU 0, then on CPU 1: long enough to be sampled on a busy machine.
    // The task starts on CPU 0 (its own `cpus`), so that only the phase's move is seen.
    let path = file(
        &dir,
        "moved.json",
        &two_phases("\"cpus\": [0],", "", "\"cpus\": [1],", 400_000),
    );
    let mut child = schedlab()
        .args(["run", path.to_str().unwrap(), "--runs", "1", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = cpus_seen(&mut child, "mover0", Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    // The first phase on CPU 0 and the second on CPU 1; nothing else between.
    assert_eq!(seen, [0, 1], "CPUs the task was seen on, in order");
}
