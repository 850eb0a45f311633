"""The inference models the zoo trains from a train.toml (deploygen derives
their backward pass): small MLPs (cross-entropy and MSE), a Conv/BN/ReLU/
pool/Gemm CNN, a depthwise-separable CNN and a LayerNorm/attention block.
Each folder: network.onnx (inference graph, weights as initializers),
train.toml, inputs.npz holding only what changes per mini-batch (the data
input and the labels; the initial weights are the initializers);
tools/make_train_refs.py writes outputs.npz.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .npz import npz_bytes

OPSET = 17
N_BATCHES = 4
DATA_SIZE = 4  # the zoo's training models hold at least 4 mini-batches


class Net:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def weight(self, name, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        v = self.rng.uniform(-s, s, size=shape).astype(np.float32)
        self.inits.append(numpy_helper.from_array(v, name))
        return name

    def const(self, name, value, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def layer_norm(self, x, c, name):
        # Mean and InvStdDev declared: onnxruntime's gradient builder reads them.
        w = self.const(f"{name}.weight", np.ones(c))
        b = self.const(f"{name}.bias", np.zeros(c))
        self.nodes.append(helper.make_node("LayerNormalization", [x, w, b], [name, f"{name}_mean", f"{name}_inv_std"],
                                           name=name, axis=-1, epsilon=1e-5))
        return name

    def bn(self, x, c, name):
        w = self.const(f"{name}.weight", self.rng.uniform(0.5, 1.5, c))
        b = self.const(f"{name}.bias", self.rng.uniform(-0.2, 0.2, c))
        m = self.const(f"{name}.running_mean", np.zeros(c))
        v = self.const(f"{name}.running_var", np.ones(c))
        return self.op("BatchNormalization", [x, w, b, m, v], name, epsilon=1e-5, momentum=0.9)

    def model(self, x_shape, out, out_shape, batch=None):
        """The inference model; `batch` names the batch dim symbolically
        (dim_param), as PyTorch's dynamic-axes export writes it."""
        sym = lambda s: [batch] + list(s[1:]) if batch else s  # noqa: E731
        g = helper.make_graph(self.nodes, self.name,
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, sym(x_shape))],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, sym(out_shape))], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                              producer_name="deploygen tools/zoo/derived.py")
        onnx.checker.check_model(m, full_check=True)
        return m


def mlp(name="mlp", classes=10):
    n = Net(name, 11)
    h = n.op("Gemm", ["input", n.weight("fc1.weight", [32, 16]), n.weight("fc1.bias", [32])], "fc1", transB=1)
    h = n.op("Relu", [h], "relu1")
    y = n.op("Gemm", [h, n.weight("fc2.weight", [classes, 32]), n.weight("fc2.bias", [classes])], "logits",
             transB=1)
    return n.model([4, 16], y, [4, classes]), [4, 16], ("classes", classes)


def mlp_mse():
    n = Net("mlp_mse", 12)
    h = n.op("Gemm", ["input", n.weight("fc1.weight", [8, 24]), n.weight("fc1.bias", [24])], "fc1")
    h = n.op("Relu", [h], "relu1")
    y = n.op("Gemm", [h, n.weight("fc2.weight", [24, 4]), n.weight("fc2.bias", [4])], "prediction")
    return n.model([4, 8], y, [4, 4]), [4, 8], ("regression", 4)


def cnn():
    n = Net("cnn", 13)
    h = n.op("Conv", ["input", n.weight("conv1.weight", [8, 3, 3, 3]), n.weight("conv1.bias", [8])], "conv1",
             pads=[1, 1, 1, 1])
    h = n.bn(h, 8, "bn1")
    h = n.op("Relu", [h], "relu1")
    h = n.op("MaxPool", [h], "pool1", kernel_shape=[2, 2], strides=[2, 2])
    h = n.op("Conv", [h, n.weight("conv2.weight", [8, 8, 3, 3]), n.weight("conv2.bias", [8])], "conv2",
             pads=[1, 1, 1, 1])
    h = n.op("Relu", [h], "relu2")
    h = n.op("AveragePool", [h], "pool2", kernel_shape=[2, 2], strides=[2, 2])
    h = n.op("Flatten", [h], "flatten", axis=1)
    y = n.op("Gemm", [h, n.weight("fc.weight", [5, 32]), n.weight("fc.bias", [5])], "logits", transB=1)
    return n.model([2, 3, 8, 8], y, [2, 5]), [2, 3, 8, 8], ("classes", 5)


def dscnn():
    n = Net("dscnn", 14)
    h = n.op("Conv", ["input", n.weight("conv1.weight", [8, 3, 3, 3]), n.weight("conv1.bias", [8])], "conv1",
             pads=[1, 1, 1, 1], strides=[2, 2])
    h = n.op("Relu", [h], "relu1")
    h = n.op("Conv", [h, n.weight("dw.weight", [8, 1, 3, 3]), n.weight("dw.bias", [8])], "dw",
             pads=[1, 1, 1, 1], group=8)
    h = n.bn(h, 8, "bn_dw")
    h = n.op("Relu", [h], "relu_dw")
    h = n.op("Conv", [h, n.weight("pw.weight", [16, 8, 1, 1]), n.weight("pw.bias", [16])], "pw")
    h = n.op("Relu", [h], "relu_pw")
    h = n.op("GlobalAveragePool", [h], "gap")
    h = n.op("Flatten", [h], "flatten", axis=1)
    y = n.op("Gemm", [h, n.weight("fc.weight", [4, 16]), n.weight("fc.bias", [4])], "logits", transB=1)
    return n.model([2, 3, 8, 8], y, [2, 4]), [2, 3, 8, 8], ("classes", 4)


def transformer():
    """One pre-norm attention block over 4 tokens of width 8, a classifier on the flattened tokens."""
    n = Net("transformer", 15)
    ln = n.layer_norm("input", 8, "ln1")
    q = n.op("MatMul", [ln, n.weight("attn.wq", [8, 8])], "q")
    k = n.op("MatMul", [ln, n.weight("attn.wk", [8, 8])], "k")
    v = n.op("MatMul", [ln, n.weight("attn.wv", [8, 8])], "v")
    kt = n.op("Transpose", [k], "kt", perm=[0, 2, 1])
    s = n.op("MatMul", [q, kt], "scores")
    p = n.op("Softmax", [s], "attn_probs", axis=-1)
    a = n.op("MatMul", [p, v], "attn")
    o = n.op("MatMul", [a, n.weight("attn.wo", [8, 8])], "attn_out")
    r = n.op("Add", ["input", o], "residual")
    h = n.layer_norm(r, 8, "ln2")
    h = n.op("Relu", [h], "act")
    f = n.op("Reshape", [h, n.const("flat_shape", [2, 32], np.int64)], "flat")
    y = n.op("Gemm", [f, n.weight("head.weight", [3, 32]), n.weight("head.bias", [3])], "logits", transB=1)
    return n.model([2, 4, 8], y, [2, 3]), [2, 4, 8], ("classes", 3)


def max_ties():
    """Maxima that tie in every pass: a 2x2 map edge-padded to 4x4 holds
    each value at least four times. GlobalMaxPool and ReduceMax over it
    share dY among the tied maxima (dY to each would count it k times)."""
    n = Net("max_ties", 16)
    h = n.op("Gemm", ["input", n.weight("fc1.weight", [12, 8]), n.weight("fc1.bias", [12])], "fc1", transB=1)
    h = n.op("Reshape", [h, n.const("map_shape", [2, 3, 2, 2], np.int64)], "map")
    p = n.op("Pad", [h, n.const("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64)], "padded", mode="edge")
    g = n.op("Flatten", [n.op("GlobalMaxPool", [p], "gmp")], "gmp_flat", axis=1)
    r = n.op("ReduceMax", [p], "rmax", axes=[2, 3], keepdims=0)
    y = n.op("Add", [g, r], "logits")
    return n.model([2, 8], y, [2, 3]), [2, 8], ("classes", 3)


def small_cnn(batch=None):
    """Conv/BN/ReLU/pool/Gemm on one 8x8 channel, as a user would export
    it: `batch` symbolic when given."""
    n = Net("small_cnn", 17)
    h = n.op("Conv", ["input", n.weight("conv.weight", [4, 1, 3, 3]), n.weight("conv.bias", [4])], "conv",
             pads=[1, 1, 1, 1])
    h = n.bn(h, 4, "bn")
    h = n.op("Relu", [h], "relu")
    h = n.op("MaxPool", [h], "pool", kernel_shape=[2, 2], strides=[2, 2])
    h = n.op("Flatten", [h], "flatten", axis=1)
    y = n.op("Gemm", [h, n.weight("fc.weight", [6, 64]), n.weight("fc.bias", [6])], "logits", transB=1)
    return n.model([2, 1, 8, 8], y, [2, 6], batch=batch), [2, 1, 8, 8], ("classes", 6)


def data(rng, x_shape, target, n_mb):
    """Mini-batches: ("classes", k) class indices, ("regression", k or a
    shape) normal targets, ("reconstruct", None) the input itself."""
    kind, k = target
    out = []
    for _ in range(n_mb):
        x = rng.standard_normal(x_shape).astype(np.float32)
        if kind == "classes":
            y = rng.integers(0, k, size=x_shape[0]).astype(np.int64)
        elif kind == "reconstruct":
            y = x.copy()
        else:
            y = rng.standard_normal([x_shape[0], k] if isinstance(k, int) else k).astype(np.float32)
        out.append((x, y))
    return out


def write_folder(root, name, model, x_shape, target, toml, n_batches=None, labels="labels", data_size=DATA_SIZE,
                 seed=None):
    """network.onnx, train.toml and inputs.npz holding the data input and
    the labels per mini-batch; `meta_n_batches` only where the schedule
    cycles the data (more passes than mini-batches). The data's seed is
    `seed`, else the sum of the folder name's characters."""
    x_name = model.graph.input[0].name
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "network.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(d, "train.toml"), "w") as f:
        f.write(toml)
    rng = np.random.default_rng(sum(map(ord, name)) if seed is None else seed)
    arrays = {}
    for mb, (x, y) in enumerate(data(rng, x_shape, target, data_size)):
        pre = "" if mb == 0 else f"mb{mb}_"
        arrays[pre + x_name] = x
        arrays[pre + labels] = y
    if n_batches is not None and n_batches != data_size:
        arrays["meta_n_batches"] = np.array(n_batches, dtype=np.int64)
    with open(os.path.join(d, "inputs.npz"), "wb") as f:
        f.write(npz_bytes(arrays))
    return d


SGD = 'loss = "{loss}"\noptimizer = "sgd"\nlearning_rate = {lr}\n'
ADAMW = 'loss = "{loss}"\noptimizer = "adamw"\nlearning_rate = {lr}\nweight_decay = 0.01\n'


def write_all(root):
    out = []
    nets = [("mlp", mlp(), "cross-entropy", 0.1), ("mlp_mse", mlp_mse(), "mse", 0.05),
            ("cnn", cnn(), "cross-entropy", 0.1), ("dscnn", dscnn(), "cross-entropy", 0.1),
            ("transformer", transformer(), "cross-entropy", 0.1)]
    for base, (model, x_shape, target), loss, lr in nets:
        out.append(write_folder(root, f"{base}_derived_sgd", model, x_shape, target,
                                SGD.format(loss=loss, lr=lr)))
        out.append(write_folder(root, f"{base}_derived_adamw", model, x_shape, target,
                                ADAMW.format(loss=loss, lr=lr / 10)))
    model, x_shape, target = max_ties()
    out.append(write_folder(root, "max_ties_derived_sgd", model, x_shape, target,
                            SGD.format(loss="cross-entropy", lr=0.1) + 'trainable = ["fc1.*"]\n'))
    model, x_shape, target = mlp()
    frozen = SGD.format(loss="cross-entropy", lr=0.1) + '# linear probe: only the classifier trains\ntrainable = ["fc2.*"]\n'
    out.append(write_folder(root, "mlp_derived_frozen", model, x_shape, target, frozen))
    # a BatchNorm in the frozen region: onnxruntime's training graph still
    # normalises it with batch statistics and updates its running ones
    probe = SGD.format(loss="cross-entropy", lr=0.1) + '# conv1 and bn1 frozen\ntrainable = ["conv2.*", "fc.*"]\n'
    out.append(write_folder(root, "cnn_derived_probe", cnn()[0], [2, 3, 8, 8], ("classes", 5), probe))
    # Inference models of the zoo, trained as they are.
    for base, opt, lr in (("tiny_transformer", ADAMW, 0.01), ("tiny_transformer", SGD, 0.05)):
        model = onnx.load(os.path.join(root, base, "network.onnx"))
        for node in model.graph.node:
            # onnxruntime's LayerNormalization gradient reads the optional
            # Mean / InvStdDev outputs: declare them (same computation).
            if node.op_type == "LayerNormalization" and len(node.output) == 1:
                node.output.extend([node.output[0] + "_mean", node.output[0] + "_inv_std"])
        dims = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
        x_shape, classes = dims(model.graph.input[0]), dims(model.graph.output[0])[-1]
        kind = "sgd" if opt is SGD else "adamw"
        out.append(write_folder(root, f"{base}_derived_{kind}", model, x_shape, ("classes", classes),
                                opt.format(loss="cross-entropy", lr=lr)))
    out += zoo_inference(root)
    # The CCT conformance models' fine-tuning on the zoo's CCT: a linear
    # probe (only the classifier trains) and the last block with it.
    from .models import make_cct

    cct = make_cct()
    for name, globs in (("cct_derived_probe", '["fc.*"]'), ("cct_derived_ft1", '["blk1.*", "fc.*"]')):
        toml = SGD.format(loss="cross-entropy", lr=0.05) + f"trainable = {globs}\n"
        out.append(write_folder(root, name, cct.model, list(cct.data_shape), ("classes", cct.num_classes), toml))
    momentum = ('loss = "cross-entropy"\noptimizer = "momentum"\nlearning_rate = 0.05\nmomentum = 0.9\n'
                'weight_decay = 0.001\naccumulation_steps = 2\n')
    out.append(write_folder(root, "cnn_derived_momentum", cnn()[0], [2, 3, 8, 8], ("classes", 5), momentum,
                            n_batches=8))
    out += user_like(root)
    return out


def user_like(root):
    """Folders as users make them: an exported inference graph with a
    symbolic batch, a train.toml, data and labels only."""
    out = []
    model, x_shape, target = small_cnn(batch="batch")
    out.append(write_folder(root, "small_cnn_dynamic_batch_derived_sgd", model, x_shape, target,
                            SGD.format(loss="cross-entropy", lr=0.1)))
    # conv is frozen, so BatchNormalizationGrad computes no dX
    behind = ADAMW.format(loss="cross-entropy", lr=0.01) + 'trainable = ["bn.*", "fc.*"]\n'
    out.append(write_folder(root, "small_cnn_bn_behind_frozen_derived_adamw", model, x_shape, target, behind))
    accum = SGD.format(loss="cross-entropy", lr=0.1) + "accumulation_steps = 3\n"
    m, x_shape, target = mlp()
    out.append(write_folder(root, "mlp_derived_accum3", m, x_shape, target, accum, data_size=6))
    return out


# Weight groups of the zoo CNNs, each frozen in turn (tests/derive.rs runs
# every split against these references): (folder, its groups).
SPLITS = [
    ("cnn_derived_sgd", ["conv1", "bn1", "conv2", "fc"]),
    ("dscnn_derived_sgd", ["conv1", "dw", "bn_dw", "pw", "fc"]),
    ("small_cnn_dynamic_batch_derived_sgd", ["conv", "bn", "fc"]),
]


def splits(root, work):
    """models/frozen_splits/<folder>/<group>/: train.toml (the folder's
    with that group frozen) and outputs.npz. Yields each split's temporary
    model folder (the base's network.onnx and inputs.npz with the split's
    train.toml) and where its files go."""
    import shutil

    for base, groups in SPLITS:
        with open(os.path.join(root, base, "train.toml")) as f:
            toml = f.read()
        for group in groups:
            tmp = os.path.join(work, f"{base}-{group}")
            os.makedirs(tmp, exist_ok=True)
            for name in ("network.onnx", "inputs.npz"):
                shutil.copyfile(os.path.join(root, base, name), os.path.join(tmp, name))
            with open(os.path.join(tmp, "train.toml"), "w") as f:
                f.write(toml + f'frozen = ["{group}.*"]\n')
            yield tmp, os.path.join(root, "frozen_splits", base, group)


# The zoo's inference models as they are, each trained with SGD and with
# AdamW: (model, loss, target, SGD learning rate, extra train.toml lines).
# The references come from onnxruntime-training on the same graph, or on
# the equivalent one zoo/ref_forms.py writes where it cannot take it.
ZOO_INFERENCE = [
    ("kws_cnn", "cross-entropy", ("classes", 12), 0.1, ""),
    ("mobilenet_v3_block", "cross-entropy", ("classes", 10), 0.05, ""),
    # the attention scale is a constant of the architecture, not a weight
    ("rmsnorm_transformer", "cross-entropy", ("classes", 4), 0.05, 'frozen = ["*.scale"]\n'),
    ("rmsnorm_default_domain", "cross-entropy", ("classes", 4), 0.05, 'frozen = ["*.scale"]\n'),
    ("conv1d_autoencoder", "mse", ("reconstruct", None), 0.02, ""),
    ("conv_ordered_npz", "cross-entropy", ("classes", 3), 0.1, 'logits = "logits"\n'),
    ("conv_legacy_attrs", "mse", ("regression", [1, 1, 3]), 0.1, ""),
    # logits is declared [3]: the loss reads the [1, 3] the Gemm computes
    ("conv_size1_dims", "mse", ("regression", [1, 3]), 0.1, 'logits = "logits"\n'),
    # the graph's own SoftmaxCrossEntropyLoss holds an initializer 'labels'
    ("conv_misc_forms", "cross-entropy", ("classes", 3), 0.1, 'logits = "log_prob"\nlabels = "targets"\n'),
    # two float outputs; its other float initializers are the graph's
    # constants (scales, bounds, the exponent), not weights
    ("ops_mixed", "cross-entropy", ("classes", 6), 0.1,
     'logits = "pooled"\ntrainable = ["conv.*", "gn.*", "in.*"]\n'),
]

# Folders whose data seed is fixed rather than taken from their name, so
# that their test data and references do not depend on what they are called.
DATA_SEEDS = {"ops_mixed_derived_sgd": 2846, "ops_mixed_derived_adamw": 3050}


def zoo_inference(root, models=None, out_root=None):
    out = []
    for base, loss, target, lr, extra in models or ZOO_INFERENCE:
        model = onnx.load(os.path.join(root, base, "network.onnx"))
        x_shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        labels = "targets" if "targets" in extra else "labels"
        for kind, fmt, rate in (("sgd", SGD, lr), ("adamw", ADAMW, lr / 10)):
            name = f"{base}_derived_{kind}"
            out.append(write_folder(out_root or root, name, model, x_shape, target,
                                    fmt.format(loss=loss, lr=rate) + extra, labels=labels, seed=DATA_SEEDS.get(name)))
    return out


def imported_twin(root):
    """simple_mlp's inference graph with a train.toml of the same schedule,
    and simple_mlp's own test data and references (from its onnxruntime
    artifacts): deploygen's derived step must reproduce the imported one."""
    import shutil

    from .models import make_simple_mlp

    spec = make_simple_mlp()
    d = os.path.join(root, "simple_mlp_derived")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "network.onnx"), "wb") as f:
        f.write(spec.model.SerializeToString())
    with open(os.path.join(d, "train.toml"), "w") as f:
        f.write("# simple_mlp's training, derived from its inference graph; the references are\n"
                "# simple_mlp's (onnxruntime-training artifacts), copied\n"
                f'loss = "cross-entropy"\noptimizer = "sgd"\nlearning_rate = {spec.lr}\n')
    for name in ("inputs.npz", "outputs.npz"):
        shutil.copyfile(os.path.join(root, "simple_mlp", name), os.path.join(d, name))
    return d
