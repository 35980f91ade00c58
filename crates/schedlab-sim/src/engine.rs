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

/// One queued event: ordered by time, then by insertion sequence.
#[derive(Clone, Copy)]
struct Entry<E> {
    at: u64,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// The order key: time, then sequence, as one number (one branch-free comparison).
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.at) << 64) | u128::from(self.seq)
    }
}

/// Children per node of the heap: a 4-ary heap is half as deep as a binary one, and a node's
/// children are adjacent, so a pop touches fewer cache lines and takes fewer unpredictable
/// branches (std's `BinaryHeap` was a fifth of the engine's time).
const ARITY: usize = 4;

/// A time-ordered queue of events of type `E`, ties broken by insertion order. Events are kept
/// inline in the heap (no side table): the heap is most of an event's cost, as simcore found.
/// Every key (time, sequence) is distinct, so the order events come out in is fixed by the keys
/// alone, whatever the heap's shape.
pub struct EventQueue<E> {
    /// A min-heap of [`ARITY`] children per node: entry `i`'s children are
    /// `ARITY·i + 1 ..= ARITY·i + ARITY`.
    heap: Vec<Entry<E>>,
    seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: Vec::new(),
            seq: 0,
            popped: 0,
        }
    }
}

impl<E: Copy> EventQueue<E> {
    /// Schedule `event` at time `at` (ns).
    #[inline]
    pub fn push(&mut self, at: u64, event: E) {
        let e = Entry {
            at,
            seq: self.seq,
            event,
        };
        self.seq += 1;
        // Sift up: move parents down into the hole until `e` fits.
        let key = e.key();
        let mut i = self.heap.len();
        self.heap.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key() <= key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = e;
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let last = self.heap.pop()?;
        self.popped += 1;
        let Some(&top) = self.heap.first() else {
            return Some((last.at, last.event));
        };
        // Sift `last` down from the root: move the smallest child up into the hole until
        // `last` is no larger than every child.
        let n = self.heap.len();
        let key = last.key();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let mut min = first;
            let mut min_key = self.heap[first].key();
            for c in first + 1..(first + ARITY).min(n) {
                let k = self.heap[c].key();
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
        Some((top.at, top.event))
    }
}

impl<E> EventQueue<E> {
    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// The memory one waiting event takes in the queue, bytes.
    pub fn entry_size(&self) -> usize {
        std::mem::size_of::<Entry<E>>()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// A task body as the executor holds it.
pub type Body<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Polls task bodies by index. A finished body is dropped at once.
pub struct Executor<'a, T> {
    bodies: Vec<Option<Body<'a, T>>>,
    /// The lines [`Executor::prefetch`] fetches of a future: those of the largest one, at most
    /// [`PREFETCH_LINES`]. The bodies of a run are one workload's and of one type, so this is
    /// each one's; found once rather than from the future's vtable at every prefetch.
    future_lines: usize,
}

/// The most lines of a future [`Executor::prefetch`] fetches.
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
            future_lines: bytes
                .div_ceil(crate::prefetch::LINE)
                .clamp(1, PREFETCH_LINES),
        }
    }

    /// Ask the processor to bring body `i`'s future (its first lines) into the cache ahead of
    /// its next poll (nothing if it finished).
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(Some(body)) = self.bodies.get(i) {
            let future = (body.as_ref().get_ref() as *const dyn Future<Output = T>).cast::<u8>();
            // The bound lets the compiler unroll the loop into at most that many prefetches.
            for k in 0..self.future_lines.min(PREFETCH_LINES) {
                crate::prefetch::line(future.wrapping_add(k * crate::prefetch::LINE));
            }
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
    // Inline: a call per context call of a body, whose result (an `Option` of the body's) came
    // back through memory.
    #[inline]
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
    fn many_events_come_out_in_key_order_with_ties_in_insertion_order() {
        // Interleaved pushes and pops with many equal times, against a sort of the same keys.
        let mut q = EventQueue::default();
        let mut expected = Vec::new();
        let mut got = Vec::new();
        let mut x = 12345u64;
        let mut now = 0;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = now + (x >> 60); // 16 distinct offsets: many ties
            q.push(at, i);
            expected.push((at, i));
            if x & (1 << 20) != 0 {
                let (t, e) = q.pop().unwrap();
                assert!(t >= now, "time goes forward");
                now = t;
                got.push((t, e));
            }
        }
        got.extend(std::iter::from_fn(|| q.pop()));
        expected.sort();
        assert_eq!(got, expected);
        assert_eq!(q.popped(), 20_000);
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
