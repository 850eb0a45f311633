//! The application API of a training project: `dg_model.h` / `dg_model.c`
//! (set an input, run a training step, predict, read an output, export and
//! import a checkpoint) and its second client after the harness,
//! `demo.c`, with the references of the trained model's prediction
//! (`testpredict.h`, from the model's `predict.npz`).
//!
//! `dg_model_predict` runs the forward part of the training graph
//! (`lower::forward`): the same nodes, buffers and arenas as the training
//! step, so it costs no memory the step does not already plan. Its outputs
//! are the forward outputs (the scores the loss reads, and forward values
//! that are graph outputs); it is offered only when every one of them
//! stays in its buffer until the last forward node has run.

use std::collections::HashSet;

use petgraph::stable_graph::NodeIndex;

use super::harness::{DataArray, Harness};
use super::network::{Network, NodeCode};
use super::Ctx;
use crate::bind;
use crate::c;
use crate::error::Result;
use crate::escape::{c_comment, c_ident, c_string};
use crate::ir::{DType, Role};
use crate::lower::forward;
use crate::plan::GraphSel;

/// Version of the checkpoint format `dg_model_export_weights` writes.
pub const CHECKPOINT_VERSION: u32 = 1;

/// Bytes of the checkpoint's header: magic, version, layout hash, payload
/// bytes, payload hash (five little-endian u32).
pub const HEADER_BYTES: u64 = 20;

/// One input, output or checkpointed buffer of the API.
#[derive(Clone, Debug)]
pub struct Port {
    /// The tensor's name as C string content.
    pub name_lit: String,
    /// What it is, for a comment.
    pub comment: String,
    pub expr: String,
    pub bytes: u64,
}

/// A reference of `demo.c`: one predict output after training.
#[derive(Clone, Debug)]
pub struct DemoRef {
    pub output: usize,
    pub name_lit: String,
    pub array: String,
    pub values: u64,
}

/// The API's facts.
#[derive(Clone, Debug, Default)]
pub struct ModelApi {
    /// The tensors' names as given (for the manifest).
    pub input_names: Vec<String>,
    pub output_names: Vec<String>,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    pub loss_expr: Option<String>,
    pub reset_expr: Option<String>,
    pub accum: usize,
    pub lr_lit: String,
    /// Every trainable weight, then the optimizer state: the checkpoint.
    pub state: Vec<Port>,
    pub state_bytes: u64,
    pub checkpoint_bytes: u64,
    /// FNV-1a of the checkpoint's layout, as a C literal (in a comment:
    /// the C computes it from `layout_lit`, the layout as string content).
    pub layout_hash: String,
    pub layout_lit: String,
    pub predict_nodes: Vec<NodeCode>,
    /// DMA queues of `PredictNetwork.c`'s pool.
    pub predict_queues: usize,
    /// `CopyInitialWeights` is not needed (the plan's decision, as main.c's).
    pub skip_copy: bool,
    /// Why `dg_model_predict` is not offered, as a comment and a C string.
    pub no_predict: Option<String>,
    pub no_predict_comment: Option<String>,
    pub version: u32,
    // demo.c
    /// API input of each test-data column (`TEST_DATA(mb, i)`).
    pub demo_inputs: Vec<usize>,
    pub demo_refs: Vec<DemoRef>,
    pub demo_arrays: Vec<DataArray>,
    pub demo_expected: u64,
    /// The largest predict output, for the demo's buffer.
    pub demo_out_bytes: u64,
    pub tol_lit: String,
    /// Why the demo has nothing to compare, as C string content.
    pub demo_no_refs: Option<String>,
}

/// FNV-1a, 32 bits: the checkpoint's layout hash (and, in C, its payload
/// check: any one changed byte changes it).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

fn port(ctx: &Ctx, sel: GraphSel, name: &str, what: &str) -> Option<Port> {
    let id = ctx.buffer_of(sel, name)?;
    let b = &ctx.plan.buffers[id];
    Some(Port {
        name_lit: c_string(name),
        comment: c_comment(&format!("'{name}' {} {:?}, {} B, {what}", b.dtype, b.shape, b.bytes)),
        expr: ctx.expr(id),
        bytes: b.bytes,
    })
}

pub(super) fn build(ctx: &Ctx, binding: Option<&bind::Binding>, net: &Network, h: &Harness) -> Result<ModelApi> {
    let model = ctx.model;
    let roles = &model.roles;
    let mut api = ModelApi {
        accum: h.accum.max(1),
        lr_lit: h.lr_lit.clone(),
        version: CHECKPOINT_VERSION,
        skip_copy: h.skip_copy,
        tol_lit: h.tol_lit.clone(),
        ..Default::default()
    };
    let mut input_names = vec![];
    for name in &net.input_names {
        let role = roles.main.get(name).copied();
        let what = match role {
            Some(Role::Data) => "data",
            Some(Role::Labels) => "labels",
            _ => continue,
        };
        if let Some(p) = port(ctx, GraphSel::Main, name, what) {
            api.inputs.push(p);
            input_names.push(name.clone());
        }
    }
    api.loss_expr = roles.loss.as_deref().and_then(|l| ctx.buffer_of(GraphSel::Main, l)).map(|id| ctx.expr(id));
    api.reset_expr = roles.lazy_reset.as_deref().and_then(|r| ctx.buffer_of(GraphSel::Main, r)).map(|id| ctx.expr(id));
    checkpoint(ctx, net, &mut api);
    let outputs = predict(ctx, net, &mut api);
    demo(ctx, binding, h, &input_names, &outputs, &mut api)?;
    api.no_predict_comment = api.no_predict.as_deref().map(c_comment);
    api.input_names = input_names;
    api.output_names = outputs;
    Ok(api)
}

/// The checkpoint: every trainable weight, then the optimizer state, and
/// the hash of their names, types and sizes.
fn checkpoint(ctx: &Ctx, net: &Network, api: &mut ModelApi) {
    let mut layout = String::from("deploygen checkpoint\n");
    for p in &ctx.model.roles.params {
        if let Some(port) = port(ctx, GraphSel::Main, &p.name, "trainable weight") {
            layout.push_str(&format!("w\t{}\t{}\n", p.name, port.bytes));
            api.state.push(port);
        }
    }
    for s in &net.opt_state_names {
        if let Some(port) = port(ctx, GraphSel::Optimizer, s, "optimizer state") {
            layout.push_str(&format!("s\t{}\t{}\n", s, port.bytes));
            api.state.push(port);
        }
    }
    api.state_bytes = api.state.iter().map(|p| p.bytes).sum();
    api.checkpoint_bytes = HEADER_BYTES + api.state_bytes;
    api.layout_hash = format!("0x{:08x}", fnv1a(layout.as_bytes()));
    api.layout_lit = c_string(&layout);
}

/// The forward part's nodes and outputs; `no_predict` says why there is
/// no prediction when there is none. Returns the output names.
fn predict(ctx: &Ctx, net: &Network, api: &mut ModelApi) -> Vec<String> {
    let no = |api: &mut ModelApi, why: String| {
        api.no_predict = Some(why);
        vec![]
    };
    let f = match forward::forward(ctx.model) {
        Ok(f) => f,
        Err(e) => return no(api, format!("the training graph has no forward part to predict with: {e}")),
    };
    let keep: HashSet<NodeIndex> = f.nodes.iter().copied().collect();
    let picked: Vec<usize> = (0..net.main_nodes.len()).filter(|&i| keep.contains(&net.main_index[i])).collect();
    let last = picked.iter().map(|&i| net.main_steps[i]).max().unwrap_or(0);
    let g = &ctx.model.graph;
    let mut names = vec![];
    for &t in &f.outputs {
        let name = g.name_of(t);
        let Some(id) = ctx.buffer_of(GraphSel::Main, name) else {
            return no(api, format!("forward output '{name}' has no buffer"));
        };
        let b = &ctx.plan.buffers[id];
        if !b.persistent && b.end < last {
            return no(
                api,
                format!(
                    "forward output '{name}' shares its buffer after step {}, before the last forward node (step {last})",
                    b.end
                ),
            );
        }
        if b.dtype != DType::F32 && b.dtype.size().is_none() {
            return no(api, format!("forward output '{name}' has no fixed element size"));
        }
        api.outputs.extend(port(ctx, GraphSel::Main, name, "predicted"));
        names.push(name.to_string());
    }
    api.predict_nodes = picked.iter().map(|&i| net.main_nodes[i].clone()).collect();
    api.predict_queues = api.predict_nodes.iter().filter_map(|n| n.tiled.as_ref()).map(|t| t.queues).max().unwrap_or(0);
    names
}

/// `demo.c`'s facts: which API input each test-data column feeds, and the
/// references of the trained model's prediction on mini-batch 0.
fn demo(
    ctx: &Ctx,
    binding: Option<&bind::Binding>,
    h: &Harness,
    inputs: &[String],
    outputs: &[String],
    api: &mut ModelApi,
) -> Result<()> {
    for &slot in &h.data_slots {
        let name = &binding.map(|b| b.slots[slot].input.clone()).unwrap_or_default();
        match inputs.iter().position(|n| n == name) {
            Some(k) => api.demo_inputs.push(k),
            None => {
                api.demo_no_refs = Some(c_string(format!("test-data input '{name}' is not an input of the API")));
                return Ok(());
            }
        }
    }
    let Some(b) = binding else {
        api.demo_no_refs = Some(c_string("the model has no test data"));
        return Ok(());
    };
    if let Some(why) = &api.no_predict {
        api.demo_no_refs = Some(c_string(why));
        return Ok(());
    }
    for (key, data) in &b.predict_refs {
        let Some(k) = outputs.iter().position(|o| o == key) else { continue };
        let Some(id) = ctx.buffer_of(GraphSel::Main, key) else { continue };
        let dtype = ctx.plan.buffers[id].dtype;
        if dtype != DType::F32 || !data.dtype.is_float() {
            continue;
        }
        let vals = data.to_f32().unwrap_or_default();
        let array = c_ident("demoRef_", k);
        let lits: Vec<String> = vals.iter().map(|v| c::f32_lit(*v)).collect();
        api.demo_arrays.push(DataArray { ctype: "float".into(), name: array.clone(), lines: c::lines(&lits, 8) });
        api.demo_refs.push(DemoRef { output: k, name_lit: c_string(key), array, values: vals.len() as u64 });
    }
    api.demo_expected = api.demo_refs.iter().map(|r| r.values).sum();
    api.demo_out_bytes = api.outputs.iter().map(|p| p.bytes).max().unwrap_or(0);
    if api.demo_refs.is_empty() {
        api.demo_no_refs = Some(c_string(format!(
            "no references of the trained model's prediction: make {} in the model's folder with `python \
             tools/make_predict_refs.py MODEL_DIR`",
            bind::PREDICT_FILE
        )));
    }
    Ok(())
}
