//! `schedlab compare A.json B.json [C.json ...]`: ministat's report on one metric for each
//! configuration, then a compact mmtests-style table of every metric relative to the first
//! record, signed so that + is better, significant cells between asterisks.

use crate::error::Error;
use schedlab_experiment::outdir::invalid_value;
use schedlab_report::export::read_json;
use schedlab_report::table::{num, Table};
use schedlab_stats::{compare as two_sample, mean_kind_for, metric_values, parse_level, MeanKind};
use schedlab_workload::record::{ConfigResult, RunRecord};
use std::path::PathBuf;

/// The whole comparison report; warnings (different machines or kernels) lead it.
pub fn compare(
    paths: &[PathBuf],
    metric: Option<&str>,
    level: &str,
    welch: bool,
    force: bool,
) -> Result<String, Error> {
    // The level's message quotes the value and a record's names the file; neither names a flag.
    let level = parse_level(level).map_err(|e| Error::BadValue {
        flag: "--level".into(),
        value: level.to_string(),
        why: e.to_string(),
    })?;
    let records: Vec<RunRecord> = paths
        .iter()
        .map(|p| read_json(p).map_err(|e| Error::Input(e.to_string())))
        .collect::<Result<_, _>>()?;
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    for (r, name) in records.iter().zip(&names) {
        check_values(r, name)?;
    }
    let first = &records[0];
    let metric_given = metric;
    let metric = match metric {
        Some(m) => m.to_string(),
        None => first
            .primary_metric()
            .ok_or_else(|| Error::Input(format!("{}: the record defines no metric", names[0])))?
            .name
            .clone(),
    };
    if first.metric(&metric).is_none() {
        return Err(Error::UnknownName {
            subject: format!("--metric {metric}: {}", names[0]),
            kind: "metric",
            name: metric,
            known: first.metrics.iter().map(|m| m.name.clone()).collect(),
            hint: "",
        });
    }
    let mut out = String::new();
    for (r, name) in records.iter().zip(&names).skip(1) {
        if r.workload != first.workload && !force {
            return Err(Error::Incomparable(format!(
                "{} is a '{}' run and {name} a '{}' run; compare like with like, or pass --force",
                names[0], first.workload, r.workload
            )));
        }
        if r.metric(&metric).is_none() {
            return Err(Error::UnknownName {
                subject: format!("{name} (a '{}' run)", r.workload),
                kind: "metric",
                name: metric.clone(),
                known: r.metrics.iter().map(|m| m.name.clone()).collect(),
                hint: "; choose one both records have with --metric",
            });
        }
        if r.backend.kind != first.backend.kind {
            let what = |kind: &str| match kind {
                "sim" => "simulated".to_string(),
                "real" => "the real kernel's".to_string(),
                k => format!("a '{k}' backend's"),
            };
            let text = format!(
                "{} holds {} results and {name} {}",
                names[0],
                what(&first.backend.kind),
                what(&r.backend.kind)
            );
            if !force {
                return Err(Error::Incomparable(format!(
                    "{text}; a simulated machine's numbers are not the kernel's; compare like with like, or pass --force"
                )));
            }
            out.push_str(&format!("warning: {text}\n\n"));
        }
        for c in &first.configs {
            match r.configs.iter().find(|o| o.label == c.label) {
                Some(o) if o.params != c.params && !force => {
                    let diff: Vec<String> = c
                        .params
                        .iter()
                        .filter(|(k, v)| o.params.get(*k) != Some(v))
                        .map(|(k, v)| {
                            format!("{k}={v} vs {}", o.params.get(k).map_or("-", |s| s.as_str()))
                        })
                        .collect();
                    return Err(Error::Incomparable(format!(
                        "{} and {name} ran different parameters ({}); compare like with like, or pass --force",
                        names[0],
                        diff.join(", ")
                    )));
                }
                None if !force => {
                    return Err(Error::Incomparable(format!("{name} has no configuration '{}' as {} has; pass --force to compare what matches", c.label, names[0])));
                }
                _ => {}
            }
        }
        let (a, b) = (&first.machine, &r.machine);
        if (a.hostname.as_str(), a.kernel_release.as_str(), a.cpus)
            != (b.hostname.as_str(), b.kernel_release.as_str(), b.cpus)
        {
            out.push_str(&format!(
                "warning: {} ran on {} (Linux {}, {} CPUs) and {name} on {} (Linux {}, {} CPUs)\n\n",
                names[0], a.hostname, a.kernel_release, a.cpus, b.hostname, b.kernel_release, b.cpus
            ));
        }
    }
    let own = schedlab_report::seed::own_tables_def(first).filter(|_| metric_given.is_none());
    if let Some(own) = own {
        // The workload's own form (interbench's seed 004): each record's tables, a row marked
        // `*` where it beats the other.
        let parts: Vec<(&str, &RunRecord)> =
            names.iter().map(String::as_str).zip(&records).collect();
        out.push_str(&schedlab_report::seed::side_by_side(&own, &parts, level));
        if records
            .iter()
            .any(|r| r.configs.iter().any(|c| c.repetitions.len() < 2))
        {
            out.push_str("note: rows with fewer than 2 repetitions on either side cannot be marked; use --runs 3 or more\n");
        }
        return Ok(out);
    }
    for c in &first.configs {
        let sets: Vec<(String, Vec<f64>)> = records
            .iter()
            .zip(&names)
            .filter_map(|(r, n)| {
                r.configs
                    .iter()
                    .find(|o| o.label == c.label)
                    .map(|o| (n.clone(), metric_values(o, &metric)))
            })
            .collect();
        if first.configs.len() > 1 || !c.label.is_empty() {
            out.push_str(&format!("== {} ==\n", c.label));
        }
        out.push_str(&format!(
            "{metric} ({})\n",
            first.metric(&metric).map_or("", |m| m.unit.as_str())
        ));
        // A recorded program's run is one run: there is no distribution to draw or test, so
        // the table below gives its value beside the replays' means.
        if records.iter().any(is_recorded_run) && sets.iter().any(|(_, v)| v.len() < 3) {
            out.push_str(
                "(a recorded run is one value: no distribution to compare; the values follow)\n\n",
            );
            continue;
        }
        let report = schedlab_report::ministat::render(&sets, level, welch, 74)
            .map_err(|e| Error::Input(e.to_string()))?;
        out.push_str(&report);
        out.push('\n');
    }
    out.push_str(&relative_table(&records, &names, level, welch));
    if records.iter().any(is_recorded_run) {
        out.push_str(&counters_table(&records, &names));
    }
    out.push_str(&latency_distances(&records, &names));
    Ok(out)
}

/// Whether `r` is the run `schedlab record --json` writes of a recorded program.
fn is_recorded_run(r: &RunRecord) -> bool {
    r.backend.details.contains_key("recorded")
}

/// Beside a recorded run, the counters replays are judged by: per configuration, the total
/// switches, wakeups and CPU time and each group's CPU time, each record's median over its
/// repetitions, and the other records' as a ratio to the first's.
fn counters_table(records: &[RunRecord], names: &[String]) -> String {
    let mut header = vec!["counter (median)".to_string(), names[0].clone()];
    header.extend(names[1..].iter().cloned());
    let mut t = Table::new(header);
    let median =
        |c: &ConfigResult,
         group: &str,
         f: &dyn Fn(&schedlab_workload::record::Counters) -> Option<f64>| {
            let mut v: Vec<f64> = c
                .repetitions
                .iter()
                .filter_map(|r| r.counters.get(group).and_then(f))
                .collect();
            v.sort_by(f64::total_cmp);
            match v.len() {
                0 => None,
                n if n % 2 == 1 => Some(v[n / 2]),
                n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
            }
        };
    type Get = fn(&schedlab_workload::record::Counters) -> Option<f64>;
    let kinds: [(&str, Get); 4] = [
        ("voluntary switches", |c| {
            c.voluntary_switches.map(|v| v as f64)
        }),
        ("involuntary switches", |c| {
            c.involuntary_switches.map(|v| v as f64)
        }),
        ("wakeups", |c| c.wakeups.map(|v| v as f64)),
        ("CPU time s", |c| Some(c.cpu_time_s)),
    ];
    for c in &records[0].configs {
        let others: Vec<Option<&ConfigResult>> = records[1..]
            .iter()
            .map(|r| r.configs.iter().find(|o| o.label == c.label))
            .collect();
        let groups = c.groups.iter().map(|g| g.name.as_str());
        let rows = kinds
            .iter()
            .map(|&(what, get)| ("total", what, get))
            .chain(groups.map(|g| (g, "CPU time s", kinds[3].1)));
        for (group, what, get) in rows {
            let Some(base) = median(c, group, &get) else {
                continue;
            };
            let mut label = if group == "total" {
                what.to_string()
            } else {
                format!("{group} {what}")
            };
            if !c.label.is_empty() {
                label = format!("{} {label}", c.label);
            }
            let mut row = vec![label, num(base)];
            for o in &others {
                row.push(match o.and_then(|o| median(o, group, &get)) {
                    Some(v) if base != 0.0 => format!("{} (×{:.3})", num(v), v / base),
                    Some(v) => num(v),
                    None => "-".into(),
                });
            }
            t.row(row);
        }
    }
    t.render()
}

/// For each configuration whose repetitions carry a wakeup-latency distribution in the first
/// record and in another (`schedlab record --json` writes one), the Kolmogorov–Smirnov distance
/// between the two, each record's repetitions pooled: the largest gap between their cumulative
/// distributions, 0 for the same shape, 1 for disjoint ones.
fn latency_distances(records: &[RunRecord], names: &[String]) -> String {
    use schedlab_workload::record::Distribution;
    let pooled = |c: &ConfigResult| {
        Distribution::merged(
            c.repetitions
                .iter()
                .filter_map(|r| r.wakeup_latency.as_ref()),
        )
    };
    let mut out = String::new();
    for c in &records[0].configs {
        let Some(base) = pooled(c) else { continue };
        for (r, name) in records[1..].iter().zip(&names[1..]) {
            let Some(other) = r
                .configs
                .iter()
                .find(|o| o.label == c.label)
                .and_then(pooled)
            else {
                continue;
            };
            if other.unit != base.unit {
                continue;
            }
            if let Some(d) = base.ks_distance(&other) {
                let label = if c.label.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", c.label)
                };
                out.push_str(&format!(
                    "wakeup latency{label}: Kolmogorov-Smirnov distance {d:.3} between {} ({} wakeups) and {name} ({} wakeups)\n",
                    names[0],
                    base.count(),
                    other.count()
                ));
            }
        }
    }
    out
}

/// Refuse a record holding a value no measurement can have (negative, not finite, beyond
/// [`schedlab_experiment::outdir::MAX_VALUE`]), naming the file, the configuration, the repetition and the metric: its
/// statistics would be nonsense, or print `inf`.
fn check_values(r: &RunRecord, name: &str) -> Result<(), Error> {
    for c in &r.configs {
        for (i, rep) in c.repetitions.iter().enumerate() {
            for (metric, &v) in &rep.metrics {
                let unit = r.metric(metric).map_or("", |m| m.unit.as_str());
                if let Some(why) = invalid_value(metric, unit, v) {
                    let config = if c.label.is_empty() {
                        String::new()
                    } else {
                        format!("configuration '{}', ", c.label)
                    };
                    return Err(Error::Input(format!(
                        "{name}: {config}repetition {}: {why}; a record holding it cannot be compared",
                        i + 1
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Every metric of every configuration: the first record's mean, then each other record's mean
/// and its change, + meaning better, `*` where the difference is significant.
fn relative_table(records: &[RunRecord], names: &[String], level: f64, welch: bool) -> String {
    let first = &records[0];
    let mut header = vec!["configuration / metric".to_string(), names[0].clone()];
    header.extend(names[1..].iter().cloned());
    let mut t = Table::new(header);
    let mut ratios = false;
    for c in &first.configs {
        for m in &first.metrics {
            let kind = mean_kind_for(m.better);
            let base = metric_values(c, &m.name);
            if base.is_empty() {
                continue;
            }
            let label = if c.label.is_empty() {
                m.name.clone()
            } else {
                format!("{} {}", c.label, m.name)
            };
            let mut row = vec![label, num(kind.of(&base))];
            for r in &records[1..] {
                let Some(o) = r
                    .configs
                    .iter()
                    .find(|o: &&ConfigResult| o.label == c.label)
                else {
                    row.push("-".into());
                    continue;
                };
                let vals = metric_values(o, &m.name);
                if vals.is_empty() {
                    row.push("-".into());
                    continue;
                }
                let cell = match two_sample(&base, &vals, level, welch) {
                    // A % of a mean that is within its noise of zero is noise too: the ratio.
                    Ok(cmp) if cmp.reference_near_zero() => {
                        ratios = true;
                        let r = schedlab_report::ministat::ratio(cmp.ratio());
                        if cmp.significant {
                            format!("{} *{r}*", num(kind.of(&vals)))
                        } else {
                            format!("{} ({r})", num(kind.of(&vals)))
                        }
                    }
                    Ok(cmp) => {
                        let pct = cmp.improvement_pct(m.better);
                        if cmp.significant {
                            format!("{} *{pct:+.2}%*", num(kind.of(&vals)))
                        } else {
                            format!("{} ({pct:+.2}%)", num(kind.of(&vals)))
                        }
                    }
                    Err(_) => num(kind.of(&vals)),
                };
                row.push(cell);
            }
            t.row(row);
        }
    }
    let mut out = t.render();
    out.push_str(&format!(
        "means: {} for rates (higher is better), {} otherwise; % signed so that + is better; *…* significant at {level}% ({})\n",
        MeanKind::Harmonic.name(),
        MeanKind::Arithmetic.name(),
        if welch { "Welch's t" } else { "Student's t, pooled s" }
    ));
    if ratios {
        out.push_str(&format!(
            "×: the mean as a multiple of the first record's, where that mean is within its own {level}% interval of zero (a % of it would be noise)\n"
        ));
    }
    out
}
