//! A task the workload starts asleep (`Workload::start_asleep`): the simulator wakes it at the
//! time given, as a wakeup after a sleep since the run's start, so a policy credits that sleep
//! (interbench's benchmarked thread, which waits on its start semaphore before the load is let
//! go). Started runnable instead, the same task must first run to begin its sleep.

mod common;

use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimSetup};
use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::MetricDef;
use schedlab_workload::{Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::time::Duration;

const WAKE: Duration = Duration::from_millis(100);
const END: Duration = Duration::from_millis(1_500);

/// Task 0 sleeps until [`WAKE`], records when it runs after that (`first_ns`) and stops; task 1
/// burns CPU until [`END`].
struct SleeperAndHog {
    asleep: bool,
}

impl Workload for SleeperAndHog {
    fn name(&self) -> &'static str {
        "sleeper-and-hog"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        Plan {
            groups: vec![GroupPlan::fixed("sleeper", 1), GroupPlan::fixed("hog", 1)],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        if task.group == 0 {
            ctx.sleep_until(WAKE).await;
            ctx.record("first_ns", ctx.now().as_nanos() as f64);
        } else {
            while ctx.now() < END {
                ctx.compute(Duration::from_millis(1)).await;
            }
        }
        Ok(())
    }
    /// The hog first, as interbench starts its load first.
    fn start_order(&self) -> Vec<usize> {
        vec![1, 0]
    }
    fn start_asleep(&self) -> Vec<(usize, Duration)> {
        if self.asleep {
            vec![(0, WAKE)]
        } else {
            Vec::new()
        }
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

/// When the sleeper first runs after [`WAKE`] under 2.6.14's O(1) on one CPU at HZ 1000, with
/// the hog at nice −5 (prio 120, a 500 ms slice) and the sleeper at nice 0.
fn first_run(asleep: bool) -> Duration {
    let spec: PolicySpec = "o1:version=2.6.14".parse().unwrap();
    let cost = common::modern_without_jitter("hz=1000");
    let knobs = common::knobs(&["", "nice=-5"]);
    let r = run_repetition(
        &SleeperAndHog { asleep },
        SimSetup::new(&spec, 1, &cost, &knobs),
    )
    .unwrap();
    let first = r.outcome.tasks[0].samples.get("first_ns").unwrap()[0];
    Duration::from_nanos(first as u64)
}

#[test]
fn a_task_started_asleep_is_woken_with_its_sleep_credited() {
    // Asleep from the start, the sleeper wakes at 100 ms having slept 100 ms: 2.6.14 credits it
    // ten times over (sleep_avg 0 → 1 s, prio 115), above the hog's 120, so it runs at once.
    let asleep = first_run(true);
    assert!(
        asleep >= WAKE && asleep < WAKE + Duration::from_millis(1),
        "started asleep, it first ran at {asleep:?}"
    );
    // Started runnable at prio 125 (no sleep_avg), it waits out the hog's 500-tick slice
    // (measured: to 499.0 ms, the ticks' phase) before it can begin its sleep, and only then
    // finds 100 ms already past.
    let runnable = first_run(false);
    assert!(
        runnable >= Duration::from_millis(450),
        "started runnable, it first ran at {runnable:?}"
    );
}
