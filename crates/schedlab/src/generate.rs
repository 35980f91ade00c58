//! `schedlab completions SHELL` and `schedlab man`: generated from the command line's own
//! definition — the one `cli::prepare` builds, with every workload's flags — by clap_complete
//! and clap_mangen, so they never fall behind the flags.

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
            let names: Vec<String> = page
                .get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect();
            return Err(Error::from(format!(
                "man {}: '{}' has no command '{wanted}'; its commands are: {}",
                path.join(" "),
                if i == 0 {
                    "schedlab"
                } else {
                    path[i - 1].as_str()
                },
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )));
        };
        name = format!("{name}-{wanted}");
        page = sub;
    }
    let page = page.name(name);
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(|e| format!("man: {e}"))?;
    print_bytes(&roff)
}

/// Write `bytes` to stdout; a closed pipe is an error, not a panic.
fn print_bytes(bytes: &[u8]) -> Result<ExitCode, Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| Error::System(format!("writing to stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
