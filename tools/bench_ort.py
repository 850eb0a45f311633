#!/usr/bin/env python3
"""onnxruntime timings for the kernel benchmark (runtime/bench/kernel_bench.c).

Times every benchmark case as a single-node graph on onnxruntime 1.19.2
(CPU, one thread: intra_op_num_threads = inter_op_num_threads = 1,
sequential execution, all graph optimizations) and writes the medians to
runtime/bench/ort_times.json, which the C benchmark reads to print its
ratio column. The case names and shapes here must match CASES in
kernel_bench.c (the benchmark checks the shape strings).

Each case is run through IOBinding with pre-bound inputs and outputs; the
reported time is the median of `--reps` timed runs (after warm-up; the
smallest such median over `--rounds` fresh sessions) minus
the median of the same call on a one-element Identity graph, i.e. the
Python / session-dispatch cost is not charged to onnxruntime.

Usage: python tools/bench_ort.py [--reps 300] [--rounds 3] [--out runtime/bench/ort_times.json]
Needs: tools/requirements.txt.
"""
import argparse
import json
import os
import platform
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

F = TensorProto.FLOAT
RNG = np.random.default_rng(7)


def rnd(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def model(op, inputs, outputs, attrs=None, domain=""):
    """inputs: [(name, array)]; outputs: [(name, shape[, elem type])], None
    for an omitted optional output."""
    names = [o[0] if o else "" for o in outputs]
    node = helper.make_node(op, [n for n, _ in inputs], names, domain=domain, **(attrs or {}))
    g = helper.make_graph(
        [node], "bench",
        [helper.make_tensor_value_info(n, F, list(a.shape)) for n, a in inputs],
        [helper.make_tensor_value_info(o[0], o[2] if len(o) > 2 else F, list(o[1]))
         for o in outputs if o])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 9
    return m.SerializeToString()


def session(blob):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])


def time_run(blob, inputs, reps, rounds=1):
    """Median of `reps` timed runs; with rounds > 1 the smallest of that
    many medians (a busy machine only ever makes a round slower)."""
    return min(time_round(blob, inputs, reps) for _ in range(rounds))


def time_round(blob, inputs, reps):
    s = session(blob)
    b = s.io_binding()
    for n, a in inputs:
        b.bind_cpu_input(n, a)
    for o in s.get_outputs():
        b.bind_output(o.name)
    for _ in range(max(5, reps // 10)):
        s.run_with_iobinding(b)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        s.run_with_iobinding(b)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e6


# ------------------------------------------------------------------ cases
# name -> (shape string printed by kernel_bench.c, function returning
# (model blob, inputs))
CASES = {}


def case(name, shape):
    def deco(fn):
        CASES[name] = (shape, fn)
        return fn
    return deco


def gemm(m, n, k, tb, bias):
    a = rnd(m, k)
    b = rnd(n, k) if tb else rnd(k, n)
    ins = [("A", a), ("B", b)] + ([("C", rnd(n))] if bias else [])
    return model("Gemm", ins, [("Y", (m, n))], {"transB": tb}), ins


@case("gemm_nt", "M32 N128 K256 transB bias")
def _():
    return gemm(32, 128, 256, 1, True)


@case("gemm_nn", "M32 N128 K256")
def _():
    return gemm(32, 128, 256, 0, False)


@case("matmul", "[8,64,32]x[8,32,64]")
def _():
    ins = [("A", rnd(8, 64, 32)), ("B", rnd(8, 32, 64))]
    return model("MatMul", ins, [("Y", (8, 64, 64))]), ins


@case("fused_matmul_ta", "[64,128]^T x [64,128]")
def _():
    ins = [("A", rnd(64, 128)), ("B", rnd(64, 128))]
    return model("FusedMatMul", ins, [("Y", (128, 128))], {"transA": 1},
                 domain="com.microsoft"), ins


@case("fused_matmul_tb", "[64,128] x [128,128]^T")
def _():
    ins = [("A", rnd(64, 128)), ("B", rnd(128, 128))]
    return model("FusedMatMul", ins, [("Y", (64, 128))], {"transB": 1},
                 domain="com.microsoft"), ins


CONVS = {
    # name: (x shape, w shape, stride, pad, group)
    "conv3x3": ((1, 16, 32, 32), (16, 16, 3, 3), 1, 1, 1),
    "conv3x3_s2": ((1, 16, 32, 32), (32, 16, 3, 3), 2, 1, 1),
    "conv_pw": ((1, 32, 16, 16), (64, 32, 1, 1), 1, 0, 1),
    "conv_dw": ((1, 32, 32, 32), (32, 1, 3, 3), 1, 1, 32),
}


def conv_out(xs, ws, s, p):
    return (xs[0], ws[0], (xs[2] + 2 * p - ws[2]) // s + 1, (xs[3] + 2 * p - ws[3]) // s + 1)


def conv_shape(name):
    xs, ws, s, p, g = CONVS[name]
    return "x%s w%s s%d p%d g%d" % ("[%d,%d,%d,%d]" % xs, "[%d,%d,%d,%d]" % ws, s, p, g)


def conv_attrs(name):
    xs, ws, s, p, g = CONVS[name]
    return {"strides": [s, s], "pads": [p] * 4, "group": g, "kernel_shape": list(ws[2:])}


def conv_fwd(name):
    xs, ws, s, p, g = CONVS[name]
    ins = [("X", rnd(*xs)), ("W", rnd(*ws)), ("B", rnd(ws[0]))]
    return model("Conv", ins, [("Y", conv_out(xs, ws, s, p))], conv_attrs(name)), ins


def conv_grad(name, which):
    xs, ws, s, p, g = CONVS[name]
    ys = conv_out(xs, ws, s, p)
    ins = [("dY", rnd(*ys)), ("X", rnd(*xs)), ("W", rnd(*ws))]
    outs = [("dX", xs), ("dW", ws), ("dB", (ws[0],))]
    outs = [o if i == which else None for i, o in enumerate(outs)]
    while outs[-1] is None:
        outs.pop()
    return model("ConvGrad", ins, outs, conv_attrs(name), domain="com.microsoft"), ins


for _n in CONVS:
    CASES[_n] = (conv_shape(_n), (lambda n: lambda: conv_fwd(n))(_n))
for _n in ("conv3x3", "conv_pw", "conv_dw"):
    for _i, _w in enumerate(("dx", "dw", "db")):
        CASES["convgrad_%s_%s" % (_w, _n.replace("conv", "").lstrip("_") or "3x3")] = (
            conv_shape(_n), (lambda n, i: lambda: conv_grad(n, i))(_n, _i))


def maxpool(xs, k, s, p, idx):
    ys = (xs[0], xs[1], (xs[2] + 2 * p - k) // s + 1, (xs[3] + 2 * p - k) // s + 1)
    ins = [("X", rnd(*xs))]
    outs = [("Y", ys)] + ([("I", ys, TensorProto.INT64)] if idx else [])
    return model("MaxPool", ins, outs, {"kernel_shape": [k, k], "strides": [s, s],
                                         "pads": [p] * 4}), ins


@case("maxpool3x3_s2", "x[1,16,32,32] k3 s2 p1")
def _():
    return maxpool((1, 16, 32, 32), 3, 2, 1, False)


@case("maxpool3x3_s2_idx", "x[1,16,32,32] k3 s2 p1 +Indices")
def _():
    return maxpool((1, 16, 32, 32), 3, 2, 1, True)


@case("maxpool2x2", "x[1,32,32,32] k2 s2 p0")
def _():
    return maxpool((1, 32, 32, 32), 2, 2, 0, False)


@case("softmax", "[64,128] axis -1")
def _():
    ins = [("X", rnd(64, 128))]
    return model("Softmax", ins, [("Y", (64, 128))], {"axis": -1}), ins


@case("layernorm", "[64,128] axis -1")
def _():
    ins = [("X", rnd(64, 128)), ("S", rnd(128)), ("B", rnd(128))]
    return model("LayerNormalization", ins, [("Y", (64, 128))], {"axis": -1}), ins


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(here, "..", "runtime", "bench", "ort_times.json"))
    args = ap.parse_args()

    ident_in = [("X", rnd(1))]
    overhead = time_run(model("Identity", ident_in, [("Y", (1,))]), ident_in, args.reps * 4,
                        args.rounds)
    times = {}
    for name, (shape, fn) in CASES.items():
        blob, ins = fn()
        raw = time_run(blob, ins, args.reps, args.rounds)
        times[name] = {"shape": shape, "us": round(max(raw - overhead, 0.01), 3),
                       "raw_us": round(raw, 3)}
        print("%-22s %-36s %10.2f us (raw %.2f)" % (name, shape, times[name]["us"], raw))
    out = {
        "onnxruntime": ort.__version__,
        "threads": 1,
        "unit": "us, median, minus the per-call overhead of a 1-element Identity graph",
        "call_overhead_us": round(overhead, 3),
        "machine": platform.processor() or platform.machine(),
        "cases": times,
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("overhead %.2f us; wrote %s" % (overhead, os.path.relpath(args.out)))


if __name__ == "__main__":
    main()
