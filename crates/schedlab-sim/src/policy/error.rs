//! Why a policy spec, a parameter value or a group's knobs are refused. The messages name the
//! value and what is accepted, and no command-line flag: a front end says where the value came
//! from (the binary prefixes `--policy SPEC: `).

use super::registry::lookup;
use schedlab_workload::suggest::did_you_mean;

/// A policy spec, parameter or knob the simulator refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// No policy has this name.
    #[error("unknown policy '{name}'; the simulator knows {}{}", super::registry::names().collect::<Vec<_>>().join(", "), did_you_mean(name, super::registry::names()))]
    UnknownPolicy {
        /// The name given.
        name: String,
    },
    /// A parameter item without `=`.
    #[error("'{item}' is not key=value (e.g. o1:threshold=40)")]
    NotKeyValue {
        /// The item as given.
        item: String,
    },
    /// The policy has no parameter of this name.
    #[error(
        "policy '{policy}' has no parameter '{param}'; its parameters: {}{}",
        param_names(policy),
        did_you_mean(param, lookup(policy).into_iter().flat_map(|d| d.params.iter().map(|p| p.name)))
    )]
    UnknownParam {
        /// The policy.
        policy: &'static str,
        /// The parameter given.
        param: String,
    },
    /// A parameter given more than once (`run_to_parity=1,run_to_parity=0`).
    #[error("policy '{policy}' is given {param}= twice; give each parameter once")]
    GivenTwice {
        /// The policy.
        policy: &'static str,
        /// The parameter.
        param: String,
    },
    /// A value that cannot be read as one of the parameter's values (or a number it refuses).
    #[error("{param}={value} is not accepted; use {accepted}")]
    NotAccepted {
        /// The parameter.
        param: &'static str,
        /// The value as given, or as read when it is a number.
        value: String,
        /// What it accepts.
        accepted: String,
    },
    /// A number beyond the parameter's range.
    #[error("{param}={value} is out of range; use {accepted}")]
    OutOfRange {
        /// The parameter.
        param: &'static str,
        /// The number read.
        value: u32,
        /// What it accepts.
        accepted: String,
    },
    /// A parameter value that needs another's (FULL_PREEMPTION needs PREEMPTION).
    #[error("{given} needs {needed}")]
    Needs {
        /// The value given, with what it means.
        given: &'static str,
        /// The value it needs, with what that means.
        needed: &'static str,
    },
    /// A group's knob the policy has no notion of (SCHED_DEADLINE on O(1), a slice on CFS).
    #[error("group '{group}': {what} has no meaning under the simulated {policy}; it accepts {accepted}")]
    Knob {
        /// The workload group.
        group: String,
        /// The knob and value, with why it has no meaning (`policy=idle (SCHED_IDLE, added in
        /// Linux 2.6.23)`).
        what: String,
        /// The policy, in words (`Linux 2.6 O(1) scheduler`).
        policy: String,
        /// The knobs and values it accepts.
        accepted: &'static str,
    },
}

/// A policy's parameter names for a message (`none` when it has none).
fn param_names(policy: &str) -> String {
    let names: Vec<&str> = lookup(policy)
        .map(|d| d.params.iter().map(|p| p.name).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
