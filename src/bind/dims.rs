//! Symbolic dims (`dim_param`, e.g. PyTorch's dynamic batch) take a value
//! before the graph is typed (docs/training.md, "Symbolic dims"): from `--dim` / `dims` in the
//! spec file, else from the test data when every array bound to the dim
//! agrees. Code generation needs static shapes, so a dim without a value,
//! or with values that disagree, is an error naming the dim, the tensors
//! and the flag.

use std::collections::BTreeMap;

use super::layout::{self, Key, Target};
use super::{inputs_path, npz, ACCUM_BUFFER_SUFFIX};
use crate::error::{Error, Result};
use crate::ir::{Dim, DimValue, Graph, Model, Origin, TensorType};

/// One array's size on one symbolic axis.
struct Seen {
    key: String,
    dim: String,
    value: usize,
}

/// Give every named symbolic dim of the graph inputs its value and write
/// it into every declared type that uses it (both graphs).
pub fn specialise(model: &mut Model) -> Result<()> {
    let dims = symbolic(&model.graph);
    for r in &model.dim_requests {
        if !dims.contains_key(&r.name) {
            let have = if dims.is_empty() {
                "the graph inputs have no symbolic dim".to_string()
            } else {
                format!("its symbolic dims: {}", dims.keys().map(|d| format!("'{d}'")).collect::<Vec<_>>().join(", "))
            };
            return Err(Error::binding(format!("{}: the model has no symbolic dim '{}' ({have})", r.from, r.name)));
        }
    }
    if dims.is_empty() {
        return Ok(());
    }
    let seen = observed(model)?;
    let mut values = vec![];
    for (name, inputs) in &dims {
        let here: Vec<&Seen> = seen.iter().filter(|s| &s.dim == name).collect();
        let asked = model.dim_requests.iter().find(|r| &r.name == name);
        values.push(value_of(name, inputs, &here, asked)?);
    }
    for g in std::iter::once(&mut model.graph).chain(model.optimizer.as_mut()) {
        for t in g.tensors.values_mut() {
            fix(&mut t.ty, &values);
        }
    }
    model.dims = values;
    Ok(())
}

/// Named symbolic dims of the graph inputs fed at run time, each with the
/// inputs (and their declared types) that use it.
fn symbolic(g: &Graph) -> BTreeMap<String, Vec<(String, TensorType)>> {
    let mut out: BTreeMap<String, Vec<(String, TensorType)>> = BTreeMap::new();
    for &t in &g.inputs {
        let x = g.tensor(t);
        if x.origin != Origin::Input {
            continue;
        }
        for d in x.ty.dims.iter().flatten() {
            if let Dim::Sym(name) = d {
                let users = out.entry(name.clone()).or_default();
                if !name.is_empty() && !users.iter().any(|(n, _)| n == &x.name) {
                    users.push((x.name.clone(), x.ty.clone()));
                }
            }
        }
    }
    out.remove("");
    out
}

/// The size of every array on every symbolic axis of the graph input it
/// binds to (named and positional keys; the binding checks the rest).
fn observed(model: &Model) -> Result<Vec<Seen>> {
    let Some(path) = inputs_path(model)? else { return Ok(vec![]) };
    let data = npz::read(&path)?;
    let g = &model.graph;
    let inputs: Vec<&crate::ir::Tensor> = g
        .inputs
        .iter()
        .map(|&t| g.tensor(t))
        .filter(|x| !(x.sequence || model.optimizer.is_some() && x.name.ends_with(ACCUM_BUFFER_SUFFIX)))
        .collect();
    let mut out = vec![];
    for (key, h) in data.headers() {
        let target = match layout::parse(key, |s| inputs.iter().any(|x| x.name == s)) {
            Key::Value { target: Target::Name(n), .. } => inputs.iter().find(|x| x.name == n),
            Key::Value { target: Target::Position(p), .. } => inputs.get(p),
            Key::Meta(_) => None,
        };
        let Some(x) = target.filter(|x| x.origin == Origin::Input) else { continue };
        let Some(dims) = &x.ty.dims else { continue };
        if dims.len() != h.shape.len() {
            continue;
        }
        for (d, &v) in dims.iter().zip(&h.shape) {
            if let Dim::Sym(name) = d {
                if !name.is_empty() {
                    out.push(Seen { key: key.to_string(), dim: name.clone(), value: v });
                }
            }
        }
    }
    Ok(out)
}

/// The dim's value: the one asked for, which the data must not contradict,
/// else the one every array agrees on.
fn value_of(name: &str, inputs: &[(String, TensorType)], seen: &[&Seen], asked: Option<&DimValue>) -> Result<DimValue> {
    let users = inputs.iter().map(|(n, ty)| format!("'{n}' ({ty})")).collect::<Vec<_>>().join(", ");
    let flag = format!("--dim {name}=N (or dims = {{ {name} = N }} in train.toml)");
    if let Some(a) = asked {
        if let Some(s) = seen.iter().find(|s| s.value != a.value) {
            return Err(Error::binding(format!(
                "symbolic dim '{name}' of {users} is {} by {}, but inputs.npz '{}' has {} on that axis: give the data \
                 that size, or drop the value",
                a.value, a.from, s.key, s.value
            ))
            .at_key(&s.key));
        }
        return Ok(a.clone());
    }
    let mut by_value: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for s in seen {
        by_value.entry(s.value).or_default().push(&s.key);
    }
    match by_value.len() {
        0 => Err(Error::binding(format!(
            "symbolic dim '{name}' of {users} has no value: no array of the test data binds to it (inputs.npz \
             missing, or no key for those inputs); code generation needs static shapes: give {flag}"
        ))),
        1 => {
            let first = seen[0];
            let value = first.value;
            let more = if seen.len() > 1 { format!(" and {} more arrays", seen.len() - 1) } else { String::new() };
            Ok(DimValue { name: name.into(), value, from: format!("inputs.npz '{}'{more}", first.key) })
        }
        _ => {
            let parts: Vec<String> = by_value
                .iter()
                .map(|(v, keys)| {
                    let shown: Vec<String> = keys.iter().take(3).map(|k| format!("'{k}'")).collect();
                    format!("{v} in {}{}", shown.join(", "), if keys.len() > 3 { ", …" } else { "" })
                })
                .collect();
            Err(Error::binding(format!(
                "symbolic dim '{name}' of {users} takes different values in inputs.npz ({}): every mini-batch must \
                 have the same shape; give the arrays one size, or fix it with {flag}",
                parts.join("; ")
            )))
        }
    }
}

/// Replace the resolved symbolic dims of a declared type.
fn fix(ty: &mut TensorType, values: &[DimValue]) {
    for d in ty.dims.iter_mut().flatten() {
        if let Dim::Sym(name) = d {
            if let Some(v) = values.iter().find(|v| &v.name == name) {
                *d = Dim::Fixed(v.value);
            }
        }
    }
}
