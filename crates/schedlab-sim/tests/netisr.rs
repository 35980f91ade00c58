//! FreeBSD's loopback through the netisr thread (`kthreads.rs`) with several senders on one
//! connection: the connection's lock (`INP_LOCK`) is handed on to every waiter, whoever
//! releases it — a sender back from `tcp_output`, or the netisr thread after an ACK — and a
//! sender woken for the lock does not sleep again on a channel that filled meanwhile.
//!
//! Regression (found by `schedlab sweep chat --rooms 4 --users 10 --messages 1000 --backend sim
//! --vary policy=ule --vary cpus=1,2,4,8 --runs 4`, "simulation deadlocked … blocked
//! (NetOutput(5))" on 8 CPUs): a sender woken for the lock looked at the channel's room again,
//! slept on the full channel, and left the lock's other waiters — the netisr thread among them
//! — asleep with the lock free; and the netisr thread, woken for the lock to process an ACK,
//! went on without waking the waiter behind it.

mod common;

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimError, SimResult, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};
use schedlab_workload::presets::{Chat, Outcome};
use schedlab_workload::record::MetricDef;
use schedlab_workload::{ChannelId, Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;

/// `senders` tasks each send `messages` messages of `bytes` bytes on one loopback TCP
/// connection (channel 0), read by one task: hackbench's and chat's many writers of one
/// receiver's socket, small.
struct ManyWriters {
    senders: usize,
    messages: usize,
    bytes: usize,
}

impl Workload for ManyWriters {
    fn name(&self) -> &'static str {
        "many-writers"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        Plan {
            groups: vec![
                GroupPlan {
                    name: "sender",
                    tasks: self.senders,
                    spawn: 0,
                },
                GroupPlan {
                    name: "receiver",
                    tasks: 1,
                    spawn: 0,
                },
            ],
            channels: 1,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: TaskMode::Threads,
            transport: Transport::Tcp,
        }
    }
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = vec![task.index as u8; self.bytes];
        if task.group == 0 {
            for _ in 0..self.messages {
                ctx.send(ChannelId(0), &buf).await?;
            }
        } else {
            for _ in 0..self.senders * self.messages {
                ctx.recv(ChannelId(0), &mut buf).await?;
            }
        }
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        Vec::new()
    }
    fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::new())
    }
}

/// One repetition of `w` under `policy` on `cpus` CPUs of `cost`, seed `seed`.
fn run(
    w: &ManyWriters,
    policy: &str,
    cpus: usize,
    cost: &CostModel,
    seed: u64,
) -> Result<SimResult, SimError> {
    let spec: PolicySpec = policy.parse().unwrap();
    let knobs = vec![Knobs::default(); 2];
    run_repetition(
        w,
        SimSetup {
            seed,
            ..SimSetup::new(&spec, cpus, cost, &knobs)
        },
    )
}

/// The netisr thread, woken for the connection's lock to process an ACK, releases the lock
/// within that work and so wakes the sender waiting behind it: two senders of two messages on
/// 2 CPUs under ule (seed 2) left the second sender asleep on a free lock. Every small case
/// around it gets through, on both FreeBSD policies with and without PREEMPTION.
#[test]
fn the_netisr_thread_hands_the_connection_lock_on_after_an_ack() {
    let cost = common::modern_without_jitter("");
    let w = ManyWriters {
        senders: 2,
        messages: 2,
        bytes: 100,
    };
    run(&w, "ule", 2, &cost, 2).unwrap();
    for senders in 2..=4 {
        for messages in 1..=3 {
            let w = ManyWriters {
                senders,
                messages,
                bytes: 100,
            };
            for policy in ["ule", "ule:preemption=0", "bsd4", "bsd4:preemption=0"] {
                for cpus in 1..=3 {
                    for seed in 1..=4 {
                        run(&w, policy, cpus, &cost, seed).unwrap_or_else(|e| {
                            panic!("{senders} senders × {messages}, {policy} on {cpus} CPUs, seed {seed}: {e}")
                        });
                    }
                }
            }
        }
    }
}

/// The sweep that found the bug, small: one room of five users, each sending 1,000 messages,
/// on 8 CPUs under ule. Seed 3 deadlocked: a server task woken for a connection's lock looked
/// at the channel's room again, slept as a writer of the full channel, and left the lock's
/// other waiters asleep with the lock free. Every seed of the sweep's four, and bsd4, now get
/// through.
#[test]
fn chat_on_eight_cpus_under_ule_gets_through() {
    let w = Chat {
        rooms: 1,
        users: 5,
        messages: 1000,
        ..Chat::default()
    };
    let cost = CostModel::profile("modern").unwrap();
    let knobs = vec![Knobs::default(); 2];
    for policy in ["ule", "bsd4"] {
        let spec: PolicySpec = policy.parse().unwrap();
        for seed in 1..=4 {
            let r = run_repetition(
                &w,
                SimSetup {
                    seed,
                    ..SimSetup::new(&spec, 8, &cost, &knobs)
                },
            );
            let r = r.unwrap_or_else(|e| panic!("{policy}, seed {seed}: {e}"));
            let m = w.metrics(&r.outcome).unwrap();
            assert!(m["msgs_per_s"] > 0.0, "{policy}, seed {seed}: {m:?}");
        }
    }
}
