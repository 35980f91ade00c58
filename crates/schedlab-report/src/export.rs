//! Writing result records through [`crate::output`] (atomically, so an interrupted run never
//! leaves a half-written record): the record itself as JSON, and its summary in other formats
//! through one [`Exporter`] trait (hyperfine's exporters: one module per format,
//! [`crate::export_csv`] and [`crate::markdown`]), listed in an [`Exports`].

use crate::output::{self, Stage};
use crate::sweep::key_value;
use schedlab_workload::record::{Better, RecordError, RunRecord};
use std::io;
use std::path::{Path, PathBuf};

/// A format the summary of a record can be written in.
pub trait Exporter {
    /// The file's whole contents for `record`.
    fn serialize(&self, record: &RunRecord) -> io::Result<Vec<u8>>;
}

/// The files a run writes its summary to, each in its format; rewritten whenever the record is
/// saved (after every repetition, as `--json` is).
#[derive(Default)]
pub struct Exports {
    files: Vec<(PathBuf, Box<dyn Exporter>)>,
}

impl Exports {
    /// Write `exporter`'s format to `path` too.
    pub fn add(&mut self, path: PathBuf, exporter: Box<dyn Exporter>) {
        self.files.push((path, exporter));
    }

    /// Whether there is no file to write.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Write every file at `stage` (each is tried even if another fails); the first failure,
    /// with its path.
    pub fn write(&self, record: &RunRecord, stage: Stage) -> Result<(), (PathBuf, io::Error)> {
        let mut first = Ok(());
        for (path, exporter) in &self.files {
            let written = exporter
                .serialize(record)
                .and_then(|bytes| output::write_stage(path, &bytes, stage));
            if let (Err(e), Ok(())) = (written, &first) {
                first = Err((path.clone(), e));
            }
        }
        first
    }
}

/// One row of an exported summary: one metric of one configuration, with the same numbers as
/// the text summary's metric table ([`crate::text::metrics_table`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    /// The configuration's label (empty for a run of one configuration).
    pub configuration: String,
    /// The value of each key that names configurations (a sweep's varied keys), in order.
    pub keys: Vec<String>,
    /// The metric.
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// Repetitions summarized.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Half-width of the confidence interval of the mean at the record's level (none for N < 2).
    pub ci_half_width: Option<f64>,
    /// Sample standard deviation (none where it is not a number).
    pub sd: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
    /// Harmonic mean, for higher-is-better metrics of 2 or more repetitions (as the text
    /// summary shows it).
    pub hmean: Option<f64>,
}

/// The rows of `record`'s summary: per configuration, per metric of the record (in its order),
/// those with a summary; `keys` are the columns that name the configurations.
pub fn summary_rows(record: &RunRecord, keys: &[String]) -> Vec<SummaryRow> {
    let finite = |v: f64| v.is_finite().then_some(v);
    let mut rows = Vec::new();
    for c in &record.configs {
        for m in &record.metrics {
            let Some(s) = c.summary.get(&m.name) else {
                continue;
            };
            let iv = c.intervals.get(&m.name);
            rows.push(SummaryRow {
                configuration: c.label.clone(),
                keys: keys.iter().map(|k| key_value(c, k)).collect(),
                metric: m.name.clone(),
                unit: m.unit.clone(),
                n: s.n,
                mean: s.mean,
                ci_half_width: iv.and_then(|i| i.half_width).and_then(finite),
                sd: finite(s.sd),
                min: s.min,
                median: s.median,
                max: s.max,
                hmean: match (m.better, iv.and_then(|i| i.harmonic_mean)) {
                    (Better::Higher, Some(h)) if s.n > 1 => finite(h),
                    _ => None,
                },
            });
        }
    }
    rows
}

/// Write `record` as JSON to output `path` at `stage` (see [`output::write_stage`]).
pub fn write_json(record: &RunRecord, path: &Path, stage: Stage) -> io::Result<()> {
    output::write_stage(path, record.to_json().as_bytes(), stage)
}

/// Why a record file cannot be read; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is not a record this version reads.
    #[error("{}: {source}", path.display())]
    Record {
        /// The file.
        path: PathBuf,
        /// Why.
        source: RecordError,
    },
}

/// Read a record written by [`write_json`].
///
/// The file is read through a buffer straight into the record ([`RunRecord::from_reader`]),
/// so memory follows what the record holds rather than the file's size.
pub fn read_json(path: &Path) -> Result<RunRecord, ReadError> {
    let cannot = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    if std::fs::metadata(path).map_err(cannot)?.is_dir() {
        // EISDIR, as reading the whole file said (opening a directory succeeds).
        return Err(cannot(io::Error::from_raw_os_error(21)));
    }
    let first = std::fs::File::open(path).map_err(cannot)?;
    let mut first = Some(first);
    RunRecord::from_reader(|| {
        let f = match first.take() {
            Some(f) => f,
            None => std::fs::File::open(path)?,
        };
        Ok(io::BufReader::with_capacity(1 << 16, f))
    })
    .map_err(|source| ReadError::Record {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use schedlab_workload::record::{ConfigResult, Interval, MetricDef};
    use std::collections::BTreeMap;

    /// A record of two configurations, `threads=1` (one repetition of `time`) and
    /// `threads=2, odd` (two of `time` and of `rate`, a unit with a comma).
    pub(crate) fn two_configurations() -> RunRecord {
        let metric = |name: &str, unit: &str, better| MetricDef {
            name: name.into(),
            unit: unit.into(),
            better,
            description: String::new(),
        };
        let config = |label: &str, threads: &str, values: &[(&str, &[f64])]| {
            let mut c = ConfigResult {
                label: label.into(),
                params: BTreeMap::from([("threads".to_string(), threads.to_string())]),
                ..ConfigResult::default()
            };
            for (name, vs) in values {
                let d = schedlab_stats::describe(vs, 95.0);
                c.summary.insert(name.to_string(), d.summary);
                let finite = |v: f64| v.is_finite().then_some(v);
                c.intervals.insert(
                    name.to_string(),
                    Interval {
                        half_width: finite(d.ci_half_width),
                        harmonic_mean: finite(d.harmonic_mean),
                        outliers: d.outliers,
                    },
                );
            }
            c
        };
        RunRecord {
            workload: "test".into(),
            level: 95.0,
            metrics: vec![
                metric("time", "s", Better::Lower),
                metric("rate", "msg/s, total", Better::Higher),
            ],
            configs: vec![
                config("threads=1", "1", &[("time", &[1.0000001])]),
                config(
                    "threads=2, odd",
                    "2",
                    &[("time", &[2.0, 4.0]), ("rate", &[100.0, 200.0])],
                ),
            ],
            ..RunRecord::default()
        }
    }

    #[test]
    fn rows_follow_the_records_metrics_and_leave_out_what_is_undefined() {
        let rows = summary_rows(&two_configurations(), &["threads".to_string()]);
        let names: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.configuration.as_str(), r.metric.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("threads=1", "time"),
                ("threads=2, odd", "time"),
                ("threads=2, odd", "rate")
            ]
        );
        assert_eq!(rows[0].keys, ["1"]);
        // One repetition: no interval; a rate's harmonic mean needs two too.
        assert_eq!(
            (rows[0].ci_half_width, rows[0].sd, rows[0].hmean),
            (None, Some(0.0), None)
        );
        // A lower-is-better metric has no harmonic mean; a rate has.
        assert_eq!(rows[1].hmean, None);
        assert_eq!(rows[2].hmean, Some(400.0 / 3.0));
        assert!(rows[2].ci_half_width.unwrap() > 0.0);
    }

    #[test]
    fn exports_are_written_whole_and_a_failure_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("a.csv");
        let bad = dir.path().join("missing").join("b.md");
        let mut exports = Exports::default();
        exports.add(
            bad.clone(),
            Box::new(crate::markdown::MarkdownExporter { keys: vec![] }),
        );
        exports.add(
            good.clone(),
            Box::new(crate::export_csv::CsvExporter { keys: vec![] }),
        );
        let (path, _) = exports
            .write(&two_configurations(), Stage::Last)
            .unwrap_err();
        assert_eq!(path, bad);
        // The other file is still written, and no temporary file is left.
        assert!(std::fs::read_to_string(&good)
            .unwrap()
            .starts_with("configuration,metric,"));
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn read_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        let e = read_json(&missing).unwrap_err();
        assert!(matches!(e, ReadError::Io { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("{}: ", missing.display())),
            "{e}"
        );
        let other = dir.path().join("other.json");
        std::fs::write(&other, "{\"schema\": 99}").unwrap();
        let e = read_json(&other).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::Record {
                    source: RecordError::Schema(99),
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!("{}: {}", other.display(), RecordError::Schema(99))
        );
    }
}
