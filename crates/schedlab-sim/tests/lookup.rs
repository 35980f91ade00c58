//! The `lookup` workload on the simulator: each strategy takes `dcache_lock` exactly as often as
//! its definition says (presets/lookup.rs), counted by the machine's lock statistics and by the
//! body alike.

mod common;

use schedlab_sim::SimResult;
use schedlab_workload::presets::lookup::{DCACHE_LOCK, LRU_BATCH};
use schedlab_workload::presets::{Lookup, Preset};
use schedlab_workload::Workload;
use std::time::Duration;

fn lookup(dcache: &str, threads: usize, lookups: usize, cached: &str) -> Lookup {
    let mut l = Lookup::default();
    for (k, v) in [
        ("dcache", dcache),
        ("threads", &threads.to_string()),
        ("lookups", &lookups.to_string()),
        ("cached", cached),
        ("request", "50us"),
    ] {
        Preset::set_param(&mut l, k, v).unwrap();
    }
    Preset::check(&l).unwrap();
    l
}

fn sim(w: &Lookup, cpus: usize) -> SimResult {
    common::linux24_piii(w, cpus, Duration::from_secs(60))
}

/// Acquisitions of `dcache_lock` in the lock statistics, those the body counted, and the misses
/// it counted.
fn counts(r: &SimResult) -> (u64, u64, u64) {
    let lock = r.locks.iter().find(|l| l.name == DCACHE_LOCK).unwrap();
    let sum = |m: &str| -> u64 {
        r.outcome
            .tasks
            .iter()
            .filter_map(|t| t.samples.get(m))
            .flatten()
            .sum::<f64>() as u64
    };
    (lock.acquisitions, sum("acquisitions"), sum("misses"))
}

#[test]
fn each_strategy_takes_the_lock_as_often_as_its_definition_says() {
    let (threads, lookups, depth) = (4u64, 500u64, 6u64);
    for cached in ["100", "90", "50"] {
        for dcache in ["lock", "fastwalk", "rcu"] {
            let w = lookup(dcache, threads as usize, lookups as usize, cached);
            let r = sim(&w, 4);
            let (acquired, counted, misses) = counts(&r);
            assert_eq!(acquired, counted, "{dcache} cached={cached}");
            if cached == "100" {
                assert_eq!(misses, 0, "{dcache}: everything is cached");
            } else {
                assert!(misses > 0, "{dcache} cached={cached}: no miss");
            }
            let n = threads * lookups;
            let expected = match dcache {
                // A lock per component, one per miss to insert, one for the final dput's LRU.
                "lock" => n * (depth + 1) + misses,
                // One over the walk, one more per miss (taken again after it), one for the LRU.
                "fastwalk" => 2 * n + misses,
                // One per miss, one per LRU batch of each task (the last one partial).
                _ => misses + threads * lookups.div_ceil(LRU_BATCH),
            };
            assert_eq!(acquired, expected, "{dcache} cached={cached}");
            let m = w.metrics(&r.outcome).unwrap();
            assert_eq!(m["acq_per_lookup"], expected as f64 / n as f64);
            assert_eq!(m["lookups"], n as f64);
        }
    }
}

#[test]
fn the_walks_draw_the_same_paths_whatever_the_strategy() {
    // The draws depend on the task alone: every strategy meets the same misses.
    let misses: Vec<u64> = ["lock", "fastwalk", "rcu"]
        .iter()
        .map(|d| counts(&sim(&lookup(d, 2, 300, "80"), 2)).2)
        .collect();
    assert!(misses[0] > 0);
    assert!(misses.iter().all(|&m| m == misses[0]), "{misses:?}");
}

#[test]
fn fastwalk_holds_the_lock_longer_and_rcu_takes_it_least() {
    let hold = |d: &str| {
        let r = sim(&lookup(d, 8, 400, "90"), 8);
        let l = r
            .locks
            .iter()
            .find(|l| l.name == DCACHE_LOCK)
            .unwrap()
            .clone();
        (l.hold_mean_ns(), l.acquisitions)
    };
    let (lock_hold, lock_acq) = hold("lock");
    let (fw_hold, fw_acq) = hold("fastwalk");
    let (rcu_hold, rcu_acq) = hold("rcu");
    assert!(fw_hold > 2.5 * lock_hold, "{fw_hold} vs {lock_hold}");
    assert!(fw_acq * 3 < lock_acq && rcu_acq * 10 < lock_acq);
    // RCU's holds (inserts and LRU batches) are of one component's order, like lock's.
    assert!(rcu_hold < 2.0 * lock_hold, "{rcu_hold} vs {lock_hold}");
}

/// A spin lock's holder is not preempted (as a kernel's is not): with twice as many tasks as
/// CPUs, each time slice ends at a tick that may fall inside a hold, and the reschedule waits
/// for the unlock — no hold is longer than the walk's components and costs. Before this rule a
/// holder preempted at the tick held `dcache_lock` for a whole slice of another task.
#[test]
fn a_spin_locks_holder_is_not_preempted() {
    let r = sim(&lookup("fastwalk", 16, 400, "100"), 8);
    let l = r.locks.iter().find(|l| l.name == DCACHE_LOCK).unwrap();
    // fastwalk holds over six components of 2 µs each: 12 µs and the machine's costs.
    assert!(l.hold_max_ns < 50_000, "longest hold {} ns", l.hold_max_ns);
    // Slices did end: the tasks were switched involuntarily, between holds.
    let preempted: u64 = (r.counters.values())
        .filter_map(|c| c.involuntary_switches)
        .sum();
    assert!(preempted > 0, "no involuntary switch");
}
