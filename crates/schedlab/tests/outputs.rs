//! Every output goes through one writer: `-` is standard output, a device node or FIFO is
//! written in place (never replaced), a symbolic link is followed and its target replaced, a
//! planted link at an old temporary name is not followed, and an output that is an input of
//! the same command is refused before anything runs. The device nodes, FIFOs and links are
//! made in a private temporary directory; nothing here touches a system path.

mod common;

use common::schedlab;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Output, Stdio};

/// `schedlab args` in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    schedlab()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run schedlab")
}

/// A short simulated run's arguments, with `extra` after them.
fn sim<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "run",
        "pingpong",
        "--backend",
        "sim",
        "--runs",
        "1",
        "--loops",
        "2000",
    ];
    a.extend_from_slice(extra);
    a
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

/// A private node of `kind` (device number `major`, `minor`) at `path`, or why it cannot be made
/// (device nodes need CAP_MKNOD).
fn node(path: &Path, kind: rustix::fs::FileType, major: u32, minor: u32) -> Result<(), String> {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        kind,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(major, minor),
    )
    .map_err(|e| e.to_string())
}

fn char_device(path: &Path, major: u32, minor: u32) -> Result<(), String> {
    node(path, rustix::fs::FileType::CharacterDevice, major, minor)
}

fn fifo(path: &Path) {
    node(path, rustix::fs::FileType::Fifo, 0, 0).unwrap();
}

#[test]
fn device_nodes_are_written_in_place_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null");
    let full = dir.path().join("full");
    // mknod needs CAP_MKNOD (root); a test of ours never writes the system's /dev.
    if let Err(e) = char_device(&null, 1, 3).and_then(|()| char_device(&full, 1, 7)) {
        println!("skipped: cannot make private device nodes ({e}); run as root to check that devices are written in place");
        return;
    }
    let cases: Vec<Vec<&str>> = vec![
        sim(&["--json", "./null"]),
        sim(&["--csv", "./null"]),
        sim(&["--markdown", "./null"]),
        vec![
            "sweep",
            "pingpong",
            "--backend",
            "sim",
            "--runs",
            "1",
            "--loops",
            "1000",
            "--vary",
            "loops=1000,2000",
            "--plot",
            "./null",
        ],
    ];
    for args in &cases {
        let out = run_in(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
        assert!(kind.is_char_device(), "{args:?} replaced the device node");
    }
    let rec = dir.path().join("r.json");
    let out = run_in(dir.path(), &sim(&["--json", "r.json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_in(dir.path(), &["report", "-o", "./null", "r.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&null)
        .unwrap()
        .file_type()
        .is_char_device());
    // A device that fails the write: the error names it, and it stays a device.
    let out = run_in(dir.path(), &sim(&["--json", "./full"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("./full: No space left on device"),
        "{}",
        stderr(&out)
    );
    assert!(std::fs::symlink_metadata(&full)
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(rec.is_file());
    assert_eq!(names(dir.path()), ["full", "null", "r.json"]);
}

#[test]
fn a_fifo_gets_the_whole_record_or_an_error_and_stays_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("fifo");
    fifo(&f);
    let reader = {
        let f = f.clone();
        std::thread::spawn(move || std::fs::read_to_string(f).unwrap())
    };
    // Until the reader has opened the FIFO the write is refused; the reader is a thread that
    // starts at once, and the run takes longer than that.
    let out = run_in(dir.path(), &sim(&["--json", "fifo"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = reader.join().unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).expect("the whole record");
    assert_eq!(record["workload"], "pingpong");
    assert!(std::fs::symlink_metadata(&f).unwrap().file_type().is_fifo());
    // Nobody reads it: an error that says so, not a hang.
    let out = run_in(dir.path(), &sim(&["--json", "fifo"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no process has open for reading"),
        "{}",
        stderr(&out)
    );
    assert!(std::fs::symlink_metadata(&f).unwrap().file_type().is_fifo());
    assert_eq!(names(dir.path()), ["fifo"]);
}

#[test]
fn links_are_followed_to_their_target_and_planted_temporary_names_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("precious.txt"), "precious").unwrap();
    // The old writer's fixed temporary name, planted as a link: not followed.
    std::os::unix::fs::symlink("precious.txt", d.join("out.json.tmp")).unwrap();
    let out = run_in(d, &sim(&["--json", "out.json", "--csv", "out.csv"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(d.join("precious.txt")).unwrap(),
        "precious"
    );
    assert!(std::fs::symlink_metadata(d.join("out.json"))
        .unwrap()
        .is_file());
    // A link as the output: it stays a link, and its target (in another directory) holds the
    // record.
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink("sub/target.json", d.join("link.json")).unwrap();
    let out = run_in(d, &sim(&["--json", "link.json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(d.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(d.join("sub/target.json")).unwrap();
    assert!(text.contains("\"workload\": \"pingpong\""));
    assert_eq!(names(&d.join("sub")), ["target.json"]);
    assert_eq!(
        names(d),
        [
            "link.json",
            "out.csv",
            "out.json",
            "out.json.tmp",
            "precious.txt",
            "sub"
        ]
    );
}

#[test]
fn dash_is_standard_output_for_one_output() {
    let dir = tempfile::tempdir().unwrap();
    let args = sim(&["--json", "-"]);
    let out = common::succeeded_in(dir.path(), &args, run_in(dir.path(), &args));
    let record: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("standard output holds only the record");
    assert_eq!(record["workload"], "pingpong");
    assert!(
        stderr(&out).contains("us_per_rt"),
        "the summary goes to standard error"
    );
    let args = sim(&["--csv", "-"]);
    let out = common::succeeded_in(dir.path(), &args, run_in(dir.path(), &args));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("configuration,"));
    let out = run_in(dir.path(), &sim(&["--json", "-", "--csv", "-"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("only one output can be -"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let workload = "[groups.a]\nsteps = [{compute = \"1ms\"}]\n";
    std::fs::write(d.join("v.toml"), workload).unwrap();
    std::os::unix::fs::symlink("v.toml", d.join("lv.toml")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let base = ["run", "v.toml", "--backend", "sim", "--runs", "1"];
    for extra in [
        ["--json", "v.toml"],
        ["--json", "lv.toml"],
        ["--csv", "./sub/../v.toml"],
        ["--markdown", "./v.toml"],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(&extra);
        let out = run_in(d, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("is the workload file this command reads"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains("run 1/1"), "{args:?} ran");
    }
    assert_eq!(std::fs::read_to_string(d.join("v.toml")).unwrap(), workload);
    // The profile file (refused before it is even read), and a report's records.
    std::fs::write(d.join("p.toml"), "a profile").unwrap();
    let out = run_in(d, &sim(&["--profile", "p.toml", "--csv", "p.toml"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is the --profile file this command reads"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("p.toml")).unwrap(),
        "a profile"
    );
    let args = sim(&["--json", "r1.json"]);
    common::succeeded_in(d, &args, run_in(d, &args));
    let before = std::fs::read(d.join("r1.json")).unwrap();
    let out = run_in(d, &["report", "-o", "r1.json", "r1.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is a record this command reads"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(d.join("r1.json")).unwrap(), before);
    // calibrate over an existing profile needs --force (refused before measuring anything).
    std::fs::write(d.join("mine.toml"), "measured").unwrap();
    let out = run_in(d, &["calibrate", "--out", "mine.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("add --force"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(d.join("mine.toml")).unwrap(),
        "measured"
    );
}

#[test]
fn directories_sockets_and_block_devices_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _listener = std::os::unix::net::UnixListener::bind(d.join("sock")).unwrap();
    std::fs::create_dir(d.join("adir")).unwrap();
    let mut cases = vec![
        ("sock", "is a socket"),
        ("adir", "is a directory"),
        ("missing/r.json", "not a file in an existing directory"),
    ];
    let block = node(&d.join("blk"), rustix::fs::FileType::BlockDevice, 7, 250);
    match block {
        Ok(()) => cases.push(("blk", "is a block device")),
        Err(e) => println!("skipped: the block-device case (mknod: {e}; needs root)"),
    }
    for (path, words) in cases {
        for flag in ["--json", "--csv"] {
            let out = run_in(d, &sim(&[flag, path]));
            assert_eq!(out.status.code(), Some(1), "{flag} {path}");
            assert!(
                stderr(&out).contains(words),
                "{flag} {path}: {}",
                stderr(&out)
            );
            assert!(!stderr(&out).contains("run 1/1"), "{flag} {path} ran");
        }
    }
}

#[test]
fn a_killed_writers_temporary_file_goes_with_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A temporary file of a writer that is gone (no process has this id).
    let stale = d.join(".r.json.schedlab-2147483632-Xy12Ab.tmp");
    std::fs::write(&stale, "{ half").unwrap();
    let args = sim(&["--json", "r.json"]);
    common::succeeded_in(d, &args, run_in(d, &args));
    assert_eq!(names(d), ["r.json"]);
}

#[test]
fn a_reader_that_goes_away_is_not_a_panic() {
    // `schedlab list | head -1`: the pipe closes before everything is printed.
    for args in [&["list"][..], &["check", "yield", "--backend", "sim"][..]] {
        let mut child = schedlab()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}
