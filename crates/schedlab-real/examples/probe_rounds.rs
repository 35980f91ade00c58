//! Every round's sample of some of `schedlab calibrate`'s probes, interleaved in rounds as
//! calibrate runs them: how a probe moves from round to round, which calibrate reduces to a
//! median and its interval.
//!
//! Usage: `cargo run --release -p schedlab-real --example probe_rounds -- ROUNDS BATCH_MS
//! PROBE...`, PROBE a name of `schedlab_real::calibrate::Probe` (e.g. `LineTransfer`,
//! `PipeColdLessHot`); ROUNDS 1..=1000, BATCH_MS 1..=1000. One line a round: the round, then
//! each probe's ns per operation; then per probe the min, median and max.

use schedlab_real::calibrate::{sample, Probe, ProbeSite};
use std::time::Duration;

fn main() {
    if let Err(e) = run() {
        eprintln!("probe_rounds: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: probe_rounds ROUNDS BATCH_MS PROBE...";
    let [rounds, batch, names @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let whole = |what: &str, v: &str| -> Result<u64, String> {
        v.parse()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| format!("{what} '{v}' is not accepted; use 1..1000"))
    };
    let rounds = whole("ROUNDS", rounds)?;
    let batch = Duration::from_millis(whole("BATCH_MS", batch)?);
    if names.is_empty() {
        return Err(usage.into());
    }
    let probes = names
        .iter()
        .map(|n| {
            Probe::ALL
                .into_iter()
                .find(|p| format!("{p:?}") == *n)
                .ok_or_else(|| {
                    let all: Vec<String> = Probe::ALL.iter().map(|p| format!("{p:?}")).collect();
                    format!("probe '{n}' is not known; probes: {}", all.join(", "))
                })
        })
        .collect::<Result<Vec<Probe>, String>>()?;
    let site = ProbeSite::of_this_process().map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir();
    print!("{:>6}", "round");
    for n in names {
        print!("{n:>24}");
    }
    println!();
    let mut all: Vec<Vec<f64>> = vec![Vec::new(); probes.len()];
    for round in 1..=rounds {
        print!("{round:>6}");
        for (i, p) in probes.iter().enumerate() {
            match sample(*p, &site, &dir, batch) {
                Ok(ns) => {
                    all[i].push(ns);
                    print!("{ns:>24.1}");
                }
                Err(e) => print!("{:>24}", format!("error: {e}")),
            }
        }
        println!();
    }
    for (n, v) in names.iter().zip(&mut all) {
        v.sort_unstable_by(f64::total_cmp);
        if let (Some(lo), Some(hi)) = (v.first(), v.last()) {
            println!(
                "{n}: min {lo:.1}, median {:.1}, max {hi:.1} ns over {} rounds of {} ms",
                v[v.len() / 2],
                v.len(),
                batch.as_millis()
            );
        }
    }
    Ok(())
}
