//! The one writer for every file schedlab writes: records, CSV/Markdown/will-it-scale exports,
//! SVG charts, the HTML report, calibrated profiles, a sweep's directory, merged sweeps.
//!
//! schedlab runs as root on the machines its users care about, so an output path is treated the
//! way careful Unix tools treat one (coreutils' `install` and `sort -o`, rsync's temporary
//! files), never by writing a fixed `PATH.tmp` and renaming it over whatever PATH is:
//!
//! - `-` is standard output ([`Target::Stdout`]);
//! - an existing character device (`/dev/null`) or FIFO is written in place, once, at the end
//!   ([`Target::Stream`]) — never replaced; a block device, socket or directory is refused;
//! - a symbolic link is followed (to the end of its chain) and its target is replaced, in the
//!   target's own directory, so the link stays a link;
//! - a regular file is replaced atomically: the bytes go to a temporary file with a random name
//!   created exclusively (`O_EXCL`, through [`tempfile`]) beside it, which is renamed over the
//!   file only once it is complete, and removed on every error. Its name,
//!   `.NAME.schedlab-PID-XXXXXX.tmp`, carries the writer's process id so that a later write of
//!   the same file removes what a killed writer left (see [`replace_file`]).
//!
//! [`resolve`] checks a path before anything runs; [`refuse_inputs`] refuses an output that is
//! an input of the same command; [`write`](fn@write) writes.

use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// The path that means standard output.
pub const STDOUT: &str = "-";

/// The longest chain of symbolic links followed (the kernel's own limit, `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Why an output cannot be written; each names the path as given.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct OutputError {
    /// The output as the user gave it.
    pub path: PathBuf,
    /// What is wrong, and what would be accepted.
    pub reason: String,
}

impl OutputError {
    fn new(path: &Path, reason: impl Into<String>) -> Self {
        OutputError {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// Where the bytes of an output go, once its path is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-`: standard output, written once, at the end.
    Stdout,
    /// An existing character device or FIFO: opened without creating or truncating it and
    /// written in place, once, at the end (it cannot be rewritten after every repetition).
    Stream(PathBuf),
    /// A regular file, existing or not, at this path (symbolic links resolved): replaced
    /// atomically in its directory, as often as the record changes.
    File(PathBuf),
}

impl Target {
    /// Whether this output can be rewritten after every repetition (a regular file), or is
    /// written once at the end (standard output, a device, a FIFO).
    pub fn rewritable(&self) -> bool {
        matches!(self, Target::File(_))
    }
}

/// What output `path` names, and that its directory exists. Follows symbolic links; refuses a
/// directory, a block device, a socket, a dangling link into a missing directory and a link
/// loop.
pub fn classify(path: &Path) -> Result<Target, OutputError> {
    if path.as_os_str() == STDOUT {
        return Ok(Target::Stdout);
    }
    if path.as_os_str().is_empty() {
        return Err(OutputError::new(
            path,
            "an empty path; give a file name, or - for standard output",
        ));
    }
    let (real, meta) = follow_links(path)?;
    if let Some(meta) = meta {
        let kind = meta.file_type();
        if kind.is_dir() {
            return Err(OutputError::new(path, "is a directory; give a file name"));
        }
        if kind.is_char_device() || kind.is_fifo() {
            return Ok(Target::Stream(real));
        }
        if kind.is_block_device() || kind.is_socket() {
            let what = if kind.is_socket() {
                "a socket"
            } else {
                "a block device"
            };
            return Err(OutputError::new(
                path,
                format!("is {what}; accepted: a regular file (replaced), a character device or FIFO (written in place), or - for standard output"),
            ));
        }
    }
    let dir = parent_dir(&real);
    if !dir.is_dir() {
        let via = if real != path {
            format!(" (where the link leads: {})", real.display())
        } else {
            String::new()
        };
        return Err(OutputError::new(
            path,
            format!("not a file in an existing directory{via}"),
        ));
    }
    if real.file_name().is_none() {
        return Err(OutputError::new(path, "names no file; give a file name"));
    }
    Ok(Target::File(real))
}

/// [`classify`] `path`, and for a regular file check that a file can be created in its
/// directory (made and removed, as the real write will): the check before anything runs.
pub fn resolve(path: &Path) -> Result<Target, OutputError> {
    let target = classify(path)?;
    if let Target::File(real) = &target {
        let dir = parent_dir(real);
        check_writable_dir(&dir).map_err(|e| {
            OutputError::new(path, format!("cannot write in {}: {e}", dir.display()))
        })?;
    }
    Ok(target)
}

/// Whether a file can be created in `dir`: one is made (random name, exclusively) and removed.
pub fn check_writable_dir(dir: &Path) -> io::Result<()> {
    tempfile::Builder::new()
        .prefix(".schedlab-probe-")
        .tempfile_in(dir)
        .map(drop)
}

/// Follow `path`'s chain of symbolic links: the path it ends at, and that path's metadata
/// (none if nothing is there yet).
fn follow_links(path: &Path) -> Result<(PathBuf, Option<std::fs::Metadata>), OutputError> {
    let mut p = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to =
                    std::fs::read_link(&p).map_err(|e| OutputError::new(path, e.to_string()))?;
                p = if to.is_absolute() {
                    to
                } else {
                    parent_dir(&p).join(to)
                };
            }
            Ok(m) => return Ok((p, Some(m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((p, None)),
            Err(e) => return Err(OutputError::new(path, e.to_string())),
        }
    }
    Err(OutputError::new(
        path,
        format!("more than {MAX_LINKS} symbolic links in a row (a loop?)"),
    ))
}

/// The directory `path` is in (`.` for a bare name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// An output that is an input of the same command ([`refuse_inputs`]).
#[derive(Debug, thiserror::Error)]
#[error("{flag} {}: is {what} this command reads; writing it would destroy the input. Give the output another name", path.display())]
pub struct InputOverlap {
    /// The output's option (`--json`, `-o`).
    pub flag: String,
    /// The output as the user gave it.
    pub path: PathBuf,
    /// What the command reads there (`the workload file`, `a record`).
    pub what: String,
}

/// The message, for callers whose errors are still text.
impl From<InputOverlap> for String {
    fn from(e: InputOverlap) -> String {
        e.to_string()
    }
}

/// Refuse output `path` (`flag`'s, already resolved to `target`) if it is one of `inputs`
/// (files or directories the same command reads): the same file (device and inode) when both
/// exist, or the same absolute path when the output does not exist yet.
pub fn refuse_inputs(
    flag: &str,
    path: &Path,
    target: &Target,
    inputs: &[(&str, &Path)],
) -> Result<(), InputOverlap> {
    let Target::File(real) = target else {
        return Ok(()); // standard output, a device or a FIFO is never an input file
    };
    let out_id = file_id(real);
    let out_abs = absolute(real);
    for (what, input) in inputs {
        let same = match (out_id, file_id(input)) {
            (Some(o), Some(i)) => o == i,
            _ => out_abs.is_some() && out_abs == absolute(input),
        };
        if same {
            return Err(InputOverlap {
                flag: flag.to_string(),
                path: path.to_path_buf(),
                what: what.to_string(),
            });
        }
    }
    Ok(())
}

/// A file's device and inode, following links; none if it does not exist.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// `path` made absolute, its existing directory canonical and `.`/`..` after it resolved
/// lexically.
fn absolute(path: &Path) -> Option<PathBuf> {
    let dir = parent_dir(path).canonicalize().ok()?;
    let mut out = dir;
    for c in Path::new(path.file_name()?).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    Some(out)
}

/// Write `bytes` to `target` (from [`resolve`] or [`classify`]).
pub fn write_target(target: &Target, bytes: &[u8]) -> io::Result<()> {
    match target {
        Target::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(bytes)?;
            out.flush()
        }
        Target::Stream(path) => write_stream(path, bytes),
        Target::File(path) => replace_file(path, bytes),
    }
}

/// Write `bytes` to output `path`: the whole writer in one call.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_stage(path, bytes, Stage::Last)
}

/// When a write happens: while a run goes on (after every repetition), or at its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// A record rewritten as the run goes on: only regular files take it.
    Progress,
    /// The last write of the command, of a record that changed since the last
    /// [`Stage::Progress`]: every kind of output takes it.
    Last,
    /// The end of a run whose files already hold the record: only the outputs written once
    /// (standard output, a device, a FIFO) take it.
    Streams,
}

impl Stage {
    /// Whether an output of kind `target` takes a write at this stage.
    pub fn writes(self, target: &Target) -> bool {
        match self {
            Stage::Progress => target.rewritable(),
            Stage::Last => true,
            Stage::Streams => !target.rewritable(),
        }
    }
}

/// Write `bytes` to output `path` at `stage`: a regular file as the run goes on, standard
/// output, a device or a FIFO once at the end (they cannot be rewritten); see [`Stage`].
pub fn write_stage(path: &Path, bytes: &[u8], stage: Stage) -> io::Result<()> {
    let target = classify(path).map_err(|e| io::Error::other(e.reason))?;
    if stage.writes(&target) {
        write_target(&target, bytes)?;
    }
    Ok(())
}

/// Write a character device or FIFO in place. A FIFO nobody reads is an error, not a hang.
fn write_stream(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use rustix::fs::{fcntl_setfl, open, Mode, OFlags};
    let fd = open(
        path,
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::NXIO {
            io::Error::other("a FIFO that no process has open for reading; start its reader first")
        } else {
            io::Error::from(e)
        }
    })?;
    // Blocking writes from here: a slow reader is waited for, not an error.
    fcntl_setfl(&fd, OFlags::empty())?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    file.flush()
}

/// Replace the regular file at `path` (its directory exists) with `bytes`, atomically: a
/// temporary file with a random name, created exclusively beside it (`.NAME.schedlab-PID-XXXXXX.tmp`),
/// written whole, given the old file's permissions and owner, then renamed over it. On an
/// error the temporary file is removed; a writer killed in between leaves it, and the next
/// write of the same file removes it (its process id is in the name, and that process is gone).
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("names no file"))?;
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(format!(".schedlab-{}-", std::process::id()));
    remove_stale(&dir, name);
    let old = std::fs::metadata(path).ok().filter(|m| m.is_file());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // A new file is readable as any new file is (the umask applies), not only by its owner.
    builder.permissions(std::fs::Permissions::from_mode(0o666));
    let mut tmp = builder.tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    if let Some(old) = &old {
        let file = tmp.as_file();
        file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
        if (old.uid(), old.gid()) != (file.metadata()?.uid(), file.metadata()?.gid()) {
            // Keep a user's file theirs when root rewrites it; without the right, it is ours.
            let _ = rustix::fs::fchown(
                file,
                Some(rustix::fs::Uid::from_raw(old.uid())),
                Some(rustix::fs::Gid::from_raw(old.gid())),
            );
        }
    }
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Remove the temporary files of writes of `name` in `dir` that were killed: those whose name
/// says a process id that is no longer a running schedlab.
fn remove_stale(dir: &Path, name: &std::ffi::OsStr) {
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".schedlab-");
    let Some(prefix) = prefix.to_str() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(prefix)) else {
            continue;
        };
        let Some(pid) = rest
            .strip_suffix(".tmp")
            .and_then(|r| r.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !is_schedlab(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether process `pid` exists and runs a program called schedlab.
fn is_schedlab(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.starts_with("schedlab"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_replaced_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o640);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("r.json")]);
    }

    #[test]
    fn a_symlink_stays_a_link_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let target = sub.join("precious.txt");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink("sub/precious.txt", &link).unwrap();
        assert_eq!(
            resolve(&link).unwrap(),
            Target::File(dir.path().join("sub/precious.txt"))
        );
        write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        // The temporary file was made beside the target, and is gone.
        assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 1);
    }

    #[test]
    fn a_planted_link_at_the_old_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious.txt");
        std::fs::write(&precious, "keep").unwrap();
        std::os::unix::fs::symlink(&precious, dir.path().join("out.json.tmp")).unwrap();
        write(&dir.path().join("out.json"), b"record").unwrap();
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep");
        let out = dir.path().join("out.json");
        assert!(std::fs::symlink_metadata(&out).unwrap().is_file());
    }

    #[test]
    fn fifos_are_written_in_place_and_refused_without_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let target = resolve(&fifo).unwrap();
        assert_eq!(target, Target::Stream(fifo.clone()));
        let err = write_target(&target, b"x").unwrap_err();
        assert!(
            err.to_string().contains("no process has open for reading"),
            "{err}"
        );
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        // The reader opens the FIFO; retry until it has.
        let mut wrote = Err(io::Error::other("never tried"));
        for _ in 0..500 {
            wrote = write_target(&target, b"through the fifo");
            if wrote.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        wrote.unwrap();
        assert_eq!(reader.join().unwrap(), "through the fifo");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    use rustix::fs::Mode;

    #[test]
    fn directories_sockets_and_link_loops_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = resolve(dir.path()).unwrap_err();
        assert!(e.reason.contains("is a directory"), "{e}");
        let sock = dir.path().join("s");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = resolve(&sock).unwrap_err();
        assert!(e.reason.contains("is a socket"), "{e}");
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let e = resolve(&a).unwrap_err();
        assert!(e.reason.contains("symbolic links in a row"), "{e}");
        let e = resolve(&dir.path().join("missing/x.json")).unwrap_err();
        assert!(
            e.reason.contains("not a file in an existing directory"),
            "{e}"
        );
        assert_eq!(resolve(Path::new("-")).unwrap(), Target::Stdout);
    }

    #[test]
    fn a_killed_writers_temporary_file_is_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        // No process has pid 0x7fff_fff0 (pid_max is at most 2^22).
        let stale = dir.path().join(".r.json.schedlab-2147483632-AbC123.tmp");
        std::fs::write(&stale, "half").unwrap();
        let other = dir
            .path()
            .join(".other.json.schedlab-2147483632-AbC123.tmp");
        std::fs::write(&other, "half").unwrap();
        write(&dir.path().join("r.json"), b"whole").unwrap();
        assert!(!stale.exists());
        assert!(
            other.exists(),
            "only the same output's leftovers are removed"
        );
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("v.toml");
        std::fs::write(&input, "x").unwrap();
        let link = dir.path().join("l.toml");
        std::os::unix::fs::symlink("v.toml", &link).unwrap();
        for out in [&input, &link] {
            let t = resolve(out).unwrap();
            let e = refuse_inputs("--json", out, &t, &[("the workload file", &input)]).unwrap_err();
            assert_eq!(
                (e.flag.as_str(), e.what.as_str()),
                ("--json", "the workload file")
            );
            let e = e.to_string();
            assert!(e.contains("is the workload file this command reads"), "{e}");
        }
        // Not yet existing: the same path, spelled another way.
        let missing = dir.path().join("new.json");
        let spelled = dir.path().join("sub/../new.json");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let t = resolve(&spelled).unwrap();
        assert!(refuse_inputs("-o", &spelled, &t, &[("a record", &missing)]).is_err());
        let t = resolve(&dir.path().join("other.json")).unwrap();
        refuse_inputs("-o", Path::new("other.json"), &t, &[("a record", &input)]).unwrap();
    }
}
