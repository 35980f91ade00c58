//! A private temporary directory, removed with everything in it when dropped, and the cleanup
//! of those a killed schedlab left behind.
//!
//! A thin wrapper over the `tempfile` crate: the directory gets a name `schedlab-<pid>-XXXXXX`
//! under the system temp dir (`<pid>` the owner process, `XXXXXX` random), is created with mode
//! 0700 by a `mkdir` that fails if the name exists (so another user cannot plant it beforehand),
//! and is never reused. A `SIGKILL` skips the removal; the owner's pid in the name lets a later
//! run tell such a directory from a live run's: [`cleanup_stale`] removes those whose process is
//! gone, as `trace::cleanup_stale_instances` does for tracefs instances.

use crate::procfs::pid_alive;
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The start of every name; the owner's pid and a `-` follow.
const PREFIX: &str = "schedlab-";

/// A fresh directory `$TMPDIR/schedlab-<pid>-<random>`, mode 0700, removed on drop.
#[derive(Debug)]
pub struct TempDir {
    inner: tempfile::TempDir,
}

impl TempDir {
    /// Create a fresh directory under the system temp dir.
    pub fn new() -> io::Result<TempDir> {
        TempDir::new_in(&std::env::temp_dir())
    }

    /// Create a fresh directory under `parent`.
    pub fn new_in(parent: &Path) -> io::Result<TempDir> {
        Ok(TempDir {
            inner: tempfile::Builder::new()
                .prefix(&format!("{PREFIX}{}-", std::process::id()))
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir_in(parent)?,
        })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.inner.path()
    }
}

/// How long dropping a [`TempDir`] keeps trying to remove it while something still writes in it.
const REMOVE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(4);

impl Drop for TempDir {
    /// Remove the directory, trying again while its removal fails: a program a task ran may
    /// still be writing in it for a moment after an interrupted run (make, after its SIGTERM,
    /// ends its compilers, which may be creating files there), and one try would leave the
    /// directory behind. (The inner `tempfile::TempDir` then finds nothing left to remove.)
    fn drop(&mut self) {
        let start = std::time::Instant::now();
        while let Err(e) = std::fs::remove_dir_all(self.inner.path()) {
            if e.kind() == io::ErrorKind::NotFound || start.elapsed() > REMOVE_PATIENCE {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A temporary directory of a schedlab process that no longer exists, and what became of it.
#[derive(Debug)]
pub struct StaleDir {
    /// Its path.
    pub path: PathBuf,
    /// The process that made it.
    pub pid: i32,
    /// Bytes of the regular files it held.
    pub bytes: u64,
    /// Why it could not be removed (`None`: removed).
    pub error: Option<io::Error>,
}

/// Remove the temporary directories (`schedlab-<pid>-XXXXXX` in the system temp dir) of schedlab
/// processes that no longer exist, e.g. after a `SIGKILL`, and say which (see
/// [`cleanup_stale_in`]). Never fails; a directory that cannot be read yields nothing.
pub fn cleanup_stale() -> Vec<StaleDir> {
    cleanup_stale_in(&std::env::temp_dir())
}

/// Remove the stale temporary directories directly under `parent`: a directory (not a link)
/// named `schedlab-<pid>-<letters and digits>`, owned by this user, on the same file system as
/// `parent` (not a mount point), whose process `<pid>` no longer exists (or is a zombie). A live
/// run's directory is never touched, nor another user's, nor anything of another name
/// (tracefs mount points are `schedlab-tracefs-…`).
///
/// A process is judged by its pid in our pid namespace: a schedlab in another pid namespace
/// sharing this temp dir could have its directory taken for a stale one.
pub fn cleanup_stale_in(parent: &Path) -> Vec<StaleDir> {
    cleanup_stale_among(parent, &schedlab_names(parent))
}

/// The names in `parent` that start with `schedlab-` (temporary directories, tracefs mount
/// points, and whatever else has such a name), in one read of the directory; none if it cannot
/// be read. A temp dir may hold many thousands of entries: the callers share one read.
pub fn schedlab_names(parent: &Path) -> Vec<OsString> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.as_encoded_bytes().starts_with(PREFIX.as_bytes()))
        .collect()
}

/// [`cleanup_stale_in`] for the entries `names` of `parent` (from [`schedlab_names`]).
pub fn cleanup_stale_among(parent: &Path, names: &[OsString]) -> Vec<StaleDir> {
    let Ok(parent_meta) = std::fs::metadata(parent) else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    let uid = rustix::process::geteuid().as_raw();
    let mut found = Vec::new();
    for name in names {
        let Some(pid) = owner_pid(name.as_encoded_bytes()) else {
            continue;
        };
        let path = parent.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid || meta.dev() != parent_meta.dev() {
            continue;
        }
        if pid == me || pid_alive(pid) {
            continue;
        }
        let bytes = size_of_tree(&path);
        let error = std::fs::remove_dir_all(&path).err();
        found.push(StaleDir {
            path,
            pid,
            bytes,
            error,
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// The pid in a name `schedlab-<pid>-<letters and digits>`, if the name has that shape.
fn owner_pid(name: &[u8]) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX.as_bytes())?;
    let dash = rest.iter().position(|&b| b == b'-')?;
    let (pid, random) = (&rest[..dash], &rest[dash + 1..]);
    if pid.is_empty()
        || pid.len() > 10
        || !pid.iter().all(u8::is_ascii_digit)
        || random.is_empty()
        || !random.iter().all(u8::is_ascii_alphanumeric)
    {
        return None;
    }
    let pid: i32 = std::str::from_utf8(pid).ok()?.parse().ok()?;
    (pid > 0).then_some(pid)
}

/// Bytes of the regular files under `dir`, links not followed, unreadable parts skipped.
fn size_of_tree(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
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

    #[test]
    fn names_carry_the_owner() {
        let a = TempDir::new().unwrap();
        let name = a.path().file_name().unwrap().as_encoded_bytes().to_vec();
        assert_eq!(owner_pid(&name), Some(std::process::id() as i32));
        assert_eq!(owner_pid(b"schedlab-123-aB9xYz"), Some(123));
        assert_eq!(owner_pid(b"schedlab-tracefs-77-0"), None);
        assert_eq!(owner_pid(b"schedlab-aB9xYz"), None, "the old unowned names");
        assert_eq!(owner_pid(b"schedlab-12-"), None);
        assert_eq!(owner_pid(b"schedlab--3"), None);
        assert_eq!(owner_pid(b"schedlab-0-abc"), None);
        assert_eq!(owner_pid(b"schedlab-99999999999-abc"), None);
        assert_eq!(owner_pid(b"schedlab-12-a.b"), None);
    }

    /// A pid no process has now: a child that has been reaped.
    fn dead_pid() -> i32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        pid
    }

    #[test]
    fn removes_only_the_directories_of_dead_owners() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path();
        let dead = dead_pid();
        // What a run killed by SIGKILL leaves: its directory with a scratch file in it.
        let stale = p.join(format!("schedlab-{dead}-Ab12cd"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::create_dir(stale.join("sub")).unwrap();
        std::fs::write(stale.join("task2.dat"), vec![0u8; 4096]).unwrap();
        std::fs::write(stale.join("sub/x"), b"12345").unwrap();
        // A live run's (ours, and another live process's: pid 1), another name, a plain file
        // and a link of the stale shape: all stay.
        let ours = TempDir::new_in(p).unwrap();
        let live = p.join("schedlab-1-Zz9zz9");
        std::fs::create_dir(&live).unwrap();
        let other = p.join(format!("schedlab-tracefs-{dead}-0"));
        std::fs::create_dir(&other).unwrap();
        let file = p.join(format!("schedlab-{dead}-file00"));
        std::fs::write(&file, b"x").unwrap();
        let link = p.join(format!("schedlab-{dead}-link00"));
        std::os::unix::fs::symlink(&live, &link).unwrap();

        let removed = cleanup_stale_in(p);
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert_eq!(removed[0].path, stale);
        assert_eq!(removed[0].pid, dead);
        assert_eq!(removed[0].bytes, 4096 + 5);
        assert!(removed[0].error.is_none());
        assert!(!stale.exists(), "the stale directory stays");
        for kept in [ours.path(), &live, &other, &file, &link] {
            assert!(
                std::fs::symlink_metadata(kept).is_ok(),
                "{} removed",
                kept.display()
            );
        }
        assert!(cleanup_stale_in(p).is_empty(), "nothing left to clean");
        assert!(cleanup_stale_in(Path::new("/no/such/dir")).is_empty());
    }
}
