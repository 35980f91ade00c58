//! Help that fits each command: `run|sweep|check WORKLOAD --help` lists the options that apply
//! to that workload and command and no other, with its examples; the usage lines name workload
//! files; nearest-match suggestions for every kind of name; the manual's own sections; and
//! hackbench's short flags for messaging.

mod common;

use common::{run_ok, schedlab, stderr, temp_dir};
use schedlab_workload::presets::WORKLOADS;

/// `schedlab ARGS` (expected to succeed), its standard output.
fn stdout_of(args: &[&str]) -> String {
    let out = schedlab().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether help text lists the long option `flag` (as an option's line, not inside a sentence).
fn lists(help: &str, flag: &str) -> bool {
    help.lines().any(|l| {
        let l = l.trim_start();
        // `-g, --groups <GROUPS>`: the long form follows the short one.
        let l = match l.as_bytes() {
            [b'-', c, b',', b' ', ..] if *c != b'-' => &l[4..],
            _ => l,
        };
        l.starts_with("--") && l.split([' ', '=']).next() == Some(flag)
    })
}

/// The table of which option applies where: for each command and each workload, the options
/// its help must show and those it must not.
#[test]
fn help_of_every_workload_lists_only_options_that_apply() {
    const SWEEP_ONLY: [&str; 4] = ["--vary", "--out", "--plot", "--shard"];
    const FIND_MAX: [&str; 3] = ["--find-max", "--find-max-limit", "--find-max-runs"];
    const EVERYWHERE: [&str; 7] = [
        "--group",
        "--runs",
        "--backend",
        "--policy",
        "--cpus",
        "--json",
        "--seed",
    ];
    for command in ["run", "sweep", "check"] {
        for def in WORKLOADS {
            let help = stdout_of(&[command, def.name, "--help"]);
            let what = format!("{command} {} --help", def.name);
            for p in def.params {
                assert!(
                    lists(&help, &format!("--{}", p.name)),
                    "{what}: no --{}",
                    p.name
                );
            }
            for flag in EVERYWHERE {
                assert!(lists(&help, flag), "{what}: no {flag}");
            }
            for flag in SWEEP_ONLY {
                let shown = lists(&help, flag);
                assert_eq!(shown, command != "run", "{what}: {flag} shown: {shown}");
            }
            for flag in FIND_MAX {
                let applies = command != "sweep" && def.search.is_some();
                assert_eq!(lists(&help, flag), applies, "{what}: {flag}");
            }
            let threads = def.params.iter().any(|p| p.name == "threads");
            assert_eq!(lists(&help, "--wis-csv"), threads, "{what}: --wis-csv");
            assert!(help.contains("Task groups"), "{what}: no groups\n{help}");
            assert!(help.contains("Metrics"), "{what}: no metrics\n{help}");
            // Its own examples, for this command (check shows run's, as check).
            let wanted = if command == "check" { "run" } else { command };
            let ours = def.examples.iter().filter(|e| e.command() == wanted);
            for e in ours {
                let line = format!("schedlab {command}{}", &e.args[wanted.len()..]);
                assert!(help.contains(&line), "{what}: no example '{line}'\n{help}");
            }
            assert!(
                !help.contains(&format!("schedlab {} ", other(command))),
                "{what}: another command's example\n{help}"
            );
        }
    }
}

/// A command other than `command`'s whose examples must not show in its help.
fn other(command: &str) -> &'static str {
    if command == "sweep" {
        "run"
    } else {
        "sweep"
    }
}

#[test]
fn every_workload_declares_a_run_example() {
    for def in WORKLOADS {
        assert!(
            def.examples.iter().any(|e| e.command() == "run"),
            "{}: no run example",
            def.name
        );
    }
}

#[test]
fn usage_lines_name_workload_files() {
    for command in ["run", "sweep", "check"] {
        let help = stdout_of(&[command, "--help"]);
        assert!(
            help.contains(&format!(
                "Usage: schedlab {command} <WORKLOAD | FILE.toml | FILE.json>"
            )),
            "{command}: {help}"
        );
        assert!(help.contains("docs/workload-files.md"), "{command}: {help}");
    }
}

/// `-h` is the short form: metrics without their descriptions.
#[test]
fn short_help_is_shorter() {
    let long = stdout_of(&["run", "messaging", "--help"]);
    let short = stdout_of(&["run", "messaging", "-h"]);
    assert!(short.lines().count() < long.lines().count());
    assert!(long.contains("hackbench's Time"), "{long}");
    assert!(!short.contains("hackbench's Time"), "{short}");
}

/// `schedlab ARGS` fails (status `code`) with `words` in its standard error.
fn refused(dir: &std::path::Path, args: &[&str], code: i32, words: &[&str]) {
    let out = schedlab().current_dir(dir).args(args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    for w in words {
        assert!(err.contains(w), "{args:?}: '{w}' not in {err}");
    }
}

#[test]
fn nearest_names_are_suggested_for_each_kind() {
    let tmp = temp_dir("help", "suggest");
    let dir = tmp.path();
    let sim = ["--backend", "sim", "--cpus", "2"];
    let with_sim =
        |args: &[&'static str]| -> Vec<&'static str> { args.iter().copied().chain(sim).collect() };
    // A command (clap's own Jaro similarity misses this transposition).
    refused(dir, &["rnu"], 2, &["'rnu'", "'run'"]);
    refused(dir, &["sweeep"], 2, &["'sweep'"]);
    // An option.
    refused(
        dir,
        &["run", "messaging", "--grups", "2"],
        2,
        &["'--groups'"],
    );
    // A workload.
    refused(dir, &["run", "mesaging"], 2, &["did you mean 'messaging'?"]);
    // A policy and a policy's parameter.
    let args = with_sim(&["run", "messaging", "--policy", "eevfd"]);
    refused(
        dir,
        &args,
        1,
        &["unknown policy 'eevfd'", "did you mean 'eevdf'?"],
    );
    let args = with_sim(&["run", "messaging", "--policy", "o1:treshold=40"]);
    refused(dir, &args, 1, &["did you mean 'threshold'?"]);
    // A knob, as --group and as --vary takes it.
    let args = with_sim(&["run", "messaging", "--group", "sender:nce=3"]);
    refused(
        dir,
        &args,
        1,
        &["unknown knob 'nce'", "did you mean 'nice'?"],
    );
    let args = with_sim(&["sweep", "messaging", "--vary", "sender.slise=1ms,2ms"]);
    refused(dir, &args, 1, &["did you mean 'slice'?"]);
    // A group and a parameter of a sweep.
    let args = with_sim(&["sweep", "messaging", "--vary", "sendr.nice=0,5"]);
    refused(
        dir,
        &args,
        1,
        &["no group 'sendr'", "did you mean 'sender'?"],
    );
    let args = with_sim(&["sweep", "messaging", "--vary", "lops=5,10"]);
    refused(
        dir,
        &args,
        1,
        &["no parameter 'lops'", "did you mean 'loops'?"],
    );
    // A man page.
    refused(dir, &["man", "run", "chta"], 1, &["did you mean 'chat'?"]);
    // A metric of two records.
    for name in ["a.json", "b.json"] {
        let args = with_sim(&[
            "run", "pingpong", "--loops", "200", "--runs", "2", "--json", name,
        ]);
        run_ok(dir, &args);
    }
    let args = ["compare", "a.json", "b.json", "--metric", "us_per_tr"];
    refused(
        dir,
        &args,
        1,
        &["no metric 'us_per_tr'", "did you mean 'us_per_rt'?"],
    );
    // A word unlike any name gets no suggestion.
    refused(dir, &["run", "zzzzzz"], 2, &["neither a workload"]);
    let out = schedlab().current_dir(dir).args(["run", "zzzzzz"]).output();
    assert!(!stderr(&out.unwrap()).contains("did you mean"));
}

#[test]
fn man_pages_have_examples_files_exit_status_and_environment() {
    for page in [
        &["man"][..],
        &["man", "run"],
        &["man", "sweep", "messaging"],
    ] {
        let roff = stdout_of(page);
        for section in [
            ".SH EXAMPLES",
            ".SH FILES",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
        ] {
            assert!(roff.contains(section), "{page:?}: no {section}\n{roff}");
        }
        // Every variable the binary reads, and every status main returns.
        for word in [
            "SCHEDLAB_BPF",
            "SCHEDLAB_LOCK_STATS",
            "SCHEDLAB_TASKGROUP_CGROUP",
            "SLURM_ARRAY_TASK_ID",
            "JOB_COMPLETION_INDEX",
            "TMPDIR",
            "workload\\-files.md",
            "130",
        ] {
            assert!(roff.contains(word), "{page:?}: no {word}");
        }
    }
    let roff = stdout_of(&["man", "sweep", "messaging"]);
    assert!(
        roff.contains("\\-\\-vary transport=pipe,socketpair"),
        "the workload's sweep example: {roff}"
    );
    // Its page shows no run example.
    assert!(!roff.contains("schedlab run messaging"), "{roff}");
}

/// hackbench's -g, -l, -f, -s are messaging's groups, loops, fds and datasize: the same
/// record as the long flags.
#[test]
fn hackbench_short_flags_are_the_long_ones() {
    let tmp = temp_dir("help", "hackbench");
    let dir = tmp.path();
    let common = [
        "--backend",
        "sim",
        "--cpus",
        "2",
        "--runs",
        "2",
        "--seed",
        "5",
    ];
    let short = ["-g", "2", "-l", "50", "-f", "3", "-s", "64"];
    let long = [
        "--groups",
        "2",
        "--loops",
        "50",
        "--fds",
        "3",
        "--datasize",
        "64",
    ];
    for (flags, json) in [(short, "short.json"), (long, "long.json")] {
        let mut args = vec!["run", "messaging"];
        args.extend(flags);
        args.extend(common);
        args.extend(["--json", json]);
        run_ok(dir, &args);
    }
    let mut a = common::comparable(&dir.join("short.json"));
    let mut b = common::comparable(&dir.join("long.json"));
    // The command lines differ, as they should; everything measured must not.
    a.as_object_mut().unwrap().remove("command");
    b.as_object_mut().unwrap().remove("command");
    assert_eq!(a, b);
    let params = &a["configs"][0]["params"];
    assert_eq!(params["groups"], "2", "{params}");
    assert_eq!(params["loops"], "50");
    assert_eq!(params["fds"], "3");
    assert_eq!(params["datasize"], "64");
}
