//! Per-node cycles from a device run (`deploygen report --profile`).
//!
//! A project built with `-DDG_PROFILE` prints, for every node of every
//! run of its networks (training step, optimizer step, inference),
//!
//! ```text
//! BENCH node <step> <op> <name> cycles=<n>
//! ```
//!
//! This module reads those lines from a run's saved output, sums them per
//! node and renders the table and a bar chart, so a user sees where a
//! step's cycles go.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::escape::xml_text;

/// One node's cycles over every run in the output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Layer {
    pub step: u32,
    pub op: String,
    pub name: String,
    /// How many `BENCH node` lines it had (one per run of its network).
    pub runs: u64,
    pub cycles: u64,
}

impl Layer {
    pub fn mean(&self) -> u64 {
        self.cycles / self.runs.max(1)
    }
}

/// A run output that gives no profile, naming the line at fault (counted
/// from 1).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "line {line}: a `BENCH node` line of {bytes} bytes, over the bound of {} bytes",
        crate::limits::PROFILE_LINE
    )]
    TooLong { line: usize, bytes: usize },
    #[error("line {line}: malformed `BENCH node` line: {text:?}")]
    Malformed { line: usize, text: String },
    /// A step that names another node than it did before: the output of
    /// two projects, mixed.
    #[error("line {line}: step {step} is {op} '{name}' here but {earlier_op} '{earlier_name}' earlier: outputs of two projects?")]
    TwoProjects { line: usize, step: u32, op: String, name: String, earlier_op: String, earlier_name: String },
    #[error("line {0}: the cycles add up to more than 2^64: not one run's output")]
    Overflow(usize),
    #[error("no `BENCH node` lines: was the project built with DG_PROFILE (docs/cli.md, \"Per-layer cycles\")?")]
    NoLines,
}

/// One `BENCH node` line: (step, op, name, cycles). The name may hold
/// spaces, so it is what lies between the op and the last ` cycles=`.
fn parse_line(line: &str) -> Option<(u32, &str, &str, u64)> {
    let rest = line.trim_end_matches(['\r', '\n']).strip_prefix("BENCH node ")?;
    let (head, cycles) = rest.rsplit_once(" cycles=")?;
    let (step, head) = head.split_once(' ')?;
    let (op, name) = head.split_once(' ').unwrap_or((head, ""));
    Some((step.parse().ok()?, op, name, cycles.trim().parse().ok()?))
}

/// The layers of one run's output, by step. A `BENCH node` line that does
/// not parse is an error naming its line number: a profile that silently
/// drops a node would mislead.
pub fn parse(text: &str) -> Result<Vec<Layer>, ProfileError> {
    let mut by_step: BTreeMap<u32, Layer> = BTreeMap::new();
    // Checked as it grows: every total printed later fits.
    let mut total: u64 = 0;
    for (i, line) in text.lines().enumerate() {
        if !line.starts_with("BENCH node ") {
            continue;
        }
        if line.len() > crate::limits::PROFILE_LINE {
            return Err(ProfileError::TooLong { line: i + 1, bytes: line.len() });
        }
        let (step, op, name, cycles) =
            parse_line(line).ok_or_else(|| ProfileError::Malformed { line: i + 1, text: line.to_string() })?;
        let l = by_step.entry(step).or_insert_with(|| Layer {
            step,
            op: op.to_string(),
            name: name.to_string(),
            runs: 0,
            cycles: 0,
        });
        if l.op != op || l.name != name {
            return Err(ProfileError::TwoProjects {
                line: i + 1,
                step,
                op: op.to_string(),
                name: name.to_string(),
                earlier_op: l.op.clone(),
                earlier_name: l.name.clone(),
            });
        }
        l.runs += 1;
        let wraps = || ProfileError::Overflow(i + 1);
        l.cycles = l.cycles.checked_add(cycles).ok_or_else(wraps)?;
        total = total.checked_add(cycles).ok_or_else(wraps)?;
    }
    if by_step.is_empty() {
        return Err(ProfileError::NoLines);
    }
    Ok(by_step.into_values().collect())
}

/// The Markdown table: one row per node, its share of the nodes' total.
pub fn markdown(layers: &[Layer]) -> String {
    let total: u64 = layers.iter().fold(0u64, |t, l| t.saturating_add(l.cycles));
    let mut s = String::from("| step | op | node | runs | cycles per run | total cycles | share |\n");
    s.push_str("|---:|---|---|---:|---:|---:|---:|\n");
    for l in layers {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.1}% |",
            l.step,
            cell(&l.op),
            cell(&l.name),
            l.runs,
            l.mean(),
            l.cycles,
            percent(l.cycles, total)
        );
    }
    let _ = writeln!(s, "| | | all nodes | | | {total} | 100.0% |");
    s
}

fn percent(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// A name in a Markdown cell: `|` and line breaks would end the cell.
fn cell(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().replace('|', "\\|")
}

/// Text for SVG: XML-escaped, control characters (invalid in XML) as `?`.
fn svg_text(s: &str) -> String {
    xml_text(&s.chars().map(|c| if c.is_control() { '?' } else { c }).collect::<String>())
}

/// A horizontal bar per node, in step order, its length the node's cycles
/// per run, labelled with step, op, name and the figure.
pub fn svg(layers: &[Layer], title: &str) -> String {
    const ROW: u64 = 18;
    const LABEL: u64 = 360;
    const BAR: u64 = 480;
    let max = layers.iter().map(Layer::mean).max().unwrap_or(0).max(1);
    let total: u64 = layers.iter().fold(0u64, |t, l| t.saturating_add(l.cycles));
    let height = 40 + ROW * layers.len() as u64 + 10;
    let width = LABEL + BAR + 160;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"monospace\" font-size=\"11\">\n"
    );
    let _ = writeln!(s, "<rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>");
    let _ = writeln!(s, "<text x=\"8\" y=\"20\" font-size=\"14\">{}</text>", svg_text(title));
    for (i, l) in layers.iter().enumerate() {
        let y = 40 + ROW * i as u64;
        let w = (u128::from(l.mean()) * u128::from(BAR)).div_ceil(u128::from(max)) as u64;
        let label = format!("{} {} {}", l.step, l.op, l.name);
        let label: String = if label.chars().count() > 56 {
            label.chars().take(55).chain(std::iter::once('…')).collect()
        } else {
            label
        };
        let _ = writeln!(s, "<text x=\"8\" y=\"{}\">{}</text>", y + 12, svg_text(&label));
        let _ = writeln!(
            s,
            "<rect x=\"{LABEL}\" y=\"{}\" width=\"{w}\" height=\"{}\" fill=\"#4a7ab5\"><title>{}</title></rect>",
            y + 2,
            ROW - 4,
            svg_text(&format!("{} {}: {} cycles per run", l.op, l.name, l.mean()))
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\">{} ({:.1}%)</text>",
            LABEL + w + 6,
            y + 12,
            l.mean(),
            percent(l.cycles, total)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "hello\r\nBENCH node 0 Gemm fc 1 cycles=300\r\nBENCH node 1 Relu r cycles=100\r\n\
                       BENCH node 0 Gemm fc 1 cycles=500\r\nBENCH node 1 Relu r cycles=100\r\nBENCH cycles=1200\r\n";

    #[test]
    fn lines_are_summed_per_node_and_names_keep_their_spaces() {
        let l = parse(RUN).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].op.as_str(), l[0].name.as_str(), l[0].runs, l[0].cycles), ("Gemm", "fc 1", 2, 800));
        assert_eq!(l[1].mean(), 100);
        let md = markdown(&l);
        assert!(md.contains("| 0 | Gemm | fc 1 | 2 | 400 | 800 | 80.0% |"), "{md}");
        assert!(md.contains("| all nodes | | | 1000 |"), "{md}");
    }

    #[test]
    fn no_lines_and_bad_lines_are_errors() {
        assert!(parse("BENCH cycles=3\n").unwrap_err().to_string().contains("DG_PROFILE"));
        assert!(parse("BENCH node x Relu r cycles=1\n").unwrap_err().to_string().contains("line 1"));
        assert!(parse("BENCH node 0 Relu r cycles=1\nBENCH node 0 Gemm r cycles=1\n")
            .unwrap_err()
            .to_string()
            .contains("step 0"));
    }

    #[test]
    fn the_chart_has_a_bar_per_node_and_escapes_names() {
        let l = parse("BENCH node 3 Add a<b>&\x01 cycles=10\n").unwrap();
        let svg = svg(&l, "t");
        assert_eq!(svg.matches("<rect x=").count(), 1);
        assert!(svg.contains("a&lt;b&gt;&amp;?"), "{svg}");
        assert!(!svg.contains('\x01'));
    }
}
