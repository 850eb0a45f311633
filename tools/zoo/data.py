"""Test data in the inputs.npz layouts (docs/cli.md, "Test data: `inputs.npz`
and `outputs.npz`")."""

from collections import OrderedDict

import numpy as np

from .train import GRAD_BUF


def make_batches(spec, data_names, label_value=None):
    """`spec.data_size` mini-batches, each a tuple ordered like `data_names`.

    Classifiers: (input f32, labels i64 in [0, num_classes)).
    MSE models:  (input f32, target f32) with target = input (reconstruction).
    Inference:   (input f32,).
    """
    rng = np.random.default_rng(spec.seed + 1000)
    batches = []
    for _ in range(spec.data_size):
        x = rng.standard_normal(spec.data_shape).astype(np.float32)
        if spec.kind == "infer":
            batches.append((x,))
        elif spec.loss == "mse":
            batches.append((x, x.copy()))
        else:
            y = rng.integers(0, spec.num_classes, size=spec.data_shape[0]).astype(np.int64)
            if label_value is not None:
                y[:] = label_value
            batches.append((x, y))
    assert all(len(b) == len(data_names) for b in batches), data_names
    return batches


def meta(spec, with_lr):
    m = OrderedDict()
    m["meta_data_size"] = np.array(spec.data_size, dtype=np.int64)
    m["meta_n_batches"] = np.array(spec.n_batches, dtype=np.int64)
    m["meta_n_accum"] = np.array(spec.n_accum, dtype=np.int64)
    if with_lr:
        m["meta_learning_rate"] = np.array(spec.lr, dtype=np.float32)
    return m


def graph_slots(graph_inputs, data_names, params):
    """(name, value or None) for every non-gradient graph input, in graph order.
    Data inputs get None (filled per mini-batch)."""
    slots = []
    for name in graph_inputs:
        if name.endswith(GRAD_BUF):
            continue
        if name in data_names:
            slots.append((name, None))
        elif name == "lazy_reset_grad":
            # value for the first pass of an optimizer step (reset the buffers);
            # onnxruntime declares it bool[1]
            slots.append((name, np.array([True])))
        else:
            slots.append((name, params[name]))
    return slots


def inputs_npz(layout, graph_inputs, data_names, params, batches, meta_keys):
    """Build the ordered key -> array mapping of inputs.npz."""
    slots = graph_slots(graph_inputs, data_names, params)
    first = dict(zip(data_names, batches[0]))
    out = OrderedDict()

    def key(i, name):
        return {"positional": f"arr_{i:04d}", "ordered": f"input_{i}", "named": name}[layout]

    for i, (name, value) in enumerate(slots):
        out[key(i, name)] = first[name] if value is None else value
    for mb in range(1, len(batches)):
        cur = dict(zip(data_names, batches[mb]))
        for i, (name, value) in enumerate(slots):
            if value is None:
                out[f"mb{mb}_{key(i, name)}"] = cur[name]
    out.update(meta_keys)
    return out
