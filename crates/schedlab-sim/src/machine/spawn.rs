//! Tasks that come and go: `spawn` (fork), waiting for a child (waitpid) and a spawned task's
//! exit. In the kernel: `kernel_clone` → `copy_process` (`sched_fork`) → `wake_up_new_task`,
//! `do_wait`, and `do_exit` → `exit_notify`, which wakes a parent waiting in `do_wait`.
//!
//! Costs: the parent pays `fork` (copying the task, its files and mappings; for a compile job,
//! the `exec` of the compiler too) before the child exists; the child pays `exit` after its body
//! returns; `wait` is a system call. The child's runqueue is the policy's choice
//! ([`crate::policy::Policy::task_fork`]); it is enqueued as a new task, paying the waker's
//! wakeup costs like any wakeup from the parent's CPU.

use super::{Effect, Machine, State};
use crate::policy::{CpuId, TaskId};
use schedlab_workload::{ChildExit, TaskRef, WorkloadError};
use std::time::Duration;

impl Machine<'_> {
    /// The running task `t` of `cpu` has paid for its fork: start a task in group `group` with
    /// argument `arg` in the group's next spawn place, or answer why not.
    pub(super) fn spawn(&mut self, cpu: CpuId, t: TaskId, group: usize, arg: u64) {
        let answer = self.tasks.take_spawn_place(group).ok_or_else(|| {
            WorkloadError::Backend(format!(
                "task {t} cannot spawn into group {group}: the plan gives it {} spawn places and they are used",
                self.tasks.spawn_capacity(group)
            ))
        });
        let reply = answer.map(|child| {
            self.start_child(cpu, t, child, arg);
            let index = self.tasks.index_in_group(child);
            TaskRef {
                id: child,
                group,
                index,
            }
        });
        self.shared.slots[t].borrow_mut().spawned = Some(reply);
    }

    /// Create task `child` forked by `parent` on `cpu` and put it on the runqueue the policy
    /// chooses; the wakeup's costs are the parent's.
    fn start_child(&mut self, cpu: CpuId, parent: TaskId, child: TaskId, arg: u64) {
        let setup = self.workload_task_setup(child, self.tasks[child].group);
        self.policy.task_new(&self.view, &setup);
        self.tasks.born(child, parent);
        let task = &mut self.tasks[child];
        task.kernel_mode = setup.knobs.kernel_mode();
        task.state = State::Blocked;
        task.slept_at = self.view.now;
        // A forked task starts on its parent's CPU (copy_process copies task_cpu) when it may.
        task.rq_cpu = if setup.allowed.contains(cpu) {
            cpu
        } else {
            setup.allowed.lowest().unwrap_or(0)
        };
        self.shared.slots[child].borrow_mut().arg = arg;
        let target = match self.policy.task_fork(&self.view, child, parent, cpu) {
            Some(c) => c,
            None => {
                let prev = self.tasks[child].rq_cpu;
                self.policy
                    .select_task_rq(&self.view, child, prev, Some(cpu))
            }
        };
        let cost = self.wake_on(child, target, Some(cpu), true);
        self.tasks[parent].remaining += cost;
    }

    /// The running task `t` of `cpu` waits for `child` (any child: `None`). Returns false if
    /// it blocked (a child's exit wakes it) or failed.
    pub(super) fn wait_child(&mut self, cpu: CpuId, t: TaskId, child: Option<TaskId>) -> bool {
        let candidates: Vec<TaskId> = match child {
            Some(c) => vec![c],
            None => (0..self.tasks.workload().len()).collect(),
        };
        let mut pending = false;
        let mut found = None;
        for c in candidates {
            let task = &self.tasks[c];
            if task.parent != Some(t) || task.reaped {
                continue;
            }
            if task.state == State::Done {
                found = Some(c);
                break;
            }
            pending = true;
        }
        if let Some(c) = found {
            self.tasks[c].reaped = true;
            let group = self.tasks[c].group;
            let index = self.tasks.index_in_group(c);
            let exit = ChildExit {
                task: TaskRef {
                    id: c,
                    group,
                    index,
                },
                cpu: Duration::from_nanos(self.tasks[c].cpu_ns),
            };
            self.shared.slots[t].borrow_mut().reaped = Some(Ok(exit));
            return true;
        }
        if !pending {
            let what = match child {
                Some(c) => format!("task {c} is not a child of task {t} left to wait for"),
                None => format!("task {t} has no child left to wait for"),
            };
            self.shared.slots[t].borrow_mut().reaped = Some(Err(WorkloadError::Backend(what)));
            return true;
        }
        self.block_to_retry(cpu, t, Effect::Wait(child));
        false
    }

    /// Task `t` has ended: wake its parent if it waits for it or for any child (`exit_notify`;
    /// its cost is in the child's `exit`, so the wakeup is charged to nobody, as a timer's is).
    pub(super) fn notify_parent(&mut self, t: TaskId) {
        let Some(parent) = self.tasks[t].parent else {
            return;
        };
        let p = &self.tasks[parent];
        let waits = matches!(p.then, Effect::Wait(w) if w.is_none_or(|w| w == t));
        if p.state == State::Blocked && waits {
            self.wake(parent, None, false);
        }
    }
}
