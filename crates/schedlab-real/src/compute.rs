//! The real backend's `compute`: CPU time of the calling thread, spun.
//!
//! The thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) has no vDSO path on Linux (the vDSO
//! serves only the wall clocks; `posix_cpu_clock_get` is a system call): a read costs about
//! 350 ns of CPU on the 2-CPU VM this was measured on, against 28 ns for the vDSO monotonic
//! clock. Reading it at both ends of every compute made a 1 µs compute cost 1.55 µs and a
//! 0.2 µs one 1.05 µs — what made recorded programs' replays of many sub-µs bursts (a socket
//! call's worth of work between two calls) take about 1.8 times their CPU time. So a compute
//! takes one of two paths:
//!
//! - **Shorter than [`SHORT`]**: a calibrated busy loop ([`Calibration`], measured once per
//!   process in the thread's CPU time: a call's cost as a line in its iterations) runs as many
//!   iterations as fill the asked time; no clock is read. A loop's work is its iterations, so a
//!   preemption in the middle stretches its wall time, not its CPU time — what a CPU-time
//!   compute means. Its error is the calibration's: what makes an iteration cost more than it
//!   did then (a busy sibling hyperthread, a lower clock frequency) makes the compute longer by
//!   as much.
//! - **[`SHORT`] or longer**: spin on the vDSO monotonic clock (CPU time never runs ahead of wall
//!   time) and read the CPU clock only when the wall clock says the budget may be spent. The
//!   CPU the two reads cost beyond the measured interval (about one read,
//!   [`Calibration::read_ns`]) and the last read's overshoot are carried into the next such
//!   compute of the same task ([`Carry`]), so that their sum stays the asked sum.
//!
//! A workload file whose computes are cumulative (a recorded program's) takes a third way,
//! [`Cumulative::until`]: one read of the CPU clock says how far the task is from the sum of
//! its computes so far, and the short or the long path spends what is owed; what the task's
//! other steps cost in between, and each compute's own error, are made up by the next one. A
//! target below the clock's last reading needs no read at all; the computes that found the
//! task already past its sum are counted ([`CumulativeUse`]), for the run's report.
//!
//! Reading the CPU clock also makes the kernel account the thread on the spot
//! (`task_sched_runtime` → `update_curr`), which ends a fair-class slice the moment it is used
//! up rather than at the next tick: a task reading it in a tight loop is scheduled differently
//! from a plain loop (the interbench agreement showed it). The short path reads nothing, and the
//! long path reads it about twice per compute.

use std::cell::Cell;
use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Duration;

/// Computes shorter than this are a calibrated loop; longer ones are timed by the CPU clock. At
/// 20 µs the two reads of the clock (about 0.7 µs here) are 3.5 % of the compute, and carried.
pub const SHORT: Duration = Duration::from_micros(20);

/// Iterations per call of the calibration's short and long calls: the loop's cost is fitted as
/// a line through the two, because a short call costs less per iteration than a long one (the
/// processor overlaps the end of one iteration chain with what follows it: 1.15 ns per
/// iteration in calls of 50, 1.51 in calls of 130, 1.76 in calls of a million, measured here).
const CALL_ITERS: [u64; 2] = [64, 4096];
/// CPU time each side of a calibration batch aims at.
const BATCH_NS: f64 = 250_000.0;
/// Calibration batches: at least this many…
const MIN_BATCHES: usize = 5;
/// …and at most this many (a bound: about 30 ms); the medians are kept.
const MAX_BATCHES: usize = 60;
/// Pairs of back-to-back clock reads timed for [`Calibration::read_ns`].
const READ_PAIRS: usize = 200;

/// What a compute needs measured on this machine, once per process.
#[derive(Debug, Clone, Copy)]
pub struct Calibration {
    /// CPU nanoseconds (the thread's CPU clock) per iteration of [`spin`]: the slope of a
    /// call's cost against its iterations.
    pub ns_per_iter: f64,
    /// CPU nanoseconds of a call of [`spin`] beside its iterations (the line's intercept;
    /// negative where the processor overlaps a short call with what follows it).
    pub ns_per_call: f64,
    /// The CPU time between two back-to-back reads of the thread CPU clock: what a read costs
    /// outside the interval it measures (median of 200 pairs).
    pub read_ns: u64,
}

impl Calibration {
    /// The iterations of [`spin`] that take `cpu` of CPU time (0 for a time shorter than a
    /// call's own cost).
    pub fn iters_for(&self, cpu: Duration) -> u64 {
        let iters = (cpu.as_nanos() as f64 - self.ns_per_call) / self.ns_per_iter;
        // `as` turns a negative or NaN figure into 0.
        iters.round() as u64
    }
}

/// One iteration of the short path's loop: an addition through memory the optimiser must keep.
/// Cheap (a nanosecond or two), so a 0.2 µs compute is still a hundred iterations or so.
#[inline(always)]
fn step(x: u64, i: u64) -> u64 {
    black_box(x.wrapping_add(i))
}

/// Run `iters` iterations of the short path's loop (never inlined, so that the calibration's
/// calls and a compute's are the same code).
#[inline(never)]
pub fn spin(iters: u64) {
    let mut x = 0u64;
    for i in 0..iters {
        x = step(x, i);
    }
    black_box(x);
}

/// The short path: [`spin`] for `cpu` at `cal` (never inlined, so that the calibration's calls
/// and a compute's run the same code, the conversion included).
#[inline(never)]
fn short(cal: &Calibration, cpu: Duration) {
    spin(cal.iters_for(cpu));
}

/// CPU nanoseconds per call of `calls` calls of the short path for `iters` iterations, on the
/// thread's CPU clock (so a preemption during them costs them nothing).
fn per_call(iters: u64, calls: u64) -> f64 {
    // A calibration whose conversion gives `iters` back, through the compute's own code.
    let unit = Calibration {
        ns_per_iter: 1.0,
        ns_per_call: 0.0,
        read_ns: 0,
    };
    let cpu = crate::sys::thread_cpu_ns_in(|| {
        for _ in 0..calls {
            short(black_box(&unit), black_box(Duration::from_nanos(iters)));
        }
    });
    cpu as f64 / calls.max(1) as f64
}

/// Measure the calibration on the calling thread: batches of short and long calls of about a
/// quarter of a millisecond of CPU time each, a line through each batch's two figures, the
/// medians of slope and intercept kept — after at least five batches, once the last five
/// slopes agree within 2 %, at most 60.
pub fn measure() -> Calibration {
    let [short, long] = CALL_ITERS;
    // A first look, to size the batches.
    let rough = (per_call(long, 50) / long as f64).max(0.01);
    let calls = |iters: u64| ((BATCH_NS / (rough * iters as f64)) as u64).max(10);
    let (mut slopes, mut intercepts) = (Vec::new(), Vec::new());
    for _ in 0..MAX_BATCHES {
        let s = per_call(short, calls(short));
        let l = per_call(long, calls(long));
        let slope = (l - s) / (long - short) as f64;
        slopes.push(slope);
        intercepts.push(s - slope * short as f64);
        if slopes.len() >= MIN_BATCHES {
            let mut last = slopes[slopes.len() - MIN_BATCHES..].to_vec();
            last.sort_by(f64::total_cmp);
            if (last[MIN_BATCHES - 1] - last[0]) * 50.0 <= last[0] {
                break;
            }
        }
    }
    slopes.sort_by(f64::total_cmp);
    intercepts.sort_by(f64::total_cmp);
    let mut reads: Vec<u64> = (0..READ_PAIRS)
        .map(|_| {
            let a = crate::sys::thread_cpu_ns();
            let b = crate::sys::thread_cpu_ns();
            b.saturating_sub(a)
        })
        .collect();
    reads.sort_unstable();
    Calibration {
        ns_per_iter: slopes[slopes.len() / 2],
        ns_per_call: intercepts[intercepts.len() / 2],
        read_ns: reads[READ_PAIRS / 2],
    }
}

/// This process's calibration, measured on the first call (a few milliseconds; the runner
/// calls it before any task starts, so forked tasks inherit it).
pub fn calibration() -> Calibration {
    static CALIBRATION: OnceLock<Calibration> = OnceLock::new();
    *CALIBRATION.get_or_init(measure)
}

/// CPU time a task's clock-timed computes owe or are owed: what the last one spent beyond its
/// budget, taken off the next one. One per task (it is not shared between threads).
#[derive(Debug, Default)]
pub struct Carry(Cell<u64>);

/// Spend `cpu` of the calling thread's CPU time (the module comment says how), carrying the
/// clock-timed path's excess in `carry`.
pub fn compute(cpu: Duration, carry: &Carry) {
    compute_at(&calibration(), cpu, carry);
}

/// [`compute`] at calibration `cal`.
fn compute_at(cal: &Calibration, cpu: Duration, carry: &Carry) {
    if cpu < SHORT {
        short(cal, cpu);
        return;
    }
    let start = crate::sys::thread_cpu_ns();
    // The budget less what the previous compute overspent and what this one's reads cost
    // outside the interval they measure; never below zero (then the excess left is carried).
    let owed = carry.0.get() + cal.read_ns;
    let budget = (cpu.as_nanos() as u64).saturating_sub(owed);
    let left_owed = owed.saturating_sub(cpu.as_nanos() as u64);
    let target = start + budget;
    let used = spin_until_cpu(target, start, crate::sys::thread_cpu_ns);
    carry.0.set(left_owed + (used - target));
}

/// Spin until the CPU clock, read by `read` and last read at `read_ns`, passes `target_ns`:
/// on the vDSO monotonic clock (CPU time never runs ahead of wall time), reading the CPU clock
/// only when the wall clock says the rest may be spent. Returns the last reading.
fn spin_until_cpu(target_ns: u64, read_ns: u64, mut read: impl FnMut() -> u64) -> u64 {
    let mut used = read_ns;
    while used < target_ns {
        let spin_until = crate::sys::monotonic_ns() + (target_ns - used);
        while crate::sys::monotonic_ns() < spin_until {
            std::hint::spin_loop();
        }
        used = read();
    }
    used
}

/// A task's cumulative computes ([`schedlab_workload::Context::compute_to_total`]): the lowest
/// its CPU clock can read now (its last reading: the clock never goes back), and the computes
/// counted. One per task (it is not shared between threads).
#[derive(Debug, Default)]
pub struct Cumulative {
    /// The task's CPU clock at its last reading, ns.
    seen_ns: Cell<u64>,
    /// The last compute's target, ns.
    target_ns: Cell<u64>,
    /// Computes run.
    computes: Cell<u64>,
    /// Of them, those that found the task's CPU clock already at or past their target.
    past: Cell<u64>,
}

/// What a task's cumulative computes asked and found ([`Cumulative::used`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CumulativeUse {
    /// The computes' sum (the last one's target less the task's CPU clock at its start), ns.
    pub sum_ns: u64,
    /// Computes run.
    pub computes: u64,
    /// Of them, those that found the task already at or past its sum so far: its other steps
    /// had cost more than the computes before them left them, and the compute spent nothing.
    pub past: u64,
}

impl Cumulative {
    /// Spend the calling thread's CPU time until its CPU clock reads `target_ns`.
    ///
    /// A target at or below the clock's last reading is already passed (the clock never goes
    /// back): nothing is read or spent. Otherwise one read says what is owed; less than
    /// [`SHORT`] is the calibrated loop (its error, and the read's own cost, are seen by the
    /// next such compute's read and made up there), more is spun on the vDSO clock and read
    /// until the target is passed. Nothing is carried: the next call's read sees where this one
    /// ended.
    ///
    /// Skipping the read is what keeps a task whose steps cost more than its computes (a
    /// recorded pass that did less than the replay's sleep) from paying a read of the CPU
    /// clock (a system call) in every pass as well: once it is past its sum by more than the
    /// next computes, they cost a comparison each.
    pub fn until(&self, target_ns: u64) {
        self.until_with(target_ns, crate::sys::thread_cpu_ns, |owed| {
            short(&calibration(), Duration::from_nanos(owed))
        });
    }

    /// [`Cumulative::until`] with the CPU clock read by `read` and a short compute of `owed`
    /// ns spent by `short_path`.
    fn until_with(
        &self,
        target_ns: u64,
        mut read: impl FnMut() -> u64,
        short_path: impl FnOnce(u64),
    ) {
        self.computes.set(self.computes.get() + 1);
        self.target_ns.set(target_ns);
        if target_ns <= self.seen_ns.get() {
            self.past.set(self.past.get() + 1);
            return;
        }
        let now = read();
        self.seen_ns.set(now);
        let Some(owed) = target_ns.checked_sub(now).filter(|&o| o > 0) else {
            self.past.set(self.past.get() + 1);
            return;
        };
        if owed < SHORT.as_nanos() as u64 {
            short_path(owed);
            return;
        }
        self.seen_ns.set(spin_until_cpu(target_ns, now, read));
    }

    /// What the computes asked and found, counting from a CPU clock of `start_ns`; `None` if
    /// the task ran none.
    pub fn used(&self, start_ns: u64) -> Option<CumulativeUse> {
        (self.computes.get() > 0).then(|| CumulativeUse {
            sum_ns: self.target_ns.get().saturating_sub(start_ns),
            computes: self.computes.get(),
            past: self.past.get(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU time of `f` on this thread, in nanoseconds (the calibration made before).
    fn cpu_of(f: impl FnOnce()) -> u64 {
        calibration();
        crate::sys::thread_cpu_ns_in(f)
    }

    /// Runs `check` up to five times (a timing test on a shared machine), panicking with what
    /// every attempt gave if none passed.
    fn within(what: &str, asked_ns: f64, tolerance: f64, run: impl Fn() -> u64) {
        let mut seen = Vec::new();
        for _ in 0..5 {
            let ratio = run() as f64 / asked_ns;
            if (ratio - 1.0).abs() <= tolerance {
                return;
            }
            seen.push(ratio);
        }
        panic!("{what}: CPU time / asked, each attempt: {seen:?} (accepted: 1 ± {tolerance})");
    }

    #[test]
    fn iterations_fill_the_time_less_a_call() {
        let cal = Calibration {
            ns_per_iter: 2.0,
            ns_per_call: -30.0,
            read_ns: 300,
        };
        assert_eq!(cal.iters_for(Duration::from_nanos(200)), 115);
        let costly = Calibration {
            ns_per_call: 500.0,
            ..cal
        };
        assert_eq!(costly.iters_for(Duration::from_nanos(200)), 0);
    }

    #[test]
    fn the_calibration_is_plausible() {
        let cal = calibration();
        assert!(cal.ns_per_iter > 0.05 && cal.ns_per_iter < 100.0, "{cal:?}");
        assert!(cal.ns_per_call.abs() < 1000.0, "{cal:?}");
        assert!(cal.read_ns < 100_000, "{cal:?}");
    }

    #[test]
    fn ten_thousand_computes_of_1us_take_10ms_of_cpu_time() {
        // The short path: no clock read, the sum is the calibration's. Each attempt calibrates
        // first, as a run does before its tasks start: a calibration made earlier under other
        // load was off by 7-9 % in a loaded parallel test run here.
        let carry = Carry::default();
        within("10,000 × 1 µs", 10e6, 0.05, || {
            let cal = measure();
            cpu_of(|| {
                for _ in 0..10_000 {
                    compute_at(&cal, Duration::from_micros(1), &carry);
                }
            })
        });
    }

    #[test]
    fn a_hundred_thousand_computes_of_200ns_take_20ms_of_cpu_time() {
        let carry = Carry::default();
        // A call's cost beside its loop (the compute's own prologue, about 10-15 ns here) is a
        // larger share of a shorter compute.
        within("100,000 × 0.2 µs", 20e6, 0.10, || {
            let cal = measure();
            cpu_of(|| {
                for _ in 0..100_000 {
                    compute_at(&cal, Duration::from_nanos(200), &carry);
                }
            })
        });
    }

    #[test]
    fn clock_timed_computes_carry_their_excess() {
        // 400 computes of 25 µs: each would overshoot by a clock read and the last read's lag
        // without the carry; with it what is left is the CPU time charged between two computes
        // beyond a read's (a loaded machine's preemptions land there: 0.65 µs a compute measured
        // here, wall time 8 times the CPU time, against the 0.22 µs of a read).
        let carry = Carry::default();
        within("400 × 25 µs", 10e6, 0.03, || {
            cpu_of(|| {
                for _ in 0..400 {
                    compute(Duration::from_micros(25), &carry);
                }
            })
        });
    }

    #[test]
    fn cumulative_computes_make_up_what_the_steps_between_them_cost() {
        // 2000 steps of 5 µs, each after 2 µs of other work (a post or a wait's worth): the
        // thread's CPU time is the computes' sum, 10 ms, the other work included; the same
        // computes run as plain ones take 14 ms.
        calibration();
        within(
            "2000 × (2 µs other + 5 µs to the total)",
            10e6,
            0.03,
            || {
                let base = crate::sys::thread_cpu_ns();
                let cumulative = Cumulative::default();
                crate::sys::thread_cpu_ns_in(|| {
                    for k in 1..=2000u64 {
                        short(&calibration(), Duration::from_micros(2));
                        cumulative.until(base + k * 5_000);
                    }
                })
            },
        );
    }

    #[test]
    fn a_target_already_passed_spends_nothing() {
        let now = crate::sys::thread_cpu_ns();
        let spent = crate::sys::thread_cpu_ns_in(|| Cumulative::default().until(now));
        // A read or two of the clock, nothing like a compute.
        assert!(spent < 50_000, "{spent} ns");
    }

    /// A fake CPU clock: the readings it gives, in turn, and how many were taken.
    struct FakeClock {
        readings: Vec<u64>,
        taken: Cell<usize>,
    }

    impl FakeClock {
        fn read(&self) -> u64 {
            let k = self.taken.get();
            self.taken.set(k + 1);
            self.readings[k]
        }
    }

    #[test]
    fn a_target_below_the_last_reading_reads_nothing_and_counts_as_past() {
        let clock = FakeClock {
            readings: vec![1_200, 1_300, 1_400, 40_000],
            taken: Cell::new(0),
        };
        let spent = Cell::new(Vec::new());
        let short = |owed: u64| {
            let mut v = spent.take();
            v.push(owed);
            spent.set(v);
        };
        let c = Cumulative::default();
        // First compute: read 1200, owe 300 (the short path).
        c.until_with(1_500, || clock.read(), short);
        assert_eq!((clock.taken.get(), spent.take()), (1, vec![300]));
        // 1,100 and 1,200 are at or below the last reading: no read, nothing spent.
        c.until_with(1_100, || clock.read(), short);
        c.until_with(1_200, || clock.read(), short);
        assert_eq!((clock.taken.get(), spent.take()), (1, vec![]));
        // 1,250 is above it: read (1,300), already past, nothing spent.
        c.until_with(1_250, || clock.read(), short);
        assert_eq!((clock.taken.get(), spent.take()), (2, vec![]));
        // 1,290 is below the new reading: no read.
        c.until_with(1_290, || clock.read(), short);
        assert_eq!(clock.taken.get(), 2);
        // 30,000: read (1,400), owed 28,600, the long path: spins, reads again (40,000), past it.
        c.until_with(30_000, || clock.read(), short);
        assert_eq!((clock.taken.get(), spent.take()), (4, vec![]));
        assert_eq!(
            c.used(1_000),
            Some(CumulativeUse {
                sum_ns: 29_000,
                computes: 6,
                past: 4
            })
        );
        assert_eq!(Cumulative::default().used(0), None);
    }

    #[test]
    fn a_task_past_its_sum_stops_reading_the_clock() {
        // Passes of 3 µs of other work and a compute that asks 1 µs more of the sum: the task
        // falls behind by 2 µs a pass, so after the first passes every compute finds it past
        // without reading the clock. The passes cost their loops alone (6 ms); a read of the
        // CPU clock in each (a system call, 0.35 µs or more here) would add 12 % or more.
        calibration();
        let mut seen = Vec::new();
        for _ in 0..5 {
            let cumulative = Cumulative::default();
            let base = crate::sys::thread_cpu_ns();
            let passes = crate::sys::thread_cpu_ns_in(|| {
                for k in 1..=2000u64 {
                    short(&calibration(), Duration::from_micros(3));
                    cumulative.until(base + k * 1_000);
                }
            });
            let used = cumulative.used(base).unwrap();
            assert_eq!(used.computes, 2000);
            assert!(used.past >= 1990, "{used:?}");
            let loops = crate::sys::thread_cpu_ns_in(|| {
                for _ in 0..2000 {
                    short(&calibration(), Duration::from_micros(3));
                }
            });
            let ratio = passes as f64 / loops as f64;
            if ratio <= 1.06 {
                return;
            }
            seen.push(ratio);
        }
        panic!("passes / their loops alone, each attempt: {seen:?} (accepted: at most 1.06)");
    }
}
