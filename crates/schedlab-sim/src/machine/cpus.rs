//! The CPUs as the machine keeps them beside the policy: each one's reschedule flags, tick,
//! burst generation and accounting (busy and idle time, runqueue length over time), and the
//! runqueue locks. Which task runs where and how many are runnable is the policies' view
//! ([`MachineView`](crate::policy::MachineView)), which the machine writes.

use super::accounting::KernelSpinLock;
use crate::policy::CpuId;
use schedlab_workload::record::CpuCounters;
use std::ops::{Index, IndexMut};

/// One CPU.
#[derive(Default)]
pub(super) struct Cpu {
    /// Invalidates burst-end events when the running burst changes.
    pub(super) gen: u64,
    pub(super) need_resched: bool,
    /// A reschedule deferred to the running task's return to user mode (NEEDRESCHED set inside
    /// a system call that goes on, [`Policy::wakeup_preempt_at_once`] false).
    ///
    /// [`Policy::wakeup_preempt_at_once`]: crate::policy::Policy::wakeup_preempt_at_once
    pub(super) ast_pending: bool,
    /// The pending reschedule switches at once, even a kernel-mode task (`maybe_preempt`, an
    /// IPI_PREEMPT): [`Policy::wakeup_preempt_at_once`] said so when it was asked.
    ///
    /// [`Policy::wakeup_preempt_at_once`]: crate::policy::Policy::wakeup_preempt_at_once
    pub(super) resched_at_once: bool,
    pub(super) kick_pending: bool,
    pub(super) tick_armed: bool,
    pub(super) tick_phase: u64,
    pub(super) last_account: u64,
    busy_since: Option<u64>,
    idle_since: Option<u64>,
    busy_ns: u64,
    idle_ns: u64,
    rq_area: u128,
    rq_last: u64,
    rq_max: usize,
}

impl Cpu {
    /// A CPU idle since time 0 whose ticks come `tick_phase` ns into each period.
    fn new(tick_phase: u64) -> Cpu {
        Cpu {
            tick_phase,
            idle_since: Some(0),
            ..Cpu::default()
        }
    }

    /// It has gone idle at `now` (if it was busy).
    #[inline(always)]
    pub(super) fn went_idle(&mut self, now: u64) {
        if let Some(since) = self.busy_since.take() {
            self.busy_ns += now - since;
            self.idle_since = Some(now);
        }
    }

    /// It runs a task from `now` (if it was idle).
    #[inline(always)]
    pub(super) fn went_busy(&mut self, now: u64) {
        if let Some(since) = self.idle_since.take() {
            self.idle_ns += now - since;
            self.busy_since = Some(now);
        }
    }

    /// Its runqueue held `nr` tasks until `now`, and holds `nr_now` from now on.
    #[inline(always)]
    pub(super) fn runnable(&mut self, nr: usize, nr_now: usize, now: u64) {
        self.rq_area += nr as u128 * (now - self.rq_last) as u128;
        self.rq_last = now;
        self.rq_max = self.rq_max.max(nr_now);
    }

    /// Its busy and idle time (ns) from the start until `now`.
    fn times(&self, now: u64) -> (u64, u64) {
        let since = |s: Option<u64>| s.map_or(0, |s| now.saturating_sub(s));
        (
            self.busy_ns + since(self.busy_since),
            self.idle_ns + since(self.idle_since),
        )
    }

    /// Its counters at the end of the run, `end`, with `nr` tasks on its runqueue then.
    fn counters(&mut self, end: u64, nr: usize) -> CpuCounters {
        self.went_idle(end);
        if let Some(s) = self.idle_since.take() {
            self.idle_ns += end - s;
        }
        self.rq_area += nr as u128 * (end - self.rq_last) as u128;
        let secs = |ns: u64| ns as f64 / 1e9;
        CpuCounters {
            busy_s: secs(self.busy_ns),
            idle_s: secs(self.idle_ns),
            mean_runnable: if end == 0 {
                0.0
            } else {
                self.rq_area as f64 / end as f64
            },
            max_runnable: self.rq_max,
        }
    }
}

/// The machine's CPUs and their runqueue locks.
pub(super) struct Cpus {
    list: Vec<Cpu>,
    /// Each runqueue lock (named by [`Policy::lock_name`] at the end).
    ///
    /// [`Policy::lock_name`]: crate::policy::Policy::lock_name
    pub(super) rq_locks: Vec<KernelSpinLock>,
    /// Each CPU has its own runqueue lock ([`Policy::lock_domain`] is the CPU's own id).
    ///
    /// [`Policy::lock_domain`]: crate::policy::Policy::lock_domain
    pub(super) rq_lock_per_cpu: bool,
}

impl Cpus {
    /// CPUs idle at time 0, their ticks at `tick_phases` into each period, with a runqueue lock
    /// each (`rq_lock_per_cpu`: each CPU's runqueue is its lock's domain).
    pub(super) fn new(tick_phases: impl Iterator<Item = u64>, rq_lock_per_cpu: bool) -> Cpus {
        let list: Vec<Cpu> = tick_phases.map(Cpu::new).collect();
        Cpus {
            rq_locks: vec![KernelSpinLock::default(); list.len()],
            list,
            rq_lock_per_cpu,
        }
    }

    /// The number of CPUs.
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// All CPUs' busy and idle time (ns) from the start until `now`, added up.
    pub(super) fn times(&self, now: u64) -> (u64, u64) {
        (self.list.iter())
            .map(|c| c.times(now))
            .fold((0, 0), |(b, i), (cb, ci)| (b + cb, i + ci))
    }

    /// Every CPU's counters at the end of the run, `end`, with `nr_running` tasks on each
    /// runqueue then.
    pub(super) fn counters(&mut self, end: u64, nr_running: &[usize]) -> Vec<CpuCounters> {
        (self.list.iter_mut().zip(nr_running))
            .map(|(c, &nr)| c.counters(end, nr))
            .collect()
    }
}

impl Index<CpuId> for Cpus {
    type Output = Cpu;
    #[inline(always)]
    fn index(&self, cpu: CpuId) -> &Cpu {
        &self.list[cpu]
    }
}

impl IndexMut<CpuId> for Cpus {
    #[inline(always)]
    fn index_mut(&mut self, cpu: CpuId) -> &mut Cpu {
        &mut self.list[cpu]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy and idle time add up to the run, and the mean runqueue length is the area under
    /// its curve over the run.
    #[test]
    fn busy_idle_and_runqueue_length_are_accounted_over_time() {
        let mut cpus = Cpus::new([0, 5].into_iter(), true);
        assert_eq!(cpus.len(), 2);
        let c = &mut cpus[0];
        // Idle 0..10, busy 10..40 with one task and 30..40 with two, idle 40..100.
        c.runnable(0, 1, 10);
        c.went_busy(10);
        c.runnable(1, 2, 30);
        c.runnable(2, 0, 40);
        c.went_idle(40);
        let counters = cpus.counters(100, &[0, 0]);
        let c = &counters[0];
        assert!((c.busy_s - 30e-9).abs() < 1e-15, "{c:?}");
        assert!((c.idle_s - 70e-9).abs() < 1e-15, "{c:?}");
        assert!((c.mean_runnable - 0.4).abs() < 1e-12, "{c:?}");
        assert_eq!(c.max_runnable, 2);
        assert!((counters[1].idle_s - 100e-9).abs() < 1e-15);
    }
}
