//! `--rt-app-logs DIR`: rt-app's per-task logs, on both backends, compared with a log rt-app
//! itself writes here (when rt-app is installed), and the directory checked before anything
//! runs.

mod common;
use common::{log_rows as rows, rtapp_binary, stderr, Scratch};

/// One task of 2 ms of work on a 10 ms timer, 4 passes, and a second of 3 threads with a phase
/// of a sleep then a phase of work (rows without a timer: slack and c_period 0).
const FILE: &str = r#"{
  "global": { "duration": 1, "calibration": 20, "log_basename": "lg" },
  "tasks": {
    "tick": { "loop": 4, "run": 2000, "timer": { "ref": "unique", "period": 10000 } },
    "two": { "instance": 3, "loop": 2,
             "phases": { "p0": { "sleep": 1000 }, "p1": { "loop": 2, "run": 500 } } }
  }
}
"#;

/// The header and the policy line, as rt-app 1.0 writes them.
fn check_header(text: &str) {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# Policy : SCHED_OTHER priority : 0"));
    assert_eq!(
        lines.next(),
        Some(schedlab_report::rtapp_log::HEADER),
        "header of:\n{text}"
    );
}

#[test]
fn simulated_logs_have_a_row_per_phase_pass_in_rt_apps_units() {
    let s = Scratch::new("rtapp", "sim");
    s.write("w.json", FILE);
    s.rtapp_logs(
        "w.json",
        "logs/deeper",
        &["--backend", "sim", "--cpus", "2"],
    );
    assert_eq!(
        common::names(&s.join("logs/deeper")),
        [
            "lg-tick-0.log",
            "lg-two-1.log",
            "lg-two-2.log",
            "lg-two-3.log"
        ]
    );
    let tick = s.read("logs/deeper/lg-tick-0.log");
    check_header(&tick);
    let r = rows(&tick);
    assert_eq!(r.len(), 4, "one row per pass of loop 4:\n{tick}");
    for row in &r {
        let [idx, perf, run, period, start, end, rel_st, slack, c_dur, c_per, _wu] = row[..] else {
            panic!("11 columns: {row:?}")
        };
        assert_eq!((idx, c_dur, c_per), (0, 2000, 10000), "{tick}");
        // rt-app 1.0's perf: run µs × 1000 / calibration ns per loop.
        assert_eq!(perf, 2000 * 1000 / 20);
        // Alone on a CPU, 2 ms of work takes 2 ms of (simulated) time, and the pass lasts
        // until the next activation, 10 ms after the previous one.
        assert!((2000..2100).contains(&run), "{tick}");
        // rt-app rounds start, end and period to µs each (period from the ns difference).
        assert!((end - start).abs_diff(period) <= 1, "{tick}");
        assert_eq!(start, rel_st, "the simulated clock starts at 0: {tick}");
        assert!((9000..10100).contains(&period), "{tick}");
        assert!((7800..=8000).contains(&slack), "{tick}");
    }
    // Consecutive passes follow each other on the clock.
    assert!(r.windows(2).all(|w| w[1][4] >= w[0][5]), "{tick}");
    let two = s.read("logs/deeper/lg-two-2.log");
    let r = rows(&two);
    // loop 2 × (p0 once + p1 twice) = 6 rows, every row of thread index 2.
    assert_eq!(r.len(), 6, "{two}");
    assert!(r
        .iter()
        .all(|row| row[0] == 2 && row[7] == 0 && row[9] == 0));
    let c_dur: Vec<i64> = r.iter().map(|row| row[8]).collect();
    assert_eq!(c_dur, [0, 500, 500, 0, 500, 500]);
}

#[test]
fn several_repetitions_get_a_directory_each() {
    let s = Scratch::new("rtapp", "reps");
    s.write("w.json", FILE);
    s.run(&[
        "run",
        "w.json",
        "--backend",
        "sim",
        "--runs",
        "2",
        "--rt-app-logs",
        "logs",
    ]);
    for r in ["C0-R0", "C0-R1"] {
        assert!(s.join(&format!("logs/{r}/lg-tick-0.log")).is_file(), "{r}");
    }
}

#[test]
fn bad_log_directories_and_workloads_are_refused_before_anything_runs() {
    let s = Scratch::new("rtapp", "bad");
    s.write("w.json", FILE);
    s.write("plain", "");
    let f = "w.json";
    let cases: [(&[&str], &str); 4] = [
        (&["run", f, "--rt-app-logs", "plain"], "is not a directory"),
        (
            &["run", f, "--rt-app-logs", "/dev/null"],
            "is not a directory",
        ),
        (&["run", f, "--rt-app-logs", "-"], "standard output"),
        (
            &["run", "yield", "--backend", "sim", "--rt-app-logs", "x"],
            "rt-app files",
        ),
    ];
    for (args, says) in cases {
        let out = s.try_run(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(
            err.contains("--rt-app-logs") && err.contains(says),
            "{args:?}: {err}"
        );
    }
    assert!(!s.join("x").exists());
}

/// rt-app's own log of a file, run here, has the same policy line, header, columns and units
/// as schedlab's of the same file on the real kernel.
#[test]
fn real_logs_match_a_log_rt_app_writes_here() {
    let Some(rtapp) = rtapp_binary() else {
        eprintln!("skipped: rt-app not installed (install: apt-get install rt-app)");
        return;
    };
    let s = Scratch::new("rtapp", "real");
    let theirs = s.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let text = format!(
        r#"{{ "global": {{ "duration": 1, "calibration": 20, "ftrace": false,
             "logdir": "{}", "log_basename": "cmp" }},
           "tasks": {{ "thread0": {{ "loop": 1, "phases": {{ "p": {{ "loop": 5, "run": 1000,
                                    "timer": {{ "ref": "unique", "period": 20000 }} }} }} }} }} }}"#,
        theirs.display()
    );
    let file = s.write("cmp.json", &text);
    let out = std::process::Command::new(rtapp)
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "rt-app: {}", stderr(&out));
    s.rtapp_logs("cmp.json", "ours", &[]);
    let a = s.read("theirs/cmp-thread0-0.log");
    let b = s.read("ours/cmp-thread0-0.log");
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(la[..2], lb[..2], "policy line and header:\n{a}\n{b}");
    let (ra, rb) = (rows(&a), rows(&b));
    // A phase of loop 5 in a task of loop 1 (rt-app 1.0 runs a task *without* phases for ever,
    // whatever its loop): rt-app writes its 5 rows (the last pass may be cut by `duration` on a
    // slow machine: it writes none for it); so does schedlab, which stops there too.
    assert!((4..=5).contains(&rb.len()), "{b}");
    assert!((4..=5).contains(&ra.len()), "{a}");
    let now_us = {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid pointer to a timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000
    };
    for (x, y) in ra.iter().zip(&rb) {
        // Same widths: every column starts and ends at the same place.
        assert_eq!(x.len(), 11);
        assert_eq!(y.len(), 11);
        // Same units and clock: start and end are CLOCK_MONOTONIC µs from the last few
        // seconds, c_duration/c_period the file's µs, perf 1.0's loop count.
        for v in [x, y] {
            assert!(now_us - v[4] < 60_000_000 && v[4] <= now_us, "start {v:?}");
            // Each is rounded down to µs on its own (period from the ns difference, as
            // rt-app's log_timing does), so they agree within 1 µs.
            assert!(
                (v[5] - v[4]).abs_diff(v[3]) <= 1,
                "end - start = period within 1 µs: {v:?}"
            );
            assert_eq!((v[8], v[9]), (1000, 20000));
            assert_eq!(v[1], 1000 * 1000 / 20);
        }
    }
    for (x, y) in la.iter().zip(&lb).skip(2) {
        let cols = |l: &str| -> Vec<usize> {
            l.char_indices()
                .filter(|(i, c)| *c != ' ' && (*i + 1 == l.len() || l.as_bytes()[i + 1] == b' '))
                .map(|(i, _)| i)
                .collect()
        };
        // Every value fits its printf width here, so the columns end at the same places.
        assert_eq!(cols(x), cols(y), "{x}\n{y}");
    }
}

/// Threads a `fork` starts are logged under the names rt-app (after 1.0) gives them,
/// `TASK-INDEX-NNNN` (`thread_data_set_unique_name` in rt-app.c): INDEX continues the
/// numbering of all threads in the order of the forks, NNNN counts the forks of that task; a
/// task whose fork never came before `duration` has no log, as rt-app never made the thread.
#[test]
fn forked_threads_are_logged_under_rt_apps_names() {
    let s = Scratch::new("rtapp", "fork");
    // `main` forks `job` every 400 ms, four times; the fourth (at 1.2 s) comes after the end.
    s.write(
        "f.json",
        r#"{ "global": { "duration": 1 },
             "tasks": {
               "main": { "loop": 1, "phases": { "p": { "loop": 4, "fork": "job", "sleep": 400000 } } },
               "job": { "instance": 0, "loop": 1, "run": 500 },
               "other": { "loop": 1, "run": 200 } } }"#,
    );
    s.rtapp_logs("f.json", "logs", &["--backend", "sim"]);
    assert_eq!(
        common::names(&s.join("logs")),
        [
            "rt-app-job-2-0000.log",
            "rt-app-job-3-0001.log",
            "rt-app-job-4-0002.log",
            "rt-app-main-0.log",
            "rt-app-other-1.log",
        ]
    );
    for (name, idx) in [("rt-app-job-3-0001.log", 3), ("rt-app-other-1.log", 1)] {
        let text = s.read(&format!("logs/{name}"));
        let r = rows(&text);
        assert_eq!(r.len(), 1, "{name}:\n{text}");
        assert_eq!(r[0][0], idx, "{name}:\n{text}");
    }
    // The second fork came 400 ms after the first: so did its thread's pass (within the
    // simulated costs of forking and waking: 399,998 µs measured).
    let start = |name: &str| rows(&s.read(&format!("logs/{name}")))[0][6];
    let gap = start("rt-app-job-3-0001.log") - start("rt-app-job-2-0000.log");
    assert!(
        (399_900..400_100).contains(&gap),
        "{gap} µs between the forks"
    );
}

/// example9's shape: `spawner` forks `twice` (instance 1) in its first phase and `once`
/// (instance 0) in its second, which starts 30 ms later.
const NINE: &str = r#"{ "global": { "duration": 2, "log_basename": "nine" },
    "tasks": {
      "twice": { "loop": 1, "run": 2000 },
      "once": { "instance": 0, "loop": 1, "run": 2000 },
      "spawner": { "loop": 1, "phases": {
          "first": { "fork": "twice", "run": 10000, "sleep": 20000 },
          "second": { "fork": "once", "run": 2000 } } } } }"#;

/// A task some phase forks that also has an `instance` (tutorial example9's `thread1`) runs as
/// upstream rt-app runs it: its instance with the run, and one more thread at each fork — on
/// both backends. Rows' `rel_st` (µs since the run's start) say when each thread started.
#[test]
fn a_forked_task_with_an_instance_runs_with_the_run_and_at_each_fork() {
    let s = Scratch::new("rtapp", "fork-instance");
    s.write("nine.json", NINE);
    for backend in ["sim", "real"] {
        let logs = format!("logs-{backend}");
        s.rtapp_logs("nine.json", &logs, &["--backend", backend]);
        // Four threads: two the run starts with (indices 0 and 1, file order of the tasks
        // that have instances), two forks, numbered in the order they came.
        assert_eq!(
            common::names(&s.join(&logs)),
            [
                "nine-once-3-0000.log",
                "nine-spawner-1.log",
                "nine-twice-0.log",
                "nine-twice-2-0000.log",
            ],
            "{backend}"
        );
        let rel_st = |name: &str| -> Vec<i64> {
            let text = s.read(&format!("{logs}/{name}"));
            rows(&text).iter().map(|r| r[6]).collect()
        };
        let spawner = rel_st("nine-spawner-1.log");
        assert_eq!(spawner.len(), 2, "{backend}: {spawner:?}");
        let (with_run, forked, once) = (
            rel_st("nine-twice-0.log")[0],
            rel_st("nine-twice-2-0000.log")[0],
            rel_st("nine-once-3-0000.log")[0],
        );
        // The instance started with the run, before the spawner's first phase ended (10 ms
        // of work, then 20 ms asleep); each forked thread started within the phase that
        // forks it, after that phase started.
        assert!(
            with_run < spawner[1],
            "{backend}: twice-0 at {with_run} µs, the spawner's second phase at {spawner:?}"
        );
        assert!(
            (spawner[0]..spawner[1]).contains(&forked),
            "{backend}: twice-2 at {forked} µs, the spawner's phases at {spawner:?}"
        );
        assert!(
            once >= spawner[1],
            "{backend}: once-3 at {once} µs, the spawner's phases at {spawner:?}"
        );
    }
}

/// The rt-app file of the test above and its TOML equivalent — `twice` a spawned group of 2
/// tasks, 1 of them `with_run` — give the same steps and the same simulated results; on the
/// real kernel the TOML file starts `twice`'s first task with the run and the other at the
/// spawn (each pass counted once). A `with_run` above `count` is refused before anything runs.
#[test]
fn an_rt_app_fork_with_instances_and_its_toml_equivalent_run_alike() {
    let s = Scratch::new("rtapp", "fork-toml");
    s.write("nine.json", NINE);
    // rt-app's reading, written out: each phase pass timed as TASK.PHASE.period (TASK.period
    // without phases), each pass of a task's loop counted as TASK.loops — with `_` for `.`,
    // which a TOML file's names cannot hold.
    let toml = r#"name = "nine"
[groups.twice]
count = 2
spawned = true
with_run = WITH_RUN
steps = [ { timer = "twice_period", steps = [ { compute = "2ms" } ] }, { count = "twice_loops" } ]
[groups.once]
spawned = true
steps = [ { timer = "once_period", steps = [ { compute = "2ms" } ] }, { count = "once_loops" } ]
[groups.spawner]
steps = [
  { timer = "spawner_first_period", steps = [ { spawn = "twice" }, { compute = "10ms" }, { sleep = "20ms" } ] },
  { timer = "spawner_second_period", steps = [ { spawn = "once" }, { compute = "2ms" } ] },
  { count = "spawner_loops" },
]
"#;
    s.write("nine.toml", &toml.replace("WITH_RUN", "1"));
    // The steps of each group, as `check` prints them.
    let steps = |file: &str| -> String {
        let out = s.run(&["check", file, "--backend", "sim"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let at = text.find("steps of ").unwrap_or_else(|| panic!("{text}"));
        text[at..]
            .replace("checked; nothing was run", "")
            .replace('.', "_")
    };
    let (json_steps, toml_steps) = (steps("nine.json"), steps("nine.toml"));
    assert_eq!(json_steps, toml_steps);
    assert!(
        toml_steps.contains("steps of twice (1 started with the run, the others by spawn)"),
        "{toml_steps}"
    );
    // Every metric of the TOML file's simulated repetition, as the rt-app file's.
    for policy in ["cfs", "eevdf"] {
        let metrics = |file: &str| {
            let json = format!("{file}-{policy}.rec.json");
            s.run(&[
                "run",
                file,
                "--backend",
                "sim",
                "--policy",
                policy,
                "--cpus",
                "2",
                "--runs",
                "1",
                "--json",
                &json,
            ]);
            let rec = common::read_record(&s.join(&json));
            (rec.configs[0].repetitions[0].metrics.iter())
                .map(|(k, v)| (k.replace('.', "_"), *v))
                .collect::<std::collections::BTreeMap<String, f64>>()
        };
        let (from_json, from_toml) = (metrics("nine.json"), metrics("nine.toml"));
        assert!(!from_toml.is_empty());
        for (name, value) in &from_toml {
            assert_eq!(
                from_json.get(name),
                Some(value),
                "{policy}: metric {name}\nrt-app: {from_json:?}\nTOML: {from_toml:?}"
            );
        }
        assert_eq!(from_toml.get("twice_loops"), Some(&2.0), "{policy}");
        assert_eq!(from_toml.get("once_loops"), Some(&1.0), "{policy}");
    }
    // The real kernel: both of twice's tasks ran, once each.
    let rec = {
        s.run(&["run", "nine.toml", "--runs", "1", "--json", "real.rec.json"]);
        common::read_record(&s.join("real.rec.json"))
    };
    let m = &rec.configs[0].repetitions[0].metrics;
    assert_eq!(m.get("twice_loops"), Some(&2.0), "{m:?}");
    assert_eq!(m.get("once_loops"), Some(&1.0), "{m:?}");
    assert_eq!(m.get("spawner_loops"), Some(&1.0), "{m:?}");
    // More with the run than the group has.
    s.write("bad.toml", &toml.replace("WITH_RUN", "3"));
    let out = s.try_run(&["check", "bad.toml", "--backend", "sim"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("with_run") && err.contains('3'), "{err}");
}

/// The `perf` column counts the loops of rt-app's busy loop a pass's `run` takes, for every
/// form of `calibration` and either meaning of `run`: at the given ns per loop, or — for
/// `"CPU<n>"` and 0 — at the figure the real backend measured before the run (it was 0 there
/// once). The simulator runs no loop: a measured calibration leaves `perf` 0 there, and says so.
#[test]
fn the_perf_column_counts_loops_for_every_calibration_and_run_semantic() {
    let s = Scratch::new("rtapp", "perf");
    let file = |cal: &str| {
        format!(
            r#"{{ "global": {{ "duration": 2, "calibration": {cal}, "log_basename": "p" }},
  "tasks": {{ "t": {{ "loop": 5, "run": 1000, "sleep": 1000 }} }} }}"#
        )
    };
    for (name, cal) in [("given", "20"), ("zero", "0"), ("cpu0", "\"CPU0\"")] {
        s.write(&format!("{name}.json"), &file(cal));
        for run_as in ["cpu-time", "loops"] {
            let logs = format!("{name}-{run_as}");
            s.rtapp_logs(&format!("{name}.json"), &logs, &["--run-as", run_as]);
            let text = s.read(&format!("{logs}/p-t-0.log"));
            let r = rows(&text);
            assert_eq!(r.len(), 5, "{logs}:\n{text}");
            let perf: Vec<i64> = r.iter().map(|row| row[1]).collect();
            if name == "given" {
                assert!(
                    perf.iter().all(|&p| p == 1000 * 1000 / 20),
                    "{logs}:\n{text}"
                );
                continue;
            }
            // One calibration a run: every pass the same count, and the ns per loop it
            // implies (run asked × 1000 / perf) that of a loop of a few C library calls.
            assert!(perf.iter().all(|&p| p == perf[0]), "{logs}:\n{text}");
            let ns = 1000.0 * 1000.0 / perf[0] as f64;
            assert!(
                (1.0..=1000.0).contains(&ns),
                "{logs}: {ns} ns per loop:\n{text}"
            );
        }
        let logs = format!("{name}-sim");
        let out = s.rtapp_logs(&format!("{name}.json"), &logs, &["--backend", "sim"]);
        let r = rows(&s.read(&format!("{logs}/p-t-0.log")));
        let warned = stderr(&out).contains("perf column (loops run) is 0");
        if name == "given" {
            assert!(r.iter().all(|row| row[1] == 50_000) && !warned, "{logs}");
        } else {
            assert!(
                r.iter().all(|row| row[1] == 0) && warned,
                "{logs}: {}",
                stderr(&out)
            );
        }
    }
}
