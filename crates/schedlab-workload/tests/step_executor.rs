//! The abstraction is ready for a simulator: a task body is driven step by step by a tiny
//! hand-written executor with a fake clock, suspending at every context call.

use schedlab_workload::presets::{Messaging, PingPong, Yield};
use schedlab_workload::{ChannelId, Context, IoKind, LockId, TaskRef, Workload, WorkloadError};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context as TaskCx, Poll, Waker};
use std::time::Duration;

/// Returns `Pending` once, then `Ready`: each context call is one suspension point.
struct SuspendOnce(bool);

impl Future for SuspendOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut TaskCx<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Send(usize, Vec<u8>),
    Recv(usize),
    Yield,
    Compute(Duration),
    Sleep(Duration),
}

/// A context with a fake clock: each call logs itself and advances time by a fixed cost.
#[derive(Default)]
struct FakeCtx {
    clock: Cell<Duration>,
    log: RefCell<Vec<Call>>,
    inbox: RefCell<VecDeque<Vec<u8>>>,
    samples: RefCell<Vec<(&'static str, f64)>>,
    /// Calls of `now()`: on a real kernel each is a clock read the body pays for.
    clock_reads: Cell<usize>,
}

impl FakeCtx {
    fn tick(&self, d: Duration) {
        self.clock.set(self.clock.get() + d);
    }
}

impl Context for FakeCtx {
    async fn compute(&self, cpu: Duration) {
        self.log.borrow_mut().push(Call::Compute(cpu));
        SuspendOnce(false).await;
        self.tick(cpu);
    }
    async fn send(&self, ch: ChannelId, data: &[u8]) -> Result<(), WorkloadError> {
        self.log.borrow_mut().push(Call::Send(ch.0, data.to_vec()));
        SuspendOnce(false).await;
        self.tick(Duration::from_micros(1));
        Ok(())
    }
    async fn read_file(
        &self,
        _path: &str,
        _len: usize,
        _buf: &mut Vec<u8>,
    ) -> Result<schedlab_workload::FileRead, WorkloadError> {
        Ok(schedlab_workload::FileRead::Modelled)
    }
    async fn recv(&self, ch: ChannelId, buf: &mut [u8]) -> Result<(), WorkloadError> {
        self.log.borrow_mut().push(Call::Recv(ch.0));
        SuspendOnce(false).await;
        let msg = self
            .inbox
            .borrow_mut()
            .pop_front()
            .ok_or(WorkloadError::Channel {
                channel: ch,
                reason: "empty".into(),
            })?;
        buf.copy_from_slice(&msg);
        self.tick(Duration::from_micros(2));
        Ok(())
    }
    async fn sleep(&self, d: Duration) {
        self.log.borrow_mut().push(Call::Sleep(d));
        SuspendOnce(false).await;
        self.tick(d);
    }
    async fn sleep_until(&self, t: Duration) {
        let now = self.clock.get();
        self.sleep(t.saturating_sub(now)).await;
    }
    fn now(&self) -> Duration {
        self.clock_reads.set(self.clock_reads.get() + 1);
        self.clock.get()
    }
    async fn barrier(&self, _id: schedlab_workload::BarrierId) -> Result<(), WorkloadError> {
        Err(WorkloadError::Backend(
            "barriers are not supported by this test context".into(),
        ))
    }

    async fn sem_post(&self, _id: schedlab_workload::SemaphoreId) -> Result<(), WorkloadError> {
        Err(WorkloadError::Backend(
            "semaphores are not supported by this test context".into(),
        ))
    }

    async fn sem_wait(&self, _id: schedlab_workload::SemaphoreId) -> Result<(), WorkloadError> {
        Err(WorkloadError::Backend(
            "semaphores are not supported by this test context".into(),
        ))
    }

    async fn cond_wait(
        &self,
        _cond: schedlab_workload::CondId,
        _lock: LockId,
    ) -> Result<(), WorkloadError> {
        Err(WorkloadError::Backend(
            "condition variables are not supported by this test context".into(),
        ))
    }

    async fn cond_signal(&self, _cond: schedlab_workload::CondId) -> Result<(), WorkloadError> {
        Err(WorkloadError::Backend(
            "condition variables are not supported by this test context".into(),
        ))
    }

    async fn cond_broadcast(&self, _cond: schedlab_workload::CondId) -> Result<(), WorkloadError> {
        Err(WorkloadError::Backend(
            "condition variables are not supported by this test context".into(),
        ))
    }

    async fn yield_now(&self) {
        self.log.borrow_mut().push(Call::Yield);
        SuspendOnce(false).await;
        self.tick(Duration::from_micros(1));
    }
    async fn lock(&self, _: LockId) {
        SuspendOnce(false).await;
    }
    fn unlock(&self, _: LockId) {}
    async fn io(&self, _: IoKind, _: usize) -> Result<(), WorkloadError> {
        SuspendOnce(false).await;
        Ok(())
    }
    async fn touch_memory(&self, _: usize) {
        SuspendOnce(false).await;
    }
    async fn touch_memory_at(&self, _: usize, _: usize) {
        SuspendOnce(false).await;
    }
    async fn free_memory(&self) {
        SuspendOnce(false).await;
    }
    fn record(&self, metric: &'static str, value: f64) {
        self.samples.borrow_mut().push((metric, value));
    }
    // The presets these tests drive start no tasks: the fake refuses, naming the call.
    async fn spawn(&self, group: usize, _arg: u64) -> Result<TaskRef, WorkloadError> {
        Err(WorkloadError::Backend(format!(
            "the fake context starts no tasks (spawn into group {group})"
        )))
    }
    async fn wait(
        &self,
        child: Option<TaskRef>,
    ) -> Result<schedlab_workload::ChildExit, WorkloadError> {
        Err(WorkloadError::Backend(format!(
            "the fake context has no child {child:?}"
        )))
    }
    fn spawn_arg(&self) -> u64 {
        0
    }
}

/// Poll `fut` until it finishes; returns its output and the number of suspensions.
fn drive<F: Future>(fut: F) -> (F::Output, usize) {
    let mut fut = pin!(fut);
    let mut cx = TaskCx::from_waker(Waker::noop());
    let mut steps = 0;
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return (out, steps),
            Poll::Pending => steps += 1,
        }
    }
}

#[test]
fn messaging_sender_suspends_at_every_send() {
    let w = Messaging {
        groups: 2,
        fds: 2,
        loops: 3,
        ..Messaging::default()
    };
    let ctx = FakeCtx::default();
    // Sender 3 is the second sender of hackbench group 1: it writes to channels 2 and 3.
    let (res, steps) = drive(w.body(
        TaskRef {
            id: 3,
            group: 0,
            index: 3,
        },
        &ctx,
    ));
    res.unwrap();
    let log = ctx.log.borrow();
    assert_eq!(steps, 6, "one suspension per send");
    let chans: Vec<usize> = log
        .iter()
        .map(|c| if let Call::Send(ch, _) = c { *ch } else { 99 })
        .collect();
    assert_eq!(chans, vec![2, 3, 2, 3, 2, 3]);
    let Call::Send(_, msg) = &log[4] else {
        unreachable!()
    };
    assert_eq!(msg.len(), 100);
    assert_eq!(
        &msg[..8],
        &[3, 0, 0, 0, 2, 0, 0, 0],
        "sender id 3, sequence 2"
    );
    assert_eq!(ctx.clock.get(), Duration::from_micros(6));
}

#[test]
fn messaging_receiver_detects_a_lost_message() {
    let w = Messaging {
        groups: 1,
        fds: 1,
        loops: 2,
        datasize: 8,
        ..Messaging::default()
    };
    let ctx = FakeCtx::default();
    ctx.inbox
        .borrow_mut()
        .push_back([0, 0, 0, 0, 0, 0, 0, 0].to_vec());
    ctx.inbox
        .borrow_mut()
        .push_back([0, 0, 0, 0, 2, 0, 0, 0].to_vec()); // sequence 1 is missing
    let (res, steps) = drive(w.body(
        TaskRef {
            id: 1,
            group: 1,
            index: 0,
        },
        &ctx,
    ));
    assert_eq!(steps, 2);
    let err = res.unwrap_err();
    assert!(
        matches!(&err, WorkloadError::Integrity(m) if m.contains("expected message 1")),
        "{err}"
    );
}

#[test]
fn pingpong_times_round_trips_on_the_fake_clock() {
    let w = PingPong {
        loops: 4,
        ..PingPong::default()
    };
    let ctx = FakeCtx::default();
    for i in 0u32..4 {
        ctx.inbox.borrow_mut().push_back(i.to_le_bytes().to_vec());
    }
    let (res, steps) = drive(w.body(
        TaskRef {
            id: 0,
            group: 0,
            index: 0,
        },
        &ctx,
    ));
    res.unwrap();
    assert_eq!(steps, 8, "a send and a recv per round trip");
    let rtts: Vec<f64> = ctx
        .samples
        .borrow()
        .iter()
        .filter(|(m, _)| *m == "rtt_ns")
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(
        rtts,
        vec![3000.0; 4],
        "1 us send + 2 us recv on the fake clock"
    );
    // Its C peer reads no clock at all: ping reads it once a round trip (the end of one is
    // the start of the next) and once before the first, so the round trips tile the run.
    assert_eq!(
        ctx.clock_reads.get(),
        5,
        "one clock read per round trip, plus one"
    );
    assert_eq!(rtts.iter().sum::<f64>(), ctx.clock.get().as_nanos() as f64);
}

#[test]
fn yield_stops_at_its_duration_on_the_fake_clock() {
    let w = Yield {
        threads: 1,
        duration: Duration::from_micros(100),
    };
    let ctx = FakeCtx::default();
    let (res, steps) = drive(w.body(
        TaskRef {
            id: 0,
            group: 0,
            index: 0,
        },
        &ctx,
    ));
    res.unwrap();
    // 1 us per yield, clock checked every 16 yields: 112 yields is the first multiple of 16 past 100.
    assert_eq!(steps, 112);
    assert_eq!(ctx.samples.borrow().as_slice(), &[("yields", 112.0)]);
}
