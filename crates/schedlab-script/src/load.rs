//! Reading a workload file from disk: the grammar by its extension, a size bound, then the
//! reader and the compiler.

use crate::error::FileError;
use crate::script::Script;
use std::path::Path;

/// The largest workload file read (a file this size is a mistake, not a workload).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// Read, check and compile the workload file at `path`: `.toml` is schedlab's step language,
/// `.json` rt-app's grammar.
pub fn load(path: &Path) -> Result<Script, FileError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext != "toml" && ext != "json" {
        return Err(FileError::whole(
            path,
            "is not a workload file; use FILE.toml (schedlab's workload file) or FILE.json (rt-app's grammar)",
        ));
    }
    let meta =
        std::fs::metadata(path).map_err(|e| FileError::whole(path, format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(FileError::whole(path, "is not a file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(FileError::whole(
            path,
            format!(
                "is {} bytes; accepted: at most {MAX_FILE_BYTES}",
                meta.len()
            ),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| FileError::whole(path, format!("cannot read: {e}")))?;
    let def = if ext == "toml" {
        crate::toml_file::read(path, &text)?
    } else {
        crate::rtapp::read(path, &text)?
    };
    Script::new(def)
}
