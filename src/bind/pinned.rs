//! Graph inputs whose value the code is generated for. A graph input that
//! every path leads only to operands read when generating code (a
//! Reshape's shape, a Slice's starts, a reduction's axes, a Pad's pads or
//! constant value, directly or through foldable arithmetic) cannot be
//! run-time data: the shapes it decides must be static, and the kernels
//! take those operands as constants. When the test data gives its value, it
//! becomes a constant before typing, like a symbolic dim takes its value
//! (`dims`); the binding notes it, and the generated project computes for
//! that value only. Inputs that may be data (Gather's indices, the input of
//! Shape) are never pinned.

use std::collections::HashMap;

use super::layout::{self, Key, Target};
use super::{inputs_path, npz};
use crate::error::{Error, Result};
use crate::ir::{Graph, Model, Origin, PinnedInput, TensorId};
use crate::ops;

/// Pin every such input that `inputs.npz` names.
pub fn pin(model: &mut Model) -> Result<()> {
    let candidates = candidates(&model.graph);
    if !candidates.is_empty() {
        if let Some(path) = inputs_path(model)? {
            let data = npz::read(&path)?;
            for t in candidates {
                pin_one(model, t, &data)?;
            }
        }
    }
    Ok(())
}

/// Graph inputs fed at run time whose every use is read when generating
/// code.
fn candidates(g: &Graph) -> Vec<TensorId> {
    let readers = g.readers();
    let mut memo = HashMap::new();
    g.inputs
        .iter()
        .copied()
        .filter(|&t| {
            let x = g.tensor(t);
            x.origin == Origin::Input && !x.sequence
        })
        .filter(|&t| read_when_generating(g, t, &readers, &mut memo))
        .collect()
}

/// Whether every reader of `t` reads it as a generation-time operand, or
/// folds it into values that are (and `t` is no graph output).
fn read_when_generating(
    g: &Graph,
    t: TensorId,
    readers: &crate::ir::Readers,
    memo: &mut HashMap<TensorId, bool>,
) -> bool {
    if let Some(&v) = memo.get(&t) {
        return v;
    }
    let users = readers.get(&t).map(Vec::as_slice).unwrap_or_default();
    let mut ok = !users.is_empty() && !g.outputs.contains(&t);
    for &n in users {
        if !ok {
            break;
        }
        let node = g.node(n);
        let def = ops::of(node);
        for (slot, _) in node.inputs.iter().enumerate().filter(|(_, s)| **s == Some(t)) {
            // Shape and Size fold from the input's shape, not its value.
            let folds = def.fold.is_some()
                && def.fold_when != ops::FoldWhen::Shapes
                && node.outputs.iter().flatten().all(|&o| read_when_generating(g, o, readers, memo));
            ok &= def.value_at_generation(slot) || folds;
        }
    }
    memo.insert(t, ok);
    ok
}

/// The keys of the test data that give input `name`'s value.
fn keys_of<'a>(name: &str, data: &'a npz::Npz) -> Vec<&'a str> {
    data.keys()
        .filter(|k| matches!(layout::parse(k, |s| s == name), Key::Value { target: Target::Name(n), .. } if n == name))
        .collect()
}

/// Make input `t` a constant of its value in the test data, when the data
/// names it (every mini-batch's value must be the same: the code is
/// generated for one).
fn pin_one(model: &mut Model, t: TensorId, data: &npz::Npz) -> Result<()> {
    let name = model.graph.tensor(t).name.clone();
    let keys = keys_of(&name, data);
    let Some(&first) = keys.first() else { return Ok(()) };
    let value = data.get(first)?.expect("a listed key").clone();
    let declared = &model.graph.tensor(t).ty;
    if !super::data::fits(declared, &npz::Header::of(&value)) {
        return Err(Error::binding(format!(
            "graph input '{name}' is {declared} but inputs.npz '{first}' is {} {:?}",
            value.dtype.name(),
            value.shape
        ))
        .at_key(first));
    }
    for &k in &keys[1..] {
        if data.get(k)? != Some(&value) {
            return Err(Error::binding(format!(
                "graph input '{name}' decides shapes, so the code is generated for one value, but inputs.npz \
                 '{first}' and '{k}' differ"
            ))
            .at_key(k));
        }
    }
    let shown = match (value.to_i64(), value.to_f32()) {
        (Some(v), _) => format!("{v:?}"),
        (None, Some(v)) => format!("{v:?}"),
        _ => format!("{} {:?}", value.dtype.name(), value.shape),
    };
    let x = model.graph.tensor_mut(t);
    x.ty = value.ty();
    x.origin = Origin::Initializer;
    x.data = Some(std::sync::Arc::new(value));
    model.graph.inputs.retain(|&i| i != t);
    model.pinned.push(PinnedInput { name, keys: keys.iter().map(|k| k.to_string()).collect(), value: shown });
    Ok(())
}
