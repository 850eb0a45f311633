//! The tiler: per node with a tile rule (`OpDef::tile`, see
//! `ops::tile`), the tile shape, count and buffering that fit the L1
//! budget, chosen by a cost model.
//!
//! Candidates. Let the space's split axes be tried one at a time: for
//! axis `k`, a tile is 1 long on the split axes before `k` (whole on the
//! others), `L` long on `k`, and whole on the axes after it, so every
//! operand part is a few contiguous runs. For each `k`, `L` is the
//! largest length whose L1 buffers fit with double buffering of every
//! streamed operand, and the largest that fits single-buffered; each is
//! then evened out (`ceil(dim / ceil(dim / L))`, the same tile count with
//! less L1).
//!
//! Cost (bytes-equivalent; the lowest wins, ties to fewer tiles):
//! ```text
//! cost = bytes L2<->L1 + 4 x bytes L3<->L2      (halo re-reads included)
//!      + 64 x DMA commands                       (programming the engine)
//!      + 1024 x kernel calls                     (team fork and barrier)
//!      + bytes L2<->L1, when single-buffered     (transfers not hidden
//!                                                 behind the kernel)
//! ```
//! Whole operands (weights, per-channel parameters, scalars) are loaded
//! once per node and count once.

use serde::Serialize;

use crate::ir::{Graph, Model, Node, TensorId};
use crate::ops::kernel::{numel, KernelCtx};
use crate::ops::tile::{Part, Space, TileMap, TileRule};
use crate::ops::{self};

use super::buffers::Access;

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
    pub buffer: usize,
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
    pub double: bool,
    /// Per operand: whole (loaded once) and the largest tile's bytes.
    pub whole: Vec<bool>,
    pub tile_bytes: Vec<u64>,
    pub tiles: Vec<Tile>,
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
    fn boxes(&self, rule: &TileRule, start: &[usize], len: &[usize]) -> Result<(Vec<Part>, Vec<DmaBox>), String> {
        let ctx = self.ctx();
        let map: TileMap = (rule.map)(&ctx, start, len).map_err(|e| e.to_string())?;
        let mut parts = vec![];
        let mut boxes = vec![];
        for o in &self.operands {
            let mut part: Option<&Part> = None;
            for (slot, _) in &o.slots {
                let list = if slot.output { &map.outputs } else { &map.inputs };
                let p = list.get(slot.index).and_then(Option::as_ref).ok_or_else(|| {
                    format!(
                        "the tile rule gives {} {} no part",
                        if slot.output { "output" } else { "input" },
                        slot.index
                    )
                })?;
                if part.is_some_and(|q| q != p) {
                    return Err("one buffer is read as two different parts".into());
                }
                part = Some(p);
            }
            let (_, t) = o.slots[0];
            let ty = &self.graph.tensor(t).ty;
            let shape = ty.shape().ok_or("an operand has no static shape")?;
            let elem = ty.dtype.size().ok_or("an operand has no element size")? as u64;
            let p = part.ok_or("an operand has no slot")?.clone();
            boxes.push(dma_box(&p, &shape, elem).ok_or("a part needs more than three levels of runs")?);
            parts.push(p);
        }
        Ok((parts, boxes))
    }
}

/// The tile box of candidate (axis `k`, length `l`) at position `i` of
/// `k` and index `outer` over the split axes before `k`.
fn candidate_box(space: &Space, k: usize, l: usize, i: usize, outer: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let r = space.dims.len();
    let mut start = vec![0; r];
    let mut len = space.dims.clone();
    for d in 0..k {
        if space.split[d] {
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

struct Eval {
    l1: u64,
    whole: Vec<bool>,
    tile_bytes: Vec<u64>,
}

/// L1 bytes of candidate (k, l) and whether each operand is whole.
fn eval(n: &NodeIn, rule: &TileRule, space: &Space, k: usize, l: usize, double: bool) -> Result<Eval, String> {
    let count = space.dims[k].div_ceil(l);
    let zero = vec![0; space.dims.len()];
    let mut whole = vec![true; n.operands.len()];
    let mut max = vec![0u64; n.operands.len()];
    for i in samples(count) {
        let (s, ln) = candidate_box(space, k, l, i, &zero);
        let (parts, boxes) = n.boxes(rule, &s, &ln)?;
        for (j, (p, b)) in parts.iter().zip(&boxes).enumerate() {
            whole[j] &= *p == Part::Whole || b.bytes() == n.full_bytes(j);
            max[j] = max[j].max(b.bytes());
        }
    }
    let tiles = outer_count(space, k) * count as u64;
    let factor = if double && tiles > 1 { 2 } else { 1 };
    let l1 = n.aligned(n.scratch)
        + whole.iter().zip(&max).map(|(w, b)| n.aligned(*b) * if *w { 1 } else { factor }).sum::<u64>();
    Ok(Eval { l1, whole, tile_bytes: max })
}

fn outer_count(space: &Space, k: usize) -> u64 {
    (0..k).filter(|&d| space.split[d]).map(|d| space.dims[d] as u64).product()
}

/// Largest length on axis `k` that fits, by bisection (L1 bytes grow with
/// the length for every rule here).
fn largest_fit(n: &NodeIn, rule: &TileRule, space: &Space, k: usize, double: bool) -> Option<usize> {
    let fits = |l: usize| eval(n, rule, space, k, l, double).is_ok_and(|e| e.l1 <= n.budget);
    let (mut lo, mut hi) = (1usize, space.dims[k]);
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

/// Every tile of candidate (k, l), in loop order (outer axes, then k).
fn all_tiles(n: &NodeIn, rule: &TileRule, space: &Space, k: usize, l: usize) -> Result<Vec<Tile>, String> {
    let count = space.dims[k].div_ceil(l);
    let outer: Vec<usize> = (0..k).filter(|&d| space.split[d]).collect();
    let total = outer_count(space, k) as usize * count;
    let mut tiles = Vec::with_capacity(total);
    let mut idx = vec![0usize; space.dims.len()];
    loop {
        for i in 0..count {
            let (s, ln) = candidate_box(space, k, l, i, &idx);
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
            let dirs = match access[j] {
                Access::ReadWrite => 2,
                _ => 1,
            };
            bytes += dirs * b.bytes();
            cmds += dirs * b.commands();
        }
    }
    (bytes, cmds)
}

fn cost(bytes: u64, cmds: u64, tiles: u64, double: bool) -> u64 {
    bytes + 64 * cmds + 1024 * tiles + if double { 0 } else { bytes }
}

/// Choose the tiling of one node, or say why it runs untiled.
pub fn choose(n: &NodeIn) -> Result<Choice, String> {
    let def = ops::of(n.node);
    let rule = def.tile.ok_or_else(|| format!("operator {} has no tile rule", n.node.op))?;
    if def.kernel.is_none() {
        return Err("no kernel binding".into());
    }
    let space = match (rule.space)(&n.ctx()) {
        Ok(Ok(s)) => s,
        Ok(Err(why)) => return Err(why),
        Err(e) => return Err(e.to_string()),
    };
    if space.dims.contains(&0) || space.dims.is_empty() {
        return Err("empty iteration space".into());
    }
    let access: Vec<Access> = n.operands.iter().map(|o| o.access).collect();
    let mut best: Option<(u64, u64, usize, usize, bool, Eval)> = None;
    let mut candidates = 0;
    for k in (0..space.dims.len()).filter(|&d| space.split[d]) {
        for double in [true, false] {
            let Some(lmax) = largest_fit(n, &rule, &space, k, double) else { continue };
            let count = space.dims[k].div_ceil(lmax);
            let l = space.dims[k].div_ceil(count);
            let tiles = outer_count(&space, k) * count as u64;
            if tiles > MAX_TILES {
                continue;
            }
            let double = double && tiles > 1;
            let Ok(e) = eval(n, &rule, &space, k, l, double) else { continue };
            // Estimate traffic from the sampled sizes: tiles x largest.
            let per: u64 = e
                .tile_bytes
                .iter()
                .zip(&e.whole)
                .zip(&access)
                .map(|((b, w), a)| {
                    let dirs = if *a == Access::ReadWrite { 2 } else { 1 };
                    if *w {
                        0
                    } else {
                        dirs * b
                    }
                })
                .sum();
            let once: u64 = e.tile_bytes.iter().zip(&e.whole).filter(|(_, w)| **w).map(|(b, _)| *b).sum();
            let bytes = per * tiles + once;
            let cmds = tiles * n.operands.len() as u64;
            let c = cost(bytes, cmds, tiles, double);
            candidates += 1;
            if best.as_ref().is_none_or(|b| (c, tiles) < (b.0, b.1)) {
                best = Some((c, tiles, k, l, double, e));
            }
        }
    }
    let Some((_, _, k, l, double, e)) = best else {
        return Err(format!(
            "no tile fits L1's {} B budget (the whole operands and one row of the rest do not fit)",
            super::thousands(n.budget)
        ));
    };
    let tiles = all_tiles(n, &rule, &space, k, l)?;
    let (bytes, cmds) = traffic(&tiles, &e.whole, &access);
    let c = cost(bytes, cmds, tiles.len() as u64, double);
    let (s0, tile) = candidate_box(&space, k, l, 0, &vec![0; space.dims.len()]);
    debug_assert!(s0.iter().all(|&x| x == 0));
    let why = format!(
        "split axis {k} of {:?} in {} (of {candidates} fitting candidates, cost {c}: {} B L2<->L1 in {cmds} DMA commands, {} kernel calls){}",
        space.dims,
        l,
        bytes,
        tiles.len(),
        if tiles.len() > 1 && !double { "; single-buffered: double buffers do not fit" } else { "" }
    );
    Ok(Choice {
        space: space.dims.clone(),
        tile,
        double,
        whole: e.whole,
        tile_bytes: e.tile_bytes,
        tiles,
        cost: c,
        candidates,
        why,
    })
}

/// Independent check of a tiled node: the tiles cover the space exactly
/// once (a grid: per axis, the tiles' intervals partition the axis, and
/// every combination occurs once), every tile's part fits its L1 buffer
/// (and L2 stage), double buffers are two distinct buffers.
pub fn verify(name: &str, t: &super::Tiling, buffers: &[super::Buffer]) -> Result<(), String> {
    let err = |m: String| Err(format!("node '{name}': {m}"));
    let r = t.space.len();
    if t.tiles.len() != t.count as usize || t.tiles.is_empty() {
        return err(format!("records {} tiles but has {}", t.count, t.tiles.len()));
    }
    let mut intervals: Vec<Vec<(usize, usize)>> = vec![vec![]; r];
    for tile in &t.tiles {
        for (d, iv) in intervals.iter_mut().enumerate() {
            if tile.len[d] == 0 || tile.start[d] + tile.len[d] > t.space[d] {
                return err(format!("tile {:?}+{:?} leaves the space {:?}", tile.start, tile.len, t.space));
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
                return err(format!("axis {d}: the tiles' intervals do not partition 0..{}", t.space[d]));
            }
            at = s + l;
        }
        if at != t.space[d] {
            return err(format!("axis {d}: the tiles stop at {at} of {}", t.space[d]));
        }
    }
    let cells: usize = intervals.iter().map(Vec::len).product();
    let distinct: std::collections::HashSet<&Vec<usize>> = t.tiles.iter().map(|x| &x.start).collect();
    if distinct.len() != t.tiles.len() || cells != t.tiles.len() {
        return err(format!("{} tiles do not cover the {cells} cells of the grid exactly once", t.tiles.len()));
    }
    for (j, o) in t.operands.iter().enumerate() {
        let what = &buffers[o.buffer].name;
        let want = if o.whole || t.count == 1 || !t.double_buffered { 1 } else { 2 };
        if o.l1.len() != want || (want == 2 && o.l1[0] == o.l1[1]) {
            return err(format!("'{what}' has {} L1 buffers where its buffering needs {want} distinct", o.l1.len()));
        }
        let stages = if o.home == crate::target::Level::L3 { o.l1.len() } else { 0 };
        if o.l2_stage.len() != stages {
            return err(format!("'{what}' in {} has {} L2 stages, needs {stages}", o.home, o.l2_stage.len()));
        }
        for tile in &t.tiles {
            let bytes = tile.boxes[j].bytes();
            for &b in o.l1.iter().chain(&o.l2_stage) {
                if buffers[b].size < bytes {
                    return err(format!(
                        "a tile of '{what}' needs {bytes} B, its buffer '{}' has {}",
                        buffers[b].name, buffers[b].size
                    ));
                }
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
