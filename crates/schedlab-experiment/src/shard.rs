//! Sharded sweeps (`sweep --shard K/N`): one sweep's configurations × repetitions cut into N
//! deterministic slices, each run by its own process (a Slurm array task, a Kubernetes Indexed
//! Job pod) into its own `--out` directory, and joined afterwards by [`crate::merge`].
//!
//! The slicing. A sweep of C configurations with R repetitions each has T = C × R units of work,
//! numbered in the order an unsharded sweep interleaves them: unit `u = round × C + config`
//! (round 0 of every configuration, then round 1, …). Shard K (1-based) runs the consecutive
//! block of units `⌊(K−1)·T/N⌋ ≤ u < ⌊K·T/N⌋`, so shards differ by at most one unit and, when
//! N ≤ R, each holds nearly every configuration (the same drift-evening as interleaving). Unit
//! `u` is repetition `round` of configuration `config` and runs with that repetition's own
//! index — on the simulator, seed SEED + round — whichever shard runs it, so the merged sweep
//! holds exactly the repetitions the unsharded sweep would.
//!
//! Only a fixed count of repetitions can be sliced in advance: `--until` (repeat until the
//! interval is tight) decides the count as it goes, so it is refused with `--shard`.
//!
//! `auto/N` takes K from the environment: from `SLURM_ARRAY_TASK_ID` as K = ID − MIN + 1 with
//! MIN = `SLURM_ARRAY_TASK_MIN`, so that `--array=1-N` and `--array=0-(N−1)` both work (the
//! array must have exactly N consecutive ids); or from `JOB_COMPLETION_INDEX`, which is 0-based,
//! as K = index + 1.

use std::fmt;

/// The most shards a sweep may be cut into.
pub const MAX_SHARDS: usize = 10_000;

/// The environment variable of a Slurm job array's task id.
pub const SLURM_ID: &str = "SLURM_ARRAY_TASK_ID";
/// The environment variable of a Slurm job array's smallest task id.
pub const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// The environment variable of a Slurm job array's largest task id.
pub const SLURM_MAX: &str = "SLURM_ARRAY_TASK_MAX";
/// The environment variable of a Slurm job array's id step.
pub const SLURM_STEP: &str = "SLURM_ARRAY_TASK_STEP";
/// The environment variable of a Kubernetes Indexed Job's completion index (0-based).
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";

/// Why `--shard` cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `K/N` or `auto/N`, or numbers out of range.
    #[error("--shard '{text}': {problem}; accepted: K/N with N in 1..={MAX_SHARDS} and K in 1..=N (K is 1-based: --shard 1/4 … 4/4), or auto/N to read K from {SLURM_ID} or {K8S_INDEX}")]
    Syntax {
        /// The text given.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `auto/N` without either variable, or with both.
    #[error("--shard auto/{count}: {problem}; give the shard as K/N (1..={count}) instead")]
    NoEnvironment {
        /// N.
        count: usize,
        /// What is missing or ambiguous.
        problem: String,
    },
    /// `auto/N` with a variable that does not give a shard of N.
    #[error("--shard auto/{count}: {var}='{value}' {problem}")]
    Environment {
        /// N.
        count: usize,
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong and what is accepted.
        problem: String,
    },
    /// More shards than the sweep has repetitions: some would run nothing.
    #[error("--shard {index}/{count}: the sweep has {units} repetitions ({configs} configuration{s} × {runs} runs), so it can be cut into at most {units} shards")]
    TooMany {
        /// K.
        index: usize,
        /// N.
        count: usize,
        /// Configurations × runs.
        units: usize,
        /// Configurations.
        configs: usize,
        /// Runs per configuration.
        runs: usize,
        /// Plural of "configuration".
        s: &'static str,
    },
    /// `--until` decides the repetition count as it goes: it cannot be sliced in advance.
    #[error("--shard cannot be used with --until: the number of repetitions --until runs is decided as results come in, so it cannot be sliced in advance; use --runs N with --shard")]
    Until,
}

/// `--shard` as written: a fixed shard, or `auto/N` to be read from the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardArg {
    /// `K/N`.
    Fixed(Shard),
    /// `auto/N`.
    Auto {
        /// N.
        count: usize,
    },
}

/// One shard of a sweep: number `index` (1-based) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// K, in 1..=count.
    pub index: usize,
    /// N, in 1..=[`MAX_SHARDS`].
    pub count: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl ShardArg {
    /// Parse `K/N` or `auto/N`.
    pub fn parse(text: &str) -> Result<ShardArg, ShardError> {
        let err = |problem: &str| ShardError::Syntax {
            text: text.to_string(),
            problem: problem.to_string(),
        };
        let (k, n) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| err("needs the form K/N"))?;
        let count = match n.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_SHARDS).contains(&n) => n,
            _ => {
                return Err(err(&format!(
                    "N '{n}' is not a whole number 1..={MAX_SHARDS}"
                )))
            }
        };
        if k.trim() == "auto" {
            return Ok(ShardArg::Auto { count });
        }
        match k.trim().parse::<usize>() {
            Ok(index) if (1..=count).contains(&index) => {
                Ok(ShardArg::Fixed(Shard { index, count }))
            }
            Ok(0) => Err(err("there is no shard 0, the first is 1")),
            _ => Err(err(&format!(
                "K '{k}' is not a whole number 1..={count} (or auto)"
            ))),
        }
    }

    /// The shard, reading `auto/N`'s K through `env` (the process environment in the binary).
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let count = match self {
            ShardArg::Fixed(s) => return Ok(s),
            ShardArg::Auto { count } => count,
        };
        match (env(SLURM_ID), env(K8S_INDEX)) {
            (Some(_), Some(_)) => Err(ShardError::NoEnvironment {
                count,
                problem: format!(
                    "both {SLURM_ID} and {K8S_INDEX} are set, so which one numbers the shard is ambiguous"
                ),
            }),
            (None, None) => Err(ShardError::NoEnvironment {
                count,
                problem: format!(
                    "neither {SLURM_ID} (a Slurm job array) nor {K8S_INDEX} (a Kubernetes Indexed Job) is set"
                ),
            }),
            (Some(id), None) => slurm_shard(count, &id, &env),
            (None, Some(index)) => {
                let bad = |problem: String| ShardError::Environment {
                    count,
                    var: K8S_INDEX,
                    value: index.clone(),
                    problem,
                };
                match index.trim().parse::<usize>() {
                    Ok(i) if i < count => Ok(Shard {
                        index: i + 1,
                        count,
                    }),
                    Ok(_) => Err(bad(format!(
                        "is out of range: the index is 0-based, so N = {count} shards take 0..={} (set the Job's completions and parallelism to {count})",
                        count - 1
                    ))),
                    Err(_) => Err(bad(format!("is not a whole number 0..={}", count - 1))),
                }
            }
        }
    }
}

/// Shard K of N from a Slurm array task: K = ID − MIN + 1, the array being N consecutive ids.
fn slurm_shard(
    count: usize,
    id: &str,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Shard, ShardError> {
    let number = |var: &'static str, value: Option<String>| -> Result<usize, ShardError> {
        let value = value.ok_or_else(|| ShardError::Environment {
            count,
            var,
            value: String::new(),
            problem: format!(
                "is not set; it comes with {SLURM_ID} in a Slurm job array (sbatch --array=1-{count})"
            ),
        })?;
        value
            .trim()
            .parse::<usize>()
            .map_err(|_| ShardError::Environment {
                count,
                var,
                value: value.clone(),
                problem: "is not a whole number".into(),
            })
    };
    let task = number(SLURM_ID, Some(id.to_string()))?;
    let min = number(SLURM_MIN, env(SLURM_MIN))?;
    let max = number(SLURM_MAX, env(SLURM_MAX))?;
    if let Some(step) = env(SLURM_STEP) {
        if step.trim() != "1" {
            return Err(ShardError::Environment {
                count,
                var: SLURM_STEP,
                value: step,
                problem: format!(
                    "is not 1: the array's ids must be consecutive (sbatch --array=1-{count})"
                ),
            });
        }
    }
    let bad = |problem: String| ShardError::Environment {
        count,
        var: SLURM_ID,
        value: id.to_string(),
        problem,
    };
    if max < min || max - min + 1 != count {
        return Err(bad(format!(
            "belongs to an array of ids {min}..{max}, not of {count} tasks; submit it with sbatch --array=1-{count} (or 0-{})",
            count - 1
        )));
    }
    if !(min..=max).contains(&task) {
        return Err(bad(format!("is outside the array's ids {min}..{max}")));
    }
    Ok(Shard {
        index: task - min + 1,
        count,
    })
}

/// The repetitions a shard runs: for each configuration, the indices (0-based, ascending) of
/// its repetitions in this shard's block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardPlan {
    /// The shard.
    pub shard: Shard,
    /// Repetitions per configuration in the whole sweep.
    pub runs: usize,
    /// Per configuration, the indices of the repetitions this shard runs, ascending.
    pub indices: Vec<Vec<u64>>,
    /// The shard's repetitions (configuration, index) in the order it runs them: the sweep's
    /// interleaved order.
    pub order: Vec<(usize, u64)>,
}

impl Shard {
    /// The repetitions this shard runs of a sweep of `configs` configurations × `runs`
    /// repetitions; refused if the sweep has fewer repetitions than shards.
    pub fn plan(self, configs: usize, runs: usize) -> Result<ShardPlan, ShardError> {
        let units = configs.saturating_mul(runs);
        if self.count > units || configs == 0 {
            return Err(ShardError::TooMany {
                index: self.index,
                count: self.count,
                units,
                configs,
                runs,
                s: if configs == 1 { "" } else { "s" },
            });
        }
        let order: Vec<(usize, u64)> = block(units, self.count, self.index)
            .map(|u| (u % configs, (u / configs) as u64))
            .collect();
        let mut indices = vec![Vec::new(); configs];
        for &(c, k) in &order {
            indices[c].push(k);
        }
        Ok(ShardPlan {
            shard: self,
            runs,
            indices,
            order,
        })
    }
}

/// The units `⌊(index−1)·units/count⌋ .. ⌊index·units/count⌋` (index 1-based).
fn block(units: usize, count: usize, index: usize) -> std::ops::Range<usize> {
    let at = |k: usize| (k as u128 * units as u128 / count as u128) as usize;
    at(index - 1)..at(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn shard(index: usize, count: usize) -> Shard {
        Shard { index, count }
    }

    #[test]
    fn parses_k_of_n_and_refuses_what_is_not() {
        assert_eq!(ShardArg::parse("2/8"), Ok(ShardArg::Fixed(shard(2, 8))));
        assert_eq!(ShardArg::parse("1/1"), Ok(ShardArg::Fixed(shard(1, 1))));
        assert_eq!(ShardArg::parse("auto/4"), Ok(ShardArg::Auto { count: 4 }));
        for (text, words) in [
            ("0/8", "there is no shard 0, the first is 1"),
            ("9/8", "K '9' is not a whole number 1..=8"),
            ("-1/8", "K '-1'"),
            ("2", "needs the form K/N"),
            ("1/0", "N '0' is not a whole number 1..=10000"),
            ("1/10001", "N '10001'"),
            ("x/2", "K 'x'"),
            ("auto/", "N ''"),
        ] {
            let e = ShardArg::parse(text).unwrap_err().to_string();
            assert!(
                e.contains(&format!("--shard '{text}'")) && e.contains(words),
                "{text}: {e}"
            );
            assert!(e.contains("K is 1-based: --shard 1/4"), "{e}");
        }
    }

    #[test]
    fn auto_reads_slurm_ids_from_their_array_minimum() {
        let auto = ShardArg::Auto { count: 8 };
        let slurm = |id: &str, min: &str, max: &str| {
            auto.resolve(env(&[(SLURM_ID, id), (SLURM_MIN, min), (SLURM_MAX, max)]))
        };
        // --array=1-8 and --array=0-7 number the same shards.
        assert_eq!(slurm("1", "1", "8"), Ok(shard(1, 8)));
        assert_eq!(slurm("8", "1", "8"), Ok(shard(8, 8)));
        assert_eq!(slurm("0", "0", "7"), Ok(shard(1, 8)));
        assert_eq!(slurm("7", "0", "7"), Ok(shard(8, 8)));
        let e = slurm("3", "1", "10").unwrap_err().to_string();
        assert!(
            e.contains("ids 1..10, not of 8 tasks") && e.contains("--array=1-8"),
            "{e}"
        );
        let e = slurm("x", "1", "8").unwrap_err().to_string();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID='x' is not a whole number"),
            "{e}"
        );
        let e = auto
            .resolve(env(&[(SLURM_ID, "3")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("SLURM_ARRAY_TASK_MIN='' is not set"), "{e}");
        let e = auto
            .resolve(env(&[
                (SLURM_ID, "3"),
                (SLURM_MIN, "1"),
                (SLURM_MAX, "15"),
                (SLURM_STEP, "2"),
            ]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("SLURM_ARRAY_TASK_STEP='2' is not 1"), "{e}");
    }

    #[test]
    fn auto_reads_a_zero_based_kubernetes_index() {
        let auto = ShardArg::Auto { count: 4 };
        assert_eq!(auto.resolve(env(&[(K8S_INDEX, "0")])), Ok(shard(1, 4)));
        assert_eq!(auto.resolve(env(&[(K8S_INDEX, "3")])), Ok(shard(4, 4)));
        let e = auto
            .resolve(env(&[(K8S_INDEX, "4")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("JOB_COMPLETION_INDEX='4' is out of range") && e.contains("0..=3"),
            "{e}"
        );
        let e = auto
            .resolve(env(&[(K8S_INDEX, "one")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'one' is not a whole number 0..=3"), "{e}");
        let e = auto.resolve(env(&[])).unwrap_err().to_string();
        assert!(
            e.contains("neither SLURM_ARRAY_TASK_ID") && e.contains("1..=4"),
            "{e}"
        );
        let e = auto
            .resolve(env(&[(K8S_INDEX, "1"), (SLURM_ID, "1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("both"), "{e}");
    }

    #[test]
    fn shards_partition_every_repetition_once_in_balanced_blocks() {
        for (configs, runs, count) in [(12, 3, 8), (5, 7, 5), (1, 10, 3), (3, 1, 3), (7, 4, 28)] {
            let mut seen = vec![vec![0u32; runs]; configs];
            let mut sizes = Vec::new();
            for index in 1..=count {
                let plan = shard(index, count).plan(configs, runs).unwrap();
                let mut size = 0;
                for (c, idx) in plan.indices.iter().enumerate() {
                    assert!(idx.windows(2).all(|w| w[0] < w[1]), "ascending: {idx:?}");
                    for &k in idx {
                        seen[c][k as usize] += 1;
                        size += 1;
                    }
                }
                sizes.push(size);
            }
            assert!(
                seen.iter().flatten().all(|&n| n == 1),
                "{configs}×{runs}/{count}: {seen:?}"
            );
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "{configs}×{runs}/{count}: {sizes:?}");
        }
    }

    #[test]
    fn blocks_follow_the_interleaved_order() {
        // 3 configurations × 2 runs = 6 units (a0 b0 c0 a1 b1 c1) in 4 shards: 1, 2, 1, 2 units.
        let plans: Vec<Vec<Vec<u64>>> = (1..=4)
            .map(|k| shard(k, 4).plan(3, 2).unwrap().indices)
            .collect();
        assert_eq!(plans[0], [vec![0], vec![], vec![]]);
        assert_eq!(plans[1], [vec![], vec![0], vec![0]]);
        assert_eq!(plans[2], [vec![1], vec![], vec![]]);
        assert_eq!(plans[3], [vec![], vec![1], vec![1]]);
        assert_eq!(shard(2, 4).plan(3, 2).unwrap().order, [(1, 0), (2, 0)]);
    }

    #[test]
    fn more_shards_than_repetitions_are_refused() {
        let e = shard(3, 7).plan(2, 3).unwrap_err().to_string();
        assert_eq!(
            e,
            "--shard 3/7: the sweep has 6 repetitions (2 configurations × 3 runs), so it can be cut into at most 6 shards"
        );
        assert!(shard(6, 6).plan(2, 3).is_ok());
    }
}
