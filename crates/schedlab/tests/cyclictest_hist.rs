//! cyclictest's `--histofall` and `--histfile` as a user gives them (issue 45): the histogram
//! with a column over all threads, written to a file instead of standard output, in rt-tests'
//! layout — on the simulator and on the running kernel (SCHED_OTHER, which needs no right).

mod common;

use common::Scratch;

/// The counts of one `# Histogram` row: its bucket, then a column per thread (and the summary).
fn row(line: &str) -> (usize, Vec<u64>) {
    let (bucket, counts) = line.split_once(' ').expect("bucket, space, counts");
    let counts = counts.split('\t').map(|n| n.parse().unwrap()).collect();
    (bucket.parse().unwrap(), counts)
}

/// The values of the `# LABEL:` line of a histogram printout.
fn values(text: &str, label: &str) -> Vec<u64> {
    let line = (text.lines())
        .find_map(|l| l.strip_prefix(&format!("# {label}:")))
        .unwrap_or_else(|| panic!("no '# {label}:' line in\n{text}"));
    line.split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

/// Check a two-thread `--histofall` file of `rows` buckets: each row's third column is the sum
/// of the two threads', and so is the total's; the maxima end with the larger, the overflows
/// with their sum; minima and averages have one value per thread. Returns the cycles it counts
/// (buckets and overflows of both threads).
fn check_histofall(text: &str, rows: usize) -> u64 {
    assert!(text.starts_with("# Histogram\n"), "{text}");
    assert!(text.ends_with("\n\n"), "a blank line ends it: {text:?}");
    let body: Vec<&str> = (text.lines().skip(1))
        .take_while(|l| !l.starts_with('#'))
        .collect();
    assert_eq!(body.len(), rows, "{text}");
    let mut sums = [0u64; 3];
    for (i, line) in body.iter().enumerate() {
        let (bucket, counts) = row(line);
        assert_eq!(bucket, i, "{line}");
        assert_eq!(counts.len(), 3, "two threads and their sum: {line}");
        assert_eq!(counts[2], counts[0] + counts[1], "{line}");
        for (s, c) in sums.iter_mut().zip(&counts) {
            *s += c;
        }
    }
    assert_eq!(values(text, "Total"), sums.to_vec());
    let max = values(text, "Max Latencies");
    assert_eq!(max.len(), 3, "{text}");
    assert_eq!(max[2], max[0].max(max[1]));
    let over = values(text, "Histogram Overflows");
    assert_eq!(over.len(), 3, "{text}");
    assert_eq!(over[2], over[0] + over[1]);
    assert_eq!(values(text, "Min Latencies").len(), 2);
    assert_eq!(values(text, "Avg Latencies").len(), 2);
    sums[2] + over[2]
}

/// The file holds what the run would have printed, with the summary column; standard output
/// keeps the per-thread lines and loses the histogram; the record keeps both parameters.
fn histfile_run(s: &Scratch, backend: &str) {
    let mut args = vec![
        "run",
        "cyclictest",
        "--backend",
        backend,
        "--threads",
        "2",
        "--interval",
        "1ms",
        "--loops",
        "100",
        "-H",
        "40",
        "--histfile",
        "hist.txt",
        "--runs",
        "1",
        "--json",
        "r.json",
    ];
    // The real kernel's counters from /proc: nothing to load or trace.
    if backend == "real" {
        args.extend(["--counters", "proc"]);
    }
    let out = s.run(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("T:"), "the per-thread lines: {stdout}");
    assert!(!stdout.contains("# Histogram"), "{stdout}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("wrote hist.txt"),
        "{out:?}"
    );
    let text = s.read("hist.txt");
    // Every cycle of both threads is in a bucket or an overflow.
    assert_eq!(check_histofall(&text, 40), 200, "{text}");
    let rec = common::read_record(&s.join("r.json"));
    assert_eq!(rec.configs[0].params["histofall"], "40");
    assert_eq!(rec.configs[0].params["histogram"], "40");
    assert_eq!(rec.configs[0].params["histfile"], "hist.txt");
}

#[test]
fn histofall_goes_to_the_histfile_on_the_simulator() {
    histfile_run(&Scratch::new("cyclictest", "histfile-sim"), "sim");
}

#[test]
fn histofall_goes_to_the_histfile_on_the_real_kernel() {
    let _turn = common::serial();
    histfile_run(&Scratch::new("cyclictest", "histfile-real"), "real");
}

/// Without `--histfile` the histogram is printed after the per-thread lines; a sweep's file
/// names each configuration before its histogram.
#[test]
fn without_histfile_it_is_printed_and_a_sweep_names_each_configuration() {
    let s = Scratch::new("cyclictest", "histfile-sweep");
    // Two simulated threads of 50 cycles, a histogram of 30 buckets with the summary column.
    let workload = [
        "cyclictest",
        "--backend",
        "sim",
        "--threads",
        "2",
        "--loops",
        "50",
        "--histofall",
        "30",
        "--runs",
        "1",
    ];
    let out = s.run(&[&["run"], &workload[..]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let at = stdout
        .find("# Histogram\n")
        .expect("the histogram on stdout");
    assert_eq!(check_histofall(&stdout[at..], 30), 100);
    let sweep = ["--histfile", "h.txt", "--vary", "policy=cfs,eevdf", "-q"];
    s.run(&[&["sweep"], &workload[..], &sweep[..]].concat());
    let text = s.read("h.txt");
    let parts: Vec<&str> = text.split("# policy: ").skip(1).collect();
    assert_eq!(parts.len(), 2, "{text}");
    for part in parts {
        let at = part.find("# Histogram\n").unwrap();
        assert_eq!(check_histofall(&part[at..], 30), 100, "{part}");
    }
}
