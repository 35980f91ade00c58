//! What killed runs leave behind is removed by the next command of any kind, and the death of a
//! real run's process-group keeper fails the run (issue 38, item 4).

mod common;

use common::{is_root, schedlab, serial};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A pid no process has now: a child that has been reaped.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// What a run killed by SIGKILL leaves in its temp dir, and what must survive any cleanup.
struct Planted {
    tmp: tempfile::TempDir,
    /// The temporary directory of a dead schedlab, with files in it.
    stale: PathBuf,
    /// The mount point a dead schedlab made before it could mount (empty).
    bare: PathBuf,
    /// A live process's directory, another user's, a file and another name: all stay.
    kept: Vec<PathBuf>,
}

fn plant() -> Planted {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let dead = dead_pid();
    let stale = p.join(format!("schedlab-{dead}-Ab12cd"));
    std::fs::create_dir_all(stale.join("sub")).unwrap();
    std::fs::write(stale.join("task0.dat"), vec![0u8; 1000]).unwrap();
    std::fs::write(stale.join("sub/x"), b"12345").unwrap();
    let bare = p.join(format!("schedlab-tracefs-{dead}-0"));
    std::fs::create_dir(&bare).unwrap();
    // This test's own process is alive: its directory belongs to a live run.
    let live = p.join(format!("schedlab-{}-Zz9zz9", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let file = p.join(format!("schedlab-{dead}-file00"));
    std::fs::write(&file, b"x").unwrap();
    let other = p.join("schedlab-notes");
    std::fs::create_dir(&other).unwrap();
    let mut kept = vec![live, file, other];
    if is_root() {
        // Another user's directory of a dead process: not ours to remove.
        let foreign = p.join(format!("schedlab-{dead}-Other1"));
        std::fs::create_dir(&foreign).unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        assert_eq!(std::fs::metadata(&foreign).unwrap().uid(), 65534);
        kept.push(foreign);
    }
    Planted {
        tmp,
        stale,
        bare,
        kept,
    }
}

/// `schedlab args` with TMPDIR set to `tmp`, asserted to succeed.
fn run_in(tmp: &Path, args: &[&str]) -> Output {
    let out = schedlab()
        .args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    common::succeeded(args, out)
}

#[test]
fn every_command_removes_the_leftovers_of_dead_runs_and_nothing_else() {
    // Any schedlab command removes a dead run's tracefs mount, wherever it is: another test's
    // command while this one's stale mount is planted would remove it first, and say so in
    // its own stderr. One test at a time.
    let _turn = serial();
    let root = env!("CARGO_MANIFEST_DIR");
    let file = format!("{root}/../../examples/pingpong.toml");
    let records = tempfile::tempdir().unwrap();
    let record = records.path().join("r.json");
    let record = record.to_str().unwrap();
    let sim = [
        "run",
        "pingpong",
        "--backend",
        "sim",
        "--loops",
        "100",
        "--runs",
        "1",
    ];
    // compare needs three values in each data set.
    let mut with_json = sim[..6].to_vec();
    with_json.extend(["--runs", "3", "--json", record]);
    run_ok_anywhere(&with_json);
    let commands: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["env"],
        vec!["check", &file],
        sim.to_vec(),
        vec!["compare", record, record],
    ];
    for args in &commands {
        let planted = plant();
        let out = run_in(planted.tmp.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !exists(&planted.stale),
            "schedlab {args:?} left {}:\n{err}",
            planted.stale.display()
        );
        assert!(
            err.contains(&format!("schedlab: removed {}", planted.stale.display()))
                && err.contains("which no longer exists"),
            "schedlab {args:?} did not say what it removed:\n{err}"
        );
        assert!(
            !exists(&planted.bare),
            "schedlab {args:?} left the bare mount point"
        );
        for k in &planted.kept {
            assert!(exists(k), "schedlab {args:?} removed {}", k.display());
        }
    }
    // -q: removed all the same, said nowhere.
    let planted = plant();
    let mut quiet = sim.to_vec();
    quiet.push("-q");
    let out = run_in(planted.tmp.path(), &quiet);
    assert!(!exists(&planted.stale));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("removed"), "{err}");
}

/// `args`, asserted to succeed, with the inherited TMPDIR.
fn run_ok_anywhere(args: &[&str]) {
    let out = schedlab().args(args).output().unwrap();
    common::succeeded(args, out);
}

/// Removes an (empty) directory when dropped, also when an assertion failed first.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Detaches a mount when dropped (also when an assertion failed first).
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let c = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; detaching our own mount, or failing harmlessly.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

fn mount_tracefs(dir: &Path) -> Result<Mounted, std::io::Error> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid C strings; a new mount on our own temporary directory.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Mounted(dir.to_path_buf()))
}

fn mounted(dir: &Path) -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(1) == dir.to_str())
}

/// As root: a dead run's private tracefs mount and its instance go with a simulated run; a
/// live run's instance stays.
#[test]
fn a_simulated_run_removes_a_dead_runs_tracefs_mount_and_instance() {
    if !is_root() {
        eprintln!("skipped: tracefs mounts and instances need root");
        return;
    }
    // Any schedlab command removes a dead run's tracefs mount, wherever it is: another test's
    // command while this one's stale mount is planted would remove it first, and say so in
    // its own stderr. One test at a time.
    let _turn = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dead = dead_pid();
    let stale_mount = tmp.path().join(format!("schedlab-tracefs-{dead}-1"));
    std::fs::create_dir(&stale_mount).unwrap();
    let guard = match mount_tracefs(&stale_mount) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("skipped: cannot mount tracefs here: {e}");
            return;
        }
    };
    let instances = stale_mount.join("instances");
    let stale_instance = format!("schedlab-{dead}-7");
    let live_instance = format!("schedlab-{}-9", std::process::id());
    std::fs::create_dir(instances.join(&stale_instance)).unwrap();
    std::fs::create_dir(instances.join(&live_instance)).unwrap();
    // A mount of our own to look through afterwards (instances live in the kernel, not in a
    // mount).
    let probe = tmp.path().join("probe");
    std::fs::create_dir(&probe).unwrap();
    let probe_guard = mount_tracefs(&probe).unwrap();
    let probe_instances = probe.join("instances");
    let _live_guard = RemoveDir(probe_instances.join(&live_instance));
    let out = run_in(
        tmp.path(),
        &["run", "yield", "--backend", "sim", "--runs", "1"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!mounted(&stale_mount), "the stale mount stays:\n{err}");
    assert!(!exists(&stale_mount), "its mount point stays:\n{err}");
    assert!(
        !exists(&probe_instances.join(&stale_instance)),
        "the stale instance stays:\n{err}"
    );
    // (Counts are not compared: instances are the kernel's, and other dead runs may have left
    // some.)
    assert!(
        err.contains("tracefs mount point") && err.contains("tracefs instance"),
        "{err}"
    );
    assert!(
        exists(&probe_instances.join(&live_instance)),
        "a live process's instance was removed"
    );
    drop(_live_guard);
    assert!(!exists(&probe_instances.join(&live_instance)));
    assert!(mounted(&probe), "our own mount (no schedlab name) stays");
    drop(probe_guard);
    drop(guard);
}

/// The keeper (`schedlab-keeper`) among the children of `pid`, if it is there yet.
fn keeper_of(pid: u32) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1);
        if head.ends_with("(schedlab-keeper") && ppid == Some(&pid.to_string()) {
            return entry.file_name().to_str()?.parse().ok();
        }
    }
    None
}

/// Killing the keeper of a real run's process group (by SIGKILL, or by a SIGTERM its inherited
/// handler used to swallow) fails the run with a message that names it, at once.
#[test]
fn the_keepers_death_fails_the_run() {
    let _turn = serial();
    for (signal, number) in [(libc::SIGKILL, 9), (libc::SIGTERM, 15)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = schedlab()
            .args([
                "run",
                "build",
                "--units",
                "60",
                "--dirs",
                "6",
                "--cpu",
                "20ms",
                "--runs",
                "3",
                "--counters",
                "proc",
            ])
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let keeper = loop {
            if let Some(k) = keeper_of(child.id()) {
                break k;
            }
            if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
                let out = child.wait_with_output().unwrap();
                if !out.status.success() {
                    eprintln!(
                        "skipped: the real build run cannot run here: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    return;
                }
                panic!("no schedlab-keeper child of schedlab while it ran a build");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // SAFETY: signalling the keeper found above (a child of our child, not yet reaped).
        assert_eq!(unsafe { libc::kill(keeper as i32, signal) }, 0);
        let killed = Instant::now();
        let out = child.wait_with_output().unwrap();
        let took = killed.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "exit 0 after the keeper died:\n{err}"
        );
        assert!(
            err.contains("process-group keeper")
                && err.contains(&format!("process {keeper} was killed by signal {number}")),
            "{err}"
        );
        assert!(took < Duration::from_secs(10), "noticed after {took:?}");
        let comm = std::fs::read_to_string(format!("/proc/{keeper}/comm")).unwrap_or_default();
        assert_ne!(
            comm.trim(),
            "schedlab-keeper",
            "the dead keeper was not reaped"
        );
    }
}
