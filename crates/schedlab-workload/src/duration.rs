//! Parsing and printing of durations as users write them: `2s`, `0.3ms`, `500us`, `1.5m`.
//!
//! Written here rather than taken from a crate because the common ones (humantime) reject
//! fractional values such as `0.3ms`, which slices and deadlines need.

use crate::error::ValueError;
use std::time::Duration;

/// The longest duration schedlab accepts anywhere: a `--duration` (the web workload's, the
/// longest a preset takes), a knob, a cost, and every duration of a workload file. Bounding
/// them all alike, when they are read, means a mistyped `1e20s` is refused by `check` with
/// its place rather than overflowing a clock once the run has started.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// The accepted range of durations, as messages give it.
pub const DURATION_RANGE: &str = "0 to 24h (86400s)";

/// Parse `NUMBER[UNIT]` where UNIT is one of `ns`, `us`/`µs`, `ms`, `s`, `m`; a bare number is
/// seconds. The error names the value and what is accepted ([`DURATION_RANGE`]).
pub fn parse_duration(text: &str) -> Result<Duration, ValueError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        ValueError(format!(
            "'{text}' is not a duration; write a number with a unit: 2s, 0.3ms, 500us, 100ns, 1m"
        ))
    })?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        other => {
            return Err(ValueError(format!(
                "'{text}': unknown unit '{other}'; accepted units are ns, us, ms, s, m"
            )))
        }
    };
    if !value.is_finite() || value < 0.0 {
        return Err(ValueError(format!(
            "'{text}': a duration must be zero or positive"
        )));
    }
    let ns = (value * scale).round();
    if ns > MAX_DURATION.as_nanos() as f64 {
        return Err(ValueError(format!(
            "'{text}' is too long; accepted: {DURATION_RANGE}"
        )));
    }
    Ok(Duration::from_nanos(ns as u64))
}

/// Print a duration compactly with a unit that keeps 3–4 significant digits.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns >= 1e9 {
        format!("{:.3}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.3}us", ns / 1e3)
    } else {
        format!("{ns}ns")
    }
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`: a record's start, a recording's.
pub fn utc_time(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_fractions() {
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("0.3ms").unwrap(), Duration::from_micros(300));
        assert_eq!(parse_duration("500us").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("100ns").unwrap(), Duration::from_nanos(100));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
    }

    #[test]
    fn rejects_bad_values_naming_them() {
        let e = parse_duration("-1s").unwrap_err().0;
        assert!(e.contains("-1s") && e.contains("positive"), "{e}");
        let e = parse_duration("3 fortnights").unwrap_err().0;
        assert!(e.contains("fortnights") && e.contains("ms"), "{e}");
        assert!(parse_duration("abc").is_err());
    }

    #[test]
    fn refuses_durations_beyond_the_longest_accepted() {
        assert_eq!(parse_duration("1440m").unwrap(), MAX_DURATION);
        assert_eq!(parse_duration("86400s").unwrap(), MAX_DURATION);
        let e = parse_duration("86401s").unwrap_err().0;
        assert!(e.contains("'86401s'") && e.contains(DURATION_RANGE), "{e}");
        // Once a saturating cast: 1e11 s is 1e20 ns, beyond u64.
        let e = parse_duration("100000000000s").unwrap_err().0;
        assert!(e.contains("too long"), "{e}");
    }
}
