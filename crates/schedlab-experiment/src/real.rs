//! The real kernel as a [`Backend`]: repetitions run through `schedlab_real::run_repetition`;
//! wakeup and preemption counters come from one private tracefs instance opened for the whole
//! run (or /proc alone, and the record says why).

use crate::backend::{Backend, RepDetail, RepError, RepInput, RepOutput};
use crate::build::Config;
use crate::error::ExperimentError;
use crate::settings::CounterMode;
use crate::vary::MachineKey;
use schedlab_real::runner::COMM_PREFIX;
use schedlab_real::trace::SchedTrace;
use schedlab_real::{host, run_repetition, RepetitionSetup, RunError};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::interbench::format_size;
use schedlab_workload::presets::HostNeeds;
use schedlab_workload::record::BackendInfo;
use schedlab_workload::{ParamError, Workload};
use std::sync::Arc;

/// Trace buffer per CPU: room for about a million events per CPU before the kernel drops some
/// (drops are counted and reported).
const TRACE_BUFFER_KB: usize = 65536;

/// The running Linux kernel.
pub struct RealBackend {
    counters: CounterMode,
    trace: Option<SchedTrace>,
    /// Why wakeup counters are unavailable (empty when they are).
    unavailable: String,
    realtime: bool,
}

impl RealBackend {
    /// The real kernel, with counters from `counters`.
    pub fn new(counters: CounterMode) -> RealBackend {
        RealBackend {
            counters,
            trace: None,
            unavailable: String::new(),
            realtime: host::realtime_allowed(),
        }
    }
}

impl Backend for RealBackend {
    type Machine = ();

    fn info(&self, _first: &()) -> BackendInfo {
        BackendInfo {
            kind: "real".into(),
            ..BackendInfo::default()
        }
    }

    fn machine_label(&self, _machine: &()) -> Option<String> {
        None
    }

    fn policy_label(&self, _machine: &()) -> Option<String> {
        None
    }

    fn cpus(&self, _machine: &()) -> usize {
        host::online_cpus()
    }

    fn varies_machines(&self) -> bool {
        false
    }

    fn vary_machine(&self, _: &(), key: MachineKey, _: &str) -> Result<(), ExperimentError> {
        Err(ExperimentError::Machine(format!(
            "'{}' is a property of the simulated machine",
            key.name()
        )))
    }

    fn realtime_allowed(&self) -> bool {
        self.realtime
    }

    /// Memory at most half of what is available now (so memload never invokes the OOM killer,
    /// swap or not); files twice over in the temporary directory's free space.
    fn check_needs(&self, needs: &HostNeeds) -> Result<(), ExperimentError> {
        let workload = "interbench";
        if let Some((param, bytes)) = needs.memory {
            let available = host::available_memory()
                .map_err(|e| ExperimentError::Host(format!("{workload}: {e} to size memload")))?
                as usize;
            if bytes > available / 2 {
                return Err(ParamError::value(
                    workload,
                    param,
                    format_size(bytes),
                    format!(
                        "is more than half of the memory available now ({}); memload would risk the OOM killer — use at most {}",
                        format_size(available),
                        format_size(available / 2)
                    ),
                )
                .into());
            }
        }
        if let Some((param, bytes)) = needs.files {
            let dir = std::env::temp_dir();
            if let Ok(free) = host::free_disk_space(&dir) {
                if bytes.saturating_mul(2) as u64 > free {
                    return Err(ParamError::value(
                        workload,
                        param,
                        format_size(bytes),
                        format!(
                            "of files does not fit twice in {}, which has {} free; lower it",
                            dir.display(),
                            format_size(free as usize)
                        ),
                    )
                    .into());
                }
            }
        }
        Ok(())
    }

    fn check_knobs(&self, _: &(), _: &str, _: &Knobs) -> Result<(), ExperimentError> {
        // The kernel checks them when they are applied; a refusal names the knob.
        Ok(())
    }

    fn prepare<W: Workload>(
        &mut self,
        configs: &[Config<W, ()>],
        info: &mut BackendInfo,
    ) -> Result<(), ExperimentError> {
        for c in configs {
            let plan = c.workload.plan();
            host::raise_fd_limit((plan.channels * 2 + plan.total_tasks() * 2 + 64) as u64)
                .map_err(|e| {
                    ExperimentError::Backend(format!(
                        "{e}; raise it, e.g. `ulimit -n {}`",
                        plan.channels * 2 + plan.total_tasks() * 2 + 64
                    ))
                })?;
        }
        match self.counters {
            CounterMode::Proc => self.unavailable = "disabled (--counters proc)".into(),
            CounterMode::Auto | CounterMode::Trace => {
                match SchedTrace::open(COMM_PREFIX, TRACE_BUFFER_KB) {
                    Ok(t) => self.trace = Some(t),
                    Err(e) if self.counters == CounterMode::Trace => {
                        return Err(ExperimentError::TraceRequired(e.to_string()))
                    }
                    Err(e) => self.unavailable = e.to_string(),
                }
            }
        }
        info.details.insert(
            "wakeup_counters".into(),
            self.trace.as_ref().map_or_else(
                || format!("unavailable: {}", self.unavailable),
                |t| t.source(),
            ),
        );
        Ok(())
    }

    fn run<W: Workload>(
        &mut self,
        _: &(),
        workload: &Arc<W>,
        input: RepInput,
    ) -> Result<RepOutput, RepError> {
        let r = run_repetition(
            workload,
            RepetitionSetup {
                knobs: input.knobs,
                stop: input.stop.clone(),
                budget: input.budget,
                trace: self.trace.as_mut(),
            },
        )
        .map_err(|e| match e {
            RunError::Interrupted => RepError::Interrupted,
            e @ RunError::Timeout(_) => RepError::TimedOut(e.to_string()),
            e => RepError::Failed(e.to_string()),
        })?;
        let mut sources = r.sources;
        if self.trace.is_none() {
            sources.wakeups = format!("unavailable: {}", self.unavailable);
        }
        Ok(RepOutput {
            outcome: r.outcome,
            counters: r.counters,
            sources,
            detail: RepDetail::Real {
                lost_events: r.lost_events,
                observed: r.observed,
            },
        })
    }
}
