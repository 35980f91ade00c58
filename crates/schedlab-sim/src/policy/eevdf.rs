//! Placeholder while the policy is being written (replaced before this work lands).

use super::*;
use schedlab_workload::knobs::Knobs;

/// Placeholder.
pub struct Eevdf;

impl Eevdf {
    /// Placeholder.
    pub fn from_spec(_spec: &PolicySpec) -> Result<Eevdf, String> {
        Err("not built yet".into())
    }
}

impl Policy for Eevdf {
    fn describe(&self) -> String {
        unimplemented!()
    }
    fn check_knobs(&self, _: &str, _: &Knobs) -> Result<(), String> {
        unimplemented!()
    }
    fn task_new(&mut self, _: &MachineView, _: &TaskSetup) {
        unimplemented!()
    }
    fn select_task_rq(&mut self, _: &MachineView, _: TaskId, _: CpuId, _: Option<CpuId>) -> CpuId {
        unimplemented!()
    }
    fn enqueue_task(&mut self, _: &MachineView, _: CpuId, _: TaskId, _: EnqueueKind) {
        unimplemented!()
    }
    fn dequeue_task(&mut self, _: &MachineView, _: CpuId, _: TaskId, _: DequeueKind) {
        unimplemented!()
    }
    fn wakeup_preempt(&mut self, _: &MachineView, _: CpuId, _: TaskId, _: TaskId) -> bool {
        unimplemented!()
    }
    fn pick_next_task(&mut self, _: &MachineView, _: CpuId) -> Option<TaskId> {
        unimplemented!()
    }
    fn put_prev_task(&mut self, _: &MachineView, _: CpuId, _: TaskId, _: PutPrevKind) {
        unimplemented!()
    }
    fn update_curr(&mut self, _: &MachineView, _: CpuId, _: TaskId, _: u64) {
        unimplemented!()
    }
    fn task_tick(&mut self, _: &MachineView, _: CpuId, _: TaskId) -> bool {
        unimplemented!()
    }
    fn yield_task(&mut self, _: &MachineView, _: CpuId, _: TaskId) {
        unimplemented!()
    }
}
