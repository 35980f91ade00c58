//! FreeBSD ministat's report for up to seven data sets: the legend, the ASCII distribution
//! plot, the `N Min Max Median Avg Stddev` table, and for every set after the first its
//! difference from the first at a confidence level (Student's t with pooled s as ministat, or
//! Welch's t).
//!
//! The layout follows ministat.c (`usr.bin/ministat`) and the example of its manual page; this
//! is an independent implementation. Where the output differs from ministat's, on purpose:
//!
//! - **Stacked points are all drawn.** ministat sets the plot's height to that of the *last*
//!   data set plotted, so points of an earlier set stacked higher than the last set's are
//!   silently cut off — in the manual's example the second 150 and the second 400 of
//!   `iguana` are missing. Here the plot is as tall as its tallest stack, which adds one row
//!   above the manual's plot for that example (see the tests).
//! - **Three or more sets stack instead of overlapping.** ministat ORs the set numbers of the
//!   points falling in a cell and prints `symbol[x|y]`: for two sets `x` and `+` together show
//!   as `*`, as here, but with three sets `*` is also the third set's symbol and other
//!   combinations print wrong symbols or `[0f]`. With three or more sets, the points of a
//!   column are stacked on top of each other, first set lowest.
//! - **Median.** ministat's Median column and `M` are the upper of the two middle values for an
//!   even N; here they are the mean of the two (as in schedlab's summaries). Identical for odd N.
//! - **t values.** ministat looks t up in a 3-decimal table for df ≤ 100 and uses the normal
//!   quantile beyond; here t is computed for any df and, by default, rounded to 3 decimals
//!   ([`schedlab_stats::compare_ministat`]), which reproduces ministat's numbers for df ≤ 100.
//!   ministat's `-c 99.5` column holds 99.8 % values; here 99.5 % means 99.5 %.
//! - **Welch.** ministat has no Welch test; with it the last line reads
//!   `(Welch's t, df = …)` instead of `(Student's t, pooled s = …)`.
//!
//! The table uses ministat.c's `%13.8g` columns and header. The manual page's example shows
//! narrower columns (`    N        Min        Max …`), which no version of ministat.c prints;
//! the numbers are the same.

use schedlab_stats::{compare, compare_ministat, summarize, CompareError, Comparison};
use schedlab_workload::record::Summary;

/// The symbol of each data set, in order, as ministat's.
pub const SYMBOLS: [char; 7] = ['x', '+', '*', '%', '#', '@', 'O'];

/// How to render (see [`render_with`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Confidence level in percent, strictly between 0 and 100 (ministat: `-c`, default 95).
    pub level: f64,
    /// Welch's t instead of Student's t with pooled s.
    pub welch: bool,
    /// Columns inside the plot's frame (ministat: `-w`, default 74); lines are 2 longer.
    pub width: usize,
    /// One mean ± SD bar line per set (ministat's `-s`, as in its manual's example) instead of
    /// all bars on one line (ministat's default, where they can overwrite each other).
    pub separate_bars: bool,
    /// Draw the plot (ministat's `-A` turns it off).
    pub plot: bool,
    /// Use the exact t quantile instead of t rounded to 3 decimals as ministat's table.
    pub exact_t: bool,
}

impl Default for Options {
    /// 95 %, Student's t, width 74, separate bars, with plot, ministat's 3-decimal t.
    fn default() -> Self {
        Options {
            level: 95.0,
            welch: false,
            width: 74,
            separate_bars: true,
            plot: true,
            exact_t: false,
        }
    }
}

/// ministat's report of `sets` (name, values) at confidence `level` percent, with Welch's t if
/// `welch`, the plot `width` columns wide (74 as ministat), mean ± SD bars on separate lines
/// (ministat `-s`) and t rounded as in ministat's table. See [`render_with`] for the errors.
///
/// ```
/// let sets = vec![
///     ("iguana".to_string(), vec![50.0, 200.0, 150.0, 400.0, 750.0, 400.0, 150.0]),
///     ("chameleon".to_string(), vec![150.0, 400.0, 720.0, 500.0, 930.0]),
/// ];
/// let out = schedlab_report::ministat::render(&sets, 80.0, false, 60).unwrap();
/// assert!(out.ends_with(
///     "Difference at 80.0% confidence\n\t240 +/- 212.215\n\t80% +/- 70.7384%\n\
///      \t(Student's t, pooled s = 264.159)\n"
/// ));
/// ```
pub fn render(
    sets: &[(String, Vec<f64>)],
    level: f64,
    welch: bool,
    width: usize,
) -> Result<String, MinistatError> {
    render_with(
        sets,
        &Options {
            level,
            welch,
            width,
            ..Options::default()
        },
    )
}

/// ministat's report of `sets` (name, values) with the given options. Errors, naming the
/// problem: no set, more than 7 sets (one per symbol), a set with fewer than 3 values (as
/// ministat) or a value that is not finite, a level not strictly between 0 and 100, a plot
/// narrower than 2 columns.
pub fn render_with(sets: &[(String, Vec<f64>)], opts: &Options) -> Result<String, MinistatError> {
    check(sets, opts)?;
    let summaries: Vec<Summary> = sets.iter().map(|(_, v)| summarize(v)).collect();
    let mut out = String::new();
    for (i, (name, _)) in sets.iter().enumerate() {
        out.push_str(&format!("{} {}\n", SYMBOLS[i], name));
    }
    if opts.plot {
        out.push_str(&plot(sets, &summaries, opts));
    }
    out.push_str("    N           Min           Max        Median           Avg        Stddev\n");
    for (i, s) in summaries.iter().enumerate() {
        out.push_str(&vitals(SYMBOLS[i], s));
        if i > 0 {
            let cmp = if opts.exact_t {
                compare
            } else {
                compare_ministat
            };
            let c = cmp(&sets[0].1, &sets[i].1, opts.level, opts.welch)?;
            out.push_str(&relative(&c));
        }
    }
    Ok(out)
}

/// Why [`render_with`] refuses its sets or options.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MinistatError {
    /// No data set.
    #[error("no data set to report on: give at least one")]
    NoSets,
    /// More sets than symbols.
    #[error(
        "{0} data sets given: at most {max} can be shown (one per symbol {symbols})",
        max = SYMBOLS.len(),
        symbols = SYMBOLS.map(String::from).join(" ")
    )]
    TooManySets(usize),
    /// A set with fewer than 3 values.
    #[error(
        "data set {name} has {n} value{s}: each data set must contain at least 3 data points",
        s = if *n == 1 { "" } else { "s" }
    )]
    TooFewValues {
        /// The set's name.
        name: String,
        /// How many values it has.
        n: usize,
    },
    /// A set with a NaN or infinite value.
    #[error("data set {name}: value {value} (number {number}) is not a finite number")]
    NotFinite {
        /// The set's name.
        name: String,
        /// The first such value.
        value: f64,
        /// Its position in the set, from 1.
        number: usize,
    },
    /// A confidence level not strictly between 0 and 100.
    #[error(
        "confidence level {0} is not accepted: expected a percentage strictly between 0 and \
         100, such as 80, 90, 95, 98, 99 or 99.5"
    )]
    Level(f64),
    /// A plot narrower than 2 columns.
    #[error(
        "plot width {0} is not accepted: expected at least 2 columns (ministat's default is 74)"
    )]
    Width(usize),
    /// A set that cannot be compared with the first.
    #[error(transparent)]
    Compare(#[from] CompareError),
}

fn check(sets: &[(String, Vec<f64>)], opts: &Options) -> Result<(), MinistatError> {
    if sets.is_empty() {
        return Err(MinistatError::NoSets);
    }
    if sets.len() > SYMBOLS.len() {
        return Err(MinistatError::TooManySets(sets.len()));
    }
    for (name, values) in sets {
        if values.len() < 3 {
            return Err(MinistatError::TooFewValues {
                name: name.clone(),
                n: values.len(),
            });
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(MinistatError::NotFinite {
                name: name.clone(),
                value: values[i],
                number: i + 1,
            });
        }
    }
    if !(opts.level > 0.0 && opts.level < 100.0) {
        return Err(MinistatError::Level(opts.level));
    }
    if opts.plot && opts.width < 2 {
        return Err(MinistatError::Width(opts.width));
    }
    Ok(())
}

/// One row of the table: symbol, N and five `%13.8g` columns.
fn vitals(symbol: char, s: &Summary) -> String {
    format!(
        "{} {:>3} {:>13} {:>13} {:>13} {:>13} {:>13}\n",
        symbol,
        s.n,
        fmt_g(s.min, 8),
        fmt_g(s.max, 8),
        fmt_g(s.median, 8),
        fmt_g(s.mean, 8),
        fmt_g(s.sd, 8)
    )
}

/// The verdict on one set against the reference.
fn relative(c: &Comparison) -> String {
    if !c.significant {
        return format!("No difference proven at {:.1}% confidence\n", c.level);
    }
    let how = match c.pooled_sd {
        Some(sp) if !c.welch => format!("Student's t, pooled s = {}", fmt_g(sp, 6)),
        _ => format!("Welch's t, df = {}", fmt_g(c.df, 6)),
    };
    let mut out = format!(
        "Difference at {:.1}% confidence\n\t{} +/- {}\n\t{}% +/- {}%\n\t({})\n",
        c.level,
        fmt_g(c.diff, 6),
        fmt_g(c.half_width, 6),
        fmt_g(c.pct, 6),
        fmt_g(c.pct_half_width, 6),
        how
    );
    if c.reference_near_zero() {
        // ministat's % line stays; this says why it is huge and gives what reads.
        out.push_str(&format!(
            "\t{} the reference mean: it is within its own {:.1}% interval of zero (±{}), so the % above is mostly noise\n",
            ratio(c.ratio()),
            c.level,
            fmt_g(c.reference_half_width, 6)
        ));
    }
    out
}

/// A ratio of two means as `×12.5` (4 significant digits).
pub fn ratio(r: f64) -> String {
    format!("×{}", fmt_g(r, 4))
}

/// Maps values to plot columns: `width` columns of `dx` each, the first centred on the
/// smallest value shown and the last on the largest (as ministat).
struct Scale {
    x0: f64,
    dx: f64,
    width: usize,
}

impl Scale {
    fn column(&self, v: f64) -> usize {
        // Truncation toward zero, as ministat's conversion to int.
        let c = ((v - self.x0) / self.dx) as i64;
        c.clamp(0, self.width as i64 - 1) as usize
    }
}

/// The framed plot: points stacked per column, then the mean ± SD bar(s).
fn plot(sets: &[(String, Vec<f64>)], summaries: &[Summary], opts: &Options) -> String {
    let w = opts.width;
    // The range covers every value and every mean ± SD.
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for s in summaries {
        for v in [s.min, s.max, s.mean - s.sd, s.mean + s.sd] {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    let span = hi - lo;
    if span == 0.0 || !span.is_finite() {
        return "[no plot, span is zero width]\n".into();
    }
    let dx = span / (w as f64 - 1.0);
    let scale = Scale {
        x0: lo - 0.5 * dx,
        dx,
        width: w,
    };

    // cells[row][column]: bit i set when set i has a point there; row 0 is the bottom.
    let mut cells: Vec<Vec<u8>> = Vec::new();
    let stack_sets = sets.len() > 2;
    let mut shared_height = vec![0usize; w];
    for (i, (_, values)) in sets.iter().enumerate() {
        let mut own_height = vec![0usize; w];
        for &v in values {
            let c = scale.column(v);
            let height = if stack_sets {
                &mut shared_height[c]
            } else {
                &mut own_height[c]
            };
            let row = *height;
            *height += 1;
            if cells.len() <= row {
                cells.resize(row + 1, vec![0; w]);
            }
            cells[row][c] |= 1 << i;
        }
    }

    let mut bars: Vec<Vec<char>> = Vec::new();
    for (i, s) in summaries.iter().enumerate() {
        if i == 0 || opts.separate_bars {
            bars.push(vec![' '; w]);
        }
        let bar = bars.last_mut().expect("a bar line was just pushed");
        let (from, to) = (scale.column(s.mean - s.sd), scale.column(s.mean + s.sd));
        bar[to] = '|';
        bar[from] = '|';
        for cell in bar.iter_mut().take(to).skip(from + 1) {
            if *cell == ' ' {
                *cell = '_';
            }
        }
        bar[scale.column(s.median)] = 'M';
        bar[scale.column(s.mean)] = 'A';
    }

    let frame = format!("+{}+\n", "-".repeat(w));
    let mut out = frame.clone();
    for row in cells.iter().rev() {
        out.push('|');
        out.extend(row.iter().map(|&mask| cell_symbol(mask)));
        out.push_str("|\n");
    }
    for bar in &bars {
        out.push('|');
        out.extend(bar.iter());
        out.push_str("|\n");
    }
    out.push_str(&frame);
    out
}

/// A cell's character: blank, the symbol of its one set, or `*` where `x` and `+` points
/// share it (only possible with two sets; three or more are stacked).
fn cell_symbol(mask: u8) -> char {
    match mask {
        0 => ' ',
        m if m.is_power_of_two() => SYMBOLS[m.trailing_zeros() as usize],
        _ => '*',
    }
}

/// C's `printf("%.{precision}g", v)`: `precision` significant digits, trailing zeros
/// removed, exponent form (`1.5e-05`, `1.2345679e+08`) when the decimal exponent is below −4
/// or not below `precision`.
fn fmt_g(v: f64, precision: usize) -> String {
    let p = precision.max(1);
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent after rounding to p significant digits decides the style.
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` output has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    if exp < -4 || exp >= p as i32 {
        format!(
            "{}e{}{:02}",
            strip_fraction_zeros(mantissa),
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        )
    } else {
        let decimals = (p as i32 - 1 - exp) as usize;
        strip_fraction_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manual_sets() -> Vec<(String, Vec<f64>)> {
        vec![
            (
                "iguana".into(),
                vec![50.0, 200.0, 150.0, 400.0, 750.0, 400.0, 150.0],
            ),
            ("chameleon".into(), vec![150.0, 400.0, 720.0, 500.0, 930.0]),
        ]
    }

    /// The plot of ministat(1)'s example, `ministat -s -w 60 iguana chameleon`, as printed
    /// in the manual page.
    const MANUAL_PLOT: &str = "\
+------------------------------------------------------------+
|x      *  x            *      +              + x           +|
| |________M______A_______________|                          |
|             |________________M__A___________________|      |
+------------------------------------------------------------+
";

    /// The row ministat cuts off (see the module documentation): the second 150 and the
    /// second 400 of iguana, stacked on the first ones.
    const STACKED_ROW: &str = "|       x               x                                    |\n";

    #[test]
    fn manual_example_at_95_percent() {
        let out = render(&manual_sets(), 95.0, false, 60).unwrap();
        let plot = MANUAL_PLOT.replacen("+\n", &format!("+\n{STACKED_ROW}"), 1);
        let expect = [
            "x iguana\n+ chameleon\n",
            &plot,
            "    N           Min           Max        Median           Avg        Stddev\n",
            "x   7            50           750           200           300     238.04761\n",
            "+   5           150           930           500           540     299.08193\n",
            "No difference proven at 95.0% confidence\n",
        ]
        .concat();
        assert_eq!(out, expect, "\n{out}");
        // Apart from the stacked row, the plot is the manual's character for character.
        let ours: String = out
            .lines()
            .skip(2)
            .take(6)
            .filter(|l| format!("{l}\n") != STACKED_ROW)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(ours, MANUAL_PLOT);
    }

    #[test]
    fn a_reference_near_zero_gets_a_ratio_beside_the_percentage() {
        // Mean 0.1 ± 0.98: 5.5 is "+5400 %", better read as 55 times.
        let sets = vec![
            ("near".to_string(), vec![-0.9, 1.1, 0.1, -0.4, 0.6]),
            ("far".to_string(), vec![5.0, 5.5, 6.0]),
        ];
        let out = render(&sets, 95.0, false, 60).unwrap();
        assert!(out.contains("\t5400% +/- "), "{out}");
        assert!(
            out.contains(
                "\t×55 the reference mean: it is within its own 95.0% interval of zero (±0.981"
            ),
            "{out}"
        );
        // Not when the reference is clear of zero.
        let out = render(&manual_sets(), 80.0, false, 60).unwrap();
        assert!(!out.contains('×'), "{out}");
    }

    #[test]
    fn manual_example_at_80_percent() {
        // The manual's second example (`-c 80`): a difference, with these exact numbers.
        let out = render(&manual_sets(), 80.0, false, 60).unwrap();
        let tail = "\
+   5           150           930           500           540     299.08193
Difference at 80.0% confidence
\t240 +/- 212.215
\t80% +/- 70.7384%
\t(Student's t, pooled s = 264.159)
";
        assert!(out.ends_with(tail), "\n{out}");
        // The table's numbers are those of the manual (whose columns are narrower).
        for n in [
            "50",
            "750",
            "200",
            "300",
            "238.04761",
            "150",
            "930",
            "500",
            "540",
            "299.08193",
        ] {
            assert!(
                out.contains(&format!(" {n}\n")) || out.contains(&format!(" {n} ")),
                "{n}"
            );
        }
    }

    #[test]
    fn exact_t_and_welch() {
        let sets = manual_sets();
        let exact = render_with(
            &sets,
            &Options {
                level: 80.0,
                width: 60,
                exact_t: true,
                ..Options::default()
            },
        )
        .unwrap();
        // t = 1.372184 instead of 1.372.
        assert!(exact.contains("\t240 +/- 212.243\n"), "{exact}");
        let welch = render_with(
            &sets,
            &Options {
                level: 80.0,
                welch: true,
                plot: false,
                ..Options::default()
            },
        )
        .unwrap();
        // Welch on these: se = 161.199, df = 7.42543; t rounded to 3 decimals.
        assert!(welch.contains("\t(Welch's t, df = 7.42543)\n"), "{welch}");
        let t = (schedlab_stats::t_quantile(80.0, 7.425_428_321) * 1000.0).round() / 1000.0;
        let e = fmt_g(t * 161.199_373_743, 6);
        assert!(welch.contains(&format!("\t240 +/- {e}\n")), "{welch}");
        assert!(!welch.contains("+----"), "no plot asked for");
    }

    #[test]
    fn bars_on_one_line_by_default_in_ministat() {
        let out = render_with(
            &manual_sets(),
            &Options {
                width: 60,
                separate_bars: false,
                ..Options::default()
            },
        )
        .unwrap();
        // Set 2's bar is drawn over set 1's: '|' and 'M'/'A' overwrite, '_' fills blanks only.
        let bar = out.lines().nth(5).unwrap();
        // Set 1: '|' 1, M 10, A 17, '|' 33; set 2: '|' 13, M 30, A 33 (over set 1's '|'),
        // '|' 53.
        assert_eq!(
            bar,
            "| |________M__|___A____________M__A___________________|      |"
        );
        assert_eq!(
            out.lines().nth(6).unwrap(),
            "+------------------------------------------------------------+"
        );
    }

    #[test]
    fn three_sets_stack_and_every_point_is_drawn() {
        let sets = vec![
            ("a".to_string(), vec![1.0, 2.0, 3.0, 3.0]),
            ("b".to_string(), vec![3.0, 4.0, 5.0]),
            ("c".to_string(), vec![3.0, 5.0, 9.0, 9.0, 9.0]),
        ];
        let out = render(&sets, 95.0, false, 30).unwrap();
        let plot: Vec<&str> = out
            .lines()
            .skip(4)
            .take_while(|l| !l.starts_with('+'))
            .collect();
        let count = |c: char| {
            plot.iter()
                .take(plot.len() - 3)
                .map(|l| l.matches(c).count())
                .sum::<usize>()
        };
        assert_eq!((count('x'), count('+'), count('*')), (4, 3, 5), "\n{out}");
        // Column of 3.0: x x + * from the bottom up.
        // The plot spans 1 … 7 + √8 (c's mean + SD) in 30 columns.
        let dx = (7.0 + 8f64.sqrt() - 1.0) / 29.0;
        let col = ((3.0 - (1.0 - dx / 2.0)) / dx) as usize + 1; // + 1 for the frame
        assert_eq!(col, 8);
        let stack: String = plot[..plot.len() - 3]
            .iter()
            .rev()
            .map(|l| l.chars().nth(col).unwrap())
            .collect();
        assert_eq!(stack.trim_end(), "xx+*", "\n{out}");
        // Each later set is compared with the first, right after its own row.
        let lines: Vec<&str> = out.lines().collect();
        let i = lines.iter().position(|l| l.starts_with("+   3")).unwrap();
        assert!(lines[i + 1].contains("confidence"));
        assert!(lines[i + 2].starts_with("*   5") || lines[i + 5].starts_with("*   5"));
    }

    #[test]
    fn zero_span() {
        let sets = vec![
            ("a".to_string(), vec![2.0; 3]),
            ("b".to_string(), vec![2.0; 4]),
        ];
        let out = render(&sets, 95.0, false, 74).unwrap();
        let expect = [
            "x a\n+ b\n[no plot, span is zero width]\n",
            "    N           Min           Max        Median           Avg        Stddev\n",
            "x   3             2             2             2             2             0\n",
            "+   4             2             2             2             2             0\n",
            "No difference proven at 95.0% confidence\n",
        ]
        .concat();
        assert_eq!(out, expect);
    }

    #[test]
    fn single_set_and_width_74() {
        // mean 23.333, sd 15.275: the plot spans 8.058 … 40 in 74 columns of 0.43756, the
        // first centred on 8.058: 10 → column 4, 20 → 27, 40 → 73, mean ± sd → 0 and 70.
        let out = render(
            &[("t".to_string(), vec![10.0, 20.0, 40.0])],
            95.0,
            false,
            74,
        )
        .unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "x t");
        assert_eq!(lines[1], format!("+{}+", "-".repeat(74)));
        let row = format!("|{}x{}x{}x|", " ".repeat(4), " ".repeat(22), " ".repeat(45));
        assert_eq!(lines[2], row);
        let bar = format!(
            "||{}M{}A{}|{}|",
            "_".repeat(26),
            "_".repeat(7),
            "_".repeat(34),
            " ".repeat(3)
        );
        assert_eq!(lines[3], bar);
        assert_eq!(lines[4], lines[1]);
        assert_eq!(
            lines[6],
            "x   3            10            40            20     23.333333     15.275252"
        );
        assert_eq!(lines.len(), 7, "no comparison for a single set");
    }

    #[test]
    fn errors_name_the_problem() {
        let ok = ("a".to_string(), vec![1.0, 2.0, 3.0]);
        let err = |sets: &[(String, Vec<f64>)], level, width| {
            render(sets, level, false, width).unwrap_err().to_string()
        };
        assert_eq!(render(&[], 95.0, false, 74), Err(MinistatError::NoSets));
        assert!(err(&[], 95.0, 74).contains("at least one"));
        assert_eq!(
            err(&vec![ok.clone(); 8], 95.0, 74),
            "8 data sets given: at most 7 can be shown (one per symbol x + * % # @ O)"
        );
        let e = err(&[ok.clone(), ("b".into(), vec![1.0, 2.0])], 95.0, 74);
        assert_eq!(
            e,
            "data set b has 2 values: each data set must contain at least 3 data points"
        );
        let e = err(&[("b".into(), vec![1.0])], 95.0, 74);
        assert!(e.contains("data set b has 1 value:"), "{e}");
        let e = err(&[("c".into(), vec![1.0, f64::NAN, 2.0])], 95.0, 74);
        assert_eq!(e, "data set c: value NaN (number 2) is not a finite number");
        let e = err(std::slice::from_ref(&ok), 100.0, 74);
        assert!(e.contains("level 100"), "{e}");
        assert_eq!(
            render(std::slice::from_ref(&ok), 100.0, false, 74),
            Err(MinistatError::Level(100.0))
        );
        let e = err(std::slice::from_ref(&ok), 95.0, 1);
        assert_eq!(
            e,
            "plot width 1 is not accepted: expected at least 2 columns (ministat's default is 74)"
        );
    }

    #[test]
    fn printf_g() {
        for (v, p, s) in [
            (238.047_614_3, 8, "238.04761"),
            (299.081_929_5, 8, "299.08193"),
            (212.215_1, 6, "212.215"),
            (70.738_41, 6, "70.7384"),
            (240.0, 6, "240"),
            (80.0, 6, "80"),
            (0.5, 6, "0.5"),
            (-2.5, 6, "-2.5"),
            (0.0, 6, "0"),
            (100_000.0, 6, "100000"),
            (1_000_000.0, 6, "1e+06"),
            (123_456_789.0, 8, "1.2345679e+08"),
            (0.000_123_4, 6, "0.0001234"),
            (0.000_012_34, 6, "1.234e-05"),
            (9.999_999_9, 6, "10"),
            (999_999.7, 6, "1e+06"),
            (1e-300, 6, "1e-300"),
            (f64::INFINITY, 6, "inf"),
        ] {
            assert_eq!(fmt_g(v, p), s, "{v} %.{p}g");
        }
    }
}
