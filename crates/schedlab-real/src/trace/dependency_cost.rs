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
//! So the recorder measures them, with the replay's own semaphores ([`crate::sync::SyncObjects`])
//! and the thread CPU clock (the same `sum_exec_runtime` the BPF recorder reads): a waiter
//! thread waits on a semaphore [`ROUNDS`] times; the poster sleeps [`GAP`] between its posts,
//! long enough for the waiter to have parked, and reads its CPU clock around each post. The
//! post's cost is the median of those readings less the median of two back-to-back readings;
//! the wait's is the waiter's CPU time over the rounds divided by the times it parked (a wait
//! that found its post banked costs a few atomic operations, nothing beside a park). The
//! conversion takes them off the computes before each post that woke a sleeping task and each
//! wait that ended a sleep (`from_trace::Options::dependency_ns`).

use crate::sync::SyncObjects;
use schedlab_workload::SyncPlan;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Posts measured.
pub const ROUNDS: usize = 400;
/// How long the poster sleeps before each post, so that its waiter has parked.
pub const GAP: Duration = Duration::from_micros(100);
/// Fewest parks of the waiter, as a share of [`ROUNDS`], for a figure (below it the machine
/// was too busy for the waiter to park between posts, and the posts measured mostly banked).
pub const MIN_PARKED_SHARE: f64 = 0.5;

/// The replay's own cost of one dependency, ns of CPU time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DependencyCost {
    /// A post that wakes a parked waiter, on the poster's CPU time.
    pub post_ns: u64,
    /// A wait that parks, from its call to the switch-out and from the switch-in back, on the
    /// waiter's CPU time.
    pub wait_ns: u64,
}

/// Why the probe gave no figure.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The waiter thread could not be started or failed.
    #[error("the probe's waiter thread failed: {0}")]
    Thread(String),
    /// The waiter parked too rarely for the posts to be wakeups.
    #[error("the waiter parked in {parked} of {rounds} rounds (the machine too busy for it to park between posts)")]
    TooFewParks {
        /// Parks seen.
        parked: u64,
        /// Rounds run.
        rounds: usize,
    },
}

/// Measure [`DependencyCost`] as the module says, over `rounds` posts (at least 10).
pub fn measure(rounds: usize) -> Result<DependencyCost, ProbeError> {
    let rounds = rounds.max(10);
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
            std::thread::sleep(GAP);
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
    if (parked as f64) < MIN_PARKED_SHARE * rounds as f64 {
        return Err(ProbeError::TooFewParks { parked, rounds });
    }
    posts.sort_unstable();
    Ok(DependencyCost {
        post_ns: posts[rounds / 2].saturating_sub(read_ns),
        wait_ns: wait_cpu / parked.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_and_a_park_cost_some_cpu_time_and_less_than_a_gap() {
        let c = measure(200).expect("the probe runs");
        // A futex wake and a futex park each take at least a system call's entry and exit
        // (well over 50 ns anywhere) and far less than the poster's sleep between posts.
        assert!(c.post_ns > 50 && c.post_ns < GAP.as_nanos() as u64, "{c:?}");
        assert!(c.wait_ns > 50 && c.wait_ns < GAP.as_nanos() as u64, "{c:?}");
    }
}
