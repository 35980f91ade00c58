//! Where a configuration runs: the real kernel or a simulated machine, and the one call that
//! runs a repetition on either and returns the same kind of result.

use crate::cli::{BackendArg, CommonArgs, CountersArg};
use schedlab_real::host::online_cpus;
use schedlab_real::trace::SchedTrace;
use schedlab_real::{run_repetition as run_real, RepetitionSetup, RunError};
use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition as run_sim, SimError, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::{CounterSources, Counters, CpuCounters};
use schedlab_workload::Workload;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A simulated machine: policy, CPUs, costs, first seed.
#[derive(Clone, Debug)]
pub struct SimMachine {
    /// The policy and its parameters.
    pub spec: PolicySpec,
    /// Simulated CPUs.
    pub cpus: usize,
    /// Cost model.
    pub cost: CostModel,
    /// Seed of the first measured repetition.
    pub seed: u64,
}

impl SimMachine {
    /// `eevdf on 8 CPUs (modern)`-style description, with the policy's defaults spelled out.
    pub fn policy_name(&self) -> String {
        schedlab_sim::policy::build(&self.spec)
            .map(|p| p.describe())
            .unwrap_or_else(|_| self.spec.to_string())
    }
}

/// The backend of one configuration.
#[derive(Clone, Debug)]
pub enum Backend {
    /// The running kernel.
    Real,
    /// A simulated machine.
    Sim(Box<SimMachine>),
}

impl Backend {
    /// Validate the backend options of a command line.
    pub fn from_args(common: &CommonArgs) -> Result<Backend, String> {
        match common.backend {
            BackendArg::Real => {
                let sim_only = [
                    ("--policy", common.policy.is_some()),
                    ("--cpus", common.cpus.is_some()),
                    ("--profile", common.profile.is_some()),
                    ("--cost", !common.cost.is_empty()),
                    ("--seed", common.seed.is_some()),
                ];
                if let Some((flag, _)) = sim_only.iter().find(|(_, given)| *given) {
                    return Err(format!(
                        "{flag} applies to the simulator; add --backend sim (on the real kernel, use --group NAME:cpus=LIST to pin tasks)"
                    ));
                }
                Ok(Backend::Real)
            }
            BackendArg::Sim => {
                if common.counters != CountersArg::Auto {
                    return Err("--counters applies to the real kernel; the simulator counts everything exactly".into());
                }
                let spec: PolicySpec = common.policy.as_deref().unwrap_or("eevdf").parse()?;
                let cpus = common.cpus.unwrap_or_else(online_cpus);
                if !(1..=schedlab_sim::policy::MAX_CPUS).contains(&cpus) {
                    return Err(format!(
                        "--cpus {cpus} is not accepted; the simulator models 1..{} CPUs",
                        schedlab_sim::policy::MAX_CPUS
                    ));
                }
                let cost = CostModel::profile(common.profile.as_deref().unwrap_or("modern"))?
                    .with_overrides(&common.cost)?;
                Ok(Backend::Sim(Box::new(SimMachine {
                    spec,
                    cpus,
                    cost,
                    seed: common.seed.unwrap_or(1),
                })))
            }
        }
    }

    /// The simulated machine in words (`o1:threshold=40, 8 CPUs, piii-700`), `None` for real.
    pub fn machine_label(&self) -> Option<String> {
        match self {
            Backend::Real => None,
            Backend::Sim(s) => Some(format!(
                "{}, {} CPU{}, {}",
                s.policy_name(),
                s.cpus,
                if s.cpus == 1 { "" } else { "s" },
                s.cost.profile
            )),
        }
    }

    /// The simulated policy with its parameters, for telling whether a sweep varies it.
    pub fn policy_label(&self) -> Option<String> {
        match self {
            Backend::Real => None,
            Backend::Sim(s) => Some(s.policy_name()),
        }
    }

    /// CPUs that `cpus=` knobs may name.
    pub fn cpus(&self) -> usize {
        match self {
            Backend::Real => online_cpus(),
            Backend::Sim(s) => s.cpus,
        }
    }

    /// Check knobs against the policy (the real kernel checks them when applying).
    pub fn check_knobs(&self, group: &str, knobs: &Knobs) -> Result<(), String> {
        match self {
            Backend::Real => Ok(()),
            Backend::Sim(s) => schedlab_sim::check_setup(&s.spec, s.cpus, &[(group, knobs)])
                .map_err(|e| format!("--policy {}: {e}", s.spec)),
        }
    }
}

/// One repetition's result, from either backend.
pub struct RepOutput {
    /// Raw outcome for the workload's metrics.
    pub outcome: Outcome,
    /// Counters per group and total.
    pub counters: BTreeMap<String, Counters>,
    /// Where the counters came from.
    pub sources: CounterSources,
    /// Trace events lost (real backend).
    pub lost_events: u64,
    /// Settings read back per group (real backend).
    pub observed: Vec<BTreeMap<String, String>>,
    /// Per-CPU accounting (simulator).
    pub cpus: Vec<CpuCounters>,
    /// Events simulated (simulator).
    pub events: Option<u64>,
    /// Wall-clock time the simulation took.
    pub sim_wall: Option<Duration>,
}

/// Why a repetition failed, from either backend.
pub enum RepError {
    /// Stopped by the user; keep what finished.
    Interrupted,
    /// Anything else, as a message.
    Failed(String),
}

/// Everything a repetition needs besides the workload.
pub struct RepArgs<'a> {
    /// Knobs per group.
    pub knobs: &'a [Knobs],
    /// Interrupt flag.
    pub stop: &'a std::sync::Arc<AtomicBool>,
    /// Time budget.
    pub budget: Duration,
    /// The trace session (real backend), if any.
    pub trace: Option<&'a mut SchedTrace>,
    /// Which repetition of the configuration this is (seeds the simulator); warm-ups are
    /// numbered from 1_000_000.
    pub index: u64,
}

/// Run one repetition on `backend`.
pub fn run_repetition<W: Workload>(
    backend: &Backend,
    workload: &std::sync::Arc<W>,
    args: RepArgs,
) -> Result<RepOutput, RepError> {
    match backend {
        Backend::Real => {
            let r = run_real(
                workload,
                RepetitionSetup {
                    knobs: args.knobs,
                    stop: args.stop.clone(),
                    budget: args.budget,
                    trace: args.trace,
                },
            )
            .map_err(|e| match e {
                RunError::Interrupted => RepError::Interrupted,
                e @ RunError::Timeout(_) => {
                    RepError::Failed(format!("{e} (raise it with --timeout)"))
                }
                e => RepError::Failed(e.to_string()),
            })?;
            Ok(RepOutput {
                outcome: r.outcome,
                counters: r.counters,
                sources: r.sources,
                lost_events: r.lost_events,
                observed: r.observed,
                cpus: Vec::new(),
                events: None,
                sim_wall: None,
            })
        }
        Backend::Sim(s) => {
            let started = std::time::Instant::now();
            let r = run_sim(
                &**workload,
                SimSetup {
                    policy: &s.spec,
                    cpus: s.cpus,
                    cost: &s.cost,
                    seed: s.seed.wrapping_add(args.index),
                    knobs: args.knobs,
                    stop: Some(args.stop),
                    wall_budget: Some(args.budget),
                },
            )
            .map_err(|e| match e {
                SimError::Interrupted => RepError::Interrupted,
                e => RepError::Failed(e.to_string()),
            })?;
            let exact = "simulator (exact)".to_string();
            Ok(RepOutput {
                outcome: r.outcome,
                counters: r.counters,
                sources: CounterSources {
                    switches: exact.clone(),
                    migrations: exact.clone(),
                    wakeups: exact,
                },
                lost_events: 0,
                observed: Vec::new(),
                cpus: r.cpus,
                events: Some(r.events),
                sim_wall: Some(started.elapsed()),
            })
        }
    }
}
