//! `schedlab run` and `schedlab sweep`: the command line's options become typed requests, the
//! experiment layer builds and measures them, and the results are printed.

use crate::cli::{BackendArg, CommonArgs, CountersArg, WorkloadArgs, WorkloadFile, WorkloadName};
use crate::error::Error;
use crate::progress::ProgressDisplay;
use schedlab_experiment::measure::Sinks;
use schedlab_experiment::search::{search, SearchSpec};
use schedlab_experiment::shard::{Shard, ShardError, ShardPlan};
use schedlab_experiment::{
    build_from, measure, Backend, BackendRequest, Budget, CounterMode, Experiment, ExperimentError,
    ExperimentRequest, OutDir, RealBackend, RunEnd, Settings, SimBackend, SimMachine, SimRequest,
};
use schedlab_real::host;
use schedlab_report::output;
use schedlab_workload::presets::{
    self, Configurable, FileOutput, OwnTables, Preset, PresetVisitor, SearchDef, WorkloadDef,
};
use schedlab_workload::record::{ConfigResult, RunRecord};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The workload of a command: a shipped preset, or the workload file the command line named.
enum Selected<'a> {
    /// A preset.
    Preset(&'static WorkloadDef),
    /// A workload file, read.
    File(&'a WorkloadFile),
}

/// The workload `args` names; `file` is the workload file the command line named, read.
fn select<'a>(args: &WorkloadArgs, file: Option<&'a WorkloadFile>) -> Result<Selected<'a>, Error> {
    match &args.workload {
        WorkloadName::Preset(def) => Ok(Selected::Preset(def)),
        WorkloadName::File(path) => file
            .filter(|f| f.path == *path)
            .map(Selected::File)
            .ok_or_else(|| Error::System(format!("the workload file '{path}' was not read"))),
    }
}

/// The policies `--policy` names, each with its own parameters (`sweep --policy A,B`), split as
/// `--vary policy=` splits its values; none without `--policy`.
fn policy_list(common: &CommonArgs) -> Result<Vec<String>, Error> {
    match &common.policy {
        Some(text) => {
            schedlab_experiment::vary::split_values("policy", text).map_err(|e| Error::BadValue {
                flag: "--policy".into(),
                value: text.clone(),
                why: e.to_string(),
            })
        }
        None => Ok(Vec::new()),
    }
}

/// Run (`sweep == false`) or sweep a workload command; `file` is the workload file the command
/// line named, read.
pub fn execute(
    args: WorkloadArgs,
    file: Option<&WorkloadFile>,
    sweep: bool,
) -> Result<ExitCode, Error> {
    let policies = policy_list(&args.common);
    go(args, file, policies, sweep, false)
}

/// `schedlab check`: build every configuration as `run` (or `sweep`, with `--vary`) would, with
/// every check, and print the plan instead of running it.
pub fn check(args: WorkloadArgs, file: Option<&WorkloadFile>) -> Result<ExitCode, Error> {
    let policies = policy_list(&args.common);
    let several_policies = policies.as_ref().is_ok_and(|p| p.len() > 1);
    let sweep = !args.common.vary.is_empty() || several_policies;
    go(args, file, policies, sweep, true)
}

/// `policies`: [`policy_list`], whose error is reported only where the simulator's options are
/// read.
fn go(
    args: WorkloadArgs,
    file: Option<&WorkloadFile>,
    policies: Result<Vec<String>, Error>,
    sweep: bool,
    check: bool,
) -> Result<ExitCode, Error> {
    let common = &args.common;
    if !sweep
        && (!common.vary.is_empty()
            || common.out.is_some()
            || common.plot.is_some()
            || common.shard.is_some())
    {
        return Err(Error::OtherCommand {
            flags: "--vary, --out, --plot and --shard".into(),
            command: "sweep",
            hint: String::new(),
        });
    }
    let workload = select(&args, file)?;
    if let Selected::File(f) = &workload {
        crate::cli::print_file_warnings(f, &args);
    }
    let mut backend = backend_request(common)?;
    let mut compared = Vec::new();
    if let BackendRequest::Sim(req) = &mut backend {
        compared = policy_variation(req, policies?, &common.vary, sweep)?;
    }
    if sweep && common.vary.is_empty() && compared.is_empty() {
        return Err(Error::Conflict("sweep needs at least one --vary KEY=V1,V2,... (e.g. --vary threads=1,2,4 or --vary server.nice=0,19)".into()));
    }
    let search = match &workload {
        Selected::Preset(def) => def.search,
        Selected::File(_) => None,
    };
    if common.find_max {
        check_find_max(&args, search, sweep)?;
    }
    // A preset with a `jobs` parameter of its own (build) spells the option --sim-jobs; a
    // workload file's parameter named so is --set only, so the option stays --jobs there.
    let jobs_flag = match &workload {
        Selected::File(_) => crate::cli::JOBS_FLAG,
        Selected::Preset(def) => crate::cli::jobs_flag(def.params),
    };
    let mut settings = settings(common, jobs_flag)?;
    settings.shard = shard(common, check)?;
    let files = match &workload {
        Selected::Preset(def) => param_files(&args, def)?,
        Selected::File(_) => Vec::new(),
    };
    check_outputs(&args, &files)?;
    if let Some(dir) = &common.rt_app_logs {
        check_rt_app_logs(&workload, dir)?;
        if let (BackendRequest::Sim(_), Selected::File(f)) = (&backend, &workload) {
            warn_simulated_perf(&f.script);
        }
        settings.rt_app_logs = Some(dir.clone());
    }
    let request = ExperimentRequest {
        params: args.params.clone(),
        groups: common.group_knobs.clone(),
        timer_slack: common.timer_slack,
        vary: common.vary.clone(),
        policies: compared,
        host_cpus: host::online_cpus(),
        runs: Some(settings.budget.most_runs()),
        shards: settings.shard.map(|s| s.count),
    };
    let stop = interrupt_flag()?;
    let execute = Execute {
        request: &request,
        backend: &backend,
        settings: &settings,
        common,
        sweep,
        check,
        stop,
        search,
        files: match &workload {
            Selected::Preset(def) => def.files,
            Selected::File(_) => &[],
        },
    };
    let end = match workload {
        Selected::File(f) => execute.with(f.script.clone())?,
        Selected::Preset(def) => presets::visit(def.name, execute)
            .ok_or_else(|| Error::System(format!("unknown workload '{}'", def.name)))??,
    };
    Ok(match end {
        RunEnd::Complete => ExitCode::SUCCESS,
        RunEnd::Interrupted => {
            eprintln!("schedlab: interrupted; the repetitions that finished are kept");
            ExitCode::from(130)
        }
    })
}

/// The files a preset's parameters name for its texts written to files ([`FileOutput`]:
/// cyclictest's `--histfile`), each with its flag: the value given, and each value of a
/// `--vary` of that parameter.
fn param_files(
    args: &WorkloadArgs,
    def: &WorkloadDef,
) -> Result<Vec<(&'static str, std::path::PathBuf)>, Error> {
    let mut out = Vec::new();
    for f in def.files {
        if let Some((_, v)) = args.params.iter().rev().find(|(n, _)| n == f.param) {
            out.push((f.flag, std::path::PathBuf::from(v)));
        }
        let prefix = format!("{}=", f.param);
        for vary in &args.common.vary {
            let Some(values) = vary.strip_prefix(&prefix) else {
                continue;
            };
            let values = schedlab_experiment::vary::split_values(f.param, values).map_err(|e| {
                Error::BadValue {
                    flag: "--vary".into(),
                    value: vary.clone(),
                    why: e.to_string(),
                }
            })?;
            out.extend(values.into_iter().map(|v| (f.flag, v.into())));
        }
    }
    Ok(out)
}

/// `--rt-app-logs DIR`: only a workload that logs rt-app's phase passes (an rt-app file) has
/// such logs; its `log_basename` must make a file name, and DIR must be (or be creatable as) a
/// directory this process can write in. Checked before anything runs.
fn check_rt_app_logs(workload: &Selected, dir: &std::path::Path) -> Result<(), Error> {
    use schedlab_workload::Workload as _;
    let basename = match workload {
        Selected::File(f) => f.script.rt_app_log_basename(),
        Selected::Preset(_) => None,
    };
    let Some(basename) = basename else {
        return Err(Error::output(
            "--rt-app-logs",
            dir,
            "rt-app's logs are written for rt-app files (JSON in rt-app's grammar) only; this workload is not one",
        ));
    };
    schedlab_report::rtapp_log::check_basename(&basename)
        .map_err(|m| Error::output("--rt-app-logs", dir, m))?;
    schedlab_report::rtapp_log::check_dir(dir).map_err(|m| Error::output("--rt-app-logs", dir, m))
}

/// `--rt-app-logs` on the simulator with a `"CPU<n>"` calibration: rt-app's loop is measured on
/// a real CPU, which a simulated machine has not, so the logs' `perf` column stays 0 — said
/// once, with what gives it a count.
fn warn_simulated_perf(script: &schedlab_script::Script) {
    use schedlab_workload::{LoopCalibration, Workload as _};
    if let Some(LoopCalibration::Measure { cpu }) = script.rt_app_log_calibration() {
        eprintln!("warning: --rt-app-logs on the simulator: the file's calibration \"CPU{cpu}\" measures rt-app's busy loop on a real CPU, and a simulated CPU runs no loop, so the logs' perf column (loops run) is 0; give 'calibration' a whole number of ns per loop to have it count loops at that figure");
    }
}

/// `--find-max` searches the workload's [`SearchDef`] (web's conforming connections): refuse
/// what it cannot go with before anything runs.
fn check_find_max(
    args: &WorkloadArgs,
    search: Option<SearchDef>,
    sweep: bool,
) -> Result<(), Error> {
    let common = &args.common;
    let searchable: Vec<&str> = (presets::WORKLOADS.iter())
        .filter(|d| d.search.is_some())
        .map(|d| d.name)
        .collect();
    if sweep {
        return Err(Error::OtherCommand {
            flags: "--find-max".into(),
            command: "run",
            hint: format!(
                " (each candidate is a run of its own); use `schedlab run {} --find-max`",
                searchable.join("|")
            ),
        });
    }
    let Some(search) = search else {
        let what: Vec<&str> = (presets::WORKLOADS.iter())
            .filter_map(|d| d.search.map(|s| s.what))
            .collect();
        return Err(Error::Conflict(format!(
            "--find-max searches {} and applies to the {} workload only, not '{}'",
            what.join(", "),
            searchable.join(", "),
            args.workload.as_str()
        )));
    };
    let outputs = [
        ("--csv", common.csv.is_some()),
        ("--markdown", common.markdown.is_some()),
        ("--wis-csv", common.wis_csv.is_some()),
        ("--timeline", common.timeline.is_some()),
    ];
    if let Some((flag, _)) = outputs.iter().find(|(_, given)| *given) {
        return Err(Error::Conflict(format!(
            "{flag} does not go with --find-max; its record (--json FILE) holds every candidate and the answer"
        )));
    }
    (search.check)(&args.params).map_err(Error::Conflict)
}

/// `sweep --policy A,B` (several policies, each with its own `:parameters`) compares them: the
/// policies come back for the request's variation, and `req` keeps none; `run` takes one policy,
/// which stays `req`'s.
fn policy_variation(
    req: &mut SimRequest,
    policies: Vec<String>,
    vary: &[String],
    sweep: bool,
) -> Result<Vec<String>, Error> {
    let Some(text) = req.policy.clone() else {
        return Ok(Vec::new());
    };
    if policies.len() < 2 {
        return Ok(Vec::new());
    }
    if !sweep {
        return Err(Error::Conflict(format!(
            "--policy {text} names {} policies; `run` takes one (compare them with `schedlab sweep ... --policy {text}`)",
            policies.len()
        )));
    }
    if vary
        .iter()
        .any(|v| v.split_once('=').is_some_and(|(k, _)| k.trim() == "policy"))
    {
        return Err(Error::Conflict(format!(
            "--policy {text} and --vary policy=... both vary the policy; give one of them"
        )));
    }
    req.policy = None;
    Ok(policies)
}

/// The backend options, checked against each other.
fn backend_request(common: &CommonArgs) -> Result<BackendRequest, Error> {
    match common.backend {
        BackendArg::Real => {
            let sim_only = [
                ("--policy", common.policy.is_some()),
                ("--cpus", common.cpus.is_some()),
                ("--topology", common.topology.is_some()),
                ("--profile", common.profile.is_some()),
                ("--cost", !common.cost.is_empty()),
                ("--seed", common.seed.is_some()),
                ("--kernel-cpus", common.kernel_cpus.is_some()),
            ];
            if let Some((flag, _)) = sim_only.iter().find(|(_, given)| *given) {
                return Err(Error::OtherBackend {
                    flag: flag.to_string(),
                    backend: "the simulator",
                    hint: "add --backend sim (on the real kernel, use --group NAME:cpus=LIST to pin tasks)",
                });
            }
            Ok(BackendRequest::Real)
        }
        BackendArg::Sim => {
            if common.counters != CountersArg::Auto {
                return Err(Error::OtherBackend {
                    flag: "--counters".into(),
                    backend: "the real kernel",
                    hint: "the simulator counts everything exactly",
                });
            }
            Ok(BackendRequest::Sim(SimRequest {
                policy: common.policy.clone(),
                cpus: common.cpus,
                topology: common.topology.clone(),
                profile: common.profile.clone(),
                cost: common.cost.clone(),
                seed: common.seed,
                kernel_cpus: common.kernel_cpus.clone(),
            }))
        }
    }
}

/// The measuring settings; `jobs_flag` is how `--jobs` is spelled for this workload.
fn settings(common: &CommonArgs, jobs_flag: &str) -> Result<Settings, Error> {
    let budget = Budget::new(common.runs, common.until.as_deref(), common.max_runs)
        .map_err(Error::Experiment)?;
    let level = Settings::parse_level(&common.level).map_err(Error::Experiment)?;
    Ok(Settings {
        budget,
        until_text: common.until.clone(),
        warmup: common.warmup,
        level,
        timeout: common.timeout,
        json: common.json.clone(),
        command: without_jobs(std::env::args(), jobs_flag),
        shard: None,
        timeline: common.timeline.is_some(),
        timeline_events: common.timeline.as_deref().map(timeline_events_dir),
        rt_app_logs: None,
        jobs: jobs(common, jobs_flag)?,
    })
}

/// How many repetitions run at the same time: `--jobs`, by default the CPUs this process may
/// run on; on the real kernel one, and `--jobs` above 1 is refused rather than ignored.
fn jobs(common: &CommonArgs, flag: &str) -> Result<usize, Error> {
    match (common.backend, common.jobs) {
        (BackendArg::Real, Some(n)) if n > 1 => Err(Error::Conflict(format!(
            "{flag} {n}: real-kernel repetitions run one at a time, since side by side they would share, and disturb, the CPUs they measure; {flag} applies to --backend sim (give {flag} 1, or leave it out)"
        ))),
        (BackendArg::Real, _) => Ok(1),
        (BackendArg::Sim, Some(n)) => Ok(n),
        (BackendArg::Sim, None) => Ok(crate::cli::default_jobs()),
    }
}

/// The command line for the record, without `flag` (`--jobs`, or `--sim-jobs`) and, for
/// `--jobs`, its short form `-j`: how many threads computed the results changes none of them,
/// so records of the same sweep with any `--jobs` are the same bytes.
fn without_jobs(args: impl IntoIterator<Item = String>, flag: &str) -> Vec<String> {
    let short = (flag == crate::cli::JOBS_FLAG).then_some("-j");
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let attached = |name: &str| {
            a.strip_prefix(name)
                .is_some_and(|v| v.starts_with('=') || (name == "-j" && !v.is_empty()))
        };
        if a == flag || Some(a.as_str()) == short {
            args.next();
        } else if !attached(flag) && !short.is_some_and(attached) {
            out.push(a);
        }
    }
    out
}

/// The shard to run (`--shard`), checked against the other options; `auto/N` read from the
/// environment here, before anything runs.
fn shard(common: &CommonArgs, check: bool) -> Result<Option<Shard>, Error> {
    let Some(arg) = common.shard else {
        return Ok(None);
    };
    if common.until.is_some() {
        return Err(Error::Conflict(ShardError::Until.to_string()));
    }
    if common.out.is_none() && !check {
        return Err(Error::Conflict("--shard needs --out DIR: each shard writes its records into a directory of its own, which `schedlab merge` joins".into()));
    }
    if common.plot.is_some() {
        return Err(Error::Conflict("--plot draws the whole sweep, and a shard holds only part of it; draw it when merging: schedlab merge DIR... -o OUT --plot FILE.svg".into()));
    }
    arg.resolve(|var| std::env::var(var).ok())
        .map(Some)
        .map_err(|e| Error::Conflict(e.to_string()))
}

/// Refuse output paths that cannot be written before anything runs: each must be a file in an
/// existing, writable directory, `-` (standard output, for one of them), a character device or
/// a FIFO ([`schedlab_report::output`]); no two may name the same file, and none may name a
/// file this command reads.
fn check_outputs(
    args: &WorkloadArgs,
    param_files: &[(&'static str, std::path::PathBuf)],
) -> Result<(), Error> {
    let common = &args.common;
    let files = [
        ("--json", &common.json),
        ("--plot", &common.plot),
        ("--csv", &common.csv),
        ("--markdown", &common.markdown),
        ("--wis-csv", &common.wis_csv),
        ("--timeline", &common.timeline),
    ];
    let files = (files.into_iter())
        .filter_map(|(flag, p)| Some((flag, p.as_deref()?)))
        .chain(param_files.iter().map(|(flag, p)| (*flag, p.as_path())));
    let mut inputs: Vec<(&str, &std::path::Path)> = Vec::new();
    if let WorkloadName::File(path) = &args.workload {
        inputs.push(("the workload file", std::path::Path::new(path)));
    }
    if let Some(p) = profile_file(common) {
        inputs.push(("the --profile file", p));
    }
    let mut seen: Vec<(&str, output::Target)> = Vec::new();
    for (flag, p) in files {
        let target = check_file_output(flag, p)?;
        if let Some((other, _)) = seen.iter().find(|(_, t)| *t == target) {
            return Err(if target == output::Target::Stdout {
                Error::Conflict(format!(
                    "{flag} -: {other} writes standard output too; only one output can be -"
                ))
            } else {
                Error::output(
                    flag,
                    p,
                    format!("{other} writes that file too; give each output its own file"),
                )
            });
        }
        output::refuse_inputs(flag, p, &target, &inputs)?;
        seen.push((flag, target));
    }
    if let Some(p) = &common.timeline {
        if p.extension().is_none_or(|e| e != "svg") {
            return Err(Error::output(
                "--timeline",
                p,
                "accepted: a file name ending in .svg (the chart is SVG)",
            ));
        }
        let events = timeline_events_dir(p);
        if events.exists() && !events.is_dir() {
            return Err(Error::output(
                "--timeline",
                p,
                format!(
                    "{} (where the exact events go) exists and is not a directory",
                    events.display()
                ),
            ));
        }
    }
    if let Some(d) = &common.out {
        if d.as_os_str() == output::STDOUT {
            return Err(Error::Conflict("--out -: --out names a directory (the sweep's records, one file per configuration); standard output cannot hold it — use --json - for the whole record".into()));
        }
        if d.exists() && !d.is_dir() {
            return Err(Error::output("--out", d, "exists and is not a directory"));
        }
        if d.is_dir() {
            output::check_writable_dir(d)
                .map_err(|e| Error::output("--out", d, format!("cannot write in it: {e}")))?;
        }
    }
    Ok(())
}

/// The `--profile` value when it names a file rather than a built-in profile.
fn profile_file(common: &CommonArgs) -> Option<&std::path::Path> {
    common
        .profile
        .as_deref()
        .filter(|p| !schedlab_sim::cost::PROFILES.contains(p))
        .map(std::path::Path::new)
}

/// Whether an output of this command is `-`, so that its text goes to standard error and
/// standard output carries only that output.
pub(crate) fn stdout_taken(common: &CommonArgs) -> bool {
    [
        &common.json,
        &common.plot,
        &common.csv,
        &common.markdown,
        &common.wis_csv,
    ]
    .iter()
    .any(|p| {
        p.as_deref()
            .is_some_and(|p| p.as_os_str() == output::STDOUT)
    })
}

/// Print a command's text: to standard output, or to standard error when an output (`-`)
/// takes standard output. A reader that went away (`schedlab check ... | head`) is not an
/// error: the rest of the text is dropped, as `cat` or `yes` would.
pub(crate) fn say(text: &str, stdout_taken: bool) {
    use std::io::Write as _;
    let _ = if stdout_taken {
        std::io::stderr().lock().write_all(text.as_bytes())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
}

/// The directory beside `--timeline FILE.svg` for the exact events: `FILE.events`.
pub(crate) fn timeline_events_dir(svg: &std::path::Path) -> std::path::PathBuf {
    svg.with_extension("events")
}

/// Check output `p` (`flag`'s) before anything runs ([`output::resolve`]): what it names, or
/// an error naming the flag, the path and what is accepted.
pub(crate) fn check_file_output(flag: &str, p: &std::path::Path) -> Result<output::Target, Error> {
    output::resolve(p).map_err(|e| Error::Conflict(format!("{flag} {e}")))
}

/// The summary's exports the options ask for (`--csv`, `--markdown`), with `keys` (the keys
/// that name configurations) as columns.
fn exports(common: &CommonArgs, keys: &[String]) -> schedlab_report::export::Exports {
    use schedlab_report::{export_csv::CsvExporter, markdown::MarkdownExporter};
    let mut exports = schedlab_report::export::Exports::default();
    if let Some(path) = &common.csv {
        let keys = keys.to_vec();
        exports.add(path.clone(), Box::new(CsvExporter { keys }));
    }
    if let Some(path) = &common.markdown {
        let keys = keys.to_vec();
        exports.add(path.clone(), Box::new(MarkdownExporter { keys }));
    }
    if let Some(path) = &common.wis_csv {
        exports.add(
            path.clone(),
            Box::new(schedlab_report::export_wis::WisExporter),
        );
    }
    exports
}

/// will-it-scale's CSV has one row per task count: every configuration needs a `threads`
/// parameter of its own value, and the primary metric must be a rate (higher is better).
fn check_wis_csv<W: Configurable, M>(experiment: &Experiment<W, M>) -> Result<(), Error> {
    let mut seen = std::collections::BTreeSet::new();
    for c in &experiment.configs {
        let Some(t) = c.workload.params().get("threads").cloned() else {
            return Err(Error::Conflict(format!(
                "will-it-scale's CSV has a row per task count, and workload '{}' has no threads parameter",
                c.workload.name()
            )));
        };
        if !seen.insert(t.clone()) {
            return Err(Error::Conflict(format!(
                "will-it-scale's CSV has one row per task count, and this sweep has several configurations with threads={t}; vary only --threads"
            )));
        }
    }
    let primary = experiment
        .configs
        .first()
        .and_then(|c| c.workload.metric_defs().into_iter().next());
    match primary {
        Some(m) if m.better == schedlab_workload::record::Better::Higher => Ok(()),
        Some(m) => Err(Error::Conflict(format!(
            "its threads column is an operation rate, and this workload's primary metric {} is not one",
            m.name
        ))),
        None => Err(Error::Conflict("the workload has no metric".into())),
    }
}

/// SIGINT and SIGTERM set a flag; the run stops at the next check and keeps what finished.
pub(crate) fn interrupt_flag() -> Result<Arc<AtomicBool>, Error> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| Error::System(format!("signal handler: {e}")))?;
    }
    Ok(stop)
}

/// Build, measure and print one workload command for preset `P`.
struct Execute<'a> {
    request: &'a ExperimentRequest,
    backend: &'a BackendRequest,
    settings: &'a Settings,
    common: &'a CommonArgs,
    sweep: bool,
    /// Print the plan instead of running (`schedlab check`).
    check: bool,
    stop: Arc<AtomicBool>,
    /// The workload's `--find-max` search, if it has one.
    search: Option<SearchDef>,
    /// The texts its parameters send to files (cyclictest's `--histfile`).
    files: &'static [FileOutput],
}

impl PresetVisitor for Execute<'_> {
    type Output = Result<RunEnd, Error>;
    fn visit<P: Preset>(self) -> Self::Output {
        let base = P::with_defaults(self.backend.machine_cpus(self.request.host_cpus));
        self.with(base)
    }
}

impl Execute<'_> {
    /// Build, measure and print the configurations of workload `base`.
    fn with<W: Configurable>(self, base: W) -> Result<RunEnd, Error> {
        match self.backend {
            BackendRequest::Real => {
                let mut backend = RealBackend::new(match self.common.counters {
                    CountersArg::Auto => CounterMode::Auto,
                    CountersArg::Bpf => CounterMode::Bpf,
                    CountersArg::Trace => CounterMode::Trace,
                    CountersArg::Proc => CounterMode::Proc,
                })
                .with_timeline(self.common.timeline.is_some());
                self.on(base, &mut backend, ())
            }
            BackendRequest::Sim(req) => {
                let machine = SimMachine::from_request(req, self.request.host_cpus)
                    .map_err(Error::Experiment)?;
                self.on(base, &mut SimBackend, machine)
            }
        }
    }

    fn on<W: Configurable, B: Backend>(
        self,
        base: W,
        backend: &mut B,
        machine: B::Machine,
    ) -> Result<RunEnd, Error> {
        if let Some(spec) = self.search.filter(|_| self.common.find_max && !self.check) {
            return self.find_max(spec, base, backend, &machine);
        }
        let experiment: Experiment<W, B::Machine> =
            build_from(base, self.request, backend, &machine).map_err(Error::Experiment)?;
        let plan = match (self.settings.shard, &self.settings.budget) {
            (Some(shard), Budget::Fixed(runs)) => Some(
                shard
                    .plan(experiment.configs.len(), *runs)
                    .map_err(|e| Error::Conflict(e.to_string()))?,
            ),
            _ => None,
        };
        if self.check {
            let mut text = describe_experiment(&experiment, backend);
            if let Some(plan) = &plan {
                // Before the closing "checked; nothing was run".
                let end = text.trim_end().rfind('\n').map_or(0, |i| i + 1);
                text.insert_str(end, &describe_shard(&experiment, plan));
            }
            say(&text, false);
            return Ok(RunEnd::Complete);
        }
        let keys = table_keys(&experiment);
        if let Some(path) = &self.common.wis_csv {
            check_wis_csv(&experiment)
                .map_err(|e| Error::output("--wis-csv", path, e.to_string()))?;
        }
        if let Some(path) = &self.common.plot {
            let values = key_values(&experiment, &keys);
            schedlab_report::plot::check_keys(&values)
                .map_err(|e| Error::output("--plot", path, e.to_string()))?;
        }
        let out = self
            .common
            .out
            .as_deref()
            .map(OutDir::new)
            .transpose()
            .map_err(|error| Error::ExperimentOption {
                flag: "--out",
                error,
            })?;
        let combinations = experiment.combinations.clone();
        let exports = exports(self.common, &keys);
        let sinks = Sinks {
            json: self.settings.json.as_deref(),
            out: out.as_ref(),
            exports: Some(&exports),
        };
        let mut display = ProgressDisplay::new(self.common.quiet);
        let measured = measure(
            experiment,
            backend,
            self.settings,
            &sinks,
            &self.stop,
            &mut |p| display.report(p),
        );
        display.clear();
        let (end, record) = match measured {
            Ok(done) => done,
            // The record could not be written: print what finished, then say what was not saved.
            Err(ExperimentError::Unsaved { source, record }) => {
                if !record.configs.iter().all(|c| c.repetitions.is_empty()) {
                    self.print(&record, &keys, &combinations);
                }
                return Err(Error::Unsaved(*source));
            }
            Err(e) => return Err(Error::Experiment(e)),
        };
        if let Some(plan) = &plan {
            say(
                &format!("{}\n", shard_done(&record, plan, self.common)),
                stdout_taken(self.common),
            );
            return Ok(end);
        }
        self.print(&record, &keys, &combinations);
        self.write_param_files(&record, &keys)?;
        if let Some(path) = &self.common.timeline {
            schedlab_report::timeline::write_timeline(&record, path).map_err(|e| {
                Error::output(
                    "--timeline",
                    path,
                    format!("{e}; the chart was not written (the figures above are complete)"),
                )
            })?;
            eprintln!(
                "wrote {} (exact events in {})",
                path.display(),
                timeline_events_dir(path).display()
            );
        }
        if !self.sweep {
            return Ok(end);
        }
        if let Some(path) = &self.common.plot {
            schedlab_report::plot::sweep_chart(&record, &keys, path).map_err(|e| {
                Error::output(
                    "--plot",
                    path,
                    format!("{e}; the plot was not written (the table above is complete)"),
                )
            })?;
            eprintln!("wrote {}", path.display());
        }
        Ok(end)
    }

    /// `run web --find-max`: the search from `--connections` (schedlab_experiment::search), its
    /// table and answer.
    fn find_max<W: Configurable, B: Backend>(
        &self,
        search_def: SearchDef,
        base: W,
        backend: &mut B,
        machine: &B::Machine,
    ) -> Result<RunEnd, Error> {
        let param = search_def.param;
        let given = self.request.params.iter().rev().find(|(k, _)| k == param);
        let start_text = given
            .map(|(_, v)| v.clone())
            .or_else(|| base.params().get(param).cloned())
            .unwrap_or_default();
        let start = start_text
            .trim()
            .parse::<u64>()
            .map_err(|_| Error::BadValue {
                flag: format!("--{param}"),
                value: start_text.clone(),
                why: "accepted: a whole number, where --find-max starts".into(),
            })?;
        let spec = SearchSpec {
            param: param.into(),
            metric: search_def.metric.into(),
            threshold: search_def.threshold,
            start,
            limit: self.common.find_max_limit,
            max_runs: self.common.max_runs,
            total_runs: self.common.find_max_runs,
        };
        let mut display = ProgressDisplay::new(self.common.quiet);
        let searched = search(
            base,
            self.request,
            backend,
            machine,
            self.settings,
            &spec,
            &self.stop,
            &mut |p| display.report(p),
        );
        display.clear();
        let (end, record) = searched.map_err(Error::Experiment)?;
        say(
            &schedlab_report::search::search_table(&record),
            stdout_taken(self.common),
        );
        Ok(end)
    }

    /// Write the texts the workload's parameters send to files ([`FileOutput`]), each file
    /// with the configurations that name it, through the one writer.
    fn write_param_files(&self, record: &RunRecord, keys: &[String]) -> Result<(), Error> {
        for f in self.files {
            let mut by_path: std::collections::BTreeMap<&str, Vec<&ConfigResult>> =
                std::collections::BTreeMap::new();
            for c in &record.configs {
                if let Some(p) = c.params.get(f.param).filter(|p| !p.is_empty()) {
                    by_path.entry(p).or_default().push(c);
                }
            }
            for (path, rows) in by_path {
                let path = std::path::Path::new(path);
                output::write(path, (f.render)(&rows, keys).as_bytes()).map_err(|e| {
                    Error::output(
                        f.flag,
                        path,
                        format!("{e}; it was not written (the figures above are complete)"),
                    )
                })?;
                if path.as_os_str() != output::STDOUT {
                    eprintln!("wrote {}", path.display());
                }
            }
        }
        Ok(())
    }

    /// The summary of a run, or the table of a sweep.
    fn print(&self, record: &RunRecord, keys: &[String], combinations: &[String]) {
        let own = schedlab_report::seed::own_tables_def(record);
        let mut text = match own {
            _ if !self.sweep => schedlab_report::text::summary(record),
            Some(own) => own_tables(&own, record, combinations),
            None => schedlab_report::sweep::table(record, keys),
        };
        if self.common.locks {
            text.push_str(&schedlab_report::text::lock_tables(record));
        }
        text.push_str(&schedlab_report::timeline::timeline_text(record));
        say(&text, stdout_taken(self.common));
    }
}

/// What a shard ran, and how to join it with the others.
fn shard_done(record: &RunRecord, plan: &ShardPlan, common: &CommonArgs) -> String {
    let held: usize = record.configs.iter().map(|c| c.repetitions.len()).sum();
    let dir = common
        .out
        .as_deref()
        .map_or_else(String::new, |d| d.display().to_string());
    let timeline = match &common.timeline {
        Some(svg) => format!(
            "; its run-queue timelines are in the records (exact events in {}); the chart of the whole sweep: merge ... --timeline {}",
            timeline_events_dir(svg).display(),
            svg.display()
        ),
        None => String::new(),
    };
    format!(
        "shard {}: {held} of the sweep's {} repetitions ({} configurations × {} runs) are in {dir}{timeline}; when all {} shards are done: schedlab merge DIR... -o OUT",
        plan.shard,
        record.configs.len() * plan.runs,
        record.configs.len(),
        plan.runs,
        plan.shard.count
    )
}

/// The repetitions of each configuration a shard runs, as `schedlab check --shard` prints them.
fn describe_shard<W, M>(experiment: &Experiment<W, M>, plan: &ShardPlan) -> String {
    let mut out = format!(
        "shard {} runs {} of the {} repetitions:\n",
        plan.shard,
        plan.indices.iter().map(Vec::len).sum::<usize>(),
        plan.indices.len() * plan.runs
    );
    for (c, indices) in experiment.configs.iter().zip(&plan.indices) {
        if !indices.is_empty() {
            let n: Vec<String> = indices.iter().map(|k| (k + 1).to_string()).collect();
            out.push_str(&format!("  {}: repetition {}\n", c.label, n.join(", ")));
        }
    }
    out
}

/// The columns that name a sweep's configurations: the varied keys, then the keys of
/// parameters that a list expanded (`threads` in a sweep over policies with `--threads 1,16`).
fn table_keys<W, M>(experiment: &Experiment<W, M>) -> Vec<String> {
    let mut keys: Vec<String> = experiment
        .variations
        .iter()
        .map(|v| v.name.clone())
        .collect();
    for c in &experiment.configs {
        for kv in c.label.split(' ') {
            if let Some((k, _)) = kv.split_once('=') {
                if !keys.iter().any(|x| x == k) {
                    keys.push(k.to_string());
                }
            }
        }
    }
    keys
}

/// Each key's value in every configuration, from the labels (which name them all).
fn key_values<W, M>(experiment: &Experiment<W, M>, keys: &[String]) -> Vec<(String, Vec<String>)> {
    keys.iter()
        .map(|k| {
            let values = experiment
                .configs
                .iter()
                .map(|c| {
                    c.label
                        .split(' ')
                        .find_map(|kv| kv.strip_prefix(k.as_str())?.strip_prefix('='))
                        .unwrap_or("-")
                        .to_string()
                })
                .collect();
            (k.clone(), values)
        })
        .collect()
}

/// A sweep of a workload with tables of its own prints them side by side for each combination
/// of the varied values ([`schedlab_report::seed::side_by_side`], interbench's seed 004 form).
pub fn own_tables(own: &OwnTables, record: &RunRecord, combinations: &[String]) -> String {
    let part = |what: &String| {
        let mut r = record.clone();
        r.configs
            .retain(|c| c.label == *what || c.label.starts_with(&format!("{what} ")));
        (what.clone(), r)
    };
    let parts: Vec<(String, RunRecord)> = combinations.iter().map(part).collect();
    let refs: Vec<(&str, &RunRecord)> = parts.iter().map(|(n, r)| (n.as_str(), r)).collect();
    schedlab_report::seed::side_by_side(own, &refs, record.level)
}

/// The plan of every configuration of `experiment`, as `schedlab check` prints it.
fn describe_experiment<W: Configurable, B: Backend>(
    experiment: &Experiment<W, B::Machine>,
    backend: &B,
) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let Some(first) = experiment.configs.first() else {
        return out;
    };
    let w = &first.workload;
    let _ = writeln!(out, "workload      {}", w.name());
    let params: Vec<String> = w.params().iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(
        out,
        "parameters    {}",
        if params.is_empty() {
            "none".to_string()
        } else {
            params.join(" ")
        }
    );
    let _ = writeln!(
        out,
        "machine       {}",
        backend
            .machine_label(&first.machine)
            .unwrap_or_else(|| "this machine's kernel".into())
    );
    let plan = w.plan();
    let _ = writeln!(
        out,
        "tasks         {} ({}; channels over {})",
        plan.total_tasks(),
        plan.mode,
        plan.transport
    );
    for (g, knobs) in plan.groups.iter().zip(&first.knobs) {
        let k = if knobs.is_default() {
            String::new()
        } else {
            knobs.to_string()
        };
        let _ = writeln!(
            out,
            "  group {:<12} {:>6} task{}{}",
            g.name,
            g.tasks,
            if g.tasks == 1 { " " } else { "s" },
            if k.is_empty() {
                String::new()
            } else {
                format!("  {k}")
            }
        );
    }
    let sync = &plan.sync;
    let _ = writeln!(
        out,
        "objects       {} channels, {} locks, {} barriers, {} semaphores, {} conditions",
        plan.channels,
        plan.locks,
        sync.barriers.len(),
        sync.semaphores.len(),
        sync.conds
    );
    let metrics: Vec<String> = w
        .metric_defs()
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let unit = if m.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", m.unit)
            };
            format!("{}{unit}{}", m.name, if i == 0 { " (primary)" } else { "" })
        })
        .collect();
    let _ = writeln!(out, "metrics       {}", metrics.join(", "));
    if let Some(t) = w.expected_time() {
        let _ = writeln!(
            out,
            "time budget   {} per repetition",
            schedlab_workload::duration::format_duration(t)
        );
    }
    if let Some(steps) = w.describe() {
        out.push_str(&steps);
    }
    if experiment.configs.len() > 1 {
        let _ = writeln!(out, "configurations {}:", experiment.configs.len());
        for c in &experiment.configs {
            let _ = writeln!(out, "  {}", c.label);
        }
    }
    out.push_str("checked; nothing was run\n");
    out
}
