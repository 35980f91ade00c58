//! `schedlab calibrate`: measure this machine's costs with the real backend's probes
//! (`schedlab_real::calibrate`) and turn them into the simulator's cost keys — a profile file
//! (`schedlab_sim::profile_file`) that `--profile FILE` loads.
//!
//! **Rounds and medians.** Every probe runs once a round, interleaved, for a fixed number of
//! rounds (`--quick` 9 rounds of 3 ms batches, else 25 of 10 ms); each probe's sample is itself
//! the median of its batch's chunks or single operations (`schedlab_real::calibrate`), so another
//! task's time slice on a shared machine falls on a few chunks, not on the sample. A key is
//! computed in every round from that round's probes — a difference of probes measured seconds
//! apart under different load could take any sign, one of probes measured side by side in one
//! round cancels what the round's load added to both — and its value is the median over the
//! rounds, with the distribution-free 95 % interval of a median (order statistics).
//!
//! **Pinned or kept.** A key goes into the file only when it is pinned: its interval lies above 0
//! (no cost the simulator charges is free, and a cost the model has must not be written as
//! nothing), its interval is within ±50 % of its value, and its value is below the whole
//! operation it is a part of (e.g. `bounce` below the pipe handoff it is measured from). Otherwise
//! the key keeps the base profile's value and `[not_measured]` says what came out and why.
//!
//! Each key is what the simulator's own accounting (the machine module's timing rules) says the
//! probes contain, so that a simulated probe comes out as measured:
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
//!   TCP write + read, less the same for pipes: what a TCP receive that sleeps and is woken costs
//!   beyond a pipe read's sleep and wakeup (`machine/tcp_wait.rs`), the four timed side by side
//!   in one probe, a sample per iteration;
//! - `net_ack` = half a TCP write + read of 1 byte less a TCP read of 1 byte that leaves data
//!   queued (16 written, the first 15 read): the ACK a read sends when it empties the queue
//!   (`machine/tcp_drain.rs`), below `net_msg`;
//! - `bounce` = two threads on two CPUs take turns through one cache line, both busy-polling it
//!   (no sleep, no wakeup), each turn a write + read of 1 byte on a pipe: chunks of turns on one
//!   pipe both use less chunks on a pipe of each thread's own, each chunk timed as one, per
//!   message: what a message pays when its channel was last used on the other CPU. (As the
//!   first write + read of a turn less the second, each timed alone, two clock reads a few
//!   hundred ns apart, it was pinned in one of six calibrations on an idle 2-vCPU VM; as a
//!   difference of separate probes, in none of three.) The one-way transfer of a single line
//!   between the two CPUs is timed beside it (`LineTransfer`), for reading `bounce` in lines;
//!   no key takes it.
//! - `ipi_send` = the write that wakes a reader blocked on another CPU (timed in the cross-CPU
//!   ping-pong), less half a pipe write + read, `wakeup`, one `rq_lock` hold and `bounce`: what
//!   the waker pays to send the IPI (on a virtual machine, a VM exit);
//! - `ipi` + `idle_exit` = one cross-CPU wakeup timed directly — from just before the waker's
//!   write to the return of the woken reader's read on the other CPU — less what the simulator
//!   charges on that path besides them (half a pipe write + read, `bounce`, `ipi_send`, one
//!   `rq_lock` hold and a `switch`), split in the base profile's proportion;
//! - `tick` = the median gap a pinned thread spinning on the clock sees across a jiffy (the
//!   coarse clock moved while it did not run: the timer interrupt as the interrupted task pays
//!   it, and not the host's other interruptions of a vCPU); `migration` = a 256 KiB walk right after
//!   moving to the other CPU less the next walk there (the refill of a small working set);
//! - `mm_switch` = a hop of a 1-byte token around a ring of 8 processes pinned to one CPU (each
//!   blocked in a pipe read until its turn) less a hop around a ring of 8 threads, the two laps
//!   timed one after the other: every hop of the first switches address space, none of the
//!   second's, and 8 is more than the 6 address-space tags Linux keeps per CPU, as a run of
//!   many processes has;
//! - `page_touch` = a memset of a resident 4 KiB page;
//! - `io_per_kib` and `io_latency` from O_DIRECT reads of 4 KiB and 256 KiB (a line through the
//!   two);
//! - `hz` from the kernel's configuration, `memory` from /proc/meminfo's MemTotal,
//!   `sock_slots` from the number of non-blocking 1-byte writes a socketpair takes before
//!   EAGAIN (facts, not measurements).
//!
//! A key derived from others (`ipi_send` from `wakeup`, `rq_lock` and `bounce`) subtracts the
//! values the file gives them — measured, or the base profile's when they were kept — so that
//! the simulated operation adds up to what was timed.

use crate::error::ExperimentError;
use schedlab_real::calibrate::{sample, tick_hz, Probe, ProbeSite};
use schedlab_sim::cost::CostModel;
use schedlab_sim::profile_file::{Measurement, ProfileFile};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How hard to try.
#[derive(Clone, Copy, Debug)]
pub struct CalibrateOptions {
    /// Few rounds of short batches (seconds, for tests), instead of 25 rounds of 10 ms batches.
    pub quick: bool,
    /// The built-in profile whose values the unmeasured keys keep.
    pub base: &'static str,
}

/// One probe's result over the rounds: the median of its samples and their 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeResult {
    /// Median over the rounds, ns per operation.
    pub median: f64,
    /// Low end of the 95 % interval of the median, ns.
    pub low: f64,
    /// High end, ns.
    pub high: f64,
    /// Samples (one a round).
    pub samples: usize,
}

/// A key is pinned when its 95 % interval is within this share of its value either side.
pub const PIN_WITHIN: f64 = 0.5;

/// Rounds and batch length: `--quick`, and the full calibration.
fn rounds_and_batch(quick: bool) -> (usize, Duration) {
    if quick {
        (9, Duration::from_millis(3))
    } else {
        (25, Duration::from_millis(10))
    }
}

/// Run every probe (those that cannot run here are reported, not fatal; a round a probe fails
/// in is left out of its samples) once a round for a fixed number of rounds, and build the
/// profile file. `progress` is told each probe's name in
/// the first round, then each round's number; `stop` ends the run early (`Interrupted`),
/// keeping nothing.
pub fn calibrate(
    opts: CalibrateOptions,
    dir: &Path,
    stop: &AtomicBool,
    mut progress: impl FnMut(&str),
) -> Result<(ProfileFile, BTreeMap<Probe, ProbeResult>), ExperimentError> {
    let base = CostModel::profile(opts.base).map_err(ExperimentError::Cost)?;
    let site = ProbeSite::of_this_process()
        .map_err(|e| ExperimentError::Machine(format!("calibrate: {e}")))?;
    let (rounds, batch) = rounds_and_batch(opts.quick);
    let mut samples: Vec<BTreeMap<Probe, f64>> = Vec::with_capacity(rounds);
    // A probe that fails in a round (the tick's gaps drowned by another task's) is tried again
    // in the next; one that has failed three times without a result (no second CPU, no
    // O_DIRECT) is given up, with its last error.
    let mut failures: BTreeMap<Probe, (usize, String)> = BTreeMap::new();
    let mut failed: BTreeMap<Probe, String> = BTreeMap::new();
    for round in 1..=rounds {
        if round == 1 {
            for probe in Probe::ALL {
                progress(probe.describe());
            }
        } else {
            progress(&format!("round {round} of {rounds}"));
        }
        let mut this = BTreeMap::new();
        for probe in Probe::ALL {
            if failed.contains_key(&probe) {
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                return Err(ExperimentError::Interrupted);
            }
            match sample(probe, &site, dir, batch) {
                Ok(ns) => {
                    this.insert(probe, ns);
                }
                Err(e) => {
                    let f = failures.entry(probe).or_insert((0, String::new()));
                    *f = (f.0 + 1, e.to_string());
                    let measured = samples.iter().any(|r| r.contains_key(&probe));
                    if f.0 >= 3 && !measured {
                        failed.insert(probe, f.1.clone());
                    }
                }
            }
        }
        samples.push(this);
    }
    // Why a probe has no result at all: its last error.
    for (probe, (_, why)) in failures {
        if samples.iter().all(|r| !r.contains_key(&probe)) {
            failed.entry(probe).or_insert(why);
        }
    }
    let mut results = BTreeMap::new();
    for probe in Probe::ALL {
        let v: Vec<f64> = samples
            .iter()
            .filter_map(|r| r.get(&probe).copied())
            .collect();
        if let Some(m) = MedianInterval::of(&v) {
            results.insert(
                probe,
                ProbeResult {
                    median: m.median,
                    low: m.low,
                    high: m.high,
                    samples: v.len(),
                },
            );
        }
    }
    Ok((build_file(&base, opts, &samples, &failed), results))
}

/// A median and its distribution-free 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MedianInterval {
    /// The median.
    pub median: f64,
    /// The interval's low end: the k-th smallest value.
    pub low: f64,
    /// Its high end: the k-th largest.
    pub high: f64,
}

impl MedianInterval {
    /// Of `values` (at least one; non-finite values are left out): the interval between the
    /// (k+1)-th smallest and the (k+1)-th largest, k the largest for which a binomial(n, ½)
    /// variable is at most k with probability at most 2.5 % (at n ≤ 5 none is: the whole range).
    /// 9 values give the 2nd to the 8th, 25 the 8th to the 18th.
    pub fn of(values: &[f64]) -> Option<MedianInterval> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable_by(f64::total_cmp);
        let n = v.len();
        let median = schedlab_stats::summary::median_of_sorted(&v);
        // The interval [v[k], v[n-1-k]] misses the median with probability 2 P(X ≤ k), X ~
        // binomial(n, ½): the largest k for which that is at most 5 %.
        let mut k = 0;
        let mut term = 0.5f64.powi(n as i32); // P(X = j)
        let mut below = term; // P(X ≤ j)
        for j in 0..n / 2 {
            if 2.0 * below > 0.05 {
                break;
            }
            k = j;
            term *= (n - j) as f64 / (j + 1) as f64;
            below += term;
        }
        Some(MedianInterval {
            median,
            low: v[k],
            high: v[n - 1 - k],
        })
    }

    /// The larger distance from the median to an end.
    pub fn half_width(&self) -> f64 {
        (self.median - self.low).max(self.high - self.median)
    }
}

/// A key as a sum of probes: Σ coefficient × probe + a constant (other keys' values), per round.
#[derive(Clone)]
struct Derived {
    terms: Vec<(f64, Probe)>,
    constant: f64,
    constant_why: String,
}

impl Derived {
    /// Σ coefficient × probe.
    fn of(terms: Vec<(f64, Probe)>) -> Derived {
        Derived {
            terms,
            constant: 0.0,
            constant_why: String::new(),
        }
    }

    /// The same plus `constant` (`why` says what it is).
    fn plus(self, constant: f64, why: impl Into<String>) -> Derived {
        Derived {
            constant,
            constant_why: why.into(),
            ..self
        }
    }

    /// Its value in one round, if the round has every probe it needs.
    fn in_round(&self, round: &BTreeMap<Probe, f64>) -> Option<f64> {
        let mut sum = self.constant;
        for (c, p) in &self.terms {
            sum += c * round.get(p)?;
        }
        Some(sum)
    }

    /// How it is computed, for the file's `method`.
    fn describe(&self) -> String {
        let mut method = match self.terms.as_slice() {
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
        if !self.constant_why.is_empty() {
            method.push_str(&format!(" ({})", self.constant_why));
        }
        method
    }
}

/// A key's value as it goes into the file.
struct Estimate {
    value: f64,
    ci: f64,
    samples: usize,
    method: String,
}

/// The profile file being built from the rounds.
struct Builder<'a> {
    file: ProfileFile,
    base: &'a CostModel,
    rounds: &'a [BTreeMap<Probe, f64>],
    failed: &'a BTreeMap<Probe, String>,
}

/// What became of a key: its value in the file (measured, or the base profile's).
#[derive(Clone, Copy, Debug)]
enum Outcome {
    Pinned(f64),
    Kept,
}

impl Builder<'_> {
    /// The per-round values of `d`, or why it has none (a probe it needs did not run).
    fn per_round(&self, d: &Derived) -> Result<Vec<f64>, String> {
        if let Some(&(_, probe)) = d
            .terms
            .iter()
            .find(|(_, p)| self.rounds.iter().all(|r| !r.contains_key(p)))
        {
            let why = self.failed.get(&probe).map_or("not run", String::as_str);
            return Err(format!(
                "the probe '{}' has no result: {why}",
                probe.describe()
            ));
        }
        Ok(self.rounds.iter().filter_map(|r| d.in_round(r)).collect())
    }

    /// Pin `d` if its rounds allow: above 0, within ±[`PIN_WITHIN`], below `whole` (the
    /// operation it is part of, per round); else why not.
    fn pin(&self, d: &Derived, whole: Option<(&str, &Derived)>) -> Result<Estimate, String> {
        let v = self.per_round(d)?;
        let m = MedianInterval::of(&v).ok_or("no round measured it")?;
        let came = format!(
            "{} came out {:.0} ns, 95 % interval {:.0} to {:.0} ns over {} rounds",
            d.describe(),
            m.median,
            m.low,
            m.high,
            v.len()
        );
        if m.high < 0.0 {
            return Err(format!(
                "{came}: below 0 here (the operation took less than the model's other keys charge it; a cost cannot be negative)"
            ));
        }
        if m.low <= 0.0 {
            return Err(format!(
                "{came}: not distinguishable from 0 here (a cost the model charges is not free)"
            ));
        }
        if m.half_width() > PIN_WITHIN * m.median {
            return Err(format!(
                "{came}: wider than ±{:.0} % (the probes moved too much from round to round)",
                PIN_WITHIN * 100.0
            ));
        }
        if let Some((what, w)) = whole {
            let w = MedianInterval::of(&self.per_round(w)?).ok_or("no round measured it")?;
            if m.median >= w.median {
                return Err(format!(
                    "{came}: not below {what} ({:.0} ns), of which it is a part",
                    w.median
                ));
            }
        }
        Ok(Estimate {
            value: m.median,
            ci: m.half_width(),
            samples: v.len(),
            method: format!(
                "{}; the median of {} rounds, 95 % interval {:.0} to {:.0} ns",
                d.describe(),
                v.len(),
                m.low,
                m.high
            ),
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

    /// Derive `key` and set it if pinned, else keep the base's value; its value in the file.
    fn derive(&mut self, key: &str, d: Derived, whole: Option<(&str, &Derived)>) -> f64 {
        match self.pin(&d, whole) {
            Ok(e) => {
                let v = e.value;
                self.set(key, e);
                v
            }
            Err(why) => {
                self.keep(
                    key,
                    format!("could not be pinned, the base profile's value kept: {why}"),
                );
                self.base_ns(key)
            }
        }
    }

    /// Derive the sum `d` (named `what`) and set two keys to their shares of it, or keep both;
    /// what became of it.
    fn split(
        &mut self,
        what: &str,
        d: Derived,
        whole: Option<(&str, &Derived)>,
        keys: [(&str, f64); 2],
    ) -> Outcome {
        match self.pin(&d, whole) {
            Ok(e) => {
                for (key, share) in keys {
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
                }
                Outcome::Pinned(e.value)
            }
            Err(why) => {
                for (key, _) in keys {
                    self.keep(
                        key,
                        format!("{what} could not be pinned, the base profile's value kept: {why}"),
                    );
                }
                Outcome::Kept
            }
        }
    }

    /// The base profile's value of a time key, ns.
    fn base_ns(&self, key: &str) -> f64 {
        let b = self.base;
        (match key {
            "syscall" => b.syscall,
            "msg" => b.msg,
            "wakeup" => b.wakeup,
            "switch" => b.switch,
            "rq_lock" => b.rq_lock,
            "bounce" => b.bounce,
            "ipi_send" => b.ipi_send,
            "ipi" => b.ipi,
            "idle_exit" => b.idle_exit,
            "net_msg" => b.net_msg,
            _ => 0,
        }) as f64
    }
}

fn build_file(
    base: &CostModel,
    opts: CalibrateOptions,
    rounds: &[BTreeMap<Probe, f64>],
    failed: &BTreeMap<Probe, String>,
) -> ProfileFile {
    use Probe::*;
    let mut b = Builder {
        file: ProfileFile {
            base: opts.base.into(),
            ..ProfileFile::default()
        },
        base,
        rounds,
        failed,
    };
    let one = |p: Probe| Derived::of(vec![(1.0, p)]);
    let half = |p: Probe| Derived::of(vec![(0.5, p)]);
    b.derive(
        "syscall",
        one(Syscall),
        Some(("half a pipe write + read", &half(PipeByte))),
    );
    b.derive(
        "msg",
        Derived::of(vec![(0.5, PipeByte), (-1.0, Syscall)]),
        Some(("half a pipe write + read", &half(PipeByte))),
    );
    b.derive(
        "copy_per_kib",
        Derived::of(vec![(1.0 / 128.0, Pipe64k), (-1.0 / 128.0, PipeByte)]),
        Some((
            "a 64 KiB write + read per KiB copied",
            &Derived::of(vec![(1.0 / 128.0, Pipe64k)]),
        )),
    );
    let net_msg = b.derive(
        "net_msg",
        Derived::of(vec![(0.5, TcpByte), (-1.0, Syscall)]),
        Some(("half a TCP write + read", &half(TcpByte))),
    );
    b.derive(
        "net_ack",
        Derived::of(vec![(0.5, TcpByte), (-1.0, TcpDrain)]),
        Some((
            "net_msg",
            &Derived::of(vec![(0.5, TcpByte), (-1.0, Syscall)]),
        )),
    );
    let _ = net_msg;
    b.derive(
        "sock_msg",
        Derived::of(vec![(0.5, UnixByte), (-1.0, Syscall)]),
        Some(("half a socketpair write + read", &half(UnixByte))),
    );
    sock_queue(&mut b);
    // schedule()'s runqueue work: a yield that finds nothing else to run is a system call and
    // one pick under the runqueue lock, nothing more (the simulator's accounting of it).
    let rq = b.derive(
        "rq_lock",
        Derived::of(vec![(1.0, YieldAlone), (-1.0, Syscall)]),
        Some(("a lone sched_yield", &one(YieldAlone))),
    );
    // One-way on one CPU = PipeByte + wakeup + 2 rq_lock + switch: the two cannot be told
    // apart from user space (a write that wakes a thread on its own CPU may switch to it before
    // returning), so their sum is split in the base profile's proportion.
    let wake_share = base.wakeup as f64 / (base.wakeup + base.switch).max(1) as f64;
    let (wakeup, switch) = match b.split(
        "wakeup + switch",
        Derived::of(vec![(0.5, PingPongSameCpu), (-1.0, PipeByte)])
            .plus(-2.0 * rq, "less two rq_lock holds"),
        Some(("half a same-CPU round trip", &half(PingPongSameCpu))),
        [("wakeup", wake_share), ("switch", 1.0 - wake_share)],
    ) {
        Outcome::Pinned(sum) => (sum * wake_share, sum * (1.0 - wake_share)),
        Outcome::Kept => (base.wakeup as f64, base.switch as f64),
    };
    b.derive(
        "net_wait",
        one(TcpSleepLessPipe),
        Some(("half a same-CPU TCP round trip", &half(TcpPingPongSameCpu))),
    );
    // A message on a channel last used on the other CPU: turns handed between two CPUs through
    // a cache line, each a write + read on one pipe both use, less the same turns on a pipe of
    // each CPU's own, in chunks timed as one (one bounce a message).
    let bounce = b.derive(
        "bounce",
        one(PipeSharedLessOwn),
        Some(("a pipe handoff between the CPUs", &one(HandoffPipe))),
    );
    // The waker's cost of a cross-CPU wakeup beyond what the simulator charges its write
    // (syscall + msg + bounce) and the wakeup (wakeup + an rq_lock hold): the IPI it sends.
    let ipi_send = b.derive(
        "ipi_send",
        Derived::of(vec![(1.0, WakingWrite), (-0.5, PipeByte)]).plus(
            -wakeup - rq - bounce,
            "less `wakeup`, one `rq_lock` hold and `bounce`",
        ),
        Some(("the waking write", &one(WakingWrite))),
    );
    // One cross-CPU wakeup, timed directly from the waker's write to the woken read's return:
    // the simulator charges on that path the write (syscall + msg + bounce), the IPI's send,
    // flight and idle exit, and the woken CPU's pick (rq_lock) and switch.
    let ipi_share = base.ipi as f64 / (base.ipi + base.idle_exit).max(1) as f64;
    b.split(
        "waking an idle CPU",
        Derived::of(vec![(1.0, CrossWake), (-0.5, PipeByte)]).plus(
            -bounce - ipi_send - rq - switch,
            "less `bounce`, `ipi_send`, one `rq_lock` hold and `switch`",
        ),
        Some(("the cross-CPU wakeup", &one(CrossWake))),
        [("ipi", ipi_share), ("idle_exit", 1.0 - ipi_share)],
    );
    // The tick's cost, a migration's cache refill and a page write, as measured.
    let period = 1e9 / f64::from(tick_hz().unwrap_or(base.hz));
    let tick_bound = Derived::of(Vec::new()).plus(period / 8.0, "an eighth of the tick period");
    b.derive(
        "tick",
        one(TickGap),
        Some(("an eighth of the tick period", &tick_bound)),
    );
    let refill_bound = Derived::of(Vec::new()).plus(period / 4.0, "a quarter of the tick period");
    b.derive(
        "migration",
        one(MigrationRefill),
        Some(("a quarter of the tick period", &refill_bound)),
    );
    // A switch to a task of another process beyond one to a thread of the same: a hop of a
    // ring of processes on one CPU less a hop of a ring of threads, side by side. Every hop of
    // the process ring loads another address space, none of the thread ring's does, which is
    // exactly where the simulator charges it.
    b.derive(
        "mm_switch",
        one(ProcessRingLessThreads),
        Some(("a quarter of the tick period", &refill_bound)),
    );
    b.derive("page_touch", one(PageWrite), None);
    // The device: a line through the 4 KiB and 256 KiB reads.
    let per_kib = b.derive(
        "io_per_kib",
        Derived::of(vec![
            (1.0 / 252.0, DirectRead256k),
            (-1.0 / 252.0, DirectRead4k),
        ]),
        Some((
            "a 256 KiB read per KiB",
            &Derived::of(vec![(1.0 / 256.0, DirectRead256k)]),
        )),
    );
    let _ = per_kib;
    b.derive(
        "io_latency",
        Derived::of(vec![
            (1.0 + 4.0 / 252.0, DirectRead4k),
            (-4.0 / 252.0, DirectRead256k),
        ]),
        Some(("a 4 KiB read", &one(DirectRead4k))),
    );
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
        Some((
            "a deep socketpair message per doubling",
            &Derived::of(vec![(1.0 / per_message, Probe::UnixDeep)]),
        )),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_follows_the_binomial_order_statistics() {
        let nine: Vec<f64> = (1..=9).map(f64::from).collect();
        let m = MedianInterval::of(&nine).unwrap();
        assert_eq!((m.median, m.low, m.high), (5.0, 2.0, 8.0));
        let many: Vec<f64> = (1..=25).rev().map(f64::from).collect();
        let m = MedianInterval::of(&many).unwrap();
        assert_eq!((m.median, m.low, m.high), (13.0, 8.0, 18.0));
        let few = MedianInterval::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((few.median, few.low, few.high), (2.0, 1.0, 3.0));
        assert!(MedianInterval::of(&[f64::NAN]).is_none());
    }

    /// Rounds of a probe pair whose difference is `diff` plus noise of ±`noise`.
    fn rounds(diff: &[f64], noise: f64) -> Vec<BTreeMap<Probe, f64>> {
        diff.iter()
            .enumerate()
            .map(|(i, d)| {
                let wobble = if i % 2 == 0 { noise } else { -noise };
                BTreeMap::from([
                    (Probe::PipeByte, 2000.0 + wobble),
                    (Probe::Syscall, 1000.0 + wobble - d),
                ])
            })
            .collect()
    }

    fn builder<'a>(
        base: &'a CostModel,
        rounds: &'a [BTreeMap<Probe, f64>],
        failed: &'a BTreeMap<Probe, String>,
    ) -> Builder<'a> {
        Builder {
            file: ProfileFile::default(),
            base,
            rounds,
            failed,
        }
    }

    /// A difference of probes measured side by side in a round: what the round's load added to
    /// both cancels, and the key is pinned at the median of the rounds' differences.
    #[test]
    fn a_difference_taken_round_by_round_cancels_the_rounds_load() {
        let base = CostModel::profile("modern").unwrap();
        let failed = BTreeMap::new();
        let r = rounds(&[200.0; 9], 900.0);
        let mut b = builder(&base, &r, &failed);
        let msg = Derived::of(vec![(1.0, Probe::PipeByte), (-1.0, Probe::Syscall)]);
        assert_eq!(b.derive("msg", msg, None), 1200.0);
        assert_eq!(b.file.costs["msg"], "1200ns");
        assert!(b.file.measured["msg"].method.contains("median of 9 rounds"));
    }

    /// A key whose rounds straddle 0, or spread beyond ±50 %, or exceed the whole operation, is
    /// not written: the base profile's value is kept and the file says what came out.
    #[test]
    fn an_unpinned_key_keeps_the_base_value_and_says_why() {
        let base = CostModel::profile("modern").unwrap();
        let failed = BTreeMap::new();
        let key = || {
            Derived::of(vec![(1.0, Probe::PipeByte), (-1.0, Probe::Syscall)])
                .plus(-2000.0, "less 2 µs")
        };
        // What the file says of a key whose rounds differ by `diffs` (with `whole` the
        // operation it must stay below, if any), having kept the base value.
        let why_not = |diffs: &[f64], whole: Option<&Derived>| {
            let r = rounds(diffs, 0.0);
            let mut b = builder(&base, &r, &failed);
            let kept = b.derive("wakeup", key(), whole.map(|w| ("the whole", w)));
            assert_eq!(kept, base.wakeup as f64);
            assert!(!b.file.costs.contains_key("wakeup"));
            b.file.not_measured["wakeup"].clone()
        };
        for (diffs, whole, says) in [
            // Around 0: −300 … +300 ns.
            (
                vec![
                    700.0, 1300.0, 800.0, 1200.0, 900.0, 1100.0, 1000.0, 1000.0, 1000.0,
                ],
                None,
                "not distinguishable from 0",
            ),
            // Below 0 in every round: −400 … −100 ns.
            (
                vec![
                    700.0, 900.0, 800.0, 600.0, 750.0, 850.0, 700.0, 800.0, 900.0,
                ],
                None,
                "below 0 here",
            ),
            // Spread: 500 … 3000 ns around 1000.
            (
                vec![
                    1500.0, 4000.0, 1600.0, 3500.0, 2000.0, 1500.0, 2000.0, 1600.0, 3000.0,
                ],
                None,
                "wider than ±50 %",
            ),
            // Above the whole operation (here: a constant 100 ns).
            (
                vec![1500.0; 9],
                Some(Derived::of(Vec::new()).plus(100.0, "100 ns")),
                "not below the whole (100 ns)",
            ),
        ] {
            let text = why_not(&diffs, whole.as_ref());
            assert!(text.contains(says), "{says}: {text}");
        }
    }
}
