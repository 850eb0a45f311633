//! deploygen: ONNX models (inference graphs and whole training steps) to
//! self-contained C deployment projects for GAP9 and Siracusa.
//!
//! The pipeline, one module per stage, data flowing one way; no module
//! imports a later stage:
//!
//! ```text
//! import (onnx → ir) → lower (typing, folding, roles, aliasing)
//!   → bind (npz → slots, mini-batches) → check (can training run?)
//!   → plan (levels, supply, offsets) → emit (C project) → verify
//! ```
//!
//! Shared by all: `ir` (plain data), `ops` (the operator registry: every
//! fact about every operator), `target` (chip descriptors), `diag` and
//! `error`. `cli` is the command line, one file per command.

pub mod bind;
pub mod c;
pub mod check;
pub mod cli;
pub mod diag;
pub mod emit;
pub mod error;
pub mod escape;
pub mod files;
pub mod import;
pub mod inspect;
pub mod ir;
pub mod limits;
pub mod lower;
pub mod ops;
pub mod pipeline;
pub mod plan;
pub mod target;
pub mod text;
pub mod triage;
pub mod verify;

pub use error::{Error, Result};

/// Import a model (a folder or one `.onnx` file) and lower it: the typed
/// graphs with their training roles, ready for binding and planning.
pub fn load(path: &std::path::Path) -> Result<ir::Model> {
    load_with(path, import::UnknownAttrs::Refuse)
}

/// [`load`], with a policy for attributes the operator's schema does not
/// define.
pub fn load_with(path: &std::path::Path, attrs: import::UnknownAttrs) -> Result<ir::Model> {
    pipeline::lowered(path, &import::TrainRequest::default(), attrs)
}
