//! rt-app's `memrun` (a memory access step) run the way a user runs a file, as an rt-app file's
//! `memrun` and as a TOML file's `memory` step: on the real kernel a byte-at-a-time read costs
//! CPU in proportion to the bytes; on the simulator its CPU time is the cost profile's
//! documented figure (docs/simulator.md, "Memory accesses"); a profile with no figure refuses
//! it, naming the key; bad values and buffers beyond the bounds are refused before the run.

mod common;

use common::{stderr, Scratch};
use schedlab_workload::record::RunRecord;

/// One task, `passes` passes of one `memrun` object.
fn file(passes: u32, memrun: &str) -> String {
    format!(r#"{{ "tasks": {{ "t": {{ "loop": {passes}, "cpus": [0], "memrun": {memrun} }} }} }}"#)
}

/// A TOML workload file: one task on CPU 0, `passes` passes of the step `step`.
fn toml_file(passes: u32, step: &str) -> String {
    format!("[groups.t]\ncpus = \"0\"\nsteps = [ {{ loop = {passes}, steps = [ {step} ] }} ]\n")
}

/// The run's CPU time (s), all tasks.
fn cpu_s(rec: &RunRecord) -> f64 {
    rec.configs[0].repetitions[0].counters["total"].cpu_time_s
}

fn run(dir: &Scratch, file: &str, json: &str, args: &[&str]) -> RunRecord {
    let mut all = vec!["run", file, "--runs", "1", "--json", json];
    all.extend_from_slice(args);
    dir.run(&all);
    common::read_record(&dir.join(json))
}

/// The CPU time (s) the accesses of workload file `text` cost: its run's CPU time less that of
/// `without` (the same file with no accesses), both written beside `name` in `dir` and run
/// with `args`.
fn cpu_of_the_accesses(dir: &Scratch, name: &str, text: &str, without: &str, args: &[&str]) -> f64 {
    let bare = format!("without-{name}");
    dir.write(name, text);
    dir.write(&bare, without);
    let with = cpu_s(&run(dir, name, &format!("{name}.rec.json"), args));
    let base = cpu_s(&run(dir, &bare, &format!("{bare}.rec.json"), args));
    with - base
}

/// `file` run on `piii-700`, which has no memory figures, is refused naming the `--cost` key
/// to give (`key`).
fn refused_on_a_profile_without_figures(dir: &Scratch, file: &str, key: &str) {
    let out = dir.try_run(&[
        "run",
        file,
        "--backend",
        "sim",
        "--profile",
        "piii-700",
        "--runs",
        "1",
    ]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("'piii-700' has no figure") && e.contains(&format!("--cost {key}=")),
        "{e}"
    );
}

/// Runs `read.EXT` (a read of `n` bytes) and `none.EXT` (the same buffer made, never read)
/// twice each, alternating, with `args`, and asserts that the least CPU time of the first
/// exceeds the least of the second by more than 0.1 ns a byte read.
fn assert_the_read_costs(dir: &Scratch, ext: &str, args: &[&str], n: u64) {
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..2 {
        with.push(cpu_s(&run(
            dir,
            &format!("read.{ext}"),
            &format!("r{round}.json"),
            args,
        )));
        without.push(cpu_s(&run(
            dir,
            &format!("none.{ext}"),
            &format!("n{round}.json"),
            args,
        )));
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let spent_ns = (min(&with) - min(&without)) * 1e9;
    println!(
        "{ext} read of {n} bytes: {spent_ns:.0} ns of CPU ({:.3} ns a byte); runs {with:?} vs {without:?}",
        spent_ns / n as f64
    );
    assert!(
        spent_ns > n as f64 / 10.0,
        "a read of {n} bytes cost {spent_ns:.0} ns of CPU, not more than {} (0.1 ns a byte)",
        n / 10
    );
}

#[test]
fn a_real_read_of_n_bytes_costs_more_than_n_tenths_of_a_nanosecond() {
    let _turn = common::serial();
    let dir = Scratch::new("memrun", "real");
    // 20 passes of 64 MiB read byte by byte: 1.34 GB, against the same buffer made and never
    // read. A loop that skipped its loads (not volatile) would cost next to nothing.
    let n: u64 = 20 * 67_108_864;
    let read = |count: u64| {
        file(
            20,
            &format!(r#"{{ "type": "read", "size": 67108864, "count": {count} }}"#),
        )
    };
    dir.write("read.json", &read(67_108_864));
    dir.write("none.json", &read(0));
    assert_the_read_costs(&dir, "json", &["--backend", "real"], n);
}

#[test]
fn a_simulated_memrun_costs_the_profiles_figures() {
    let dir = Scratch::new("memrun", "sim");
    // Jitter off, so that the CPU time is the documented figure (plus the task's start and
    // exit, which a run without the access measures).
    let sim = ["--backend", "sim", "--seed", "3", "--cost", "jitter=0"];
    let cases = [
        // kind, size, stride, pattern, count, ns per unit, unit
        (
            "read",
            67_108_864u64,
            64u64,
            "random",
            1_048_576u64,
            187.0,
            1024.0,
        ),
        ("write", 4096, 64, "random", 1_048_576, 447.0, 1024.0),
        ("chase", 262_144, 64, "random", 100_000, 7_450.0, 1000.0),
        (
            "chase", 67_108_864, 64, "random", 100_000, 197_630.0, 1000.0,
        ),
        (
            "chase",
            67_108_864,
            64,
            "sequential",
            100_000,
            6_631.0,
            1000.0,
        ),
    ];
    for (i, (kind, size, stride, pattern, count, per, unit)) in cases.into_iter().enumerate() {
        let obj = |count: u64| {
            format!(
                r#"{{ "type": "{kind}", "size": {size}, "stride": {stride}, "pattern": "{pattern}", "count": {count} }}"#
            )
        };
        let got = cpu_of_the_accesses(
            &dir,
            &format!("m{i}.json"),
            &file(10, &obj(count)),
            &file(10, &obj(0)),
            &sim,
        );
        let want = 10.0 * (count as f64 * per / unit).ceil() * 1e-9;
        // Within 0.1 %: the timer ticks that fall inside a long access are charged to it, as
        // the tick handler's time is on a real CPU.
        assert!(
            (got - want).abs() <= want * 1e-3 + 1e-6,
            "{kind} {size} B stride {stride} {pattern}, {count} × 10: {got} s of CPU, the profile says {want} s"
        );
    }
    // A profile without the figures refuses the access, naming the key to give.
    dir.write(
        "p.json",
        &file(1, r#"{ "type": "read", "size": 4096, "count": 100 }"#),
    );
    refused_on_a_profile_without_figures(&dir, "p.json", "mem_read_per_kib");
    // Given one, it runs.
    dir.run(&[
        "run",
        "p.json",
        "--backend",
        "sim",
        "--profile",
        "piii-700",
        "--runs",
        "1",
        "--cost",
        "mem_read_per_kib=2us",
    ]);
}

#[test]
fn an_absurd_buffer_size_is_refused_before_the_run() {
    let dir = Scratch::new("memrun", "bad");
    dir.write(
        "big.json",
        &file(1, r#"{ "type": "chase", "size": 2000000000, "count": 1 }"#),
    );
    let out = dir.try_run(&["check", "big.json"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("size 2000000000 is not accepted: a buffer of 1 byte to 1073741824 (1 GiB)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_toml_memory_step_reads_its_bytes_on_the_real_kernel() {
    let _turn = common::serial();
    let dir = Scratch::new("memrun", "toml-real");
    // 20 passes of 16 MiB read byte by byte (335 MB), against the same buffer made and never
    // read: a loop that skipped its loads would cost next to nothing.
    let n: u64 = 20 * 16_777_216;
    let read = |count: u64| {
        toml_file(
            20,
            &format!(r#"{{ memory = "read", size = "16MiB", count = {count} }}"#),
        )
    };
    dir.write("read.toml", &read(16_777_216));
    dir.write("none.toml", &read(0));
    assert_the_read_costs(&dir, "toml", &[], n);
    // Two tasks chasing one shared buffer, and each its own write buffer.
    dir.write(
        "shared.toml",
        "[groups.t]\ncount = 2\nsteps = [ { loop = 3, steps = [\n  { memory = \"chase\", size = \"1MiB\", count = 10000, shared = \"table\" },\n  { memory = \"write\", size = \"64KiB\", count = 65536 } ] } ]\n",
    );
    let rec = run(&dir, "shared.toml", "shared.json", &[]);
    assert_eq!(rec.configs[0].repetitions.len(), 1);
}

#[test]
fn a_simulated_toml_memory_step_costs_the_profiles_figures_as_an_rt_app_memrun() {
    let dir = Scratch::new("memrun", "toml-sim");
    let sim = ["--backend", "sim", "--seed", "3", "--cost", "jitter=0"];
    // The figures of a_simulated_memrun_costs_the_profiles_figures: the same step.
    let cases = [
        (
            r#"memory = "write", size = 4096"#,
            1_048_576u64,
            447.0,
            1024.0,
        ),
        (
            r#"memory = "chase", size = "64MiB", pattern = "sequential""#,
            100_000,
            6_631.0,
            1000.0,
        ),
    ];
    for (i, (step, count, per, unit)) in cases.into_iter().enumerate() {
        let got = cpu_of_the_accesses(
            &dir,
            &format!("m{i}.toml"),
            &toml_file(10, &format!("{{ {step}, count = {count} }}")),
            &toml_file(10, &format!("{{ {step}, count = 0 }}")),
            &sim,
        );
        let want = 10.0 * (count as f64 * per / unit).ceil() * 1e-9;
        assert!(
            (got - want).abs() <= want * 1e-3 + 1e-6,
            "{step}, count {count} × 10: {got} s of CPU, the profile says {want} s"
        );
    }
    // A profile without the figures refuses it, naming the key to give.
    refused_on_a_profile_without_figures(&dir, "m0.toml", "mem_write_per_kib");
}

#[test]
fn toml_memory_steps_beyond_the_bounds_are_refused_before_the_run() {
    let dir = Scratch::new("memrun", "toml-bad");
    let refused = |name: &str, text: &str, args: &[&str], words: &[&str]| {
        dir.write(name, text);
        let mut all = vec!["run", name, "--runs", "1"];
        all.extend_from_slice(args);
        let started = std::time::Instant::now();
        let out = dir.try_run(&all);
        let e = stderr(&out);
        assert!(!out.status.success(), "{name}: ran\n{e}");
        assert!(
            started.elapsed().as_secs() < 5,
            "{name}: refused only after {:?}",
            started.elapsed()
        );
        for w in words {
            assert!(e.contains(w), "{name}: {e}\n  should contain {w}");
        }
    };
    refused(
        "big.toml",
        &toml_file(1, r#"{ memory = "chase", size = "2GiB", count = 1 }"#),
        &[],
        &[
            "big.toml:3:",
            "size 2147483648 is not accepted: a buffer of 1 byte to 1073741824 (1 GiB)",
        ],
    );
    refused(
        "stride.toml",
        &toml_file(
            1,
            r#"{ memory = "chase", size = 4096, count = 1, stride = 12 }"#,
        ),
        &["--backend", "sim"],
        &["stride 12 is not accepted: a multiple of 8 bytes"],
    );
    refused(
        "few.toml",
        &toml_file(1, r#"{ memory = "chase", size = 100, count = 1 }"#),
        &["--backend", "sim"],
        &["a chase needs at least 2 positions"],
    );
    // 4096 tasks of 1 GiB each: more memory than this machine's (and any test machine's) half
    // available, refused before any buffer is made.
    refused(
        "many.toml",
        "[groups.t]\ncount = 4096\nsteps = [ { memory = \"read\", size = \"1GiB\", count = 1 } ]\n",
        &[],
        &[
            "many.toml:3:11: group 't', step `read 1 of 1073741824 B`: 1GiB in each of 4096 tasks, 4096GiB in all.",
            "The file's memory steps hold 4096GiB in all, more than half of the memory available now",
        ],
    );
    // A timed loop of memory steps of no byte would never end on the simulator.
    refused(
        "timeless.toml",
        "[groups.t]\nsteps = [ { loop = \"10ms\", steps = [ { memory = \"read\", size = 64, count = 0 } ] } ]\n",
        &["--backend", "sim"],
        &["this timed loop repeats steps that take no time"],
    );
}
