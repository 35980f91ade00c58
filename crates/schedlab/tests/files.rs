//! Workload files from the command line: the presets' files against the presets on the
//! simulator (identical numbers for the same seed), `check`, `run` and `sweep` of a file on both
//! backends. File faults at `file:line:column` are in the bad-input corpus
//! (tests/bad-input/h14-files.txt), which checks each exit code, message and that nothing started.

mod common;

use schedlab_workload::record::RunRecord;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary, run from the repository's root: paths in the tests are relative to it.
fn schedlab_at_root() -> Command {
    let mut c = common::schedlab();
    c.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    c
}

fn run(args: &[&str]) -> Output {
    schedlab_at_root()
        .args(args)
        .output()
        .expect("run schedlab")
}

fn run_ok(args: &[&str]) -> Output {
    common::succeeded(args, run(args))
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("schedlab-files-{}-{name}", std::process::id()))
}

fn record(args: &[&str], name: &str) -> RunRecord {
    let path = temp(&format!("{name}.json"));
    let p = path.to_str().unwrap().to_string();
    let mut all = args.to_vec();
    all.extend(["--json", &p, "--quiet"]);
    run_ok(&all);
    let rec = RunRecord::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    rec
}

/// Run the preset and its file on the simulator with the same seed; every repetition's wall
/// time, the metrics named in `same` (preset name, file name; a derived `us_per_*` to 1e-12) and
/// every counter of every group must be identical.
fn same_simulation(preset: &[&str], file: &[&str], same: &[(&str, &str)], policy: &str) {
    let common = [
        "--backend",
        "sim",
        "--policy",
        policy,
        "--cpus",
        "2",
        "--seed",
        "7",
        "--runs",
        "2",
    ];
    let a = record(&[&["run"], preset, &common[..]].concat(), "preset");
    let b = record(&[&["run"], file, &common[..]].concat(), "file");
    for (ra, rb) in a.configs[0]
        .repetitions
        .iter()
        .zip(&b.configs[0].repetitions)
    {
        for (ma, mb) in same {
            let (x, y) = (ra.metrics[*ma], rb.metrics[*mb]);
            if ma.starts_with("us_per_") {
                // A derived metric: the same quantities, divided in another order.
                assert!(
                    (x - y).abs() <= 1e-12 * x.abs(),
                    "{preset:?} on {policy}: preset {ma} {x} against file {mb} {y}"
                );
            } else {
                assert_eq!(
                    x, y,
                    "{preset:?} on {policy}: preset {ma} against file {mb}"
                );
            }
        }
        assert_eq!(ra.counters, rb.counters, "{preset:?} on {policy}: counters");
        assert_eq!(
            ra.sim_events, rb.sim_events,
            "{preset:?} on {policy}: events"
        );
        assert_eq!(
            ra.cpus, rb.cpus,
            "{preset:?} on {policy}: per-CPU accounting"
        );
    }
    assert_eq!(b.configs[0].repetitions.len(), 2);
}

#[test]
fn the_presets_files_simulate_exactly_as_the_presets() {
    for policy in ["eevdf", "o1", "bsd4"] {
        same_simulation(
            &[
                "messaging",
                "--groups",
                "2",
                "--fds",
                "4",
                "--loops",
                "30",
                "--tasks",
                "threads",
            ],
            &[
                "examples/messaging.toml",
                "--set",
                "groups=2",
                "--set",
                "fds=4",
                "--set",
                "loops=30",
                "--set",
                "hosting=threads",
            ],
            &[
                ("time", "time"),
                ("messages", "messages"),
                ("msgs_per_s", "msgs_per_s"),
            ],
            policy,
        );
        same_simulation(
            &["pingpong", "--loops", "2000"],
            &["examples/pingpong.toml", "--set", "loops=2000"],
            &[
                ("ops_per_s", "round_trips_per_s"),
                ("us_per_rt", "us_per_rt"),
            ],
            policy,
        );
        same_simulation(
            &["yield", "--threads", "3", "--duration", "20ms"],
            &[
                "examples/yield.toml",
                "--set",
                "threads=3",
                "--set",
                "duration=20ms",
            ],
            &[
                ("yields_per_s", "yields_per_s"),
                ("yields", "yields"),
                ("us_per_yield", "us_per_yield"),
            ],
            policy,
        );
    }
}

#[test]
fn check_prints_the_plan_and_what_the_dry_run_proved() {
    let out = run_ok(&["check", "examples/messaging.toml", "--set", "groups=2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "workload      messaging-file",
        "group sender",
        "tasks         80",
        "messages      80000 per repetition",
        "send datasize to inbox[index - index % fds + r]",
        "checked; nothing was run",
    ] {
        assert!(text.contains(want), "missing '{want}' in:\n{text}");
    }
    // A sweep's configurations are listed.
    let out = run_ok(&[
        "check",
        "examples/periodic-vs-hog.toml",
        "--backend",
        "sim",
        "--vary",
        "hog.count=1,3",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("configurations 2:"), "{text}");
    assert!(text.contains("hog.count=3"), "{text}");
}

#[test]
fn a_periodic_file_runs_on_both_backends_with_interbench_accounting() {
    let sim = record(
        &[
            "run",
            "examples/periodic-vs-hog.toml",
            "--set",
            "duration=1s",
            "--backend",
            "sim",
            "--policy",
            "eevdf",
            "--cpus",
            "1",
            "--runs",
            "1",
        ],
        "sim-periodic",
    );
    let m = &sim.configs[0].repetitions[0].metrics;
    assert_eq!(
        sim.metrics[0].name, "audio.latency",
        "the primary metric first"
    );
    // 1 s of 20 ms periods: about 50 activations, each met or missed, none lost.
    assert!(
        m["audio.deadlines_met"] > 0.0 && m["audio.deadlines_met"] <= 100.0,
        "{m:?}"
    );
    assert!(m["audio.max_latency"] >= m["audio.latency"], "{m:?}");
    assert!(m["time"] >= 1.0 && m["time"] < 1.2, "{m:?}");
    let real = record(
        &[
            "run",
            "examples/periodic-vs-hog.toml",
            "--set",
            "duration=300ms",
            "--set",
            "hog.count=1",
            "--runs",
            "1",
            "--counters",
            "proc",
        ],
        "real-periodic",
    );
    let m = &real.configs[0].repetitions[0].metrics;
    assert!(m["time"] >= 0.3 && m["time"] < 2.0, "{m:?}");
    assert!(m["audio.deadlines_met"] > 0.0, "{m:?}");
    assert_eq!(real.configs[0].params["hog.count"], "1");
}

#[test]
fn a_sweep_varies_a_file_parameter_a_group_count_and_the_policy() {
    let out = temp("sweep-out");
    let o = out.to_str().unwrap().to_string();
    let printed = run_ok(&[
        "sweep",
        "examples/periodic-vs-hog.toml",
        "--set",
        "duration=200ms",
        "--backend",
        "sim",
        "--cpus",
        "1",
        "--runs",
        "1",
        "--vary",
        "hog.count=1,2",
        "--vary",
        "policy=o1,eevdf",
        "--vary",
        "work=1ms,2ms",
        "--out",
        &o,
        "--quiet",
    ]);
    // The table names each configuration's group count (a parameter named like GROUP.KNOB).
    let table = String::from_utf8_lossy(&printed.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().take(3).eq(["2", "o1", "2ms"])),
        "{table}"
    );
    let rec =
        RunRecord::from_json(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(rec.configs.len(), 8);
    let labels: Vec<&str> = rec.configs.iter().map(|c| c.label.as_str()).collect();
    assert!(
        labels.contains(&"hog.count=2 policy=eevdf work=2ms"),
        "{labels:?}"
    );
    let c = rec
        .configs
        .iter()
        .find(|c| c.label == "hog.count=2 policy=o1 work=1ms")
        .unwrap();
    assert_eq!(c.params["hog.count"], "2");
    assert_eq!(c.params["work"], "1ms");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn every_example_checks_and_runs_briefly_on_the_simulator() {
    for entry in
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")).unwrap()
    {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let p = path.to_str().unwrap();
        run_ok(&["check", p]);
    }
    for (file, sets) in [
        ("examples/nfs.toml", &["rpcs=40"][..]),
        ("examples/request-response.toml", &["requests=20"][..]),
        ("examples/pipeline.toml", &["items=200"][..]),
        ("examples/desktop.toml", &["duration=500ms"][..]),
    ] {
        let mut args = vec![
            "run",
            file,
            "--backend",
            "sim",
            "--cpus",
            "2",
            "--runs",
            "1",
        ];
        for s in sets {
            args.extend(["--set", s]);
        }
        let rec = record(&args, "example");
        let m = &rec.configs[0].repetitions[0].metrics;
        assert!(m["time"] > 0.0, "{file}: {m:?}");
    }
}

#[test]
fn every_step_runs_on_both_backends_with_the_predicted_effects() {
    let file = "crates/schedlab/tests/files/every-step.toml";
    for backend in [
        &["--backend", "sim", "--cpus", "2"][..],
        &["--counters", "proc"][..],
    ] {
        let mut args = vec!["run", file, "--runs", "2"];
        args.extend(backend);
        let rec = record(&args, "every-step");
        for rep in &rec.configs[0].repetitions {
            let m = &rep.metrics;
            assert_eq!(m["messages"], 16.0, "{backend:?}: {m:?}");
            // count in_lock by i + 1 over 4 rounds, in 2 workers: 2 × (1 + 2 + 3 + 4).
            assert_eq!(m["in_lock"], 20.0, "{backend:?}: {m:?}");
            assert_eq!(m["helped"], 1.0, "{backend:?}: {m:?}");
            // A round computes at least 200 µs and busies 100 µs and sleeps 100 µs.
            assert!(
                m["round"] >= 0.4 && m["round.max"] >= m["round"],
                "{backend:?}: {m:?}"
            );
            assert!(
                (0.0..=100.0).contains(&m["tick.deadlines_met"]) && m["tick.missed"] >= 0.0,
                "{backend:?}: {m:?}"
            );
            assert!(m["time"] >= 0.008, "five 2 ms periods: {backend:?}: {m:?}");
        }
    }
}

/// A seeded file has a `seed` parameter beside the simulator's `--seed`; giving `--seed`
/// panicked in the argument parser (clap's type mismatch) until the parameter was read with
/// `try_get_one`.
#[test]
fn a_seeded_file_takes_the_simulators_seed_option() {
    let out = run_ok(&[
        "sweep",
        "examples/request-response.toml",
        "--backend",
        "sim",
        "--cpus",
        "2",
        "--seed",
        "3",
        "--runs",
        "1",
        "-q",
        "--set",
        "requests=10",
        "--vary",
        "policy=cfs,eevdf",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cfs") && text.contains("eevdf"), "{text}");
}

/// `mode=kernel` is the simulator's: the real backend refuses it by name before anything runs.
#[test]
fn kernel_mode_is_refused_on_the_real_kernel() {
    let out = run(&[
        "run",
        "examples/nfs.toml",
        "--group",
        "nfsd:mode=kernel",
        "--set",
        "rpcs=4",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mode=kernel") && err.contains("--backend sim"),
        "{err}"
    );
}

/// Seed 001's interrupt-thread mechanism on its own: a task's disk read completes while a hog
/// computes for 20 ms. In user mode the hog is switched at once (the interrupt returns to user
/// mode, where NEEDRESCHED is acted on); in kernel mode (`mode=kernel`) only if the kernel
/// preempts at once — FreeBSD's `maybe_preempt` for the disk interrupt thread under PREEMPTION,
/// after which the reader, better than the hog, runs — and otherwise when the hog is done. The
/// Linux policies are not preemptible kernels: a kernel-mode hog keeps the CPU.
#[test]
fn an_interrupt_thread_preempts_a_kernel_mode_task_only_under_preemption() {
    let file = "crates/schedlab/tests/files/kernel-mode.toml";
    let io = |policy: &str, mode: &str| -> f64 {
        let group = format!("hog:mode={mode}");
        let rec = record(
            &[
                "run",
                file,
                "--backend",
                "sim",
                "--cpus",
                "1",
                "--policy",
                policy,
                "--group",
                &group,
                "--runs",
                "1",
            ],
            "kernel-mode",
        );
        rec.configs[0].repetitions[0].metrics["io"]
    };
    for (policy, prompt_in_kernel_mode) in [
        ("bsd4", true),
        ("bsd4:preemption=0", false),
        ("bsd4:full=1", true),
        ("ule", true),
        ("ule:preemption=0", false),
        ("eevdf", false),
    ] {
        let user = io(policy, "user");
        assert!(
            user < 1.0,
            "{policy}, user-mode hog: the read took {user} ms"
        );
        let kernel = io(policy, "kernel");
        if prompt_in_kernel_mode {
            assert!(kernel < 1.0, "{policy}, kernel-mode hog: {kernel} ms");
        } else {
            assert!(kernel >= 20.0, "{policy}, kernel-mode hog: {kernel} ms");
        }
    }
}

/// Issue 19: a file whose `make` task forks compile jobs with `spawn` and reaps them with
/// `"wait"` (examples/job-server.toml). On the simulator every job runs and is counted exactly,
/// and the group's counters show each forked task; on the real kernel every job runs, the jobs'
/// group row is measured and, once the run is over, no job process and no temporary directory
/// is left.
#[test]
fn a_file_that_spawns_and_waits_runs_on_both_backends_and_leaves_nothing() {
    let file = "examples/job-server.toml";
    let rec = record(
        &[
            "run",
            file,
            "--backend",
            "sim",
            "--cpus",
            "2",
            "--runs",
            "2",
            "--set",
            "units=10",
            "--set",
            "jobs=3",
        ],
        "job-server-sim",
    );
    for rep in &rec.configs[0].repetitions {
        let m = &rep.metrics;
        assert_eq!(m["compiled"], 10.0, "{m:?}");
        // Ten jobs of 2..6 ms of CPU on two CPUs, and a 12 ms link after them.
        assert!(m["time"] >= 0.010 + 0.012 && m["link"] >= 12.0, "{m:?}");
    }
    let sim_again = record(
        &[
            "run",
            file,
            "--backend",
            "sim",
            "--cpus",
            "2",
            "--runs",
            "2",
            "--set",
            "units=10",
            "--set",
            "jobs=3",
        ],
        "job-server-sim-again",
    );
    let times = |r: &RunRecord| -> Vec<f64> {
        r.configs[0]
            .repetitions
            .iter()
            .map(|rep| rep.metrics["time"])
            .collect()
    };
    assert_eq!(times(&rec), times(&sim_again), "the simulator is seeded");

    let child = schedlab_at_root()
        .args(["run", file, "--runs", "2", "--set", "units=12"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let compiled = text
        .lines()
        .find(|l| l.starts_with("compiled "))
        .unwrap_or_else(|| panic!("no compiled row in: {text}"));
    assert!(
        compiled.split_whitespace().nth(2) == Some("12.000"),
        "every job ran, twice: {compiled}"
    );
    // Issue 19: the forked jobs' own counters are measured, not `-`: switches and migrations
    // are numbers, and 12 jobs of 2..6 ms make at least 24 ms of CPU per repetition.
    let cc = text
        .lines()
        .find(|l| l.starts_with("cc "))
        .unwrap_or_else(|| panic!("no cc row in: {text}"));
    let cols: Vec<&str> = cc.split_whitespace().collect();
    assert!(
        cols[2..5].iter().all(|c| c.parse::<f64>().is_ok()),
        "switches and migrations: {cc}"
    );
    let cpu: f64 = cols.last().unwrap().parse().unwrap();
    assert!((0.024..1.0).contains(&cpu), "CPU s of 12 jobs: {cc}");
    assert_no_job_left(pid);
}

/// Right after the run `pid` has ended: no job process (named sl-cc*) that was its child or
/// was re-parented to init — not even a zombie (the run kills and reaps its jobs' process group
/// before it returns; jobs used to linger as init's zombies for up to 2 s after an interrupt)
/// — and no temporary directory of the run.
fn assert_no_job_left(pid: u32) {
    let left = jobs_of(pid);
    assert!(left.is_empty(), "job processes left: {left:?}");
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        assert!(
            !name.starts_with(&format!("schedlab-{pid}-")),
            "left behind: {name}"
        );
    }
}

/// Issue 19: a run interrupted while its job server has jobs running exits with 130 and leaves
/// no job process and no temporary directory behind.
#[test]
fn an_interrupted_spawning_file_leaves_no_job_behind() {
    let child = schedlab_at_root()
        .args([
            "run",
            "examples/job-server.toml",
            "--set",
            "units=5000",
            "--set",
            "work=20ms",
            "--runs",
            "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(std::time::Duration::from_millis(800));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_job_left(pid);
}

/// The job processes (named sl-cc*) of run `pid`: its children, or re-parented to init.
fn jobs_of(pid: u32) -> Vec<String> {
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let field = |n: usize| {
            stat.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(n))
                .and_then(|s| s.parse::<i32>().ok())
        };
        let (ppid, session) = (field(1), field(3));
        // Of this test's session: not another test run's on the same machine.
        // SAFETY: getsid of the calling process.
        let ours = session == Some(unsafe { libc::getsid(0) });
        // A job is named after its group (sl-cc0, ...); the run's processes were its children.
        if ours && comm.starts_with("sl-cc") && (ppid == Some(pid as i32) || ppid == Some(1)) {
            left.push(format!("{} {}", entry.path().display(), comm.trim()));
        }
    }
    left
}
