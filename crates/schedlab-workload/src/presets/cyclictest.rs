//! `cyclictest` — the wakeup-latency test of rt-tests (`src/cyclictest/cyclictest.c`, rt-tests
//! 2.x, Thomas Gleixner and Clark Williams; GPL-2.0, read, not copied): `threads` threads, each
//! waking periodically from an absolute `clock_nanosleep` and timing how late it woke.
//!
//! What is measured, as `timerthread` (its default clock_nanosleep mode, TIMER_ABSTIME) does:
//! thread `i` has the interval `interval + i × distance`; it reads the clock, sets its first
//! expiry one interval later, and then loops: sleep until the expiry, read the clock, record
//! `now − expiry` (the latency: the timer's and the scheduler's lateness together), advance the
//! expiry by one interval and, if the thread woke so late that the new expiry has passed too,
//! by as many more intervals as it takes (cyclictest's `while (tsgreater(&now, &next))`; those
//! skipped periods are counted here as `overruns`). A thread ends after `loops` cycles or when a
//! wakeup comes at or after `duration` from its start, whichever is first.
//!
//! Per thread and overall: the latencies' minimum, mean, maximum, percentiles (from an HDR
//! histogram of every sample, in ns) and cycles; the per-thread table is printed in cyclictest's
//! own layout (`T: 0 (  -) P:90 I:1000 C: ... Min: Act: Avg: Max:`, µs).
//!
//! `histogram US` is cyclictest's `-h/--histogram US` (`-h` is help here): every latency,
//! truncated to whole µs as cyclictest's `calcdiff` does, counts in its 1 µs bucket below US, or
//! as an overflow at or above it; the buckets are printed after the run in `print_hist`'s layout
//! (`# Histogram`, one row per µs with a column per thread, then `# Total:`, `# Min Latencies:`,
//! `# Avg Latencies:`, `# Max Latencies:`, `# Histogram Overflows:`). As in cyclictest, a
//! histogram gives every thread the first thread's interval (`distance` is ignored). The
//! buckets are kept in the record as the repetition's values `tI_hist_B` (only those that
//! counted something), which feed the histogram table, not the summary; the overflows are
//! metrics. `histofall US` is cyclictest's `-H/--histofall US`: the histogram of `histogram US`
//! with one more column over all threads when there are two or more (each row's sum and the
//! total's, the largest maximum, the overflows' sum; nothing under the minima and averages).
//! `histfile PATH` is cyclictest's `--histfile`: the histogram goes to PATH instead of standard
//! output, in the same layout (a sweep writes each configuration's, after a `#` line naming
//! it); the path is checked with the run's other outputs before anything starts, and written
//! through schedlab's one writer once the run has ended. Not printed: cyclictest's
//! `# Histogram Overflow at cycle number:` list (a record holds several repetitions, each with
//! its own cycle numbers).
//!
//! Priority and policy are cyclictest's: `--priority P` alone means SCHED_FIFO P; `--sched-policy
//! fifo|rr` without a priority takes threads + 1, as the original's default; all threads share
//! the priority (the original's default since `--priospread` became optional). They become the
//! knobs of the group `cyclic` (so `--priority` and a `--group cyclic:policy=` cannot both be
//! given); on the real kernel a real-time group runs under the supervisor of docs/safety.md
//! (priority 99 is refused there).
//!
//! Deliberate differences, each because schedlab's model of a run says so:
//! - `affinity` pins the whole group to the CPU list; the original pins thread `i` to the
//!   list's `i`-th CPU round robin. With one CPU (`-a 2`) they are the same.
//! - `duration` ends each thread at its own start + duration, the original ends all threads
//!   when the first one passes it; the difference is at most one interval.
//! - The run is bounded: `duration` defaults to 5 s (the original runs until interrupted), and
//!   `threads × cycles` is at most [`MAX_SAMPLES`] because every sample is kept for the exact
//!   percentiles.
//! - A background load can run beside the measuring threads (`load`: burn or compile, the
//!   emulations of interbench's loads of the same names), starting [`LOAD_LEAD`] before them.
//!
//! On the simulator the sleep is a timer event at the expiry, and the wakeup goes through the
//! machine's wakeup path and the policy (`select_task_rq`, `wakeup_preempt`, the switch), so the
//! latency is the policy's; the simulated timer itself is exact (no hrtimer slack).

use super::def::{Example, FileOutput, SeedTable, Tables, WorkloadDef};
use super::loads::{self, IO_BLOCK};
use super::params::{
    check_product, cross_configurations, param_defs, parse_count, parse_with, ListValues, Param,
    ParamDef, Preset,
};
use super::{metric, DefaultKind, GroupDefault, HostNeeds, Outcome, Workload};
use crate::context::{Context, WorkloadError};
use crate::cpuset::CpuSet;
use crate::duration::{format_duration, parse_duration};
use crate::error::{ParamError, ValueError};
use crate::knobs::{Knobs, SchedPolicy};
use crate::plan::{GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, ConfigResult, MetricDef};
use crate::table::Table;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

const NAME: &str = "cyclictest";

/// The most latency samples one repetition keeps (threads × cycles): 160 MB of samples.
pub const MAX_SAMPLES: u128 = 20_000_000;

/// The most measuring threads.
const MAX_THREADS: usize = 1024;

/// The largest histogram, in 1 µs buckets (cyclictest's `HIST_MAX`).
const HIST_MAX: usize = 1_000_000;

/// How long the load runs before the measuring threads start.
pub const LOAD_LEAD: Duration = Duration::from_millis(500);

/// The background load beside the measuring threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CyclicLoad {
    /// Nothing.
    None,
    /// `load-threads` CPU burners.
    Burn,
    /// Burners, a file writer and a file reader (interbench's compile load).
    Compile,
}

impl fmt::Display for CyclicLoad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CyclicLoad::None => "none",
            CyclicLoad::Burn => "burn",
            CyclicLoad::Compile => "compile",
        })
    }
}

impl FromStr for CyclicLoad {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "none" => Ok(CyclicLoad::None),
            "burn" => Ok(CyclicLoad::Burn),
            "compile" => Ok(CyclicLoad::Compile),
            _ => Err(ValueError::new(format!(
                "load '{s}' is not accepted; use none, burn or compile"
            ))),
        }
    }
}

/// cyclictest's `--policy` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CyclicPolicy {
    /// SCHED_OTHER (`other` or `normal`).
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
}

impl fmt::Display for CyclicPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CyclicPolicy::Other => "other",
            CyclicPolicy::Batch => "batch",
            CyclicPolicy::Idle => "idle",
            CyclicPolicy::Fifo => "fifo",
            CyclicPolicy::Rr => "rr",
        })
    }
}

impl FromStr for CyclicPolicy {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "other" | "normal" => Ok(CyclicPolicy::Other),
            "batch" => Ok(CyclicPolicy::Batch),
            "idle" => Ok(CyclicPolicy::Idle),
            "fifo" => Ok(CyclicPolicy::Fifo),
            "rr" => Ok(CyclicPolicy::Rr),
            _ => Err(ValueError::new(format!(
                "sched-policy '{s}' is not accepted; use other, normal, batch, idle, fifo or rr"
            ))),
        }
    }
}

/// cyclictest: periodic threads timing their wakeups.
#[derive(Clone, Debug, PartialEq)]
pub struct Cyclictest {
    /// Measuring threads (`-t`).
    pub threads: usize,
    /// Interval of the first thread (`-i`).
    pub interval: Duration,
    /// How much longer each next thread's interval is (`-d`).
    pub distance: Duration,
    /// Real-time priority (`-p`); 0: none.
    pub priority: u8,
    /// Scheduling policy (`--policy`).
    pub policy: CyclicPolicy,
    /// CPUs the threads run on (`-a`); `None`: wherever the scheduler puts them.
    pub affinity: Option<CpuSet>,
    /// Cycles per thread (`-l`); 0: until `duration`.
    pub loops: u64,
    /// How long each thread measures (`-D`); zero: until `loops`.
    pub duration: Duration,
    /// Background load.
    pub load: CyclicLoad,
    /// Burners of the burn and compile loads.
    pub load_threads: usize,
    /// Size of the compile load's files.
    pub io_size: usize,
    /// `-h/--histogram`: 1 µs buckets per thread; 0: no histogram.
    pub histogram: usize,
    /// `-H/--histofall`: the histogram has a column over all threads.
    pub histofall: bool,
    /// `--histfile`: where the histogram is written instead of standard output (empty: it is
    /// printed with the per-thread lines).
    pub histfile: String,
}

impl Default for Cyclictest {
    fn default() -> Self {
        Cyclictest {
            threads: 1,
            interval: Duration::from_micros(1000),
            distance: Duration::from_micros(500),
            priority: 0,
            policy: CyclicPolicy::Other,
            affinity: None,
            loops: 0,
            duration: Duration::from_secs(5),
            load: CyclicLoad::None,
            load_threads: 2,
            io_size: 64 << 20,
            histogram: 0,
            histofall: false,
            histfile: String::new(),
        }
    }
}

impl Cyclictest {
    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(ParamError::value(
                NAME,
                "threads",
                self.threads,
                format!("is not accepted; use 1..{MAX_THREADS}"),
            ));
        }
        if self.interval < Duration::from_micros(10) || self.interval > Duration::from_secs(10) {
            return Err(ParamError::value(
                NAME,
                "interval",
                format_duration(self.interval),
                "is not accepted; use 10us..10s (with a unit: 1000us, 1ms)",
            ));
        }
        if self.distance > Duration::from_secs(10) {
            return Err(ParamError::value(
                NAME,
                "distance",
                format_duration(self.distance),
                "is not accepted; use 0..10s",
            ));
        }
        if self.priority > 99 {
            return Err(ParamError::value(
                NAME,
                "priority",
                self.priority,
                "is not accepted; use 0..99 (0: no real-time priority)",
            ));
        }
        if self.loops == 0 && self.duration.is_zero() {
            return Err(ParamError::params(
                NAME,
                &["loops", "duration"],
                "are both 0: give a number of loops or a duration (the run must end)",
            ));
        }
        if self.duration > Duration::from_secs(3600) {
            return Err(ParamError::value(
                NAME,
                "duration",
                format_duration(self.duration),
                "is not accepted; use 0 (with loops) or up to 1h",
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
        if self.io_size < IO_BLOCK || self.io_size > 16 << 30 {
            return Err(ParamError::value(
                NAME,
                "io-size",
                super::interbench::format_size(self.io_size),
                "is not accepted; use 4KiB..16GiB",
            ));
        }
        if !self.histfile.is_empty() && self.histogram == 0 {
            return Err(ParamError::params(
                NAME,
                &["histfile", "histogram"],
                format!(
                    "histfile '{}' is where the histogram goes, and none is asked for: give --histogram US or --histofall US",
                    self.histfile
                ),
            ));
        }
        if let Err(e) = self.sched_policy() {
            return Err(ParamError::params(NAME, &["priority", "sched-policy"], e));
        }
        check_product(
            NAME,
            &["threads", "loops", "duration", "interval"],
            "latency samples",
            "threads × cycles per thread",
            &[self.threads, self.cycles_bound()],
            MAX_SAMPLES,
        )?;
        // The run itself is bounded too when only loops are given.
        if self.span() > Duration::from_secs(24 * 3600) {
            return Err(ParamError::params(
                NAME,
                &["loops", "interval", "distance"],
                format!(
                    "ask for {} of measuring (loops × the longest interval); accepted: at most 24h",
                    format_duration(self.span())
                ),
            ));
        }
        Ok(())
    }

    /// Thread `i`'s interval: `interval + i × distance` (the same for all with a histogram,
    /// as in cyclictest).
    pub fn thread_interval(&self, i: usize) -> Duration {
        if self.histogram > 0 {
            return self.interval;
        }
        self.interval + self.distance * i as u32
    }

    /// The most cycles one thread can make (loops, or the duration's periods of the shortest
    /// interval).
    fn cycles_bound(&self) -> usize {
        let by_time = if self.duration.is_zero() {
            u128::MAX
        } else {
            self.duration.as_nanos() / self.interval.as_nanos().max(1) + 1
        };
        let by_loops = if self.loops == 0 {
            u128::MAX
        } else {
            self.loops as u128
        };
        usize::try_from(by_time.min(by_loops)).unwrap_or(usize::MAX)
    }

    /// How long the measuring lasts: the duration, or loops × the longest interval.
    pub fn span(&self) -> Duration {
        let longest = self.thread_interval(self.threads.saturating_sub(1));
        let by_loops = if self.loops == 0 {
            Duration::MAX
        } else {
            longest.saturating_mul(u32::try_from(self.loops).unwrap_or(u32::MAX))
        };
        if self.duration.is_zero() {
            by_loops
        } else {
            self.duration.min(by_loops)
        }
    }

    /// When the measuring threads start: after the load's lead, if there is a load.
    pub fn lead(&self) -> Duration {
        if self.load == CyclicLoad::None {
            Duration::ZERO
        } else {
            LOAD_LEAD
        }
    }

    /// The scheduling policy of the measuring threads, cyclictest's way: a priority without a
    /// real-time policy means SCHED_FIFO; fifo or rr without a priority takes threads + 1.
    /// `None`: the user's knobs (SCHED_OTHER unless `--group cyclic:policy=` says otherwise).
    pub fn sched_policy(&self) -> Result<Option<SchedPolicy>, String> {
        let prio = |p: u8| -> Result<u8, String> {
            if p > 0 {
                return Ok(p);
            }
            let default = self.threads + 1;
            u8::try_from(default)
                .ok()
                .filter(|d| *d <= 99)
                .ok_or_else(|| {
                    format!(
                        "give a priority: fifo and rr default to threads + 1 = {default}, above 99"
                    )
                })
        };
        Ok(match (self.policy, self.priority) {
            (CyclicPolicy::Other, 0) => None,
            (CyclicPolicy::Batch, 0) => Some(SchedPolicy::Batch),
            (CyclicPolicy::Idle, 0) => Some(SchedPolicy::Idle),
            (CyclicPolicy::Rr, p) => Some(SchedPolicy::Rr(prio(p)?)),
            (_, p) => Some(SchedPolicy::Fifo(prio(p)?)),
        })
    }

    /// Tasks of the load group.
    fn load_tasks(&self) -> usize {
        match self.load {
            CyclicLoad::None => 0,
            CyclicLoad::Burn => self.load_threads,
            CyclicLoad::Compile => self.load_threads + 2,
        }
    }

    /// When the load stops: the measuring's end.
    fn load_end(&self) -> Duration {
        self.lead().saturating_add(self.span())
    }

    /// One measuring thread: cyclictest's `timerthread` in clock_nanosleep mode.
    async fn measure<C: Context>(&self, ctx: &C, i: usize) -> Result<(), WorkloadError> {
        if !self.lead().is_zero() {
            ctx.sleep_until(self.lead()).await;
        }
        let interval = self.thread_interval(i);
        let start = ctx.now();
        let stop = (!self.duration.is_zero()).then(|| start + self.duration);
        let mut next = start + interval;
        let (mut cycles, mut overruns) = (0u64, 0u64);
        loop {
            ctx.sleep_until(next).await;
            let now = ctx.now();
            ctx.record(LATENCY_NS, now.saturating_sub(next).as_nanos() as f64);
            cycles += 1;
            if (self.loops > 0 && cycles >= self.loops)
                || stop.is_some_and(|s| now >= s)
                || ctx.stop_requested()
            {
                break;
            }
            next += interval;
            // Woke after the next expiry too: skip the periods that have passed, as the
            // original does; a bounded loop (the run's span bounds the periods).
            while now > next {
                next += interval;
                overruns += 1;
            }
        }
        ctx.record("cycles", cycles as f64);
        ctx.record("overruns", overruns as f64);
        Ok(())
    }

    fn load_should_stop<C: Context>(&self, ctx: &C) -> bool {
        ctx.now() >= self.load_end() || ctx.stop_requested()
    }

    async fn load_task<C: Context>(&self, ctx: &C, i: usize) -> Result<(), WorkloadError> {
        match self.load {
            CyclicLoad::None => {}
            CyclicLoad::Burn => loads::burn(ctx, || self.load_should_stop(ctx)).await,
            CyclicLoad::Compile if i < self.load_threads => {
                loads::burn(ctx, || self.load_should_stop(ctx)).await
            }
            CyclicLoad::Compile if i == self.load_threads => {
                loads::write(ctx, self.io_size, || self.load_should_stop(ctx)).await?
            }
            CyclicLoad::Compile => {
                loads::read(ctx, self.io_size, || self.load_should_stop(ctx)).await?
            }
        }
        Ok(())
    }
}

/// The samples a measuring thread records, one per cycle (ns).
const LATENCY_NS: &str = "latency_ns";

/// Overall percentiles: (metric name, quantile).
const PERCENTILES: [(&str, f64); 4] = [
    ("latency_p50", 50.0),
    ("latency_p90", 90.0),
    ("latency_p99", 99.0),
    ("latency_p99.9", 99.9),
];

/// The per-thread metrics: (suffix, unit, description).
const PER_THREAD: [(&str, &str, &str); 6] = [
    ("cycles", "cycles", "cycles of the thread"),
    ("min", "us", "the thread's smallest latency"),
    ("act", "us", "the thread's last latency (cyclictest's Act)"),
    ("avg", "us", "the thread's mean latency"),
    ("max", "us", "the thread's largest latency"),
    ("p99", "us", "the thread's 99th percentile latency"),
];

/// Per-thread metric `suffix` of thread `i` (`t0_max`).
fn thread_metric(i: usize, suffix: &str) -> String {
    format!("t{i}_{suffix}")
}

/// The repetition's value holding thread `i`'s count of latencies in the µs bucket `b`.
fn hist_key(i: usize, b: usize) -> String {
    format!("t{i}_hist_{b}")
}

/// cyclictest's histogram of latencies `samples` (ns): the counts of the whole-µs buckets
/// below `size` that counted something, and how many were at or above it (overflows).
fn us_buckets(samples: &[f64], size: usize) -> (BTreeMap<usize, u64>, u64) {
    let mut buckets = BTreeMap::new();
    let mut overflows = 0;
    for &ns in samples {
        // cyclictest's calcdiff truncates to whole µs.
        let us = (ns.max(0.0) / 1e3) as usize;
        if us >= size {
            overflows += 1;
        } else {
            *buckets.entry(us).or_insert(0) += 1;
        }
    }
    (buckets, overflows)
}

/// One thread's column of cyclictest's histogram printout, in whole µs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistColumn {
    /// Latencies counted in each 1 µs bucket below the histogram's size (by µs; absent: 0).
    pub buckets: BTreeMap<usize, u64>,
    /// The thread's smallest latency.
    pub min: u64,
    /// Its mean latency, truncated.
    pub avg: u64,
    /// Its largest latency.
    pub max: u64,
    /// Latencies at or above the histogram's size.
    pub overflows: u64,
}

/// cyclictest's histogram printout (`print_hist`) of `rows` 1 µs buckets, one column per
/// thread: the `# Histogram` rows (`%06d` bucket, then `%06lu` counts separated by tabs), then
/// `# Total:` (`%09llu`), `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:` and
/// `# Histogram Overflows:` (`%05lu` each), and a blank line. With `all` (`--histofall`) and
/// two columns or more, as cyclictest's: each row ends with its sum over the threads (after a
/// tab), the total with the sum of the totals, the maxima with the largest, the overflows with
/// their sum; the minima and averages get no such column.
pub fn histogram_text(rows: usize, columns: &[HistColumn], all: bool) -> String {
    let all = all && columns.len() > 1;
    let mut out = String::from("# Histogram\n");
    for i in 0..rows {
        let counts: Vec<u64> = (columns.iter())
            .map(|c| c.buckets.get(&i).copied().unwrap_or(0))
            .collect();
        let shown: Vec<String> = counts.iter().map(|n| format!("{n:06}")).collect();
        out.push_str(&format!("{i:06} {}", shown.join("\t")));
        if all {
            out.push_str(&format!("\t{:06}", counts.iter().sum::<u64>()));
        }
        out.push('\n');
    }
    // One line of `label` with each column's value, and with `summary` over them if `all`.
    let line = |label: &str,
                width: usize,
                value: &dyn Fn(&HistColumn) -> u64,
                summary: Option<fn(u64, u64) -> u64>| {
        let values: Vec<u64> = columns.iter().map(value).collect();
        let mut text: String = values.iter().map(|v| format!(" {v:0width$}")).collect();
        if let Some(f) = summary.filter(|_| all) {
            let over = values.iter().copied().fold(0, f);
            text.push_str(&format!(" {over:0width$}"));
        }
        format!("# {label}:{text}\n")
    };
    let sum: fn(u64, u64) -> u64 = |a, b| a + b;
    // The total counts the buckets shown, as cyclictest's, so overflows are not in it.
    out.push_str(&line(
        "Total",
        9,
        &|c| c.buckets.range(..rows).map(|(_, n)| n).sum(),
        Some(sum),
    ));
    out.push_str(&line("Min Latencies", 5, &|c| c.min, None));
    out.push_str(&line("Avg Latencies", 5, &|c| c.avg, None));
    out.push_str(&line("Max Latencies", 5, &|c| c.max, Some(u64::max)));
    out.push_str(&line("Histogram Overflows", 5, &|c| c.overflows, Some(sum)));
    out.push('\n');
    out
}

/// A histogram of latencies in ns (3 significant digits, auto-resizing).
fn histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is valid")
}

/// The parameters of [`Cyclictest`], each declared once.
const TABLE: &[Param<Cyclictest>] = &[
    Param::new(
        ParamDef::value(
            "threads",
            "1",
            "1",
            "Measuring threads (cyclictest -t N), 1..1024.",
        ),
        |w, v| parse_count(NAME, "threads", v, 1..=MAX_THREADS).map(|n| w.threads = n),
        |w| w.threads.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "interval",
            "1000us",
            "1000us",
            "Interval of the first thread (cyclictest -i, which counts in µs), 10us..10s.",
        )
        .hyphen_values(),
        |w, v| parse_with(NAME, v, parse_duration).map(|d| w.interval = d),
        |w| format_duration(w.interval),
    ),
    Param::new(
        ParamDef::value(
            "distance",
            "500us",
            "500us",
            "How much longer each next thread's interval is (cyclictest -d); 0 for equal intervals.",
        )
        .hyphen_values(),
        |w, v| parse_with(NAME, v, parse_duration).map(|d| w.distance = d),
        |w| format_duration(w.distance),
    ),
    Param::new(
        ParamDef::value(
            "priority",
            "0",
            "0..99",
            "Real-time priority of the threads (cyclictest -p): alone it means SCHED_FIFO; 0 none.",
        ),
        |w, v| parse_count(NAME, "priority", v, 0..=99).map(|p| w.priority = p as u8),
        |w| w.priority.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "sched-policy",
            "other",
            "other|batch|idle|fifo|rr",
            "Policy of the threads (cyclictest --policy): other, normal, batch, idle, fifo or rr.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|p| w.policy = p),
        |w| w.policy.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "affinity",
            "",
            "LIST",
            "CPUs the threads run on, e.g. 1 or 0-3 (cyclictest -a; the whole set for every thread) [default: any].",
        )
        .no_default(),
        |w, v| {
            w.affinity = if v.trim().is_empty() {
                None
            } else {
                Some(parse_with(NAME, v, |s| {
                    s.parse::<CpuSet>()
                        .map_err(|e| e.to_string().replace("cpus=", "affinity "))
                })?)
            };
            Ok(())
        },
        |w| w.affinity.as_ref().map_or(String::new(), CpuSet::to_string),
    ),
    Param::new(
        ParamDef::value(
            "loops",
            "0",
            "0",
            "Cycles per thread (cyclictest -l); 0: until the duration. Given alone, no duration applies.",
        ),
        |w, v| parse_count(NAME, "loops", v, 0..=100_000_000).map(|n| w.loops = n as u64),
        |w| w.loops.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "duration",
            "5s",
            "5s",
            "How long each thread measures (cyclictest -D), up to 1h; 0 with --loops: no limit.",
        )
        .hyphen_values(),
        |w, v| parse_with(NAME, v, parse_duration).map(|d| w.duration = d),
        |w| format_duration(w.duration),
    ),
    Param::new(
        ParamDef::value(
            "load",
            "none",
            "none|burn|compile",
            "Background load (group load), starting 500 ms before the threads: none, burn (CPU burners) or compile (burners, a writer and a reader, as interbench's).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|l| w.load = l),
        |w| w.load.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "load-threads",
            "",
            "CPUs",
            "Burners of the burn and compile loads [default: the machine's CPUs: the host's, or the simulated --cpus].",
        )
        .no_default(),
        |w, v| parse_count(NAME, "load-threads", v, 1..=1024).map(|n| w.load_threads = n),
        |w| w.load_threads.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "io-size",
            "64MiB",
            "64MiB",
            "Size of each of the compile load's files (in a temporary directory, removed afterwards).",
        ),
        |w, v| {
            parse_with(NAME, v, super::interbench::parse_size).map(|n| w.io_size = n)
        },
        |w| super::interbench::format_size(w.io_size),
    ),
    Param::new(
        ParamDef::value(
            "histogram",
            "0",
            "US",
            "cyclictest -h/--histogram: a latency histogram of US 1 µs buckets per thread, printed after the run in cyclictest's layout; latencies from US µs up are counted as overflows. As in cyclictest, every thread then has the first one's interval (distance is ignored). 0: none; up to 1000000.",
        ),
        |w: &mut Cyclictest, v| {
            parse_count(NAME, "histogram", v, 0..=HIST_MAX).map(|n| w.histogram = n)
        },
        |w| w.histogram.to_string(),
    )
    // Records of runs without a histogram stay as they were.
    .recorded_when(|w| w.histogram > 0),
    Param::new(
        ParamDef::value(
            "histofall",
            "0",
            "US",
            "cyclictest -H/--histofall: --histogram US with one more column, over all threads (each row's sum, the total, the largest maximum, all overflows) when there are 2 threads or more. 0: none; up to 1000000.",
        )
        .short('H'),
        |w: &mut Cyclictest, v| {
            let n = parse_count(NAME, "histofall", v, 0..=HIST_MAX)?;
            if n == 0 {
                w.histofall = false;
                return Ok(());
            }
            if w.histogram != 0 && w.histogram != n {
                return Err(ParamError::params(
                    NAME,
                    &["histogram", "histofall"],
                    format!(
                        "ask for {} and {n} buckets; histofall is the histogram with a summary column: give one of them, or the same size",
                        w.histogram
                    ),
                ));
            }
            w.histogram = n;
            w.histofall = true;
            Ok(())
        },
        |w| if w.histofall { w.histogram.to_string() } else { "0".into() },
    )
    .recorded_when(|w| w.histofall),
    Param::new(
        ParamDef::value(
            "histfile",
            "",
            "PATH",
            "cyclictest --histfile: write the histogram (of --histogram or --histofall) to PATH instead of standard output, in the same layout; checked with the other outputs before the run starts (- is standard output).",
        )
        .no_default(),
        |w: &mut Cyclictest, v| {
            if v.is_empty() {
                return Err(ParamError::value(
                    NAME,
                    "histfile",
                    "''",
                    "is not accepted; give a file name, or - for standard output",
                ));
            }
            w.histfile = v.to_string();
            Ok(())
        },
        |w| w.histfile.clone(),
    )
    .recorded_when(|w| !w.histfile.is_empty()),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Cyclictest, { TABLE.len() }>(TABLE);

impl Preset for Cyclictest {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "rt-tests' cyclictest: periodic threads time their wakeups from clock_nanosleep (groups: cyclic, load).",
        "rt-tests' cyclictest: how late periodic threads wake from an absolute sleep, per thread and overall, beside an optional load",
        PARAMS,
    )
    .tables(Tables {
        seed: Some(SeedTable {
            title: "cyclictest's per-thread lines",
            render: thread_table,
        }),
        own: None,
    })
    .files(&[FileOutput {
        param: "histfile",
        flag: "--histfile",
        render: hist_file,
    }])
    .examples(&[
        Example::new(
            "cyclictest -t 2 -p 90 -i 1000 on this kernel for 5 s: per-thread min/avg/max latency",
            "run cyclictest --threads 2 --priority 90 --interval 1ms --duration 5s",
        ),
        Example::new(
            "A SCHED_FIFO 90 thread beside a compile load under 2.4 and O(1)",
            "sweep cyclictest --backend sim --priority 90 --load compile --duration 2s --vary policy=linux24,o1",
        ),
        Example::new(
            "cyclictest -t 2 -l 1000 -h 100: the per-µs histogram of two threads, in cyclictest's layout",
            "run cyclictest --threads 2 --loops 1000 --histogram 100",
        ),
        Example::new(
            "cyclictest -t 2 -H 100 --histfile hist.txt: the histogram with a column over both threads, in a file",
            "run cyclictest --threads 2 --loops 1000 --histofall 100 --histfile hist.txt",
        ),
    ]);
    const TABLE: &'static [Param<Self>] = TABLE;

    fn with_defaults(host_cpus: usize) -> Self {
        Cyclictest {
            load_threads: host_cpus.clamp(1, 1024),
            ..Cyclictest::default()
        }
    }

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }

    /// As cyclictest: `--loops` given without `--duration` runs the loops, however long they
    /// take (within the bounds).
    fn configurations(base: &Self, lists: &ListValues) -> Result<Vec<Self>, ParamError> {
        let mut base = base.clone();
        if lists.given("loops") && !lists.given("duration") {
            base.duration = Duration::ZERO;
        }
        cross_configurations(&base, lists)
    }

    /// The threads' policy and affinity, as the `cyclic` group's knobs.
    fn group_defaults(&self, _realtime_allowed: bool) -> Vec<GroupDefault> {
        let mut out = Vec::new();
        if let Ok(Some(policy)) = self.sched_policy() {
            out.push(GroupDefault {
                group: "cyclic",
                knobs: Knobs {
                    policy: Some(policy),
                    ..Knobs::default()
                },
                kind: DefaultKind::ForcedBy("priority"),
                origin: None,
            });
        }
        if let Some(cpus) = &self.affinity {
            out.push(GroupDefault {
                group: "cyclic",
                knobs: Knobs {
                    cpus: Some(cpus.clone()),
                    ..Knobs::default()
                },
                kind: DefaultKind::ForcedBy("affinity"),
                origin: None,
            });
        }
        out
    }

    /// The compile load's two files.
    fn host_needs(&self) -> HostNeeds {
        HostNeeds {
            files: (self.load == CyclicLoad::Compile).then_some(("io-size", 2 * self.io_size)),
            ..HostNeeds::default()
        }
    }
}

impl Workload for Cyclictest {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn label(&self) -> String {
        format!("threads={} load={}", self.threads, self.load)
    }

    fn plan(&self) -> Plan {
        let mut groups = vec![GroupPlan {
            name: "cyclic",
            tasks: self.threads,
            spawn: 0,
        }];
        if self.load != CyclicLoad::None {
            groups.push(GroupPlan {
                name: "load",
                tasks: self.load_tasks(),
                spawn: 0,
            });
        }
        Plan {
            groups,
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            // cyclictest's threads are one process; the load is another, as a compile is.
            mode: TaskMode::GroupProcesses,
            transport: Transport::Pipe,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        match task.group {
            0 => self.measure(ctx, task.index).await,
            _ => self.load_task(ctx, task.index).await,
        }
    }

    /// The load first, so that it runs when the threads start.
    fn start_order(&self) -> Vec<usize> {
        let n = self.plan().total_tasks();
        (self.threads..n).chain(0..self.threads).collect()
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        let mut defs = vec![
            metric(
                "latency_max",
                "us",
                Better::Lower,
                "largest wakeup latency of all threads (cyclictest's Max)",
            ),
            metric(
                "latency_avg",
                "us",
                Better::Lower,
                "mean wakeup latency of all cycles (now − the programmed expiry)",
            ),
            metric(
                "latency_min",
                "us",
                Better::Lower,
                "smallest wakeup latency of all threads",
            ),
        ];
        for (name, _) in PERCENTILES {
            defs.push(metric(
                name,
                "us",
                Better::Lower,
                "wakeup latency percentile of all cycles (HDR histogram, 3 digits)",
            ));
        }
        defs.push(metric(
            "cycles",
            "cycles",
            Better::Higher,
            "cycles of all threads",
        ));
        defs.push(metric(
            "overruns",
            "periods",
            Better::Lower,
            "periods skipped because a wakeup came after the next expiry",
        ));
        if self.histogram > 0 {
            defs.push(metric(
                "histogram_overflows",
                "cycles",
                Better::Lower,
                "cycles of all threads whose latency was at or above the histogram's size",
            ));
        }
        for i in 0..self.threads {
            if self.histogram > 0 {
                defs.push(MetricDef {
                    name: thread_metric(i, "overflows"),
                    unit: "cycles".into(),
                    better: Better::Lower,
                    description: "the thread's cycles at or above the histogram's size".into(),
                });
            }
            for (suffix, unit, description) in PER_THREAD {
                let better = if suffix == "cycles" {
                    Better::Higher
                } else {
                    Better::Lower
                };
                defs.push(MetricDef {
                    name: thread_metric(i, suffix),
                    unit: unit.into(),
                    better,
                    description: description.into(),
                });
            }
        }
        defs
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let mut all = histogram();
        let mut m = BTreeMap::new();
        let (mut sum, mut count, mut min, mut max) = (0.0, 0usize, f64::INFINITY, 0.0f64);
        let mut overruns = 0.0;
        let mut all_overflows = 0u64;
        // The measuring threads are the plan's first tasks.
        for i in 0..self.threads {
            let task = outcome.tasks.get(i);
            let samples = task
                .and_then(|t| t.samples.get(LATENCY_NS))
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    WorkloadError::Integrity(format!("thread {i} completed no cycle"))
                })?;
            let cycles = task
                .and_then(|t| t.samples.get("cycles"))
                .map_or(0.0, |c| c.iter().sum());
            if cycles as usize != samples.len() {
                return Err(WorkloadError::Integrity(format!(
                    "thread {i} counted {cycles} cycles but recorded {} latencies",
                    samples.len()
                )));
            }
            overruns += task
                .and_then(|t| t.samples.get("overruns"))
                .map_or(0.0, |c| c.iter().sum());
            let mut h = histogram();
            let (mut t_sum, mut t_min, mut t_max) = (0.0, f64::INFINITY, 0.0f64);
            for &ns in samples {
                let v = ns.max(0.0);
                h.record(v as u64).expect("auto-resizing histogram");
                t_sum += v;
                t_min = t_min.min(v);
                t_max = t_max.max(v);
            }
            all.add(&h).expect("auto-resizing histogram");
            if self.histogram > 0 {
                let (buckets, overflows) = us_buckets(samples, self.histogram);
                for (b, n) in buckets {
                    m.insert(hist_key(i, b), n as f64);
                }
                m.insert(thread_metric(i, "overflows"), overflows as f64);
                all_overflows += overflows;
            }
            sum += t_sum;
            count += samples.len();
            min = min.min(t_min);
            max = max.max(t_max);
            let last = *samples.last().expect("not empty");
            let p99 = (h.value_at_percentile(99.0) as f64).min(t_max);
            for (suffix, value) in [
                ("cycles", samples.len() as f64),
                ("min", t_min / 1e3),
                ("act", last.max(0.0) / 1e3),
                ("avg", t_sum / samples.len() as f64 / 1e3),
                ("max", t_max / 1e3),
                ("p99", p99 / 1e3),
            ] {
                m.insert(thread_metric(i, suffix), value);
            }
        }
        m.insert("latency_max".into(), max / 1e3);
        m.insert("latency_avg".into(), sum / count as f64 / 1e3);
        m.insert("latency_min".into(), min / 1e3);
        for (name, q) in PERCENTILES {
            // The histogram keeps 3 significant digits; never report more than the maximum.
            m.insert(
                name.into(),
                (all.value_at_percentile(q) as f64).min(max) / 1e3,
            );
        }
        m.insert("cycles".into(), count as f64);
        m.insert("overruns".into(), overruns);
        if self.histogram > 0 {
            m.insert("histogram_overflows".into(), all_overflows as f64);
        }
        Ok(m)
    }

    fn classic_line(&self, m: &BTreeMap<String, f64>) -> Option<String> {
        Some(format!(
            "C:{:8.0} Min:{:7.1} Avg:{:7.1} Max:{:8.1} p99:{:7.1} (us, all threads)",
            m.get("cycles")?,
            m.get("latency_min")?,
            m.get("latency_avg")?,
            m.get("latency_max")?,
            m.get("latency_p99")?,
        ))
    }

    fn expected_time(&self) -> Option<Duration> {
        Some(
            self.load_end()
                .saturating_mul(2)
                .saturating_add(Duration::from_secs(30)),
        )
    }
}

// ---- cyclictest's per-thread lines (its `WorkloadDef`'s seed table) ----
//
// cyclictest ends with one line per thread (`print_stat`):
//
// ```text
// T: 0 ( 4242) P:90 I:1000 C:   9999 Min:      3 Act:    5 Avg:    4 Max:      37
// ```
//
// in whole µs. A configuration's repetitions count as one long run: C is their cycles, Min the
// smallest, Avg the mean of every cycle, Max the largest, Act the last repetition's last
// latency. The thread id is `-` (records keep no thread ids); P99 is added after Max.

/// The per-thread lines of every configuration, each followed by its histogram unless it goes
/// to a file (`--histfile`, [`hist_file`]).
fn thread_table(rows: &[&ConfigResult], varied: &[String]) -> String {
    let mut out = String::new();
    for c in rows {
        let param = |k: &str| c.params.get(k).cloned().unwrap_or_default();
        let interval = parse_duration(&param("interval")).unwrap_or_default();
        // A histogram gives every thread the first one's interval, as in cyclictest.
        let distance = match hist_size(c) {
            0 => parse_duration(&param("distance")).unwrap_or_default(),
            _ => Duration::ZERO,
        };
        let group = c.groups.iter().find(|g| g.name == "cyclic");
        let policy = group.and_then(|g| g.knobs.policy);
        let prio = match policy {
            Some(SchedPolicy::Fifo(p) | SchedPolicy::Rr(p)) => p,
            _ => 0,
        };
        out.push_str(&head_line(c, varied));
        out.push('\n');
        let mut t = Table::new(
            [
                "T:", "(tid)", "P:", "I:", "C:", "Min:", "Act:", "Avg:", "Max:", "P99:",
            ]
            .map(String::from)
            .to_vec(),
        );
        for (i, s) in thread_summaries(c) {
            let thread_interval = interval + distance * i as u32;
            t.row(vec![
                i.to_string(),
                "(-)".into(),
                prio.to_string(),
                thread_interval.as_micros().to_string(),
                format!("{:.0}", s.cycles),
                s.min.to_string(),
                s.act.to_string(),
                s.avg.to_string(),
                s.max.to_string(),
                s.p99.to_string(),
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
        if param("histfile").is_empty() {
            out.push_str(&histogram_of(c).unwrap_or_default());
        }
    }
    out
}

/// What `--histfile` writes: the histogram of each configuration that names the file, in
/// cyclictest's layout — preceded by its `#`-commented head line when there are several (a
/// sweep), so that each can be told apart.
fn hist_file(rows: &[&ConfigResult], varied: &[String]) -> String {
    let mut out = String::new();
    for c in rows {
        if rows.len() > 1 {
            out.push_str(&format!("# {}\n", head_line(c, varied)));
        }
        out.push_str(&histogram_of(c).unwrap_or_default());
    }
    out
}

/// The line that names a configuration above its per-thread lines: policy, machine, load and
/// the sweep's varied values.
fn head_line(c: &ConfigResult, varied: &[String]) -> String {
    let group = c.groups.iter().find(|g| g.name == "cyclic");
    let policy = group.and_then(|g| g.knobs.policy);
    let mut head = vec![format!(
        "policy: {}",
        policy.map_or("other".to_string(), |p| p.to_string())
    )];
    if let Some(machine) = &c.machine {
        head.push(machine.clone());
    }
    head.push(format!(
        "load: {}",
        c.params.get("load").cloned().unwrap_or_default()
    ));
    head.extend(varied.iter().map(|k| format!("{k}={}", c.key_value(k))));
    head.join("  ")
}

/// The histogram's rows of configuration `c` (0: it has none).
fn hist_size(c: &ConfigResult) -> usize {
    (c.params.get("histogram")).map_or(0, |v| v.parse().unwrap_or(0))
}

/// One thread's figures over a configuration's repetitions, in whole µs.
struct ThreadSummary {
    /// Its cycles in all repetitions.
    cycles: f64,
    /// The smallest latency.
    min: u64,
    /// The mean over every cycle, truncated.
    avg: u64,
    /// The largest latency.
    max: u64,
    /// The last repetition's last latency.
    act: u64,
    /// The largest of the repetitions' 99th percentiles.
    p99: u64,
}

/// The summaries of the threads of `c` that counted cycles, by thread index. A configuration's
/// repetitions count as one long run: C is their cycles, Min the smallest, Avg the mean of
/// every cycle, Max the largest, Act the last repetition's last latency.
fn thread_summaries(c: &ConfigResult) -> Vec<(usize, ThreadSummary)> {
    let threads: usize = (c.params.get("threads")).map_or(0, |v| v.parse().unwrap_or(0));
    let mut out = Vec::new();
    for i in 0..threads {
        let values = |suffix: &str| -> Vec<f64> {
            let key = thread_metric(i, suffix);
            c.repetitions
                .iter()
                .filter_map(|r| r.metrics.get(&key).copied())
                .collect()
        };
        let cycles = values("cycles");
        let total: f64 = cycles.iter().sum();
        if total <= 0.0 {
            continue;
        }
        let weighted: f64 = values("avg").iter().zip(&cycles).map(|(a, n)| a * n).sum();
        let fold = |v: Vec<f64>, f: fn(f64, f64) -> f64, init: f64| v.into_iter().fold(init, f);
        let us = |v: f64| v.max(0.0) as u64;
        out.push((
            i,
            ThreadSummary {
                cycles: total,
                min: us(fold(values("min"), f64::min, f64::INFINITY)),
                avg: us(weighted / total),
                max: us(fold(values("max"), f64::max, 0.0)),
                act: us(values("act").last().copied().unwrap_or(0.0)),
                p99: us(fold(values("p99"), f64::max, 0.0)),
            },
        ));
    }
    out
}

/// Configuration `c`'s histogram printout, if it has a histogram: a column per thread that
/// counted cycles, and the summary column with `--histofall`.
fn histogram_of(c: &ConfigResult) -> Option<String> {
    let rows = hist_size(c);
    if rows == 0 {
        return None;
    }
    let all = (c.params.get("histofall")).is_some_and(|v| v.parse().unwrap_or(0) > 0);
    let columns: Vec<HistColumn> = (thread_summaries(c).into_iter())
        .map(|(i, s)| hist_column(c, i, (s.min, s.avg, s.max)))
        .collect();
    Some(histogram_text(rows, &columns, all))
}

/// Thread `i`'s histogram column over all repetitions of `c` (their buckets and overflows
/// added up), with its `(min, avg, max)` in µs.
fn hist_column(c: &ConfigResult, i: usize, (min, avg, max): (u64, u64, u64)) -> HistColumn {
    let prefix = format!("t{i}_hist_");
    let mut col = HistColumn {
        min,
        avg,
        max,
        ..HistColumn::default()
    };
    for r in &c.repetitions {
        for (key, n) in r.metrics.range(prefix.clone()..) {
            let Some(b) = key.strip_prefix(&prefix) else {
                break;
            };
            if let Ok(b) = b.parse::<usize>() {
                *col.buckets.entry(b).or_insert(0) += *n as u64;
            }
        }
        col.overflows += r
            .metrics
            .get(&thread_metric(i, "overflows"))
            .map_or(0, |n| *n as u64);
    }
    col
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(w: &mut Cyclictest, name: &str, value: &str) -> Result<(), ParamError> {
        Preset::set_param(w, name, value)
    }

    fn message(e: ParamError) -> String {
        e.render(|p| format!("--{p}"))
    }

    #[test]
    fn options_parse_as_cyclictest_names_them() {
        let mut w = Cyclictest::with_defaults(2);
        assert_eq!(w.load_threads, 2);
        set(&mut w, "threads", "4").unwrap();
        set(&mut w, "interval", "200us").unwrap();
        set(&mut w, "distance", "0").unwrap();
        set(&mut w, "priority", "90").unwrap();
        set(&mut w, "affinity", "0-1").unwrap();
        set(&mut w, "load", "compile").unwrap();
        set(&mut w, "histogram", "100").unwrap();
        // -H of the same size: the summary column on that histogram.
        set(&mut w, "histofall", "100").unwrap();
        set(&mut w, "histfile", "hist.txt").unwrap();
        w.validate().unwrap();
        assert!(w.histofall);
        assert_eq!(w.histfile, "hist.txt");
        assert_eq!(w.thread_interval(3), Duration::from_micros(200));
        // -p alone is SCHED_FIFO at that priority, on the group `cyclic`, with the affinity.
        assert_eq!(w.sched_policy().unwrap(), Some(SchedPolicy::Fifo(90)));
        let d = w.group_defaults(true);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|d| d.group == "cyclic"));
        assert_eq!(d[1].knobs.cpus.as_ref().unwrap().as_slice(), &[0, 1]);
        assert_eq!(w.plan().groups[1].tasks, 4, "2 burners, a writer, a reader");
        // The record's params name every declared parameter.
        assert_eq!(w.params().len(), PARAMS.len());
        assert_eq!(w.params()["affinity"], "0-1");
        assert_eq!(w.params()["histofall"], "100");
        // -H alone asks for the histogram, as cyclictest's falls through to -h.
        let mut w = Cyclictest::default();
        set(&mut w, "histofall", "20").unwrap();
        assert_eq!((w.histogram, w.histofall), (20, true));
        // Its default (0) leaves a histogram asked for alone as it is.
        let mut w = Cyclictest::default();
        set(&mut w, "histogram", "30").unwrap();
        set(&mut w, "histofall", "0").unwrap();
        assert_eq!((w.histogram, w.histofall), (30, false));
        assert!(!w.params().contains_key("histofall"));
        assert!(!w.params().contains_key("histfile"));
    }

    #[test]
    fn distance_spreads_the_intervals_and_policies_follow_the_original() {
        let mut w = Cyclictest::default();
        set(&mut w, "threads", "3").unwrap();
        assert_eq!(w.thread_interval(0), Duration::from_micros(1000));
        assert_eq!(w.thread_interval(2), Duration::from_micros(2000));
        assert_eq!(w.sched_policy().unwrap(), None);
        set(&mut w, "sched-policy", "rr").unwrap();
        // fifo or rr without a priority: threads + 1, as cyclictest's default.
        assert_eq!(w.sched_policy().unwrap(), Some(SchedPolicy::Rr(4)));
        set(&mut w, "sched-policy", "batch").unwrap();
        assert_eq!(w.sched_policy().unwrap(), Some(SchedPolicy::Batch));
        set(&mut w, "priority", "10").unwrap();
        assert_eq!(w.sched_policy().unwrap(), Some(SchedPolicy::Fifo(10)));
        set(&mut w, "sched-policy", "idle").unwrap();
        set(&mut w, "priority", "0").unwrap();
        assert_eq!(w.sched_policy().unwrap(), Some(SchedPolicy::Idle));
    }

    #[test]
    fn bad_input_is_refused_naming_the_value() {
        let mut w = Cyclictest::default();
        let e = message(set(&mut w, "threads", "0").unwrap_err());
        assert!(e.contains("--threads 0") && e.contains("1..1024"), "{e}");
        set(&mut w, "interval", "0").unwrap();
        let e = message(w.validate().unwrap_err());
        assert!(e.contains("--interval 0") && e.contains("10us..10s"), "{e}");
        let mut w = Cyclictest::default();
        // A bare number is seconds, as every duration of schedlab: 1000 s is out of range.
        set(&mut w, "interval", "1000").unwrap();
        assert!(w.validate().is_err());
        let e = message(set(&mut w, "priority", "100").unwrap_err());
        assert!(e.contains("0..99"), "{e}");
        let e = message(set(&mut w, "sched-policy", "deadline").unwrap_err());
        assert!(e.contains("other, normal, batch, idle, fifo or rr"), "{e}");
        let e = message(set(&mut w, "affinity", "0-").unwrap_err());
        assert!(e.contains("affinity '0-'"), "{e}");
        let e = message(set(&mut w, "load", "make").unwrap_err());
        assert!(e.contains("none, burn or compile"), "{e}");
        // Two histogram sizes; a histogram file without a histogram; an empty file name.
        let mut w = Cyclictest::default();
        set(&mut w, "histogram", "100").unwrap();
        let e = message(set(&mut w, "histofall", "50").unwrap_err());
        assert!(
            e.contains("--histogram") && e.contains("--histofall") && e.contains("100 and 50"),
            "{e}"
        );
        let e = message(set(&mut w, "histofall", "2000000").unwrap_err());
        assert!(
            e.contains("--histofall 2000000") && e.contains("0..1000000"),
            "{e}"
        );
        let mut w = Cyclictest::default();
        set(&mut w, "histfile", "h.txt").unwrap();
        let e = message(w.validate().unwrap_err());
        assert!(
            e.contains("--histfile") && e.contains("'h.txt'") && e.contains("--histogram US"),
            "{e}"
        );
        let e = message(set(&mut w, "histfile", "").unwrap_err());
        assert!(
            e.contains("--histfile ''") && e.contains("file name"),
            "{e}"
        );
        // Nothing ends the run.
        let mut w = Cyclictest {
            duration: Duration::ZERO,
            ..Cyclictest::default()
        };
        let e = message(w.validate().unwrap_err());
        assert!(e.contains("--loops") && e.contains("--duration"), "{e}");
        // Too many samples to keep.
        w.loops = 100_000_000;
        w.threads = 1024;
        let e = message(w.validate().unwrap_err());
        assert!(
            e.contains("latency samples") && e.contains("20000000"),
            "{e}"
        );
        // rr's default priority would pass 99.
        let w = Cyclictest {
            threads: 120,
            policy: CyclicPolicy::Rr,
            ..Cyclictest::default()
        };
        let e = message(w.validate().unwrap_err());
        assert!(e.contains("threads + 1 = 121"), "{e}");
    }

    /// The printout of a hand-built two-thread histogram of 4 buckets, byte for byte as
    /// cyclictest's print_hist writes it.
    #[test]
    fn the_histogram_is_printed_in_cyclictests_layout() {
        let columns = [
            HistColumn {
                buckets: BTreeMap::from([(1, 5), (2, 12), (3, 1)]),
                min: 1,
                avg: 2,
                max: 17,
                overflows: 2,
            },
            HistColumn {
                buckets: BTreeMap::from([(0, 1), (2, 123456)]),
                min: 0,
                avg: 2,
                max: 2,
                overflows: 0,
            },
        ];
        let expected = "# Histogram\n\
                        000000 000000\t000001\n\
                        000001 000005\t000000\n\
                        000002 000012\t123456\n\
                        000003 000001\t000000\n\
                        # Total: 000000018 000123457\n\
                        # Min Latencies: 00001 00000\n\
                        # Avg Latencies: 00002 00002\n\
                        # Max Latencies: 00017 00002\n\
                        # Histogram Overflows: 00002 00000\n\n";
        assert_eq!(histogram_text(4, &columns, false), expected);
        // --histofall: each row's sum after a tab, the totals' sum, the largest maximum, the
        // overflows' sum; minima and averages as they were (rt-tests 2.x's print_hist).
        let expected_all = "# Histogram\n\
                            000000 000000\t000001\t000001\n\
                            000001 000005\t000000\t000005\n\
                            000002 000012\t123456\t123468\n\
                            000003 000001\t000000\t000001\n\
                            # Total: 000000018 000123457 000123475\n\
                            # Min Latencies: 00001 00000\n\
                            # Avg Latencies: 00002 00002\n\
                            # Max Latencies: 00017 00002 00017\n\
                            # Histogram Overflows: 00002 00000 00002\n\n";
        assert_eq!(histogram_text(4, &columns, true), expected_all);
        // One thread has no summary column, as in cyclictest (`nthreads > 1`).
        assert_eq!(
            histogram_text(4, &columns[..1], true),
            histogram_text(4, &columns[..1], false)
        );
        // Buckets are whole µs, truncated; at or above the size is an overflow.
        let (b, over) = us_buckets(&[0.0, 999.9, 1000.0, 2999.0, 3000.0, 7e6, -5.0], 3);
        assert_eq!(b, BTreeMap::from([(0, 3), (1, 1), (2, 1)]));
        assert_eq!(over, 2);
    }

    /// A histogram run's buckets and overflows add up to its cycles, and are printed for the
    /// configuration with every thread at the first one's interval.
    #[test]
    fn histogram_buckets_and_overflows_count_every_cycle() {
        let w = Cyclictest {
            threads: 2,
            histogram: 5,
            ..Cyclictest::default()
        };
        assert_eq!(w.thread_interval(1), w.interval, "distance is ignored");
        let samples = [vec![1200.0, 1800.0, 4999.0, 5000.0], vec![0.0, 60e3]];
        let mut outcome = Outcome::default();
        for s in &samples {
            let n = s.len() as f64;
            outcome.tasks.push(crate::presets::TaskOutcome {
                samples: crate::presets::Samples::from_list(vec![
                    (LATENCY_NS.into(), s.clone()),
                    ("cycles".into(), vec![n]),
                ]),
                ..Default::default()
            });
        }
        let m = w.metrics(&outcome).unwrap();
        assert_eq!(m["t0_hist_1"], 2.0);
        assert_eq!(m["t0_hist_4"], 1.0);
        assert_eq!(m["t0_overflows"], 1.0);
        assert_eq!(m["t1_hist_0"], 1.0);
        assert_eq!(m["histogram_overflows"], 2.0);
        assert!(!m.contains_key("t0_hist_0"), "empty buckets are not kept");
        let defs = w.metric_defs();
        assert!(defs.iter().any(|d| d.name == "t1_overflows"));
        assert!(!defs.iter().any(|d| d.name.contains("_hist_")));
    }

    #[test]
    fn loops_alone_lift_the_duration() {
        let base = Cyclictest::default();
        let lists = ListValues {
            lists: Vec::new(),
            given: vec!["loops"],
        };
        let mut with_loops = base.clone();
        with_loops.loops = 100;
        let c = Cyclictest::configurations(&with_loops, &lists).unwrap();
        assert_eq!(c[0].duration, Duration::ZERO);
        assert_eq!(c[0].span(), Duration::from_millis(100));
        let lists = ListValues {
            lists: Vec::new(),
            given: vec!["loops", "duration"],
        };
        let c = Cyclictest::configurations(&with_loops, &lists).unwrap();
        assert_eq!(c[0].span(), Duration::from_millis(100).min(base.duration));
    }
}
