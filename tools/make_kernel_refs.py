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
import itertools
import os
import sys

import numpy as np
import onnx
try:
    import onnxruntime as ort
except ImportError:  # --int-forms needs numpy only
    ort = None
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


# The optimizer steps of derived training (src/ops/training.rs).
@case("numpy")
def momentum_sgd():
    # PyTorch's SGD with momentum, in float32 (the references of derived
    # training run the same formula as an ONNX graph on onnxruntime)
    w, g, v = rnd(33), rnd(33), rnd(33)
    lr, mu, wd = F32(0.05), F32(0.9), F32(0.01)
    v_out = (mu * v + (g + wd * w)).astype(F32)
    return {"in_w": w, "in_g": g, "in_velocity": v, "out_w": (w - lr * v_out).astype(F32),
            "out_velocity": v_out, "f_hyper": Fv([lr, mu, wd])}


def _adamw_ort(w, g, m, v, lr, step, b1, b2, eps, wd):
    """com.microsoft AdamWOptimizer (adam_mode 1, correct_bias 1) over
    one-member sequences: (w, m, v) after the step numbered `step`."""
    ins = [helper.make_tensor_value_info(n, F, list(w.shape)) for n in "wgmv"]
    ins += [helper.make_tensor_value_info("lr", F, []), helper.make_tensor_value_info("step", L, [])]
    nodes = [helper.make_node("SequenceConstruct", [n], [n + "s"]) for n in "wgmv"]
    nodes.append(helper.make_node("AdamWOptimizer", ["lr", "step", "ws", "gs", "ms", "vs"], ["flag", "wo", "mo", "vo"],
                                  domain="com.microsoft", alpha=b1, beta=b2, epsilon=eps, weight_decay=wd,
                                  adam_mode=1, correct_bias=1))
    nodes.append(helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("z", L, [], [0])))
    outs = []
    for n in ("wo", "mo", "vo"):
        nodes.append(helper.make_node("SequenceAt", [n, "zero"], [n + "_t"]))
        outs.append(helper.make_tensor_value_info(n + "_t", F, list(w.shape)))
    m_ = helper.make_model(helper.make_graph(nodes, "adamw", ins, outs),
                           opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)])
    m_.ir_version = 9
    sess = ort.InferenceSession(m_.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"w": w, "g": g, "m": m, "v": v, "lr": np.array(lr, F32), "step": np.array(step, np.int64)})


@case("ort")
def adamw_step3():
    # onnxruntime numbers the steps from 1; the kernel keeps the count of
    # steps done (2 here) and advances it
    w, g, m, v = rnd(40), rnd(40), rnd(40), rnd(40, lo=0.0, hi=0.5)
    hyper = (F32(0.01), F32(0.9), F32(0.999), F32(1e-6), F32(0.01))
    wo, mo, vo = _adamw_ort(w, g, m, v, hyper[0], 3, *hyper[1:])
    return {"in_w": w, "in_g": g, "in_m": m, "in_v": v, "in_step": I([2]), "out_w": wo, "out_m": mo,
            "out_v": vo, "out_step": I([3]), "f_hyper": Fv(hyper)}


# Depthwise 3 x 3 row kernels: stride 1 with pad_left 2 (interior tiles of
# 8, 4, 2 and 1 columns, border columns with one and two taps), stride 2
# with asymmetric pads; the dX of stride 1 runs the same kernel on dy.
@case("ort")
def conv_depthwise_wide():
    return _conv_case((1, 3, 5, 16), (3, 1, 3, 3), [1, 1], [0, 2, 2, 1], [1, 1], 3, True, False)


@case("ort")
def conv_depthwise_s2():
    return _conv_case((2, 3, 9, 25), (3, 1, 3, 3), [2, 2], [1, 1, 0, 1], [1, 1], 3, True, False)


@case("ort")
def convgrad_depthwise_wide():
    return _conv_case((1, 3, 5, 16), (3, 1, 3, 3), [1, 1], [0, 2, 2, 1], [1, 1], 3, True, True)


@case("ort")
def convgrad_depthwise_s2():
    return _conv_case((2, 3, 9, 25), (3, 1, 3, 3), [2, 2], [1, 1, 0, 1], [1, 1], 3, True, True)


# ConvGrad with stride 1 and input channels in blocks of 4: on the 32-bit
# cores dX runs as the convolution of dy with the flipped weights
# (dilation, asymmetric pads, groups).
@case("ort")
def convgrad_s1_dilated():
    return _conv_case((2, 8, 6, 9), (5, 8, 3, 3), [1, 1], [1, 2, 0, 1], [1, 2], 1, True, True)


@case("ort")
def convgrad_s1_grouped():
    return _conv_case((1, 8, 5, 6), (6, 4, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 2, True, True)


# Conv / Gemm with the fused activation (act = 1: ReLU of the output, bias
# included): onnxruntime's Conv / Gemm, then ReLU (exact in float32).
def _relu_of(d):
    d["out_y"] = np.maximum(d["out_y"], F32(0))
    d["p_act"] = I([1])
    return d


@case("ort")
def conv_regular_relu():
    return _relu_of(_conv_case((1, 5, 6, 11), (6, 5, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1,
                               True, False))


@case("ort")
def conv_depthwise_relu():
    return _relu_of(_conv_case((1, 4, 6, 13), (4, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 4,
                               True, False))


@case("ort")
def conv_pointwise_relu():
    return _relu_of(_conv_case((1, 6, 3, 5), (5, 6, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1,
                               True, False))


@case("ort")
def gemm_bias_relu():
    return _relu_of(_gemm(9, 10, 7, 0, 0, 1.0, 1.0, (10,)))


# Strided ConvGrad dX in phases (the columns of one kw progression in
# tiles): 4 input channels a block, strides 2 and 3, a dilated width.
@case("ort")
def convgrad_s2_c4():
    return _conv_case((1, 4, 9, 11), (6, 4, 3, 3), [2, 2], [1, 1, 1, 0], [1, 1], 1, True, True)


@case("ort")
def convgrad_s3_dil2():
    return _conv_case((1, 4, 10, 17), (3, 4, 3, 3), [1, 3], [0, 2, 1, 1], [1, 2], 1, True, True)


# MaxPool without the Indices output (3-wide windows unrolled), stride 1
# and 2, rows of several 4-output tiles.
@case("ort")
def maxpool_k3s1_values():
    x, os_, r = _maxpool((1, 2, 6, 13), [3, 3], [1, 1], [1, 1, 1, 1])
    return {"in_x": x, "out_y": r["Y"],
            "p_pool": _pool_params(x.shape, os_, [3, 3], [1, 1], [1, 1, 1, 1])}


@case("ort")
def maxpool_k3s2_values():
    x, os_, r = _maxpool((2, 2, 9, 21), [3, 3], [2, 2], [1, 0, 0, 1])
    return {"in_x": x, "out_y": r["Y"],
            "p_pool": _pool_params(x.shape, os_, [3, 3], [2, 2], [1, 0, 0, 1])}


# Depthwise rows of 17 with pad 1: the 8-wide edge tiles that leave out the
# border columns' missing taps, and one interior column between them.
@case("ort")
def conv_depthwise_edges():
    return _conv_case((1, 2, 4, 17), (2, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 2, True, False)


@case("ort")
def convgrad_depthwise_edges():
    return _conv_case((2, 2, 4, 17), (2, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 2, True, True)


# MaxPool with Indices through the 3-wide tiles: ties (values on a grid of
# halves), so the first maximum in window order must win; strides 2 and 1.
@case("ort")
def maxpool_k3s2_idx_ties():
    x = (np.round(rnd(2, 2, 7, 19) * 2) / 2).astype(F32)
    x, os_, r = _maxpool((2, 2, 7, 19), [3, 3], [2, 2], [1, 1, 1, 1], x=x)
    return {"in_x": x, "out_y": r["Y"], "out_indices": r["I"],
            "p_pool": _pool_params(x.shape, os_, [3, 3], [2, 2], [1, 1, 1, 1])}


@case("ort")
def maxpool_k3s1_idx_ties():
    x = (np.round(rnd(1, 2, 5, 14) * 2) / 2).astype(F32)
    x, os_, r = _maxpool((1, 2, 5, 14), [3, 3], [1, 1], [0, 1, 1, 0], x=x)
    return {"in_x": x, "out_y": r["Y"], "out_indices": r["I"],
            "p_pool": _pool_params(x.shape, os_, [3, 3], [1, 1], [0, 1, 1, 0])}


# Strided ConvGrad dX with more output channels than one weight panel holds
# (12 x 4 taps x 4 channels): the partial sums wait in dx between chunks.
@case("ort")
def convgrad_s2_m12():
    return _conv_case((1, 4, 7, 13), (12, 4, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, True, True)


# 3 x 3 convolutions in the 32-bit cores' written-out tiles: rows of 12
# with pad 1 (a left-edge tile, an interior one, a right-edge one) over 6
# input channels (two weight chunks, the second continuing the sums in y),
# stride 2 with both edge tiles, and the gradients over rows of 10, 11 and
# 12 (dW's three entries into its 3-column passes; dX as a convolution).
@case("ort")
def conv_k3_edges():
    return _conv_case((1, 6, 5, 12), (8, 6, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, True, False)


@case("ort")
def conv_k3s2_edges():
    return _conv_case((1, 5, 9, 15), (4, 5, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, True, False)


@case("ort")
def convgrad_k3_w10():
    return _conv_case((2, 8, 6, 10), (8, 8, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, True, True)


@case("ort")
def convgrad_k3_w11():
    return _conv_case((1, 4, 5, 11), (4, 4, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, True, True)


@case("ort")
def convgrad_k3_w12():
    return _conv_case((1, 4, 4, 12), (8, 4, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, True, True)


def avgpool_onnx(x, k, s, d, pads, ceil, cip):
    """ONNX's AveragePool (the reference of onnx >= 1.18, as PyTorch), in
    float64 rounded to float32, for any number of spatial axes: a window's
    sum over its taps inside the input, divided with count_include_pad by
    its taps inside the padded input (a ceil_mode window's taps beyond the
    end pad do not count), else by its taps inside the input. onnxruntime
    1.19 (and the reference of onnx 1.17) divide by the whole kernel when
    a ceil_mode window overhangs the end pad."""
    sp = x.ndim - 2
    outs = [_win_out(x.shape[2 + a], k[a], s[a], d[a], pads[a], pads[sp + a], ceil) for a in range(sp)]
    y = np.zeros(x.shape[:2] + tuple(outs))
    x64 = x.astype(np.float64)
    for o in np.ndindex(*outs):
        inside, padded = [], 1
        for a in range(sp):
            taps = [o[a] * s[a] - pads[a] + j * d[a] for j in range(k[a])]
            inside.append([t for t in taps if 0 <= t < x.shape[2 + a]])
            padded *= sum(1 for t in taps if t < x.shape[2 + a] + pads[sp + a])
        acc = np.zeros(x.shape[:2])
        for t in itertools.product(*inside):
            acc += x64[(slice(None), slice(None)) + t]
        n = padded if cip else int(np.prod([len(i) for i in inside]))
        y[(slice(None), slice(None)) + o] = acc / n
    return y.astype(F32), outs


@case("numpy")
def avgpool_ceil_incl_pad():
    # 2-D, count_include_pad with ceil_mode windows overhanging the end pad:
    # their taps beyond it are not counted (ONNX's rule, avgpool_onnx)
    x = rnd(1, 2, 7, 6)
    y, outs = avgpool_onnx(x, [3, 2], [2, 2], [1, 1], [1, 0, 1, 0], 1, 1)
    return {"in_x": x, "out_y": y,
            "p_pool": _pool_params(x.shape, [1, 2] + outs, [3, 2], [2, 2], [1, 0, 1, 0], 1)}



# ================================================================ operator kernels
# The operators beyond a CNN training step's core, written to
# runtime/tests/refs/ops/ for runtime/tests/kernel_tests_ops.c. They draw from their own RNG so that
# neither set's reference files change when the other gains cases.
OPS = {}  # name -> (source, function)
RNG_OPS = np.random.default_rng(20261201)
U8 = TensorProto.UINT8
I32 = TensorProto.INT32
B = TensorProto.BOOL


def case2(source):
    def deco(fn):
        OPS[fn.__name__] = (source, fn)
        return fn
    return deco


def rnd2(*shape, lo=-1.0, hi=1.0):
    return RNG_OPS.uniform(lo, hi, size=shape).astype(F32)


def _elem2(a):
    if a.dtype == np.uint8:
        return U8
    return elem_type(a)


def run_graph(nodes, inputs, outputs, opset=OPSET, ms=True):
    """A small graph of nodes (helper.make_node) on onnxruntime 1.19.2;
    inputs: (name, array) - array None for an omitted optional input (its
    name is simply not fed); outputs: (name, shape, elem type)."""
    g = helper.make_graph(
        nodes, "case",
        [helper.make_tensor_value_info(n, _elem2(a), list(a.shape)) for n, a in inputs
         if a is not None],
        [helper.make_tensor_value_info(n, t, s) for n, s, t in outputs])
    ops = [helper.make_opsetid("", opset)]
    if ms:
        ops.append(helper.make_opsetid("com.microsoft", 1))
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 10 if opset >= 21 else 9
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    res = sess.run(None, {n: a for n, a in inputs if a is not None})
    return dict(zip([n for n, _, _ in outputs], res))


def run_op(op, inputs, outputs, attrs=None, domain="", opset=OPSET):
    node = helper.make_node(op, [n if a is not None else "" for n, a in inputs],
                            [n for n, _, _ in outputs], domain=domain, **(attrs or {}))
    return run_graph([node], inputs, outputs, opset)


def _unary2(op, x, attrs=None, domain=""):
    y = run_op(op, [("X", x)], [("Y", list(x.shape), F)], attrs, domain)["Y"]
    return {"in_x": x, "out_y": y}


def edges2(x, vals):
    flat = x.reshape(-1).copy()
    flat[:len(vals)] = vals
    return flat.reshape(x.shape)


ROUNDING = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.0, -2.0, 1e-7, -1e-7, 2.5, -2.5]


@case2("ort")
def ceil():
    return _unary2("Ceil", edges2(rnd2(3, 8, lo=-5, hi=5), ROUNDING))


@case2("ort")
def floor():
    return _unary2("Floor", edges2(rnd2(3, 8, lo=-5, hi=5), ROUNDING))


@case2("ort")
def exp():
    return _unary2("Exp", edges2(rnd2(4, 7, lo=-6, hi=6), [0.0, -0.0, 1e-7, 10.0, -20.0]))


@case2("ort")
def log():
    return _unary2("Log", edges2(rnd2(4, 7, lo=0.01, hi=20), [1.0, 1e-6, 1.2e-38, 1e6]))


@case2("ort")
def sqrt():
    return _unary2("Sqrt", edges2(rnd2(4, 7, lo=0, hi=20), [0.0, -0.0, 1e-8, 1.0, 4.0, 1e10]))


@case2("ort")
def neg():
    return _unary2("Neg", edges2(rnd2(3, 7, lo=-4, hi=4), [0.0, -0.0, 1.2e-38]))


@case2("ort")
def abs_():
    return _unary2("Abs", edges2(rnd2(3, 7, lo=-4, hi=4), [0.0, -0.0, -1.2e-38, 1.2e-38]))


@case2("ort")
def tanh():
    return _unary2("Tanh", edges2(rnd2(5, 9, lo=-5, hi=5), [0.0, -0.0, 1e-6, -1e-6, 12.0, -12.0]))


@case2("ort")
def sigmoid():
    return _unary2("Sigmoid", edges2(rnd2(5, 9, lo=-10, hi=10), [0.0, 1e-6, -1e-6, 30.0, -30.0,
                                                                 -90.0, 90.0]))


@case2("ort")
def erf():
    return _unary2("Erf", edges2(rnd2(5, 9, lo=-3, hi=3), [0.0, -0.0, 1e-6, -1e-6, 5.0, -5.0]))


HS_KINKS = [0.0, -3.0, 3.0, -2.5, 2.5, -3.0001, 3.0001, 1e-6]


@case2("ort")
def hard_swish():
    return _unary2("HardSwish", edges2(rnd2(5, 9, lo=-5, hi=5), HS_KINKS))


def _hard_sigmoid(alpha, beta, attrs):
    d = _unary2("HardSigmoid", edges2(rnd2(5, 9, lo=-5, hi=5), HS_KINKS), attrs)
    d["f_param"] = Fv([alpha, beta])
    return d


@case2("ort")
def hard_sigmoid_default():
    return _hard_sigmoid(0.2, 0.5, {})


@case2("ort")
def hard_sigmoid_custom():
    return _hard_sigmoid(0.3, 0.4, {"alpha": 0.3, "beta": 0.4})


def _swish(alpha):
    # Swish (opset 24) is not in onnx 1.17 / onnxruntime 1.19; its
    # x * sigmoid(alpha x) is com.microsoft QuickGelu with alpha given
    d = _unary2("QuickGelu", edges2(rnd2(5, 9, lo=-8, hi=8), [0.0, 1e-6, -1e-6, -40.0, 40.0]),
                {"alpha": alpha}, "com.microsoft")
    xd = d["in_x"].astype(np.float64)
    assert np.allclose(d["out_y"], xd / (1 + np.exp(-alpha * xd)), rtol=1e-5, atol=1e-6)
    d["f_param"] = Fv([alpha, 0.0])
    return d


@case2("ort")
def swish_alpha1():
    return _swish(1.0)


@case2("ort")
def swish_quickgelu():
    return _swish(1.702)


CLIP_EDGES = [-0.5, 0.75, -0.50001, 0.75001, 0.0, -0.0]


def _clip(lo, hi, attr_form=False, grad=False):
    """lo / hi None = absent. attr_form: opset-6 attributes; else inputs."""
    x = edges2(rnd2(4, 9, lo=-2, hi=2), CLIP_EDGES)
    p = {"has_min": int(lo is not None), "has_max": int(hi is not None)}
    d = {"in_x": x, "p_clip": I([p["has_min"], p["has_max"], int(not attr_form)]),
         "f_clip": Fv([lo if lo is not None else 0.0, hi if hi is not None else 0.0])}
    if grad:
        # onnxruntime-training's Clip gradient (opset >= 13, checked with
        # generate_artifacts): GreaterOrEqual(X, min) And LessOrEqual(X, max),
        # Cast to float, Mul with dY
        dy = rnd2(*x.shape)
        nodes, ins, mask = [], [("X", x), ("dY", dy)], []
        if lo is not None:
            ins.append(("mn", np.array(lo, F32)))
            nodes.append(helper.make_node("GreaterOrEqual", ["X", "mn"], ["ge"]))
            mask.append("ge")
        if hi is not None:
            ins.append(("mx", np.array(hi, F32)))
            nodes.append(helper.make_node("LessOrEqual", ["X", "mx"], ["le"]))
            mask.append("le")
        if len(mask) == 2:
            nodes.append(helper.make_node("And", mask, ["m"]))
            mask = ["m"]
        nodes.append(helper.make_node("Cast", mask, ["mf"], to=F))
        nodes.append(helper.make_node("Mul", ["dY", "mf"], ["dX"]))
        d["out_dx"] = run_graph(nodes, ins, [("dX", list(x.shape), F)])["dX"]
        d["in_dy"] = dy
        return d
    if attr_form:
        attrs = {}
        if lo is not None:
            attrs["min"] = lo
        if hi is not None:
            attrs["max"] = hi
        d["out_y"] = run_op("Clip", [("X", x)], [("Y", list(x.shape), F)], attrs, opset=6)["Y"]
    else:
        ins = [("X", x), ("mn", None if lo is None else np.array(lo, F32)),
               ("mx", None if hi is None else np.array(hi, F32))]
        if hi is None:
            ins = ins[:2]
        d["out_y"] = run_op("Clip", ins, [("Y", list(x.shape), F)])["Y"]
    return d


@case2("ort")
def clip_min_max():
    return _clip(-0.5, 0.75)


@case2("ort")
def clip_max_only():
    return _clip(None, 0.75)


@case2("ort")
def clip_none():
    return _clip(None, None)


@case2("ort")
def clip_attr_min():
    return _clip(-0.5, None, attr_form=True)


@case2("ort")
def clip_grad_min_max():
    return _clip(-0.5, 0.75, grad=True)


@case2("ort")
def clip_grad_min_only():
    return _clip(-0.5, None, grad=True)


def _grad_y(fwd, grad, lo, hi):
    x = rnd2(4, 9, lo=lo, hi=hi)
    y = run_op(fwd, [("X", x)], [("Y", list(x.shape), F)])["Y"]
    dy = rnd2(*x.shape)
    dx = run_op(grad, [("dY", dy), ("Y", y)], [("dX", list(x.shape), F)], {},
                "com.microsoft")["dX"]
    return {"in_dy": dy, "in_y": y, "out_dx": dx}


@case2("ort")
def sigmoid_grad():
    return _grad_y("Sigmoid", "SigmoidGrad", -6, 6)


@case2("ort")
def tanh_grad():
    return _grad_y("Tanh", "TanhGrad", -3, 3)


@case2("ort")
def swish_grad():
    x, dy = rnd2(4, 9, lo=-6, hi=6), rnd2(4, 9)
    dx = run_op("QuickGeluGrad", [("dY", dy), ("X", x)], [("dX", [4, 9], F)], {"alpha": 1.0},
                "com.microsoft")["dX"]
    return {"in_dy": dy, "in_x": x, "out_dx": dx, "f_param": Fv([1.0, 0.0])}


def _variadic(op, shapes, ties=False):
    xs = [rnd2(*s) for s in shapes]
    if ties:  # equal operands: which one wins must not matter, but be exact
        xs = [np.round(x * 2) / 2 for x in xs]
        xs = [x.astype(F32) for x in xs]
    out = np.broadcast_shapes(*shapes)
    y = run_op(op, [(f"x{i}", x) for i, x in enumerate(xs)], [("Y", list(out), F)])["Y"]
    d = {f"in_x{i}": x for i, x in enumerate(xs)}
    d["out_y"] = y
    if all(tuple(s) == tuple(out) for s in shapes):
        d["p_shape"] = I([])
        d["p_strides"] = I([])
    else:
        d["p_shape"] = I(out)
        d["p_strides"] = I([bcast_strides(s, out) for s in shapes])
    return d


@case2("ort")
def max_bcast3():
    return _variadic("Max", [(2, 3, 4), (3, 1), (4,)])


@case2("ort")
def min_bcast2():
    return _variadic("Min", [(2, 1, 5), (3, 1)], ties=True)


@case2("ort")
def max_same4():
    return _variadic("Max", [(3, 5)] * 4, ties=True)


@case2("ort")
def min_single():
    return _variadic("Min", [(2, 7)])


def _where(cshape, xshape, yshape, dtype=F32):
    c = RNG_OPS.random(cshape) < 0.5
    x = (rnd2(*xshape) * 100).astype(dtype)
    y = (rnd2(*yshape) * 100).astype(dtype)
    out = np.broadcast_shapes(cshape, xshape, yshape)
    r = run_op("Where", [("C", c), ("X", x), ("Y", y)], [("O", list(out), _elem2(x))])["O"]
    d = {"in_cond": c, "in_x": x, "in_y": y, "out_o": r,
         "p_elem": I([x.dtype.itemsize])}
    if cshape == xshape == yshape:
        d["p_shape"] = I([])
        d["p_strides"] = I([])
    else:
        d["p_shape"] = I(out)
        d["p_strides"] = I([bcast_strides(s, out) for s in (cshape, xshape, yshape)])
    return d


@case2("ort")
def where_bcast():
    return _where((2, 1, 4), (3, 4), (1,))


@case2("ort")
def where_same_i64():
    return _where((3, 5), (3, 5), (3, 5), np.int64)


DT = {np.dtype(F32): (0, F), np.dtype(np.int64): (1, L), np.dtype(np.int32): (2, I32),
      np.dtype(np.uint8): (3, U8), np.dtype(np.bool_): (4, B)}


def _cast(x, to):
    to = np.dtype(to)
    y = run_op("Cast", [("X", x)], [("Y", list(x.shape), DT[to][1])], {"to": DT[to][1]})["Y"]
    return {"in_x": x, "out_y": y, "p_cast": I([DT[x.dtype][0], DT[to][0]])}


FRAC = [0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.5, -2.5, 1e-30, 100.75, -100.75]


@case2("ort")
def cast_f32_i64():
    return _cast(edges2(rnd2(3, 9, lo=-1e6, hi=1e6), FRAC + [3e9, -3e9]), np.int64)


@case2("ort")
def cast_f32_i32():
    return _cast(edges2(rnd2(3, 9, lo=-1e6, hi=1e6), FRAC + [2e9, -2e9]), np.int32)


@case2("ort")
def cast_f32_u8():
    return _cast(edges2(rnd2(3, 9, lo=0, hi=255.9), [0.0, 0.5, 0.99, 1.5, 254.5, 255.0]),
                 np.uint8)


@case2("ort")
def cast_f32_bool():
    return _cast(edges2(rnd2(3, 9, lo=-2, hi=2), [0.0, -0.0, 1e-38, -1e-45, np.nan, np.inf,
                                                  0.0, 0.0]), np.bool_)


@case2("ort")
def cast_i64_f32():
    # 2^24 + 1 and 2^40 + 1 round to nearest even in float
    v = RNG_OPS.integers(-2**40, 2**40, size=(3, 9)).astype(np.int64)
    return _cast(edges2(v, [0, 1, -1, 2**24 + 1, 2**40 + 1, -(2**24 + 3), 2**62]), F32)


@case2("ort")
def cast_i32_f32():
    v = RNG_OPS.integers(-2**31, 2**31 - 1, size=(3, 9)).astype(np.int32)
    return _cast(edges2(v, [0, 1, -1, 2**24 + 1, -(2**24 + 3), 2**31 - 1, -2**31]), F32)


@case2("ort")
def cast_bool_f32():
    return _cast(RNG_OPS.random((3, 9)) < 0.5, F32)


@case2("ort")
def cast_u8_f32():
    return _cast(RNG_OPS.integers(0, 256, size=(3, 9)).astype(np.uint8), F32)


@case2("ort")
def cast_i64_i32():
    # narrowing wraps (two's complement), as onnxruntime's static_cast
    v = RNG_OPS.integers(-2**40, 2**40, size=(3, 9)).astype(np.int64)
    return _cast(edges2(v, [0, -1, 2**31, 2**32 + 5, -(2**31) - 1]), np.int32)


@case2("ort")
def cast_i64_bool():
    v = RNG_OPS.integers(-3, 3, size=(3, 9)).astype(np.int64)
    return _cast(edges2(v, [0, 2**32, -2**40]), np.bool_)


def _gather(xshape, axis, idx, idx_dtype=np.int64, dtype=F32):
    x = (rnd2(*xshape) * 10).astype(dtype)
    idx = np.asarray(idx, dtype=idx_dtype)
    ax = axis % len(xshape)
    out = list(xshape[:ax]) + list(idx.shape) + list(xshape[ax + 1:])
    y = run_op("Gather", [("X", x), ("I", idx)], [("Y", out, _elem2(x))], {"axis": axis})["Y"]
    norm = np.where(idx < 0, idx + xshape[ax], idx).astype(idx_dtype)  # the generator's job
    return {"in_x": x, "in_indices": norm.reshape(-1), "out_y": y,
            "p_gather": I([int(np.prod(xshape[:ax])), xshape[ax], int(np.prod(xshape[ax + 1:])),
                           norm.size, int(idx_dtype == np.int32), x.dtype.itemsize])}


@case2("ort")
def gather_axis0():
    return _gather((5, 3), 0, [4, 0, -1, 2, -5])


@case2("ort")
def gather_axis1_2d_idx():
    return _gather((2, 5, 3), 1, [[3, 0], [-4, 1]])


@case2("ort")
def gather_last_scalar_i32():
    return _gather((2, 3, 4), -1, -2, np.int32)


@case2("ort")
def gather_i64_data():
    return _gather((4, 3), 0, [3, 3, 1], dtype=np.int64)


def _split(xshape, axis, sizes, given):
    x = rnd2(*xshape)
    ax = axis % len(xshape)
    outs = [(f"y{i}", list(xshape[:ax]) + [s] + list(xshape[ax + 1:]), F) for i, s in
            enumerate(sizes)]
    if given:
        r = run_op("Split", [("X", x), ("S", np.array(sizes, np.int64))], outs, {"axis": axis})
    else:
        r = run_op("Split", [("X", x)], outs, {"axis": axis, "num_outputs": len(sizes)})
    d = {"in_x": x, "p_sizes": I(sizes),
         "p_outer_inner": I([int(np.prod(xshape[:ax])), int(np.prod(xshape[ax + 1:]))])}
    for i in range(len(sizes)):
        d[f"out_y{i}"] = r[f"y{i}"]
    return d


@case2("ort")
def split_equal_axis1():
    return _split((2, 6, 3), 1, [2, 2, 2], False)


@case2("ort")
def split_uneven_last():
    # num_outputs that does not divide: the last chunk is smaller (opset 18)
    return _split((2, 3, 7), -1, [3, 3, 1], False)


@case2("ort")
def split_sizes_axis0():
    return _split((6, 4), 0, [1, 3, 2], True)


def _pad(xshape, pads, mode, value=None, opset=OPSET):
    x = rnd2(*xshape)
    nd = len(xshape)
    out = [xshape[d] + pads[d] + pads[nd + d] for d in range(nd)]
    ins = [("X", x), ("P", np.array(pads, np.int64))]
    if value is not None:
        ins.append(("V", np.array(value, F32)))
    y = run_op("Pad", ins, [("Y", out, F)], {"mode": mode}, opset=opset)["Y"]
    modes = {"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}
    return {"in_x": x, "out_y": y, "p_in_shape": I(xshape), "p_begin": I(pads[:nd]),
            "p_end": I(pads[nd:]), "p_mode": I([modes[mode]]),
            "f_value": Fv([value if value is not None else 0.0])}


@case2("ort")
def pad_constant_crop():
    # NCHW: pad H, crop W at the start, pad W at the end
    return _pad((1, 2, 4, 5), [0, 0, 1, -2, 0, 0, 2, 1], "constant", 1.5)


@case2("ort")
def pad_constant_default():
    return _pad((3, 4), [1, 0, 0, 2], "constant")


@case2("ort")
def pad_reflect():
    return _pad((2, 2, 4, 5), [0, 0, 3, 2, 0, 0, 2, 4], "reflect")


@case2("ort")
def pad_reflect_crop():
    # crop first, reflect the cropped extent
    return _pad((2, 6, 5), [0, -1, 2, 0, 2, -1], "reflect")


@case2("ort")
def pad_edge_crop():
    return _pad((2, 3, 4, 4), [0, -1, 2, 0, 1, 0, -2, 3], "edge")


@case2("ort")
def pad_wrap():
    return _pad((2, 3, 5), [0, 2, 1, 0, 1, 4], "wrap", opset=19)


@case2("ort")
def global_maxpool():
    x = edges2(rnd2(2, 3, 5, 4), [0.9999, 0.9999])  # a tie
    y = run_op("GlobalMaxPool", [("X", x)], [("Y", [2, 3, 1, 1], F)])["Y"]
    return {"in_x": x, "out_y": y, "p_pool": I([2, 3, 5, 4])}


def _reduce_max(shape, axes, keepdims):
    x = rnd2(*shape, lo=-3, hi=-1)  # all negative: an accumulator started at 0 fails
    ax = sorted(a % len(shape) for a in axes)
    out = [1 if i in ax else dd for i, dd in enumerate(shape) if keepdims or i not in ax]
    y = run_op("ReduceMax", [("X", x), ("axes", np.array(axes, dtype=np.int64))],
               [("Y", out, F)], {"keepdims": keepdims})["Y"]
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    keep = [i for i in range(len(shape)) if i not in ax]
    return {"in_x": x, "out_y": y,
            "p_keep_shape": I([shape[i] for i in keep]),
            "p_keep_strides": I([strides[i] for i in keep]),
            "p_red_shape": I([shape[i] for i in ax]), "p_red_strides": I([strides[i] for i in ax])}


@case2("ort")
def reducemax_axes02():
    return _reduce_max((2, 3, 4), [0, 2], 0)


@case2("ort")
def reducemax_last_keep():
    return _reduce_max((3, 2, 5), [-1], 1)


@case2("ort")
def reducemax_all():
    return _reduce_max((3, 4, 2), [0, 1, 2], 0)


def _groupnorm(xshape, groups, opset):
    x = rnd2(*xshape, lo=-2, hi=3)
    c = xshape[1]
    ns = groups if opset < 21 else c
    s, b = rnd2(ns), rnd2(ns)
    y = run_op("GroupNormalization", [("X", x), ("s", s), ("b", b)], [("Y", list(xshape), F)],
               {"num_groups": groups, "epsilon": 1e-5}, opset=opset)["Y"]
    return {"in_x": x, "in_scale": s, "in_bias": b, "out_y": y,
            "p_gn": I([xshape[0], c, int(np.prod(xshape[2:])), groups, int(opset < 21)]),
            "f_gn": Fv([1e-5])}


@case2("ort")
def groupnorm_per_channel():
    # opset 21: scale / bias per channel
    return _groupnorm((2, 6, 4, 3), 3, 21)


@case2("ort")
def groupnorm_per_group_opset18():
    # opset 18: scale / bias per group
    return _groupnorm((2, 6, 5), 2, 18)


@case2("ort")
def instancenorm():
    x, s, b = rnd2(2, 3, 4, 5, lo=-2, hi=3), rnd2(3), rnd2(3)
    y = run_op("InstanceNormalization", [("X", x), ("s", s), ("b", b)], [("Y", [2, 3, 4, 5], F)],
               {"epsilon": 1e-4})["Y"]
    return {"in_x": x, "in_scale": s, "in_bias": b, "out_y": y, "p_gn": I([2, 3, 20, 3, 0]),
            "f_gn": Fv([1e-4])}


def _rms(shape, axis):
    # RMSNormalization is opset 23 (not in onnx 1.17 / onnxruntime 1.19);
    # onnxruntime's kernel for the same math is SimplifiedLayerNormalization
    x = rnd2(*shape, lo=-2, hi=2)
    ax = axis % len(shape)
    rows, cols = int(np.prod(shape[:ax])), int(np.prod(shape[ax:]))
    s = rnd2(*shape[ax:])
    stat = list(shape[:ax]) + [1] * (len(shape) - ax)
    r = run_op("SimplifiedLayerNormalization", [("X", x), ("s", s)],
               [("Y", list(shape), F), ("V", stat, F)], {"axis": axis, "epsilon": 1e-5})
    xd = x.astype(np.float64).reshape(rows, cols)
    ref = xd / np.sqrt((xd * xd).mean(axis=1, keepdims=True) + 1e-5) * s.reshape(1, cols)
    assert np.allclose(r["Y"].reshape(rows, cols), ref, rtol=1e-5, atol=1e-6), "RMS norm math"
    return {"in_x": x, "in_scale": s, "out_y": r["Y"], "out_inv_std": r["V"],
            "p_ln": I([rows, cols]), "f_ln": Fv([1e-5])}


@case2("ort")
def rmsnorm_last():
    return _rms((3, 4, 8), -1)


@case2("ort")
def rmsnorm_axis1():
    return _rms((2, 3, 4), 1)


def _convt(xs, ws, group, strides, pads, dil, out_pad, bias):
    """xs / ws 2-D (NCHW, [C_in, C_out/group, kh, kw]) or 1-D (run as 1-D
    ONNX, stored for the kernel with height 1)."""
    x, w = rnd2(*xs), rnd2(*ws)
    nd = len(xs) - 2
    attrs = {"group": group, "strides": strides, "pads": pads, "dilations": dil,
             "output_padding": out_pad, "kernel_shape": list(ws[2:])}
    osz = [strides[i] * (xs[2 + i] - 1) + out_pad[i] + dil[i] * (ws[2 + i] - 1) + 1
           - pads[i] - pads[nd + i] for i in range(nd)]
    ins = [("X", x), ("W", w)]
    d = {"in_x": x, "in_w": w}
    if bias:
        b = rnd2(ws[1] * group)
        ins.append(("B", b))
        d["in_b"] = b
    y = run_op("ConvTranspose", ins, [("Y", [xs[0], ws[1] * group] + osz, F)], attrs)["Y"]
    d["out_y"] = y
    h = lambda v, i: v[i] if nd == 2 else (1 if i == 0 else v[0])  # noqa: E731
    hp = lambda v, i: v[i] if nd == 2 else (0 if i == 0 else v[0])  # noqa: E731
    d["p_conv"] = I([xs[0], xs[1], h(xs[2:], 0), h(xs[2:], 1), ws[1] * group, h(osz, 0),
                     h(osz, 1), h(ws[2:], 0), h(ws[2:], 1), h(strides, 0), h(strides, 1),
                     h(dil, 0), h(dil, 1), hp(pads, 0), hp(pads, 1) if nd == 2 else pads[0],
                     group])
    return d


@case2("ort")
def convtranspose_grouped():
    return _convt((2, 4, 3, 4), (4, 3, 3, 2), 2, [2, 1], [1, 0, 0, 1], [1, 2], [1, 0], True)


@case2("ort")
def convtranspose_s2_nobias():
    return _convt((1, 3, 4, 4), (3, 2, 3, 3), 1, [2, 2], [1, 1, 1, 1], [1, 1], [1, 1], False)


@case2("ort")
def convtranspose_1d():
    return _convt((2, 3, 7), (3, 2, 4), 1, [3], [1, 2], [2], [0], True)


@case2("ort")
def conv1d():
    # Conv 1-D runs on the 2-D kernel (dg_conv_f32) with height 1
    x, w, b = rnd2(2, 3, 9), rnd2(4, 3, 3), rnd2(4)
    attrs = {"strides": [2], "pads": [1, 2], "dilations": [2], "kernel_shape": [3]}
    ol = (9 + 1 + 2 - 2 * 2 - 1) // 2 + 1
    y = run_op("Conv", [("X", x), ("W", w), ("B", b)], [("Y", [2, 4, ol], F)], attrs)["Y"]
    return {"in_x": x, "in_w": w, "in_b": b, "out_y": y,
            "p_conv": I([2, 3, 1, 9, 4, 1, ol, 1, 3, 1, 2, 1, 2, 0, 1, 1])}



# ---------------------------------------------------------------- operator kernels: gradient graphs
# Operators onnxruntime-training 1.19.2 puts into the gradient graphs of the
# operators above (checked with generate_artifacts): Sign (Abs), Equal +
# Cast + Sum + Div + Mul (Max / Min), GreaterOrEqual / LessOrEqual / And +
# Cast + Mul (Clip), GatherGrad (Gather), Concat (Split), Pad with negated
# pads (Pad), ConvTransposeGrad (ConvTranspose).
@case2("ort")
def sign():
    return _unary2("Sign", edges2(rnd2(3, 8, lo=-2, hi=2), [0.0, -0.0, 1.2e-38, -1.2e-38, 1e-45,
                                                            -1e-45]))


def _compare(op, ashape, bshape, ties=True, dtype=F32):
    if dtype == np.bool_:
        a, b = RNG_OPS.random(ashape) < 0.5, RNG_OPS.random(bshape) < 0.5
    else:
        a, b = rnd2(*ashape), rnd2(*bshape)
        if ties:  # half the pairs equal
            a, b = np.round(a * 2) / 2, np.round(b * 2) / 2
            a, b = a.astype(F32), b.astype(F32)
    out = np.broadcast_shapes(ashape, bshape)
    y = run_op(op, [("A", a), ("B", b)], [("Y", list(out), B)])["Y"]
    d = {"in_a": a, "in_b": b, "out_y": y}
    if tuple(ashape) == tuple(bshape):
        d.update(p_shape=I([]), p_astr=I([]), p_bstr=I([]))
    else:
        d.update(p_shape=I(out), p_astr=I(bcast_strides(ashape, out)),
                 p_bstr=I(bcast_strides(bshape, out)))
    return d


@case2("ort")
def equal_bcast():
    return _compare("Equal", (2, 3, 4), (3, 1))


@case2("ort")
def less_same():
    return _compare("Less", (4, 6), (4, 6))


@case2("ort")
def less_equal_bcast():
    return _compare("LessOrEqual", (3, 5), (1,))


@case2("ort")
def greater_bcast():
    return _compare("Greater", (2, 1, 5), (3, 5))


@case2("ort")
def greater_equal_same():
    return _compare("GreaterOrEqual", (4, 6), (4, 6))


@case2("ort")
def and_bcast():
    return _compare("And", (2, 3, 4), (4,), dtype=np.bool_)


def _gather_grad(xshape, axis, idx):
    idx = np.asarray(idx, dtype=np.int64)
    ax = axis % len(xshape)
    yshape = list(xshape[:ax]) + list(idx.shape) + list(xshape[ax + 1:])
    dy = rnd2(*yshape)
    dx = run_op("GatherGrad", [("S", np.array(xshape, np.int64)), ("I", idx), ("dY", dy)],
                [("dX", list(xshape), F)], {"axis": axis}, "com.microsoft")["dX"]
    return {"in_dy": dy, "in_indices": idx.reshape(-1), "out_dx": dx,
            "p_gather": I([int(np.prod(xshape[:ax])), xshape[ax], int(np.prod(xshape[ax + 1:])),
                           idx.size, 0, 4])}


@case2("ort")
def gather_grad_axis0_repeats():
    # an embedding: repeated rows accumulate, unused rows are zero
    return _gather_grad((6, 4), 0, [[1, 4, 1], [0, 1, 4]])


@case2("ort")
def gather_grad_axis1():
    return _gather_grad((2, 5, 3), 1, [3, 0, 3, 2])


def _convt_grad(xs, ws, group, strides, pads, dil, out_pad):
    """ConvTransposeGrad(dY, X, W) -> dX, dW, dB (onnxruntime 1.19 has no CPU
    kernel for it): dX = Conv(dY, W), dW = ConvGrad's dW with the roles of X
    and dY swapped, dB = ReduceSum of dY; all run on onnxruntime, and dX / dW
    are checked against the adjoint identities of ConvTranspose itself."""
    x, w = rnd2(*xs), rnd2(*ws)
    nd = len(xs) - 2
    cout = ws[1] * group
    tattrs = {"group": group, "strides": strides, "pads": pads, "dilations": dil,
              "output_padding": out_pad, "kernel_shape": list(ws[2:])}
    osz = [strides[i] * (xs[2 + i] - 1) + out_pad[i] + dil[i] * (ws[2 + i] - 1) + 1
           - pads[i] - pads[nd + i] for i in range(nd)]
    yshape = [xs[0], cout] + osz
    dy = rnd2(*yshape)
    # Conv's end pads so that the output is exactly X's size
    cattrs = {"group": group, "strides": strides, "dilations": dil,
              "kernel_shape": list(ws[2:]), "pads": pads}
    dxr = run_op("Conv", [("dY", dy), ("W", w)], [("dX", list(xs), F)], cattrs)["dX"]
    g = run_op("ConvGrad", [("G", x), ("X", dy), ("W", w)],
               [("a", list(yshape), F), ("dW", list(ws), F), ("b", [ws[0]], F)], cattrs,
               "com.microsoft")
    red = np.array([i for i in range(len(yshape)) if i != 1], np.int64)
    db = run_op("ReduceSum", [("dY", dy), ("axes", red)], [("dB", [cout], F)], {"keepdims": 0})["dB"]
    # adjoint checks against ORT's ConvTranspose: <dY, convT(x, W)> equals
    # <x, dX> and <W, dW> (convT is linear in x and in W)
    y = run_op("ConvTranspose", [("X", x), ("W", w)], [("Y", yshape, F)], tattrs)["Y"]
    lhs = float((dy.astype(np.float64) * y).sum())
    assert np.isclose(lhs, float((x.astype(np.float64) * dxr).sum()), rtol=1e-4), "dX adjoint"
    assert np.isclose(lhs, float((w.astype(np.float64) * g["dW"]).sum()), rtol=1e-4), "dW adjoint"
    h = lambda v, i: v[i] if nd == 2 else (1 if i == 0 else v[0])  # noqa: E731
    pl = pads[1] if nd == 2 else pads[0]
    pt = pads[0] if nd == 2 else 0
    # the Conv that computes dX / dW: input dY [N, cout, osz], output X's size
    conv = I([xs[0], cout, h(osz, 0), h(osz, 1), xs[1], h(xs[2:], 0), h(xs[2:], 1), h(ws[2:], 0),
              h(ws[2:], 1), h(strides, 0), h(strides, 1), h(dil, 0), h(dil, 1), pt, pl, group])
    return {"in_dy": dy, "in_x": x, "in_w": w, "out_dx": dxr, "out_dw": g["dW"],
            "out_db": db, "p_conv": conv}


@case2("ort")
def convtranspose_grad():
    return _convt_grad((2, 4, 3, 4), (4, 3, 3, 2), 2, [2, 1], [1, 0, 0, 1], [1, 2], [1, 0])


@case2("ort")
def convtranspose_grad_1d():
    return _convt_grad((2, 3, 7), (3, 2, 4), 1, [3], [1, 2], [2], [0])


# ---------------------------------------------------------------- operator kernels: Pow
# Pow is a kernel of the core set (dg_pow_f32, dg_binary_args_t); these cases pin
# it beyond the Pow(x, 2) of onnxruntime's MSE decomposition.
def _pow(base, expo):
    out = np.broadcast_shapes(base.shape, expo.shape)
    y = run_op("Pow", [("A", base), ("B", expo)], [("C", list(out), F)])["C"]
    return {"in_a": base, "in_b": expo, "out_y": y, "p_shape": I(out),
            "p_astr": I(bcast_strides(base.shape, out)), "p_bstr": I(bcast_strides(expo.shape, out))}


@case2("ort")
def pow_bcast_exponents():
    return _pow(rnd2(3, 5, lo=0.05, hi=3), np.array([-2.0, 0.5, 3.0, 1.7, 0.0], F32))


@case2("ort")
def pow_negative_base_int():
    # integer exponents of negative bases are defined (odd ones negative)
    return _pow(rnd2(4, 1, lo=-3, hi=-0.2), np.array([2.0, 3.0, -1.0, 0.0, 1.0, 4.0], F32))


# ---------------------------------------------------------------- operator kernels: activations
# LeakyRelu, Elu, Softplus, PRelu: after the cases above, so that those keep
# their RNG_OPS draws (and their reference files).
ACT_EDGES = [0.0, -0.0, 1e-6, -1e-6, 1e-3, -1e-3, 20.0, -20.0]


def _unary_alpha(op, alpha, attrs, lo=-5, hi=5):
    d = _unary2(op, edges2(rnd2(5, 9, lo=lo, hi=hi), ACT_EDGES), attrs)
    d["f_param"] = Fv([alpha, 0.0])
    return d


@case2("ort")
def leaky_relu_default():
    return _unary_alpha("LeakyRelu", 0.01, {})


@case2("ort")
def leaky_relu_custom():
    return _unary_alpha("LeakyRelu", 0.3, {"alpha": 0.3})


@case2("ort")
def elu_default():
    return _unary_alpha("Elu", 1.0, {})


@case2("ort")
def elu_custom():
    return _unary_alpha("Elu", 0.5, {"alpha": 0.5})


@case2("ort")
def softplus():
    # +-90: e^90 overflows float, so only the stable form stays finite
    d = _unary2("Softplus", edges2(rnd2(5, 9, lo=-12, hi=12), ACT_EDGES + [90.0, -90.0, 40.0]))
    xd = d["in_x"].astype(np.float64)
    assert np.allclose(d["out_y"], np.logaddexp(0.0, xd), rtol=1e-5, atol=1e-6)
    return d


def _prelu(x, slope):
    y = run_op("PRelu", [("X", x), ("slope", slope)], [("Y", list(x.shape), F)])["Y"]
    d = {"in_a": x, "in_b": slope, "out_y": y}
    if slope.shape != x.shape:
        d.update({"p_shape": I(x.shape), "p_astr": I(bcast_strides(x.shape, x.shape)),
                  "p_bstr": I(bcast_strides(slope.shape, x.shape))})
    return d


@case2("ort")
def prelu_channel():
    # the slope per channel of [N, C, H, W], as [C, 1, 1]
    x = edges2(rnd2(2, 3, 4, 5, lo=-4, hi=4), ACT_EDGES)
    return _prelu(x, rnd2(3, 1, 1, lo=-0.5, hi=1.5))


@case2("ort")
def prelu_last_axis():
    return _prelu(edges2(rnd2(3, 2, 7, lo=-4, hi=4), ACT_EDGES), rnd2(7, lo=-0.5, hi=1.5))


@case2("ort")
def prelu_same():
    return _prelu(edges2(rnd2(4, 9, lo=-4, hi=4), ACT_EDGES), rnd2(4, 9, lo=-0.5, hi=1.5))


# ---------------------------------------------------------------- operator kernels: 3-D windows
# dg_maxpool3d_f32, dg_avgpool3d_f32, dg_conv3d_f32 (runtime/kernels/window3d.c,
# dg_window3d_args_t). p_win is the struct's shape fields in order: batch,
# in_c, in_d, in_h, in_w, out_c, out_d, out_h, out_w, k (3), strides (3),
# dilations (3), begin pads (3), group, count_include_pad (the end pads are
# implied by the output extents).
def _win_out(n, k, s, d, p0, p1, ceil):
    # ONNX's output extent (ceil_mode drops a window starting in the end pad)
    span = n + p0 + p1 - (d * (k - 1) + 1)
    o = (-(-span // s) if ceil else span // s) + 1
    if ceil and o > 1 and (o - 1) * s >= n + p0:
        o -= 1
    return o


def _win_params(xs, ys, k, s, d, pads, group=1, cip=0):
    return I(list(xs) + list(ys[1:]) + list(k) + list(s) + list(d) + list(pads[:3]) + [group, cip]
             + list(pads[3:6]))


def _pool3d(op, xs, k, s, pads, dil=(1, 1, 1), ceil=0, cip=0, x=None):
    x = rnd2(*xs) if x is None else x
    ys = list(xs[:2]) + [_win_out(xs[2 + i], k[i], s[i], dil[i], pads[i], pads[3 + i], ceil)
                         for i in range(3)]
    attrs = {"kernel_shape": list(k), "strides": list(s), "pads": list(pads),
             "dilations": list(dil), "ceil_mode": ceil}
    outs = [("Y", ys, F)]
    if op == "MaxPool":
        outs.append(("I", ys, L))
    else:
        attrs["count_include_pad"] = cip
    r = run_op(op, [("X", x)], outs, attrs)
    d = {"in_x": x, "out_y": r["Y"], "p_win": _win_params(xs, ys, k, s, dil, pads, 1, cip)}
    if op == "MaxPool":
        d["out_indices"] = r["I"]
    return d


@case2("ort")
def maxpool3d_pad_stride2():
    return _pool3d("MaxPool", (2, 3, 5, 6, 7), (3, 2, 3), (2, 2, 1), (1, 0, 1, 1, 1, 0))


@case2("ort")
def maxpool3d_dil2_ceil_ties():
    # dilation 2, ceil_mode windows overhanging the input, ties (first max wins)
    x = (np.round(rnd2(1, 2, 8, 6, 5) * 2) / 2).astype(F32)
    return _pool3d("MaxPool", (1, 2, 8, 6, 5), (2, 2, 2), (2, 1, 2), (0, 1, 0, 0, 0, 0),
                   dil=(2, 2, 1), ceil=1, x=x)


@case2("ort")
def avgpool3d_excl_pad():
    return _pool3d("AveragePool", (2, 3, 5, 6, 7), (3, 3, 2), (2, 2, 2), (1, 1, 0, 1, 0, 1))


@case2("numpy")
def avgpool3d_incl_pad_ceil():
    # the last depth and width windows overhang the end pads: the taps
    # beyond them are not counted (ONNX's rule, avgpool_onnx; onnxruntime
    # 1.19 divides by the whole kernel)
    d = _pool3d("AveragePool", (1, 2, 7, 5, 8), (3, 2, 3), (2, 2, 2), (1, 0, 1, 0, 1, 1),
                ceil=1, cip=1)
    d["out_y"] = avgpool_onnx(d["in_x"], (3, 2, 3), (2, 2, 2), (1, 1, 1), (1, 0, 1, 0, 1, 1), 1, 1)[0]
    return d


@case2("ort")
def avgpool3d_dil2():
    return _pool3d("AveragePool", (1, 2, 7, 7, 6), (2, 3, 2), (1, 2, 2), (1, 1, 0, 0, 1, 1),
                   dil=(2, 2, 2))


def _conv3d(xs, ws, s, pads, dil, group, bias):
    x, w = rnd2(*xs), rnd2(*ws)
    ys = [xs[0], ws[0]] + [_win_out(xs[2 + i], ws[2 + i], s[i], dil[i], pads[i], pads[3 + i], 0)
                           for i in range(3)]
    attrs = {"kernel_shape": list(ws[2:]), "strides": list(s), "pads": list(pads),
             "dilations": list(dil), "group": group}
    ins = [("X", x), ("W", w)]
    d = {"in_x": x, "in_w": w}
    if bias:
        b = rnd2(ws[0])
        ins.append(("B", b))
        d["in_b"] = b
    d["out_y"] = run_op("Conv", ins, [("Y", ys, F)], attrs)["Y"]
    d["p_win"] = _win_params(xs, ys, ws[2:], s, dil, pads, group)
    return d


@case2("ort")
def conv3d_pad_stride2_bias():
    return _conv3d((2, 3, 5, 6, 7), (4, 3, 3, 2, 3), (2, 1, 2), (1, 0, 1, 1, 1, 0), (1, 1, 1), 1, True)


@case2("ort")
def conv3d_dil2_groups():
    return _conv3d((1, 4, 6, 7, 5), (6, 2, 2, 3, 2), (1, 2, 1), (0, 1, 1, 1, 0, 0), (2, 1, 2), 2, True)


@case2("ort")
def conv3d_depthwise_nobias():
    return _conv3d((1, 3, 4, 5, 6), (3, 1, 3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1), 3, False)

def _convt3d(xs, ws, group, s, pads, dil, out_pad, bias):
    x, w = rnd2(*xs), rnd2(*ws)
    ys = [xs[0], ws[1] * group] + [s[i] * (xs[2 + i] - 1) + out_pad[i] + dil[i] * (ws[2 + i] - 1) + 1
                                   - pads[i] - pads[3 + i] for i in range(3)]
    attrs = {"kernel_shape": list(ws[2:]), "strides": list(s), "pads": list(pads),
             "dilations": list(dil), "group": group, "output_padding": list(out_pad)}
    ins = [("X", x), ("W", w)]
    d = {"in_x": x, "in_w": w}
    if bias:
        b = rnd2(ys[1])
        ins.append(("B", b))
        d["in_b"] = b
    d["out_y"] = run_op("ConvTranspose", ins, [("Y", ys, F)], attrs)["Y"]
    d["p_win"] = _win_params(xs, ys, ws[2:], s, dil, pads, group)
    return d


@case2("ort")
def convtranspose3d_s2_pad_bias():
    return _convt3d((2, 3, 3, 4, 3), (3, 2, 3, 2, 3), 1, (2, 1, 2), (1, 0, 1, 0, 1, 1), (1, 1, 1),
                    (1, 0, 0), True)


@case2("ort")
def convtranspose3d_dil2_groups():
    return _convt3d((1, 4, 3, 3, 4), (4, 2, 2, 3, 2), 2, (1, 2, 1), (0, 1, 0, 1, 0, 0), (2, 1, 2),
                    (0, 1, 0), False)


# ---------------------------------------------------------------- float -> integer outside the range
# C leaves the conversion of NaN, an infinity or a value outside the target
# type undefined (the host test passed while the chips' saturating
# conversions gave other values); the kernels give what onnxruntime gives on
# x86-64. Fixed values (no RNG draws): the cases above keep their arrays.
OUT_OF_RANGE = [1e30, -1e30, np.nan, np.inf, -np.inf, 3e9, -3e9, 9.3e18, -9.3e18, 2.0 ** 63,
                -2.0 ** 63, 2.0 ** 31, -2.0 ** 31, 2147483520.0, 300.0, -1.0, 255.9, 256.0, -2.5, 2.5]


@case2("ort")
def cast_f32_i64_out_of_range():
    return _cast(np.array(OUT_OF_RANGE, F32).reshape(4, 5), np.int64)


@case2("ort")
def cast_f32_i32_out_of_range():
    return _cast(np.array(OUT_OF_RANGE, F32).reshape(4, 5), np.int32)


@case2("ort")
def cast_f32_u8_out_of_range():
    return _cast(np.array(OUT_OF_RANGE, F32).reshape(4, 5), np.uint8)


@case2("ort")
def pow_i64_f32_out_of_range():
    # results beyond int64, infinite (0 ** -1) and NaN ((-3) ** 0.5, 7 ** NaN)
    a = np.array([10, -10, 2, 0, -3, 7, 3, 2, 2, -2], np.int64)
    b = np.array([30, 31, 0.5, -1, 0.5, np.nan, 40, 63, 62, 63], F32)
    y = run_op("Pow", [("A", a), ("B", b)], [("C", [len(a)], L)])["C"]
    return {"in_a": a, "in_b": b, "out_y": y, "p_shape": I([]), "p_astr": I([]), "p_bstr": I([])}


# ---------------------------------------------------------------- AveragePool, ONNX's divisor
# 1-D and 2-D AveragePool with dilations run in dg_avgpool3d_f32 with depth 1;
# with ceil_mode and count_include_pad the taps beyond the end pad are not
# counted (avgpool_onnx). Fixed-seed inputs of their own: the cases above keep
# their arrays.
RNG_POOL = np.random.default_rng(20261206)


def _avg_win(xs, k, s, d, pads, ceil, cip):
    """A 1-D or 2-D AveragePool as dg_avgpool3d_f32 runs it (depth 1)."""
    x = RNG_POOL.uniform(-1, 1, size=xs).astype(F32)
    y, outs = avgpool_onnx(x, k, s, d, pads, ceil, cip)
    sp = len(k)
    one = [1] * (3 - sp)
    begin, end = list(pads[:sp]), list(pads[sp:])
    return {"in_x": x, "out_y": y,
            "p_win": _win_params(list(xs[:2]) + one + list(xs[2:]), list(xs[:2]) + one + outs,
                                 one + list(k), one + list(s), one + list(d),
                                 [0] * (3 - sp) + begin + [0] * (3 - sp) + end, 1, cip)}


@case2("numpy")
def avgpool2d_dil2_ceil_incl_pad():
    return _avg_win((1, 2, 9, 8), [3, 2], [2, 3], [2, 2], [1, 0, 1, 1], 1, 1)


@case2("numpy")
def avgpool2d_dil3_excl_pad():
    return _avg_win((2, 1, 8, 9), [2, 3], [1, 2], [3, 2], [1, 2, 0, 1], 0, 0)


@case2("numpy")
def avgpool1d_dil2_ceil_incl_pad():
    return _avg_win((1, 3, 11), [3], [3], [2], [1, 1], 1, 1)


# Gelu with approximate = "tanh" (runtime/kernels/gelu_tanh.c), written to
# runtime/tests/refs/gelu_tanh/ and checked end to end by
# tests/it/third_party.rs (a generated project against these references). Its
# own RNG, so `--gelu-tanh` alone writes the same arrays as a full run.
def gelu_tanh_cases():
    rng = np.random.default_rng(20261201)
    x = rng.uniform(-4, 4, size=(4, 9)).astype(F32)
    x.reshape(-1)[:len(EDGES)] = EDGES
    dy = rng.uniform(-1, 1, size=(4, 9)).astype(F32)
    y = run_ort("Gelu", [("X", x)], [("Y", [4, 9], F)], {"approximate": "tanh"})["Y"]
    # onnxruntime's gradient of the tanh form is com.microsoft FastGeluGrad
    dx = run_ort("FastGeluGrad", [("dY", dy), ("X", x)], [("dX", [4, 9], F)], {}, "com.microsoft")["dX"]
    # pin the formulas (float64)
    xd = x.astype(np.float64)
    u = np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)
    assert np.allclose(y, 0.5 * xd * (1 + np.tanh(u)), rtol=1e-5, atol=1e-6), "Gelu tanh form"
    du = np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * xd ** 2)
    ref = dy * (0.5 * (1 + np.tanh(u)) + 0.5 * xd * (1 - np.tanh(u) ** 2) * du)
    assert np.allclose(dx, ref, rtol=1e-5, atol=1e-6), "FastGeluGrad is the tanh form's gradient"
    return {"gelu_tanh": {"in_x": x, "out_y": y}, "gelu_tanh_grad": {"in_dy": dy, "in_x": x, "out_dx": dx}}


def write_gelu_tanh(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, d in gelu_tanh_cases().items():
        np.savez_compressed(os.path.join(out_dir, name + ".npz"), **d)
        print(f"{name:28s} ort    {', '.join(k for k in d if k.startswith('out_'))}")


def write_ops(out_dir):
    """Writes the operator cases to out_dir (runtime/tests/refs/ops)."""
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if f.endswith(".npz"):
            os.remove(os.path.join(out_dir, f))
    total = 0
    for name, (source, fn) in OPS.items():
        d = fn()
        for k, v in d.items():
            assert k.split("_")[0] in ("in", "out", "p", "f"), k
            if k.startswith("out_") and v.dtype.kind == "f":
                assert np.all(np.isfinite(v)), (name, k)
        path = os.path.join(out_dir, name + ".npz")
        np.savez_compressed(path, **{k: np.ascontiguousarray(v) for k, v in d.items()})
        total += os.path.getsize(path)
        print(f"{name:28s} {source:6s} {', '.join(k for k in d if k.startswith('out_'))}")
    print(f"{len(OPS)} operator cases, {total} bytes in {os.path.relpath(out_dir)}")

# ---------------------------------------------------------- integer forms
# The int64 / bool / mixed-type kernels of runtime/kernels/integer.c, with
# numpy references (ONNX defines these operators as numpy computes them;
# where numpy has no answer - Div's truncation, Pow's negative integer
# exponents - the reference is onnxruntime's C++ arithmetic, written out
# here). Written into the operator folder and run by the same driver.
INT_FORMS = {}  # name -> function
RNG3 = np.random.default_rng(20261204)


def case_int(fn):
    INT_FORMS[fn.__name__] = fn
    return fn


def ints(shape, lo, hi):
    return RNG3.integers(lo, hi, size=shape, dtype=np.int64)


def _binary_typed(a, b, y):
    out = y.shape
    d = {"in_a": a, "in_b": b, "out_y": y}
    if a.shape == b.shape:
        d.update(p_shape=I([]), p_astr=I([]), p_bstr=I([]))
    else:
        d.update(p_shape=I(out), p_astr=I(bcast_strides(a.shape, out)), p_bstr=I(bcast_strides(b.shape, out)))
    return d


BIG = np.iinfo(np.int64)


@case_int
def add_i64_bcast():
    # the full range: sums wrap around as two's complement
    a, b = ints((2, 3, 4), BIG.min, BIG.max), ints((3, 1), BIG.min, BIG.max)
    return _binary_typed(a, b, a + b)


@case_int
def sub_i64_same():
    a, b = ints((4, 5), BIG.min, BIG.max), ints((4, 5), BIG.min, BIG.max)
    return _binary_typed(a, b, a - b)


@case_int
def mul_i64_bcast():
    a, b = ints((2, 3, 4), BIG.min, BIG.max), ints((4,), -1000, 1000)
    return _binary_typed(a, b, a * b)


@case_int
def div_i64_bcast():
    # mixed signs: the quotient truncates toward zero (not numpy's floor)
    a, b = ints((3, 5), -10**6, 10**6), ints((5,), 1, 50) * np.array([1, -1, 1, -1, 1])
    q = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
    return _binary_typed(a, b, q)


def _ipow(x, e):
    """onnxruntime's int64 Pow, exact: wrapping repeated squaring; a negative
    exponent gives 1 for 1, +-1 for -1, 0 otherwise."""
    if e < 0:
        return 1 if x == 1 else ((-1 if e % 2 else 1) if x == -1 else 0)
    r = pow(int(x), int(e), 1 << 64)
    return r - (1 << 64) if r >= 1 << 63 else r


@case_int
def pow_i64_bcast():
    a, b = ints((2, 6), -6, 7), ints((6,), -2, 40)
    a[0, :3] = [1, -1, 0]
    b[:3] = [-3, -3, 5]
    y = np.array([[_ipow(x, e) for x, e in zip(row, b)] for row in a], dtype=np.int64)
    return _binary_typed(a, b, y)


@case_int
def pow_i64_f32():
    # base >= 0 with fractional exponents, any base with integral ones;
    # the result truncates toward zero
    a = ints((3, 4), 0, 9)
    b = np.array([0.5, 2.0, 3.0, 1.5], dtype=F32)
    y = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64))).astype(np.int64)
    return _binary_typed(a, b, y)


@case_int
def pow_f32_i64():
    a = RNG3.uniform(-3, 3, size=(4, 3)).astype(F32)
    b = ints((4, 3), -3, 5)
    y = np.power(a.astype(np.float64), b.astype(np.float64)).astype(F32)
    return _binary_typed(a, b, y)


def _variadic_i64(op, shapes):
    xs = [ints(s, -5, 5) for s in shapes]  # narrow: many ties
    out = np.broadcast_shapes(*shapes)
    f = np.maximum if op == "Max" else np.minimum
    y = xs[0]
    for x in xs[1:]:
        y = f(y, x)
    d = {f"in_x{i}": x for i, x in enumerate(xs)}
    d["out_y"] = np.broadcast_to(y, out).astype(np.int64)
    if all(tuple(s) == tuple(out) for s in shapes):
        d.update(p_shape=I([]), p_strides=I([]))
    else:
        d.update(p_shape=I(out), p_strides=I([bcast_strides(s, out) for s in shapes]))
    return d


@case_int
def max_i64_bcast3():
    return _variadic_i64("Max", [(2, 3, 4), (3, 1), (4,)])


@case_int
def min_i64_same2():
    return _variadic_i64("Min", [(3, 5), (3, 5)])


def _reduce_max_typed(x, axes, keepdims):
    shape = x.shape
    ax = sorted(a % len(shape) for a in axes)
    y = np.max(x, axis=tuple(ax), keepdims=bool(keepdims))
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    keep = [i for i in range(len(shape)) if i not in ax]
    return {"in_x": x, "out_y": np.ascontiguousarray(y),
            "p_keep_shape": I([shape[i] for i in keep]),
            "p_keep_strides": I([strides[i] for i in keep]),
            "p_red_shape": I([shape[i] for i in ax]), "p_red_strides": I([strides[i] for i in ax])}


@case_int
def reducemax_i64_axes02():
    # all negative: an accumulator started at 0 fails
    return _reduce_max_typed(ints((2, 3, 4), -10**12, -1), [0, 2], 0)


@case_int
def reducemax_bool_last_keep():
    x = RNG3.random((4, 3)) < 0.3
    x[0] = False  # one all-false row
    return _reduce_max_typed(x, [-1], 1)


# ---- Mod, Not, ArgMax / ArgMin, ConstantOfShape's fill, Tile, LogSoftmax
# (numpy references, float64 rounded to float32 where it computes in float)
@case_int
def mod_i64_bcast():
    # fmod = 0: the remainder takes the divisor's sign (numpy's mod)
    a, b = ints((3, 4), -50, 50), np.array([7, -7, 3, -5], dtype=np.int64)
    return _binary_typed(a, b, np.mod(a, b))


@case_int
def fmod_i64_same():
    # fmod = 1: the remainder takes the dividend's sign (C's %)
    a, b = ints((4, 5), -10**9, 10**9), ints((4, 5), 1, 100) * np.where(ints((4, 5), 0, 2) == 1, 1, -1)
    return _binary_typed(a, b, np.fmod(a, b))


@case_int
def fmod_f32_bcast():
    a = RNG3.uniform(-10, 10, size=(2, 3, 4)).astype(F32)
    b = np.array([1.5, -2.25, 3.0, -0.75], dtype=F32)
    return _binary_typed(a, b, np.fmod(a, b))


@case_int
def not_bool():
    x = RNG3.random((5, 7)) < 0.5
    return {"in_x": x, "out_y": ~x}


def _arg(x, axis, last, is_min):
    f = np.argmin if is_min else np.argmax
    if last:
        flipped = np.flip(x, axis)
        y = x.shape[axis] - 1 - f(flipped, axis=axis)
    else:
        y = f(x, axis=axis)
    return {"in_x": x, "out_y": y.astype(np.int64),
            "p_arg": I([int(np.prod(x.shape[:axis])), x.shape[axis], int(np.prod(x.shape[axis + 1:])), int(last)]),
            "p_min": I([int(is_min)])}


@case_int
def argmax_axis1_ties():
    # few distinct values: ties, the first index wins
    return _arg(RNG3.integers(0, 3, size=(2, 5, 3)).astype(F32), 1, False, False)


@case_int
def argmin_last_select_last():
    return _arg(RNG3.integers(0, 3, size=(3, 6)).astype(F32), 1, True, True)


def _fill(value, n):
    v = np.array([value])
    bits = int.from_bytes(v.tobytes().ljust(8, b"\0"), "little", signed=True)
    return {"out_y": np.full(n, value, dtype=v.dtype), "p_fill": I([v.itemsize]), "p_value": I([bits])}


@case_int
def fill_f32():
    return _fill(np.float32(-2.5), 37)


@case_int
def fill_i64():
    return _fill(np.int64(-(2**40) - 3), 29)


@case_int
def fill_bool():
    return _fill(np.bool_(True), 41)


def _tile(x, reps):
    y = np.tile(x, reps)
    return {"in_x": x, "out_y": y, "p_tile": I([x.itemsize]), "p_in_shape": I(x.shape), "p_out_shape": I(y.shape)}


@case_int
def tile_f32_3d():
    return _tile(RNG3.uniform(-1, 1, size=(2, 1, 3)).astype(F32), (2, 3, 1))


@case_int
def tile_i64_rank6():
    return _tile(ints((1, 2, 1, 2, 3, 1), -100, 100), (2, 1, 3, 1, 1, 2))


def _log_softmax(x, axis):
    x64 = x.astype(np.float64)
    m = x64.max(axis=axis, keepdims=True)
    y = x64 - m - np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True))
    return {"in_x": x, "out_y": y.astype(F32),
            "p_sm": I([int(np.prod(x.shape[:axis])), x.shape[axis], int(np.prod(x.shape[axis + 1:]))])}


@case_int
def log_softmax_axis1():
    return _log_softmax(RNG3.uniform(-3, 3, size=(2, 4, 3)).astype(F32), 1)


@case_int
def log_softmax_last_large():
    # large logits: the max is subtracted before exp
    return _log_softmax(RNG3.uniform(500, 1000, size=(3, 7)).astype(F32), 1)


def _onnx_resize(x, out_hw, **attrs):
    """ONNX's reference Resize of x (N, C, H, W) to out_hw by sizes."""
    from onnx.reference import ReferenceEvaluator
    node = helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], **attrs)
    g = helper.make_graph([node], "resize", [helper.make_tensor_value_info("X", F, list(x.shape))],
                          [helper.make_tensor_value_info("Y", F, None)],
                          [onnx.numpy_helper.from_array(np.array(list(x.shape[:2]) + list(out_hw), np.int64),
                                                        "sizes")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(m).run(None, {"X": x})[0].astype(F32)


def _resize_case(x, out_hw, taps, **attrs):
    """taps(in_len, out_len) -> (k, indices, weights) per axis, as the
    generator computes them for attrs."""
    (kh, iy, wy), (kw, ix, wx) = taps(x.shape[2], out_hw[0]), taps(x.shape[3], out_hw[1])
    return {"in_x": x, "out_y": _onnx_resize(x, out_hw, **attrs),
            "p_resize": I([x.shape[0] * x.shape[1], x.shape[2], x.shape[3], out_hw[0], out_hw[1], kh, kw]),
            "p_iy": I(iy), "p_ix": I(ix), "f_wy": Fv(wy), "f_wx": Fv(wx), "f_extrapolation": Fv([0.0])}


def _align_corners_linear(n_in, n_out):
    idx, w = [], []
    for o in range(n_out):
        x = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        i0 = int(np.floor(x))
        r = x - i0
        idx += [i0, min(i0 + 1, n_in - 1)]
        w += [1 - r, r]
    return 2, idx, w


def _asymmetric_floor(n_in, n_out):
    return 1, [min(int(np.floor(o * n_in / n_out)), n_in - 1) for o in range(n_out)], [1.0] * n_out


@case_int
def resize_linear_align_corners():
    return _resize_case(RNG3.uniform(-1, 1, size=(1, 2, 3, 4)).astype(F32), (5, 7), _align_corners_linear,
                        mode="linear", coordinate_transformation_mode="align_corners")


@case_int
def resize_nearest_asymmetric_floor():
    return _resize_case(RNG3.uniform(-1, 1, size=(2, 1, 4, 3)).astype(F32), (8, 6), _asymmetric_floor,
                        mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")


# ---- Mod with fmod = 0 on floats (numpy's mod; onnxruntime 1.19 refuses
# it, the current ONNX defines it) and integer comparisons (numpy's)
@case_int
def mod_f32_bcast():
    # the divisor's sign; exact multiples give a zero of the divisor's sign
    a = RNG3.uniform(-10, 10, size=(2, 3, 4)).astype(F32)
    a[0, 0, :] = [3.0, -4.5, 0.0, -6.0]
    b = np.array([1.5, -2.25, 3.0, -0.75], dtype=F32)
    return _binary_typed(a, b, np.mod(a, b))


def _compare_int(op, a, b):
    out = np.broadcast_shapes(a.shape, b.shape)
    y = {"Equal": np.equal, "Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
         "GreaterOrEqual": np.greater_equal}[op](a, b)
    return _binary_typed(a, b, y.reshape(out))


@case_int
def greater_equal_i64_bcast():
    # values beyond 2^53 that differ in their last bit (a float compare would tie)
    a, b = ints((3, 4), -5, 5), ints((4,), -5, 5)
    a[0, :2] = [2 ** 62 + 1, -(2 ** 62) - 1]
    b[:2] = [2 ** 62, -(2 ** 62)]
    return _compare_int("GreaterOrEqual", a, b)


@case_int
def less_i64_same():
    a, b = ints((2, 5), -3, 3), ints((2, 5), -3, 3)
    a[0, 0], b[0, 0] = BIG.min, BIG.max
    return _compare_int("Less", a, b)


@case_int
def equal_i64_bcast():
    return _compare_int("Equal", ints((4, 3), -2, 2), ints((4, 1), -2, 2))


@case_int
def greater_i32_same():
    a, b = ints((3, 4), -4, 4).astype(np.int32), ints((3, 4), -4, 4).astype(np.int32)
    a[0, 0], b[0, 0] = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    return _compare_int("Greater", a, b)


@case_int
def less_equal_i32_bcast():
    return _compare_int("LessOrEqual", ints((2, 3, 4), -3, 3).astype(np.int32), ints((3, 1), -3, 3).astype(np.int32))


# ---- the int32 forms: the int64 arithmetic in 32 bits (drawn after every
# case above, so that their values stay as they were)
I32 = np.iinfo(np.int32)


def ints32(shape, lo, hi):
    return ints(shape, lo, hi).astype(np.int32)


@case_int
def add_i32_bcast():
    # the full range: sums wrap around in 32 bits (an int64 sum would not)
    a, b = ints32((2, 3, 4), I32.min, I32.max), ints32((3, 1), I32.min, I32.max)
    return _binary_typed(a, b, a + b)


@case_int
def sub_i32_same():
    a, b = ints32((4, 5), I32.min, I32.max), ints32((4, 5), I32.min, I32.max)
    return _binary_typed(a, b, a - b)


@case_int
def mul_i32_bcast():
    a, b = ints32((2, 3, 4), I32.min, I32.max), ints32((4,), -1000, 1000)
    return _binary_typed(a, b, a * b)


@case_int
def div_i32_bcast():
    # mixed signs truncate toward zero; INT32_MIN / -1 wraps to INT32_MIN
    a, b = ints32((3, 5), -10**6, 10**6), ints32((5,), 1, 50) * np.array([1, -1, 1, -1, 1], dtype=np.int32)
    a[0, 1] = I32.min
    q = (np.abs(a.astype(np.int64)) // np.abs(b)) * np.sign(a) * np.sign(b)
    return _binary_typed(a, b, q.astype(np.int32))


def _ipow32(x, e):
    """_ipow in 32 bits."""
    if e < 0:
        return _ipow(x, e)
    r = pow(int(x), int(e), 1 << 32)
    return r - (1 << 32) if r >= 1 << 31 else r


@case_int
def pow_i32_bcast():
    a, b = ints32((2, 6), -6, 7), ints32((6,), -2, 30)
    a[0, :3] = [1, -1, 0]
    b[:3] = [-3, -3, 5]
    y = np.array([[_ipow32(x, e) for x, e in zip(row, b)] for row in a], dtype=np.int32)
    return _binary_typed(a, b, y)


@case_int
def pow_i32_f32():
    # the result truncates toward zero; out of int32 (2^40) gives INT32_MIN
    a = ints32((3, 4), 0, 9)
    b = np.array([0.5, 2.0, 3.0, 1.5], dtype=F32)
    a[0, 0], b[0] = 2, 40.0
    y = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
    y = np.where(np.abs(y) < 2.0**31, y, I32.min).astype(np.int32)
    return _binary_typed(a, b, y)


@case_int
def pow_f32_i32():
    a = RNG3.uniform(-3, 3, size=(4, 3)).astype(F32)
    b = ints32((4, 3), -3, 5)
    y = np.power(a.astype(np.float64), b.astype(np.float64)).astype(F32)
    return _binary_typed(a, b, y)


def _variadic_i32(op, shapes):
    d = _variadic_i64(op, shapes)
    return {k: (v.astype(np.int32) if k[:3] in ("in_", "out") else v) for k, v in d.items()}


@case_int
def max_i32_bcast3():
    return _variadic_i32("Max", [(2, 3, 4), (3, 1), (4,)])


@case_int
def min_i32_same2():
    return _variadic_i32("Min", [(3, 5), (3, 5)])


@case_int
def mod_i32_bcast():
    # fmod = 0: the divisor's sign, a zero remainder stays 0
    a, b = ints32((3, 4), -50, 50), np.array([7, -7, 3, -5], dtype=np.int32)
    a[0, :2] = [14, -21]
    return _binary_typed(a, b, np.mod(a, b))


@case_int
def fmod_i32_same():
    a = ints32((4, 5), -10**9, 10**9)
    b = ints32((4, 5), 1, 100) * np.where(ints((4, 5), 0, 2) == 1, 1, -1).astype(np.int32)
    return _binary_typed(a, b, np.fmod(a, b))


# ---- the int8 and uint8 forms (quantized graphs' integer companions): the
# arithmetic in 8 bits, wrapping as numpy's int8 / uint8 do (drawn after
# every case above, from their own generator, so that those stay as they were)
RNG8 = np.random.default_rng(20261207)
I8, U8 = np.iinfo(np.int8), np.iinfo(np.uint8)


def ints8(shape, lo=I8.min, hi=I8.max, dtype=np.int8):
    """Integers in [lo, hi] (both ends included) of `dtype`."""
    return RNG8.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def u8s(shape, lo=U8.min, hi=U8.max):
    return ints8(shape, lo, hi, np.uint8)


@case_int
def add_i8_bcast():
    # the full range: sums wrap around in 8 bits (127 + 1 = -128)
    a, b = ints8((2, 3, 4)), ints8((3, 1))
    a[0, 0, 0], b[0, 0] = 127, 1
    return _binary_typed(a, b, a + b)


@case_int
def sub_i8_same():
    a, b = ints8((4, 5)), ints8((4, 5))
    a[0, 0], b[0, 0] = -128, 1
    return _binary_typed(a, b, a - b)


@case_int
def mul_i8_bcast():
    a, b = ints8((2, 3, 4)), ints8((4,), -9, 9)
    return _binary_typed(a, b, a * b)


@case_int
def add_u8_same():
    a, b = u8s((3, 5)), u8s((3, 5))
    a[0, 0], b[0, 0] = 255, 1
    return _binary_typed(a, b, a + b)


@case_int
def sub_u8_bcast():
    # below zero wraps to 256 - n
    a, b = u8s((2, 3, 4)), u8s((3, 1))
    return _binary_typed(a, b, a - b)


@case_int
def mul_u8_same():
    a, b = u8s((4, 5)), u8s((4, 5), 0, 20)
    return _binary_typed(a, b, a * b)


@case_int
def div_i8_bcast():
    # mixed signs truncate toward zero; -128 / -1 wraps to -128
    a, b = ints8((3, 5)), ints8((5,), 1, 9) * np.array([1, -1, 1, -1, 1], dtype=np.int8)
    a[0, 1] = I8.min
    q = (np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))) * np.sign(a) * np.sign(b)
    return _binary_typed(a, b, q.astype(np.int8))


@case_int
def div_u8_same():
    # values past 127: an int8 quotient would be wrong
    a, b = u8s((4, 5)), u8s((4, 5), 1, 255)
    return _binary_typed(a, b, a // b)


@case_int
def mod_i8_bcast():
    # fmod = 0: the divisor's sign, a zero remainder stays 0
    a, b = ints8((3, 4)), np.array([7, -7, 3, -5], dtype=np.int8)
    a[0, :2] = [14, -21]
    return _binary_typed(a, b, np.mod(a, b))


@case_int
def fmod_i8_same():
    a = ints8((4, 5))
    b = ints8((4, 5), 1, 30) * np.where(ints8((4, 5), 0, 1) == 1, 1, -1).astype(np.int8)
    return _binary_typed(a, b, np.fmod(a, b))


@case_int
def mod_u8_bcast():
    a, b = u8s((3, 4)), u8s((4,), 1, 255)
    return _binary_typed(a, b, np.mod(a, b))


@case_int
def fmod_u8_same():
    a, b = u8s((4, 5)), u8s((4, 5), 1, 255)
    return _binary_typed(a, b, np.fmod(a, b))


@case_int
def less_i8_bcast():
    # -128 < 127: a compare of the bytes as unsigned says otherwise
    a, b = ints8((3, 4), -3, 3), ints8((4,), -3, 3)
    a[0, :2], b[:2] = [-128, 127], [127, -128]
    return _compare_int("Less", a, b)


@case_int
def greater_i8_same():
    # ties (a narrow range) and 127 > -128
    a, b = ints8((3, 4), -2, 2), ints8((3, 4), -2, 2)
    a[0, :2], b[0, :2] = [127, -128], [-128, 127]
    return _compare_int("Greater", a, b)


@case_int
def equal_u8_bcast():
    return _compare_int("Equal", u8s((4, 3), 0, 2), u8s((4, 1), 0, 2))


@case_int
def less_equal_u8_same():
    # 255 >= 1: a compare of the bytes as signed says otherwise
    a, b = u8s((3, 4)), u8s((3, 4))
    a[0, :2], b[0, :2] = [255, 1], [1, 255]
    return _compare_int("LessOrEqual", a, b)


@case_int
def greater_equal_u8_bcast():
    return _compare_int("GreaterOrEqual", u8s((2, 3, 4), 125, 131), u8s((3, 1), 125, 131))


@case_int
def greater_equal_i8_same():
    return _compare_int("GreaterOrEqual", ints8((4, 5), -2, 2), ints8((4, 5), -2, 2))


def _variadic_8(op, shapes, draw):
    xs = [draw(s) for s in shapes]
    out = np.broadcast_shapes(*shapes)
    f = np.maximum if op == "Max" else np.minimum
    y = xs[0]
    for x in xs[1:]:
        y = f(y, x)
    d = {f"in_x{i}": x for i, x in enumerate(xs)}
    d["out_y"] = np.broadcast_to(y, out).astype(xs[0].dtype)
    if all(tuple(s) == tuple(out) for s in shapes):
        d.update(p_shape=I([]), p_strides=I([]))
    else:
        d.update(p_shape=I(out), p_strides=I([bcast_strides(s, out) for s in shapes]))
    return d


@case_int
def max_i8_bcast3():
    # the ends of the range and a few values between: many ties
    return _variadic_8("Max", [(2, 3, 4), (3, 1), (4,)], lambda s: np.array([-128, -1, 0, 1, 127], np.int8)[
        ints8(s, 0, 4)])


@case_int
def min_u8_same2():
    return _variadic_8("Min", [(3, 5), (3, 5)], lambda s: np.array([0, 1, 127, 128, 255], np.uint8)[ints8(s, 0, 4)])


def _clip8(x, lo, hi, as_inputs):
    """p_clip = [has_min, has_max, as_inputs], p_bounds = [min, max] (0 when absent)."""
    info = np.iinfo(x.dtype)
    y = np.clip(x, info.min if lo is None else lo, info.max if hi is None else hi).astype(x.dtype)
    return {"in_x": x, "out_y": y, "p_clip": I([lo is not None, hi is not None, as_inputs]),
            "p_bounds": I([0 if lo is None else lo, 0 if hi is None else hi])}


@case_int
def clip_i8_inputs():
    return _clip8(ints8((4, 9)), -5, 100, 1)


@case_int
def clip_i8_min_only():
    # no max: 127 stays
    x = ints8((3, 7))
    x[0, 0] = 127
    return _clip8(x, -20, None, 0)


@case_int
def clip_u8_max_only():
    # no min: 0 stays; 255 clips
    x = u8s((3, 7))
    x[0, :2] = [0, 255]
    return _clip8(x, None, 200, 1)


@case_int
def relu_i8():
    x = ints8((5, 7))
    x[0, :3] = [-128, 0, 127]
    return {"in_x": x, "out_y": np.maximum(x, 0).astype(np.int8)}


def _maxpool8(x, k, s, pads, dil=(1, 1), ceil=0, indices=True, order=0):
    """ONNX's MaxPool on [N, C, H, W] integers, window order (kh, then kw), the
    first maximum kept; a ceil_mode window starting in the end padding is dropped."""
    n, c, h, w = x.shape
    ext = [(k[i] - 1) * dil[i] + 1 for i in range(2)]
    size = [h, w]
    outs = []
    for i in range(2):
        o = _pool_out(size[i], ext[i], s[i], pads[i], pads[i + 2], ceil)
        if ceil and (o - 1) * s[i] >= size[i] + pads[i]:
            o -= 1
        outs.append(o)
    y = np.zeros((n, c, outs[0], outs[1]), dtype=x.dtype)
    idx = np.zeros(y.shape, dtype=np.int64)
    for b, ch, oh, ow in itertools.product(range(n), range(c), range(outs[0]), range(outs[1])):
        best, bi = None, -1
        for kh, kw in itertools.product(range(k[0]), range(k[1])):
            ih, iw = oh * s[0] - pads[0] + kh * dil[0], ow * s[1] - pads[1] + kw * dil[1]
            if 0 <= ih < h and 0 <= iw < w and (best is None or x[b, ch, ih, iw] > best):
                best, bi = x[b, ch, ih, iw], (iw * h + ih if order else ih * w + iw)
        y[b, ch, oh, ow] = best
        idx[b, ch, oh, ow] = (b * c + ch) * h * w + bi
    d = {"in_x": x, "out_y": y, "p_pool": _pool_params(x.shape, y.shape, k, s, pads, 0, dil),
         "p_order": I([order])}
    if indices:
        d["out_indices"] = idx
    return d


@case_int
def maxpool_i8_pads_ceil_ties():
    # values on a narrow grid: ties, the first maximum in window order wins;
    # ceil_mode windows over the edge, negative maxima under padding
    return _maxpool8(ints8((2, 2, 7, 8), -128, -125), [3, 3], [2, 2], [1, 1, 1, 1], ceil=1)


@case_int
def maxpool_u8_dilations():
    # values past 127 (a signed compare loses them); dilations, uneven pads
    return _maxpool8(u8s((1, 3, 9, 11)), [2, 3], [1, 2], [0, 1, 1, 0], dil=(2, 2), indices=False)


@case_int
def maxpool_i8_lowest_column_major():
    # every value -128 in the first plane: the index is still the first tap;
    # storage_order = 1 gives column-major indices
    x = ints8((1, 2, 5, 6))
    x[0, 0] = -128
    return _maxpool8(x, [2, 2], [1, 2], [1, 0, 0, 1], order=1)


@case_int
def maxpool_u8_1d():
    # 1-D as height 1
    return _maxpool8(u8s((2, 3, 1, 13)), [1, 4], [1, 3], [0, 2, 0, 1])


@case_int
def maxpool_i8_dense_2x2():
    # every window inside the input, no indices: the rows take the dense
    # path (the 2x2 window unrolled); odd width leaves a column unused
    return _maxpool8(ints8((2, 3, 8, 11)), [2, 2], [2, 2], [0, 0, 0, 0], indices=False)


@case_int
def maxpool_u8_dense_3x2():
    # the dense path's general window (3x2, strides 1 and 2), values past 127
    return _maxpool8(u8s((1, 2, 7, 9)), [3, 2], [1, 2], [0, 0, 0, 0], indices=False)


def write_int_forms(out_dir):
    """Writes the integer-form cases into out_dir (runtime/tests/refs/ops),
    leaving the other cases there."""
    os.makedirs(out_dir, exist_ok=True)
    for name, fn in INT_FORMS.items():
        d = fn()
        for k in d:
            assert k.split("_")[0] in ("in", "out", "p", "f"), k
        np.savez_compressed(os.path.join(out_dir, name + ".npz"),
                            **{k: np.ascontiguousarray(v) for k, v in d.items()})
        print(f"{name:28s} numpy  {', '.join(k for k in d if k.startswith('out_'))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "runtime", "tests", "refs"))
    ap.add_argument("--gelu-tanh", action="store_true", help="write only OUT/gelu_tanh/ (leave the others)")
    ap.add_argument("--int-forms", action="store_true",
                    help="write only the numpy-referenced cases (integer forms, Mod, Not, ArgMax / ArgMin, fill, "
                         "Tile, LogSoftmax; Resize against ONNX's reference) into OUT/ops/ (leave the others; no "
                         "onnxruntime)")
    args = ap.parse_args()
    if args.int_forms:
        write_int_forms(os.path.join(args.out, "ops"))
        return 0
    if ort is None:
        sys.exit("make_kernel_refs.py: onnxruntime is not installed (tools/requirements.txt)")
    assert ort.__version__ == "1.19.2", f"expected onnxruntime 1.19.2, found {ort.__version__}"
    assert onnx.__version__ == "1.17.0", f"expected onnx 1.17.0, found {onnx.__version__}"
    if args.gelu_tanh:
        write_gelu_tanh(os.path.join(args.out, "gelu_tanh"))
        return 0
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
    write_ops(os.path.join(args.out, "ops"))
    write_int_forms(os.path.join(args.out, "ops"))
    write_gelu_tanh(os.path.join(args.out, "gelu_tanh"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
