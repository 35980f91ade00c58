//! What killed schedlab runs leave behind, removed by every command that starts.
//!
//! A real run killed by `SIGKILL` cannot remove its temporary directory
//! ([`crate::tempdir`]), its tracefs instance or its private tracefs mount ([`crate::trace`]).
//! Each carries its owner's pid in its name, so [`cleanup`] — called by the binary before any
//! command, simulated runs, `check`, `compare` and `list` included — removes those whose owner
//! process no longer exists. Only this user's temporary directories are touched, never a live
//! run's; the tracefs part needs root and is skipped without it. Nothing is mounted, so the
//! cost is one read of the temp dir and of the mount table and (as root) of the tracefs
//! instances directory.

use crate::tempdir::{self, StaleDir};
use crate::trace::{self, Removed};
use std::path::Path;

/// What [`cleanup`] removed (or failed to remove).
#[derive(Debug, Default)]
pub struct Leftovers {
    /// Temporary directories of dead schedlab processes, each with what became of it.
    pub dirs: Vec<StaleDir>,
    /// Private tracefs mounts and tracefs instances of dead schedlab processes removed.
    pub tracefs: Removed,
}

impl Leftovers {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.tracefs == Removed::default()
    }
}

/// Remove the leftovers of dead schedlab processes (see the module comment). Never fails: what
/// cannot be read is skipped, and a directory that cannot be removed is reported in
/// [`Leftovers::dirs`].
pub fn cleanup() -> Leftovers {
    cleanup_in(&std::env::temp_dir())
}

/// [`cleanup`] with `temp` as the temp dir (temporary directories and private mount points
/// are looked for there; private mounts and instances anywhere).
pub fn cleanup_in(temp: &Path) -> Leftovers {
    // One read of a directory that may be large, for both kinds of entries.
    let names = tempdir::schedlab_names(temp);
    Leftovers {
        dirs: tempdir::cleanup_stale_among(temp, &names),
        tracefs: trace::cleanup_stale_tracefs(temp, &names),
    }
}
