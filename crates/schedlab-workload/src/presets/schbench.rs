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
//!   only when it had to wait for the first.
//! - `-p` (pipe mode): no sleep and no work; each worker and the message thread write `-p`
//!   bytes of memory per exchange (the original's memset of a page buffer) — a pipe-like
//!   ping-pong whose throughput is reported per worker.
//! - `-w` warm-up: samples of requests started, and wakeups stamped, before it are left out.
//! - `-M`/`-W` pinning (`auto`: message thread i on CPU i, the workers on the CPUs after).
//! - Percentiles p50/p90/p99/p99.9 of the wakeup and request latencies; the classic output
//!   prints them in the original's layout.
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
//!   (the worker's index to its message thread, the clock reading to the worker), written
//!   before the sleeper is woken, and its futex becomes a semaphore per thread (a futex on the
//!   real kernel): the sleeper waits on its semaphore, not in the pipe's read, because a pipe
//!   write wakes its reader as a synchronous wakeup (WF_SYNC: the kernel may run the wakee on
//!   the waker's CPU, expecting the waker to sleep) and a futex wake does not. So a wakeup
//!   costs a pipe write and a FUTEX_WAKE where the original's costs the FUTEX_WAKE alone.
//! - **The per-CPU lock** on the simulator is the plan's spin lock, whose holder the simulated
//!   kernel does not preempt (a kernel spin lock's rule); the original's is a user-space lock
//!   whose holder can be preempted while the next worker spins. On the real kernel it is a
//!   user-space spin lock as in the original.
//! - **Auto-RPS** (`-A`: grow the rate until the machine is that busy) is not offered: it
//!   steers by /proc/stat's busy time, which only the real kernel has. Run a sweep over `rps`
//!   instead. `-R`'s "at most 128 queued per worker" backstop is not modelled: a message
//!   thread whose worker's pipe is full waits for it.
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
use crate::context::{ChannelId, Context, LockId, SemaphoreId, WorkloadError};
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
    /// `-R`: requests per second, 0 for the post-and-wait mode.
    pub rps: usize,
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
        if self.rps > 0 && self.pipe > 0 {
            return Err(ParamError::params(
                NAME,
                &["rps", "pipe"],
                "pipe mode has no requests per second; give one of them",
            ));
        }
        if self.rps > 0 && self.rps < m {
            return Err(ParamError::params(
                NAME,
                &["rps", "message-threads"],
                format!(
                    "rps {} is shared among {m} message threads, leaving each none; use at least {m}",
                    self.rps
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

    /// The channel worker `local` of message thread `k` reads its wakeups' clock readings
    /// (or requests) from.
    fn worker_channel(&self, k: usize, local: usize) -> ChannelId {
        ChannelId(self.message_threads + k * self.workers() + local)
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
    /// 8-byte message, at most `buf`'s length) into `buf`: the number of messages. Each
    /// message comes with one post of the semaphore; `owed` counts those read before their
    /// post was taken, which the next waits take without reading.
    async fn take<C: Context>(
        ctx: &C,
        channel: ChannelId,
        sem: SemaphoreId,
        buf: &mut [u8],
        owed: &mut usize,
    ) -> Result<usize, WorkloadError> {
        loop {
            ctx.sem_wait(sem).await?;
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
            return Ok(n / 8);
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
            let posts = Self::take(
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
                let ns = stamp.as_nanos() as u64;
                let (channel, sem) = (self.worker_channel(k, local), self.worker_sem(k, local));
                Self::post(ctx, channel, sem, ns).await?;
            }
        }
        Ok(())
    }

    /// A message thread in RPS mode: its share of the rate at the start of every second, to
    /// its workers in turn; then the end to each.
    async fn rps_loop<C: Context>(&self, k: usize, ctx: &C) -> Result<(), WorkloadError> {
        let t = self.workers();
        let share = self.rps / self.message_threads;
        let mut next = 0usize;
        loop {
            let start = ctx.now();
            if start >= self.runtime || ctx.stop_requested() {
                break;
            }
            for _ in 0..share {
                let now = ctx.now();
                if now >= self.runtime {
                    break;
                }
                let ns = now.as_nanos() as u64;
                let local = next % t;
                let (channel, sem) = (self.worker_channel(k, local), self.worker_sem(k, local));
                Self::post(ctx, channel, sem, ns).await?;
                next += 1;
            }
            ctx.sleep_until((start + Duration::from_secs(1)).min(self.runtime))
                .await;
        }
        for local in 0..t {
            let (channel, sem) = (self.worker_channel(k, local), self.worker_sem(k, local));
            Self::post(ctx, channel, sem, NO_MORE).await?;
        }
        Ok(())
    }

    /// A worker in the post-and-wait mode.
    async fn worker_loop<C: Context>(
        &self,
        k: usize,
        local: usize,
        ctx: &C,
        tally: &mut Tally,
    ) -> Result<(), WorkloadError> {
        let mut stamp = [0u8; 8];
        let (inbox, inbox_sem) = (Self::inbox(k), Self::message_sem(k));
        let (channel, sem) = (self.worker_channel(k, local), self.worker_sem(k, local));
        let mut owed = 0;
        loop {
            if ctx.now() >= self.runtime || ctx.stop_requested() {
                return Self::post(ctx, inbox, inbox_sem, DONE_POST | local as u64).await;
            }
            if self.pipe > 0 {
                ctx.touch_memory(self.pipe).await;
            }
            Self::post(ctx, inbox, inbox_sem, local as u64).await?;
            // One post, one answer: the channel holds exactly it when the wait ends.
            Self::take(ctx, channel, sem, &mut stamp, &mut owed).await?;
            let woke = ctx.now();
            let at = Duration::from_nanos(u64::from_le_bytes(stamp));
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
        let mut owed = 0;
        loop {
            let before = ctx.now();
            let n = Self::take(ctx, channel, sem, &mut buf, &mut owed).await?;
            let woke = ctx.now();
            let mut last = false;
            for (i, req) in buf[..8 * n].chunks_exact(8).enumerate() {
                let v = u64::from_le_bytes(req.try_into().expect("8 bytes"));
                if v == NO_MORE {
                    last = true;
                    continue;
                }
                let at = Duration::from_nanos(v);
                // Posted after the worker started waiting: this request woke it.
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

/// One of the original's percentile tables (`show_latencies`) from a repetition's metrics:
/// `(label, unit, metric prefix)`, the percentiles shown, and the starred one. The original
/// also prints how many samples fell between two percentiles, which the metrics do not keep.
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
        out.push_str(&format!("\t{mark}{q:2.1}th: {v:<10.0}\n"));
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
            "-R: requests per second, shared among the message threads (0: each worker posts and waits; up to 10000000). Auto-RPS (-A) is not offered: sweep rps instead.",
        ),
        |w, v| parse_count(NAME, "rps", v, 0..=MAX_RPS).map(|n| w.rps = n),
        |w| w.rps.to_string(),
    ),
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
        Plan {
            groups: vec![
                GroupPlan::fixed("message", m),
                GroupPlan::fixed("worker", workers),
            ],
            channels: m + workers,
            duplex: false,
            locks,
            sync: SyncPlan {
                semaphores: vec![0; m + workers],
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
            return if self.rps > 0 {
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
        if self.rps > 0 {
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
        ]);
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
            for (p, q) in LAT_PERCENTILES {
                m.insert(format!("{what}_{p}"), h.value_at_percentile(q) as f64 / 1e3);
            }
            m.insert(format!("{what}_min"), h.min() as f64 / 1e3);
            m.insert(format!("{what}_max"), h.max() as f64 / 1e3);
            m.insert(format!("{what}_samples"), h.len() as f64);
        }
        let requests = outcome.sum(&plan, Some(1), "requests");
        m.insert("rps".into(), requests / self.runtime.as_secs_f64());
        // Per-second counts of whole seconds after the warm-up.
        let seconds = self.runtime.as_secs() as usize;
        let first = self.warmup.as_nanos().div_ceil(1_000_000_000) as usize;
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
        for (p, q) in RPS_PERCENTILES {
            m.insert(format!("rps_{p}"), rps.value_at_percentile(q) as f64);
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
        out.push_str(&format!("average rps: {:.2}", m.get("rps")?));
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
        assert_eq!((plan.channels, plan.locks), (8, 4));
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
