//! `cfs` — the Completely Fair Scheduler as Linux ran it from 2.6.23 to 6.5, for SCHED_OTHER,
//! SCHED_BATCH and SCHED_IDLE tasks.
//!
//! Follows kernel/sched/fair.c of the 3.x–6.5 kernels (names below are its functions):
//! - each task has a load weight from its nice value (`sched_prio_to_weight`; SCHED_IDLE tasks
//!   weigh 3, `WEIGHT_IDLEPRIO`) and a vruntime advanced by `delta_exec · 1024 / weight`
//!   (`update_curr`, `calc_delta_fair`); each CPU's runqueue is ordered by vruntime (the rbtree —
//!   here a `BTreeSet`) and keeps a monotonic `min_vruntime` (`update_min_vruntime`);
//! - `pick_next_entity` takes the leftmost task, except that a task that called `sched_yield` is
//!   the skip buddy and is passed over if the second task is within the wakeup granularity
//!   (`yield_task_fair`, 2.6.39+);
//! - `sched_slice` = period · w / W, with period = `sysctl_sched_latency` (6 ms) when at most
//!   `sched_nr_latency` (8) tasks run, else `min_granularity` (0.75 ms) · nr; every tunable is
//!   scaled by 1 + log2(min(ncpus, 8)) (`SCHED_TUNABLESCALING_LOG`);
//! - `check_preempt_tick`: reschedule when the task ran its slice, or ran at least min_granularity
//!   and is more than a slice of vruntime ahead of the leftmost;
//! - `place_entity`: a new task starts at `min_vruntime + vslice` (`START_DEBIT`); a waking task
//!   at `max(vruntime, min_vruntime − latency/2)` (`GENTLE_FAIR_SLEEPERS`);
//! - `check_preempt_wakeup`: a non-idle wakee preempts a SCHED_IDLE current; a waking
//!   SCHED_BATCH or SCHED_IDLE task never preempts; otherwise preempt when the current task's
//!   vruntime exceeds the wakee's by more than `wakeup_granularity` (1 ms) converted to the
//!   wakee's virtual time (`wakeup_gran`, `wakeup_preempt_entity`);
//! - a task moving between CPUs keeps its vruntime relative to `min_vruntime`
//!   (`migrate_task_rq_fair` / `enqueue_entity`).
//!
//! On a machine with a topology (`--topology`), placement of new tasks (at the start and at
//! fork: `sched_balance_find_dst_cpu` per level), wakeup placement and balancing go through the
//! scheduling domains of [`super::domains`] (SMT → MC → NUMA, `select_idle_sibling`, balancing
//! per domain with active balancing); what follows describes the flat machine, which keeps one
//! level.
//!
//! Simplifications, all of them in the SMP parts: no scheduling domains or group scheduling; a
//! waking task goes to its previous CPU if idle, else the waker's CPU if idle, else any idle allowed
//! CPU, else its previous CPU (`select_idle_sibling` without wake_affine's pull to a busy waker
//! CPU); a new task goes to the allowed CPU with the fewest runnable tasks (`find_idlest_cpu`);
//! an idle CPU pulls one task from the busiest CPU (`newidle_balance`); a busy CPU's tick every
//! 4 ms hands a queued task to an idle CPU (standing in for the NOHZ idle balancer's kick) and
//! pulls from a CPU whose load exceeds its own by more than `imbalance_pct` 117 %
//! (`load_balance`). No next/last buddies, no `sched_child_runs_first`. Each task keeps when it
//! last stopped running (`exec_start`), for the domains' `task_hot` (0.5 ms,
//! `sysctl_sched_migration_cost`); the flat balancing does not consult it.

use super::domains::{Domains, FairRunqueues};
use super::fair::{calc_delta_fair, tunable_scale, FairClass};
use super::*;
use schedlab_workload::knobs::Knobs;
use std::collections::BTreeSet;

/// Unscaled `sysctl_sched_latency`.
const LATENCY_NS: u64 = 6_000_000;
/// Unscaled `sysctl_sched_min_granularity`.
const MIN_GRAN_NS: u64 = 750_000;
/// Unscaled `sysctl_sched_wakeup_granularity`.
const WAKEUP_GRAN_NS: u64 = 1_000_000;
/// `sched_nr_latency`: latency / min_granularity.
const NR_LATENCY: u64 = 8;
/// How often a busy CPU balances (ns).
const BALANCE_INTERVAL_NS: u64 = 4_000_000;
/// `imbalance_pct` of the MC domain.
const IMBALANCE_PCT: u64 = 117;
/// `sysctl_sched_migration_cost`: a task that ran this recently is cache hot (`task_hot`).
const MIGRATION_COST_NS: u64 = 500_000;
/// Where vruntimes start, so that placement below min_vruntime never underflows.
const VRUNTIME_ORIGIN: u64 = 1 << 50;

#[derive(Clone, Debug)]
struct Entity {
    weight: u64,
    class: FairClass,
    vruntime: u64,
    sum_exec: u64,
    prev_sum_exec: u64,
    /// The runqueue the vruntime is relative to.
    cpu: CpuId,
    queued: bool,
    started: bool,
    /// When it last stopped running (`se.exec_start` as `task_hot` reads it for a queued
    /// task), `None` before it first ran.
    last_ran: Option<u64>,
}

#[derive(Clone, Debug)]
struct RunQueue {
    tree: BTreeSet<(u64, TaskId)>,
    curr: Option<TaskId>,
    /// Sum of weights of queued tasks and the current one.
    load: u64,
    min_vruntime: u64,
    skip: Option<TaskId>,
    last_balance: u64,
}

/// The CFS policy.
pub struct Cfs {
    tasks: Vec<Entity>,
    /// Each task's allowed CPUs, apart from [`Entity`] so that the entities the pick walks stay
    /// small.
    allowed: Vec<CpuMask>,
    rqs: Vec<RunQueue>,
    scale: u64,
    /// The scheduling domains of a machine with a topology (`None`: flat, one level).
    domains: Option<Box<Domains>>,
}

/// The `cfs` policy: its name, summary, parameters and constructor.
pub const DEF: PolicyDef = PolicyDef {
    name: "cfs",
    summary:
        "Linux CFS: weights, vruntime, min/wakeup granularity (2.6.24 sched_fair.c … 6.5 fair.c)",
    params: &[],
    describe_defaults: true,
    check: no_check,
    build: boxed::<Cfs>,
};

impl FromParams for Cfs {
    fn from_params(_: &Params) -> Cfs {
        Cfs {
            tasks: Vec::new(),
            allowed: Vec::new(),
            rqs: Vec::new(),
            scale: 1,
            domains: None,
        }
    }
}

impl Cfs {
    /// The domains (tests).
    #[cfg(test)]
    pub(super) fn domains(&self) -> &Domains {
        self.domains.as_ref().expect("a topology")
    }

    fn ensure_cpus(&mut self, ncpus: usize) {
        if self.rqs.len() < ncpus {
            self.rqs.resize(
                ncpus,
                RunQueue {
                    tree: BTreeSet::new(),
                    curr: None,
                    load: 0,
                    min_vruntime: VRUNTIME_ORIGIN,
                    skip: None,
                    last_balance: 0,
                },
            );
            self.scale = tunable_scale(ncpus);
        }
    }

    fn latency(&self) -> u64 {
        LATENCY_NS * self.scale
    }
    fn min_gran(&self) -> u64 {
        MIN_GRAN_NS * self.scale
    }
    fn wakeup_gran(&self) -> u64 {
        WAKEUP_GRAN_NS * self.scale
    }

    fn nr_running(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu].tree.len() as u64 + self.rqs[cpu].curr.is_some() as u64
    }

    /// `__sched_period`.
    fn period(&self, nr: u64) -> u64 {
        if nr > NR_LATENCY {
            nr * self.min_gran()
        } else {
            self.latency()
        }
    }

    /// `sched_slice` of a task on `cpu` (counting it as runnable there).
    fn slice(&self, cpu: CpuId, t: TaskId) -> u64 {
        let e = &self.tasks[t];
        let rq = &self.rqs[cpu];
        let counted = e.queued || rq.curr == Some(t);
        let nr = self.nr_running(cpu) + !counted as u64;
        let load = rq.load + if counted { 0 } else { e.weight };
        ((self.period(nr) as u128 * e.weight as u128) / load.max(1) as u128) as u64
    }

    fn update_min_vruntime(&mut self, cpu: CpuId) {
        let rq = &self.rqs[cpu];
        let curr_v = rq.curr.map(|c| self.tasks[c].vruntime);
        let left_v = rq.tree.first().map(|&(v, _)| v);
        let candidate = match (curr_v, left_v) {
            (Some(c), Some(l)) => c.min(l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => return,
        };
        let rq = &mut self.rqs[cpu];
        rq.min_vruntime = rq.min_vruntime.max(candidate);
    }

    fn insert(&mut self, cpu: CpuId, t: TaskId) {
        let e = &mut self.tasks[t];
        e.queued = true;
        e.cpu = cpu;
        self.rqs[cpu].tree.insert((e.vruntime, t));
    }

    fn remove(&mut self, cpu: CpuId, t: TaskId) {
        let e = &mut self.tasks[t];
        e.queued = false;
        let removed = self.rqs[cpu].tree.remove(&(e.vruntime, t));
        debug_assert!(removed, "task {t} was queued on cpu {cpu}");
    }

    /// Re-base a task's vruntime from its old runqueue to `cpu`'s.
    fn rebase(&mut self, t: TaskId, cpu: CpuId) {
        let from = self.tasks[t].cpu;
        if from != cpu {
            let e = &mut self.tasks[t];
            let v = e.vruntime as i128 - self.rqs[from].min_vruntime as i128
                + self.rqs[cpu].min_vruntime as i128;
            e.vruntime = v.max(0) as u64;
            e.cpu = cpu;
        }
    }

    /// `wakeup_preempt_entity(curr, se)`: whether `se` should run instead of `curr`.
    fn wakeup_preempt_entity(&self, curr: TaskId, se: TaskId) -> bool {
        let (cv, sv) = (self.tasks[curr].vruntime, self.tasks[se].vruntime);
        cv > sv && cv - sv > calc_delta_fair(self.wakeup_gran(), self.tasks[se].weight)
    }

    /// Move one queued task from `from` to `to`, if one may run there.
    fn steal(&mut self, from: CpuId, to: CpuId) -> Option<Move> {
        self.steal_within(from, to, u64::MAX, None)
    }

    /// `task_hot`: it ran less than `sysctl_sched_migration_cost` ago (a SCHED_IDLE task never
    /// is).
    fn task_hot(&self, t: TaskId, now: u64) -> bool {
        let e = &self.tasks[t];
        e.class != FairClass::Idle
            && e.last_ran
                .is_some_and(|r| now.saturating_sub(r) < MIGRATION_COST_NS)
    }

    /// Tell the domains whether `cpu`'s runqueue is empty now.
    fn note_idle(&mut self, cpu: CpuId) {
        if let Some(d) = &mut self.domains {
            let rq = &self.rqs[cpu];
            d.note_idle(cpu, rq.curr.is_none() && rq.tree.is_empty());
        }
    }

    /// Move one queued task of weight at most `max_weight` from `from` to `to`, if one may run
    /// there; with `cold_at`, only one that is not cache hot at that time (`task_hot`).
    fn steal_within(
        &mut self,
        from: CpuId,
        to: CpuId,
        max_weight: u64,
        cold_at: Option<u64>,
    ) -> Option<Move> {
        // The kernel detaches from the tail of the runqueue's task list; the rightmost task (the
        // one that would wait longest) is the closest stand-in.
        let t = self.rqs[from]
            .tree
            .iter()
            .rev()
            .map(|&(_, t)| t)
            .find(|&t| {
                self.allowed[t].contains(to)
                    && self.tasks[t].weight <= max_weight
                    && cold_at.is_none_or(|now| !self.task_hot(t, now))
            })?;
        self.remove(from, t);
        self.rqs[from].load -= self.tasks[t].weight;
        if self.rqs[from].skip == Some(t) {
            self.rqs[from].skip = None;
        }
        self.rebase(t, to);
        self.insert(to, t);
        self.rqs[to].load += self.tasks[t].weight;
        self.note_idle(from);
        self.note_idle(to);
        Some(Move { task: t, from, to })
    }
}

impl FairRunqueues for Cfs {
    fn nr_running(&self, cpu: CpuId) -> usize {
        Cfs::nr_running(self, cpu) as usize
    }
    fn load(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu].load
    }
    fn task_weight(&self, task: TaskId) -> u64 {
        self.tasks[task].weight
    }
    fn allowed_on(&self, task: TaskId, cpu: CpuId) -> bool {
        self.allowed[task].contains(cpu)
    }
    fn cpu_idle(&self, m: &MachineView, cpu: CpuId) -> bool {
        m.is_idle(cpu) && self.rqs[cpu].curr.is_none() && self.rqs[cpu].tree.is_empty()
    }
    /// `can_migrate_task`: a cache-hot task only when `hot_ok` (the flat balancing of the
    /// policy ignores hotness, as it did before the domains).
    fn pinned_away(&self, m: &MachineView, from: CpuId, to: CpuId) -> bool {
        let queued = self.rqs[from]
            .tree
            .iter()
            .rev()
            .map(|&(_, t)| t)
            .take(super::domains::NR_MIGRATE);
        !m.curr[from]
            .into_iter()
            .chain(queued)
            .any(|t| self.allowed[t].contains(to))
    }

    fn pull_one(
        &mut self,
        m: &MachineView,
        from: CpuId,
        to: CpuId,
        max_weight: u64,
        hot_ok: bool,
    ) -> Option<Move> {
        self.steal_within(from, to, max_weight, (!hot_ok).then_some(m.now))
    }
}

impl Policy for Cfs {
    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), PolicyError> {
        if let Some(p) = knobs.policy {
            if !p.is_fair() {
                return Err(reject_knob(
                    "cfs",
                    group,
                    &format!("policy={p}"),
                    "the fair class only: policy=other|batch|idle, nice, cpus",
                ));
            }
        }
        if let Some(s) = knobs.slice_ns {
            return Err(reject_knob(
                "cfs",
                group,
                &format!("slice={}", schedlab_workload::duration::format_duration(std::time::Duration::from_nanos(s))),
                "nice, policy=other|batch|idle and cpus (per-task slices came with EEVDF: use --policy eevdf)",
            ));
        }
        Ok(())
    }

    fn task_new(&mut self, m: &MachineView, task: &TaskSetup) {
        self.ensure_cpus(m.ncpus);
        let (class, weight) = (task.fair_class(), task.fair_weight());
        if self.tasks.len() <= task.id {
            self.tasks.resize(
                task.id + 1,
                Entity {
                    weight: 1024,
                    class: FairClass::Normal,
                    vruntime: VRUNTIME_ORIGIN,
                    sum_exec: 0,
                    prev_sum_exec: 0,
                    cpu: 0,
                    queued: false,
                    started: false,
                    last_ran: None,
                },
            );
        }
        let e = &mut self.tasks[task.id];
        e.weight = weight;
        e.class = class;
        e.cpu = task.allowed.lowest().unwrap_or(0);
        if self.allowed.len() <= task.id {
            self.allowed.resize(task.id + 1, CpuMask::EMPTY);
        }
        self.allowed[task.id] = task.allowed;
    }

    fn select_task_rq(
        &mut self,
        m: &MachineView,
        task: TaskId,
        prev: CpuId,
        waker: Option<CpuId>,
    ) -> CpuId {
        let allowed = &self.allowed[task];
        if !self.tasks[task].started {
            if let Some(d) = &self.domains {
                // SD_BALANCE_FORK from the CPU it starts beside.
                return d.find_dst_cpu(self, m, prev, allowed);
            }
            // find_idlest_cpu: fewest runnable tasks, lowest number first.
            return allowed
                .iter()
                .filter(|&c| c < m.ncpus)
                .min_by_key(|&c| m.nr_running[c])
                .unwrap_or(prev);
        }
        if let Some(mut d) = self.domains.take() {
            let waker = waker.map(|w| (w, m.curr[w]));
            let allowed = self.allowed[task];
            let cpu = d.select_wake_cpu(self, m, task, prev, waker, &allowed);
            self.domains = Some(d);
            return cpu;
        }
        if allowed.contains(prev) && m.is_idle(prev) {
            return prev;
        }
        if let Some(w) = waker.filter(|&w| allowed.contains(w) && m.is_idle(w)) {
            return w;
        }
        let n = m.ncpus;
        if let Some(c) = (0..n)
            .map(|i| (prev + i) % n)
            .find(|&c| allowed.contains(c) && m.is_idle(c))
        {
            return c;
        }
        if allowed.contains(prev) {
            prev
        } else {
            allowed.lowest().unwrap_or(prev)
        }
    }

    /// With scheduling domains, `sched_balance_find_dst_cpu` from the parent's CPU (WF_FORK);
    /// on a flat machine, the default (the flat `find_idlest_cpu` of `select_task_rq`).
    fn task_fork(
        &mut self,
        m: &MachineView,
        child: TaskId,
        _parent: TaskId,
        parent_cpu: CpuId,
    ) -> Option<CpuId> {
        let d = self.domains.as_ref()?;
        Some(d.find_dst_cpu(self, m, parent_cpu, &self.allowed[child]))
    }

    fn enqueue_task(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId, kind: EnqueueKind) {
        self.update_min_vruntime(cpu);
        self.rebase(task, cpu);
        let min_v = self.rqs[cpu].min_vruntime;
        match kind {
            EnqueueKind::New => {
                self.tasks[task].started = true;
                // START_DEBIT: a new task starts one virtual slice after min_vruntime.
                let slice = self.slice(cpu, task);
                let vslice = calc_delta_fair(slice, self.tasks[task].weight);
                let e = &mut self.tasks[task];
                e.vruntime = e.vruntime.max(min_v + vslice);
            }
            EnqueueKind::Wakeup { .. } => {
                // GENTLE_FAIR_SLEEPERS: credit at most half a latency period of sleep.
                let thresh = self.latency() / 2;
                let e = &mut self.tasks[task];
                e.vruntime = e.vruntime.max(min_v - thresh);
            }
        }
        self.rqs[cpu].load += self.tasks[task].weight;
        self.insert(cpu, task);
        self.note_idle(cpu);
    }

    fn dequeue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, _kind: DequeueKind) {
        self.tasks[task].last_ran = Some(m.now);
        let rq = &mut self.rqs[cpu];
        debug_assert_eq!(rq.curr, Some(task));
        rq.curr = None;
        rq.load -= self.tasks[task].weight;
        if rq.skip == Some(task) {
            rq.skip = None;
        }
        self.update_min_vruntime(cpu);
        self.note_idle(cpu);
    }

    fn wakeup_preempt(
        &mut self,
        _m: &MachineView,
        _cpu: CpuId,
        curr: TaskId,
        woken: TaskId,
    ) -> bool {
        let (c, w) = (self.tasks[curr].class, self.tasks[woken].class);
        if c == FairClass::Idle && w != FairClass::Idle {
            return true;
        }
        if w != FairClass::Normal {
            return false;
        }
        self.wakeup_preempt_entity(curr, woken)
    }

    fn pick_next_task(&mut self, _m: &MachineView, cpu: CpuId) -> Option<TaskId> {
        if let Some(d) = &mut self.domains {
            d.clear_stop(cpu);
        }
        let rq = &self.rqs[cpu];
        let mut it = rq.tree.iter();
        let &(_, left) = it.next()?;
        let mut pick = left;
        if rq.skip == Some(left) {
            // wakeup_preempt_entity(second, left) < 1: take the second unless it is more than a
            // wakeup granularity to the right.
            if let Some(&(second_v, second)) = it.next() {
                let gran = calc_delta_fair(self.wakeup_gran(), self.tasks[left].weight);
                if second_v - self.tasks[left].vruntime <= gran {
                    pick = second;
                }
            }
        }
        self.remove(cpu, pick);
        let rq = &mut self.rqs[cpu];
        rq.skip = None;
        rq.curr = Some(pick);
        let e = &mut self.tasks[pick];
        e.prev_sum_exec = e.sum_exec;
        Some(pick)
    }

    fn next_task_hint(&self, cpu: CpuId) -> Option<TaskId> {
        // The leftmost entity: the next pick unless it is the buddy to skip, or the tree changes.
        self.rqs.get(cpu)?.tree.first().map(|&(_, t)| t)
    }

    fn put_prev_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, _kind: PutPrevKind) {
        debug_assert_eq!(self.rqs[cpu].curr, Some(task));
        self.tasks[task].last_ran = Some(m.now);
        self.rqs[cpu].curr = None;
        self.insert(cpu, task);
        self.update_min_vruntime(cpu);
    }

    fn update_curr(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId, delta_ns: u64) {
        let e = &mut self.tasks[task];
        e.sum_exec += delta_ns;
        e.vruntime += calc_delta_fair(delta_ns, e.weight);
        self.update_min_vruntime(cpu);
    }

    fn task_tick(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId) -> bool {
        // check_preempt_tick
        if self.rqs[cpu].tree.is_empty() {
            return false;
        }
        let ideal = self.slice(cpu, task);
        let e = &self.tasks[task];
        let ran = e.sum_exec - e.prev_sum_exec;
        if ran > ideal {
            return true;
        }
        if ran < self.min_gran() {
            return false;
        }
        let left = self.rqs[cpu]
            .tree
            .first()
            .map(|&(v, _)| v)
            .unwrap_or(e.vruntime);
        e.vruntime > left && e.vruntime - left > ideal
    }

    fn yield_task(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId) -> bool {
        // yield_task_fair: only meaningful with others queued; mark the skip buddy.
        if !self.rqs[cpu].tree.is_empty() {
            self.rqs[cpu].skip = Some(task);
        }
        true
    }

    fn take_active_balance(&mut self) -> Vec<CpuId> {
        self.domains
            .as_mut()
            .map_or_else(Vec::new, |d| d.take_stop_requests())
    }

    fn active_balance(&mut self, m: &MachineView, cpu: CpuId) -> Option<Move> {
        let mut d = self.domains.take()?;
        let mv = d.active_stop(self, m, cpu);
        self.domains = Some(d);
        mv
    }

    fn set_topology(&mut self, topology: &crate::topology::Topology) {
        self.ensure_cpus(topology.cpus());
        self.domains = Some(Box::new(Domains::new(topology)));
    }

    fn balance(&mut self, m: &MachineView, cpu: CpuId, kind: BalanceKind) -> Vec<Move> {
        if let Some(mut d) = self.domains.take() {
            let moves = d.balance(self, m, cpu, kind == BalanceKind::NewIdle);
            self.domains = Some(d);
            return moves;
        }
        let n = m.ncpus;
        match kind {
            BalanceKind::NewIdle => {
                // Only a CPU with more than one runnable task has one to spare: the single task
                // queued on a CPU that is waking up to run it stays there.
                let busiest = (0..n)
                    .filter(|&c| c != cpu && m.nr_running[c] >= 2 && !self.rqs[c].tree.is_empty())
                    .max_by_key(|&c| (self.rqs[c].load, std::cmp::Reverse(c)));
                busiest
                    .and_then(|from| self.steal(from, cpu))
                    .into_iter()
                    .collect()
            }
            BalanceKind::Periodic => {
                if m.now < self.rqs[cpu].last_balance + BALANCE_INTERVAL_NS {
                    return Vec::new();
                }
                self.rqs[cpu].last_balance = m.now;
                let mut moves = Vec::new();
                // The NOHZ kick: give a queued task to an idle CPU.
                if !self.rqs[cpu].tree.is_empty() {
                    if let Some(idle) = (1..n).map(|i| (cpu + i) % n).find(|&c| m.is_idle(c)) {
                        if let Some(mv) = self.steal(cpu, idle) {
                            moves.push(mv);
                        }
                    }
                }
                // load_balance: pull from a busier CPU.
                let mine = self.rqs[cpu].load;
                if let Some(from) = (0..n)
                    .filter(|&c| c != cpu && m.nr_running[c] >= 2 && !self.rqs[c].tree.is_empty())
                    .max_by_key(|&c| (self.rqs[c].load, std::cmp::Reverse(c)))
                {
                    let theirs = self.rqs[from].load;
                    if theirs * 100 > mine * IMBALANCE_PCT && theirs > mine + 1024 / 2 {
                        if let Some(mv) = self.steal(from, cpu) {
                            moves.push(mv);
                        }
                    }
                }
                moves
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::built;

    fn view(curr: &[Option<TaskId>], nr: &[usize], now: u64) -> MachineView {
        MachineView {
            now,
            ncpus: curr.len(),
            curr: curr.to_vec(),
            nr_running: nr.to_vec(),
            hz: 250,
        }
    }

    fn setup(id: TaskId, knobs: &str) -> TaskSetup {
        let knobs = if knobs.is_empty() {
            Knobs::default()
        } else {
            schedlab_workload::knobs::parse_group_arg(&format!("g:{knobs}"))
                .unwrap()
                .1
        };
        TaskSetup {
            id,
            group: 0,
            knobs,
            allowed: CpuMask::first(1),
            kind: TaskKind::Workload,
        }
    }

    /// Two CPU hogs on one CPU for 10 s: CPU time in the ratio of their weights.
    #[test]
    fn nice_0_and_5_share_one_cpu_1024_to_335() {
        let mut p = built::<Cfs>("cfs");
        let (curr, nr) = ([None], [2]);
        let v = view(&curr, &nr, 0);
        p.task_new(&v, &setup(0, ""));
        p.task_new(&v, &setup(1, "nice=5"));
        p.enqueue_task(&v, 0, 0, EnqueueKind::New);
        p.enqueue_task(&v, 0, 1, EnqueueKind::New);
        let mut ran = [0u64; 2];
        let (step, tick) = (100_000, 4_000_000);
        let mut now = 0;
        let mut cur = p.pick_next_task(&v, 0).unwrap();
        while now < 10_000_000_000 {
            now += step;
            ran[cur] += step;
            p.update_curr(&v, 0, cur, step);
            if now % tick == 0 && p.task_tick(&v, 0, cur) {
                p.put_prev_task(&v, 0, cur, PutPrevKind::Preempted);
                cur = p.pick_next_task(&v, 0).unwrap();
            }
        }
        let ratio = ran[0] as f64 / ran[1] as f64;
        let want = 1024.0 / 335.0;
        assert!(
            (ratio / want - 1.0).abs() < 0.01,
            "ratio {ratio}, want {want}"
        );
    }

    #[test]
    fn wakeup_preemption_follows_granularity_and_classes() {
        let mut p = built::<Cfs>("cfs");
        let (curr, nr) = ([Some(0)], [1]);
        let v = view(&curr, &nr, 0);
        p.task_new(&v, &setup(0, ""));
        p.task_new(&v, &setup(1, ""));
        p.task_new(&v, &setup(2, "policy=batch"));
        p.enqueue_task(&v, 0, 0, EnqueueKind::New);
        assert_eq!(p.pick_next_task(&v, 0), Some(0));
        // Task 0 runs 20 ms: far ahead of a sleeper placed at min_vruntime − latency/2.
        p.update_curr(&v, 0, 0, 20_000_000);
        p.enqueue_task(&v, 0, 1, EnqueueKind::Wakeup { slept_ns: 1 });
        assert!(p.wakeup_preempt(&v, 0, 0, 1));
        p.enqueue_task(&v, 0, 2, EnqueueKind::Wakeup { slept_ns: 1 });
        assert!(!p.wakeup_preempt(&v, 0, 0, 2), "batch wakees never preempt");
    }

    #[test]
    fn idle_class_is_preempted_and_never_preempts() {
        let mut p = built::<Cfs>("cfs");
        let (curr, nr) = ([Some(0)], [1]);
        let v = view(&curr, &nr, 0);
        p.task_new(&v, &setup(0, "policy=idle"));
        p.task_new(&v, &setup(1, ""));
        p.enqueue_task(&v, 0, 0, EnqueueKind::New);
        p.pick_next_task(&v, 0);
        p.enqueue_task(&v, 0, 1, EnqueueKind::Wakeup { slept_ns: 1 });
        assert!(p.wakeup_preempt(&v, 0, 0, 1));
        assert!(!p.wakeup_preempt(&v, 0, 1, 0));
    }

    #[test]
    fn knobs_it_has_no_notion_of_are_rejected() {
        let p = built::<Cfs>("cfs");
        let e = p
            .check_knobs("bench", &setup(0, "slice=1ms").knobs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("slice=1.000ms") && e.contains("eevdf"), "{e}");
        let e = p
            .check_knobs("bench", &setup(0, "policy=fifo:5").knobs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy=fifo:5"), "{e}");
        assert!("cfs:x=1"
            .parse::<PolicySpec>()
            .unwrap_err()
            .to_string()
            .contains("no parameter 'x'"));
    }
}
