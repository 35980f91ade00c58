//! Every simulated run ends: a body that takes no simulated time is ended by the stop flag and
//! the wall-clock budget (whether it hands the machine calls that cost nothing or no calls at
//! all), and a long compute costs no queue memory per tick (issue 38).

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimError, SimResult, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{GroupPlan, Plan, TaskMode, Transport};
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::MetricDef;
use schedlab_workload::{Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What the one task of [`One`] does.
#[derive(Clone, Copy)]
enum Body {
    /// Computes nothing, forever, and never asks whether to stop: only the machine's step loop
    /// sees the watch.
    ZeroComputes,
    /// Never makes a call, and asks whether to stop at every turn (a workload file's loop of
    /// counts): only its stop check sees the watch.
    NoCalls,
    /// One compute of this long.
    Compute(Duration),
}

/// One task in group `a`, doing [`Body`].
struct One(Body);

impl Workload for One {
    fn name(&self) -> &'static str {
        "one"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        Plan {
            groups: vec![GroupPlan {
                name: "a",
                tasks: 1,
                spawn: 0,
            }],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: schedlab_workload::SyncPlan::default(),
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: Context>(&self, _task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        match self.0 {
            Body::ZeroComputes => loop {
                ctx.compute(Duration::ZERO).await;
            },
            Body::NoCalls => {
                let mut passes = 0u64;
                while !ctx.stop_requested() {
                    passes = std::hint::black_box(passes + 1);
                }
                Err(WorkloadError::Stopped)
            }
            Body::Compute(d) => {
                ctx.compute(d).await;
                Ok(())
            }
        }
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

fn sim(
    body: Body,
    stop: Option<&AtomicBool>,
    budget: Option<Duration>,
) -> Result<SimResult, SimError> {
    sim_costed(body, stop, budget, &CostModel::profile("modern").unwrap())
}

fn sim_costed(
    body: Body,
    stop: Option<&AtomicBool>,
    budget: Option<Duration>,
    cost: &CostModel,
) -> Result<SimResult, SimError> {
    let spec: PolicySpec = "cfs".parse().unwrap();
    let knobs = [Knobs::default()];
    run_repetition(
        &One(body),
        SimSetup {
            stop,
            wall_budget: budget,
            ..SimSetup::new(&spec, 1, cost, &knobs)
        },
    )
}

/// A repetition that only ends from outside: with a budget of 300 ms it ends as a timeout
/// naming task 0 as running with the clock standing still, within a few seconds.
fn times_out(body: Body) {
    let started = Instant::now();
    let e = sim(body, None, Some(Duration::from_millis(300))).expect_err("runs forever");
    let took = started.elapsed();
    let SimError::Timeout { doing, .. } = &e else {
        panic!("not a timeout: {e}");
    };
    assert!(
        doing.contains("task 0 (group a)") && doing.contains("without the clock moving"),
        "{e}"
    );
    assert!(took < Duration::from_secs(5), "ended after {took:?}");
}

/// The same ended by the stop flag, set from another thread after 200 ms.
fn is_interrupted(body: Body) {
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
        });
        sim(body, Some(&stop), None)
    });
    assert_eq!(r.err(), Some(SimError::Interrupted));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn computes_of_nothing_forever_end_at_the_budget() {
    times_out(Body::ZeroComputes);
}

#[test]
fn computes_of_nothing_forever_end_on_the_stop_flag() {
    is_interrupted(Body::ZeroComputes);
}

#[test]
fn a_body_without_calls_ends_at_the_budget() {
    times_out(Body::NoCalls);
}

#[test]
fn a_body_without_calls_ends_on_the_stop_flag() {
    is_interrupted(Body::NoCalls);
}

#[test]
fn a_long_compute_runs_to_its_end() {
    // 5000 s on one CPU at HZ=250: 1.25 M ticks, each of which left a stale burst end in the
    // queue (its budget is 1 M events), so the run failed blaming the tick.
    let r = sim(Body::Compute(Duration::from_secs(5000)), None, None).expect("runs to its end");
    let cpu = r.counters["a"].cpu_time_s;
    assert!(cpu >= 5000.0, "CPU time {cpu} s");
    // Ticks (one per 4 ms) and, for each, the burst end it made obsolete: counted as before.
    let ticks = 5000 * 250;
    assert!(
        r.events >= 2 * ticks && r.events < 2 * ticks + ticks / 100,
        "{} events",
        r.events
    );
}

#[test]
fn a_long_compute_with_free_ticks_runs_to_its_end() {
    // Ticks that cost nothing leave the burst's end where it was: the old end is as obsolete
    // (found by the fuzz run: 104 s at HZ=10000 filled the queue).
    let mut cost = CostModel::profile("modern").unwrap();
    cost.tick = 0;
    cost.hz = 10_000;
    let r = sim_costed(Body::Compute(Duration::from_secs(200)), None, None, &cost)
        .expect("runs to its end");
    let cpu = r.counters["a"].cpu_time_s;
    assert!((200.0..200.001).contains(&cpu), "CPU time {cpu} s");
    let ticks = 200 * 10_000;
    assert!(
        r.events >= 2 * ticks && r.events < 2 * ticks + ticks / 100,
        "{} events",
        r.events
    );
}
