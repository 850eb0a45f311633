//! `ModelProto` → `ir::Graph`. The protobuf types stop here.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use indexmap::IndexMap;
use prost::Message;

use super::{pb, tensor};
use crate::error::{Error, Result};
use crate::ir::{Attr, DType, Dim, Graph, Node, Origin, Tensor, TensorId, TensorType};
use crate::ops;

/// Read, decode and convert one `.onnx` file; the graph comes back
/// scheduled, every node resolved against the operator registry, and
/// untyped (`lower` types it).
pub fn read_graph(path: &Path) -> Result<Graph> {
    // A FIFO or device is refused, never opened to block (`files`).
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut crate::files::open_regular(path, "an ONNX model")?, &mut bytes)
        .map_err(|e| Error::io(path, e))?;
    let model = pb::ModelProto::decode(bytes.as_slice())
        .map_err(|e| Error::Decode { path: path.to_path_buf(), detail: decode_failure(&bytes, &e) })?;
    let Some(graph) = &model.graph else {
        return Err(Error::Decode {
            path: path.to_path_buf(),
            detail: "the file holds no graph (empty, truncated, or not an ONNX model)".into(),
        });
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut g = convert(graph, &model.opset_import, dir)?;
    g.compute_schedule()?;
    Ok(g)
}

/// Why the bytes are not a model: a file that does not start like a
/// protobuf message is not ONNX at all; one that does but breaks off is
/// likely truncated.
fn decode_failure(bytes: &[u8], e: &prost::DecodeError) -> String {
    // An ONNX file starts with the key of a ModelProto field: ir_version
    // or model_version as a varint, the others length-delimited.
    let key = match bytes {
        [b, ..] if b & 0x80 == 0 => u32::from(*b),
        [b0, b1, ..] if b1 & 0x80 == 0 => u32::from(b0 & 0x7f) | u32::from(*b1) << 7,
        _ => 0,
    };
    let plausible = matches!((key >> 3, key & 7), (1 | 5, 0) | (2..=4 | 6..=8 | 14 | 20 | 21 | 25, 2));
    if bytes.is_empty() {
        "the file is empty".into()
    } else if !plausible {
        let head: String = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ");
        format!("this is not an ONNX (protobuf) file: it starts with bytes {head}")
    } else {
        format!("protobuf decoding failed ({e}); the file may be truncated or not an ONNX model")
    }
}

/// A graph input's or output's declaration: a defined element type, and
/// dims that are non-negative or symbolic (a zero dim is a zero-size
/// tensor, legal ONNX; a negative one is no size).
fn check_declared(what: &str, vi: &pb::ValueInfoProto) -> Result<()> {
    use pb::type_proto::Value;
    let name = vi.name();
    let tensor = match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(Value::TensorType(t)) => t,
        Some(Value::SequenceType(s)) => match s.elem_type.as_ref().and_then(|e| e.value.as_ref()) {
            Some(Value::TensorType(t)) => t,
            _ => return Ok(()),
        },
        _ => return Err(Error::model(format!("{what} '{name}' declares no tensor type (element type and shape)"))),
    };
    if tensor.elem_type() == 0 {
        return Err(Error::Model {
            tensor: Some(name.to_string()),
            node: None,
            detail: format!("{what} '{name}' has an undefined element type (elem_type 0)"),
        });
    }
    for (i, d) in tensor.shape.iter().flat_map(|s| &s.dim).enumerate() {
        if let Some(pb::tensor_shape_proto::dimension::Value::DimValue(v)) = &d.value {
            if *v < 0 {
                return Err(Error::Model {
                    tensor: Some(name.to_string()),
                    node: None,
                    detail: format!(
                        "{what} '{name}' declares dim {i} as {v}; dims must be non-negative or symbolic (dim_param)"
                    ),
                });
            }
        }
    }
    Ok(())
}

fn convert(gp: &pb::GraphProto, opset_import: &[pb::OperatorSetIdProto], dir: &Path) -> Result<Graph> {
    for vi in &gp.input {
        check_declared("graph input", vi)?;
    }
    for vi in &gp.output {
        check_declared("graph output", vi)?;
    }
    let mut g = Graph { name: gp.name().to_string(), ..Graph::default() };
    add_opsets(&mut g, opset_import);
    add_initializers(&mut g, gp, dir)?;
    add_graph_inputs(&mut g, gp)?;

    let declared: HashMap<&str, &pb::ValueInfoProto> =
        gp.value_info.iter().chain(&gp.output).map(|v| (v.name(), v)).collect();
    // Node outputs first, so inputs can refer to values produced later in
    // the file (the schedule, not the file, decides order).
    let mut nodes = Vec::with_capacity(gp.node.len());
    for (order, np) in gp.node.iter().enumerate() {
        nodes.push(convert_node(&mut g, order, np, &declared, dir)?);
    }
    connect_inputs(&g, gp, &mut nodes)?;
    for node in nodes {
        g.dag.add_node(node);
    }
    g.onnx_nodes = gp.node.len();

    add_graph_outputs(&mut g, gp)?;
    g.rebuild_edges();
    Ok(g)
}

/// The opset of each domain (`ai.onnx` is the default domain ""); a domain
/// imported twice takes the higher version.
fn add_opsets(g: &mut Graph, opset_import: &[pb::OperatorSetIdProto]) {
    for o in opset_import {
        let domain = match o.domain() {
            "ai.onnx" => "",
            d => d,
        };
        let v = g.opsets.entry(domain.to_string()).or_insert(o.version());
        *v = (*v).max(o.version());
    }
}

fn add_initializers(g: &mut Graph, gp: &pb::GraphProto, dir: &Path) -> Result<()> {
    for init in &gp.initializer {
        let name = init.name().to_string();
        no_nul("initializer", &name)?;
        let data = tensor::convert(init, dir)?;
        if g.tensors.contains_key(&name) {
            return Err(Error::model(format!("initializer '{name}' is defined twice")));
        }
        let (id, _) = g.tensors.insert_full(
            name.clone(),
            Tensor { name, ty: data.ty(), origin: Origin::Initializer, data: Some(data.into()), sequence: false },
        );
        g.initializers.push(id);
    }
    Ok(())
}

/// Graph inputs; an input that also has an initializer is a constant
/// with an overridable default (IR < 4 style), kept as the initializer.
fn add_graph_inputs(g: &mut Graph, gp: &pb::GraphProto) -> Result<()> {
    let mut listed = HashSet::new();
    for vi in &gp.input {
        let name = vi.name().to_string();
        no_nul("graph input", &name)?;
        if !listed.insert(name.clone()) {
            return Err(Error::Model {
                detail: format!("graph input '{name}' is listed twice (ONNX graphs assign each value once)"),
                tensor: Some(name),
                node: None,
            });
        }
        if g.tensors.contains_key(&name) {
            continue;
        }
        let (ty, sequence) = value_type(vi);
        let (id, _) =
            g.tensors.insert_full(name.clone(), Tensor { name, ty, origin: Origin::Input, data: None, sequence });
        g.inputs.push(id);
    }
    Ok(())
}

/// One node, resolved against the registry, with its outputs added to the
/// tensor table (typed by their declarations where the file has them); its
/// inputs are connected once every node's outputs are known.
fn convert_node(
    g: &mut Graph,
    order: usize,
    np: &pb::NodeProto,
    declared: &HashMap<&str, &pb::ValueInfoProto>,
    dir: &Path,
) -> Result<Node> {
    let name = if np.name().is_empty() { format!("{}_{order}", np.op_type()) } else { np.name().to_string() };
    for t in np.input.iter().chain(&np.output) {
        no_nul(&format!("node '{}': tensor", name.escape_debug()), t)?;
    }
    let op = np.op_type().to_string();
    let domain = np.domain().to_string();
    let Some(op_id) = ops::resolve(&op) else {
        return Err(Error::UnknownOp {
            node: name,
            opset: g.opset_of(&domain),
            domain: if domain.is_empty() { "ai.onnx".into() } else { domain },
            supported: supported_list(&op),
            op,
        });
    };
    let outputs = add_node_outputs(g, np, &name, &op, declared)?;
    let attrs =
        np.attribute.iter().map(|a| Ok((a.name().to_string(), attr(a, dir)?))).collect::<Result<IndexMap<_, _>>>()?;
    Ok(Node { name, op, op_id, domain, inputs: vec![], outputs, attrs, marks: Default::default(), order })
}

/// A node's outputs as new values (`None` for an omitted optional one);
/// a name already assigned is an error.
fn add_node_outputs(
    g: &mut Graph,
    np: &pb::NodeProto,
    name: &str,
    op: &str,
    declared: &HashMap<&str, &pb::ValueInfoProto>,
) -> Result<Vec<Option<TensorId>>> {
    let mut outputs = Vec::with_capacity(np.output.len());
    for out in &np.output {
        if out.is_empty() {
            outputs.push(None);
            continue;
        }
        if let Some(existing) = g.tensors.get(out.as_str()) {
            let what = match existing.origin {
                Origin::Input => "a graph input",
                Origin::Initializer => "an initializer",
                _ => "the output of another node",
            };
            return Err(Error::model(format!(
                "node '{name}' ({op}) writes '{out}', which is already {what} (ONNX graphs assign each value once)"
            )));
        }
        let ty = match declared.get(out.as_str()) {
            Some(vi) => value_type(vi).0,
            None => TensorType::unknown(DType::Other(0)),
        };
        let (id, _) = g.tensors.insert_full(
            out.clone(),
            Tensor { name: out.clone(), ty, origin: Origin::Value, data: None, sequence: false },
        );
        outputs.push(Some(id));
    }
    Ok(outputs)
}

/// Every node input names a value of the graph (`None` for an omitted
/// optional one); a name nothing defines is a dangling input.
fn connect_inputs(g: &Graph, gp: &pb::GraphProto, nodes: &mut [Node]) -> Result<()> {
    for (np, node) in gp.node.iter().zip(nodes.iter_mut()) {
        for inp in &np.input {
            if inp.is_empty() {
                node.inputs.push(None);
                continue;
            }
            match g.tensors.get_index_of(inp.as_str()) {
                Some(id) => node.inputs.push(Some(id)),
                None => {
                    return Err(Error::Dangling { node: node.name.clone(), op: node.op.clone(), tensor: inp.clone() })
                }
            }
        }
    }
    Ok(())
}

fn add_graph_outputs(g: &mut Graph, gp: &pb::GraphProto) -> Result<()> {
    for vi in &gp.output {
        no_nul("graph output", vi.name())?;
        match g.tensors.get_index_of(vi.name()) {
            Some(id) => {
                pass_through_declared(g, id, vi)?;
                g.outputs.push(id)
            }
            None => {
                return Err(Error::model(format!(
                    "graph output '{}' is not produced by any node, input or initializer",
                    vi.name()
                )))
            }
        }
    }
    Ok(())
}

/// A tensor name the generated harness may print (a compared output, an
/// L3 weight it cannot load) must fit in a C string: no NUL.
fn no_nul(what: &str, name: &str) -> Result<()> {
    if !name.contains('\0') {
        return Ok(());
    }
    Err(Error::Model {
        tensor: Some(name.to_string()),
        node: None,
        detail: format!(
            "{what} '{}' contains a NUL byte; the generated harness prints tensor names, and a C string cannot hold one",
            name.escape_debug()
        ),
    })
}

/// A graph output that is a graph input or an initializer passes that
/// value through unchanged: its declaration must be the value's type.
fn pass_through_declared(g: &Graph, id: TensorId, vi: &pb::ValueInfoProto) -> Result<()> {
    let t = &g.tensors[id];
    if !matches!(t.origin, Origin::Input | Origin::Initializer) {
        return Ok(());
    }
    let (declared, _) = value_type(vi);
    let dims_agree = match (&declared.dims, &t.ty.dims) {
        (Some(d), Some(v)) => {
            d.len() == v.len()
                && d.iter().zip(v).all(|(a, b)| !matches!((a, b), (Dim::Fixed(x), Dim::Fixed(y)) if x != y))
        }
        _ => true,
    };
    if declared.dtype == t.ty.dtype && dims_agree {
        return Ok(());
    }
    let what = if t.origin == Origin::Input { "graph input" } else { "initializer" };
    Err(Error::Model {
        tensor: Some(t.name.clone()),
        node: None,
        detail: format!(
            "graph output '{}' is declared as {} but it is the {what} '{}', which is {}",
            t.name, declared, t.name, t.ty
        ),
    })
}

/// Type of a graph input/output/value_info; sequence types report their
/// element type and `true`.
fn value_type(vi: &pb::ValueInfoProto) -> (TensorType, bool) {
    use pb::type_proto::Value;
    let Some(tp) = vi.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
        return (TensorType::unknown(DType::Other(0)), false);
    };
    match tp {
        Value::TensorType(t) => (tensor_type(t), false),
        Value::SequenceType(s) => match s.elem_type.as_ref().and_then(|e| e.value.as_ref()) {
            Some(Value::TensorType(t)) => (tensor_type(t), true),
            _ => (TensorType::unknown(DType::Other(0)), true),
        },
        _ => (TensorType::unknown(DType::Other(0)), false),
    }
}

fn tensor_type(t: &pb::type_proto::Tensor) -> TensorType {
    let dtype = DType::from_onnx(t.elem_type());
    let dims = t.shape.as_ref().map(|s| {
        s.dim
            .iter()
            .map(|d| match &d.value {
                Some(pb::tensor_shape_proto::dimension::Value::DimValue(v)) if *v >= 0 => Dim::Fixed(*v as usize),
                Some(pb::tensor_shape_proto::dimension::Value::DimParam(p)) => Dim::Sym(p.clone()),
                _ => Dim::Sym(String::new()),
            })
            .collect()
    });
    TensorType { dtype, dims }
}

fn attr(a: &pb::AttributeProto, dir: &Path) -> Result<Attr> {
    use pb::attribute_proto::AttributeType as T;
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    // Old files leave `type` UNDEFINED; infer it from the populated field.
    let ty = match T::try_from(a.r#type.unwrap_or(0)).unwrap_or(T::Undefined) {
        T::Undefined => {
            if a.f.is_some() {
                T::Float
            } else if a.i.is_some() {
                T::Int
            } else if a.s.is_some() {
                T::String
            } else if a.t.is_some() {
                T::Tensor
            } else if a.g.is_some() {
                T::Graph
            } else if !a.floats.is_empty() {
                T::Floats
            } else if !a.ints.is_empty() {
                T::Ints
            } else if !a.strings.is_empty() {
                T::Strings
            } else if !a.tensors.is_empty() {
                T::Tensors
            } else {
                T::Undefined
            }
        }
        t => t,
    };
    Ok(match ty {
        T::Float => Attr::Float(a.f()),
        T::Int => Attr::Int(a.i()),
        T::String => Attr::String(s(a.s())),
        T::Tensor => match &a.t {
            Some(t) => Attr::Tensor(tensor::convert(t, dir)?),
            None => return Err(Error::model(format!("attribute '{}' declares a tensor but holds none", a.name()))),
        },
        T::Graph => Attr::Graph {
            name: a.g.as_ref().map(|g| g.name().to_string()).unwrap_or_default(),
            nodes: a.g.as_ref().map_or(0, |g| g.node.len()),
        },
        T::Floats => Attr::Floats(a.floats.clone()),
        T::Ints => Attr::Ints(a.ints.clone()),
        T::Strings => Attr::Strings(a.strings.iter().map(|b| s(b)).collect()),
        T::Tensors => Attr::Tensors(a.tensors.iter().map(|t| tensor::convert(t, dir)).collect::<Result<_>>()?),
        T::Graphs => Attr::Graphs(a.graphs.iter().map(|g| (g.name().to_string(), g.node.len())).collect()),
        T::SparseTensor => Attr::SparseTensor,
        T::SparseTensors => Attr::SparseTensors(a.sparse_tensors.len()),
        T::TypeProto => Attr::TypeProto,
        T::TypeProtos => Attr::TypeProtos(a.type_protos.len()),
        T::Undefined => Attr::Ints(vec![]),
    })
}

/// The supported operators for an unknown-operator message: a near
/// spelling first ("did you mean"), then the names wrapped in lines of
/// under 100 columns rather than one line of a hundred names.
fn supported_list(op: &str) -> String {
    let names = ops::supported();
    let lower = op.to_ascii_lowercase();
    let same: Vec<&str> = names.iter().copied().filter(|n| n.to_ascii_lowercase() == lower).collect();
    let near = if same.is_empty() && lower.len() > 3 {
        names.iter().copied().filter(|n| n.to_ascii_lowercase().starts_with(&lower)).collect()
    } else {
        same
    };
    let mut s = String::new();
    if !near.is_empty() {
        s.push_str(&format!(
            "did you mean {}?\n  ",
            near.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(" or ")
        ));
    }
    s.push_str(&format!("supported operators ({}):", names.len()));
    let mut line = String::new();
    for n in names {
        if line.len() + n.len() + 2 > 92 {
            s.push_str(&format!("\n    {}", line.trim_end()));
            line.clear();
        }
        line.push_str(n);
        line.push_str(", ");
    }
    s.push_str(&format!("\n    {}", line.trim_end_matches([',', ' '])));
    s
}
