//! Levels: where each buffer lives, and why; and the execution model of
//! docs/architecture.md ("Execution: tiling through L1"), node by node.
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

use crate::ir::DType;

use super::buffers::{Access, BufId, Buffer, Buffers, GraphSel, Kind, Step, Value};
use super::tile::{Choice, OperandIn, Slot, Tile, Untiled};
use crate::ir::OpId;
use crate::ops::{self, Update};
use crate::target::{Level, Platform};

/// Give every discovered buffer its level under the default, with the
/// rule that put it there.
pub fn initial(buffers: &mut Buffers, default: Level) {
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
    /// How the node runs in L1 tiles, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiling: Option<Tiling>,
    /// Why a node that runs code is not tiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untiled: Option<Untiled>,
}

/// Bytes a node moves between levels, per direction.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Moved {
    pub l3_to_l2: u64,
    pub l2_to_l1: u64,
    pub l1_to_l2: u64,
    pub l2_to_l3: u64,
}

/// One distinct buffer of a tiled node.
#[derive(Clone, Debug, Serialize)]
pub struct TiledOperand {
    pub buffer: BufId,
    pub access: Access,
    pub home: Level,
    pub slots: Vec<Slot>,
    /// The same part in every tile: loaded once (and written back once).
    pub whole: bool,
    /// Two L1 buffers, the tiles alternating (else one).
    pub double: bool,
    /// L1 buffers: two when double-buffered, the tiles alternating.
    pub l1: Vec<BufId>,
    /// L2 buffers an L3 operand's tiles pass through, one per L1 buffer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub l2_stage: Vec<BufId>,
    /// Bytes of the largest tile.
    pub tile_bytes: u64,
}

impl Tiling {
    /// How the streamed operands are buffered: "double", "single" or
    /// "mixed" (some double, the others single).
    pub fn buffering(&self) -> &'static str {
        let streamed: Vec<bool> = self.operands.iter().filter(|o| !o.whole).map(|o| o.double).collect();
        if streamed.iter().all(|d| *d) && !streamed.is_empty() {
            "double"
        } else if streamed.iter().any(|d| *d) {
            "mixed"
        } else {
            "single"
        }
    }
}

/// A tiled node: the loop over tiles the emitter writes.
#[derive(Clone, Debug, Serialize)]
pub struct Tiling {
    pub space: Vec<usize>,
    /// Shape of the first tile (edge tiles may be shorter).
    pub tile: Vec<usize>,
    pub count: u32,
    /// Some operand is double-buffered.
    pub double_buffered: bool,
    pub operands: Vec<TiledOperand>,
    pub moved: Moved,
    pub dma_commands: u64,
    /// L1 bytes the node's tile buffers and scratch take.
    pub l1_bytes: u64,
    pub cost: u64,
    pub why: String,
    /// Every tile's box of the space and its operands' runs, shared with
    /// the tiler's choice (each planning attempt would copy them).
    #[serde(skip)]
    pub tiles: std::sync::Arc<[Tile]>,
}

fn per_node(
    buffers: &mut Buffers,
    step: &Step,
    kind: Kind,
    level: Level,
    bytes: u64,
    align: u64,
    of: Option<BufId>,
) -> BufId {
    let (name, value) = match of {
        Some(b) => {
            let src = &buffers[b];
            (format!("{}@{}", src.name, step.index), Value { bytes, dtype: src.dtype, shape: src.shape.clone() })
        }
        None => (format!("scratch@{}", step.index), Value { bytes, dtype: DType::U8, shape: vec![bytes as usize] }),
    };
    push_per_node(buffers, step, (kind, level), value, align, of, name)
}

/// Adds a per-node buffer (its level's reason is the node: see
/// [`Buffer::level_reason`]).
fn push_per_node(
    buffers: &mut Buffers,
    step: &Step,
    (kind, level): (Kind, Level),
    value: Value,
    align: u64,
    of: Option<BufId>,
    name: String,
) -> BufId {
    let id = buffers.next_id();
    let buf = Buffer::new(id, name, kind, value, align, (step.index, step.index), false);
    buffers.push(Buffer { graph: step.graph, level, step: Some(step.index), copy_of: of, ..buf });
    id
}

/// Add the per-node buffers (staging, L1 copies, scratch) to `buffers`,
/// which must hold only the discovered ones, and say how each node runs.
pub fn derive(buffers: &mut Buffers, steps: &[Step], platform: &Platform, choices: &[Tiler]) -> Vec<NodePlan> {
    let align = platform.alignment.max(1);
    let l1_budget = platform.budget(Level::L1);
    let aligned = |b: u64| b.div_ceil(align) * align;
    let mut nodes = Vec::with_capacity(steps.len());
    buffers.reserve_exact(per_node_bound(buffers, steps, choices));
    for (step_no, step) in steps.iter().enumerate() {
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
                tiling: None,
                untiled: None,
            });
            continue;
        }
        let (choice, operands_in) = &choices[step_no];
        if let Some(Ok(c)) = choice {
            nodes.push(tiled(buffers, step, c, operands_in, align));
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
            tiling: None,
            untiled: choices[step_no].0.as_ref().and_then(|c| c.as_ref().err().cloned()),
        });
    }
    nodes
}

/// At most how many buffers [`derive`] adds: a staging or L1 copy per
/// operand, the tile buffers (two when double-buffered, and their L2 stages
/// for an L3 operand) and the scratch.
fn per_node_bound(buffers: &Buffers, steps: &[Step], choices: &[Tiler]) -> usize {
    let per_step = |(step, (choice, ops)): (&Step, &Tiler)| {
        let scratch = usize::from(step.scratch_bytes > 0);
        match choice {
            _ if step.alias_only => 0,
            Some(Ok(c)) => {
                let tile_bufs = |(j, o): (usize, &OperandIn)| {
                    let stages = if buffers[o.buffer].level == Level::L3 { 2 } else { 1 };
                    stages * if c.double[j] { 2 } else { 1 }
                };
                scratch + ops.iter().enumerate().map(tile_bufs).sum::<usize>()
            }
            _ => scratch + step.operands.len(),
        }
    };
    steps.iter().zip(choices).map(per_step).sum()
}

/// The tiler's answer for a step (`None`: tiling off) and its operands.
pub type Tiler = (Option<Result<Choice, Untiled>>, Vec<OperandIn>);

/// A tile buffer of a node: L1 (or an L2 stage) for one operand.
fn tile_buffer(buffers: &mut Buffers, step: &Step, of: BufId, kind: Kind, bytes: u64, k: usize, align: u64) -> BufId {
    let level = if kind == Kind::Staging { Level::L2 } else { Level::L1 };
    let tag = if kind == Kind::Staging { "s" } else { "t" };
    let name = format!("{}@{}.{tag}{k}", buffers[of].name, step.index);
    let value = Value { bytes, dtype: DType::U8, shape: vec![bytes as usize] };
    push_per_node(buffers, step, (kind, level), value, align, Some(of), name)
}

/// The per-node buffers and the record of a tiled node.
fn tiled(buffers: &mut Buffers, step: &Step, c: &Choice, ops: &[OperandIn], align: u64) -> NodePlan {
    let count = c.tiles.len();
    let mut operands = vec![];
    let mut tiled_ops = vec![];
    let mut moved = Moved::default();
    let mut l1_bytes = 0;
    for (j, o) in ops.iter().enumerate() {
        let home = buffers[o.buffer].level;
        let whole = c.whole[j];
        let n = if c.double[j] { 2 } else { 1 };
        let bytes = c.tile_bytes[j].max(1);
        let l1: Vec<BufId> =
            (0..n).map(|k| tile_buffer(buffers, step, o.buffer, Kind::L1Operand, bytes, k, align)).collect();
        l1_bytes += l1.iter().map(|&b| buffers[b].size).sum::<u64>();
        let l2_stage: Vec<BufId> = if home == Level::L3 {
            (0..n).map(|k| tile_buffer(buffers, step, o.buffer, Kind::Staging, bytes, k, align)).collect()
        } else {
            vec![]
        };
        let (mut rd, mut wr) = (0u64, 0u64);
        for (t, tile) in c.tiles.iter().enumerate() {
            if whole && t > 0 {
                break;
            }
            let b = tile.boxes[j].bytes();
            if matches!(o.access, Access::Read | Access::ReadWrite) {
                rd += b;
            }
            if matches!(o.access, Access::Write | Access::ReadWrite) {
                wr += b;
            }
        }
        moved.l2_to_l1 += rd;
        moved.l1_to_l2 += wr;
        if home == Level::L3 {
            moved.l3_to_l2 += rd;
            moved.l2_to_l3 += wr;
        }
        operands.push(Operand {
            buffer: o.buffer,
            access: o.access,
            home,
            at: Level::L1,
            l2_staging: None,
            l1_copy: None,
        });
        tiled_ops.push(TiledOperand {
            buffer: o.buffer,
            access: o.access,
            home,
            slots: o.slots.iter().map(|(s, _)| *s).collect(),
            whole,
            double: c.double[j],
            l1,
            l2_stage,
            tile_bytes: c.tile_bytes[j],
        });
    }
    let scratch = (step.scratch_bytes > 0)
        .then(|| per_node(buffers, step, Kind::Scratch, Level::L1, step.scratch_bytes, align, None));
    l1_bytes += scratch.map_or(0, |s| buffers[s].size);
    let access: Vec<Access> = ops.iter().map(|o| o.access).collect();
    let (_, dma_commands) = super::tile::traffic(&c.tiles, &c.whole, &access);
    NodePlan {
        step: step.index,
        graph: step.graph,
        name: step.name.clone(),
        op: step.op.clone(),
        op_id: step.op_id,
        exec: Some(Level::L1),
        operands,
        scratch,
        tiling: Some(Tiling {
            space: c.space.clone(),
            tile: c.tile.clone(),
            count: count as u32,
            double_buffered: c.double.iter().any(|d| *d),
            operands: tiled_ops,
            moved,
            dma_commands,
            l1_bytes,
            cost: c.cost,
            why: c.why.clone(),
            tiles: c.tiles.clone(),
        }),
        untiled: None,
    }
}
