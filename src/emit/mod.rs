//! Emission: (graph, binding, plan, target) → a self-contained C project.
//!
//! The emitter makes no decision the plan did not make: levels, offsets,
//! staging and L1 copies, and every weight's supply come from
//! [`plan::Plan`]; what each node calls comes from its kernel binding
//! (the registry entry's `OpDef::kernel`); the values come from the graph
//! and the [`bind::Binding`]. Rust computes the facts, the askama
//! templates in `templates/` hold the C.
//!
//! One module per artefact, each building its own facts:
//! - [`network`] builds `Network.c/.h` (inference) or `TrainingNetwork.c/.h`
//!   and `OptimizerNetwork.c/.h` (training): `InitNetwork` / `RunNetwork`,
//!   one block per node ([`tiled`] for a node's loop over tiles, [`args`]
//!   for its kernel arguments) and the buffer tables;
//! - [`weights`] builds `Weights.c` and `hex/l3.bin` (or `hex/<n>.hex`);
//! - [`harness`] builds `testinputs.h`, `testoutputs.h` and the checks of
//!   the harness `main.c` (with `hex/testdata.bin` when the test data is
//!   in L3);
//! - [`build_files`] builds `Makefile.host` and the SDK build file;
//! - [`manifest`] builds `deploygen.json`;
//! - [`render`] fills the templates and lists the `runtime/` files;
//!   [`project`] writes the result or diffs it against a folder.

mod args;
mod build_files;
mod harness;
pub mod manifest;
mod model_api;
mod network;
mod project;
mod render;
mod tiled;
mod weights;

use std::collections::HashMap;
use std::path::PathBuf;

pub use manifest::Manifest;
pub use project::{unified_diff, Project};
pub use render::{runtime_sources, KERNEL_SYMBOLS};

use crate::bind;
use crate::error::{Error, Result};
use crate::escape::ProjectName;
use crate::ir::{DType, Graph, Model, TensorData};
use crate::plan::{self, BufId, GraphSel, Placement};
use crate::target::{SdkBuild, Stacks};

/// Default absolute tolerance of every comparison (`atol`).
pub const DEFAULT_TOLERANCE: f32 = 5e-4;

/// Default relative tolerance of every comparison (`rtol`): a float value
/// passes when `|computed - ref| <= atol + rtol * |ref|`, numpy's
/// `allclose` (docs/testing.md, "Tolerance").
pub const DEFAULT_RTOL: f32 = 1e-3;

/// Name of the packed L3 image.
pub const L3_IMAGE: &str = "l3.bin";

/// Name of the test data's L3 image, when the plan keeps the test data in L3.
pub const TEST_DATA_IMAGE: &str = "testdata.bin";

#[derive(Clone, Debug, Default)]
pub struct EmitOptions {
    /// Absolute tolerance; `None`: the binding's, else [`DEFAULT_TOLERANCE`].
    pub tolerance: Option<f32>,
    /// Relative tolerance; `None`: the binding's, else [`DEFAULT_RTOL`].
    pub rtol: Option<f32>,
    /// One `hex/<n>.hex` per L3 buffer instead of the packed image.
    pub hex_files: bool,
    /// Model name used in the project (default: the model folder's name).
    pub name: Option<String>,
}

/// A `dg_copy(dst, src, bytes)`.
#[derive(Clone, Debug)]
pub struct Copy {
    pub dst: String,
    pub src: String,
    pub bytes: u64,
    pub what: String,
}

/// What every file says of the project, and the chip facts they share.
#[derive(Clone, Debug)]
pub struct Common {
    /// The sanitised project name: the only model text build files hold.
    pub project: ProjectName,
    /// The model's name as given (for the manifest and messages).
    pub model: String,
    pub platform: String,
    pub platform_define: String,
    pub sdk_build: SdkBuild,
    pub default_mem: String,
    pub training: bool,
    /// `TrainingNetwork` or `Network`.
    pub net: String,
    pub cores: u32,
    /// The cluster stacks the harness asks for (`CC_STACK_SIZE`,
    /// `STACK_SIZE`, `SLAVE_STACK_SIZE`).
    pub stacks: Stacks,
    /// The SDK build defines `DG_XPULP` (the platform's packed dot products).
    pub xpulp: bool,
}

/// The graph, the plan and the buffers by tensor name: what the builders
/// read.
pub(crate) struct Ctx<'a> {
    model: &'a Model,
    plan: &'a plan::Plan,
    main: HashMap<String, BufId>,
    opt: HashMap<String, BufId>,
    pred: HashMap<String, BufId>,
    /// The network's run-time learning rate ([`network::run_time_rate`]).
    rate: Option<crate::ops::kernel::Rate>,
}

impl<'a> Ctx<'a> {
    fn new(model: &'a Model, plan: &'a plan::Plan) -> Ctx<'a> {
        let mut ctx = Ctx { model, plan, main: HashMap::new(), opt: HashMap::new(), pred: HashMap::new(), rate: None };
        for b in plan.buffers.iter().filter(|b| !b.kind.is_per_node() && b.kind != plan::Kind::Static) {
            ctx.map_mut(b.graph).insert(b.name.clone(), b.id);
            for a in &b.aliases {
                ctx.map_mut(a.graph).entry(a.tensor.clone()).or_insert(b.id);
            }
        }
        ctx.rate = network::run_time_rate(&ctx);
        ctx
    }

    fn map_mut(&mut self, sel: GraphSel) -> &mut HashMap<String, BufId> {
        match sel {
            GraphSel::Main => &mut self.main,
            GraphSel::Optimizer => &mut self.opt,
            GraphSel::Predict => &mut self.pred,
        }
    }

    fn graph(&self, sel: GraphSel) -> &Graph {
        match sel {
            GraphSel::Main => &self.model.graph,
            GraphSel::Optimizer => self.model.optimizer.as_ref().expect("optimizer nodes only with an optimizer graph"),
            GraphSel::Predict => self.model.predict.as_ref().expect("predict nodes only with a predict graph"),
        }
    }

    fn buffer_of(&self, sel: GraphSel, name: &str) -> Option<BufId> {
        match sel {
            GraphSel::Main => self.main.get(name).copied(),
            GraphSel::Optimizer => self.opt.get(name).copied(),
            GraphSel::Predict => self.pred.get(name).copied(),
        }
    }

    /// The C expression of a buffer where it lives.
    fn expr(&self, id: BufId) -> String {
        let b = &self.plan.buffers[id];
        match b.placement {
            Placement::Static => format!("(void *){}", weights::baked_name(id)),
            Placement::Arena { offset } => format!("DG_{}({})", b.level, offset),
            Placement::Unplaced => "NULL".into(),
        }
    }
}

/// The model's name (`import::model_name`): its raw bytes, and as text
/// for messages and the manifest.
fn model_name(model: &Model, opts: &EmitOptions) -> (Vec<u8>, String) {
    if let Some(n) = &opts.name {
        return (n.as_bytes().to_vec(), n.clone());
    }
    match crate::import::model_name(&model.path) {
        Some(n) => (n.as_encoded_bytes().to_vec(), n.to_string_lossy().into_owned()),
        None => (b"model".to_vec(), "model".into()),
    }
}

/// Bytes of a tensor's value as stored in a buffer of `dtype` (f64 test
/// data is narrowed to an f32 buffer).
fn value_bytes(data: &TensorData, dtype: DType) -> Vec<u8> {
    if dtype == DType::F32 && data.dtype == DType::F64 {
        data.to_f32().unwrap_or_default().into_iter().flat_map(|v| v.to_le_bytes()).collect()
    } else {
        data.bytes.clone()
    }
}

/// Kernel calls a generated project holds at most. Each is a call with its
/// arguments in C, some hundred bytes of code once compiled: this many is
/// ten times what any target's L2 can hold, and a project is generated in
/// memory (several KB per call).
pub const MAX_NODE_CALLS: usize = 100_000;

fn within_calls(calls: usize) -> Result<()> {
    if calls <= MAX_NODE_CALLS {
        return Ok(());
    }
    Err(Error::model(format!(
        "the project would make {} kernel calls (every graph's schedule), more than the {} deploygen generates: \
         their code could not fit any target's L2; train fewer layers or split the model",
        plan::thousands(calls as u64),
        plan::thousands(MAX_NODE_CALLS as u64)
    )))
}

/// Generate the project in memory.
pub fn generate(
    model: &Model,
    binding: Option<&bind::Binding>,
    plan: &plan::Plan,
    opts: &EmitOptions,
) -> Result<Project> {
    within_calls(plan.nodes.iter().filter(|n| n.exec.is_some()).count())?;
    let ctx = Ctx::new(model, plan);
    let training = model.roles.is_training();
    let (raw_name, name) = model_name(model, opts);
    let p = &plan.platform;
    let common = Common {
        project: ProjectName::new(&raw_name),
        model: name.clone(),
        platform: p.name.clone(),
        platform_define: p.c_define.clone(),
        sdk_build: p.sdk_build,
        default_mem: plan.default_mem.to_string(),
        training,
        net: if training { "TrainingNetwork" } else { "Network" }.to_string(),
        cores: p.cluster_cores,
        stacks: p.stacks(),
        xpulp: p.xpulp,
    };
    let net = network::build(&ctx, binding)?;
    let w = weights::build(&ctx, binding, opts.hex_files)?;
    let h = harness::build(&ctx, binding, &net, &name, opts.tolerance, opts.rtol)?;
    let api = if training {
        model_api::build(&ctx, binding, &net, &h)?
    } else {
        model_api::build_inference(&ctx, binding, &net, &h)?
    };
    let api = Some(api);
    let b = build_files::build(&common, plan, &net, &w, h.test_l3.is_some())?;
    let manifest = manifest::build(&common, plan, &w, &h, api.as_ref());

    let parts = render::Parts { c: &common, net: &net, w: &w, h: &h, b: &b, api: api.as_ref() };
    let mut files = render::render(&parts)?;
    if h.test_l3.is_some() {
        files.push((PathBuf::from(format!("hex/{TEST_DATA_IMAGE}")), h.test_image.clone()));
    }
    if !w.segments.is_empty() {
        if w.hex_files {
            files.extend(w.hex.iter().cloned());
        } else {
            files.push((PathBuf::from(format!("hex/{L3_IMAGE}")), w.image.clone()));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut manifest = manifest;
    manifest.files = files.iter().map(|(p, d)| manifest::WrittenFile::of(p, d)).collect();
    let mut json = serde_json::to_string_pretty(&manifest).map_err(|e| Error::model(e.to_string()))?;
    json.push('\n');
    files.push((PathBuf::from(manifest::FILE), json.into_bytes()));
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Project { files, manifest })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_project_past_the_call_bound_is_refused_naming_both_counts() {
        assert!(super::within_calls(super::MAX_NODE_CALLS).is_ok());
        let e = super::within_calls(270_009).unwrap_err().to_string();
        assert!(e.contains("270,009 kernel calls") && e.contains("100,000"), "{e}");
    }
}
