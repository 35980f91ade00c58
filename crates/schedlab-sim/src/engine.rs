//! The engine: a seeded discrete-event queue and an executor of task bodies. It knows nothing of
//! scheduling — the machine ([`crate::machine`]) decides what an event means and when a body may
//! run.
//!
//! Shape taken from simcore and nexosim: events are ordered by time, then by insertion sequence
//! (FIFO for ties, so runs are deterministic); task bodies are futures polled with a no-op waker
//! only when the machine says their operation has completed — a body never wakes itself.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as PollCx, Poll, Waker};

/// Bits of an event's key below its sequence number: the slot of a slot event
/// ([`EventQueue::push_slot`]), so that the winner tree's root names its slot. 11 bits hold
/// [`MAX_SLOTS`]; the sequence keeps 53 bits, 9·10^15 events (14 years at 20 M events a second).
const SLOT_BITS: u32 = 11;

/// The most slots a queue can have.
pub const MAX_SLOTS: usize = 1 << SLOT_BITS;

/// Nodes of the largest winner tree (that of [`MAX_SLOTS`] leaves), numbered `1..`; every
/// queue's tree has room for them (see [`EventQueue`]'s `tree`).
const TREE_NODES: usize = 2 * MAX_SLOTS;

/// The lesser of two keys, chosen without a branch.
///
/// The winner tree's walk ([`EventQueue::set_slot_key`]) compares a new key with the minimum of
/// each sibling subtree on its way up; which is less is data, not a pattern a branch predictor
/// learns, and the jump mispredicted about every other level (callgrind's branch simulation put
/// a third of a yield storm's mispredictions there). LLVM turns every safe spelling of this
/// select — `if`, `min`, masks, `std::hint::select_unpredictable`, on the whole key or its
/// halves — into that jump (its x86 cmov-conversion pass does, for a select on a loop-carried
/// chain), so on x86-64 it is two conditional moves written out. With them: the engine
/// 1.07–1.13x, the yield storm on 1,024 CPUs × 2,048 threads 1.30x (alternating timings, in
/// the message of the commit that wrote them out).
#[inline(always)]
#[allow(unsafe_code)]
fn lesser(a: u128, b: u128) -> u128 {
    #[cfg(target_arch = "x86_64")]
    {
        let (a_lo, a_hi) = (a as u64, (a >> 64) as u64);
        let (mut lo, mut hi) = (b as u64, (b >> 64) as u64);
        // SAFETY: arithmetic on registers only (`options(pure, nomem, nostack)`): compare a
        // with b as 128-bit numbers (cmp of the low halves, subtract-with-borrow of the high;
        // the carry flag is a < b) and move a's halves over b's if so.
        unsafe {
            core::arch::asm!(
                "cmp {a_lo}, {lo}",
                "mov {scratch}, {a_hi}",
                "sbb {scratch}, {hi}",
                "cmovb {lo}, {a_lo}",
                "cmovb {hi}, {a_hi}",
                a_lo = in(reg) a_lo,
                a_hi = in(reg) a_hi,
                lo = inout(reg) lo,
                hi = inout(reg) hi,
                scratch = out(reg) _,
                options(pure, nomem, nostack),
            );
        }
        (u128::from(hi) << 64) | u128::from(lo)
    }
    #[cfg(not(target_arch = "x86_64"))]
    a.min(b)
}

/// Node `i`'s key in a winner tree (see [`EventQueue`]'s `tree`).
#[inline]
fn node_key(tree: &[u64; 2 * TREE_NODES], i: usize) -> u128 {
    let i = i & (TREE_NODES - 1);
    (u128::from(tree[TREE_NODES + i]) << 64) | u128::from(tree[i])
}

/// Put `e` into `heap`, a min-heap of [`ARITY`] children per node.
#[inline]
fn heap_insert<E: Copy>(heap: &mut Vec<Entry<E>>, e: Entry<E>) {
    // Sift up: move parents down into the hole until `e` fits.
    let mut i = heap.len();
    heap.push(e);
    while i > 0 {
        let parent = (i - 1) / ARITY;
        if heap[parent].key <= e.key {
            break;
        }
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = e;
}

/// One queued event: ordered by its key.
#[derive(Clone, Copy)]
struct Entry<E> {
    /// Time (ns) in the high 64 bits, then the insertion sequence, then (for a slot event)
    /// the slot: comparing keys compares times, then insertion order, in one branch-free step.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    /// The event's time, ns.
    #[inline]
    fn at(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

/// Children per node of the heap: a 4-ary heap is half as deep as a binary one, and a node's
/// children are adjacent, so a pop touches fewer cache lines and takes fewer unpredictable
/// branches (std's `BinaryHeap` was a fifth of the engine's time).
const ARITY: usize = 4;

/// A time-ordered queue of events of type `E`, ties broken by insertion order. Events are kept
/// inline (no side table): the queue is most of an event's cost, as simcore found. Every key
/// (time, sequence) is distinct, so the order events come out in is fixed by the keys alone,
/// whatever the structures' shapes.
///
/// Events live in a heap or in one of the queue's numbered *slots*
/// ([`EventQueue::push_slot`]), each of which holds the latest event pushed to it — the
/// machine's burst ends, one pending per CPU at a time in practice. A winner tree over the
/// slots (a tournament tree: each node holds the least key below it) gives the earliest of
/// them in one read, and a push rewrites one leaf-to-root path of `log2(slots)` minimums: less
/// work than a heap's push and pop, which compare up to four children a level and move whole
/// entries. A push to a slot that still holds an event moves that event into the heap with its
/// key, so no event is lost and the queue pops exactly what one heap of all events would.
pub struct EventQueue<E> {
    /// A min-heap of [`ARITY`] children per node: entry `i`'s children are
    /// `ARITY·i + 1 ..= ARITY·i + ARITY`.
    heap: Vec<Entry<E>>,
    /// Each slot's event, if it holds one (its key is the slot's leaf of `tree`); `leaves` of
    /// them (those past the slots asked for stay empty).
    slots: Vec<Option<E>>,
    /// The winner tree: node `i` (1-based, children `2i` and `2i + 1`) holds the least key in
    /// its subtree, `u128::MAX` for none; node `leaves + s` is slot `s`'s key. Node `i`'s key
    /// is in two halves, the low one at `i` and the high one at `TREE_NODES + i`: each is a
    /// `u64` the walk addresses with a scaled index (a `u128` took a shift first), both from
    /// one base. There is room for the largest tree, whatever this one's size (64 KiB, of which
    /// a run touches `2 · leaves` entries of each half): an index masked with the constant
    /// `TREE_NODES − 1` is in bounds, so the walk and the root's read need neither a length nor
    /// a bounds check. The halves of a node are 32 KiB apart, a multiple of 4 KiB: a store to
    /// one half and a later load from the other at another node do not look alike to the
    /// processor's memory disambiguation (its "4K aliasing", which two separate allocations
    /// at an arbitrary distance made a run 3 % slower).
    tree: Box<[u64; 2 * TREE_NODES]>,
    /// Leaves of the tree: the number of slots rounded up to a power of two.
    leaves: usize,
    /// A slot emptied by a pop whose key is still in the tree: the next push to it (usually
    /// at once: the same CPU's next burst) rewrites its path once for both.
    stale: Option<usize>,
    /// Slots holding an event.
    in_slots: usize,
    seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue::with_slots(0)
    }
}

impl<E> EventQueue<E> {
    /// A queue with `n` slots for [`EventQueue::push_slot`], numbered `0..n`.
    ///
    /// # Panics
    /// If `n` is over [`MAX_SLOTS`].
    pub fn with_slots(n: usize) -> Self {
        assert!(n <= MAX_SLOTS, "{n} event slots, over {MAX_SLOTS}");
        let leaves = n.max(1).next_power_of_two();
        EventQueue {
            heap: Vec::new(),
            slots: (0..leaves).map(|_| None).collect(),
            tree: Box::new([u64::MAX; 2 * TREE_NODES]),
            leaves,
            stale: None,
            in_slots: 0,
            seq: 0,
            popped: 0,
        }
    }

    /// The key of an event at `at` pushed now, with `low` in its lowest bits.
    #[inline]
    fn next_key(&mut self, at: u64, low: usize) -> u128 {
        let seq = self.seq;
        debug_assert!(
            seq < 1 << (64 - SLOT_BITS),
            "53-bit sequence numbers ran out"
        );
        self.seq += 1;
        (u128::from(at) << 64) | u128::from(seq << SLOT_BITS) | low as u128
    }

    /// Set slot `s`'s key in the tree and rewrite the minimums on its path to the root: each
    /// node on it is the lesser of the minimum from below and its other child's (whose
    /// subtree did not change).
    #[inline]
    fn set_slot_key(&mut self, s: usize, key: u128) {
        // Masked with `TREE_NODES − 1`, the indices need no bounds checks; they are below
        // `2 · leaves` anyway.
        let tree = &mut self.tree;
        let mask = TREE_NODES - 1;
        let mut i = (self.leaves + s) & mask;
        let mut min = key;
        tree[i] = min as u64;
        tree[TREE_NODES + i] = (min >> 64) as u64;
        while i > 1 {
            min = lesser(node_key(tree, i ^ 1), min);
            i = (i >> 1) & mask;
            tree[i] = min as u64;
            tree[TREE_NODES + i] = (min >> 64) as u64;
        }
    }

    /// Node `i`'s key.
    #[inline]
    fn tree_key(&self, i: usize) -> u128 {
        node_key(&self.tree, i)
    }

    /// Check the winner tree against the slots (tests).
    #[cfg(test)]
    fn check_tree(&self) {
        for i in (1..self.leaves).rev() {
            let below = self.tree_key(2 * i).min(self.tree_key(2 * i + 1));
            assert_eq!(self.tree_key(i), below, "node {i}");
        }
        for s in 0..self.leaves {
            let leaf = self.tree_key(self.leaves + s);
            match &self.slots[s] {
                _ if self.stale == Some(s) => {} // cleared at the next push or pop
                Some(_) => assert_eq!(leaf as usize & (MAX_SLOTS - 1), s, "slot {s}'s key"),
                None => assert_eq!(leaf, u128::MAX, "slot {s}"),
            }
        }
    }

    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len() + self.in_slots
    }

    /// The memory one waiting event takes in the queue, bytes.
    pub fn entry_size(&self) -> usize {
        std::mem::size_of::<Entry<E>>()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<E: Copy> EventQueue<E> {
    /// Schedule `event` at time `at` (ns).
    #[inline]
    pub fn push(&mut self, at: u64, event: E) {
        let key = self.next_key(at, 0);
        heap_insert(&mut self.heap, Entry { key, event });
    }

    /// Schedule `event` at time `at` (ns) in slot `slot` (below the number the queue was made
    /// with). An event the slot still holds moves to the heap: it comes out at its own time.
    ///
    /// Always inlined: called, it takes `event` through memory the caller has just written
    /// field by field, and the wider load of it waits for those stores (a failed store
    /// forwarding: half of this function's samples under `perf annotate`).
    #[inline(always)]
    pub fn push_slot(&mut self, slot: usize, at: u64, event: E) {
        let key = self.next_key(at, slot);
        // Asked before the write rather than `replace`d: the old event is read only when there
        // is one.
        let place = &mut self.slots[slot];
        if place.is_some() {
            // Still the slot's key: a slot whose key is stale holds no event.
            let key = node_key(&self.tree, self.leaves + slot);
            Self::displace(&mut self.heap, place, key);
        } else {
            self.in_slots += 1;
        }
        *place = Some(event);
        if let Some(s) = self.stale.take() {
            if s != slot {
                self.set_slot_key(s, u128::MAX);
            }
        }
        self.set_slot_key(slot, key);
    }

    /// The time of the event slot `slot` holds, if it holds one.
    #[inline]
    pub fn slot_at(&self, slot: usize) -> Option<u64> {
        self.slots[slot]
            .as_ref()
            .map(|_| (node_key(&self.tree, self.leaves + slot) >> 64) as u64)
    }

    /// [`EventQueue::push_slot`] that drops the event the slot holds instead of moving it into
    /// the heap: for a caller that knows that event is obsolete and would be ignored when
    /// popped (a burst end whose burst was extended). Returns whether one was dropped. The
    /// dropped event is not counted in [`EventQueue::popped`]; the caller counts it if it must.
    pub fn replace_slot(&mut self, slot: usize, at: u64, event: E) -> bool {
        let key = self.next_key(at, slot);
        let place = &mut self.slots[slot];
        let dropped = place.is_some();
        if !dropped {
            self.in_slots += 1;
        }
        *place = Some(event);
        if let Some(s) = self.stale.take() {
            if s != slot {
                self.set_slot_key(s, u128::MAX);
            }
        }
        self.set_slot_key(slot, key);
        dropped
    }

    /// Move the event a slot holds (`place`, whose key is `key`) into `heap` before a push to
    /// the slot.
    ///
    /// Out of line: rare (a preempted burst's end), and inlined it took registers that the
    /// push's common path then saved and restored.
    #[cold]
    #[inline(never)]
    fn displace(heap: &mut Vec<Entry<E>>, place: &mut Option<E>, key: u128) {
        if let Some(event) = place.take() {
            heap_insert(heap, Entry { key, event });
        }
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        if let Some(s) = self.stale.take() {
            self.set_slot_key(s, u128::MAX);
        }
        let slot_key = self.tree_key(1);
        let heap_key = self.heap.first().map_or(u128::MAX, |e| e.key);
        if slot_key < heap_key {
            let s = (slot_key as usize) & (MAX_SLOTS - 1);
            let event = self.slots[s]
                .take()
                .expect("a slot with a key holds an event");
            self.stale = Some(s);
            self.in_slots -= 1;
            self.popped += 1;
            return Some(((slot_key >> 64) as u64, event));
        }
        self.heap_pop()
    }

    /// The heap's earliest event and its time.
    #[inline]
    fn heap_pop(&mut self) -> Option<(u64, E)> {
        let last = self.heap.pop()?;
        self.popped += 1;
        let Some(&top) = self.heap.first() else {
            return Some((last.at(), last.event));
        };
        // Sift `last` down from the root: move the smallest child up into the hole until
        // `last` is no larger than every child.
        let n = self.heap.len();
        let key = last.key;
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let mut min = first;
            let mut min_key = self.heap[first].key;
            for c in first + 1..(first + ARITY).min(n) {
                let k = self.heap[c].key;
                if k < min_key {
                    min = c;
                    min_key = k;
                }
            }
            if key <= min_key {
                break;
            }
            self.heap[i] = self.heap[min];
            i = min;
        }
        self.heap[i] = last;
        Some((top.at(), top.event))
    }
}

/// A task body as the executor holds it.
pub type Body<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Polls task bodies by index. A finished body is dropped at once.
pub struct Executor<'a, T> {
    bodies: Vec<Option<Body<'a, T>>>,
    /// The bytes [`Executor::prefetch`] fetches of a future: the largest one's size. The bodies
    /// of a run are one workload's and of one type, so this is each one's; found once rather
    /// than from the future's vtable at every prefetch.
    future_bytes: usize,
}

/// The most of a future [`Executor::prefetch`] fetches, in lines' worth of bytes (its first 256
/// bytes, which fall in up to five lines).
const PREFETCH_LINES: usize = 4;

impl<'a, T> Executor<'a, T> {
    /// An executor for these bodies (index = task id).
    pub fn new(bodies: Vec<Body<'a, T>>) -> Self {
        let bytes = (bodies.iter())
            .map(|b| std::mem::size_of_val(b.as_ref().get_ref()))
            .max()
            .unwrap_or(0);
        Executor {
            bodies: bodies.into_iter().map(Some).collect(),
            future_bytes: bytes,
        }
    }

    /// Ask the processor to bring body `i`'s future (its first lines) into the cache ahead of
    /// its next poll (nothing if it finished).
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(Some(body)) = self.bodies.get(i) {
            let future = (body.as_ref().get_ref() as *const dyn Future<Output = T>).cast::<u8>();
            crate::prefetch::lines(future, self.future_bytes, PREFETCH_LINES);
        }
    }

    /// Ask the processor to bring the executor's place of body `i` (the pointer to its future)
    /// into the cache, ahead of a [`Executor::prefetch`] of the future itself.
    #[inline]
    pub fn prefetch_place(&self, i: usize) {
        if let Some(place) = self.bodies.get(i) {
            crate::prefetch::line(place);
        }
    }

    /// Poll body `i` once: `Some(output)` if it finished, `None` if it suspended.
    ///
    /// # Panics
    /// If body `i` already finished.
    // Always inline: a call per context call of a body, whose result (an `Option` of the
    // body's) came back through memory; plain `inline` was not taken in the machine's step
    // loop.
    #[inline(always)]
    pub fn poll(&mut self, i: usize) -> Option<T> {
        let body = self.bodies[i]
            .as_mut()
            .expect("a finished body is not polled");
        let mut cx = PollCx::from_waker(Waker::noop());
        match body.as_mut().poll(&mut cx) {
            Poll::Ready(out) => {
                self.bodies[i] = None;
                Some(out)
            }
            Poll::Pending => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(30, "c");
        q.push(10, "a1");
        q.push(20, "b");
        q.push(10, "a2");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(10, "a1"), (10, "a2"), (20, "b"), (30, "c")]);
        assert_eq!(q.popped(), 4);
        assert!(q.is_empty());
    }

    #[test]
    fn a_replaced_slot_event_is_gone_and_the_queue_stays_small() {
        // A burst end extended at every tick: a push would keep every old end in the heap; a
        // replacement keeps one event.
        let mut q = EventQueue::with_slots(2);
        q.push_slot(1, 100, "end0");
        assert_eq!(q.slot_at(1), Some(100));
        assert_eq!(q.slot_at(0), None);
        for i in 1..1000u64 {
            assert!(q.replace_slot(1, 100 + i, "end"));
        }
        q.push(50, "tick");
        assert_eq!(q.len(), 2);
        assert!(!q.replace_slot(0, 10, "other"));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(10, "other"), (50, "tick"), (1099, "end")]);
        assert_eq!(q.popped(), 3);
        q.check_tree();
    }

    #[test]
    fn many_events_come_out_in_key_order_with_ties_in_insertion_order() {
        // The heap alone: interleaved pushes and pops with many equal times (16 distinct
        // offsets), against a sort of the same keys.
        check_one_key_order(0);
    }

    /// Random pushes to the heap and to `slots` slots, interleaved with runs of pops, against
    /// a sort of the same (time, push order) pairs: a slot pushed while it still holds an event
    /// keeps both, and ties come out in push order wherever they live.
    fn check_one_key_order(slots: usize) {
        let mut q = EventQueue::with_slots(slots);
        let mut expected = Vec::new();
        let mut got = Vec::new();
        let mut x = 987654321u64;
        let mut now = 0;
        for i in 0..30_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = now + (x >> 60);
            let pick = (x >> 32) as usize % (slots + slots / 2 + 1);
            if pick < slots {
                q.push_slot(pick, at, i);
            } else {
                q.push(at, i);
            }
            expected.push((at, i));
            q.check_tree();
            assert_eq!(q.len(), expected.len() - got.len());
            // Half the time, pop one to three events in a row.
            let pops = if x & (1 << 20) != 0 {
                1 + (x >> 21) % 3
            } else {
                0
            };
            for _ in 0..pops {
                let Some((t, e)) = q.pop() else { break };
                q.check_tree();
                assert!(t >= now, "time goes forward");
                now = t;
                got.push((t, e));
            }
        }
        got.extend(std::iter::from_fn(|| q.pop()));
        expected.sort();
        assert_eq!(got, expected);
        assert_eq!(q.popped(), 30_000);
        assert!(q.is_empty());
    }

    #[test]
    fn slot_and_heap_events_come_out_in_one_key_order() {
        // Trees of 8 and 128 leaves.
        check_one_key_order(5);
        check_one_key_order(100);
    }

    #[test]
    fn the_largest_tree_keeps_one_key_order() {
        // Every entry of the fixed-size tree in use: its masked indices reach the last one.
        check_one_key_order(MAX_SLOTS);
    }

    #[test]
    fn lesser_is_the_128_bit_minimum() {
        let halves = [0, 1, 2, u64::MAX / 2, u64::MAX - 1, u64::MAX];
        let keys: Vec<u128> = (halves.iter())
            .flat_map(|&h| {
                halves
                    .iter()
                    .map(move |&l| (u128::from(h) << 64) | u128::from(l))
            })
            .collect();
        for &a in &keys {
            for &b in &keys {
                assert_eq!(lesser(a, b), a.min(b), "{a:#x} {b:#x}");
            }
        }
    }

    #[test]
    fn a_slot_pushed_again_keeps_its_earlier_event() {
        let mut q = EventQueue::with_slots(1);
        q.push_slot(0, 50, "first");
        q.push_slot(0, 20, "second");
        q.push(30, "heap");
        assert_eq!(q.len(), 3);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(20, "second"), (30, "heap"), (50, "first")]);
    }

    #[test]
    fn executor_polls_until_ready() {
        let mut ex = Executor::new(vec![Box::pin(async { 7 }) as Body<'_, i32>]);
        ex.prefetch_place(0);
        ex.prefetch(0);
        assert_eq!(ex.poll(0), Some(7));
    }

    #[test]
    fn prefetch_of_a_finished_or_unknown_body_does_nothing() {
        let mut ex = Executor::new(vec![Box::pin(async { 7 }) as Body<'_, i32>]);
        assert_eq!(ex.poll(0), Some(7));
        ex.prefetch(0); // finished: dropped, nothing to fetch
        ex.prefetch(1); // a kernel thread's id, past the bodies
        ex.prefetch_place(1);
        assert!(ex.bodies[0].is_none());
    }
}
