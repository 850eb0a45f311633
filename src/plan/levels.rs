//! Levels: where each buffer lives, and why; and the execution model of
//! SPEC §4.4, node by node.
//!
//! Rules:
//! 1. Graph I/O, weights, gradient buffers and optimizer inputs live at the
//!    default level, unless capacity forces them to L3
//!    (see `Planner::relieve` in mod.rs: the buffers that save most L2 per
//!    node touching them move first).
//! 2. Activations and gradients live in the arena of the default level.
//! 3. Cluster cores cannot address L3: a node that touches an L3 buffer
//!    reads it into an L2 staging buffer first and writes it back after.
//!    Staging buffers live for that node's step.
//! 4. A node whose operands and scratch all fit the L1 budget computes on
//!    L1 copies of them (L3 operands are copied L3 <-> L1 by the copy
//!    helper); otherwise it computes from L2 and only its scratch goes to
//!    L1, when it fits.
//! 5. Shape-only nodes that alias their input run no code and touch nothing.

use serde::Serialize;

use super::buffers::{Access, BufId, Buffer, GraphSel, Kind, Step, Value};
use crate::ir::OpId;
use crate::ops::{self, Update};
use crate::target::{Level, Platform};

/// Give every discovered buffer its level under the default, with the
/// rule that put it there.
pub fn initial(buffers: &mut [Buffer], default: Level) {
    for b in buffers.iter_mut() {
        let reason = match b.kind {
            Kind::Input | Kind::Output | Kind::OptimizerInput => {
                format!("graph I/O at the default level {default}")
            }
            Kind::Param | Kind::Frozen | Kind::Constant => {
                format!("weight at the default level {default}")
            }
            Kind::GradBuffer => format!("gradient buffer at the default level {default}"),
            Kind::Activation | Kind::Gradient => format!("in the {default} arena (default level)"),
            Kind::Static => {
                b.level_reason = format!("static buffer at its preferred level {}", b.level);
                continue;
            }
            Kind::Scratch | Kind::Staging | Kind::L1Operand => continue,
        };
        b.level = default;
        b.level_reason = reason;
    }
}

/// One operand of a node as the kernel sees it.
#[derive(Clone, Debug, Serialize)]
pub struct Operand {
    pub buffer: BufId,
    pub access: Access,
    /// Where the buffer lives.
    pub home: Level,
    /// Where the kernel reads / writes it.
    pub at: Level,
    /// The L2 staging buffer of an L3 operand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_staging: Option<BufId>,
    /// The L1 copy, when the node computes in L1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l1_copy: Option<BufId>,
}

/// How one scheduled node runs.
#[derive(Clone, Debug, Serialize)]
pub struct NodePlan {
    pub step: u32,
    pub graph: GraphSel,
    pub name: String,
    pub op: String,
    /// The operator's registry handle.
    #[serde(skip)]
    pub op_id: OpId,
    /// Level the kernel computes in; `None` for a shape-only alias (no code).
    pub exec: Option<Level>,
    pub operands: Vec<Operand>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scratch: Option<BufId>,
}

fn per_node(
    buffers: &mut Vec<Buffer>,
    step: &Step,
    kind: Kind,
    level: Level,
    bytes: u64,
    align: u64,
    of: Option<BufId>,
) -> BufId {
    let id = buffers.len();
    let (name, dtype, shape, reason) = match of {
        Some(b) => {
            let src = &buffers[b];
            let what = if kind == Kind::Staging { "L2 staging of" } else { "L1 copy of" };
            (
                format!("{}@{}", src.name, step.index),
                src.dtype.clone(),
                src.shape.clone(),
                format!("{what} '{}' for node '{}' ({})", src.name, step.name, step.op),
            )
        }
        None => (
            format!("scratch@{}", step.index),
            "u8".to_string(),
            vec![bytes as usize],
            format!("kernel scratch of node '{}' ({})", step.name, step.op),
        ),
    };
    let buf = Buffer::new(id, name, kind, Value { bytes, dtype, shape }, align, (step.index, step.index), false);
    buffers.push(Buffer { graph: step.graph, level, level_reason: reason, step: Some(step.index), copy_of: of, ..buf });
    id
}

/// Add the per-node buffers (staging, L1 copies, scratch) to `buffers`,
/// which must hold only the discovered ones, and say how each node runs.
pub fn derive(buffers: &mut Vec<Buffer>, steps: &[Step], platform: &Platform) -> Vec<NodePlan> {
    let align = platform.alignment.max(1);
    let l1_budget = platform.budget(Level::L1);
    let aligned = |b: u64| b.div_ceil(align) * align;
    let mut nodes = Vec::with_capacity(steps.len());
    for step in steps {
        if step.alias_only {
            nodes.push(NodePlan {
                step: step.index,
                graph: step.graph,
                name: step.name.clone(),
                op: step.op.clone(),
                op_id: step.op_id,
                exec: None,
                operands: vec![],
                scratch: None,
            });
            continue;
        }
        // SGDOptimizerV2 walks its parameters one at a time: one shared
        // copy per operand kind (parameter, gradient), sized for the
        // largest, instead of one per parameter.
        let sequence = ops::def(step.op_id).update == Update::Sequence;
        let looped = |b: &Buffer| sequence && matches!(b.kind, Kind::Param | Kind::GradBuffer);
        let mut loop_max: [u64; 2] = [0, 0];
        let mut operand_bytes = 0u64;
        for &(b, _) in &step.operands {
            let buf = &buffers[b];
            if looped(buf) {
                let k = usize::from(buf.kind == Kind::GradBuffer);
                loop_max[k] = loop_max[k].max(buf.size);
            } else {
                operand_bytes += buf.size;
            }
        }
        operand_bytes += loop_max[0] + loop_max[1];
        let scratch = aligned(step.scratch_bytes);
        let in_l1 = !step.operands.is_empty() && operand_bytes + scratch <= l1_budget;
        let mut shared: [Option<BufId>; 2] = [None, None];
        let mut operands = Vec::with_capacity(step.operands.len());
        for &(b, access) in &step.operands {
            let home = buffers[b].level;
            let is_looped = looped(&buffers[b]);
            let k = usize::from(buffers[b].kind == Kind::GradBuffer);
            let (kind, level) = if in_l1 {
                (Kind::L1Operand, Level::L1)
            } else if home == Level::L3 {
                (Kind::Staging, Level::L2)
            } else {
                operands.push(Operand { buffer: b, access, home, at: home, l2_staging: None, l1_copy: None });
                continue;
            };
            let copy = if is_looped {
                match shared[k] {
                    Some(c) => c,
                    None => {
                        let c = per_node(buffers, step, kind, level, loop_max[k], align, Some(b));
                        buffers[c].name = format!("{}@{}", if k == 0 { "params" } else { "gradients" }, step.index);
                        buffers[c].copy_of = None;
                        buffers[c].level_reason = format!(
                            "{} shared by every {} of node '{}' ({}), which updates one parameter at a time",
                            if in_l1 { "L1 copy" } else { "L2 staging" },
                            if k == 0 { "parameter" } else { "gradient" },
                            step.name,
                            step.op
                        );
                        shared[k] = Some(c);
                        c
                    }
                }
            } else {
                per_node(buffers, step, kind, level, buffers[b].bytes, align, Some(b))
            };
            let (at, l2_staging, l1_copy) =
                if in_l1 { (Level::L1, None, Some(copy)) } else { (Level::L2, Some(copy), None) };
            operands.push(Operand { buffer: b, access, home, at, l2_staging, l1_copy });
        }
        let scratch = (step.scratch_bytes > 0).then(|| {
            let level = if in_l1 || scratch <= l1_budget { Level::L1 } else { Level::L2 };
            per_node(buffers, step, Kind::Scratch, level, step.scratch_bytes, align, None)
        });
        nodes.push(NodePlan {
            step: step.index,
            graph: step.graph,
            name: step.name.clone(),
            op: step.op.clone(),
            op_id: step.op_id,
            exec: Some(if in_l1 { Level::L1 } else { Level::L2 }),
            operands,
            scratch,
        });
    }
    nodes
}
