//! The workload's synchronization objects: locks (futex mutexes and spin locks), barriers,
//! semaphores and condition variables. [`SyncObjects`] owns their state — holders, waiters in
//! the order they came, counts and lock statistics — and says who goes on; the machine's
//! effects here wake them through the wakeup path and block the callers.
//!
//! Barriers, semaphores and conditions are futex-like: whoever ends a wait (the last party, a
//! post, a signal) wakes the waiters through the wakeup path, first come first woken, and pays
//! for the wakeups; a post is handed to the first waiter rather than counted. `cond_wait` joins
//! the condition's waiters and releases the lock in one step, as `pthread_cond_wait` does, so a
//! signal that comes before it sleeps is not lost; once signalled it takes the lock again.
//!
//! A sleeping lock is a futex mutex: a waiter blocks, and the release wakes the first waiter,
//! which tries again. A spin lock is taken in user space at no cost; a waiter spins on its CPU
//! in [`SPIN_CHUNK`] bursts (its CPU time; not preempted while the holder runs, as a kernel
//! spinner is not: `Machine::resched_due`) until a release hands the lock to the first waiter
//! that is on a CPU, or, if none is, a spinner finds it free when it next runs.
//!
//! A lock remembers the CPU that last released it: a task that takes it on another CPU pays the
//! cost model's `line` (by distance) as CPU time at the start of its hold — the lock's cache line
//! and the first store to the data it protects come from that CPU's cache — and one that takes
//! it where it was released pays nothing. `line` is 0 in the built-in profiles.

use super::{Effect, Event, Machine, SimError, State};
use crate::context::Op;
use crate::policy::{CpuId, TaskId};
use schedlab_workload::plan::LockKind;
use schedlab_workload::record::LockStats;
use schedlab_workload::{Plan, WorkloadError};
use std::collections::VecDeque;

/// How long a spinning task's burst is before it looks at the lock again, ns. A release hands
/// the lock to a spinner on a CPU at once (ending its burst); this only bounds a burst.
pub const SPIN_CHUNK: u64 = 1_000_000;

/// A lock: the workload's, or a connection's (`net.rs`).
#[derive(Default)]
pub(super) struct SimLock {
    /// The task holding it.
    pub(super) holder: Option<TaskId>,
    /// Tasks waiting for it, oldest first.
    pub(super) waiters: VecDeque<TaskId>,
    /// A spin lock: waiters stay on their CPUs ([`Effect::Spin`]).
    pub(super) spin: bool,
    /// When the holder took it.
    held_since: u64,
    /// The CPU that last released it (none before the first release).
    released_on: Option<CpuId>,
    /// Its statistics (named and kinded at the start; elapsed and CPU time filled in at the
    /// end).
    pub(super) stats: LockStats,
}

/// A cyclic barrier: `parties` arrivals release the waiters, and the next round starts empty.
pub(super) struct SimBarrier {
    pub(super) parties: usize,
    pub(super) waiters: VecDeque<TaskId>,
}

/// A counting semaphore; a post while tasks wait is handed to the first of them.
struct SimSemaphore {
    count: u64,
    waiters: VecDeque<TaskId>,
}

/// A condition variable: its waiters, in the order they began to wait.
#[derive(Default)]
struct SimCond {
    waiters: VecDeque<TaskId>,
}

/// The plan's locks, barriers, semaphores and condition variables.
pub(super) struct SyncObjects {
    pub(super) locks: Vec<SimLock>,
    pub(super) barriers: Vec<SimBarrier>,
    semaphores: Vec<SimSemaphore>,
    conds: Vec<SimCond>,
}

impl SyncObjects {
    /// The objects of `plan`: locks free, semaphores at their initial counts, nobody waiting.
    pub(super) fn new(plan: &Plan) -> SyncObjects {
        SyncObjects {
            locks: (0..plan.locks)
                .map(|l| {
                    let kind = plan.lock_kind(l);
                    SimLock {
                        spin: kind == LockKind::Spin,
                        stats: LockStats::new(plan.lock_name(l), kind.name(), false),
                        ..SimLock::default()
                    }
                })
                .collect(),
            barriers: (plan.sync.barriers.iter())
                .map(|&parties| SimBarrier {
                    parties,
                    waiters: VecDeque::new(),
                })
                .collect(),
            semaphores: (plan.sync.semaphores.iter())
                .map(|&count| SimSemaphore {
                    count: u64::from(count),
                    waiters: VecDeque::new(),
                })
                .collect(),
            conds: (0..plan.sync.conds).map(|_| SimCond::default()).collect(),
        }
    }

    /// The error for a request naming a barrier, semaphore, condition or lock the plan lacks.
    pub(super) fn missing(&self, op: Op) -> Option<WorkloadError> {
        let (what, id, have) = match op {
            Op::Barrier(b) => ("barrier", b, self.barriers.len()),
            Op::SemPost(s) | Op::SemWait(s) => ("semaphore", s, self.semaphores.len()),
            Op::CondSignal(c) | Op::CondBroadcast(c) => ("condition variable", c, self.conds.len()),
            Op::CondWait(c, _) if c >= self.conds.len() => {
                ("condition variable", c, self.conds.len())
            }
            Op::CondWait(_, l) | Op::Lock(l) => ("lock", l, self.locks.len()),
            _ => return None,
        };
        (id >= have).then(|| {
            WorkloadError::Backend(format!(
                "{what} {id} is not in the workload's plan, which has {have}"
            ))
        })
    }

    /// Task `t` arrives at barrier `b`: the waiters it releases, in the order they arrived,
    /// if it is the last party (the next round starts empty), else `None` (it waits, and is
    /// now one of them).
    pub(super) fn arrive(&mut self, b: usize, t: TaskId) -> Option<VecDeque<TaskId>> {
        let bar = &mut self.barriers[b];
        if bar.waiters.len() + 1 < bar.parties {
            bar.waiters.push_back(t);
            return None;
        }
        Some(std::mem::take(&mut bar.waiters))
    }

    /// Post semaphore `s`: the first waiter, handed the post, or none (the count grows).
    pub(super) fn post(&mut self, s: usize) -> Option<TaskId> {
        let sem = &mut self.semaphores[s];
        let w = sem.waiters.pop_front();
        if w.is_none() {
            sem.count += 1;
        }
        w
    }

    /// Task `t` takes one from semaphore `s`. Returns false if the count was 0 (it waits for a
    /// post to be handed over, and is now one of the waiters).
    pub(super) fn try_wait(&mut self, s: usize, t: TaskId) -> bool {
        let sem = &mut self.semaphores[s];
        if sem.count == 0 {
            sem.waiters.push_back(t);
            return false;
        }
        sem.count -= 1;
        true
    }

    /// Task `t` begins to wait on condition `c`.
    pub(super) fn cond_join(&mut self, c: usize, t: TaskId) {
        self.conds[c].waiters.push_back(t);
    }

    /// Signal condition `c`: its first waiter, no longer waiting.
    pub(super) fn cond_signal(&mut self, c: usize) -> Option<TaskId> {
        self.conds[c].waiters.pop_front()
    }

    /// Broadcast condition `c`: all its waiters, in the order they began to wait.
    pub(super) fn cond_broadcast(&mut self, c: usize) -> VecDeque<TaskId> {
        std::mem::take(&mut self.conds[c].waiters)
    }

    /// Task `t` no longer waits at the barrier, semaphore or condition its `effect` blocks on.
    pub(super) fn leave(&mut self, effect: Effect, t: TaskId) {
        let waiters = match effect {
            Effect::AtBarrier(b) => &mut self.barriers[b].waiters,
            Effect::OnSemaphore(s) => &mut self.semaphores[s].waiters,
            Effect::OnCond(c, _) => &mut self.conds[c].waiters,
            _ => return,
        };
        waiters.retain(|&w| w != t);
    }

    /// Task `t` takes free lock `l` at `now`, having waited `wait` ns.
    pub(super) fn take(&mut self, l: usize, t: TaskId, now: u64, wait: u64) {
        let lock = &mut self.locks[l];
        debug_assert!(lock.holder.is_none());
        lock.holder = Some(t);
        lock.held_since = now;
        lock.stats.acquired(wait);
    }

    /// Task `t` releases lock `l` on `cpu` at `now`, if it holds it. Returns whether it did.
    pub(super) fn release(&mut self, l: usize, t: TaskId, cpu: CpuId, now: u64) -> bool {
        let lock = &mut self.locks[l];
        if lock.holder != Some(t) {
            return false;
        }
        lock.holder = None;
        lock.released_on = Some(cpu);
        let held = now - lock.held_since;
        lock.stats.released(held);
        true
    }
}

impl Machine<'_> {
    /// [`Effect::Lock`] (or [`Effect::OnCond`], signalled) for the running task `t` of `cpu`:
    /// take lock `l` if it is free; else wait for it, spinning on the CPU for a spin lock or
    /// blocking for a sleeping one. Returns whether `t` is still on `cpu`.
    #[inline(always)]
    pub(super) fn lock(&mut self, cpu: CpuId, t: TaskId, l: usize) -> bool {
        let now = self.view.now;
        let lock = &mut self.sync.locks[l];
        if lock.holder.is_none() {
            let line = self.take_lock(cpu, t, l);
            self.tasks[t].remaining += line;
            return true;
        }
        lock.waiters.push_back(t);
        self.tasks[t].lock_wait_since.get_or_insert(now);
        if lock.spin {
            // A spin lock's waiter stays on its CPU, burning it.
            self.tasks[t].remaining = SPIN_CHUNK;
            self.tasks[t].then = Effect::Spin(l);
            true
        } else {
            self.block_to_retry(cpu, t, Effect::Lock(l));
            false
        }
    }

    /// [`Effect::Spin`]: task `t`'s stretch of spinning for lock `l` is over: take the lock if
    /// it is free, or spin on. Returns false if the run failed (the holder has finished).
    #[inline(always)]
    pub(super) fn spin(&mut self, cpu: CpuId, t: TaskId, l: usize) -> bool {
        match self.sync.locks[l].holder {
            None => {
                self.sync.locks[l].waiters.retain(|&w| w != t);
                let line = self.take_lock(cpu, t, l);
                self.tasks[t].remaining += line;
            }
            Some(h) if self.tasks[h].state == State::Done => {
                self.failure = Some(SimError::Deadlock(format!(
                    "task {t} spins on lock {l}, held by task {h}, which has finished"
                )));
                return false;
            }
            Some(_) => {
                self.tasks[t].remaining = SPIN_CHUNK;
                self.tasks[t].then = Effect::Spin(l);
            }
        }
        true
    }

    /// The effects on barriers, semaphores and condition variables for the running task `t`
    /// of `cpu`. Returns whether `t` is still on `cpu`.
    #[inline(always)]
    pub(super) fn sync_effect(&mut self, cpu: CpuId, t: TaskId, effect: Effect) -> bool {
        match effect {
            // Past the plan's wait end nobody is left to end a wait: it ends at once.
            Effect::Barrier(_) if self.waits_ended() => self.cut(t),
            Effect::Barrier(b) => match self.sync.arrive(b, t) {
                None => {
                    self.block_to_retry(cpu, t, Effect::AtBarrier(b));
                    return false;
                }
                // The last party: the others go on, in the order they arrived.
                Some(waiters) => {
                    let mut cost = 0;
                    for w in waiters {
                        cost += self.wake(w, Some(cpu), false);
                    }
                    self.tasks[t].remaining += cost;
                }
            },
            // Woken by the last party or handed a post: the call is complete.
            Effect::AtBarrier(_) | Effect::OnSemaphore(_) | Effect::WaitCut => {}
            Effect::SemPost(s) => {
                if let Some(w) = self.sync.post(s) {
                    let cost = self.wake(w, Some(cpu), false);
                    self.tasks[t].remaining += cost;
                }
            }
            Effect::SemWait(s) => {
                if !self.sync.try_wait(s, t) {
                    if self.waits_ended() {
                        self.sync.leave(Effect::OnSemaphore(s), t);
                        self.cut(t);
                        return true;
                    }
                    self.block_to_retry(cpu, t, Effect::OnSemaphore(s));
                    return false;
                }
            }
            Effect::CondWait(c, l) => {
                // One step, as pthread_cond_wait: from now on a signal finds this task.
                self.sync.cond_join(c, t);
                self.unlock(cpu, t, l);
                // Releasing the lock may have cost a wakeup: work it off before sleeping.
                self.tasks[t].then = Effect::CondSleep(c, l);
            }
            Effect::CondSleep(c, l) => {
                if std::mem::take(&mut self.tasks[t].cond_signalled) {
                    self.tasks[t].then = Effect::Lock(l);
                } else if self.waits_ended() {
                    self.sync.leave(Effect::OnCond(c, l), t);
                    self.cut(t);
                } else {
                    self.block_to_retry(cpu, t, Effect::OnCond(c, l));
                    return false;
                }
            }
            Effect::CondSignal(c) => {
                if let Some(w) = self.sync.cond_signal(c) {
                    self.cond_wake(cpu, t, w);
                }
            }
            Effect::CondBroadcast(c) => {
                for w in self.sync.cond_broadcast(c) {
                    self.cond_wake(cpu, t, w);
                }
            }
            _ => unreachable!("not a barrier, semaphore or condition effect: {effect:?}"),
        }
        true
    }

    /// Whether the plan's wait end has come.
    fn waits_ended(&self) -> bool {
        self.wait_end.is_some_and(|end| self.view.now >= end)
    }

    /// Task `t`'s wait was ended by the plan's wait end: its context call fails.
    fn cut(&mut self, t: TaskId) {
        self.shared.slots[t].borrow_mut().cut = true;
    }

    /// The plan's wait end has come: every task blocked at a barrier, on a semaphore or on a
    /// condition leaves its waiters and is woken, its call failed ([`Machine::cut`]; a
    /// condition's lock stays released, as the real backend's does), in task order. Waits
    /// begun later end at once ([`Machine::sync_effect`]).
    pub(super) fn end_waits(&mut self) {
        for t in 0..self.tasks.len() {
            let task = &self.tasks[t];
            if task.state != State::Blocked || task.kthread.is_some() {
                continue;
            }
            let then = task.then;
            if matches!(
                then,
                Effect::AtBarrier(_) | Effect::OnSemaphore(_) | Effect::OnCond(..)
            ) {
                self.sync.leave(then, t);
                self.cut(t);
                self.tasks[t].then = Effect::WaitCut;
                self.wake(t, None, false);
            }
        }
    }

    /// Wake `w`, taken off a condition's waiters by the running task `t` of `cpu`: a sleeping
    /// waiter through the wakeup path (the cost is `t`'s), one still working off its
    /// [`Effect::CondWait`] by not letting it sleep.
    fn cond_wake(&mut self, cpu: CpuId, t: TaskId, w: TaskId) {
        if self.tasks[w].state == State::Blocked {
            debug_assert!(matches!(self.tasks[w].then, Effect::OnCond(..)));
            let cost = self.wake(w, Some(cpu), false);
            self.tasks[t].remaining += cost;
        } else {
            self.tasks[w].cond_signalled = true;
        }
    }

    /// Task `t`, running on `cpu`, takes free lock `l`, ending its wait if it had one. Returns
    /// the CPU time the lock's line costs it (the caller adds it to the task's work, the hold's
    /// first): `line` by distance when the lock was last released on another CPU, else 0.
    fn take_lock(&mut self, cpu: CpuId, t: TaskId, l: usize) -> u64 {
        let now = self.view.now;
        let wait = self.tasks[t].lock_wait_since.take().map_or(0, |s| now - s);
        let released_on = self.sync.locks[l].released_on;
        self.sync.take(l, t, now, wait);
        if self.sync.locks[l].spin {
            self.tasks[t].spin_held += 1;
        }
        let line = self.costs.model.line;
        match released_on {
            Some(from) if line > 0 && from != cpu => {
                let base = self.costs.by_distance(line, from, cpu);
                self.costs.c(base)
            }
            _ => 0,
        }
    }

    /// The running task `t` of `cpu` releases lock `l` (if it holds it). A sleeping lock wakes
    /// its first waiter, which tries again; a spin lock goes at once to its first waiter that
    /// is spinning on a CPU (a preempted spinner takes it when it runs again, if still free).
    pub(super) fn unlock(&mut self, cpu: CpuId, t: TaskId, l: usize) {
        let now = self.view.now;
        if !self.sync.release(l, t, cpu, now) {
            return;
        }
        let lock = &mut self.sync.locks[l];
        if !lock.spin {
            if let Some(w) = lock.waiters.pop_front() {
                let cost = self.wake(w, Some(cpu), false);
                self.tasks[t].remaining += cost;
            }
            return;
        }
        self.tasks[t].spin_held -= 1;
        let tasks = &self.tasks;
        let spinning = lock
            .waiters
            .iter()
            .position(|&w| matches!(tasks[w].state, State::Running(_)));
        let Some(pos) = spinning else { return };
        let w = lock
            .waiters
            .remove(pos)
            .expect("a waiter at a found position");
        let State::Running(c) = self.tasks[w].state else {
            unreachable!("the waiter was found running")
        };
        // Its spinning ends now: charge it, hand it the lock, and end its burst — at once, or
        // after the lock's line has come over from this CPU.
        self.account(c);
        let line = self.take_lock(c, w, l);
        self.tasks[w].remaining = line;
        self.tasks[w].then = Effect::Resume;
        self.cpus[c].gen += 1;
        let gen = self.cpus[c].gen;
        self.clock
            .events
            .push_slot(c, now + line, Event::BurstDone { cpu: c, gen });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::plan::{GroupPlan, SyncPlan, TaskMode, Transport};

    fn objects(barriers: Vec<usize>, semaphores: Vec<u32>) -> SyncObjects {
        SyncObjects::new(&Plan {
            groups: vec![GroupPlan {
                name: "a",
                tasks: 4,
                spawn: 0,
            }],
            channels: 0,
            duplex: false,
            locks: 2,
            sync: SyncPlan {
                barriers,
                semaphores,
                conds: 1,
                lock_kinds: vec![LockKind::Sleep, LockKind::Spin],
                ..SyncPlan::default()
            },
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        })
    }

    /// A barrier of three holds the first two arrivals and releases them, in order, at the
    /// third; the next round starts empty.
    #[test]
    fn the_last_party_releases_a_barrier_in_arrival_order() {
        let mut s = objects(vec![3], vec![]);
        for _ in 0..2 {
            assert_eq!(s.arrive(0, 5), None);
            assert_eq!(s.arrive(0, 2), None);
            assert_eq!(s.arrive(0, 9), Some(VecDeque::from([5, 2])));
        }
    }

    /// A post with nobody waiting is counted and taken later; with waiters it is handed to
    /// the first of them and not counted.
    #[test]
    fn a_post_is_counted_or_handed_to_the_first_waiter() {
        let mut s = objects(vec![], vec![1]);
        assert!(s.try_wait(0, 1));
        assert!(!s.try_wait(0, 2));
        assert!(!s.try_wait(0, 3));
        assert_eq!(s.post(0), Some(2));
        assert_eq!(s.post(0), Some(3));
        assert_eq!(s.post(0), None);
        assert!(s.try_wait(0, 4));
        assert!(!s.try_wait(0, 4));
    }

    /// Only the holder releases a lock; hold and wait times go to its statistics. A signal
    /// wakes the first waiter of a condition, a broadcast the others in order.
    #[test]
    fn locks_count_holds_and_conditions_wake_in_order() {
        let mut s = objects(vec![], vec![]);
        assert!(!s.locks[0].spin && s.locks[1].spin);
        s.take(0, 1, 100, 0);
        assert!(!s.release(0, 2, 0, 150), "not the holder");
        assert!(s.release(0, 1, 0, 400));
        s.take(0, 2, 500, 70);
        assert!(s.release(0, 2, 0, 600));
        let st = &s.locks[0].stats;
        assert_eq!((st.acquisitions, st.waited, st.wait_ns), (2, 1, 70));
        assert_eq!((st.hold_ns, st.hold_max_ns), (400, 300));
        for t in [4, 6, 8] {
            s.cond_join(0, t);
        }
        assert_eq!(s.cond_signal(0), Some(4));
        assert_eq!(s.cond_broadcast(0), VecDeque::from([6, 8]));
        assert_eq!(s.cond_signal(0), None);
        assert!(s.missing(Op::Barrier(0)).is_some());
        assert!(s.missing(Op::Lock(1)).is_none());
        assert!(s.missing(Op::CondWait(0, 2)).is_some());
    }
}
