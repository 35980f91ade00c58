//! The Linux 2.6 (2.6.9 – 2.6.22) generic SMP machinery that every per-CPU-runqueue policy of
//! that era shares, whatever its priority arrays look like: where a waking task goes
//! (`try_to_wake_up`'s SD_WAKE_AFFINE / SD_WAKE_BALANCE tests, then an idle CPU), when a CPU
//! balances (idle every 1 ms, busy every 200 ms, newly idle always), how much it pulls
//! (`find_busiest_group`'s arithmetic with `imbalance_pct`) and which queued tasks may move
//! (`can_migrate_task`: allowed, not cache-hot unless balancing keeps failing).
//!
//! The O(1) scheduler ([`super::o1`]) and Con Kolivas's staircase ([`super::staircase`]) both
//! use it: staircase v13 patched only the queue walk in `move_tasks` (one array instead of two)
//! and when a busy CPU calls `rebalance_tick`, so each policy supplies its runqueue lengths and
//! its own `move_tasks` through [`Domain`] and decides itself when a periodic balance is due.
//!
//! Simplifications (shared by its users): one flat domain, one CPU per group (on a machine
//! with `--topology` they use 2.6's domain hierarchy of [`super::domains26`] instead); load = runnable
//! count (not raw_weighted_load), in units of [`LOAD_SCALE`] per task; no active balancing, no
//! SMT or power-savings domains; the adaptive 1–4 ms / 64–256 ms intervals are fixed at 1 ms and
//! 200 ms.

use super::{CpuId, CpuMask, MachineView, Move};
use std::cmp::Reverse;

/// SD_CPU_INIT.imbalance_pct.
pub(super) const IMBALANCE_PCT: usize = 125;
/// SD_CPU_INIT.cache_hot_time (2.5 ms before 2.6.16 calibrated it at boot).
pub(super) const CACHE_HOT_NS: u64 = 2_500_000;
/// SD_CPU_INIT.cache_nice_tries.
pub(super) const CACHE_NICE_TRIES: u32 = 1;
/// Periodic balancing interval of an idle CPU.
pub(super) const IDLE_BALANCE_NS: u64 = 1_000_000;
/// Periodic balancing interval of a busy CPU.
pub(super) const BUSY_BALANCE_NS: u64 = 200_000_000;
/// SCHED_LOAD_SCALE: the load of one task in find_busiest_group's arithmetic.
pub(super) const LOAD_SCALE: usize = 128;

/// A CPU's balancing bookkeeping (its sched_domain's `last_balance`, `nr_balance_failed`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BalanceState {
    /// When this CPU last ran a periodic balance, ns.
    pub last_balance: u64,
    /// Balancing attempts in a row that found an imbalance but moved nothing.
    pub nr_balance_failed: u32,
}

impl BalanceState {
    /// `can_migrate_task`'s escape hatch: cache-hot tasks may move once balancing has failed more
    /// than `cache_nice_tries` times.
    pub fn hot_ok(&self) -> bool {
        self.nr_balance_failed > CACHE_NICE_TRIES
    }

    /// rebalance_tick's interval test for the stock kernel: true (and the clock restarted) when
    /// an idle CPU's 1 ms or a busy CPU's 200 ms have passed.
    pub fn periodic_due(&mut self, now: u64, idle: bool) -> bool {
        let interval = if idle {
            IDLE_BALANCE_NS
        } else {
            BUSY_BALANCE_NS
        };
        if now.saturating_sub(self.last_balance) < interval {
            return false;
        }
        self.last_balance = now;
        true
    }
}

/// What the generic balancer needs from a policy's runqueues.
pub(super) trait Domain {
    /// Runnable tasks (queued + current) on `cpu`'s runqueue, as the policy counts them.
    fn nr_running(&self, cpu: CpuId) -> usize;
    /// `cpu`'s balancing bookkeeping.
    fn balance_state(&mut self, cpu: CpuId) -> &mut BalanceState;
    /// `move_tasks`: pull up to `max` queued tasks from `from` to `to` in the policy's order,
    /// skipping those [`can_migrate_task`] refuses (`hot_ok` lets cache-hot ones go), and
    /// append them to `moved`.
    fn move_tasks(
        &mut self,
        now: u64,
        from: CpuId,
        to: CpuId,
        max: usize,
        hot_ok: bool,
        moved: &mut Vec<Move>,
    );
}

/// `can_migrate_task` for a queued (never the running) task: `to` must be allowed, and the task
/// cold (last ran at least `cache_hot_time` ago) unless `hot_ok`.
pub(super) fn can_migrate_task(
    allowed: CpuMask,
    last_ran: Option<u64>,
    now: u64,
    to: CpuId,
    hot_ok: bool,
) -> bool {
    let hot = last_ran.is_some_and(|r| now.saturating_sub(r) < CACHE_HOT_NS);
    allowed.contains(to) && (!hot || hot_ok)
}

/// try_to_wake_up's choice of runqueue for a task last on `prev`, woken from `waker` (`None`:
/// a timer or the run's start), allowed on `allowed`, among `ncpus` CPUs whose runnable counts
/// `nr` gives. SD_WAKE_AFFINE / SD_WAKE_BALANCE move it to the waker's CPU when
/// 100·(waker load + 1) ≤ 112·prev load or 112·waker load ≤ 100·prev load; then, if the chosen
/// CPU is busy and an allowed CPU (the waker's first) is idle, that CPU (standing in for
/// SD_WAKE_IDLE and the 1 ms idle pull).
pub(super) fn select_task_rq(
    nr: impl Fn(CpuId) -> usize,
    ncpus: usize,
    allowed: CpuMask,
    prev: CpuId,
    waker: Option<CpuId>,
) -> CpuId {
    // Only the allowed CPUs below ncpus count (the bounded mask operations).
    let ok = |c: CpuId| c < ncpus && allowed.contains(c);
    let Some(lowest) = allowed.lowest_below(ncpus) else {
        return prev;
    };
    let mut cpu = if ok(prev) { prev } else { lowest };
    if let Some(w) = waker.filter(|&w| w != cpu && ok(w)) {
        let (load, this_load) = (nr(cpu), nr(w));
        let imbalance = 100 + (IMBALANCE_PCT - 100) / 2;
        let affine = 100 * (this_load + 1) <= imbalance * load;
        let wake_balance = imbalance * this_load <= 100 * load;
        if affine || wake_balance {
            cpu = w;
        }
    }
    if nr(cpu) > 0 {
        let idle = waker
            .into_iter()
            .chain(allowed.iter_below(ncpus))
            .find(|&c| ok(c) && nr(c) == 0);
        if let Some(c) = idle {
            cpu = c;
        }
    }
    cpu
}

/// `load_balance` / `load_balance_newidle` for `cpu` over the first `ncpus` CPUs: find the
/// busiest runqueues (find_busiest_group with one CPU per group, loads in [`LOAD_SCALE`] units),
/// pull the imbalance from the first that yields tasks, and count failures for the cache-hot
/// escape. The caller has already decided that a balance is due (see
/// [`BalanceState::periodic_due`]). Allocation-free on up to 64 CPUs unless tasks move.
pub(super) fn load_balance<D: Domain>(
    d: &mut D,
    m: &MachineView,
    cpu: CpuId,
    ncpus: usize,
) -> Vec<Move> {
    let n = ncpus;
    // Each CPU's load and the busier CPUs: on the stack for the machines of the seeds, on the
    // heap past 64 CPUs.
    let (mut stack, mut heap) = (([0usize; 64], [0 as CpuId; 64]), (Vec::new(), Vec::new()));
    let (loads, busiest): (&mut [usize], &mut [CpuId]) = if n <= 64 {
        (&mut stack.0[..n], &mut stack.1[..n])
    } else {
        heap.0.resize(n, 0);
        heap.1.resize(n, 0);
        (&mut heap.0, &mut heap.1)
    };
    for (c, l) in loads.iter_mut().enumerate() {
        *l = d.nr_running(c);
    }
    let this_nr = loads[cpu];
    let this = this_nr * LOAD_SCALE;
    let avg = loads.iter().sum::<usize>() * LOAD_SCALE / n.max(1);
    let mut nb = 0;
    for (c, &load) in loads.iter().enumerate() {
        if c != cpu && load > 1 && load > this_nr {
            busiest[nb] = c;
            nb += 1;
        }
    }
    busiest[..nb].sort_unstable_by_key(|&c| (Reverse(loads[c]), c));
    let mut tried = false;
    let mut moved = Vec::new();
    for &from in &busiest[..nb] {
        let max = loads[from] * LOAD_SCALE;
        if this >= avg || 100 * max <= IMBALANCE_PCT * this {
            break;
        }
        let mut imbalance = if max < avg {
            0
        } else {
            (max - avg).min(max - LOAD_SCALE).min(avg - this)
        };
        if imbalance < LOAD_SCALE {
            if max - this < 2 * LOAD_SCALE {
                continue;
            }
            imbalance = LOAD_SCALE;
        }
        tried = true;
        let want = (imbalance / LOAD_SCALE).min(loads[from] - 1);
        let hot_ok = d.balance_state(cpu).hot_ok();
        d.move_tasks(m.now, from, cpu, want, hot_ok, &mut moved);
        if !moved.is_empty() {
            d.balance_state(cpu).nr_balance_failed = 0;
            return moved;
        }
    }
    if tried {
        d.balance_state(cpu).nr_balance_failed += 1;
    }
    moved
}
