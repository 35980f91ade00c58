//! Writing result records to files, atomically (write to a temporary name, then rename), so an
//! interrupted run never leaves a half-written record.

use schedlab_workload::record::RunRecord;
use std::io;
use std::path::Path;

/// Write `record` as JSON to `path`.
pub fn write_json(record: &RunRecord, path: &Path) -> io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, record.to_json())?;
    std::fs::rename(&tmp, path)
}

/// Read a record written by [`write_json`].
pub fn read_json(path: &Path) -> Result<RunRecord, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    RunRecord::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}
