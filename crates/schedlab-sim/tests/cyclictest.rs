//! The `cyclictest` workload's latency on the simulator, against answers the machine's timing
//! rules give: a timer that fires on an idle CPU makes it leave idle (`idle_exit`), take its
//! runqueue lock (`rq_lock`) and switch to the woken thread (`switch`) before the thread reads
//! the clock; a policy whose idle CPUs do not look at their queue until the tick may add up to a
//! tick to that.

mod common;

use common::modern_without_jitter;
use schedlab_sim::policy::{PolicySpec, POLICIES};
use schedlab_sim::{run_repetition, SimSetup};
use schedlab_workload::knobs::{Knobs, SchedPolicy};
use schedlab_workload::presets::{CyclicLoad, Cyclictest};
use schedlab_workload::Workload;
use std::collections::BTreeMap;
use std::time::Duration;

fn run(w: &Cyclictest, policy: &str, cpus: usize, knobs: &[Knobs]) -> BTreeMap<String, f64> {
    let spec: PolicySpec = policy.parse().unwrap();
    let cost = modern_without_jitter("");
    let r = run_repetition(w, SimSetup::new(&spec, cpus, &cost, knobs))
        .unwrap_or_else(|e| panic!("{policy}: {e}"));
    w.metrics(&r.outcome)
        .unwrap_or_else(|e| panic!("{policy}: {e}"))
}

/// The known answer: a thread alone on an unloaded machine wakes exactly `idle_exit + rq_lock +
/// switch` after each expiry under a policy that kicks an idle CPU at once (eevdf), every cycle
/// the same; under every policy it is never later than that plus one tick (the granularity at
/// which an idle CPU that is not kicked finds its queue), and it completes every period.
#[test]
fn a_lone_periodic_thread_is_late_by_the_wakeup_path_only() {
    let cost = modern_without_jitter("");
    let path_ns = (cost.idle_exit + cost.rq_lock + cost.switch) as f64;
    let w = Cyclictest {
        threads: 1,
        interval: Duration::from_micros(1000),
        duration: Duration::from_millis(200),
        ..Cyclictest::default()
    };
    let knobs = vec![Knobs::default()];
    let m = run(&w, "eevdf", 2, &knobs);
    eprintln!("eevdf: {m:?}");
    assert_eq!(m["latency_min"] * 1e3, path_ns, "{m:?}");
    assert_eq!(m["latency_max"] * 1e3, path_ns, "{m:?}");
    assert_eq!(m["t0_act"] * 1e3, path_ns, "{m:?}");
    // Periods of 1 ms from the start until a wakeup at or after 200 ms: 200 of them.
    assert_eq!(m["cycles"], 200.0, "{m:?}");
    assert_eq!(m["overruns"], 0.0, "{m:?}");
    let granularity = path_ns + cost.tick_ns() as f64;
    for def in POLICIES {
        let m = run(&w, def.name, 2, &knobs);
        assert!(
            m["latency_min"] * 1e3 >= path_ns && m["latency_max"] * 1e3 <= granularity,
            "{}: latencies {}..{} us, the wakeup path is {path_ns} ns and a tick {} ns",
            def.name,
            m["latency_min"],
            m["latency_max"],
            cost.tick_ns()
        );
        assert_eq!(m["overruns"], 0.0, "{}: {m:?}", def.name);
        assert_eq!(m["cycles"], 200.0, "{}: {m:?}", def.name);
    }
}

/// Thread i's interval is interval + i × distance, so in the same time the threads make
/// proportionally fewer cycles; every thread has its own line of metrics.
#[test]
fn distance_gives_each_thread_its_own_interval() {
    let w = Cyclictest {
        threads: 3,
        interval: Duration::from_micros(1000),
        distance: Duration::from_micros(1000),
        duration: Duration::from_millis(60),
        ..Cyclictest::default()
    };
    let m = run(&w, "eevdf", 4, &[Knobs::default()]);
    assert_eq!(m["t0_cycles"], 60.0, "{m:?}");
    assert_eq!(m["t1_cycles"], 30.0, "{m:?}");
    assert_eq!(m["t2_cycles"], 20.0, "{m:?}");
    assert_eq!(m["cycles"], 110.0, "{m:?}");
    let m = run(
        &Cyclictest { loops: 7, ..w },
        "eevdf",
        4,
        &[Knobs::default()],
    );
    assert_eq!(
        m["cycles"], 21.0,
        "loops end each thread after 7 cycles: {m:?}"
    );
}

/// Beside CPU burners on one CPU under Linux 2.4, a SCHED_FIFO thread preempts a burner at its
/// wakeup and is late by the wakeup path's cost only; so is an ordinary thread at nice 0 (a
/// sleeper keeps a full counter, and `preemption_goodness` favours it), but at nice 19 its
/// goodness does not beat a burner's and it waits for the burner's slice to end: the latency
/// is the policy's decision, not the timer's.
#[test]
fn a_realtime_thread_beside_a_load_preempts_and_an_ordinary_one_waits() {
    let w = Cyclictest {
        threads: 1,
        duration: Duration::from_millis(300),
        load: CyclicLoad::Burn,
        load_threads: 2,
        ..Cyclictest::default()
    };
    let fifo = Knobs {
        policy: Some(SchedPolicy::Fifo(90)),
        ..Knobs::default()
    };
    let nice19 = Knobs {
        nice: Some(19),
        ..Knobs::default()
    };
    let rt = run(&w, "linux24", 1, &[fifo, Knobs::default()]);
    let other = run(&w, "linux24", 1, &[Knobs::default(), Knobs::default()]);
    let niced = run(&w, "linux24", 1, &[nice19, Knobs::default()]);
    eprintln!(
        "linux24, 1 CPU, 2 burners: max latency fifo {} us, other {} us, other nice 19 {} us",
        rt["latency_max"], other["latency_max"], niced["latency_max"]
    );
    let cost = modern_without_jitter("");
    let path_us = (cost.idle_exit + cost.rq_lock + cost.switch) as f64 / 1e3;
    assert!(rt["latency_max"] <= 2.0 * path_us, "{rt:?}");
    assert!(other["latency_max"] <= 2.0 * path_us, "{other:?}");
    // At least a tick (10 ms at HZ=100) behind a burner's slice.
    assert!(
        niced["latency_max"] >= cost.tick_ns() as f64 / 1e3,
        "fifo {rt:?}\nnice 19 {niced:?}"
    );
}
