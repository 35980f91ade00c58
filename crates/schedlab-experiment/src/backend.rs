//! The backend trait: what the measuring loop needs of a place where workloads run. The real
//! kernel and the simulator implement it; tests use a mock (as hyperfine's `Executor` and
//! `MockExecutor`), so the loop, `--until` and sweep interleaving are tested exactly and fast.

use crate::error::ExperimentError;
use crate::vary::MachineKey;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::HostNeeds;
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::{BackendInfo, CounterSources, Counters, CpuCounters, LockStats};
use schedlab_workload::timeline::Timeline;
use schedlab_workload::Workload;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// One configuration to measure.
#[derive(Clone, Debug)]
pub struct Config<W, M> {
    /// The workload with its parameters.
    pub workload: W,
    /// Knobs per plan group.
    pub knobs: Vec<Knobs>,
    /// Row label naming what distinguishes it (`threads=16 server.nice=19`); empty for a lone
    /// configuration.
    pub label: String,
    /// The machine it runs on.
    pub machine: M,
}

/// Where configurations run. `Machine` is what may differ between the configurations of one
/// run (the simulated policy, CPU count and cost profile; nothing on the real kernel).
///
/// `Send`, with a `Send + Sync` machine, so that a backend whose repetitions are independent
/// can hand copies of itself to worker threads ([`Backend::worker`]).
pub trait Backend: Send {
    /// A configuration's machine.
    type Machine: Clone + Send + Sync;

    /// The record's backend section for a run whose first configuration runs on `first`.
    fn info(&self, first: &Self::Machine) -> BackendInfo;

    /// The machine in words for the record (`o1:threshold=40, 8 CPUs, piii-700`), if it is not
    /// the host.
    fn machine_label(&self, machine: &Self::Machine) -> Option<String>;

    /// The policy with its parameters, to tell whether a run varies it.
    fn policy_label(&self, machine: &Self::Machine) -> Option<String>;

    /// CPUs that `cpus=` knobs may name on `machine`.
    fn cpus(&self, machine: &Self::Machine) -> usize;

    /// Whether configurations may run on different machines (`--vary policy=...`).
    fn varies_machines(&self) -> bool;

    /// `machine` with `key` set to `value`.
    fn vary_machine(
        &self,
        machine: &Self::Machine,
        key: MachineKey,
        value: &str,
    ) -> Result<Self::Machine, ExperimentError>;

    /// Whether tasks may be given real-time policies on `machine`, so that a workload's own
    /// real-time defaults apply (interbench's SCHED_FIFO 96 timekeeper): on the real kernel,
    /// where this process may use them; on the simulator, where the machine's policy models
    /// SCHED_FIFO.
    fn realtime_allowed(&self, machine: &Self::Machine) -> bool;

    /// Refuse a configuration of `workload` whose memory or files this machine cannot afford.
    fn check_needs(&self, workload: &'static str, needs: &HostNeeds)
        -> Result<(), ExperimentError>;

    /// Refuse knobs `machine` has no notion of.
    fn check_knobs(
        &self,
        machine: &Self::Machine,
        group: &str,
        knobs: &Knobs,
    ) -> Result<(), ExperimentError>;

    /// Get ready for these configurations before the first repetition (limits, tracing), and
    /// add what the record should say of it to `info`.
    fn prepare<W: Workload>(
        &mut self,
        configs: &[Config<W, Self::Machine>],
        info: &mut BackendInfo,
    ) -> Result<(), ExperimentError>;

    /// Another backend like this one, for a worker thread that runs repetitions at the same
    /// time as this one (`--jobs`), or `None` when repetitions must run one at a time. Only a
    /// backend whose repetitions cannot disturb each other and depend on nothing but their
    /// configuration and index (the simulator) returns one; the real kernel does not, as
    /// repetitions side by side would share — and measure — the same CPUs.
    fn worker(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }

    /// Run one repetition of `workload` on `machine`.
    fn run<W: Workload>(
        &mut self,
        machine: &Self::Machine,
        workload: &Arc<W>,
        input: RepInput,
    ) -> Result<RepOutput, RepError>;
}

/// What one repetition gets besides the workload.
pub struct RepInput<'a> {
    /// Knobs per plan group.
    pub knobs: &'a [Knobs],
    /// Set from outside (SIGINT, SIGTERM) to stop.
    pub stop: &'a Arc<AtomicBool>,
    /// Time budget; the supervisor ends a repetition past it.
    pub budget: Duration,
    /// Which repetition of its configuration this is (seeds the simulator); warm-ups are
    /// numbered from [`RepInput::WARMUP_BASE`].
    pub index: u64,
    /// Record the run-queue timeline ([`RepOutput::timeline`]).
    pub timeline: bool,
    /// Keep the bodies' pass rows (each task's `TaskOutcome::passes`, for `--rt-app-logs`).
    pub passes: bool,
}

impl RepInput<'_> {
    /// The index of the first warm-up repetition.
    pub const WARMUP_BASE: u64 = 1_000_000;
}

/// One repetition's result.
pub struct RepOutput {
    /// The raw outcome, for the workload's metrics.
    pub outcome: Outcome,
    /// Counters per group, and `total`.
    pub counters: BTreeMap<String, Counters>,
    /// Where the counters came from.
    pub sources: CounterSources,
    /// What only one kind of backend measures.
    pub detail: RepDetail,
    /// Per lock, its statistics (the workload's locks; on the simulator also the kernel's).
    pub locks: Vec<LockStats>,
    /// The run-queue timeline, when [`RepInput::timeline`] asked for it.
    pub timeline: Option<Timeline>,
}

/// What only one kind of backend measures.
pub enum RepDetail {
    /// The real kernel.
    Real {
        /// Trace events lost (counters are lower bounds when > 0).
        lost_events: u64,
        /// Settings read back per group.
        observed: Vec<BTreeMap<String, String>>,
    },
    /// A simulated machine.
    Sim {
        /// Per-CPU accounting.
        cpus: Vec<CpuCounters>,
        /// Events simulated.
        events: u64,
        /// Wall-clock time the simulation took.
        wall: Duration,
    },
    /// Nothing beyond the common part (a mock).
    None,
}

/// Why a repetition did not finish.
#[derive(Debug)]
pub enum RepError {
    /// Stopped from outside; keep what finished.
    Interrupted,
    /// Past its time budget (the message says which).
    TimedOut(String),
    /// Anything else, as a message.
    Failed(String),
}
