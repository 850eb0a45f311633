//! The application API of every project: `dg_model.h` / `dg_model.c`
//! (set an input, predict, read an output; in a training project also set
//! a training input, run a training step, export and import a checkpoint)
//! and, for training projects, its second client after the harness,
//! `demo.c`, with the references of the trained model's prediction
//! (`testpredict.h`, from the model's `predict.npz`).
//!
//! `dg_model_predict` of a training project runs the prediction graph
//! (`Model::predict`): the forward part in eval mode (BatchNorm with its
//! running statistics) at its own batch, reading the training step's
//! weight buffers. In an inference project it runs the network.

use super::harness::{DataArray, Harness};
use super::network::Network;
use super::Ctx;
use crate::bind;
use crate::c;
use crate::error::{Error, Result};
use crate::escape::{c_comment, c_ident, c_string};
use crate::ir::{DType, Graph, Role};
use crate::ops;
use crate::plan::GraphSel;

/// Version of the checkpoint format `dg_model_export_weights` writes.
pub const CHECKPOINT_VERSION: u32 = 2;

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

/// A comparison of an inference project's `demo.c`: output `output`
/// with the harness's reference.
#[derive(Clone, Debug)]
pub struct DemoCheck {
    pub output: usize,
    pub name: String,
    pub ref_name: String,
    pub values: u64,
    pub exact: Option<usize>,
    /// Compared with zero tolerance (`harness::Check::integral`).
    pub integral: bool,
}

/// A reference of `demo.c`: one predict output after training, per chunk
/// of `values` elements.
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
    pub training: bool,
    /// The tensors' names as given (for the manifest): predict inputs,
    /// training-step inputs, predict outputs.
    pub input_names: Vec<String>,
    pub train_input_names: Vec<String>,
    pub output_names: Vec<String>,
    /// `dg_model_set_input`: the inputs of `dg_model_predict`.
    pub inputs: Vec<Port>,
    /// `dg_model_set_train_input`: the inputs of a training step.
    pub train_inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    /// Samples per `dg_model_predict` (the data inputs' dim 0).
    pub predict_batch: usize,
    pub loss_expr: Option<String>,
    pub reset_expr: Option<String>,
    pub accum: usize,
    pub lr_lit: String,
    /// Every trainable weight, the BatchNorm running statistics, then the
    /// optimizer state: the checkpoint.
    pub state: Vec<Port>,
    pub state_bytes: u64,
    pub checkpoint_bytes: u64,
    /// FNV-1a of the checkpoint's layout, as a C literal.
    pub layout_hash: String,
    /// The checkpoint's buffers (kind, name, dtype, shape, bytes), for a
    /// comment.
    pub layout_lines: Vec<String>,
    /// `CopyInitialWeights` is not needed (the plan's decision, as main.c's).
    pub skip_copy: bool,
    /// Why `dg_model_predict` is not offered, as a comment and a C string.
    pub no_predict: Option<String>,
    pub no_predict_comment: Option<String>,
    /// Why the prediction's batch is not the default one, for a comment.
    pub predict_note: Option<String>,
    pub version: u32,
    /// The harness's `main.c`: the API input (training: training input)
    /// each test-data column (`TEST_DATA(mb, i)`) feeds.
    pub harness_inputs: Vec<usize>,
    // demo.c
    /// API training input of each test-data column (`TEST_DATA(mb, i)`),
    /// and the predict input it gives, if any (else `u32::MAX`).
    pub demo_inputs: Vec<usize>,
    pub demo_predict_inputs: Vec<u32>,
    pub demo_refs: Vec<DemoRef>,
    /// An inference project's comparisons (outputs with `testoutputs.h`).
    pub demo_checks: Vec<DemoCheck>,
    pub demo_arrays: Vec<DataArray>,
    pub demo_expected: u64,
    /// Predictions `demo.c` runs (`predict_batch` samples each) over
    /// mini-batch 0.
    pub demo_chunks: u64,
    /// The largest predict output, for the demo's buffer.
    pub demo_out_bytes: u64,
    /// The harness's comparison rule: `|computed - ref| <= tol + rtol * |ref|`.
    pub tol_lit: String,
    pub rtol_lit: String,
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

/// The API of an inference project: the network's inputs and outputs,
/// `dg_model_predict` one run of the network.
/// The API input named like each test-data column's input, among `names`:
/// main.c feeds the model only through `dg_model.h`, so every column must
/// have one.
fn harness_inputs(binding: Option<&bind::Binding>, h: &Harness, names: &[String]) -> Result<Vec<usize>> {
    let mut out = vec![];
    for &slot in &h.data_slots {
        let name = binding.map(|b| b.slots[slot].input.clone()).unwrap_or_default();
        let k = names.iter().position(|n| *n == name).ok_or_else(|| {
            Error::model(format!("internal error: test-data input '{name}' is no input of dg_model.h"))
        })?;
        out.push(k);
    }
    Ok(out)
}

pub(super) fn build_inference(
    ctx: &Ctx,
    binding: Option<&bind::Binding>,
    net: &Network,
    h: &Harness,
) -> Result<ModelApi> {
    let mut api = ModelApi { version: CHECKPOINT_VERSION, skip_copy: h.skip_copy, accum: 1, ..Default::default() };
    for name in &net.input_names {
        if let Some(p) = port(ctx, GraphSel::Main, name, "input") {
            api.inputs.push(p);
            api.input_names.push(name.clone());
        }
    }
    for name in &net.output_names {
        if let Some(p) = port(ctx, GraphSel::Main, name, "output") {
            api.outputs.push(p);
            api.output_names.push(name.clone());
        }
    }
    let g = &ctx.model.graph;
    api.predict_batch = g
        .inputs
        .iter()
        .find(|&&t| net.input_names.iter().any(|n| n == g.name_of(t)))
        .and_then(|&t| g.tensor(t).ty.shape())
        .and_then(|s| s.first().copied())
        .unwrap_or(1);
    api.layout_hash = "0x00000000".into();
    api.harness_inputs = harness_inputs(binding, h, &api.input_names)?;
    // demo.c: the test data into the inputs, the outputs against the
    // harness's references.
    for &slot in &h.data_slots {
        let name = binding.map(|b| b.slots[slot].input.clone()).unwrap_or_default();
        match api.input_names.iter().position(|n| *n == name) {
            Some(k) => api.demo_inputs.push(k),
            None => {
                api.demo_no_refs = Some(c_string(format!("test-data input '{name}' is not an input of the API")));
                return Ok(api);
            }
        }
    }
    for k in &h.checks {
        if let Some(o) = api.output_names.iter().position(|n| *n == k.tensor) {
            api.demo_checks.push(DemoCheck {
                output: o,
                name: k.name.clone(),
                ref_name: k.ref_name.clone(),
                values: k.values,
                exact: k.exact,
                integral: k.integral,
            });
        }
    }
    api.demo_expected = api.demo_checks.iter().map(|k| k.values).sum();
    api.demo_out_bytes = api.outputs.iter().map(|p| p.bytes).max().unwrap_or(0);
    if binding.is_none() {
        api.demo_no_refs = Some(c_string("the model has no test data"));
    } else if api.demo_checks.is_empty() {
        api.demo_no_refs = Some(c_string(format!("no reference of an output in {}", bind::OUTPUTS_FILE)));
    }
    Ok(api)
}

pub(super) fn build(ctx: &Ctx, binding: Option<&bind::Binding>, net: &Network, h: &Harness) -> Result<ModelApi> {
    let model = ctx.model;
    let roles = &model.roles;
    let mut api = ModelApi {
        training: true,
        accum: h.accum.max(1),
        lr_lit: h.lr_lit.clone(),
        version: CHECKPOINT_VERSION,
        skip_copy: h.skip_copy,
        tol_lit: h.tol_lit.clone(),
        rtol_lit: h.rtol_lit.clone(),
        predict_batch: model.predict_batch,
        ..Default::default()
    };
    for name in &net.input_names {
        let role = roles.main.get(name).copied();
        let what = match role {
            Some(Role::Data) => "data",
            Some(Role::Labels) => "labels",
            _ => continue,
        };
        if let Some(p) = port(ctx, GraphSel::Main, name, what) {
            api.train_inputs.push(p);
            api.train_input_names.push(name.clone());
        }
    }
    api.loss_expr = roles.loss.as_deref().and_then(|l| ctx.buffer_of(GraphSel::Main, l)).map(|id| ctx.expr(id));
    api.reset_expr = roles.lazy_reset.as_deref().and_then(|r| ctx.buffer_of(GraphSel::Main, r)).map(|id| ctx.expr(id));
    api.harness_inputs = harness_inputs(binding, h, &api.train_input_names)?;
    checkpoint(ctx, net, &mut api);
    predict(ctx, &mut api);
    demo(ctx, binding, h, &mut api)?;
    api.no_predict_comment = api.no_predict.as_deref().map(c_comment);
    api.predict_note = model.predict_note.as_deref().map(c_comment);
    Ok(api)
}

/// The BatchNorm running statistics of the training step: the inputs its
/// batch-statistics nodes update (`OpDef::running_stats`), in schedule order.
fn running_stats(g: &Graph) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for (_, node) in g.nodes() {
        let def = ops::of(node);
        if !def.batch_stats.is_some_and(|b| b(node)) {
            continue;
        }
        for &i in def.running_stats {
            if let Some(t) = node.input(i) {
                let name = g.name_of(t).to_string();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// Text of a graph's structure for the layout hash: each node's operator,
/// attributes, and the names and types of what it reads and writes.
fn structure(g: &Graph, nodes: &[petgraph::stable_graph::NodeIndex], out: &mut String) {
    for &n in nodes {
        let node = g.node(n);
        out.push_str(&format!("{}:{} {:?}", node.domain, node.op, node.attrs));
        for (dir, slots) in [("<", &node.inputs), (">", &node.outputs)] {
            for t in slots {
                match t {
                    Some(t) => out.push_str(&format!(" {dir}{}:{}", g.name_of(*t), g.tensor(*t).ty)),
                    None => out.push_str(&format!(" {dir}-")),
                }
            }
        }
        out.push('\n');
    }
}

/// The checkpoint: every trainable weight, the BatchNorm running
/// statistics, then the optimizer state; and the hash of its layout: each
/// buffer's kind, name, dtype, full shape and bytes in order, and the
/// structure of the graphs it belongs to (the forward part of the training
/// step and the optimizer's nodes: operators, attributes, tensor names and
/// types). A checkpoint of another model, or of the same weights under
/// another optimizer, has another hash.
fn checkpoint(ctx: &Ctx, net: &Network, api: &mut ModelApi) {
    let mut layout = format!("deploygen checkpoint {CHECKPOINT_VERSION}\n");
    let mut lines = vec![];
    let mut entry = |layout: &mut String, kind: &str, sel: GraphSel, name: &str, what: &str| {
        let id = ctx.buffer_of(sel, name)?;
        let b = &ctx.plan.buffers[id];
        let line = format!("{kind} {name} {} {:?} {}", b.dtype, b.shape, b.bytes);
        layout.push_str(&line);
        layout.push('\n');
        lines.push(c_comment(&line));
        port(ctx, sel, name, what)
    };
    let g = &ctx.model.graph;
    for p in &ctx.model.roles.params {
        api.state.extend(entry(&mut layout, "w", GraphSel::Main, &p.name, "trainable weight"));
    }
    for r in running_stats(g) {
        api.state.extend(entry(&mut layout, "r", GraphSel::Main, &r, "running statistic"));
    }
    for s in &net.opt_state_names {
        api.state.extend(entry(&mut layout, "s", GraphSel::Optimizer, s, "optimizer state"));
    }
    api.layout_lines = lines;
    layout.push_str("forward\n");
    // Recompute copies change with the platform; the forward part does not.
    let fwd = ctx.model.forward_nodes.clone().unwrap_or_else(|| g.schedule.clone());
    structure(g, &fwd, &mut layout);
    if let Some(og) = &ctx.model.optimizer {
        layout.push_str("optimizer\n");
        structure(og, &og.schedule, &mut layout);
    }
    api.state_bytes = api.state.iter().map(|p| p.bytes).sum();
    api.checkpoint_bytes = HEADER_BYTES + api.state_bytes;
    api.layout_hash = format!("0x{:08x}", fnv1a(layout.as_bytes()));
}

/// The prediction graph's inputs and outputs; `no_predict` says why there
/// is no prediction when there is none.
fn predict(ctx: &Ctx, api: &mut ModelApi) {
    let Some(pg) = &ctx.model.predict else {
        api.no_predict = Some(
            ctx.model
                .no_predict
                .as_ref()
                .map_or_else(|| "the model has no prediction graph".into(), ToString::to_string),
        );
        return;
    };
    let roles = &ctx.model.roles;
    for &t in &pg.inputs {
        let name = pg.name_of(t);
        if roles.role(name) != Some(Role::Data) {
            continue;
        }
        if let Some(p) = port(ctx, GraphSel::Predict, name, "data") {
            api.inputs.push(p);
            api.input_names.push(name.to_string());
        }
    }
    for &t in &pg.outputs {
        let name = pg.name_of(t);
        if let Some(p) = port(ctx, GraphSel::Predict, name, "predicted") {
            api.outputs.push(p);
            api.output_names.push(name.to_string());
        }
    }
}

/// `demo.c`'s facts: which API input each test-data column feeds, and the
/// references of the trained model's prediction on mini-batch 0, predicted
/// `predict_batch` samples at a time.
fn demo(ctx: &Ctx, binding: Option<&bind::Binding>, h: &Harness, api: &mut ModelApi) -> Result<()> {
    for &slot in &h.data_slots {
        let name = &binding.map(|b| b.slots[slot].input.clone()).unwrap_or_default();
        match api.train_input_names.iter().position(|n| n == name) {
            Some(k) => api.demo_inputs.push(k),
            None => {
                api.demo_no_refs = Some(c_string(format!("test-data input '{name}' is not an input of the API")));
                return Ok(());
            }
        }
        let p = api.input_names.iter().position(|n| n == name);
        api.demo_predict_inputs.push(p.map_or(u32::MAX, |p| p as u32));
    }
    let Some(b) = binding else {
        api.demo_no_refs = Some(c_string("the model has no test data"));
        return Ok(());
    };
    if let Some(why) = &api.no_predict {
        api.demo_no_refs = Some(c_string(why));
        return Ok(());
    }
    for (k, name) in api.input_names.iter().enumerate() {
        if !api.demo_predict_inputs.contains(&(k as u32)) {
            api.demo_no_refs = Some(c_string(format!("predict input '{name}' is no test-data input")));
            return Ok(());
        }
    }
    let batch = api.predict_batch as u64;
    let mut chunks: Option<u64> = None;
    for (key, data) in &b.predict_refs {
        let Some(k) = api.output_names.iter().position(|o| o == key) else { continue };
        let Some(id) = ctx.buffer_of(GraphSel::Predict, key) else { continue };
        let buf = &ctx.plan.buffers[id];
        if buf.dtype != DType::F32 || !data.dtype.is_float() {
            continue;
        }
        // The references hold mini-batch 0 (the training batch); each
        // prediction gives `batch` samples of it.
        let per_chunk = buf.bytes / 4;
        let per_sample = per_chunk / batch.max(1);
        let values = data.numel() as u64;
        if per_sample == 0 || !values.is_multiple_of(per_sample) || values / per_sample < batch {
            api.demo_no_refs = Some(c_string(format!(
                "{}'s '{key}' holds {values} values: not whole samples of {per_sample} for a prediction of batch \
                 {batch}",
                bind::PREDICT_FILE
            )));
            return Ok(());
        }
        let n = values / per_sample / batch;
        chunks = Some(chunks.map_or(n, |c| c.min(n)));
        let vals = data.to_f32().unwrap_or_default();
        let array = c_ident("demoRef_", k);
        let lits: Vec<String> = vals.iter().map(|v| c::f32_lit(*v)).collect();
        api.demo_arrays.push(DataArray { ctype: "float".into(), name: array.clone(), lines: c::lines(&lits, 8) });
        api.demo_refs.push(DemoRef { output: k, name_lit: c_string(key), array, values: per_chunk });
    }
    api.demo_chunks = chunks.unwrap_or(0);
    api.demo_expected = api.demo_refs.iter().map(|r| r.values).sum::<u64>() * api.demo_chunks;
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
