//! IBM's multi-queue (MQ) scheduler for Linux 2.4 (Mike Kravetz, Hubertus Franke et al., IBM Linux
//! Technology Center), modelled on the patch posted to LKML as "\[RFC\]\[PATCH\] Scalable Scheduling"
//! (Mike Kravetz, 2001-08-08, against 2.4.7; read from the lore archive in
//! ammarfaizi2/lore-inbox), cross-checked with its 2.4.14 repost ("Scalable Scheduling again",
//! 2001-11-14) and lse.sourceforge.net's OLS 2001 slides. Seed 002 measures its 2.4.0-pre8
//! version ("2.4.0-pre8MQ") against vanilla 2.4 and the priority-list scheduler.
//!
//! The design keeps 2.4's global scheduling decisions but splits the run list:
//! - One run list and lock per CPU, plus one global realtime run list that every CPU scans
//!   (`REALTIME_RQ`). SCHED_FIFO/RR tasks live there; goodness 1000 + rt_priority.
//! - `na_goodness(p)` is goodness without the affinity terms (no PROC_CHANGE_PENALTY, no same-mm
//!   bonus): yielded −1, realtime 1000 + rt_priority, counter 0 → 0, else counter + 20 − nice.
//!   Each queue caches the na_goodness of its best *schedulable* (queued, not running) task:
//!   `max_na_goodness`, with the task and its cpus_allowed. `add_to_runqueue` raises it;
//!   `del_from_runqueue_update` of the cached task re-derives it from the FIRST schedulable task
//!   with positive na_goodness (the patch calls this a "good enough approximation"); schedule()
//!   sets it to the second-best task its local scan saw (`prev_next`).
//! - `schedule()`: prev (if still runnable) starts with its full goodness (PROC_CHANGE_PENALTY and
//!   same-mm included, as 2.4's still_running path); the realtime queue is scanned if prev is
//!   realtime or the queue is non-empty; then the local queue with `local_goodness` (no
//!   PROC_CHANGE_PENALTY); then, if the best is not realtime, PROC_CHANGE_PENALTY is added to a
//!   positive best and the other CPUs' cached `max_na_goodness` values are read: the highest one
//!   strictly greater (and allowing this CPU) is stolen. If the best is 0, every task's counter,
//!   sleeping tasks' too, becomes counter/2 + NICE_TO_TICKS(nice) (the global recalculation) and
//!   schedule() starts over.
//! - `reschedule_idle(p)` on wakeup: p's last CPU if idle; else rank the CPUs p may use — idle
//!   ones by how long they have been idle, busy ones by the na_goodness of their current task
//!   (+ PROC_CHANGE_PENALTY for CPUs other than p's) — and take the lowest below na_goodness(p)
//!   − 1 whose re-check passes (idle, or `preemption_goodness > 1`); p moves there and that CPU
//!   reschedules. With no such CPU p joins its last CPU's queue without preempting.
//! - `__schedule_tail` runs reschedule_idle for a preempted (not yielding) prev that lost its CPU,
//!   so it can move to an idle CPU; this uses the machine's [`Policy::schedule_tail`] hook.
//! - Tick: `--counter`, reschedule at 0; the CPU's cached na_goodness of its current task follows.
//! - sched_yield (2.4): if any task is runnable and not running, a SCHED_OTHER caller gets
//!   SCHED_YIELD (goodness −1 for the next schedule only) and goes to the tail of its queue.
//!
//! CPU pools and occasional load balancing (seed 002, "Load Balancing": "we extended the MQ
//! scheduler to restrict scheduling within a defined set of cpus. Frequently, rather than on
//! every schedule and reschedule_idle() call we try to rebalance the load in all the queues
//! based on some load function … '1' as the load function for each thread … whether in
//! reschedule_idle() we search for all cpus or not [i1/0] … occasional load balancing is turned
//! off or on [b0/1]"):
//! - `pools=K` splits the CPUs into K pools of consecutive CPUs (K divides the CPU count). A
//!   task belongs to the pool of the CPU whose queue it is on; schedule() steals only from the
//!   queues of its own pool, and reschedule_idle ranks only the pool's CPUs.
//! - `idle=all` (i1): reschedule_idle also takes an idle CPU outside the pool when none inside
//!   qualifies, and a CPU that would otherwise go idle steals from any pool; `idle=pool` (i0)
//!   keeps both inside the pool.
//! - `balance=1` (b1): every `interval` ms (the seed says only "frequently"; 100 ms is assumed),
//!   the first CPU to tick moves queued, not running, tasks from pools whose load (one per
//!   runnable thread) is above the mean to pools below it, onto the pool's least loaded queue.
//! - `pools=1` (the default) is the patch as posted: every rule above is then the unpooled one.
//! - A forked task starts on its parent's queue (2.4's do_fork: `p->processor =
//!   current->processor`, then `wake_up_process` → reschedule_idle), so with pools a build's
//!   jobs start in make's pool.
//!
//! Quirks of the patch kept as they are: prev competes with its full goodness against queued
//! tasks' `local_goodness`, so a task woken onto a busy CPU takes it only if it beats the running
//! task by more than PROC_CHANGE_PENALTY (reschedule_idle's own test asks for more than 1); a
//! preempted prev is not in its queue's cache until that CPU schedules again; after a
//! recalculation other queues' caches keep their old (≤ 0) values; SCHED_RR tasks of equal
//! priority do not rotate (prev's 1000 + rt_priority is not beaten by an equal one), as in 2.4.
//!
//! Simplifications (assumptions where the patch or the simulator has no such detail):
//! - Timeslices per 2.4.17: NICE_TO_TICKS(n) = TICK_SCALE(20 − n) + 1 at the machine's HZ (at
//!   HZ=100: nice 0 → 6 ticks, −20 → 11, 19 → 1). A new task starts with NICE_TO_TICKS(nice)
//!   (no parent whose counter fork would halve).
//! - "Same mm": tasks of one workload group share an address space (threads of a process).
//! - Locks are never contended for the try-locks of stealing and reschedule_idle (the simulator
//!   charges runqueue-lock contention per CPU through `lock_domain`), so the first candidate
//!   always verifies and there is no premature-idle retry; the realtime queue's lock is not
//!   modelled separately.
//! - `last_scan_len` counts every run-list entry schedule() examined (running ones included, as
//!   the kernel's loop walks them), every remote cached maximum read, the entries the steal's
//!   cache update walked, and, after a recalculation, every task.
//! - An idle CPU that already has a woken task queued for it (the simulator wakes tasks at one
//!   instant, e.g. at the start) counts as busy for reschedule_idle, which skips it; the kernel
//!   would see an idle CPU about to switch. Without this every task of the start would pile on
//!   CPU 0, as all start with processor 0.
//! - SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE and custom slices do not exist in 2.4 and are
//!   rejected.

use super::*;
use schedlab_workload::knobs::{Knobs, SchedPolicy};

use super::ds::intrusive_list::{Linked, ListHead, NIL};
use super::linux24::{nice_to_ticks, ACCEPTED, PROC_CHANGE_PENALTY};

/// `NA_GOODNESS_INIT`: no schedulable task cached / the CPU runs its idle task.
const NA_GOODNESS_INIT: i64 = -10000;
/// schedule()'s starting goodness (the idle task's).
const IDLE_GOODNESS: i64 = -1000;
/// Realtime goodness base: 1000 + rt_priority.
const RT_GOODNESS_MIN: i64 = 1000;
const NAME: &str = "IBM multi-queue scheduler for Linux 2.4";

/// Per-task 2.4 state (`struct task_struct`'s scheduling fields). A run-list scan reads every
/// queued task's fields: those come first and the struct starts a cache line (`repr(C)` keeps
/// the order), so a scan step touches one line — the links, the flags and the first word of
/// `allowed` (CPUs 0..64) included — instead of two with the 128-byte CPU mask in between.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Task {
    counter: i64,
    /// rt_priority and whether SCHED_RR; `None` for SCHED_OTHER.
    rt: Option<(i64, bool)>,
    /// Address space: the workload group.
    mm: usize,
    /// `p->processor`: the CPU whose queue it is on (or last ran on).
    processor: CpuId,
    nice: i32,
    /// SCHED_YIELD flag, set by sched_yield and cleared when the next schedule() is done.
    yielded: bool,
    /// `has_cpu`: running (still on its run list, skipped by scans).
    running: bool,
    /// On a run list (queued or running).
    on_rq: bool,
    exited: bool,
    /// Run-list links.
    next: u32,
    prev: u32,
    allowed: CpuMask,
}

// A scan's fields and the first word of `allowed` share the task's first cache line.
const _: () = assert!(std::mem::offset_of!(Task, allowed) + 8 <= 64);

impl Task {
    fn is_rt(&self) -> bool {
        self.rt.is_some()
    }
    /// 2.4's counter + 20 − nice, or 0 when the counter is spent (base of every goodness).
    fn base(&self) -> i64 {
        if self.counter == 0 {
            0
        } else {
            self.counter + 20 - i64::from(self.nice)
        }
    }
    /// `na_goodness`: goodness without the CPU and mm affinity terms.
    fn na_goodness(&self) -> i64 {
        if self.yielded {
            return -1;
        }
        match self.rt {
            Some((prio, _)) => RT_GOODNESS_MIN + prio,
            None => self.base(),
        }
    }
    /// 2.4's `goodness(p, this_cpu, this_mm)`.
    fn goodness(&self, cpu: CpuId, this_mm: Option<usize>) -> i64 {
        if self.yielded {
            return -1;
        }
        if let Some((prio, _)) = self.rt {
            return RT_GOODNESS_MIN + prio;
        }
        let w = self.base();
        if w == 0 {
            return 0;
        }
        w + if self.processor == cpu {
            PROC_CHANGE_PENALTY
        } else {
            0
        } + i64::from(this_mm == Some(self.mm))
    }
}

impl Linked for Task {
    fn links(&mut self) -> (&mut u32, &mut u32) {
        (&mut self.next, &mut self.prev)
    }
}

/// What schedule()'s walk of its CPU's run list reads of one task, copied from the task into a
/// compact array beside the tasks ([`Linux24Mq::scan`], 16 bytes a task) and kept equal to it
/// by [`Linux24Mq::sync_scan`] at every change of a field it copies. The walk is O(n) as the
/// patch's is (about 1,900 tasks on CPU 0 in the 2048-thread yield storm) and a dependent chase
/// of `next` links: over the 64-byte tasks each step is a load from the second-level cache;
/// over 16-byte entries the whole list stays in the first-level cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScanEntry {
    /// [`SCAN_RUNNING`] while it runs (`has_cpu`: the walk skips it), −1 while yielded, else
    /// 2.4's counter + 20 − nice (0 once the counter is spent): `local_goodness` without the
    /// same-mm bonus.
    weight: i64,
    /// The next task on its run list.
    next: u32,
    /// Its address space (the workload group), for the same-mm bonus.
    mm: u32,
}

/// [`ScanEntry::weight`] of a running task.
const SCAN_RUNNING: i64 = i64::MIN;

impl ScanEntry {
    /// The entry of `t` as it is now.
    fn of(t: &Task) -> ScanEntry {
        ScanEntry {
            weight: if t.running {
                SCAN_RUNNING
            } else if t.yielded {
                -1
            } else {
                t.base()
            },
            next: t.next,
            // Group indices are small; a (never seen) larger one only loses the mm bonus
            // against the groups it aliases.
            mm: u32::try_from(t.mm).unwrap_or(u32::MAX),
        }
    }

    /// The patch's `local_goodness(p, this_mm)` of a task that is not running: for tasks on
    /// this CPU's own queue, no CPU affinity term (yielded −1; spent 0; else the weight and
    /// the same-mm bonus).
    #[inline]
    fn local_goodness(self, this_mm: Option<usize>) -> i64 {
        if self.weight <= 0 {
            // Yielded (−1) or spent (0): no bonus.
            self.weight
        } else {
            self.weight + i64::from(this_mm.is_some_and(|m| m as u64 == u64::from(self.mm)))
        }
    }
}

/// One CPU's queue (`runqueue_data`) and scheduling data (`aligned_data`).
#[derive(Clone, Debug)]
struct Rq {
    list: ListHead,
    max_na_goodness: i64,
    max_na_ptr: Option<TaskId>,
    max_na_allowed: CpuMask,
    curr: Option<TaskId>,
    curr_na_goodness: i64,
    /// When this CPU last switched tasks (for how long it has been idle).
    last_schedule: u64,
    /// The address space the CPU last ran in (`prev->active_mm` for an idle CPU).
    last_mm: Option<usize>,
    /// The current task put back runnable, waiting for schedule() (still `has_cpu`).
    prev: Option<(TaskId, PutPrevKind)>,
    /// A preempted prev that lost the CPU: `__schedule_tail` runs reschedule_idle for it.
    tail: Option<TaskId>,
    scan: usize,
}

impl Rq {
    fn new() -> Rq {
        Rq {
            list: ListHead::EMPTY,
            max_na_goodness: NA_GOODNESS_INIT,
            max_na_ptr: None,
            max_na_allowed: CpuMask::EMPTY,
            curr: None,
            curr_na_goodness: NA_GOODNESS_INIT,
            last_schedule: 0,
            last_mm: None,
            prev: None,
            tail: None,
            scan: 0,
        }
    }
}

/// Which run list: a CPU's, or the global realtime one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Queue {
    Cpu(CpuId),
    Realtime,
}

/// The IBM multi-queue policy: per-CPU run lists with cached remote maxima and stealing, a global
/// realtime list, and 2.4's goodness, counters and recalculation.
pub struct Linux24Mq {
    tasks: Vec<Task>,
    /// The fields the run-list walk reads, per task ([`ScanEntry`]).
    scan: Vec<ScanEntry>,
    rqs: Vec<Rq>,
    rt: ListHead,
    /// The CPU reschedule_idle asked to reschedule for a task (answered by `wakeup_preempt`).
    resched: Option<(TaskId, CpuId)>,
    /// CPU pools (seed 002); 1: the patch as posted.
    pools: usize,
    /// Occasional load balancing between pools (b1).
    balance: bool,
    /// Its interval, ns.
    interval_ns: u64,
    /// Whether reschedule_idle and an idle CPU look beyond the pool (i1).
    idle_all: bool,
    /// When the next balancing pass is due.
    next_balance: u64,
}

/// `idle=`'s values, by index.
const IDLE_VALUES: &[&str] = &["pool", "all"];

/// The `linux24-mq` policy: its name, summary, parameters and constructor.
pub const DEF: PolicyDef = PolicyDef {
    name: "linux24-mq",
    summary: "IBM multi-queue scheduler for 2.4: per-CPU run lists, cached na_goodness maxima, stealing (Kravetz, LKML 2001-08-08; seed 002)",
    params: &[
        ParamDef {
            name: "pools",
            default: 1,
            values: Values::Range(0, MAX_CPUS as u32),
            meaning: "CPU pools of consecutive CPUs, 1..CPUs dividing them; scheduling stays within a pool (seed 002)",
        },
        ParamDef {
            name: "balance",
            default: 0,
            values: Values::Flag,
            meaning: "occasional load balancing between pools, one load unit per thread (seed 002's b1)",
        },
        ParamDef {
            name: "interval",
            default: 100,
            values: Values::Range(0, 60_000),
            meaning: "ms between two balancing passes (1..60000; the seed says 'frequently')",
        },
        ParamDef {
            name: "idle",
            default: 0,
            values: Values::Choice(IDLE_VALUES),
            meaning: "whether reschedule_idle and an idle CPU look beyond the pool (seed 002's i0/i1)",
        },
    ],
    // Only changed parameters are named, so that plain `linux24-mq` stays the patch as posted.
    describe_defaults: false,
    check: check_params,
    build: boxed::<Linux24Mq>,
};

/// `pools` and `interval` must be at least 1.
fn check_params(p: &Params) -> Result<(), PolicyError> {
    for (name, max) in [("pools", MAX_CPUS), ("interval", 60_000)] {
        if p.get(name) == 0 {
            return Err(PolicyError::NotAccepted {
                param: name,
                value: "0".into(),
                accepted: format!("{name}=1..{max}"),
            });
        }
    }
    Ok(())
}

impl FromParams for Linux24Mq {
    fn from_params(p: &Params) -> Linux24Mq {
        // PROC_CHANGE_PENALTY (15) and NICE_TO_TICKS at the machine's HZ are fixed.
        let interval_ns = u64::from(p.get("interval")) * 1_000_000;
        Linux24Mq {
            tasks: Vec::new(),
            scan: Vec::new(),
            rqs: Vec::new(),
            rt: ListHead::EMPTY,
            resched: None,
            pools: p.get("pools") as usize,
            balance: p.flag("balance"),
            interval_ns,
            idle_all: p.get("idle") == 1,
            next_balance: interval_ns,
        }
    }
}

impl Linux24Mq {
    fn ensure_rqs(&mut self, ncpus: usize) {
        if self.rqs.len() < ncpus {
            self.rqs.resize_with(ncpus, Rq::new);
        }
    }

    /// The CPUs of `cpu`'s pool.
    fn pool_mask(&self, ncpus: usize, cpu: CpuId) -> CpuMask {
        CpuMask::range(self.pool_range(ncpus, cpu))
    }

    /// The CPUs of `cpu`'s pool as a range of CPU numbers (those below `ncpus`): what the
    /// pick's look at the other queues walks, without building a 1024-bit mask per pick.
    fn pool_range(&self, ncpus: usize, cpu: CpuId) -> std::ops::Range<CpuId> {
        let size = (ncpus / self.pools.max(1)).max(1);
        let first = cpu / size * size;
        first.min(ncpus)..(first + size).min(ncpus)
    }

    /// Seed 002's occasional rebalance: move queued tasks from pools above the mean load (one
    /// per runnable thread) to pools below it, each onto the target pool's least loaded queue.
    fn rebalance(&mut self, m: &MachineView) -> Vec<Move> {
        let size = (m.ncpus / self.pools).max(1);
        let mut load = vec![0usize; m.ncpus];
        for t in &self.tasks {
            if t.on_rq && !t.is_rt() {
                load[t.processor] += 1;
            }
        }
        let pool_load = |load: &[usize], p: usize| load[p * size..(p + 1) * size].iter().sum();
        let total: usize = load.iter().sum();
        let mut moves = Vec::new();
        for _ in 0..total {
            let loads: Vec<usize> = (0..self.pools).map(|p| pool_load(&load, p)).collect();
            let (src, &hi) = loads
                .iter()
                .enumerate()
                .max_by_key(|&(p, l)| (*l, usize::MAX - p))
                .expect("a pool");
            let (dst, &lo) = loads
                .iter()
                .enumerate()
                .min_by_key(|&(p, l)| (*l, p))
                .expect("a pool");
            // Balanced when no move would bring the two closer to the mean.
            if hi <= lo + 1 {
                break;
            }
            let to = (dst * size..(dst + 1) * size)
                .min_by_key(|&c| (load[c], c))
                .expect("a CPU in the pool");
            // The queued task nearest the tail of the source pool's busiest queue that may run
            // on `to` (the head holds the most recently woken).
            let candidate = (src * size..(src + 1) * size)
                .filter(|&c| load[c] > 0)
                .max_by_key(|&c| (load[c], usize::MAX - c))
                .and_then(|from| {
                    let mut found = None;
                    let mut i = self.rqs[from].list.head;
                    while i != NIL {
                        let t = &self.tasks[i as usize];
                        if !t.running
                            && t.allowed.contains(to)
                            && self.rqs[from].prev.map(|(p, _)| p) != Some(i as usize)
                        {
                            found = Some((i as usize, from));
                        }
                        i = t.next;
                    }
                    found
                });
            let Some((task, from)) = candidate else { break };
            self.del_from_runqueue(task);
            self.tasks[task].processor = to;
            self.add_to_runqueue(task);
            load[from] -= 1;
            load[to] += 1;
            moves.push(Move { task, from, to });
        }
        moves
    }

    fn queue_of(&self, t: TaskId) -> Queue {
        let task = &self.tasks[t];
        if task.is_rt() {
            Queue::Realtime
        } else {
            Queue::Cpu(task.processor)
        }
    }

    /// The run list `q` and the tasks its links live in.
    fn list(&mut self, q: Queue) -> (&mut ListHead, &mut [Task]) {
        let list = match q {
            Queue::Cpu(c) => &mut self.rqs[c].list,
            Queue::Realtime => &mut self.rt,
        };
        (list, &mut self.tasks)
    }

    fn link_front(&mut self, q: Queue, t: TaskId) {
        let (list, tasks) = self.list(q);
        list.push_front(tasks, t);
        self.sync_scan(t);
    }

    fn link_back(&mut self, q: Queue, t: TaskId) {
        let (list, tasks) = self.list(q);
        list.push_back(tasks, t);
        self.sync_scan(t);
        // The old tail now links to `t`.
        self.sync_scan_link(self.tasks[t].prev);
    }

    fn unlink(&mut self, q: Queue, t: TaskId) {
        let prev = self.tasks[t].prev;
        let (list, tasks) = self.list(q);
        list.remove(tasks, t);
        self.sync_scan(t);
        // The task before it now links to the one after it.
        self.sync_scan_link(prev);
    }

    /// Copy task `t`'s walked fields into its [`ScanEntry`]: after every change of its
    /// counter, nice, yielded or running flag, address space or `next` link.
    #[inline]
    fn sync_scan(&mut self, t: TaskId) {
        self.scan[t] = ScanEntry::of(&self.tasks[t]);
    }

    /// [`Linux24Mq::sync_scan`] of the task a link names, if any.
    #[inline]
    fn sync_scan_link(&mut self, t: u32) {
        if t != NIL {
            self.sync_scan(t as usize);
        }
    }

    /// Every task's entry equals its fields (checked after each pick in this module's tests).
    #[cfg(test)]
    fn check_scan(&self) {
        for (t, task) in self.tasks.iter().enumerate() {
            assert_eq!(
                self.scan[t],
                ScanEntry::of(task),
                "task {t}'s scan entry is stale"
            );
        }
    }

    /// `add_to_runqueue`: to the head of its queue; a schedulable task better than the queue's
    /// cached maximum becomes the maximum.
    fn add_to_runqueue(&mut self, t: TaskId) {
        let q = self.queue_of(t);
        self.link_front(q, t);
        self.tasks[t].on_rq = true;
        if let Queue::Cpu(c) = q {
            let task = &self.tasks[t];
            let na = task.na_goodness();
            if !task.running && na > self.rqs[c].max_na_goodness {
                let allowed = task.allowed;
                let rq = &mut self.rqs[c];
                rq.max_na_goodness = na;
                rq.max_na_ptr = Some(t);
                rq.max_na_allowed = allowed;
            }
        }
    }

    /// `del_from_runqueue_update`: if `t` was its queue's cached maximum, the cache becomes the
    /// first schedulable task with positive na_goodness. Returns the entries walked.
    fn del_from_runqueue(&mut self, t: TaskId) -> usize {
        let q = self.queue_of(t);
        self.unlink(q, t);
        self.tasks[t].on_rq = false;
        let Queue::Cpu(c) = q else { return 0 };
        if self.rqs[c].max_na_ptr != Some(t) {
            return 0;
        }
        let mut walked = 0;
        let mut found = None;
        let mut i = self.rqs[c].list.head;
        while i != NIL {
            walked += 1;
            let task = &self.tasks[i as usize];
            if !task.running && task.na_goodness() > 0 {
                found = Some(i as usize);
                break;
            }
            i = task.next;
        }
        self.set_max_na(c, found);
        walked
    }

    /// Set `cpu`'s cached maximum to `t`'s na_goodness (or clear it).
    fn set_max_na(&mut self, cpu: CpuId, t: Option<TaskId>) {
        let (na, allowed) = match t {
            Some(t) => (self.tasks[t].na_goodness(), self.tasks[t].allowed),
            None => (NA_GOODNESS_INIT, CpuMask::EMPTY),
        };
        let rq = &mut self.rqs[cpu];
        rq.max_na_goodness = na;
        rq.max_na_ptr = t;
        rq.max_na_allowed = allowed;
    }

    /// Whether `cpu` runs its idle task with nothing queued for it.
    fn cpu_idle(m: &MachineView, cpu: CpuId) -> bool {
        m.curr[cpu].is_none() && m.nr_running[cpu] == 0
    }

    /// `preemption_goodness(curr of cpu, p, cpu)`: how much better p is than the running task.
    fn preemption_goodness(&self, cpu: CpuId, curr: TaskId, p: TaskId) -> i64 {
        let mm = Some(self.tasks[curr].mm);
        self.tasks[p].goodness(cpu, mm) - self.tasks[curr].goodness(cpu, mm)
    }

    /// The patch's `reschedule_idle(p)`: the CPU p should queue on and whether that CPU must
    /// reschedule.
    fn reschedule_idle(&self, m: &MachineView, p: TaskId) -> (CpuId, bool) {
        let task = &self.tasks[p];
        let tsk_cpu = task.processor;
        if task.allowed.contains(tsk_cpu) && Self::cpu_idle(m, tsk_cpu) {
            return (tsk_cpu, true);
        }
        let saved = task.na_goodness() - 1;
        // One value per CPU: on the stack for the machines of the seeds, on the heap past 64.
        let (mut stack, mut heap) = ([saved; 64], Vec::new());
        let list: &mut [i64] = if m.ncpus <= stack.len() {
            &mut stack[..m.ncpus]
        } else {
            heap.resize(m.ncpus, saved);
            &mut heap
        };
        let pool = self.pool_mask(m.ncpus, tsk_cpu);
        for (cpu, v) in list.iter_mut().enumerate() {
            if !task.allowed.contains(cpu) {
                continue;
            }
            if !pool.contains(cpu) {
                continue;
            }
            if Self::cpu_idle(m, cpu) {
                let idle_for = m.now.saturating_sub(self.rqs[cpu].last_schedule);
                // Longest idle first (the kernel: minus the cycles since its last schedule).
                *v = -(idle_for.min(i64::MAX as u64 / 2) as i64) - 1;
            } else if m.curr[cpu].is_some() {
                *v = self.rqs[cpu].curr_na_goodness
                    + if cpu != tsk_cpu {
                        PROC_CHANGE_PENALTY
                    } else {
                        0
                    };
            }
        }
        loop {
            let mut target = None;
            let mut min = saved;
            for (cpu, &v) in list.iter().enumerate() {
                if v < min {
                    min = v;
                    target = Some(cpu);
                }
            }
            let Some(cpu) = target else {
                // i1: no CPU of the pool will take it; the longest idle CPU outside does.
                return match self.idle_elsewhere(m, p, pool) {
                    Some(c) => (c, true),
                    None => (tsk_cpu, false),
                };
            };
            let ok = match m.curr[cpu] {
                None => cpu != tsk_cpu,
                // The own queue's lock is held: the try-lock branch fails there.
                Some(c) => self.preemption_goodness(cpu, c, p) > 1,
            };
            if ok {
                return (cpu, true);
            }
            list[cpu] = saved;
        }
    }

    /// With `idle=all`, the allowed idle CPU outside `pool` idle the longest, for `p`.
    fn idle_elsewhere(&self, m: &MachineView, p: TaskId, pool: CpuMask) -> Option<CpuId> {
        if !self.idle_all {
            return None;
        }
        (0..m.ncpus)
            .filter(|&c| !pool.contains(c) && self.tasks[p].allowed.contains(c))
            .filter(|&c| Self::cpu_idle(m, c))
            .min_by_key(|&c| (self.rqs[c].last_schedule, c))
    }

    /// `sys_sched_yield`'s nr_pending: runnable tasks not running anywhere.
    fn nr_pending(&self, ncpus: usize) -> usize {
        let mut n = self.rt.len;
        for rq in &self.rqs[..ncpus] {
            n += rq.list.len;
            n -= usize::from(rq.curr.is_some());
        }
        n
    }

    /// The global recalculation: every task, sleeping ones too.
    fn recalculate(&mut self, hz: u32) {
        for (t, e) in self.tasks.iter_mut().zip(&mut self.scan) {
            if !t.exited {
                t.counter = (t.counter >> 1) + nice_to_ticks(t.nice, hz);
                *e = ScanEntry::of(t);
            }
        }
    }

    /// One pass of schedule() up to the recalculation test: the chosen task (`None`: idle), its
    /// goodness as compared, the second-best local task, and whether the cache update is skipped.
    fn choose(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
        this_mm: Option<usize>,
        scan: &mut usize,
    ) -> (Option<TaskId>, i64, Option<TaskId>, bool) {
        let mut next = None;
        let mut c = IDLE_GOODNESS;
        if let Some(p) = prev {
            if self.tasks[p].allowed.contains(cpu) {
                c = self.tasks[p].goodness(cpu, this_mm);
                next = Some(p);
            }
        }
        let schedulable = |tasks: &[Task], n: Option<TaskId>| n.filter(|&n| !tasks[n].running);
        if prev.is_some_and(|p| self.tasks[p].is_rt()) || self.rt.len > 0 {
            let mut i = self.rt.head;
            while i != NIL {
                *scan += 1;
                let t = &self.tasks[i as usize];
                if !t.running && t.allowed.contains(cpu) {
                    let w = t.na_goodness();
                    if w > c {
                        c = w;
                        next = Some(i as usize);
                    }
                }
                i = t.next;
            }
            if next.is_some_and(|n| self.tasks[n].is_rt())
                && (self.rqs[cpu].max_na_goodness != NA_GOODNESS_INIT
                    || self.rqs[cpu].list.len == 0)
            {
                return (next, c, None, true);
            }
        }
        // The local queue. A realtime `next` is running-to-be (has_cpu is set when chosen).
        let mut prev_next = None;
        let mut prev_next_w = IDLE_GOODNESS;
        let next_is_rt = |tasks: &[Task], n: Option<TaskId>| n.is_some_and(|n| tasks[n].is_rt());
        let mut i = self.rqs[cpu].list.head;
        while i != NIL {
            *scan += 1;
            let t = self.scan[i as usize];
            if t.weight != SCAN_RUNNING {
                let w = t.local_goodness(this_mm);
                if w > c {
                    // prev_next must be a schedulable task (not prev, not a realtime pick).
                    if !next_is_rt(&self.tasks, next) {
                        if let Some(n) = schedulable(&self.tasks, next) {
                            prev_next = Some(n);
                            prev_next_w = c;
                        }
                    }
                    c = w;
                    next = Some(i as usize);
                } else if w > prev_next_w {
                    prev_next_w = w;
                    prev_next = Some(i as usize);
                }
            }
            i = t.next;
        }
        if next_is_rt(&self.tasks, next) {
            return (next, c, prev_next, false);
        }
        // The remote queues' cached maxima, against the local best plus the affinity boost.
        if c > 0 {
            c += PROC_CHANGE_PENALTY;
        }
        let mut best = None;
        let mut best_na = c;
        let ncpus = self.rqs.len();
        // Within the pool; a CPU about to go idle looks at every pool with idle=all.
        let pool = if self.idle_all && next.is_none() {
            0..ncpus
        } else {
            self.pool_range(ncpus, cpu)
        };
        for r in pool {
            let rq = &self.rqs[r];
            if r == cpu {
                continue;
            }
            *scan += 1;
            if rq.max_na_allowed.contains(cpu) && rq.max_na_goodness > best_na {
                best_na = rq.max_na_goodness;
                best = Some(r);
            }
        }
        if let Some(r) = best {
            let stolen = self.rqs[r]
                .max_na_ptr
                .expect("a cached maximum names its task");
            if let Some(n) = schedulable(&self.tasks, next) {
                prev_next = Some(n);
            }
            c = best_na;
            *scan += self.del_from_runqueue(stolen);
            self.tasks[stolen].processor = cpu;
            self.add_to_runqueue(stolen);
            next = Some(stolen);
        }
        (next, c, prev_next, false)
    }
}

impl Policy for Linux24Mq {
    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), PolicyError> {
        check_class_knobs(
            NAME,
            group,
            knobs,
            ACCEPTED,
            |p| missing_linux_class((2, 4, 7), p),
            "2.4 timeslices come from nice: NICE_TO_TICKS",
        )
    }

    fn check_cpus(&self, cpus: usize) -> Result<(), PolicyError> {
        if self.pools > cpus || !cpus.is_multiple_of(self.pools) {
            return Err(PolicyError::NotAccepted {
                param: "pools",
                value: self.pools.to_string(),
                accepted: format!(
                    "a number of pools that divides the {cpus} CPUs ({})",
                    (1..=cpus)
                        .filter(|k| cpus.is_multiple_of(*k))
                        .map(|k| k.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        Ok(())
    }

    fn task_fork(
        &mut self,
        m: &MachineView,
        child: TaskId,
        parent: TaskId,
        _parent_cpu: CpuId,
    ) -> Option<CpuId> {
        // do_fork: p->processor = current->processor; wake_up_process(p) → reschedule_idle.
        let from = self.tasks[parent].processor;
        if self.tasks[child].allowed.contains(from) {
            self.tasks[child].processor = from;
        }
        let (cpu, resched) = self.reschedule_idle(m, child);
        self.resched = resched.then_some((child, cpu));
        Some(cpu)
    }

    fn balance(&mut self, m: &MachineView, _cpu: CpuId, kind: BalanceKind) -> Vec<Move> {
        if !self.balance
            || self.pools < 2
            || kind != BalanceKind::Periodic
            || m.now < self.next_balance
        {
            return Vec::new();
        }
        self.next_balance = m.now + self.interval_ns;
        self.rebalance(m)
    }

    fn task_new(&mut self, m: &MachineView, setup: &TaskSetup) {
        self.ensure_rqs(m.ncpus);
        let rt = match setup.sched_policy() {
            SchedPolicy::Fifo(p) => Some((i64::from(p), false)),
            SchedPolicy::Rr(p) => Some((i64::from(p), true)),
            _ => None,
        };
        let nice = setup.nice();
        let task = Task {
            counter: nice_to_ticks(nice, m.hz),
            nice,
            rt,
            mm: setup.group,
            allowed: setup.allowed,
            processor: setup.allowed.lowest().unwrap_or(0),
            yielded: false,
            running: false,
            on_rq: false,
            exited: false,
            next: NIL,
            prev: NIL,
        };
        if self.tasks.len() <= setup.id {
            self.tasks.resize(setup.id + 1, task.clone());
            self.scan.resize(setup.id + 1, ScanEntry::of(&task));
        }
        self.tasks[setup.id] = task;
        self.sync_scan(setup.id);
    }

    fn select_task_rq(
        &mut self,
        m: &MachineView,
        task: TaskId,
        _prev: CpuId,
        _waker: Option<CpuId>,
    ) -> CpuId {
        let (cpu, resched) = self.reschedule_idle(m, task);
        self.resched = resched.then_some((task, cpu));
        cpu
    }

    fn enqueue_task(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId, _kind: EnqueueKind) {
        self.tasks[task].processor = cpu;
        self.add_to_runqueue(task);
    }

    fn dequeue_task(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId, kind: DequeueKind) {
        self.del_from_runqueue(task);
        let t = &mut self.tasks[task];
        t.running = false;
        t.exited = kind == DequeueKind::Exit;
        let mm = t.mm;
        self.sync_scan(task);
        let rq = &mut self.rqs[cpu];
        rq.curr = None;
        rq.prev = None;
        rq.last_mm = Some(mm);
    }

    fn wakeup_preempt(
        &mut self,
        _m: &MachineView,
        cpu: CpuId,
        _curr: TaskId,
        woken: TaskId,
    ) -> bool {
        self.resched.take() == Some((woken, cpu))
    }

    fn pick_next_task(&mut self, m: &MachineView, cpu: CpuId) -> Option<TaskId> {
        let prev = self.rqs[cpu].prev.take();
        let prev_task = prev.map(|(t, _)| t);
        let this_mm = prev_task
            .map(|t| self.tasks[t].mm)
            .or(self.rqs[cpu].last_mm);
        if let Some(p) = prev_task {
            // Move an exhausted SCHED_RR task to the end of the realtime list.
            let t = &mut self.tasks[p];
            if matches!(t.rt, Some((_, true))) && t.counter == 0 {
                t.counter = nice_to_ticks(t.nice, m.hz);
                self.sync_scan(p);
                self.unlink(Queue::Realtime, p);
                self.link_back(Queue::Realtime, p);
            }
        }
        let mut scan = 0;
        let mut round = 0;
        let (next, prev_next, skip_cache) = loop {
            let (next, c, prev_next, skip_cache) = self.choose(cpu, prev_task, this_mm, &mut scan);
            if c == 0 && round == 0 {
                self.recalculate(m.hz);
                scan += self.tasks.len();
                round += 1;
                continue;
            }
            break (next, prev_next, skip_cache);
        };
        if !skip_cache {
            self.set_max_na(cpu, prev_next);
        }
        let yielded = prev_task.is_some_and(|p| self.tasks[p].yielded);
        if let Some(p) = prev_task {
            self.tasks[p].yielded = false;
            self.tasks[p].running = false;
            self.sync_scan(p);
        }
        let rq = &mut self.rqs[cpu];
        rq.scan = scan;
        rq.tail = match prev {
            Some((p, PutPrevKind::Preempted)) if next != Some(p) && !yielded => Some(p),
            _ => None,
        };
        if next != prev_task {
            rq.last_schedule = m.now;
        }
        rq.curr = next;
        match next {
            Some(n) => {
                let t = &mut self.tasks[n];
                t.running = true;
                t.processor = cpu;
                let (na, mm) = (t.na_goodness(), t.mm);
                self.sync_scan(n);
                let rq = &mut self.rqs[cpu];
                rq.curr_na_goodness = na;
                rq.last_mm = Some(mm);
            }
            None => self.rqs[cpu].curr_na_goodness = NA_GOODNESS_INIT,
        }
        #[cfg(test)]
        self.check_scan();
        next
    }

    fn last_scan_len(&self, cpu: CpuId) -> usize {
        self.rqs[cpu].scan
    }

    fn picks_scan(&self) -> bool {
        true
    }

    fn put_prev_task(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId, kind: PutPrevKind) {
        // It stays on its run list with has_cpu set until schedule() has chosen.
        let rq = &mut self.rqs[cpu];
        rq.prev = Some((task, kind));
        rq.curr = None;
    }

    fn schedule_tail(&mut self, m: &MachineView, cpu: CpuId, prev: TaskId) -> Option<Move> {
        if self.rqs[cpu].tail.take() != Some(prev) || !self.tasks[prev].on_rq {
            return None;
        }
        let (target, resched) = self.reschedule_idle(m, prev);
        if target == self.tasks[prev].processor {
            return None;
        }
        self.del_from_runqueue(prev);
        self.tasks[prev].processor = target;
        self.add_to_runqueue(prev);
        self.resched = resched.then_some((prev, target));
        Some(Move {
            task: prev,
            from: cpu,
            to: target,
        })
    }

    fn update_curr(&mut self, _m: &MachineView, _cpu: CpuId, _task: TaskId, _delta_ns: u64) {}

    fn charges_runtime(&self) -> bool {
        false
    }

    fn task_tick(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId) -> bool {
        let t = &mut self.tasks[task];
        t.counter -= 1;
        let expired = t.counter <= 0;
        if expired {
            t.counter = 0;
        }
        let na = t.na_goodness();
        self.sync_scan(task);
        let rq = &mut self.rqs[cpu];
        if rq.curr_na_goodness != NA_GOODNESS_INIT {
            rq.curr_na_goodness = na;
        }
        expired
    }

    fn yield_task(&mut self, m: &MachineView, _cpu: CpuId, task: TaskId) -> bool {
        if self.nr_pending(m.ncpus) == 0 {
            return false; // sys_sched_yield: nothing pending, no schedule()
        }
        if !self.tasks[task].is_rt() {
            self.tasks[task].yielded = true;
        }
        let q = self.queue_of(task);
        self.unlink(q, task);
        self.link_back(q, task);
        true
    }

    fn lock_domain(&self, cpu: CpuId) -> usize {
        cpu
    }

    fn idle_ticks(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{nice, policy, spec, Harnessed, ALL, H};

    impl Harnessed for Linux24Mq {
        const REPORTS: bool = true;
        fn cpu_state(&self, cpu: CpuId) -> (Option<TaskId>, usize) {
            let queued = self
                .tasks
                .iter()
                .filter(|t| t.on_rq && t.processor == cpu)
                .count();
            (self.rqs.get(cpu).and_then(|rq| rq.curr), queued)
        }
    }

    /// The MQ scheduler on `ncpus` CPUs at HZ 100.
    fn mqh(ncpus: usize) -> H<Linux24Mq> {
        H::new("linux24-mq", 100, ncpus)
    }

    impl H<Linux24Mq> {
        /// Set task `id`'s counter (and the walk's copy of it).
        fn set_counter(&mut self, id: TaskId, counter: i64) {
            self.p.tasks[id].counter = counter;
            self.p.sync_scan(id);
        }
        /// A new task run on `cpu`.
        fn run_on(&mut self, id: TaskId, cpu: CpuId, knobs: Knobs) {
            self.spawn_on(id, cpu, knobs);
            assert_eq!(self.pick(cpu), Some(id));
        }
        /// Wake `id` on its last CPU's side (no waker): the CPU and whether it must reschedule.
        fn wake(&mut self, id: TaskId) -> (CpuId, bool) {
            let prev = self.p.tasks[id].processor;
            let (cpu, preempts) = self.wake_up(id, prev, None, 0);
            (cpu, preempts.unwrap_or(true))
        }
        fn task(&mut self, id: TaskId) -> &mut Task {
            &mut self.p.tasks[id]
        }
        fn max_na(&self, cpu: CpuId) -> (i64, Option<TaskId>) {
            (self.p.rqs[cpu].max_na_goodness, self.p.rqs[cpu].max_na_ptr)
        }
    }

    #[test]
    fn nice_to_ticks_follows_tick_scale() {
        assert_eq!(
            [0, -20, 19].map(|n| nice_to_ticks(n, 100)),
            [6, 11, 1],
            "HZ=100: x>>2"
        );
        assert_eq!([0, -20, 19].map(|n| nice_to_ticks(n, 250)), [11, 21, 1]);
        assert_eq!([0, -20, 19].map(|n| nice_to_ticks(n, 1000)), [41, 81, 3]);
    }

    #[test]
    fn na_goodness_is_goodness_without_affinity_terms() {
        let mut h = mqh(2);
        h.task_new(0, 0, Knobs::default(), ALL);
        let t = h.task(0).clone();
        assert_eq!(t.counter, 6);
        assert_eq!(t.na_goodness(), 26);
        assert_eq!(t.goodness(0, Some(0)), 26 + PROC_CHANGE_PENALTY + 1);
        assert_eq!(t.goodness(0, Some(7)), 26 + PROC_CHANGE_PENALTY);
        assert_eq!(t.goodness(1, Some(7)), 26);
        let local = |t: &Task, mm| ScanEntry::of(t).local_goodness(mm);
        assert_eq!(local(&t, Some(0)), 27, "local_goodness: mm only");
        assert_eq!(local(&t, Some(7)), 26);
        assert_eq!(local(&t, None), 26);
        let mut y = t.clone();
        y.yielded = true;
        assert_eq!((y.na_goodness(), y.goodness(0, Some(0))), (-1, -1));
        assert_eq!(local(&y, Some(0)), -1);
        let mut spent = t.clone();
        spent.counter = 0;
        assert_eq!((spent.na_goodness(), spent.goodness(0, Some(0))), (0, 0));
        assert_eq!(local(&spent, Some(0)), 0);
        let mut running = t.clone();
        running.running = true;
        assert_eq!(
            ScanEntry::of(&running).weight,
            SCAN_RUNNING,
            "the walk skips it"
        );
        h.task_new(1, 0, policy(SchedPolicy::Fifo(10)), ALL);
        let rt = h.task(1).clone();
        assert_eq!((rt.na_goodness(), rt.goodness(1, None)), (1010, 1010));
        h.task_new(2, 0, nice(-20), ALL);
        assert_eq!(h.task(2).na_goodness(), 11 + 40);
    }

    #[test]
    fn steals_only_a_strictly_better_remote_task() {
        // CPU 0 has a local task L (nice 19, counter 1: local goodness 2, +15 against remotes:
        // 17); CPU 1 has R queued (nice 5, na = counter + 15), cached as its max_na_goodness.
        for (r_counter, steal) in [(3, true), (2, false), (1, false)] {
            let mut h = mqh(2);
            h.task_new(0, 0, nice(19), ALL);
            h.set_counter(0, 1);
            h.with(|p, m| p.enqueue_task(m, 0, 0, EnqueueKind::New));
            h.task_new(1, 0, nice(5), ALL);
            h.set_counter(1, r_counter);
            h.with(|p, m| p.enqueue_task(m, 1, 1, EnqueueKind::New));
            let r_na = h.task(1).na_goodness();
            assert_eq!(h.max_na(1), (r_na, Some(1)));
            let next = h.pick(0);
            assert_eq!(
                next,
                Some(if steal { 1 } else { 0 }),
                "remote {r_na} vs local 2 + 15"
            );
            assert_eq!(
                h.p.last_scan_len(0),
                2,
                "one local task, one remote maximum"
            );
            if steal {
                assert_eq!(h.task(1).processor, 0, "the stolen task joins CPU 0");
                assert_eq!(
                    h.max_na(1),
                    (NA_GOODNESS_INIT, None),
                    "CPU 1's cache empties"
                );
                assert_eq!(h.max_na(0), (2, Some(0)), "L is CPU 0's best schedulable");
            } else {
                assert_eq!(h.max_na(1), (r_na, Some(1)));
                assert_eq!(h.task(1).processor, 1);
            }
        }
        // An idle CPU steals any cached task, unless its cpus_allowed excludes the CPU.
        let mut h = mqh(2);
        h.spawn_on(0, 1, nice(19));
        assert_eq!(h.pick(0), Some(0));
        let mut h = mqh(2);
        h.task_new(0, 0, Knobs::default(), ALL);
        h.task(0).allowed = CpuMask::from_bits(0b10);
        h.with(|p, m| p.enqueue_task(m, 1, 0, EnqueueKind::New));
        assert_eq!(h.pick(0), None);
    }

    #[test]
    fn cached_max_na_goodness_follows_pick_enqueue_and_dequeue() {
        let mut h = mqh(2);
        h.spawn_on(0, 0, nice(0)); // na 26
        assert_eq!(h.max_na(0), (26, Some(0)));
        h.spawn_on(1, 0, nice(5)); // 4 ticks: na 19, not better
        h.spawn_on(2, 0, nice(10)); // 3 ticks: na 13
        assert_eq!(h.max_na(0), (26, Some(0)));
        // Picking the best leaves the second best cached.
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.max_na(0), (19, Some(1)));
        // A better arrival takes the cache.
        h.spawn_on(3, 0, nice(-4)); // 7 ticks: na 31
        assert_eq!(h.max_na(0), (31, Some(3)));
        // CPU 1 steals it; the cache becomes the FIRST schedulable task (list order 2, 1, 0),
        // the patch's "good enough approximation", not the best.
        assert_eq!(h.pick(1), Some(3));
        assert_eq!(h.max_na(0), (13, Some(2)));
        // The running task blocking leaves the cache alone.
        h.sleep(0);
        assert_eq!(h.max_na(0), (13, Some(2)));
        // The next pick takes the best (1) and caches the rest (2).
        assert_eq!(h.pick(0), Some(1));
        assert_eq!(h.max_na(0), (13, Some(2)));
    }

    #[test]
    fn reschedule_idle_prefers_prev_then_idle_then_lowest_na_goodness() {
        // The task's last CPU is idle: it goes there.
        let mut h = mqh(4);
        h.task_new(9, 0, Knobs::default(), ALL);
        h.task(9).processor = 2;
        assert_eq!(h.wake(9), (2, true));

        // Its CPU is busy, CPU 3 idle (the others busy): CPU 3.
        let mut h = mqh(4);
        for c in 0..3 {
            h.run_on(c, c, Knobs::default());
        }
        h.task_new(9, 0, Knobs::default(), ALL);
        assert_eq!(h.wake(9), (3, true));

        // Two idle CPUs: the one idle longest.
        let mut h = mqh(4);
        h.run_on(0, 0, Knobs::default());
        h.run_on(1, 1, Knobs::default());
        h.now = 5_000_000;
        h.run_on(2, 2, Knobs::default());
        h.sleep(2);
        h.pick(2); // CPU 2 went idle at 5 ms, CPU 3 has been idle since 0
        h.now = 6_000_000;
        h.task_new(9, 0, Knobs::default(), ALL);
        assert_eq!(h.wake(9), (3, true));

        // No idle CPU: the one whose current task has the lowest na_goodness (plus
        // PROC_CHANGE_PENALTY away from the task's CPU) below na_goodness(p) − 1.
        let mut h = mqh(4);
        h.run_on(0, 0, nice(0)); // p's CPU: 26
        h.run_on(1, 1, nice(19)); // 1 tick: 2 + 15 = 17, the lowest
        h.run_on(2, 2, nice(10)); // 13 + 15 = 28
        h.run_on(3, 3, nice(0)); // 26 + 15 = 41
        h.task_new(9, 0, nice(-4), ALL); // na 31: CPUs below 30 qualify
        assert_eq!(h.wake(9), (1, true));
        assert_eq!(h.task(9).processor, 1);

        // Every CPU runs something at least as good: p joins its own CPU and preempts nothing.
        let mut h = mqh(4);
        for c in 0..4 {
            h.run_on(c, c, nice(0));
        }
        h.task_new(9, 0, nice(10), ALL); // na 13
        assert_eq!(h.wake(9), (0, false));
    }

    #[test]
    fn recalculation_is_global_when_the_best_goodness_is_zero() {
        let mut h = mqh(2);
        h.run_on(0, 0, Knobs::default());
        h.spawn_on(1, 1, nice(19));
        assert_eq!(h.pick(1), Some(1));
        h.set_counter(1, 4);
        h.sleep(1); // a sleeper with counter 4
        let ticks = (1..=20).find(|_| h.tick(0)).unwrap();
        assert_eq!(ticks, 6, "nice 0 runs NICE_TO_TICKS(0) = 6 ticks at HZ=100");
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.task(0).counter, 6, "0/2 + 6");
        assert_eq!(
            h.task(1).counter,
            4 / 2 + 1,
            "the sleeper too: 4/2 + NICE_TO_TICKS(19)"
        );
        // Two passes over the queue and the remote maxima, plus every task.
        assert_eq!(h.p.last_scan_len(0), 2 * (1 + 1) + 2);
        // Without a spent best, no recalculation.
        h.put_prev(0, PutPrevKind::Preempted);
        h.pick(0);
        assert_eq!(h.task(1).counter, 3);
    }

    #[test]
    fn yield_goes_behind_the_queue_for_one_pick() {
        let mut h = mqh(1);
        h.run_on(0, 0, Knobs::default());
        // Nothing else runnable: sys_sched_yield returns at once (the machine keeps the task
        // current); the task is then put back as after the yield's schedule().
        h.with(|p, m| {
            assert!(!p.yield_task(m, 0, 0), "nothing pending: no schedule()");
            p.put_prev_task(m, 0, 0, PutPrevKind::Yielded);
        });
        assert!(!h.task(0).yielded, "nothing else runnable: no SCHED_YIELD");
        assert_eq!(h.pick(0), Some(0));
        h.spawn_on(1, 0, nice(19)); // worse, but the yielder's goodness is −1
        h.put_prev(0, PutPrevKind::Yielded);
        assert!(h.task(0).yielded);
        assert_eq!(h.p.rqs[0].list.tail, 0, "moved to the end of its queue");
        assert_eq!(h.pick(0), Some(1));
        assert!(!h.task(0).yielded, "cleared once schedule() is done");
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(0), "the better task again");
    }

    #[test]
    fn realtime_tasks_use_the_global_queue_and_preempt() {
        let mut h = mqh(2);
        h.run_on(0, 0, Knobs::default());
        h.run_on(1, 1, nice(5));
        h.task_new(9, 0, policy(SchedPolicy::Rr(5)), ALL);
        let (cpu, resched) = h.wake(9);
        // 1005 beats both; its own CPU's 26 is below CPU 1's 19 + 15.
        assert_eq!((cpu, resched), (0, true));
        assert_eq!(h.p.rt.len, 1);
        assert_eq!(
            h.p.rqs[0].list.len + h.p.rqs[1].list.len,
            2,
            "not on a CPU queue"
        );
        // Any CPU scanning the realtime queue takes it, whichever CPU it was queued for.
        h.put_prev(1, PutPrevKind::Preempted);
        assert_eq!(h.pick(1), Some(9));
        assert_eq!(h.task(9).processor, 1);
        assert_eq!(h.p.rqs[1].curr_na_goodness, 1005);
        // A running realtime task is not preempted by a SCHED_OTHER wakeup.
        h.task_new(10, 0, nice(-20), ALL);
        h.task(10).allowed = CpuMask::from_bits(0b10);
        h.task(10).processor = 1;
        assert_eq!(h.wake(10), (1, false));
    }

    #[test]
    fn a_preempted_task_moves_to_an_idle_cpu_at_schedule_tail() {
        let mut h = mqh(2);
        h.run_on(0, 0, Knobs::default());
        h.set_counter(0, 1);
        h.spawn_on(1, 0, nice(-20)); // beats 0 by more than PROC_CHANGE_PENALTY locally
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(1));
        let mv = h.with(|p, m| p.schedule_tail(m, 0, 0));
        assert_eq!(
            mv,
            Some(Move {
                task: 0,
                from: 0,
                to: 1
            })
        );
        assert_eq!(h.max_na(1), (h.task(0).na_goodness(), Some(0)));
        assert_eq!(h.pick(1), Some(0));
    }

    #[test]
    fn lock_domain_is_per_cpu() {
        let h = mqh(8);
        for c in 0..8 {
            assert_eq!(h.p.lock_domain(c), c);
        }
        assert!(h.p.idle_ticks());
    }

    #[test]
    fn rejects_knobs_and_parameters_it_has_no_notion_of() {
        let h = mqh(1);
        assert_eq!(spec("linux24-mq").describe(), "linux24-mq");
        assert!(PolicySpec::new(&DEF, vec![("colour".into(), "1".into())]).is_err());
        for (k, what) in [
            (policy(SchedPolicy::Batch), "policy=batch"),
            (policy(SchedPolicy::Idle), "policy=idle"),
            (
                Knobs {
                    slice_ns: Some(300_000),
                    ..Knobs::default()
                },
                "slice=300.000us",
            ),
        ] {
            let e = h.p.check_knobs("g", &k).unwrap_err().to_string();
            assert!(e.contains("'g'") && e.contains(what), "{e}");
        }
        let dl: SchedPolicy = "deadline:1ms/10ms/10ms".parse().unwrap();
        assert!(h.p.check_knobs("g", &policy(dl)).is_err());
        for ok in [
            nice(-5),
            policy(SchedPolicy::Fifo(3)),
            policy(SchedPolicy::Rr(99)),
        ] {
            assert!(h.p.check_knobs("g", &ok).is_ok());
        }
    }

    /// Seed 002's point: MQ's schedule() cost does not grow with the number of yielding threads
    /// the way the single run list's does. 8 CPUs, 16 vs 1024 threads.
    #[test]
    fn yield_cost_barely_grows_with_threads() {
        use crate::cost::CostModel;
        use schedlab_workload::presets::Yield;
        use schedlab_workload::Workload;
        use std::time::Duration;
        let spec = spec("linux24-mq");
        let cost = CostModel::profile("piii-700").unwrap();
        let us_per_yield = |threads: usize| {
            let w = Yield {
                threads,
                duration: Duration::from_millis(200),
            };
            let r = crate::run_repetition(
                &w,
                crate::SimSetup::new(&spec, 8, &cost, &[Knobs::default()]),
            )
            .unwrap();
            w.metrics(&r.outcome).unwrap()["us_per_yield"]
        };
        let (few, many) = (us_per_yield(16), us_per_yield(1024));
        assert!(many < 3.0 * few, "16 threads: {few} us/yield, 1024: {many}");
    }
}
