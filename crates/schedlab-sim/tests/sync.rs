//! Barriers, semaphores and condition variables on the simulated machine: who waits for whom,
//! the wakeups and switches they cost, deadlocks that name them, and determinism.

#[path = "../../schedlab-workload/tests/support/sync.rs"]
mod support;

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimError, SimResult, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{Plan, SyncPlan, TaskRef};
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::MetricDef;
use schedlab_workload::{BarrierId, Context, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::{samples, total, BarrierRounds, BoundedBuffer, Ends, GoSignal, LostSignal};

fn sim<W: Workload>(w: &W, policy: &str, cpus: usize, seed: u64) -> Result<SimResult, SimError> {
    let spec: PolicySpec = policy.parse().unwrap();
    let cost = CostModel::profile("modern").unwrap();
    let knobs = vec![Knobs::default(); w.plan().groups.len()];
    run_repetition(
        w,
        SimSetup {
            seed,
            ..SimSetup::new(&spec, cpus, &cost, &knobs)
        },
    )
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn a_barrier_lets_nobody_pass_until_its_last_party_arrives_round_after_round() {
    for cpus in [1, 2, 4] {
        let w = BarrierRounds {
            tasks: 3,
            parties: 3,
            rounds: 4,
            unit: MS,
            ends: Ends::default(),
        };
        let r = sim(&w, "cfs", cpus, 1).unwrap();
        let arrive = samples(&r.outcome, "arrive");
        let leave = samples(&r.outcome, "leave");
        for round in 0..4 {
            let last = (0..3).map(|t| arrive[t][round]).fold(0.0, f64::max);
            // The last party computed 3 ms per round before arriving.
            assert!(
                last >= (3 * (round + 1)) as f64 * 1e6,
                "{cpus} CPUs: {last}"
            );
            for (t, l) in leave.iter().enumerate() {
                assert!(l[round] >= last, "{cpus} CPUs, round {round}: task {t} left at {} before the last arrival at {last}", l[round]);
            }
        }
        // Tasks 0 and 1 block at every round (one voluntary switch and one wakeup each); the
        // last party never does.
        let c = &r.counters["party"];
        assert_eq!(c.wakeups, Some(8), "{c:?}");
        assert!(c.voluntary_switches >= Some(8), "{c:?}");
        assert_eq!(w.ends.ended.load(Ordering::SeqCst), 3);
    }
}

#[test]
fn a_barrier_short_of_parties_deadlocks_and_says_how_many_arrived() {
    let w = BarrierRounds {
        tasks: 2,
        parties: 3,
        rounds: 1,
        unit: MS,
        ends: Ends::default(),
    };
    let e = sim(&w, "cfs", 2, 1).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, SimError::Deadlock(_)), "{e:?}");
    assert!(
        msg.contains("task 0 waits at barrier 0 (2 of 3 arrived)")
            && msg.contains("task 1 waits at barrier 0 (2 of 3 arrived)"),
        "{msg}"
    );
}

#[test]
fn a_semaphore_at_zero_makes_its_waiter_wait_for_the_post() {
    let w = support::SemaphoreHandoff {
        initial: 0,
        takes: 1,
        unit: 2 * MS,
        ends: Ends::default(),
    };
    let r = sim(&w, "cfs", 2, 1).unwrap();
    let took = samples(&r.outcome, "took")[0][0];
    let posted = samples(&r.outcome, "posted")[1][0];
    assert!(
        posted >= 2e6 && took >= posted,
        "took {took}, posted {posted}"
    );
    let c = &r.counters["waiter"];
    assert_eq!(
        (c.voluntary_switches, c.wakeups),
        (Some(1), Some(1)),
        "{c:?}"
    );
}

#[test]
fn a_semaphore_counts_its_initial_value_and_blocks_after_it() {
    let w = support::SemaphoreHandoff {
        initial: 2,
        takes: 3,
        unit: 2 * MS,
        ends: Ends::default(),
    };
    let r = sim(&w, "cfs", 2, 1).unwrap();
    let took = &samples(&r.outcome, "took")[0];
    let posted = samples(&r.outcome, "posted")[1][0];
    assert_eq!(took.len(), 3);
    assert!(took[0] < posted && took[1] < posted, "{took:?} vs {posted}");
    assert!(took[2] >= posted, "{took:?} vs {posted}");
    assert_eq!(r.counters["waiter"].wakeups, Some(1));
}

#[test]
fn a_post_handed_to_a_waiter_is_not_counted_too() {
    // One post, two takes: the second waits for ever, and the deadlock names the semaphore.
    let w = support::SemaphoreHandoff {
        initial: 0,
        takes: 2,
        unit: MS,
        ends: Ends::default(),
    };
    let e = sim(&w, "cfs", 2, 1).unwrap_err();
    assert_eq!(
        e,
        SimError::Deadlock("1 tasks remain; task 0 waits on semaphore 0".into())
    );
}

#[test]
fn a_bounded_buffer_with_a_lock_and_two_conditions_moves_every_item_once() {
    for (cpus, policy) in [(1, "cfs"), (2, "cfs"), (2, "o1"), (4, "eevdf"), (2, "ule")] {
        let w = BoundedBuffer::new(2, 2, 50, 3);
        let r = sim(&w, policy, cpus, 3).unwrap();
        let o = &r.outcome;
        assert_eq!(total(o, "produced"), 100.0, "{policy} on {cpus}");
        assert_eq!(total(o, "consumed"), 100.0, "{policy} on {cpus}");
        assert_eq!(w.count.load(Ordering::SeqCst), 0);
        let most = w.most.load(Ordering::SeqCst);
        assert!((1..=3).contains(&most), "{most}");
        // Slow consumers: producers found the buffer full and waited for room.
        assert!(total(o, "waited_full") > 0.0, "{policy} on {cpus}");
        // cond_wait gave the lock back before returning: never two tasks inside.
        assert_eq!(w.overlaps.load(Ordering::SeqCst), 0, "{policy} on {cpus}");
        let c = &r.counters["total"];
        assert!(
            c.wakeups > Some(0) && c.voluntary_switches > Some(0),
            "{c:?}"
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let run = |seed| {
        let w = BoundedBuffer::new(2, 3, 30, 2);
        let r = sim(&w, "cfs", 2, seed).unwrap();
        format!("{:?} {:?} {:?} {}", r.outcome, r.counters, r.cpus, r.events)
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn a_broadcast_wakes_every_waiter_and_they_take_the_lock_in_turn() {
    let w = GoSignal::new(3, true, MS);
    let r = sim(&w, "cfs", 2, 1).unwrap();
    let woke = samples(&r.outcome, "woke");
    for t in 0..3 {
        assert_eq!(woke[t].len(), 1);
        assert!(woke[t][0] >= 1e6, "{woke:?}");
    }
    // Each waiter blocked on the condition and was woken by the broadcast (and perhaps again
    // after blocking on the lock it had to take back).
    let c = &r.counters["waiter"];
    assert!(c.wakeups >= Some(3), "{c:?}");
    assert_eq!(c.voluntary_switches, c.wakeups, "{c:?}");
}

#[test]
fn a_signal_wakes_only_one_waiter_and_the_rest_deadlock_on_the_condition() {
    let w = GoSignal::new(3, false, MS);
    let e = sim(&w, "cfs", 2, 1).unwrap_err();
    let SimError::Deadlock(msg) = &e else {
        panic!("{e:?}")
    };
    assert!(msg.starts_with("2 tasks remain"), "{msg}");
    assert_eq!(msg.matches("waits on condition 0").count(), 2, "{msg}");
    assert_eq!(
        w.ends.ended.load(Ordering::SeqCst),
        2,
        "one waiter and the waker"
    );
}

#[test]
fn a_signal_sent_while_nobody_waits_is_lost_and_the_waiter_deadlocks() {
    let w = LostSignal {
        unit: MS,
        ends: Ends::default(),
    };
    let e = sim(&w, "cfs", 2, 1).unwrap_err();
    assert_eq!(
        e,
        SimError::Deadlock("1 tasks remain; task 1 waits on condition 0".into())
    );
}

#[test]
fn a_deadlock_is_found_at_once_even_where_idle_cpus_keep_ticking() {
    // These policies tick idle CPUs, so the event queue never empties: the machine sees that no
    // task can run and no timer is pending instead of ticking until its event budget runs out.
    for policy in [
        "o1",
        "linux24",
        "linux24-mq",
        "bsd4",
        "ule",
        "staircase",
        "eevdf",
    ] {
        let w = LostSignal {
            unit: MS,
            ends: Ends::default(),
        };
        let started = std::time::Instant::now();
        let e = sim(&w, policy, 2, 1).unwrap_err();
        assert_eq!(
            e,
            SimError::Deadlock("1 tasks remain; task 1 waits on condition 0".into()),
            "{policy}"
        );
        assert!(started.elapsed() < Duration::from_secs(1), "{policy}");
    }
}

#[test]
fn cond_wait_releases_the_lock_to_its_next_waiter() {
    // Waiter and waker both want lock 0 at the start; on one CPU the waiter gets it first and
    // the waker, blocked on the lock, can only take it because cond_wait released it.
    let w = GoSignal::new(1, false, MS);
    let r = sim(&w, "cfs", 1, 1).unwrap();
    assert_eq!(samples(&r.outcome, "woke")[0].len(), 1);
}

#[test]
fn synchronisation_calls_cost_a_system_call() {
    // The poster's CPU time is its computation plus one system call (and the wakeup it made).
    let w = support::SemaphoreHandoff {
        initial: 0,
        takes: 1,
        unit: MS,
        ends: Ends::default(),
    };
    let r = sim(&w, "cfs", 2, 1).unwrap();
    let cost = CostModel::profile("modern").unwrap();
    let extra = r.outcome.tasks[1].cpu_time.as_nanos() as u64 - 1_000_000;
    assert!(
        extra as f64 >= cost.syscall as f64 * (1.0 - cost.jitter),
        "{extra} ns beyond the computation"
    );
}

/// Waits at a barrier the plan does not have.
struct NoSuchBarrier;

impl Workload for NoSuchBarrier {
    fn name(&self) -> &'static str {
        "no-such-barrier"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        support::plan(
            &[("a", 1)],
            0,
            SyncPlan {
                barriers: vec![1],
                ..SyncPlan::default()
            },
        )
    }
    async fn body<C: Context>(&self, _: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        ctx.barrier(BarrierId(0)).await?;
        ctx.barrier(BarrierId(1)).await
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

#[test]
fn an_object_the_plan_lacks_fails_the_task_naming_it() {
    let e = sim(&NoSuchBarrier, "cfs", 1, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "task 0: barrier 1 is not in the workload's plan, which has 1"
    );
}

/// The waiter holds lock 0 while the signaller blocks on it; the waiter's cond_wait releases
/// the lock and so wakes the signaller, which (on one CPU, having slept) preempts it before it
/// sleeps on the condition, takes the lock and signals.
struct SignalWhileReleasing {
    ends: Ends,
}

impl Workload for SignalWhileReleasing {
    fn name(&self) -> &'static str {
        "signal-while-releasing"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        support::plan(
            &[("waiter", 1), ("signaller", 1)],
            1,
            SyncPlan {
                conds: 1,
                ..SyncPlan::default()
            },
        )
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        use schedlab_workload::{CondId, LockId};
        let r = async {
            ctx.lock(LockId(0)).await;
            if task.group == 0 {
                ctx.compute(20 * MS).await;
                ctx.cond_wait(CondId(0), LockId(0)).await?;
            } else {
                ctx.cond_signal(CondId(0)).await?;
            }
            ctx.unlock(LockId(0));
            Ok(())
        };
        self.ends.count(r.await)
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

#[test]
fn a_signal_that_comes_while_the_waiter_releases_the_lock_is_not_lost() {
    let w = SignalWhileReleasing {
        ends: Ends::default(),
    };
    let r = sim(&w, "cfs", 1, 1).unwrap();
    // The waiter never blocked: it got the lock at once and was signalled (while preempted by
    // the wakeup its release made) before it could sleep on the condition. The signaller
    // blocked once, on the lock, and its wakeup preempted the waiter.
    assert_eq!(r.counters["waiter"].voluntary_switches, Some(0));
    assert_eq!(r.counters["waiter"].wakeup_preemptions, Some(0));
    assert_eq!(r.counters["signaller"].voluntary_switches, Some(1));
    assert_eq!(r.counters["signaller"].wakeup_preemptions, Some(1));
    assert_eq!(w.ends.ended.load(Ordering::SeqCst), 2);
}
