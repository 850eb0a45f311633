//! Weights: where each initial value goes, as the plan's supply decided —
//! a baked static array (`Weights.c`), a segment of the packed L3 image
//! (`hex/l3.bin`, or one `hex/<n>.hex` per buffer) loaded at Init, or an
//! L3 copy staged into its L2 buffer by `CopyInitialWeights`.

use std::path::PathBuf;

use super::manifest::WeightSupply;
use super::{value_bytes, Copy, Ctx};
use crate::bind;
use crate::c;
use crate::error::{Error, Result};
use crate::escape::{self, c_comment, c_ident, c_string};
use crate::ir::{DType, TensorData};
use crate::plan::{self, BufId, Placement, Supply};

/// A weight baked into `Weights.c`.
#[derive(Clone, Debug)]
pub struct Baked {
    pub ctype: String,
    pub name: String,
    pub comment: String,
    pub lines: Vec<String>,
}

/// One L3 buffer's initial value in the image.
#[derive(Clone, Debug)]
pub struct Segment {
    pub dst: String,
    /// Where `dst` is as data, for the packed image's static table: 0 the
    /// L3 arena, 1 the l3-staged block, and the byte offset in it.
    pub base: u32,
    pub at: u64,
    pub offset: u64,
    pub bytes: u64,
    /// The weight's name in a comment, and as a string literal body.
    pub name: String,
    pub name_lit: String,
    /// `hex/<n>.hex` name when loading per file.
    pub file: String,
}

/// The weights of a project.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    pub baked: Vec<Baked>,
    pub segments: Vec<Segment>,
    /// Copies of l3-staged weights into their L2 buffers.
    pub staged: Vec<Copy>,
    pub staged_bytes: u64,
    /// One `hex/<n>.hex` per buffer instead of the packed image.
    pub hex_files: bool,
    /// The packed image, word-padded.
    pub image: Vec<u8>,
    /// The same values one file per buffer.
    pub hex: Vec<(PathBuf, Vec<u8>)>,
    pub supplies: Vec<WeightSupply>,
}

/// The C name of a baked weight.
pub(super) fn baked_name(id: BufId) -> String {
    c_ident("dg_w", id.index())
}

/// The initial value of a weight buffer: the graph's constant, else the
/// test data's value for that graph input, else the initializer a derived
/// training step made a graph input (`Model::initial`; with test data the
/// binding holds it already).
fn initial_value(ctx: &Ctx, binding: Option<&bind::Binding>, id: BufId) -> Result<TensorData> {
    let b = &ctx.plan.buffers[id];
    let g = ctx.graph(b.graph);
    if let Some(d) = g.id(&b.name).and_then(|t| g.tensor(t).data.as_deref()) {
        return Ok(d.clone());
    }
    if let Some(s) = binding.and_then(|bd| bd.slot(&b.name)) {
        if let Some(v) = s.values.first() {
            return Ok(as_buffer(v, b.dtype));
        }
    }
    if let Some(v) = ctx.model.initial.get(&b.name) {
        return Ok(as_buffer(v, b.dtype));
    }
    Err(Error::model(format!(
        "weight '{}' has no initial value: it is not an initializer and the test data does not provide it{}",
        b.name,
        if binding.is_none() { " (the model has no inputs.npz)" } else { "" }
    )))
}

/// A value as a buffer of `dtype` stores it (f64 narrowed to f32).
pub(super) fn as_buffer(v: &TensorData, dtype: DType) -> TensorData {
    let mut v = v.clone();
    v.bytes = value_bytes(&v, dtype);
    if dtype == DType::F32 {
        v.dtype = DType::F32;
    }
    v
}

fn pad4(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

pub(super) fn build(ctx: &Ctx, binding: Option<&bind::Binding>, hex_files: bool) -> Result<Weights> {
    let plan = ctx.plan;
    let mut w = Weights { hex_files, ..Default::default() };
    let mut ordered: Vec<&plan::WeightPlan> = plan.weights.iter().collect();
    ordered.sort_by_key(|w| (w.hex_index.unwrap_or(u32::MAX), w.buffer));
    for wp in ordered {
        let b = &plan.buffers[wp.buffer];
        let value = as_buffer(&initial_value(ctx, binding, wp.buffer)?, b.dtype);
        if value.bytes.len() as u64 != b.bytes {
            return Err(Error::model(format!(
                "weight '{}': its initial value has {} B, its buffer {} B",
                b.name,
                value.bytes.len(),
                b.bytes
            )));
        }
        w.supplies.push(WeightSupply {
            name: b.name.clone(),
            bytes: b.bytes,
            level: b.level.to_string(),
            supply: wp.supply.name().into(),
        });
        match wp.supply {
            Supply::Baked => w.baked.push(Baked {
                ctype: c::ctype_of(b.dtype).into(),
                name: baked_name(wp.buffer),
                comment: c_comment(&format!("{} ({} {:?}, {} B)", b.name, b.dtype, b.shape, b.bytes)),
                lines: c::lines(&c::values(&value), 8),
            }),
            Supply::L3Hex | Supply::L3Staged => {
                let idx = wp.hex_index.unwrap_or(0);
                let (base, at) = match (wp.supply, ctx.plan.buffers[wp.buffer].placement) {
                    (Supply::L3Hex, Placement::Arena { offset }) => (0, offset),
                    (Supply::L3Hex, _) => {
                        return Err(Error::model(format!("weight '{}': an l3-hex buffer outside the L3 arena", b.name)))
                    }
                    _ => (1, w.staged_bytes),
                };
                let dst = if wp.supply == Supply::L3Hex {
                    ctx.expr(wp.buffer)
                } else {
                    let e = format!("DG_STAGED({})", w.staged_bytes);
                    w.staged.push(Copy {
                        dst: ctx.expr(wp.buffer),
                        src: e.clone(),
                        bytes: b.bytes,
                        what: c_comment(&b.name),
                    });
                    w.staged_bytes += b.size;
                    e
                };
                pad4(&mut w.image);
                let offset = w.image.len() as u64;
                w.image.extend_from_slice(&value.bytes);
                let mut padded = value.bytes.clone();
                pad4(&mut padded);
                w.hex.push((PathBuf::from(format!("hex/{idx}.hex")), padded));
                w.segments.push(Segment {
                    dst,
                    base,
                    at,
                    offset,
                    bytes: b.bytes,
                    name: c_comment(&b.name),
                    name_lit: c_string(escape::harness_label(&b.name)),
                    file: format!("{idx}.hex"),
                });
            }
        }
    }
    pad4(&mut w.image);
    Ok(w)
}
