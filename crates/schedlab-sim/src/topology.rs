//! The simulated machine's CPU topology: sockets of cores of SMT threads, written
//! `SOCKETSs:CORESc:THREADSt` (`2s:32c:2t` = 128 logical CPUs).
//!
//! Logical CPUs are numbered as Linux numbers them on x86 servers (the BIOS/ACPI MADT order the
//! kernel enumerates, visible in `/sys/devices/system/cpu/cpuN/topology/`): first the first
//! thread of every core, socket by socket (socket 0's cores, then socket 1's, ...), then the
//! second threads in the same order, and so on. So on `2s:32c:2t`, CPUs 0–31 are socket 0's
//! cores, 32–63 socket 1's, and the SMT sibling of CPU c is c + 64 (c + cores × sockets).
//!
//! Each socket is one last-level cache (as on Intel servers without sub-NUMA clustering). A flat
//! machine (`--cpus N` without a topology) is one socket of N single-thread cores: every pair of
//! CPUs shares the LLC, which is what the cost profiles' `ipi`, `bounce` and `migration` describe.

use crate::policy::{CpuId, MAX_CPUS};
use std::fmt;
use std::str::FromStr;

/// Why a topology was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// Not of the form `SOCKETSs:CORESc:THREADSt`.
    #[error("'{0}' is not a topology; give SOCKETSs:CORESc:THREADSt, e.g. 2s:32c:2t")]
    Form(String),
    /// A count is zero or too large.
    #[error("'{text}' makes {cpus} logical CPUs; the simulator takes 1..{MAX_CPUS}")]
    Size {
        /// The topology as given.
        text: String,
        /// Sockets × cores × threads (saturating).
        cpus: usize,
    },
}

/// Sockets of cores of SMT threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Sockets (each one last-level cache).
    pub sockets: usize,
    /// Cores per socket.
    pub cores: usize,
    /// Hardware threads per core.
    pub threads: usize,
}

/// How far apart two logical CPUs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    /// The same CPU.
    Same,
    /// SMT siblings: two threads of one core (shared L1/L2).
    Smt,
    /// Different cores of one socket (shared last-level cache).
    Llc,
    /// Different sockets.
    Socket,
}

impl Topology {
    /// A flat machine of `cpus` CPUs: one socket of single-thread cores.
    pub fn flat(cpus: usize) -> Topology {
        Topology {
            sockets: 1,
            cores: cpus,
            threads: 1,
        }
    }

    /// Logical CPUs.
    pub fn cpus(&self) -> usize {
        self.sockets * self.cores * self.threads
    }

    /// Whether this is a flat machine (one socket, one thread per core).
    pub fn is_flat(&self) -> bool {
        self.sockets == 1 && self.threads == 1
    }

    /// Cores on the whole machine: the stride between SMT siblings.
    fn all_cores(&self) -> usize {
        self.sockets * self.cores
    }

    /// The socket of logical CPU `cpu`.
    pub fn socket_of(&self, cpu: CpuId) -> usize {
        (cpu % self.all_cores()) / self.cores
    }

    /// The core of logical CPU `cpu`, numbered across the machine (0..sockets × cores).
    pub fn core_of(&self, cpu: CpuId) -> usize {
        cpu % self.all_cores()
    }

    /// The thread of logical CPU `cpu` within its core (0..threads).
    pub fn thread_of(&self, cpu: CpuId) -> usize {
        cpu / self.all_cores()
    }

    /// The logical CPUs of `cpu`'s core, itself included, in order.
    pub fn siblings(&self, cpu: CpuId) -> impl Iterator<Item = CpuId> {
        let core = self.core_of(cpu);
        let stride = self.all_cores();
        (0..self.threads).map(move |t| core + t * stride)
    }

    /// How far apart `a` and `b` are.
    pub fn distance(&self, a: CpuId, b: CpuId) -> Distance {
        if a == b {
            Distance::Same
        } else if self.core_of(a) == self.core_of(b) {
            Distance::Smt
        } else if self.socket_of(a) == self.socket_of(b) {
            Distance::Llc
        } else {
            Distance::Socket
        }
    }
}

impl FromStr for Topology {
    type Err = TopologyError;

    fn from_str(text: &str) -> Result<Topology, TopologyError> {
        let form = || TopologyError::Form(text.into());
        let parts: Vec<&str> = text.trim().split(':').collect();
        let [s, c, t] = parts[..] else {
            return Err(form());
        };
        let count = |part: &str, suffix: char| -> Result<usize, TopologyError> {
            part.strip_suffix(suffix)
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(form)
        };
        let (sockets, cores, threads) = (count(s, 's')?, count(c, 'c')?, count(t, 't')?);
        let cpus = sockets.saturating_mul(cores).saturating_mul(threads);
        if !(1..=MAX_CPUS).contains(&cpus) {
            return Err(TopologyError::Size {
                text: text.into(),
                cpus,
            });
        }
        Ok(Topology {
            sockets,
            cores,
            threads,
        })
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s:{}c:{}t", self.sockets, self.cores, self.threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let t: Topology = "2s:32c:2t".parse().unwrap();
        assert_eq!((t.sockets, t.cores, t.threads, t.cpus()), (2, 32, 2, 128));
        assert_eq!(t.to_string(), "2s:32c:2t");
        assert!(!t.is_flat());
        assert!(Topology::flat(8).is_flat());
        assert_eq!("1s:1c:1t".parse::<Topology>().unwrap().cpus(), 1);
        assert_eq!("4s:64c:4t".parse::<Topology>().unwrap().cpus(), 1024);
    }

    #[test]
    fn refuses_bad_input() {
        for bad in [
            "",
            "2s:32c",
            "2s:32c:2t:1",
            "2:32:2",
            "s:32c:2t",
            "-1s:2c:1t",
            "2c:2s:1t",
        ] {
            assert_eq!(
                bad.parse::<Topology>(),
                Err(TopologyError::Form(bad.into())),
                "{bad}"
            );
        }
        let e = "0s:4c:1t".parse::<Topology>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "'0s:4c:1t' makes 0 logical CPUs; the simulator takes 1..1024"
        );
        let e = "4s:64c:8t".parse::<Topology>().unwrap_err();
        assert!(matches!(e, TopologyError::Size { cpus: 2048, .. }), "{e:?}");
        let huge = "99999999999999999999s:1c:1t";
        assert!(matches!(
            huge.parse::<Topology>(),
            Err(TopologyError::Form(_))
        ));
        let big = "9999999999s:9999999999c:9999999999t";
        assert!(matches!(
            big.parse::<Topology>(),
            Err(TopologyError::Size { .. })
        ));
    }

    #[test]
    fn numbers_as_linux_on_x86_servers() {
        let t: Topology = "2s:4c:2t".parse().unwrap();
        // CPUs 0-3: socket 0's cores; 4-7: socket 1's; 8-15: their second threads.
        let place = |c| (t.socket_of(c), t.core_of(c), t.thread_of(c));
        assert_eq!(place(0), (0, 0, 0));
        assert_eq!(place(3), (0, 3, 0));
        assert_eq!(place(4), (1, 4, 0));
        assert_eq!(place(8), (0, 0, 1));
        assert_eq!(place(13), (1, 5, 1));
        assert_eq!(t.siblings(1).collect::<Vec<_>>(), [1, 9]);
        assert_eq!(t.siblings(9).collect::<Vec<_>>(), [1, 9]);
        assert_eq!(t.distance(2, 2), Distance::Same);
        assert_eq!(t.distance(2, 10), Distance::Smt);
        assert_eq!(t.distance(2, 11), Distance::Llc);
        assert_eq!(t.distance(2, 5), Distance::Socket);
        assert_eq!(t.distance(2, 13), Distance::Socket);
        let flat = Topology::flat(4);
        assert_eq!(flat.distance(0, 3), Distance::Llc);
        assert_eq!(flat.siblings(2).collect::<Vec<_>>(), [2]);
    }
}
