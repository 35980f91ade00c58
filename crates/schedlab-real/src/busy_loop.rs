//! rt-app's `run` as a loop count: rt-app's own unit of work repeated as many times as a
//! calibration made when the run starts says fill the asked time
//! ([`schedlab_workload::Context::compute_loops`]).
//!
//! This follows rt-app (github.com/scheduler-tools/rt-app, `src/rt-app.c`): its `run` event
//! calls `loadwait`, which turns the microseconds into `µs × 1000 / pLoad` iterations of
//! `waste_cpu_cycles`' loop, and `pLoad`, the nanoseconds per iteration, is either the file's
//! `calibration` number or measured by `calibrate_cpu_cycles` on the CPU `calibration:
//! "CPU<n>"` names (rt-app's default `CPU0`) before the threads start (`calibrate_cpu_cycles`,
//! v1.0 and upstream alike): two methods, one sleeping a second before each batch and one not,
//! each timing batches of 10,000, 43,333, 76,666, … iterations with CLOCK_MONOTONIC, keeping a
//! running average (the mean of the last figure and the previous average) and stopping at the
//! first figure within 1/50 of it; whole nanoseconds (integer division), the smaller of the two
//! methods' results kept (the CPU's highest speed).
//!
//! The iteration is rt-app's, instruction for instruction ([`crate::sys::rtapp_waste_cpu_cycles`]):
//! `waste_cpu_cycles` nests three `ldexp` calls four times; the compiler folds the two inner
//! ones (constants that do not overflow), so what the rt-app binary runs (Debian's 1.0,
//! disassembled) is four calls of the C library's `ldexp(0.95, 31129)`, each overflowing to
//! infinity and setting `errno`, each a direct call to `ldexp`'s PLT stub after loading the
//! constant from memory. The call's path is a large part of an iteration: schedlab's earlier
//! loop made the same calls from Rust, through a register holding `ldexp`'s address, and ran
//! 0.93 of rt-app's time per iteration (paired 40,000-iteration batches of both sequences,
//! alternating on one pinned CPU, 300 pairs, CPU time; the same in assembly through the GOT
//! directly: 0.92; the C source compiled here: 1.000) — the 0.94–0.96 of rt-app's run time
//! that `--run-as loops` showed at a given calibration. So the loop is written out in
//! assembly as rt-app's binary has it, and the same loop count takes the same time; a given
//! `calibration` number then means the same ns per loop to both.
//!
//! The measurement ([`calibrate`]) is schedlab's: batches of about a millisecond of the
//! thread's own CPU time, one after the other on the pinned CPU, twenty-one of them, their median
//! kept (rt-app stops at the first figure within 1/50 of its running average and keeps the
//! smaller method's, which on a virtual machine can be slow ones). On a quiet CPU both measure
//! the same loop; they differ where the loop's speed wanders during the calibration. rt-app times its batches with
//! CLOCK_MONOTONIC, so a task sharing the CPU during its calibration makes each iteration look
//! slower and every later `run` shorter (a test beside other tests' work saw rt-app's 10 ms runs
//! take 3 ms); timed by the thread's CPU clock, a batch that was preempted costs the same.
//! rt-app keeps whole nanoseconds (21.1 becomes 21, or 22 when its
//! calibration caught a slow moment, so its runs take 1.004 or 0.96 of the time asked here);
//! schedlab keeps the fraction.
//!
//! What makes a loop count differ from CPU time is what changes the time of an iteration after
//! the calibration: a lower CPU frequency, a busy sibling hyperthread, caches another task
//! evicted. Preemption stretches the wall time of both alike.

use std::time::Duration;

/// Iterations of a calibration batch when nothing is known yet.
const FIRST_BATCH: u64 = 10_000;
/// The time a calibration batch aims at once the first batch has given a figure.
const BATCH_NS: f64 = 1_000_000.0;
/// The batches a calibration times (about 20 ms). On a virtual machine the loop's speed wanders
/// for milliseconds at a time (the host's other work on the core): the first two batches that
/// agree within 1/50, rt-app's rule, were measured to give 10 ms runs of 7.2 to 10.9 ms, the
/// smallest of twenty batches runs 1.00 to 1.29 (median 1.05); the median of twenty is the
/// loop's speed most of the time.
const BATCHES: usize = 21;

/// Run `loops` iterations of rt-app's busy loop (four calls of `ldexp(0.95, 31129)` each, the
/// instruction sequence of rt-app's binary: [`crate::sys::rtapp_waste_cpu_cycles`]).
pub fn spin(loops: u64) {
    crate::sys::rtapp_waste_cpu_cycles(loops);
}

/// The iterations that fill `work` at `ns_per_loop` (rounded down, as rt-app's integer
/// division does; at least 0).
pub fn loops_for(work: Duration, ns_per_loop: f64) -> u64 {
    // Also 0 for a NaN figure, which compares false with everything.
    if ns_per_loop.is_nan() || ns_per_loop <= 0.0 {
        return 0;
    }
    (work.as_nanos() as f64 / ns_per_loop) as u64
}

/// Nanoseconds of the calling thread's CPU time per iteration of `loops` timed once: time
/// other tasks took the CPU for is not counted.
fn time_batch(loops: u64) -> f64 {
    crate::sys::thread_cpu_ns_in(|| spin(loops)) as f64 / loops.max(1) as f64
}

/// Measure nanoseconds per iteration on the calling thread, wherever it runs: the median of
/// [`BATCHES`] batches of about a millisecond of its CPU time each.
pub fn measure_here() -> f64 {
    let first = time_batch(FIRST_BATCH);
    let loops = ((BATCH_NS / first.max(0.1)) as u64).max(1000);
    let mut figures: Vec<f64> = (0..BATCHES).map(|_| time_batch(loops)).collect();
    figures.sort_by(f64::total_cmp);
    figures[BATCHES / 2]
}

/// Measure nanoseconds per iteration on CPU `cpu`, in a thread pinned there (the caller's own
/// affinity is left alone), as rt-app pins itself to its calibration CPU. An error names the
/// CPU when this process may not run there.
pub fn calibrate(cpu: usize) -> Result<f64, String> {
    let allowed = rustix::thread::sched_getaffinity(None)
        .map_err(|e| format!("reading this process's CPUs: {e}"))?;
    if cpu >= rustix::thread::CpuSet::MAX_CPU || !allowed.is_set(cpu) {
        let cpus: Vec<String> = (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| allowed.is_set(c))
            .map(|c| c.to_string())
            .collect();
        return Err(format!(
            "calibration \"CPU{cpu}\": this process may not run on CPU {cpu}; it may run on CPUs {}",
            cpus.join(",")
        ));
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            rustix::thread::sched_setaffinity(None, &set)
                .map_err(|e| format!("calibration \"CPU{cpu}\": pinning to CPU {cpu}: {e}"))?;
            Ok(measure_here())
        })
        .join()
        .map_err(|_| "the calibration thread panicked".to_string())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_for_divides_and_rounds_down() {
        assert_eq!(loops_for(Duration::from_micros(10), 35.0), 285);
        assert_eq!(loops_for(Duration::from_millis(10), 2.5), 4_000_000);
        assert_eq!(loops_for(Duration::from_millis(1), 0.0), 0);
        assert_eq!(loops_for(Duration::from_millis(1), f64::NAN), 0);
    }

    #[test]
    fn a_calibrated_count_takes_about_the_asked_time() {
        // On a CPU shared with other builds the figure may be off; the bound is loose and
        // the test repeats before failing (a timing test).
        let mut seen = Vec::new();
        for _ in 0..5 {
            let ns = measure_here();
            assert!(ns > 0.0 && ns < 10_000.0, "{ns} ns per loop");
            let took =
                crate::sys::thread_cpu_ns_in(|| spin(loops_for(Duration::from_millis(20), ns)));
            let ratio = took as f64 / 20e6;
            if (0.8..1.25).contains(&ratio) {
                return;
            }
            seen.push(ratio);
        }
        panic!("20 ms of calibrated loops took these shares of 20 ms of CPU time: {seen:?}");
    }

    #[test]
    fn a_task_sharing_the_cpu_does_not_slow_the_calibration() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let allowed = rustix::thread::sched_getaffinity(None).unwrap();
        let cpu = (0..rustix::thread::CpuSet::MAX_CPU)
            .find(|&c| allowed.is_set(c))
            .unwrap();
        let pin = || {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            rustix::thread::sched_setaffinity(None, &set).unwrap();
        };
        // Alone, then beside a thread on the same CPU that runs 5000 iterations and sleeps
        // 50 µs over and over, preempting the calibration's batches: the figures within 20 %,
        // the better of three tries (a timing test). Timed by the wall clock, as rt-app times
        // its calibration, a try came out at 38 ns per loop against 23 alone.
        let mut seen = Vec::new();
        for _ in 0..3 {
            let alone = calibrate(cpu).unwrap();
            let (stop, spinning) = (AtomicBool::new(false), AtomicBool::new(false));
            let shared = std::thread::scope(|s| {
                s.spawn(|| {
                    pin();
                    spinning.store(true, Ordering::Relaxed);
                    while !stop.load(Ordering::Relaxed) {
                        spin(5000);
                        std::thread::sleep(Duration::from_micros(50));
                    }
                });
                // This thread and the one `calibrate` starts (which inherits the policy) run
                // at SCHED_IDLE; the spinner, started before, stays normal.
                while !spinning.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
                s.spawn(|| {
                    let ns = calibrate(cpu);
                    stop.store(true, Ordering::Relaxed);
                    ns.unwrap()
                })
                .join()
                .unwrap()
            });
            if (shared / alone - 1.0).abs() < 0.2 {
                return;
            }
            seen.push((alone, shared));
        }
        panic!("ns per loop alone and at SCHED_IDLE beside a spinner on CPU {cpu}: {seen:?}");
    }

    #[test]
    fn calibrating_on_a_cpu_outside_the_process_is_an_error_naming_it() {
        let e = calibrate(rustix::thread::CpuSet::MAX_CPU + 1).unwrap_err();
        assert!(e.contains("may not run on CPU"), "{e}");
    }
}
