//! `schedlab sweep WORKLOAD --vary KEY=V1,V2 [--vary ...]`: the cross product of the varied
//! workload parameters (`threads=1,2,4`) and group knobs (`server.nice=0,19`), measured with
//! interleaved repetitions, printed as one table with the rows that beat the first marked.

use crate::backend::Backend;
use crate::cli::{BackendArg, Cli, Command, CommonArgs};
use crate::run::{group_knobs, run_configs, Config, OutDir, RunEnd};
use crate::workloads::{build, Preset};
use clap::Parser;
use schedlab_workload::knobs::parse_group_arg;
use schedlab_workload::record::RunRecord;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Knobs that `--vary GROUP.KNOB=...` accepts.
const KNOBS: [&str; 4] = ["nice", "policy", "slice", "cpus"];

/// Keys of the simulated machine that `--vary` accepts with `--backend sim`.
const MACHINE_KEYS: [&str; 3] = ["policy", "cpus", "profile"];

/// One `--vary` key and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Vary {
    /// `threads` or `server.nice`.
    pub key: String,
    /// The values, in the order given.
    pub values: Vec<String>,
}

impl Vary {
    fn knob(&self) -> Option<(&str, &str)> {
        self.key.split_once('.')
    }
}

/// Parse `KEY=V1,V2,...`.
pub fn parse_vary(arg: &str) -> Result<Vary, String> {
    let (key, list) = arg.split_once('=').ok_or_else(|| {
        format!(
            "--vary '{arg}' needs the form KEY=V1,V2,... (e.g. threads=1,2,4 or server.nice=0,19)"
        )
    })?;
    let mut values: Vec<String> = Vec::new();
    for v in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        match values.last_mut() {
            // A policy's own parameters are comma-separated too: `policy=bsd4:preemption=0,
            // ipiwakeup=0,ule` is two policies. A piece with '=' but no ':' continues the
            // previous policy (a policy name never contains '=').
            Some(prev) if key == "policy" && v.contains('=') && !v.contains(':') => {
                prev.push(',');
                prev.push_str(v);
            }
            _ => values.push(v.to_string()),
        }
    }
    if key.is_empty() || values.is_empty() {
        return Err(format!("--vary '{arg}' needs a key and at least one value"));
    }
    Ok(Vary {
        key: key.to_string(),
        values,
    })
}

/// Every combination of the varied values, first key slowest.
pub fn cross_product(varies: &[Vary]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for v in varies {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                v.values.iter().map(move |val| {
                    let mut c = prefix.clone();
                    c.push((v.key.clone(), val.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

/// The command line after `sweep`, without the options the sweep itself owns and without the
/// parameters it varies (each combination supplies its own).
fn base_args(varied_params: &[&str]) -> Vec<String> {
    let args: Vec<String> = std::env::args().collect();
    let start = args
        .iter()
        .position(|a| a == "sweep")
        .map_or(args.len(), |i| i + 1);
    let mut drop_opts: Vec<String> = ["--vary", "--out", "--plot"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    drop_opts.extend(varied_params.iter().map(|p| format!("--{p}")));
    let mut out = Vec::new();
    let mut i = start;
    while i < args.len() {
        let a = &args[i];
        if drop_opts.contains(a) {
            i += 2;
            continue;
        }
        if drop_opts.iter().any(|o| a.starts_with(&format!("{o}="))) {
            i += 1;
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    out
}

/// Check the keys against the workload before anything runs.
fn check_keys<W: Preset>(varies: &[Vary], sample: &W, common: &CommonArgs) -> Result<(), String> {
    let params = sample.params();
    let plan = sample.plan();
    let mut seen = Vec::new();
    for v in varies {
        if seen.contains(&&v.key) {
            return Err(format!(
                "--vary {} is given twice; list all its values in one --vary",
                v.key
            ));
        }
        seen.push(&v.key);
        match v.knob() {
            Some((group, knob)) => {
                if plan.group_index(group).is_none() {
                    let names: Vec<&str> = plan.groups.iter().map(|g| g.name).collect();
                    return Err(format!(
                        "--vary {}: workload '{}' has no group '{group}'; its groups are: {}",
                        v.key,
                        sample.name(),
                        names.join(", ")
                    ));
                }
                if !KNOBS.contains(&knob) {
                    return Err(format!(
                        "--vary {}: unknown knob '{knob}'; knobs are: {}",
                        v.key,
                        KNOBS.join(", ")
                    ));
                }
            }
            None if MACHINE_KEYS.contains(&v.key.as_str()) && common.backend != BackendArg::Sim => {
                return Err(format!(
                    "--vary {}=...: '{}' is a property of the simulated machine; add --backend sim (a group's policy on the real kernel is GROUP.policy=...)",
                    v.key, v.key
                ));
            }
            None if MACHINE_KEYS.contains(&v.key.as_str()) => {}
            None if !params.contains_key(&v.key) => {
                let names: Vec<&String> = params.keys().collect();
                return Err(format!(
                    "--vary {}: workload '{}' has no parameter '{}'; its parameters are: {} (and GROUP.KNOB for knobs)",
                    v.key,
                    sample.name(),
                    v.key,
                    names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
            None => {}
        }
    }
    Ok(())
}

/// Build every configuration of the sweep (validated, before anything runs), run them
/// interleaved, print the table and draw the plot.
pub fn sweep<W: Preset>(
    base: Vec<W>,
    common: &CommonArgs,
    stop: Arc<AtomicBool>,
) -> Result<RunEnd, String> {
    if common.vary.is_empty() {
        return Err("sweep needs at least one --vary KEY=V1,V2,... (e.g. --vary threads=1,2,4 or --vary server.nice=0,19)".into());
    }
    let varies: Vec<Vary> = common
        .vary
        .iter()
        .map(|a| parse_vary(a))
        .collect::<Result<_, _>>()?;
    check_keys(&varies, &base[0], common)?;
    let param_keys: Vec<&str> = varies
        .iter()
        .filter(|v| v.knob().is_none())
        .map(|v| v.key.as_str())
        .collect();
    let base_argv = base_args(&param_keys);
    let mut configs = Vec::new();
    for combo in cross_product(&varies) {
        let mut argv = vec!["schedlab".to_string(), "run".to_string()];
        argv.extend(base_argv.iter().cloned());
        for (k, v) in combo.iter().filter(|(k, _)| !k.contains('.')) {
            argv.push(format!("--{k}"));
            argv.push(v.clone());
        }
        let what = combo
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let cli = Cli::try_parse_from(&argv).map_err(|e| {
            let first = e
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_string();
            format!("--vary {what}: {first}")
        })?;
        let Command::Run { workload } = cli.command else {
            unreachable!("argv starts with run")
        };
        let (built, combo_common) = build(workload).map_err(|e| format!("--vary {what}: {e}"))?;
        let backend =
            Backend::from_args(&combo_common).map_err(|e| format!("--vary {what}: {e}"))?;
        let workloads = W::take(built).expect("same workload");
        let mut knobs = group_knobs(&workloads[0], &common.group_knobs, &backend)?;
        let plan = workloads[0].plan();
        for (key, value) in combo.iter().filter(|(k, _)| k.contains('.')) {
            let (group, knob) = key.split_once('.').expect("knob key");
            let (_, k) = parse_group_arg(&format!("{group}:{knob}={value}"))
                .map_err(|e| format!("--vary {key}={value}: {e}"))?;
            let g = plan.group_index(group).expect("checked");
            let target = &mut knobs[g];
            target.nice = k.nice.or(target.nice);
            target.policy = k.policy.or(target.policy);
            target.slice_ns = k.slice_ns.or(target.slice_ns);
            target.cpus = k.cpus.or(target.cpus.take());
            target
                .validate(group, backend.cpus())
                .and_then(|()| backend.check_knobs(group, target))
                .map_err(|e| format!("--vary {key}={value}: {e}"))?;
        }
        let several = workloads.len() > 1;
        for w in workloads {
            let label = if several {
                format!("{what} {}", w.label())
            } else {
                what.clone()
            };
            configs.push(Config {
                workload: w,
                knobs: knobs.clone(),
                label,
                backend: backend.clone(),
            });
        }
    }
    let out = common.out.as_deref().map(OutDir::new).transpose()?;
    let (end, record) = run_configs(configs, common, stop, out.as_ref())?;
    let keys: Vec<String> = varies.iter().map(|v| v.key.clone()).collect();
    if record.workload == "interbench" {
        print!("{}", interbench_tables(&record, &cross_product(&varies)));
    } else {
        print!("{}", schedlab_report::sweep::table(&record, &keys));
    }
    if let Some(path) = &common.plot {
        schedlab_report::plot::sweep_chart(&record, &keys, path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(end)
}

/// An interbench sweep prints seed 004's form for each combination of the varied values
/// ([`schedlab_report::interbench::side_by_side`]).
fn interbench_tables(record: &RunRecord, combos: &[Vec<(String, String)>]) -> String {
    let part = |combo: &Vec<(String, String)>| {
        let what = combo
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut r = record.clone();
        r.configs
            .retain(|c| c.label == what || c.label.starts_with(&format!("{what} ")));
        (what, r)
    };
    let parts: Vec<(String, RunRecord)> = combos.iter().map(part).collect();
    let refs: Vec<(&str, &RunRecord)> = parts.iter().map(|(n, r)| (n.as_str(), r)).collect();
    schedlab_report::interbench::side_by_side(&refs, record.level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_product_runs_first_key_slowest() {
        let v = [parse_vary("a=1,2").unwrap(), parse_vary("b=x,y,z").unwrap()];
        let c = cross_product(&v);
        assert_eq!(c.len(), 6);
        assert_eq!(
            c[0],
            vec![("a".into(), "1".into()), ("b".into(), "x".into())]
        );
        assert_eq!(
            c[3],
            vec![("a".into(), "2".into()), ("b".into(), "x".into())]
        );
        assert!(parse_vary("novalues=").is_err());
        assert_eq!(
            parse_vary("policy=bsd4:preemption=0,ipiwakeup=0,o1,o1:threshold=40")
                .unwrap()
                .values,
            ["bsd4:preemption=0,ipiwakeup=0", "o1", "o1:threshold=40"]
        );
        assert_eq!(
            parse_vary("server.policy=fifo:1,other").unwrap().values,
            ["fifo:1", "other"]
        );
        assert!(parse_vary("noequals").unwrap_err().contains("KEY=V1,V2"));
    }
}
