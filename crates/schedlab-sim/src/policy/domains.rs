//! Scheduling domains for `cfs` and `eevdf` on a machine with a topology (`--topology`): the
//! per-CPU domain hierarchy, periodic / newly-idle / NOHZ-idle balancing per domain, and the
//! wakeup path's `select_idle_sibling`. A flat machine (`--cpus N` without a topology) never
//! builds one: its policies keep their one-level rules.
//!
//! # Sources followed
//!
//! kernel/sched/topology.c and kernel/sched/fair.c of the tree `eevdf` cites (a 6.12–6.14
//! mainline; the same code as 6.6 in the parts used here):
//! - `sd_init` and the default topology levels SMT → MC → PKG, with each socket a NUMA node
//!   (as on x86 servers, where the top level becomes the NUMA domain and PKG degenerates into
//!   it): `min_interval` = span weight ms, `max_interval` = 2 × weight, `busy_factor` 16,
//!   `imbalance_pct` 110 for SMT (SD_SHARE_CPUCAPACITY), 117 for MC (SD_SHARE_LLC) and NUMA,
//!   `cache_nice_tries` 0 / 1 / 2, SD_PREFER_SIBLING on SMT and MC but not NUMA; a level whose
//!   span equals its child's is left out (`sd_degenerate`). The groups of a domain are its
//!   child's spans (single CPUs at the lowest level). The LLC is the highest SD_SHARE_LLC level.
//! - `sched_balance_domains` (each level on its own interval, `get_sd_balance_interval`: the
//!   interval × `busy_factor` when the CPU is busy, in jiffies, at most HZ × CPUs / 10),
//!   `sched_balance_newidle` (bottom-up, until one level pulls), `nohz_balancer_kick` (a busy
//!   CPU's tick with two runnable tasks or two busy CPUs in its LLC) and `_nohz_idle_balance`
//!   (each idle CPU's own `sched_balance_domains`, as CPU_IDLE).
//! - `sched_balance_rq`: `should_we_balance` (the first idle CPU of the local group, else its
//!   first CPU), `update_sd_lb_stats` / `update_sd_pick_busiest` (group types has_spare,
//!   fully_busy, overloaded; busiest by type, then average load or idle CPUs),
//!   `sched_balance_find_src_group` and `calculate_imbalance` (migrate_load between overloaded
//!   groups behind `imbalance_pct`; filling spare capacity; `sibling_imbalance` under
//!   SD_PREFER_SIBLING; evening idle CPUs otherwise), `sched_balance_find_src_rq` (most load,
//!   or most tasks), `detach_tasks` (at most `sysctl_sched_nr_migrate` 32; a task heavier than
//!   the imbalance ≫ nr_balance_failed stays; newly idle stops after one),
//!   `can_migrate_task`'s cache-hot escape after `cache_nice_tries` failures (`task_hot`: the
//!   task last ran within `sysctl_sched_migration_cost`, 0.5 ms; never between SMT siblings,
//!   SD_SHARE_CPUCAPACITY; cfs also never for a SCHED_IDLE task), and the pass's outcome:
//!   `out_balanced` (nothing to move, no busiest runqueue, or `should_we_balance` leaving the
//!   level to another CPU of the local group — which also stops the levels above,
//!   `continue_balancing`) restarts `nr_balance_failed` and doubles `balance_interval` up to
//!   `max_interval` (not when newly idle); a pass that moved tasks, or found an imbalance and
//!   moved nothing, puts it back to `min_interval`; LBF_ALL_PINNED (no task of the busiest CPU,
//!   running or among the first `sysctl_sched_nr_migrate` queued, may run here) redoes the pass
//!   without that CPU while CPUs outside the local group are left, else `out_all_pinned` lets
//!   the interval grow to MAX_PINNED_INTERVAL (512 ms); `out_one_pinned` (an active balance whose
//!   running task may not come here) doubles it.
//! - `select_task_rq_fair` for a new task (WF_FORK; at the run's start, from the CPU the task
//!   would start on): `sched_balance_find_dst_cpu` from the top level down — at each level
//!   `sched_balance_find_dst_group` (`update_sg_wakeup_stats` without the child's load,
//!   `update_pick_idlest`, the local group kept unless the idlest is of a lower group type,
//!   lighter by `imbalance_pct` when busy (with the margin added to a remote node's load), or
//!   has more idle CPUs; across nodes `adjust_numa_imbalance` with `imb_numa_nr` keeps the
//!   child on the parent's node while that node would run at most `imb_numa_nr` tasks and the
//!   idle CPUs differ by at most 2), then `sched_balance_find_dst_group_cpu` (an idle CPU,
//!   else the least loaded), continuing at the levels below on the CPU found. SD_BALANCE_FORK
//!   and SD_BALANCE_EXEC are on every level: a 2-socket node distance (21) is below
//!   `node_reclaim_distance` (30), where `sd_init` would clear them.
//! - Active balancing: `sched_balance_find_src_rq` may pick a CPU that runs a single task (by
//!   runnable count for migrate_task); when nothing could be detached and
//!   `imbalanced_active_balance` holds (migrate_task, more than `cache_nice_tries` + 2
//!   failures) and the busiest CPU's running task may run here, `rq->active_balance` /
//!   `push_cpu` are set and its stopper woken (`stop_one_cpu_nowait`): the machine preempts
//!   that task (an IPI away) and `active_load_balance_cpu_stop` pushes one task — the
//!   preempted one, if it is alone — to the CPU that asked (LBF_ACTIVE_LB: cache-hot or not).
//!   A pick on that CPU before the stopper ran drops the request, as `active_balance = 0`; a
//!   push resets `nr_balance_failed` of the pulling CPU's lowest domain spanning the pushing one.
//! - `select_task_rq_fair` for a wakeup: `record_wakee` / `wake_wide`, `wake_affine`
//!   (`wake_affine_idle`, then `wake_affine_weight` with WA_BIAS) between the waker's CPU and the
//!   previous one, then `select_idle_sibling`: the target if idle, the previous CPU if it shares
//!   the LLC and is idle, `recent_used_cpu`, `select_idle_smt` on the previous core when the LLC
//!   has no idle core, `select_idle_cpu` (an idle core while `has_idle_cores`, else an idle CPU
//!   within SIS_UTIL's scan limit), else the target.
//!
//! Idle CPUs are kept in one [`CpuMask`] maintained as runqueues empty and fill (the policies
//! call [`Domains::note_idle`]), and each LLC's `has_idle_cores` flag is set when a CPU's whole
//! core goes idle and cleared by a failed core search, as `update_idle_core` and
//! `select_idle_cpu` do: finding an idle CPU in the LLC costs a few mask words, not a scan.
//!
//! # Left out
//!
//! - PELT: loads are the static weights of runnable tasks (`cpu_load` ≈ the runqueue's
//!   weight); "utilization" is the count of busy CPUs, so migrate_util moves tasks, and
//!   SIS_UTIL's scan depth follows the LLC's busy fraction averaged with a 32 ms half-life over
//!   the wakeups that search it, instead of the util_avg sum the last periodic balance stored.
//! - Capacity (every CPU 1024), group_misfit_task, group_asym_packing, group_smt_balance,
//!   group_imbalanced (no detection of affinity-constrained groups), EAS; `sibling_imbalance`
//!   counts CPUs, not cores (the groups of one level are the same size here, so the result is
//!   the same).
//! - need_active_balance's capacity, misfit and asym-packing cases (every CPU has the same
//!   capacity here); the stopper runs at the IPI's arrival, not as a task of the stop class.
//! - `sched_balance_find_dst_group_cpu`'s idle-state exit latency and `idle_stamp` (the
//!   lowest-numbered idle CPU is taken); the child's own utilization.
//! - NUMA balancing (`task_numa_fault`'s page-fault scanning, the preferred node and
//!   `numa_migrate_preferred`, `fbq_type`, `migrate_degrades_locality`, memory migration);
//!   SD_SERIALIZE.
//! - WF_SYNC wakeups. The `avg_idle` and `max_newidle_lb_cost` limits on newly-idle
//!   balancing.

use super::{CpuId, CpuMask, MachineView, Move, TaskId};
use crate::topology::Topology;

/// `sysctl_sched_nr_migrate`: tasks examined per balancing pass.
pub(super) const NR_MIGRATE: usize = 32;
/// `SCHED_CAPACITY_SCALE`.
const CAPACITY: u64 = 1024;
/// `MAX_PINNED_INTERVAL`, ms: how far the interval of a level whose tasks are all pinned away
/// may grow.
const MAX_PINNED_INTERVAL_MS: u64 = 512;

/// Which topology level a domain is (`sched_domain_topology_level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelKind {
    /// SMT siblings of one core (SD_SHARE_CPUCAPACITY | SD_SHARE_LLC).
    Smt,
    /// The cores of one socket: the last-level cache (SD_SHARE_LLC).
    Mc,
    /// The whole machine, each socket a node (SD_NUMA, SD_SERIALIZE).
    Numa,
}

impl LevelKind {
    /// The kernel's name of the level (`/proc/sys/kernel/sched_domain/cpuN/domainM/name`).
    pub fn name(self) -> &'static str {
        match self {
            LevelKind::Smt => "SMT",
            LevelKind::Mc => "MC",
            LevelKind::Numa => "NUMA",
        }
    }
}

/// One level of every CPU's domain hierarchy: its spans, their groups and `sd_init`'s tunables.
#[derive(Clone, Debug)]
pub struct Level {
    /// Which level.
    pub kind: LevelKind,
    /// CPUs in each domain of this level (`sched_domain_span`).
    pub spans: Vec<CpuMask>,
    /// Each CPU's domain at this level: an index into `spans`.
    span_of: Vec<usize>,
    /// Each domain's groups (its child's spans, or single CPUs at the lowest level).
    pub groups: Vec<Vec<CpuMask>>,
    /// CPUs per domain (`span_weight`).
    pub weight: usize,
    /// `imbalance_pct`.
    pub imbalance_pct: u64,
    /// `cache_nice_tries`.
    pub cache_nice_tries: u32,
    /// `min_interval`, ms.
    pub min_interval_ms: u64,
    /// `max_interval`, ms.
    pub max_interval_ms: u64,
    /// `busy_factor`.
    pub busy_factor: u64,
    /// SD_PREFER_SIBLING of this level (consulted by its parent: `sds->prefer_sibling`).
    pub prefer_sibling: bool,
    /// SD_SHARE_LLC.
    pub share_llc: bool,
    /// SD_SHARE_CPUCAPACITY.
    pub share_capacity: bool,
    /// SD_NUMA.
    pub numa: bool,
    /// `imb_numa_nr`: how many tasks a NUMA domain's local group may run before an imbalance
    /// between its nodes counts (`build_sched_domains`: the LLCs per node span; 0 elsewhere).
    pub imb_numa_nr: usize,
}

impl Level {
    /// The domain of `cpu` at this level.
    pub fn span(&self, cpu: CpuId) -> &CpuMask {
        &self.spans[self.span_of[cpu]]
    }
    /// The groups of `cpu`'s domain at this level.
    pub(super) fn groups_of(&self, cpu: CpuId) -> &[CpuMask] {
        &self.groups[self.span_of[cpu]]
    }
}

/// A CPU's bookkeeping at one level (the per-CPU `struct sched_domain`'s variable fields).
#[derive(Clone, Copy, Debug, Default)]
struct LevelState {
    last_balance: u64,
    /// `balance_interval`, ms.
    balance_interval_ms: u64,
    nr_balance_failed: u32,
}

/// A task's wakeup history (`wakee_flips`, `last_wakee`, `recent_used_cpu`).
#[derive(Clone, Copy, Debug, Default)]
struct WakeState {
    wakee_flips: u32,
    wakee_flip_decay_ts: u64,
    last_wakee: Option<TaskId>,
    recent_used_cpu: Option<CpuId>,
}

/// What the domain code needs of a fair-class policy's runqueues.
pub(super) trait FairRunqueues {
    /// Runnable tasks on `cpu` (queued + current), as the machine sees them.
    fn nr_running(&self, cpu: CpuId) -> usize;
    /// Σ load weight of `cpu`'s runnable tasks (`cpu_load`).
    fn load(&self, cpu: CpuId) -> u64;
    /// `task`'s load weight.
    fn task_weight(&self, task: TaskId) -> u64;
    /// Whether `task` may run on `cpu` (its `cpus_ptr`).
    fn allowed_on(&self, task: TaskId, cpu: CpuId) -> bool;
    /// Whether `cpu` has nothing to run (`available_idle_cpu`).
    fn cpu_idle(&self, m: &MachineView, cpu: CpuId) -> bool;
    /// Whether no task of `from` — its running one and the first `sysctl_sched_nr_migrate`
    /// queued ones, those `detach_tasks` examines — may run on `to` (LBF_ALL_PINNED).
    fn pinned_away(&self, m: &MachineView, from: CpuId, to: CpuId) -> bool;
    /// Detach one queued (not running) task of `from` allowed on `to`, weighing at most
    /// `max_weight`, cache-hot only if `hot_ok`, and attach it to `to`.
    fn pull_one(
        &mut self,
        m: &MachineView,
        from: CpuId,
        to: CpuId,
        max_weight: u64,
        hot_ok: bool,
    ) -> Option<Move>;
}

/// How a balance pass sees the CPU doing it (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleType {
    /// A busy CPU's tick.
    NotIdle,
    /// An idle CPU balanced by the NOHZ idle balancer.
    Idle,
    /// A CPU that just found nothing to run.
    NewlyIdle,
}

/// `enum group_type`, the cases modelled, in increasing order of trouble.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// `struct sg_lb_stats`, the fields modelled.
#[derive(Clone, Copy, Debug)]
struct GroupStats {
    index: usize,
    nr_running: usize,
    load: u64,
    weight: usize,
    idle_cpus: usize,
    avg_load: u64,
    kind: GroupType,
}

/// `enum migration_type`, the cases modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Migration {
    Load,
    Task,
}

/// Every CPU's scheduling domains, built once from the topology (`build_sched_domains`), and the
/// balancing and wakeup state that goes with them.
#[derive(Clone, Debug)]
pub struct Domains {
    topology: Topology,
    /// The levels present, lowest first.
    pub levels: Vec<Level>,
    /// The index in `levels` of the LLC domain (`sd_llc`), if any.
    llc_level: Option<usize>,
    /// Per CPU × level.
    state: Vec<LevelState>,
    /// CPUs whose runqueue is empty.
    idle: CpuMask,
    /// Per LLC domain (index into the LLC level's spans): `sd_llc_shared->has_idle_cores`.
    has_idle_cores: Vec<bool>,
    /// Per LLC domain: its busy fraction averaged with PELT's 32 ms half-life, in
    /// [`CAPACITY`] units, and when it was last brought up to date (SIS_UTIL's `sum_util`).
    llc_util: Vec<(f64, u64)>,
    /// `nohz.next_balance`.
    nohz_next_balance: u64,
    /// Per CPU: the CPU an active balance pending on it pushes to (`rq->active_balance`,
    /// `rq->push_cpu`).
    push_cpu: Vec<Option<CpuId>>,
    /// CPUs whose stopper the last balancing pass woke, for the machine to preempt.
    stop_requests: Vec<CpuId>,
    tasks: Vec<WakeState>,
}

impl Domains {
    /// The domains of a machine with `topology`, every CPU idle.
    pub fn new(topology: &Topology) -> Domains {
        let t = *topology;
        let n = t.cpus();
        let socket_mask = |s: usize| {
            let mut m = CpuMask::EMPTY;
            for c in 0..n {
                if t.socket_of(c) == s {
                    m.insert(c);
                }
            }
            m
        };
        let core_mask = |c: CpuId| {
            let mut m = CpuMask::EMPTY;
            for s in t.siblings(c) {
                m.insert(s);
            }
            m
        };
        // (kind, span index of each CPU, spans)
        let mut candidates: Vec<(LevelKind, Vec<usize>, Vec<CpuMask>)> = Vec::new();
        if t.threads > 1 {
            let spans = (0..t.sockets * t.cores).map(core_mask).collect();
            candidates.push((
                LevelKind::Smt,
                (0..n).map(|c| t.core_of(c)).collect(),
                spans,
            ));
        }
        {
            let spans = (0..t.sockets).map(socket_mask).collect();
            candidates.push((
                LevelKind::Mc,
                (0..n).map(|c| t.socket_of(c)).collect(),
                spans,
            ));
        }
        if t.sockets > 1 {
            candidates.push((LevelKind::Numa, vec![0; n], vec![CpuMask::first(n)]));
        }
        let mut levels: Vec<Level> = Vec::new();
        for (kind, span_of, spans) in candidates {
            let weight = spans[0].count();
            // sd_degenerate: a level that spans no more than its child (or one CPU) adds nothing.
            let child_weight = levels.last().map_or(1, |l| l.weight);
            if weight <= child_weight {
                continue;
            }
            let groups = spans
                .iter()
                .map(|span| match levels.last() {
                    None => span
                        .iter()
                        .map(|c| CpuMask::range(c..c + 1))
                        .collect::<Vec<_>>(),
                    Some(child) => {
                        let mut seen = Vec::new();
                        for c in span.iter() {
                            let s = child.span_of[c];
                            if !seen.contains(&s) {
                                seen.push(s);
                            }
                        }
                        seen.into_iter().map(|s| child.spans[s]).collect()
                    }
                })
                .collect();
            // build_sched_domains: the first level above an LLC gets one task per LLC it spans
            // (an eighth of its span if it spans one), as imb_numa_nr; 0 without an LLC child.
            let imb_numa_nr = match levels.last() {
                Some(child) if kind == LevelKind::Numa && child.share_llc => {
                    let nr_llcs = weight / child.weight;
                    let imb = if nr_llcs == 1 { weight >> 3 } else { nr_llcs };
                    imb.max(1)
                }
                _ => 0,
            };
            let (imbalance_pct, cache_nice_tries, prefer_sibling) = match kind {
                LevelKind::Smt => (110, 0, true),
                LevelKind::Mc => (117, 1, true),
                LevelKind::Numa => (117, 2, false),
            };
            levels.push(Level {
                kind,
                spans,
                span_of,
                groups,
                weight,
                imbalance_pct,
                cache_nice_tries,
                min_interval_ms: weight as u64,
                max_interval_ms: 2 * weight as u64,
                busy_factor: 16,
                prefer_sibling,
                share_llc: kind != LevelKind::Numa,
                share_capacity: kind == LevelKind::Smt,
                numa: kind == LevelKind::Numa,
                imb_numa_nr,
            });
        }
        let llc_level = levels.iter().rposition(|l| l.share_llc);
        let state = (0..n)
            .flat_map(|_| levels.iter())
            .map(|l| LevelState {
                last_balance: 0,
                balance_interval_ms: l.min_interval_ms,
                nr_balance_failed: 0,
            })
            .collect();
        let has_idle_cores = llc_level.map_or(0, |l| levels[l].spans.len());
        Domains {
            topology: t,
            levels,
            llc_level,
            state,
            idle: CpuMask::first(n),
            has_idle_cores: vec![true; has_idle_cores],
            llc_util: vec![(0.0, 0); has_idle_cores],
            nohz_next_balance: 0,
            push_cpu: vec![None; n],
            stop_requests: Vec::new(),
            tasks: Vec::new(),
        }
    }

    fn st(&mut self, cpu: CpuId, level: usize) -> &mut LevelState {
        let nl = self.levels.len();
        &mut self.state[cpu * nl + level]
    }

    /// The LLC domain of `cpu` (`sd_llc`'s span) and its index, if the machine has one.
    fn llc(&self, cpu: CpuId) -> Option<(usize, &CpuMask)> {
        let l = &self.levels[self.llc_level?];
        let i = l.span_of[cpu];
        Some((i, &l.spans[i]))
    }

    /// `cpus_share_cache`.
    pub fn share_cache(&self, a: CpuId, b: CpuId) -> bool {
        a == b
            || self
                .llc_level
                .is_some_and(|l| self.levels[l].span_of[a] == self.levels[l].span_of[b])
    }

    /// `cpu`'s runqueue became empty (`idle`) or got a task: keep the idle mask and its LLC's
    /// `has_idle_cores` (`update_idle_core`) up to date.
    pub fn note_idle(&mut self, cpu: CpuId, idle: bool) {
        if idle == self.idle.contains(cpu) {
            return;
        }
        if !idle {
            self.idle.remove(cpu);
            return;
        }
        self.idle.insert(cpu);
        if self.topology.threads > 1 && self.topology.siblings(cpu).all(|s| self.idle.contains(s)) {
            if let Some((i, _)) = self.llc(cpu) {
                self.has_idle_cores[i] = true;
            }
        }
    }

    /// The CPUs the domain code believes idle.
    pub fn idle_cpus(&self) -> &CpuMask {
        &self.idle
    }

    fn wake_state(&mut self, t: TaskId) -> &mut WakeState {
        if self.tasks.len() <= t {
            self.tasks.resize(t + 1, WakeState::default());
        }
        &mut self.tasks[t]
    }

    // ----- wakeup placement -----

    /// `select_task_rq_fair` for the wakeup of `task` (not its first enqueue), last on `prev`,
    /// woken from `waker` (`None`: a timer, taken as `prev`'s CPU) by `waker_task`.
    pub(super) fn select_wake_cpu<R: FairRunqueues>(
        &mut self,
        r: &R,
        m: &MachineView,
        task: TaskId,
        prev: CpuId,
        waker: Option<(CpuId, Option<TaskId>)>,
        allowed: &CpuMask,
    ) -> CpuId {
        let allowed = allowed.below(m.ncpus);
        let prev = if allowed.contains(prev) {
            prev
        } else {
            allowed.lowest().unwrap_or(prev)
        };
        let (cpu, waker_task) = waker.unwrap_or((prev, None));
        let mut new_cpu = prev;
        let mut want_affine = allowed.contains(cpu);
        if let Some(w) = waker_task {
            self.record_wakee(m.now, w, task);
            want_affine &= !self.wake_wide(w, task);
        }
        if want_affine && cpu != prev {
            // The lowest domain of `cpu` that spans `prev` (all levels have SD_WAKE_AFFINE).
            if let Some(level) = self.levels.iter().position(|l| l.span(cpu).contains(prev)) {
                new_cpu = self.wake_affine(r, m, level, task, cpu, prev);
            }
        }
        let target = self.select_idle_sibling(r, m, task, prev, new_cpu, &allowed);
        if allowed.contains(target) {
            target
        } else {
            prev
        }
    }

    /// `record_wakee`: a waker that keeps switching wakees has many flips (decayed each second).
    fn record_wakee(&mut self, now: u64, waker: TaskId, wakee: TaskId) {
        let w = self.wake_state(waker);
        if now > w.wakee_flip_decay_ts + 1_000_000_000 {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ts = now;
        }
        if w.last_wakee != Some(wakee) {
            w.last_wakee = Some(wakee);
            w.wakee_flips += 1;
        }
    }

    /// `wake_wide`: a 1:N waker pattern wider than the LLC leaves the wakee where it was.
    fn wake_wide(&mut self, waker: TaskId, wakee: TaskId) -> bool {
        let factor = self.llc_level.map_or(1, |l| self.levels[l].weight as u32);
        let (a, b) = (
            self.wake_state(waker).wakee_flips,
            self.wake_state(wakee).wakee_flips,
        );
        let (master, slave) = (a.max(b), a.min(b));
        !(slave < factor || master < slave.saturating_mul(factor))
    }

    /// `wake_affine`: the waker's CPU `this` or the task's previous CPU.
    fn wake_affine<R: FairRunqueues>(
        &self,
        r: &R,
        m: &MachineView,
        level: usize,
        task: TaskId,
        this: CpuId,
        prev: CpuId,
    ) -> CpuId {
        // wake_affine_idle (no WF_SYNC)
        if r.cpu_idle(m, this) && self.share_cache(this, prev) {
            return if r.cpu_idle(m, prev) { prev } else { this };
        }
        if r.cpu_idle(m, prev) {
            return prev;
        }
        // wake_affine_weight with WA_BIAS; our loads are instantaneous, so the sleeping task's
        // weight is not on `prev` to be taken off.
        let imb = self.levels[level].imbalance_pct;
        let this_eff = (r.load(this) + r.task_weight(task)) * 100;
        let prev_eff = r.load(prev) * (100 + (imb - 100) / 2);
        if this_eff < prev_eff {
            this
        } else {
            prev
        }
    }

    /// `select_idle_sibling`.
    fn select_idle_sibling<R: FairRunqueues>(
        &mut self,
        r: &R,
        m: &MachineView,
        task: TaskId,
        prev: CpuId,
        target: CpuId,
        allowed: &CpuMask,
    ) -> CpuId {
        if r.cpu_idle(m, target) {
            return target;
        }
        if prev != target && self.share_cache(prev, target) && r.cpu_idle(m, prev) {
            return prev;
        }
        let recent = self.wake_state(task).recent_used_cpu.replace(prev);
        if let Some(c) = recent {
            if c != prev
                && c != target
                && self.share_cache(c, target)
                && allowed.contains(c)
                && r.cpu_idle(m, c)
            {
                return c;
            }
        }
        let Some((llc, span)) = self.llc(target) else {
            return target;
        };
        let cpus = span.and(allowed);
        let mut has_idle_core = false;
        if self.topology.threads > 1 {
            has_idle_core = self.has_idle_cores[llc];
            if !has_idle_core && self.share_cache(prev, target) {
                // select_idle_smt: an idle sibling of the previous CPU.
                if let Some(c) = self
                    .topology
                    .siblings(prev)
                    .find(|&c| c != prev && cpus.contains(c) && r.cpu_idle(m, c))
                {
                    return c;
                }
            }
        }
        self.select_idle_cpu(r, m, llc, &cpus, has_idle_core, target)
            .unwrap_or(target)
    }

    /// `select_idle_cpu` over `cpus` (the LLC's allowed CPUs), from `target + 1` round.
    fn select_idle_cpu<R: FairRunqueues>(
        &mut self,
        r: &R,
        m: &MachineView,
        llc: usize,
        cpus: &CpuMask,
        has_idle_core: bool,
        target: CpuId,
    ) -> Option<CpuId> {
        let candidates = self.idle.and(cpus);
        let n = m.ncpus;
        let start = (target + 1) % n.max(1);
        // Idle CPUs in for_each_cpu_wrap order: from `start` up, then from 0.
        let wrap = candidates
            .iter()
            .filter(move |&c| c >= start)
            .chain(candidates.iter().filter(move |&c| c < start));
        if has_idle_core {
            let mut idle_cpu = None;
            for c in wrap {
                if !r.cpu_idle(m, c) {
                    continue;
                }
                if self
                    .topology
                    .siblings(c)
                    .all(|s| self.idle.contains(s) && r.cpu_idle(m, s))
                {
                    return Some(c);
                }
                idle_cpu = idle_cpu.or(Some(c));
            }
            self.has_idle_cores[llc] = false;
            return idle_cpu;
        }
        // SIS_UTIL: scan fewer CPUs the busier the LLC; none from 85 % busy (pct 117).
        let weight = cpus.count() as u64;
        let llc_weight = self.levels[self.llc_level?].weight as u64;
        let busy = llc_weight
            - self
                .idle
                .and(&self.levels[self.llc_level?].spans[llc])
                .count() as u64;
        let pct = self.levels[self.llc_level?].imbalance_pct;
        // The LLC's utilization: its busy fraction as a PELT-like average (32 ms half-life),
        // sampled at each wakeup that searches it.
        let (avg, since) = self.llc_util[llc];
        let decay = (-(m.now.saturating_sub(since) as f64) / 32e6).exp2();
        let now_frac = (busy * CAPACITY / llc_weight.max(1)) as f64;
        let util = avg * decay + now_frac * (1.0 - decay);
        self.llc_util[llc] = (util, m.now);
        // x = util in CAPACITY units; y = CAPACITY − x²·pct²/10000.
        let x = util.round() as u64;
        let tmp = (x * x * pct * pct / (10_000 * CAPACITY)).min(CAPACITY);
        let nr_scan = llc_weight * (CAPACITY - tmp) / CAPACITY;
        let nr = nr_scan + 1;
        if nr == 1 || weight == 0 {
            return None;
        }
        for c in wrap {
            // CPUs visited before reaching c, c included (the kernel stops when --nr hits 0).
            let visited = if c >= start {
                cpus.and(&CpuMask::range(start..c + 1)).count()
            } else {
                cpus.and(&CpuMask::range(start..n)).count()
                    + cpus.and(&CpuMask::range(0..c + 1)).count()
            } as u64;
            if visited >= nr {
                return None;
            }
            if r.cpu_idle(m, c) {
                return Some(c);
            }
        }
        None
    }

    // ----- fork placement -----

    /// `select_task_rq_fair` for a new task (WF_FORK; SD_BALANCE_FORK is set on every level,
    /// the NUMA level included, as `sd_init` keeps it for nodes within `node_reclaim_distance`):
    /// `sched_balance_find_dst_cpu` from `cpu`, the parent's CPU, over the CPUs in `allowed`.
    pub(super) fn find_dst_cpu<R: FairRunqueues>(
        &self,
        r: &R,
        m: &MachineView,
        cpu: CpuId,
        allowed: &CpuMask,
    ) -> CpuId {
        let allowed = allowed.below(m.ncpus);
        let Some(top) = self.levels.len().checked_sub(1) else {
            return if allowed.contains(cpu) {
                cpu
            } else {
                allowed.lowest().unwrap_or(cpu)
            };
        };
        if self.levels[top].span(cpu).and(&allowed).is_empty() {
            return cpu;
        }
        let (mut cpu, mut new_cpu) = (cpu, cpu);
        let mut level = Some(top);
        while let Some(lv) = level {
            let Some(group) = self.find_dst_group(r, m, lv, cpu, &allowed) else {
                level = lv.checked_sub(1);
                continue;
            };
            new_cpu = find_dst_group_cpu(r, m, &group, cpu, &allowed);
            if new_cpu == cpu {
                level = lv.checked_sub(1);
                continue;
            }
            // Now balance at the levels of `new_cpu` below this one.
            cpu = new_cpu;
            level = lv.checked_sub(1);
        }
        if allowed.contains(new_cpu) {
            new_cpu
        } else {
            allowed.lowest().unwrap_or(new_cpu)
        }
    }

    /// `sched_balance_find_dst_group`: the idlest group of `cpu`'s domain at `level` that
    /// `allowed` reaches, or `None` to stay in the local group.
    fn find_dst_group<R: FairRunqueues>(
        &self,
        r: &R,
        m: &MachineView,
        level: usize,
        cpu: CpuId,
        allowed: &CpuMask,
    ) -> Option<CpuMask> {
        let lv = &self.levels[level];
        let mut local = None;
        let mut idlest: Option<(CpuMask, GroupStats)> = None;
        for (index, g) in lv.groups_of(cpu).iter().enumerate() {
            if g.and(allowed).is_empty() {
                continue;
            }
            let stats = group_stats(r, m, index, g, &CpuMask::default());
            if g.contains(cpu) {
                local = Some(stats);
            } else if idlest.as_ref().is_none_or(|(_, i)| pick_idlest(&stats, i)) {
                idlest = Some((*g, stats));
            }
        }
        let (group, idlest) = idlest?;
        let Some(local) = local else {
            return Some(group);
        };
        if local.kind < idlest.kind {
            return None;
        }
        if local.kind > idlest.kind {
            return Some(group);
        }
        match local.kind {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = CAPACITY * (lv.imbalance_pct - 100) / 100;
                // Across nodes, the remote group must be lighter even with the margin added.
                if lv.numa && idlest.avg_load + imbalance >= local.avg_load {
                    return None;
                }
                if idlest.avg_load >= local.avg_load + imbalance {
                    return None;
                }
                if 100 * local.avg_load <= lv.imbalance_pct * idlest.avg_load {
                    return None;
                }
            }
            GroupType::HasSpare => {
                if lv.numa {
                    // Keep the child near its parent while the local node stays lightly
                    // loaded (adjust_numa_imbalance); a pinned task's allowance is at most
                    // the CPUs it may use there.
                    let local_span = lv.groups_of(cpu)[local.index];
                    let imb_numa_nr = lv.imb_numa_nr.min(local_span.and(allowed).count());
                    let imbalance = local.idle_cpus.abs_diff(idlest.idle_cpus);
                    if adjust_numa_imbalance(imbalance, local.nr_running + 1, imb_numa_nr) == 0 {
                        return None;
                    }
                }
                if local.idle_cpus >= idlest.idle_cpus {
                    return None;
                }
            }
        }
        Some(group)
    }

    // ----- balancing -----

    /// The interval of `level` for a CPU that is busy or not, ns (`get_sd_balance_interval`).
    fn interval_ns(&self, m: &MachineView, interval_ms: u64, busy: bool) -> u64 {
        let level_ms = if busy {
            interval_ms * self.levels[0].busy_factor
        } else {
            interval_ms
        };
        let hz = m.hz as u64;
        let jiffies = (level_ms * hz).div_ceil(1000);
        let max = (hz * m.ncpus as u64 / 10).max(1);
        jiffies.clamp(1, max) * m.tick_ns()
    }

    /// The balancing the machine asks for on `cpu`: a busy CPU's tick runs its own
    /// `sched_balance_domains` and may kick the NOHZ idle balance for the idle CPUs; a newly
    /// idle CPU runs `sched_balance_newidle`.
    pub(super) fn balance<R: FairRunqueues>(
        &mut self,
        r: &mut R,
        m: &MachineView,
        cpu: CpuId,
        newly_idle: bool,
    ) -> Vec<Move> {
        let mut moves = Vec::new();
        if newly_idle {
            for level in 0..self.levels.len() {
                if r.nr_running(cpu) > 0 {
                    break;
                }
                if self.balance_rq(r, m, cpu, level, IdleType::NewlyIdle, &mut moves) != Some(0) {
                    break;
                }
            }
            return moves;
        }
        let busy = !r.cpu_idle(m, cpu);
        self.balance_domains(r, m, cpu, busy, &mut moves);
        // nohz_balancer_kick
        if m.now >= self.nohz_next_balance && !self.idle.and(&CpuMask::first(m.ncpus)).is_empty() {
            let llc_busy = self
                .llc(cpu)
                .map_or(0, |(_, span)| span.count() - self.idle.and(span).count());
            if r.nr_running(cpu) >= 2 || llc_busy > 1 {
                let mut next = u64::MAX;
                let idle = self.idle.and(&CpuMask::first(m.ncpus));
                for c in idle.iter() {
                    if r.cpu_idle(m, c) {
                        next = next.min(self.balance_domains(r, m, c, false, &mut moves));
                    }
                }
                self.nohz_next_balance = if next == u64::MAX {
                    m.now + m.tick_ns()
                } else {
                    next.max(m.now + m.tick_ns())
                };
            }
        }
        moves
    }

    /// `sched_balance_domains`: each level of `cpu` whose interval has passed; returns when the
    /// next level is due.
    fn balance_domains<R: FairRunqueues>(
        &mut self,
        r: &mut R,
        m: &MachineView,
        cpu: CpuId,
        mut busy: bool,
        moves: &mut Vec<Move>,
    ) -> u64 {
        let mut next = u64::MAX;
        for level in 0..self.levels.len() {
            let st = *self.st(cpu, level);
            let mut interval = self.interval_ns(m, st.balance_interval_ms, busy);
            if m.now >= st.last_balance + interval {
                let idle = if busy {
                    IdleType::NotIdle
                } else {
                    IdleType::Idle
                };
                let moved = self.balance_rq(r, m, cpu, level, idle, moves);
                if moved.is_some_and(|n| n > 0) {
                    busy = !r.cpu_idle(m, cpu);
                }
                self.st(cpu, level).last_balance = m.now;
                let ms = self.st(cpu, level).balance_interval_ms;
                interval = self.interval_ns(m, ms, busy);
                next = next.min(m.now + interval);
                // `continue_balancing = 0`: another CPU of this level's local group balances
                // for it, here and at the levels above.
                if moved.is_none() {
                    break;
                }
                continue;
            }
            next = next.min(self.st(cpu, level).last_balance + interval);
        }
        next
    }

    /// `sched_balance_rq` of `cpu` at `level`: tasks moved, or `None` when
    /// `should_we_balance` leaves the balancing of this level (and those above) to another CPU
    /// of the local group (`*continue_balancing = 0`).
    fn balance_rq<R: FairRunqueues>(
        &mut self,
        r: &mut R,
        m: &MachineView,
        cpu: CpuId,
        level: usize,
        idle: IdleType,
        moves: &mut Vec<Move>,
    ) -> Option<usize> {
        let lv = &self.levels[level];
        let groups = lv.groups_of(cpu);
        let Some(local_i) = groups.iter().position(|g| g.contains(cpu)) else {
            return Some(0);
        };
        // should_we_balance; when it says no: `goto out_balanced`, and stop.
        let designated = if idle == IdleType::NewlyIdle {
            r.nr_running(cpu) == 0
        } else {
            let local = &groups[local_i];
            let first_idle = local.and(&self.idle).iter().find(|&c| r.cpu_idle(m, c));
            first_idle.unwrap_or_else(|| local.lowest().unwrap_or(cpu)) == cpu
        };
        if !designated {
            self.out_balanced(cpu, level, idle, false);
            return None;
        }
        let nl = self.levels.len();
        let si = cpu * nl + level;
        // The CPUs whose tasks turned out all pinned away from `cpu` (`env.cpus` cleared of them
        // for the `redo`).
        let mut pinned = CpuMask::default();
        let (src, kind) = loop {
            let Some((src, kind, mut imbalance)) = self.find_src(r, m, cpu, level, idle, &pinned)
            else {
                self.out_balanced(cpu, level, idle, false);
                return Some(0);
            };
            let failed = self.state[si].nr_balance_failed;
            // task_hot: SMT siblings share their caches, so nothing is hot between them.
            let hot_ok =
                failed > self.levels[level].cache_nice_tries || self.levels[level].share_capacity;
            let mut moved = 0;
            // Tasks are detached only from a CPU with more than its running one.
            if r.nr_running(src) >= 2 {
                // detach_tasks
                for _ in 0..NR_MIGRATE {
                    if imbalance == 0 || r.nr_running(src) <= 1 {
                        break;
                    }
                    let max_weight = match kind {
                        Migration::Load => imbalance
                            .checked_shl(failed)
                            .unwrap_or(u64::MAX)
                            .max(imbalance),
                        Migration::Task => u64::MAX,
                    };
                    let Some(mv) = r.pull_one(m, src, cpu, max_weight, hot_ok) else {
                        break;
                    };
                    self.note_move(r, &mv);
                    imbalance = match kind {
                        Migration::Load => imbalance.saturating_sub(r.task_weight(mv.task)),
                        Migration::Task => imbalance - 1,
                    };
                    moves.push(mv);
                    moved += 1;
                    if idle == IdleType::NewlyIdle {
                        break;
                    }
                }
                // LBF_ALL_PINNED: no task of the busiest CPU may run here — balance again
                // without it while CPUs outside the local group are left, else `out_all_pinned`.
                if moved == 0 && r.pinned_away(m, src, cpu) {
                    pinned.insert(src);
                    let lv = &self.levels[level];
                    let local_group = &lv.groups_of(cpu)[local_i];
                    let left = lv
                        .span(cpu)
                        .iter()
                        .any(|c| c < m.ncpus && !pinned.contains(c) && !local_group.contains(c));
                    if left {
                        continue;
                    }
                    self.out_balanced(cpu, level, idle, true);
                    return Some(0);
                }
            }
            if moved > 0 {
                let lvl_min = self.levels[level].min_interval_ms;
                let st = &mut self.state[si];
                st.nr_balance_failed = 0;
                st.balance_interval_ms = lvl_min;
                return Some(moved);
            }
            break (src, kind);
        };
        let lvl_min = self.levels[level].min_interval_ms;
        let st = &mut self.state[si];
        if idle != IdleType::NewlyIdle {
            st.nr_balance_failed += 1;
        }
        // need_active_balance (imbalanced_active_balance: tasks to move and more than
        // cache_nice_tries + 2 failures), for a busiest CPU whose running task may come here;
        // one that may not is `out_one_pinned`.
        let failed = st.nr_balance_failed;
        if kind == Migration::Task && failed > self.levels[level].cache_nice_tries + 2 {
            if !m.curr[src].is_some_and(|t| r.allowed_on(t, cpu)) {
                self.grow_interval(cpu, level, idle, false);
                return Some(0);
            }
            if self.push_cpu[src].is_none() {
                self.push_cpu[src] = Some(cpu);
                self.stop_requests.push(src);
            }
        }
        // "We were unbalanced, so reset the balancing interval."
        self.state[si].balance_interval_ms = lvl_min;
        Some(0)
    }

    /// `sched_balance_find_src_group` and `sched_balance_find_src_rq` for `cpu` at `level`,
    /// leaving out the CPUs in `pinned`: the busiest CPU of the busiest group, how to measure
    /// what moves, and the imbalance; `None` when balanced (or no runqueue qualifies).
    fn find_src<R: FairRunqueues>(
        &self,
        r: &R,
        m: &MachineView,
        cpu: CpuId,
        level: usize,
        idle: IdleType,
        pinned: &CpuMask,
    ) -> Option<(CpuId, Migration, u64)> {
        let groups = self.levels[level].groups_of(cpu);
        let local_i = groups.iter().position(|g| g.contains(cpu))?;
        let stats: Vec<GroupStats> = groups
            .iter()
            .enumerate()
            .map(|(index, g)| group_stats(r, m, index, g, pinned))
            .collect();
        let local = stats[local_i];
        let prefer_sibling = level > 0 && self.levels[level - 1].prefer_sibling;
        // update_sd_pick_busiest
        let busiest = stats
            .iter()
            .filter(|s| s.index != local_i && s.nr_running > 0)
            .fold(None::<GroupStats>, |best, s| match best {
                None => Some(*s),
                Some(b) if busier(s, &b) => Some(*s),
                b => b,
            });
        let total_load: u64 = stats.iter().map(|s| s.load).sum();
        let total_weight: usize = stats.iter().map(|s| s.weight).sum();
        let sds_avg = total_load * CAPACITY / total_weight.max(1) as u64;
        let lv = &self.levels[level];
        let (busiest, kind, imbalance) = busiest.and_then(|b| {
            find_src_group(
                &local,
                &b,
                sds_avg,
                lv.imbalance_pct,
                prefer_sibling,
                idle,
                lv.share_capacity,
                lv.numa.then_some(lv.imb_numa_nr),
            )
            .map(|(kind, imb)| (b, kind, imb))
        })?;
        // sched_balance_find_src_rq: the busiest CPU of the group — by load (a CPU running
        // one task heavier than the imbalance is passed over), or by runnable tasks.
        let group = groups[busiest.index];
        let src = group
            .iter()
            .filter(|&c| {
                let n = r.nr_running(c);
                c != cpu
                    && !pinned.contains(c)
                    && n > 0
                    && !(kind == Migration::Load && n == 1 && r.load(c) > imbalance)
            })
            .max_by_key(|&c| match kind {
                Migration::Load => (r.load(c), r.nr_running(c) as u64, std::cmp::Reverse(c)),
                Migration::Task => (r.nr_running(c) as u64, r.load(c), std::cmp::Reverse(c)),
            })?;
        Some((src, kind, imbalance))
    }

    /// `out_balanced` (and `out_all_pinned`, when every task of the busiest CPUs was pinned
    /// away): nothing to move at this level (or another CPU balances it), so the failure count
    /// restarts and the interval grows.
    fn out_balanced(&mut self, cpu: CpuId, level: usize, idle: IdleType, all_pinned: bool) {
        self.st(cpu, level).nr_balance_failed = 0;
        self.grow_interval(cpu, level, idle, all_pinned);
    }

    /// `out_one_pinned`: the balance interval doubles up to `max_interval` (up to
    /// MAX_PINNED_INTERVAL if that is more and every task was pinned away, LBF_ALL_PINNED),
    /// except on newly idle balancing, which disregards intervals (and would make it skyrocket).
    fn grow_interval(&mut self, cpu: CpuId, level: usize, idle: IdleType, all_pinned: bool) {
        let max = self.levels[level].max_interval_ms;
        let cap = if all_pinned {
            max.max(MAX_PINNED_INTERVAL_MS)
        } else {
            max
        };
        let st = self.st(cpu, level);
        if idle != IdleType::NewlyIdle && st.balance_interval_ms < cap {
            st.balance_interval_ms *= 2;
        }
    }

    /// The CPUs whose stopper the balancing since the last call woke (see
    /// [`super::Policy::take_active_balance`]).
    pub(super) fn take_stop_requests(&mut self) -> Vec<CpuId> {
        std::mem::take(&mut self.stop_requests)
    }

    /// `cpu` picks its next task: a stopper that did not run before it (its task blocked, or
    /// left) has nothing left to do (`busiest_rq->active_balance = 0`).
    pub(super) fn clear_stop(&mut self, cpu: CpuId) {
        if let Some(p) = self.push_cpu.get_mut(cpu) {
            *p = None;
        }
    }

    /// `active_load_balance_cpu_stop` on `cpu`, its running task just put back: detach one
    /// queued task for the CPU that asked (`detach_one_task` with LBF_ACTIVE_LB, so a
    /// cache-hot task may go) and attach it there.
    pub(super) fn active_stop<R: FairRunqueues>(
        &mut self,
        r: &mut R,
        m: &MachineView,
        cpu: CpuId,
    ) -> Option<Move> {
        let to = self.push_cpu.get_mut(cpu)?.take()?;
        if r.nr_running(cpu) == 0 {
            return None;
        }
        let mv = r.pull_one(m, cpu, to, u64::MAX, true)?;
        self.note_move(r, &mv);
        // "Active balancing done, reset the failure counter": at the lowest level of the
        // pulling CPU that spans this one.
        if let Some(level) = self.levels.iter().position(|l| l.span(to).contains(cpu)) {
            self.st(to, level).nr_balance_failed = 0;
        }
        Some(mv)
    }

    /// Keep the idle mask current across a move (the policy's own `note_idle` cannot reach
    /// the domains while they balance).
    fn note_move<R: FairRunqueues>(&mut self, r: &R, mv: &Move) {
        self.note_idle(mv.from, r.nr_running(mv.from) == 0);
        self.note_idle(mv.to, r.nr_running(mv.to) == 0);
    }
}

/// `update_sg_lb_stats` for one group.
fn group_stats<R: FairRunqueues>(
    r: &R,
    m: &MachineView,
    index: usize,
    g: &CpuMask,
    left_out: &CpuMask,
) -> GroupStats {
    let (mut nr_running, mut load, mut weight, mut idle_cpus) = (0, 0, 0, 0);
    for c in g.iter().filter(|&c| c < m.ncpus && !left_out.contains(c)) {
        nr_running += r.nr_running(c);
        load += r.load(c);
        weight += 1;
        idle_cpus += usize::from(r.cpu_idle(m, c));
    }
    // group_classify without utilization: more tasks than CPUs is overloaded.
    let kind = if nr_running > weight {
        GroupType::Overloaded
    } else if nr_running < weight {
        GroupType::HasSpare
    } else {
        GroupType::FullyBusy
    };
    GroupStats {
        index,
        nr_running,
        load,
        weight,
        idle_cpus,
        avg_load: load * CAPACITY / weight.max(1) as u64,
        kind,
    }
}

/// `update_pick_idlest`: whether `s` is idler than the idlest group so far.
fn pick_idlest(s: &GroupStats, idlest: &GroupStats) -> bool {
    if s.kind != idlest.kind {
        return s.kind < idlest.kind;
    }
    match s.kind {
        GroupType::Overloaded | GroupType::FullyBusy => s.avg_load < idlest.avg_load,
        // Most idle CPUs, then the lowest utilization (here: fewest runnable tasks).
        GroupType::HasSpare => {
            s.idle_cpus > idlest.idle_cpus
                || (s.idle_cpus == idlest.idle_cpus && s.nr_running < idlest.nr_running)
        }
    }
}

/// `sched_balance_find_dst_group_cpu`: an idle allowed CPU of `group` (the lowest-numbered: no
/// idle states or idle timestamps are modelled), else the least loaded one (`this_cpu` if
/// none is lighter than the first examined).
fn find_dst_group_cpu<R: FairRunqueues>(
    r: &R,
    m: &MachineView,
    group: &CpuMask,
    this_cpu: CpuId,
    allowed: &CpuMask,
) -> CpuId {
    if group.count() == 1 {
        return group.lowest().unwrap_or(this_cpu);
    }
    let mut least = (u64::MAX, this_cpu);
    for c in group.and(allowed).iter() {
        if r.cpu_idle(m, c) {
            return c;
        }
        let load = r.load(c);
        if load < least.0 {
            least = (load, c);
        }
    }
    least.1
}

/// `NUMA_IMBALANCE_MIN`: the imbalance of a pair of communicating tasks.
const NUMA_IMBALANCE_MIN: usize = 2;

/// `adjust_numa_imbalance`: no imbalance while the destination would run at most
/// `imb_numa_nr` tasks and the imbalance is at most a communicating pair.
fn adjust_numa_imbalance(imbalance: usize, dst_running: usize, imb_numa_nr: usize) -> usize {
    if dst_running > imb_numa_nr || imbalance > NUMA_IMBALANCE_MIN {
        imbalance
    } else {
        0
    }
}

/// `update_sd_pick_busiest`: whether `s` is busier than the busiest so far.
fn busier(s: &GroupStats, b: &GroupStats) -> bool {
    if s.kind != b.kind {
        return s.kind > b.kind;
    }
    match s.kind {
        GroupType::Overloaded | GroupType::FullyBusy => s.avg_load > b.avg_load,
        GroupType::HasSpare => {
            s.idle_cpus < b.idle_cpus || (s.idle_cpus == b.idle_cpus && s.nr_running > b.nr_running)
        }
    }
}

/// `sibling_imbalance`: tasks to move so that both groups run the same number per CPU.
fn sibling_imbalance(idle: IdleType, busiest: &GroupStats, local: &GroupStats) -> u64 {
    if idle == IdleType::NotIdle || busiest.nr_running == 0 {
        return 0;
    }
    let (nb, nl) = (busiest.weight as i64, local.weight as i64);
    let (b, l) = (busiest.nr_running as i64, local.nr_running as i64);
    if nb == nl {
        return (b - l).max(0) as u64;
    }
    let mut imb = (nl * b - nb * l).max(0);
    imb = (2 * imb + nl + nb) / (nl + nb);
    if imb <= 1 && l == 0 && b > 1 {
        imb = 2;
    }
    imb as u64
}

/// `sched_balance_find_src_group`'s verdict and `calculate_imbalance`: what to migrate and how
/// much (a load in weight units, or a task count), or `None` when balanced. `numa`: the
/// domain's `imb_numa_nr` if it is a NUMA domain.
#[allow(clippy::too_many_arguments)]
fn find_src_group(
    local: &GroupStats,
    busiest: &GroupStats,
    sds_avg: u64,
    imbalance_pct: u64,
    prefer_sibling: bool,
    idle: IdleType,
    share_capacity: bool,
    numa: Option<usize>,
) -> Option<(Migration, u64)> {
    if local.kind > busiest.kind {
        return None;
    }
    if local.kind == GroupType::Overloaded
        && (local.avg_load >= busiest.avg_load
            || local.avg_load >= sds_avg
            || 100 * busiest.avg_load <= imbalance_pct * local.avg_load)
    {
        return None;
    }
    let force = prefer_sibling
        && local.kind == GroupType::HasSpare
        && sibling_imbalance(idle, busiest, local) > 1;
    if !force && busiest.kind != GroupType::Overloaded {
        if idle == IdleType::NotIdle {
            return None;
        }
        if busiest.weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
            return None;
        }
        if busiest.nr_running == 1 {
            return None;
        }
    }
    // calculate_imbalance
    let found = if local.kind == GroupType::HasSpare {
        if busiest.kind > GroupType::FullyBusy && !share_capacity {
            // migrate_util standing in: fill the local group's idle CPUs.
            (
                Migration::Task,
                (local.idle_cpus as u64).max(u64::from(idle != IdleType::NotIdle)),
            )
        } else {
            let mut imb = if busiest.weight == 1 || prefer_sibling {
                sibling_imbalance(idle, busiest, local)
            } else {
                local.idle_cpus.saturating_sub(busiest.idle_cpus) as u64
            };
            if let Some(imb_numa_nr) = numa {
                // A small imbalance between nodes stays, so that a communicating pair keeps
                // to one node while the local node is lightly loaded.
                imb = adjust_numa_imbalance(imb as usize, local.nr_running + 1, imb_numa_nr) as u64;
            }
            (Migration::Task, imb >> 1)
        }
    } else {
        // A fully busy local group pulls only while it is below both the busiest group and
        // the domain's average.
        if local.kind < GroupType::Overloaded
            && (local.avg_load >= busiest.avg_load || local.avg_load >= sds_avg)
        {
            return None;
        }
        let imb = (busiest.avg_load.saturating_sub(sds_avg) * busiest.weight as u64)
            .min(sds_avg.saturating_sub(local.avg_load) * local.weight as u64)
            / CAPACITY;
        (Migration::Load, imb)
    };
    (found.1 > 0).then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::cfs::Cfs;
    use crate::policy::eevdf::Eevdf;
    use crate::policy::testing::{knobs, Harnessed, H};
    use crate::policy::{BalanceKind, EnqueueKind, Policy, PutPrevKind};

    impl Harnessed for Cfs {}
    impl Harnessed for Eevdf {}

    fn topo(s: &str) -> Topology {
        s.parse().unwrap()
    }

    #[test]
    fn levels_follow_sd_init() {
        let d = Domains::new(&topo("2s:4c:2t"));
        let kinds: Vec<_> = d.levels.iter().map(|l| l.kind.name()).collect();
        assert_eq!(kinds, ["SMT", "MC", "NUMA"]);
        let l: Vec<_> = d
            .levels
            .iter()
            .map(|l| {
                (
                    l.weight,
                    l.imbalance_pct,
                    l.cache_nice_tries,
                    l.min_interval_ms,
                    l.max_interval_ms,
                )
            })
            .collect();
        assert_eq!(
            l,
            [(2, 110, 0, 2, 4), (8, 117, 1, 8, 16), (16, 117, 2, 16, 32)]
        );
        assert!(d.levels.iter().all(|l| l.busy_factor == 16));
        assert_eq!(
            d.levels
                .iter()
                .map(|l| l.prefer_sibling)
                .collect::<Vec<_>>(),
            [true, true, false]
        );
        // CPU 9 is core 1's second thread on socket 0: its SMT span {1, 9}; MC: socket 0 (0-3,
        // 8-11) whose groups are its 4 cores; NUMA: everything, in 2 socket groups.
        let span = |lv: usize| d.levels[lv].span(9).iter().collect::<Vec<_>>();
        assert_eq!(span(0), [1, 9]);
        assert_eq!(span(1), [0, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(span(2).len(), 16);
        let groups = |lv: usize| {
            d.levels[lv]
                .groups_of(9)
                .iter()
                .map(|g| g.iter().collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        assert_eq!(groups(0), [vec![1], vec![9]]);
        assert_eq!(
            groups(1),
            [vec![0, 8], vec![1, 9], vec![2, 10], vec![3, 11]]
        );
        assert_eq!(groups(2)[1], [4, 5, 6, 7, 12, 13, 14, 15]);
        assert!(d.share_cache(9, 3) && !d.share_cache(9, 4));
    }

    #[test]
    fn degenerate_levels_are_left_out() {
        let names = |s: &str| {
            Domains::new(&topo(s))
                .levels
                .iter()
                .map(|l| l.kind.name())
                .collect::<Vec<_>>()
        };
        assert_eq!(names("1s:8c:1t"), ["MC"]);
        assert_eq!(names("2s:1c:1t"), ["NUMA"]);
        assert_eq!(names("1s:1c:2t"), ["SMT"]);
        assert_eq!(names("2s:1c:2t"), ["SMT", "NUMA"]);
        assert!(names("1s:1c:1t").is_empty());
        let d = Domains::new(&topo("2s:1c:1t"));
        assert!(d.llc(0).is_none(), "no level shares a cache");
    }

    /// `h` on topology `t` with task `w` started on `prev` and now asleep, and one task running
    /// on each of `busy` (ids from 100).
    fn wake_case<P: Harnessed + Policy>(spec: &str, t: &str, prev: CpuId, busy: &[CpuId]) -> H<P> {
        let t = topo(t);
        let mut h = H::<P>::new(spec, 1000, t.cpus());
        h.p.set_topology(&t);
        h.spawn_on(0, prev, knobs(""));
        assert_eq!(h.pick(prev), Some(0));
        h.now += 10 * crate::policy::testing::MS;
        h.sleep(prev);
        for (i, &c) in busy.iter().enumerate() {
            h.spawn_on(100 + i, c, knobs(""));
            h.pick(c);
        }
        h
    }

    fn select_idle_sibling_prefers_the_llc<P: Harnessed + Policy>(spec: &str) {
        // Socket 0 = CPUs 0-3 and their siblings 8-11. Cores 0-2 busy on both threads, core 3
        // idle: an idle core of the LLC before any CPU of idle socket 1.
        let mut h = wake_case::<P>(spec, "2s:4c:2t", 0, &[0, 1, 2, 8, 9, 10]);
        let cpu = h.wake_to(0, 0, None, 1_000_000);
        assert!([3, 11].contains(&cpu), "{spec}: woke on {cpu}");
        // Only CPU 0's SMT sibling idle in socket 0: select_idle_smt finds it.
        let mut h = wake_case::<P>(spec, "2s:4c:2t", 0, &[0, 1, 2, 3, 9, 10, 11]);
        assert_eq!(h.wake_to(0, 0, None, 1_000_000), 8, "{spec}");
        // The waker's CPU busy, the previous CPU idle on the waker's LLC: the previous CPU.
        let mut h = wake_case::<P>(spec, "2s:4c:2t", 2, &[1]);
        assert_eq!(h.wake_to(0, 2, Some(1), 1_000_000), 2, "{spec}");
        // Socket 0 fully busy: the wakee stays in the LLC (SIS_UTIL stops the scan) rather
        // than going to idle socket 1 — the Overload-on-Wakeup pattern.
        let mut h = wake_case::<P>(spec, "2s:4c:2t", 0, &[0, 1, 2, 3, 8, 9, 10, 11]);
        let cpu = h.wake_to(0, 0, Some(1), 1_000_000);
        assert!(d_socket(cpu) == 0, "{spec}: woke on {cpu}");
    }

    fn d_socket(cpu: CpuId) -> usize {
        topo("2s:4c:2t").socket_of(cpu)
    }

    #[test]
    fn select_idle_sibling_finds_an_idle_sibling_or_llc_cpu_before_a_remote_one() {
        select_idle_sibling_prefers_the_llc::<Cfs>("cfs");
        select_idle_sibling_prefers_the_llc::<Eevdf>("eevdf");
    }

    /// [`H::run_hogs_from_cpu0`] at HZ 1000 (idle CPUs balance newly idle only): each CPU's
    /// runnable count after `ms`.
    fn run_hogs<P: Harnessed + Policy + FairRunqueues>(
        spec: &str,
        t: &str,
        hogs: usize,
        ms: u64,
    ) -> Vec<usize> {
        let t = topo(t);
        let h = H::<P>::run_hogs_from_cpu0(spec, 1000, &t, hogs, ms, false);
        (0..t.cpus()).map(|c| h.p.nr_running(c)).collect()
    }

    #[test]
    fn hogs_spread_evenly_across_domains() {
        for spec in ["cfs", "eevdf"] {
            let per_cpu = if spec == "cfs" {
                run_hogs::<Cfs>(spec, "2s:4c:2t", 32, 3000)
            } else {
                run_hogs::<Eevdf>(spec, "2s:4c:2t", 32, 3000)
            };
            assert_eq!(per_cpu.iter().sum::<usize>(), 32, "{spec}: {per_cpu:?}");
            assert!(
                per_cpu.iter().all(|&k| (1..=3).contains(&k)),
                "{spec}: 32 hogs on 16 CPUs should be 2 ± 1 each: {per_cpu:?}"
            );
        }
    }

    /// Where `task_fork` from CPU 0 puts each of `n` children on topology `t`, each queued
    /// (not run) before the next fork.
    fn fork_places<P: Harnessed + Policy>(spec: &str, t: &str, n: usize) -> Vec<CpuId> {
        let t = topo(t);
        let mut h = H::<P>::new(spec, 1000, t.cpus());
        h.p.set_topology(&t);
        (0..n)
            .map(|id| {
                h.task_new(id, 0, knobs(""), crate::policy::testing::ALL);
                let cpu = h.with(|p, m| p.task_fork(m, id, 0, 0)).expect("a topology");
                h.enqueue(cpu, id, EnqueueKind::New);
                cpu
            })
            .collect()
    }

    #[test]
    fn fork_balancing_spreads_over_cores_and_nodes_past_the_numa_allowance() {
        // 2s:4c:2t: socket 0 = cores 0-3 (siblings 8-11), socket 1 = cores 4-7 (12-15).
        // The second child stays on the parent's node (2 running ≤ imb_numa_nr 2, an
        // imbalance of 2 idle CPUs: a communicating pair), on another core; the third goes
        // to node 1, the fourth to another core there, the fifth back to node 0's third
        // core; no two share a core until every core has one.
        for places in [
            fork_places::<Cfs>("cfs", "2s:4c:2t", 8),
            fork_places::<Eevdf>("eevdf", "2s:4c:2t", 8),
        ] {
            assert_eq!(places[..5], [0, 1, 4, 5, 2], "{places:?}");
            let mut cores: Vec<_> = places.iter().map(|&c| c % 8).collect();
            cores.sort_unstable();
            assert_eq!(cores, (0..8).collect::<Vec<_>>(), "{places:?}");
        }
        // imb_numa_nr: one per LLC the NUMA domain spans.
        let d = Domains::new(&topo("2s:4c:2t"));
        assert_eq!(
            d.levels.iter().map(|l| l.imb_numa_nr).collect::<Vec<_>>(),
            [0, 0, 2]
        );
    }

    /// On topology `t`, one hog started running on each CPU of `on`; `ms` ticks of the
    /// hand-run machine ([`H::run_ticks`]). Each CPU's runnable count after.
    fn hogs_on<P: Harnessed + Policy + FairRunqueues>(
        spec: &str,
        t: &str,
        on: &[CpuId],
        ms: u64,
    ) -> Vec<usize> {
        let t = topo(t);
        let n = t.cpus();
        let mut h = H::<P>::new(spec, 1000, n);
        h.p.set_topology(&t);
        for (id, &c) in on.iter().enumerate() {
            h.spawn_on(id, c, knobs(""));
            h.pick(c);
        }
        h.run_ticks(ms, false);
        (0..n).map(|c| h.p.nr_running(c)).collect()
    }

    /// Two hogs on the SMT siblings of core 0 of `1s:2c:2t` (CPUs 0 and 2) while core 1
    /// (CPUs 1 and 3) idles.
    fn hogs_on_one_core<P: Harnessed + Policy + FairRunqueues>(spec: &str, ms: u64) -> Vec<usize> {
        hogs_on::<P>(spec, "1s:2c:2t", &[0, 2], ms)
    }

    fn numa_allowance<P: Harnessed + Policy + FairRunqueues>(spec: &str) {
        // 2s:4c:1t: node 0 = CPUs 0-3, node 1 = CPUs 4-7, imb_numa_nr 2. A pair on node 0
        // stays there (adjust_numa_imbalance: a difference of 2 while node 1 would run at
        // most 2). Four hogs on node 0 are a difference of 4: one is pushed to node 1 (each
        // runs alone, so by active balance); then 3 against 1 is a difference of 2 with node
        // 1 running 1 + 1, within the allowance, and it stays.
        let node = |per_cpu: &[usize]| (per_cpu[..4].iter().sum(), per_cpu[4..].iter().sum());
        let pair = hogs_on::<P>(spec, "2s:4c:1t", &[0, 1], 300);
        assert_eq!(node(&pair), (2, 0), "{spec}: {pair:?}");
        let four = hogs_on::<P>(spec, "2s:4c:1t", &[0, 1, 2, 3], 300);
        assert_eq!(node(&four), (3, 1), "{spec}: {four:?}");
    }

    #[test]
    fn a_pair_of_tasks_keeps_to_its_node_and_more_spread() {
        numa_allowance::<Cfs>("cfs");
        numa_allowance::<Eevdf>("eevdf");
    }

    #[test]
    fn active_balance_pushes_a_running_hog_to_the_idle_core() {
        // Each CPU of core 0 runs one task, so no task is queued to pull: only the stopper
        // (after cache_nice_tries + 2 failed MC balances) moves one to core 1.
        for (spec, per_cpu) in [
            ("cfs", hogs_on_one_core::<Cfs>("cfs", 200)),
            ("eevdf", hogs_on_one_core::<Eevdf>("eevdf", 200)),
        ] {
            assert_eq!(per_cpu.iter().sum::<usize>(), 2, "{spec}: {per_cpu:?}");
            assert_eq!(
                (per_cpu[0] + per_cpu[2], per_cpu[1] + per_cpu[3]),
                (1, 1),
                "{spec}: one hog per core: {per_cpu:?}"
            );
        }
    }

    /// On topology `t`, CPU 0 runs one task while another, which ran until `since_ns` ago,
    /// waits; idle CPU 1 balances newly idle: whether it pulled.
    fn pulls_task_that_ran<P: Harnessed + Policy>(spec: &str, t: &str, since_ns: u64) -> bool {
        let t = topo(t);
        let mut h = H::<P>::new(spec, 1000, t.cpus());
        h.p.set_topology(&t);
        h.spawn_on(0, 0, knobs(""));
        h.spawn_on(1, 0, knobs(""));
        let first = h.pick(0);
        assert!(h.ticks_until_resched(0, 100) > 0, "{spec}: its slice ends");
        h.put_prev(0, PutPrevKind::Preempted);
        assert_ne!(h.pick(0), first, "{spec}: the other task runs");
        h.now += since_ns;
        !h.balance(1, BalanceKind::NewIdle).is_empty()
    }

    fn cache_hot_tasks_stay<P: Harnessed + Policy>(spec: &str) {
        // 1s:2c:1t: one MC level (cache_nice_tries 1). A task that ran 0.1 ms ago is hot
        // (sysctl_sched_migration_cost 0.5 ms) and stays; after 1 ms it is cold and moves.
        assert!(
            !pulls_task_that_ran::<P>(spec, "1s:2c:1t", 100_000),
            "{spec}"
        );
        assert!(
            pulls_task_that_ran::<P>(spec, "1s:2c:1t", 1_000_000),
            "{spec}"
        );
        // Between SMT siblings nothing is hot.
        assert!(
            pulls_task_that_ran::<P>(spec, "1s:1c:2t", 100_000),
            "{spec}"
        );
    }

    #[test]
    fn a_cache_hot_task_is_not_pulled_except_between_smt_siblings() {
        cache_hot_tasks_stay::<Cfs>("cfs");
        cache_hot_tasks_stay::<Eevdf>("eevdf");
    }

    #[test]
    fn enqueue_kinds_keep_the_idle_mask() {
        let t = topo("1s:2c:2t");
        let mut h = H::<Eevdf>::new("eevdf", 1000, 4);
        h.p.set_topology(&t);
        h.spawn_on(0, 1, knobs(""));
        let idle = |h: &H<Eevdf>| h.p.domains_idle().iter().collect::<Vec<_>>();
        assert_eq!(idle(&h), [0, 2, 3]);
        h.pick(1);
        h.sleep(1);
        assert_eq!(idle(&h), [0, 1, 2, 3]);
        h.wake_to(0, 1, None, 1_000);
        assert_eq!(idle(&h).len(), 3);
    }

    /// Policies whose domains a test reads.
    trait WithDomains: Harnessed + Policy + FairRunqueues {
        fn doms(&self) -> &Domains;
    }
    impl WithDomains for Cfs {
        fn doms(&self) -> &Domains {
            self.domains()
        }
    }
    impl WithDomains for Eevdf {
        fn doms(&self) -> &Domains {
            self.domains()
        }
    }

    /// `cpu`'s `(balance_interval_ms, nr_balance_failed)` at `level`.
    fn level_state(d: &Domains, cpu: CpuId, level: usize) -> (u64, u32) {
        let st = d.state[cpu * d.levels.len() + level];
        (st.balance_interval_ms, st.nr_balance_failed)
    }

    fn balanced_intervals_grow<P: WithDomains>(spec: &str) {
        // 1s:2c:2t, a hog on every CPU: nothing to move anywhere. CPUs 2 and 3 are not the
        // first of their core, so should_we_balance leaves the MC level to CPUs 0 and 1 —
        // `out_balanced` for them too: every CPU's MC interval grows to max_interval.
        let t = topo("1s:2c:2t");
        let mut h = H::<P>::new(spec, 1000, 4);
        h.p.set_topology(&t);
        for c in 0..4 {
            h.spawn_on(c, c, knobs(""));
            h.pick(c);
        }
        h.run_ticks(500, false);
        let d = h.p.doms();
        assert_eq!(d.levels[1].kind, LevelKind::Mc);
        let max = d.levels[1].max_interval_ms;
        for c in 0..4 {
            assert_eq!(level_state(d, c, 1), (max, 0), "{spec}: CPU {c}");
        }
    }

    #[test]
    fn balanced_and_undesignated_cpus_back_off_their_intervals() {
        balanced_intervals_grow::<Cfs>("cfs");
        balanced_intervals_grow::<Eevdf>("eevdf");
    }

    fn push_resets_failures<P: WithDomains>(spec: &str) {
        // Two hogs on core 0's siblings (CPUs 0 and 2): core 1 fails to pull until the stopper
        // pushes one; then the pulling CPU's MC failure count starts again from 0.
        let t = topo("1s:2c:2t");
        let mut h = H::<P>::new(spec, 1000, 4);
        h.p.set_topology(&t);
        for (id, c) in [0, 2].into_iter().enumerate() {
            h.spawn_on(id, c, knobs(""));
            h.pick(c);
        }
        let mut failed_before = 0;
        for _ in 0..300 {
            let puller = [1, 3].into_iter().find(|&c| h.p.nr_running(c) > 0);
            if let Some(puller) = puller {
                assert!(
                    failed_before >= 3,
                    "{spec}: pushed after {failed_before} failures"
                );
                assert_eq!(level_state(h.p.doms(), puller, 1).1, 0, "{spec}");
                return;
            }
            failed_before = [1, 3]
                .into_iter()
                .map(|c| level_state(h.p.doms(), c, 1).1)
                .max()
                .unwrap();
            h.run_ticks(1, false);
        }
        panic!("{spec}: no push in 300 ms");
    }

    #[test]
    fn an_active_balance_push_resets_the_failure_count() {
        push_resets_failures::<Cfs>("cfs");
        push_resets_failures::<Eevdf>("eevdf");
    }

    fn pinned_tasks_back_off<P: WithDomains>(spec: &str) {
        // 1s:2c:1t, two hogs pinned to CPU 0: idle CPU 1 finds them all pinned away
        // (LBF_ALL_PINNED, no other CPU to try), so its MC interval doubles past max_interval
        // up to MAX_PINNED_INTERVAL instead of restarting at min_interval, and nothing moves.
        let t = topo("1s:2c:1t");
        let mut h = H::<P>::new(spec, 1000, 2);
        h.p.set_topology(&t);
        h.spawn_on(0, 0, knobs("cpus=0"));
        h.spawn_on(1, 0, knobs("cpus=0"));
        h.pick(0);
        h.run_ticks(3000, true);
        assert_eq!(h.p.nr_running(1), 0, "{spec}");
        let d = h.p.doms();
        assert_eq!(d.levels.len(), 1, "{spec}: one MC level");
        assert_eq!(level_state(d, 1, 0), (MAX_PINNED_INTERVAL_MS, 0), "{spec}");
    }

    #[test]
    fn a_level_whose_tasks_are_all_pinned_away_backs_off_to_the_pinned_maximum() {
        pinned_tasks_back_off::<Cfs>("cfs");
        pinned_tasks_back_off::<Eevdf>("eevdf");
    }
}
