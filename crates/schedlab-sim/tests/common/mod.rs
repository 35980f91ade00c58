//! What the simulator's integration tests share.

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimResult, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};
use schedlab_workload::Workload;
use std::time::Duration;

/// One repetition of `w` under seed 003's machine — linux24 on `cpus` simulated piii-700 CPUs —
/// with seed 1, default knobs and at most `wall_budget` of wall time.
#[allow(dead_code)] // not every test file that shares this module uses it
pub fn linux24_piii<W: Workload>(w: &W, cpus: usize, wall_budget: Duration) -> SimResult {
    let spec: PolicySpec = "linux24".parse().unwrap();
    let knobs = vec![Knobs::default(); w.plan().groups.len()];
    run_repetition(
        w,
        SimSetup {
            wall_budget: Some(wall_budget),
            ..SimSetup::new(
                &spec,
                cpus,
                &CostModel::profile("piii-700").unwrap(),
                &knobs,
            )
        },
    )
    .unwrap()
}

/// The plan of a workload of one task (group "a") on one simplex channel of `transport`.
#[allow(dead_code)] // not every test file that shares this module uses it
pub fn one_task_plan(transport: Transport) -> Plan {
    Plan {
        groups: vec![GroupPlan {
            name: "a",
            tasks: 1,
            spawn: 0,
        }],
        channels: 1,
        duplex: false,
        locks: 0,
        sync: SyncPlan::default(),
        mode: TaskMode::Threads,
        transport,
    }
}

/// The `modern` profile without jitter, with `overrides` (`key=value,...`, may be empty) on top:
/// the exact costs most mechanism tests reason about.
#[allow(dead_code)] // not every test file that shares this module uses it
pub fn modern_without_jitter(overrides: &str) -> CostModel {
    let all = if overrides.is_empty() {
        "jitter=0".to_string()
    } else {
        format!("jitter=0,{overrides}")
    };
    CostModel::profile("modern")
        .unwrap()
        .with_overrides(&[all])
        .unwrap()
}

/// Knobs for each group from `--group`-style settings (`"nice=-5"`, `"policy=fifo:96"`; `""`
/// for the defaults).
#[allow(dead_code)] // not every test file that shares this module uses it
pub fn knobs(groups: &[&str]) -> Vec<Knobs> {
    groups
        .iter()
        .map(|g| {
            if g.is_empty() {
                Knobs::default()
            } else {
                schedlab_workload::knobs::parse_group_arg(&format!("g:{g}"))
                    .unwrap()
                    .1
            }
        })
        .collect()
}
