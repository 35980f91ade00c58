//! Writing result records to files, atomically (write to a temporary name, then rename), so an
//! interrupted run never leaves a half-written record.

use schedlab_workload::record::{RecordError, RunRecord};
use std::io;
use std::path::{Path, PathBuf};

/// Write `record` as JSON to `path`.
pub fn write_json(record: &RunRecord, path: &Path) -> io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, record.to_json())?;
    std::fs::rename(&tmp, path)
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
pub fn read_json(path: &Path) -> Result<RunRecord, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    RunRecord::from_json(&text).map_err(|source| ReadError::Record {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
