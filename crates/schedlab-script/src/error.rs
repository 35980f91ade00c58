//! Errors of a workload file: each names where it is (`file:line:column`), the offending value
//! and what is accepted.

use crate::span::{LineCol, Span};
use std::fmt;
use std::path::{Path, PathBuf};

/// One fault found in a file, at a place in its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where.
    pub span: Span,
    /// What is wrong and what is accepted (`compute '5' has no unit; use a duration such as 5ms`).
    pub message: String,
}

impl Diagnostic {
    /// A fault at `span`.
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
        }
    }
}

/// Why a workload file could not be used: where, and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// Line and column of the fault (`None` for faults of the file as a whole: unreadable).
    pub at: Option<LineCol>,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl FileError {
    /// The error for `diagnostic` in the file at `path` whose text is `text`.
    pub fn at(path: &Path, text: &str, diagnostic: Diagnostic) -> FileError {
        FileError {
            path: path.to_path_buf(),
            at: Some(LineCol::of(text, diagnostic.span.start)),
            message: diagnostic.message,
        }
    }

    /// A fault of the file as a whole.
    pub fn whole(path: &Path, message: impl Into<String>) -> FileError {
        FileError {
            path: path.to_path_buf(),
            at: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(at) => write!(f, "{}:{at}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// The accepted name nearest to `given`, when it is close enough to be a typo (a Levenshtein
/// distance of at most a third of its length, at least 1).
pub fn nearest<'a>(given: &str, accepted: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (given.chars().count() / 3).max(1);
    accepted
        .into_iter()
        .map(|a| (edit_distance(given, a), a))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

/// ` (did you mean 'x'?)` when `given` is near an accepted name, else nothing.
pub fn did_you_mean<'a>(given: &str, accepted: impl IntoIterator<Item = &'a str>) -> String {
    nearest(given, accepted).map_or(String::new(), |n| format!(" (did you mean '{n}'?)"))
}

/// Edit distance between two strings, in characters: insertions, deletions, substitutions and
/// swaps of two neighbours (`nmae` is one edit from `name`), each counting 1 (the optimal string
/// alignment distance).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j - 1] + cost)
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// `v` as a whole number in `lo..=hi`; the error, at `span`, says "`subject` is `v`" and what
/// is accepted.
pub(crate) fn whole(
    span: Span,
    subject: &str,
    v: f64,
    lo: u64,
    hi: u64,
) -> Result<u64, Diagnostic> {
    if v.fract() != 0.0 || v < lo as f64 || v > hi as f64 || !v.is_finite() {
        return Err(Diagnostic::new(
            span,
            format!("{subject} is {v}; accepted: a whole number in {lo}..{hi}"),
        ));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_nearest_name_and_a_stranger_gets_none() {
        let keys = ["compute", "sleep", "send", "recv"];
        assert_eq!(nearest("compte", keys), Some("compute"));
        assert_eq!(nearest("slep", keys), Some("sleep"));
        assert_eq!(nearest("xyzzy", keys), None);
        assert_eq!(
            nearest("nmae", ["name", "tasks"]),
            Some("name"),
            "a swap is one edit"
        );
        assert_eq!(nearest("yeild", ["yield", "truncate"]), Some("yield"));
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            did_you_mean("recieve", ["recv", "receive"]),
            " (did you mean 'receive'?)"
        );
    }

    #[test]
    fn an_error_names_file_line_and_column() {
        let text = "a = 1\nb = 2\n";
        let e = FileError::at(
            Path::new("w.toml"),
            text,
            Diagnostic::new(Span::new(6, 7), "unknown key 'b'"),
        );
        assert_eq!(e.to_string(), "w.toml:2:1: unknown key 'b'");
    }
}
