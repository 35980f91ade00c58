//! The one set of colours every chart uses (matplotlib's "tab10", first eight), so a line, a
//! CPU lane and a strip-plot row of the same index look alike across the SVG charts, the
//! timeline and the HTML report.

use plotters::style::RGBColor;

/// The colours in order, as RGB.
const COLORS: [(u8, u8, u8); 8] = [
    (31, 119, 180),
    (214, 39, 40),
    (44, 160, 44),
    (148, 103, 189),
    (255, 127, 14),
    (23, 190, 207),
    (140, 86, 75),
    (127, 127, 127),
];

/// How many distinct colours there are before they repeat.
pub const LEN: usize = COLORS.len();

/// The colour of the `i`-th series (repeating after [`LEN`]), for plotters.
pub fn rgb(i: usize) -> RGBColor {
    let (r, g, b) = COLORS[i % LEN];
    RGBColor(r, g, b)
}

/// The colour of the `i`-th series (repeating after [`LEN`]) as `#rrggbb`, for hand-written SVG.
pub fn hex(i: usize) -> String {
    let (r, g, b) = COLORS[i % LEN];
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_forms_name_the_same_colour_and_repeat_after_len() {
        assert_eq!(hex(0), "#1f77b4");
        assert_eq!(hex(1), "#d62728");
        let RGBColor(r, g, b) = rgb(LEN + 2);
        assert_eq!(format!("#{r:02x}{g:02x}{b:02x}"), hex(2));
    }
}
