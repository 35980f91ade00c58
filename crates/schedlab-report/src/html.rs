//! The HTML report (`schedlab report`): one self-contained file for any number of result
//! records — no script, no network: the styles are inline and the charts are inline SVG.
//!
//! Per record it shows the command line that made it, the machine and kernel facts, the metrics'
//! definitions (each written once, later records link to an earlier record's equal facts), for a
//! sweep its table, each metric against each varied key with confidence bars and every metric's
//! repetitions as a strip plot (one row per configuration) — or, for a record of one
//! configuration, a chart per metric of its repetitions with their mean and interval — the
//! workload's seed-style tables (chat's seed 000 table, interbench's tables), and per
//! configuration the summary (N, mean, ±CI, SD, min, median, max, outliers among 5 or more
//! repetitions, and the repetitions as dots) with the counters table.
//!
//! Charts are drawn at the width the page gives them (a sweep's two to a row, a strip plot a
//! row of its own), so their text shows at the size it is written, 13 px and up.
//!
//! Every text that comes from a record or a file name goes through [`escape`]; the charts drawn
//! by plotters are escaped by its SVG backend, the strip plots here by [`escape`].
//!
//! [`write_report`] checks the output path before reading anything, reads every record before
//! writing anything, and writes through [`crate::output`] (a temporary name in the output's
//! directory, renamed): a failed report leaves no file behind.

use crate::export::{read_json, ReadError};
use crate::output;
use crate::plot::{distribution_svg, is_numeric_key, metric_chart_svg};
use crate::table::num;
use schedlab_stats::{metric_values, MIN_OUTLIER_N};
use schedlab_workload::record::{ConfigResult, MetricDef, RunRecord};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A record and the file it was read from.
#[derive(Clone, Debug)]
pub struct Input {
    /// The file (as the user named it, or found in a directory the user named).
    pub path: PathBuf,
    /// The record it holds.
    pub record: RunRecord,
}

/// Why a report cannot be made; each names the file or directory at fault.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No input was given.
    #[error("no result records given")]
    NoInputs,
    /// A directory given as input cannot be listed.
    #[error("{}: {source}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A directory given as input holds no `*.json` file.
    #[error("{}: no *.json file in this directory", path.display())]
    EmptyDir {
        /// The directory.
        path: PathBuf,
    },
    /// An input file cannot be read or is not a record.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The report cannot be written at the output path.
    #[error("{}: cannot write the report there: {reason}", path.display())]
    Output {
        /// The output path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The output is one of the records read.
    #[error(transparent)]
    Overlap(output::InputOverlap),
}

/// What [`write_report`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// Records in the report.
    pub records: usize,
    /// Configurations over all records.
    pub configs: usize,
    /// Size of the file in bytes.
    pub bytes: usize,
}

/// The record files `paths` name: files as given; a sweep's `--out` directory by its
/// `sweep.json` alone (its per-configuration records hold the same repetitions, and would show
/// the sweep twice); any other directory by its `*.json` files (not recursively) in name order.
pub fn expand_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ReportError> {
    if paths.is_empty() {
        return Err(ReportError::NoInputs);
    }
    let mut files = Vec::new();
    for p in paths {
        if !p.is_dir() {
            files.push(p.clone());
            continue;
        }
        let dir_err = |source| ReportError::Dir {
            path: p.clone(),
            source,
        };
        let sweep = p.join("sweep.json");
        if sweep.is_file() {
            files.push(sweep);
            continue;
        }
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in std::fs::read_dir(p).map_err(dir_err)? {
            let path = entry.map_err(dir_err)?.path();
            if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                found.push(path);
            }
        }
        if found.is_empty() {
            return Err(ReportError::EmptyDir { path: p.clone() });
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// Read the record files `files` ([`expand_inputs`] gives them); the first unreadable one stops
/// it.
pub fn read_inputs(files: Vec<PathBuf>) -> Result<Vec<Input>, ReportError> {
    files
        .into_iter()
        .map(|path| {
            let record = read_json(&path)?;
            Ok(Input { path, record })
        })
        .collect()
}

/// Make the report of the records `inputs` name (files or directories) at output `out` (a
/// file, `-` for standard output, a device or FIFO; see [`crate::output`]). The output path is
/// checked first, also against every record it would read, then every record is read; only
/// then is the report rendered and written (atomically, for a file).
pub fn write_report(inputs: &[PathBuf], out: &Path) -> Result<Written, ReportError> {
    if inputs.is_empty() {
        return Err(ReportError::NoInputs);
    }
    let refuse = |reason: String| ReportError::Output {
        path: out.to_path_buf(),
        reason,
    };
    let target = output::resolve(out).map_err(|e| refuse(e.reason))?;
    let files = expand_inputs(inputs)?;
    let named: Vec<(&str, &Path)> = files.iter().map(|f| ("a record", f.as_path())).collect();
    output::refuse_inputs("-o", out, &target, &named).map_err(ReportError::Overlap)?;
    let records = read_inputs(files)?;
    let html = render(&records);
    output::write_target(&target, html.as_bytes()).map_err(|e| refuse(e.to_string()))?;
    Ok(Written {
        records: records.len(),
        configs: records.iter().map(|i| i.record.configs.len()).sum(),
        bytes: html.len(),
    })
}

/// `text` with HTML's special characters replaced by entities, safe in element content and in
/// quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A command line as one shell line: words with characters the shell treats specially are
/// single-quoted.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars().all(|c| {
                    c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c) || !c.is_ascii()
                });
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

use schedlab_workload::duration::utc_time;

/// The keys that name a record's configurations (`policy`, `cpus`), in the order the labels
/// first give them; empty for a record of one unnamed configuration.
pub fn varied_keys(record: &RunRecord) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for c in &record.configs {
        for kv in c.label.split(' ') {
            if let Some((k, _)) = kv.split_once('=') {
                if !k.is_empty() && !keys.iter().any(|x| x == k) {
                    keys.push(k.to_string());
                }
            }
        }
    }
    keys
}

/// A text table (the seed-style ones of [`crate::text`], [`crate::sweep`], [`crate::seed`])
/// under a title.
#[derive(Clone, Debug, PartialEq)]
pub struct TextTable {
    /// What the table shows.
    pub title: String,
    /// The table as the terminal shows it.
    pub text: String,
}

/// The record's tables in the seed documents' forms, over all configurations: the workload's
/// own (chat's seed 000 table, interbench's tables) and, for any workload whose repetitions
/// carry lock statistics, lockmeter's (seed 003), as `--locks` prints it.
pub fn seed_tables(record: &RunRecord) -> Vec<TextTable> {
    let keys = varied_keys(record);
    let mut tables = Vec::new();
    if let (Some(def), Some(text)) = (
        crate::seed::seed_table_def(record),
        crate::seed::seed_table(record, &keys),
    ) {
        tables.push(TextTable {
            title: def.title.into(),
            text,
        });
    }
    if let (Some(def), Some(text)) = (
        crate::seed::own_tables_def(record),
        crate::seed::own_tables(record, None),
    ) {
        tables.push(TextTable {
            title: def.title.into(),
            text,
        });
    }
    let has_locks =
        (record.configs.iter()).any(|c| c.repetitions.iter().any(|r| !r.locks.is_empty()));
    if has_locks {
        tables.push(TextTable {
            title: "Lock statistics (lockmeter, seed 003)".into(),
            text: crate::text::lock_tables(record),
        });
    }
    tables
}

/// The page's styles (inline: the file needs nothing else), including the strip plots' and the
/// summary rows' SVG classes.
const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1200px;\
padding:1em 2em;color:#222;background:#fff}\
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ccc;margin-top:2em}\
h3{margin-top:1.4em;font-size:1.1em}h4{margin:1em 0 .3em}\
table{border-collapse:collapse;margin:.4em 0}\
th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right;vertical-align:top}\
th{background:#f0f0f0;white-space:nowrap}td.l,th.l{text-align:left}\
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;overflow-x:auto;font-size:.85em}\
pre.cmd{white-space:pre-wrap;word-break:break-all}\
svg{max-width:100%;height:auto;display:block}figure{margin:0}\
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:.8em}\
figure.strip{grid-column:1/-1}\
table.counters td:nth-child(2){text-align:left}\
.note{color:#666;font-size:.9em}.warn{color:#a00}\
svg .grid{stroke:#eee}svg .axis{stroke:#999}svg .mean{stroke:#000;stroke-width:2}\
svg .ci{stroke-width:2;opacity:.5}svg .dot{fill-opacity:.7}\
svg text.r{text-anchor:end}svg text.m{text-anchor:middle}\
svg.dots{display:inline-block}svg.dots circle{fill:#1f77b4;fill-opacity:.6}";

/// The whole report of `inputs` as one HTML document.
pub fn render(inputs: &[Input]) -> String {
    let mut h = String::with_capacity(16_384 * inputs.len().max(1));
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(h, "<title>schedlab report</title>\n<style>{STYLE}</style>");
    h.push_str("</head>\n<body>\n<h1>schedlab report</h1>\n");
    let configs: usize = inputs.iter().map(|i| i.record.configs.len()).sum();
    let _ = writeln!(
        h,
        "<p class=\"note\">{} record{}, {configs} configuration{}.</p>",
        inputs.len(),
        plural(inputs.len()),
        plural(configs)
    );
    index(&mut h, inputs);
    for i in 0..inputs.len() {
        record_section(&mut h, inputs, i);
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// `s` unless `n` is 1.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The table of contents: one row per record.
fn index(h: &mut String, inputs: &[Input]) {
    h.push_str("<table class=\"index\">\n<tr><th>#</th><th class=\"l\">file</th><th class=\"l\">workload</th><th class=\"l\">backend</th><th>configs</th><th>repetitions</th><th class=\"l\">primary metric</th></tr>\n");
    for (i, input) in inputs.iter().enumerate() {
        let r = &input.record;
        let reps: usize = r.configs.iter().map(|c| c.repetitions.len()).sum();
        let primary = match (r.primary_metric(), r.configs.as_slice()) {
            (Some(m), [c]) => match c.summary.get(&m.name) {
                Some(s) => format!("{} = {} {}", m.name, mean_ci(c, &m.name, s.mean), m.unit),
                None => m.name.clone(),
            },
            (Some(m), _) => m.name.clone(),
            (None, _) => "-".into(),
        };
        let _ = writeln!(
            h,
            "<tr><td><a href=\"#r{i}\">{}</a></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{reps}</td><td class=\"l\">{}</td></tr>",
            i + 1,
            escape(&input.path.display().to_string()),
            escape(&r.workload),
            escape(&backend_line(r)),
            r.configs.len(),
            escape(&primary),
        );
    }
    h.push_str("</table>\n");
}

/// `12.3 ± 0.4` (the record's interval) or `12.3` when there is none.
fn mean_ci(config: &ConfigResult, metric: &str, mean: f64) -> String {
    match config.intervals.get(metric).and_then(|i| i.half_width) {
        Some(ci) => format!("{} ± {}", num(mean), num(ci)),
        None => num(mean),
    }
}

/// `sim (eevdf, seed 1)` or `real`.
fn backend_line(r: &RunRecord) -> String {
    let mut extra = Vec::new();
    if let Some(p) = &r.backend.policy {
        extra.push(p.clone());
    }
    if let Some(s) = r.backend.seed {
        extra.push(format!("seed {s}"));
    }
    if extra.is_empty() {
        r.backend.kind.clone()
    } else {
        format!("{} ({})", r.backend.kind, extra.join(", "))
    }
}

/// The first record before `i` whose `part` equals record `i`'s.
fn first_same<T: PartialEq>(
    inputs: &[Input],
    i: usize,
    part: impl Fn(&RunRecord) -> &T,
) -> Option<usize> {
    let mine = part(&inputs[i].record);
    inputs[..i].iter().position(|e| part(&e.record) == mine)
}

/// A heading, then either the table `table` writes or, when an earlier record `same_as` has the
/// same facts, a link to that record's.
fn facts_once(
    h: &mut String,
    heading: &str,
    same_as: Option<usize>,
    table: impl FnOnce(&mut String),
) {
    let _ = writeln!(h, "<h3>{heading}</h3>");
    match same_as {
        Some(k) => {
            let _ = writeln!(
                h,
                "<p class=\"note\">The same as <a href=\"#r{k}\">record {}</a>'s.</p>",
                k + 1
            );
        }
        None => table(h),
    }
}

/// Record `i`'s section: its command, sweep, seed tables, strip plots, facts and configurations.
fn record_section(h: &mut String, inputs: &[Input], i: usize) {
    let input = &inputs[i];
    let r = &input.record;
    let file = input.path.display().to_string();
    let _ = writeln!(
        h,
        "<section class=\"record\" id=\"r{i}\">\n<h2>{}. {} — {}</h2>",
        i + 1,
        escape(&r.workload),
        escape(&file)
    );
    let _ = writeln!(
        h,
        "<p class=\"note\">{} {}, started {}; {} configuration{}, {} warm-up run{} each, intervals at {}%{}.</p>",
        escape(&r.tool.name),
        escape(&r.tool.version),
        utc_time(r.started_unix),
        r.configs.len(),
        plural(r.configs.len()),
        r.warmup,
        plural(r.warmup),
        r.level,
        r.until
            .as_ref()
            .map_or(String::new(), |u| format!(", run until {}", escape(u)))
    );
    if r.interrupted {
        h.push_str(
            "<p class=\"warn\">Interrupted: only the repetitions that finished are shown.</p>\n",
        );
    }
    h.push_str("<h3>Command</h3>\n");
    let _ = writeln!(
        h,
        "<pre class=\"cmd\">{}</pre>",
        escape(&shell_line(&r.command))
    );
    if r.configs.len() > 1 {
        h.push_str("<p class=\"note\">This command runs every configuration below; a sweep resumed from its <code>--out</code> directory keeps the repetitions it finds.</p>\n");
    }
    let keys = varied_keys(r);
    if r.configs.len() > 1 && !keys.is_empty() {
        h.push_str("<h3>Sweep</h3>\n");
        if crate::seed::own_tables_def(r).is_none() {
            let _ = writeln!(
                h,
                "<pre>{}</pre>",
                escape(&crate::sweep::primary_table(r, &keys))
            );
        }
        sweep_charts(h, r, &keys);
    }
    for t in seed_tables(r) {
        let _ = writeln!(
            h,
            "<h3>{}</h3>\n<pre class=\"seed\">{}</pre>",
            escape(&t.title),
            escape(&t.text)
        );
    }
    timeline_section(h, r);
    if r.configs.len() == 1 {
        distribution_charts(h, r, &r.configs[0]);
    }
    // Across configurations; each configuration's own repetitions are in its summary table.
    if r.configs.len() > 1 && r.configs.iter().any(|c| !c.repetitions.is_empty()) {
        h.push_str("<h3>Repetitions</h3>\n<div class=\"charts\">\n");
        for m in &r.metrics {
            if let Some(svg) = strip_plot(r, m) {
                let _ = writeln!(h, "<figure class=\"strip\">{svg}</figure>");
            }
        }
        h.push_str("</div>\n");
    }
    // Facts shared with an earlier record are written once; later records link to them.
    facts_once(
        h,
        "Machine and kernel",
        first_same(inputs, i, |r| &r.machine),
        |h| machine_facts(h, r),
    );
    facts_once(h, "Backend", first_same(inputs, i, |r| &r.backend), |h| {
        backend_facts(h, r)
    });
    facts_once(h, "Metrics", first_same(inputs, i, |r| &r.metrics), |h| {
        metric_defs(h, r)
    });
    h.push_str("<h3>Configurations</h3>\n");
    for (ci, c) in r.configs.iter().enumerate() {
        config_block(h, r, c, i, ci);
    }
    h.push_str("</section>\n");
}

/// The run-queue timeline (`--timeline`), when the record has one: its figures and its chart,
/// embedded (the same SVG `--timeline FILE.svg` writes).
fn timeline_section(h: &mut String, r: &RunRecord) {
    let text = crate::timeline::timeline_text(r);
    if text.is_empty() {
        return;
    }
    h.push_str("<h3>Run-queue timeline</h3>\n");
    let _ = writeln!(h, "<pre class=\"seed\">{}</pre>", escape(text.trim_start()));
    match crate::timeline::timeline_svg(r) {
        Ok(svg) => {
            let _ = writeln!(h, "<figure class=\"timeline\">{svg}</figure>");
        }
        Err(e) => {
            let _ = writeln!(
                h,
                "<p class=\"warn\">The timeline chart could not be drawn: {}</p>",
                escape(&e.to_string())
            );
        }
    }
}

/// Rows of two columns: a name and its value.
fn facts_table(h: &mut String, rows: &[(String, String)]) {
    h.push_str("<table class=\"facts\">\n");
    for (k, v) in rows {
        let _ = writeln!(
            h,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            escape(k),
            escape(v)
        );
    }
    h.push_str("</table>\n");
}

/// The machine and kernel facts.
fn machine_facts(h: &mut String, r: &RunRecord) {
    let m = &r.machine;
    let unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    facts_table(
        h,
        &[
            ("host".into(), m.hostname.clone()),
            ("kernel release".into(), m.kernel_release.clone()),
            ("kernel version".into(), m.kernel_version.clone()),
            ("architecture".into(), m.arch.clone()),
            ("CPUs online".into(), m.cpus.to_string()),
            ("CPU model".into(), unknown(&m.cpu_model)),
            ("preemption model".into(), unknown(&m.preempt)),
        ],
    );
}

/// Where the record ran: the backend, the simulated policy and seed, and the backend's details.
fn backend_facts(h: &mut String, r: &RunRecord) {
    let b = &r.backend;
    let mut rows: Vec<(String, String)> = vec![("backend".into(), b.kind.clone())];
    if let Some(p) = &b.policy {
        rows.push(("simulated policy".into(), p.clone()));
    }
    if let Some(s) = b.seed {
        rows.push(("simulator seed".into(), s.to_string()));
    }
    rows.extend(b.details.iter().map(|(k, v)| (k.clone(), v.clone())));
    facts_table(h, &rows);
}

/// The metrics the workload reports, primary first.
fn metric_defs(h: &mut String, r: &RunRecord) {
    h.push_str("<table class=\"metrics\">\n<tr><th class=\"l\">metric</th><th class=\"l\">unit</th><th class=\"l\">better</th><th class=\"l\">how it is computed</th></tr>\n");
    for m in &r.metrics {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            escape(&m.name),
            escape(&m.unit),
            match m.better {
                schedlab_workload::record::Better::Higher => "higher",
                schedlab_workload::record::Better::Lower => "lower",
            },
            escape(&m.description)
        );
    }
    h.push_str("</table>\n");
}

/// A record of one configuration: each metric's repetitions as a chart of their own (a point
/// per repetition, the mean and its interval), where a sweep has its charts.
fn distribution_charts(h: &mut String, r: &RunRecord, c: &ConfigResult) {
    let mut figures = String::new();
    for m in &r.metrics {
        match distribution_svg(r, c, m) {
            Ok(Some(svg)) => {
                let _ = writeln!(figures, "<figure class=\"distribution\">{svg}</figure>");
            }
            Ok(None) => {}
            Err(e) => {
                let _ = writeln!(
                    figures,
                    "<p class=\"note\">{}: {}</p>",
                    escape(&m.name),
                    escape(&e.to_string())
                );
            }
        }
    }
    if !figures.is_empty() {
        let _ = write!(
            h,
            "<h3>Repetitions</h3>\n<div class=\"charts\">\n{figures}</div>\n"
        );
    }
}

/// Each metric against each varied key, one line per combination of the other keys.
fn sweep_charts(h: &mut String, r: &RunRecord, keys: &[String]) {
    h.push_str("<div class=\"charts\">\n");
    // Numeric keys first: a line over numbers reads better than one over names.
    let mut x_keys: Vec<&String> = keys.iter().filter(|k| is_numeric_key(r, k)).collect();
    x_keys.extend(keys.iter().filter(|k| !is_numeric_key(r, k)));
    for m in &r.metrics {
        for x in &x_keys {
            let others: Vec<String> = keys.iter().filter(|k| k != x).cloned().collect();
            match metric_chart_svg(r, &m.name, x, &others) {
                Ok(svg) => {
                    let _ = writeln!(h, "<figure class=\"chart\">{svg}</figure>");
                }
                Err(e) => {
                    let _ = writeln!(
                        h,
                        "<p class=\"note\">{} against {}: {}</p>",
                        escape(&m.name),
                        escape(x),
                        escape(&e.to_string())
                    );
                }
            }
        }
    }
    h.push_str("</div>\n");
}

/// One configuration: its summary table and its counters.
fn config_block(h: &mut String, r: &RunRecord, c: &ConfigResult, ri: usize, ci: usize) {
    let title = if c.label.is_empty() {
        "the configuration".to_string()
    } else {
        c.label.clone()
    };
    let _ = writeln!(
        h,
        "<div class=\"config\" id=\"r{ri}c{ci}\">\n<h4>{}</h4>",
        escape(&title)
    );
    if let Some(machine) = &c.machine {
        let _ = writeln!(
            h,
            "<p class=\"note\">simulated machine: {}</p>",
            escape(machine)
        );
    }
    let params: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if !params.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"note\">parameters: {}</p>",
            escape(&params.join(" "))
        );
    }
    let level = r.level;
    let _ = writeln!(
        h,
        "<table class=\"summary\">\n<tr><th class=\"l\">metric</th><th class=\"l\">unit</th><th>N</th><th>mean</th><th>±CI{level}</th><th>SD</th><th>min</th><th>median</th><th>max</th><th class=\"l\">outliers (run; N ≥ {MIN_OUTLIER_N})</th><th class=\"l\">repetitions (min to max)</th></tr>"
    );
    for m in &r.metrics {
        let Some(s) = c.summary.get(&m.name) else {
            continue;
        };
        let iv = c.intervals.get(&m.name);
        // Judged only among enough repetitions (older records flag some among fewer).
        let outliers: Vec<String> = iv
            .filter(|_| s.n >= MIN_OUTLIER_N)
            .map(|i| i.outliers.iter().map(|o| (o + 1).to_string()).collect())
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td></tr>",
            escape(&m.name),
            escape(&m.unit),
            s.n,
            num(s.mean),
            iv.and_then(|i| i.half_width).map_or("-".into(), num),
            num(s.sd),
            num(s.min),
            num(s.median),
            num(s.max),
            outliers.join(", "),
            repetition_dots(c, &m.name, s.mean)
        );
    }
    h.push_str("</table>\n");
    match c.converged {
        Some(true) => h.push_str("<p class=\"note\">converged</p>\n"),
        Some(false) => h.push_str("<p class=\"warn\">did not converge</p>\n"),
        None => {}
    }
    html_table(h, "counters", &crate::text::counters_grid(c));
    for line in crate::text::counters_notes(c) {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(&line));
    }
    h.push_str("</div>\n");
}

/// `table` as an HTML table of class `class`: the first column left-aligned, the others (numbers)
/// right-aligned.
fn html_table(h: &mut String, class: &str, table: &crate::table::Table) {
    let _ = write!(h, "<table class=\"{class}\">\n<tr>");
    for (i, c) in table.header().iter().enumerate() {
        let left = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(h, "<th{left}>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    for row in table.rows() {
        h.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let left = if i == 0 { " class=\"l\"" } else { "" };
            let _ = write!(h, "<td{left}>{}</td>", escape(c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Width of the dots of a summary table's row, and the room kept at either end.
const DOTS_WIDTH: f64 = 160.0;
const DOTS_PAD: f64 = 5.0;

/// A small SVG for a summary table's row: a dot per repetition of `metric` in `c` on the row's
/// own scale (its min at the left, its max at the right) and a bar at the `mean`; empty when no
/// repetition has the metric.
pub fn repetition_dots(c: &ConfigResult, metric: &str, mean: f64) -> String {
    let mut values = metric_values(c, metric);
    values.retain(|v| v.is_finite());
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    if lo > hi {
        return String::new();
    }
    let span = DOTS_WIDTH - 2.0 * DOTS_PAD;
    let x = |v: f64| {
        if hi > lo {
            DOTS_PAD + (v.clamp(lo, hi) - lo) / (hi - lo) * span
        } else {
            DOTS_WIDTH / 2.0
        }
    };
    let mut s = format!(
        "<svg class=\"dots\" width=\"{DOTS_WIDTH}\" height=\"18\" viewBox=\"0 0 {DOTS_WIDTH} 18\"><line class=\"axis\" x1=\"{DOTS_PAD}\" y1=\"9\" x2=\"{}\" y2=\"9\"/><line class=\"mean\" x1=\"{m:.1}\" y1=\"2\" x2=\"{m:.1}\" y2=\"16\"/>",
        DOTS_WIDTH - DOTS_PAD,
        m = x(mean)
    );
    for (k, v) in values.iter().enumerate() {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"9\" r=\"3.5\"><title>run {}: {}</title></circle>",
            x(*v),
            k + 1,
            escape(&num(*v))
        );
    }
    s.push_str("</svg>");
    s
}

/// Width and height of a strip plot's drawing, and its margins.
const STRIP_WIDTH: f64 = 800.0;
const STRIP_LEFT: f64 = 250.0;
const STRIP_RIGHT: f64 = 30.0;
const STRIP_ROW: f64 = 22.0;
const STRIP_TOP: f64 = 34.0;
const STRIP_BOTTOM: f64 = 42.0;
/// The most characters of a configuration's label the left margin holds.
const STRIP_LABEL_CHARS: usize = 34;

/// A strip plot of `metric`: one row per configuration, a dot per repetition, a bar at the mean
/// and the confidence interval as a line; `None` when no repetition has the metric.
pub fn strip_plot(r: &RunRecord, metric: &MetricDef) -> Option<String> {
    let rows: Vec<(&ConfigResult, Vec<f64>)> = r
        .configs
        .iter()
        .map(|c| {
            let mut values = metric_values(c, &metric.name);
            values.retain(|v| v.is_finite());
            (c, values)
        })
        .collect();
    let all = rows.iter().flat_map(|(_, v)| v.iter().copied());
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        return None;
    }
    // The axis runs from tick to tick: round values printed with the unit and an SI prefix.
    let ticks = crate::units::nice_ticks(lo, hi, 6);
    let format = crate::units::AxisFormat::new(&metric.unit, &ticks);
    let (lo, hi) = (ticks[0], ticks[ticks.len() - 1]);
    let height = STRIP_TOP + STRIP_BOTTOM + STRIP_ROW * rows.len() as f64;
    let plot_w = STRIP_WIDTH - STRIP_LEFT - STRIP_RIGHT;
    let x = |v: f64| STRIP_LEFT + (v - lo) / (hi - lo) * plot_w;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{STRIP_WIDTH}\" height=\"{height}\" viewBox=\"0 0 {STRIP_WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"13\">"
    );
    let _ = write!(
        s,
        "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/><text class=\"m\" x=\"{}\" y=\"20\" font-size=\"15\">{} — {} ({}) per repetition</text>",
        STRIP_WIDTH / 2.0,
        escape(&r.workload),
        escape(&metric.name),
        escape(&metric.unit)
    );
    let bottom = height - STRIP_BOTTOM;
    // The axis and its ticks.
    let _ = write!(
        s,
        "<line class=\"axis\" x1=\"{STRIP_LEFT}\" y1=\"{bottom}\" x2=\"{}\" y2=\"{bottom}\"/>",
        STRIP_WIDTH - STRIP_RIGHT
    );
    for v in &ticks {
        let tx = x(*v);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"{STRIP_TOP}\" x2=\"{tx:.1}\" y2=\"{}\"/><text class=\"m\" x=\"{tx:.1}\" y=\"{}\">{}</text>",
            bottom + 4.0,
            bottom + 18.0,
            escape(&format.format(*v))
        );
    }
    let _ = write!(
        s,
        "<text class=\"m\" x=\"{}\" y=\"{}\">{} ({})</text>",
        STRIP_LEFT + plot_w / 2.0,
        bottom + 36.0,
        escape(&metric.name),
        escape(&metric.unit)
    );
    for (i, (c, values)) in rows.iter().enumerate() {
        let y = STRIP_TOP + STRIP_ROW * (i as f64 + 0.5);
        let label = if c.label.is_empty() {
            "(the configuration)"
        } else {
            c.label.as_str()
        };
        // A label longer than the margin holds is cut; the whole of it shows on hover.
        let shown: String = if label.chars().count() > STRIP_LABEL_CHARS {
            let cut: String = label.chars().take(STRIP_LABEL_CHARS - 1).collect();
            format!("{cut}…")
        } else {
            label.to_string()
        };
        let _ = write!(
            s,
            "<text class=\"r\" x=\"{}\" y=\"{:.1}\"><title>{}</title>{}</text>",
            STRIP_LEFT - 8.0,
            y + 4.0,
            escape(label),
            escape(&shown)
        );
        if values.is_empty() {
            continue;
        }
        let color = crate::palette::hex(i);
        if let Some(sum) = c.summary.get(&metric.name) {
            if let Some(ci) = c.intervals.get(&metric.name).and_then(|i| i.half_width) {
                let _ = write!(
                    s,
                    "<line class=\"ci\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\"/>",
                    x((sum.mean - ci).max(lo)),
                    x((sum.mean + ci).min(hi))
                );
            }
            let mx = x(sum.mean.clamp(lo, hi));
            let _ = write!(
                s,
                "<line class=\"mean\" x1=\"{mx:.1}\" y1=\"{:.1}\" x2=\"{mx:.1}\" y2=\"{:.1}\"/>",
                y - 8.0,
                y + 8.0
            );
        }
        for (k, v) in values.iter().enumerate() {
            // Spread the dots vertically a little so equal values stay visible.
            let jitter = (k % 5) as f64 * 2.0 - 4.0;
            let _ = write!(
                s,
                "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{color}\"><title>run {}: {}</title></circle>",
                x(*v),
                y + jitter,
                k + 1,
                escape(&num(*v))
            );
        }
    }
    s.push_str("</svg>");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::record::{
        Better, Interval, MachineInfo, Repetition, Summary, SCHEMA_VERSION,
    };
    use std::collections::BTreeMap;

    const EVIL: &str = "<script>alert('x')</script>&\"";

    /// A two-configuration sweep over `threads`, with text from the record that tries to inject
    /// markup everywhere it can.
    fn record(label_extra: &str) -> RunRecord {
        let metric = MetricDef {
            name: "us_per_yield".into(),
            unit: "us".into(),
            better: Better::Lower,
            description: format!("time per yield {EVIL}"),
        };
        let configs = [1, 4]
            .iter()
            .map(|t| {
                let values = [1.0 * *t as f64, 1.5 * *t as f64, 2.0 * *t as f64];
                let repetitions = values
                    .iter()
                    .map(|v| Repetition {
                        metrics: BTreeMap::from([("us_per_yield".to_string(), *v)]),
                        ..Default::default()
                    })
                    .collect();
                ConfigResult {
                    label: format!("threads={t}{label_extra}"),
                    params: BTreeMap::from([("threads".to_string(), t.to_string())]),
                    repetitions,
                    summary: BTreeMap::from([(
                        "us_per_yield".to_string(),
                        Summary {
                            n: 3,
                            mean: 1.5 * *t as f64,
                            sd: 0.5 * *t as f64,
                            min: values[0],
                            median: values[1],
                            max: values[2],
                        },
                    )]),
                    intervals: BTreeMap::from([(
                        "us_per_yield".to_string(),
                        Interval {
                            half_width: Some(0.25),
                            ..Default::default()
                        },
                    )]),
                    ..Default::default()
                }
            })
            .collect();
        RunRecord {
            schema: SCHEMA_VERSION,
            workload: "yield".into(),
            command: vec!["schedlab".into(), "sweep".into(), EVIL.into()],
            machine: MachineInfo {
                hostname: EVIL.into(),
                cpus: 2,
                ..Default::default()
            },
            metrics: vec![metric],
            level: 95.0,
            configs,
            ..Default::default()
        }
    }

    /// Issue 19: a record with a run-queue timeline gets its figures and its chart; one
    /// without gets neither.
    #[test]
    fn a_record_with_a_timeline_shows_its_figures_and_chart() {
        use schedlab_workload::timeline::replay::{analyse, DEFAULT_BINS};
        use schedlab_workload::timeline::{TaskState, Timeline, TimelineTask};
        let plain = render(&[Input {
            path: "plain.json".into(),
            record: record(""),
        }]);
        assert!(!plain.contains("Run-queue timeline"));
        // Two tasks waiting on CPU 0 for a second while CPU 1 is idle.
        let mut tl = Timeline::new(2, "synthetic", "all");
        for _ in 0..2 {
            tl.add_task(TimelineTask {
                group: "g".into(),
                workload: true,
                allowed: None,
            });
        }
        tl.push(0, 0, 0, TaskState::Running);
        tl.push(0, 1, 0, TaskState::Waiting);
        tl.end_ns = 1_000_000_000;
        let mut r = record("");
        r.configs[0].repetitions[0].timeline = Some(analyse(&tl, DEFAULT_BINS));
        let html = render(&[Input {
            path: "tl.json".into(),
            record: r,
        }]);
        assert!(html.contains("<h3>Run-queue timeline</h3>"), "{html}");
        assert!(html.contains("RUN-QUEUE TIMELINE"));
        assert!(html.contains("idle while a task waited"), "{html}");
        assert_eq!(html.matches("<figure class=\"timeline\"><svg").count(), 1);
        assert!(html.contains("divergence from the mean"));
    }

    #[test]
    fn escape_replaces_every_special_character() {
        assert_eq!(
            escape(EVIL),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
        assert_eq!(escape("plain µs"), "plain µs");
    }

    #[test]
    fn no_text_from_a_record_reaches_the_page_as_markup() {
        let html = render(&[Input {
            path: PathBuf::from(format!("{EVIL}.json")),
            record: record(" <b>x</b>"),
        }]);
        assert!(!html.contains("<script"), "an injected script survived");
        assert!(!html.contains("<b>"), "an injected tag survived");
        assert!(html.contains("&lt;script&gt;alert("));
        // Inside the charts too (plotters' escaping, and the strip plot's).
        assert!(html.contains("threads=1 &lt;b&gt;x&lt;/b&gt;"));
        // No script of our own either: the page works without one.
        assert!(!html.to_lowercase().contains("<script"));
    }

    #[test]
    fn the_report_holds_summary_facts_command_and_charts() {
        let html = render(&[Input {
            path: PathBuf::from("sweep.json"),
            record: record(""),
        }]);
        assert!(html.starts_with("<!DOCTYPE html>"));
        // The per-configuration summary with its columns and values.
        assert!(html.contains("<th>±CI95</th><th>SD</th><th>min</th><th>median</th><th>max</th>"));
        assert!(html.contains(
            "<td class=\"l\">us_per_yield</td><td class=\"l\">us</td><td>3</td><td>6.000</td><td>0.2500</td><td>2.000</td><td>4.000</td><td>6.000</td><td>8.000</td>"
        ), "{html}");
        // The sweep's text table and one chart of the metric against threads.
        assert!(html.contains("us_per_yield (us) ± CI95"));
        assert_eq!(html.matches("<figure class=\"chart\"><svg").count(), 1);
        // The strip plot: a dot per repetition (2 configurations × 3).
        assert_eq!(html.matches("<circle class=\"dot\"").count(), 6);
        assert!(html.contains("<title>run 3: 8.000</title>"));
        // Facts and the command line, quoted for the shell.
        assert!(html.contains("<th class=\"l\">CPUs online</th><td class=\"l\">2</td>"));
        assert!(html.contains(
            "schedlab sweep &#39;&lt;script&gt;alert(&#39;\\&#39;&#39;x&#39;\\&#39;&#39;)&lt;/script&gt;&amp;&quot;&#39;"
        ), "{html}");
        // The index links to the record's section.
        assert!(html.contains("<a href=\"#r0\">1</a>") && html.contains("id=\"r0\""));
    }

    #[test]
    fn a_single_configuration_gets_no_sweep_and_no_strip_plot_but_its_dots() {
        let mut r = record("");
        r.configs.truncate(1);
        r.configs[0].label.clear();
        let html = render(&[Input {
            path: PathBuf::from("run.json"),
            record: r,
        }]);
        assert!(!html.contains("<h3>Sweep</h3>"));
        assert!(!html.contains("<figure class=\"strip\">"));
        assert!(html.contains("<h4>the configuration</h4>"));
        // Its repetitions, 1, 1.5 and 2, in the summary's row: at the ends and in the middle.
        assert!(html.contains(concat!(
            "<circle cx=\"5.0\" cy=\"9\" r=\"3.5\"><title>run 1: 1.000</title></circle>",
            "<circle cx=\"80.0\" cy=\"9\" r=\"3.5\"><title>run 2: 1.500</title></circle>",
            "<circle cx=\"155.0\" cy=\"9\" r=\"3.5\"><title>run 3: 2.000</title></circle>"
        )));
        // The index gives the single configuration's mean ± CI.
        assert!(html.contains("us_per_yield = 1.500 ± 0.2500 us"));
        // Its repetitions get a chart of their own.
        assert_eq!(
            html.matches("<figure class=\"distribution\"><svg").count(),
            1
        );
    }

    #[test]
    fn outliers_show_only_among_five_repetitions_and_counters_are_a_table() {
        let mut r = record("");
        r.configs.truncate(1);
        r.configs[0]
            .intervals
            .get_mut("us_per_yield")
            .unwrap()
            .outliers = vec![2];
        let page = |r: &RunRecord| {
            render(&[Input {
                path: PathBuf::from("run.json"),
                record: r.clone(),
            }])
        };
        // Run 3 of 3 (an older record's flag) is not shown: 3 repetitions are too few to judge.
        let html = page(&r);
        assert!(
            html.contains("<td class=\"l\"></td><td><svg class=\"dots\""),
            "{html}"
        );
        r.configs[0].summary.get_mut("us_per_yield").unwrap().n = 5;
        let html = page(&r);
        assert!(
            html.contains("<td class=\"l\">3</td><td><svg class=\"dots\""),
            "{html}"
        );
        // The counters: an HTML table with the text table's columns, its notes as text.
        r.configs[0].groups = vec![schedlab_workload::record::GroupInfo {
            name: "bench".into(),
            tasks: 1,
            knobs: Default::default(),
            observed: BTreeMap::new(),
        }];
        r.configs[0].counter_sources.switches = "sim".into();
        let html = page(&r);
        assert!(html.contains(
            "<table class=\"counters\">\n<tr><th class=\"l\">group</th><th>knobs</th><th>vol. switches</th>"
        ), "{html}");
        assert!(html.contains("<tr><td class=\"l\">bench</td>"), "{html}");
        assert!(
            html.contains("<p class=\"note\">counters: switches from sim</p>"),
            "{html}"
        );
        assert!(!html.contains("<pre class=\"counters\">"));
    }

    #[test]
    fn a_long_label_is_cut_in_the_strip_plot_and_whole_on_hover() {
        let long = " server.nice=-20 client.nice=19 profile=piii-700";
        let r = record(long);
        let svg = strip_plot(&r, &r.metrics[0]).unwrap();
        let whole = format!("threads=1{long}");
        let cut: String = whole.chars().take(STRIP_LABEL_CHARS - 1).collect();
        assert!(
            svg.contains(&format!("<title>{whole}</title>{cut}…</text>")),
            "{svg}"
        );
    }

    #[test]
    fn each_workload_gets_its_seed_tables() {
        let mut r = record("");
        assert_eq!(seed_tables(&r), Vec::new());
        r.workload = "chat".into();
        let chat = seed_tables(&r);
        assert_eq!(chat.len(), 1);
        assert!(
            chat[0].text.starts_with("Srvr Nice  Clnt Nice"),
            "{}",
            chat[0].text
        );
        r.workload = "interbench".into();
        for c in &mut r.configs {
            c.params.insert("bench".into(), "audio".into());
            c.params.insert("load".into(), "burn".into());
        }
        let ib = seed_tables(&r);
        assert_eq!(ib[0].title, "interbench tables (seed 004)");
        assert!(ib[0].text.contains("Latency +/- SD"), "{}", ib[0].text);
        let html = render(&[Input {
            path: PathBuf::from("ib.json"),
            record: r,
        }]);
        assert!(html.contains("<h3>interbench tables (seed 004)</h3>\n<pre class=\"seed\">"));
    }

    #[test]
    fn a_sweep_directory_stands_for_its_sweep_record_other_directories_for_every_record() {
        let sweep = tempfile::tempdir().unwrap();
        for f in ["sweep.json", "threads=1.json", "threads=2.json"] {
            std::fs::write(sweep.path().join(f), "{}").unwrap();
        }
        let other = tempfile::tempdir().unwrap();
        for f in ["b.json", "a.json", "notes.txt"] {
            std::fs::write(other.path().join(f), "{}").unwrap();
        }
        let files =
            expand_inputs(&[sweep.path().to_path_buf(), other.path().to_path_buf()]).unwrap();
        assert_eq!(
            files,
            [
                sweep.path().join("sweep.json"),
                other.path().join("a.json"),
                other.path().join("b.json")
            ]
        );
    }

    #[test]
    fn lock_statistics_get_lockmeters_table() {
        let mut r = record("");
        r.configs[0].repetitions[0].locks = vec![schedlab_workload::record::LockStats {
            name: "runqueue_<lock>".into(),
            kind: "spin".into(),
            kernel: true,
            acquisitions: 4,
            waited: 1,
            hold_ns: 4_000,
            hold_max_ns: 2_000,
            wait_ns: 500,
            wait_max_ns: 500,
            spin_ns: 500,
            elapsed_ns: 8_000,
            cpu_ns: 16_000,
        }];
        let tables = seed_tables(&r);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].title, "Lock statistics (lockmeter, seed 003)");
        assert!(tables[0].text.contains("SPINLOCKS"), "{}", tables[0].text);
        assert!(
            tables[0]
                .text
                .contains(" 50.0%  25.0%  1.0us( 2.0us)  0.5us( 0.5us)( 3.1%)"),
            "{}",
            tables[0].text
        );
        assert!(
            tables[0].text.contains("runqueue_<lock>"),
            "{}",
            tables[0].text
        );
        let html = render(&[Input {
            path: PathBuf::from("locks.json"),
            record: r,
        }]);
        assert!(html.contains("<h3>Lock statistics (lockmeter, seed 003)</h3>"));
        assert!(
            html.contains("runqueue_&lt;lock&gt;"),
            "the lock's name is escaped"
        );
        assert!(!html.contains("runqueue_<lock>"));
    }

    #[test]
    fn keys_times_and_shell_quoting() {
        assert_eq!(
            varied_keys(&record(" policy=o1")),
            vec!["threads".to_string(), "policy".to_string()]
        );
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(1_709_210_096), "2024-02-29 12:34:56 UTC");
        assert_eq!(
            shell_line(&["a".into(), "b c".into(), "it's".into(), String::new()]),
            r"a 'b c' 'it'\''s' ''"
        );
    }

    #[test]
    fn bad_output_and_bad_input_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.json");
        std::fs::write(&good, record("").to_json()).unwrap();
        // The output is a directory, or in a directory that does not exist.
        let e = write_report(std::slice::from_ref(&good), dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let nowhere = dir.path().join("no/such/dir/r.html");
        let e = write_report(std::slice::from_ref(&good), &nowhere).unwrap_err();
        assert!(
            e.to_string()
                .contains("not a file in an existing directory"),
            "{e}"
        );
        // A file that is not a record: its name in the error, and no output.
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"not\": \"a record\"}").unwrap();
        let out = dir.path().join("r.html");
        let e = write_report(&[good.clone(), bad.clone()], &out).unwrap_err();
        assert!(e.to_string().starts_with(&bad.display().to_string()), "{e}");
        let e = write_report(&[dir.path().join("missing.json")], &out).unwrap_err();
        assert!(e.to_string().contains("missing.json"), "{e}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let mut left = left;
        left.sort();
        assert_eq!(left, ["bad.json", "good.json"]);
        // A good report: the file, and nothing else beside it.
        std::fs::remove_file(&bad).unwrap();
        let w = write_report(&[dir.path().to_path_buf()], &out).unwrap();
        assert_eq!((w.records, w.configs), (1, 2));
        assert_eq!(std::fs::metadata(&out).unwrap().len() as usize, w.bytes);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        // A directory without records.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let e = write_report(&[empty], &out).unwrap_err();
        assert!(e.to_string().contains("no *.json file"), "{e}");
    }
}
