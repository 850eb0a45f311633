//! ONNX files built straight from the protobuf types: the builder every
//! test, benchmark and fuzz target shares (it needs only deploygen and
//! prost).

use std::path::{Path, PathBuf};

use deploygen::import::pb;
use prost::Message;

pub const F32: i32 = 1;
pub const I64: i32 = 7;
pub const I8: i32 = 3;
pub const I32: i32 = 6;
pub const BOOL: i32 = 9;

#[derive(Default)]
pub struct ModelBuilder {
    pub graph: pb::GraphProto,
    pub opsets: Vec<(String, i64)>,
}

pub fn value(name: &str, dtype: i32, shape: &[i64]) -> pb::ValueInfoProto {
    let dims = shape
        .iter()
        .map(|&d| pb::tensor_shape_proto::Dimension {
            value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(d)),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: Some(dtype),
                shape: Some(pb::TensorShapeProto { dim: dims }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn attr_int(name: &str, v: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

pub fn attr_ints(name: &str, v: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::Ints as i32),
        ints: v.to_vec(),
        ..Default::default()
    }
}

pub fn attr_float(name: &str, v: f32) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::Float as i32),
        f: Some(v),
        ..Default::default()
    }
}

pub fn attr_str(name: &str, v: &str) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.into()),
        r#type: Some(pb::attribute_proto::AttributeType::String as i32),
        s: Some(v.as_bytes().to_vec()),
        ..Default::default()
    }
}

impl ModelBuilder {
    pub fn new() -> Self {
        ModelBuilder { opsets: vec![("".into(), 17), ("com.microsoft".into(), 1)], ..Default::default() }
    }

    pub fn input(&mut self, name: &str, dtype: i32, shape: &[i64]) -> &mut Self {
        self.graph.input.push(value(name, dtype, shape));
        self
    }

    pub fn output(&mut self, name: &str, dtype: i32, shape: &[i64]) -> &mut Self {
        self.graph.output.push(value(name, dtype, shape));
        self
    }

    /// An f32 initializer in raw_data.
    pub fn init(&mut self, name: &str, shape: &[i64], values: &[f32]) -> &mut Self {
        self.graph.initializer.push(pb::TensorProto {
            name: Some(name.into()),
            dims: shape.to_vec(),
            data_type: Some(F32),
            raw_data: Some(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
            ..Default::default()
        });
        self
    }

    /// An int8 initializer in raw_data.
    pub fn init_i8(&mut self, name: &str, shape: &[i64], values: &[i8]) -> &mut Self {
        self.graph.initializer.push(pb::TensorProto {
            name: Some(name.into()),
            dims: shape.to_vec(),
            data_type: Some(I8),
            raw_data: Some(values.iter().map(|&v| v as u8).collect()),
            ..Default::default()
        });
        self
    }

    /// An i64 initializer in the typed field.
    pub fn init_i64(&mut self, name: &str, values: &[i64]) -> &mut Self {
        self.graph.initializer.push(pb::TensorProto {
            name: Some(name.into()),
            dims: vec![values.len() as i64],
            data_type: Some(I64),
            int64_data: values.to_vec(),
            ..Default::default()
        });
        self
    }

    pub fn node(&mut self, op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<pb::AttributeProto>) -> &mut Self {
        self.node_in(op, "", inputs, outputs, attrs)
    }

    pub fn node_in(
        &mut self,
        op: &str,
        domain: &str,
        inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<pb::AttributeProto>,
    ) -> &mut Self {
        let i = self.graph.node.len();
        self.graph.node.push(pb::NodeProto {
            name: Some(format!("{op}_{i}")),
            op_type: Some(op.into()),
            domain: Some(domain.into()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            attribute: attrs,
            ..Default::default()
        });
        self
    }

    pub fn bytes(&self) -> Vec<u8> {
        let model = pb::ModelProto {
            ir_version: Some(8),
            opset_import: self
                .opsets
                .iter()
                .map(|(d, v)| pb::OperatorSetIdProto { domain: Some(d.clone()), version: Some(*v) })
                .collect(),
            graph: Some(pb::GraphProto { name: Some("test".into()), ..self.graph.clone() }),
            ..Default::default()
        };
        model.encode_to_vec()
    }

    pub fn write(&self, dir: &Path, file: &str) -> PathBuf {
        let p = dir.join(file);
        std::fs::write(&p, self.bytes()).unwrap();
        p
    }
}
