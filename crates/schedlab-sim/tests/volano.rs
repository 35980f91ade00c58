//! The mechanisms the `volano` preset's counters rest on, through whole simulated runs: a reader
//! that is not preempted into finds several messages waiting and costs one wakeup for them; a
//! monitor in front of a queue (`monitors=on`) that costs a second wakeup only when its taker
//! preempted the putter inside it; the preset's turns, confirms and counts on every policy; and
//! its wakeup count's bound and what the yields do to it.

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimResult, SimSetup};
use schedlab_workload::knobs::{parse_group_arg, Knobs};
use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};
use schedlab_workload::presets::{Outcome, Volano};
use schedlab_workload::record::{Better, MetricDef};
use schedlab_workload::{ChannelId, Context, LockId, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;
use std::time::Duration;

/// One repetition of `w` under `policy` on `cpus` simulated PIII-700s, with each group's knobs
/// (`""`: none).
fn piii(w: &impl Workload, policy: &str, cpus: usize, groups: &[&str]) -> SimResult {
    let spec: PolicySpec = policy.parse().unwrap();
    let knobs: Vec<Knobs> = groups
        .iter()
        .map(|g| match *g {
            "" => Knobs::default(),
            g => parse_group_arg(&format!("g:{g}")).unwrap().1,
        })
        .collect();
    let cost = CostModel::profile("piii-700").unwrap();
    run_repetition(
        w,
        SimSetup {
            wall_budget: Some(Duration::from_secs(60)),
            ..SimSetup::new(&spec, cpus, &cost, &knobs)
        },
    )
    .unwrap()
}

/// Two groups of one thread each, over one pipe, with `locks` locks.
fn one_thread_each(groups: [&'static str; 2], locks: usize) -> Plan {
    one_thread_each_over(groups, locks, Transport::Pipe)
}

/// Two groups of one thread each, over one channel of `transport`, with `locks` locks.
fn one_thread_each_over(groups: [&'static str; 2], locks: usize, transport: Transport) -> Plan {
    Plan {
        groups: groups
            .into_iter()
            .map(|name| GroupPlan {
                name,
                tasks: 1,
                spawn: 0,
            })
            .collect(),
        channels: 1,
        duplex: false,
        locks,
        sync: SyncPlan::default(),
        mode: TaskMode::Threads,
        transport,
    }
}

/// A writer sends `MESSAGES` 16-byte messages, a little work apart, to a reader that reads
/// whatever has arrived (up to 8 KiB) until it has them all, over a channel of `transport`; the
/// reader first works for `reader_work`.
struct Batch {
    transport: Transport,
    reader_work: Duration,
}

/// [`Batch`] over a pipe.
const PIPE_BATCH: Batch = Batch {
    transport: Transport::Pipe,
    reader_work: Duration::ZERO,
};

const MESSAGES: usize = 3;

impl Workload for Batch {
    fn name(&self) -> &'static str {
        "batch"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        one_thread_each_over(["reader", "writer"], 0, self.transport)
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = vec![0u8; 8192];
        if task.group == 0 {
            if !self.reader_work.is_zero() {
                ctx.compute(self.reader_work).await;
            }
            let mut got = 0;
            while got < MESSAGES * 16 {
                got += ctx.recv_some(ChannelId(0), &mut buf).await?;
                ctx.record("reads", 1.0);
            }
        } else {
            for _ in 0..MESSAGES {
                ctx.compute(Duration::from_micros(20)).await;
                ctx.send(ChannelId(0), &buf[..16]).await?;
            }
        }
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![MetricDef {
            name: "reads".into(),
            unit: "".into(),
            better: Better::Lower,
            description: "reads".into(),
        }]
    }
    fn metrics(&self, o: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::from([(
            "reads".into(),
            o.sum(&self.plan(), Some(0), "reads"),
        )]))
    }
}

#[test]
fn a_reader_not_preempted_into_finds_every_message_waiting() {
    let run = |policy: &str, reader: &str| {
        let r = piii(&PIPE_BATCH, policy, 1, &[reader, ""]);
        let reads = PIPE_BATCH.metrics(&r.outcome).unwrap()["reads"];
        (reads, r.counters["reader"].wakeups.unwrap())
    };
    // Threshold 40: the woken reader waits for the writer's CPU; the later writes find it
    // runnable and wake nobody, and its one read takes all three messages. They count nothing
    // either, as 2.5.25 counted nothing for them: its wait-queue wakeup calls try_to_wake_up()
    // only for a task that sleeps (`state & mode`), so seed 000's "calls to wake_up" are these.
    let (batched, woken_once) = run("o1:threshold=40", "");
    assert_eq!(batched, 1.0);
    assert_eq!(woken_once, 1);
    // Favoured and preemptive: the reader runs at each write, takes one message, and sleeps
    // again, so each write wakes it.
    let (single, woken_each) = run("o1:threshold=0", "nice=-19");
    assert_eq!(single, MESSAGES as f64);
    assert_eq!(woken_each, woken_once + (MESSAGES as u64 - 1));
}

#[test]
fn a_segment_calls_try_to_wake_up_only_for_a_reader_asleep_in_its_receive() {
    // (reads, the reader's wakeups) over loopback TCP on `cpus` PIII-700s; seed 000 counted
    // calls of try_to_wake_up(), and in 2.5.25 a segment reaches it only through a sleeping
    // reader: tcp_prequeue() calls wake_up_interruptible() for the first segment it queues for a
    // reader in tcp_recvmsg(), not for later ones, and __wake_up_common() calls
    // try_to_wake_up() only for a task whose state matches (`state & mode`), which the first
    // wakeup set to TASK_RUNNING. So the wakeups are the calls.
    let run = |cpus: usize, reader_work: Duration, groups: &[&str]| {
        let tcp = Batch {
            transport: Transport::Tcp,
            reader_work,
        };
        let r = piii(&tcp, "o1:threshold=40", cpus, groups);
        let reads = tcp.metrics(&r.outcome).unwrap()["reads"];
        (reads, r.counters["reader"].wakeups.unwrap())
    };
    // Woken by the first segment and not run yet (one CPU, threshold 40): the second and third
    // find it runnable and call nothing; its one read takes all three.
    assert_eq!(run(1, Duration::ZERO, &["", ""]), (1.0, 1));
    // Busy on its own CPU while all three arrive: not on the socket's wait queue, so no call
    // at all, and its one read finds them waiting.
    let busy = Duration::from_micros(500);
    assert_eq!(run(2, busy, &["cpus=0", "cpus=1"]), (1.0, 0));
}

#[test]
fn a_segment_acked_from_the_softirq_wakes_a_sleeping_ksoftirqd_once() {
    // (reader's wakeups, kernel threads' wakeups) over loopback TCP on one PIII-700.
    let run = |policy: &str, reader: &str| {
        let tcp = Batch {
            transport: Transport::Tcp,
            reader_work: Duration::ZERO,
        };
        let r = piii(&tcp, policy, 1, &[reader, ""]);
        let kernel = r.counters.get("kernel").and_then(|c| c.wakeups);
        (r.counters["reader"].wakeups.unwrap(), kernel.unwrap_or(0))
    };
    // Threshold 40: the first segment finds the reader asleep in its receive (2.5.25's
    // prequeue: the reader ACKs it itself) and wakes it; the second finds it runnable, is
    // ACKed from the sender's softirq, raises NET_RX again and wakes ksoftirqd; the third finds
    // ksoftirqd (nice 19) still waiting for the CPU and wakes nobody.
    assert_eq!(run("o1:threshold=40,softirq=2.5.25", ""), (1, 1));
    // Without the variant there is no ksoftirqd to wake.
    assert_eq!(run("o1:threshold=40", ""), (1, 0));
    // Favoured and preemptive: the reader sleeps in its receive at every segment, so none is
    // ACKed from the softirq.
    assert_eq!(run("o1:threshold=0,softirq=2.5.25", "nice=-19"), (3, 0));
}

/// A Java monitor in front of a notify queue, as the `volano` preset's `monitors=on` runs it: a
/// taker waits in a read of the queue (`wait()`), then takes the monitor again before it
/// empties the queue; a putter appends under the monitor (`putElement`: append and `notify()`).
/// Without the monitor (`monitor: false`) the same two tasks only write and read.
struct Monitor {
    monitor: bool,
}

impl Workload for Monitor {
    fn name(&self) -> &'static str {
        "monitor"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        one_thread_each(["taker", "putter"], usize::from(self.monitor))
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = [0u8; 16];
        if task.group == 0 {
            ctx.recv_some(ChannelId(0), &mut buf).await?;
            if self.monitor {
                ctx.lock(LockId(0)).await;
                ctx.unlock(LockId(0));
            }
        } else {
            // The taker is asleep in its read before the append comes.
            ctx.compute(Duration::from_micros(20)).await;
            if self.monitor {
                ctx.lock(LockId(0)).await;
            }
            ctx.send(ChannelId(0), &buf).await?;
            if self.monitor {
                ctx.unlock(LockId(0));
            }
        }
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

#[test]
fn a_contended_monitor_wakes_its_waiter_at_release_and_an_uncontended_one_nobody() {
    // (taker's wakeups, putter's wakeups) on one PIII-700.
    let run = |monitor: bool, policy: &str, taker: &str| {
        let r = piii(&Monitor { monitor }, policy, 1, &[taker, ""]);
        let woken = |g: &str| r.counters[g].wakeups.unwrap();
        (woken("taker"), woken("putter"))
    };
    // Favoured and preemptive: the append wakes the taker, which preempts the putter inside
    // putElement, finds the monitor held and sleeps again; the putter's release wakes it a
    // second time (LinuxThreads: pthread_cond_wait's pthread_mutex_lock after the restart).
    assert_eq!(run(false, "o1:threshold=0", "nice=-19"), (1, 0));
    assert_eq!(run(true, "o1:threshold=0", "nice=-19"), (2, 0));
    // Not preempted into (threshold 40, equal nice levels): the putter leaves the monitor
    // before the woken taker runs, so the release wakes nobody and the taker takes it free.
    assert_eq!(run(false, "o1:threshold=40", ""), (1, 0));
    assert_eq!(run(true, "o1:threshold=40", ""), (1, 0));
}

fn volano(rooms: usize, users: usize, messages: usize) -> Volano {
    Volano {
        rooms,
        users,
        messages,
        ..Volano::default()
    }
}

#[test]
fn volano_takes_turns_confirms_and_counts_on_every_policy() {
    for policy in [
        "o1",
        "o1:yield=2.5.25",
        "o1:threshold=40,yield=2.5.25",
        "cfs",
        "linux24",
        "eevdf",
    ] {
        for cpus in [1, 2] {
            for (confirm, yields, monitors) in [
                (true, true, false),
                (false, true, false),
                (true, false, false),
                (true, true, true),
            ] {
                let w = Volano {
                    confirm,
                    yields,
                    monitors,
                    ..volano(1, 3, 2)
                };
                let r = piii(&w, policy, cpus, &["", ""]);
                // metrics() fails unless every indication arrived, checked and in order, every
                // confirm came back to its sender, and every server send thread wrote its share.
                let m = w.metrics(&r.outcome).unwrap_or_else(|e| {
                    panic!("{policy} {cpus} {confirm} {yields} {monitors}: {e}")
                });
                assert_eq!(m["messages"], 6.0 + 12.0, "{policy}: {m:?}");
                assert!(m["ss_packets_per_read"] >= 1.0 && m["cr_packets_per_read"] >= 1.0);
                assert_eq!(w.plan().total_tasks(), 12);
            }
        }
    }
}

#[test]
fn volano_wakeups_stay_under_one_per_packet_and_fall_with_the_yields() {
    let (rooms, users, messages) = (2, 5, 20);
    let room_messages = (rooms * users * messages) as u64;
    let tasks = (4 * rooms * users) as u64;
    // Per room message at most one wakeup for each of the 2 + 2 × users packets it moves (one
    // to C_S, one to S_R, a packet to each S_S and each C_R), and each task may be woken once
    // more by the start. No floor holds: a thread that yielded is runnable, not asleep, when
    // its next packet comes (o1's 2.6 yield on one CPU: under 2 per room message).
    let ceiling = (2 + 2 * users as u64) * room_messages + tasks;
    let mut woken = BTreeMap::new();
    for (policy, yields) in [
        ("o1", true),
        ("o1:yield=2.5.25", true),
        ("o1:yield=2.5.25", false),
        ("o1:threshold=40,yield=2.5.25", false),
    ] {
        let w = Volano {
            yields,
            ..volano(rooms, users, messages)
        };
        let r = piii(&w, policy, 1, &["", ""]);
        w.metrics(&r.outcome).unwrap();
        let wakeups = r.counters["total"].wakeups.unwrap();
        assert!(
            0 < wakeups && wakeups <= ceiling,
            "{policy} yields {yields}: {wakeups} wakeups, above {ceiling}"
        );
        woken.insert((policy, yields), wakeups);
    }
    // The yields let a reader's peers run before it reads again, so that it finds their
    // packets without having slept.
    assert!(
        woken[&("o1:yield=2.5.25", true)] < woken[&("o1:yield=2.5.25", false)],
        "{woken:?}"
    );
}
