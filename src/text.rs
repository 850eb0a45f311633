//! Tables for the reports: one helper, so every table lines up the same
//! way. [`table`] lays out plain columns (`inspect`, the plan and binding
//! reports); [`markdown`] the Markdown tables of `test` and `report`.
//! Widths are display widths: a wide (East Asian, emoji) character takes
//! two columns, a combining mark none.

use unicode_width::UnicodeWidthStr;

/// How a column's cells are padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// The layout of a table: what starts each line, what separates columns,
/// how each column aligns (missing entries: left) and the widest a column
/// may grow (longer cells overflow instead of widening it).
pub struct Style<'a> {
    pub indent: &'a str,
    pub sep: &'a str,
    pub align: &'a [Align],
    pub max_width: usize,
}

impl Style<'_> {
    pub const PLAIN: Style<'static> = Style { indent: "  ", sep: "  ", align: &[], max_width: usize::MAX };
}

/// The columns a text takes in a terminal.
fn width(s: &str) -> usize {
    s.width()
}

/// A cell of a plain table is one line, whatever it holds.
fn one_line(c: &str) -> Vec<&str> {
    vec![c]
}

/// A cell of a Markdown table takes a line per line break.
fn lines(c: &str) -> Vec<&str> {
    c.split('\n').collect()
}

/// Each column's width: its widest cell (by `lines` of a cell), at most
/// `max_width`.
fn widths<'a, S: AsRef<str> + 'a>(
    rows: impl IntoIterator<Item = &'a [S]>,
    lines: fn(&str) -> Vec<&str>,
    max_width: usize,
) -> Vec<usize> {
    let mut widths: Vec<usize> = vec![];
    for r in rows {
        if widths.len() < r.len() {
            widths.resize(r.len(), 0);
        }
        for (w, c) in widths.iter_mut().zip(r) {
            *w = lines(c.as_ref()).into_iter().map(width).fold(*w, usize::max);
        }
    }
    widths.into_iter().map(|w| w.min(max_width)).collect()
}

/// `c` padded to `w` columns (a longer cell overflows).
fn pad(line: &mut String, c: &str, w: usize, align: Align) {
    let blanks = std::iter::repeat_n(' ', w.saturating_sub(width(c)));
    match align {
        Align::Left => {
            line.push_str(c);
            line.extend(blanks);
        }
        Align::Right => {
            line.extend(blanks);
            line.push_str(c);
        }
    }
}

/// Render rows (the header, if any, is just the first row) into lines,
/// each ending in a newline, trailing blanks trimmed. A cell is one line
/// whatever it holds: control characters (line breaks too) in it show as
/// escapes ([`crate::escape::name`]), so a name cannot forge a row.
pub fn table<S: AsRef<str>>(rows: &[Vec<S>], style: &Style) -> String {
    let rows: Vec<Vec<std::borrow::Cow<'_, str>>> =
        rows.iter().map(|r| r.iter().map(|c| crate::escape::name(c.as_ref())).collect()).collect();
    let widths = widths(rows.iter().map(Vec::as_slice), one_line, style.max_width);
    let mut out = String::new();
    for r in rows {
        let mut line = String::from(style.indent);
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str(style.sep);
            }
            pad(&mut line, c.as_ref(), widths[i], style.align.get(i).copied().unwrap_or(Align::Left));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A Markdown table: `| a | b |` lines with a `|---|---|` rule under the
/// header, every cell left-aligned and padded to its column's widest (an
/// empty column is one blank wide). A
/// row with fewer cells than the header gets empty ones; a cell with line
/// breaks takes as many lines, the other cells of its row left blank on
/// them. Each line ends in a newline.
pub fn markdown<H: AsRef<str>, S: AsRef<str>>(header: &[H], rows: &[Vec<S>]) -> String {
    let head: Vec<&str> = header.iter().map(AsRef::as_ref).collect();
    let body = rows.iter().map(|r| r.iter().map(AsRef::as_ref).collect::<Vec<&str>>());
    let all: Vec<Vec<&str>> = std::iter::once(head).chain(body).collect();
    // An empty column is one blank wide.
    let widths: Vec<usize> =
        widths(all.iter().map(Vec::as_slice), lines, usize::MAX).into_iter().map(|w| w.max(1)).collect();
    let mut out = String::new();
    for (n, r) in all.iter().enumerate() {
        let cells: Vec<Vec<&str>> = (0..widths.len()).map(|i| r.get(i).map_or(vec![""], |c| lines(c))).collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            out.push('|');
            for (c, &w) in cells.iter().zip(&widths) {
                out.push(' ');
                pad(&mut out, c.get(k).copied().unwrap_or(""), w, Align::Left);
                out.push_str(" |");
            }
            out.push('\n');
        }
        if n == 0 {
            out.push('|');
            for &w in &widths {
                out.extend(std::iter::repeat_n('-', w + 2));
                out.push('|');
            }
            out.push('\n');
        }
    }
    out
}

/// `1 node`, `3 nodes`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_pads_every_column_to_its_widest_cell() {
        let rows = vec![vec!["m/GAP9-L3-training", "PASSED", "-"], vec!["a÷b", "FAILED", "FAILED_BIND", "x"], vec![]];
        assert_eq!(
            markdown(&["case", "verdict", "stage", ""], &rows),
            "| case               | verdict | stage       |   |\n\
             |--------------------|---------|-------------|---|\n\
             | m/GAP9-L3-training | PASSED  | -           |   |\n\
             | a÷b                | FAILED  | FAILED_BIND | x |\n\
             |                    |         |             |   |\n"
        );
        // A line break makes the row two lines high; wide characters take
        // two columns.
        assert_eq!(markdown(&["a", "b"], &[vec!["x\ny", "漢"]]), "| a | b  |\n|---|----|\n| x | 漢 |\n| y |    |\n");
    }

    #[test]
    fn plain_table_cells_are_one_line() {
        let rows = vec![vec!["a\n  forged  row", "1"]];
        assert_eq!(table(&rows, &Style::PLAIN), "  a\\u{a}  forged  row  1\n");
    }

    #[test]
    fn plain_tables_align_and_trim() {
        let rows = vec![vec!["name", "bytes"], vec!["w", "1024"], vec!["漢字", "8"]];
        let style = Style { align: &[Align::Left, Align::Right], ..Style::PLAIN };
        assert_eq!(table(&rows, &style), "  name  bytes\n  w      1024\n  漢字      8\n");
    }
}
