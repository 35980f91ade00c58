//! Building an experiment once, from typed requests: the workload's parameters through its
//! declared setters, the groups' knobs, the workload's own group defaults, each variation through
//! its owner's setter, and the backend's checks — all before anything runs.

// Defined beside the trait that runs it, so that the trait needs nothing of the builder.
use crate::backend::Backend;
pub use crate::backend::Config;
use crate::error::ExperimentError;
use crate::vary::{
    check_sweep_size, combination_count, combination_label, cross_product, parse_variations,
    MachineKey, Variation, VaryKey,
};
use schedlab_workload::knobs::{parse_group_arg, parse_knob, Knobs, TimerSlack};
use schedlab_workload::presets::{Configurable, DefaultKind, ListValues, ParamKind, Preset};
#[cfg(test)]
use std::time::Duration;

/// An experiment as the command line asks for it, before anything is checked.
#[derive(Clone, Debug, Default)]
pub struct ExperimentRequest {
    /// Parameters given, by declared name, as text (a list as `1,2,4`; a flag as `true`).
    pub params: Vec<(String, String)>,
    /// Group arguments, `NAME:knob=value,...`.
    pub groups: Vec<String>,
    /// Every group's timer slack (`--timer-slack`), over the workload's own; a group argument
    /// that gives `timer-slack` goes over it.
    pub timer_slack: Option<TimerSlack>,
    /// Variations, `KEY=V1,V2,...` (a sweep).
    pub vary: Vec<String>,
    /// The policies a sweep of the simulator compares (`sweep --policy A,B`), each with its own
    /// parameters: the variation `policy`, first of all. Empty: none (a lone policy is the
    /// simulated machine's own, [`SimRequest::policy`]).
    pub policies: Vec<String>,
    /// This machine's CPU count, for defaults that depend on it.
    pub host_cpus: usize,
    /// The most measured repetitions one configuration may take (`--runs`, or `--max-runs`
    /// with `--until`), to bound a sweep before it is built; `None` counts one per
    /// configuration.
    pub runs: Option<usize>,
    /// How many shards the sweep is cut into (`--shard K/N`: N), each running its share of the
    /// repetitions; `None` for a whole sweep.
    pub shards: Option<usize>,
}

/// Which backend to run on, and the simulated machine's options.
#[derive(Clone, Debug)]
pub enum BackendRequest {
    /// The running kernel.
    Real,
    /// A simulated machine.
    Sim(SimRequest),
}

impl BackendRequest {
    /// The CPU count of the machine the workload runs on, for parameters whose default follows
    /// it (interbench's load threads, the web `event` server's and client's loops): the host's on
    /// the real kernel; on the simulator the simulated machine's (`--topology`'s logical CPUs,
    /// else `--cpus`, else the host's, as [`crate::SimMachine::from_request`] decides). A
    /// `--topology` that does not parse falls back to the host's count here; building the
    /// machine reports it.
    pub fn machine_cpus(&self, host_cpus: usize) -> usize {
        match self {
            BackendRequest::Real => host_cpus,
            BackendRequest::Sim(req) => req
                .topology
                .as_deref()
                .and_then(|t| t.parse::<schedlab_sim::topology::Topology>().ok())
                .map(|t| t.cpus())
                .or(req.cpus)
                .unwrap_or(host_cpus),
        }
    }
}

/// The simulated machine as asked for.
#[derive(Clone, Debug, Default)]
pub struct SimRequest {
    /// Policy and parameters (`o1:threshold=40`) [default: eevdf].
    pub policy: Option<String>,
    /// CPUs [default: this machine's].
    pub cpus: Option<usize>,
    /// Sockets, cores and threads, `SOCKETSs:CORESc:THREADSt` [default: flat].
    pub topology: Option<String>,
    /// Cost profile [default: modern].
    pub profile: Option<String>,
    /// Cost overrides, `key=value`.
    pub cost: Vec<String>,
    /// Seed of the first repetition [default: 1].
    pub seed: Option<u64>,
    /// CPUs the machine's kernel threads may run on, as a CPU list [default: all].
    pub kernel_cpus: Option<String>,
}

/// Every configuration of a run or a sweep, checked.
#[derive(Clone, Debug)]
pub struct Experiment<W, M> {
    /// The configurations, in the order their repetitions interleave.
    pub configs: Vec<Config<W, M>>,
    /// The sweep's variations (none for a run).
    pub variations: Vec<Variation>,
    /// The label of each combination of the variations' values, in order.
    pub combinations: Vec<String>,
}

/// Build and check every configuration of `request` for preset `P` on `backend`, whose
/// configurations start from `machine`.
pub fn build<P: Preset, B: Backend>(
    request: &ExperimentRequest,
    backend: &B,
    machine: &B::Machine,
) -> Result<Experiment<P, B::Machine>, ExperimentError> {
    build_from(
        P::with_defaults(request.host_cpus),
        request,
        backend,
        machine,
    )
}

/// Build and check every configuration of `request` for the workload `base` (a preset at its
/// defaults, or a workload file as read) on `backend`, whose configurations start from
/// `machine`.
pub fn build_from<W: Configurable, B: Backend>(
    mut base: W,
    request: &ExperimentRequest,
    backend: &B,
    machine: &B::Machine,
) -> Result<Experiment<W, B::Machine>, ExperimentError> {
    let defs = base.param_defs();
    let name = base.name();
    let mut lists = ListValues::default();
    for d in defs {
        let given = request
            .params
            .iter()
            .rev()
            .find(|(n, _)| n == d.name)
            .map(|(_, v)| v.as_str());
        if given.is_some() {
            lists.given.push(d.name);
        }
        match d.kind {
            ParamKind::List => {
                let text = given.or(d.default).unwrap_or("");
                let values = text
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
                    .collect();
                lists.lists.push((d.name, values));
            }
            ParamKind::Value | ParamKind::Flag => {
                if let Some(v) = given.or(d.default) {
                    base.set_param(d.name, v)?;
                }
            }
        }
    }
    if let Some((given, _)) = request
        .params
        .iter()
        .find(|(n, _)| !defs.iter().any(|d| d.name == n))
    {
        return Err(schedlab_workload::presets::params::unknown_param(name, defs, given).into());
    }
    let plan = base.plan();
    let mut variations =
        parse_variations(&request.vary, name, defs, &plan, backend.varies_machines())?;
    if !request.policies.is_empty() {
        variations.insert(
            0,
            Variation {
                name: MachineKey::Policy.name().to_string(),
                key: VaryKey::Machine(MachineKey::Policy),
                values: request.policies.clone(),
            },
        );
    }
    // Counted before anything is built: each list a variation does not set multiplies the
    // configurations (at most; a workload may expand fewer).
    let expanded = (lists.lists.iter())
        .filter(|(n, _)| !variations.iter().any(|v| v.key == VaryKey::Param(n)))
        .fold(1u64, |n, (_, values)| {
            n.saturating_mul(values.len().max(1) as u64)
        });
    check_sweep_size(
        &variations,
        combination_count(&variations).saturating_mul(expanded),
        request.runs.unwrap_or(1) as u64,
        request.shards.unwrap_or(1) as u64,
    )?;

    let mut user_knobs: Vec<Option<Knobs>> = vec![None; plan.groups.len()];
    for arg in &request.groups {
        let (group_name, k) =
            parse_group_arg(arg).map_err(|source| ExperimentError::GroupArg { source })?;
        let Some(i) = plan.group_index(&group_name) else {
            let names: Vec<&str> = plan.groups.iter().map(|g| g.name).collect();
            return Err(ExperimentError::NoSuchGroup {
                arg: arg.clone(),
                workload: name,
                group: group_name,
                groups: names.join(", "),
            });
        };
        if user_knobs[i].is_some() {
            return Err(ExperimentError::GroupTwice(group_name));
        }
        user_knobs[i] = Some(k);
    }

    let mut configs = Vec::new();
    let mut combinations = Vec::new();
    for combination in cross_product(&variations) {
        let what = combination_label(&variations, &combination);
        let in_combination = |e: ExperimentError| {
            if variations.is_empty() {
                e
            } else {
                ExperimentError::Combination {
                    combination: what.clone(),
                    source: Box::new(e),
                }
            }
        };
        let mut workload = base.clone();
        let mut lists = lists.clone();
        let mut machine = machine.clone();
        let mut knob_changes: Vec<(usize, &'static str, Knobs, String)> = Vec::new();
        for (i, value) in &combination {
            let v = &variations[*i];
            match &v.key {
                VaryKey::Param(name) => {
                    lists.given.push(name);
                    match lists.lists.iter_mut().find(|(n, _)| n == name) {
                        Some((_, values)) => *values = vec![value.clone()],
                        None => workload
                            .set_param(name, value)
                            .map_err(|e| in_combination(e.into()))?,
                    }
                }
                VaryKey::Knob {
                    group,
                    group_name,
                    knob,
                } => {
                    let k = parse_knob(knob.name(), value).map_err(|e| {
                        ExperimentError::Combination {
                            combination: format!("{}={value}", v.name),
                            source: Box::new(ExperimentError::Knob(e)),
                        }
                    })?;
                    knob_changes.push((*group, group_name, k, format!("{}={value}", v.name)));
                }
                VaryKey::Machine(key) => {
                    machine = backend
                        .vary_machine(&machine, *key, value)
                        .map_err(in_combination)?;
                }
            }
        }
        let workloads = workload
            .configurations(&lists)
            .map_err(|e| in_combination(e.into()))?;
        let knobs = group_knobs(
            &workloads[0],
            &user_knobs,
            request.timer_slack,
            backend,
            &machine,
        )?;
        let mut knobs = knobs;
        for (g, group_name, k, key) in knob_changes {
            let merged = knobs[g].merged(&k);
            merged
                .validate(group_name, backend.cpus(&machine))
                .map_err(ExperimentError::from)
                .and_then(|()| backend.check_knobs(&machine, group_name, &merged))
                .map_err(|e| ExperimentError::Combination {
                    combination: key,
                    source: Box::new(e),
                })?;
            knobs[g] = merged;
        }
        let several = workloads.len() > 1;
        for w in workloads {
            let label = match (what.is_empty(), several) {
                (true, true) => w.label(),
                (true, false) => String::new(),
                (false, true) => format!("{what} {}", w.label()),
                (false, false) => what.clone(),
            };
            configs.push(Config {
                workload: w,
                knobs: knobs.clone(),
                label,
                machine: machine.clone(),
            });
        }
        combinations.push(what);
    }
    for c in &configs {
        backend.check_needs(name, &c.workload.host_needs())?;
    }
    Ok(Experiment {
        configs,
        variations,
        combinations,
    })
}

/// The knobs of each group: the user's, over `--timer-slack` (`timer_slack`), over the
/// workload's own defaults, checked against the machine.
fn group_knobs<W: Configurable, B: Backend>(
    workload: &W,
    user: &[Option<Knobs>],
    timer_slack: Option<TimerSlack>,
    backend: &B,
    machine: &B::Machine,
) -> Result<Vec<Knobs>, ExperimentError> {
    let plan = workload.plan();
    let mut knobs: Vec<Knobs> = user.iter().map(|k| k.clone().unwrap_or_default()).collect();
    let defaults = workload.group_defaults(backend.realtime_allowed(machine));
    // By name, once: a workload file may give knobs to each of 100,000 groups.
    let index: std::collections::HashMap<&str, usize> = (plan.groups.iter().enumerate())
        .map(|(i, g)| (g.name, i))
        .rev()
        .collect();
    for d in &defaults {
        let Some(&g) = index.get(d.group) else {
            continue;
        };
        match d.kind {
            DefaultKind::UnlessGiven if user[g].is_none() => knobs[g] = d.knobs.clone(),
            DefaultKind::UnlessGiven => {}
            DefaultKind::Under => knobs[g] = d.knobs.merged(&knobs[g]),
            DefaultKind::ForcedBy(param) => {
                if let (Some(p), Some(_)) = (d.knobs.policy, knobs[g].policy) {
                    return Err(ExperimentError::ForcedKnob {
                        workload: workload.name(),
                        param,
                        group: d.group,
                        knob: "policy",
                        value: p.to_string(),
                    });
                }
                knobs[g] = knobs[g].merged(&d.knobs);
            }
            // Applied by the tasks themselves during the run; checked below.
            DefaultKind::During => {}
        }
    }
    if let Some(slack) = timer_slack {
        for (k, user) in knobs.iter_mut().zip(user) {
            if user.as_ref().is_none_or(|u| u.timer_slack.is_none()) {
                k.timer_slack = Some(slack);
            }
        }
    }
    // Asked once: on the real kernel it reads the host's online CPUs from sysfs.
    let cpus = backend.cpus(machine);
    for (g, k) in plan.groups.iter().zip(&knobs) {
        if k.is_default() {
            continue;
        }
        let checked = k
            .validate(g.name, cpus)
            .map_err(ExperimentError::from)
            .and_then(|()| backend.check_knobs(machine, g.name, k));
        if let Err(e) = checked {
            // Knobs a workload file wrote are reported at their place in it.
            let origin = defaults
                .iter()
                .find(|d| d.group == g.name)
                .and_then(|d| d.origin.clone());
            return Err(match origin {
                Some(place) => ExperimentError::InFile {
                    place,
                    source: Box::new(e),
                },
                None => e,
            });
        }
    }
    // What a group's tasks switch to during the run (over their own knobs): a CPU outside
    // the machine or a class the policy lacks is an error now, not halfway through a run.
    for d in defaults.iter().filter(|d| d.kind == DefaultKind::During) {
        let Some(&g) = index.get(d.group) else {
            continue;
        };
        let k = knobs[g].merged(&d.knobs);
        let checked = k
            .validate(d.group, cpus)
            .map_err(ExperimentError::from)
            .and_then(|()| backend.check_knobs(machine, d.group, &k));
        if let Err(e) = checked {
            return Err(match &d.origin {
                Some(place) => ExperimentError::InFile {
                    place: place.clone(),
                    source: Box::new(e),
                },
                None => e,
            });
        }
    }
    Ok(knobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::{MockBackend, Step};
    use schedlab_workload::presets::{Interbench, Yield};

    fn request(params: &[(&str, &str)], groups: &[&str], vary: &[&str]) -> ExperimentRequest {
        ExperimentRequest {
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            timer_slack: None,
            vary: vary.iter().map(|s| s.to_string()).collect(),
            policies: Vec::new(),
            host_cpus: 2,
            runs: None,
            shards: None,
        }
    }

    fn backend() -> MockBackend {
        MockBackend::default()
            .script("m1", &[Step::Value(1.0)])
            .script("m2", &[Step::Value(1.0)])
    }

    #[test]
    fn a_sweep_sets_parameters_knobs_and_machines_through_their_owners() {
        let b = backend();
        let e: Experiment<Yield, _> = build(
            &request(
                &[("threads", "1,16"), ("duration", "10ms")],
                &["yield:nice=5"],
                &["policy=m1,m2", "yield.cpus=1"],
            ),
            &b,
            &"m1",
        )
        .unwrap();
        let labels: Vec<&str> = e.configs.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "policy=m1 yield.cpus=1 threads=1",
                "policy=m1 yield.cpus=1 threads=16",
                "policy=m2 yield.cpus=1 threads=1",
                "policy=m2 yield.cpus=1 threads=16",
            ]
        );
        assert_eq!(e.configs[3].machine, "m2");
        assert_eq!(e.configs[3].workload.threads, 16);
        assert_eq!(e.configs[3].workload.duration, Duration::from_millis(10));
        // The varied knob merges over the command line's.
        assert_eq!(e.configs[0].knobs[0].nice, Some(5));
        assert_eq!(e.configs[0].knobs[0].cpus.as_deref(), Some(&[1][..]));
        assert_eq!(
            e.combinations,
            ["policy=m1 yield.cpus=1", "policy=m2 yield.cpus=1"]
        );
    }

    #[test]
    fn a_varied_list_parameter_gives_one_configuration_per_value() {
        let e: Experiment<Yield, _> =
            build(&request(&[], &[], &["threads=2,4"]), &backend(), &"m1").unwrap();
        let labels: Vec<&str> = e.configs.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["threads=2", "threads=4"]);
    }

    #[test]
    fn bad_values_are_refused_naming_them() {
        let b = backend();
        let e = build::<Yield, _>(&request(&[("threads", "0")], &[], &[]), &b, &"m1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "yield: threads 0 is not accepted; use 1..131072"
        );
        let e = build::<Yield, _>(&request(&[], &["yield:nice=40"], &[]), &b, &"m1").unwrap_err();
        assert!(e.to_string().contains("nice=40 is out of range"), "{e}");
        let e = build::<Yield, _>(&request(&[], &["nosuch:nice=1"], &[]), &b, &"m1").unwrap_err();
        assert!(matches!(e, ExperimentError::NoSuchGroup { .. }), "{e}");
        let e = build::<Yield, _>(&request(&[], &[], &["yield.nice=0,40"]), &b, &"m1").unwrap_err();
        assert!(e.to_string().starts_with("yield.nice=40: "), "{e}");
    }

    /// interbench's timekeeper (`timekeeping_thread`, SCHED_FIFO 96 in the original) runs
    /// real-time on a simulated machine whose policy has the class, as on a real kernel that
    /// allows it; under a fair-class-only policy it keeps the default class; a sweep decides
    /// per policy; and the user's own knobs for the group win.
    #[test]
    fn the_timekeeper_is_real_time_where_the_simulated_policy_has_the_class() {
        use schedlab_workload::knobs::SchedPolicy;
        use schedlab_workload::Workload;
        let sim = crate::sim::SimBackend;
        let machine = crate::sim::SimMachine::from_request(
            &SimRequest {
                policy: Some("o1".into()),
                cpus: Some(1),
                ..SimRequest::default()
            },
            2,
        )
        .unwrap();
        let params = [("bench", "audio"), ("loads", "burn"), ("duration", "1s")];
        let timer = |e: &Experiment<Interbench, crate::sim::SimMachine>, c: usize| {
            let plan = e.configs[c].workload.plan();
            let g = plan.groups.iter().position(|g| g.name == "timer").unwrap();
            (
                e.configs[c].machine.spec.to_string(),
                e.configs[c].knobs[g].policy,
            )
        };
        let mut r = request(&params, &[], &[]);
        r.vary = vec!["policy=o1,eevdf,staircase,cfs".into()];
        let e = build::<Interbench, _>(&r, &sim, &machine).unwrap();
        let got: Vec<_> = (0..e.configs.len()).map(|c| timer(&e, c)).collect();
        let fifo = Some(SchedPolicy::Fifo(96));
        assert_eq!(
            got.iter().map(|(_, p)| *p).collect::<Vec<_>>(),
            [fifo, None, fifo, None],
            "{got:?}"
        );
        let r = request(&params, &["timer:nice=3"], &[]);
        let e = build::<Interbench, _>(&r, &sim, &machine).unwrap();
        assert_eq!(timer(&e, 0).1, None);
        // A video or X load's own timekeeper (`loadtimer`) asks for the same class.
        let params = [("bench", "audio"), ("loads", "x"), ("duration", "1s")];
        let mut r = request(&params, &[], &[]);
        r.vary = vec!["policy=o1,cfs".into()];
        let e = build::<Interbench, _>(&r, &sim, &machine).unwrap();
        let load_timer = |c: usize| {
            let plan = e.configs[c].workload.plan();
            let g = plan
                .groups
                .iter()
                .position(|g| g.name == "loadtimer")
                .unwrap();
            (plan.groups[g].tasks, e.configs[c].knobs[g].policy)
        };
        assert_eq!([load_timer(0), load_timer(1)], [(1, fifo), (1, None)]);
    }

    #[test]
    fn a_knob_a_parameter_forces_is_not_also_taken_from_the_user() {
        let b = backend();
        let r = request(
            &[
                ("rt", "true"),
                ("bench", "audio"),
                ("loads", "none"),
                ("duration", "1s"),
            ],
            &["bench:policy=batch"],
            &[],
        );
        let e = build::<Interbench, _>(&r, &b, &"m1").unwrap_err();
        assert!(
            matches!(e, ExperimentError::ForcedKnob { param: "rt", .. }),
            "{e}"
        );
        let r = request(
            &[
                ("rt", "true"),
                ("bench", "audio"),
                ("loads", "none"),
                ("duration", "1s"),
            ],
            &[],
            &[],
        );
        let e = build::<Interbench, _>(&r, &b, &"m1").unwrap();
        assert_eq!(
            e.configs[0].knobs[0].policy,
            Some(schedlab_workload::knobs::SchedPolicy::Fifo(95))
        );
    }
}
