//! `--run-as loops`: rt-app's semantic of `run`, a count of busy-loop iterations calibrated
//! when the run starts. On the simulator it is CPU time; on the real kernel a calibrated `run`
//! takes its time on a CPU of its own, and stretches under a competing task as rt-app's does.

mod common;
use common::{is_root, log_rows, others_runnable, rtapp_binary, serial, stderr, Scratch};

/// The `run` column (µs) of the log `rel` in `s`.
fn runs(s: &Scratch, rel: &str) -> Vec<i64> {
    log_rows(&s.read(rel)).iter().map(|r| r[2]).collect()
}

fn median(v: &[i64]) -> f64 {
    assert!(!v.is_empty(), "no rows");
    let mut s = v.to_vec();
    s.sort_unstable();
    s[s.len() / 2] as f64
}

/// Run `file` in `s` with schedlab (`--run-as loops`, the extra `args`) and keep its logs in
/// `logs`.
fn schedlab_logs(s: &Scratch, file: &str, logs: &str, args: &[&str]) {
    let mut all = vec!["--run-as", "loops"];
    all.extend_from_slice(args);
    s.rtapp_logs(file, logs, &all);
}

#[test]
fn on_the_simulator_loops_are_cpu_time_and_the_record_says_which() {
    // rt-app's calibration (the wall clock) in another test of this binary would see this
    // test's work on its CPU as a slower loop: one at a time.
    let _turn = serial();
    let s = Scratch::new("loops", "sim");
    let f = "w.json";
    s.write(
        f,
        r#"{ "global": { "duration": 1, "calibration": "CPU0" },
             "tasks": { "a": { "instance": 3, "loop": -1, "run": 7000, "sleep": 3000 } } }"#,
    );
    let mut records = Vec::new();
    for how in ["cpu-time", "loops"] {
        let json = format!("{how}.json");
        s.run(&[
            "run",
            f,
            "--backend",
            "sim",
            "--cpus",
            "1",
            "--runs",
            "1",
            "--run-as",
            how,
            "--json",
            &json,
        ]);
        let rec = common::read_record(&s.join(&json));
        assert_eq!(
            rec.configs[0].params.get("run-as").map(String::as_str),
            Some(how)
        );
        records.push(rec);
    }
    // A simulated CPU has one speed: the same metrics, to the last digit.
    assert_eq!(
        records[0].configs[0].repetitions[0].metrics,
        records[1].configs[0].repetitions[0].metrics
    );
    let out = s.try_run(&["check", f, "--run-as", "cycles"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("cycles") && err.contains("cpu-time") && err.contains("loops"),
        "{err}"
    );
}

#[test]
fn a_runtime_with_loops_runs_whole_32_us_bursts_as_rt_app_does() {
    // rt-app's calibration (the wall clock) in another test of this binary would see this
    // test's work on its CPU as a slower loop: one at a time.
    let _turn = serial();
    // rt-app's `runtime` runs 32 µs bursts of its loop until the time has passed, so a
    // runtime of 3010 µs on a CPU of its own ends after 95 bursts (3040 µs); as CPU time it
    // ends at its time.
    let s = Scratch::new("loops", "runtime");
    s.write(
        "w.json",
        r#"{ "global": { "duration": 1 },
             "tasks": { "a": { "loop": 1,
                               "phases": { "p": { "loop": 5, "runtime": 3010, "sleep": 2000 } } } } }"#,
    );
    let sim = ["--backend", "sim", "--cpus", "1"];
    schedlab_logs(&s, "w.json", "loops", &sim);
    let r = runs(&s, "loops/rt-app-a-0.log");
    assert_eq!(r.len(), 5, "{r:?}");
    assert!(r.iter().all(|&us| (3040..3072).contains(&us)), "{r:?}");
    s.rtapp_logs("w.json", "cpu-time", &sim);
    let r = runs(&s, "cpu-time/rt-app-a-0.log");
    assert!(r.iter().all(|&us| (3010..3040).contains(&us)), "{r:?}");
}

#[test]
fn a_calibrated_run_of_10_ms_takes_10_ms_on_a_cpu_of_its_own() {
    if !is_root() {
        eprintln!("skipped: SCHED_FIFO (a CPU of its own while others compile) needs root (install: none; run the tests as root)");
        return;
    }
    let _turn = serial();
    let s = Scratch::new("loops", "idle");
    // SCHED_FIFO keeps other (SCHED_OTHER) work off the task's CPU while it runs, so that the
    // run's wall time is its loops' own.
    s.write(
        "w.json",
        r#"{ "global": { "duration": -1, "calibration": "CPU0" },
             "tasks": { "t": { "loop": 1, "policy": "SCHED_FIFO", "cpus": [0],
                               "phases": { "p": { "loop": 20, "run": 10000, "sleep": 2000 } } } } }"#,
    );
    // Within 5 % (the median of 20 runs); a timing test, so tried five times before failing:
    // the calibration runs at normal priority, among whatever else runs then, and on a virtual
    // machine the loop's own speed moves for a while at a time (on an idle one, 4 of 14 runs
    // were more than 5 % off, two by half).
    let mut seen = Vec::new();
    for attempt in 0..5 {
        let logs = format!("logs{attempt}");
        schedlab_logs(&s, "w.json", &logs, &[]);
        let m = median(&runs(&s, &format!("{logs}/rt-app-t-0.log")));
        if (m / 10_000.0 - 1.0).abs() <= 0.05 {
            return;
        }
        seen.push(m);
    }
    panic!("median run of a 10 ms calibrated run, five attempts (µs): {seen:?}");
}

#[test]
fn under_a_burner_on_its_cpu_a_loop_count_stretches_as_rt_apps_does() {
    let Some(rtapp) = rtapp_binary() else {
        eprintln!("skipped: rt-app not installed (install: apt-get install rt-app)");
        return;
    };
    let _turn = serial();
    let s = Scratch::new("loops", "burner");
    let theirs = s.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    // A task of 10 ms runs and 10 ms sleeps and a burner, both on CPU 0: each run shares the
    // CPU with the burner, so its wall time stretches to about twice its loops' time.
    let file = s.write(
        "b.json",
        &format!(
            r#"{{ "global": {{ "duration": 2, "calibration": "CPU0", "ftrace": false,
                     "logdir": "{}", "log_basename": "b" }},
                 "tasks": {{ "t": {{ "loop": 1, "cpus": [0],
                                 "phases": {{ "p": {{ "loop": 60, "run": 10000, "sleep": 10000 }} }} }},
                            "burner": {{ "loop": -1, "cpus": [0], "run": 100000 }} }} }}"#,
            theirs.display()
        ),
    );
    // Rounds of one run of each, in alternating order, so that each side runs before and after
    // the other; from the third round on, the median run over all the passes of each side's
    // runs so far: both stretched (a run alone takes 10 ms) and within 15 % of each other. One
    // run's median is not enough: CFS/EEVDF's placement of the sleeper beside the burner (the
    // lag it wakes with) settles into a different pattern from run to run, and a run's median
    // moved from 11 to 25 ms between runs of the same program on an idle CI machine.
    const ROUNDS: usize = 5;
    let mut rtapp_runs: Vec<Vec<i64>> = Vec::new();
    let mut ours_runs: Vec<Vec<i64>> = Vec::new();
    let mut busiest = 0;
    let pooled = |runs: &[Vec<i64>]| median(&runs.concat());
    for round in 0..ROUNDS {
        busiest = busiest.max(others_runnable());
        let rtapp_run = || {
            let out = std::process::Command::new(rtapp)
                .arg(&file)
                .output()
                .unwrap();
            assert!(out.status.success(), "rt-app: {}", stderr(&out));
            runs(&s, "theirs/b-t-0.log")
        };
        let ours = format!("ours{round}");
        let ours_run = || {
            schedlab_logs(&s, "b.json", &ours, &[]);
            runs(&s, &format!("{ours}/b-t-0.log"))
        };
        if round % 2 == 0 {
            rtapp_runs.push(rtapp_run());
            ours_runs.push(ours_run());
        } else {
            ours_runs.push(ours_run());
            rtapp_runs.push(rtapp_run());
        }
        busiest = busiest.max(others_runnable());
        let (a, b) = (pooled(&rtapp_runs), pooled(&ours_runs));
        if round >= 2 && a > 13_000.0 && b > 13_000.0 && (b / a - 1.0).abs() <= 0.15 {
            return;
        }
        // With other work runnable (below) more rounds would not make the comparison judgeable.
        if round >= 2 && busiest > 0 {
            break;
        }
    }
    let per_run = |runs: &[Vec<i64>]| runs.iter().map(|r| median(r)).collect::<Vec<_>>();
    let seen = format!(
        "pooled medians rt-app {:.0} µs, schedlab {:.0} µs; per run rt-app {:?}, schedlab {:?}",
        pooled(&rtapp_runs),
        pooled(&ours_runs),
        per_run(&rtapp_runs),
        per_run(&ours_runs)
    );
    // A third task runnable on the machine shares CPU 0 with one side's runs and not the
    // other's (measured at load 35: schedlab 34 ms against rt-app's 17), or with rt-app's
    // calibration, which times by the wall clock (at load 12 rt-app's 10 ms runs took 3 ms
    // under the burner): the comparison needs the burner to be the only competitor.
    if busiest > 0 {
        eprintln!(
            "skipped: the stretch under a burner ({busiest} other tasks runnable; it needs an otherwise idle machine): {seen}"
        );
        return;
    }
    // Where rt-app's own runs of the same file differ by more than the 15 % this compares, a
    // difference from schedlab's cannot be told from rt-app's own spread.
    let rtapp_medians = per_run(&rtapp_runs);
    let (lo, hi) =
        (rtapp_medians.iter()).fold((f64::MAX, 0.0f64), |(lo, hi), &m| (lo.min(m), hi.max(m)));
    if hi / lo > 1.15 {
        eprintln!(
            "skipped: rt-app's own median run moved {:.0} % between its runs of the same file, more than the 15 % this test judges: {seen}",
            (hi / lo - 1.0) * 100.0
        );
        return;
    }
    panic!("median runs under a burner, rt-app and schedlab, {ROUNDS} alternating rounds on an otherwise idle machine: {seen}");
}

/// A `calibration` number asks both tools for the same count of the same iteration (rt-app's
/// four `ldexp` calls through the PLT, the same instructions), so a `run` takes about as long in
/// each; calling `ldexp` through a register took 0.93–0.96 of rt-app's time, schedlab's former
/// loop of its own 1.94.
#[test]
fn a_given_calibration_asks_for_about_rt_apps_time() {
    let Some(rtapp) = rtapp_binary() else {
        eprintln!("skipped: rt-app not installed (install: apt-get install rt-app)");
        return;
    };
    if !is_root() {
        eprintln!("skipped: SCHED_FIFO (a CPU of its own while others compile) needs root (install: none; run the tests as root)");
        return;
    }
    let _turn = serial();
    let s = Scratch::new("loops", "given");
    let theirs = s.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    // 20 passes of a 10 ms `run` at 20 ns per loop (500,000 iterations), SCHED_FIFO on CPU 0.
    s.write(
        "g.json",
        &format!(
            r#"{{ "global": {{ "duration": 5, "calibration": 20, "ftrace": false,
                     "logdir": "{}", "log_basename": "g" }},
                 "tasks": {{ "t": {{ "loop": 1, "cpus": [0], "policy": "SCHED_FIFO",
                                 "phases": {{ "p": {{ "loop": 20, "run": 10000, "sleep": 2000 }} }} }} }} }}"#,
            theirs.display()
        ),
    );
    // Alternating runs, three attempts: the medians' ratio within 10 % (both share the
    // machine with whatever else runs; a FIFO task is only delayed by other real-time work).
    let mut seen = Vec::new();
    for attempt in 0..3 {
        let out = std::process::Command::new(rtapp)
            .arg(s.join("g.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "rt-app: {}", stderr(&out));
        let a = median(&runs(&s, "theirs/g-t-0.log"));
        let ours = format!("ours{attempt}");
        schedlab_logs(&s, "g.json", &ours, &[]);
        let b = median(&runs(&s, &format!("{ours}/g-t-0.log")));
        if (b / a - 1.0).abs() <= 0.10 {
            return;
        }
        seen.push((a, b));
    }
    // The same loop count took rt-app itself 11.9 to 28.0 ms from one attempt to the next on
    // a shared CI machine (a FIFO task on a CPU of its own, so the host's CPU speed moved):
    // a 10 % comparison needs rt-app's own medians within 10 % of each other.
    let (lo, hi) = seen.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &(a, _)| {
        (lo.min(a), hi.max(a))
    });
    if hi / lo > 1.10 {
        eprintln!(
            "skipped: rt-app's own median run moved {:.0} % between attempts, so this machine cannot resolve 10 % (it needs a steady CPU): {seen:?}",
            (hi / lo - 1.0) * 100.0
        );
        return;
    }
    panic!("median 10 ms runs at a given calibration, rt-app and schedlab (µs), three attempts: {seen:?}");
}

/// `calibration` has a meaning only where `run` is a loop count: its warning is printed for a
/// run whose `run` is CPU time (the default, `--run-as cpu-time`, or one configuration of a
/// sweep), and not for one as loops, however run-as is given; the file's other warnings are
/// printed either way.
#[test]
fn the_calibration_warning_is_printed_only_where_run_is_cpu_time() {
    let s = Scratch::new("loops", "warning");
    s.write(
        "w.json",
        r#"{ "global": { "duration": 1, "calibration": "CPU0", "gnuplot": true },
             "tasks": { "a": { "loop": 1, "run": 1000 } } }"#,
    );
    let calibration = "'calibration' is used only with --run-as loops";
    for (args, warned) in [
        (&["check", "w.json"][..], true),
        (&["check", "w.json", "--run-as", "cpu-time"][..], true),
        (&["check", "w.json", "--run-as", "loops"][..], false),
        (&["check", "w.json", "--set", "run-as=loops"][..], false),
        (
            &[
                "check",
                "w.json",
                "--run-as",
                "cpu-time",
                "--set",
                "run-as=loops",
            ][..],
            false,
        ),
        (&["check", "w.json", "--vary", "run-as=loops"][..], false),
        (
            &["check", "w.json", "--vary", "run-as=loops,cpu-time"][..],
            true,
        ),
        (
            &[
                "run",
                "w.json",
                "--backend",
                "sim",
                "--runs",
                "1",
                "--run-as",
                "loops",
            ][..],
            false,
        ),
        (
            &["run", "w.json", "--backend", "sim", "--runs", "1"][..],
            true,
        ),
    ] {
        let out = s.try_run(args);
        let err = stderr(&out);
        assert!(out.status.success(), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(calibration)).collect();
        assert_eq!(lines.len(), usize::from(warned), "{args:?}:\n{err}");
        if warned {
            assert!(lines[0].starts_with("warning: w.json:1:30: "), "{err}");
        }
        // The file's other warning, in either case, once.
        assert_eq!(
            err.matches("'gnuplot': true").count(),
            1,
            "{args:?}:\n{err}"
        );
    }
}

/// `"calibration": "CPU<n>"` with `--run-as loops` on the real kernel: measured on CPU n (the
/// record says loops ran, and the run took its time), and a CPU this process may not run on
/// is refused naming it and the CPUs it may run on, before any task starts; as CPU time the
/// calibration is not used, and the same file runs.
#[test]
fn a_calibration_cpu_is_measured_on_or_refused_naming_it() {
    let _turn = serial();
    let s = Scratch::new("loops", "cpu");
    let file = |cpu: &str| {
        format!(
            r#"{{ "global": {{ "duration": -1, "calibration": "{cpu}" }},
                 "tasks": {{ "a": {{ "loop": 1, "phases": {{ "p": {{ "loop": 5, "run": 2000, "sleep": 1000 }} }} }} }} }}"#
        )
    };
    s.write("cpu0.json", &file("CPU0"));
    s.rtapp_logs("cpu0.json", "cpu0", &["--run-as", "loops"]);
    let r = runs(&s, "cpu0/rt-app-a-0.log");
    assert_eq!(r.len(), 5, "{r:?}");
    // Calibrated runs of 2 ms: at least a quarter of it whatever the load (a count of zero
    // loops, an uncalibrated figure, would take nothing).
    assert!(r.iter().all(|&us| us >= 500), "{r:?}");
    s.write("far.json", &file("CPU4000"));
    let started = std::time::Instant::now();
    let out = s.try_run(&["run", "far.json", "--runs", "1", "--run-as", "loops"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(
            "calibration \"CPU4000\": this process may not run on CPU 4000; it may run on CPUs"
        ),
        "{err}"
    );
    assert!(
        started.elapsed().as_secs() < 5,
        "{:?}: {err}",
        started.elapsed()
    );
    s.run(&["run", "far.json", "--runs", "1"]);
}
