//! Distance-dependent costs (issue 21 part 1): on a machine with a topology, `ipi`, `bounce`
//! and `migration` between two CPUs scale with how far apart they are (`smt_pct`, `llc_pct`,
//! `socket_pct`); on a flat machine, and between cores of one socket, they are the profile's.

mod common;

use schedlab_sim::cost::CostModel;
use schedlab_sim::policy::PolicySpec;
use schedlab_sim::topology::Topology;
use schedlab_sim::{run_repetition, SimError, SimResult, SimSetup};
use schedlab_workload::knobs::parse_knob;
use schedlab_workload::presets::PingPong;
use schedlab_workload::Workload;

/// Pingpong with ping on CPU `ping` and pong on CPU `pong`, on `topology` (flat when `None`)
/// of `cpus` CPUs, without jitter.
fn pingpong(
    topology: Option<&Topology>,
    cpus: usize,
    ping: usize,
    pong: usize,
    cost: &[&str],
) -> Result<SimResult, SimError> {
    let w = PingPong {
        loops: 2_000,
        ..PingPong::default()
    };
    let spec: PolicySpec = "cfs".parse().unwrap();
    let cost = common::modern_without_jitter(&cost.join(","));
    let knobs = vec![
        parse_knob("cpus", &ping.to_string()).unwrap(),
        parse_knob("cpus", &pong.to_string()).unwrap(),
    ];
    assert_eq!(w.plan().groups.len(), 2);
    run_repetition(
        &w,
        SimSetup {
            topology,
            ..SimSetup::new(&spec, cpus, &cost, &knobs)
        },
    )
}

#[test]
fn a_cross_socket_wakeup_costs_more_than_a_sibling_wakeup() {
    // 2s:2c:2t: CPUs 0-1 socket 0, 2-3 socket 1, 4-7 their siblings (4 is 0's).
    let t: Topology = "2s:2c:2t".parse().unwrap();
    let sibling = pingpong(Some(&t), 8, 0, 4, &[]).unwrap().elapsed_ns;
    let same_llc = pingpong(Some(&t), 8, 0, 1, &[]).unwrap().elapsed_ns;
    let remote = pingpong(Some(&t), 8, 0, 2, &[]).unwrap().elapsed_ns;
    assert!(
        sibling < same_llc && same_llc < remote,
        "sibling {sibling} ns, same LLC {same_llc} ns, other socket {remote} ns"
    );
    // Each round trip is two remote wakeups: the IPI (1.5 us) at 50 % and at 200 %.
    let per_rt = |ns: u64| ns as f64 / 2_000.0;
    let gap = per_rt(remote) - per_rt(sibling);
    assert!(
        (4_000.0..5_000.0).contains(&gap),
        "remote - sibling = {gap} ns per round trip; two IPIs of 1.5 us at 200 % vs 50 % make 4.5 us"
    );
    // With the scales at 100 % the distance costs nothing: what is left is the CPUs' tick
    // phases, well under the 4.5 us.
    let flat_scales = ["smt_pct=100", "socket_pct=100"];
    let a = pingpong(Some(&t), 8, 0, 4, &flat_scales)
        .unwrap()
        .elapsed_ns;
    let b = pingpong(Some(&t), 8, 0, 2, &flat_scales)
        .unwrap()
        .elapsed_ns;
    let left = (per_rt(a) - per_rt(b)).abs();
    assert!(
        left < 500.0,
        "{left} ns per round trip with the scales at 100 %"
    );
}

#[test]
fn a_flat_machine_pays_what_one_llc_pays() {
    let t: Topology = "2s:2c:2t".parse().unwrap();
    let flat = pingpong(None, 8, 0, 1, &[]).unwrap();
    let topo = pingpong(Some(&t), 8, 0, 1, &[]).unwrap();
    assert_eq!(flat.elapsed_ns, topo.elapsed_ns);
    assert_eq!(flat.events, topo.events);
    // llc_pct scales a flat machine too.
    let dearer = pingpong(None, 8, 0, 1, &["llc_pct=300"]).unwrap();
    assert!(dearer.elapsed_ns > flat.elapsed_ns);
}

#[test]
fn a_topology_that_is_not_the_cpu_count_is_refused() {
    let t: Topology = "2s:2c:2t".parse().unwrap();
    let e = pingpong(Some(&t), 4, 0, 1, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the topology 2s:2c:2t has 8 logical CPUs, not 4"
    );
}

/// `workers` tasks that compute 1 ms and sleep 1 ms, for `ms` milliseconds: about 0.75 of an
/// 8-CPU machine's worth, woken by timers on the CPU they last ran on.
struct Bursty {
    workers: usize,
    ms: u64,
}

impl Workload for Bursty {
    fn name(&self) -> &'static str {
        "bursty"
    }
    fn params(&self) -> std::collections::BTreeMap<String, String> {
        Default::default()
    }
    fn plan(&self) -> schedlab_workload::Plan {
        use schedlab_workload::plan::{GroupPlan, Plan, TaskMode, Transport};
        Plan {
            groups: vec![GroupPlan {
                name: "worker",
                tasks: self.workers,
                spawn: 0,
            }],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: schedlab_workload::SyncPlan::default(),
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: schedlab_workload::Context>(
        &self,
        _task: schedlab_workload::TaskRef,
        ctx: &C,
    ) -> Result<(), schedlab_workload::WorkloadError> {
        use std::time::Duration;
        while ctx.now() < Duration::from_millis(self.ms) {
            ctx.compute(Duration::from_millis(1)).await;
            ctx.sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    }
    fn metric_defs(&self) -> Vec<schedlab_workload::record::MetricDef> {
        Vec::new()
    }
    fn metrics(
        &self,
        _o: &schedlab_workload::presets::Outcome,
    ) -> Result<std::collections::BTreeMap<String, f64>, schedlab_workload::WorkloadError> {
        Ok(Default::default())
    }
}

/// Idle-while-waiting (the timeline's invariant 1), s of CPU time.
fn idle_while_waiting(policy: &str, topology: Option<&Topology>) -> f64 {
    let spec: PolicySpec = policy.parse().unwrap();
    let cost = CostModel::profile("modern").unwrap();
    let w = Bursty {
        workers: 12,
        ms: 300,
    };
    let r = run_repetition(
        &w,
        SimSetup {
            topology,
            timeline: true,
            ..SimSetup::new(
                &spec,
                8,
                &cost,
                &[schedlab_workload::knobs::Knobs::default()],
            )
        },
    )
    .unwrap();
    let tl = r.timeline.as_ref().expect("a timeline was asked for");
    schedlab_workload::timeline::replay::analyse(tl, 100).idle_while_waiting_s
}

/// Lozi et al.'s wasted cores, qualitatively: with scheduling domains a waking task searches only
/// its LLC for an idle CPU, and across the socket boundary only balancing (which leaves cache-hot
/// tasks alone) moves it, so CPUs sit idle while tasks wait far more than on the flat machine of
/// the same size, whose wakeups search every CPU.
#[test]
fn domains_leave_cpus_idle_while_tasks_wait_more_than_the_flat_machine() {
    let t: Topology = "2s:4c:1t".parse().unwrap();
    for policy in ["eevdf", "cfs"] {
        let flat = idle_while_waiting(policy, None);
        let domains = idle_while_waiting(policy, Some(&t));
        assert!(
            domains > flat && domains > 1e-3,
            "{policy}: idle while waiting {domains} s on 2s:4c:1t, {flat} s flat"
        );
        if policy == "eevdf" {
            assert!(domains > 10.0 * flat.max(1e-4), "{domains} vs {flat}");
        }
    }
}

/// The bursty workers' total counters on `topology` under eevdf, with cost overrides.
fn bursty_totals(
    topology: Option<&Topology>,
    cost: &[&str],
) -> schedlab_workload::record::Counters {
    let spec: PolicySpec = "eevdf".parse().unwrap();
    let cost = common::modern_without_jitter(&cost.join(","));
    let w = Bursty {
        workers: 12,
        ms: 300,
    };
    let r = run_repetition(
        &w,
        SimSetup {
            topology,
            ..SimSetup::new(
                &spec,
                8,
                &cost,
                &[schedlab_workload::knobs::Knobs::default()],
            )
        },
    )
    .unwrap();
    r.counters["total"].clone()
}

/// Memory placement (machine/numa.rs): a task's memory is on the node of its first compute,
/// and a compute started on the other socket takes `remote_pct` of its length. The workers
/// compute 1 ms at a time, so each local compute counts 1 ms and each remote one
/// `remote_pct` % of it.
#[test]
fn computes_off_their_memory_node_take_remote_pct_longer() {
    // No nodes to be off: nothing is counted, and the record keeps its old fields.
    assert_eq!(bursty_totals(None, &[]).compute_s, None);
    let one_socket: Topology = "1s:8c:1t".parse().unwrap();
    assert_eq!(bursty_totals(Some(&one_socket), &[]).remote_compute_s, None);
    let t: Topology = "2s:4c:1t".parse().unwrap();
    let ms = |s: Option<f64>| s.expect("counted on two sockets") * 1e3;
    let whole = |x: f64, step: f64| ((x / step) - (x / step).round()).abs() < 1e-6;
    let at_cost = bursty_totals(Some(&t), &["remote_pct=200"]);
    let remote = ms(at_cost.remote_compute_s);
    assert!(remote > 0.0, "balancing moves some workers off their node");
    assert!(
        whole(remote, 2.0),
        "remote computes of 2 ms each: {remote} ms"
    );
    assert!(whole(ms(at_cost.compute_s) - remote, 1.0));
    let tenfold = ms(bursty_totals(Some(&t), &["remote_pct=1000"]).remote_compute_s);
    assert!(
        tenfold > 0.0 && whole(tenfold, 10.0),
        "10 ms each: {tenfold} ms"
    );
    let free = bursty_totals(Some(&t), &["remote_pct=100"]);
    assert!(whole(ms(free.remote_compute_s), 1.0) && whole(ms(free.compute_s), 1.0));
    assert!(
        at_cost.remote_compute_percent().unwrap() > 0.0
            && at_cost.remote_compute_percent().unwrap() < 100.0
    );
}
