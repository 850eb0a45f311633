#!/usr/bin/env python3
"""Reference vectors for the C kernel tests (runtime/tests/kernel_tests.c).

Each case is one operator run alone: a single-node ONNX graph executed by
onnxruntime 1.19.2 (CPU), including the com.microsoft gradient ops, or, for
the few operators onnxruntime has no kernel for (MSELoss / MSELossGrad as
TrainDeeploy defines them, GlobalAveragePoolGrad, SGD), numpy in float64
rounded to float32. The source of each case is in CASES below (`ort` /
`numpy`).

Every case is written to runtime/tests/refs/<case>.npz with keys
  in_<name>   input arrays        out_<name>  reference outputs
  p_<name>    int64 kernel params f_<name>    float32 kernel params
The p_ / f_ values are what a generator derives from the ONNX attributes
for the kernel's args struct; the C driver only copies them.

Usage: python tools/make_kernel_refs.py [--out runtime/tests/refs]
Needs: tools/requirements.txt (no torch).
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

OPSET = 20
RNG = np.random.default_rng(20240611)
F32 = np.float32

CASES = {}  # name -> (source, function)


def case(source):
    def deco(fn):
        CASES[fn.__name__] = (source, fn)
        return fn
    return deco


def rnd(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(F32)


def elem_type(a):
    return {
        np.dtype(np.float32): TensorProto.FLOAT,
        np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.bool_): TensorProto.BOOL,
    }[a.dtype]


def run_ort(op, inputs, outputs, attrs=None, domain=""):
    """inputs: list of (name, array or None for an omitted optional input);
    outputs: list of (name, shape, dtype) - declaring output shapes matters:
    onnxruntime 1.19 crashes on MaxPoolGrad / AveragePoolGrad without them."""
    node = helper.make_node(op, [n if a is not None else "" for n, a in inputs],
                            [n for n, _, _ in outputs], domain=domain, **(attrs or {}))
    g = helper.make_graph(
        [node], "single_op",
        [helper.make_tensor_value_info(n, elem_type(a), list(a.shape)) for n, a in inputs
         if a is not None],
        [helper.make_tensor_value_info(n, t, s) for n, s, t in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 9
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    res = sess.run(None, {n: a for n, a in inputs if a is not None})
    return dict(zip([n for n, _, _ in outputs], res))


def bcast_strides(shape, out_shape):
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    st, acc = [], 1
    for d in reversed(range(len(shape))):
        st.append(0 if shape[d] == 1 and out_shape[d] != 1 else acc)
        acc *= shape[d]
    return list(reversed(st))


def I(v):
    return np.asarray(v, dtype=np.int64).reshape(-1)


def Fv(v):
    return np.asarray(v, dtype=F32).reshape(-1)


F = TensorProto.FLOAT
L = TensorProto.INT64


# ---------------------------------------------------------------- elementwise
def _binary(op, a, b):
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    r = run_ort(op, [("A", a), ("B", b)], [("C", list(out_shape), F)])
    d = {"in_a": a, "in_b": b, "out_y": r["C"]}
    if a.shape == b.shape:
        d["p_shape"] = I([])  # contiguous fast path
        d["p_astr"] = I([])
        d["p_bstr"] = I([])
    else:
        d["p_shape"] = I(out_shape)
        d["p_astr"] = I(bcast_strides(a.shape, out_shape))
        d["p_bstr"] = I(bcast_strides(b.shape, out_shape))
    return d


@case("ort")
def add_same():
    return _binary("Add", rnd(3, 5), rnd(3, 5))


@case("ort")
def add_bcast():
    return _binary("Add", rnd(2, 3, 4), rnd(3, 1))


@case("ort")
def sub_bcast():
    return _binary("Sub", rnd(2, 1, 4), rnd(3, 4))


@case("ort")
def mul_bcast():
    return _binary("Mul", rnd(2, 3, 4), rnd(4))


@case("ort")
def div_bcast():
    return _binary("Div", rnd(4, 1), rnd(1, 5, lo=0.5, hi=2.0))


@case("ort")
def pow_square():
    # onnxruntime's MSE decomposition: Pow(diff, 2.0)
    return _binary("Pow", rnd(3, 5, lo=-3, hi=3), np.array(2.0, dtype=F32))


# values at and next to the kinks: exact zeros, the smallest normal and tiny
# magnitudes, so a boundary error (>= vs >, an epsilon) changes the result
EDGES = np.array([0.0, -0.0, 1.2e-38, -1.2e-38, 1e-6, -1e-6, 3e-3, -3e-3], dtype=F32)


def with_edges(x):
    flat = x.reshape(-1).copy()
    flat[:len(EDGES)] = EDGES
    return flat.reshape(x.shape)


@case("ort")
def relu():
    x = with_edges(rnd(3, 7))
    return {"in_x": x, "out_y": run_ort("Relu", [("X", x)], [("Y", [3, 7], F)])["Y"]}


@case("ort")
def gelu():
    x = with_edges(rnd(4, 9, lo=-4, hi=4))
    y = run_ort("Gelu", [("X", x)], [("Y", [4, 9], F)], {"approximate": "none"})["Y"]
    return {"in_x": x, "out_y": y}


@case("ort")
def scale_mul():
    x, s = rnd(2, 6), np.array(0.375, dtype=F32)
    y = run_ort("Scale", [("X", x), ("S", s)], [("Y", [2, 6], F)], {"scale_down": 0},
                "com.microsoft")["Y"]
    return {"in_x": x, "in_scale": s.reshape(1), "out_y": y, "p_scale_down": I([0])}


@case("ort")
def scale_down():
    x, s = rnd(2, 6), np.array(36.0, dtype=F32)
    y = run_ort("Scale", [("X", x), ("S", s)], [("Y", [2, 6], F)], {"scale_down": 1},
                "com.microsoft")["Y"]
    return {"in_x": x, "in_scale": s.reshape(1), "out_y": y, "p_scale_down": I([1])}


@case("ort")
def sum3():
    xs = [rnd(4, 5) for _ in range(3)]
    y = run_ort("Sum", [("x0", xs[0]), ("x1", xs[1]), ("x2", xs[2])], [("Y", [4, 5], F)])["Y"]
    return {"in_x0": xs[0], "in_x1": xs[1], "in_x2": xs[2], "out_y": y}


@case("ort")
def relu_grad():
    # onnxruntime's gradient graph feeds ReluGrad the Relu *input* X
    dy, x = rnd(3, 8), with_edges(rnd(3, 8))
    dx = run_ort("ReluGrad", [("dY", dy), ("X", x)], [("dX", [3, 8], F)], {},
                 "com.microsoft")["dX"]
    return {"in_dy": dy, "in_x": x, "out_dx": dx}


@case("ort")
def gelu_grad():
    dy, x = rnd(4, 9), with_edges(rnd(4, 9, lo=-4, hi=4))
    dx = run_ort("GeluGrad", [("dY", dy), ("X", x)], [("dX", [4, 9], F)], {},
                 "com.microsoft")["dX"]
    # pin the formula: erf form, no tanh approximation
    xd = x.astype(np.float64)
    import math
    erf = np.vectorize(math.erf)
    ref = dy * (0.5 * (1 + erf(xd / math.sqrt(2))) + xd * np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi))
    assert np.allclose(dx, ref, rtol=1e-5, atol=1e-6), "GeluGrad is not the erf form"
    return {"in_dy": dy, "in_x": x, "out_dx": dx}


# ---------------------------------------------------------------- linear
def _gemm(m, n, k, ta, tb, alpha, beta, c_shape):
    a = rnd(*((k, m) if ta else (m, k)))
    b = rnd(*((n, k) if tb else (k, n)))
    ins = [("A", a), ("B", b)]
    d = {"in_a": a, "in_b": b}
    csm = csn = 0
    if c_shape is not None:
        c = rnd(*c_shape)
        ins.append(("C", c))
        d["in_c"] = c
        st = bcast_strides(c.shape, (m, n))
        csm, csn = st
    y = run_ort("Gemm", ins, [("Y", [m, n], F)],
                {"transA": ta, "transB": tb, "alpha": alpha, "beta": beta})["Y"]
    d["out_y"] = y
    d["p_gemm"] = I([m, n, k, ta, tb, csm, csn, 1 if c_shape is not None else 0])
    d["f_gemm"] = Fv([alpha, beta])
    return d


@case("ort")
def gemm_bias():
    return _gemm(5, 6, 7, 0, 0, 1.0, 1.0, (6,))


@case("ort")
def gemm_trans():
    return _gemm(5, 4, 6, 1, 1, 0.5, 2.0, (5, 1))


@case("ort")
def gemm_noc():
    return _gemm(3, 8, 5, 1, 0, 1.0, 1.0, None)


def _matmul(ashape, bshape, fused=None):
    """fused = (transA, transB, alpha) runs com.microsoft FusedMatMul; the
    stored operands then hold op(A) / op(B) transposed as the kernel reads
    them, and p_fused carries the attributes."""
    a, b = rnd(*ashape), rnd(*bshape)
    out = np.matmul(a, b).shape
    m, k, n = ashape[-2], ashape[-1], bshape[-1]
    extra = {}
    if fused is None:
        y = run_ort("MatMul", [("A", a), ("B", b)], [("Y", list(out), F)])["Y"]
    else:
        ta, tb, alpha = fused
        sa = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if ta else a
        sb = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if tb else b
        y = run_ort("FusedMatMul", [("A", sa), ("B", sb)], [("Y", list(out), F)],
                    {"transA": ta, "transB": tb, "alpha": alpha}, domain="com.microsoft")["Y"]
        a, b = sa, sb
        extra = {"p_fused": I([ta, tb]), "f_fused": np.array([alpha], F32)}
    bshape_out = out[:-2]
    abs_ = bcast_strides(ashape[:-2], bshape_out) if bshape_out else []
    bbs = bcast_strides(bshape[:-2], bshape_out) if bshape_out else []
    # batch strides count matrices: scale to elements
    abs_ = [s * m * k for s in abs_]
    bbs = [s * k * n for s in bbs]
    return {"in_a": a, "in_b": b, "out_y": y,
            "p_mm": I([m, n, k, int(np.prod(bshape_out)) if bshape_out else 1]),
            "p_bshape": I(bshape_out), "p_abstr": I(abs_), "p_bbstr": I(bbs), **extra}


@case("ort")
def matmul_batched():
    return _matmul((2, 3, 4, 5), (5, 6))


@case("ort")
def matmul_bcast():
    return _matmul((2, 1, 3, 4), (1, 3, 4, 2))



# ---------------------------------------------------------------- conv
def _conv_params(x, w, strides, pads, dil, group, out_hw):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    return I([n, c, h, wd, m, out_hw[0], out_hw[1], kh, kw, strides[0], strides[1],
              dil[0], dil[1], pads[0], pads[1], group])


def _conv_case(xs, ws, strides, pads, dil, group, bias, grad):
    x, w = rnd(*xs), rnd(*ws)
    attrs = {"strides": strides, "pads": pads, "dilations": dil, "group": group,
             "kernel_shape": list(ws[2:])}
    oh = (xs[2] + pads[0] + pads[2] - dil[0] * (ws[2] - 1) - 1) // strides[0] + 1
    ow = (xs[3] + pads[1] + pads[3] - dil[1] * (ws[3] - 1) - 1) // strides[1] + 1
    yshape = [xs[0], ws[0], oh, ow]
    d = {"in_x": x, "in_w": w, "p_conv": _conv_params(x, w, strides, pads, dil, group, (oh, ow))}
    if not grad:
        ins = [("X", x), ("W", w)]
        if bias:
            b = rnd(ws[0])
            ins.append(("B", b))
            d["in_b"] = b
        d["out_y"] = run_ort("Conv", ins, [("Y", yshape, F)], attrs)["Y"]
    else:
        dy = rnd(*yshape)
        r = run_ort("ConvGrad", [("dY", dy), ("X", x), ("W", w)],
                    [("dX", list(xs), F), ("dW", list(ws), F), ("dB", [ws[0]], F)], attrs,
                    "com.microsoft")
        d.update({"in_dy": dy, "out_dx": r["dX"], "out_dw": r["dW"], "out_db": r["dB"]})
    return d


@case("ort")
def conv_regular():
    return _conv_case((2, 3, 7, 6), (4, 3, 3, 3), [2, 1], [1, 0, 1, 2], [1, 2], 1, True, False)


@case("ort")
def conv_depthwise():
    return _conv_case((1, 4, 6, 6), (4, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 4, False, False)


@case("ort")
def conv_pointwise():
    return _conv_case((2, 5, 4, 4), (3, 5, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, True, False)


@case("ort")
def conv_grouped():
    return _conv_case((1, 4, 5, 5), (6, 2, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 2, True, False)


@case("ort")
def convgrad_regular():
    return _conv_case((2, 3, 7, 6), (4, 3, 3, 3), [2, 1], [1, 0, 1, 2], [1, 2], 1, True, True)


@case("ort")
def convgrad_depthwise():
    return _conv_case((2, 4, 6, 6), (4, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 4, False, True)


@case("ort")
def convgrad_grouped():
    return _conv_case((1, 4, 5, 5), (6, 2, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 2, True, True)


@case("ort")
def convgrad_pointwise():
    return _conv_case((2, 5, 4, 4), (3, 5, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, True, True)


# ---------------------------------------------------------------- pooling
def _pool_out(h, k, s, p0, p1, ceil):
    v = (h + p0 + p1 - k)
    return (-(-v // s) if ceil else v // s) + 1


def _pool_params(xs, os_, k, s, pads, cip=0, dil=(1, 1)):
    return I([xs[0], xs[1], xs[2], xs[3], os_[2], os_[3], k[0], k[1], s[0], s[1], dil[0], dil[1],
              pads[0], pads[1], pads[2], pads[3], cip])


def _maxpool(xs, k, s, pads, ceil=0, x=None):
    x = rnd(*xs) if x is None else x
    oh = _pool_out(xs[2], k[0], s[0], pads[0], pads[2], ceil)
    ow = _pool_out(xs[3], k[1], s[1], pads[1], pads[3], ceil)
    os_ = [xs[0], xs[1], oh, ow]
    r = run_ort("MaxPool", [("X", x)], [("Y", os_, F), ("I", os_, L)],
                {"kernel_shape": k, "strides": s, "pads": pads, "ceil_mode": ceil})
    return x, os_, r


@case("ort")
def maxpool():
    x, os_, r = _maxpool((2, 3, 7, 7), [3, 3], [2, 2], [1, 1, 1, 1])
    return {"in_x": x, "out_y": r["Y"], "out_indices": r["I"],
            "p_pool": _pool_params(x.shape, os_, [3, 3], [2, 2], [1, 1, 1, 1])}


@case("ort")
def maxpool_ceil_ties():
    # ceil_mode windows that overhang the input, and ties (first max wins)
    x = np.round(rnd(1, 2, 5, 5) * 2) / 2
    x, os_, r = _maxpool((1, 2, 5, 5), [2, 2], [2, 2], [0, 0, 0, 0], ceil=1, x=x.astype(F32))
    return {"in_x": x, "out_y": r["Y"], "out_indices": r["I"],
            "p_pool": _pool_params(x.shape, os_, [2, 2], [2, 2], [0, 0, 0, 0])}


@case("ort")
def maxpool_grad():
    # overlapping windows (k3 s2): several outputs scatter into one input
    x, os_, r = _maxpool((2, 3, 7, 7), [3, 3], [2, 2], [1, 1, 1, 1])
    dy = rnd(*os_)
    dx = run_ort("MaxPoolGrad", [("dY", dy), ("I", r["I"])], [("dX", list(x.shape), F)],
                 {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})["dX"]
    return {"in_dy": dy, "in_indices": r["I"], "out_dx": dx,
            "p_pool": _pool_params(x.shape, os_, [3, 3], [2, 2], [1, 1, 1, 1])}


def _avg(xs, k, s, pads, cip, ceil, grad):
    oh = _pool_out(xs[2], k[0], s[0], pads[0], pads[2], ceil)
    ow = _pool_out(xs[3], k[1], s[1], pads[1], pads[3], ceil)
    os_ = [xs[0], xs[1], oh, ow]
    attrs = {"kernel_shape": k, "strides": s, "pads": pads, "count_include_pad": cip,
             "ceil_mode": ceil}
    d = {"p_pool": _pool_params(xs, os_, k, s, pads, cip)}
    if not grad:
        x = rnd(*xs)
        d.update({"in_x": x, "out_y": run_ort("AveragePool", [("X", x)], [("Y", os_, F)], attrs)["Y"]})
    else:
        attrs.pop("ceil_mode")
        dy = rnd(*os_)
        d.update({"in_dy": dy, "out_dx": run_ort("AveragePoolGrad", [("dY", dy)],
                                                 [("dX", list(xs), F)], attrs)["dX"]})
    return d


@case("ort")
def avgpool_excl_pad():
    return _avg((2, 3, 7, 6), [3, 3], [2, 2], [1, 1, 1, 1], 0, 0, False)


@case("ort")
def avgpool_incl_pad():
    return _avg((2, 3, 7, 6), [3, 3], [2, 2], [1, 0, 1, 2], 1, 0, False)


@case("ort")
def avgpool_ceil():
    return _avg((1, 2, 6, 6), [3, 3], [2, 2], [0, 0, 0, 0], 0, 1, False)


@case("ort")
def avgpoolgrad_excl_pad():
    return _avg((2, 3, 7, 6), [3, 3], [2, 2], [1, 1, 1, 1], 0, 0, True)


@case("ort")
def avgpoolgrad_incl_pad():
    return _avg((2, 3, 7, 6), [3, 3], [2, 2], [1, 1, 1, 1], 1, 0, True)


@case("ort")
def global_avgpool():
    x = rnd(2, 3, 5, 4)
    y = run_ort("GlobalAveragePool", [("X", x)], [("Y", [2, 3, 1, 1], F)])["Y"]
    return {"in_x": x, "out_y": y, "p_pool": _pool_params(x.shape, [2, 3, 1, 1], [5, 4], [1, 1],
                                                          [0, 0, 0, 0])}


@case("numpy")
def global_avgpool_grad():
    # onnxruntime has no GlobalAveragePoolGrad kernel (its gradient graph
    # uses Scale + Expand); reference: dY / (H * W) broadcast
    dy = rnd(2, 3, 1, 1)
    dx = np.broadcast_to(dy.astype(np.float64) / 20.0, (2, 3, 5, 4)).astype(F32)
    return {"in_dy": dy, "out_dx": np.ascontiguousarray(dx),
            "p_pool": _pool_params((2, 3, 5, 4), [2, 3, 1, 1], [5, 4], [1, 1], [0, 0, 0, 0])}


# ---------------------------------------------------------------- normalization
@case("ort")
def batchnorm_infer():
    x, s, b, m, v = rnd(2, 3, 4, 5), rnd(3), rnd(3), rnd(3), rnd(3, lo=0.5, hi=1.5)
    y = run_ort("BatchNormalization", [("X", x), ("s", s), ("b", b), ("m", m), ("v", v)],
                [("Y", list(x.shape), F)], {"epsilon": 1e-5})["Y"]
    return {"in_x": x, "in_scale": s, "in_bias": b, "in_mean": m, "in_var": v, "out_y": y,
            "p_bn": I([2, 3, 20]), "f_bn": Fv([1e-5, 0.9])}


@case("ort")
def batchnorm_train():
    x, s, b, m, v = rnd(4, 3, 3, 2, lo=-2, hi=3), rnd(3), rnd(3), rnd(3), rnd(3, lo=0.5, hi=1.5)
    r = run_ort("BatchNormInternal", [("X", x), ("s", s), ("b", b), ("m", m), ("v", v)],
                [("Y", list(x.shape), F), ("rm", [3], F), ("rv", [3], F), ("sm", [3], F),
                 ("si", [3], F)], {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 1},
                "com.microsoft")
    # pin onnxruntime's convention: running_var uses the biased batch variance
    bv = x.astype(np.float64).var(axis=(0, 2, 3))
    assert np.allclose(r["rv"], 0.9 * v + 0.1 * bv, rtol=1e-5), "running_var is not biased"
    return {"in_x": x, "in_scale": s, "in_bias": b, "in_mean": m, "in_var": v,
            "out_y": r["Y"], "out_running_mean": r["rm"], "out_running_var": r["rv"],
            "out_saved_mean": r["sm"], "out_saved_inv_std": r["si"],
            "p_bn": I([4, 3, 6]), "f_bn": Fv([1e-5, 0.9])}


@case("ort")
def batchnorm_grad():
    x, s, b = rnd(4, 3, 3, 2, lo=-2, hi=3), rnd(3), rnd(3)
    r = run_ort("BatchNormInternal", [("X", x), ("s", s), ("b", b), ("m", rnd(3)),
                                      ("v", rnd(3, lo=0.5, hi=1.5))],
                [("Y", list(x.shape), F), ("rm", [3], F), ("rv", [3], F), ("sm", [3], F),
                 ("si", [3], F)], {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 1},
                "com.microsoft")
    dy = rnd(*x.shape)
    g = run_ort("BatchNormalizationGrad", [("dY", dy), ("X", x), ("s", s), ("sm", r["sm"]),
                                           ("si", r["si"])],
                [("dX", list(x.shape), F), ("dS", [3], F), ("dB", [3], F)], {"epsilon": 1e-5},
                "com.microsoft")
    return {"in_dy": dy, "in_x": x, "in_scale": s, "in_saved_mean": r["sm"],
            "in_saved_inv_std": r["si"], "out_dx": g["dX"], "out_dscale": g["dS"],
            "out_dbias": g["dB"], "p_bn": I([4, 3, 6])}


def _ln(shape, axis):
    x = rnd(*shape, lo=-2, hi=2)
    ax = axis % len(shape)
    rows, cols = int(np.prod(shape[:ax])), int(np.prod(shape[ax:]))
    s, b = rnd(*shape[ax:]), rnd(*shape[ax:])
    stat = list(shape[:ax]) + [1] * (len(shape) - ax)
    r = run_ort("LayerNormalization", [("X", x), ("s", s), ("b", b)],
                [("Y", list(shape), F), ("M", stat, F), ("V", stat, F)],
                {"axis": axis, "epsilon": 1e-5})
    return x, s, b, r, rows, cols


@case("ort")
def layernorm_last():
    x, s, b, r, rows, cols = _ln((3, 4, 8), -1)
    return {"in_x": x, "in_scale": s, "in_bias": b, "out_y": r["Y"], "out_mean": r["M"],
            "out_inv_std": r["V"], "p_ln": I([rows, cols]), "f_ln": Fv([1e-5])}


@case("ort")
def layernorm_axis1():
    x, s, b, r, rows, cols = _ln((2, 3, 4), 1)
    return {"in_x": x, "in_scale": s, "in_bias": b, "out_y": r["Y"], "out_mean": r["M"],
            "out_inv_std": r["V"], "p_ln": I([rows, cols]), "f_ln": Fv([1e-5])}


@case("ort")
def layernorm_grad():
    x, s, b, r, rows, cols = _ln((3, 4, 8), -1)
    dy = rnd(*x.shape)
    g = run_ort("LayerNormalizationGrad", [("dY", dy), ("X", x), ("s", s), ("M", r["M"]),
                                           ("V", r["V"])],
                [("dX", list(x.shape), F), ("dS", [8], F), ("dB", [8], F)],
                {"axis": -1, "epsilon": 1e-5}, "com.microsoft")
    return {"in_dy": dy, "in_x": x, "in_scale": s, "in_mean": r["M"], "in_inv_std": r["V"],
            "out_dx": g["dX"], "out_dscale": g["dS"], "out_dbias": g["dB"],
            "p_ln": I([rows, cols]), "f_ln": Fv([1e-5])}


# ---------------------------------------------------------------- softmax
@case("ort")
def softmax_last():
    x = rnd(3, 4, 6, lo=-3, hi=3)
    y = run_ort("Softmax", [("X", x)], [("Y", [3, 4, 6], F)], {"axis": -1})["Y"]
    return {"in_x": x, "out_y": y, "p_sm": I([12, 6, 1])}


@case("ort")
def softmax_mid():
    x = rnd(2, 5, 3, lo=-3, hi=3)
    y = run_ort("Softmax", [("X", x)], [("Y", [2, 5, 3], F)], {"axis": 1})["Y"]
    return {"in_x": x, "out_y": y, "p_sm": I([2, 5, 3])}


@case("ort")
def softmaxgrad_13():
    x = rnd(2, 5, 3, lo=-3, hi=3)
    y = run_ort("Softmax", [("X", x)], [("Y", [2, 5, 3], F)], {"axis": 1})["Y"]
    dy = rnd(2, 5, 3)
    dx = run_ort("SoftmaxGrad_13", [("dY", dy), ("Y", y)], [("dX", [2, 5, 3], F)], {"axis": 1},
                 "com.microsoft")["dX"]
    return {"in_dy": dy, "in_y": y, "out_dx": dx, "p_sm": I([2, 5, 3])}


@case("ort")
def softmaxgrad_2d():
    # com.microsoft SoftmaxGrad keeps the pre-13 semantics: axis=1 on
    # [2,3,4] normalizes over the flattened [3*4]
    x = rnd(2, 3, 4, lo=-3, hi=3)
    e = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(axis=1, keepdims=True))
    y = (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4).astype(F32)
    dy = rnd(2, 3, 4)
    dx = run_ort("SoftmaxGrad", [("dY", dy), ("Y", y)], [("dX", [2, 3, 4], F)], {"axis": 1},
                 "com.microsoft")["dX"]
    return {"in_dy": dy, "in_y": y, "out_dx": dx, "p_sm": I([2, 12, 1])}


# ---------------------------------------------------------------- losses
def _sce(scores_shape, labels, reduction, ignore):
    s = rnd(*scores_shape, lo=-3, hi=3)
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    r = run_ort("SoftmaxCrossEntropyLoss", [("S", s), ("L", labels)],
                [("loss", [], F), ("lp", list(scores_shape), F)], attrs)
    n, c = scores_shape[0], scores_shape[1]
    inner = int(np.prod(scores_shape[2:])) if len(scores_shape) > 2 else 1
    p = I([n, c, inner, ignore is not None, ignore if ignore is not None else 0,
           0 if reduction == "mean" else 1, 0])
    return s, r, p


@case("ort")
def sce_mean_ignore():
    labels = np.array([1, 0, 4, 2, 3, 2], dtype=np.int64)
    s, r, p = _sce((6, 5), labels, "mean", 2)
    return {"in_scores": s, "in_labels": labels, "out_loss": r["loss"].reshape(1),
            "out_log_prob": r["lp"], "p_sce": p}


@case("ort")
def sce_mean_nd():
    labels = RNG.integers(0, 4, size=(2, 3)).astype(np.int64)
    s, r, p = _sce((2, 4, 3), labels, "mean", None)
    return {"in_scores": s, "in_labels": labels, "out_loss": r["loss"].reshape(1),
            "out_log_prob": r["lp"], "p_sce": p}


@case("ort")
def sce_sum():
    labels = np.array([3, 1, 0, 2], dtype=np.int64)
    s, r, p = _sce((4, 5), labels, "sum", None)
    return {"in_scores": s, "in_labels": labels, "out_loss": r["loss"].reshape(1),
            "out_log_prob": r["lp"], "p_sce": p}


def _sce_grad(scores_shape, labels, reduction, ignore):
    s, r, p = _sce(scores_shape, labels, reduction, ignore)
    dy = np.array(0.75, dtype=F32)
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    dx = run_ort("SoftmaxCrossEntropyLossGrad", [("dY", dy), ("lp", r["lp"]), ("L", labels)],
                 [("dX", list(scores_shape), F)], attrs, "com.microsoft")["dX"]
    return {"in_dy": dy.reshape(1), "in_log_prob": r["lp"], "in_labels": labels, "out_dx": dx,
            "p_sce": p}


@case("ort")
def sce_grad_mean_ignore():
    return _sce_grad((6, 5), np.array([1, 0, 4, 2, 3, 2], dtype=np.int64), "mean", 2)


@case("ort")
def sce_grad_mean_nd():
    return _sce_grad((2, 4, 3), RNG.integers(0, 4, size=(2, 3)).astype(np.int64), "mean", None)


@case("ort")
def sce_grad_sum():
    return _sce_grad((4, 5), np.array([3, 1, 0, 2], dtype=np.int64), "sum", None)


@case("numpy")
def mse_loss():
    # TrainDeeploy's MSELoss: mean of squared differences (no onnxruntime op)
    x, t = rnd(37), rnd(37)
    loss = np.mean((x.astype(np.float64) - t) ** 2)
    return {"in_x": x, "in_target": t, "out_loss": np.array([loss], dtype=F32)}


@case("numpy")
def mse_loss_grad():
    x, t, dy = rnd(37), rnd(37), np.array([0.5], dtype=F32)
    dx = 2.0 * (x.astype(np.float64) - t) / 37.0 * dy[0]
    return {"in_dy": dy, "in_x": x, "in_target": t, "out_dx": dx.astype(F32)}


# ---------------------------------------------------------------- reductions
def _reduce(op, shape, axes, keepdims):
    x = rnd(*shape)
    ax = sorted(a % len(shape) for a in axes)
    out = [1 if i in ax else d for i, d in enumerate(shape) if keepdims or i not in ax]
    y = run_ort(op, [("X", x), ("axes", np.array(axes, dtype=np.int64))], [("Y", out, F)],
                {"keepdims": keepdims})["Y"]
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    keep = [i for i in range(len(shape)) if i not in ax]
    return {"in_x": x, "out_y": y,
            "p_keep_shape": I([shape[i] for i in keep]), "p_keep_strides": I([strides[i] for i in keep]),
            "p_red_shape": I([shape[i] for i in ax]), "p_red_strides": I([strides[i] for i in ax])}


@case("ort")
def reducesum_axes02():
    return _reduce("ReduceSum", (2, 3, 4), [0, 2], 0)


@case("ort")
def reducesum_all():
    return _reduce("ReduceSum", (3, 5, 2), [0, 1, 2], 0)


@case("ort")
def reducemean_keep():
    return _reduce("ReduceMean", (2, 3, 4), [1], 1)


@case("ort")
def reducemean_last():
    return _reduce("ReduceMean", (4, 6), [-1], 0)


# ---------------------------------------------------------------- data movement
@case("ort")
def identity_copy():
    x = rnd(3, 5)
    return {"in_x": x, "out_y": run_ort("Identity", [("X", x)], [("Y", [3, 5], F)])["Y"]}


@case("ort")
def transpose_nchw_nhwc():
    x = rnd(2, 3, 4, 5)
    perm = [0, 2, 3, 1]
    y = run_ort("Transpose", [("X", x)], [("Y", [2, 4, 5, 3], F)], {"perm": perm})["Y"]
    st = [60, 20, 5, 1]
    return {"in_x": x, "out_y": y, "p_shape": I(y.shape), "p_strides": I([st[p] for p in perm]),
            "p_offset": I([0])}


@case("ort")
def slice_neg_step():
    x = rnd(5, 6, 7)
    starts, ends, axes, steps = [1, -1, 0], [4, 0, 7], [0, 1, 2], [1, -2, 3]
    y = run_ort("Slice", [("X", x), ("s", np.array(starts, np.int64)),
                          ("e", np.array(ends, np.int64)), ("a", np.array(axes, np.int64)),
                          ("t", np.array(steps, np.int64))], [("Y", [3, 3, 3], F)])["Y"]
    st = [42, 7, 1]
    norm_starts = [1, 5, 0]  # -1 on an extent of 6
    off = sum(s * t for s, t in zip(norm_starts, st))
    return {"in_x": x, "out_y": y, "p_shape": I(y.shape),
            "p_strides": I([st[i] * steps[i] for i in range(3)]), "p_offset": I([off])}


@case("ort")
def expand_bcast():
    x = rnd(3, 1)
    y = run_ort("Expand", [("X", x), ("shape", np.array([2, 3, 4], np.int64))],
                [("Y", [2, 3, 4], F)])["Y"]
    return {"in_x": x, "out_y": y, "p_shape": I([2, 3, 4]), "p_strides": I([0, 1, 0]),
            "p_offset": I([0])}


@case("ort")
def concat_axis1():
    xs = [rnd(2, k, 3) for k in (1, 4, 2)]
    y = run_ort("Concat", [("x0", xs[0]), ("x1", xs[1]), ("x2", xs[2])], [("Y", [2, 7, 3], F)],
                {"axis": 1})["Y"]
    return {"in_x0": xs[0], "in_x1": xs[1], "in_x2": xs[2], "out_y": y,
            "p_sizes": I([1, 4, 2]), "p_outer_inner": I([2, 3])}


# ---------------------------------------------------------------- training
def _accum(reset):
    buf, g = rnd(10), rnd(10)
    # onnxruntime really accumulates in place: it writes the fed numpy
    # buffer, so keep the original for in_buffer
    r = run_ort("InPlaceAccumulatorV2", [("B", buf.copy()), ("G", g), ("R", np.array([reset]))],
                [("U", [1], TensorProto.BOOL), ("O", [10], F)], {}, "com.microsoft")
    expect = g if reset else buf + g
    assert np.array_equal(r["O"], expect) and bool(r["U"][0]), "InPlaceAccumulatorV2 semantics"
    return {"in_buffer": buf, "in_grad": g, "in_reset": np.array([int(reset)], dtype=np.int64),
            "out_buffer": r["O"]}


@case("ort")
def accumulate_add():
    return _accum(False)


@case("ort")
def accumulate_reset():
    return _accum(True)


@case("numpy")
def sgd():
    # w - lr * g in float32, as the SGD node computes it (no onnxruntime op
    # in the default domain)
    w, g, lr = rnd(33), rnd(33), F32(0.01)
    return {"in_w": w, "in_g": g, "out_w": (w - lr * g).astype(F32), "f_lr": Fv([lr])}


# Cases added later go last: they draw from the shared RNG after the others,
# so the earlier reference files stay byte-identical.
@case("ort")
def fused_matmul_trans():
    return _matmul((2, 3, 4, 5), (3, 5, 6), fused=(1, 1, 0.5))


@case("ort")
def fused_matmul_ta():
    return _matmul((4, 5), (5, 3), fused=(1, 0, 1.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "runtime", "tests", "refs"))
    args = ap.parse_args()
    assert ort.__version__ == "1.19.2", f"expected onnxruntime 1.19.2, found {ort.__version__}"
    assert onnx.__version__ == "1.17.0", f"expected onnx 1.17.0, found {onnx.__version__}"
    os.makedirs(args.out, exist_ok=True)
    for f in os.listdir(args.out):
        if f.endswith(".npz"):
            os.remove(os.path.join(args.out, f))
    total = 0
    for name, (source, fn) in CASES.items():
        d = fn()
        for k, v in d.items():
            assert k.split("_")[0] in ("in", "out", "p", "f"), k
            if k.startswith("out_"):
                assert np.all(np.isfinite(v)), (name, k)
        path = os.path.join(args.out, name + ".npz")
        np.savez_compressed(path, **{k: np.ascontiguousarray(v) for k, v in d.items()})
        total += os.path.getsize(path)
        print(f"{name:24s} {source:6s} {', '.join(k for k in d if k.startswith('out_'))}")
    print(f"{len(CASES)} cases, {total} bytes in {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
