//! `schbench` — Chris Mason's scheduler wakeup-latency benchmark (masoncl/schbench,
//! `schbench.c`), the benchmark EEVDF's and sched_ext's patches are argued with.
//!
//! What the original does, and this preset with it:
//!
//! - `-m` message threads each own `-t` worker threads (default: the machine's CPUs divided
//!   among the message threads, rounded up). A worker posts its message thread and waits; the
//!   message thread takes every worker that posted, reads the clock once (in pipe mode once
//!   per worker) and wakes each of them. The worker's **wakeup latency** is from that clock
//!   read to the moment it runs again.
//! - A request, after the wakeup: the clock is read (its start), the worker sleeps `-s` µs
//!   (100; "simulated networking, and a fresh timeslice"), then does `-n` operations of work
//!   under its CPU's lock (a per-CPU lock taken by spinning, `-L` turns it off): the lock of the
//!   CPU it runs on, retaken when the worker was moved while spinning — so a worker preempted
//!   while holding its CPU's lock makes the next worker on that CPU spin. **Request latency**
//!   is from the request's start to the end of its work.
//! - **RPS** is requests completed per second: their average over the run (all requests / the
//!   run time, as the original's "average rps") and the 20th/50th/90th percentiles of the
//!   per-second counts after the warm-up.
//! - `-R` (requests per second): each message thread posts its share of the rate to its workers
//!   in turn at the start of every second, then sleeps out the second; a worker takes every
//!   request queued for it and serves them one after another; its wakeup latency is counted
//!   only when it had to wait for the first. The queue is bounded as the original's
//!   `run_rps_thread` bounds it: a worker that has been posted more than 128 requests since it
//!   last took its queue gets none more; the message thread sleeps 100 µs instead and the
//!   request is dropped (the loop goes on to the next worker). The original drops them
//!   silently; here they are counted (`dropped`) and printed.
//! - `-A` (auto-RPS, `auto_scale_rps`): RPS mode whose rate steers the machine's CPU
//!   utilisation to a target percentage. The rate starts at `-R` (10 if not given); once a
//!   second the busy share of all CPUs over the last second is read (`read_busy`: 100 − idle /
//!   total of /proc/stat's `cpu` line; the simulator's own CPU accounting there), and the rate
//!   is multiplied by target / busy — at most × 3 and at least × 0.3, by only an eighth of the
//!   step within 20 % (10 % above) of the target and a quarter within 50 % (20 %). The target
//!   counts as hit the first time the step is within 5 %; the RPS percentiles count the
//!   seconds from then on (the original zeroes its RPS statistics then), and the table ends
//!   with the final goal instead of the average rps. The original's main thread steers the
//!   shared rate; here each message thread steers its own share from its own reading with the
//!   same rule, and the first one's readings are the record's (`cpu_busy`: their mean from the
//!   second the target was hit on). As in the original, `-A` leaves out the warm-up. One
//!   difference: the rate never goes below 1 request per second per message thread, where the
//!   original's can reach 0 on a machine busy with other work and then never grow again.
//! - `-p` (pipe mode): no sleep and no work; each worker and the message thread write `-p`
//!   bytes of memory per exchange (the original's memset of a page buffer) — a pipe-like
//!   ping-pong whose throughput is reported per worker.
//! - `-w` warm-up: samples of requests started, and wakeups stamped, before it are left out.
//! - `-M`/`-W` pinning (`auto`: message thread i on CPU i, the workers on the CPUs after).
//! - Percentiles p50/p90/p99/p99.9 of the wakeup and request latencies; the classic output
//!   prints them in the original's layout, each with its band's sample count as `calc_percentiles`
//!   counts it: the samples in the buckets above the previous percentile's (of p20, p50, p90,
//!   p99, p99.9, whether shown or not) up to its own. The counts are kept in the repetition's
//!   values (`wakeup_p50_samples`, …) for that table, not summarised as metrics.
//!
//! Where this preset deviates, and why:
//!
//! - **The work** is [`Context::compute`] of `operations × op-time` of CPU time, not a naive
//!   matrix multiplication over a `-F` cache footprint: one body runs on both backends, and
//!   the simulator has CPU time but no caches. `op-time` defaults to what one 256 KiB
//!   operation (the original's `-F 256`) took on the machine this preset was written on (the
//!   original's `-C` calibration mode: 4.04 ms for `-n 5` at its fastest); `bench/latency.sh`
//!   measures it on the host and passes it. So `-F` and `--split` are not offered, and a
//!   preempted worker does not lose a cache footprint.
//! - **Posts and wakeups**: the original's lock-free lists become 8-byte messages on pipes
//!   (a worker's index to its message thread; in RPS mode the requests to a worker), written
//!   before the sleeper is woken, and its futex becomes a semaphore per thread (a futex on the
//!   real kernel): the sleeper waits on its semaphore, not in the pipe's read, because a pipe
//!   write wakes its reader as a synchronous wakeup (WF_SYNC: the kernel may run the wakee on
//!   the waker's CPU, expecting the waker to sleep) and a futex wake does not. The wake time
//!   goes as the original's does, in memory the threads share (a shared word): between the
//!   message thread's clock reading and the worker's there is a store, the FUTEX_WAKE and the
//!   wakeup, as in the original — no pipe write on the waker's side (in RPS mode the request's
//!   pipe write comes before the clock reading, where the original's list append is) and no
//!   pipe read on the wakee's (the clock is read as its wait ends). A worker's post to its
//!   message thread costs a pipe write more than the original's list append, outside the
//!   measured span.
//! - **The per-CPU lock** on the simulator is the plan's spin lock, whose holder the simulated
//!   kernel does not preempt (a kernel spin lock's rule); the original's is a user-space lock
//!   whose holder can be preempted while the next worker spins. On the real kernel it is a
//!   user-space spin lock as in the original.
//! - **The request queue's bound** needs the message thread to know how many requests a worker
//!   took (the original's worker zeroes a shared counter): in RPS mode each worker writes the
//!   count it has taken so far to a pipe of its own after every take, which the message thread
//!   reads (without waiting) only when the bound looks exceeded — one more pipe write per take.
//! - Interval reports (`-i`), stats zeroing (`-z`) and the schedstat "sched delay" line are not
//!   printed; the record keeps every repetition. The original drops samples that round to
//!   0 µs and ignores `-w` when `-r` is under 30 s; this preset does neither. Latencies are
//!   measured in nanoseconds with HdrHistogram (3 significant digits), where the original
//!   counts whole microseconds in fio's histogram (8 bits of mantissa).

use super::def::{Example, WorkloadDef};
use super::params::{
    check_product, param_defs, parse_count, parse_param, parse_with, DefaultKind, GroupDefault,
    Param, ParamDef, ParamKind, Preset, MAX_TASKS,
};
use super::{metric, Outcome, Workload};
use crate::context::{ChannelId, Context, CpuTimes, LockId, SemaphoreId, WordId, WorkloadError};
use crate::cpuset::CpuSet;
use crate::error::ParamError;
use crate::knobs::Knobs;
use crate::plan::{GroupPlan, LockKind, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

const NAME: &str = "schbench";

/// A worker's post that says it has finished (its index is in the low bits).
const DONE_POST: u64 = 1 << 63;

/// A message to a worker in RPS mode that says no more requests come.
const NO_MORE: u64 = u64::MAX;

/// How many requests a worker in RPS mode takes off its pipe at once.
const RPS_BATCH: usize = 256;

/// How often a worker retakes a CPU lock after being moved to another CPU while it spun,
/// before it works under the lock it has (a bound; the original retries without one).
const MAX_LOCK_RETRIES: usize = 64;

/// The most requests per second asked for.
const MAX_RPS: usize = 10_000_000;

/// The largest pipe-mode transfer (the original's `PIPE_TRANSFER_BUFFER`).
const MAX_PIPE: usize = 1 << 20;

/// The longest run.
const MAX_RUNTIME: Duration = Duration::from_secs(3600);

/// RPS mode: the most requests posted to a worker since it last took its queue before more are
/// dropped (the original's `batch` in `run_rps_thread`; a request is dropped when more than
/// this many are pending).
const QUEUE_BOUND: u64 = 128;

/// How long a message thread sleeps when it drops a request at the queue bound (the
/// original's `usleep(100)`).
const DROP_SLEEP: Duration = Duration::from_micros(100);

/// Auto-RPS's starting rate when `-R` is not given (the original's `requests_per_sec = 10`).
const AUTO_START_RPS: usize = 10;

/// The percentiles of the latency tables, as the original prints them: (metric suffix,
/// percentile).
const LAT_PERCENTILES: [(&str, f64); 5] = [
    ("p20", 20.0),
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
];

/// The percentiles of the RPS table.
const RPS_PERCENTILES: [(&str, f64); 3] = [("p20", 20.0), ("p50", 50.0), ("p90", 90.0)];

/// Where `-M` or `-W` pins a group.
#[derive(Clone, Debug, PartialEq)]
pub enum Pin {
    /// The original's `auto`: message thread i on CPU i, the workers on the CPUs after them.
    Auto,
    /// These CPUs.
    Cpus(CpuSet),
}

impl std::fmt::Display for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pin::Auto => f.write_str("auto"),
            Pin::Cpus(c) => write!(f, "{c}"),
        }
    }
}

/// schbench's message and worker threads.
#[derive(Clone, Debug, PartialEq)]
pub struct Schbench {
    /// `-m`: message threads.
    pub message_threads: usize,
    /// `-t`: workers per message thread; `None`: the machine's CPUs divided among the message
    /// threads, rounded up.
    pub threads: Option<usize>,
    /// `-r`: how long the workers run.
    pub runtime: Duration,
    /// `-w`: the warm-up at the start of the run whose samples are left out.
    pub warmup: Duration,
    /// `-s`: the sleep that starts every request, in µs.
    pub sleep_us: u64,
    /// `-n`: operations of work per request.
    pub operations: usize,
    /// CPU time of one operation.
    pub op_time: Duration,
    /// Whether the work runs under the CPU's lock (`-L` turns it off).
    pub locking: bool,
    /// `-R`: requests per second, 0 for the post-and-wait mode (with `-A`: the starting rate).
    pub rps: usize,
    /// `-A`: the CPU utilisation (%) auto-RPS steers the rate to; 0: off.
    pub auto_rps: u8,
    /// `-p`: bytes written per exchange in pipe mode, 0 for requests.
    pub pipe: usize,
    /// `-M`: where the message threads run.
    pub message_cpus: Option<Pin>,
    /// `-W`: where the workers run.
    pub worker_cpus: Option<Pin>,
    /// CPUs of the machine it runs on (its per-CPU locks, the default worker count).
    pub cpus: usize,
}

impl Default for Schbench {
    fn default() -> Self {
        Schbench::with_cpus(1)
    }
}

impl Schbench {
    /// The defaults on a machine of `cpus` CPUs.
    pub fn with_cpus(cpus: usize) -> Schbench {
        Schbench {
            message_threads: 1,
            threads: None,
            runtime: Duration::from_secs(30),
            warmup: Duration::ZERO,
            sleep_us: 100,
            operations: 5,
            op_time: Duration::from_micros(808),
            locking: true,
            rps: 0,
            auto_rps: 0,
            pipe: 0,
            message_cpus: None,
            worker_cpus: None,
            cpus: cpus.max(1),
        }
    }

    /// Workers per message thread.
    pub fn workers(&self) -> usize {
        self.threads
            .unwrap_or_else(|| self.cpus.div_ceil(self.message_threads.max(1)))
    }

    /// Whether message threads post at a rate (`-R` or `-A`) instead of waiting for posts.
    pub fn rate_mode(&self) -> bool {
        self.rps > 0 || self.auto_rps > 0
    }

    /// The rate at the start of the run, all message threads together: `-R`, or auto-RPS's 10.
    pub fn start_rps(&self) -> usize {
        if self.rps == 0 && self.auto_rps > 0 {
            AUTO_START_RPS
        } else {
            self.rps
        }
    }

    /// The CPU time of one request's work.
    pub fn work(&self) -> Duration {
        self.op_time * self.operations as u32
    }

    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        let (m, t) = (self.message_threads, self.workers());
        if t == 0 {
            return Err(ParamError::value(
                NAME,
                "threads",
                0,
                format!("is not accepted; use 1..{MAX_TASKS}"),
            ));
        }
        check_product(
            NAME,
            &["message-threads", "threads"],
            "tasks",
            "message-threads × (threads + 1)",
            &[m, t + 1],
            MAX_TASKS as u128,
        )?;
        if self.runtime.is_zero() || self.runtime > MAX_RUNTIME {
            return Err(ParamError::params(
                NAME,
                &["runtime"],
                "must be between 1ns and 1h",
            ));
        }
        if self.warmup >= self.runtime {
            return Err(ParamError::params(
                NAME,
                &["warmuptime", "runtime"],
                format!(
                    "warm-up {:?} leaves nothing of runtime {:?}; use a warm-up shorter than the run",
                    self.warmup, self.runtime
                ),
            ));
        }
        if self.rate_mode() && self.pipe > 0 {
            let names: &[&str] = if self.auto_rps > 0 {
                &["auto-rps", "pipe"]
            } else {
                &["rps", "pipe"]
            };
            return Err(ParamError::params(
                NAME,
                names,
                "pipe mode has no requests per second; give one of them",
            ));
        }
        if self.auto_rps > 0 && !self.warmup.is_zero() {
            return Err(ParamError::params(
                NAME,
                &["auto-rps", "warmuptime"],
                "auto-rps counts the seconds after its target is hit instead of a warm-up (the original drops -w with -A); give one of them",
            ));
        }
        let start = self.start_rps();
        if self.rate_mode() && start < m {
            return Err(ParamError::params(
                NAME,
                &["rps", "message-threads"],
                format!(
                    "rps {start} is shared among {m} message threads, leaving each none; use at least {m}",
                ),
            ));
        }
        // The work the rate asks for, in CPU-seconds per second, against the machine's CPUs:
        // beyond them the queues only grow, and the run measures the backlog.
        let demand = self.rps as f64 * self.work().as_secs_f64();
        if demand > self.cpus as f64 {
            return Err(ParamError::params(
                NAME,
                &["rps", "operations", "op-time"],
                format!(
                    "rps {} × {:?} of work per request asks for {demand:.2} CPUs, more than the machine's {}; use at most rps {}",
                    self.rps,
                    self.work(),
                    self.cpus,
                    (self.cpus as f64 / self.work().as_secs_f64()).floor()
                ),
            ));
        }
        for (name, pin) in [
            ("message-cpus", &self.message_cpus),
            ("worker-cpus", &self.worker_cpus),
        ] {
            match pin {
                Some(Pin::Cpus(set)) => {
                    if let Some(&c) = set.iter().find(|&&c| c >= self.cpus) {
                        return Err(ParamError::value(
                            NAME,
                            name,
                            set,
                            format!(
                                "names CPU {c}, which the machine does not have; use CPUs 0..{}",
                                self.cpus - 1
                            ),
                        ));
                    }
                }
                Some(Pin::Auto) if m >= self.cpus => {
                    return Err(ParamError::params(
                        NAME,
                        &[name, "message-threads"],
                        format!(
                            "auto gives each of {m} message threads a CPU and the workers the rest, but the machine has {} CPUs",
                            self.cpus
                        ),
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The channel message thread `k` reads its workers' posts from.
    fn inbox(k: usize) -> ChannelId {
        ChannelId(k)
    }

    /// The channel worker `local` of message thread `k` reads its requests from (RPS mode).
    fn worker_channel(&self, k: usize, local: usize) -> ChannelId {
        ChannelId(self.message_threads + k * self.workers() + local)
    }

    /// The channel worker `local` of message thread `k` tells it, in RPS mode, how many
    /// requests it has taken so far (the original's worker zeroes its `pending`).
    fn taken_channel(&self, k: usize, local: usize) -> ChannelId {
        let all = self.message_threads * self.workers();
        ChannelId(self.message_threads + all + k * self.workers() + local)
    }

    /// The shared word that holds worker `local` of message thread `k`'s wake time (the
    /// original's `wake_time` in the worker's thread data), in ns since the epoch.
    fn wake_word(&self, k: usize, local: usize) -> WordId {
        WordId(k * self.workers() + local)
    }

    /// The semaphore message thread `k` sleeps on (the original's futex in its thread data).
    fn message_sem(k: usize) -> SemaphoreId {
        SemaphoreId(k)
    }

    /// The semaphore worker `local` of message thread `k` sleeps on.
    fn worker_sem(&self, k: usize, local: usize) -> SemaphoreId {
        SemaphoreId(self.message_threads + k * self.workers() + local)
    }

    /// Put `value` in `channel` and wake its reader through `sem` (the original's list
    /// append and fpost).
    async fn post<C: Context>(
        ctx: &C,
        channel: ChannelId,
        sem: SemaphoreId,
        value: u64,
    ) -> Result<(), WorkloadError> {
        ctx.send(channel, &value.to_le_bytes()).await?;
        ctx.sem_post(sem).await
    }

    /// Sleep on `sem` until something is in `channel`, and read what is there (at least one
    /// 8-byte message, at most `buf`'s length) into `buf`: the number of messages, and the
    /// clock read as the wait ended, before the read (so that a wakeup's latency does not
    /// count the read's system call, which the original's wakee does not make). Each
    /// message comes with one post of the semaphore; `owed` counts those read before their
    /// post was taken, which the next waits take without reading.
    async fn take<C: Context>(
        ctx: &C,
        channel: ChannelId,
        sem: SemaphoreId,
        buf: &mut [u8],
        owed: &mut usize,
    ) -> Result<(usize, Duration), WorkloadError> {
        loop {
            ctx.sem_wait(sem).await?;
            let woke = ctx.now();
            if *owed > 0 {
                *owed -= 1;
                continue;
            }
            // Every message is written before its post: the channel holds at least one.
            let n = ctx.recv_some(channel, buf).await?;
            if n % 8 != 0 {
                return Err(WorkloadError::Integrity(format!(
                    "channel {} gave {n} bytes, not whole 8-byte messages",
                    channel.0
                )));
            }
            *owed += n / 8 - 1;
            return Ok((n / 8, woke));
        }
    }

    /// A message thread in the post-and-wait mode: wake every worker that posted, until all
    /// have finished.
    async fn message_loop<C: Context>(&self, k: usize, ctx: &C) -> Result<(), WorkloadError> {
        let t = self.workers();
        // Each worker has at most one post outstanding: a read never splits one.
        let mut buf = vec![0u8; 8 * t];
        let mut finished = 0;
        let mut owed = 0;
        while finished < t {
            let (posts, _) = Self::take(
                ctx,
                Self::inbox(k),
                Self::message_sem(k),
                &mut buf,
                &mut owed,
            )
            .await?;
            // The original reads the clock once for the whole list it wakes, so that a waker
            // preempted by the first wakee shows as latency of the others.
            let now = ctx.now();
            for post in buf[..8 * posts].chunks_exact(8) {
                let v = u64::from_le_bytes(post.try_into().expect("8 bytes"));
                if v & DONE_POST != 0 {
                    finished += 1;
                    continue;
                }
                let local = v as usize;
                if local >= t {
                    return Err(WorkloadError::Integrity(format!(
                        "message thread {k} got a post from worker {local} of {t}"
                    )));
                }
                let stamp = if self.pipe > 0 {
                    ctx.touch_memory(self.pipe).await;
                    ctx.now()
                } else {
                    now
                };
                // The original's memcpy of the wake time and fpost: a store and a futex wake,
                // nothing else between the clock reading and the wakeup.
                ctx.store_word(self.wake_word(k, local), stamp.as_nanos() as u64)?;
                ctx.sem_post(self.worker_sem(k, local)).await?;
            }
        }
        Ok(())
    }

    /// A message thread in RPS mode: its share of the rate at the start of every second, to
    /// its workers in turn (dropping a request for a worker past the queue bound); with
    /// auto-RPS, the share steered first; then the end to each worker.
    async fn rps_loop<C: Context>(&self, k: usize, ctx: &C) -> Result<(), WorkloadError> {
        let t = self.workers();
        let m = self.message_threads;
        let mut share = self.start_rps() / m;
        let mut next = 0usize;
        // Requests posted to each worker, and the most it has said it took.
        let (mut posted, mut taken) = (vec![0u64; t], vec![0u64; t]);
        let mut dropped = 0u64;
        let mut steer = match self.auto_rps {
            0 => None,
            _ => Some((read_cpu_times(ctx).await?, false)),
        };
        let mut buf = vec![0u8; 8 * RPS_BATCH];
        let mut first = true;
        loop {
            let start = ctx.now();
            if start >= self.runtime || ctx.stop_requested() {
                break;
            }
            // Steered once a second, from the second second on (the first reading is the base).
            if let Some((last, hit)) = steer.as_mut().filter(|_| !first) {
                let now = read_cpu_times(ctx).await?;
                let busy = now.busy_percent_since(last);
                *last = now;
                let (rate, on_target) = auto_scale(share, f64::from(self.auto_rps), busy);
                // At least 1: the original's rate, once 0, never grows again (0 × any step).
                share = rate.clamp(1, MAX_RPS / m);
                if k == 0 {
                    ctx.record("busy_pct", busy);
                    if on_target && !*hit {
                        ctx.record("auto_hit_s", start.as_secs() as f64);
                    }
                }
                *hit |= on_target;
            }
            first = false;
            for _ in 0..share {
                let now = ctx.now();
                if now >= self.runtime || ctx.stop_requested() {
                    break;
                }
                let local = next % t;
                next += 1;
                if posted[local] - taken[local] > QUEUE_BOUND {
                    // Look again, as the original's second read of `pending` after a barrier.
                    let channel = self.taken_channel(k, local);
                    taken[local] =
                        taken[local].max(Self::latest_taken(ctx, channel, &mut buf).await?);
                    if posted[local] - taken[local] > QUEUE_BOUND {
                        dropped += 1;
                        ctx.sleep(DROP_SLEEP).await;
                        continue;
                    }
                }
                posted[local] += 1;
                let (channel, sem) = (self.worker_channel(k, local), self.worker_sem(k, local));
                ctx.send(channel, &(ctx.now().as_nanos() as u64).to_le_bytes())
                    .await?;
                // The wake time is read after the queue's append (a pipe write here, a
                // list append in the original) and stored as the original's is: the latest
                // post's, just before the futex wake.
                ctx.store_word(self.wake_word(k, local), ctx.now().as_nanos() as u64)?;
                ctx.sem_post(sem).await?;
            }
            ctx.sleep_until((start + Duration::from_secs(1)).min(self.runtime))
                .await;
        }
        for local in 0..t {
            let (channel, sem) = (self.worker_channel(k, local), self.worker_sem(k, local));
            Self::post(ctx, channel, sem, NO_MORE).await?;
        }
        ctx.record("dropped", dropped as f64);
        ctx.record("rps_goal", share as f64);
        Ok(())
    }

    /// The latest count of taken requests a worker wrote to `channel`, reading without waiting
    /// (0 if it wrote none since the last look).
    async fn latest_taken<C: Context>(
        ctx: &C,
        channel: ChannelId,
        buf: &mut [u8],
    ) -> Result<u64, WorkloadError> {
        let mut latest = 0;
        let mut ready = Vec::with_capacity(1);
        // Each look reads up to `buf`'s worth; the worker writes at most one count per take,
        // and no more than QUEUE_BOUND + 1 takes' counts wait unread (see the module comment).
        for _ in 0..=QUEUE_BOUND {
            ctx.wait_readable(&[channel], Some(ctx.now()), &mut ready)
                .await?;
            if ready.is_empty() {
                break;
            }
            let n = ctx.recv_some(channel, buf).await?;
            if n % 8 != 0 || n == 0 {
                return Err(WorkloadError::Integrity(format!(
                    "channel {} gave {n} bytes, not whole 8-byte counts",
                    channel.0
                )));
            }
            let last = &buf[n - 8..n];
            latest = latest.max(u64::from_le_bytes(last.try_into().expect("8 bytes")));
        }
        Ok(latest)
    }

    /// A worker in the post-and-wait mode.
    async fn worker_loop<C: Context>(
        &self,
        k: usize,
        local: usize,
        ctx: &C,
        tally: &mut Tally,
    ) -> Result<(), WorkloadError> {
        let (inbox, inbox_sem) = (Self::inbox(k), Self::message_sem(k));
        let (word, sem) = (self.wake_word(k, local), self.worker_sem(k, local));
        loop {
            if ctx.now() >= self.runtime || ctx.stop_requested() {
                return Self::post(ctx, inbox, inbox_sem, DONE_POST | local as u64).await;
            }
            if self.pipe > 0 {
                ctx.touch_memory(self.pipe).await;
            }
            Self::post(ctx, inbox, inbox_sem, local as u64).await?;
            // One post, one answer: the message thread stored the wake time before its post.
            ctx.sem_wait(sem).await?;
            let woke = ctx.now();
            let at = Duration::from_nanos(ctx.load_word(word)?);
            if at >= self.warmup {
                ctx.record("wakeup_ns", woke.saturating_sub(at).as_nanos() as f64);
            }
            self.request(ctx, tally).await;
        }
    }

    /// A worker in RPS mode: serve what is queued, wait when nothing is.
    async fn rps_worker_loop<C: Context>(
        &self,
        k: usize,
        local: usize,
        ctx: &C,
        tally: &mut Tally,
    ) -> Result<(), WorkloadError> {
        let mut buf = vec![0u8; 8 * RPS_BATCH];
        let (channel, sem) = (self.worker_channel(k, local), self.worker_sem(k, local));
        let word = self.wake_word(k, local);
        let taken_channel = self.taken_channel(k, local);
        let mut owed = 0;
        let mut taken = 0u64;
        loop {
            let before = ctx.now();
            let (n, woke) = Self::take(ctx, channel, sem, &mut buf, &mut owed).await?;
            // The latest post's wake time (the original's worker reads its `wake_time`, which
            // every post overwrites).
            let at = Duration::from_nanos(ctx.load_word(word)?);
            // What the message thread's queue bound counts (the original zeroes `pending`).
            taken += n as u64;
            ctx.send(taken_channel, &taken.to_le_bytes()).await?;
            let mut last = false;
            for (i, req) in buf[..8 * n].chunks_exact(8).enumerate() {
                let v = u64::from_le_bytes(req.try_into().expect("8 bytes"));
                if v == NO_MORE {
                    last = true;
                    continue;
                }
                // Posted after the worker started waiting: a post woke it.
                if i == 0 && at >= before && at >= self.warmup {
                    ctx.record("wakeup_ns", woke.saturating_sub(at).as_nanos() as f64);
                }
                // Requests still queued when the run is over are dropped, as the original's
                // workers stop at their next look at the clock.
                if ctx.now() < self.runtime && !ctx.stop_requested() {
                    self.request(ctx, tally).await;
                }
            }
            if last {
                return Ok(());
            }
        }
    }

    /// One request: the sleep, then the work under the CPU's lock (nothing in pipe mode).
    async fn request<C: Context>(&self, ctx: &C, tally: &mut Tally) {
        let start = ctx.now();
        if self.pipe == 0 {
            if self.sleep_us > 0 {
                ctx.sleep(Duration::from_micros(self.sleep_us)).await;
            }
            self.work_under_lock(ctx).await;
        }
        let end = ctx.now();
        if start >= self.warmup {
            ctx.record("request_ns", (end - start).as_nanos() as f64);
        }
        tally.requests += 1;
        if let Some(n) = tally.per_second.get_mut(end.as_secs() as usize) {
            *n += 1;
        }
    }

    /// The request's work, under the lock of the CPU the worker runs on when locking is on:
    /// taken again when the worker was moved to another CPU while it spun for it.
    async fn work_under_lock<C: Context>(&self, ctx: &C) {
        if !self.locking {
            ctx.compute(self.work()).await;
            return;
        }
        let cpu_lock = || LockId(ctx.current_cpu().unwrap_or(0) % self.cpus);
        let mut lock = cpu_lock();
        for _ in 0..MAX_LOCK_RETRIES {
            ctx.lock(lock).await;
            let now_on = cpu_lock();
            if now_on == lock {
                break;
            }
            ctx.unlock(lock);
            lock = now_on;
        }
        // After the last retry the worker holds `lock` whether or not it was moved again.
        if cpu_lock() != lock {
            ctx.lock(lock).await;
        }
        ctx.compute(self.work()).await;
        ctx.unlock(lock);
    }
}

/// The machine's CPU time, for auto-RPS; an error where the backend cannot read it.
async fn read_cpu_times<C: Context>(ctx: &C) -> Result<CpuTimes, WorkloadError> {
    ctx.cpu_times().await.ok_or_else(|| {
        WorkloadError::Backend(
            "auto-rps steers by the machine's CPU time, which this backend cannot read".into(),
        )
    })
}

/// The original's `auto_scale_rps`: the next rate from the current `rate`, the `target`
/// utilisation and the `busy` one of the last second (both %), and whether this step counts as
/// on target (the original's `auto_rps_target_hit`). Below the target the rate grows by
/// target / busy, at most × 3, by a quarter of the step within 50 % of it and an eighth within
/// 20 % (on target when the step is under 5 %); above, it shrinks by the same ratio, at least to
/// × 0.3, by a quarter of the step within 20 % and an eighth within 10 % (on target when the
/// step is under 5 %). Rounded up when growing, down when shrinking.
pub fn auto_scale(rate: usize, target: f64, busy: f64) -> (usize, bool) {
    // The original computes in single-precision floats; the rounding is the same here.
    if busy < target {
        // busy = 0 gives an infinite ratio, held to 3.
        let mut delta = target / busy;
        let mut hit = false;
        if delta > 3.0 {
            delta = 3.0;
        } else if delta < 1.2 {
            delta = 1.0 + (delta - 1.0) / 8.0;
            hit = delta < 1.05;
        } else if delta < 1.5 {
            delta = 1.0 + (delta - 1.0) / 4.0;
        }
        let next = (rate as f64 * delta).ceil();
        // The original keeps the rate when it would pass 2^31.
        let next = if next >= (1u64 << 31) as f64 {
            rate
        } else {
            next as usize
        };
        (next, hit)
    } else if busy > target {
        let mut delta = target / busy;
        let mut hit = false;
        if delta < 0.3 {
            delta = 0.3;
        } else if delta > 0.9 {
            delta += (1.0 - delta) / 8.0;
            hit = delta > 0.95;
        } else if delta > 0.8 {
            delta += (1.0 - delta) / 4.0;
        }
        ((rate as f64 * delta).floor().max(0.0) as usize, hit)
    } else {
        (rate, true)
    }
}

/// The original's per-band sample counts (`calc_percentiles`' `ocounts`) of the percentiles
/// `list` of `h`: for each, the samples in the buckets up to its value's, less those up to the
/// previous percentile's.
fn band_counts(h: &Histogram<u64>, list: &[(&str, f64)]) -> Vec<u64> {
    let mut below = 0;
    (list.iter())
        .map(|(_, q)| {
            let upto = h.count_between(0, h.value_at_percentile(*q));
            let n = upto.saturating_sub(below);
            below = below.max(upto);
            n
        })
        .collect()
}

/// One of the original's percentile tables (`show_latencies`) from a repetition's metrics:
/// `(label, unit, metric prefix)`, the percentiles shown, and the starred one; each line ends
/// with its band's sample count where the repetition kept it.
fn percentile_table(
    out: &mut String,
    m: &BTreeMap<String, f64>,
    secs: u64,
    (label, unit, key): (&str, &str, &str),
    list: &[(&str, f64)],
    star: &str,
) -> Option<()> {
    let total = m.get(&format!("{key}_samples")).copied();
    let total = total.map_or(String::new(), |n| format!(" ({n:.0} total samples)"));
    out.push_str(&format!(
        "{label} percentiles ({unit}) runtime {secs} (s){total}\n"
    ));
    for (p, q) in list {
        let v = m.get(&format!("{key}_{p}")).copied()?;
        let mark = if *p == star { "* " } else { "  " };
        let n = m.get(&format!("{key}_{p}_samples"));
        let n = n.map_or(String::new(), |n| format!(" ({n:.0} samples)"));
        out.push_str(&format!("\t{mark}{q:2.1}th: {v:<10.0}{n}\n"));
    }
    if let (Some(lo), Some(hi)) = (m.get(&format!("{key}_min")), m.get(&format!("{key}_max"))) {
        out.push_str(&format!("\t  min={lo:.0}, max={hi:.0}\n"));
    }
    Some(())
}

/// A worker's counts, kept in the body and recorded at its end.
struct Tally {
    /// Requests served, warm-up included.
    requests: u64,
    /// Requests ended in each second of the run.
    per_second: Vec<u64>,
}

/// The parameters of [`Schbench`], each declared once.
const TABLE: &[Param<Schbench>] = &[
    Param::new(
        ParamDef::value(
            "message-threads",
            "1",
            "1",
            "-m: message threads, each with its own workers (1..131072).",
        ),
        |w, v| {
            parse_count(NAME, "message-threads", v, 1..=MAX_TASKS).map(|n| w.message_threads = n)
        },
        |w| w.message_threads.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "threads",
            "",
            "N",
            "-t: workers per message thread (1..131072; default: the machine's CPUs / message threads, rounded up).",
        )
        .no_default(),
        |w, v| parse_count(NAME, "threads", v, 1..=MAX_TASKS).map(|n| w.threads = Some(n)),
        |w| w.workers().to_string(),
    ),
    Param::new(
        ParamDef::value(
            "runtime",
            "30s",
            "30s",
            "-r: how long the workers run (a bare number is seconds).",
        )
        .hyphen_values(),
        |w, v| parse_with(NAME, v, crate::duration::parse_duration).map(|d| w.runtime = d),
        |w| crate::duration::format_duration(w.runtime),
    ),
    Param::new(
        ParamDef::value(
            "warmuptime",
            "0s",
            "0s",
            "-w: samples of the run's first part are left out (a bare number is seconds).",
        )
        .hyphen_values(),
        |w, v| parse_with(NAME, v, crate::duration::parse_duration).map(|d| w.warmup = d),
        |w| crate::duration::format_duration(w.warmup),
    ),
    Param::new(
        ParamDef::value(
            "sleep-usec",
            "100",
            "100",
            "-s: µs every request sleeps before its work (0..1000000).",
        ),
        |w, v| {
            parse_count(NAME, "sleep-usec", v, 0..=1_000_000).map(|n| w.sleep_us = n as u64)
        },
        |w| w.sleep_us.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "operations",
            "5",
            "5",
            "-n: operations of work per request (0..1000000).",
        ),
        |w, v| parse_count(NAME, "operations", v, 0..=1_000_000).map(|n| w.operations = n),
        |w| w.operations.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "op-time",
            "808us",
            "808us",
            "CPU time of one operation (the original's 256 KiB matrix multiplication; its -C mode measures it): 0..1s.",
        )
        .hyphen_values(),
        |w, v| {
            let d = parse_with(NAME, v, crate::duration::parse_duration)?;
            if d > Duration::from_secs(1) {
                return Err(ParamError::value(
                    NAME,
                    "op-time",
                    format!("'{v}'"),
                    "is not accepted; use 0..1s",
                ));
            }
            w.op_time = d;
            Ok(())
        },
        |w| crate::duration::format_duration(w.op_time),
    ),
    Param::new(
        ParamDef::value(
            "no-locking",
            "",
            "",
            "-L: work without taking the CPU's lock.",
        )
        .kind(ParamKind::Flag)
        .no_default(),
        |w, v| {
            parse_param::<bool>(NAME, "no-locking", v, "true or false").map(|b| w.locking = !b)
        },
        |w| (!w.locking).to_string(),
    ),
    Param::new(
        ParamDef::value(
            "rps",
            "0",
            "0",
            "-R: requests per second, shared among the message threads (0: each worker posts and waits; up to 10000000); with --auto-rps, the starting rate. A worker with more than 128 posted since it last took its queue gets none more that second: those requests are dropped, counted and printed.",
        ),
        |w, v| parse_count(NAME, "rps", v, 0..=MAX_RPS).map(|n| w.rps = n),
        |w| w.rps.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "auto-rps",
            "0",
            "PERCENT",
            "-A: RPS mode steering the rate, once a second, to this CPU utilisation of the whole machine (1..100; 0: off), from --rps or 10; the RPS percentiles count the seconds from the one that hit it.",
        )
        .short('A'),
        |w: &mut Schbench, v| parse_count(NAME, "auto-rps", v, 0..=100).map(|n| w.auto_rps = n as u8),
        |w| w.auto_rps.to_string(),
    )
    // Records of runs without auto-RPS stay as they were.
    .recorded_when(|w| w.auto_rps > 0),
    Param::new(
        ParamDef::value(
            "pipe",
            "0",
            "0",
            "-p: pipe mode, bytes written per exchange by each side (0: requests; up to 1048576).",
        ),
        |w, v| parse_count(NAME, "pipe", v, 0..=MAX_PIPE).map(|n| w.pipe = n),
        |w| w.pipe.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "message-cpus",
            "",
            "LIST|auto",
            "-M: CPUs of the message threads (a list such as 0-1, or auto: message thread i on CPU i).",
        )
        .no_default(),
        |w, v| parse_pin(v, "message-cpus").map(|p| w.message_cpus = Some(p)),
        |w| w.message_cpus.as_ref().map_or(String::new(), Pin::to_string),
    ),
    Param::new(
        ParamDef::value(
            "worker-cpus",
            "",
            "LIST|auto",
            "-W: CPUs of the workers (a list such as 2-7, or auto: the CPUs after the message threads').",
        )
        .no_default(),
        |w, v| parse_pin(v, "worker-cpus").map(|p| w.worker_cpus = Some(p)),
        |w| w.worker_cpus.as_ref().map_or(String::new(), Pin::to_string),
    ),
];

/// A `-M`/`-W` value: `auto` or a CPU list.
fn parse_pin(v: &str, name: &'static str) -> Result<Pin, ParamError> {
    if v.trim() == "auto" {
        return Ok(Pin::Auto);
    }
    let set: CpuSet = v.parse().map_err(|e: crate::error::ValueError| {
        ParamError::value(NAME, name, format!("'{v}'"), format!("{e}, or auto"))
    })?;
    if set.is_empty() {
        return Err(ParamError::value(
            NAME,
            name,
            format!("'{v}'"),
            "names no CPU; write e.g. 0-3,6 or auto",
        ));
    }
    Ok(Pin::Cpus(set))
}

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Schbench, { TABLE.len() }>(TABLE);

impl Preset for Schbench {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "schbench: message threads wake workers, which sleep and then work under a per-CPU lock; wakeup and request latency percentiles, RPS (groups: message, worker).",
        "masoncl/schbench: wakeup latency, request latency and RPS of message threads waking workers; -R rate mode, -p pipe mode",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "schbench -m 1 -t 4 -r 10 on this kernel: wakeup and request latency percentiles, RPS",
            "run schbench --message-threads 1 --threads 4 --runtime 10s",
        ),
        Example::new(
            "p99 wakeup latency under every simulated policy, 8 CPUs fully loaded",
            "sweep schbench --backend sim --cpus 8 --threads 8 --runtime 5s --vary policy=linux24,o1,staircase,cfs,eevdf,ule",
        ),
        Example::new(
            "schbench -A 50: the rate that keeps 8 simulated CPUs half busy, and its latencies",
            "run schbench --backend sim --cpus 8 --auto-rps 50 --runtime 20s",
        ),
    ]);
    const TABLE: &'static [Param<Self>] = TABLE;

    fn with_defaults(host_cpus: usize) -> Self {
        Schbench::with_cpus(host_cpus)
    }

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }

    fn group_defaults(&self, _realtime_allowed: bool) -> Vec<GroupDefault> {
        let m = self.message_threads;
        let pin = |group, set: CpuSet| GroupDefault {
            group,
            knobs: Knobs {
                cpus: Some(set),
                ..Knobs::default()
            },
            kind: DefaultKind::Under,
            origin: None,
        };
        let mut out = Vec::new();
        let auto = |first: bool| {
            if first {
                CpuSet::first(m)
            } else {
                CpuSet::from_cpus(m..self.cpus).expect("CPUs below the machine's count")
            }
        };
        for (group, given, first) in [
            ("message", &self.message_cpus, true),
            ("worker", &self.worker_cpus, false),
        ] {
            match given {
                Some(Pin::Cpus(set)) => out.push(pin(group, set.clone())),
                Some(Pin::Auto) => out.push(pin(group, auto(first))),
                None => {}
            }
        }
        // The original's `auto` on either flag pins both groups.
        let any_auto = [&self.message_cpus, &self.worker_cpus]
            .iter()
            .any(|p| matches!(p, Some(Pin::Auto)));
        if any_auto {
            for (group, first) in [("message", true), ("worker", false)] {
                if !out.iter().any(|d| d.group == group) {
                    out.push(pin(group, auto(first)));
                }
            }
        }
        out
    }
}

impl Workload for Schbench {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn plan(&self) -> Plan {
        let m = self.message_threads;
        let workers = m * self.workers();
        let locks = if self.locking { self.cpus } else { 0 };
        // In RPS mode each worker has its queue of requests and tells its message thread what
        // it has taken; in the post-and-wait mode a wakeup carries nothing but the wake time,
        // which travels in a shared word.
        let per_worker = if self.rate_mode() { 2 * workers } else { 0 };
        Plan {
            groups: vec![
                GroupPlan::fixed("message", m),
                GroupPlan::fixed("worker", workers),
            ],
            channels: m + per_worker,
            duplex: false,
            locks,
            sync: SyncPlan {
                semaphores: vec![0; m + workers],
                words: workers,
                lock_kinds: vec![LockKind::Spin; locks],
                lock_names: (0..locks).map(|c| format!("cpu{c}")).collect(),
                ..SyncPlan::default()
            },
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let t = self.workers();
        if task.group == 0 {
            return if self.rate_mode() {
                self.rps_loop(task.index, ctx).await
            } else {
                self.message_loop(task.index, ctx).await
            };
        }
        let (k, local) = (task.index / t, task.index % t);
        let mut tally = Tally {
            requests: 0,
            per_second: vec![0; self.runtime.as_secs() as usize + 1],
        };
        if self.rate_mode() {
            self.rps_worker_loop(k, local, ctx, &mut tally).await?;
        } else {
            self.worker_loop(k, local, ctx, &mut tally).await?;
        }
        ctx.record("requests", tally.requests as f64);
        for n in tally.per_second {
            ctx.record("per_second", n as f64);
        }
        Ok(())
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        const WAKEUP: [&str; 5] = [
            "wakeup_p20",
            "wakeup_p50",
            "wakeup_p90",
            "wakeup_p99",
            "wakeup_p99.9",
        ];
        const REQUEST: [&str; 5] = [
            "request_p20",
            "request_p50",
            "request_p90",
            "request_p99",
            "request_p99.9",
        ];
        let mut defs = Vec::new();
        for name in WAKEUP {
            defs.push(metric(
                name,
                "us",
                Better::Lower,
                "wakeup latency percentile: from the waker's clock reading to the worker running",
            ));
        }
        for name in REQUEST {
            defs.push(metric(
                name,
                "us",
                Better::Lower,
                "request latency percentile: from the request's start (before its sleep) to the end of its work",
            ));
        }
        // The starred percentile of the original's table first: it is the primary metric.
        let star = defs.iter().position(|d| d.name == "wakeup_p99").unwrap();
        defs.swap(0, star);
        defs.extend([
            metric("wakeup_min", "us", Better::Lower, "shortest wakeup latency"),
            metric("wakeup_max", "us", Better::Lower, "longest wakeup latency"),
            metric("request_min", "us", Better::Lower, "shortest request"),
            metric("request_max", "us", Better::Lower, "longest request"),
            metric(
                "rps",
                "requests/s",
                Better::Higher,
                "requests served / run time (the original's average rps)",
            ),
            metric(
                "rps_p20",
                "requests/s",
                Better::Higher,
                "20th percentile of the requests served per second after the warm-up",
            ),
            metric(
                "rps_p50",
                "requests/s",
                Better::Higher,
                "median of the requests served per second after the warm-up",
            ),
            metric(
                "rps_p90",
                "requests/s",
                Better::Higher,
                "90th percentile of the requests served per second after the warm-up",
            ),
            metric(
                "wakeup_samples",
                "samples",
                Better::Higher,
                "wakeups measured",
            ),
            metric(
                "request_samples",
                "samples",
                Better::Higher,
                "requests measured",
            ),
            metric(
                "dropped",
                "requests",
                Better::Lower,
                "RPS mode: requests dropped because their worker had been posted more than 128 since it last took its queue",
            ),
        ]);
        if self.auto_rps > 0 {
            defs.extend([
                metric(
                    "rps_goal",
                    "requests/s",
                    Better::Higher,
                    "auto-RPS: the rate it ended with, all message threads (the original's final rps goal)",
                ),
                metric(
                    "cpu_busy",
                    "%",
                    Better::Higher,
                    "auto-RPS: mean busy share of all CPUs over the seconds from the one that hit the target (all seconds if none did)",
                ),
            ]);
        }
        if self.pipe > 0 {
            defs.push(metric(
                "worker_ops_s",
                "ops/s",
                Better::Higher,
                "exchanges per second of one worker (the original's avg worker transfer)",
            ));
            defs.push(metric(
                "worker_mib_s",
                "MiB/s",
                Better::Higher,
                "bytes written per second of one worker",
            ));
        }
        defs
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let workers: Vec<_> = (plan.tasks().iter())
            .filter(|t| t.group == 1)
            .filter_map(|t| outcome.tasks.get(t.id))
            .collect();
        let hist = |metric: &str| -> Result<Histogram<u64>, WorkloadError> {
            let mut h = Histogram::<u64>::new(3).expect("3 significant digits is valid");
            for s in workers.iter().filter_map(|o| o.samples.get(metric)) {
                for &ns in s {
                    h.record(ns.max(0.0) as u64)
                        .expect("auto-resizing histogram");
                }
            }
            if h.is_empty() {
                return Err(WorkloadError::Integrity(format!(
                    "no {} sample after the warm-up; run longer",
                    metric.trim_end_matches("_ns")
                )));
            }
            Ok(h)
        };
        let mut m = BTreeMap::new();
        for what in ["wakeup", "request"] {
            let h = hist(&format!("{what}_ns"))?;
            for ((p, q), n) in LAT_PERCENTILES
                .iter()
                .zip(band_counts(&h, &LAT_PERCENTILES))
            {
                m.insert(
                    format!("{what}_{p}"),
                    h.value_at_percentile(*q) as f64 / 1e3,
                );
                m.insert(format!("{what}_{p}_samples"), n as f64);
            }
            m.insert(format!("{what}_min"), h.min() as f64 / 1e3);
            m.insert(format!("{what}_max"), h.max() as f64 / 1e3);
            m.insert(format!("{what}_samples"), h.len() as f64);
        }
        let requests = outcome.sum(&plan, Some(1), "requests");
        m.insert("rps".into(), requests / self.runtime.as_secs_f64());
        m.insert("dropped".into(), outcome.sum(&plan, Some(0), "dropped"));
        // Auto-RPS: the seconds from the one that hit the target on (the first message
        // thread's readings, which it recorded from the second second on).
        let mut hit_s = None;
        if self.auto_rps > 0 {
            let first_message = outcome.tasks.first().map(|o| &o.samples);
            let samples = |name: &str| first_message.and_then(|s| s.get(name));
            hit_s = samples("auto_hit_s")
                .and_then(|v| v.first())
                .map(|&s| s as usize);
            let busy = samples("busy_pct").map_or(&[][..], Vec::as_slice);
            // Reading j covers second j (it is taken at the start of second j + 1).
            let from = hit_s.map_or(0, |s| s.saturating_sub(1)).min(busy.len());
            let counted = &busy[from..];
            if counted.is_empty() {
                return Err(WorkloadError::Integrity(
                    "auto-rps read the CPUs' busy time no second; run at least 2 s".into(),
                ));
            }
            m.insert(
                "cpu_busy".into(),
                counted.iter().sum::<f64>() / counted.len() as f64,
            );
            m.insert("rps_goal".into(), outcome.sum(&plan, Some(0), "rps_goal"));
            if let Some(s) = hit_s {
                m.insert("auto_rps_hit_s".into(), s as f64);
            }
        }
        // Per-second counts of whole seconds after the warm-up (with auto-RPS: from the
        // second that hit the target on).
        let seconds = self.runtime.as_secs() as usize;
        let first = self.warmup.as_nanos().div_ceil(1_000_000_000) as usize;
        let first = first.max(hit_s.unwrap_or(0));
        let mut per_second = vec![0u64; seconds + 1];
        for s in workers.iter().filter_map(|o| o.samples.get("per_second")) {
            for (i, &n) in s.iter().enumerate().take(per_second.len()) {
                per_second[i] += n as u64;
            }
        }
        let mut rps = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        for &n in per_second.iter().take(seconds).skip(first) {
            rps.record(n).expect("auto-resizing histogram");
        }
        if rps.is_empty() {
            // No whole second after the warm-up: the run's own rate is the one sample.
            let measured = (self.runtime - self.warmup).as_secs_f64();
            let after: u64 = per_second.iter().skip(first).sum();
            rps.record((after as f64 / measured) as u64)
                .expect("auto-resizing histogram");
        }
        for ((p, q), n) in RPS_PERCENTILES
            .iter()
            .zip(band_counts(&rps, &RPS_PERCENTILES))
        {
            m.insert(format!("rps_{p}"), rps.value_at_percentile(*q) as f64);
            m.insert(format!("rps_{p}_samples"), n as f64);
        }
        if self.pipe > 0 {
            let ops = requests / (self.runtime.as_secs_f64() * workers.len() as f64);
            m.insert("worker_ops_s".into(), ops);
            m.insert(
                "worker_mib_s".into(),
                ops * self.pipe as f64 / (1024.0 * 1024.0),
            );
        }
        Ok(m)
    }

    fn classic_line(&self, m: &BTreeMap<String, f64>) -> Option<String> {
        let secs = self.runtime.as_secs();
        let mut out = String::new();
        let lat: &[(&str, f64)] = if self.pipe > 0 {
            &LAT_PERCENTILES
        } else {
            &LAT_PERCENTILES[1..]
        };
        let wakeup = ("Wakeup Latencies", "usec", "wakeup");
        percentile_table(&mut out, m, secs, wakeup, lat, "p99")?;
        if self.pipe > 0 {
            let ops = m.get("worker_ops_s")?;
            let mib = m.get("worker_mib_s")?;
            out.push_str(&format!(
                "avg worker transfer: {ops:.2} ops/sec {mib:.2}MB/s"
            ));
            return Some(out);
        }
        let request = ("Request Latencies", "usec", "request");
        percentile_table(&mut out, m, secs, request, lat, "p99")?;
        let rps = ("RPS", "requests", "rps");
        percentile_table(&mut out, m, secs, rps, &RPS_PERCENTILES, "p50")?;
        if self.auto_rps > 0 {
            out.push_str(&format!("final rps goal was {:.0}\n", m.get("rps_goal")?));
            let hit = m
                .get("auto_rps_hit_s")
                .map_or("never".to_string(), |s| format!("from second {s:.0}"));
            out.push_str(&format!(
                "cpu busy {:.1}% (target {}%, on target {hit})",
                m.get("cpu_busy")?,
                self.auto_rps
            ));
        } else {
            out.push_str(&format!("average rps: {:.2}", m.get("rps")?));
        }
        if self.rate_mode() {
            out.push_str(&format!(
                "\ndropped requests: {:.0} (posted to a worker with more than {QUEUE_BOUND} pending)",
                m.get("dropped")?
            ));
        }
        Some(out)
    }

    fn expected_time(&self) -> Option<Duration> {
        Some(self.runtime * 2 + self.work() * 4 + Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cpus: usize, params: &[(&str, &str)]) -> Result<Schbench, ParamError> {
        let mut w = Schbench::with_cpus(cpus);
        for (k, v) in params {
            Preset::set_param(&mut w, k, v)?;
        }
        w.validate().map(|_| w)
    }

    #[test]
    fn defaults_follow_the_original() {
        let w = set(8, &[]).unwrap();
        assert_eq!((w.message_threads, w.workers()), (1, 8));
        assert_eq!(w.runtime, Duration::from_secs(30));
        assert_eq!((w.sleep_us, w.operations, w.locking), (100, 5, true));
        // -t defaults to the CPUs divided among the message threads, rounded up.
        assert_eq!(set(8, &[("message-threads", "3")]).unwrap().workers(), 3);
        let plan = set(4, &[("message-threads", "2"), ("threads", "3")])
            .unwrap()
            .plan();
        assert_eq!(plan.total_tasks(), 2 + 6);
        // The message threads' inboxes; a worker's wake time is a shared word, not a channel.
        assert_eq!((plan.channels, plan.locks, plan.sync.words), (2, 4, 6));
        // In RPS mode each worker also has its queue and its count of what it took.
        let plan = set(
            4,
            &[("message-threads", "2"), ("threads", "3"), ("rps", "100")],
        )
        .unwrap()
        .plan();
        assert_eq!((plan.channels, plan.sync.words), (2 + 12, 6));
        let plan = set(4, &[("no-locking", "true")]).unwrap().plan();
        assert_eq!(plan.locks, 0);
    }

    #[test]
    fn bad_input_is_refused_with_what_is_accepted() {
        let e = set(8, &[("threads", "0")]).unwrap_err().to_string();
        assert!(e.contains("threads") && e.contains("1..131072"), "{e}");
        let e = set(8, &[("message-threads", "0")]).unwrap_err().to_string();
        assert!(e.contains("message-threads"), "{e}");
        // A CPU list outside the machine.
        let e = set(4, &[("worker-cpus", "2-5")]).unwrap_err().to_string();
        assert!(e.contains("CPU 4") && e.contains("0..3"), "{e}");
        let e = set(2, &[("message-threads", "2"), ("message-cpus", "auto")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("auto"), "{e}");
        assert!(set(4, &[("worker-cpus", "x")]).is_err());
        // More requests per second than the CPUs can serve: 4 CPUs, 4.04 ms a request.
        let e = set(4, &[("rps", "1000")]).unwrap_err().to_string();
        assert!(
            e.contains("more than the machine's 4") && e.contains("990"),
            "{e}"
        );
        assert!(set(4, &[("rps", "990")]).is_ok());
        let e = set(4, &[("rps", "10"), ("pipe", "4096")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("pipe"), "{e}");
        let e = set(4, &[("runtime", "2s"), ("warmuptime", "2s")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("warm-up"), "{e}");
        assert!(set(4, &[("pipe", "2000000")]).is_err());
    }

    /// auto_scale_rps's steps, worked out by hand from schbench.c for a target of 50 %.
    #[test]
    fn auto_rps_steps_as_the_original() {
        for (busy, next, hit) in [
            (25.0, 200, false), // × 2
            (10.0, 300, false), // × 5, held to × 3
            (0.0, 300, false),  // an idle machine: × 3
            (40.0, 107, false), // × 1.25 by a quarter: 1.0625, rounded up
            (45.0, 102, true),  // × 1.11 by an eighth: 1.0139, within 5 %
            (50.0, 100, true),  // on target
            (52.0, 96, true),   // × 0.9615 by an eighth: 0.9663, rounded down
            (60.0, 87, false),  // × 0.833 by a quarter: 0.875
            (100.0, 50, false), // × 0.5
            (200.0, 30, false), // × 0.25, held to × 0.3
        ] {
            assert_eq!(auto_scale(100, 50.0, busy), (next, hit), "busy {busy}");
        }
        // Past 2^31 the rate stays.
        assert_eq!(auto_scale(1 << 30, 50.0, 10.0).0, 1 << 30);
        assert_eq!(auto_scale(0, 50.0, 10.0), (0, false));
    }

    /// The per-band counts of 1..=100 µs, once each: 20 up to p20, 30 more up to p50, …
    #[test]
    fn band_counts_follow_calc_percentiles() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=100u64 {
            h.record(v).unwrap();
        }
        assert_eq!(band_counts(&h, &LAT_PERCENTILES), vec![20, 30, 40, 9, 1]);
        assert_eq!(band_counts(&h, &RPS_PERCENTILES), vec![20, 30, 40]);
        // The table prints them after each value.
        let mut m = BTreeMap::new();
        for (p, n, v) in [("p50", 30.0, 50.0), ("p90", 40.0, 90.0)] {
            m.insert(format!("wakeup_{p}"), v);
            m.insert(format!("wakeup_{p}_samples"), n);
        }
        let mut out = String::new();
        let what = ("Wakeup Latencies", "usec", "wakeup");
        percentile_table(&mut out, &m, 3, what, &LAT_PERCENTILES[1..3], "p90").unwrap();
        assert_eq!(
            out,
            "Wakeup Latencies percentiles (usec) runtime 3 (s)\n\
             \t  50.0th: 50         (30 samples)\n\
             \t* 90.0th: 90         (40 samples)\n"
        );
    }

    #[test]
    fn auto_rps_options_are_checked() {
        let w = set(4, &[("auto-rps", "50")]).unwrap();
        assert!(w.rate_mode());
        assert_eq!(w.start_rps(), 10);
        assert_eq!(w.params()["auto-rps"], "50");
        assert!(!set(4, &[]).unwrap().params().contains_key("auto-rps"));
        assert_eq!(
            set(4, &[("auto-rps", "50"), ("rps", "40")])
                .unwrap()
                .start_rps(),
            40
        );
        assert_eq!(
            set(4, &[("auto-rps", "50")]).unwrap().plan().channels,
            1 + 4 + 4,
            "each worker's count of taken requests"
        );
        let e = set(4, &[("auto-rps", "101")]).unwrap_err().to_string();
        assert!(e.contains("0..100"), "{e}");
        let e = set(4, &[("auto-rps", "50"), ("pipe", "4096")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("auto-rps") && e.contains("pipe"), "{e}");
        let e = set(4, &[("auto-rps", "50"), ("warmuptime", "1s")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("warm-up"), "{e}");
        let e = set(64, &[("auto-rps", "50"), ("message-threads", "11")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("rps 10 is shared among 11"), "{e}");
    }

    #[test]
    fn pinning_becomes_the_groups_cpus() {
        let w = set(4, &[("message-cpus", "auto")]).unwrap();
        let d = w.group_defaults(false);
        let cpus = |g: &str| {
            d.iter()
                .find(|x| x.group == g)
                .unwrap()
                .knobs
                .cpus
                .clone()
                .unwrap()
        };
        assert_eq!(cpus("message").as_slice(), &[0]);
        assert_eq!(cpus("worker").as_slice(), &[1, 2, 3]);
        let w = set(4, &[("worker-cpus", "1,3")]).unwrap();
        let d = w.group_defaults(false);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].knobs.cpus.as_ref().unwrap().as_slice(), &[1, 3]);
    }
}
