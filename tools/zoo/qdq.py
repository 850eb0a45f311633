"""A QDQ graph as the integer operators it deploys as.

DequantizeLinear -> op -> QuantizeLinear, where every input of the op comes
from a DequantizeLinear and one QuantizeLinear alone reads its output,
becomes the op's integer form (onnxruntime's QLinearConv, QLinearMatMul and
com.microsoft QGemm, QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
QLinearSoftmax); a data mover (MaxPool, Reshape, ...) whose input and output
share one scale and zero point runs on the 8-bit values. The rules are
deploygen's (docs/operators.md, "Quantized models"), written here without
its code, so that onnxruntime computes the reference of the fused graph.
(onnxruntime's own QDQ fusions differ by platform: on x86 it leaves int8 Add
and Mul, and nodes whose DequantizeLinear is shared, in float.)
"""

import numpy as np
from onnx import helper, numpy_helper

MS = "com.microsoft"
V, S, Z = "value", "scale", "zero_point"
PRODUCT = [(V, 0), (S, 0), (Z, 0), (V, 1), (S, 1), (Z, 1)]
OUT = [("out_scale", None), ("out_zero_point", None)]
UNARY = [(V, 0), (S, 0), (Z, 0)] + OUT

# op: (integer op, domain, inputs, optional node inputs)
FUSE = {
    "Conv": ("QLinearConv", "", PRODUCT + OUT + [(V, 2)], {2}),
    "MatMul": ("QLinearMatMul", "", PRODUCT + OUT, set()),
    "Gemm": ("QGemm", MS, PRODUCT + [(V, 2)] + OUT, {2}),
    "Add": ("QLinearAdd", MS, PRODUCT + OUT, set()),
    "Mul": ("QLinearMul", MS, PRODUCT + OUT, set()),
    "GlobalAveragePool": ("QLinearGlobalAveragePool", MS, UNARY, set()),
    "Softmax": ("QLinearSoftmax", MS, UNARY, set()),
}
PASS = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"}


def fuse(model):
    """A copy of `model` with its QDQ patterns fused; the count."""
    m = type(model)()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    readers = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 13)
    new_nodes, dropped, count = [], set(), 0
    for n in g.node:
        if id(n) in dropped:
            continue
        q = sole_quantizer(n, readers, outputs)
        made = None
        if q is not None and n.op_type in FUSE:
            made = fused(n, q, producer, inits, opset, g)
        elif q is not None and n.op_type in PASS:
            made = passed(n, q, producer, inits)
        if made is None:
            new_nodes.append(n)
            continue
        new_nodes.append(made)
        dropped.add(id(q))
        count += 1
    new_nodes = [n for n in new_nodes if id(n) not in dropped]
    read = {i for n in new_nodes for i in n.input} | outputs
    new_nodes = [n for n in new_nodes if n.op_type != "DequantizeLinear" or n.output[0] in read]
    del g.node[:]
    g.node.extend(new_nodes)
    if count and not any(o.domain == MS for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid(MS, 1))
    return m, count


def sole_quantizer(n, readers, outputs):
    if len(n.output) != 1 or n.output[0] in outputs:
        return None
    r = readers.get(n.output[0], [])
    if len(r) == 1 and r[0].op_type == "QuantizeLinear" and r[0].input[0] == n.output[0]:
        return r[0]
    return None


def dequantizer(name, producer):
    p = producer.get(name)
    return p if p is not None and p.op_type == "DequantizeLinear" else None


def arg(node, i):
    return node.input[i] if len(node.input) > i else ""


def fused(n, q, producer, inits, opset, g):
    op, domain, layout, optional = FUSE[n.op_type]
    if n.op_type == "Gemm" and any(a.name == "beta" and a.f != 1.0 for a in n.attribute):
        return None
    dqs = {}
    for i, name in enumerate(n.input):
        dq = dequantizer(name, producer) if name else None
        if dq is None and not (name == "" and i in optional):
            return None
        dqs[i] = dq
    for i in optional:
        dqs.setdefault(i, None)
    if dqs.get(2) is not None and not bias_is_product(dqs, inits):
        return None
    ins = []
    for what, i in layout:
        if what == V:
            ins.append(dqs[i].input[0] if dqs.get(i) is not None else "")
        elif what == S:
            ins.append(dqs[i].input[1])
        elif what == Z:
            ins.append(arg(dqs[i], 2) or zero(g, dqs[i].input[0], inits))
        elif what == "out_scale":
            ins.append(q.input[1])
        else:
            ins.append(arg(q, 2) or zero(g, q.output[0], inits))
    while ins and ins[-1] == "":
        ins.pop()
    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
    if n.op_type == "Gemm":
        attrs.pop("beta", None)
    if n.op_type == "GlobalAveragePool":
        attrs = {"channels_last": 0}
    if n.op_type == "Softmax":
        attrs = {"axis": attrs.get("axis", 1 if opset < 13 else -1), "opset": opset}
    return helper.make_node(op, ins, [q.output[0]], name=n.name, domain=domain, **attrs)


def bias_is_product(dqs, inits):
    b, x, w = dqs[2], dqs[0], dqs[1]
    try:
        bs, xs, ws = (inits[d.input[1]].astype(np.float32).reshape(-1) for d in (b, x, w))
    except KeyError:
        return False
    bzp = inits.get(arg(b, 2)) if arg(b, 2) else np.zeros(1)
    if bzp is None or np.any(bzp != 0) or xs.size != 1 or inits.get(b.input[0]) is None:
        return False
    if inits[b.input[0]].dtype != np.int32:
        return False
    want = (xs[0] * np.broadcast_to(ws, bs.shape)).astype(np.float32)
    return bool(np.array_equal(want.view(np.uint32), bs.view(np.uint32)))


def passed(n, q, producer, inits):
    dq = dequantizer(n.input[0], producer)
    if dq is None:
        return None

    def const(name):
        return None if not name else inits.get(name)

    same = all(
        (a is None and b is None) or (a is not None and b is not None and a.dtype == b.dtype and np.array_equal(a, b))
        for a, b in ((const(dq.input[1]), const(q.input[1])), (const(arg(dq, 2)), const(arg(q, 2)))))
    if not same or const(dq.input[1]) is None:
        return None
    made = helper.make_node(n.op_type, [dq.input[0]] + list(n.input[1:]), [q.output[0]], name=n.name,
                            domain=n.domain)
    made.attribute.extend(n.attribute)
    return made


def zero(g, like, inits):
    """A zero scalar initializer of `like`'s 8-bit type (uint8 when unknown)."""
    name = f"{like}.zero_point"
    if name not in inits:
        dtype = inits[like].dtype if like in inits else np.uint8
        g.initializer.append(numpy_helper.from_array(np.zeros((), dtype), name))
        inits[name] = np.zeros((), dtype)
    return name
