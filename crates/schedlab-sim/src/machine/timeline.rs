//! Recording the run-queue timeline (`schedlab_workload::timeline`): every change of a task's
//! place, as the machine makes it. A CPU's run queue is the tasks whose `rq_cpu` is that CPU and
//! that are runnable — exactly what `nr_running` counts (`rq_change`). For policies with one
//! run queue per CPU (o1, staircase, cfs, eevdf, ule, linux24-mq) that is the policy's own queue.
//! For the shared-queue policies (linux24, linux24-prio, bsd4 without per-CPU queues) it is the
//! CPU `select_task_rq` named at the wakeup (the one `reschedule_idle` chose, or the task's last
//! CPU), or the CPU that last ran the task after a preemption, until another CPU takes it from
//! the shared list — as the kernel's `task->processor` says where a 2.4 task belongs.
//!
//! The hooks are one branch each when the timeline is off, and one `Vec` push when it is on:
//! no work over CPUs or tasks per event.

use super::Machine;
use crate::policy::{CpuId, CpuMask, TaskId};
use schedlab_workload::timeline::{TaskState, Timeline, TimelineTask};

impl Machine<'_> {
    /// A task was created (group `group`, `usize::MAX` for a kernel thread; allowed on
    /// `allowed`): its row of the timeline, with the same index as its `TaskId`.
    pub(super) fn timeline_task(&mut self, group: usize, allowed: CpuMask) {
        let Some(tl) = self.timeline.as_mut() else {
            return;
        };
        let ncpus = self.cpus.len();
        let list: Vec<u32> = allowed.iter().map(|c| c as u32).collect();
        tl.add_task(TimelineTask {
            // Named in `timeline_finish`, which has the plan.
            group: group.to_string(),
            workload: group != usize::MAX,
            allowed: (list.len() < ncpus).then_some(list),
        });
    }

    /// Task `t` is `state` on `cpu` from now on.
    #[inline]
    pub(super) fn timeline_event(&mut self, t: TaskId, cpu: CpuId, state: TaskState) {
        if let Some(tl) = self.timeline.as_mut() {
            tl.push(self.view.now, t as u32, cpu as u32, state);
        }
    }

    /// Name the timeline's groups and close it at the end of the run.
    pub(super) fn timeline_finish(&mut self, plan: &schedlab_workload::Plan) -> Option<Timeline> {
        let mut tl = self.timeline.take()?;
        tl.end_ns = self.view.now;
        for t in &mut tl.tasks {
            t.group = match t.group.parse::<usize>() {
                Ok(g) if t.workload => plan.groups[g].name.to_string(),
                _ => super::KERNEL_GROUP.to_string(),
            };
        }
        Some(tl)
    }
}
