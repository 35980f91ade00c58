//! The result record: one self-describing, versioned JSON document per `schedlab run`.
//!
//! Both backends write it; `stats` and `report` read only it, so results from different machines,
//! kernels and simulated policies can be compared later.

use crate::knobs::Knobs;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the record layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Which direction of a metric is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Larger values are better (throughput).
    Higher,
    /// Smaller values are better (time, latency).
    Lower,
}

/// A metric a workload reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricDef {
    /// Name, as in the per-repetition map.
    pub name: String,
    /// Unit for display.
    pub unit: String,
    /// Direction of improvement.
    pub better: Better,
    /// One line saying how it is computed.
    pub description: String,
}

/// Facts about the machine and kernel a run was made on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MachineInfo {
    /// Host name.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// `uname -m`.
    pub arch: String,
    /// CPUs online.
    pub cpus: usize,
    /// CPU model name, if known.
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// The kernel's preemption model (`none`, `voluntary`, `full`, `lazy`, or what is known).
    #[serde(default)]
    pub preempt: Option<String>,
}

/// Where a run executed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BackendInfo {
    /// `real` or `sim`.
    pub kind: String,
    /// Simulated policy and its parameters (`o1:threshold=40`), for `sim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Simulator seed of the first repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Other backend facts (counter sources, cost profile, …).
    #[serde(default)]
    pub details: BTreeMap<String, String>,
}

/// A task group of a configuration, with the knobs it ran under.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupInfo {
    /// Group name.
    pub name: String,
    /// Number of tasks.
    pub tasks: usize,
    /// Knobs applied to every task of the group.
    pub knobs: Knobs,
    /// Settings the group's first task really had, read back from the kernel (real backend:
    /// `/proc/thread-self/{stat,sched,status}`): nice, policy, prio, slice_ns, cpus; and
    /// timer_slack_ns, the thread's timer slack at its end (PR_GET_TIMERSLACK; 0 for a
    /// real-time thread).
    #[serde(default)]
    pub observed: BTreeMap<String, String>,
}

/// The counters group of a simulated machine's kernel threads (FreeBSD's netisr thread), kept
/// beside the workload's groups and outside `total`.
pub const KERNEL_GROUP: &str = "kernel";

/// Scheduler counters summed over a set of tasks for one repetition. `None` means the source
/// was not available on this machine (see [`CounterSources`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Counters {
    /// Voluntary context switches (the task blocked or yielded).
    pub voluntary_switches: Option<u64>,
    /// Involuntary context switches (the task was preempted).
    pub involuntary_switches: Option<u64>,
    /// Migrations between CPUs.
    pub migrations: Option<u64>,
    /// Wakeups of these tasks (sched_wakeup events: the seed's "calls to wake_up").
    pub wakeups: Option<u64>,
    /// Wakeups of these tasks that preempted the task running on the target CPU.
    pub wakeup_preemptions: Option<u64>,
    /// Of [`Counters::wakeup_preemptions`], those where the wakee's CPU was another CPU (or a
    /// timer fired there): it was interrupted (a reschedule IPI) and switched at once. The real
    /// backend tells the kinds apart by the CPU the wakeup was made on (in-kernel counters: where
    /// `sched_wakeup` ran and whether the wakeup was queued to the wakee's CPU; tracefs: the CPU
    /// `sched_waking` fired on), when it is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions_at_once: Option<u64>,
    /// Of [`Counters::wakeup_preemptions`], those on the waker's own CPU: need_resched was set
    /// and the switch came at the waker's next preemption point — its return to user mode (on a
    /// real kernel built with full preemption, possibly earlier, in the kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions_at_return: Option<u64>,
    /// Of [`Counters::wakeup_preemptions`], those that set only the lazy need-resched flag
    /// (`TIF_NEED_RESCHED_LAZY`, a kernel in `preempt=lazy` mode): the running task gives way
    /// at the next tick instead of at its next preemption point. Counted by the real backend's
    /// in-kernel counters on kernels that have the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions_lazy: Option<u64>,
    /// CPU time consumed, in seconds.
    pub cpu_time_s: f64,
    /// Simulated machines with sockets: CPU time of the tasks' computes, in seconds (with the
    /// remote-memory cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_s: Option<f64>,
    /// Of [`Counters::compute_s`], the computes run on a node other than their task's memory's
    /// (first touch), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_compute_s: Option<f64>,
    /// The real kernel, a file whose computes are cumulative (a recorded program's): what the
    /// tasks' computes asked and found (tasks that ran none are not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative: Option<CumulativeComputes>,
}

/// Cumulative computes on the real kernel, summed over a set of tasks for one repetition: each
/// compute runs until its task's CPU time reaches the sum of its computes so far, so a task
/// uses its computes' sum unless its other steps (sleeps, waits, messages, the clock reads)
/// cost more than the computes leave them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CumulativeComputes {
    /// The computes' sums, in seconds.
    pub sum_s: f64,
    /// CPU time the tasks used beyond their computes' sums (each task's excess, or 0), in
    /// seconds: what their other steps cost beyond what the computes left them.
    pub beyond_s: f64,
    /// Computes run.
    pub computes: u64,
    /// Of them, those that found their task already at or past its sum so far, and spent
    /// nothing.
    pub past: u64,
}

impl CumulativeComputes {
    /// Add another set into this one.
    pub fn add(&mut self, other: &CumulativeComputes) {
        self.sum_s += other.sum_s;
        self.beyond_s += other.beyond_s;
        self.computes += other.computes;
        self.past += other.past;
    }
}

/// `part` as a percentage of `wakeups`, when both are known and there were wakeups.
fn percent_of_wakeups(wakeups: Option<u64>, part: Option<u64>) -> Option<f64> {
    match (wakeups, part) {
        (Some(w), Some(p)) if w > 0 => Some(100.0 * p as f64 / w as f64),
        _ => None,
    }
}

impl Counters {
    /// Add another set of counters into this one (`None` stays `None` only if both are).
    pub fn add(&mut self, other: &Counters) {
        fn add(a: &mut Option<u64>, b: Option<u64>) {
            *a = match (*a, b) {
                (Some(x), Some(y)) => Some(x + y),
                (x, None) => x,
                (None, y) => y,
            };
        }
        add(&mut self.voluntary_switches, other.voluntary_switches);
        add(&mut self.involuntary_switches, other.involuntary_switches);
        add(&mut self.migrations, other.migrations);
        add(&mut self.wakeups, other.wakeups);
        add(&mut self.wakeup_preemptions, other.wakeup_preemptions);
        add(&mut self.preemptions_at_once, other.preemptions_at_once);
        add(&mut self.preemptions_at_return, other.preemptions_at_return);
        add(&mut self.preemptions_lazy, other.preemptions_lazy);
        self.cpu_time_s += other.cpu_time_s;
        fn add_f(a: &mut Option<f64>, b: Option<f64>) {
            *a = match (*a, b) {
                (Some(x), Some(y)) => Some(x + y),
                (x, None) => x,
                (None, y) => y,
            };
        }
        add_f(&mut self.compute_s, other.compute_s);
        add_f(&mut self.remote_compute_s, other.remote_compute_s);
        if let Some(b) = other.cumulative {
            self.cumulative.get_or_insert_default().add(&b);
        }
    }

    /// Share of the compute time run off the tasks' memory nodes, in percent (simulated
    /// machines with sockets).
    pub fn remote_compute_percent(&self) -> Option<f64> {
        match (self.compute_s, self.remote_compute_s) {
            (Some(c), Some(r)) if c > 0.0 => Some(100.0 * r / c),
            _ => None,
        }
    }

    /// Share of wakeups that preempted the running task, in percent.
    pub fn preemption_percent(&self) -> Option<f64> {
        percent_of_wakeups(self.wakeups, self.wakeup_preemptions)
    }

    /// Shares of wakeups that preempted at once and at the waker's return to user mode, in
    /// percent (`None` where the source cannot tell them apart).
    pub fn preemption_split_percent(&self) -> Option<(f64, f64)> {
        Some((
            percent_of_wakeups(self.wakeups, self.preemptions_at_once)?,
            percent_of_wakeups(self.wakeups, self.preemptions_at_return)?,
        ))
    }
}

/// Where each counter of a configuration came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterSources {
    /// Source of context-switch counts (`/proc/thread-self/sched`, `getrusage`, `sim`).
    pub switches: String,
    /// Source of migration counts, or `unavailable`.
    pub migrations: String,
    /// Source of wakeup and preemption counts (`tracefs`, `sim`), or why they are unavailable.
    pub wakeups: String,
}

/// One repetition's measurements.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Repetition {
    /// Metric values, by metric name.
    pub metrics: BTreeMap<String, f64>,
    /// Counters per group name, plus `total`.
    pub counters: BTreeMap<String, Counters>,
    /// Trace events the kernel dropped in this repetition (counters are then lower bounds).
    #[serde(default)]
    pub lost_events: u64,
    /// Per-CPU accounting (simulator only: busy and idle time, runqueue length over time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuCounters>,
    /// Scheduling events the simulator processed (simulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim_events: Option<u64>,
    /// Which repetition of its configuration this is (0-based; the simulator ran it with seed
    /// SEED + index), written only by a shard of a sharded sweep, whose record holds some of a
    /// configuration's repetitions; elsewhere a repetition's place in the list is its index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// Per lock, its statistics in this repetition: the workload's own locks, and on the
    /// simulator the kernel locks the machine and its policy model (absent from older records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<LockStats>,
    /// The run-queue timeline's figures and a downsampled drawing (`--timeline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::timeline::TimelineSummary>,
    /// The distribution of the tasks' wakeup latencies (a `sched_waking` of a sleeping task to
    /// its next switch-in), where the whole distribution was measured: the run record
    /// `schedlab record --json` writes of the recorded program. `compare` states the
    /// Kolmogorov–Smirnov distance between two records that have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup_latency: Option<Distribution>,
}

/// A distribution of measured values, kept as a histogram: each distinct bucket of an HDR
/// histogram (3 significant digits, so exact to 1 µs below 2 ms and to 0.1 % above) with the
/// number of samples in it, in increasing order — bounded by the histogram's size whatever the
/// number of samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Distribution {
    /// The unit of the values (`us`).
    pub unit: String,
    /// `[value, count]` pairs, values increasing: the bucket's highest equivalent value and how
    /// many samples fell in it.
    pub buckets: Vec<(f64, u64)>,
}

impl Distribution {
    /// Samples in the distribution.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|&(_, n)| n).sum()
    }

    /// The distributions of `parts` (in one unit) as one: their buckets' counts summed.
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a Distribution>) -> Option<Distribution> {
        let mut unit = None;
        let mut all: Vec<(f64, u64)> = Vec::new();
        for d in parts {
            unit.get_or_insert_with(|| d.unit.clone());
            all.extend(&d.buckets);
        }
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut buckets: Vec<(f64, u64)> = Vec::with_capacity(all.len());
        for (v, n) in all {
            match buckets.last_mut() {
                Some(last) if last.0 == v => last.1 += n,
                _ => buckets.push((v, n)),
            }
        }
        Some(Distribution {
            unit: unit?,
            buckets,
        })
    }

    /// The two-sample Kolmogorov–Smirnov distance to `other`: the largest difference between
    /// the two empirical distribution functions, over the union of both bucket lists (exact for
    /// the histograms; both must be in the same unit). `None` when either is empty.
    pub fn ks_distance(&self, other: &Distribution) -> Option<f64> {
        let (na, nb) = (self.count() as f64, other.count() as f64);
        if na == 0.0 || nb == 0.0 {
            return None;
        }
        let (a, b) = (&self.buckets, &other.buckets);
        let (mut i, mut j) = (0, 0);
        let (mut ca, mut cb) = (0u64, 0u64);
        let mut d: f64 = 0.0;
        // Step both functions to each value in turn; ties step together.
        while i < a.len() || j < b.len() {
            let v = match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) => x.0.min(y.0),
                (Some(x), None) => x.0,
                (None, Some(y)) => y.0,
                (None, None) => break,
            };
            while i < a.len() && a[i].0 <= v {
                ca += a[i].1;
                i += 1;
            }
            while j < b.len() && b[j].0 <= v {
                cb += b[j].1;
                j += 1;
            }
            d = d.max((ca as f64 / na - cb as f64 / nb).abs());
        }
        Some(d)
    }
}

/// One lock's statistics over one repetition, as lockmeter keeps them per spin lock (Sarma's
/// lockmeter output in seeds/003: hold and wait time mean and max, utilisation, contention, the
/// CPU share spent spinning). Times are nanoseconds; the report derives the percentages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LockStats {
    /// The lock's name: the workload's (`lock[0]`, a workload file's name) or the kernel's
    /// (`runqueue_lock`, `rq[3]`, `sched_lock`, `net_lock`).
    pub name: String,
    /// How a waiter waits: `spin` or `sleep`.
    pub kind: String,
    /// A kernel lock the simulated machine or its policy models, not the workload's.
    #[serde(default)]
    pub kernel: bool,
    /// Times the lock was taken.
    pub acquisitions: u64,
    /// Of those, the ones that found it held and had to wait.
    pub waited: u64,
    /// Total time it was held, from each acquisition to its release.
    pub hold_ns: u64,
    /// Longest single hold.
    pub hold_max_ns: u64,
    /// Total time takers waited, from asking for it to getting it.
    pub wait_ns: u64,
    /// Longest single wait.
    pub wait_max_ns: u64,
    /// CPU time waiters spent spinning for it (0 for a sleeping lock).
    pub spin_ns: u64,
    /// The repetition's elapsed time (the denominator of utilisation).
    pub elapsed_ns: u64,
    /// CPU time available in the repetition: elapsed time × CPUs (the denominator of the CPU
    /// share spent spinning, as lockmeter's `% CPU`).
    pub cpu_ns: u64,
}

impl LockStats {
    /// A lock named `name` of `kind` (`spin` or `sleep`), the kernel's or the workload's, with
    /// nothing counted yet.
    pub fn new(name: String, kind: &str, kernel: bool) -> LockStats {
        LockStats {
            name,
            kind: kind.to_string(),
            kernel,
            ..LockStats::default()
        }
    }

    /// Count an acquisition after waiting `wait` ns (0: it was free).
    // Inline: the simulator counts a runqueue lock at every switch, from another crate.
    #[inline]
    pub fn acquired(&mut self, wait: u64) {
        self.acquisitions += 1;
        if wait > 0 {
            self.waited += 1;
            self.wait_ns += wait;
            self.wait_max_ns = self.wait_max_ns.max(wait);
        }
    }

    /// Count a release after holding the lock `hold` ns.
    // Inline: the simulator counts a runqueue lock at every switch, from another crate.
    #[inline]
    pub fn released(&mut self, hold: u64) {
        self.hold_ns += hold;
        self.hold_max_ns = self.hold_max_ns.max(hold);
    }

    /// Add `other`'s counts and times (the same lock in another repetition): totals add, maxima
    /// take the larger.
    pub fn add(&mut self, other: &LockStats) {
        self.acquisitions += other.acquisitions;
        self.waited += other.waited;
        self.hold_ns += other.hold_ns;
        self.hold_max_ns = self.hold_max_ns.max(other.hold_max_ns);
        self.wait_ns += other.wait_ns;
        self.wait_max_ns = self.wait_max_ns.max(other.wait_max_ns);
        self.spin_ns += other.spin_ns;
        self.elapsed_ns += other.elapsed_ns;
        self.cpu_ns += other.cpu_ns;
    }

    /// Held time over elapsed time, 0..=1 (0 with no elapsed time).
    pub fn utilisation(&self) -> f64 {
        ratio(self.hold_ns, self.elapsed_ns)
    }

    /// Share of acquisitions that had to wait, 0..=1.
    pub fn contention(&self) -> f64 {
        ratio(self.waited, self.acquisitions)
    }

    /// Mean hold time, ns.
    pub fn hold_mean_ns(&self) -> f64 {
        ratio(self.hold_ns, self.acquisitions)
    }

    /// Mean wait of the acquisitions that waited, ns (lockmeter's WAIT MEAN).
    pub fn wait_mean_ns(&self) -> f64 {
        ratio(self.wait_ns, self.waited)
    }

    /// Share of the machine's CPU time spent spinning for the lock, 0..=1.
    pub fn spin_share(&self) -> f64 {
        ratio(self.spin_ns, self.cpu_ns)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// One CPU's accounting over a simulated repetition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuCounters {
    /// Seconds the CPU ran a task (including switch and tick overheads charged to tasks).
    pub busy_s: f64,
    /// Seconds the CPU was idle.
    pub idle_s: f64,
    /// Runnable tasks on its runqueue (queued + running), averaged over time.
    pub mean_runnable: f64,
    /// Most runnable tasks on its runqueue at any moment.
    pub max_runnable: usize,
}

/// Descriptive statistics of one metric over the repetitions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1).
    pub sd: f64,
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
}

/// What the summary of a metric adds to [`Summary`]: its confidence interval, the harmonic mean
/// and the repetitions flagged as outliers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    /// Half-width of the confidence interval of the mean at the record's `level` (none for N < 2).
    pub half_width: Option<f64>,
    /// Harmonic mean, for higher-is-better rates (none when undefined).
    pub harmonic_mean: Option<f64>,
    /// Repetitions (0-based, in run order) whose modified z-score exceeds 3.5 — flagged, never
    /// dropped; judged only among 5 or more repetitions (records before that rule may flag
    /// some among fewer, which readers ignore).
    pub outliers: Vec<usize>,
}

/// One configuration (one point of a parameter list such as `--threads 1,2,4`) and its results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigResult {
    /// Short label (`threads=16`), empty for a single configuration.
    pub label: String,
    /// Workload parameters.
    pub params: BTreeMap<String, String>,
    /// Simulated machine of this configuration (`eevdf on 8 CPUs, modern`), when it ran on the
    /// simulator; a sweep may vary it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Task groups and their knobs.
    pub groups: Vec<GroupInfo>,
    /// Where the counters came from.
    pub counter_sources: CounterSources,
    /// Every measured repetition (warm-up runs are not recorded).
    pub repetitions: Vec<Repetition>,
    /// Summary per metric.
    pub summary: BTreeMap<String, Summary>,
    /// Confidence interval, harmonic mean and outliers per metric.
    #[serde(default)]
    pub intervals: BTreeMap<String, Interval>,
    /// With a stopping rule: whether the primary metric's interval reached the precision before
    /// the run limit. `None` when a fixed number of runs was asked for.
    #[serde(default)]
    pub converged: Option<bool>,
}

impl ConfigResult {
    /// The value of a varied key (`threads`, `server.nice`, `policy`) in this configuration, as
    /// tables show it (`-` where it has none).
    pub fn key_value(&self, key: &str) -> String {
        // A parameter's own name first: a workload file's `GROUP.count` is a parameter.
        if let Some(v) = self.params.get(key) {
            return v.clone();
        }
        if let Some((group, knob)) = key.split_once('.') {
            let Some(g) = self.groups.iter().find(|g| g.name == group) else {
                return "-".into();
            };
            let k = &g.knobs;
            return match knob {
                "nice" => k.nice.unwrap_or(0).to_string(),
                "policy" => k.policy.map_or("other".into(), |p| p.to_string()),
                "slice" => k
                    .slice()
                    .map_or("default".into(), crate::duration::format_duration),
                "cpus" => k.cpus.as_ref().map_or("all".into(), |c| c.to_string()),
                "mode" => k.mode.map_or("user".into(), |m| m.to_string()),
                _ => "-".into(),
            };
        }
        // Keys of the simulated machine (policy, cpus, profile) are spelled out in the label.
        self.label
            .split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .map_or_else(|| "-".into(), str::to_string)
    }
}

/// The tool that wrote a record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolInfo {
    /// Always `schedlab`.
    pub name: String,
    /// The tool's version.
    pub version: String,
}

/// One `schedlab run`: everything needed to read the result later without the command line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    /// The record layout's version ([`SCHEMA_VERSION`] when written); a reader refuses a
    /// version it does not read.
    pub schema: u32,
    /// Tool name and version.
    pub tool: ToolInfo,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    /// The command line.
    pub command: Vec<String>,
    /// Machine and kernel facts.
    pub machine: MachineInfo,
    /// Workload name.
    pub workload: String,
    /// Backend.
    pub backend: BackendInfo,
    /// Metrics the workload reports, primary first.
    pub metrics: Vec<MetricDef>,
    /// Warm-up repetitions run (and discarded) before each configuration.
    pub warmup: usize,
    /// Whether the run was interrupted; the repetitions that finished are kept.
    pub interrupted: bool,
    /// Confidence level (percent) of the intervals.
    #[serde(default = "default_level")]
    pub level: f64,
    /// The stopping rule (`95:2%`), if the repetitions were run until convergence.
    #[serde(default)]
    pub until: Option<String>,
    /// Configurations in the order they ran.
    pub configs: Vec<ConfigResult>,
    /// The slice of a sharded sweep this record holds (`sweep --shard K/N`); absent for a whole
    /// run or sweep, and for the record `schedlab merge` makes of the shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// A search for the largest value of a parameter that still passes (`run web --find-max`):
    /// every candidate tried and the answer; each candidate's repetitions are a configuration
    /// of `configs`. Absent for an ordinary run or sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchInfo>,
}

/// A search for the largest value of a parameter whose metric's interval is at or above a
/// threshold (schedlab_experiment::search).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchInfo {
    /// The parameter searched (`connections`).
    pub param: String,
    /// The metric judged (`conforming_share`).
    pub metric: String,
    /// The value the metric's interval must be at or above to pass (95).
    pub threshold: f64,
    /// Confidence level of the intervals, percent.
    pub level: f64,
    /// The first candidate.
    pub start: u64,
    /// The largest candidate the search may try.
    pub limit: u64,
    /// The most repetitions one candidate may take.
    pub max_runs: usize,
    /// The most repetitions the whole search may take.
    pub total_runs: usize,
    /// The rule, in words.
    pub rule: String,
    /// Every candidate, in the order tried.
    pub candidates: Vec<SearchCandidate>,
    /// The largest candidate that passed, if any.
    pub maximum: Option<u64>,
    /// The smallest candidate that did not pass, if any.
    pub first_failing: Option<u64>,
    /// Why the search ended: `converged` (the maximum passes and the next value does not),
    /// `limit` (the largest candidate allowed passes), `no-pass` (even the smallest fails),
    /// `budget` (the total repetitions ran out) or `interrupted`.
    pub ended: String,
}

/// One candidate of a search.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchCandidate {
    /// The parameter's value.
    pub value: u64,
    /// Repetitions run.
    pub runs: usize,
    /// Mean of the metric.
    pub mean: f64,
    /// Half-width of its confidence interval (absent with fewer than 2 runs).
    pub half_width: Option<f64>,
    /// `pass`, `fail` or `undecided` (counted as not passing).
    pub verdict: String,
}

/// Which slice of a sharded sweep a record holds: the sweep's configurations × repetitions,
/// numbered round by round, are cut into `count` consecutive blocks; this is block `index`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShardInfo {
    /// The shard's number, 1..=count.
    pub index: usize,
    /// How many shards the sweep is cut into.
    pub count: usize,
    /// Measured repetitions per configuration in the whole sweep (`--runs`).
    pub runs: usize,
}

fn default_level() -> f64 {
    95.0
}

impl RunRecord {
    /// The primary metric (the first one the workload defines).
    pub fn primary_metric(&self) -> Option<&MetricDef> {
        self.metrics.first()
    }

    /// A metric's definition by name.
    pub fn metric(&self, name: &str) -> Option<&MetricDef> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Read a record from JSON, refusing records of another schema version.
    pub fn from_json(text: &str) -> Result<RunRecord, RecordError> {
        checked(serde_json::from_str(text), || serde_json::from_str(text))
    }

    /// Read a record from `open()`'s reader, refusing records of another schema version. The
    /// JSON is read straight into the record, never into a document tree first, so memory
    /// follows what the record holds, not the size of the file: an unknown key's value is
    /// skipped as it is read. Only when the record does not parse is `open` called a second
    /// time, to tell a record of another schema (or no record at all) from a malformed one.
    pub fn from_reader<R: std::io::Read>(
        mut open: impl FnMut() -> std::io::Result<R>,
    ) -> Result<RunRecord, RecordError> {
        let first = open().map_err(|e| RecordError::NotARecord(e.to_string()))?;
        checked(serde_json::from_reader(first), || {
            let again = open().map_err(serde_json::Error::io)?;
            serde_json::from_reader(again)
        })
    }

    /// Write the record as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("records always serialize")
    }
}

/// A record's `schema` field alone, every other field skipped as it is read.
#[derive(Deserialize)]
struct SchemaOnly {
    #[serde(default)]
    schema: Option<serde_json::Value>,
}

/// The record `parsed`, checked for its schema version; when it did not parse, `schema_only`
/// reads the text again for its schema field alone, to say why: not JSON or no schema field
/// (not a record), another schema version, or fields missing or of the wrong type.
fn checked(
    parsed: Result<RunRecord, serde_json::Error>,
    schema_only: impl FnOnce() -> Result<SchemaOnly, serde_json::Error>,
) -> Result<RunRecord, RecordError> {
    let e = match parsed {
        Ok(r) if r.schema == SCHEMA_VERSION => return Ok(r),
        Ok(r) => return Err(RecordError::Schema(r.schema as u64)),
        Err(e) => e,
    };
    let schema = schema_only().map_err(|e| RecordError::NotARecord(e.to_string()))?;
    match schema.schema.as_ref().and_then(|s| s.as_u64()) {
        Some(s) if s == SCHEMA_VERSION as u64 => Err(RecordError::Malformed(e.to_string())),
        Some(s) => Err(RecordError::Schema(s)),
        None => Err(RecordError::NotARecord("no \"schema\" field".into())),
    }
}

/// Why a text is not a record this version can read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Not JSON, or JSON without a schema.
    #[error("not a schedlab record: {0}")]
    NotARecord(String),
    /// Another schema version.
    #[error("record schema {0} is not supported; this schedlab reads schema {SCHEMA_VERSION}")]
    Schema(u64),
    /// The right schema, but fields missing or of the wrong type.
    #[error("malformed schedlab record: {0}")]
    Malformed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_distance_of_histograms() {
        let d = |b: &[(f64, u64)]| Distribution {
            unit: "us".into(),
            buckets: b.to_vec(),
        };
        let a = d(&[(1.0, 1), (2.0, 1)]);
        assert_eq!(a.ks_distance(&a), Some(0.0));
        // At 1: 1/2 against 0; at 2: 1 against 1/2; at 3: both 1.
        assert_eq!(a.ks_distance(&d(&[(2.0, 1), (3.0, 1)])), Some(0.5));
        assert_eq!(a.ks_distance(&d(&[(5.0, 7)])), Some(1.0));
        // Counts weigh: 3 of 4 at 1 against 1 of 4.
        let x = d(&[(1.0, 3), (9.0, 1)]);
        assert_eq!(x.ks_distance(&d(&[(1.0, 1), (9.0, 3)])), Some(0.5));
        assert_eq!(x.ks_distance(&d(&[])), None);
        let m = Distribution::merged([&a, &x]).unwrap();
        assert_eq!(m.buckets, vec![(1.0, 4), (2.0, 1), (9.0, 1)]);
        assert_eq!(Distribution::merged([]), None);
    }

    #[test]
    fn record_round_trips_and_checks_schema() {
        let mut rec = RunRecord {
            schema: SCHEMA_VERSION,
            workload: "pingpong".into(),
            ..Default::default()
        };
        let (_, knobs) = crate::knobs::parse_group_arg("ping:nice=5,cpus=0").unwrap();
        let mut rep = Repetition::default();
        rep.metrics.insert("us_per_rt".into(), 12.5);
        rep.counters.insert(
            "total".into(),
            Counters {
                wakeups: Some(10),
                wakeup_preemptions: Some(3),
                preemptions_at_once: Some(1),
                preemptions_at_return: Some(2),
                ..Default::default()
            },
        );
        rec.configs.push(ConfigResult {
            groups: vec![GroupInfo {
                name: "ping".into(),
                tasks: 1,
                knobs,
                observed: BTreeMap::new(),
            }],
            repetitions: vec![rep],
            ..Default::default()
        });
        let back = RunRecord::from_json(&rec.to_json()).unwrap();
        assert_eq!(back, rec);
        let wrong = rec.to_json().replacen("\"schema\": 1", "\"schema\": 99", 1);
        assert!(RunRecord::from_json(&wrong)
            .unwrap_err()
            .to_string()
            .contains("schema 99"));
        assert!(RunRecord::from_json("{}").is_err());
    }

    #[test]
    fn a_reader_skips_unknown_keys_and_tells_what_is_wrong() {
        let rec = RunRecord {
            schema: SCHEMA_VERSION,
            workload: "yield".into(),
            ..Default::default()
        };
        let text = rec.to_json();
        let read = |t: String| RunRecord::from_reader(|| Ok(std::io::Cursor::new(t.clone())));
        // An unknown key (here a large array) is skipped, not kept.
        let junk = format!(
            "{{\"junk\": [{}1], {}",
            "1.5,".repeat(10_000),
            &text.trim_start()[1..]
        );
        assert_eq!(read(junk).unwrap(), rec);
        let other = text.replacen("\"schema\": 1", "\"schema\": 7", 1);
        assert_eq!(read(other).unwrap_err(), RecordError::Schema(7));
        let malformed = text.replacen("\"workload\": \"yield\"", "\"workload\": 3", 1);
        assert!(matches!(
            read(malformed).unwrap_err(),
            RecordError::Malformed(_)
        ));
        let e = read("{\"a\": 1}".into()).unwrap_err();
        assert_eq!(e, RecordError::NotARecord("no \"schema\" field".into()));
        assert!(matches!(
            read("not json".into()).unwrap_err(),
            RecordError::NotARecord(_)
        ));
        // A schema of another version is named even when the rest would not parse.
        assert_eq!(
            read("{\"schema\": 9, \"configs\": 1}".into()).unwrap_err(),
            RecordError::Schema(9)
        );
    }

    #[test]
    fn lock_statistics_round_trip_and_records_without_them_still_load() {
        let rep = Repetition {
            locks: vec![LockStats {
                name: "rq[1]".into(),
                kind: "spin".into(),
                kernel: true,
                acquisitions: 10,
                waited: 4,
                hold_ns: 500,
                hold_max_ns: 80,
                wait_ns: 400,
                wait_max_ns: 200,
                spin_ns: 400,
                elapsed_ns: 1000,
                cpu_ns: 2000,
            }],
            ..Default::default()
        };
        let text = serde_json::to_string(&rep).unwrap();
        assert_eq!(serde_json::from_str::<Repetition>(&text).unwrap(), rep);
        let l = &rep.locks[0];
        assert_eq!(
            (
                l.utilisation(),
                l.contention(),
                l.hold_mean_ns(),
                l.wait_mean_ns()
            ),
            (0.5, 0.4, 50.0, 100.0)
        );
        assert_eq!(l.spin_share(), 0.2);
        // A repetition written before lock statistics existed.
        let old: Repetition = serde_json::from_str(r#"{"metrics":{},"counters":{}}"#).unwrap();
        assert!(old.locks.is_empty());
        assert!(!serde_json::to_string(&old).unwrap().contains("locks"));
    }

    #[test]
    fn preemption_share() {
        let c = Counters {
            wakeups: Some(200),
            wakeup_preemptions: Some(50),
            ..Default::default()
        };
        assert_eq!(c.preemption_percent(), Some(25.0));
        assert_eq!(Counters::default().preemption_percent(), None);
    }
}
