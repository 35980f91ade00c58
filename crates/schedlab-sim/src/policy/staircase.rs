//! Con Kolivas's staircase scheduler, v13 for Linux 2.6.14 (the 2.6.14-ck4 scheduler), followed
//! from the patch he posted to LKML: "\[PATCH\] Staircase cpu scheduler v13", 2005-11-10
//! (Message-Id 200511100040.37788.kernel@kolivas.org, sched-staircase13.patch against 2.6.14
//! kernel/sched.c); seed 004 compares it with 2.6.14's O(1) under interbench.
//!
//! The design, from that patch's kernel/sched.c:
//! - One priority array per CPU (140 FIFO lists and a bitmap); no expired array.
//! - `RR_INTERVAL` = 5·HZ/1001 + 1 jiffies (×20 with the `compute` sysctl);
//!   `rr_interval(p)` = RR_INTERVAL + max(0, −nice) for SCHED_OTHER, and
//!   `slice(p)` = rr · (1 + 39 − user_prio) (RT tasks: rr): how long a task runs before it has
//!   walked down every stair.
//! - `effective_prio` = 100 + user_prio − (interactive && !compute ? bonus : 0) plus
//!   used_slice / rr, at most 139: a task starts on its best stair and descends one stair per
//!   rr interval of CPU it uses (`time_slice_expired` from `scheduler_tick`); when the whole
//!   slice is used it loses a bonus point and starts again on its best stair.
//! - `recalc_task_prio` on every activation: totalrun += runtime (the CPU time of its last stint);
//!   a task that used a whole slice and slept less than one loses a bonus point; a task waking
//!   from an uninterruptible sleep (PF_NONSLEEP, which schedule() sets when it deactivates a
//!   TASK_UNINTERRUPTIBLE task: here a device wait, a disk request or a swap-in read) or, with
//!   `compute`, any task continues its old slice and gains nothing; a task that slept at least
//!   as long as it ran gains one bonus point while bonus < sleep / (totalrun + 1) (`inc_bonus`,
//!   bonus ≤ user_prio): its best stair follows its CPU share; otherwise it continues its old
//!   slice (`continue_slice`).
//! - Wakeup preemption (`preempt`): iff p->prio < curr->prio; in compute mode it is delayed until
//!   the current task has run `cache_delay` = 10·HZ/1001 + 1 ticks (the tick then reschedules).
//! - `sys_sched_yield`: a fresh slice, and SCHED_OTHER tasks drop to priority 139 until picked,
//!   when they are put back on their best stair (PF_YIELDED).
//! - SCHED_FIFO never expires; SCHED_RR round-robins every RR_INTERVAL.
//! - Balancing and wakeup placement are 2.6.14's generic ones (the `balance` module); v13's
//!   move_tasks walks its single array, best priority first; a busy CPU calls rebalance_tick
//!   only from ticks that expired an rr interval or found less than a jiffy of new CPU time
//!   (while others are runnable), and then without its interval; idle CPUs every 1 ms.
//!   With `--topology`, 2.6's domain hierarchy ([`super::domains26`]) replaces the flat
//!   domain: the same triggers, then every level of the walk (idle CPUs on each level's interval).
//!
//! Simplifications:
//! - Time is charged by the simulator's exact CPU time, not sched_clock deltas: a tick counts
//!   against slice and time_slice when at least one jiffy of CPU time has accumulated since the
//!   last one (the ns_debit rule); the partial jiffy is dropped when the task sleeps or is
//!   requeued, as dequeue_task does.
//! - No fork tree: a new task starts with bonus 0 and a full slice on the stair of its nice
//!   (wake_up_new_task), without the recalc_task_prio it would do on sleep and run times
//!   inherited from a parent; no parent is marked PF_NONSLEEP. The uninterruptible sleeps are
//!   the machine's device waits ([`DequeueKind::DeviceWait`]); every other sleep (timers,
//!   channels, locks, semaphores) is interruptible, and none is TASK_NONINTERACTIVE.
//! - The current task is not kept in its list: a preempted task returns to the head of its
//!   priority list (where it stayed in the kernel); an rr expiry that would pick the same task
//!   again does not ask for a reschedule (the kernel's schedule() would find prev == next).
//! - SCHED_BATCH (2.6.16), SCHED_IDLE (2.6.23), SCHED_DEADLINE and EEVDF slices are rejected; v13
//!   has no SCHED_ISO or SCHED_IDLEPRIO (later -ck patches). No SMT dependent-sleeper logic.

use super::balance::{self, BalanceState, Domain};
use super::domains26::Domains26;
use super::ds::prio_array::{PrioArray, MAX_PRIO};
use super::*;
use schedlab_workload::knobs::{Knobs, SchedPolicy};

/// Priorities 0..99 are real-time, 100..139 SCHED_OTHER (lower is better).
const MAX_RT_PRIO: usize = 100;

const NAME: &str = "staircase v13 scheduler (2.6.14-ck)";
const ACCEPTED: &str = "policy=other|fifo:1..99|rr:1..99, nice=-20..19, cpus=LIST";

/// The jiffy-based tunables at the machine's HZ and the two sysctls.
#[derive(Clone, Copy, Debug)]
struct Tun {
    hz: u64,
    tick_ns: u64,
    interactive: bool,
    compute: bool,
}

impl Tun {
    fn of(m: &MachineView, interactive: bool, compute: bool) -> Tun {
        let hz = u64::from(m.hz.max(1));
        Tun {
            hz,
            tick_ns: 1_000_000_000 / hz,
            interactive,
            compute,
        }
    }
    /// RR_INTERVAL() in jiffies: 5 ms (at least one jiffy), ×20 in compute mode.
    fn rr_base(self) -> u64 {
        (5 * self.hz / 1001 + 1) * if self.compute { 20 } else { 1 }
    }
    /// cache_delay in jiffies: how long compute mode delays a wakeup preemption (~10 ms).
    fn cache_delay(self) -> u64 {
        10 * self.hz / 1001 + 1
    }
    /// NS_TO_JIFFIES.
    fn jiffies(self, ns: u64) -> u64 {
        ns / self.tick_ns
    }
}

/// Where `put_prev_task` puts a task that `task_tick` or `yield_task` already requeued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Requeue {
    /// Tail of its (new) priority list.
    Tail,
}

/// Per-task scheduling state (the staircase fields of `struct task_struct`).
#[derive(Clone, Debug)]
struct Task {
    policy: SchedPolicy,
    /// TASK_USER_PRIO: nice + 20.
    user_prio: u64,
    nice: i32,
    prio: usize,
    /// Bonus stairs, 0..=user_prio.
    bonus: u64,
    /// Jiffies of the current slice() left.
    slice: u64,
    /// Jiffies left on the current stair.
    time_slice: u64,
    /// ns of CPU time not yet balanced by sleep.
    totalrun: u64,
    /// ns of CPU time in its last stint (schedule()'s prev->runtime).
    runtime: u64,
    /// ns of CPU time since it was last switched in.
    run_ns: u64,
    /// ns of CPU time not yet charged by a tick (ns_debit).
    debit: u64,
    /// When it was last activated or switched in or out (p->timestamp; task_hot uses it).
    timestamp: u64,
    allowed: CpuMask,
    requeue: Option<Requeue>,
    /// PF_YIELDED: requeued at 139 by sched_yield until picked.
    yielded: bool,
    /// PF_NONSLEEP: its last sleep was uninterruptible (a device wait), so it earns nothing.
    nonsleep: bool,
}

impl Task {
    fn is_rt(&self) -> bool {
        matches!(self.policy, SchedPolicy::Fifo(_) | SchedPolicy::Rr(_))
    }
    /// rr_interval(p) in jiffies.
    fn rr(&self, tun: Tun) -> u64 {
        let mut rr = tun.rr_base();
        if self.nice < 0 && !self.is_rt() {
            rr += (-self.nice) as u64;
        }
        rr
    }
    /// slice(p) in jiffies: the time from the best stair to the bottom one.
    fn full_slice(&self, tun: Tun) -> u64 {
        let rr = self.rr(tun);
        if self.is_rt() {
            rr
        } else {
            rr + (39 - self.user_prio) * rr
        }
    }
    /// effective_prio: the stair the task is on.
    fn effective_prio(&self, tun: Tun) -> usize {
        if self.is_rt() {
            return self.prio;
        }
        let used = self.full_slice(tun).saturating_sub(self.slice);
        let mut prio = MAX_RT_PRIO as u64 + self.user_prio;
        if tun.interactive && !tun.compute {
            prio -= self.bonus;
        }
        prio += used / self.rr(tun);
        prio.min(MAX_PRIO as u64 - 1) as usize
    }
    /// inc_bonus: one more stair while the sleep/run ratio allows it, at most user_prio.
    fn inc_bonus(&mut self, totalrun: u64, sleep: u64) {
        let best = sleep / (totalrun + 1);
        if self.bonus >= best {
            return;
        }
        self.bonus = (self.bonus + 1).min(self.user_prio);
    }
    fn dec_bonus(&mut self) {
        self.bonus = self.bonus.saturating_sub(1);
    }
    /// continue_slice: charge totalrun against the slice instead of starting a new one.
    fn continue_slice(&mut self, tun: Tun) {
        let total_run = tun.jiffies(self.totalrun);
        if total_run >= self.slice {
            self.totalrun -= self.slice * tun.tick_ns;
            self.dec_bonus();
        } else {
            self.slice -= total_run;
            let rem = self.slice % self.rr(tun);
            if rem != 0 {
                self.time_slice = rem;
            }
        }
    }
    /// recalc_task_prio, for a task that slept `sleep` ns.
    fn recalc_task_prio(&mut self, tun: Tun, sleep: u64) {
        let sleep = sleep.max(1); // ns_diff never returns 0
        self.totalrun += self.runtime;
        if tun.jiffies(self.totalrun) >= self.slice && tun.jiffies(sleep) < self.slice {
            self.nonsleep = false;
            self.dec_bonus();
            self.totalrun -= self.slice * tun.tick_ns;
            self.totalrun = self.totalrun.saturating_sub(sleep);
            return;
        }
        if std::mem::take(&mut self.nonsleep) || tun.compute {
            self.continue_slice(tun);
            return;
        }
        if sleep >= self.totalrun {
            self.inc_bonus(self.totalrun, sleep);
            self.totalrun = 0;
            return;
        }
        self.totalrun -= sleep;
        self.continue_slice(tun);
    }
    /// activate_task: a fresh slice, then recalc_task_prio, then the new stair.
    fn activate(&mut self, tun: Tun, now: u64, sleep: u64) {
        self.slice = self.full_slice(tun);
        let rr = self.rr(tun);
        self.time_slice = match self.slice % rr {
            0 => rr,
            r => r,
        };
        self.recalc_task_prio(tun, sleep);
        self.prio = self.effective_prio(tun);
        self.timestamp = now;
    }
    /// time_slice_expired's new stair and stair length (the requeue is the caller's).
    fn next_stair(&mut self, tun: Tun) {
        self.prio = self.effective_prio(tun);
        self.time_slice = self.rr(tun);
        self.debit = 0;
    }
}

/// One CPU's runqueue.
#[derive(Clone, Debug)]
struct Rq {
    array: PrioArray,
    curr: Option<TaskId>,
    /// The task that ran last (schedule()'s prev), to tell a real switch from prev == next.
    prev: Option<TaskId>,
    /// Ticks since the last context switch (compute mode's cache_delay clock).
    cache_ticks: u64,
    /// A wakeup wanted to preempt but compute mode delayed it.
    preempted: bool,
    /// This tick's scheduler_tick asked for rebalance_tick (expired_balance > 1).
    expired_balance: bool,
    balance: BalanceState,
}

impl Rq {
    fn new() -> Rq {
        Rq {
            array: PrioArray::new(),
            curr: None,
            prev: None,
            cache_ticks: 0,
            preempted: false,
            expired_balance: false,
            balance: BalanceState::default(),
        }
    }
    fn nr_running(&self) -> usize {
        self.array.nr_active + usize::from(self.curr.is_some())
    }
}

/// The staircase v13 policy: one priority array per CPU, tasks descending one stair per rr
/// interval from a best stair set by their sleep/run ratio.
pub struct Staircase {
    interactive: bool,
    compute: bool,
    tasks: Vec<Option<Task>>,
    rqs: Vec<Rq>,
    /// 2.6's domain hierarchy on a machine with a topology; `None`: one flat domain.
    sd: Option<Box<Domains26>>,
}

/// The `staircase` policy: its name, summary, parameters and constructor.
pub const DEF: PolicyDef = PolicyDef {
    name: "staircase",
    summary: "Con Kolivas's staircase v13: one priority array, one stair down per rr interval, bonus from CPU share (2.6.14-ck, LKML 2005-11-10; seed 004)",
    params: &[
        ParamDef {
            name: "interactive",
            default: 1,
            values: Values::Switch,
            meaning: "the sysctl: a task's best stair rises with its sleep/run ratio; 0 = nice alone sets it",
        },
        ParamDef {
            name: "compute",
            default: 0,
            values: Values::Switch,
            meaning: "the sysctl: 20x longer rr intervals, no bonus, wakeup preemption delayed ~10 ms",
        },
    ],
    describe_defaults: true,
    check: no_check,
    build: boxed::<Staircase>,
};

impl FromParams for Staircase {
    fn from_params(params: &Params) -> Staircase {
        Staircase {
            interactive: params.flag("interactive"),
            compute: params.flag("compute"),
            tasks: Vec::new(),
            rqs: Vec::new(),
            sd: None,
        }
    }
}

impl Staircase {
    fn tun(&self, m: &MachineView) -> Tun {
        Tun::of(m, self.interactive, self.compute)
    }

    fn ensure_rqs(&mut self, ncpus: usize) {
        if self.rqs.len() < ncpus {
            self.rqs.resize_with(ncpus, Rq::new);
        }
    }

    fn task(&self, id: TaskId) -> &Task {
        self.tasks[id]
            .as_ref()
            .expect("staircase: hook for an unknown task")
    }

    fn task_mut(&mut self, id: TaskId) -> &mut Task {
        self.tasks[id]
            .as_mut()
            .expect("staircase: hook for an unknown task")
    }

    fn nr(&self, cpu: CpuId) -> usize {
        self.rqs[cpu].nr_running()
    }

    /// time_slice_expired's requeue: to the tail of the new stair with a reschedule, unless
    /// schedule() would pick `id` again anyway.
    fn requeue_or_keep(&mut self, cpu: CpuId, id: TaskId) -> bool {
        let prio = self.task(id).prio;
        if self.rqs[cpu].array.next_set(0).is_some_and(|p| p <= prio) {
            self.task_mut(id).requeue = Some(Requeue::Tail);
            return true;
        }
        false
    }
}

impl Domain for Staircase {
    fn nr_running(&self, cpu: CpuId) -> usize {
        self.nr(cpu)
    }

    fn balance_state(&mut self, cpu: CpuId) -> &mut BalanceState {
        &mut self.rqs[cpu].balance
    }

    /// v13's move_tasks: its single array, best priority first, tail of each list first.
    fn move_tasks(
        &mut self,
        now: u64,
        from: CpuId,
        to: CpuId,
        max: usize,
        hot_ok: bool,
        moved: &mut Vec<Move>,
    ) {
        let mut prio = 0;
        while let Some(p) = self.rqs[from].array.next_set(prio) {
            let mut i = self.rqs[from].array.queue[p].len();
            while i > 0 {
                i -= 1;
                if moved.len() >= max {
                    return;
                }
                let id = self.rqs[from].array.queue[p][i];
                let t = self.task(id);
                if !balance::can_migrate_task(t.allowed, Some(t.timestamp), now, to, hot_ok) {
                    continue;
                }
                self.rqs[from].array.remove_at(p, i);
                self.rqs[to].array.enqueue(p, id, false);
                self.task_mut(id).debit = 0;
                moved.push(Move { task: id, from, to });
            }
            prio = p + 1;
        }
    }
}

impl Policy for Staircase {
    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), PolicyError> {
        check_class_knobs(
            NAME,
            group,
            knobs,
            ACCEPTED,
            |p| missing_linux_class((2, 6, 14), p),
            "EEVDF custom slices, Linux 6.12+",
        )
    }

    fn task_new(&mut self, m: &MachineView, setup: &TaskSetup) {
        self.ensure_rqs(m.ncpus);
        let tun = self.tun(m);
        let policy = match setup.sched_policy() {
            p @ (SchedPolicy::Other | SchedPolicy::Fifo(_) | SchedPolicy::Rr(_)) => p,
            // Rejected by check_knobs; treated as SCHED_OTHER if the machine skipped it.
            _ => SchedPolicy::Other,
        };
        let nice = setup.nice().clamp(-20, 19);
        let mut t = Task {
            policy,
            user_prio: (nice + 20) as u64,
            nice,
            prio: MAX_RT_PRIO,
            bonus: 0,
            slice: 0,
            time_slice: 0,
            totalrun: 0,
            runtime: 0,
            run_ns: 0,
            debit: 0,
            timestamp: m.now,
            allowed: setup.allowed,
            requeue: None,
            yielded: false,
            nonsleep: false,
        };
        if let SchedPolicy::Fifo(rt) | SchedPolicy::Rr(rt) = policy {
            t.prio = MAX_RT_PRIO - 1 - usize::from(rt);
        }
        t.slice = t.full_slice(tun);
        t.time_slice = t.rr(tun);
        t.prio = t.effective_prio(tun);
        if self.tasks.len() <= setup.id {
            self.tasks.resize(setup.id + 1, None);
        }
        self.tasks[setup.id] = Some(t);
    }

    fn select_task_rq(
        &mut self,
        m: &MachineView,
        task: TaskId,
        prev: CpuId,
        waker: Option<CpuId>,
    ) -> CpuId {
        self.ensure_rqs(m.ncpus);
        let n = m.ncpus.min(self.rqs.len());
        let t = self.task(task);
        let (allowed, last_ran) = (t.allowed, Some(t.timestamp));
        if let Some(sd) = &self.sd {
            return sd.select_task_rq(self, m, allowed, last_ran, prev, waker);
        }
        balance::select_task_rq(|c| self.nr(c), n, allowed, prev, waker)
    }

    fn enqueue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: EnqueueKind) {
        self.ensure_rqs(m.ncpus);
        let tun = self.tun(m);
        let t = self.task_mut(task);
        t.requeue = None;
        match kind {
            // wake_up_new_task: no bonus, a full slice, the stair its nice gives.
            EnqueueKind::New => {
                t.bonus = 0;
                t.slice = t.full_slice(tun);
                t.time_slice = t.rr(tun);
                t.prio = t.effective_prio(tun);
                t.timestamp = m.now;
            }
            EnqueueKind::Wakeup { slept_ns } => t.activate(tun, m.now, slept_ns),
        }
        let prio = t.prio;
        self.rqs[cpu].array.enqueue(prio, task, false);
    }

    fn dequeue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: DequeueKind) {
        let t = self.task_mut(task);
        t.runtime = t.run_ns.max(1);
        t.run_ns = 0;
        t.debit = 0;
        t.requeue = None;
        t.timestamp = m.now;
        // schedule() marks a task deactivated in TASK_UNINTERRUPTIBLE PF_NONSLEEP.
        t.nonsleep = kind == DequeueKind::DeviceWait;
        let rq = &mut self.rqs[cpu];
        if rq.curr == Some(task) {
            rq.curr = None;
        }
        if kind == DequeueKind::Exit {
            self.tasks[task] = None;
        }
    }

    fn wakeup_preempt(&mut self, m: &MachineView, cpu: CpuId, curr: TaskId, woken: TaskId) -> bool {
        let tun = self.tun(m);
        let c = self.task(curr).prio;
        let p = self.task(woken);
        if p.prio >= c {
            return false;
        }
        let rt = p.is_rt();
        let rq = &mut self.rqs[cpu];
        rq.preempted = true;
        !tun.compute || rq.cache_ticks >= tun.cache_delay() || rt
    }

    fn pick_next_task(&mut self, m: &MachineView, cpu: CpuId) -> Option<TaskId> {
        self.ensure_rqs(m.ncpus);
        let tun = self.tun(m);
        let rq = &mut self.rqs[cpu];
        let Some(prio) = rq.array.next_set(0) else {
            rq.prev = None;
            return None;
        };
        let next = rq.array.remove_at(prio, 0);
        rq.curr = Some(next);
        if rq.prev != Some(next) {
            rq.preempted = false;
            rq.cache_ticks = 0;
        }
        rq.prev = Some(next);
        let t = self.task_mut(next);
        if t.yielded {
            t.yielded = false;
            t.prio = t.effective_prio(tun);
        }
        t.run_ns = 0;
        t.timestamp = m.now;
        t.requeue = None;
        Some(next)
    }

    fn put_prev_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, _kind: PutPrevKind) {
        let t = self.task_mut(task);
        t.runtime = t.run_ns.max(1);
        t.run_ns = 0;
        t.timestamp = m.now;
        let head = t.requeue.take().is_none();
        let prio = t.prio;
        let rq = &mut self.rqs[cpu];
        if rq.curr == Some(task) {
            rq.curr = None;
        }
        rq.array.enqueue(prio, task, head);
    }

    fn update_curr(&mut self, _m: &MachineView, _cpu: CpuId, task: TaskId, delta_ns: u64) {
        let t = self.task_mut(task);
        t.run_ns += delta_ns;
        t.debit += delta_ns;
    }

    fn task_tick(&mut self, m: &MachineView, cpu: CpuId, task: TaskId) -> bool {
        let tun = self.tun(m);
        let busy = self.nr(cpu) > 1;
        self.rqs[cpu].expired_balance = busy;
        let t = self.task_mut(task);
        if t.requeue.is_some() {
            return true; // already requeued, not yet switched out
        }
        if matches!(t.policy, SchedPolicy::Fifo(_)) {
            self.rqs[cpu].expired_balance = false;
            return false;
        }
        if t.debit < tun.tick_ns {
            return false;
        }
        t.debit %= tun.tick_ns;
        // A whole slice() used: one bonus point lost, back to the best stair.
        t.slice = t.slice.saturating_sub(1);
        if t.slice == 0 {
            t.dec_bonus();
            t.slice = t.full_slice(tun);
            t.next_stair(tun);
            t.totalrun = 0;
            return self.requeue_or_keep(cpu, task);
        }
        // One rr interval on this stair used: down one stair.
        t.time_slice = t.time_slice.saturating_sub(1);
        if t.time_slice == 0 {
            t.next_stair(tun);
            return self.requeue_or_keep(cpu, task);
        }
        let rq = &mut self.rqs[cpu];
        rq.cache_ticks += 1;
        if rq.preempted && rq.cache_ticks >= tun.cache_delay() {
            return true;
        }
        rq.expired_balance = false;
        false
    }

    fn yield_task(&mut self, m: &MachineView, _cpu: CpuId, task: TaskId) -> bool {
        let tun = self.tun(m);
        let t = self.task_mut(task);
        t.slice = t.full_slice(tun);
        t.time_slice = t.rr(tun);
        if !t.is_rt() {
            t.yielded = true;
            t.prio = MAX_PRIO - 1;
        }
        t.requeue = Some(Requeue::Tail);
        true // sys_sched_yield always calls schedule()
    }

    fn balance(&mut self, m: &MachineView, cpu: CpuId, kind: BalanceKind) -> Vec<Move> {
        self.ensure_rqs(m.ncpus);
        let n = m.ncpus.min(self.rqs.len());
        if let Some(mut sd) = self.sd.take() {
            let moves = match kind {
                BalanceKind::NewIdle => sd.idle_balance(self, m, cpu),
                // A busy CPU calls rebalance_tick only when its expired flag says so, and then
                // without the interval (v13).
                BalanceKind::Periodic if self.rqs[cpu].nr_running() > 0 => {
                    if std::mem::take(&mut self.rqs[cpu].expired_balance) {
                        sd.rebalance_tick(self, m, cpu, true)
                    } else {
                        Vec::new()
                    }
                }
                BalanceKind::Periodic => sd.rebalance_tick(self, m, cpu, false),
            };
            self.sd = Some(sd);
            return moves;
        }
        if kind == BalanceKind::Periodic {
            let rq = &mut self.rqs[cpu];
            let due = if rq.nr_running() == 0 {
                rq.balance.periodic_due(m.now, true)
            } else {
                std::mem::take(&mut rq.expired_balance)
            };
            if !due {
                return Vec::new();
            }
        }
        balance::load_balance(self, m, cpu, n)
    }

    fn set_topology(&mut self, topology: &crate::topology::Topology) {
        self.ensure_rqs(topology.cpus());
        self.sd = Some(Box::new(Domains26::new(topology)));
    }

    fn idle_ticks(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{built, nice, policy, spec, spec_err, Harnessed, H, MS};

    impl Harnessed for Staircase {
        const REPORTS: bool = true;
        fn cpu_state(&self, cpu: CpuId) -> (Option<TaskId>, usize) {
            self.rqs
                .get(cpu)
                .map_or((None, 0), |rq| (rq.curr, rq.nr_running()))
        }
    }

    impl H<Staircase> {
        /// `id` wakes on CPU 0 after `slept_ns` (the clock advances by it).
        fn wake(&mut self, id: TaskId, slept_ns: u64) {
            self.now += slept_ns;
            self.enqueue(0, id, EnqueueKind::Wakeup { slept_ns })
        }
        /// Run the (only) task `id` for `ticks` ticks, sleep `sleep_ms`, wake it.
        fn cycle(&mut self, id: TaskId, ticks: u64, sleep_ms: u64) {
            assert_eq!(self.pick(0), Some(id));
            for _ in 0..ticks {
                self.tick(0);
            }
            self.sleep(0);
            self.wake(id, sleep_ms * MS);
        }
        fn t(&self, id: TaskId) -> &Task {
            self.p.task(id)
        }
    }

    #[test]
    fn rr_interval_and_slice_follow_hz_and_nice() {
        // (hz, policy, nice, rr jiffies, slice jiffies): RR_INTERVAL = 5·HZ/1001 + 1.
        let cases = [
            (100, "staircase", 0, 1, 20),
            (100, "staircase", -5, 6, 150),
            (100, "staircase", -20, 21, 840),
            (100, "staircase", 19, 1, 1),
            (250, "staircase", 0, 2, 40),
            (250, "staircase", -5, 7, 175),
            (250, "staircase", 10, 2, 20),
            (250, "staircase", 19, 2, 2),
            (1000, "staircase", 0, 5, 100),
            (250, "staircase:compute=1", 0, 40, 800),
            (100, "staircase:compute=1", -1, 21, 21 * 21),
        ];
        for (hz, pol, n, rr, slice) in cases {
            let mut h = H::<Staircase>::new(pol, hz, 1);
            h.spawn_on(0, 0, nice(n));
            let tun = h.p.tun(&MachineView {
                now: 0,
                ncpus: 1,
                curr: vec![None],
                nr_running: vec![1],
                hz,
            });
            assert_eq!(h.t(0).rr(tun), rr, "{pol} HZ {hz} nice {n}");
            assert_eq!(h.t(0).full_slice(tun), slice, "{pol} HZ {hz} nice {n}");
            assert_eq!(h.t(0).slice, slice);
            assert_eq!(
                h.t(0).prio,
                (120 + n) as usize,
                "a new task starts on its nice stair"
            );
        }
    }

    #[test]
    fn descends_one_stair_per_rr_interval_to_the_bottom_then_a_fresh_slice() {
        // HZ 250, nice 0: rr = 2 ticks, slice = 40 ticks, stairs 120..=139.
        let mut h = H::<Staircase>::new("staircase", 250, 1);
        h.spawn_on(0, 0, Knobs::default());
        assert_eq!(h.pick(0), Some(0));
        for k in 1..40 {
            assert!(!h.tick(0), "alone: no reschedule at tick {k}");
            assert_eq!(h.t(0).prio, 120 + (k / 2) as usize, "after {k} ticks");
        }
        assert_eq!(h.t(0).prio, 139, "the bottom stair");
        h.tick(0);
        assert_eq!(h.t(0).prio, 120, "whole slice used: back on the best stair");
        assert_eq!(h.t(0).slice, 40);

        // nice -5 at HZ 100: one stair per rr = 6 ticks, from 115 down to 139 over 150 ticks.
        let mut h = H::<Staircase>::new("staircase", 100, 1);
        h.spawn_on(0, 0, nice(-5));
        h.pick(0);
        for k in 1..150 {
            h.tick(0);
            assert_eq!(
                h.t(0).prio,
                (115 + k / 6).min(139) as usize,
                "after {k} ticks"
            );
        }
        h.tick(0);
        assert_eq!(h.t(0).prio, 115);

        // With another task waiting on the best stair, an rr expiry switches to it.
        let mut h = H::<Staircase>::new("staircase", 250, 1);
        h.spawn_on(0, 0, Knobs::default());
        h.spawn_on(1, 0, Knobs::default());
        assert_eq!(h.pick(0), Some(0));
        assert!(!h.tick(0));
        assert!(h.tick(0), "one stair down, below the waiting task");
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(1));
        assert_eq!(h.t(0).prio, 121);
    }

    #[test]
    fn bonus_follows_the_sleep_to_run_ratio() {
        // HZ 1000: a task that runs 1 ms and sleeps 49 ms climbs one stair per wakeup, up to
        // user_prio (20 for nice 0, 30 for nice 10), i.e. to priority 100.
        for (n, cap) in [(0, 20u64), (10, 30)] {
            let mut h = H::<Staircase>::new("staircase", 1000, 1);
            h.spawn_on(0, 0, nice(n));
            for k in 1..=40u64 {
                h.cycle(0, 1, 49);
                assert_eq!(h.t(0).bonus, k.min(cap), "nice {n}, wakeup {k}");
            }
            assert_eq!(h.t(0).prio, 100, "nice {n}");
        }
        // Running 10 ms per 25 ms sleep (sleep/run 2.5) earns a best stair two above nice.
        let mut h = H::<Staircase>::new("staircase", 1000, 1);
        h.spawn_on(0, 0, Knobs::default());
        for _ in 0..20 {
            h.cycle(0, 10, 25);
        }
        assert_eq!(h.t(0).bonus, 2);
        assert_eq!(h.t(0).prio, 118);
        // A CPU hog (30 ms run per 10 ms sleep) gains nothing and continues its slice.
        let mut h = H::<Staircase>::new("staircase", 1000, 1);
        h.spawn_on(0, 0, Knobs::default());
        for _ in 0..20 {
            h.cycle(0, 30, 10);
            assert_eq!(h.t(0).bonus, 0);
            assert!(h.t(0).prio >= 120);
        }
    }

    #[test]
    fn a_whole_slice_costs_one_bonus_point() {
        let mut h = H::<Staircase>::new("staircase", 1000, 1);
        h.spawn_on(0, 0, Knobs::default());
        for _ in 0..5 {
            h.cycle(0, 1, 49);
        }
        assert_eq!((h.t(0).bonus, h.t(0).prio), (5, 115));
        assert_eq!(h.pick(0), Some(0));
        // slice = 100 ticks (rr 5 × 20 stairs); the bonus survives 99 of them.
        for _ in 0..99 {
            h.tick(0);
        }
        assert_eq!(h.t(0).bonus, 5);
        assert_eq!(h.t(0).prio, 134, "19 stairs down");
        h.tick(0);
        assert_eq!((h.t(0).bonus, h.t(0).prio), (4, 116));
    }

    #[test]
    fn a_device_wait_earns_no_bonus_and_continues_the_slice() {
        // HZ 1000, nice -5: rr = 10 ticks, slice = 250 ticks, best stair 115 without bonus.
        // Running 2 ms per 80 ms asleep on a device (PF_NONSLEEP), a task gains nothing and
        // walks down its stairs by the CPU it has used since its last whole slice.
        let mut h = H::<Staircase>::new("staircase", 1000, 1);
        h.spawn_on(0, 0, nice(-5));
        for k in 1..=40u64 {
            assert_eq!(h.pick(0), Some(0));
            h.tick(0);
            h.tick(0);
            h.sleep_as(0, DequeueKind::DeviceWait);
            h.wake(0, 80 * MS);
            assert_eq!(h.t(0).bonus, 0, "wakeup {k}");
            assert_eq!(h.t(0).prio, 115 + (2 * k / 10) as usize, "wakeup {k}");
        }
        // The same runs with interruptible sleeps climb one stair per wakeup to the top.
        let mut h = H::<Staircase>::new("staircase", 1000, 1);
        h.spawn_on(0, 0, nice(-5));
        for k in 1..=20u64 {
            h.cycle(0, 2, 80);
            assert_eq!(h.t(0).bonus, k.min(15), "wakeup {k}");
        }
        assert_eq!(h.t(0).prio, 100);
        // One device wait after that keeps the bonus it has but earns no more; the flag lasts
        // one wakeup.
        let mut h = H::<Staircase>::new("staircase", 1000, 1);
        h.spawn_on(0, 0, nice(-5));
        for _ in 0..3 {
            h.cycle(0, 2, 80);
        }
        assert_eq!(h.pick(0), Some(0));
        h.tick(0);
        h.sleep_as(0, DequeueKind::DeviceWait);
        h.wake(0, 80 * MS);
        assert_eq!(h.t(0).bonus, 3);
        h.cycle(0, 1, 80);
        assert_eq!(h.t(0).bonus, 4);
    }

    #[test]
    fn interactive_0_gives_no_bonus_and_compute_1_neither() {
        for pol in ["staircase:interactive=0", "staircase:compute=1"] {
            let mut h = H::<Staircase>::new(pol, 1000, 1);
            h.spawn_on(0, 0, Knobs::default());
            for _ in 0..30 {
                h.cycle(0, 1, 49);
                assert_eq!(h.t(0).prio, 120, "{pol}");
            }
        }
        // Compute mode does not even earn it: it always continues its slice.
        let mut h = H::<Staircase>::new("staircase:compute=1", 1000, 1);
        h.spawn_on(0, 0, Knobs::default());
        for _ in 0..30 {
            h.cycle(0, 1, 49);
        }
        assert_eq!(h.t(0).bonus, 0);
        assert_eq!(h.t(0).slice, 2000 - 30, "30 ms taken off a 2 s slice");
    }

    #[test]
    fn wakeup_preempts_iff_higher_priority() {
        let mut h = H::<Staircase>::new("staircase", 1000, 1);
        h.spawn_on(0, 0, Knobs::default()); // hog, prio 120
        h.spawn_on(1, 0, Knobs::default()); // sleeper
        h.spawn_on(2, 0, nice(5)); // niced sleeper
        h.spawn_on(3, 0, Knobs::default()); // equal
        for id in [0, 1, 3, 2] {
            assert_eq!(h.pick(0), Some(id));
            h.tick(0);
            h.sleep(0);
        }
        // A sleep as long as its run earns nothing: 0 runs on its nice stair.
        h.wake(0, MS);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.t(0).prio, 120);
        // 1: bonus 1 after a long sleep → 119 < 120.
        h.wake(1, 100 * MS);
        assert_eq!(h.t(1).prio, 119);
        assert!(h.preempts(0, 1));
        // 2: nice 5 with bonus 1 → 124 > 120.
        h.wake(2, 100 * MS);
        assert_eq!(h.t(2).prio, 124);
        assert!(!h.preempts(0, 2));
        // Equal priority never preempts.
        let mut h = H::<Staircase>::new("staircase:interactive=0", 1000, 1);
        h.spawn_on(0, 0, Knobs::default());
        h.spawn_on(1, 0, Knobs::default());
        h.pick(0);
        h.tick(0);
        h.sleep(0);
        h.pick(0);
        h.wake(0, 100 * MS);
        assert_eq!((h.t(0).prio, h.t(1).prio), (120, 120));
        assert!(!h.preempts(0, 0));
        // A real-time wakee preempts.
        h.spawn_on(2, 0, policy(SchedPolicy::Fifo(1)));
        assert!(h.preempts(0, 2));
    }

    #[test]
    fn compute_mode_delays_wakeup_preemption_by_cache_delay() {
        // HZ 250: cache_delay = 10·250/1001 + 1 = 3 ticks.
        let mut h = H::<Staircase>::new("staircase:compute=1", 250, 1);
        h.spawn_on(0, 0, Knobs::default());
        h.spawn_on(1, 0, nice(-5));
        assert_eq!(h.pick(0), Some(1));
        h.tick(0);
        h.sleep(0);
        assert_eq!(h.pick(0), Some(0));
        h.wake(1, 100 * MS);
        assert_eq!(h.t(1).prio, 115);
        assert!(!h.preempts(0, 1), "delayed");
        assert!(!h.tick(0));
        assert!(!h.tick(0));
        assert!(h.tick(0), "the third tick reschedules");
        // Without compute the same wakeup preempts at once.
        let mut h = H::<Staircase>::new("staircase", 250, 1);
        h.spawn_on(0, 0, Knobs::default());
        h.spawn_on(1, 0, nice(-5));
        h.pick(0);
        h.tick(0);
        h.sleep(0);
        h.pick(0);
        h.wake(1, 100 * MS);
        assert!(h.preempts(0, 1));
        // Compute mode lets a real-time wakee through at once.
        let mut h = H::<Staircase>::new("staircase:compute=1", 250, 1);
        h.spawn_on(0, 0, Knobs::default());
        h.pick(0);
        h.spawn_on(1, 0, policy(SchedPolicy::Rr(5)));
        assert!(h.preempts(0, 1));
    }

    #[test]
    fn yield_drops_to_139_until_picked_and_fifo_never_expires() {
        let mut h = H::<Staircase>::new("staircase", 250, 1);
        h.spawn_on(0, 0, Knobs::default());
        h.spawn_on(1, 0, nice(19));
        assert_eq!(h.pick(0), Some(0));
        let t = h.curr[0].unwrap();
        h.with(|p, m| {
            p.yield_task(m, 0, t);
            p.put_prev_task(m, 0, t, PutPrevKind::Yielded);
        });
        assert_eq!(h.t(0).prio, 139);
        assert_eq!(h.pick(0), Some(1), "nice 19 (139) was queued first");
        h.sleep(0);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.t(0).prio, 120, "back on its best stair when picked");

        let mut h = H::<Staircase>::new("staircase", 250, 1);
        h.spawn_on(0, 0, policy(SchedPolicy::Fifo(5)));
        h.spawn_on(1, 0, policy(SchedPolicy::Fifo(5)));
        h.pick(0);
        assert!((0..1000).all(|_| !h.tick(0)));
        assert_eq!(h.t(0).prio, 94);
    }

    #[test]
    fn rejects_knobs_and_parameters_it_has_no_notion_of() {
        let s: Staircase = built("staircase");
        assert_eq!(
            spec("staircase").describe(),
            "staircase:interactive=1,compute=0"
        );
        let c = spec("staircase:interactive=0,compute=1");
        assert_eq!(c.describe(), "staircase:interactive=0,compute=1");
        for bad in ["staircase:compute=2", "staircase:interactive=x"] {
            let e = spec_err(bad);
            assert!(e.contains("=0 or") && e.contains("=1"), "{e}");
        }
        assert!("staircase:threshold=1".parse::<PolicySpec>().is_err());
        let e = s
            .check_knobs("bg", &policy(SchedPolicy::Batch))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'bg'") && e.contains("policy=batch"), "{e}");
        let e = s
            .check_knobs("bg", &policy(SchedPolicy::Idle))
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy=idle"), "{e}");
        let k = Knobs {
            slice_ns: Some(300_000),
            ..Knobs::default()
        };
        assert!(s
            .check_knobs("g", &k)
            .unwrap_err()
            .to_string()
            .contains("slice="));
        for ok in [
            nice(-5),
            policy(SchedPolicy::Rr(3)),
            policy(SchedPolicy::Fifo(9)),
        ] {
            assert!(s.check_knobs("g", &ok).is_ok());
        }
    }

    /// Seed 004: on one CPU, interbench's audio task (5 % CPU every 50 ms) at nice 19 against
    /// burn loads meets nearly all its deadlines under staircase, and few under O(1).
    #[test]
    fn audio_at_nice_19_keeps_its_deadlines_against_a_burn_load() {
        use crate::cost::CostModel;
        use crate::{run_repetition, SimSetup};
        use schedlab_workload::presets::{BenchKind, Interbench, LoadKind};
        use schedlab_workload::Workload;
        use std::time::Duration;
        let ib = Interbench {
            bench: BenchKind::Audio,
            load: LoadKind::Burn,
            duration: Duration::from_secs(5),
            ..Interbench::default()
        };
        let cost = CostModel::profile("modern").unwrap();
        let knobs = [nice(19), Knobs::default(), Knobs::default()];
        let met = |policy: &str| {
            let spec = spec(policy);
            let setup = SimSetup::new(&spec, 1, &cost, &knobs);
            let r = run_repetition(&ib, setup).unwrap();
            ib.metrics(&r.outcome).unwrap()["deadlines_met"]
        };
        let (stair, o1) = (met("staircase"), met("o1"));
        assert!(stair > 90.0, "staircase: {stair}% deadlines met");
        assert!(o1 < 30.0, "o1: {o1}% deadlines met");
        let flat = met("staircase:interactive=0");
        assert!(flat < 30.0, "without the bonus nice 19 waits: {flat}%");
    }
}
