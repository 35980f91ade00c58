//! The engine: a seeded discrete-event queue and an executor of task bodies. It knows nothing of
//! scheduling — the machine ([`crate::machine`]) decides what an event means and when a body may
//! run.
//!
//! Shape taken from simcore and nexosim: events are ordered by time, then by insertion sequence
//! (FIFO for ties, so runs are deterministic); task bodies are futures polled with a no-op waker
//! only when the machine says their operation has completed — a body never wakes itself.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as PollCx, Poll, Waker};

/// One queued event: ordered by time, then by insertion sequence.
struct Entry<E> {
    at: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// A time-ordered queue of events of type `E`, ties broken by insertion order. Events are kept
/// inline in the heap (no side table): the heap is most of an event's cost, as simcore found.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
            popped: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedule `event` at time `at` (ns).
    pub fn push(&mut self, at: u64, event: E) {
        self.heap.push(Reverse(Entry {
            at,
            seq: self.seq,
            event,
        }));
        self.seq += 1;
    }

    /// The earliest event and its time.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let Reverse(e) = self.heap.pop()?;
        self.popped += 1;
        Some((e.at, e.event))
    }

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
        std::mem::size_of::<Reverse<Entry<E>>>()
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
}

impl<'a, T> Executor<'a, T> {
    /// An executor for these bodies (index = task id).
    pub fn new(bodies: Vec<Body<'a, T>>) -> Self {
        Executor {
            bodies: bodies.into_iter().map(Some).collect(),
        }
    }

    /// Poll body `i` once: `Some(output)` if it finished, `None` if it suspended.
    ///
    /// # Panics
    /// If body `i` already finished.
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
    fn executor_polls_until_ready() {
        let mut ex = Executor::new(vec![Box::pin(async { 7 }) as Body<'_, i32>]);
        assert_eq!(ex.poll(0), Some(7));
    }
}
