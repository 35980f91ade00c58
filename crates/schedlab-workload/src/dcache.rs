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
//!
//! [`Interrupts`] (off unless asked for, [`Walker::with_interrupts`]) lengthen holds: 2.4 (read
//! at 2.4.15; the seed ran 2.4.17) takes `dcache_lock` with a plain `spin_lock` (fs/dcache.c,
//! fs/namei.c, fs/namespace.c), which leaves interrupts enabled,
//! and `do_IRQ` (arch/i386/kernel/irq.c) runs the pending softirqs (`do_softirq`) on its way out,
//! on the interrupted CPU — so a hold that a network interrupt lands in lasts as long as the
//! handler and the softirq's work: `net_rx_action` (net/core/dev.c) goes on for up to
//! `netdev_max_backlog` (300) packets or until more than a jiffy has passed. Lockmeter times a
//! hold from its acquisition to its release, so its table counts that time as held. A CPU is
//! interrupted at `rate` a second (a Poisson process), so a hold of `h` is lengthened with
//! probability 1 − e^(−rate·h), by an exponential draw of mean `length` (at most
//! [`MAX_INTERRUPT`]); interrupts outside the lock are part of the work around it.

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

/// The longest that one interrupt lengthens a hold: two jiffies at HZ 100, as 2.4's
/// `net_rx_action` stops once more than one jiffy has passed.
pub const MAX_INTERRUPT: Duration = Duration::from_millis(20);

/// Interrupts that come while a CPU holds `dcache_lock` and lengthen the hold by their handler
/// and softirq work (the module comment gives the source).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interrupts {
    /// Interrupts a second on each CPU (a Poisson process).
    pub rate: f64,
    /// Mean time one takes, handler and softirq (exponential, at most [`MAX_INTERRUPT`]).
    pub length: Duration,
}

impl Interrupts {
    /// How much an interrupt lengthens a hold of `held`, if one comes in it: with probability
    /// 1 − e^(−rate·held), an exponential draw of mean `length`, at most [`MAX_INTERRUPT`].
    pub fn draw(&self, held: Duration, rng: &mut SplitMix) -> Option<Duration> {
        let hit = 1.0 - (-self.rate * held.as_secs_f64()).exp();
        if rng.unit() >= hit {
            return None;
        }
        // u in (0, 1]: −ln u is finite.
        let u = 1.0 - rng.unit();
        Some(self.length.mul_f64(-u.ln()).min(MAX_INTERRUPT))
    }
}

/// A small seeded generator (SplitMix64, Steele, Lea and Flood 2014): draws that depend on the
/// task alone, the same on both backends.
#[derive(Clone, Debug, Default)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

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
    /// Holds an interrupt lengthened ([`Walker::with_interrupts`]).
    pub interrupted: u64,
    /// The generator of the interrupts' draws.
    draws: SplitMix,
}

impl WalkTally {
    /// An empty tally whose interrupts are drawn from a generator seeded with `seed`.
    pub fn seeded(seed: u64) -> WalkTally {
        WalkTally {
            draws: SplitMix::new(seed),
            ..WalkTally::default()
        }
    }
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
    /// Interrupts that lengthen its holds, if modelled.
    interrupts: Option<Interrupts>,
}

impl Walker {
    /// A walker with `strategy` (`None` for [`Dcache::Kernel`], which is the kernel's own walk),
    /// `component` of CPU work per component, under the plan's lock `lock`.
    pub fn new(strategy: Dcache, component: Duration, lock: LockId) -> Option<Walker> {
        (strategy != Dcache::Kernel).then_some(Walker {
            strategy,
            component,
            lock,
            interrupts: None,
        })
    }

    /// This walker with `interrupts` lengthening its holds (`None`: never).
    pub fn with_interrupts(self, interrupts: Option<Interrupts>) -> Walker {
        Walker { interrupts, ..self }
    }

    /// `work` of CPU with `dcache_lock` held, and the interrupt that comes in it, if one does.
    async fn held<C: Context>(&self, ctx: &C, work: Duration, tally: &mut WalkTally) {
        ctx.compute(work).await;
        if let Some(extra) = self.interrupts.and_then(|i| i.draw(work, &mut tally.draws)) {
            tally.interrupted += 1;
            ctx.compute(extra).await;
        }
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
                self.held(ctx, self.component, tally).await;
                if !held_over_walk {
                    ctx.unlock(self.lock);
                }
            } else if per_component || held_over_walk {
                self.held(ctx, self.component, tally).await;
                if per_component {
                    ctx.unlock(self.lock);
                }
            } else {
                ctx.compute(self.component).await;
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
        self.held(ctx, self.component, tally).await;
        ctx.unlock(self.lock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupt_lands_in_a_hold_as_often_as_its_rate_says_and_adds_its_mean() {
        let i = Interrupts {
            rate: 25_000.0,
            length: Duration::from_micros(100),
        };
        let held = Duration::from_micros(2);
        let mut rng = SplitMix::new(7);
        let n = 200_000;
        let extras: Vec<Duration> = (0..n).filter_map(|_| i.draw(held, &mut rng)).collect();
        let p = 1.0 - (-0.05_f64).exp();
        let share = extras.len() as f64 / n as f64;
        assert!(
            (share / p - 1.0).abs() < 0.05,
            "{share} of holds, expected {p}"
        );
        let mean = extras.iter().sum::<Duration>().as_secs_f64() / extras.len() as f64;
        assert!((mean / 100e-6 - 1.0).abs() < 0.05, "mean {mean}");
        // None at rate 0; never past the cap however long the mean.
        let none = Interrupts { rate: 0.0, ..i };
        assert!((0..1000).all(|_| none.draw(held, &mut rng).is_none()));
        let long = Interrupts {
            rate: 1e6,
            length: MAX_INTERRUPT,
        };
        let draws: Vec<Duration> = (0..10_000)
            .filter_map(|_| long.draw(Duration::from_millis(1), &mut rng))
            .collect();
        assert_eq!(draws.len(), 10_000);
        assert!(draws.iter().all(|&d| d <= MAX_INTERRUPT));
        assert!(draws.contains(&MAX_INTERRUPT));
    }
}
