//! The tiler: per node with a tile rule (`OpDef::tile`, see
//! `ops::tile`), the tile shape, count and buffering that fit the L1
//! budget, chosen by a cost model.
//!
//! Candidates. Let the space's split axes be tried one at a time: for
//! axis `k`, a tile is `L` long on `k` and whole on the axes after it;
//! the split axes before `k` are either 1 long (the tiles loop over them)
//! or whole (one run of tiles along `k` only: a Gemm's column panels over
//! all its rows), so every operand part is a few runs of bytes. For each
//! `k` and each of the two, `L` is the largest length whose L1 buffers
//! fit with double buffering of every streamed operand, and the largest
//! that fits single-buffered; each is then evened out
//! (`ceil(dim / ceil(dim / L))`, the same tile count with less L1). When
//! the largest double-buffered length makes one tile (nothing to overlap),
//! 2, 4 and 8 tiles along `k` are candidates too, so a node that fits L1
//! whole can still hide its transfers behind the kernel.
//!
//! Buffering is per operand: every streamed operand gets two L1 buffers
//! when they all fit; otherwise each starts single and gets a second
//! buffer, read-and-written operands first (two transfers per L1 byte),
//! then the smallest parts, while the node still fits.
//!
//! Cost (bytes-equivalent, about 0.27 cycles each on Siracusa's cluster
//! DMA; the lowest wins, ties to fewer tiles):
//! ```text
//! cost = bytes L2<->L1                           (halo re-reads included)
//!      + 256 x DMA commands                      (programming and waiting)
//!      + 6144 x kernel calls                     (a tile's fixed cost: team
//!                                                 fork and barrier, the
//!                                                 kernel's set-up, the loop)
//!      + bytes L2<->L1 of whole and of           (transfers not hidden
//!        single-buffered operands,                behind the kernel)
//!        and one tile of each double-buffered
//!        operand (the first load, the last store)
//! ```
//! The constants are GVSoC figures (Siracusa, resnet8 at L2): a one-tile
//! Relu costs ~1,800 cycles plus ~0.27 cycles per byte moved, and a Conv
//! in one-output-channel tiles ran at a third of the MAC rate of the same
//! Conv in two tiles (the kernels block 4 output channels and split rows
//! over 8 cores, so a thin tile also leaves cores idle).
//! The choice does not depend on where the operands live (it is made once,
//! before eviction moves buffers to L3): an L3 operand's tiles pass through
//! L2 stages of the same size, so its L3<->L2 bytes follow the same ranking.
//! Whole operands (weights, per-channel parameters, scalars) are loaded
//! once per node and count once.

use std::sync::Arc;

use serde::Serialize;

use crate::error::Error;
use crate::ir::{Graph, Model, Node, TensorId};
use crate::ops::kernel::{numel, KernelCtx};
use crate::ops::tile::{Part, Space, TileMap, TileRefusal, TileRule};
use crate::ops::{self};

use super::buffers::{Access, BufId};
use super::{Buffers, Level, TiledOperand, Tiling};

/// Why a node runs untiled: its operator's rule refuses it, or no tiling
/// of it can be made or fits.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Untiled {
    #[error("operator {0} has no tile rule")]
    NoRule(String),
    #[error("no kernel binding")]
    NoKernel,
    #[error(transparent)]
    Refused(#[from] TileRefusal),
    /// The rule failed on the node (an attribute it cannot read). Shared:
    /// nodes alike get one choice, and the error is not `Clone`.
    #[error("{0}")]
    Rule(Arc<Error>),
    #[error("empty iteration space")]
    EmptySpace,
    #[error("no tile fits L1's {} B budget (the whole operands and one row of the rest do not fit)", super::thousands(*.0))]
    NoFit(u64),
    #[error("the tile rule gives {} {} no part", if .0.output { "output" } else { "input" }, .0.index)]
    NoPart(Slot),
    #[error("one buffer is read as two different parts")]
    TwoParts,
    #[error("an operand has no static shape")]
    NoStaticShape,
    #[error("an operand has no element size")]
    NoElementSize,
    #[error("an operand has no slot")]
    NoSlot,
    #[error("a part needs more than three levels of runs")]
    TooManyRuns,
    /// The step's graph (`optimizer`, `predict`) is not in the model.
    #[error("no {0} graph")]
    NoGraph(&'static str),
    #[error("it takes a sequence operand")]
    Sequence,
    #[error("a slot's buffer is not among its operands")]
    SlotNotOperand,
    #[error("an operand is named by no slot")]
    UnnamedOperand,
}

impl Untiled {
    fn rule(e: Error) -> Self {
        Untiled::Rule(Arc::new(e))
    }
}

/// The plan's JSON keeps the reason as its message.
impl Serialize for Untiled {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What [`verify`] finds wrong with a tiled node.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TileFault {
    #[error("records {recorded} tiles but has {has}")]
    Count { recorded: u32, has: usize },
    #[error("tile {start:?}+{len:?} leaves the space {space:?}")]
    Outside { start: Vec<usize>, len: Vec<usize>, space: Vec<usize> },
    #[error("axis {axis}: the tiles' intervals do not partition 0..{dim}")]
    NoPartition { axis: usize, dim: usize },
    #[error("axis {axis}: the tiles stop at {at} of {dim}")]
    Short { axis: usize, at: usize, dim: usize },
    #[error("{tiles} tiles do not cover the {cells} cells of the grid exactly once")]
    Cover { tiles: usize, cells: usize },
    #[error("'{operand}' has {has} L1 buffers where its buffering needs {needs} distinct")]
    L1Buffers { operand: String, has: usize, needs: usize },
    #[error("'{0}' is double-buffered but loaded once")]
    DoubleOnce(String),
    #[error("'{operand}' in {home} has {has} L2 stages, needs {needs}")]
    Stages { operand: String, home: Level, has: usize, needs: usize },
    #[error("a tile of '{operand}' needs {bytes} B, its buffer '{buffer}' has {size}")]
    Small { operand: String, bytes: u64, buffer: String, size: u64 },
}

/// Largest 1-D DMA command the emitted code issues (the SDK truncates a
/// 1-D copy of 64 KiB or more; 2-D lines must stay below 64 KiB too).
pub const DMA_CHUNK: u64 = 32768;
/// Most bytes in one 2-D command (the engine's 16-bit size field).
pub const DMA_2D_MAX: u64 = 65535;
/// Most tiles a node may have (per-tile tables stay small).
pub const MAX_TILES: u64 = 4096;

/// One operand part as byte runs: `run` contiguous bytes at `off`,
/// repeated `n[0]` times `s[0]` apart, that `n[1]` times `s[1]` apart,
/// that `n[2]` times `s[2]` apart. The L1 side is packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DmaBox {
    pub off: u64,
    pub run: u64,
    pub n: [u64; 3],
    pub s: [u64; 3],
}

impl DmaBox {
    pub fn bytes(&self) -> u64 {
        self.run * self.n[0] * self.n[1] * self.n[2]
    }

    /// Commands the emitted helper issues for this box (L2 <-> L1).
    pub fn commands(&self) -> u64 {
        let (run, n0, s0) = (self.run, self.n[0], self.s[0]);
        let per = if n0 == 1 || s0 == run {
            (run * n0).div_ceil(DMA_CHUNK)
        } else if run <= DMA_2D_MAX {
            n0.div_ceil((DMA_2D_MAX / run).max(1))
        } else {
            n0 * run.div_ceil(DMA_CHUNK)
        };
        per.max(1) * self.n[1] * self.n[2]
    }
}

/// The byte runs of a part of an operand of shape `shape`, elements of
/// `elem` bytes; `None` when it needs more than three levels of runs.
pub fn dma_box(part: &Part, shape: &[usize], elem: u64) -> Option<DmaBox> {
    let total = numel(shape) as u64 * elem;
    let (start, len) = match part {
        Part::Whole => return Some(DmaBox { off: 0, run: total, n: [1; 3], s: [0; 3] }),
        Part::Flat { start, len } => {
            return Some(DmaBox { off: *start as u64 * elem, run: *len as u64 * elem, n: [1; 3], s: [0; 3] })
        }
        Part::Box { start, len } => (start, len),
    };
    let r = shape.len();
    let mut stride = vec![elem; r];
    for d in (0..r.saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * shape[d + 1] as u64;
    }
    let off: u64 = (0..r).map(|d| start[d] as u64 * stride[d]).sum();
    // The innermost axis that is not whole: runs are that axis's slice.
    let k = (0..r).rev().find(|&d| len[d] != shape[d]).unwrap_or(0);
    let run = if r == 0 { elem } else { len[k] as u64 * stride[k] };
    let mut run = run;
    let mut levels: Vec<(u64, u64)> = vec![];
    for d in (0..k).rev() {
        if len[d] == 1 {
            continue;
        }
        let l = len[d] as u64;
        // Merge an axis contiguous with the runs, or with the level inside.
        if levels.is_empty() && stride[d] == run {
            run *= l;
            continue;
        }
        if let Some((n, s)) = levels.last_mut() {
            if stride[d] == *n * *s {
                *n *= l;
                continue;
            }
        }
        levels.push((l, stride[d]));
    }
    if levels.len() > 3 {
        return None;
    }
    let mut b = DmaBox { off, run, n: [1; 3], s: [0; 3] };
    for (i, (n, s)) in levels.into_iter().enumerate() {
        b.n[i] = n;
        b.s[i] = s;
    }
    Some(b)
}

/// How a node slot is named in the plan: input or output, and its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slot {
    pub output: bool,
    pub index: usize,
}

/// One distinct buffer a tiled node touches, as the tiler sees it.
#[derive(Clone, Debug)]
pub struct OperandIn {
    pub buffer: BufId,
    pub access: Access,
    pub slots: Vec<(Slot, TensorId)>,
}

/// One tile: its box of the space and each operand's runs (operand order).
#[derive(Clone, Debug)]
pub struct Tile {
    pub start: Vec<usize>,
    pub len: Vec<usize>,
    pub boxes: Vec<DmaBox>,
}

/// The tiler's choice for a node.
#[derive(Clone, Debug)]
pub struct Choice {
    pub space: Vec<usize>,
    pub tile: Vec<usize>,
    /// Per operand: two L1 buffers, the tiles alternating.
    pub double: Vec<bool>,
    /// Per operand: whole (loaded once) and the largest tile's bytes.
    pub whole: Vec<bool>,
    pub tile_bytes: Vec<u64>,
    pub tiles: std::sync::Arc<[Tile]>,
    pub cost: u64,
    pub candidates: usize,
    pub why: String,
}

/// What the tiler needs to know of one node.
pub struct NodeIn<'a> {
    pub model: &'a Model,
    pub graph: &'a Graph,
    pub node: &'a Node,
    pub operands: Vec<OperandIn>,
    pub budget: u64,
    pub align: u64,
    pub scratch: u64,
}

impl NodeIn<'_> {
    fn ctx(&self) -> KernelCtx<'_> {
        KernelCtx {
            model: self.model,
            graph: self.graph,
            node: self.node,
            inputs: vec![],
            outputs: vec![],
            scratch: None,
            members: vec![],
            tile: None,
            rate: None,
        }
    }

    /// Bytes of operand `j`'s whole tensor.
    fn full_bytes(&self, j: usize) -> u64 {
        let ty = &self.graph.tensor(self.operands[j].slots[0].1).ty;
        ty.bytes().unwrap_or(0) as u64
    }

    fn aligned(&self, b: u64) -> u64 {
        b.div_ceil(self.align) * self.align
    }

    /// Every operand's part and runs for one tile; an error when the rule
    /// gives one buffer two different parts or a part has too many runs.
    fn boxes(&self, rule: &TileRule, start: &[usize], len: &[usize]) -> Result<(Vec<Part>, Vec<DmaBox>), Untiled> {
        let ctx = self.ctx();
        let map: TileMap = (rule.map)(&ctx, start, len).map_err(Untiled::rule)?;
        let mut parts = vec![];
        let mut boxes = vec![];
        for o in &self.operands {
            let mut part: Option<&Part> = None;
            for (slot, _) in &o.slots {
                let list = if slot.output { &map.outputs } else { &map.inputs };
                let p = list.get(slot.index).and_then(Option::as_ref).ok_or(Untiled::NoPart(*slot))?;
                if part.is_some_and(|q| q != p) {
                    return Err(Untiled::TwoParts);
                }
                part = Some(p);
            }
            let (_, t) = o.slots[0];
            let ty = &self.graph.tensor(t).ty;
            let shape = ty.shape().ok_or(Untiled::NoStaticShape)?;
            let elem = ty.dtype.size().ok_or(Untiled::NoElementSize)? as u64;
            let p = part.ok_or(Untiled::NoSlot)?.clone();
            boxes.push(dma_box(&p, &shape, elem).ok_or(Untiled::TooManyRuns)?);
            parts.push(p);
        }
        Ok((parts, boxes))
    }
}

/// A candidate tiling: split axis `k` in tiles of length `l`; the split
/// axes before `k` loop one at a time, or (`outer_whole`) stay whole.
#[derive(Clone, Copy, Debug)]
struct Cand {
    k: usize,
    l: usize,
    outer_whole: bool,
}

/// The tile box of candidate `c` at position `i` of `k` and index `outer`
/// over the split axes before `k`.
fn candidate_box(space: &Space, c: Cand, i: usize, outer: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let (k, l) = (c.k, c.l);
    let r = space.dims.len();
    let mut start = vec![0; r];
    let mut len = space.dims.clone();
    for d in 0..k {
        if space.split[d] && !c.outer_whole {
            start[d] = outer[d];
            len[d] = 1;
        }
    }
    start[k] = i * l;
    len[k] = l.min(space.dims[k] - i * l);
    (start, len)
}

/// Positions along `k` whose tiles are the largest for any rule here
/// (edges clamp halos, the last tile may be short).
fn samples(count: usize) -> Vec<usize> {
    let mut v = vec![0, 1, count / 2, count.saturating_sub(2), count - 1];
    v.retain(|&i| i < count);
    v.sort_unstable();
    v.dedup();
    v
}

/// The parts of a candidate, whatever its buffering.
struct Eval {
    whole: Vec<bool>,
    tile_bytes: Vec<u64>,
    tiles: u64,
}

impl Eval {
    /// L1 bytes with operand `j` double-buffered where `double[j]`.
    fn l1(&self, n: &NodeIn, double: &[bool]) -> u64 {
        let bufs = |j: usize| if double[j] { 2 } else { 1 };
        n.aligned(n.scratch) + self.tile_bytes.iter().enumerate().map(|(j, b)| n.aligned(*b) * bufs(j)).sum::<u64>()
    }

    /// Every streamed operand double-buffered (`all`), or none.
    fn uniform(&self, all: bool) -> Vec<bool> {
        self.whole.iter().map(|w| all && !w && self.tiles > 1).collect()
    }
}

/// Whether each operand of candidate `c` is whole, and its largest part.
fn eval(n: &NodeIn, rule: &TileRule, space: &Space, c: Cand) -> Result<Eval, Untiled> {
    let count = space.dims[c.k].div_ceil(c.l);
    let zero = vec![0; space.dims.len()];
    let mut whole = vec![true; n.operands.len()];
    let mut max = vec![0u64; n.operands.len()];
    for i in samples(count) {
        let (s, ln) = candidate_box(space, c, i, &zero);
        let (parts, boxes) = n.boxes(rule, &s, &ln)?;
        for (j, (p, b)) in parts.iter().zip(&boxes).enumerate() {
            whole[j] &= *p == Part::Whole || b.bytes() == n.full_bytes(j);
            max[j] = max[j].max(b.bytes());
        }
    }
    Ok(Eval { whole, tile_bytes: max, tiles: outer_count(space, c) * count as u64 })
}

/// Tiles of candidate `c` per position along its axis.
fn outer_count(space: &Space, c: Cand) -> u64 {
    if c.outer_whole {
        return 1;
    }
    (0..c.k).filter(|&d| space.split[d]).map(|d| space.dims[d] as u64).product()
}

/// Largest length on axis `c.k` that fits, by bisection (L1 bytes grow
/// with the length for every rule here).
fn largest_fit(n: &NodeIn, rule: &TileRule, space: &Space, c: Cand, double: bool) -> Option<usize> {
    let fits = |l: usize| eval(n, rule, space, Cand { l, ..c }).is_ok_and(|e| e.l1(n, &e.uniform(double)) <= n.budget);
    let (mut lo, mut hi) = (1usize, space.dims[c.k]);
    if !fits(lo) {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// Every tile of candidate `c`, in loop order (outer axes, then `c.k`).
fn all_tiles(n: &NodeIn, rule: &TileRule, space: &Space, c: Cand) -> Result<Vec<Tile>, Untiled> {
    let count = space.dims[c.k].div_ceil(c.l);
    let outer: Vec<usize> = if c.outer_whole { vec![] } else { (0..c.k).filter(|&d| space.split[d]).collect() };
    let total = outer_count(space, c) as usize * count;
    let mut tiles = Vec::with_capacity(total);
    let mut idx = vec![0usize; space.dims.len()];
    loop {
        for i in 0..count {
            let (s, ln) = candidate_box(space, c, i, &idx);
            let (_, boxes) = n.boxes(rule, &s, &ln)?;
            tiles.push(Tile { start: s, len: ln, boxes });
        }
        // Odometer over the outer split axes.
        let mut carry = true;
        for &d in outer.iter().rev() {
            if !carry {
                break;
            }
            idx[d] += 1;
            carry = idx[d] == space.dims[d];
            if carry {
                idx[d] = 0;
            }
        }
        if carry {
            break;
        }
    }
    Ok(tiles)
}

/// Bytes moved L2<->L1 and DMA commands of a tiling (whole operands once).
pub fn traffic(tiles: &[Tile], whole: &[bool], access: &[Access]) -> (u64, u64) {
    let (mut bytes, mut cmds) = (0u64, 0u64);
    for (t, tile) in tiles.iter().enumerate() {
        for (j, b) in tile.boxes.iter().enumerate() {
            if whole[j] && t > 0 {
                continue;
            }
            let dirs = dirs(access[j]);
            bytes += dirs * b.bytes();
            cmds += dirs * b.commands();
        }
    }
    (bytes, cmds)
}

fn dirs(a: Access) -> u64 {
    if a == Access::ReadWrite {
        2
    } else {
        1
    }
}

/// The cost model (see the module comment): `bytes` moved L2<->L1 of
/// which `exposed` by single-buffered operands.
fn cost(bytes: u64, exposed: u64, cmds: u64, tiles: u64) -> u64 {
    bytes + COMMAND_COST * cmds + TILE_COST * tiles + exposed
}

/// The cost of one DMA command, in bytes moved (see the module comment).
const COMMAND_COST: u64 = 256;
/// The fixed cost of one tile's kernel call, in bytes moved.
const TILE_COST: u64 = 6144;

/// The compute part of a node's cost, in bytes moved: its multiply-adds
/// (`OpDef::macs`) at 4/3 each. The cluster's convolution and matrix
/// kernels reach 2.4-3.4 multiply-adds per cycle on GVSoC Siracusa (about
/// 0.36 cycles each), a byte moved costs about 0.27 cycles. The same for
/// every tile choice of a node, so it ranks nothing within the tiler; it
/// weighs a node's work against another's (`plan::recompute`).
pub fn compute_cost(g: &Graph, node: &Node) -> u64 {
    let macs = ops::of(node).macs.and_then(|f| f(g, node)).unwrap_or(0);
    macs.saturating_mul(4) / 3
}

/// Estimated cost of candidate `e` with buffering `double`: tiles times
/// each streamed operand's largest part, whole operands once.
fn estimate(e: &Eval, access: &[Access], double: &[bool]) -> u64 {
    let (mut bytes, mut exposed) = (0u64, 0u64);
    for j in 0..e.whole.len() {
        let b = if e.whole[j] { e.tile_bytes[j] } else { dirs(access[j]) * e.tile_bytes[j] * e.tiles };
        bytes += b;
        if e.whole[j] || !double[j] {
            exposed += b;
        } else {
            exposed += dirs(access[j]) * e.tile_bytes[j];
        }
    }
    cost(bytes, exposed, e.tiles * e.whole.len() as u64, e.tiles)
}

/// Buffering of candidate `e`: every streamed operand double where that
/// fits; else single, then double for operands one by one (read and
/// written first, then the smallest), while they fit.
fn buffering(n: &NodeIn, e: &Eval, access: &[Access]) -> Option<Vec<bool>> {
    let all = e.uniform(true);
    if e.l1(n, &all) <= n.budget {
        return Some(all);
    }
    let mut double = e.uniform(false);
    if e.l1(n, &double) > n.budget {
        return None;
    }
    let mut order: Vec<usize> = (0..double.len()).filter(|&j| all[j]).collect();
    order.sort_by_key(|&j| (std::cmp::Reverse(dirs(access[j])), e.tile_bytes[j], j));
    for j in order {
        double[j] = true;
        if e.l1(n, &double) > n.budget {
            double[j] = false;
        }
    }
    Some(double)
}

/// The fitting candidates of a space: per split axis, outer axes looped
/// or whole, the largest tile length that fits all double-buffered and
/// the largest that fits single-buffered, each evened out.
fn candidates(n: &NodeIn, rule: &TileRule, space: &Space) -> Vec<Cand> {
    let mut out = vec![];
    for k in (0..space.dims.len()).filter(|&d| space.split[d]) {
        let firsts = (0..k).any(|d| space.split[d]);
        for outer_whole in [false, true] {
            if outer_whole && !firsts {
                continue;
            }
            for double in [true, false] {
                let c = Cand { k, l: 1, outer_whole };
                let Some(lmax) = largest_fit(n, rule, space, c, double) else { continue };
                let count = space.dims[k].div_ceil(lmax);
                let mut counts = vec![count];
                if double && count == 1 {
                    counts.extend([2, 4, 8].into_iter().filter(|&t| t <= space.dims[k]));
                }
                for count in counts {
                    let c = Cand { l: space.dims[k].div_ceil(count), ..c };
                    if outer_count(space, c) * space.dims[k].div_ceil(c.l) as u64 <= MAX_TILES
                        && !out.iter().any(|o: &Cand| o.k == c.k && o.l == c.l && o.outer_whole == c.outer_whole)
                    {
                        out.push(c);
                    }
                }
            }
        }
    }
    out
}

/// Choose the tiling of one node, or say why it runs untiled.
pub fn choose(n: &NodeIn) -> Result<Choice, Untiled> {
    let def = ops::of(n.node);
    let rule = def.tile.ok_or_else(|| Untiled::NoRule(n.node.op.clone()))?;
    if def.kernel.is_none() {
        return Err(Untiled::NoKernel);
    }
    let space = (rule.space)(&n.ctx()).map_err(Untiled::rule)??;
    if space.dims.contains(&0) || space.dims.is_empty() {
        return Err(Untiled::EmptySpace);
    }
    let access: Vec<Access> = n.operands.iter().map(|o| o.access).collect();
    let mut best: Option<(u64, u64, Cand, Eval, Vec<bool>)> = None;
    let cands = candidates(n, &rule, &space);
    for &c in &cands {
        let Ok(e) = eval(n, &rule, &space, c) else { continue };
        let Some(double) = buffering(n, &e, &access) else { continue };
        let est = estimate(&e, &access, &double);
        if best.as_ref().is_none_or(|b| (est, e.tiles) < (b.0, b.1)) {
            best = Some((est, e.tiles, c, e, double));
        }
    }
    let Some((_, _, c, e, double)) = best else {
        return Err(Untiled::NoFit(n.budget));
    };
    let tiles = all_tiles(n, &rule, &space, c)?;
    let (bytes, cmds) = traffic(&tiles, &e.whole, &access);
    let exposed = traffic_of(&tiles, &e.whole, &access, |j| e.whole[j] || !double[j])
        + (0..double.len()).filter(|&j| double[j]).map(|j| dirs(access[j]) * e.tile_bytes[j]).sum::<u64>();
    let cost = cost(bytes, exposed, cmds, tiles.len() as u64);
    let (_, tile) = candidate_box(&space, c, 0, &vec![0; space.dims.len()]);
    let singles = (0..double.len()).filter(|&j| !double[j] && !e.whole[j]).count();
    let why = format!(
        "split axis {}{} of {:?} in {} (of {} fitting candidates, cost {cost}: {bytes} B L2<->L1 in {cmds} DMA commands, {} kernel calls){}",
        c.k,
        if c.outer_whole { " over whole outer axes" } else { "" },
        space.dims,
        c.l,
        cands.len(),
        tiles.len(),
        if tiles.len() > 1 && singles > 0 {
            format!("; {singles} operand(s) single-buffered: their double buffers do not fit")
        } else {
            String::new()
        }
    );
    Ok(Choice {
        space: space.dims.clone(),
        tile,
        double,
        whole: e.whole,
        tile_bytes: e.tile_bytes,
        tiles: tiles.into(),
        cost,
        candidates: cands.len(),
        why,
    })
}

/// Bytes moved L2<->L1 by the operands `pick` selects (whole ones once).
fn traffic_of(tiles: &[Tile], whole: &[bool], access: &[Access], pick: impl Fn(usize) -> bool) -> u64 {
    let mut bytes = 0;
    for (t, tile) in tiles.iter().enumerate() {
        for (j, b) in tile.boxes.iter().enumerate() {
            if pick(j) && !(whole[j] && t > 0) {
                bytes += dirs(access[j]) * b.bytes();
            }
        }
    }
    bytes
}

/// Independent check of a tiled node: the tiles cover the space exactly
/// once (a grid: per axis, the tiles' intervals partition the axis, and
/// every combination occurs once), every tile's part fits its L1 buffer
/// (and L2 stage), double buffers are two distinct buffers.
pub fn verify(t: &Tiling, buffers: &Buffers) -> Result<(), TileFault> {
    let r = t.space.len();
    if t.tiles.len() != t.count as usize || t.tiles.is_empty() {
        return Err(TileFault::Count { recorded: t.count, has: t.tiles.len() });
    }
    let mut intervals: Vec<Vec<(usize, usize)>> = vec![vec![]; r];
    for tile in t.tiles.iter() {
        for (d, iv) in intervals.iter_mut().enumerate() {
            if tile.len[d] == 0 || tile.start[d] + tile.len[d] > t.space[d] {
                let (start, len, space) = (tile.start.clone(), tile.len.clone(), t.space.clone());
                return Err(TileFault::Outside { start, len, space });
            }
            iv.push((tile.start[d], tile.len[d]));
        }
    }
    for (d, iv) in intervals.iter_mut().enumerate() {
        iv.sort_unstable();
        iv.dedup();
        let mut at = 0;
        for &(s, l) in iv.iter() {
            if s != at {
                return Err(TileFault::NoPartition { axis: d, dim: t.space[d] });
            }
            at = s + l;
        }
        if at != t.space[d] {
            return Err(TileFault::Short { axis: d, at, dim: t.space[d] });
        }
    }
    let cells: usize = intervals.iter().map(Vec::len).product();
    let distinct: std::collections::HashSet<&Vec<usize>> = t.tiles.iter().map(|x| &x.start).collect();
    if distinct.len() != t.tiles.len() || cells != t.tiles.len() {
        return Err(TileFault::Cover { tiles: t.tiles.len(), cells });
    }
    for (j, o) in t.operands.iter().enumerate() {
        verify_operand(t, j, o, buffers)?;
    }
    Ok(())
}

/// Operand `j` of a tiled node: its buffers, their number and sizes.
fn verify_operand(t: &Tiling, j: usize, o: &TiledOperand, buffers: &Buffers) -> Result<(), TileFault> {
    let operand = || buffers[o.buffer].name.clone();
    let needs = if o.double { 2 } else { 1 };
    if o.l1.len() != needs || (needs == 2 && o.l1[0] == o.l1[1]) {
        return Err(TileFault::L1Buffers { operand: operand(), has: o.l1.len(), needs });
    }
    if o.double && (o.whole || t.count == 1) {
        return Err(TileFault::DoubleOnce(operand()));
    }
    let needs = if o.home == Level::L3 { o.l1.len() } else { 0 };
    if o.l2_stage.len() != needs {
        return Err(TileFault::Stages { operand: operand(), home: o.home, has: o.l2_stage.len(), needs });
    }
    for tile in t.tiles.iter() {
        let bytes = tile.boxes[j].bytes();
        for &b in o.l1.iter().chain(&o.l2_stage) {
            if buffers[b].size < bytes {
                let (buffer, size) = (buffers[b].name.clone(), buffers[b].size);
                return Err(TileFault::Small { operand: operand(), bytes, buffer, size });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_runs_merge_contiguous_axes() {
        // Rows 2..4 of a [4, 8, 8] f32 tensor: one run per channel.
        let p = Part::Box { start: vec![0, 2, 0], len: vec![4, 2, 8] };
        let b = dma_box(&p, &[4, 8, 8], 4).unwrap();
        assert_eq!(b, DmaBox { off: 64, run: 64, n: [4, 1, 1], s: [256, 0, 0] });
        // Batches 1..3 of [4, 8]: one contiguous run.
        let p = Part::Box { start: vec![1, 0], len: vec![2, 8] };
        assert_eq!(dma_box(&p, &[4, 8], 4).unwrap(), DmaBox { off: 32, run: 64, n: [1; 3], s: [0; 3] });
    }

    #[test]
    fn large_runs_split_below_64k() {
        let b = DmaBox { off: 0, run: 200_000, n: [1; 3], s: [0; 3] };
        assert_eq!(b.commands(), 7);
        let b = DmaBox { off: 0, run: 1000, n: [100, 1, 1], s: [4000, 0, 0] };
        assert_eq!(b.commands(), 2);
    }
}
