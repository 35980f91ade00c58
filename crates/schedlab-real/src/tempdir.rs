//! A private temporary directory, removed with everything in it when dropped.
//!
//! A thin wrapper over the `tempfile` crate: the directory gets an unpredictable name
//! (`schedlab-XXXXXX` under the system temp dir), is created with mode 0700 by a `mkdir` that
//! fails if the name exists (so another user cannot plant it beforehand), and is never reused.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A fresh directory `$TMPDIR/schedlab-<random>`, mode 0700, removed on drop.
#[derive(Debug)]
pub struct TempDir {
    inner: tempfile::TempDir,
}

impl TempDir {
    /// Create a fresh directory under the system temp dir.
    pub fn new() -> io::Result<TempDir> {
        Ok(TempDir {
            inner: tempfile::Builder::new()
                .prefix("schedlab-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir()?,
        })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.inner.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_private_and_removed() {
        let a = TempDir::new().unwrap();
        let b = TempDir::new().unwrap();
        assert_ne!(
            a.path(),
            b.path(),
            "two directories must never share a name"
        );
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "only the owner may enter");
        std::fs::write(a.path().join("f"), b"x").unwrap();
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists(), "{} left behind", p.display());
    }
}
