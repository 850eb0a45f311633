#!/usr/bin/env python3
"""Single-operator test folders for deploygen's quantized kernels, with
references from onnxruntime (pinned in tools/requirements.txt).

    python3 tools/make_quant_cases.py [--out tests/fixtures/quant]

Each folder holds network.onnx, inputs.npz and outputs.npz. The operators
are onnxruntime's contrib QOperator forms (QGemm, QLinearGlobalAveragePool,
QLinearSigmoid, QLinearLeakyRelu,
QLinearSoftmax) and the ONNX ones (Pad too, on 8-bit values), in int8 and uint8, per tensor and per
channel, on seeded random data (the same files on every run). Values are
drawn over the whole 8-bit range so that requantization saturates and rounds
ties. tests/it/quant.rs runs `deploygen test` on every folder and expects
integer outputs to be equal.
"""
import argparse
import io
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]


def qrange(dt):
    return (-128, 127) if dt == np.int8 else (0, 255)


def q(rng, dt, shape):
    lo, hi = qrange(dt)
    return rng.integers(lo, hi + 1, size=shape).astype(dt)


def tt(dt):
    return {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.float32: TensorProto.FLOAT,
            np.int32: TensorProto.INT32}[dt]


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def save(out, name, nodes, inputs, outputs, inits, feeds):
    import onnxruntime as ort
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=OPSETS, producer_name="make_quant_cases")
    model.ir_version = 8
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in outputs]
    refs = dict(zip(names, sess.run(names, feeds)))
    d = os.path.join(out, name)
    os.makedirs(d)
    with open(os.path.join(d, "network.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for fname, arrays in (("inputs.npz", feeds), ("outputs.npz", refs)):
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        with open(os.path.join(d, fname), "wb") as f:
            f.write(buf.getvalue())


def qgemm(out, rng, name, adt, m, k, n, trans_b, per_col, y_float=False, alpha=1.0, bias=True):
    a = q(rng, adt, (m, k))
    # uint8 x int8 on x86 without VNNI sums pairs of products in int16,
    # which saturates: onnxruntime's quantizer keeps such weights to 7
    # bits (reduce_range), and so do these cases.
    b = q(rng, np.int8, (n, k) if trans_b else (k, n))
    if adt == np.uint8:
        b = (b // 2).astype(np.int8)
    bs = (rng.uniform(0.002, 0.02, n) if per_col else np.array(0.01)).astype(np.float32)
    inits = [const("a_scale", np.float32(0.05)), const("a_zp", adt(3 if adt == np.int8 else 131)),
             const("b", b), const("b_scale", bs), const("b_zp", np.zeros(bs.shape, np.int8)),
             const("c", rng.integers(-2000, 2000, n).astype(np.int32) if bias else np.zeros(n, np.int32))]
    ins = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c"]
    odt = np.float32 if y_float else adt
    if not y_float:
        inits += [const("y_scale", np.float32(0.07)), const("y_zp", adt(-5 if adt == np.int8 else 120))]
        ins += ["y_scale", "y_zp"]
    node = helper.make_node("QGemm", ins, ["y"], domain=MS, transB=int(trans_b), alpha=alpha)
    save(out, name, [node], [helper.make_tensor_value_info("a", tt(adt), [m, k])],
         [helper.make_tensor_value_info("y", tt(odt), [m, n])], inits, {"a": a})


def qgap(out, rng, name, dt, shape, xs, ys):
    x = q(rng, dt, shape)
    zp = dt(-7 if dt == np.int8 else 125)
    inits = [const("xs", np.float32(xs)), const("xzp", zp), const("ys", np.float32(ys)),
             const("yzp", dt(2 if dt == np.int8 else 128))]
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xzp", "ys", "yzp"], ["y"], domain=MS,
                            channels_last=0)
    save(out, name, [node], [helper.make_tensor_value_info("x", tt(dt), list(shape))],
         [helper.make_tensor_value_info("y", tt(dt), list(shape[:2]) + [1] * (len(shape) - 2))], inits, {"x": x})


def qsoftmax(out, rng, name, dt, shape, xs, opset):
    x = q(rng, dt, shape)
    yzp = dt(-128 if dt == np.int8 else 0)
    inits = [const("xs", np.float32(xs)), const("xzp", dt(0)), const("ys", np.float32(1.0 / 256.0)),
             const("yzp", yzp)]
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xzp", "ys", "yzp"], ["y"], domain=MS, axis=-1,
                            opset=opset)
    save(out, name, [node], [helper.make_tensor_value_info("x", tt(dt), list(shape))],
         [helper.make_tensor_value_info("y", tt(dt), list(shape))], inits, {"x": x})


def qbinary(out, rng, name, op, dt, ashape, bshape):
    a, b = q(rng, dt, ashape), q(rng, dt, bshape)
    zp = (lambda v: dt(v)) if dt == np.int8 else (lambda v: dt(v + 128))
    inits = [const("as", np.float32(0.031)), const("azp", zp(-3)), const("bs", np.float32(0.017)),
             const("bzp", zp(9)), const("ys", np.float32(0.045 if op == "QLinearAdd" else 0.3)),
             const("yzp", zp(1))]
    node = helper.make_node(op, ["a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], ["y"], domain=MS)
    yshape = list(np.broadcast_shapes(ashape, bshape))
    save(out, name, [node], [helper.make_tensor_value_info("a", tt(dt), list(ashape)),
                             helper.make_tensor_value_info("b", tt(dt), list(bshape))],
         [helper.make_tensor_value_info("y", tt(dt), yshape)], inits, {"a": a, "b": b})


def qlookup(out, rng, name, op, dt, shape, xs, ys, **attrs):
    # Every byte value once, then random ones: the whole table is compared.
    x = q(rng, dt, shape).reshape(-1)
    lo, hi = qrange(dt)
    x[:256] = np.arange(lo, hi + 1)
    x = x.reshape(shape).astype(dt)
    zp = (lambda v: dt(v)) if dt == np.int8 else (lambda v: dt(v + 128))
    inits = [const("xs", np.float32(xs)), const("xzp", zp(-6)), const("ys", np.float32(ys)), const("yzp", zp(-100))]
    node = helper.make_node(op, ["x", "xs", "xzp", "ys", "yzp"], ["y"], domain=MS, **attrs)
    save(out, name, [node], [helper.make_tensor_value_info("x", tt(dt), list(shape))],
         [helper.make_tensor_value_info("y", tt(dt), list(shape))], inits, {"x": x})


def qpad(out, rng, name, dt, shape, pads, mode, value=None):
    # ONNX Pad on 8-bit values, as onnxruntime's QOperator form keeps it.
    x = q(rng, dt, shape)
    inits = [const("pads", np.array(pads, np.int64))]
    ins = ["x", "pads"]
    if value is not None:
        inits.append(const("value", dt(value)))
        ins.append("value")
    node = helper.make_node("Pad", ins, ["y"], mode=mode)
    yshape = [d + pads[i] + pads[i + len(shape)] for i, d in enumerate(shape)]
    save(out, name, [node], [helper.make_tensor_value_info("x", tt(dt), list(shape))],
         [helper.make_tensor_value_info("y", tt(dt), yshape)], inits, {"x": x})


def qconv(out, rng, name, xdt, x_shape, w_shape, group=1, wdt=np.int8, xzp=-2, wzp=0, **attrs):
    """QLinearConv; xzp and wzp are offsets from the type's middle (0 for
    int8, 128 for uint8): a nonzero W zero point (uint8 W) and a zero x
    zero point exercise the kernels' zero-point terms."""
    x = q(rng, xdt, x_shape)
    w = q(rng, wdt, w_shape)
    if xdt == np.uint8 and wdt == np.int8:
        w = (w // 2).astype(np.int8)   # 7-bit weights: see qgemm
    m = w_shape[0]
    ws = rng.uniform(0.002, 0.02, m).astype(np.float32)
    zp = lambda dt: (lambda v: dt(v)) if dt == np.int8 else (lambda v: dt(v + 128))
    inits = [const("xs", np.float32(0.04)), const("xzp", zp(xdt)(xzp)), const("w", w), const("ws", ws),
             const("wzp", np.full(m, zp(wdt)(wzp), wdt)), const("ys", np.float32(0.09)),
             const("yzp", zp(xdt)(4)), const("b", rng.integers(-3000, 3000, m).astype(np.int32))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"], ["y"],
                            group=group, **attrs)
    ref = helper.make_graph([helper.make_node("Conv", ["xf", "wf"], ["yf"], group=group, **attrs)], "shape",
                            [helper.make_tensor_value_info("xf", TensorProto.FLOAT, list(x_shape)),
                             helper.make_tensor_value_info("wf", TensorProto.FLOAT, list(w_shape))],
                            [helper.make_tensor_value_info("yf", TensorProto.FLOAT, None)])
    yshape = list(onnx.shape_inference.infer_shapes(helper.make_model(ref)).graph.output[0].type.tensor_type.shape.dim)
    save(out, name, [node], [helper.make_tensor_value_info("x", tt(xdt), list(x_shape))],
         [helper.make_tensor_value_info("y", tt(xdt), [d.dim_value for d in yshape])], inits, {"x": x})


def main(argv=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(root, "tests", "fixtures", "quant"))
    args = ap.parse_args(argv)
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    rng = np.random.default_rng(4848)
    qgemm(args.out, rng, "qgemm_int8_transb_per_col", np.int8, 3, 40, 12, True, True)
    qgemm(args.out, rng, "qgemm_uint8_per_tensor", np.uint8, 2, 33, 7, False, False)
    qgemm(args.out, rng, "qgemm_int8_float_out", np.int8, 2, 16, 5, True, True, y_float=True)
    qgemm(args.out, rng, "qgemm_uint8_alpha", np.uint8, 4, 9, 6, True, False, alpha=0.75, bias=False)
    qgap(args.out, rng, "qgap_int8", np.int8, (2, 5, 6, 7), 0.03, 0.02)
    qgap(args.out, rng, "qgap_uint8", np.uint8, (1, 9, 4, 4), 0.1, 0.05)
    qsoftmax(args.out, rng, "qsoftmax_int8", np.int8, (3, 10), 0.08, 13)
    qsoftmax(args.out, rng, "qsoftmax_uint8", np.uint8, (2, 4, 17), 0.05, 13)
    qsoftmax(args.out, rng, "qsoftmax_int8_wide", np.int8, (2, 300), 0.5, 13)
    qbinary(args.out, rng, "qadd_int8", "QLinearAdd", np.int8, (4, 3, 400), (4, 3, 400))
    qbinary(args.out, rng, "qadd_uint8_broadcast", "QLinearAdd", np.uint8, (1, 4, 5, 6), (1, 4, 1, 1))
    qbinary(args.out, rng, "qmul_int8", "QLinearMul", np.int8, (30, 100), (30, 100))
    qbinary(args.out, rng, "qmul_int8_broadcast", "QLinearMul", np.int8, (1, 8, 3, 3), (1, 8, 1, 1))
    qbinary(args.out, rng, "qmul_uint8", "QLinearMul", np.uint8, (64,), (64,))
    qconv(args.out, rng, "qconv_int8_stride_pad", np.int8, (2, 3, 11, 9), (8, 3, 3, 3), strides=[2, 2],
          pads=[1, 0, 2, 1])
    qconv(args.out, rng, "qconv_uint8_dilated", np.uint8, (1, 4, 12, 40), (6, 4, 3, 2), dilations=[2, 3],
          pads=[2, 2, 2, 2])
    qconv(args.out, rng, "qconv_int8_depthwise", np.int8, (1, 8, 7, 7), (8, 1, 3, 3), group=8, pads=[1, 1, 1, 1])
    qconv(args.out, rng, "qconv_int8_1d", np.int8, (1, 5, 70), (4, 5, 5), strides=[3], pads=[2, 2])
    # In-channel windows of a multiple of 4 bytes: the kernels' packed path
    # (gathered windows, 4-byte dot products); columns not a multiple of 4,
    # an odd channel count per group.
    qconv(args.out, rng, "qconv_int8_packed", np.int8, (2, 8, 9, 11), (11, 8, 3, 3), strides=[1, 2],
          pads=[1, 1, 1, 1])
    qconv(args.out, rng, "qconv_int8_packed_xzp0", np.int8, (1, 4, 6, 7), (5, 4, 1, 1), xzp=0)
    qconv(args.out, rng, "qconv_uint8_packed_groups", np.uint8, (1, 8, 10, 9), (6, 4, 1, 3), group=2,
          pads=[0, 1, 0, 1], dilations=[1, 2])
    qconv(args.out, rng, "qconv_uint8_uint8w_packed", np.uint8, (1, 4, 8, 8), (7, 4, 2, 2), wdt=np.uint8,
          wzp=-5, pads=[1, 0, 0, 1])
    # Appended, so that the cases above keep their random draws.
    qlookup(args.out, rng, "qsigmoid_int8", "QLinearSigmoid", np.int8, (3, 200), 0.05, 1.0 / 256)
    qlookup(args.out, rng, "qsigmoid_uint8", "QLinearSigmoid", np.uint8, (2, 4, 40), 0.11, 0.0041)
    qlookup(args.out, rng, "qleakyrelu_int8", "QLinearLeakyRelu", np.int8, (2, 150), 0.03, 0.02, alpha=0.13)
    qlookup(args.out, rng, "qleakyrelu_uint8_default_alpha", "QLinearLeakyRelu", np.uint8, (300,), 0.07, 0.05)
    qconv(args.out, rng, "qconv_int8_depthwise_multiplier", np.int8, (1, 4, 7, 6), (12, 1, 3, 3), group=4,
          pads=[1, 1, 1, 1])
    qpad(args.out, rng, "qpad_int8_constant", np.int8, (1, 3, 4, 5), [0, 0, 1, 2, 0, 0, 2, 1], "constant", -3)
    qpad(args.out, rng, "qpad_uint8_reflect_crop", np.uint8, (2, 6, 7), [0, 2, -1, 0, 1, 3], "reflect")
    print(f"{args.out}: {len(os.listdir(args.out))} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
