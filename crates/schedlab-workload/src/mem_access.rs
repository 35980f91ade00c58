//! A memory-access step: byte-by-byte reads or writes of a buffer, or a chase of pointers
//! through it — rt-app's `memrun` event (scheduler-tools/rt-app 55cb0c0: `memread`, `memwrite`
//! and `memchase_run` in src/rt-app.c, the buffers and their chain built in
//! src/rt-app_parse_config.c, described in doc/tutorial.txt). The step only describes the
//! access; each backend runs it ([`crate::Context::access_memory`]).

use std::collections::hash_map::{Entry, HashMap};
use std::fmt;
use std::sync::Arc;

/// The largest buffer one memory access may use, bytes (1 GiB): rt-app reads the size as a
/// 32-bit integer and allocates it at start; schedlab bounds it lower, so that a typo cannot
/// ask for the machine's memory.
pub const MAX_MEM_ACCESS_BUFFER: u64 = 1 << 30;

/// The most bytes or hops one memory access may make: rt-app's `count` is a 32-bit integer.
pub const MAX_MEM_ACCESS_COUNT: u64 = i32::MAX as u64;

/// The smallest chase stride: a chain position holds a pointer.
pub const MIN_CHASE_STRIDE: u64 = std::mem::size_of::<usize>() as u64;

/// What a memory access does with its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemAccessKind {
    /// Read `count` bytes one at a time from the start, wrapping at the buffer's end.
    Read,
    /// Write `count` bytes one at a time from the start, wrapping at the buffer's end.
    Write,
    /// Follow `count` pointers of a circular chain with a position every `stride` bytes.
    Chase,
}

impl MemAccessKind {
    /// rt-app's name of the kind (`type`).
    pub fn name(self) -> &'static str {
        match self {
            MemAccessKind::Read => "read",
            MemAccessKind::Write => "write",
            MemAccessKind::Chase => "chase",
        }
    }
}

/// The order of a chase's chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChasePattern {
    /// Positions in bit-reversed order, which hardware prefetchers do not follow (rt-app's
    /// default).
    Random,
    /// Positions one stride after another.
    Sequential,
}

impl ChasePattern {
    /// rt-app's name of the pattern.
    pub fn name(self) -> &'static str {
        match self {
            ChasePattern::Random => "random",
            ChasePattern::Sequential => "sequential",
        }
    }
}

/// One memory access: its kind, its buffer and how much of it to go through.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemAccess {
    /// Read, write or chase.
    pub kind: MemAccessKind,
    /// The buffer's size asked for, bytes (a chase uses the largest power-of-two number of
    /// strides that fits: [`MemAccess::buffer_bytes`]).
    pub size: u64,
    /// Bytes read or written, or pointers followed.
    pub count: u64,
    /// Bytes between a chase's positions (64 by default; ignored by read and write).
    pub stride: u64,
    /// A chase's order (ignored by read and write).
    pub pattern: ChasePattern,
    /// The name of a buffer every task's accesses of this kind and name share (rt-app's
    /// `ref`); `None`: each task has its own buffer, one per kind, size, stride and pattern,
    /// as rt-app gives each thread.
    pub shared: Option<Arc<str>>,
}

/// Which buffer a memory access uses: accesses with equal keys in one task (or, shared, in
/// the whole run) use the same buffer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferKey {
    /// A task's own buffer: rt-app names it after the kind and parameters.
    Own {
        /// 0 read, 1 write, 2 chase.
        kind: u8,
        /// Bytes asked for.
        size: u64,
        /// Chase stride (0 for read and write).
        stride: u64,
        /// A random chase (false for read and write).
        random: bool,
    },
    /// A buffer shared by name and kind (rt-app matches both).
    Shared {
        /// 0 read, 1 write, 2 chase.
        kind: u8,
        /// The `ref`.
        name: Arc<str>,
    },
}

impl MemAccess {
    /// A read, write or chase of `size` bytes, `count` bytes or hops, with rt-app's defaults
    /// for the rest (stride 64, random, own buffer).
    pub fn new(kind: MemAccessKind, size: u64, count: u64) -> MemAccess {
        MemAccess {
            kind,
            size,
            count,
            stride: 64,
            pattern: ChasePattern::Random,
            shared: None,
        }
    }

    /// Whether the access is accepted; otherwise what is wrong, naming the value and what is
    /// accepted.
    pub fn check(&self) -> Result<(), String> {
        if self.size == 0 || self.size > MAX_MEM_ACCESS_BUFFER {
            return Err(format!(
                "size {} is not accepted: a buffer of 1 byte to {MAX_MEM_ACCESS_BUFFER} (1 GiB)",
                self.size
            ));
        }
        if self.count > MAX_MEM_ACCESS_COUNT {
            return Err(format!(
                "count {} is not accepted: 0 to {MAX_MEM_ACCESS_COUNT} (rt-app's 32-bit integer)",
                self.count
            ));
        }
        if self.kind == MemAccessKind::Chase {
            if self.stride < MIN_CHASE_STRIDE || !self.stride.is_multiple_of(MIN_CHASE_STRIDE) {
                return Err(format!(
                    "stride {} is not accepted: a multiple of {MIN_CHASE_STRIDE} bytes (a position holds an aligned pointer)",
                    self.stride
                ));
            }
            if self.size / self.stride < 2 {
                return Err(format!(
                    "size {} with stride {} is not accepted: a chase needs at least 2 positions (size at least 2 × stride = {})",
                    self.size,
                    self.stride,
                    2 * self.stride
                ));
            }
        }
        Ok(())
    }

    /// A chase's positions: the largest power of two not above `size / stride`, as rt-app
    /// rounds for its bit reversal (0 for read and write).
    pub fn chase_positions(&self) -> u64 {
        if self.kind != MemAccessKind::Chase || self.stride == 0 || self.size / self.stride < 1 {
            return 0;
        }
        let n = self.size / self.stride;
        1 << (63 - n.leading_zeros())
    }

    /// The bytes the buffer takes: `size` for read and write, positions × stride for a chase.
    pub fn buffer_bytes(&self) -> u64 {
        match self.kind {
            MemAccessKind::Chase => self.chase_positions() * self.stride,
            _ => self.size,
        }
    }

    /// The buffer this access uses.
    pub fn buffer_key(&self) -> BufferKey {
        let kind = self.kind as u8;
        match &self.shared {
            Some(name) => BufferKey::Shared {
                kind,
                name: name.clone(),
            },
            None => {
                let chase = self.kind == MemAccessKind::Chase;
                BufferKey::Own {
                    kind,
                    size: self.size,
                    stride: if chase { self.stride } else { 0 },
                    random: chase && self.pattern == ChasePattern::Random,
                }
            }
        }
    }

    /// Whether two accesses of one shared buffer agree on what rt-app requires them to agree
    /// on: the size, and for a chase the stride and pattern.
    pub fn agrees_with(&self, other: &MemAccess) -> bool {
        self.kind == other.kind
            && self.size == other.size
            && (self.kind != MemAccessKind::Chase
                || (self.stride == other.stride && self.pattern == other.pattern))
    }
}

/// The first access of each shared buffer (its kind and name, as rt-app looks one up) and
/// where a file gave it (`P`: a place in the file): every later access of that buffer must
/// agree with the first ([`MemAccess::agrees_with`]), as rt-app requires. Every reader of a
/// workload file checks its accesses here.
#[derive(Debug)]
pub struct SharedBuffers<P> {
    first: HashMap<(MemAccessKind, Arc<str>), (MemAccess, P)>,
}

impl<P> Default for SharedBuffers<P> {
    fn default() -> Self {
        SharedBuffers {
            first: HashMap::new(),
        }
    }
}

impl<P> SharedBuffers<P> {
    /// Take `access`, given at `at`: an access of a task's own buffer, the first of a shared
    /// buffer, or one that agrees with that first is accepted; one that disagrees gives back
    /// the buffer's first access and its place.
    pub fn admit(&mut self, access: &MemAccess, at: P) -> Result<(), (&MemAccess, &P)> {
        let Some(name) = &access.shared else {
            return Ok(());
        };
        match self.first.entry((access.kind, name.clone())) {
            Entry::Occupied(e) => {
                let (first, place) = e.into_mut();
                if first.agrees_with(access) {
                    Ok(())
                } else {
                    Err((first, place))
                }
            }
            Entry::Vacant(v) => {
                v.insert((access.clone(), at));
                Ok(())
            }
        }
    }
}

/// `pos` with its lowest `bits` bits in reverse order: a chase's order for the random pattern.
pub fn bit_reverse(pos: u64, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        pos.reverse_bits() >> (64 - bits)
    }
}

impl fmt::Display for MemAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} of {} B", self.kind.name(), self.count, self.size)?;
        if self.kind == MemAccessKind::Chase {
            write!(f, " (stride {}, {})", self.stride, self.pattern.name())?;
        }
        if let Some(name) = &self.shared {
            write!(f, " shared as '{name}'")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chase_rounds_its_positions_down_to_a_power_of_two() {
        let mut a = MemAccess::new(MemAccessKind::Chase, 1000, 10);
        assert_eq!(a.chase_positions(), 8); // 1000 / 64 = 15 → 8
        assert_eq!(a.buffer_bytes(), 512);
        a.stride = 8;
        assert_eq!(a.chase_positions(), 64); // 125 → 64
        assert_eq!(
            MemAccess::new(MemAccessKind::Read, 1000, 1).buffer_bytes(),
            1000
        );
    }

    #[test]
    fn bit_reversal_is_rt_apps() {
        assert_eq!(bit_reverse(1, 3), 4);
        assert_eq!(bit_reverse(6, 3), 3);
        assert_eq!(bit_reverse(0, 0), 0);
    }

    #[test]
    fn bad_values_are_named_with_what_is_accepted() {
        let e = MemAccess::new(MemAccessKind::Read, 0, 1)
            .check()
            .unwrap_err();
        assert!(e.contains("size 0") && e.contains("1 GiB"), "{e}");
        let mut c = MemAccess::new(MemAccessKind::Chase, 100, 1);
        let e = c.check().unwrap_err();
        assert!(e.contains("at least 2 positions"), "{e}");
        c.size = 4096;
        c.stride = 12;
        assert!(c.check().unwrap_err().contains("stride 12"));
        let e = MemAccess::new(MemAccessKind::Write, 1, 1 << 40)
            .check()
            .unwrap_err();
        assert!(e.contains("count 1099511627776"), "{e}");
    }

    #[test]
    fn a_shared_buffer_takes_accesses_that_agree_with_its_first() {
        let mut b = SharedBuffers::default();
        let shared = |size, count| MemAccess {
            shared: Some("buf".into()),
            ..MemAccess::new(MemAccessKind::Read, size, count)
        };
        assert!(b.admit(&shared(100, 1), "first").is_ok());
        // Counts may differ; a task's own buffer of another size is another buffer.
        assert!(b.admit(&shared(100, 9), "second").is_ok());
        assert!(b
            .admit(&MemAccess::new(MemAccessKind::Read, 200, 1), "own")
            .is_ok());
        let (first, at) = b.admit(&shared(200, 1), "third").unwrap_err();
        assert_eq!((first.size, *at), (100, "first"));
        // A chase of the same name is another buffer (rt-app looks up kind and name).
        let chase = MemAccess {
            shared: Some("buf".into()),
            ..MemAccess::new(MemAccessKind::Chase, 4096, 1)
        };
        assert!(b.admit(&chase, "chase").is_ok());
    }
}
