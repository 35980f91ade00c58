//! The command line: clap definitions only. Validation that needs the machine happens in
//! `run.rs` before anything starts.

use clap::{Args, Parser, Subcommand, ValueEnum};
use schedlab_workload::duration::parse_duration;
use schedlab_workload::presets::interbench::parse_size;
use schedlab_workload::presets::{BenchKind, ChatMode, LoadKind};
use schedlab_workload::{TaskMode, Transport};
use std::path::PathBuf;
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
    Run {
        /// The workload.
        #[command(subcommand)]
        workload: WorkloadCmd,
    },
    /// Run the cross product of --vary values, interleaving repetitions, and print one table.
    Sweep {
        /// The workload.
        #[command(subcommand)]
        workload: WorkloadCmd,
    },
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
    /// List workloads, their parameters and task groups, and the knobs.
    List,
    /// Show what this machine lets schedlab measure.
    Env,
}

/// The workloads `run` knows.
#[derive(Subcommand, Debug)]
pub enum WorkloadCmd {
    /// hackbench: groups of senders and receivers exchanging messages (groups: sender, receiver).
    Messaging {
        /// Number of groups.
        #[arg(long, default_value_t = 10)]
        groups: usize,
        /// Senders (and receivers) per group.
        #[arg(long, default_value_t = 20)]
        fds: usize,
        /// Messages each sender writes to each receiver of its group.
        #[arg(long, default_value_t = 100)]
        loops: usize,
        /// Bytes per message (8..4096).
        #[arg(long, default_value_t = 100)]
        datasize: usize,
        /// How messages travel: socketpair or pipe.
        #[arg(long, default_value = "socketpair", value_parser = parse_transport)]
        transport: Transport,
        /// Host tasks as threads or processes.
        #[arg(long, default_value = "processes", value_parser = parse_mode)]
        tasks: TaskMode,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// VolanoMark / IBM chat rooms over loopback (groups: server, client).
    Chat {
        /// Number of rooms.
        #[arg(long, default_value_t = 10)]
        rooms: usize,
        /// Users per room.
        #[arg(long, default_value_t = 20)]
        users: usize,
        /// Messages each user sends.
        #[arg(long, default_value_t = 100)]
        messages: usize,
        /// Bytes per message (16..4096).
        #[arg(long, default_value_t = 100)]
        size: usize,
        /// tcp (loopback, TCP_NODELAY) or unix.
        #[arg(long, default_value = "tcp", value_parser = parse_transport)]
        transport: Transport,
        /// burst (IBM chat: send all at once) or turns (VolanoMark: one broadcast per room in flight).
        #[arg(long, default_value = "burst", value_parser = parse_chat_mode)]
        mode: ChatMode,
        /// group-processes (a server and a client process, a thread per task) or threads.
        #[arg(long, default_value = "group-processes", value_parser = parse_mode)]
        tasks: TaskMode,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// perf bench sched pipe: two tasks bounce a token (groups: ping, pong).
    Pingpong {
        /// How the token travels: pipe, socketpair, unix, tcp or udp (loopback).
        #[arg(long, default_value = "pipe", value_parser = parse_transport)]
        transport: Transport,
        /// Round trips.
        #[arg(long, default_value_t = 100_000)]
        loops: usize,
        /// Host tasks as threads or processes.
        #[arg(long, default_value = "threads", value_parser = parse_mode)]
        tasks: TaskMode,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// interbench: an interactive task's latency and deadlines under background loads (groups: bench, load).
    Interbench {
        /// Benchmarked tasks, comma-separated: audio, video, x, gaming, custom [default: audio,video,x,gaming; custom with --cpu].
        #[arg(long, value_delimiter = ',', value_parser = parse_bench)]
        bench: Vec<BenchKind>,
        /// Background loads, comma-separated: none, video, x, burn, write, read, ring, compile, memload [default: all].
        #[arg(long, value_delimiter = ',', value_parser = parse_load)]
        loads: Vec<LoadKind>,
        /// How long the benchmarked task runs against each load (the load starts up to 1 s earlier).
        #[arg(long, default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
        duration: Duration,
        /// Threads of the burn, ring and compile loads [default: this machine's CPUs].
        #[arg(long)]
        load_threads: Option<usize>,
        /// Size of the read and write loads' files (in a temporary directory, removed afterwards).
        #[arg(long, default_value = "256MiB", value_parser = parse_size)]
        io_size: usize,
        /// Memory the memload writes over and over (at most half the memory available).
        #[arg(long, default_value = "1GiB", value_parser = parse_size)]
        mem_size: usize,
        /// Custom task: percent of each interval it runs, e.g. 5 or 2.74 (adds `custom` to the benchmarks).
        #[arg(long)]
        cpu: Option<f64>,
        /// Custom task: its interval.
        #[arg(long, default_value = "10ms", value_parser = parse_duration)]
        interval: Duration,
        /// Real-time mode (interbench -r): the benchmarked task runs SCHED_FIFO 95, latencies in µs.
        #[arg(long)]
        rt: bool,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// The sched_yield test of seed 002: N threads yield for a while (group: yield).
    Yield {
        /// Thread counts to run, comma-separated (1..4096 each); one configuration per count.
        #[arg(long, default_value = "1,2,4,16", value_delimiter = ',')]
        threads: Vec<usize>,
        /// How long each repetition yields.
        #[arg(long, default_value = "2s", value_parser = parse_duration, allow_hyphen_values = true)]
        duration: Duration,
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// Options every workload takes.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Knobs for a task group: NAME:nice=N,policy=other|batch|idle|fifo:P|rr:P|deadline:R/D/P,slice=DUR,cpus=LIST (repeatable).
    #[arg(long = "group", value_name = "NAME:KNOBS")]
    pub group_knobs: Vec<String>,
    /// Measured repetitions per configuration, each with a fresh workload [default: 3].
    #[arg(long, conflicts_with = "until")]
    pub runs: Option<usize>,
    /// Repeat until the confidence interval of the primary metric is within PRECISION of its
    /// mean, e.g. 95:2% (at least 3 runs, at most --max-runs).
    #[arg(long, value_name = "LEVEL:PRECISION")]
    pub until: Option<String>,
    /// The most repetitions --until may run per configuration.
    #[arg(long, default_value_t = 30)]
    pub max_runs: usize,
    /// Confidence level of the intervals in the summary: 80, 90, 95, 98, 99 or 99.5.
    #[arg(long, default_value = "95")]
    pub level: String,
    /// Unrecorded warm-up repetitions before each configuration.
    #[arg(long, default_value_t = 0)]
    pub warmup: usize,
    /// Write the result record (JSON) to this file; it is rewritten after every repetition.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Where to run: the real kernel, or a simulated machine (--policy, --cpus, --profile).
    #[arg(long, value_enum, default_value_t = BackendArg::Real)]
    pub backend: BackendArg,
    /// (sim) The simulated scheduler and its parameters, e.g. o1:threshold=40, cfs, eevdf
    /// (`schedlab list` shows them all) [default: eevdf].
    #[arg(long, value_name = "POLICY[:KEY=V,...]")]
    pub policy: Option<String>,
    /// (sim) Number of simulated CPUs, 1..64 [default: this machine's].
    #[arg(long)]
    pub cpus: Option<usize>,
    /// (sim) Cost profile of the simulated machine: modern or piii-700 [default: modern].
    #[arg(long)]
    pub profile: Option<String>,
    /// (sim) Override a cost of the profile, e.g. switch=2us,hz=1000 (repeatable; keys in `schedlab list`).
    #[arg(long = "cost", value_name = "KEY=VALUE")]
    pub cost: Vec<String>,
    /// (sim) Seed of the first measured repetition; repetition k uses SEED+k, so the same command
    /// gives the same numbers [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Wakeup and preemption counters: auto (tracefs if available), trace (required), proc (switches and migrations only).
    #[arg(long, value_enum, default_value_t = CountersArg::Auto)]
    pub counters: CountersArg,
    /// Time budget per repetition; the supervisor ends a repetition that exceeds it (default: from the workload's size).
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Print only the summary (no per-repetition lines).
    #[arg(long, short)]
    pub quiet: bool,
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
    /// Tracepoints when available, else /proc only.
    Auto,
    /// Tracepoints, or fail.
    Trace,
    /// /proc only (no tracing overhead).
    Proc,
}

fn parse_transport(s: &str) -> Result<Transport, String> {
    s.parse()
}

fn parse_mode(s: &str) -> Result<TaskMode, String> {
    s.parse()
}

fn parse_chat_mode(s: &str) -> Result<ChatMode, String> {
    s.parse()
}

fn parse_bench(s: &str) -> Result<BenchKind, String> {
    s.parse()
}

fn parse_load(s: &str) -> Result<LoadKind, String> {
    s.parse()
}
