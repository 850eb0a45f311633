//! The minimal test-data fix per flavor (docs/triage.md, "Fix"). Each function
//! returns the arrays of the fixed `inputs.npz`, in order, and says what
//! changed; none of them writes anything.

use std::collections::BTreeMap;

use crate::bind::layout::{self, Key, Layout, Target};
use crate::bind::npz::Loaded;
use crate::bind::{Binding, Source};
use crate::diag::Finding;
use crate::ir::{DType, Dim, Model, Role, TensorData, TensorType};

/// Arrays of an npz file to write, in order.
pub type Arrays = Vec<(String, TensorData)>;

/// A fix, or why there is none.
pub enum Fix {
    Data { arrays: Arrays, changes: Vec<String> },
    NotFixable(String),
}

/// Does an array fit a declared type (symbolic dims take any size)?
pub fn fits(ty: &TensorType, t: &TensorData) -> bool {
    ty.dtype == t.dtype
        && match &ty.dims {
            None => true,
            Some(d) => {
                d.len() == t.shape.len()
                    && d.iter().zip(&t.shape).all(|(a, &b)| match a {
                        Dim::Fixed(n) => *n == b,
                        Dim::Sym(_) => true,
                    })
            }
        }
}

/// Every bound value under its graph-input name (`<input>`,
/// `mb<i>_<input>`), with the file's `meta_*` keys: the named layout.
pub fn to_named(binding: &Binding, npz: &Loaded) -> Arrays {
    let mut out = Arrays::new();
    for s in &binding.slots {
        match s.source {
            Source::PerMiniBatch => {
                for (i, v) in s.values.iter().enumerate() {
                    out.push((layout::key_for(Layout::Named, &s.input, None, i), v.clone()));
                }
            }
            Source::Constant | Source::Harness => {
                if let Some(v) = s.values.first() {
                    out.push((s.input.clone(), v.clone()));
                }
            }
            Source::Zeros | Source::Missing | Source::Initializer => {}
        }
    }
    for (k, v) in &npz.arrays {
        if k.starts_with("meta_") {
            out.push((k.clone(), v.clone()));
        }
    }
    out
}

/// `missing_targets`: one synthetic target per sample and mini-batch, of
/// the graph input's dtype and shape: class label 1 (in `[1,
/// num_classes)`) for integer targets, the box `[0, 0, 1, 1]` for float
/// targets whose last dim is 4, zeros for other float targets.
pub fn targets(model: &Model, binding: &Binding, npz: &Loaded, findings: &[&Finding]) -> Fix {
    let g = &model.graph;
    let mut arrays = match binding.layout {
        Layout::Named => npz.arrays.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Layout::Positional | Layout::Ordered => to_named(binding, npz),
    };
    let mut changes = Vec::new();
    if binding.layout != Layout::Named {
        changes.push(format!(
            "re-keyed {} from the {} layout to the named layout (keys = graph-input names), so the added targets \
             cannot shift any slot",
            crate::bind::short(&binding.inputs_path),
            binding.layout.name()
        ));
    }
    let n_mb = binding.data_slots().iter().map(|s| s.values.len()).max().unwrap_or(1).max(1);
    for f in findings {
        let Some(name) = f.input.as_deref() else { continue };
        let Some(t) = g.id(name) else { continue };
        let ty = &g.tensor(t).ty;
        let Some(shape) = ty.shape() else {
            return Fix::NotFixable(format!(
                "graph input '{name}' is declared {ty}: no static shape to make targets of"
            ));
        };
        let numel: usize = shape.iter().product();
        // The number of classes: dim 1 of the scores the loss compares the
        // targets with (the consumer's first input).
        let classes = g
            .consumers(t)
            .into_iter()
            .filter_map(|n| g.node(n).input(0))
            .filter(|&x| x != t)
            .find_map(|x| g.tensor(x).ty.shape().and_then(|s| s.get(1).copied()));
        let (value, what) = match ty.dtype {
            d if d.is_int() => {
                let label = if classes.unwrap_or(2) >= 2 { 1 } else { 0 };
                let Some(v) = TensorData::from_i64_as(d, shape.clone(), &vec![label; numel]) else {
                    return Fix::NotFixable(format!("cannot make {d} targets for '{name}'"));
                };
                let c = classes.map_or("?".to_string(), |c| c.to_string());
                (v, format!("class label {label} for every sample (in [1, {c}))"))
            }
            DType::F32 if shape.last() == Some(&4) => {
                let vals: Vec<f32> = (0..numel).map(|i| [0.0, 0.0, 1.0, 1.0][i % 4]).collect();
                (TensorData::from_f32(shape.clone(), &vals), "one box [0, 0, 1, 1] (xyxy) per sample".into())
            }
            DType::F32 => (
                TensorData::from_f32(shape.clone(), &vec![0.0; numel]),
                "zeros (a float target that is not a box: needs a human look)".into(),
            ),
            other => return Fix::NotFixable(format!("graph input '{name}' is {other}: no synthetic target for it")),
        };
        let keys: Vec<String> = (0..n_mb).map(|i| layout::key_for(Layout::Named, name, None, i)).collect();
        for k in &keys {
            arrays.push((k.clone(), value.clone()));
        }
        changes.push(format!(
            "added targets '{name}' ({}) for {n_mb} mini-batch(es) as {}: {what}",
            value.ty(),
            quote_keys(&keys)
        ));
    }
    Fix::Data { arrays, changes }
}

fn quote_keys(keys: &[String]) -> String {
    if keys.len() <= 3 {
        keys.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ")
    } else {
        format!("'{}', '{}', … '{}'", keys[0], keys[1], keys[keys.len() - 1])
    }
}

/// A graph input as the positional layout counts it.
pub struct Positioned {
    pub name: String,
    pub ty: TensorType,
}

/// The graph inputs the positional layout numbers: every input that is
/// not a gradient-accumulation buffer, in graph order.
pub fn positioned(model: &Model) -> Vec<Positioned> {
    let g = &model.graph;
    g.inputs
        .iter()
        .map(|&t| g.tensor(t))
        .filter(|t| {
            !t.sequence
                && model.roles.role(&t.name) != Some(Role::GradBuffer)
                && !t.name.ends_with(crate::bind::ACCUM_BUFFER_SUFFIX)
        })
        .map(|t| Positioned { name: t.name.clone(), ty: t.ty.clone() })
        .collect()
}

/// Positional slots whose arrays sit at the wrong position: when every
/// mismatched array fits exactly one mismatched input, and those form a
/// permutation, the map position → the input its array belongs to.
pub fn misplaced_positions(model: &Model, npz: &Loaded) -> Option<BTreeMap<usize, usize>> {
    let inputs = positioned(model);
    let array = |p: usize| npz.get(&format!("arr_{p:04}"));
    let mismatched: Vec<usize> =
        (0..inputs.len()).filter(|&p| array(p).is_some_and(|a| !fits(&inputs[p].ty, a))).collect();
    if mismatched.is_empty() {
        return None;
    }
    let mut map = BTreeMap::new();
    for &p in &mismatched {
        let a = array(p)?;
        let fitting: Vec<usize> = mismatched.iter().copied().filter(|&q| fits(&inputs[q].ty, a)).collect();
        match fitting.as_slice() {
            [q] => {
                map.insert(p, *q);
            }
            _ => return None,
        }
    }
    let mut targets: Vec<usize> = map.values().copied().collect();
    targets.sort_unstable();
    targets.dedup();
    (targets.len() == map.len()).then_some(map)
}

/// `decoder_inputs`, positional arrays at the wrong positions: every key
/// re-keyed by name (the named layout), each misplaced array under the
/// input it fits.
pub fn rekey_positions(model: &Model, npz: &Loaded, map: &BTreeMap<usize, usize>) -> Fix {
    let inputs = positioned(model);
    let mut arrays = Arrays::new();
    let mut changes = vec![format!(
        "re-keyed {} by name: the positional layout (arr_NNNN) became the named layout (keys = graph-input names)",
        crate::bind::short(&npz.path)
    )];
    for (k, v) in &npz.arrays {
        match layout::parse(k, |s| inputs.iter().any(|x| x.name == s)) {
            Key::Value { target: Target::Position(p), mb } if p < inputs.len() => {
                let to = map.get(&p).copied().unwrap_or(p);
                let name = &inputs[to].name;
                if to != p {
                    changes.push(format!(
                        "'{k}' ({}) sat at position {p} ('{}', {}); it is the value of '{name}' ({}), now key '{}'",
                        v.ty(),
                        inputs[p].name,
                        inputs[p].ty,
                        inputs[to].ty,
                        layout::key_for(Layout::Named, name, None, mb)
                    ));
                }
                arrays.push((layout::key_for(Layout::Named, name, None, mb), v.clone()));
            }
            _ => arrays.push((k.clone(), v.clone())),
        }
    }
    Fix::Data { arrays, changes }
}

/// `decoder_inputs`, an input the data lacks: re-key the one unused key
/// whose type fits it (and its `mb<i>_` keys) to the input's name.
pub fn rekey_missing(model: &Model, binding: &Binding, npz: &Loaded, findings: &[&Finding]) -> Fix {
    let g = &model.graph;
    let is_input = |s: &str| g.inputs.iter().any(|&t| g.name_of(t) == s);
    let mut renames: Vec<(String, String)> = Vec::new();
    let mut changes = Vec::new();
    for f in findings {
        let Some(name) = f.input.as_deref() else { continue };
        let m = binding.missing.iter().find(|m| m.input == name);
        if let Some(why) = m.and_then(|m| m.misplaced.as_ref()) {
            return Fix::NotFixable(format!(
                "{why}; the data holds no value for '{name}' at all, and deploygen does not invent one: the exporter \
                 has to write it"
            ));
        }
        let Some(t) = g.id(name) else { continue };
        let ty = &g.tensor(t).ty;
        let unused: Vec<&String> = npz
            .arrays
            .iter()
            .filter(|(k, v)| {
                !is_input(k) && !k.starts_with("meta_") && !k.starts_with("mb") && !k.starts_with("arr_") && fits(ty, v)
            })
            .map(|(k, _)| k)
            .collect();
        match unused.as_slice() {
            [k] => {
                renames.push(((*k).clone(), name.to_string()));
                changes.push(format!("re-keyed '{k}' ({}) to '{name}', the graph input it fits", ty));
            }
            [] => {
                return Fix::NotFixable(format!(
                    "{} has no value for graph input '{name}' ({ty}) under any key, and deploygen does not invent \
                     one: add it to the test data",
                    crate::bind::short(&npz.path)
                ))
            }
            many => {
                return Fix::NotFixable(format!(
                    "several unused keys fit graph input '{name}' ({ty}): {}; which one is meant needs a human",
                    many.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ")
                ))
            }
        }
    }
    let rename = |k: &str| -> String {
        for (from, to) in &renames {
            if k == from {
                return to.clone();
            }
            if let Some(rest) = k.strip_prefix("mb") {
                if let Some((digits, tail)) = rest.split_once('_') {
                    if tail == from && digits.bytes().all(|b| b.is_ascii_digit()) {
                        return format!("mb{digits}_{to}");
                    }
                }
            }
        }
        k.to_string()
    };
    let arrays = npz.arrays.iter().map(|(k, v)| (rename(k), v.clone())).collect();
    Fix::Data { arrays, changes }
}

/// Repeat every per-mini-batch data and label array along dim 0, from
/// batch 1 to batch 2.
pub fn repeat_batch(binding: &Binding, npz: &Loaded) -> (Arrays, Vec<String>) {
    let per_mb: Vec<&str> = binding
        .slots
        .iter()
        .filter(|s| matches!(s.role, Role::Data | Role::Labels) && s.source == Source::PerMiniBatch)
        .flat_map(|s| s.keys.iter().map(String::as_str))
        .collect();
    let mut repeated = Vec::new();
    let arrays = npz
        .arrays
        .iter()
        .map(|(k, v)| {
            if per_mb.contains(&k.as_str()) && v.shape.first() == Some(&1) {
                let mut shape = v.shape.clone();
                shape[0] = 2;
                let mut bytes = v.bytes.clone();
                bytes.extend_from_slice(&v.bytes);
                repeated.push(k.clone());
                (k.clone(), TensorData { dtype: v.dtype, shape, bytes })
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect();
    let changes = vec![format!("repeated the batch to 2 in {} array(s): {}", repeated.len(), quote_keys(&repeated))];
    (arrays, changes)
}
