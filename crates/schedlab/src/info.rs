//! `schedlab list` and `schedlab env`.

use schedlab_real::machine::{machine_info, probe_knobs};
use schedlab_real::procfs::snapshot_self;
use schedlab_real::runner::COMM_PREFIX;
use schedlab_real::trace::SchedTrace;
use schedlab_workload::knobs::KNOB_HELP;
use schedlab_workload::presets::{Chat, Interbench, Messaging, PingPong, Yield};
use schedlab_workload::Workload;
use std::fmt::Write;

fn describe<W: Workload>(out: &mut String, w: &W, about: &str, params: &str) {
    let plan = w.plan();
    let groups: Vec<String> = plan.groups.iter().map(|g| g.name.to_string()).collect();
    let _ = writeln!(
        out,
        "{}\n  {about}\n  parameters: {params}\n  groups: {}",
        w.name(),
        groups.join(", ")
    );
    let metrics: Vec<String> = w
        .metric_defs()
        .iter()
        .map(|m| format!("{} ({})", m.name, m.unit))
        .collect();
    let _ = writeln!(out, "  metrics: {}\n", metrics.join(", "));
}

/// The text of `schedlab list`.
pub fn list() -> String {
    let mut out = String::from("WORKLOADS\n\n");
    describe(
        &mut out,
        &Messaging::default(),
        "hackbench: groups of senders and receivers; every sender writes loops messages to each receiver of its group",
        "--groups 10 --fds 20 --loops 100 --datasize 100 --transport socketpair|pipe --tasks processes|threads",
    );
    describe(
        &mut out,
        &Chat::default(),
        "VolanoMark / IBM chat: rooms of users over loopback; the server relays each message to the other members",
        "--rooms 10 --users 20 --messages 100 --size 100 --transport tcp|unix --mode burst|turns --tasks group-processes|threads",
    );
    describe(
        &mut out,
        &PingPong::default(),
        "perf bench sched pipe: two tasks bounce a 4-byte token",
        "--loops 100000 --transport pipe|socketpair|unix|tcp|udp --tasks threads|processes",
    );
    describe(
        &mut out,
        &Yield::default(),
        "seed 002's sched_yield test: threads call sched_yield for a duration; one configuration per thread count",
        "--threads 1,2,4,16 --duration 2s",
    );
    describe(
        &mut out,
        &Interbench::default(),
        "interbench (seed 004): an interactive task's latency, desired CPU and deadlines under a background load; one configuration per (bench, load) pair",
        "--bench audio,video,x,gaming[,custom] --loads none,video,x,burn,write,read,ring,compile,memload --duration 30s --load-threads CPUs --io-size 256MiB --mem-size 1GiB --cpu PCT --interval 10ms --rt",
    );
    let _ = writeln!(
        out,
        "KNOBS (per group: --group NAME:knob=value,...)\n  {KNOB_HELP}\n"
    );
    let _ = writeln!(
        out,
        "BACKENDS (--backend)\n  real  the running Linux kernel (default)\n  sim   a simulated machine: --policy P[:k=v,...] --cpus N --profile NAME --cost k=v --seed N\n"
    );
    let _ = writeln!(out, "SIMULATED POLICIES (--policy, with --backend sim)");
    for p in schedlab_sim::policy::POLICIES {
        let _ = writeln!(out, "  {:<13} {}", p.name, p.summary);
        for param in p.params {
            let _ = writeln!(out, "  {:<13}   {param}", "");
        }
    }
    let _ = writeln!(
        out,
        "\nCOST PROFILES (--profile; override any cost with --cost key=value)"
    );
    for name in schedlab_sim::cost::PROFILES {
        let c = schedlab_sim::cost::CostModel::profile(name).expect("known profile");
        let _ = writeln!(out, "  {c}");
    }
    let _ = writeln!(out, "  keys: {}", schedlab_sim::cost::COST_KEYS);
    out
}

/// The text of `schedlab env`.
pub fn env() -> String {
    let m = machine_info();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kernel      {} ({})",
        m.kernel_release, m.kernel_version
    );
    let _ = writeln!(
        out,
        "machine     {} CPUs, {}{}",
        m.cpus,
        m.arch,
        m.cpu_model.map(|c| format!(", {c}")).unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "preemption  {}",
        m.preempt.unwrap_or_else(|| "unknown".into())
    );
    let (_, source) = snapshot_self();
    let _ = writeln!(out, "\nwhat schedlab can measure here:");
    let yes = |b: bool| if b { "yes" } else { "no " };
    let _ = writeln!(
        out,
        "  {}  context switches and migrations ({})",
        yes(true),
        source.name()
    );
    for cap in probe_knobs() {
        let _ = writeln!(
            out,
            "  {}  {} — {}",
            yes(cap.available),
            cap.name,
            cap.detail
        );
    }
    match SchedTrace::open(COMM_PREFIX, 64) {
        Ok(t) => {
            let _ = writeln!(
                out,
                "  yes  wakeup and preemption counters — {}",
                t.source()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "  no   wakeup and preemption counters — {e}");
        }
    }
    out
}
