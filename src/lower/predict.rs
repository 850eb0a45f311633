//! The prediction graph of a training model: what `dg_model_predict`
//! runs. It is the forward part of the training step (`forward`) in eval
//! mode, as PyTorch's `eval()` and onnxruntime's inference session run it:
//!
//! - every node that normalises with batch statistics takes its registry
//!   entry's eval form (`OpDef::eval_form`: a BatchNorm normalises with its
//!   running mean and variance, which the training step updates);
//! - the data inputs take their own batch (`--predict-batch`, 1 by
//!   default): the nodes are the model file's own, shape subgraphs
//!   included, typed and folded again at that batch;
//! - weights, frozen values and running statistics keep their names: the
//!   plan gives them the training step's buffers, so predict always sees
//!   the current weights and costs no second copy of them.
//!
//! A model whose forward part cannot run at the default batch (a shape
//! constant spells out the training batch) predicts at its training batch
//! instead, with a note saying why; at a batch `--predict-batch` asked
//! for, it has no prediction graph, and the reason is kept for
//! `dg_model.h` and `inspect`.

use std::collections::{HashMap, HashSet};

use petgraph::stable_graph::NodeIndex;

use std::sync::Arc;

use super::forward::Forward;
use crate::error::{Error, Result};
use crate::ir::{DType, Dim, Graph, Model, NoPredict, Origin, Role, TensorId, TensorType};
use crate::ops;

/// Build `model.predict` (or `model.no_predict`) from `raw`, the main
/// graph as imported (before typing and folding), and `forward`, the
/// forward part of the main graph. An inference model predicts with its
/// own graph, at its inputs' batch: `--predict-batch` there would do
/// nothing, and is refused.
pub fn attach(model: &mut Model, raw: &Graph, forward: Result<Forward>) -> Result<()> {
    if !model.roles.is_training() {
        if model.predict_batch_given {
            return Err(Error::Usage(format!(
                "--predict-batch {}: an inference model predicts at its inputs' batch, which the model declares; \
                 give a symbolic batch its value with --dim NAME=N",
                model.predict_batch
            )));
        }
        return Ok(());
    }
    // Without a forward part there is no prediction at any batch.
    let f = match forward {
        Ok(f) => f,
        Err(e) => {
            model.no_predict = Some(NoPredict::NoForward(Arc::new(e)));
            return Ok(());
        }
    };
    let why = match build(model, raw, &f, model.predict_batch) {
        Ok(g) => {
            model.predict = Some(g);
            return Ok(());
        }
        Err(why) => why,
    };
    let trained = training_batch(model).filter(|&b| b != model.predict_batch && !model.predict_batch_given);
    if let Some(b) = trained {
        if let Ok(g) = build(model, raw, &f, b) {
            model.predict_note =
                Some(format!("predicts at the training batch {b}, not {}: {why}", model.predict_batch));
            model.predict_batch = b;
            model.predict = Some(g);
            return Ok(());
        }
    }
    model.no_predict = Some(why);
    Ok(())
}

/// Dim 0 of the training step's first data input.
fn training_batch(model: &Model) -> Option<usize> {
    let g = &model.graph;
    let t = g.inputs.iter().find(|&&t| model.roles.role(g.name_of(t)) == Some(Role::Data))?;
    g.tensor(*t).ty.shape()?.first().copied()
}

fn build(model: &Model, raw: &Graph, f: &Forward, batch: usize) -> Result<Graph, NoPredict> {
    let main = &model.graph;
    let mut g = raw.clone();
    let mut producer: HashMap<TensorId, NodeIndex> = HashMap::new();
    for n in g.dag.node_indices() {
        for &t in g.dag[n].outputs.iter().flatten() {
            producer.insert(t, n);
        }
    }
    let mut outputs = vec![];
    for &t in &f.outputs {
        let name = main.name_of(t);
        let Some(rt) = g.id(name).filter(|rt| producer.contains_key(rt)) else {
            return Err(NoPredict::NotInFile(name.to_string()));
        };
        outputs.push(rt);
    }
    // The outputs' ancestors in the file's graph, shape subgraphs included.
    let mut keep: HashSet<NodeIndex> = HashSet::new();
    let mut stack: Vec<NodeIndex> = outputs.iter().map(|t| producer[t]).collect();
    while let Some(n) = stack.pop() {
        if !keep.insert(n) {
            continue;
        }
        stack.extend(g.dag[n].inputs.iter().flatten().filter_map(|t| producer.get(t)));
    }
    let all: Vec<NodeIndex> = g.dag.node_indices().collect();
    for n in all {
        if !keep.contains(&n) {
            g.dag.remove_node(n);
            continue;
        }
        let def = ops::of(&g.dag[n]);
        if def.gradient || def.train != ops::Train::None {
            let node = &g.dag[n];
            return Err(NoPredict::TrainingOp { node: node.name.clone(), op: node.op.clone() });
        }
        if def.batch_stats.is_some_and(|b| b(&g.dag[n])) {
            if let Some(eval) = def.eval_form {
                eval(&mut g.dag[n]);
            }
        }
    }
    g.schedule.retain(|n| keep.contains(n));
    let mut read: HashSet<TensorId> = HashSet::new();
    for n in g.dag.node_indices() {
        read.extend(g.dag[n].inputs.iter().flatten().copied());
    }
    g.inputs.retain(|t| read.contains(t));
    g.initializers.retain(|t| read.contains(t));
    g.outputs = outputs.clone();
    let inputs: HashSet<TensorId> = g.inputs.iter().copied().collect();
    let mut data = 0;
    for t in g.tensors.ids().collect::<Vec<_>>() {
        let tensor = g.tensor_mut(t);
        if inputs.contains(&t) {
            if model.roles.role(&tensor.name) != Some(Role::Data) {
                continue;
            }
            // The data's batch: dim 0.
            match tensor.ty.dims.as_mut().and_then(|d| d.first_mut()) {
                Some(d) => *d = Dim::Fixed(batch),
                None => return Err(NoPredict::NoBatchDim(tensor.name.clone())),
            }
            data += 1;
        } else if tensor.origin == Origin::Value {
            // Typed again at the prediction's batch.
            tensor.ty = TensorType::unknown(DType::Other(0));
        }
    }
    if data == 0 {
        return Err(NoPredict::NoData);
    }
    g.rebuild_edges();
    super::infer(&mut g).map_err(|error| NoPredict::Infer { batch, error: Arc::new(error) })?;
    for &t in &g.outputs {
        match g.tensor(t).ty.shape() {
            None => return Err(NoPredict::NoStaticShape { output: g.name_of(t).to_string(), batch }),
            Some(shape) if shape.first() != Some(&batch) => {
                return Err(NoPredict::NotBatchMajor { output: g.name_of(t).to_string(), shape, batch })
            }
            Some(_) => {}
        }
    }
    g.warnings.clear();
    Ok(g)
}
