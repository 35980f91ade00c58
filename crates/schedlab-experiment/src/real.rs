//! The real kernel as a [`Backend`]: repetitions run through `schedlab_real::run_repetition`;
//! wakeup and preemption counters come from one private tracefs instance opened for the whole
//! run (or /proc alone, and the record says why).
//!
//! Before the first repetition it refuses a plan whose locks, barriers, semaphores or condition
//! variables the tasks' hosting could not share, removes the temporary directories of killed schedlab runs
//! (and says so on stderr) and refuses a run that a limit on tasks could not hold; real-time
//! priorities the supervisor cannot outrank are refused with the knobs; a default time budget
//! is at most [`MAX_DEFAULT_BUDGET`], so that the supervisor always ends a runaway repetition.

use crate::backend::{Backend, RepDetail, RepError, RepInput, RepOutput};
use crate::build::Config;
use crate::error::ExperimentError;
use crate::settings::{CounterMode, Settings};
use crate::vary::MachineKey;
use schedlab_real::bpf::{BpfError, BpfWakeups};
use schedlab_real::leftovers::Leftovers;
use schedlab_real::report::COMM_PREFIX;
use schedlab_real::runner::{check_hosting, check_outranked, tasks_needed, SUPERVISOR_PRIORITY};
use schedlab_real::tempdir::{self, StaleDir, TempDir};
use schedlab_real::trace::timeline::RqTrace;
use schedlab_real::trace::SchedTrace;
use schedlab_real::wakeups::WakeupCounter;
use schedlab_real::{host, run_repetition, RepetitionSetup, RunError};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::interbench::format_size;
use schedlab_workload::presets::{HostNeeds, SizedBy};
use schedlab_workload::record::BackendInfo;
use schedlab_workload::{ParamError, Workload};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

/// Trace buffer per CPU: room for about a million events per CPU before the kernel drops some
/// (drops are counted and reported).
const TRACE_BUFFER_KB: usize = 65536;

/// The longest time budget a repetition gets by default (from the workload's size, or
/// [`Settings::DEFAULT_TIMEOUT`]); a budget given with the run is kept as given. Six hours is
/// above what an accepted configuration takes on a machine that is not overloaded (durations are
/// at most an hour; the most messages a run may ask for take about three hours at a million a
/// second), and bounds a run whose size asks for more — or whose expected time is absurd — with
/// a timeout that says so.
pub const MAX_DEFAULT_BUDGET: Duration = Duration::from_secs(6 * 3600);

/// The time budget the supervisor gets for a repetition of `workload` given `budget`: a default
/// budget (the workload's expected time, or [`Settings::DEFAULT_TIMEOUT`]) is capped at
/// [`MAX_DEFAULT_BUDGET`]; any other is the one given. The flag says whether it was capped.
pub fn supervisor_budget<W: Workload>(workload: &W, budget: Duration) -> (Duration, bool) {
    let default = workload
        .expected_time()
        .unwrap_or(Settings::DEFAULT_TIMEOUT);
    if budget == default && budget > MAX_DEFAULT_BUDGET {
        (MAX_DEFAULT_BUDGET, true)
    } else {
        (budget, false)
    }
}

/// The environment variable that keeps `--counters auto` off the in-kernel counters
/// (`SCHEDLAB_BPF=off`): to compare with the tracefs path or to work around a kernel whose BPF
/// verifier refuses the program.
pub const BPF_SWITCH: &str = "SCHEDLAB_BPF";

/// Why the in-kernel counters are not used.
#[derive(Debug, thiserror::Error)]
enum BpfUnavailable {
    /// [`BPF_SWITCH`] is `off`.
    #[error("turned off by {BPF_SWITCH}=off")]
    TurnedOff,
    /// They could not be loaded or attached.
    #[error("{0}")]
    Failed(BpfError),
}

/// Open the in-kernel counters: `Ok(Err(why))` when they cannot be had (or [`BPF_SWITCH`] is
/// `off`), `Err` when [`BPF_SWITCH`] holds a value that means nothing.
fn open_bpf() -> Result<Result<BpfWakeups, BpfUnavailable>, ExperimentError> {
    match std::env::var(BPF_SWITCH).as_deref() {
        Ok("off") => return Ok(Err(BpfUnavailable::TurnedOff)),
        Ok("" | "on") | Err(std::env::VarError::NotPresent) => {}
        Ok(other) => {
            return Err(ExperimentError::Setting(format!(
                "{BPF_SWITCH}={other:?} is not understood; accepted: on, off (or unset)"
            )))
        }
        Err(std::env::VarError::NotUnicode(v)) => {
            return Err(ExperimentError::Setting(format!(
                "{BPF_SWITCH}={v:?} is not understood; accepted: on, off (or unset)"
            )))
        }
    }
    Ok(BpfWakeups::open(COMM_PREFIX).map_err(BpfUnavailable::Failed))
}

/// The running Linux kernel.
pub struct RealBackend {
    counters: CounterMode,
    trace: Option<WakeupCounter>,
    /// Why the in-kernel counters were not used when `--counters auto` fell back to tracefs.
    bpf_unavailable: Option<BpfUnavailable>,
    /// Whether the run-queue timeline is recorded (`--timeline`); opened in `prepare`.
    timeline: bool,
    rq_trace: Option<RqTrace>,
    /// Why wakeup counters are unavailable (empty when they are).
    unavailable: String,
    realtime: bool,
    /// The workload's shared files, written once for the run's repetitions and configurations
    /// (removed when the backend is dropped: at the end of the run, interrupted or not).
    files: Option<FilesDir>,
    /// The taskgroups (rt-app's CPU cgroups) the knobs checked name: `check_knobs` sees every
    /// knob set the run will apply — the groups' and those their tasks switch to — before
    /// `prepare`, which creates them.
    taskgroup_names: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// The taskgroups made for the run (removed when the backend is dropped, as `files`).
    taskgroups: Option<schedlab_real::taskgroup::Taskgroups>,
}

/// Why a workload's shared files could not be written; each names the directory.
#[derive(Debug, thiserror::Error)]
enum SharedFilesError {
    /// The temporary directory could not be made.
    #[error("temporary directory for the workload's files: {0}")]
    TempDir(std::io::Error),
    /// Its mode could not be set so that a server's workers running as another user enter it.
    #[error("opening {}: {source}", dir.display())]
    Open {
        /// The directory.
        dir: std::path::PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The workload failed to write its files.
    #[error("writing the workload's files in {}: {source}", dir.display())]
    Write {
        /// The directory.
        dir: std::path::PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
}

/// A directory of a workload's shared files ([`Workload::shared_files`]).
struct FilesDir {
    key: String,
    /// The extent written so far.
    extent: usize,
    dir: TempDir,
}

impl RealBackend {
    /// The directory of `workload`'s shared files, written (or extended) now if the last one
    /// written does not hold them; `None` when it has none to share.
    fn shared_files<W: Workload>(
        &mut self,
        workload: &W,
    ) -> Result<Option<&std::path::Path>, SharedFilesError> {
        let Some(want) = workload.shared_files() else {
            return Ok(None);
        };
        let from = match &self.files {
            Some(f) if f.key == want.key && f.extent >= want.extent => None,
            Some(f) if f.key == want.key => Some(f.extent),
            _ => {
                // Another key: its files replace the last one's (dropped first, so that two
                // file sets are never on disk at once).
                self.files = None;
                let dir = TempDir::new().map_err(SharedFilesError::TempDir)?;
                // Servers whose workers run as another user (Apache's www-data) enter it.
                std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))
                    .map_err(|source| SharedFilesError::Open {
                        dir: dir.path().to_path_buf(),
                        source,
                    })?;
                self.files = Some(FilesDir {
                    key: want.key.clone(),
                    extent: 0,
                    dir,
                });
                Some(0)
            }
        };
        let f = self.files.as_mut().expect("set above");
        if let Some(from) = from {
            // Marked empty until written: a failed write leaves nothing taken for written.
            f.extent = 0;
            workload
                .write_shared_files(f.dir.path(), from)
                .map_err(|source| SharedFilesError::Write {
                    dir: f.dir.path().to_path_buf(),
                    source,
                })?;
            f.extent = want.extent;
        }
        Ok(Some(f.dir.path()))
    }
}

impl RealBackend {
    /// The real kernel, with counters from `counters`.
    pub fn new(counters: CounterMode) -> RealBackend {
        RealBackend {
            counters,
            trace: None,
            bpf_unavailable: None,
            timeline: false,
            rq_trace: None,
            unavailable: String::new(),
            realtime: host::realtime_allowed(),
            files: None,
            taskgroup_names: Default::default(),
            taskgroups: None,
        }
    }

    /// Record each repetition's run-queue timeline from an unfiltered tracefs instance (it
    /// needs tracefs and root; `prepare` fails, before anything runs, without them).
    pub fn with_timeline(mut self, on: bool) -> RealBackend {
        self.timeline = on;
        self
    }
}

/// Say on stderr which temporary directories of killed runs were removed (or could not be).
fn report_stale_cleanup(stale: &[StaleDir]) {
    for d in stale {
        eprintln!("{}", stale_message(d));
    }
}

/// The lines that say what [`schedlab_real::leftovers::cleanup`] removed (or could not): one per
/// temporary directory, one for the tracefs mounts and instances; none when nothing was found.
pub fn leftover_messages(l: &Leftovers) -> Vec<String> {
    let mut lines: Vec<String> = l.dirs.iter().map(stale_message).collect();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut tracefs = Vec::new();
    if l.tracefs.mounts > 0 {
        tracefs.push(plural(l.tracefs.mounts, "tracefs mount point"));
    }
    if l.tracefs.instances > 0 {
        tracefs.push(plural(l.tracefs.instances, "tracefs instance"));
    }
    if !tracefs.is_empty() {
        lines.push(format!(
            "schedlab: removed {} of schedlab processes which no longer exist",
            tracefs.join(" and ")
        ));
    }
    lines
}

/// The line that says what became of a stale temporary directory.
fn stale_message(d: &StaleDir) -> String {
    let what = format!(
        "{} ({}), the temporary directory of schedlab process {}, which no longer exists",
        d.path.display(),
        format_size(d.bytes as usize),
        d.pid
    );
    match &d.error {
        None => format!("schedlab: removed {what}"),
        Some(e) => format!("schedlab: could not remove {what}: {e}"),
    }
}

impl Backend for RealBackend {
    type Machine = ();

    fn info(&self, _first: &()) -> BackendInfo {
        BackendInfo {
            kind: "real".into(),
            ..BackendInfo::default()
        }
    }

    fn machine_label(&self, _machine: &()) -> Option<String> {
        None
    }

    fn policy_label(&self, _machine: &()) -> Option<String> {
        None
    }

    fn cpus(&self, _machine: &()) -> usize {
        host::online_cpus()
    }

    fn varies_machines(&self) -> bool {
        false
    }

    fn vary_machine(&self, _: &(), key: MachineKey, _: &str) -> Result<(), ExperimentError> {
        Err(ExperimentError::Machine(format!(
            "'{}' is a property of the simulated machine",
            key.name()
        )))
    }

    fn realtime_allowed(&self, _: &Self::Machine) -> bool {
        self.realtime
    }

    /// Nothing only the simulator models (web's `dcache=lock`); memory at most half of what is
    /// available now (so memload never invokes the OOM killer, swap or not); the programs it
    /// runs in PATH; files twice over in the temporary directory's free space.
    fn check_needs(
        &self,
        workload: &'static str,
        needs: &HostNeeds,
    ) -> Result<(), ExperimentError> {
        if let Some(what) = needs.simulated {
            return Err(ExperimentError::Backend(format!(
                "{workload}: {what} is modelled on the simulator only — run it with --backend sim"
            )));
        }
        if let Some((sized_by, bytes)) = &needs.memory {
            let bytes = *bytes;
            let available = host::available_memory()
                .map_err(|e| ExperimentError::Host(format!("{workload}: {e} to size its memory")))?
                as usize;
            if bytes > available / 2 {
                let (now, most) = (format_size(available), format_size(available / 2));
                return Err(match sized_by {
                    SizedBy::Param(param) => ParamError::value(
                        workload,
                        param,
                        format_size(bytes),
                        format!("is more than half of the memory available now ({now}); memload would risk the OOM killer — use at most {most}"),
                    )
                    .into(),
                    SizedBy::Steps(steps) => ExperimentError::Host(format!(
                        "{steps}. The file's memory steps hold {} in all, more than half of the memory available now ({now}), which could call in the OOM killer; at most {most} is accepted: lower the sizes or the task counts",
                        format_size(bytes)
                    )),
                });
            }
        }
        if let Some((programs, install)) = needs.programs {
            let missing: Vec<&str> = programs
                .iter()
                .copied()
                .filter(|p| schedlab_real::program::find_in_path(p).is_none())
                .collect();
            if !missing.is_empty() {
                return Err(ExperimentError::Host(format!(
                    "{workload}: {} needs {} in PATH, not found here; install with `{install}`",
                    needs.real_kernel.unwrap_or("this configuration"),
                    missing.join(" and ")
                )));
            }
        }
        if let Some((param, port)) = needs.port {
            host::check_port_free(port).map_err(|e| {
                ParamError::value(
                    workload,
                    param,
                    port,
                    format!("is not free: {e}; stop that process or choose another port (0: a free one)"),
                )
            })?;
        }
        if let Some((param, bytes)) = needs.files {
            let dir = std::env::temp_dir();
            if let Ok(free) = host::free_disk_space(&dir) {
                if bytes.saturating_mul(2) as u64 > free {
                    return Err(ParamError::value(
                        workload,
                        param,
                        format_size(bytes),
                        format!(
                            "of files does not fit twice in {}, which has {} free; lower it",
                            dir.display(),
                            format_size(free as usize)
                        ),
                    )
                    .into());
                }
            }
        }
        Ok(())
    }

    /// The kernel checks the knobs when they are applied (a refusal names the knob); a FIFO or
    /// RR priority the supervisor could not preempt is refused here, before anything runs.
    fn check_knobs(&self, _: &(), group: &str, knobs: &Knobs) -> Result<(), ExperimentError> {
        if knobs.kernel_mode() {
            return Err(ExperimentError::Backend(format!(
                "group '{group}': mode=kernel is for the simulator (--backend sim): a real task cannot be made to run in kernel mode"
            )));
        }
        if let Some(name) = &knobs.taskgroup {
            // Where the cpu controller is, and that it is usable, before anything runs; the
            // cgroups themselves are made in `prepare`.
            schedlab_real::taskgroup::hierarchy().map_err(|e| {
                ExperimentError::Backend(format!(
                    "group '{group}': taskgroup={name}: {e} (the simulator, --backend sim, has no group scheduling and runs it without)"
                ))
            })?;
            (self.taskgroup_names.lock())
                .unwrap_or_else(|e| e.into_inner())
                .insert(name.clone());
        }
        if knobs.util_min.is_some() || knobs.util_max.is_some() {
            // rt-app exits where sched_setattr refuses the clamps: refused before the run.
            schedlab_real::knobs::uclamp_supported().map_err(|e| {
                // Named by the clamps the group asks for, not the probe's own.
                let e = match e {
                    schedlab_real::knobs::KnobError::NoUclamp { .. } => {
                        schedlab_real::knobs::KnobError::NoUclamp {
                            knob: Knobs {
                                util_min: knobs.util_min,
                                util_max: knobs.util_max,
                                ..Knobs::default()
                            }
                            .to_string(),
                        }
                    }
                    other => other,
                };
                ExperimentError::Backend(format!(
                    "group '{group}': {e}; rt-app exits there too (the simulator, --backend sim, ignores utilization clamps)"
                ))
            })?;
        }
        check_outranked(knobs, Some(SUPERVISOR_PRIORITY))
            .map_err(|e| ExperimentError::Backend(format!("group '{group}': {e}")))
    }

    fn prepare<W: Workload>(
        &mut self,
        configs: &[Config<W, ()>],
        info: &mut BackendInfo,
    ) -> Result<(), ExperimentError> {
        for c in configs {
            check_hosting(&c.workload.plan()).map_err(|e| {
                ExperimentError::Backend(format!("workload '{}': {e}", c.workload.name()))
            })?;
        }
        report_stale_cleanup(&tempdir::cleanup_stale());
        // schedlab's own tasks and those of the programs a configuration starts (a real web
        // server's processes), for the configuration that needs the most.
        let (most_tasks, programs) = configs
            .iter()
            .map(|c| {
                let programs = c.workload.program_tasks();
                let own = tasks_needed(&c.workload.plan());
                (own + programs.map_or(0, |(_, n)| n as u64), programs)
            })
            .max_by_key(|&(n, _)| n)
            .unwrap_or((0, None));
        host::check_task_room(most_tasks).map_err(|e| {
            let of_them = programs.map_or(String::new(), |(what, n)| {
                format!(
                    " — of the {most_tasks}, {n} are {what} and {} schedlab's",
                    most_tasks - n as u64
                )
            });
            ExperimentError::Host(format!("{e}{of_them}"))
        })?;
        for c in configs {
            let plan = c.workload.plan();
            host::raise_fd_limit((plan.all_channels() * 2 + plan.total_tasks() * 2 + 64) as u64)
                .map_err(|e| {
                    ExperimentError::Backend(format!(
                        "{e}; raise it, e.g. `ulimit -n {}`",
                        plan.all_channels() * 2 + plan.total_tasks() * 2 + 64
                    ))
                })?;
        }
        match self.counters {
            CounterMode::Proc => self.unavailable = "disabled (--counters proc)".into(),
            CounterMode::Bpf => match open_bpf()? {
                Ok(b) => self.trace = Some(WakeupCounter::Bpf(Box::new(b))),
                Err(e) => {
                    return Err(ExperimentError::TraceRequired(format!(
                        "--counters bpf: {e}"
                    )))
                }
            },
            CounterMode::Trace => match SchedTrace::open(COMM_PREFIX, TRACE_BUFFER_KB) {
                Ok(t) => self.trace = Some(WakeupCounter::Tracefs(t)),
                Err(e) => {
                    return Err(ExperimentError::TraceRequired(format!(
                        "--counters trace: {e}"
                    )))
                }
            },
            CounterMode::Auto => match open_bpf()? {
                Ok(b) => self.trace = Some(WakeupCounter::Bpf(Box::new(b))),
                Err(bpf) => {
                    match SchedTrace::open(COMM_PREFIX, TRACE_BUFFER_KB) {
                        Ok(t) => self.trace = Some(WakeupCounter::Tracefs(t)),
                        Err(e) => self.unavailable = format!("{bpf}; {e}"),
                    }
                    self.bpf_unavailable = Some(bpf);
                }
            },
        }
        if self.timeline && self.rq_trace.is_none() {
            let t = RqTrace::open(TRACE_BUFFER_KB).map_err(|e| {
                ExperimentError::TraceRequired(format!(
                    "--timeline: the run-queue timeline needs the kernel's tracepoints: {e}"
                ))
            })?;
            info.details.insert("timeline".into(), t.source());
            self.rq_trace = Some(t);
        }
        info.details.insert(
            "wakeup_counters".into(),
            self.trace.as_ref().map_or_else(
                || format!("unavailable: {}", self.unavailable),
                |t| t.source(),
            ),
        );
        if let Some(why) = &self.bpf_unavailable {
            info.details
                .insert("wakeup_counters_bpf".into(), format!("unavailable: {why}"));
        }
        let names: Vec<String> = (self.taskgroup_names.lock())
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        if !names.is_empty() && self.taskgroups.is_none() {
            let made = schedlab_real::taskgroup::Taskgroups::create(&names)
                .map_err(|e| ExperimentError::Backend(format!("taskgroups: {e}")))?;
            let h = made.hierarchy();
            let version = match h.version {
                schedlab_real::taskgroup::Version::V1 => "cgroup v1",
                schedlab_real::taskgroup::Version::V2 => "cgroup v2",
            };
            let weight = if h.cpu {
                "with the cpu controller"
            } else {
                // Only the grouping: say so where the run is summarized, and in its record.
                eprintln!(
                    "warning: taskgroups {}: the {version} hierarchy at {} has no cpu controller ({}=v2 chose it): threads are moved into their groups, but the groups weigh nothing and the run is scheduled as without taskgroups",
                    names.join(", "),
                    h.own.display(),
                    schedlab_real::taskgroup::HIERARCHY_VAR
                );
                "without the cpu controller: grouping only, no CPU weight"
            };
            info.details.insert(
                "taskgroups".into(),
                format!(
                    "{} below {} ({version}, {weight})",
                    names.join(", "),
                    made.base().display()
                ),
            );
            self.taskgroups = Some(made);
        }
        Ok(())
    }

    fn run<W: Workload>(
        &mut self,
        _: &(),
        workload: &Arc<W>,
        input: RepInput,
    ) -> Result<RepOutput, RepError> {
        let (budget, capped) = supervisor_budget(&**workload, input.budget);
        let files = self
            .shared_files(&**workload)
            .map_err(|e| RepError::Failed(e.to_string()))?
            .map(std::path::Path::to_path_buf);
        let r = run_repetition(
            workload,
            RepetitionSetup {
                knobs: input.knobs,
                stop: input.stop.clone(),
                budget,
                trace: self.trace.as_mut(),
                rq_trace: if input.timeline {
                    self.rq_trace.as_mut()
                } else {
                    None
                },
                files: files.as_deref(),
                passes: input.passes,
            },
        )
        .map_err(|e| match e {
            RunError::Interrupted => RepError::Interrupted,
            e @ RunError::Timeout(_) if capped => RepError::TimedOut(format!(
                "{e}, the most a default budget may be (this configuration's size asks for {:.0}s)",
                input.budget.as_secs_f64()
            )),
            e @ RunError::Timeout(_) => RepError::TimedOut(e.to_string()),
            e => RepError::Failed(e.to_string()),
        })?;
        let mut sources = r.sources;
        if self.trace.is_none() {
            sources.wakeups = format!("unavailable: {}", self.unavailable);
        }
        Ok(RepOutput {
            outcome: r.outcome,
            counters: r.counters,
            sources,
            detail: RepDetail::Real {
                lost_events: r.lost_events,
                observed: r.observed,
            },
            locks: r.locks,
            timeline: r.timeline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::MockWorkload;
    use schedlab_workload::knobs::SchedPolicy;

    /// The mock workload, saying only how long it expects to take.
    fn expects(expected: Option<Duration>) -> MockWorkload {
        MockWorkload { expected }
    }

    /// A workload whose size asks for millions of years (a count that wrapped) gets at most
    /// six hours by default, so that the supervisor's default budget always fires;
    /// a budget given with the run is kept.
    #[test]
    fn default_budgets_are_bounded() {
        let centuries = Duration::from_secs(371_000_000_000_000);
        let w = expects(Some(centuries));
        assert_eq!(supervisor_budget(&w, centuries), (MAX_DEFAULT_BUDGET, true));
        let given = Duration::from_secs(7 * 3600);
        assert_eq!(supervisor_budget(&w, given), (given, false));
        let small = expects(Some(Duration::from_secs(90)));
        let ninety = Duration::from_secs(90);
        assert_eq!(supervisor_budget(&small, ninety), (ninety, false));
        let none = expects(None);
        assert_eq!(
            supervisor_budget(&none, Settings::DEFAULT_TIMEOUT),
            (Settings::DEFAULT_TIMEOUT, false)
        );
        let long = Duration::from_secs(86_400);
        assert_eq!(supervisor_budget(&none, long), (long, false), "given");
        assert!(MAX_DEFAULT_BUDGET >= Settings::DEFAULT_TIMEOUT);
    }

    /// A FIFO or RR group at the supervisor's priority could not be ended by it: refused before
    /// anything runs, naming the group, the value and what is accepted.
    #[test]
    fn priorities_at_the_supervisors_are_refused() {
        let b = RealBackend::new(CounterMode::Proc);
        let knobs = |policy| Knobs {
            policy: Some(policy),
            ..Knobs::default()
        };
        let e = b
            .check_knobs(&(), "load", &knobs(SchedPolicy::Fifo(99)))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "group 'load': policy=fifo:99: real-time priority 99 is not accepted: the supervisor, which ends a repetition that runs past its time budget, waits at SCHED_FIFO 99 and can only preempt tasks below it; use a real-time priority of 1..98"
        );
        assert!(b
            .check_knobs(&(), "load", &knobs(SchedPolicy::Rr(99)))
            .is_err());
        for ok in [
            SchedPolicy::Fifo(98),
            SchedPolicy::Rr(1),
            SchedPolicy::Other,
            SchedPolicy::Deadline {
                runtime: Duration::from_millis(1),
                deadline: Duration::from_millis(10),
                period: Duration::from_millis(10),
            },
        ] {
            assert!(b.check_knobs(&(), "load", &knobs(ok)).is_ok(), "{ok}");
        }
        assert!(b.check_knobs(&(), "load", &Knobs::default()).is_ok());
    }

    /// The mock workload with a barrier and a condition variable, its tasks hosted as `mode`.
    struct Synced(schedlab_workload::TaskMode);

    impl Workload for Synced {
        fn name(&self) -> &'static str {
            "synced"
        }
        fn params(&self) -> std::collections::BTreeMap<String, String> {
            MockWorkload::default().params()
        }
        fn plan(&self) -> schedlab_workload::Plan {
            schedlab_workload::Plan {
                mode: self.0,
                locks: 1,
                sync: schedlab_workload::SyncPlan {
                    barriers: vec![2],
                    semaphores: Vec::new(),
                    conds: 1,
                    queues: 0,
                    ..Default::default()
                },
                ..MockWorkload::default().plan()
            }
        }
        async fn body<C: schedlab_workload::Context>(
            &self,
            task: schedlab_workload::TaskRef,
            ctx: &C,
        ) -> Result<(), schedlab_workload::WorkloadError> {
            MockWorkload::default().body(task, ctx).await
        }
        fn metric_defs(&self) -> Vec<schedlab_workload::record::MetricDef> {
            MockWorkload::default().metric_defs()
        }
        fn metrics(
            &self,
            o: &schedlab_workload::presets::Outcome,
        ) -> Result<std::collections::BTreeMap<String, f64>, schedlab_workload::WorkloadError>
        {
            MockWorkload::default().metrics(o)
        }
    }

    /// Synchronisation objects live in the schedlab process: a plan that has them and forks its
    /// tasks is refused before anything runs, naming the workload, the hosting and what is
    /// accepted.
    #[test]
    fn forked_tasks_with_synchronisation_objects_are_refused_before_the_run() {
        use schedlab_workload::TaskMode;
        for (mode, what) in [
            (
                TaskMode::Processes,
                "locks, barriers and condition variables",
            ),
            (TaskMode::GroupProcesses, "barriers and condition variables"),
        ] {
            let mut b = RealBackend::new(CounterMode::Proc);
            let config = Config {
                workload: Synced(mode),
                knobs: vec![Knobs::default()],
                label: String::new(),
                machine: (),
            };
            let e = b
                .prepare(&[config], &mut BackendInfo::default())
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("workload 'synced': {what} need tasks run as threads: tasks={mode} is not accepted with them; use tasks=threads")
            );
        }
    }

    #[test]
    fn stale_directories_are_named_with_their_size_and_owner() {
        let mut d = StaleDir {
            path: "/tmp/schedlab-4242-Ab12cd".into(),
            pid: 4242,
            bytes: 256 << 20,
            error: None,
        };
        assert_eq!(
            stale_message(&d),
            "schedlab: removed /tmp/schedlab-4242-Ab12cd (256MiB), the temporary directory of schedlab process 4242, which no longer exists"
        );
        d.error = Some(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(stale_message(&d)
            .starts_with("schedlab: could not remove /tmp/schedlab-4242-Ab12cd (256MiB)"));
    }

    #[test]
    fn tracefs_leftovers_are_counted_in_one_line() {
        use schedlab_real::trace::Removed;
        let mut l = Leftovers::default();
        assert!(
            leftover_messages(&l).is_empty(),
            "nothing found, nothing said"
        );
        l.tracefs = Removed {
            mounts: 1,
            instances: 2,
        };
        assert_eq!(
            leftover_messages(&l),
            ["schedlab: removed 1 tracefs mount point and 2 tracefs instances of schedlab processes which no longer exist"]
        );
        l.tracefs.mounts = 0;
        assert_eq!(
            leftover_messages(&l),
            ["schedlab: removed 2 tracefs instances of schedlab processes which no longer exist"]
        );
    }
}
