//! The tasks as the machine keeps them: the table of every task by id (the workload's, its
//! spawn places, then the machine's kernel threads), which of them are the workload's, how many
//! of those are still running, the places each group may spawn into, and each plan group's
//! knobs and name. In the kernel this is the task list and `task_struct`'s own fields
//! (`kernel/fork.c` adds to it, `kernel/exit.c` takes away); the scheduler's view of a task is
//! the policies' (each keeps its own per-task state by the same id).
//!
//! The machine's other parts change a task's fields through the table (`tasks[t].state = …`):
//! every switch and burst reads them, and an index into a vector is all that may cost.

use super::{Effect, KernelThread, State, TaskMemory, TaskNuma};
use crate::policy::{CpuId, TaskId};
use schedlab_workload::knobs::Knobs;
use std::ops::{Index, IndexMut, Range};

/// A task as the machine knows it. The fields every switch and burst touch come first and the
/// struct is aligned to a cache line (`repr(C)` keeps the order), so that those fields are in
/// two lines, not spread over four: with thousands of tasks the tasks do not stay in the
/// processor's cache, and each line is a miss.
#[repr(C, align(64))]
pub(super) struct Task {
    // -- first line: the step loop and the switch
    pub(super) then: Effect,
    pub(super) remaining: u64,
    pub(super) state: State,
    /// The CPU whose runqueue the task is on (or was, while blocked).
    pub(super) rq_cpu: CpuId,
    // -- second line: accounting and the checks of every step
    pub(super) last_ran: Option<CpuId>,
    pub(super) cpu_ns: u64,
    pub(super) nivcsw: u64,
    pub(super) slept_at: u64,
    pub(super) migrations: u64,
    /// Spin locks of the plan it holds: while it holds one it is not preempted (a kernel spin
    /// lock disables preemption — 2.4 never preempts kernel code, CONFIG_PREEMPT's
    /// `spin_lock` does `preempt_disable`), and a reschedule waits for its last `spin_unlock`
    /// (`Machine::resched_due`).
    pub(super) spin_held: u32,
    /// Runs in kernel mode (`mode=kernel`): a reschedule that is not at once waits until it
    /// blocks (`Machine::resched_due`).
    pub(super) kernel_mode: bool,
    /// A kernel thread of the machine's own (its body is in `kthreads.rs`), not the workload's.
    pub(super) kthread: Option<KernelThread>,
    /// Signalled while between [`Effect::CondWait`] and [`Effect::CondSleep`] (still on its
    /// CPU): it does not sleep.
    pub(super) cond_signalled: bool,
    // -- the rest
    pub(super) group: usize,
    pub(super) finished_at: u64,
    pub(super) nvcsw: u64,
    pub(super) wakeups: u64,
    pub(super) wakeup_preemptions: u64,
    /// Of `wakeup_preemptions`, those on another CPU than the waker's (switched at once).
    pub(super) preemptions_at_once: u64,
    /// Its pages (`memory.rs`).
    pub(super) mem: TaskMemory,
    /// When it first asked for the lock it is waiting for (a wait's start, for the lock's
    /// statistics).
    pub(super) lock_wait_since: Option<u64>,
    /// The task that spawned it (`None`: it started with the run, or is a place not yet
    /// spawned into).
    pub(super) parent: Option<TaskId>,
    /// Whether it exists: false for a spawn place until a task is spawned into it.
    pub(super) born: bool,
    /// Whether its parent has waited for it (reaped it) since it ended.
    pub(super) reaped: bool,
    /// Counts its completed readiness waits: a wait's timeout event carries the count it was
    /// armed at, and is stale once it differs (`poll.rs`).
    pub(super) poll_gen: u64,
    /// It slept in a receive on a loopback TCP channel that has not completed yet: that
    /// receive pays `net_wait` (`tcp_wait.rs`).
    pub(super) tcp_slept: bool,
    /// Its memory's node and its computes' time, on a machine with sockets (`numa.rs`).
    pub(super) numa: TaskNuma,
}

impl Task {
    /// A new task, blocked, whose runqueue is `rq_cpu`'s.
    pub(super) fn new(group: usize, kthread: Option<KernelThread>, rq_cpu: CpuId) -> Task {
        Task {
            group,
            kthread,
            state: State::Blocked,
            rq_cpu,
            last_ran: None,
            remaining: 0,
            then: Effect::Resume,
            slept_at: 0,
            finished_at: 0,
            cpu_ns: 0,
            nvcsw: 0,
            nivcsw: 0,
            migrations: 0,
            wakeups: 0,
            wakeup_preemptions: 0,
            preemptions_at_once: 0,
            cond_signalled: false,
            mem: TaskMemory::default(),
            lock_wait_since: None,
            kernel_mode: false,
            spin_held: 0,
            parent: None,
            born: true,
            reaped: false,
            poll_gen: 0,
            tcp_slept: false,
            numa: TaskNuma::default(),
        }
    }
}

/// Every task of one repetition, and the bookkeeping of their coming and going.
pub(super) struct Tasks {
    /// Every task by id: the workload's (those that start with the run, then the spawn
    /// places), then the machine's kernel threads.
    table: Vec<Task>,
    /// Tasks below this index are the workload's.
    workload: usize,
    /// Workload tasks not yet finished (the run ends at 0; kernel threads never finish).
    live: usize,
    /// Per plan group, the spawn places not yet used (task ids).
    spawn_places: Vec<Range<TaskId>>,
    /// Per plan group, its knobs (a spawned task's).
    knobs: Vec<Knobs>,
    /// Per plan group, its name (for messages).
    group_names: Vec<&'static str>,
}

impl Tasks {
    /// No task yet, for a plan whose groups have `knobs` and `group_names`.
    pub(super) fn new(knobs: Vec<Knobs>, group_names: Vec<&'static str>) -> Tasks {
        Tasks {
            table: Vec::new(),
            workload: 0,
            live: 0,
            spawn_places: vec![0..0; knobs.len().max(1)],
            knobs,
            group_names,
        }
    }

    /// Add `task`, which starts with the run (blocked until it is woken); its id.
    pub(super) fn add(&mut self, task: Task) -> TaskId {
        self.table.push(task);
        self.table.len() - 1
    }

    /// Add a spawn place of group `group`: a task not yet born, which a task of the group may
    /// spawn into ([`Tasks::take_spawn_place`]); its id. The places of a group are consecutive.
    pub(super) fn add_spawn_place(&mut self, group: usize) -> TaskId {
        let mut t = Task::new(group, None, 0);
        t.state = State::Done;
        t.born = false;
        let id = self.add(t);
        if let Some(places) = self.spawn_places.get_mut(group) {
            if places.start == places.end {
                *places = id..id;
            }
            places.end = id + 1;
        }
        id
    }

    /// The workload's tasks are all in place (the machine's own threads come after them): the
    /// born ones are running.
    pub(super) fn workload_placed(&mut self) {
        self.workload = self.table.len();
        self.live = self.table.iter().filter(|t| t.born).count();
    }

    /// Add kernel thread `kthread`, whose runqueue is `rq_cpu`'s; its id.
    pub(super) fn add_kernel_thread(&mut self, kthread: KernelThread, rq_cpu: CpuId) -> TaskId {
        self.add(Task::new(usize::MAX, Some(kthread), rq_cpu))
    }

    /// The next unused spawn place of group `group`, now taken; `None` when the group has
    /// none left.
    pub(super) fn take_spawn_place(&mut self, group: usize) -> Option<TaskId> {
        let places = self.spawn_places.get_mut(group)?;
        let child = places.start;
        (places.start < places.end).then(|| {
            places.start += 1;
            child
        })
    }

    /// How many tasks the plan lets group `group` spawn.
    pub(super) fn spawn_capacity(&self, group: usize) -> usize {
        (self.workload().iter())
            .filter(|c| c.group == group && (c.parent.is_some() || !c.born))
            .count()
    }

    /// Spawn place `child` has a task, forked by `parent`: it runs until it exits.
    pub(super) fn born(&mut self, child: TaskId, parent: TaskId) {
        let task = &mut self.table[child];
        task.born = true;
        task.parent = Some(parent);
        self.live += 1;
    }

    /// Workload task `t` has ended at `now`.
    pub(super) fn exited(&mut self, t: TaskId, now: u64) {
        let task = &mut self.table[t];
        task.state = State::Done;
        task.finished_at = now;
        self.live -= 1;
    }

    /// Task `t`'s index among its group's tasks (the workload's `TaskRef::index`).
    pub(super) fn index_in_group(&self, t: TaskId) -> usize {
        let group = self.table[t].group;
        (self.table[..t].iter())
            .filter(|o| o.group == group && o.kthread.is_none())
            .count()
    }

    /// How many tasks there are, kernel threads included.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Task `t`, if there is one.
    pub(super) fn get(&self, t: TaskId) -> Option<&Task> {
        self.table.get(t)
    }

    /// Every task, by id.
    pub(super) fn iter(&self) -> std::slice::Iter<'_, Task> {
        self.table.iter()
    }

    /// The workload's tasks (spawn places included), by id.
    pub(super) fn workload(&self) -> &[Task] {
        &self.table[..self.workload]
    }

    /// Workload tasks not yet finished.
    #[inline(always)]
    pub(super) fn live(&self) -> usize {
        self.live
    }

    /// The knobs of plan group `group` (none, for a group the plan does not have).
    pub(super) fn knobs(&self, group: usize) -> Knobs {
        self.knobs.get(group).cloned().unwrap_or_default()
    }

    /// The name of task `t`'s group (`kernel` for the machine's own threads).
    pub(super) fn group_name(&self, t: TaskId) -> &'static str {
        match self.table[t].kthread {
            Some(_) => super::KERNEL_GROUP,
            None => (self.group_names.get(self.table[t].group).copied()).unwrap_or("?"),
        }
    }
}

impl Index<TaskId> for Tasks {
    type Output = Task;
    #[inline(always)]
    fn index(&self, t: TaskId) -> &Task {
        &self.table[t]
    }
}

impl IndexMut<TaskId> for Tasks {
    #[inline(always)]
    fn index_mut(&mut self, t: TaskId) -> &mut Task {
        &mut self.table[t]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two groups (`a` with two tasks at the start and two spawn places, `b` with one task)
    /// and a kernel thread.
    fn two_groups() -> Tasks {
        let nice = Knobs {
            nice: Some(5),
            ..Knobs::default()
        };
        let knobs = vec![Knobs::default(), nice];
        let mut tasks = Tasks::new(knobs, vec!["a", "b"]);
        assert_eq!(tasks.add(Task::new(0, None, 0)), 0);
        assert_eq!(tasks.add(Task::new(0, None, 1)), 1);
        assert_eq!(tasks.add(Task::new(1, None, 0)), 2);
        assert_eq!(tasks.add_spawn_place(0), 3);
        assert_eq!(tasks.add_spawn_place(0), 4);
        tasks.workload_placed();
        assert_eq!(tasks.add_kernel_thread(KernelThread::Netisr, 0), 5);
        tasks
    }

    #[test]
    fn the_workload_is_the_tasks_before_the_kernel_threads_and_only_born_ones_run() {
        let tasks = two_groups();
        assert_eq!(
            (tasks.len(), tasks.workload().len(), tasks.live()),
            (6, 5, 3)
        );
        assert_eq!(tasks.group_name(2), "b");
        assert_eq!(tasks.group_name(5), super::super::KERNEL_GROUP);
        assert_eq!(tasks.knobs(1).nice, Some(5));
        assert_eq!(tasks.knobs(7), Knobs::default());
        assert_eq!(tasks[1].rq_cpu, 1);
        assert!(tasks.get(6).is_none());
        assert_eq!(tasks.iter().filter(|t| t.kthread.is_some()).count(), 1);
    }

    #[test]
    fn a_group_spawns_into_its_places_in_order_until_they_are_used() {
        let mut tasks = two_groups();
        assert_eq!(tasks.spawn_capacity(0), 2);
        assert_eq!(tasks.spawn_capacity(1), 0);
        assert_eq!(tasks.take_spawn_place(1), None);
        assert_eq!(tasks.take_spawn_place(9), None);
        assert_eq!(tasks.take_spawn_place(0), Some(3));
        tasks.born(3, 0);
        assert_eq!((tasks.live(), tasks[3].parent), (4, Some(0)));
        // A born child still counts against its group's places.
        assert_eq!(tasks.spawn_capacity(0), 2);
        assert_eq!(tasks.index_in_group(3), 2);
        assert_eq!(tasks.take_spawn_place(0), Some(4));
        assert_eq!(tasks.take_spawn_place(0), None);
    }

    #[test]
    fn an_exit_ends_the_task_and_the_run_ends_with_the_last() {
        let mut tasks = two_groups();
        for t in 0..3 {
            tasks.exited(t, 10 + t as u64);
        }
        assert_eq!(tasks.live(), 0);
        assert!(tasks[2].state == State::Done);
        assert_eq!(tasks[2].finished_at, 12);
    }
}
