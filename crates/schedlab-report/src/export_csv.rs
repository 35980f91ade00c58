//! `--csv FILE`: the summary as CSV, one row per configuration and metric, with every number at
//! full precision (Rust's shortest text that reads back as the same `f64`, the value the JSON
//! record holds); an empty cell where the text summary shows `-`.

use crate::export::{summary_rows, Exporter};
use schedlab_workload::record::RunRecord;
use std::io;

/// The columns after the keys.
const COLUMNS: [&str; 11] = [
    "metric",
    "unit",
    "n",
    "mean",
    "ci_half_width",
    "ci_level",
    "sd",
    "min",
    "median",
    "max",
    "hmean",
];

/// Writes the summary as CSV: `configuration`, one column per key that names configurations
/// (a sweep's varied keys), then `metric`, `unit`, `n`, `mean`, `ci_half_width`, `ci_level`,
/// `sd`, `min`, `median`, `max` and `hmean`.
pub struct CsvExporter {
    /// The keys that name configurations, in column order.
    pub keys: Vec<String>,
}

/// A number's cell: full precision, or empty where it is not a number.
fn cell(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

impl Exporter for CsvExporter {
    fn serialize(&self, record: &RunRecord) -> io::Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["configuration".to_string()];
        header.extend(self.keys.iter().cloned());
        header.extend(COLUMNS.map(String::from));
        w.write_record(&header)?;
        for r in summary_rows(record, &self.keys) {
            let mut row = vec![r.configuration];
            row.extend(r.keys);
            row.extend([
                r.metric,
                r.unit,
                r.n.to_string(),
                cell(r.mean),
                r.ci_half_width.map_or(String::new(), cell),
                record.level.to_string(),
                r.sd.map_or(String::new(), cell),
                cell(r.min),
                cell(r.median),
                cell(r.max),
                r.hmean.map_or(String::new(), cell),
            ]);
            w.write_record(&row)?;
        }
        w.into_inner().map_err(|e| e.into_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::tests::two_configurations;

    #[test]
    fn rows_carry_full_precision_and_quote_what_needs_it() {
        let record = two_configurations();
        let bytes = CsvExporter {
            keys: vec!["threads".into()],
        }
        .serialize(&record)
        .unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "configuration,threads,metric,unit,n,mean,ci_half_width,ci_level,sd,min,median,max,hmean"
        );
        // One repetition: no interval, no harmonic mean, an SD of 0 (as the text summary says).
        assert_eq!(
            lines[1],
            "threads=1,1,time,s,1,1.0000001,,95,0,1.0000001,1.0000001,1.0000001,"
        );
        // A unit with a comma is quoted; the rate's harmonic mean is there.
        assert!(
            lines[3].starts_with("\"threads=2, odd\",2,rate,\"msg/s, total\",2,150,"),
            "{}",
            lines[3]
        );
        assert!(lines[3].ends_with(",133.33333333333334"), "{}", lines[3]);
        assert_eq!(lines.len(), 4);
    }
}
