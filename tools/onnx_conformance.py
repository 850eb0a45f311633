#!/usr/bin/env python3
"""Turn the onnx wheel's backend test cases into deploygen model folders.

    python tools/onnx_conformance.py [--release 1.17|1.23] [--out DIR] [--readme docs/operators.md]

Reads the cases of a pinned `onnx` release (RELEASES below; the python that
runs this script must have that onnx installed: onnx==1.17.0 is the one of
tools/requirements.txt, onnx==1.23.2 lives in a venv of its own, see
.ci/run): onnx/backend/test/data/{node,simple,pytorch-converted,
pytorch-operator}/<case>/ with model.onnx and
test_data_set_0/{input,output}_<k>.pb. The 1.23 wheel ships no node cases:
they are generated first into DIR/../data/node by the writer of
`python -m onnx.backend.test.cmd_tools generate-data` fed with the wheel's
node case collection (numpy's generator seeded with 0 first, so the inputs
are the same on every run); the other suites are the wheel's. A case is taken
when every node's operator is one deploygen lists (the "Supported operators"
list of docs/operators.md, the same list as `deploygen --help`), no node holds a
subgraph, and every graph input and output is a tensor of f32, i64, i32, int8, uint8 or bool.
Each taken case becomes DIR/<name>/ with network.onnx, inputs.npz and
outputs.npz keyed by the graph's input and output names, as `deploygen test`
reads a folder. References are the wheel's own expected outputs (no
onnxruntime involved), except for the cases whose expected outputs a later
onnx release corrected (SUPERSEDED below: their outputs are computed here
by the current reference's rule, checked against onnx 1.23's). inputs.npz carries `meta_rtol` 1e-3, ONNX's own
backend check's relative tolerance, and `meta_tolerance` (the absolute
one) 1e-3 times the largest reference magnitude, at least 1e-3 and at most 1
(the most a model's meta_tolerance may say; rtol covers the large values).

DIR (default target/onnx-conformance/cases for 1.17,
target/onnx-conformance-1.23/cases for 1.23) is rewritten whole; a file
DIR/../cases.txt lists the cases taken, one line each (the name, then the
operators its graph uses), and DIR/../skipped.txt why the others were not. Exit 2 when the wheel is not the pinned version.
"""

import argparse
import os
import re
import shutil
import sys

RELEASES = {"1.17": "1.17.0", "1.23": "1.23.2"}
SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator"]


def average_pool_current(np, node, xs):
    """AveragePool as the ONNX reference computes it since onnx 1.18: with
    count_include_pad a window is divided by its taps inside the padded
    input, so a ceil_mode window's taps beyond the end pad do not count
    (onnx 1.17 divided by the whole kernel)."""
    import itertools
    x = xs[0]
    at = {a.name: (list(a.ints) if a.ints else a.i) for a in node.attribute}
    k = at["kernel_shape"]
    sp = len(k)
    s, d = at.get("strides", [1] * sp), at.get("dilations", [1] * sp)
    pads, ceil, cip = at.get("pads", [0] * 2 * sp), at.get("ceil_mode", 0), at.get("count_include_pad", 0)
    outs = []
    for a in range(sp):
        span = x.shape[2 + a] + pads[a] + pads[sp + a] - (d[a] * (k[a] - 1) + 1)
        o = (-(-span // s[a]) if ceil else span // s[a]) + 1
        if ceil and (o - 1) * s[a] >= x.shape[2 + a] + pads[a]:
            o -= 1
        outs.append(o)
    y = np.zeros(x.shape[:2] + tuple(outs))
    for o in np.ndindex(*outs):
        inside, padded = [], 1
        for a in range(sp):
            taps = [o[a] * s[a] - pads[a] + j * d[a] for j in range(k[a])]
            inside.append([t for t in taps if 0 <= t < x.shape[2 + a]])
            padded *= sum(1 for t in taps if t < x.shape[2 + a] + pads[sp + a])
        acc = sum(x[(slice(None), slice(None)) + t].astype(np.float64) for t in itertools.product(*inside))
        y[(slice(None), slice(None)) + o] = acc / (padded if cip else np.prod([len(i) for i in inside]))
    return y.astype(np.float32)


def qlinear_matmul_current(np, node, xs):
    """QLinearMatMul as the spec and onnx >= 1.18's reference compute it: the
    int32 product requantized and saturated to the output type (onnx 1.17's
    int8 cases wrapped instead: -236 became 20)."""
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = xs
    acc = np.matmul(a.astype(np.int32) - a_zp.astype(np.int32), b.astype(np.int32) - b_zp.astype(np.int32))
    info = np.iinfo(y_zp.dtype)
    y = np.rint(acc.astype(np.float32) * (a_s * b_s / y_s).astype(np.float32)).astype(np.int32) + y_zp
    return np.clip(y, info.min, info.max).astype(y_zp.dtype)


# Cases of onnx 1.17 whose expected outputs later releases corrected: name -> the current rule.
SUPERSEDED = {
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True": average_pool_current,
    "test_qlinearmatmul_2D_int8_float32": qlinear_matmul_current,
    "test_qlinearmatmul_3D_int8_float32": qlinear_matmul_current,
}


def listed_operators(readme):
    """The operator names of docs/operators.md's "Supported operators" section."""
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Supported operators\n(.*?)^## ", text, re.S | re.M)
    if not m:
        sys.exit(f"onnx_conformance.py: {readme} has no '## Supported operators' section")
    para = m.group(1).split("\n\n")[1]
    return set(re.findall(r"`([A-Za-z0-9_]+)`", para))


def main(argv=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", choices=sorted(RELEASES), default="1.17")
    ap.add_argument("--out")
    ap.add_argument("--readme", default=os.path.join(root, "docs", "operators.md"))
    args = ap.parse_args(argv)
    pinned = RELEASES[args.release]
    if args.out is None:
        folder = "onnx-conformance" if args.release == "1.17" else f"onnx-conformance-{args.release}"
        args.out = os.path.join(root, "target", folder, "cases")
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        sys.stderr.write(f"onnx_conformance.py: {e}; pip install onnx=={pinned} numpy\n")
        return 2
    if onnx.__version__ != pinned:
        sys.stderr.write(f"onnx_conformance.py: onnx {onnx.__version__} is installed; the cases are those of "
                         f"onnx=={pinned}\n")
        return 2

    ops = listed_operators(args.readme)
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    base = os.path.dirname(os.path.abspath(args.out))
    suite_dirs = {s: os.path.join(data, s) for s in SUITES}
    if not os.path.isdir(suite_dirs["node"]):
        suite_dirs["node"] = generate_node_cases(os.path.join(base, "data"), np)
    kinds = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT8: np.int8,
             onnx.TensorProto.UINT8: np.uint8,
             onnx.TensorProto.INT32: np.int32, onnx.TensorProto.BOOL: np.bool_}

    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    taken, skipped = [], []
    for suite in SUITES:
        sdir = suite_dirs[suite]
        for case in sorted(os.listdir(sdir)):
            cdir = os.path.join(sdir, case)
            name = case if suite == "node" else f"{suite}_{case}"
            why = convert(cdir, os.path.join(args.out, name), ops, kinds, np, onnx, numpy_helper,
                          SUPERSEDED if args.release == "1.17" else {})
            if isinstance(why, str):
                skipped.append(f"{name}: {why}")
            else:
                taken.append(f"{name} {' '.join(why)}")
    with open(os.path.join(base, "cases.txt"), "w") as f:
        f.write("".join(f"{t}\n" for t in taken))
    with open(os.path.join(base, "skipped.txt"), "w") as f:
        f.write("".join(f"{s}\n" for s in skipped))
    print(f"{args.out}: {len(taken)} cases (onnx {onnx.__version__}; {len(skipped)} not taken, "
          f"see {os.path.join(base, 'skipped.txt')})")
    return 0


def generate_node_cases(data, np):
    """Write the wheel's node cases as `cmd_tools generate-data` writes cases
    (that command's writer, given the node cases too: in onnx 1.23 it writes
    only the model cases) into data/node; return that folder."""
    import argparse as ap
    import onnx.backend.test.case.model as model_test
    import onnx.backend.test.case.node as node_test
    from onnx.backend.test import cmd_tools

    np.random.seed(0)
    cases = [c for c in node_test.collect_testcases() if c.kind == "node"]
    if os.path.isdir(data):
        shutil.rmtree(data)
    collect = model_test.collect_testcases
    model_test.collect_testcases = lambda: cases
    try:
        cmd_tools.generate_data(ap.Namespace(output=data))
    finally:
        model_test.collect_testcases = collect
    return os.path.join(data, "node")


def convert(cdir, out, ops, kinds, np, onnx, numpy_helper, superseded):
    """Write one case's folder and return its operators; the reason it is not taken otherwise."""
    mpath = os.path.join(cdir, "model.onnx")
    tdir = os.path.join(cdir, "test_data_set_0")
    if not os.path.isfile(mpath) or not os.path.isdir(tdir):
        return "no model.onnx with test_data_set_0"
    model = onnx.load(mpath)
    g = model.graph
    for n in g.node:
        if n.op_type not in ops:
            return f"operator {n.op_type} is not listed"
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
            return f"node {n.op_type} holds a subgraph"
    inits = {i.name for i in g.initializer}
    inputs = [i for i in g.input if i.name not in inits]
    for vi in list(inputs) + list(g.output):
        t = vi.type
        if t.WhichOneof("value") != "tensor_type":
            return f"'{vi.name}' is not a tensor"
        if t.tensor_type.elem_type not in kinds:
            return f"'{vi.name}' has element type {onnx.TensorProto.DataType.Name(t.tensor_type.elem_type)}"

    def load(prefix, vis):
        arrays = {}
        for k, vi in enumerate(vis):
            path = os.path.join(tdir, f"{prefix}_{k}.pb")
            if not os.path.isfile(path):
                return None
            tp = onnx.TensorProto()
            with open(path, "rb") as f:
                tp.ParseFromString(f.read())
            a = numpy_helper.to_array(tp)
            arrays[vi.name] = a.astype(kinds[vi.type.tensor_type.elem_type], copy=False)
        return arrays

    ins = load("input", inputs)
    outs = load("output", g.output)
    if ins is None or outs is None:
        return "test data does not hold every input and output"
    current = superseded.get(os.path.basename(out))
    if current is not None:
        outs = {g.output[0].name: current(np, g.node[0], [ins[i.name] for i in inputs])}
    biggest = max([float(np.nanmax(np.abs(np.where(np.isinf(a), 0, a)))) for a in outs.values()
                   if a.dtype == np.float32 and a.size] + [1.0])
    ins["meta_tolerance"] = np.array(min(1e-3 * biggest, 1.0), dtype=np.float32)
    ins["meta_rtol"] = np.array(1e-3, dtype=np.float32)
    os.makedirs(out)
    shutil.copyfile(mpath, os.path.join(out, "network.onnx"))
    np.savez(os.path.join(out, "inputs.npz"), **ins)
    np.savez(os.path.join(out, "outputs.npz"), **outs)
    return sorted({n.op_type for n in g.node})


if __name__ == "__main__":
    sys.exit(main())
