//! Where a sweep keeps its records (`--out DIR`): `sweep.json` and one record per
//! configuration, rewritten after every repetition; a sweep started again with the same
//! directory resumes each configuration from the repetitions its record holds.
//!
//! The directory is not trusted blindly. A record resumes only if the same experiment wrote
//! it: the workload, every parameter, each group's knobs, the backend and its machine (for the
//! simulator: policy, CPUs, cost profile and overrides, seed; for the real kernel: the host, its
//! kernel and the counter source), the tool version, and which shard of a sharded sweep
//! (`--shard K/N`) it holds, if any. A record of another experiment stops the
//! sweep before anything runs, naming the difference ([`ExperimentError::OtherExperiment`]); an
//! unreadable record, or repetitions whose values cannot be right (not finite, negative, a
//! percentage above 100, missing), are dropped and [`Resume::dropped`] says which and why.

use crate::error::ExperimentError;
use schedlab_workload::record::{ConfigResult, MetricDef, Repetition, RunRecord};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A sweep's record directory.
pub struct OutDir {
    dir: PathBuf,
}

/// What a configuration's record in the directory gives a new sweep.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resume {
    /// The repetitions kept (valid, of the same experiment), in their order.
    pub repetitions: Vec<Repetition>,
    /// What was dropped and why, if anything.
    pub dropped: Option<Dropped>,
}

/// Records or repetitions of the directory that a sweep does not resume.
#[derive(Clone, Debug, PartialEq)]
pub enum Dropped {
    /// The configuration's record cannot be read (truncated, not JSON, another schema): the
    /// configuration starts afresh and the file is overwritten.
    Unreadable {
        /// The record file.
        path: PathBuf,
        /// Why it cannot be read.
        reason: String,
    },
    /// Repetitions from `first` (0-based) on are dropped, since repetition `first` holds a value
    /// that cannot be right; the ones before it are kept (later repetitions are dropped too, so
    /// that repetition numbers, and the simulator's seeds, stay in order).
    Repetitions {
        /// The record file.
        path: PathBuf,
        /// The first repetition dropped (0-based).
        first: usize,
        /// How many repetitions are dropped.
        count: usize,
        /// What is wrong with repetition `first`.
        reason: String,
    },
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dropped::Unreadable { path, reason } => write!(
                f,
                "{} cannot be read ({reason}); it is dropped and this configuration starts afresh",
                path.display()
            ),
            Dropped::Repetitions {
                path,
                first,
                count,
                reason,
            } => write!(
                f,
                "{}: repetition {} {reason}; {} dropped",
                path.display(),
                first + 1,
                match count {
                    1 => "it is".to_string(),
                    2 => "it and the one after it are".to_string(),
                    n => format!("it and the {} after it are", n - 1),
                }
            ),
        }
    }
}

impl OutDir {
    /// Use (and create) `dir`.
    pub fn new(dir: &Path) -> Result<OutDir, ExperimentError> {
        std::fs::create_dir_all(dir).map_err(|source| ExperimentError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(OutDir {
            dir: dir.to_path_buf(),
        })
    }

    /// Use `dir` as it is, without creating it (to read a sweep's records).
    pub fn at(dir: &Path) -> OutDir {
        OutDir {
            dir: dir.to_path_buf(),
        }
    }

    /// The record file of the whole sweep.
    pub fn sweep_path(&self) -> PathBuf {
        self.dir.join("sweep.json")
    }

    /// The record file of the configuration labelled `label`.
    pub fn config_path(&self, label: &str) -> PathBuf {
        let name: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!(
            "{}.json",
            if name.is_empty() {
                "config".into()
            } else {
                name
            }
        ))
    }

    /// What each of `configs` (the new sweep's configurations, in order, of the run `record`
    /// describes) resumes from the directory. Refuses, before anything runs, a directory whose
    /// records another experiment wrote: the sweep would mix its results or overwrite them.
    pub fn resume_all(
        &self,
        record: &RunRecord,
        configs: &[ConfigResult],
    ) -> Result<Vec<Resume>, ExperimentError> {
        let resumed = configs
            .iter()
            .map(|c| self.resume(record, c))
            .collect::<Result<_, _>>()?;
        self.check_sweep(record, configs)?;
        Ok(resumed)
    }

    /// `sweep.json`, if another experiment wrote it (another workload, backend, machine, tool
    /// version, or a parameter that neither sweep varies).
    fn check_sweep(
        &self,
        record: &RunRecord,
        configs: &[ConfigResult],
    ) -> Result<(), ExperimentError> {
        let path = self.sweep_path();
        // An unreadable sweep.json is only a copy of the per-configuration records.
        let Ok(old) = schedlab_report::export::read_json(&path) else {
            return Ok(());
        };
        let mut diffs = run_differences(&old, record);
        let varied: BTreeSet<&str> = old
            .configs
            .iter()
            .chain(configs)
            .flat_map(|c| c.label.split(' '))
            .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
            .collect();
        if let (Some(o), Some(n)) = (old.configs.first(), configs.first()) {
            for (k, v) in &n.params {
                if varied.contains(k.as_str()) {
                    continue;
                }
                let ov = o.params.get(k).map_or("-", String::as_str);
                if ov != v {
                    diffs.push(format!("{k}={ov} there, {k}={v} here"));
                }
            }
        }
        refuse(path, diffs)
    }

    /// The repetitions a previous, interrupted sweep left for this configuration: refused if
    /// another experiment wrote its record; its valid repetitions otherwise.
    pub fn resume(
        &self,
        record: &RunRecord,
        config: &ConfigResult,
    ) -> Result<Resume, ExperimentError> {
        let path = self.config_path(&config.label);
        if !path.exists() {
            return Ok(Resume::default());
        }
        let old = match schedlab_report::export::read_json(&path) {
            Ok(old) => old,
            Err(e) => {
                let reason = match e {
                    schedlab_report::export::ReadError::Io { source, .. } => source.to_string(),
                    schedlab_report::export::ReadError::Record { source, .. } => source.to_string(),
                };
                return Ok(Resume {
                    repetitions: Vec::new(),
                    dropped: Some(Dropped::Unreadable { path, reason }),
                });
            }
        };
        let [c] = old.configs.as_slice() else {
            return refuse(
                path,
                vec![format!(
                    "it holds {} configurations, a configuration's record holds one",
                    old.configs.len()
                )],
            )
            .map(|_| Resume::default());
        };
        let mut diffs = run_differences(&old, record);
        diffs.extend(config_differences(c, config));
        refuse(path.clone(), diffs)?;
        let bad = c
            .repetitions
            .iter()
            .enumerate()
            .find_map(|(i, r)| invalid_repetition(r, &record.metrics).map(|why| (i, why)));
        Ok(match bad {
            None => Resume {
                repetitions: c.repetitions.clone(),
                dropped: None,
            },
            Some((first, reason)) => Resume {
                repetitions: c.repetitions[..first].to_vec(),
                dropped: Some(Dropped::Repetitions {
                    path,
                    first,
                    count: c.repetitions.len() - first,
                    reason,
                }),
            },
        })
    }

    /// Write the whole sweep and each configuration's own record.
    pub fn save(&self, record: &RunRecord) -> Result<(), ExperimentError> {
        let write = |r: &RunRecord, path: PathBuf| {
            schedlab_report::export::write_json(r, &path, schedlab_report::output::Stage::Progress)
                .map_err(|source| ExperimentError::Write { path, source })
        };
        write(record, self.sweep_path())?;
        for c in &record.configs {
            let mut one = record.clone();
            one.configs = vec![c.clone()];
            write(&one, self.config_path(&c.label))?;
        }
        Ok(())
    }
}

/// An error naming `path` and `diffs`, if there are any.
fn refuse(path: PathBuf, diffs: Vec<String>) -> Result<(), ExperimentError> {
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(ExperimentError::OtherExperiment {
            path,
            differences: diffs,
        })
    }
}

/// How the run that wrote `old` differs from the run `new` describes, as a whole: workload,
/// backend and its settings, the host (real kernel), the tool version.
pub(crate) fn run_differences(old: &RunRecord, new: &RunRecord) -> Vec<String> {
    let mut d = Vec::new();
    let mut differ = |what: &str, a: &str, b: &str| {
        if a != b {
            d.push(format!("{what} {a} there, {b} here"));
        }
    };
    differ("workload", &old.workload, &new.workload);
    differ("backend", &old.backend.kind, &new.backend.kind);
    differ("schedlab version", &old.tool.version, &new.tool.version);
    let shard = |r: &RunRecord| match r.shard {
        Some(s) => format!("shard {}/{} of {} runs", s.index, s.count, s.runs),
        None => "the whole sweep".into(),
    };
    differ("records of", &shard(old), &shard(new));
    if old.backend.kind != new.backend.kind {
        return d;
    }
    let varied = |p: &Option<String>| p.as_deref().is_some_and(|p| p.starts_with("varied"));
    if !varied(&old.backend.policy) && !varied(&new.backend.policy) {
        let show = |p: &Option<String>| p.clone().unwrap_or_else(|| "-".into());
        differ(
            "policy",
            &show(&old.backend.policy),
            &show(&new.backend.policy),
        );
    }
    let show = |s: Option<u64>| s.map_or("-".into(), |s| s.to_string());
    differ("seed", &show(old.backend.seed), &show(new.backend.seed));
    let keys: BTreeSet<&String> = old
        .backend
        .details
        .keys()
        .chain(new.backend.details.keys())
        .collect();
    for k in keys {
        let get = |r: &RunRecord| r.backend.details.get(k).cloned().unwrap_or("-".into());
        differ(k, &get(old), &get(new));
    }
    if new.backend.kind == "real" {
        let (a, b) = (&old.machine, &new.machine);
        differ("host", &a.hostname, &b.hostname);
        differ("kernel", &a.kernel_release, &b.kernel_release);
        differ("kernel build", &a.kernel_version, &b.kernel_version);
        differ("CPUs online", &a.cpus.to_string(), &b.cpus.to_string());
    }
    d
}

/// How configuration `old` differs from `new`: label, parameters, machine, groups and knobs.
pub(crate) fn config_differences(old: &ConfigResult, new: &ConfigResult) -> Vec<String> {
    let mut d = Vec::new();
    if old.label != new.label {
        d.push(format!(
            "configuration '{}' there, '{}' here",
            old.label, new.label
        ));
    }
    let keys: BTreeSet<&String> = old.params.keys().chain(new.params.keys()).collect();
    for k in keys {
        let (a, b) = (old.params.get(k), new.params.get(k));
        if a != b {
            let show = |v: Option<&String>| v.map_or("-".to_string(), |v| v.clone());
            d.push(format!("{k}={} there, {k}={} here", show(a), show(b)));
        }
    }
    if old.machine != new.machine {
        let show = |m: &Option<String>| m.clone().unwrap_or_else(|| "the host".into());
        d.push(format!(
            "machine {} there, {} here",
            show(&old.machine),
            show(&new.machine)
        ));
    }
    let same_groups = old
        .groups
        .iter()
        .map(|g| (&g.name, g.tasks, &g.knobs))
        .eq(new.groups.iter().map(|g| (&g.name, g.tasks, &g.knobs)));
    if !same_groups {
        let groups = |c: &ConfigResult| -> Vec<String> {
            c.groups
                .iter()
                .map(|g| format!("{}({} tasks):{{{}}}", g.name, g.tasks, g.knobs))
                .collect()
        };
        let (a, b) = (groups(old), groups(new));
        d.push(format!(
            "groups {} there, {} here",
            a.join(" "),
            b.join(" ")
        ));
    }
    d
}

/// The largest magnitude a measured value may have. No measurement comes near it, and it keeps
/// the statistics of a configuration finite: a square of up to 1e300, summed over every
/// repetition a sweep may hold, is still a finite `f64` (1e308 once printed `inf` as a mean).
pub const MAX_VALUE: f64 = 1e150;

/// Why a repetition's values cannot be right for `metrics`, if they cannot: a metric missing,
/// or a value [`invalid_value`] refuses.
pub(crate) fn invalid_repetition(r: &Repetition, metrics: &[MetricDef]) -> Option<String> {
    for m in metrics {
        let Some(&v) = r.metrics.get(&m.name) else {
            return Some(format!("has no value for {}", m.name));
        };
        if let Some(why) = invalid_value(&m.name, &m.unit, v) {
            return Some(why);
        }
    }
    None
}

/// Why value `v` of metric `name` (in `unit`) cannot be right, if it cannot: not finite,
/// beyond [`MAX_VALUE`], negative (every metric schedlab defines is a time, a rate, a count or
/// a percentage), or a percentage above 100. The text names the metric and the value.
pub fn invalid_value(name: &str, unit: &str, v: f64) -> Option<String> {
    if !v.is_finite() {
        return Some(format!("has {name} = {v}, not a finite number"));
    }
    if v.abs() > MAX_VALUE {
        return Some(format!(
            "has {name} = {v:e}, beyond what any measurement reaches (accepted: at most {MAX_VALUE:e})"
        ));
    }
    if v < 0.0 {
        return Some(format!(
            "has {name} = {v}, which cannot be negative ({} {unit})",
            match unit {
                "s" | "ms" | "us" | "ns" => "a time in",
                u if u.contains("/s") => "a rate in",
                "%" => "a percentage,",
                _ => "a count of",
            },
        ));
    }
    if unit == "%" && v > 100.0 {
        return Some(format!("has {name} = {v}, a percentage above 100"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{Config, Experiment};
    use crate::measure::{measure, Progress, RunEnd, Sinks};
    use crate::mock::{MockBackend, MockWorkload, Step};
    use crate::settings::{Budget, Settings};
    use schedlab_workload::knobs::Knobs;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn settings(runs: usize) -> Settings {
        Settings {
            budget: Budget::Fixed(runs),
            until_text: None,
            warmup: 0,
            level: 95.0,
            timeout: None,
            json: None,
            command: vec!["test".into()],
            shard: None,
            timeline: false,
            timeline_events: None,
            rt_app_logs: None,
            jobs: 1,
        }
    }

    /// One mock configuration per (label, machine).
    fn experiment(configs: &[(&str, &'static str)]) -> Experiment<MockWorkload, &'static str> {
        Experiment {
            configs: configs
                .iter()
                .map(|(label, machine)| Config {
                    workload: MockWorkload::default(),
                    knobs: vec![Knobs::default()],
                    label: label.to_string(),
                    machine: *machine,
                })
                .collect(),
            variations: Vec::new(),
            combinations: Vec::new(),
        }
    }

    /// Measure `configs` with `runs` repetitions into `out`; the progress reports too.
    fn sweep(
        backend: &mut MockBackend,
        configs: &[(&str, &'static str)],
        runs: usize,
        out: &OutDir,
    ) -> (Result<(RunEnd, RunRecord), ExperimentError>, Vec<Progress>) {
        let stop = Arc::new(AtomicBool::new(false));
        let sinks = Sinks {
            json: None,
            out: Some(out),
            exports: None,
        };
        let mut reports = Vec::new();
        let r = measure(
            experiment(configs),
            backend,
            &settings(runs),
            &sinks,
            &stop,
            &mut |p| reports.push(p),
        );
        (r, reports)
    }

    /// A fresh directory, removed when dropped.
    fn temp_dir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("schedlab-outdir-test-")
            .tempdir()
            .unwrap()
    }

    fn values(r: &ConfigResult) -> Vec<f64> {
        r.repetitions.iter().map(|x| x.metrics["value"]).collect()
    }

    /// A directory holding an interrupted sweep of `a` and `b` (2 repetitions each of 4).
    fn interrupted_sweep() -> (tempfile::TempDir, OutDir) {
        let dir = temp_dir();
        let out = OutDir::new(dir.path()).unwrap();
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(1.0), Step::Value(2.0), Step::Interrupt])
            .script("b", &[Step::Value(3.0)]);
        let (r, _) = sweep(&mut b, &[("a", "a"), ("b", "b")], 4, &out);
        assert_eq!(r.unwrap().0, RunEnd::Interrupted);
        (dir, out)
    }

    fn edit(path: &Path, from: &str, to: &str) {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains(from), "{from} in {}", path.display());
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    #[test]
    fn a_record_of_another_machine_is_refused_and_left_alone() {
        let (_dir, out) = interrupted_sweep();
        let before = std::fs::read_to_string(out.config_path("a")).unwrap();
        // Configuration `a` now runs on machine `b`: another experiment's results.
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(7.0)])
            .script("b", &[Step::Value(8.0)]);
        let (r, _) = sweep(&mut b, &[("a", "b"), ("b", "b")], 4, &out);
        let e = r.unwrap_err();
        let ExperimentError::OtherExperiment { path, differences } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(path, &out.config_path("a"));
        assert_eq!(differences, &["machine a there, b here"]);
        assert!(b.calls.is_empty(), "nothing ran");
        assert_eq!(
            std::fs::read_to_string(out.config_path("a")).unwrap(),
            before
        );
    }

    #[test]
    fn a_record_of_another_version_or_parameter_is_refused() {
        let (_dir, out) = interrupted_sweep();
        edit(
            &out.config_path("b"),
            &format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION")),
            "\"version\": \"0.0.1\"",
        );
        edit(
            &out.config_path("b"),
            "\"params\": {}",
            "\"params\": {\"duration\": \"1s\"}",
        );
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(7.0)])
            .script("b", &[Step::Value(8.0)]);
        let (r, _) = sweep(&mut b, &[("a", "a"), ("b", "b")], 4, &out);
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "schedlab version 0.0.1 there, {} here",
                env!("CARGO_PKG_VERSION")
            )) && e.contains("duration=1s there, duration=- here"),
            "{e}"
        );
        assert!(b.calls.is_empty());
    }

    #[test]
    fn a_sweep_json_of_another_experiment_is_refused() {
        let (_dir, out) = interrupted_sweep();
        edit(&out.sweep_path(), "\"kind\": \"mock\"", "\"kind\": \"sim\"");
        // A configuration the old sweep did not have: only sweep.json would be overwritten.
        let mut b = MockBackend::default().script("c", &[Step::Value(7.0)]);
        let (r, _) = sweep(&mut b, &[("c", "c")], 1, &out);
        let e = r.unwrap_err();
        assert!(
            matches!(&e, ExperimentError::OtherExperiment { path, differences }
                if *path == out.sweep_path() && differences == &["backend sim there, mock here"]),
            "{e:?}"
        );
    }

    #[test]
    fn impossible_values_are_dropped_with_those_after_them_and_said() {
        let (_dir, out) = interrupted_sweep();
        // a: [1, 2] → the second is tampered; b: [3, 3] → truncated file.
        edit(&out.config_path("a"), "\"value\": 2.0", "\"value\": -5.0");
        let text = std::fs::read_to_string(out.config_path("b")).unwrap();
        std::fs::write(out.config_path("b"), &text[..text.len() / 2]).unwrap();
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(7.0)])
            .script("b", &[Step::Value(8.0)]);
        let (r, reports) = sweep(&mut b, &[("a", "a"), ("b", "b")], 3, &out);
        let (end, rec) = r.unwrap();
        assert_eq!(end, RunEnd::Complete);
        assert_eq!(values(&rec.configs[0]), [1.0, 7.0, 7.0]);
        assert_eq!(values(&rec.configs[1]), [8.0, 8.0, 8.0]);
        // Repetition numbers (the simulator's seeds) continue after the kept ones.
        assert_eq!(b.calls[..2], [("a", 1), ("b", 0)]);
        let said: Vec<String> = reports
            .iter()
            .filter_map(|p| match p {
                Progress::Dropped { label, dropped, .. } => Some(format!("{label}: {dropped}")),
                Progress::Resumed {
                    label, repetitions, ..
                } => Some(format!("{label}: resumed {repetitions}")),
                _ => None,
            })
            .collect();
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(
            said[0].starts_with("a: ")
                && said[0].ends_with(
                    "repetition 2 has value = -5, which cannot be negative (a time in s); it is dropped"
                ),
            "{said:?}"
        );
        assert_eq!(said[1], "a: resumed 1");
        assert!(
            said[2].contains("b.json cannot be read (not a schedlab record: EOF")
                && said[2].ends_with("this configuration starts afresh"),
            "{said:?}"
        );
    }

    #[test]
    fn invalid_values_are_named() {
        let defs = MetricDef {
            name: "cpu".into(),
            unit: "%".into(),
            better: schedlab_workload::record::Better::Higher,
            description: String::new(),
        };
        let rep = |v: f64| Repetition {
            metrics: [("cpu".to_string(), v)].into(),
            ..Default::default()
        };
        let check = |v| invalid_repetition(&rep(v), std::slice::from_ref(&defs));
        assert_eq!(check(50.0), None);
        assert_eq!(check(0.0), None);
        assert_eq!(
            check(f64::NAN).unwrap(),
            "has cpu = NaN, not a finite number"
        );
        assert_eq!(
            check(101.0).unwrap(),
            "has cpu = 101, a percentage above 100"
        );
        assert!(check(-1.0)
            .unwrap()
            .contains("cannot be negative (a percentage, %)"));
        assert_eq!(
            invalid_repetition(&Repetition::default(), std::slice::from_ref(&defs)).unwrap(),
            "has no value for cpu"
        );
    }

    #[test]
    fn a_record_that_cannot_be_written_keeps_what_finished() {
        let dir = temp_dir();
        let gone = dir.path().join("gone");
        let json = gone.join("x.json");
        let stop = Arc::new(AtomicBool::new(false));
        let sinks = Sinks {
            json: Some(&json),
            out: None,
            exports: None,
        };
        let mut b = MockBackend::default().script("a", &[Step::Value(1.0)]);
        let e = measure(
            experiment(&[("", "a")]),
            &mut b,
            &settings(3),
            &sinks,
            &stop,
            &mut |_| {},
        )
        .unwrap_err();
        let ExperimentError::Unsaved { source, record } = e else {
            panic!("{e:?}")
        };
        assert!(
            matches!(*source, ExperimentError::Write { ref path, .. } if *path == json),
            "{source:?}"
        );
        assert_eq!(values(&record.configs[0]), [1.0]);
        assert_eq!(
            b.calls.len(),
            1,
            "it stops at the first record it cannot write"
        );
    }
}
