//! The tracefs side of [`SchedTrace`](super::SchedTrace): finding (or privately mounting) a
//! tracefs, creating and removing our instance `instances/schedlab-<pid>-<n>`, writing its
//! control files, reading its lost-event counters, and removing what dead schedlab processes
//! left behind.

use super::TraceError;
use crate::procfs::{self, pid_alive};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Prefix of our instance directories: `instances/schedlab-<pid>-<n>`.
pub(super) const INSTANCE_PREFIX: &str = "schedlab-";
/// Prefix of our private mount points: `$TMPDIR/schedlab-tracefs-<pid>-<n>`.
pub(super) const MOUNT_PREFIX: &str = "schedlab-tracefs-";
/// The tracepoints we record, all in the `sched` system.
pub(super) const EVENTS: [&str; 3] = ["sched_waking", "sched_wakeup", "sched_switch"];

static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(0);
static NEXT_MOUNT: AtomicU64 = AtomicU64::new(0);

/// A tracefs to create instances in: a mounted one, or our own private mount (detached and
/// removed on drop).
#[derive(Debug)]
pub(super) struct Tracefs {
    /// The mount point.
    pub(super) root: PathBuf,
    /// Our own mount point, if no tracefs was mounted.
    pub(super) private_mount: Option<PathBuf>,
}

impl Tracefs {
    /// A mounted tracefs, or a private mount of one.
    pub(super) fn open() -> Result<Tracefs, TraceError> {
        match find_mounted_tracefs() {
            Some(root) => Ok(Tracefs {
                root,
                private_mount: None,
            }),
            None => {
                let dir = mount_private().map_err(|e| match unreadable_tracefs() {
                    Some(path) => TraceError::Unreadable { path },
                    None => e,
                })?;
                Ok(Tracefs {
                    root: dir.clone(),
                    private_mount: Some(dir),
                })
            }
        }
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if let Some(dir) = self.private_mount.take() {
            unmount_private(&dir);
        }
    }
}

/// Our instance directory; on drop, recording is switched off, the events disabled and the
/// directory removed.
#[derive(Debug)]
pub(super) struct Instance {
    path: PathBuf,
}

impl Instance {
    /// Create `instances/schedlab-<pid>-<n>` under `root` with the first free `n`.
    pub(super) fn create(root: &Path) -> Result<Instance, TraceError> {
        let instances = root.join("instances");
        if !instances.is_dir() {
            return Err(TraceError::NoInstances {
                root: root.to_path_buf(),
            });
        }
        let pid = std::process::id();
        loop {
            let n = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
            let p = instances.join(format!("{INSTANCE_PREFIX}{pid}-{n}"));
            match fs::create_dir(&p) {
                Ok(()) => return Ok(Instance { path: p }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) if is_permission(&source) => {
                    return Err(TraceError::Permission {
                        doing: "creating instance in",
                        path: instances,
                        source,
                    })
                }
                Err(source) => return Err(TraceError::CreateInstance { path: p, source }),
            }
        }
    }

    /// The instance's directory.
    #[cfg(test)]
    pub(super) fn dir(&self) -> &Path {
        &self.path
    }

    /// `instance/rel`.
    pub(super) fn path(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    /// Write `value` to the instance's file `rel` in one write(2).
    pub(super) fn write(&self, rel: &str, value: &str) -> Result<(), TraceError> {
        let path = self.path(rel);
        write_file(&path, value).map_err(|source| {
            if is_permission(&source) {
                TraceError::Permission {
                    doing: "writing",
                    path,
                    source,
                }
            } else {
                TraceError::Write {
                    value: value.to_string(),
                    path,
                    source,
                }
            }
        })
    }

    /// Set a new instance up for recording: tracing off (a new instance starts with it on, but
    /// no event enabled), `kb` of buffer per CPU, the oldest events kept when it fills (the
    /// reader's state is built from the start), and no irq/preempt flags column (fewer bytes to
    /// format and parse; optional, older kernels lack it).
    pub(super) fn prepare_buffer(&self, kb: usize) -> Result<(), TraceError> {
        self.write("tracing_on", "0")?;
        self.write("buffer_size_kb", &kb.to_string())
            .map_err(|e| TraceError::BufferSize {
                kb,
                source: Box::new(e),
            })?;
        self.write("options/overwrite", "0")?;
        let _ = self.write("options/irq-info", "0");
        Ok(())
    }

    /// Empty the instance's ring buffer (open `trace` with O_TRUNC).
    pub(super) fn clear_buffer(&self) -> Result<(), TraceError> {
        let trace = self.path("trace");
        fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&trace)
            .map(drop)
            .map_err(|source| TraceError::Io {
                doing: "cannot clear",
                path: trace,
                source,
            })
    }

    /// Sum of the lost-event counters over the instance's CPUs.
    pub(super) fn read_lost(&self) -> Result<u64, TraceError> {
        let dir = self.path("per_cpu");
        let entries = fs::read_dir(&dir).map_err(|source| TraceError::Io {
            doing: "cannot list",
            path: dir.clone(),
            source,
        })?;
        let mut lost = 0u64;
        for entry in entries.flatten() {
            if !entry.file_name().as_bytes().starts_with(b"cpu") {
                continue;
            }
            if let Ok(stats) = fs::read_to_string(entry.path().join("stats")) {
                lost = lost.saturating_add(parse_lost(&stats));
            }
        }
        Ok(lost)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = write_file(&self.path("tracing_on"), "0");
        for event in EVENTS {
            let _ = write_file(&self.path(&format!("events/sched/{event}/enable")), "0");
        }
        remove_instance(&self.path);
    }
}

/// Remove `instances/schedlab-<pid>-<n>` directories (and private tracefs mounts
/// `$TMPDIR/schedlab-tracefs-<pid>-<n>`) left by schedlab processes that no longer exist, e.g.
/// after a `SIGKILL`. Returns how many were removed. Never fails; needs root to do anything.
///
/// A process is judged by its pid in our pid namespace, so an instance made by a schedlab
/// running in another pid namespace could be mistaken for a stale one.
pub fn cleanup_stale_instances() -> usize {
    let stale = cleanup_stale_mounts();
    let mut removed = stale.mounts + stale.instances;
    match find_mounted_tracefs() {
        Some(root) => removed += cleanup_stale_in(&root),
        None => {
            // Instances outlive mounts: look through a mount of our own.
            if let Ok(dir) = mount_private() {
                removed += cleanup_stale_in(&dir);
                unmount_private(&dir);
            }
        }
    }
    removed
}

/// The comm prefix goes into a filter string `comm ~ "PREFIX*"`: keep it to plain characters.
pub(super) fn validate_prefix(prefix: &str) -> Result<(), TraceError> {
    let ok_char =
        |c: char| c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '*' | '?' | '[' | ']');
    if prefix.is_empty() || prefix.len() > 15 || !prefix.chars().all(ok_char) {
        return Err(TraceError::BadPrefix(prefix.to_string()));
    }
    Ok(())
}

fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
}

/// Open an existing file for writing (no O_CREAT, no O_TRUNC) and write `value` in one call.
fn write_file(path: &Path, value: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path)?;
    let n = f.write(value.as_bytes())?;
    if n != value.len() {
        return Err(io::Error::other(format!(
            "short write ({n} of {} bytes)",
            value.len()
        )));
    }
    Ok(())
}

/// The pid in a name `<prefix><pid>-<n>`, if the name has that shape.
pub(super) fn owner_pid(name: &[u8], prefix: &str) -> Option<i32> {
    let rest = name.strip_prefix(prefix.as_bytes())?;
    let dash = rest.iter().position(|&b| b == b'-')?;
    let (pid, n) = (&rest[..dash], &rest[dash + 1..]);
    if n.is_empty() || !n.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let (pid, used) = super::parse::parse_int(pid)?;
    (used == rest[..dash].len() && pid > 0).then_some(pid as i32)
}

/// Mount points of tracefs mounts listed in /proc/mounts.
fn tracefs_mounts() -> Vec<PathBuf> {
    procfs::mounts()
        .into_iter()
        .filter(|m| m.fstype == "tracefs")
        .map(|m| m.dir)
        .collect()
}

/// A usable mounted tracefs, preferring the standard places; never another schedlab's private
/// mount (it may vanish under us).
fn find_mounted_tracefs() -> Option<PathBuf> {
    find_mounted_tracefs_among(tracefs_mounts())
}

/// [`find_mounted_tracefs`] among the tracefs mount points `mounts`.
fn find_mounted_tracefs_among(mounts: Vec<PathBuf>) -> Option<PathBuf> {
    let mut mounts: Vec<PathBuf> = mounts
        .into_iter()
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.as_bytes().starts_with(MOUNT_PREFIX.as_bytes()))
        })
        .collect();
    if mounts.is_empty() {
        // /proc/mounts unreadable or lying: trust a populated standard directory.
        mounts.push(PathBuf::from("/sys/kernel/tracing"));
    }
    let rank = |p: &PathBuf| match p.to_str() {
        Some("/sys/kernel/tracing") => 0,
        Some("/sys/kernel/debug/tracing") => 1,
        _ => 2,
    };
    mounts.sort_by_key(rank);
    mounts.into_iter().find(|p| p.join("instances").is_dir())
}

/// A mounted tracefs we may not look into, to explain a failure.
fn unreadable_tracefs() -> Option<PathBuf> {
    tracefs_mounts()
        .into_iter()
        .find(|p| fs::read_dir(p).is_err_and(|e| is_permission(&e)))
}

/// Mount tracefs on a fresh `$TMPDIR/schedlab-tracefs-<pid>-<n>`.
fn mount_private() -> Result<PathBuf, TraceError> {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    let dir = loop {
        let n = NEXT_MOUNT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{MOUNT_PREFIX}{pid}-{n}"));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => break dir,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(TraceError::MountPoint { dir, source }),
        }
    };
    let mounted = rustix::mount::mount(
        "nodev",
        &dir,
        "tracefs",
        rustix::mount::MountFlags::empty(),
        None,
    );
    if let Err(e) = mounted {
        let source = io::Error::from(e);
        let _ = fs::remove_dir(&dir);
        return Err(match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => TraceError::MountDenied(source),
            Some(libc::ENODEV) => TraceError::NoTracefs(source),
            _ => TraceError::MountFailed { dir, source },
        });
    }
    Ok(dir)
}

/// Detach our mount and remove its directory.
fn unmount_private(dir: &Path) {
    let _ = rustix::mount::unmount(dir, rustix::mount::UnmountFlags::DETACH);
    let _ = fs::remove_dir(dir);
}

/// rmdir an instance, retrying while the kernel says it is busy (a reader still has a file open).
fn remove_instance(inst: &Path) -> bool {
    for attempt in 0..20 {
        match fs::remove_dir(inst) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 19 => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
    false
}

/// Remove stale instances under a tracefs root.
pub(super) fn cleanup_stale_in(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root.join("instances")) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        match owner_pid(name.as_bytes(), INSTANCE_PREFIX) {
            Some(pid) if !pid_alive(pid) => {
                let inst = entry.path();
                let _ = write_file(&inst.join("tracing_on"), "0");
                removed += usize::from(remove_instance(&inst));
            }
            _ => {}
        }
    }
    removed
}

/// What a cleanup of tracefs leftovers removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Private tracefs mounts (and bare mount directories) of dead schedlab processes.
    pub mounts: usize,
    /// Instances `instances/schedlab-<pid>-<n>` of dead schedlab processes.
    pub instances: usize,
}

/// Whether `p` is named `schedlab-tracefs-<pid>-<n>` and process `<pid>` is gone.
fn dead_mount_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| owner_pid(n.as_bytes(), MOUNT_PREFIX))
        .is_some_and(|pid| !pid_alive(pid))
}

/// Detach and remove private mounts (and bare mount directories) of dead schedlab processes,
/// after removing, through such a mount, the stale instances it shows: a run killed where no
/// tracefs was mounted left both, and once its mount is gone its instance could only be
/// reached through a new mount.
pub(super) fn cleanup_stale_mounts() -> Removed {
    let temp = std::env::temp_dir();
    let mut removed = cleanup_stale_mounts_among(&tracefs_mounts());
    removed.mounts += remove_bare_mount_dirs(&temp, &crate::tempdir::schedlab_names(&temp));
    removed
}

/// Detach the private mounts of dead processes among the tracefs mount points `mounts`,
/// removing the stale instances seen through each first.
fn cleanup_stale_mounts_among(mounts: &[PathBuf]) -> Removed {
    let mut removed = Removed::default();
    for dir in mounts {
        if dead_mount_name(dir) {
            removed.instances += cleanup_stale_in(dir);
            unmount_private(dir);
            removed.mounts += usize::from(!dir.exists());
        }
    }
    removed
}

/// rmdir the mount directories `schedlab-tracefs-<pid>-<n>` among `names` (entries of `parent`)
/// of dead processes that this user owns: a run killed between making its mount point and
/// mounting, or after detaching. A directory that is not empty, or still a mount, stays.
fn remove_bare_mount_dirs(parent: &Path, names: &[std::ffi::OsString]) -> usize {
    let uid = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for name in names {
        let p = parent.join(name);
        if dead_mount_name(&p)
            && fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir() && m.uid() == uid)
            && fs::remove_dir(&p).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Remove what killed schedlab processes left in tracefs, without mounting anything: their
/// private mounts (with the stale instances seen through them), the stale instances of the
/// mounted tracefs, and bare mount directories among `names`, the `schedlab-…` entries of the
/// temp dir `temp` (read once by the caller, for the temporary directories too). Cheap enough
/// for every command: one read of the mount table and, as root, of the instances directory.
/// Unmounting and removing instances need root; without it only this user's bare mount
/// directories are removed. An instance left where no tracefs is mounted, whose private mount
/// is gone too, waits for the next real run, which mounts one ([`cleanup_stale_instances`]).
pub fn cleanup_stale_tracefs(temp: &Path, names: &[std::ffi::OsString]) -> Removed {
    let bare = remove_bare_mount_dirs(temp, names);
    if !rustix::process::geteuid().is_root() {
        return Removed {
            mounts: bare,
            instances: 0,
        };
    }
    let mounts = tracefs_mounts();
    let mut removed = cleanup_stale_mounts_among(&mounts);
    removed.mounts += bare;
    if let Some(root) = find_mounted_tracefs_among(mounts) {
        removed.instances += cleanup_stale_in(&root);
    }
    removed
}

/// Sum of the `overrun`, `commit overrun` and `dropped events` lines of a `per_cpu/cpuN/stats`.
fn parse_lost(stats: &str) -> u64 {
    let mut lost = 0u64;
    for line in stats.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if matches!(key.trim(), "overrun" | "commit overrun" | "dropped events") {
            lost = lost.saturating_add(value.trim().parse::<u64>().unwrap_or(0));
        }
    }
    lost
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_counters_and_names() {
        let stats = "entries: 10\noverrun: 3\ncommit overrun: 1\nbytes: 99\noldest event ts:     0.000000\nnow ts:   413.414548\ndropped events: 5\nread events: 7\n";
        assert_eq!(parse_lost(stats), 9);
        assert_eq!(owner_pid(b"schedlab-123-4", INSTANCE_PREFIX), Some(123));
        assert_eq!(owner_pid(b"schedlab-tracefs-77-0", MOUNT_PREFIX), Some(77));
        assert_eq!(owner_pid(b"schedlab-tracefs-77-0", INSTANCE_PREFIX), None);
        assert_eq!(owner_pid(b"schedlab-12x-4", INSTANCE_PREFIX), None);
        assert_eq!(owner_pid(b"schedlab-12-", INSTANCE_PREFIX), None);
        assert_eq!(owner_pid(b"schedlab--3-1", INSTANCE_PREFIX), None);
        assert!(validate_prefix("sl-").is_ok());
        assert!(validate_prefix("").is_err());
        assert!(validate_prefix("a\"b").is_err());
        assert!(validate_prefix("a*").is_err());
    }

    #[test]
    fn judges_processes_alive_or_dead() {
        assert!(pid_alive(std::process::id() as i32));
        assert!(pid_alive(0), "pid 0 is not ours to judge");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Exited but not reaped: a zombie counts as dead.
        while procfs::process_state(pid) != Some(b'Z') {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!pid_alive(pid), "a zombie holds nothing");
        child.wait().unwrap();
        assert!(!pid_alive(pid), "a reaped process is gone");
    }
}
