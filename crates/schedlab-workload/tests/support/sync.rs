//! Workloads that use barriers, semaphores and condition variables, written once for the tests
//! of both backends (the simulator's and the real backend's test files include this file with
//! `#[path]`). Each keeps what its bodies saw in atomics, for the tests to check after a run.
#![allow(dead_code)]

use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::MetricDef;
use schedlab_workload::{BarrierId, CondId, Context, LockId, SemaphoreId, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// A plan of `groups` (name, tasks), locks and synchronisation objects, as threads.
pub fn plan(groups: &[(&'static str, usize)], locks: usize, sync: SyncPlan) -> Plan {
    Plan {
        groups: groups
            .iter()
            .map(|&(name, tasks)| GroupPlan {
                name,
                tasks,
                spawn: 0,
            })
            .collect(),
        channels: 0,
        duplex: false,
        locks,
        sync,
        mode: TaskMode::Threads,
        transport: Transport::Pipe,
    }
}

/// How the bodies of a run ended: counted by every body as it returns, so that a test can see
/// that waits ended (and how) after the run was stopped.
#[derive(Default)]
pub struct Ends {
    /// Bodies that returned.
    pub ended: AtomicUsize,
    /// Bodies that returned [`WorkloadError::Stopped`].
    pub stopped: AtomicUsize,
}

impl Ends {
    /// Count the end of a body and pass its result on.
    pub fn count(&self, r: Result<(), WorkloadError>) -> Result<(), WorkloadError> {
        if r == Err(WorkloadError::Stopped) {
            self.stopped.fetch_add(1, Ordering::SeqCst);
        }
        self.ended.fetch_add(1, Ordering::SeqCst);
        r
    }

    /// Wait up to `limit` (wall time) until `n` bodies have ended; whether they did.
    pub fn wait_for(&self, n: usize, limit: Duration) -> bool {
        let until = std::time::Instant::now() + limit;
        while self.ended.load(Ordering::SeqCst) < n {
            if std::time::Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

macro_rules! no_metrics {
    () => {
        fn params(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn metric_defs(&self) -> Vec<MetricDef> {
            Vec::new()
        }
        fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
            Ok(BTreeMap::new())
        }
    };
}

/// `tasks` tasks meet at barrier 0 (of `parties`) `rounds` times; before each round task *i*
/// computes (*i*+1)×`unit`. Each records `arrive` (just before the barrier) and `leave` (just
/// after), in ns since the epoch.
pub struct BarrierRounds {
    pub tasks: usize,
    pub parties: usize,
    pub rounds: usize,
    pub unit: Duration,
    pub ends: Ends,
}

impl Workload for BarrierRounds {
    fn name(&self) -> &'static str {
        "barrier-rounds"
    }
    no_metrics!();
    fn plan(&self) -> Plan {
        plan(
            &[("party", self.tasks)],
            0,
            SyncPlan {
                barriers: vec![self.parties],
                ..SyncPlan::default()
            },
        )
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let r = async {
            for _ in 0..self.rounds {
                ctx.compute(self.unit * (task.index as u32 + 1)).await;
                ctx.record("arrive", ns(ctx.now()));
                ctx.barrier(BarrierId(0)).await?;
                ctx.record("leave", ns(ctx.now()));
            }
            Ok(())
        };
        self.ends.count(r.await)
    }
}

/// Semaphore 0 starts at `initial`; the waiter takes it `takes` times (recording `took` each
/// time); the poster computes `unit`, records `posted` and posts once.
pub struct SemaphoreHandoff {
    pub initial: u32,
    pub takes: u32,
    pub unit: Duration,
    pub ends: Ends,
}

impl Workload for SemaphoreHandoff {
    fn name(&self) -> &'static str {
        "semaphore-handoff"
    }
    no_metrics!();
    fn plan(&self) -> Plan {
        plan(
            &[("waiter", 1), ("poster", 1)],
            0,
            SyncPlan {
                semaphores: vec![self.initial],
                ..SyncPlan::default()
            },
        )
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let r = async {
            if task.group == 0 {
                for _ in 0..self.takes {
                    ctx.record("waiting", ns(ctx.now()));
                    ctx.sem_wait(SemaphoreId(0)).await?;
                    ctx.record("took", ns(ctx.now()));
                }
            } else {
                ctx.compute(self.unit).await;
                ctx.record("posted", ns(ctx.now()));
                ctx.sem_post(SemaphoreId(0)).await?;
            }
            Ok(())
        };
        self.ends.count(r.await)
    }
}

/// A bounded buffer of `capacity` under lock 0, with condition 0 "not empty" and condition 1
/// "not full": `producers` put `items` each, `consumers` take an equal share. Producers are
/// quick and consumers slow, so producers wait for room. Records `produced`, `consumed` and
/// `waited_full` / `waited_empty` (1 per item or wait); the buffer's state is kept here.
pub struct BoundedBuffer {
    pub producers: usize,
    pub consumers: usize,
    pub items: usize,
    pub capacity: usize,
    pub produce: Duration,
    pub consume: Duration,
    /// Items in the buffer.
    pub count: AtomicUsize,
    /// The most items it ever held.
    pub most: AtomicUsize,
    /// Whether a task is inside the critical section.
    pub inside: AtomicBool,
    /// Times a task entered the critical section while another was in it.
    pub overlaps: AtomicUsize,
    pub ends: Ends,
}

impl BoundedBuffer {
    /// A buffer run with empty state.
    pub fn new(producers: usize, consumers: usize, items: usize, capacity: usize) -> Self {
        BoundedBuffer {
            producers,
            consumers,
            items,
            capacity,
            produce: Duration::from_micros(20),
            consume: Duration::from_micros(200),
            count: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            inside: AtomicBool::new(false),
            overlaps: AtomicUsize::new(0),
            ends: Ends::default(),
        }
    }

    fn enter(&self) {
        if self.inside.swap(true, Ordering::SeqCst) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn leave(&self) {
        self.inside.store(false, Ordering::SeqCst);
    }

    async fn produce<C: Context>(&self, ctx: &C) -> Result<(), WorkloadError> {
        for _ in 0..self.items {
            ctx.compute(self.produce).await;
            ctx.lock(LockId(0)).await;
            self.enter();
            while self.count.load(Ordering::SeqCst) == self.capacity {
                ctx.record("waited_full", 1.0);
                self.leave();
                ctx.cond_wait(CondId(1), LockId(0)).await?;
                self.enter();
            }
            let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(n, Ordering::SeqCst);
            ctx.cond_signal(CondId(0)).await?;
            self.leave();
            ctx.unlock(LockId(0));
            ctx.record("produced", 1.0);
        }
        Ok(())
    }

    async fn consume<C: Context>(&self, ctx: &C) -> Result<(), WorkloadError> {
        for _ in 0..self.producers * self.items / self.consumers {
            ctx.lock(LockId(0)).await;
            self.enter();
            while self.count.load(Ordering::SeqCst) == 0 {
                ctx.record("waited_empty", 1.0);
                self.leave();
                ctx.cond_wait(CondId(0), LockId(0)).await?;
                self.enter();
            }
            self.count.fetch_sub(1, Ordering::SeqCst);
            ctx.cond_signal(CondId(1)).await?;
            self.leave();
            ctx.unlock(LockId(0));
            ctx.record("consumed", 1.0);
            ctx.compute(self.consume).await;
        }
        Ok(())
    }
}

impl Workload for BoundedBuffer {
    fn name(&self) -> &'static str {
        "bounded-buffer"
    }
    no_metrics!();
    fn plan(&self) -> Plan {
        plan(
            &[("producer", self.producers), ("consumer", self.consumers)],
            1,
            SyncPlan {
                conds: 2,
                ..SyncPlan::default()
            },
        )
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let r = if task.group == 0 {
            self.produce(ctx).await
        } else {
            self.consume(ctx).await
        };
        self.ends.count(r)
    }
}

/// `waiters` tasks wait on condition 0 (lock 0) until `go`; the waker computes `unit`, sets
/// `go` and broadcasts (or only signals). Each waiter records `woke`.
pub struct GoSignal {
    pub waiters: usize,
    pub broadcast: bool,
    pub unit: Duration,
    pub go: AtomicBool,
    pub ends: Ends,
}

impl GoSignal {
    /// A run in which nobody has been told to go.
    pub fn new(waiters: usize, broadcast: bool, unit: Duration) -> Self {
        GoSignal {
            waiters,
            broadcast,
            unit,
            go: AtomicBool::new(false),
            ends: Ends::default(),
        }
    }
}

impl Workload for GoSignal {
    fn name(&self) -> &'static str {
        "go-signal"
    }
    no_metrics!();
    fn plan(&self) -> Plan {
        plan(
            &[("waiter", self.waiters), ("waker", 1)],
            1,
            SyncPlan {
                conds: 1,
                ..SyncPlan::default()
            },
        )
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let r = async {
            ctx.lock(LockId(0)).await;
            if task.group == 0 {
                while !self.go.load(Ordering::SeqCst) {
                    ctx.cond_wait(CondId(0), LockId(0)).await?;
                }
                ctx.unlock(LockId(0));
                ctx.record("woke", ns(ctx.now()));
            } else {
                ctx.unlock(LockId(0));
                ctx.compute(self.unit).await;
                ctx.lock(LockId(0)).await;
                self.go.store(true, Ordering::SeqCst);
                if self.broadcast {
                    ctx.cond_broadcast(CondId(0)).await?;
                } else {
                    ctx.cond_signal(CondId(0)).await?;
                }
                ctx.unlock(LockId(0));
            }
            Ok(())
        };
        self.ends.count(r.await)
    }
}

/// The signaller signals condition 0 at once, while nobody waits; the waiter computes `unit`
/// and then waits on it with no predicate, for a signal that was lost.
pub struct LostSignal {
    pub unit: Duration,
    pub ends: Ends,
}

impl Workload for LostSignal {
    fn name(&self) -> &'static str {
        "lost-signal"
    }
    no_metrics!();
    fn plan(&self) -> Plan {
        plan(
            &[("signaller", 1), ("waiter", 1)],
            1,
            SyncPlan {
                conds: 1,
                ..SyncPlan::default()
            },
        )
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let r = async {
            if task.group == 0 {
                ctx.lock(LockId(0)).await;
                ctx.cond_signal(CondId(0)).await?;
                ctx.unlock(LockId(0));
            } else {
                ctx.compute(self.unit).await;
                ctx.lock(LockId(0)).await;
                ctx.cond_wait(CondId(0), LockId(0)).await?;
                ctx.unlock(LockId(0));
            }
            Ok(())
        };
        self.ends.count(r.await)
    }
}

/// A workload run with its tasks hosted as `mode` instead of threads.
pub struct Hosted<W>(pub W, pub TaskMode);

impl<W: Workload> Workload for Hosted<W> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    no_metrics!();
    fn plan(&self) -> Plan {
        Plan {
            mode: self.1,
            ..self.0.plan()
        }
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        self.0.body(task, ctx).await
    }
}

/// The samples of `metric` of every task, in task order.
pub fn samples(o: &Outcome, metric: &str) -> Vec<Vec<f64>> {
    o.tasks
        .iter()
        .map(|t| t.samples.get(metric).cloned().unwrap_or_default())
        .collect()
}

/// The sum of `metric` over all tasks.
pub fn total(o: &Outcome, metric: &str) -> f64 {
    samples(o, metric).iter().flatten().sum()
}
