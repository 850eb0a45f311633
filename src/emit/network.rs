//! The network's code: one block per scheduled node (staging copies
//! around its kernel calls, or the loop over its tiles), the buffer
//! tables (`DeeployNetwork_inputs[]`, …), the optimizer's, and the
//! copies that carry a run's updates to the next.

use petgraph::stable_graph::NodeIndex;

use super::{args, tiled, Copy, Ctx};
use crate::bind;
use crate::error::{Error, Result};
use crate::escape::{self, c_comment, c_string};
use crate::ir::{self, DType, Role};
use crate::ops;
use crate::ops::kernel::{self, Arg};
use crate::plan::{self, Access, BufId, GraphSel};

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
pub struct TableEntry {
    pub expr: String,
    pub bytes: u64,
    pub name: String,
}

/// The network's facts: the training (or inference) graph's file and the optimizer's.
#[derive(Clone, Debug, Default)]
pub struct Network {
    pub l1_arena_bytes: u64,
    pub l2_arena_bytes: u64,
    pub l3_arena_bytes: u64,
    pub inputs: Vec<TableEntry>,
    pub outputs: Vec<TableEntry>,
    pub main_nodes: Vec<NodeCode>,
    /// Each main node's graph node and schedule step, in `main_nodes` order.
    pub main_index: Vec<NodeIndex>,
    pub main_steps: Vec<u32>,
    /// DMA queues of each file's static pool: the most any tiled node uses.
    pub main_queues: usize,
    /// Copies that carry a run's updates into the buffers the next run
    /// reads (an SGD that could not update in place).
    pub commits: Vec<Copy>,
    pub opt_inputs: Vec<TableEntry>,
    pub opt_outputs: Vec<TableEntry>,
    /// Pointer to the learning rate the optimizer kernels read at run
    /// time (`DeeployOptNetwork_learning_rate`); `None` when the rate is
    /// compiled in (the optimizer steps' rates differ, or one reads its
    /// own tensor): `dg_model_set_learning_rate` then says so.
    pub lr_expr: Option<String>,
    /// The initial value (a C float literal) of `DeeployNetwork_learning_rate`,
    /// the float that holds a rate the graph gives as attributes.
    pub lr_value: Option<String>,
    /// Optimizer state (momentum, AdamW's moments and step count), zeroed
    /// at Init: the first step starts from zero.
    pub opt_state: Vec<TableEntry>,
    /// The optimizer state's tensor names, in `opt_state` order.
    pub opt_state_names: Vec<String>,
    pub opt_nodes: Vec<NodeCode>,
    pub opt_queues: usize,
    /// The prediction graph's nodes (`PredictNetwork.c`) and queues.
    pub predict_nodes: Vec<NodeCode>,
    pub predict_queues: usize,
    /// Graph-input names in table order, graph-output names likewise.
    pub input_names: Vec<String>,
    pub output_names: Vec<String>,
}

pub(super) fn build(ctx: &Ctx, binding: Option<&bind::Binding>) -> Result<Network> {
    let (model, plan) = (ctx.model, ctx.plan);
    let mut net = Network {
        l1_arena_bytes: plan.level(plan::Level::L1).arena_bytes,
        l2_arena_bytes: plan.level(plan::Level::L2).arena_bytes,
        l3_arena_bytes: plan.level(plan::Level::L3).arena_bytes,
        ..Default::default()
    };
    for n in plan.nodes.iter().filter(|n| n.exec.is_some()) {
        let code = node_code(ctx, n)?;
        match n.graph {
            GraphSel::Main => {
                net.main_nodes.push(code);
                net.main_index.push(schedule_node(ctx, n)?);
                net.main_steps.push(n.step);
            }
            GraphSel::Optimizer => net.opt_nodes.push(code),
            GraphSel::Predict => net.predict_nodes.push(code),
        }
    }
    net.main_queues = queues(&net.main_nodes);
    net.opt_queues = queues(&net.opt_nodes);
    net.predict_queues = queues(&net.predict_nodes);
    net.commits = commits(ctx);
    let g = &model.graph;
    net.input_names = match binding {
        Some(bd) => bd.slots.iter().map(|s| s.input.clone()).collect(),
        None => g.inputs.iter().filter(|&&t| !g.tensor(t).sequence).map(|&t| g.name_of(t).to_string()).collect(),
    };
    net.output_names = g.outputs.iter().map(|&t| g.name_of(t).to_string()).collect();
    net.inputs = net.input_names.iter().map(|n| entry(ctx, GraphSel::Main, n)).collect::<Result<_>>()?;
    net.outputs = net.output_names.iter().map(|n| entry(ctx, GraphSel::Main, n)).collect::<Result<_>>()?;
    if let Some(og) = &model.optimizer {
        for &t in og.inputs.iter().filter(|&&t| !og.tensor(t).sequence) {
            let n = og.name_of(t);
            let Some(id) = ctx.buffer_of(GraphSel::Optimizer, n) else { continue };
            net.opt_inputs.push(table_entry(ctx, id, n));
            match model.roles.optimizer.get(n) {
                Some(Role::LearningRate) => net.lr_expr = Some(ctx.expr(id)),
                Some(Role::OptimizerState) => {
                    net.opt_state.push(table_entry(ctx, id, n));
                    net.opt_state_names.push(n.to_string());
                }
                _ => {}
            }
        }
        for &t in &og.outputs {
            let n = og.name_of(t);
            if let Some(id) = ctx.buffer_of(GraphSel::Optimizer, n) {
                net.opt_outputs.push(table_entry(ctx, id, n));
            }
        }
    }
    if let Some(r) = &ctx.rate {
        net.lr_expr = Some(r.ptr.clone());
        net.lr_value = Some(crate::c::f32_lit(r.value));
    }
    Ok(net)
}

/// The float every optimizer step reads its rate from, when the graph
/// gives the rate as the steps' attribute.
const RATE_VAR: &str = "DeeployNetwork_learning_rate";

/// The network's run-time learning rate, when the optimizer steps' rate
/// is a compiled-in attribute: every per-parameter step, in the training
/// graph or the optimizer's, has one, and all have the same value. The
/// rate then lives in one float (`DeeployNetwork_learning_rate`, that
/// value at start) every step's kernel reads. `None` when there is no
/// step, when the optimizer takes the rate as a graph input (its buffer
/// is the rate), or when a step reads its own tensor or the steps' rates
/// differ (the rate is compiled in; the model API says it cannot change).
pub(super) fn run_time_rate(ctx: &Ctx) -> Option<kernel::Rate> {
    let model = ctx.model;
    let mut graphs = vec![&model.graph];
    graphs.extend(model.optimizer.as_ref());
    let mut value: Option<f32> = None;
    for g in graphs {
        for (_, n) in g.nodes() {
            match ops::fixed_rate(n) {
                None => {}
                Some(Some(lr)) if value.is_none_or(|v| v.to_bits() == lr.to_bits()) => value = Some(lr),
                Some(_) => return None,
            }
        }
    }
    if model.roles.optimizer.values().any(|r| *r == Role::LearningRate) {
        return None;
    }
    value.map(|value| kernel::Rate { value, ptr: format!("&{RATE_VAR}") })
}

fn table_entry(ctx: &Ctx, id: BufId, name: &str) -> TableEntry {
    TableEntry { expr: ctx.expr(id), bytes: ctx.plan.buffers[id].bytes, name: c_comment(name) }
}

/// A graph input's or output's table entry.
fn entry(ctx: &Ctx, sel: GraphSel, name: &str) -> Result<TableEntry> {
    let id = ctx.buffer_of(sel, name).ok_or_else(|| {
        Error::plan(format!("tensor '{name}' is a graph input or output but the memory plan gives it no buffer"))
    })?;
    Ok(table_entry(ctx, id, name))
}

/// Updates an SGD could not write in place go back after the run.
fn commits(ctx: &Ctx) -> Vec<Copy> {
    let mut out = vec![];
    for p in &ctx.model.roles.params {
        let (Some(w), Some(up)) = (ctx.buffer_of(GraphSel::Main, &p.name), p.updated.as_deref()) else { continue };
        match ctx.buffer_of(GraphSel::Main, up) {
            Some(u) if u != w => out.push(Copy {
                dst: ctx.expr(w),
                src: ctx.expr(u),
                bytes: ctx.plan.buffers[w].bytes,
                what: c_comment(&format!("{} <- {}", p.name, up)),
            }),
            _ => {}
        }
    }
    out
}

/// `DG_DUMP` of the node's f32 outputs, at their home buffers.
fn dumps(ctx: &Ctx, n: &plan::NodePlan, g: &ir::Graph, node: &ir::Node) -> Vec<Dump> {
    node.outputs
        .iter()
        .flatten()
        .filter_map(|&t| {
            let b = ctx.buffer_of(n.graph, g.name_of(t))?;
            let buf = &ctx.plan.buffers[b];
            (buf.dtype == DType::F32).then(|| Dump {
                name: c_string(g.name_of(t)),
                ptr: ctx.expr(b),
                numel: buf.bytes / 4,
            })
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
    let ni = schedule_node(ctx, n)?;
    let node = g.node(ni);
    let binding = kernel_binding(node)?;
    if let Some(t) = &n.tiling {
        return tiled_node_code(ctx, n, t, node, binding);
    }
    let ptr = |t: Option<ir::TensorId>| -> Option<String> {
        let t = t?;
        if g.tensor(t).sequence {
            return None;
        }
        ctx.buffer_of(n.graph, g.name_of(t)).map(|id| operand_at(ctx, n, id))
    };
    let inputs: Vec<Option<String>> = node.inputs.iter().map(|t| ptr(*t)).collect();
    let outputs: Vec<Option<String>> = node.outputs.iter().map(|t| ptr(*t)).collect();
    let scratch = n.scratch.map(|s| ctx.expr(s));
    let members = sequence_members(ctx, n, node)?;
    let kctx = kernel::KernelCtx {
        model: ctx.model,
        graph: g,
        node,
        inputs,
        outputs,
        scratch,
        members,
        tile: None,
        rate: ctx.rate.clone(),
    };
    let kc = kernel::bind(binding, &kctx)?;

    // Operands a call stages for itself are copied around that call; the
    // rest around the node.
    let per_call: Vec<usize> = kc.calls.iter().flat_map(|c| c.stage.iter().copied()).collect();
    let (pre, mut post) = staging_copies(ctx, n, &|b| !per_call.contains(&b.index()));
    let calls = kc.calls.iter().map(|inv| call_code(ctx, n, node, inv)).collect::<Result<_>>()?;
    post.extend(state_copies(ctx, n, g, node, &kc.state_updates));
    let exec = n.exec.map(|l| l.to_string()).unwrap_or_default();
    let dumps = dumps(ctx, n, g, node);
    Ok(NodeCode {
        comment: c_comment(&format!(
            "step {}: {}{} '{}' computes in {}{}",
            n.step,
            node.op,
            fused_note(node),
            node.name,
            exec,
            recomputed_note(node)
        )),
        pre,
        calls,
        post,
        tiled: None,
        dumps,
        profile: profile_args(n, node),
    })
}

/// The operator's kernel binding; an operator without one has no code.
fn kernel_binding(node: &ir::Node) -> Result<kernel::Kernel> {
    ops::of(node).kernel.ok_or_else(|| {
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
    })
}

/// A node the plan tiles through L1: its tile loop, with no staging around it.
fn tiled_node_code(
    ctx: &Ctx,
    n: &plan::NodePlan,
    t: &plan::Tiling,
    node: &ir::Node,
    binding: kernel::Kernel,
) -> Result<NodeCode> {
    let g = ctx.graph(n.graph);
    let code = tiled::tiled_code(ctx, n, t, g, node, binding)?;
    let comment = format!(
        "step {}: {}{} '{}' computes in L1, {} tile(s) of {:?}{}{}",
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
        },
        c_comment(&recomputed_note(node))
    );
    let post = state_copies(ctx, n, g, node, &code.state_updates);
    let dumps = dumps(ctx, n, g, node);
    let profile = profile_args(n, node);
    Ok(NodeCode { comment, pre: vec![], calls: vec![], post, tiled: Some(code), dumps, profile })
}

/// Where the kernel finds buffer `id`: its L1 copy or L2 staging when the
/// plan moves it there, else its home.
fn operand_at(ctx: &Ctx, n: &plan::NodePlan, id: BufId) -> String {
    match n.operands.iter().find(|o| o.buffer == id) {
        Some(o) => match (o.l1_copy, o.l2_staging) {
            (Some(c), _) | (None, Some(c)) => ctx.expr(c),
            _ => ctx.expr(id),
        },
        None => ctx.expr(id),
    }
}

/// Sequence members (the optimizer's params / gradients), by name, when the
/// node reads a sequence.
fn sequence_members(ctx: &Ctx, n: &plan::NodePlan, node: &ir::Node) -> Result<Vec<kernel::Member>> {
    let g = ctx.graph(n.graph);
    let mut members = vec![];
    if !node.inputs.iter().flatten().any(|&t| g.tensor(t).sequence) {
        return Ok(members);
    }
    for p in &ctx.model.roles.params {
        let (Some(w), Some(gb)) = (
            ctx.buffer_of(GraphSel::Main, &p.name),
            p.grad_buffer.as_deref().and_then(|gname| ctx.buffer_of(GraphSel::Main, gname)),
        ) else {
            return Err(Error::node(node, format!("parameter '{}' has no gradient buffer to update it from", p.name)));
        };
        let numel = ctx.plan.buffers[w].bytes / 4;
        members.push(kernel::Member {
            name: p.name.clone(),
            param: operand_at(ctx, n, w),
            grad: operand_at(ctx, n, gb),
            numel: numel as usize,
            stage: vec![w.index(), gb.index()],
        });
    }
    Ok(members)
}

/// The copies in (before) and out (after) for the operands `ids` selects
/// that the plan stages in L1 or L2: in for those read, out for those
/// written.
fn staging_copies(ctx: &Ctx, n: &plan::NodePlan, ids: &dyn Fn(BufId) -> bool) -> (Vec<Copy>, Vec<Copy>) {
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
}

/// One kernel call, with the staging copies of the operands it stages
/// itself.
fn call_code(ctx: &Ctx, n: &plan::NodePlan, node: &ir::Node, inv: &kernel::Invocation) -> Result<CallCode> {
    let (cpre, cpost) = staging_copies(ctx, n, &|b| inv.stage.contains(&b.index()));
    args::check(inv).map_err(|e| Error::node(node, e.to_string()))?;
    Ok(CallCode {
        comment: inv.comment.as_deref().map(c_comment).unwrap_or_default(),
        func: inv.func.clone(),
        args_type: inv.args_type.clone(),
        fields: inv.fields.iter().map(|(n, a)| (n.to_string(), args::c(a))).collect(),
        forked: inv.forked,
        locals: inv.locals.iter().map(|l| (l.ctype.to_string(), l.name.to_string(), elements(&l.values))).collect(),
        pre: cpre,
        post: cpost,
    })
}

/// The graph node a plan step runs.
fn schedule_node(ctx: &Ctx, n: &plan::NodePlan) -> Result<NodeIndex> {
    let base = match n.graph {
        GraphSel::Main => 0,
        GraphSel::Optimizer => ctx.plan.main_steps,
        GraphSel::Predict => ctx.plan.steps - ctx.graph(GraphSel::Predict).schedule.len() as u32,
    };
    ctx.graph(n.graph)
        .schedule
        .get((n.step - base) as usize)
        .copied()
        .ok_or_else(|| Error::plan(format!("plan step {} of node '{}' is not in the schedule", n.step, n.name)))
}

/// `; recomputed: copy of 'node'` after a node the planner added to
/// compute a forward value again for the backward pass.
fn recomputed_note(node: &ir::Node) -> String {
    node.marks.recomputed_from.as_ref().map(|of| format!("; recomputed: copy of '{of}'")).unwrap_or_default()
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
