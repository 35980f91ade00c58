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

use super::linux24::{RunList, Scan, Sched24, Task24, PROC_CHANGE_PENALTY};
use super::*;
use std::collections::BTreeMap;

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

/// The 33 priority lists, each in 2.4 list order (a `BTreeMap` keyed by the order key).
pub struct PrioLists {
    lists: Vec<BTreeMap<i64, TaskId>>,
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

impl PrioLists {
    fn file(&mut self, tasks: &[Task24], id: TaskId) {
        let l = list_of(&tasks[id]);
        self.lists[l].insert(tasks[id].order, id);
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
            lists: vec![BTreeMap::new(); NR_LISTS],
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
        let removed = self.lists[l].remove(&tasks[id].order);
        debug_assert_eq!(
            removed,
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
            for &id in self.lists[l].values() {
                examined += 1;
                let t = &tasks[id];
                if !t.allowed.contains(scan.cpu) {
                    continue;
                }
                let w = scan.weight(id, t);
                if best.is_none_or(|(_, bw)| w > bw) {
                    best = Some((id, w));
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
            all.extend(list.values().copied());
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
