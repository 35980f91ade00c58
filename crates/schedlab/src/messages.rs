//! The experiment layer's errors as the command line says them: each names the flag the bad
//! value came from (`--group`, `--vary`, `--policy`, `--cpus`, `--runs`, the workload's own).

use schedlab_experiment::ExperimentError;
use schedlab_sim::cost::CostError;

/// The message for `e`, naming the flags.
pub fn render(e: &ExperimentError) -> String {
    match e {
        ExperimentError::Param(p) => p.render(|name| format!("--{name}")),
        ExperimentError::GroupArg { source } | ExperimentError::Knob(source)
            if source.is_about_argument() =>
        {
            format!("--group {source}")
        }
        ExperimentError::NoSuchGroup { .. } | ExperimentError::GroupTwice(_) => {
            format!("--group {e}")
        }
        ExperimentError::ForcedKnob {
            workload,
            param,
            group,
            knob,
            value,
        } => format!(
            "{workload}: --{param} sets the {group} group's {knob} ({value}); drop {knob}= from --group {group}:..."
        ),
        ExperimentError::Vary { .. } => format!("--vary {e}"),
        ExperimentError::Combination {
            combination,
            source,
        } => format!("--vary {combination}: {}", render(source)),
        ExperimentError::InFile { place, source } => format!("{place}: {}", render(source)),
        ExperimentError::SimCpus { cpus, max } => {
            format!("--cpus {cpus} is not accepted; the simulator models 1..{max} CPUs")
        }
        ExperimentError::PolicyRefuses { policy, message } => {
            format!("--policy {policy}: {message}")
        }
        ExperimentError::NoRepetitions => format!("--runs 0: {e}"),
        ExperimentError::Policy(p) => format!("--policy {}: {p}", p.subject()),
        ExperimentError::Profile(c) => c.to_string(),
        ExperimentError::Cost(c) => match c {
            CostError::UnknownKey(_) | CostError::TickTooLong { .. } => format!("--cost: {c}"),
            _ => format!("--cost {c}"),
        },
        ExperimentError::Repetition {
            timed_out: true, ..
        } => format!(
            "{e} (raise it with --timeout, or ask for less: a shorter --duration, fewer --loops or --messages, fewer CPUs or tasks)"
        ),
        ExperimentError::TraceRequired(m) => m.clone(),
        ExperimentError::OtherExperiment { path, .. } => format!(
            "--out: {e}; use a new --out directory (or remove {} to discard that record)",
            path.display()
        ),
        ExperimentError::Unsaved { source, .. } => render(source),
        _ => e.to_string(),
    }
}
