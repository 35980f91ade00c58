//! Linux 2.6 O(1) scheduler (Ingo Molnar, 2.5.2 – 2.6.22), modelled on Linux 2.6.20
//! kernel/sched.c, with Bill Hartner's tunable priority-preemption threshold (LKML, 2002-10-15,
//! seed 000: `if (p->prio < curr->prio && (idle_rq || rt_task(p) || p->prio + threshold <
//! curr->prio)) resched`; 0 = stock, 40 = no priority preemption among SCHED_OTHER tasks).
//!
//! Followed from 2.6.20 kernel/sched.c (github sagsango/linux-2.6.20): `static_prio_timeslice`
//! (slice = max(x·(140 − static_prio)/20, 5 ms), x = 400 ms for nice < 0 else 100 ms),
//! `__normal_prio`/`effective_prio` (bonus = CURRENT_BONUS − 5, MAX_SLEEP_AVG 1 s), `DELTA`,
//! `TASK_INTERACTIVE`, `INTERACTIVE_SLEEP`, `recalc_task_prio`, `activate_task`, `__activate_task`
//! (SCHED_BATCH goes to the expired array), `schedule` (run_time / CURRENT_BONUS taken off
//! sleep_avg at every switch; on-runqueue credit for SLEEP_INTERACTIVE (30 %) and
//! SLEEP_INTERRUPTED (100 %) wakers; array switch), `task_running_tick` (slice expiry,
//! `expired_starving`, TIMESLICE_GRANULARITY round robin, SCHED_RR), `sys_sched_yield`,
//! `try_to_wake_up`, `can_migrate_task`, `move_tasks`, `find_busiest_group`; SD_CPU_INIT
//! (include/linux/topology.h: imbalance_pct 125, cache_nice_tries 1, and the 2.5 ms
//! cache_hot_time of kernels before 2.6.16, which then began to calibrate it at boot).
//!
//! `yield=2.5.25` swaps in the sys_sched_yield of Linux 2.5.22–2.5.27, the kernel seed 000 ran
//! (Ingo Molnar's "\[patch\] 2.5.22 current scheduler bits #1", LKML 2002-06-17, brought it in;
//! "\[patch\] scheduler bits for 2.5.27", 2002-07-20, replaced it by the expired-array yield that
//! 2.6 kept): a SCHED_OTHER task that yields loses one priority level and goes to the tail of
//! that level's list in the *active* array; at the lowest level (139) it gives up one tick of its
//! slice instead and keeps its place, and only with one tick left does it go to the expired
//! array. The lost levels come back when the priority is next computed, which 2.5.25 did at a
//! slice's expiry and at a wakeup after a sleep of at least one jiffy (`activate_task` recomputes
//! only when `jiffies - sleep_timestamp` is not 0); so under this variant a wakeup within the
//! same jiffy neither credits sleep nor recomputes the priority. The rest of the policy stays
//! 2.6.20's (its sleep_avg in ns, its timeslices).
//!
//! `softirq=2.5.25` runs loopback TCP's softirq as 2.5.22–2.5.30's `do_softirq` did
//! (kernel/softirq.c, as Molnar's 2.5.22 timer and 2.5.30 softirq patches show it): a softirq
//! already pending at entry may not restart the pass (`mask = ~pending`), so one raised again
//! during it is left to `wakeup_softirqd`, which calls `wake_up_process` when ksoftirqd (nice
//! 19) sleeps — a call of `try_to_wake_up` that seed 000's counters count. On loopback a
//! segment is raised as NET_RX in the sender's `netif_rx` and processed at its
//! `local_bh_enable`; if its reader sleeps in `tcp_recvmsg` the segment goes to the prequeue and
//! the reader ACKs it in its own context, otherwise `tcp_rcv_established` queues it and may
//! ACK at once, a loopback transmit that raises NET_RX again inside the pass. The machine
//! assumes that ACK is always sent (quick-ACK mode; 2.5.25's delayed-ACK and pingpong rules are
//! not modelled), so the variant is an upper bound of these wakeups (`machine/kthreads.rs`).
//!
//! `version=2.6.14` swaps in the rules of Linux 2.6.14's kernel/sched.c, the mainline kernel
//! seed 004 ran (read from a copy of the v2.6.14 tree, github jasonactions/2.6.14-comment,
//! whose code lines are the release's; and from the context lines of Mike Galbraith's
//! "\[2.6.16-rc6 patch\] remove sleep_avg multiplier", LKML 2006-03-14, merged for 2.6.17).
//! `recalc_task_prio` there differs from 2.6.20's in the credit a wakeup (and schedule()'s
//! on-runqueue credit, which calls the same function) gives:
//! - the *multiplier*: a sleep is credited `(MAX_BONUS − CURRENT_BONUS) ? : 1` times over, so a
//!   task with no bonus gains ten times its sleep (2.6.20 credits the sleep once);
//! - the *long sleep*: a user task (`p->mm`) that slept longer than `INTERACTIVE_SLEEP(p)`, not
//!   in an uninterruptible sleep, gets `sleep_avg = MAX_SLEEP_AVG − DEF_TIMESLICE` (900 ms,
//!   bonus 9) whatever it had, and keeps its on-runqueue credit (`activated` 1 or 2); 2.6.20
//!   raises it only to the `INTERACTIVE_SLEEP` ceiling, only if below, and marks the sleep
//!   non-interactive (no on-runqueue credit, further credit capped at the ceiling). A kernel
//!   thread (no `mm`) never gets the long-sleep rule: its sleep is multiplied like a short one;
//! - the *uninterruptible sleep*: `try_to_wake_up` sets `activated = -1` for a task woken from
//!   TASK_UNINTERRUPTIBLE (here the machine's device waits: a disk request, a swap-in read), so
//!   schedule() gives it no on-runqueue credit (only `activated > 0` earns it), and a user task's
//!   multiplied credit stops at `INTERACTIVE_SLEEP(p)`: none if sleep_avg is already there, else
//!   at most up to it.
//!
//! and `DELTA(p)` is `SCALE(TASK_NICE(p), 40, MAX_BONUS) + INTERACTIVE_DELTA`, C's division
//! truncating toward zero, where 2.6.20 scales `TASK_NICE(p) + 20` and subtracts 5 (Martin
//! Andersson's rounding fix, posted against 2.6.15.4 on LKML in February 2006): the two
//! agree at nice 0 and above, but at nice −1..−3, −5..−7, −9..−11, … 2.6.14's DELTA is one
//! more, so a nice −5 task is interactive only from bonus 6 (prio ≤ 114, not 115) and its
//! `INTERACTIVE_SLEEP` is 699 ms, not 599 ms.
//!
//! 2.6.14 also had no high-resolution timers (2.6.16 brought them to `nanosleep`): a timed
//! sleep ends at a tick, woken from the timer softirq, so with `version=2.6.14` the machine
//! ends sleeps on ticks ([`Policy::jiffy_timers`]). A task woken so starts just after a tick,
//! and one that runs less than a jiffy before sleeping again is seldom the current task when a
//! tick charges its timeslice: interbench's audio task, 2.5 ms of CPU every 50 ms, is charged
//! two ticks a period at HZ 1000 rather than 2.5 on average.
//!
//! Everything else this policy models reads the same in both: `effective_prio`,
//! `TASK_INTERACTIVE` (given DELTA), `EXPIRED_STARVING` (`>= LIMIT·nr + 1` there, `> LIMIT·nr`
//! here, in jiffies, and `curr->static_prio > best_expired_prio`), `scheduler_tick`'s expiry and
//! TIMESLICE_GRANULARITY requeue, `task_timeslice`, `TASK_PREEMPTS_CURR` in `try_to_wake_up`,
//! the run-time charge in `schedule()`, `activated = 2` for a wakeup from interrupt context
//! (full on-runqueue credit) and 1 for one by a task (30 %), fork's slice split and
//! CHILD_PENALTY and `sched_exit` (not modelled in either). 2.6.14's schedule() also moves the
//! picked task to the tail of its list when its priority does not change, which cannot change
//! the pick; and its `TASK_NONINTERACTIVE` sleeps (pipe waits), credited nothing, are not
//! modelled: the simulated workloads' pipes stand for other waits (interbench's semaphores).
//!
//! Simplifications (the simulator has no fork tree, no uninterruptible sleep, no sync wakeups):
//! - New tasks start with sleep_avg 0 (prio = static_prio + 5) and a full slice: no parent whose
//!   sleep_avg (CHILD_PENALTY) or slice (sched_fork halving, sched_exit refund) they share.
//! - Every sleep is TASK_INTERRUPTIBLE, so the uninterruptible sleep_avg cap never applies,
//!   except under `version=2.6.14`, where a device wait is uninterruptible (above). A wakeup with
//!   no waker (timer) counts as SLEEP_INTERRUPTED, one by a task as SLEEP_INTERACTIVE. Sync
//!   wakeups are not modelled: every wakeup may preempt.
//! - The threshold applies to wakeups (try_to_wake_up, as in the patch); a new task or one moved
//!   by balancing preempts with the stock `p->prio < curr->prio` (wake_up_new_task, pull_task).
//! - The current task is not kept in its list: a preempted task goes back to the head of its
//!   priority list (where it stayed in the kernel); an expired or round-robined one to the tail of
//!   the array task_tick chose. A round robin (TIMESLICE_GRANULARITY, SCHED_RR) that would pick
//!   the same task again does not ask for a reschedule; schedule()'s sleep_avg charge is applied.
//! - SCHED_BATCH: sleep credit always 0 (recalc_task_prio), never interactive, woken into the
//!   expired array, as 2.6.20. SCHED_IDLE (2.6.23), SCHED_DEADLINE and EEVDF slices are rejected.
//! - select_task_rq and load balancing are the generic 2.6 ones of the `balance` module (and its
//!   simplifications): try_to_wake_up's SD_WAKE_AFFINE / SD_WAKE_BALANCE tests, then an idle
//!   CPU; find_busiest_group / move_tasks with imbalance_pct and cache-hot tasks left behind;
//!   idle CPUs balance every 1 ms, busy ones every 200 ms, newly idle CPUs always. New tasks use
//!   the same wakeup rule. move_tasks walks the expired array first.
//!   With `--topology`, 2.6's domain hierarchy ([`super::domains26`]: SD_SIBLING_INIT,
//!   SD_CPU_INIT, SD_NODE_INIT) replaces the flat domain for wakeups and balancing.

use super::balance::{self, BalanceState, Domain};
use super::domains26::Domains26;
use super::ds::prio_array::{PrioArray, MAX_PRIO};
use super::*;
use schedlab_workload::knobs::{Knobs, SchedPolicy};

/// Priorities 0..99 are real-time, 100..139 SCHED_OTHER/BATCH (lower is better).
const MAX_RT_PRIO: usize = 100;

const NICE_0_PRIO: usize = 120;
/// MAX_USER_PRIO (40) × PRIO_BONUS_RATIO (25) / 100.
const MAX_BONUS: i64 = 10;
const INTERACTIVE_DELTA: i64 = 2;
/// Percent of on-runqueue wait credited to a task woken by another task (SLEEP_INTERACTIVE).
const ON_RUNQUEUE_WEIGHT: u64 = 30;
/// The largest useful threshold: the whole SCHED_OTHER priority range.
const MAX_THRESHOLD: u32 = 40;
const NAME: &str = "Linux 2.6 O(1) scheduler";
const ACCEPTED: &str = "policy=other|batch|fifo:1..99|rr:1..99, nice=-20..19, cpus=LIST";

/// The kernel's jiffy-based tunables at the machine's HZ.
#[derive(Clone, Copy)]
struct Hz {
    hz: u64,
    tick_ns: u64,
}

impl Hz {
    fn of(m: &MachineView) -> Hz {
        let hz = u64::from(m.hz.max(1));
        Hz {
            hz,
            tick_ns: 1_000_000_000 / hz,
        }
    }
    /// DEF_TIMESLICE in jiffies.
    fn def_timeslice(self) -> u64 {
        (100 * self.hz / 1000).max(1)
    }
    /// MAX_SLEEP_AVG in jiffies (= STARVATION_LIMIT).
    fn max_sleep_avg(self) -> u64 {
        self.def_timeslice() * MAX_BONUS as u64
    }
    fn ns_max_sleep_avg(self) -> u64 {
        self.max_sleep_avg() * self.tick_ns
    }
    /// CURRENT_BONUS: sleep_avg scaled to 0..=10.
    fn bonus(self, sleep_avg: u64) -> i64 {
        ((sleep_avg / self.tick_ns) * MAX_BONUS as u64 / self.max_sleep_avg()) as i64
    }
    /// static_prio_timeslice, in ticks.
    fn timeslice(self, static_prio: usize) -> u64 {
        let x = if static_prio < NICE_0_PRIO {
            self.def_timeslice() * 4
        } else {
            self.def_timeslice()
        };
        let min = (5 * self.hz / 1000).max(1);
        (x * (MAX_PRIO - static_prio) as u64 / 20).max(min)
    }
}

/// How a task's last wakeup is credited when it is first picked (`enum sleep_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SleepType {
    Normal,
    NonInteractive,
    Interactive,
    Interrupted,
}

/// Where `put_prev_task` puts a task that `task_tick` or `yield_task` already requeued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Requeue {
    ActiveTail,
    /// Where it was, first in its list: 2.5.25's yield at prio 139 with ticks to spare.
    ActiveHead,
    Expired,
}

/// Which kernel's sys_sched_yield the policy runs (the `yield` parameter's values, in order).
const YIELD_VARIANTS: &[&str] = &["expired", "2.5.25"];

/// Which kernel's sleep-average credit (`recalc_task_prio`) the policy runs (the `version`
/// parameter's values, in order).
const VERSION_VARIANTS: &[&str] = &["2.6.20", "2.6.14"];

/// How the NET_RX softirq hands over work it raised again (the `softirq` parameter's values, in
/// order): `inline` never wakes ksoftirqd (the simulator's loopback before the parameter);
/// `2.5.25` wakes it as 2.5.22–2.5.30's `do_softirq` did.
const SOFTIRQ_VARIANTS: &[&str] = &["inline", "2.5.25"];

/// Per-task scheduling state (the O(1) fields of `struct task_struct`).
#[derive(Clone, Debug)]
struct Task {
    policy: SchedPolicy,
    static_prio: usize,
    prio: usize,
    /// ns, 0..=NS_MAX_SLEEP_AVG.
    sleep_avg: u64,
    /// Ticks left in the current slice.
    time_slice: u64,
    sleep_type: SleepType,
    /// When it was last activated (woken), for the on-runqueue credit.
    timestamp: u64,
    /// CPU time since it was last switched in (schedule()'s run_time).
    run_ns: u64,
    last_ran: Option<u64>,
    allowed: CpuMask,
    requeue: Option<Requeue>,
    /// Enqueued by a wakeup and not yet judged by `wakeup_preempt`: the threshold applies.
    via_wakeup: bool,
    /// The pending wakeup has no waker (a timer, i.e. interrupt context).
    timer_wakeup: bool,
    /// A kernel thread (no `mm`): 2.6.14's long-sleep rule and uninterruptible cap skip it.
    kernel: bool,
    /// Its last sleep was uninterruptible (a device wait): 2.6.14's `activated == -1`.
    uninterruptible: bool,
    /// 2.6.14's rules (`version=2.6.14`): its DELTA, and its credit in `recalc_task_prio`.
    v2614: bool,
}

impl Task {
    fn is_rt(&self) -> bool {
        self.prio < MAX_RT_PRIO
    }
    fn batch(&self) -> bool {
        self.policy == SchedPolicy::Batch
    }
    /// DELTA(p): how far below static_prio a task must be to count as interactive. 2.6.14
    /// scales the nice value itself, truncating toward zero as C does (one more at nice −1..−3,
    /// −5..−7, …); 2.6.20 scales nice + 20 and subtracts 5.
    fn delta(&self) -> i64 {
        let nice = self.static_prio as i64 - NICE_0_PRIO as i64;
        if self.v2614 {
            return nice * MAX_BONUS / 40 + INTERACTIVE_DELTA;
        }
        (nice + 20) * MAX_BONUS / 40 - 20 * MAX_BONUS / 40 + INTERACTIVE_DELTA
    }
    /// TASK_INTERACTIVE(p); SCHED_BATCH never is.
    fn interactive(&self) -> bool {
        !self.batch() && self.prio as i64 <= self.static_prio as i64 - self.delta()
    }
    /// effective_prio: static_prio − (bonus − 5), clamped to 100..=139; RT prio is fixed.
    fn effective_prio(&self, hz: Hz) -> usize {
        if self.is_rt() {
            return self.prio;
        }
        let prio = self.static_prio as i64 - (hz.bonus(self.sleep_avg) - MAX_BONUS / 2);
        prio.clamp(MAX_RT_PRIO as i64, MAX_PRIO as i64 - 1) as usize
    }
    /// INTERACTIVE_SLEEP(p) in ns: the sleep_avg ceiling one long sleep can reach.
    fn interactive_sleep(&self, hz: Hz) -> u64 {
        let j = hz.max_sleep_avg() as i64 * (MAX_BONUS / 2 + self.delta() + 1) / MAX_BONUS - 1;
        j.max(0) as u64 * hz.tick_ns
    }
    /// recalc_task_prio: credit `sleep_time` ns of sleep and return the new priority (2.6.14's
    /// rules when `v2614`).
    fn recalc_prio(&mut self, hz: Hz, sleep_time: u64, v2614: bool) -> usize {
        let mut sleep_time = if self.batch() { 0 } else { sleep_time };
        if v2614 {
            self.credit_2614(hz, sleep_time);
            return self.effective_prio(hz);
        }
        if sleep_time > 0 {
            let ceiling = self.interactive_sleep(hz);
            if sleep_time > ceiling && self.sleep_avg < ceiling {
                self.sleep_avg = ceiling;
                self.sleep_type = SleepType::NonInteractive;
            } else {
                if self.sleep_type == SleepType::NonInteractive {
                    if self.sleep_avg >= ceiling {
                        sleep_time = 0;
                    } else if self.sleep_avg + sleep_time >= ceiling {
                        self.sleep_avg = ceiling;
                        sleep_time = 0;
                    }
                }
                self.sleep_avg += sleep_time;
            }
            self.sleep_avg = self.sleep_avg.min(hz.ns_max_sleep_avg());
        }
        self.effective_prio(hz)
    }
    /// 2.6.14's recalc_task_prio credit: a user task's long interruptible sleep sets sleep_avg
    /// to MAX_SLEEP_AVG − DEF_TIMESLICE; any other sleep counts (MAX_BONUS − CURRENT_BONUS)
    /// times, at least once, and a user task woken from an uninterruptible sleep gains only up
    /// to INTERACTIVE_SLEEP.
    fn credit_2614(&mut self, hz: Hz, sleep_time: u64) {
        let max = hz.ns_max_sleep_avg();
        let sleep_time = sleep_time.min(max);
        if sleep_time == 0 {
            return;
        }
        let ceiling = self.interactive_sleep(hz);
        let user = !self.kernel;
        if user && !self.uninterruptible && sleep_time > ceiling {
            self.sleep_avg = (hz.max_sleep_avg() - hz.def_timeslice()) * hz.tick_ns;
            return;
        }
        let times = (MAX_BONUS - hz.bonus(self.sleep_avg)).max(1) as u64;
        let mut credit = sleep_time * times;
        if user && self.uninterruptible {
            if self.sleep_avg >= ceiling {
                credit = 0;
            } else if self.sleep_avg + credit >= ceiling {
                self.sleep_avg = ceiling;
                credit = 0;
            }
        }
        self.sleep_avg = (self.sleep_avg + credit).min(max);
    }
    /// schedule()'s charge on the task switched out: run_time / CURRENT_BONUS off sleep_avg.
    fn charge_run(&mut self, hz: Hz, now: u64) {
        let run = self.run_ns.min(hz.ns_max_sleep_avg()) / hz.bonus(self.sleep_avg).max(1) as u64;
        self.sleep_avg = self.sleep_avg.saturating_sub(run);
        self.run_ns = 0;
        self.last_ran = Some(now);
    }
    /// TIMESLICE_GRANULARITY(p) in ticks (SMP form: × online CPUs).
    fn granularity(&self, hz: Hz, ncpus: usize) -> u64 {
        let gran = (10 * hz.hz / 1000).max(1);
        let e = (MAX_BONUS - hz.bonus(self.sleep_avg)).max(1);
        gran * (1u64 << (e - 1)) * ncpus.max(1) as u64
    }
}

/// One CPU's runqueue (`struct rq`).
#[derive(Clone, Debug)]
struct Rq {
    arrays: [PrioArray; 2],
    /// Index of the active array; the other is expired.
    active: usize,
    expired_timestamp: Option<u64>,
    best_expired_prio: usize,
    curr: Option<TaskId>,
    balance: BalanceState,
}

impl Rq {
    fn new() -> Rq {
        Rq {
            arrays: [PrioArray::new(), PrioArray::new()],
            active: 0,
            expired_timestamp: None,
            best_expired_prio: MAX_PRIO,
            curr: None,
            balance: BalanceState::default(),
        }
    }
    fn nr_running(&self) -> usize {
        self.arrays[0].nr_active + self.arrays[1].nr_active + usize::from(self.curr.is_some())
    }
    fn array(&mut self, expired: bool) -> &mut PrioArray {
        &mut self.arrays[self.active ^ usize::from(expired)]
    }
}

/// The Linux 2.6 O(1) policy: per-CPU active/expired priority arrays, sleep_avg interactivity
/// bonus, and Hartner's wakeup-preemption threshold.
pub struct O1 {
    threshold: u32,
    /// 2.5.25's three-level yield and its activation rule instead of 2.6.20's expired-array
    /// yield.
    yield_2525: bool,
    /// 2.5.25's `do_softirq`: a segment acknowledged from the softirq wakes ksoftirqd.
    softirq_2525: bool,
    /// 2.6.14's sleep-average credit (multiplier, long sleep to 900 ms, uninterruptible cap)
    /// and DELTA instead of 2.6.20's.
    v2614: bool,
    tasks: Vec<Option<Task>>,
    rqs: Vec<Rq>,
    /// 2.6's domain hierarchy on a machine with a topology; `None`: one flat domain.
    sd: Option<Box<Domains26>>,
}

/// The `o1` policy: its name, summary, parameters and constructor.
pub const DEF: PolicyDef = PolicyDef {
    name: "o1",
    summary: "Linux 2.6 O(1): active/expired arrays, sleep_avg bonus, interactivity (2.6.20 kernel/sched.c; seed 000)",
    params: &[
        ParamDef {
            name: "threshold",
            default: 0,
            values: Values::Range(0, MAX_THRESHOLD),
            meaning: "Hartner's preemption threshold: 0 = stock, 40 = no priority preemption among SCHED_OTHER tasks",
        },
        ParamDef {
            name: "yield",
            default: 0,
            values: Values::Variant(YIELD_VARIANTS),
            meaning: "sched_yield of a SCHED_OTHER task: expired = 2.6's (to the expired array); 2.5.25 = seed 000's kernel (one priority level lower in the active array; recomputed at slice expiry or after a sleep of a jiffy)",
        },
        ParamDef {
            name: "softirq",
            default: 0,
            values: Values::Variant(SOFTIRQ_VARIANTS),
            meaning: "loopback TCP's NET_RX softirq: inline = no ksoftirqd; 2.5.25 = seed 000's kernel (a segment whose reader does not sleep in its receive is ACKed from the softirq, which raises NET_RX again and wakes the nice 19 ksoftirqd if it sleeps)",
        },
        ParamDef {
            name: "version",
            default: 0,
            values: Values::Variant(VERSION_VARIANTS),
            meaning: "recalc_task_prio's sleep credit: 2.6.20 = credit the sleep once, a long sleep raises sleep_avg to INTERACTIVE_SLEEP and forfeits the on-runqueue credit; 2.6.14 = seed 004's kernel (a sleep counts (10 - bonus) times, a long sleep sets sleep_avg to 900 ms and keeps the on-runqueue credit, a device wait earns no on-runqueue credit and at most INTERACTIVE_SLEEP, DELTA truncated at negative nice; timed sleeps end at a tick, as its jiffy timers did)",
        },
    ],
    describe_defaults: true,
    check: no_check,
    build: boxed::<O1>,
};

impl FromParams for O1 {
    fn from_params(params: &Params) -> O1 {
        O1 {
            threshold: params.get("threshold"),
            yield_2525: YIELD_VARIANTS[params.get("yield") as usize] == "2.5.25",
            softirq_2525: SOFTIRQ_VARIANTS[params.get("softirq") as usize] == "2.5.25",
            v2614: VERSION_VARIANTS[params.get("version") as usize] == "2.6.14",
            tasks: Vec::new(),
            rqs: Vec::new(),
            sd: None,
        }
    }
}

impl O1 {
    fn ensure_rqs(&mut self, ncpus: usize) {
        if self.rqs.len() < ncpus {
            self.rqs.resize_with(ncpus, Rq::new);
        }
    }

    fn task(&self, id: TaskId) -> &Task {
        self.tasks[id]
            .as_ref()
            .expect("o1: hook for an unknown task")
    }

    fn task_mut(&mut self, id: TaskId) -> &mut Task {
        self.tasks[id]
            .as_mut()
            .expect("o1: hook for an unknown task")
    }

    fn nr(&self, cpu: CpuId) -> usize {
        self.rqs[cpu].nr_running()
    }

    /// Put `id` on `cpu`'s active (or expired) array at its priority.
    fn queue(&mut self, cpu: CpuId, id: TaskId, expired: bool, head: bool) {
        let prio = self.task(id).prio;
        self.rqs[cpu].array(expired).enqueue(prio, id, head);
    }

    /// requeue_task to the tail of the active array plus a reschedule — unless that reschedule
    /// would pick `id` again, in which case only schedule()'s sleep_avg charge is done.
    fn round_robin(&mut self, m: &MachineView, cpu: CpuId, id: TaskId) -> bool {
        let prio = self.task(id).prio;
        let rq = &mut self.rqs[cpu];
        if rq.arrays[rq.active].first().is_some_and(|p| p <= prio) {
            self.task_mut(id).requeue = Some(Requeue::ActiveTail);
            return true;
        }
        self.task_mut(id).charge_run(Hz::of(m), m.now);
        false
    }

    /// expired_starving: an expired task waited past STARVATION_LIMIT × nr_running, or a better
    /// static priority is waiting in the expired array.
    fn expired_starving(&self, m: &MachineView, cpu: CpuId, t: &Task) -> bool {
        let rq = &self.rqs[cpu];
        if t.static_prio > rq.best_expired_prio {
            return true;
        }
        let limit = Hz::of(m).ns_max_sleep_avg() * rq.nr_running() as u64;
        rq.expired_timestamp
            .is_some_and(|ts| m.now.saturating_sub(ts) > limit)
    }
}

impl Domain for O1 {
    fn nr_running(&self, cpu: CpuId) -> usize {
        self.nr(cpu)
    }

    fn balance_state(&mut self, cpu: CpuId) -> &mut BalanceState {
        &mut self.rqs[cpu].balance
    }

    /// move_tasks: expired array first, best priority first, tail of each list first.
    fn move_tasks(
        &mut self,
        now: u64,
        from: CpuId,
        to: CpuId,
        max: usize,
        hot_ok: bool,
        moved: &mut Vec<Move>,
    ) {
        for expired in [true, false] {
            let prios = self.rqs[from].array(expired).prios();
            for prio in prios {
                // From the tail by index: a removal shifts only the tasks already looked at.
                let mut i = self.rqs[from].array(expired).queue[prio].len();
                while i > 0 {
                    i -= 1;
                    if moved.len() >= max {
                        return;
                    }
                    let id = self.rqs[from].array(expired).queue[prio][i];
                    let t = self.task(id);
                    if !balance::can_migrate_task(t.allowed, t.last_ran, now, to, hot_ok) {
                        continue;
                    }
                    self.rqs[from].array(expired).remove_at(prio, i);
                    self.rqs[to].array(expired).enqueue(prio, id, false);
                    let t = self.task_mut(id);
                    t.via_wakeup = false;
                    moved.push(Move { task: id, from, to });
                }
            }
        }
    }
}

impl Policy for O1 {
    fn softirq_wakes_ksoftirqd(&self) -> bool {
        self.softirq_2525
    }

    fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), PolicyError> {
        check_class_knobs(
            NAME,
            group,
            knobs,
            ACCEPTED,
            |p| missing_linux_class((2, 6, 20), p),
            "EEVDF custom slices, Linux 6.12+",
        )
    }

    fn task_new(&mut self, m: &MachineView, setup: &TaskSetup) {
        self.ensure_rqs(m.ncpus);
        let hz = Hz::of(m);
        let policy = match setup.sched_policy() {
            p @ (SchedPolicy::Other
            | SchedPolicy::Batch
            | SchedPolicy::Fifo(_)
            | SchedPolicy::Rr(_)) => p,
            // Rejected by check_knobs; treated as SCHED_OTHER if the machine skipped it.
            SchedPolicy::Idle | SchedPolicy::Deadline { .. } => SchedPolicy::Other,
        };
        let static_prio = (NICE_0_PRIO as i32 + setup.nice().clamp(-20, 19)) as usize;
        let mut t = Task {
            policy,
            static_prio,
            prio: static_prio,
            sleep_avg: 0,
            time_slice: hz.timeslice(static_prio),
            sleep_type: SleepType::Normal,
            timestamp: m.now,
            run_ns: 0,
            last_ran: None,
            allowed: setup.allowed,
            requeue: None,
            via_wakeup: false,
            timer_wakeup: false,
            kernel: setup.kind != TaskKind::Workload,
            uninterruptible: false,
            v2614: self.v2614,
        };
        t.prio = match policy {
            SchedPolicy::Fifo(rt) | SchedPolicy::Rr(rt) => MAX_RT_PRIO - 1 - usize::from(rt),
            _ => t.effective_prio(hz),
        };
        if self.tasks.len() <= setup.id {
            self.tasks.resize(setup.id + 1, None);
        }
        self.tasks[setup.id] = Some(t);
    }

    /// 2.6.20's `sched_fork`: `cpu = sched_balance_self(cpu, SD_BALANCE_FORK)` — the idlest
    /// allowed CPU (`find_idlest_cpu`: fewest runnable tasks, the forking CPU on a tie, then the
    /// lowest number), without scheduling domains' group step. The timeslice split with the
    /// parent is not modelled (a task starts with its full slice, as at the start of a run).
    fn task_fork(
        &mut self,
        m: &MachineView,
        child: TaskId,
        _parent: TaskId,
        parent_cpu: CpuId,
    ) -> Option<CpuId> {
        self.ensure_rqs(m.ncpus);
        let allowed = self.task_mut(child).allowed;
        allowed
            .iter()
            .filter(|&c| c < m.ncpus)
            .min_by_key(|&c| (m.nr_running[c], c != parent_cpu, c))
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
        let t = self.task_mut(task);
        t.timer_wakeup = waker.is_none();
        let (allowed, last_ran) = (t.allowed, t.last_ran);
        if let Some(sd) = &self.sd {
            return sd.select_task_rq(self, m, allowed, last_ran, prev, waker);
        }
        balance::select_task_rq(|c| self.nr(c), n, allowed, prev, waker)
    }

    fn enqueue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: EnqueueKind) {
        self.ensure_rqs(m.ncpus);
        let hz = Hz::of(m);
        let (yield_2525, v2614) = (self.yield_2525, self.v2614);
        let t = self.task_mut(task);
        t.requeue = None;
        match kind {
            EnqueueKind::New => {
                t.via_wakeup = false;
                t.prio = t.effective_prio(hz);
                t.timestamp = m.now;
            }
            EnqueueKind::Wakeup { slept_ns } => {
                t.via_wakeup = true;
                // 2.5.25's activate_task: no jiffy boundary crossed, no credit and no new prio.
                let same_jiffy =
                    yield_2525 && m.now / hz.tick_ns == m.now.saturating_sub(slept_ns) / hz.tick_ns;
                if !t.is_rt() && !same_jiffy {
                    // activate_task
                    t.prio = t.recalc_prio(hz, slept_ns, v2614);
                    if v2614 && t.uninterruptible {
                        // activated == -1: no on-runqueue credit when it is picked.
                        t.sleep_type = SleepType::NonInteractive;
                    }
                    if t.sleep_type == SleepType::Normal {
                        t.sleep_type = if t.timer_wakeup {
                            SleepType::Interrupted
                        } else {
                            SleepType::Interactive
                        };
                    }
                    t.timestamp = m.now;
                }
            }
        }
        let batch = t.batch();
        self.queue(cpu, task, batch, false);
    }

    fn dequeue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: DequeueKind) {
        let hz = Hz::of(m);
        let t = self.task_mut(task);
        t.charge_run(hz, m.now);
        t.uninterruptible = kind == DequeueKind::DeviceWait;
        t.requeue = None;
        if self.rqs[cpu].curr == Some(task) {
            self.rqs[cpu].curr = None;
        }
        if kind == DequeueKind::Exit {
            self.tasks[task] = None;
        }
    }

    fn wakeup_preempt(
        &mut self,
        _m: &MachineView,
        cpu: CpuId,
        curr: TaskId,
        woken: TaskId,
    ) -> bool {
        let c = self.task(curr).prio;
        let threshold = self.threshold as usize;
        let idle = self.rqs[cpu].curr.is_none();
        let p = self.task_mut(woken);
        let via_wakeup = std::mem::take(&mut p.via_wakeup);
        if p.prio >= c {
            return false;
        }
        // Hartner's test in try_to_wake_up; the stock one elsewhere.
        !via_wakeup || idle || p.is_rt() || p.prio + threshold < c
    }

    fn pick_next_task(&mut self, m: &MachineView, cpu: CpuId) -> Option<TaskId> {
        self.ensure_rqs(m.ncpus);
        let hz = Hz::of(m);
        let v2614 = self.v2614;
        let rq = &mut self.rqs[cpu];
        if rq.arrays[rq.active].nr_active == 0 {
            rq.expired_timestamp = None;
            if rq.arrays[rq.active ^ 1].nr_active == 0 {
                return None;
            }
            rq.active ^= 1;
            rq.best_expired_prio = MAX_PRIO;
        }
        let array = &mut rq.arrays[rq.active];
        let prio = array.first()?;
        let next = array.queue[prio][0];
        array.remove(prio, next);
        rq.curr = Some(next);
        let t = self.task_mut(next);
        if !t.is_rt()
            && matches!(
                t.sleep_type,
                SleepType::Interactive | SleepType::Interrupted
            )
        {
            // Credit the time spent waiting on the runqueue since the wakeup.
            let mut delta = m.now.saturating_sub(t.timestamp);
            if t.sleep_type == SleepType::Interactive {
                delta = delta * (ON_RUNQUEUE_WEIGHT * 128 / 100) / 128;
            }
            t.prio = t.recalc_prio(hz, delta, v2614);
        }
        t.sleep_type = SleepType::Normal;
        t.run_ns = 0;
        t.via_wakeup = false;
        t.requeue = None;
        Some(next)
    }

    fn put_prev_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, kind: PutPrevKind) {
        let hz = Hz::of(m);
        let t = self.task_mut(task);
        t.charge_run(hz, m.now);
        let mut requeue = t.requeue.take();
        if kind == PutPrevKind::Yielded && requeue.is_none() {
            requeue = Some(if t.is_rt() {
                Requeue::ActiveTail
            } else {
                Requeue::Expired
            });
        }
        if self.rqs[cpu].curr == Some(task) {
            self.rqs[cpu].curr = None;
        }
        match requeue {
            None | Some(Requeue::ActiveHead) => self.queue(cpu, task, false, true),
            Some(Requeue::ActiveTail) => self.queue(cpu, task, false, false),
            Some(Requeue::Expired) => self.queue(cpu, task, true, false),
        }
    }

    fn update_curr(&mut self, _m: &MachineView, _cpu: CpuId, task: TaskId, delta_ns: u64) {
        self.task_mut(task).run_ns += delta_ns;
    }

    fn task_tick(&mut self, m: &MachineView, cpu: CpuId, task: TaskId) -> bool {
        let hz = Hz::of(m);
        let t = self.task_mut(task);
        if t.requeue.is_some() {
            return true; // already requeued, not yet switched out
        }
        match t.policy {
            SchedPolicy::Fifo(_) => return false,
            SchedPolicy::Rr(_) => {
                t.time_slice = t.time_slice.saturating_sub(1);
                if t.time_slice > 0 {
                    return false;
                }
                t.time_slice = hz.timeslice(t.static_prio);
                return self.round_robin(m, cpu, task);
            }
            _ => {}
        }
        t.time_slice = t.time_slice.saturating_sub(1);
        if t.time_slice == 0 {
            t.prio = t.effective_prio(hz);
            t.time_slice = hz.timeslice(t.static_prio);
            let t = t.clone();
            let rq = &mut self.rqs[cpu];
            rq.expired_timestamp.get_or_insert(m.now);
            if !t.interactive() || self.expired_starving(m, cpu, &t) {
                let rq = &mut self.rqs[cpu];
                rq.best_expired_prio = rq.best_expired_prio.min(t.static_prio);
                self.task_mut(task).requeue = Some(Requeue::Expired);
                return true;
            }
            return self.round_robin(m, cpu, task);
        }
        let gran = t.granularity(hz, m.ncpus);
        let used = hz.timeslice(t.static_prio).saturating_sub(t.time_slice);
        if t.interactive() && used.checked_rem(gran) == Some(0) && t.time_slice >= gran {
            return self.round_robin(m, cpu, task);
        }
        false
    }

    fn yield_task(&mut self, _m: &MachineView, _cpu: CpuId, task: TaskId) -> bool {
        let yield_2525 = self.yield_2525;
        let t = self.task_mut(task);
        t.requeue = Some(if t.is_rt() {
            Requeue::ActiveTail
        } else if !yield_2525 {
            Requeue::Expired
        } else if t.prio < MAX_PRIO - 1 {
            // Level 1: one priority lower, at the tail of that list in the active array.
            t.prio += 1;
            Requeue::ActiveTail
        } else if t.time_slice > 1 {
            // Level 2: at the lowest priority, give up one tick and stay where it is.
            t.time_slice -= 1;
            Requeue::ActiveHead
        } else {
            // Level 3: no ticks left to give.
            Requeue::Expired
        });
        true
    }

    fn balance(&mut self, m: &MachineView, cpu: CpuId, kind: BalanceKind) -> Vec<Move> {
        self.ensure_rqs(m.ncpus);
        let n = m.ncpus.min(self.rqs.len());
        if let Some(mut sd) = self.sd.take() {
            let moves = match kind {
                BalanceKind::NewIdle => sd.idle_balance(self, m, cpu),
                BalanceKind::Periodic => sd.rebalance_tick(self, m, cpu, false),
            };
            self.sd = Some(sd);
            return moves;
        }
        let idle = self.nr(cpu) == 0;
        if kind == BalanceKind::Periodic && !self.rqs[cpu].balance.periodic_due(m.now, idle) {
            return Vec::new();
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

    /// 2.6.14 had only the jiffy timer wheel (hrtimers came with 2.6.16); 2.6.20's nanosleep
    /// is a high-resolution timer.
    fn jiffy_timers(&self) -> bool {
        self.v2614
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{built, nice, policy, spec, spec_err, Harnessed, ALL, H, MS};

    impl Harnessed for O1 {
        const REPORTS: bool = true;
        fn cpu_state(&self, cpu: CpuId) -> (Option<TaskId>, usize) {
            self.rqs
                .get(cpu)
                .map_or((None, 0), |rq| (rq.curr, rq.nr_running()))
        }
    }

    /// O(1) with `threshold` on `ncpus` CPUs at HZ 1000.
    fn o1h(threshold: u32, ncpus: usize) -> H<O1> {
        H::new(&format!("o1:threshold={threshold}"), 1000, ncpus)
    }

    impl H<O1> {
        /// A new task with default knobs allowed on `allowed`, queued on `cpu`.
        fn spawn_allowed(&mut self, id: TaskId, cpu: CpuId, allowed: CpuMask) {
            self.task_new(id, 0, Knobs::default(), allowed);
            self.enqueue(cpu, id, EnqueueKind::New);
        }
        fn prio(&self, id: TaskId) -> usize {
            self.p.task(id).prio
        }
        fn in_expired(&self, cpu: CpuId, id: TaskId) -> bool {
            let rq = &self.p.rqs[cpu];
            rq.arrays[rq.active ^ 1]
                .queue
                .iter()
                .any(|q| q.contains(&id))
        }
    }

    #[test]
    fn threshold_gates_wakeup_preemption_among_sched_other_only() {
        for (threshold, expect) in [(0, true), (6, true), (7, false), (40, false)] {
            let mut h = o1h(threshold, 1);
            h.spawn(0, 0, Knobs::default(), ALL); // B: will sleep
            h.spawn(1, 0, Knobs::default(), ALL); // A: CPU hog
            h.spawn(2, 0, policy(SchedPolicy::Fifo(10)), ALL); // R: real-time
            assert_eq!(h.pick(0), Some(2), "RT prio 89 runs first");
            h.tick(0);
            h.sleep(0);
            assert_eq!(h.pick(0), Some(0));
            h.tick(0);
            h.sleep(0);
            assert_eq!(h.pick(0), Some(1));
            h.tick(0);
            // B slept 2 s: sleep_avg rises to INTERACTIVE_SLEEP (799 ms), bonus 7, prio 118.
            h.wake_to(0, 0, None, 2000 * MS);
            assert_eq!((h.prio(0), h.prio(1)), (118, 125));
            assert_eq!(h.preempts(0, 0), expect, "threshold {threshold}");
            h.wake_to(2, 0, None, 1000 * MS);
            assert!(
                h.preempts(0, 2),
                "RT wakee preempts at threshold {threshold}"
            );
        }
    }

    /// O(1) with `version` on one CPU at HZ 1000; task 0 has run a tick and sleeps, with
    /// sleep_avg 0 (task 1, a hog, keeps the CPU busy).
    fn slept_without_bonus(version: &str) -> H<O1> {
        let mut h: H<O1> = H::new(&format!("o1:version={version}"), 1000, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(0));
        h.tick(0);
        h.sleep(0);
        assert_eq!(h.p.task(0).sleep_avg, 0);
        h
    }

    #[test]
    fn version_2614_multiplies_a_short_sleep_by_the_missing_bonus() {
        // 2.6.20: 50 ms of sleep is 50 ms of sleep_avg (bonus 0, prio 125);
        // 2.6.14: (10 − 0) × 50 ms = 500 ms (bonus 5, prio 120).
        for (version, avg_ms, prio) in [("2.6.20", 50, 125), ("2.6.14", 500, 120)] {
            let mut h = slept_without_bonus(version);
            h.wake_to(0, 0, Some(0), 50 * MS);
            assert_eq!(h.p.task(0).sleep_avg, avg_ms * MS, "{version}");
            assert_eq!(h.prio(0), prio, "{version}");
        }
        // At bonus 9 the multiplier is 1: 2.6.14 credits 50 ms on 900 ms once.
        let mut h = slept_without_bonus("2.6.14");
        h.p.task_mut(0).sleep_avg = 900 * MS;
        h.wake_to(0, 0, Some(0), 50 * MS);
        assert_eq!(h.p.task(0).sleep_avg, 950 * MS);
    }

    #[test]
    fn version_2614_sets_a_long_sleep_to_900_ms_and_keeps_the_runqueue_credit() {
        // A 2 s sleep from sleep_avg 0: 2.6.20 raises it to INTERACTIVE_SLEEP (799 ms, prio
        // 118), 2.6.14 to MAX_SLEEP_AVG − DEF_TIMESLICE (900 ms, prio 116).
        for (version, avg_ms, prio) in [("2.6.20", 799, 118), ("2.6.14", 900, 116)] {
            let mut h = slept_without_bonus(version);
            h.wake_to(0, 0, None, 2000 * MS);
            assert_eq!(h.p.task(0).sleep_avg, avg_ms * MS, "{version}");
            assert_eq!(h.prio(0), prio, "{version}");
        }
        // From a full sleep_avg, 2.6.14 lowers it to 900 ms; 2.6.20 leaves it.
        for (version, avg_ms) in [("2.6.20", 1000), ("2.6.14", 900)] {
            let mut h = slept_without_bonus(version);
            h.p.task_mut(0).sleep_avg = 1000 * MS;
            h.wake_to(0, 0, None, 2000 * MS);
            assert_eq!(h.p.task(0).sleep_avg, avg_ms * MS, "{version}");
        }
        // Woken by a timer after 2 s, it waits 100 ms behind the hog: 2.6.20 marks the long
        // sleep non-interactive and credits none of the wait; 2.6.14 credits all of it.
        for (version, avg_ms) in [("2.6.20", 799), ("2.6.14", 1000)] {
            let mut h = slept_without_bonus(version);
            assert_eq!(h.pick(0), Some(1));
            h.wake_to(0, 0, None, 2000 * MS);
            for _ in 0..100 {
                h.tick(0);
            }
            h.put_prev(0, PutPrevKind::Preempted);
            assert_eq!(h.pick(0), Some(0), "{version}");
            assert_eq!(h.p.task(0).sleep_avg, avg_ms * MS, "{version}");
        }
    }

    #[test]
    fn version_2614_truncates_delta_toward_zero_at_negative_nice() {
        // A nice -5 task: 2.6.14's DELTA is -50/40 + 2 = 1 (C truncates), 2.6.20's is
        // 150/40 - 5 + 2 = 0. At bonus 5 (prio 115) it is interactive under 2.6.20 only; at
        // bonus 6 (prio 114) under both. INTERACTIVE_SLEEP: 699 ms against 599 ms.
        for (version, delta, ceiling_ms) in [("2.6.20", 0, 599), ("2.6.14", 1, 699)] {
            let mut h: H<O1> = H::new(&format!("o1:version={version}"), 1000, 1);
            h.spawn(0, 0, nice(-5), ALL);
            let hz = Hz {
                hz: 1000,
                tick_ns: MS,
            };
            let t = h.p.task_mut(0);
            assert_eq!(t.delta(), delta, "{version}");
            assert_eq!(t.interactive_sleep(hz), ceiling_ms * MS, "{version}");
            t.sleep_avg = 500 * MS;
            t.prio = t.effective_prio(hz);
            assert_eq!((t.prio, t.interactive()), (115, version == "2.6.20"));
            t.sleep_avg = 600 * MS;
            t.prio = t.effective_prio(hz);
            assert_eq!((t.prio, t.interactive()), (114, true), "{version}");
        }
        // Where the two agree: nice 0 (DELTA 2), nice -20 (-3), nice 19 (6); nice -1 differs
        // (2 against 1).
        for (n, d2614, d2620) in [(0, 2, 2), (-20, -3, -3), (19, 6, 6), (-1, 2, 1), (-4, 1, 1)] {
            for (version, delta) in [("2.6.14", d2614), ("2.6.20", d2620)] {
                let mut h: H<O1> = H::new(&format!("o1:version={version}"), 1000, 1);
                h.spawn(0, 0, nice(n), ALL);
                assert_eq!(h.p.task(0).delta(), delta, "nice {n}, {version}");
            }
        }
    }

    #[test]
    fn version_2614_caps_an_uninterruptible_sleepers_credit_at_interactive_sleep() {
        // A nice -5 user task with no bonus sleeps 2 s on a device (activated == -1): no
        // long-sleep rule; 10 × its sleep (itself capped at 1 s) stops at INTERACTIVE_SLEEP,
        // 699 ms (bonus 6, prio 114). The same sleep interruptible: 900 ms (prio 111).
        for (kind, avg_ms, prio) in [
            (DequeueKind::DeviceWait, 699, 114),
            (DequeueKind::Sleep, 900, 111),
        ] {
            let mut h: H<O1> = H::new("o1:version=2.6.14", 1000, 1);
            h.spawn(0, 0, nice(-5), ALL);
            h.spawn(1, 0, Knobs::default(), ALL);
            assert_eq!(h.pick(0), Some(0));
            h.tick(0);
            h.sleep_as(0, kind);
            h.wake_to(0, 0, None, 2000 * MS);
            assert_eq!(h.p.task(0).sleep_avg, avg_ms * MS, "{kind:?}");
            assert_eq!(h.prio(0), prio, "{kind:?}");
        }
        // From 690 ms a 5 ms sleep counts 5 × (10 − 6) = 20 ms: to 710 ms, or, from a device,
        // only up to 699. Then 90 ms waiting on the runqueue behind a hog: a timer wakeup
        // (activated 2) is credited all of it, × (10 − 7): 710 + 270 = 980 ms; after a device
        // wait (activated −1) none. And a second device wait from the ceiling earns nothing.
        for (kind, after_wake, after_wait) in [
            (DequeueKind::DeviceWait, 699, 699),
            (DequeueKind::Sleep, 710, 980),
        ] {
            let mut h: H<O1> = H::new("o1:version=2.6.14", 1000, 1);
            h.spawn(0, 0, nice(-5), ALL);
            h.spawn(1, 0, Knobs::default(), ALL);
            assert_eq!(h.pick(0), Some(0));
            h.tick(0);
            h.sleep_as(0, kind);
            h.p.task_mut(0).sleep_avg = 690 * MS;
            assert_eq!(h.pick(0), Some(1));
            h.wake_to(0, 0, None, 5 * MS);
            assert_eq!(h.p.task(0).sleep_avg, after_wake * MS, "{kind:?}");
            for _ in 0..90 {
                h.tick(0);
            }
            h.put_prev(0, PutPrevKind::Preempted);
            assert_eq!(h.pick(0), Some(0), "{kind:?}");
            assert_eq!(h.p.task(0).sleep_avg, after_wait * MS, "{kind:?}");
            if kind == DequeueKind::DeviceWait {
                h.sleep_as(0, kind);
                h.wake_to(0, 0, None, 5 * MS);
                assert_eq!(h.p.task(0).sleep_avg, 699 * MS);
            }
        }
        // A kernel thread (no mm) is not capped, and gets no long-sleep rule either: its 2 s
        // device wait counts 10 × 1 s, to the 1 s maximum.
        let mut h: H<O1> = H::new("o1:version=2.6.14", 1000, 1);
        h.spawn(0, 0, nice(-5), ALL);
        h.p.task_mut(0).kernel = true;
        assert_eq!(h.pick(0), Some(0));
        h.tick(0);
        h.sleep_as(0, DequeueKind::DeviceWait);
        h.wake_to(0, 0, None, 2000 * MS);
        assert_eq!(h.p.task(0).sleep_avg, 1000 * MS);
        // 2.6.20's credit (the default) does not look at the kind of sleep here.
        let mut h: H<O1> = H::new("o1", 1000, 1);
        h.spawn(0, 0, nice(-5), ALL);
        assert_eq!(h.pick(0), Some(0));
        h.tick(0);
        h.sleep_as(0, DequeueKind::DeviceWait);
        h.wake_to(0, 0, None, 2000 * MS);
        assert_eq!(h.p.task(0).sleep_avg, 599 * MS);
    }

    #[test]
    fn timeslices_follow_static_prio_timeslice() {
        for (n, ticks) in [(0, 100), (-20, 800), (19, 5), (-1, 420), (10, 50)] {
            let mut h = o1h(0, 1);
            h.spawn(0, 0, nice(n), ALL);
            assert_eq!(h.pick(0), Some(0));
            assert_eq!(h.ticks_until_resched(0, 2000), ticks, "nice {n}");
        }
        // SCHED_RR: 100 ms round robin among equals; SCHED_FIFO never expires.
        let mut h = o1h(0, 1);
        h.spawn(0, 0, policy(SchedPolicy::Rr(5)), ALL);
        h.spawn(1, 0, policy(SchedPolicy::Rr(5)), ALL);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.ticks_until_resched(0, 2000), 100);
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(1));
        let mut h = o1h(0, 1);
        h.spawn(0, 0, policy(SchedPolicy::Fifo(5)), ALL);
        h.spawn(1, 0, policy(SchedPolicy::Fifo(5)), ALL);
        h.pick(0);
        assert_eq!(h.ticks_until_resched(0, 5000), 0);
    }

    #[test]
    fn sleepers_gain_bonus_and_hogs_lose_it() {
        let mut h = o1h(0, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        for _ in 0..30 {
            assert_eq!(h.pick(0), Some(0));
            h.tick(0);
            h.sleep(0);
            h.now += 50 * MS;
            h.wake_to(0, 0, None, 50 * MS);
        }
        assert!(
            h.prio(0) < 120 && h.p.task(0).interactive(),
            "prio {}",
            h.prio(0)
        );
        assert_eq!(h.prio(0), 115);

        // A hog that starts interactive (one long sleep) sinks below its static priority.
        let mut h = o1h(0, 1);
        h.spawn(1, 0, Knobs::default(), ALL);
        h.pick(0);
        h.tick(0);
        h.sleep(0);
        h.wake_to(1, 0, None, 2000 * MS);
        assert_eq!(h.pick(0), Some(1));
        assert!(h.prio(1) < 120);
        for _ in 0..5000 {
            if h.tick(0) {
                h.put_prev(0, PutPrevKind::Preempted);
                assert_eq!(h.pick(0), Some(1));
            }
        }
        assert_eq!(h.prio(1), 125);
        assert!(h.prio(1) > h.p.task(1).static_prio);
    }

    #[test]
    fn expired_array_and_array_switch() {
        // Two hogs alternate whole slices through the expired array.
        let mut h = o1h(0, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        let mut order = Vec::new();
        for _ in 0..4 {
            order.push(h.pick(0).unwrap());
            assert_eq!(h.ticks_until_resched(0, 1000), 100);
            h.put_prev(0, PutPrevKind::Preempted);
            assert!(h.in_expired(0, *order.last().unwrap()));
        }
        assert_eq!(order, [0, 1, 0, 1]);

        // An expired non-interactive task waits for a queued equal.
        let mut h = o1h(0, 1);
        for id in 0..3 {
            h.spawn(id, 0, Knobs::default(), ALL);
        }
        let mut order = Vec::new();
        for _ in 0..4 {
            order.push(h.pick(0).unwrap());
            h.ticks_until_resched(0, 1000);
            h.put_prev(0, PutPrevKind::Preempted);
        }
        assert_eq!(order, [0, 1, 2, 0]);

        // An interactive task whose slice expires is re-inserted into the active array.
        let mut h = o1h(0, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        h.pick(0);
        h.tick(0);
        h.sleep(0);
        h.wake_to(0, 0, None, 2000 * MS);
        assert_eq!(h.pick(0), Some(0));
        assert!(h.p.task(0).interactive());
        assert_eq!(
            h.ticks_until_resched(0, 150),
            0,
            "stays on the CPU past its 100 ms"
        );
        // 99 ticks finished the slice (one was used before the sleep); 51 of the refill gone.
        assert_eq!(h.p.task(0).time_slice, 49, "slice refilled at expiry");
        assert!(!h.in_expired(0, 0) && !h.in_expired(0, 1));

        // sched_yield moves a SCHED_OTHER task to the expired array.
        let mut h = o1h(0, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(0));
        h.put_prev(0, PutPrevKind::Yielded);
        assert!(h.in_expired(0, 0));
        assert_eq!(h.pick(0), Some(1));

        // A task preempted mid-slice returns to the head of its list.
        let mut h = o1h(0, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(0));
        h.tick(0);
        h.put_prev(0, PutPrevKind::Preempted);
        assert_eq!(h.pick(0), Some(0));
    }

    /// 2.5.25's sys_sched_yield (three levels) under `yield=2.5.25`; 2.6's expired-array yield
    /// stays the default (`expired_array_and_array_switch`).
    #[test]
    fn yield_2525_lowers_the_priority_in_the_active_array() {
        let mut h: H<O1> = H::new("o1:threshold=0,yield=2.5.25", 1000, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!(h.prio(0), 125, "a new task: no sleep_avg, static prio + 5");
        assert!(h.put_prev(0, PutPrevKind::Yielded));
        assert_eq!(h.prio(0), 126, "level 1: one priority lower");
        assert!(!h.in_expired(0, 0), "and still in the active array");
        assert_eq!(h.pick(0), Some(1), "the peer at 125 runs first");
        h.sleep(0);
        assert_eq!(
            h.pick(0),
            Some(0),
            "then the yielder, not an expired task's turn"
        );
        assert_eq!(h.prio(0), 126);
        // A wakeup in the same jiffy keeps the lost level (activate_task recomputes nothing);
        // one after a jiffy boundary recomputes the priority from sleep_avg.
        h.now = 5 * MS + MS / 10;
        h.sleep(0);
        h.now += MS / 5;
        h.wake_to(0, 0, Some(0), MS / 5);
        assert_eq!(h.prio(0), 126, "woken within the jiffy");
        assert_eq!(h.pick(0), Some(0));
        h.sleep(0);
        h.now += 2 * MS;
        h.wake_to(0, 0, Some(0), 2 * MS);
        assert_eq!(h.prio(0), 125, "woken after two jiffies: recomputed");

        // Levels 2 and 3: at 139 a yield gives up a tick and keeps the task first in its list;
        // with one tick left it goes to the expired array.
        let mut h: H<O1> = H::new("o1:threshold=0,yield=2.5.25", 1000, 1);
        h.spawn(0, 0, nice(19), ALL);
        h.spawn(1, 0, nice(19), ALL);
        assert_eq!(h.pick(0), Some(0));
        assert_eq!((h.prio(0), h.p.task(0).time_slice), (139, 5));
        for left in [4, 3, 2, 1] {
            assert!(h.put_prev(0, PutPrevKind::Yielded));
            assert_eq!(h.p.task(0).time_slice, left);
            assert!(!h.in_expired(0, 0));
            assert_eq!(h.pick(0), Some(0), "keeps its place ahead of its equal");
        }
        assert!(h.put_prev(0, PutPrevKind::Yielded));
        assert!(h.in_expired(0, 0), "one tick left: expired");
        assert_eq!(h.pick(0), Some(1));

        // The default is 2.6's: a SCHED_OTHER yielder goes to the expired array at once.
        let mut h = o1h(0, 1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(0));
        assert!(h.put_prev(0, PutPrevKind::Yielded));
        assert!(h.in_expired(0, 0) && h.prio(0) == 125);
    }

    #[test]
    fn balance_pulls_queued_cold_allowed_tasks_only() {
        let two = CpuMask::first(2);
        let setup = |pin: CpuMask| {
            let mut h = o1h(0, 2);
            h.spawn_allowed(0, 0, two);
            h.spawn_allowed(1, 0, pin);
            h.spawn_allowed(2, 0, pin);
            assert_eq!(h.pick(0), Some(0));
            h
        };
        let mut h = setup(two);
        assert_eq!(h.nr, [3, 0]);
        let moves = h.balance(1, BalanceKind::NewIdle);
        assert_eq!(moves.len(), 1);
        assert_eq!((moves[0].from, moves[0].to), (0, 1));
        assert_ne!(moves[0].task, 0, "the current task never moves");
        assert_eq!(h.nr, [2, 1]);
        assert_eq!(h.pick(1), Some(moves[0].task));

        // Periodic balancing of an idle CPU waits for its 1 ms interval.
        let mut h = setup(two);
        assert!(h.balance(1, BalanceKind::Periodic).is_empty());
        h.now = MS;
        assert_eq!(h.balance(1, BalanceKind::Periodic).len(), 1);

        // Queued tasks pinned to CPU 0 stay; the current one (allowed on 1) is never taken.
        let mut h = setup(CpuMask::from_bits(1));
        assert!(h.balance(1, BalanceKind::NewIdle).is_empty());
        assert_eq!(h.nr, [3, 0]);

        // Cache-hot tasks are left until balancing has failed more than cache_nice_tries times.
        let mut h = setup(two);
        h.now = 10 * MS;
        for id in [1, 2] {
            h.p.task_mut(id).last_ran = Some(h.now - MS);
        }
        assert!(h.balance(1, BalanceKind::NewIdle).is_empty());
        assert!(h.balance(1, BalanceKind::NewIdle).is_empty());
        assert_eq!(h.balance(1, BalanceKind::NewIdle).len(), 1);

        // A waking task leaves a busy previous CPU for an idle allowed one.
        let mut h = setup(two);
        assert_eq!(h.with(|p, m| p.select_task_rq(m, 1, 0, Some(0))), 1);
    }

    #[test]
    fn rejects_knobs_and_parameters_it_has_no_notion_of() {
        let o: O1 = built("o1");
        assert_eq!(spec("o1").describe(), "o1:threshold=0");
        assert_eq!(spec("o1:threshold=40").describe(), "o1:threshold=40");
        // A variant is described only when chosen, so that adding it moved no description.
        assert_eq!(spec("o1:yield=expired").describe(), "o1:threshold=0");
        assert_eq!(
            spec("o1:yield=2.5.25").describe(),
            "o1:threshold=0,yield=2.5.25"
        );
        let e = spec_err("o1:yield=2.6");
        assert!(
            e.contains("yield=2.6") && e.contains("yield=expired or yield=2.5.25"),
            "{e}"
        );
        assert_eq!(spec("o1:softirq=inline").describe(), "o1:threshold=0");
        assert_eq!(
            spec("o1:softirq=2.5.25,yield=2.5.25").describe(),
            "o1:threshold=0,yield=2.5.25,softirq=2.5.25"
        );
        let e = spec_err("o1:softirq=2.6");
        assert!(
            e.contains("softirq=2.6") && e.contains("softirq=inline or softirq=2.5.25"),
            "{e}"
        );
        let e = spec_err("o1:threshold=41");
        assert!(e.contains("threshold=41") && e.contains("0..40"), "{e}");
        let e = spec_err("o1:threshold=x");
        assert!(e.contains("threshold=x") && e.contains("0..40"), "{e}");
        assert!("o1:colour=1".parse::<PolicySpec>().is_err());

        let e = o
            .check_knobs("bg", &policy(SchedPolicy::Idle))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'bg'") && e.contains("policy=idle"), "{e}");
        let dl: SchedPolicy = "deadline:1ms/10ms/10ms".parse().unwrap();
        let e = o.check_knobs("rt", &policy(dl)).unwrap_err().to_string();
        assert!(
            e.contains("'rt'") && e.contains(&format!("policy={dl}")),
            "{e}"
        );
        let k = Knobs {
            slice_ns: Some(300_000),
            ..Knobs::default()
        };
        let e = o.check_knobs("g", &k).unwrap_err().to_string();
        assert!(e.contains("'g'") && e.contains("slice=300.000us"), "{e}");
        for ok in [
            nice(-5),
            policy(SchedPolicy::Batch),
            policy(SchedPolicy::Rr(3)),
        ] {
            assert!(o.check_knobs("g", &ok).is_ok());
        }
    }
}
