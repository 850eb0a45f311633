//! deploygen: ONNX models (inference graphs and whole training steps) to
//! self-contained C deployment projects for GAP9 and Siracusa.
//!
//! The pipeline, one module per stage, data flowing one way:
//!
//! ```text
//! import (onnx → ir) → bind (npz → roles, mini-batches) → check
//!   → lower → plan (levels, supply, offsets) → emit (C project) → verify
//! ```
//!
//! `ir` is what the stages share; `ops` holds each operator's facts.

pub mod bind;
pub mod check;
pub mod emit;
pub mod error;
pub mod import;
pub mod inspect;
pub mod ir;
pub mod lower;
pub mod ops;
pub mod plan;
pub mod verify;

pub use error::{Error, Result};
