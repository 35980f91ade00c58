//! Facts about this machine and kernel for the result record, and what it lets us measure
//! (`schedlab env`). Capabilities are probed by trying them on a throw-away thread, not guessed
//! from version numbers.

use crate::knobs::try_knobs;
use schedlab_workload::knobs::{Knobs, SchedPolicy};
use schedlab_workload::record::MachineInfo;
use std::time::Duration;

/// Kernel and machine facts.
pub fn machine_info() -> MachineInfo {
    let u = rustix::system::uname();
    let field = |f: &std::ffi::CStr| f.to_string_lossy().into_owned();
    let version = field(u.version());
    MachineInfo {
        hostname: field(u.nodename()),
        kernel_release: field(u.release()),
        kernel_version: version.clone(),
        arch: field(u.machine()),
        cpus: crate::host::online_cpus(),
        cpu_model: crate::procfs::cpu_model(),
        preempt: preempt_model(&version),
    }
}

/// Read debugfs's `sched/preempt` (e.g. `none voluntary (full) lazy`), mounting debugfs on a
/// private temporary directory for the read when it is not mounted (root only; unmounted at once).
fn debugfs_preempt() -> Option<String> {
    if let Ok(text) = std::fs::read_to_string("/sys/kernel/debug/sched/preempt") {
        return Some(text);
    }
    let dir = crate::tempdir::TempDir::new().ok()?;
    rustix::mount::mount(
        "none",
        dir.path(),
        "debugfs",
        rustix::mount::MountFlags::empty(),
        None,
    )
    .ok()?;
    let text = std::fs::read_to_string(dir.path().join("sched/preempt")).ok();
    // Unmount what we mounted above before the directory is removed.
    let _ = rustix::mount::unmount(dir.path(), rustix::mount::UnmountFlags::DETACH);
    text
}

/// The preemption model: the active one from debugfs when readable, else what `uname -v` says.
pub fn preempt_model(uname_version: &str) -> Option<String> {
    if let Some(text) = debugfs_preempt() {
        // The active mode is in parentheses.
        if let Some(active) = text.split_whitespace().find(|w| w.starts_with('(')) {
            let mode = active.trim_matches(|c| c == '(' || c == ')');
            let dynamic = if uname_version.contains("PREEMPT_DYNAMIC") {
                " (PREEMPT_DYNAMIC)"
            } else {
                ""
            };
            return Some(format!("{mode}{dynamic}"));
        }
    }
    for (tag, name) in [
        ("PREEMPT_DYNAMIC", "dynamic (active mode needs debugfs)"),
        ("PREEMPT_RT", "full (PREEMPT_RT)"),
        ("PREEMPT_LAZY", "lazy"),
        ("PREEMPT ", "full"),
    ] {
        if uname_version.contains(tag) || (tag == "PREEMPT " && uname_version.ends_with("PREEMPT"))
        {
            return Some(name.to_string());
        }
    }
    Some("none or voluntary (uname says neither PREEMPT nor PREEMPT_DYNAMIC)".into())
}

/// One capability and whether this machine grants it.
#[derive(Clone, Debug)]
pub struct Capability {
    /// What was tried.
    pub name: &'static str,
    /// Available?
    pub available: bool,
    /// Why not, or how it was established.
    pub detail: String,
}

/// Try each knob on a throw-away thread: negative nice, FIFO/RR, DEADLINE, custom slices.
pub fn probe_knobs() -> Vec<Capability> {
    let mut out = Vec::new();
    let mut add = |name, knobs: Knobs, ok_detail: &str| {
        let r = try_knobs(knobs);
        out.push(Capability {
            name,
            available: r.is_ok(),
            detail: r.map_or_else(|e| e.to_string(), |()| ok_detail.to_string()),
        });
    };
    add(
        "negative nice",
        Knobs {
            nice: Some(-5),
            ..Knobs::default()
        },
        "setpriority(-5) succeeded",
    );
    add(
        "real-time policies (fifo, rr)",
        Knobs {
            policy: Some(SchedPolicy::Fifo(1)),
            ..Knobs::default()
        },
        "sched_setattr(SCHED_FIFO, 1) succeeded",
    );
    add(
        "SCHED_DEADLINE",
        Knobs {
            policy: Some(SchedPolicy::Deadline {
                runtime: Duration::from_micros(100),
                deadline: Duration::from_millis(10),
                period: Duration::from_millis(10),
            }),
            ..Knobs::default()
        },
        "sched_setattr(SCHED_DEADLINE, 100us/10ms/10ms) succeeded",
    );
    add(
        "EEVDF custom slices (slice=)",
        Knobs {
            slice_ns: Some(300_000),
            ..Knobs::default()
        },
        "sched_runtime=0.3ms kept by the kernel",
    );
    let clamps = crate::knobs::uclamp_supported();
    out.push(Capability {
        name: "utilization clamps (util-min, util-max)",
        available: clamps.is_ok(),
        detail: clamps.map_or_else(
            |e| e.to_string(),
            |()| "sched_setattr(SCHED_FLAG_UTIL_CLAMP_MIN|MAX) succeeded".into(),
        ),
    });
    out
}
