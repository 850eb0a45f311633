"""The zoo: forward graphs and the training/test schedule of every model.

Each `make_*` returns a `Spec`. Training models give the *forward* graph
(logits or reconstruction as the only output); onnxruntime adds the loss,
the backward pass and the optimizer graph.
"""

from dataclasses import dataclass

import numpy as np

from .builder import Builder


@dataclass
class Spec:
    name: str
    model: object                      # onnx.ModelProto (forward / inference graph)
    trainable: list
    frozen: list
    kind: str                          # "train" | "infer"
    exercises: str
    data_shape: tuple = ()
    loss: str = "ce"                   # "ce" (SoftmaxCrossEntropyLoss) | "mse"
    num_classes: int = 0
    flavor: str = "artifacts"          # "artifacts" | "single_graph" | "inference"
    optimizer: str = "sgdv2"           # "sgdv2" (ORT SGDOptimizerV2) | "sgd_nodes" (one SGD per param)
    layout: str = "positional"         # "positional" | "named"
    data_size: int = 4                 # distinct mini-batches stored in inputs.npz
    n_batches: int = 4                 # forward passes in the schedule
    n_accum: int = 1                   # forward passes per optimizer step
    lr: float = 0.01
    compressed: bool = False           # np.savez_compressed-style members
    seed: int = 0


# --------------------------------------------------------------------------
# training models (artifacts flavor)
# --------------------------------------------------------------------------

def make_simple_mlp():
    b = Builder("simple_mlp", seed=101)
    x = b.input("input", [2, 64])
    h = b.relu(b.gemm(x, 64, 32, "fc1"), "fc1")
    h = b.relu(b.gemm(h, 32, 32, "fc2"), "fc2")
    y = b.gemm(h, 32, 10, "fc3", relu_init=False)
    b.output(y, [2, 10])
    return Spec("simple_mlp", b.model(), b.trainable, b.frozen, "train",
                "Gemm/Relu training step, named inputs.npz layout, numpy forward/backward cross-check",
                data_shape=(2, 64), num_classes=10, layout="named", lr=0.05, seed=101)


def make_autoencoder():
    b = Builder("autoencoder", seed=202)
    x = b.input("input", [2, 128])
    h = x
    dims = [128, 64, 16, 64]
    for i in range(len(dims) - 1):
        h = b.relu(b.gemm(h, dims[i], dims[i + 1], f"enc{i}" if i < 2 else f"dec{i - 2}"), f"l{i}")
    y = b.gemm(h, 64, 128, "dec_out", relu_init=False)
    b.output(y, [2, 128])
    return Spec("autoencoder", b.model(), b.trainable, b.frozen, "train",
                "MSE loss (ORT builds it from Sub/Pow/ReduceMean), float target input, "
                "per-parameter SGD optimizer graph (lr as attribute)",
                data_shape=(2, 128), loss="mse", optimizer="sgd_nodes", lr=0.05, seed=202)


def make_ds_cnn():
    """DS-CNN keyword spotting (MLPerf Tiny shape: 49x10 MFCC, 64 channels, 4 DS blocks, 12 classes)."""
    b = Builder("ds_cnn", seed=303)
    c = 64
    x = b.input("input", [1, 1, 49, 10])
    # 10x4 kernel, stride 2, "same" padding -> 25x5
    h = b.relu(b.bn(b.conv(x, 1, c, (10, 4), "conv1", stride=2, pads=[4, 1, 5, 1]), c, "bn1"), "bn1")
    for i in range(4):
        p = f"ds{i}"
        h = b.relu(b.bn(b.conv(h, c, c, 3, f"{p}.dw", group=c), c, f"{p}.dw_bn"), f"{p}.dw")
        h = b.relu(b.bn(b.conv(h, c, c, 1, f"{p}.pw"), c, f"{p}.pw_bn"), f"{p}.pw")
    h = b.node("AveragePool", [h], base="avgpool.out", kernel_shape=[25, 5], strides=[25, 5])
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, c, 12, "fc", relu_init=False)
    b.output(y, [1, 12])
    return Spec("ds_cnn", b.model(), b.trainable, b.frozen, "train",
                "depthwise (group=64) + pointwise Conv, BatchNormInternal, AveragePool; "
                "gradient accumulation (meta_n_accum = 2)",
                data_shape=(1, 1, 49, 10), num_classes=12, n_accum=2, lr=0.02, seed=303)


def make_resnet8():
    """ResNet-8 (MLPerf Tiny image classification: 32x32x3, 16/32/64 channels, 10 classes)."""
    b = Builder("resnet8", seed=404)
    x = b.input("input", [1, 3, 32, 32])
    h = b.relu(b.bn(b.conv(x, 3, 16, 3, "conv1"), 16, "bn1"), "bn1")
    cin = 16
    for s, cout in enumerate([16, 32, 64]):
        p = f"stack{s + 1}"
        stride = 1 if s == 0 else 2
        pads = [1, 1, 1, 1]
        y = b.relu(b.bn(b.conv(h, cin, cout, 3, f"{p}.conv1", stride=stride, pads=pads), cout, f"{p}.bn1"), f"{p}.bn1")
        y = b.bn(b.conv(y, cout, cout, 3, f"{p}.conv2"), cout, f"{p}.bn2")
        sc = h if s == 0 else b.conv(h, cin, cout, 1, f"{p}.shortcut", stride=2, pads=[0, 0, 0, 0], bias=True)
        h = b.relu(b.node("Add", [y, sc], base=f"{p}.add"), f"{p}.add")
        cin = cout
    h = b.node("AveragePool", [h], base="avgpool.out", kernel_shape=[8, 8], strides=[8, 8])
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 64, 10, "fc", relu_init=False)
    b.output(y, [1, 10])
    return Spec("resnet8", b.model(), b.trainable, b.frozen, "train",
                "Conv (with and without bias), BatchNormInternal, residual Add, AveragePool; "
                "weights + live training tensors exceed GAP9's 1.5 MiB L2 (L3 paths)",
                data_shape=(1, 3, 32, 32), num_classes=10, lr=0.01, seed=404)


def make_mobilenet_v1():
    """MobileNetV1, width 0.25, 64x64 input, depth cut to 8 DS blocks, 2 classes (VWW-like)."""
    b = Builder("mobilenet_v1", seed=505)
    x = b.input("input", [1, 3, 64, 64])
    h = b.relu(b.bn(b.conv(x, 3, 8, 3, "conv1", stride=2), 8, "bn1"), "bn1")
    cin = 8
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), (128, 1), (128, 1)]
    for i, (cout, s) in enumerate(blocks):
        p = f"block{i}"
        h = b.relu(b.bn(b.conv(h, cin, cin, 3, f"{p}.dw", stride=s, group=cin), cin, f"{p}.dw_bn"), f"{p}.dw")
        h = b.relu(b.bn(b.conv(h, cin, cout, 1, f"{p}.pw"), cout, f"{p}.pw_bn"), f"{p}.pw")
        cin = cout
    h = b.node("GlobalAveragePool", [h], base="gap.out")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 128, 2, "fc", relu_init=False)
    b.output(y, [1, 2])
    return Spec("mobilenet_v1", b.model(), b.trainable, b.frozen, "train",
                "strided depthwise Conv, GlobalAveragePool, 2 classes; schedule cycles the data "
                "(meta_data_size 4 < meta_n_batches 6)",
                data_shape=(1, 3, 64, 64), num_classes=2, data_size=4, n_batches=6, lr=0.01, seed=505)


def _cct(b, img, classes, blocks=2, embed=32, heads=2, mlp=64):
    """Compact Convolutional Transformer: conv tokenizer, pre-LN blocks, sequence pooling."""
    x = b.input("input", [1, 3, img, img])
    h = b.maxpool(b.relu(b.conv(x, 3, 16, 3, "tok.conv1"), "tok.conv1"), 3, 2, [1, 1, 1, 1], "tok.pool1")
    h = b.maxpool(b.relu(b.conv(h, 16, embed, 3, "tok.conv2"), "tok.conv2"), 3, 2, [1, 1, 1, 1], "tok.pool2")
    t = (img // 4) ** 2
    h = b.reshape(h, [1, embed, t], "tok.flatten")
    h = b.transpose(h, [0, 2, 1], "tok.tokens")                          # [1, T, E]
    pos = b.param("pos_embedding", b.small((1, t, embed), 0.1))
    h = b.node("Add", [h, pos], base="pos.out")
    d = embed // heads
    scale = b.const("attn.scale", np.array(1.0 / np.sqrt(d), dtype=np.float32))
    for i in range(blocks):
        p = f"blk{i}"
        n = b.layernorm(h, embed, f"{p}.ln1")
        q = b.transpose(b.reshape(b.linear(n, embed, embed, f"{p}.q"), [1, t, heads, d], f"{p}.q_heads"), [0, 2, 1, 3], f"{p}.q_t")
        k = b.transpose(b.reshape(b.linear(n, embed, embed, f"{p}.k"), [1, t, heads, d], f"{p}.k_heads"), [0, 2, 3, 1], f"{p}.k_t")
        v = b.transpose(b.reshape(b.linear(n, embed, embed, f"{p}.v"), [1, t, heads, d], f"{p}.v_heads"), [0, 2, 1, 3], f"{p}.v_t")
        s = b.node("Mul", [b.node("MatMul", [q, k], base=f"{p}.qk"), scale], base=f"{p}.scores")
        a = b.node("Softmax", [s], base=f"{p}.attn", axis=-1)
        o = b.transpose(b.node("MatMul", [a, v], base=f"{p}.av"), [0, 2, 1, 3], f"{p}.av_t")
        o = b.linear(b.reshape(o, [1, t, embed], f"{p}.merge"), embed, embed, f"{p}.proj")
        h = b.node("Add", [h, o], base=f"{p}.res1")
        n = b.layernorm(h, embed, f"{p}.ln2")
        m = b.linear(b.gelu(b.linear(n, embed, mlp, f"{p}.fc1"), f"{p}.fc1"), mlp, embed, f"{p}.fc2")
        h = b.node("Add", [h, m], base=f"{p}.res2")
    h = b.layernorm(h, embed, "norm")
    w = b.linear(h, embed, 1, "seqpool")                                 # [1, T, 1]
    w = b.node("Softmax", [b.transpose(w, [0, 2, 1], "seqpool.t")], base="seqpool.attn", axis=-1)
    h = b.reshape(b.node("MatMul", [w, h], base="seqpool.out"), [1, embed], "seqpool.flat")
    y = b.gemm(h, embed, classes, "fc", relu_init=False)
    b.output(y, [1, classes])


def make_cct():
    b = Builder("cct", seed=606)
    _cct(b, 32, 10)
    return Spec("cct", b.model(), b.trainable, b.frozen, "train",
                "conv tokenizer with MaxPool(+Indices), Reshape/Transpose, LayerNormalization, "
                "MatMul attention, Softmax, com.microsoft Gelu, sequence pooling; compressed npz",
                data_shape=(1, 3, 32, 32), num_classes=10, lr=0.01, compressed=True, seed=606)


# --------------------------------------------------------------------------
# single-graph training step (forward + backward + inline SGD)
# --------------------------------------------------------------------------

def make_cnn_inline_sgd():
    b = Builder("cnn_inline_sgd", seed=707)
    x = b.input("input", [2, 1, 12, 12])
    h = b.maxpool(b.relu(b.conv(x, 1, 4, 3, "conv", bias=True), "conv"), 2, 2, [0, 0, 0, 0], "pool")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 144, 10, "fc", relu_init=False)
    b.output(y, [2, 10])
    return Spec("cnn_inline_sgd", b.model(), b.trainable, b.frozen, "train",
                "single-graph training step: weights as initializers, inline SGD(w, g){lr} -> w_updated, "
                "graph outputs = loss + updated weights",
                data_shape=(2, 1, 12, 12), num_classes=10, flavor="single_graph", optimizer="sgd_nodes",
                lr=0.01, seed=707)


# --------------------------------------------------------------------------
# inference models
# --------------------------------------------------------------------------

def make_kws_cnn():
    b = Builder("kws_cnn", seed=808, training=False)
    x = b.input("input", [1, 1, 49, 10])
    h = b.relu(b.bn(b.conv(x, 1, 16, 3, "conv1"), 16, "bn1"), "bn1")
    h = b.maxpool(h, 2, 2, [0, 0, 0, 0], "pool1")                        # [1,16,24,5]
    h = b.relu(b.bn(b.conv(h, 16, 32, 3, "conv2"), 32, "bn2"), "bn2")
    h = b.node("GlobalAveragePool", [h], base="gap.out")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    h = b.gemm(h, 32, 12, "fc", relu_init=False)
    y = b.node("Softmax", [h], outs=["probs"], axis=-1)
    b.output(y, [1, 12])
    return Spec("kws_cnn", b.model(), [], [], "infer",
                "inference: Conv, BatchNormalization (inference form), MaxPool, GlobalAveragePool, Gemm, Softmax; "
                "compressed npz",
                data_shape=(1, 1, 49, 10), flavor="inference", data_size=1, n_batches=1, compressed=True, seed=808)


def make_tiny_transformer():
    b = Builder("tiny_transformer", seed=909, opset=20, ir_version=9, training=False)
    t, e, heads, d = 16, 32, 2, 16
    x = b.input("input", [1, t, e])
    n = b.layernorm(x, e, "ln1")
    q = b.transpose(b.reshape(b.linear(n, e, e, "q"), [1, t, heads, d], "q_heads"), [0, 2, 1, 3], "q_t")
    k = b.transpose(b.reshape(b.linear(n, e, e, "k"), [1, t, heads, d], "k_heads"), [0, 2, 3, 1], "k_t")
    v = b.transpose(b.reshape(b.linear(n, e, e, "v"), [1, t, heads, d], "v_heads"), [0, 2, 1, 3], "v_t")
    s = b.node("Div", [b.node("MatMul", [q, k], base="qk"), b.const("sqrt_d", np.array(np.sqrt(d), np.float32))], base="scores")
    a = b.node("Softmax", [s], base="attn", axis=-1)
    o = b.transpose(b.node("MatMul", [a, v], base="av"), [0, 2, 1, 3], "av_t")
    o = b.linear(b.reshape(o, [1, t, e], "merge"), e, e, "proj")
    h = b.node("Add", [x, o], base="res1")
    n = b.layernorm(h, e, "ln2")
    m = b.linear(b.gelu(b.linear(n, e, 64, "fc1"), "fc1"), 64, e, "fc2")
    h = b.node("Add", [h, m], base="res2")
    axes = b.const("pool.axes", np.array([1], dtype=np.int64))
    h = b.node("ReduceMean", [h, axes], base="pool.out", keepdims=0)
    y = b.gemm(h, e, 4, "head", relu_init=False, out="logits")
    b.output(y, [1, 4])
    return Spec("tiny_transformer", b.model(), [], [], "infer",
                "inference, opset 20: LayerNormalization (1 output), MatMul attention, Div, Softmax, "
                "ai.onnx Gelu, ReduceMean (axes input)",
                data_shape=(1, t, e), flavor="inference", data_size=1, n_batches=1, seed=909)


ZOO = [
    make_simple_mlp,
    make_autoencoder,
    make_ds_cnn,
    make_resnet8,
    make_mobilenet_v1,
    make_cct,
    make_cnn_inline_sgd,
    make_kws_cnn,
    make_tiny_transformer,
]
