//! `mm_switch`: a switch between tasks of two processes pays it, one between two threads of one
//! process pays nothing, and a CPU that keeps running one process's task pays it no more
//! (`machine/address_space.rs`); at 0 (the built-in profiles) nothing changes.

mod common;

use schedlab_sim::policy::PolicySpec;
use schedlab_sim::SimSetup;
use schedlab_sim::{run_repetition, SimResult};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::TaskMode;
use schedlab_workload::presets::PingPong;

/// A ping-pong of 500 round trips over pipes, its tasks hosted as `mode`, on `cpus` CPUs under
/// eevdf, with `modern` without jitter and `mm_switch`; `knobs` per group (ping, pong).
fn run(mode: TaskMode, cpus: usize, knobs: &[Knobs], mm_switch: &str) -> SimResult {
    let w = PingPong {
        loops: 500,
        mode,
        ..PingPong::default()
    };
    let cost = common::modern_without_jitter(&format!("mm_switch={mm_switch}"));
    let spec: PolicySpec = "eevdf".parse().unwrap();
    run_repetition(&w, SimSetup::new(&spec, cpus, &cost, knobs)).unwrap()
}

/// The task switches of a run: each a block (voluntary) or a preemption (involuntary).
fn switches(r: &SimResult) -> i64 {
    let t = &r.counters["total"];
    (t.voluntary_switches.unwrap() + t.involuntary_switches.unwrap()) as i64
}

/// On one CPU every switch of a ping-pong between two processes goes to the other process and
/// pays `mm_switch` (the CPU is never idle, so the run is that much longer); between two
/// threads the same run takes exactly as long as without it.
#[test]
fn a_switch_between_two_processes_costs_mm_switch_and_between_two_threads_nothing() {
    let one = common::knobs(&["", ""]);
    let threads = run(TaskMode::Threads, 1, &one, "0");
    assert_eq!(
        run(TaskMode::Threads, 1, &one, "5us").elapsed_ns,
        threads.elapsed_ns
    );
    let without = run(TaskMode::Processes, 1, &one, "0");
    assert_eq!(
        without.elapsed_ns, threads.elapsed_ns,
        "processes cost nothing more at 0"
    );
    let with = run(TaskMode::Processes, 1, &one, "5us");
    // The same switches as without: only the cost moved.
    let n = switches(&with);
    assert_eq!(n, switches(&without));
    assert!(
        (995..=1_005).contains(&n),
        "{n} switches for 500 round trips"
    );
    // Each counted switch, the first switch-in (from the process that started the run) and the
    // one after the first task has ended (an exit is not counted as a switch), and the ticks
    // (1 µs each at HZ=250) that fall into the longer run.
    let extra = with.elapsed_ns as i64 - without.elapsed_ns as i64;
    let paid = extra - 5_000 * (n + 2);
    assert!(
        (0..=3_000).contains(&paid),
        "{extra} ns more for {n} switches"
    );
}

/// With ping on one CPU and pong on the other, each CPU only ever runs its own process's task:
/// it loads that address space once and pays `mm_switch` no more.
#[test]
fn a_cpu_that_runs_one_process_pays_mm_switch_once() {
    let apart = common::knobs(&["cpus=0", "cpus=1"]);
    let without = run(TaskMode::Processes, 2, &apart, "0");
    let with = run(TaskMode::Processes, 2, &apart, "5us");
    let extra = with.elapsed_ns as i64 - without.elapsed_ns as i64;
    assert!((0..=10_000).contains(&extra), "{extra} ns more");
}
