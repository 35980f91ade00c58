//! Accounting: the runtime charged to the running task, runqueue lengths over time, the
//! runqueue lock, and the counters a repetition reports (what each thing costs is `costs.rs`). In kernel/sched/core.c: `update_rq_clock` and the class's `update_curr`,
//! `add_nr_running`/`sub_nr_running`, `raw_spin_rq_lock`, and the per-task counts
//! (`nvcsw`/`nivcsw`, `se.nr_migrations`, schedstats) that `/proc/PID/sched` shows.

use super::{Effect, Machine, SimResult};
use crate::policy::{CpuId, TaskId};
use schedlab_workload::plan::LockKind;
use schedlab_workload::presets::{Outcome, Samples, TaskOutcome};
use schedlab_workload::record::{Counters, LockStats, KERNEL_GROUP};
use std::collections::BTreeMap;
use std::time::Duration;

impl Machine<'_> {
    /// Charge the running task of `cpu` for the time since it was last charged.
    // Always inline: every burst's end charges, and the event loop has just indexed the same
    // CPU (a call here was its own prologue, bounds checks and reloads; plain `inline` was
    // not taken).
    #[inline(always)]
    pub(super) fn account(&mut self, cpu: CpuId) {
        match self.view.curr[cpu] {
            Some(t) => self.account_curr(cpu, t),
            None => self.cpus[cpu].last_account = self.view.now,
        }
    }

    /// [`Machine::account`] of `cpu`, whose running task the caller knows is `t`.
    #[inline(always)]
    pub(super) fn account_curr(&mut self, cpu: CpuId, t: TaskId) {
        debug_assert_eq!(self.view.curr[cpu], Some(t));
        let delta = self.view.now - self.cpus[cpu].last_account;
        self.cpus[cpu].last_account = self.view.now;
        if delta > 0 {
            let task = &mut self.tasks[t];
            if let Effect::Spin(l) = task.then {
                self.sync.locks[l].stats.spin_ns += delta;
            }
            task.cpu_ns += delta;
            task.remaining = task.remaining.saturating_sub(delta);
            if self.charges_runtime {
                self.policy.update_curr(&self.view, cpu, t, delta);
            }
        }
    }

    /// A task joined `cpu`'s runqueue (`up`) or left it.
    pub(super) fn rq_change(&mut self, cpu: CpuId, up: bool) {
        let nr = self.view.nr_running[cpu];
        let nr_now = if up { nr + 1 } else { nr - 1 };
        self.view.nr_running[cpu] = nr_now;
        self.cpus[cpu].runnable(nr, nr_now, self.view.now);
    }

    /// Take the runqueue lock of `cpu`'s runqueue ([`Policy::lock_domain`]) for `hold` ns
    /// from now; returns wait + hold.
    ///
    /// [`Policy::lock_domain`]: crate::policy::Policy::lock_domain
    pub(super) fn rq_lock(&mut self, cpu: CpuId, hold: u64) -> u64 {
        // A lock per CPU (most policies) needs no call to the policy at every switch.
        let domain = if self.cpus.rq_lock_per_cpu {
            cpu
        } else {
            self.policy.lock_domain(cpu)
        };
        self.cpus.rq_locks[domain].take(self.view.now, hold)
    }

    pub(super) fn finish(mut self, plan: &schedlab_workload::Plan) -> SimResult {
        let end = self.view.now;
        let timeline = self.timeline_finish(plan);
        let cpus = self.cpus.counters(end, &self.view.nr_running);
        let secs = |ns: u64| ns as f64 / 1e9;
        let mut counters: BTreeMap<String, Counters> = BTreeMap::new();
        let mut total = Counters::default();
        let mut kernel: Option<Counters> = None;
        let numa = self.costs.topology.sockets > 1;
        for t in self.tasks.iter() {
            let c = Counters {
                voluntary_switches: Some(t.nvcsw),
                involuntary_switches: Some(t.nivcsw),
                migrations: Some(t.migrations),
                wakeups: Some(t.wakeups),
                wakeup_preemptions: Some(t.wakeup_preemptions),
                preemptions_at_once: Some(t.preemptions_at_once),
                preemptions_at_return: Some(t.wakeup_preemptions - t.preemptions_at_once),
                preemptions_lazy: None,
                cpu_time_s: secs(t.cpu_ns),
                compute_s: numa.then(|| secs(t.numa.compute_ns)),
                remote_compute_s: numa.then(|| secs(t.numa.remote_ns)),
                // The simulator runs computes as written: nothing to count.
                cumulative: None,
            };
            if t.kthread.is_some() {
                kernel.get_or_insert_with(Counters::default).add(&c);
                continue;
            }
            // One name per group, not one String per task (100,000 of them at scale).
            let name = plan.groups[t.group].name;
            match counters.get_mut(name) {
                Some(g) => g.add(&c),
                None => {
                    counters.entry(name.to_string()).or_default().add(&c);
                }
            }
            total.add(&c);
        }
        counters.insert("total".into(), total);
        if let Some(k) = kernel {
            counters.insert(KERNEL_GROUP.into(), k);
        }
        let tasks = (self.tasks.workload().iter())
            .enumerate()
            .map(|(i, t)| {
                let mut slot = self.shared.slots[i].borrow_mut();
                TaskOutcome {
                    samples: Samples::from_list(std::mem::take(&mut slot.samples)),
                    passes: std::mem::take(&mut slot.passes),
                    cpu_time: Duration::from_nanos(t.cpu_ns),
                    finished_at: Duration::from_nanos(t.finished_at),
                }
            })
            .collect();
        // The workload's locks, then the kernel locks that were taken; each with the elapsed
        // and machine CPU time its shares are of.
        let cpu_ns = end.saturating_mul(self.cpus.len() as u64);
        let rq_locks = (self.cpus.rq_locks.iter().enumerate())
            .filter(|(_, l)| l.acquisitions > 0)
            .map(|(d, l)| l.stats(self.policy.lock_name(d)));
        let net_lock = Some(&self.net.net_lock)
            .filter(|l| l.acquisitions > 0)
            .map(|l| l.stats("net_lock".into()));
        let kernel: Vec<LockStats> = rq_locks.chain(net_lock).collect();
        let locks: Vec<LockStats> = (self.sync.locks.into_iter().map(|l| l.stats))
            .chain(kernel)
            .map(|l| LockStats {
                elapsed_ns: end,
                cpu_ns,
                ..l
            })
            .collect();
        SimResult {
            timeline,
            locks,
            outcome: Outcome {
                wall: Duration::from_nanos(end),
                tasks,
            },
            counters,
            cpus,
            events: self.clock.handled(),
            elapsed_ns: end,
        }
    }
}

/// A kernel spin lock the machine models (a runqueue lock, the loopback transmit lock): when
/// it is next free and what lockmeter counts of it, in one cache line — a switch takes its
/// runqueue's lock, and on a machine of a thousand CPUs that line is out of the cache by the
/// CPU's next switch (a `LockStats` beside the time took three lines: two names and a
/// flag). Turned into a [`LockStats`] at the end of the run.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub(super) struct KernelSpinLock {
    /// When it is next free, ns.
    free: u64,
    acquisitions: u64,
    waited: u64,
    hold_ns: u64,
    hold_max_ns: u64,
    wait_ns: u64,
    wait_max_ns: u64,
    spin_ns: u64,
}

impl KernelSpinLock {
    /// Take the lock at `now` for `hold` ns: the taker spins until it is free, then holds it;
    /// the acquisition, its wait (all of it spent spinning) and its hold are counted. Returns
    /// the CPU time spent (wait + hold).
    #[inline]
    pub(super) fn take(&mut self, now: u64, hold: u64) -> u64 {
        let start = self.free.max(now);
        self.free = start + hold;
        let wait = start - now;
        self.acquisitions += 1;
        if wait > 0 {
            self.waited += 1;
            self.wait_ns += wait;
            self.wait_max_ns = self.wait_max_ns.max(wait);
        }
        self.spin_ns += wait;
        self.hold_ns += hold;
        self.hold_max_ns = self.hold_max_ns.max(hold);
        wait + hold
    }

    /// Its statistics, as lockmeter reports a spin lock named `name` of the kernel.
    pub(super) fn stats(&self, name: String) -> LockStats {
        LockStats {
            acquisitions: self.acquisitions,
            waited: self.waited,
            hold_ns: self.hold_ns,
            hold_max_ns: self.hold_max_ns,
            wait_ns: self.wait_ns,
            wait_max_ns: self.wait_max_ns,
            spin_ns: self.spin_ns,
            ..LockStats::new(name, LockKind::Spin.name(), true)
        }
    }
}
