//! SVG charts of sweeps (plotters): the primary metric against the one numeric varied key, with
//! confidence-interval error bars, one line per value of the other varied key — the shape of
//! seed 002's µs-per-yield charts — or against the values of a sweep's only key (a policy, a
//! strategy), as files (`--plot`) or as SVG text for the HTML report.

use crate::sweep::key_value;
use plotters::prelude::*;
use schedlab_workload::record::RunRecord;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a sweep cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Two varied keys and neither has numbers for values.
    #[error(
        "needs a numeric key among the varied ones (e.g. threads=1,2,4), or one varied key alone \
         (a point per value)"
    )]
    NoNumericKey,
    /// More than two keys, found before the sweep runs.
    #[error(
        "draws one numeric key and at most one other key (one line per value); this sweep has {}: {}",
        keys.len(),
        keys.join(", ")
    )]
    TooManyKeys {
        /// The sweep's keys.
        keys: Vec<String>,
    },
    /// More than one key besides the numeric one, found when drawing.
    #[error("draws one numeric key and at most one other key (one line per value)")]
    ExtraKeys,
    /// The record defines no metric.
    #[error("the record has no metric")]
    NoMetric,
    /// No configuration has a result.
    #[error("nothing to plot: no configuration has a result")]
    NothingToPlot,
    /// plotters failed to draw or write the file.
    #[error("drawing {}: {source}", path.display())]
    Draw {
        /// The chart's file.
        path: PathBuf,
        /// What plotters reported.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Check, before a sweep runs, that its keys can be drawn: `values` holds each key's value in
/// every configuration. Returns the index of the x key: the first numeric one, or the only key
/// (then one point per value, in the order they come, e.g. `--vary policy=o1,cfs,eevdf`).
pub fn check_keys(values: &[(String, Vec<String>)]) -> Result<usize, PlotError> {
    let x = values
        .iter()
        .position(|(_, v)| !v.is_empty() && v.iter().all(|x| x.parse::<f64>().is_ok()))
        .or((values.len() == 1).then_some(0))
        .ok_or(PlotError::NoNumericKey)?;
    if values.len() > 2 {
        return Err(PlotError::TooManyKeys {
            keys: values.iter().map(|(k, _)| k.clone()).collect(),
        });
    }
    Ok(x)
}

/// Draw the sweep in `record` (varied `keys`) to `path` as SVG. The x key is the first numeric
/// key, or the only key (a point per value); a second key, if any, makes one line per value. Points with no interval (N < 2) get no
/// error bar. A logarithmic x axis is used when x spans more than two decades.
pub fn sweep_chart(record: &RunRecord, keys: &[String], path: &Path) -> Result<(), PlotError> {
    let primary = record.primary_metric().ok_or(PlotError::NoMetric)?;
    let x_key = keys
        .iter()
        .find(|k| is_numeric_key(record, k))
        .or(if keys.len() == 1 { keys.first() } else { None })
        .ok_or(PlotError::NoNumericKey)?;
    let others: Vec<String> = keys.iter().filter(|k| *k != x_key).cloned().collect();
    if others.len() > 1 {
        return Err(PlotError::ExtraKeys);
    }
    let svg = metric_chart_svg(record, &primary.name, x_key, &others).map_err(|e| match e {
        PlotError::Draw { source, .. } => PlotError::Draw {
            path: path.to_path_buf(),
            source,
        },
        e => e,
    })?;
    crate::output::write(path, svg.as_bytes()).map_err(|e| PlotError::Draw {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Whether every configuration of `record` has a number for `key`.
pub fn is_numeric_key(record: &RunRecord, key: &str) -> bool {
    !record.configs.is_empty()
        && record
            .configs
            .iter()
            .all(|c| key_value(c, key).parse::<f64>().is_ok())
}

/// The SVG text of one chart: `metric`'s mean in each configuration of `record` against `x_key`,
/// with confidence-interval error bars, one line per combination of the `series_keys`' values
/// (one line in all without them). A numeric `x_key` gets a numeric axis (logarithmic when it
/// spans more than two decades); any other key gets one evenly spaced position per value, in the
/// order the values first appear. Points with no interval (N < 2) get no error bar. Text from the
/// record reaches the SVG escaped (plotters' SVG backend escapes `<`, `>`, `&`, quotes).
pub fn metric_chart_svg(
    record: &RunRecord,
    metric: &str,
    x_key: &str,
    series_keys: &[String],
) -> Result<String, PlotError> {
    let def = record
        .metric(metric)
        .or(record.primary_metric())
        .ok_or(PlotError::NoMetric)?;
    let numeric = is_numeric_key(record, x_key);
    // Categories of a non-numeric x key, in order of first appearance.
    let mut categories: Vec<String> = Vec::new();
    // series name → [(x, mean, ci)]
    let mut series: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for c in &record.configs {
        let Some(s) = c.summary.get(&def.name) else {
            continue;
        };
        let value = key_value(c, x_key);
        let x: f64 = if numeric {
            value.parse().expect("checked numeric")
        } else {
            match categories.iter().position(|v| *v == value) {
                Some(i) => i as f64,
                None => {
                    categories.push(value);
                    (categories.len() - 1) as f64
                }
            }
        };
        let ci = c
            .intervals
            .get(&def.name)
            .and_then(|i| i.half_width)
            .unwrap_or(0.0);
        let name = if series_keys.is_empty() {
            def.name.clone()
        } else {
            series_keys
                .iter()
                .map(|k| format!("{k}={}", key_value(c, k)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if !order.contains(&name) {
            order.push(name.clone());
        }
        series.entry(name).or_default().push((x, s.mean, ci));
    }
    let points: Vec<&(f64, f64, f64)> = series.values().flatten().collect();
    if points.is_empty() {
        return Err(PlotError::NothingToPlot);
    }
    let (xmin, xmax) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let ymax = points.iter().map(|p| p.1 + p.2).fold(0.0, f64::max) * 1.1;
    let ymin = points
        .iter()
        .map(|p| p.1 - p.2)
        .fold(f64::MAX, f64::min)
        .min(0.0);
    let err = |e: &dyn std::fmt::Display| PlotError::Draw {
        path: PathBuf::from("(svg)"),
        source: e.to_string().into(),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let caption = format!("{} {} ({}) vs {x_key}", record.workload, def.name, def.unit);
        let log = numeric && xmin > 0.0 && xmax / xmin > 100.0;
        let xpad = if log {
            1.0
        } else if numeric {
            (xmax - xmin).max(1.0) * 0.05
        } else {
            0.5
        };
        let category = |x: &f64| -> String {
            let i = x.round();
            if (x - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            categories.get(i as usize).cloned().unwrap_or_default()
        };
        let x_labels = if numeric { 10 } else { categories.len().max(1) };
        macro_rules! draw {
            ($xrange:expr) => {{
                let mut chart = ChartBuilder::on(&root)
                    .caption(&caption, ("sans-serif", 20))
                    .margin(15)
                    .x_label_area_size(40)
                    .y_label_area_size(70)
                    .build_cartesian_2d($xrange, ymin..ymax.max(f64::MIN_POSITIVE))
                    .map_err(|e| err(&e))?;
                let mut mesh = chart.configure_mesh();
                mesh.x_desc(x_key)
                    .y_desc(format!("{} ({}), ± CI{}", def.name, def.unit, record.level));
                if !numeric {
                    mesh.x_labels(x_labels).x_label_formatter(&category);
                }
                mesh.draw().map_err(|e| err(&e))?;
                for (i, name) in order.iter().enumerate() {
                    let color = crate::palette::rgb(i);
                    let mut pts = series[name].clone();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    chart
                        .draw_series(LineSeries::new(
                            pts.iter().map(|p| (p.0, p.1)),
                            color.stroke_width(2),
                        ))
                        .map_err(|e| err(&e))?
                        .label(name.as_str())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                        });
                    chart
                        .draw_series(pts.iter().map(|p| {
                            ErrorBar::new_vertical(
                                p.0,
                                p.1 - p.2,
                                p.1,
                                p.1 + p.2,
                                color.filled(),
                                8,
                            )
                        }))
                        .map_err(|e| err(&e))?;
                }
                chart
                    .configure_series_labels()
                    .border_style(BLACK)
                    .background_style(WHITE.mix(0.8))
                    .draw()
                    .map_err(|e| err(&e))?;
            }};
        }
        if log {
            draw!((xmin * 0.8..xmax * 1.25).log_scale());
        } else {
            draw!(xmin - xpad..xmax + xpad);
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        k.iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn check_keys_finds_the_numeric_key_or_says_why_not() {
        assert_eq!(
            check_keys(&keys(&[
                ("policy", &["o1", "cfs"]),
                ("threads", &["1", "2"])
            ]))
            .unwrap(),
            1
        );
        // One key alone is drawn whatever its values: a point per value.
        assert_eq!(check_keys(&keys(&[("policy", &["o1", "cfs"])])).unwrap(), 0);
        let e = check_keys(&keys(&[
            ("policy", &["o1", "cfs"]),
            ("transport", &["tcp", "unix"]),
        ]))
        .unwrap_err();
        assert!(matches!(e, PlotError::NoNumericKey), "{e:?}");
        assert_eq!(
            e.to_string(),
            "needs a numeric key among the varied ones (e.g. threads=1,2,4), or one varied key \
             alone (a point per value)"
        );
        let e = check_keys(&keys(&[
            ("policy", &["o1"]),
            ("cpus", &["1"]),
            ("threads", &["1"]),
        ]))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "draws one numeric key and at most one other key (one line per value); this sweep \
             has 3: policy, cpus, threads"
        );
    }
}
