//! Lowering: the graph-only passes between import and binding.
//!
//! ```text
//! infer    typing and constant folding of static shape subgraphs
//! roles    training roles (data, labels, params, buffers, loss, updates)
//! alias    in-place updates and their hazards, from the schedule
//! training structure of a training step: accumulators, optimizer updates
//! ```
//!
//! Every pass asks the operator registry (`ops`) for the facts it needs.

pub mod alias;
mod infer;
pub mod roles;
pub mod training;

pub use infer::infer;

use crate::error::Result;
use crate::ir::Model;

/// Lower an imported model: type and fold both graphs, then find the
/// training roles.
pub fn lower(mut model: Model) -> Result<Model> {
    infer(&mut model.graph)?;
    if let Some(og) = model.optimizer.as_mut() {
        infer(og)?;
    }
    model.roles = roles::detect(&model);
    Ok(model)
}
