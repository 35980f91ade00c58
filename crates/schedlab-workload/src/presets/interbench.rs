//! `interbench` — Con Kolivas's interactivity benchmark (interbench 0.31, `ckolivas/interbench`,
//! interbench.c), the benchmark of seed 004: how well a simulated interactive task meets its
//! deadlines while a background load runs. One configuration is one (benchmarked task, load) pair.
//!
//! As in the original (`bench()`, `run_loadchild`, `run_benchchild`): the load starts first, the
//! benchmarked task one second later (`lead`, shortened to the duration for short runs), and both
//! stop when the benchmarked task has run for `duration`. The task group `bench` holds the
//! benchmarked task, `timer` its timekeeper (`timekeeping_thread`: it does the benchmarked task's
//! sleeping and reports its oversleep, which is subtracted from the latency; SCHED_FIFO 96 where
//! allowed, as in the original), `load` the load's tasks and `loadtimer` the video or X load's
//! own timekeeper (the original gives every emulation one; its SCHED_FIFO 96 request is meant for
//! the benchmarked task's only, but `timekeeping_thread` tests `th->dt` before
//! `initialise_thread` sets it, so a load's asks too), each group in its own process (the
//! original forks a bench process and a load process), so `--group bench:nice=19` is interbench's `-B 19` and
//! `--group load:nice=-5` its `-N -5`; the real-time mode puts `bench` in SCHED_FIFO 95 (`-r`).
//! `--bench-start asleep` has the simulator start the benchmarked task asleep until the lead
//! ends, as the original's thread is: `bench()` lets the load go only once the bench process
//! reports ready, its thread waiting on its start semaphore (`wait_sem(&s->start)`). By default
//! (`runnable`) it starts runnable with the other tasks and must run once to begin that sleep,
//! which behind a load of better priority can be seconds late.
//!
//! Benchmarked tasks (`periodic_schedule`): run R of CPU every interval I with deadline I —
//! audio 2.5 ms every 50 ms; video 40 % of 1/60 s; X: for i in 0..=100, run i ms within a
//! (100 − i) ms interval; gaming: burn 100 ms chunks back to back (no deadlines); custom: `--cpu`
//! percent of `--interval`. Loads: none, video, x (the same emulations), burn (`--load-threads`
//! CPU burners), write (rewrite an `--io-size` file), read (read one), ring (`--load-threads` tasks
//! passing a token around), compile (burn + write + read), memload (allocate and write
//! `--mem-size` of memory a MiB at a time, copy every MiB from the one half the area away, free
//! it all, over and over).
//!
//! Metrics per pair, as `show_latencies` defines them: latency of each period (how late the task
//! got to run after its deadline, plus interval × missed periods when it missed some), its mean,
//! SD, maximum and — new — 99th percentile; `% desired CPU` = achieved runs / (achieved + missed)
//! and `% deadlines met` = met / (met + missed).
//!
//! Deliberate differences from the original, all documented in docs/simulator.md:
//! - CPU work burns measured thread CPU time (`Context::compute`), so there is no loops-per-ms
//!   calibration (the original's can loop forever on a noisy machine).
//! - The SD is a real sample standard deviation; the original computes
//!   √((Σx² − mean²/n)/(n − 1)), which is close to the root mean square, so its "SD ≈ mean".
//! - The read load's file is created by the load task itself during the lead second, and files and
//!   memory are sized from `--io-size` and `--mem-size` (defaults 256 MiB and 1 GiB; the original
//!   uses the RAM size up to 1 GB for files and 110 % of RAM for memload, which it disables
//!   without swap). Reads and writes are 4 KiB, as the original's `st_blksize` blocks.
//! - X keeps the original's definition: each step's deadline is its interval (100 − i) ms although
//!   it runs i ms, so every step past i = 50 misses — kept so results compare with published ones.

use super::def::{Example, OwnTables, TableStats, Tables, WorkloadDef};
use super::loads::{self, IO_BLOCK};
use super::params::{
    param_defs, parse_count, parse_param, parse_with, ListValues, Param, ParamDef, ParamKind,
    Preset,
};
use super::{metric, DefaultKind, GroupDefault, HostNeeds, Outcome, SizedBy, Workload};
use crate::context::{ChannelId, Context, WorkloadError};
use crate::error::{ParamError, ValueError};
use crate::knobs::{Knobs, SchedPolicy};
use crate::plan::{GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use crate::record::{ConfigResult, RunRecord};
use crate::table::{num, Table as TextTable};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The benchmarked (interactive) task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BenchKind {
    /// 2.5 ms every 50 ms.
    Audio,
    /// 40 % of every 1/60 s.
    Video,
    /// A sweep from 0 to 100 % CPU.
    X,
    /// 100 ms chunks back to back.
    Gaming,
    /// `--cpu` percent of `--interval`.
    Custom,
}

/// The background load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LoadKind {
    /// Nothing.
    None,
    /// The video emulation.
    Video,
    /// The X emulation.
    X,
    /// CPU burners.
    Burn,
    /// Rewriting a file.
    Write,
    /// Reading a file.
    Read,
    /// A token passed around a ring of tasks.
    Ring,
    /// Burn + write + read.
    Compile,
    /// Writing memory over and over.
    Memload,
}

impl BenchKind {
    /// The benchmarks run by default (custom only when asked for), in the original's order.
    pub const DEFAULT: [BenchKind; 4] = [
        BenchKind::Audio,
        BenchKind::Video,
        BenchKind::X,
        BenchKind::Gaming,
    ];
    /// The original's label.
    pub fn label(self) -> &'static str {
        match self {
            BenchKind::Audio => "Audio",
            BenchKind::Video => "Video",
            BenchKind::X => "X",
            BenchKind::Gaming => "Gaming",
            BenchKind::Custom => "Custom",
        }
    }
    /// The load of the same name, which the original never runs against itself.
    fn same_load(self) -> Option<LoadKind> {
        match self {
            BenchKind::Video => Some(LoadKind::Video),
            BenchKind::X => Some(LoadKind::X),
            _ => None,
        }
    }
}

impl LoadKind {
    /// Every load, in the original's order.
    pub const ALL: [LoadKind; 9] = [
        LoadKind::None,
        LoadKind::Video,
        LoadKind::X,
        LoadKind::Burn,
        LoadKind::Write,
        LoadKind::Read,
        LoadKind::Ring,
        LoadKind::Compile,
        LoadKind::Memload,
    ];
    /// The original's label.
    pub fn label(self) -> &'static str {
        match self {
            LoadKind::None => "None",
            LoadKind::Video => "Video",
            LoadKind::X => "X",
            LoadKind::Burn => "Burn",
            LoadKind::Write => "Write",
            LoadKind::Read => "Read",
            LoadKind::Ring => "Ring",
            LoadKind::Compile => "Compile",
            LoadKind::Memload => "Memload",
        }
    }
}

impl fmt::Display for BenchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label().to_lowercase())
    }
}

impl fmt::Display for LoadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label().to_lowercase())
    }
}

impl FromStr for BenchKind {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        [
            BenchKind::Audio,
            BenchKind::Video,
            BenchKind::X,
            BenchKind::Gaming,
            BenchKind::Custom,
        ]
        .into_iter()
        .find(|b| b.to_string() == s.to_lowercase())
        .ok_or_else(|| {
            ValueError(format!(
                "bench '{s}' is not a benchmark; use audio, video, x, gaming or custom"
            ))
        })
    }
}

impl FromStr for LoadKind {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        LoadKind::ALL
            .into_iter()
            .find(|l| l.to_string() == s.to_lowercase())
            .ok_or_else(|| {
                ValueError(format!("load '{s}' is not a load; use none, video, x, burn, write, read, ring, compile or memload"))
            })
    }
}

/// Parse a size such as `256MiB`, `1G`, `4096` (bytes); units K/M/G are powers of 1024.
pub fn parse_size(text: &str) -> Result<usize, ValueError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        ValueError(format!(
            "'{text}' is not a size; write e.g. 4096, 64KiB, 256MiB or 1GiB"
        ))
    };
    let value: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    Ok((value * scale).round() as usize)
}

/// Print a size in the largest binary unit it reaches (`256MiB`, `23.07GiB`).
pub fn format_size(bytes: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size {
            let v = bytes as f64 / size as f64;
            return if bytes.is_multiple_of(size) {
                format!("{v:.0}{unit}")
            } else {
                format!("{v:.2}{unit}")
            };
        }
    }
    format!("{bytes}B")
}

/// One (benchmarked task, load) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Interbench {
    /// The benchmarked task.
    pub bench: BenchKind,
    /// The background load.
    pub load: LoadKind,
    /// How long the benchmarked task runs.
    pub duration: Duration,
    /// Threads of the burn and ring loads.
    pub load_threads: usize,
    /// Size of the read and write loads' files.
    pub io_size: usize,
    /// Memory the memload allocates, copies and frees every round.
    pub mem_size: usize,
    /// How the memload uses its memory.
    pub memload: Memload,
    /// Whether a video or X load has its own timekeeper, as in the original (else it sleeps by
    /// itself).
    pub load_timer: bool,
    /// Whether the simulator starts the benchmarked task asleep until the lead ends, as the
    /// original's thread is (it waits on its start semaphore from before the load is let go),
    /// instead of runnable with every other task.
    pub bench_asleep: bool,
    /// The custom task's CPU share, percent.
    pub custom_cpu: f64,
    /// The custom task's interval.
    pub custom_interval: Duration,
    /// Real-time mode: latencies in µs (the `bench` group is put in SCHED_FIFO by the caller).
    pub rt: bool,
}

impl Default for Interbench {
    fn default() -> Self {
        Interbench {
            bench: BenchKind::Audio,
            load: LoadKind::None,
            duration: Duration::from_secs(30),
            load_threads: 2,
            io_size: 256 << 20,
            mem_size: 1 << 30,
            memload: Memload::Round,
            load_timer: true,
            bench_asleep: false,
            custom_cpu: 10.0,
            custom_interval: Duration::from_millis(10),
            rt: false,
        }
    }
}

/// How the memload load uses its `mem-size` of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memload {
    /// `emulate_memload`'s round: allocate and write the area a MiB at a time (`malloc` and
    /// `memset`), copy every MiB from the one half the area away (`memcpy`), free it all;
    /// again until the end.
    Round,
    /// Write the whole area page by page over and over, never freeing it.
    Walk,
}

impl fmt::Display for Memload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Memload::Round => "round",
            Memload::Walk => "walk",
        })
    }
}

impl FromStr for Memload {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "round" => Ok(Memload::Round),
            "walk" => Ok(Memload::Walk),
            _ => Err(ValueError(format!(
                "memload '{s}' is not a memload; use round or walk"
            ))),
        }
    }
}

/// The memload's block: `grab_and_touch` allocates and `memcpy` copies 1 MiB at a time.
const MEMLOAD_BLOCK: usize = 1 << 20;

/// What a benchmarked task counts over its run (the original's `struct data_table`).
#[derive(Default)]
struct Table {
    achieved: u64,
    missed_burns: u64,
    met: u64,
    missed_deadlines: u64,
    /// How late the timekeeper's last sleep ended (`slept_interval`), subtracted from the next
    /// period's latency.
    oversleep: Duration,
}

/// A timekeeper's two channels: sleep requests to it, its oversleep back.
#[derive(Clone, Copy)]
struct Timekeeper {
    to: ChannelId,
    from: ChannelId,
}

/// The benchmarked task's timekeeper (group `timer`).
const BENCH_TIMER: Timekeeper = Timekeeper {
    to: ChannelId(0),
    from: ChannelId(1),
};
/// The video or X load's timekeeper (group `loadtimer`).
const LOAD_TIMER: Timekeeper = Timekeeper {
    to: ChannelId(2),
    from: ChannelId(3),
};
/// The first channel of the ring load.
const RING_BASE: usize = 4;
/// A request that tells the timekeeper to stop.
const TIMER_EXIT: u64 = u64::MAX;

impl Interbench {
    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.duration < Duration::from_millis(100) || self.duration > Duration::from_secs(3600) {
            return Err(ParamError::value(
                NAME,
                "duration",
                crate::duration::format_duration(self.duration),
                "is not accepted; use 100ms..1h",
            ));
        }
        if !(1..=1024).contains(&self.load_threads) {
            return Err(ParamError::value(
                NAME,
                "load-threads",
                self.load_threads,
                "is not accepted; use 1..1024",
            ));
        }
        if self.io_size < IO_BLOCK || self.io_size > 64 << 30 {
            return Err(ParamError::value(
                NAME,
                "io-size",
                format_size(self.io_size),
                "is not accepted; use 4KiB..64GiB",
            ));
        }
        if self.mem_size < 1 << 20 || self.mem_size > 64 << 30 {
            return Err(ParamError::value(
                NAME,
                "mem-size",
                format_size(self.mem_size),
                "is not accepted; use 1MiB..64GiB",
            ));
        }
        if self.bench == BenchKind::Custom {
            if !(self.custom_cpu > 0.0 && self.custom_cpu <= 100.0) {
                return Err(ParamError::value(
                    NAME,
                    "cpu",
                    self.custom_cpu,
                    "is not accepted; use a percent of each interval in (0, 100]",
                ));
            }
            if self.custom_interval < Duration::from_micros(100)
                || self.custom_interval > Duration::from_secs(10)
            {
                return Err(ParamError::value(
                    NAME,
                    "interval",
                    crate::duration::format_duration(self.custom_interval),
                    "is not accepted; use 100us..10s",
                ));
            }
        }
        if self.bench.same_load() == Some(self.load) {
            return Err(ParamError::whole(
                NAME,
                format!(
                    "{} is not benchmarked against itself (as in the original)",
                    self.bench
                ),
            ));
        }
        Ok(())
    }

    /// Whether the original runs this pair (a task is never benchmarked against itself).
    pub fn pair_runs(bench: BenchKind, load: LoadKind) -> bool {
        bench.same_load() != Some(load)
    }

    /// How long the load runs before the benchmarked task starts.
    pub fn lead(&self) -> Duration {
        self.duration.min(Duration::from_secs(1))
    }

    fn end(&self) -> Duration {
        self.lead() + self.duration
    }

    /// Tasks of the load group.
    fn load_tasks(&self) -> usize {
        match self.load {
            LoadKind::Burn | LoadKind::Ring => self.load_threads,
            LoadKind::Compile => self.load_threads + 2,
            _ => 1,
        }
    }

    /// Whether the load is a periodic emulation (video, X), which has a timekeeper of its own
    /// unless `load_timer` is off.
    fn load_is_periodic(&self) -> bool {
        matches!(self.load, LoadKind::Video | LoadKind::X)
    }

    /// Whether the benchmarked task has deadlines (all but gaming).
    pub fn has_deadlines(&self) -> bool {
        self.bench != BenchKind::Gaming
    }

    fn unit(&self) -> &'static str {
        if self.rt {
            "us"
        } else {
            "ms"
        }
    }

    fn should_stop<C: Context>(&self, ctx: &C) -> bool {
        ctx.now() >= self.end() || ctx.stop_requested()
    }

    /// `periodic_schedule`: one period of `run` every `interval` whose deadline was `deadline`;
    /// returns the next deadline. `table` is `None` for a load, which is not measured.
    async fn period<C: Context>(
        &self,
        ctx: &C,
        run: Duration,
        interval: Duration,
        mut deadline: Duration,
        table: Option<&mut Table>,
    ) -> Duration {
        // A load's periods are not measured: they count into a table nobody reads.
        let measured = table.is_some();
        let mut scratch = Table::default();
        let t: &mut Table = table.unwrap_or(&mut scratch);
        let start = ctx.now();
        let latency = start
            .saturating_sub(deadline)
            .saturating_sub(std::mem::take(&mut t.oversleep));
        let mut missed_latency = Duration::ZERO;
        if !interval.is_zero() && start > deadline + interval {
            // Missed the deadline even before consuming CPU: skip the run.
            deadline += interval;
            let intervals = ((start - deadline).as_nanos() / interval.as_nanos()) as u32 + 1;
            t.missed_deadlines += intervals as u64;
            t.missed_burns += intervals as u64;
            missed_latency = interval * intervals;
            deadline += interval * intervals;
        } else {
            ctx.compute(run).await;
            let now = ctx.now();
            t.achieved += 1;
            deadline += interval;
            if deadline >= now {
                t.met += 1;
            } else if !interval.is_zero() {
                let intervals = ((now - deadline).as_nanos() / interval.as_nanos()) as u32 + 1;
                t.missed_deadlines += intervals as u64;
                if intervals > 1 {
                    t.missed_burns += intervals as u64;
                }
                missed_latency = interval * intervals;
                deadline += interval * intervals;
            } else {
                deadline = now;
            }
        }
        if measured {
            ctx.record("latency_ns", (latency + missed_latency).as_nanos() as f64);
        }
        if !(interval.is_zero() && deadline <= ctx.now()) {
            // The task has its timekeeper sleep for it, as the original's `periodic_schedule`
            // does, the load's as well as the benchmarked task's (a load's oversleep is not
            // measured).
            if measured {
                t.oversleep = self.sleep_via_timekeeper(ctx, BENCH_TIMER, deadline).await;
            } else if self.load_timer {
                self.sleep_via_timekeeper(ctx, LOAD_TIMER, deadline).await;
            } else {
                ctx.sleep_until(deadline).await;
            }
        }
        deadline
    }

    /// Ask `timer` to sleep until `deadline` and wait for it; returns its oversleep.
    async fn sleep_via_timekeeper<C: Context>(
        &self,
        ctx: &C,
        timer: Timekeeper,
        deadline: Duration,
    ) -> Duration {
        let request = (deadline.as_nanos() as u64).to_le_bytes();
        let mut reply = [0u8; 8];
        if ctx.send(timer.to, &request).await.is_err()
            || ctx.recv(timer.from, &mut reply).await.is_err()
        {
            // No timekeeper to talk to: sleep here.
            ctx.sleep_until(deadline).await;
            return Duration::ZERO;
        }
        Duration::from_nanos(u64::from_le_bytes(reply))
    }

    /// `timekeeping_thread`: sleeps on its task's behalf and reports how late the sleep ended.
    /// It runs SCHED_FIFO 96 where the machine allows (as the original's does), so that its
    /// oversleep is the timer's lateness and what is left is the benchmarked task's own
    /// scheduling latency. The original means to leave a load's timekeeper SCHED_OTHER, but
    /// tests `th->dt` before `initialise_thread` sets it, so the video and X loads' timekeepers
    /// ask for SCHED_FIFO 96 too (interbench 0.30 and 0.31).
    async fn timekeeper<C: Context>(
        &self,
        ctx: &C,
        timer: Timekeeper,
    ) -> Result<(), WorkloadError> {
        let mut request = [0u8; 8];
        loop {
            ctx.recv(timer.to, &mut request).await?;
            let target = u64::from_le_bytes(request);
            if target == TIMER_EXIT {
                return Ok(());
            }
            let target = Duration::from_nanos(target);
            let mut over = Duration::ZERO;
            if target > ctx.now() {
                ctx.sleep_until(target).await;
                over = ctx.now().saturating_sub(target);
            }
            ctx.send(timer.from, &(over.as_nanos() as u64).to_le_bytes())
                .await?;
        }
    }

    /// A periodic emulation (audio, video, X, custom), measured or as a load.
    async fn emulate<C: Context>(&self, ctx: &C, kind: BenchKind, mut table: Option<&mut Table>) {
        // The first deadline is when the task was due to start (the original takes the time when
        // it first runs, which hides a task starved from its start).
        let mut deadline = if table.is_some() {
            self.lead().min(ctx.now())
        } else {
            ctx.now()
        };
        let (run, interval) = match kind {
            BenchKind::Audio => (Duration::from_micros(2_500), Duration::from_micros(50_000)),
            BenchKind::Video => (
                Duration::from_micros(1_000_000 / 60 * 40 / 100),
                Duration::from_micros(1_000_000 / 60),
            ),
            BenchKind::Custom => (
                self.custom_interval.mul_f64(self.custom_cpu / 100.0),
                self.custom_interval,
            ),
            BenchKind::X => {
                'sweep: loop {
                    for i in 0..=100u32 {
                        let run = Duration::from_millis(i as u64);
                        let interval = Duration::from_millis(100 - i as u64);
                        deadline = self
                            .period(ctx, run, interval, deadline, table.as_deref_mut())
                            .await;
                        deadline += run;
                        if self.should_stop(ctx) {
                            break 'sweep;
                        }
                    }
                }
                return;
            }
            BenchKind::Gaming => unreachable!("gaming is not periodic"),
        };
        // do { periodic_schedule } while (!stopped), as the original: at least one period.
        loop {
            deadline = self
                .period(ctx, run, interval, deadline, table.as_deref_mut())
                .await;
            if self.should_stop(ctx) {
                break;
            }
        }
    }

    /// `emulate_game`: 100 ms chunks back to back; latency is how much longer a chunk took.
    async fn game<C: Context>(&self, ctx: &C, table: &mut Table) {
        let chunk = Duration::from_millis(100);
        while !self.should_stop(ctx) {
            let deadline = ctx.now() + chunk;
            ctx.compute(chunk).await;
            let latency = ctx.now().saturating_sub(deadline);
            // The original counts burns in µs here.
            table.achieved += chunk.as_micros() as u64;
            table.missed_burns += latency.as_micros() as u64;
            ctx.record("latency_ns", latency.as_nanos() as f64);
        }
    }

    async fn benchmarked<C: Context>(&self, ctx: &C) -> Result<(), WorkloadError> {
        ctx.sleep_until(self.lead()).await;
        let mut table = Table::default();
        match self.bench {
            BenchKind::Gaming => self.game(ctx, &mut table).await,
            kind => self.emulate(ctx, kind, Some(&mut table)).await,
        }
        ctx.send(BENCH_TIMER.to, &TIMER_EXIT.to_le_bytes()).await?;
        ctx.record("achieved", table.achieved as f64);
        ctx.record("missed_burns", table.missed_burns as f64);
        ctx.record("met", table.met as f64);
        ctx.record("missed_deadlines", table.missed_deadlines as f64);
        Ok(())
    }

    /// `emulate_ring`: each task waits for the token and passes it on.
    async fn ring<C: Context>(&self, ctx: &C, i: usize) -> Result<(), WorkloadError> {
        let n = self.load_threads;
        let next = ChannelId(RING_BASE + (i + 1) % n);
        // The token says whether the ring is stopping. The task that first sees the end passes
        // a stop token on, and every task forwards it and leaves: each task's own look at the
        // clock would not do, since clocks read on different CPUs may disagree by microseconds
        // and a task that saw "not yet" after its successor left would wait forever.
        const GO: u8 = 0;
        const STOP: u8 = 1;
        let mut token = [GO];
        if i == 0 {
            ctx.send(next, &token).await?;
        }
        loop {
            ctx.recv(ChannelId(RING_BASE + i), &mut token).await?;
            if token[0] == GO && self.should_stop(ctx) {
                token[0] = STOP;
            }
            ctx.send(next, &token).await?;
            if token[0] == STOP {
                return Ok(());
            }
        }
    }

    async fn memload<C: Context>(&self, ctx: &C) {
        match self.memload {
            Memload::Walk => {
                while !self.should_stop(ctx) {
                    ctx.touch_memory(self.mem_size).await;
                }
            }
            Memload::Round => self.memload_rounds(ctx).await,
        }
    }

    /// `emulate_memload`: every round allocates and writes `mem-size` a block at a time
    /// (`grab_and_touch`: `malloc` and `memset` of 1 MiB), copies into each block the one half
    /// the area away (`memcpy`: its source read, then the block written), and frees every
    /// block. The original looks at its stop semaphore after the allocation and after each
    /// copy; this one also after each allocation, so that it stops with the run.
    async fn memload_rounds<C: Context>(&self, ctx: &C) {
        let blocks = (self.mem_size / MEMLOAD_BLOCK).max(1);
        let at = |i: usize| i * MEMLOAD_BLOCK;
        'rounds: loop {
            for i in 0..blocks {
                if self.should_stop(ctx) {
                    break 'rounds;
                }
                ctx.touch_memory_at(at(i), MEMLOAD_BLOCK).await;
            }
            for i in 0..blocks {
                if self.should_stop(ctx) {
                    break 'rounds;
                }
                ctx.touch_memory_at(at((i + blocks / 2) % blocks), MEMLOAD_BLOCK)
                    .await;
                ctx.touch_memory_at(at(i), MEMLOAD_BLOCK).await;
            }
            ctx.free_memory().await;
        }
        ctx.free_memory().await;
    }

    async fn load_task<C: Context>(&self, ctx: &C, i: usize) -> Result<(), WorkloadError> {
        match self.load {
            LoadKind::None => ctx.sleep_until(self.end()).await,
            LoadKind::Video | LoadKind::X => {
                let kind = if self.load == LoadKind::Video {
                    BenchKind::Video
                } else {
                    BenchKind::X
                };
                self.emulate(ctx, kind, None).await;
                if self.load_timer {
                    ctx.send(LOAD_TIMER.to, &TIMER_EXIT.to_le_bytes()).await?;
                }
            }
            LoadKind::Burn => loads::burn(ctx, || self.should_stop(ctx)).await,
            LoadKind::Write => loads::write(ctx, self.io_size, || self.should_stop(ctx)).await?,
            LoadKind::Read => loads::read(ctx, self.io_size, || self.should_stop(ctx)).await?,
            LoadKind::Ring => self.ring(ctx, i).await?,
            LoadKind::Compile if i < self.load_threads => {
                loads::burn(ctx, || self.should_stop(ctx)).await
            }
            LoadKind::Compile if i == self.load_threads => {
                loads::write(ctx, self.io_size, || self.should_stop(ctx)).await?
            }
            LoadKind::Compile => loads::read(ctx, self.io_size, || self.should_stop(ctx)).await?,
            LoadKind::Memload => self.memload(ctx).await,
        }
        Ok(())
    }
}

/// Names of the per-pair metrics.
pub mod metrics {
    /// Mean latency.
    pub const LATENCY: &str = "latency";
    /// Latency SD (a real one).
    pub const LATENCY_SD: &str = "latency_sd";
    /// Maximum latency.
    pub const LATENCY_MAX: &str = "latency_max";
    /// 99th percentile latency.
    pub const LATENCY_P99: &str = "latency_p99";
    /// % desired CPU.
    pub const DESIRED_CPU: &str = "desired_cpu";
    /// % deadlines met.
    pub const DEADLINES_MET: &str = "deadlines_met";
}

const NAME: &str = "interbench";

/// The parameters of [`Interbench`], each declared once. The record keeps the names it had
/// before the command line's (`load`, `load_threads`, `io_size`, `mem_size`), and a size or the
/// custom task's settings only where they apply, so that older records compare.
const TABLE: &[Param<Interbench>] = &[
    Param::new(
        ParamDef::value(
            "bench",
            "audio,video,x,gaming",
            "audio,video,x,gaming[,custom]",
            "Benchmarked tasks, comma-separated: audio, video, x, gaming, custom [custom is added by --cpu].",
        )
        .kind(ParamKind::List),
        |w, v| parse_with(NAME, v, str::parse).map(|b| w.bench = b),
        |w| w.bench.to_string(),
    ),
    Param::<Interbench>::new(
        ParamDef::value(
            "loads",
            "none,video,x,burn,write,read,ring,compile,memload",
            "none,video,x,burn,write,read,ring,compile,memload",
            "Background loads, comma-separated: none, video, x, burn, write, read, ring, compile, memload.",
        )
        .kind(ParamKind::List),
        |w, v| parse_with(NAME, v, str::parse).map(|l| w.load = l),
        |w| w.load.to_string(),
    )
    .record_as("load"),
    Param::new(
        ParamDef::value(
            "duration",
            "30s",
            "30s",
            "How long the benchmarked task runs against each load (the load starts up to 1 s earlier).",
        )
        .hyphen_values(),
        |w, v| parse_with(NAME, v, crate::duration::parse_duration).map(|d| w.duration = d),
        |w| crate::duration::format_duration(w.duration),
    ),
    Param::<Interbench>::new(
        ParamDef::value(
            "load-threads",
            "",
            "CPUs",
            "Threads of the burn, ring and compile loads [default: the machine's CPUs: the host's, or the simulated --cpus].",
        )
        .no_default(),
        |w, v| parse_count(NAME, "load-threads", v, 1..=1024).map(|n| w.load_threads = n),
        |w| w.load_threads.to_string(),
    )
    .record_as("load_threads"),
    Param::<Interbench>::new(
        ParamDef::value(
            "io-size",
            "256MiB",
            "256MiB",
            "Size of the read and write loads' files (in a temporary directory, removed afterwards).",
        ),
        |w, v| parse_with(NAME, v, parse_size).map(|n| w.io_size = n),
        |w| format_size(w.io_size),
    )
    .record_as("io_size")
    .recorded_when(|w| matches!(w.load, LoadKind::Write | LoadKind::Read | LoadKind::Compile)),
    Param::<Interbench>::new(
        ParamDef::value(
            "mem-size",
            "1GiB",
            "1GiB",
            "Memory the memload allocates, copies and frees every round (at most half the memory available).",
        ),
        |w, v| parse_with(NAME, v, parse_size).map(|n| w.mem_size = n),
        |w| format_size(w.mem_size),
    )
    .record_as("mem_size")
    .recorded_when(|w| w.load == LoadKind::Memload),
    Param::<Interbench>::new(
        ParamDef::value(
            "memload",
            "round",
            "round|walk",
            "How the memload uses its memory: round, as interbench's (allocate and write it a MiB at a time, copy every MiB from the one half the area away, free it all; again), or walk (write it page by page over and over, never freeing it).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|m| w.memload = m),
        |w| w.memload.to_string(),
    )
    .recorded_when(|w| w.load == LoadKind::Memload),
    Param::<Interbench>::new(
        ParamDef::value(
            "load-timer",
            "on",
            "on|off",
            "Whether a video or X load has its own timekeeper (group loadtimer, SCHED_FIFO 96 where allowed), as interbench's; off: the load sleeps by itself.",
        ),
        |w, v| {
            w.load_timer = match v.trim() {
                "on" => true,
                "off" => false,
                _ => {
                    return Err(ParamError::value(
                        NAME,
                        "load-timer",
                        format!("'{v}'"),
                        "is not accepted; use on or off",
                    ))
                }
            };
            Ok(())
        },
        |w| if w.load_timer { "on" } else { "off" }.to_string(),
    )
    .record_as("load_timer")
    .recorded_when(|w| w.load_is_periodic()),
    Param::<Interbench>::new(
        ParamDef::value(
            "bench-start",
            "runnable",
            "runnable|asleep",
            "How the simulated benchmarked task starts: runnable, with every other task (it must run once to begin its sleep through the lead second); asleep, as interbench's thread, which waits on its start semaphore from before the load is let go (the real backend's thread sleeps at once either way).",
        ),
        |w, v| {
            w.bench_asleep = match v.trim() {
                "runnable" => false,
                "asleep" => true,
                _ => {
                    return Err(ParamError::value(
                        NAME,
                        "bench-start",
                        format!("'{v}'"),
                        "is not accepted; use runnable or asleep",
                    ))
                }
            };
            Ok(())
        },
        |w| if w.bench_asleep { "asleep" } else { "runnable" }.to_string(),
    )
    .record_as("bench_start")
    .recorded_when(|w| w.bench_asleep),
    Param::<Interbench>::new(
        ParamDef::value(
            "cpu",
            "",
            "PCT",
            "Custom task: percent of each interval it runs, e.g. 5 or 2.74 (adds `custom` to the benchmarks).",
        )
        .no_default(),
        |w, v| parse_param(NAME, "cpu", v, "a percent such as 5 or 2.74").map(|p| w.custom_cpu = p),
        |w| w.custom_cpu.to_string(),
    )
    .recorded_when(|w| w.bench == BenchKind::Custom),
    Param::<Interbench>::new(
        ParamDef::value("interval", "10ms", "10ms", "Custom task: its interval."),
        |w, v| {
            parse_with(NAME, v, crate::duration::parse_duration).map(|d| w.custom_interval = d)
        },
        |w| crate::duration::format_duration(w.custom_interval),
    )
    .recorded_when(|w| w.bench == BenchKind::Custom),
    Param::new(
        ParamDef::value(
            "rt",
            "",
            "",
            "Real-time mode (interbench -r): the benchmarked task runs SCHED_FIFO 95, latencies in µs.",
        )
        .kind(ParamKind::Flag)
        .no_default(),
        |w, v| parse_param(NAME, "rt", v, "true or false").map(|r| w.rt = r),
        |w| w.rt.to_string(),
    ),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Interbench, { TABLE.len() }>(TABLE);

impl Preset for Interbench {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "interbench: an interactive task's latency and deadlines under background loads (groups: bench, load).",
        "interbench (seed 004): an interactive task's latency, desired CPU and deadlines under a background load; one configuration per (bench, load) pair",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "interbench's audio and video benchmarks under a CPU burner, simulated CFS",
            "run interbench --bench audio,video --loads none,burn --duration 2s --backend sim --policy cfs --cpus 2",
        ),
        Example::new(
            "The audio benchmark's latency at two nice levels",
            "sweep interbench --bench audio --loads burn --duration 2s --backend sim --cpus 2 --vary bench.nice=0,10",
        ),
    ])
    .tables(Tables {
        seed: None,
        own: Some(OwnTables {
            title: "interbench tables (seed 004)",
            render: tables,
            better_by: "first significant of: deadlines met, desired CPU, max latency, latency",
            points: &["bench", "load"],
        }),
    });
    const TABLE: &'static [Param<Self>] = TABLE;

    fn with_defaults(host_cpus: usize) -> Self {
        Interbench {
            load_threads: host_cpus,
            ..Interbench::default()
        }
    }

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }

    /// Every (benchmark, load) pair the original runs: the benchmarks default to audio, video, x
    /// and gaming, `cpu` adds `custom`, and a task is not benchmarked against itself.
    fn configurations(base: &Self, lists: &ListValues) -> Result<Vec<Self>, ParamError> {
        let mut benches: Vec<BenchKind> = lists
            .get("bench")
            .iter()
            .map(|b| parse_with(NAME, b, str::parse))
            .collect::<Result<_, _>>()?;
        let loads: Vec<LoadKind> = lists
            .get("loads")
            .iter()
            .map(|l| parse_with(NAME, l, str::parse))
            .collect::<Result<_, _>>()?;
        if lists.given("cpu") && !benches.contains(&BenchKind::Custom) {
            benches.push(BenchKind::Custom);
        }
        if benches.contains(&BenchKind::Custom) && !lists.given("cpu") {
            return Err(ParamError::sentence(
                NAME,
                &["cpu", "interval"],
                "the custom benchmark needs {cpu} PCT (and {interval} DUR)",
            ));
        }
        let mut out = Vec::new();
        for &bench in &benches {
            for &load in &loads {
                if !Interbench::pair_runs(bench, load) {
                    continue;
                }
                let w = Interbench {
                    bench,
                    load,
                    ..base.clone()
                };
                w.validate()?;
                out.push(w);
            }
        }
        if out.is_empty() {
            return Err(ParamError::whole(
                NAME,
                "no (benchmark, load) pair to run: a task is not benchmarked against itself",
            ));
        }
        Ok(out)
    }

    /// The timekeepers (`timer`, and `loadtimer` of a video or X load) run SCHED_FIFO 96, as
    /// the original's, where real-time policies are allowed (the original, too, carries on
    /// without); `rt` puts the benchmarked task in SCHED_FIFO 95 (interbench -r).
    fn group_defaults(&self, realtime_allowed: bool) -> Vec<GroupDefault> {
        let mut out = Vec::new();
        if realtime_allowed {
            for group in ["timer", "loadtimer"] {
                out.push(GroupDefault {
                    group,
                    knobs: Knobs {
                        policy: Some(SchedPolicy::Fifo(96)),
                        ..Knobs::default()
                    },
                    kind: DefaultKind::UnlessGiven,
                    origin: None,
                });
            }
        }
        if self.rt {
            out.push(GroupDefault {
                group: "bench",
                knobs: Knobs {
                    policy: Some(SchedPolicy::Fifo(95)),
                    ..Knobs::default()
                },
                kind: DefaultKind::ForcedBy("rt"),
                origin: None,
            });
        }
        out
    }

    /// memload's memory and the read, write and compile loads' files.
    fn host_needs(&self) -> HostNeeds {
        HostNeeds {
            memory: (self.load == LoadKind::Memload)
                .then_some((SizedBy::Param("mem-size"), self.mem_size)),
            files: match self.load {
                LoadKind::Write | LoadKind::Read => Some(("io-size", self.io_size)),
                LoadKind::Compile => Some(("io-size", 2 * self.io_size)),
                _ => None,
            },
            real_kernel: None,
            simulated: None,
            programs: None,
            port: None,
        }
    }
}

// ---- interbench's own tables (its `WorkloadDef`'s hooks) ----
//
// The tables of interbench.c (`show_latencies` and the headers of `main`), as seed 004
// prints them: one table per benchmarked task, one row per load —
//
// ```text
// --- Benchmarking simulated cpu of Audio nice 19 in the presence of simulated ---
// Load  Latency +/- SD (ms)  Max Latency  % Desired CPU  % Deadlines Met
// ```
//
// With several repetitions each cell is the mean over them, followed by its confidence interval.
// Comparing records marks a row with `*` where that record is significantly better than the
// first, judged as the seed reads its tables: from right to left (deadlines met, desired CPU, max
// latency, mean latency), the first metric whose difference is significant decides.

/// Metrics in the seed's order of importance (most important first) and whether higher is better.
const IMPORTANCE: [(&str, bool); 4] = [
    ("deadlines_met", true),
    ("desired_cpu", true),
    ("latency_max", false),
    ("latency", false),
];

fn param<'a>(c: &'a ConfigResult, key: &str) -> &'a str {
    c.params.get(key).map(String::as_str).unwrap_or("-")
}

/// The original's capitalised label of a benchmark or load named in a record (`x` → `X`).
fn bench_label(c: &ConfigResult) -> &'static str {
    param(c, "bench")
        .parse::<BenchKind>()
        .map_or("?", |b| b.label())
}

fn load_label(c: &ConfigResult) -> &'static str {
    param(c, "load")
        .parse::<LoadKind>()
        .map_or("?", |l| l.label())
}

/// `--- Benchmarking simulated cpu of Audio nice 19 in the presence of simulated nice -5 ---`
fn header(c: &ConfigResult) -> String {
    let nice = |group: &str| {
        c.groups
            .iter()
            .find(|g| g.name == group)
            .and_then(|g| g.knobs.nice)
            .filter(|&n| n != 0)
    };
    let mut h = format!("--- Benchmarking simulated cpu of {} ", bench_label(c));
    if param(c, "rt") == "true" {
        h.push_str("real time ");
    } else if let Some(n) = nice("bench") {
        h.push_str(&format!("nice {n} "));
    }
    h.push_str("in the presence of simulated ");
    if let Some(n) = nice("load") {
        h.push_str(&format!("nice {n} "));
    }
    h.push_str("---");
    h
}

/// A cell: the mean over repetitions, and its CI when there are several.
fn cell(c: &ConfigResult, metric: &str, level: f64, stats: &dyn TableStats) -> String {
    let values = metric_values(c, metric);
    if values.is_empty() {
        return "-".into();
    }
    let (mean, half_width) = stats.mean_ci(&values, level);
    if values.len() > 1 && half_width.is_finite() {
        format!("{} ±{}", num(mean), num(half_width))
    } else {
        num(mean)
    }
}

/// A metric's value in each repetition of a configuration.
fn metric_values(c: &ConfigResult, metric: &str) -> Vec<f64> {
    c.repetitions
        .iter()
        .filter_map(|r| r.metrics.get(metric).copied())
        .collect()
}

/// Whether `c` is significantly better than `base` by the first significant metric in the
/// seed's order of importance.
fn better(c: &ConfigResult, base: &ConfigResult, level: f64, stats: &dyn TableStats) -> bool {
    for (metric, higher) in IMPORTANCE {
        let (a, b) = (metric_values(base, metric), metric_values(c, metric));
        if a.len() < 2 || b.len() < 2 {
            continue;
        }
        if let Some(diff) = stats.significant_diff(&a, &b, level) {
            // diff = b − a
            return if higher { diff > 0.0 } else { diff < 0.0 };
        }
    }
    false
}

/// The tables of one record; `against` marks rows significantly better than that record's row
/// for the same (bench, load) pair.
fn tables(record: &RunRecord, against: Option<&RunRecord>, stats: &dyn TableStats) -> String {
    let level = record.level;
    let unit = if record.configs.iter().any(|c| param(c, "rt") == "true") {
        "us"
    } else {
        "ms"
    };
    let mut out = String::new();
    let mut benches: Vec<&str> = Vec::new();
    for c in &record.configs {
        let b = param(c, "bench");
        if !benches.contains(&b) {
            benches.push(b);
        }
    }
    let runs = record
        .configs
        .iter()
        .map(|c| c.repetitions.len())
        .max()
        .unwrap_or(0);
    for bench in benches {
        let rows: Vec<&ConfigResult> = record
            .configs
            .iter()
            .filter(|c| param(c, "bench") == bench)
            .collect();
        out.push_str(&header(rows[0]));
        out.push('\n');
        let deadlines = bench != "gaming";
        let mut head = vec![
            "Load".to_string(),
            format!("Latency +/- SD ({unit})"),
            "Max Latency".into(),
            "% Desired CPU".into(),
        ];
        if deadlines {
            head.push("% Deadlines Met".into());
        }
        if against.is_some() {
            head.push(String::new());
        }
        let mut t = TextTable::new(head);
        for c in rows {
            let mut row = vec![
                load_label(c).to_string(),
                format!(
                    "{} +/- {}",
                    cell(c, "latency", level, stats),
                    cell(c, "latency_sd", level, stats)
                ),
                cell(c, "latency_max", level, stats),
                cell(c, "desired_cpu", level, stats),
            ];
            if deadlines {
                row.push(cell(c, "deadlines_met", level, stats));
            }
            if let Some(base) = against {
                let other = base.configs.iter().find(|o| {
                    param(o, "bench") == param(c, "bench") && param(o, "load") == param(c, "load")
                });
                row.push(match other {
                    Some(o) if better(c, o, level, stats) => "*".into(),
                    _ => String::new(),
                });
            }
            t.row(row);
        }
        out.push_str(&t.render());
        out.push('\n');
    }
    if runs > 1 {
        out.push_str(&format!(
            "cells: mean over {runs} repetitions ±{level}% confidence interval; SD is within a run\n"
        ));
    }
    out
}

impl Workload for Interbench {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn label(&self) -> String {
        format!("bench={} load={}", self.bench, self.load)
    }

    fn plan(&self) -> Plan {
        Plan {
            groups: vec![
                GroupPlan {
                    name: "bench",
                    tasks: 1,
                    spawn: 0,
                },
                GroupPlan {
                    name: "timer",
                    tasks: 1,
                    spawn: 0,
                },
                GroupPlan {
                    name: "load",
                    tasks: self.load_tasks(),
                    spawn: 0,
                },
                GroupPlan {
                    name: "loadtimer",
                    tasks: usize::from(self.load_is_periodic() && self.load_timer),
                    spawn: 0,
                },
            ],
            channels: RING_BASE
                + if self.load == LoadKind::Ring {
                    self.load_threads
                } else {
                    0
                },
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: TaskMode::GroupProcesses,
            transport: Transport::Pipe,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        match task.group {
            0 => self.benchmarked(ctx).await,
            1 => self.timekeeper(ctx, BENCH_TIMER).await,
            2 => self.load_task(ctx, task.index).await,
            _ => self.timekeeper(ctx, LOAD_TIMER).await,
        }
    }

    /// The load and its timekeeper first (the load is running when the benchmarked task starts),
    /// then the benchmarked task's timekeeper and the task.
    fn start_order(&self) -> Vec<usize> {
        let n = self.plan().total_tasks();
        (2..n).chain([1, 0]).collect()
    }

    /// With `bench-start asleep`, the benchmarked task (task 0), whose body begins by sleeping
    /// through the lead.
    fn start_asleep(&self) -> Vec<(usize, Duration)> {
        if self.bench_asleep {
            vec![(0, self.lead())]
        } else {
            Vec::new()
        }
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        let u = self.unit();
        let mut defs = vec![
            metric(metrics::LATENCY, u, Better::Lower, "mean latency of the benchmarked task's periods (how late it ran after its deadline, plus interval × missed periods)"),
            metric(metrics::LATENCY_SD, u, Better::Lower, "standard deviation of the latencies (a real one; the original's is closer to the RMS)"),
            metric(metrics::LATENCY_MAX, u, Better::Lower, "largest latency"),
            metric(metrics::LATENCY_P99, u, Better::Lower, "99th percentile of the latencies (not in the original)"),
            metric(metrics::DESIRED_CPU, "%", Better::Higher, "runs achieved / (achieved + missed), percent"),
        ];
        if self.has_deadlines() {
            defs.push(metric(
                metrics::DEADLINES_MET,
                "%",
                Better::Higher,
                "deadlines met / (met + missed), percent",
            ));
        }
        defs
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let sum = |m: &str| outcome.sum(&plan, Some(0), m);
        let samples: Vec<f64> = outcome
            .tasks
            .first()
            .and_then(|t| t.samples.get("latency_ns"))
            .cloned()
            .unwrap_or_default();
        if samples.is_empty() {
            return Err(WorkloadError::Integrity(
                "the benchmarked task completed no period".into(),
            ));
        }
        let scale = if self.rt { 1e3 } else { 1e6 };
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let sd = if samples.len() > 1 {
            (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        let max = samples.iter().cloned().fold(0.0, f64::max);
        let mut hist = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        for &s in &samples {
            hist.record(s.max(0.0) as u64)
                .expect("auto-resizing histogram");
        }
        let (achieved, missed_burns) = (sum("achieved"), sum("missed_burns"));
        let desired = if achieved > 0.0 {
            100.0 * achieved / (achieved + missed_burns)
        } else {
            0.0
        };
        let mut m = BTreeMap::from([
            (metrics::LATENCY.to_string(), mean / scale),
            (metrics::LATENCY_SD.to_string(), sd / scale),
            (metrics::LATENCY_MAX.to_string(), max / scale),
            (
                // The histogram keeps 3 significant digits; never report more than the maximum.
                metrics::LATENCY_P99.to_string(),
                (hist.value_at_percentile(99.0) as f64).min(max) / scale,
            ),
            (metrics::DESIRED_CPU.to_string(), desired),
        ]);
        if self.has_deadlines() {
            let (met, missed) = (sum("met"), sum("missed_deadlines"));
            let pct = if met > 0.0 {
                100.0 * met / (met + missed)
            } else {
                0.0
            };
            m.insert(metrics::DEADLINES_MET.to_string(), pct);
        }
        Ok(m)
    }

    fn classic_line(&self, m: &BTreeMap<String, f64>) -> Option<String> {
        let mut line = format!(
            "{}\t{:6.1} +/- {:<8.1}{:6.1}\t\t{:4.3}",
            self.load.label(),
            m.get(metrics::LATENCY)?,
            m.get(metrics::LATENCY_SD)?,
            m.get(metrics::LATENCY_MAX)?,
            m.get(metrics::DESIRED_CPU)?
        );
        if let Some(d) = m.get(metrics::DEADLINES_MET) {
            line.push_str(&format!("\t{d:11.3}"));
        }
        Some(line)
    }

    fn expected_time(&self) -> Option<Duration> {
        Some(self.end() * 2 + Duration::from_secs(60))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("256M").unwrap(), 256 << 20);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert!(parse_size("12 parsecs").unwrap_err().0.contains("256MiB"));
        assert_eq!(format_size(256 << 20), "256MiB");
        assert_eq!(format_size(1 << 30), "1GiB");
    }

    #[test]
    fn pairs_and_parameters_are_checked() {
        let w = Interbench {
            bench: BenchKind::Video,
            load: LoadKind::Video,
            ..Interbench::default()
        };
        assert!(w
            .validate()
            .unwrap_err()
            .to_string()
            .contains("against itself"));
        assert!(!Interbench::pair_runs(BenchKind::X, LoadKind::X));
        let w = Interbench {
            bench: BenchKind::Custom,
            custom_cpu: 0.0,
            ..Interbench::default()
        };
        assert!(w.validate().unwrap_err().to_string().contains("cpu 0"));
        assert!("walk"
            .parse::<LoadKind>()
            .unwrap_err()
            .0
            .contains("memload"));
        assert_eq!("Compile".parse::<LoadKind>().unwrap(), LoadKind::Compile);
    }
}
