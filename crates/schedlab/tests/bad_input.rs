//! The bad-input corpus: every `*.txt` in `tests/bad-input/` lists commands that schedlab must
//! refuse before anything starts, one per line, tab-separated:
//!
//! ```text
//! EXIT<TAB>WORDS<TAB>ARGS
//! 1<TAB>needs the form NAME:knob=value<TAB>run chat --backend sim --group nocolon
//! ```
//!
//! EXIT is the expected exit status, WORDS a substring stderr must contain, ARGS the arguments
//! separated by single spaces (no quoting). Lines starting with `#` and empty lines are skipped.
//! Each case runs the built binary in an empty directory of its own (also its `TMPDIR`) and must
//! exit with EXIT, say WORDS on stderr, print nothing on stdout, leave that directory empty,
//! not panic, and finish within [`LIMIT`]. Every failing line is listed, not just the first.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A refusal must come before anything runs: well within this.
const LIMIT: Duration = Duration::from_secs(5);
/// A case still running after this is killed (it started something it should have refused).
const KILL_AFTER: Duration = Duration::from_secs(15);
/// Cases run in this many threads at once.
const THREADS: usize = 4;

/// One line of the corpus.
struct Case {
    /// `file:line`, for messages.
    place: String,
    exit: i32,
    words: String,
    args: Vec<String>,
}

/// What one case did.
struct Outcome {
    exit: Option<i32>,
    signal: Option<i32>,
    elapsed: Duration,
    stdout: String,
    stderr: String,
    left: Vec<String>,
    killed: bool,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-input")
}

/// Parse every `*.txt` of the corpus; malformed lines come back as errors.
fn read_corpus(dir: &Path) -> (Vec<Case>, Vec<String>, usize) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (i, line) in text.lines().enumerate() {
            let place = format!("{name}:{}", i + 1);
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let [exit, words, args] = fields[..] else {
                errors.push(format!(
                    "{place}: malformed line (want EXIT<TAB>WORDS<TAB>ARGS, got {} field(s)): {line:?}",
                    fields.len()
                ));
                continue;
            };
            let Ok(exit) = exit.trim().parse::<i32>() else {
                errors.push(format!("{place}: EXIT {exit:?} is not a number"));
                continue;
            };
            if words.is_empty() {
                errors.push(format!("{place}: WORDS is empty"));
                continue;
            }
            if exit == 0 {
                errors.push(format!("{place}: EXIT 0 is not a refusal"));
                continue;
            }
            // `$ROOT` is the repository (workload files of the corpus and the examples).
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let root = root.canonicalize().unwrap_or(root);
            let args: Vec<String> = args
                .split(' ')
                .filter(|a| !a.is_empty())
                .map(|a| a.replace("$ROOT", &root.display().to_string()))
                .collect();
            cases.push(Case {
                place,
                exit,
                words: words.to_string(),
                args,
            });
        }
    }
    (cases, errors, files.len())
}

/// Everything under `dir`, as paths relative to it.
fn contents(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            found.push(p.strip_prefix(dir).unwrap_or(&p).display().to_string());
        }
    }
    found.sort();
    found
}

/// Run one case in a fresh directory `base/work` (its cwd and TMPDIR), output in `base`.
fn run_case(case: &Case, base: &Path) -> Outcome {
    let work = base.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out_path = base.join("stdout");
    let err_path = base.join("stderr");
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(&case.args)
        .current_dir(&work)
        .env("TMPDIR", &work)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start schedlab");
    let mut killed = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > KILL_AFTER {
            let _ = child.kill();
            killed = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = start.elapsed();
    use std::os::unix::process::ExitStatusExt;
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into();
    Outcome {
        exit: status.code(),
        signal: status.signal(),
        elapsed,
        stdout: read(&out_path),
        stderr: read(&err_path),
        left: contents(&work),
        killed,
    }
}

/// What is wrong with an outcome, if anything.
fn problems(case: &Case, o: &Outcome) -> Vec<String> {
    let mut p = Vec::new();
    if o.killed {
        p.push(format!(
            "still running after {} s (killed): it started something",
            KILL_AFTER.as_secs()
        ));
    }
    if o.exit != Some(case.exit) {
        p.push(match (o.exit, o.signal) {
            (Some(c), _) => format!("exit {c}, expected {}", case.exit),
            (None, Some(s)) => format!("killed by signal {s}, expected exit {}", case.exit),
            _ => format!("no exit status, expected {}", case.exit),
        });
    }
    if !o.stderr.contains(&case.words) {
        p.push(format!("stderr lacks {:?}", case.words));
    }
    if o.stderr.contains("panicked") {
        p.push("it panicked".into());
    }
    if !o.stdout.is_empty() {
        p.push(format!("stdout not empty ({} bytes)", o.stdout.len()));
    }
    if !o.left.is_empty() {
        p.push(format!("left in its directory: {:?}", o.left));
    }
    if o.elapsed >= LIMIT {
        p.push(format!(
            "took {:.2} s (limit {} s)",
            o.elapsed.as_secs_f64(),
            LIMIT.as_secs()
        ));
    }
    p
}

/// At most `max` characters of `s`, on one indented block.
fn excerpt(s: &str, max: usize) -> String {
    let t: String = s.trim_end().chars().take(max).collect();
    let more = if s.trim_end().chars().count() > max {
        " …"
    } else {
        ""
    };
    t.replace('\n', "\n      ") + more
}

#[test]
fn every_bad_input_in_the_corpus_is_refused_before_anything_starts() {
    let dir = corpus_dir();
    let (cases, mut failures, files) = read_corpus(&dir);
    let lines = cases.len() + failures.len();
    assert!(
        files > 0 && !cases.is_empty(),
        "no cases in {}/*.txt",
        dir.display()
    );
    let scratch = std::env::temp_dir().join(format!("bad-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..THREADS.min(cases.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let outcome = run_case(case, &scratch.join(i.to_string()));
                results.lock().unwrap().push((i, outcome));
            });
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    for (i, o) in &results {
        let case = &cases[*i];
        let p = problems(case, o);
        if p.is_empty() {
            continue;
        }
        failures.push(format!(
            "{}: schedlab {}\n    expected: exit {}, stderr containing {:?}, empty stdout, under {} s\n    got: {}\n    stderr: {}{}",
            case.place,
            case.args.join(" "),
            case.exit,
            case.words,
            LIMIT.as_secs(),
            p.join("; "),
            excerpt(&o.stderr, 600),
            if o.stdout.is_empty() {
                String::new()
            } else {
                format!("\n    stdout: {}", excerpt(&o.stdout, 300))
            }
        ));
    }
    let slowest = results
        .iter()
        .max_by_key(|(_, o)| o.elapsed)
        .map(|(i, o)| {
            format!(
                "{} ({:.0} ms: schedlab {})",
                cases[*i].place,
                o.elapsed.as_secs_f64() * 1e3,
                cases[*i].args.join(" ")
            )
        })
        .unwrap_or_default();
    println!(
        "{} bad inputs from {files} file(s) in {}; slowest: {slowest}",
        cases.len(),
        dir.display()
    );
    assert!(
        failures.is_empty(),
        "{} of {} corpus lines failed:\n\n{}\n\nslowest: {slowest}",
        failures.len(),
        lines,
        failures.join("\n\n")
    );
}
