//! `pingpong` — two tasks bounce a token, like `perf bench sched pipe`
//! (torvalds/linux `tools/perf/bench/sched-pipe.c`), over any transport.
//!
//! `ping` sends a 4-byte token on channel 0 and waits for it on channel 1; `pong` echoes it.
//! µs per round trip = wall time / loops, as perf defines usecs/op; each round trip is also
//! timed by `ping` for percentiles.

use super::def::{Example, WorkloadDef};
use super::params::{param_defs, parse_count, parse_with, Param, ParamDef, Preset};
use super::{metric, Outcome, Workload};
use crate::context::{ChannelId, Context, WorkloadError};
use crate::error::ParamError;
use crate::plan::{GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// Two tasks bouncing a token.
#[derive(Clone, Debug, PartialEq)]
pub struct PingPong {
    /// Round trips.
    pub loops: usize,
    /// How the token travels.
    pub transport: Transport,
    /// Threads or processes.
    pub mode: TaskMode,
}

impl Default for PingPong {
    fn default() -> Self {
        PingPong {
            loops: 100_000,
            transport: Transport::Pipe,
            mode: TaskMode::Threads,
        }
    }
}

/// Percentiles reported for the round-trip latency: (metric name, quantile).
const PERCENTILES: [(&str, f64); 4] = [
    ("rtt_p50", 50.0),
    ("rtt_p90", 90.0),
    ("rtt_p99", 99.0),
    ("rtt_p99.9", 99.9),
];

impl PingPong {
    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.loops == 0 {
            return Err(ParamError::params(NAME, &["loops"], "must be at least 1"));
        }
        if self.loops > MAX_ROUND_TRIPS {
            return Err(ParamError::value(
                NAME,
                "loops",
                self.loops,
                format!("is not accepted; use 1..{MAX_ROUND_TRIPS}"),
            ));
        }
        Ok(())
    }
}

const NAME: &str = "pingpong";

/// The most round trips of one repetition: at 5 µs each, about 1.4 hours.
const MAX_ROUND_TRIPS: usize = 1_000_000_000;

/// The parameters of [`PingPong`], each declared once.
const TABLE: &[Param<PingPong>] = &[
    Param::new(
        ParamDef::value("loops", "100000", "100000", "Round trips."),
        |w, v| parse_count(NAME, "loops", v, 1..=MAX_ROUND_TRIPS).map(|n| w.loops = n),
        |w| w.loops.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "transport",
            "pipe",
            "pipe|socketpair|unix|tcp|udp",
            "How the token travels: pipe, socketpair, unix, tcp or udp (loopback).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|t| w.transport = t),
        |w| w.transport.to_string(),
    ),
    Param::new(
        ParamDef::tasks(
            "threads",
            "threads|processes",
            "Host tasks as threads or processes.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|m| w.mode = m),
        |w| w.mode.to_string(),
    ),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<PingPong, { TABLE.len() }>(TABLE);

impl Preset for PingPong {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "perf bench sched pipe: two tasks bounce a token (groups: ping, pong).",
        "perf bench sched pipe: two tasks bounce a 4-byte token",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "perf bench sched pipe on this kernel: 100,000 round trips through a pipe",
            "run pingpong --loops 100000 --transport pipe",
        ),
        Example::new(
            "Round-trip time over each transport",
            "sweep pingpong --loops 20000 --vary transport=pipe,socketpair,unix",
        ),
    ]);
    const TABLE: &'static [Param<Self>] = TABLE;

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }
}

impl Workload for PingPong {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn plan(&self) -> Plan {
        Plan {
            groups: vec![
                GroupPlan {
                    name: "ping",
                    tasks: 1,
                    spawn: 0,
                },
                GroupPlan {
                    name: "pong",
                    tasks: 1,
                    spawn: 0,
                },
            ],
            channels: 2,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: self.mode,
            transport: self.transport,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let mut token = [0u8; 4];
        if task.group == 0 {
            // One clock read per round trip: the end of one is the start of the next (what
            // lies between, the check and the record, takes nanoseconds and no simulated
            // time). A second read cost the pinned one-CPU ping-pong about 1 % (a vDSO read
            // is 20-30 ns on a VM, against 3 µs a round trip), which its C peer does not pay.
            let mut t0 = ctx.now();
            for i in 0..self.loops {
                token.copy_from_slice(&(i as u32).to_le_bytes());
                ctx.send(ChannelId(0), &token).await?;
                ctx.recv(ChannelId(1), &mut token).await?;
                if u32::from_le_bytes(token) != i as u32 {
                    return Err(WorkloadError::Integrity(format!(
                        "round trip {i} came back as {}",
                        u32::from_le_bytes(token)
                    )));
                }
                let t1 = ctx.now();
                // Through u64: a u128 to f64 conversion is a library call (the same value for
                // any round trip shorter than 584 years).
                ctx.record("rtt_ns", (t1 - t0).as_nanos() as u64 as f64);
                t0 = t1;
            }
            ctx.record("round_trips", self.loops as f64);
        } else {
            for _ in 0..self.loops {
                ctx.recv(ChannelId(0), &mut token).await?;
                ctx.send(ChannelId(1), &token).await?;
            }
        }
        Ok(())
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        let mut defs = vec![
            metric(
                "us_per_rt",
                "us",
                Better::Lower,
                "wall time / round trips (perf bench sched pipe's usecs/op)",
            ),
            metric(
                "ops_per_s",
                "ops/s",
                Better::Higher,
                "round trips per second",
            ),
        ];
        for (name, _) in PERCENTILES {
            defs.push(metric(
                name,
                "us",
                Better::Lower,
                "round-trip latency percentile, timed by ping",
            ));
        }
        defs.push(metric("rtt_max", "us", Better::Lower, "longest round trip"));
        defs.push(metric(
            "round_trips",
            "trips",
            Better::Higher,
            "round trips completed and checked",
        ));
        defs
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let trips = outcome.sum(&plan, Some(0), "round_trips") as usize;
        let samples = outcome.tasks.first().and_then(|t| t.samples.get("rtt_ns"));
        if trips != self.loops || samples.map_or(0, Vec::len) != self.loops {
            return Err(WorkloadError::Integrity(format!(
                "{trips} round trips completed, expected {}",
                self.loops
            )));
        }
        let mut hist = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        for &ns in samples.into_iter().flatten() {
            hist.record(ns.max(1.0) as u64)
                .expect("auto-resizing histogram");
        }
        let secs = outcome.wall.as_secs_f64();
        let mut m = BTreeMap::from([
            ("us_per_rt".to_string(), secs * 1e6 / self.loops as f64),
            ("ops_per_s".to_string(), self.loops as f64 / secs),
            ("rtt_max".to_string(), hist.max() as f64 / 1e3),
            ("round_trips".to_string(), trips as f64),
        ]);
        for (name, q) in PERCENTILES {
            m.insert(name.to_string(), hist.value_at_percentile(q) as f64 / 1e3);
        }
        Ok(m)
    }

    fn classic_line(&self, m: &BTreeMap<String, f64>) -> Option<String> {
        Some(format!(
            "Total time: {:.3} [sec]  {:.6} usecs/op  {:.0} ops/sec",
            m.get("us_per_rt")? * self.loops as f64 / 1e6,
            m.get("us_per_rt")?,
            m.get("ops_per_s")?
        ))
    }

    fn expected_time(&self) -> Option<Duration> {
        Some(Duration::from_secs_f64(
            (self.loops as f64 * 200e-6).max(60.0),
        ))
    }
}
