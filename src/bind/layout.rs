//! The `inputs.npz` layouts (docs/cli.md, "Test data") and their keys.
//!
//! - named: `<input>` for mini-batch 0, `mb<i>_<input>` for mini-batch i;
//! - positional (TrainDeeploy's exporter): `arr_NNNN` for the N-th graph
//!   input that is not a gradient-accumulation buffer, `mb<i>_arr_NNNN` for
//!   its value in mini-batch i;
//! - ordered (test folders of other tools): keys that are neither
//!   graph-input names nor `arr_NNNN` (`input_0`, `input_1`, … or any
//!   names) hold the non-gradient graph inputs in graph order, `mb<i>_<key>`
//!   their values in mini-batch i; `outputs.npz` likewise (`output_0`, …)
//!   for the graph outputs;
//! - any: scalar `meta_*` keys.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    Named,
    Positional,
    Ordered,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Named => "named",
            Layout::Positional => "positional",
            Layout::Ordered => "ordered",
        }
    }
}

/// What a key refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A graph input by name.
    Name(String),
    /// A position among the graph inputs that are not gradient buffers.
    Position(usize),
}

/// One `inputs.npz` key, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// `meta_<what>`.
    Meta(String),
    /// Value of `target` in mini-batch `mb` (0 for the base key).
    Value { target: Target, mb: usize },
}

/// `arr_NNNN` → N.
fn positional(s: &str) -> Option<usize> {
    let digits = s.strip_prefix("arr_")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `mb<i>_<rest>` with i ≥ 1 → (i, rest).
fn mini_batch(s: &str) -> Option<(usize, &str)> {
    let rest = s.strip_prefix("mb")?;
    let end = rest.bytes().position(|b| !b.is_ascii_digit())?;
    let (digits, tail) = rest.split_at(end);
    let tail = tail.strip_prefix('_')?;
    let i: usize = digits.parse().ok()?;
    (i >= 1 && !tail.is_empty()).then_some((i, tail))
}

/// Parse a key. `is_input` says whether a string names a graph input; an
/// exact graph-input name always wins over the prefix rules, so an input
/// really called `mb1_x` or `arr_0000` binds by name.
pub fn parse(key: &str, is_input: impl Fn(&str) -> bool) -> Key {
    if is_input(key) {
        return Key::Value { target: Target::Name(key.to_string()), mb: 0 };
    }
    if let Some(m) = key.strip_prefix("meta_") {
        return Key::Meta(m.to_string());
    }
    if let Some(p) = positional(key) {
        return Key::Value { target: Target::Position(p), mb: 0 };
    }
    if let Some((mb, rest)) = mini_batch(key) {
        if is_input(rest) {
            return Key::Value { target: Target::Name(rest.to_string()), mb };
        }
        if let Some(p) = positional(rest) {
            return Key::Value { target: Target::Position(p), mb };
        }
    }
    // An unknown name: kept as a named target that matches no input.
    Key::Value { target: Target::Name(key.to_string()), mb: 0 }
}

/// The key under which `target` is stored for mini-batch `mb`.
pub fn key_for(layout: Layout, name: &str, position: Option<usize>, mb: usize) -> String {
    let base = match (layout, position) {
        (Layout::Positional, Some(p)) => format!("arr_{p:04}"),
        (Layout::Ordered, Some(p)) => format!("input_{p}"),
        _ => name.to_string(),
    };
    if mb == 0 {
        base
    } else {
        format!("mb{mb}_{base}")
    }
}

/// The ordered layout's keys: the base keys (mini-batch 0) in slot order
/// and, per base key, its `mb<i>_` keys. Base keys sort by their trailing
/// number when every one has one (`input_2` before `input_10`), else they
/// keep the file's order.
pub fn ordered<'a>(keys: &[&'a str]) -> (Vec<&'a str>, Vec<(usize, usize, &'a str)>) {
    let is_key = |k: &str| keys.contains(&k);
    let mut base: Vec<&str> = Vec::new();
    let mut per_mb: Vec<(&str, usize, &str)> = Vec::new();
    for &k in keys {
        match mini_batch(k) {
            Some((mb, rest)) if is_key(rest) => per_mb.push((rest, mb, k)),
            _ => base.push(k),
        }
    }
    let number = |k: &str| -> Option<u64> {
        let digits: String = k.chars().rev().take_while(char::is_ascii_digit).collect();
        digits.chars().rev().collect::<String>().parse().ok()
    };
    if base.iter().all(|k| number(k).is_some()) {
        base.sort_by_key(|k| number(k));
    }
    let mbs = per_mb
        .into_iter()
        .filter_map(|(rest, mb, k)| base.iter().position(|b| *b == rest).map(|p| (p, mb, k)))
        .collect();
    (base, mbs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let is_input = |s: &str| matches!(s, "input" | "labels" | "mb1_odd");
        let v = |t: Target, mb| Key::Value { target: t, mb };
        assert_eq!(parse("input", is_input), v(Target::Name("input".into()), 0));
        assert_eq!(parse("mb3_labels", is_input), v(Target::Name("labels".into()), 3));
        assert_eq!(parse("arr_0007", is_input), v(Target::Position(7), 0));
        assert_eq!(parse("mb12_arr_0001", is_input), v(Target::Position(1), 12));
        assert_eq!(parse("meta_n_accum", is_input), Key::Meta("n_accum".into()));
        assert_eq!(parse("mb1_odd", is_input), v(Target::Name("mb1_odd".into()), 0));
        assert_eq!(parse("mb0_input", is_input), v(Target::Name("mb0_input".into()), 0));
        assert_eq!(parse("arr_", is_input), v(Target::Name("arr_".into()), 0));
        assert_eq!(key_for(Layout::Positional, "x", Some(3), 2), "mb2_arr_0003");
        assert_eq!(key_for(Layout::Named, "x", Some(3), 0), "x");
    }

    #[test]
    fn ordered_keys_sort_by_their_number() {
        let (base, mbs) = ordered(&["input_10", "mb1_input_2", "input_2", "mb1_input_10", "meta"]);
        assert_eq!(base, vec!["input_10", "input_2", "meta"]);
        let (base, mbs2) = ordered(&["input_10", "mb1_input_2", "input_2", "mb1_input_10"]);
        assert_eq!(base, vec!["input_2", "input_10"]);
        assert_eq!(mbs2, vec![(0, 1, "mb1_input_2"), (1, 1, "mb1_input_10")]);
        assert_eq!(mbs.len(), 2);
    }
}
