//! `bin/test`'s closing line: the tests that printed `skipped:` are counted and named with
//! their reasons, read from libtest's `--show-output` blocks; a log without test results fails.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The repository's `bin/test`.
fn bin_test() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bin/test")
}

/// `bin/test --summarise` of `log`: its status and its output's lines.
fn summarise(log: &str) -> (bool, Vec<String>) {
    let mut child = Command::new("bash")
        .arg(bin_test())
        .arg("--summarise")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run bash bin/test --summarise");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(log.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    (
        out.status.success(),
        text.lines().map(str::to_string).collect(),
    )
}

/// Set by [`a_real_test_binarys_skip_is_named_with_its_test`] for its run of this binary.
const ASKED: &str = "SCHEDLAB_TEST_PRINT_A_SKIP";

/// A fixture of the test below: prints a skip when that test runs it (and nothing otherwise,
/// so that the suite's own summary does not count it).
#[test]
fn fixture_prints_a_skip_when_asked() {
    if std::env::var_os(ASKED).is_some() {
        println!("skipped: asked to by the summary test");
    }
}

/// This toolchain's libtest, not a copy of its format: this binary is run again on the fixture
/// with `--show-output`, and the summary names the fixture and its reason.
#[test]
fn a_real_test_binarys_skip_is_named_with_its_test() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fixture_prints_a_skip_when_asked",
            "--show-output",
        ])
        .env(ASKED, "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    // cargo's line before each test binary names it.
    let log = format!(
        "     Running tests/skips.rs (target/release/deps/skips-0123456789abcdef)\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (ok, lines) = summarise(&log);
    assert!(ok, "{lines:?}");
    assert_eq!(
        lines.last().unwrap(),
        "skips: 1 of 1 passed tests skipped a check, 0 ignored: \
         skips::fixture_prints_a_skip_when_asked (asked to by the summary test)"
    );
    // The captured output is read, not shown: the log reads as plain `cargo test`'s.
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("---- ") || l == "successes:"),
        "{lines:?}"
    );
    assert!(lines
        .iter()
        .any(|l| l.starts_with("test result: ok. 1 passed")));
}

/// Two binaries' worth of libtest output: skips in several tests (one with two reasons),
/// an ignored test, a failure, and a skip printed past the capture.
#[test]
fn every_skip_and_ignored_test_is_counted_and_failures_stay_in_the_log() {
    let log = "\
   Compiling schedlab v0.1.0
     Running unittests src/lib.rs (target/release/deps/schedlab_real-5f2a9c0d1e2b3a4c)

running 3 tests
test runner::tests::rt ... ok
test trace::tests::bench ... ignored, benchmark (~10 s)
test host::tests::limits ... ok

successes:

---- runner::tests::rt stdout ----
skipped: real-time priorities need root (CAP_SYS_NICE)

---- host::tests::limits stdout ----
some other output
skipped: the hard limit is unlimited
skipped: the soft limit equals the hard one


successes:
    host::tests::limits
    runner::tests::rt

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/report.rs (target/release/deps/report-0a1b2c3d4e5f6a7b)

running 2 tests
skipped: from a child process
test renders ... ok
test fails ... FAILED

successes:

successes:
    renders

failures:

---- fails stdout ----
thread 'fails' panicked at tests/report.rs:1:1

failures:
    fails

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s
";
    let (ok, lines) = summarise(log);
    // The log holds a failure: the summary fails, so the README's pipeline fails.
    assert!(!ok);
    assert_eq!(
        lines.last().unwrap(),
        "skips: 3 of 3 passed tests skipped a check, 1 ignored: \
         schedlab_real::runner::tests::rt (real-time priorities need root (CAP_SYS_NICE)); \
         schedlab_real::host::tests::limits (the hard limit is unlimited; the soft limit equals \
         the hard one); report (uncaptured #1) (from a child process); \
         ignored schedlab_real::trace::tests::bench (benchmark (~10 s))"
    );
    // A passing test's output is left out; a failure's is shown whole.
    assert!(!lines.iter().any(|l| l == "some other output"));
    assert!(lines.iter().any(|l| l == "---- fails stdout ----"));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("thread 'fails' panicked")));
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("test result:"))
            .count(),
        2
    );
}

#[test]
fn a_log_without_test_results_fails_the_summary() {
    let (ok, lines) = summarise("error: could not compile `schedlab`\n");
    assert!(!ok);
    assert_eq!(
        lines.last().unwrap(),
        "skips: no test result in the log: nothing ran, or the output is not libtest's"
    );
}
