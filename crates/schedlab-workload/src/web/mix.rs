//! SPECweb99's static request mix: a directory by Zipf (α = 1) over the directories, a class by
//! 35 / 50 / 14 / 1 %, a file by Zipf over the nine files of the class in SPECweb99's order
//! (the middle file most popular), and keep-alive batches of 5 to 15 requests (SPECweb99
//! whitepaper §4.5, §5; docs/web.md). Seeded: a connection's stream of requests follows from
//! the run's seed and the connection's index alone, so a server body can know the length of
//! the batch its client sends.

use super::fileset::{FileId, CLASSES, FILES_PER_CLASS};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The generator a connection draws its requests from.
pub type MixRng = Xoshiro256PlusPlus;

/// Share of requests per class (SPECweb96 Table 1, kept by SPECweb99).
pub const CLASS_SHARE: [f64; CLASSES] = [0.35, 0.50, 0.14, 0.01];

/// Zipf rank of each file in its class (1 = most popular): file 4 first, then 3, 5, 2, 6, 1,
/// 7, 8, 0.
pub const FILE_RANK: [u32; FILES_PER_CLASS] = [9, 6, 4, 2, 1, 3, 5, 7, 8];

/// Fewest and most requests of one keep-alive batch.
pub const KEEPALIVE_REQUESTS: (u32, u32) = (5, 15);

/// The mix over a file set of some number of directories.
#[derive(Clone, Debug)]
pub struct RequestMix {
    dir_cdf: Vec<f64>,
    class_cdf: [f64; CLASSES],
    file_cdf: [f64; FILES_PER_CLASS],
}

fn cdf(weights: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut acc = 0.0;
    let mut out: Vec<f64> = weights
        .map(|w| {
            acc += w;
            acc
        })
        .collect();
    for v in &mut out {
        *v /= acc;
    }
    if let Some(last) = out.last_mut() {
        *last = 1.0;
    }
    out
}

/// A uniform draw in [0, 1).
fn unit(rng: &mut MixRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn pick(cdf: &[f64], u: f64) -> usize {
    cdf.partition_point(|&c| c <= u).min(cdf.len() - 1)
}

impl RequestMix {
    /// The mix over `dirs` directories.
    pub fn new(dirs: usize) -> RequestMix {
        let class_cdf = cdf(CLASS_SHARE.into_iter());
        let file_cdf = cdf(FILE_RANK.iter().map(|&r| 1.0 / r as f64));
        RequestMix {
            dir_cdf: cdf((0..dirs.max(1)).map(|d| 1.0 / (d + 1) as f64)),
            class_cdf: class_cdf.try_into().expect("four classes"),
            file_cdf: file_cdf.try_into().expect("nine files"),
        }
    }

    /// The generator of connection `conn` in a run seeded `seed`.
    pub fn rng(seed: u64, conn: usize) -> MixRng {
        MixRng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ conn as u64)
    }

    /// The next file requested.
    pub fn draw(&self, rng: &mut MixRng) -> FileId {
        FileId {
            dir: pick(&self.dir_cdf, unit(rng)) as u32,
            class: pick(&self.class_cdf, unit(rng)) as u8,
            file: pick(&self.file_cdf, unit(rng)) as u8,
        }
    }

    /// The length of the next keep-alive batch, uniform in 5..=15.
    pub fn batch(rng: &mut MixRng) -> u32 {
        let (lo, hi) = KEEPALIVE_REQUESTS;
        lo + (rng.next_u64() % u64::from(hi - lo + 1)) as u32
    }

    /// The mean response size (bytes) this mix asks for, from its weights.
    pub fn mean_size(&self) -> f64 {
        let mut mean = 0.0;
        for c in 0..CLASSES {
            let pc = self.class_cdf[c] - if c == 0 { 0.0 } else { self.class_cdf[c - 1] };
            for f in 0..FILES_PER_CLASS {
                let pf = self.file_cdf[f] - if f == 0 { 0.0 } else { self.file_cdf[f - 1] };
                let id = FileId {
                    dir: 0,
                    class: c as u8,
                    file: f as u8,
                };
                mean += pc * pf * id.size() as f64;
            }
        }
        mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportions_follow_specweb99() {
        let mix = RequestMix::new(100);
        let mut rng = RequestMix::rng(1, 0);
        let n = 400_000;
        let mut class = [0usize; CLASSES];
        let mut file = [0usize; FILES_PER_CLASS];
        let mut dir = vec![0usize; 100];
        for _ in 0..n {
            let id = mix.draw(&mut rng);
            class[id.class as usize] += 1;
            file[id.file as usize] += 1;
            dir[id.dir as usize] += 1;
        }
        let share = |c: usize| c as f64 / n as f64;
        for (c, want) in CLASS_SHARE.iter().enumerate() {
            assert!(
                (share(class[c]) - want).abs() < 0.004,
                "class {c}: {}",
                share(class[c])
            );
        }
        // File 4 gets 1/H9 = 35.3 %, file 0 gets 1/(9 H9) = 3.9 %.
        let h9: f64 = (1..=9).map(|k| 1.0 / k as f64).sum();
        assert!(
            (share(file[4]) - 1.0 / h9).abs() < 0.004,
            "{}",
            share(file[4])
        );
        assert!(
            (share(file[0]) - 1.0 / (9.0 * h9)).abs() < 0.002,
            "{}",
            share(file[0])
        );
        // Zipf α = 1 over directories: directory 0 twice directory 1, ten times directory 9.
        let r1 = dir[0] as f64 / dir[1] as f64;
        let r9 = dir[0] as f64 / dir[9] as f64;
        assert!((r1 - 2.0).abs() < 0.1, "{r1}");
        assert!((r9 - 10.0).abs() < 0.8, "{r9}");
        assert!(
            (mix.mean_size() - 14_726.3).abs() < 1.0,
            "{}",
            mix.mean_size()
        );
    }

    #[test]
    fn streams_are_seeded_and_batches_bounded() {
        let mix = RequestMix::new(10);
        let draw = |seed, conn| {
            let mut r = RequestMix::rng(seed, conn);
            (0..50).map(|_| mix.draw(&mut r)).collect::<Vec<_>>()
        };
        assert_eq!(draw(3, 1), draw(3, 1));
        assert_ne!(draw(3, 1), draw(3, 2));
        assert_ne!(draw(3, 1), draw(4, 1));
        let mut r = RequestMix::rng(1, 1);
        let b: Vec<u32> = (0..1000).map(|_| RequestMix::batch(&mut r)).collect();
        assert_eq!(*b.iter().min().unwrap(), 5);
        assert_eq!(*b.iter().max().unwrap(), 15);
    }
}
