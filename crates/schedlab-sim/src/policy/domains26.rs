//! Linux 2.6's scheduling-domain hierarchy for `o1` and `staircase` on a machine with a topology
//! (`--topology`): one `struct sched_domain` per CPU and level, `rebalance_tick` walking them
//! bottom-up, `load_balance` per level over the level's groups, newly-idle balancing
//! (`idle_balance`), and `try_to_wake_up`'s per-domain SD_WAKE_AFFINE / SD_WAKE_BALANCE tests
//! followed by `wake_idle`. A flat machine never builds one: those policies keep the one flat
//! domain of `balance` module, so their results without `--topology` are unchanged.
//!
//! # Sources followed
//!
//! Linux 2.6.9–2.6.11, as kept in the BitKeeper-era history mirror (dmgerman/history-token;
//! SD_LOAD_BALANCE from 2.6.10 on; later 2.6 releases retuned some values, not followed here):
//! - include/linux/sched.h (topology.h from 2.6.10): SD_SIBLING_INIT for the SMT level (intervals 1–2 ms,
//!   busy_factor 8, imbalance_pct 110, cache_hot_time 0, cache_nice_tries 0; SD_LOAD_BALANCE,
//!   SD_BALANCE_NEWIDLE, SD_BALANCE_EXEC, SD_WAKE_AFFINE, SD_WAKE_IDLE, SD_SHARE_CPUPOWER) and
//!   SD_CPU_INIT for the physical package, which is the LLC here (1–4 ms, 64, 125, 2.5 ms, 1;
//!   SD_LOAD_BALANCE, SD_BALANCE_NEWIDLE, SD_BALANCE_EXEC, SD_WAKE_AFFINE, SD_WAKE_BALANCE).
//! - include/asm-x86_64/topology.h: SD_NODE_INIT for the node level, each socket a node (8–32
//!   ms, 32, 125, 10 ms, 1; SD_LOAD_BALANCE, SD_BALANCE_NEWIDLE, SD_BALANCE_EXEC, SD_WAKE_IDLE,
//!   SD_WAKE_BALANCE — no SD_WAKE_AFFINE across nodes).
//! - kernel/sched.c: `rebalance_tick` (each level when `balance_interval`, × `busy_factor` on a
//!   busy CPU, has passed; a level that pulled makes the CPU busy for the levels above),
//!   `load_balance` / `load_balance_newidle` with `find_busiest_group` (group loads per unit of
//!   cpu_power, the domain average, the `imbalance_pct` gate, `max_pull`, the one-task rule when
//!   the busiest is two tasks ahead) and `find_busiest_queue`, `nr_balance_failed` against
//!   `cache_nice_tries`, `balance_interval` doubling up to `max_interval` when balanced and back
//!   to `min_interval` after an imbalance; `idle_balance` (levels with SD_BALANCE_NEWIDLE,
//!   bottom-up, until one pulls); `try_to_wake_up` (stay on an idle previous CPU when the
//!   waker's is busy; else the first domain of the waking CPU that spans the previous CPU and
//!   has SD_WAKE_AFFINE with the task cache-cold, or SD_WAKE_BALANCE with
//!   imbalance·this_load ≤ 100·load for imbalance = imbalance_pct + (imbalance_pct − 100)/2,
//!   takes the task to the waking CPU) and `wake_idle` (an idle allowed CPU of the chosen CPU's
//!   domains, bottom-up, while they have SD_WAKE_IDLE).
//!
//! The spans and groups are those [`super::domains::Domains`] builds (SMT → package → node,
//! levels that span no more than their child dropped as 2.6.11's `sd_degenerate` does).
//!
//! # Left out
//!
//! - SD_ALLNODES_INIT: 2.6 built that level above the nodes only with more than
//!   SD_NODES_PER_DOMAIN (16) nodes, each node domain then spanning the nearest 16; with every
//!   node one hop away (no distance table here) it would span what the node level spans.
//! - cpu_power: every CPU counts SCHED_LOAD_SCALE (no `per_cpu_gain` discount for SMT siblings);
//!   load = runnable count, not source_load/target_load's decayed cpu_load.
//! - The `pwr_now` / `pwr_move` throughput estimate for small imbalances (only the two-task rule).
//! - Per-level cache_hot_time, except SMT's 0: a queued task is hot for 2.5 ms at every other
//!   level (the 10 ms of SD_NODE_INIT is not used); `task_hot` at wakeup uses each level's.
//! - Active balancing (`active_load_balance`), SD_BALANCE_EXEC / fork placement (a new task goes
//!   where the policy's flat `task_fork` puts it), WF_SYNC wakeups, power-savings levels. A
//!   `spawn` step is a fork without an exec, so `sched_exec`'s balancing (2.6.9–2.6.11: the
//!   idlest CPU of the highest SD_BALANCE_EXEC domain, when the exec'ing CPU runs more than the
//!   task) has no event to act on; at fork these releases kept the child on its parent's CPU
//!   (`wake_up_new_task`), and 2.6.12's `sched_balance_self` balanced it per SD_BALANCE_FORK
//!   level, a flag the initializers set on different levels from release to release (2.6.20's
//!   generic SMT, MC and package initializers have none; x86-64's node level has it), so the
//!   flat rule each policy cites stands in for all of them.
//! - Intervals are rounded to whole ticks (`msecs_to_jiffies`, at least one tick), and a level's
//!   `last_balance` restarts at the balance's tick rather than advancing by one interval.

use super::balance::{Domain, LOAD_SCALE};
use super::domains::{Domains, Level, LevelKind};
use super::{CpuId, CpuMask, MachineView, Move};
use crate::topology::Topology;

/// Balance this domain at all.
pub const SD_LOAD_BALANCE: u32 = 1;
/// Balance when about to become idle.
pub const SD_BALANCE_NEWIDLE: u32 = 2;
/// Balance on exec (not modelled: listed for the record of the initializers).
pub const SD_BALANCE_EXEC: u32 = 4;
/// Wake to an idle CPU of the domain.
pub const SD_WAKE_IDLE: u32 = 8;
/// Wake a cache-cold task to the waking CPU.
pub const SD_WAKE_AFFINE: u32 = 16;
/// Wake to the waking CPU when the previous one is busier.
pub const SD_WAKE_BALANCE: u32 = 32;
/// The domain's CPUs share one core's power (SMT siblings).
pub const SD_SHARE_CPUPOWER: u32 = 64;

/// A `struct sched_domain` initializer: the tunables one level starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdInit {
    /// The initializer's name in the kernel headers.
    pub name: &'static str,
    /// `min_interval`, ms.
    pub min_interval_ms: u64,
    /// `max_interval`, ms.
    pub max_interval_ms: u64,
    /// `busy_factor`: how much longer a busy CPU waits between balances.
    pub busy_factor: u64,
    /// `imbalance_pct`.
    pub imbalance_pct: usize,
    /// `cache_hot_time`, ns.
    pub cache_hot_ns: u64,
    /// `cache_nice_tries`.
    pub cache_nice_tries: u32,
    /// `flags`: the SD_* bits above.
    pub flags: u32,
}

/// SD_SIBLING_INIT (include/linux/topology.h).
pub const SD_SIBLING_INIT: SdInit = SdInit {
    name: "SD_SIBLING_INIT",
    min_interval_ms: 1,
    max_interval_ms: 2,
    busy_factor: 8,
    imbalance_pct: 110,
    cache_hot_ns: 0,
    cache_nice_tries: 0,
    flags: SD_LOAD_BALANCE
        | SD_BALANCE_NEWIDLE
        | SD_BALANCE_EXEC
        | SD_WAKE_AFFINE
        | SD_WAKE_IDLE
        | SD_SHARE_CPUPOWER,
};

/// SD_CPU_INIT (include/linux/topology.h).
pub const SD_CPU_INIT: SdInit = SdInit {
    name: "SD_CPU_INIT",
    min_interval_ms: 1,
    max_interval_ms: 4,
    busy_factor: 64,
    imbalance_pct: 125,
    cache_hot_ns: 2_500_000,
    cache_nice_tries: 1,
    flags: SD_LOAD_BALANCE
        | SD_BALANCE_NEWIDLE
        | SD_BALANCE_EXEC
        | SD_WAKE_AFFINE
        | SD_WAKE_BALANCE,
};

/// SD_NODE_INIT (include/asm-x86_64/topology.h).
pub const SD_NODE_INIT: SdInit = SdInit {
    name: "SD_NODE_INIT",
    min_interval_ms: 8,
    max_interval_ms: 32,
    busy_factor: 32,
    imbalance_pct: 125,
    cache_hot_ns: 10_000_000,
    cache_nice_tries: 1,
    flags: SD_LOAD_BALANCE | SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_WAKE_IDLE | SD_WAKE_BALANCE,
};

/// The initializer 2.6 gives a level.
pub fn sd_init(kind: LevelKind) -> SdInit {
    match kind {
        LevelKind::Smt => SD_SIBLING_INIT,
        LevelKind::Mc => SD_CPU_INIT,
        LevelKind::Numa => SD_NODE_INIT,
    }
}

/// A CPU's variable fields of one `struct sched_domain`.
#[derive(Clone, Copy, Debug)]
struct SdState {
    last_balance: u64,
    /// `balance_interval`, ms.
    balance_interval_ms: u64,
    nr_balance_failed: u32,
}

/// `enum idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

/// Every CPU's 2.6 scheduling domains and their balancing bookkeeping.
#[derive(Clone, Debug)]
pub struct Domains26 {
    /// The levels present, lowest first (spans and groups).
    pub levels: Vec<Level>,
    /// Each level's initializer.
    pub inits: Vec<SdInit>,
    /// Per CPU × level.
    state: Vec<SdState>,
}

impl Domains26 {
    /// The domains of a machine with `topology`.
    pub fn new(topology: &Topology) -> Domains26 {
        let levels = Domains::new(topology).levels;
        let inits: Vec<SdInit> = levels.iter().map(|l| sd_init(l.kind)).collect();
        let state = (0..topology.cpus())
            .flat_map(|_| inits.iter())
            .map(|_| SdState {
                last_balance: 0,
                balance_interval_ms: 1,
                nr_balance_failed: 0,
            })
            .collect();
        Domains26 {
            levels,
            inits,
            state,
        }
    }

    fn st(&mut self, cpu: CpuId, level: usize) -> &mut SdState {
        let nl = self.levels.len();
        &mut self.state[cpu * nl + level]
    }

    /// `rebalance_tick` on `cpu`: each level whose interval has passed (every level when
    /// `force`: staircase v13's busy CPU, which calls it without the interval) runs
    /// `load_balance`.
    pub(super) fn rebalance_tick<D: Domain>(
        &mut self,
        d: &mut D,
        m: &MachineView,
        cpu: CpuId,
        force: bool,
    ) -> Vec<Move> {
        let mut idle = d.nr_running(cpu) == 0;
        let mut moves = Vec::new();
        let tick = m.tick_ns().max(1);
        for level in 0..self.levels.len() {
            let init = self.inits[level];
            if init.flags & SD_LOAD_BALANCE == 0 {
                continue;
            }
            let st = *self.st(cpu, level);
            let mut interval_ms = st.balance_interval_ms;
            if !idle {
                interval_ms *= init.busy_factor;
            }
            // msecs_to_jiffies, at least one jiffy.
            let interval = (interval_ms * 1_000_000).div_ceil(tick).max(1) * tick;
            if !force && m.now.saturating_sub(st.last_balance) < interval {
                continue;
            }
            self.st(cpu, level).last_balance = m.now;
            let kind = if idle {
                IdleType::Idle
            } else {
                IdleType::NotIdle
            };
            if self.load_balance(d, m, cpu, level, kind, &mut moves) {
                idle = false;
            }
        }
        moves
    }

    /// `idle_balance`: a newly idle `cpu` balances its SD_BALANCE_NEWIDLE levels bottom-up
    /// until one pulls.
    pub(super) fn idle_balance<D: Domain>(
        &mut self,
        d: &mut D,
        m: &MachineView,
        cpu: CpuId,
    ) -> Vec<Move> {
        let mut moves = Vec::new();
        for level in 0..self.levels.len() {
            if self.inits[level].flags & SD_BALANCE_NEWIDLE != 0
                && self.load_balance(d, m, cpu, level, IdleType::NewlyIdle, &mut moves)
            {
                break;
            }
        }
        moves
    }

    /// `load_balance` / `load_balance_newidle` of `cpu` at `level`, appending the moves made;
    /// true if tasks moved.
    fn load_balance<D: Domain>(
        &mut self,
        d: &mut D,
        m: &MachineView,
        cpu: CpuId,
        level: usize,
        idle: IdleType,
        moves: &mut Vec<Move>,
    ) -> bool {
        let init = self.inits[level];
        let found = find_busiest_group(d, m, &self.levels[level], cpu, init.imbalance_pct);
        let busiest = found.and_then(|(group, imbalance)| {
            // find_busiest_queue: the busiest runqueue of the group, if it has a task to spare.
            group
                .iter()
                .filter(|&c| c < m.ncpus && c != cpu)
                .max_by_key(|&c| (d.nr_running(c), std::cmp::Reverse(c)))
                .filter(|&c| d.nr_running(c) > 1)
                .map(|c| (c, imbalance))
        });
        let Some((src, imbalance)) = busiest else {
            // out_balanced
            if idle != IdleType::NewlyIdle {
                let max = init.max_interval_ms;
                let st = self.st(cpu, level);
                st.nr_balance_failed = 0;
                if st.balance_interval_ms < max {
                    st.balance_interval_ms *= 2;
                }
            }
            return false;
        };
        let want = (imbalance / LOAD_SCALE).min(d.nr_running(src) - 1);
        let st = *self.st(cpu, level);
        let hot_ok = init.cache_hot_ns == 0 || st.nr_balance_failed > init.cache_nice_tries;
        let mut moved = Vec::new();
        d.move_tasks(m.now, src, cpu, want, hot_ok, &mut moved);
        let any = !moved.is_empty();
        moves.append(&mut moved);
        if idle != IdleType::NewlyIdle {
            let st = self.st(cpu, level);
            if any {
                st.nr_balance_failed = 0;
            } else {
                st.nr_balance_failed += 1;
            }
            // We were unbalanced: reset the balancing interval.
            st.balance_interval_ms = init.min_interval_ms;
        }
        any
    }

    /// `try_to_wake_up`'s runqueue for a task last on `prev` (last run at `last_ran`), woken
    /// from `waker` (`None`: a timer), allowed on `allowed`.
    pub(super) fn select_task_rq<D: Domain>(
        &self,
        d: &D,
        m: &MachineView,
        allowed: CpuMask,
        last_ran: Option<u64>,
        prev: CpuId,
        waker: Option<CpuId>,
    ) -> CpuId {
        let allowed = allowed.below(m.ncpus);
        let Some(lowest) = allowed.lowest() else {
            return prev;
        };
        let cpu = if allowed.contains(prev) { prev } else { lowest };
        let mut new_cpu = cpu;
        if let Some(this) = waker.filter(|&w| w != cpu && allowed.contains(w)) {
            let load = d.nr_running(cpu) * LOAD_SCALE;
            let this_load = d.nr_running(this) * LOAD_SCALE;
            // An idle previous CPU and a busy waking one: stay.
            if !(load < LOAD_SCALE / 2 && this_load > LOAD_SCALE / 2) {
                for (level, init) in self.levels.iter().zip(&self.inits) {
                    let spans_prev = level.span(this).contains(cpu);
                    let imbalance = init.imbalance_pct + (init.imbalance_pct - 100) / 2;
                    let hot = last_ran.is_some_and(|r| m.now.saturating_sub(r) < init.cache_hot_ns);
                    let chosen = if init.flags & SD_WAKE_AFFINE != 0 && !hot {
                        spans_prev
                    } else {
                        init.flags & SD_WAKE_BALANCE != 0
                            && imbalance * this_load <= 100 * load
                            && spans_prev
                    };
                    if chosen {
                        new_cpu = this;
                        break;
                    }
                }
            }
        }
        self.wake_idle(d, new_cpu, allowed)
    }

    /// `wake_idle`: `cpu` if idle, else an idle allowed CPU of its domains bottom-up while they
    /// have SD_WAKE_IDLE.
    fn wake_idle<D: Domain>(&self, d: &D, cpu: CpuId, allowed: CpuMask) -> CpuId {
        if d.nr_running(cpu) == 0 {
            return cpu;
        }
        for (level, init) in self.levels.iter().zip(&self.inits) {
            if init.flags & SD_WAKE_IDLE == 0 {
                break;
            }
            let idle = level
                .span(cpu)
                .iter()
                .find(|&c| allowed.contains(c) && d.nr_running(c) == 0);
            if let Some(c) = idle {
                return c;
            }
        }
        cpu
    }
}

/// `find_busiest_group` over the groups of `cpu`'s domain at `level`: the busiest other group
/// and the imbalance to pull (in [`LOAD_SCALE`] units per task), or `None` when balanced.
fn find_busiest_group<D: Domain>(
    d: &D,
    m: &MachineView,
    level: &Level,
    cpu: CpuId,
    imbalance_pct: usize,
) -> Option<(CpuMask, usize)> {
    let (mut this_load, mut this_pwr) = (0, LOAD_SCALE);
    let (mut max_load, mut busiest) = (0, None);
    let (mut total_load, mut total_pwr) = (0, 0);
    for g in level.groups_of(cpu) {
        let (mut load, mut ncpus) = (0, 0);
        for c in g.iter().filter(|&c| c < m.ncpus) {
            load += d.nr_running(c) * LOAD_SCALE;
            ncpus += 1;
        }
        if ncpus == 0 {
            continue;
        }
        let pwr = ncpus * LOAD_SCALE;
        total_load += load;
        total_pwr += pwr;
        // Load per unit of cpu_power.
        let avg = load * LOAD_SCALE / pwr;
        if g.contains(cpu) {
            (this_load, this_pwr) = (avg, pwr);
        } else if avg > max_load {
            (max_load, busiest) = (avg, Some((*g, pwr)));
        }
    }
    let (group, busiest_pwr) = busiest?;
    let avg_load = total_load * LOAD_SCALE / total_pwr.max(1);
    if this_load >= avg_load || 100 * max_load <= imbalance_pct * this_load {
        return None;
    }
    let max_pull = max_load
        .saturating_sub(avg_load)
        .min(max_load.saturating_sub(LOAD_SCALE));
    let imbalance = (max_pull * busiest_pwr).min((avg_load - this_load) * this_pwr) / LOAD_SCALE;
    if imbalance >= LOAD_SCALE {
        Some((group, imbalance))
    } else if max_load - this_load >= 2 * LOAD_SCALE {
        Some((group, LOAD_SCALE))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::o1::O1;
    use crate::policy::staircase::Staircase;
    use crate::policy::testing::{knobs, Harnessed, H, MS};
    use crate::policy::Policy;

    fn topo(s: &str) -> Topology {
        s.parse().unwrap()
    }

    #[test]
    fn levels_take_the_26_initializers() {
        let d = Domains26::new(&topo("2s:4c:2t"));
        let names: Vec<_> = d.inits.iter().map(|i| i.name).collect();
        assert_eq!(names, ["SD_SIBLING_INIT", "SD_CPU_INIT", "SD_NODE_INIT"]);
        let tunables: Vec<_> = d
            .inits
            .iter()
            .map(|i| {
                (
                    i.min_interval_ms,
                    i.max_interval_ms,
                    i.busy_factor,
                    i.imbalance_pct,
                    i.cache_nice_tries,
                )
            })
            .collect();
        assert_eq!(
            tunables,
            [(1, 2, 8, 110, 0), (1, 4, 64, 125, 1), (8, 32, 32, 125, 1)]
        );
        let has = |l: usize, f: u32| d.inits[l].flags & f != 0;
        assert!(has(0, SD_SHARE_CPUPOWER) && has(0, SD_WAKE_IDLE) && has(0, SD_WAKE_AFFINE));
        assert!(has(1, SD_WAKE_AFFINE) && has(1, SD_WAKE_BALANCE) && !has(1, SD_WAKE_IDLE));
        assert!(!has(2, SD_WAKE_AFFINE) && has(2, SD_WAKE_BALANCE) && has(2, SD_WAKE_IDLE));
        assert!((0..3).all(|l| has(l, SD_LOAD_BALANCE) && has(l, SD_BALANCE_NEWIDLE)));
        // CPU 9 = core 1's second thread on socket 0: groups are threads, then cores, then
        // sockets.
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
        assert_eq!(groups(2).len(), 2);
        assert_eq!(groups(2)[1], [4, 5, 6, 7, 12, 13, 14, 15]);
        // No SMT: the package level comes first.
        let d = Domains26::new(&topo("2s:4c:1t"));
        assert_eq!(d.inits[0].name, "SD_CPU_INIT");
    }

    /// [`H::run_hogs_from_cpu0`] at HZ 1000 (idle CPUs balance newly idle, then periodically):
    /// each CPU's runnable count after `ms`.
    fn run_hogs<P: Harnessed + Policy + Domain>(
        spec: &str,
        t: &str,
        hogs: usize,
        ms: u64,
    ) -> Vec<usize> {
        let t = topo(t);
        let h = H::<P>::run_hogs_from_cpu0(spec, 1000, &t, hogs, ms, true);
        let per_cpu = (0..t.cpus()).map(|c| h.p.nr_running(c)).collect();
        println!("{spec} on {t}: {per_cpu:?}");
        per_cpu
    }

    #[test]
    fn hogs_started_on_one_cpu_spread_across_the_levels_on_o1() {
        let per_cpu = run_hogs::<O1>("o1", "2s:4c:2t", 32, 3000);
        assert_eq!(per_cpu.iter().sum::<usize>(), 32, "{per_cpu:?}");
        assert!(
            per_cpu.iter().all(|&k| (1..=3).contains(&k)),
            "32 hogs on 16 CPUs should be 2 ± 1 each: {per_cpu:?}"
        );
    }

    /// Staircase v13 calls rebalance_tick on a busy CPU only while it has others runnable, and
    /// 2.6 balancing only pulls: once every CPU runs a hog, a CPU with one task never balances
    /// again, and a core whose group share an SMT sibling pulled alone (find_busiest_group's
    /// imbalance is the whole group's) stays uneven. Every CPU still gets work, and no CPU keeps
    /// more than twice the average.
    #[test]
    fn hogs_started_on_one_cpu_reach_every_cpu_on_staircase() {
        let per_cpu = run_hogs::<Staircase>("staircase", "2s:4c:2t", 32, 3000);
        assert_eq!(per_cpu.iter().sum::<usize>(), 32, "{per_cpu:?}");
        assert!(
            per_cpu.iter().all(|&k| (1..=4).contains(&k)),
            "32 hogs on 16 CPUs should be 1-4 each: {per_cpu:?}"
        );
    }

    /// On 2s:4c:1t (socket 0 = CPUs 0-3): task 0 last ran on CPU 1 and sleeps; CPU 1, CPU 2
    /// and CPU 5 each run a task. Woken after `slept` by a task on `waker`: where it goes.
    fn wake_from<P: Harnessed + Policy>(spec: &str, waker: CpuId, slept: u64) -> CpuId {
        let t = topo("2s:4c:1t");
        let mut h = H::<P>::new(spec, 1000, t.cpus());
        h.p.set_topology(&t);
        h.spawn_on(0, 1, knobs(""));
        assert_eq!(h.pick(1), Some(0));
        h.now += MS;
        h.sleep(1);
        for (i, c) in [1, 2, 5].into_iter().enumerate() {
            h.spawn_on(100 + i, c, knobs(""));
            h.pick(c);
        }
        h.now += slept;
        h.wake_to(0, 1, Some(waker), slept)
    }

    fn wake_affine_within_the_package<P: Harnessed + Policy>(spec: &str) {
        // Cache-cold (past SD_CPU_INIT's 2.5 ms), waker in the same package: SD_WAKE_AFFINE
        // takes it to the waker's CPU even though CPUs 0 and 3 are idle (no SD_WAKE_IDLE there).
        assert_eq!(wake_from::<P>(spec, 2, 10 * MS), 2, "{spec}");
        // Still cache-hot: SD_WAKE_BALANCE alone, and the loads are equal: the previous CPU.
        assert_eq!(wake_from::<P>(spec, 2, MS / 2), 1, "{spec}");
        // Waker on the other node: SD_NODE_INIT has no SD_WAKE_AFFINE and the loads are equal,
        // so the task stays on its previous CPU.
        assert_eq!(wake_from::<P>(spec, 5, 10 * MS), 1, "{spec}");
    }

    #[test]
    fn wake_affine_takes_a_cold_task_to_a_waker_in_its_package_not_a_remote_one() {
        wake_affine_within_the_package::<O1>("o1");
        wake_affine_within_the_package::<Staircase>("staircase");
    }

    #[test]
    fn wake_idle_finds_an_idle_smt_sibling() {
        // 1s:2c:2t: CPU 0's sibling is CPU 2. The previous CPU 0 is busy: SD_SIBLING_INIT's
        // SD_WAKE_IDLE finds its idle sibling, not idle CPU 1 or 3 of the other core.
        let t = topo("1s:2c:2t");
        let mut h = H::<O1>::new("o1", 1000, t.cpus());
        h.p.set_topology(&t);
        h.spawn_on(0, 0, knobs(""));
        h.pick(0);
        h.now += MS;
        h.sleep(0);
        h.spawn_on(100, 0, knobs(""));
        h.pick(0);
        assert_eq!(h.wake_to(0, 0, None, 10 * MS), 2);
    }
}
