//! A small inference model whose every name is chosen by the test: a chain
//! `x → Add(·, w0) → t0 → Add(·, w1) → t1 → …`, every `t_i` a graph output
//! with a reference in `outputs.npz`. Tests build it once with plain names
//! and once with hostile ones and compare the two projects.

use std::path::Path;

use deploygen::bind::npz;
use deploygen::ir::TensorData;

use super::{ModelBuilder, F32};

/// Every name of one chain of `weights.len()` links.
#[derive(Clone, Debug)]
pub struct Names {
    pub input: String,
    pub weights: Vec<String>,
    pub nodes: Vec<String>,
    pub outputs: Vec<String>,
}

impl Names {
    /// Plain names of a chain of `links`: all the same length, none a
    /// substring of another or of generated text (`QZ00wZQ`, …).
    pub fn plain(links: usize) -> Names {
        let n = |i: usize, k: char| format!("QZ{i:02}{k}ZQ");
        Names {
            input: n(0, 'x'),
            weights: (0..links).map(|i| n(i, 'w')).collect(),
            nodes: (0..links).map(|i| n(i, 'n')).collect(),
            outputs: (0..links).map(|i| n(i, 't')).collect(),
        }
    }

    pub fn all(&self) -> Vec<&String> {
        let mut v = vec![&self.input];
        v.extend(&self.weights);
        v.extend(&self.nodes);
        v.extend(&self.outputs);
        v
    }

    /// Each plain name with the hostile name in its place.
    pub fn pairs(plain: &Names, hostile: &Names) -> Vec<(String, Vec<u8>)> {
        plain.all().into_iter().zip(hostile.all()).map(|(p, h)| (p.clone(), h.as_bytes().to_vec())).collect()
    }
}

const SHAPE: [usize; 2] = [2, 4];

fn weight(i: usize) -> Vec<f32> {
    (0..8).map(|k| (i * 8 + k) as f32 * 0.25 - 1.0).collect()
}

/// Write `network.onnx`, `inputs.npz` and `outputs.npz` of the chain into `dir`.
pub fn write(dir: &Path, names: &Names) {
    let mut b = ModelBuilder::new();
    let dims = [2i64, 4];
    b.input(&names.input, F32, &dims);
    let x: Vec<f32> = (0..8).map(|k| k as f32 * 0.5).collect();
    let mut acc = x.clone();
    let mut refs = vec![];
    let mut prev = names.input.clone();
    for i in 0..names.weights.len() {
        let w = weight(i);
        b.init(&names.weights[i], &dims, &w);
        b.node("Add", &[&prev, &names.weights[i]], &[&names.outputs[i]], vec![]);
        b.graph.node.last_mut().unwrap().name = Some(names.nodes[i].clone());
        b.output(&names.outputs[i], F32, &dims);
        acc = acc.iter().zip(&w).map(|(a, b)| a + b).collect();
        refs.push((names.outputs[i].clone(), acc.clone()));
        prev = names.outputs[i].clone();
    }
    b.write(dir, "network.onnx");
    let input = TensorData::from_f32(SHAPE.to_vec(), &x);
    std::fs::write(dir.join("inputs.npz"), npz::write_npz(&[(&names.input, &input)]).unwrap()).unwrap();
    let outs: Vec<(String, TensorData)> =
        refs.iter().map(|(k, v)| (k.clone(), TensorData::from_f32(SHAPE.to_vec(), v))).collect();
    let outs: Vec<(&str, &TensorData)> = outs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(dir.join("outputs.npz"), npz::write_npz(&outs).unwrap()).unwrap();
}
