//! `schedlab validate`: a fixed suite of workloads run on the real kernel and, interleaved, on a
//! simulated machine with this machine's CPU count, the policy closest to the running kernel
//! (`eevdf` from Linux 6.6, `cfs` before) and a given cost profile — each row the suite entry's
//! primary metric measured and simulated, and the simulator's error (in % for times and rates,
//! in points for interbench's % of deadlines met).
//!
//! A timing taken while a compiler runs says nothing about the simulator, so the real side is
//! watched: each real run is preceded by a bounded wait for other runnable tasks to go away and
//! watched for other processes' CPU time and steal time (`schedlab_real::interference`); a
//! disturbed run is left out and repeated, runs are interleaved across entries, and a row is
//! judged only when its real side is quiet and narrower than the goal.
//!
//! The suite: messaging over socketpairs and pipes with threads and with processes;
//! ping-pong with both tasks on one CPU and on two; sched_yield with 1 thread, one per CPU, four
//! per CPU and 256; chat in burst mode; interbench's audio and video against no load and against
//! burn, with the benchmarked task at nice 0 and at nice 19. `quick` makes every entry smaller
//! and shorter (a test's budget), not different.

use crate::backend::Backend;
use crate::build::{build_from, BackendRequest, ExperimentRequest, SimRequest};
use crate::error::ExperimentError;
use crate::measure::{measure, Sinks};
use crate::settings::{Budget, CounterMode, Settings};
use crate::{RealBackend, RunEnd, SimBackend, SimMachine};
use schedlab_real::interference::{wait_until_quiet, Interference, InterferenceWatch};
use schedlab_workload::presets::{
    self, Chat, Configurable, Interbench, Messaging, PingPong, Preset, PresetVisitor, Yield,
};
use schedlab_workload::record::RunRecord;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One entry of the suite.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Row label.
    pub name: String,
    /// Workload.
    pub workload: &'static str,
    /// Parameters, as the command line's `--NAME VALUE`.
    pub params: Vec<(String, String)>,
    /// Group knobs, `NAME:knob=value`.
    pub groups: Vec<String>,
    /// The metric compared.
    pub metric: &'static str,
    /// Whether the error is in points (a percentage metric) rather than in %.
    pub points: bool,
}

impl Entry {
    fn new(name: impl Into<String>, workload: &'static str, metric: &'static str) -> Entry {
        Entry {
            name: name.into(),
            workload,
            params: Vec::new(),
            groups: Vec::new(),
            metric,
            points: false,
        }
    }
    fn p(mut self, name: &str, value: impl ToString) -> Entry {
        self.params.push((name.into(), value.to_string()));
        self
    }
    fn g(mut self, group: &str) -> Entry {
        self.groups.push(group.into());
        self
    }
    /// The command line that runs this entry on the real kernel.
    pub fn command(&self) -> String {
        let mut c = format!("schedlab run {}", self.workload);
        for (k, v) in &self.params {
            c.push_str(&format!(" --{k} {v}"));
        }
        for g in &self.groups {
            c.push_str(&format!(" --group {g}"));
        }
        c
    }
}

/// The suite for a machine of `cpus` CPUs.
pub fn suite(cpus: usize, quick: bool) -> Vec<Entry> {
    let (loops, pp_loops, yield_dur, rooms, ib_dur) = if quick {
        (50, 2_000, "300ms", 2, "2s")
    } else {
        (200, 20_000, "1s", 4, "5s")
    };
    let mut s = Vec::new();
    for transport in ["socketpair", "pipe"] {
        for tasks in ["threads", "processes"] {
            s.push(
                Entry::new(
                    format!("messaging {transport} {tasks}"),
                    Messaging::NAME,
                    "time",
                )
                .p("groups", 4)
                .p("loops", loops)
                .p("transport", transport)
                .p("tasks", tasks),
            );
        }
    }
    s.push(
        Entry::new("pingpong, one CPU", PingPong::NAME, "us_per_rt")
            .p("loops", pp_loops)
            .g("ping:cpus=0")
            .g("pong:cpus=0"),
    );
    if cpus > 1 {
        s.push(
            Entry::new("pingpong, two CPUs", PingPong::NAME, "us_per_rt")
                .p("loops", pp_loops)
                .g("ping:cpus=0")
                .g("pong:cpus=1"),
        );
    }
    let mut threads = vec![1, cpus, 4 * cpus, 256];
    threads.dedup();
    for t in threads {
        s.push(
            Entry::new(format!("yield, {t} threads"), Yield::NAME, "us_per_yield")
                .p("threads", t)
                .p("duration", yield_dur),
        );
    }
    s.push(
        Entry::new("chat burst", Chat::NAME, "msgs_per_s")
            .p("rooms", rooms)
            .p("messages", 50)
            .p("mode", "burst"),
    );
    for bench in ["audio", "video"] {
        for load in ["none", "burn"] {
            for nice in [0, 19] {
                let mut e = Entry::new(
                    format!("interbench {bench} vs {load}, nice {nice}"),
                    Interbench::NAME,
                    "deadlines_met",
                )
                .p("bench", bench)
                .p("loads", load)
                .p("duration", ib_dur);
                e.points = true;
                if nice != 0 {
                    e = e.g(&format!("bench:nice={nice}"));
                }
                s.push(e);
            }
        }
    }
    s
}

/// A metric's mean over the repetitions and its 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Mean.
    pub mean: f64,
    /// Half-width of the 95 % confidence interval (NaN with one repetition, written as null).
    pub ci95: Option<f64>,
    /// Repetitions.
    pub n: usize,
}

/// A time or rate row is within the goal when the simulation is within this many % of the
/// measurement.
pub const GOAL_PCT: f64 = 20.0;
/// A deadlines-met row, within this many points.
pub const GOAL_POINTS: f64 = 5.0;

/// One row of the validation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The entry's label.
    pub name: String,
    /// How to run it on the real kernel.
    pub command: String,
    /// The metric and its unit.
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// On the real kernel.
    pub measured: Option<Estimate>,
    /// On the simulator.
    pub simulated: Option<Estimate>,
    /// Simulated − measured: in % of the measured value, or in points for a percentage.
    pub error: Option<f64>,
    /// Whether `error` is in points.
    pub points: bool,
    /// Whether the row can be judged: at least two real runs on a quiet machine, and the real
    /// side's own 95 % interval no wider than the goal ([`GOAL_PCT`], [`GOAL_POINTS`]). A row that
    /// cannot be judged still shows what was measured.
    #[serde(default)]
    pub judged: bool,
    /// Real runs measured while the machine was busy ([`Interference::busy`]) and left out.
    #[serde(default)]
    pub busy_runs: usize,
    /// The worst of what the machine did besides the real runs that were kept (of the busy ones
    /// when none was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<Interference>,
    /// Why a side is missing, or why the row cannot be judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A validation: the simulated machine and every row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// The kernel measured.
    pub kernel: String,
    /// CPUs of this machine and of the simulated one.
    pub cpus: usize,
    /// The simulated policy.
    pub policy: String,
    /// The cost profile (a name or a file).
    pub profile: String,
    /// Repetitions per entry and backend.
    pub runs: usize,
    /// The rows, in suite order.
    pub rows: Vec<Row>,
}

/// The simulated policy closest to a kernel release: `eevdf` from 6.6, `cfs` before.
pub fn closest_policy(release: &str) -> &'static str {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    match (it.next(), it.next()) {
        (Some(major), Some(minor)) if (major, minor) >= (6, 6) => "eevdf",
        _ => "cfs",
    }
}

/// The simulated policy's spec for this kernel: [`closest_policy`], and for `eevdf` the running
/// kernel's base slice when it differs from the model's 6.12 default — read from
/// `/proc/thread-self/sched` (`se.slice`, scaled by `1 + ilog2(min(CPUs, 8))` as
/// SCHED_TUNABLESCALING_LOG does) and turned back into the normalized `base_slice` parameter.
pub fn closest_policy_spec(release: &str, own_slice_ns: Option<u64>, cpus: usize) -> String {
    use schedlab_sim::policy::eevdf::{BASE_SLICE_RANGE_US, BASE_SLICE_US};
    let policy = closest_policy(release);
    let (min, max) = BASE_SLICE_RANGE_US;
    let normalized_us = own_slice_ns
        .map(|s| s / schedlab_sim::policy::fair::tunable_scale(cpus) / 1_000)
        .filter(|&us| (u64::from(min)..=u64::from(max)).contains(&us));
    match (policy, normalized_us) {
        ("eevdf", Some(us)) if us != u64::from(BASE_SLICE_US) => format!("eevdf:base_slice={us}"),
        _ => policy.to_string(),
    }
}

/// What [`validate`] reports as it goes.
#[derive(Debug)]
pub enum Progress<'a> {
    /// A real run of `entry` was measured while the machine was busy and is left out.
    BusyRun {
        /// The entry's label.
        entry: &'a str,
        /// What the machine did besides it.
        seen: &'a Interference,
    },
    /// Waited for other tasks to stop being runnable, and they did not.
    StillBusy {
        /// The entry about to run.
        entry: &'a str,
        /// How long it waited.
        waited: Duration,
    },
    /// A row is complete.
    Row(&'a Row),
}

/// Run the suite: every entry's simulated side first, `jobs` entries at a time (each is
/// deterministic, so the column is the same with any `jobs`), then the real sides one run at
/// a time, interleaved — one run of every entry, then a second of every entry, and so on — so
/// a slow drift of the host's speed touches every row alike. Before each real run it waits (a
/// bounded time) for other runnable tasks to go away, and it watches the run
/// ([`InterferenceWatch`]): a run during which other processes or the hypervisor took CPU time
/// is left out and repeated. An entry gets more runs until its real side's 95 % interval is
/// within half the goal, up to a bound; each row then says whether it can be judged
/// ([`Row::judged`]). `progress` hears left-out runs and each row as it completes; `stop` ends it
/// early with the runs so far (`RunEnd::Interrupted`).
pub fn validate(
    profile: &str,
    quick: bool,
    jobs: usize,
    stop: &Arc<AtomicBool>,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<(RunEnd, Validation), ExperimentError> {
    let m = schedlab_real::machine::machine_info();
    let cpus = schedlab_real::host::online_cpus();
    let policy = closest_policy_spec(
        &m.kernel_release,
        schedlab_real::procfs::own_fair_slice_ns(),
        cpus,
    );
    let runs = if quick { 2 } else { 3 };
    let sim = SimRequest {
        policy: Some(policy.clone()),
        cpus: Some(cpus),
        topology: None,
        profile: Some(profile.into()),
        cost: Vec::new(),
        seed: Some(1),
        kernel_cpus: None,
    };
    // Refuse a bad profile before anything runs.
    SimMachine::from_request(&sim, cpus)?;
    let mut v = Validation {
        kernel: m.kernel_release,
        cpus,
        policy,
        profile: profile.into(),
        runs,
        rows: Vec::new(),
    };
    let entries = suite(cpus, quick);
    let sim_backend = BackendRequest::Sim(sim);
    let simulated_sides = in_parallel(&entries, jobs, |entry| {
        run_entry(entry, sim_backend.clone(), cpus, runs, stop)
    });
    let plan = RealPlan::new(runs, quick);
    let mut real: Vec<RealSide> = entries.iter().map(|_| RealSide::default()).collect();
    let mut end = RunEnd::Complete;
    'passes: for _ in 0..plan.max_runs {
        let mut ran = false;
        for (entry, side) in entries.iter().zip(real.iter_mut()) {
            if stop.load(Ordering::Relaxed) {
                end = RunEnd::Interrupted;
                break 'passes;
            }
            if side.settled(entry, &plan) {
                continue;
            }
            ran = true;
            // The wait's last look is the run's "runnable before": not looked at twice.
            let runnable = wait_until_quiet(plan.quiet_wait, stop);
            if runnable != Some(0) {
                progress(Progress::StillBusy {
                    entry: &entry.name,
                    waited: plan.quiet_wait,
                });
            }
            let watch = InterferenceWatch::after_look(runnable);
            let rec = run_entry(entry, BackendRequest::Real, cpus, 1, stop);
            let seen = watch.finish();
            side.add(entry, rec, seen, &mut progress);
        }
        if !ran {
            break;
        }
    }
    for ((entry, simulated), side) in entries.iter().zip(simulated_sides).zip(real) {
        let (simulated, sim_note) = match simulated {
            Ok(rec) => (estimate(&rec, entry.metric), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let row = side.row(entry, simulated, sim_note, &plan, end);
        progress(Progress::Row(&row));
        v.rows.push(row);
    }
    Ok((end, v))
}

/// How many real runs an entry gets, and how long to wait for a quiet machine before each.
struct RealPlan {
    /// Quiet runs wanted at least.
    runs: usize,
    /// Runs in all (quiet and busy) at most.
    max_runs: usize,
    /// The longest wait for other runnable tasks to go away before a run.
    quiet_wait: Duration,
}

impl RealPlan {
    fn new(runs: usize, quick: bool) -> RealPlan {
        if quick {
            RealPlan {
                runs,
                max_runs: runs + 2,
                quiet_wait: Duration::from_secs(1),
            }
        } else {
            RealPlan {
                runs,
                max_runs: 3 * runs,
                quiet_wait: Duration::from_secs(10),
            }
        }
    }
}

/// One entry's real runs so far.
#[derive(Default)]
struct RealSide {
    /// The metric of each run on a quiet machine.
    quiet: Vec<f64>,
    /// … and of each run on a busy one.
    busy: Vec<f64>,
    /// The worst interference of the quiet runs, and of the busy ones.
    seen_quiet: Option<Interference>,
    seen_busy: Option<Interference>,
    /// Runs made (quiet, busy or failed).
    attempts: usize,
    /// Why the last run failed.
    failed: Option<String>,
}

/// Whether a 95 % interval of `values` is within `share` of the goal: within `share × GOAL_PCT`
/// % of the mean, or `share × GOAL_POINTS` points.
fn spread_within(values: &[f64], points: bool, share: f64) -> bool {
    if values.len() < 2 {
        return false;
    }
    let d = schedlab_stats::summary::describe(values, 95.0);
    let ci = d.ci_half_width;
    if points {
        ci <= share * GOAL_POINTS
    } else {
        ci <= share * GOAL_PCT / 100.0 * d.summary.mean.abs()
    }
}

impl RealSide {
    /// Done: enough quiet runs with a spread within half the goal, a failure, or the bound.
    fn settled(&self, entry: &Entry, plan: &RealPlan) -> bool {
        self.failed.is_some()
            || self.attempts >= plan.max_runs
            || (self.quiet.len() >= plan.runs && spread_within(&self.quiet, entry.points, 0.5))
    }

    fn add(
        &mut self,
        entry: &Entry,
        rec: Result<RunRecord, ExperimentError>,
        seen: Option<Interference>,
        progress: &mut impl FnMut(Progress<'_>),
    ) {
        self.attempts += 1;
        let rec = match rec {
            Ok(rec) => rec,
            Err(e) => {
                self.failed = Some(e.to_string());
                return;
            }
        };
        let Some(config) = rec.configs.first() else {
            self.failed = Some("the run measured nothing".into());
            return;
        };
        let values = schedlab_stats::summary::metric_values(config, entry.metric);
        self.add_values(&entry.name, values, seen, progress);
    }

    /// A run's values, kept as quiet or as busy by what the watch saw.
    fn add_values(
        &mut self,
        name: &str,
        values: Vec<f64>,
        seen: Option<Interference>,
        progress: &mut impl FnMut(Progress<'_>),
    ) {
        let worst =
            |old: Option<Interference>, new: Interference| Some(old.map_or(new, |o| o.worst(new)));
        match seen {
            Some(seen) if seen.busy() => {
                progress(Progress::BusyRun {
                    entry: name,
                    seen: &seen,
                });
                self.busy.extend(values);
                self.seen_busy = worst(self.seen_busy, seen);
            }
            Some(seen) => {
                self.quiet.extend(values);
                self.seen_quiet = worst(self.seen_quiet, seen);
            }
            None => self.quiet.extend(values),
        }
    }

    fn row(
        self,
        entry: &Entry,
        simulated: Option<Estimate>,
        sim_note: Option<String>,
        plan: &RealPlan,
        end: RunEnd,
    ) -> Row {
        let on_quiet = !self.quiet.is_empty();
        let values = if on_quiet { &self.quiet } else { &self.busy };
        let measured = estimate_of(values);
        // At least two quiet runs (spread_within needs two) no wider than the goal.
        let judged = spread_within(&self.quiet, entry.points, 1.0) && simulated.is_some();
        let error = match (measured, simulated) {
            (Some(r), Some(s)) if entry.points => Some(s.mean - r.mean),
            (Some(r), Some(s)) if r.mean != 0.0 => Some((s.mean - r.mean) / r.mean * 100.0),
            _ => None,
        };
        let busy_runs = self.busy.len();
        let note = if let Some(e) = self.failed.or(sim_note) {
            Some(e)
        } else if judged {
            None
        } else if matches!(end, RunEnd::Interrupted) && self.quiet.len() < plan.runs {
            Some("not judged: interrupted before its runs were made".into())
        } else if !on_quiet {
            Some(format!(
                "not judged: the machine was busy in all {busy_runs} real runs (at worst, {}); the measured \
                 column is from those runs",
                self.seen_busy.map(|s| s.describe()).unwrap_or_default()
            ))
        } else if self.quiet.len() < 2 {
            Some(format!(
                "not judged: one quiet real run of {}; the machine was busy in the others (at worst, {})",
                self.attempts,
                self.seen_busy.map(|s| s.describe()).unwrap_or_default()
            ))
        } else {
            Some(format!(
                "not judged: the real side's 95 % interval over {} quiet runs is wider than the \
                 goal (±{} {})",
                self.quiet.len(),
                if entry.points { GOAL_POINTS } else { GOAL_PCT },
                if entry.points { "points" } else { "%" }
            ))
        };
        Row {
            name: entry.name.clone(),
            command: entry.command(),
            metric: entry.metric.into(),
            unit: unit_of(entry.workload, entry.metric),
            measured,
            simulated,
            error,
            points: entry.points,
            judged,
            busy_runs,
            interference: if on_quiet {
                self.seen_quiet
            } else {
                self.seen_busy
            },
            note,
        }
    }
}

/// `f` of every item, computed on up to `jobs` threads, in the items' order.
pub fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    (results.into_inner().unwrap_or_else(|e| e.into_inner()))
        .into_iter()
        .map(|r| r.expect("every item was computed"))
        .collect()
}

fn unit_of(workload: &str, metric: &str) -> String {
    struct Units<'a>(&'a str);
    impl PresetVisitor for Units<'_> {
        type Output = String;
        fn visit<P: Preset>(self) -> String {
            P::with_defaults(1)
                .metric_defs()
                .into_iter()
                .find(|d| d.name == self.0)
                .map(|d| d.unit)
                .unwrap_or_default()
        }
    }
    presets::visit(workload, Units(metric)).unwrap_or_default()
}

fn estimate(rec: &RunRecord, metric: &str) -> Option<Estimate> {
    let config = rec.configs.first()?;
    estimate_of(&schedlab_stats::summary::metric_values(config, metric))
}

fn estimate_of(values: &[f64]) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let d = schedlab_stats::summary::describe(values, 95.0);
    Some(Estimate {
        mean: d.summary.mean,
        ci95: d.ci_half_width.is_finite().then_some(d.ci_half_width),
        n: values.len(),
    })
}

fn run_entry(
    entry: &Entry,
    backend: BackendRequest,
    cpus: usize,
    runs: usize,
    stop: &Arc<AtomicBool>,
) -> Result<RunRecord, ExperimentError> {
    let request = ExperimentRequest {
        params: entry.params.clone(),
        groups: entry.groups.clone(),
        timer_slack: None,
        vary: Vec::new(),
        policies: Vec::new(),
        host_cpus: cpus,
        runs: Some(runs),
        shards: None,
    };
    let settings = Settings {
        budget: Budget::new(Some(runs), None, runs)?,
        until_text: None,
        warmup: 0,
        level: 95.0,
        timeout: None,
        json: None,
        command: vec![entry.command()],
        shard: None,
        timeline: false,
        timeline_events: None,
        rt_app_logs: None,
        jobs: 1,
    };
    let one = MeasureOne {
        request: &request,
        backend: &backend,
        settings: &settings,
        stop,
    };
    presets::visit(entry.workload, one)
        .unwrap_or_else(|| Err(ExperimentError::UnknownWorkload(entry.workload.into())))
}

/// Build and measure one entry on one backend, quietly.
struct MeasureOne<'a> {
    request: &'a ExperimentRequest,
    backend: &'a BackendRequest,
    settings: &'a Settings,
    stop: &'a Arc<AtomicBool>,
}

impl PresetVisitor for MeasureOne<'_> {
    type Output = Result<RunRecord, ExperimentError>;
    fn visit<P: Preset>(self) -> Self::Output {
        let base = P::with_defaults(self.backend.machine_cpus(self.request.host_cpus));
        match self.backend {
            BackendRequest::Real => {
                let mut b = RealBackend::new(CounterMode::Proc);
                self.on(base, &mut b, ())
            }
            BackendRequest::Sim(req) => {
                let machine = SimMachine::from_request(req, self.request.host_cpus)?;
                self.on(base, &mut SimBackend, machine)
            }
        }
    }
}

impl MeasureOne<'_> {
    fn on<W: Configurable, B: Backend>(
        self,
        base: W,
        backend: &mut B,
        machine: B::Machine,
    ) -> Result<RunRecord, ExperimentError> {
        let experiment = build_from(base, self.request, backend, &machine)?;
        let sinks = Sinks {
            json: None,
            out: None,
            exports: None,
        };
        measure(
            experiment,
            backend,
            self.settings,
            &sinks,
            self.stop,
            &mut |_| {},
        )
        .map(|(_, record)| record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(others_share: f64) -> Option<Interference> {
        Some(Interference {
            others_share,
            own_share: 0.5,
            steal_share: 0.0,
            runnable_before: Some(0),
            seconds: 1.0,
        })
    }

    fn entry(points: bool) -> Entry {
        let mut e = Entry::new("e", Yield::NAME, "us_per_yield");
        e.points = points;
        e
    }

    fn side(runs: &[(f64, f64)]) -> (RealSide, Vec<String>) {
        let mut side = RealSide::default();
        let mut heard = Vec::new();
        for &(value, others) in runs {
            side.attempts += 1;
            side.add_values("e", vec![value], seen(others), &mut |p| {
                if let Progress::BusyRun { seen, .. } = p {
                    heard.push(seen.describe());
                }
            });
        }
        (side, heard)
    }

    #[test]
    fn busy_runs_are_left_out_and_a_quiet_narrow_row_is_judged() {
        let plan = RealPlan::new(3, false);
        let e = entry(false);
        // Three quiet runs within 1 % of each other, one run beside a compiler at 3× the time.
        let (s, heard) = side(&[(1.00, 0.01), (3.0, 0.6), (1.01, 0.02), (0.99, 0.0)]);
        assert_eq!(heard.len(), 1, "{heard:?}");
        assert!(heard[0].contains("60.0 %"), "{heard:?}");
        assert!(s.settled(&e, &plan));
        let sim = estimate_of(&[1.1]);
        let row = s.row(&e, sim, None, &plan, RunEnd::Complete);
        assert!(row.judged, "{row:?}");
        assert_eq!(row.busy_runs, 1);
        assert!((row.measured.unwrap().mean - 1.0).abs() < 1e-9, "{row:?}");
        assert!((row.error.unwrap() - 10.0).abs() < 1e-6, "{row:?}");
        assert_eq!(row.note, None);
    }

    #[test]
    fn a_row_measured_only_on_a_busy_machine_is_shown_but_not_judged() {
        let plan = RealPlan::new(2, true);
        let e = entry(false);
        let (s, _) = side(&[(2.0, 0.4), (2.2, 0.5), (2.1, 0.45), (2.0, 0.4)]);
        assert!(s.settled(&e, &plan), "the bound ends it");
        let row = s.row(&e, estimate_of(&[1.0]), None, &plan, RunEnd::Complete);
        assert!(!row.judged);
        assert_eq!(row.busy_runs, 4);
        assert!(row.measured.is_some());
        let note = row.note.unwrap();
        assert!(note.contains("busy in all 4"), "{note}");
        assert!(note.contains("50.0 %"), "the worst run is named: {note}");
    }

    #[test]
    fn a_quiet_row_wider_than_the_goal_runs_again_and_is_not_judged() {
        let plan = RealPlan::new(3, false);
        let e = entry(false);
        let (s, _) = side(&[(1.0, 0.0), (2.0, 0.0), (1.5, 0.0)]);
        assert!(!s.settled(&e, &plan), "a ±60 % spread asks for more runs");
        let row = s.row(&e, estimate_of(&[1.0]), None, &plan, RunEnd::Complete);
        assert!(!row.judged);
        assert!(row.note.unwrap().contains("wider than the goal"));
        // Deadlines in points: 98 ± 1 is judged.
        let p = entry(true);
        let (s, _) = side(&[(98.0, 0.0), (98.5, 0.0), (97.6, 0.0)]);
        assert!(s.settled(&p, &plan));
        assert!(
            s.row(&p, estimate_of(&[100.0]), None, &plan, RunEnd::Complete)
                .judged
        );
    }

    #[test]
    fn in_parallel_keeps_the_items_order() {
        let items: Vec<u64> = (0..50).collect();
        let slow_first = |&x: &u64| {
            // The first items take longest, so that they finish last on several threads.
            std::thread::sleep(std::time::Duration::from_micros(50 * (50 - x)));
            x * x
        };
        let serial = in_parallel(&items, 1, slow_first);
        assert_eq!(serial, items.iter().map(|x| x * x).collect::<Vec<_>>());
        assert_eq!(in_parallel(&items, 4, slow_first), serial);
        assert!(in_parallel(&Vec::<u64>::new(), 4, slow_first).is_empty());
    }

    #[test]
    fn the_simulated_eevdf_takes_the_kernels_base_slice() {
        // 6.18 on two CPUs: /proc shows 1.4 ms = 0.70 ms × (1 + ilog2 2).
        assert_eq!(
            closest_policy_spec("6.18.44", Some(1_400_000), 2),
            "eevdf:base_slice=700"
        );
        // 6.12's 0.75 ms is the model's default; 3 ms on 8 or more CPUs.
        assert_eq!(closest_policy_spec("6.12.1", Some(3_000_000), 64), "eevdf");
        // Unreadable, or out of the parameter's range: the model's default.
        assert_eq!(closest_policy_spec("6.18.44", None, 2), "eevdf");
        assert_eq!(closest_policy_spec("6.18.44", Some(50_000), 1), "eevdf");
        // Before 6.6 the closest policy is cfs, whatever the file says.
        assert_eq!(closest_policy_spec("6.5.0", Some(1_400_000), 2), "cfs");
        // And the spec is one the simulator accepts.
        let spec: schedlab_sim::policy::PolicySpec =
            closest_policy_spec("6.18.44", Some(1_400_000), 2)
                .parse()
                .unwrap();
        assert_eq!(spec.describe(), "eevdf:base_slice=700");
    }

    #[test]
    fn the_closest_policy_follows_the_kernel_release() {
        assert_eq!(closest_policy("6.18.44-fc-v657"), "eevdf");
        assert_eq!(closest_policy("6.6.0"), "eevdf");
        assert_eq!(closest_policy("6.5.13-generic"), "cfs");
        assert_eq!(closest_policy("5.10.0-32-amd64"), "cfs");
        assert_eq!(closest_policy("weird"), "cfs");
    }

    #[test]
    fn the_suite_has_every_entry_the_issue_names() {
        let s = suite(2, false);
        let names: Vec<&str> = s.iter().map(|e| e.name.as_str()).collect();
        for n in [
            "messaging socketpair threads",
            "messaging pipe processes",
            "pingpong, one CPU",
            "pingpong, two CPUs",
            "yield, 1 threads",
            "yield, 2 threads",
            "yield, 8 threads",
            "yield, 256 threads",
            "chat burst",
            "interbench audio vs none, nice 0",
            "interbench video vs burn, nice 19",
        ] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        assert!(!suite(1, true)
            .iter()
            .any(|e| e.name == "pingpong, two CPUs"));
    }
}
