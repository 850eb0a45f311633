"""Independent numpy (float64) implementations used to cross-check onnxruntime.

- `forward`: interprets the *forward* graphs of the zoo (the ops the builder
  emits), so every model's first loss and every inference output is
  recomputed without onnxruntime.
- `mlp_schedule`: a hand-written forward/backward/SGD for Gemm/Relu stacks
  (simple_mlp, autoencoder) over the whole schedule, gradient accumulation
  included.
"""

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from onnx import helper, numpy_helper

_erf = np.vectorize(math.erf)


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pad(x, pads, value):
    n = x.ndim - 2
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)]
    return np.pad(x, width, constant_values=value)


def _windows(x, k, s):
    """[N, C, H, W] -> [N, C, OH, OW, kh, kw] (views)."""
    w = sliding_window_view(x, k, axis=(2, 3))
    return w[:, :, ::s[0], ::s[1]]


def conv(x, w, b, a):
    k = a["kernel_shape"]
    s = a.get("strides", [1, 1])
    g = a.get("group", 1)
    x = _pad(x, a.get("pads", [0, 0, 0, 0]), 0.0)
    win = _windows(x, k, s)                               # N, C, OH, OW, kh, kw
    n, c, oh, ow = win.shape[:4]
    cout = w.shape[0]
    cg, og = c // g, cout // g
    win = win.reshape(n, g, cg, oh, ow, k[0], k[1])
    wg = w.reshape(g, og, cg, k[0], k[1])
    y = np.einsum("ngchwij,gocij->ngohw", win, wg).reshape(n, cout, oh, ow)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y


def conv1d(x, w, b, a):
    k = a["kernel_shape"][0]
    s = a.get("strides", [1])[0]
    d = a.get("dilations", [1])[0]
    g = a.get("group", 1)
    assert d == 1, "dilated Conv 1-D is not used in the zoo"
    x = _pad(x, a.get("pads", [0, 0]), 0.0)
    win = sliding_window_view(x, k, axis=2)[:, :, ::s]      # N, C, OL, k
    n, c, ol = win.shape[:3]
    cout = w.shape[0]
    cg, og = c // g, cout // g
    y = np.einsum("ngclk,gock->ngol", win.reshape(n, g, cg, ol, k), w.reshape(g, og, cg, k)).reshape(n, cout, ol)
    if b is not None:
        y = y + b.reshape(1, -1, 1)
    return y


def conv_transpose1d(x, w, b, a):
    """ConvTranspose over one spatial axis (group 1, dilation 1): scatter, then crop the pads."""
    assert a.get("group", 1) == 1 and a.get("dilations", [1]) == [1] and not a.get("output_shape")
    k = w.shape[2]
    s = a.get("strides", [1])[0]
    pb, pe = a.get("pads", [0, 0])
    op = a.get("output_padding", [0])[0]
    n, _, length = x.shape
    full = np.zeros((n, w.shape[1], (length - 1) * s + k + op))
    for i in range(length):
        full[:, :, i * s:i * s + k] += np.einsum("nc,cok->nok", x[:, :, i], w)
    y = full[:, :, pb:full.shape[2] - pe]
    if b is not None:
        y = y + b.reshape(1, -1, 1)
    return y


def pad_nd(x, pads, mode, value):
    r = x.ndim
    width = [(int(pads[i]), int(pads[i + r])) for i in range(r)]
    if mode == "constant":
        return np.pad(x, width, constant_values=value)
    return np.pad(x, width, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])


def _axes(node, a, x, pos):
    """Reduction/Squeeze axes from the attribute (opset-11 form) or the input at `pos`."""
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    if len(x) > pos and x[pos] is not None:
        return [int(v) for v in x[pos]]
    return None


def _reduce(fn, x, axes, keepdims, noop_with_empty_axes=0):
    if axes is None or len(axes) == 0:
        if noop_with_empty_axes:
            return x
        axes = list(range(x.ndim))
    return fn(x, axis=tuple(int(v) % x.ndim for v in axes), keepdims=bool(keepdims))


def pool(x, a, kind):
    k = a["kernel_shape"]
    s = a.get("strides", [1, 1])
    pads = a.get("pads", [0, 0, 0, 0])
    if kind == "max":
        return _windows(_pad(x, pads, -np.inf), k, s).max(axis=(4, 5))
    assert not any(pads), "AveragePool with pads is not used in the zoo"
    return _windows(x, k, s).mean(axis=(4, 5))


def layernorm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def forward(model, feeds, params=None, bn_stats=None, env_out=None):
    """Run a forward graph in float64. `params` overrides initializers by name.
    If `bn_stats` is a dict, training-mode BatchNormInternal nodes record the
    running statistics they produce there (keyed by the running_mean/var input).
    If `env_out` is a dict, every tensor value is left in it (node order)."""
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in env.items()}
    for k, v in (params or {}).items():
        env[k] = np.asarray(v, np.float64)
    for k, v in feeds.items():
        env[k] = np.asarray(v, np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v)
    for node in model.graph.node:
        a = _attrs(node)
        x = [env[i] if i else None for i in node.input]
        op = node.op_type
        outs = None
        if op == "Conv" and x[0].ndim == 3:
            y = conv1d(x[0], x[1], x[2] if len(x) > 2 else None, a)
        elif op == "Conv":
            y = conv(x[0], x[1], x[2] if len(x) > 2 else None, a)
        elif op == "ConvTranspose":
            assert x[0].ndim == 3, "only ConvTranspose 1-D in the zoo"
            y = conv_transpose1d(x[0], x[1], x[2] if len(x) > 2 else None, a)
        elif op in ("BatchNormInternal", "BatchNormalization"):
            red = (0,) + tuple(range(2, x[0].ndim))
            cshape = (1, -1) + (1,) * (x[0].ndim - 2)
            if op == "BatchNormInternal" and a.get("training_mode", 0):
                mu = x[0].mean(axis=red, keepdims=True)
                var = x[0].var(axis=red, keepdims=True)              # biased, as in training mode
                if bn_stats is not None:
                    mom = a.get("momentum", 0.9)
                    bn_stats[node.input[3]] = mom * x[3] + (1 - mom) * mu.reshape(-1)
                    bn_stats[node.input[4]] = mom * x[4] + (1 - mom) * var.reshape(-1)
            else:
                mu, var = x[3].reshape(cshape), x[4].reshape(cshape)
            y = (x[0] - mu) / np.sqrt(var + a.get("epsilon", 1e-5)) * x[1].reshape(cshape) \
                + x[2].reshape(cshape)
        elif op == "Relu":
            y = np.maximum(x[0], 0.0)
        elif op == "MaxPool":
            y = pool(x[0], a, "max")
        elif op == "AveragePool":
            y = pool(x[0], a, "avg")
        elif op == "GlobalAveragePool":
            y = x[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            ax = a.get("axis", 1)
            y = x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)
        elif op == "Gemm":
            A = x[0].T if a.get("transA", 0) else x[0]
            B = x[1].T if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(x) > 2:
                y = y + a.get("beta", 1.0) * x[2]
        elif op == "MatMul":
            y = x[0] @ x[1]
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "Mul":
            y = x[0] * x[1]
        elif op == "Div":
            y = x[0] / x[1]
        elif op == "Reshape":
            y = x[0].reshape([int(d) for d in x[1]])
        elif op == "Transpose":
            y = x[0].transpose(a["perm"])
        elif op == "Softmax":
            y = softmax(x[0], a.get("axis", -1))
        elif op == "LayerNormalization":
            assert a.get("axis", -1) == -1
            y = layernorm(x[0], x[1], x[2], a.get("epsilon", 1e-5))
        elif op == "Gelu":
            y = 0.5 * x[0] * (1.0 + _erf(x[0] / math.sqrt(2.0)))
        elif op == "ReduceMean" and len(x) > 1 and "axes" not in a:
            y = x[0].mean(axis=tuple(int(d) for d in x[1]), keepdims=bool(a.get("keepdims", 1)))
        elif op in ("ReduceMean", "ReduceSum", "ReduceMax"):
            fn = {"ReduceMean": np.mean, "ReduceSum": np.sum, "ReduceMax": np.max}[op]
            y = _reduce(fn, x[0], _axes(node, a, x, 1), a.get("keepdims", 1), a.get("noop_with_empty_axes", 0))
        else:
            outs = _more_ops(op, node, a, x, env)
            y = outs[0]
        for name, value in zip(node.output, outs if outs is not None else [y]):
            if name:
                env[name] = value
    if env_out is not None:
        env_out.update(env)
    return {o.name: env[o.name] for o in model.graph.output}


def rounding_margin(model, env):
    """Smallest distance to the nearest integer over the inputs of Floor, Ceil and
    Cast float -> int (truncation): a deployment whose float results differ in the
    last bits must not land on the other side of a step."""
    margin = np.inf
    for node in model.graph.node:
        to_int = node.op_type == "Cast" and _attrs(node).get("to") in _INT_TYPES
        if node.op_type in ("Floor", "Ceil") or to_int:
            v = np.asarray(env[node.input[0]], np.float64)
            margin = min(margin, float(np.min(np.abs(v - np.round(v)))))
    return margin


_FLOAT_TYPES = {1: np.float64, 11: np.float64}
_INT_TYPES = {6: np.int32, 7: np.int64}


def _more_ops(op, node, a, x, env):
    """The operators forward() does not handle itself; returns the list of node outputs."""
    unary = {
        "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt, "Tanh": np.tanh, "Neg": np.negative, "Abs": np.abs,
        "Floor": np.floor, "Ceil": np.ceil, "Erf": _erf, "Identity": lambda v: v,
        "Sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
    }
    if op in unary:
        return [unary[op](x[0])]
    if op == "Sub":
        return [x[0] - x[1]]
    if op == "Pow":
        return [np.power(x[0], x[1])]
    if op == "HardSigmoid":
        return [np.clip(a.get("alpha", 0.2) * x[0] + a.get("beta", 0.5), 0.0, 1.0)]
    if op == "HardSwish":
        return [x[0] * np.clip(x[0] / 6.0 + 0.5, 0.0, 1.0)]
    if op == "Clip":
        lo = x[1] if len(x) > 1 and x[1] is not None else a.get("min", -np.inf)
        hi = x[2] if len(x) > 2 and x[2] is not None else a.get("max", np.inf)
        return [np.minimum(np.maximum(x[0], lo), hi)]
    if op in ("Max", "Min"):
        fn = np.maximum if op == "Max" else np.minimum
        y = x[0]
        for v in x[1:]:
            y = fn(y, v)
        return [y]
    if op == "Where":
        return [np.where(x[0], x[1], x[2])]
    if op == "Cast":
        to = a["to"]
        if to in _FLOAT_TYPES:
            return [x[0].astype(np.float64)]
        if to == 9:
            return [x[0].astype(bool)]
        return [np.trunc(x[0]).astype(_INT_TYPES[to])]
    if op == "Gather":
        return [np.take(x[0], x[1].astype(np.int64), axis=a.get("axis", 0))]
    if op == "Split":
        axis = a.get("axis", 0)
        sizes = a.get("split") or (list(x[1]) if len(x) > 1 and x[1] is not None else None)
        if sizes is None:
            sizes = [x[0].shape[axis] // len(node.output)] * len(node.output)
        return np.split(x[0], np.cumsum([int(v) for v in sizes])[:-1], axis=axis)
    if op == "Pad":
        pads = a["pads"] if "pads" in a else x[1]
        value = a.get("value", 0.0) if "pads" in a else (float(x[2]) if len(x) > 2 and x[2] is not None else 0.0)
        assert len(x) < 4 or x[3] is None, "Pad axes input is not used in the zoo"
        return [pad_nd(x[0], pads, a.get("mode", b"constant").decode() if isinstance(a.get("mode"), bytes)
                       else a.get("mode", "constant"), value)]
    if op == "GlobalMaxPool":
        return [x[0].max(axis=tuple(range(2, x[0].ndim)), keepdims=True)]
    if op == "GlobalAveragePool":
        return [x[0].mean(axis=tuple(range(2, x[0].ndim)), keepdims=True)]
    if op == "InstanceNormalization":
        red = tuple(range(2, x[0].ndim))
        cshape = (1, -1) + (1,) * (x[0].ndim - 2)
        mu = x[0].mean(axis=red, keepdims=True)
        var = x[0].var(axis=red, keepdims=True)
        return [(x[0] - mu) / np.sqrt(var + a.get("epsilon", 1e-5)) * x[1].reshape(cshape) + x[2].reshape(cshape)]
    if op == "GroupNormalization":                      # opset 21: scale and bias per channel
        g = a["num_groups"]
        n, c = x[0].shape[:2]
        xg = x[0].reshape(n, g, -1)
        mu = xg.mean(axis=2, keepdims=True)
        var = xg.var(axis=2, keepdims=True)
        y = ((xg - mu) / np.sqrt(var + a.get("epsilon", 1e-5))).reshape(x[0].shape)
        cshape = (1, -1) + (1,) * (x[0].ndim - 2)
        return [y * x[1].reshape(cshape) + x[2].reshape(cshape)]
    if op in ("RMSNormalization", "RMSNorm"):
        axis = a.get("axis", -1) % x[0].ndim
        red = tuple(range(axis, x[0].ndim))
        ms = (x[0] ** 2).mean(axis=red, keepdims=True)
        return [x[0] / np.sqrt(ms + a.get("epsilon", 1e-5)) * x[1]]
    if op in ("Squeeze", "Unsqueeze"):
        axes = _axes(node, a, x, 1)
        if op == "Squeeze":
            return [np.squeeze(x[0], axis=tuple(v % x[0].ndim for v in axes)) if axes else np.squeeze(x[0])]
        r = x[0].ndim + len(axes)
        return [np.expand_dims(x[0], tuple(v % r for v in axes))]
    if op == "Concat":
        return [np.concatenate(x, axis=a["axis"])]
    if op == "Constant":
        v = numpy_helper.to_array(a["value"])
        return [v.astype(np.float64) if v.dtype.kind == "f" else v]
    if op == "SoftmaxCrossEntropyLoss":
        assert a.get("reduction", b"mean") in (b"mean", "mean") and len(x) == 2
        z = x[0] - x[0].max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return [-np.take_along_axis(logp, x[1].reshape(-1, 1), axis=1).mean(), logp]
    raise NotImplementedError(f"numpy reference has no {op}")


def cross_entropy(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


def mse(y, target):
    return ((y - target) ** 2).mean()


# ---------------------------------------------------------------------------
# Gemm/Relu stacks: forward, backward, SGD with gradient accumulation
# ---------------------------------------------------------------------------

def _mlp_layers(model):
    """[(weight, bias, relu_after)] from a Gemm(transB=1)/Relu chain."""
    layers = []
    for node in model.graph.node:
        if node.op_type == "Gemm":
            assert _attrs(node).get("transB", 0) == 1
            layers.append([node.input[1], node.input[2], False])
        elif node.op_type == "Relu":
            layers[-1][2] = True
        else:
            raise NotImplementedError(node.op_type)
    return layers


def mlp_schedule(model, params0, batches, loss, lr, n_batches, n_accum):
    """Losses of every forward pass and the parameters after the last step."""
    layers = _mlp_layers(model)
    p = {k: np.asarray(v, np.float64) for k, v in params0.items()}
    losses = []
    acc = None
    for mb in range(n_batches):
        x, t = batches[mb % len(batches)]
        acts = [np.asarray(x, np.float64)]
        pre = []
        for w, b, r in layers:
            z = acts[-1] @ p[w].T + p[b]
            pre.append(z)
            acts.append(np.maximum(z, 0.0) if r else z)
        y = acts[-1]
        if loss == "ce":
            losses.append(cross_entropy(y, t))
            pr = softmax(y, 1)
            pr[np.arange(len(t)), t] -= 1.0
            dy = pr / len(t)
        else:
            tt = np.asarray(t, np.float64)
            losses.append(mse(y, tt))
            dy = 2.0 * (y - tt) / y.size
        grads = {}
        for i in reversed(range(len(layers))):
            w, b, r = layers[i]
            if r:
                dy = dy * (pre[i] > 0)
            grads[w] = dy.T @ acts[i]
            grads[b] = dy.sum(axis=0)
            dy = dy @ p[w]
        acc = grads if mb % n_accum == 0 else {k: acc[k] + grads[k] for k in acc}
        if mb % n_accum == n_accum - 1:
            p = {k: p[k] - lr * acc[k] for k in p}
    return np.array(losses), p
