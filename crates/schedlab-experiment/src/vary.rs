//! A sweep's variations, typed: `--vary KEY=V1,V2,...` where KEY is a workload parameter
//! (`threads`), a group's knob (`server.nice`) or, on the simulator, a property of the machine
//! (`policy`, `cpus`, `profile`). Each value is applied through its owner's own setter: the
//! preset's `set_param`, the knobs' merge, the simulated machine's builder.

use crate::error::ExperimentError;
use schedlab_workload::presets::ParamDef;
use schedlab_workload::Plan;

/// A knob a sweep may vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobKey {
    /// `nice=`.
    Nice,
    /// `policy=`.
    Policy,
    /// `slice=`.
    Slice,
    /// `cpus=`.
    Cpus,
    /// `mode=` (simulator only).
    Mode,
}

impl KnobKey {
    /// Every knob, in the order messages list them.
    pub const ALL: [KnobKey; 5] = [
        KnobKey::Nice,
        KnobKey::Policy,
        KnobKey::Slice,
        KnobKey::Cpus,
        KnobKey::Mode,
    ];

    /// The knob's name.
    pub fn name(self) -> &'static str {
        match self {
            KnobKey::Nice => "nice",
            KnobKey::Policy => "policy",
            KnobKey::Slice => "slice",
            KnobKey::Cpus => "cpus",
            KnobKey::Mode => "mode",
        }
    }
}

/// A property of the simulated machine a sweep may vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineKey {
    /// The policy and its parameters.
    Policy,
    /// The number of CPUs.
    Cpus,
    /// The cost profile.
    Profile,
}

impl MachineKey {
    /// Every machine key.
    pub const ALL: [MachineKey; 3] = [MachineKey::Policy, MachineKey::Cpus, MachineKey::Profile];

    /// The key's name.
    pub fn name(self) -> &'static str {
        match self {
            MachineKey::Policy => "policy",
            MachineKey::Cpus => "cpus",
            MachineKey::Profile => "profile",
        }
    }
}

/// What a variation changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VaryKey {
    /// A workload parameter, by its declared name.
    Param(&'static str),
    /// A knob of one group.
    Knob {
        /// The group's index in the plan.
        group: usize,
        /// The group's name.
        group_name: &'static str,
        /// The knob.
        knob: KnobKey,
    },
    /// A property of the simulated machine.
    Machine(MachineKey),
}

/// One `--vary KEY=V1,V2,...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variation {
    /// The key as the user wrote it (`server.nice`), for labels and tables.
    pub name: String,
    /// What it changes.
    pub key: VaryKey,
    /// The values, in the order given.
    pub values: Vec<String>,
}

/// Split `KEY=V1,V2,...` into the key and its values. A policy's own parameters are
/// comma-separated too: in `policy=bsd4:preemption=0,ipiwakeup=0,ule` a piece with `=` but no
/// `:` continues the previous policy (a policy name never contains `=`).
pub fn split_vary(arg: &str) -> Result<(String, Vec<String>), ExperimentError> {
    let (key, list) = arg.split_once('=').ok_or_else(|| ExperimentError::Vary {
        key: format!("'{arg}'"),
        problem: "needs the form KEY=V1,V2,... (e.g. threads=1,2,4 or server.nice=0,19)".into(),
    })?;
    let mut values: Vec<String> = Vec::new();
    let pieces: Vec<&str> = list.split(',').map(str::trim).collect();
    if !list.is_empty() && pieces.iter().any(|v| v.is_empty()) {
        return Err(ExperimentError::Vary {
            key: format!("'{arg}'"),
            problem: "has an empty value; separate the values with single commas".into(),
        });
    }
    for v in pieces.into_iter().filter(|v| !v.is_empty()) {
        match values.last_mut() {
            Some(prev) if key == "policy" && v.contains('=') && !v.contains(':') => {
                prev.push(',');
                prev.push_str(v);
            }
            _ => values.push(v.to_string()),
        }
    }
    if key.is_empty() || values.is_empty() {
        return Err(ExperimentError::Vary {
            key: format!("'{arg}'"),
            problem: "needs a key and at least one value".into(),
        });
    }
    if let Some(twice) = values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
        .map(|(_, v)| v)
    {
        return Err(ExperimentError::Vary {
            key: format!("'{arg}'"),
            problem: format!("names the value '{twice}' twice; give each value once"),
        });
    }
    Ok((key.to_string(), values))
}

/// Parse and check every variation against the workload (its declared parameters and its plan's
/// groups) and the backend (`simulated`: whether machine keys are allowed).
pub fn parse_variations(
    args: &[String],
    workload: &'static str,
    params: &'static [ParamDef],
    plan: &Plan,
    simulated: bool,
) -> Result<Vec<Variation>, ExperimentError> {
    let mut out: Vec<Variation> = Vec::new();
    for arg in args {
        let (name, values) = split_vary(arg)?;
        let err = |problem: String| ExperimentError::Vary {
            key: name.clone(),
            problem,
        };
        if out.iter().any(|v| v.name == name) {
            return Err(err(
                "is given twice; list all its values in one variation".into()
            ));
        }
        // A parameter's own name first: a workload file's `GROUP.count` is a parameter.
        let exact = params.iter().find(|d| d.name == name);
        let key = match name.split_once('.') {
            _ if exact.is_some() => VaryKey::Param(exact.expect("found").name),
            Some((group, knob)) => {
                let Some(g) = plan.group_index(group) else {
                    let names: Vec<&str> = plan.groups.iter().map(|g| g.name).collect();
                    return Err(err(format!(
                        "workload '{workload}' has no group '{group}'; its groups are: {}",
                        names.join(", ")
                    )));
                };
                let Some(k) = KnobKey::ALL.into_iter().find(|k| k.name() == knob) else {
                    let names: Vec<&str> = KnobKey::ALL.iter().map(|k| k.name()).collect();
                    return Err(err(format!(
                        "unknown knob '{knob}'; knobs are: {}",
                        names.join(", ")
                    )));
                };
                VaryKey::Knob {
                    group: g,
                    group_name: plan.groups[g].name,
                    knob: k,
                }
            }
            None => match MachineKey::ALL.into_iter().find(|k| k.name() == name) {
                Some(_) if !simulated => {
                    return Err(ExperimentError::Vary {
                        key: format!("{name}=..."),
                        problem: format!("'{name}' is a property of the simulated machine; add --backend sim (a group's policy on the real kernel is GROUP.policy=...)"),
                    })
                }
                Some(k) => VaryKey::Machine(k),
                None => {
                    let wanted = name.replace('_', "-");
                    match params.iter().find(|d| d.name == wanted) {
                        Some(d) => VaryKey::Param(d.name),
                        None => {
                            let mut names: Vec<&str> = params.iter().map(|d| d.name).collect();
                            names.sort_unstable();
                            return Err(err(format!(
                                "workload '{workload}' has no parameter '{name}'; its parameters are: {} (and GROUP.KNOB for knobs)",
                                names.join(", ")
                            )));
                        }
                    }
                }
            },
        };
        out.push(Variation { name, key, values });
    }
    Ok(out)
}

/// Every combination of the variations' values, first variation slowest: `(index into
/// variations, value)` per variation.
pub fn cross_product(variations: &[Variation]) -> Vec<Vec<(usize, String)>> {
    let mut out: Vec<Vec<(usize, String)>> = vec![Vec::new()];
    for (i, v) in variations.iter().enumerate() {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                v.values.iter().map(move |val| {
                    let mut c = prefix.clone();
                    c.push((i, val.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

/// `threads=4 server.nice=19` for one combination.
pub fn combination_label(variations: &[Variation], combination: &[(usize, String)]) -> String {
    combination
        .iter()
        .map(|(i, v)| format!("{}={v}", variations[*i].name))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::presets::{Preset, Yield};
    use schedlab_workload::Workload;

    fn yield_variations(args: &[&str], simulated: bool) -> Result<Vec<Variation>, ExperimentError> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_variations(
            &args,
            "yield",
            Yield::param_defs(),
            &Yield::default().plan(),
            simulated,
        )
    }

    #[test]
    fn cross_product_runs_first_key_slowest() {
        let v = yield_variations(&["threads=1,2", "yield.nice=0,5,10"], false).unwrap();
        let c = cross_product(&v);
        assert_eq!(c.len(), 6);
        assert_eq!(combination_label(&v, &c[0]), "threads=1 yield.nice=0");
        assert_eq!(combination_label(&v, &c[3]), "threads=2 yield.nice=0");
        assert_eq!(v[0].key, VaryKey::Param("threads"));
        assert!(matches!(
            v[1].key,
            VaryKey::Knob {
                group: 0,
                knob: KnobKey::Nice,
                ..
            }
        ));
    }

    #[test]
    fn policy_values_keep_their_own_parameters() {
        let (_, values) =
            split_vary("policy=bsd4:preemption=0,ipiwakeup=0,o1,o1:threshold=40").unwrap();
        assert_eq!(
            values,
            ["bsd4:preemption=0,ipiwakeup=0", "o1", "o1:threshold=40"]
        );
        let (_, values) = split_vary("server.policy=fifo:1,other").unwrap();
        assert_eq!(values, ["fifo:1", "other"]);
        assert!(split_vary("novalues=").is_err());
        assert!(split_vary("noequals")
            .unwrap_err()
            .to_string()
            .contains("KEY=V1,V2"));
    }

    #[test]
    fn refuses_unknown_keys_naming_what_is_accepted() {
        let e = yield_variations(&["nosuch=1"], false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no parameter 'nosuch'") && e.contains("duration, threads"),
            "{e}"
        );
        let e = yield_variations(&["yield.bogus=1"], false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown knob 'bogus'") && e.contains("nice, policy"),
            "{e}"
        );
        let e = yield_variations(&["server.nice=1"], false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no group 'server'"), "{e}");
        let e = yield_variations(&["policy=o1"], false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--backend sim"), "{e}");
        assert!(yield_variations(&["policy=o1"], true).is_ok());
        let e = yield_variations(&["threads=1", "threads=2"], false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("given twice"), "{e}");
    }

    #[test]
    fn refuses_a_value_given_twice_or_an_empty_value() {
        let e = split_vary("threads=1,1").unwrap_err().to_string();
        assert!(
            e.contains("'threads=1,1'") && e.contains("'1' twice"),
            "{e}"
        );
        let e = split_vary("policy=o1,cfs,o1").unwrap_err().to_string();
        assert!(e.contains("'o1' twice"), "{e}");
        let e = split_vary("threads=1,,2").unwrap_err().to_string();
        assert!(e.contains("empty value"), "{e}");
        assert!(split_vary("threads=1,").is_err());
        assert!(split_vary("threads=1,2").is_ok());
    }
}
