//! Tasks that come and go on the real kernel: spawned tasks are new processes (or threads), run
//! once, are reaped, and nothing is left behind — after a normal end, and after the supervisor
//! ends a repetition whose child would sleep for a minute. The `build` workload's job graph runs
//! to completion with every job once.

use schedlab_real::runner::{run_repetition, RepetitionResult, RepetitionSetup, RunError};
use schedlab_real::wakeups::WakeupCounter;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};
use schedlab_workload::presets::{Build, Outcome};
use schedlab_workload::record::MetricDef;
use schedlab_workload::{Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A parent that spawns `kids` children into group `name` — each computes 2 ms, or sleeps
/// `nap` — and waits for them in any order, recording how many it reaped.
struct Family {
    name: &'static str,
    kids: usize,
    nap: Duration,
    mode: TaskMode,
}

impl Workload for Family {
    fn name(&self) -> &'static str {
        "family"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        Plan {
            groups: vec![
                GroupPlan::fixed("parent", 1),
                GroupPlan {
                    name: self.name,
                    tasks: 0,
                    spawn: self.kids,
                },
            ],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: self.mode,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        if task.group == 1 {
            if self.nap.is_zero() {
                ctx.compute(Duration::from_millis(2)).await;
            } else {
                ctx.sleep(self.nap).await;
            }
            return Ok(());
        }
        let mut ids = Vec::new();
        for k in 0..self.kids {
            ids.push(ctx.spawn(1, k as u64).await?.id);
        }
        let mut reaped = Vec::new();
        let mut cpu = Duration::ZERO;
        for _ in 0..self.kids {
            let e = ctx.wait(None).await?;
            reaped.push(e.task.id);
            cpu += e.cpu;
        }
        reaped.sort();
        ctx.record("reaped_all_once", f64::from(u8::from(reaped == ids)));
        ctx.record("child_cpu_s", cpu.as_secs_f64());
        ctx.record(
            "none_left",
            f64::from(u8::from(ctx.wait(None).await.is_err())),
        );
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

fn run<W: Workload>(w: W, budget: Duration) -> Result<Outcome, RunError> {
    let knobs = vec![Knobs::default(); w.plan().groups.len()];
    run_repetition(
        &Arc::new(w),
        RepetitionSetup {
            knobs: &knobs,
            stop: Arc::new(AtomicBool::new(false)),
            budget,
            trace: None,
            rq_trace: None,
            files: None,
            passes: false,
        },
    )
    .map(|r| r.outcome)
}

/// Processes on the machine whose name (comm) starts with `prefix`.
fn named(prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) {
            if comm.starts_with(prefix) {
                out.push(format!(
                    "{} {}",
                    e.file_name().to_string_lossy(),
                    comm.trim()
                ));
            }
        }
    }
    out
}

#[test]
fn spawned_processes_and_threads_run_once_and_are_reaped() {
    for (mode, name) in [(TaskMode::Processes, "kidp"), (TaskMode::Threads, "kidt")] {
        let o = run(
            Family {
                name,
                kids: 5,
                nap: Duration::ZERO,
                mode,
            },
            Duration::from_secs(30),
        )
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        let s = &o.tasks[0].samples;
        assert_eq!(s["reaped_all_once"], vec![1.0], "{mode:?}");
        assert_eq!(s["none_left"], vec![1.0], "{mode:?}");
        // Five children of 2 ms each: wait4's rusage counts them (at tick granularity at worst).
        assert!(s["child_cpu_s"][0] > 0.005, "{mode:?}: {s:?}");
        let left = named(&format!("sl-{name}"));
        assert!(left.is_empty(), "{mode:?}: left behind: {left:?}");
    }
}

#[test]
fn a_stopped_run_leaves_no_spawned_process_behind() {
    let started = Instant::now();
    let r = run(
        Family {
            name: "napper",
            kids: 3,
            nap: Duration::from_secs(60),
            mode: TaskMode::Processes,
        },
        Duration::from_millis(500),
    );
    assert!(matches!(r, Err(RunError::Timeout(_))), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    // PR_SET_PDEATHSIG: the parent task's process was killed, its children follow.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !named("sl-napper").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(named("sl-napper"), Vec::<String>::new());
}

#[test]
fn builds_job_graph_runs_every_job_once_on_the_real_kernel() {
    let b = Build {
        jobs: 3,
        units: 10,
        dirs: 2,
        cpu: Duration::from_millis(2),
        link: Duration::from_millis(5),
        ..Build::default()
    };
    let o = run(b.clone(), Duration::from_secs(60)).unwrap();
    let m = b.metrics(&o).unwrap();
    assert_eq!(m["jobs"], 13.0);
    assert!(m["makespan_s"] > 0.0 && m["busy_cpus"] > 0.0, "{m:?}");
}

/// What each spawned child of [`Kids`] does.
enum KidBody {
    /// Sleep 2 ms `naps` times, compute `burn` and record its argument: a known case for the
    /// counters a spawned task reports.
    Nap { naps: usize, burn: Duration },
    /// `passes` passes of a 1 ms sleep and a cumulative compute of `per` (its CPU time brought
    /// up to `per` times the passes so far).
    Cumulative { passes: u32, per: Duration },
}

/// A parent that spawns `kids` children into the group "kid", each doing `body`, and waits for
/// them; the parent itself computes nothing.
struct Kids {
    kids: usize,
    body: KidBody,
    mode: TaskMode,
}

impl Workload for Kids {
    fn name(&self) -> &'static str {
        "kids"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        Plan {
            groups: vec![
                GroupPlan::fixed("parent", 1),
                GroupPlan {
                    name: "kid",
                    tasks: 0,
                    spawn: self.kids,
                },
            ],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: self.mode,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        if task.group == 1 {
            match self.body {
                KidBody::Nap { naps, burn } => {
                    for _ in 0..naps {
                        ctx.sleep(Duration::from_millis(2)).await;
                    }
                    ctx.compute(burn).await;
                    ctx.record("arg", ctx.spawn_arg() as f64);
                }
                KidBody::Cumulative { passes, per } => {
                    for k in 1..=passes {
                        ctx.sleep(Duration::from_millis(1)).await;
                        ctx.compute_to_total(per, per * k).await;
                    }
                }
            }
            return Ok(());
        }
        for k in 0..self.kids {
            ctx.spawn(1, k as u64).await?;
        }
        for _ in 0..self.kids {
            ctx.wait(None).await?;
        }
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

/// One repetition of `w` on the real kernel (default knobs, a 60 s budget), counting wakeups
/// with `trace` where given; a failure panics naming the task mode.
fn run_kids(w: Kids, trace: Option<&mut WakeupCounter>) -> RepetitionResult {
    let mode = w.mode;
    let knobs = vec![Knobs::default(); 2];
    run_repetition(
        &Arc::new(w),
        RepetitionSetup {
            knobs: &knobs,
            stop: Arc::new(AtomicBool::new(false)),
            budget: Duration::from_secs(60),
            trace,
            rq_trace: None,
            files: None,
            passes: false,
        },
    )
    .unwrap_or_else(|e| panic!("{mode:?}: {e}"))
}

/// Issue 19: a spawned task's counters (switches, CPU, migrations, and wakeups when tracefs is
/// there) and samples are measured, not `-`: 5 children that each sleep 4 times and burn 20 ms
/// make at least 20 voluntary switches (and 20 wakeups) and about 100 ms of CPU in their group.
#[test]
fn spawned_tasks_report_their_counters_and_samples() {
    for mode in [TaskMode::Processes, TaskMode::Threads] {
        let w = Kids {
            kids: 5,
            body: KidBody::Nap {
                naps: 4,
                burn: Duration::from_millis(20),
            },
            mode,
        };
        let mut trace = match schedlab_real::trace::SchedTrace::open(
            schedlab_real::report::COMM_PREFIX,
            1024,
        ) {
            Ok(t) => Some(schedlab_real::wakeups::WakeupCounter::Tracefs(t)),
            Err(e) => {
                eprintln!(
                    "skipped: the wakeup counts (tracefs: {e}; run as root with tracefs mounted)"
                );
                None
            }
        };
        let r = run_kids(w, trace.as_mut());
        let nap = &r.counters["kid"];
        let vol = nap.voluntary_switches.unwrap();
        // Each sleep is one voluntary switch; a few more may come from page faults or I/O.
        assert!((20..=40).contains(&vol), "{mode:?}: {nap:?}");
        assert!(nap.involuntary_switches.is_some(), "{mode:?}: {nap:?}");
        assert!(
            (0.095..0.5).contains(&nap.cpu_time_s),
            "{mode:?}: 5 × 20 ms of CPU: {nap:?}"
        );
        assert!(nap.migrations.is_some(), "{mode:?}: {nap:?}");
        if trace.is_some() {
            let w = nap.wakeups.unwrap();
            assert!((20..=40).contains(&w), "{mode:?}: wakeups: {nap:?}");
        }
        // The total counts them too.
        let total = &r.counters["total"];
        assert!(total.voluntary_switches.unwrap() >= vol, "{mode:?}");
        // Samples at their places: the plan's one task, then the five spawn places.
        assert_eq!(r.outcome.tasks.len(), 6, "{mode:?}");
        let mut args: Vec<f64> = (r.outcome.tasks[1..].iter())
            .flat_map(|t| t.samples["arg"].clone())
            .collect();
        args.sort_by(f64::total_cmp);
        assert_eq!(args, vec![0.0, 1.0, 2.0, 3.0, 4.0], "{mode:?}");
        assert!(
            r.outcome.tasks[1..]
                .iter()
                .all(|t| t.cpu_time >= Duration::from_millis(19)),
            "{mode:?}"
        );
    }
}

/// Spawned tasks carry their cumulative computes into their group's counters as starting tasks
/// do (a recorded program's forked children are spawned groups): 3 children of 5 passes of a
/// 2 ms compute report 15 computes summing to 30 ms, none of them found past its sum (a pass's
/// sleep costs far less than 2 ms), and the group's CPU time is that sum and little more.
#[test]
fn spawned_tasks_carry_their_cumulative_computes() {
    for mode in [TaskMode::Processes, TaskMode::Threads] {
        let w = Kids {
            kids: 3,
            body: KidBody::Cumulative {
                passes: 5,
                per: Duration::from_millis(2),
            },
            mode,
        };
        let r = run_kids(w, None);
        let kid = &r.counters["kid"];
        let c = kid
            .cumulative
            .unwrap_or_else(|| panic!("{mode:?}: no cumulative computes in {kid:?}"));
        assert_eq!(c.computes, 15, "{mode:?}: {c:?}");
        assert_eq!(c.past, 0, "{mode:?}: {c:?}");
        // Each task's sum is its last target less its CPU clock at its start: exactly 10 ms.
        assert!((c.sum_s - 0.030).abs() < 1e-6, "{mode:?}: {c:?}");
        assert!(
            (0.0..0.003).contains(&c.beyond_s),
            "{mode:?}: beyond the sum: {c:?}"
        );
        // The body's CPU time is measured from a little after the context's start.
        assert!(
            (0.0295..0.036).contains(&kid.cpu_time_s),
            "{mode:?}: {kid:?}"
        );
        // The parent ran no compute: nothing to report; the total holds the children's.
        assert_eq!(r.counters["parent"].cumulative, None, "{mode:?}");
        let total = r.counters["total"].cumulative.unwrap();
        assert_eq!((total.computes, total.past), (15, 0), "{mode:?}: {total:?}");
    }
}
