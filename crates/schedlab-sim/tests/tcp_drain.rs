//! `net_ack`: a loopback TCP receive pays the ACK part of `net_msg` only when, by
//! `tcp_cleanup_rbuf`'s rule, it sends an ACK — it empties the queue, or more than 536 bytes
//! arrived since the last ACK (`machine/tcp_drain.rs`); other transports, FreeBSD's netisr
//! loopback, and `net_ack` 0 (the built-in profiles) charge every receive as before.

mod common;

use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimResult, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{Plan, Transport};
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::MetricDef;
use schedlab_workload::{ChannelId, Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;

/// One task that, `rounds` times, writes `batch` messages of `size` bytes to a connection and
/// reads them back: every receive finds its data, and all but the last of a round leave some
/// queued.
struct Batches {
    rounds: usize,
    batch: usize,
    size: usize,
    transport: Transport,
}

impl Workload for Batches {
    fn name(&self) -> &'static str {
        "batches"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        common::one_task_plan(self.transport)
    }
    async fn body<C: Context>(&self, _task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = vec![7u8; self.size];
        for _ in 0..self.rounds {
            for _ in 0..self.batch {
                ctx.send(ChannelId(0), &buf).await?;
            }
            for _ in 0..self.batch {
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

/// One repetition on one CPU under `policy`, the `modern` profile (net_msg 2.5 µs) without
/// jitter and with `net_ack`.
fn run(w: &Batches, policy: &str, net_ack: &str) -> SimResult {
    let cost = common::modern_without_jitter(&format!("net_ack={net_ack}"));
    let spec: PolicySpec = policy.parse().unwrap();
    let knobs = vec![Knobs::default(); 1];
    run_repetition(w, SimSetup::new(&spec, 1, &cost, &knobs)).unwrap()
}

fn batches(batch: usize, size: usize, transport: Transport) -> Batches {
    Batches {
        rounds: 200,
        batch,
        size,
        transport,
    }
}

/// The run's time saved by `net_ack` = 2 µs, against 0.
fn saved_ns(w: &Batches, policy: &str) -> i64 {
    run(w, policy, "0").elapsed_ns as i64 - run(w, policy, "2us").elapsed_ns as i64
}

/// Whether `saved` is `reads` × 2 µs, plus the ticks (1 µs each at HZ=250) that fall out of
/// the shorter run.
fn is_reads_of_2us(saved: i64, reads: i64) -> bool {
    (0..=(reads * 2_000 / 4_000_000 + 2) * 1_000).contains(&(saved - reads * 2_000))
}

/// Written and read one at a time, every read empties the queue and ACKs: nothing changes.
/// Four of 100 bytes (400 unacknowledged, under 536): the first three reads of a round leave
/// data queued and send no ACK, the last ACKs. Ten of 100 bytes (1,000 unacknowledged): the
/// first read ACKs for all of them, the nine after find nothing new to ACK, the last included.
#[test]
fn a_tcp_read_pays_the_ack_only_when_it_drains_the_queue_or_a_segment_is_unacked() {
    assert_eq!(saved_ns(&batches(1, 100, Transport::Tcp), "eevdf"), 0);
    for (batch, cheap_per_round) in [(4, 3), (10, 9)] {
        let w = batches(batch, 100, Transport::Tcp);
        for policy in ["eevdf", "cfs", "o1"] {
            let saved = saved_ns(&w, policy);
            assert!(
                is_reads_of_2us(saved, cheap_per_round * 200),
                "{policy}, batch {batch}: {saved} ns saved"
            );
        }
    }
    // 1-byte messages: 16 queued stay under 536 bytes, so only the last read of a round ACKs
    // (calibrate's drain probe).
    let saved = saved_ns(&batches(16, 1, Transport::Tcp), "eevdf");
    assert!(is_reads_of_2us(saved, 15 * 200), "{saved} ns saved");
}

/// Pipes, UNIX sockets and UDP have no ACK, and FreeBSD's loopback ACKs in the netisr thread:
/// `net_ack` changes nothing there.
#[test]
fn net_ack_changes_nothing_off_linux_tcp() {
    for transport in [Transport::Pipe, Transport::Socketpair, Transport::Udp] {
        assert_eq!(
            saved_ns(&batches(4, 100, transport), "eevdf"),
            0,
            "{transport}"
        );
    }
    for policy in ["bsd4", "ule"] {
        assert_eq!(
            saved_ns(&batches(4, 100, Transport::Tcp), policy),
            0,
            "{policy}"
        );
    }
}
