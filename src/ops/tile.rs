//! Tile rules: how a node's work splits into tiles that each fit L1.
//!
//! A node's *iteration space* is a box of dims (usually its output's
//! shape; a flat element count for pointwise operators), with the axes that
//! may be split. A *tile* is a box of that space (per-axis start and
//! length). The operator's rule maps a tile to the part of every operand
//! it reads or writes — a box of the operand (halo and stride for windows,
//! the broadcast dims of an operand kept at 1), a flat element range, or
//! the whole operand (weights, per-channel parameters, scalars) — plus the
//! attribute values that change per tile (a window's effective top pad on
//! an edge tile).
//!
//! The kernel binding is reused unchanged: the emitter calls it with a
//! [`KernelCtx`] whose shapes are the tile's parts and whose attributes are
//! overridden by the tile's ([`TileView`]), with pointers to the L1 tile
//! buffers. An axis that a kernel reduces over (the normalised axis of a
//! norm, Gemm's K) is never splittable, so no tile needs partial sums.
//!
//! Operators without a rule (`OpDef::tile: None`) run untiled.

use super::kernel::{numel, to_u32, KernelCtx};
use crate::error::Result;
use crate::ir::Attr;

/// The part of one operand a tile touches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// The whole operand, the same for every tile (loaded once).
    Whole,
    /// A box of the operand: per-axis start and length.
    Box { start: Vec<usize>, len: Vec<usize> },
    /// A range of the operand's flattened elements.
    Flat { start: usize, len: usize },
}

impl Part {
    /// Shape the kernel sees for this part of an operand of shape `full`.
    pub fn shape(&self, full: &[usize]) -> Vec<usize> {
        match self {
            Part::Whole => full.to_vec(),
            Part::Box { len, .. } => len.clone(),
            Part::Flat { len, .. } => vec![*len],
        }
    }

    pub fn elems(&self, full: &[usize]) -> usize {
        numel(&self.shape(full))
    }
}

/// A node's iteration space: dims and which axes may be split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Space {
    pub dims: Vec<usize>,
    pub split: Vec<bool>,
}

/// What one tile touches, per input and output slot (`None`: absent, or
/// not read as data), and the attributes that differ for it.
#[derive(Clone, Debug, Default)]
pub struct TileMap {
    pub inputs: Vec<Option<Part>>,
    pub outputs: Vec<Option<Part>>,
    pub attrs: Vec<(String, Attr)>,
    /// A tile after the first of a split the kernel sums over: the binding
    /// sets the kernel's `accumulate`.
    pub accumulate: bool,
}

/// The shapes and attributes a binding sees for one tile.
#[derive(Clone, Debug, Default)]
pub struct TileView {
    pub in_shapes: Vec<Option<Vec<usize>>>,
    pub out_shapes: Vec<Option<Vec<usize>>>,
    pub attrs: Vec<(String, Attr)>,
    /// See [`TileMap::accumulate`].
    pub accumulate: bool,
}

/// Why a tile rule refuses a node: it runs untiled, and the plan says why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TileRefusal {
    #[error("{} {slot} has {elems} elements, input 0 {first}: not pointwise", side(.output))]
    NotPointwise { output: bool, slot: usize, elems: usize, first: usize },
    #[error("the normalised axes span the whole tensor")]
    WholeTensorRows,
    /// A window operator's operand (`output`, `dY`) of another rank.
    #[error("{operand} {shape:?} is not a 1-D or 2-D map")]
    NotAMap { operand: &'static str, shape: Vec<usize> },
    #[error("auto_pad '{0}'")]
    AutoPad(String),
    #[error("a batch of 1 and group {0}: a grouped ConvGrad splits its batch only")]
    GroupedBatchOfOne(i64),
    #[error("Y {0:?} is not a matrix")]
    NotAMatrix(Vec<usize>),
    #[error("A {a:?}, B {b:?}, Y {y:?} have batch dims")]
    BatchDims { a: Vec<usize>, b: Vec<usize>, y: Vec<usize> },
    #[error("C has batch dims")]
    BatchedC,
    #[error("A {a:?} or B {b:?} is 1-D")]
    OneD { a: Vec<usize>, b: Vec<usize> },
    #[error("input {0:?} has no channel axis")]
    NoChannelAxis(Vec<usize>),
    #[error("it outputs running statistics")]
    RunningStats,
    #[error("dScale and dBias sum over every row")]
    ParamGradsSumRows,
    #[error("its indices output counts positions in the whole input")]
    PoolIndices,
    #[error("it reduces no axis (a copy)")]
    ReducesNoAxis,
    #[error("it reduces every axis")]
    ReducesEveryAxis,
    #[error("a scalar")]
    Scalar,
}

fn side(output: &bool) -> &'static str {
    if *output {
        "output"
    } else {
        "input"
    }
}

/// A rule's answer for one node: `T`, or why the node runs untiled.
pub type Tileable<T = Space> = std::result::Result<T, TileRefusal>;

/// The iteration space of a node, or why this node cannot be tiled.
pub type SpaceFn = fn(&KernelCtx) -> Result<Tileable>;
/// A tile (start, len per space axis) → the parts of the operands.
pub type MapFn = fn(&KernelCtx, &[usize], &[usize]) -> Result<TileMap>;

/// An operator's tile rule.
#[derive(Clone, Copy)]
pub struct TileRule {
    pub space: SpaceFn,
    pub map: MapFn,
    /// Output 0 may share input 0's buffer when they have the same size and
    /// input 0 is read by no later node (the plan decides): the kernel reads
    /// each element before it writes the same element, and nothing else.
    pub in_place: bool,
}

impl TileMap {
    /// The binding's view of this tile of `ctx`'s node.
    pub fn view(&self, ctx: &KernelCtx) -> TileView {
        let full_in = |i: usize| ctx.node.input(i).and_then(|t| ctx.graph.tensor(t).ty.shape());
        let full_out = |i: usize| ctx.node.output(i).and_then(|t| ctx.graph.tensor(t).ty.shape());
        TileView {
            in_shapes: (0..ctx.node.inputs.len())
                .map(|i| Some(self.inputs.get(i)?.as_ref()?.shape(&full_in(i)?)))
                .collect(),
            out_shapes: (0..ctx.node.outputs.len())
                .map(|i| Some(self.outputs.get(i)?.as_ref()?.shape(&full_out(i)?)))
                .collect(),
            attrs: self.attrs.clone(),
            accumulate: self.accumulate,
        }
    }
}

// ---- shared rules ---------------------------------------------------------

fn present_inputs(ctx: &KernelCtx) -> Vec<bool> {
    (0..ctx.node.inputs.len()).map(|i| ctx.node.input(i).is_some()).collect()
}

fn out_shape0(ctx: &KernelCtx) -> Result<Vec<usize>> {
    ctx.graph_out_shape(0)
}

/// Elements of a pointwise node: its first input's (an accumulator's
/// first output is a flag).
fn flat_len(ctx: &KernelCtx) -> Result<usize> {
    Ok(numel(&if ctx.node.input(0).is_some() { ctx.graph_in_shape(0)? } else { out_shape0(ctx)? }))
}

/// Pointwise: one flat range of the output; inputs of the output's size
/// take the same range, smaller ones (scalars, rates, flags) stay whole.
pub fn flat_space(ctx: &KernelCtx) -> Result<Tileable> {
    let n = flat_len(ctx)?;
    for i in 0..ctx.node.inputs.len() {
        if ctx.node.input(i).is_some() {
            let m = numel(&ctx.graph_in_shape(i)?);
            if m != n && m != 1 {
                return Ok(Err(TileRefusal::NotPointwise { output: false, slot: i, elems: m, first: n }));
            }
        }
    }
    // Inputs of one size can still broadcast to a larger output
    // ([2, 1] - [1, 2] is [2, 2]).
    for i in 0..ctx.node.outputs.len() {
        if ctx.node.output(i).is_some() {
            let m = numel(&ctx.graph_out_shape(i)?);
            if m != n && m != 1 {
                return Ok(Err(TileRefusal::NotPointwise { output: true, slot: i, elems: m, first: n }));
            }
        }
    }
    Ok(Ok(Space { dims: vec![n], split: vec![true] }))
}

pub fn flat_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let n = flat_len(ctx)?;
    // A single value of any rank is seen as [1] next to the flat range.
    let part = |m: usize| {
        if m == n && n > 1 {
            Part::Flat { start: start[0], len: len[0] }
        } else {
            Part::Flat { start: 0, len: 1 }
        }
    };
    let mut m = TileMap::default();
    for (i, p) in present_inputs(ctx).into_iter().enumerate() {
        m.inputs.push(if p { Some(part(numel(&ctx.graph_in_shape(i)?))) } else { None });
    }
    for i in 0..ctx.node.outputs.len() {
        m.outputs.push(match ctx.node.output(i) {
            Some(_) => Some(part(numel(&ctx.graph_out_shape(i)?))),
            None => None,
        });
    }
    Ok(m)
}

/// The part of an operand of shape `shape` broadcast against a box of the
/// space (right-aligned; a dim of 1 stays whole).
pub fn broadcast_part(shape: &[usize], start: &[usize], len: &[usize]) -> Part {
    let off = start.len().saturating_sub(shape.len());
    let (mut s, mut l) = (vec![0; shape.len()], shape.to_vec());
    for (k, &d) in shape.iter().enumerate() {
        if d != 1 && k + off < start.len() {
            s[k] = start[k + off];
            l[k] = len[k + off];
        }
    }
    if l == shape {
        Part::Whole
    } else {
        Part::Box { start: s, len: l }
    }
}

/// Broadcasting elementwise: the space is the output; every axis splits.
pub fn broadcast_space(ctx: &KernelCtx) -> Result<Tileable> {
    if flat_space(ctx)?.is_ok() {
        return flat_space(ctx);
    }
    let y = out_shape0(ctx)?;
    Ok(Ok(Space { split: vec![true; y.len()], dims: y }))
}

pub fn broadcast_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    if flat_space(ctx)?.is_ok() {
        return flat_map(ctx, start, len);
    }
    let mut m = TileMap::default();
    for (i, p) in present_inputs(ctx).into_iter().enumerate() {
        m.inputs.push(if p { Some(broadcast_part(&ctx.graph_in_shape(i)?, start, len)) } else { None });
    }
    m.outputs.push(Some(broadcast_part(&out_shape0(ctx)?, start, len)));
    Ok(m)
}

/// Row-wise operators (norms, softmax): the axes before `axis` split, the
/// rest is whole in every tile; operands of the input's shape take the
/// tile's rows, the others (scale, bias) stay whole, outputs with size-1
/// normalised axes (statistics) take the rows too.
pub fn rows_space(ctx: &KernelCtx, x_slot: usize, axis: usize) -> Result<Tileable> {
    let x = ctx.graph_in_shape(x_slot)?;
    if axis == 0 {
        return Ok(Err(TileRefusal::WholeTensorRows));
    }
    Ok(Ok(Space { split: (0..x.len()).map(|d| d < axis).collect(), dims: x }))
}

pub fn rows_map(ctx: &KernelCtx, x_slot: usize, axis: usize, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let x = ctx.graph_in_shape(x_slot)?;
    let part = |s: Vec<usize>| {
        if s.len() == x.len() && (0..axis).all(|d| s[d] == x[d]) {
            broadcast_part(&s, start, len)
        } else {
            Part::Whole
        }
    };
    let mut m = TileMap::default();
    for (i, p) in present_inputs(ctx).into_iter().enumerate() {
        m.inputs.push(if p { Some(part(ctx.graph_in_shape(i)?)) } else { None });
    }
    for i in 0..ctx.node.outputs.len() {
        m.outputs.push(match ctx.node.output(i) {
            Some(_) => Some(part(ctx.graph_out_shape(i)?)),
            None => None,
        });
    }
    Ok(m)
}

/// Input rows `[lo, lo+n)` a window of `k` taps (dilation `d`, stride `s`,
/// begin pad `p`) reads for output rows `[o0, o0+ol)` of an input of `h`
/// rows, clamped to the input, and the tile's effective begin pad.
pub fn window_rows(o0: usize, ol: usize, k: usize, s: usize, d: usize, p: usize, h: usize) -> (usize, usize, usize) {
    let first = (o0 * s) as i64 - p as i64;
    let last = ((o0 + ol - 1) * s) as i64 - p as i64 + ((k - 1) * d) as i64;
    let lo = first.clamp(0, h as i64 - 1);
    let hi = (last + 1).clamp(lo + 1, h as i64);
    (lo as usize, (hi - lo) as usize, p.saturating_sub(o0 * s))
}

/// The spatial attributes of a window operator (1-D or 2-D, NCHW).
pub struct WindowAttrs {
    pub kernel: usize,
    pub stride: usize,
    pub dil: usize,
    /// The begin pad of the split axis, and the pads list to override.
    pub pad: usize,
    pub pads: Vec<i64>,
    /// Index of the split axis's begin pad in `pads`.
    pub pad_index: usize,
}

/// Window attributes along the first spatial axis (H, or L for 1-D).
pub fn window_attrs(ctx: &KernelCtx, kernel: &[usize]) -> Result<WindowAttrs> {
    let sp = kernel.len();
    let get = |name: &str, n: usize, dflt: i64| -> Result<Vec<i64>> {
        Ok(ctx.attr_ints(name)?.filter(|v| v.len() == n).unwrap_or_else(|| vec![dflt; n]))
    };
    let strides = get("strides", sp, 1)?;
    let dil = get("dilations", sp, 1)?;
    let pads = get("pads", 2 * sp, 0)?;
    Ok(WindowAttrs {
        kernel: kernel[0],
        stride: to_u32(ctx, "strides", strides[0])?,
        dil: to_u32(ctx, "dilations", dil[0])?,
        pad: to_u32(ctx, "pads", pads[0])?,
        pads,
        pad_index: 0,
    })
}

/// Windows (Conv, pools): the space is the output [N, C, H(, W)]; N, the
/// first spatial axis, and (when `split_c`) the channels split; the input
/// box carries the halo, clamped to the input, and the tile's top pad.
pub fn window_map(ctx: &KernelCtx, kernel: &[usize], split_c: bool, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let x = ctx.graph_in_shape(0)?;
    let w = window_attrs(ctx, kernel)?;
    let (lo, n, pad) = window_rows(start[2], len[2], w.kernel, w.stride, w.dil, w.pad, x[2]);
    let mut xs = vec![0; x.len()];
    let mut xl = x.clone();
    xs[0] = start[0];
    xl[0] = len[0];
    if split_c {
        xs[1] = start[1];
        xl[1] = len[1];
    }
    xs[2] = lo;
    xl[2] = n;
    let mut pads = w.pads.clone();
    pads[w.pad_index] = pad as i64;
    let mut m = TileMap { attrs: vec![("pads".into(), Attr::Ints(pads))], ..Default::default() };
    let xpart = if xl == x { Part::Whole } else { Part::Box { start: xs, len: xl } };
    for (i, p) in present_inputs(ctx).into_iter().enumerate() {
        m.inputs.push(match (p, i) {
            (false, _) => None,
            (true, 0) => Some(xpart.clone()),
            (true, _) => Some(Part::Whole),
        });
    }
    let y = out_shape0(ctx)?;
    m.outputs.push(Some(broadcast_part(&y, start, len)));
    Ok(m)
}

/// Pointwise operators and their gradients, SGD, accumulators.
pub const FLAT: TileRule = TileRule { space: flat_space, map: flat_map, in_place: false };
/// Pointwise operators whose output may overwrite their input (unary
/// activations and their gradients).
pub const POINTWISE: TileRule = TileRule { in_place: true, ..FLAT };
/// Broadcasting elementwise operators (Add, Mul, …): input 0 of the
/// output's shape may be overwritten.
pub const BROADCAST: TileRule = TileRule { space: broadcast_space, map: broadcast_map, in_place: true };

/// Split axes of a window operator's output: N, the first spatial axis,
/// and the channels when `split_c`.
pub fn window_space(ctx: &KernelCtx, split_c: bool) -> Result<Tileable> {
    let y = out_shape0(ctx)?;
    if !(3..=4).contains(&y.len()) {
        return Ok(Err(TileRefusal::NotAMap { operand: "output", shape: y }));
    }
    if let Some(p) = ctx.attr_str("auto_pad")? {
        if p != "NOTSET" && p != "VALID" {
            return Ok(Err(TileRefusal::AutoPad(p)));
        }
    }
    let split = (0..y.len()).map(|d| d == 0 || d == 2 || (d == 1 && split_c)).collect();
    Ok(Ok(Space { dims: y, split }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_rows_clamp_and_pad() {
        // 3 taps, stride 1, pad 1, 8 rows: output rows 0..4 read 0..5, pad 1.
        assert_eq!(window_rows(0, 4, 3, 1, 1, 1, 8), (0, 5, 1));
        // output rows 4..8 read 3..8 (row 8 is padding), pad 0.
        assert_eq!(window_rows(4, 4, 3, 1, 1, 1, 8), (3, 5, 0));
        // stride 2, no pad: output rows 1..3 of a 3-tap window read 2..7.
        assert_eq!(window_rows(1, 2, 3, 2, 1, 0, 9), (2, 5, 0));
    }

    #[test]
    fn broadcast_part_keeps_size_one_dims_whole() {
        assert_eq!(
            broadcast_part(&[4, 1, 1], &[0, 2, 0, 0], &[1, 2, 3, 3]),
            Part::Box { start: vec![2, 0, 0], len: vec![2, 1, 1] }
        );
        assert_eq!(broadcast_part(&[3], &[0, 1], &[2, 3]), Part::Whole);
    }
}
