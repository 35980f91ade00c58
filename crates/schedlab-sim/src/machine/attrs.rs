//! A task changing its own scheduling attributes during the run (a workload file's `set` step,
//! rt-app's per-phase `cpus`, `policy` and `priority`): `sched_setattr` and `sched_setaffinity`
//! on itself. In kernel/sched/core.c `__sched_setscheduler` dequeues the task, changes its class
//! and weight and enqueues it again (then `switched_to`/`prio_changed` may reschedule), and
//! `__set_cpus_allowed_ptr` moves a task whose CPU leaves its new mask at once (through the
//! stopper, `affine_move_task`). The policy trait has no hook for a change of class, so the
//! machine models both as the task leaving its runqueue and joining one again as a new task:
//! the policy's `task_new` with the new knobs and mask, then the placement of a new task
//! within that mask (`select_task_rq`, `EnqueueKind::New`). Deviations, by design: the change
//! counts one voluntary switch, and the policy's accounting of the task (vruntime, sleep
//! average, interactivity) starts again as at a fork.

use super::{Effect, Machine};
use crate::policy::{CpuId, CpuMask, TaskId, TaskKind, TaskSetup};

impl Machine<'_> {
    /// Task `t`, current on `cpu`, has paid its system call: apply the knobs its body left in
    /// its slot over its current ones, and put it back on a runqueue of its new mask.
    pub(super) fn set_attrs(&mut self, cpu: CpuId, t: TaskId) {
        let Some((delta, all_cpus)) = self.shared.slots[t].borrow_mut().attrs.take() else {
            unreachable!("a set_attrs request leaves its knobs in the slot");
        };
        let group = self.tasks[t].group;
        let current = (self.task_knobs.get(&t).cloned()).unwrap_or_else(|| self.tasks.knobs(group));
        let mut knobs = current.merged(&delta);
        if all_cpus && delta.cpus.is_none() {
            knobs.cpus = None;
        }
        let allowed = CpuMask::of_list(knobs.cpus.as_ref(), self.cpus.len());
        let setup = TaskSetup {
            id: t,
            group,
            knobs: knobs.clone(),
            allowed,
            kind: TaskKind::Workload,
        };
        self.task_knobs.insert(t, knobs);
        self.tasks[t].then = Effect::Resume;
        self.block(cpu, t);
        self.policy.task_new(&self.view, &setup);
        // Placed from where it was when it may stay there, else from the first CPU it may use;
        // joining another CPU's runqueue is a migration (placing a new task is not counted).
        let was = self.tasks[t].rq_cpu;
        if !allowed.contains(was) {
            self.tasks[t].rq_cpu = allowed.lowest().unwrap_or(0);
        }
        self.wake(t, Some(cpu), true);
        if self.tasks[t].rq_cpu != was {
            self.tasks[t].migrations += 1;
        }
    }
}
