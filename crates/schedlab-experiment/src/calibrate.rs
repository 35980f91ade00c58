//! `schedlab calibrate`: measure this machine's costs with the real backend's probes
//! (`schedlab_real::calibrate`), each repeated until its 95 % confidence interval is within the
//! stopping rule's precision — interleaved, one batch of every undecided probe per round, so that
//! background load falls on all of them alike — and turn them into the simulator's cost keys — a profile file
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
//! - `sock_queue` = a socketpair write + read of 1 byte with 5,040 queued on 80 sockets less
//!   the one with nothing queued, over the mean of `log2(queued bytes / 49,152)` the simulator
//!   charges the probe's writes (0 … 5,039 queued before each, 768 bytes of skb each) and reads
//!   (5,040 … 1);
//! - `copy_per_kib` = the 64 KiB pipe write + read less the 1-byte one, over two copies of 64 KiB;
//! - `wakeup` + `switch` = half a same-CPU ping-pong round trip less a pipe write + read and two
//!   `rq_lock` holds (one-way: write, wakeup, read, block, switch); a write that wakes a thread
//!   on its own CPU may switch to it before returning, so the two cannot be told apart from user
//!   space and the sum is split in the base profile's proportion;
//! - `net_wait` = half a same-CPU ping-pong round trip over two loopback TCP connections less a
//!   TCP write + read, less the same for pipes (half the pipe ping-pong less a pipe write +
//!   read): what a TCP receive that sleeps and is woken costs beyond a pipe read's sleep and
//!   wakeup, which the simulator charges alike for every transport (`machine/tcp_wait.rs`);
//! - `net_ack` = half a TCP write + read of 1 byte less a TCP read of 1 byte that leaves data
//!   queued (16 written, the first 15 read): the ACK a read sends when it empties the queue,
//!   which the simulator charges apart (`machine/tcp_drain.rs`), at most `net_msg`;
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
//! - `hz` from the kernel's configuration, `memory` from /proc/meminfo's MemTotal,
//!   `sock_slots` from the number of non-blocking 1-byte writes a socketpair takes before
//!   EAGAIN (facts, not measurements).
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

/// Run every probe (those that cannot run here are reported, not fatal) in interleaved rounds
/// until each one's interval is narrow or its sample budget is spent, and build the profile
/// file. `progress` is told each probe's name in the first round, then each round's number; `stop` ends the run early
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
    // The probes run interleaved, one batch of each still-undecided probe per round, so that a
    // stretch of background load falls on all of them alike: a derived key is a difference of
    // probes (e.g. `wakeup` = half a ping-pong less a pipe write + read), and probes timed
    // minutes apart under different load could give it any sign.
    let mut values: BTreeMap<Probe, Vec<f64>> = BTreeMap::new();
    let mut decided: BTreeMap<Probe, bool> = BTreeMap::new();
    let mut failed: BTreeMap<Probe, String> = BTreeMap::new();
    for round in 1.. {
        let pending: Vec<Probe> = Probe::ALL
            .into_iter()
            .filter(|p| !decided.contains_key(p) && !failed.contains_key(p))
            .collect();
        if pending.is_empty() {
            break;
        }
        if round == 1 {
            for probe in &pending {
                progress(probe.describe());
            }
        } else {
            progress(&format!(
                "round {round}: {} probe(s) still narrowing their interval",
                pending.len()
            ));
        }
        for probe in pending {
            if stop.load(Ordering::Relaxed) {
                return Err(ExperimentError::Interrupted);
            }
            match sample(probe, &site, dir, batch) {
                Ok(ns) => {
                    let v = values.entry(probe).or_default();
                    v.push(ns);
                    match rule.decide(v) {
                        Decision::Continue => {}
                        Decision::Converged => {
                            decided.insert(probe, true);
                        }
                        Decision::GaveUp => {
                            decided.insert(probe, false);
                        }
                    }
                }
                Err(e) => {
                    failed.insert(probe, e.to_string());
                }
            }
        }
    }
    let mut results = BTreeMap::new();
    for (probe, converged) in decided {
        let v = &values[&probe];
        let d = schedlab_stats::summary::describe(v, 95.0);
        results.insert(
            probe,
            ProbeResult {
                mean: d.summary.mean,
                ci95: d.ci_half_width,
                samples: v.len(),
                converged,
            },
        );
    }
    Ok((build_file(&base, opts, &results, &failed), results))
}

/// A derived key: Σ coefficient × probe + a constant, its CI the root sum of squares of the
/// terms' CIs.
struct Derived {
    terms: Vec<(f64, Probe)>,
    constant: f64,
    constant_why: &'static str,
}

impl Derived {
    /// Σ coefficient × probe.
    fn of(terms: Vec<(f64, Probe)>) -> Derived {
        Derived {
            terms,
            constant: 0.0,
            constant_why: "",
        }
    }

    /// The same plus `constant` (`why` says what it is).
    fn plus(self, constant: f64, why: &'static str) -> Derived {
        Derived {
            constant,
            constant_why: why,
            ..self
        }
    }
}

/// A key's value as it goes into the file.
struct Estimate {
    value: f64,
    ci: f64,
    samples: usize,
    method: String,
}

/// Why a key cannot be derived: a probe it needs did not run, or failed.
#[derive(Debug, thiserror::Error)]
#[error("needs {} ({why})", probe.describe())]
struct MissingProbe<'a> {
    /// The probe.
    probe: Probe,
    /// Why it has no result (`not run`, or its error).
    why: &'a str,
}

/// The profile file being built from the probes' results.
struct Builder<'a> {
    file: ProfileFile,
    r: &'a BTreeMap<Probe, ProbeResult>,
    failed: &'a BTreeMap<Probe, String>,
}

impl Builder<'_> {
    /// Evaluate `d` (clamped at 0, saying so), or say which probe it lacks and why.
    fn estimate(&self, d: &Derived) -> Result<Estimate, MissingProbe<'_>> {
        if let Some(&(_, probe)) = d.terms.iter().find(|(_, p)| !self.r.contains_key(p)) {
            let why = self.failed.get(&probe).map_or("not run", String::as_str);
            return Err(MissingProbe { probe, why });
        }
        let r = self.r;
        let raw = d.terms.iter().map(|(c, p)| c * r[p].mean).sum::<f64>() + d.constant;
        let ci = d
            .terms
            .iter()
            .map(|(c, p)| (c * r[p].ci95).powi(2))
            .sum::<f64>()
            .sqrt();
        let mut method = match d.terms.as_slice() {
            [(c, p)] if *c == 1.0 => p.describe().to_string(),
            terms => terms
                .iter()
                .map(|(c, p)| {
                    let sign = if *c < 0.0 { "− " } else { "+ " };
                    format!("{sign}{} × [{}]", trim(c.abs()), p.describe())
                })
                .collect::<Vec<_>>()
                .join(" ")
                .trim_start_matches("+ ")
                .to_string(),
        };
        if !d.constant_why.is_empty() {
            method.push_str(&format!(" ({})", d.constant_why));
        }
        if raw < 0.0 {
            method.push_str(&format!("; measured {raw:.0} ns, clamped to 0"));
        }
        if !d.terms.iter().all(|(_, p)| r[p].converged) {
            method.push_str("; did not reach the precision asked for");
        }
        Ok(Estimate {
            value: raw.max(0.0),
            ci,
            samples: d.terms.iter().map(|(_, p)| r[p].samples).min().unwrap_or(0),
            method,
        })
    }

    /// Set `key` to an estimate, in ns.
    fn set(&mut self, key: &str, e: Estimate) {
        let file = &mut self.file;
        file.costs
            .insert(key.into(), format!("{}ns", e.value.round() as u64));
        file.measured.insert(
            key.into(),
            Measurement {
                ci95: format!("{}ns", e.ci.round() as u64),
                samples: e.samples,
                method: e.method,
            },
        );
    }

    /// Keep `key` at the base profile's value, saying why.
    fn keep(&mut self, key: &str, why: impl Into<String>) {
        self.file.not_measured.insert(key.into(), why.into());
    }

    /// Derive `key` and set it; its value, when measured.
    fn derive(&mut self, key: &str, d: Derived) -> Option<f64> {
        match self.estimate(&d) {
            Ok(e) => {
                let v = e.value;
                self.set(key, e);
                Some(v)
            }
            Err(missing) => {
                let why = missing.to_string();
                self.keep(key, why);
                None
            }
        }
    }

    /// Derive `d` (named `what`) and set two keys to their shares of it; their values, when
    /// measured.
    fn split(&mut self, what: &str, d: Derived, keys: [(&str, f64); 2]) -> Option<[f64; 2]> {
        match self.estimate(&d) {
            Ok(e) => Some(keys.map(|(key, share)| {
                self.set(
                    key,
                    Estimate {
                        value: e.value * share,
                        ci: e.ci * share,
                        samples: e.samples,
                        method: format!(
                            "{:.0} % (the base profile's share) of {what}: {}",
                            share * 100.0,
                            e.method
                        ),
                    },
                );
                e.value * share
            })),
            Err(missing) => {
                let why = missing.to_string();
                for (key, _) in keys {
                    self.keep(key, why.clone());
                }
                None
            }
        }
    }
}

fn build_file(
    base: &CostModel,
    opts: CalibrateOptions,
    r: &BTreeMap<Probe, ProbeResult>,
    failed: &BTreeMap<Probe, String>,
) -> ProfileFile {
    use Probe::*;
    let mut b = Builder {
        file: ProfileFile {
            base: opts.base.into(),
            ..ProfileFile::default()
        },
        r,
        failed,
    };
    b.derive("syscall", Derived::of(vec![(1.0, Syscall)]));
    b.derive("msg", Derived::of(vec![(0.5, PipeByte), (-1.0, Syscall)]));
    b.derive(
        "copy_per_kib",
        Derived::of(vec![(1.0 / 128.0, Pipe64k), (-1.0 / 128.0, PipeByte)]),
    );
    let net_msg = b.derive(
        "net_msg",
        Derived::of(vec![(0.5, TcpByte), (-1.0, Syscall)]),
    );
    derive_net_ack(&mut b, net_msg);
    b.derive(
        "sock_msg",
        Derived::of(vec![(0.5, UnixByte), (-1.0, Syscall)]),
    );
    sock_queue(&mut b);
    // schedule()'s runqueue work: a yield that finds nothing else to run is a system call and
    // one pick under the runqueue lock, nothing more (the simulator's accounting of it).
    let rq = b
        .derive(
            "rq_lock",
            Derived::of(vec![(1.0, YieldAlone), (-1.0, Syscall)]),
        )
        .unwrap_or(base.rq_lock as f64);
    // One-way on one CPU = PipeByte + wakeup + 2 rq_lock + switch: the two cannot be told
    // apart from user space (a write that wakes a thread on its own CPU may switch to it before
    // returning), so their sum is split in the base profile's proportion.
    let wake_share = base.wakeup as f64 / (base.wakeup + base.switch).max(1) as f64;
    let wakeup = b
        .split(
            "wakeup + switch",
            Derived::of(vec![(0.5, PingPongSameCpu), (-1.0, PipeByte)])
                .plus(-2.0 * rq, "less two rq_lock holds"),
            [("wakeup", wake_share), ("switch", 1.0 - wake_share)],
        )
        .map_or(base.wakeup as f64, |[w, _]| w);
    derive_net_wait(&mut b);
    // A message on a channel last used on the other CPU: a pipe handed between two CPUs each
    // turn, less the bare handoff and a hot write + read (one bounce per turn).
    let bounce = b
        .derive(
            "bounce",
            Derived::of(vec![
                (1.0, HandoffPipe),
                (-1.0, HandoffFlag),
                (-1.0, PipeByte),
            ]),
        )
        .unwrap_or(0.0);
    // The waker's cost of a cross-CPU wakeup beyond `wakeup` (and the bounce its write pays):
    // the IPI it sends.
    b.derive(
        "ipi_send",
        Derived::of(vec![(1.0, WakingWrite), (-0.5, PipeByte)])
            .plus(-wakeup - bounce, "less `wakeup` and `bounce`"),
    );
    // One-way across CPUs = the waking write + 2 rq_lock + (ipi + idle_exit) + switch + the
    // reader's bounce, and switch + 2 rq_lock = PingPongSameCpu/2 − PipeByte − wakeup, so
    // ipi + idle_exit = PingPongCrossCpu/2 − WakingWrite − PingPongSameCpu/2 + PipeByte +
    // wakeup − bounce, split in the base profile's proportion.
    let ipi_share = base.ipi as f64 / (base.ipi + base.idle_exit).max(1) as f64;
    b.split(
        "waking an idle CPU",
        Derived::of(vec![
            (0.5, PingPongCrossCpu),
            (-1.0, WakingWrite),
            (-0.5, PingPongSameCpu),
            (1.0, PipeByte),
        ])
        .plus(wakeup - bounce, "plus `wakeup`, less `bounce`"),
        [("ipi", ipi_share), ("idle_exit", 1.0 - ipi_share)],
    );
    // The tick's cost, a migration's cache refill and a page write, as measured.
    for (key, probe) in [
        ("tick", TickGap),
        ("migration", MigrationRefill),
        ("page_touch", PageWrite),
    ] {
        b.derive(key, Derived::of(vec![(1.0, probe)]));
    }
    // The device: a line through the 4 KiB and 256 KiB reads.
    match (r.get(&Probe::DirectRead4k), r.get(&Probe::DirectRead256k)) {
        (Some(small), Some(large)) => {
            let per_kib = ((large.mean - small.mean) / 252.0).max(0.0);
            let latency = (small.mean - 4.0 * per_kib).max(0.0);
            let per_kib_ci = (small.ci95.powi(2) + large.ci95.powi(2)).sqrt() / 252.0;
            let latency_ci = (small.ci95.powi(2) + (4.0 * per_kib_ci).powi(2)).sqrt();
            let n = small.samples.min(large.samples);
            b.set(
                "io_per_kib",
                Estimate {
                    value: per_kib,
                    ci: per_kib_ci,
                    samples: n,
                    method: "([O_DIRECT pread of 256 KiB] − [O_DIRECT pread of 4 KiB]) / 252"
                        .into(),
                },
            );
            b.set(
                "io_latency",
                Estimate {
                    value: latency,
                    ci: latency_ci,
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
                b.keep(
                    key,
                    format!("O_DIRECT reads in the temporary directory: {why}"),
                );
            }
        }
    }
    // Facts.
    match tick_hz() {
        Some(hz) => {
            b.file.costs.insert("hz".into(), hz.to_string());
            b.file.measured.insert(
                "hz".into(),
                Measurement {
                    ci95: "0".into(),
                    samples: 1,
                    method: "1 s / the resolution of CLOCK_MONOTONIC_COARSE (one jiffy)".into(),
                },
            );
        }
        None => {
            b.keep("hz", "CLOCK_MONOTONIC_COARSE has no resolution to read");
        }
    }
    match schedlab_real::calibrate::unix_socket_slots() {
        Ok(n) => {
            b.file.costs.insert("sock_slots".into(), n.to_string());
            b.file.measured.insert(
                "sock_slots".into(),
                Measurement {
                    ci95: "0".into(),
                    samples: 1,
                    method: "non-blocking 1-byte writes to a UNIX socketpair until EAGAIN (a count, not a time)".into(),
                },
            );
        }
        Err(e) => {
            b.keep("sock_slots", format!("counting a socketpair's writes: {e}"));
        }
    }
    match schedlab_real::procfs::mem_total_bytes() {
        Some(bytes) => {
            let mib = (bytes >> 20).max(64);
            b.file.costs.insert("memory".into(), format!("{mib}MiB"));
        }
        None => {
            b.keep("memory", "no MemTotal in /proc/meminfo");
        }
    }
    for (key, why) in [
        (
            "scan",
            "Linux 2.4's goodness loop; no current kernel has it",
        ),
        ("net_lock", "loopback is lockless on current kernels"),
        (
            "line",
            "a lock's cache line between CPUs, charged only where a profile of a measured machine gives it",
        ),
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
        b.keep(key, why);
    }
    b.file
}

/// `net_wait`: one-way in a same-CPU TCP ping-pong = TcpByte + wakeup + 2 rq_lock + switch +
/// net_wait, and in the pipe ping-pong PipeByte + wakeup + 2 rq_lock + switch, so net_wait is
/// the difference of the two less the difference of the one-thread write + reads.
fn derive_net_wait(b: &mut Builder<'_>) {
    use Probe::*;
    b.derive(
        "net_wait",
        Derived::of(vec![
            (0.5, TcpPingPongSameCpu),
            (-1.0, TcpByte),
            (-0.5, PingPongSameCpu),
            (1.0, PipeByte),
        ]),
    );
}

/// `net_ack`: the simulator charges a one-at-a-time TCP read `syscall + net_msg` (half the
/// write + read, its ACK included) and a read that leaves data queued `syscall + net_msg −
/// net_ack` (`machine/tcp_drain.rs`), so net_ack is half the write + read less the read that
/// leaves data queued — at most `net_msg` (capped, saying so, if noise put it above).
fn derive_net_ack(b: &mut Builder<'_>, net_msg: Option<f64>) {
    use Probe::*;
    let d = Derived::of(vec![(0.5, TcpByte), (-1.0, TcpDrain)]);
    match (b.estimate(&d), net_msg) {
        (Ok(mut e), Some(msg)) => {
            if e.value > msg {
                e.method
                    .push_str(&format!("; measured {:.0} ns, capped at net_msg", e.value));
                e.value = msg;
            }
            b.set("net_ack", e);
        }
        (Ok(_), None) => b.keep(
            "net_ack",
            "net_msg, of which it is a part, was not measured",
        ),
        (Err(missing), _) => {
            let why = missing.to_string();
            b.keep("net_ack", why)
        }
    }
}

/// `sock_queue`: what a message with thousands queued costs beyond one with none, per doubling
/// of the bytes of skb queued as the simulator charges it (`schedlab_sim::cost::
/// sock_queue_doublings` of the truesize queued before each write and each read of the deep
/// probe, averaged per message). The probe writes 1 byte at a time, 768 bytes of skb each
/// (`schedlab_sim::skb`); the rule follows bytes because writes that copy the same but make
/// larger skbs cost more with many queued (`bench/sock-bytes.sh`).
fn sock_queue(b: &mut Builder) {
    use schedlab_real::calibrate::{DEEP_DEPTH, DEEP_SOCKETS};
    let total = (DEEP_SOCKETS * DEEP_DEPTH) as u64;
    let per_message = deep_probe_doublings(total);
    b.derive(
        "sock_queue",
        Derived::of(vec![
            (1.0 / per_message, Probe::UnixDeep),
            (-1.0 / per_message, Probe::UnixByte),
        ]),
    );
}

/// The doublings the simulator charges one message (its write and its read) of a probe that
/// queues `total` one-byte messages and then reads them all: the writes find 0 … total − 1
/// queued, the reads total … 1, each of [`schedlab_sim::skb::unix_write_truesize`]`(1)` bytes.
fn deep_probe_doublings(total: u64) -> f64 {
    use schedlab_sim::cost::sock_queue_doublings;
    let each = schedlab_sim::skb::unix_write_truesize(1);
    let writes: f64 = (0..total).map(|n| sock_queue_doublings(n * each)).sum();
    let reads: f64 = (1..=total).map(|n| sock_queue_doublings(n * each)).sum();
    (writes + reads) / total as f64
}

fn trim(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
