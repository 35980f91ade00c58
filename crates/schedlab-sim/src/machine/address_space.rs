//! Address spaces: which process each workload task belongs to and which one each CPU has
//! loaded, so that a switch between tasks of different processes pays `mm_switch`. In the
//! kernel, `context_switch` (kernel/sched/core.c) calls `switch_mm_irqs_off` only when the next
//! task has an mm of its own that is not the one the CPU runs on; a kernel thread has none and
//! borrows the previous task's (`enter_lazy_tlb`), and an idle CPU keeps what it had.
//!
//! Which tasks share a process is the plan's rule ([`schedlab_workload::Plan::address_space`]),
//! the same the real backend hosts them by. Every CPU starts with the address space of the
//! process that starts the run (0), whose threads the tasks of a `threads` run are. The machine
//! asks only when `mm_switch` is set: with the built-in profiles' 0 nothing here runs.

use crate::policy::{CpuId, TaskId};

/// The process of each workload task and the one each CPU has loaded.
pub(super) struct AddressSpaces {
    /// By task id, the workload's tasks and spawn places (kernel threads come after them and
    /// have none).
    of_task: Vec<u32>,
    /// By CPU, the address space it runs on.
    loaded: Vec<u32>,
}

impl AddressSpaces {
    /// The address spaces of `plan`'s tasks and spawn places on `cpus` CPUs.
    pub(super) fn new(plan: &schedlab_workload::Plan, cpus: usize) -> AddressSpaces {
        let tasks = plan.tasks().into_iter().chain(plan.spawn_slots());
        AddressSpaces {
            of_task: tasks
                .map(|t| u32::try_from(plan.address_space(t)).unwrap_or(u32::MAX))
                .collect(),
            loaded: vec![0; cpus],
        }
    }

    /// `cpu` switches to task `t`: whether that loads another address space (the CPU then
    /// keeps it). A kernel thread loads none.
    #[inline]
    pub(super) fn switch_to(&mut self, cpu: CpuId, t: TaskId) -> bool {
        let Some(&mm) = self.of_task.get(t) else {
            return false;
        };
        let changed = self.loaded[cpu] != mm;
        self.loaded[cpu] = mm;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};

    fn plan(mode: TaskMode) -> Plan {
        Plan {
            groups: vec![GroupPlan::fixed("a", 2), GroupPlan::fixed("b", 1)],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode,
            transport: Transport::Pipe,
        }
    }

    /// Between threads nothing is loaded; between processes each switch to another loads it,
    /// a switch back to the same one does not, and a kernel thread (id past the workload's)
    /// leaves the CPU's address space where it was.
    #[test]
    fn a_cpu_loads_another_address_space_only_for_a_task_of_another_process() {
        let mut threads = AddressSpaces::new(&plan(TaskMode::Threads), 2);
        assert!(!(0..3).any(|t| threads.switch_to(0, t)));
        let mut procs = AddressSpaces::new(&plan(TaskMode::Processes), 2);
        assert!(procs.switch_to(0, 0));
        assert!(!procs.switch_to(0, 0));
        assert!(procs.switch_to(0, 1));
        assert!(!procs.switch_to(0, 99), "a kernel thread borrows");
        assert!(!procs.switch_to(0, 1), "and the same process follows it");
        assert!(procs.switch_to(1, 1), "each CPU loads its own");
        let mut groups = AddressSpaces::new(&plan(TaskMode::GroupProcesses), 1);
        assert!(groups.switch_to(0, 0));
        assert!(!groups.switch_to(0, 1), "a's two tasks share a process");
        assert!(groups.switch_to(0, 2));
    }
}
