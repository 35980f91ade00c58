//! `schedlab completions SHELL` and `schedlab man`: generated from the command line's own
//! definition — the one `cli::prepare` builds, with every workload's flags — by clap_complete
//! and clap_mangen, so they never fall behind the flags. The manual adds, after clap_mangen's
//! sections, what a man page of a command-line tool is expected to have (man-pages(7)):
//! EXAMPLES (the workload's own, from its `WorkloadDef`, on its page), FILES (the workload
//! file grammar in brief), EXIT STATUS (the codes `main` returns) and ENVIRONMENT (every
//! variable the binary reads).

use crate::error::Error;
use std::io::Write;
use std::process::ExitCode;

/// Print `shell`'s completion script for `command`.
pub fn completions(
    shell: clap_complete::Shell,
    mut command: clap::Command,
) -> Result<ExitCode, Error> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "schedlab", &mut script);
    print_bytes(&script)
}

/// Print the manual page of `command`, or of its subcommand `path` (`sweep chat`).
pub fn man(command: clap::Command, path: &[String]) -> Result<ExitCode, Error> {
    let mut page = command;
    page.build();
    let mut name = "schedlab".to_string();
    for (i, wanted) in path.iter().enumerate() {
        let Some(sub) = page.find_subcommand(wanted).cloned() else {
            let parent = if i == 0 { "schedlab" } else { &path[i - 1] };
            return Err(Error::UnknownName {
                subject: format!("man {}: '{parent}'", path.join(" ")),
                kind: "command",
                name: wanted.clone(),
                known: (page.get_subcommands())
                    .map(|s| s.get_name().to_string())
                    .collect(),
                hint: "",
            });
        };
        name = format!("{name}-{wanted}");
        page = sub;
    }
    let page = page.name(name);
    let examples = page_examples(path);
    let man = clap_mangen::Man::new(page.clone());
    let mut out = Vec::new();
    let failed = |e: std::io::Error| Error::System(format!("man: {e}"));
    // clap_mangen's sections, in its order, but for EXTRA (the help's after-text, which the
    // sections below say better).
    man.render_title(&mut out).map_err(failed)?;
    man.render_name_section(&mut out).map_err(failed)?;
    man.render_synopsis_section(&mut out).map_err(failed)?;
    man.render_description_section(&mut out).map_err(failed)?;
    if page.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out).map_err(failed)?;
    }
    if page.has_subcommands() {
        man.render_subcommands_section(&mut out).map_err(failed)?;
    }
    out.extend_from_slice(own_sections(&examples).as_bytes());
    if page.get_version().is_some() {
        man.render_version_section(&mut out).map_err(failed)?;
    }
    print_bytes(&out)
}

/// Examples of the whole tool, for its own page and its commands' (each command's page shows
/// those that start with it).
const EXAMPLES: &[(&str, &str)] = &[
    ("What this machine lets schedlab measure", "env"),
    ("The workloads, their parameters, the knobs and the simulated policies", "list"),
    (
        "hackbench on a simulated 4-CPU machine under EEVDF",
        "run messaging -g 4 -l 50 --backend sim --cpus 4 --policy eevdf",
    ),
    (
        "Seed 002's sched_yield test on two historic policies, as one table",
        "sweep yield --threads 1,16 --duration 100ms --backend sim --cpus 4 --vary policy=linux24,linux24-mq",
    ),
    (
        "Validate a workload file and print its plan without running it",
        "check examples/messaging.toml",
    ),
    (
        "ministat-style comparison of two records",
        "compare a.json b.json",
    ),
    ("One offline HTML report of records", "report a.json b.json -o report.html"),
];

/// The examples of the page `path` names (`[]`: schedlab's own; `[run]`; `[run, messaging]`:
/// the workload's own, from its definition), as (what it shows, command line).
fn page_examples(path: &[String]) -> Vec<(String, String)> {
    let all = || {
        EXAMPLES
            .iter()
            .map(|(a, e)| (a.to_string(), format!("schedlab {e}")))
    };
    match path {
        [] => all().collect(),
        [command] => all()
            .filter(|(_, e)| e.split(' ').nth(1) == Some(command.as_str()))
            .collect(),
        [command, workload, ..] => match schedlab_workload::presets::lookup(workload) {
            Some(def) => crate::cli::workload_examples(command, def.examples),
            None => Vec::new(),
        },
    }
}

/// The environment variables schedlab reads, and what each does.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "SCHEDLAB_BPF",
        "off keeps --counters auto off the in-kernel BPF counters (the tracefs path is used); on or unset: try them first. Any other value is an error.",
    ),
    (
        "SCHEDLAB_LOCK_STATS",
        "0 turns the workload's lock statistics off on the real kernel; 1 or unset keeps them. Any other value is an error.",
    ),
    (
        "SCHEDLAB_TASKGROUP_CGROUP",
        "v1 or v2 chooses the cgroup hierarchy an rt-app file's taskgroups are made in on the real kernel, where both are mounted; unset: a v1 hierarchy with the cpu controller if there is one, else v2. Any other value is an error.",
    ),
    (
        "SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN",
        "--shard auto/N takes its shard from a Slurm array task: K = ID - MIN + 1.",
    ),
    (
        "JOB_COMPLETION_INDEX",
        "--shard auto/N takes its shard from a Kubernetes Indexed Job: K = INDEX + 1.",
    ),
    (
        "TMPDIR",
        "Where real runs make their temporary directories (files, sockets, tracefs mounts); default /tmp.",
    ),
    (
        "PATH",
        "Where the programs a workload runs (make, cc, nginx, apache2) are looked for.",
    ),
    (
        "TERM",
        "dumb turns the progress bar off (it is drawn only when standard error is a terminal).",
    ),
];

/// The exit statuses `main` returns.
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Success."),
    (
        "1",
        "An error after the command line was read: a value refused before anything ran, or a failure while running; the message names the flag, the value and what is accepted. Repetitions that finished are kept in the record.",
    ),
    (
        "2",
        "The command line itself could not be read: an unknown command, option or workload, a missing value, or a workload file named on it that cannot be read.",
    ),
    (
        "130",
        "Interrupted by SIGINT or SIGTERM; the repetitions that finished are kept.",
    ),
];

/// The FILES section: the workload file grammar in brief.
const FILES: &[(&str, &str)] = &[
    (
        "FILE.toml",
        "A workload file (docs/workload-files.md): top-level name, description, transport, tasks and start; [params] NAME = default (a number, duration, size or word); [groups.NAME] count and steps, each step one of compute, sleep, busy, period, send, recv, lock, unlock, barrier, post, wait, cond_wait, signal, broadcast, yield, read, write, truncate, touch, spawn, loop, timer, count; [channels.NAME], [locks.NAME], [barriers.NAME], [semaphores.NAME], [conds.NAME]; [metrics]. Counts and sizes are expressions over the parameters and index. Read strictly: an unknown key or bad value is an error at file:line:column.",
    ),
    (
        "FILE.json",
        "An rt-app workload (rt-app's JSON grammar: tasks, phases, run, sleep, timer, lock, barrier, ...), read into the same model.",
    ),
    (
        "examples/*.toml, examples/rt-app/*.json",
        "The workload files shipped with schedlab; `schedlab check FILE` prints one's parameters, groups, steps and metrics.",
    ),
];

/// EXAMPLES (if any), FILES, EXIT STATUS and ENVIRONMENT, as roff.
fn own_sections(examples: &[(String, String)]) -> String {
    use roff::{bold, roman, Roff};
    let mut page = Roff::new();
    let mut list = |title: &str, items: &mut dyn Iterator<Item = (String, String)>| {
        page.control("SH", [title]);
        for (tag, text) in items {
            page.control("TP", [] as [&str; 0]);
            page.text([bold(tag)]);
            page.text([roman(text)]);
        }
    };
    if !examples.is_empty() {
        // The command as the tag, what it shows below it.
        list(
            "EXAMPLES",
            &mut examples.iter().map(|(a, e)| (e.clone(), format!("{a}."))),
        );
    }
    let owned = |t: &[(&str, &str)]| -> Vec<(String, String)> {
        t.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    list("FILES", &mut owned(FILES).into_iter());
    list("EXIT STATUS", &mut owned(EXIT_STATUS).into_iter());
    list("ENVIRONMENT", &mut owned(ENVIRONMENT).into_iter());
    page.render()
}

/// Write `bytes` to stdout; a closed pipe is an error, not a panic.
fn print_bytes(bytes: &[u8]) -> Result<ExitCode, Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| Error::System(format!("writing to stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
