//! `web --dcache` on the simulator (issue 18, part 4; issue 41, part 3): every request's absolute
//! path (`/usr/local/apache2/htdocs/file_set/dirNNNNN/classC_F`, seven components, all cached)
//! is walked through seed 003's dcache model twice, as Apache 2.0's `stat` and `open`, and `dcache_lock` is taken exactly as often per request
//! as the strategy's definition says (crates/schedlab-workload/src/dcache.rs), counted by the
//! machine's lock statistics and by the server bodies alike.

mod common;

use schedlab_sim::SimResult;
use schedlab_workload::dcache::DCACHE_LOCK;
use schedlab_workload::presets::{Preset, Web};
use schedlab_workload::record::LockStats;
use schedlab_workload::web::dentries::PATH_COMPONENTS;
use schedlab_workload::Workload;
use std::time::Duration;

fn web(dcache: &str, connections: usize, server: &str) -> Web {
    let mut w = Web::with_defaults(8);
    for (k, v) in [
        ("dcache", dcache),
        ("connections", &connections.to_string()),
        ("server", server),
        ("dirs", "4"),
        ("duration", "2s"),
    ] {
        Preset::set_param(&mut w, k, v).unwrap();
    }
    Preset::check(&w).unwrap();
    w
}

fn sim(w: &Web, cpus: usize) -> SimResult {
    common::linux24_piii(w, cpus, Duration::from_secs(120))
}

fn dcache_lock(r: &SimResult) -> LockStats {
    r.locks
        .iter()
        .find(|l| l.name == DCACHE_LOCK)
        .expect("dcache_lock in the lock statistics")
        .clone()
}

/// Per server task, the requests it served and the acquisitions it counted.
fn per_server(r: &SimResult) -> Vec<(u64, u64)> {
    r.outcome
        .tasks
        .iter()
        .filter_map(|t| {
            let one = |m: &str| t.samples.get(m).map(|v| v.iter().sum::<f64>() as u64);
            Some((one("served")?, one("acquisitions")?))
        })
        .collect()
}

#[test]
fn each_strategy_takes_the_lock_per_request_as_its_definition_says() {
    for server in ["prefork:4", "event:2"] {
        for dcache in ["lock", "fastwalk", "rcu"] {
            let w = web(dcache, 8, server);
            let r = sim(&w, 4);
            let servers = per_server(&r);
            assert_eq!(servers.len(), w.server_tasks(), "{dcache} {server}");
            let served: u64 = servers.iter().map(|s| s.0).sum();
            assert!(served > 30, "{dcache} {server}: {served} requests");
            // Two walks per request (stat, then open), each ending in a final dput; nothing
            // misses.
            let expected: u64 = 2
                * served
                * match dcache {
                    // A lock per component and one for the dput.
                    "lock" => PATH_COMPONENTS as u64 + 1,
                    // One over the walk, one for the dput.
                    "fastwalk" => 2,
                    // Only the dput.
                    _ => 1,
                };
            let counted: u64 = servers.iter().map(|s| s.1).sum();
            assert_eq!(counted, expected, "{dcache} {server}: the bodies' count");
            let lock = dcache_lock(&r);
            assert_eq!(lock.acquisitions, expected, "{dcache} {server}: lockmeter");
            let m = w.metrics(&r.outcome).unwrap();
            assert_eq!(m["acq_per_request"], expected as f64 / served as f64);
            assert!(m["conforming"] > 0.0, "{dcache} {server}");
        }
    }
}

#[test]
fn without_a_dcache_there_is_no_lock_and_the_same_requests_are_served() {
    let plain = web("none", 8, "prefork:4");
    assert_eq!(plain.plan().locks, 0);
    let r = sim(&plain, 4);
    assert!(r.locks.iter().all(|l| l.name != DCACHE_LOCK));
    assert!(per_server(&r).is_empty());
    // The walk adds a few microseconds per request to responses paced at 400 kbit/s: an
    // unsaturated machine serves the same connections at the rated pace either way.
    let walked = sim(&web("lock", 8, "prefork:4"), 4);
    let conforming = |r: &SimResult, w: &Web| w.metrics(&r.outcome).unwrap()["conforming"];
    assert_eq!(
        conforming(&r, &plain),
        conforming(&walked, &web("lock", 8, "prefork:4"))
    );
}

#[test]
fn fastwalk_holds_longest_and_rcu_takes_the_lock_least() {
    let stats = |d: &str| dcache_lock(&sim(&web(d, 32, "prefork:8"), 8));
    let (lock, fastwalk, rcu) = (stats("lock"), stats("fastwalk"), stats("rcu"));
    assert!(
        fastwalk.acquisitions < lock.acquisitions && rcu.acquisitions < fastwalk.acquisitions,
        "{} {} {}",
        lock.acquisitions,
        fastwalk.acquisitions,
        rcu.acquisitions
    );
    // fastwalk holds the lock over seven components; lock and rcu over about one.
    assert!(
        fastwalk.hold_mean_ns() > 3.0 * lock.hold_mean_ns(),
        "{} {}",
        fastwalk.hold_mean_ns(),
        lock.hold_mean_ns()
    );
    assert!(
        rcu.hold_mean_ns() < fastwalk.hold_mean_ns(),
        "{} {}",
        rcu.hold_mean_ns(),
        fastwalk.hold_mean_ns()
    );
}
