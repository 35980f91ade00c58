//! Helpers the binary's test files share.

use std::process::Output;

/// `out`, after asserting that `schedlab args` succeeded (else its stdout and stderr).
pub fn succeeded(args: &[&str], out: Output) -> Output {
    assert!(
        out.status.success(),
        "schedlab {args:?} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
