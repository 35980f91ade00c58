//! What the replay's own `post` and `wait` cost on this machine: the CPU time a recorded
//! dependency's replay adds to the computes around it.
//!
//! A recorded wakeup by another recorded task becomes a post by the waker and a wait by the
//! sleeper (`schedlab_script::from_trace`). The recorded computes around it already hold what
//! the program's own calls cost on its CPU: the waker's write or unlock up to and including the
//! kernel's wakeup of the sleeper (`try_to_wake_up`, charged to the waker), the sleeper's call
//! from its entry to `schedule()` and from its switch-in back to user space (the recorder
//! charges each run as the kernel did, `se.sum_exec_runtime`). The replay's post and wait are
//! calls of their own — a futex wake that wakes the parked waiter, a futex wait that parks
//! (`parking_lot_core`, [`crate::sync`]) — that pay that again: a replay of hackbench's threads
//! took 5.4 µs more CPU per post and 1.8 µs more per wait than the recording (a least-squares
//! fit over its 80 tasks, loaded 2-CPU VM), the bulk of its per-task excess.
//!
//! What they cost depends on the pace: a waiter that slept long comes back to cold caches, and
//! a post that comes before its waiter has parked is banked (a few atomic operations, and the
//! wait then goes through without parking). A probe that slept 100 µs between posts measured
//! 3.3 µs a post and 4.8 µs a wait, which took whole computes off `perf bench sched pipe`'s
//! round trips of 4 µs a side: its replays came out at ×0.36–0.53 of the recorded CPU time.
//! So the recorder measures them at the program's own pace, with the replay's own semaphores
//! ([`crate::sync::SyncObjects`]) and the thread CPU clock (the same `sum_exec_runtime` the BPF
//! recorder reads): a waiter thread waits on a semaphore over and over; the poster spins (on
//! the monotonic clock: a sleep would add a timer's own cost and slack) for the program's
//! median dependency sleep, within [`GAP_NS`], between its posts, and reads its CPU clock around
//! each. A post's cost is the mean of those readings less a reading's own (the slowest twentieth
//! left out: preemptions inside a post); a wait's is the waiter's CPU time over its waits,
//! parked or not — what the replay pays on average at that pace. The conversion takes them off
//! the computes before each post that woke a sleeping task and each wait that ended a sleep
//! (`from_trace::Options::dependency_ns`).

use crate::sync::SyncObjects;
use schedlab_workload::SyncPlan;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The shortest and the longest gap between the probe's posts, ns (the program's median
/// dependency sleep is brought into this range). Beyond 100 µs the probe's waiter parks every
/// time and comes back to caches the machine's other work has cooled, which the replay, parking
/// in a third to a half of the places the program slept, pays far less often: at hackbench's
/// own pace the probe measured 7–13 µs a wait and the replays came out at ×0.88–0.96 of the
/// recorded CPU time (loaded 2-CPU VM).
pub const GAP_NS: std::ops::RangeInclusive<u64> = 1_000..=100_000;
/// How long the probe's posts last in all, about, ns (fewer rounds for longer gaps).
const PROBE_NS: u64 = 200_000_000;
/// The fewest and the most posts measured.
pub const ROUNDS: std::ops::RangeInclusive<usize> = 200..=4_000;

/// The replay's own cost of one dependency at the program's pace, ns of CPU time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DependencyCost {
    /// A post, on the poster's CPU time (the mean: waking a parked waiter, or banked).
    pub post_ns: u64,
    /// A wait, on the waiter's CPU time (the mean: parking, from its call to the switch-out
    /// and from the switch-in back, or going through).
    pub wait_ns: u64,
    /// The gap between posts measured at, ns.
    pub gap_ns: u64,
    /// Of the waits, how many parked.
    pub parked: u64,
    /// Posts measured.
    pub rounds: usize,
}

/// Why the probe gave no figure.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The waiter thread could not be started or failed.
    #[error("the probe's waiter thread failed: {0}")]
    Thread(String),
}

/// The probe's gap and rounds for a program whose median dependency sleep is `median_ns`.
pub fn probe_plan(median_ns: u64) -> (u64, usize) {
    let gap = median_ns.clamp(*GAP_NS.start(), *GAP_NS.end());
    let rounds = ((PROBE_NS / gap) as usize).clamp(*ROUNDS.start(), *ROUNDS.end());
    (gap, rounds)
}

/// Measure [`DependencyCost`] as the module says, at the pace of a program whose median
/// dependency sleep is `median_sleep_ns` ([`probe_plan`]).
pub fn measure(median_sleep_ns: u64) -> Result<DependencyCost, ProbeError> {
    let (gap, rounds) = probe_plan(median_sleep_ns);
    let plan = SyncPlan {
        semaphores: vec![0],
        ..SyncPlan::default()
    };
    let sync = SyncObjects::new(&plan, Arc::new(AtomicBool::new(false)));
    // Two back-to-back readings of the thread CPU clock: what a reading adds to a post's.
    let mut reads: Vec<u64> = (0..rounds)
        .map(|_| {
            let t0 = crate::sys::thread_cpu_ns();
            crate::sys::thread_cpu_ns().saturating_sub(t0)
        })
        .collect();
    reads.sort_unstable();
    let read_ns = reads[rounds / 2];
    let mut posts = Vec::with_capacity(rounds);
    let waited = std::thread::scope(|s| {
        let waiter = std::thread::Builder::new()
            .name("dep-cost-wait".into())
            .spawn_scoped(s, || -> Result<(u64, u64), String> {
                let (v0, _) = crate::procfs::rusage_switches();
                let c0 = crate::sys::thread_cpu_ns();
                for _ in 0..rounds {
                    sync.sem_wait(0, None).map_err(|e| e.to_string())?;
                }
                let cpu = crate::sys::thread_cpu_ns().saturating_sub(c0);
                let (v1, _) = crate::procfs::rusage_switches();
                Ok((cpu, v1.saturating_sub(v0)))
            })
            .map_err(|e| e.to_string())?;
        for _ in 0..rounds {
            let until = crate::sys::monotonic_ns() + gap;
            while crate::sys::monotonic_ns() < until {
                std::hint::spin_loop();
            }
            let t0 = crate::sys::thread_cpu_ns();
            // Cannot fail: semaphore 0 is in the plan.
            let _ = sync.sem_post(0);
            posts.push(crate::sys::thread_cpu_ns().saturating_sub(t0));
        }
        waiter
            .join()
            .map_err(|_| "it panicked".to_string())
            .and_then(|r| r)
    });
    let (wait_cpu, parked) = waited.map_err(ProbeError::Thread)?;
    posts.sort_unstable();
    let kept = &posts[..rounds - rounds / 20];
    let post_mean = kept.iter().sum::<u64>() / kept.len() as u64;
    Ok(DependencyCost {
        post_ns: post_mean.saturating_sub(read_ns),
        wait_ns: wait_cpu / rounds as u64,
        gap_ns: gap,
        parked,
        rounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_paces_its_posts_as_the_program_slept_within_bounds() {
        assert_eq!(probe_plan(100_000), (100_000, 2_000));
        assert_eq!(probe_plan(10), (1_000, 4_000));
        assert_eq!(probe_plan(u64::MAX), (100_000, 2_000));
    }

    #[test]
    fn posts_and_waits_cost_some_cpu_time_and_a_long_gap_makes_the_waiter_park() {
        // 2000 posts 100 µs apart: the waiter has parked before most (it needs microseconds),
        // so most waits park and most posts wake it.
        let c = measure(1_000_000).expect("the probe runs");
        assert_eq!((c.gap_ns, c.rounds), (100_000, 2_000));
        assert!(c.parked >= 200, "{c:?}");
        // A futex wake and a futex park each take at least a system call's entry and exit
        // (well over 50 ns anywhere) and far less than the gap.
        assert!(c.post_ns > 50 && c.post_ns < 100_000, "{c:?}");
        assert!(c.wait_ns > 50 && c.wait_ns < 100_000, "{c:?}");
    }
}
