//! SPECweb99's file set: directories scaled with the target connections, each holding four
//! classes of nine files (class `c`, file `f` is `(f + 1) × 102 × 10^c` bytes, rounded as
//! SPECweb99's 102 / 1024 / 10240 / 102400 byte steps), named `file_set/dirNNNNN/classC_F`
//! (SPECweb99 whitepaper §4.5; SPECweb96's workload page, Tables 1 and 2; docs/web.md).
//!
//! Every file's bytes are a function of the seed and its path alone: its path and a newline,
//! then a window of one seeded 1 MiB block starting at an offset drawn from the path. A client
//! checks a response byte for byte against the same block (a memory compare) without reading
//! the disk, and a file served for another differs from its first byte.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Number of size classes.
pub const CLASSES: usize = 4;
/// Files per class in each directory.
pub const FILES_PER_CLASS: usize = 9;
/// The size step of each class in bytes: file `f` of class `c` is `(f + 1) × STEP[c]`.
pub const CLASS_STEP: [usize; CLASSES] = [102, 1024, 10_240, 102_400];
/// The most directories a file set may have (SPECweb99's scaling gives this many at about
/// 30 000 connections; 488 GB of files).
pub const MAX_DIRS: usize = 100_000;

/// Length of the seeded block every file's body is a window of.
const BLOCK_LEN: usize = 1 << 20;

/// One file of the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    /// Directory, from 0.
    pub dir: u32,
    /// Class, 0..[`CLASSES`].
    pub class: u8,
    /// File within the class, 0..[`FILES_PER_CLASS`].
    pub file: u8,
}

impl FileId {
    /// Its size in bytes.
    pub fn size(self) -> usize {
        (self.file as usize + 1) * CLASS_STEP[self.class as usize]
    }

    /// Its URL path, `/file_set/dirNNNNN/classC_F` (always 31 bytes: requests have one length).
    pub fn url(self) -> String {
        format!("/{}", self.rel_path())
    }

    /// Its path relative to the document root.
    pub fn rel_path(self) -> String {
        format!(
            "file_set/dir{:05}/class{}_{}",
            self.dir, self.class, self.file
        )
    }
}

/// Why a file set cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileSetError {
    /// It does not fit the disk budget.
    OverBudget {
        /// Bytes the file set needs.
        bytes: u64,
        /// The budget.
        budget: u64,
        /// Its directories.
        dirs: usize,
    },
    /// Too many directories.
    TooManyDirs(usize),
}

impl fmt::Display for FileSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileSetError::OverBudget {
                bytes,
                budget,
                dirs,
            } => write!(
                f,
                "the file set ({dirs} directories, {:.1} MB) does not fit the disk budget of \
                 {:.1} MB; raise --disk-budget, or lower --connections or --dirs",
                *bytes as f64 / 1e6,
                *budget as f64 / 1e6
            ),
            FileSetError::TooManyDirs(d) => {
                write!(f, "{d} directories is not accepted; use 1..{MAX_DIRS}")
            }
        }
    }
}

impl std::error::Error for FileSetError {}

/// A file set: how many directories, and the seed of its contents.
#[derive(Clone, PartialEq, Eq)]
pub struct FileSet {
    dirs: usize,
    seed: u64,
    block: Vec<u8>,
}

/// SPECweb99's number of directories for `connections` simultaneous connections:
/// `floor(25 + (400000 / 122000) × connections / 5)`.
pub fn specweb_dirs(connections: usize) -> usize {
    (25.0 + (400_000.0 / 122_000.0) * connections as f64 / 5.0) as usize
}

/// Bytes of one directory (36 files): 5 119 470.
pub fn dir_bytes() -> u64 {
    let per_step: usize = (1..=FILES_PER_CLASS).sum();
    CLASS_STEP.iter().map(|s| (s * per_step) as u64).sum()
}

impl fmt::Debug for FileSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSet")
            .field("dirs", &self.dirs)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl FileSet {
    /// A file set of `dirs` directories whose contents follow from `seed`.
    pub fn new(dirs: usize, seed: u64) -> Result<FileSet, FileSetError> {
        if dirs == 0 || dirs > MAX_DIRS {
            return Err(FileSetError::TooManyDirs(dirs));
        }
        let mut block = vec![0u8; BLOCK_LEN];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        rng.fill_bytes(&mut block);
        // Printable bytes, so that a response shown in an error reads as text.
        for b in &mut block {
            *b = b'!' + *b % 94;
        }
        Ok(FileSet { dirs, seed, block })
    }

    /// Its number of directories.
    pub fn dirs(&self) -> usize {
        self.dirs
    }

    /// Total bytes of its files.
    pub fn bytes(&self) -> u64 {
        self.dirs as u64 * dir_bytes()
    }

    /// Refuse it when it needs more than `budget` bytes.
    pub fn check_budget(&self, budget: u64) -> Result<(), FileSetError> {
        if self.bytes() > budget {
            return Err(FileSetError::OverBudget {
                bytes: self.bytes(),
                budget,
                dirs: self.dirs,
            });
        }
        Ok(())
    }

    /// Every file, directory by directory.
    pub fn files(&self) -> impl Iterator<Item = FileId> + '_ {
        (0..self.dirs as u32).flat_map(|dir| {
            (0..CLASSES as u8).flat_map(move |class| {
                (0..FILES_PER_CLASS as u8).map(move |file| FileId { dir, class, file })
            })
        })
    }

    /// Where the file's body starts in the block (a hash of its path and the seed).
    fn offset(&self, id: FileId) -> usize {
        let mut h = self.seed ^ 0x9e37_79b9_7f4a_7c15;
        for v in [id.dir as u64, id.class as u64, id.file as u64] {
            h = (h ^ v).wrapping_mul(0x1000_0000_01b3).rotate_left(29);
        }
        (h % BLOCK_LEN as u64) as usize
    }

    /// Call `f` with the pieces of the file's contents, in order (at most a few slices: its path
    /// line and windows of the block).
    pub fn for_each_piece(&self, id: FileId, mut f: impl FnMut(&[u8])) {
        let head = format!("{}\n", id.rel_path());
        let size = id.size();
        let head = &head.as_bytes()[..head.len().min(size)];
        f(head);
        let mut left = size - head.len();
        let mut at = self.offset(id);
        while left > 0 {
            let n = left.min(BLOCK_LEN - at);
            f(&self.block[at..at + n]);
            left -= n;
            at = (at + n) % BLOCK_LEN;
        }
    }

    /// The file's contents.
    pub fn contents(&self, id: FileId) -> Vec<u8> {
        let mut out = Vec::with_capacity(id.size());
        self.for_each_piece(id, |p| out.extend_from_slice(p));
        out
    }

    /// Whether `data` is exactly the file's contents; if not, the offset of the first wrong
    /// byte (or of the missing or extra ones).
    pub fn verify(&self, id: FileId, data: &[u8]) -> Result<(), usize> {
        let mut at = 0;
        let mut bad = None;
        self.for_each_piece(id, |p| {
            if bad.is_some() {
                return;
            }
            let got = &data[at.min(data.len())..(at + p.len()).min(data.len())];
            if got == p {
                at += p.len();
            } else {
                // The first differing byte, or where the data ran out.
                bad = Some(at + got.iter().zip(p).take_while(|(a, b)| a == b).count());
            }
        });
        match bad {
            Some(b) => Err(b),
            None if data.len() != at => Err(at),
            None => Ok(()),
        }
    }

    /// Write every file under `root` (`root/file_set/dirNNNNN/classC_F`).
    pub fn write(&self, root: &Path) -> io::Result<()> {
        self.write_from(root, 0)
    }

    /// Write the files of directories `from..` under `root`: a file's contents follow from the
    /// seed and its path alone, so a smaller set of the same seed is there already and a
    /// larger set's directory serves a smaller set too.
    pub fn write_from(&self, root: &Path, from: usize) -> io::Result<()> {
        for dir in from.min(self.dirs) as u32..self.dirs as u32 {
            let d: PathBuf = root.join(format!("file_set/dir{dir:05}"));
            std::fs::create_dir_all(&d)?;
            for class in 0..CLASSES as u8 {
                for file in 0..FILES_PER_CLASS as u8 {
                    let id = FileId { dir, class, file };
                    let f = std::fs::File::create(d.join(format!("class{class}_{file}")))?;
                    let mut w = io::BufWriter::with_capacity(1 << 16, f);
                    let mut res = Ok(());
                    self.for_each_piece(id, |p| {
                        if res.is_ok() {
                            res = w.write_all(p);
                        }
                    });
                    res?;
                    w.flush()?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_scaling_follow_specweb99() {
        assert_eq!(dir_bytes(), 5_119_470);
        assert_eq!(specweb_dirs(200), 156);
        assert_eq!(specweb_dirs(2906), 1930);
        let id = FileId {
            dir: 12,
            class: 3,
            file: 8,
        };
        assert_eq!(id.size(), 921_600);
        assert_eq!(id.url(), "/file_set/dir00012/class3_8");
        assert_eq!(
            FileId {
                dir: 99_999,
                class: 0,
                file: 0
            }
            .url()
            .len(),
            id.url().len()
        );
        let set = FileSet::new(3, 1).unwrap();
        assert_eq!(set.files().count(), 3 * 36);
        assert_eq!(
            set.files().map(|f| f.size() as u64).sum::<u64>(),
            set.bytes()
        );
    }

    #[test]
    fn contents_are_seeded_distinct_and_verified() {
        let a = FileSet::new(2, 7).unwrap();
        let b = FileSet::new(2, 7).unwrap();
        let c = FileSet::new(2, 8).unwrap();
        let id = FileId {
            dir: 1,
            class: 1,
            file: 4,
        };
        assert_eq!(a.contents(id), b.contents(id));
        assert_ne!(a.contents(id), c.contents(id));
        assert_eq!(a.contents(id).len(), 5 * 1024);
        assert!(a.contents(id).starts_with(b"file_set/dir00001/class1_4\n"));
        let mut data = a.contents(id);
        assert_eq!(a.verify(id, &data), Ok(()));
        data[3000] ^= 1;
        assert_eq!(a.verify(id, &data), Err(3000));
        data[3000] ^= 1;
        data.pop();
        assert_eq!(a.verify(id, &data), Err(5119));
        let other = FileId {
            dir: 0,
            class: 1,
            file: 4,
        };
        assert!(a.verify(other, &a.contents(id)).is_err());
        // A class-3 file longer than the block's tail wraps around and still verifies.
        let big = FileId {
            dir: 1,
            class: 3,
            file: 8,
        };
        assert_eq!(a.verify(big, &a.contents(big)), Ok(()));
    }

    #[test]
    fn budget_and_bounds_are_refused_with_the_numbers() {
        assert_eq!(FileSet::new(0, 1), Err(FileSetError::TooManyDirs(0)));
        let set = FileSet::new(2, 1).unwrap();
        let e = set.check_budget(10_000_000).unwrap_err();
        assert!(e.to_string().contains("10.2 MB"), "{e}");
        assert!(e.to_string().contains("--disk-budget"), "{e}");
        assert!(set.check_budget(10_238_940).is_ok());
    }

    #[test]
    fn written_files_match_their_contents() {
        let dir =
            std::env::temp_dir().join(format!("schedlab-fileset-test-{}", std::process::id()));
        let set = FileSet::new(1, 3).unwrap();
        set.write(&dir).unwrap();
        for id in set.files() {
            let got = std::fs::read(dir.join(id.rel_path())).unwrap();
            assert_eq!(set.verify(id, &got), Ok(()), "{id:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A smaller set written first, then extended to a larger one of the same seed (as the real
    /// backend shares one directory between repetitions and find-max candidates): every file of
    /// both sets is byte-exact, and no directory beyond the larger set's is written.
    #[test]
    fn an_extended_set_serves_the_smaller_and_the_larger() {
        let dir = std::env::temp_dir().join(format!(
            "schedlab-fileset-extend-test-{}",
            std::process::id()
        ));
        let small = FileSet::new(1, 5).unwrap();
        let large = FileSet::new(3, 5).unwrap();
        small.write(&dir).unwrap();
        large.write_from(&dir, small.dirs()).unwrap();
        for set in [&small, &large] {
            for id in set.files() {
                let got = std::fs::read(dir.join(id.rel_path())).unwrap();
                assert_eq!(set.verify(id, &got), Ok(()), "{id:?}");
            }
        }
        let dirs = std::fs::read_dir(dir.join("file_set")).unwrap().count();
        assert_eq!(dirs, 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
