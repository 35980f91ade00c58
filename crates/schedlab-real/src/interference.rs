//! What else used the machine while something was measured: other processes' CPU time, the
//! hypervisor's steal time, and other runnable tasks just before.
//!
//! Other processes' CPU time is the machine's busy time (`/proc/stat`'s `user + nice +
//! system`) less this process's own and its waited-for children's (getrusage `RUSAGE_SELF` +
//! `RUSAGE_CHILDREN`) over the same wall-clock interval: it needs no list of processes and sees
//! a compiler that started and ended in the middle. Kernel threads working for the measured
//! tasks (a kworker, ksoftirqd) count as others; so a watch reads a little above zero on an idle
//! machine, which is why [`Interference::busy`] has a floor. Children still running when the
//! watch ends count as others too: finish the watch after the measured tasks are reaped.

use crate::procfs::{competing_runnable, machine_cpu_time, MachineCpuTime};
use crate::sys::{clock_ticks_per_second, own_and_children_cpu_time};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Others used more than this share of the machine's CPU time (all CPUs × the interval):
/// enough to take time slices from a measured task now and then.
pub const BUSY_OTHERS_SHARE: f64 = 0.05;
/// The hypervisor stole more than this share of the machine's CPU time.
pub const BUSY_STEAL_SHARE: f64 = 0.02;

/// A watch started before a measurement; [`InterferenceWatch::finish`] after it.
#[derive(Debug)]
pub struct InterferenceWatch {
    machine: Option<MachineCpuTime>,
    own: Duration,
    started: Instant,
    runnable_before: Option<u64>,
}

/// What the machine did besides the measurement, over one watched interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// Other processes' CPU time as a share of the machine's (CPUs × wall time), 0…1.
    pub others_share: f64,
    /// This process's and its waited-for children's CPU time, as the same share.
    pub own_share: f64,
    /// Steal time as a share of the machine's CPU time, 0…1.
    pub steal_share: f64,
    /// Other runnable tasks just before the interval (the median of /proc/stat's
    /// `procs_running` over 100 ms, less the caller).
    pub runnable_before: Option<u64>,
    /// The interval's length, in seconds.
    pub seconds: f64,
}

impl InterferenceWatch {
    /// Look at the machine now: other runnable tasks (100 ms of looks), then the CPU times.
    pub fn start() -> InterferenceWatch {
        InterferenceWatch::after_look(competing_runnable())
    }

    /// Start watching the CPU times now, when other runnable tasks were just counted
    /// (`runnable_before`, as [`wait_until_quiet`] returns it).
    pub fn after_look(runnable_before: Option<u64>) -> InterferenceWatch {
        InterferenceWatch {
            machine: machine_cpu_time(),
            own: own_and_children_cpu_time(),
            started: Instant::now(),
            runnable_before,
        }
    }

    /// What others did since [`InterferenceWatch::start`]; `None` without /proc/stat.
    pub fn finish(self) -> Option<Interference> {
        let end = machine_cpu_time()?;
        let begin = self.machine?;
        let own = own_and_children_cpu_time().saturating_sub(self.own);
        let tick = 1.0 / clock_ticks_per_second() as f64;
        let total = end.total.saturating_sub(begin.total) as f64 * tick;
        let busy = end.busy.saturating_sub(begin.busy) as f64 * tick;
        let steal = end.steal.saturating_sub(begin.steal) as f64 * tick;
        let share = |x: f64| {
            if total > 0.0 {
                (x / total).clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        Some(Interference {
            others_share: share(busy - own.as_secs_f64()),
            own_share: share(own.as_secs_f64()),
            steal_share: share(steal),
            runnable_before: self.runnable_before,
            seconds: self.started.elapsed().as_secs_f64(),
        })
    }
}

impl Interference {
    /// Whether others or the hypervisor took enough to disturb a timing: more than
    /// [`BUSY_OTHERS_SHARE`] or [`BUSY_STEAL_SHARE`] of the machine's CPU time, or another task
    /// runnable when it began.
    pub fn busy(&self) -> bool {
        self.others_share > BUSY_OTHERS_SHARE
            || self.steal_share > BUSY_STEAL_SHARE
            || self.runnable_before.is_some_and(|n| n > 0)
    }

    /// The worse of two intervals, field by field (to describe several runs at once).
    pub fn worst(self, other: Interference) -> Interference {
        Interference {
            others_share: self.others_share.max(other.others_share),
            own_share: self.own_share.max(other.own_share),
            steal_share: self.steal_share.max(other.steal_share),
            runnable_before: self.runnable_before.max(other.runnable_before),
            seconds: self.seconds.max(other.seconds),
        }
    }

    /// One line for a warning: `other processes used 43 % of the CPU time, steal 0.0 %, 2 other
    /// tasks runnable before`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "other processes used {:.1} % of the machine's CPU time, steal {:.1} %",
            self.others_share * 100.0,
            self.steal_share * 100.0
        );
        if let Some(n) = self.runnable_before.filter(|&n| n > 0) {
            s.push_str(&format!(", {n} other task(s) runnable before"));
        }
        s
    }
}

/// Wait until no other task is runnable (looking every 100 ms), for at most `limit`; the
/// last count of other runnable tasks ([`competing_runnable`]): `Some(0)` when the machine
/// became quiet. `stop` ends the wait early.
pub fn wait_until_quiet(limit: Duration, stop: &std::sync::atomic::AtomicBool) -> Option<u64> {
    let until = Instant::now() + limit;
    loop {
        let runnable = competing_runnable();
        if runnable == Some(0)
            || Instant::now() >= until
            || stop.load(std::sync::atomic::Ordering::Relaxed)
        {
            return runnable;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process that spins while the watch runs — not this process, not a waited-for child —
    /// is seen as others' CPU time, whatever else the machine does.
    #[test]
    fn a_spinning_process_is_seen() {
        let watch = InterferenceWatch::start();
        let mut spinner = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        std::thread::sleep(Duration::from_millis(1500));
        let seen = watch.finish();
        spinner.kill().ok();
        spinner.wait().ok();
        let seen = seen.expect("/proc/stat");
        let cpus = crate::host::online_cpus() as f64;
        // One spinning process is 1/cpus of the machine; allow for it being descheduled.
        assert!(
            seen.others_share > 0.5 / cpus,
            "a spinner on {cpus} CPUs: {seen:?}"
        );
        assert!(seen.busy(), "{seen:?}");
        assert!(seen.describe().contains("other processes used"), "{seen:?}");
    }

    /// This process's own spinning is its own share, not others'.
    #[test]
    fn own_work_is_not_counted() {
        let watch = InterferenceWatch::start();
        // Spin until 300 ms of CPU time are ours (however busy the machine is), for at most 30 s.
        let (t, cpu0) = (Instant::now(), own_and_children_cpu_time());
        let mut x = 0u64;
        while own_and_children_cpu_time() - cpu0 < Duration::from_millis(300)
            && t.elapsed() < Duration::from_secs(30)
        {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        let seen = watch.finish().expect("/proc/stat");
        let cpus = crate::host::online_cpus() as f64;
        let own_seconds = seen.own_share * seen.seconds * cpus;
        assert!(
            own_seconds > 0.25,
            "300 ms of spinning, {own_seconds:.3} s of own time: {seen:?}"
        );
        assert!(seen.others_share + seen.own_share <= 1.0 + 1e-9, "{seen:?}");
    }

    #[test]
    fn busy_has_floors() {
        let quiet = Interference {
            others_share: 0.01,
            own_share: 0.5,
            steal_share: 0.0,
            runnable_before: Some(0),
            seconds: 1.0,
        };
        assert!(!quiet.busy());
        assert!(Interference {
            others_share: 0.2,
            ..quiet
        }
        .busy());
        assert!(Interference {
            steal_share: 0.05,
            ..quiet
        }
        .busy());
        assert!(Interference {
            runnable_before: Some(1),
            ..quiet
        }
        .busy());
        let w = quiet.worst(Interference {
            others_share: 0.2,
            ..quiet
        });
        assert_eq!(w.others_share, 0.2);
    }
}
