//! Tasks that come and go on the simulator: spawn, wait and exit with their costs, exact for a
//! hand-computable case; the spawn limit; the `build` workload's job graph run to completion;
//! and linux24-mq's pools (seed 002): pools keep a build's jobs in make's pool, `idle=all` and
//! `balance=1` let the other CPUs take them.

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimError, SimResult, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};
use schedlab_workload::presets::{Build, Outcome};
use schedlab_workload::record::{Better, MetricDef};
use schedlab_workload::{Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::time::Duration;

const MS: u64 = 1_000_000;

/// A parent that spawns `children` tasks (child k computes k+1 ms), waits for them — the first
/// by name, the rest in any order — and records the CPU the waits reported; with `extra`, it
/// then spawns once more than the plan allows.
struct Family {
    children: usize,
    extra: bool,
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
                    name: "child",
                    tasks: 0,
                    spawn: self.children,
                },
            ],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: TaskMode::Processes,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        if task.group == 1 {
            ctx.compute(Duration::from_millis(ctx.spawn_arg() + 1))
                .await;
            return Ok(());
        }
        let mut kids = Vec::new();
        for k in 0..self.children {
            kids.push(ctx.spawn(1, k as u64).await?);
        }
        let first = ctx.wait(Some(kids[0])).await?;
        let mut cpu = first.cpu;
        let mut seen = vec![first.task];
        for _ in 1..self.children {
            let e = ctx.wait(None).await?;
            cpu += e.cpu;
            seen.push(e.task);
        }
        seen.sort_by_key(|t| t.id);
        ctx.record("children", seen.len() as f64);
        ctx.record("distinct", {
            seen.dedup();
            seen.len() as f64
        });
        ctx.record("child_cpu_ns", cpu.as_nanos() as f64);
        ctx.record(
            "no_child_left",
            f64::from(u8::from(ctx.wait(None).await.is_err())),
        );
        if self.extra {
            ctx.spawn(1, 0).await?;
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

/// Nothing but computing, forking and exiting takes time.
fn costs(fork_exit: &str) -> CostModel {
    CostModel::profile("modern")
        .unwrap()
        .with_overrides(&[format!(
            "jitter=0,tick=0,switch=0,wakeup=0,rq_lock=0,migration=0,syscall=0,ipi=0,ipi_send=0,idle_exit=0,scan=0,io_latency=0,io_per_kib=0,copy_per_kib=0,{fork_exit}"
        )])
        .unwrap()
}

fn sim<W: Workload>(
    w: &W,
    policy: &str,
    cpus: usize,
    cost: &CostModel,
) -> Result<SimResult, SimError> {
    let spec: PolicySpec = policy.parse().unwrap();
    let knobs = vec![Knobs::default(); w.plan().groups.len()];
    run_repetition(
        w,
        SimSetup {
            wall_budget: Some(Duration::from_secs(60)),
            ..SimSetup::new(&spec, cpus, cost, &knobs)
        },
    )
}

fn sample(r: &SimResult, metric: &str) -> f64 {
    r.outcome.tasks[0].samples[metric][0]
}

#[test]
fn spawned_tasks_run_once_are_reaped_once_and_pay_fork_and_exit() {
    let family = Family {
        children: 3,
        extra: false,
    };
    // One CPU: the parent forks three times (3 × 2 ms), the children run 1 + 2 + 3 ms and
    // each pays its 1 ms exit: 6 + 6 + 3 = 15 ms, whatever the order.
    let r = sim(&family, "cfs", 1, &costs("fork=2ms,exit=1ms")).unwrap();
    assert_eq!(r.elapsed_ns, 15 * MS);
    assert_eq!(sample(&r, "children"), 3.0);
    assert_eq!(sample(&r, "distinct"), 3.0);
    assert_eq!(sample(&r, "no_child_left"), 1.0);
    // The CPU each wait reported: the child's computing and its exit.
    assert_eq!(sample(&r, "child_cpu_ns"), (6 + 3) as f64 * MS as f64);
    assert!((r.counters["child"].cpu_time_s - 0.009).abs() < 1e-12);
    // Free fork and exit: only the children's work.
    let r = sim(&family, "cfs", 1, &costs("fork=0,exit=0")).unwrap();
    assert_eq!(r.elapsed_ns, 6 * MS);
    // On every policy the family finishes.
    for p in [
        "linux24",
        "linux24-mq",
        "linux24-prio",
        "o1",
        "staircase",
        "cfs",
        "eevdf",
        "bsd4",
        "ule",
    ] {
        let r =
            sim(&family, p, 2, &costs("fork=1ms,exit=0")).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_eq!(sample(&r, "distinct"), 3.0, "{p}");
    }
}

#[test]
fn a_spawn_past_the_plans_places_fails_the_run_naming_the_limit() {
    let family = Family {
        children: 2,
        extra: true,
    };
    let e = sim(&family, "cfs", 2, &costs("fork=0,exit=0"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("2 spawn places"), "{e}");
}

fn build(jobs: usize) -> Build {
    Build {
        jobs,
        units: 60,
        dirs: 6,
        ..Build::default()
    }
}

#[test]
fn builds_graph_runs_to_completion_with_every_job_once() {
    let b = build(12);
    for p in ["linux24-mq", "o1", "cfs", "ule"] {
        let r = sim(&b, p, 4, &CostModel::profile("modern").unwrap()).unwrap();
        let m = b.metrics(&r.outcome).unwrap();
        assert_eq!(m["jobs"], 67.0, "{p}");
        assert!(m["busy_cpus"] > 2.5 && m["busy_cpus"] <= 4.0, "{p}: {m:?}");
    }
    // One slot: the jobs run one after another, on about one CPU.
    let r = sim(&build(1), "cfs", 4, &CostModel::profile("modern").unwrap()).unwrap();
    let m = build(1).metrics(&r.outcome).unwrap();
    assert!(m["busy_cpus"] < 1.0, "{m:?}");
}

/// Per-CPU busy seconds of a build of 12 slots on 4 CPUs under `policy`.
fn busy(policy: &str) -> Vec<f64> {
    let r = sim(
        &build(12),
        policy,
        4,
        &CostModel::profile("modern").unwrap(),
    )
    .unwrap();
    r.cpus.iter().map(|c| c.busy_s).collect()
}

#[test]
fn pools_keep_forked_jobs_in_the_parents_pool_and_idle_all_or_balancing_spreads_them() {
    // 4 pools of 1 CPU, no balancing, reschedule_idle within the pool: every job starts on
    // make's CPU and stays there.
    let b0i0 = busy("linux24-mq:pools=4");
    let others: f64 = b0i0[1..].iter().sum();
    assert!(b0i0[0] > 1.0 && others == 0.0, "{b0i0:?}");
    // idle=all: an idle CPU of another pool takes a waiting job.
    let b0i1 = busy("linux24-mq:pools=4,idle=all");
    assert!(b0i1.iter().all(|&b| b > 0.3), "{b0i1:?}");
    // balance=1: the occasional rebalance moves queued jobs to the other pools.
    let b1i0 = busy("linux24-mq:pools=4,balance=1,interval=10");
    assert!(b1i0.iter().all(|&b| b > 0.1), "{b1i0:?}");
    // 2 pools of 2 CPUs: jobs spread over make's pool only.
    let two = busy("linux24-mq:pools=2");
    assert!(
        two[0] > 0.3 && two[1] > 0.3 && two[2] + two[3] == 0.0,
        "{two:?}"
    );
}

#[test]
fn pools_that_do_not_divide_the_cpus_are_refused_before_the_run() {
    let e = sim(
        &build(2),
        "linux24-mq:pools=3",
        4,
        &CostModel::profile("modern").unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pools=3") && e.contains("(1, 2, 4)"), "{e}");
    for bad in [
        "linux24-mq:pools=0",
        "linux24-mq:idle=some",
        "linux24-mq:interval=0",
        "linux24-mq:pool=2",
    ] {
        assert!(bad.parse::<PolicySpec>().is_err(), "{bad}");
    }
    assert_eq!(
        "linux24-mq:pools=4,idle=all"
            .parse::<PolicySpec>()
            .unwrap()
            .describe(),
        "linux24-mq:pools=4,idle=all"
    );
    assert_eq!(
        "linux24-mq".parse::<PolicySpec>().unwrap().describe(),
        "linux24-mq"
    );
}

#[test]
fn o1_forks_onto_the_idlest_cpu_and_linux24_mq_onto_the_parents_queue() {
    let family = Family {
        children: 1,
        extra: false,
    };
    let cost = costs("fork=0,exit=0");
    // 2.6's sched_balance_self(SD_BALANCE_FORK): the parent runs on CPU 0, CPU 1 is idle.
    let r = sim(&family, "o1", 2, &cost).unwrap();
    assert!(
        r.cpus[1].busy_s >= 0.001 && r.cpus[0].busy_s < 0.001,
        "{:?}",
        r.cpus
    );
    // 2.4 with one pool per CPU and reschedule_idle inside the pool: the parent's queue.
    let r = sim(&family, "linux24-mq:pools=2", 2, &cost).unwrap();
    assert!(
        r.cpus[0].busy_s >= 0.001 && r.cpus[1].busy_s == 0.0,
        "{:?}",
        r.cpus
    );
}
