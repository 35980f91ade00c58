//! A sweep's variations, typed: `--vary KEY=V1,V2,...` where KEY is a workload parameter
//! (`threads`), a group's knob (`server.nice`) or, on the simulator, a property of the machine
//! (`policy`, `cpus`, `profile`). Each value is applied through its owner's own setter: the
//! preset's `set_param`, the knobs' merge, the simulated machine's builder.

use crate::error::ExperimentError;
use schedlab_workload::presets::ParamDef;
use schedlab_workload::suggest::did_you_mean;
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
    /// `timer-slack=` (real kernel only).
    TimerSlack,
}

impl KnobKey {
    /// Every knob, in the order messages list them.
    pub const ALL: [KnobKey; 6] = [
        KnobKey::Nice,
        KnobKey::Policy,
        KnobKey::Slice,
        KnobKey::Cpus,
        KnobKey::Mode,
        KnobKey::TimerSlack,
    ];

    /// The knob's name.
    pub fn name(self) -> &'static str {
        match self {
            KnobKey::Nice => "nice",
            KnobKey::Policy => "policy",
            KnobKey::Slice => "slice",
            KnobKey::Cpus => "cpus",
            KnobKey::Mode => "mode",
            KnobKey::TimerSlack => "timer-slack",
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
    Ok((key.to_string(), split_values(key, list)?))
}

/// Split the values `list` of key `key` as [`split_vary`] does (`sweep --policy A,B` is the
/// list of the key `policy`); errors name the whole `KEY=LIST`.
pub fn split_values(key: &str, list: &str) -> Result<Vec<String>, ExperimentError> {
    let arg = format!("{key}={list}");
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
    // A set, so that a list of many values is checked in linear time before it is counted.
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = values.iter().find(|v| !seen.insert(v.as_str())) {
        return Err(ExperimentError::Vary {
            key: format!("'{arg}'"),
            problem: format!("names the value '{twice}' twice; give each value once"),
        });
    }
    Ok(values)
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
                        "workload '{workload}' has no group '{group}'; its groups are: {}{}",
                        names.join(", "),
                        did_you_mean(group, names.iter().copied())
                    )));
                };
                let Some(k) = KnobKey::ALL.into_iter().find(|k| k.name() == knob) else {
                    let names: Vec<&str> = KnobKey::ALL.iter().map(|k| k.name()).collect();
                    return Err(err(format!(
                        "unknown knob '{knob}'; knobs are: {}{}",
                        names.join(", "),
                        did_you_mean(knob, names.iter().copied())
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
                                "workload '{workload}' has no parameter '{name}'; its parameters are: {} (and GROUP.KNOB for knobs){}",
                                names.join(", "),
                                did_you_mean(&name, names.iter().copied().chain(MachineKey::ALL.iter().map(|k| k.name())))
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

/// The most configurations one sweep may have. A sweep is built whole before it runs, every
/// shard of it too, and holds a result for each: measured on the simulator (a pingpong sweep
/// of 8,000 to 16,000 configurations), a configuration costs about 5.5 KiB, so this bounds
/// them to under 300 MiB.
pub const MAX_SWEEP_CONFIGURATIONS: u64 = 50_000;

/// The most repetitions (configurations × runs each) one sweep, or one shard of it, may
/// measure. Its record holds every repetition: measured the same way, a repetition adds about
/// 3.5 KiB besides its configuration's 5.5 KiB, so a sweep within both limits stays under about
/// 450 MiB. A larger sweep is cut with `--shard K/N` and its shards joined with `merge`.
pub const MAX_SWEEP_REPETITIONS: u64 = 50_000;

/// How many combinations of values `variations` make (their lengths multiplied), without
/// building them; saturates instead of overflowing.
pub fn combination_count(variations: &[Variation]) -> u64 {
    variations
        .iter()
        .fold(1u64, |n, v| n.saturating_mul(v.values.len() as u64))
}

/// Refuse, before anything is built, a sweep of more than [`MAX_SWEEP_CONFIGURATIONS`]
/// `configurations`, or whose `configurations` × `runs` repetitions, cut into `shards`, give
/// one process more than [`MAX_SWEEP_REPETITIONS`]; the error gives the counts, the limit and
/// what to do.
pub fn check_sweep_size(
    variations: &[Variation],
    configurations: u64,
    runs: u64,
    shards: u64,
) -> Result<(), ExperimentError> {
    let runs = runs.max(1);
    let total = configurations.saturating_mul(runs);
    let share = total.div_ceil(shards.max(1));
    let values: Vec<String> = variations
        .iter()
        .map(|v| format!("{} values of {}", v.values.len(), v.name))
        .collect();
    let what = if values.is_empty() {
        format!("{configurations} configurations")
    } else {
        format!("{configurations} configurations ({})", values.join(" × "))
    };
    if configurations > MAX_SWEEP_CONFIGURATIONS {
        return Err(ExperimentError::TooLarge {
            message: format!(
                "this sweep has {what}; a sweep may have at most {MAX_SWEEP_CONFIGURATIONS} (each shard builds them all): give fewer values"
            ),
        });
    }
    if share > MAX_SWEEP_REPETITIONS {
        let shards_needed = total.div_ceil(MAX_SWEEP_REPETITIONS);
        let held = if shards > 1 {
            format!(", {share} of them in each of {shards} shards")
        } else {
            String::new()
        };
        return Err(ExperimentError::TooLarge {
            message: format!(
                "this sweep asks for {total} repetitions ({what} × {runs} runs){held}; one sweep or shard may measure at most {MAX_SWEEP_REPETITIONS}: cut it into at least {shards_needed} shards (--shard K/{shards_needed}, joined with `schedlab merge`), or give fewer values or --runs"
            ),
        });
    }
    Ok(())
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
    fn a_sweep_is_counted_and_refused_above_its_limits_before_it_is_built() {
        let many = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        let v = yield_variations(
            &[&format!("threads={}", many(1000)), "yield.nice=0,5,10"],
            false,
        )
        .unwrap();
        assert_eq!(combination_count(&v), 3000);
        assert!(check_sweep_size(&v, 3000, 3, 1).is_ok());
        // 3000 × 20 runs = 60,000 repetitions: over the limit on one process…
        let e = check_sweep_size(&v, 3000, 20, 1).unwrap_err().to_string();
        assert!(
            e.contains("60000 repetitions")
                && e.contains("1000 values of threads × 3 values of yield.nice")
                && e.contains(&format!("at most {MAX_SWEEP_REPETITIONS}"))
                && e.contains("--shard K/2"),
            "{e}"
        );
        // …and within it as 2 shards of 30,000.
        assert!(check_sweep_size(&v, 3000, 20, 2).is_ok());
        // Configurations are built by every shard: sharding does not lift their limit.
        let e = check_sweep_size(&v, MAX_SWEEP_CONFIGURATIONS + 1, 1, 100)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} configurations", MAX_SWEEP_CONFIGURATIONS + 1))
                && e.contains("fewer values"),
            "{e}"
        );
        // A count that overflows saturates rather than wrapping to a small number.
        let huge: Vec<Variation> = (0..8)
            .map(|i| Variation {
                name: format!("k{i}"),
                key: VaryKey::Param("threads"),
                values: (0..1000).map(|x| x.to_string()).collect(),
            })
            .collect();
        assert_eq!(combination_count(&huge), u64::MAX);
        assert!(check_sweep_size(&huge, u64::MAX, 3, 1).is_err());
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
