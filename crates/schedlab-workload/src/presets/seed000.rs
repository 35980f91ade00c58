//! Seed 000's table layout, which the chat (VolanoMark) and web (SPECweb99) tables share:
//! `Srvr Nice | Clnt Nice | policy/knobs`, the sweep's other varied keys, then each table's own
//! columns.

use crate::record::ConfigResult;

/// Count with the seeds' suffixes: `3.49 M`, `812.0 K`.
pub(crate) fn count_suffix(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Seed 000's table layout: `Srvr Nice | Clnt Nice | policy/knobs`, then the sweep's other varied
/// keys (so every row names its whole configuration), then `tail`. Returns those other keys and
/// the header.
pub(crate) fn seed_header<'a>(
    varied: &'a [String],
    tail: &[&str],
) -> (Vec<&'a String>, Vec<String>) {
    let extra: Vec<&String> = varied
        .iter()
        .filter(|k| !matches!(k.as_str(), "policy" | "server.nice" | "client.nice"))
        .collect();
    let mut header: Vec<String> = ["Srvr Nice", "Clnt Nice", "policy/knobs"]
        .map(String::from)
        .to_vec();
    header.extend(extra.iter().map(|k| k.to_string()));
    header.extend(tail.iter().map(|h| h.to_string()));
    (extra, header)
}
/// A group's nice as the seed's `Srvr Nice` and `Clnt Nice` columns show it (`0`, `-5`, `19`).
pub(crate) fn nice_column(c: &ConfigResult, name: &str) -> String {
    c.groups
        .iter()
        .find(|g| g.name == name)
        .and_then(|g| g.knobs.nice)
        .map_or("0".to_string(), |n| format!("{n:+}").replace("+0", "0"))
}

/// The seeds' `policy/knobs` column: on the simulator the policy (with its preemption threshold,
/// the seed's column), then the `server` and `client` groups' knobs other than nice; `default`
/// when there is none of these.
pub(crate) fn policy_and_knobs(c: &ConfigResult) -> String {
    let mut other = Vec::new();
    if let Some(policy) = c.machine.as_deref().and_then(|m| m.split(", ").next()) {
        other.push(policy.to_string());
    }
    for name in ["server", "client"] {
        if let Some(g) = c.groups.iter().find(|g| g.name == name) {
            let mut k = g.knobs.clone();
            k.nice = None;
            if !k.is_default() {
                other.push(format!("{name}:{k}"));
            }
        }
    }
    if other.is_empty() {
        "default".to_string()
    } else {
        other.join(" ")
    }
}
