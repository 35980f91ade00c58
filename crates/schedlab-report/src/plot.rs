//! SVG charts (plotters): a sweep's metric against the one numeric varied key, with
//! confidence-interval error bars, one line per value of the other varied key — the shape of
//! seed 002's µs-per-yield charts — or against the values of a sweep's only key (a policy, a
//! strategy), as files (`--plot`) or as SVG text for the HTML report; and one configuration's
//! repetitions of a metric ([`distribution_svg`]). Ticks are round values with units and SI
//! prefixes ([`crate::units`]), and the charts are drawn at the size the report shows them.

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

/// A plotters failure while drawing into an SVG string (no file yet: the caller names it).
pub(crate) fn drawing_error(e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw {
        path: PathBuf::from("(svg)"),
        source: e.to_string().into(),
    }
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
/// key, or the only key (a point per value); a second key, if any, makes one line per value.
/// Points with no interval (N < 2) get no error bar. The axes are [`metric_chart_svg`]'s.
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

/// Size of a chart in pixels: the width of a column of the report's two-column grid at its
/// full width, so the report shows it at its own size and the text at the size written here.
pub const CHART_SIZE: (u32, u32) = (560, 360);
/// Font sizes of tick labels and legends, axis titles and captions, as plotters takes them: its
/// SVG backend writes `font-size` = size / 1.24, so these are 12.1, 12.9 and 14.5 px on the page.
const TICK_FONT: u32 = 15;
const DESC_FONT: u32 = 16;
const CAPTION_FONT: u32 = 18;

/// A linear f64 axis whose ticks are exactly `ticks` (plotters' own picks unround ones, and its
/// key-point wrapper cannot take a label formatter).
#[derive(Clone, Debug)]
struct Ticked {
    /// The drawn range.
    range: std::ops::Range<f64>,
    /// Where the ticks and grid lines are.
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        // As plotters' linear f64 axis maps.
        let span = self.range.end - self.range.start;
        if span == 0.0 {
            return (limit.1 - limit.0) / 2;
        }
        let share = (v - self.range.start) / span;
        let pixels = f64::from(limit.1 - limit.0);
        // A y axis runs from the bottom pixel up: a negative length, rounded the other way.
        if pixels >= 0.0 {
            limit.0 + (pixels * share + 1e-3).floor() as i32
        } else {
            limit.0 + (pixels * share - 1e-3).ceil() as i32
        }
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // The ticks are the bold lines; no light lines between them.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// `range` with ticks at `ticks`.
fn ticked(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Ticked {
    Ticked { range, ticks }
}

/// How a chart's x axis places a key's values.
#[derive(Clone, Debug, PartialEq)]
enum XAxis {
    /// Numbers, evenly.
    Linear,
    /// Doubling numbers (CPUs 1, 2, 4, 8): each doubling the same distance.
    Log2,
    /// Numbers over more than two decades.
    Log10,
    /// Names, one position each in the order they first appear.
    Category(Vec<String>),
}

impl XAxis {
    /// Where `x` (a number, or a category's index) is drawn.
    fn place(&self, x: f64) -> f64 {
        match self {
            XAxis::Log2 => x.log2(),
            XAxis::Log10 => x.log10(),
            _ => x,
        }
    }

    /// The axis's drawn range and its ticks (drawn positions) for values `xmin..=xmax`.
    fn range_and_ticks(&self, xmin: f64, xmax: f64) -> (std::ops::Range<f64>, Vec<f64>) {
        let (lo, hi, ticks) = match self {
            XAxis::Category(names) => {
                let n = names.len().max(1) as f64;
                (-0.5, n - 0.5, (0..names.len()).map(|i| i as f64).collect())
            }
            XAxis::Log2 => {
                let t = crate::units::log2_ticks(xmin, xmax, 10);
                let (a, b) = (xmin.log2(), xmax.log2());
                let pad = ((b - a) * 0.06).max(0.25);
                (a - pad, b + pad, t.iter().map(|v| v.log2()).collect())
            }
            XAxis::Log10 => {
                let first = xmin.log10().floor() as i32;
                let last = xmax.log10().ceil() as i32;
                let (a, b) = (xmin.log10(), xmax.log10());
                let pad = (b - a) * 0.06;
                (a - pad, b + pad, (first..=last).map(f64::from).collect())
            }
            XAxis::Linear => {
                let pad = ((xmax - xmin) * 0.06).max(0.5);
                let t = crate::units::nice_ticks(xmin, xmax, 6);
                (xmin - pad, xmax + pad, t)
            }
        };
        let ticks = ticks
            .into_iter()
            .filter(|t| *t >= lo - 1e-9 && *t <= hi + 1e-9)
            .collect();
        (lo..hi, ticks)
    }

    /// The label of the tick at drawn position `t`.
    fn label(&self, t: f64, numbers: &crate::units::AxisFormat) -> String {
        match self {
            XAxis::Category(names) => {
                let i = t.round();
                if (t - i).abs() > 1e-6 || i < 0.0 {
                    return String::new();
                }
                names.get(i as usize).cloned().unwrap_or_default()
            }
            // Powers of two print whole: 2048 threads, not 2.048k.
            XAxis::Log2 if t >= 0.0 => format!("{:.0}", 2f64.powf(t)),
            XAxis::Log2 => numbers.format(2f64.powf(t)),
            XAxis::Log10 => numbers.format(10f64.powf(t)),
            XAxis::Linear => numbers.format(t),
        }
    }
}

/// The SVG text of one chart: `metric`'s mean in each configuration of `record` against `x_key`,
/// with confidence-interval error bars, one line per combination of the `series_keys`' values
/// (one line in all without them). A numeric `x_key` gets a numeric axis: base 2 when its values
/// double ([`crate::units::is_doubling`]: CPUs, threads), logarithmic when they span more than
/// two decades, linear otherwise; any other key gets one evenly spaced position per value, in
/// the order the values first appear. Ticks are round values printed with the unit and an SI
/// prefix ([`crate::units::AxisFormat`]). Points with no interval (N < 2) get no error bar.
/// Text from the record reaches the SVG escaped (plotters' SVG backend escapes `<`, `>`, `&`,
/// quotes).
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
    let xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let axis = if !numeric {
        XAxis::Category(categories)
    } else if crate::units::is_doubling(&xs) {
        XAxis::Log2
    } else if xmin > 0.0 && xmax / xmin > 100.0 {
        XAxis::Log10
    } else {
        XAxis::Linear
    };
    let (xrange, xticks) = axis.range_and_ticks(xmin, xmax);
    let xnumbers = match axis {
        XAxis::Log2 | XAxis::Category(_) => crate::units::AxisFormat::new("", &[1.0]),
        XAxis::Log10 => crate::units::AxisFormat::new(
            "",
            &xticks.iter().map(|t| 10f64.powf(*t)).collect::<Vec<_>>(),
        ),
        XAxis::Linear => crate::units::AxisFormat::new("", &xticks),
    };
    // The y axis starts at zero (or below it): a mean's height is read against it.
    let top = points.iter().map(|p| p.1 + p.2).fold(0.0, f64::max);
    let bottom = points.iter().map(|p| p.1 - p.2).fold(0.0, f64::min);
    let yticks = crate::units::nice_ticks(bottom, top, 6);
    let yformat = crate::units::AxisFormat::new(&def.unit, &yticks);
    let yrange = yticks[0]..yticks[yticks.len() - 1];
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        let caption = format!("{} {} ({}) vs {x_key}", record.workload, def.name, def.unit);
        let xlabel = |t: &f64| axis.label(*t, &xnumbers);
        let ylabel = |v: &f64| yformat.format(*v);
        let x_desc = match axis {
            XAxis::Log2 => format!("{x_key} (base-2 scale)"),
            XAxis::Log10 => format!("{x_key} (log scale)"),
            _ => x_key.to_string(),
        };
        let y_desc = format!("{} ({}), ± CI{}", def.name, def.unit, record.level);
        let mut chart = styled_chart(
            &root,
            &caption,
            (
                ticked(xrange, xticks.clone()),
                ticked(yrange, yticks.clone()),
            ),
            (&x_desc, &y_desc),
            (&xlabel, &ylabel),
        )
        .map_err(drawing_error)?;
        for (i, name) in order.iter().enumerate() {
            let color = crate::palette::rgb(i);
            let mut pts: Vec<(f64, f64, f64)> = series[name]
                .iter()
                .map(|p| (axis.place(p.0), p.1, p.2))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let line = chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.0, p.1)),
                    color.stroke_width(2),
                ))
                .map_err(drawing_error)?;
            if order.len() > 1 {
                line.label(name.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            }
            chart
                .draw_series(
                    pts.iter()
                        .map(|p| Circle::new((p.0, p.1), 3, color.filled())),
                )
                .map_err(drawing_error)?;
            chart
                .draw_series(pts.iter().filter(|p| p.2 > 0.0).map(|p| {
                    ErrorBar::new_vertical(p.0, p.1 - p.2, p.1, p.1 + p.2, color.filled(), 8)
                }))
                .map_err(drawing_error)?;
        }
        if order.len() > 1 {
            chart
                .configure_series_labels()
                .label_font(("sans-serif", TICK_FONT))
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .draw()
                .map_err(drawing_error)?;
        }
        root.present().map_err(drawing_error)?;
    }
    Ok(svg)
}

/// How a chart's ticks are labelled.
type TickLabel<'f> = dyn Fn(&f64) -> String + 'f;

/// A chart of the report's size and style on `root`: the caption, the label areas, both axes
/// over `(x, y)`, and the mesh drawn with its descriptions, tick fonts and label formatters —
/// what every chart of the report shares.
fn styled_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    (x, y): (Ticked, Ticked),
    (x_desc, y_desc): (&str, &str),
    (xlabel, ylabel): (&TickLabel<'_>, &TickLabel<'_>),
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>, String> {
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", CAPTION_FONT))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(66)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(("sans-serif", TICK_FONT))
        .axis_desc_style(("sans-serif", DESC_FONT))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225))
        .x_label_formatter(xlabel)
        .y_label_formatter(ylabel)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

/// The SVG text of one configuration's repetitions of `metric`: each repetition a point at its
/// run number, the mean a line and its confidence interval a band, the y axis fitted to the
/// values (not from zero: the spread is what this chart shows). Repetitions flagged as outliers
/// (judged only among 5 or more) are drawn hollow. `None` when no repetition has the metric.
pub fn distribution_svg(
    record: &RunRecord,
    config: &schedlab_workload::record::ConfigResult,
    metric: &schedlab_workload::record::MetricDef,
) -> Result<Option<String>, PlotError> {
    let values: Vec<f64> = schedlab_stats::metric_values(config, &metric.name)
        .into_iter()
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return Ok(None);
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let iv = config.intervals.get(&metric.name);
    let ci = iv.and_then(|i| i.half_width).filter(|h| h.is_finite());
    let outliers: &[usize] = match iv {
        Some(i) if n >= schedlab_stats::MIN_OUTLIER_N => &i.outliers,
        _ => &[],
    };
    let lo = values
        .iter()
        .copied()
        .fold(mean - ci.unwrap_or(0.0), f64::min);
    let hi = values
        .iter()
        .copied()
        .fold(mean + ci.unwrap_or(0.0), f64::max);
    let yticks = crate::units::nice_ticks(lo, hi, 6);
    let yformat = crate::units::AxisFormat::new(&metric.unit, &yticks);
    let yrange = yticks[0]..yticks[yticks.len() - 1];
    let mut xticks: Vec<f64> = crate::units::nice_ticks(1.0, n as f64, n.min(10))
        .into_iter()
        .filter(|t| t.fract() == 0.0 && *t >= 1.0 && *t <= n as f64)
        .collect();
    if xticks.is_empty() {
        xticks.push(1.0);
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        let caption = format!(
            "{} {} ({}), {n} repetition{}",
            record.workload,
            metric.name,
            metric.unit,
            if n == 1 { "" } else { "s" }
        );
        let ylabel = |v: &f64| yformat.format(*v);
        let xlabel = |v: &f64| format!("{v:.0}");
        let y_desc = format!("{} ({})", metric.name, metric.unit);
        let mut chart = styled_chart(
            &root,
            &caption,
            (
                ticked(0.5..n as f64 + 0.5, xticks),
                ticked(yrange, yticks.clone()),
            ),
            ("repetition", &y_desc),
            (&xlabel, &ylabel),
        )
        .map_err(drawing_error)?;
        let color = crate::palette::rgb(0);
        let (x0, x1) = (0.5, n as f64 + 0.5);
        if let Some(h) = ci {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, mean - h), (x1, mean + h)],
                    color.mix(0.15).filled(),
                )))
                .map_err(drawing_error)?
                .label(format!("CI{} ± {}", record.level, yformat.format(h)))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 20, y + 5)], color.mix(0.15).filled())
                });
        }
        chart
            .draw_series(LineSeries::new(
                [(x0, mean), (x1, mean)],
                BLACK.stroke_width(2),
            ))
            .map_err(drawing_error)?
            .label(format!("mean {}", yformat.format(mean)))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                let style = if outliers.contains(&i) {
                    color.stroke_width(2)
                } else {
                    color.filled()
                };
                Circle::new(((i + 1) as f64, *v), 5, style)
            }))
            .map_err(drawing_error)?
            .label("repetition")
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
        chart
            .configure_series_labels()
            .label_font(("sans-serif", TICK_FONT))
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()
            .map_err(drawing_error)?;
        root.present().map_err(drawing_error)?;
    }
    Ok(Some(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        k.iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    /// A sweep over `threads` (each value a configuration with `reps` repetitions of `time`,
    /// in µs, around 1000 × threads).
    fn sweep(threads: &[u32], reps: usize) -> RunRecord {
        use schedlab_workload::record::{Better, ConfigResult, Interval, MetricDef, Repetition};
        let configs = threads
            .iter()
            .map(|t| {
                let values: Vec<f64> = (0..reps)
                    .map(|i| 1000.0 * f64::from(*t) + 10.0 * i as f64)
                    .collect();
                let d = schedlab_stats::describe(&values, 95.0);
                ConfigResult {
                    label: format!("threads={t}"),
                    params: BTreeMap::from([("threads".to_string(), t.to_string())]),
                    repetitions: values
                        .iter()
                        .map(|v| Repetition {
                            metrics: BTreeMap::from([("time".to_string(), *v)]),
                            ..Repetition::default()
                        })
                        .collect(),
                    summary: BTreeMap::from([("time".to_string(), d.summary)]),
                    intervals: BTreeMap::from([(
                        "time".to_string(),
                        Interval {
                            half_width: Some(d.ci_half_width).filter(|h| h.is_finite()),
                            harmonic_mean: None,
                            outliers: d.outliers,
                        },
                    )]),
                    ..ConfigResult::default()
                }
            })
            .collect();
        RunRecord {
            workload: "yield".into(),
            level: 95.0,
            metrics: vec![MetricDef {
                name: "time".into(),
                unit: "us".into(),
                better: Better::Lower,
                description: String::new(),
            }],
            configs,
            ..RunRecord::default()
        }
    }

    /// The texts of an SVG's `<text>` elements.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("</text>")
            .filter_map(|t| t.rsplit_once('>').map(|(_, x)| x.trim()))
            .filter(|x| !x.is_empty())
            .collect()
    }

    #[test]
    fn doubling_keys_get_a_base_2_axis_and_ticks_read() {
        let svg = metric_chart_svg(&sweep(&[1, 2, 4, 8], 3), "time", "threads", &[]).unwrap();
        let t = texts(&svg);
        assert!(t.contains(&"threads (base-2 scale)"), "{t:?}");
        for tick in ["1", "2", "4", "8"] {
            assert!(t.contains(&tick), "{tick}: {t:?}");
        }
        // No tick between two doublings, no long decimals; the µs values read in ms.
        assert!(!t.contains(&"1.5") && !t.contains(&"3"), "{t:?}");
        assert!(t.contains(&"8 ms"), "{t:?}");
        assert!(!t.iter().any(|x| x.contains("000.0")), "{t:?}");
        // The text is written at 12 px or more (plotters' size / 1.24).
        for size in svg.split("font-size=\"").skip(1) {
            let px: f64 = size[..size.find('"').unwrap()].parse().unwrap();
            assert!(px >= 12.0, "{px}");
        }
        // Two values are a line, not a doubling scale.
        let svg = metric_chart_svg(&sweep(&[1, 2], 3), "time", "threads", &[]).unwrap();
        assert!(!svg.contains("base-2"));
        // Three that do not double: a linear axis.
        let svg = metric_chart_svg(&sweep(&[1, 2, 3], 3), "time", "threads", &[]).unwrap();
        assert!(texts(&svg).contains(&"threads"));
    }

    #[test]
    fn a_distribution_chart_has_a_point_per_repetition_the_mean_and_its_interval() {
        let r = sweep(&[1], 6);
        let svg = distribution_svg(&r, &r.configs[0], &r.metrics[0])
            .unwrap()
            .unwrap();
        let t = texts(&svg);
        assert!(t.contains(&"yield time (us), 6 repetitions"), "{t:?}");
        assert!(t.iter().any(|x| x.starts_with("mean ")), "{t:?}");
        assert!(t.iter().any(|x| x.starts_with("CI95 ± ")), "{t:?}");
        // Six points and the legend's.
        assert_eq!(svg.matches("<circle").count(), 7, "{svg}");
        // Nothing to draw: no chart.
        let mut empty = r.clone();
        empty.configs[0].repetitions.clear();
        assert!(
            distribution_svg(&empty, &empty.configs[0], &empty.metrics[0])
                .unwrap()
                .is_none()
        );
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
