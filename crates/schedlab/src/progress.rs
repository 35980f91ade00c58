//! What `run` and `sweep` say on stderr while they measure: the per-repetition lines, and on a
//! terminal a progress bar (indicatif) under them — the configuration (k of n in a sweep), the
//! repetition (k of N, or k of at most `--max-runs` under `--until`), elapsed time and the
//! estimated time left. When stderr is not a terminal (or is a dumb one, `TERM=dumb`) there is
//! no bar and the lines are printed exactly as they always were.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use schedlab_experiment::{Progress, RepetitionCount};
use std::io::IsTerminal;
use std::time::Duration;

/// How often the bar redraws between repetitions (for its elapsed time): rarely, so that a
/// measured run shares its CPUs with next to nothing.
const TICK: Duration = Duration::from_secs(1);

/// The bar's layout before any repetition finished (no estimate yet).
const FIRST: &str = "{wide_msg} [{bar:12}] {pos}/{len}, {elapsed} elapsed";
/// The bar's layout with a fixed count of repetitions.
const COUNTED: &str = "{wide_msg} [{bar:12}] {pos}/{len}, {elapsed} elapsed, {eta} left";
/// The bar's layout under `--until`: the estimate is for the most repetitions there may be.
const AT_MOST: &str = "{wide_msg} [{bar:12}] {pos}/{len}, {elapsed} elapsed, up to {eta} left";

/// The front end of the measuring loop's [`Progress`] reports: prints their lines, and draws
/// the bar when stderr is a terminal. The bar is cleared by [`ProgressDisplay::clear`], or
/// when the display is dropped, so that it never outlives the measurement.
pub struct ProgressDisplay {
    /// The bar, once the first repetition starts on a terminal.
    bar: Option<ProgressBar>,
    /// Whether stderr is a terminal that can redraw a line (not `TERM=dumb`, which cannot);
    /// else no bar is ever drawn.
    terminal: bool,
    /// `-q`: no per-repetition lines (the bar still shows).
    quiet: bool,
    /// The style in use, so that it is set only when it changes.
    style: &'static str,
}

impl ProgressDisplay {
    /// A display for a run with `-q` or not; a bar only if stderr is a terminal (and not a dumb
    /// one).
    pub fn new(quiet: bool) -> ProgressDisplay {
        ProgressDisplay {
            bar: None,
            terminal: std::io::stderr().is_terminal()
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb"),
            quiet,
            style: "",
        }
    }

    /// Show one report of the measuring loop.
    pub fn report(&mut self, p: Progress) {
        match p {
            Progress::Started {
                workload,
                label,
                config,
                configs,
                repetition,
                finished,
                planned,
            } if self.terminal => {
                let message = describe(workload, &label, config, configs, repetition);
                let style = match (finished, repetition.at_most) {
                    (0, _) => FIRST,
                    (_, false) => COUNTED,
                    (_, true) => AT_MOST,
                };
                let Some(bar) = &self.bar else {
                    // Configured before it is drawn, so that its first frame (drawn now, by
                    // the message) is complete.
                    let bar = ProgressBar::with_draw_target(
                        Some(planned as u64),
                        ProgressDrawTarget::stderr(),
                    )
                    .with_style(bar_style(style))
                    .with_position(finished as u64);
                    bar.set_message(message);
                    bar.enable_steady_tick(TICK);
                    self.bar = Some(bar);
                    self.style = style;
                    return;
                };
                // One draw per repetition: the count changes without drawing (the bar ticks),
                // the message draws the whole bar.
                bar.update(|state| {
                    state.set_len(planned as u64);
                    state.set_pos(finished as u64);
                });
                if style != self.style {
                    bar.set_style(bar_style(style));
                    self.style = style;
                }
                bar.set_message(message);
            }
            Progress::Started { .. } => {}
            Progress::Resumed {
                workload,
                label,
                repetitions,
            } => self.line(&format!(
                "{workload} {label}: resuming with {repetitions} finished repetitions"
            )),
            Progress::Dropped {
                workload,
                label,
                dropped,
            } => self.line(&format!("{workload} {label}: warning: {dropped}")),
            Progress::Repetition {
                workload,
                label,
                what,
                line,
            } if !self.quiet => {
                let sep = if label.is_empty() { "" } else { " " };
                self.line(&format!("{workload}{sep}{label} {what}: {line}"));
            }
            Progress::Repetition { .. } => {}
        }
    }

    /// Print a line on stderr, above the bar if there is one (the line and the bar redrawn
    /// under it in one write).
    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// Erase the bar (its line is left empty, the cursor at its start), before anything else
    /// is printed: the summary, an error, or the note that the run was interrupted.
    pub fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for ProgressDisplay {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The bar's style from its template (one of the constants above, which parse).
fn bar_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// The bar's message: `messaging 2/3 threads=16: run 2/3`, `yield: run 4 of at most 30`,
/// `chat: warm-up 1/2`.
fn describe(
    workload: &str,
    label: &str,
    config: usize,
    configs: usize,
    r: RepetitionCount,
) -> String {
    let mut out = workload.to_string();
    if configs > 1 {
        out.push_str(&format!(" {}/{configs}", config + 1));
    }
    if !label.is_empty() {
        out.push(' ');
        out.push_str(label);
    }
    let what = if r.warmup { "warm-up" } else { "run" };
    if r.at_most {
        out.push_str(&format!(": {what} {} of at most {}", r.number, r.of));
    } else {
        out.push_str(&format!(": {what} {}/{}", r.number, r.of));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_configuration_and_the_repetition() {
        let count = |warmup, number, of, at_most| RepetitionCount {
            warmup,
            number,
            of,
            at_most,
        };
        assert_eq!(
            describe("messaging", "threads=16", 1, 3, count(false, 2, 3, false)),
            "messaging 2/3 threads=16: run 2/3"
        );
        assert_eq!(
            describe("yield", "", 0, 1, count(false, 4, 30, true)),
            "yield: run 4 of at most 30"
        );
        assert_eq!(
            describe("chat", "", 0, 1, count(true, 1, 2, false)),
            "chat: warm-up 1/2"
        );
    }
}
