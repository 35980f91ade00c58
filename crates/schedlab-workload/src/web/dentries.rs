//! The web file set as a directory-entry cache, so that the simulated server's file opens go
//! through seed 003's walk ([`crate::dcache`]): `web --dcache lock|fastwalk|rcu`.
//!
//! A request's path below the document root is SPECweb99's `file_set/dirNNNNN/classC_F`
//! (whitepaper §4.5), and the server opens it by its absolute path, which the kernel walks from
//! `/`: the document root is Apache 2.0's default, `/usr/local/apache2/htdocs` (seed 000's and
//! seed 003's runs are Troy Wilson's Apache 2.0 SPECweb99 setup; the seed does not give its
//! document root), so a path has [`PATH_COMPONENTS`] = 4 + 3 components, each one entry of the
//! cache — the document root's four (ids 0..4), `file_set` (id 4), the directories (ids
//! `5 ..`, named by their number) and their 36 files (named `class × 9 + file`). The seed's
//! server had "more RAM than you and I can dream of", and
//! SPECweb99's file set is read over and over: every entry is cached, so no walk misses and each
//! takes `dcache_lock` exactly as its strategy's definition says for a miss-free path of seven.

use super::fileset::{FileId, CLASSES, FILES_PER_CLASS};
use crate::dcache::{Dcache, Dentries, ROOT};
use crate::error::ValueError;

/// The document root's components, from `/`: Apache 2.0's default `/usr/local/apache2/htdocs`.
pub const DOCUMENT_ROOT: [&str; 4] = ["usr", "local", "apache2", "htdocs"];

/// Components of every request's absolute path: the document root's, then `file_set`, its
/// directory and the file.
pub const PATH_COMPONENTS: usize = DOCUMENT_ROOT.len() + 3;

/// The id of `file_set` (the document root's entries come first).
const FILE_SET: u32 = DOCUMENT_ROOT.len() as u32;

/// Files per directory.
const FILES_PER_DIR: u32 = (CLASSES * FILES_PER_CLASS) as u32;

/// The cache of a file set of `dirs` directories, every entry held.
pub fn fileset_dentries(dirs: usize) -> Dentries {
    let dirs = dirs as u32;
    let entries = FILE_SET + 1 + dirs + dirs * FILES_PER_DIR;
    let mut parent = Vec::with_capacity(entries as usize);
    let mut name = Vec::with_capacity(entries as usize);
    // The document root and `file_set`: a chain, each the only child of the one before.
    for e in 0..=FILE_SET {
        parent.push(e.checked_sub(1).unwrap_or(ROOT));
        name.push(0);
    }
    for d in 0..dirs {
        parent.push(FILE_SET);
        name.push(d);
    }
    for d in 0..dirs {
        for f in 0..FILES_PER_DIR {
            parent.push(FILE_SET + 1 + d);
            name.push(f);
        }
    }
    Dentries::new(parent, name, 0..entries)
}

/// The cache entries of `file`'s path in a file set of `dirs` directories, from the top.
pub fn dentry_path(dirs: usize, file: FileId) -> [u32; PATH_COMPONENTS] {
    let in_dir = file.class as u32 * FILES_PER_CLASS as u32 + file.file as u32;
    let dir = FILE_SET + 1 + file.dir;
    let file = FILE_SET + 1 + dirs as u32 + file.dir * FILES_PER_DIR + in_dir;
    [0, 1, 2, 3, FILE_SET, dir, file]
}

/// Parse web's `dcache` parameter: `none` (no model; on the real kernel the server's `open(2)`
/// walks the running kernel's own dcache) or a modelled strategy.
pub fn parse_web_dcache(value: &str) -> Result<Option<Dcache>, ValueError> {
    match value.trim() {
        "none" => Ok(None),
        "kernel" => Err(ValueError::new(format!(
            "dcache '{value}' is not accepted for web: the real server's open(2) already walks the running kernel's dcache (dcache=none); use none, lock, fastwalk or rcu"
        ))),
        v => match v.parse::<Dcache>() {
            Ok(d) => Ok(Some(d)),
            Err(_) => Err(ValueError::new(format!(
                "dcache '{value}' is not accepted; use none, lock, fastwalk or rcu"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_resolves_through_its_directory() {
        let dirs = 3;
        let cache = fileset_dentries(dirs);
        assert_eq!(cache.len(), 5 + 3 + 3 * 36);
        assert_eq!(cache.cached(), cache.len());
        let mut seen = std::collections::HashSet::new();
        for dir in 0..dirs as u32 {
            for class in 0..CLASSES as u8 {
                for file in 0..FILES_PER_CLASS as u8 {
                    let path = dentry_path(dirs, FileId { dir, class, file });
                    let mut parent = ROOT;
                    for e in path {
                        assert_eq!(cache.parent(e), parent);
                        assert_eq!(cache.lookup(parent, e), Some(e));
                        parent = e;
                    }
                    assert!(seen.insert(path[6]), "{path:?} twice");
                }
            }
        }
    }

    #[test]
    fn the_parameter_names_what_is_accepted() {
        assert_eq!(parse_web_dcache("none"), Ok(None));
        assert_eq!(parse_web_dcache("rcu"), Ok(Some(Dcache::Rcu)));
        let e = parse_web_dcache("seqlock").unwrap_err().to_string();
        assert!(
            e.contains("'seqlock'") && e.contains("none, lock, fastwalk or rcu"),
            "{e}"
        );
        let e = parse_web_dcache("kernel").unwrap_err().to_string();
        assert!(e.contains("open(2)") && e.contains("use none"), "{e}");
    }
}
