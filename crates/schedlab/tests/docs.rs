//! The documentation stays true to the tree: every file path docs/architecture.md names exists,
//! and every relative link in docs/*.md and README.md points to a file that exists (and, with
//! `#anchor`, to a heading of it).
//!
//! A path in backticks that starts at a top-level entry of the repository (`crates/…`,
//! `bench/…`) must exist there; a shorter one (`hosts.rs`, `machine/steps.rs`, written where
//! the crate is clear from the sentence) must be the end of some file's or directory's path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file and directory under the repository's root, relative to it with `/` separators
/// (directories end in `/`), leaving out build output and version control.
fn tree() -> BTreeSet<String> {
    let root = root();
    let mut out = BTreeSet::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == "target" || rel == ".git" || rel.ends_with("/target") {
                continue;
            }
            if path.is_dir() {
                out.insert(format!("{rel}/"));
                stack.push(path);
            } else {
                out.insert(rel);
            }
        }
    }
    out
}

/// The lines of a Markdown text outside fenced code blocks (and not their fences).
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The spans of text in backticks, outside fenced code blocks.
fn backticked(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut parts = line.split('`');
        parts.next();
        while let Some(inside) = parts.next() {
            out.push(inside.to_string());
            parts.next();
        }
    }
    out
}

/// Whether a backticked span names a file or directory of the tree: a word with a `/` or a
/// source or script file's ending, with no placeholder, option or Rust path in it. Absolute
/// paths are the machine's (`/proc/…`), not the tree's.
fn names_a_path(span: &str) -> bool {
    let plain = !span.is_empty()
        && !span.starts_with('/')
        && !span.starts_with('-')
        && !span.contains("::")
        && !span
            .chars()
            .any(|c| c.is_whitespace() || "<>$*{}()=,:".contains(c));
    let source = [".rs", ".sh", ".py", ".md", ".c"]
        .iter()
        .any(|ext| span.ends_with(ext));
    plain && (span.contains('/') || source)
}

/// Whether `path` (as written in the docs) is in `tree`: at that place when it starts at a
/// top-level entry, else as the end of some entry's path.
fn resolves(path: &str, tree: &BTreeSet<String>) -> bool {
    let top = path.split('/').next().unwrap_or_default();
    let rooted = tree.contains(&format!("{top}/")) || tree.contains(top);
    if rooted {
        return tree.contains(path) || tree.contains(&format!("{path}/"));
    }
    tree.iter()
        .any(|entry| entry.ends_with(&format!("/{path}")) || entry.ends_with(&format!("/{path}/")))
}

#[test]
fn every_path_the_architecture_page_names_exists() {
    let tree = tree();
    let page = root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&page).unwrap();
    let named: BTreeSet<String> = backticked(&text)
        .into_iter()
        .filter(|s| names_a_path(s))
        .collect();
    // The page names the crates' files throughout; fewer would mean this test no longer sees
    // them.
    assert!(
        named.len() > 50,
        "only {} paths found: {named:?}",
        named.len()
    );
    assert!(
        named.contains("crates/schedlab-real/src/sys.rs"),
        "{named:?}"
    );
    let missing: Vec<&String> = named.iter().filter(|p| !resolves(p, &tree)).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn the_path_check_refuses_what_is_not_there() {
    let tree = tree();
    for gone in [
        "crates/schedlab-real/src/no_such_file.rs",
        "no_such_file.rs",
        "machine/no_such_dir/",
        // A short path must match whole names: `ys.rs` is not `sys.rs`.
        "ys.rs",
    ] {
        assert!(!resolves(gone, &tree), "{gone}");
    }
    for there in [
        "crates/schedlab-real/src/sys.rs",
        "crates/schedlab-real/src/",
        "sys.rs",
        "machine/steps.rs",
        "bench/golden.sh",
    ] {
        assert!(resolves(there, &tree), "{there}");
    }
    assert!(!names_a_path("--timeline"));
    assert!(!names_a_path("schedlab_real::host"));
    assert!(!names_a_path("/proc/thread-self/sched"));
    assert!(!names_a_path("$TMPDIR/schedlab-<pid>-XXXXXX"));
    assert!(names_a_path("policy/ds/key_deque.rs"));
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation other than `-` and `_`
/// dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (outside fenced code).
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .filter(|line| line.starts_with('#'))
        .map(|line| slug(line.trim_start_matches('#')))
        .collect()
}

/// The targets of a Markdown text's inline links and images (`[text](target)`), outside fenced
/// code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            // `[t](target "title")`: the target is the first word.
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            out.push(target.to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_points_to_a_file_and_heading_that_exist() {
    let root = root();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.push(root.join("README.md"));
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in link_targets(&text) {
            let scheme = target
                .split_once(':')
                .is_some_and(|(s, _)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphabetic()));
            if target.is_empty() || scheme {
                continue; // https:, mailto: — not the tree's
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let name = page.strip_prefix(&root).unwrap().display().to_string();
            if !linked.exists() {
                broken.push(format!("{name}: {target} (no such file)"));
                continue;
            }
            if !anchor.is_empty() {
                let text = std::fs::read_to_string(&linked).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    broken.push(format!("{name}: {target} (no such heading)"));
                }
            }
        }
    }
    assert!(checked > 10, "only {checked} links found");
    assert!(broken.is_empty(), "broken links: {broken:#?}");
}

#[test]
fn anchors_are_github_s() {
    assert_eq!(
        slug(" Run-queue timeline (`--timeline FILE.svg`)"),
        "run-queue-timeline---timeline-filesvg"
    );
    assert_eq!(slug("What the counters cost"), "what-the-counters-cost");
    assert_eq!(
        link_targets("see [a](docs/a.md#x) and ![b](b.png \"t\") and [c](https://x.org)"),
        ["docs/a.md#x", "b.png", "https://x.org"]
    );
}

/// The README is the front door: what schedlab is, set-up, the two commands, a short tour. The
/// manual is docs/.
#[test]
fn the_readme_stays_short() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines; at most 400 (move the rest into docs/)"
    );
}

/// The docs describe the tool, not how it was built: no sessions or issue numbers of the
/// project, no development machine and none of its paths (history belongs in git).
#[test]
fn the_docs_are_a_manual_not_a_log() {
    let notebook = [
        "session ",
        "session-",
        "this session",
        "development VM",
        "development machine",
        "/work/",
        "/root/",
        "tonight",
        "last night",
        "issue #",
        "(issue ",
    ];
    let mut pages = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            pages.push(p);
        }
    }
    let mut found = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            for word in notebook {
                // rt-app's own issue tracker is cited as a source ("its issue #37"); that is
                // not the project's history.
                if lower.contains(&word.to_lowercase()) && !lower.contains("its issue") {
                    found.push(format!(
                        "{}:{}: {word:?}",
                        page.strip_prefix(root()).unwrap_or(page).display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "lab-notebook words in the docs:\n{}",
        found.join("\n")
    );
}

/// `.ci/run` runs exactly the README's test command (after its optional installs).
#[test]
fn ci_runs_the_readme_s_test_command() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("Run the tests"))
        .expect("README: a paragraph starting 'Run the tests'");
    let command = lines[at..]
        .iter()
        .find_map(|l| l.strip_prefix("    "))
        .expect("README: the test command, indented, after 'Run the tests'");
    assert!(command.starts_with("cargo test "), "{command}");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let last = ci.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(
        last, command,
        ".ci/run's last line against the README's test command"
    );
}
