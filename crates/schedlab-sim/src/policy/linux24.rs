//! `linux24` — the Linux 2.4 scheduler: one run list and one lock for all CPUs, `goodness()`
//! evaluated for every runnable task at every `schedule()`, counter/nice timeslices, and
//! `reschedule_idle()` choosing where a woken task runs.
//!
//! Follows Linux 2.4.17 kernel/sched.c (github rickgaiser/linux-2.4.17-ps2; the generic code, not
//! its CONFIG_RTSCHED variant), kernel/timer.c `update_process_times` and
//! include/asm-i386/smp.h (names below are its functions and macros):
//! - `runqueue_head` / `runqueue_lock`: one list for all CPUs ([`Policy::lock_domain`] is 0 for
//!   every CPU, so the machine makes the CPUs wait for each other); `add_to_runqueue` puts a woken
//!   task at the head of the list, `move_last_runqueue` moves a yielding task (and an exhausted
//!   SCHED_RR task) to its end;
//! - `goodness(p, cpu, mm)`: −1 for a task that just yielded (`SCHED_YIELD`), 0 when `counter` is
//!   0, 1000 + `rt_priority` for SCHED_FIFO/RR, else `counter + 20 − nice`, plus
//!   `PROC_CHANGE_PENALTY` (15) on the CPU the task last ran on (SMP only) and 1 when it shares the
//!   previous task's mm;
//! - `schedule()`: walks the whole run list and takes the first task of highest goodness among
//!   those allowed on this CPU and not running elsewhere (`can_schedule`); when that best goodness
//!   is 0, every task in the system — sleeping ones too (`for_each_task`) — gets
//!   `counter = counter / 2 + NICE_TO_TICKS(nice)` and the walk is repeated.
//!   [`Policy::last_scan_len`] reports every list entry walked plus every task recalculated, which
//!   the cost model charges while the one lock is held;
//! - `NICE_TO_TICKS(nice) = TICK_SCALE(20 − nice) + 1`, TICK_SCALE by the machine's HZ (at HZ 100:
//!   `x >> 2`, so nice 0 → 6 ticks, −20 → 11, 19 → 1);
//! - `update_process_times`: each tick takes one off the running task's counter — SCHED_FIFO's
//!   too — and at 0 asks for a reschedule;
//! - `sys_sched_yield`: when other runnable tasks are waiting (`nr_pending`), a SCHED_OTHER task
//!   is flagged SCHED_YIELD for the next pick and moved to the end of the list; otherwise nothing
//!   happens (no schedule()); the flag is cleared after that pick (`__schedule_tail`);
//! - `reschedule_idle(p)`: UP — preempt the current task iff `preemption_goodness` > 0; SMP —
//!   p's last CPU if it is idle, else the idle CPU idle longest (`last_schedule`), else the CPU
//!   whose current task has the largest positive `preemption_goodness`, else none (p waits on the
//!   list). Implemented in `select_task_rq` (the CPU chosen) and `wakeup_preempt`;
//! - SCHED_RR: an exhausted counter is refilled with NICE_TO_TICKS and the task goes to the end
//!   of the list (start of `schedule()`).
//!
//! The pieces shared with the other 2.4-era policies are exported to them: `PROC_CHANGE_PENALTY`,
//! `nice_to_ticks`, `goodness`, and [`Sched24`], the 2.4 machinery generic over the run
//! list ([`RunList`]; `linux24-prio` plugs in its 33 lists).
//!
//! Simplifications:
//! - mm: tasks of the same workload group are treated as sharing one mm (the +1 bonus). That is
//!   exact when a group is hosted as threads of one process, and generous when its tasks are
//!   separate processes. An idle CPU keeps the mm of the last task it ran (lazy TLB).
//! - New tasks start with a full counter, NICE_TO_TICKS(nice): there is no parent whose counter
//!   do_fork would halve. They count as having last run on their allowed CPUs in turn (by task
//!   id), where do_fork would give them all the parent's CPU: with every task "on" one CPU, the
//!   other CPUs' first picks take any task and the affinity terms only settle once every task has
//!   run — a start-up transient of the simulator's instant release, not of the steady state.
//! - Tasks running on a CPU are kept out of the scanned vector; the scan length still counts them,
//!   as the kernel walks past them (`can_schedule` fails). List order is kept as a sequence key per
//!   task (head insertions count down, tail insertions up), so the vector can swap-remove: ties go
//!   to the task nearer the head, as in the kernel's walk.
//! - reschedule_idle on SMP: an idle CPU already chosen for a woken task and not yet through
//!   schedule() counts as running that task. The kernel would choose the same idle CPU again until
//!   it ran; the simulator releases a workload's tasks in one instant, which would otherwise send
//!   them all to one CPU.
//! - `__schedule_tail`'s reschedule_idle(prev) for a preempted task is modelled through
//!   [`Policy::schedule_tail`], without charging its lock hold. Synchronous wakeups
//!   (`wake_up_sync`, which skip reschedule_idle) are not modelled.
//! - No hyper-threading sibling rule in reschedule_idle, no CONFIG_PREEMPT (2.4.17 had none: the
//!   machine applies a reschedule at the waker's system-call return or after an IPI, as 2.4 did
//!   for user tasks).

use super::*;
use schedlab_workload::knobs::{Knobs, SchedPolicy};

/// `PROC_CHANGE_PENALTY` (include/asm-i386/smp.h): the goodness bonus of the CPU a task last ran
/// on, which keeps tasks on their cache-warm CPU.
pub(super) const PROC_CHANGE_PENALTY: i64 = 15;

/// The knobs the 2.4 policies accept.
pub(super) const ACCEPTED: &str = "policy=other|fifo:1..99|rr:1..99, nice=-20..19, cpus=LIST";

/// `NICE_TO_TICKS(nice)`: a task's timeslice in ticks, `TICK_SCALE(20 − nice) + 1`, with
/// TICK_SCALE chosen by HZ as in 2.4 kernel/sched.c (`>> 2` below 200, `>> 1` below 400, × 1 below
/// 800, `<< 1` below 1600, `<< 2` above).
pub(super) fn nice_to_ticks(nice: i32, hz: u32) -> i64 {
    let x = i64::from(20 - nice.clamp(-20, 19));
    let scaled = match hz {
        0..200 => x >> 2,
        200..400 => x >> 1,
        400..800 => x,
        800..1600 => x << 1,
        _ => x << 2,
    };
    scaled + 1
}

/// 2.4's `goodness()` from plain values: `yielded` (SCHED_YIELD set) → −1; a real-time task
/// (`rt_priority` is `Some`) → 1000 + rt_priority; a SCHED_OTHER task with `counter` 0 → 0; else
/// `counter + 20 − nice`, + [`PROC_CHANGE_PENALTY`] if `same_cpu` (the task last ran on the CPU
/// that schedules; pass false on a UP kernel, which has no such term), + 1 if `same_mm` (it shares
/// the mm of the task the CPU ran last).
pub(super) fn goodness(
    counter: i64,
    nice: i32,
    rt_priority: Option<u32>,
    yielded: bool,
    same_cpu: bool,
    same_mm: bool,
) -> i64 {
    if yielded {
        return -1;
    }
    if let Some(rt) = rt_priority {
        return 1000 + i64::from(rt);
    }
    if counter <= 0 {
        return 0;
    }
    counter + 20 - i64::from(nice)
        + if same_cpu { PROC_CHANGE_PENALTY } else { 0 }
        + i64::from(same_mm)
}

/// A 2.4 task's scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class24 {
    /// SCHED_OTHER.
    Other,
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
}

/// The 2.4 fields of `struct task_struct`. The picks walk `Entry` copies instead; the fields
/// goodness reads still come first and the struct starts a cache line (`repr(C)` keeps the
/// order), so that reschedule_idle's goodness and the filing of an entry touch one line per
/// task — the first word of `allowed` (CPUs 0..64) included — instead of two with the 128-byte
/// CPU mask in between.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Task24 {
    /// Ticks left of its timeslice (`counter`).
    pub counter: i64,
    /// Its place in the run list's order: smaller is nearer the head.
    pub order: i64,
    /// The CPU it last ran on (`processor`).
    pub processor: CpuId,
    /// Its mm: the workload group.
    pub mm: usize,
    /// Nice value.
    pub nice: i32,
    /// `rt_priority` (0 for SCHED_OTHER).
    pub rt_priority: u32,
    /// Policy.
    pub class: Class24,
    /// Not yet exited (counted by the recalculation's `for_each_task`).
    pub live: bool,
    /// reschedule_idle chose to preempt the busy CPU it returned for this wakeup.
    pub preempt: bool,
    /// CPUs it may run on (`cpus_allowed`).
    pub allowed: CpuMask,
}

// Goodness's fields and the first word of `allowed` share the task's first cache line.
const _: () = assert!(std::mem::offset_of!(Task24, allowed) + 8 <= 64);

impl Task24 {
    /// `rt_priority` for a real-time task, `None` for SCHED_OTHER.
    pub fn rt(&self) -> Option<u32> {
        (self.class != Class24::Other).then_some(self.rt_priority)
    }
    /// goodness(p, cpu, mm) as `schedule()` on `cpu` sees it after running a task of `mm`.
    #[inline]
    pub fn goodness(&self, cpu: CpuId, mm: Option<usize>, yielded: bool, smp: bool) -> i64 {
        goodness(
            self.counter,
            self.nice,
            self.rt(),
            yielded,
            smp && self.processor == cpu,
            mm == Some(self.mm),
        )
    }
    /// The goodness without the CPU and mm terms: `counter + 20 − nice` (0 when counter is 0),
    /// 1000 + rt_priority for a real-time task.
    pub fn static_goodness(&self) -> i64 {
        goodness(self.counter, self.nice, self.rt(), false, false, false)
    }
}

/// What a pick needs besides the tasks: who schedules, and what the CPU ran last.
#[derive(Clone, Copy, Debug)]
pub struct Scan {
    /// The CPU that schedules.
    pub cpu: CpuId,
    /// The mm of the task it ran last (`prev->active_mm`).
    pub mm: Option<usize>,
    /// The task that just called sched_yield on this CPU (SCHED_YIELD set), if any.
    pub yielding: Option<TaskId>,
    /// More than one CPU (PROC_CHANGE_PENALTY exists only on SMP kernels).
    pub smp: bool,
    /// The largest `counter + 20 − nice` any task can reach at this HZ.
    pub max_static: i64,
}

impl Scan {
    /// The goodness of `t` for this pick.
    #[inline]
    pub fn weight(&self, id: TaskId, t: &Task24) -> i64 {
        t.goodness(self.cpu, self.mm, self.yielding == Some(id), self.smp)
    }
}

/// A probe's "none" (UP: no CPU term; no mm; no task yielding): no entry field equals it.
const PROBE_NONE: u32 = u32::MAX;
/// An entry's CPU and mm when no bonus applies: no probe field equals it.
const ENTRY_NONE: u32 = u32::MAX - 1;

/// A [`Scan`] in the form an [`Entry`] compares with.
pub(super) struct Probe {
    /// The CPU that schedules ([`PROBE_NONE`] on UP: no PROC_CHANGE_PENALTY).
    cpu: u32,
    /// The mm of the task it ran last.
    mm: u32,
    /// The task that yielded.
    yielding: u32,
}

impl Probe {
    /// The probe of `scan`.
    pub(super) fn of(scan: &Scan) -> Probe {
        Probe {
            cpu: if scan.smp {
                scan.cpu as u32
            } else {
                PROBE_NONE
            },
            mm: scan.mm.map_or(PROBE_NONE, |mm| mm as u32),
            yielding: scan.yielding.map_or(PROBE_NONE, |id| id as u32),
        }
    }
}

/// What a pick reads of a waiting task, copied into its run-list entry so that the walk reads one
/// small contiguous record per task instead of visiting the task table (none of it changes while
/// the task waits, except at a recalculation, which refiles every task).
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    /// The task.
    pub(super) id: u32,
    /// The CPU it last ran on, or [`ENTRY_NONE`] when its goodness takes no CPU or mm term
    /// (real-time, or counter 0).
    bonus_cpu: u32,
    /// Its mm, or [`ENTRY_NONE`] as for `bonus_cpu`.
    bonus_mm: u32,
    /// `static_goodness`: counter + 20 − nice (0 when counter is 0), 1000 + rt_priority.
    q: i32,
    /// CPUs 0..64 of its allowed set, kept in the entry so the scan stays in cache; a CPU
    /// past 63 looks the task's whole mask up.
    allowed_low: u64,
}

impl Entry {
    /// The entry of waiting task `id`.
    pub(super) fn of(t: &Task24, id: TaskId) -> Entry {
        // The sentinels stay unique: a task table or a group count that large cannot exist.
        debug_assert!(id < ENTRY_NONE as usize && t.mm < ENTRY_NONE as usize);
        let q = t.static_goodness();
        let bonus = q > 0 && t.rt().is_none();
        Entry {
            id: id as u32,
            bonus_cpu: if bonus {
                t.processor as u32
            } else {
                ENTRY_NONE
            },
            bonus_mm: if bonus { t.mm as u32 } else { ENTRY_NONE },
            q: q as i32,
            allowed_low: t.allowed.word(0),
        }
    }
    /// goodness(): the same value as [`Scan::weight`] of the task, without branches (the walk
    /// meets every outcome in no predictable pattern).
    #[inline]
    pub(super) fn weight(&self, probe: &Probe) -> i64 {
        let w = i64::from(self.q)
            + PROC_CHANGE_PENALTY * i64::from(self.bonus_cpu == probe.cpu)
            + i64::from(self.bonus_mm == probe.mm);
        if self.id == probe.yielding {
            -1
        } else {
            w
        }
    }
    /// Whether the task may run on `cpu` (`tasks` is read only for a CPU past 63).
    #[inline]
    pub(super) fn allowed_on(&self, tasks: &[Task24], cpu: CpuId) -> bool {
        match cpu {
            0..64 => self.allowed_low & (1 << cpu) != 0,
            _ => tasks[self.id as TaskId].allowed.contains(cpu),
        }
    }
}

/// The run list(s) of a 2.4-style scheduler: which waiting tasks a pick examines. Tasks running on
/// a CPU are not in it.
pub trait RunList {
    /// Policy name on the command line.
    const NAME: &'static str;
    /// Whether running tasks stay on the walked list in the kernel (the scan length counts them).
    const RUNNING_ON_LIST: bool;
    /// An empty run list.
    fn new() -> Self;
    /// Add waiting task `id` (its `order` and goodness inputs are set).
    fn insert(&mut self, tasks: &[Task24], id: TaskId);
    /// Remove waiting task `id` (unchanged since it was inserted).
    fn remove(&mut self, tasks: &[Task24], id: TaskId);
    /// Number of waiting tasks.
    fn len(&self) -> usize;
    /// Whether no task waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The best task for the pick (highest goodness, first in list order) with its goodness, and
    /// how many entries were examined.
    fn best(&mut self, tasks: &[Task24], scan: &Scan) -> (Option<(TaskId, i64)>, usize);
    /// Every waiting task's counter changed (the recalculation).
    fn counters_changed(&mut self, tasks: &[Task24]);
}

/// The vanilla run list: every waiting task in one vector, all walked at each pick. Each slot
/// holds the task's `Entry` and its list-order key, so that the walk reads one contiguous
/// array of 32-byte records. The vector is not in list order (removal moves the last slot into
/// the gap); the order key breaks goodness ties as the kernel's walk from the head would.
pub struct GlobalList {
    slots: Vec<Slot>,
    /// Each waiting task's index in `slots` (`usize::MAX`: not waiting).
    pos: Vec<usize>,
}

/// A waiting task in [`GlobalList`]. Aligned to its 32-byte size, so that no record of the walk
/// straddles two cache lines wherever the allocator puts the vector (an unaligned vector made
/// the same walk up to 13 % slower in one build than in another).
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Slot {
    /// The place in list order as a rank: larger is nearer the head ([`Task24::order`] reversed
    /// into `u64`), so that (goodness, rank) compares as one `u128`.
    rank: u64,
    entry: Entry,
}

impl Slot {
    fn of(tasks: &[Task24], id: TaskId) -> Slot {
        Slot {
            rank: !((tasks[id].order as u64) ^ (1 << 63)),
            entry: Entry::of(&tasks[id], id),
        }
    }
}

impl GlobalList {
    /// The slot of highest goodness, then highest rank, among those whose `allowed_low` has bit
    /// `cpu`, and that goodness. Branch-free per slot: the key (goodness + 2, rank) has its
    /// goodness part cleared for a slot not allowed, and at least 1 there for any other
    /// (goodness is at least −1).
    #[inline]
    fn walk_low(&self, probe: &Probe, cpu: CpuId) -> Option<(usize, i64)> {
        let (mut best_at, mut best_key) = (0, 0u128);
        for (i, s) in self.slots.iter().enumerate() {
            let allowed = ((s.entry.allowed_low >> cpu) & 1).wrapping_neg();
            let w = (s.entry.weight(probe) + 2) as u64 & allowed;
            let key = (u128::from(w) << 64) | u128::from(s.rank);
            if key > best_key {
                (best_at, best_key) = (i, key);
            }
        }
        let w = (best_key >> 64) as i64;
        (w != 0).then_some((best_at, w - 2))
    }

    /// [`Self::walk_low`] for a CPU past 63, which reads the tasks' masks.
    fn walk_high(&self, tasks: &[Task24], probe: &Probe, cpu: CpuId) -> Option<(usize, i64)> {
        let (mut best_at, mut best_key) = (0, 0u128);
        for (i, s) in self.slots.iter().enumerate() {
            let w = s.entry.weight(probe) + 2;
            let key = (u128::from(w as u64) << 64) | u128::from(s.rank);
            if key > best_key && s.entry.allowed_on(tasks, cpu) {
                (best_at, best_key) = (i, key);
            }
        }
        let w = (best_key >> 64) as i64;
        (w != 0).then_some((best_at, w - 2))
    }
}

impl RunList for GlobalList {
    const NAME: &'static str = "linux24";
    const RUNNING_ON_LIST: bool = true;

    fn new() -> Self {
        GlobalList {
            slots: Vec::new(),
            pos: Vec::new(),
        }
    }

    fn insert(&mut self, tasks: &[Task24], id: TaskId) {
        if self.pos.len() <= id {
            self.pos.resize(id + 1, usize::MAX);
        }
        self.pos[id] = self.slots.len();
        self.slots.push(Slot::of(tasks, id));
    }

    fn remove(&mut self, _tasks: &[Task24], id: TaskId) {
        let i = self.pos[id];
        debug_assert_eq!(
            self.slots[i].entry.id as TaskId, id,
            "linux24: removing a task that is not queued"
        );
        self.slots.swap_remove(i);
        if let Some(moved) = self.slots.get(i) {
            self.pos[moved.entry.id as TaskId] = i;
        }
        self.pos[id] = usize::MAX;
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    fn best(&mut self, tasks: &[Task24], scan: &Scan) -> (Option<(TaskId, i64)>, usize) {
        let probe = Probe::of(scan);
        let best = match scan.cpu {
            cpu @ 0..64 => self.walk_low(&probe, cpu),
            cpu => self.walk_high(tasks, &probe, cpu),
        };
        let best = best.map(|(i, w)| {
            let id = self.slots[i].entry.id as TaskId;
            debug_assert_eq!(w, scan.weight(id, &tasks[id]));
            (id, w)
        });
        (best, self.slots.len())
    }

    fn counters_changed(&mut self, tasks: &[Task24]) {
        for s in &mut self.slots {
            *s = Slot::of(tasks, s.entry.id as TaskId);
        }
    }
}

/// Per-CPU state (`aligned_data[cpu].schedule_data` and what the CPU ran last).
#[derive(Clone, Debug, Default)]
struct Cpu24 {
    curr: Option<TaskId>,
    /// reschedule_idle sent a task to this idle CPU, which has not yet been through schedule().
    incoming: Option<TaskId>,
    /// The task that ran before the coming pick (`prev`; `None`: the idle task).
    last: Option<TaskId>,
    /// `last_schedule`: when it last switched tasks (for an idle CPU: when it went idle).
    last_schedule: u64,
    /// `prev->active_mm` for its next pick.
    active_mm: Option<usize>,
    /// The task that called sched_yield here and is flagged SCHED_YIELD for the next pick.
    yielding: Option<TaskId>,
    /// Entries examined by the last pick.
    scanned: usize,
}

/// The Linux 2.4 scheduler machinery over run list `L`: counters, goodness, recalculation,
/// sched_yield and reschedule_idle.
pub struct Sched24<L: RunList> {
    tasks: Vec<Task24>,
    list: L,
    cpus: Vec<Cpu24>,
    /// Next sequence keys for insertion at the list's head (counting down) and tail (up).
    head_seq: i64,
    tail_seq: i64,
    /// Tasks current on some CPU.
    running: usize,
    /// Tasks not yet exited.
    live: usize,
    hz: u32,
}

/// The Linux 2.4.17 scheduler with its single run list.
pub type Linux24 = Sched24<GlobalList>;

/// The `linux24` policy: its name, summary and constructor (it has no parameters).
pub const DEF: PolicyDef = PolicyDef {
    name: GlobalList::NAME,
    summary: "Linux 2.4: one run list and lock for all CPUs, goodness() over every runnable task, counter recalculation, reschedule_idle (2.4.17 kernel/sched.c; seed 002)",
    params: &[],
    describe_defaults: true,
    check: no_check,
    build: boxed::<Linux24>,
};

/// The 2.4 policies have no parameters.
impl<L: RunList + 'static> FromParams for Sched24<L> {
    fn from_params(_: &Params) -> Self {
        Sched24 {
            tasks: Vec::new(),
            list: L::new(),
            cpus: Vec::new(),
            head_seq: 0,
            tail_seq: 0,
            running: 0,
            live: 0,
            hz: 100,
        }
    }
}

impl<L: RunList> Sched24<L> {
    fn ensure_cpus(&mut self, ncpus: usize) {
        if self.cpus.len() < ncpus {
            self.cpus.resize(ncpus, Cpu24::default());
        }
    }

    fn head_key(&mut self) -> i64 {
        self.head_seq -= 1;
        self.head_seq
    }

    fn tail_key(&mut self) -> i64 {
        self.tail_seq += 1;
        self.tail_seq
    }

    /// `preemption_goodness(curr, p, cpu)`: how much better `p` is than `curr` on `cpu`, both seen
    /// with `curr`'s mm.
    fn preemption_goodness(&self, curr: TaskId, p: TaskId, cpu: CpuId, smp: bool) -> i64 {
        let c = &self.tasks[curr];
        self.tasks[p].goodness(cpu, Some(c.mm), false, smp)
            - c.goodness(cpu, Some(c.mm), false, smp)
    }

    /// The task `cpu` runs, or is about to run as reschedule_idle sent it there.
    fn busy_with(&self, cpu: CpuId) -> Option<TaskId> {
        self.cpus[cpu].curr.or(self.cpus[cpu].incoming)
    }

    /// The for_each_task loop: every live task's counter = counter / 2 + NICE_TO_TICKS(nice).
    /// Returns the number of tasks visited.
    fn recalculate(&mut self) -> usize {
        let hz = self.hz;
        for t in self.tasks.iter_mut().filter(|t| t.live) {
            t.counter = (t.counter >> 1) + nice_to_ticks(t.nice, hz);
        }
        self.list.counters_changed(&self.tasks);
        self.live
    }

    /// schedule()'s choice for `cpu`: the best task and the number of entries examined.
    fn choose(&mut self, cpu: CpuId, smp: bool) -> (Option<TaskId>, usize) {
        let c = &self.cpus[cpu];
        let scan = Scan {
            cpu,
            mm: c.active_mm,
            yielding: c.yielding,
            smp,
            max_static: 2 * nice_to_ticks(-20, self.hz) + 40,
        };
        let others = if L::RUNNING_ON_LIST { self.running } else { 0 };
        let mut examined = 0;
        loop {
            let (best, n) = self.list.best(&self.tasks, &scan);
            examined += n + others;
            match best {
                Some((_, 0)) => examined += self.recalculate(),
                best => return (best.map(|(id, _)| id), examined),
            }
        }
    }
}

/// The CPU a new task counts as having last run on: the allowed CPUs in turn by task id, as if
/// each task had been forked on a different CPU (the simulator has no parent task).
fn first_cpu(allowed: CpuMask, ncpus: usize, id: TaskId) -> CpuId {
    let allowed = allowed.below(ncpus);
    match allowed.count() {
        0 => 0,
        n => allowed.iter().nth(id % n).unwrap_or(0),
    }
}

impl<L: RunList> Policy for Sched24<L> {
    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), PolicyError> {
        check_class_knobs(
            &format!("Linux 2.4 scheduler ({})", L::NAME),
            group,
            knobs,
            ACCEPTED,
            |p| missing_linux_class((2, 4, 17), p),
            "EEVDF custom slices, Linux 6.12+; 2.4's slice is NICE_TO_TICKS(nice)",
        )
    }

    fn task_new(&mut self, m: &MachineView, setup: &TaskSetup) {
        self.ensure_cpus(m.ncpus);
        self.hz = m.hz;
        let (class, rt_priority) = match setup.sched_policy() {
            SchedPolicy::Fifo(p) => (Class24::Fifo, u32::from(p)),
            SchedPolicy::Rr(p) => (Class24::Rr, u32::from(p)),
            // Others are rejected by check_knobs; SCHED_OTHER if the machine skipped it.
            _ => (Class24::Other, 0),
        };
        let nice = setup.nice().clamp(-20, 19);
        let t = Task24 {
            counter: nice_to_ticks(nice, m.hz),
            order: 0,
            allowed: setup.allowed,
            processor: first_cpu(setup.allowed, m.ncpus, setup.id),
            mm: setup.group,
            nice,
            rt_priority,
            class,
            live: true,
            preempt: false,
        };
        if self.tasks.len() <= setup.id {
            let placeholder = Task24 {
                live: false,
                ..t.clone()
            };
            self.tasks.resize(setup.id + 1, placeholder);
        }
        if !self.tasks[setup.id].live {
            self.live += 1;
        }
        self.tasks[setup.id] = t;
    }

    fn select_task_rq(
        &mut self,
        m: &MachineView,
        task: TaskId,
        prev: CpuId,
        _waker: Option<CpuId>,
    ) -> CpuId {
        self.ensure_cpus(m.ncpus);
        let n = m.ncpus.min(self.cpus.len());
        self.tasks[task].preempt = false;
        // Only the allowed CPUs below n count (the bounded mask operations).
        let allowed = self.tasks[task].allowed;
        let ok = |c: CpuId| c < n && allowed.contains(c);
        let Some(lowest) = allowed.lowest_below(n) else {
            return prev;
        };
        if n == 1 {
            return 0; // UP: wakeup_preempt compares with the current task
        }
        let idle = |c: CpuId| self.busy_with(c).is_none();
        // The shortcut: p's last CPU is idle.
        let last = self.tasks[task].processor;
        if ok(last) && idle(last) {
            self.cpus[last].incoming = Some(task);
            return last;
        }
        // The idle CPU idle longest, else the largest positive preemption goodness.
        let mut oldest: Option<CpuId> = None;
        let mut target: Option<CpuId> = None;
        let mut max_prio = 0;
        for c in allowed.iter_below(n) {
            match self.busy_with(c) {
                None => {
                    if oldest
                        .is_none_or(|o| self.cpus[c].last_schedule < self.cpus[o].last_schedule)
                    {
                        oldest = Some(c);
                    }
                }
                Some(curr) if oldest.is_none() => {
                    let prio = self.preemption_goodness(curr, task, c, true);
                    if prio > max_prio {
                        max_prio = prio;
                        target = Some(c);
                    }
                }
                Some(_) => {}
            }
        }
        if let Some(c) = oldest {
            self.cpus[c].incoming = Some(task);
            return c;
        }
        if let Some(c) = target {
            if self.cpus[c].curr.is_some() {
                self.tasks[task].preempt = true;
            } else {
                self.cpus[c].incoming = Some(task); // the pending pick will weigh it
            }
            return c;
        }
        // Nobody to preempt: p waits on the list for whichever CPU schedules next.
        if ok(last) {
            last
        } else {
            lowest
        }
    }

    fn schedule_tail(&mut self, m: &MachineView, cpu: CpuId, prev: TaskId) -> Option<Move> {
        // __schedule_tail: a preempted (not yielding) task still runnable gets reschedule_idle,
        // so that an idle CPU, or one running something worse, takes it.
        if m.ncpus <= 1 {
            return None;
        }
        let target = self.select_task_rq(m, prev, cpu, None);
        let goes =
            target != cpu && (self.tasks[prev].preempt || self.cpus[target].incoming == Some(prev));
        if !goes {
            self.tasks[prev].preempt = false;
            if self.cpus[target].incoming == Some(prev) {
                self.cpus[target].incoming = None;
            }
            return None;
        }
        Some(Move {
            task: prev,
            from: cpu,
            to: target,
        })
    }

    fn enqueue_task(&mut self, m: &MachineView, _cpu: CpuId, task: TaskId, _kind: EnqueueKind) {
        self.ensure_cpus(m.ncpus);
        // add_to_runqueue: the head of the list.
        self.tasks[task].order = self.head_key();
        self.list.insert(&self.tasks, task);
    }

    fn dequeue_task(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId, kind: DequeueKind) {
        let c = &mut self.cpus[cpu];
        if c.curr == Some(task) {
            c.curr = None;
            self.running -= 1;
        }
        c.yielding = None;
        if kind == DequeueKind::Exit && self.tasks[task].live {
            self.tasks[task].live = false;
            self.live -= 1;
        }
    }

    fn wakeup_preempt(&mut self, m: &MachineView, cpu: CpuId, curr: TaskId, woken: TaskId) -> bool {
        if m.ncpus <= 1 {
            // UP reschedule_idle.
            return self.preemption_goodness(curr, woken, cpu, false) > 0;
        }
        std::mem::take(&mut self.tasks[woken].preempt)
    }

    fn pick_next_task(&mut self, m: &MachineView, cpu: CpuId) -> Option<TaskId> {
        self.ensure_cpus(m.ncpus);
        let smp = m.ncpus > 1;
        if self.cpus[cpu].curr.take().is_some() {
            self.running -= 1; // not expected: put_prev_task or dequeue_task came first
        }
        self.cpus[cpu].incoming = None;
        let (next, scanned) = self.choose(cpu, smp);
        let c = &mut self.cpus[cpu];
        c.yielding = None; // __schedule_tail clears SCHED_YIELD
        c.scanned = scanned;
        if next != c.last {
            c.last_schedule = m.now;
        }
        c.last = next;
        let id = next?;
        c.curr = Some(id);
        c.active_mm = Some(self.tasks[id].mm);
        self.running += 1;
        self.list.remove(&self.tasks, id);
        self.tasks[id].processor = cpu;
        Some(id)
    }

    fn last_scan_len(&self, cpu: CpuId) -> usize {
        self.cpus.get(cpu).map_or(0, |c| c.scanned)
    }

    fn picks_scan(&self) -> bool {
        true
    }

    fn put_prev_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, _kind: PutPrevKind) {
        let t = &self.tasks[task];
        if t.class == Class24::Rr && t.counter <= 0 {
            // schedule(): move an exhausted RR process to be last.
            let order = self.tail_key();
            let t = &mut self.tasks[task];
            t.counter = nice_to_ticks(t.nice, m.hz);
            t.order = order;
        }
        let c = &mut self.cpus[cpu];
        if c.curr == Some(task) {
            c.curr = None;
            self.running -= 1;
        }
        self.list.insert(&self.tasks, task);
    }

    fn update_curr(&mut self, _m: &MachineView, _cpu: CpuId, _task: TaskId, _delta_ns: u64) {}

    fn charges_runtime(&self) -> bool {
        false
    }

    fn task_tick(&mut self, _m: &MachineView, _cpu: CpuId, task: TaskId) -> bool {
        // update_process_times: every policy's counter runs down, SCHED_FIFO's too.
        let t = &mut self.tasks[task];
        t.counter -= 1;
        if t.counter <= 0 {
            t.counter = 0;
            return true;
        }
        false
    }

    fn yield_task(&mut self, _m: &MachineView, cpu: CpuId, task: TaskId) -> bool {
        // nr_pending: runnable tasks not running on any CPU (the current one is not queued).
        // With none, sys_sched_yield returns without taking the lock or calling schedule().
        if self.list.is_empty() {
            return false;
        }
        if self.tasks[task].class == Class24::Other {
            self.cpus[cpu].yielding = Some(task);
        }
        let order = self.tail_key(); // move_last_runqueue
        self.tasks[task].order = order;
        true
    }

    fn lock_domain(&self, _cpu: CpuId) -> usize {
        0 // one runqueue_lock for all CPUs
    }

    fn lock_name(&self, _domain: usize) -> String {
        "runqueue_lock".into()
    }

    fn idle_ticks(&self) -> bool {
        true
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::policy::testing::{built, nice, policy, spec, Harnessed, ALL, H};

    impl<L: RunList + 'static> Harnessed for Sched24<L> {
        const REPORTS: bool = true;
        fn cpu_state(&self, cpu: CpuId) -> (Option<TaskId>, usize) {
            (self.cpus.get(cpu).and_then(|c| c.curr), 0)
        }
    }

    /// A 2.4 scheduler over run list `L` on `ncpus` CPUs at HZ 100.
    pub(in crate::policy) fn h24<L: RunList + 'static>(ncpus: usize) -> H<Sched24<L>> {
        H::new(L::NAME, 100, ncpus)
    }

    impl<L: RunList + 'static> H<Sched24<L>> {
        pub(in crate::policy) fn scanned(&self, cpu: CpuId) -> usize {
            self.p.last_scan_len(cpu)
        }
        /// Wake `id` (a timer on CPU 0 as the waker): the CPU reschedule_idle chose, and whether
        /// its current task is preempted.
        pub(in crate::policy) fn wake(&mut self, id: TaskId) -> (CpuId, bool) {
            let prev = self.p.tasks[id].processor;
            let (cpu, preempts) = self.wake_up(id, prev, Some(0), 1);
            (cpu, preempts.unwrap_or(false))
        }
        /// Change a task's fields (a waiting task must be refiled afterwards).
        pub(in crate::policy) fn p_task(&mut self, id: TaskId, f: impl FnOnce(&mut Task24)) {
            f(&mut self.p.tasks[id]);
        }
        /// File every waiting task anew, as after a recalculation.
        pub(in crate::policy) fn refile(&mut self) {
            self.p.list.counters_changed(&self.p.tasks);
        }
        /// The mm `cpu` ran last (for the +1 bonus of its next pick).
        pub(in crate::policy) fn set_active_mm(&mut self, cpu: CpuId, mm: usize) {
            self.p.cpus[cpu].active_mm = Some(mm);
        }
        pub(in crate::policy) fn p_list(&self) -> &L {
            &self.p.list
        }
        pub(in crate::policy) fn counter(&self, id: TaskId) -> i64 {
            self.p.tasks[id].counter
        }
        /// Set a task's counter (and refile the waiting tasks).
        pub(in crate::policy) fn set_counter(&mut self, id: TaskId, counter: i64) {
            self.p_task(id, |t| t.counter = counter);
            self.refile();
        }
    }

    #[test]
    fn the_global_list_picks_as_a_plain_walk_over_the_tasks() {
        // Random tasks (real-time, counter 0, nices, CPUs, mms, pinned to CPU 70 or not),
        // random inserts, removals and recalculations; each pick compared with the definition:
        // the highest goodness among allowed waiting tasks, then the smallest order.
        let mut x = 0x853c_49e6_748f_ea9bu64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let ntasks = 40;
        let mut tasks: Vec<Task24> = (0..ntasks)
            .map(|_| Task24 {
                counter: 0,
                order: 0,
                processor: 0,
                mm: 0,
                nice: 0,
                rt_priority: 0,
                class: Class24::Other,
                live: true,
                preempt: false,
                allowed: CpuMask::ALL,
            })
            .collect();
        let mut list = GlobalList::new();
        let mut waiting: Vec<TaskId> = Vec::new();
        let mut seq = 0;
        for step in 0..20_000 {
            let id = next(ntasks as u64) as TaskId;
            match next(8) {
                0..3 if !waiting.contains(&id) => {
                    seq += 1;
                    let t = &mut tasks[id];
                    t.counter = next(8) as i64;
                    t.order = if next(2) == 0 { -seq } else { seq };
                    t.processor = next(4) as CpuId;
                    t.mm = next(3) as usize;
                    t.nice = next(40) as i32 - 20;
                    (t.class, t.rt_priority) = match next(10) {
                        0 => (Class24::Fifo, next(99) as u32 + 1),
                        1 => (Class24::Rr, next(99) as u32 + 1),
                        _ => (Class24::Other, 0),
                    };
                    t.allowed = match next(4) {
                        0 => CpuMask::from_bits(0b0101),
                        1 => CpuMask::range(64..128),
                        _ => CpuMask::ALL,
                    };
                    list.insert(&tasks, id);
                    waiting.push(id);
                }
                3 if !waiting.is_empty() => {
                    let id = waiting.swap_remove(next(waiting.len() as u64) as usize);
                    list.remove(&tasks, id);
                }
                4 => {
                    for &w in &waiting {
                        tasks[w].counter = next(12) as i64;
                    }
                    list.counters_changed(&tasks);
                }
                _ => {
                    let scan = Scan {
                        cpu: [0, 1, 2, 70][next(4) as usize],
                        mm: [None, Some(0), Some(1)][next(3) as usize],
                        yielding: (next(3) == 0).then(|| next(ntasks as u64) as TaskId),
                        smp: next(4) != 0,
                        max_static: 2 * nice_to_ticks(-20, 100) + 40,
                    };
                    let expected = waiting
                        .iter()
                        .filter(|&&w| tasks[w].allowed.contains(scan.cpu))
                        .map(|&w| (w, scan.weight(w, &tasks[w])))
                        .max_by_key(|&(w, g)| (g, std::cmp::Reverse(tasks[w].order)));
                    assert_eq!(
                        list.best(&tasks, &scan),
                        (expected, waiting.len()),
                        "step {step}"
                    );
                }
            }
        }
    }

    #[test]
    fn goodness_values() {
        assert_eq!(goodness(6, 0, None, false, false, false), 26);
        assert_eq!(goodness(6, 0, None, false, true, false), 26 + 15);
        assert_eq!(goodness(6, 0, None, false, false, true), 27);
        assert_eq!(goodness(6, 0, None, false, true, true), 42);
        assert_eq!(goodness(11, -20, None, false, false, false), 51);
        assert_eq!(goodness(1, 19, None, false, false, false), 2);
        assert_eq!(goodness(0, -20, None, false, true, true), 0, "counter 0");
        assert_eq!(goodness(6, 0, None, true, true, true), -1, "yielded");
        assert_eq!(goodness(0, 0, Some(50), false, false, false), 1050);
        assert_eq!(goodness(3, 5, Some(1), false, true, true), 1001);
    }

    #[test]
    fn nice_to_ticks_follows_tick_scale() {
        for (n, ticks) in [(0, 6), (-20, 11), (19, 1), (10, 3), (-1, 6), (-4, 7)] {
            assert_eq!(nice_to_ticks(n, 100), ticks, "nice {n} at HZ 100");
        }
        assert_eq!(nice_to_ticks(0, 250), 11);
        assert_eq!(nice_to_ticks(0, 1000), 41);
        // A task's first slice and the tick: nice 0 runs 6 ticks at HZ 100.
        let mut h = h24::<GlobalList>(1);
        h.spawn(0, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(0));
        let ticks = (1..=20).find(|_| h.tick(0)).unwrap();
        assert_eq!((ticks, h.counter(0)), (6, 0));
    }

    #[test]
    fn recalculation_only_when_every_runnable_counter_is_zero_and_sleepers_gain_half() {
        let mut h = h24::<GlobalList>(1);
        for id in 0..3 {
            h.spawn(id, 0, Knobs::default(), ALL);
        }
        // Task 2 (picked first: the list's head) goes to sleep with 4 ticks left.
        assert_eq!(h.pick(0), Some(2));
        h.set_counter(2, 4);
        h.sleep(0);
        h.set_counter(0, 0);
        h.set_counter(1, 2);
        assert_eq!(h.pick(0), Some(1));
        assert_eq!((h.counter(0), h.counter(2)), (0, 4), "no recalculation yet");
        assert_eq!(h.scanned(0), 2);
        assert!(!h.tick(0));
        assert!(h.tick(0), "counter ran out");
        h.put_prev(0, PutPrevKind::Preempted);
        // Every runnable counter is 0: all three tasks are recalculated, the sleeper too.
        let next = h.pick(0).unwrap();
        assert_eq!((h.counter(0), h.counter(1)), (6, 6));
        assert_eq!(
            h.counter(2),
            4 / 2 + 6,
            "sleeper: counter/2 + NICE_TO_TICKS"
        );
        assert_eq!(
            h.scanned(0),
            2 + 3 + 2,
            "walk, recalculation of all tasks, walk"
        );
        assert_eq!(
            next, 1,
            "equal goodness: the first in list order (task 1 was woken later)"
        );
        // Nice −20 accumulates toward 2·NICE_TO_TICKS: 11 → 16 after one more recalculation.
        let mut h = h24::<GlobalList>(1);
        h.spawn(0, 0, nice(-20), ALL);
        h.pick(0);
        h.put_prev(0, PutPrevKind::Preempted);
        h.set_counter(0, 0);
        h.pick(0);
        assert_eq!(h.counter(0), 11);
    }

    #[test]
    fn a_yield_moves_the_task_behind_the_others_and_alone_it_is_a_no_op() {
        let mut h = h24::<GlobalList>(1);
        for id in 0..3 {
            h.spawn(id, 0, Knobs::default(), ALL);
        }
        let mut order = vec![h.pick(0).unwrap()];
        for _ in 0..4 {
            h.put_prev(0, PutPrevKind::Yielded);
            order.push(h.pick(0).unwrap());
        }
        // Woken tasks join the head (2, 1, 0); each yield sends the current task to the end.
        assert_eq!(order, [2, 1, 0, 2, 1]);
        // Counter 0 everywhere but the yielder: its −1 loses to 0, which recalculates.
        h.set_counter(0, 0);
        h.set_counter(2, 0);
        h.put_prev(0, PutPrevKind::Yielded);
        assert_ne!(h.pick(0), Some(1));
        assert_eq!(h.counter(1), 6 / 2 + 6);

        let mut h = h24::<GlobalList>(1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.pick(0);
        assert!(
            !h.put_prev(0, PutPrevKind::Yielded),
            "nr_pending 0: no schedule()"
        );
    }

    #[test]
    fn up_wakeup_preempts_iff_the_goodness_difference_is_positive() {
        let setup = |woken_counter: i64, woken_group: usize, knobs: Knobs| {
            let mut h = h24::<GlobalList>(1);
            h.spawn(0, 0, Knobs::default(), ALL);
            h.spawn(1, woken_group, knobs, ALL);
            assert_eq!(h.pick(0), Some(1));
            h.sleep(0);
            assert_eq!(h.pick(0), Some(0)); // current: 6 + 20 + 1 (own mm) = 27
            h.set_counter(1, woken_counter);
            h.wake(1)
        };
        assert_eq!(setup(7, 0, Knobs::default()), (0, true), "28 > 27");
        assert_eq!(setup(6, 0, Knobs::default()), (0, false), "27 = 27");
        assert_eq!(setup(7, 1, Knobs::default()), (0, false), "other mm: 27");
        assert_eq!(setup(8, 1, Knobs::default()), (0, true), "other mm: 28");
        assert_eq!(setup(1, 0, policy(SchedPolicy::Fifo(1))), (0, true));
        // A real-time current task is not preempted by SCHED_OTHER.
        let mut h = h24::<GlobalList>(1);
        h.spawn(0, 0, policy(SchedPolicy::Rr(5)), ALL);
        h.spawn(1, 0, nice(-20), ALL);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.wake_queued(1), (0, false));
    }

    impl<L: RunList + 'static> H<Sched24<L>> {
        /// Ask reschedule_idle about a task that is already queued (as spawned).
        fn wake_queued(&mut self, id: TaskId) -> (CpuId, bool) {
            self.with(|p, m| {
                let cpu = p.select_task_rq(m, id, 0, Some(0));
                let preempt = m.curr[cpu].is_some_and(|c| p.wakeup_preempt(m, cpu, c, id));
                (cpu, preempt)
            })
        }
    }

    /// Four CPUs, each running a task pinned to it with `counters[c]` and `nices[c]`; task 4 (free,
    /// last ran on CPU 0) has gone to sleep.
    fn smp(counters: [i64; 4], nices: [i32; 4]) -> H<Linux24> {
        let mut h = h24::<GlobalList>(4);
        h.spawn(4, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(4));
        h.sleep(0);
        for c in 0..4 {
            h.spawn(c, 0, nice(nices[c]), CpuMask::from_bits(1 << c));
            h.now += 1000;
            assert_eq!(h.pick(c), Some(c));
            h.set_counter(c, counters[c]);
        }
        h
    }

    #[test]
    fn smp_reschedule_idle_chooses_prev_idle_then_longest_idle_then_best_preemption() {
        // p's last CPU is idle: it goes there, even though another idle CPU idled longer.
        let mut h = smp([6; 4], [0; 4]);
        h.sleep(0);
        h.sleep(2);
        h.p.cpus[2].last_schedule = 0;
        assert_eq!(h.wake(4), (0, false));
        // Its last CPU is busy: the idle CPU that has been idle longest.
        let mut h = smp([6; 4], [0; 4]);
        for c in [1, 2, 3] {
            h.sleep(c);
        }
        h.p.cpus[1].last_schedule = 50;
        h.p.cpus[2].last_schedule = 10;
        h.p.cpus[3].last_schedule = 30;
        assert_eq!(h.wake(4), (2, false));
        // No idle CPU: the largest positive preemption goodness. p: 6 + 20 + 1 = 27 on CPUs
        // 1–3 (42 on CPU 0, where its current has 42 too); currents have +15 +1 on their CPU.
        let mut h = smp([6, 1, 1, 1], [0, 19, 15, 0]);
        // CPU 1: 27 − (1 + 1 + 16) = 9; CPU 2: 27 − (1 + 5 + 16) = 5; CPU 3: 27 − 38 < 0.
        assert_eq!(h.wake(4), (1, true));
        // Nothing positive: no CPU is disturbed; p waits on the list (its last CPU's).
        let mut h = smp([6, 6, 6, 6], [0, 0, 0, 0]);
        assert_eq!(h.wake(4), (0, false));
        assert_eq!(h.p.list.len(), 1);
        // An idle CPU that a woken task was already sent to counts as running that task.
        let mut h = smp([6; 4], [0; 4]);
        h.sleep(1);
        h.spawn(5, 0, Knobs::default(), CpuMask::from_bits(0b10));
        assert_eq!(h.wake(4), (0, false), "CPU 1 is taken by task 5");
    }

    #[test]
    fn a_preempted_task_goes_to_an_idle_cpu_at_schedule_tail() {
        let mut h = h24::<GlobalList>(2);
        h.spawn(0, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(0));
        h.spawn(1, 0, Knobs::default(), CpuMask::from_bits(1));
        h.set_counter(0, 0); // task 1 is better now
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(1));
        let mv = h.with(|p, m| p.schedule_tail(m, 0, 0));
        assert_eq!(
            mv,
            Some(Move {
                task: 0,
                from: 0,
                to: 1
            }),
            "CPU 1 is idle: reschedule_idle(prev) sends it there"
        );
        assert_eq!(h.pick(1), Some(0));
        // No CPU idle and nothing worse running anywhere: it stays where it is.
        h.spawn(2, 0, Knobs::default(), CpuMask::from_bits(0b10));
        h.set_counter(0, 0); // (its pick alone on CPU 1 recalculated the counters)
        h.put_prev(1, PutPrevKind::Preempted);
        assert_eq!(h.pick(1), Some(2));
        assert_eq!(h.with(|p, m| p.schedule_tail(m, 1, 0)), None);
    }

    #[test]
    fn the_scan_walks_every_runnable_task_and_keeps_affinity() {
        let mut h = h24::<GlobalList>(4);
        for id in 0..10 {
            h.spawn(id, 0, Knobs::default(), ALL);
            h.p_task(id, |t| t.processor = 3);
        }
        h.refile();
        assert_eq!(h.pick(0), Some(9), "no affinity here: the head of the list");
        assert_eq!(h.scanned(0), 10);
        assert_eq!(h.pick(1), Some(8));
        assert_eq!(h.scanned(1), 9 + 1, "queued + running elsewhere");
        // Task 0 last ran on CPU 2: its +15 beats the list's head there.
        h.p_task(0, |t| t.processor = 2);
        h.refile();
        assert_eq!(h.pick(2), Some(0));
        // A task not allowed on a CPU is walked but not taken.
        let mut h = h24::<GlobalList>(2);
        h.spawn(0, 0, Knobs::default(), CpuMask::from_bits(0b10));
        assert_eq!((h.pick(0), h.scanned(0)), (None, 1));
        assert_eq!(h.pick(1), Some(0));
    }

    #[test]
    fn new_tasks_count_as_last_run_on_their_allowed_cpus_in_turn() {
        let mut h = h24::<GlobalList>(4);
        for id in 0..6 {
            h.spawn(id, 0, Knobs::default(), CpuMask::from_bits(0b1010));
        }
        let last: Vec<CpuId> = (0..6).map(|id| h.p.tasks[id].processor).collect();
        assert_eq!(last, [1, 3, 1, 3, 1, 3]);
    }

    #[test]
    fn sched_rr_goes_to_the_end_when_its_counter_runs_out_and_fifo_does_not() {
        let mut h = h24::<GlobalList>(1);
        h.spawn(0, 0, policy(SchedPolicy::Rr(5)), ALL);
        h.spawn(1, 0, policy(SchedPolicy::Rr(5)), ALL);
        assert_eq!(h.pick(0), Some(1));
        assert_eq!((1..=20).find(|_| h.tick(0)), Some(6));
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.counter(1), 6, "refilled");
        let mut h = h24::<GlobalList>(1);
        h.spawn(0, 0, policy(SchedPolicy::Fifo(5)), ALL);
        h.spawn(1, 0, policy(SchedPolicy::Fifo(5)), ALL);
        assert_eq!(h.pick(0), Some(1));
        assert_eq!((1..=20).find(|_| h.tick(0)), Some(6));
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(1), "FIFO keeps its place");
    }

    #[test]
    fn rejects_knobs_and_parameters_it_has_no_notion_of() {
        let p: Linux24 = built("linux24");
        assert_eq!(spec("linux24").describe(), "linux24");
        let e = PolicySpec::new(&DEF, vec![("hz".into(), "100".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no parameter 'hz'"), "{e}");
        for (k, what) in [
            (policy(SchedPolicy::Batch), "policy=batch"),
            (policy(SchedPolicy::Idle), "policy=idle"),
        ] {
            let e = p.check_knobs("bg", &k).unwrap_err().to_string();
            assert!(
                e.contains("'bg'") && e.contains(what) && e.contains("rr:1..99"),
                "{e}"
            );
        }
        let dl: SchedPolicy = "deadline:1ms/10ms/10ms".parse().unwrap();
        let e = p.check_knobs("rt", &policy(dl)).unwrap_err().to_string();
        assert!(e.contains(&format!("policy={dl}")), "{e}");
        let k = Knobs {
            slice_ns: Some(300_000),
            ..Knobs::default()
        };
        let e = p.check_knobs("g", &k).unwrap_err().to_string();
        assert!(e.contains("slice=300.000us"), "{e}");
        for ok in [
            nice(-5),
            policy(SchedPolicy::Fifo(3)),
            policy(SchedPolicy::Rr(99)),
        ] {
            assert!(p.check_knobs("g", &ok).is_ok());
        }
    }
}
