//! The plan's barriers, semaphores, condition variables and shared words on real threads
//! ([`SyncObjects`]).
//!
//! Every wait parks the thread in the kernel (a futex, through `parking_lot_core`, which also
//! holds the plan's locks): the scheduler sees a task that blocks and a wakeup that ends the
//! block, one per woken task, as with glibc's primitives. Waiters of one object are queued first
//! come, first served. `parking_lot_core` checks a waiter's condition and queues it under one
//! lock, so no wakeup is lost between the check and the sleep:
//!
//! - a barrier counts arrivals; the last party of a round starts the next round and wakes the
//!   round's waiters (a barrier of 0 or 1 parties never waits);
//! - a semaphore's post is handed to its first waiter (which returns without touching the
//!   count), or added to the count if nobody waits;
//! - `cond_wait` queues the task on the condition and only then releases the lock, so a signal
//!   sent after the lock is released finds it; once woken it takes the lock again. A signal or
//!   broadcast that finds no waiter is lost, as with pthreads.
//!
//! A run that is asked to stop ([`SyncObjects::stop`], and a stop flag the waits look at) wakes
//! every waiter, and each wait returns [`WorkloadError::Stopped`], leaving the lock of a
//! `cond_wait` released. A plan with a wait end ([`SyncPlan::wait_end`]) gives every wait a
//! deadline (the caller's `until`, that end on the monotonic clock): a wait still parked then
//! times out with the same error, so that no task waits for a peer that stopped at the end.
//!
//! The objects live in the schedlab process: tasks that are forked processes cannot share them
//! (the runner refuses such plans, see [`crate::runner::check_hosting`]).

use crate::locks::RealLock;
use parking_lot_core::{FilterOp, ParkResult, ParkToken, UnparkToken, DEFAULT_PARK_TOKEN};
use schedlab_workload::mem_access::BufferKey;
use schedlab_workload::{MemAccess, SyncPlan, WorkloadError};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The token of a wakeup that ends the wait normally.
const GO: UnparkToken = UnparkToken(1);
/// The token of a wakeup because the run stops.
const STOPPED: UnparkToken = UnparkToken(2);

/// A cyclic barrier. Its address is its parking key.
struct Barrier {
    parties: usize,
    /// Arrivals in the current round.
    arrived: AtomicUsize,
    /// Rounds completed (the park token of a waiter: the round it waits in).
    round: AtomicUsize,
}

/// A counting semaphore. Its address is its parking key.
struct Semaphore {
    count: AtomicU64,
}

/// A condition variable: only an address to park on (the field makes each one distinct).
struct Cond {
    _key: u64,
}

/// The plan's barriers, semaphores and condition variables, shared by the threads of a run.
pub struct SyncObjects {
    barriers: Box<[Barrier]>,
    semaphores: Box<[Semaphore]>,
    conds: Box<[Cond]>,
    /// The plan's shared words.
    words: Box<[AtomicU64]>,
    /// Set by [`SyncObjects::stop`].
    stopped: AtomicBool,
    /// The run's stop flag (set from a signal handler, which cannot wake anybody).
    run_stop: Arc<AtomicBool>,
    /// The plan's wait end, epoch-relative.
    wait_end: Option<std::time::Duration>,
    /// The memory-access buffers tasks share by name (rt-app's `ref`), made by the first task
    /// that needs each.
    mem_buffers: parking_lot::Mutex<
        std::collections::BTreeMap<BufferKey, Arc<crate::mem_access::MemBuffer>>,
    >,
}

/// The error for an object the plan does not have.
fn missing(what: &str, id: usize, have: usize) -> WorkloadError {
    WorkloadError::Backend(format!(
        "{what} {id} is not in the workload's plan, which has {have}"
    ))
}

fn key<T>(object: &T) -> usize {
    object as *const T as usize
}

impl SyncObjects {
    /// The objects of `plan`; waits also end when `run_stop` is set and [`SyncObjects::stop`]
    /// called.
    pub fn new(plan: &SyncPlan, run_stop: Arc<AtomicBool>) -> SyncObjects {
        SyncObjects {
            barriers: (plan.barriers.iter())
                .map(|&parties| Barrier {
                    parties,
                    arrived: AtomicUsize::new(0),
                    round: AtomicUsize::new(0),
                })
                .collect(),
            semaphores: (plan.semaphores.iter())
                .map(|&n| Semaphore {
                    count: AtomicU64::new(u64::from(n)),
                })
                .collect(),
            conds: (0..plan.conds).map(|_| Cond { _key: 0 }).collect(),
            words: (0..plan.words).map(|_| AtomicU64::new(0)).collect(),
            stopped: AtomicBool::new(false),
            run_stop,
            wait_end: plan.wait_end,
            mem_buffers: Default::default(),
        }
    }

    /// The shared buffer of `access` (its `shared` name and kind), made now if no task has.
    pub fn shared_buffer(
        &self,
        access: &MemAccess,
    ) -> Result<Arc<crate::mem_access::MemBuffer>, WorkloadError> {
        let mut buffers = self.mem_buffers.lock();
        if let Some(b) = buffers.get(&access.buffer_key()) {
            return Ok(b.clone());
        }
        let b = Arc::new(crate::mem_access::MemBuffer::new(access)?);
        buffers.insert(access.buffer_key(), b.clone());
        Ok(b)
    }

    /// When every wait ends, epoch-relative ([`SyncPlan::wait_end`]).
    pub fn wait_end(&self) -> Option<std::time::Duration> {
        self.wait_end
    }

    fn stopping(&self) -> bool {
        self.stopped.load(Ordering::SeqCst) || self.run_stop.load(Ordering::SeqCst)
    }

    /// End every wait, now and later, with [`WorkloadError::Stopped`].
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let keys = (self.barriers.iter().map(key))
            .chain(self.semaphores.iter().map(key))
            .chain(self.conds.iter().map(key));
        for k in keys {
            // SAFETY: the key is the address of an object of ours, used by nothing else.
            unsafe { parking_lot_core::unpark_all(k, STOPPED) };
        }
    }

    /// Wait at barrier `id` until its parties have all arrived, or until `until`.
    pub fn barrier(&self, id: usize, until: Option<Instant>) -> Result<(), WorkloadError> {
        let b =
            (self.barriers.get(id)).ok_or_else(|| missing("barrier", id, self.barriers.len()))?;
        #[derive(PartialEq)]
        enum Arrival {
            Waits,
            Last,
            LateForRound,
            Stopped,
        }
        loop {
            let round = b.round.load(Ordering::SeqCst);
            let mut arrival = Arrival::Waits;
            // Under the queue's lock: count the arrival, or end the round.
            let validate = || {
                if self.stopping() {
                    arrival = Arrival::Stopped;
                    return false;
                }
                if b.round.load(Ordering::SeqCst) != round {
                    arrival = Arrival::LateForRound;
                    return false;
                }
                let n = b.arrived.load(Ordering::SeqCst) + 1;
                if n >= b.parties {
                    b.arrived.store(0, Ordering::SeqCst);
                    b.round.store(round.wrapping_add(1), Ordering::SeqCst);
                    arrival = Arrival::Last;
                    return false;
                }
                b.arrived.store(n, Ordering::SeqCst);
                true
            };
            // SAFETY: our own key; the closures do not panic or call into parking_lot.
            let parked = unsafe {
                parking_lot_core::park(key(b), validate, || {}, |_, _| {}, ParkToken(round), until)
            };
            match parked {
                ParkResult::Unparked(GO) => return Ok(()),
                ParkResult::Unparked(_) => return Err(WorkloadError::Stopped),
                ParkResult::Invalid if arrival == Arrival::Last => {
                    // Wake the waiters of this round (in the order they arrived), nobody else.
                    // SAFETY: our own key; the closures do not panic or call into parking_lot.
                    unsafe {
                        parking_lot_core::unpark_filter(
                            key(b),
                            |ParkToken(r)| {
                                if r == round {
                                    FilterOp::Unpark
                                } else {
                                    FilterOp::Skip
                                }
                            },
                            |_| GO,
                        )
                    };
                    return Ok(());
                }
                ParkResult::Invalid if arrival == Arrival::LateForRound => continue,
                ParkResult::Invalid | ParkResult::TimedOut => return Err(WorkloadError::Stopped),
            }
        }
    }

    /// Store `value` in shared word `id`. Release order: a thread that sees the store (or is
    /// woken by a post that followed it, whose queue lock orders the two) sees what was
    /// written before it.
    pub fn store_word(&self, id: usize, value: u64) -> Result<(), WorkloadError> {
        let w = (self.words.get(id)).ok_or_else(|| missing("shared word", id, self.words.len()))?;
        w.store(value, Ordering::Release);
        Ok(())
    }

    /// Shared word `id`'s value.
    pub fn load_word(&self, id: usize) -> Result<u64, WorkloadError> {
        let w = (self.words.get(id)).ok_or_else(|| missing("shared word", id, self.words.len()))?;
        Ok(w.load(Ordering::Acquire))
    }

    /// Post semaphore `id`: hand the post to its first waiter, or add one to its count.
    pub fn sem_post(&self, id: usize) -> Result<(), WorkloadError> {
        let s = (self.semaphores.get(id))
            .ok_or_else(|| missing("semaphore", id, self.semaphores.len()))?;
        // SAFETY: our own key; the callback runs under the queue's lock, does not panic and
        // does not call into parking_lot.
        unsafe {
            parking_lot_core::unpark_one(key(s), |r| {
                if r.unparked_threads == 0 {
                    s.count.fetch_add(1, Ordering::SeqCst);
                }
                GO
            })
        };
        Ok(())
    }

    /// Take one from semaphore `id`, or wait for a post (until `until`).
    pub fn sem_wait(&self, id: usize, until: Option<Instant>) -> Result<(), WorkloadError> {
        let s = (self.semaphores.get(id))
            .ok_or_else(|| missing("semaphore", id, self.semaphores.len()))?;
        loop {
            let n = s.count.load(Ordering::SeqCst);
            if n > 0 {
                if (s.count)
                    .compare_exchange(n, n - 1, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    return Ok(());
                }
                continue;
            }
            let mut stopped = false;
            let validate = || {
                stopped = self.stopping();
                !stopped && s.count.load(Ordering::SeqCst) == 0
            };
            // SAFETY: our own key; the closures do not panic or call into parking_lot.
            let parked = unsafe {
                parking_lot_core::park(
                    key(s),
                    validate,
                    || {},
                    |_, _| {},
                    DEFAULT_PARK_TOKEN,
                    until,
                )
            };
            match parked {
                // The post was handed over: the count was left alone.
                ParkResult::Unparked(GO) => return Ok(()),
                ParkResult::Invalid if !stopped => continue,
                _ => return Err(WorkloadError::Stopped),
            }
        }
    }

    /// Release `lock` (held by the caller), wait on condition `id` until signalled (or until
    /// `until`), and take `lock` again. On [`WorkloadError::Stopped`] the lock is left released.
    pub fn cond_wait(
        &self,
        id: usize,
        lock: &RealLock,
        until: Option<Instant>,
    ) -> Result<(), WorkloadError> {
        let c = (self.conds.get(id))
            .ok_or_else(|| missing("condition variable", id, self.conds.len()))?;
        let validate = || !self.stopping();
        // Called once the task is queued: a signal from now on finds it.
        // SAFETY: the caller holds the lock (cond_wait's contract); unlocking may unpark a
        // waiter of the lock, which parking_lot_core allows here.
        let release = || unsafe { lock.unlock() };
        // SAFETY: our own key; validate does not panic or call into parking_lot, and
        // before_sleep only unparks.
        let parked = unsafe {
            parking_lot_core::park(
                key(c),
                validate,
                release,
                |_, _| {},
                DEFAULT_PARK_TOKEN,
                until,
            )
        };
        match parked {
            ParkResult::Unparked(GO) => {
                lock.lock();
                Ok(())
            }
            ParkResult::Invalid => {
                // Stopping: never queued, so the lock is still held.
                // SAFETY: as above.
                unsafe { lock.unlock() };
                Err(WorkloadError::Stopped)
            }
            _ => Err(WorkloadError::Stopped),
        }
    }

    /// Wake the first waiter of condition `id`, if any.
    pub fn cond_signal(&self, id: usize) -> Result<(), WorkloadError> {
        let c = (self.conds.get(id))
            .ok_or_else(|| missing("condition variable", id, self.conds.len()))?;
        // SAFETY: our own key; the callback does not panic or call into parking_lot.
        unsafe { parking_lot_core::unpark_one(key(c), |_| GO) };
        Ok(())
    }

    /// Wake every waiter of condition `id`.
    pub fn cond_broadcast(&self, id: usize) -> Result<(), WorkloadError> {
        let c = (self.conds.get(id))
            .ok_or_else(|| missing("condition variable", id, self.conds.len()))?;
        // SAFETY: our own key.
        unsafe { parking_lot_core::unpark_all(key(c), GO) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn objects(plan: SyncPlan) -> Arc<SyncObjects> {
        Arc::new(SyncObjects::new(&plan, Arc::new(AtomicBool::new(false))))
    }

    #[test]
    fn stop_wakes_every_kind_of_waiter_and_later_waits_end_at_once() {
        let s = objects(SyncPlan {
            barriers: vec![3],
            semaphores: vec![0],
            conds: 1,
            queues: 0,
            ..SyncPlan::default()
        });
        let lock = Arc::new(RealLock::new(
            schedlab_workload::plan::LockKind::Sleep,
            "l".into(),
            true,
        ));
        let waiters: Vec<_> = (0..3)
            .map(|kind| {
                let s = s.clone();
                let lock = lock.clone();
                std::thread::spawn(move || match kind {
                    0 => s.barrier(0, None),
                    1 => s.sem_wait(0, None),
                    _ => {
                        lock.lock();
                        s.cond_wait(0, &lock, None)
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        assert!(waiters.iter().all(|w| !w.is_finished()));
        s.stop();
        for w in waiters {
            assert_eq!(w.join().unwrap(), Err(WorkloadError::Stopped));
        }
        // The cond waiter left the lock released.
        assert!(lock.try_lock());
        let t = Instant::now();
        assert_eq!(s.barrier(0, None), Err(WorkloadError::Stopped));
        assert_eq!(s.sem_wait(0, None), Err(WorkloadError::Stopped));
        assert_eq!(s.cond_wait(0, &lock, None), Err(WorkloadError::Stopped));
        assert!(!lock.is_locked(), "released on the way out");
        assert!(t.elapsed() < Duration::from_millis(50));
    }

    #[test]
    fn objects_the_plan_lacks_are_named() {
        let s = objects(SyncPlan::default());
        assert_eq!(
            s.sem_post(2).unwrap_err().to_string(),
            "semaphore 2 is not in the workload's plan, which has 0"
        );
        assert!(s.barrier(0, None).is_err() && s.cond_signal(0).is_err());
    }

    #[test]
    fn a_barrier_of_one_party_never_waits() {
        let s = objects(SyncPlan {
            barriers: vec![1, 0],
            ..SyncPlan::default()
        });
        for _ in 0..3 {
            assert_eq!(s.barrier(0, None), Ok(()));
            assert_eq!(s.barrier(1, None), Ok(()));
        }
    }

    #[test]
    fn a_wait_still_parked_at_its_deadline_ends_stopped_with_the_lock_released() {
        let s = objects(SyncPlan {
            barriers: vec![2],
            semaphores: vec![0],
            conds: 1,
            ..SyncPlan::default()
        });
        let lock = RealLock::new(schedlab_workload::plan::LockKind::Sleep, "l".into(), true);
        let t = Instant::now();
        let until = Some(t + Duration::from_millis(30));
        assert_eq!(s.barrier(0, until), Err(WorkloadError::Stopped));
        assert_eq!(s.sem_wait(0, until), Err(WorkloadError::Stopped));
        lock.lock();
        assert_eq!(s.cond_wait(0, &lock, until), Err(WorkloadError::Stopped));
        assert!(lock.try_lock(), "the cond wait left its lock released");
        let took = t.elapsed();
        // Not before the deadline; well within a second after it (a loaded machine).
        assert!(
            took >= Duration::from_millis(30) && took < Duration::from_secs(1),
            "{took:?}"
        );
        // A post that came before the deadline is taken, as without one.
        s.sem_post(0).unwrap();
        assert_eq!(s.sem_wait(0, Some(Instant::now())), Ok(()));
    }
}
