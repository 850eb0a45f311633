//! Generation-time folding on chains of folding operators read from the
//! input: `ConstantOfShape([n])` then Concat (of k copies), Add, Mul,
//! Identity, Reshape, Slice, Gather and Cast steps. Loading never panics;
//! what it holds in folded values stays within the fold limit (values are
//! shared, not copied); a refusal names a node.
#![no_main]

use std::collections::HashSet;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/builder.rs"]
#[allow(dead_code)]
mod builder;

use builder::{attr_int, ModelBuilder, I64};
use deploygen::import::pb;

fn value_i64(v: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some("value".into()),
        r#type: Some(pb::attribute_proto::AttributeType::Tensor as i32),
        t: Some(pb::TensorProto { dims: vec![1], data_type: Some(I64), int64_data: vec![v], ..Default::default() }),
        ..Default::default()
    }
}

/// Little-endian u16 at `i` (0 past the end).
fn u16_at(d: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([d.get(i).copied().unwrap_or(0), d.get(i + 1).copied().unwrap_or(0)])
}

fn model(data: &[u8]) -> ModelBuilder {
    let n = 1 + i64::from(u16_at(data, 0)) * 4;
    let mut b = ModelBuilder::new();
    b.init_i64("shape", &[n]).init_i64("flat", &[-1]).node("ConstantOfShape", &["shape"], &["v0"], vec![value_i64(3)]);
    let mut cast = false;
    let steps = data.get(2..).unwrap_or_default().chunks(3).take(12);
    let mut last = 0;
    for (i, c) in steps.enumerate() {
        let (x, y) = (format!("v{i}"), format!("v{}", i + 1));
        let p = i64::from(u16_at(c, 1));
        match c[0] % 8 {
            0 => {
                let ins = vec![x.as_str(); 1 + (p as usize % 2000)];
                b.node("Concat", &ins, &[&y], vec![attr_int("axis", 0)]);
            }
            1 => {
                b.node("Add", &[&x, &x], &[&y], vec![]);
            }
            2 => {
                b.node("Mul", &[&x, &x], &[&y], vec![]);
            }
            3 => {
                b.node("Identity", &[&x], &[&y], vec![]);
            }
            4 => {
                b.node("Reshape", &[&x, "flat"], &[&y], vec![]);
            }
            5 => {
                let (st, en) = (format!("st{i}"), format!("en{i}"));
                b.init_i64(&st, &[0]).init_i64(&en, &[p - 3]);
                b.node("Slice", &[&x, &st, &en], &[&y], vec![]);
            }
            6 => {
                let idx = format!("idx{i}");
                b.init_i64(&idx, &[p - 32768, 0, (p - 32768) / 2]);
                b.node("Gather", &[&x, &idx], &[&y], vec![attr_int("axis", 0)]);
            }
            _ => {
                b.node("Cast", &[&x], &[&y], vec![attr_int("to", 6)]);
                cast = true;
            }
        }
        last = i + 1;
    }
    let ty = pb::type_proto::Tensor { elem_type: Some(if cast { 6 } else { I64 }), shape: None };
    b.graph.output.push(pb::ValueInfoProto {
        name: Some(format!("v{last}")),
        r#type: Some(pb::TypeProto { value: Some(pb::type_proto::Value::TensorType(ty)), ..Default::default() }),
        ..Default::default()
    });
    b
}

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    model(data).write(dir.path(), "network.onnx");
    match deploygen::load(dir.path()) {
        Ok(m) => {
            let mut seen = HashSet::new();
            let held: u64 = m
                .graph
                .tensors
                .ids()
                .filter_map(|t| m.graph.tensor(t).data.as_ref())
                .filter(|d| seen.insert(Arc::as_ptr(d)))
                .map(|d| d.bytes.len() as u64)
                .sum();
            let limit = deploygen::lower::FoldLimit::default().bytes;
            assert!(held <= limit + 4096, "{held} B held");
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("node '"), "{msg}");
        }
    }
});
