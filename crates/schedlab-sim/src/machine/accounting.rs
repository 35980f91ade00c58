//! Accounting: what each thing costs (with this repetition's jitter), the runtime charged to the
//! running task, runqueue lengths over time, the runqueue lock, and the counters a repetition
//! reports. In kernel/sched/core.c: `update_rq_clock` and the class's `update_curr`,
//! `add_nr_running`/`sub_nr_running`, `raw_spin_rq_lock`, and the per-task counts
//! (`nvcsw`/`nivcsw`, `se.nr_migrations`, schedstats) that `/proc/PID/sched` shows.

use super::{Effect, Machine, SimResult};
use crate::policy::{CpuId, TaskId};
use crate::topology::Distance;
use rand_core::RngCore;
use schedlab_workload::plan::LockKind;
use schedlab_workload::presets::{Outcome, Samples, TaskOutcome};
use schedlab_workload::record::{Counters, CpuCounters, LockStats, KERNEL_GROUP};
use std::collections::BTreeMap;
use std::time::Duration;

/// A cost and the span of its jitter ([`Machine::c`]): worked out once for the costs of every
/// switch and system call ([`HotCosts`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Jittered {
    base: u64,
    span: u64,
}

impl Jittered {
    /// `base` with `jitter_ppm` parts per million of jitter.
    fn new(base: u64, jitter_ppm: u64) -> Jittered {
        Jittered {
            base,
            span: base * jitter_ppm / 1_000_000,
        }
    }
}

/// The profile's costs of every switch and system call, with their jitter's spans.
#[derive(Clone, Copy, Debug)]
pub(super) struct HotCosts {
    pub(super) syscall: Jittered,
    pub(super) switch: Jittered,
    pub(super) rq_lock: Jittered,
    pub(super) wakeup: Jittered,
}

impl HotCosts {
    /// Those of `cost`, with `jitter_ppm` parts per million of jitter.
    pub(super) fn new(cost: &crate::cost::CostModel, jitter_ppm: u64) -> HotCosts {
        HotCosts {
            syscall: Jittered::new(cost.syscall, jitter_ppm),
            switch: Jittered::new(cost.switch, jitter_ppm),
            rq_lock: Jittered::new(cost.rq_lock, jitter_ppm),
            wakeup: Jittered::new(cost.wakeup, jitter_ppm),
        }
    }
}

impl Machine<'_> {
    /// A cost with this repetition's jitter.
    #[inline]
    pub(super) fn c(&mut self, base: u64) -> u64 {
        self.jittered(Jittered::new(base, self.jitter_ppm))
    }

    /// [`Machine::c`] of a cost whose span is worked out ([`HotCosts`]): the same draw, without
    /// the span's multiplication and division at every switch.
    #[inline]
    pub(super) fn jittered(&mut self, cost: Jittered) -> u64 {
        // Uniform in base·(1 ± jitter), in integer arithmetic (this runs several times per event).
        let Jittered { base, span } = cost;
        if span == 0 {
            return base;
        }
        // Lemire's multiply-shift maps the 64 random bits onto 0..=2·span without a division.
        let r = ((self.rng.next_u64() as u128 * (2 * span + 1) as u128) >> 64) as u64;
        base - span + r
    }

    /// Kernel work per message on channel `ch`: the plan's transport for its own channels, a
    /// pipe's for its in-process queues.
    pub(super) fn channel_msg_cost(&self, ch: usize) -> u64 {
        if ch < self.plan_channels {
            self.msg_cost
        } else {
            self.cost.msg
        }
    }

    /// `bounce` if channel `ch` was last used on another CPU than `cpu`, which uses it now.
    pub(super) fn bounce(&mut self, cpu: CpuId, ch: usize) -> u64 {
        let last = self.channels[ch].last_cpu.replace(cpu);
        let Some(last) = last.filter(|&l| l != cpu && self.cost.bounce != 0) else {
            return 0;
        };
        let bounce = self.by_distance(self.cost.bounce, last, cpu);
        self.c(bounce)
    }

    /// `base` (a cost between two CPUs sharing a last-level cache: `ipi`, `bounce`,
    /// `migration`) scaled to how far apart `a` and `b` are in the topology by the profile's
    /// `smt_pct`, `llc_pct` and `socket_pct`. On a flat machine every pair shares the LLC, so the cost is
    /// `base` unchanged.
    pub(super) fn by_distance(&self, base: u64, a: CpuId, b: CpuId) -> u64 {
        let pct = match self.topology.distance(a, b) {
            Distance::Same => return base,
            Distance::Smt => self.cost.smt_pct,
            Distance::Llc => self.cost.llc_pct,
            Distance::Socket => self.cost.socket_pct,
        };
        if pct == 100 {
            return base;
        }
        (base * pct).div_ceil(100).min(crate::cost::MAX_COST_NS)
    }

    pub(super) fn copy_cost(&mut self, bytes: usize) -> u64 {
        let base = (bytes as u64 * self.cost.copy_per_kib).div_ceil(1024);
        self.c(base)
    }

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
                self.locks[l].stats.spin_ns += delta;
            }
            task.cpu_ns += delta;
            task.remaining = task.remaining.saturating_sub(delta);
            if self.charges_runtime {
                self.policy.update_curr(&self.view, cpu, t, delta);
            }
        }
    }

    pub(super) fn rq_change(&mut self, cpu: CpuId, up: bool) {
        let c = &mut self.cpus[cpu];
        c.rq_area += self.view.nr_running[cpu] as u128 * (self.view.now - c.rq_last) as u128;
        c.rq_last = self.view.now;
        if up {
            self.view.nr_running[cpu] += 1;
            c.rq_max = c.rq_max.max(self.view.nr_running[cpu]);
        } else {
            self.view.nr_running[cpu] -= 1;
        }
    }

    /// Take the runqueue lock of `cpu`'s runqueue ([`Policy::lock_domain`]) for `hold` ns
    /// from now; returns wait + hold.
    ///
    /// [`Policy::lock_domain`]: crate::policy::Policy::lock_domain
    pub(super) fn rq_lock(&mut self, cpu: CpuId, hold: u64) -> u64 {
        // A lock per CPU (most policies) needs no call to the policy at every switch.
        let domain = if self.rq_lock_per_cpu {
            cpu
        } else {
            self.policy.lock_domain(cpu)
        };
        self.rq_locks[domain].take(self.view.now, hold)
    }

    /// The loopback transmit lock for a message sent on channel `ch`, if it goes over loopback
    /// TCP/UDP and the lock has a cost: wait (spinning) + hold, the runqueue lock's model.
    pub(super) fn net_lock(&mut self, ch: usize) -> u64 {
        if !self.net || ch >= self.plan_channels || self.cost.net_lock == 0 {
            return 0;
        }
        let hold = self.c(self.cost.net_lock);
        self.net_lock.take(self.view.now, hold)
    }

    pub(super) fn finish(mut self, plan: &schedlab_workload::Plan) -> SimResult {
        let end = self.view.now;
        let timeline = self.timeline_finish(plan);
        for cpu in 0..self.cpus.len() {
            let nr = self.view.nr_running[cpu] as u128;
            let c = &mut self.cpus[cpu];
            if let Some(s) = c.busy_since.take() {
                c.busy_ns += end - s;
            }
            if let Some(s) = c.idle_since.take() {
                c.idle_ns += end - s;
            }
            c.rq_area += nr * (end - c.rq_last) as u128;
        }
        let secs = |ns: u64| ns as f64 / 1e9;
        let cpus = self
            .cpus
            .iter()
            .map(|c| CpuCounters {
                busy_s: secs(c.busy_ns),
                idle_s: secs(c.idle_ns),
                mean_runnable: if end == 0 {
                    0.0
                } else {
                    c.rq_area as f64 / end as f64
                },
                max_runnable: c.rq_max,
            })
            .collect();
        let mut counters: BTreeMap<String, Counters> = BTreeMap::new();
        let mut total = Counters::default();
        let mut kernel: Option<Counters> = None;
        let numa = self.topology.sockets > 1;
        for t in &self.tasks {
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
        let tasks = self.tasks[..self.workload_tasks]
            .iter()
            .enumerate()
            .map(|(i, t)| TaskOutcome {
                samples: Samples::from_list(std::mem::take(
                    &mut self.shared.slots[i].borrow_mut().samples,
                )),
                cpu_time: Duration::from_nanos(t.cpu_ns),
                finished_at: Duration::from_nanos(t.finished_at),
            })
            .collect();
        // The workload's locks, then the kernel locks that were taken; each with the elapsed
        // and machine CPU time its shares are of.
        let cpu_ns = end.saturating_mul(self.cpus.len() as u64);
        let rq_locks = (self.rq_locks.iter().enumerate())
            .filter(|(_, l)| l.acquisitions > 0)
            .map(|(d, l)| l.stats(self.policy.lock_name(d)));
        let net_lock = Some(&self.net_lock)
            .filter(|l| l.acquisitions > 0)
            .map(|l| l.stats("net_lock".into()));
        let kernel: Vec<LockStats> = rq_locks.chain(net_lock).collect();
        let locks: Vec<LockStats> = (self.locks.into_iter().map(|l| l.stats))
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
            events: self.events.popped() + self.dropped_events,
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
    fn take(&mut self, now: u64, hold: u64) -> u64 {
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
    fn stats(&self, name: String) -> LockStats {
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
