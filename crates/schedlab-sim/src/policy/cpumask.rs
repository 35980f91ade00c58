//! A set of CPUs: the kernel's `cpumask_t` (include/linux/cpumask.h), a bitmap of a fixed
//! capacity chosen at build time (`NR_CPUS`; here [`MAX_CPUS`]).
//!
//! Why a fixed array of words and not a heap bitset (`fixedbitset`, `bitvec`): a mask is `Copy`,
//! stored once per task by every policy and copied at every wakeup; a fixed array needs no
//! allocation and no clone, and the operations the hot paths use (`contains`, `lowest`,
//! `below`) touch one word, or skip empty words with one compare each. At 16 words a task's
//! mask costs 128 bytes: 12.5 MiB for 100,000 tasks. `bench/sim.sh` compares the speed on
//! 8 CPUs with the single-`u64` mask it replaced.

use super::CpuId;
use std::fmt;

/// The most CPUs a simulated machine may have (`NR_CPUS`).
pub const MAX_CPUS: usize = 1024;

/// Words of a mask.
const WORDS: usize = MAX_CPUS / 64;

/// A set of CPUs below [`MAX_CPUS`], as a bitmap.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuMask {
    words: [u64; WORDS],
}

/// `base` plus the position of each set bit of `word`, lowest first: the walk over one word of
/// a bitmap (CPU masks, priority bitmaps, run-queue status words).
#[inline]
pub(in crate::policy) fn set_bits(base: usize, mut word: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (word != 0).then(|| {
            let b = word.trailing_zeros() as usize;
            word &= word - 1;
            base + b
        })
    })
}

impl CpuMask {
    /// No CPU.
    pub const EMPTY: CpuMask = CpuMask { words: [0; WORDS] };
    /// Every CPU up to [`MAX_CPUS`].
    pub const ALL: CpuMask = CpuMask {
        words: [u64::MAX; WORDS],
    };

    /// CPUs `0..n` (every CPU up to [`MAX_CPUS`] when `n` is larger).
    pub fn first(n: usize) -> CpuMask {
        let n = n.min(MAX_CPUS);
        let mut m = CpuMask::EMPTY;
        let (full, rest) = (n / 64, n % 64);
        for w in &mut m.words[..full] {
            *w = u64::MAX;
        }
        if rest > 0 {
            m.words[full] = (1u64 << rest) - 1;
        }
        m
    }

    /// The CPUs `range` (clipped to [`MAX_CPUS`]).
    pub fn range(range: std::ops::Range<CpuId>) -> CpuMask {
        let mut m = CpuMask::first(range.end);
        let below = CpuMask::first(range.start);
        for (w, b) in m.words.iter_mut().zip(below.words) {
            *w &= !b;
        }
        m
    }

    /// The CPUs whose bits are set in `bits` (CPUs 0..64): `from_bits(0b101)` is CPUs 0 and 2.
    pub fn from_bits(bits: u64) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        m.words[0] = bits;
        m
    }

    /// The CPUs of a `cpus=` list, or all `n` CPUs when there is none. CPUs at or past
    /// [`MAX_CPUS`] are left out (the knobs' validation refuses them first).
    pub fn of_list(list: Option<&schedlab_workload::CpuSet>, n: usize) -> CpuMask {
        match list {
            Some(list) => {
                let mut m = CpuMask::EMPTY;
                for &c in list.iter() {
                    m.insert(c);
                }
                m
            }
            None => CpuMask::first(n),
        }
    }

    /// CPUs `64 * i .. 64 * (i + 1)` as bits (CPU `64 * i` is bit 0).
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }

    /// Add `cpu` (a CPU at or past [`MAX_CPUS`] is ignored).
    pub fn insert(&mut self, cpu: CpuId) {
        if cpu < MAX_CPUS {
            self.words[cpu / 64] |= 1 << (cpu % 64);
        }
    }

    /// Take `cpu` out.
    pub fn remove(&mut self, cpu: CpuId) {
        if cpu < MAX_CPUS {
            self.words[cpu / 64] &= !(1 << (cpu % 64));
        }
    }

    /// Whether `cpu` is in the set.
    #[inline]
    pub fn contains(&self, cpu: CpuId) -> bool {
        cpu < MAX_CPUS && self.words[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    /// The CPUs in both sets.
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        let mut m = *self;
        for (w, o) in m.words.iter_mut().zip(other.words) {
            *w &= o;
        }
        m
    }

    /// The CPUs of this set below `n` (the machine's CPUs).
    #[inline]
    pub fn below(&self, n: usize) -> CpuMask {
        // The common case, a mask already inside the machine, costs one pass of compares.
        if n >= MAX_CPUS || self.lowest_from(n).is_none() {
            return *self;
        }
        self.and(&CpuMask::first(n))
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The CPUs in the set, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.iter_below(MAX_CPUS)
    }

    /// Word `i` of the set with only its CPUs below `n` (`i` holds a CPU below `n`).
    #[inline]
    fn word_below(&self, i: usize, n: usize) -> u64 {
        match n - i * 64 {
            left @ 0..64 => self.words[i] & ((1 << left) - 1),
            _ => self.words[i],
        }
    }

    /// The indices of the words that hold CPUs `0..n`.
    #[inline]
    fn words_below(n: usize) -> std::ops::Range<usize> {
        0..n.min(MAX_CPUS).div_ceil(64)
    }

    /// The CPUs in the set below `n`, lowest first: `below(n).iter()` touching only the words
    /// that hold CPUs `0..n` (one on a machine of up to 64 CPUs).
    #[inline]
    pub fn iter_below(&self, n: usize) -> impl Iterator<Item = CpuId> + '_ {
        let n = n.min(MAX_CPUS);
        Self::words_below(n).flat_map(move |i| set_bits(i * 64, self.word_below(i, n)))
    }

    /// The lowest CPU below `n` in the set: `below(n).lowest()`, touching only the words that
    /// hold CPUs `0..n`.
    #[inline]
    pub fn lowest_below(&self, n: usize) -> Option<CpuId> {
        self.lowest_common_below(&CpuMask::ALL, n)
    }

    /// The lowest CPU below `n` in both sets: `and(other).below(n).lowest()`, touching only the
    /// words that hold CPUs `0..n`.
    #[inline]
    pub fn lowest_common_below(&self, other: &CpuMask, n: usize) -> Option<CpuId> {
        let n = n.min(MAX_CPUS);
        Self::words_below(n).find_map(|i| {
            let w = self.word_below(i, n) & other.words[i];
            (w != 0).then(|| i * 64 + w.trailing_zeros() as usize)
        })
    }

    /// The lowest CPU in the set.
    #[inline]
    pub fn lowest(&self) -> Option<CpuId> {
        self.lowest_from(0)
    }

    /// The lowest CPU in the set at or above `start` (`cpumask_next`).
    pub fn lowest_from(&self, start: CpuId) -> Option<CpuId> {
        if start >= MAX_CPUS {
            return None;
        }
        let (mut i, bit) = (start / 64, start % 64);
        let mut w = self.words[i] & (u64::MAX << bit);
        loop {
            if w != 0 {
                return Some(i * 64 + w.trailing_zeros() as usize);
            }
            i += 1;
            if i == WORDS {
                return None;
            }
            w = self.words[i];
        }
    }

    /// Number of CPUs in the set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
}

impl Default for CpuMask {
    fn default() -> Self {
        CpuMask::EMPTY
    }
}

impl fmt::Debug for CpuMask {
    /// The CPUs as a list, `{0, 2, 5}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_range_cover_word_edges() {
        for n in [0, 1, 63, 64, 65, 127, 128, 1000, MAX_CPUS, MAX_CPUS + 5] {
            let m = CpuMask::first(n);
            assert_eq!(m.count(), n.min(MAX_CPUS), "first({n})");
            assert_eq!(
                m.iter().collect::<Vec<_>>(),
                (0..n.min(MAX_CPUS)).collect::<Vec<_>>()
            );
        }
        let r = CpuMask::range(62..130);
        assert_eq!(r.iter().collect::<Vec<_>>(), (62..130).collect::<Vec<_>>());
        assert_eq!(
            CpuMask::from_bits(0b1010).iter().collect::<Vec<_>>(),
            [1, 3]
        );
    }

    #[test]
    fn insert_contains_lowest_below() {
        let mut m = CpuMask::EMPTY;
        assert!(m.is_empty() && m.lowest().is_none());
        for c in [5, 64, 700, 1023] {
            m.insert(c);
        }
        m.insert(MAX_CPUS); // ignored
        assert_eq!(m.count(), 4);
        assert!(m.contains(700) && !m.contains(699) && !m.contains(MAX_CPUS + 1));
        assert_eq!(m.lowest(), Some(5));
        assert_eq!(m.lowest_from(6), Some(64));
        assert_eq!(m.lowest_from(701), Some(1023));
        m.remove(5);
        assert_eq!(m.lowest(), Some(64));
        assert_eq!(m.below(700).iter().collect::<Vec<_>>(), [64]);
        assert_eq!(m.below(1024), m);
        assert_eq!(format!("{m:?}"), "{64, 700, 1023}");
    }

    #[test]
    fn bounded_operations_match_below_on_random_masks() {
        // xorshift64: masks dense, sparse and empty, in the low word and across words.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let random_mask = |next: &mut dyn FnMut() -> u64| {
            let mut m = CpuMask::EMPTY;
            let density = next() % 4;
            for w in 0..WORDS {
                m.words[w] = match density {
                    0 => 0,
                    1 => next() & next() & next(),
                    2 => next(),
                    _ => !(next() & next()),
                } & if next().is_multiple_of(3) {
                    0
                } else {
                    u64::MAX
                };
            }
            m
        };
        for _ in 0..2000 {
            let (a, b) = (random_mask(&mut next), random_mask(&mut next));
            let n = match next() % 4 {
                0 => (next() % 130) as usize,
                1 => (next() % (MAX_CPUS as u64 + 10)) as usize,
                2 => 64 * (next() % 17) as usize,
                _ => 8,
            };
            let below = a.below(n);
            assert_eq!(
                a.iter_below(n).collect::<Vec<_>>(),
                below.iter().collect::<Vec<_>>(),
                "iter_below({n})"
            );
            assert!(below.iter().all(|c| c < n && a.contains(c)));
            assert_eq!(
                below.iter().count(),
                (0..n.min(MAX_CPUS)).filter(|&c| a.contains(c)).count()
            );
            assert_eq!(a.lowest_below(n), below.lowest(), "lowest_below({n})");
            assert_eq!(
                a.lowest_common_below(&b, n),
                a.and(&b).below(n).lowest(),
                "lowest_common_below({n})"
            );
        }
    }
}
