//! Property: structured mutations of zoo models — an attribute's type,
//! a declared dim or dtype, a required input left empty, an external-data
//! path outside the folder — are each refused with an error (exit code 2),
//! never accepted and never a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use crate::common::*;
use deploygen::import::pb;
use proptest::prelude::*;
use prost::Message;

const MODELS: &[&str] = &["cnn_inline_sgd", "simple_mlp", "tiny_transformer", "kws_cnn"];

#[derive(Clone, Debug)]
enum Mutation {
    /// Attribute `a` of node `n` retyped to the "other" kind.
    AttrType { n: usize, a: usize },
    /// Dim `d` of graph input `i` set to a negative or zero value.
    Dim { i: usize, d: usize, v: i64 },
    /// Element type of graph output `o` set to UNDEFINED.
    OutputDtype { o: usize },
    /// Input 0 of node `n` left empty.
    MissingInput { n: usize },
    /// The first initializer moved to external data at a hostile path.
    External { which: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(n, a)| Mutation::AttrType { n, a }),
        (any::<usize>(), any::<usize>(), -5i64..=0).prop_map(|(i, d, v)| Mutation::Dim { i, d, v }),
        any::<usize>().prop_map(|o| Mutation::OutputDtype { o }),
        any::<usize>().prop_map(|n| Mutation::MissingInput { n }),
        (0usize..3).prop_map(|which| Mutation::External { which }),
    ]
}

/// Apply `m`; `false` when it does not apply to this model (nothing to mutate).
fn apply(g: &mut pb::GraphProto, m: &Mutation) -> bool {
    use pb::attribute_proto::AttributeType as T;
    match *m {
        Mutation::AttrType { n, a } => {
            let with: Vec<usize> = (0..g.node.len()).filter(|&i| !g.node[i].attribute.is_empty()).collect();
            if with.is_empty() {
                return false;
            }
            let node = &mut g.node[with[n % with.len()]];
            let k = a % node.attribute.len();
            let at = &mut node.attribute[k];
            // An INT/INTS/FLOAT becomes a STRING; a STRING becomes FLOATS.
            let name = at.name().to_string();
            *at = match T::try_from(at.r#type.unwrap_or(0)).unwrap_or(T::Undefined) {
                T::String => pb::AttributeProto {
                    name: Some(name),
                    r#type: Some(T::Floats as i32),
                    floats: vec![1.5],
                    ..Default::default()
                },
                _ => pb::AttributeProto {
                    name: Some(name),
                    r#type: Some(T::String as i32),
                    s: Some(b"x".to_vec()),
                    ..Default::default()
                },
            };
            true
        }
        Mutation::Dim { i, d, v } => {
            let ins: Vec<usize> = (0..g.input.len())
                .filter(|&k| {
                    matches!(g.input[k].r#type.as_ref().and_then(|t| t.value.as_ref()),
                        Some(pb::type_proto::Value::TensorType(t)) if t.shape.as_ref().is_some_and(|s| !s.dim.is_empty()))
                })
                .collect();
            if ins.is_empty() {
                return false;
            }
            let vi = &mut g.input[ins[i % ins.len()]];
            if let Some(pb::type_proto::Value::TensorType(t)) = vi.r#type.as_mut().and_then(|t| t.value.as_mut()) {
                let dims = &mut t.shape.as_mut().unwrap().dim;
                let k = d % dims.len();
                dims[k].value = Some(pb::tensor_shape_proto::dimension::Value::DimValue(v));
            }
            true
        }
        Mutation::OutputDtype { o } => {
            let k = o % g.output.len();
            if let Some(pb::type_proto::Value::TensorType(t)) =
                g.output[k].r#type.as_mut().and_then(|t| t.value.as_mut())
            {
                t.elem_type = Some(0);
                return true;
            }
            false
        }
        Mutation::MissingInput { n } => {
            let with: Vec<usize> = (0..g.node.len())
                .filter(|&i| !g.node[i].input.is_empty() && g.node[i].op_type() != "Constant")
                .collect();
            if with.is_empty() {
                return false;
            }
            g.node[with[n % with.len()]].input[0] = String::new();
            true
        }
        Mutation::External { which } => {
            let Some(t) = g.initializer.iter_mut().find(|t| t.raw_data.is_some()) else { return false };
            t.raw_data = None;
            t.data_location = Some(pb::tensor_proto::DataLocation::External as i32);
            let loc = ["/etc/passwd", "../../../etc/passwd", "sub/../../outside.bin"][which];
            t.external_data =
                vec![pb::StringStringEntryProto { key: Some("location".into()), value: Some(loc.into()) }];
            true
        }
    }
}

/// The library pipeline `deploygen inspect` runs: import, lower, bind, check.
fn run(dir: &Path) -> deploygen::Result<()> {
    let model = deploygen::load(dir)?;
    let (_, problem) = deploygen::cli::inspect::bind_and_check(&model, None);
    problem.map_or(Ok(()), Err)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn every_mutation_class_is_refused(model in 0..MODELS.len(), m in mutation()) {
        let dir = copy_model(&zoo(MODELS[model]));
        let path = dir.path().join("network.onnx");
        let mut mp = pb::ModelProto::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
        if !apply(mp.graph.as_mut().unwrap(), &m) {
            return Ok(());
        }
        std::fs::write(&path, mp.encode_to_vec()).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| run(dir.path())));
        let r = r.unwrap_or_else(|_| panic!("{}: {m:?} panicked", MODELS[model]));
        match r {
            Ok(()) => prop_assert!(false, "{}: {m:?} was accepted", MODELS[model]),
            // Every Error leaves the command line with exit code 2.
            Err(e) => prop_assert!(!e.to_string().is_empty(), "{}: {m:?} gave an empty message", MODELS[model]),
        }
    }
}
