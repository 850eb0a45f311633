//! Plain-text tables for the reports: one helper, so every table of
//! `inspect` lines up the same way.

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

/// Render rows (the header, if any, is just the first row) into lines,
/// each ending in a newline, trailing blanks trimmed.
pub fn table<S: AsRef<str>>(rows: &[Vec<S>], style: &Style) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.as_ref().chars().count());
        }
    }
    for w in &mut widths {
        *w = (*w).min(style.max_width);
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::from(style.indent);
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str(style.sep);
            }
            let (c, w) = (c.as_ref(), widths[i]);
            let pad = w.saturating_sub(c.chars().count());
            match style.align.get(i).copied().unwrap_or(Align::Left) {
                Align::Left => {
                    line.push_str(c);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(c);
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
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
