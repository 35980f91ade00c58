//! `schedlab merge DIR... -o OUT`: join the output directories of a sharded sweep
//! ([`crate::shard`]) into what the unsharded sweep writes to its `--out`.
//!
//! The shards are checked before anything is written. Each directory's `sweep.json` must be a
//! shard's record, finished (not interrupted). All must come from the same sweep: the same
//! command line once `--shard` and `--out` are set aside, the same workload, parameters,
//! configurations, knobs, backend and machine (policy, CPUs, profile, seed), tool version,
//! number of shards and runs. Every shard 1..=N must be there exactly once, and each must hold
//! exactly the repetitions its slice gives it, each with its index — so no repetition is missing
//! and none is there twice. The first problem found is the error, naming the directory.
//!
//! The joined record is the unsharded sweep's: each configuration's repetitions in index order
//! (their indices, which only shards write, dropped), its summary recomputed, the counter
//! sources of its last repetition and the groups' observed settings of its first (as the
//! unsharded sweep keeps them), the start time of the earliest shard, and the command with
//! `--shard` removed and `--out` naming OUT.
//!
//! OUT is written whole or not at all: the records are written into a new directory beside it,
//! which is then renamed to OUT. OUT must not exist, or be an empty directory: merging into a
//! directory holding records would mix or overwrite them.

use crate::measure::update_summary;
use crate::outdir::{config_differences, invalid_repetition, run_differences, OutDir};
use crate::shard::Shard;
use schedlab_workload::record::{ConfigResult, Repetition, RunRecord, ShardInfo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A shard directory whose `sweep.json` cannot be read.
    #[error("{}: cannot read {}: {reason}", dir.display(), file.display())]
    Read {
        /// The directory given.
        dir: PathBuf,
        /// The file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
    /// A configuration's record in a shard directory that cannot be read, or does not hold
    /// what the shard's `sweep.json` holds for that configuration.
    #[error("{}: {problem}; the shard's records disagree (a file damaged or edited): run the shard's command again with the same --out", file.display())]
    Corrupt {
        /// The configuration's record file.
        file: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A directory that is not a shard's (`sweep --shard K/N --out DIR` writes one).
    #[error("{}: {problem}; merge joins the --out directories of `schedlab sweep ... --shard K/N`", dir.display())]
    NotAShard {
        /// The directory given.
        dir: PathBuf,
        /// What it is instead.
        problem: String,
    },
    /// A shard that did not finish.
    #[error("{} (shard {shard}): {problem}; run the shard's command again with the same --out to finish it", dir.display())]
    Unfinished {
        /// The directory given.
        dir: PathBuf,
        /// Which shard.
        shard: Shard,
        /// What is missing.
        problem: String,
    },
    /// A shard of another sweep than the first directory's.
    #[error("{} is not a shard of the same sweep as {}: {}", dir.display(), reference.display(), differences.join("; "))]
    OtherSweep {
        /// The directory given.
        dir: PathBuf,
        /// The first directory given, whose sweep the others are compared with.
        reference: PathBuf,
        /// What differs, each as `what THERE there, HERE here`.
        differences: Vec<String>,
    },
    /// The same shard twice.
    #[error("{} and {} are both shard {shard}: each shard must be given once", first.display(), second.display())]
    Duplicate {
        /// Which shard.
        shard: Shard,
        /// The first directory holding it.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// Shards that are not among the directories.
    #[error("shard{} {} of {count} {} missing (given: {given}); every shard 1..={count} is needed", if missing.len() == 1 { "" } else { "s" }, list(missing), if missing.len() == 1 { "is" } else { "are" })]
    Missing {
        /// N.
        count: usize,
        /// The shards missing.
        missing: Vec<usize>,
        /// The shards given.
        given: String,
    },
    /// A repetition of the sweep held by no shard, or by two (only possible if a shard's
    /// records were edited, since the shards are checked against their slices first).
    #[error("repetition {} of configuration '{label}' {problem}", index + 1)]
    Repetition {
        /// The configuration.
        label: String,
        /// The repetition (0-based).
        index: u64,
        /// What is wrong.
        problem: String,
    },
    /// No directory given.
    #[error("no shard directory given")]
    NoShards,
    /// OUT cannot be written.
    #[error("-o {}: {problem}", path.display())]
    Out {
        /// OUT.
        path: PathBuf,
        /// Why.
        problem: String,
    },
}

/// `1, 3..5, 8` for `[1, 3, 4, 5, 8]`.
fn list(numbers: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => numbers[i].to_string(),
            1 => format!("{}, {}", numbers[i], numbers[j]),
            _ => format!("{}..{}", numbers[i], numbers[j]),
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// What [`merge`] wrote.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The joined record, as written to OUT's `sweep.json`.
    pub record: RunRecord,
    /// How many shards were joined.
    pub shards: usize,
    /// How many repetitions the sweep holds.
    pub repetitions: usize,
}

/// Check the shards in `dirs`, join them and write the unsharded sweep's records to `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    check_out(out)?;
    let shards = dirs
        .iter()
        .map(|dir| read_shard(dir).map(|r| (dir.clone(), r)))
        .collect::<Result<Vec<_>, _>>()?;
    let record = join(&shards, out)?;
    // Each shard's own files, once its sweep.json is known good: a problem of sweep.json itself
    // is said as such first.
    for (dir, r) in &shards {
        let files = OutDir::at(dir);
        for c in &r.configs {
            check_config_file(&files, r, c)?;
        }
    }
    write(&record, out)?;
    Ok(Merged {
        repetitions: record.configs.iter().map(|c| c.repetitions.len()).sum(),
        shards: shards.len(),
        record,
    })
}

/// Refuse an OUT that exists and is not an empty directory, or whose parent does not exist.
fn check_out(out: &Path) -> Result<(), MergeError> {
    let problem = |problem: &str| MergeError::Out {
        path: out.to_path_buf(),
        problem: problem.to_string(),
    };
    if out.is_dir() {
        let mut entries = std::fs::read_dir(out).map_err(|e| problem(&e.to_string()))?;
        if entries.next().is_some() {
            return Err(problem(
                "exists and is not empty; merge writes a new directory (remove it or name another)",
            ));
        }
    } else if out.exists() {
        return Err(problem("exists and is not a directory"));
    }
    if !parent(out).is_dir() {
        return Err(problem(&format!(
            "its parent directory {} does not exist",
            parent(out).display()
        )));
    }
    Ok(())
}

/// The directory `path` is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A shard directory's record.
fn read_shard(dir: &Path) -> Result<RunRecord, MergeError> {
    if !dir.is_dir() {
        return Err(MergeError::NotAShard {
            dir: dir.to_path_buf(),
            problem: if dir.exists() {
                "not a directory".into()
            } else {
                "no such directory".into()
            },
        });
    }
    let file = OutDir::at(dir).sweep_path();
    schedlab_report::export::read_json(&file).map_err(|e| MergeError::Read {
        dir: dir.to_path_buf(),
        file: file.clone(),
        reason: reason(e),
    })
}

/// Why a record cannot be read, without its path (the caller names it).
fn reason(e: schedlab_report::export::ReadError) -> String {
    match e {
        schedlab_report::export::ReadError::Io { source, .. } => source.to_string(),
        schedlab_report::export::ReadError::Record { source, .. } => source.to_string(),
    }
}

/// A shard writes each configuration's record beside its `sweep.json`, the whole record with
/// that configuration alone: refuse a shard whose file for `config` is missing, unreadable, or
/// holds anything else, naming the file and what is wrong. Merging ignores no file of a shard.
fn check_config_file(
    out: &OutDir,
    sweep: &RunRecord,
    config: &ConfigResult,
) -> Result<(), MergeError> {
    let file = out.config_path(&config.label);
    let corrupt = |problem: String| MergeError::Corrupt {
        file: file.clone(),
        problem,
    };
    let one = schedlab_report::export::read_json(&file).map_err(|e| corrupt(reason(e)))?;
    let [c] = one.configs.as_slice() else {
        return Err(corrupt(format!(
            "it holds {} configurations, a configuration's record holds one",
            one.configs.len()
        )));
    };
    if c.label != config.label {
        return Err(corrupt(format!(
            "it holds configuration '{}', not '{}'",
            c.label, config.label
        )));
    }
    if let Some((i, why)) = (c.repetitions.iter().enumerate())
        .find_map(|(i, r)| invalid_repetition(r, &sweep.metrics).map(|w| (i, w)))
    {
        let n = c.repetitions[i].index.map_or(i, |k| k as usize) + 1;
        return Err(corrupt(format!("repetition {n} {why}")));
    }
    if c.repetitions.len() != config.repetitions.len() {
        return Err(corrupt(format!(
            "it holds {} repetitions where sweep.json holds {} for '{}'",
            c.repetitions.len(),
            config.repetitions.len(),
            config.label
        )));
    }
    if let Some(i) = (c.repetitions.iter().zip(&config.repetitions)).position(|(a, b)| a != b) {
        let n = config.repetitions[i].index.map_or(i, |k| k as usize) + 1;
        return Err(corrupt(format!(
            "its repetition {n} differs from sweep.json's for '{}'",
            config.label
        )));
    }
    let mut differences = run_differences(sweep, &one);
    differences.extend(config_differences(config, c));
    if differences.is_empty() && c != config {
        differences.push(format!(
            "its configuration '{}' differs from sweep.json's",
            config.label
        ));
    }
    if !differences.is_empty() {
        return Err(corrupt(format!(
            "it differs from sweep.json: {}",
            differences.join("; ")
        )));
    }
    Ok(())
}

/// The command line of the sweep a shard ran: `--shard` (and its value) removed, and `--out`'s
/// value replaced by `out` (removed with `None`).
pub fn sweep_command(command: &[String], out: Option<&str>) -> Vec<String> {
    let mut result = Vec::new();
    let mut args = command.iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--shard" => {
                args.next();
            }
            "--out" => {
                args.next();
                if let Some(o) = out {
                    result.extend(["--out".to_string(), o.to_string()]);
                }
            }
            _ if a.starts_with("--shard=") => {}
            _ if a.starts_with("--out=") => {
                if let Some(o) = out {
                    result.push(format!("--out={o}"));
                }
            }
            _ => result.push(a.clone()),
        }
    }
    result
}

/// Options that name a file a shard writes beside its `--out` directory (each shard may name
/// its own): the file's name says nothing about what was measured.
const OUTPUT_FILES: [&str; 5] = ["--json", "--csv", "--markdown", "--wis-csv", "--timeline"];

/// `command` with the values of [`OUTPUT_FILES`] replaced by `FILE` (whether an option was
/// given still counts: `--timeline` records the run-queue timeline).
fn output_names_left_out(command: &[String]) -> Vec<String> {
    let mut result = Vec::new();
    let mut args = command.iter();
    while let Some(a) = args.next() {
        if OUTPUT_FILES.contains(&a.as_str()) {
            result.extend([a.clone(), "FILE".into()]);
            args.next();
        } else if let Some(flag) = (OUTPUT_FILES.iter()).find(|f| a.starts_with(&format!("{f}="))) {
            result.push(format!("{flag}=FILE"));
        } else {
            result.push(a.clone());
        }
    }
    result
}

/// How shard `r`'s sweep differs from the reference shard's: the whole run, the command line,
/// the measuring settings, the configurations.
fn sweep_differences(reference: &RunRecord, r: &RunRecord) -> Vec<String> {
    let mut d = Vec::new();
    // Differences in the shard's number are expected; in the count or the runs, they are not.
    let mut same_number = r.clone();
    if let (Some(s), Some(o)) = (&mut same_number.shard, reference.shard) {
        s.index = o.index;
    }
    d.extend(run_differences(reference, &same_number));
    let (a, b) = (
        output_names_left_out(&sweep_command(
            &reference.command[1.min(reference.command.len())..],
            None,
        )),
        output_names_left_out(&sweep_command(&r.command[1.min(r.command.len())..], None)),
    );
    if a != b {
        d.push(format!(
            "command `{}` there, `{}` here (besides --shard, --out and the names of output files)",
            a.join(" "),
            b.join(" ")
        ));
    }
    let names =
        |r: &RunRecord| -> Vec<String> { r.metrics.iter().map(|m| m.name.clone()).collect() };
    if names(reference) != names(r) {
        d.push(format!(
            "metrics {} there, {} here",
            names(reference).join(","),
            names(r).join(",")
        ));
    }
    let mut differ = |what: &str, a: String, b: String| {
        if a != b {
            d.push(format!("{what} {a} there, {b} here"));
        }
    };
    differ(
        "warm-up",
        reference.warmup.to_string(),
        r.warmup.to_string(),
    );
    differ("level", reference.level.to_string(), r.level.to_string());
    let labels =
        |r: &RunRecord| -> Vec<String> { r.configs.iter().map(|c| c.label.clone()).collect() };
    if labels(reference) != labels(r) {
        d.push(format!(
            "configurations [{}] there, [{}] here",
            labels(reference).join(", "),
            labels(r).join(", ")
        ));
        return d;
    }
    for (a, b) in reference.configs.iter().zip(&r.configs) {
        d.extend(
            config_differences(a, b)
                .into_iter()
                .map(|x| format!("'{}': {x}", a.label)),
        );
    }
    d
}

/// Check the shards (directory, record) and join them into the unsharded sweep's record,
/// whose command names `out`.
pub fn join(shards: &[(PathBuf, RunRecord)], out: &Path) -> Result<RunRecord, MergeError> {
    let Some((ref_dir, reference)) = shards.first() else {
        return Err(MergeError::NoShards);
    };
    let info = |dir: &Path, r: &RunRecord| -> Result<ShardInfo, MergeError> {
        r.shard.ok_or_else(|| MergeError::NotAShard {
            dir: dir.to_path_buf(),
            problem: "its sweep.json is a whole run's or sweep's record, not a shard's".into(),
        })
    };
    let first = info(ref_dir, reference)?;
    // Which directory holds each shard.
    let mut by_number: BTreeMap<usize, &PathBuf> = BTreeMap::new();
    for (dir, r) in shards {
        let s = info(dir, r)?;
        let differences = sweep_differences(reference, r);
        if !differences.is_empty() {
            return Err(MergeError::OtherSweep {
                dir: dir.clone(),
                reference: ref_dir.clone(),
                differences,
            });
        }
        let shard = Shard {
            index: s.index,
            count: s.count,
        };
        if let Some(other) = by_number.insert(s.index, dir) {
            return Err(MergeError::Duplicate {
                shard,
                first: other.clone(),
                second: dir.clone(),
            });
        }
        check_slice(dir, r, shard, s.runs)?;
    }
    let missing: Vec<usize> = (1..=first.count)
        .filter(|k| !by_number.contains_key(k))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            count: first.count,
            given: list(&by_number.keys().copied().collect::<Vec<_>>()),
            missing,
        });
    }
    let mut merged = reference.clone();
    merged.shard = None;
    merged.interrupted = false;
    merged.started_unix = shards
        .iter()
        .map(|(_, r)| r.started_unix)
        .min()
        .unwrap_or(0);
    merged.command = sweep_command(&reference.command, Some(&out.to_string_lossy()));
    for (c, config) in merged.configs.iter_mut().enumerate() {
        // Each repetition with the record of the shard that ran it.
        let mut reps: BTreeMap<u64, (&Repetition, &RunRecord)> = BTreeMap::new();
        for (dir, r) in shards {
            for rep in &r.configs[c].repetitions {
                let Some(index) = rep.index else {
                    return Err(MergeError::NotAShard {
                        dir: dir.clone(),
                        problem: "a repetition without an index".into(),
                    });
                };
                if reps.insert(index, (rep, r)).is_some() {
                    return Err(MergeError::Repetition {
                        label: config.label.clone(),
                        index,
                        problem: "is held by two shards".into(),
                    });
                }
            }
        }
        if let Some(index) = (0..first.runs as u64).find(|k| !reps.contains_key(k)) {
            return Err(MergeError::Repetition {
                label: config.label.clone(),
                index,
                problem: "is held by no shard".into(),
            });
        }
        let (_, first_rep) = reps[&0];
        let (_, last_rep) = reps[&(first.runs as u64 - 1)];
        config.groups = first_rep.configs[c].groups.clone();
        config.counter_sources = last_rep.configs[c].counter_sources.clone();
        config.repetitions = reps
            .values()
            .map(|(rep, _)| Repetition {
                index: None,
                ..(*rep).clone()
            })
            .collect();
        config.converged = None;
        update_summary(config, merged.level);
    }
    Ok(merged)
}

/// Refuse a shard that is interrupted, or does not hold exactly the repetitions of its slice
/// (each with its index, none with a value that cannot be right).
fn check_slice(dir: &Path, r: &RunRecord, shard: Shard, runs: usize) -> Result<(), MergeError> {
    let unfinished = |problem: String| MergeError::Unfinished {
        dir: dir.to_path_buf(),
        shard,
        problem,
    };
    if r.interrupted {
        return Err(unfinished("it was interrupted".into()));
    }
    let plan = shard
        .plan(r.configs.len(), runs)
        .map_err(|e| MergeError::NotAShard {
            dir: dir.to_path_buf(),
            problem: format!("its record names an impossible shard ({e})"),
        })?;
    for (c, wanted) in r.configs.iter().zip(&plan.indices) {
        let held: Vec<Option<u64>> = c.repetitions.iter().map(|x| x.index).collect();
        let want: Vec<Option<u64>> = wanted.iter().map(|&k| Some(k)).collect();
        if held == want {
            if let Some((i, why)) = c
                .repetitions
                .iter()
                .enumerate()
                .find_map(|(i, x)| invalid_repetition(x, &r.metrics).map(|w| (i, w)))
            {
                return Err(MergeError::NotAShard {
                    dir: dir.to_path_buf(),
                    problem: format!("repetition {} of '{}' {why}", wanted[i] + 1, c.label),
                });
            }
            continue;
        }
        let show = |v: &[Option<u64>]| -> String {
            let n: Vec<String> = v
                .iter()
                .map(|k| k.map_or("(no index)".into(), |k| (k + 1).to_string()))
                .collect();
            if n.is_empty() {
                "none".into()
            } else {
                n.join(", ")
            }
        };
        let problem = format!(
            "configuration '{}' holds repetitions {} where its slice is {}",
            c.label,
            show(&held),
            show(&want)
        );
        // Fewer, in order: the shard stopped early. Anything else: the records were changed.
        return Err(if held.len() < want.len() && want.starts_with(&held) {
            unfinished(problem)
        } else {
            MergeError::NotAShard {
                dir: dir.to_path_buf(),
                problem,
            }
        });
    }
    Ok(())
}

/// Write `record` to `out` whole or not at all: into a new directory beside it, renamed.
fn write(record: &RunRecord, out: &Path) -> Result<(), MergeError> {
    let fail = |problem: String| MergeError::Out {
        path: out.to_path_buf(),
        problem,
    };
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| fail("names no directory".into()))?;
    // A new directory with a random name, made exclusively: nothing planted at a predictable
    // name is followed or removed.
    let temp = tempfile::Builder::new()
        .prefix(&format!(".{name}.merging-"))
        .tempdir_in(parent(out))
        .map_err(|e| fail(format!("cannot make a directory beside it: {e}")))?
        .keep();
    let written = OutDir::new(&temp)
        .and_then(|dir| dir.save(record))
        .map_err(|e| fail(e.to_string()))
        .and_then(|()| {
            std::fs::rename(&temp, out).map_err(|e| {
                fail(format!(
                    "cannot rename the merged records from {} to it: {e}",
                    temp.display()
                ))
            })
        });
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{measure, RunEnd, Sinks};
    use crate::mock::{experiment, MockBackend, Step};
    use crate::settings::{Budget, Settings};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// A fresh directory, removed when dropped.
    fn temp_dir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("schedlab-merge-test-")
            .tempdir()
            .unwrap()
    }

    const MACHINES: [&str; 3] = ["a", "b", "c"];
    const RUNS: usize = 4;

    /// Each machine's value is its base plus the repetition's index, like a seeded simulation.
    fn backend() -> MockBackend {
        MockBackend::default()
            .script("a", &[Step::Indexed(10.0)])
            .script("b", &[Step::Indexed(20.0)])
            .script("c", &[Step::Indexed(30.0)])
    }

    fn settings(shard: Option<Shard>) -> Settings {
        Settings {
            budget: Budget::Fixed(RUNS),
            until_text: None,
            warmup: 0,
            level: 95.0,
            timeout: None,
            json: None,
            command: vec!["schedlab".into(), "sweep".into(), "mock".into()],
            shard,
            timeline: false,
            timeline_events: None,
            rt_app_logs: None,
            jobs: 1,
        }
    }

    /// Sweep `machines` into `dir` (a shard of it with `shard`): how it ended and the record.
    fn sweep_into(
        b: &mut MockBackend,
        machines: &[&'static str],
        shard: Option<Shard>,
        dir: &Path,
    ) -> (RunEnd, RunRecord) {
        try_sweep_into(b, machines, shard, dir).unwrap()
    }

    /// [`sweep_into`], or why it did not start.
    fn try_sweep_into(
        b: &mut MockBackend,
        machines: &[&'static str],
        shard: Option<Shard>,
        dir: &Path,
    ) -> Result<(RunEnd, RunRecord), crate::ExperimentError> {
        let out = OutDir::new(dir).unwrap();
        let sinks = Sinks {
            json: None,
            out: Some(&out),
            exports: None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        measure(
            experiment(machines),
            b,
            &settings(shard),
            &sinks,
            &stop,
            &mut |_| {},
        )
    }

    #[test]
    fn a_shard_s_directory_is_resumed_only_by_that_shard() {
        let tmp = temp_dir();
        let dirs = shards(tmp.path(), 2);
        for (shard, words) in [
            (
                Some(Shard { index: 2, count: 2 }),
                "records of shard 1/2 of 4 runs there, shard 2/2 of 4 runs here",
            ),
            (
                None,
                "records of shard 1/2 of 4 runs there, the whole sweep here",
            ),
        ] {
            let mut b = backend();
            let e = try_sweep_into(&mut b, &MACHINES, shard, &dirs[0])
                .unwrap_err()
                .to_string();
            assert!(e.contains(words), "{e}");
            assert!(b.calls.is_empty(), "nothing ran");
        }
    }

    /// Shards 1..=count of the sweep, each in `base/shard-K`.
    fn shards(base: &Path, count: usize) -> Vec<PathBuf> {
        (1..=count)
            .map(|index| {
                let dir = base.join(format!("shard-{index}"));
                let (end, _) = sweep_into(
                    &mut backend(),
                    &MACHINES,
                    Some(Shard { index, count }),
                    &dir,
                );
                assert_eq!(end, RunEnd::Complete);
                dir
            })
            .collect()
    }

    fn read(path: &Path) -> RunRecord {
        schedlab_report::export::read_json(path).unwrap()
    }

    #[test]
    fn merged_shards_equal_the_unsharded_sweep() {
        let tmp = temp_dir();
        for count in [1, 2, 5, 12] {
            let base = tmp.path().join(format!("n{count}"));
            let dirs = shards(&base, count);
            let whole = base.join("whole");
            let (_, expected) = sweep_into(&mut backend(), &MACHINES, None, &whole);
            let out = base.join("merged");
            let merged = merge(&dirs, &out).unwrap();
            assert_eq!((merged.shards, merged.repetitions), (count, 12));
            // The only field that may differ: when each started.
            let same_start = |mut r: RunRecord| {
                r.started_unix = 0;
                r
            };
            assert_eq!(
                same_start(merged.record.clone()),
                same_start(expected.clone())
            );
            for file in ["sweep.json", "a.json", "b.json", "c.json"] {
                assert_eq!(
                    same_start(read(&out.join(file))),
                    same_start(read(&whole.join(file))),
                    "{count} shards: {file}"
                );
            }
            let values: Vec<f64> = merged.record.configs[1]
                .repetitions
                .iter()
                .map(|r| r.metrics["value"])
                .collect();
            assert_eq!(values, [20.0, 21.0, 22.0, 23.0]);
        }
    }

    #[test]
    fn a_shard_runs_its_slice_with_each_repetition_s_own_index() {
        let tmp = temp_dir();
        let mut b = backend();
        let (_, rec) = sweep_into(
            &mut b,
            &MACHINES,
            Some(Shard { index: 2, count: 3 }),
            tmp.path(),
        );
        // 12 units a0 b0 c0 a1 b1 c1 a2 b2 c2 a3 b3 c3; shard 2 of 3 is units 4..8.
        assert_eq!(b.calls, [("b", 1), ("c", 1), ("a", 2), ("b", 2)]);
        let indices: Vec<Vec<Option<u64>>> = rec
            .configs
            .iter()
            .map(|c| c.repetitions.iter().map(|r| r.index).collect())
            .collect();
        assert_eq!(
            indices,
            [vec![Some(2)], vec![Some(1), Some(2)], vec![Some(1)]]
        );
        assert_eq!(
            rec.shard,
            Some(ShardInfo {
                index: 2,
                count: 3,
                runs: 4
            })
        );
    }

    #[test]
    fn an_interrupted_shard_is_refused_then_resumes_its_own_repetitions() {
        let tmp = temp_dir();
        let dirs = shards(tmp.path(), 3);
        // Shard 2 again, interrupted after its first repetition.
        std::fs::remove_dir_all(&dirs[1]).unwrap();
        let mut b = MockBackend::default()
            .script("a", &[Step::Indexed(10.0)])
            .script("b", &[Step::Indexed(20.0), Step::Interrupt])
            .script("c", &[Step::Indexed(30.0)]);
        let shard = Some(Shard { index: 2, count: 3 });
        let (end, _) = sweep_into(&mut b, &MACHINES, shard, &dirs[1]);
        assert_eq!(end, RunEnd::Interrupted);
        let out = tmp.path().join("merged");
        let e = merge(&dirs, &out).unwrap_err().to_string();
        assert!(
            e.contains("shard-2 (shard 2/3): it was interrupted")
                && e.contains("run the shard's command again"),
            "{e}"
        );
        assert!(!out.exists(), "nothing written");
        // Run again: it resumes after b1 and runs only the rest of its slice.
        let mut b = backend();
        let (end, _) = sweep_into(&mut b, &MACHINES, shard, &dirs[1]);
        assert_eq!(end, RunEnd::Complete);
        assert_eq!(b.calls, [("b", 2)]);
        assert!(merge(&dirs, &out).is_ok());
    }

    #[test]
    fn missing_duplicated_and_foreign_shards_are_refused_naming_the_directory() {
        let tmp = temp_dir();
        let dirs = shards(tmp.path(), 3);
        let out = tmp.path().join("merged");
        let e = merge(&[dirs[0].clone(), dirs[2].clone()], &out)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "shard 2 of 3 is missing (given: 1, 3); every shard 1..=3 is needed"
        );
        let e = merge(&[dirs[0].clone(), dirs[1].clone(), dirs[1].clone()], &out)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("shard-2 and ") && e.contains("are both shard 2/3"),
            "{e}"
        );
        // A shard of a sweep of other machines.
        let other = tmp.path().join("other");
        sweep_into(
            &mut backend(),
            &["a", "b"],
            Some(Shard { index: 3, count: 3 }),
            &other,
        );
        let e = merge(&[dirs[0].clone(), dirs[1].clone(), other.clone()], &out)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("other is not a shard of the same sweep as")
                && e.contains("configurations [a, b, c] there, [a, b] here"),
            "{e}"
        );
        // A whole sweep's directory.
        let whole = tmp.path().join("whole");
        sweep_into(&mut backend(), &MACHINES, None, &whole);
        let e = merge(&[whole, dirs[1].clone()], &out)
            .unwrap_err()
            .to_string();
        assert!(e.contains("whole: its sweep.json is a whole run's"), "{e}");
        // Another shard count.
        let four = shards(&tmp.path().join("four"), 4);
        let e = merge(&[dirs[0].clone(), four[1].clone()], &out)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("records of shard 1/3 of 4 runs there, shard 1/4 of 4 runs here"),
            "{e}"
        );
        assert!(!out.exists(), "nothing written");
    }

    #[test]
    fn edited_shards_are_refused() {
        let tmp = temp_dir();
        let dirs = shards(tmp.path(), 3);
        let out = tmp.path().join("merged");
        let sweep = dirs[0].join("sweep.json");
        let text = std::fs::read_to_string(&sweep).unwrap();
        // Shard 1 of 3 is a0 b0 c0 a1: claim a1 is a0 again (the same repetition twice).
        let edited = text.replacen("\"index\": 1", "\"index\": 0", 1);
        assert_ne!(edited, text);
        std::fs::write(&sweep, edited).unwrap();
        let e = merge(&dirs, &out).unwrap_err().to_string();
        assert!(
            e.contains("configuration 'a' holds repetitions 1, 1 where its slice is 1, 2"),
            "{e}"
        );
        // Another seed (or any backend setting) in another shard.
        std::fs::write(&sweep, text).unwrap();
        let sweep = dirs[1].join("sweep.json");
        let text = std::fs::read_to_string(&sweep).unwrap();
        std::fs::write(
            &sweep,
            text.replacen("\"kind\": \"mock\"", "\"kind\": \"mock\", \"seed\": 7", 1),
        )
        .unwrap();
        let e = merge(&dirs, &out).unwrap_err().to_string();
        assert!(
            e.contains("shard-2 is not a shard of the same sweep as")
                && e.contains("shard-1: seed - there, 7 here"),
            "{e}"
        );
        assert!(!out.exists());
    }

    #[test]
    fn every_configuration_file_of_a_shard_is_checked_and_a_corrupt_one_named() {
        let tmp = temp_dir();
        let dirs = shards(tmp.path(), 2);
        let out = tmp.path().join("merged");
        let file = dirs[1].join("b.json");
        let text = std::fs::read_to_string(&file).unwrap();
        let refused = |content: Option<String>| -> String {
            match content {
                Some(c) => std::fs::write(&file, c).unwrap(),
                None => std::fs::remove_file(&file).unwrap(),
            }
            let e = merge(&dirs, &out).unwrap_err().to_string();
            assert!(!out.exists(), "nothing is written: {e}");
            std::fs::write(&file, &text).unwrap();
            e
        };
        let name = file.display().to_string();
        // Truncated (a shard killed while writing it, or a damaged disk).
        let e = refused(Some(text[..text.len() / 2].to_string()));
        assert!(
            e.starts_with(&name) && e.contains("not a schedlab record"),
            "{e}"
        );
        // Missing.
        let e = refused(None);
        assert!(e.starts_with(&name) && e.contains("No such file"), "{e}");
        // A value that differs from sweep.json's (shard 2 of 2 holds b's repetitions 3 and 4).
        let changed = text.replacen("\"value\": 22.0", "\"value\": 22.5", 1);
        assert_ne!(changed, text);
        let e = refused(Some(changed));
        assert!(
            e.starts_with(&name)
                && e.contains("its repetition 3 differs from sweep.json's for 'b'"),
            "{e}"
        );
        // An impossible value.
        let e = refused(Some(text.replacen(
            "\"value\": 22.0",
            "\"value\": -22.0",
            1,
        )));
        assert!(
            e.starts_with(&name) && e.contains("repetition 3 has value = -22"),
            "{e}"
        );
        // Another configuration's record under its name.
        let a = std::fs::read_to_string(dirs[1].join("a.json")).unwrap();
        let e = refused(Some(a));
        assert!(e.contains("it holds configuration 'a', not 'b'"), "{e}");
        // Intact again, the shards merge.
        merge(&dirs, &out).unwrap();
    }

    #[test]
    fn out_must_be_new_or_empty_and_is_never_half_written() {
        let tmp = temp_dir();
        let dirs = shards(tmp.path(), 2);
        let out = tmp.path().join("merged");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("keep.txt"), "mine").unwrap();
        let e = merge(&dirs, &out).unwrap_err().to_string();
        assert!(e.contains("merged: exists and is not empty"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("keep.txt")).unwrap(),
            "mine"
        );
        std::fs::remove_file(out.join("keep.txt")).unwrap();
        // An empty directory is replaced; nothing is left beside it.
        merge(&dirs, &out).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["merged", "shard-1", "shard-2"]);
        let e = merge(&dirs, &tmp.path().join("no/such/out"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("its parent directory"), "{e}");
    }

    #[test]
    fn commands_lose_shard_and_name_out() {
        let cmd: Vec<String> =
            "schedlab sweep chat --shard 2/8 --out sw-2 --runs 3 --shard=auto/8 --out=x"
                .split(' ')
                .map(String::from)
                .collect();
        assert_eq!(
            sweep_command(&cmd, Some("sw")).join(" "),
            "schedlab sweep chat --out sw --runs 3 --out=sw"
        );
        assert_eq!(
            sweep_command(&cmd, None).join(" "),
            "schedlab sweep chat --runs 3"
        );
        assert_eq!(list(&[1, 3, 4, 5, 8, 9]), "1, 3..5, 8, 9");
    }

    /// Issue 19: shards that name their own `--timeline` (or other output) files are one sweep;
    /// a shard that records no timeline is not the same sweep as one that does.
    #[test]
    fn output_file_names_do_not_make_another_sweep() {
        let words = |s: &str| -> Vec<String> { s.split(' ').map(String::from).collect() };
        assert_eq!(
            output_names_left_out(&words(
                "sweep build --timeline a.svg --json=a.json --runs 2"
            )),
            output_names_left_out(&words(
                "sweep build --timeline b/b.svg --json=b.json --runs 2"
            ))
        );
        assert_ne!(
            output_names_left_out(&words("sweep build --timeline a.svg --runs 2")),
            output_names_left_out(&words("sweep build --runs 2"))
        );
    }
}
