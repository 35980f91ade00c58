//! The fair class's arithmetic shared by `cfs` and `eevdf`: load weights by nice
//! (`sched_prio_to_weight`, kernel/sched/core.c), SCHED_IDLE's weight, the fair-class policies
//! (`normal_policy`, `task_has_idle_policy`), `calc_delta_fair` and the tunables' CPU scaling
//! (`get_update_sysctl_factor`, kernel/sched/fair.c).

use super::TaskSetup;
use schedlab_workload::knobs::SchedPolicy;

impl TaskSetup {
    /// Which fair-class policy the task has (SCHED_OTHER unless batch or idle was asked for).
    pub fn fair_class(&self) -> FairClass {
        match self.sched_policy() {
            SchedPolicy::Batch => FairClass::Batch,
            SchedPolicy::Idle => FairClass::Idle,
            _ => FairClass::Normal,
        }
    }
    /// The task's load weight in the fair class: `WEIGHT_IDLEPRIO` for SCHED_IDLE, else by nice.
    pub fn fair_weight(&self) -> u64 {
        match self.fair_class() {
            FairClass::Idle => WEIGHT_IDLEPRIO,
            _ => nice_weight(self.nice()),
        }
    }
}

/// The Linux nice → load weight table (`sched_prio_to_weight`, kernel/sched/core.c), index nice+20.
pub const NICE_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The load weight of a nice value.
pub fn nice_weight(nice: i32) -> u64 {
    NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// The load weight of nice 0 (`NICE_0_LOAD`).
pub const NICE_0_WEIGHT: u64 = 1024;

/// SCHED_IDLE's load weight (`WEIGHT_IDLEPRIO`).
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// The fair-class policies (`normal_policy`, `task_has_idle_policy`), shared by CFS and EEVDF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairClass {
    /// SCHED_OTHER.
    Normal,
    /// SCHED_BATCH: never preempts on wakeup.
    Batch,
    /// SCHED_IDLE: runs when nothing else wants the CPU.
    Idle,
}

/// `calc_delta_fair`: real time → virtual time for load weight `w` (exact, where the kernel
/// multiplies by a 32-bit inverse weight).
pub fn calc_delta_fair(delta: u64, w: u64) -> u64 {
    if w == NICE_0_WEIGHT {
        delta
    } else {
        (delta as u128 * NICE_0_WEIGHT as u128 / w as u128) as u64
    }
}

/// `get_update_sysctl_factor` under SCHED_TUNABLESCALING_LOG: the fair class's latency, granularity
/// and slice tunables are multiplied by 1 + log2(min(ncpus, 8)).
pub fn tunable_scale(ncpus: usize) -> u64 {
    1 + ncpus.clamp(1, 8).ilog2() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_kernel_table() {
        assert_eq!(nice_weight(0), NICE_0_WEIGHT);
        assert_eq!(nice_weight(-20), 88761);
        assert_eq!(nice_weight(19), 15);
        assert_eq!(nice_weight(-99), 88761, "clamped to -20");
        assert_eq!(nice_weight(99), 15, "clamped to 19");
    }

    #[test]
    fn calc_delta_fair_scales_by_weight() {
        assert_eq!(calc_delta_fair(3_000, NICE_0_WEIGHT), 3_000);
        assert_eq!(calc_delta_fair(3_000, 2048), 1_500);
        assert_eq!(calc_delta_fair(3, WEIGHT_IDLEPRIO), 1024);
    }

    #[test]
    fn tunables_scale_with_log2_of_cpus_up_to_8() {
        let s: Vec<u64> = [1, 2, 3, 4, 8, 64].map(tunable_scale).to_vec();
        assert_eq!(s, [1, 2, 2, 3, 4, 4]);
    }
}
