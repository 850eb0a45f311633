//! One-node graphs for the shape-rule unit tests.

use crate::error::Result;
use crate::ir::{Attr, DType, Graph, Node, OpId, Origin, Tensor, TensorData, TensorType};

pub struct Fixture {
    pub graph: Graph,
    pub node: Node,
}

impl Fixture {
    /// A node `n` of operator `op`, no inputs yet, `outputs` outputs.
    pub fn with_outputs(op: &str, outputs: usize) -> Fixture {
        let op_id = super::resolve(op).unwrap_or(OpId { family: 0, index: 0 });
        let mut graph = Graph::default();
        let mut outs = Vec::new();
        for i in 0..outputs {
            let name = format!("y{i}");
            let (id, _) = graph.tensors.insert_full(
                name.clone(),
                Tensor {
                    name,
                    ty: TensorType::unknown(DType::Other(0)),
                    origin: Origin::Value,
                    data: None,
                    sequence: false,
                },
            );
            outs.push(Some(id));
        }
        let node = Node {
            name: "n".into(),
            op: op.into(),
            op_id,
            domain: String::new(),
            inputs: vec![],
            outputs: outs,
            attrs: Default::default(),
            marks: Default::default(),
            order: 0,
        };
        Fixture { graph, node }
    }

    pub fn new(op: &str) -> Fixture {
        Fixture::with_outputs(op, 1)
    }

    fn add(&mut self, name: &str, ty: TensorType, origin: Origin, data: Option<TensorData>) {
        let (id, _) = self.graph.tensors.insert_full(
            name.to_string(),
            Tensor { name: name.into(), ty, origin, data: data.map(std::sync::Arc::new), sequence: false },
        );
        self.node.inputs.push(Some(id));
    }

    /// A run-time input.
    pub fn input(&mut self, name: &str, dtype: DType, shape: &[usize]) {
        self.add(name, TensorType::new(dtype, shape), Origin::Input, None);
    }

    /// An omitted optional input.
    pub fn skip(&mut self) {
        self.node.inputs.push(None);
    }

    pub fn konst_i64(&mut self, name: &str, shape: &[usize], v: &[i64]) {
        let d = TensorData::from_i64(shape.to_vec(), v);
        self.add(name, d.ty(), Origin::Initializer, Some(d));
    }

    pub fn konst_f32(&mut self, name: &str, shape: &[usize], v: &[f32]) {
        let d = TensorData::from_f32(shape.to_vec(), v);
        self.add(name, d.ty(), Origin::Initializer, Some(d));
    }
}

pub fn attr_ints(f: &mut Fixture, name: &str, v: &[i64]) {
    f.node.attrs.insert(name.into(), Attr::Ints(v.to_vec()));
}

pub fn attr_int(f: &mut Fixture, name: &str, v: i64) {
    f.node.attrs.insert(name.into(), Attr::Int(v));
}

pub fn attr_str(f: &mut Fixture, name: &str, v: &str) {
    f.node.attrs.insert(name.into(), Attr::String(v.into()));
}

/// Every output type the rule computes.
pub fn infer(f: &Fixture) -> Result<Vec<TensorType>> {
    let ctx = super::Ctx { graph: &f.graph, node: &f.node };
    (super::of(&f.node).infer)(&ctx)
}

/// The static shape of output 0.
pub fn infer_one(f: &Fixture) -> Result<Vec<usize>> {
    Ok(infer(f)?.remove(0).shape().expect("a static shape"))
}
