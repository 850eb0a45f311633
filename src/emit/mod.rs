//! Emission: (graph, binding, plan, target) → a self-contained C project.
//!
//! The emitter makes no decision the plan did not make: levels, offsets,
//! staging and L1 copies, and every weight's supply come from
//! [`plan::Plan`]; what each node calls comes from its kernel binding
//! (the registry entry's `OpDef::kernel`); the values come from the graph and the
//! [`bind::Binding`]. Rust computes the facts, the askama templates in
//! `templates/` hold the C.
//!
//! Generated files:
//! - `Network.c/.h` (inference) or `TrainingNetwork.c/.h` +
//!   `OptimizerNetwork.c/.h` (training): `InitNetwork` / `RunNetwork` and
//!   the buffer tables. The optimizer's buffers are the training network's,
//!   named by the same arena expressions (aliasing is the plan's, by name).
//! - `testinputs.h`, `testoutputs.h`: test data and references.
//! - `hex/l3.bin`: every L3 initial value, raw little-endian, word-padded,
//!   in one packed image with an offset table in the network source (or one
//!   `hex/<n>.hex` per buffer with [`EmitOptions::hex_files`]).
//! - `main.c`: the harness; `Makefile.host`, and per chip the SDK build
//!   file; `runtime/` (kernels, memory layer, harness helpers, host
//!   emulation); `deploygen.json`, the [`Manifest`].

mod args;
mod project;
mod render;
mod tiled;
pub use project::{unified_diff, Project};
pub use render::{runtime_sources, KERNEL_SYMBOLS};

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Serialize;

use crate::bind::{self, RefKind};
use crate::c;
use crate::error::{Error, Result};
use crate::escape::{self, c_comment, c_ident, c_string, ProjectName};
use crate::ir::{self, DType, Graph, Model, Role, TensorData};
use crate::ops;
use crate::ops::kernel::{self, Arg};
use crate::plan::{self, Access, BufId, GraphSel, Level, Placement, Supply};

/// Default absolute tolerance of every comparison (SPEC §5 rule 4).
pub const DEFAULT_TOLERANCE: f32 = 1e-3;

/// Name of the packed L3 image.
pub const L3_IMAGE: &str = "l3.bin";

/// Name of the test data's L3 image, when the plan keeps the test data in L3.
pub const TEST_DATA_IMAGE: &str = "testdata.bin";

#[derive(Clone, Debug, Default)]
pub struct EmitOptions {
    /// Absolute tolerance; `None`: the binding's, else 1e-3.
    pub tolerance: Option<f32>,
    /// One `hex/<n>.hex` per L3 buffer instead of the packed image.
    pub hex_files: bool,
    /// Model name used in the project (default: the model folder's name).
    pub name: Option<String>,
}

/// What a generated project promises its test runner (`deploygen.json`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Manifest {
    pub model: String,
    pub platform: String,
    pub default_mem: String,
    /// "training" | "inference".
    pub kind: String,
    /// Values the harness must compare: loss references plus the elements
    /// of every compared tensor reference.
    pub expected_compared: u64,
    pub loss_refs: u64,
    pub tolerance: f32,
    /// Compared tensors: name and element count.
    pub compared: Vec<Compared>,
    /// References or outputs not compared, with why.
    pub not_compared: Vec<NotCompared>,
    pub steps: u64,
    pub accum: u64,
    /// Bytes per level: arena, and static data outside it.
    pub memory: BTreeMap<String, LevelBytes>,
    /// Where each weight went.
    pub weights: Vec<WeightSupply>,
    pub l3_image: Option<String>,
    pub l3_image_bytes: u64,
    /// Where the harness keeps its test data and references.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_data: Option<TestDataPlace>,
}

/// The harness's test data and references: bytes, level, and the image
/// file it is loaded from when in L3.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TestDataPlace {
    pub bytes: u64,
    pub level: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Compared {
    pub name: String,
    pub values: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct NotCompared {
    pub name: String,
    pub why: String,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LevelBytes {
    pub arena: u64,
    pub static_bytes: u64,
    pub capacity: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WeightSupply {
    pub name: String,
    pub bytes: u64,
    pub level: String,
    pub supply: String,
}

// ---------------------------------------------------------------------------
// The facts the templates render
// ---------------------------------------------------------------------------

/// A `dg_copy(dst, src, bytes)`.
#[derive(Clone, Debug)]
pub struct Copy {
    pub dst: String,
    pub src: String,
    pub bytes: u64,
    pub what: String,
}

#[derive(Clone, Debug)]
pub struct CallCode {
    pub comment: String,
    pub func: String,
    pub args_type: String,
    pub fields: Vec<(String, String)>,
    pub forked: bool,
    pub locals: Vec<(String, String, String)>,
    pub pre: Vec<Copy>,
    pub post: Vec<Copy>,
}

#[derive(Clone, Debug)]
pub struct NodeCode {
    pub comment: String,
    pub pre: Vec<Copy>,
    pub calls: Vec<CallCode>,
    pub post: Vec<Copy>,
    /// The loop over tiles of a tiled node (then `pre`, `calls`, `post`
    /// are empty).
    pub tiled: Option<tiled::TiledCode>,
    /// The node's f32 outputs, for `DG_DUMP` (`deploygen test --bisect`).
    pub dumps: Vec<Dump>,
    /// `DG_PROFILE_END`'s arguments: step, op and name as C literals.
    pub profile: String,
}

/// `DG_DUMP("tensor", home pointer, elements)` after a node.
#[derive(Clone, Debug)]
pub struct Dump {
    /// The tensor's name as C string content (escaped).
    pub name: String,
    pub ptr: String,
    pub numel: u64,
}

#[derive(Clone, Debug)]
pub struct Baked {
    pub ctype: String,
    pub name: String,
    pub comment: String,
    pub lines: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct TableEntry {
    pub expr: String,
    pub bytes: u64,
    pub name: String,
}

#[derive(Clone, Debug)]
pub struct Segment {
    pub dst: String,
    pub offset: u64,
    pub bytes: u64,
    /// The weight's name in a comment, and as a string literal body.
    pub name: String,
    pub name_lit: String,
    /// `hex/<n>.hex` name when loading per file.
    pub file: String,
}

#[derive(Clone, Debug)]
pub struct Arena {
    pub level: String,
    pub bytes: u64,
}

#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub expr: String,
    pub ref_name: String,
    pub values: u64,
}

#[derive(Clone, Debug)]
pub struct DataArray {
    pub ctype: String,
    pub name: String,
    pub lines: Vec<String>,
}

/// The harness's test data and references in L3: where the harness loads
/// `hex/testdata.bin`, and its size.
#[derive(Clone, Debug)]
pub struct TestDataL3 {
    /// Offset of the block in the L3 arena.
    pub base: u64,
    pub bytes: u64,
    pub file: String,
}

/// The test data's L3 image while it is laid out: items packed back to
/// back (L3 is read through copies, never dereferenced, so nothing needs
/// aligning), each addressed by its offset in the L3 arena.
struct L3Data {
    base: u64,
    planned: u64,
    image: Vec<u8>,
}

impl L3Data {
    /// Appends `raw`; its offset in the L3 arena.
    fn push(&mut self, raw: &[u8]) -> u64 {
        let at = self.base + self.image.len() as u64;
        self.image.extend_from_slice(raw);
        at
    }

    fn push_f32(&mut self, v: &[f32]) -> u64 {
        let raw: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.push(&raw)
    }

    /// The facts and the image; an error when it outgrew the plan's block.
    fn finish(self) -> Result<(TestDataL3, Vec<u8>)> {
        let bytes = self.image.len() as u64;
        if bytes > self.planned {
            return Err(Error::plan(format!(
                "the test data takes {bytes} B in L3, more than the {} B the memory plan reserved for it",
                self.planned
            )));
        }
        let t = TestDataL3 { base: self.base, bytes, file: TEST_DATA_IMAGE.into() };
        Ok((t, self.image))
    }
}

/// Everything known about the project, for the templates.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The sanitised project name: the only model text build files hold.
    pub project: ProjectName,
    pub platform: String,
    pub platform_define: String,
    pub sdk_build: crate::target::SdkBuild,
    pub default_mem: String,
    pub training: bool,
    /// `TrainingNetwork` or `Network`.
    pub net: String,
    pub has_optimizer: bool,
    pub cores: u32,
    /// The cluster stacks the harness asks for (`CC_STACK_SIZE`, `STACK_SIZE`, `SLAVE_STACK_SIZE`).
    pub stacks: crate::target::Stacks,
    pub arenas: Vec<Arena>,
    pub l1_arena_bytes: u64,
    pub l2_arena_bytes: u64,
    pub l3_arena_bytes: u64,
    pub staged_bytes: u64,
    pub baked: Vec<Baked>,
    pub inputs: Vec<TableEntry>,
    pub outputs: Vec<TableEntry>,
    pub opt_inputs: Vec<TableEntry>,
    pub opt_outputs: Vec<TableEntry>,
    pub lr_expr: Option<String>,
    /// Optimizer state (momentum, AdamW's moments and step count), zeroed
    /// at Init: the first step starts from zero.
    pub opt_state: Vec<TableEntry>,
    pub main_nodes: Vec<NodeCode>,
    pub opt_nodes: Vec<NodeCode>,
    /// DMA queues of each file's static pool: the most any tiled node uses.
    pub main_queues: usize,
    pub opt_queues: usize,
    /// Copies that carry a run's updates into the buffers the next run
    /// reads (an SGD that could not update in place).
    pub commits: Vec<Copy>,
    pub segments: Vec<Segment>,
    pub hex_files: bool,
    pub staged: Vec<Copy>,
    pub skip_copy: bool,
    pub skip_reason: String,
    // test data
    pub num_data: usize,
    pub data_size: usize,
    pub steps: usize,
    pub accum: usize,
    pub learning_rate: f32,
    pub lr_lit: String,
    pub reset_idx: Option<usize>,
    pub loss_idx: Option<usize>,
    pub data_arrays: Vec<DataArray>,
    /// Per sample: the data array name of each data slot.
    pub data_rows: Vec<Vec<String>>,
    pub data_slots: Vec<usize>,
    // references
    pub tolerance: f32,
    pub tol_lit: String,
    pub loss_refs: usize,
    pub loss_lines: Vec<String>,
    /// The loss references' L3 address, when the test data is in L3.
    pub loss_l3: Option<String>,
    pub refs: Vec<DataArray>,
    /// The test data's L3 image, when the plan keeps it in L3.
    pub test_l3: Option<TestDataL3>,
    pub checks: Vec<Check>,
    pub expected: u64,
    pub not_compared: Vec<NotCompared>,
    /// Why nothing is compared, as a comment and as a string literal body.
    pub no_data_comment: Option<String>,
    pub no_data_lit: Option<String>,
    // build
    pub sources: Vec<String>,
    pub runtime_sources: Vec<String>,
    pub l1_heap: u64,
    pub l2_heap: u64,
    pub l3_heap: u64,
    pub readfs: Vec<String>,
}

struct Ctx<'a> {
    model: &'a Model,
    plan: &'a plan::Plan,
    main: HashMap<String, BufId>,
    opt: HashMap<String, BufId>,
}

impl Ctx<'_> {
    fn graph(&self, sel: GraphSel) -> &Graph {
        match sel {
            GraphSel::Main => &self.model.graph,
            GraphSel::Optimizer => self.model.optimizer.as_ref().expect("optimizer nodes only with an optimizer graph"),
        }
    }

    fn buffer_of(&self, sel: GraphSel, name: &str) -> Option<BufId> {
        match sel {
            GraphSel::Main => self.main.get(name).copied(),
            GraphSel::Optimizer => self.opt.get(name).copied(),
        }
    }

    /// The C expression of a buffer where it lives.
    fn expr(&self, id: BufId) -> String {
        let b = &self.plan.buffers[id];
        match b.placement {
            Placement::Static => format!("(void *){}", baked_name(id)),
            Placement::Arena { offset } => format!("DG_{}({})", b.level, offset),
            Placement::Unplaced => "NULL".into(),
        }
    }
}

fn baked_name(id: BufId) -> String {
    c_ident("dg_w", id)
}

/// The model's name as given (the folder's, else the file stem's): its
/// raw bytes, and as text for messages and the manifest.
fn model_name(model: &Model, opts: &EmitOptions) -> (Vec<u8>, String) {
    if let Some(n) = &opts.name {
        return (n.as_bytes().to_vec(), n.clone());
    }
    let dir = model.dir.file_name().filter(|d| !d.is_empty() && *d != ".");
    match dir.or(model.path.file_stem()) {
        Some(n) => (n.as_encoded_bytes().to_vec(), n.to_string_lossy().into_owned()),
        None => (b"model".to_vec(), "model".into()),
    }
}

/// Bytes of a tensor's value as stored in a buffer of `dtype` (f64 test
/// data is narrowed to an f32 buffer).
fn value_bytes(data: &TensorData, dtype: &str) -> Vec<u8> {
    if dtype == "f32" && data.dtype == DType::F64 {
        data.to_f32().unwrap_or_default().into_iter().flat_map(|v| v.to_le_bytes()).collect()
    } else {
        data.bytes.clone()
    }
}

/// The initial value of a weight buffer: the graph's constant, else the
/// test data's value for that graph input.
fn initial_value(ctx: &Ctx, binding: Option<&bind::Binding>, id: BufId) -> Result<TensorData> {
    let b = &ctx.plan.buffers[id];
    let g = ctx.graph(b.graph);
    if let Some(d) = g.id(&b.name).and_then(|t| g.tensor(t).data.clone()) {
        return Ok(d);
    }
    if let Some(s) = binding.and_then(|bd| bd.slot(&b.name)) {
        if let Some(v) = s.values.first() {
            let mut v = v.clone();
            v.bytes = value_bytes(&v, &b.dtype);
            if b.dtype == "f32" {
                v.dtype = DType::F32;
            }
            return Ok(v);
        }
    }
    Err(Error::model(format!(
        "weight '{}' has no initial value: it is not an initializer and the test data does not provide it{}",
        b.name,
        if binding.is_none() { " (the model has no inputs.npz)" } else { "" }
    )))
}

/// Generate the project in memory.
pub fn generate(
    model: &Model,
    binding: Option<&bind::Binding>,
    plan: &plan::Plan,
    opts: &EmitOptions,
) -> Result<Project> {
    let mut main = HashMap::new();
    let mut opt = HashMap::new();
    for b in &plan.buffers {
        if b.kind.is_per_node() || b.kind == plan::Kind::Static {
            continue;
        }
        match b.graph {
            GraphSel::Main => main.insert(b.name.clone(), b.id),
            GraphSel::Optimizer => opt.insert(b.name.clone(), b.id),
        };
        for a in &b.aliases {
            match a.graph {
                GraphSel::Main => main.entry(a.tensor.clone()).or_insert(b.id),
                GraphSel::Optimizer => opt.entry(a.tensor.clone()).or_insert(b.id),
            };
        }
    }
    let ctx = Ctx { model, plan, main, opt };
    let training = model.roles.is_training();
    let (raw_name, name) = model_name(model, opts);

    // ---- nodes --------------------------------------------------------------
    let mut main_nodes = vec![];
    let mut opt_nodes = vec![];
    for n in &plan.nodes {
        if n.exec.is_none() {
            continue;
        }
        let code = node_code(&ctx, n)?;
        match n.graph {
            GraphSel::Main => main_nodes.push(code),
            GraphSel::Optimizer => opt_nodes.push(code),
        }
    }

    // Updates an SGD could not write in place go back after the run.
    let mut commits = vec![];
    for p in &model.roles.params {
        let (Some(w), Some(up)) = (ctx.buffer_of(GraphSel::Main, &p.name), p.updated.as_deref()) else { continue };
        if let Some(u) = ctx.buffer_of(GraphSel::Main, up) {
            if u != w {
                commits.push(Copy {
                    dst: ctx.expr(w),
                    src: ctx.expr(u),
                    bytes: plan.buffers[w].bytes,
                    what: c_comment(&format!("{} <- {}", p.name, up)),
                });
            }
        }
    }

    // ---- weights: baked arrays, the L3 image, staged copies ------------------
    let mut baked = vec![];
    let mut segments = vec![];
    let mut staged = vec![];
    let mut image: Vec<u8> = vec![];
    let mut hex: Vec<(PathBuf, Vec<u8>)> = vec![];
    let mut staged_bytes = 0u64;
    let mut weights = vec![];
    let mut ordered: Vec<&plan::WeightPlan> = plan.weights.iter().collect();
    ordered.sort_by_key(|w| (w.hex_index.unwrap_or(u32::MAX), w.buffer));
    for w in ordered {
        let b = &plan.buffers[w.buffer];
        let value = initial_value(&ctx, binding, w.buffer)?;
        let raw = value_bytes(&value, &b.dtype);
        if raw.len() as u64 != b.bytes {
            return Err(Error::model(format!(
                "weight '{}': its initial value has {} B, its buffer {} B",
                b.name,
                raw.len(),
                b.bytes
            )));
        }
        weights.push(WeightSupply {
            name: b.name.clone(),
            bytes: b.bytes,
            level: b.level.to_string(),
            supply: w.supply.name().into(),
        });
        match w.supply {
            Supply::Baked => {
                let ct = c::ctype_of_name(&b.dtype);
                let mut v = value.clone();
                v.bytes = raw;
                if b.dtype == "f32" {
                    v.dtype = DType::F32;
                }
                baked.push(Baked {
                    ctype: ct.into(),
                    name: baked_name(w.buffer),
                    comment: c_comment(&format!("{} ({} {:?}, {} B)", b.name, b.dtype, b.shape, b.bytes)),
                    lines: c::lines(&c::values(&v), 8),
                });
            }
            Supply::L3Hex | Supply::L3Staged => {
                let idx = w.hex_index.unwrap_or(0);
                let dst = if w.supply == Supply::L3Hex {
                    ctx.expr(w.buffer)
                } else {
                    let e = format!("DG_STAGED({staged_bytes})");
                    staged.push(Copy {
                        dst: ctx.expr(w.buffer),
                        src: e.clone(),
                        bytes: b.bytes,
                        what: c_comment(&b.name),
                    });
                    staged_bytes += b.size;
                    e
                };
                while !image.len().is_multiple_of(4) {
                    image.push(0);
                }
                let offset = image.len() as u64;
                image.extend_from_slice(&raw);
                let mut padded = raw.clone();
                while !padded.len().is_multiple_of(4) {
                    padded.push(0);
                }
                hex.push((PathBuf::from(format!("hex/{idx}.hex")), padded));
                segments.push(Segment {
                    dst,
                    offset,
                    bytes: b.bytes,
                    name: c_comment(&b.name),
                    name_lit: c_string(escape::harness_label(&b.name)),
                    file: format!("{idx}.hex"),
                });
            }
        }
    }
    while !image.len().is_multiple_of(4) {
        image.push(0);
    }

    // ---- tables ---------------------------------------------------------------
    let g = &model.graph;
    let entry = |sel: GraphSel, name: &str| -> Result<TableEntry> {
        let id = ctx.buffer_of(sel, name).ok_or_else(|| {
            Error::plan(format!("tensor '{name}' is a graph input or output but the memory plan gives it no buffer"))
        })?;
        Ok(TableEntry { expr: ctx.expr(id), bytes: plan.buffers[id].bytes, name: c_comment(name) })
    };
    let input_names: Vec<String> = match binding {
        Some(bd) => bd.slots.iter().map(|s| s.input.clone()).collect(),
        None => g.inputs.iter().filter(|&&t| !g.tensor(t).sequence).map(|&t| g.name_of(t).to_string()).collect(),
    };
    let inputs: Vec<TableEntry> = input_names.iter().map(|n| entry(GraphSel::Main, n)).collect::<Result<_>>()?;
    let output_names: Vec<String> = g.outputs.iter().map(|&t| g.name_of(t).to_string()).collect();
    let outputs: Vec<TableEntry> = output_names.iter().map(|n| entry(GraphSel::Main, n)).collect::<Result<_>>()?;
    let (mut opt_inputs, mut opt_outputs, mut lr_expr, mut opt_state) = (vec![], vec![], None, vec![]);
    if let Some(og) = &model.optimizer {
        for &t in &og.inputs {
            if og.tensor(t).sequence {
                continue;
            }
            let n = og.name_of(t);
            if let Some(id) = ctx.buffer_of(GraphSel::Optimizer, n) {
                opt_inputs.push(TableEntry { expr: ctx.expr(id), bytes: plan.buffers[id].bytes, name: c_comment(n) });
                if model.roles.optimizer.get(n) == Some(&Role::LearningRate) {
                    lr_expr = Some(ctx.expr(id));
                }
                if model.roles.optimizer.get(n) == Some(&Role::OptimizerState) {
                    opt_state.push(TableEntry {
                        expr: ctx.expr(id),
                        bytes: plan.buffers[id].bytes,
                        name: c_comment(n),
                    });
                }
            }
        }
        for &t in &og.outputs {
            let n = og.name_of(t);
            if let Some(id) = ctx.buffer_of(GraphSel::Optimizer, n) {
                opt_outputs.push(TableEntry { expr: ctx.expr(id), bytes: plan.buffers[id].bytes, name: c_comment(n) });
            }
        }
    }
    let reset_idx = model.roles.lazy_reset.as_ref().and_then(|r| input_names.iter().position(|n| n == r));
    let loss_idx = model.roles.loss.as_ref().and_then(|l| output_names.iter().position(|n| n == l));

    // ---- test data ------------------------------------------------------------
    // In L2: static arrays. In L3 (the plan moved it there): one image,
    // `hex/testdata.bin`, that the harness loads into the plan's L3 block
    // and streams from, each item addressed by its offset in the arena.
    let mut l3_data = plan
        .buffers
        .iter()
        .find(|b| b.kind == plan::Kind::Static && b.name == plan::TEST_DATA && b.level == Level::L3)
        .map(|b| match b.placement {
            Placement::Arena { offset } => Ok(L3Data { base: offset, planned: b.bytes, image: vec![] }),
            _ => Err(Error::plan("the L3 test data has no place in the L3 arena")),
        })
        .transpose()?;
    let mut data_arrays = vec![];
    let mut data_rows: Vec<Vec<String>> = vec![];
    let mut data_slots = vec![];
    let (mut num_data, mut data_size, mut steps, mut accum) = (0, 0, 0, 0);
    let mut learning_rate = 0.0f32;
    let mut not_compared = vec![];
    let mut no_data_reason = None;
    if let Some(bd) = binding {
        num_data = bd.num_data_inputs;
        let per_mb: Vec<&bind::Slot> = bd.data_slots().iter().collect();
        data_size = if training { bd.schedule.data_size.max(1) } else { 1 };
        if training {
            steps = bd.schedule.n_steps;
            accum = bd.schedule.n_accum.max(1);
        } else {
            steps = 1;
            accum = 1;
        }
        learning_rate = bd.learning_rate.unwrap_or(0.0);
        for s in &per_mb {
            data_slots.push(s.index);
        }
        for mb in 0..data_size {
            let mut row = vec![];
            for s in &per_mb {
                let v =
                    s.values.get(mb).or_else(|| s.values.first()).ok_or_else(|| {
                        Error::binding(format!("data slot '{}' has no value for sample {mb}", s.input))
                    })?;
                let id = ctx.buffer_of(GraphSel::Main, &s.input);
                let dtype = id.map_or("f32".to_string(), |i| plan.buffers[i].dtype.clone());
                let mut v2 = v.clone();
                v2.bytes = value_bytes(v, &dtype);
                if dtype == "f32" {
                    v2.dtype = DType::F32;
                }
                if let Some(d) = l3_data.as_mut() {
                    row.push(format!("{}u", d.push(&v2.bytes)));
                    continue;
                }
                let nm = c_ident("testData_mb", format!("{mb}_buf{}", s.index));
                data_arrays.push(DataArray {
                    ctype: c::ctype_of_name(&dtype).into(),
                    name: nm.clone(),
                    lines: c::lines(&c::values(&v2), 8),
                });
                row.push(nm);
            }
            data_rows.push(row);
        }
    } else {
        no_data_reason = Some(format!(
            "model '{name}' has no inputs.npz/outputs.npz: no test data, so there are no references and this run \
             compares nothing and fails"
        ));
    }

    // ---- references --------------------------------------------------------------
    let tolerance = opts.tolerance.or(binding.and_then(|b| b.tolerance)).unwrap_or(DEFAULT_TOLERANCE);
    let mut loss_lines = vec![];
    let mut loss_l3 = None;
    let mut loss_refs = 0usize;
    let mut refs = vec![];
    let mut checks = vec![];
    let mut compared = vec![];
    if let Some(bd) = binding {
        if let Some(l) = &bd.loss {
            let vals = l.data.to_f32().unwrap_or_default();
            let passes = bd.schedule.n_steps * bd.schedule.n_accum.max(1);
            if loss_idx.is_none() {
                not_compared.push(NotCompared {
                    name: l.key.clone(),
                    why: "the graph has no loss output to compare against".into(),
                });
            } else {
                loss_refs = vals.len().min(passes);
                if vals.len() > passes {
                    not_compared.push(NotCompared {
                        name: format!("{}[{}..{}]", l.key, passes, vals.len()),
                        why: format!("the schedule runs {passes} forward passes"),
                    });
                }
                match l3_data.as_mut() {
                    Some(d) => loss_l3 = Some(d.push_f32(&vals[..loss_refs])),
                    None => {
                        let shown: Vec<String> = vals[..loss_refs].iter().map(|v| c::f32_lit(*v)).collect();
                        loss_lines = c::lines(&shown, 4);
                    }
                }
            }
        } else if training {
            not_compared.push(NotCompared { name: "loss".into(), why: "outputs.npz holds no loss references".into() });
        }
        for (i, r) in bd.references.iter().enumerate() {
            let id = ctx.buffer_of(GraphSel::Main, &r.target);
            let float = r.data.dtype.is_float();
            let Some(id) = id.filter(|_| float) else {
                not_compared.push(NotCompared {
                    name: r.key.clone(),
                    why: if float {
                        format!("no buffer holds '{}'", r.target)
                    } else {
                        format!("its dtype {} is not compared (float references only)", r.data.dtype)
                    },
                });
                continue;
            };
            if plan.buffers[id].dtype != "f32" {
                not_compared.push(NotCompared {
                    name: r.key.clone(),
                    why: format!("'{}' is {}, not f32", r.target, plan.buffers[id].dtype),
                });
                continue;
            }
            let vals = r.data.to_f32().unwrap_or_default();
            let rn = match l3_data.as_mut() {
                Some(d) => format!("DG_L3({}u)", d.push_f32(&vals)),
                None => {
                    let rn = c_ident("testRef_", i);
                    refs.push(DataArray {
                        ctype: "float".into(),
                        name: rn.clone(),
                        lines: c::lines(&vals.iter().map(|v| c::f32_lit(*v)).collect::<Vec<_>>(), 8),
                    });
                    rn
                }
            };
            let what = match r.kind {
                RefKind::UpdatedParam | RefKind::Frozen => r.key.clone(),
                _ => r.target.clone(),
            };
            checks.push(Check {
                name: c_string(escape::harness_label(&what)),
                expr: ctx.expr(id),
                ref_name: rn,
                values: vals.len() as u64,
            });
            compared.push(Compared { name: what, values: vals.len() as u64 });
        }
        for p in &bd.params {
            if p.reference.is_none() {
                not_compared.push(NotCompared {
                    name: format!("{}_updated", p.name),
                    why: "outputs.npz holds no reference for it".into(),
                });
            }
        }
        // Frozen inputs the step updates (BatchNorm statistics) are compared
        // when outputs.npz has them; a held data input is not updated.
        for s in bd.slots_with(ir::Role::Frozen).filter(|s| !bd.held_constant.contains(&s.input)) {
            if !bd.references.iter().any(|r| r.target == s.input) {
                not_compared.push(NotCompared {
                    name: format!("{}_updated", s.input),
                    why: "outputs.npz holds no reference for it".into(),
                });
            }
        }
        if !training {
            for o in &output_names {
                if !bd.references.iter().any(|r| &r.target == o) {
                    not_compared.push(NotCompared {
                        name: o.clone(),
                        why: "outputs.npz holds no reference for this output".into(),
                    });
                }
            }
        }
    }
    let expected: u64 = loss_refs as u64 + checks.iter().map(|c| c.values).sum::<u64>();
    let test_l3 = l3_data.map(L3Data::finish).transpose()?;

    // ---- build facts -----------------------------------------------------------------
    let p = &plan.platform;
    let platform_define = p.c_define.clone();
    let arenas: Vec<Arena> = [Level::L1, Level::L2]
        .into_iter()
        .map(|l| Arena { level: l.to_string(), bytes: plan.level(l).arena_bytes })
        .collect();
    let net = if training { "TrainingNetwork" } else { "Network" }.to_string();
    let has_optimizer = training;
    let mut sources = vec!["main.c".to_string(), format!("{net}.c"), "Weights.c".to_string()];
    if has_optimizer {
        sources.push("OptimizerNetwork.c".into());
    }
    // A tiled node's calls are in its tile loop.
    let calls =
        main_nodes.iter().chain(&opt_nodes).flat_map(|n| n.calls.iter().chain(n.tiled.iter().flat_map(|t| &t.calls)));
    let runtime_sources = render::runtime_sources(calls.map(|c| c.func.as_str()))?;
    let budget = |l: Level| {
        let lp = plan.level(l);
        lp.capacity.saturating_sub(lp.reserved_bytes)
    };
    let has_image = !segments.is_empty();
    let mut readfs: Vec<String> = if !has_image {
        vec![]
    } else if opts.hex_files {
        hex.iter().map(|(p, _)| p.display().to_string()).collect()
    } else {
        vec![format!("hex/{L3_IMAGE}")]
    };
    if test_l3.is_some() {
        readfs.push(format!("hex/{TEST_DATA_IMAGE}"));
    }
    let facts = Facts {
        project: ProjectName::new(&raw_name),
        platform: p.name.clone(),
        platform_define,
        sdk_build: p.sdk_build,
        default_mem: plan.default_mem.to_string(),
        training,
        net: net.clone(),
        has_optimizer,
        cores: p.cluster_cores,
        stacks: p.stacks(),
        arenas,
        l1_arena_bytes: plan.level(Level::L1).arena_bytes,
        l2_arena_bytes: plan.level(Level::L2).arena_bytes,
        l3_arena_bytes: plan.level(Level::L3).arena_bytes,
        staged_bytes,
        baked,
        inputs,
        outputs,
        opt_inputs,
        opt_outputs,
        lr_expr,
        opt_state,
        main_queues: queues(&main_nodes),
        opt_queues: queues(&opt_nodes),
        main_nodes,
        opt_nodes,
        commits,
        segments,
        hex_files: opts.hex_files,
        staged,
        skip_copy: plan.skip_initweight_copy.skip,
        skip_reason: c_comment(&plan.skip_initweight_copy.reason),
        num_data,
        data_size,
        steps,
        accum,
        learning_rate,
        lr_lit: c::f32_lit(learning_rate),
        reset_idx,
        loss_idx,
        data_arrays,
        data_rows,
        data_slots,
        tolerance,
        tol_lit: c::f32_lit(tolerance),
        loss_refs,
        loss_lines,
        loss_l3: loss_l3.map(|o| format!("DG_L3({o}u)")),
        refs,
        test_l3: test_l3.as_ref().map(|(t, _)| t.clone()),
        checks,
        expected,
        not_compared: not_compared
            .iter()
            .map(|n| NotCompared {
                name: c_string(escape::harness_label(&n.name)),
                why: c_string(escape::harness_label(&n.why)),
            })
            .collect(),
        no_data_comment: no_data_reason.as_deref().map(c_comment),
        no_data_lit: no_data_reason.as_deref().map(c_string),
        sources,
        runtime_sources,
        l1_heap: budget(Level::L1),
        l2_heap: budget(Level::L2).saturating_sub(plan.level(Level::L2).static_bytes),
        l3_heap: budget(Level::L3),
        readfs,
    };

    let mut files = render::render(&facts)?;
    if let Some((_, image)) = test_l3 {
        files.push((PathBuf::from(format!("hex/{TEST_DATA_IMAGE}")), image));
    }
    if has_image {
        if opts.hex_files {
            files.extend(hex);
        } else {
            files.push((PathBuf::from(format!("hex/{L3_IMAGE}")), image.clone()));
        }
    }
    let memory = Level::ALL
        .into_iter()
        .map(|l| {
            let lp = plan.level(l);
            (l.to_string(), LevelBytes { arena: lp.arena_bytes, static_bytes: lp.static_bytes, capacity: lp.capacity })
        })
        .collect();
    let manifest = Manifest {
        model: name,
        platform: p.name.clone(),
        default_mem: plan.default_mem.to_string(),
        kind: if training { "training" } else { "inference" }.into(),
        expected_compared: expected,
        loss_refs: loss_refs as u64,
        tolerance,
        compared,
        not_compared,
        steps: steps as u64,
        accum: accum as u64,
        memory,
        weights,
        l3_image: (has_image && !opts.hex_files).then(|| format!("hex/{L3_IMAGE}")),
        l3_image_bytes: if has_image { image.len() as u64 } else { 0 },
        test_data: plan.buffers.iter().find(|b| b.kind == plan::Kind::Static && b.name == plan::TEST_DATA).map(|b| {
            TestDataPlace {
                bytes: b.bytes,
                level: b.level.to_string(),
                image: (b.level == Level::L3).then(|| format!("hex/{TEST_DATA_IMAGE}")),
            }
        }),
    };
    let mut json = serde_json::to_string_pretty(&manifest).map_err(|e| Error::model(e.to_string()))?;
    json.push('\n');
    files.push((PathBuf::from("deploygen.json"), json.into_bytes()));
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Project { files, manifest })
}

/// `DG_DUMP` of the node's f32 outputs, at their home buffers.
fn dumps(ctx: &Ctx, n: &plan::NodePlan, g: &ir::Graph, node: &ir::Node) -> Vec<Dump> {
    node.outputs
        .iter()
        .flatten()
        .filter_map(|&t| {
            let b = ctx.buffer_of(n.graph, g.name_of(t))?;
            let buf = &ctx.plan.buffers[b];
            (buf.dtype == "f32").then(|| Dump { name: c_string(g.name_of(t)), ptr: ctx.expr(b), numel: buf.bytes / 4 })
        })
        .collect()
}

/// Copies after a node of the state its kernel updates (running
/// statistics): output `o` back into input `i` for the next run.
fn state_copies(
    ctx: &Ctx,
    n: &plan::NodePlan,
    g: &ir::Graph,
    node: &ir::Node,
    updates: &[(usize, usize)],
) -> Vec<Copy> {
    let mut post = vec![];
    for &(i, o) in updates {
        let (Some(ti), Some(to)) = (node.input(i), node.output(o)) else { continue };
        let (Some(bi), Some(bo)) = (ctx.buffer_of(n.graph, g.name_of(ti)), ctx.buffer_of(n.graph, g.name_of(to)))
        else {
            continue;
        };
        if bi != bo {
            post.push(Copy {
                dst: ctx.expr(bi),
                src: ctx.expr(bo),
                bytes: ctx.plan.buffers[bi].bytes,
                what: c_comment(&format!("{} <- {} (carried to the next run)", g.name_of(ti), g.name_of(to))),
            });
        }
    }
    post
}

/// The code of one scheduled node: staging copies around its kernel
/// call(s), as the plan places the operands.
fn node_code(ctx: &Ctx, n: &plan::NodePlan) -> Result<NodeCode> {
    let g = ctx.graph(n.graph);
    let base = if n.graph == GraphSel::Main { 0 } else { ctx.plan.main_steps };
    let ni = *g
        .schedule
        .get((n.step - base) as usize)
        .ok_or_else(|| Error::plan(format!("plan step {} of node '{}' is not in the schedule", n.step, n.name)))?;
    let node = g.node(ni);
    let binding = ops::of(node).kernel.ok_or_else(|| {
        let known = ops::with_kernels();
        Error::Node {
            node: node.name.clone(),
            op: node.op.clone(),
            detail: format!(
                "operator '{}' (domain '{}') has no kernel binding, so no code can be generated for it; operators with kernel bindings: {}",
                node.op,
                if node.domain.is_empty() { "ai.onnx" } else { &node.domain },
                known.join(", ")
            ),
        }
    })?;
    if let Some(t) = &n.tiling {
        let code = tiled::tiled_code(ctx, n, t, g, node, binding)?;
        let comment = format!(
            "step {}: {}{} '{}' computes in L1, {} tile(s) of {:?}{}",
            n.step,
            node.op,
            fused_note(node),
            c_comment(&node.name),
            t.count,
            t.tile,
            match t.buffering() {
                "double" => ", double-buffered",
                "mixed" => ", some operands double-buffered",
                _ => "",
            }
        );
        let post = state_copies(ctx, n, g, node, &code.state_updates);
        let dumps = dumps(ctx, n, g, node);
        let profile = profile_args(n, node);
        return Ok(NodeCode { comment, pre: vec![], calls: vec![], post, tiled: Some(code), dumps, profile });
    }
    let at = |id: BufId| -> String {
        match n.operands.iter().find(|o| o.buffer == id) {
            Some(o) => match (o.l1_copy, o.l2_staging) {
                (Some(c), _) | (None, Some(c)) => ctx.expr(c),
                _ => ctx.expr(id),
            },
            None => ctx.expr(id),
        }
    };
    let ptr = |t: Option<ir::TensorId>| -> Option<String> {
        let t = t?;
        if g.tensor(t).sequence {
            return None;
        }
        ctx.buffer_of(n.graph, g.name_of(t)).map(at)
    };
    let inputs: Vec<Option<String>> = node.inputs.iter().map(|t| ptr(*t)).collect();
    let outputs: Vec<Option<String>> = node.outputs.iter().map(|t| ptr(*t)).collect();
    let scratch = n.scratch.map(|s| ctx.expr(s));
    // Sequence members (the optimizer's params / gradients), by name.
    let mut members = vec![];
    if node.inputs.iter().flatten().any(|&t| g.tensor(t).sequence) {
        for p in &ctx.model.roles.params {
            let (Some(w), Some(gb)) = (
                ctx.buffer_of(GraphSel::Main, &p.name),
                p.grad_buffer.as_deref().and_then(|gname| ctx.buffer_of(GraphSel::Main, gname)),
            ) else {
                return Err(Error::node(
                    node,
                    format!("parameter '{}' has no gradient buffer to update it from", p.name),
                ));
            };
            let numel = ctx.plan.buffers[w].bytes / 4;
            members.push(kernel::Member {
                name: p.name.clone(),
                param: at(w),
                grad: at(gb),
                numel: numel as usize,
                stage: vec![w, gb],
            });
        }
    }
    let kctx = kernel::KernelCtx { model: ctx.model, graph: g, node, inputs, outputs, scratch, members, tile: None };
    let kc = binding(&kctx)?;

    let copies = |ids: &dyn Fn(BufId) -> bool| -> (Vec<Copy>, Vec<Copy>) {
        let (mut pre, mut post) = (vec![], vec![]);
        for o in &n.operands {
            if !ids(o.buffer) {
                continue;
            }
            let Some(cp) = o.l1_copy.or(o.l2_staging) else { continue };
            let home = ctx.expr(o.buffer);
            let b = &ctx.plan.buffers[o.buffer];
            let copy = ctx.expr(cp);
            let name = &b.name;
            if matches!(o.access, Access::Read | Access::ReadWrite) {
                let what = c_comment(&format!("{name} {}->{}", o.home, o.at));
                pre.push(Copy { dst: copy.clone(), src: home.clone(), bytes: b.bytes, what });
            }
            if matches!(o.access, Access::Write | Access::ReadWrite) {
                let what = c_comment(&format!("{name} {}->{}", o.at, o.home));
                post.push(Copy { dst: home, src: copy, bytes: b.bytes, what });
            }
        }
        (pre, post)
    };
    let per_call: Vec<BufId> = kc.calls.iter().flat_map(|c| c.stage.iter().copied()).collect();
    let (pre, mut post) = copies(&|b| !per_call.contains(&b));
    let calls = kc
        .calls
        .iter()
        .map(|inv| {
            let (cpre, cpost) = copies(&|b| inv.stage.contains(&b));
            args::check(inv).map_err(|e| Error::node(node, e))?;
            Ok(CallCode {
                comment: inv.comment.as_deref().map(c_comment).unwrap_or_default(),
                func: inv.func.clone(),
                args_type: inv.args_type.clone(),
                fields: inv.fields.iter().map(|(n, a)| (n.to_string(), args::c(a))).collect(),
                forked: inv.forked,
                locals: inv
                    .locals
                    .iter()
                    .map(|l| (l.ctype.to_string(), l.name.to_string(), elements(&l.values)))
                    .collect(),
                pre: cpre,
                post: cpost,
            })
        })
        .collect::<Result<_>>()?;
    post.extend(state_copies(ctx, n, g, node, &kc.state_updates));
    let exec = n.exec.map(|l| l.to_string()).unwrap_or_default();
    let dumps = dumps(ctx, n, g, node);
    Ok(NodeCode {
        comment: c_comment(&format!(
            "step {}: {}{} '{}' computes in {}",
            n.step,
            node.op,
            fused_note(node),
            node.name,
            exec
        )),
        pre,
        calls,
        post,
        tiled: None,
        dumps,
        profile: profile_args(n, node),
    })
}

/// The elements of a local array's initialiser, `a, b, c`.
fn elements(values: &[Arg]) -> String {
    if values.is_empty() {
        return "0".into();
    }
    values.iter().map(args::c).collect::<Vec<_>>().join(", ")
}

/// The DMA queues a file's pool needs: the most any one tiled node uses
/// (nodes run one after another and leave their queues idle).
fn queues(nodes: &[NodeCode]) -> usize {
    nodes.iter().filter_map(|n| n.tiled.as_ref()).map(|t| t.queues).max().unwrap_or(0)
}

/// ` + Relu` after the op of a node that applies a fused activation.
fn fused_note(node: &ir::Node) -> String {
    ops::fused_activation(node).map(|a| format!(" + {a}")).unwrap_or_default()
}

/// `step, "op", "name"` for `DG_PROFILE_END`: the harness prints them back
/// in its `BENCH node` line (`deploygen report --profile`).
fn profile_args(n: &plan::NodePlan, node: &ir::Node) -> String {
    let (op, name) = (escape::harness_label(&node.op), escape::harness_label(&node.name));
    format!("{}u, \"{}\", \"{}\"", n.step, c_string(op), c_string(name))
}
