//! `yield` — the sched_yield latency test of seed 002 (IBM's multi-queue scheduler study):
//! `threads` threads call `sched_yield()` in a loop for `duration`.
//!
//! Metrics: yields per second of wall time, and µs per yield defined as the busy CPU time of all
//! threads (their summed thread CPU clocks) divided by the yields they made — i.e. the cost of one
//! trip through `schedule()`, independent of how many CPUs ran in parallel.

use super::def::{Example, WorkloadDef};
use super::params::{
    param_defs, parse_count, parse_with, Param, ParamDef, ParamKind, Preset, MAX_TASKS,
};
use super::{metric, Outcome, Workload};
use crate::context::{Context, WorkloadError};
use crate::error::ParamError;
use crate::plan::{GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use std::collections::BTreeMap;
use std::time::Duration;

/// How many yields between two looks at the clock.
const YIELDS_PER_CLOCK_CHECK: u64 = 16;

/// Threads calling sched_yield.
#[derive(Clone, Debug, PartialEq)]
pub struct Yield {
    /// Number of threads.
    pub threads: usize,
    /// How long they yield.
    pub duration: Duration,
}

impl Default for Yield {
    fn default() -> Self {
        Yield {
            threads: 1,
            duration: Duration::from_secs(2),
        }
    }
}

impl Yield {
    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(1..=MAX_TASKS).contains(&self.threads) {
            return Err(ParamError::value(
                NAME,
                "threads",
                self.threads,
                format!("is not accepted; use 1..{MAX_TASKS}"),
            ));
        }
        if self.duration.is_zero() || self.duration > Duration::from_secs(3600) {
            return Err(ParamError::params(
                NAME,
                &["duration"],
                "must be between 1ns and 1h",
            ));
        }
        Ok(())
    }
}

const NAME: &str = "yield";

/// The parameters of [`Yield`], each declared once.
const TABLE: &[Param<Yield>] = &[
    Param::new(
        ParamDef::value(
            "threads",
            "1,2,4,16",
            "1,2,4,16",
            "Thread counts to run, comma-separated (1..131072 each); one configuration per count.",
        )
        .kind(ParamKind::List),
        |w, v| parse_count(NAME, "threads", v, 1..=MAX_TASKS).map(|n| w.threads = n),
        |w| w.threads.to_string(),
    ),
    Param::new(
        ParamDef::value("duration", "2s", "2s", "How long each repetition yields.").hyphen_values(),
        |w, v| parse_with(NAME, v, crate::duration::parse_duration).map(|d| w.duration = d),
        |w| crate::duration::format_duration(w.duration),
    ),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Yield, { TABLE.len() }>(TABLE);

impl Preset for Yield {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "The sched_yield test of seed 002: N threads yield for a while (group: yield).",
        "seed 002's sched_yield test: threads call sched_yield for a duration; one configuration per thread count",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "Seed 002's sched_yield test with 1 and 16 threads on the 2.4 scheduler, simulated",
            "run yield --threads 1,16 --duration 100ms --backend sim --policy linux24 --cpus 4",
        ),
        Example::new(
            "The 2.4 scheduler against IBM's multi-queue one",
            "sweep yield --threads 16 --duration 100ms --backend sim --cpus 4 --vary policy=linux24,linux24-mq",
        ),
    ]);
    const TABLE: &'static [Param<Self>] = TABLE;

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }
}

impl Workload for Yield {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn label(&self) -> String {
        format!("threads={}", self.threads)
    }

    fn plan(&self) -> Plan {
        Plan {
            groups: vec![GroupPlan {
                name: "yield",
                tasks: self.threads,
                spawn: 0,
            }],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }

    async fn body<C: Context>(&self, _task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let end = ctx.now() + self.duration;
        let mut yields = 0u64;
        loop {
            for _ in 0..YIELDS_PER_CLOCK_CHECK {
                ctx.yield_now().await;
            }
            yields += YIELDS_PER_CLOCK_CHECK;
            if ctx.now() >= end || ctx.stop_requested() {
                break;
            }
        }
        ctx.record("yields", yields as f64);
        Ok(())
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![
            metric(
                "us_per_yield",
                "us",
                Better::Lower,
                "busy CPU time of all threads / yields",
            ),
            metric(
                "yields_per_s",
                "yields/s",
                Better::Higher,
                "yields of all threads per second of wall time",
            ),
            metric(
                "yields",
                "yields",
                Better::Higher,
                "yields made by all threads",
            ),
        ]
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let yields = outcome.sum(&self.plan(), None, "yields");
        if yields <= 0.0 {
            return Err(WorkloadError::Integrity(
                "no thread completed a yield".into(),
            ));
        }
        Ok(BTreeMap::from([
            (
                "us_per_yield".into(),
                outcome.cpu_time().as_secs_f64() * 1e6 / yields,
            ),
            ("yields_per_s".into(), yields / outcome.wall.as_secs_f64()),
            ("yields".into(), yields),
        ]))
    }

    fn expected_time(&self) -> Option<Duration> {
        Some(self.duration * 3 + Duration::from_secs(30))
    }
}
