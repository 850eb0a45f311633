//! The harness's data and checks: the test data of every mini-batch
//! (`testinputs.h`), the references and what each check compares
//! (`testoutputs.h`, and the checks in `main.c`), and what is not compared
//! with why. In L2 they are static arrays; when the plan moved them to L3
//! they are one image, `hex/testdata.bin`, which the harness loads into the
//! plan's L3 block and streams from, each item by its offset there.

use super::manifest::{Compared, NotCompared};
use super::network::Network;
use super::weights::as_buffer;
use super::{Ctx, DEFAULT_RTOL, DEFAULT_TOLERANCE, TEST_DATA_IMAGE};
use crate::bind::{self, RefKind};
use crate::c;
use crate::error::{Error, Result};
use crate::escape::{self, c_comment, c_ident, c_string};
use crate::ir::{self, DType};
use crate::plan::{self, GraphSel, Level, Placement};

/// One tensor the harness compares with its reference.
#[derive(Clone, Debug)]
pub struct Check {
    /// The compared tensor's name as given.
    pub tensor: String,
    pub name: String,
    pub expr: String,
    pub ref_name: String,
    pub values: u64,
    /// Bytes per value of an integer or boolean tensor, compared exactly;
    /// `None`: f32, compared within the tolerance.
    pub exact: Option<usize>,
    /// An f32 tensor whose reference held integers: compared with zero
    /// tolerance (|computed - ref| <= 0, so -0 equals 0).
    pub integral: bool,
}

/// A static array of test data or references.
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

/// The harness's facts.
#[derive(Clone, Debug, Default)]
pub struct Harness {
    // test data
    pub num_data: usize,
    pub data_size: usize,
    pub steps: usize,
    pub accum: usize,
    pub lr_lit: String,
    pub reset_idx: Option<usize>,
    pub loss_idx: Option<usize>,
    pub data_arrays: Vec<DataArray>,
    /// Per sample: the data array name of each data slot.
    pub data_rows: Vec<Vec<String>>,
    pub data_slots: Vec<usize>,
    /// Bytes of each data slot's test data (mini-batch 0's), as the
    /// harness hands it to `dg_model.h`.
    pub data_bytes: Vec<u64>,
    pub skip_copy: bool,
    pub skip_reason: String,
    // references
    /// Absolute and relative tolerance: a float value passes when
    /// `|computed - ref| <= tolerance + rtol * |ref|`.
    pub tolerance: f32,
    pub tol_lit: String,
    pub rtol: f32,
    pub rtol_lit: String,
    pub loss_refs: usize,
    pub loss_lines: Vec<String>,
    /// The loss references' L3 address, when the test data is in L3.
    pub loss_l3: Option<String>,
    pub refs: Vec<DataArray>,
    /// The test data's L3 image, when the plan keeps it in L3.
    pub test_l3: Option<TestDataL3>,
    pub test_image: Vec<u8>,
    pub checks: Vec<Check>,
    pub expected: u64,
    pub compared: Vec<Compared>,
    /// As the manifest says it, and as C string literal bodies.
    pub not_compared_raw: Vec<NotCompared>,
    pub not_compared: Vec<NotCompared>,
    /// Why nothing is compared, as a comment and as a string literal body.
    pub no_data_comment: Option<String>,
    pub no_data_lit: Option<String>,
}

pub(super) fn build(
    ctx: &Ctx,
    binding: Option<&bind::Binding>,
    net: &Network,
    model_name: &str,
    tolerance: Option<f32>,
    rtol: Option<f32>,
) -> Result<Harness> {
    let plan = ctx.plan;
    let training = ctx.model.roles.is_training();
    let mut h = Harness {
        reset_idx: ctx.model.roles.lazy_reset.as_ref().and_then(|r| net.input_names.iter().position(|n| n == r)),
        loss_idx: ctx.model.roles.loss.as_ref().and_then(|l| net.output_names.iter().position(|n| n == l)),
        skip_copy: plan.skip_initweight_copy.skip,
        skip_reason: c_comment(&plan.skip_initweight_copy.reason),
        tolerance: tolerance.or(binding.and_then(|b| b.tolerance)).unwrap_or(DEFAULT_TOLERANCE),
        rtol: rtol.or(binding.and_then(|b| b.rtol)).unwrap_or(DEFAULT_RTOL),
        ..Default::default()
    };
    let mut l3 = plan
        .buffers
        .iter()
        .find(|b| b.kind == plan::Kind::Static && b.name == plan::TEST_DATA && b.level == Level::L3)
        .map(|b| match b.placement {
            Placement::Arena { offset } => Ok(L3Data { base: offset, planned: b.bytes, image: vec![] }),
            _ => Err(Error::plan("the L3 test data has no place in the L3 arena")),
        })
        .transpose()?;
    let learning_rate: f32;
    let mut no_data = None;
    match binding {
        Some(bd) => {
            learning_rate = bd.learning_rate.or(ctx.rate.as_ref().map(|r| r.value)).unwrap_or(0.0);
            test_data(ctx, bd, training, &mut l3, &mut h)?;
            references(ctx, bd, training, net, &mut l3, &mut h);
        }
        None => {
            learning_rate = ctx.rate.as_ref().map_or(0.0, |r| r.value);
            no_data = Some(format!(
                "model '{model_name}' has no inputs.npz/outputs.npz: no test data, so there are no references and \
                 this run compares nothing and fails"
            ))
        }
    }
    h.lr_lit = c::f32_lit(learning_rate);
    h.tol_lit = c::f32_lit(h.tolerance);
    h.rtol_lit = c::f32_lit(h.rtol);
    h.expected = h.loss_refs as u64 + h.checks.iter().map(|c| c.values).sum::<u64>();
    h.loss_l3 = h.loss_l3.take().map(|o| format!("DG_L3({o}u)"));
    if let Some(d) = l3 {
        let (t, image) = d.finish()?;
        h.test_l3 = Some(t);
        h.test_image = image;
    }
    h.not_compared = h
        .not_compared_raw
        .iter()
        .map(|n| NotCompared {
            name: c_string(escape::harness_label(&n.name)),
            why: c_string(escape::harness_label(&n.why)),
        })
        .collect();
    h.no_data_comment = no_data.as_deref().map(c_comment);
    h.no_data_lit = no_data.as_deref().map(c_string);
    Ok(h)
}

/// Every mini-batch's data slots: static arrays, or items of the L3 image.
fn test_data(ctx: &Ctx, bd: &bind::Binding, training: bool, l3: &mut Option<L3Data>, h: &mut Harness) -> Result<()> {
    h.num_data = bd.num_data_inputs;
    let per_mb: Vec<&bind::Slot> = bd.data_slots().iter().collect();
    h.data_size = if training { bd.schedule.data_size.max(1) } else { 1 };
    (h.steps, h.accum) = if training { (bd.schedule.n_steps, bd.schedule.n_accum.max(1)) } else { (1, 1) };
    h.data_slots = per_mb.iter().map(|s| s.index).collect();
    for mb in 0..h.data_size {
        let mut row = vec![];
        for s in &per_mb {
            let v = s
                .values
                .get(mb)
                .or_else(|| s.values.first())
                .ok_or_else(|| Error::binding(format!("data slot '{}' has no value for sample {mb}", s.input)))?;
            let id = ctx.buffer_of(GraphSel::Main, &s.input);
            let dtype = id.map_or(DType::F32, |i| ctx.plan.buffers[i].dtype);
            let v2 = as_buffer(v, dtype);
            if mb == 0 {
                h.data_bytes.push(v2.bytes.len() as u64);
            }
            if let Some(d) = l3.as_mut() {
                row.push(format!("{}u", d.push(&v2.bytes)));
                continue;
            }
            let nm = c_ident("testData_mb", format!("{mb}_buf{}", s.index));
            h.data_arrays.push(DataArray {
                ctype: c::ctype_of(dtype).into(),
                name: nm.clone(),
                lines: c::lines(&c::values(&v2), 8),
            });
            row.push(nm);
        }
        h.data_rows.push(row);
    }
    Ok(())
}

fn not_compared(h: &mut Harness, name: impl Into<String>, why: impl Into<String>) {
    h.not_compared_raw.push(NotCompared { name: name.into(), why: why.into() });
}

/// The losses' references, and the tensors' with a check each.
fn references(ctx: &Ctx, bd: &bind::Binding, training: bool, net: &Network, l3: &mut Option<L3Data>, h: &mut Harness) {
    if let Some(l) = &bd.loss {
        loss_references(bd, l, l3, h);
    } else if training {
        not_compared(h, "loss", "outputs.npz holds no loss references");
    }
    for (i, r) in bd.references.iter().enumerate() {
        tensor_reference(ctx, i, r, l3, h);
    }
    for p in bd.params.iter().filter(|p| p.reference.is_none()) {
        not_compared(h, format!("{}_updated", p.name), "outputs.npz holds no reference for it");
    }
    // Frozen inputs the step updates (BatchNorm statistics) are compared
    // when outputs.npz has them; a held data input is not updated.
    for s in bd.slots_with(ir::Role::Frozen).filter(|s| !bd.held_constant.contains(&s.input)) {
        if !bd.references.iter().any(|r| r.target == s.input) {
            not_compared(h, format!("{}_updated", s.input), "outputs.npz holds no reference for it");
        }
    }
    if !training {
        for o in &net.output_names {
            if !bd.references.iter().any(|r| &r.target == o) {
                not_compared(h, o.clone(), "outputs.npz holds no reference for this output");
            }
        }
    }
}

fn loss_references(bd: &bind::Binding, l: &bind::Reference, l3: &mut Option<L3Data>, h: &mut Harness) {
    let vals = l.data.to_f32().unwrap_or_default();
    let passes = bd.schedule.n_steps * bd.schedule.n_accum.max(1);
    if h.loss_idx.is_none() {
        not_compared(h, l.key.clone(), "the graph has no loss output to compare against");
        return;
    }
    h.loss_refs = vals.len().min(passes);
    if vals.len() > passes {
        not_compared(
            h,
            format!("{}[{}..{}]", l.key, passes, vals.len()),
            format!("the schedule runs {passes} forward passes"),
        );
    }
    match l3.as_mut() {
        Some(d) => h.loss_l3 = Some(d.push_f32(&vals[..h.loss_refs]).to_string()),
        None => {
            let shown: Vec<String> = vals[..h.loss_refs].iter().map(|v| c::f32_lit(*v)).collect();
            h.loss_lines = c::lines(&shown, 4);
        }
    }
}

fn tensor_reference(ctx: &Ctx, i: usize, r: &bind::Reference, l3: &mut Option<L3Data>, h: &mut Harness) {
    let Some(id) = ctx.buffer_of(GraphSel::Main, &r.target) else {
        not_compared(h, r.key.clone(), format!("no buffer holds '{}'", r.target));
        return;
    };
    let dtype = ctx.plan.buffers[id].dtype;
    let float = r.data.dtype.is_float();
    let (ctype, values, raw, exact) = if dtype == DType::F32 && float {
        let vals = r.data.to_f32().unwrap_or_default();
        let raw: Vec<u8> = vals.iter().flat_map(|x| x.to_le_bytes()).collect();
        ("float", c::values(&ir::TensorData::from_f32(r.data.shape.clone(), &vals)), raw, None)
    } else if !float && dtype == r.data.dtype && dtype.size().is_some() {
        // Integers and booleans: the reference as the buffer holds it, compared exactly.
        (c::ctype_of(dtype), c::values(&r.data), r.data.bytes.clone(), dtype.size())
    } else {
        not_compared(h, r.key.clone(), format!("'{}' is {dtype}, its reference {}", r.target, r.data.dtype));
        return;
    };
    let n = r.data.numel() as u64;
    let rn = match l3.as_mut() {
        Some(d) => format!("DG_L3({}u)", d.push(&raw)),
        None => {
            let rn = c_ident("testRef_", i);
            h.refs.push(DataArray { ctype: ctype.into(), name: rn.clone(), lines: c::lines(&values, 8) });
            rn
        }
    };
    let what = match r.kind {
        RefKind::UpdatedParam | RefKind::Frozen => r.key.clone(),
        _ => r.target.clone(),
    };
    let integral = r.integral && exact.is_none();
    h.checks.push(Check {
        tensor: r.target.clone(),
        name: c_string(escape::harness_label(&what)),
        expr: ctx.expr(id),
        ref_name: rn,
        values: n,
        exact,
        integral,
    });
    h.compared.push(Compared { name: what, values: n, exact: exact.is_some() || integral });
}
