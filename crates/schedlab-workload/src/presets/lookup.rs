//! `lookup` — path lookup under a contended lock: seed 003's comparison of the 2.4 dcache
//! (`dcache_lock` taken for every component), Al Viro's fastwalk (the lock held across the whole
//! cached walk) and the RCU walk (no lock on the walk; the lock only for misses and for the
//! final `dput`), after Dipankar Sarma's "specweb99: dcache scalability results"
//! (LKML, July 2002; /work/shared/seeds/003) and the 2.4 `fs/namei.c` / `fs/dcache.c` it measured
//! (`d_lookup` under `spin_lock(&dcache_lock)`, `dput` through `atomic_dec_and_lock`).
//!
//! `threads` tasks each resolve `lookups` paths, each followed by `request` of CPU work (the web
//! server's work per request; with `gaps=exp` drawn from an exponential distribution of that
//! mean, so that the tasks' walks do not fall into step as equal gaps make them). A path has `depth` components and ends at a file of a deterministic tree
//! of `files` entries (directories and files; every file at depth `depth`); which file is drawn
//! from a Zipf-like popularity (`skew`: rank r is drawn with weight 1/(r+1)^skew, ranks
//! scattered over the tree by a fixed permutation) by a per-task seeded generator. The dcache
//! holds the `cached` % most popular entries (a warm LRU's steady state under a fixed
//! popularity); a component outside them misses every time.
//!
//! The walk, its costs and the strategies' exact acquisitions are the shared model of
//! [`crate::dcache`] (the `web` workload's file opens go through it too): `lock` takes
//! `dcache_lock` `depth + m + 1` times per lookup (`m` its misses; the 1 is the final `dput`,
//! right after the walk, as `stat(2)`'s `path_release`), `fastwalk` `2 + m`, `rcu` `m + 1`, and
//! `kernel` (real kernel only) is the kernel's own path walk — `stat(2)` or `open(2)`+`close(2)`
//!   of the drawn path in a tree generated in the run's temporary directory (`syscall=stat|open`),
//!   or will-it-scale's `open1` (each task opens and closes its own file in one shared
//!   directory) and `open2` (each in its own directory); the tree or files are made before a
//!   barrier, and the lookups are timed after it.
//!
//! `calls` makes a request walk its file's path more than once, as a web server does: Apache
//! 1.3's `directory_walk` (src/main/http_request.c) `stat`s the translated file in
//! `get_path_info`, and after the request's other phases the default handler opens it, with a
//! close after the response; 2.0's `ap_directory_walk` (server/request.c) `apr_stat`s it and the
//! core handler opens it. Both servers' shipped configurations (`Options FollowSymLinks`,
//! `AllowOverride None` for `/` and the document root) skip the per-directory `lstat` and the
//! `.htaccess` opens the same loops make otherwise. So `calls=stat+open` is a static GET:
//! `lookups` counts walks, a request's walks are `between` of CPU work apart, a `stat` drops its
//! reference at once, an `open` drops it at close, after the request's work. The default,
//! `stat`, is one walk per request.
//!
//! `prune` adds a rare long holder of `dcache_lock`: after a request, with probability 1/EVERY,
//! the task holds the lock for HOLD, as 2.4.17's `prune_dcache` does when memory pressure calls
//! it through `shrink_dcache_memory` from `try_to_free_pages` (in the allocating task's own
//! context, or kswapd's): it walks the unused list under the lock, moving referenced dentries
//! back to its head without counting them, so one call can scan the whole cached file set in one
//! hold. The seed shows such holds only as its maxima (3.3–13 ms); `prune` lets an experiment
//! ask what rate and length would give its mean waits. Off by default.
//!
//! `interrupts=RATE/LENGTH` lengthens holds of `dcache_lock` by the interrupts that land in them:
//! each CPU is interrupted RATE times a second, and one that comes while the task holds the lock
//! keeps it held for its handler and softirq work (mean LENGTH), as 2.4's `spin_lock` leaves
//! interrupts on and `do_IRQ` runs the softirqs on its way out ([`crate::dcache`] has the
//! source). Off by default.
//!
//! `swing=PERIOD/SHARE` makes the machine's request rate vary in time, in step on every CPU:
//! in the first SHARE of every PERIOD (from the run's epoch) the tasks serve requests whose work
//! is SHARE × `request` (so the mean rate over a period stays), and a task that finishes a
//! request in the rest of the period sleeps until the next one starts — the bursts of a load
//! that rises and falls across the whole machine at once. Off by default.
//!
//! `dcache_lock` is a spin lock of the plan, so `--locks` prints lockmeter's table of it. Metrics:
//! lookups per second (all lookups over the span from the first task's start to the last one's
//! end, after the barrier in `kernel`), each lookup's latency (the walk, without the request's
//! work) as percentiles, acquisitions and misses per lookup.

use super::def::{Example, WorkloadDef};
use super::params::{
    check_product, param_defs, parse_count, parse_param, parse_with, set_from_table, HostNeeds,
    Param, ParamDef, ParamKind, Preset,
};
use super::{metric, Outcome, Workload};
use crate::context::{BarrierId, Context, LockId, PathOp, WorkloadError};
use crate::dcache::{Dentries, Interrupts, SplitMix, WalkTally, Walker, MAX_INTERRUPT, ROOT};
use crate::duration::{format_duration, parse_duration};
use crate::error::{ParamError, ValueError};
use crate::plan::{GroupPlan, LockKind, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

const NAME: &str = "lookup";

pub use crate::dcache::{Dcache, DCACHE_LOCK, MISS_FACTOR};

/// Salt of the generator of `gaps=exp`'s draws, apart from the paths' generator.
const GAP_SEED: u64 = 0x9a95_0003;

/// Salt of the generator of `prune`'s draws, apart from the others (so that a run without
/// `prune` draws exactly what it drew before the parameter existed).
const PRUNE_SEED: u64 = 0x9a95_3003;

/// The rarest `prune` (one request in this many).
const MAX_PRUNE_EVERY: u64 = 100_000_000;

/// Salt of the generator of `interrupts`' draws, apart from the others.
const IRQ_SEED: u64 = 0x9a95_1003;

/// The most interrupts a second on one CPU.
const MAX_IRQ_RATE: f64 = 1_000_000.0;

/// The longest `swing` period.
const MAX_SWING_PERIOD: Duration = Duration::from_secs(10);

/// The longest exponential gap, in means (e^−50: never reached in practice; it bounds a draw).
const MAX_GAP_MEANS: f64 = 50.0;

/// The largest tree.
const MAX_FILES: usize = 1_000_000;

/// The deepest path.
const MAX_DEPTH: usize = 32;

/// The most lookups of one repetition (all tasks): each keeps a latency sample.
const MAX_LOOKUPS: u128 = 50_000_000;

/// Percentiles reported for a lookup's latency: (metric name, quantile).
const PERCENTILES: [(&str, f64); 4] = [
    ("lookup_p50", 50.0),
    ("lookup_p90", 90.0),
    ("lookup_p99", 99.0),
    ("lookup_p99.9", 99.9),
];

/// What `dcache=kernel` asks of the kernel per lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscall {
    /// `stat(2)` of the drawn path.
    Stat,
    /// `open(2)` + `close(2)` of the drawn path.
    Open,
    /// will-it-scale's open1: each task opens and closes its own file in one shared directory.
    Open1,
    /// will-it-scale's open2: each task opens and closes its own file in its own directory.
    Open2,
}

impl fmt::Display for Syscall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Syscall::Stat => "stat",
            Syscall::Open => "open",
            Syscall::Open1 => "open1",
            Syscall::Open2 => "open2",
        })
    }
}

impl FromStr for Syscall {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "stat" => Ok(Syscall::Stat),
            "open" => Ok(Syscall::Open),
            "open1" => Ok(Syscall::Open1),
            "open2" => Ok(Syscall::Open2),
            _ => Err(ValueError::new(format!(
                "syscall '{s}' is not accepted; use stat, open, open1 or open2"
            ))),
        }
    }
}

/// How the request's work between two lookups of a task is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gaps {
    /// Every request does `request` of work.
    Fixed,
    /// Each request's work is drawn from an exponential distribution of mean `request`, from
    /// a generator of its own (the paths drawn are the same as with `fixed`).
    Exp,
}

impl fmt::Display for Gaps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Gaps::Fixed => "fixed",
            Gaps::Exp => "exp",
        })
    }
}

impl FromStr for Gaps {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "fixed" => Ok(Gaps::Fixed),
            "exp" => Ok(Gaps::Exp),
            _ => Err(ValueError::new(format!(
                "gaps '{s}' is not accepted; use fixed or exp"
            ))),
        }
    }
}

/// One path call of a request (`calls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `stat(2)`: walk the path and drop the final reference at once.
    Stat,
    /// `open(2)`: walk the path and keep the reference until close, after the request's work.
    Open,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Call::Stat => "stat",
            Call::Open => "open",
        })
    }
}

/// The most path calls of one request.
const MAX_CALLS: usize = 16;

/// `stat`, `open` or several joined by `+` (`stat+open`), at most [`MAX_CALLS`].
fn parse_calls(value: &str) -> Result<Vec<Call>, ParamError> {
    let bad = |what: &str| ParamError::value(NAME, "calls", value, what);
    let calls = value
        .split('+')
        .map(|c| match c.trim() {
            "stat" => Ok(Call::Stat),
            "open" => Ok(Call::Open),
            _ => Err(bad(
                "is not accepted; use stat, open or several joined by + (such as stat+open)",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if calls.len() > MAX_CALLS {
        return Err(bad("is not accepted: at most 16 calls per request"));
    }
    Ok(calls)
}

/// The text of a request's calls, joined by `+`.
fn calls_text(calls: &[Call]) -> String {
    calls
        .iter()
        .map(Call::to_string)
        .collect::<Vec<_>>()
        .join("+")
}

/// A rare long hold of `dcache_lock` after a request (`prune=HOLD/EVERY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prune {
    /// How long the lock is held.
    pub hold: Duration,
    /// One request in this many, drawn independently after each.
    pub every: u64,
}

impl fmt::Display for Prune {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", format_duration(self.hold), self.every)
    }
}

/// `none` or `HOLD/EVERY` (a hold of 0..1s, one request in 1..100000000).
fn parse_prune(value: &str) -> Result<Option<Prune>, ParamError> {
    let v = value.trim();
    if v == "none" {
        return Ok(None);
    }
    let bad = |what: &str| ParamError::value(NAME, "prune", value, what);
    let Some((hold, every)) = v.split_once('/') else {
        return Err(bad(
            "is not accepted; use none or HOLD/EVERY, such as 5ms/20000",
        ));
    };
    let hold = match parse_duration(hold) {
        Ok(d) if d <= Duration::from_secs(1) => d,
        _ => {
            return Err(bad(
                "is not accepted: HOLD is a duration 0..1s (HOLD/EVERY, such as 5ms/20000)",
            ))
        }
    };
    match every.trim().parse::<u64>() {
        Ok(every) if (1..=MAX_PRUNE_EVERY).contains(&every) => Ok(Some(Prune { hold, every })),
        _ => Err(bad(
            "is not accepted: EVERY is a count of requests 1..100000000 (HOLD/EVERY, such as 5ms/20000)",
        )),
    }
}

/// `none` or `RATE/LENGTH` (RATE interrupts a second on a CPU, 0..1000000; LENGTH their mean
/// time, 0..20ms).
fn parse_interrupts(value: &str) -> Result<Option<Interrupts>, ParamError> {
    let v = value.trim();
    if v == "none" {
        return Ok(None);
    }
    let bad = |what: &str| ParamError::value(NAME, "interrupts", value, what);
    let Some((rate, length)) = v.split_once('/') else {
        return Err(bad(
            "is not accepted; use none or RATE/LENGTH, such as 200/500us",
        ));
    };
    let rate = match rate.trim().parse::<f64>() {
        Ok(r) if (0.0..=MAX_IRQ_RATE).contains(&r) => r,
        _ => {
            return Err(bad(
                "is not accepted: RATE is interrupts a second on one CPU, 0..1000000 (RATE/LENGTH, such as 200/500us)",
            ))
        }
    };
    match parse_duration(length) {
        Ok(length) if length <= MAX_INTERRUPT => Ok(Some(Interrupts { rate, length })),
        _ => Err(bad(
            "is not accepted: LENGTH is a duration 0..20ms (RATE/LENGTH, such as 200/500us)",
        )),
    }
}

/// A machine-wide request rate that varies in time (`swing=PERIOD/SHARE`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Swing {
    /// The length of one cycle, from the run's epoch.
    pub period: Duration,
    /// The share of each period in which requests are served, (0, 1].
    pub share: f64,
}

impl fmt::Display for Swing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", format_duration(self.period), self.share)
    }
}

impl Swing {
    /// When the next serving part starts, if `now` is past this period's: the next period's
    /// start.
    fn resume_at(&self, now: Duration) -> Option<Duration> {
        let period = self.period.as_nanos();
        let phase = now.as_nanos() % period;
        (phase as f64 >= self.share * period as f64)
            .then(|| now + Duration::from_nanos((period - phase) as u64))
    }
}

/// `none` or `PERIOD/SHARE` (a period of 1us..10s, a share in (0, 1]).
fn parse_swing(value: &str) -> Result<Option<Swing>, ParamError> {
    let v = value.trim();
    if v == "none" {
        return Ok(None);
    }
    let bad = |what: &str| ParamError::value(NAME, "swing", value, what);
    let Some((period, share)) = v.split_once('/') else {
        return Err(bad(
            "is not accepted; use none or PERIOD/SHARE, such as 20ms/0.5",
        ));
    };
    let period =
        match parse_duration(period) {
            Ok(d) if d >= Duration::from_micros(1) && d <= MAX_SWING_PERIOD => d,
            _ => return Err(bad(
                "is not accepted: PERIOD is a duration 1us..10s (PERIOD/SHARE, such as 20ms/0.5)",
            )),
        };
    match share.trim().parse::<f64>() {
        Ok(share) if share > 0.0 && share <= 1.0 => Ok(Some(Swing { period, share })),
        _ => Err(bad(
            "is not accepted: SHARE is the serving share of a period, above 0 and at most 1 (PERIOD/SHARE, such as 20ms/0.5)",
        )),
    }
}

/// Tasks resolving paths under a dcache strategy.
#[derive(Clone, Debug)]
pub struct Lookup {
    /// Number of tasks.
    pub threads: usize,
    /// Lookups per task.
    pub lookups: usize,
    /// Components per path.
    pub depth: usize,
    /// Entries of the tree (directories and files).
    pub files: usize,
    /// Zipf exponent of the files' popularity (0: uniform).
    pub skew: f64,
    /// Percent of the entries the dcache holds, the most popular first.
    pub cached: u32,
    /// The walk's strategy.
    pub dcache: Dcache,
    /// What `dcache=kernel` does per lookup.
    pub syscall: Syscall,
    /// CPU work per component (hash lookup and reference count).
    pub component: Duration,
    /// CPU work per request, after its lookup, outside any lock (the mean, with `gaps=exp`).
    pub request: Duration,
    /// Whether every request's work is `request`, or drawn with that mean.
    pub gaps: Gaps,
    /// A rare long hold of `dcache_lock` after a request, if any.
    pub prune: Option<Prune>,
    /// Interrupts that lengthen the holds they land in, if modelled.
    pub interrupts: Option<Interrupts>,
    /// A request rate that varies in time on the whole machine, if any.
    pub swing: Option<Swing>,
    /// The path calls of one request, in order (each a walk of the request's file).
    pub calls: Vec<Call>,
    /// CPU work between two calls of a request, outside any lock.
    pub between: Duration,
    /// The tree, built once per configuration (by [`Workload::plan`], before any task starts).
    tree: Arc<OnceLock<Tree>>,
}

impl Default for Lookup {
    fn default() -> Self {
        Lookup {
            threads: 2,
            lookups: 2000,
            depth: 6,
            files: 10_000,
            skew: 1.0,
            cached: 90,
            dcache: Dcache::Lock,
            syscall: Syscall::Stat,
            component: Duration::from_micros(2),
            // Seed 003's lock row: eight CPUs each holding `dcache_lock` 6 × 2 µs per walk and
            // 2 µs for its final dput hold it 15.7 % of the time when 8 × 14 / (14 + request)
            // = 0.157: request ≈ 700 µs.
            request: Duration::from_micros(700),
            gaps: Gaps::Fixed,
            prune: None,
            interrupts: None,
            swing: None,
            calls: vec![Call::Stat],
            // Not published for the seed's server: the user-space phases between Apache's stat
            // and open (the other walks over the configuration, access and type checks, the
            // handler's conditions), a few thousand instructions on a 700 MHz Pentium III.
            between: Duration::from_micros(20),
            tree: Arc::default(),
        }
    }
}

impl PartialEq for Lookup {
    fn eq(&self, other: &Self) -> bool {
        self.params() == other.params()
    }
}

/// The parameters of [`Lookup`], each declared once.
const TABLE: &[Param<Lookup>] = &[
    Param::new(
        ParamDef::value(
            "threads",
            "2",
            "2",
            "Task counts to run, comma-separated (1..4096 each); one configuration per count.",
        )
        .kind(ParamKind::List),
        |w, v| parse_count(NAME, "threads", v, 1..=4096).map(|n| w.threads = n),
        |w| w.threads.to_string(),
    ),
    Param::new(
        ParamDef::value("lookups", "2000", "2000", "Path lookups per task."),
        |w, v| parse_count(NAME, "lookups", v, 1..=10_000_000).map(|n| w.lookups = n),
        |w| w.lookups.to_string(),
    ),
    Param::new(
        ParamDef::value("depth", "6", "6", "Components per path (1..32)."),
        |w, v| parse_count(NAME, "depth", v, 1..=MAX_DEPTH).map(|n| w.depth = n),
        |w| w.depth.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "files",
            "10000",
            "10000",
            "Entries of the tree, directories and files (depth..1000000).",
        ),
        |w, v| parse_count(NAME, "files", v, 1..=MAX_FILES).map(|n| w.files = n),
        |w| w.files.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "skew",
            "1.0",
            "1.0",
            "Zipf exponent of the files' popularity: rank r is drawn with weight 1/(r+1)^skew (0..4; 0 is uniform).",
        ),
        |w, v| {
            let s: f64 = parse_param(NAME, "skew", v, "a number 0..4")?;
            if !(0.0..=4.0).contains(&s) {
                return Err(ParamError::value(
                    NAME,
                    "skew",
                    v,
                    "is not accepted; use a number 0..4",
                ));
            }
            w.skew = s;
            Ok(())
        },
        |w| w.skew.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "cached",
            "90",
            "90",
            "Percent of the tree's entries the dcache holds, the most popular first; the others miss (0..100).",
        ),
        |w, v| parse_count(NAME, "cached", v, 0..=100).map(|n| w.cached = n as u32),
        |w| w.cached.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "dcache",
            "lock",
            "lock|fastwalk|rcu|kernel",
            "How a path is walked: lock (dcache_lock per component), fastwalk (held across the walk), rcu (lock only for misses and the final dput), kernel (the real kernel's own walk).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|d| w.dcache = d),
        |w| w.dcache.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "syscall",
            "stat",
            "stat|open|open1|open2",
            "With dcache=kernel: stat or open+close the drawn path, or will-it-scale's open1 (own file, one shared directory) or open2 (own directory).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|s| w.syscall = s),
        |w| w.syscall.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "component",
            "2us",
            "2us",
            "CPU work per component (hash lookup and reference count).",
        ),
        |w, v| parse_work("component", v).map(|d| w.component = d),
        |w| format_duration(w.component),
    ),
    Param::new(
        ParamDef::value(
            "request",
            "700us",
            "700us",
            "CPU work per request after its lookup (its calls), outside the lock.",
        ),
        |w, v| parse_work("request", v).map(|d| w.request = d),
        |w| format_duration(w.request),
    ),
    Param::new(
        ParamDef::value(
            "gaps",
            "fixed",
            "fixed|exp",
            "Each request's work: fixed (request) or exp (drawn from an exponential distribution of mean request, as a web server's requests of widely varying sizes space a CPU's walks).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|g| w.gaps = g),
        |w| w.gaps.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "prune",
            "none",
            "none|HOLD/EVERY",
            "After a request, with probability 1/EVERY, hold dcache_lock for HOLD (2.4's prune_dcache under memory pressure), e.g. 5ms/20000; none: never.",
        ),
        |w: &mut Lookup, v| parse_prune(v).map(|p| w.prune = p),
        |w| w.prune.map_or_else(|| "none".into(), |p| p.to_string()),
    )
    .recorded_when(|w| w.prune.is_some()),
    Param::new(
        ParamDef::value(
            "interrupts",
            "none",
            "none|RATE/LENGTH",
            "Interrupts a second on each CPU and their mean length (handler and softirq work; at most 20ms each): one that comes while a task holds dcache_lock lengthens the hold, as 2.4's spin_lock leaves interrupts on; e.g. 200/500us; none: not modelled.",
        ),
        |w: &mut Lookup, v| parse_interrupts(v).map(|i| w.interrupts = i),
        |w| {
            w.interrupts.map_or_else(
                || "none".into(),
                |i| format!("{}/{}", i.rate, format_duration(i.length)),
            )
        },
    )
    .recorded_when(|w| w.interrupts.is_some()),
    Param::new(
        ParamDef::value(
            "swing",
            "none",
            "none|PERIOD/SHARE",
            "A request rate that varies in time on the whole machine: requests are served in the first SHARE of every PERIOD (their work SHARE × request, so the mean rate stays), and a task that finishes one in the rest sleeps until the next period; e.g. 20ms/0.5; none: a steady rate.",
        ),
        |w: &mut Lookup, v| parse_swing(v).map(|s| w.swing = s),
        |w| w.swing.map_or_else(|| "none".into(), |s| s.to_string()),
    )
    .recorded_when(|w| w.swing.is_some()),
    Param::new(
        ParamDef::value(
            "calls",
            "stat",
            "stat|open|CALL+CALL...",
            "The path calls of one request, in order, each a walk of the request's file: stat (reference dropped at once) or open (dropped at close, after the request's work); stat+open is Apache's static GET. lookups counts walks, a multiple of the calls.",
        ),
        |w: &mut Lookup, v| parse_calls(v).map(|c| w.calls = c),
        |w| calls_text(&w.calls),
    )
    .recorded_when(|w| w.calls != [Call::Stat]),
    Param::new(
        ParamDef::value(
            "between",
            "20us",
            "20us",
            "CPU work between two calls of one request, outside the lock (used when calls has more than one).",
        ),
        |w: &mut Lookup, v| parse_work("between", v).map(|d| w.between = d),
        |w| format_duration(w.between),
    )
    .recorded_when(|w| w.calls.len() > 1),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Lookup, { TABLE.len() }>(TABLE);

impl Lookup {
    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if let (Some(p), Dcache::Kernel) = (self.prune, self.dcache) {
            return Err(ParamError::params(
                NAME,
                &["prune", "dcache"],
                format!(
                    "ask for holds of the simulated dcache_lock (prune={p}) under dcache=kernel, which does not take it; accepted: prune=none with dcache=kernel"
                ),
            ));
        }
        if let (Some(i), Dcache::Kernel) = (self.interrupts, self.dcache) {
            return Err(ParamError::params(
                NAME,
                &["interrupts", "dcache"],
                format!(
                    "ask for interrupts in holds of the simulated dcache_lock (interrupts={}/{}) under dcache=kernel, whose interrupts are the machine's own; accepted: interrupts=none with dcache=kernel",
                    i.rate,
                    format_duration(i.length)
                ),
            ));
        }
        if self.calls != [Call::Stat] && self.dcache == Dcache::Kernel {
            return Err(ParamError::params(
                NAME,
                &["calls", "dcache"],
                format!(
                    "ask for calls={} under dcache=kernel, which makes one call per lookup (syscall); accepted: calls=stat with dcache=kernel",
                    calls_text(&self.calls)
                ),
            ));
        }
        if !self.lookups.is_multiple_of(self.calls.len()) {
            return Err(ParamError::params(
                NAME,
                &["lookups", "calls"],
                format!(
                    "ask for {} lookups per task in requests of {} calls ({}); accepted: a multiple of {}",
                    self.lookups,
                    self.calls.len(),
                    calls_text(&self.calls),
                    self.calls.len()
                ),
            ));
        }
        if self.files < self.depth {
            return Err(ParamError::params(
                NAME,
                &["files", "depth"],
                format!(
                    "ask for paths of {} components in a tree of {} entries; accepted: at least as many entries as components",
                    self.depth, self.files
                ),
            ));
        }
        check_product(
            NAME,
            &["threads", "lookups"],
            "lookups",
            "threads × lookups",
            &[self.threads, self.lookups],
            MAX_LOOKUPS,
        )
    }

    /// The tree of this configuration (built on first use; a configuration that fails
    /// [`Lookup::validate`] is never run, and gets a tree of `depth` entries at least).
    fn tree(&self) -> &Tree {
        self.tree.get_or_init(|| {
            Tree::new(
                self.files.max(self.depth),
                self.depth,
                self.skew,
                self.cached,
            )
        })
    }

    /// The lock per lookup component, `dcache_lock`.
    const LOCK: LockId = LockId(0);
}

fn parse_work(name: &'static str, value: &str) -> Result<Duration, ParamError> {
    let d = parse_with(NAME, value, parse_duration)?;
    if d > Duration::from_secs(1) {
        return Err(ParamError::value(
            NAME,
            name,
            value,
            "is not accepted; use 0..1s",
        ));
    }
    Ok(d)
}

impl Preset for Lookup {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "Seed 003's path lookup under dcache_lock: per-component lock, fastwalk, RCU, or the kernel's own walk (group: lookup).",
        "seed 003's dcache: tasks resolve paths under dcache_lock per component, fastwalk or RCU (or the real kernel's walk)",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "Seed 003: four threads resolving paths under dcache_lock, simulated",
            "run lookup --threads 4 --dcache lock --backend sim --cpus 4",
        ),
        Example::new(
            "dcache_lock against fastwalk and RCU",
            "sweep lookup --threads 4 --backend sim --cpus 4 --vary dcache=lock,fastwalk,rcu",
        ),
    ]);

    const TABLE: &'static [Param<Self>] = TABLE;

    fn set_param(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        set_from_table(self, name, value)?;
        // The tree follows the parameters: a changed copy builds its own.
        self.tree = Arc::default();
        Ok(())
    }

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }

    fn host_needs(&self) -> HostNeeds {
        if self.dcache != Dcache::Kernel {
            return HostNeeds::default();
        }
        // An empty file or a directory takes an inode and, for directories, a block.
        let entries = match self.syscall {
            Syscall::Stat | Syscall::Open => self.files,
            Syscall::Open1 | Syscall::Open2 => 2 * self.threads,
        };
        HostNeeds {
            files: Some(("files", entries * 4096)),
            real_kernel: Some("dcache=kernel (the running kernel's own path walk)"),
            ..HostNeeds::default()
        }
    }
}

impl Lookup {
    /// The walker of this configuration's strategy (`None` for `kernel`).
    fn walker(&self) -> Option<Walker> {
        Walker::new(self.dcache, self.component, Self::LOCK)
            .map(|w| w.with_interrupts(self.interrupts))
    }

    /// One request's work: `request`, or with `gaps=exp` an exponential draw of that mean
    /// (−ln u × request, u uniform in (0, 1]; at most `MAX_GAP_MEANS` means).
    fn gap(&self, rng: &mut SplitMix) -> Duration {
        match self.gaps {
            Gaps::Fixed => self.request,
            Gaps::Exp => {
                let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                self.request.mul_f64((-u.ln()).min(MAX_GAP_MEANS))
            }
        }
    }

    /// One request's work as served: [`Lookup::gap`], times `swing`'s share when it swings.
    fn served_gap(&self, rng: &mut SplitMix) -> Duration {
        let gap = self.gap(rng);
        self.swing.map_or(gap, |s| gap.mul_f64(s.share))
    }

    /// The path the kernel walks for one lookup of task `task` in `kernel` mode.
    fn kernel_path(&self, tree: &Tree, task: TaskRef, rng: &mut SplitMix) -> String {
        match self.syscall {
            Syscall::Stat | Syscall::Open => tree.path_text(tree.draw(rng)),
            Syscall::Open1 => format!("open1/task{}", task.index),
            Syscall::Open2 => format!("open2/task{}/file", task.index),
        }
    }

    /// `kernel`: make this task's share of the files, wait for the others, and time the
    /// kernel's walks.
    async fn kernel_lookups<C: Context>(
        &self,
        ctx: &C,
        tree: &Tree,
        task: TaskRef,
        rng: &mut SplitMix,
    ) -> Result<(), WorkloadError> {
        match self.syscall {
            Syscall::Stat | Syscall::Open => {
                for leaf in (task.index..tree.leaves()).step_by(self.threads) {
                    ctx.path(PathOp::Create, &tree.path_text(leaf as u32))
                        .await?;
                }
            }
            Syscall::Open1 | Syscall::Open2 => {
                ctx.path(PathOp::Create, &self.kernel_path(tree, task, rng))
                    .await?
            }
        }
        ctx.barrier(BarrierId(0)).await?;
        let op = match self.syscall {
            Syscall::Stat => PathOp::Stat,
            _ => PathOp::OpenClose,
        };
        let mut gaps = SplitMix::new(GAP_SEED ^ (task.index as u64) << 32);
        ctx.record("start_ns", ctx.now().as_nanos() as f64);
        for _ in 0..self.lookups {
            let path = self.kernel_path(tree, task, rng);
            let t0 = ctx.now();
            ctx.path(op, &path).await?;
            ctx.record("lookup_ns", (ctx.now() - t0).as_nanos() as f64);
            ctx.compute(self.gap(&mut gaps)).await;
            if ctx.stop_requested() {
                return Err(WorkloadError::Stopped);
            }
        }
        ctx.record("end_ns", ctx.now().as_nanos() as f64);
        ctx.record("lookups", self.lookups as f64);
        Ok(())
    }
}

impl Workload for Lookup {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn label(&self) -> String {
        format!("threads={} dcache={}", self.threads, self.dcache)
    }

    fn plan(&self) -> Plan {
        // Built here, before the backend releases any task (a plan may be asked of a
        // configuration before it is checked: no tree then).
        if self.validate().is_ok() {
            self.tree();
        }
        let kernel = self.dcache == Dcache::Kernel;
        Plan {
            groups: vec![GroupPlan {
                name: "lookup",
                tasks: self.threads,
                spawn: 0,
            }],
            channels: 0,
            duplex: false,
            locks: usize::from(!kernel),
            sync: SyncPlan {
                barriers: if kernel { vec![self.threads] } else { vec![] },
                lock_kinds: vec![LockKind::Spin],
                lock_names: vec![DCACHE_LOCK.into()],
                ..SyncPlan::default()
            },
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let tree = self.tree();
        let mut rng = SplitMix::new(0x5eed_0003 ^ (task.index as u64) << 32);
        let Some(walker) = self.walker() else {
            return self.kernel_lookups(ctx, tree, task, &mut rng).await;
        };
        let mut tally = WalkTally::seeded(IRQ_SEED ^ (task.index as u64) << 32);
        let mut gaps = SplitMix::new(GAP_SEED ^ (task.index as u64) << 32);
        let mut prunes = SplitMix::new(PRUNE_SEED ^ (task.index as u64) << 32);
        ctx.record("start_ns", ctx.now().as_nanos() as f64);
        let mut path = Vec::new();
        // The entries the request's opens hold until close.
        let mut open = Vec::with_capacity(self.calls.len());
        for _ in 0..self.lookups / self.calls.len() {
            let leaf = tree.draw(&mut rng);
            tree.path_into(leaf, &mut path);
            for (i, call) in self.calls.iter().enumerate() {
                if i > 0 {
                    ctx.compute(self.between).await;
                }
                let t0 = ctx.now();
                match call {
                    Call::Stat => walker.walk(ctx, &tree.dentries, &path, &mut tally).await,
                    Call::Open => {
                        let held = walker.resolve(ctx, &tree.dentries, &path, &mut tally);
                        open.extend(held.await);
                    }
                }
                ctx.record("lookup_ns", (ctx.now() - t0).as_nanos() as f64);
            }
            ctx.compute(self.served_gap(&mut gaps)).await;
            for e in open.drain(..) {
                walker.release(ctx, &tree.dentries, e, &mut tally).await;
            }
            if let Some(p) = self.prune {
                if prunes.next_u64().is_multiple_of(p.every) {
                    ctx.lock(Self::LOCK).await;
                    ctx.compute(p.hold).await;
                    ctx.unlock(Self::LOCK);
                }
            }
            if let Some(at) = self.swing.and_then(|s| s.resume_at(ctx.now())) {
                ctx.sleep_until(at).await;
            }
            if ctx.stop_requested() {
                return Err(WorkloadError::Stopped);
            }
        }
        ctx.record("end_ns", ctx.now().as_nanos() as f64);
        ctx.record("lookups", self.lookups as f64);
        ctx.record("acquisitions", tally.acquisitions as f64);
        ctx.record("misses", tally.misses as f64);
        if self.interrupts.is_some() {
            ctx.record("interrupted", tally.interrupted as f64);
        }
        Ok(())
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        let mut defs = vec![metric(
            "lookups_per_s",
            "lookups/s",
            Better::Higher,
            "lookups of all tasks / (last task's end − first task's start)",
        )];
        for (name, _) in PERCENTILES {
            defs.push(metric(
                name,
                "us",
                Better::Lower,
                "one lookup's latency (the walk, without the request's work), percentile",
            ));
        }
        defs.push(metric("lookup_max", "us", Better::Lower, "longest lookup"));
        defs.push(metric(
            "acq_per_lookup",
            "acq",
            Better::Lower,
            "dcache_lock acquisitions per lookup (0 for dcache=kernel)",
        ));
        defs.push(metric(
            "misses_per_lookup",
            "misses",
            Better::Lower,
            "components not in the dcache per lookup (0 for dcache=kernel)",
        ));
        defs.push(metric(
            "lookups",
            "lookups",
            Better::Higher,
            "lookups completed by all tasks",
        ));
        defs
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let lookups = outcome.sum(&plan, None, "lookups");
        let expected = (self.threads * self.lookups) as f64;
        if lookups != expected {
            return Err(WorkloadError::Integrity(format!(
                "{lookups} lookups completed, expected {expected}"
            )));
        }
        let mut hist = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        let mut start = f64::INFINITY;
        let mut end: f64 = 0.0;
        for t in &outcome.tasks {
            for &ns in t.samples.get("lookup_ns").into_iter().flatten() {
                hist.record(ns.max(1.0) as u64)
                    .expect("auto-resizing histogram");
            }
            for &s in t.samples.get("start_ns").into_iter().flatten() {
                start = start.min(s);
            }
            for &e in t.samples.get("end_ns").into_iter().flatten() {
                end = end.max(e);
            }
        }
        if hist.len() as f64 != expected || end <= start {
            return Err(WorkloadError::Integrity(format!(
                "{} lookups timed over [{start}, {end}] ns, expected {expected}",
                hist.len()
            )));
        }
        let span = (end - start) / 1e9;
        let mut m = BTreeMap::from([
            ("lookups_per_s".to_string(), lookups / span),
            ("lookup_max".to_string(), hist.max() as f64 / 1e3),
            (
                "acq_per_lookup".to_string(),
                outcome.sum(&plan, None, "acquisitions") / lookups,
            ),
            (
                "misses_per_lookup".to_string(),
                outcome.sum(&plan, None, "misses") / lookups,
            ),
            ("lookups".to_string(), lookups),
        ]);
        for (name, q) in PERCENTILES {
            m.insert(name.to_string(), hist.value_at_percentile(q) as f64 / 1e3);
        }
        Ok(m)
    }

    fn expected_time(&self) -> Option<Duration> {
        // Every lookup's work, as if on one CPU, with a generous margin for a contended lock.
        let per = self.component * (self.depth as u32 * 2 + MISS_FACTOR)
            + (self.request + self.between * (self.calls.len() as u32 - 1))
                / self.calls.len() as u32;
        // Interrupts add, per second held, `rate` × `length` (at most every component and the
        // dput held); a swing stretches the time by 1 / share.
        let held = self.component.as_secs_f64() * (self.depth + MISS_FACTOR as usize + 2) as f64;
        let irq = self
            .interrupts
            .map_or(0.0, |i| held * i.rate * i.length.as_secs_f64());
        let share = self.swing.map_or(1.0, |s| s.share);
        let total = (per.as_secs_f64() + irq) / share * (self.threads * self.lookups) as f64;
        Some(Duration::from_secs_f64(total * 4.0 + 60.0))
    }
}

/// The dcache's tree: `files` entries over `depth` levels, every file (leaf) at the last level,
/// in a [`Dentries`] cache (a real hash table keyed by (parent, name), a real reference count
/// per entry).
///
/// Level `k` holds `sizes[k]` entries, growing geometrically (at least as many as the level
/// above, so that every directory has a child); entry `j` of level `k` has parent
/// `j · sizes[k-1] / sizes[k]` of level `k-1`. A name is an entry's index in its level.
#[derive(Debug)]
struct Tree {
    /// The first global id of each level.
    level_start: Vec<u32>,
    /// The entries (global ids), the cached ones in its hash table.
    dentries: Dentries,
    /// Cumulative popularity of the files by rank (the last is 1).
    cdf: Vec<f64>,
    /// The file (index among leaves) of each popularity rank.
    leaf_of_rank: Vec<u32>,
}

impl Tree {
    fn new(files: usize, depth: usize, skew: f64, cached_percent: u32) -> Tree {
        let sizes = level_sizes(files, depth);
        let mut level_start = Vec::with_capacity(depth);
        let mut parent = Vec::with_capacity(files);
        for (k, &n) in sizes.iter().enumerate() {
            level_start.push(parent.len() as u32);
            for j in 0..n {
                parent.push(if k == 0 {
                    ROOT
                } else {
                    let above = sizes[k - 1];
                    level_start[k - 1] + (j * above / n) as u32
                });
            }
        }
        let leaves = *sizes.last().expect("depth >= 1");
        let first_leaf = *level_start.last().expect("depth >= 1") as usize;
        // Popularity by rank, and ranks scattered over the files by a fixed permutation.
        let weights: Vec<f64> = (0..leaves).map(|r| (r as f64 + 1.0).powf(-skew)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cdf: Vec<f64> = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        let mut leaf_of_rank: Vec<u32> = (0..leaves as u32).collect();
        let mut rng = SplitMix::new(0xdcac_4e00);
        for i in (1..leaf_of_rank.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            leaf_of_rank.swap(i, j);
        }
        // Each entry's popularity: its files' summed weights.
        let mut popularity = vec![0.0; parent.len()];
        for (rank, &leaf) in leaf_of_rank.iter().enumerate() {
            let mut e = first_leaf as u32 + leaf;
            loop {
                popularity[e as usize] += weights[rank];
                e = parent[e as usize];
                if e == ROOT {
                    break;
                }
            }
        }
        // The dcache holds the most popular entries (a directory before its files on a tie).
        let mut order: Vec<u32> = (0..parent.len() as u32).collect();
        order.sort_by(|&a, &b| {
            popularity[b as usize]
                .total_cmp(&popularity[a as usize])
                .then(a.cmp(&b))
        });
        let held = parent.len() * cached_percent as usize / 100;
        // A name is an entry's index in its level.
        let name = (0..parent.len() as u32)
            .map(|e| e - level_start[level_start.partition_point(|&s| s <= e) - 1])
            .collect();
        Tree {
            dentries: Dentries::new(parent, name, order[..held].iter().copied()),
            level_start,
            cdf,
            leaf_of_rank,
        }
    }

    /// Number of files.
    fn leaves(&self) -> usize {
        self.leaf_of_rank.len()
    }

    /// Draw a file (index among leaves) by popularity.
    fn draw(&self, rng: &mut SplitMix) -> u32 {
        let u = rng.unit();
        let rank = self
            .cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1);
        self.leaf_of_rank[rank]
    }

    /// The global ids of the components of file `leaf`'s path, from the top.
    fn path(&self, leaf: u32) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.level_start.len());
        self.path_into(leaf, &mut out);
        out
    }

    /// [`Tree::path`] into `out` (cleared first): a walk reuses one buffer, so that no
    /// allocation falls inside the lookup it times.
    fn path_into(&self, leaf: u32, out: &mut Vec<u32>) {
        out.clear();
        let mut e = *self.level_start.last().expect("depth >= 1") + leaf;
        while e != ROOT {
            out.push(e);
            e = self.dentries.parent(e);
        }
        out.reverse();
    }

    /// File `leaf`'s path as text, relative to the tree's top (`d3/d17/…/f912`).
    fn path_text(&self, leaf: u32) -> String {
        let ids = self.path(leaf);
        let mut s = String::from("tree");
        for (k, &e) in ids.iter().enumerate() {
            let prefix = if k + 1 == ids.len() { 'f' } else { 'd' };
            s.push_str(&format!("/{prefix}{}", e - self.level_start[k]));
        }
        s
    }
}

/// Entries per level for `files` entries over `depth` levels: growing geometrically, each level
/// at least as large as the one above, summing to `files` exactly (`files >= depth`).
fn level_sizes(files: usize, depth: usize) -> Vec<usize> {
    // The ratio r with r + r² + … + r^depth ≈ files, found by bisection.
    let sum = |r: f64| (1..=depth).map(|k| r.powi(k as i32)).sum::<f64>();
    let (mut lo, mut hi) = (1.0_f64, files as f64);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if sum(mid) > files as f64 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let mut sizes = Vec::with_capacity(depth);
    let mut used = 0;
    for k in 1..depth {
        let above = sizes.last().copied().unwrap_or(1);
        // Leave room for the levels below, each at least this large.
        let room = (files - used) / (depth - k + 1);
        let n = (lo.powi(k as i32).round() as usize).clamp(above, room.max(above));
        sizes.push(n);
        used += n;
    }
    sizes.push(files - used);
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_sizes_sum_to_files_and_never_shrink() {
        for (files, depth) in [
            (6, 6),
            (7, 6),
            (10_000, 6),
            (100, 1),
            (1_000_000, 32),
            (50, 3),
        ] {
            let s = level_sizes(files, depth);
            assert_eq!(s.len(), depth);
            assert_eq!(s.iter().sum::<usize>(), files, "{files} {depth}: {s:?}");
            assert!(s[0] >= 1 && s.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
        }
    }

    #[test]
    fn every_path_has_depth_components_and_resolves_when_all_is_cached() {
        let t = Tree::new(1000, 5, 1.0, 100);
        for leaf in 0..t.leaves() as u32 {
            let p = t.path(leaf);
            assert_eq!(p.len(), 5);
            let mut parent = ROOT;
            for &e in &p {
                assert_eq!(t.dentries.lookup(parent, e), Some(e));
                parent = e;
            }
        }
        assert!(t.path_text(0).starts_with("tree/d"));
    }

    #[test]
    fn the_dcache_holds_the_popular_entries() {
        let t = Tree::new(10_000, 6, 1.0, 90);
        assert_eq!(t.dentries.cached(), 9000);
        // The most popular file and its directories are cached; misses are the tail's.
        let top = t.leaf_of_rank[0];
        let mut parent = ROOT;
        for e in t.path(top) {
            assert!(t.dentries.lookup(parent, e).is_some());
            parent = e;
        }
    }

    #[test]
    fn exp_gaps_have_the_requests_mean_and_spread_fixed_ones_do_not() {
        let mut l = Lookup::default();
        let mut rng = SplitMix::new(GAP_SEED);
        assert_eq!(l.gap(&mut rng), l.request);
        l.set_param("gaps", "exp").unwrap();
        let draws: Vec<f64> = (0..20_000)
            .map(|_| l.gap(&mut rng).as_secs_f64() / l.request.as_secs_f64())
            .collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        // An exponential's mean and standard deviation are equal.
        assert!((mean - 1.0).abs() < 0.03, "mean {mean}");
        assert!((var.sqrt() - 1.0).abs() < 0.05, "sd {}", var.sqrt());
        let e = l.set_param("gaps", "poisson").unwrap_err().to_string();
        assert!(e.contains("'poisson'") && e.contains("fixed or exp"), "{e}");
    }

    #[test]
    fn bad_input_is_refused_with_the_value() {
        let mut l = Lookup::default();
        let e = l.set_param("depth", "0").unwrap_err().to_string();
        assert!(e.contains("depth") && e.contains("1..32"), "{e}");
        let e = l.set_param("dcache", "seqlock").unwrap_err().to_string();
        assert!(
            e.contains("'seqlock'") && e.contains("lock, fastwalk, rcu or kernel"),
            "{e}"
        );
        l.set_param("depth", "8").unwrap();
        l.set_param("files", "5").unwrap();
        let e = l.validate().unwrap_err().to_string();
        assert!(
            e.contains("paths of 8 components in a tree of 5 entries"),
            "{e}"
        );
    }
    #[test]
    fn calls_are_stats_and_opens_recorded_only_when_not_one_stat() {
        let mut l = Lookup::default();
        let p = l.params();
        assert!(!p.contains_key("calls") && !p.contains_key("between"));
        l.set_param("calls", "stat+open").unwrap();
        assert_eq!(l.calls, [Call::Stat, Call::Open]);
        let p = l.params();
        assert_eq!(p.get("calls").map(String::as_str), Some("stat+open"));
        assert_eq!(p.get("between").map(String::as_str), Some("20.000us"));
        l.validate().unwrap();
        l.set_param("lookups", "2001").unwrap();
        let e = l.validate().unwrap_err().to_string();
        assert!(
            e.contains("2001 lookups") && e.contains("a multiple of 2"),
            "{e}"
        );
        l.set_param("lookups", "2000").unwrap();
        l.set_param("dcache", "kernel").unwrap();
        let e = l.validate().unwrap_err().to_string();
        assert!(
            e.contains("calls=stat+open") && e.contains("dcache=kernel"),
            "{e}"
        );
        let many = vec!["stat"; 17].join("+");
        for bad in ["", "stat+", "lstat", "stat,open", many.as_str()] {
            let e = l.set_param("calls", bad).unwrap_err().to_string();
            assert!(e.contains("calls") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn prune_is_a_hold_and_a_rate_recorded_only_when_set() {
        let mut l = Lookup::default();
        assert!(!l.params().contains_key("prune"));
        l.set_param("prune", "6.7ms/2000").unwrap();
        assert_eq!(
            l.prune,
            Some(Prune {
                hold: Duration::from_micros(6_700),
                every: 2000
            })
        );
        assert_eq!(
            l.params().get("prune").map(String::as_str),
            Some("6.700ms/2000")
        );
        l.set_param("prune", "none").unwrap();
        assert_eq!(l.prune, None);
        for bad in ["5ms", "5ms/0", "5ms/x", "2s/10", "x/10", "5ms/100000001"] {
            let e = l.set_param("prune", bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("prune"), "{e}");
        }
        l.set_param("prune", "1ms/10").unwrap();
        l.set_param("dcache", "kernel").unwrap();
        let e = l.validate().unwrap_err().to_string();
        assert!(
            e.contains("prune=1.000ms/10") && e.contains("dcache=kernel"),
            "{e}"
        );
    }

    #[test]
    fn interrupts_are_a_rate_and_a_length_recorded_only_when_set() {
        let mut l = Lookup::default();
        assert!(!l.params().contains_key("interrupts"));
        l.set_param("interrupts", "200/500us").unwrap();
        assert_eq!(
            l.interrupts,
            Some(Interrupts {
                rate: 200.0,
                length: Duration::from_micros(500)
            })
        );
        assert_eq!(
            l.params().get("interrupts").map(String::as_str),
            Some("200/500.000us")
        );
        l.validate().unwrap();
        for bad in ["200", "x/1ms", "-1/1ms", "2000000/1ms", "200/21ms", "200/x"] {
            let e = l.set_param("interrupts", bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("interrupts"), "{e}");
        }
        l.set_param("dcache", "kernel").unwrap();
        let e = l.validate().unwrap_err().to_string();
        assert!(
            e.contains("interrupts=200/500.000us") && e.contains("dcache=kernel"),
            "{e}"
        );
        l.set_param("interrupts", "none").unwrap();
        assert_eq!(l.interrupts, None);
        l.validate().unwrap();
    }

    #[test]
    fn swing_serves_in_the_first_share_of_each_period_and_is_recorded_only_when_set() {
        let mut l = Lookup::default();
        assert!(!l.params().contains_key("swing"));
        l.set_param("swing", "20ms/0.25").unwrap();
        let s = l.swing.unwrap();
        assert_eq!(
            l.params().get("swing").map(String::as_str),
            Some("20.000ms/0.25")
        );
        let ms = Duration::from_millis;
        // Serving in [0, 5ms) of every 20 ms; sleeping to the next period's start after.
        assert_eq!(s.resume_at(ms(0)), None);
        assert_eq!(s.resume_at(ms(4)), None);
        assert_eq!(s.resume_at(ms(5)), Some(ms(20)));
        assert_eq!(s.resume_at(ms(19)), Some(ms(20)));
        assert_eq!(s.resume_at(ms(41)), None);
        assert_eq!(s.resume_at(ms(47)), Some(ms(60)));
        // A request's work is the share of what it would be.
        let mut rng = SplitMix::new(GAP_SEED);
        assert_eq!(l.served_gap(&mut rng), l.request.mul_f64(0.25));
        for bad in ["20ms", "0/0.5", "20ms/0", "20ms/1.5", "11s/0.5", "20ms/x"] {
            let e = l.set_param("swing", bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("swing"), "{e}");
        }
        l.set_param("swing", "none").unwrap();
        assert_eq!(l.swing, None);
    }
}
