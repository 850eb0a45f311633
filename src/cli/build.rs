//! `deploygen build`: the C deployment project of a model for a platform.

use std::path::PathBuf;

use crate::emit::cli::BuildArgs;
use crate::error::Result;

#[derive(clap::Args)]
pub struct Args {
    /// A model folder (network.onnx, inputs.npz, …) or one .onnx file.
    model: PathBuf,
    /// Target platform (GAP9, Siracusa, host).
    #[arg(long)]
    platform: String,
    /// Where graph I/O, weights and buffers live unless a rule moves them.
    #[arg(long, value_name = "LEVEL")]
    default_mem: Option<String>,
    /// L1 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES")]
    l1: Option<u64>,
    /// L2 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES")]
    l2: Option<u64>,
    /// L3 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES")]
    l3: Option<u64>,
    /// Most bytes of weights baked into the L2 image; larger weights are
    /// l3-staged (default: the platform's L2 image limit).
    #[arg(long = "l2-image", value_name = "BYTES")]
    l2_image: Option<u64>,
    /// Absolute comparison tolerance (default: 1e-3).
    #[arg(long, value_name = "T")]
    tolerance: Option<f32>,
    /// Number of per-mini-batch data inputs (only where the data cannot tell).
    #[arg(long, value_name = "N")]
    num_data_inputs: Option<usize>,
    /// Output folder (default: build/<model>-<platform>-<level>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Replace an existing output folder.
    #[arg(long)]
    force: bool,
    /// Generate in memory and diff against this project folder; write nothing.
    #[arg(long, value_name = "DIR")]
    check: Option<PathBuf>,
    /// One hex/<n>.hex per L3 buffer instead of the packed L3 image.
    #[arg(long)]
    hex_files: bool,
}

/// Returns false when `--check` found differences (exit 1).
pub fn run(a: Args) -> Result<bool> {
    let args = BuildArgs {
        model: a.model,
        platform: a.platform,
        default_mem: a.default_mem,
        l1: a.l1,
        l2: a.l2,
        l3: a.l3,
        l2_image: a.l2_image,
        tolerance: a.tolerance,
        num_data_inputs: a.num_data_inputs,
        out: a.out,
        force: a.force,
        check: a.check,
        hex_files: a.hex_files,
    };
    crate::emit::cli::run(&args)
}
