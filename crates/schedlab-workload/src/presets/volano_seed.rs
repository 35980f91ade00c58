//! The `volano` sweep judged against seed 000's VolanoMark figures: Bill Hartner, "[PATCH]
//! [PERFORMANCE RESULTS] priority preemption in Linux" (LKML, October 2002) — VolanoMark 2.1.2
//! in loopback mode, messages=1000, rooms=10, on 2.5.25 booted uniprocessor (Tables 1 and 2:
//! server and client nice levels, preemption threshold 0 and 40) and 8-way ("a 5% increase in
//! throughput when preemption threshold was set to 40").
//!
//! A simulated row is compared with the seed row of the same nice levels and threshold, by the
//! bands seed 000's fidelity check uses:
//! - **throughput** relative to the default row (nice 0/0, threshold 0) of the same sweep: the
//!   same direction as the seed's change; within 2× of it for the rows the seed marks `***` and
//!   for the 8-way gain. A change under [`LEVEL`] counts as level, as the seed's single runs
//!   cannot tell one that small from their own spread; level agrees with level.
//! - **calls to wake_up** within ±30 % of the seed's, after scaling the simulated count (per
//!   repetition) to the seed's messages and rooms (wakeups are counted per message sent; rows
//!   with another room size are not compared).
//! - **% priority preemptions** within ±10 points.
//!
//! Only the O(1) policy is compared (the seed's kernel): a threshold absent from its parameters
//! is the default 0. On 1 CPU every row of Tables 1 and 2 has a seed row; on 8 CPUs only the
//! default nice levels (the seed does not say which it ran) at threshold 40 have one, judged by
//! throughput alone.

use crate::record::{ConfigResult, Counters, KERNEL_GROUP};
use crate::table::Table;

/// One row of seed 000's Tables 1 and 2.
#[derive(Clone, Copy, Debug, PartialEq)]
struct SeedRow {
    server: i32,
    client: i32,
    threshold: u32,
    msgs: f64,
    /// Calls to wake_up.
    wakeups: f64,
    /// % priority preemptions.
    preempt: f64,
    /// Marked `***` in the seed: its size is judged too.
    marked: bool,
}

const fn row(
    server: i32,
    client: i32,
    threshold: u32,
    msgs: f64,
    wakeups_m: f64,
    preempt: f64,
    marked: bool,
) -> SeedRow {
    SeedRow {
        server,
        client,
        threshold,
        msgs,
        wakeups: wakeups_m * 1e6,
        preempt,
        marked,
    }
}

/// Tables 1 (threshold 0) and 2 (threshold 40), 2.5.25 uniprocessor, in the seed's order.
const UP: [SeedRow; 18] = [
    row(0, 0, 0, 13183.0, 3.49, 28.4, false),
    row(0, -19, 0, 13881.0, 4.42, 86.6, true),
    row(0, 19, 0, 10553.0, 5.52, 10.5, false),
    row(19, 0, 0, 13508.0, 4.06, 82.9, true),
    row(19, -19, 0, 13669.0, 4.06, 83.0, true),
    row(19, 19, 0, 11694.0, 3.42, 21.5, false),
    row(-19, 0, 0, 12107.0, 5.54, 10.7, false),
    row(-19, -19, 0, 13109.0, 3.55, 28.7, false),
    row(-19, 19, 0, 10516.0, 5.51, 10.4, false),
    row(0, 0, 40, 13605.0, 3.22, 0.0, false),
    row(0, -19, 40, 18740.0, 1.67, 0.0, true),
    row(0, 19, 40, 10716.0, 5.35, 0.0, false),
    row(19, 0, 40, 16548.0, 2.01, 0.0, true),
    row(19, -19, 40, 16885.0, 2.00, 0.0, true),
    row(19, 19, 40, 11889.0, 3.15, 0.0, false),
    row(-19, 0, 40, 12254.0, 5.36, 0.0, false),
    row(-19, -19, 40, 13574.0, 3.24, 0.0, false),
    row(-19, 19, 40, 10649.0, 5.35, 0.0, false),
];

/// The 8-way test's gain at threshold 40 over threshold 0.
const EIGHT_WAY_GAIN: f64 = 0.05;
/// The seed's VolanoMark run: messages per user, rooms, users per room.
const SEED_MESSAGES: f64 = 1000.0;
const SEED_ROOMS: f64 = 10.0;
const SEED_USERS: &str = "20";
/// Changes of throughput smaller than this (1 %) count as level.
const LEVEL: f64 = 0.01;
/// Wakeups agree within this share of the seed's count.
const WAKEUP_BAND: f64 = 0.30;
/// Priority preemptions agree within this many percentage points.
const PREEMPT_BAND: f64 = 10.0;

/// What a simulated configuration is, as far as the seed's rows go.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    cpus: u32,
    /// The policy without its threshold (`o1:yield=2.5.25`), so that a row's baseline is the
    /// same policy at threshold 0.
    policy_rest: String,
    threshold: u32,
    server: i32,
    client: i32,
}

/// The point of `c`, when it ran on the simulator under O(1).
fn point(c: &ConfigResult) -> Option<Point> {
    let machine = c.machine.as_deref()?;
    let mut parts = machine.split(", ");
    let policy = parts.next()?;
    let cpus = parts.next()?.split(' ').next()?.parse().ok()?;
    let (name, params) = policy.split_once(':').unwrap_or((policy, ""));
    if name != "o1" {
        return None;
    }
    let mut threshold = 0;
    let mut rest = Vec::new();
    for p in params.split(',').filter(|p| !p.is_empty()) {
        match p.strip_prefix("threshold=") {
            Some(v) => threshold = v.parse().ok()?,
            None => rest.push(p),
        }
    }
    let nice =
        |g: &str| (c.groups.iter().find(|x| x.name == g)).map_or(0, |x| x.knobs.nice.unwrap_or(0));
    Some(Point {
        cpus,
        policy_rest: rest.join(","),
        threshold,
        server: nice("server"),
        client: nice("client"),
    })
}

/// The counters of `c`'s tasks and of the machine's kernel threads (ksoftirqd under o1's
/// `softirq=2.5.25`), summed over its repetitions: the seed counted every call of
/// `try_to_wake_up`, whoever it woke.
pub(super) fn counted(c: &ConfigResult) -> Counters {
    let mut total = Counters::default();
    for r in &c.repetitions {
        for group in ["total", KERNEL_GROUP] {
            if let Some(tc) = r.counters.get(group) {
                total.add(tc);
            }
        }
    }
    total
}

/// Mean calls to wake_up per repetition and % priority preemptions (see [`counted`]).
fn counters(c: &ConfigResult) -> (Option<f64>, Option<f64>) {
    let total = counted(c);
    let reps = c.repetitions.len().max(1) as f64;
    (
        total.wakeups.map(|w| w as f64 / reps),
        total.preemption_percent(),
    )
}

/// Why a throughput change disagrees with the seed's, if it does: `direction` (the other way,
/// or level against a change), or `size` (outside 2× of the seed's, when `sized`).
fn throughput_miss(seed: f64, sim: f64, sized: bool) -> Option<&'static str> {
    let dir = |x: f64| {
        if x.abs() < LEVEL {
            0
        } else if x > 0.0 {
            1
        } else {
            -1
        }
    };
    if dir(seed) != dir(sim) {
        return Some("direction");
    }
    let ratio = sim / seed;
    if sized && dir(seed) != 0 && !(0.5..=2.0).contains(&ratio) {
        return Some("size");
    }
    None
}

/// Whether a scaled wakeup count is within the band of the seed's.
fn wakeups_agree(seed: f64, sim: f64) -> bool {
    (sim / seed - 1.0).abs() <= WAKEUP_BAND
}

/// Whether a share of priority preemptions is within the band of the seed's.
fn preempt_agrees(seed: f64, sim: f64) -> bool {
    (sim - seed).abs() <= PREEMPT_BAND
}

fn percent(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

/// The rows of `rows` that have a seed row, side by side with it, with a verdict per row and a
/// count per criterion; empty when none has one. `extra` are the sweep's varied keys besides
/// policy and nice levels: a row's baseline has the same values of them.
pub(crate) fn comparison(rows: &[&ConfigResult], extra: &[&String]) -> String {
    let points: Vec<Option<Point>> = rows.iter().map(|c| point(c)).collect();
    let extras =
        |c: &ConfigResult| -> Vec<String> { extra.iter().map(|k| c.key_value(k)).collect() };
    let mut header: Vec<String> = ["Srvr Nice", "Clnt Nice", "threshold", "CPUs"]
        .map(String::from)
        .to_vec();
    header.extend(extra.iter().map(|k| k.to_string()));
    header.extend(
        [
            "seed msg/s vs default",
            "sim",
            "seed wake_up",
            "sim (scaled)",
            "seed % preempt",
            "sim",
            "verdict",
        ]
        .map(String::from),
    );
    let mut t = Table::new(header);
    // (judged, agreed) per criterion: throughput, wakeups, preemptions; and whole rows.
    let mut tally = [(0, 0); 4];
    let mut count = |i: usize, ok: bool| {
        tally[i].0 += 1;
        if ok {
            tally[i].1 += 1;
        }
    };
    for (c, p) in rows.iter().zip(&points) {
        let Some(p) = p else { continue };
        let (seed, seed_base) = match p.cpus {
            1 => {
                let Some(s) = UP.iter().find(|s| {
                    (s.server, s.client, s.threshold) == (p.server, p.client, p.threshold)
                }) else {
                    continue;
                };
                (Some(*s), UP[0].msgs)
            }
            8 if (p.server, p.client, p.threshold) == (0, 0, 40) => (None, 0.0),
            _ => continue,
        };
        let base = rows.iter().zip(&points).find(|(b, bp)| {
            bp.as_ref().is_some_and(|bp| {
                bp.cpus == p.cpus
                    && bp.policy_rest == p.policy_rest
                    && (bp.server, bp.client, bp.threshold) == (0, 0, 0)
            }) && extras(b) == extras(c)
        });
        let sim_msgs = c.summary.get("msgs_per_s").map(|s| s.mean);
        let base_msgs = base.and_then(|(b, _)| b.summary.get("msgs_per_s").map(|s| s.mean));
        let is_base = base.is_some_and(|(b, _)| std::ptr::eq(*b, *c));
        let seed_change = match seed {
            Some(s) => s.msgs / seed_base - 1.0,
            None => EIGHT_WAY_GAIN,
        };
        let sim_change = match (sim_msgs, base_msgs) {
            (Some(m), Some(b)) if b > 0.0 => Some(m / b - 1.0),
            _ => None,
        };
        let mut misses = Vec::new();
        let (seed_thr, sim_thr) = if is_base {
            ("baseline".to_string(), "baseline".to_string())
        } else {
            if let Some(sim) = sim_change {
                let sized = seed.is_none_or(|s| s.marked);
                let miss = throughput_miss(seed_change, sim, sized);
                count(0, miss.is_none());
                misses.extend(miss);
            }
            (percent(seed_change), sim_change.map_or("-".into(), percent))
        };
        let (wakeups, preempt) = counters(c);
        let mut cells = vec!["-".to_string(); 4];
        if let Some(s) = seed {
            cells[0] = super::seed000::count_suffix(s.wakeups);
            cells[2] = format!("{:.1} %", s.preempt);
            let messages = c.params.get("messages").and_then(|m| m.parse::<f64>().ok());
            let rooms = c.params.get("rooms").and_then(|m| m.parse::<f64>().ok());
            let same_rooms = c.params.get("users").map(String::as_str) == Some(SEED_USERS);
            if let (Some(w), Some(m), Some(r), true) = (wakeups, messages, rooms, same_rooms) {
                let scaled = w * SEED_MESSAGES / m * SEED_ROOMS / r;
                cells[1] = super::seed000::count_suffix(scaled);
                let ok = wakeups_agree(s.wakeups, scaled);
                count(1, ok);
                if !ok {
                    misses.push("wake_up");
                }
            }
            if let Some(pp) = preempt {
                cells[3] = format!("{pp:.1} %");
                let ok = preempt_agrees(s.preempt, pp);
                count(2, ok);
                if !ok {
                    misses.push("preemptions");
                }
            }
        }
        count(3, misses.is_empty());
        let verdict = if misses.is_empty() {
            "agrees".to_string()
        } else {
            format!("misses {}", misses.join(", "))
        };
        let mut r = vec![
            format!("{:+}", p.server).replace("+0", "0"),
            format!("{:+}", p.client).replace("+0", "0"),
            p.threshold.to_string(),
            p.cpus.to_string(),
        ];
        r.extend(extras(c));
        r.extend([
            seed_thr,
            sim_thr,
            cells[0].clone(),
            cells[1].clone(),
            cells[2].clone(),
            cells[3].clone(),
            verdict,
        ]);
        t.row(r);
    }
    if t.rows().is_empty() {
        return String::new();
    }
    let share = |(judged, agreed): (usize, usize)| format!("{agreed} of {judged}");
    format!(
        "Against seed 000 (2.5.25: Tables 1 and 2 on 1 CPU, the 8-way +5 % on 8; sim wake_up \
         per run, scaled to messages=1000, rooms=10):\n{}\
         agrees: {} rows; throughput {} (direction, under 1 % level; within 2x where the seed \
         marks *** and on 8 CPUs), wake_up {} (within 30 %), priority preemptions {} (within \
         10 points)\n",
        t.render(),
        share(tally[3]),
        share(tally[0]),
        share(tally[1]),
        share(tally[2]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's tables as the document prints them: 18 rows, each (nice, nice, threshold)
    /// once, the default row first, the headline (0, −19, 40) at 18,740 msg/s and marked.
    #[test]
    fn the_seed_rows_are_the_tables() {
        for (i, a) in UP.iter().enumerate() {
            assert!(UP[..i]
                .iter()
                .all(|b| (a.server, a.client, a.threshold) != (b.server, b.client, b.threshold)));
        }
        assert_eq!((UP[0].server, UP[0].client, UP[0].threshold), (0, 0, 0));
        let headline = UP
            .iter()
            .find(|s| (s.server, s.client, s.threshold) == (0, -19, 40));
        assert_eq!(headline.map(|s| (s.msgs, s.marked)), Some((18740.0, true)));
        assert_eq!(UP.iter().filter(|s| s.marked).count(), 6);
        assert!(UP.iter().all(|s| s.threshold == 0 || s.preempt == 0.0));
    }

    #[test]
    fn throughput_is_judged_by_direction_then_size() {
        // The headline: +42.2 % in the seed; +25.8 % is within 2x, +15 % is not.
        assert_eq!(throughput_miss(0.422, 0.258, true), None);
        assert_eq!(throughput_miss(0.422, 0.15, true), Some("size"));
        assert_eq!(throughput_miss(0.422, 0.15, false), None);
        assert_eq!(throughput_miss(0.422, 0.9, true), Some("size"));
        assert_eq!(throughput_miss(-0.098, 0.007, false), Some("direction"));
        assert_eq!(throughput_miss(0.025, -0.009, false), Some("direction"));
        // Under 1 % is level: level agrees with level, not with a change.
        assert_eq!(throughput_miss(-0.006, 0.0001, true), None);
        assert_eq!(throughput_miss(0.032, 0.002, false), Some("direction"));
    }

    #[test]
    fn counters_are_judged_within_their_bands() {
        assert!(wakeups_agree(3.49e6, 3.49e6 * 1.29));
        assert!(!wakeups_agree(3.49e6, 3.49e6 * 1.31));
        assert!(!wakeups_agree(3.49e6, 1.11e6));
        assert!(preempt_agrees(28.4, 18.5));
        assert!(!preempt_agrees(10.4, 50.4));
    }
}
