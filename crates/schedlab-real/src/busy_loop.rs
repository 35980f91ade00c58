//! rt-app's `run` as a loop count: a fixed unit of floating-point work repeated as many times
//! as a calibration made when the run starts says fill the asked time
//! ([`schedlab_workload::Context::compute_loops`]).
//!
//! This follows rt-app (github.com/scheduler-tools/rt-app, `src/rt-app.c`): its `run` event
//! calls `loadwait`, which turns the microseconds into `µs × 1000 / pLoad` iterations of
//! `waste_cpu_cycles`' loop (a chain of libm `ldexp` calls), and `pLoad`, the nanoseconds per
//! iteration, is either the file's `calibration` number or measured by
//! `calibrate_cpu_cycles` on the CPU `calibration: "CPU<n>"` names (rt-app's default `CPU0`)
//! before the threads start: batches of iterations timed with CLOCK_MONOTONIC until two
//! successive figures agree within 1/50, the smaller of two such methods kept (the CPU's
//! highest speed). The work unit here is schedlab's own (a dependent chain of square roots,
//! about as long as rt-app's iteration on the machines tried), and so is the measurement
//! ([`calibrate`]): batches of about a millisecond, one after the other on the pinned CPU,
//! until two successive figures agree within 1/50 (rt-app's test), the smaller kept. rt-app
//! keeps whole nanoseconds (35.7 becomes 35, so its runs take up to 1/35 longer than asked
//! there); schedlab keeps the fraction.
//!
//! What makes a loop count differ from CPU time is what changes the time of an iteration after
//! the calibration: a lower CPU frequency, a busy sibling hyperthread, caches another task
//! evicted. Preemption stretches the wall time of both alike.

use std::hint::black_box;
use std::time::Duration;

/// Iterations of a calibration batch when nothing is known yet.
const FIRST_BATCH: u64 = 10_000;
/// The time a calibration batch aims at once the first batch has given a figure.
const BATCH_NS: f64 = 1_000_000.0;
/// At most this many batches (a bound: 200 ms or so); the smallest figure seen is kept if two
/// successive ones never agreed.
const MAX_BATCHES: usize = 200;

/// One iteration's work: four dependent square roots of values kept from the optimiser.
#[inline(always)]
fn unit(x: f64) -> f64 {
    let mut v = x;
    for _ in 0..4 {
        v = black_box(v * 0.95 + 1.5).sqrt();
    }
    v
}

/// Run `loops` iterations of the busy loop.
pub fn spin(loops: u64) {
    let mut x = 4.0f64;
    for _ in 0..loops {
        x = unit(x);
    }
    black_box(x);
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

/// Nanoseconds per iteration of `loops` timed once on the calling thread.
fn time_batch(loops: u64) -> f64 {
    let t0 = crate::sys::monotonic_ns();
    spin(loops);
    let t1 = crate::sys::monotonic_ns();
    t1.saturating_sub(t0) as f64 / loops.max(1) as f64
}

/// Measure nanoseconds per iteration on the calling thread, wherever it runs: batches of about
/// a millisecond until two successive figures agree within 1/50 (rt-app's test), the smaller of
/// the two kept; after [`MAX_BATCHES`], the smallest seen.
pub fn measure_here() -> f64 {
    let mut last = time_batch(FIRST_BATCH);
    let mut least = last;
    for _ in 0..MAX_BATCHES {
        let loops = ((BATCH_NS / last.max(0.1)) as u64).max(1000);
        let now = time_batch(loops);
        least = least.min(now);
        if (now - last).abs() * 50.0 < last.min(now) {
            return last.min(now);
        }
        last = now;
    }
    least
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
            let t0 = crate::sys::thread_cpu_ns();
            spin(loops_for(Duration::from_millis(20), ns));
            let took = crate::sys::thread_cpu_ns() - t0;
            let ratio = took as f64 / 20e6;
            if (0.8..1.25).contains(&ratio) {
                return;
            }
            seen.push(ratio);
        }
        panic!("20 ms of calibrated loops took these shares of 20 ms of CPU time: {seen:?}");
    }

    #[test]
    fn calibrating_on_a_cpu_outside_the_process_is_an_error_naming_it() {
        let e = calibrate(rustix::thread::CpuSet::MAX_CPU + 1).unwrap_err();
        assert!(e.contains("may not run on CPU"), "{e}");
    }
}
