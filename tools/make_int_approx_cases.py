#!/usr/bin/env python3
"""Single-operator test folders for the integer-only approximations that
quantlib exports and Deeploy runs (iSoftmax, ITAMax, ITAPartialMax,
iRMSNorm, iLayerNorm, iHardswish, iGELU, TrueIntegerDiv, IntegerDiv,
iNoNorm, IntegerMean), with references computed here in numpy.

    python3 tools/make_int_approx_cases.py [--out tests/fixtures/int_approx]
    python3 tools/make_int_approx_cases.py --check DEEPLOY/DeeployTest/Tests

onnxruntime does not run these operators, so the references come from the
formulas of Deeploy's Generic C kernels (TargetLibraries/Generic/src:
Softmax_s8.c, iRMSNorm_s8.c, Layernorm_s8.c, Hardswish_s8.c, GELU_s8.c,
Div_s32.c; Snitch's iNoNorm.c; the ReduceMean template), written again
below from their text. `--check` runs the same formulas on Deeploy's own
test folders (Kernels/Integer/...) and fails unless they give Deeploy's
committed references exactly: that is what ties these formulas to an
implementation other than deploygen's C.

The graphs declare their tensors f32 and the npz files hold int64, as
Deeploy's folders do (one case declares i32). Seeded data: the same files
on every run. tests/it/int_approx.rs runs `deploygen test` on every folder and
expects every value equal.
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

I64 = np.int64


def trunc_div(a, b):
    """C's integer division (toward zero)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def isoftmax(x, a, b, c, log2, levels):
    xt = (x - x.max(-1, keepdims=True)).astype(np.int16).astype(I64)
    z = np.clip(-trunc_div(xt, log2), 0, 31)
    p = (xt + z * log2).astype(np.int16).astype(I64)
    e = (((a * (p + b) ** 2 + c).astype(np.uint64) >> z.astype(np.uint64)) & 0xFFFFFFFF).astype(I64)
    s = e.sum(-1, keepdims=True) & 0xFFFFFFFF
    return ((e * (levels - 1)) & 0xFFFFFFFF) // s


def ita_shift(diff):
    return np.minimum((diff + 16) >> 5, 31)


def itamax(x, levels, group=0):
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        if group == 0:
            m = row.max()
            total = (256 >> ita_shift(m - row)).sum()
            inv = ((levels - 1) * 256) // total
        else:
            total, m = 0, row[0]
            for g in range(len(row) // group):
                part = row[g * group:(g + 1) * group]
                gm = part.max()
                rescale = ita_shift(gm - m) if gm > m else 0
                m = max(m, gm)
                total = (total >> rescale) + (256 >> ita_shift(m - part)).sum()
            inv = ((levels // 2 - 1) * 256) // total
        out[idx] = inv >> ita_shift(m - row)
    return out


def isqrt(v):
    return np.array([int(np.floor(np.sqrt(float(t)))) for t in v.ravel()], dtype=I64).reshape(v.shape)


def inorm(x, w, b, log2d, levels, mean_free):
    n = x.shape[-1]
    mean = trunc_div(x.sum(-1, keepdims=True), n) if mean_free else np.zeros_like(x[..., :1])
    t = (x - mean).astype(np.int16).astype(I64)
    root = isqrt((t * t).sum(-1, keepdims=True) // n + 1)
    v = trunc_div((x - mean) * w, root) + (b if b is not None else 0)
    return np.clip(v >> log2d, -(levels // 2), levels // 2 - 1)


def ihardswish(x, one_over_six, three, six):
    return x * (np.clip(x + three, 0, six) * one_over_six)


def igelu(x, b, one):
    s = np.sign(x)
    q = np.minimum(s * x, -b)
    l = s * (one - (q + b) ** 2)
    return x * ((one + l) >> 1)


def true_integer_div(x, delta, eps, eta, y):
    return (x * delta * eta) // (y * eta + eps)


def integer_div(a, b, delta, eps, eta):
    n, d = delta * eta * a, eta * b + eps
    return trunc_div(n + np.where(n >= 0, 1, -1) * (d >> 1), d)


def inonorm(x, w, b, mul, log2d, levels):
    return np.clip(((x * w + b) * mul) >> log2d, -(levels // 2), levels // 2 - 1)


def integer_mean(x, axes, keepdims):
    s = x.sum(axis=tuple(axes), keepdims=bool(keepdims))
    n = int(np.prod([x.shape[a] for a in axes]))
    if n & (n - 1) == 0:
        return (s + n // 2) // n
    return trunc_div(s + np.where(s >= 0, 1, -1) * (n // 2), n)


def ints(rng, lo, hi, shape):
    return rng.integers(lo, hi + 1, size=shape).astype(I64)


def tensor_attr(name, v):
    """quantlib writes most of these attributes as one-value float tensors."""
    return helper.make_attribute(name, numpy_helper.from_array(np.array([float(v)], np.float32)))


def write_case(out, name, op, x, inits, attrs, y, domain="", dtype=TensorProto.FLOAT):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    init = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits]
    node = helper.make_node(op, ["x"] + [k for k, _ in inits], ["y"], name=f"{op}_0", domain=domain)
    node.attribute.extend(attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", dtype, list(x.shape))],
                          [helper.make_tensor_value_info("y", dtype, list(y.shape))], init)
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=opsets, producer_name="make_int_approx_cases.py")
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "network.onnx"))
    as_ty = np.int32 if dtype == TensorProto.INT32 else I64
    np.savez(os.path.join(d, "inputs.npz"), x=x.astype(as_ty))
    np.savez(os.path.join(d, "outputs.npz"), y=y.astype(as_ty))


def cases(rng):
    """(name, op, x, inits, attrs, reference, domain, dtype) of every case."""
    out = []
    x = ints(rng, -128, 127, (2, 3, 16))
    out.append(("isoftmax", "iSoftmax", x, [],
                [tensor_attr(k, v) for k, v in
                 [("coeffA", 1), ("coeffB", 86), ("coeffC", 3881), ("log2", 64), ("n_levels", 256)]],
                isoftmax(x, 1, 86, 3881, 64, 256)))
    x = ints(rng, -128, 127, (2, 4, 32))
    out.append(("itamax", "ITAMax", x, [], [tensor_attr("n_levels", 256)], itamax(x, 256)))
    out.append(("itapartialmax", "ITAPartialMax", x, [],
                [helper.make_attribute("group_width", 8), tensor_attr("n_levels", 256)], itamax(x, 256, 8)))
    x = ints(rng, -64, 64, (2, 5, 16))
    w = ints(rng, 2000000, 4000000, (16,))
    out.append(("irmsnorm", "iRMSNorm", x, [("w", w)],
                [helper.make_attribute("D", 65536), helper.make_attribute("n_levels", 256)],
                inorm(x, w, None, 16, 256, False)))
    x = ints(rng, -100, 100, (2, 5, 16))
    w, b = ints(rng, 100000, 300000, (16,)), ints(rng, -200000, 200000, (16,))
    out.append(("ilayernorm", "iLayerNorm", x, [("w", w), ("b", b)],
                [tensor_attr("D", 16384), tensor_attr("n_levels", 256)], inorm(x, w, b, 14, 256, True)))
    x = ints(rng, -128, 127, (1, 4, 50))
    out.append(("ihardswish_i32", "iHardswish", x, [],
                [helper.make_attribute(k, v) for k, v in [("one_over_six", 42), ("three", 122), ("six", 245)]],
                ihardswish(x, 42, 122, 245), "", TensorProto.INT32))
    out.append(("igelu", "iGELU", x, [], [helper.make_attribute("b", -42), helper.make_attribute("one", 1929)],
                igelu(x, -42, 1929), "PACTOps"))
    x = ints(rng, -2500, 2500, (2, 64))
    out.append(("true_integer_div", "TrueIntegerDiv", x, [],
                [helper.make_attribute(k, v) for k, v in [("Delta", 16384), ("eps", 1), ("eta", 200000), ("y", 3)]],
                true_integer_div(x, 16384, 1, 200000, 3)))
    x, d = ints(rng, -5000, 5000, (2, 8, 4)), ints(rng, 1, 3000, (2, 1, 4))
    out.append(("integer_div", "IntegerDiv", x, [("d", d)],
                [helper.make_attribute(k, v) for k, v in [("Delta", 65536), ("eps", 1), ("eta", 7)]],
                integer_div(x, d, 65536, 1, 7), "PACTOps"))
    x = ints(rng, -128, 127, (1, 16, 16))
    w, b = ints(rng, -128, 127, (16, 16)), ints(rng, -3000, 3000, (16,))
    out.append(("inonorm", "iNoNorm", x, [("w", w), ("b", b)],
                [tensor_attr(k, v) for k, v in [("D", 65536), ("mul", 425), ("n_levels", 256)]],
                inonorm(x, w, b, 425, 16, 256)))
    x = ints(rng, -128, 127, (1, 6, 16))
    out.append(("integer_mean", "IntegerMean", x, [],
                [helper.make_attribute("axes", [1]), helper.make_attribute("keepdims", 0)],
                integer_mean(x, [1], 0)))
    x = ints(rng, -128, 127, (1, 5, 8, 3))
    out.append(("integer_mean_pow2", "IntegerMean", x, [],
                [helper.make_attribute("axes", 2), helper.make_attribute("keepdims", 1)],
                integer_mean(x, [2], 1), "PACTOps"))
    return out


def check(deeploy):
    """The formulas against Deeploy's own folders and references."""
    def load(rel):
        d = os.path.join(deeploy, rel)
        m = onnx.load(os.path.join(d, "network.onnx"))
        inits = {t.name: numpy_helper.to_array(t).astype(I64) for t in m.graph.initializer}
        n = m.graph.node[0]
        at = {}
        for a in n.attribute:
            v = helper.get_attribute_value(a)
            at[a.name] = int(numpy_helper.to_array(v).ravel()[0]) if isinstance(v, onnx.TensorProto) else v
        xs = np.load(os.path.join(d, "inputs.npz"))
        refs = np.load(os.path.join(d, "outputs.npz"))
        return [inits[i] for i in n.input[1:]], xs[xs.files[0]].astype(I64), refs[refs.files[0]], at

    checks = {
        "Kernels/Integer/Softmax/Regular": lambda w, x, a: isoftmax(
            x, a["coeffA"], a["coeffB"], a["coeffC"], a["log2"], a["n_levels"]),
        "Kernels/Integer/Softmax/Large": lambda w, x, a: isoftmax(
            x, a["coeffA"], a["coeffB"], a["coeffC"], a["log2"], a["n_levels"]),
        "Kernels/Integer/RMSNorm": lambda w, x, a: inorm(
            x, w[0], None, int(np.log2(a["D"])), a["n_levels"], False),
        "Kernels/Integer/Hardswish/Regular": lambda w, x, a: ihardswish(x, a["one_over_six"], a["three"], a["six"]),
        "Kernels/Integer/iNoNorm": lambda w, x, a: inonorm(
            x, w[0], w[1], a["mul"], int(np.log2(a["D"])), a["n_levels"]),
    }
    bad = 0
    for rel, f in checks.items():
        w, x, ref, at = load(rel)
        got = f(w, x, at)
        same = int((got == ref).sum())
        print(f"{rel}: {same} of {ref.size} values equal")
        bad += same != ref.size
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "int_approx"))
    ap.add_argument("--check", metavar="DEEPLOY_TESTS", help="check the formulas on Deeploy's test folders")
    args = ap.parse_args()
    if args.check:
        sys.exit(1 if check(args.check) else 0)
    shutil.rmtree(args.out, ignore_errors=True)
    for c in cases(np.random.default_rng(2026)):
        name, op, x, inits, attrs, y = c[:6]
        domain, dtype = (c[6] if len(c) > 6 else ""), (c[7] if len(c) > 7 else TensorProto.FLOAT)
        write_case(args.out, name, op, x, inits, attrs, y.astype(I64), domain, dtype)
        print(f"{name}: {op}, x {list(x.shape)} -> y {list(y.shape)}, y in [{y.min()}, {y.max()}]")


if __name__ == "__main__":
    main()
