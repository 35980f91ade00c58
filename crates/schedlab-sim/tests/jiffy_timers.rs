//! Timed sleeps on a jiffy timer wheel (`Policy::jiffy_timers`, which `o1:version=2.6.14`
//! turns on): 2.6.14's `nanosleep` sleeps its length in jiffies, rounded up, plus one, counted
//! from the tick that began the current jiffy, and the sleeper is woken at that tick. 2.6.20's
//! (the default `o1`) is a high-resolution timer that ends when asked.

mod common;

use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{Plan, Transport};
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::MetricDef;
use schedlab_workload::{Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::time::Duration;

/// One task that sleeps `nap` `naps` times, recording the time it wakes each time (`woke_ns`).
struct Napper {
    nap: Duration,
    naps: usize,
}

impl Workload for Napper {
    fn name(&self) -> &'static str {
        "napper"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        common::one_task_plan(Transport::Pipe)
    }
    async fn body<C: Context>(&self, _task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        for _ in 0..self.naps {
            ctx.sleep_until(ctx.now() + self.nap).await;
            ctx.record("woke_ns", ctx.now().as_nanos() as f64);
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

/// The times between one wakeup and the next of 20 sleeps of 2.3 ms under `policy` on one CPU
/// at HZ 1000, without jitter.
fn gaps(policy: &str) -> Vec<u64> {
    let w = Napper {
        nap: Duration::from_micros(2_300),
        naps: 20,
    };
    let spec: PolicySpec = policy.parse().unwrap();
    let cost = common::modern_without_jitter("hz=1000");
    let knobs = [Knobs::default()];
    let r = run_repetition(&w, SimSetup::new(&spec, 1, &cost, &knobs)).unwrap();
    let woke: Vec<u64> = r.outcome.tasks[0]
        .samples
        .get("woke_ns")
        .expect("the task recorded its wakeups")
        .iter()
        .map(|&t| t as u64)
        .collect();
    assert_eq!(woke.len(), 20, "{policy}");
    woke.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn a_2_3_ms_nanosleep_lasts_four_jiffies_on_2_6_14_and_2_3_ms_on_2_6_20() {
    // Woken just after a tick, the task asks again at once: 2.3 ms is 3 jiffies rounded up,
    // plus one, from the tick it woke at, so every wakeup is 4 ms after the last.
    let old = gaps("o1:version=2.6.14");
    assert!(old.iter().all(|&g| g == 4_000_000), "2.6.14: {old:?}");
    // A high-resolution timer ends 2.3 ms after the call, which itself takes a little.
    let new = gaps("o1");
    assert!(
        new.iter().all(|&g| (2_300_000..2_400_000).contains(&g)),
        "2.6.20: {new:?}"
    );
}
