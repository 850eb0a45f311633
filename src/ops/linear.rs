//! Gemm and MatMul. Their gradients are Gemm/MatMul/ReduceSum nodes in the
//! backward graph; there is no GemmGrad operator.

use super::grad::{self, GradCtx};
use super::kernel::{call, dims_list, f, numel, one, u, Arg, Kernel, KernelCall, KernelCtx};
use super::tile::{self, Part, Space, TileMap, TileRefusal, TileRule, Tileable};
use super::{broadcast, Ctx, LegacyAttr, OpDef};
use crate::error::{Error, Result};
use crate::ir::{Attr, DType, Graph, Node, TensorId, TensorType};

pub const OPS: &[OpDef] = &[
    OpDef {
        name: "Gemm",
        attrs: &["alpha", "beta", "transA", "transB"],
        legacy: &[LegacyAttr { name: "broadcast", before: 7, unsupported: super::ignorable }],
        infer: gemm,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_gemm)),
        grad: Some(gemm_grad),
        tile: Some(GEMM_TILES),
        fuses_act: Some(gemm_fuses_act),
        macs: Some(product_macs),
        qdq: Some(super::quant::Qdq::Fuse(&super::quant::QDQ_GEMM)),
        ..OpDef::BASE
    },
    OpDef {
        name: "MatMul",
        infer: matmul,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_matmul)),
        grad: Some(matmul_grad),
        tile: Some(MATMUL_TILES),
        macs: Some(product_macs),
        qdq: Some(super::quant::Qdq::Fuse(&super::quant::QDQ_MATMUL)),
        ..OpDef::BASE
    },
    // com.microsoft FusedMatMul(A, B){alpha, transA, transB} = alpha *
    // op(A) @ op(B) on the last two dims; onnxruntime's MatMul gradients.
    OpDef {
        name: "FusedMatMul",
        attrs: &["alpha", "transA", "transB", "transBatchA", "transBatchB"],
        infer: fused_matmul,
        required: &[0, 1],
        kernel: Some(Kernel::Bind(bind_fused_matmul)),
        tile: Some(MATMUL_TILES),
        macs: Some(product_macs),
        ..OpDef::BASE
    },
];

/// A matrix product's attributes, read and checked once: Gemm's and
/// FusedMatMul's transposes and scales (MatMul has none: the default).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Product {
    trans_a: bool,
    trans_b: bool,
    alpha: f32,
    beta: f32,
}

impl Default for Product {
    fn default() -> Product {
        Product { trans_a: false, trans_b: false, alpha: 1.0, beta: 1.0 }
    }
}

impl Product {
    fn of(node: &Node) -> Result<Product> {
        // FusedMatMul's batch transposes: no kernel takes them.
        for attr in ["transBatchA", "transBatchB"] {
            if node.flag(attr, false)? {
                return Err(Error::node(node, format!("{attr}=1 is not supported")));
            }
        }
        let scale = |name: &str| match node.float(name)? {
            Some(v) if !v.is_finite() => {
                Err(Error::node(node, format!("attribute '{name}' = {v} must be a finite number")))
            }
            v => Ok(v.unwrap_or(1.0)),
        };
        Ok(Product {
            trans_a: node.flag("transA", false)?,
            trans_b: node.flag("transB", false)?,
            alpha: scale("alpha")?,
            beta: scale("beta")?,
        })
    }

    /// The attributes a Gemm or FusedMatMul node of this product carries.
    fn attrs(self, alpha: bool) -> Vec<(String, Attr)> {
        let mut v = vec![
            ("transA".to_string(), Attr::Int(self.trans_a as i64)),
            ("transB".to_string(), Attr::Int(self.trans_b as i64)),
        ];
        if alpha {
            v.push(("alpha".to_string(), Attr::Float(self.alpha)));
        }
        v
    }
}

/// Multiply-adds of a product on the last two dims: every output element
/// sums over A's inner dim (its second-to-last with `transA`).
fn product_macs(g: &Graph, n: &Node) -> Option<u64> {
    let a = g.tensor(n.input(0)?).ty.shape()?;
    let k = if Product::of(n).ok()?.trans_a { a.len().checked_sub(2)? } else { a.len().checked_sub(1)? };
    Some(g.tensor(n.output(0)?).ty.numel()? as u64 * *a.get(k)? as u64)
}

/// Gemm on the last two dims. ONNX defines 2-D operands only; graphs from
/// Deeploy's exporters also use leading batch dims (`[1, 64, 128] x
/// [128, 128]`), which broadcast as in MatMul.
fn gemm(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let Product { trans_a: ta, trans_b: tb, .. } = Product::of(ctx.node)?;
    let dtype = ctx.dtype(0)?;
    let (Some(a), Some(b)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    if a.len() < 2 || b.len() < 2 {
        return Err(ctx.err(format!("Gemm needs operands of rank 2 or more, got {a:?} and {b:?}")));
    }
    let (ra, rb) = (a.len(), b.len());
    let (m, ka) = if ta { (a[ra - 1], a[ra - 2]) } else { (a[ra - 2], a[ra - 1]) };
    let (kb, n) = if tb { (b[rb - 1], b[rb - 2]) } else { (b[rb - 2], b[rb - 1]) };
    if ka != kb {
        return Err(ctx.err(format!("inner dimensions differ: A {a:?} (transA={ta}) and B {b:?} (transB={tb})")));
    }
    let mut out = broadcast(ctx, &a[..ra - 2], &b[..rb - 2])?;
    out.extend([m, n]);
    if ctx.has(2) {
        if let Some(c) = ctx.shape(2)? {
            let bc = broadcast(ctx, &out, &c)?;
            if bc != out {
                return Err(ctx.err(format!("C {c:?} does not broadcast to {out:?}")));
            }
        }
    }
    Ok(vec![TensorType::new(dtype, &out)])
}

fn matmul(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let (Some(a), Some(b)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    matmul_shapes(ctx, a, b).map(|s| vec![TensorType::new(dtype, &s)])
}

/// A FLOAT attribute that, when present, is a finite number.
pub fn finite(ctx: &Ctx, name: &str) -> Result<Option<f32>> {
    match ctx.node.float(name)? {
        Some(v) if !v.is_finite() => Err(ctx.err(format!("attribute '{name}' = {v} must be a finite number"))),
        v => Ok(v),
    }
}

fn fused_matmul(ctx: &Ctx) -> Result<Vec<TensorType>> {
    let dtype = ctx.dtype(0)?;
    let Product { trans_a: ta, trans_b: tb, .. } = Product::of(ctx.node)?;
    let (Some(mut a), Some(mut b)) = (ctx.shape(0)?, ctx.shape(1)?) else {
        return Ok(vec![TensorType::unknown(dtype)]);
    };
    let swap_last = |s: &mut Vec<usize>| {
        let n = s.len();
        if n >= 2 {
            s.swap(n - 1, n - 2);
        }
    };
    if ta {
        swap_last(&mut a);
    }
    if tb {
        swap_last(&mut b);
    }
    matmul_shapes(ctx, a, b).map(|s| vec![TensorType::new(dtype, &s)])
}

/// numpy.matmul's shape rule, including 1-D operands.
pub(super) fn matmul_shapes(ctx: &Ctx, mut a: Vec<usize>, mut b: Vec<usize>) -> Result<Vec<usize>> {
    if a.is_empty() || b.is_empty() {
        return Err(ctx.err("MatMul inputs must have rank >= 1"));
    }
    let va = a.len() == 1;
    let vb = b.len() == 1;
    if va {
        a.insert(0, 1);
    }
    if vb {
        b.push(1);
    }
    let (m, k1) = (a[a.len() - 2], a[a.len() - 1]);
    let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
    if k1 != k2 {
        return Err(ctx.err(format!("inner dimensions differ: {a:?} x {b:?}")));
    }
    let mut out = broadcast(ctx, &a[..a.len() - 2], &b[..b.len() - 2])?;
    if !va {
        out.push(m);
    }
    if !vb {
        out.push(n);
    }
    Ok(out)
}

// ---- kernel bindings --------------------------------------------------------

pub(super) fn bind_gemm(ctx: &KernelCtx) -> Result<KernelCall> {
    ctx.require_f32(&[0, 1, 2])?;
    let (a, b, y) = (ctx.in_shape(0)?, ctx.in_shape(1)?, ctx.out_shape(0)?);
    let p = Product::of(ctx.node)?;
    let (ta, tb) = (p.trans_a, p.trans_b);
    // Exporters feed Gemm [.., M, K] with leading 1s or batch dims (rows
    // of A, unless transposed): the rows flatten into M.
    let ok = plain_gemm_operands(&a, &b, ta) && !y.is_empty();
    let act = ctx.node.marks.fused_act.unwrap_or(0);
    if batched_gemm(ctx)? {
        // A batched Gemm (some exporters write MatMul gradients so): a
        // batched matmul with transposes and a scale.
        if act != 0 {
            return Err(ctx.err("a batched Gemm cannot apply a fused activation (the matmul kernel has no act)"));
        }
        return matmul_with(ctx, p, true);
    }
    if !ok {
        return Err(ctx.err(format!("Gemm operands must be 2-D (A {a:?}, B {b:?}, Y {y:?})")));
    }
    let (ar, br) = (a.len(), b.len());
    let (m, k) = if ta { (a[ar - 1], a[ar - 2]) } else { (numel(&a[..ar - 1]), a[ar - 1]) };
    let n = if tb { b[br - 2] } else { b[br - 1] };
    if numel(&y) != m * n {
        return Err(ctx.err(format!("Gemm output {y:?} does not hold {m} x {n} values")));
    }
    let (mut csm, mut csn) = (0, 0);
    if ctx.node.input(2).is_some() {
        let c = ctx.in_shape(2)?;
        let dn = c.last().copied().unwrap_or(1);
        let dm = if c.len() >= 2 { numel(&c[..c.len() - 1]) } else { 1 };
        csn = if dn == 1 { 0 } else { 1 };
        csm = if dm == 1 { 0 } else { dn };
    }
    one(call(
        "dg_gemm_f32",
        "dg_gemm_args_t",
        vec![
            ("a", ctx.inp(0)?),
            ("b", ctx.inp(1)?),
            ("c", ctx.opt_in(2)),
            ("y", ctx.out(0)?),
            ("m", u(m)),
            ("n", u(n)),
            ("k", u(k)),
            ("trans_a", u(usize::from(ta))),
            ("trans_b", u(usize::from(tb))),
            ("alpha", f(p.alpha)),
            ("beta", f(p.beta)),
            ("c_stride_m", u(csm)),
            ("c_stride_n", u(csn)),
        ]
        .into_iter()
        .chain((act != 0).then(|| ("act", u(act as usize))))
        .collect(),
    ))
}

/// dg_gemm_f32 applies `act` (the batched form runs as a matmul, which
/// has none); the Gemm tiles split rows and columns, never K.
fn gemm_fuses_act(g: &Graph, node: &Node) -> bool {
    let shape = |i: usize| node.input(i).and_then(|t| g.tensor(t).ty.shape());
    match (shape(0), shape(1), Product::of(node)) {
        (Some(a), Some(b), Ok(p)) => plain_gemm_operands(&a, &b, p.trans_a),
        _ => false,
    }
}

fn bind_matmul(ctx: &KernelCtx) -> Result<KernelCall> {
    matmul_with(ctx, Product::default(), false)
}

/// com.microsoft FusedMatMul: the matmul kernel with transposes and alpha.
fn bind_fused_matmul(ctx: &KernelCtx) -> Result<KernelCall> {
    matmul_with(ctx, Product::of(ctx.node)?, true)
}

fn matmul_with(ctx: &KernelCtx, p: Product, fused: bool) -> Result<KernelCall> {
    // MatMul on int32 (Deeploy's integer graphs) has its own kernel.
    let int32 = !fused && ctx.in_dtype(0)? == DType::I32 && ctx.in_dtype(1)? == DType::I32;
    if !int32 {
        ctx.require_f32(&[0, 1])?;
    }
    let mut fields = vec![("a", ctx.inp(0)?), ("b", ctx.inp(1)?), ("y", ctx.out(0)?)];
    fields.extend(product_fields(ctx, ctx.in_shape(0)?, ctx.in_shape(1)?, p.trans_a, p.trans_b)?.fields);
    let func = if fused {
        fields.push(("trans_a", u(usize::from(p.trans_a))));
        fields.push(("trans_b", u(usize::from(p.trans_b))));
        fields.push(("alpha", f(p.alpha)));
        "dg_fused_matmul_f32"
    } else if int32 {
        "dg_matmul_i32"
    } else {
        "dg_matmul_f32"
    };
    one(call(func, "dg_matmul_args_t", fields))
}

/// A batched product's geometry as the matmul kernels take it.
pub(super) struct ProductFields {
    pub m: usize,
    pub n: usize,
    /// `m, n, k, batch, nbatch_dims, batch_shape, a_bstrides, b_bstrides`.
    pub fields: Vec<(&'static str, Arg)>,
}

/// The geometry of `op(A) op(B)` for operands of shapes `a` and `b` (1-D
/// ones as numpy.matmul reads them), batch dims broadcast.
pub(super) fn product_fields(
    ctx: &KernelCtx,
    mut a: Vec<usize>,
    mut b: Vec<usize>,
    ta: bool,
    tb: bool,
) -> Result<ProductFields> {
    if a.len() == 1 {
        a = if ta { vec![a[0], 1] } else { vec![1, a[0]] };
    }
    if b.len() == 1 {
        b = if tb { vec![1, b[0]] } else { vec![b[0], 1] };
    }
    let (ar, br) = (a.len(), b.len());
    let (m, k) = if ta { (a[ar - 1], a[ar - 2]) } else { (a[ar - 2], a[ar - 1]) };
    let n = if tb { b[br - 2] } else { b[br - 1] };
    let (ab, bb) = (&a[..ar - 2], &b[..br - 2]);
    let nb = ab.len().max(bb.len());
    if nb > 4 {
        return Err(ctx.err("more than 4 batch dimensions"));
    }
    let mut batch_shape = vec![1; nb];
    for d in 0..nb {
        let da = if d + ab.len() >= nb { ab[d + ab.len() - nb] } else { 1 };
        let db = if d + bb.len() >= nb { bb[d + bb.len() - nb] } else { 1 };
        if da != db && da != 1 && db != 1 {
            return Err(ctx.err(format!("batch dims {ab:?} and {bb:?} do not broadcast")));
        }
        batch_shape[d] = da.max(db);
    }
    let bstr = |x: &[usize], mat: usize| -> Vec<usize> {
        let mut st = vec![0; nb];
        let mut acc = mat;
        for d in (0..nb).rev() {
            let xd = if d + x.len() >= nb { x[d + x.len() - nb] } else { 1 };
            st[d] = if xd == 1 { 0 } else { acc };
            acc *= xd;
        }
        st
    };
    let fields = vec![
        ("m", u(m)),
        ("n", u(n)),
        ("k", u(k)),
        ("batch", u(numel(&batch_shape))),
        ("nbatch_dims", u(nb)),
        ("batch_shape", dims_list(&batch_shape)),
        ("a_bstrides", dims_list(&bstr(ab, m * k))),
        ("b_bstrides", dims_list(&bstr(bb, k * n))),
    ];
    Ok(ProductFields { m, n, fields })
}

// ---- gradient rules ------------------------------------------------------------------------

/// Gemm `Y = alpha op(A) op(B) + C`: the operand gradients are Gemms with
/// transposes, C's is dY summed back over what broadcast (beta = 1 only).
fn gemm_grad(ctx: &mut GradCtx) -> Result<()> {
    let dy = ctx.dy(0)?;
    let prod = Product::of(&ctx.node)?;
    let (ta, tb) = (prod.trans_a, prod.trans_b);
    let gemm = |ctx: &mut GradCtx, slot: usize, p: TensorId, q: TensorId, tp: bool, tq: bool| -> Result<()> {
        let attrs = Product { trans_a: tp, trans_b: tq, ..prod }.attrs(true);
        let out = ctx.dx_name(slot);
        let g = ctx.emit1("Gemm", "", &[p, q], &out, attrs)?;
        ctx.set(slot, g);
        Ok(())
    };
    if ctx.needs(0) {
        let b = ctx.x(1)?;
        // dA = dY op(B)^T, or op(B) dY^T when A was transposed.
        match ta {
            false => gemm(ctx, 0, dy, b, false, !tb)?,
            true => gemm(ctx, 0, b, dy, tb, true)?,
        }
    }
    if ctx.needs(1) {
        let a = ctx.x(0)?;
        // dB = op(A)^T dY, or dY^T op(A) when B was transposed.
        match tb {
            false => gemm(ctx, 1, a, dy, !ta, false)?,
            true => gemm(ctx, 1, dy, a, true, ta)?,
        }
    }
    if ctx.needs(2) {
        let beta = prod.beta;
        if beta != 1.0 {
            return Err(ctx.err(format!("beta = {beta}: the bias gradient is derived for beta = 1 only")));
        }
        let shape = ctx.shape(ctx.x(2)?)?;
        let name = ctx.dx_name(2);
        let g = ctx.b.unbroadcast(dy, &shape, &name)?;
        ctx.set(2, g);
    }
    Ok(())
}

/// MatMul `Y = A B` (batched, broadcast): dA = dY B^T, dB = A^T dY, each
/// summed back over broadcast batch dims; a 2-D B shared by a batched A
/// gets the rows of every batch at once.
fn matmul_grad(ctx: &mut GradCtx) -> Result<()> {
    let (dy, a, b) = (ctx.dy(0)?, ctx.x(0)?, ctx.x(1)?);
    let (sa, sb, sy) = (ctx.shape(a)?, ctx.shape(b)?, ctx.shape(dy)?);
    if sa.len() < 2 || sb.len() < 2 {
        return Err(ctx.err("the gradient is derived for operands of rank 2 or more only"));
    }
    let fused = |ctx: &mut GradCtx, p: TensorId, q: TensorId, tp: bool, tq: bool, out: &str| {
        let attrs = Product { trans_a: tp, trans_b: tq, ..Product::default() }.attrs(false);
        ctx.emit1("FusedMatMul", grad::MS, &[p, q], out, attrs)
    };
    if ctx.needs(0) {
        let name = ctx.dx_name(0);
        let full = fused(ctx, dy, b, false, true, &ctx.name("dA"))?;
        let g = ctx.b.unbroadcast(full, &sa, &name)?;
        ctx.set(0, g);
    }
    if ctx.needs(1) {
        let name = ctx.dx_name(1);
        let g = if sb.len() == 2 && sa.len() > 2 {
            let k = sa[sa.len() - 1];
            let n = sy[sy.len() - 1];
            let rows = sa[..sa.len() - 1].iter().product::<usize>();
            let a2 = ctx.b.reshape(a, &[rows, k], &ctx.name("a_rows"))?;
            let d2 = ctx.b.reshape(dy, &[rows, n], &ctx.name("dy_rows"))?;
            fused(ctx, a2, d2, true, false, &name)?
        } else {
            let full = fused(ctx, a, dy, true, false, &ctx.name("dB"))?;
            ctx.b.unbroadcast(full, &sb, &name)?
        };
        ctx.set(1, g);
    }
    Ok(())
}

// ---- tile rules ---------------------------------------------------------------

/// Gemm tiles over the rows of Y (A's rows, or its columns under
/// transA) and its columns (B's columns, or its rows under transB); K is
/// whole in every tile, so no tile needs partial sums. Leading dims of 1
/// (`[1, 64, 128]`, as Deeploy's exporters write) ride along; C takes the
/// rows and columns it broadcasts over.
pub(super) const GEMM_TILES: TileRule = TileRule { space: gemm_tile_space, map: gemm_tile_map, in_place: false };
/// MatMul tiles over the batch dims and the rows of A; B stays whole per
/// batch.
pub(super) const MATMUL_TILES: TileRule = TileRule { space: matmul_tile_space, map: matmul_tile_map, in_place: false };

fn lead1(s: &[usize]) -> bool {
    s.len() >= 2 && s[..s.len() - 2].iter().all(|&d| d == 1)
}

/// Gemm operands that dg_gemm_f32 takes as they are: A [.., M, K] with its
/// leading dims flattened into M (only 1s when transposed), B a matrix
/// with leading 1s.
fn plain_gemm_operands(a: &[usize], b: &[usize], trans_a: bool) -> bool {
    a.len() >= 2 && (!trans_a || lead1(a)) && lead1(b)
}

fn gemm_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    if batched_gemm(ctx)? {
        return matmul_tile_space(ctx);
    }
    let (a, b, y) = (ctx.graph_in_shape(0)?, ctx.graph_in_shape(1)?, ctx.graph_out_shape(0)?);
    if y.len() < 2 {
        return Ok(Err(TileRefusal::NotAMatrix(y)));
    }
    if !lead1(&a) || !lead1(&b) || !lead1(&y) {
        return Ok(Err(TileRefusal::BatchDims { a, b, y }));
    }
    if ctx.node.input(2).is_some() && ctx.graph_in_shape(2)?.iter().rev().skip(2).any(|&d| d != 1) {
        return Ok(Err(TileRefusal::BatchedC));
    }
    let r = y.len();
    Ok(Ok(Space { dims: vec![y[r - 2], y[r - 1]], split: vec![true, true] }))
}

/// The part of an operand whose last two dims are (rows, cols) and whose
/// leading dims are 1: `rows` / `cols` a range, or `None` for whole; a
/// dim of 1 stays whole (broadcast).
fn last2_part(shape: &[usize], rows: Option<(usize, usize)>, cols: Option<(usize, usize)>) -> Part {
    let r = shape.len();
    let (mut s, mut l) = (vec![0; r], shape.to_vec());
    for (d, range) in [(r.wrapping_sub(2), rows), (r.wrapping_sub(1), cols)] {
        if let (Some(&dim), Some((st, ln))) = (shape.get(d), range) {
            if dim != 1 {
                s[d] = st;
                l[d] = ln;
            }
        }
    }
    if l == shape {
        Part::Whole
    } else {
        Part::Box { start: s, len: l }
    }
}

fn gemm_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    if batched_gemm(ctx)? {
        return matmul_tile_map(ctx, start, len);
    }
    let Product { trans_a: ta, trans_b: tb, .. } = Product::of(ctx.node)?;
    let (m, n) = (Some((start[0], len[0])), Some((start[1], len[1])));
    let a = ctx.graph_in_shape(0)?;
    let b = ctx.graph_in_shape(1)?;
    let a_part = if ta { last2_part(&a, None, m) } else { last2_part(&a, m, None) };
    let b_part = if tb { last2_part(&b, n, None) } else { last2_part(&b, None, n) };
    let mut t = TileMap { inputs: vec![Some(a_part), Some(b_part)], ..Default::default() };
    t.inputs.push(match ctx.node.input(2) {
        Some(_) => Some(last2_part(&ctx.graph_in_shape(2)?, m, n)),
        None => None,
    });
    t.outputs.push(Some(last2_part(&ctx.graph_out_shape(0)?, m, n)));
    Ok(t)
}

/// A Gemm on batched operands (no C), computed as a batched matmul. The
/// graph's shapes decide, so that every tile of one node binds alike.
fn batched_gemm(ctx: &KernelCtx) -> Result<bool> {
    let (a, b) = (ctx.graph_in_shape(0)?, ctx.graph_in_shape(1)?);
    let ta = Product::of(ctx.node)?.trans_a;
    let ok = plain_gemm_operands(&a, &b, ta) && !ctx.graph_out_shape(0)?.is_empty();
    Ok(!ok && a.len() > 2 && b.len() > 2 && ctx.node.input(2).is_none())
}

fn matmul_tile_space(ctx: &KernelCtx) -> Result<Tileable> {
    let (a, b, y) = (ctx.graph_in_shape(0)?, ctx.graph_in_shape(1)?, ctx.graph_out_shape(0)?);
    if a.len() < 2 || b.len() < 2 || y.len() < 2 {
        return Ok(Err(TileRefusal::OneD { a, b }));
    }
    let r = y.len();
    Ok(Ok(Space { split: (0..r).map(|d| d + 1 < r).collect(), dims: y }))
}

/// The part of a MatMul operand: batch dims broadcast against the tile,
/// the matrix dims whole except A's rows (`rows_axis`).
fn matmul_part(shape: &[usize], rows_axis: Option<usize>, start: &[usize], len: &[usize]) -> Part {
    let (n, r) = (shape.len(), start.len());
    let mut s = vec![0; n];
    let mut l = shape.to_vec();
    for k in 0..n - 2 {
        if shape[k] != 1 && k + r >= n {
            s[k] = start[k + r - n];
            l[k] = len[k + r - n];
        }
    }
    if let Some(ax) = rows_axis {
        s[ax] = start[r - 2];
        l[ax] = len[r - 2];
    }
    if l == shape {
        Part::Whole
    } else {
        Part::Box { start: s, len: l }
    }
}

fn matmul_tile_map(ctx: &KernelCtx, start: &[usize], len: &[usize]) -> Result<TileMap> {
    let (a, b) = (ctx.graph_in_shape(0)?, ctx.graph_in_shape(1)?);
    let ta = Product::of(ctx.node)?.trans_a;
    let rows = if ta { a.len() - 1 } else { a.len() - 2 };
    let inputs = vec![Some(matmul_part(&a, Some(rows), start, len)), Some(matmul_part(&b, None, start, len))];
    let y = ctx.graph_out_shape(0)?;
    Ok(TileMap { inputs, outputs: vec![Some(tile::broadcast_part(&y, start, len))], ..Default::default() })
}
