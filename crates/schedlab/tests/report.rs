//! `schedlab report`: the HTML file made from real simulated records, opened in headless
//! Chromium (when it is installed) to check that it renders without console errors and shows the
//! tables and charts; and the refusals that must leave no file behind.

mod common;

use common::{schedlab, succeeds};
use schedlab_report::html::varied_keys;
use schedlab_workload::record::RunRecord;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn s(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// Text that would run a script or make an element if it reached the page unescaped.
const INJECTED: &str = "<img src=x onerror=\"console.error('injected')\"></pre><script>console.error('injected')</script>";

/// Records of every kind the report reads, in `dir`: a simulated chat sweep (its `sweep.json`
/// and per-configuration records in `dir/sweep`), a single yield run, and a copy of a
/// configuration's record whose texts try to inject markup. Returns the report's inputs.
fn make_records(dir: &Path) -> Vec<PathBuf> {
    let sweep = dir.join("sweep");
    succeeds(&[
        "sweep",
        "chat",
        "--backend",
        "sim",
        "--vary",
        "policy=o1,cfs",
        "--vary",
        "cpus=1,2",
        "--rooms",
        "2",
        "--messages",
        "20",
        "--runs",
        "2",
        "--quiet",
        "--out",
        s(&sweep),
    ]);
    let single = dir.join("yield.json");
    succeeds(&[
        "run",
        "yield",
        "--backend",
        "sim",
        "--duration",
        "2ms",
        "--runs",
        "3",
        "--quiet",
        "--json",
        s(&single),
    ]);
    let text = std::fs::read_to_string(sweep.join("policy=o1_cpus=1.json")).unwrap();
    let mut evil = RunRecord::from_json(&text).unwrap();
    evil.configs[0].label = format!("policy={INJECTED}");
    evil.machine.hostname = INJECTED.into();
    evil.metrics[0].description = INJECTED.into();
    evil.command.push(INJECTED.into());
    let evil_path = dir.join("evil.json");
    std::fs::write(&evil_path, evil.to_json()).unwrap();
    vec![sweep.join("sweep.json"), single, evil_path]
}

/// The first of Chromium's names on `PATH`.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// Run headless Chromium on `page` with `args` (own profile directory, killed after two
/// minutes); returns stdout and stderr, which go through files so that a full pipe cannot stall
/// it.
fn chromium(browser: &Path, profile: &Path, page: &Path, args: &[&str]) -> (String, String) {
    let out_path = profile.with_extension("stdout");
    let err_path = profile.with_extension("stderr");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!(
                "chromium did not finish within two minutes on {}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (read(&out_path), read(&err_path))
}

/// Chromium's log lines for messages of the page's console (errors, uncaught exceptions).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(browser) = find_chromium() else {
        // Captured, so that `bin/test`'s summary names this test with the reason.
        eprintln!("skipped: chromium not found; install with: apt-get install chromium");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let inputs = make_records(dir.path());
    let report = dir.path().join("report.html");
    let mut args: Vec<&str> = vec!["report"];
    args.extend(inputs.iter().map(|p| s(p)));
    args.extend(["-o", s(&report)]);
    succeeds(&args);
    let records: Vec<RunRecord> = inputs
        .iter()
        .map(|p| RunRecord::from_json(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    let profile = dir.path().join("profile");

    // The check can fail: a page with a script error shows up in the log.
    let broken = dir.path().join("broken.html");
    std::fs::write(
        &broken,
        "<!DOCTYPE html><html><body><script>notDefined()</script></body></html>",
    )
    .unwrap();
    let (_, log) = chromium(&browser, &profile, &broken, &["--dump-dom"]);
    assert!(
        console_lines(&log).iter().any(|l| l.contains("notDefined")),
        "chromium's log does not show a page's console errors, so it cannot show the \
         report's:\n{log}"
    );

    let (dom, log) = chromium(&browser, &profile, &report, &["--dump-dom"]);
    assert_eq!(
        console_lines(&log),
        Vec::<&str>::new(),
        "console messages while loading the report"
    );
    assert!(dom.contains("<h1>schedlab report</h1>"), "{dom}");
    // Nothing from the records became markup: no script, no image, and the text is there.
    assert!(!dom.contains("<script") && !dom.contains("<img"), "{dom}");
    assert!(dom.contains("&lt;img src=x onerror="), "{dom}");
    // One summary table per configuration, holding every metric.
    let configs: usize = records.iter().map(|r| r.configs.len()).sum();
    assert_eq!(dom.matches("<table class=\"summary\">").count(), configs);
    for r in &records {
        for m in &r.metrics {
            assert!(dom.contains(&format!("<td class=\"l\">{}</td>", m.name)));
        }
    }
    // Each metric against each varied key of every record of several configurations (the chat
    // sweep's policy and cpus; the yield run's default list of thread counts).
    let sweep = &records[0];
    assert_eq!(sweep.configs.len(), 4);
    assert_eq!(varied_keys(sweep), ["policy", "cpus"]);
    let charts: usize = records
        .iter()
        .filter(|r| r.configs.len() > 1)
        .map(|r| r.metrics.len() * varied_keys(r).len())
        .sum();
    assert!(charts >= 2 * sweep.metrics.len());
    assert_eq!(dom.matches("<figure class=\"chart\"><svg").count(), charts);
    // A strip plot of the repetitions per metric of each record of several configurations, and
    // in every summary table's row its configuration's repetitions as dots.
    let strips: usize = records
        .iter()
        .filter(|r| r.configs.len() > 1)
        .map(|r| r.metrics.len())
        .sum();
    assert_eq!(dom.matches("<figure class=\"strip\"><svg").count(), strips);
    let rows: usize = records
        .iter()
        .flat_map(|r| &r.configs)
        .map(|c| c.summary.len())
        .sum();
    assert_eq!(dom.matches("<svg class=\"dots\"").count(), rows);
    assert!(dom.contains("chat msgs_per_s (msg/s) vs cpus"));
    assert!(dom.contains("chat msgs_per_s (msg/s) vs policy"));
    // Seed 000's table (chat), the counters, the facts and each record's command line.
    assert_eq!(
        dom.matches("calls to wake_up").count(),
        2,
        "sweep and evil copy"
    );
    assert!(dom.contains("vol. switches"));
    assert!(dom.contains("<th class=\"l\">kernel release</th>"));
    assert!(dom.contains("sweep chat --backend sim --vary policy=o1,cfs --vary cpus=1,2"));
    assert!(dom.contains("run yield --backend sim --duration 2ms --runs 3"));

    // It draws: the report's screenshot holds far more than an empty page's.
    let empty = dir.path().join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let shot = |page: &Path, png: &Path| {
        let arg = format!("--screenshot={}", png.display());
        chromium(&browser, &profile, page, &[&arg, "--window-size=1280,1600"]);
        std::fs::metadata(png)
            .unwrap_or_else(|e| panic!("no screenshot {}: {e}", png.display()))
            .len()
    };
    let blank = shot(&empty, &dir.path().join("empty.png"));
    let drawn = shot(&report, &dir.path().join("report.png"));
    assert!(
        drawn > 10 * blank,
        "report screenshot {drawn} bytes, empty page {blank} bytes"
    );

    // A record of one configuration gets a chart of its repetitions per metric.
    let single: usize = records
        .iter()
        .filter(|r| r.configs.len() == 1)
        .map(|r| r.configs[0].summary.len())
        .sum();
    assert!(single > 0);
    assert_eq!(
        dom.matches("<figure class=\"distribution\"><svg").count(),
        single
    );
    // Counters are a table, not preformatted text.
    assert_eq!(dom.matches("<table class=\"counters\">").count(), configs);
    assert!(!dom.contains("<pre class=\"counters\">"));

    // The charts' text reads at the report's width: each text of every sweep chart, strip plot
    // and distribution chart, measured in the browser (font size × the figure's scale on the
    // page), is at least 11 px.
    let (texts, smallest, which) = smallest_chart_text(&browser, &profile, &report);
    assert!(texts > 100, "only {texts} texts measured");
    assert!(
        smallest >= 11.0,
        "the smallest chart text is {smallest:.2} px ({which:?}) at 1280 px"
    );

    // A chart is drawn, not blank: alone on a page, its screenshot has the first series' colour
    // and many drawn pixels, where an empty figure of the same size has none.
    let html = std::fs::read_to_string(&report).unwrap();
    let chart = first_figure(&html, "chart");
    let (inked, colour) = figure_pixels(&browser, &profile, dir.path(), "chart", chart);
    assert!(
        inked > 0.03 && colour > 50,
        "the first chart: {:.1} % drawn, {colour} pixels of the first series' colour",
        inked * 100.0
    );
    let empty_figure = "<figure class=\"chart\"><svg width=\"560\" height=\"360\"></svg></figure>";
    let (inked, colour) = figure_pixels(&browser, &profile, dir.path(), "blank", empty_figure);
    assert!(
        inked < 0.001 && colour == 0,
        "an empty figure counts as drawn: {inked} {colour}"
    );
    let distribution = first_figure(&html, "distribution");
    let (inked, colour) = figure_pixels(&browser, &profile, dir.path(), "dist", distribution);
    assert!(inked > 0.03 && colour > 20, "{inked} {colour}");

    // docs/report.png is this screenshot of the report of docs/results.md's sweep.
    if std::env::var_os("SCHEDLAB_UPDATE_SCREENSHOT").is_some() {
        // Run as a user would: `schedlab` from PATH, relative paths, so the picture shows no
        // path of this machine.
        let bin = Path::new(env!("CARGO_BIN_EXE_schedlab")).parent().unwrap();
        let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        let user = |args: &[&str]| {
            let out = Command::new("schedlab")
                .args(args)
                .current_dir(dir.path())
                .env("PATH", &path)
                .output()
                .unwrap();
            common::succeeded_in(dir.path(), args, out);
        };
        user(&[
            "sweep",
            "chat",
            "--backend",
            "sim",
            "--vary",
            "policy=o1,cfs,eevdf",
            "--vary",
            "cpus=1,2,4",
            "--rooms",
            "2",
            "--messages",
            "50",
            "--runs",
            "3",
            "--quiet",
            "--out",
            "sw",
        ]);
        user(&["report", "sw/sweep.json", "-o", "docs-report.html"]);
        let page = dir.path().join("docs-report.html");
        let png = dir.path().join("docs-report.png");
        shot(&page, &png);
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/report.png");
        std::fs::copy(&png, &docs).unwrap();
    }
}

/// The first `<figure class="CLASS">…</figure>` of `html`.
fn first_figure<'a>(html: &'a str, class: &str) -> &'a str {
    let open = format!("<figure class=\"{class}\">");
    let start = html
        .find(&open)
        .unwrap_or_else(|| panic!("no {open} in the report"));
    let end = start + html[start..].find("</figure>").unwrap() + "</figure>".len();
    &html[start..end]
}

/// `figure` alone on a page of its size (560 × 360, no scroll bars), screenshot in Chromium:
/// the share of pixels that are not white, and how many have the first series' colour
/// (palette 0, #1f77b4).
fn figure_pixels(
    browser: &Path,
    profile: &Path,
    dir: &Path,
    name: &str,
    figure: &str,
) -> (f64, usize) {
    let page = dir.join(format!("{name}.html"));
    std::fs::write(
        &page,
        format!(
            "<!DOCTYPE html><html><head><style>html,body{{margin:0;overflow:hidden}}figure{{margin:0}}</style></head><body>{figure}</body></html>"
        ),
    )
    .unwrap();
    let png = dir.join(format!("{name}.png"));
    let arg = format!("--screenshot={}", png.display());
    chromium(browser, profile, &page, &[&arg, "--window-size=560,360"]);
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("screenshot in {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let inked = pixels.iter().filter(|p| p[..3] != [255, 255, 255]).count();
    let near = |a: u8, b: u8| a.abs_diff(b) <= 12;
    let colour = pixels
        .iter()
        .filter(|p| near(p[0], 31) && near(p[1], 119) && near(p[2], 180))
        .count();
    (inked as f64 / pixels.len() as f64, colour)
}

/// The report `page` opened at 1280 px with a script that measures every text of its charts
/// (its font size times the figure's scale on the page): how many, the smallest size in px,
/// and that text.
fn smallest_chart_text(browser: &Path, profile: &Path, page: &Path) -> (usize, f64, String) {
    const MEASURE: &str = "<script>(function(){let n=0,min=1e9,which='';\
for(const t of document.querySelectorAll('figure.chart svg text,figure.strip svg text,figure.distribution svg text')){\
if(!t.textContent.trim())continue;const svg=t.ownerSVGElement;\
const vb=svg.viewBox.baseVal;const w=vb&&vb.width?vb.width:svg.width.baseVal.value;\
const px=parseFloat(getComputedStyle(t).fontSize)*svg.getBoundingClientRect().width/w;\
n++;if(px<min){min=px;which=t.textContent;}}\
const p=document.createElement('pre');p.id='measured';\
p.textContent='measured '+n+' '+min.toFixed(3)+' '+which;document.body.appendChild(p);})();</script>";
    let html = std::fs::read_to_string(page).unwrap();
    let measured = page.with_file_name("measure.html");
    std::fs::write(
        &measured,
        html.replace("</body>", &format!("{MEASURE}</body>")),
    )
    .unwrap();
    let (dom, log) = chromium(
        browser,
        profile,
        &measured,
        &["--dump-dom", "--window-size=1280,1600"],
    );
    let line = dom
        .lines()
        .find_map(|l| l.split("<pre id=\"measured\">measured ").nth(1))
        .unwrap_or_else(|| panic!("the measuring script wrote nothing:\n{log}"));
    let line = line.split("</pre>").next().unwrap();
    let mut parts = line.splitn(3, ' ');
    let n = parts.next().unwrap().parse().unwrap();
    let min = parts.next().unwrap().parse().unwrap();
    (n, min, parts.next().unwrap_or("").to_string())
}

#[test]
fn report_refuses_bad_input_and_output_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    succeeds(&[
        "run",
        "yield",
        "--backend",
        "sim",
        "--duration",
        "1ms",
        "--runs",
        "2",
        "--quiet",
        "--json",
        s(&good),
    ]);
    let out = dir.path().join("r.html");
    let fails = |args: &[&str], says: &str| {
        let o = schedlab().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "schedlab {args:?} succeeded");
        assert!(err.contains(says), "schedlab {args:?}: {err}");
        assert!(!out.exists(), "schedlab {args:?} left {}", out.display());
    };
    let not_record = dir.path().join("notes.json");
    std::fs::write(&not_record, "[1, 2, 3]").unwrap();
    fails(
        &["report", s(&good), s(&not_record), "-o", s(&out)],
        &format!(
            "schedlab: error: {}: not a schedlab record",
            not_record.display()
        ),
    );
    let missing = dir.path().join("missing.json");
    fails(
        &["report", s(&good), s(&missing), "-o", s(&out)],
        &format!("schedlab: error: {}: ", missing.display()),
    );
    let bad_out = dir.path().join("no-such-dir/r.html");
    fails(
        &["report", s(&good), "-o", s(&bad_out)],
        "cannot write the report there",
    );
    fails(&["report", s(&good), "-o", s(dir.path())], "is a directory");
    // Only the inputs are left: no temporary file either.
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["good.json", "notes.json"]);
    // A directory stands for its records; the report replaces an old file whole.
    std::fs::remove_file(&not_record).unwrap();
    std::fs::write(&out, "old").unwrap();
    let o = succeeds(&["report", s(dir.path()), "-o", s(&out)]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("(1 record, "), "{said}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    assert!(html.contains("good.json"));
}
