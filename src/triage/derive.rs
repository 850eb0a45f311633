//! The inference variant of a training model, derived by dropping the loss
//! and the backward part (docs/triage.md, "Re-run"): the forward part that
//! `lower::forward` finds, written as an inference model folder.
//!
//! - `network.onnx`: the training file's own forward nodes (attributes,
//!   domains and opsets as written), the graph inputs they read with their
//!   declarations, the constants they read inline (initializers, and the
//!   values constant folding computed from shape subgraphs), and the
//!   forward outputs as graph outputs with their inferred types. Weights
//!   that are graph inputs in the training file stay graph inputs.
//! - `inputs.npz`: the training data's mini-batch-0 value of every input
//!   kept (data, weights, frozen statistics), named layout.
//! - `outputs.npz`: only when the training folder's `outputs.npz` holds a
//!   reference for a forward output under its name. deploygen computes
//!   no references; without them the variant can run, but nothing is
//!   compared.

use std::path::Path;

use prost::Message;

use super::fix::{self, Arrays};
use crate::bind::{self, Binding};
use crate::error::{Error, Result};
use crate::import::pb;
use crate::ir::{Dim, Model, Role, TensorType};
use crate::lower::forward::{self, Forward};

/// A derived inference model, in memory.
#[derive(Clone, Debug)]
pub struct Derived {
    /// The encoded `network.onnx`.
    pub onnx: Vec<u8>,
    /// `inputs.npz`, named layout.
    pub inputs: Arrays,
    /// References for forward outputs that the training folder's
    /// `outputs.npz` holds, by output name.
    pub references: Arrays,
    /// The forward outputs (the derived model's graph outputs).
    pub outputs: Vec<String>,
    /// What the derivation kept and dropped, for the report.
    pub changes: Vec<String>,
}

impl Derived {
    /// Forward outputs without a reference.
    pub fn unreferenced(&self) -> Vec<String> {
        self.outputs.iter().filter(|o| !self.references.iter().any(|(k, _)| k == *o)).cloned().collect()
    }

    /// The same model and the same data as `other`: references computed
    /// for one hold for the other.
    pub fn same_as(&self, other: &Derived) -> bool {
        self.onnx == other.onnx && self.inputs == other.inputs
    }

    /// Write `network.onnx`, `inputs.npz` and (with references)
    /// `outputs.npz` into the existing folder `dir`, then import the
    /// result: a derived model that does not import as an inference model
    /// is an error, not a folder to run.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let net = dir.join("network.onnx");
        std::fs::write(&net, &self.onnx).map_err(|e| Error::write(&net, e))?;
        write_npz(&dir.join(bind::INPUTS_FILE), &self.inputs)?;
        if !self.references.is_empty() {
            write_npz(&dir.join(bind::OUTPUTS_FILE), &self.references)?;
        }
        let err = |detail: String| Error::Derive { path: net.clone(), tensor: None, detail };
        let m = crate::load(dir).map_err(|e| err(format!("the derived model does not import: {e}")))?;
        if m.roles.is_training() {
            return Err(err("the derived model still reads as a training model".into()));
        }
        Ok(())
    }
}

fn write_npz(path: &Path, arrays: &Arrays) -> Result<()> {
    let refs: Vec<(&str, &crate::ir::TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let bytes =
        bind::npz::write_npz(&refs).map_err(|e| Error::Npz { path: path.into(), key: None, detail: e.to_string() })?;
    std::fs::write(path, bytes).map_err(|e| Error::write(path, e))
}

fn value_info(name: &str, ty: &TensorType) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{dimension, Dimension};
    let dim = |d: &Dim| Dimension {
        value: match d {
            Dim::Fixed(n) => Some(dimension::Value::DimValue(*n as i64)),
            Dim::Sym(s) if s.is_empty() => None,
            Dim::Sym(s) => Some(dimension::Value::DimParam(s.clone())),
        },
        ..Default::default()
    };
    let shape = ty.dims.as_ref().map(|d| pb::TensorShapeProto { dim: d.iter().map(dim).collect() });
    pb::ValueInfoProto {
        name: Some(name.to_string()),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: Some(ty.dtype.to_onnx()),
                shape,
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn role_name(role: Option<Role>) -> &'static str {
    match role {
        Some(Role::Labels) => "labels",
        Some(Role::GradBuffer) => "gradient buffer",
        Some(Role::LazyReset) => "reset flag",
        Some(Role::Param) => "weight",
        Some(Role::Frozen) => "frozen parameter",
        Some(Role::Data) => "data",
        Some(r) => r.name(),
        None => "no role",
    }
}

fn names(items: &[String], max: usize) -> String {
    let quoted: Vec<String> = items.iter().map(|n| format!("'{n}'")).collect();
    list(&quoted, max)
}

fn list(items: &[String], max: usize) -> String {
    let mut s = items.iter().take(max).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > max {
        s.push_str(&format!(", … ({} in all)", items.len()));
    }
    s
}

/// Derive the inference variant of `model` with its data bound as
/// `binding` (`None`: the data does not bind, so there is no data to
/// derive it with).
pub fn derive(model: &Model, binding: Option<&Binding>) -> Result<Derived> {
    let f = forward::forward(model)?;
    let g = &model.graph;
    let Some(binding) = binding else {
        return Err(Error::binding(format!(
            "{}: the training data does not bind, so there is no data for its derived inference variant",
            model.dir.display()
        )));
    };
    let (mut proto, gp) = read_model(model)?;
    let node = forward_nodes(model, &f, &gp)?;
    let kept = kept_inputs(model, &f, &gp, binding)?;
    let mut initializer = kept.initializers;
    initializer.extend(inline_constants(model, &f)?);
    let outputs: Vec<String> = f.outputs.iter().map(|&t| g.name_of(t).to_string()).collect();
    let output = f.outputs.iter().map(|&t| value_info(g.name_of(t), &g.tensor(t).ty)).collect();
    let produced: std::collections::HashSet<&str> =
        node.iter().flat_map(|n| n.output.iter().map(String::as_str)).collect();
    let value_info = gp
        .value_info
        .iter()
        .filter(|v| produced.contains(v.name()) && !outputs.iter().any(|o| o == v.name()))
        .cloned()
        .collect();
    let file = bind::short(&model.path);
    proto.graph = Some(pb::GraphProto {
        node,
        name: Some(format!("{}_inference", gp.name())),
        initializer,
        doc_string: Some(format!(
            "deploygen triage: the forward part of {file} (loss, backward, accumulation and optimizer dropped)"
        )),
        input: kept.declared,
        output,
        value_info,
        ..Default::default()
    });
    proto.training_info.clear();

    let (references, unused) = forward_references(model, &f, binding)?;
    let mut changes = describe(model, &f, &outputs);
    changes.extend(unused);
    Ok(Derived { onnx: proto.encode_to_vec(), inputs: kept.values, references, outputs, changes })
}

fn derive_error(model: &Model, tensor: Option<&str>, detail: String) -> Error {
    Error::Derive { path: model.path.clone(), tensor: tensor.map(str::to_string), detail }
}

/// The training file as written, and its graph taken out of it.
fn read_model(model: &Model) -> Result<(pb::ModelProto, pb::GraphProto)> {
    let bytes = std::fs::read(&model.path).map_err(|e| Error::io(&model.path, e))?;
    let mut proto = pb::ModelProto::decode(bytes.as_slice())
        .map_err(|e| Error::Decode { path: model.path.clone(), detail: e.to_string() })?;
    let Some(gp) = proto.graph.take() else {
        return Err(derive_error(model, None, "the model holds no graph".into()));
    };
    Ok((proto, gp))
}

/// The file's own nodes of the forward part, as written.
fn forward_nodes(model: &Model, f: &Forward, gp: &pb::GraphProto) -> Result<Vec<pb::NodeProto>> {
    let g = &model.graph;
    f.nodes
        .iter()
        .map(|&n| {
            gp.node
                .get(g.node(n).order)
                .cloned()
                .ok_or_else(|| derive_error(model, None, format!("node '{}' is not in the file", g.node(n).name)))
        })
        .collect()
}

/// The graph inputs the forward part reads.
struct KeptInputs {
    /// Their declarations in the file.
    declared: Vec<pb::ValueInfoProto>,
    /// Their mini-batch-0 values from the training data.
    values: Arrays,
    /// Weights of a step derived from `train.toml`, initializers in the file.
    initializers: Vec<pb::TensorProto>,
}

fn kept_inputs(model: &Model, f: &Forward, gp: &pb::GraphProto, binding: &Binding) -> Result<KeptInputs> {
    let g = &model.graph;
    let mut kept = KeptInputs { declared: vec![], values: Arrays::new(), initializers: vec![] };
    for &t in &f.inputs {
        let name = g.name_of(t);
        // A weight of a step derived from train.toml is an initializer in
        // the file: it stays one.
        if let Some(init) = gp.initializer.iter().find(|i| i.name() == name).filter(|_| model.derived.is_some()) {
            kept.initializers.push(init.clone());
            continue;
        }
        let vi = gp.input.iter().find(|v| v.name() == name).ok_or_else(|| {
            derive_error(model, Some(name), format!("graph input '{name}' is not declared in the file"))
        })?;
        kept.declared.push(vi.clone());
        let value = binding.slot(name).and_then(|s| s.values.first()).ok_or_else(|| {
            Error::binding(format!(
                "the training data has no value for graph input '{name}', which the derived inference variant reads"
            ))
            .at_input(name)
        })?;
        kept.values.push((name.to_string(), value.clone()));
    }
    Ok(kept)
}

/// The constants the forward part reads, as inline initializers.
fn inline_constants(model: &Model, f: &Forward) -> Result<Vec<pb::TensorProto>> {
    let g = &model.graph;
    let mut out = Vec::with_capacity(f.constants.len());
    for &t in &f.constants {
        let tensor = g.tensor(t);
        let err = |detail: String| derive_error(model, Some(&tensor.name), detail);
        let data = tensor.data.as_ref().ok_or_else(|| err(format!("constant '{}' has no value", tensor.name)))?;
        if data.dtype.size().is_none() {
            return Err(err(format!("constant '{}' is {}: not written inline", tensor.name, data.dtype)));
        }
        out.push(pb::TensorProto {
            name: Some(tensor.name.clone()),
            dims: data.shape.iter().map(|&d| d as i64).collect(),
            data_type: Some(data.dtype.to_onnx()),
            raw_data: Some(data.bytes.clone()),
            ..Default::default()
        });
    }
    Ok(out)
}

/// References the training folder holds for the forward outputs, and a
/// line for each key that names one but does not fit it.
fn forward_references(model: &Model, f: &Forward, binding: &Binding) -> Result<(Arrays, Vec<String>)> {
    let g = &model.graph;
    let mut references = Arrays::new();
    let mut unused = Vec::new();
    let Some(path) = &binding.outputs_path else { return Ok((references, unused)) };
    let refs = bind::npz::read(path)?;
    for &t in &f.outputs {
        let name = g.name_of(t);
        match refs.get(name)? {
            Some(r) if fix::fits(&g.tensor(t).ty, r) => references.push((name.to_string(), r.clone())),
            Some(r) => unused.push(format!(
                "{} key '{name}' is {}, not the forward output's {}: not used as its reference",
                bind::short(path),
                r.ty(),
                g.tensor(t).ty
            )),
            None => {}
        }
    }
    Ok((references, unused))
}

/// What the derivation kept and dropped, for the report.
fn describe(model: &Model, f: &Forward, outputs: &[String]) -> Vec<String> {
    let g = &model.graph;
    let dropped: Vec<String> =
        f.dropped_inputs.iter().map(|&(t, r)| format!("'{}' ({})", g.name_of(t), role_name(r))).collect();
    let weights: Vec<String> = f
        .inputs
        .iter()
        .filter(|&&t| matches!(model.roles.role(g.name_of(t)), Some(Role::Param | Role::Frozen)))
        .map(|&t| g.name_of(t).to_string())
        .collect();
    let mut desc = vec![
        format!(
            "kept the {} of {} nodes that compute the forward output(s) {} (what the loss reads); dropped the loss, \
             backward, accumulation and optimizer ({} nodes{})",
            f.nodes.len(),
            g.node_count(),
            names(outputs, 4),
            f.dropped_nodes,
            if model.optimizer.is_some() { ", and the optimizer graph" } else { "" }
        ),
        format!("dropped graph inputs {}", list(&dropped, 6)),
    ];
    if !weights.is_empty() {
        desc.push(format!("weights stay graph inputs ({}), bound from the training data's values", names(&weights, 4)));
    }
    if !f.constants.is_empty() {
        desc.push(format!("{} constant(s) inline", f.constants.len()));
    }
    if !f.batch_stats.is_empty() {
        let bn: Vec<String> = f.batch_stats.iter().map(|&n| g.node(n).name.clone()).collect();
        desc.push(format!(
            "{} BatchNorm node(s) keep training mode (batch statistics), as the training step's forward pass \
             computes them: {}",
            bn.len(),
            names(&bn, 3)
        ));
    }
    desc.push(format!("{}: mini-batch 0 of the training data, named layout", bind::INPUTS_FILE));
    desc
}
