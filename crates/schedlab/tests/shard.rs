//! Issue 20: sharded sweeps joined by `merge` give the unsharded sweep's records; merge refuses
//! shards of another sweep, twice the same shard, a missing one; `completions` and `man` are
//! generated from the whole command line, workload flags included. Each runs the built binary.

mod common;

use common::run_ok_env as run_ok;
use common::{comparable, names as files, schedlab};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Run `schedlab args` in `dir`; it must fail with status 1. Its stderr.
fn refused(dir: &Path, args: &[&str]) -> String {
    let out = schedlab()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run schedlab");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "schedlab {args:?}: {err}");
    assert!(out.stdout.is_empty(), "schedlab {args:?} printed to stdout");
    err
}

/// A fresh directory for one test, removed when dropped.
fn temp_dir(name: &str) -> tempfile::TempDir {
    common::temp_dir("shard-test", name)
}

/// A small simulated sweep: 2 policies × 2 CPU counts × 2 runs = 8 repetitions.
const SWEEP: [&str; 16] = [
    "sweep",
    "chat",
    "--backend",
    "sim",
    "--rooms",
    "2",
    "--users",
    "4",
    "--messages",
    "20",
    "--vary",
    "policy=o1,cfs",
    "--vary",
    "cpus=1,2",
    "--runs",
    "2",
];

/// The sweep with `extra` arguments, writing to `out`.
fn sweep_args<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = SWEEP.to_vec();
    args.extend(["--quiet", "--out", out]);
    args.extend(extra);
    args
}

#[test]
fn merged_shards_give_the_unsharded_sweep_s_records() {
    let tmp = temp_dir("equal");
    let dir = tmp.path();
    // Shard 1 by number, 2 through Slurm (an array numbered from 0), 3 through Kubernetes.
    run_ok(dir, &sweep_args("sw-shard-1", &["--shard", "1/3"]), &[]);
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_MAX", "2"),
    ];
    let mut args = sweep_args("sw-shard-2", &["--shard", "auto/3"]);
    let out = schedlab()
        .args(&args)
        .current_dir(dir)
        .env_remove("JOB_COMPLETION_INDEX")
        .envs(slurm)
        .output()
        .unwrap();
    let out = common::succeeded_in(dir, &args, out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("shard 2/3: 3 of the sweep's 8 repetitions") && said.contains("sw-shard-2"),
        "{said}"
    );
    args = sweep_args("sw-shard-3", &["--shard", "auto/3"]);
    run_ok(dir, &args, &[("JOB_COMPLETION_INDEX", "2")]);
    // The unsharded sweep, with the same command (but --shard), moved aside so that merge can
    // write the same --out.
    run_ok(dir, &sweep_args("sw", &[]), &[]);
    std::fs::rename(dir.join("sw"), dir.join("whole")).unwrap();
    let out = run_ok(
        dir,
        &[
            "merge",
            "sw-shard-1",
            "sw-shard-2",
            "sw-shard-3",
            "-o",
            "sw",
        ],
        &[],
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("policy") && table.contains("cfs"), "{table}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("wrote sw: 4 configurations, 8 repetitions, from 3 shards"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = files(&dir.join("whole"));
    assert_eq!(names.len(), 5, "sweep.json and 4 configurations: {names:?}");
    assert_eq!(files(&dir.join("sw")), names);
    for name in &names {
        assert_eq!(
            comparable(&dir.join("sw").join(name)),
            comparable(&dir.join("whole").join(name)),
            "{name}"
        );
    }
    // Which seed a repetition ran with shows: every configuration's two repetitions differ,
    // so merged repetitions out of order or run with another seed would not compare equal.
    let whole = comparable(&dir.join("whole/sweep.json"));
    for c in whole["configs"].as_array().unwrap() {
        let reps = c["repetitions"].as_array().unwrap();
        assert_ne!(reps[0]["metrics"], reps[1]["metrics"], "{}", c["label"]);
    }
    // The shards hold different repetitions, each with its own index.
    let shard: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sw-shard-2/sweep.json")).unwrap())
            .unwrap();
    assert_eq!(shard["shard"]["index"], 2);
    assert_eq!(shard["shard"]["count"], 3);
    // Units 2..5 of o1/1 o1/2 cfs/1 cfs/2 o1/1 …: cfs/1 #1, cfs/2 #1, o1/1 #2.
    let held: Vec<(String, u64)> = shard["configs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            let label = c["label"].as_str().unwrap().to_string();
            c["repetitions"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |r| (label.clone(), r["index"].as_u64().unwrap()))
        })
        .collect();
    assert_eq!(
        held,
        [
            ("policy=o1 cpus=1".to_string(), 1),
            ("policy=cfs cpus=1".to_string(), 0),
            ("policy=cfs cpus=2".to_string(), 0)
        ]
    );
}

#[test]
fn merge_refuses_shards_of_another_sweep_twice_the_same_or_missing() {
    let tmp = temp_dir("refuse");
    let dir = tmp.path();
    run_ok(dir, &sweep_args("s1", &["--shard", "1/2"]), &[]);
    run_ok(dir, &sweep_args("s2", &["--shard", "2/2"]), &[]);
    run_ok(
        dir,
        &sweep_args("seed7", &["--shard", "2/2", "--seed", "7"]),
        &[],
    );
    let e = refused(dir, &["merge", "s1", "seed7", "-o", "out"]);
    assert!(
        e.contains("seed7 is not a shard of the same sweep as s1")
            && e.contains("seed 1 there, 7 here")
            && e.contains("--seed 7"),
        "{e}"
    );
    let e = refused(dir, &["merge", "s1", "s2", "s2", "-o", "out"]);
    assert!(
        e.contains("s2 and s2 are both shard 2/2: each shard must be given once"),
        "{e}"
    );
    let e = refused(dir, &["merge", "s2", "-o", "out"]);
    assert!(
        e.contains("shard 1 of 2 is missing (given: 2); every shard 1..=2 is needed"),
        "{e}"
    );
    let e = refused(dir, &["merge", "s1", "s2", "-o", "s1"]);
    assert!(e.contains("-o s1: exists and is not empty"), "{e}");
    assert_eq!(files(dir), ["s1", "s2", "seed7"], "nothing written");
    run_ok(dir, &["merge", "s2", "s1", "-o", "out"], &[]);
    assert_eq!(files(dir), ["out", "s1", "s2", "seed7"]);
}

#[test]
fn completions_for_every_shell_name_commands_and_workload_flags() {
    let tmp = temp_dir("completions");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run_ok(tmp.path(), &["completions", shell], &[]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
        // A command, its new flag, and a flag only a workload declares (chat's --rooms).
        for word in ["sweep", "merge", "shard", "rooms"] {
            assert!(script.contains(word), "{shell}: no '{word}'");
        }
    }
}

#[test]
fn man_prints_roff_pages() {
    let tmp = temp_dir("man");
    let out = run_ok(tmp.path(), &["man"], &[]);
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH schedlab 1"), "{page}");
    assert!(
        page.contains(".SH SUBCOMMANDS") && page.contains("merge"),
        "{page}"
    );
    let out = run_ok(tmp.path(), &["man", "sweep", "chat"], &[]);
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH schedlab-sweep-chat 1"), "{page}");
    assert!(page.contains("rooms") && page.contains("shard"), "{page}");
}

/// `examples/scale-out/`'s Slurm scripts, as the array's tasks and the dependent job run them:
/// each task with the variables Slurm sets (here for `--array=0-7`, numbered from 0), the
/// `schedlab` on PATH the one just built.
#[test]
fn the_slurm_scripts_run_a_job_array_and_merge_it() {
    let tmp = temp_dir("slurm");
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scale-out");
    let bin = Path::new(env!("CARGO_BIN_EXE_schedlab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = |name: &str, env: &[(&str, String)]| {
        let out = Command::new("bash")
            .arg(scripts.join(name))
            .current_dir(tmp.path())
            .env("PATH", &path)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env_remove("JOB_COMPLETION_INDEX")
            .output()
            .expect("run bash");
        common::succeeded(&[name], out)
    };
    for id in 0..8 {
        script(
            "shard.sbatch",
            &[
                ("SLURM_ARRAY_TASK_ID", id.to_string()),
                ("SLURM_ARRAY_TASK_MIN", "0".into()),
                ("SLURM_ARRAY_TASK_MAX", "7".into()),
                ("SLURM_ARRAY_TASK_STEP", "1".into()),
            ],
        );
    }
    script("merge.sbatch", &[]);
    let sweep: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("sw/sweep.json")).unwrap())
            .unwrap();
    let configs = sweep["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 12);
    assert!(configs
        .iter()
        .all(|c| c["repetitions"].as_array().unwrap().len() == 3));
    assert!(sweep.get("shard").is_none());
    let svg = std::fs::read_to_string(tmp.path().join("sw.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"), "{svg}");
}

/// `check --shard` lists the repetitions the shard would run, runs nothing and writes nothing.
#[test]
fn check_lists_a_shard_s_repetitions() {
    let tmp = temp_dir("check");
    let mut args = SWEEP.to_vec();
    args[0] = "check";
    args.extend(["--shard", "2/3"]);
    let out = run_ok(tmp.path(), &args, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "shard 2/3 runs 3 of the 8 repetitions:\n  policy=o1 cpus=1: repetition 2\n  policy=cfs cpus=1: repetition 1\n  policy=cfs cpus=2: repetition 1\nchecked; nothing was run\n"
        ),
        "{text}"
    );
    assert!(files(tmp.path()).is_empty());
}

#[test]
fn a_merged_interbench_sweep_prints_seed_004_s_tables_as_the_sweep_does() {
    let tmp = temp_dir("interbench");
    let dir = tmp.path();
    let sweep = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "sweep",
            "interbench",
            "--bench",
            "audio",
            "--loads",
            "none,burn",
            "--duration",
            "1s",
            "--backend",
            "sim",
            "--vary",
            "bench.nice=0,19",
            "--runs",
            "2",
            "-q",
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    for k in ["1", "2"] {
        let a = sweep(&["--out", &format!("ib-{k}"), "--shard", &format!("{k}/2")]);
        run_ok(dir, &as_str(&a), &[]);
    }
    let merged = run_ok(dir, &["merge", "ib-1", "ib-2", "-o", "ib"], &[]);
    let whole = run_ok(dir, &as_str(&sweep(&["--out", "ib-whole"])), &[]);
    let merged = String::from_utf8_lossy(&merged.stdout);
    assert!(
        merged.contains(
            "--- Benchmarking simulated cpu of Audio nice 19 in the presence of simulated ---"
        ),
        "{merged}"
    );
    assert_eq!(merged, String::from_utf8_lossy(&whole.stdout));
}

/// The arguments as the `&str`s `run_ok` takes.
fn as_str(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Issue 19: `--timeline` with `--shard`. Each shard records its repetitions' timelines (and
/// writes their exact events) under a chart name of its own and says the chart is drawn at the
/// merge; the shards are one sweep; `merge --timeline` draws the chart the unsharded sweep
/// draws, byte for byte, and prints its figures; `report` shows them; merging shards without
/// timelines with `--timeline` is refused.
#[test]
fn sharded_timelines_merge_into_the_unsharded_sweep_s_chart() {
    let tmp = temp_dir("timeline");
    let d = tmp.path();
    let whole = run_ok(d, &sweep_args("whole", &["--timeline", "whole.svg"]), &[]);
    let whole_text = String::from_utf8_lossy(&whole.stdout).into_owned();
    assert!(whole_text.contains("RUN-QUEUE TIMELINE"), "{whole_text}");
    for k in 1..=2 {
        let (out, svg) = (format!("s{k}"), format!("s{k}.svg"));
        let shard = format!("{k}/2");
        let o = run_ok(
            d,
            &sweep_args(&out, &["--timeline", &svg, "--shard", &shard]),
            &[],
        );
        let said = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            said.contains(&format!("exact events in s{k}.events")) && said.contains("--timeline"),
            "{said}"
        );
        assert!(!d.join(&svg).exists(), "a shard draws no partial chart");
        assert!(!files(&d.join(format!("s{k}.events"))).is_empty());
    }
    let merged = run_ok(
        d,
        &[
            "merge",
            "s1",
            "s2",
            "-o",
            "merged",
            "--timeline",
            "merged.svg",
        ],
        &[],
    );
    let text = String::from_utf8_lossy(&merged.stdout).into_owned();
    let figures = |t: &str| t[t.find("RUN-QUEUE TIMELINE").expect("figures")..].to_string();
    assert_eq!(figures(&text), figures(&whole_text));
    assert_eq!(
        std::fs::read(d.join("merged.svg")).unwrap(),
        std::fs::read(d.join("whole.svg")).unwrap(),
        "the merged chart is the unsharded sweep's"
    );
    let mut events: Vec<String> = files(&d.join("s1.events"));
    events.extend(files(&d.join("s2.events")));
    events.sort();
    assert_eq!(events, files(&d.join("whole.events")));
    run_ok(d, &["report", "merged", "-o", "merged.html"], &[]);
    let html = std::fs::read_to_string(d.join("merged.html")).unwrap();
    assert!(html.contains("<h3>Run-queue timeline</h3>"));
    assert!(html.contains("<figure class=\"timeline\"><svg"));
    // Shards that recorded no timeline: the chart cannot be drawn.
    for k in 1..=2 {
        let (out, shard) = (format!("n{k}"), format!("{k}/2"));
        run_ok(d, &sweep_args(&out, &["--shard", &shard]), &[]);
    }
    let err = refused(
        d,
        &["merge", "n1", "n2", "-o", "m2", "--timeline", "m2.svg"],
    );
    assert!(err.contains("recorded no run-queue timeline"), "{err}");
    // A shard with a timeline and one without are not one sweep.
    let err = refused(d, &["merge", "s1", "n2", "-o", "m3"]);
    assert!(err.contains("not a shard of the same sweep"), "{err}");
}
