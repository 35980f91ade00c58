//! The engine's speed with a trivial policy: the simulated machine (event queue, task-body
//! polling, wakeup and switch paths, accounting) under a FIFO round robin that costs almost
//! nothing, so what is measured is the engine (issue 21 part 4: ≥ 30 M events/s on one core).
//!
//! The policy is not a scheduler anyone ran: each task has a fixed CPU (`task % cpus`), each CPU
//! a FIFO of runnable tasks, no balancing, no preemption on wakeup, a slice of one tick. It lives
//! here, not in the policy registry, so `schedlab list` and every result stay as they were.
//!
//!     cargo run --release -p schedlab-sim --example engine_speed -- [POLICY [THREADS [CPUS [MS]]]]
//!
//! runs the yield storm of `bench/sim.sh` (default 2048 threads on 8 CPUs for 1000 ms simulated)
//! under POLICY (`fifo`, the default, or any spec `schedlab list` shows, e.g. `eevdf`) and prints
//! `[simulated N events in S s]` as `schedlab run` does; `bench/sim.sh` divides N by the
//! process's user CPU time. A registry policy here is for profiling the engine and that policy
//! without building the whole `schedlab` binary.

use schedlab_sim::cost::CostModel;
use schedlab_sim::machine::{run_repetition, SimSetup};
use schedlab_sim::policy::{
    no_check, CpuId, DequeueKind, EnqueueKind, FromParams, MachineView, Params, Policy, PolicyDef,
    PolicyError, PolicySpec, PutPrevKind, TaskId, TaskSetup,
};
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::Yield;
use schedlab_workload::Workload;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// FIFO round robin on fixed CPUs: the cheapest policy the machine can run.
#[derive(Default)]
struct Fifo {
    /// Each CPU's runnable tasks, oldest first.
    queues: Vec<VecDeque<TaskId>>,
}

impl Fifo {
    fn queue(&mut self, ncpus: usize, cpu: CpuId) -> &mut VecDeque<TaskId> {
        if self.queues.len() < ncpus {
            self.queues.resize_with(ncpus, VecDeque::new);
        }
        &mut self.queues[cpu]
    }
}

impl FromParams for Fifo {
    fn from_params(_: &Params) -> Fifo {
        Fifo::default()
    }
}

impl Policy for Fifo {
    fn check_knobs(&self, _group: &str, _knobs: &Knobs) -> Result<(), PolicyError> {
        Ok(())
    }
    fn task_new(&mut self, _m: &MachineView, _task: &TaskSetup) {}
    fn select_task_rq(
        &mut self,
        m: &MachineView,
        task: TaskId,
        _prev: CpuId,
        _waker: Option<CpuId>,
    ) -> CpuId {
        task % m.ncpus
    }
    fn enqueue_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, _kind: EnqueueKind) {
        self.queue(m.ncpus, cpu).push_back(task);
    }
    fn dequeue_task(&mut self, _m: &MachineView, _cpu: CpuId, _task: TaskId, _kind: DequeueKind) {}
    fn wakeup_preempt(&mut self, _m: &MachineView, _cpu: CpuId, _curr: TaskId, _w: TaskId) -> bool {
        false
    }
    fn pick_next_task(&mut self, m: &MachineView, cpu: CpuId) -> Option<TaskId> {
        self.queue(m.ncpus, cpu).pop_front()
    }
    fn next_task_hint(&self, cpu: CpuId) -> Option<TaskId> {
        self.queues.get(cpu)?.front().copied()
    }
    fn put_prev_task(&mut self, m: &MachineView, cpu: CpuId, task: TaskId, _kind: PutPrevKind) {
        self.queue(m.ncpus, cpu).push_back(task);
    }
    fn update_curr(&mut self, _m: &MachineView, _cpu: CpuId, _task: TaskId, _delta_ns: u64) {}
    fn charges_runtime(&self) -> bool {
        false
    }
    fn task_tick(&mut self, m: &MachineView, cpu: CpuId, _task: TaskId) -> bool {
        !self.queue(m.ncpus, cpu).is_empty()
    }
    fn yield_task(&mut self, _m: &MachineView, _cpu: CpuId, _task: TaskId) -> bool {
        true
    }
}

/// The FIFO policy's definition (not in the registry).
static FIFO: PolicyDef = PolicyDef {
    name: "fifo",
    summary: "engine-speed example: FIFO round robin on fixed CPUs, no balancing",
    params: &[],
    describe_defaults: false,
    check: no_check,
    build: schedlab_sim::policy::boxed::<Fifo>,
};

/// The `N`th command-line argument as a number, or `default`; an unreadable one ends the
/// program with a message naming it.
fn arg(n: usize, name: &str, default: u64, max: u64) -> u64 {
    let Some(s) = std::env::args().nth(n) else {
        return default;
    };
    match s.parse::<u64>() {
        Ok(v) if (1..=max).contains(&v) => v,
        _ => {
            eprintln!("error: {name} {s:?} is not accepted; use a whole number 1..{max}");
            std::process::exit(2);
        }
    }
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "fifo".into());
    let threads = arg(2, "THREADS", 2048, 100_000) as usize;
    let cpus = arg(3, "CPUS", 8, schedlab_sim::policy::MAX_CPUS as u64) as usize;
    let ms = arg(4, "MS", 1000, 3_600_000);
    let workload = Yield {
        threads,
        duration: Duration::from_millis(ms),
    };
    let spec = if name == "fifo" {
        PolicySpec::new(&FIFO, Vec::new()).expect("fifo has no parameters")
    } else {
        match name.parse::<PolicySpec>() {
            Ok(spec) => spec,
            Err(e) => {
                eprintln!("error: {e} (or use fifo, this example's own policy)");
                std::process::exit(2);
            }
        }
    };
    let cost = CostModel::profile("modern").expect("the modern profile exists");
    let knobs = vec![Knobs::default(); workload.plan().groups.len()];
    let setup = SimSetup::new(&spec, cpus, &cost, &knobs);
    let started = Instant::now();
    match run_repetition(&workload, setup) {
        Ok(r) => {
            let metrics = workload.metrics(&r.outcome).unwrap_or_default();
            let per_yield = metrics.get("us_per_yield").copied().unwrap_or(f64::NAN);
            eprintln!(
                "{name} yield {threads} threads {cpus} CPUs {ms} ms [simulated {} events in {:.2} s]: us_per_yield: {per_yield:.3}",
                r.events,
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
