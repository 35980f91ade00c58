//! Where a sweep keeps its records (`--out DIR`): `sweep.json` and one record per
//! configuration, rewritten after every repetition; a sweep started again with the same
//! directory resumes each configuration from the repetitions its record holds.

use crate::error::ExperimentError;
use schedlab_workload::record::{ConfigResult, Repetition, RunRecord};
use std::path::{Path, PathBuf};

/// A sweep's record directory.
pub struct OutDir {
    dir: PathBuf,
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

    /// The repetitions a previous, interrupted sweep left for this configuration, if its record
    /// describes the same workload, parameters and knobs.
    pub fn resume(&self, record: &RunRecord, config: &ConfigResult) -> Vec<Repetition> {
        let Ok(old) = schedlab_report::export::read_json(&self.config_path(&config.label)) else {
            return Vec::new();
        };
        match old.configs.first() {
            Some(c)
                if old.workload == record.workload
                    && c.params == config.params
                    && c.groups
                        .iter()
                        .map(|g| &g.knobs)
                        .eq(config.groups.iter().map(|g| &g.knobs)) =>
            {
                c.repetitions.clone()
            }
            _ => Vec::new(),
        }
    }

    /// Write the whole sweep and each configuration's own record.
    pub fn save(&self, record: &RunRecord) -> Result<(), ExperimentError> {
        let write = |r: &RunRecord, path: PathBuf| {
            schedlab_report::export::write_json(r, &path)
                .map_err(|source| ExperimentError::Write { path, source })
        };
        write(record, self.dir.join("sweep.json"))?;
        for c in &record.configs {
            let mut one = record.clone();
            one.configs = vec![c.clone()];
            write(&one, self.config_path(&c.label))?;
        }
        Ok(())
    }
}
