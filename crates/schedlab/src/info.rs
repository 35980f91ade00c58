//! `schedlab list` and `schedlab env`.

use crate::error::Error;
use schedlab_real::bpf::BpfWakeups;
use schedlab_real::machine::{machine_info, probe_knobs};
use schedlab_real::procfs::snapshot_self;
use schedlab_real::report::COMM_PREFIX;
use schedlab_real::trace::SchedTrace;
use schedlab_workload::knobs::KNOB_HELP;
use schedlab_workload::presets::{self, Preset, PresetVisitor, WORKLOADS};
use std::fmt::Write;

/// One workload's entry in `schedlab list`, from its declared parameters.
struct Describe;

impl PresetVisitor for Describe {
    type Output = String;
    fn visit<P: Preset>(self) -> String {
        let w = P::with_defaults(2);
        let plan = w.plan();
        let groups: Vec<&str> = plan.groups.iter().map(|g| g.name).collect();
        let params: Vec<String> = P::param_defs()
            .iter()
            .map(|d| match d.usage {
                "" => format!("--{}", d.name),
                u => format!("--{} {u}", d.name),
            })
            .collect();
        let metrics: Vec<String> = w
            .metric_defs()
            .iter()
            .map(|m| format!("{} ({})", m.name, m.unit))
            .collect();
        format!(
            "{}\n  {}\n  parameters: {}\n  groups: {}\n  metrics: {}\n\n",
            P::NAME,
            P::DEF.summary,
            params.join(" "),
            groups.join(", "),
            metrics.join(", ")
        )
    }
}

/// The text of `schedlab list`.
pub fn list(profile_file: Option<&str>) -> Result<String, Error> {
    let mut out = String::from("WORKLOADS\n\n");
    for def in WORKLOADS {
        out.push_str(&presets::visit(def.name, Describe).expect("a shipped preset"));
    }
    let _ = writeln!(
        out,
        "WORKLOAD FILES (run, sweep or check FILE.toml, or rt-app's FILE.json; docs/workload-files.md)\n  examples/*.toml, examples/rt-app/*.json; `schedlab check FILE` prints one's parameters, groups, steps and metrics\n  steps: compute sleep busy period send recv lock unlock barrier post wait cond_wait signal broadcast\n         yield read write rewrite truncate touch memory spawn exit loop timer count\n"
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
        let _ = writeln!(
            out,
            "    by distance (--topology SOCKETSs:CORESc:THREADSt): {}",
            c.distance_costs()
        );
        // Left out of the description above when 0, so that records stay as they were.
        if c.net_wait == 0 {
            let _ = writeln!(
                out,
                "    net_wait=0 (a loopback TCP receive that sleeps: no published figure; calibrate measures it)"
            );
        }
        if c.net_ack == 0 {
            let _ = writeln!(
                out,
                "    net_ack=0 (the ACK a loopback TCP read sends when it drains the queue: no published figure, every receive pays net_msg; calibrate measures it)"
            );
        }
    }
    let _ = writeln!(out, "  keys: {}", schedlab_sim::cost::COST_KEYS);
    let _ = writeln!(
        out,
        "  a file written by `schedlab calibrate` (--profile FILE): its base profile with the keys it measured"
    );
    if let Some(path) = profile_file {
        out.push_str(&describe_profile_file(path)?);
    }
    Ok(out)
}

/// `list --profile FILE`: the file's cost model, and for each key how it was measured.
fn describe_profile_file(path: &str) -> Result<String, Error> {
    use schedlab_sim::profile_file::ProfileFile;
    let p = std::path::Path::new(path);
    let text =
        std::fs::read_to_string(p).map_err(|e| Error::Input(format!("--profile {path}: {e}")))?;
    let file = ProfileFile::parse(&text, p).map_err(|e| Error::Input(e.to_string()))?;
    let model = file
        .cost_model(p)
        .map_err(|e| Error::Input(e.to_string()))?;
    let mut out = format!("\nPROFILE FILE {path}\n  {model}\n");
    if !file.note.is_empty() {
        let _ = writeln!(out, "  note: {}", file.note);
    }
    for (key, value) in &file.costs {
        match file.measured.get(key) {
            Some(m) => {
                let _ = writeln!(
                    out,
                    "  {key:<13} {value} ± {} ({} samples): {}",
                    m.ci95, m.samples, m.method
                );
            }
            None => {
                let _ = writeln!(out, "  {key:<13} {value} (set, not measured)");
            }
        }
    }
    for (key, why) in &file.not_measured {
        let _ = writeln!(out, "  {key:<13} kept from {}: {why}", file.base);
    }
    Ok(out)
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
    // What --counters auto would use: the in-kernel counters, else the tracefs replay.
    let bpf = BpfWakeups::open(COMM_PREFIX);
    match &bpf {
        Ok(b) => {
            let _ = writeln!(
                out,
                "  yes  wakeup and preemption counters — {}",
                b.source()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "  no   {e}");
        }
    }
    match SchedTrace::open(COMM_PREFIX, 64) {
        Ok(t) if bpf.is_err() => {
            let _ = writeln!(
                out,
                "  yes  wakeup and preemption counters — {}",
                t.source()
            );
        }
        Ok(t) => {
            let _ = writeln!(
                out,
                "  yes  (--counters trace) {}, which costs the workload more",
                t.source()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "  no   wakeup and preemption counters (tracefs) — {e}");
        }
    }
    out
}
