//! Turning a parsed `run`/`sweep` workload command into validated workload values, one per
//! configuration (yield's `--threads 1,2,4` is three), and running them.

use crate::cli::{CommonArgs, WorkloadCmd};
use schedlab_workload::presets::{
    BenchKind, Chat, Interbench, LoadKind, Messaging, PingPong, Yield,
};
use schedlab_workload::Workload;

/// The validated configurations of one workload command.
pub enum Built {
    /// hackbench messaging.
    Messaging(Vec<Messaging>),
    /// Chat rooms.
    Chat(Vec<Chat>),
    /// Ping-pong.
    PingPong(Vec<PingPong>),
    /// sched_yield, one per thread count.
    Yield(Vec<Yield>),
    /// interbench, one per (benchmarked task, load) pair.
    Interbench(Vec<Interbench>),
}

/// A preset that can be taken back out of [`Built`].
pub trait Preset: Workload + Sized {
    /// The configurations if `built` holds this preset.
    fn take(built: Built) -> Option<Vec<Self>>;
}

macro_rules! preset {
    ($ty:ty, $variant:ident) => {
        impl Preset for $ty {
            fn take(built: Built) -> Option<Vec<Self>> {
                match built {
                    Built::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
preset!(Messaging, Messaging);
preset!(Chat, Chat);
preset!(PingPong, PingPong);
preset!(Yield, Yield);
preset!(Interbench, Interbench);

/// Make sure the real machine can afford the memory and file loads before anything starts:
/// memload may use at most half of the memory available now (so it never invokes the OOM killer,
/// swap or not), and the read and write loads' files must fit twice over in the temporary
/// directory's free space.
fn check_interbench_budget(configs: &[Interbench]) -> Result<(), String> {
    use schedlab_workload::presets::interbench::format_size;
    if let Some(w) = configs.iter().find(|w| w.load == LoadKind::Memload) {
        let available = schedlab_real::host::available_memory()
            .map_err(|e| format!("interbench: {e} to size memload"))?
            as usize;
        if w.mem_size > available / 2 {
            return Err(format!(
                "interbench: --mem-size {} is more than half of the memory available now ({}); memload would risk the OOM killer — use at most {}",
                format_size(w.mem_size),
                format_size(available),
                format_size(available / 2)
            ));
        }
    }
    let files = configs
        .iter()
        .map(|w| match w.load {
            LoadKind::Write | LoadKind::Read => w.io_size,
            LoadKind::Compile => 2 * w.io_size,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    if files > 0 {
        let dir = std::env::temp_dir();
        // Unknown free space (statvfs failed): nothing to check against.
        if let Ok(free) = schedlab_real::host::free_disk_space(&dir) {
            let free = free as usize;
            if files * 2 > free {
                return Err(format!(
                    "interbench: the read/write loads need {} of files but {} has only {} free; lower --io-size",
                    format_size(files),
                    dir.display(),
                    format_size(free)
                ));
            }
        }
    }
    Ok(())
}

/// Validate a workload command into its configurations and the common options.
pub fn build(cmd: WorkloadCmd) -> Result<(Built, CommonArgs), String> {
    Ok(match cmd {
        WorkloadCmd::Messaging {
            groups,
            fds,
            loops,
            datasize,
            transport,
            tasks,
            common,
        } => {
            let w = Messaging {
                groups,
                fds,
                loops,
                datasize,
                transport,
                mode: tasks,
            };
            w.validate()?;
            (Built::Messaging(vec![w]), common)
        }
        WorkloadCmd::Chat {
            rooms,
            users,
            messages,
            size,
            transport,
            mode,
            tasks,
            common,
        } => {
            let w = Chat {
                rooms,
                users,
                messages,
                size,
                transport,
                mode,
                hosting: tasks,
            };
            w.validate()?;
            (Built::Chat(vec![w]), common)
        }
        WorkloadCmd::Pingpong {
            transport,
            loops,
            tasks,
            common,
        } => {
            let w = PingPong {
                loops,
                transport,
                mode: tasks,
            };
            w.validate()?;
            (Built::PingPong(vec![w]), common)
        }
        WorkloadCmd::Interbench {
            bench,
            loads,
            duration,
            load_threads,
            io_size,
            mem_size,
            cpu,
            interval,
            rt,
            mut common,
        } => {
            let mut benches = if bench.is_empty() {
                BenchKind::DEFAULT.to_vec()
            } else {
                bench
            };
            if cpu.is_some() && !benches.contains(&BenchKind::Custom) {
                benches.push(BenchKind::Custom);
            }
            if benches.contains(&BenchKind::Custom) && cpu.is_none() {
                return Err(
                    "interbench: the custom benchmark needs --cpu PCT (and --interval DUR)".into(),
                );
            }
            let loads = if loads.is_empty() {
                LoadKind::ALL.to_vec()
            } else {
                loads
            };
            let load_threads = load_threads.unwrap_or_else(schedlab_real::host::online_cpus);
            let mut configs = Vec::new();
            for &b in &benches {
                for &l in &loads {
                    if !Interbench::pair_runs(b, l) {
                        continue;
                    }
                    let w = Interbench {
                        bench: b,
                        load: l,
                        duration,
                        load_threads,
                        io_size,
                        mem_size,
                        custom_cpu: cpu.unwrap_or(10.0),
                        custom_interval: interval,
                        rt,
                    };
                    w.validate()?;
                    configs.push(w);
                }
            }
            if configs.is_empty() {
                return Err("interbench: no (benchmark, load) pair to run: a task is not benchmarked against itself".into());
            }
            if common.backend == crate::cli::BackendArg::Real {
                check_interbench_budget(&configs)?;
            }
            // The timekeeper runs SCHED_FIFO 96, as the original's, where this machine allows
            // real-time policies (the original, too, carries on without). On the simulator it
            // keeps the policy's default class (not every simulated policy models SCHED_FIFO).
            if !common.group_knobs.iter().any(|g| g.starts_with("timer:"))
                && common.backend == crate::cli::BackendArg::Real
                && schedlab_real::host::realtime_allowed()
            {
                common.group_knobs.push("timer:policy=fifo:96".into());
            }
            if rt {
                // interbench -r: the benchmarked thread runs SCHED_FIFO 95.
                if common
                    .group_knobs
                    .iter()
                    .any(|g| g.starts_with("bench:") && g.contains("policy="))
                {
                    return Err("interbench: --rt sets the bench group's policy (fifo:95); drop policy= from --group bench:...".into());
                }
                match common
                    .group_knobs
                    .iter_mut()
                    .find(|g| g.starts_with("bench:"))
                {
                    Some(g) => g.push_str(",policy=fifo:95"),
                    None => common.group_knobs.push("bench:policy=fifo:95".into()),
                }
            }
            (Built::Interbench(configs), common)
        }
        WorkloadCmd::Yield {
            threads,
            duration,
            common,
        } => {
            let configs: Vec<Yield> = threads
                .iter()
                .map(|&t| Yield {
                    threads: t,
                    duration,
                })
                .collect();
            for c in &configs {
                c.validate()?;
            }
            (Built::Yield(configs), common)
        }
    })
}

/// Call `$f::<Preset>(configs, ...)` with the preset `$built` holds.
#[macro_export]
macro_rules! with_preset {
    ($built:expr, $f:ident ( $($args:expr),* )) => {
        match $built {
            $crate::workloads::Built::Messaging(v) => $f(v, $($args),*),
            $crate::workloads::Built::Chat(v) => $f(v, $($args),*),
            $crate::workloads::Built::PingPong(v) => $f(v, $($args),*),
            $crate::workloads::Built::Yield(v) => $f(v, $($args),*),
            $crate::workloads::Built::Interbench(v) => $f(v, $($args),*),
        }
    };
}
