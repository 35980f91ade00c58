//! Barriers, semaphores and condition variables on real threads: the same behaviours as on the
//! simulator (the workloads are shared with its tests), tasks that block in the kernel while
//! they wait, and waits that end with `Stopped` when the run is stopped or fails.

#[path = "../../schedlab-workload/tests/support/sync.rs"]
mod support;

use schedlab_real::{run_repetition, RepetitionResult, RepetitionSetup, RunError};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::{TaskMode, Workload};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{samples, total, BarrierRounds, BoundedBuffer, Ends, GoSignal, LostSignal};

const MS: Duration = Duration::from_millis(1);

/// Run `w` once on threads with a time budget and, if given, a stop flag.
fn run_with<W: Workload>(
    w: &Arc<W>,
    budget: Duration,
    stop: Arc<AtomicBool>,
) -> Result<RepetitionResult, RunError> {
    let knobs = vec![Knobs::default(); w.plan().groups.len()];
    run_repetition(
        w,
        RepetitionSetup {
            knobs: &knobs,
            stop,
            budget,
            trace: None,
            rq_trace: None,
            files: None,
            passes: false,
        },
    )
}

/// Run `w` past a 300 ms budget: the repetition times out, then all `ended` tasks end — `stopped`
/// of them with `Stopped`, woken from the waits nobody would end. Returns how long the run took.
fn times_out_with_stopped_waiters<W: Workload>(
    w: &Arc<W>,
    ends: &Ends,
    ended: usize,
    stopped: usize,
) -> Duration {
    let started = Instant::now();
    let e = run_with(w, 300 * MS, Arc::default()).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(e, RunError::Timeout(_)), "{e:?}");
    assert!(
        ends.wait_for(ended, Duration::from_secs(2)),
        "a waiter hangs"
    );
    assert_eq!(ends.stopped.load(Ordering::SeqCst), stopped);
    took
}

fn run<W: Workload>(w: &Arc<W>) -> RepetitionResult {
    run_with(w, Duration::from_secs(20), Arc::default()).unwrap()
}

#[test]
fn a_barrier_lets_nobody_pass_until_its_last_party_arrives_round_after_round() {
    let w = Arc::new(BarrierRounds {
        tasks: 3,
        parties: 3,
        rounds: 3,
        unit: 5 * MS,
        ends: Ends::default(),
    });
    let r = run(&w);
    let arrive = samples(&r.outcome, "arrive");
    let leave = samples(&r.outcome, "leave");
    for round in 0..3 {
        let last = (0..3).map(|t| arrive[t][round]).fold(0.0, f64::max);
        assert!(last >= (15 * (round + 1)) as f64 * 1e6, "{last}");
        for (t, l) in leave.iter().enumerate() {
            assert!(
                l[round] >= last,
                "round {round}: task {t} left at {} before the last arrival at {last}",
                l[round]
            );
        }
    }
}

#[test]
fn a_semaphore_at_zero_makes_its_waiter_block_until_the_post() {
    // The poster computes long enough that the waiter reaches the semaphore first even on a
    // loaded 2-CPU machine.
    let w = Arc::new(support::SemaphoreHandoff {
        initial: 0,
        takes: 1,
        unit: 200 * MS,
        ends: Ends::default(),
    });
    let r = run(&w);
    let waiting = samples(&r.outcome, "waiting")[0][0];
    let took = samples(&r.outcome, "took")[0][0];
    let posted = samples(&r.outcome, "posted")[1][0];
    assert!(
        posted >= 200e6 && took >= posted,
        "took {took}, posted {posted}"
    );
    assert!(
        waiting < posted,
        "the waiter reached the semaphore at {waiting} ns, after the post at {posted} ns: the machine was too loaded to test blocking"
    );
    // It slept in the kernel rather than spinning: little CPU time, and at least the voluntary
    // switch of the wait (the start gate adds one only when the task reaches it closed and is
    // not preempted first).
    assert!(
        r.outcome.tasks[0].cpu_time < 10 * MS,
        "{:?}",
        r.outcome.tasks[0]
    );
    let c = &r.counters["waiter"];
    assert!(c.voluntary_switches >= Some(1), "{c:?}");
}

#[test]
fn a_semaphore_counts_its_initial_value_and_blocks_after_it() {
    let w = Arc::new(support::SemaphoreHandoff {
        initial: 2,
        takes: 3,
        unit: 50 * MS,
        ends: Ends::default(),
    });
    let r = run(&w);
    let took = &samples(&r.outcome, "took")[0];
    let posted = samples(&r.outcome, "posted")[1][0];
    assert_eq!(took.len(), 3);
    assert!(took[0] < posted && took[1] < posted, "{took:?} vs {posted}");
    assert!(took[2] >= posted, "{took:?} vs {posted}");
}

#[test]
fn a_post_handed_to_a_waiter_is_not_counted_too() {
    // One post, two takes: the second waits until the run stops.
    let w = Arc::new(support::SemaphoreHandoff {
        initial: 0,
        takes: 2,
        unit: 20 * MS,
        ends: Ends::default(),
    });
    times_out_with_stopped_waiters(&w, &w.ends, 2, 1);
}

#[test]
fn a_bounded_buffer_with_a_lock_and_two_conditions_moves_every_item_once() {
    let w = Arc::new(BoundedBuffer::new(2, 2, 200, 3));
    let r = run(&w);
    let o = &r.outcome;
    assert_eq!(total(o, "produced"), 400.0);
    assert_eq!(total(o, "consumed"), 400.0);
    assert_eq!(w.count.load(Ordering::SeqCst), 0);
    let most = w.most.load(Ordering::SeqCst);
    assert!((1..=3).contains(&most), "{most}");
    assert!(
        total(o, "waited_full") > 0.0,
        "producers never waited for room"
    );
    assert_eq!(
        w.overlaps.load(Ordering::SeqCst),
        0,
        "two tasks held the lock"
    );
}

#[test]
fn a_broadcast_wakes_every_waiter() {
    let w = Arc::new(GoSignal::new(3, true, 20 * MS));
    let r = run(&w);
    let woke = samples(&r.outcome, "woke");
    for w in &woke[..3] {
        assert_eq!(w.len(), 1);
        assert!(w[0] >= 20e6, "{woke:?}");
    }
}

#[test]
fn a_signal_wakes_one_waiter_and_the_others_wait_until_the_run_stops() {
    let w = Arc::new(GoSignal::new(3, false, 20 * MS));
    // After the budget, the two waiters still on the condition are woken with Stopped.
    let took = times_out_with_stopped_waiters(&w, &w.ends, 4, 2);
    assert!(took < Duration::from_secs(5));
}

#[test]
fn a_signal_sent_while_nobody_waits_is_lost() {
    let w = Arc::new(LostSignal {
        unit: 20 * MS,
        ends: Ends::default(),
    });
    times_out_with_stopped_waiters(&w, &w.ends, 2, 1);
}

#[test]
fn a_stop_request_ends_the_waits_at_a_barrier() {
    let w = Arc::new(BarrierRounds {
        tasks: 2,
        parties: 3,
        rounds: 1,
        unit: MS,
        ends: Ends::default(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let setter = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::SeqCst);
        })
    };
    let e = run_with(&w, Duration::from_secs(20), stop).unwrap_err();
    setter.join().unwrap();
    assert_eq!(e, RunError::Interrupted);
    assert!(w.ends.wait_for(2, Duration::from_secs(2)), "a party hangs");
    assert_eq!(w.ends.stopped.load(Ordering::SeqCst), 2);
}

#[test]
fn forked_tasks_cannot_share_the_objects_and_are_refused() {
    let w = Arc::new(support::Hosted(
        BarrierRounds {
            tasks: 2,
            parties: 2,
            rounds: 1,
            unit: MS,
            ends: Ends::default(),
        },
        TaskMode::Processes,
    ));
    let e = run_with(&w, Duration::from_secs(5), Arc::default()).unwrap_err();
    assert_eq!(
        e,
        RunError::Setup(
            "barriers need tasks run as threads: tasks=processes is not accepted with them; use tasks=threads"
                .into()
        )
    );
}
