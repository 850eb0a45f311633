//! deploygen's integration tests, one crate: each file below is a module
//! (one binary links the library once, where one per file linked it ~45
//! times). Tests that set process-wide environment variables
//! (`DEPLOYGEN_PYTHON`) stay binaries of their own (`tests/derive.rs`,
//! `tests/triage_cmd.rs`, `tests/bisect.rs`), and `tests/zz_skipped.rs`
//! runs last to count the skipped tests.

#[path = "../common/mod.rs"]
mod common;

mod bind;
mod binding_families;
mod build;
mod conventions;
mod e2e;
mod faults;
mod finetune;
mod firmware_doc;
mod fold_resize_props;
mod force;
mod golden;
mod hostile;
mod hostile_gen;
mod hostile_io;
mod hostile_io_props;
mod hostile_props;
mod import;
mod import_props;
mod input_file_props;
mod int_approx;
mod learning_rate;
mod loop_cli;
mod model_api;
mod names;
mod names_props;
mod npz_props;
mod onnx_conformance;
mod onnx_forms;
mod plan;
mod plan_props;
mod plan_tiling;
mod pmsis_sdk;
mod quant;
mod recompute;
mod report;
mod rough_edges;
mod runtime;
mod runtime_cache;
mod rv32;
mod scale;
mod stack_rv32;
mod testdata_l3;
mod third_party;
mod triage;
mod verify;
