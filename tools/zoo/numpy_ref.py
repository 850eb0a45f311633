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


def forward(model, feeds, params=None, bn_stats=None):
    """Run a forward graph in float64. `params` overrides initializers by name.
    If `bn_stats` is a dict, training-mode BatchNormInternal nodes record the
    running statistics they produce there (keyed by the running_mean/var input)."""
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
        if op == "Conv":
            y = conv(x[0], x[1], x[2] if len(x) > 2 else None, a)
        elif op in ("BatchNormInternal", "BatchNormalization"):
            if op == "BatchNormInternal" and a.get("training_mode", 0):
                mu = x[0].mean(axis=(0, 2, 3), keepdims=True)
                var = x[0].var(axis=(0, 2, 3), keepdims=True)        # biased, as in training mode
                if bn_stats is not None:
                    mom = a.get("momentum", 0.9)
                    bn_stats[node.input[3]] = mom * x[3] + (1 - mom) * mu.reshape(-1)
                    bn_stats[node.input[4]] = mom * x[4] + (1 - mom) * var.reshape(-1)
            else:
                mu, var = x[3].reshape(1, -1, 1, 1), x[4].reshape(1, -1, 1, 1)
            y = (x[0] - mu) / np.sqrt(var + a.get("epsilon", 1e-5)) * x[1].reshape(1, -1, 1, 1) \
                + x[2].reshape(1, -1, 1, 1)
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
        elif op == "ReduceMean":
            y = x[0].mean(axis=tuple(int(d) for d in x[1]), keepdims=bool(a.get("keepdims", 1)))
        else:
            raise NotImplementedError(f"numpy reference has no {op}")
        env[node.output[0]] = y
    return {o.name: env[o.name] for o in model.graph.output}


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
