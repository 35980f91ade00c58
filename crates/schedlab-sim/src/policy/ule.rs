//! FreeBSD's ULE scheduler as in FreeBSD 7 (Jeff Roberson's rewrite that seed 001, freebsd-arch
//! 2006-12, weighs against 4BSD), with the kernel options `PREEMPTION` and `FULL_PREEMPTION`.
//!
//! Followed from FreeBSD 7.3 (RELENG_7, `oza/FreeBSD-7.3-dyntick` commit c8359d9, the unmodified
//! 7.3 import): sys/kern/sched_ule.c (`sched_interact_score`, `sched_interact_update`,
//! `sched_priority`, `sched_pctcpu_update`, `sched_tick`, `sched_clock`, `sched_wakeup`,
//! `sched_add`, `sched_setpreempt`, `tdq_notify`, `sched_pickcpu`, `tdq_lowestpri`, `tdq_add`,
//! `tdq_runq_add`/`tdq_runq_rem`, `tdq_choose`, `sched_choose`, `sched_switch`, `tdq_idled`,
//! `tdq_move`, `tdq_steal`, `runq_steal_from`, `sched_balance`, `sched_balance_pair`,
//! `sched_relinquish`), sys/kern/kern_switch.c (`critical_exit` honours `td_owepreempt` with or
//! without PREEMPTION; run queues), sys/kern/subr_trap.c (`ast`: NEEDRESCHED switches at the
//! user priority), sys/{i386,amd64}/…/mp_machdep.c (`IPI_PREEMPT` calls mi_switch at once) and
//! the 7.x sys/sys/priority.h layout shared with [`super::bsd4`] (interrupt threads 0–63, kernel
//! 64–127, realtime 128–159, timeshare 160–223, idle 224–255).
//!
//! The mechanism:
//! - Per-CPU thread queues (`struct tdq`), each with its own lock: a realtime run queue
//!   (priorities ≤ 159: rtprio threads, interactive timeshare threads, threads woken at a kernel
//!   sleep priority), a timeshare *calendar* queue (64 lists used as a circular calendar: a
//!   thread of priority p is inserted (p − 160) lists after the insert index `tdq_idx`, and
//!   picked from the removal index `tdq_ridx`, which only advances when its list drains, so every
//!   batch thread runs eventually) and an idle-class queue. `tdq_choose` takes realtime, then
//!   timeshare from `tdq_ridx`, then idle.
//! - Interactivity: voluntary sleep and run time (ticks << 10) give a score 0–100
//!   (`sched_interact_score`; with the default threshold 30, run ≥ sleep scores 50 without more
//!   arithmetic). Score + nice < 30: interactive, priority 128 + score, on the realtime queue.
//!   Otherwise 180 + recent CPU use (`ts_ticks` over a ~10 s window scaled to 0..23) + nice.
//!   History is capped at 5 s (`sched_interact_update`).
//! - Slices: `sched_slice` = stathz/10 ticks, refilled on wakeup; at its end `sched_clock`
//!   recomputes the priority and sets NEEDRESCHED.
//! - Preemption threshold `preempt_thresh`: 0 without PREEMPTION, PRI_MIN_KERN (64) with it,
//!   PRI_MAX_IDLE (255) with FULL_PREEMPTION. A wakeup on the waking CPU (`sched_setpreempt`)
//!   sets NEEDRESCHED when better, and `owepreempt` (a switch at once) when its priority ≤ the
//!   threshold or the current thread is idle-class. On another CPU (`tdq_notify`): IPI_PREEMPT
//!   (a switch at once there) when better and the target runs the idle thread, or the new thread
//!   is realtime-queue (< 159) and the target runs timeshare or worse, or its priority ≤ the
//!   threshold; otherwise nothing — the thread waits for that CPU's next switch.
//! - Placement (`sched_pickcpu`): the last CPU if it idles, or if the thread ran there within
//!   `affinity` (max(1, hz/300)) ticks and is better than the best priority there
//!   (`tdq_lowpri`); else the lowest idle CPU; else the waking CPU if better than its current
//!   thread (`tryself`); else the CPU whose best priority is worst, ties to the lesser load
//!   (`tdq_lowestpri`, `pick_pri` = 1). A thread released at the start of the run has no
//!   waking CPU, so no `tryself`: its creator would be running there at the same user priority
//!   (the simulated CPUs are all idle at time 0, and `tryself` would take every thread).
//! - Balancing: an idle CPU steals (`tdq_idled`) from the most loaded CPU with queued threads if
//!   that load ≥ `steal_thresh` = min(log2(ncpus), 3); every hz/2 + random(hz) ticks CPU 0 runs
//!   `sched_balance`, moving ⌈(high − low)/2⌉ queued threads from the most to the least loaded
//!   CPU and IPI_PREEMPTing it. A steal from a timeshare queue leaves its next thread.
//! - `sched_yield` is `sched_relinquish`: always a switch, requeued at its priority.
//!
//! Simplifications:
//! - stathz is the machine's tick (stathz = hz), so `tickincr` = 1 << 10 and one counter serves
//!   `sched_clock` and `sched_tick`; `ticks` is simulated time / tick length.
//! - No user/kernel boundary. NEEDRESCHED is honoured where `ast()` would see it first, which
//!   here is at once: a wakeup by a thread on the same CPU switches as the waker's system call
//!   returns (the machine's local reschedule); one from a timer (no waker) as the clock
//!   interrupt returns (the softclock software-interrupt thread that really does timer wakeups
//!   switches to the woken thread when it blocks; it is not modelled as a thread, as in
//!   [`super::bsd4`]). `owepreempt` and IPI_PREEMPT switch at once and requeue
//!   the preempted thread at the head (SRQ_PREEMPTED: the calendar's removal index); an AST
//!   switch requeues at the tail at the user priority; a yield at the tail.
//! - Every sleep lends one kernel sleep priority, PSOCK (88), as in [`super::bsd4`]: a woken
//!   thread waits on the realtime queue at 88 and takes its user priority when it runs
//!   (`sched_userret`). Threads start with no sleep/run history — which scores 50 (run ≥ sleep),
//!   so batch priority 180 — and a one-tick slice, as a fork's child does
//!   (`sched_fork_thread`); no parent history, fork or exit penalties.
//! - One CPU per `tdq_group` (no SMT topology), so `sched_balance_groups` never runs; the
//!   balancer's IPI to the low CPU is sent only when it moved something; `random()` is a
//!   deterministic hash of the CPU, the time and a counter.
//! - POSIX policies map as in [`super::bsd4`]: fifo/rr:P → rtprio (99 − P)·31/98, priority 128 +
//!   rtprio (FIFO has no slice); idle → idprio 0 (224). batch, deadline and custom slices are
//!   rejected. No binding or KSE; priority propagation (`sched_lend_prio`) only for the
//!   machine's connection locks, for the netisr thread.
//! - Interrupt threads: loopback TCP/UDP goes through the machine's netisr thread (priority 40,
//!   its `kthreads.rs`); `owepreempt` switches to it inside the sender's system call under
//!   PREEMPTION (40 ≤ `preempt_thresh`), NEEDRESCHED after it without.

use super::bsd4::{
    RunQ, PRI_MAX_ITHD, PRI_MAX_TIMESHARE, PRI_MIN_IDLE, PRI_MIN_KERN, PRI_MIN_REALTIME,
    PRI_MIN_TIMESHARE, PSOCK, RQ_NQS,
};
use super::cpumask::set_bits;
use super::*;
use schedlab_workload::knobs::{Knobs, SchedPolicy};
use std::cmp::Reverse;

const NAME: &str = "FreeBSD ULE scheduler";
const ACCEPTED: &str = "policy=other|fifo:1..99|rr:1..99|idle, nice=-20..19, cpus=LIST";
/// Last realtime priority (PRI_MAX_REALTIME).
const PRI_MAX_REALTIME: u8 = PRI_MIN_TIMESHARE - 1;
/// The idle thread's priority (PRI_MAX_IDLE).
const PRI_MAX_IDLE: u8 = 255;
/// Nice range (PRIO_MIN, PRIO_MAX).
const PRIO_MIN: i32 = -20;
const PRIO_MAX: i32 = 20;
/// SCHED_TICK_SHIFT: history counters are ticks << 10.
const TICK_SHIFT: u32 = 10;
/// SCHED_TICK_SECS: the CPU-use window.
const TICK_SECS: i64 = 10;
/// `ts_rltick` of a thread that has not yet left a CPU: far enough in the past that the
/// affinity test never holds.
const NEVER_RAN: i64 = i64::MIN / 2;
/// SCHED_PRI_NHALF: priorities reachable only with nice at each end of the timeshare range.
const PRI_NHALF: i32 = (PRIO_MAX - PRIO_MIN) / 2;
/// SCHED_PRI_MIN / SCHED_PRI_MAX / SCHED_PRI_RANGE.
const SCHED_PRI_MIN: i32 = PRI_MIN_TIMESHARE as i32 + PRI_NHALF;
const SCHED_PRI_MAX: i32 = PRI_MAX_TIMESHARE as i32 - PRI_NHALF;
const SCHED_PRI_RANGE: i64 = (SCHED_PRI_MAX - SCHED_PRI_MIN) as i64;
/// SCHED_INTERACT_MAX / HALF / THRESH (the `kern.sched.interact` default).
const INTERACT_MAX: u64 = 100;
const INTERACT_HALF: u64 = INTERACT_MAX / 2;
/// The interactivity threshold (`sched_interact` = SCHED_INTERACT_THRESH).
pub const INTERACT_THRESH: i32 = 30;

/// Scheduling class (`td_pri_class`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Timeshare,
    /// rtprio 0..31 (priority 128 + rtprio); FIFO has no slice.
    Realtime {
        rtprio: u8,
        fifo: bool,
    },
    /// idprio 0..31 (priority 224 + idprio).
    Idle(u8),
    /// An interrupt thread (PRI_ITHD) at a fixed priority 0..=63.
    Ithd(u8),
}

/// Which of a tdq's three run queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Q {
    Realtime,
    Timeshare,
    Idle,
}

/// Where a thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    Sleeping,
    /// On `cpu`'s queue `q`, list `idx` (`ts_rqindex`).
    Queued {
        cpu: CpuId,
        q: Q,
        idx: u8,
    },
    Running,
}

/// How the wakeup being enqueued reaches the CPU it was queued on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notify {
    /// `sched_setpreempt` on the CPU doing the wakeup (a thread there, or a timer).
    Local,
    /// `tdq_notify`: IPI_PREEMPT or nothing.
    Remote,
    /// Moved by `sched_balance_pair`, which IPI_PREEMPTs the target.
    Balance,
}

/// Per-thread state (`struct td_sched` and the priority fields of `struct thread`).
#[derive(Clone, Debug)]
struct Thread {
    class: Class,
    nice: i32,
    allowed: CpuMask,
    /// td_priority (the sleep priority after a wakeup until it runs).
    pri: u8,
    /// td_user_pri, from `sched_priority`.
    user_pri: u8,
    /// ts_slice: ticks left.
    slice: u32,
    /// ts_slptime / ts_runtime: voluntary sleep and run, ticks << 10.
    slptime: u64,
    runtime: u64,
    /// ts_ticks (<< 10), ts_ltick, ts_ftick, ts_incrtick: CPU use for the batch priority.
    ticks: i64,
    ltick: i64,
    ftick: i64,
    incrtick: i64,
    /// ts_rltick: when it last left a CPU (affinity).
    rltick: i64,
    /// td_slptick: when it went to sleep.
    slptick: Option<i64>,
    /// ts_cpu.
    cpu: CpuId,
    at: Where,
    notify: Notify,
}

/// A per-CPU thread queue (`struct tdq`).
#[derive(Clone, Debug)]
struct Tdq {
    realtime: RunQ,
    timeshare: RunQ,
    idle: RunQ,
    /// tdq_load: running + queued threads.
    load: usize,
    /// tdq_idx / tdq_ridx: the calendar's insert and removal indices.
    idx: u8,
    ridx: u8,
    /// tdq_lowpri: the best priority seen since the last switch (255 when idle).
    lowpri: u8,
}

impl Tdq {
    fn new() -> Tdq {
        Tdq {
            realtime: RunQ::new(),
            timeshare: RunQ::new(),
            idle: RunQ::new(),
            load: 0,
            idx: 0,
            ridx: 0,
            lowpri: PRI_MAX_IDLE,
        }
    }
    fn runq(&mut self, q: Q) -> &mut RunQ {
        match q {
            Q::Realtime => &mut self.realtime,
            Q::Timeshare => &mut self.timeshare,
            Q::Idle => &mut self.idle,
        }
    }
    /// tdq_transferable: queued threads (none of ours is pinned).
    fn transferable(&self) -> usize {
        self.realtime.len() + self.timeshare.len() + self.idle.len()
    }
}

/// The ULE policy.
pub struct Ule {
    /// preempt_thresh: 0, PRI_MIN_KERN or PRI_MAX_IDLE by the options.
    preempt_thresh: u8,
    tasks: Vec<Option<Thread>>,
    tdq: Vec<Tdq>,
    /// tdq_idle: CPUs whose last choice was the idle thread.
    idle_mask: CpuMask,
    /// TDF_NEEDRESCHED on each CPU's current thread.
    needresched: Vec<bool>,
    /// td_owepreempt (or a pending IPI_PREEMPT): the next switch is SW_PREEMPT.
    owepreempt: Vec<bool>,
    /// balance_ticks: ticks of CPU 0 until `sched_balance`.
    balance_ticks: u64,
    rng: u64,
    hz: u32,
    ncpus: usize,
}

/// The `ule` policy: its name, summary, parameters and constructor.
pub const DEF: PolicyDef = PolicyDef {
    name: "ule",
    summary: "FreeBSD ULE: per-CPU queues, interactivity score from sleep/run history, timeshare calendar queue, idle stealing and balancing (sched_ule.c, FreeBSD 7; seed 001)",
    params: &[
        ParamDef {
            name: "preemption",
            default: 1,
            values: Values::Flag,
            meaning: "options PREEMPTION: preempt_thresh = PRI_MIN_KERN, a wakeup at a kernel priority ≤ 64 switches at once; 0 = preempt_thresh 0",
        },
        ParamDef {
            name: "full",
            default: 0,
            values: Values::Flag,
            meaning: "options FULL_PREEMPTION: preempt_thresh = 255, any better priority switches at once; needs preemption=1",
        },
    ],
    describe_defaults: true,
    check: super::bsd4::full_needs_preemption,
    build: boxed::<Ule>,
};

impl FromParams for Ule {
    fn from_params(params: &Params) -> Ule {
        let preempt_thresh = match (params.flag("preemption"), params.flag("full")) {
            (true, true) => PRI_MAX_IDLE,
            (true, false) => PRI_MIN_KERN,
            _ => 0,
        };
        Ule {
            preempt_thresh,
            tasks: Vec::new(),
            tdq: Vec::new(),
            idle_mask: CpuMask::EMPTY,
            needresched: Vec::new(),
            owepreempt: Vec::new(),
            balance_ticks: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            hz: 100,
            ncpus: 1,
        }
    }
}

impl Ule {
    fn ensure(&mut self, m: &MachineView) {
        if self.tdq.len() < m.ncpus {
            self.tdq.resize_with(m.ncpus, Tdq::new);
            self.needresched.resize(m.ncpus, false);
            self.owepreempt.resize(m.ncpus, false);
            self.idle_mask = CpuMask::first(m.ncpus);
        }
        self.ncpus = m.ncpus.max(1);
        self.hz = m.hz.max(1);
    }

    fn t(&self, id: TaskId) -> &Thread {
        self.tasks[id].as_ref().expect("ule: unknown task")
    }

    fn t_mut(&mut self, id: TaskId) -> &mut Thread {
        self.tasks[id].as_mut().expect("ule: unknown task")
    }

    /// `ticks`: hz ticks since boot.
    fn ticks(&self, now: u64) -> i64 {
        (now / (1_000_000_000 / u64::from(self.hz))) as i64
    }

    /// sched_slice: stathz / 10 ticks.
    fn sched_slice(&self) -> u32 {
        (self.hz / 10).max(1)
    }

    /// random(): a deterministic hash of the CPU, the time and a counter (splitmix64).
    fn random(&mut self, cpu: CpuId, now: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng ^ now.rotate_left(17) ^ (cpu as u64).wrapping_mul(0xbf58_476d);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// steal_thresh: min(fls(ncpus) − 1, 3).
    fn steal_thresh(&self) -> usize {
        ((usize::BITS - self.ncpus.leading_zeros()) as usize)
            .saturating_sub(1)
            .min(3)
    }

    /// affinity = SCHED_AFFINITY_DEFAULT: max(1, hz / 300) ticks.
    fn affinity(&self) -> i64 {
        i64::from((self.hz / 300).max(1))
    }

    /// sched_priority for a timeshare thread: its new user priority.
    fn sched_priority(th: &mut Thread, hz: u32) {
        if th.class != Class::Timeshare {
            return;
        }
        let score = (interact_score(th.runtime, th.slptime) as i32 + th.nice).max(0);
        let pri = if score < INTERACT_THRESH {
            let step = i32::from(PRI_MAX_REALTIME - PRI_MIN_REALTIME) / INTERACT_THRESH;
            i32::from(PRI_MIN_REALTIME) + step * score
        } else {
            let mut p = SCHED_PRI_MIN;
            if th.ticks != 0 {
                p += pri_ticks(th, hz) as i32;
            }
            p + th.nice
        };
        th.user_pri = pri.clamp(i32::from(PRI_MIN_REALTIME), i32::from(PRI_MAX_TIMESHARE)) as u8;
    }

    /// tdq_add + tdq_runq_add: queue `id` on `cpu` at its td_priority; `preempted` is
    /// SRQ_PREEMPTED (head of its list; the calendar's removal index for timeshare).
    fn tdq_add(&mut self, cpu: CpuId, id: TaskId, preempted: bool) {
        let slice = self.sched_slice();
        let th = self.t_mut(id);
        if th.slice == 0 {
            th.slice = slice;
        }
        th.cpu = cpu;
        let (pri, class) = (th.pri, th.class);
        let tdq = &mut self.tdq[cpu];
        let (q, idx) = if pri <= PRI_MAX_REALTIME {
            (Q::Realtime, pri / 4)
        } else if pri <= PRI_MAX_TIMESHARE {
            let idx = if preempted {
                tdq.ridx
            } else {
                // TS_RQ_PPQ is 1: one list per timeshare priority, offset by the insert index.
                let mut i = ((pri - PRI_MIN_TIMESHARE) + tdq.idx) % RQ_NQS as u8;
                if tdq.ridx != tdq.idx && i == tdq.ridx {
                    i = (i + RQ_NQS as u8 - 1) % RQ_NQS as u8;
                }
                i
            };
            (Q::Timeshare, idx)
        } else {
            (Q::Idle, pri / 4)
        };
        if !matches!(class, Class::Idle(_)) {
            self.idle_mask.remove(cpu);
        }
        tdq.lowpri = tdq.lowpri.min(pri);
        tdq.runq(q).add_idx(usize::from(idx), id, preempted);
        tdq.load += 1;
        self.t_mut(id).at = Where::Queued { cpu, q, idx };
    }

    /// tdq_runq_rem: take a queued thread off its list (advancing the calendar's removal index
    /// past a drained list) and, for timeshare, refresh its CPU use and priority.
    fn runq_rem(&mut self, id: TaskId, now_ticks: i64) {
        let Where::Queued { cpu, q, idx } = self.t(id).at else {
            unreachable!("ule: removing a thread that is not queued");
        };
        let tdq = &mut self.tdq[cpu];
        tdq.runq(q).remove_idx(usize::from(idx), id);
        if q == Q::Timeshare {
            if tdq.idx != tdq.ridx && tdq.ridx == idx && tdq.timeshare.status() & (1u64 << idx) == 0
            {
                tdq.ridx = (idx + 1) % RQ_NQS as u8;
            }
            let hz = self.hz;
            let th = self.t_mut(id);
            th.ltick = now_ticks;
            pctcpu_update(th, now_ticks, hz);
            Ule::sched_priority(th, hz);
        }
        self.t_mut(id).at = Where::Running;
    }

    /// tdq_choose: realtime, then timeshare from the removal index, then idle.
    fn tdq_choose(&self, cpu: CpuId) -> Option<TaskId> {
        let tdq = &self.tdq[cpu];
        if let Some(i) = tdq.realtime.first_idx() {
            return tdq.realtime.head(i);
        }
        if let Some(i) = tdq.timeshare.first_idx_from(usize::from(tdq.ridx)) {
            return tdq.timeshare.head(i);
        }
        tdq.idle.first_idx().and_then(|i| tdq.idle.head(i))
    }

    /// The priority of the thread running on `cpu` (the idle thread's 255 when none).
    fn cur_pri(&self, m: &MachineView, cpu: CpuId) -> u8 {
        match m.curr.get(cpu).copied().flatten() {
            Some(c) => self.tasks[c].as_ref().map_or(PRI_MAX_IDLE, |t| t.pri),
            None => PRI_MAX_IDLE,
        }
    }

    /// sched_pickcpu for a thread woken by `me` (`None`: no waking CPU, so no `tryself`).
    fn pickcpu(&self, m: &MachineView, id: TaskId, me: Option<CpuId>) -> CpuId {
        let n = self.ncpus;
        if n == 1 {
            return 0;
        }
        let th = self.t(id);
        // Its allowed CPUs, of which only those below n count (the bounded mask operations).
        let allowed = &th.allowed;
        let pri = th.pri;
        let cpu = th.cpu;
        if cpu < n && allowed.contains(cpu) {
            let lowpri = self.tdq[cpu].lowpri;
            // The last CPU if it idles, or if cache-affine and the thread beats all there.
            if lowpri > PRI_MIN_IDLE {
                return cpu;
            }
            let now = self.ticks(m.now);
            if th.rltick > now - self.affinity() && lowpri > pri {
                return cpu;
            }
        }
        if let Some(c) = self.idle_mask.lowest_common_below(allowed, n) {
            return c;
        }
        if let Some(me) =
            me.filter(|&me| me < n && allowed.contains(me) && pri < self.cur_pri(m, me))
        {
            return me; // tryself
        }
        // tdq_lowestpri: the worst best priority, ties to the lesser load, then to the later CPU.
        // (Priority, reversed load) starts below every CPU's key.
        let (mut best, mut best_key) = (None, (0, Reverse(usize::MAX)));
        for c in allowed.iter_below(n) {
            let key = (self.tdq[c].lowpri, Reverse(self.tdq[c].load));
            if key >= best_key {
                (best, best_key) = (Some(c), key);
            }
        }
        best.unwrap_or_else(|| allowed.lowest_below(n).unwrap_or(0))
    }

    /// tdq_steal: a queued thread of `from` that may run on `to` — realtime in priority order,
    /// timeshare from the removal index leaving the first one found, then idle.
    fn tdq_steal(&self, from: CpuId, to: CpuId) -> Option<TaskId> {
        let ok = |t: TaskId| self.t(t).allowed.contains(to);
        let linear = |rq: &RunQ| -> Option<TaskId> {
            set_bits(0, rq.status()).find_map(|i| rq.list(i).iter().copied().find(|&t| ok(t)))
        };
        let tdq = &self.tdq[from];
        if let Some(t) = linear(&tdq.realtime) {
            return Some(t);
        }
        // runq_steal_from: scan from ridx to the end, then (if ridx ≠ 0) everything again;
        // the first thread seen is skipped once.
        let mut first = true;
        let start = usize::from(tdq.ridx);
        for from_idx in [start, 0] {
            for i in set_bits(0, tdq.timeshare.status() & (u64::MAX << from_idx)) {
                for &t in tdq.timeshare.list(i) {
                    if !first && ok(t) {
                        return Some(t);
                    }
                    first = false;
                }
            }
            if start == 0 {
                break;
            }
        }
        linear(&tdq.idle)
    }

    /// tdq_move: steal one thread from `from` and queue it on `to` (SRQ_YIELDING: tail).
    fn tdq_move(&mut self, now: u64, from: CpuId, to: CpuId) -> Option<Move> {
        let t = self.tdq_steal(from, to)?;
        let now_ticks = self.ticks(now);
        self.runq_rem(t, now_ticks);
        self.tdq[from].load -= 1;
        self.tdq_add(to, t, false);
        Some(Move { task: t, from, to })
    }

    /// tdq_idled: idle `cpu` steals from the most loaded CPU with queued threads if that load
    /// reaches `steal_thresh`.
    fn tdq_idled(&mut self, now: u64, cpu: CpuId) -> Vec<Move> {
        if self.ncpus < 2 {
            return Vec::new();
        }
        let (mut high, mut highload) = (0, 0);
        for c in 0..self.ncpus {
            let tdq = &self.tdq[c];
            if tdq.transferable() == 0 || tdq.load < highload {
                continue;
            }
            highload = tdq.load;
            high = c;
        }
        if highload < self.steal_thresh() || high == cpu {
            return Vec::new();
        }
        self.tdq_move(now, high, cpu).into_iter().collect()
    }

    /// sched_balance: from a random starting CPU, the most loaded CPU with queued threads and
    /// the least loaded CPU; move half the difference.
    fn sched_balance(&mut self, now: u64) -> Vec<Move> {
        let n = self.ncpus;
        let interval = u64::from(self.hz);
        self.balance_ticks = (interval / 2).max(1) + self.random(0, now) % interval;
        if n < 2 {
            return Vec::new();
        }
        let mut i = (self.random(0, now) % n as u64) as usize;
        let (mut high, mut low): (Option<CpuId>, Option<CpuId>) = (None, None);
        for _ in 0..n {
            let tdq = &self.tdq[i];
            if high.is_none_or(|h| tdq.load > self.tdq[h].load) && tdq.transferable() > 0 {
                high = Some(i);
            }
            if low.is_none_or(|l| tdq.load < self.tdq[l].load) {
                low = Some(i);
            }
            i = (i + 1) % n;
        }
        let (Some(high), Some(low)) = (high, low) else {
            return Vec::new();
        };
        if high == low {
            return Vec::new();
        }
        // sched_balance_pair.
        let transferable = self.tdq[high].transferable();
        let diff = self.tdq[high].load.saturating_sub(self.tdq[low].load);
        let moves = diff.div_ceil(2).min(transferable);
        let mut out = Vec::new();
        for _ in 0..moves {
            if let Some(mv) = self.tdq_move(now, high, low) {
                self.t_mut(mv.task).notify = Notify::Balance;
                out.push(mv);
            }
        }
        out
    }

    /// sched_clock's calendar step: advance the insert index once the removal index caught up.
    fn advance_calendar(&mut self, cpu: CpuId) {
        let tdq = &mut self.tdq[cpu];
        if tdq.idx == tdq.ridx {
            tdq.idx = (tdq.idx + 1) % RQ_NQS as u8;
            if tdq.timeshare.status() & (1u64 << tdq.ridx) == 0 {
                tdq.ridx = tdq.idx;
            }
        }
    }
}

/// sched_interact_score: 0 (sleeps) … 100 (runs) from run and sleep history. With the default
/// threshold (≤ 50), run ≥ sleep scores 50 without computing.
pub fn interact_score(runtime: u64, slptime: u64) -> u64 {
    if INTERACT_THRESH as u64 <= INTERACT_HALF && runtime >= slptime {
        return INTERACT_HALF;
    }
    interact_formula(runtime, slptime)
}

/// The score's arithmetic without the shortcut: run > sleep: 50 + (50 − sleep / (run / 50));
/// sleep > run: run / (sleep / 50); equal: 50 (0 when both are 0).
pub fn interact_formula(runtime: u64, slptime: u64) -> u64 {
    if runtime > slptime {
        let div = (runtime / INTERACT_HALF).max(1);
        return INTERACT_HALF + (INTERACT_HALF - (slptime / div));
    }
    if slptime > runtime {
        let div = (slptime / INTERACT_HALF).max(1);
        return runtime / div;
    }
    if runtime != 0 {
        INTERACT_HALF
    } else {
        0
    }
}

/// SCHED_PRI_TICKS: recent CPU use scaled to 0..SCHED_PRI_RANGE.
fn pri_ticks(th: &Thread, hz: u32) -> i64 {
    let total = (th.ltick - th.ftick).max(i64::from(hz));
    let per = (total + SCHED_PRI_RANGE - 1) / SCHED_PRI_RANGE;
    ((th.ticks >> TICK_SHIFT) / per.max(1)).clamp(0, SCHED_PRI_RANGE)
}

/// sched_pctcpu_update: slide the CPU-use window to the last SCHED_TICK_TARG ticks.
fn pctcpu_update(th: &mut Thread, now: i64, hz: u32) {
    if th.ticks == 0 {
        return;
    }
    let hz = i64::from(hz);
    let targ = hz * TICK_SECS;
    let total = (th.ltick - th.ftick).max(hz);
    if now - hz / 10 < th.ltick && total < targ + hz {
        return;
    }
    th.ticks = if th.ltick > now - targ {
        (th.ticks / (now - th.ftick).max(1)) * targ
    } else {
        0
    };
    th.ltick = now;
    th.ftick = now - targ;
}

/// sched_interact_update: keep run + sleep history under SCHED_SLP_RUN_MAX (5 s).
fn interact_update(th: &mut Thread, hz: u32) {
    let max = (u64::from(hz) * 5) << TICK_SHIFT;
    let sum = th.runtime + th.slptime;
    if sum < max {
        return;
    }
    if sum > max * 2 {
        if th.runtime > th.slptime {
            (th.runtime, th.slptime) = (max, 1);
        } else {
            (th.slptime, th.runtime) = (max, 1);
        }
        return;
    }
    if sum > (max / 5) * 6 {
        th.runtime /= 2;
        th.slptime /= 2;
        return;
    }
    th.runtime = (th.runtime / 5) * 4;
    th.slptime = (th.slptime / 5) * 4;
}

impl Policy for Ule {
    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), PolicyError> {
        check_class_knobs(
            NAME,
            group,
            knobs,
            ACCEPTED,
            |p| match p {
                SchedPolicy::Batch => Some("a Linux class; ULE has timeshare, rtprio and idprio"),
                SchedPolicy::Deadline { .. } => Some("SCHED_DEADLINE, a Linux 3.14 class"),
                _ => None,
            },
            "ULE has one slice for every thread, stathz/10",
        )
    }

    fn task_new(&mut self, m: &MachineView, setup: &TaskSetup) {
        self.ensure(m);
        let rt = |p: u8| ((99 - u32::from(p.clamp(1, 99))) * 31 / 98) as u8;
        let class = match (setup.kind, setup.sched_policy()) {
            (TaskKind::Interrupt { priority }, _) => Class::Ithd(priority.min(PRI_MAX_ITHD)),
            (_, SchedPolicy::Fifo(p)) => Class::Realtime {
                rtprio: rt(p),
                fifo: true,
            },
            (_, SchedPolicy::Rr(p)) => Class::Realtime {
                rtprio: rt(p),
                fifo: false,
            },
            (_, SchedPolicy::Idle) => Class::Idle(0),
            _ => Class::Timeshare,
        };
        let now = self.ticks(m.now);
        let mut th = Thread {
            class,
            nice: setup.nice().clamp(PRIO_MIN, PRIO_MAX - 1),
            allowed: setup.allowed,
            pri: 0,
            user_pri: match class {
                Class::Realtime { rtprio, .. } => PRI_MIN_REALTIME + rtprio,
                Class::Idle(r) => PRI_MIN_IDLE + r,
                Class::Ithd(p) => p,
                Class::Timeshare => 0,
            },
            slice: 1, // sched_fork_thread: learn interactivity quickly
            slptime: 0,
            runtime: 0,
            ticks: 0,
            ltick: now,
            ftick: now,
            incrtick: now,
            rltick: NEVER_RAN,
            slptick: None,
            cpu: setup.allowed.lowest().unwrap_or(0),
            at: Where::Sleeping,
            notify: Notify::Local,
        };
        Ule::sched_priority(&mut th, self.hz);
        th.pri = th.user_pri;
        if self.tasks.len() <= setup.id {
            self.tasks.resize(setup.id + 1, None);
        }
        self.tasks[setup.id] = Some(th);
    }

    fn select_task_rq(
        &mut self,
        m: &MachineView,
        task: TaskId,
        prev: CpuId,
        waker: Option<CpuId>,
    ) -> CpuId {
        self.ensure(m);
        let now = self.ticks(m.now);
        let (hz, slice) = (self.hz, self.sched_slice());
        let th = self.t_mut(task);
        // sched_wakeup: account the voluntary sleep, refill the slice.
        if let Some(s) = th.slptick.take() {
            if s != now {
                th.slptime += ((now - s) as u64) << TICK_SHIFT;
                interact_update(th, hz);
                pctcpu_update(th, now, hz);
                Ule::sched_priority(th, hz);
            }
            th.slice = slice;
        }
        // sched_add recomputes the priority before choosing.
        Ule::sched_priority(th, hz);
        // The CPU doing the wakeup: the waker's, or for a timer or an interrupt the thread's
        // previous CPU. A thread released at the start of the run (time 0, no waker, never ran)
        // has none: really its creator runs there at the same user priority, so `tryself`
        // could not take it, while the simulated CPU is still idle at time 0 and would take
        // every thread (all of them on CPU 0, the rest of the machine left to `tdq_idled`'s
        // one-at-a-time steals). Later wakeups without a waker are timers and interrupts.
        let released_at_start = m.now == 0 && self.t(task).rltick == NEVER_RAN;
        let me = match waker {
            Some(w) => Some(w),
            None if released_at_start => None,
            None => Some(if prev < m.ncpus { prev } else { 0 }),
        };
        let cpu = self.pickcpu(m, task, me);
        self.t_mut(task).notify = if Some(cpu) == me {
            Notify::Local
        } else {
            Notify::Remote
        };
        cpu
    }

    fn enqueue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, _kind: EnqueueKind) {
        self.ensure(m);
        self.tdq_add(cpu, task, false);
    }

    fn dequeue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: DequeueKind) {
        let now = self.ticks(m.now);
        self.needresched[cpu] = false;
        self.owepreempt[cpu] = false;
        self.tdq[cpu].load -= 1; // tdq_load_rem
        if kind == DequeueKind::Exit {
            self.tasks[task] = None;
            return;
        }
        let th = self.t_mut(task);
        th.at = Where::Sleeping;
        th.rltick = now;
        th.slptick = Some(now); // sched_sleep
        if !matches!(th.class, Class::Ithd(_)) {
            th.pri = PSOCK; // _sleep lends the sleep priority (ithread_loop's wait lends none)
        }
    }

    fn wakeup_preempt(
        &mut self,
        _m: &MachineView,
        cpu: CpuId,
        curr: TaskId,
        woken: TaskId,
    ) -> bool {
        let (pri, cpri) = (self.t(woken).pri, self.t(curr).pri);
        match self.t(woken).notify {
            Notify::Balance => {
                // sched_balance_pair's IPI_PREEMPT: mi_switch(SW_PREEMPT) there, better or not.
                self.owepreempt[cpu] = true;
                true
            }
            Notify::Remote => {
                // tdq_notify.
                if pri > cpri {
                    return false;
                }
                let ipi = cpri > PRI_MIN_IDLE
                    || (pri < PRI_MAX_REALTIME && cpri > PRI_MAX_REALTIME)
                    || pri <= self.preempt_thresh;
                if ipi {
                    self.owepreempt[cpu] = true;
                }
                ipi
            }
            Notify::Local => {
                // sched_setpreempt.
                if pri >= cpri {
                    return false;
                }
                if pri <= self.preempt_thresh || cpri >= PRI_MIN_IDLE {
                    self.owepreempt[cpu] = true; // critical_exit switches at once
                    return true;
                }
                // NEEDRESCHED: ast() on the way back to user mode — the waker's own system
                // call return, or the return from the clock interrupt that did a timer wakeup.
                true
            }
        }
    }

    fn pick_next_task(&mut self, m: &MachineView, cpu: CpuId) -> Option<TaskId> {
        self.ensure(m);
        self.needresched[cpu] = false;
        self.owepreempt[cpu] = false;
        let Some(id) = self.tdq_choose(cpu) else {
            // sched_choose → the idle thread.
            self.idle_mask.insert(cpu);
            self.tdq[cpu].lowpri = PRI_MAX_IDLE;
            return None;
        };
        let now = self.ticks(m.now);
        self.runq_rem(id, now);
        let th = self.t_mut(id);
        let pri = th.pri;
        th.pri = th.user_pri; // sched_userret on its way back to user mode
        self.tdq[cpu].lowpri = pri; // sched_switch: the switched-in thread's priority
        Some(id)
    }

    fn put_prev_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: PutPrevKind) {
        let now = self.ticks(m.now);
        let sw_preempt = std::mem::take(&mut self.owepreempt[cpu]);
        let ast = std::mem::take(&mut self.needresched[cpu]);
        let th = self.t_mut(task);
        th.rltick = now;
        if kind == PutPrevKind::Preempted && !sw_preempt && ast {
            th.pri = th.user_pri; // ast(): sched_prio(td, td_user_pri), then mi_switch
        }
        self.tdq[cpu].load -= 1;
        self.tdq_add(cpu, task, sw_preempt && kind == PutPrevKind::Preempted);
    }

    fn update_curr(&mut self, _m: &MachineView, _cpu: CpuId, _task: TaskId, _delta_ns: u64) {}

    fn charges_runtime(&self) -> bool {
        false
    }

    fn task_tick(&mut self, m: &MachineView, cpu: CpuId, task: TaskId) -> bool {
        self.ensure(m);
        let now = self.ticks(m.now);
        let hz = self.hz;
        let th = self.t_mut(task);
        // sched_tick (hardclock): CPU use for the batch priority.
        if th.incrtick != now {
            th.ticks += 1 << TICK_SHIFT;
            th.incrtick = now;
            th.ltick = now;
            if th.ftick + i64::from(hz) * (TICK_SECS + 1) < th.ltick {
                pctcpu_update(th, now, hz);
            }
        }
        // sched_clock (statclock).
        self.advance_calendar(cpu);
        let th = self.t_mut(task);
        if matches!(th.class, Class::Realtime { fifo: true, .. }) {
            return self.needresched[cpu];
        }
        if th.class == Class::Timeshare {
            th.runtime += 1 << TICK_SHIFT; // tickincr
            interact_update(th, hz);
        }
        th.slice = th.slice.saturating_sub(1);
        if th.slice == 0 {
            Ule::sched_priority(th, hz);
            self.needresched[cpu] = true;
        }
        self.needresched[cpu]
    }

    fn yield_task(&mut self, _m: &MachineView, _cpu: CpuId, _task: TaskId) -> bool {
        true // sched_relinquish: mi_switch(SW_VOL) at the current priority
    }

    fn balance(&mut self, m: &MachineView, cpu: CpuId, kind: BalanceKind) -> Vec<Move> {
        self.ensure(m);
        let idle = m.curr[cpu].is_none();
        let mut moves = Vec::new();
        if kind == BalanceKind::Periodic {
            if idle {
                self.advance_calendar(cpu); // sched_clock runs for the idle thread too
            }
            // The long-term balancer runs from CPU 0's clock.
            if cpu == 0 && self.ncpus > 1 {
                if self.balance_ticks == 0 {
                    self.balance_ticks = self.random(0, m.now) % u64::from(self.hz) + 1;
                }
                self.balance_ticks -= 1;
                if self.balance_ticks == 0 {
                    moves = self.sched_balance(m.now);
                }
            }
        }
        // The idle thread tries to steal each time it runs (after any interrupt).
        if idle && self.tdq[cpu].transferable() == 0 {
            moves.extend(self.tdq_idled(m.now, cpu));
        }
        moves
    }

    fn idle_ticks(&self) -> bool {
        true
    }

    fn wakeup_preempt_at_once(&self, cpu: CpuId) -> bool {
        self.owepreempt[cpu]
    }

    fn loopback_via_netisr(&self) -> bool {
        true // if_simloop → netisr_queue (sys/net/if_loop.c)
    }

    fn device_interrupt_threads(&self) -> bool {
        true // ithread_execute_handlers → biodone → wakeup (sys/kern/kern_intr.c, vfs_bio.c)
    }

    fn lend_priority(&mut self, m: &MachineView, holder: TaskId, from: TaskId) {
        // sched_lend_prio → sched_thread_priority: a queued thread is requeued at the new one.
        let pri = self.t(from).pri;
        if pri >= self.t(holder).pri {
            return;
        }
        match self.t(holder).at {
            Where::Queued { cpu, .. } => {
                let now = self.ticks(m.now);
                self.runq_rem(holder, now);
                self.t_mut(holder).pri = pri;
                self.tdq[cpu].load -= 1;
                self.tdq_add(cpu, holder, false);
            }
            _ => self.t_mut(holder).pri = pri,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{built, knobs, spec, spec_err, Harnessed, ALL, H, MS};

    impl Harnessed for Ule {
        const BALANCE_ON_TICK: bool = true;
    }

    /// ule with `params` on `ncpus` CPUs at HZ 1000.
    fn uleh(params: &str, ncpus: usize) -> H<Ule> {
        H::new(&format!("ule:{params}"), 1000, ncpus)
    }

    impl H<Ule> {
        fn th(&self, id: TaskId) -> &Thread {
            self.p.t(id)
        }
        /// `id` alone on CPU 0: run one tick, sleep `sleep_ms`, wake by timer, `rounds` times.
        fn run_sleep(&mut self, id: TaskId, rounds: usize, sleep_ms: u64) {
            for _ in 0..rounds {
                assert_eq!(self.pick(0), Some(id));
                self.tick(0);
                self.sleep(0);
                self.now += sleep_ms * MS;
                self.wake_go(id, 0, None, MS);
            }
        }
    }

    #[test]
    fn interactivity_score_follows_sleep_and_run_history() {
        let t = 1 << TICK_SHIFT;
        assert_eq!(interact_score(100 * t, 1000 * t), 5, "sleep 10 × run");
        assert_eq!(interact_score(1000 * t, 4000 * t), 12);
        assert_eq!(interact_score(500 * t, 500 * t), 50, "equal");
        assert_eq!(interact_formula(0, 0), 0);
        assert_eq!(interact_score(0, 0), 50, "no history: run ≥ sleep");
        // Run 10 × sleep: the formula gives 95, but with the threshold ≤ 50 sched_interact_score
        // returns 50 at once for any run ≥ sleep (both are above the threshold anyway).
        assert_eq!(interact_formula(1000 * t, 100 * t), 95);
        assert_eq!(interact_score(1000 * t, 100 * t), 50);
        // The threshold with nice: score 20 is interactive at nice 0 (priority 128 + 20) and
        // nice 9 (29), not at nice 10 (30: batch, 180 + nice).
        let mut h = uleh("", 1);
        for (id, nice) in [(0, 0), (1, 9), (2, 10), (3, -5)] {
            h.spawn_on(id, 0, knobs(&format!("nice={nice}")));
            let th = h.p.t_mut(id);
            (th.runtime, th.slptime) = (200 * t, 500 * t);
            Ule::sched_priority(th, 1000);
        }
        let pris: Vec<u8> = (0..4).map(|i| h.th(i).user_pri).collect();
        assert_eq!(pris, [148, 157, 190, 143]);
        // History is capped at 5 s: over 6/5 of it is halved, just over it kept at 4/5.
        let th = h.p.t_mut(0);
        (th.runtime, th.slptime) = (1000 * t, 5000 * t);
        interact_update(th, 1000);
        assert_eq!((th.runtime, th.slptime), (800 * t, 4000 * t));
    }

    #[test]
    fn sleepers_get_the_interactive_band_and_hogs_the_batch_band() {
        let mut h = uleh("", 1);
        h.spawn_on(0, 0, knobs(""));
        // New threads have no history (score 50: batch, 180) and a one-tick slice.
        assert_eq!((h.th(0).user_pri, h.th(0).slice), (180, 1));
        h.run_sleep(0, 30, 10);
        let p = h.th(0).user_pri;
        assert!((128..=157).contains(&p), "1 ms run per 10 ms sleep: {p}");
        assert_eq!(p, 128 + 5, "score sleep 10 × run = 5");
        assert_eq!(
            h.th(0).pri,
            PSOCK,
            "woken at the sleep priority until it runs"
        );
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.th(0).pri, p, "sched_userret");
        // A hog: batch band, 180 + recent CPU use.
        let mut h = uleh("", 1);
        h.spawn_on(0, 0, knobs(""));
        assert_eq!(h.pick(0), Some(0));
        for _ in 0..3000 {
            if h.tick(0) {
                h.put_prev(0, PutPrevKind::Preempted);
                assert_eq!(h.pick(0), Some(0));
            }
        }
        let p = h.th(0).user_pri;
        assert!((200..=203).contains(&p), "a hog over a full window: {p}");
        // nice shifts the batch priority one for one.
        let mut h = uleh("", 1);
        h.spawn_on(0, 0, knobs("nice=10"));
        h.pick(0);
        for _ in 0..3000 {
            if h.tick(0) {
                h.put_prev(0, PutPrevKind::Preempted);
                h.pick(0);
            }
        }
        assert_eq!(h.th(0).user_pri, p + 10);
    }

    /// A thread woken by a timer (priority PSOCK, 88) while `running` has the CPU.
    #[test]
    fn wakeup_preemption_follows_the_preemption_threshold() {
        for (params, running, at_once) in [
            ("preemption=1,full=0", "", false),
            ("preemption=1,full=0", "policy=idle", true),
            ("preemption=1,full=1", "", true),
            ("preemption=0", "", false),
            // sched_setpreempt always preempts an idle-class thread, and critical_exit honours
            // td_owepreempt even without options PREEMPTION.
            ("preemption=0", "policy=idle", true),
        ] {
            let mut h = uleh(params, 1);
            h.spawn_on(0, 0, knobs(""));
            h.spawn_on(1, 0, knobs(running));
            h.run_sleep(0, 5, 10);
            assert_eq!(h.pick(0), Some(0));
            h.tick(0);
            h.sleep(0);
            assert_eq!(h.pick(0), Some(1));
            for _ in 0..3 {
                h.tick(0);
            }
            // The woken thread always runs next (owepreempt, or the AST at the clock
            // interrupt's return); which of the two it was shows where `running` is requeued.
            let (cpu, go) = h.wake_go(0, 0, None, MS);
            assert_eq!((cpu, go), (0, true), "{params} over '{running}'");
            h.put_prev(0, PutPrevKind::Preempted);
            assert_eq!(h.pick(0), Some(0), "the woken thread runs first");
            // owepreempt requeues a timeshare thread at the calendar's removal index (to run
            // next); an AST at its priority's place after the insert index.
            if running.is_empty() {
                let Where::Queued { cpu, q, idx } = h.th(1).at else {
                    panic!("{:?}", h.th(1).at)
                };
                assert_eq!(q, Q::Timeshare);
                let at_ridx = idx == h.p.tdq[cpu].ridx;
                assert_eq!(at_ridx, at_once, "{params}: requeued at list {idx}");
            }
        }
        // A wakeup by a thread on the same CPU: NEEDRESCHED is acted on as the waker's system
        // call returns (ast), so wakeup_preempt says yes whatever the options.
        for params in ["preemption=0", "preemption=1,full=0"] {
            let mut h = uleh(params, 1);
            h.spawn_on(0, 0, knobs(""));
            h.spawn_on(1, 0, knobs(""));
            h.run_sleep(0, 5, 10);
            assert_eq!(h.pick(0), Some(0));
            h.tick(0);
            h.sleep(0);
            assert_eq!(h.pick(0), Some(1));
            for _ in 0..3 {
                h.tick(0);
            }
            assert_eq!(h.wake_go(0, 0, Some(0), MS), (0, true), "{params}");
            assert!(
                !h.p.owepreempt[0] && h.p.needresched[0],
                "{params}: an AST, not owepreempt"
            );
        }
    }

    /// tdq_notify: a remote CPU is IPI'd when the new thread is realtime-queue (< 159) over a
    /// timeshare thread, whatever the options; a timeshare thread over timeshare only under
    /// FULL_PREEMPTION.
    #[test]
    fn remote_wakeups_ipi_by_tdq_notify_rules() {
        for (params, woken_pri, ipi) in [
            ("preemption=0", PSOCK, true),
            ("preemption=1,full=0", 170, false),
            ("preemption=1,full=1", 170, true),
        ] {
            let mut h = uleh(params, 2);
            h.spawn_on(0, 0, knobs(""));
            h.spawn_on(1, 1, knobs(""));
            h.pick(0);
            h.pick(1);
            h.p.t_mut(1).pri = 200;
            h.p.t_mut(0).pri = woken_pri;
            h.p.t_mut(0).notify = Notify::Remote;
            let go = h.with(|p, m| p.wakeup_preempt(m, 1, 1, 0));
            assert_eq!(go, ipi, "{params} pri {woken_pri}");
            assert_eq!(h.p.owepreempt[1], ipi);
        }
    }

    #[test]
    fn slice_expiry_reschedules_after_stathz_over_10_ticks() {
        let mut h = uleh("", 1);
        h.spawn_on(0, 0, knobs(""));
        h.spawn_on(1, 0, knobs(""));
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(
            h.ticks_until_resched(0, 1000),
            1,
            "a new thread's one-tick slice"
        );
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(1));
        assert_eq!(h.ticks_until_resched(0, 1000), 1);
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.ticks_until_resched(0, 1000), 100, "sched_slice = hz/10");
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(1), "round robin");
        // SCHED_FIFO has no slice.
        let mut h = uleh("", 1);
        h.spawn_on(0, 0, knobs("policy=fifo:50"));
        h.spawn_on(1, 0, knobs("policy=fifo:50"));
        h.pick(0);
        assert_eq!(h.ticks_until_resched(0, 1000), 0);
    }

    #[test]
    fn the_calendar_queue_runs_worse_batch_threads_too() {
        // A batch thread at 220 queued behind a stream of 180s still runs: the 180s go in after
        // the insert index, which moves on every tick.
        let mut h = uleh("", 1);
        for id in 0..3 {
            h.spawn_on(id, 0, knobs(""));
            let th = h.p.t_mut(id);
            th.runtime = 1 << 20; // batch
        }
        h.p.t_mut(2).nice = 19;
        for id in 0..3 {
            Ule::sched_priority(h.p.t_mut(id), 1000);
        }
        assert_eq!(h.th(2).user_pri, 199);
        let mut ran2 = false;
        for _ in 0..200 {
            let t = h.pick(0).unwrap();
            ran2 |= t == 2;
            let n = h.ticks_until_resched(0, 1000);
            assert!(n > 0);
            h.put_prev(0, PutPrevKind::Preempted);
        }
        assert!(ran2, "the nice 19 thread ran");
    }

    #[test]
    fn an_idle_cpu_steals_from_a_busy_queue() {
        let mut h = uleh("", 2);
        for id in 0..3 {
            h.spawn_on(id, 0, knobs(""));
        }
        // CPU 1 idled at the start, so pickcpu would have spread them; queue them by hand.
        assert_eq!(h.pick(0), Some(0));
        let moves = h.with(|p, m| p.balance(m, 1, BalanceKind::NewIdle));
        assert_eq!(moves.len(), 1);
        assert_eq!((moves[0].from, moves[0].to), (0, 1));
        assert_eq!(h.pick(1), Some(moves[0].task));
        // With 4 CPUs steal_thresh is 2.
        let mut h = uleh("", 4);
        h.spawn_on(0, 0, knobs(""));
        h.pick(0);
        assert!(h
            .with(|p, m| p.balance(m, 3, BalanceKind::NewIdle))
            .is_empty());
        h.spawn_on(1, 0, knobs(""));
        // runq_steal_from leaves the first timeshare thread from the removal index (0 here):
        // a lone queued thread is not taken.
        assert!(h
            .with(|p, m| p.balance(m, 3, BalanceKind::NewIdle))
            .is_empty());
        h.spawn_on(2, 0, knobs(""));
        let moves = h.with(|p, m| p.balance(m, 3, BalanceKind::NewIdle));
        assert_eq!(
            moves,
            vec![Move {
                task: 2,
                from: 0,
                to: 3
            }]
        );
        // Threads that may not run on the idle CPU stay.
        let mut h = uleh("", 2);
        h.spawn_on(0, 0, knobs(""));
        h.spawn_on(1, 0, knobs("cpus=0"));
        h.spawn_on(2, 0, knobs("cpus=0"));
        h.pick(0);
        assert!(h
            .with(|p, m| p.balance(m, 1, BalanceKind::NewIdle))
            .is_empty());
    }

    #[test]
    fn pickcpu_prefers_the_last_cpu_when_idle_then_an_idle_cpu() {
        let mut h = uleh("", 4);
        for id in 0..3 {
            h.spawn_on(id, id, knobs(""));
            assert_eq!(h.pick(id), Some(id));
        }
        h.task_new(4, 0, knobs(""), ALL); // a sleeper that last ran on CPU 2, long ago
        h.p.t_mut(4).cpu = 2;
        h.now += 10 * MS;
        assert_eq!(
            h.wake_go(4, 2, Some(0), MS).0,
            3,
            "idle CPU 3 over busy CPU 2"
        );
        // Its last CPU, idle, wins over the lowest idle CPU.
        h.task_new(5, 0, knobs(""), ALL);
        h.p.t_mut(5).cpu = 3;
        h.sleep(1);
        assert_eq!(h.pick(1), None);
        assert_eq!(h.p.idle_mask, CpuMask::from_bits(0b0010));
        h.pick(3);
        h.sleep(3);
        assert_eq!(h.pick(3), None);
        assert_eq!(h.wake_go(5, 3, Some(0), MS).0, 3);
        // Nothing idle: the waking CPU if better than its thread (tryself), else the CPU whose
        // best priority is worst.
        for (pri, expect) in [(PSOCK, 1), (170, 0)] {
            let mut h = uleh("", 2);
            h.spawn_on(0, 0, knobs(""));
            h.spawn_on(1, 1, knobs(""));
            h.pick(0);
            h.pick(1);
            (h.p.t_mut(0).pri, h.p.tdq[0].lowpri) = (200, 200);
            (h.p.t_mut(1).pri, h.p.tdq[1].lowpri) = (150, 150);
            h.task_new(2, 0, knobs(""), ALL);
            (h.p.t_mut(2).cpu, h.p.t_mut(2).pri) = (1, pri);
            assert_eq!(h.wake_go(2, 1, Some(1), MS).0, expect, "priority {pri}");
        }
    }

    #[test]
    fn sched_balance_moves_half_the_imbalance() {
        let mut h = uleh("", 2);
        for id in 0..5 {
            h.spawn_on(id, 0, knobs(""));
        }
        h.pick(0);
        h.spawn_on(5, 1, knobs(""));
        h.pick(1);
        h.p.balance_ticks = 1;
        let moves = h.with(|p, m| p.balance(m, 0, BalanceKind::Periodic));
        // Loads 5 and 1: two threads move, and CPU 1 is told to reschedule.
        assert_eq!(moves.len(), 2);
        assert!(moves.iter().all(|mv| (mv.from, mv.to) == (0, 1)));
        assert_eq!((h.p.tdq[0].load, h.p.tdq[1].load), (3, 3));
        let t = moves[0].task;
        assert!(h.with(|p, m| p.wakeup_preempt(m, 1, 5, t)));
        let b = h.p.balance_ticks;
        assert!(
            (500..1500).contains(&b),
            "next balance in hz/2 + random(hz): {b}"
        );
    }

    #[test]
    fn parameters_and_knobs() {
        let u = built::<Ule>("ule");
        assert_eq!(spec("ule").describe(), "ule:preemption=1,full=0");
        assert_eq!(u.preempt_thresh, PRI_MIN_KERN);
        let full = built::<Ule>("ule:full=1");
        assert_eq!(full.preempt_thresh, PRI_MAX_IDLE);
        let none = built::<Ule>("ule:preemption=0");
        assert_eq!(none.preempt_thresh, 0);
        let e = spec_err("ule:full=2");
        assert!(e.contains("full=2") && e.contains("0 or 1"), "{e}");
        let e = spec_err("ule:preemption=0,full=1");
        assert!(e.contains("needs preemption=1"), "{e}");
        assert!("ule:ipiwakeup=1".parse::<PolicySpec>().is_err());
        for bad in ["policy=batch", "policy=deadline:1ms/10ms/10ms", "slice=1ms"] {
            let e = u.check_knobs("g", &knobs(bad)).unwrap_err().to_string();
            let key = bad.split('=').next().unwrap();
            assert!(e.contains("'g'") && e.contains(key), "{e}");
        }
        for ok in [
            "nice=-5",
            "policy=idle",
            "policy=rr:3",
            "policy=fifo:99",
            "cpus=0",
        ] {
            assert!(u.check_knobs("g", &knobs(ok)).is_ok(), "{ok}");
        }
    }
}
