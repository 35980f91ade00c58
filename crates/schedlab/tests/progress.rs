//! Issue 20: the progress bar on a terminal and the summary's exports.
//!
//! The bar is checked on a pseudo-terminal (rustix's `openpt`), whose output is replayed through
//! a small model of a terminal screen (carriage return, erase line, cursor up), so that the tests
//! see what a person would: the bar while it runs, nothing of it afterwards, and the
//! per-repetition lines whole. With stderr piped there is no bar, and the lines are the plain
//! ones. The CSV and Markdown exports are compared with the JSON record of the same seeded
//! simulated run, and with the text summary it printed.

mod common;

use common::schedlab;
use schedlab_workload::record::RunRecord;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A short simulated run: three repetitions of 10 ms of simulated time.
const SHORT: [&str; 11] = [
    "run",
    "yield",
    "--backend",
    "sim",
    "--threads",
    "4",
    "--duration",
    "10ms",
    "--runs",
    "3",
    "--seed=1",
];

/// A fresh directory for one test, removed when dropped.
fn temp_dir(name: &str) -> tempfile::TempDir {
    common::temp_dir("progress", name)
}

/// The terminal's width in columns.
const WIDTH: usize = 100;

/// A pseudo-terminal: the master side to read, the terminal to give a child as stderr.
fn pty() -> (File, File) {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("open a pseudo-terminal");
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    // A window of WIDTH columns, as the screen model has.
    let size = rustix::termios::Winsize {
        ws_row: 50,
        ws_col: WIDTH as u16,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&master, size).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(name.to_str().unwrap())
        .unwrap();
    (File::from(master), terminal)
}

/// A child whose stderr is a terminal, and everything the terminal received so far.
struct OnTerminal {
    child: Child,
    received: Arc<Mutex<Vec<u8>>>,
    reader: std::thread::JoinHandle<()>,
}

/// Start schedlab `args` with stderr on a pseudo-terminal (stdout piped).
fn spawn_on_terminal(args: &[&str]) -> OnTerminal {
    spawn_on(args, "xterm")
}

/// Start schedlab `args` with stderr on a pseudo-terminal of type `term` (stdout piped).
fn spawn_on(args: &[&str], term: &str) -> OnTerminal {
    let (mut master, terminal) = pty();
    let child = schedlab()
        .args(args)
        .env("TERM", term)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(terminal))
        .spawn()
        .expect("run schedlab");
    // The child holds the only descriptor of the terminal now: when it exits, reading the
    // master side fails (EIO), which ends the reader.
    let received = Arc::new(Mutex::new(Vec::new()));
    let sink = received.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    OnTerminal {
        child,
        received,
        reader,
    }
}

impl OnTerminal {
    /// Wait until the terminal has received `text` (or fail after a minute).
    fn wait_for(&self, text: &str) {
        let start = Instant::now();
        while !String::from_utf8_lossy(&self.received.lock().unwrap()).contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the terminal never showed {text:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait for the child to exit; its output, and every byte the terminal received.
    fn finish(self) -> (Output, String) {
        let out = self.child.wait_with_output().unwrap();
        self.reader.join().unwrap();
        let bytes = self.received.lock().unwrap().clone();
        (
            out,
            String::from_utf8(bytes).expect("UTF-8 on the terminal"),
        )
    }
}

/// The lines a terminal screen [`WIDTH`] columns wide (and of unlimited height) shows after
/// receiving `text`: printable characters overwrite at the cursor, a character past the last
/// column wraps to the next line, `\r` returns to the line's start, `\n` moves down,
/// `ESC [ n A` moves up, `ESC [ K` / `ESC [ 2K` erase; other escape sequences change nothing
/// that is shown. Trailing blanks and empty last lines are dropped.
fn screen(text: &str) -> Vec<String> {
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                if lines.len() <= row {
                    lines.push(Vec::new());
                }
            }
            '\x1b' => {
                if chars.peek() != Some(&'[') {
                    chars.next();
                    continue;
                }
                chars.next();
                let mut param = String::new();
                let mut last = ' ';
                for p in chars.by_ref() {
                    if p.is_ascii_alphabetic() || p == '~' {
                        last = p;
                        break;
                    }
                    param.push(p);
                }
                let n: usize = param.trim_start_matches('?').parse().unwrap_or(0);
                match last {
                    'K' if n == 2 => lines[row].clear(),
                    'K' => lines[row].truncate(col),
                    'A' => row = row.saturating_sub(n.max(1)),
                    _ => {}
                }
            }
            c => {
                if col >= WIDTH {
                    row += 1;
                    col = 0;
                    if lines.len() <= row {
                        lines.push(Vec::new());
                    }
                }
                let line = &mut lines[row];
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    let mut shown: Vec<String> = lines
        .into_iter()
        .map(|l| l.into_iter().collect::<String>().trim_end().to_string())
        .collect();
    while shown.last().is_some_and(|l| l.is_empty()) {
        shown.pop();
    }
    shown
}

/// Whether `line` is one of the short run's per-repetition lines, repetition `k`:
/// `yield run 2/3 [simulated 28782 events in 0.00 s]: us_per_yield: 1.392`.
fn is_repetition_line(line: &str, k: usize) -> bool {
    line.starts_with(&format!("yield run {k}/3 [simulated "))
        && line.contains(" events in ")
        && line.contains(" s]: us_per_yield: ")
}

#[test]
fn a_terminal_shows_the_bar_and_is_left_with_the_plain_lines() {
    let (out, received) = spawn_on_terminal(&SHORT).finish();
    common::succeeded(&SHORT, out.clone());
    // The bar was drawn: the configuration's repetition, the count, elapsed time.
    assert!(received.contains("yield: run 1/3"), "{received:?}");
    assert!(received.contains("0/3, 0s elapsed"), "{received:?}");
    assert!(received.contains("left"), "{received:?}");
    // ... and nothing of it is left: the screen shows the three lines, whole.
    let shown = screen(&received);
    assert_eq!(shown.len(), 3, "{shown:#?}\n{received:?}");
    for (k, line) in shown.iter().enumerate() {
        assert!(is_repetition_line(line, k + 1), "{shown:#?}");
    }
    // The summary goes to stdout as always.
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("metric "));
}

#[test]
fn quiet_on_a_terminal_shows_only_the_bar_and_leaves_nothing() {
    let mut args = SHORT.to_vec();
    args.push("-q");
    let (out, received) = spawn_on_terminal(&args).finish();
    common::succeeded(&args, out);
    assert!(received.contains("yield: run 1/3"), "{received:?}");
    assert!(!received.contains("[simulated"), "{received:?}");
    assert_eq!(screen(&received), Vec::<String>::new(), "{received:?}");
}

#[test]
fn a_dumb_terminal_gets_the_plain_lines_and_no_bar() {
    let (out, received) = spawn_on(&SHORT, "dumb").finish();
    common::succeeded(&SHORT, out);
    assert!(!received.contains('\x1b'), "{received:?}");
    assert!(!received.contains("elapsed"), "{received:?}");
    // The terminal turns each \n into \r\n; nothing else is there.
    let lines: Vec<&str> = received.split_inclusive("\r\n").collect();
    assert_eq!(lines.len(), 3, "{received:?}");
    for (k, line) in lines.iter().enumerate() {
        assert!(is_repetition_line(line, k + 1), "{received:?}");
    }
}

#[test]
fn a_pipe_gets_the_plain_lines_and_no_bar() {
    let out = schedlab()
        .args(SHORT)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = common::succeeded(&SHORT, out);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 3, "{stderr:?}");
    for (k, line) in lines.iter().enumerate() {
        let line = line.strip_suffix('\n').expect("whole lines");
        assert!(is_repetition_line(line, k + 1), "{stderr:?}");
    }
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\r'),
        "{stderr:?}"
    );
    assert!(!stderr.contains("elapsed"), "{stderr:?}");
    // -q: nothing at all.
    let out = schedlab().args(SHORT).arg("-q").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn ctrl_c_clears_the_bar_before_saying_what_was_kept() {
    let dir = temp_dir("interrupt");
    let (csv, json) = (dir.path().join("r.csv"), dir.path().join("r.json"));
    let args = [
        "sweep",
        "yield",
        "--backend",
        "sim",
        "--vary",
        "threads=2,4",
        "--duration",
        "100ms",
        "--runs",
        "500",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let running = spawn_on_terminal(&args);
    // A repetition has finished and the bar is drawn with an estimate.
    running.wait_for("left");
    let pid = rustix::process::Pid::from_raw(running.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let (out, received) = running.finish();
    assert_eq!(out.status.code(), Some(130), "{received:?}");
    let shown = screen(&received);
    assert_eq!(
        shown.last().map(String::as_str),
        Some("schedlab: interrupted; the repetitions that finished are kept"),
        "{shown:#?}"
    );
    for line in &shown[..shown.len() - 1] {
        assert!(line.starts_with("yield threads="), "{shown:#?}");
    }
    // The exports were written after each repetition, and hold what the record holds: a row
    // per configuration with a finished repetition, with its count.
    let record = read_record(&json);
    assert!(record.interrupted);
    let rows = read_csv(&csv);
    let primary: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r[2] == "us_per_yield")
        .map(|r| (r[0].as_str(), r[4].as_str()))
        .collect();
    let counts: Vec<(String, String)> = record
        .configs
        .iter()
        .filter_map(|c| {
            Some((
                c.label.clone(),
                c.summary.get("us_per_yield")?.n.to_string(),
            ))
        })
        .collect();
    let counts: Vec<(&str, &str)> = counts.iter().map(|(l, n)| (&**l, &**n)).collect();
    assert_eq!(primary, counts, "{rows:?}");
    assert!(!primary.is_empty());
}

fn read_record(path: &Path) -> RunRecord {
    RunRecord::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The CSV file's rows, header first, through the csv crate (quoting and all).
fn read_csv(path: &Path) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .unwrap();
    reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

/// The Markdown table's rows (header first, the alignment row left out), cell by cell.
fn read_markdown(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("|:"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// Whether a CSV number is the record's: the same `f64`, or its neighbour — serde_json (without
/// its `float_roundtrip` feature) may read a number back one unit in the last place off, while
/// the CSV's text (Rust's shortest round-trip form) reads back exactly.
fn same(csv: Option<f64>, record: Option<f64>) -> bool {
    match (csv, record) {
        (Some(a), Some(b)) => a.to_bits().abs_diff(b.to_bits()) <= 1 && a.signum() == b.signum(),
        (a, b) => a == b,
    }
}

/// The text summary's metric rows for each configuration, by (label, metric): their cells.
fn summary_rows(stdout: &str) -> Vec<(String, Vec<String>)> {
    let mut label = String::new();
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in stdout.lines() {
        if let Some(l) = line.strip_prefix("== ").and_then(|l| l.strip_suffix(" ==")) {
            label = l.to_string();
        } else if line.starts_with("metric ") {
            in_table = true;
        } else if line.is_empty() || line.starts_with('±') {
            in_table = false;
        } else if in_table {
            rows.push((
                label.clone(),
                line.split_whitespace().map(str::to_string).collect(),
            ));
        }
    }
    rows
}

#[test]
fn csv_and_markdown_hold_the_summarys_numbers() {
    let dir = temp_dir("exports");
    let (csv, md, json) = (
        dir.path().join("out.csv"),
        dir.path().join("out.md"),
        dir.path().join("r.json"),
    );
    let args = [
        "run",
        "yield",
        "--backend",
        "sim",
        "--threads",
        "1,4",
        "--duration",
        "10ms",
        "--runs",
        "4",
        "--seed",
        "7",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ];
    let out = common::succeeded(&args, schedlab().args(args).output().unwrap());
    let record = read_record(&json);
    let stdout = String::from_utf8(out.stdout).unwrap();

    // CSV: every configuration × metric, at full precision: the record's very numbers.
    let rows = read_csv(&csv);
    assert_eq!(
        rows[0],
        [
            "configuration",
            "threads",
            "metric",
            "unit",
            "n",
            "mean",
            "ci_half_width",
            "ci_level",
            "sd",
            "min",
            "median",
            "max",
            "hmean"
        ]
    );
    let metrics = record.metrics.len();
    assert_eq!(rows.len(), 1 + record.configs.len() * metrics);
    let number = |text: &str| -> Option<f64> {
        (!text.is_empty()).then(|| text.parse::<f64>().expect("a number"))
    };
    for (i, row) in rows[1..].iter().enumerate() {
        let config = &record.configs[i / metrics];
        let m = &record.metrics[i % metrics];
        let s = &config.summary[&m.name];
        let iv = &config.intervals[&m.name];
        assert_eq!(row[0], config.label);
        assert_eq!(row[1], config.params["threads"]);
        assert_eq!((row[2].as_str(), row[3].as_str()), (&*m.name, &*m.unit));
        assert_eq!(row[4], s.n.to_string());
        assert_eq!(row[7], "95");
        let higher = m.better == schedlab_workload::record::Better::Higher;
        let expected = [
            (5, Some(s.mean)),
            (6, iv.half_width),
            (8, Some(s.sd)),
            (9, Some(s.min)),
            (10, Some(s.median)),
            (11, Some(s.max)),
            (12, iv.harmonic_mean.filter(|_| higher)),
        ];
        for (column, value) in expected {
            let cell = number(&row[column]);
            assert!(
                same(cell, value),
                "{}: {cell:?} in the CSV, {value:?} in the record\n{row:?}",
                rows[0][column]
            );
        }
    }

    // Markdown: the same rows, each cell as the text summary printed it.
    let table = read_markdown(&md);
    assert_eq!(
        table[0],
        [
            "threads", "metric", "unit", "N", "mean", "±CI95", "SD", "min", "median", "max",
            "hmean"
        ]
    );
    let printed = summary_rows(&stdout);
    assert_eq!(printed.len(), table.len() - 1, "{stdout}");
    for ((label, cells), row) in printed.iter().zip(&table[1..]) {
        assert_eq!(*label, format!("threads={}", row[0]));
        assert_eq!(cells[..], row[1..], "{stdout}");
    }
}

#[test]
fn a_sweep_exports_one_row_per_configuration_and_metric_with_the_varied_keys() {
    let dir = temp_dir("sweep");
    let (csv, md) = (dir.path().join("s.csv"), dir.path().join("s.md"));
    let args = [
        "sweep",
        "yield",
        "--backend",
        "sim",
        "--vary",
        "threads=1,16",
        "--vary",
        "policy=cfs,eevdf",
        "--duration",
        "10ms",
        "--runs",
        "2",
        "-q",
        "--csv",
        csv.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ];
    let out = common::succeeded(&args, schedlab().args(args).output().unwrap());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let rows = read_csv(&csv);
    assert_eq!(
        rows[0][..4],
        ["configuration", "threads", "policy", "metric"]
    );
    let primary: Vec<&Vec<String>> = rows.iter().filter(|r| r[3] == "us_per_yield").collect();
    let points: Vec<(&str, &str)> = primary
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        points,
        [("1", "cfs"), ("1", "eevdf"), ("16", "cfs"), ("16", "eevdf")]
    );
    // The sweep table's "mean ± CI" cells are the Markdown's mean and ±CI cells.
    let table = read_markdown(&md);
    assert_eq!(table[0][..3], ["threads", "policy", "metric"]);
    for row in table[1..].iter().filter(|r| r[2] == "us_per_yield") {
        let cell = format!("{} ± {}", row[5], row[6]);
        assert!(stdout.contains(&cell), "{cell} not in\n{stdout}");
    }
}
