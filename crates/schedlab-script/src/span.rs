//! Where a thing is in a workload file: byte ranges, turned into `file:line:column` for errors.

use std::fmt;

/// A byte range of the file's text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The range `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// A range `offset` bytes into this one, `len` long (a part of a string value; clamped to
    /// this span).
    pub fn sub(self, offset: usize, len: usize) -> Span {
        let start = (self.start + offset).min(self.end);
        Span {
            start,
            end: (start + len).min(self.end.max(start)),
        }
    }
}

/// A line and column (both from 1; the column counts characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
}

impl LineCol {
    /// Where byte `offset` of `text` is.
    pub fn of(text: &str, offset: usize) -> LineCol {
        let offset = offset.min(text.len());
        let before = &text[..floor_char_boundary(text, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        LineCol {
            line,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// Where each line of a text starts, to find many offsets' lines and columns in linear time
/// overall ([`LineCol::of`] scans the text from its start each time).
pub struct Lines<'t> {
    text: &'t str,
    /// Byte offset of each line's first byte.
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    /// The lines of `text`.
    pub fn new(text: &'t str) -> Lines<'t> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// Where byte `offset` is, as [`LineCol::of`] says.
    pub fn of(&self, offset: usize) -> LineCol {
        let offset = floor_char_boundary(self.text, offset.min(self.text.len()));
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        LineCol {
            line,
            column: self.text[start..offset].chars().count() + 1,
        }
    }
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A value with the span it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it is.
    pub span: Span,
}

impl<T> Spanned<T> {
    /// `value` at `span`.
    pub fn new(value: T, span: Span) -> Spanned<T> {
        Spanned { value, span }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_from_one_in_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(LineCol::of(text, 0), LineCol { line: 1, column: 1 });
        let x = text.find('"').unwrap();
        assert_eq!(LineCol::of(text, x), LineCol { line: 2, column: 6 });
        assert_eq!(LineCol::of(text, text.len()).line, 3);
        let lines = Lines::new(text);
        for offset in 0..=text.len() + 2 {
            assert_eq!(lines.of(offset), LineCol::of(text, offset), "at {offset}");
        }
    }
}
