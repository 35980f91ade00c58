//! Per-thread scheduler statistics from `/proc/thread-self/sched` (CONFIG_SCHED_DEBUG's
//! `proc_sched_show_task`), falling back to `getrusage(RUSAGE_THREAD)` where that file is absent.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A snapshot of one thread's scheduler counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedSnapshot {
    /// Voluntary context switches.
    pub voluntary: u64,
    /// Involuntary context switches.
    pub involuntary: u64,
    /// Migrations (only from /proc).
    pub migrations: Option<u64>,
}

/// Where a snapshot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotSource {
    /// `/proc/thread-self/sched`.
    ProcSched,
    /// `getrusage(RUSAGE_THREAD)`.
    Rusage,
}

impl SnapshotSource {
    /// How the record names this source.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotSource::ProcSched => "/proc/thread-self/sched",
            SnapshotSource::Rusage => "getrusage(RUSAGE_THREAD)",
        }
    }
}

/// Parse the `key : value` lines of a `/proc/<pid>/task/<tid>/sched` file.
pub fn parse_sched(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// Extract the counters from a parsed sched file.
pub fn snapshot_from_sched(fields: &BTreeMap<&str, &str>) -> Option<SchedSnapshot> {
    let num = |k: &str| {
        fields
            .get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .map(|v| v as u64)
    };
    Some(SchedSnapshot {
        voluntary: num("nr_voluntary_switches")?,
        involuntary: num("nr_involuntary_switches")?,
        migrations: num("se.nr_migrations"),
    })
}

/// Take a snapshot of the calling thread's counters.
pub fn snapshot_self() -> (SchedSnapshot, SnapshotSource) {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/sched") {
        if let Some(s) = snapshot_from_sched(&parse_sched(&text)) {
            return (s, SnapshotSource::ProcSched);
        }
    }
    // SAFETY: rusage is a plain out-struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (
        SchedSnapshot {
            voluntary: ru.ru_nvcsw as u64,
            involuntary: ru.ru_nivcsw as u64,
            migrations: None,
        },
        SnapshotSource::Rusage,
    )
}

/// Voluntary and involuntary context switches of the calling thread so far
/// (`getrusage(RUSAGE_THREAD)`: no file is opened, which matters — see the runner).
pub fn rusage_switches() -> (u64, u64) {
    // SAFETY: rusage is a plain out-struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// The counters of thread `tid` of process `pid` from `/proc/<pid>/task/<tid>/sched`.
pub fn task_snapshot(pid: i32, tid: i32) -> Option<SchedSnapshot> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/sched")).ok()?;
    snapshot_from_sched(&parse_sched(&text))
}

/// The scheduling settings of thread `tid` of process `pid`, read back from /proc.
pub fn observed_settings_of(pid: i32, tid: i32) -> BTreeMap<String, String> {
    observed_settings_in(&format!("/proc/{pid}/task/{tid}"))
}

fn observed_settings_in(dir: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(stat) = std::fs::read_to_string(format!("{dir}/stat")) {
        // Fields after the parenthesised comm; nice is field 19 (index 16 after the comm).
        if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
            if let Some(nice) = rest.split_whitespace().nth(16) {
                out.insert("nice".into(), nice.to_string());
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(format!("{dir}/sched")) {
        let f = parse_sched(&text);
        let policy = match f.get("policy").copied() {
            Some("0") => "other",
            Some("1") => "fifo",
            Some("2") => "rr",
            Some("3") => "batch",
            Some("5") => "idle",
            Some("6") => "deadline",
            Some(_) | None => "",
        };
        if !policy.is_empty() {
            out.insert("policy".into(), policy.into());
        }
        if let Some(p) = f.get("prio") {
            out.insert("prio".into(), p.to_string());
        }
        if let Some(s) = f.get("se.slice") {
            out.insert("slice_ns".into(), s.to_string());
        }
    }
    if let Ok(status) = std::fs::read_to_string(format!("{dir}/status")) {
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            out.insert(
                "cpus".into(),
                l["Cpus_allowed_list:".len()..].trim().to_string(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "cat (2181, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :        109163.330082
se.nr_migrations                             :                    7
nr_switches                                  :                   12
nr_voluntary_switches                        :                    9
nr_involuntary_switches                      :                    3
se.load.weight                               :              1048576
policy                                       :                    0
prio                                         :                  120
se.slice                                     :              1400000
";

    #[test]
    fn parses_proc_sched() {
        let f = parse_sched(SAMPLE);
        assert_eq!(f["prio"], "120");
        let s = snapshot_from_sched(&f).unwrap();
        assert_eq!(
            s,
            SchedSnapshot {
                voluntary: 9,
                involuntary: 3,
                migrations: Some(7)
            }
        );
        assert!(snapshot_from_sched(&parse_sched("garbage")).is_none());
    }

    #[test]
    fn reads_own_thread() {
        let (a, _) = snapshot_self();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (b, _) = snapshot_self();
        assert!(
            b.voluntary > a.voluntary,
            "a sleep is a voluntary switch: {a:?} -> {b:?}"
        );
        // SAFETY: plain getter.
        let obs = observed_settings_of(unsafe { libc::getpid() }, crate::sys::gettid());
        assert!(
            obs.contains_key("nice") && obs.contains_key("cpus"),
            "{obs:?}"
        );
    }
}
