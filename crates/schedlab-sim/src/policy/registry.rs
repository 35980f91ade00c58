//! How a policy defines itself, and the specs (`o1:threshold=40`) that choose one.
//!
//! Like a kernel scheduling class, which ends its own file with its `DEFINE_SCHED_CLASS` table,
//! each policy file declares one [`PolicyDef`]: its name, a one-line summary, its parameters (a
//! table like the kernel's `features.h`: name, default, accepted values, meaning) and its
//! constructor. [`super::POLICIES`] lists the definitions, one line per policy. A
//! [`PolicySpec`] is read and checked against its definition without building anything;
//! describing it and building its policy come from the definition and the values.

use super::error::PolicyError;
use super::{Policy, POLICIES};
use std::fmt;

/// The definition of a policy: everything the simulator knows about it before building one.
#[derive(Debug)]
pub struct PolicyDef {
    /// Name on the command line.
    pub name: &'static str,
    /// What it models, and from which source (one line of `schedlab list`).
    pub summary: &'static str,
    /// Its parameters, in the order [`PolicySpec::describe`] writes them.
    pub params: &'static [ParamDef],
    /// Whether [`PolicySpec::describe`] spells out parameters left at their default
    /// (`o1:threshold=0`) or names only changed ones (`eevdf`, `eevdf:run_to_parity=0`).
    pub describe_defaults: bool,
    /// Checks that involve several parameters (each value is already in its range).
    pub check: fn(&Params) -> Result<(), PolicyError>,
    /// A fresh policy with these parameters (one per repetition).
    pub build: fn(&Params) -> Box<dyn Policy>,
}

/// [`PolicyDef::check`] of a policy whose parameters are independent.
pub fn no_check(_: &Params) -> Result<(), PolicyError> {
    Ok(())
}

/// [`PolicyDef::build`] of a policy type built by [`FromParams`].
pub fn boxed<P: FromParams>(params: &Params) -> Box<dyn Policy> {
    Box::new(P::from_params(params))
}

/// A policy built from its definition's parameter values.
pub trait FromParams: Policy + 'static {
    /// The policy with these (checked) values.
    fn from_params(params: &Params) -> Self;
}

/// One parameter of a policy; `schedlab list` prints it as `name=default (meaning)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamDef {
    /// Name in a spec (`threshold`).
    pub name: &'static str,
    /// Value when the spec does not give one.
    pub default: u32,
    /// The values it accepts.
    pub values: Values,
    /// What it does, and which kernel option or sysctl it models.
    pub meaning: &'static str,
}

impl fmt::Display for ParamDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={} ({})",
            self.name,
            self.show(self.default),
            self.meaning
        )
    }
}

/// The values a parameter accepts, and how a refused one is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// 0 or 1, read as a byte; anything else "is not accepted; use 0 or 1" (kernel options).
    Flag,
    /// 0 or 1, read as a byte; a number other than 0 or 1 "is out of range; use KEY=0 or
    /// KEY=1" (sysctls written as the user writes them).
    Switch,
    /// `min..=max`, read as a `u32`; a number outside "is out of range; use KEY=MIN..MAX".
    Range(u32, u32),
    /// One of these names, held as its index (`idle=pool|all`).
    Choice(&'static [&'static str]),
    /// One of these names, held as its index, choosing which version of the modelled kernel's
    /// code runs (`yield=expired|2.5.25`). At its default — the code as the policy modelled it
    /// before the variant was added — a description leaves it out even when the policy spells
    /// out its other defaults ([`PolicyDef::describe_defaults`]), so that adding a variant
    /// changes no existing description, record or table.
    Variant(&'static [&'static str]),
}

impl ParamDef {
    /// What the parameter accepts, as its errors say it.
    fn accepted(&self) -> String {
        let k = self.name;
        match self.values {
            Values::Flag => "0 or 1".to_string(),
            Values::Switch => format!("{k}=0 or {k}=1"),
            Values::Range(min, max) => format!("{k}={min}..{max}"),
            Values::Choice(names) | Values::Variant(names) => names
                .iter()
                .map(|n| format!("{k}={n}"))
                .collect::<Vec<_>>()
                .join(" or "),
        }
    }

    /// Value `v` as the user writes it (a [`Values::Choice`]'s name, else the number).
    pub fn show(&self, v: u32) -> String {
        match self.values {
            Values::Choice(names) | Values::Variant(names) => names
                .get(v as usize)
                .map_or_else(|| v.to_string(), |n| n.to_string()),
            _ => v.to_string(),
        }
    }

    /// Read a value given for this parameter and check it.
    pub fn parse(&self, value: &str) -> Result<u32, PolicyError> {
        let not_accepted = |value: String| PolicyError::NotAccepted {
            param: self.name,
            value,
            accepted: self.accepted(),
        };
        let out_of_range = |value: u32| PolicyError::OutOfRange {
            param: self.name,
            value,
            accepted: self.accepted(),
        };
        match self.values {
            Values::Flag | Values::Switch => {
                let v = value
                    .parse::<u8>()
                    .map_err(|_| not_accepted(value.to_string()))?;
                match (v, self.values) {
                    (0 | 1, _) => Ok(u32::from(v)),
                    (_, Values::Flag) => Err(not_accepted(v.to_string())),
                    _ => Err(out_of_range(u32::from(v))),
                }
            }
            Values::Choice(names) | Values::Variant(names) => names
                .iter()
                .position(|n| *n == value)
                .map(|i| i as u32)
                .ok_or_else(|| not_accepted(value.to_string())),
            Values::Range(min, max) => {
                let v = value
                    .parse::<u32>()
                    .map_err(|_| not_accepted(value.to_string()))?;
                if !(min..=max).contains(&v) {
                    Err(out_of_range(v))
                } else {
                    Ok(v)
                }
            }
        }
    }
}

/// The value of each of a policy's parameters (given or default, checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    defs: &'static [ParamDef],
    values: Vec<u32>,
}

impl Params {
    /// Every parameter at its default.
    pub fn defaults(def: &PolicyDef) -> Params {
        Params {
            defs: def.params,
            values: def.params.iter().map(|p| p.default).collect(),
        }
    }

    /// The value of parameter `name`. Panics if the policy has no such parameter (a policy
    /// asking for a parameter its definition lacks is a bug).
    pub fn get(&self, name: &str) -> u32 {
        let i = self
            .defs
            .iter()
            .position(|p| p.name == name)
            .unwrap_or_else(|| panic!("no policy parameter '{name}'"));
        self.values[i]
    }

    /// Whether 0/1 parameter `name` is 1.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name) != 0
    }

    /// Each parameter with its value, in the definition's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static ParamDef, u32)> + '_ {
        self.defs.iter().zip(self.values.iter().copied())
    }
}

/// The definition of the policy named `name`.
pub fn lookup(name: &str) -> Option<&'static PolicyDef> {
    POLICIES.iter().copied().find(|d| d.name == name)
}

/// The names of the simulator's policies, in [`POLICIES`] order.
pub fn names() -> impl Iterator<Item = &'static str> {
    POLICIES.iter().map(|d| d.name)
}

/// A checked `NAME[:key=value,...]`: a policy and the value of each of its parameters.
#[derive(Clone)]
pub struct PolicySpec {
    def: &'static PolicyDef,
    /// The parameters as given, in order (for [`fmt::Display`]).
    given: Vec<(String, String)>,
    params: Params,
}

impl PolicySpec {
    /// The spec of `def` with the parameters given (each at most once), checked against `def`.
    pub fn new(def: &'static PolicyDef, given: Vec<(String, String)>) -> Result<Self, PolicyError> {
        if let Some((k, _)) = given
            .iter()
            .find(|(k, _)| !def.params.iter().any(|p| p.name == k))
        {
            return Err(PolicyError::UnknownParam {
                policy: def.name,
                param: k.clone(),
            });
        }
        if let Some((k, _)) = given
            .iter()
            .enumerate()
            .find(|(i, (k, _))| given[..*i].iter().any(|(earlier, _)| earlier == k))
            .map(|(_, kv)| kv)
        {
            return Err(PolicyError::GivenTwice {
                policy: def.name,
                param: k.clone(),
            });
        }
        let mut params = Params::defaults(def);
        for (i, p) in def.params.iter().enumerate() {
            if let Some((_, v)) = given.iter().rev().find(|(k, _)| k == p.name) {
                params.values[i] = p.parse(v)?;
            }
        }
        (def.check)(&params)?;
        Ok(PolicySpec { def, given, params })
    }

    /// The policy's definition.
    pub fn def(&self) -> &'static PolicyDef {
        self.def
    }

    /// The policy's name.
    pub fn name(&self) -> &'static str {
        self.def.name
    }

    /// The value of each parameter.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The policy and its parameters as the user would write them, defaults spelled out unless
    /// the definition says otherwise (`o1:threshold=0`, `eevdf`) or the parameter is a
    /// [`Values::Variant`] (`o1:threshold=0`, not `o1:threshold=0,yield=expired`).
    pub fn describe(&self) -> String {
        let shown: Vec<String> = self
            .params
            .iter()
            .filter(|(p, v)| {
                *v != p.default
                    || (self.def.describe_defaults && !matches!(p.values, Values::Variant(_)))
            })
            .map(|(p, v)| format!("{}={}", p.name, p.show(v)))
            .collect();
        if shown.is_empty() {
            self.def.name.to_string()
        } else {
            format!("{}:{}", self.def.name, shown.join(","))
        }
    }

    /// A fresh policy object (one per repetition).
    pub fn build(&self) -> Box<dyn Policy> {
        (self.def.build)(&self.params)
    }
}

impl fmt::Debug for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicySpec")
            .field("name", &self.def.name)
            .field("given", &self.given)
            .field("params", &self.params)
            .finish()
    }
}

impl PartialEq for PolicySpec {
    fn eq(&self, other: &Self) -> bool {
        self.def.name == other.def.name && self.given == other.given
    }
}

impl Eq for PolicySpec {}

/// The spec as read: the name and the parameters as given, empty items dropped.
impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.def.name)?;
        for (i, (k, v)) in self.given.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

/// Why a `NAME[:key=value,...]` text is not a policy spec, and which spec the message is about.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct SpecError {
    /// The text as given.
    pub given: String,
    /// The spec as read (`o1:threshold=99`, empty items dropped) when the text could be read and
    /// a parameter is wrong; `None` when the name or the syntax is.
    pub read: Option<String>,
    /// What is wrong.
    pub error: PolicyError,
}

impl SpecError {
    /// The spec as a message names it: as read, or quoted as given when it could not be read
    /// (`o1:threshold=99`, `'nosuch'`).
    pub fn subject(&self) -> String {
        match &self.read {
            Some(r) => r.clone(),
            None => format!("'{}'", self.given),
        }
    }
}

impl std::str::FromStr for PolicySpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let unread = |error| SpecError {
            given: s.to_string(),
            read: None,
            error,
        };
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        let def = lookup(name).ok_or_else(|| {
            unread(PolicyError::UnknownPolicy {
                name: name.to_string(),
            })
        })?;
        let mut given = Vec::new();
        for kv in rest.split(',').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                unread(PolicyError::NotKeyValue {
                    item: kv.to_string(),
                })
            })?;
            given.push((k.to_string(), v.to_string()));
        }
        // The message names the spec as read, as Display writes it.
        let read = PolicySpec {
            def,
            given: given.clone(),
            params: Params::defaults(def),
        }
        .to_string();
        PolicySpec::new(def, given).map_err(|error| SpecError {
            given: s.to_string(),
            read: Some(read),
            error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_given_twice_is_refused() {
        let e = "eevdf:run_to_parity=1,run_to_parity=0"
            .parse::<PolicySpec>()
            .unwrap_err();
        assert!(
            matches!(&e.error, PolicyError::GivenTwice { policy: "eevdf", param } if param == "run_to_parity"),
            "{e:?}"
        );
        assert!(e.to_string().contains("run_to_parity= twice"), "{e}");
        assert!("eevdf:run_to_parity=0".parse::<PolicySpec>().is_ok());
    }
}
