//! onnxruntime's com.microsoft QLinearSigmoid and QLinearLeakyRelu (what
//! its quantizer writes for Sigmoid and LeakyRelu in the QOperator form):
//! an 8-bit function of an 8-bit input is a table of 256 bytes. The table
//! is built when generating code as onnxruntime builds it (dequantize each
//! input step, apply the function in f32, quantize); the kernel looks each
//! value up.

use super::kernel::{call, numel, one, scalar_const, u, Arg, Kernel, KernelCall, KernelCtx, Local};
use super::{Ctx, OpDef};
use crate::error::Result;
use crate::ir::{DType, TensorType};

/// Entries of a table: one per byte.
const TABLE: usize = 256;

const LOOKUP: OpDef =
    OpDef { infer: lookup_type, required: &[0, 1, 3], tables: Some(|_, _| Ok(TABLE as u64)), ..OpDef::BASE };

pub const OPS: &[OpDef] = &[
    OpDef { name: "QLinearSigmoid", kernel: Some(Kernel::Bind(bind_sigmoid)), ..LOOKUP },
    OpDef { name: "QLinearLeakyRelu", attrs: &["alpha"], kernel: Some(Kernel::Bind(bind_leaky_relu)), ..LOOKUP },
];

/// (X, X_scale, X_zero_point, Y_scale, Y_zero_point): Y has X's type and
/// shape; X int8 or uint8, its zero points of its type.
fn lookup_type(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    if !matches!(dtype, DType::I8 | DType::U8) {
        return Err(ctx.err(format!("X is {dtype}; the operator takes int8 or uint8")));
    }
    for zp in [2, 4] {
        if ctx.has(zp) && ctx.dtype(zp)? != dtype {
            return Err(ctx.err(format!(
                "the zero point (input {zp}) is {}, X {dtype}: they must be of one type",
                ctx.dtype(zp)?
            )));
        }
    }
    Ok(vec![match ctx.shape(0)? {
        Some(s) => TensorType::new(dtype, &s),
        None => TensorType::unknown(dtype),
    }])
}

fn bind_sigmoid(ctx: &KernelCtx) -> Result<KernelCall> {
    bind_table(ctx, logistic)
}

fn bind_leaky_relu(ctx: &KernelCtx) -> Result<KernelCall> {
    let alpha = ctx.node.float("alpha")?.unwrap_or(0.01);
    bind_table(ctx, move |x| if x >= 0.0 { x } else { x * alpha })
}

/// The call: `y[i] = table[x[i]]` over the whole tensor, the table a
/// constant of the call.
fn bind_table(ctx: &KernelCtx, f: impl Fn(f32) -> f32) -> Result<KernelCall> {
    let signed = ctx.in_dtype(0)? == DType::I8;
    let number = |slot: usize, what: &str| -> Result<f32> {
        match ctx.node.input(slot) {
            None => Ok(0.0),
            Some(_) => scalar_const(ctx, slot)?.ok_or_else(|| {
                ctx.err(format!("{what} (input {slot}) must be a constant: the table is built when generating code"))
            }),
        }
    };
    let (xs, xzp) = (number(1, "X_scale")?, number(2, "X_zero_point")?);
    let (ys, yzp) = (number(3, "Y_scale")?, number(4, "Y_zero_point")?);
    if !(ys.is_finite() && ys > 0.0) {
        return Err(ctx.err(format!("Y_scale is {ys}; it must be a positive finite number")));
    }
    let table = table(signed, |q| xs * (q - xzp as i32) as f32, |v| quantize(v, ys, yzp as i32, signed), f);
    let mut inv = call(
        "dg_q_lookup",
        "dg_qlookup_args_t",
        vec![
            ("x", ctx.inp(0)?),
            ("y", ctx.out(0)?),
            ("table", Arg::Local("table")),
            ("n", u(numel(&ctx.in_shape(0)?))),
        ],
    );
    inv.locals = vec![Local {
        ctype: "static const uint8_t",
        name: "table",
        values: table.into_iter().map(|b| u(b.into())).collect(),
    }];
    one(inv)
}

/// Entry b: the byte of `quantize(f(dequantize(q)))` for the value q that
/// byte b holds (int8 as two's complement).
fn table(
    signed: bool,
    dequantize: impl Fn(i32) -> f32,
    quantize: impl Fn(f32) -> u8,
    f: impl Fn(f32) -> f32,
) -> Vec<u8> {
    (0..TABLE)
        .map(|b| {
            let q = if signed { i32::from(b as u8 as i8) } else { b as i32 };
            quantize(f(dequantize(q)))
        })
        .collect()
}

/// onnxruntime's quantization of an f32: `v / scale` rounded to nearest
/// even, plus the zero point, saturated; the byte it stores.
fn quantize(v: f32, scale: f32, zp: i32, signed: bool) -> u8 {
    let (lo, hi) = if signed { (-128.0, 127.0) } else { (0.0, 255.0) };
    let q = ((v / scale).round_ties_even() + zp as f32).clamp(lo, hi);
    if q.is_nan() {
        return zp as u8;
    }
    q as i32 as u8
}

/// onnxruntime's logistic (MLAS, the coefficients Eigen uses): a rational
/// function of x clamped to [-18, 18], its polynomials evaluated with fused
/// multiply-adds as its x86 (FMA3) and Arm kernels do. It differs from the
/// exact sigmoid by a few ulps, which matters only for a value that lands
/// that close to a rounding boundary of Y (on tests/fixtures/quant's cases
/// the two give the same tables).
#[allow(clippy::excessive_precision)] // the coefficients as published, rounded to f32 as MLAS's are
fn logistic(x: f32) -> f32 {
    const ALPHA: [f32; 5] =
        [4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05, 8.51377133304701e-03, 2.48287947061529e-01];
    const BETA: [f32; 6] = [
        6.10247389755681e-13,
        5.76102136993427e-09,
        6.29106785017040e-06,
        1.70198817374094e-03,
        1.16817656904453e-01,
        9.93151921023180e-01,
    ];
    let v = x.clamp(-18.0, 18.0);
    let v2 = v * v;
    let p = ALPHA[1..].iter().fold(ALPHA[0], |acc, &a| acc.mul_add(v2, a)) * v;
    let q = BETA[1..].iter().fold(BETA[0], |acc, &b| acc.mul_add(v2, b));
    (p / q + 0.5).clamp(0.0, 1.0)
}
