//! The directory-entry cache model that `lookup` and `web` walk paths through: seed 003's three
//! ways of resolving a cached path under the global `dcache_lock` (Dipankar Sarma, "specweb99:
//! dcache scalability results", LKML, July 2002; /work/shared/seeds/003), after the 2.4
//! `fs/namei.c` / `fs/dcache.c` it measured (`d_lookup` under `spin_lock(&dcache_lock)`, `dput`
//! through `atomic_dec_and_lock`).
//!
//! [`Dentries`] is the cache: entries with a parent, a real hash table keyed by (parent, name)
//! holding the cached ones, and a real reference count per entry. The table hashes by one
//! multiplication (`rustc_hash`'s Fx hash), as the kernel's `d_hash` does (`hash_long` of the
//! parent mixed with the name's hash) — not by std's SipHash, which made a lookup several
//! times dearer than the kernel's and was a tenth of the simulator's time on `lookup`. [`Walker`] resolves a path (the
//! entries' ids from the top) component by component with a [`Dcache`] strategy, taking the
//! plan's spin lock [`DCACHE_LOCK`] through the task's [`Context`], so that both backends count
//! its acquisitions, holds and waits (lockmeter's table, `--locks`). Each component is one hash
//! lookup and one reference count (the previous component's dropped) plus `component` of CPU
//! work standing for `d_lookup` and `dget` on seed 003's machine. A component the cache does not
//! hold misses: the file system's lookup (`MISS_FACTOR` × `component`, outside the lock) and an
//! insertion under the lock (`component`).
//!
//! Dropping the final reference (`path_release`, or `fput` at `close`) is `dput`, which takes
//! `dcache_lock` in every strategy: 2.4's `dput` and dcache_rcu's alike go through
//! `atomic_dec_and_lock(&dentry->d_count, &dcache_lock)`, which takes the lock when the count
//! falls to zero — as a file's does when its one user lets it go (a directory's never does
//! while a cached child holds a reference to it, so the walk's intermediate `dput`s take no
//! lock). dcache_rcu's "lazy" LRU (Maneesh Soni's "[PATCH 2.5.44] dcache_rcu", LKML,
//! 2002-10-30) only spares the list work: `d_lookup` no longer takes an entry off the LRU, and
//! `dput` adds it only if it is not already there — the acquisition stays. A `dput` holds the
//! lock for `component` ([`Walker::release`]): seed 003's `rcu` row, in which nearly every
//! acquisition is a file's final `dput`, holds 2.0 µs, against 2.1 µs for `lock`'s row of
//! lookups.
//!
//! The strategies, with `d` the path's components and `m` its misses (exact acquisitions of
//! `dcache_lock` per walk, its final `dput` included):
//!
//! - `lock`: lock, look up + reference, unlock — per component; a miss unlocks, does the file
//!   system's lookup, and locks again to insert; then the final `dput`: `d + m + 1`;
//! - `fastwalk`: lock once and hold it over the cached walk; a miss drops it for the file
//!   system's lookup and takes it again to insert and go on; then unlock, and the final `dput`:
//!   `2 + m`;
//! - `rcu`: no lock on the walk; a miss takes it to insert; the final `dput`: `m + 1`.

use crate::context::{Context, LockId};
use crate::error::ValueError;
use rustc_hash::FxHashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The global lock's name in the lock table, as in seed 003.
pub const DCACHE_LOCK: &str = "dcache_lock";

/// A miss's file-system lookup costs `MISS_FACTOR` × `component` (a directory search in the
/// page cache), outside the lock.
pub const MISS_FACTOR: u32 = 20;

/// The parent of a tree's top entries.
pub const ROOT: u32 = u32::MAX;

/// How a lookup walks the cached path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dcache {
    /// 2.4's dcache: the global lock around each component.
    Lock,
    /// Al Viro's fastwalk: the lock held across the cached walk, dropped on a miss.
    Fastwalk,
    /// dcache_rcu: no lock on the walk; the lock for misses and the final `dput`.
    Rcu,
    /// The running kernel's own path walk (real backend only; not a [`Walker`] strategy).
    Kernel,
}

impl fmt::Display for Dcache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dcache::Lock => "lock",
            Dcache::Fastwalk => "fastwalk",
            Dcache::Rcu => "rcu",
            Dcache::Kernel => "kernel",
        })
    }
}

impl FromStr for Dcache {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "lock" => Ok(Dcache::Lock),
            "fastwalk" => Ok(Dcache::Fastwalk),
            "rcu" => Ok(Dcache::Rcu),
            "kernel" => Ok(Dcache::Kernel),
            _ => Err(ValueError::new(format!(
                "dcache '{s}' is not accepted; use lock, fastwalk, rcu or kernel"
            ))),
        }
    }
}

/// The hash key of entry `name` under `parent`.
fn key(parent: u32, name: u32) -> u64 {
    (u64::from(parent) << 32) | u64::from(name)
}

/// A directory-entry cache: every entry of a tree (by id), the cached ones in a real hash table
/// keyed by (parent, name), and a real reference count per entry.
#[derive(Debug)]
pub struct Dentries {
    /// Per entry, its parent's id ([`ROOT`] for a top entry).
    parent: Vec<u32>,
    /// Per entry, its name: a number unique among its siblings.
    name: Vec<u32>,
    /// (parent, name) → entry, for the entries the cache holds.
    table: FxHashMap<u64, u32>,
    /// Per entry, its reference count (dget/dput).
    refcount: Vec<AtomicU32>,
}

impl Dentries {
    /// A cache over the entries given by their parents and names (entry `i` is `parent[i]`'s
    /// child named `name[i]`), holding the entries `cached` yields.
    pub fn new(
        parent: Vec<u32>,
        name: Vec<u32>,
        cached: impl ExactSizeIterator<Item = u32>,
    ) -> Dentries {
        assert_eq!(parent.len(), name.len(), "one name per entry");
        let mut table =
            FxHashMap::with_capacity_and_hasher(cached.len(), rustc_hash::FxBuildHasher);
        for e in cached {
            table.insert(key(parent[e as usize], name[e as usize]), e);
        }
        Dentries {
            refcount: (0..parent.len()).map(|_| AtomicU32::new(0)).collect(),
            parent,
            name,
            table,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Number of entries the cache holds.
    pub fn cached(&self) -> usize {
        self.table.len()
    }

    /// Entry `e`'s parent ([`ROOT`] for a top entry).
    pub fn parent(&self, e: u32) -> u32 {
        self.parent[e as usize]
    }

    /// Look up entry `want` under `parent` in the hash table: `Some` if the cache holds it.
    pub fn lookup(&self, parent: u32, want: u32) -> Option<u32> {
        let found = self.table.get(&key(parent, self.name[want as usize]));
        debug_assert!(found.is_none_or(|&f| f == want));
        found.copied()
    }

    /// dget on `e`, dput on its parent (the walk moves down).
    fn get_ref(&self, e: u32, parent: u32) {
        self.refcount[e as usize].fetch_add(1, Ordering::Relaxed);
        if parent != ROOT {
            self.put_ref(parent);
        }
    }

    /// dput on `e`.
    fn put_ref(&self, e: u32) {
        self.refcount[e as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

/// What one task's walks did.
#[derive(Clone, Debug, Default)]
pub struct WalkTally {
    /// Acquisitions of `dcache_lock`.
    pub acquisitions: u64,
    /// Components the cache did not hold.
    pub misses: u64,
}

/// Resolves paths through a [`Dentries`] with one strategy, under one lock of the plan.
#[derive(Clone, Copy, Debug)]
pub struct Walker {
    /// The strategy (never [`Dcache::Kernel`]).
    strategy: Dcache,
    /// CPU work per component.
    component: Duration,
    /// The plan's spin lock standing for `dcache_lock`.
    lock: LockId,
}

impl Walker {
    /// A walker with `strategy` (`None` for [`Dcache::Kernel`], which is the kernel's own walk),
    /// `component` of CPU work per component, under the plan's lock `lock`.
    pub fn new(strategy: Dcache, component: Duration, lock: LockId) -> Option<Walker> {
        (strategy != Dcache::Kernel).then_some(Walker {
            strategy,
            component,
            lock,
        })
    }

    /// Take `dcache_lock`, counting it.
    async fn take<C: Context>(&self, ctx: &C, tally: &mut WalkTally) {
        ctx.lock(self.lock).await;
        tally.acquisitions += 1;
    }

    /// Resolve `path` (entries' ids from the top, each the child of the one before) through
    /// `cache` and drop the final reference at once, as `stat(2)` does (`path_walk`, then
    /// `path_release`).
    pub async fn walk<C: Context>(
        &self,
        ctx: &C,
        cache: &Dentries,
        path: &[u32],
        tally: &mut WalkTally,
    ) {
        if let Some(last) = self.resolve(ctx, cache, path, tally).await {
            self.release(ctx, cache, last, tally).await;
        }
    }

    /// Resolve `path` through `cache` and keep the reference to its last entry (returned;
    /// `None` for an empty path), as `open(2)` does: the caller drops it with
    /// [`Walker::release`] when it is done with the file (`close`).
    pub async fn resolve<C: Context>(
        &self,
        ctx: &C,
        cache: &Dentries,
        path: &[u32],
        tally: &mut WalkTally,
    ) -> Option<u32> {
        let miss_work = self.component * MISS_FACTOR;
        let held_over_walk = self.strategy == Dcache::Fastwalk;
        let per_component = self.strategy == Dcache::Lock;
        if held_over_walk {
            self.take(ctx, tally).await;
        }
        let mut parent = ROOT;
        for &want in path {
            if per_component {
                self.take(ctx, tally).await;
            }
            if cache.lookup(parent, want).is_none() {
                // A miss: the file system's lookup outside the lock, then an insertion under it.
                tally.misses += 1;
                if per_component || held_over_walk {
                    ctx.unlock(self.lock);
                }
                ctx.compute(miss_work).await;
                self.take(ctx, tally).await;
                ctx.compute(self.component).await;
                if !held_over_walk {
                    ctx.unlock(self.lock);
                }
            } else {
                ctx.compute(self.component).await;
                if per_component {
                    ctx.unlock(self.lock);
                }
            }
            cache.get_ref(want, parent);
            parent = want;
        }
        if held_over_walk {
            ctx.unlock(self.lock);
        }
        (parent != ROOT).then_some(parent)
    }

    /// The final `dput` of entry `e`, which [`Walker::resolve`] returned: its count falls to
    /// zero, so `atomic_dec_and_lock` takes `dcache_lock` in every strategy, held for
    /// `component` (the LRU list's update; in `rcu` only its check, the acquisition the same).
    pub async fn release<C: Context>(
        &self,
        ctx: &C,
        cache: &Dentries,
        e: u32,
        tally: &mut WalkTally,
    ) {
        cache.put_ref(e);
        self.take(ctx, tally).await;
        ctx.compute(self.component).await;
        ctx.unlock(self.lock);
    }
}
