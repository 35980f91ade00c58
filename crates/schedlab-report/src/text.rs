//! The summary printed after a run: per configuration, each metric's N, mean, SD, min, median
//! and max, then the scheduler counters per task group (means per repetition).
//!
//! With `--locks`, each lock's statistics follow ([`lock_tables`]) in the layout of lockmeter's
//! output as Sarma quoted it for the dcache_lock (LKML 2002-07-12, seeds/003): `UTIL` held time
//! over elapsed, `CON` the share of acquisitions that waited, `HOLD MEAN(MAX)` over all
//! acquisitions, `WAIT MEAN(MAX)` over those that waited, `(% CPU)` spinning time over the
//! machine's CPU time (elapsed × CPUs: the dcache_lock's 23 µs × 20.8 % × 5215460 is 4.4 % of 8
//! CPUs × the 70 s its 15.7 % utilisation implies), `TOTAL`, `NOWAIT`/`SPIN` and `RJECT`.

use crate::table::{num, Table};
use schedlab_workload::record::{
    Better, ConfigResult, Counters, CumulativeComputes, LockStats, RunRecord, KERNEL_GROUP,
};
use std::collections::BTreeMap;

/// The whole summary of a record.
pub fn summary(record: &RunRecord) -> String {
    if let Some(mut out) = crate::seed::own_tables(record, None) {
        // The workload's own tables (interbench's); the full summaries are in the record.
        if record.interrupted {
            out.push_str("(interrupted: only the repetitions that finished are shown)\n");
        }
        return out;
    }
    let mut out = String::new();
    if record.configs.len() > 1 {
        out.push_str(&matrix(record));
        out.push('\n');
    }
    for config in &record.configs {
        if record.configs.len() > 1 {
            out.push_str(&format!("== {} ==\n", config.label));
        }
        out.push_str(&metrics_table(record, config));
        out.push('\n');
        out.push_str(&counters_table(config));
        out.push('\n');
    }
    if let Some(table) = crate::seed::seed_table(record, &[]) {
        out.push_str(&table);
        out.push('\n');
    }
    if record.interrupted {
        out.push_str("(interrupted: only the repetitions that finished are shown)\n");
    }
    out
}

/// One row per configuration, one column per metric (mean ± SD): the shape of a sweep table.
pub fn matrix(record: &RunRecord) -> String {
    let mut header = vec!["config".to_string()];
    header.extend(
        record
            .metrics
            .iter()
            .map(|m| format!("{} ({})", m.name, m.unit)),
    );
    let mut t = Table::new(header);
    for c in &record.configs {
        let mut row = vec![c.label.clone()];
        for m in &record.metrics {
            row.push(match c.summary.get(&m.name) {
                Some(s) if s.n > 1 => format!("{} ± {}", num(s.mean), num(s.sd)),
                Some(s) => num(s.mean),
                None => "-".into(),
            });
        }
        t.row(row);
    }
    t.render()
}

/// Per-metric summary of one configuration.
pub fn metrics_table(record: &RunRecord, config: &ConfigResult) -> String {
    let ci_title = format!("±CI{}", record.level);
    let mut t = Table::new([
        "metric",
        "unit",
        "N",
        "mean",
        ci_title.as_str(),
        "SD",
        "min",
        "median",
        "max",
        "hmean",
    ]);
    let mut notes = Vec::new();
    for m in &record.metrics {
        let Some(s) = config.summary.get(&m.name) else {
            continue;
        };
        let iv = config.intervals.get(&m.name);
        let hmean = match (m.better, iv.and_then(|i| i.harmonic_mean)) {
            (Better::Higher, Some(h)) if s.n > 1 => num(h),
            _ => "-".into(),
        };
        t.row([
            m.name.clone(),
            m.unit.clone(),
            s.n.to_string(),
            num(s.mean),
            iv.and_then(|i| i.half_width).map_or("-".into(), num),
            num(s.sd),
            num(s.min),
            num(s.median),
            num(s.max),
            hmean,
        ]);
        let is_primary = record.metrics.first().is_some_and(|p| p.name == m.name);
        // Older records may flag outliers among fewer repetitions than are judged now.
        let judged = s.n >= schedlab_stats::MIN_OUTLIER_N;
        if let Some(iv) = iv.filter(|i| is_primary && judged && !i.outliers.is_empty()) {
            let runs: Vec<String> = iv.outliers.iter().map(|i| (i + 1).to_string()).collect();
            notes.push(format!(
                "outlier: {} of run {} (modified z-score > 3.5; kept)",
                m.name,
                runs.join(", ")
            ));
        }
    }
    let mut out = t.render();
    if config.summary.values().any(|s| s.n > 1) {
        out.push_str(&format!("±CI{}: half-width of the {}% confidence interval of the mean; hmean: harmonic mean, the right mean for rates\n", record.level, record.level));
    }
    match config.converged {
        Some(false) => out.push_str(&format!(
            "did not converge: the {} interval is still wider than {} after {} runs\n",
            record.metrics.first().map_or("", |m| m.name.as_str()),
            record.until.as_deref().unwrap_or("the precision"),
            config.repetitions.len()
        )),
        Some(true) => out.push_str(&format!(
            "converged ({}) after {} runs\n",
            record.until.as_deref().unwrap_or(""),
            config.repetitions.len()
        )),
        None => {}
    }
    for n in notes {
        out.push_str(&n);
        out.push('\n');
    }
    out
}

/// The share of the workload's compute time run off its tasks' memory nodes (a simulated
/// machine with sockets), or nothing.
fn remote_line(config: &ConfigResult) -> String {
    let mut total = Counters::default();
    for r in &config.repetitions {
        if let Some(c) = r.counters.get("total") {
            total.add(c);
        }
    }
    match (total.remote_compute_percent(), total.compute_s) {
        (Some(p), Some(c)) => format!(
            "remote memory: {p:.1} % of the workload's compute time ({:.3} of {:.3} s per repetition) ran off its task's memory node (first touch)\n",
            total.remote_compute_s.unwrap_or(0.0) / config.repetitions.len().max(1) as f64,
            c / config.repetitions.len().max(1) as f64,
        ),
        _ => String::new(),
    }
}

/// A group whose tasks used more than this share beyond their cumulative computes' sum is
/// named under the counters table: the ±5 % a recorded program's replay aims at.
const BEYOND_SHARE: f64 = 0.05;

/// The groups of a file with cumulative computes (a recorded program's, on the real kernel)
/// whose tasks used more CPU time than their computes' sum by more than [`BEYOND_SHARE`]: by
/// how much, and how many computes found a task already past its sum (its other steps cost
/// more than the computes before them left them, so it could not be brought back to it).
fn cumulative_lines(config: &ConfigResult) -> String {
    let mut per_group: BTreeMap<&str, CumulativeComputes> = BTreeMap::new();
    for r in &config.repetitions {
        for (g, c) in &r.counters {
            if let (false, Some(cc)) = (g == "total", c.cumulative) {
                per_group.entry(g).or_default().add(&cc);
            }
        }
    }
    let mut out = String::new();
    for (g, c) in per_group {
        if c.computes == 0 || c.beyond_s <= BEYOND_SHARE * c.sum_s {
            continue;
        }
        let used = c.sum_s + c.beyond_s;
        out.push_str(&format!(
            "cumulative computes: {g} used {:+.1} % beyond its computes' sum ({:.1} µs of CPU time a compute, {:.1} µs asked); {} of {} computes found a task already past its sum: its other steps (sleeps, waits, messages, clock reads) cost more than its computes left them\n",
            100.0 * c.beyond_s / c.sum_s.max(f64::MIN_POSITIVE),
            1e6 * used / c.computes as f64,
            1e6 * c.sum_s / c.computes as f64,
            c.past,
            c.computes,
        ));
    }
    out
}

/// Counters per group: mean per repetition of switches, migrations, wakeups, and the share of
/// wakeups that preempted the running task; then where they came from and what they cover
/// ([`counters_notes`]).
pub fn counters_table(config: &ConfigResult) -> String {
    let mut out = counters_grid(config).render();
    for line in counters_notes(config) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The counters table's cells (a header and a row per group, `total`, and the kernel's
/// threads), for the text table and the report's HTML one.
pub fn counters_grid(config: &ConfigResult) -> Table {
    let reps = config.repetitions.len().max(1) as f64;
    let mut names: Vec<&String> = config.groups.iter().map(|g| &g.name).collect();
    let total = "total".to_string();
    if config.groups.len() > 1 {
        names.push(&total);
    }
    // The simulator's kernel threads (FreeBSD's netisr), outside the workload's total.
    let kernel = KERNEL_GROUP.to_string();
    if config
        .repetitions
        .iter()
        .any(|r| r.counters.contains_key(KERNEL_GROUP))
    {
        names.push(&kernel);
    }
    let mut t = Table::new([
        "group",
        "knobs",
        "vol. switches",
        "invol. switches",
        "migrations",
        "wakeups",
        "% wakeup preempt",
        "CPU s",
    ]);
    for name in names {
        let mut sum = Counters::default();
        for r in &config.repetitions {
            if let Some(c) = r.counters.get(name) {
                sum.add(c);
            }
        }
        let mean = |v: Option<u64>| v.map_or("-".to_string(), |v| num(v as f64 / reps));
        let knobs = config
            .groups
            .iter()
            .find(|g| &g.name == name)
            .map_or(String::new(), |g| g.knobs.to_string());
        let knobs = if name == KERNEL_GROUP {
            "kernel threads, not in total".to_string()
        } else {
            knobs
        };
        t.row([
            name.clone(),
            knobs,
            mean(sum.voluntary_switches),
            mean(sum.involuntary_switches),
            mean(sum.migrations),
            mean(sum.wakeups),
            sum.preemption_percent()
                .map_or("-".into(), |p| format!("{p:.1}")),
            num(sum.cpu_time_s / reps),
        ]);
    }
    t
}

/// The lines under the counters table: the counters' sources, dropped trace events, remote
/// memory and the simulated CPUs' busy shares (each without its newline).
pub fn counters_notes(config: &ConfigResult) -> Vec<String> {
    let mut out = String::new();
    let lost: u64 = config.repetitions.iter().map(|r| r.lost_events).sum();
    // A configuration interrupted before its first repetition has no sources: say so rather
    // than "switches from ; migrations from ;".
    let sources: Vec<String> = [
        ("switches", &config.counter_sources.switches),
        ("migrations", &config.counter_sources.migrations),
        ("wakeups", &config.counter_sources.wakeups),
    ]
    .iter()
    .filter(|(_, from)| !from.is_empty())
    .map(|(what, from)| format!("{what} from {from}"))
    .collect();
    if sources.is_empty() {
        out.push_str("counters: none (no repetition finished)\n");
    } else {
        out.push_str(&format!("counters: {}\n", sources.join("; ")));
    }
    if lost > 0 {
        out.push_str(&format!(
            "warning: the kernel dropped {lost} trace events; wakeup counts are lower bounds\n"
        ));
    }
    out.push_str(&remote_line(config));
    out.push_str(&cumulative_lines(config));
    out.push_str(&cpu_line(config));
    out.lines().map(str::to_string).collect()
}

/// Past this many simulated CPUs the CPU line gives the lowest, mean and highest CPU instead of
/// one cell per CPU (the record keeps every CPU).
const CPU_CELLS_MAX: usize = 64;

/// Simulated CPUs: busy share and mean runnable tasks per CPU, averaged over repetitions; on a
/// machine of more than [`CPU_CELLS_MAX`] CPUs, the lowest, mean and highest of each.
fn cpu_line(config: &ConfigResult) -> String {
    let reps: Vec<_> = config
        .repetitions
        .iter()
        .filter(|r| !r.cpus.is_empty())
        .collect();
    let Some(first) = reps.first() else {
        return String::new();
    };
    let n = reps.len() as f64;
    let per_cpu: Vec<(f64, f64)> = (0..first.cpus.len())
        .map(|cpu| {
            let (mut busy, mut runnable) = (0.0, 0.0);
            for r in &reps {
                let c = &r.cpus[cpu];
                busy += c.busy_s / (c.busy_s + c.idle_s).max(f64::MIN_POSITIVE);
                runnable += c.mean_runnable;
            }
            (100.0 * busy / n, runnable / n)
        })
        .collect();
    let cell = |(busy, runnable): (f64, f64)| format!("{busy:.0}%/{runnable:.1}");
    if per_cpu.len() > CPU_CELLS_MAX {
        let pick = |f: fn(f64, f64) -> f64, init: f64| {
            let busy = per_cpu.iter().map(|c| c.0).fold(init, f);
            let runnable = per_cpu.iter().map(|c| c.1).fold(init, f);
            (busy, runnable)
        };
        let len = per_cpu.len() as f64;
        let mean = (
            per_cpu.iter().map(|c| c.0).sum::<f64>() / len,
            per_cpu.iter().map(|c| c.1).sum::<f64>() / len,
        );
        return format!(
            "simulated CPUs (busy / mean runnable), {} CPUs: lowest {}  mean {}  highest {}\n",
            per_cpu.len(),
            cell(pick(f64::min, f64::INFINITY)),
            cell(mean),
            cell(pick(f64::max, f64::NEG_INFINITY))
        );
    }
    let cells: Vec<String> = per_cpu.into_iter().map(cell).collect();
    format!(
        "simulated CPUs (busy / mean runnable): {}\n",
        cells.join("  ")
    )
}

/// The lock tables of a record (`schedlab run --locks`), per configuration, in the layout of
/// lockmeter's output (Sarma's dcache measurements, seeds/003: `SPINLOCKS HOLD WAIT / UTIL CON
/// MEAN( MAX ) MEAN( MAX )(% CPU) TOTAL NOWAIT SPIN RJECT NAME`). Each lock's statistics are
/// pooled over the repetitions (counts and times add, maxima are the largest). Spin locks —
/// the workload's and, on the simulator, the kernel's — come under `SPINLOCKS`, sleeping locks
/// under `SLEEPING LOCKS` with the same columns (their `SPIN` is the share that slept, and they
/// spend no CPU waiting). With no lock measured, one line says so.
pub fn lock_tables(record: &RunRecord) -> String {
    let mut out = String::new();
    let measured =
        (record.configs.iter()).any(|c| c.repetitions.iter().any(|r| !r.locks.is_empty()));
    if !measured {
        return "locks: none measured (the workload has no locks of its own, and only the simulator models the kernel's)\n".into();
    }
    for config in &record.configs {
        let locks = pooled_locks(config);
        if locks.is_empty() {
            continue;
        }
        if record.configs.len() > 1 {
            out.push_str(&format!("== {} ==\n", config.label));
        }
        let (spin, sleep): (Vec<&LockStats>, Vec<&LockStats>) =
            locks.iter().partition(|l| l.kind == "spin");
        for (title, group) in [("SPINLOCKS", spin), ("SLEEPING LOCKS", sleep)] {
            if group.is_empty() {
                continue;
            }
            out.push_str(&lockmeter_table(title, &group));
            out.push('\n');
        }
    }
    out
}

/// Each lock of a configuration pooled over its repetitions, in the order they first appear.
fn pooled_locks(config: &ConfigResult) -> Vec<LockStats> {
    let mut pooled: Vec<LockStats> = Vec::new();
    for rep in &config.repetitions {
        for l in &rep.locks {
            match pooled
                .iter_mut()
                .find(|p| p.name == l.name && p.kernel == l.kernel)
            {
                Some(p) => p.add(l),
                None => pooled.push(l.clone()),
            }
        }
    }
    pooled
}

/// One lockmeter table: its two header lines and a line per lock.
pub fn lockmeter_table(title: &str, locks: &[&LockStats]) -> String {
    let mut out = format!("{title:<14}{:^15}{:^22}", "HOLD", "WAIT")
        .trim_end()
        .to_string();
    out.push('\n');
    out.push_str(&format!(
        "{:>7}{:>7}{:>7}({:>5} ){:>7}({:>5} )({:>5}){:>10}{:>7}{:>7}{:>6}  NAME\n",
        "UTIL", "CON", "MEAN", "MAX", "MEAN", "MAX", "% CPU", "TOTAL", "NOWAIT", "SPIN", "RJECT"
    ));
    for l in locks {
        out.push_str(&lockmeter_line(l));
        out.push('\n');
    }
    out
}

/// One lock's line: utilisation, contention, hold mean (max), wait mean (max) of the
/// acquisitions that waited, the CPU share spent spinning, acquisitions, the shares that did
/// not and did wait, rejections (always 0: there is no trylock), the name.
pub fn lockmeter_line(l: &LockStats) -> String {
    let con = l.contention() * 100.0;
    format!(
        "{:>7}{:>7}{:>7}({:>6}){:>7}({:>6})({:>5}){:>10}{:>7}{:>7}{:>6}  {}",
        lock_percent(l.utilisation() * 100.0),
        lock_percent(con),
        lock_time(l.hold_mean_ns()),
        lock_time(l.hold_max_ns as f64),
        lock_time(l.wait_mean_ns()),
        lock_time(l.wait_max_ns as f64),
        lock_percent(l.spin_share() * 100.0),
        l.acquisitions,
        lock_percent(if l.acquisitions == 0 {
            0.0
        } else {
            100.0 - con
        }),
        lock_percent(con),
        "0%",
        l.name
    )
}

/// A percentage as lockmeter prints it: `0%` and `100%` bare, two decimals below 1 (`0.20%`),
/// one above (`4.4%`, `20.8%`).
pub fn lock_percent(p: f64) -> String {
    if p <= 0.0 {
        return "0%".into();
    }
    let text = if p < 0.995 {
        format!("{p:.2}%")
    } else {
        format!("{p:.1}%")
    };
    if text == "100.0%" {
        "100%".into()
    } else {
        text
    }
}

/// A time as lockmeter prints it: one decimal below 10 µs (`2.1us`), whole microseconds below
/// 10 ms (`6668us`), whole milliseconds below 10 s (`14ms`), whole seconds beyond.
pub fn lock_time(ns: f64) -> String {
    let us = ns / 1e3;
    if us < 9.95 {
        format!("{us:.1}us")
    } else if us < 9999.5 {
        format!("{us:.0}us")
    } else if us < 9_999_500.0 {
        format!("{:.0}ms", us / 1e3)
    } else {
        format!("{:.0}s", us / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::record::CounterSources;

    #[test]
    fn an_interrupted_configuration_says_it_has_no_counters() {
        let config = ConfigResult::default();
        let text = counters_table(&config);
        assert!(!text.contains("switches from ;"), "{text}");
        assert!(
            text.contains("counters: none (no repetition finished)"),
            "{text}"
        );
        let config = ConfigResult {
            counter_sources: CounterSources {
                switches: "sim".into(),
                migrations: "sim".into(),
                wakeups: "sim".into(),
            },
            ..ConfigResult::default()
        };
        assert!(counters_table(&config)
            .contains("counters: switches from sim; migrations from sim; wakeups from sim\n"));
    }

    /// A group more than 5 % beyond its cumulative computes' sum is named with the figures of
    /// every repetition summed; one within 5 %, and a file without cumulative computes, is not.
    #[test]
    fn groups_beyond_their_cumulative_computes_are_named() {
        let rep = |beyond_s: f64| {
            let counters = |beyond_s: f64, past: u64| Counters {
                cpu_time_s: 0.024 + beyond_s,
                cumulative: Some(CumulativeComputes {
                    sum_s: 0.024,
                    beyond_s,
                    computes: 2000,
                    past,
                }),
                ..Counters::default()
            };
            schedlab_workload::record::Repetition {
                counters: BTreeMap::from([
                    ("measure".to_string(), counters(beyond_s, 1990)),
                    ("main".to_string(), counters(0.0006, 3)),
                    ("total".to_string(), counters(beyond_s + 0.0006, 1993)),
                ]),
                ..Default::default()
            }
        };
        let config = ConfigResult {
            repetitions: vec![rep(0.004), rep(0.002)],
            ..ConfigResult::default()
        };
        assert_eq!(
            cumulative_lines(&config),
            "cumulative computes: measure used +12.5 % beyond its computes' sum (13.5 µs of CPU time a compute, 12.0 µs asked); 3980 of 4000 computes found a task already past its sum: its other steps (sleeps, waits, messages, clock reads) cost more than its computes left them\n"
        );
        assert_eq!(cumulative_lines(&ConfigResult::default()), "");
    }

    /// Up to 64 CPUs one cell each; past that the lowest, mean and highest (each column apart).
    #[test]
    fn the_cpu_line_summarises_machines_past_64_cpus() {
        let config = |cpus: usize| {
            let cpus = (0..cpus)
                .map(|c| schedlab_workload::record::CpuCounters {
                    busy_s: if c == 0 { 0.25 } else { 1.0 },
                    idle_s: if c == 0 { 0.75 } else { 0.0 },
                    mean_runnable: c as f64,
                    max_runnable: c,
                })
                .collect();
            ConfigResult {
                repetitions: vec![schedlab_workload::record::Repetition {
                    cpus,
                    ..Default::default()
                }],
                ..ConfigResult::default()
            }
        };
        assert_eq!(
            cpu_line(&config(2)),
            "simulated CPUs (busy / mean runnable): 25%/0.0  100%/1.0\n"
        );
        assert_eq!(cpu_line(&config(64)).matches('%').count(), 64);
        assert_eq!(
            cpu_line(&config(100)),
            "simulated CPUs (busy / mean runnable), 100 CPUs: lowest 25%/0.0  mean 99%/49.5  highest 100%/99.0\n"
        );
    }

    #[test]
    fn lock_tables_reproduce_lockmeters_columns_and_numbers() {
        // Sarma's dcache_lock line (seeds/003), rebuilt from its own numbers: 5215460
        // acquisitions, 20.8 % of them waited, 2.1 µs mean hold (max 6668 µs), 23 µs mean wait
        // (max 14 ms; 22.6 µs before rounding), 15.7 % utilisation and 4.4 % of 8 CPUs spinning.
        let elapsed = 69_764_000_000u64;
        let waited = 1_084_816u64;
        let l = schedlab_workload::record::LockStats {
            name: "dcache_lock".into(),
            kind: "spin".into(),
            kernel: true,
            acquisitions: 5_215_460,
            waited,
            hold_ns: 5_215_460 * 2_100,
            hold_max_ns: 6_668_000,
            wait_ns: waited * 22_600,
            wait_max_ns: 14_000_000,
            spin_ns: waited * 22_600,
            elapsed_ns: elapsed,
            cpu_ns: elapsed * 8,
        };
        let table = lockmeter_table("SPINLOCKS", &[&l]);
        let lines: Vec<&str> = table.lines().collect();
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        // Lockmeter's words, in its order (the seed's text has lost its spacing).
        assert_eq!(words(lines[0]), "SPINLOCKS HOLD WAIT");
        assert_eq!(
            words(lines[1]),
            "UTIL CON MEAN( MAX ) MEAN( MAX )(% CPU) TOTAL NOWAIT SPIN RJECT NAME"
        );
        assert_eq!(
            words(lines[2]),
            "15.7% 20.8% 2.1us(6668us) 23us( 14ms)( 4.4%) 5215460 79.2% 20.8% 0% dcache_lock"
        );
        // The columns line up: each header word ends where its values end.
        let end_of = |line: &str, w: &str| line.find(w).map(|i| i + w.len());
        assert_eq!(end_of(lines[1], "TOTAL"), end_of(lines[2], "5215460"));
        assert_eq!(end_of(lines[1], "UTIL"), end_of(lines[2], "15.7%"));
        assert_eq!(lines[1].find("NAME"), lines[2].find("dcache_lock"));
        assert_eq!(lock_percent(0.2), "0.20%");
        assert_eq!(lock_time(3_343_000.0), "3343us");
        assert_eq!(lock_time(30_000_000.0), "30ms");
        assert_eq!(lock_time(7_000.0), "7.0us");
    }

    #[test]
    fn lock_tables_pool_repetitions_and_split_spin_from_sleep() {
        use schedlab_workload::record::{LockStats, Repetition};
        let l = |name: &str, kind: &str, acq: u64, hold: u64| LockStats {
            name: name.into(),
            kind: kind.into(),
            acquisitions: acq,
            hold_ns: hold,
            hold_max_ns: hold,
            elapsed_ns: 1_000_000,
            cpu_ns: 2_000_000,
            ..LockStats::default()
        };
        let rep = |h: u64| Repetition {
            locks: vec![l("m", "sleep", 1, h), l("rq[0]", "spin", 2, h)],
            ..Repetition::default()
        };
        let config = ConfigResult {
            repetitions: vec![rep(100_000), rep(300_000)],
            ..ConfigResult::default()
        };
        let pooled = pooled_locks(&config);
        assert_eq!(pooled.len(), 2);
        assert_eq!(pooled[0].acquisitions, 2);
        assert_eq!(pooled[0].hold_ns, 400_000);
        assert_eq!(pooled[0].hold_max_ns, 300_000);
        assert_eq!(pooled[0].elapsed_ns, 2_000_000);
        assert_eq!(pooled[0].utilisation(), 0.2);
    }
}
