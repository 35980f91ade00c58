//! `net_wait`: a loopback TCP receive that sleeps pays it when it completes
//! (`machine/tcp_wait.rs`); receives that find their data, other transports and readiness
//! waits do not, and at 0 (the built-in profiles) nothing changes.

mod common;

use schedlab_sim::policy::PolicySpec;
use schedlab_sim::{run_repetition, SimResult, SimSetup};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::plan::{Plan, Transport};
use schedlab_workload::presets::{Outcome, PingPong};
use schedlab_workload::record::MetricDef;
use schedlab_workload::{ChannelId, Context, TaskRef, Workload, WorkloadError};
use std::collections::BTreeMap;

/// One repetition on `cpus` CPUs under `policy`, the `modern` profile without jitter and with
/// `net_wait`.
fn run<W: Workload>(w: &W, policy: &str, cpus: usize, net_wait: &str) -> SimResult {
    let cost = common::modern_without_jitter(&format!("net_wait={net_wait}"));
    let spec: PolicySpec = policy.parse().unwrap();
    let knobs = vec![Knobs::default(); w.plan().groups.len()];
    run_repetition(w, SimSetup::new(&spec, cpus, &cost, &knobs)).unwrap()
}

fn ping_pong(transport: Transport) -> PingPong {
    PingPong {
        loops: 500,
        transport,
        ..PingPong::default()
    }
}

/// On one CPU every receive that sleeps adds `net_wait` to the run (the CPU is never idle),
/// whichever task sleeps: eevdf's ping-pong sleeps in both receives of a round trip, cfs's
/// preempts the waker and sleeps in one. Over pipes and UNIX sockets `net_wait` changes
/// nothing.
#[test]
fn each_tcp_receive_that_slept_pays_net_wait_once() {
    let tcp = ping_pong(Transport::Tcp);
    for (policy, sleeps_per_rt) in [("eevdf", 2), ("cfs", 1)] {
        let without = run(&tcp, policy, 1, "0");
        let with = run(&tcp, policy, 1, "3us");
        let sleeps = with.counters["total"].voluntary_switches.unwrap() as i64;
        // The same sleeps as without: only the cost moved.
        assert_eq!(
            Some(sleeps as u64),
            without.counters["total"].voluntary_switches
        );
        assert!(
            (sleeps - sleeps_per_rt * 500).abs() <= 2,
            "{policy}: {sleeps} sleeps"
        );
        // Plus the ticks (1 µs each) that fall into the longer run: 3 ms more is one at HZ=250.
        let extra = with.elapsed_ns as i64 - without.elapsed_ns as i64;
        assert!(
            (0..=2_000).contains(&(extra - 3_000 * sleeps)),
            "{policy}: {extra} ns more for {sleeps} sleeps"
        );
    }
    for transport in [Transport::Pipe, Transport::Socketpair] {
        let w = ping_pong(transport);
        assert_eq!(
            run(&w, "eevdf", 1, "0").elapsed_ns,
            run(&w, "eevdf", 1, "3us").elapsed_ns,
            "{transport}"
        );
    }
}

/// One task that writes `messages` messages of 100 bytes to a loopback TCP connection and then
/// reads them back: every receive finds its data.
struct SelfSend {
    messages: usize,
}

impl Workload for SelfSend {
    fn name(&self) -> &'static str {
        "self-send"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        common::one_task_plan(Transport::Tcp)
    }
    async fn body<C: Context>(&self, _task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = [7u8; 100];
        for _ in 0..self.messages {
            ctx.send(ChannelId(0), &buf).await?;
        }
        for _ in 0..self.messages {
            ctx.recv(ChannelId(0), &mut buf).await?;
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

/// A receive that finds its data does not pay `net_wait`.
#[test]
fn a_tcp_receive_that_finds_its_data_does_not_pay_net_wait() {
    let w = SelfSend { messages: 10 };
    let without = run(&w, "eevdf", 1, "0");
    let with = run(&w, "eevdf", 1, "50us");
    assert_eq!(with.counters["total"].voluntary_switches, Some(0));
    assert_eq!(with.elapsed_ns, without.elapsed_ns);
}
