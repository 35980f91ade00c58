//! A simulated machine as a [`Backend`]: the policy, CPU count and cost profile are the
//! configuration's machine (a sweep may vary them); repetition `k` runs with seed `SEED + k`,
//! so the same command gives the same numbers.

use crate::backend::{Backend, RepDetail, RepError, RepInput, RepOutput};
use crate::build::{Config, SimRequest};
use crate::error::ExperimentError;
use crate::vary::MachineKey;
use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::profile_file::load_profile;
use schedlab_sim::topology::Topology;
use schedlab_sim::{run_repetition, SimError, SimSetup};
use schedlab_workload::knobs::{Knobs, SchedPolicy, TimerSlack};
use schedlab_workload::presets::HostNeeds;
use schedlab_workload::record::{BackendInfo, CounterSources};
use schedlab_workload::{CpuSet, Workload};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// A simulated machine: policy, CPUs, costs, first seed.
#[derive(Clone, Debug)]
pub struct SimMachine {
    /// The policy and its parameters.
    pub spec: PolicySpec,
    /// Simulated CPUs.
    pub cpus: usize,
    /// Their sockets, cores and threads (`--topology`); `None` is a flat machine.
    pub topology: Option<Topology>,
    /// Cost model.
    pub cost: CostModel,
    /// Seed of the first measured repetition.
    pub seed: u64,
    /// The cost overrides asked for, kept when a sweep changes the profile.
    pub cost_overrides: Vec<String>,
    /// CPUs the machine's kernel threads may run on (`--kernel-cpus`; all when unset).
    pub kernel_cpus: Option<CpuSet>,
}

impl SimMachine {
    /// The machine a request asks for; `host_cpus` is the default CPU count.
    pub fn from_request(req: &SimRequest, host_cpus: usize) -> Result<SimMachine, ExperimentError> {
        let spec = parse_policy(req.policy.as_deref().unwrap_or("eevdf"))?;
        let topology = match &req.topology {
            Some(text) => Some(
                text.parse::<Topology>()
                    .map_err(|e| ExperimentError::Machine(format!("--topology: {e}")))?,
            ),
            None => None,
        };
        let cpus = match (topology, req.cpus) {
            (Some(t), Some(n)) if t.cpus() != n => {
                return Err(ExperimentError::Machine(format!(
                    "--topology {t} makes {} logical CPUs but --cpus is {n}; give one of them, or both agreeing",
                    t.cpus()
                )))
            }
            (Some(t), _) => t.cpus(),
            (None, n) => check_cpus(n.unwrap_or(host_cpus))?,
        };
        let cost = load_profile(req.profile.as_deref().unwrap_or("modern"))
            .map_err(ExperimentError::Profile)?
            .with_overrides(&req.cost)
            .map_err(ExperimentError::Cost)?;
        let kernel_cpus =
            match &req.kernel_cpus {
                Some(text) => Some(text.parse::<CpuSet>().map_err(|e| {
                    ExperimentError::Machine(format!("--kernel-cpus '{text}': {e}"))
                })?),
                None => None,
            };
        let m = SimMachine {
            spec,
            cpus,
            topology,
            cost,
            seed: req.seed.unwrap_or(1),
            cost_overrides: req.cost.clone(),
            kernel_cpus,
        };
        m.check_kernel_cpus()?;
        Ok(m)
    }

    /// Refuse kernel-thread CPUs the machine does not have.
    fn check_kernel_cpus(&self) -> Result<(), ExperimentError> {
        match self
            .kernel_cpus
            .as_ref()
            .and_then(|k| k.iter().find(|&&c| c >= self.cpus))
        {
            Some(bad) => Err(ExperimentError::Machine(format!(
                "--kernel-cpus names CPU {bad}, but the simulated machine has CPUs 0-{}",
                self.cpus - 1
            ))),
            None => Ok(()),
        }
    }

    /// `eevdf` with the policy's defaults spelled out (`eevdf:run_to_parity=1,...`).
    pub fn policy_name(&self) -> String {
        self.spec.describe()
    }
}

fn parse_policy(text: &str) -> Result<PolicySpec, ExperimentError> {
    text.parse()
        .map_err(|e| ExperimentError::Policy(Box::new(e)))
}

fn check_cpus(cpus: usize) -> Result<usize, ExperimentError> {
    if (1..=schedlab_sim::policy::MAX_CPUS).contains(&cpus) {
        Ok(cpus)
    } else {
        Err(ExperimentError::SimCpus {
            cpus,
            max: schedlab_sim::policy::MAX_CPUS,
        })
    }
}

/// The simulator.
#[derive(Default)]
pub struct SimBackend;

impl Backend for SimBackend {
    type Machine = SimMachine;

    fn info(&self, first: &SimMachine) -> BackendInfo {
        BackendInfo {
            kind: "sim".into(),
            policy: Some(first.policy_name()),
            seed: Some(first.seed),
            details: BTreeMap::from([
                ("cpus".to_string(), first.cpus.to_string()),
                ("cost".to_string(), first.cost.to_string()),
                ("counters".to_string(), "exact (simulator)".to_string()),
            ])
            .into_iter()
            .chain(first.topology.map(|t| {
                (
                    "topology".to_string(),
                    format!(
                        "{t} ({} {})",
                        first.cost.distance_costs(),
                        first.cost.numa_costs()
                    ),
                )
            }))
            .chain(
                (first.topology.is_none() && first.cost.llc_pct != 100).then(|| {
                    (
                        "topology".to_string(),
                        format!("flat ({})", first.cost.distance_costs()),
                    )
                }),
            )
            .chain(
                first
                    .kernel_cpus
                    .as_ref()
                    .map(|k| ("kernel_cpus".to_string(), k.to_string())),
            )
            .collect(),
        }
    }

    fn machine_label(&self, m: &SimMachine) -> Option<String> {
        let kernel = match &m.kernel_cpus {
            Some(k) => format!(", kernel threads on CPU {k}"),
            None => String::new(),
        };
        let topology = match &m.topology {
            Some(t) => format!(" ({t})"),
            None => String::new(),
        };
        Some(format!(
            "{}, {} CPU{}{topology}, {}{kernel}",
            m.policy_name(),
            m.cpus,
            if m.cpus == 1 { "" } else { "s" },
            m.cost.profile
        ))
    }

    fn policy_label(&self, m: &SimMachine) -> Option<String> {
        Some(m.policy_name())
    }

    fn cpus(&self, m: &SimMachine) -> usize {
        m.cpus
    }

    fn varies_machines(&self) -> bool {
        true
    }

    fn vary_machine(
        &self,
        m: &SimMachine,
        key: MachineKey,
        value: &str,
    ) -> Result<SimMachine, ExperimentError> {
        let mut m = m.clone();
        match key {
            MachineKey::Policy => m.spec = parse_policy(value)?,
            MachineKey::Cpus if m.topology.is_some() => {
                return Err(ExperimentError::Machine(format!(
                    "cpus does not go with --topology {}: the topology fixes the CPU count; vary one or the other",
                    m.topology.map(|t| t.to_string()).unwrap_or_default()
                )))
            }
            MachineKey::Cpus => {
                let n = value.parse::<usize>().map_err(|_| {
                    ExperimentError::Machine(format!(
                        "cpus '{value}' is not a CPU count; use 1..{}",
                        schedlab_sim::policy::MAX_CPUS
                    ))
                })?;
                m.cpus = check_cpus(n)?;
                m.check_kernel_cpus()?;
            }
            MachineKey::Profile => {
                // Overrides given with the profile stay in force on the new profile.
                m.cost = load_profile(value)
                    .map_err(ExperimentError::Profile)?
                    .with_overrides(&m.cost_overrides)
                    .map_err(ExperimentError::Cost)?;
            }
        }
        Ok(m)
    }

    /// Where the machine's policy models SCHED_FIFO (o1, staircase, linux24, bsd4, ule: it
    /// accepts the class), a workload's real-time defaults apply as on a real kernel that
    /// allows them — interbench's timekeeper runs SCHED_FIFO 96, as the original's does; the
    /// fair-class-only policies (cfs, eevdf) keep the workload's groups in their default class.
    fn realtime_allowed(&self, m: &SimMachine) -> bool {
        // Asked of the policy with the highest priority, which any policy with the class takes.
        let fifo = Knobs {
            policy: Some(SchedPolicy::Fifo(99)),
            ..Knobs::default()
        };
        schedlab_sim::check_setup(&m.spec, m.cpus, &[("real-time", &fifo)]).is_ok()
    }

    /// Memory and I/O are modelled, not used; the kernel's own code (a real path walk) is not
    /// modelled at all, so a configuration that needs it is refused.
    fn check_needs(
        &self,
        workload: &'static str,
        needs: &HostNeeds,
    ) -> Result<(), ExperimentError> {
        match needs.real_kernel {
            Some(what) => Err(ExperimentError::Backend(format!(
                "{workload}: {what} needs the real kernel; the simulator has no file system and runs no programs — run it with --backend real, or choose a modelled setting"
            ))),
            None => Ok(()),
        }
    }

    fn check_knobs(
        &self,
        m: &SimMachine,
        group: &str,
        knobs: &Knobs,
    ) -> Result<(), ExperimentError> {
        if let Some(tg) = &knobs.taskgroup {
            warn_no_group_scheduling(&m.spec.to_string(), group, tg);
        }
        if let Some(slack) = knobs.timer_slack.filter(|&s| s != TimerSlack::Ns(1)) {
            warn_exact_timers(group, slack);
        }
        schedlab_sim::check_setup(&m.spec, m.cpus, &[(group, knobs)]).map_err(|e| match e {
            SimError::Cpus { cpus, max } => ExperimentError::SimCpus { cpus, max },
            e => ExperimentError::PolicyRefuses {
                policy: m.spec.to_string(),
                message: e.to_string(),
            },
        })
    }

    /// Each repetition builds its own simulated machine from its configuration and seed, and
    /// the simulator keeps no state between repetitions: any thread may run any of them.
    fn worker(&self) -> Option<SimBackend> {
        Some(SimBackend)
    }

    fn prepare<W: Workload>(
        &mut self,
        _configs: &[Config<W, SimMachine>],
        _info: &mut BackendInfo,
    ) -> Result<(), ExperimentError> {
        Ok(())
    }

    fn run<W: Workload>(
        &mut self,
        m: &SimMachine,
        workload: &Arc<W>,
        input: RepInput,
    ) -> Result<RepOutput, RepError> {
        let started = Instant::now();
        let r = run_repetition(
            &**workload,
            SimSetup {
                policy: &m.spec,
                cpus: m.cpus,
                topology: m.topology.as_ref(),
                cost: &m.cost,
                seed: m.seed.wrapping_add(input.index),
                knobs: input.knobs,
                kernel_cpus: m.kernel_cpus.as_ref(),
                stop: Some(input.stop),
                wall_budget: Some(input.budget),
                timeline: input.timeline,
                passes: input.passes,
            },
        )
        .map_err(|e| match e {
            SimError::Interrupted => RepError::Interrupted,
            e @ SimError::Timeout { .. } => RepError::TimedOut(e.to_string()),
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
            detail: RepDetail::Sim {
                cpus: r.cpus,
                events: r.events,
                wall: started.elapsed(),
            },
            locks: r.locks,
            timeline: r.timeline,
        })
    }
}

/// Say once (per process) that a timer slack has no effect on the simulator. Its timers fire
/// exactly when asked, for every class: a slack's lateness depends on which other timer
/// interrupt the CPU takes within the slack window (the tick, other tasks' timers, each
/// coalescing it earlier), which the simulator does not model, and a fixed `slack` late would
/// be exact only on an otherwise idle, tickless CPU. The record keeps the knob as asked.
fn warn_exact_timers(group: &str, slack: TimerSlack) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!("warning: group '{group}': timer-slack={slack} has no effect on the simulator, whose timers fire exactly when asked (it models no timer slack or coalescing); the real backend, --backend real, gives the tasks that slack");
    });
}

/// Say once per policy (per process) that a taskgroup has no effect on it: no simulated policy
/// has group scheduling (CFS's and EEVDF's simulations leave out the cgroup hierarchy), so a
/// task runs as if in no taskgroup, where the real backend puts it in a CPU cgroup.
fn warn_no_group_scheduling(policy: &str, group: &str, taskgroup: &str) {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if warned.len() < 64 && !warned.iter().any(|p| p == policy) {
        warned.push(policy.to_string());
        eprintln!("warning: group '{group}': taskgroup={taskgroup} has no effect on the simulated policy {policy}, which has no group scheduling; its tasks run as if in no taskgroup (the real backend, --backend real, puts them in a CPU cgroup)");
    }
}
