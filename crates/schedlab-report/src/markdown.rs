//! `--markdown FILE`: the summary as a Markdown table (GitHub's pipe tables), one row per
//! configuration and metric, with the numbers as the text summary prints them
//! ([`crate::table::num`], `-` where there is none).

use crate::export::{summary_rows, Exporter};
use crate::table::num;
use schedlab_workload::record::RunRecord;
use std::io;

/// Writes the summary as a Markdown table: the keys that name configurations (or the
/// configurations' labels where the keys do not say all of them), then metric, unit, N, mean,
/// ±CI, SD, min, median, max and hmean.
pub struct MarkdownExporter {
    /// The keys that name configurations, in column order.
    pub keys: Vec<String>,
}

/// A cell's text, with the characters that would end or break the cell escaped.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Whether `label` is only `KEY=VALUE` words of `keys` (so the key columns say all of it).
fn named_by_keys(label: &str, keys: &[String]) -> bool {
    label.split(' ').filter(|w| !w.is_empty()).all(|w| {
        w.split_once('=')
            .is_some_and(|(k, _)| keys.iter().any(|key| key == k))
    })
}

impl Exporter for MarkdownExporter {
    fn serialize(&self, record: &RunRecord) -> io::Result<Vec<u8>> {
        let label_column = record
            .configs
            .iter()
            .any(|c| !named_by_keys(&c.label, &self.keys));
        let mut header: Vec<String> = Vec::new();
        if label_column {
            header.push("configuration".into());
        }
        header.extend(self.keys.iter().cloned());
        let first_number = header.len() + 2;
        header.extend(
            [
                "metric",
                "unit",
                "N",
                "mean",
                &format!("±CI{}", record.level),
                "SD",
                "min",
                "median",
                "max",
                "hmean",
            ]
            .map(String::from),
        );
        let line = |cells: &[String]| -> String {
            let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
            format!("| {} |\n", cells.join(" | "))
        };
        let mut out = line(&header);
        let rule: Vec<String> = (0..header.len())
            .map(|i| if i < first_number { ":---" } else { "---:" }.to_string())
            .collect();
        out.push_str(&format!("|{}|\n", rule.join("|")));
        let opt = |v: Option<f64>| v.map_or("-".to_string(), num);
        for r in summary_rows(record, &self.keys) {
            let mut row = Vec::new();
            if label_column {
                row.push(r.configuration);
            }
            row.extend(r.keys);
            row.extend([
                r.metric,
                r.unit,
                r.n.to_string(),
                num(r.mean),
                opt(r.ci_half_width),
                opt(r.sd),
                num(r.min),
                num(r.median),
                num(r.max),
                opt(r.hmean),
            ]);
            out.push_str(&line(&row));
        }
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::tests::two_configurations;

    #[test]
    fn numbers_are_the_text_summarys_and_pipes_are_escaped() {
        let record = two_configurations();
        let text = String::from_utf8(
            MarkdownExporter {
                keys: vec!["threads".into()],
            }
            .serialize(&record)
            .unwrap(),
        )
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // `threads=2, odd` is not only `threads=…`: the labels get their column.
        assert_eq!(
            lines[0],
            "| configuration | threads | metric | unit | N | mean | ±CI95 | SD | min | median | max | hmean |"
        );
        assert_eq!(
            lines[1],
            "|:---|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        assert_eq!(
            lines[2],
            "| threads=1 | 1 | time | s | 1 | 1.000 | - | 0 | 1.000 | 1.000 | 1.000 | - |"
        );
        assert!(
            lines[4].starts_with("| threads=2, odd | 2 | rate | msg/s, total | 2 | 150.00 | "),
            "{}",
            lines[4]
        );
        assert!(lines[4].ends_with(" | 133.33 |"), "{}", lines[4]);
        let text = crate::text::metrics_table(&record, &record.configs[1]);
        assert!(text.contains("150.00"), "{text}");
        assert!(text.contains("133.33"), "{text}");
    }

    #[test]
    fn labels_named_by_the_keys_get_no_column_of_their_own() {
        let mut record = two_configurations();
        record.configs[1].label = "threads=2".into();
        let text = String::from_utf8(
            MarkdownExporter {
                keys: vec!["threads".into()],
            }
            .serialize(&record)
            .unwrap(),
        )
        .unwrap();
        assert!(text.starts_with("| threads | metric |"), "{text}");
        let mut record = two_configurations();
        record.configs.truncate(1);
        record.configs[0].label = "a|b".into();
        let text = String::from_utf8(
            MarkdownExporter { keys: vec![] }
                .serialize(&record)
                .unwrap(),
        )
        .unwrap();
        assert!(text.contains("| a\\|b | time |"), "{text}");
    }
}
