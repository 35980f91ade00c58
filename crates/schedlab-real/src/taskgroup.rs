//! rt-app's `taskgroup`: CPU cgroups created for the run, and threads moved into them.
//!
//! Follows rt-app's `src/rt-app_taskgroups.c` (github.com/scheduler-tools/rt-app): before the
//! use case starts, `add_cgroups` creates one directory of the cpu controller's hierarchy per
//! taskgroup the file names (`/tg1/tg11` makes `tg1` and `tg1/tg11`); a thread is moved into
//! its task's taskgroup when it starts and into a phase's when that phase starts
//! (`set_thread_taskgroup`, writing its tid to the group's `tasks`); `/` is the root taskgroup;
//! `remove_cgroups` removes, at the end, the directories it created, deepest first.
//!
//! Where rt-app works from the hierarchy's root, schedlab keeps to the cgroup it runs in: every
//! taskgroup is a directory below a private one, `schedlab-PID-taskgroups`, created in that
//! cgroup, and `/` is the cgroup the run's other threads are in. No other cgroup's settings
//! are written; the directories get the controller's defaults, as rt-app's do. They are
//! removed when the [`Taskgroups`] is dropped — the end of the run, or an interrupted one —
//! and a later run removes those of a schedlab process that was killed ([`Taskgroups::create`]).
//!
//! - **cgroup v1** (a `cgroup` mount with the `cpu` option): the private directory is created
//!   in the cpu hierarchy's cgroup of this process; threads move with `tasks`; `/` is the
//!   process's own cgroup.
//! - **cgroup v2** (`cgroup2`, the `cpu` controller enabled for the children of this process's
//!   cgroup): threads of one process may sit in different cgroups only inside a threaded
//!   subtree, so the process is moved into the private directory (its domain), each taskgroup
//!   is made `threaded`, the cpu controller enabled in the private directories'
//!   `cgroup.subtree_control`, and threads move with `cgroup.threads`; `/` is the private
//!   directory itself, where the process's other threads are. At the end the process moves
//!   back to its own cgroup.
//!
//! Where both are mounted, the v1 hierarchy with the cpu controller is taken, as rt-app takes
//! it; the environment variable [`HIERARCHY_VAR`] (`v1` or `v2`) chooses one. A v2 hierarchy
//! chosen so whose cgroups have no cpu controller (the controller bound to a v1 hierarchy, or
//! not built) still gets the whole mechanism — the private directory, the threaded groups, the
//! moves at phase boundaries, the removal — but the groups weigh nothing: the run is scheduled
//! as without taskgroups, and [`Hierarchy::cpu`] says so for the run to report.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What cannot be prepared, named by path and with what it needs.
#[derive(Debug, thiserror::Error)]
pub enum TaskgroupError {
    /// No cgroup hierarchy has the cpu controller where this process can use it.
    #[error("taskgroups need the cgroup cpu controller: {0}")]
    NoController(String),
    /// [`HIERARCHY_VAR`] has a value it does not accept.
    #[error("{0}")]
    BadChoice(String),
    /// A directory, or a file in one, could not be written.
    #[error("cannot {what} {}: {source}{}", .path.display(), hint(.source))]
    Write {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A thread could not be moved into its taskgroup.
    #[error("taskgroup {name}: {detail}")]
    Attach {
        /// The taskgroup.
        name: String,
        /// Why.
        detail: String,
    },
}

/// What a permission error needs, in words.
fn hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM | libc::EROFS) => {
            " (creating and joining CPU cgroups needs root, or CAP_SYS_ADMIN over a writable cgroup filesystem, or a cgroup delegated to this user)"
        }
        _ => "",
    }
}

/// Which cgroup interface the cpu controller is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// A v1 hierarchy with the cpu controller.
    V1,
    /// The unified (v2) hierarchy.
    V2,
}

/// Where the taskgroups go for this process: the interface, this process's cgroup directory
/// in it, and whether the cpu controller is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// v1 or v2.
    pub version: Version,
    /// The directory of this process's cgroup.
    pub own: PathBuf,
    /// Whether the groups made there have the cpu controller (always on v1, where the
    /// hierarchy is the cpu controller's). `false` only for a v2 hierarchy chosen with
    /// [`HIERARCHY_VAR`] whose cgroups have no cpu controller: threads are grouped, and the
    /// groups change nothing in how they are scheduled.
    pub cpu: bool,
}

/// The environment variable that chooses the hierarchy: `v1` or `v2`; unset or empty, the
/// default (a v1 hierarchy with the cpu controller if there is one, else v2).
///
/// An environment variable rather than an option: which hierarchies a machine mounts, and
/// which one its administrator delegates, is a fact of the machine, not of a workload or a
/// run's configuration, and it reaches every command that runs a workload (`run`, `sweep`,
/// `validate`) alike. The hierarchy used is in each record (`taskgroups` in the backend's
/// details).
pub const HIERARCHY_VAR: &str = "SCHEDLAB_TASKGROUP_CGROUP";

/// Which hierarchy to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A v1 hierarchy with the cpu controller if there is one (as rt-app), else v2.
    Default,
    /// Only a v1 hierarchy with the cpu controller.
    V1,
    /// Only the v2 hierarchy, with or without its cpu controller.
    V2,
}

impl Choice {
    /// The choice [`HIERARCHY_VAR`] makes; a value it does not accept is an error naming it.
    pub fn from_env() -> Result<Choice, TaskgroupError> {
        match std::env::var_os(HIERARCHY_VAR) {
            None => Ok(Choice::Default),
            Some(v) => Choice::parse(&v.to_string_lossy()),
        }
    }

    /// `v1`, `v2` or empty (the default); anything else is an error naming the value.
    pub fn parse(value: &str) -> Result<Choice, TaskgroupError> {
        match value {
            "" => Ok(Choice::Default),
            "v1" => Ok(Choice::V1),
            "v2" => Ok(Choice::V2),
            other => Err(TaskgroupError::BadChoice(format!(
                "{HIERARCHY_VAR}={other:?} is not accepted: give v1 (a cgroup v1 hierarchy with the cpu controller) or v2 (the cgroup2 hierarchy), or leave it unset (v1 if it has the cpu controller, else v2)"
            ))),
        }
    }
}

/// Find the hierarchy [`HIERARCHY_VAR`] chooses (by default the cpu controller's) from
/// `/proc/self/cgroup` and `/proc/self/mountinfo`.
pub fn hierarchy() -> Result<Hierarchy, TaskgroupError> {
    hierarchy_chosen(Choice::from_env()?)
}

/// [`hierarchy`] for a given choice. On v2, the controllers are read from this process's
/// cgroup: the cpu controller must be enabled for its children (`cgroup.subtree_control`),
/// as schedlab changes no other cgroup's settings; where the hierarchy has no cpu controller
/// at all (`cgroup.controllers`), only a v2 chosen explicitly is taken, without it.
pub fn hierarchy_chosen(choice: Choice) -> Result<Hierarchy, TaskgroupError> {
    let read = |p: &str| {
        fs::read_to_string(p).map_err(|e| TaskgroupError::NoController(format!("reading {p}: {e}")))
    };
    let mut found = find_hierarchy(
        &read("/proc/self/cgroup")?,
        &read("/proc/self/mountinfo")?,
        choice,
    )?;
    if found.version == Version::V2 {
        let has = |file: &str| {
            fs::read_to_string(found.own.join(file))
                .unwrap_or_default()
                .split_whitespace()
                .any(|c| c == "cpu")
        };
        if !has("cgroup.controllers") {
            if choice != Choice::V2 {
                return Err(TaskgroupError::NoController(format!(
                    "the cgroup2 hierarchy has no cpu controller at {} (its cgroup.controllers does not list cpu: the controller is bound to a v1 hierarchy, or not built), and no v1 hierarchy has it",
                    found.own.display()
                )));
            }
            found.cpu = false;
            return Ok(found);
        }
        // The children of this process's cgroup get the controllers its subtree_control
        // enables; schedlab does not change that file (another cgroup's setting).
        if !has("cgroup.subtree_control") {
            let control = found.own.join("cgroup.subtree_control");
            return Err(TaskgroupError::NoController(format!(
                "{} does not enable the cpu controller for the cgroups below it (schedlab changes no other cgroup's settings: enable it with `echo +cpu > {}`, or run schedlab in a cgroup that does)",
                control.display(),
                control.display()
            )));
        }
    }
    Ok(found)
}

/// The hierarchy from the texts of `/proc/self/cgroup` and `/proc/self/mountinfo`: by default
/// a v1 hierarchy with the `cpu` controller if there is one (as rt-app looks for a `cgroup`
/// mount with the `cpu` option), else the v2 one; only the one `choice` names otherwise. The
/// v2 one is taken as having the cpu controller ([`hierarchy_chosen`] reads whether it has).
pub fn find_hierarchy(
    cgroup: &str,
    mountinfo: &str,
    choice: Choice,
) -> Result<Hierarchy, TaskgroupError> {
    // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
    let mounts: Vec<(String, PathBuf, String, String)> = mountinfo
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            Some((
                unescape(f.get(3)?),
                PathBuf::from(unescape(f.get(4)?)),
                r.first()?.to_string(),
                r.get(2).unwrap_or(&"").to_string(),
            ))
        })
        .collect();
    // The path of this process's cgroup relative to a mount of ROOT.
    let under = |root: &str, own: &str| -> Option<PathBuf> {
        let rel = if root == "/" {
            own
        } else {
            own.strip_prefix(root)?
        };
        Some(PathBuf::from(rel.trim_start_matches('/')))
    };
    for line in cgroup.lines().filter(|_| choice != Choice::V2) {
        let mut f = line.splitn(3, ':');
        let (_, controllers, own) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        if !controllers.split(',').any(|c| c == "cpu") {
            continue;
        }
        for (root, point, fstype, opts) in &mounts {
            if fstype == "cgroup" && opts.split(',').any(|o| o == "cpu") {
                if let Some(rel) = under(root, own) {
                    return Ok(Hierarchy {
                        version: Version::V1,
                        own: point.join(rel),
                        cpu: true,
                    });
                }
            }
        }
    }
    for line in cgroup.lines().filter(|_| choice != Choice::V1) {
        let Some(own) = line.strip_prefix("0::") else {
            continue;
        };
        for (root, point, fstype, _) in &mounts {
            if fstype == "cgroup2" {
                if let Some(rel) = under(root, own) {
                    return Ok(Hierarchy {
                        version: Version::V2,
                        own: point.join(rel),
                        cpu: true,
                    });
                }
            }
        }
    }
    let what = match choice {
        Choice::Default => {
            "no cgroup v1 hierarchy has the cpu controller and no cgroup2 file system is mounted"
        }
        Choice::V1 => "no cgroup v1 hierarchy has the cpu controller",
        Choice::V2 => "no cgroup2 file system is mounted",
    };
    let chosen = if choice == Choice::Default {
        String::new()
    } else {
        format!(" ({HIERARCHY_VAR} chose it)")
    };
    Err(TaskgroupError::NoController(format!(
        "{what} where this process's cgroup is{chosen} (/proc/self/cgroup, /proc/self/mountinfo)"
    )))
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            out.push(((b[i + 1] - b'0') << 6) | ((b[i + 2] - b'0') << 3) | (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The prefix of the private directory's name; the pid follows.
const PREFIX: &str = "schedlab-";
/// The suffix of the private directory's name.
const SUFFIX: &str = "-taskgroups";

/// The taskgroups of a run, created; removed when dropped.
#[derive(Debug)]
pub struct Taskgroups {
    inner: Arc<Inner>,
}

/// The directories made.
#[derive(Debug)]
struct Inner {
    hierarchy: Hierarchy,
    /// The private directory, `OWN/schedlab-PID-taskgroups`.
    base: PathBuf,
    /// Directories created below `base`, parents first.
    dirs: Vec<PathBuf>,
    /// Whether the process was moved into `base` (v2).
    moved: bool,
}

/// The taskgroups of the run in progress, for the threads that join them; held while a thread
/// joins one, so that the removal never runs between a thread's look-up and its move.
static ACTIVE: Mutex<Option<Arc<Inner>>> = Mutex::new(None);

impl Taskgroups {
    /// Create the private directory and one per taskgroup in `names` (paths as
    /// `schedlab_workload::knobs::parse_taskgroup` leaves them), after removing those a killed
    /// schedlab process left in the same cgroup. The threads of this process may then join
    /// them ([`attach_current_thread`]) until this is dropped.
    pub fn create(names: &[String]) -> Result<Taskgroups, TaskgroupError> {
        let hierarchy = hierarchy()?;
        remove_stale(&hierarchy.own);
        let base = (hierarchy.own).join(format!("{PREFIX}{}{SUFFIX}", std::process::id()));
        mkdir(&base)?;
        let mut made = Inner {
            hierarchy,
            base,
            dirs: Vec::new(),
            moved: false,
        };
        if let Err(e) = made.build(names) {
            made.remove();
            return Err(e);
        }
        let inner = Arc::new(made);
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&inner));
        Ok(Taskgroups { inner })
    }

    /// The directory taskgroup `name` is in.
    pub fn path(&self, name: &str) -> PathBuf {
        self.inner.path(name)
    }

    /// The private directory every taskgroup is below.
    pub fn base(&self) -> &Path {
        &self.inner.base
    }

    /// The hierarchy they are in.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.inner.hierarchy
    }
}

fn mkdir(p: &Path) -> Result<(), TaskgroupError> {
    fs::create_dir(p).map_err(|source| TaskgroupError::Write {
        what: "create the cgroup",
        path: p.to_path_buf(),
        source,
    })
}

impl Inner {
    /// The taskgroups' directories below `base` (made and noted one by one, so that
    /// [`Inner::remove`] finds what a failure left).
    fn build(&mut self, names: &[String]) -> Result<(), TaskgroupError> {
        let v2 = self.hierarchy.version == Version::V2;
        if v2 {
            // The process's domain becomes the private directory: its threads may then be
            // spread over the threaded taskgroups below it.
            let procs = self.base.join("cgroup.procs");
            write(
                &procs,
                &std::process::id().to_string(),
                "move this process into",
            )?;
            self.moved = true;
        }
        for name in names {
            let mut dir = self.base.clone();
            for part in name.split('/').filter(|p| !p.is_empty()) {
                let parent = dir.clone();
                dir.push(part);
                if self.dirs.contains(&dir) {
                    continue;
                }
                if v2 && self.hierarchy.cpu {
                    enable_cpu(&parent)?;
                }
                mkdir(&dir)?;
                self.dirs.push(dir.clone());
                if v2 {
                    write(&dir.join("cgroup.type"), "threaded", "make threaded")?;
                }
            }
        }
        Ok(())
    }

    /// Remove every directory made, deepest first. A thread of this process still in one (a
    /// task of an interrupted run that has not ended yet) is first moved to `/`, where the
    /// run's other threads are; one that is exiting is waited for, briefly.
    fn remove(&self) {
        let (list, back) = match self.hierarchy.version {
            Version::V1 => ("tasks", self.hierarchy.own.join("tasks")),
            Version::V2 => ("cgroup.threads", self.base.join("cgroup.threads")),
        };
        for d in self.dirs.iter().rev() {
            let tids = fs::read_to_string(d.join(list)).unwrap_or_default();
            for tid in tids.lines().take(100_000) {
                let _ = fs::write(&back, tid.trim());
            }
            remove_dir(d);
        }
        if self.moved {
            // Back where it was, so that the private directory can go; failing that, the
            // directory stays (rmdir fails with EBUSY) and the next run removes it.
            let _ = fs::write(
                self.hierarchy.own.join("cgroup.procs"),
                std::process::id().to_string(),
            );
        }
        remove_dir(&self.base);
    }
}

impl Drop for Taskgroups {
    fn drop(&mut self) {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        if active.as_ref().is_some_and(|a| Arc::ptr_eq(a, &self.inner)) {
            *active = None;
        }
        // Still held: no thread joins a taskgroup while they go.
        self.inner.remove();
    }
}

/// Enable the cpu controller for the children of `dir`, one of the private directories.
fn enable_cpu(dir: &Path) -> Result<(), TaskgroupError> {
    let control = dir.join("cgroup.subtree_control");
    let now = fs::read_to_string(&control).unwrap_or_default();
    if now.split_whitespace().any(|c| c == "cpu") {
        return Ok(());
    }
    write(&control, "+cpu", "enable the cpu controller in")
}

fn write(path: &Path, text: &str, what: &'static str) -> Result<(), TaskgroupError> {
    fs::write(path, text).map_err(|source| TaskgroupError::Write {
        what,
        path: path.to_path_buf(),
        source,
    })
}

impl Inner {
    fn path(&self, name: &str) -> PathBuf {
        let rel = name.trim_start_matches('/');
        if rel.is_empty() {
            return match self.hierarchy.version {
                Version::V1 => self.hierarchy.own.clone(),
                Version::V2 => self.base.clone(),
            };
        }
        self.base.join(rel)
    }
}

/// rmdir a cgroup, retrying briefly while threads that have just exited still count in it.
fn remove_dir(d: &Path) {
    for _ in 0..50 {
        match fs::remove_dir(d) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            _ => return,
        }
    }
}

/// Remove the private directories in `own` of schedlab processes that no longer exist
/// (killed with SIGKILL: nothing ran their [`Drop`]). Empty cgroups only, deepest first; at
/// most 64 of them.
fn remove_stale(own: &Path) {
    let Ok(entries) = fs::read_dir(own) else {
        return;
    };
    for e in entries.flatten().take(4096) {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.strip_suffix(SUFFIX))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == std::process::id() || crate::procfs::pid_alive(pid) {
            continue;
        }
        let mut dirs = Vec::new();
        collect_dirs(&e.path(), &mut dirs, 0);
        for d in dirs.iter().rev().take(64) {
            remove_dir(d);
        }
    }
}

/// `dir` and the directories below it, parents first, at most
/// `schedlab_workload::knobs::MAX_TASKGROUP_DEPTH` levels down.
fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    out.push(dir.to_path_buf());
    if depth >= schedlab_workload::knobs::MAX_TASKGROUP_DEPTH || out.len() >= 64 {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&e.path(), out, depth + 1);
        }
    }
}

/// Move the calling thread into taskgroup `name` of the run in progress.
pub fn attach_current_thread(name: &str) -> Result<(), TaskgroupError> {
    let active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(inner) = active.as_ref() else {
        return Err(TaskgroupError::Attach {
            name: name.to_string(),
            detail: "no taskgroups were created for this run, or the run has ended".into(),
        });
    };
    let dir = inner.path(name);
    let file = match inner.hierarchy.version {
        Version::V1 => "tasks",
        Version::V2 => "cgroup.threads",
    };
    write(
        &dir.join(file),
        &crate::sys::gettid().to_string(),
        "move this thread into",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
24 1 0:22 / /sys rw,nosuid - sysfs sysfs rw
30 24 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
35 30 0:31 / /sys/fs/cgroup/cpu rw,relatime shared:11 - cgroup cgroup rw,cpu
36 30 0:32 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
37 30 0:33 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
44 30 0:40 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_cpu_controller_is_found_as_rt_app_finds_it_v1_first() {
        let h = find_hierarchy(
            "3:cpuset:/\n2:cpuacct:/\n1:cpu:/a/b\n0::/\n",
            MOUNTS,
            Choice::Default,
        )
        .unwrap();
        assert_eq!(h.version, Version::V1);
        assert_eq!(h.own, Path::new("/sys/fs/cgroup/cpu/a/b"));
        // A joint cpu,cpuacct hierarchy, mounted from a sub-cgroup (a container's view).
        let joint =
            "50 30 0:50 /outer /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        let h = find_hierarchy("4:cpu,cpuacct:/outer/inner\n", joint, Choice::Default).unwrap();
        assert_eq!(h.own, Path::new("/sys/fs/cgroup/cpu,cpuacct/inner"));
        // v2 only.
        let v2 = "60 24 0:60 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let h = find_hierarchy("0::/user.slice/x.scope\n", v2, Choice::Default).unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.own, Path::new("/sys/fs/cgroup/user.slice/x.scope"));
        let e = find_hierarchy("1:cpuacct:/\n", MOUNTS, Choice::Default)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cpu controller"), "{e}");
        assert_eq!(unescape("/a\\040b"), "/a b");
    }

    /// Both mounted, as on a machine with the cpu controller on v1 and a cgroup2 hierarchy
    /// beside it: the variable picks one; each alone is refused where it is missing.
    #[test]
    fn the_variable_chooses_the_hierarchy_where_both_are_mounted() {
        let cgroup = "1:cpu:/a\n0::/b\n";
        let v1 = find_hierarchy(cgroup, MOUNTS, Choice::V1).unwrap();
        assert_eq!(v1.own, Path::new("/sys/fs/cgroup/cpu/a"));
        let v2 = find_hierarchy(cgroup, MOUNTS, Choice::V2).unwrap();
        assert_eq!(v2.version, Version::V2);
        assert_eq!(v2.own, Path::new("/sys/fs/cgroup/unified/b"));
        let only_v2 = "44 30 0:40 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let e = find_hierarchy(cgroup, only_v2, Choice::V1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no cgroup v1 hierarchy has the cpu controller")
                && e.contains(HIERARCHY_VAR),
            "{e}"
        );
        let only_v1 = MOUNTS.replace("cgroup2 cgroup2", "tmpfs tmpfs");
        let e = find_hierarchy(cgroup, &only_v1, Choice::V2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no cgroup2 file system is mounted"), "{e}");
        assert_eq!(Choice::parse("").unwrap(), Choice::Default);
        assert_eq!(Choice::parse("v2").unwrap(), Choice::V2);
        let e = Choice::parse("2").unwrap_err().to_string();
        assert!(
            e.contains("SCHEDLAB_TASKGROUP_CGROUP=\"2\" is not accepted") && e.contains("v1"),
            "{e}"
        );
    }

    #[test]
    fn taskgroups_are_below_the_private_directory_and_slash_is_the_runs_own() {
        for (version, root) in [(Version::V1, "/own"), (Version::V2, "/own/p")] {
            let inner = Inner {
                hierarchy: Hierarchy {
                    version,
                    own: PathBuf::from("/own"),
                    cpu: true,
                },
                base: PathBuf::from("/own/p"),
                dirs: Vec::new(),
                moved: false,
            };
            assert_eq!(inner.path("/tg1/tg11"), Path::new("/own/p/tg1/tg11"));
            assert_eq!(inner.path("/"), Path::new(root));
        }
    }
}
