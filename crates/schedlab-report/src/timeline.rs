//! The run-queue timeline (`--timeline FILE.svg`) as a chart and as text.
//!
//! The chart follows seed 002's third study ("the divergence of the average runqueue length from
//! the mean", IBM's pooled multi-queue scheduler on a 4-way machine): per configuration one row
//! of three panels drawn from the first repetition's downsampled series in the record — each
//! CPU's run-queue length over time, each CPU's divergence from the mean of all CPUs (the
//! seed's picture; a balanced machine stays near 0), and a CPU × time heatmap of the lengths.
//! A timeline that covers all tasks of a real machine gets a second row for them. The text lists
//! the figures of `schedlab_workload::timeline::TimelineSummary` per configuration, averaged over
//! its repetitions.

use crate::plot::PlotError;
use plotters::prelude::*;
use schedlab_workload::record::RunRecord;
use schedlab_workload::timeline::{SeriesSummary, TimelineSummary};
use std::fmt::Write as _;
use std::path::Path;

/// Most heatmap cells per row; bins are merged beyond it (SVG size stays bounded).
const MAX_CELLS: usize = 12_000;

/// Height of one row of panels, pixels.
const ROW_HEIGHT: u32 = 300;

/// Width of the drawing, pixels.
const WIDTH: u32 = 1500;

/// Font size of every text of the chart, as plotters takes it: its SVG backend writes
/// `font-size` = size / 1.24 (plot.rs), so 18 is 14.5 px in the file and 11.6 px once the
/// HTML report scales the 1500 px drawing to its 1200 px width — at least the 11 px the
/// report's other charts keep.
const FONT: u32 = 18;

/// The title of a row: a little larger than the rest.
const TITLE_FONT: u32 = 20;

/// One row of the chart: a configuration's series.
struct Row<'a> {
    title: String,
    series: &'a SeriesSummary,
}

/// The rows: per configuration, its first repetition with a timeline; the `workload` series,
/// then `all` when it differs (a real machine's other tasks).
fn rows(record: &RunRecord) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    for c in &record.configs {
        let Some((i, tl)) = (c.repetitions.iter().enumerate())
            .find_map(|(i, r)| r.timeline.as_ref().map(|t| (i, t)))
        else {
            continue;
        };
        for s in &tl.series {
            rows.push(Row {
                title: format!(
                    "{}{} — repetition {}, {} tasks, {} CPUs{}",
                    record.workload,
                    labelled(&c.label),
                    i + 1,
                    s.tasks,
                    tl.cpus,
                    if tl.lost_events > 0 {
                        format!(", {} trace events LOST", tl.lost_events)
                    } else {
                        String::new()
                    }
                ),
                series: s,
            });
        }
    }
    rows
}

/// Draw the record's timelines as SVG text.
pub fn timeline_svg(record: &RunRecord) -> Result<String, PlotError> {
    let rows = rows(record);
    if rows.is_empty() {
        return Err(PlotError::NothingToPlot);
    }
    let mut svg = String::new();
    {
        let height = ROW_HEIGHT * rows.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(crate::plot::drawing_error)?;
        for (row, area) in rows.iter().zip(root.split_evenly((rows.len(), 1))) {
            let area = area
                .titled(&row.title, ("sans-serif", TITLE_FONT))
                .map_err(crate::plot::drawing_error)?;
            let panels = area.split_evenly((1, 3));
            draw_row(row.series, &panels).map_err(crate::plot::drawing_error)?;
        }
        root.present().map_err(crate::plot::drawing_error)?;
    }
    Ok(svg)
}

/// The three panels of one series.
fn draw_row<DB: DrawingBackend>(
    s: &SeriesSummary,
    panels: &[DrawingArea<DB, plotters::coord::Shift>],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let cpus = s.lengths.len();
    let bins = s.lengths.first().map_or(0, Vec::len);
    let t = |b: usize| b as f64 * s.bin_s;
    let end = t(bins).max(f64::MIN_POSITIVE);
    let means: Vec<f64> = (0..bins)
        .map(|b| s.lengths.iter().map(|l| f64::from(l[b])).sum::<f64>() / cpus.max(1) as f64)
        .collect();
    // Scales follow the drawn (bin-mean) lengths; the instantaneous longest queue is in the text.
    let top = (s.lengths.iter().flatten())
        .map(|&l| f64::from(l))
        .fold(0.0, f64::max)
        .max(1.0);
    let ymax = top * 1.05;
    // Lengths.
    let mut chart = ChartBuilder::on(&panels[0])
        .caption("run-queue length", ("sans-serif", FONT))
        .margin(8)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end, 0.0..ymax)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", FONT))
        .axis_desc_style(("sans-serif", FONT))
        .x_desc("time (s)")
        .y_desc("tasks")
        .draw()?;
    for c in 0..cpus {
        let color = crate::palette::rgb(c);
        let line = chart.draw_series(LineSeries::new(
            (0..bins).map(|b| (t(b), f64::from(s.lengths[c][b]))),
            color.stroke_width(1),
        ))?;
        if cpus <= crate::palette::LEN {
            line.label(format!("CPU {c}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        }
    }
    if cpus <= crate::palette::LEN {
        chart
            .configure_series_labels()
            .label_font(("sans-serif", FONT))
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
    }
    // Divergence from the mean.
    let dmax = (0..cpus)
        .flat_map(|c| (0..bins).map(move |b| (c, b)))
        .map(|(c, b)| (f64::from(s.lengths[c][b]) - means[b]).abs())
        .fold(0.5, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&panels[1])
        .caption(
            format!(
                "divergence from the mean (exact: mean |d| {:.3}, max {:.3})",
                s.mean_abs_divergence, s.max_abs_divergence
            ),
            ("sans-serif", FONT),
        )
        .margin(8)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end, -dmax..dmax)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", FONT))
        .axis_desc_style(("sans-serif", FONT))
        .x_desc("time (s)")
        .y_desc("length − mean")
        .draw()?;
    for c in 0..cpus {
        let color = crate::palette::rgb(c);
        chart.draw_series(LineSeries::new(
            (0..bins).map(|b| (t(b), f64::from(s.lengths[c][b]) - means[b])),
            color.stroke_width(1),
        ))?;
    }
    // Heatmap: CPU × time, darker = longer.
    let merge = (bins * cpus).div_ceil(MAX_CELLS).max(1);
    let cols = bins.div_ceil(merge);
    let mut chart = ChartBuilder::on(&panels[2])
        .caption(
            format!("length per CPU (white 0, dark {top:.1})"),
            ("sans-serif", FONT),
        )
        .margin(8)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end, 0.0..cpus as f64)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .label_style(("sans-serif", FONT))
        .axis_desc_style(("sans-serif", FONT))
        .x_desc("time (s)")
        .y_desc("CPU")
        .y_labels(cpus.min(16) + 1)
        .y_label_formatter(&|y: &f64| {
            if y.fract() == 0.0 && *y < cpus as f64 {
                format!("{y:.0}")
            } else {
                String::new()
            }
        })
        .draw()?;
    let max = top;
    chart.draw_series((0..cpus).flat_map(|c| {
        (0..cols).map(move |k| {
            let (b0, b1) = (k * merge, ((k + 1) * merge).min(bins));
            let v =
                (b0..b1).map(|b| f64::from(s.lengths[c][b])).sum::<f64>() / (b1 - b0).max(1) as f64;
            let x = (v / max).clamp(0.0, 1.0);
            let shade = |full: f64| (255.0 - (255.0 - full) * x) as u8;
            let color = RGBColor(shade(8.0), shade(48.0), shade(107.0));
            Rectangle::new([(t(b0), c as f64), (t(b1), c as f64 + 1.0)], color.filled())
        })
    }))?;
    Ok(())
}

/// Draw the record's timelines into `path` (SVG).
pub fn write_timeline(record: &RunRecord, path: &Path) -> Result<(), PlotError> {
    let svg = timeline_svg(record).map_err(|e| match e {
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

/// A configuration's label after the workload's name (nothing for a lone configuration).
fn labelled(label: &str) -> String {
    if label.is_empty() {
        String::new()
    } else {
        format!(" {label}")
    }
}

/// The mean of `f` over the repetitions' timelines.
fn mean(tls: &[&TimelineSummary], f: impl Fn(&TimelineSummary) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = tls.iter().filter_map(|t| f(t)).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The timeline figures per configuration (means over its repetitions), or "" when the record
/// has no timeline.
pub fn timeline_text(record: &RunRecord) -> String {
    let mut out = String::new();
    for c in &record.configs {
        let tls: Vec<&TimelineSummary> = (c.repetitions.iter())
            .filter_map(|r| r.timeline.as_ref())
            .collect();
        let Some(first) = tls.first() else {
            continue;
        };
        if out.is_empty() {
            out.push_str("\nRUN-QUEUE TIMELINE (means over repetitions; divergence = a CPU's length − the mean of all CPUs)\n");
        }
        let _ = writeln!(
            out,
            "  {}{}: {} repetitions, {} CPUs, source {}",
            record.workload,
            labelled(&c.label),
            tls.len(),
            first.cpus,
            first.source
        );
        for s in &first.series {
            let name = s.tasks.as_str();
            let f = |g: fn(&SeriesSummary) -> f64| mean(&tls, |t| t.series(name).map(g));
            let _ = writeln!(
                out,
                "    {name:<8} tasks: divergence mean |d| {:.3}, max |d| {:.3}; per second: sd {:.3} (max {:.3}), max−min {:.3} (max {:.3}); longest queue {}",
                f(|s| s.mean_abs_divergence).unwrap_or(0.0),
                f(|s| s.max_abs_divergence).unwrap_or(0.0),
                f(|s| s.per_second_sd_mean).unwrap_or(0.0),
                f(|s| s.per_second_sd_max).unwrap_or(0.0),
                f(|s| s.per_second_range_mean).unwrap_or(0.0),
                f(|s| s.per_second_range_max).unwrap_or(0.0),
                tls.iter().filter_map(|t| t.series(name)).map(|s| s.max_length).max().unwrap_or(0),
            );
        }
        let _ = writeln!(
            out,
            "    idle while a task waited (invariant 1): {:.6} s of CPU time ({:.3} %); migrations {:.1}, to a CPU no less busy (invariant 3) {:.1}",
            mean(&tls, |t| Some(t.idle_while_waiting_s)).unwrap_or(0.0),
            mean(&tls, |t| Some(t.idle_while_waiting_percent)).unwrap_or(0.0),
            mean(&tls, |t| Some(t.migrations as f64)).unwrap_or(0.0),
            mean(&tls, |t| Some(t.migrations_to_busier as f64)).unwrap_or(0.0),
        );
        let lost: u64 = tls.iter().map(|t| t.lost_events).sum();
        if lost > 0 {
            let _ = writeln!(
                out,
                "    {lost} trace events were lost: the timeline is incomplete after them (a larger buffer or a shorter run helps)"
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::record::{ConfigResult, Repetition};
    use schedlab_workload::timeline::replay::{analyse, DEFAULT_BINS};
    use schedlab_workload::timeline::{TaskState, Timeline, TimelineTask};
    use std::time::Instant;

    /// A synthetic timeline: `tasks` tasks on `cpus` CPUs over `secs` seconds, `events` state
    /// changes at even intervals, each task cycling waiting → running → off on a CPU of its own
    /// choosing (a fixed pseudo-random walk, so that lengths move).
    fn synthetic(cpus: usize, tasks: u32, secs: u64, events: u64) -> Timeline {
        let mut tl = Timeline::new(cpus, "synthetic", "all");
        for i in 0..tasks {
            tl.add_task(TimelineTask {
                group: "g".into(),
                workload: i % 10 != 0,
                allowed: None,
            });
        }
        let end = secs * 1_000_000_000;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut state = vec![(TaskState::Off, 0u32); tasks as usize];
        for k in 0..events {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = (x % u64::from(tasks)) as u32;
            let (s, cpu) = state[t as usize];
            let next = match s {
                TaskState::Off => (TaskState::Waiting, ((x >> 32) % cpus as u64) as u32),
                TaskState::Waiting => (TaskState::Running, cpu),
                TaskState::Running => (TaskState::Off, cpu),
            };
            state[t as usize] = next;
            tl.push(k * end / events, t, next.1, next.0);
        }
        tl.end_ns = end;
        tl
    }

    fn record_of(summary: TimelineSummary) -> RunRecord {
        RunRecord {
            workload: "synthetic".into(),
            configs: vec![ConfigResult {
                label: "threads=1".into(),
                repetitions: vec![Repetition {
                    timeline: Some(summary),
                    ..Repetition::default()
                }],
                ..ConfigResult::default()
            }],
            ..RunRecord::default()
        }
    }

    #[test]
    fn draws_three_panels_per_row_and_the_text_names_every_figure() {
        let tl = synthetic(4, 40, 2, 20_000);
        let rec = record_of(analyse(&tl, DEFAULT_BINS));
        let svg = timeline_svg(&rec).unwrap();
        for caption in [
            "run-queue length",
            "divergence from the mean",
            "length per CPU",
        ] {
            assert_eq!(
                svg.matches(caption).count(),
                2,
                "{caption}: workload and all rows"
            );
        }
        let text = timeline_text(&rec);
        assert!(text.contains("synthetic threads=1: 1 repetitions, 4 CPUs, source synthetic"));
        assert!(
            text.contains("workload tasks: divergence mean |d|"),
            "{text}"
        );
        assert!(text.contains("all      tasks"), "{text}");
        assert!(
            text.contains("invariant 1") && text.contains("invariant 3"),
            "{text}"
        );
        assert!(matches!(
            timeline_svg(&RunRecord::default()),
            Err(PlotError::NothingToPlot)
        ));
        // Every text is 11 px or more where the report shows the chart, scaled to its width:
        // the HTML report's body is at most 1200 px wide (html.rs's `max-width`).
        const REPORT_WIDTH: u32 = 1200;
        let scale = f64::from(REPORT_WIDTH) / f64::from(WIDTH);
        let sizes: Vec<f64> = (svg.split("font-size=\"").skip(1))
            .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
            .collect();
        assert!(sizes.len() > 10, "{sizes:?}");
        for px in sizes {
            assert!(
                px * scale >= 11.0,
                "{px} px in the file, {} in the report",
                px * scale
            );
        }
    }

    /// bench/timeline.sh: replay and draw a 60 s timeline of 5 million events on 8 CPUs.
    #[test]
    #[ignore = "benchmark: cargo test --release -p schedlab-report timeline_render_bench -- --ignored --nocapture"]
    fn timeline_render_bench() {
        let tl = synthetic(8, 400, 60, 5_000_000);
        let t0 = Instant::now();
        let summary = analyse(&tl, DEFAULT_BINS);
        let replay = t0.elapsed().as_secs_f64();
        let rec = record_of(summary);
        let t1 = Instant::now();
        let svg = timeline_svg(&rec).unwrap();
        let render = t1.elapsed().as_secs_f64();
        println!("replay of 5000000 events (60 s, 8 CPUs, 400 tasks): {replay:.3} s");
        println!("render of the SVG (2 rows x 3 panels): {render:.3} s (goal < 1 s)");
        println!("svg size: {:.2} MB (goal < 2 MB)", svg.len() as f64 / 1e6);
        assert!(render < 1.0 && svg.len() < 2_000_000);
    }
}
