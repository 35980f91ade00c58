//! The plan's locks on real threads, timed ([`RealLock`]): a sleeping lock is the futex mutex of
//! `parking_lot` (as before); a spin lock is a test-and-test-and-set lock whose waiters spin on a
//! plain load with `pause` (`std::hint::spin_loop`) and never leave their CPU.
//!
//! Each lock keeps lockmeter's statistics (seeds/003: acquisitions, those that waited, hold and
//! wait time mean and max, the CPU share spent spinning) with as little perturbation as the
//! clock allows:
//!
//! - an acquisition reads the clock (`CLOCK_MONOTONIC` through the vDSO, about 25 ns) and tries
//!   the lock once: if it gets it, its hold starts at that reading (a few nanoseconds early);
//!   only if it has to wait does it read the clock again once it has the lock (the wait's end
//!   and the hold's start);
//! - the holder reads the clock once more before releasing it. An uncontended acquisition thus
//!   costs two clock reads, one of them inside the critical section (about +50 ns per lock and
//!   unlock, +25 ns of hold: `locks::tests::uncontended_cost`); `bench/locks.sh` measures what
//!   that does to a whole run against the same run without statistics;
//! - the counters are written only by the holder, under the lock, with relaxed loads and stores
//!   (plain moves, no atomic read-modify-write), on their own cache line so that spinners
//!   reading the lock word do not see the holder's updates;
//! - a spin lock's waiter is counted as spinning for all of its wait (a waiter preempted while
//!   spinning is counted too); a sleeping lock's waiter spends no CPU by this count
//!   (`parking_lot` spins a few microseconds before it parks; that is not separated out).
//!
//! The statistics are gathered for tasks run as threads (`tasks=threads`, the default); tasks
//! hosted as group processes each use their process's copy of the locks, and the record then
//! has no lock statistics.
//!
//! `SCHEDLAB_LOCK_STATS=0` in the environment turns the timing off (the locks are the same,
//! their statistics are then absent from the record), for measuring the overhead.

use lock_api::RawMutex as _;
use schedlab_workload::plan::LockKind;
use schedlab_workload::record::LockStats;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The counters of one lock, written by its holder only.
#[derive(Default)]
#[repr(align(64))]
struct Counters {
    acquisitions: AtomicU64,
    waited: AtomicU64,
    hold_ns: AtomicU64,
    hold_max_ns: AtomicU64,
    wait_ns: AtomicU64,
    wait_max_ns: AtomicU64,
    /// When the current holder took it.
    held_since: AtomicU64,
}

/// Add `v` to a counter only the lock's holder writes (no read-modify-write needed).
fn add(c: &AtomicU64, v: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

/// Raise a maximum only the lock's holder writes.
fn raise(c: &AtomicU64, v: u64) {
    if v > c.load(Ordering::Relaxed) {
        c.store(v, Ordering::Relaxed);
    }
}

/// A test-and-test-and-set spin lock: waiters spin on a load (the line stays shared in their
/// caches) with `pause`, and try the exchange only when the lock looks free.
#[derive(Default)]
#[repr(align(64))]
pub struct SpinLock {
    locked: AtomicBool,
}

impl SpinLock {
    /// Take the lock if it is free.
    pub fn try_lock(&self) -> bool {
        !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::Acquire)
    }

    /// Take the lock, spinning while it is held.
    pub fn lock(&self) {
        while !self.try_lock() {
            while self.locked.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
    }

    /// Release the lock (held by the caller).
    pub fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

/// How a [`RealLock`] waits.
enum Inner {
    Sleep(parking_lot::RawMutex),
    Spin(SpinLock),
}

/// One lock of the plan, with its statistics.
pub struct RealLock {
    inner: Inner,
    name: String,
    timed: bool,
    counters: Counters,
}

impl RealLock {
    /// A free lock of `kind`, called `name` in the statistics; `timed` false keeps none.
    pub fn new(kind: LockKind, name: String, timed: bool) -> RealLock {
        RealLock {
            inner: match kind {
                LockKind::Sleep => {
                    Inner::Sleep(<parking_lot::RawMutex as lock_api::RawMutex>::INIT)
                }
                LockKind::Spin => Inner::Spin(SpinLock::default()),
            },
            name,
            timed,
            counters: Counters::default(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> LockKind {
        match self.inner {
            Inner::Sleep(_) => LockKind::Sleep,
            Inner::Spin(_) => LockKind::Spin,
        }
    }

    fn try_raw(&self) -> bool {
        match &self.inner {
            Inner::Sleep(m) => m.try_lock(),
            Inner::Spin(s) => s.try_lock(),
        }
    }

    fn lock_raw(&self) {
        match &self.inner {
            Inner::Sleep(m) => m.lock(),
            Inner::Spin(s) => s.lock(),
        }
    }

    /// Take the lock if it is free.
    pub fn try_lock(&self) -> bool {
        let taken = self.try_raw();
        if taken && self.timed {
            self.acquired(crate::sys::monotonic_ns(), None);
        }
        taken
    }

    /// Whether some task holds it.
    pub fn is_locked(&self) -> bool {
        match &self.inner {
            Inner::Sleep(m) => m.is_locked(),
            Inner::Spin(s) => s.locked.load(Ordering::Relaxed),
        }
    }

    /// Take the lock, waiting (sleeping or spinning, by its kind) while another task holds it.
    pub fn lock(&self) {
        if !self.timed {
            self.lock_raw();
            return;
        }
        // The clock is read before the attempt, outside the lock: an uncontended acquisition
        // takes it a few nanoseconds later, and its hold starts then.
        let asked = crate::sys::monotonic_ns();
        if self.try_raw() {
            self.acquired(asked, None);
        } else {
            self.lock_raw();
            self.acquired(crate::sys::monotonic_ns(), Some(asked));
        }
    }

    /// Count an acquisition at `now` (the caller holds the lock) that waited since `asked`, if
    /// set.
    fn acquired(&self, now: u64, asked: Option<u64>) {
        if !self.timed {
            return;
        }
        let c = &self.counters;
        add(&c.acquisitions, 1);
        if let Some(asked) = asked {
            let wait = now.saturating_sub(asked);
            add(&c.waited, 1);
            add(&c.wait_ns, wait);
            raise(&c.wait_max_ns, wait);
        }
        c.held_since.store(now, Ordering::Relaxed);
    }

    /// Count the end of the caller's hold (it is about to release the lock).
    fn releasing(&self) {
        if !self.timed {
            return;
        }
        let c = &self.counters;
        let hold = crate::sys::monotonic_ns().saturating_sub(c.held_since.load(Ordering::Relaxed));
        add(&c.hold_ns, hold);
        raise(&c.hold_max_ns, hold);
    }

    /// Release the lock.
    ///
    /// # Safety
    /// The caller holds it.
    pub unsafe fn unlock(&self) {
        self.releasing();
        match &self.inner {
            // SAFETY: the caller holds it.
            Inner::Sleep(m) => unsafe { m.unlock() },
            Inner::Spin(s) => s.unlock(),
        }
    }

    /// Its statistics over a repetition that lasted `elapsed_ns` on `cpus` CPUs (`None` when
    /// untimed). Call once every task is done.
    pub fn stats(&self, elapsed_ns: u64, cpus: usize) -> Option<LockStats> {
        if !self.timed {
            return None;
        }
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let wait_ns = get(&c.wait_ns);
        Some(LockStats {
            name: self.name.clone(),
            kind: self.kind().name().to_string(),
            kernel: false,
            acquisitions: get(&c.acquisitions),
            waited: get(&c.waited),
            hold_ns: get(&c.hold_ns),
            hold_max_ns: get(&c.hold_max_ns),
            wait_ns,
            wait_max_ns: get(&c.wait_max_ns),
            spin_ns: if self.kind() == LockKind::Spin {
                wait_ns
            } else {
                0
            },
            elapsed_ns,
            cpu_ns: elapsed_ns.saturating_mul(cpus as u64),
        })
    }
}

/// The environment variable that turns the workload's lock statistics off (`0`).
pub const STATS_SWITCH: &str = "SCHEDLAB_LOCK_STATS";

/// A value of [`STATS_SWITCH`] that means nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatsSwitchError {
    /// A value other than `1` or `0`.
    #[error("{STATS_SWITCH}='{0}' is not accepted; use 1 (keep lock statistics, the default) or 0 (do not)")]
    Value(String),
    /// A value that is not Unicode.
    #[error("{STATS_SWITCH}: {0}; use 1 or 0")]
    NotUnicode(std::env::VarError),
}

/// Whether lock statistics are kept: [`STATS_SWITCH`] unset or `1`; `0` turns them off.
/// Any other value is an error naming it.
pub fn stats_enabled() -> Result<bool, StatsSwitchError> {
    match std::env::var(STATS_SWITCH) {
        Err(std::env::VarError::NotPresent) => Ok(true),
        Ok(v) if v == "1" => Ok(true),
        Ok(v) if v == "0" => Ok(false),
        Ok(v) => Err(StatsSwitchError::Value(v)),
        Err(e) => Err(StatsSwitchError::NotUnicode(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn an_uncontended_lock_counts_acquisitions_and_holds_without_waits() {
        for kind in [LockKind::Sleep, LockKind::Spin] {
            let l = RealLock::new(kind, "l".into(), true);
            for _ in 0..3 {
                l.lock();
                std::thread::sleep(Duration::from_millis(2));
                // SAFETY: held.
                unsafe { l.unlock() };
            }
            let s = l.stats(1_000_000_000, 2).unwrap();
            assert_eq!((s.acquisitions, s.waited, s.wait_ns), (3, 0, 0));
            assert!(
                s.hold_ns >= 6_000_000 && s.hold_max_ns >= 2_000_000,
                "{s:?}"
            );
            assert_eq!(s.kind, kind.name());
        }
    }

    #[test]
    fn a_contended_lock_counts_the_wait_and_a_spin_lock_its_spinning() {
        for kind in [LockKind::Sleep, LockKind::Spin] {
            // The waiter asks while the lock is held for 20 ms, unless a loaded machine keeps
            // it off a CPU all that time: then it does not wait, and the trial is repeated.
            let mut contended = None;
            for _ in 0..10 {
                let l = Arc::new(RealLock::new(kind, "l".into(), true));
                l.lock();
                let asking = Arc::new(AtomicBool::new(false));
                let started = std::time::Instant::now();
                let (l2, asking2) = (l.clone(), asking.clone());
                let waiter = std::thread::spawn(move || {
                    asking2.store(true, Ordering::Release);
                    l2.lock();
                    // SAFETY: held.
                    unsafe { l2.unlock() };
                });
                while !asking.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                std::thread::sleep(Duration::from_millis(20));
                // SAFETY: held.
                unsafe { l.unlock() };
                waiter.join().unwrap();
                let outer = started.elapsed().as_nanos() as u64;
                let s = l.stats(1, 1).unwrap();
                assert_eq!(s.acquisitions, 2, "{s:?}");
                assert!(s.waited <= 1, "{s:?}");
                if s.waited == 1 {
                    contended = Some((s, outer));
                    break;
                }
            }
            let (s, outer) = contended.expect("the waiter waited in one of 10 trials");
            // Its wait lies within the trial, and the first hold lasted the 20 ms sleep.
            assert!(s.wait_ns > 0 && s.wait_ns <= outer, "{s:?} in {outer} ns");
            assert!(s.hold_max_ns >= 20_000_000 && s.hold_ns <= outer, "{s:?}");
            assert_eq!(s.wait_ns, s.wait_max_ns);
            assert_eq!(
                s.spin_ns,
                if kind == LockKind::Spin { s.wait_ns } else { 0 }
            );
        }
    }

    #[test]
    fn untimed_locks_keep_no_statistics() {
        let l = RealLock::new(LockKind::Spin, "l".into(), false);
        l.lock();
        // SAFETY: held.
        unsafe { l.unlock() };
        assert_eq!(l.stats(1, 1), None);
    }

    /// The cost of the timing on an uncontended lock and unlock, ns per pair, timed and not
    /// (a measurement, not a check: `cargo test --release -p schedlab-real --lib
    /// locks::tests::uncontended_cost -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn uncontended_cost() {
        const N: u32 = 2_000_000;
        for kind in [LockKind::Spin, LockKind::Sleep] {
            let mut best = [f64::MAX; 2];
            for _ in 0..5 {
                for (i, timed) in [false, true].into_iter().enumerate() {
                    let l = RealLock::new(kind, "l".into(), timed);
                    let t = std::time::Instant::now();
                    for _ in 0..N {
                        l.lock();
                        // SAFETY: held.
                        unsafe { l.unlock() };
                    }
                    best[i] = best[i].min(t.elapsed().as_nanos() as f64 / f64::from(N));
                }
            }
            println!(
                "{}: {:.1} ns per lock+unlock untimed, {:.1} ns timed (+{:.1} ns)",
                kind.name(),
                best[0],
                best[1],
                best[1] - best[0]
            );
        }
    }
}
