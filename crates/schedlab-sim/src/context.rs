//! The simulator's [`Context`]: every call a task body makes becomes a request ([`Op`]) that the
//! machine carries out in simulated time. The future returned by a context call stays pending
//! until the machine marks the request done and polls the body again.

use schedlab_workload::{
    BarrierId, ChannelId, ChildExit, CondId, Context, CpuTimes, FileRead, IoKind, LockId,
    SemaphoreId, TaskRef, WordId, WorkloadError,
};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{ready, Context as PollCx, Poll};
use std::time::{Duration, Instant};

/// One request from a task body to the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Burn this much CPU time (ns).
    Compute(u64),
    /// Write the slot's `outbuf` into a channel.
    Send(usize),
    /// Read `len` bytes from a channel into the slot's `inbuf`.
    Recv(usize, usize),
    /// Read what a channel holds, at least one byte and at most this many, into the slot's
    /// `inbuf`.
    RecvSome(usize, usize),
    /// Wait until one of the slot's `pollset` channels has bytes, or until this epoch-relative
    /// time (ns) if one is given; the slot's `ready` says which.
    Poll(Option<u64>),
    /// Sleep until this epoch-relative time (ns).
    SleepUntil(u64),
    /// sched_yield.
    Yield,
    /// Take a lock.
    Lock(usize),
    /// Wait at a barrier until all its parties have arrived.
    Barrier(usize),
    /// Post a semaphore.
    SemPost(usize),
    /// Take one from a semaphore (or block until there is one).
    SemWait(usize),
    /// Release the lock (second), wait on the condition variable (first), take the lock again.
    CondWait(usize, usize),
    /// Wake one waiter of a condition variable.
    CondSignal(usize),
    /// Wake every waiter of a condition variable.
    CondBroadcast(usize),
    /// Read or write bytes of a scratch file.
    Io(IoKind, usize),
    /// Write to this many bytes (second) of memory, from this offset (first).
    Touch(usize, usize),
    /// Free all of the task's memory.
    FreeMemory,
    /// Run the slot's `mem_access`.
    MemAccess,
    /// Start a task in this group with this argument (fork).
    Spawn(usize, u64),
    /// Wait for this task (a child of the caller), or any child, to end.
    Wait(Option<usize>),
    /// Change the caller's own attributes to the slot's `attrs`.
    SetAttrs,
    /// Read the machine's CPU time so far into the slot's `cpu_times`.
    CpuTimes,
}

/// The part of a task's shared state that every context call touches: the request and its
/// completion. Kept apart from [`Slot`] in one small array ([`Shared::calls`], 32 bytes a task),
/// which stays in the processor's cache while the slots of thousands of tasks do not: a call
/// then costs no cache miss for the hand-over itself.
#[derive(Default)]
pub struct Call {
    /// The request the body is waiting on, until the machine takes it.
    pub request: Cell<Option<Op>>,
    /// Set by the machine when the request completed.
    pub done: Cell<bool>,
    /// Set by the body when it released a lock ([`Slot::unlocks`] has entries), so that the
    /// machine looks at the slot only then.
    pub unlocked: Cell<bool>,
}

/// What a body and the machine share about one task, apart from its [`Call`].
#[derive(Default)]
pub struct Slot {
    /// Bytes of the pending send.
    pub outbuf: Vec<u8>,
    /// Bytes delivered by the last recv.
    pub inbuf: Vec<u8>,
    /// The channels of the pending readiness wait.
    pub pollset: Vec<usize>,
    /// The positions in `pollset` of the channels the last readiness wait found readable.
    pub ready: Vec<usize>,
    /// Samples recorded by the body, by metric.
    pub samples: Vec<(Cow<'static, str>, Vec<f64>)>,
    /// Locks released since the machine last looked.
    pub unlocks: Vec<usize>,
    /// The task the last spawn started, or why it could not.
    pub spawned: Option<Result<TaskRef, WorkloadError>>,
    /// The child the last wait reaped, or why it could not.
    pub reaped: Option<Result<ChildExit, WorkloadError>>,
    /// The argument this task was spawned with.
    pub arg: u64,
    /// The body's pass rows, when the run keeps them ([`Shared::log_passes`]).
    pub passes: schedlab_workload::passes::PassLog,
    /// The knobs of the pending attribute change, and whether it allows every CPU again.
    pub attrs: Option<(schedlab_workload::knobs::Knobs, bool)>,
    /// The pending memory access ([`Op::MemAccess`]).
    pub mem_access: Option<schedlab_workload::MemAccess>,
    /// Why the machine refused the last memory access (its profile has no figure for it).
    pub mem_refused: Option<String>,
    /// The machine's CPU time, as the last [`Op::CpuTimes`] read it.
    pub cpu_times: Option<CpuTimes>,
    /// The last wait (barrier, semaphore, condition) was ended by the plan's wait end
    /// ([`schedlab_workload::SyncPlan::wait_end`]), not satisfied: it fails with
    /// [`WorkloadError::Stopped`].
    pub cut: bool,
}

/// What ends a run from outside: the stop flag (Ctrl-C) and the wall-clock budget. The
/// machine's event loop looks at them, but a body that runs without handing control back (a
/// loop whose steps make no context call, or only calls that take no simulated time) never
/// lets it: so the body's own stop checks ([`Context::stop_requested`], at every pass of a
/// workload file's loops) and the machine's step loop look at them too, every
/// [`WATCH_EVERY`] times.
#[derive(Clone, Copy, Default)]
pub struct Watch<'w> {
    /// Set from outside to stop the run.
    pub stop: Option<&'w AtomicBool>,
    /// When the run started, and its wall-clock budget.
    pub budget: Option<(Instant, Duration)>,
}

/// Why a [`Watch`] ended the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    /// The stop flag was set.
    Interrupted,
    /// The wall-clock budget ran out. `frozen` is whether the simulated clock had stood still
    /// since the previous look (the body that noticed was looping in no simulated time).
    Timeout {
        /// The clock had not moved since the previous look.
        frozen: bool,
    },
}

/// How many stop checks of the bodies (or turns of the machine's step loop) pass between two
/// looks at the [`Watch`]: a look reads the clock (tens of ns), a check adds one to a counter.
pub const WATCH_EVERY: u32 = 1 << 12;

/// State shared by all bodies of a run and the machine.
pub struct Shared<'w> {
    /// Simulated time now, ns since the epoch.
    pub now: Cell<u64>,
    /// Set when the run should stop early.
    pub stop: Cell<bool>,
    /// The CPU of the task whose body the machine is polling (bodies are polled one at a
    /// time, each only while it runs on a CPU), for [`Context::current_cpu`].
    pub cpu: Cell<usize>,
    /// One slot per task.
    pub slots: Vec<RefCell<Slot>>,
    /// One call per task (the hot part of its slot).
    pub calls: Vec<Call>,
    /// What may end the run from outside.
    watch: Watch<'w>,
    /// Stop checks of the bodies so far (a look at the watch every [`WATCH_EVERY`]).
    checks: Cell<u32>,
    /// The simulated time at the previous look at the watch.
    looked_at: Cell<Option<u64>>,
    /// Why the watch ended the run, once it has.
    halt: Cell<Option<Halt>>,
    /// Whether bodies keep per-pass rows ([`Context::logs_passes`], `--rt-app-logs`).
    pub log_passes: bool,
    /// The plan's shared words ([`Context::store_word`]): plain memory, which the bodies,
    /// polled one at a time, read and write at no simulated cost.
    pub words: Vec<Cell<u64>>,
}

impl Shared<'static> {
    /// Shared state for `tasks` tasks, with nothing to watch.
    pub fn new(tasks: usize) -> Shared<'static> {
        Shared::watched(tasks, Watch::default())
    }
}

impl<'w> Shared<'w> {
    /// Shared state for `tasks` tasks, ended from outside by `watch`.
    pub fn watched(tasks: usize, watch: Watch<'w>) -> Shared<'w> {
        Shared {
            now: Cell::new(0),
            stop: Cell::new(false),
            cpu: Cell::new(0),
            slots: (0..tasks).map(|_| RefCell::new(Slot::default())).collect(),
            calls: (0..tasks).map(|_| Call::default()).collect(),
            watch,
            checks: Cell::new(0),
            looked_at: Cell::new(None),
            halt: Cell::new(None),
            log_passes: false,
            words: Vec::new(),
        }
    }

    /// Look at the watch now: if the stop flag is set or the budget spent, remember why, set
    /// [`Shared::stop`] and return it. `frozen`: the caller knows the simulated clock has not
    /// moved since its previous look (else it is compared with this one's).
    #[cold]
    #[inline(never)]
    pub fn look(&self, frozen: bool) -> Option<Halt> {
        if let Some(h) = self.halt.get() {
            return Some(h);
        }
        let now = self.now.get();
        let frozen = self.looked_at.replace(Some(now)) == Some(now) || frozen;
        let halt = if self.watch.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            Halt::Interrupted
        } else if (self.watch.budget).is_some_and(|(start, budget)| start.elapsed() > budget) {
            Halt::Timeout { frozen }
        } else {
            return None;
        };
        self.halt.set(Some(halt));
        self.stop.set(true);
        Some(halt)
    }

    /// Why the watch ended the run, if it did.
    pub fn halt(&self) -> Option<Halt> {
        self.halt.get()
    }

    /// The wall-clock budget being watched, if any.
    pub fn budget(&self) -> Option<Duration> {
        self.watch.budget.map(|(_, b)| b)
    }
}

/// The context one task's body runs against on the simulator.
pub struct SimContext<'s> {
    shared: &'s Shared<'s>,
    /// The task's call, found once: every context call hands its request over and takes the
    /// completion through it, and an index into [`Shared::calls`] there is a bounds check each.
    call: &'s Call,
    /// The task's slot, found once for the same reason.
    slot: &'s RefCell<Slot>,
}

impl<'s> SimContext<'s> {
    /// The context of task `task`.
    ///
    /// # Panics
    /// If `shared` has no slot for `task`.
    pub fn new(shared: &'s Shared<'s>, task: usize) -> Self {
        SimContext {
            shared,
            call: &shared.calls[task],
            slot: &shared.slots[task],
        }
    }

    fn slot(&self) -> std::cell::RefMut<'_, Slot> {
        self.slot.borrow_mut()
    }

    fn call(&self) -> &Call {
        self.call
    }

    /// Shared word `id`, or the error naming it and how many the plan has.
    fn word(&self, id: WordId) -> Result<&Cell<u64>, WorkloadError> {
        let words = &self.shared.words;
        words.get(id.0).ok_or_else(|| {
            WorkloadError::Backend(format!(
                "shared word {} is not in the workload's plan, which has {}",
                id.0,
                words.len()
            ))
        })
    }

    /// How the wait just completed ended: satisfied, or cut by the plan's wait end.
    fn waited(&self) -> Result<(), WorkloadError> {
        if std::mem::take(&mut self.slot().cut) {
            Err(WorkloadError::Stopped)
        } else {
            Ok(())
        }
    }

    fn issue(&self, op: Op) -> Issue<'_> {
        Issue {
            ctx: self,
            op: Some(op),
        }
    }
}

/// The future of one request: hands the request over on the first poll, then waits for the
/// machine's "done".
struct Issue<'c> {
    ctx: &'c SimContext<'c>,
    op: Option<Op>,
}

impl Future for Issue<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut PollCx<'_>) -> Poll<()> {
        if let Some(op) = self.op.take() {
            self.ctx.call().request.set(Some(op));
            return Poll::Pending;
        }
        if self.ctx.call().done.replace(false) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// The future of a receive: the request's, then the copy of the bytes the machine put in the
/// slot's `inbuf` into the caller's buffer. Written out rather than an `async fn`, whose state
/// machine around the request's future cost more than the rest of the call.
struct RecvInto<'c, 'b> {
    issue: Issue<'c>,
    buf: &'b mut [u8],
}

impl Future for RecvInto<'_, '_> {
    type Output = Result<(), WorkloadError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut PollCx<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        ready!(Pin::new(&mut this.issue).poll(cx));
        this.buf.copy_from_slice(&this.issue.ctx.slot().inbuf);
        Poll::Ready(Ok(()))
    }
}

/// Add `value` to the samples of `metric` in `samples`, which gains an entry for it if it had
/// none.
#[inline(never)]
fn record_by_name(
    samples: &mut Vec<(Cow<'static, str>, Vec<f64>)>,
    metric: &'static str,
    value: f64,
) {
    match samples.iter_mut().find(|(m, _)| *m == metric) {
        Some((_, v)) => v.push(value),
        None => samples.push((Cow::Borrowed(metric), vec![value])),
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Context for SimContext<'_> {
    // The calls with nothing to do after the machine's answer return the request's future
    // itself: an `async fn` around it was one more state machine to step through at each poll.
    fn compute(&self, cpu: Duration) -> impl Future<Output = ()> {
        self.issue(Op::Compute(ns(cpu)))
    }

    async fn cpu_times(&self) -> Option<CpuTimes> {
        self.issue(Op::CpuTimes).await;
        self.slot().cpu_times.take()
    }

    async fn set_attrs(
        &self,
        knobs: &schedlab_workload::knobs::Knobs,
        all_cpus: bool,
    ) -> Result<(), WorkloadError> {
        // No simulated policy has group scheduling (the backend warns once): a move to
        // another taskgroup changes nothing, and costs no requeue.
        let knobs = schedlab_workload::knobs::Knobs {
            taskgroup: None,
            ..knobs.clone()
        };
        if knobs.is_default() && !all_cpus {
            return Ok(());
        }
        self.slot().attrs = Some((knobs, all_cpus));
        self.issue(Op::SetAttrs).await;
        Ok(())
    }

    async fn send(&self, channel: ChannelId, data: &[u8]) -> Result<(), WorkloadError> {
        {
            let mut slot = self.slot();
            slot.outbuf.clear();
            slot.outbuf.extend_from_slice(data);
        }
        // Simulated channels do not fail: a full channel blocks the sender, an empty one the
        // reader, and a run whose tasks all wait ends as a deadlock the machine names.
        self.issue(Op::Send(channel.0)).await;
        Ok(())
    }

    fn recv(
        &self,
        channel: ChannelId,
        buf: &mut [u8],
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        RecvInto {
            issue: self.issue(Op::Recv(channel.0, buf.len())),
            buf,
        }
    }

    async fn recv_some(&self, channel: ChannelId, buf: &mut [u8]) -> Result<usize, WorkloadError> {
        self.issue(Op::RecvSome(channel.0, buf.len())).await;
        let slot = self.slot();
        buf[..slot.inbuf.len()].copy_from_slice(&slot.inbuf);
        Ok(slot.inbuf.len())
    }

    async fn wait_readable(
        &self,
        channels: &[ChannelId],
        deadline: Option<Duration>,
        ready: &mut Vec<usize>,
    ) -> Result<(), WorkloadError> {
        {
            let mut slot = self.slot();
            slot.pollset.clear();
            slot.pollset.extend(channels.iter().map(|c| c.0));
        }
        self.issue(Op::Poll(deadline.map(ns))).await;
        ready.clear();
        ready.extend_from_slice(&self.slot().ready);
        Ok(())
    }

    async fn sleep(&self, d: Duration) {
        let until = self.shared.now.get().saturating_add(ns(d));
        self.issue(Op::SleepUntil(until)).await
    }

    fn sleep_until(&self, t: Duration) -> impl Future<Output = ()> {
        self.issue(Op::SleepUntil(ns(t)))
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.shared.now.get())
    }

    async fn barrier(&self, id: BarrierId) -> Result<(), WorkloadError> {
        // Like channels, simulated synchronisation does not fail: a wait that can never end
        // ends the run as a deadlock the machine names — unless the plan's wait end ends it.
        self.issue(Op::Barrier(id.0)).await;
        self.waited()
    }

    async fn sem_post(&self, id: SemaphoreId) -> Result<(), WorkloadError> {
        self.issue(Op::SemPost(id.0)).await;
        Ok(())
    }

    fn store_word(&self, id: WordId, value: u64) -> Result<(), WorkloadError> {
        self.word(id)?.set(value);
        Ok(())
    }

    fn load_word(&self, id: WordId) -> Result<u64, WorkloadError> {
        Ok(self.word(id)?.get())
    }

    async fn sem_wait(&self, id: SemaphoreId) -> Result<(), WorkloadError> {
        self.issue(Op::SemWait(id.0)).await;
        self.waited()
    }

    async fn cond_wait(&self, cond: CondId, lock: LockId) -> Result<(), WorkloadError> {
        self.issue(Op::CondWait(cond.0, lock.0)).await;
        self.waited()
    }

    async fn cond_signal(&self, cond: CondId) -> Result<(), WorkloadError> {
        self.issue(Op::CondSignal(cond.0)).await;
        Ok(())
    }

    async fn cond_broadcast(&self, cond: CondId) -> Result<(), WorkloadError> {
        self.issue(Op::CondBroadcast(cond.0)).await;
        Ok(())
    }

    fn yield_now(&self) -> impl Future<Output = ()> {
        self.issue(Op::Yield)
    }

    fn current_cpu(&self) -> Option<usize> {
        Some(self.shared.cpu.get())
    }

    fn lock(&self, id: LockId) -> impl Future<Output = ()> {
        self.issue(Op::Lock(id.0))
    }

    fn unlock(&self, id: LockId) {
        self.slot().unlocks.push(id.0);
        self.call().unlocked.set(true);
    }

    async fn io(&self, kind: IoKind, bytes: usize) -> Result<(), WorkloadError> {
        self.issue(Op::Io(kind, bytes)).await;
        Ok(())
    }

    async fn read_file(
        &self,
        _path: &str,
        len: usize,
        _buf: &mut Vec<u8>,
    ) -> Result<FileRead, WorkloadError> {
        // The simulated machine has no files: an open, read and close cost what a read of
        // `len` bytes costs (the cost profile's I/O latency and copy), and the body supplies
        // the bytes.
        self.issue(Op::Io(IoKind::Read, len)).await;
        Ok(FileRead::Modelled)
    }

    fn touch_memory(&self, bytes: usize) -> impl Future<Output = ()> {
        self.issue(Op::Touch(0, bytes))
    }

    fn touch_memory_at(&self, offset: usize, bytes: usize) -> impl Future<Output = ()> {
        self.issue(Op::Touch(offset, bytes))
    }

    fn free_memory(&self) -> impl Future<Output = ()> {
        self.issue(Op::FreeMemory)
    }

    async fn access_memory(
        &self,
        access: &schedlab_workload::MemAccess,
    ) -> Result<(), WorkloadError> {
        self.slot().mem_access = Some(access.clone());
        self.issue(Op::MemAccess).await;
        match self.slot().mem_refused.take() {
            Some(why) => Err(WorkloadError::Backend(why)),
            None => Ok(()),
        }
    }

    fn record(&self, metric: &'static str, value: f64) {
        let mut slot = self.slot();
        // A body records one metric many times in a row (a sample per message): the last one
        // recorded, known by its address, is found before the names are compared.
        if let Some((Cow::Borrowed(m), v)) = slot.samples.last_mut() {
            if std::ptr::eq(*m, metric) {
                v.push(value);
                return;
            }
        }
        record_by_name(&mut slot.samples, metric, value);
    }

    fn logs_passes(&self) -> bool {
        self.shared.log_passes
    }

    fn log_pass(&self, row: schedlab_workload::passes::PassRecord) {
        self.slot().passes.push(row);
    }

    fn log_fork(&self, at: Option<Duration>) {
        self.slot().passes.start = schedlab_workload::passes::forked_at(at);
    }

    fn stop_requested(&self) -> bool {
        if self.shared.stop.get() {
            return true;
        }
        // Every so many checks, look outside: a body that loops without handing control to
        // the machine (steps that take no simulated time) is only ended from here.
        let n = self.shared.checks.get().wrapping_add(1);
        self.shared.checks.set(n);
        n.is_multiple_of(WATCH_EVERY) && self.shared.look(false).is_some()
    }

    async fn spawn(&self, group: usize, arg: u64) -> Result<TaskRef, WorkloadError> {
        self.issue(Op::Spawn(group, arg)).await;
        self.slot().spawned.take().unwrap_or_else(|| {
            Err(WorkloadError::Backend(
                "the machine did not answer a spawn".into(),
            ))
        })
    }

    async fn wait(&self, child: Option<TaskRef>) -> Result<ChildExit, WorkloadError> {
        self.issue(Op::Wait(child.map(|c| c.id))).await;
        self.slot().reaped.take().unwrap_or_else(|| {
            Err(WorkloadError::Backend(
                "the machine did not answer a wait".into(),
            ))
        })
    }

    fn spawn_arg(&self) -> u64 {
        self.slot().arg
    }
}
