"""Recompute a model folder's outputs.npz from its committed files.

The recipe is the zoo's (tools/zoo/train.py `replay`, which agrees with
onnxruntime.training.api to the bit on every zoo model): the committed
`network.onnx` on a plain onnxruntime InferenceSession, one thread, fed
fresh copies, with the gradients (and BatchNormInternal's running
statistics) exposed as extra outputs; accumulation and the running-statistics
write-back follow models/README.md ("Training-step semantics"). The optimizer
step runs the committed `optimizer.onnx` when it is per-parameter `SGD` nodes
(rewritten to Sub/Mul, as the zoo checks it); for onnxruntime's
`SGDOptimizerV2` (which updates its sequence inputs in place, so an
InferenceSession cannot return the result) it is `w - lr * g` in float32,
the kernel's formula. A quantized graph (QuantizeLinear, QLinearConv, ...)
runs as the integer operators it deploys as: its QDQ patterns
(DequantizeLinear -> Conv -> QuantizeLinear, ...) fused into QLinearConv and
the like (tools/zoo/qdq.py, deploygen's rules written independently), then
onnxruntime with graph optimizations disabled computes the fused graph.

Folder layouts: named, positional (`arr_NNNN`) and ordered (`input_<k>`)
`inputs.npz`, with `mb<i>_` keys for further mini-batches and the `meta_*`
schedule keys. The keys of the result follow the folder's convention.
"""

import copy
import io
import os
from collections import OrderedDict

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import compat, qdq
from .train import GRAD_BUF, accumulators, bn_running_stats, sgd_as_onnx

import onnxruntime  # noqa: E402  (imported by the caller's check first)


class RefError(Exception):
    pass


# Operators of quantized graphs (quantize_static's QDQ and QOperator forms).
QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
             "MatMulInteger", "ConvInteger", "QGemm", "QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool",
             "QLinearAveragePool", "QLinearConcat", "QLinearSoftmax", "QLinearSigmoid", "QLinearLeakyRelu"}


def is_quantized(model):
    return any(n.op_type in QUANT_OPS for n in model.graph.node)


def _session(model):
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    if is_quantized(model):
        # the integer operators the QDQ graph deploys as, computed as written
        # (onnxruntime's own fusions depend on the platform)
        model, _ = qdq.fuse(model)
        so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _load_npz(path):
    with open(path, "rb") as f:
        data = f.read()
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return OrderedDict((k, z[k]) for k in z.files)


def _shapes(graph):
    return {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in graph.input}


def flavor(model):
    ops = {n.op_type for n in model.graph.node}
    if "InPlaceAccumulatorV2" in ops:
        return "artifacts"
    if "SGD" in ops:
        return "single_graph"
    return "inference"


def layout_of(keys, slots):
    """named | positional | ordered, from the keys of inputs.npz and the names of the slots."""
    base = [k for k in keys if not k.startswith("meta_") and not k.startswith("mb")]
    if all(k in slots for k in base):
        return "named"
    if all(k.startswith("arr_") for k in base):
        return "positional"
    if all(k.startswith("input_") for k in base):
        return "ordered"
    raise RefError(f"inputs.npz keys fit no layout: {base[:6]}")


def slot_key(layout, i, name):
    return {"positional": f"arr_{i:04d}", "ordered": f"input_{i}", "named": name}[layout]


def _meta(ins, key, default):
    return int(ins[key]) if key in ins else default


def _declared(graph):
    """name -> (numpy dtype, shape or None when not fully static) of every graph input."""
    out = {}
    for i in graph.input:
        t = i.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        shape = dims if t.HasField("shape") and None not in dims else None
        out[i.name] = (helper.tensor_dtype_to_np_dtype(t.elem_type) if t.elem_type else None, shape)
    return out


def _bind(ins, slots, graph=None):
    """Map slot name -> (base array, {mb index: array}) and the layout. With `graph`,
    every array is checked against the dtype and static shape of its graph input."""
    layout = layout_of(list(ins), slots)
    decl = _declared(graph) if graph is not None else {}
    out = OrderedDict()
    for i, name in enumerate(slots):
        k = slot_key(layout, i, name)
        if k not in ins:
            raise RefError(f"inputs.npz has no `{k}` for graph input `{name}` ({layout} layout)")
        per_mb = {}
        mb = 1
        while f"mb{mb}_{k}" in ins:
            per_mb[mb] = ins[f"mb{mb}_{k}"]
            mb += 1
        dtype, shape = decl.get(name, (None, None))
        for key, a in [(k, ins[k])] + [(f"mb{j}_{k}", v) for j, v in per_mb.items()]:
            if (dtype is not None and a.dtype != dtype) or (shape is not None and list(a.shape) != shape):
                raise RefError(f"`{key}` lands on graph input {i} `{name}` {np.dtype(dtype).name}{shape} "
                               f"but holds {a.dtype.name}{list(a.shape)}")
        out[name] = (ins[k], per_mb)
    return out, layout


def _schedule(ins, bound):
    data = [n for n, (_, per) in bound.items() if per]
    stored = 1 + max((max(per) for _, per in bound.values() if per), default=0)
    data_size = _meta(ins, "meta_data_size", stored)
    if data_size != stored:
        raise RefError(f"meta_data_size = {data_size} but inputs.npz stores {stored} mini-batches")
    n_batches = _meta(ins, "meta_n_batches", data_size)
    n_accum = _meta(ins, "meta_n_accum", 1)
    if n_batches % n_accum:
        raise RefError(f"meta_n_batches = {n_batches} is not a multiple of meta_n_accum = {n_accum}")
    return data, data_size, n_batches, n_accum


def _feed(bound, name, mb, data_size):
    base, per = bound[name]
    i = mb % data_size
    return (base if i == 0 else per[i]).copy()


# ---------------------------------------------------------------------------

def inference(folder, model, ins):
    init = {i.name for i in model.graph.initializer}
    slots = [i.name for i in model.graph.input if i.name not in init]
    bound, layout = _bind(ins, slots, model.graph)
    run, changes = compat.for_onnxruntime(model)
    names = [o.name for o in model.graph.output]
    values = _session(run).run(None, {n: bound[n][0] for n in slots})
    out = OrderedDict()
    for i, (n, v) in enumerate(zip(names, values)):
        out[f"output_{i}" if layout == "ordered" else n] = v
    return out, OrderedDict(kind="inference", layout=layout, rewrites=changes)


def artifacts(folder, model, ins):
    acc = accumulators(model)
    params = [p for p, _, _ in acc]
    bns = bn_running_stats(model)
    frozen = [n for rm, _, rv, _ in bns for n in (rm, rv)]
    slots = [i.name for i in model.graph.input if not i.name.endswith(GRAD_BUF)]
    bound, layout = _bind(ins, slots, model.graph)
    data, data_size, n_batches, n_accum = _schedule(ins, bound)
    if not data:
        # one stored mini-batch: the inputs that are neither parameters nor BatchNorm statistics
        data = [n for n in slots if n not in params and n not in frozen and n != "lazy_reset_grad"]
    if any(n in params for n in data):
        raise RefError(f"parameters with per-mini-batch keys: {[n for n in data if n in params]}")

    opt_path = os.path.join(folder, "optimizer.onnx")
    if not os.path.exists(opt_path):
        raise RefError("training artifacts without optimizer.onnx")
    opt = onnx.load(opt_path)
    opt_ops = {n.op_type for n in opt.graph.node}
    if opt_ops == {"SGDOptimizerV2"}:
        if "meta_learning_rate" not in ins:
            raise RefError("SGDOptimizerV2 takes the learning rate as an input: inputs.npz needs meta_learning_rate")
        lr = np.float32(ins["meta_learning_rate"])

        def step(values, buffers):
            for p in params:
                values[p] = values[p] - lr * buffers[p]
    elif opt_ops == {"SGD"}:
        opt_sess = _session(sgd_as_onnx(opt))
        opt_in = [i.name for i in opt.graph.input]
        opt_out = [o.name for o in opt.graph.output]

        def step(values, buffers):
            feeds = {}
            for n in opt_in:
                feeds[n] = buffers[n[: -len(GRAD_BUF)]] if n.endswith(GRAD_BUF) else values[n]
            for n, v in zip(opt_out, opt_sess.run(None, feeds)):
                assert n.endswith("_updated"), n
                values[n[: -len("_updated")]] = v
    else:
        raise RefError(f"optimizer.onnx: unknown optimizer ops {sorted(opt_ops)}")

    m = copy.deepcopy(model)
    for name in [g for _, g, _ in acc] + [o for _, rmo, _, rvo in bns for o in (rmo, rvo)]:
        m.graph.output.append(helper.make_empty_tensor_value_info(name))
    sess = _session(m)
    out_names = [o.name for o in m.graph.output]
    shapes = _shapes(model.graph)
    # parameters and everything else that is carried from pass to pass (frozen ones included)
    values = OrderedDict((n, bound[n][0].copy()) for n in slots if n not in data and n != "lazy_reset_grad")
    losses, buffers = [], {}
    for mb in range(n_batches):
        reset = mb % n_accum == 0
        feeds = {n: _feed(bound, n, mb, data_size) for n in data}
        feeds.update({k: v.copy() for k, v in values.items()})
        for _, _, buf in acc:
            feeds[buf] = np.zeros(shapes[buf], np.float32)
        feeds["lazy_reset_grad"] = np.array([reset])
        outs = dict(zip(out_names, sess.run(None, feeds)))
        losses.append(outs[out_names[0]])
        for p, grad, _ in acc:
            buffers[p] = outs[grad].copy() if reset else buffers[p] + outs[grad]
        for rm, rmo, rv, rvo in bns:
            values[rm], values[rv] = outs[rmo], outs[rvo]
        if mb % n_accum == n_accum - 1:
            step(values, buffers)
    out = OrderedDict(loss=np.array(losses, dtype=np.float32).reshape(n_batches))
    for n in slots:
        if n in values:
            out[f"{n}_updated"] = values[n]
    return out, OrderedDict(kind="training", flavor="artifacts", layout=layout, n_batches=n_batches,
                            n_accum=n_accum, data_size=data_size, optimizer=sorted(opt_ops))


def single_graph(folder, model, ins):
    init = {i.name for i in model.graph.initializer}
    slots = [i.name for i in model.graph.input if i.name not in init]
    bound, layout = _bind(ins, slots, model.graph)
    _, data_size, n_batches, n_accum = _schedule(ins, bound)
    if n_accum != 1:
        raise RefError("a single-graph training step updates on every pass: meta_n_accum must be 1")
    sgd = [n for n in model.graph.node if n.op_type == "SGD"]
    params = [n.input[0] for n in sgd]
    updated = {n.input[0]: n.output[0] for n in sgd}
    m = sgd_as_onnx(model)
    values = OrderedDict((i.name, numpy_helper.to_array(i)) for i in model.graph.initializer if i.name in updated)
    keep = [i for i in m.graph.initializer if i.name not in values]
    for i in m.graph.initializer:
        if i.name in values:
            m.graph.input.append(helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)))
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    sess = _session(m)
    out_names = [o.name for o in m.graph.output]
    losses = []
    for mb in range(n_batches):
        feeds = {n: _feed(bound, n, mb, data_size) for n in slots}
        feeds.update({k: v.copy() for k, v in values.items()})
        outs = dict(zip(out_names, sess.run(None, feeds)))
        losses.append(outs[out_names[0]])
        values = OrderedDict((p, outs[updated[p]]) for p in values)
    loss = np.array(losses, dtype=np.float32).reshape(n_batches)
    out = OrderedDict()
    if layout == "ordered":
        out["output_0"] = loss
        by_out = {updated[p]: v for p, v in values.items()}
        for k, o in enumerate(model.graph.output[1:], start=1):
            out[f"output_{k}"] = by_out[o.name]
    else:
        out["loss"] = loss
        for p, v in values.items():
            out[updated[p]] = v
    return out, OrderedDict(kind="training", flavor="single_graph", layout=layout, n_batches=n_batches,
                            data_size=data_size, params=params)


def compute(folder):
    """(outputs mapping, facts) for a model folder."""
    model = onnx.load(os.path.join(folder, "network.onnx"))
    ins = _load_npz(os.path.join(folder, "inputs.npz"))
    fl = flavor(model)
    if fl == "artifacts":
        return artifacts(folder, model, ins)
    if fl == "single_graph":
        return single_graph(folder, model, ins)
    return inference(folder, model, ins)


def _first_pass(folder, model, ins):
    """(model for onnxruntime, feeds) of the first pass: mini-batch 0 and the
    initial parameter values, as the deployed harness runs it first."""
    fl = flavor(model)
    if fl == "inference":
        init = {i.name for i in model.graph.initializer}
        slots = [i.name for i in model.graph.input if i.name not in init]
        bound, _ = _bind(ins, slots, model.graph)
        return compat.for_onnxruntime(model)[0], {n: bound[n][0] for n in slots}
    if fl == "single_graph":
        init = {i.name for i in model.graph.initializer}
        slots = [i.name for i in model.graph.input if i.name not in init]
        bound, _ = _bind(ins, slots, model.graph)
        return sgd_as_onnx(model), {n: bound[n][0] for n in slots}
    acc = accumulators(model)
    slots = [i.name for i in model.graph.input if not i.name.endswith(GRAD_BUF)]
    bound, _ = _bind(ins, slots, model.graph)
    shapes = _shapes(model.graph)
    feeds = {n: bound[n][0].copy() for n in slots if n != "lazy_reset_grad"}
    for _, _, buf in acc:
        feeds[buf] = np.zeros(shapes[buf], np.float32)
    feeds["lazy_reset_grad"] = np.array([True])
    return model, feeds


def intermediates(folder):
    """Every float32 value the main graph computes in its first pass (node
    outputs by tensor name), for `deploygen test --bisect`."""
    model = onnx.load(os.path.join(folder, "network.onnx"))
    ins = _load_npz(os.path.join(folder, "inputs.npz"))
    run, feeds = _first_pass(folder, model, ins)
    m = copy.deepcopy(run)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
                have.add(o)
    names = [o.name for o in m.graph.output]
    values = _session(m).run(None, feeds)
    return OrderedDict((n, v) for n, v in zip(names, values)
                       if isinstance(v, np.ndarray) and v.dtype == np.float32)


def compare(ref, new, tol=1e-6):
    """Problems between two outputs mappings (empty when they agree)."""
    bad = []
    if list(ref) != list(new):
        bad.append(f"keys differ: {list(ref)} vs {list(new)}")
    for k in ref:
        if k not in new:
            continue
        a, b = np.asarray(ref[k]), np.asarray(new[k])
        if a.shape != b.shape or a.dtype != b.dtype:
            bad.append(f"{k}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}")
            continue
        d = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
        if not d <= tol:
            bad.append(f"{k}: max |diff| {d:.3e} > {tol:g}")
    return bad
