"""The graph onnxruntime-training builds a training reference from, when it
cannot take the deployed inference graph as it is.

onnxruntime-training 1.19.2 has no gradient for HardSwish, HardSigmoid,
Elu, Softplus, PRelu, ReduceMax, GlobalMaxPool, GroupNormalization, InstanceNormalization,
Floor, Ceil, reflect and edge Pad, or the log_prob output of
SoftmaxCrossEntropyLoss; its
ConvTransposeGrad has no CPU kernel (NOT_IMPLEMENTED); it knows neither
opset 23 (RMSNormalization) nor the default-domain RMSNorm; and it reads
opset-11 attribute forms (Pad pads/value, Clip min/max, Split split,
reduction and Squeeze/Unsqueeze axes) only at their old opsets.
`reference_graph` rewrites each such node into standard operators with
the same function and gradient, keeping every initializer's name, so the
references (losses, `<w>_updated`) are those of the deployed graph:

- HardSigmoid{a, b}(x) = Clip(a x + b, 0, 1); HardSwish(x) = x HardSigmoid(x){1/6, 1/2};
- Elu{a}(x) = Where(x > 0, x, a (Exp(x) - 1)); Softplus(x) = Log(Exp(x) + 1);
  PRelu(x, s) = Where(x < 0, x s, x);
- RMSNormalization / RMSNorm(x, s){axis, eps} = x / Sqrt(ReduceMean(x x) + eps) * s;
- ReduceMax and GlobalMaxPool = the mean of the elements equal to TopK(k = 1)'s
  value (trailing axes merged by a Reshape): the same value, and dY / k to
  each of k tied maxima, deploygen's rule;
- Floor / Ceil = an integer Cast corrected by one where it truncated the
  other way (the same values; the gradient stops, as their zero one);
- GroupNormalization / InstanceNormalization = LayerNormalization of the
  input reshaped to [N, groups, rest], then the per-channel scale and bias;
- reflect / edge Pad = one Gather per padded axis;
- SoftmaxCrossEntropyLoss's log_prob = LogSoftmax over the class axis;
- ConvTranspose (1-D, group 1) = zeros inserted between the inputs
  (Unsqueeze, Pad, Reshape), edge padding, and a Conv with the weight
  transposed and flipped (Transpose, Gather);
- legacy attributes become the inputs of the current opset.

The graph keeps only the output the loss reads (declared with its
computed shape), the form generate_artifacts adds the loss to.
"""

import numpy as np
import onnx
from onnx import helper, numpy_helper

REF_OPSET = 20


class Rewriter:
    def __init__(self, model):
        self.model = model
        self.g = model.graph
        self.inits = {i.name: i for i in self.g.initializer}
        self.count = 0

    def fresh(self, base):
        self.count += 1
        return f"{base}__ref{self.count}"

    def const(self, base, value, dtype=np.float32):
        name = self.fresh(base)
        self.g.initializer.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def node(self, op, ins, outs, **attrs):
        outs = [o if o else self.fresh(op) for o in outs]
        return helper.make_node(op, ins, outs, name=self.fresh(op), **attrs), outs

    def attrs(self, n):
        return {a.name: helper.get_attribute_value(a) for a in n.attribute}

    def rank(self, name):
        for vi in list(self.g.input) + list(self.g.value_info) + list(self.g.output):
            if vi.name == name:
                return len(vi.type.tensor_type.shape.dim)
        if name in self.inits:
            return len(self.inits[name].dims)
        return None


def hard_sigmoid(r, x, y, alpha, beta):
    a, ma = r.node("Mul", [x, r.const("alpha", alpha)], [""])
    b, ab = r.node("Add", [ma[0], r.const("beta", beta)], [""])
    c, _ = r.node("Clip", [ab[0], r.const("zero", 0.0), r.const("one", 1.0)], [y])
    return [a, b, c]


def rewrite(r, n, shapes):
    """The nodes standing for `n` (a list), or None to keep it."""
    at = r.attrs(n)
    x = n.input[0] if n.input else None
    if n.op_type == "HardSigmoid":
        return hard_sigmoid(r, x, n.output[0], at.get("alpha", 0.2), at.get("beta", 0.5))
    if n.op_type == "HardSwish":
        h = r.fresh("hard_sigmoid")
        nodes = hard_sigmoid(r, x, h, 1.0 / 6.0, 0.5)
        return nodes + [r.node("Mul", [x, h], [n.output[0]])[0]]
    if n.op_type == "Elu":
        p, po = r.node("Greater", [x, r.const("zero", 0.0)], [""])
        e, eo = r.node("Exp", [x], [""])
        m, mo = r.node("Sub", [eo[0], r.const("one", 1.0)], [""])
        a, ao = r.node("Mul", [mo[0], r.const("alpha", at.get("alpha", 1.0))], [""])
        return [p, e, m, a, r.node("Where", [po[0], x, ao[0]], [n.output[0]])[0]]
    if n.op_type == "Softplus":
        e, eo = r.node("Exp", [x], [""])
        a, ao = r.node("Add", [eo[0], r.const("one", 1.0)], [""])
        return [e, a, r.node("Log", [ao[0]], [n.output[0]])[0]]
    if n.op_type == "PRelu":
        p, po = r.node("Less", [x, r.const("zero", 0.0)], [""])
        m, mo = r.node("Mul", [x, n.input[1]], [""])
        return [p, m, r.node("Where", [po[0], mo[0], x], [n.output[0]])[0]]
    if n.op_type in ("RMSNormalization", "RMSNorm"):
        axis = at.get("axis", -1)
        # negative: counted from the end, so no rank is needed
        dims = list(range(axis, 0)) if axis < 0 else list(range(axis, len(shapes[x])))
        axes = r.const("axes", dims, np.int64)
        sq, o1 = r.node("Mul", [x, x], [""])
        m, o2 = r.node("ReduceMean", [o1[0], axes], [""], keepdims=1)
        e, o3 = r.node("Add", [o2[0], r.const("eps", at.get("epsilon", 1e-5))], [""])
        s, o4 = r.node("Sqrt", [o3[0]], [""])
        d, o5 = r.node("Div", [x, o4[0]], [""])
        out = n.output[0] if len(n.input) < 3 or not n.input[2] else ""
        w, o6 = r.node("Mul", [o5[0], n.input[1]], [out])
        nodes = [sq, m, e, s, d, w]
        if out == "":
            nodes.append(r.node("Add", [o6[0], n.input[2]], [n.output[0]])[0])
        return nodes
    if n.op_type == "ReduceMax":
        axes = list(at["axes"]) if "axes" in at else list(numpy_helper.to_array(r.inits[n.input[1]]))
        return max_over(r, x, n.output[0], shapes[x] if len(axes) > 1 else None, axes, at.get("keepdims", 1))
    if n.op_type == "GlobalMaxPool":
        return max_over(r, x, n.output[0], shapes[x], list(range(2, len(shapes[x]))), 1)
    if n.op_type in ("Floor", "Ceil"):
        return floor_ceil(r, x, n.output[0], n.op_type == "Floor")
    if n.op_type in ("GroupNormalization", "InstanceNormalization"):
        return group_norm(r, n, at, shapes[x])
    if n.op_type == "Pad" and at.get("mode", b"constant") in (b"reflect", b"edge"):
        return pad_gather(r, n, at, shapes[x])
    if n.op_type == "SoftmaxCrossEntropyLoss":
        assert len(n.output) > 1 and n.output[1], "only the log_prob output is read"
        return [r.node("LogSoftmax", [x], [n.output[1]], axis=1)[0]]
    if n.op_type == "ConvTranspose":
        return conv_transpose(r, n, at, shapes)
    if n.op_type == "LayerNormalization" and (len(n.output) < 3 or not all(n.output)):
        return [layer_norm_outputs(r, n)]
    return legacy(r, n, at)


def layer_norm_outputs(r, n):
    """The node with its optional Mean and InvStdDev outputs named:
    onnxruntime's LayerNormalization gradient reads them, and a PyTorch
    export writes only the first (its gradient builder then fails on an
    output index). The values are the same; only outputs are added."""
    outs = list(n.output) + [""] * (3 - len(n.output))
    outs = [o if o else r.fresh(f"{n.name or 'layer_norm'}_stat") for o in outs]
    m = helper.make_node("LayerNormalization", list(n.input), outs, name=n.name)
    m.attribute.extend(n.attribute)
    return m


def max_over(r, x, y, shape, axes, keepdims):
    """ReduceMax / GlobalMaxPool by TopK(k = 1) and the mean of its ties; several trailing axes are
    merged into one first (`shape` is then the input's)."""
    nodes = []
    if shape is not None:
        rank = len(shape)
        axes = sorted(a % rank for a in axes)
        assert axes == list(range(axes[0], rank)), "the maximum over trailing axes only"
        merged = shape[:axes[0]] + [int(np.prod(shape[axes[0]:]))]
        m, o = r.node("Reshape", [x, r.const("shape", merged, np.int64)], [""])
        nodes.append(m)
        x, axes = o[0], [axes[0]]
    # The maximum's value by TopK; the gradient through the mask's mean,
    # dY / k to each of k tied maxima (TopK's gives it all to the first).
    k, top = r.node("TopK", [x, r.const("k", [1], np.int64)], ["", ""], axis=int(axes[0]))
    eq, hit = r.node("Equal", [x, top[0]], [""])
    c, mask = r.node("Cast", [hit[0]], [""], to=onnx.TensorProto.FLOAT)
    m, picked = r.node("Mul", [x, mask[0]], [""])
    ax = r.const("axes", [int(axes[0])], np.int64)
    s, total = r.node("ReduceSum", [picked[0], ax], [""], keepdims=1)
    n, ties = r.node("ReduceSum", [mask[0], ax], [""], keepdims=1)
    d, o = r.node("Div", [total[0], ties[0]], [""])
    nodes += [k, eq, c, m, s, n, d]
    if shape is not None:
        kept = shape[:axes[0]] + ([1] * (len(shape) - axes[0]) if keepdims else [])
        nodes.append(r.node("Reshape", [o[0], r.const("shape", kept, np.int64)], [y])[0])
    elif keepdims:
        nodes.append(r.node("Identity", [o[0]], [y])[0])
    else:
        nodes.append(r.node("Squeeze", [o[0], r.const("axes", axes, np.int64)], [y])[0])
    return nodes


def floor_ceil(r, x, y, floor):
    """Floor / Ceil through an integer Cast (truncation), corrected by one
    where truncation went the other way: the same values, and no gradient
    passes the integer Cast or the comparison."""
    c, o = r.node("Cast", [x], [""], to=onnx.TensorProto.INT32)
    b, t = r.node("Cast", [o[0]], [""], to=onnx.TensorProto.FLOAT)
    cmp, m = r.node("Less" if floor else "Greater", [x, t[0]], [""])
    f, mf = r.node("Cast", [m[0]], [""], to=onnx.TensorProto.FLOAT)
    fix = r.node("Sub" if floor else "Add", [t[0], mf[0]], [y])[0]
    return [c, b, cmp, f, fix]


def group_norm(r, n, at, xs):
    """Group / instance normalisation (per-channel scale and bias) as a
    LayerNormalization of X reshaped to [N, G, C/G * spatial]."""
    c = xs[1]
    g = at.get("num_groups", c)
    k = int(np.prod(xs)) // (xs[0] * g)
    per = [c] + [1] * (len(xs) - 2)
    a, rows = r.node("Reshape", [n.input[0], r.const("shape", [xs[0], g, k], np.int64)], [""])
    ln, o = r.node("LayerNormalization", [rows[0], r.const("ones", np.ones(k)), r.const("zeros", np.zeros(k))],
                   ["", "", ""], axis=-1, epsilon=at.get("epsilon", 1e-5))
    b, full = r.node("Reshape", [o[0], r.const("shape", xs, np.int64)], [""])
    s, sc = r.node("Reshape", [n.input[1], r.const("shape", per, np.int64)], [""])
    bb, bi = r.node("Reshape", [n.input[2], r.const("shape", per, np.int64)], [""])
    m, mo = r.node("Mul", [full[0], sc[0]], [""])
    return [a, ln, b, s, bb, m, r.node("Add", [mo[0], bi[0]], [n.output[0]])[0]]


def pad_gather(r, n, at, xs):
    """Reflect / edge Pad as one Gather per padded axis (the same source
    index per output position as the pad)."""
    pads = list(at["pads"]) if "pads" in at else list(numpy_helper.to_array(r.inits[n.input[1]]))
    rank, reflect = len(xs), at["mode"] == b"reflect"
    nodes, x = [], n.input[0]
    axes = [a for a in range(rank) if pads[a] or pads[a + rank]]
    for i, a in enumerate(axes):
        b, e, size = pads[a], pads[a + rank], xs[a]
        index = []
        for o in range(size + b + e):
            src = o - b
            if reflect and src < 0:
                src = -src
            elif reflect and src >= size:
                src = 2 * (size - 1) - src
            index.append(min(max(src, 0), size - 1))
        out = n.output[0] if i == len(axes) - 1 else ""
        g, o = r.node("Gather", [x, r.const("index", index, np.int64)], [out], axis=a)
        nodes.append(g)
        x = o[0]
    return nodes


def conv_transpose(r, n, at, shapes):
    xs, ws = shapes[n.input[0]], shapes[n.input[1]]
    assert len(xs) == 3 and at.get("group", 1) == 1 and not at.get("output_padding") and "auto_pad" not in at
    k, s = ws[2], at.get("strides", [1])[0]
    dl = at.get("dilations", [1])[0]
    pb, pe = at.get("pads", [0, 0])
    nodes = []
    u, o = r.node("Unsqueeze", [n.input[0], r.const("axes", [3], np.int64)], [""])
    p, o2 = r.node("Pad", [o[0], r.const("pads", [0, 0, 0, 0, 0, 0, 0, s - 1], np.int64)], [""], mode="constant")
    rs, o3 = r.node("Reshape", [o2[0], r.const("shape", [xs[0], xs[1], xs[2] * s], np.int64)], [""])
    edge = dl * (k - 1)
    e, o4 = r.node("Pad", [o3[0], r.const("pads", [0, 0, edge - pb, 0, 0, edge - pe - (s - 1)], np.int64)], [""],
                   mode="constant")
    t, o5 = r.node("Transpose", [n.input[1]], [""], perm=[1, 0, 2])
    f, o6 = r.node("Gather", [o5[0], r.const("flip", list(range(k - 1, -1, -1)), np.int64)], [""], axis=2)
    nodes += [u, p, rs, e, t, f]
    ins = [o4[0], o6[0]] + ([n.input[2]] if len(n.input) > 2 and n.input[2] else [])
    nodes.append(r.node("Conv", ins, [n.output[0]], dilations=[dl], kernel_shape=[k])[0])
    return nodes


LEGACY_INPUTS = {
    # op: [(attribute, input slot, dtype)]
    "Pad": [("pads", 1, np.int64), ("value", 2, np.float32)],
    "Clip": [("min", 1, np.float32), ("max", 2, np.float32)],
    "Split": [("split", 1, np.int64)],
    "ReduceMean": [("axes", 1, np.int64)],
    "ReduceSum": [("axes", 1, np.int64)],
    "Squeeze": [("axes", 1, np.int64)],
    "Unsqueeze": [("axes", 1, np.int64)],
}


def legacy(r, n, at):
    moves = [(a, slot, dt) for a, slot, dt in LEGACY_INPUTS.get(n.op_type, []) if a in at]
    if not moves:
        return None
    ins = list(n.input)
    for a, slot, dt in moves:
        while len(ins) <= slot:
            ins.append("")
        ins[slot] = r.const(a, at[a], dt)
    keep = {k: v for k, v in at.items() if k not in {a for a, _, _ in moves}}
    return [helper.make_node(n.op_type, ins, list(n.output), name=n.name, **keep)]


def value_shapes(model):
    """Every value's shape, from one onnxruntime inference run on zeros with
    every node output fetched (where onnxruntime cannot run the graph, the
    declared shapes: the rewrites that need shapes are of graphs it runs)."""
    g = model.graph
    out = {i.name: list(i.dims) for i in g.initializer}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        out[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    from .ort import onnxruntime

    m = onnx.ModelProto()
    m.CopyFrom(model)
    names = [o for n in m.graph.node for o in n.output if o and o not in out]
    m.graph.output.extend(helper.make_empty_tensor_value_info(o) for o in names)
    try:
        sess = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:
        return out
    feeds = {i.name: np.zeros([d.dim_value for d in i.type.tensor_type.shape.dim],
                              onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
             for i in m.graph.input if i.name not in out or i.name not in {t.name for t in m.graph.initializer}}
    for name, value in zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)):
        out[name] = list(np.shape(value))
    return out


def reference_graph(model, logits, logits_shape):
    """(the graph onnxruntime-training trains, notes on what was rewritten)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    shapes = value_shapes(m)
    r = Rewriter(m)
    nodes, notes = [], set()
    for n in list(m.graph.node):
        new = rewrite(r, n, shapes)
        if new is None:
            nodes.append(n)
        else:
            notes.add(n.op_type)
            nodes.extend(new)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    # initializers no node reads any more (SoftmaxCrossEntropyLoss's
    # constant labels) would collide with the loss's own inputs
    read = {i for n in nodes for i in n.input}
    unread = [i for i in m.graph.initializer if i.name not in read]
    for i in unread:
        m.graph.initializer.remove(i)
    out = helper.make_tensor_value_info(logits, onnx.TensorProto.FLOAT, list(logits_shape))
    del m.graph.output[:]
    m.graph.output.append(out)
    del m.graph.value_info[:]
    for op in m.opset_import:
        if op.domain in ("", "ai.onnx") and op.version > REF_OPSET:
            op.version = REF_OPSET
            m.ir_version = min(m.ir_version, 9)
    return m, sorted(notes)
