//! `schedlab calibrate`: measure this machine's costs with the real backend's probes
//! (`schedlab_real::calibrate`), each repeated until its 95 % confidence interval is within the
//! stopping rule's precision, and turn them into the simulator's cost keys — a profile file
//! (`schedlab_sim::profile_file`) that `--profile FILE` loads.
//!
//! Each key is the difference of probes that the simulator's own accounting says it is (the
//! machine module's timing rules), so that the simulated probe comes out as measured:
//!
//! - `syscall` = a null system call;
//! - `rq_lock` = a `sched_yield` alone on its CPU less a system call (a yield that finds nothing
//!   else to run is, to the simulator, a system call and one pick under the runqueue lock);
//! - `msg` = half a pipe write + read of 1 byte, less a system call (the simulator charges
//!   `syscall + msg` to each side of a message); `sock_msg` the same on a UNIX socketpair,
//!   `net_msg` over loopback TCP;
//! - `copy_per_kib` = the 64 KiB pipe write + read less the 1-byte one, over two copies of 64 KiB;
//! - `wakeup` + `switch` = half a same-CPU ping-pong round trip less a pipe write + read and two
//!   `rq_lock` holds (one-way: write, wakeup, read, block, switch); a write that wakes a thread
//!   on its own CPU may switch to it before returning, so the two cannot be told apart from user
//!   space and the sum is split in the base profile's proportion;
//! - `bounce` = a turn of two threads on two CPUs handing one pipe back and forth (each turn a
//!   write + read) less the bare handoff through a flag and a hot write + read: what a message
//!   pays when its channel was last used on the other CPU;
//! - `ipi_send` = a write that wakes a reader blocked on another CPU, less half a pipe write +
//!   read, `wakeup` and `bounce`: what the waker pays to send the IPI (on a virtual machine, a VM
//!   exit);
//! - `ipi` + `idle_exit` = half a cross-CPU round trip less that waking write, half the same-CPU
//!   round trip and a pipe write + read, plus `wakeup`, less `bounce` (one-way: waking write,
//!   IPI and idle exit, two `rq_lock` holds, switch, the reader's bounce), split in the base
//!   profile's proportion;
//! - `tick` = the median gap a pinned thread spinning on the clock sees at the tick period (the
//!   timer interrupt as the interrupted task pays it); `migration` = a 256 KiB walk right after
//!   moving to the other CPU less the next walk there (the refill of a small working set);
//! - `page_touch` = a memset of a resident 4 KiB page;
//! - `io_per_kib` and `io_latency` from O_DIRECT reads of 4 KiB and 256 KiB (a line through the
//!   two);
//! - `hz` from the kernel's configuration, `memory` from /proc/meminfo's MemTotal (facts, not
//!   measurements).
//!
//! A difference that comes out negative (noise, or a machine the model does not describe) is
//! clamped to 0 and the file says so. Keys no probe reaches keep the base profile's value and
//! are listed with the reason.

use crate::error::ExperimentError;
use schedlab_real::calibrate::{sample, tick_hz, Probe, ProbeSite};
use schedlab_sim::cost::CostModel;
use schedlab_sim::profile_file::{Measurement, ProfileFile};
use schedlab_stats::stopping::{Decision, StoppingRule};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How hard to try.
#[derive(Clone, Copy, Debug)]
pub struct CalibrateOptions {
    /// Short batches and few samples (seconds, for tests), instead of converging to ±2 %.
    pub quick: bool,
    /// The built-in profile whose values the unmeasured keys keep.
    pub base: &'static str,
}

/// One probe's result: mean ns per operation and the half-width of its 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeResult {
    /// Mean, ns per operation.
    pub mean: f64,
    /// 95 % confidence half-width, ns.
    pub ci95: f64,
    /// Samples (batches) taken.
    pub samples: usize,
    /// Whether the interval reached the rule's precision.
    pub converged: bool,
}

/// Run every probe (those that cannot run here are reported, not fatal) and build the profile
/// file. `progress` is told each probe's name as it starts; `stop` ends the run early
/// (`Interrupted`), keeping nothing.
pub fn calibrate(
    opts: CalibrateOptions,
    dir: &Path,
    stop: &AtomicBool,
    mut progress: impl FnMut(&str),
) -> Result<(ProfileFile, BTreeMap<Probe, ProbeResult>), ExperimentError> {
    let base = CostModel::profile(opts.base).map_err(ExperimentError::Cost)?;
    let site = ProbeSite::of_this_process()
        .map_err(|e| ExperimentError::Machine(format!("calibrate: {e}")))?;
    let (rule, batch) = if opts.quick {
        (
            StoppingRule::new(95.0, 0.10, 3, 5).expect("a valid rule"),
            Duration::from_millis(3),
        )
    } else {
        (
            StoppingRule::new(95.0, 0.02, 5, 40).expect("a valid rule"),
            Duration::from_millis(20),
        )
    };
    let mut results = BTreeMap::new();
    let mut failed: BTreeMap<Probe, String> = BTreeMap::new();
    for probe in Probe::ALL {
        progress(probe.describe());
        let mut values = Vec::new();
        let converged = loop {
            if stop.load(Ordering::Relaxed) {
                return Err(ExperimentError::Interrupted);
            }
            match sample(probe, &site, dir, batch) {
                Ok(ns) => values.push(ns),
                Err(e) => {
                    failed.insert(probe, e.to_string());
                    break false;
                }
            }
            match rule.decide(&values) {
                Decision::Continue => {}
                Decision::Converged => break true,
                Decision::GaveUp => break false,
            }
        };
        if failed.contains_key(&probe) {
            continue;
        }
        let d = schedlab_stats::summary::describe(&values, 95.0);
        results.insert(
            probe,
            ProbeResult {
                mean: d.summary.mean,
                ci95: d.ci_half_width,
                samples: values.len(),
                converged,
            },
        );
    }
    Ok((build_file(&base, opts, &results, &failed), results))
}

/// A derived key: Σ coefficient × probe (+ a constant from the base profile), its CI the root sum
/// of squares of the terms' CIs.
struct Derived<'a> {
    terms: Vec<(f64, Probe)>,
    constant: f64,
    constant_why: &'a str,
}

fn build_file(
    base: &CostModel,
    opts: CalibrateOptions,
    r: &BTreeMap<Probe, ProbeResult>,
    failed: &BTreeMap<Probe, String>,
) -> ProfileFile {
    let mut file = ProfileFile {
        name: None,
        base: opts.base.into(),
        note: String::new(),
        ..ProfileFile::default()
    };
    // schedule()'s runqueue work: a yield that finds nothing else to run is a system call and
    // one pick under the runqueue lock, nothing more (the simulator's accounting of it).
    let rq = match (r.get(&Probe::YieldAlone), r.get(&Probe::Syscall)) {
        (Some(y), Some(s)) => (y.mean - s.mean).max(0.0),
        _ => base.rq_lock as f64,
    };
    let ipi_share = base.ipi as f64 / (base.ipi + base.idle_exit).max(1) as f64;
    use Probe::*;
    let keys: Vec<(&str, Derived)> = vec![
        (
            "syscall",
            Derived {
                terms: vec![(1.0, Syscall)],
                constant: 0.0,
                constant_why: "",
            },
        ),
        (
            "msg",
            Derived {
                terms: vec![(0.5, PipeByte), (-1.0, Syscall)],
                constant: 0.0,
                constant_why: "",
            },
        ),
        (
            "copy_per_kib",
            Derived {
                terms: vec![(1.0 / 128.0, Pipe64k), (-1.0 / 128.0, PipeByte)],
                constant: 0.0,
                constant_why: "",
            },
        ),
        (
            "net_msg",
            Derived {
                terms: vec![(0.5, TcpByte), (-1.0, Syscall)],
                constant: 0.0,
                constant_why: "",
            },
        ),
        (
            "sock_msg",
            Derived {
                terms: vec![(0.5, UnixByte), (-1.0, Syscall)],
                constant: 0.0,
                constant_why: "",
            },
        ),
        (
            "rq_lock",
            Derived {
                terms: vec![(1.0, YieldAlone), (-1.0, Syscall)],
                constant: 0.0,
                constant_why: "",
            },
        ),
    ];
    let mut values: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    let put = |file: &mut ProfileFile,
               key: &str,
               d: &Derived,
               values: &mut BTreeMap<&str, (f64, f64)>,
               key_static: &'static str| {
        let missing: Vec<Probe> = d
            .terms
            .iter()
            .map(|t| t.1)
            .filter(|p| !r.contains_key(p))
            .collect();
        if let Some(p) = missing.first() {
            let why = failed.get(p).cloned().unwrap_or_else(|| "not run".into());
            file.not_measured
                .insert(key.into(), format!("needs {} ({why})", p.describe()));
            return;
        }
        let raw: f64 = d.terms.iter().map(|(c, p)| c * r[p].mean).sum::<f64>() + d.constant;
        let ci = d
            .terms
            .iter()
            .map(|(c, p)| (c * r[p].ci95).powi(2))
            .sum::<f64>()
            .sqrt();
        let samples = d.terms.iter().map(|(_, p)| r[p].samples).min().unwrap_or(0);
        let converged = d.terms.iter().all(|(_, p)| r[p].converged);
        let value = raw.max(0.0);
        let mut method = d
            .terms
            .iter()
            .map(|(c, p)| {
                format!(
                    "{}{} × [{}]",
                    if *c < 0.0 { "− " } else { "+ " },
                    trim(c.abs()),
                    p.describe()
                )
            })
            .collect::<Vec<_>>()
            .join(" ");
        method = method.trim_start_matches("+ ").to_string();
        if !d.constant_why.is_empty() {
            method.push_str(&format!(" ({})", d.constant_why));
        }
        if raw < 0.0 {
            method.push_str(&format!("; measured {raw:.0} ns, clamped to 0"));
        }
        if !converged {
            method.push_str("; did not reach the precision asked for");
        }
        file.costs
            .insert(key.into(), format!("{}ns", value.round() as u64));
        file.measured.insert(
            key.into(),
            Measurement {
                ci95: format!("{}ns", ci.round() as u64),
                samples,
                method,
            },
        );
        values.insert(key_static, (value, ci));
    };
    for (key, d) in &keys {
        put(&mut file, key, d, &mut values, key);
    }
    // ipi + idle_exit from the cross-CPU ping-pong, split in the base profile's proportion.
    // One-way on one CPU = PipeByte + wakeup + 2 rq_lock + switch: the two cannot be told
    // apart from user space (a write that wakes a thread on its own CPU may switch to it before
    // returning), so their sum is split in the base profile's proportion.
    let same = Derived {
        terms: vec![(0.5, PingPongSameCpu), (-1.0, PipeByte)],
        constant: -2.0 * rq,
        constant_why: "less two rq_lock holds",
    };
    let wake_share = base.wakeup as f64 / (base.wakeup + base.switch).max(1) as f64;
    split(
        &mut file,
        &put,
        "wakeup + switch",
        &same,
        [("wakeup", wake_share), ("switch", 1.0 - wake_share)],
    );
    // A message on a channel last used on the other CPU: a pipe handed between two CPUs each
    // turn, less the bare handoff and a hot write + read (one bounce per turn).
    let bounce = Derived {
        terms: vec![(1.0, HandoffPipe), (-1.0, HandoffFlag), (-1.0, PipeByte)],
        constant: 0.0,
        constant_why: "",
    };
    put(&mut file, "bounce", &bounce, &mut values, "bounce");
    let bounce_ns = values.get("bounce").map_or(0.0, |v| v.0);
    // The waker's cost of a cross-CPU wakeup beyond `wakeup` (and the bounce its write pays):
    // the IPI it sends.
    let wakeup_ns = file
        .costs
        .get("wakeup")
        .and_then(|v| v.trim_end_matches("ns").parse::<f64>().ok())
        .unwrap_or(base.wakeup as f64);
    let send = Derived {
        terms: vec![(1.0, WakingWrite), (-0.5, PipeByte)],
        constant: -wakeup_ns - bounce_ns,
        constant_why: "less `wakeup` and `bounce`",
    };
    put(&mut file, "ipi_send", &send, &mut values, "ipi_send");
    // One-way across CPUs = the waking write + 2 rq_lock + (ipi + idle_exit) + switch + the
    // reader's bounce, and switch + 2 rq_lock = PingPongSameCpu/2 − PipeByte − wakeup, so
    // ipi + idle_exit = PingPongCrossCpu/2 − WakingWrite − PingPongSameCpu/2 + PipeByte +
    // wakeup − bounce, split in the base profile's proportion.
    let cross = Derived {
        terms: vec![
            (0.5, PingPongCrossCpu),
            (-1.0, WakingWrite),
            (-0.5, PingPongSameCpu),
            (1.0, PipeByte),
        ],
        constant: wakeup_ns - bounce_ns,
        constant_why: "plus `wakeup`, less `bounce`",
    };
    split(
        &mut file,
        &put,
        "waking an idle CPU",
        &cross,
        [("ipi", ipi_share), ("idle_exit", 1.0 - ipi_share)],
    );
    // The tick's cost and a migration's cache refill, as measured.
    for (key, probe) in [
        ("tick", Probe::TickGap),
        ("migration", Probe::MigrationRefill),
    ] {
        match r.get(&probe) {
            Some(p) => {
                file.costs
                    .insert(key.into(), format!("{}ns", p.mean.round() as u64));
                file.measured.insert(
                    key.into(),
                    Measurement {
                        ci95: format!("{}ns", p.ci95.round() as u64),
                        samples: p.samples,
                        method: probe.describe().into(),
                    },
                );
            }
            None => {
                let why = failed.get(&probe).cloned().unwrap_or_default();
                file.not_measured.insert(key.into(), why);
            }
        }
    }
    // Per page.
    match r.get(&Probe::PageWrite) {
        Some(p) => {
            file.costs
                .insert("page_touch".into(), format!("{}ns", p.mean.round() as u64));
            file.measured.insert(
                "page_touch".into(),
                Measurement {
                    ci95: format!("{}ns", p.ci95.round() as u64),
                    samples: p.samples,
                    method: Probe::PageWrite.describe().into(),
                },
            );
        }
        None => {
            file.not_measured.insert(
                "page_touch".into(),
                failed.get(&Probe::PageWrite).cloned().unwrap_or_default(),
            );
        }
    }
    // The device: a line through the 4 KiB and 256 KiB reads.
    match (r.get(&Probe::DirectRead4k), r.get(&Probe::DirectRead256k)) {
        (Some(a), Some(b)) => {
            let per_kib = ((b.mean - a.mean) / 252.0).max(0.0);
            let latency = (a.mean - 4.0 * per_kib).max(0.0);
            let per_kib_ci = (a.ci95.powi(2) + b.ci95.powi(2)).sqrt() / 252.0;
            let latency_ci = (a.ci95.powi(2) + (4.0 * per_kib_ci).powi(2)).sqrt();
            let n = a.samples.min(b.samples);
            file.costs
                .insert("io_per_kib".into(), format!("{}ns", per_kib.round() as u64));
            file.costs
                .insert("io_latency".into(), format!("{}ns", latency.round() as u64));
            file.measured.insert(
                "io_per_kib".into(),
                Measurement {
                    ci95: format!("{}ns", per_kib_ci.round() as u64),
                    samples: n,
                    method: "([O_DIRECT pread of 256 KiB] − [O_DIRECT pread of 4 KiB]) / 252"
                        .into(),
                },
            );
            file.measured.insert(
                "io_latency".into(),
                Measurement {
                    ci95: format!("{}ns", latency_ci.round() as u64),
                    samples: n,
                    method: "[O_DIRECT pread of 4 KiB] − 4 × io_per_kib".into(),
                },
            );
        }
        _ => {
            let why = failed
                .get(&Probe::DirectRead4k)
                .or(failed.get(&Probe::DirectRead256k))
                .cloned()
                .unwrap_or_default();
            for key in ["io_per_kib", "io_latency"] {
                file.not_measured.insert(
                    key.into(),
                    format!("O_DIRECT reads in the temporary directory: {why}"),
                );
            }
        }
    }
    // Facts.
    match tick_hz() {
        Some(hz) => {
            file.costs.insert("hz".into(), hz.to_string());
            file.measured.insert(
                "hz".into(),
                Measurement {
                    ci95: "0".into(),
                    samples: 1,
                    method: "1 s / the resolution of CLOCK_MONOTONIC_COARSE (one jiffy)".into(),
                },
            );
        }
        None => {
            file.not_measured.insert(
                "hz".into(),
                "CLOCK_MONOTONIC_COARSE has no resolution to read".into(),
            );
        }
    }
    match schedlab_real::procfs::mem_total_bytes() {
        Some(b) => {
            let mib = (b >> 20).max(64);
            file.costs.insert("memory".into(), format!("{mib}MiB"));
        }
        None => {
            file.not_measured
                .insert("memory".into(), "no MemTotal in /proc/meminfo".into());
        }
    }
    for (key, why) in [
        (
            "scan",
            "Linux 2.4's goodness loop; no current kernel has it",
        ),
        ("net_lock", "loopback is lockless on current kernels"),
        (
            "reclaim",
            "needs memory pressure on the host, which calibrate never causes",
        ),
        (
            "channel_bytes",
            "a buffer size, not a cost; the base profile's",
        ),
        ("jitter", "the simulator's own noise; the base profile's"),
    ] {
        file.not_measured.insert(key.into(), why.into());
    }
    file
}

/// Measure `d` (named `what`) and set two keys to their shares of it.
fn split<F>(file: &mut ProfileFile, put: &F, what: &str, d: &Derived, keys: [(&str, f64); 2])
where
    F: Fn(&mut ProfileFile, &str, &Derived, &mut BTreeMap<&str, (f64, f64)>, &'static str),
{
    let mut tmp = ProfileFile::default();
    let mut values = BTreeMap::new();
    put(&mut tmp, "x", d, &mut values, "x");
    match values.get("x") {
        Some(&(v, ci)) => {
            let m = &tmp.measured["x"];
            for (key, share) in keys {
                file.costs
                    .insert(key.into(), format!("{}ns", (v * share).round() as u64));
                file.measured.insert(
                    key.into(),
                    Measurement {
                        ci95: format!("{}ns", (ci * share).round() as u64),
                        samples: m.samples,
                        method: format!(
                            "{:.0} % (the base profile's share) of {what}: {}",
                            share * 100.0,
                            m.method
                        ),
                    },
                );
            }
        }
        None => {
            let why = tmp.not_measured.get("x").cloned().unwrap_or_default();
            for (key, _) in keys {
                file.not_measured.insert(key.into(), why.clone());
            }
        }
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
