//! The command line: clap definitions only. The workloads' own flags are built from the
//! parameters each preset declares (`schedlab_workload::presets::ParamDef`), so a new parameter
//! appears here without an edit; everything else is checked by the experiment layer before
//! anything starts.

use clap::{ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum};
use schedlab_experiment::ShardArg;
use schedlab_script::Script;
use schedlab_workload::duration::parse_duration;
use schedlab_workload::knobs::TimerSlack;
use schedlab_workload::presets::{
    self, Configurable, ParamDef, ParamKind, Preset, PresetVisitor, WorkloadDef,
};
use schedlab_workload::suggest::did_you_mean;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A laboratory for CPU-scheduler experiments.
#[derive(Parser, Debug)]
#[command(name = "schedlab", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// schedlab's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a workload and summarize its repetitions.
    Run(WorkloadArgs),
    /// Run the cross product of --vary values, interleaving repetitions, and print one table.
    Sweep(WorkloadArgs),
    /// Check a workload (a workload file, or a preset) with its parameters and knobs for a
    /// backend, and print the plan it would run; runs nothing.
    Check(WorkloadArgs),
    /// Compare result records ministat-style: distributions, differences with significance.
    Compare {
        /// Result records (JSON from --json); the first is the reference.
        #[arg(required = true, num_args = 2..)]
        records: Vec<PathBuf>,
        /// The metric to plot and test [default: the primary metric].
        #[arg(long)]
        metric: Option<String>,
        /// Confidence level: 80, 90, 95, 98, 99 or 99.5.
        #[arg(long, default_value = "95")]
        level: String,
        /// Welch's t (unequal variances) instead of Student's t with pooled s.
        #[arg(long)]
        welch: bool,
        /// Compare records of different workloads or parameters anyway.
        #[arg(long)]
        force: bool,
    },
    /// Write one self-contained HTML file (tables, charts, machine facts, command lines) of
    /// result records, to open in a browser and share; needs no network.
    Report {
        /// Result records (JSON from --json, a sweep's sweep.json or the records of its --out
        /// directory); a directory stands for its *.json files.
        #[arg(required = true, value_name = "RECORD|DIR")]
        records: Vec<PathBuf>,
        /// The HTML file to write (replaced only once the report is complete; `-` for standard
        /// output).
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
    },
    /// List workloads, their parameters and task groups, the knobs, policies and cost profiles.
    List {
        /// Also show this cost profile file (as `schedlab calibrate` writes it): its values and
        /// how each was measured.
        #[arg(long, value_name = "FILE")]
        profile: Option<String>,
    },
    /// Show what this machine lets schedlab measure.
    Env,
    /// Measure this machine's costs (system call, messages, copies, wakeups, switches, the
    /// device) and write them as a cost profile file for `--profile FILE`.
    Calibrate {
        /// The profile file to write (TOML; `-` for standard output); without it the results are
        /// only printed. An existing file is replaced only with --force.
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
        /// The built-in profile whose values the keys calibrate cannot measure keep.
        #[arg(long, default_value = "modern", value_name = "PROFILE")]
        base: String,
        /// A few short samples per probe (seconds) instead of converging to ±2 %.
        #[arg(long)]
        quick: bool,
        /// Replace the --out file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Record a real program's scheduler events (a command, or a running process for a while)
    /// and write them as a workload file that `run`, `sweep` and `check` take, on the real
    /// kernel and on every simulated policy. Needs root (CAP_BPF and CAP_PERFMON for BPF,
    /// CAP_SYS_ADMIN for tracefs).
    #[command(
        after_help = "Examples:\n  schedlab record -o app.toml -- hackbench -g 2 -l 200\n  schedlab record -o app.toml --pid 1234 --duration 10s\n  schedlab run app.toml --backend sim --policy ule --cpus 8"
    )]
    Record {
        /// The workload file to write (`-` for standard output).
        #[arg(short = 'o', long = "out", value_name = "FILE.toml", required = true)]
        out: PathBuf,
        /// Write the file even if the kernel dropped events, marked approximate.
        #[arg(long)]
        allow_lossy: bool,
        /// Record this running process (every thread, and what they create) instead of a
        /// command.
        #[arg(long, value_name = "PID", conflicts_with = "command")]
        pid: Option<i32>,
        /// How long to record --pid (it stops earlier if the process exits).
        #[arg(long, value_name = "DURATION", value_parser = timeout_duration, requires = "pid")]
        duration: Option<Duration>,
        /// Make the replay sleep where the program slept: a task that woke a sleeping one
        /// waits, before its post, until the replayed sleeper is waiting (docs/recording.md).
        #[arg(long)]
        keep_sleeps: bool,
        /// Also record each pipe and UNIX stream socket read and write (BPF only) and replay
        /// them as channels: the wakeups they carry are kept, at the price of an event per call
        /// for the recorded program (docs/recording.md).
        #[arg(long)]
        data_flow: bool,
        /// Also write the recorded run as a run record (JSON, as `run --json` writes), for
        /// `schedlab compare FILE replay.json` (`-` for standard output).
        #[arg(long, value_name = "FILE.json")]
        json: Option<PathBuf>,
        /// The ring buffer, MiB, 1..4096 (events beyond it are lost): tracefs's per CPU; BPF's
        /// one ring, drained while recording, rounded up to a power of two, at most 1024.
        #[arg(long, value_name = "MIB", default_value = "64", value_parser = clap::value_parser!(u32).range(1..=4096))]
        buffer_mb: u32,
        /// Where the events come from: auto (BPF where it loads, else tracefs), bpf (or fail),
        /// tracefs. The file's header says which was used.
        #[arg(long, value_name = "SOURCE", default_value = "auto", value_parser = ["auto", "bpf", "tracefs"])]
        source: String,
        /// The command and its arguments, after `--`.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Join the --out directories of a sharded sweep (`sweep --shard K/N`) into the records the
    /// unsharded sweep writes, after checking that they are every shard of one sweep, each once.
    Merge {
        /// The shards' --out directories.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// The directory to write: sweep.json and one record per configuration (it must not
        /// exist, or be empty).
        #[arg(short, long, value_name = "OUT", required = true)]
        out: PathBuf,
        /// Also draw the primary metric against the numeric varied key, as `sweep --plot` does.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// Also draw the run-queue timelines the shards recorded (`sweep --shard K/N
        /// --timeline ...`), as `sweep --timeline` does.
        #[arg(long, value_name = "FILE.svg")]
        timeline: Option<PathBuf>,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) of schedlab, or of one of its commands, to stdout.
    Man {
        /// A command, and a workload of it (`sweep chat`) [default: schedlab itself].
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Run a fixed suite of workloads on the real kernel and on the simulator (this machine's
    /// CPUs, the policy closest to this kernel, the given profile) and print each metric
    /// measured, simulated and the simulator's error.
    Validate {
        /// The cost profile: modern, piii-700, or a file `schedlab calibrate` wrote.
        #[arg(long, default_value = "modern", value_name = "NAME|FILE")]
        profile: String,
        /// Write the rows (measured, simulated, error) as JSON.
        #[arg(long, value_name = "FILE")]
        json: Option<std::path::PathBuf>,
        /// Smaller, shorter entries and two runs each (about half a minute).
        #[arg(long)]
        quick: bool,
        /// Simulate this many entries at the same time, one thread each, 1..1024, before the
        /// real runs (which run one at a time, alone) [default: the CPUs this process may run
        /// on]; the simulated column is the same with any value.
        #[arg(long, short = 'j', value_name = "N", allow_negative_numbers = true, value_parser = jobs_count)]
        jobs: Option<usize>,
    },
}

/// A workload, the parameters given for it, and the options every workload takes.
#[derive(Debug, Clone)]
pub struct WorkloadArgs {
    /// The workload: a shipped preset, or a workload file's path.
    pub workload: WorkloadName,
    /// Parameters given on the command line, by name, as text.
    pub params: Vec<(String, String)>,
    /// The options every workload takes.
    pub common: CommonArgs,
}

/// The workload a command names.
#[derive(Debug, Clone)]
pub enum WorkloadName {
    /// A shipped preset.
    Preset(&'static WorkloadDef),
    /// A workload file, by the path given (read by [`prepare`] into [`Prepared::file`]).
    File(String),
}

impl WorkloadName {
    /// The name as the command line gives it (the preset's name, or the file's path).
    pub fn as_str(&self) -> &str {
        match self {
            WorkloadName::Preset(def) => def.name,
            WorkloadName::File(path) => path,
        }
    }
}

/// A workload file named on the command line, read before the command line is parsed (its
/// parameters become flags of its subcommand).
#[derive(Debug, Clone)]
pub struct WorkloadFile {
    /// The path as given.
    pub path: String,
    /// The file, read and compiled at its defaults (a clone shares what was read).
    pub script: Script,
}

/// The command line's definition, with the workload file it names (if any) read.
pub struct Prepared {
    /// The whole command line's definition, with a subcommand for the workload file.
    pub command: clap::Command,
    /// The workload file the command line names.
    pub file: Option<WorkloadFile>,
}

/// Builds one workload's subcommand of `parent` (`run`, `sweep`, `check`) from its declared
/// parameters.
struct WorkloadCommand<'a> {
    /// The command the workload is a subcommand of.
    parent: &'a str,
}

impl PresetVisitor for WorkloadCommand<'_> {
    type Output = clap::Command;
    fn visit<P: Preset>(self) -> clap::Command {
        let mut cmd = clap::Command::new(P::NAME).about(P::DEF.about);
        for d in P::param_defs() {
            let name = d.name;
            let help = match d.default {
                Some(v) if d.kind != ParamKind::Flag => format!("{} [default: {v}]", d.help),
                _ => d.help.to_string(),
            };
            let mut arg = clap::Arg::new(name)
                .long(name)
                .help(help)
                .help_heading(PARAMS_HEADING);
            if let Some(letter) = d.short {
                arg = arg.short(letter);
            }
            let arg = match d.kind {
                ParamKind::Flag => arg.action(ArgAction::SetTrue),
                ParamKind::Value | ParamKind::List => arg
                    .action(ArgAction::Set)
                    .value_name(value_name(d))
                    .allow_hyphen_values(d.hyphen_values)
                    // `--loops -1` reaches the parameter's own check, which names its range,
                    // instead of clap's "unexpected argument '-1'".
                    .allow_negative_numbers(true)
                    .value_parser(move |text: &str| -> Result<String, String> {
                        check_value(P::with_defaults(1), d, text)
                    }),
            };
            cmd = cmd.arg(arg);
        }
        // CommonArgs's own doc comment would become the subcommand's about: set it after.
        let cmd = CommonArgs::augment_args(cmd).about(P::DEF.about);
        let cmd = match jobs_flag(P::param_defs()) {
            JOBS_FLAG => cmd,
            other => cmd.mut_arg(SIM_JOBS_ID, |a| {
                a.long(other.trim_start_matches('-')).short(None)
            }),
        };
        let probe = P::with_defaults(1);
        let groups = probe
            .plan()
            .groups
            .iter()
            .map(|g| {
                let knobs = (probe.group_defaults(false).into_iter())
                    .filter(|d| d.group == g.name)
                    .map(|d| d.knobs.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                (g.name.to_string(), knobs)
            })
            .collect::<Vec<_>>();
        let metrics = (probe.metric_defs().into_iter())
            .map(|m| (m.name, m.unit, m.description))
            .collect::<Vec<_>>();
        let about = WorkloadAbout {
            parent: self.parent,
            groups: &groups,
            metrics: &metrics,
            examples: P::DEF.examples,
        };
        fit_options(cmd, self.parent, Some(&P::DEF), P::param_defs())
            .after_help(about.render(false))
            .after_long_help(about.render(true))
    }
}

/// The help heading of a workload's own parameters.
const PARAMS_HEADING: &str = "Workload parameters";

/// How a parameter's value is shown in help: its choices where it has a few (`socketpair|pipe`),
/// else its name in capitals (`LOOPS`, whose default `[default: 100]` follows the text).
fn value_name(d: &ParamDef) -> String {
    if d.usage.contains('|') {
        d.usage.to_string()
    } else {
        d.name.to_uppercase().replace('-', "_")
    }
}

/// The help heading of each option every workload takes (by clap id), in the order help shows
/// them, as hyperfine groups its options: the knobs and repetitions first, then where the
/// results go, then what only a sweep, the simulator or a search reads.
const HEADINGS: &[(&str, &[&str])] = &[
    (
        "Knobs and repetitions",
        &[
            "group_knobs",
            "timer_slack",
            "runs",
            "until",
            "max_runs",
            "level",
            "warmup",
            "timeout",
            "quiet",
        ],
    ),
    (
        "Outputs",
        &[
            "json",
            "csv",
            "markdown",
            "wis_csv",
            "locks",
            "timeline",
            "rt_app_logs",
        ],
    ),
    ("Sweep", &["vary", "out", "plot", "shard"]),
    ("Backend", &["backend", "counters"]),
    (
        "Simulator (--backend sim)",
        &[
            "policy",
            "cpus",
            "topology",
            "profile",
            "cost",
            "seed",
            "kernel_cpus",
            SIM_JOBS_ID,
        ],
    ),
    (
        "Search (run --find-max)",
        &["find_max", "find_max_limit", "find_max_runs"],
    ),
];

/// The options only `sweep` (and `check`, which checks a sweep as well) reads.
const SWEEP_ONLY: [&str; 4] = ["vary", "out", "plot", "shard"];

/// Whether the common option `id` applies to a workload (`def`: a preset, `None`: a workload
/// file) with parameters `params` under command `parent`. Options that do not apply are hidden
/// from its help, manual and completions, and refused with a message if given anyway.
pub fn option_applies(
    parent: &str,
    id: &str,
    def: Option<&WorkloadDef>,
    params: &[ParamDef],
) -> bool {
    if SWEEP_ONLY.contains(&id) {
        return parent != "run";
    }
    match id {
        "find_max" | "find_max_limit" | "find_max_runs" => {
            parent != "sweep" && def.is_some_and(|d| d.search.is_some())
        }
        // will-it-scale's CSV has a row per thread count.
        "wis_csv" => params.iter().any(|d| d.name == "threads"),
        // rt-app's logs are of an rt-app file's tasks and phases.
        "rt_app_logs" => def.is_none(),
        _ => true,
    }
}

/// `cmd` (a workload's subcommand of `parent`) with its common options under their headings,
/// and those that do not apply to it hidden.
fn fit_options(
    mut cmd: clap::Command,
    parent: &str,
    def: Option<&WorkloadDef>,
    params: &[ParamDef],
) -> clap::Command {
    for (heading, ids) in HEADINGS {
        for id in *ids {
            let applies = option_applies(parent, id, def, params);
            cmd = cmd.mut_arg(*id, |a| a.help_heading(*heading).hide(!applies));
        }
    }
    cmd
}

/// What a workload's help says after its options: its groups, metrics and examples.
struct WorkloadAbout<'a> {
    /// The command (`run`, `sweep`, `check`).
    parent: &'a str,
    /// Its task groups, each with the knobs the workload gives it by default ("" for none).
    groups: &'a [(String, String)],
    /// Its metrics: name, unit, description.
    metrics: &'a [(String, String, String)],
    /// Its declared examples.
    examples: &'a [presets::Example],
}

impl WorkloadAbout<'_> {
    /// The text; `long` (`--help`) adds each metric's description and the groups' default
    /// knobs.
    fn render(&self, long: bool) -> String {
        let mut out = String::from("Task groups (knobs: --group NAME:KNOB=V,...):\n ");
        for (name, knobs) in self.groups {
            out.push(' ');
            out.push_str(name);
            if long && !knobs.is_empty() {
                out.push_str(&format!(" ({knobs})"));
            }
        }
        out.push_str("\n\nMetrics (the first is the primary one):\n");
        if long {
            for (name, unit, description) in self.metrics {
                out.push_str(&format!("  {name} ({unit}): {description}\n"));
            }
        } else {
            let list: Vec<String> = (self.metrics.iter())
                .map(|(name, unit, _)| format!("{name} ({unit})"))
                .collect();
            out.push_str(&format!("  {}\n", list.join(", ")));
        }
        let examples = workload_examples(self.parent, self.examples);
        if !examples.is_empty() {
            out.push_str("\nExamples:\n");
            for (about, line) in examples {
                out.push_str(&format!("  {about}:\n    {line}\n"));
            }
        }
        out.trim_end().to_string()
    }
}

/// The examples to show under `parent`: a workload's own for that command (`check` shows the
/// `run` ones, checked instead of run), as `schedlab ARGS` lines.
pub fn workload_examples(parent: &str, examples: &[presets::Example]) -> Vec<(String, String)> {
    let wanted = if parent == "check" { "run" } else { parent };
    (examples.iter())
        .filter(|e| e.command() == wanted)
        .map(|e| {
            let rest = &e.args[wanted.len()..];
            (e.about.to_string(), format!("schedlab {parent}{rest}"))
        })
        .collect()
}

/// Try `text` (a list's values one by one) on `probe`, so that a value that cannot be parsed is
/// refused by the parser with the parameter's own message.
fn check_value<W: Configurable>(probe: W, d: &ParamDef, text: &str) -> Result<String, String> {
    check_value_as(probe, d, text, |p| format!("--{p}"))
}

/// [`check_value`], with the parameter's name in errors written by `name` (`--set` writes the
/// bare name).
fn check_value_as<W: Configurable>(
    mut probe: W,
    d: &ParamDef,
    text: &str,
    name_as: impl Fn(&str) -> String,
) -> Result<String, String> {
    let name = d.name;
    let values: Vec<&str> = if d.kind == ParamKind::List {
        let values: Vec<&str> = text.split(',').map(str::trim).collect();
        if values.iter().any(|v| v.is_empty()) {
            return Err(format!(
                "--{name} '{text}' has an empty value; separate the values with single commas"
            ));
        }
        if let Some(v) = values
            .iter()
            .enumerate()
            .find(|(i, v)| values[..*i].contains(v))
        {
            return Err(format!(
                "--{name} '{text}' names '{}' twice; give each value once",
                v.1
            ));
        }
        values
    } else {
        vec![text]
    };
    for v in values {
        probe.set_param(name, v).map_err(|e| e.render(&name_as))?;
    }
    Ok(text.to_string())
}

/// The commands that take a workload.
const WORKLOAD_COMMANDS: [&str; 3] = ["run", "sweep", "check"];

/// The command line, with a subcommand for the workload file `args` names (`schedlab run
/// FILE.toml ...`), which is read here; an unreadable or invalid file is an error at its
/// `file:line:column`, before anything else.
pub fn prepare(args: &[String]) -> Result<Prepared, crate::error::Error> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let (Some(command), Some(workload)) = (args.get(1), args.get(2)) else {
        return Ok(Prepared {
            command: cmd,
            file: None,
        });
    };
    if !WORKLOAD_COMMANDS.contains(&command.as_str())
        || workload.starts_with('-')
        || presets::lookup(workload).is_some()
    {
        return Ok(Prepared {
            command: cmd,
            file: None,
        });
    }
    let path = std::path::Path::new(workload);
    if !path.exists() && !workload.ends_with(".toml") && !workload.ends_with(".json") {
        return Err(crate::error::Error::NotAWorkload(workload.clone()));
    }
    let script =
        schedlab_script::load(path).map_err(|e| crate::error::Error::Input(e.to_string()))?;
    // Its warnings depend on the parameters (`run-as`): printed once they are parsed
    // ([`print_file_warnings`]).
    let sub = file_command(command, workload, &script);
    cmd = cmd.mut_subcommand(command, |c| c.subcommand(sub));
    Ok(Prepared {
        command: cmd,
        file: Some(WorkloadFile {
            path: workload.clone(),
            script,
        }),
    })
}

/// Print what the workload file `file` gives that has no effect in the run `args` asks for
/// (rt-app keys), once, on stderr, each at its `file:line:column`, in the file's order, before
/// anything runs: the file's warnings, and those that hold only while `run` is CPU time
/// (`calibration`) when some configuration computes so ([`computes_as_cpu_time`]).
pub fn print_file_warnings(file: &WorkloadFile, args: &WorkloadArgs) {
    let def = file.script.def();
    let cpu_time = computes_as_cpu_time(&file.script, args);
    let mut warnings: Vec<&schedlab_script::Diagnostic> = (def.warnings.iter())
        .chain(def.cpu_time_warnings.iter().filter(|_| cpu_time))
        .collect();
    warnings.sort_by_key(|w| w.span.start);
    let path = std::path::Path::new(&file.path);
    for w in warnings {
        let at = schedlab_script::FileError::at(path, &def.text, w.clone());
        eprintln!("warning: {at}");
    }
}

/// Whether some configuration of the run `args` asks for runs `script`'s `compute` steps
/// (rt-app's `run`) as CPU time: its `run-as` is each value of a `--vary run-as=...`, else the
/// value given (`--run-as`, `--set run-as=`, the last one), else the file's own. A value that
/// is not `loops` counts as CPU time (a bad one is refused with the parameters).
fn computes_as_cpu_time(script: &Script, args: &WorkloadArgs) -> bool {
    use schedlab_script::model::ComputeAs;
    let name = schedlab_script::rtapp::RUN_AS;
    let prefix = format!("{name}=");
    let mut values: Vec<String> = (args.common.vary.iter())
        .filter_map(|v| v.strip_prefix(&prefix))
        .flat_map(|list| schedlab_experiment::vary::split_values(name, list).unwrap_or_default())
        .collect();
    if values.is_empty() {
        let given = args.params.iter().rev().find(|(n, _)| n == name);
        values.extend(given.map(|(_, v)| v.clone()).or_else(|| {
            schedlab_workload::Workload::params(script)
                .get(name)
                .cloned()
        }));
    }
    (values.iter()).any(|v| !matches!(v.trim().parse::<ComputeAs>(), Ok(ComputeAs::Loops)))
}

/// Names of the options every workload takes, which a file's parameter cannot also be a flag
/// for (it is still set with `--set NAME=VALUE`).
fn common_flags() -> Vec<String> {
    let cmd = CommonArgs::augment_args(clap::Command::new("x"));
    let mut names: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    names.extend(["set", "help", "version"].map(String::from));
    names
}

/// The subcommand of a workload file under `parent`: a flag per parameter, `--set`, and the
/// common options.
fn file_command(parent: &str, path: &str, script: &Script) -> clap::Command {
    // One shared copy for every flag's parser: a file of 100,000 groups has 100,000
    // `GROUP.count` parameters, and a copy of the file's values per flag would be quadratic.
    let shared = Arc::new(script.clone());
    let about = if script.def().description.is_empty() {
        format!("Workload file {path}.")
    } else {
        script.def().description.clone()
    };
    let mut cmd = clap::Command::new(path.to_string()).about(about.clone());
    let taken = common_flags();
    for d in script.param_defs() {
        if taken.iter().any(|t| t == d.name) {
            continue;
        }
        let probe = Arc::clone(&shared);
        let help = match d.default {
            Some(v) => format!("{} [default: {v}]", d.help),
            None => d.help.to_string(),
        };
        cmd = cmd.arg(
            clap::Arg::new(d.name)
                .long(d.name)
                .help(help)
                .help_heading(PARAMS_HEADING)
                .action(ArgAction::Set)
                .value_name(d.usage)
                .allow_hyphen_values(true)
                .value_parser(move |text: &str| check_value(Script::clone(&probe), d, text)),
        );
    }
    let script = Arc::clone(&shared);
    cmd =
        cmd.arg(
            clap::Arg::new("set")
                .long("set")
                .value_name("NAME=VALUE")
                .action(ArgAction::Append)
                .allow_hyphen_values(true)
                .help_heading(PARAMS_HEADING)
                .help("Set a parameter of the file (repeatable); `schedlab check FILE` lists them.")
                .value_parser(move |text: &str| -> Result<String, String> {
                    let Some((name, value)) = text.split_once('=') else {
                        return Err(format!("--set '{text}' is not NAME=VALUE"));
                    };
                    let Some(d) = script.param_defs().iter().find(|d| d.name == name.trim()) else {
                        let names: Vec<&str> = script.param_defs().iter().map(|d| d.name).collect();
                        return Err(format!(
                        "--set {text}: the file has no parameter '{name}'; its parameters are: {}{}",
                        if names.is_empty() { "none".to_string() } else { names.join(", ") },
                        did_you_mean(name.trim(), names.iter().copied())
                    ));
                    };
                    check_value_as(Script::clone(&script), d, value, str::to_string)?;
                    Ok(text.to_string())
                }),
        );
    let cmd = CommonArgs::augment_args(cmd).about(about);
    fit_options(cmd, parent, None, shared.param_defs())
}

impl FromArgMatches for WorkloadArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = m.subcommand() else {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingSubcommand,
                "a workload is needed; `schedlab list` shows them",
            ));
        };
        let Some(def) = presets::lookup(name) else {
            // The only other subcommand is the workload file's ([`prepare`]).
            return Ok(WorkloadArgs {
                workload: WorkloadName::File(name.to_string()),
                params: file_params(sub),
                common: CommonArgs::from_arg_matches(sub)?,
            });
        };
        let mut params = Vec::new();
        for d in def.params {
            match d.kind {
                ParamKind::Flag => {
                    if let Ok(Some(true)) = sub.try_get_one::<bool>(d.name) {
                        params.push((d.name.to_string(), "true".to_string()));
                    }
                }
                ParamKind::Value | ParamKind::List => {
                    if let Ok(Some(v)) = sub.try_get_one::<String>(d.name) {
                        params.push((d.name.to_string(), v.clone()));
                    }
                }
            }
        }
        Ok(WorkloadArgs {
            workload: WorkloadName::Preset(def),
            params,
            common: CommonArgs::from_arg_matches(sub)?,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = WorkloadArgs::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for WorkloadArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        // The command being built (`run`, `sweep`, `check`) is named already: the workloads'
        // options fit it.
        let parent = cmd.get_name().to_string();
        let mut cmd = cmd
            .subcommand_required(true)
            .override_usage(format!(
                "schedlab {parent} <WORKLOAD | FILE.toml | FILE.json> [PARAMETERS] [OPTIONS]"
            ))
            .subcommand_value_name("WORKLOAD | FILE.toml | FILE.json")
            .subcommand_help_heading("Workloads")
            .after_help(format!(
                "FILE.toml is a workload file, FILE.json an rt-app file (docs/workload-files.md); \
                 `schedlab check FILE` lists its parameters.\n\
                 `schedlab {parent} WORKLOAD --help` shows the options that apply to WORKLOAD."
            ));
        for def in presets::WORKLOADS {
            let build = WorkloadCommand { parent: &parent };
            if let Some(sub) = presets::visit(def.name, build) {
                cmd = cmd.subcommand(sub);
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        WorkloadArgs::augment_args(cmd)
    }
}

/// The parameters given to a workload file's subcommand: its flags (each a parameter of the
/// file; a parameter named like a common option is `--set` only, so no common option is one),
/// then its `--set NAME=VALUE`s in order.
fn file_params(sub: &ArgMatches) -> Vec<(String, String)> {
    let common = CommonArgs::augment_args(clap::Command::new("x"));
    let is_common = |id: &str| {
        id == "set"
            || common.get_arguments().any(|a| a.get_id().as_str() == id)
            || common.get_groups().any(|g| g.get_id().as_str() == id)
    };
    let mut params = Vec::new();
    for id in sub.ids().map(|id| id.as_str()).filter(|id| !is_common(id)) {
        if let Ok(Some(v)) = sub.try_get_one::<String>(id) {
            params.push((id.to_string(), v.clone()));
        }
    }
    for text in sub.get_many::<String>("set").into_iter().flatten() {
        let (k, v) = text.split_once('=').expect("checked by the parser");
        params.push((k.trim().to_string(), v.to_string()));
    }
    params
}

/// Options every workload takes.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Knobs for a task group: NAME:nice=N,policy=other|batch|idle|fifo:P|rr:P|deadline:R/D/P,slice=DUR,cpus=LIST (repeatable).
    #[arg(long = "group", value_name = "NAME:KNOBS")]
    pub group_knobs: Vec<String>,
    /// How late every task's timed sleeps may end (its timer slack, PR_SET_TIMERSLACK), 1ns..1s,
    /// or `default`: the slack schedlab was started with (normally the kernel's 50us), which
    /// rt-app's threads keep. Over the workload's own (built-in workloads: 1ns, so that sleeps
    /// end when asked; rt-app files: default); --group NAME:timer-slack=... goes over it. Real
    /// kernel only: the simulator's timers fire exactly. Real-time threads have none.
    #[arg(long, value_name = "DUR|default", value_parser = timer_slack)]
    pub timer_slack: Option<TimerSlack>,
    /// Measured repetitions per configuration, each with a fresh workload [default: 3].
    #[arg(long, conflicts_with = "until", allow_negative_numbers = true, value_parser = runs_count)]
    pub runs: Option<usize>,
    /// Repeat until the confidence interval of the primary metric is within PRECISION of its
    /// mean, e.g. 95:2% (at least 3 runs, at most --max-runs).
    #[arg(long, value_name = "LEVEL:PRECISION")]
    pub until: Option<String>,
    /// The most repetitions --until may run per configuration.
    #[arg(long, default_value_t = 30, allow_negative_numbers = true, value_parser = runs_count)]
    pub max_runs: usize,
    /// Confidence level of the intervals in the summary: 80, 90, 95, 98, 99 or 99.5.
    #[arg(long, default_value = "95")]
    pub level: String,
    /// Unrecorded warm-up repetitions before each configuration.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = warmup_count)]
    pub warmup: usize,
    /// Write the result record (JSON) to this file; it is rewritten after every repetition.
    /// `-` is standard output (written at the end; the text then goes to standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the summary as CSV to this file (one row per configuration and metric: mean, CI,
    /// SD, min, median, max, hmean); it is rewritten after every repetition.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the summary as a Markdown table to this file; it is rewritten after every
    /// repetition.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write a thread sweep as will-it-scale's CSV (tasks,processes,processes_idle,threads,
    /// threads_idle,linear: one row per --threads value, the primary metric as `threads`); it is
    /// rewritten after every repetition.
    #[arg(long, value_name = "FILE")]
    pub wis_csv: Option<PathBuf>,
    /// Where to run: the real kernel, or a simulated machine (--policy, --cpus, --profile).
    #[arg(long, value_enum, default_value_t = BackendArg::Real)]
    pub backend: BackendArg,
    /// (sim) The simulated scheduler and its parameters, e.g. o1:threshold=40, cfs, eevdf
    /// (`schedlab list` shows them all) [default: eevdf].
    #[arg(long, value_name = "POLICY[:KEY=V,...]")]
    pub policy: Option<String>,
    /// (sim) Number of simulated CPUs, 1..1024 [default: this machine's].
    #[arg(long, allow_negative_numbers = true, value_parser = cpu_count)]
    pub cpus: Option<usize>,
    /// (sim) CPU topology SOCKETSs:CORESc:THREADSt, e.g. 2s:32c:2t (128 logical CPUs, numbered as
    /// Linux does on x86 servers: first threads of all cores, then their SMT siblings)
    /// [default: flat, --cpus single-thread cores sharing one LLC].
    #[arg(long, value_name = "SOCKETSs:CORESc:THREADSt")]
    pub topology: Option<String>,
    /// (sim) Cost profile of the simulated machine: modern or piii-700 [default: modern].
    #[arg(long)]
    pub profile: Option<String>,
    /// (sim) Override a cost of the profile, e.g. switch=2us,hz=1000 (repeatable; keys in `schedlab list`).
    #[arg(long = "cost", value_name = "KEY=VALUE")]
    pub cost: Vec<String>,
    /// (sim) Seed of the first measured repetition; repetition k uses SEED+k, so the same command
    /// gives the same numbers [default: 1].
    #[arg(long, allow_negative_numbers = true, value_parser = seed_number)]
    pub seed: Option<u64>,
    /// (sim) CPUs the simulated machine's kernel threads — the netisr and disk interrupt
    /// threads, kswapd — may run on, e.g. 0, as interrupts routed to one CPU [default: all].
    #[arg(long, value_name = "LIST")]
    pub kernel_cpus: Option<String>,
    /// Wakeup and preemption counters: auto (in-kernel BPF, else tracefs, else none), bpf or trace (that source or fail), proc (switches and migrations only).
    #[arg(long, value_enum, default_value_t = CountersArg::Auto)]
    pub counters: CountersArg,
    /// Time budget per repetition; the supervisor ends a repetition that exceeds it (default: from the workload's size).
    #[arg(long, allow_hyphen_values = true, value_parser = timeout_duration)]
    pub timeout: Option<Duration>,
    /// Print only the summary (no per-repetition lines).
    #[arg(long, short)]
    pub quiet: bool,
    /// (sim) Simulate this many repetitions at the same time, one thread each, 1..1024; the
    /// records, tables and plots are the same bytes as with --jobs 1 [default: the CPUs this
    /// process may run on]. Real-kernel repetitions always run one at a time.
    /// (The build workload's own --jobs is make's -j: there this option is --sim-jobs.)
    #[arg(id = SIM_JOBS_ID, long = "jobs", short = 'j', value_name = "N", allow_negative_numbers = true, value_parser = jobs_count)]
    pub jobs: Option<usize>,
    /// (web) Search for the most --connections of which at least 95 % conform (SPECweb99's
    /// simultaneous connections), starting from --connections: double while it conforms, then
    /// bisect; each candidate repeated until the interval of its conforming share is clear of
    /// 95 % (at least 3 runs, at most --max-runs).
    #[arg(long, conflicts_with_all = ["until", "runs"])]
    pub find_max: bool,
    /// (web, --find-max) The most connections the search may try.
    #[arg(long, default_value_t = 10_000, requires = "find_max", allow_negative_numbers = true, value_parser = limit_count)]
    pub find_max_limit: u64,
    /// (web, --find-max) The most repetitions the whole search may run.
    #[arg(long, default_value_t = 100, requires = "find_max", allow_negative_numbers = true, value_parser = runs_count)]
    pub find_max_runs: usize,
    /// After the summary, print each lock's statistics as lockmeter's table: the workload's
    /// locks and, on the simulator, the kernel's (runqueue locks, the loopback transmit lock).
    /// The record keeps them either way.
    #[arg(long)]
    pub locks: bool,
    /// Record each CPU's run-queue length over time and draw it as SVG: per configuration, its
    /// first repetition's lengths, their divergence from the mean, and a CPU × time heatmap. The
    /// summary and the record give every repetition's figures (divergence, idle-while-waiting,
    /// migrations to a busier CPU); FILE.events/ beside it keeps the exact events. Real kernel:
    /// needs tracefs (root).
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,
    /// (rt-app files) Write rt-app's per-task logs into DIR (made if missing): one file
    /// BASENAME-TASK-INDEX.log per thread with rt-app 1.0's header, columns and units, a row per
    /// phase pass. With several repetitions or configurations, one directory C{config}-R{run}
    /// of them per repetition.
    #[arg(long, value_name = "DIR")]
    pub rt_app_logs: Option<PathBuf>,
    /// (sweep) A parameter or GROUP.KNOB and its values, e.g. threads=1,2,4, server.nice=0,19 or (simulator) policy=o1,bsd4:preemption=0,ipiwakeup=0 (repeatable; the cross product runs).
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
    /// (sweep) Directory for the records: sweep.json and one record per configuration; a sweep
    /// started again with the same directory resumes where it stopped.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// (sweep) Draw the primary metric against the one numeric varied key, with CI error bars,
    /// one line per value of the other key, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// (sweep) Run only shard K of N (K is 1-based: 1/N … N/N) of the configurations ×
    /// repetitions, into its own --out, for `schedlab merge`; auto/N takes K from
    /// SLURM_ARRAY_TASK_ID (relative to SLURM_ARRAY_TASK_MIN) or JOB_COMPLETION_INDEX (0-based).
    #[arg(long, value_name = "K/N|auto/N", value_parser = shard_arg)]
    pub shard: Option<ShardArg>,
}

/// `--timer-slack`: a duration of 1ns..1s or `default`, the message naming what is accepted.
fn timer_slack(text: &str) -> Result<TimerSlack, String> {
    text.parse()
        .map_err(|e: schedlab_workload::ValueError| e.to_string())
}

/// `--shard`.
fn shard_arg(text: &str) -> Result<ShardArg, String> {
    ShardArg::parse(text).map_err(|e| e.to_string())
}

/// The most repetitions `--runs` and `--max-runs` accept.
pub const MAX_RUNS: usize = 1_000_000;

/// The most warm-up repetitions `--warmup` accepts.
pub const MAX_WARMUP: usize = 1_000;

/// A whole number in `lo..=hi`; a negative, fractional or overflowing value gets the same
/// answer, naming the range. Values below `lo` pass, for the experiment layer's own message.
fn count(text: &str, lo: usize, hi: usize) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n <= hi => Ok(n),
        _ => Err(format!("accepted: a whole number {lo}..{hi}")),
    }
}

/// `--runs` and `--max-runs`.
fn runs_count(text: &str) -> Result<usize, String> {
    count(text, 1, MAX_RUNS)
}

/// `--find-max-limit`.
fn limit_count(text: &str) -> Result<u64, String> {
    let most = schedlab_workload::presets::MAX_CONNECTIONS;
    match count(text, 1, most) {
        Ok(0) => Err(format!("accepted: a whole number 1..{most}")),
        n => n.map(|n| n as u64),
    }
}

/// The id of the common option `--jobs` (the simulator's workers), apart from any workload
/// parameter's id.
const SIM_JOBS_ID: &str = "sim_jobs";

/// The common option's usual spelling.
pub const JOBS_FLAG: &str = "--jobs";

/// How the option of simulated repetitions at the same time is spelled for a workload with
/// parameters `defs`: `--jobs`, or `--sim-jobs` where the workload has a `jobs` parameter of
/// its own (build's, make's -j), which keeps its name.
pub fn jobs_flag(defs: &[ParamDef]) -> &'static str {
    if defs.iter().any(|d| d.name == "jobs") {
        "--sim-jobs"
    } else {
        JOBS_FLAG
    }
}

/// `--jobs`: 1..=MAX_JOBS (0 would run nothing).
fn jobs_count(text: &str) -> Result<usize, String> {
    let most = schedlab_experiment::settings::MAX_JOBS;
    match count(text, 1, most) {
        Ok(0) | Err(_) => Err(format!(
            "accepted: a whole number 1..{most} (how many repetitions run at the same time; 1 runs them one at a time)"
        )),
        n => n,
    }
}

/// The workers `--jobs` gives by default: the CPUs this process may run on (its affinity
/// mask, which `available_parallelism` reads), at most MAX_JOBS.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(schedlab_experiment::settings::MAX_JOBS)
}

/// `--warmup`.
fn warmup_count(text: &str) -> Result<usize, String> {
    count(text, 0, MAX_WARMUP)
}

/// `--cpus` (the simulator checks the range itself; only what is no count is refused here).
fn cpu_count(text: &str) -> Result<usize, String> {
    count(text, 1, schedlab_sim::policy::MAX_CPUS)
        .or_else(|e| text.trim().parse::<usize>().map_err(|_| e))
}

/// `--seed`.
fn seed_number(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| format!("accepted: a whole number 0..{}", u64::MAX))
}

/// `--timeout`: a positive duration.
fn timeout_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("accepted: a positive duration such as 30s or 5m".into());
    }
    Ok(d)
}

/// Backends.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendArg {
    /// The running Linux kernel.
    Real,
    /// A simulated machine running one of the historic or modern policies.
    Sim,
}

/// Counter sources.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountersArg {
    /// In-kernel BPF counters when they load, else the tracefs replay, else /proc only.
    Auto,
    /// In-kernel BPF counters on the wakeup tracepoints, or fail.
    Bpf,
    /// The tracefs replay of the wakeup and switch tracepoints (costs the workload more), or fail.
    Trace,
    /// /proc only (no tracing overhead).
    Proc,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error clap gives for these arguments (after `schedlab`), as text.
    fn refusal(args: &str) -> String {
        let argv = std::iter::once("schedlab").chain(args.split(' '));
        match Cli::try_parse_from(argv) {
            Ok(cli) => panic!("accepted: {args}: {cli:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn negative_and_overflowing_counts_name_the_option_and_its_range() {
        for (args, words) in [
            (
                "run messaging --loops -1",
                &["--loops", "'-1'", "1..1000000000"][..],
            ),
            (
                "run messaging --loops 99999999999999999999999",
                &["--loops", "1..1000000000"],
            ),
            ("run yield --threads -1", &["--threads", "1..131072"]),
            ("run yield --runs -1", &["--runs", "1..1000000"]),
            (
                "run yield --runs 99999999999999999999999",
                &["--runs", "1..1000000"],
            ),
            ("run yield --max-runs -1", &["--max-runs", "1..1000000"]),
            ("run yield --warmup -2", &["--warmup", "0..1000"]),
            ("run yield --cpus -1", &["--cpus", "1..1024"]),
            ("run yield --seed -1", &["--seed", "0.."]),
        ] {
            let e = refusal(args);
            assert!(!e.contains("unexpected argument"), "{args}: {e}");
            assert!(!e.contains("too large to fit"), "{args}: {e}");
            for w in words {
                assert!(e.contains(w), "{args}: '{w}' not in {e}");
            }
        }
    }

    #[test]
    fn lenient_input_is_refused() {
        assert!(refusal("run yield --timeout 0").contains("positive duration"));
        assert!(refusal("run yield --threads 1,1").contains("'1' twice"));
        assert!(refusal("run yield --threads 1,,2").contains("empty value"));
    }

    /// Every example a workload declares is a command line the parser accepts, as its help
    /// prints it for `run`, `sweep` and `check`.
    #[test]
    fn every_declared_example_parses() {
        for def in presets::WORKLOADS {
            for command in ["run", "sweep", "check"] {
                for (_, line) in workload_examples(command, def.examples) {
                    let argv: Vec<&str> = line.split(' ').collect();
                    if let Err(e) = Cli::try_parse_from(&argv) {
                        panic!("{}: {line}: {e}", def.name);
                    }
                }
            }
        }
    }

    /// Each option every workload takes has a help heading, and every heading's id is an
    /// option (a renamed field would otherwise fall back to clap's "Options").
    #[test]
    fn every_common_option_has_one_heading() {
        let cmd = CommonArgs::augment_args(clap::Command::new("x"));
        let ids: Vec<&str> = cmd.get_arguments().map(|a| a.get_id().as_str()).collect();
        let headed: Vec<&str> = HEADINGS
            .iter()
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        for id in &ids {
            let n = headed.iter().filter(|h| *h == id).count();
            assert_eq!(n, 1, "{id} is under {n} headings");
        }
        for id in &headed {
            assert!(ids.contains(id), "heading names '{id}', which is no option");
        }
    }

    /// A workload's one-letter flags clash with no common option's, nor with each other.
    #[test]
    fn short_flags_are_unique_per_workload() {
        let cli = <Cli as clap::CommandFactory>::command();
        for parent in cli
            .get_subcommands()
            .filter(|c| WORKLOAD_COMMANDS.contains(&c.get_name()))
        {
            for sub in parent.get_subcommands() {
                let mut shorts: Vec<char> =
                    sub.get_arguments().filter_map(|a| a.get_short()).collect();
                let n = shorts.len();
                shorts.sort_unstable();
                shorts.dedup();
                assert_eq!(
                    shorts.len(),
                    n,
                    "{} {}: {shorts:?}",
                    parent.get_name(),
                    sub.get_name()
                );
                assert!(!shorts.contains(&'h'), "{}: -h is help", sub.get_name());
            }
        }
    }

    #[test]
    fn valid_values_still_parse() {
        let argv = "schedlab run yield --threads 1,16 --runs 0 --cpus 99 --timeout 1s --seed 7";
        assert!(Cli::try_parse_from(argv.split(' ')).is_ok());
    }
}
