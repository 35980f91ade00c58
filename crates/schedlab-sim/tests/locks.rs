//! Lock statistics on the simulator: exact for a hand-computable case, spinning waiters burn CPU
//! and sleeping ones do not, and the kernel's runqueue locks are counted (one global lock on
//! Linux 2.4, per-CPU locks on the MQ scheduler).

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimError, SimResult, SimSetup};
use schedlab_workload::knobs::{parse_group_arg, Knobs};
use schedlab_workload::plan::{GroupPlan, LockKind, Plan, SyncPlan, TaskMode, Transport};
use schedlab_workload::presets::{Outcome, Yield};
use schedlab_workload::record::{Better, LockStats, MetricDef};
use schedlab_workload::{Context, LockId, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Two tasks pinned to CPUs 0 and 1 and one lock of `kind`. Task `a` takes the lock at 0 and
/// holds it 3 ms; task `b` computes 1 ms, asks for the lock (it waits 2 ms), holds it 2 ms.
struct TwoTasks {
    kind: LockKind,
}

impl Workload for TwoTasks {
    fn name(&self) -> &'static str {
        "two-tasks"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        Plan {
            groups: vec![
                GroupPlan {
                    name: "a",
                    tasks: 1,
                    spawn: 0,
                },
                GroupPlan {
                    name: "b",
                    tasks: 1,
                    spawn: 0,
                },
            ],
            channels: 0,
            duplex: false,
            locks: 1,
            sync: SyncPlan {
                lock_kinds: vec![self.kind],
                lock_names: vec!["the_lock".into()],
                ..SyncPlan::default()
            },
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let l = LockId(0);
        if task.group == 0 {
            ctx.lock(l).await;
            ctx.compute(Duration::from_millis(3)).await;
            ctx.unlock(l);
        } else {
            ctx.compute(Duration::from_millis(1)).await;
            ctx.lock(l).await;
            ctx.compute(Duration::from_millis(2)).await;
            ctx.unlock(l);
        }
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![MetricDef {
            name: "wall".into(),
            unit: "s".into(),
            better: Better::Lower,
            description: String::new(),
        }]
    }
    fn metrics(&self, o: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::from([("wall".into(), o.wall.as_secs_f64())]))
    }
}

/// A cost model in which nothing but the bodies' own computing takes time.
fn free() -> CostModel {
    CostModel::profile("modern")
        .unwrap()
        .with_overrides(&[
            "jitter=0,tick=0,switch=0,wakeup=0,rq_lock=0,migration=0,syscall=0,ipi=0,ipi_send=0,idle_exit=0,scan=0"
                .into(),
        ])
        .unwrap()
}

fn sim<W: Workload>(
    w: &W,
    policy: &str,
    cpus: usize,
    cost: &CostModel,
    k: &[Knobs],
) -> Result<SimResult, SimError> {
    let spec: PolicySpec = policy.parse().unwrap();
    run_repetition(
        w,
        SimSetup {
            wall_budget: Some(Duration::from_secs(60)),
            ..SimSetup::new(&spec, cpus, cost, k)
        },
    )
}

fn pinned() -> Vec<Knobs> {
    ["g:cpus=0", "g:cpus=1"]
        .iter()
        .map(|a| parse_group_arg(a).unwrap().1)
        .collect()
}

fn cpu_ns(r: &SimResult, group: &str) -> u64 {
    (r.counters[group].cpu_time_s * 1e9).round() as u64
}

fn lock<'a>(r: &'a SimResult, name: &str) -> &'a LockStats {
    r.locks
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no lock {name} in {:?}", r.locks))
}

#[test]
fn statistics_are_exact_for_two_tasks_with_known_hold_times() {
    for kind in [LockKind::Sleep, LockKind::Spin] {
        let r = sim(&TwoTasks { kind }, "cfs", 2, &free(), &pinned()).unwrap();
        assert_eq!(r.elapsed_ns, 5 * MS, "{kind:?}");
        let l = lock(&r, "the_lock");
        let spin = if kind == LockKind::Spin { 2 * MS } else { 0 };
        let expected = LockStats {
            name: "the_lock".into(),
            kind: kind.name().into(),
            kernel: false,
            acquisitions: 2,
            waited: 1,
            hold_ns: 5 * MS,
            hold_max_ns: 3 * MS,
            wait_ns: 2 * MS,
            wait_max_ns: 2 * MS,
            spin_ns: spin,
            elapsed_ns: 5 * MS,
            cpu_ns: 10 * MS,
        };
        assert_eq!(*l, expected, "{kind:?}");
        assert_eq!(l.utilisation(), 1.0);
        assert_eq!(l.contention(), 0.5);
        assert_eq!(l.hold_mean_ns(), 2.5 * MS as f64);
        assert_eq!(l.wait_mean_ns(), 2.0 * MS as f64);
        assert_eq!(l.spin_share(), spin as f64 / (10 * MS) as f64);
    }
}

#[test]
fn spinning_burns_cpu_and_sleeping_does_not() {
    let sleep = sim(
        &TwoTasks {
            kind: LockKind::Sleep,
        },
        "cfs",
        2,
        &free(),
        &pinned(),
    )
    .unwrap();
    let spin = sim(
        &TwoTasks {
            kind: LockKind::Spin,
        },
        "cfs",
        2,
        &free(),
        &pinned(),
    )
    .unwrap();
    // b computes 1 + 2 ms either way; spinning adds its 2 ms wait to its CPU time.
    assert_eq!(cpu_ns(&sleep, "b"), 3 * MS);
    assert_eq!(cpu_ns(&spin, "b"), 5 * MS);
    assert_eq!(cpu_ns(&sleep, "a"), 3 * MS);
    assert_eq!(cpu_ns(&spin, "a"), 3 * MS);
    // The sleeper left its CPU (a voluntary switch); the spinner never did.
    assert_eq!(sleep.counters["b"].voluntary_switches, Some(1));
    assert_eq!(spin.counters["b"].voluntary_switches, Some(0));
}

#[test]
fn a_spinner_sharing_a_cpu_with_the_holder_ends_and_accounts_its_spinning() {
    // Both on one CPU: whenever b spins, a (the holder) does not run; the run still ends, both
    // acquisitions are counted, and the CPU's time is the bodies' 6 ms plus the spinning.
    let k: Vec<Knobs> = ["g:cpus=0", "g:cpus=0"]
        .iter()
        .map(|a| parse_group_arg(a).unwrap().1)
        .collect();
    let r = sim(
        &TwoTasks {
            kind: LockKind::Spin,
        },
        "cfs",
        1,
        &free(),
        &k,
    )
    .unwrap();
    let l = lock(&r, "the_lock");
    assert_eq!(l.acquisitions, 2);
    assert!(l.hold_ns >= 5 * MS, "{l:?}");
    assert_eq!(r.elapsed_ns, 6 * MS + l.spin_ns, "{l:?}");
    assert_eq!(cpu_ns(&r, "b"), 3 * MS + l.spin_ns);
}

#[test]
fn an_unknown_lock_fails_the_task_instead_of_panicking() {
    struct Bad;
    impl Workload for Bad {
        fn name(&self) -> &'static str {
            "bad"
        }
        fn params(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn plan(&self) -> Plan {
            TwoTasks {
                kind: LockKind::Sleep,
            }
            .plan()
        }
        async fn body<C: Context>(&self, _t: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
            ctx.lock(LockId(7)).await;
            Ok(())
        }
        fn metric_defs(&self) -> Vec<MetricDef> {
            Vec::new()
        }
        fn metrics(&self, _o: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
            Ok(BTreeMap::new())
        }
    }
    let e = sim(&Bad, "cfs", 2, &free(), &pinned()).unwrap_err();
    assert!(
        e.to_string()
            .contains("lock 7 is not in the workload's plan, which has 1"),
        "{e}"
    );
}

#[test]
fn linux24s_runqueue_lock_is_contended_and_mqs_per_cpu_locks_are_not() {
    let w = Yield {
        threads: 256,
        duration: Duration::from_millis(20),
    };
    let cost = CostModel::profile("modern").unwrap();
    let k = vec![Knobs::default(); w.plan().groups.len()];
    let l24 = sim(&w, "linux24", 8, &cost, &k).unwrap();
    let mq = sim(&w, "linux24-mq", 8, &cost, &k).unwrap();
    let global = lock(&l24, "runqueue_lock");
    assert!(global.kernel && global.kind == "spin");
    assert!(
        !l24.locks.iter().any(|l| l.name.starts_with("rq[")),
        "{:?}",
        l24.locks
    );
    let per_cpu: Vec<&LockStats> = mq
        .locks
        .iter()
        .filter(|l| l.name.starts_with("rq["))
        .collect();
    assert_eq!(per_cpu.len(), 8, "{:?}", mq.locks);
    let worst = per_cpu.iter().map(|l| l.contention()).fold(0.0, f64::max);
    assert!(
        global.contention() > 0.5 && worst < 0.05,
        "linux24 {:.3}, mq worst {worst:.3}",
        global.contention()
    );
    assert!(global.spin_ns > 0 && global.waited > 0);
}

/// Two tasks on the CPUs of `cpus` ("g:cpus=N" each) and one spin lock: `a` holds it 1 ms at
/// the start; `b` computes 2 ms, then holds it 1 ms — after `a` released it, so never waiting.
struct OneAfterTheOther;

impl Workload for OneAfterTheOther {
    fn name(&self) -> &'static str {
        "one-after-the-other"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        TwoTasks {
            kind: LockKind::Spin,
        }
        .plan()
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let l = LockId(0);
        if task.group == 1 {
            ctx.compute(Duration::from_millis(2)).await;
        }
        ctx.lock(l).await;
        ctx.compute(Duration::from_millis(1)).await;
        ctx.unlock(l);
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        TwoTasks {
            kind: LockKind::Spin,
        }
        .metric_defs()
    }
    fn metrics(&self, o: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::from([("wall".into(), o.wall.as_secs_f64())]))
    }
}

/// [`free`] with the lock's line transfer set.
fn with_line(line: &str) -> CostModel {
    free().with_overrides(&[format!("line={line}")]).unwrap()
}

fn knobs(args: &[&str]) -> Vec<Knobs> {
    args.iter().map(|a| parse_group_arg(a).unwrap().1).collect()
}

#[test]
fn taking_a_lock_released_on_another_cpu_costs_the_line_and_on_the_same_cpu_nothing() {
    const LINE: u64 = 50_000;
    // Another CPU: b's acquisition finds the line in CPU 0's cache and pays for it inside its
    // hold, as its own CPU time; a's, the first, has no previous holder.
    let r = sim(&OneAfterTheOther, "cfs", 2, &with_line("50us"), &pinned()).unwrap();
    let l = lock(&r, "the_lock");
    assert_eq!((l.acquisitions, l.waited), (2, 0), "{l:?}");
    assert_eq!(l.hold_ns, 2 * MS + LINE, "{l:?}");
    assert_eq!(l.hold_max_ns, MS + LINE, "{l:?}");
    assert_eq!(cpu_ns(&r, "a"), MS);
    assert_eq!(cpu_ns(&r, "b"), 3 * MS + LINE);
    assert_eq!(r.elapsed_ns, 3 * MS + LINE);
    // The same CPU: the line is where it was left, whichever task runs first.
    let same = knobs(&["g:cpus=0", "g:cpus=0"]);
    let r = sim(&OneAfterTheOther, "cfs", 2, &with_line("50us"), &same).unwrap();
    let l = lock(&r, "the_lock");
    assert_eq!((l.acquisitions, l.hold_ns), (2, 2 * MS), "{l:?}");
    assert_eq!(cpu_ns(&r, "a") + cpu_ns(&r, "b"), 4 * MS);
    // Off (the profiles' 0): as before the cost existed.
    let r = sim(&OneAfterTheOther, "cfs", 2, &free(), &pinned()).unwrap();
    assert_eq!(lock(&r, "the_lock").hold_ns, 2 * MS);
    assert_eq!(r.elapsed_ns, 3 * MS);
}

#[test]
fn a_contended_hand_off_to_another_cpu_lengthens_the_next_hold_by_the_line() {
    const LINE: u64 = 50_000;
    for kind in [LockKind::Spin, LockKind::Sleep] {
        // b waits 2 ms for a's 3 ms hold (TwoTasks), then holds 2 ms plus the line's transfer
        // from CPU 0; its wait and spinning are as without the cost.
        let r = sim(&TwoTasks { kind }, "cfs", 2, &with_line("50us"), &pinned()).unwrap();
        let l = lock(&r, "the_lock");
        assert_eq!((l.acquisitions, l.waited), (2, 1), "{kind:?} {l:?}");
        assert_eq!(l.wait_ns, 2 * MS, "{kind:?} {l:?}");
        assert_eq!(l.hold_ns, 5 * MS + LINE, "{kind:?} {l:?}");
        let spin = if kind == LockKind::Spin { 2 * MS } else { 0 };
        assert_eq!(l.spin_ns, spin, "{kind:?} {l:?}");
        assert_eq!(cpu_ns(&r, "b"), 3 * MS + spin + LINE, "{kind:?}");
        assert_eq!(r.elapsed_ns, 5 * MS + LINE, "{kind:?}");
    }
}
