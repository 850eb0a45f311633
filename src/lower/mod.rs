//! Lowering: the graph-only passes between import and binding.
//!
//! ```text
//! infer    typing and constant folding of static shape subgraphs
//! roles    training roles (data, labels, params, buffers, loss, updates)
//! alias    in-place updates and their hazards, from the schedule
//! training structure of a training step: accumulators, optimizer updates
//! derive   the training step of an inference model with a training spec
//! qdq      DequantizeLinear -> op -> QuantizeLinear as the integer
//!          operator (inference): 8-bit weights and activations
//! fuse     a BatchNorm into the Conv weights before it, an activation
//!          into the Conv / Gemm before it (inference)
//! forward  the forward part of a training graph (what an inference
//!          variant keeps); on request, not part of `lower`
//! predict  the prediction graph of a training model: the forward part
//!          in eval mode at its own batch (`dg_model_predict`)
//! ```
//!
//! Every pass asks the operator registry (`ops`) for the facts it needs.

pub mod alias;
pub mod derive;
pub mod forward;
pub mod fuse;
mod infer;
pub mod predict;
pub mod qdq;
pub mod roles;
pub mod training;

pub use infer::{infer, infer_within, FoldLimit, Folding};

use crate::error::{Error, Result};
use crate::ir::Model;

/// Lower an imported model: type and fold both graphs, then find the
/// training roles. Folding makes at most [`FoldLimit::default`] bytes.
pub fn lower(model: Model) -> Result<Model> {
    lower_within(model, FoldLimit::default())
}

/// [`lower`], folding at most `limit` bytes over both graphs.
pub fn lower_within(mut model: Model, limit: FoldLimit) -> Result<Model> {
    let raw = model.graph.clone();
    let folding = &mut Folding::new(limit);
    infer_within(&mut model.graph, folding)?;
    if let Some(spec) = model.train.clone() {
        derive_step(&mut model, &spec, folding)?;
    }
    if let Some(og) = model.optimizer.as_mut() {
        infer_within(og, folding)?;
    }
    model.roles = roles::detect(&model);
    if !model.roles.is_training() {
        qdq::fuse_qdq(&mut model.graph);
        fuse::fold_channel_affines(&mut model.graph);
        fuse::fuse_activations(&mut model.graph);
    }
    training::check_pairing(&model)?;
    check_training_inputs(&model)?;
    // The forward part, found once: the prediction graph is built from it,
    // and the checkpoint's layout hash names its nodes.
    let forward = forward::forward(&model);
    model.forward_nodes = forward.as_ref().ok().map(|f| f.nodes.clone());
    predict::attach(&mut model, &raw, forward)?;
    Ok(model)
}

/// An inference model with a training spec becomes its training step.
fn derive_step(model: &mut Model, spec: &crate::ir::TrainSpec, folding: &mut Folding) -> Result<()> {
    if roles::detect(model).is_training() {
        return Err(Error::model(format!(
            "{}: a training spec applies to inference graphs, but {} is a training graph already",
            spec.source,
            model.path.display()
        )));
    }
    model.derived = Some(derive::derive(model, spec)?);
    infer_within(&mut model.graph, folding)?;
    if let Some(og) = model.optimizer.as_mut() {
        infer_within(og, folding)?;
    }
    Ok(())
}

/// Declared types of the training inputs: a gradient-accumulation buffer
/// has its weight's dtype and shape; the optimizer's learning rate is one
/// f32, its step counter one i64.
fn check_training_inputs(model: &Model) -> Result<()> {
    use crate::ir::{DType, Role};
    let g = &model.graph;
    for p in &model.roles.params {
        let Some(buf) = p.grad_buffer.as_deref().and_then(|b| g.id(b)).map(|b| g.tensor(b)) else { continue };
        let weight = &p.name;
        let Some(w) = g.id(weight).map(|w| g.tensor(w)) else { continue };
        let same_shape = match (buf.ty.shape(), w.ty.shape()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        if buf.ty.dtype != w.ty.dtype || !same_shape {
            return Err(Error::binding(format!(
                "gradient buffer '{}' is declared {} but its weight '{weight}' is {}: the buffer accumulates that \
                 weight's gradient, so it needs the same type",
                buf.name, buf.ty, w.ty
            ))
            .at_input(&buf.name));
        }
    }
    if let Some(og) = &model.optimizer {
        for &t in &og.inputs {
            let x = og.tensor(t);
            let want = match model.roles.optimizer.get(&x.name) {
                Some(Role::LearningRate) => DType::F32,
                Some(Role::Step) => DType::I64,
                _ => continue,
            };
            let one = x.ty.shape().is_none_or(|s| s.iter().product::<usize>() == 1);
            if x.ty.dtype != want || !one {
                return Err(Error::binding(format!(
                    "optimizer input '{}' is declared {} but must be one {want} value ([1] or [])",
                    x.name, x.ty
                ))
                .at_input(&x.name));
            }
        }
    }
    Ok(())
}
