//! A re-batched copy of a model (batch 1 → 2). ONNX graphs here have
//! static shapes, so a batch-2 fix changes the graph, not only the data:
//! the data inputs' batch dim becomes 2, every declared intermediate shape
//! is dropped and re-inferred by the typing pass, and the graph outputs get
//! the inferred shapes. A shape constant (an initializer or a constant node
//! read as a shape at generation time) that spells out the batch refuses
//! the copy, naming the node.

use std::path::Path;

use prost::Message;

use crate::error::{Error, Result};
use crate::import::pb;
use crate::ir::{Model, Origin};
use crate::ops;

fn dim_value(d: i64) -> pb::tensor_shape_proto::Dimension {
    pb::tensor_shape_proto::Dimension {
        value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(d)),
        ..Default::default()
    }
}

fn tensor_type_mut(vi: &mut pb::ValueInfoProto) -> Option<&mut pb::type_proto::Tensor> {
    match vi.r#type.as_mut()?.value.as_mut()? {
        pb::type_proto::Value::TensorType(t) => Some(t),
        _ => None,
    }
}

/// Shape constants that hard-code the batch: a compile-time input (shape
/// of a Reshape, Expand, …) that is an initializer or a folded source
/// constant, whose first value is the batch while the node's data input
/// carries the batch in dim 0.
fn hard_coded_batch(model: &Model, proto: &pb::GraphProto) -> Option<String> {
    let g = &model.graph;
    let sources: Vec<&str> =
        proto.node.iter().filter(|n| n.input.is_empty()).flat_map(|n| n.output.iter().map(String::as_str)).collect();
    for (_, n) in g.nodes() {
        let def = ops::of(n);
        for &i in def.compile_time {
            let Some(t) = n.input(i) else { continue };
            let tensor = g.tensor(t);
            let constant = match tensor.origin {
                Origin::Initializer => true,
                Origin::Folded => sources.contains(&tensor.name.as_str()),
                _ => false,
            };
            let Some(values) = tensor.data.as_ref().and_then(|d| d.to_i64()) else { continue };
            let data_batch = n.input(0).and_then(|x| g.tensor(x).ty.shape()).and_then(|s| s.first().copied());
            if constant && values.len() > 1 && values[0] == 1 && data_batch == Some(1) {
                return Some(format!(
                    "node '{}' ({}) takes its shape from the constant '{}' = {values:?}, which hard-codes the batch \
                     (1): a batch-2 copy would need that constant rewritten, which is not a test-data fix",
                    n.name, n.op, tensor.name
                ));
            }
        }
    }
    None
}

/// Write a batch-2 copy of `model`'s main graph to `out` (a `.onnx` path):
/// `inputs` are the data inputs whose dim 0 (now 1) becomes 2. Returns what
/// changed, or an error naming why the copy cannot be made.
pub fn rebatch(model: &Model, inputs: &[String], out: &Path) -> Result<Vec<String>> {
    let bytes = std::fs::read(&model.path).map_err(|e| Error::io(&model.path, e))?;
    let mut proto = pb::ModelProto::decode(bytes.as_slice())
        .map_err(|e| Error::Decode { path: model.path.clone(), detail: e.to_string() })?;
    let graph = proto.graph.as_mut().ok_or_else(|| Error::model("the model holds no graph"))?;
    if let Some(why) = hard_coded_batch(model, graph) {
        return Err(Error::model(why));
    }
    let mut changes = Vec::new();
    for vi in graph.input.iter_mut() {
        if !inputs.iter().any(|n| n == vi.name()) {
            continue;
        }
        let name = vi.name().to_string();
        let Some(shape) = tensor_type_mut(vi).and_then(|t| t.shape.as_mut()) else { continue };
        if let Some(d) = shape.dim.first_mut() {
            *d = dim_value(2);
            changes.push(format!("graph input '{name}': batch dim 1 → 2"));
        }
    }
    let dropped = graph.value_info.len();
    graph.value_info.clear();
    for vi in graph.output.iter_mut() {
        if let Some(t) = tensor_type_mut(vi) {
            t.shape = None;
        }
    }
    // Re-infer: import and type the copy, then declare the inferred output
    // shapes in it.
    let write = |p: &pb::ModelProto| std::fs::write(out, p.encode_to_vec()).map_err(|e| Error::write(out, e));
    write(&proto)?;
    let typed = crate::load(out).map_err(|e| Error::model(format!("the batch-2 copy does not type: {e}")))?;
    let graph = proto.graph.as_mut().expect("checked above");
    for vi in graph.output.iter_mut() {
        let Some(shape) = typed.graph.id(vi.name()).and_then(|t| typed.graph.tensor(t).ty.shape()) else { continue };
        if let Some(t) = tensor_type_mut(vi) {
            t.shape = Some(pb::TensorShapeProto { dim: shape.iter().map(|&d| dim_value(d as i64)).collect() });
        }
    }
    write(&proto)?;
    changes.push(format!(
        "dropped {dropped} declared intermediate shape(s) (value_info); every shape re-inferred, graph outputs \
         declared with the inferred shapes"
    ));
    Ok(changes)
}
