//! `messaging` — hackbench's algorithm (rt-tests `src/hackbench/hackbench.c`, and perf's
//! `tools/perf/bench/sched-messaging.c`).
//!
//! `groups` groups of `fds` senders and `fds` receivers. Every sender writes `loops` messages of
//! `datasize` bytes to every receiver of its group, round-robin over the receivers as hackbench
//! does; every receiver reads `fds × loops` messages. Time runs from the start signal until all
//! tasks are done. Unlike hackbench, each message carries its sender and sequence number and every
//! receiver checks them, so a lost, duplicated or reordered message fails the run.

use super::def::{Example, WorkloadDef};
use super::params::{
    check_product, param_defs, parse_count, parse_param, parse_with, Param, ParamDef, Preset,
    MAX_MESSAGES, MAX_TASKS,
};
use super::{metric, Outcome, Workload};
use crate::context::{ChannelId, Context, WorkloadError};
use crate::error::ParamError;
use crate::plan::{GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use std::collections::BTreeMap;
use std::time::Duration;

/// Bytes of the header (sender id, sequence number) each message carries.
const HEADER: usize = 8;

/// hackbench-style messaging.
#[derive(Clone, Debug, PartialEq)]
pub struct Messaging {
    /// Number of groups.
    pub groups: usize,
    /// Senders (and receivers) per group.
    pub fds: usize,
    /// Messages each sender writes to each receiver of its group.
    pub loops: usize,
    /// Bytes per message (at least 8, for the integrity header).
    pub datasize: usize,
    /// How channels are carried.
    pub transport: Transport,
    /// Threads or processes.
    pub mode: TaskMode,
}

impl Default for Messaging {
    fn default() -> Self {
        Messaging {
            groups: 10,
            fds: 20,
            loops: 100,
            datasize: 100,
            transport: Transport::Socketpair,
            mode: TaskMode::Processes,
        }
    }
}

impl Messaging {
    /// Messages delivered in one repetition: groups × fds² × loops.
    pub fn expected_messages(&self) -> usize {
        self.groups * self.fds * self.fds * self.loops
    }

    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.groups == 0 || self.fds == 0 || self.loops == 0 {
            return Err(ParamError::params(
                NAME,
                &["groups", "fds", "loops"],
                "must be at least 1",
            ));
        }
        for (name, value, max) in [
            ("groups", self.groups, MAX_GROUPS),
            ("fds", self.fds, MAX_FDS),
            ("loops", self.loops, MAX_LOOPS),
        ] {
            if value > max {
                return Err(ParamError::value(
                    NAME,
                    name,
                    value,
                    format!("is not accepted; use 1..{max}"),
                ));
            }
        }
        check_product(
            NAME,
            &["groups", "fds"],
            "tasks",
            "2 × groups × fds",
            &[2, self.groups, self.fds],
            MAX_TASKS as u128,
        )?;
        check_product(
            NAME,
            &["groups", "fds", "loops"],
            "messages",
            "groups × fds² × loops",
            &[self.groups, self.fds, self.fds, self.loops],
            MAX_MESSAGES,
        )?;
        // Up to a page, one write of a message is atomic on pipes (PIPE_BUF) and UNIX stream
        // sockets (one skb), so senders sharing a receiver never interleave their bytes.
        if self.datasize < HEADER || self.datasize > 4096 {
            return Err(ParamError::value(
                NAME,
                "datasize",
                self.datasize,
                format!("is not accepted; use {HEADER}..4096 bytes"),
            ));
        }
        if !matches!(self.transport, Transport::Pipe | Transport::Socketpair) {
            return Err(ParamError::value(
                NAME,
                "transport",
                self.transport,
                "is not accepted; use socketpair or pipe (hackbench's two)",
            ));
        }
        Ok(())
    }
}

const NAME: &str = "messaging";

/// The most groups.
const MAX_GROUPS: usize = MAX_TASKS / 2;
/// The most senders per group.
const MAX_FDS: usize = MAX_TASKS / 2;
/// The most messages from one sender to one receiver.
const MAX_LOOPS: usize = 1_000_000_000;

/// The parameters of [`Messaging`], each declared once.
const TABLE: &[Param<Messaging>] = &[
    // -g, -f, -l, -s: hackbench's own letters for these four (rt-tests hackbench --help).
    Param::new(
        ParamDef::value("groups", "10", "10", "Number of groups.").short('g'),
        |w, v| parse_count(NAME, "groups", v, 1..=MAX_GROUPS).map(|n| w.groups = n),
        |w| w.groups.to_string(),
    ),
    Param::new(
        ParamDef::value("fds", "20", "20", "Senders (and receivers) per group.").short('f'),
        |w, v| parse_count(NAME, "fds", v, 1..=MAX_FDS).map(|n| w.fds = n),
        |w| w.fds.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "loops",
            "100",
            "100",
            "Messages each sender writes to each receiver of its group.",
        )
        .short('l'),
        |w, v| parse_count(NAME, "loops", v, 1..=MAX_LOOPS).map(|n| w.loops = n),
        |w| w.loops.to_string(),
    ),
    Param::new(
        ParamDef::value("datasize", "100", "100", "Bytes per message (8..4096).").short('s'),
        |w, v| parse_param(NAME, "datasize", v, "a whole number").map(|n| w.datasize = n),
        |w| w.datasize.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "transport",
            "socketpair",
            "socketpair|pipe",
            "How messages travel: socketpair or pipe.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|t| w.transport = t),
        |w| w.transport.to_string(),
    ),
    Param::new(
        ParamDef::tasks(
            "processes",
            "processes|threads",
            "Host tasks as threads or processes.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|m| w.mode = m),
        |w| w.mode.to_string(),
    ),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Messaging, { TABLE.len() }>(TABLE);

impl Preset for Messaging {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "hackbench: groups of senders and receivers exchanging messages (groups: sender, receiver).",
        "hackbench: groups of senders and receivers; every sender writes loops messages to each receiver of its group",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "hackbench -g 4 -l 50 on a simulated 4-CPU machine under EEVDF",
            "run messaging -g 4 -l 50 --backend sim --cpus 4 --policy eevdf",
        ),
        Example::new(
            "The same messages through pipes and through socket pairs, side by side",
            "sweep messaging -g 4 -l 50 --vary transport=pipe,socketpair",
        ),
    ]);
    const TABLE: &'static [Param<Self>] = TABLE;

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }
}

impl Workload for Messaging {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn plan(&self) -> Plan {
        let n = self.groups * self.fds;
        Plan {
            groups: vec![
                GroupPlan {
                    name: "sender",
                    tasks: n,
                    spawn: 0,
                },
                GroupPlan {
                    name: "receiver",
                    tasks: n,
                    spawn: 0,
                },
            ],
            channels: n,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: self.mode,
            transport: self.transport,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let hb_group = task.index / self.fds;
        let first = hb_group * self.fds;
        // Buffers live in the body's own frame (the task's stack on the real backend), as
        // hackbench's do: small heap blocks of different tasks can share a cache line, and
        // writing them from different CPUs would bounce that line on every message.
        let mut storage = [0u8; 4096];
        let buf = &mut storage[..self.datasize];
        if task.group == 0 {
            // Sender: loops × (one message to every receiver of the group).
            buf[..4].copy_from_slice(&(task.index as u32).to_le_bytes());
            for seq in 0..self.loops {
                buf[4..8].copy_from_slice(&(seq as u32).to_le_bytes());
                for r in 0..self.fds {
                    ctx.send(ChannelId(first + r), buf).await?;
                }
            }
        } else {
            // Receiver: fds × loops messages, each sender's in order.
            let mut next_small = [0u32; 256];
            let mut next_big = Vec::new();
            let next: &mut [u32] = if self.fds <= next_small.len() {
                &mut next_small[..self.fds]
            } else {
                next_big.resize(self.fds, 0);
                &mut next_big
            };
            for _ in 0..self.fds * self.loops {
                ctx.recv(ChannelId(task.index), buf).await?;
                let sender = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
                let seq = u32::from_le_bytes(buf[4..8].try_into().unwrap());
                let Some(slot) = sender.checked_sub(first).filter(|&s| s < self.fds) else {
                    return Err(WorkloadError::Integrity(format!(
                        "receiver {} got a message from sender {sender}, outside its group",
                        task.index
                    )));
                };
                if seq != next[slot] {
                    return Err(WorkloadError::Integrity(format!(
                        "receiver {} expected message {} from sender {sender}, got {seq}",
                        task.index, next[slot]
                    )));
                }
                next[slot] += 1;
            }
            ctx.record("received", (self.fds * self.loops) as f64);
        }
        Ok(())
    }

    /// hackbench's order: per group, its receivers, then its senders.
    fn start_order(&self) -> Vec<usize> {
        let n = self.groups * self.fds;
        (0..self.groups)
            .flat_map(|g| {
                let r = (g * self.fds..(g + 1) * self.fds).map(move |i| n + i);
                let s = g * self.fds..(g + 1) * self.fds;
                r.chain(s)
            })
            .collect()
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![
            metric(
                "time",
                "s",
                Better::Lower,
                "wall time from the start signal until all tasks are done (hackbench's Time)",
            ),
            metric(
                "msgs_per_s",
                "msg/s",
                Better::Higher,
                "messages delivered per second of wall time",
            ),
            metric(
                "messages",
                "msg",
                Better::Higher,
                "messages delivered and checked (groups × fds² × loops)",
            ),
        ]
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let received = outcome.sum(&plan, Some(1), "received") as usize;
        if received != self.expected_messages() {
            return Err(WorkloadError::Integrity(format!(
                "receivers got {received} messages, expected {}",
                self.expected_messages()
            )));
        }
        let secs = outcome.wall.as_secs_f64();
        Ok(BTreeMap::from([
            ("time".into(), secs),
            ("msgs_per_s".into(), received as f64 / secs),
            ("messages".into(), received as f64),
        ]))
    }

    fn classic_line(&self, metrics: &BTreeMap<String, f64>) -> Option<String> {
        Some(format!("Time: {:.3}", metrics.get("time")?))
    }

    fn expected_time(&self) -> Option<Duration> {
        // Generous: 20 µs per message and per task, at least 60 s.
        let work =
            self.expected_messages() as f64 * 20e-6 + self.groups as f64 * self.fds as f64 * 1e-3;
        Some(Duration::from_secs_f64(work.max(60.0)))
    }
}
