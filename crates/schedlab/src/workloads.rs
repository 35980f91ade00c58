//! Turning a parsed `run`/`sweep` workload command into validated workload values, one per
//! configuration (yield's `--threads 1,2,4` is three), and running them.

use crate::cli::{CommonArgs, WorkloadCmd};
use schedlab_workload::presets::{Chat, Messaging, PingPong, Yield};
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
        }
    };
}
