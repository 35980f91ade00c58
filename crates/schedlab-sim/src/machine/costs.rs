//! What things cost on this machine in this repetition: the cost model, the CPUs' topology
//! (which scales the costs between two CPUs) and the repetition's jitter — the one source of
//! randomness of a run, so that the same seed draws the same costs in the same order.

use crate::cost::CostModel;
use crate::policy::CpuId;
use crate::topology::{Distance, Topology};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A cost and the span of its jitter ([`Costs::c`]): worked out once for the costs of every
/// switch and system call ([`HotCosts`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Jittered {
    base: u64,
    span: u64,
}

impl Jittered {
    /// `base` with `jitter_ppm` parts per million of jitter.
    fn new(base: u64, jitter_ppm: u64) -> Jittered {
        Jittered {
            base,
            span: base * jitter_ppm / 1_000_000,
        }
    }
}

/// The profile's costs of every switch and system call, with their jitter's spans.
#[derive(Clone, Copy, Debug)]
pub(super) struct HotCosts {
    pub(super) syscall: Jittered,
    pub(super) switch: Jittered,
    pub(super) rq_lock: Jittered,
    pub(super) wakeup: Jittered,
}

impl HotCosts {
    /// Those of `cost`, with `jitter_ppm` parts per million of jitter.
    fn new(cost: &CostModel, jitter_ppm: u64) -> HotCosts {
        HotCosts {
            syscall: Jittered::new(cost.syscall, jitter_ppm),
            switch: Jittered::new(cost.switch, jitter_ppm),
            rq_lock: Jittered::new(cost.rq_lock, jitter_ppm),
            wakeup: Jittered::new(cost.wakeup, jitter_ppm),
        }
    }
}

/// The machine's prices: the cost model, the topology and the jitter's random draws.
pub(super) struct Costs {
    /// The cost model (read by every part that charges something).
    pub(super) model: CostModel,
    /// The CPUs' arrangement (flat when the setup gave none): distance scales `ipi`, `bounce`
    /// and `migration`.
    pub(super) topology: Topology,
    rng: Xoshiro256PlusPlus,
    /// The cost model's jitter in parts per million.
    jitter_ppm: u64,
    /// The costs of every switch and system call, with their jitter's spans.
    pub(super) hot: HotCosts,
}

impl Costs {
    /// The prices of `model` on `topology`, drawing with `seed`.
    pub(super) fn new(model: &CostModel, topology: Topology, seed: u64) -> Costs {
        let jitter_ppm = (model.jitter * 1e6).round() as u64;
        Costs {
            model: model.clone(),
            topology,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            jitter_ppm,
            hot: HotCosts::new(model, jitter_ppm),
        }
    }

    /// The next random number of the repetition (the machine's only other draw: the CPUs'
    /// tick phases at the start).
    pub(super) fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A cost with this repetition's jitter.
    #[inline]
    pub(super) fn c(&mut self, base: u64) -> u64 {
        self.jittered(Jittered::new(base, self.jitter_ppm))
    }

    /// [`Costs::c`] of a cost whose span is worked out ([`HotCosts`]): the same draw, without
    /// the span's multiplication and division at every switch.
    #[inline]
    pub(super) fn jittered(&mut self, cost: Jittered) -> u64 {
        // Uniform in base·(1 ± jitter), in integer arithmetic (this runs several times per event).
        let Jittered { base, span } = cost;
        if span == 0 {
            return base;
        }
        // Lemire's multiply-shift maps the 64 random bits onto 0..=2·span without a division.
        let r = ((self.rng.next_u64() as u128 * (2 * span + 1) as u128) >> 64) as u64;
        base - span + r
    }

    /// `base` (a cost between two CPUs sharing a last-level cache: `ipi`, `bounce`,
    /// `migration`) scaled to how far apart `a` and `b` are in the topology by the profile's
    /// `smt_pct`, `llc_pct` and `socket_pct`. On a flat machine every pair shares the LLC, so the cost is
    /// `base` unchanged.
    /// Inlined: it is on every switch's and wakeup's path (bsd4's yield storm spent 9 % of its
    /// time in the call when the compiler left it out of line).
    #[inline]
    pub(super) fn by_distance(&self, base: u64, a: CpuId, b: CpuId) -> u64 {
        let pct = match self.topology.distance(a, b) {
            Distance::Same => return base,
            Distance::Smt => self.model.smt_pct,
            Distance::Llc => self.model.llc_pct,
            Distance::Socket => self.model.socket_pct,
        };
        if pct == 100 {
            return base;
        }
        (base * pct).div_ceil(100).min(crate::cost::MAX_COST_NS)
    }

    /// The copy of `bytes` between user and kernel space, with jitter.
    pub(super) fn copy_cost(&mut self, bytes: usize) -> u64 {
        let base = (bytes as u64 * self.model.copy_per_kib).div_ceil(1024);
        self.c(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(overrides: &str, topology: Topology) -> Costs {
        let model = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&[overrides.to_string()])
            .unwrap();
        Costs::new(&model, topology, 1)
    }

    /// Jitter 0 draws nothing and charges the base; jitter j stays within base·(1 ± j), comes
    /// out the same for the same seed, and spreads over the span (not stuck at one end).
    #[test]
    fn jitter_stays_in_its_span_and_repeats_with_the_seed() {
        let mut exact = costs("jitter=0", Topology::flat(2));
        assert_eq!(exact.c(1000), 1000);
        assert_eq!(exact.jittered(exact.hot.switch), exact.model.switch);
        let mut a = costs("jitter=0.1", Topology::flat(2));
        let mut b = costs("jitter=0.1", Topology::flat(2));
        let draws: Vec<u64> = (0..1000).map(|_| a.c(1000)).collect();
        assert!(
            draws.iter().all(|&d| (900..=1100).contains(&d)),
            "{draws:?}"
        );
        assert!(draws.iter().any(|&d| d < 950) && draws.iter().any(|&d| d > 1050));
        assert_eq!(draws, (0..1000).map(|_| b.c(1000)).collect::<Vec<_>>());
    }

    /// The cost between two CPUs is the base within one LLC, and the profile's percentages of
    /// it between SMT siblings and across sockets.
    #[test]
    fn distance_scales_cross_cpu_costs() {
        // CPUs 0 and 1 are cores of socket 0, 2 and 3 of socket 1; CPU 4 is CPU 0's sibling.
        let topology: Topology = "2s:2c:2t".parse().unwrap();
        let c = costs("jitter=0,smt_pct=50,llc_pct=120,socket_pct=300", topology);
        assert_eq!(c.by_distance(1000, 0, 0), 1000);
        assert_eq!(c.by_distance(1000, 0, 4), 500, "SMT siblings");
        assert_eq!(c.by_distance(1000, 0, 1), 1200, "one LLC");
        assert_eq!(c.by_distance(1000, 0, 2), 3000, "two sockets");
        let flat = costs("jitter=0,socket_pct=300", Topology::flat(8));
        assert_eq!(flat.by_distance(1000, 0, 7), 1000);
    }
}
