//! `linux24-prio` — the priority-list scheduler for Linux 2.4 by Hubertus Franke and Mike Kravetz
//! (IBM Linux Technology Center, "Implementation of a Priority-Queue Scheduler for Linux",
//! version 0.1, December 2000, lse.sourceforge.net/scheduling; measured as "2.4.0-pre8prio" in
//! seed 002, IBM's sched_yield and chat results of 2001-01-25).
//!
//! The 2.4 run list is split into 33 lists indexed by a task's static goodness
//! q = `counter + 20 − nice` through `qid(q)`: 0 → 0; 1–16 → (q + 1) >> 1; 17–32 → q − 8;
//! above 32 → 24 + ((q & 31) >> 2). `schedule()` searches from the highest non-empty list and
//! stops there, so its cost no longer grows with every runnable task. Everything else is
//! `linux24`'s ([`super::linux24::Sched24`]): the one global lock, goodness with
//! PROC_CHANGE_PENALTY and the mm bonus, recalculation of every task's counter when the best
//! goodness is 0, sched_yield, counters per tick, reschedule_idle.
//!
//! Only the paper's title page and the qid mapping above were found (the lse pages and the patch
//! are not in the corpora searched), so the rest is assumed from that description:
//! - SCHED_OTHER tasks are filed under qid(counter + 20 − nice), 0 when counter is 0; SCHED_FIFO
//!   and SCHED_RR tasks under list 32, the top one, which no SCHED_OTHER value reaches at HZ=100
//!   (q ≤ 2·NICE_TO_TICKS(−20) − 1 + 40 = 61 → list 31). At higher HZ, q of negative-nice tasks
//!   can pass 63 and the mapping's `& 31` wraps; it is kept as given.
//! - A pick walks the highest non-empty list in list order, computing the full goodness (same-CPU
//!   and same-mm bonuses included) and keeping the first best. It goes down to the next list only
//!   if the lists above held no task of positive goodness for this CPU (none allowed here, or only
//!   the task that just yielded); goodness 0 found first triggers the recalculation. So affinity
//!   never lifts a task above one of a higher list — the approximation the lists buy.
//! - The walk of a list stops at the first task that reaches the highest goodness possible in that
//!   list (its top q + PROC_CHANGE_PENALTY + 1): an exact shortcut, the same choice as walking the
//!   whole list. It is what keeps the pick short when most tasks share one list, as in the
//!   sched_yield benchmark, and [`Policy::last_scan_len`] counts only the entries walked.
//! - Order inside a list is the 2.4 list's order (a woken task at the head, a yielding one at the
//!   tail); a task whose counter moves it to another list keeps its place in that order. Tasks
//!   running on a CPU are off the lists (2.4 kept them on its list, where `can_schedule` skipped
//!   them); after a recalculation every waiting task is filed anew.

use super::ds::key_deque::KeyDeque;
use super::linux24::{Entry, Probe, RunList, Scan, Sched24, Task24, PROC_CHANGE_PENALTY};
use super::*;

/// Number of lists.
pub(super) const NR_LISTS: usize = 33;
/// The list of real-time tasks.
const RT_LIST: usize = NR_LISTS - 1;
/// The highest real-time goodness: 1000 + rt_priority 99.
const MAX_RT_GOODNESS: i64 = 1099;

/// The list index of static goodness `q` (`counter + 20 − nice`): 0 → 0; 1–16 → (q + 1) >> 1;
/// 17–32 → q − 8; above 32 → 24 + ((q & 31) >> 2).
pub(super) fn qid(q: i64) -> usize {
    match q {
        ..=0 => 0,
        1..=16 => ((q + 1) >> 1) as usize,
        17..=32 => (q - 8) as usize,
        _ => 24 + ((q & 31) >> 2) as usize,
    }
}

/// The list a waiting task is filed under.
fn list_of(t: &Task24) -> usize {
    if t.rt().is_some() {
        RT_LIST
    } else {
        qid(t.static_goodness())
    }
}

/// The 33 priority lists, each in 2.4 list order (keyed by the order key).
pub struct PrioLists {
    lists: Vec<KeyDeque<Entry>>,
    /// The list each waiting task is in.
    at: Vec<usize>,
    /// Bit l set: list l is not empty.
    nonempty: u64,
    len: usize,
    /// The highest static goodness filed under each list, for `top_for`.
    top: [i64; NR_LISTS],
    top_for: i64,
    scratch: Vec<TaskId>,
}

/// The priority-list scheduler.
pub type Linux24Prio = Sched24<PrioLists>;

/// The `linux24-prio` policy: its name, summary and constructor (it has no parameters).
pub const DEF: PolicyDef = PolicyDef {
    name: PrioLists::NAME,
    summary: "Franke & Kravetz's priority-list scheduler for 2.4: the run list split into 33 lists by static goodness, schedule() searches the top one (IBM LTC, Dec 2000; seed 002)",
    params: &[],
    describe_defaults: true,
    check: no_check,
    build: boxed::<Linux24Prio>,
};

impl PrioLists {
    fn file(&mut self, tasks: &[Task24], id: TaskId) {
        let l = list_of(&tasks[id]);
        self.lists[l].insert(tasks[id].order, Entry::of(&tasks[id], id));
        self.at[id] = l;
        self.nonempty |= 1 << l;
    }

    /// The highest q in 1..=max_static per list.
    fn compute_tops(&mut self, max_static: i64) {
        self.top = [0; NR_LISTS];
        for q in 1..=max_static {
            let l = qid(q);
            self.top[l] = self.top[l].max(q);
        }
        self.top[RT_LIST] = MAX_RT_GOODNESS;
        self.top_for = max_static;
    }
}

impl RunList for PrioLists {
    const NAME: &'static str = "linux24-prio";
    const RUNNING_ON_LIST: bool = false;

    fn new() -> Self {
        PrioLists {
            lists: vec![KeyDeque::default(); NR_LISTS],
            at: Vec::new(),
            nonempty: 0,
            len: 0,
            top: [0; NR_LISTS],
            top_for: -1,
            scratch: Vec::new(),
        }
    }

    fn insert(&mut self, tasks: &[Task24], id: TaskId) {
        if self.at.len() <= id {
            self.at.resize(id + 1, usize::MAX);
        }
        self.file(tasks, id);
        self.len += 1;
    }

    fn remove(&mut self, tasks: &[Task24], id: TaskId) {
        let l = self.at[id];
        let removed = self.lists[l].remove(tasks[id].order);
        debug_assert_eq!(
            removed.map(|e| e.id as TaskId),
            Some(id),
            "linux24-prio: removing a task not queued"
        );
        if self.lists[l].is_empty() {
            self.nonempty &= !(1 << l);
        }
        self.at[id] = usize::MAX;
        self.len -= 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn best(&mut self, tasks: &[Task24], scan: &Scan) -> (Option<(TaskId, i64)>, usize) {
        if self.top_for != scan.max_static {
            self.compute_tops(scan.max_static);
        }
        let probe = Probe::of(scan);
        let bonus = if scan.smp { PROC_CHANGE_PENALTY } else { 0 } + 1;
        let mut best: Option<(TaskId, i64)> = None;
        let mut examined = 0;
        let mut mask = self.nonempty;
        while mask != 0 {
            let l = 63 - mask.leading_zeros() as usize;
            mask &= !(1 << l);
            let cap = match l {
                0 => 0,
                RT_LIST => MAX_RT_GOODNESS,
                _ => self.top[l] + bonus,
            };
            for e in self.lists[l].values() {
                examined += 1;
                if !e.allowed_on(tasks, scan.cpu) {
                    continue;
                }
                let w = e.weight(&probe);
                debug_assert_eq!(w, scan.weight(e.id as TaskId, &tasks[e.id as TaskId]));
                if best.is_none_or(|(_, bw)| w > bw) {
                    best = Some((e.id as TaskId, w));
                }
                if w >= cap {
                    break;
                }
            }
            if best.is_some_and(|(_, w)| w > 0) {
                break;
            }
        }
        (best, examined)
    }

    fn counters_changed(&mut self, tasks: &[Task24]) {
        let mut all = std::mem::take(&mut self.scratch);
        for list in &mut self.lists {
            all.extend(list.values().map(|e| e.id as TaskId));
            list.clear();
        }
        self.nonempty = 0;
        for &id in &all {
            self.file(tasks, id);
        }
        all.clear();
        self.scratch = all;
    }
}

#[cfg(test)]
mod tests {
    use super::super::linux24::tests::h24;
    use super::super::linux24::{GlobalList, Linux24};
    use super::*;
    use crate::policy::testing::{built, nice, spec, ALL, H};
    use schedlab_workload::knobs::{Knobs, SchedPolicy};

    #[test]
    fn qid_at_its_boundaries() {
        let cases = [
            (-1, 0),
            (0, 0),
            (1, 1),
            (2, 1),
            (3, 2),
            (15, 8),
            (16, 8),
            (17, 9),
            (26, 18),
            (32, 24),
            (33, 24),
            (35, 24),
            (36, 25),
            (61, 31),
            (63, 31),
            (64, 24),
        ];
        for (q, l) in cases {
            assert_eq!(qid(q), l, "qid({q})");
        }
        // Every SCHED_OTHER value at HZ 100 stays below the real-time list.
        let max = 2 * super::super::linux24::nice_to_ticks(-20, 100) - 1 + 40;
        assert!((0..=max).all(|q| qid(q) < RT_LIST));
    }

    /// Two CPUs; three tasks of counter 6 (list 18) that last ran on CPU 1 and two of counter 5
    /// (list 17) that last ran on CPU 0, all waiting; CPU 0 picks.
    fn setup<L: RunList + 'static>() -> H<Sched24<L>> {
        let mut h = h24::<L>(2);
        for id in 0..5 {
            h.spawn(id, 0, Knobs::default(), ALL);
            h.p_task(id, |t| {
                t.processor = if id < 3 { 1 } else { 0 };
                t.counter = if id < 3 { 6 } else { 5 };
            });
        }
        h.refile();
        h
    }

    #[test]
    fn the_pick_examines_only_the_top_non_empty_list() {
        let mut h = setup::<PrioLists>();
        // List 18 holds tasks 2, 1, 0 (head first); they have no affinity for CPU 0.
        assert_eq!(h.pick(0), Some(2));
        assert_eq!(h.scanned(0), 3, "list 17 is not examined");
        // Vanilla walks all five and takes a counter-5 task for its +15 on CPU 0.
        let mut v = setup::<GlobalList>();
        assert_eq!(v.pick(0), Some(4));
        assert_eq!(v.scanned(0), 5);
        // The walk of a list stops at a task with the list's best possible goodness.
        let mut h = setup::<PrioLists>();
        assert_eq!(h.pick(1), Some(2));
        assert_eq!(h.scanned(1), 3, "CPU 1 ran no task of this mm yet: 41 < 42");
        let mut h = setup::<PrioLists>();
        h.set_active_mm(1, 0);
        assert_eq!(h.pick(1), Some(2));
        assert_eq!(
            h.scanned(1),
            1,
            "6 + 20 + 15 + 1 is the most list 18 can give"
        );
        // The lists below are searched when the top ones hold nothing for this CPU.
        let mut h = h24::<PrioLists>(2);
        h.spawn(0, 0, nice(-20), CpuMask::from_bits(0b10));
        h.spawn(1, 0, nice(19), ALL);
        assert_eq!(h.pick(0), Some(1));
        assert_eq!(h.scanned(0), 2);
    }

    #[test]
    fn real_time_tasks_sit_in_the_top_list_and_counters_refile_tasks() {
        let mut h = h24::<PrioLists>(1);
        h.spawn(0, 0, nice(-20), ALL);
        h.spawn(
            1,
            0,
            Knobs {
                policy: Some(SchedPolicy::Rr(1)),
                ..Knobs::default()
            },
            ALL,
        );
        assert_eq!(h.p_list().at[1], RT_LIST);
        assert_eq!(h.p_list().at[0], qid(11 + 40));
        assert_eq!((h.pick(0), h.scanned(0)), (Some(1), 1));
        // The recalculation refiles the waiting tasks.
        let mut h = h24::<PrioLists>(1);
        h.spawn(0, 0, Knobs::default(), ALL);
        h.spawn(1, 0, Knobs::default(), ALL);
        assert_eq!(h.pick(0), Some(1));
        h.p_task(0, |t| t.counter = 0);
        h.refile();
        assert_eq!(h.p_list().at[0], 0);
        h.p_task(1, |t| t.counter = 0);
        h.with(|p, m| p.put_prev_task(m, 0, 1, PutPrevKind::Preempted));
        assert_eq!(h.pick(0), Some(1));
        assert_eq!(
            h.p_list().at[0],
            qid(6 + 20),
            "counter 6 after the recalculation"
        );
    }

    #[test]
    fn same_knobs_and_description_as_linux24() {
        let p: Linux24Prio = built("linux24-prio");
        assert_eq!(spec("linux24-prio").describe(), "linux24-prio");
        let batch = Knobs {
            policy: Some(SchedPolicy::Batch),
            ..Knobs::default()
        };
        let e = p.check_knobs("g", &batch).unwrap_err().to_string();
        assert!(
            e.contains("linux24-prio") && e.contains("policy=batch"),
            "{e}"
        );
        assert_eq!(built::<Linux24>("linux24").lock_domain(3), p.lock_domain(3));
    }
}
